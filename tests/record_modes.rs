//! `prec record`'s less common options, each checked against perf 6.1:
//! the same program recorded with perf and with prec gives the same
//! `perf evlist -v` attrs, perf reads prec's file without a word on stderr,
//! and the records/features an option adds are the ones perf writes.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::*;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn hot3() -> PathBuf {
    fixture_bin("hot3")
}

/// `prec record -o OUT ARGS... -- hot3`.
fn prec_record(out: &Path, args: &[&str]) -> Output {
    let mut c = prec();
    c.args(["record", "-o"])
        .arg(out)
        .args(args)
        .arg("--")
        .arg(hot3());
    run(&mut c)
}

/// `perf record -o OUT ARGS... -- hot3`.
fn perf_record(out: &Path, args: &[&str]) -> Output {
    let mut c = perf();
    c.args(["record", "-o"])
        .arg(out)
        .args(args)
        .arg("--")
        .arg(hot3());
    run(&mut c)
}

/// `perf report --stdio` and `perf script` read `file` with nothing on
/// stderr. A recording without samples is no format complaint: a CPU-bound
/// program sampled with `--all-kernel` on a busy machine may get none. Nor
/// are LOST records, perf's "lost N chunks" warning: a loaded machine (the
/// tests run side by side) can fill a ring of 8 KiB stack copies faster
/// than it is read.
fn assert_perf_reads_clean(file: &Path, what: &str) {
    for args in [&["report", "--stdio", "-i"][..], &["script", "-i"][..]] {
        let o = run(perf().args(args).arg(file));
        let e = without_lost_warning(&stderr(&o));
        let no_samples = e.trim_start().starts_with("Error:")
            && e.trim_end().ends_with("data has no samples!")
            && e.lines().filter(|l| !l.trim().is_empty()).count() == 2;
        assert!(
            e.trim().is_empty() || no_samples,
            "perf {} on prec's file ({what}) wrote to stderr:\n{e}",
            args[0]
        );
    }
}

/// `stderr` without perf's warning about LOST records.
fn without_lost_warning(stderr: &str) -> String {
    let mut out = Vec::new();
    let mut lines = stderr.lines().peekable();
    while let Some(l) = lines.next() {
        let lost = l == "Warning:"
            && lines
                .peek()
                .is_some_and(|n| n.starts_with("Processed ") && n.contains(" lost "));
        if lost {
            // "Processed N events and lost M chunks!", a blank line, "Check
            // IO/CPU overload!".
            lines.next();
            while lines
                .peek()
                .is_some_and(|n| n.is_empty() || n.starts_with("Check IO/CPU"))
            {
                lines.next();
            }
            continue;
        }
        out.push(l);
    }
    out.join("\n")
}

/// Each attr's sample_type, as the file has it.
fn sample_types(file: &Path) -> Vec<u64> {
    let bytes = std::fs::read(file).expect("read recording");
    let parsed = prec_format::PerfFile::parse(&bytes).expect("parse recording");
    parsed.attrs().iter().map(|a| a.attr.sample_type).collect()
}

/// Lines of `perf report --header-only` starting with `prefix`.
fn header_lines(file: &Path, prefix: &str) -> Vec<String> {
    stdout_of(perf().args(["report", "--header-only", "-i"]).arg(file))
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

/// Every option: prec's attrs are perf's, and perf reads prec's file.
#[test]
fn attrs_match_perf_for_each_option() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let cases: &[&[&str]] = &[
        &["-z"],
        &["-k", "monotonic"],
        &["-k", "monotonic_raw"],
        &["-k", "CLOCK_BOOTTIME"],
        &["-k", "11"],
        &["-T"],
        &["-d"],
        &["--sample-cpu"],
        &["-c", "100000", "-P"],
        &["-W"],
        &["--switch-events"],
        &["--namespaces"],
        &["--per-thread"],
        &["--per-thread", "-T"],
        &["-N"],
        &["-B"],
        &["-D", "50"],
        &["-D", "10", "-g"],
        &["-D", "10", "-F", "999"],
        &["-D", "10", "--call-graph", "dwarf"],
        &["-D", "10", "-c", "100000", "-T", "-P", "--sample-cpu"],
        &["-e", "cpu-clock,page-faults", "--call-graph", "dwarf"],
        // fp,N: sample_max_stack N below the kernel's limit, ignored above.
        &["-e", "cpu-clock,page-faults", "--call-graph", "fp,32"],
        &["--call-graph", "fp,512"],
        &["--no-inherit", "--inherit"],
        &["-e", "duration_time,cpu-clock"],
        &["--buildid-mmap"],
        &["-s"],
        &["--user-regs=ip,sp"],
        &["--intr-regs=ip"],
        &["-I"],
        &["--transaction", "-W"],
        &["--mmap-flush", "16K"],
        // (perf 6.1 aborts now and then with --affinity: see below.)
        &["--aio"],
        &["--aio=4", "-z"],
        &["--proc-map-timeout", "2000"],
        &["-R"],
        &["--all-user"],
        &["--all-kernel"],
        &["-e", "task-clock", "--all-user"],
        &["-e", "{cpu-clock,page-faults}"],
        &["-e", "{cpu-clock,page-faults}:S"],
        &["-e", "{cpu-clock:u,page-faults},task-clock", "-g"],
        &["-e", "cpu-clock:S"],
        &["-e", "sched:sched_switch"],
        &["--phys-data"],
        &["--data-page-size", "--code-page-size"],
        &["--sample-identifier"],
        &["-g", "--user-callchains"],
        &["-g", "--kernel-callchains"],
        &["-n"],
        &["--no-bpf-event"],
        &["-e", "cpu-clock,page-faults", "--group"],
        &["-e", "{cpu-clock,page-faults}:S", "--running-time"],
        &["--strict-freq", "-F", "999"],
        // perf takes -c 0 for no -c.
        &["-c", "0"],
        &["--no-buffering"],
        &["-e", "cpu-clock,page-faults", "--no-buffering", "-D", "10"],
        &[
            "-e",
            "sched:sched_switch,sched:sched_process_exec",
            "-c",
            "3",
        ],
        &[
            "-e",
            "raw_syscalls:sys_enter",
            "-F",
            "100",
            "--call-graph",
            "dwarf",
        ],
        &[
            "-e",
            "cpu-clock,page-faults",
            "-d",
            "--switch-events",
            "--namespaces",
            "-W",
            "-D",
            "20",
        ],
    ];
    for (i, args) in cases.iter().enumerate() {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        let mut q = vec!["-q"];
        q.extend_from_slice(args);
        prec_record(&a, &q);
        perf_record(&b, &q);
        assert_eq_text(&evlist(&b), &evlist(&a));
        // perf evlist names no TRANSACTION bit: the attrs' own words.
        assert_eq!(sample_types(&b), sample_types(&a), "{args:?}");
        assert_eq!(
            header_lines(&b, "# group"),
            header_lines(&a, "# group"),
            "{args:?}"
        );
        assert_perf_reads_clean(&a, &args.join(" "));
    }
}

/// Branch stacks (`-b`, `-j`): the same attrs as perf where the hardware
/// records branches, else perf's error (on this kind of VM, none does).
#[test]
fn branch_stack_options_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for (i, args) in [
        &["-b"][..],
        &["-j", "any_call,u"],
        &["-e", "cpu-clock", "-b"],
    ]
    .iter()
    .enumerate()
    {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        let mut q = vec!["-q"];
        q.extend_from_slice(args);
        let output = |mut c: std::process::Command, out: &Path| {
            c.args(["record", "-o"])
                .arg(out)
                .args(&q)
                .arg("--")
                .arg(hot3())
                .output()
                .expect("run record")
        };
        let mine = output(prec(), &a);
        let theirs = output(perf(), &b);
        let error_line = |o: &Output| {
            stderr(o)
                .lines()
                .find(|l| l.contains("branch stack"))
                .map(|l| l.trim_start_matches("prec: ").to_string())
        };
        match (theirs.status.success() && b.exists(), error_line(&theirs)) {
            (_, Some(perf_error)) => {
                assert!(!mine.status.success(), "{args:?}: prec recorded");
                assert_eq!(error_line(&mine), Some(perf_error), "{args:?}");
            }
            (true, None) => assert_eq_text(&evlist(&b), &evlist(&a)),
            (false, None) => panic!("{args:?}: perf failed: {}", stderr(&theirs)),
        }
    }
    let o = prec()
        .args(["record", "-j", "nope", "--", "true"])
        .output()
        .expect("run prec");
    assert!(!o.status.success() && stderr(&o).contains("unknown branch filter"));
}

