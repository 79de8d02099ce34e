//! `prec record` end to end: real perf_event_open, with Linux perf 6.1 as
//! the judge of every file prec writes.
//!
//! Each test records with prec (and, for the comparisons, with perf), then
//! reads the result with `perf report` / `perf script` / `perf evlist`.

mod common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Mutex;
use std::thread::sleep;
use std::time::{Duration, Instant};

use common::*;

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// `prec record -q -o OUT ARGS...` (must succeed).
fn prec_record(out: &Path, args: &[&str]) -> Output {
    let mut c = prec();
    c.args(["record", "-o"]).arg(out).args(args);
    run(&mut c)
}

fn perf_record(out: &Path, args: &[&str]) -> Output {
    let mut c = perf();
    c.args(["record", "-q", "-o"]).arg(out).args(args);
    run(&mut c)
}

/// Lines of perf's stderr that are not about the file's contents:
/// none are expected for prec's files, so nothing is filtered except empty
/// lines.
fn significant_stderr(s: &str) -> Vec<String> {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// `perf report --stdio` and `perf script` read `file` without a word on
/// stderr; returns the report text.
fn assert_perf_reads_clean(file: &Path) -> String {
    let rep = run(perf()
        .args(["report", "--stdio", "--sort", "comm,dso,sym", "-i"])
        .arg(file));
    let e = significant_stderr(&stderr(&rep));
    assert!(
        e.is_empty(),
        "perf report stderr for {}: {e:#?}",
        file.display()
    );
    let scr = run(perf().args(["script", "-i"]).arg(file));
    let e = significant_stderr(&stderr(&scr));
    assert!(
        e.is_empty(),
        "perf script stderr for {}: {e:#?}",
        file.display()
    );
    assert!(
        !stdout(&scr).trim().is_empty(),
        "perf script printed no samples"
    );
    stdout(&rep)
}

/// Rows of `perf report --stdio --sort comm,dso,sym`: key → percent.
fn report_rows(text: &str) -> BTreeMap<String, f64> {
    let mut rows = BTreeMap::new();
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with('#') || t.is_empty() {
            continue;
        }
        let Some((pct, rest)) = t.split_once('%') else {
            continue;
        };
        let Ok(p) = pct.trim().parse::<f64>() else {
            continue;
        };
        let key = rest.split_whitespace().collect::<Vec<_>>().join(" ");
        *rows.entry(key).or_insert(0.0) += p;
    }
    rows
}

fn report(file: &Path) -> BTreeMap<String, f64> {
    report_rows(&stdout_of(
        perf()
            .args(["report", "--stdio", "--sort", "comm,dso,sym", "-i"])
            .arg(file),
    ))
}

/// Rows at ≥ 3 % in either report appear in both, each within 5 points as
/// a share of its command's samples, and every such command has at least
/// 2 % of the samples in both; `Err` describes the first row that does not.
/// How a parent and its child split two CPUs depends on what else runs and
/// on hypervisor steal, for perf as for prec (seen on a loaded VM: a 38/62
/// split in one run, 10/90 in the next, for either recorder), so the split
/// between commands is only checked for presence.
fn similar(a: &BTreeMap<String, f64>, b: &BTreeMap<String, f64>, what: &str) -> Result<(), String> {
    let keys: Vec<&String> = a
        .iter()
        .chain(b.iter())
        .filter(|(_, &p)| p >= 3.0)
        .map(|(k, _)| k)
        .collect();
    if keys.is_empty() {
        return Err(format!("{what}: no rows above 3%: {a:?} / {b:?}"));
    }
    let comm = |k: &str| k.split_whitespace().next().unwrap_or("").to_string();
    let comm_total = |rows: &BTreeMap<String, f64>, c: &str| -> f64 {
        rows.iter()
            .filter(|(k, _)| comm(k) == c)
            .map(|(_, p)| p)
            .sum()
    };
    let within = |rows: &BTreeMap<String, f64>, k: &str| -> f64 {
        let total = comm_total(rows, &comm(k));
        let p = rows.get(k).copied().unwrap_or(0.0);
        if total > 0.0 {
            100.0 * p / total
        } else {
            0.0
        }
    };
    for k in keys {
        let c = comm(k);
        let (ta, tb) = (comm_total(a, &c), comm_total(b, &c));
        let (pa, pb) = (within(a, k), within(b, k));
        if ta < 2.0 || tb < 2.0 || (pa - pb).abs() > 5.0 {
            return Err(format!(
                "{what}: row '{k}' prec {pa:.2}% of {c} ({ta:.2}%) vs perf {pb:.2}% of {c} \
                 ({tb:.2}%)\nprec: {a:#?}\nperf: {b:#?}"
            ));
        }
    }
    Ok(())
}

