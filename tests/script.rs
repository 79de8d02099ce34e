//! `prec script`, `prec script --folded` and `prec flamegraph`, judged by
//! Linux perf 6.1 (`perf script`) and inferno-collapse-perf:
//!
//! * full `perf script` stdout on every fixture in fixtures/perf (including
//!   the `--call-graph dwarf` one, unwound by report/src/unwind.rs), with
//!   default fields and with `-F`, `-G`, `--max-stack`, `--ns`,
//!   `--show-task-events`, `--show-mmap-events`;
//! * the quipper files (pipe-mode ones through stdin), see [`QUIPPER_KNOWN`]
//!   and [`QUIPPER_NO_SYM`] for the exceptions;
//! * a fresh `perf record -g` of the callgraph-fp fixture program;
//! * folded stacks: `prec script | inferno-collapse-perf` ==
//!   `perf script | inferno-collapse-perf` == `prec script --folded` (with a
//!   small re-implementation of the collapse rules when inferno is missing);
//! * the flame graph SVG: valid XML, the hot functions present, frame
//!   widths proportional to their counts.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// Quipper files perf script prints something prec cannot, with the reason.
const QUIPPER_KNOWN: &[(&str, &str)] = &[
    (
        "intel_pt-4.14",
        "Intel PT decoding (perf synthesizes psb/cbr/branch samples from AUX data)",
    ),
    (
        "piped.intel_pt-4.14",
        "Intel PT decoding; perf warns the pipe-mode output cannot be relied upon",
    ),
];

/// Pipe-mode quipper files without a kernel build-id: perf (and prec) apply
/// the running kernel's /proc/kallsyms to a foreign recording, so kernel
/// symbols are nonsense either way, and which nonsense symbol wins differs
/// (kallsyms end fix-ups). Compared without the `sym` field.
const QUIPPER_NO_SYM: &[&str] = &[
    "piped.ctx_switch_namespaces-4.14",
    "piped.hw_and_sw-3.4",
    "piped.no_attr_ids-4.14",
    "piped.target-3.4",
    "piped.target-3.8",
    "piped.target.throttled-3.4",
];

const OPTION_SETS: &[&[&str]] = &[
    &[],
    &["-F", "comm,tid,time,event,ip,sym,dso"],
    &["-F", "comm,pid,tid,cpu,time,period,event,ip,sym,symoff,dso"],
    &["-G"],
    &["--max-stack", "3"],
    // Each chain ends after its first entry in one of these.
    &["--stop-bt", "main,__libc_start_call_main"],
    &["--ns"],
    &["--show-task-events"],
    &["--show-mmap-events"],
    &["--header-only"],
    &["--header-only", "-I"],
    // Nothing left to print for events that are not tracepoints.
    &["-F", "trace"],
    // The dump, each sample followed by its line.
    &["-D"],
    // The same in file order.
    &["--dump-unsorted-raw-trace"],
    // Branch-trace fields: blank flags and no call indent for samples.
    &["-F", "comm,tid,time,event,flags,ip,sym,callindent"],
    &["--show-kernel-path", "-F", "+flags"],
    // KSYMBOL and BPF_EVENT records (quipper's branch_stack_spec has some).
    &["--show-bpf-events", "--show-cgroup-events"],
    // -v: C++ names with parameters; perf's live-mode -a: no change.
    &["-v", "-a"],
    // The sample's source line after it, once per line and thread (the
    // fixtures' own sources; glibc's are not installed).
    &["-F", "+srccode"],
    &["-F", "comm,tid,ip,sym,srccode"],
];

#[test]
fn fixtures_match_perf_script() {
    if !require_perf() {
        return;
    }
    let compare = |file: &Path, args: &[&str]| {
        let piped = file.to_string_lossy().contains("pipe");
        compare_script(file, Input::Pipe.if_piped(piped), args)
    };
    let known = |name: &str, args: &[&str]| {
        (name == "stl_sort-dwarf.data" && args == ["-v", "-a"]).then_some(
            "-v demangles with parameters, and cpp_demangle takes a constructor \
             template's first parameter for its return type: basic_string's \
             `(unsigned long, char, ...)` prints as `(char, ...)`",
        )
    };
    let failures = compare_each(&own_fixtures(), OPTION_SETS, known, compare);
    assert_no_failures(&failures);
}