/// An ordinary user (nobody, at perf_event_paranoid 2) asking for events
/// gets perf's fallback: kernel and hypervisor excluded, `:u` names; the
/// default event only leaves the kernel out.
#[test]
fn unprivileged_attrs_match_perf() {
    if !require_perf_record() {
        return;
    }
    let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|p| p.trim().parse::<i32>().ok());
    let (Some(runuser), Some(2)) = (runuser_if_root(), paranoid) else {
        eprintln!("SKIPPED: needs root, runuser and perf_event_paranoid 2");
        return;
    };
    let dir = shared_tempdir("prec-record-modes");
    let cases: &[&[&str]] = &[
        &[],
        &["-e", "cpu-clock"],
        &["-e", "cycles"],
        &["-e", "{cpu-clock,page-faults}"],
        &["-e", "page-faults,task-clock"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let mut files = Vec::new();
        for (tool, bin) in [("perf", perf_path()), ("prec", prec_bin())] {
            let file = dir.join(format!("{tool}{i}.data"));
            let mut c = std::process::Command::new(runuser);
            c.args(["-u", "nobody", "--"])
                .arg(bin)
                .args(["record", "-q", "-o"])
                .arg(&file)
                .args(*args)
                .args(["--", "true"])
                .env("PERF_CONFIG", "/dev/null");
            let o = run(&mut c);
            assert!(o.status.success(), "{tool} {args:?}: {}", stderr(&o));
            // perf reads only its own user's files (or -f).
            std::os::unix::fs::chown(&file, Some(0), Some(0)).expect("chown root");
            files.push(file);
        }
        assert_eq_text(&evlist(&files[0]), &evlist(&files[1]));
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `-z`: COMPRESSED records and feature as perf writes them; perf and prec
/// report the same profile from prec's compressed file.
#[test]
fn compressed_recording() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("z.data");
    let o = prec_record(&a, &["-z"]);
    let last = stderr(&o).lines().last().unwrap_or_default().to_string();
    assert!(
        last.contains(", compressed (original ") && !last.contains("samples)"),
        "summary line: {last}"
    );
    let h = header_lines(&a, "# compressed");
    assert!(
        h.len() == 1 && h[0].starts_with("# compressed : Zstd, level = 1, ratio = "),
        "{h:?}"
    );
    // As with perf -z: no BUILD_ID (perf skips build-id collection).
    let b = dir.join("perf-z.data");
    perf_record(&b, &["-q", "-z"]);
    assert_eq!(
        header_lines(&a, "# missing features"),
        header_lines(&b, "# missing features")
    );
    let dump = stdout_of(perf().args(["report", "-D", "-i"]).arg(&a));
    assert!(dump.contains("COMPRESSED events:"), "no COMPRESSED records");
    assert_perf_reads_clean(&a, "-z");
    // Same report from both tools (the tip line is random).
    let theirs = without_tip(&stdout_of(perf().args(["report", "--stdio", "-i"]).arg(&a)));
    let ours = without_tip(&stdout_of(prec().args(["report", "--stdio", "-i"]).arg(&a)));
    assert_eq_text(&theirs, &ours);
    assert!(theirs.contains("hot_a"), "{theirs}");

    // A level is recorded as given; pipe mode decodes too.
    let c = dir.join("z3.data");
    prec_record(&c, &["-q", "--compression-level=3"]);
    let h = header_lines(&c, "# compressed");
    assert!(h[0].starts_with("# compressed : Zstd, level = 3,"), "{h:?}");
    let piped = run(prec()
        .args(["record", "-q", "-z", "-o", "-", "--"])
        .arg(hot3()));
    let p = dir.join("pipe.data");
    std::fs::write(&p, &piped.stdout).unwrap();
    let rep = perf()
        .args(["report", "--stdio", "-i", "-"])
        .stdin(std::fs::File::open(&p).unwrap())
        .output()
        .unwrap();
    assert!(rep.status.success(), "{}", stderr(&rep));
    assert!(stderr(&rep).trim().is_empty(), "{}", stderr(&rep));
    assert!(String::from_utf8_lossy(&rep.stdout).contains("hot_a"));
}

/// `-k`: CLOCKID and CLOCK_DATA as perf writes them.
#[test]
fn clockid_features() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for clock in ["monotonic", "realtime", "tai"] {
        let a = dir.join(format!("prec-{clock}.data"));
        let b = dir.join(format!("perf-{clock}.data"));
        prec_record(&a, &["-q", "-k", clock]);
        perf_record(&b, &["-q", "-k", clock]);
        for prefix in ["# clockid", "# missing features"] {
            assert_eq!(
                header_lines(&a, prefix),
                header_lines(&b, prefix),
                "{clock}"
            );
        }
        assert!(!header_lines(&a, "# clockid:").is_empty());
    }
    let a = dir.join("prec-monotonic.data");
    assert_perf_reads_clean(&a, "-k monotonic");
}

/// The build-id options, against perf on the same program: `-B` and `-z`
/// (no BUILD_ID, records not read back: no sample count, zero sample
/// times), `--buildid-all` (every file mapped, in perf's order; no count;
/// zero times unless `--timestamp-boundary`), and the default.
#[test]
fn build_id_options_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let buildid_names = |file: &Path| -> Vec<String> {
        stdout_of(perf().args(["buildid-list", "-i"]).arg(file))
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(_, name)| name.to_string()))
            .collect()
    };
    let zero_times = |file: &Path| {
        header_lines(file, "# time of first sample") == ["# time of first sample : 0.000000"]
    };
    for args in [
        &["-B"][..],
        &["-z"],
        &["--buildid-all"],
        &["--buildid-all", "--timestamp-boundary"],
        &["-N"],
    ] {
        let (a, b) = (dir.join("prec.data"), dir.join("perf.data"));
        let o = prec_record(&a, args);
        let p = perf_record(&b, args);
        let counted = |o: &Output| {
            stderr(o)
                .lines()
                .last()
                .unwrap_or_default()
                .ends_with(" samples) ]")
        };
        assert_eq!(
            counted(&o),
            counted(&p),
            "{args:?}: sample count\n{}",
            stderr(&o)
        );
        assert_eq!(zero_times(&a), zero_times(&b), "{args:?}: sample times");
        let (names, perf_names) = (buildid_names(&a), buildid_names(&b));
        if args.contains(&"--buildid-all") {
            // Every file hot3 maps, the kernel and the vDSO, sampled or not.
            assert_eq!(names, perf_names, "{args:?}");
            assert!(names.iter().any(|n| n.ends_with("/hot3")), "{names:?}");
        } else {
            assert_eq!(
                names.is_empty(),
                perf_names.is_empty(),
                "{args:?}: {names:?}"
            );
        }
        if args == ["-B"] {
            let missing = header_lines(&a, "# missing features").join("");
            assert!(missing.contains("BUILD_ID"), "{missing}");
        }
    }
}

