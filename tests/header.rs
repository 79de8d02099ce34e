//! `prec report --header-only` (with and without `-I`) and `--header` print
//! what perf 6.1 prints, on every fixture, file and pipe mode.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};

fn output(mut cmd: Command, file: &Path, pipe: bool) -> String {
    if pipe {
        cmd.args(["-i", "-"]).stdin(Stdio::from(
            std::fs::File::open(file).expect("open fixture"),
        ));
    } else {
        cmd.arg("-i").arg(file);
    }
    let out = cmd.stderr(Stdio::null()).output().expect("run");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        // perf lists BPF programs from BPF_PROG_INFO, which prec keeps raw;
        // the tip at the end of a report is chosen at random.
        .filter(|l| !l.starts_with("# bpf_prog_info") && !l.starts_with("# \tsub_prog"))
        .filter(|l| !l.starts_with("# (Tip:"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn header_only_matches_perf() {
    if !common::require_perf() {
        return;
    }
    let mut files = common::own_fixtures();
    files.extend(common::quipper_files());
    let mut failures = Vec::new();
    for path in &files {
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // perf stops at the corrupt record or decodes Intel PT before it
        // prints a pipe file's header.
        if name.contains("corrupted") || name.contains("piped.intel_pt") {
            continue;
        }
        let pipe = name.contains("pipe");
        for extra in [&["--header-only"][..], &["--header-only", "-I"][..]] {
            let mut perf = common::perf();
            perf.arg("report").args(extra);
            let mut prec = common::prec();
            prec.arg("report").args(extra);
            let theirs = output(perf, path, pipe);
            let ours = output(prec, path, pipe);
            if theirs != ours {
                failures.push(format!(
                    "{name} {extra:?}:\n{}",
                    common::line_diff(&theirs, &ours)
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn header_before_report_matches_perf() {
    if !common::require_perf() {
        return;
    }
    let path = common::own_fixture("hot3-default.data");
    let mut perf = common::perf();
    perf.args(["report", "--stdio", "--header"]);
    let mut prec = common::prec();
    prec.args(["report", "--stdio", "--header"]);
    common::assert_eq_text(&output(perf, &path, false), &output(prec, &path, false));
}
