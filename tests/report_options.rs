//! `prec report --stdio` options perf users commonly type, each compared
//! with Linux perf 6.1's whole stdout (except the random `# (Tip:` line and
//! trailing blank lines) on the perf 6.1 recordings in fixtures/perf and a
//! few quipper files.
//!
//! Without perf the tests print why and pass, except under `CI=true`.

mod common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// [`compare_report`] with `fix` applied to prec's output first (a
/// documented difference owned elsewhere).
fn compare_fixed(file: &Path, args: &[&str], fix: &dyn Fn(String) -> String) -> Result<(), String> {
    let expected = report_stdio(perf(), file, Input::File, args);
    let actual = fix(report_stdio(prec(), file, Input::File, args));
    same_text(&format!("{} {args:?}", file.display()), &expected, &actual)
}

/// The perf 6.1 recordings most options are compared on.
const FILES: &[&str] = &[
    "hot3-default.data",
    "threads.data",
    "system-wide.data",
    "hot3-two-events.data",
    "callgraph-fp-g.data",
    "forkexec.data",
];

/// A few quipper files (other perf versions, architectures, multiple
/// events).
const QUIPPER: &[&str] = &[
    "perf.data.callgraph-3.4",
    "perf.data.group_desc-4.14",
    "perf.data.hw_and_sw-3.4",
    "perf.data.systemwide.0-3.8",
    // Unresolved kernel entries of equal period: -n orders them by samples.
    "perf.data.forkexit-3.8",
    // Pipe-mode data read from a path: -g without callchains is no error.
    "perf.data.piped.header_features-4.16",
    // Pipe mode has no kernel build-id: like perf, kernel symbols come from
    // this machine's kallsyms, relocated by the recorded `_text` (KASLR).
    "perf.data.piped.hw_and_sw-3.4",
];

fn files() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = FILES.iter().map(|f| own_fixture(f)).collect();
    let q = quipper_files();
    for name in QUIPPER {
        if let Some(f) = q
            .iter()
            .find(|f| f.file_name().and_then(OsStr::to_str) == Some(*name))
        {
            v.push(f.clone());
        }
    }
    v
}

/// Compares `runs` on every file of `files`.
fn check(files: &[PathBuf], runs: &[&[&str]]) {
    let compare = |file: &Path, args: &[&str]| compare_report(file, Input::File, args);
    assert_no_failures(&compare_each(files, runs, |_, _| None, compare));
}

#[test]
fn fields_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["-F", "overhead,sample,period,comm,dso"],
            &["-F", "comm,dso"],
            &["-F", "overhead,comm,dso"],
            &["-F", "overhead,sym", "--sort", "dso"],
            &["-F", "sample,comm", "--no-children"],
            // `+`: after the default columns; a key also sorts and splits.
            &["-F", "+period"],
            &["-F", "+sample,period", "--no-children"],
            &["-F", "+cpu"],
            &["-F", "+pid", "--sort", "dso"],
        ],
    );
}

/// perf's `overhead_children` field: sorted like the Children column
/// (callers first on ties), `N/A` without --children.
#[test]
fn children_field_matches_perf() {
    if !require_perf() {
        return;
    }
    let files: Vec<PathBuf> = ["callgraph-fp-g.data", "callgraph-nofp-dwarf.data"]
        .iter()
        .map(|f| own_fixture(f))
        .collect();
    check(
        &files,
        &[
            &["--children", "-F", "overhead_children,overhead,sym"],
            &["--children", "-F", "overhead,overhead_children,comm,sym"],
            &["--no-children", "-F", "overhead_children,sym"],
            &[
                "-g",
                "none",
                "--children",
                "-F",
                "overhead,sym,overhead_children",
            ],
            &["-g", "caller", "-F", "overhead_children,overhead,dso,sym"],
            &["-F", "sym,overhead_children", "-n", "--sort", "sym"],
        ],
    );
}