#[test]
fn fixture_filters_match_perf_script() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    let threads = own_fixture("threads.data");
    let sw = own_fixture("system-wide.data");
    let tar_dwarf = own_fixture("tar-bzip2-dwarf.data");
    let nofp_dwarf = own_fixture("callgraph-nofp-dwarf.data");
    for (file, args) in [
        (&threads, &["--comms", "worker-a,worker-b"][..]),
        (&sw, &["--cpu", "1"][..]),
        (&sw, &["--comms", "sleep", "--show-task-events"][..]),
        // The fixtures' own sources.
        (
            &own_fixture("hot3-default.data"),
            &["-F", "+srcline", "--full-source-path"][..],
        ),
        (
            &own_fixture("rust_hot.data"),
            &["-F", "+srcline", "--full-source-path", "--inline"][..],
        ),
        // DWARF-unwound chains: an inline-expanded entry prints its own
        // line (the outer function's is where the inner one was inlined),
        // and one with a symbol but no line prints `??:0`; --no-inline
        // expands nothing.
        (&tar_dwarf, &["-F", "+srcline"][..]),
        // glibc's DWARF 5 files of directory entry 0 (its relative unit
        // directory) as binutils joins them, `./elf/./elf/rtld.c`, for the
        // inlined-into function's line too.
        (&tar_dwarf, &["-F", "+srcline", "--full-source-path"][..]),
        (&tar_dwarf, &["--no-inline"][..]),
        (&tar_dwarf, &["--no-inline", "-F", "+srcline"][..]),
        (&nofp_dwarf, &["-F", "+srcline"][..]),
        (&nofp_dwarf, &["--no-inline"][..]),
        // --time with --reltime: seconds after the first sample, both ends
        // moved (an open end too, so `0.05,` keeps nothing).
        (
            &threads,
            &["--reltime", "--time", "0.01,0.05", "-F", "tid,time"][..],
        ),
        (
            &threads,
            &["--reltime", "--time", ",0.02", "-F", "tid,time"][..],
        ),
        (
            &threads,
            &["--reltime", "--time", "0.05,", "-F", "tid,time"][..],
        ),
    ] {
        if let Err(e) = compare_script(file, Input::File, args) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn quipper_files_match_perf_script() {
    if !require_perf() {
        return;
    }
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in quipper_files_except(QUIPPER_KNOWN) {
        let piped = file_name(&file).contains("piped");
        let args: &[&str] = if QUIPPER_NO_SYM.contains(&quipper_short_name(&file)) {
            &["-F", "comm,tid,time,period,event,ip,dso"]
        } else {
            &[]
        };
        compared += 1;
        if let Err(e) = compare_script(&file, Input::Pipe.if_piped(piped), args) {
            failures.push(e);
        }
    }
    assert!(compared > 40, "only {compared} files compared");
    assert_no_failures(&failures);
}

/// Records `callgraph-fp` with `perf record -g` into `dir`.
fn record_callgraph(dir: &Path) -> PathBuf {
    perf_record_program(
        dir.join("cg.data"),
        &["-g"],
        &fixture_bin("callgraph-fp"),
        &["0.3"],
    )
}

#[test]
fn fresh_callgraph_recording_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_callgraph(&dir);
    let compare = |file: &Path, args: &[&str]| compare_script(file, Input::File, args);
    let mut failures = compare_each(
        std::slice::from_ref(&data),
        OPTION_SETS,
        |_, _| None,
        compare,
    );
    // srcline: only under the program's own frames (for glibc's inlined
    // code perf 6.1's libbfd pairs the caller's file with the inlined
    // line, which the symbolizer does not reproduce).
    let own = |text: &str| -> String {
        let mut out = String::new();
        let mut prev = "";
        for l in text.lines() {
            let is_src = l.starts_with("  ") && !l.starts_with("   ");
            if !is_src || prev.contains("callgraph-fp)") {
                out.push_str(l);
                out.push('\n');
            }
            if !is_src {
                prev = l;
            }
        }
        out
    };
    let args = ["-F", "+srcline"];
    let expected = own(&script_stdout(perf(), &data, Input::File, &args).0);
    let actual = own(&script_stdout(prec(), &data, Input::File, &args).0);
    if let Err(e) = same_text("-F +srcline differs", &expected, &actual) {
        failures.push(e);
    }
    // A pipe: perf's process_attr adds ip and sym to the fields of events
    // with call chains unless -F removed them (`-ip`), a list without them
    // too.
    let pipe = dir.join("cg.pipe.data");
    let out = std::fs::File::create(&pipe).expect("create pipe file");
    run(perf()
        .args(["record", "-q", "-g", "-o", "-", "--"])
        .arg(fixture_bin("callgraph-fp"))
        .arg("0.1")
        .stdin(Stdio::null())
        .stdout(out));
    failures.extend(compare_each(
        &[pipe],
        &[
            &[],
            &["-F", "comm,tid"],
            &["--ns", "-F", "comm,tid,time,event"],
            &["-F", "comm,tid,time,callindent,sym"],
            &["-F", "-ip"],
            &["-F", "sw:comm,tid"],
        ],
        |_, _| None,
        |f, args| compare_script(f, Input::Stdin, args),
    ));
    assert_no_failures(&failures);
}