/// The comparisons run one at a time: on a 2-CPU machine, concurrent
/// CPU-bound tests skew how the workloads' threads are scheduled.
static SERIAL: Mutex<()> = Mutex::new(());

fn compare_with_perf(prog: &str, args: &[&str]) {
    if !require_perf_record() {
        return;
    }
    let _guard = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempdir();
    let bin = fixture_bin(prog);
    let bin = bin.to_str().unwrap();
    let mut cmd = vec!["--", bin];
    cmd.extend_from_slice(args);
    let a = dir.join("prec.data");
    let b = dir.join("perf.data");
    // Sampling is statistical, and on a busy 2-CPU VM how three threads
    // share two CPUs (and where hypervisor steal lands) varies from run to
    // run for both recorders alike: up to four tries.
    let mut last = String::new();
    for _attempt in 0..4 {
        let o = prec_record(&a, &cmd);
        assert!(
            stderr(&o).contains("[ prec record: Captured and wrote"),
            "{}",
            stderr(&o)
        );
        perf_record(&b, &cmd);
        assert_perf_reads_clean(&a);
        match similar(&report(&a), &report(&b), prog) {
            Ok(()) => return,
            Err(e) => last = e,
        }
    }
    panic!("{last}");
}

#[test]
fn hot3_matches_perf() {
    compare_with_perf("hot3", &["1"]);
}

#[test]
fn uselib_matches_perf() {
    compare_with_perf("uselib", &[]);
}

#[test]
fn dlopen_matches_perf() {
    compare_with_perf("dlopen", &[]);
}

#[test]
fn threads_matches_perf() {
    // One worker at a time: concurrent workers get uneven CPU time on a
    // busy VM, for perf and prec alike.
    compare_with_perf("threads", &["0.3", "seq"]);
}

#[test]
fn forkexec_matches_perf() {
    compare_with_perf("forkexec", &[]);
}

#[test]
fn rust_hot_matches_perf() {
    compare_with_perf("rust_hot", &[]);
}

/// `perf evlist -v` lines (attrs as perf prints them) of a file.
fn evlist(file: &Path) -> String {
    stdout_of(perf().args(["evlist", "-v", "-i"]).arg(file))
}

/// prec's attrs are perf's, bit for bit as `perf evlist -v` shows them.
#[test]
fn attrs_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let cases: &[&[&str]] = &[
        &[],
        &["-e", "cpu-clock,page-faults"],
        &["-c", "100000"],
        &["-F", "999"],
        &["-g"],
        &["--call-graph", "dwarf"],
        &["--call-graph", "dwarf,4096"],
        &["-i"],
        &["-e", "task-clock:u"],
        // Above perf_event_max_sample_rate: both cap it.
        &["-F", "1000000"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let a = dir.join(format!("prec{i}.data"));
        let b = dir.join(format!("perf{i}.data"));
        let mut full: Vec<&str> = args.to_vec();
        full.extend(["--", "true"]);
        let said = prec_record(&a, &full);
        perf_record(&b, &full);
        assert_eq!(evlist(&a), evlist(&b), "attrs differ for {args:?}");
        if args.contains(&"1000000") {
            // perf's warning, in its words and indent (perf_record
            // passes -q, so ask perf without it).
            let perf_said = run(perf()
                .args(["record", "-o"])
                .arg(dir.join("loud.data"))
                .args(&full));
            let warning = |o: &Output| -> Vec<String> {
                stderr(o)
                    .lines()
                    .skip_while(|l| !l.starts_with("warning: Maximum frequency"))
                    .take(4)
                    .map(str::to_string)
                    .collect()
            };
            assert_eq!(warning(&said).len(), 4, "{}", stderr(&said));
            assert_eq!(warning(&said), warning(&perf_said));
        }
    }
    // Pipe mode adds ID.
    let out = Command::new(prec_bin())
        .args(["record", "-q", "-o", "-", "--", "true"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let b = Command::new(perf_path())
        .args(["record", "-q", "-o", "-", "--", "true"])
        .output()
        .unwrap();
    let ev = |data: Vec<u8>| {
        let p = dir.join("pipe.data");
        fs::write(&p, data).unwrap();
        let mut c = perf();
        c.args(["evlist", "-v", "-i", "-"])
            .stdin(fs::File::open(&p).unwrap());
        String::from_utf8_lossy(&c.output().unwrap().stdout).into_owned()
    };
    assert_eq!(ev(out.stdout), ev(b.stdout));
}

#[test]
fn system_wide_attrs_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("prec.data");
    let b = dir.join("perf.data");
    prec_record(&a, &["-a", "--", "sleep", "0.2"]);
    perf_record(&b, &["-a", "--", "sleep", "0.2"]);
    assert_eq!(evlist(&a), evlist(&b));
    let rep = assert_perf_reads_clean(&a);
    assert!(rep.contains("sleep") || rep.contains("swapper"), "{rep}");
}

#[test]
fn pid_mode_records_running_process() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut child = Command::new(fixture_bin("hot3"))
        .arg("20")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(100));
    let a = dir.join("p.data");
    let pid = child.id().to_string();
    let o = prec_record(&a, &["-p", &pid, "--", "sleep", "0.5"]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(stderr(&o).contains("samples"), "{}", stderr(&o));
    let rep = assert_perf_reads_clean(&a);
    let rows = report_rows(&rep);
    // Synthesized COMM and MMAP2 let perf name the process and its symbols.
    assert!(
        rows.keys().any(|k| k.starts_with("hot3 hot3 [.] hot_")),
        "{rows:#?}"
    );
}