/// --percent-limit also sets the call-graph threshold; perf applies
/// options in order, so a `-g` threshold after it wins.
#[test]
fn percent_limit_and_graph_threshold_order_match_perf() {
    if !require_perf() {
        return;
    }
    let files: Vec<PathBuf> = ["callgraph-fp-g.data", "callgraph-nofp-dwarf.data"]
        .iter()
        .map(|f| own_fixture(f))
        .collect();
    check(
        &files,
        &[
            &["--percent-limit", "5", "-g", "graph,0.5"],
            &["-g", "graph,0.5", "--percent-limit", "5"],
            &["--percent-limit", "5", "-g", "graph"],
            &["--percent-limit=5", "--call-graph=fractal,1"],
            &["--call-graph", "fractal,1", "--percent-limit=5"],
            &["--no-children", "--percent-limit", "3", "-g", "caller,0.1"],
        ],
    );
}

#[test]
fn sort_keys_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--sort", "cpu"],
            &["--sort", "socket"],
            &["--sort", "comm,cpu"],
            // "symbol" in the list: perf appends its ipc_null column.
            &["--sort", "symbol"],
            &["--sort", "comm,symbol", "-n"],
            &["--sort", "dso,symbol", "-t", ","],
            // Also "symbol": one row per symbol, with ipc_null.
            &["--sort", "symbol_size"],
            &["--sort", "comm,symbol_size", "-n"],
        ],
    );
    // dso_size: the kernel map spans kallsyms' text, data and bss symbols
    // (perf's map__fixup_end), from the first kernel sample on.
    let mut files = files();
    files.push(own_fixture("hot3-nobody.data"));
    check(
        &files,
        &[
            &["--sort", "dso_size"],
            &["--sort", "dso,dso_size", "-n"],
            &["--sort", "dso_size,dso,sym", "--no-children", "-g", "none"],
        ],
    );
}

/// The file name of ld.so's init_cpu_features lines: perf 6.1 names
/// dl-get-cpu-features.c, prec's symbolizer the header the code came from
/// (dl-cacheinfo.h); the symbolizer's to fix, not the report's.
const LDSO_FILE: &str =
    "ld.so srcline file name: symbolizer (dl-cacheinfo.h vs perf's dl-get-cpu-features.c)";

/// Runs of [`source_keys_match_perf`].
const SRC_RUNS: &[&[&str]] = &[
    &["--sort", "srcfile"],
    &["--sort", "srcline", "-g", "none"],
    &["--sort", "srcline"],
    &["--sort", "dso,srcline"],
    &["--sort", "srcline,srcfile", "--no-children"],
    &["--sort", "dso,srcfile"],
    &["--sort", "comm,srcfile"],
    // perf sizes a srcline column from the srclines it computed while
    // comparing entries, and cuts the others.
    &["--sort", "dso,srcline", "-t", ","],
    &["--hierarchy", "--sort", "dso,sym,srcline", "-g", "none"],
];

/// hot3's recordings hit ld.so's init_cpu_features: every run above
/// differs there only by that file name ([`LDSO_FILE`]).
fn src_skip(name: &str, _args: &[&str]) -> Option<&'static str> {
    if name.starts_with("hot3-") {
        return Some(LDSO_FILE);
    }
    None
}

