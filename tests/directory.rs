//! Directory-format perf.data, as `perf record --threads` writes it: a
//! header file `DIR/data` and one `DIR/data.N` file of records per
//! recording thread. prec reads the directory wherever perf does, and prints
//! what perf 6.1 prints.

mod common;

use std::path::{Path, PathBuf};

use common::*;

/// A workload that keeps both CPUs' rings busy: two processes with frame
/// pointers (`-g` chains without them end in garbage addresses, whose ties
/// perf orders by heap addresses; see `with_address_ties_sorted`).
fn workload() -> String {
    let program = fixture_bin("callgraph-fp");
    let program = program.display();
    format!("{program} 0.2 & {program} 0.2; wait")
}

fn record_threads(dir: &Path, name: &str, opts: &[&str]) -> PathBuf {
    let data = dir.join(name);
    let mut args = vec!["--threads"];
    args.extend_from_slice(opts);
    record(perf(), &data, &args, &["sh", "-c", &workload()]);
    assert!(
        data.join("data").is_file() && data.join("data.0").is_file(),
        "perf record --threads wrote no directory at {}",
        data.display()
    );
    data
}

/// perf's and prec's report (several ways, `-D` too) and script of `data`.
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
fn data_files_are_read_in_directory_order() {
    if !require_perf_record() {
        return;
    }
    // perf takes the data files in readdir order (on ext4, the names'
    // hash order), not by number, and among records of one time the file
    // read first wins. Eight identical copies of one file make every record
    // such a tie, which -D shows by file name.
    let dir = tempdir();
    let data = record_threads(dir.path(), "copies.data", &[]);
    let largest = (0..)
        .map(|n| data.join(format!("data.{n}")))
        .take_while(|p| p.is_file())
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a data file");
    let bytes = std::fs::read(&largest).expect("read data file");
    for n in 0.. {
        let path = data.join(format!("data.{n}"));
        if !path.is_file() {
            break;
        }
        std::fs::remove_file(&path).expect("remove data file");
    }
    for n in 0..8 {
        std::fs::write(data.join(format!("data.{n}")), &bytes).expect("write copy");
    }
    let mut failures = Vec::new();
    for args in [&["-D"][..], &["--sort", "pid"]] {
        if let Err(e) = compare_report(&data, Input::File, args) {
            failures.push(e);
        }
    }
    if let Err(e) = compare_script(&data, Input::File, &[]) {
        failures.push(e);
    }
    assert_no_failures(&failures);
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

/// The sizes of `DIR/data.0`, `DIR/data.1`, ... in order.
fn data_file_sizes(dir: &Path) -> Vec<u64> {
    (0..)
        .map(|n| dir.join(format!("data.{n}")))
        .take_while(|p| p.is_file())
        .map(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .collect()
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn prec_record_threads_writes_what_perf_reads() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let workload = workload();
    let argv = ["sh", "-c", &workload];
    let [theirs, ours] = record_both(dir.path(), "threads", &["--threads", "-g"], &argv);
    assert!(ours.is_dir(), "prec record --threads wrote no directory");
    // A file per ring (per CPU), as perf makes them.
    assert_eq!(data_file_sizes(&ours).len(), data_file_sizes(&theirs).len());
    assert_eq!(evlist(&ours), evlist(&theirs));
    let header = stdout_of(perf().args(["report", "--header-only", "-i"]).arg(&ours));
    assert!(
        header.contains("# directory data version : 1"),
        "no DIR_FORMAT feature:\n{header}"
    );
    for args in [&["report", "--stdio", "-i"][..], &["script", "-i"]] {
        let o = run(perf().args(args).arg(&ours));
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(
            stderr.trim().is_empty(),
            "perf {} on prec's directory:\n{stderr}",
            args[0]
        );
    }
    compare_all(&ours);
}

#[test]
fn threads_spec_groups_rings_like_perf() {
    if !require_perf_record() {
        return;
    }
    // One thread reads every CPU's ring; each ring still has its own file.
    let last = online_cpus() - 1;
    let spec = format!("--threads=0-{last}/0");
    let dir = tempdir();
    let workload = workload();
    let argv = ["sh", "-c", &workload];
    let [theirs, ours] = record_both(dir.path(), "grouped", &[&spec, "-z"], &argv);
    for data in [&theirs, &ours] {
        let sizes = data_file_sizes(data);
        assert_eq!(sizes.len(), online_cpus(), "{}", data.display());
    }
    compare_all(&ours);

    // perf's refusals, and no directory left behind.
    for (args, message) in [
        (
            &["--threads=bogus"][..],
            "Invalid thread maps or affinity specs",
        ),
        (
            &["--threads", "--aio"],
            "mutually exclusive to parallel streaming mode",
        ),
        (
            &["--threads", "--per-thread"],
            "mutually exclusive to parallel streaming mode",
        ),
    ] {
        let out = dir.path().join("refused.data");
        let o = run_fail(
            prec()
                .arg("record")
                .args(args)
                .arg("-o")
                .arg(&out)
                .args(["--", "true"]),
        );
        let stderr = String::from_utf8_lossy(&o.stderr);
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert!(!out.exists(), "{args:?} left {}", out.display());
    }
}

#[test]
fn killed_threads_recording_still_reads() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = dir.path().join("killed.data");
    // An earlier recording there moves to killed.data.old, as with perf.
    std::fs::write(&data, b"an earlier file").expect("write");
    let mut child = prec()
        .args(["record", "-q", "--threads", "-o"])
        .arg(&data)
        .args(["--", "sh", "-c", "while :; do :; done"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start prec record");
    std::thread::sleep(std::time::Duration::from_millis(1500));
    let _ = child.kill();
    let _ = child.wait();
    // The workload outlives a SIGKILLed recorder: stop it.
    let _ = std::process::Command::new("pkill")
        .args(["-f", "while :; do :; done"])
        .status();
    assert_eq!(
        std::fs::read(dir.path().join("killed.data.old")).expect("old file"),
        b"an earlier file"
    );
    let o = run(perf()
        .args(["report", "--stdio", "--sort", "comm", "-i"])
        .arg(&data));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("# Samples:") && stdout.contains("sh"),
        "perf report of a killed --threads recording:\n{stdout}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    if let Err(e) = compare_report(&data, Input::File, &["--sort", "comm,dso"]) {
        panic!("{e}");
    }
}