/// `--timestamp-filename`: the finished file is renamed NAME.<16 digits>
/// (local time to the hundredth of a second), with perf's messages.
#[test]
fn timestamp_filename_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let stamped = |name: &str| -> Vec<String> {
        std::fs::read_dir(&*dir)
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|f| {
                f.strip_prefix(name)
                    .and_then(|r| r.strip_prefix('.'))
                    .is_some_and(|ts| ts.len() == 16 && ts.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect()
    };
    // The stderr lines, with names and numbers masked.
    let shape = |o: &Output, tool: &str| -> Vec<String> {
        stderr(o)
            .lines()
            .filter(|l| l.contains("Dump") || l.contains("Captured"))
            .map(|l| {
                let named: Vec<&str> = l
                    .split(' ')
                    .map(|w| if w.contains(".data.") { "NAME" } else { w })
                    .collect();
                let mut masked = String::new();
                for c in named.join(" ").replace(tool, "TOOL").chars() {
                    let c = if c.is_ascii_digit() { '9' } else { c };
                    if !(c == '9' && masked.ends_with('9')) {
                        masked.push(c);
                    }
                }
                masked
            })
            .collect()
    };
    let o = prec_record(&dir.join("prec.data"), &["--timestamp-filename"]);
    let p = perf_record(&dir.join("perf.data"), &["--timestamp-filename"]);
    assert_eq!(shape(&o, "prec"), shape(&p, "perf"));
    let (mine, theirs) = (stamped("prec.data"), stamped("perf.data"));
    assert_eq!((mine.len(), theirs.len()), (1, 1), "{mine:?} {theirs:?}");
    assert!(!dir.join("prec.data").exists());
    assert_perf_reads_clean(&dir.join(&mine[0]), "--timestamp-filename");
}

/// `--switch-output`: by size (both recorders: the files, their names,
/// the tasks made up again at the start of each new file, perf reading
/// prec's clean), with `--switch-max-files`, and on SIGUSR2.
#[test]
fn switch_output_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let files_of = |name: &str| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&*dir)
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|f| f.to_str())
                    .and_then(|f| f.strip_prefix(name))
                    .and_then(|r| r.strip_prefix('.'))
                    .is_some_and(|ts| ts.len() == 16 && ts.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect();
        v.sort();
        v
    };
    // The files named by the made-up (time 0) COMM and MMAP2 records that
    // start a file after a switch.
    let synthesized = |file: &Path| -> Vec<String> {
        let text = stdout_of(
            perf()
                .args(["script", "--show-task-events", "--show-mmap-events", "-i"])
                .arg(file),
        );
        let mut v: Vec<String> = text
            .lines()
            .filter(|l| {
                l.contains(" 0.000000: PERF_RECORD_MMAP2")
                    || l.contains(" 0.000000: PERF_RECORD_COMM")
            })
            .filter_map(|l| l.rsplit(' ').next().map(str::to_string))
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let o = prec_record(&dir.join("prec.data"), &["--switch-output=30K"]);
    let p = perf_record(&dir.join("perf.data"), &["--switch-output=30K"]);
    // A size below the wake-up size: perf's warning, with its size.
    let warning = |o: &Output| -> Vec<String> {
        stderr(o)
            .lines()
            .filter(|l| l.starts_with("WARNING: switch-output"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(warning(&o).len(), 1, "{}", stderr(&o));
    assert_eq!(warning(&o), warning(&p));
    let (mine, theirs) = (files_of("prec.data"), files_of("perf.data"));
    assert!(mine.len() >= 3 && theirs.len() >= 2, "{mine:?} {theirs:?}");
    assert!(
        stderr(&o).contains("[ prec record: dump data: Woken up"),
        "{}",
        stderr(&o)
    );
    for f in &mine {
        assert_perf_reads_clean(f, "--switch-output");
    }
    // A file started while hot3 ran: its task and maps made up again (as
    // perf's record__synthesize_workload), so its samples have symbols.
    assert!(
        synthesized(&mine[1]).iter().any(|n| n.starts_with("hot3:")),
        "{:?}",
        synthesized(&mine[1])
    );
    let rep = stdout_of(
        perf()
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(&mine[1]),
    );
    assert!(rep.contains("hot_a"), "{rep}");
    // With -p the made-up tasks are the target's, not the command's
    // (which only times the recording).
    let mut target = std::process::Command::new(hot3()).arg("2").spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let pid = target.id().to_string();
    run(prec()
        .args(["record", "-q", "--switch-output=20K", "-p", &pid, "-o"])
        .arg(dir.join("pid.data"))
        .args(["--", "sleep", "0.6"]));
    let _ = target.kill();
    let _ = target.wait();
    // The second file started while the target ran (how many files 0.6 s
    // of samples fill depends on the machine's load).
    let by_pid = files_of("pid.data");
    assert!(by_pid.len() >= 2, "{by_pid:?}");
    let rep = stdout_of(
        perf()
            .args(["report", "--stdio", "--sort", "sym", "-i"])
            .arg(&by_pid[1]),
    );
    assert!(rep.contains("hot_a"), "-p: {rep}");
    // Rotation keeps the newest N, the last file included.
    prec_record(
        &dir.join("rot.data"),
        &["--switch-output=20K", "--switch-max-files", "2"],
    );
    assert_eq!(files_of("rot.data").len(), 2);
    // SIGUSR2.
    let mut rec = prec();
    rec.args(["record", "-q", "--switch-output", "-o"])
        .arg(dir.join("sig.data"))
        .arg("--")
        .arg(hot3())
        .arg("1");
    let child = rec.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(400));
    let _ = std::process::Command::new("kill")
        .args(["-USR2", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    assert_eq!(files_of("sig.data").len(), 2);
    // Without --switch-output, perf record ignores SIGUSR2; so does prec.
    let plain = dir.join("plain.data");
    let mut rec = prec();
    rec.args(["record", "-q", "-o"])
        .arg(&plain)
        .arg("--")
        .arg(hot3())
        .arg("0.5");
    let child = rec.spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let _ = std::process::Command::new("kill")
        .args(["-USR2", &child.id().to_string()])
        .status();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{:?}", o.status);
    assert_perf_reads_clean(&plain, "SIGUSR2 without --switch-output");
}

/// `--namespaces` and `--switch-events`: the records perf shows.
#[test]
fn namespaces_and_switch_records() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("ns.data");
    prec_record(&a, &["-q", "--namespaces", "--switch-events"]);
    let o = run(perf()
        .args([
            "script",
            "--show-namespace-events",
            "--show-switch-events",
            "-i",
        ])
        .arg(&a));
    assert!(stderr(&o).trim().is_empty(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("PERF_RECORD_NAMESPACES") && text.contains("nr_namespaces: 7"),
        "{text}"
    );
    assert!(text.contains("PERF_RECORD_SWITCH"), "no SWITCH records");
}

/// `--per-thread`: one ring per thread on CPU -1, as perf.
#[test]
fn per_thread_maps() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("pt.data");
    let b = dir.join("perf-pt.data");
    prec_record(&a, &["-q", "--per-thread"]);
    perf_record(&b, &["-q", "--per-thread"]);
    let dump = stdout_of(perf().args(["report", "-D", "-i"]).arg(&a));
    assert!(dump.contains("PERF_RECORD_CPU_MAP: -1"), "CPU_MAP");
    assert!(dump.contains("cpu: -1"), "ID_INDEX");
    for prefix in ["# time of first sample", "# time of last sample"] {
        assert_eq!(header_lines(&a, prefix), header_lines(&b, prefix));
    }
}

/// `--max-size`: stops (and stops the workload) once the data reaches it.
#[test]
fn max_size_stops() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("m.data");
    let b = dir.join("p.data");
    // Both stop the workload with SIGTERM and exit with its status (143),
    // saying so even with -q.
    let limited = |tool: Command, out: &Path| {
        let mut c = tool;
        c.args(["record", "-q", "--max-size", "16K", "-o"])
            .arg(out)
            .arg("--")
            .arg(hot3())
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        c.output().expect("run record")
    };
    let o = limited(prec(), &a);
    let p = limited(perf(), &b);
    assert!(stderr(&o).contains("size limit reached"), "{}", stderr(&o));
    // The workload's status after the SIGTERM: a shell sees 143. perf
    // mostly dies of that SIGTERM too (143), but not always (0): racy.
    let shell_code = |o: &Output| {
        use std::os::unix::process::ExitStatusExt;
        o.status
            .code()
            .or_else(|| o.status.signal().map(|s| 128 + s))
    };
    // perf checks the size only when it writes: where the workload ends
    // before the first ring-buffer wakeup, perf writes everything at once
    // and never stops it (seen on CI). Its status is still checked below.
    if !stderr(&p).contains("size limit reached") {
        eprintln!("note: perf did not reach its size limit this time");
    }
    assert_eq!(shell_code(&o), Some(143), "{}", stderr(&o));
    assert!(
        matches!(shell_code(&p), Some(0 | 143)),
        "perf: {:?}",
        p.status
    );
    let len = std::fs::metadata(&a).unwrap().len();
    // 16 KiB plus at most a drain pass and the header/features.
    assert!(len < 200 * 1024, "{len} bytes");
    assert_perf_reads_clean(&a, "--max-size");
}

/// `-D`: events enabled after the delay, with perf's messages.
#[test]
fn delay_messages() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("d.data");
    let o = prec_record(&a, &["-D", "30"]);
    let e = stderr(&o);
    assert!(
        e.contains("Events disabled") && e.contains("Events enabled"),
        "{e}"
    );
    let o = prec_record(&dir.join("q.data"), &["-q", "-D", "30"]);
    assert!(stderr(&o).trim().is_empty());
}

/// System-wide (needs privileges; skipped otherwise): the tracking dummy is
/// configured like perf's for each option.
#[test]
fn system_wide_dummy_matches_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let probe = perf()
        .args(["record", "-q", "-a", "-o"])
        .arg(dir.join("probe.data"))
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    if !probe.status.success() {
        eprintln!("SKIPPED: perf record -a is not permitted here");
        return;
    }
    let cases: &[&[&str]] = &[
        &["-a", "-c", "100000"],
        &["-a", "-F", "999"],
        &["-a", "-g"],
        &["-a", "-d", "-W", "--switch-events"],
        &["-a", "-z", "-k", "monotonic"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        let mut q = vec!["-q"];
        q.extend_from_slice(args);
        prec_record(&a, &q);
        perf_record(&b, &q);
        assert_eq_text(&evlist(&b), &evlist(&a));
        assert_eq!(
            header_lines(&b, "# group"),
            header_lines(&a, "# group"),
            "{args:?}"
        );
        assert_perf_reads_clean(&a, &args.join(" "));
    }
}

/// A recording without samples (`-n`, or an event that never fires) still
/// has perf's SAMPLE_TIME feature, as zeros.
#[test]
fn sample_time_without_samples() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for args in [&["-n"][..], &["-e", "major-faults"]] {
        let (a, b) = (dir.path().join("prec.data"), dir.path().join("perf.data"));
        prec_record(&a, &[&["-q"][..], args].concat());
        perf_record(&b, &[&["-q"][..], args].concat());
        // A loaded machine can give hot3 a major fault after all (seen in
        // CI): the comparison is of files without samples.
        let sampled = |f: &Path| {
            record_counts(f)
                .iter()
                .any(|(k, n)| k == "SAMPLE" && *n > 0)
        };
        if args[0] != "-n" && (sampled(&a) || sampled(&b)) {
            continue;
        }
        for prefix in ["# time of first sample", "# missing features"] {
            assert_eq!(
                header_lines(&a, prefix),
                header_lines(&b, prefix),
                "{args:?}: {prefix}"
            );
        }
    }
}