/// Source-file keys need the binaries: only the own recordings (perf
/// 6.1's addr2line dies of SIGPIPE on some quipper files).
#[test]
fn source_keys_match_perf() {
    if !require_perf() {
        return;
    }
    let mut files: Vec<PathBuf> = FILES.iter().map(|f| own_fixture(f)).collect();
    files.push(own_fixture("callgraph-nofp-dwarf.data"));
    let compare = |file: &Path, args: &[&str]| compare_report(file, Input::File, args);
    let mut failures = compare_each(&files, SRC_RUNS, src_skip, compare);
    // --full-source-path: the DWARF paths as binutils joins them (glibc's
    // relative unit directories: `./elf/./elf/rtld.c`).
    let tar = own_fixture("tar-bzip2-dwarf.data");
    let args = [
        "--full-source-path",
        "--sort",
        "srcline,srcfile",
        "--no-children",
    ];
    if let Err(e) = compare_report(&tar, Input::File, &args) {
        failures.push(e);
    }
    for name in ["callgraph-fp-g.data", "callgraph-nofp-dwarf.data"] {
        let file = own_fixture(name);
        for args in [
            &[
                "--full-source-path",
                "--sort",
                "srcline,srcfile",
                "--no-children",
            ][..],
            &["--full-source-path", "--sort", "srcfile", "--no-children"],
            // Without inline expansions a DWARF-unwound entry's srcline
            // comes from its address, as a frame pointer's does.
            &["--no-inline", "--sort", "srcline"],
            &["--no-inline", "--sort", "dso,srcline", "-g", "none"],
        ] {
            if let Err(e) = compare_report(&file, Input::File, args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn columns_and_layout_options_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--show-total-period"],
            &["-n", "--show-total-period"],
            &["-t", ","],
            &["-t", "|", "-n", "--show-total-period"],
            &["-q"],
            &["-q", "--sort", "pid"],
            &["-n", "--sort", "dso,sym"],
            &["-g", "caller", "--sort", "comm"],
            // -w: perf's user widths (cut keys, numbers in width - 2, a
            // list that stops at an item not followed by a comma).
            &["-w", "5,3,6,8"],
            &["-n", "-w", "10,5,0,4,30", "--show-total-period"],
            &["-w", "12,3,4", "--sort", "dso,sym"],
            &["-w", "9,x,12"],
            &["--group", "-w", "20,5"],
            // perf demangles kernel names only from ELF images, never
            // from kallsyms.
            &["--demangle-kernel", "--sort", "sym"],
            // A repeated option is no error; the last one wins.
            &["--stdio", "-n", "-n", "--sort", "dso", "--sort", "pid"],
            &["--percent-limit", "50", "--percent-limit", "1", "-q", "-q"],
            // Accepted for perf's sake: no browser without a terminal, and
            // a printing style perf 6.1's report does not read.
            &["--tui", "--sort", "pid"],
            &["--pretty", "raw", "--sort", "dso"],
        ],
    );
}

/// `file` (sample_type IP|TID|TIME|PERIOD, no ID, little-endian) with
/// every sample's period multiplied by `factor`, written to `out`.
fn with_periods_scaled(file: &Path, out: &Path, factor: u64) {
    let mut bytes = std::fs::read(file).expect("read fixture");
    let word = |b: &[u8], at: usize| u64::from_le_bytes(b[at..at + 8].try_into().unwrap());
    let (start, size) = (word(&bytes, 40) as usize, word(&bytes, 48) as usize);
    let mut at = start;
    while at + 8 <= start + size {
        let kind = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap());
        let len = u16::from_le_bytes(bytes[at + 6..at + 8].try_into().unwrap()) as usize;
        assert!(len >= 8, "record at {at}");
        // PERF_RECORD_SAMPLE: header, ip, pid/tid, time, then the period.
        if kind == 9 {
            let period = word(&bytes, at + 32) * factor;
            bytes[at + 32..at + 40].copy_from_slice(&period.to_le_bytes());
        }
        at += len;
    }
    std::fs::write(out, bytes).expect("write scaled copy");
}

/// Periods wider than their column (12 digits and more) overflow it by
/// one character, as perf prints them (`" %*"` of the width less one), in
/// the flat table, with children and in the hierarchy.
#[test]
fn periods_wider_than_their_column_match_perf() {
    if !require_perf() {
        return;
    }
    let dir = tempdir();
    let scaled = dir.join("hot3-large-periods.data");
    with_periods_scaled(&own_fixture("hot3-default.data"), &scaled, 10_000_000);
    check(
        &[scaled],
        &[
            &["-n", "--show-total-period"],
            &["--show-total-period", "--hierarchy"],
            &["--show-total-period", "--children"],
            &["-F", "period,sample,sym"],
        ],
    );
}