/// inferno-collapse-perf, if installed (PATH, ~/.cargo/bin, or
/// `$PREC_INFERNO_COLLAPSE`).
fn inferno() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("PREC_INFERNO_COLLAPSE") {
        return Some(PathBuf::from(p));
    }
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Some(home) = std::env::var_os("HOME") {
        dirs.push(PathBuf::from(home).join(".cargo/bin"));
    }
    dirs.into_iter()
        .map(|d| d.join("inferno-collapse-perf"))
        .find(|p| p.is_file())
}

fn collapse_with(tool: &Path, text: &str) -> String {
    let mut child = Command::new(tool)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn inferno-collapse-perf");
    let mut stdin = child.stdin.take().unwrap();
    let text = text.to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(text.as_bytes());
    });
    let out = child.wait_with_output().expect("wait");
    let _ = writer.join();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// stackcollapse-perf's rules for perf script output *with call chains*
/// (event line, then one `\t<ip> <sym>+0x<off> (<dso>)` line per frame,
/// then a blank line): comm with spaces as `_`, frames outermost first,
/// offsets removed, `[dso]` or `[unknown]` for unresolved symbols, argument
/// lists cut, the period as count, first event only; sorted. A call chain
/// without frames (perf script prints none after an invalid context) is
/// skipped, as inferno-collapse-perf skips it.
fn collapse_reference(text: &str) -> String {
    use std::collections::BTreeMap;
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    let mut filter: Option<String> = None;
    let mut comm = String::new();
    let mut period = 1;
    let mut skip = false;
    let mut stack: Vec<String> = Vec::new();
    let mut flush = |comm: &str, stack: &mut Vec<String>, period: u64, skip: bool| {
        if !skip && !comm.is_empty() && !stack.is_empty() {
            let mut s = comm.to_string();
            for f in stack.iter().rev() {
                s.push(';');
                s.push_str(f);
            }
            *out.entry(s).or_insert(0) += period;
        }
        stack.clear();
    };
    for line in text.lines() {
        if line.is_empty() {
            flush(&comm, &mut stack, period, skip);
            comm.clear();
            continue;
        }
        if let Some(frame) = line.strip_prefix('\t') {
            let frame = frame.trim_start();
            let (_, rest) = frame.split_once(' ').unwrap_or((frame, ""));
            let (sym, dso) = rest.rsplit_once(' ').unwrap_or((rest, ""));
            let dso = dso.trim_start_matches('(').trim_end_matches(')');
            let mut sym = sym.trim();
            if let Some(i) = sym.rfind("+0x") {
                if sym[i + 3..].chars().all(|c| c.is_ascii_hexdigit()) {
                    sym = &sym[..i];
                }
            }
            if sym.starts_with('(') {
                continue;
            }
            let name = if sym == "[unknown]" {
                if dso == "[unknown]" {
                    "[unknown]".to_string()
                } else {
                    format!("[{}]", &dso[dso.rfind('/').map_or(0, |i| i + 1)..])
                }
            } else {
                let mut s = sym.replace(';', ":");
                if let Some(p) = s.find('(') {
                    let anon = s[p..].starts_with("(anonymous namespace)");
                    let go = p > 0 && s.as_bytes()[p - 1] == b'.';
                    if !anon && !go {
                        s.truncate(p);
                    }
                }
                s
            };
            stack.push(name);
            continue;
        }
        // Event line: "comm tid time: period event: "
        let t = line.trim_end();
        let t = t.strip_suffix(':').unwrap_or(t);
        let (head, event) = t.rsplit_once(' ').unwrap_or(("", t));
        let head = head.trim_end();
        let (head, p) = head.rsplit_once(' ').unwrap_or(("", head));
        period = p.parse().unwrap_or(1);
        match &filter {
            None => filter = Some(event.to_string()),
            Some(f) => skip = f != event,
        }
        if filter.as_deref() == Some(event) {
            skip = false;
        }
        // comm: everything before the tid column.
        let words: Vec<&str> = head.split_whitespace().collect();
        let tid_pos = words
            .iter()
            .position(|w| w.split('/').all(|x| x.parse::<i64>().is_ok()))
            .unwrap_or(words.len());
        comm = words[..tid_pos].join("_");
    }
    flush(&comm, &mut stack, period, skip);
    out.iter().map(|(s, n)| format!("{s} {n}\n")).collect()
}