/// `--filter` after a tracepoint's `-e`: the kernel drops the records the
/// filter rejects, for prec as for perf; `--exclude-perf` filters out the
/// recorder's own records; a filter without a tracepoint before it, and
/// one the kernel refuses, are errors.
#[test]
fn tracepoint_filter() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    // openat (257) only; the second filter narrows the first.
    let opts = [
        "-e",
        "raw_syscalls:sys_enter",
        "--filter",
        "id == 257 || id == 0",
        "--filter",
        "id != 0",
    ];
    let files = record_both(&dir, "filter", &opts, &["ls", "/"]);
    let mut counts = Vec::new();
    for f in &files {
        let (text, _) = script_stdout(perf(), f, Input::File, &[]);
        let samples: Vec<&str> = text.lines().filter(|l| l.contains("sys_enter:")).collect();
        assert!(!samples.is_empty(), "no sample in {}", f.display());
        if let Some(other) = samples.iter().find(|l| !l.contains("NR 257 ")) {
            panic!("{}: a record the filter rejects: {other}", f.display());
        }
        counts.push(samples.len());
    }
    assert_eq!(counts[0], counts[1], "openat calls of `ls /`: perf, prec");
    // --exclude-perf: system-wide, no record of the recorder itself (the
    // workload's parent).
    let parent = dir.join("parent");
    let script = format!("echo $PPID > {}; sleep 0.2", parent.display());
    let own = dir.join("exclude.data");
    run(prec()
        .args([
            "record",
            "-q",
            "-a",
            "-e",
            "raw_syscalls:sys_enter",
            "--exclude-perf",
            "-o",
        ])
        .arg(&own)
        .args(["--", "sh", "-c", &script]));
    let recorder = std::fs::read_to_string(&parent).expect("the workload wrote its parent");
    let recorder = recorder.trim();
    let (text, _) = script_stdout(perf(), &own, Input::File, &["-F", "pid"]);
    assert!(text.lines().count() > 10, "few samples: {text}");
    assert!(
        !text.lines().any(|l| l.trim() == recorder),
        "records of prec itself (pid {recorder}) with --exclude-perf"
    );
    let refused: &[(&[&str], &str)] = &[
        (
            &["--filter", "id == 1", "-e", "raw_syscalls:sys_enter"],
            "--filter",
        ),
        (&["-e", "cpu-clock", "--filter", "id == 1"], "cpu-clock"),
        (
            &["--exclude-perf", "-e", "raw_syscalls:sys_enter"],
            "--exclude-perf",
        ),
        (
            &[
                "-e",
                "raw_syscalls:sys_enter",
                "--filter",
                "no_such_field == 1",
            ],
            "failed to set filter",
        ),
    ];
    for (args, says) in refused {
        let o = prec()
            .args(["record", "-q", "-o"])
            .arg(dir.join("x.data"))
            .args(*args)
            .args(["--", "true"])
            .output()
            .expect("prec runs");
        let err = stderr(&o);
        assert!(
            !o.status.success() && err.contains(says),
            "{args:?}: {}: {err}",
            o.status
        );
    }
}

/// `--synth`: which records are made up for the processes running before
/// a system-wide recording. Both recorders, the same shape: `no` leaves
/// only the workload's `perf-exec` COMM, `task` adds every process's COMM
/// but no MMAP2, `all` (the default) both.
#[test]
fn synth_option_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    // (COMM records at time 0, user-space MMAP records at time 0).
    let shape = |file: &Path| -> (usize, usize) {
        let (text, _) = script_stdout(
            perf(),
            file,
            Input::File,
            &["--show-task-events", "--show-mmap-events"],
        );
        let at_start = |what: &str| {
            text.lines()
                .filter(|l| l.contains(" 0.000000: ") && l.contains(what))
                .filter(|l| !l.contains("[kernel.kallsyms]") && !l.trim_end().ends_with(']'))
                .count()
        };
        (at_start("PERF_RECORD_COMM"), at_start("PERF_RECORD_MMAP"))
    };
    for synth in ["no", "task", "all"] {
        let opt = format!("--synth={synth}");
        let files = record_both(&dir, synth, &["-a", &opt], &["sleep", "0.1"]);
        let (perf_shape, prec_shape) = (shape(&files[0]), shape(&files[1]));
        let kind = |(comms, mmaps): (usize, usize)| (comms > 1, mmaps > 0);
        assert_eq!(
            kind(prec_shape),
            kind(perf_shape),
            "{opt}: (COMMs, MMAPs) at the start: prec {prec_shape:?}, perf {perf_shape:?}"
        );
        if synth == "no" {
            assert_eq!(prec_shape, (1, 0), "{opt}: only the workload's COMM");
        }
        assert_perf_reads_clean(&files[1], &opt);
    }
}

/// The records of `file` without a time (those made up from /proc, and
/// FINISHED_INIT), in file order as `perf report -D` lists them: each
/// record's type, with a COMM's name and an MMAP2's file. FINISHED_ROUND
/// is left out and counted apart.
fn untimed_records(file: &Path) -> (Vec<String>, usize) {
    let dump = stdout_of(perf().args(["report", "-D", "-i"]).arg(file));
    let mut records = Vec::new();
    let mut rounds = 0;
    for line in dump.lines() {
        let Some(rest) = line.strip_prefix("0 0x") else {
            continue;
        };
        let Some((_, record)) = rest.split_once("]: ") else {
            continue;
        };
        if record.starts_with("PERF_RECORD_FINISHED_ROUND") {
            rounds += 1;
            continue;
        }
        let kind = record.split([':', ' ']).next().unwrap_or("");
        let what = match kind {
            "PERF_RECORD_COMM" => record.rsplit(' ').next().and_then(|c| c.split(':').next()),
            "PERF_RECORD_MMAP2" => record.rsplit(' ').next(),
            _ => None,
        };
        records.push(match what {
            Some(w) => format!("{kind} {w}"),
            None => kind.to_string(),
        });
    }
    (records, rounds)
}