#[test]
fn filter_options_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--percentage", "relative", "--comms", "hot3"],
            &["--percentage", "relative", "--comms", "worker-a,threads"],
            &["--percentage", "absolute", "--comms", "worker-a"],
            &["-c", "worker-a,hot3", "-n"],
            &["--hide-unresolved"],
            &["-U", "--sort", "dso,sym"],
            // perf 6.1 filters by symbol only when it collapses (a comm
            // key), and only the first event; the header keeps its count.
            &["--symbol-filter", "main"],
            &["--symbol-filter", "a", "--sort", "comm,sym", "-n"],
            &["--symbol-filter", "main", "--sort", "dso,sym"],
            &["hot"],
            // Like --symbol-filter, applied while collapsing (a comm key).
            &["--socket-filter", "0"],
            &["--socket-filter", "1", "--sort", "comm,dso"],
            &["--socket-filter", "1", "--sort", "dso"],
            // Files without callchains: perf's error after the elided
            // keys' lines.
            &["-g", "--comms", "hot3", "--dsos", "libc.so.6"],
        ],
    );
}

/// `--sort time`: 100 ms buckets by default, `--time-quantum`, `--ns`.
#[test]
fn time_key_matches_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--sort", "time"],
            &["--sort", "time,comm", "--ns"],
            &["--sort", "comm,time", "--time-quantum", "1s", "-n"],
            &["--sort", "time", "--no-children", "--time-quantum", "10ms"],
            // With call graphs, perf's children entry template has no time:
            // a frame of a later bucket counts twice.
            &["--sort", "time,sym", "--time-quantum", "100ms"],
            &["--sort", "socket,sym"],
        ],
    );
    // Without PERF_SAMPLE_TIME (--per-thread) perf's sample time is -1:
    // its bucket, cut to the column, is `18446744073.`.
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = perf_record_program(
        dir.join("per-thread.data"),
        &["--per-thread"],
        &fixture_bin("hot3"),
        &["0.2"],
    );
    check(
        &[data],
        &[&["--sort", "time"], &["--sort", "comm,time", "--ns"]],
    );
}

#[test]
fn multiple_events_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &[],
            &["--group"],
            &["-n", "--group"],
            &["--show-total-period", "--group"],
            &["-n"],
            &["--sort", "comm,dso,sym"],
            &["--group", "--sort", "comm,dso"],
        ],
    );
    // --group-sort-idx: the second event's period first, then the other
    // members', on the files with several events.
    let grouped: Vec<PathBuf> = files()
        .into_iter()
        .filter(|f| {
            let name = f.file_name().and_then(OsStr::to_str).unwrap_or("");
            name == "hot3-two-events.data" || name == "perf.data.group_desc-4.14"
        })
        .collect();
    assert!(!grouped.is_empty(), "the multi-event fixture is present");
    check(
        &grouped,
        &[
            &["--group", "--group-sort-idx", "1", "--sort", "comm,dso,sym"],
            &[
                "--group",
                "--group-sort-idx",
                "1",
                "-n",
                "-F",
                "overhead,period,sym",
            ],
        ],
    );
    // Without a group perf refuses it.
    let single = own_fixture("hot3-default.data");
    let out = prec()
        .args([
            "report",
            "--stdio",
            "--group",
            "--group-sort-idx",
            "1",
            "-i",
        ])
        .arg(&single)
        .output()
        .expect("runs prec");
    assert!(
        !out.status.success(),
        "--group-sort-idx on one event must fail"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--group-sort-idx needs grouped events"));
}

