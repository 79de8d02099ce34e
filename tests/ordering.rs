//! `PerfFile::ordered_records` delivers records in exactly the order perf
//! 6.1 processes them (its `ordered_events` queue), judged by the order of
//! the decoded lines of `perf report -D` on every fixture.

mod common;

use std::process::Stdio;

use prec_format::read::Mode;
use prec_format::PerfFile;

/// Offsets of the records perf decoded, in the order it printed them.
fn perf_order(path: &std::path::Path, pipe: bool) -> Vec<u64> {
    let mut cmd = common::perf();
    cmd.args(["report", "-D"]);
    if pipe {
        cmd.args(["-i", "-"]).stdin(Stdio::from(
            std::fs::File::open(path).expect("open fixture"),
        ));
    } else {
        cmd.arg("-i").arg(path);
    }
    let out = cmd.stderr(Stdio::null()).output().expect("run perf");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut offsets = Vec::new();
    for line in text.lines() {
        if !line.contains("]: PERF_RECORD_") {
            continue;
        }
        // "<time> 0x<off> [0x<size>]: PERF_RECORD_..." (time may be "-1 -1"
        // or absent); the offset is the token before " [0x".
        let Some(bracket) = line.find(" [0x") else {
            continue;
        };
        let Some(token) = line[..bracket].split_whitespace().last() else {
            continue;
        };
        // perf prints offset 0 as a bare "0".
        if token == "0" {
            offsets.push(0);
        } else if let Some(hex) = token.strip_prefix("0x") {
            if let Ok(v) = u64::from_str_radix(hex, 16) {
                offsets.push(v);
            }
        }
    }
    offsets
}

#[test]
fn ordered_records_follow_perfs_queue() {
    if !common::require_perf() {
        return;
    }
    let mut files = common::own_fixtures();
    files.extend(common::quipper_files());
    let mut checked = 0;
    let mut failures = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // perf decodes Intel PT itself and stops on the corrupted file.
        if name.contains("intel_pt") || name.contains("corrupted") {
            continue;
        }
        let data = std::fs::read(&path).expect("read fixture");
        let file = PerfFile::parse(&data).expect("parse fixture");
        let pipe = file.mode() == Mode::Pipe;
        let ours: Vec<u64> = file
            .ordered_records()
            .map_while(|r| r.ok())
            .map(|r| if pipe { r.offset - 16 } else { r.offset })
            .collect();
        let theirs = perf_order(&path, pipe);
        checked += 1;
        if ours != theirs {
            let first = ours.iter().zip(&theirs).position(|(a, b)| a != b);
            failures.push(format!(
                "{name}: {} records vs perf's {}, first difference at index {first:?}",
                ours.len(),
                theirs.len()
            ));
        }
    }
    assert!(checked > 40, "only {checked} files checked");
    assert!(
        failures.is_empty(),
        "order differs from perf:\n{}",
        failures.join("\n")
    );
}