#[test]
fn pipe_mode_is_read_by_perf_report() {
    if !require_perf_record() {
        return;
    }
    let hot3 = fixture_bin("hot3");
    let mut rec = Command::new(prec_bin())
        .args(["record", "-q", "-o", "-", "--"])
        .arg(&hot3)
        .arg("0.5")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let rep = perf()
        .args(["report", "--stdio", "--sort", "comm,dso,sym", "-i", "-"])
        .stdin(rec.stdout.take().unwrap())
        .output()
        .unwrap();
    assert!(rec.wait().unwrap().success());
    assert!(rep.status.success(), "{}", stderr(&rep));
    let e = significant_stderr(&stderr(&rep));
    assert!(e.is_empty(), "{e:#?}");
    let rows = report_rows(&stdout(&rep));
    assert!(rows.keys().any(|k| k.contains("hot_a")), "{rows:#?}");
}

#[test]
fn several_events_period_and_frequency() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let hot3 = fixture_bin("hot3");
    let hot3 = hot3.to_str().unwrap();
    for (i, args) in [
        vec!["-e", "cpu-clock,page-faults"],
        vec!["-c", "100000"],
        vec!["-F", "999"],
        vec!["-g"],
    ]
    .into_iter()
    .enumerate()
    {
        let a = dir.join(format!("e{i}.data"));
        let mut full = args.clone();
        full.extend(["--", hot3, "0.3"]);
        prec_record(&a, &full);
        let rep = assert_perf_reads_clean(&a);
        assert!(rep.contains("hot_a"), "{args:?}: {rep}");
        // prec reads its own output too.
        run(prec().args(["report", "--stats", "-i"]).arg(&a));
    }
    let ev = evlist(&dir.join("e0.data"));
    assert!(
        ev.contains("cpu-clock:") && ev.contains("page-faults:"),
        "{ev}"
    );
}