#[test]
fn folded_stacks_match_inferno() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let fresh = record_callgraph(&dir);
    let mut files = vec![fresh, own_fixture("callgraph-fp-g.data")];
    files.extend(own_fixtures());
    let tool = inferno();
    if tool.is_none() {
        eprintln!(
            "inferno-collapse-perf not installed (cargo install inferno): \
             comparing with the reference collapse on call-graph files only"
        );
    }
    let mut failures = Vec::new();
    for file in &files {
        let input = Input::Pipe.if_piped(file.to_string_lossy().contains("pipe"));
        let (perf_text, _) = script_stdout(perf(), file, input, &[]);
        let (prec_text, _) = script_stdout(prec(), file, input, &[]);
        let (folded, ok) = script_stdout(prec(), file, input, &["--folded"]);
        assert!(ok, "prec script --folded failed on {}", file.display());
        let expected = match &tool {
            Some(t) => {
                let from_perf = collapse_with(t, &perf_text);
                let from_prec = collapse_with(t, &prec_text);
                let what = "inferno on prec script != inferno on perf script";
                if let Err(e) = same_text(
                    &format!("{}: {what}", file.display()),
                    &from_perf,
                    &from_prec,
                ) {
                    failures.push(e);
                }
                from_perf
            }
            None => {
                if !perf_text.contains("\n\t") {
                    continue;
                }
                collapse_reference(&perf_text)
            }
        };
        let what = format!("{}: prec script --folded differs", file.display());
        if let Err(e) = same_text(&what, &expected, &folded) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

#[test]
fn reference_collapse_agrees_with_folded_on_fixture() {
    // Without perf: prec's own text through the reference collapse equals
    // --folded (checks both against each other on a call-graph file).
    let file = own_fixture("callgraph-fp-g.data");
    let text = stdout_of(prec().arg("script").arg("-i").arg(&file));
    let folded = stdout_of(prec().args(["script", "--folded", "-i"]).arg(&file));
    assert!(!folded.is_empty());
    assert_eq_text(&collapse_reference(&text), &folded);
}

/// `(name, count, width)` of every frame in the SVG.
fn svg_frames(svg: &str) -> Vec<(String, u64, f64)> {
    let mut v = Vec::new();
    for g in svg.split("<g>").skip(1) {
        let Some(t) = g.split("<title>").nth(1) else {
            continue;
        };
        let title = t.split("</title>").next().unwrap_or("");
        let (name, rest) = title.rsplit_once(" (").unwrap();
        let count: u64 = rest.split(' ').next().unwrap().parse().unwrap();
        let w = g
            .split("width=\"")
            .nth(1)
            .and_then(|x| x.split('"').next())
            .and_then(|x| x.parse::<f64>().ok())
            .unwrap();
        v.push((name.to_string(), count, w));
    }
    v
}

fn check_svg(svg_path: &Path, expect: &[&str]) {
    let py = Command::new("python3")
        .arg("-c")
        .arg("import xml.dom.minidom,sys; xml.dom.minidom.parse(sys.argv[1])")
        .arg(svg_path)
        .output();
    match py {
        Ok(o) => assert!(
            o.status.success(),
            "SVG does not parse as XML: {}",
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("python3 unavailable ({e}); XML check skipped"),
    }
    let svg = std::fs::read_to_string(svg_path).unwrap();
    let frames = svg_frames(&svg);
    for name in expect {
        assert!(
            frames.iter().any(|(n, _, _)| n == name),
            "{name} missing from the flame graph"
        );
    }
    let (_, total, total_w) = frames
        .iter()
        .find(|(n, _, _)| n == "all")
        .cloned()
        .expect("root frame");
    for (n, c, w) in &frames {
        let expected = *c as f64 * total_w / total as f64;
        assert!(
            (w - expected).abs() < 0.02,
            "{n}: width {w} for {c} of {total} (expected {expected})"
        );
    }
}

#[test]
fn flamegraph_from_fixture() {
    let dir = tempdir();
    let svg = dir.join("fixture.svg");
    run(prec()
        .args(["flamegraph", "-q", "-i"])
        .arg(own_fixture("callgraph-fp-g.data"))
        .arg("-o")
        .arg(&svg));
    check_svg(&svg, &["main", "leaf", "recurse", "lib_hot"]);
    // From a folded file, with names that need escaping.
    let folded = dir.join("x.folded");
    std::fs::write(&folded, "a;b<&>\"' 3\na;c 1\n").unwrap();
    let svg2 = dir.join("x.svg");
    run(prec()
        .args(["flamegraph", "--folded"])
        .arg(&folded)
        .arg("-o")
        .arg(&svg2));
    check_svg(&svg2, &["a", "b&lt;&amp;&gt;&quot;&apos;", "c"]);
}

#[test]
fn flamegraph_from_fresh_recording() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_callgraph(&dir);
    let svg = dir.join("fresh.svg");
    run(prec()
        .args(["flamegraph", "-i"])
        .arg(&data)
        .arg("-o")
        .arg(&svg));
    check_svg(&svg, &["main", "leaf", "a", "b", "c"]);
}

#[test]
fn bad_field_is_an_error() {
    let out = run_fail(
        prec()
            .args(["script", "-F", "nosuchfield", "-i"])
            .arg(own_fixture("hot3-default.data")),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("nosuchfield"));
    // A field the samples do not carry, asked for explicitly.
    let out = run_fail(
        prec()
            .args(["script", "-F", "comm,cpu", "-i"])
            .arg(own_fixture("hot3-default.data")),
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("CPU"));
    // Branch-stack disassembly needs an all-branches recording (perf
    // refuses it so too).
    let out = run_fail(
        prec()
            .args(["script", "-F", "+brstackinsn", "-i"])
            .arg(own_fixture("hot3-default.data")),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("non all-branch filter set"), "{stderr}");
    // A list mixed with +/- changes, either way round.
    for fields in ["comm,-ip", "-ip,comm", "comm,+ip"] {
        let out = run_fail(
            prec()
                .args(["script", "-F", fields, "-i"])
                .arg(own_fixture("hot3-default.data")),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("Cannot mix +-field with overridden fields"),
            "-F {fields}: {stderr}"
        );
    }
    // Offsets left without symbols (`-sym` keeps the default symoff), as
    // perf refuses them; perf exits non-zero too.
    for fields in ["-sym", "-dso,-sym", "comm,symoff"] {
        let out = run_fail(
            prec()
                .args(["script", "-F", fields, "-i"])
                .arg(own_fixture("hot3-default.data")),
        );
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("Display of offsets requested"),
            "-F {fields}"
        );
    }
    // Source lines or code need the ip, as in perf (which exits 255).
    for fields in ["sym,srcline", "sym,srccode"] {
        let mut tools = vec![prec()];
        if perf_available() {
            tools.push(perf());
        }
        for mut cmd in tools {
            cmd.args(["script", "-F", fields, "-i"])
                .arg(own_fixture("hot3-default.data"));
            let out = run_fail(&mut cmd);
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("sample IP is not\nselected"),
                "-F {fields}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    }
}

/// Side-band and filter options on fresh recordings by both tools of a
/// program that forks, execs and sleeps (so it switches out):
/// `--show-switch-events` (SWITCH, and SWITCH_CPU_WIDE from `-a`),
/// `--show-namespace-events`, `--show-lost-events`, `--reltime`,
/// `--deltatime`, `--show-round-events`, `-c`, `--pid`, `--dsos` and `-S`.
#[test]
fn side_events_and_filters_match_perf_script() {
    if !require_perf_record() {
        return;
    }
    // The system-wide recording sees every process: let this test
    // process's fixture build (rustc, gcc) finish first. (perf's first
    // symbol lookup in rustc's librustc_driver fails, "Failed to open ...,
    // continuing without symbols"; prec's does not.)
    fixture_bins();
    let dir = tempdir();
    let workload = [
        "sh",
        "-c",
        "for i in 1 2 3; do ls /usr >/dev/null; sleep 0.01; done",
    ];
    let mut files = Vec::new();
    files.extend(record_both(
        dir.path(),
        "task",
        &["--switch-events", "--namespaces"],
        &workload,
    ));
    files.extend(record_both(
        dir.path(),
        "all",
        &["-a", "--switch-events"],
        &workload,
    ));
    let runs: &[&[&str]] = &[
        &["--show-switch-events"],
        &["--show-switch-events", "--reltime", "-c", "ls"],
        &[
            "--show-namespace-events",
            "--show-task-events",
            "--deltatime",
        ],
        &[
            "--show-lost-events",
            "--reltime",
            "--ns",
            "-F",
            "comm,tid,time,sym",
        ],
        &["--dsos", "libc.so.6", "-F", "+srcline"],
        &["-S", "_dl_lookup_symbol_x,strcmp,clear_page_erms"],
        &["--time", "10%/3,10%/7", "--show-switch-events"],
        &["--time", "25%-50%"],
        // Rounds shown, and everything in file order (perf turns its
        // ordering off).
        &[
            "--show-round-events",
            "--show-task-events",
            "--show-switch-events",
        ],
    ];
    let compare = |file: &Path, args: &[&str]| compare_script(file, Input::File, args);
    assert_no_failures(&compare_each(&files, runs, |_, _| None, compare));
}

/// perf script's sample fields beyond the defaults, on recordings by both
/// tools of page faults with every sample field this machine can fill:
/// `misc`, `weight`, `ins_lat`, `phys_addr`, `data_page_size`,
/// `code_page_size`, `iregs`, `uregs`, `data_src`, `insn` and `insnlen`
/// (the instruction read from the sample's binary, none in the kernel), and
/// `addr` with the address's symbol and DSO (perf resolves page-fault
/// addresses, falling back to the address's own half for the map).
#[test]
fn sample_fields_match_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let opts = [
        "-e",
        "page-faults",
        "-c",
        "1",
        "-W",
        "-d",
        "--phys-data",
        "--data-page-size",
        "--code-page-size",
        "--user-regs=ip,sp",
        "--intr-regs=ip,ax",
    ];
    let hot3 = fixture_bin("hot3");
    let argv = [hot3.to_str().unwrap_or("hot3"), "0.05"];
    let files = record_both(dir.path(), "faults", &opts, &argv);
    let runs: &[&[&str]] = &[
        &["-F", "comm,tid,misc,ip,sym,addr,weight,ins_lat"],
        &["-F", "ip,data_src,weight"],
        &["-F", "+data_src"],
        &["-F", "ip,sym,insnlen,insn"],
        &["-F", "+insn,+insnlen"],
        // Fields perf fills only for other recordings (Intel PT, metrics).
        &["-F", "+ipc,+synth,+metric"],
        &[
            "-F",
            "ip,sym,symoff,dso,addr,phys_addr,data_page_size,code_page_size",
        ],
        &["-F", "ip,iregs,uregs"],
        &[
            "-F",
            "+addr,+misc",
            "--show-task-events",
            "--show-mmap-events",
        ],
    ];
    let compare = |file: &Path, args: &[&str]| compare_script(file, Input::File, args);
    assert_no_failures(&compare_each(&files, runs, |_, _| None, compare));
}

/// `-F tod`: the wall-clock time of each sample from the CLOCK_DATA that
/// `record -k` writes, in the local time zone (two zones), with `--ns`
/// and on side-band records; refused like perf without clock data.
#[test]
fn tod_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let hot3 = fixture_bin("hot3");
    let argv = [hot3.to_str().unwrap_or("hot3"), "0.05"];
    let files = record_both(dir.path(), "clock", &["-k", "mono"], &argv);
    let runs: &[&[&str]] = &[
        &["-F", "+tod"],
        &["-F", "tod,comm,tid,time,ip", "--ns"],
        &["-F", "comm,tod,time", "--show-task-events"],
    ];
    let mut failures = Vec::new();
    for file in &files {
        for zone in ["UTC", "Asia/Kolkata"] {
            for args in runs {
                let with_zone = |mut tool: Command| {
                    tool.env("TZ", zone);
                    tool
                };
                let (expected, _) = script_stdout(with_zone(perf()), file, Input::File, args);
                let (actual, _) = script_stdout(with_zone(prec()), file, Input::File, args);
                if expected.is_empty() {
                    failures.push(format!("{} {args:?}: perf printed nothing", file.display()));
                }
                let what = format!("{} TZ={zone} {args:?}", file.display());
                if let Err(e) = same_text(&what, &expected, &actual) {
                    failures.push(e);
                }
            }
        }
    }
    assert_no_failures(&failures);
    let out = run_fail(
        prec()
            .args(["script", "-F", "+tod", "-i"])
            .arg(own_fixture("hot3-default.data")),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("missing clock data"), "{stderr}");
}

