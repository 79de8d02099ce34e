//! Round trips through `prec inject`, judged by Linux perf (the oracle).
//!
//! For every own fixture (`fixtures/perf/*.data`) and every quipper file
//! (except the deliberately corrupted one) `prec inject` writes a file-mode
//! copy, a pipe-mode copy and a big-endian copy; `perf script` and
//! `perf report --stdio --sort comm,dso,sym` must print the same for the
//! original and for each copy, and perf must not complain about a copy more
//! than about the original.
//!
//! Documented exception: an original in pipe mode holding an AUX area trace
//! (quipper's `piped.intel_pt`) is not decoded by perf from a stream ("Intel
//! PT with pipe mode is not recommended"), so its file-mode copy prints the
//! decoded trace the original cannot; for those only the pipe-mode copy is
//! compared with the original.
//!
//! Documented exception: perf cannot decode an AUX area trace from a stream
//! at all (quipper's `perf.data.intel_pt-4.14`, a file-mode original: perf
//! warns "Intel PT with pipe mode is not recommended" and `perf script`
//! prints nothing for the stream), so for such an original the pipe-mode
//! copy is judged by what it carries: `prec inject` turns it back into a
//! file, and that file must read in perf like the original.
//!
//! `perf report` of a pipe-mode copy runs with `--no-children -g
//! graph,0.5,callee` on both sides: perf sets up children and call-graph
//! order from the attrs before reading, and a stream has none yet then, so
//! its defaults differ from a file's for the same data.
//!
//! The perf runs are spread over a few threads; the original's outputs are
//! computed once and shared by the tests.

mod common;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use common::*;
use prec_format::constants::sample_type::{BRANCH_STACK, CALLCHAIN};

/// The inputs: own fixtures and quipper files, without the corrupted one.
fn inputs() -> Vec<PathBuf> {
    let mut v = own_fixtures();
    v.extend(quipper_files().into_iter().filter(|p| {
        !p.file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .contains("corrupted")
    }));
    v
}

fn name_of(p: &Path) -> String {
    p.file_name().unwrap().to_string_lossy().into_owned()
}

/// Runs `f` over `items` on a few threads; collects the failures' messages.
fn par_for_each<T: Sync>(items: &[T], f: impl Fn(&T) -> Result<(), String> + Sync) -> Vec<String> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2)
        .clamp(2, 8);
    let next = AtomicUsize::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(item) = items.get(i) else { break };
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item)));
                let msg = match result {
                    Ok(Ok(())) => continue,
                    Ok(Err(m)) => m,
                    Err(p) => p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panic".into()),
                };
                failures.lock().unwrap().push(msg);
            });
        }
    });
    failures.into_inner().unwrap()
}

fn fail_if_any(what: &str, total: usize, failures: Vec<String>) {
    if !failures.is_empty() {
        panic!(
            "{what}: {} of {total} inputs failed:\n\n{}",
            failures.len(),
            failures.join("\n\n")
        );
    }
}

/// Runs a command with stdin from `stdin` (or /dev/null).
fn output_of(cmd: &mut Command, stdin: Option<&Path>) -> Output {
    match stdin {
        Some(p) => cmd.stdin(fs::File::open(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))),
        None => cmd.stdin(Stdio::null()),
    };
    cmd.output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"))
}

/// What perf prints for one input.
#[derive(Clone, Debug)]
struct PerfView {
    script: String,
    script_err: String,
    report: String,
    report_err: String,
}

/// Options of `perf report` (see the module comment for the pipe ones).
const REPORT: &[&str] = &["report", "--stdio", "--sort", "comm,dso,sym"];
const REPORT_PIPE: &[&str] = &[
    "report",
    "--stdio",
    "--sort",
    "comm,dso,sym",
    "--no-children",
];
const REPORT_PIPE_CALLCHAIN: &[&str] = &[
    "report",
    "--stdio",
    "--sort",
    "comm,dso,sym",
    "--no-children",
    "-g",
    "graph,0.5,callee",
];

/// Whether some event of `path` has `bit` in its sample_type.
fn has_sample_bit(path: &Path, bit: u64) -> bool {
    let bytes = fs::read(path).unwrap();
    let file = prec_format::PerfFile::parse(&bytes).unwrap();
    file.attrs().iter().any(|a| a.attr.sample_type & bit != 0)
}

/// `perf script` and `perf report` of `path`; with `pipe`, perf reads it
/// from stdin (`-i -`) the way a stream arrives.
fn perf_view(path: &Path, pipe: bool, report_args: &[&str]) -> PerfView {
    let input: &Path = if pipe { Path::new("-") } else { path };
    let stdin = pipe.then_some(path);
    let script = output_of(perf().arg("script").arg("-i").arg(input), stdin);
    let report = output_of(perf().args(report_args).arg("-i").arg(input), stdin);
    PerfView {
        script: without_tip(&String::from_utf8_lossy(&script.stdout)),
        script_err: String::from_utf8_lossy(&script.stderr).into_owned(),
        report: without_tip(&String::from_utf8_lossy(&report.stdout)),
        report_err: String::from_utf8_lossy(&report.stderr).into_owned(),
    }
}