#[test]
fn file_mode_old_rename_and_exit_code() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("perf.data");
    fs::write(&a, b"previous").unwrap();
    let o = prec()
        .args(["record", "-q", "-o"])
        .arg(&a)
        .args(["--", "sh", "-c", "exit 3"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert_eq!(fs::read(dir.join("perf.data.old")).unwrap(), b"previous");
    let mode = fs::metadata(&a).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    run(perf().args(["report", "--stdio", "-i"]).arg(&a));
    // A workload killed by a signal: 128 + signal.
    let o = prec()
        .args(["record", "-q", "-o"])
        .arg(&a)
        .args(["--", "sh", "-c", "kill -TERM $$"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(128 + 15));
}

/// `record -v`'s settings lines (perf's record__mmap_read setup:
/// `nr_cblocks`, `affinity`, `mmap flush`, `comp level`) and the first ring
/// buffer's `mmap size`, in order.
fn verbose_settings(stderr: &str) -> Vec<String> {
    let mut lines: Vec<String> = stderr
        .lines()
        .filter(|l| {
            ["nr_cblocks:", "affinity:", "mmap flush:", "comp level:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .map(str::to_string)
        .collect();
    lines.extend(
        stderr
            .lines()
            .find(|l| l.starts_with("mmap size "))
            .map(str::to_string),
    );
    lines
}

#[test]
fn verbose_prints_perfs_settings_lines() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for options in [
        &[][..],
        &["-z", "-m", "16", "--affinity=cpu"][..],
        &["--mmap-flush", "4096", "--aio=2", "-e", "task-clock"][..],
    ] {
        let mut theirs = perf();
        theirs
            .args(["record", "-v", "-o"])
            .arg(dir.join("perf.data"))
            .args(options)
            .args(["--", "true"]);
        let mut ours = prec();
        ours.args(["record", "-v", "-o"])
            .arg(dir.join("prec.data"))
            .args(options)
            .args(["--", "true"]);
        // perf 6.1 prints these lines before it records; with -z it has
        // been seen to abort afterwards (a double free), so its status is
        // not looked at.
        let theirs = theirs.output().expect("run perf record");
        let ours = run(&mut ours);
        let expected = verbose_settings(&stderr(&theirs));
        assert_eq!(
            expected.len(),
            5,
            "perf -v {options:?}: {}",
            stderr(&theirs)
        );
        assert_eq!(verbose_settings(&stderr(&ours)), expected, "{options:?}");
    }
}

#[test]
fn record_true_is_fast() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let t = Instant::now();
    prec_record(&dir.join("t.data"), &["-q", "--", "true"]);
    let el = t.elapsed();
    assert!(
        el < Duration::from_millis(800),
        "prec record -- true took {el:?}"
    );
}

#[test]
fn build_ids_for_hit_dsos() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("b.data");
    let hot3 = fixture_bin("hot3");
    prec_record(&a, &["--", hot3.to_str().unwrap(), "0.3"]);
    let ids = stdout_of(perf().args(["buildid-list", "-i"]).arg(&a));
    assert!(ids.contains(hot3.to_str().unwrap()), "{ids}");
    assert!(ids.contains("[vdso]"), "{ids}");
    let hdr = stdout_of(perf().args(["report", "--header-only", "-I", "-i"]).arg(&a));
    for want in [
        "# hostname :",
        "# os release :",
        "# arch :",
        "# nrcpus online :",
        "# cpudesc :",
        "# total memory :",
        "# cmdline :",
        "# event : name = cpu-clock",
        "# sibling threads :",
        "# pmu mappings:",
        "# time of first sample :",
        "# memory nodes",
    ] {
        assert!(hdr.contains(want), "missing {want}:\n{hdr}");
    }
}

fn nobody_can_run(p: &Path) -> bool {
    Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(p)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn unprivileged_user_falls_back_to_user_only() {
    if !require_perf_record() {
        return;
    }
    let is_root = fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(2) == Some("0"));
    if !is_root || Command::new("runuser").arg("--help").output().is_err() {
        eprintln!("SKIPPED: needs root and runuser");
        return;
    }
    // A world-accessible directory outside /work (whose parents may be closed).
    let dir = PathBuf::from(format!("/tmp/prec-nobody-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let mut bin = prec_bin();
    if !nobody_can_run(&bin) {
        let copy = dir.join("prec");
        fs::copy(&bin, &copy).unwrap();
        fs::set_permissions(&copy, fs::Permissions::from_mode(0o755)).unwrap();
        bin = copy;
    }
    let hot3 = dir.join("hot3");
    fs::copy(fixture_bin("hot3"), &hot3).unwrap();
    fs::set_permissions(&hot3, fs::Permissions::from_mode(0o755)).unwrap();
    let out = dir.join("x.data");
    let o = run(Command::new("runuser")
        .args(["-u", "nobody", "--"])
        .arg(&bin)
        .args(["record", "-o"])
        .arg(&out)
        .arg("--")
        .arg(&hot3)
        .arg("0.3"));
    let e = stderr(&o);
    let paranoid: i32 = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    if paranoid >= 2 {
        assert_eq!(e.matches("perf_event_paranoid").count(), 1, "{e}");
        let ev = stdout_of(perf().args(["evlist", "-f", "-v", "-i"]).arg(&out));
        assert!(ev.contains("exclude_kernel: 1"), "{ev}");
    }
    let rep = stdout_of(perf().args(["report", "-f", "--stdio", "-i"]).arg(&out));
    assert!(rep.contains("hot_a"), "{rep}");
    let _ = fs::remove_dir_all(&dir);
}

/// Children of `pid` (from /proc).
fn children_of(pid: u32) -> Vec<i32> {
    let mut out = Vec::new();
    if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = fs::read_to_string(t.path().join("children")) {
                out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
            }
        }
    }
    out
}

fn kill(pid: i32, sig: &str) {
    let _ = Command::new("kill").args([sig, &pid.to_string()]).status();
}

/// Ctrl-C: the file is finished (also with --aio, whose writing thread
/// has data queued).
#[test]
fn sigint_finishes_the_file() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for extra in [&[][..], &["--aio=2"]] {
        let a = dir.join("int.data");
        let rec = prec()
            .args(["record", "-o"])
            .arg(&a)
            .args(extra)
            .arg("--")
            .arg(fixture_bin("hot3"))
            .arg("50")
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        sleep(Duration::from_millis(500));
        kill(rec.id() as i32, "-INT");
        let t = Instant::now();
        let o = rec.wait_with_output().unwrap();
        assert!(t.elapsed() < Duration::from_secs(5));
        // The workload died of SIGINT: 130.
        assert_eq!(o.status.code(), Some(130), "{extra:?}: {}", stderr(&o));
        let rep = assert_perf_reads_clean(&a);
        assert!(rep.contains("hot_"), "{extra:?}: {rep}");
        let hdr = stdout_of(perf().args(["report", "--header-only", "-i"]).arg(&a));
        assert!(hdr.contains("# cmdline :"), "{extra:?}: {hdr}");
    }
}

/// Without a command or a target, perf records system-wide until Ctrl-C;
/// `--dry-run` checks the options and records nothing.
#[test]
fn no_command_records_system_wide() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("all.data");
    let rec = prec()
        .args(["record", "-q", "-o"])
        .arg(&a)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(500));
    kill(rec.id() as i32, "-INT");
    let o = rec.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    assert_perf_reads_clean(&a);
    // perf's system-wide tracking event.
    let events = stdout_of(perf().args(["evlist", "-i"]).arg(&a));
    assert!(events.contains("dummy:HG"), "{events}");

    let dry = dir.join("dry.data");
    let o = run(prec()
        .args(["record", "--dry-run", "-o"])
        .arg(&dry)
        .arg("--")
        .arg(fixture_bin("hot3")));
    assert!(o.status.success() && !dry.exists(), "{}", stderr(&o));
    let o = run_fail(
        prec()
            .args(["record", "--dry-run", "-e", "no-such-event", "-o"])
            .arg(&dry)
            .arg("--")
            .arg(fixture_bin("hot3")),
    );
    assert!(!dry.exists(), "{}", stderr(&o));
}