/// `brstack`, `brstacksym` and `brstackoff` on quipper's branch-stack
/// recordings (LBR from three machines and perf versions, pipe mode too):
/// each branch's addresses, or symbols and offsets, or DSO-relative
/// addresses (kernel, modules, JIT maps), with and without the DSO, and its
/// flags and cycles.
#[test]
fn branch_stack_fields_match_perf_script() {
    if !require_perf() {
        return;
    }
    let runs: &[&[&str]] = &[
        &["-F", "+brstack"],
        &["-F", "ip,brstack"],
        &["-F", "+brstacksym"],
        &["-F", "ip,sym,brstacksym"],
        &["-F", "+brstackoff"],
        &["-F", "ip,brstackoff,dso"],
    ];
    let mut failures = Vec::new();
    let mut compared = 0;
    for file in quipper_files() {
        let short = quipper_short_name(&file);
        if !(short.contains("branch") || short.contains("lbr")) {
            continue;
        }
        compared += 1;
        let piped = short.contains("piped");
        for args in runs {
            if let Err(e) = compare_script(&file, Input::Pipe.if_piped(piped), args) {
                failures.push(e);
            }
        }
    }
    assert!(compared >= 5, "only {compared} branch-stack files");
    assert_no_failures(&failures);
}

/// A recording with `-s` (per-thread counts in READ records at each
/// child's exit): `script -D` as perf prints it, READ records "unhandled"
/// (perf script has no handler for them); and a leader-sampled group's
/// deliveries, each after its thread and DSO lines.
#[test]
fn read_records_dump_like_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let hot3 = fixture_bin("hot3");
    let hot3 = hot3.to_str().expect("UTF-8 path");
    // A child's exit is what makes a READ record.
    let data = perf_record_program(
        dir.join("s.data"),
        &["-s"],
        &fixture_bin("forkexec"),
        &[hot3, "0.1"],
    );
    let dump = stdout_of(perf().args(["report", "-D", "-i"]).arg(&data));
    assert!(dump.contains("PERF_RECORD_READ"), "no READ record:\n{dump}");
    // Leader sampling: each member's delivery, thread and DSO lines first.
    let group = perf_record_program(
        dir.join("group.data"),
        &["-e", "{cpu-clock,page-faults}:S", "-g"],
        &fixture_bin("forkexec"),
        &[hot3, "0.1"],
    );
    let mut failures = Vec::new();
    for file in [&data, &group] {
        for args in [&["-D"][..], &[]] {
            if let Err(e) = compare_script(file, Input::File, args) {
                failures.push(e);
            }
        }
    }
    assert_no_failures(&failures);
}

