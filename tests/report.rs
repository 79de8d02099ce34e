//! `prec report --stdio` against Linux perf 6.1's `perf report --stdio`:
//! the whole stdout must be identical, except perf's random `# (Tip: ...)`
//! line and trailing blank lines.
//!
//! * every quipper file (foreign perf.data, perf 3.2 .. 6.12; pipe-mode ones
//!   through `-i -`), `--sort comm,dso` and `--sort pid`;
//! * the perf 6.1 recordings in fixtures/perf, `--sort comm,dso` and `pid`;
//! * fresh recordings of fixture programs made by perf here, with symbols:
//!   `comm,dso,sym`, `dso,sym`, `sym`, `comm`, `pid`, `srcline`, with and
//!   without `-n`.
//!
//! Without perf the tests print why and pass, except under `CI=true`.

mod common;

use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

/// Quipper files whose perf output needs features prec does not have yet,
/// with the reason.
const QUIPPER_KNOWN: &[(&str, &str)] = &[
    (
        "piped.intel_pt-4.14",
        "perf fails on it; prec reports what it read",
    ),
    (
        "piped.corrupted.zero_size_sample-3.2",
        "perf stops with an error; prec reports what it read",
    ),
];

#[test]
fn quipper_files_comm_dso_and_pid_match_perf() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in quipper_files_except(QUIPPER_KNOWN) {
        let piped = file_name(&file).contains("piped");
        for args in [&["--sort", "comm,dso"][..], &["--sort", "pid"][..]] {
            compared += 1;
            if let Err(e) = compare_report(&file, Input::Stdin.if_piped(piped), args) {
                failures.push(e);
            }
        }
    }
    assert!(compared > 60, "only {compared} comparisons ran");
    assert_no_failures(&failures);
}

/// An Intel PT recording (quipper's, from another machine, so none of the
/// traced binaries is here): perf decodes the AUX area trace and reports the
/// events it makes up from it ("cbr", "psb") beside the recorded "cycles",
/// every sample with the call chain its thread stack gives. `-g none` is
/// perf's special case: no call chains, yet a Children column.
#[test]
fn intel_pt_trace_reports_perfs_synthesized_events() {
    if !require_perf() {
        return;
    }
    let file = quipper_dir().join("perf.data.intel_pt-4.14");
    let mut failures = Vec::new();
    for args in [
        &[][..],
        &["--sort", "dso,sym"],
        &["--sort", "comm", "-n"],
        &["--no-children", "--sort", "sym"],
        &["-g", "none"],
        &["-g", "caller", "--sort", "pid"],
        &["--sort", "socket,cpu"],
        // perf decodes each queue from the last PSB before a range.
        &["--time", "641.2570,641.2575"],
        &["--time", "641.2568,641.2570 641.2575,641.2579"],
    ] {
        if let Err(e) = compare_report(&file, Input::File, args) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
    let out = prec()
        .args(["report", "--stdio", "-i"])
        .arg(&file)
        .output()
        .expect("run prec");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("# Samples: 10  of event 'psb'")
            && stdout.contains("# Samples: 2  of event 'cbr'"),
        "no psb/cbr sections:\n{stdout}"
    );
    // perf warns of the walks that failed, the traced code being absent.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("instruction trace errors"),
        "no trace error warning:\n{stderr}"
    );
}