/// perf's defaults without `-o` / `-i` (`check_pipe`): record writes pipe
/// mode to a piped standard output, report and script read a piped
/// standard input; nothing touches perf.data then.
#[test]
fn piped_stdout_and_stdin_are_the_default_files() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let (prec_bin, perf_bin, hot3) = (prec_bin(), perf_path(), fixture_bin("hot3"));
    let sh = |script: String| {
        let o = Command::new("sh")
            .current_dir(&*dir)
            .args(["-c", &script])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(o.status.success(), "{script}: {}", stderr(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let (prec_bin, perf_bin, hot3) = (prec_bin.display(), perf_bin.display(), hot3.display());
    // prec record into a pipe, read by perf and by prec without -i.
    for reader in [&perf_bin as &dyn std::fmt::Display, &prec_bin] {
        let text = sh(format!(
            "{prec_bin} record -q -- {hot3} 0.1 | {reader} report --stdio --sort comm"
        ));
        assert!(text.contains("hot3"), "{reader}: {text}");
    }
    // perf's pipe output read by prec script from a pipe.
    let text = sh(format!(
        "{perf_bin} record -q -- {hot3} 0.1 | {prec_bin} script -F comm"
    ));
    assert!(text.lines().any(|l| l.trim() == "hot3"), "{text}");
    assert!(!dir.join("perf.data").exists(), "perf.data written");
}

#[test]
fn sigkill_leaves_a_readable_file() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("kill.data");
    let mut rec = prec()
        .args(["record", "-q", "-o"])
        .arg(&a)
        .arg("--")
        .arg(fixture_bin("hot3"))
        .arg("50")
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(900));
    let kids = children_of(rec.id());
    kill(rec.id() as i32, "-KILL");
    let _ = rec.wait();
    for k in kids {
        kill(k, "-KILL");
    }
    let rep = run(perf().args(["report", "--stdio", "-i"]).arg(&a));
    assert!(stdout(&rep).contains("hot_"), "{}", stdout(&rep));
    run(prec().args(["report", "--stats", "-i"]).arg(&a));
    run(prec()
        .args(["inject", "-o"])
        .arg(dir.join("copy.data"))
        .arg("-i")
        .arg(&a));
}