/// `--tail-synthesize`: the kernel's maps, the id index, the thread and
/// CPU maps and the targets' tasks end the file, after FINISHED_INIT, in
/// perf's order (a workload and a -p target). Unlike perf, prec writes no
/// FINISHED_ROUND then: a reader that processed earlier rounds would have
/// resolved their kernel samples without the kernel's map, which comes
/// last (perf's own files lose some that way).
#[test]
fn tail_synthesize_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let (mine, theirs) = (dir.join("prec.data"), dir.join("perf.data"));
    prec_record(&mine, &["--tail-synthesize", "-F", "20000"]);
    perf_record(&theirs, &["--tail-synthesize", "-F", "20000"]);
    let (records, rounds) = untimed_records(&mine);
    assert_eq!(records, untimed_records(&theirs).0);
    assert_eq!(
        records.first().map(String::as_str),
        Some("PERF_RECORD_COMM perf-exec")
    );
    assert!(
        records.contains(&"PERF_RECORD_COMM hot3".to_string()),
        "{records:?}"
    );
    assert_eq!(rounds, 0);
    assert_perf_reads_clean(&mine, "--tail-synthesize");
    let dsos = stdout_of(
        perf()
            .args(["report", "--stdio", "--sort", "dso", "-i"])
            .arg(&mine),
    );
    assert!(
        dsos.contains("[kernel.kallsyms]"),
        "no kernel samples:\n{dsos}"
    );
    assert!(!dsos.contains("[unknown]"), "{dsos}");
    for sort in ["comm,dso,sym", "pid"] {
        let args = ["report", "--stdio", "--sort", sort, "-i"];
        let text = |c: &mut std::process::Command| -> String {
            let t = stdout_of(c.args(args).arg(&mine));
            t.lines()
                .filter(|l| !l.contains("Tip:"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(text(&mut prec()), text(&mut perf()), "--sort {sort}");
    }

    // A running process (-p): its task comes last, from /proc.
    let mut target = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = target.id().to_string();
    let at_pid = ["--tail-synthesize", "-p", &pid, "--", "sleep", "0.3"];
    run(prec().args(["record", "-q", "-o"]).arg(&mine).args(at_pid));
    run(perf()
        .args(["record", "-q", "-o"])
        .arg(&theirs)
        .args(at_pid));
    let _ = target.kill();
    let _ = target.wait();
    let (records, _) = untimed_records(&mine);
    assert_eq!(records, untimed_records(&theirs).0);
    let sleep_maps = records.iter().filter(|r| r.ends_with("/sleep")).count();
    assert!(
        records
            .last()
            .is_some_and(|r| r.starts_with("PERF_RECORD_MMAP2"))
            && sleep_maps > 0,
        "{records:?}"
    );

    // A pipe's readers need the attrs first: refused, where perf writes a
    // stream its own report cannot read.
    let o = run_fail(prec().args(["record", "--tail-synthesize", "-o", "-", "--", "true"]));
    assert!(
        stderr(&o).contains("--tail-synthesize needs a file output"),
        "{}",
        stderr(&o)
    );
}

/// `--affinity=node|cpu`: perf reads prec's files clean. (Not recorded by
/// perf beside: perf 6.1 corrupts its heap and aborts on one run in a few
/// with this option.)
#[test]
fn affinity_files_read_clean() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let file = dir.join("prec.data");
    for args in [
        &["--affinity=node"][..],
        &["--affinity=cpu"],
        &["--affinity=cpu", "--mmap-flush", "1M"],
    ] {
        let mut q = vec!["-q"];
        q.extend_from_slice(args);
        prec_record(&file, &q);
        assert_perf_reads_clean(&file, &args.join(" "));
    }
    let o = run_fail(prec().args(["record", "--affinity=nodes", "--", "true"]));
    assert!(
        stderr(&o).contains("invalid --affinity 'nodes'"),
        "{}",
        stderr(&o)
    );
}

/// `--proc-map-timeout`: a running process (-p) whose /proc/PID/maps
/// takes longer than the limit (here 0 ms) keeps the maps read in time;
/// the line read when it ran out is written with perf's
/// PROC_MAP_PARSE_TIMEOUT mark, which perf report counts (and prec report
/// notes), and the recorder warns as perf does. Within the limit: all
/// maps, no warning.
#[test]
fn proc_map_timeout_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut target = std::process::Command::new("sleep")
        .arg("30")
        .spawn()
        .expect("spawn sleep");
    let pid = target.id().to_string();
    let record = |cmd: &mut std::process::Command, out: &Path, timeout: &str| {
        run(cmd
            .args(["record", "--proc-map-timeout", timeout, "-p", &pid, "-o"])
            .arg(out)
            .args(["--", "sleep", "0.2"]))
    };
    let (mine, theirs) = (dir.join("prec.data"), dir.join("perf.data"));
    let recorded = record(&mut prec(), &mine, "0");
    record(&mut perf(), &theirs, "0");
    let warning = format!("Reading /proc/{pid}/task/{pid}/maps time out.");
    assert!(
        stderr(&recorded).contains(&warning),
        "{}",
        stderr(&recorded)
    );
    // Without samples both reports end in an error: only stderr counts.
    let stderr_of = |cmd: &mut std::process::Command| {
        let o = cmd.stdin(std::process::Stdio::null()).output();
        stderr(&o.expect("run report"))
    };
    let perf_report_stderr =
        |file: &Path| stderr_of(perf().args(["report", "--stdio", "-i"]).arg(file));
    let counted = "1 map information files for pre-existing threads were";
    assert!(perf_report_stderr(&theirs).contains(counted));
    assert!(
        perf_report_stderr(&mine).contains(counted),
        "{}",
        perf_report_stderr(&mine)
    );
    let noted = stderr_of(prec().args(["report", "--stdio", "-i"]).arg(&mine));
    assert!(noted.contains("--proc-map-timeout"), "{noted}");

    let in_time = dir.join("prec-in-time.data");
    let recorded = record(&mut prec(), &in_time, "5000");
    let _ = target.kill();
    let _ = target.wait();
    assert!(
        !stderr(&recorded).contains("time out"),
        "{}",
        stderr(&recorded)
    );
    assert!(!perf_report_stderr(&in_time).contains(counted));
    let maps = stdout_of(
        perf()
            .args(["script", "--show-mmap-events", "-i"])
            .arg(&in_time),
    );
    assert!(
        maps.lines()
            .any(|l| l.contains("MMAP2") && l.ends_with("/sleep")),
        "{maps}"
    );
}

/// `-r PRIORITY`: the recorder runs under SCHED_FIFO, the command it
/// starts keeps the usual policy (perf forks it first); without the right
/// to (an ordinary user) it fails before writing a file, where perf
/// leaves a header-only file behind.
#[test]
fn realtime_priority_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    // The policy of a running recorder (its pid: that of the command's
    // parent), and that of the command, as `chrt -p` prints them.
    let policies = |bin: &Path, file: &Path| -> (String, String) {
        let mut c = std::process::Command::new(bin);
        c.args(["record", "-q", "-r", "2", "-o"]).arg(file).args([
            "--",
            "sh",
            "-c",
            "chrt -p $$ | sed 's/.*: //'; chrt -p $PPID | sed 's/.*: //'",
        ]);
        let out = String::from_utf8_lossy(&run(&mut c).stdout).into_owned();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 4, "{out}");
        (lines[..2].join(" "), lines[2..].join(" "))
    };
    let (command, recorder) = policies(&prec_bin(), &dir.join("prec.data"));
    assert_eq!(
        (command.as_str(), recorder.as_str()),
        ("SCHED_OTHER 0", "SCHED_FIFO 2")
    );
    assert_eq!(
        policies(&perf_path(), &dir.join("perf.data")),
        (command, recorder)
    );
    assert_perf_reads_clean(&dir.join("prec.data"), "-r 2");

    let Some(runuser) = runuser_if_root() else {
        eprintln!("SKIPPED (ordinary user): needs root and runuser");
        return;
    };
    let shared = shared_tempdir("prec-realtime");
    let file = shared.join("nobody.data");
    let o = run_fail(
        std::process::Command::new(runuser)
            .args(["-u", "nobody", "--"])
            .arg(prec_bin())
            .args(["record", "-r", "1", "-o"])
            .arg(&file)
            .args(["--", "true"]),
    );
    assert!(
        stderr(&o).contains("Could not set realtime priority 1"),
        "{}",
        stderr(&o)
    );
    assert!(!file.exists());
    let _ = std::fs::remove_dir_all(&shared);
}

/// `perf report --stats` counts by record kind (`KIND events: N` lines of
/// the totals, without percentages).
fn record_counts(file: &Path) -> Vec<(String, u64)> {
    stdout_of(perf().args(["report", "--stats", "-i"]).arg(file))
        .lines()
        .skip_while(|l| !l.contains("Aggregated stats:"))
        .skip(1)
        .take_while(|l| !l.trim_end().ends_with(" stats:"))
        .filter_map(|l| {
            let (kind, rest) = l.trim().split_once(" events:")?;
            let n = rest.split_whitespace().next()?.parse().ok()?;
            Some((kind.to_string(), n))
        })
        .collect()
}

