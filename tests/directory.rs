//! Directory-format perf.data, as `perf record --threads` writes it: a
//! header file `DIR/data` and one `DIR/data.N` file of records per
//! recording thread. prec reads the directory wherever perf does, and prints
//! what perf 6.1 prints.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A workload that keeps both CPUs' readers busy: a pipeline of processes.
const PIPELINE: &str = "head -c 8000000 /dev/urandom | gzip -1 | gzip -d > /dev/null";

fn record_threads(dir: &Path, name: &str, opts: &[&str]) -> PathBuf {
    let data = dir.join(name);
    let mut args = vec!["--threads"];
    args.extend_from_slice(opts);
    record(perf(), &data, &args, &["sh", "-c", PIPELINE]);
    assert!(
        data.join("data").is_file() && data.join("data.0").is_file(),
        "perf record --threads wrote no directory at {}",
        data.display()
    );
    data
}

fn compare_all(data: &Path) {
    let mut failures = Vec::new();
    for args in [
        &["--sort", "comm,dso,sym"][..],
        &["--no-children", "--sort", "sym,dso", "-n"],
        &["--sort", "pid"],
        &["--stats"],
        &["-D"],
    ] {
        if let Err(e) = compare_report(data, Input::File, args) {
            failures.push(e);
        }
    }
    for args in [&[][..], &["-F", "comm,tid,time,ip,sym,dso"]] {
        if let Err(e) = compare_script(data, Input::File, args) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn threads_directory_reads_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_threads(dir.path(), "fp.data", &["-g"]);
    compare_all(&data);

    // `prec inject` makes one file of it, which perf reads as the directory.
    let single = dir.path().join("single.data");
    run(prec()
        .args(["inject", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&single));
    let args = ["--sort", "comm,dso,sym"];
    let mut failures = Vec::new();
    if let Err(e) = same_text(
        "perf report of prec inject's file vs of the directory",
        &report_stdio(perf(), &data, Input::File, &args),
        &report_stdio(perf(), &single, Input::File, &args),
    ) {
        failures.push(e);
    }
    assert_no_failures(&failures);
}

#[test]
fn compressed_threads_directory_reads_like_perf() {
    if !require_perf_record() {
        return;
    }
    // Each data file is its own zstd stream.
    let dir = tempdir();
    compare_all(&record_threads(dir.path(), "z.data", &["-z"]));
}

#[test]
fn truncated_data_file_is_named() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_threads(dir.path(), "cut.data", &[]);
    // Cut the largest data file in the middle of a record.
    let largest = (0..)
        .map(|n| data.join(format!("data.{n}")))
        .take_while(|p| p.is_file())
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a data file");
    let len = std::fs::metadata(&largest).expect("stat").len();
    let f = std::fs::OpenOptions::new()
        .write(true)
        .open(&largest)
        .expect("open data file");
    f.set_len(len / 2 + 3).expect("truncate");
    let out = run(prec().args(["report", "--stdio", "-i"]).arg(&data));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let name = format!("{}", largest.display());
    assert!(
        stderr.contains(&format!("stopped reading in {name} at offset 0x")),
        "prec report should name {name} and the offset:\n{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("# Samples:"));

    // No header file: perf's "failed to open DIR/data".
    std::fs::remove_file(data.join("data")).expect("remove header file");
    let out = run_fail(prec().args(["report", "--stdio", "-i"]).arg(&data));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("cannot open {}", data.join("data").display())),
        "{stderr}"
    );
}