/// `--sort parent` and `-p REGEX` (perf's POSIX regex; a non-default
/// pattern adds the parent key), with and without callchains.
#[test]
fn parent_matches_perf() {
    if !require_perf() {
        return;
    }
    let mut files: Vec<PathBuf> = [
        "callgraph-fp-g.data",
        "callgraph-nofp-dwarf.data",
        "hot3-default.data",
    ]
    .iter()
    .map(|f| own_fixture(f))
    .collect();
    files.extend(quipper_files().into_iter().filter(|f| {
        // The second file is in branch mode: the parent column
        // follows the branch keys.
        let name = f.file_name().and_then(OsStr::to_str);
        name == Some("perf.data.callgraph-3.4")
            || name == Some("perf.data.callgraph_and_branch-3.8")
    }));
    check(
        &files,
        &[
            &["--sort", "parent"],
            &["--sort", "comm,parent", "-p", "leaf|lib_hot", "-g", "none"],
            &["-p", "leaf|lib_hot"],
            &["--no-children", "--sort", "parent,sym", "-p", "^(a|c)$"],
            &["--sort", "parent", "-p", "^_"],
            // --ignore-callees: the matching function takes its callees'
            // samples (the last match in the chain's order).
            &["--ignore-callees", "^(b|c)$", "--no-children"],
            &["--ignore-callees", "main|leaf"],
            // -x: only entries with a parent match.
            &["-p", "leaf|lib_hot", "-x", "-n"],
            &["--sort", "parent", "-x", "--no-children"],
        ],
    );
}