/// A ring that overflows: at the end prec reads each fd's count of the
/// samples the kernel dropped (PERF_FORMAT_LOST) and writes it as perf's
/// LOST_SAMPLES records, so both reports count them in `# Total Lost
/// Samples`, and prec record warns with the numbers and words perf report
/// prints for the same file. A one-page ring at a 1000 ns period loses
/// samples when the recorder shares its CPU with the busy workload.
#[test]
fn lost_samples_are_counted_in_the_file() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let hot3 = fixture_bin("hot3");
    let warnings = |text: &str| -> Vec<String> {
        let lines: Vec<&str> = text.lines().collect();
        let mut out = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            if *l == "Warning:" {
                out.extend(lines.get(i + 1).map(|n| n.to_string()));
            }
        }
        out
    };
    let total_lost = |report: &str| -> String {
        report
            .lines()
            .find(|l| l.starts_with("# Total Lost Samples:"))
            .unwrap_or("")
            .to_string()
    };
    for attempt in 0..4 {
        let out = dir.join(format!("lost{attempt}.data"));
        let mut record = Command::new("taskset");
        record
            .args(["-c", "0"])
            .arg(prec_bin())
            .args(["record", "-e", "cpu-clock", "-c", "1000", "-m", "1", "-o"])
            .arg(&out)
            .arg("--")
            .arg(&hot3)
            .arg("0.05")
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        if Command::new("taskset").arg("-V").output().is_err() {
            record = prec();
            record
                .args(["record", "-e", "cpu-clock", "-c", "1000", "-m", "1", "-o"])
                .arg(&out)
                .arg("--")
                .arg(&hot3)
                .arg("0.05");
        }
        let recorded = run(&mut record);
        let stats = stdout_of(perf().args(["report", "--stats", "-i"]).arg(&out));
        if !stats.contains("LOST events") {
            continue;
        }
        assert!(stats.contains("LOST_SAMPLES events"), "{stats}");
        let perf_report = run(perf().args(["report", "--stdio", "-i"]).arg(&out));
        let prec_report = stdout_of(prec().args(["report", "--stdio", "-i"]).arg(&out));
        let lost = total_lost(&stdout(&perf_report));
        assert!(
            !lost.is_empty() && lost != "# Total Lost Samples: 0",
            "{lost}"
        );
        assert_eq!(total_lost(&prec_report), lost);
        let perf_said = warnings(&stderr(&perf_report));
        assert!(
            perf_said.iter().any(|w| w.contains(" chunks!")),
            "{perf_said:?}"
        );
        assert_eq!(warnings(&stderr(&recorded)), perf_said);
        return;
    }
    panic!("no recording lost samples: nothing was compared");
}

/// "Woken up N times" counts the kernel's wake-ups (a ring past its
/// watermark, the tasks' end), as perf's: a half-second run at the default
/// rate fills no ring halfway, so both say about once, not once per pass
/// of prec's loop.
#[test]
fn wakeups_are_the_kernels() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let woken = |o: &Output| -> u64 {
        stderr(o)
            .lines()
            .find_map(|l| {
                l.split_once("Woken up ")
                    .and_then(|(_, rest)| rest.split(' ').next())
                    .and_then(|n| n.parse().ok())
            })
            .unwrap_or_else(|| panic!("no wake-up count: {}", stderr(o)))
    };
    let hot3 = fixture_bin("hot3");
    let args = ["--", hot3.to_str().unwrap(), "0.5"];
    let mine = woken(&prec_record(&dir.join("prec.data"), &args));
    let theirs = woken(&run(perf()
        .args(["record", "-o"])
        .arg(dir.join("perf.data"))
        .args(args)));
    assert!(mine <= theirs + 1, "prec woken {mine} times, perf {theirs}");
}

#[test]
fn no_lost_samples_on_threads() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("thr.data");
    let o = prec_record(
        &a,
        &[
            "-F",
            "4000",
            "--",
            fixture_bin("threads").to_str().unwrap(),
            "0.5",
        ],
    );
    let e = stderr(&o);
    assert!(!e.contains("chunks") && !e.contains("samples lost"), "{e}");
    let stats = stdout_of(perf().args(["report", "--stats", "-i"]).arg(&a));
    assert!(!stats.contains("LOST"), "{stats}");
}