/// `--overwrite`: backward-writing events in read-only rings that keep the
/// newest records, read at the end, the tasks made up after them.
#[test]
fn overwrite_keeps_the_newest_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for (i, args) in [
        &["--overwrite", "-m", "2"][..],
        &["--overwrite", "-e", "task-clock", "-g"],
    ]
    .iter()
    .enumerate()
    {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        prec_record(&a, args);
        perf_record(&b, args);
        assert_eq_text(&evlist(&b), &evlist(&a));
        assert!(evlist(&a).contains("write_backward: 1"), "{args:?}");
        assert_perf_reads_clean(&a, "--overwrite");
        // The records perf record makes itself, the same; what the rings
        // kept depends on which CPU ran what when.
        let (ours, theirs) = (record_counts(&a), record_counts(&b));
        let made = |c: &[(String, u64)]| {
            c.iter()
                .filter(|(k, _)| {
                    [
                        "FINISHED_ROUND",
                        "ID_INDEX",
                        "THREAD_MAP",
                        "CPU_MAP",
                        "EVENT_UPDATE",
                        "FINISHED_INIT",
                    ]
                    .contains(&k.as_str())
                })
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(made(&ours), made(&theirs), "{args:?}: records perf makes");
        let samples =
            |c: &[(String, u64)]| c.iter().find(|(k, _)| k == "SAMPLE").map_or(0, |&(_, n)| n);
        if i == 0 {
            // Each CPU's 8 KiB ring holds the last ~200 of hot3's ~4000
            // samples (40 bytes each), for perf as for prec.
            let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
            for (who, n) in [("prec", samples(&ours)), ("perf", samples(&theirs))] {
                assert!(n > 100 && n <= cpus * 8192 / 40, "{who} kept {n} samples");
            }
        }
        if let Err(e) = compare_report(&a, Input::File, &["--sort", "comm,dso,sym"]) {
            panic!("{e}");
        }
    }
}