/// Call-graph keys and stack options. perf 6.1 names glibc's
/// `__libc_start_call_main` line after libc-start.c, prec's symbolizer
/// after the header the function is defined in (libc_start_call_main.h):
/// that one file name is mapped before comparing (the symbolizer's to fix).
#[test]
fn callgraph_keys_match_perf() {
    if !require_perf() {
        return;
    }
    let fix = |s: String| s.replace("libc_start_call_main.h:", "libc-start.c:");
    let mut failures = Vec::new();
    for name in ["callgraph-fp-g.data", "callgraph-nofp-dwarf.data"] {
        let file = own_fixture(name);
        for args in [
            &["-g", "address"][..],
            &["-g", "srcline"],
            &["--no-children", "-g", "callee,0.5,address"],
            &["--no-children", "-g", "srcline"],
            &["-g", "caller,0.5,callee,srcline"],
            &["--inline", "-g", "srcline"],
            &["--no-inline"],
            &["--max-stack", "3"],
            &["--max-stack", "1", "--no-children"],
            // perf's branch history without branch stacks: srcline,
            // symbol, dso and call graphs by address.
            &["--branch-history"],
            &["--branch-history", "--no-children"],
            &["--branch-history", "--sort", "dso,sym", "-g", "caller"],
        ] {
            if let Err(e) = compare_fixed(&file, args, &fix) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
    // With branch stacks perf adds them to the call graphs; prec says it
    // does not.
    if let Some(branchy) = quipper_files()
        .into_iter()
        .find(|f| f.file_name().and_then(OsStr::to_str) == Some("perf.data.branch-4.14"))
    {
        let o = prec()
            .args(["report", "--stdio", "--branch-history", "-i"])
            .arg(&branchy)
            .output()
            .expect("run prec");
        assert!(!o.status.success());
        assert!(
            String::from_utf8_lossy(&o.stderr)
                .contains("--branch-history on a file with branch stacks"),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// Options perf refuses for a file: `--sort parent` or `-g` without
/// callchains, and `-U` leaving no sample (perf prints the first two
/// lines, then an error on stderr, and exits 0).
#[test]
fn refused_options_match_perf() {
    if !require_perf() {
        return;
    }
    let mut files: Vec<PathBuf> = [
        "hot3-default.data",
        "system-wide.data",
        "callgraph-fp-g.data",
    ]
    .iter()
    .map(|f| own_fixture(f))
    .collect();
    files.extend(quipper_files().into_iter().filter(|f| {
        matches!(
            f.file_name().and_then(OsStr::to_str),
            Some("perf.data.branch-4.14" | "perf.data.hw_and_sw-3.4")
        )
    }));
    check(
        &files,
        &[
            &["-g"],
            &["-g", "caller"],
            &["-g", "none"],
            &["--sort", "parent"],
            &["-U"],
            // Refused where the samples carry no CPU.
            &["-C", "0"],
        ],
    );
    // The refusal itself, on stderr, as perf words it (report and script).
    let no_cpu = own_fixture("hot3-default.data");
    for tool in ["report", "script"] {
        let o = prec()
            .args([tool, "-C", "0", "-i"])
            .arg(&no_cpu)
            .output()
            .expect("run prec");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("File does not contain CPU events. Remove -C option to proceed."),
            "{tool}: {err}"
        );
        assert_eq!(
            o.status.success(),
            tool == "report",
            "{tool}: as perf's status"
        );
    }
    // Refusals perf makes after printing its header hint: the same stdout,
    // the error on stderr (and, unlike perf's 0 for --mem-mode, a failure).
    for args in [
        &["--mem-mode"][..],
        &["--time", "1,2x"],
        &["-q", "--mem-mode"],
    ] {
        let stdout = |mut tool: Command| {
            let o = tool
                .args(["report", "--stdio", "-i"])
                .arg(&no_cpu)
                .args(args)
                .output()
                .expect("run report");
            (String::from_utf8_lossy(&o.stdout).into_owned(), o.stderr)
        };
        let (expected, _) = stdout(perf());
        let (actual, err) = stdout(prec());
        assert_eq!(expected, actual, "{args:?}: stdout as perf's");
        assert!(!err.is_empty(), "{args:?}: prec says why on stderr");
    }
}

/// `--hierarchy`: perf's tree of entries (one level per sort key), its
/// per-level filter marks, `--percent-limit`'s "no entry" lines, -n and
/// periods, groups, `-t SEP`, and leaf call graphs (in caller order, as perf turns
/// --children off after choosing it). On pipe-mode files perf 6.1 set up
/// the columns before any event arrived: it shows no samples.
#[test]
fn hierarchy_matches_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--hierarchy"],
            &[
                "--hierarchy",
                "-n",
                "--show-total-period",
                "--sort",
                "comm,dso",
            ],
            &["--hierarchy", "--sort", "sym"],
            &["--hierarchy", "--sort", "pid,sym", "-g", "none"],
            &["--hierarchy", "--percent-limit", "5"],
            &["--hierarchy", "--comms", "hot3,worker-a"],
            &["--hierarchy", "--dsos", "libc.so.6"],
            &["--hierarchy", "--sort", "comm,sym", "--dsos", "libc.so.6"],
            &[
                "--hierarchy",
                "--percentage",
                "relative",
                "--comms",
                "worker-b",
            ],
            &["--hierarchy", "--symbol-filter", "a"],
            &["--hierarchy", "--group", "--sort", "dso,sym"],
            &["--hierarchy", "--no-children", "--sort", "dso,sym"],
            &["--hierarchy", "--show-cpu-utilization", "-n"],
            &["--hierarchy", "--sort", "comm,symbol"],
            // -t: no level indent, each overhead cell padded to its width.
            &["--hierarchy", "-t", ","],
            &["--hierarchy", "-t", "|", "-n", "--group"],
            &["--hierarchy", "-t", ",", "--percent-limit", "5"],
            &["--hierarchy", "-t", ":", "--sort", "dso,sym"],
        ],
    );
}

/// `--show-cpu-utilization` (sys and usr columns after the overhead) and
/// perf's `overhead_sys`/`overhead_us`/`overhead_guest_*` fields, alone,
/// with groups, -n, periods, `-t` and filters (--hierarchy: above).
#[test]
fn cpu_utilization_matches_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--show-cpu-utilization"],
            &[
                "--show-cpu-utilization",
                "-n",
                "--show-total-period",
                "--sort",
                "dso",
            ],
            &["--show-cpu-utilization", "--group"],
            &["--show-cpu-utilization", "-t", ","],
            &[
                "--show-cpu-utilization",
                "--comms",
                "worker-a",
                "--percentage",
                "relative",
            ],
            &["-F", "overhead_sys,overhead_us,overhead,comm,dso"],
            &["-F", "overhead,overhead_guest_sys,overhead_guest_us,sym"],
        ],
    );
}