fn assert_fails_cleanly(args: &[&str], what: &str) {
    let dir = tempdir();
    fs::write(dir.join("perf.data"), b"old contents").unwrap();
    let o = prec()
        .current_dir(&*dir)
        .arg("record")
        .args(args)
        .stdin(Stdio::null())
        // Not a pipe: perf (and prec) would write to a piped stdout.
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success(), "{what}: succeeded");
    let e = stderr(&o);
    assert!(e.contains("prec") || e.contains("error"), "{what}: {e}");
    assert!(!e.contains("panicked"), "{what}: {e}");
    assert_eq!(
        fs::read(dir.join("perf.data")).unwrap(),
        b"old contents",
        "{what}: perf.data touched"
    );
    assert!(!dir.join("perf.data.old").exists(), "{what}: .old created");
    // Without a previous file nothing is created.
    fs::remove_file(dir.join("perf.data")).unwrap();
    let o = prec()
        .current_dir(&*dir)
        .arg("record")
        .args(args)
        .stdin(Stdio::null())
        // Not a pipe: perf (and prec) would write to a piped stdout.
        .stdout(Stdio::null())
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(!dir.join("perf.data").exists(), "{what}: perf.data created");
}

#[test]
fn bad_input_fails_without_touching_files() {
    if !require_perf_record() {
        return;
    }
    assert_fails_cleanly(&["--", "/nonexistent/command"], "missing command");
    assert_fails_cleanly(&["--", "no-such-command-prec"], "missing command in PATH");
    assert_fails_cleanly(&["-e", "nosuchevent", "--", "true"], "unknown event");
    assert_fails_cleanly(&["-F", "0", "--", "true"], "-F 0");
    assert_fails_cleanly(&["-F", "abc", "--", "true"], "-F abc");
    assert_fails_cleanly(&["-c", "0", "-F", "100", "--", "true"], "-c 0 -F 100");
    assert_fails_cleanly(&["-m", "x", "--", "true"], "-m x");
    assert_fails_cleanly(&["--call-graph", "lbr", "--", "true"], "lbr");
    assert_fails_cleanly(&["-p", "999999999"], "nonexistent pid");
    let o = prec()
        .args(["record", "-o", "/proc/x.data", "--", "true"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(stderr(&o).contains("/proc/x.data"), "{}", stderr(&o));
}

/// With a one-page ring at a high rate the kernel drops data: prec's
/// warning counts the same LOST records perf finds in the file.
#[test]
fn lost_chunks_are_reported_like_perf_counts_them() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let a = dir.join("lost.data");
    let o = prec_record(
        &a,
        &[
            "-m",
            "1",
            "-F",
            "20000",
            "--",
            fixture_bin("threads").to_str().unwrap(),
            "0.3",
        ],
    );
    let stats = stdout_of(perf().args(["report", "--stats", "-i"]).arg(&a));
    let lost = stats
        .lines()
        .find(|l| l.trim_start().starts_with("LOST events:"))
        .and_then(|l| l.split_whitespace().nth(2))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    let e = stderr(&o);
    if lost == 0 {
        // (The output path names this test, "..._chunks_...".)
        assert!(!e.contains(" chunks ("), "{e}");
    } else {
        assert!(e.contains(&format!("lost {lost} chunks")), "{lost}: {e}");
    }
}

/// A reader that goes away stops the recording and its workload.
#[test]
fn closed_pipe_stops_the_workload() {
    if !require_perf_record() {
        return;
    }
    let mut rec = prec()
        .args(["record", "-q", "-o", "-", "--"])
        .arg(fixture_bin("hot3"))
        .arg("50")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    sleep(Duration::from_millis(300));
    let kids = children_of(rec.id());
    assert!(!kids.is_empty(), "the workload did not start");
    drop(rec.stdout.take());
    let t = Instant::now();
    let st = rec.wait().unwrap();
    assert!(!st.success());
    assert!(t.elapsed() < Duration::from_secs(10));
    sleep(Duration::from_millis(100));
    for k in kids {
        let state = fs::read_to_string(format!("/proc/{k}/stat")).unwrap_or_default();
        // Gone, or a zombie of the already-exited prec.
        assert!(state.is_empty() || state.contains(") Z"), "{k}: {state}");
    }
}

/// `-t TID` records one thread of a running process, with perf's attrs.
#[test]
fn tid_mode_records_one_thread() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut child = Command::new(fixture_bin("threads"))
        .arg("5")
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    // Wait for the workers to exist.
    let mut tids: Vec<String> = Vec::new();
    for _ in 0..50 {
        sleep(Duration::from_millis(20));
        tids = fs::read_dir(format!("/proc/{}/task", child.id()))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|t| *t != child.id().to_string())
                    .collect()
            })
            .unwrap_or_default();
        if tids.len() >= 3 {
            break;
        }
    }
    assert!(!tids.is_empty(), "no worker threads");
    let tid = tids[0].clone();
    let a = dir.join("t.data");
    prec_record(&a, &["-t", &tid, "--", "sleep", "0.4"]);
    // perf's attrs for -t: no inherit (the thread's own children are not
    // followed).
    let b = dir.join("perf.data");
    perf_record(&b, &["-t", &tid, "--", "sleep", "0.1"]);
    assert_eq!(evlist(&a), evlist(&b), "attrs for -t");
    let _ = child.kill();
    let _ = child.wait();
    let out = stdout_of(
        perf()
            .args(["report", "--stdio", "--sort", "pid", "-i"])
            .arg(&a),
    );
    let rows = report_rows(&out);
    assert!(!rows.is_empty(), "{out}");
    for k in rows.keys() {
        // perf's "pid" key prints the thread: "TID:comm".
        assert!(
            k.starts_with(&format!("{tid}:")),
            "sample of another thread: {k}\n{out}"
        );
    }
}