/// EVENT_UPDATE records as perf writes them: in a pipe every event's name
/// and a clock event's unit and scale; in a file the units and scales,
/// after the kernel's maps or at a --tail-synthesize file's end.
#[test]
fn event_updates_like_perf() {
    if !require_perf_record() {
        return;
    }
    let updates = |data: &Path, pipe: bool| -> String {
        let mut c = perf();
        c.args(["report", "-D", "-i"]);
        let input = std::fs::File::open(data).expect("open recording");
        if pipe {
            c.arg("-").stdin(input);
        } else {
            c.arg(data).stdin(std::process::Stdio::null());
        }
        let out = c.output().expect("run perf report -D");
        assert!(out.status.success(), "perf report -D -i {}", data.display());
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| {
                l.starts_with("... unit:")
                    || l.starts_with("... scale:")
                    || l.starts_with("... name:")
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let dir = tempdir();
    let events = [
        "-e",
        "page-faults",
        "-e",
        "{cpu-clock,task-clock}",
        "-e",
        "cycles:u",
    ];
    for tool in ["perf", "prec"] {
        let mut c = if tool == "perf" { perf() } else { prec() };
        let out = std::fs::File::create(dir.join(format!("{tool}.pipe"))).expect("create");
        c.args(["record", "-q"])
            .args(events)
            .args(["-o", "-", "--"])
            .arg(hot3())
            .arg("0.05")
            .stdout(out);
        run(&mut c);
        for (name, opts) in [("tail", &["--tail-synthesize"][..]), ("file", &[])] {
            let file = dir.join(format!("{tool}.{name}"));
            let mut c = if tool == "perf" { perf() } else { prec() };
            c.args(["record", "-q"])
                .args(opts)
                .args(events)
                .arg("-o")
                .arg(&file)
                .arg("--")
                .arg(hot3())
                .arg("0.05");
            run(&mut c);
        }
    }
    let theirs = updates(&dir.join("perf.pipe"), true);
    assert!(
        theirs.contains("... unit:  msec"),
        "perf wrote no units:\n{theirs}"
    );
    assert_eq_text(&theirs, &updates(&dir.join("prec.pipe"), true));
    let theirs = updates(&dir.join("perf.tail"), false);
    assert!(
        theirs.contains("... scale:"),
        "perf wrote no scales:\n{theirs}"
    );
    assert_eq_text(&theirs, &updates(&dir.join("prec.tail"), false));
    let theirs = updates(&dir.join("perf.file"), false);
    assert!(
        theirs.contains("... unit:  msec"),
        "perf wrote no units:\n{theirs}"
    );
    assert_eq_text(&theirs, &updates(&dir.join("prec.file"), false));
}

/// `--all-cgroups`: each sample's cgroup, the cgroups as CGROUP records, and
/// `report --sort cgroup` naming them as perf does.
#[test]
fn all_cgroups_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("prec.data");
    let b = dir.join("perf.data");
    let args = ["--all-cgroups", "-g"];
    prec_record(&a, &args);
    perf_record(&b, &args);
    assert_eq_text(&evlist(&b), &evlist(&a));
    assert_perf_reads_clean(&a, "--all-cgroups");
    let cgroup_records = |file: &Path| -> String {
        stdout_of(perf().args(["report", "-D", "-i"]).arg(file))
            .lines()
            .filter(|l| l.contains("PERF_RECORD_CGROUP"))
            .map(|l| l.split_once(": PERF_RECORD_CGROUP").map_or(l, |(_, r)| r))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let theirs = cgroup_records(&b);
    assert!(!theirs.is_empty(), "perf made no CGROUP records");
    assert_eq_text(&theirs, &cgroup_records(&a));
    let mut failures = Vec::new();
    for file in [&a, &b] {
        for sort in ["cgroup", "cgroup,comm", "sym,cgroup", "comm,cgroup,dso"] {
            if let Err(e) = compare_report(file, Input::File, &["--sort", sort]) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// `-G`: events counted in a cgroup (the cgroup directory's fd in the
/// pid's place), system-wide only, with perf's refusals.
#[test]
fn cgroup_option_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let record_to = |mut tool: std::process::Command, out: &Path, args: &[&str]| -> Output {
        tool.args(["record", "-q", "-o"])
            .arg(out)
            .args(args)
            .args(["--", "sleep", "0.2"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run record")
    };
    let args = ["-a", "-e", "cpu-clock", "-e", "task-clock", "-G", ",/"];
    let (a, b) = (dir.join("prec.data"), dir.join("perf.data"));
    let (mine, theirs) = (record_to(prec(), &a, &args), record_to(perf(), &b, &args));
    assert!(theirs.status.success(), "perf: {}", stderr(&theirs));
    assert!(mine.status.success(), "prec: {}", stderr(&mine));
    assert_eq_text(&evlist(&b), &evlist(&a));
    assert_perf_reads_clean(&a, "-G");
    // Without -a, before any -e, a cgroup that does not exist.
    for args in [
        &["-e", "cpu-clock", "-G", "/"][..],
        &["-G", "/", "-a"],
        &["-a", "-e", "cpu-clock", "-G", "/prec-no-such-cgroup"],
    ] {
        let out = dir.join("refused.data");
        let theirs = record_to(perf(), &out, args);
        let mine = record_to(prec(), &out, args);
        assert!(!mine.status.success(), "{args:?}: prec recorded");
        let perf_says = stderr(&theirs)
            .lines()
            .map(|l| l.trim().trim_start_matches("Error: ").to_string())
            .find(|l| !l.is_empty())
            .unwrap_or_default();
        assert!(
            stderr(&mine).contains(&perf_says),
            "{args:?}: perf says {perf_says:?}, prec:\n{}",
            stderr(&mine)
        );
    }
}

/// `--sort cgroup_id`: each sample thread's cgroup namespace from the
/// NAMESPACES records (`--namespaces`), 0/0x0 without, with perf's children
/// that count a frame twice when the namespace is known.
#[test]
fn cgroup_id_key_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("prec.data");
    let b = dir.join("perf.data");
    prec_record(&a, &["-q", "--namespaces", "-g"]);
    perf_record(&b, &["-q", "--namespaces", "-g"]);
    let mut failures = Vec::new();
    for file in [&a, &b] {
        for sort in ["cgroup_id,comm", "sym,cgroup_id"] {
            for children in ["--children", "--no-children"] {
                if let Err(e) = compare_report(file, Input::File, &["--sort", sort, children]) {
                    failures.push(e);
                }
            }
        }
    }
    assert_no_failures(&failures);
    let text = report_stdio(
        prec(),
        &a,
        Input::File,
        &["--sort", "cgroup_id", "-g", "none"],
    );
    assert!(
        !text.contains(" 0/0x0"),
        "prec's --namespaces recording has no cgroup namespace:\n{text}"
    );
}

/// perf record's "(N samples)": with leader sampling (`:S`) a sample is
/// delivered once per group member whose value moved, and counted so;
/// `perf report --stats` counts the same deliveries, per event.
#[test]
fn leader_sampled_group_sample_count_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = dir.join("group.data");
    let out = prec_record(&data, &["-e", "{cpu-clock,page-faults}:S"]);
    let err = stderr(&out);
    let said: u64 = err
        .split_once(" samples) ]")
        .and_then(|(before, _)| before.rsplit_once('(')?.1.parse().ok())
        .unwrap_or_else(|| panic!("no sample count in: {err}"));
    let stats = stdout_of(perf().args(["report", "--stats", "-i"]).arg(&data));
    let mut per_event = 0u64;
    let mut in_event = false;
    for line in stats.lines() {
        let t = line.trim();
        if t.ends_with("stats:") {
            in_event = t != "Aggregated stats:";
        } else if let (true, Some(n)) = (in_event, t.strip_prefix("SAMPLE events:")) {
            per_event += n
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok())
                .unwrap_or(0);
        }
    }
    let records: u64 = stats
        .lines()
        .find_map(|l| l.trim().strip_prefix("SAMPLE events:"))
        .and_then(|n| n.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    assert!(per_event > records, "both members delivered:\n{stats}");
    assert_eq!(said, per_event, "{err}\n{stats}");
}

/// perf's per-event config terms (`EVENT/TERMS/`): each event's own period,
/// frequency, call graph, stack size, depth limit, inheritance, time and
/// name over the command line's, and a leader-sampled group's member
/// taking the leader's sample type; the same attrs as perf, files perf
/// reads clean, and reports equal to perf's.
#[test]
fn event_terms_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let cases: &[&[&str]] = &[
        &["-e", "cpu-clock/period=100000/"],
        &["-e", "cpu-clock/freq=999/u", "-c", "10000"],
        &[
            "-e",
            "cpu-clock/period=200000/",
            "-e",
            "page-faults/call-graph=fp/",
        ],
        &[
            "-g",
            "-e",
            "cpu-clock/call-graph=no/,task-clock/max-stack=5/",
        ],
        &["-e", "cpu-clock/call-graph=dwarf,stack-size=4097/"],
        &[
            "--call-graph",
            "dwarf,1024",
            "-e",
            "cpu-clock/call-graph=fp/",
        ],
        &["-e", "cpu-clock/name=ticks,no-inherit,time=0/"],
        &["-e", "{cpu-clock/period=100000/,page-faults}:S"],
        &["-e", "{cpu-clock,page-faults/period=3/}:S"],
    ];
    let mut failures = Vec::new();
    for (i, args) in cases.iter().enumerate() {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        for (tool, out) in [(prec(), &a), (perf(), &b)] {
            let mut tool = tool;
            run(tool
                .args(["record", "-q", "-o"])
                .arg(out)
                .args(*args)
                .arg("--")
                .arg(hot3())
                .arg("0.2"));
        }
        if let Err(e) = same_text(&format!("{args:?}"), &evlist(&b), &evlist(&a)) {
            failures.push(e);
        }
        assert_perf_reads_clean(&a, &args.join(" "));
        for keys in [
            &["--no-children", "--sort", "comm,dso"][..],
            &["--stats"],
            // An event recorded with call-graph=no says so in its header.
            &["--no-children", "-g", "none", "--show-ref-call-graph"],
        ] {
            let theirs = report_stdio(perf(), &a, Input::File, keys);
            let ours = report_stdio(prec(), &a, Input::File, keys);
            if let Err(e) = same_text(&format!("{args:?} {keys:?}"), &theirs, &ours) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// `--buildid-mmap`: the maps carry the build-ids (the kernel's for the
/// program's, prec's for the kernel map it makes up), no BUILD_ID feature,
/// and reports that equal perf's.
#[test]
fn buildid_mmap_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("prec.data");
    let b = dir.join("perf.data");
    prec_record(&a, &["-q", "--buildid-mmap"]);
    perf_record(&b, &["-q", "--buildid-mmap"]);
    let maps = |file: &Path| -> Vec<String> {
        stdout_of(perf().args(["report", "-D", "-i"]).arg(file))
            .lines()
            .filter(|l| l.contains("PERF_RECORD_MMAP2") && l.contains(" <"))
            .filter_map(|l| {
                let (_, rest) = l.split_once(" <")?;
                let (id, rest) = rest.split_once('>')?;
                let path = rest.rsplit(' ').next()?;
                Some(format!("{path} {id}"))
            })
            .collect()
    };
    let (theirs, ours) = (maps(&b), maps(&a));
    assert!(
        ours.iter()
            .any(|m| m.starts_with("[kernel.kallsyms]_text ")),
        "no kernel map with a build-id: {ours:?}"
    );
    let hot3 = hot3();
    let hot3 = hot3.to_str().expect("UTF-8 path");
    for m in theirs
        .iter()
        .filter(|m| m.starts_with(hot3) || m.starts_with('['))
    {
        assert!(ours.contains(m), "{m} missing from prec's maps: {ours:?}");
    }
    assert_eq!(
        header_lines(&b, "# missing features"),
        header_lines(&a, "# missing features")
    );
    for keys in [&["--sort", "comm,dso,sym"][..], &["--stats"]] {
        let theirs = report_stdio(perf(), &a, Input::File, keys);
        let ours = report_stdio(prec(), &a, Input::File, keys);
        assert_eq_text(&theirs, &ours);
    }
}

/// `-u USER`: the user's processes that run when recording starts, each
/// with all its threads (perf's thread map by uid); the workload is only
/// the duration. The user is `daemon`, whom no other test runs as.
#[test]
fn uid_target_like_perf() {
    if !require_perf_record() {
        return;
    }
    let Some(runuser) = runuser_if_root() else {
        eprintln!("SKIPPED: needs root and runuser");
        return;
    };
    let daemon_uid = 1;
    let mut busy = std::process::Command::new(runuser)
        .args([
            "-u",
            "daemon",
            "--",
            "timeout",
            "8",
            "sh",
            "-c",
            "while :; do :; done",
        ])
        .spawn()
        .expect("runuser");
    std::thread::sleep(std::time::Duration::from_millis(300));
    let daemons = |pids: &mut Vec<String>| {
        use std::os::unix::fs::MetadataExt;
        for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
            if e.metadata().is_ok_and(|m| m.uid() == daemon_uid) {
                pids.push(e.file_name().to_string_lossy().into_owned());
            }
        }
    };
    let mut owned = Vec::new();
    daemons(&mut owned);
    if owned.is_empty() {
        let _ = busy.kill();
        let _ = busy.wait();
        eprintln!("SKIPPED: no user daemon to run a process as");
        return;
    }
    let dir = tempdir();
    let mut files = Vec::new();
    for (tool, mut cmd) in [("prec", prec()), ("perf", perf())] {
        let file = dir.join(format!("{tool}.data"));
        let o = run(cmd
            .args(["record", "-q", "-u", "daemon", "-o"])
            .arg(&file)
            .args(["--", "sleep", "0.5"]));
        assert!(o.status.success(), "{tool}: {}", stderr(&o));
        files.push(file);
    }
    // perf's target__validate words: the user wins over CPUs.
    let cases: &[&[&str]] = &[&["-u", "daemon", "-a"], &["-u", "daemon", "-C", "0"]];
    for args in cases {
        let mut warnings = Vec::new();
        for (tool, mut cmd) in [("prec", prec()), ("perf", perf())] {
            let file = dir.join(format!("{tool}-warn.data"));
            let o = run(cmd
                .args(["record", "-o"])
                .arg(&file)
                .args(*args)
                .args(["--", "true"]));
            warnings.push(stderr(&o).lines().take(2).collect::<Vec<_>>().join("\n"));
        }
        assert_eq!(warnings[0], warnings[1], "{args:?}");
    }
    daemons(&mut owned);
    let _ = busy.kill();
    let _ = busy.wait();
    assert_eq_text(&evlist(&files[1]), &evlist(&files[0]));
    assert_perf_reads_clean(&files[0], "-u");
    for file in &files {
        let report = report_stdio(perf(), file, Input::File, &["--sort", "pid,comm"]);
        let rows: Vec<(&str, &str)> = report
            .lines()
            .filter(|l| l.trim_start().starts_with(|c: char| c.is_ascii_digit()))
            .filter_map(|l| {
                let mut cols = l.split_whitespace().skip(1);
                let (pid, _) = cols.next()?.split_once(':')?;
                Some((pid, cols.next()?))
            })
            .collect();
        assert!(
            rows.iter().any(|&(_, comm)| comm == "sh"),
            "{}: no busy loop in\n{report}",
            file.display()
        );
        for (pid, comm) in rows {
            assert!(
                owned.iter().any(|p| p == pid),
                "{}: {pid}:{comm} is not daemon's process:\n{report}",
                file.display()
            );
        }
    }
    // perf 6.1 prints its error and exits 0; prec fails.
    for user in ["prec-no-such-user", "99999"] {
        let ours = run_fail(prec().args(["record", "-q", "-u", user, "--", "true"]));
        let theirs = perf()
            .args(["record", "-q", "-u", user, "--", "true"])
            .output()
            .expect("perf");
        let last = |o: &Output| {
            let text = stderr(o);
            let line = text.lines().last().unwrap_or("").to_string();
            line.trim_start_matches("prec: ").to_string()
        };
        assert_eq!(last(&ours), last(&theirs), "-u {user}");
    }
}

/// What a recording says on stderr about enabling and control, without
/// the lines that differ by design (prec's fallback note, the summary,
/// perf's "Terminated").
fn control_messages(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .filter(|l| !l.starts_with("Note:") && !l.starts_with("[ p") && !l.is_empty())
        .filter(|l| *l != "Terminated")
        .map(str::to_string)
        .collect()
}

/// The exit status as a shell reports it.
fn shell_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// Number of samples `perf report --stats` counts in `file`.
fn sample_count(file: &Path) -> u64 {
    let o = run(perf().args(["report", "--stats", "-i"]).arg(file));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.trim_start().starts_with("SAMPLE events:"))
        .and_then(|l| l.split_whitespace().nth(2)?.parse().ok())
        .unwrap_or(0)
}

/// `-D -1 --control fifo:CTL,ACK`: events start disabled; perf's commands
/// enable them, list them, fail on an unknown event, and stop the
/// recording (the workload gets SIGTERM), each acked with `ack\n\0`. And
/// `-D A-B,C-D`: events count in windows, then the recording stops.
#[test]
fn control_and_delay_like_perf() {
    use std::io::{Read, Write};
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut outcomes = Vec::new();
    for (tool, mut cmd) in [("perf", perf()), ("prec", prec())] {
        let ctl = dir.join(format!("{tool}.ctl"));
        let ack = dir.join(format!("{tool}.ack"));
        for fifo in [&ctl, &ack] {
            run(std::process::Command::new("mkfifo").arg(fifo));
        }
        let open = |path: &Path| {
            std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(path)
                .expect("open fifo")
        };
        let (mut ctl_end, ack_end) = (open(&ctl), open(&ack));
        let data = dir.join(format!("{tool}-control.data"));
        let control = format!("fifo:{},{}", ctl.display(), ack.display());
        let child = cmd
            .args(["record", "-D", "-1", "--control", &control, "-o"])
            .arg(&data)
            .arg("--")
            .arg(hot3())
            .arg("10")
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        // The ack, read on a thread so that a silent recorder fails the
        // test instead of hanging it.
        let (acks_tx, acks) = std::sync::mpsc::channel();
        let mut ack_reader = ack_end;
        std::thread::spawn(move || {
            let mut answer = [0u8; 5];
            while ack_reader.read_exact(&mut answer).is_ok() {
                if acks_tx.send(answer).is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(std::time::Duration::from_millis(300));
        for command in [
            "enable",
            "evlist -F",
            "disable no-such-event",
            "ping",
            "stop",
        ] {
            if command == "stop" {
                std::thread::sleep(std::time::Duration::from_millis(400));
            }
            ctl_end
                .write_all(format!("{command}\n").as_bytes())
                .expect("write command");
            let answer = acks.recv_timeout(std::time::Duration::from_secs(10));
            assert_eq!(answer.as_ref().ok(), Some(b"ack\n\0"), "{tool}: {command}");
        }
        let o = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        outcomes.push((shell_code(o.status), control_messages(&stderr), data));
    }
    assert_eq!(outcomes[0].0, outcomes[1].0, "exit status");
    assert_eq!(outcomes[0].1, outcomes[1].1, "messages");
    assert!(sample_count(&outcomes[1].2) > 0, "no samples while enabled");
    assert_perf_reads_clean(&outcomes[1].2, "--control");
    assert_eq_text(&evlist(&outcomes[0].2), &evlist(&outcomes[1].2));

    // -D -1 alone: nothing is ever enabled; windows end the recording.
    for delay in ["-1", "10-20,40-50"] {
        let mut outcomes = Vec::new();
        for (tool, mut cmd) in [("perf", perf()), ("prec", prec())] {
            let data = dir.join(format!("{tool}-delay.data"));
            let started = std::time::Instant::now();
            let o = cmd
                .args(["record", "-D", delay, "-o"])
                .arg(&data)
                .args(["--", "sleep", if delay == "-1" { "0.3" } else { "20" }])
                .output()
                .expect("record");
            assert!(
                started.elapsed().as_secs() < 10,
                "{tool} -D {delay} did not stop"
            );
            let messages = control_messages(&String::from_utf8_lossy(&o.stderr));
            outcomes.push((shell_code(o.status), messages, sample_count(&data)));
        }
        assert_eq!(outcomes[0], outcomes[1], "-D {delay}");
    }
}

/// `--switch-output-event EV`: perf's side-band event on every CPU; each
/// occurrence switches the file as SIGUSR2 does, and the last file gets
/// its timestamp too (the signal mode it implies).
#[test]
fn switch_output_event_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let script = "/bin/true; sleep 0.3; /bin/true; sleep 0.3; /bin/true";
    let mut counts = Vec::new();
    for (tool, mut cmd) in [("perf", perf()), ("prec", prec())] {
        let base = dir.join(format!("{tool}-soe.data"));
        let o = run(cmd
            .args([
                "record",
                "--switch-output-event",
                "sched:sched_process_exec",
                "-o",
            ])
            .arg(&base)
            .args(["--", "sh", "-c", script]));
        let text = stderr(&o);
        assert!(text.contains(" record: Dump "), "{tool}: {text}");
        assert!(
            !base.exists(),
            "{tool} left {} without a timestamp",
            base.display()
        );
        let prefix = format!("{tool}-soe.data.");
        let mut files: Vec<PathBuf> = std::fs::read_dir(&*dir)
            .expect("read dir")
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
            })
            .collect();
        files.sort();
        if tool == "prec" {
            for f in &files {
                assert_perf_reads_clean(f, "--switch-output-event");
            }
            let theirs = std::fs::read_dir(&*dir)
                .expect("read dir")
                .flatten()
                .map(|e| e.path())
                .find(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("perf-soe.data."))
                })
                .expect("a perf file");
            assert_eq_text(&evlist(&theirs), &evlist(&files[0]));
        }
        counts.push(files.len());
    }
    // Four execs (sh and three /bin/true) spaced out: a file after each,
    // and the last; perf merges switches whose signals meet.
    assert!(
        counts[0] >= 3 && counts[1] >= 3,
        "files: perf {}, prec {}",
        counts[0],
        counts[1]
    );
}

/// `-a` makes up the processes and threads of /proc as perf does: each
/// with a FORK from its parent (a thread from its main thread) before its
/// COMM, so that `perf report --tasks` shows the same tree. Compared on
/// the tasks that live through both recordings (pids under 1000: the
/// kernel's threads and early daemons).
#[test]
fn system_wide_task_tree_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let tree = |tool: std::process::Command, name: &str| -> std::collections::BTreeSet<[i64; 3]> {
        let file = dir.join(name);
        record(tool, &file, &["-a"], &["true"]);
        let out = run(perf().args(["report", "--tasks", "-i"]).arg(&file));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| {
                let (ids, _) = l.split_once('|')?;
                let v: Vec<i64> = ids
                    .split_whitespace()
                    .filter_map(|x| x.parse().ok())
                    .collect();
                (v.len() == 3 && v[0] > 0 && v[0] < 1000).then(|| [v[0], v[1], v[2]])
            })
            .collect()
    };
    let theirs = tree(perf(), "perf.data");
    let ours = tree(prec(), "prec.data");
    assert!(theirs.len() > 5, "perf's tree: {theirs:?}");
    assert_eq!(theirs, ours, "(pid, tid, ppid) of the long-lived tasks");
}

/// `-p PID -- CMD`: when the target exits first, perf ends the command
/// that only timed the recording (SIGTERM) and exits as it did, 143; so
/// does prec.
#[test]
fn target_exit_ends_the_timing_command_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for (tool, name) in [(perf(), "perf.data"), (prec(), "prec.data")] {
        let mut target = std::process::Command::new("sleep")
            .arg("0.3")
            .spawn()
            .expect("spawn sleep");
        let pid = target.id().to_string();
        let started = std::time::Instant::now();
        let mut tool = tool;
        let o = tool
            .args(["record", "-q", "-p", &pid, "-o"])
            .arg(dir.join(name))
            .args(["--", "sleep", "5"])
            .output()
            .expect("run record");
        let _ = target.wait();
        let took = started.elapsed();
        let status = o.status.code().unwrap_or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            128 + o.status.signal().unwrap_or(0)
        });
        assert_eq!(status, 143, "{name}: {:?} {}", o.status, stderr(&o));
        assert!(
            took < std::time::Duration::from_secs(3),
            "{name} took {took:?}"
        );
    }
}