/// perf's output fields named in `--sort` (`--sort sym,period`): a column
/// after the default ones and a place in the sort order, after the
/// `overhead` perf puts first unless the list's text holds that word
/// (`--sort comm,overhead_sys` sorts by comm first); `overhead_children`
/// only with --children. And `-F` without a sort key: nothing splits the
/// samples, perf shows one entry. And `trace` of events that are not
/// tracepoints: N/A.
#[test]
fn output_fields_in_sort_and_keyless_fields_match_perf() {
    if !require_perf() {
        return;
    }
    check(
        &files(),
        &[
            &["--sort", "overhead"],
            &["--sort", "sample"],
            &["--sort", "sym,period"],
            &["--sort", "period,dso", "--show-total-period"],
            &["--sort", "comm,overhead_sys"],
            &["--sort", "overhead_children,sym"],
            &["--sort", "pid,overhead_children", "--no-children"],
            &["--sort", "sym,sample", "-n", "-g", "none"],
            &["--sort", "overhead_us,dso", "--show-cpu-utilization"],
            &["--sort", "overhead,sample,comm", "-n", "--group"],
            &["--sort", "sample", "-F", "overhead,sym"],
            &["-F", "overhead,sample"],
            &["-F", "sample"],
            // Not a field, but perf's N/A too: `trace` of other events.
            &["--sort", "comm,trace"],
        ],
    );
}

/// `-v`: DSOs by their long names (which also decide which entries are
/// one), each symbol after its address and the letter of where perf's
/// dso__load took the symbol table from (the build-id cache, its debug
/// file, the system path, kallsyms; `!` for none), and C++ names with
/// their parameters. Pipe mode and hot3-zstd record no build-ids, so the
/// binaries' own lead to the cache. (Not on recordings without a vdso
/// build-id: perf then copies this machine's vdso to a temporary file,
/// whose random name it shows.)
#[test]
fn verbose_matches_perf() {
    if !require_perf() {
        return;
    }
    let mut files: Vec<PathBuf> = FILES.iter().map(|f| own_fixture(f)).collect();
    for name in [
        "cpp_hot.data",
        "git-log-g.data",
        "hot3-pipe.data",
        "hot3-zstd.data",
    ] {
        files.push(own_fixture(name));
    }
    check(
        &files,
        &[
            &["-v"],
            &["-v", "--sort", "dso"],
            &["-v", "--no-children", "--sort", "dso,sym", "-n"],
            &["-v", "--sort", "sym", "-g", "none"],
        ],
    );
}