/// With the recording on stdout (`-o -`), the workload's stdout is its
/// stderr, as perf's evlist__prepare_workload makes it: what the program
/// prints must not land in the middle of the data.
#[test]
fn pipe_output_keeps_the_workload_off_stdout() {
    if !require_perf_record() {
        return;
    }
    let argv = [
        "--",
        "sh",
        "-c",
        "echo MARK-$((6*7)); ls -R /usr/share/doc >/dev/null",
    ];
    for tool in [Command::new(prec_bin()), perf()] {
        let mut tool = tool;
        let out = tool
            .args(["record", "-q", "-o", "-"])
            .args(argv)
            .output()
            .expect("run record");
        assert!(out.status.success(), "{}", stderr(&out));
        let marked = |b: &[u8]| b.windows(7).any(|w| w == b"MARK-42");
        assert!(!marked(&out.stdout), "the program's output is in the data");
        assert!(marked(&out.stderr), "the program's output went to stderr");
        let dir = tempdir();
        let data = dir.join("pipe.data");
        fs::write(&data, &out.stdout).expect("write the data");
        let report = perf()
            .args(["report", "--stdio", "-i", "-"])
            .stdin(fs::File::open(&data).expect("open the data"))
            .output()
            .expect("run perf report");
        assert!(
            stderr(&report).trim().is_empty() && stdout(&report).contains("# Samples:"),
            "perf report of the pipe:\n{}{}",
            stderr(&report),
            stdout(&report)
        );
    }
}

/// perf's `-m DATA[,AUX]`: pages or a size (B/K/M/G), rounded up to a
/// power of two with perf's message; an AUX size alone keeps the default.
#[test]
fn mmap_pages_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for pages in ["8,8", "3", "1M", ",8", "100", "5K"] {
        let said = |tool: Command, out: &Path| {
            let mut tool = tool;
            let o = tool
                .args(["record", "-m", pages, "-o"])
                .arg(out)
                .args(["--", "true"])
                .output()
                .expect("run record");
            assert!(o.status.success(), "-m {pages}: {}", stderr(&o));
            stderr(&o)
                .lines()
                .filter(|l| l.starts_with("rounding"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let theirs = said(perf(), &dir.join("perf.data"));
        let ours = said(Command::new(prec_bin()), &dir.join("prec.data"));
        assert_eq!(theirs, ours, "-m {pages}");
    }
}

/// `--off-cpu` needs perf's BPF skeletons, which Debian's perf 6.1 lacks:
/// perf warns that it is ignored and records as usual; so does prec.
#[test]
fn off_cpu_is_ignored_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let (a, b) = (dir.join("prec.data"), dir.join("perf.data"));
    for (tool, out) in [(Command::new(prec_bin()), &a), (perf(), &b)] {
        let mut tool = tool;
        let o = tool
            .args(["record", "-q", "--off-cpu", "-o"])
            .arg(out)
            .args(["--", "true"])
            .output()
            .expect("run record");
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(
            stderr(&o).contains("option `off-cpu' is being ignored"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(evlist(&a), evlist(&b));
}