/// The same recording with bytes of its trace overwritten: bad packets,
/// stray CYC, MTC and TSC values, broken PSB+. perf's decoder recovers in
/// its own ways (resyncs, timestamps that jump and are suppressed, the
/// thread that runs when a queue's time jumps); prec must recover the same,
/// down to the number of trace errors it warns of.
#[test]
fn damaged_intel_pt_trace_decodes_like_perf() {
    if !require_perf() {
        return;
    }
    let original =
        fs::read(quipper_dir().join("perf.data.intel_pt-4.14")).expect("read quipper file");
    // The two AUXTRACE payloads (cpu 0 and cpu 3), as `perf report -D` gives
    // them: offset of the record + its 0x30-byte header, size.
    let traces = [(0x29c0 + 0x30, 0x2fd0), (0x7788 + 0x30, 0x21a00)];
    let dir = tempdir();
    let mut failures = Vec::new();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (case, bytes_per_trace) in [(0, 30), (1, 300), (2, 2000)] {
        let mut damaged = original.clone();
        for &(start, len) in &traces {
            for _ in 0..bytes_per_trace {
                let at = start + (next() % len) as usize;
                damaged[at] = next() as u8;
            }
        }
        let file = dir.join(format!("damaged-{case}.data"));
        fs::write(&file, &damaged).expect("write damaged copy");
        for args in [&[][..], &["--sort", "comm,dso"]] {
            if let Err(e) = compare_report(&file, Input::File, args) {
                failures.push(e);
            }
        }
        let warning = |tool: Command| {
            let out = { tool }
                .args(["report", "--stdio", "-i"])
                .arg(&file)
                .output()
                .expect("run report");
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            stderr
                .lines()
                .find(|l| l.ends_with("instruction trace errors"))
                .map(str::to_string)
        };
        let (theirs, ours) = (warning(perf()), warning(prec()));
        if theirs != ours {
            failures.push(format!("damaged-{case}: perf {theirs:?}, prec {ours:?}"));
        }
        // The packet dump of -D, bad packets included.
        let dump = |tool: Command| {
            let out = { tool }
                .args(["report", "-D", "-i"])
                .arg(&file)
                .output()
                .expect("run report -D");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        if let Err(e) = same_text(&format!("damaged-{case} -D"), &dump(perf()), &dump(prec())) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

/// Files with the BRANCH_STACK feature: perf reports one entry per sampled
/// branch (period 1) with the `comm,dso_from,symbol_from,symbol_to,cycles`
/// columns; `--sort` keys then describe the branch target.
const BRANCH_FILES: &[&str] = &[
    "branch-4.14",
    "branch_stack_hw_index",
    "branch_stack_spec",
    "callgraph_and_branch-3.4",
    "callgraph_and_branch-3.8",
    "raw_callgraph_branch-3.4",
];

#[test]
fn quipper_branch_stack_mode_matches_perf() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    for short in BRANCH_FILES {
        let file = quipper_files()
            .into_iter()
            .find(|f| f.file_name().and_then(OsStr::to_str) == Some(&format!("perf.data.{short}")))
            .unwrap_or_else(|| panic!("quipper file {short} missing"));
        // Not compared: sort orders naming `symbol…` (perf appends its
        // `ipc_lbr` column to them, and crashes on some) and `sym`.
        let mut runs: Vec<Vec<&str>> = vec![
            vec![],
            vec!["-n"],
            vec!["--sort", "dso_from,dso_to,cycles"],
            vec!["--sort", "cycles,comm,dso_to"],
            // A branch end's symbol is padded only by its column (not in
            // the hierarchy); a name alone is cut to a user width, whole
            // where the width is narrower than its level's "[x] ".
            vec!["--hierarchy"],
            vec!["-w", "10,10,10,25,3"],
        ];
        if *short == "branch_stack_spec" {
            // A branch entry's source line is that of the target's raw
            // address (perf 6.1 dies of SIGPIPE on the others' srclines).
            runs.push(vec!["--sort", "srcline,sym"]);
            runs.push(vec!["--sort", "dso,srcfile", "-n"]);
        }
        if !short.ends_with("-3.4") {
            // perf 3.4's files have no vdso build-id: perf shows a copy of
            // this machine's vdso under a random name with -v.
            runs.push(vec!["-v"]);
            runs.push(vec!["-v", "--hierarchy", "-w", "10,10,10,2,3"]);
        }
        if !short.contains("callgraph") {
            // Without branch mode the call-graph files print call graphs.
            runs.push(vec!["--no-branch-stack", "--sort", "comm,dso"]);
            runs.push(vec!["--no-branch-stack"]);
        }
        for args in runs {
            if let Err(e) = compare_report(&file, Input::File, &args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn quipper_known_differences_still_report() {
    // The files prec cannot match yet must still produce a report.
    for file in quipper_files() {
        let name = file.file_name().and_then(OsStr::to_str).unwrap_or("");
        let piped = name.contains("piped");
        let out = report_stdio(
            prec(),
            &file,
            Input::Stdin.if_piped(piped),
            &["--sort", "comm,dso"],
        );
        assert!(
            out.starts_with("# To display the perf.data header info"),
            "{name}: {out}"
        );
    }
}

#[test]
fn own_fixtures_comm_dso_and_pid_match_perf() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    for file in own_fixtures() {
        let name = file.file_name().and_then(OsStr::to_str).unwrap_or("");
        if name.starts_with("callgraph") {
            eprintln!("not compared: {name}: call-graph output");
            continue;
        }
        let piped = name.contains("pipe");
        for args in [&["--sort", "comm,dso"][..], &["--sort", "pid"][..]] {
            if let Err(e) = compare_report(&file, Input::Stdin.if_piped(piped), args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// Records `program args` with perf into `dir/name.data`.
fn record(dir: &Path, name: &str, program: &Path, args: &[&str]) -> std::path::PathBuf {
    perf_record_program(dir.join(format!("{name}.data")), &[], program, args)
}

const KEYS: &[&str] = &["comm,dso,sym", "dso,sym", "sym", "comm", "pid", "srcline"];

/// `srcline` is compared on the program's own DSO: for glibc's inlined
/// code perf 6.1 (libbfd) pairs the caller's file with the inlined line,
/// which the symbolizer does not reproduce yet.
fn compare_keys(data: &Path, dso: &str, failures: &mut Vec<String>) {
    for key in KEYS {
        for n in [false, true] {
            let mut args = vec!["--sort", key];
            if *key == "srcline" {
                args.extend(["--dsos", dso]);
            }
            if n {
                args.push("-n");
            }
            if let Err(e) = compare_report(data, Input::File, &args) {
                failures.push(e);
            }
        }
    }
    if let Err(e) = compare_report(data, Input::File, &[]) {
        failures.push(e);
    }
}

#[test]
fn fresh_recording_hot3_matches_perf_for_every_key() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record(&dir, "hot3", &fixture_bin("hot3"), &["0.3"]);
    let mut failures = Vec::new();
    compare_keys(&data, "hot3", &mut failures);
    assert_no_failures(&failures);
}

#[test]
fn fresh_recordings_of_other_programs_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let bins = fixture_bins();
    let hot3 = bins.join("hot3");
    let hot3_path = hot3.to_string_lossy().into_owned();
    let programs: Vec<(&str, Vec<&str>)> = vec![
        ("uselib", vec!["0.2"]),
        ("threads", vec!["0.2"]),
        ("forkexec", vec![hot3_path.as_str(), "0.2"]),
        ("rust_hot", vec!["0.2"]),
        ("hot3-stripped", vec!["0.2"]),
        ("hot3-debuglink", vec!["0.2"]),
    ];
    let mut failures = Vec::new();
    for (name, args) in programs {
        let data = record(&dir, name, &bins.join(name), &args);
        for key in ["comm,dso,sym", "pid", "comm,dso"] {
            if name == "forkexec" && key == "comm,dso,sym" {
                // also exercises the one-comm column elision
                if let Err(e) = compare_report(&data, Input::File, &["--comms", "hot3"]) {
                    failures.push(e);
                }
            }
            if let Err(e) = compare_report(&data, Input::File, &["--sort", key, "-n"]) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// `--sort sym` on call-graph files: perf compares two unresolved entries
/// by address and others by DSO and symbol, a non-transitive order, so its
/// entry tree splits some entries (each keeping the call graph of its own
/// samples) and merges others. Each sample's own DSO steers its walk:
/// unresolved addresses that are equal in different libraries (the
/// page-fault file) stay apart where entries of libraries named between
/// them lie on the way. An inline frame's symbol compares by name, in the
/// opposite sense to addresses (the DWARF file). A `dso` key before `sym`
/// changes nothing within a DSO, so `dso,sym` splits alike. A split
/// entry's thread is that of the sample that made it (the gcc file: the
/// children order's callers-above-callees rule holds within one thread),
/// and its level too (the python file: the root frame at 0 has no map and
/// takes the level of the frame before it, `[k]` after a kernel sample).
#[test]
fn sym_without_dso_splits_like_perf_with_call_graphs() {
    if !require_perf() {
        return;
    }
    let runs: &[&[&str]] = &[
        &["--sort", "sym"],
        &["--sort", "sym", "-n", "-g", "caller"],
        &["--no-children", "--sort", "sym"],
        &["--sort", "pid,sym"],
        &["--sort", "sym", "-g", "none"],
        &["--sort", "dso,sym"],
        &["--no-children", "--sort", "dso,sym", "-n"],
        &["-F", "overhead,dso,sym"],
    ];
    let mut failures = Vec::new();
    for name in [
        "git-log-g.data",
        "tar-page-faults-g.data",
        "tar-bzip2-dwarf.data",
        "gcc-c-g.data",
        "python-g.data",
    ] {
        let file = own_fixture(name);
        for args in runs {
            if let Err(e) = compare_report(&file, Input::File, args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// The same split under a key that collapses (`comm`): perf merges the
/// pieces again in its input tree's order, and the merged entry keeps the
/// first piece's level, which for an unresolved frame without a map (the
/// root at 0, a garbage address) is the level of the frame before it in
/// whichever sample made that piece: `[k]` where the first sample that hit
/// the entry said `[.]`, and the rows of equal overhead order by it.
#[test]
fn collapsed_split_entries_keep_the_first_pieces_level() {
    if !require_perf() {
        return;
    }
    let runs: &[&[&str]] = &[
        &["--sort", "comm,sym"],
        &["--sort", "comm,sym", "-n", "-g", "caller"],
        &["--sort", "sym,comm", "-g", "none"],
    ];
    let mut failures = Vec::new();
    for name in ["git-log-g-collapse.data", "git-log-g.data"] {
        let file = own_fixture(name);
        for args in runs {
            if let Err(e) = compare_report(&file, Input::File, args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// `--symfs DIR`: binaries under DIR only, perf's build-id cache at
/// DIR/.debug, and (perf 6.1's dso__load_kernel_sym) no local kallsyms,
/// only what `--kallsyms` names.
#[test]
fn symfs_matches_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let program = fixture_bin("hot3");
    let data = record(&dir, "hot3", &program, &["0.3"]);
    let empty = dir.join("empty");
    let root = dir.join("root");
    let copy = root.join(program.strip_prefix("/").expect("absolute fixture path"));
    std::fs::create_dir_all(&empty).expect("mkdir");
    std::fs::create_dir_all(copy.parent().expect("parent")).expect("mkdir");
    std::fs::copy(&program, &copy).expect("copy the program under the symfs");
    let (empty, root) = (path_str(&empty), path_str(&root));
    let runs: &[&[&str]] = &[
        &["--symfs", empty, "--sort", "dso,sym"],
        &["--symfs", empty, "--sort", "sym", "-n"],
        &["--symfs", root, "--sort", "comm,dso,sym"],
        &[
            "--symfs",
            root,
            "--sort",
            "dso,sym",
            "--kallsyms",
            "/proc/kallsyms",
        ],
        // A symfs that resolves to / is none at all (perf's symbol__init):
        // kernel symbols come from this machine's kallsyms.
        &["--symfs", "/", "--sort", "dso,sym"],
        &["--symfs", "/tmp/..", "--sort", "comm,sym"],
    ];
    let mut failures = Vec::new();
    for args in runs {
        if let Err(e) = compare_report(&data, Input::File, args) {
            failures.push(e);
        }
    }
    let rows = report_stdio(
        prec(),
        &data,
        Input::File,
        &["--symfs", root, "--sort", "sym"],
    );
    assert!(
        rows.contains("hot_a"),
        "the program under the symfs:\n{rows}"
    );
    assert_no_failures(&failures);
}

/// `--symfs DIR` moves perf's build-id cache to `DIR/.debug` even where
/// DIR is `/` and so no symfs (perf's symbol__config_symfs runs before
/// symbol__init drops it): the copies perf record kept in `~/.debug` of
/// `[vdso]` and of a program rebuilt since are then not found.
#[test]
fn symfs_moves_the_build_id_cache() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    // [vdso]: clock_gettime in a loop.
    let vdso = record(&dir, "oddframes", &fixture_bin("oddframes"), &["100"]);
    // A program replaced by another at its path after the recording.
    let program = dir.join("prog");
    std::fs::copy(fixture_bin("hot3"), &program).expect("copy hot3");
    let rebuilt = record(&dir, "prog", &program, &["0.3"]);
    std::fs::copy(fixture_bin("threads"), &program).expect("replace the program");
    let mut failures = Vec::new();
    for data in [&vdso, &rebuilt] {
        for args in [
            &["--sort", "comm,dso,sym"][..],
            &["--symfs", "/", "--sort", "comm,dso,sym"],
            &["--symfs", "/tmp/..", "--sort", "dso,sym", "-n"],
        ] {
            if let Err(e) = compare_report(data, Input::File, args) {
                failures.push(e);
            }
        }
        if let Err(e) = compare_script(data, Input::File, &["--symfs", "/", "-F", "ip,sym,dso"]) {
            failures.push(e);
        }
    }
    let unresolved = report_stdio(prec(), &vdso, Input::File, &["--symfs", "/"]);
    assert!(
        unresolved.contains("[vdso]") && !unresolved.contains("__vdso_clock_gettime"),
        "{unresolved}"
    );
    assert_no_failures(&failures);
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

#[test]
fn pipe_input_matches_file_input() {
    let file = own_fixture("hot3-pipe.data");
    let via_stdin = report_stdio(prec(), &file, Input::Stdin, &["--sort", "comm,dso"]);
    assert!(via_stdin.contains("# Samples:"), "{via_stdin}");
}

#[test]
fn truncated_file_reports_what_was_read() {
    let src = own_fixture("hot3-default.data");
    let bytes = std::fs::read(&src).expect("read fixture");
    let dir = tempdir();
    let cut = dir.join("cut.data");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write");
    let out = prec()
        .args(["report", "--stdio", "--sort", "comm,dso", "-i"])
        .arg(&cut)
        .stdin(Stdio::null())
        .output()
        .expect("run prec");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("# Samples:"),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        !stderr.is_empty(),
        "no warning on stderr for a truncated file"
    );
    assert!(
        !stdout.contains("prec:"),
        "warnings leaked to stdout: {stdout}"
    );
}

#[test]
fn garbage_input_is_an_error_not_a_panic() {
    let dir = tempdir();
    let bad = dir.join("bad.data");
    std::fs::write(&bad, b"PERFILE2 this is not a perf.data file at all").expect("write");
    let out = run_fail(prec().args(["report", "--stdio", "-i"]).arg(&bad));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("bad.data"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn unknown_sort_key_is_rejected() {
    let file = own_fixture("hot3-default.data");
    let out = run_fail(
        prec()
            .args(["report", "--stdio", "--sort", "nonsense", "-i"])
            .arg(&file),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("nonsense"), "{stderr}");
}

/// The filters against perf on the perf 6.1 fixtures (perf's option names:
/// `--pid`/`--tid`; prec also accepts `--pids`/`--tids`). Not compared:
/// `--cpu` on files without CPU in the samples or with CPUs the machine does
/// not have (perf refuses them).
#[test]
fn filters_match_perf() {
    if !require_perf() {
        return;
    }
    let runs: &[(&str, &[&str])] = &[
        ("threads.data", &["--pid", "10247"]),
        ("threads.data", &["--tid", "10249,10250"]),
        ("threads.data", &["--tid", "10247"]),
        ("threads.data", &["--comms", "worker-a"]),
        ("threads.data", &["--comms", "worker-a,threads"]),
        // One comm elides its column, and perf's output sort skips it:
        // ties of the children order then fall between other comms.
        ("tar-page-faults-g.data", &["--comms", "tar"]),
        ("tar-page-faults-g.data", &["--comms", "sh"]),
        ("tar-page-faults-g.data", &["--dsos", "libc.so.6"]),
        ("threads.data", &["--percent-limit", "20"]),
        ("threads.data", &["--time", "0,99999999"]),
        ("hot3-default.data", &["--dsos", "hot3,libc.so.6"]),
        ("hot3-default.data", &["--symbols", "hot_a"]),
        ("hot3-default.data", &["--symbols", "hot_a,hot_b"]),
        ("hot3-default.data", &["--percent-limit", "5"]),
        ("hot3-default.data", &["--time", "0,"]),
        ("uselib.data", &["--dsos", "libhot.so"]),
        ("system-wide.data", &["--cpu", "0"]),
        ("system-wide.data", &["--time", "0,99999999"]),
        // Percentages of the SAMPLE_TIME span: slices, ranges, a prefix.
        ("threads.data", &["--time", "10%/2"]),
        ("threads.data", &["--time", "0%-25%,50%-75%"]),
        ("hot3-default.data", &["--time", "30%"]),
        ("system-wide.data", &["--time", "20%/1,20%/5"]),
        // perf 6.1's report still sorts the records by time.
        ("system-wide.data", &["--disable-order"]),
        ("threads.data", &["--disable-order"]),
    ];
    let mut failures = Vec::new();
    for (name, filter) in runs {
        let file = own_fixture(name);
        for sort in ["comm,dso,sym", "pid"] {
            let mut args = vec!["--sort", sort];
            args.extend_from_slice(filter);
            if let Err(e) = compare_report(&file, Input::File, &args) {
                failures.push(e);
            }
            // Pids and tids change when the fixtures are recorded again: a
            // filter that keeps nothing would compare two empty tables.
            let by_id = matches!(filter.first(), Some(&"--pid" | &"--tid"));
            let ours = report_stdio(prec(), &file, Input::File, &args);
            if by_id && !ours.lines().any(|l| !l.starts_with('#') && l.contains('%')) {
                failures.push(format!("{name} {args:?}: no rows kept"));
            }
        }
    }
    // Unresolved symbols widen the Shared Object column to 16, but not
    // under --dsos (hists__set_unres_dso_col_len); quipper's binaries are
    // absent.
    let forkexit = quipper_dir().join("perf.data.forkexit-3.8");
    let args = ["--sort", "comm,dso,sym", "--dsos", "chrome,libc-2.15.so"];
    if let Err(e) = compare_report(&forkexit, Input::File, &args) {
        failures.push(e);
    }
    assert_no_failures(&failures);
}

/// A thread sampled before its first COMM is `:TID` until then. perf
/// overrides that comm object in place (`comm__override`), so report shows
/// the earlier samples under the later name, while script, printing as it
/// reads, shows `:TID`. Recorded with `--synth=no`, so the spinning shell
/// (started before perf) is known only from its samples until its exec.
#[test]
fn samples_before_a_threads_first_comm_take_its_name() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = dir.join("late-comm.data");
    let mut spinner = std::process::Command::new("sh")
        .args([
            "-c",
            "sleep 1; i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; exec sleep 0.3",
        ])
        .spawn()
        .expect("sh runs");
    common::record(
        perf(),
        &data,
        &["-a", "--synth=no", "-e", "cpu-clock"],
        &["sleep", "2.5"],
    );
    let _ = spinner.wait();
    let pid = spinner.id().to_string();
    let (script, _) = script_stdout(perf(), &data, Input::File, &["--pid", &pid, "-F", "comm"]);
    let placeholder = format!(":{pid}");
    assert!(
        script.lines().any(|l| l.trim() == placeholder),
        "no sample of the spinning shell before its exec in perf script:\n{script}"
    );
    let report = report_stdio(
        perf(),
        &data,
        Input::File,
        &["--pid", &pid, "--sort", "comm"],
    );
    assert!(
        report.lines().any(|l| l.trim_end().ends_with("  sleep")) && !report.contains(&placeholder),
        "perf report does not name the early samples after the exec:\n{report}"
    );
    let mut failures = Vec::new();
    // Not with a thread filter: perf's entry of the renamed comm stays
    // where `:TID` sorted in its first tree, and whichever entry comes
    // first there decides whether the merged entry is filtered.
    for args in [
        &["--sort", "comm"][..],
        &["--sort", "comm,pid", "-n"],
        &["--sort", "comm,dso"],
        &["--sort", "pid"],
    ] {
        if let Err(e) = compare_report(&data, Input::File, args) {
            failures.push(e);
        }
    }
    if let Err(e) = compare_script(&data, Input::File, &["--pid", &pid, "-F", "comm,tid"]) {
        failures.push(e);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// perf runs addr2line on the file it read the symbols from. A stripped
/// build of the same program (same build-id) recorded first leaves its copy
/// in perf's build-id cache; that copy has no `.symtab`, so for the
/// unstripped program the binary itself is the source, and an address
/// without line information in a non-PIE program is `??:0`, as in a PIE.
#[test]
fn srcline_beside_a_stripped_copy_in_the_build_id_cache() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let home = dir.join("home");
    std::fs::create_dir_all(&home).expect("mkdir home");
    let source = repo_root().join("fixtures/src/hot3.c");
    let program = dir.join("hot3-nopie");
    run(std::process::Command::new("gcc")
        .args(["-O2", "-no-pie", "-fno-pie", "-o"])
        .arg(&program)
        .arg(&source));
    let stripped = dir.join("hot3-nopie-stripped");
    run(std::process::Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&program));
    let with_home = |mut cmd: std::process::Command| {
        cmd.env("HOME", &home);
        cmd
    };
    let data = dir.join("nopie.data");
    for (out, exe) in [
        (dir.join("stripped.data"), &stripped),
        (data.clone(), &program),
    ] {
        run(with_home(perf())
            .args(["record", "-q", "-o"])
            .arg(out)
            .arg("--")
            .arg(exe)
            .arg("0.1"));
    }
    let mut failures = Vec::new();
    for args in [&["--sort", "srcline"][..], &["--sort", "sym,srcline", "-n"]] {
        let expected = report_stdio(with_home(perf()), &data, Input::File, args);
        let actual = report_stdio(with_home(prec()), &data, Input::File, args);
        if let Err(e) = same_text(&format!("{} {args:?}", data.display()), &expected, &actual) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

/// A non-PIE program recorded with `-g`: perf's children entries look up
/// their raw ip plus the text offset (`prog[801060]` for 0x401060, or a
/// function found further on), unlike the self entries; with symbols and
/// stripped.
#[test]
fn non_pie_children_srclines_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let source = repo_root().join("fixtures/src/hot3.c");
    let program = dir.join("hot3-nopie-fp");
    run(std::process::Command::new("gcc")
        .args([
            "-O2",
            "-no-pie",
            "-fno-pie",
            "-fno-omit-frame-pointer",
            "-o",
        ])
        .arg(&program)
        .arg(&source));
    let stripped = dir.join("hot3-nopie-fp-stripped");
    run(std::process::Command::new("strip")
        .arg("-o")
        .arg(&stripped)
        .arg(&program));
    let mut failures = Vec::new();
    for (name, exe) in [("symbols", &program), ("stripped", &stripped)] {
        // A build-id cache of its own: the two builds share their build-id.
        let home = dir.join(format!("home-{name}"));
        std::fs::create_dir_all(&home).expect("mkdir home");
        let with_home = |mut cmd: std::process::Command| {
            cmd.env("HOME", &home);
            cmd
        };
        let data = dir.join(format!("{name}.data"));
        run(with_home(perf())
            .args(["record", "-q", "-g", "-o"])
            .arg(&data)
            .arg("--")
            .arg(exe)
            .arg("0.1"));
        // The program's own entries: glibc's lines differ where perf's
        // addr2line pairs an inlined line with its caller's file (see
        // compare_keys).
        let own = exe
            .file_name()
            .and_then(|n| n.to_str())
            .expect("UTF-8 name");
        for args in [
            &["--sort", "srcline", "--dsos", own][..],
            &["--sort", "sym,srcline", "-n", "--dsos", own],
            &["--sort", "srcfile", "--dsos", own],
        ] {
            let expected = report_stdio(with_home(perf()), &data, Input::File, args);
            let actual = report_stdio(with_home(prec()), &data, Input::File, args);
            if let Err(e) = same_text(&format!("{name} {args:?}"), &expected, &actual) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// The Source:Line column's width. perf 6.1 computes an entry's srcline
/// only when a comparison gets to the srcline key, and widens the column
/// by the srclines it has when it puts each entry in the output order:
/// entries whose overhead and keys before srcline tie with an entry put
/// there before, entries compared with another children entry of their
/// own sample (kernel `sym+off` lines), group members' matches, and inline
/// frames' entries, which get theirs from the callchain.
#[test]
fn srcline_column_width_matches_perf() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    let runs: &[&[&str]] = &[
        &["--sort", "sym,srcline"],
        &["--sort", "comm,dso,sym,srcline", "-n"],
    ];
    for name in [
        "cpp_hot.data",
        "forkexec.data",
        "uselib.data",
        "hot3-two-events.data",
        "stl_sort-dwarf.data",
        "callgraph-fp-g.data",
        "python-g.data",
    ] {
        let file = own_fixture(name);
        for args in runs {
            if let Err(e) = compare_report(&file, Input::File, args) {
                failures.push(e);
            }
        }
    }
    if let Err(e) = compare_report(
        &own_fixture("hot3-two-events.data"),
        Input::File,
        &["--sort", "sym,srcline", "--group"],
    ) {
        failures.push(e);
    }
    assert_no_failures(&failures);
}

/// perf 6.1 gives up on a DSO's source lines after 123 failed addr2line
/// lookups with no success before them (A2L_FAIL_LIMIT); its later
/// srclines are then the failure text (`tar[4d789]`, not `??:0`). Each
/// children entry is looked up twice (its he_tmp, then the entry), each
/// time a sample has it. With the srcline key first, prec counts the same
/// lookups in the same order: here the stripped tar's raw-ip callers
/// exhaust it before its first own sample.
#[test]
fn srcline_gives_up_on_a_dso_like_perf() {
    if !require_perf() {
        return;
    }
    let file = own_fixture("tar-bzip2-dwarf.data");
    let mut failures = Vec::new();
    for args in [
        &["--sort", "srcline"][..],
        &["--sort", "srcline", "-g", "none", "-n"],
        &["--sort", "srcline,sym"],
        &["--no-children", "--sort", "srcline"],
    ] {
        if let Err(e) = compare_report(&file, Input::File, args) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

/// `--symbols` entries that perf's setup_addrlist reads as hexadecimal
/// numbers (`0x...`, bare digits, even `cafe`) are addresses: they keep
/// the samples at that ip, elide no Symbol column, and a repeated address
/// stops perf's scan (the rest stay names). Report and script.
#[test]
fn symbols_list_addresses_match_perf() {
    if !require_perf() {
        return;
    }
    let file = own_fixture("hot3-default.data");
    let ips = stdout_of(
        perf()
            .args(["script", "-F", "ip", "-i"])
            .arg(&file)
            .stderr(Stdio::null()),
    );
    let ip = ips
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .expect("a sample ip")
        .to_string();
    let hex = format!("0x{ip}");
    let twice = format!("{hex},{ip}");
    let with_name = format!("main,{hex}");
    let mut failures = Vec::new();
    for list in [hex.as_str(), &ip, &twice, &with_name, "cafe", "12,hot_a"] {
        for sort in ["comm,dso,sym", "sym"] {
            let args = ["--sort", sort, "--symbols", list];
            if let Err(e) = compare_report(&file, Input::File, &args) {
                failures.push(e);
            }
        }
        if let Err(e) = compare_script(&file, Input::File, &["--symbols", list]) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}