/// `--switch-on`/`--switch-off`/`--show-on-off-events` (perf's evswitch):
/// windows between samples of two events, in report and script. perf's
/// rules, kept: without an `on` event only the first `off` sample is
/// dropped; script decides after its thread filters, report before.
#[test]
fn event_switches_match_perf() {
    if !require_perf() {
        return;
    }
    let file = own_fixture("hot3-two-events.data");
    let runs: &[&[&str]] = &[
        &["--switch-on", "page-faults"],
        &["--switch-off", "page-faults"],
        &["--switch-on", "page-faults", "--show-on-off-events"],
        &[
            "--switch-on",
            "cpu-clock",
            "--switch-off",
            "page-faults",
            "-n",
        ],
        &["--switch-on", "page-faults", "--switch-off", "cpu-clock"],
        &["--switch-on", "page-faults", "--comms", "hot3"],
    ];
    let files = [file.clone()];
    let mut failures = compare_each(
        &files,
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    );
    failures.extend(compare_each(
        &files,
        runs,
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    // Some runs must drop samples, or the options were ignored.
    let all = report_stdio(prec(), &file, Input::File, &[]);
    let windowed = report_stdio(prec(), &file, Input::File, runs[3]);
    if all == windowed {
        failures.push("--switch-on cpu-clock --switch-off page-faults dropped nothing".into());
    }
    assert_no_failures(&failures);
    // An event the file does not have: an error naming the file's events.
    let out = prec()
        .args(["report", "--stdio", "--switch-on", "cycles", "-i"])
        .arg(&file)
        .output()
        .expect("prec runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("cycles") && err.contains("page-faults"),
        "{}: {err}",
        out.status
    );
}

/// `perf record -o -` of `argv` with `opts` into `out` (the program's
/// stdout goes with perf's to the file: these programs print nothing).
fn perf_record_pipe(out: &Path, opts: &[&str], argv: &[&str]) {
    let file = std::fs::File::create(out).expect("create the pipe file");
    run(perf()
        .args(["record", "-q"])
        .args(opts)
        .args(["-o", "-", "--"])
        .args(argv)
        .stdout(std::process::Stdio::from(file)));
}

/// perf 6.1 sets a report up before a pipe's attrs arrive: it cumulates
/// nothing (but keeps the caller order --children chose), does not check
/// `--sort parent` for callchains, and shows no samples with
/// `--hierarchy`; it forces `--group` at the stream's end-of-features
/// marker. Read from stdin and from a path alike.
#[test]
fn pipe_setup_matches_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let graph = dir.join("graph.pipe");
    let callgraph = fixture_bin("callgraph-fp");
    perf_record_pipe(&graph, &["-g"], &[path_str(&callgraph), "0.3"]);
    let two = dir.join("two-events.pipe");
    let hot3 = fixture_bin("hot3");
    perf_record_pipe(
        &two,
        &["-e", "cpu-clock", "-e", "page-faults"],
        &[path_str(&hot3), "0.1"],
    );
    let runs: &[(&Path, &[&str])] = &[
        (&graph, &[]),
        (&graph, &["--children", "--sort", "sym"]),
        (&graph, &["-g", "callee"]),
        (&graph, &["--no-children"]),
        (&graph, &["-g", "none", "--sort", "comm,dso,sym"]),
        (&graph, &["--hierarchy"]),
        (&two, &["--group"]),
        (&two, &["--group", "--sort", "comm,dso", "-n"]),
        (&two, &["--sort", "parent"]),
        (&two, &["-q", "--hierarchy"]),
    ];
    let mut failures = Vec::new();
    for (file, args) in runs {
        for input in [Input::File, Input::Stdin] {
            if let Err(e) = compare_report(file, input, args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// `--percentage relative` with filters on a group recording: the header
/// counts each member's entries that its filters leave, and each member's
/// percentages are of those (perf's nr_non_filtered_samples and
/// total_non_filtered_period); a member's entry is filtered by its own
/// first sample, which may be another thread's than its leader's.
#[test]
fn relative_percentages_of_a_group_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = perf_record_program(
        dir.join("group.data"),
        &["-e", "{cpu-clock,page-faults}"],
        Path::new("/bin/sh"),
        &[
            "-c",
            "head -c 30000000 /dev/zero | gzip -1 | wc -c; ls -lR /usr/share/doc > /dev/null",
        ],
    );
    let runs: &[&[&str]] = &[
        &[
            "--percentage",
            "relative",
            "--comms",
            "gzip",
            "--sort",
            "dso",
        ],
        &["--percentage", "relative", "--dsos", "libc.so.6"],
        &[
            "--percentage",
            "relative",
            "--comms",
            "gzip,ls",
            "--sort",
            "comm",
        ],
        &["--percentage", "relative", "--comms", "wc", "-n"],
    ];
    check(&[data], runs);
}