/// perf's refusals of `-F`: a field the samples lack fails the session
/// (exit 255, perf's message); an unknown field is a usage error (129).
#[test]
fn refused_fields_exit_like_perf() {
    if !require_perf() {
        return;
    }
    let file = own_fixture("hot3-default.data");
    for fields in ["comm,tid,cpu,ip,sym", "comm,tid,cgroup"] {
        let run_with = |mut tool: Command| {
            tool.args(["script", "-F", fields, "-i"])
                .arg(&file)
                .stdin(Stdio::null())
                .output()
                .expect("run script")
        };
        let (theirs, ours) = (run_with(perf()), run_with(prec()));
        assert_eq!(theirs.status.code(), ours.status.code(), "-F {fields}");
        let first = |o: &std::process::Output| {
            let text = String::from_utf8_lossy(&o.stderr).into_owned();
            text.lines().next().unwrap_or("").to_string()
        };
        let (theirs_said, ours_said) = (first(&theirs), first(&ours));
        let word = theirs_said
            .split(':')
            .next()
            .unwrap_or("")
            .trim_end_matches('.');
        assert!(
            ours_said.starts_with(word),
            "-F {fields}: perf said {theirs_said:?}, prec {ours_said:?}"
        );
    }
}

/// `--per-event-dump`: each event's samples in `INPUT.EVENT.dump`, the
/// same bytes as perf's, and a line per file on stdout; a pipe file too.
#[test]
fn per_event_dump_like_perf() {
    if !require_perf() {
        return;
    }
    let dir = tempdir();
    for (fixture, extra) in [
        ("hot3-two-events.data", &["--show-task-events"][..]),
        ("hot3-pipe.data", &[][..]),
        (
            "hot3-two-events.data",
            &["--comms", "no-such-comm", "-F", "comm,ip,sym"][..],
        ),
    ] {
        let mut results = Vec::new();
        for (tool, mut cmd) in [("perf", perf()), ("prec", prec())] {
            let work = dir.join(tool);
            let _ = std::fs::remove_dir_all(&work);
            std::fs::create_dir_all(&work).expect("mkdir");
            let input = work.join(fixture);
            std::fs::copy(own_fixture(fixture), &input).expect("copy fixture");
            let o = run(cmd
                .args(["script", "--per-event-dump", "-i"])
                .arg(&input)
                .args(extra));
            let summary: Vec<String> = String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(|l| {
                    // The size: perf's is what its stdio buffer had flushed.
                    let l = l.replace(&format!("{}/", work.display()), "");
                    let l = l.replacen("[ prec script: ", "[ perf script: ", 1);
                    let (head, rest) = l.split_once(" MB ").unwrap_or(("", &l));
                    let head = head.split(" Wrote ").next().unwrap_or(head);
                    format!("{head} {rest}")
                })
                .collect();
            let mut dumps: Vec<(String, String)> = std::fs::read_dir(&work)
                .expect("read dir")
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".dump"))
                .map(|e| {
                    let text = std::fs::read_to_string(e.path()).expect("read dump");
                    (e.file_name().to_string_lossy().into_owned(), text)
                })
                .collect();
            dumps.sort();
            results.push((summary, dumps));
        }
        let (perf_summary, perf_dumps) = &results[0];
        let (prec_summary, prec_dumps) = &results[1];
        assert_eq!(perf_summary, prec_summary, "{fixture} {extra:?}");
        assert_eq!(perf_dumps.len(), prec_dumps.len(), "{fixture} {extra:?}");
        for ((name, theirs), (our_name, ours)) in perf_dumps.iter().zip(prec_dumps) {
            assert_eq!(name, our_name);
            assert_eq_text(theirs, ours);
        }
    }
}