/// The original's view, computed once per process.
fn original_view(path: &Path, report_args: &[&'static str]) -> PerfView {
    type Cache = Mutex<HashMap<(PathBuf, Vec<&'static str>), Arc<OnceLock<PerfView>>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cell = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap()
        .entry((path.to_path_buf(), report_args.to_vec()))
        .or_default()
        .clone();
    cell.get_or_init(|| perf_view(path, false, report_args))
        .clone()
}

fn complaints(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| {
            l.contains("WARNING")
                || l.contains("warning")
                || l.contains("failed")
                || l.contains("Error")
        })
        .map(str::trim)
        .collect()
}

/// Compares the copy's view with the original's; `Err` describes the first
/// difference.
fn compare(what: &str, orig: &PerfView, copy: &PerfView) -> Result<(), String> {
    let text = |name: &str, a: &str, b: &str| {
        same_text(
            &format!("{what}: `perf {name}` output differs (- original, + copy)"),
            a,
            b,
        )
    };
    text("script", &orig.script, &copy.script)?;
    text("report", &orig.report, &copy.report)?;
    for (name, o, c) in [
        ("script", &orig.script_err, &copy.script_err),
        ("report", &orig.report_err, &copy.report_err),
    ] {
        let known = complaints(o);
        let new: Vec<&str> = complaints(c)
            .into_iter()
            .filter(|l| !known.contains(l))
            .collect();
        if !new.is_empty() {
            return Err(format!(
                "{what}: `perf {name}` complains about the copy but not the original:\n{}\n--- original's stderr ---\n{o}",
                new.join("\n")
            ));
        }
    }
    Ok(())
}

fn is_pipe_file(path: &Path) -> bool {
    let b = fs::read(path).unwrap();
    b.len() >= 16 && (b[8..16] == 16u64.to_le_bytes() || b[8..16] == 16u64.to_be_bytes())
}

/// Pipe-mode originals holding an AUX area trace (see the module comment).
fn pipe_with_aux(path: &Path) -> bool {
    is_pipe_file(path) && name_of(path).contains("intel_pt")
}

/// File-mode originals holding an AUX area trace, which perf does not
/// decode from a stream (see the module comment).
fn file_with_aux(path: &Path) -> bool {
    !is_pipe_file(path) && name_of(path).contains("intel_pt")
}

/// `prec inject -i IN -o OUT [args]`; `Err` with prec's stderr on failure.
fn inject(input: &Path, output: &Path, args: &[&str]) -> Result<(), String> {
    let out = output_of(
        prec()
            .arg("inject")
            .arg("-i")
            .arg(input)
            .arg("-o")
            .arg(output)
            .args(args),
        None,
    );
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`prec inject -i {} -o {} {}` failed ({}):\n{}",
            input.display(),
            output.display(),
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// `prec inject -i IN -o -` into the file `output`.
fn inject_pipe(input: &Path, output: &Path) -> Result<(), String> {
    let file = fs::File::create(output).unwrap();
    let out = prec()
        .arg("inject")
        .arg("-i")
        .arg(input)
        .args(["-o", "-"])
        .stdin(Stdio::null())
        .stdout(file)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`prec inject -i {} -o -` failed ({}):\n{}",
            input.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

#[test]
fn file_mode_copies_read_the_same_in_perf() {
    if !require_perf() {
        return;
    }
    let inputs = inputs();
    let dir = tempdir();
    let failures = par_for_each(&inputs, |input| {
        if pipe_with_aux(input) {
            return Ok(());
        }
        let copy = dir.join(format!("{}.file", name_of(input)));
        inject(input, &copy, &[])?;
        assert!(
            !is_pipe_file(&copy),
            "{} is not in file mode",
            copy.display()
        );
        let what = format!("{} -> file mode", input.display());
        compare(
            &what,
            &original_view(input, REPORT),
            &perf_view(&copy, false, REPORT),
        )
    });
    fail_if_any("file-mode copies", inputs.len(), failures);
}

#[test]
fn pipe_mode_copies_read_the_same_in_perf() {
    if !require_perf() {
        return;
    }
    let inputs = inputs();
    let dir = tempdir();
    let failures = par_for_each(&inputs, |input| {
        let copy = dir.join(format!("{}.pipe", name_of(input)));
        inject_pipe(input, &copy)?;
        assert!(
            is_pipe_file(&copy),
            "{} is not in pipe mode",
            copy.display()
        );
        let what = format!("{} -> pipe mode", input.display());
        let mut opts = if has_sample_bit(input, CALLCHAIN) {
            REPORT_PIPE_CALLCHAIN
        } else {
            REPORT_PIPE
        }
        .to_vec();
        // File mode turns on branch mode for branch stacks; a stream cannot.
        if has_sample_bit(input, BRANCH_STACK) {
            opts.push("--no-branch-stack");
        }
        if file_with_aux(input) {
            // perf cannot read the trace from the stream: read the stream
            // back into a file with prec and judge that instead.
            let back = dir.join(format!("{}.pipe.file", name_of(input)));
            inject(&copy, &back, &[])?;
            return compare(
                &format!("{what} -> file mode"),
                &original_view(input, &opts),
                &perf_view(&back, false, &opts),
            );
        }
        compare(
            &what,
            &original_view(input, &opts),
            &perf_view(&copy, true, &opts),
        )
    });
    fail_if_any("pipe-mode copies", inputs.len(), failures);
}

#[test]
fn big_endian_copies_read_the_same_in_perf_and_in_prec() {
    if !require_perf() {
        return;
    }
    let inputs = inputs();
    let dir = tempdir();
    let failures = par_for_each(&inputs, |input| {
        if pipe_with_aux(input) {
            return Ok(());
        }
        let name = name_of(input);
        let be = dir.join(format!("{name}.be"));
        inject(input, &be, &["--byte-order", "big"])?;
        let magic = fs::read(&be).unwrap()[..8].to_vec();
        if magic != b"2ELIFREP" {
            return Err(format!("{}: not big-endian: {magic:?}", be.display()));
        }
        let le = dir.join(format!("{name}.be.le"));
        inject(&be, &le, &["--byte-order", "little"])?;
        let orig = original_view(input, REPORT);
        // perf reads the big-endian copy itself...
        let be_script = output_of(perf().arg("script").arg("-i").arg(&be), None);
        let be_text = without_tip(&String::from_utf8_lossy(&be_script.stdout));
        if be_text != orig.script {
            return Err(format!(
                "{name}: `perf script` of the big-endian copy differs (- original, + copy):\n{}",
                line_diff(&orig.script, &be_text)
            ));
        }
        // ...and prec converts it back to the same data.
        let le_script = output_of(perf().arg("script").arg("-i").arg(&le), None);
        let le_text = without_tip(&String::from_utf8_lossy(&le_script.stdout));
        if le_text != orig.script {
            return Err(format!(
                "{name}: `perf script` of big-endian -> little-endian copy differs (- original, + copy):\n{}",
                line_diff(&orig.script, &le_text)
            ));
        }
        Ok(())
    });
    fail_if_any("big-endian copies", inputs.len(), failures);
}

/// The pipe-mode exception above is real: perf cannot decode such an
/// original's trace from a stream, while the file-mode copy decodes it.
#[test]
fn pipe_mode_aux_exception_is_still_needed() {
    if !require_perf() {
        return;
    }
    for input in inputs().iter().filter(|p| pipe_with_aux(p)) {
        let dir = tempdir();
        let copy = dir.join("copy.data");
        inject(input, &copy, &[]).unwrap();
        let orig = original_view(input, REPORT);
        let copy_view = perf_view(&copy, false, REPORT);
        assert_ne!(
            orig.script,
            copy_view.script,
            "{}: the file-mode copy now reads the same; drop the exception",
            input.display()
        );
    }
    for input in inputs().iter().filter(|p| file_with_aux(p)) {
        let dir = tempdir();
        let copy = dir.join("copy.pipe");
        inject_pipe(input, &copy).unwrap();
        let orig = original_view(input, REPORT);
        let copy_view = perf_view(&copy, true, REPORT);
        assert_ne!(
            orig.script,
            copy_view.script,
            "{}: perf now decodes the pipe-mode copy; drop the exception",
            input.display()
        );
    }
}

/// Tracepoint recordings keep their formats through every copy: file →
/// pipe (the tracing data as a HEADER_TRACING_DATA record), pipe → file
/// (as the TRACING_DATA feature, the record not copied into the data), and
/// file → big endian (the data keeps its own byte order). perf script
/// prints the same trace lines from each copy as from the original.
#[test]
fn tracepoint_copies_keep_their_formats() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let file = dir.join("tp.data");
    let o = output_of(
        prec()
            .args([
                "record",
                "-q",
                "-e",
                "sched:sched_switch,sched:sched_process_exec",
            ])
            .arg("-o")
            .arg(&file)
            .args(["--", "sh", "-c", "sleep 0.01; ls / >/dev/null"]),
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let script = |path: &Path, pipe: bool| {
        let mut c = perf();
        c.args(["script", "-i"]);
        let o = if pipe {
            output_of(c.arg("-"), Some(path))
        } else {
            output_of(c.arg(path), None)
        };
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        (text, err)
    };
    let (want, _) = script(&file, false);
    assert!(want.contains("prev_comm="), "no trace output:\n{want}");
    let piped = dir.join("tp.pipe");
    inject_pipe(&file, &piped).unwrap();
    let back = dir.join("tp.back");
    inject(&piped, &back, &[]).unwrap();
    let big = dir.join("tp.big");
    inject(&file, &big, &["--byte-order", "big"]).unwrap();
    for (path, pipe) in [(&piped, true), (&back, false), (&big, false)] {
        let (got, err) = script(path, pipe);
        assert_eq!(got, want, "perf script of {}", path.display());
        assert!(
            !err.contains("tracing data") && !err.contains("failed to process"),
            "{}: {err}",
            path.display()
        );
    }
}
