//! In-process DWARF unwinding (`prec_report::unwind`) against perf 6.1.
//!
//! * `dwarf_unwinding_matches_perf_script`: records the -fomit-frame-pointer
//!   fixture with `perf record --call-graph dwarf`, unwinds every sample with
//!   [`DwarfUnwinder`], symbolizes the frames and compares them, chain by
//!   chain and frame by frame, with the user frames `perf script` prints
//!   (perf unwinds with libunwind/libdw). Requires >= 95 % of the samples of
//!   the program to reach `main` and >= 95 % to equal perf's chain.
//! * `checked_in_fixture_reaches_main`: the same on
//!   `fixtures/perf/callgraph-nofp-dwarf.data` (dwarf,4096); perf reads the
//!   same rebuilt binaries, so the chains must still agree.
//! * `other_programs_match_perf_script`: threads, fork+exec, C++, Rust
//!   (lld layout: text vaddr != offset) and dlopen, >= 95 % equal chains
//!   (fork+exec: >= 95 % reach `main`; see the test for perf's flakiness).
//! * `pc_without_fde_matches_perf_script`: a hot leaf no FDE covers; perf's
//!   libunwind guesses the frame from rbp, prec must do the same.
//! * `rbp_guess_past_a_small_stack_copy_matches_perf_script`: the rbp
//!   guess reading past a 16-byte stack copy (perf's zero step).
//! * `zero_return_address_matches_perf_script`: a return address read
//!   as 0 through the CFI (perf's closing zero step).
//! * `odd_frames_match_perf_script`: a leaf whose CFA is a DWARF
//!   expression, a leaf in `[vdso]`, and code run from a second mapping of
//!   an `ET_EXEC` file: `prec script` prints what `perf script` prints, and
//!   `--sort sym` names the remapped function as perf does.
//! * `bad_input_is_counted_not_fatal`: zero-sized and oversized stack copies,
//!   ABI 0, garbage registers and stacks.
//!
//! perf's inline expansion (`foo (inlined)` lines) is a symbolization
//! feature, not unwinding, and is left out of the comparison.

mod common;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;
use prec_format::constants::misc;
use prec_format::record::{Mmap, Record};
use prec_format::sample::{Regs, StackUser};
use prec_format::{Endian, PerfFile, U64Slice};
use prec_report::symbolize::{Symbolizer, SymbolizerOptions};
use prec_report::tasks::Machine;
use prec_report::unwind::{DwarfUnwinder, StopReason, ThreadSpace, UnwindStats};

/// One unwound sample.
struct Unwound {
    comm: String,
    tid: u32,
    time: u64,
    /// (map-relative address as perf script prints it, function names).
    frames: Vec<(u64, Vec<String>)>,
    stop: Option<StopReason>,
}

/// Replays `path` through a Machine and unwinds every sample that has user
/// registers and a stack copy.
fn unwind_file(path: &Path) -> (Vec<Unwound>, UnwindStats) {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let file = PerfFile::parse(&data).expect("parse perf.data");
    let attrs = file.attrs();
    let mut machine = Machine::new();
    let mut symbolizer = Symbolizer::new(SymbolizerOptions::default());
    let mut unwinder = DwarfUnwinder::new();
    let mut out = Vec::new();
    for r in file.ordered_records() {
        let Ok(r) = r else { break };
        if !r.header.kind.is_kernel() {
            continue;
        }
        let attr = file.attr_index(&r).map(|i| &attrs[i].attr);
        let Ok(rec) = r.parse(attr) else { continue };
        match rec {
            Record::Comm { pid, tid, comm, .. } => machine.comm(pid as i32, tid as i32, comm),
            Record::Fork(t) => machine.fork(
                t.pid as i32,
                t.tid as i32,
                t.ppid as i32,
                t.ptid as i32,
                r.header.misc,
            ),
            Record::Exit(t) => machine.exit(t.tid as i32),
            Record::Mmap(m) | Record::Mmap2(m) => {
                machine.mmap(r.cpumode(), r.header.misc, &m);
            }
            Record::Sample(s) => {
                let (Some(regs), Some(stack)) = (&s.regs_user, &s.stack_user) else {
                    continue;
                };
                let pid = s.pid.unwrap_or(0) as i32;
                let tid = s.tid.unwrap_or(0) as i32;
                let res = {
                    let mut space = ThreadSpace::new(&mut machine, pid, tid);
                    unwinder.unwind(pid as u32, regs, stack, &mut space, &mut symbolizer)
                };
                let mut frames = Vec::new();
                // As perf_chains: addresses in the kernel's half are left out.
                for &addr in res.frames.iter().filter(|&&a| a < 0xffff_8000_0000_0000) {
                    frames.push(symbolize(&mut machine, &mut symbolizer, pid, tid, addr));
                }
                let th = machine.find(tid).map(|t| machine.thread(t).comm);
                out.push(Unwound {
                    comm: th
                        .map(|c| machine.comms.get(c).to_string())
                        .unwrap_or_default(),
                    tid: tid as u32,
                    time: s.time.unwrap_or(0),
                    frames,
                    stop: res.stop,
                });
            }
            _ => {}
        }
    }
    (out, unwinder.stats())
}

/// The map-relative address of `addr` (as perf script prints it) and the
/// names of the function containing it: the symbol (without a symbol
/// version) and the DWARF inline chain at that address.
fn symbolize(
    machine: &mut Machine,
    symbolizer: &mut Symbolizer,
    pid: i32,
    tid: i32,
    addr: u64,
) -> (u64, Vec<String>) {
    let loc = machine.resolve(pid, tid, misc::USER, addr);
    let Some(map) = loc.map else {
        return (addr, vec!["[unknown]".into()]);
    };
    let dso = machine.dsos.get(map.dso);
    let mut names = Vec::new();
    if let Some(bin) = symbolizer.binary(&dso.long_name, dso.build_id.as_deref()) {
        let elf = symbolizer.to_elf_address(bin, map.start, map.pgoff, addr);
        if let Some(s) = symbolizer.symbol(bin, elf) {
            names.push(s.name.split('@').next().unwrap_or(&s.name).to_string());
        }
        for f in symbolizer.inline_frames(bin, elf) {
            names.extend(f.function);
        }
    }
    if names.is_empty() {
        names.push("[unknown]".into());
    }
    (loc.addr, names)
}

/// perf script's user frames per sample, keyed by (tid, time string).
fn perf_chains(data: &Path) -> HashMap<(u32, String), Vec<PerfFrame>> {
    let out = perf()
        .args(["script", "-F", "tid,time,ip,sym,dso", "-i"])
        .arg(data)
        .stdin(Stdio::null())
        .output()
        .expect("run perf script");
    assert!(out.status.success(), "perf script failed");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut chains = HashMap::new();
    let mut key: Option<(u32, String)> = None;
    let mut frames: Vec<(u64, Vec<String>, bool)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if !line.starts_with('\t') {
            if let Some(k) = key.take() {
                chains.insert(k, std::mem::take(&mut frames));
            }
            // "   12345 67890.123456: "
            let mut it = line.split_whitespace();
            let tid = it.next().and_then(|t| t.parse().ok()).unwrap_or(0);
            let time = it.next().unwrap_or("").trim_end_matches(':').to_string();
            key = Some((tid, time));
            continue;
        }
        // "\t    116c leaf (/path/to/dso)"
        let l = line.trim();
        let Some((ip, rest)) = l.split_once(' ') else {
            continue;
        };
        let Ok(ip) = u64::from_str_radix(ip, 16) else {
            continue;
        };
        // perf expands inlined calls: "f (inlined)" lines (printed without
        // the dso), then (unless the address is only described by inline
        // entries) the function itself, all at the same address. Group them
        // into one frame.
        let (name, inlined) = match rest.strip_suffix(" (inlined)") {
            Some(n) => (n, true),
            None => {
                // Kernel frames are left out below by their address; a
                // return address in `[stack]` or in no map is a user frame.
                let sym = rest.rfind(" (").map_or(rest, |i| &rest[..i]);
                (sym, false)
            }
        };
        if ip >= 0xffff_8000_0000_0000 {
            continue; // kernel frames (inline entries have no dso)
        }
        let name = name.split("+0x").next().unwrap_or(name).to_string();
        match frames.last_mut() {
            Some((last_ip, names, open)) if *open && *last_ip == ip => {
                names.push(name);
                *open = inlined;
            }
            _ => frames.push((ip, vec![name], inlined)),
        }
    }
    if let Some(k) = key.take() {
        chains.insert(k, frames);
    }
    chains
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().map(|(ip, names, _)| (ip, names)).collect()))
        .collect()
}

/// A frame of perf script: the address and the names printed for it (the
/// inline chain, then the function).
type PerfFrame = (u64, Vec<String>);

fn time_str(t: u64) -> String {
    format!("{}.{:06}", t / 1_000_000_000, (t % 1_000_000_000) / 1000)
}

struct Comparison {
    samples: usize,
    reach_main: usize,
    equal_syms: usize,
    equal_addrs: usize,
    perf_reach_main: usize,
    mismatches: Vec<String>,
}

/// Compares the samples of the workload (every comm but perf's own).
fn compare(data: &Path) -> Comparison {
    let (mine, stats) = unwind_file(data);
    let perf = perf_chains(data);
    eprintln!("{stats}");
    let mut c = Comparison {
        samples: 0,
        reach_main: 0,
        equal_syms: 0,
        equal_addrs: 0,
        perf_reach_main: 0,
        mismatches: Vec::new(),
    };
    let has_main = |f: &[(u64, Vec<String>)]| f.iter().any(|(_, n)| n.iter().any(|n| n == "main"));
    for u in mine
        .iter()
        .filter(|u| u.comm != "perf" && u.comm != "perf-exec")
    {
        c.samples += 1;
        if has_main(&u.frames) {
            c.reach_main += 1;
        }
        let Some(theirs) = perf.get(&(u.tid, time_str(u.time))) else {
            c.mismatches.push(format!(
                "{} {}: no perf script sample",
                u.tid,
                time_str(u.time)
            ));
            continue;
        };
        if has_main(theirs) {
            c.perf_reach_main += 1;
        }
        let same_addrs =
            u.frames.len() == theirs.len() && u.frames.iter().zip(theirs).all(|(a, b)| a.0 == b.0);
        let same_syms = u.frames.len() == theirs.len()
            && u.frames
                .iter()
                .zip(theirs)
                .all(|(a, b)| a.1.iter().any(|n| b.1.contains(n)));
        c.equal_addrs += usize::from(same_addrs);
        c.equal_syms += usize::from(same_syms);
        if !(same_syms && same_addrs) && c.mismatches.len() < 20 {
            c.mismatches.push(format!(
                "{} {} ({:?}):\n  prec: {:?}\n  perf: {:?}",
                u.tid,
                time_str(u.time),
                u.stop,
                u.frames,
                theirs
            ));
        }
    }
    c
}

fn pct(n: usize, d: usize) -> f64 {
    if d == 0 {
        0.0
    } else {
        100.0 * n as f64 / d as f64
    }
}

/// Panics unless at least `min_pct` % of the chains equal perf's, both by
/// function and by address.
fn assert_chains_equal(what: &str, c: &Comparison, min_pct: f64) {
    let (syms, addrs) = (pct(c.equal_syms, c.samples), pct(c.equal_addrs, c.samples));
    assert!(
        syms >= min_pct && addrs >= min_pct,
        "{what}: only {syms:.1} % / {addrs:.1} % of the chains equal perf's"
    );
}

fn report(what: &str, c: &Comparison) {
    eprintln!(
        "{what}: {} samples; reach main: prec {:.1} %, perf {:.1} %; \
         chains equal to perf script: functions {:.1} %, addresses {:.1} %",
        c.samples,
        pct(c.reach_main, c.samples),
        pct(c.perf_reach_main, c.samples),
        pct(c.equal_syms, c.samples),
        pct(c.equal_addrs, c.samples),
    );
    for m in &c.mismatches {
        eprintln!("mismatch {m}");
    }
}

/// Records `bin args` with `perf record --call-graph dwarf` into `dir`.
fn record_dwarf(dir: &Path, name: &str, bin: &Path, args: &[&str]) -> std::path::PathBuf {
    let opts = ["--call-graph", "dwarf", "-F", "999"];
    perf_record_program(dir.join(format!("{name}.data")), &opts, bin, args)
}

/// Other fixture programs: threads, fork+exec, C++, Rust, dlopen.
#[test]
fn other_programs_match_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    for (name, strict) in [
        ("threads", true),
        ("forkexec", true),
        ("cpp_hot", true),
        ("rust_hot", true),
        ("dlopen", true),
    ] {
        let data = record_dwarf(&dir, name, &fixture_bin(name), &[]);
        let c = compare(&data);
        report(name, &c);
        assert!(c.samples >= 20, "{name}: too few samples: {}", c.samples);
        if strict {
            assert_chains_equal(name, &c, 95.0);
        } else {
            assert!(
                pct(c.reach_main, c.samples) >= 95.0,
                "{name}: only {:.1} % of the samples reach main",
                pct(c.reach_main, c.samples)
            );
        }
    }
}

/// Programs a shell starts: perf keeps the shell's maps in the child after
/// the exec and takes a library's lowest map start in the thread as its
/// base, so where the shell had libc or ld.so lower than the child (ASLR:
/// about one library in two), libunwind reads the FDE table at the shell's
/// address, finds no FDE and guesses from rbp, and the chain stops early.
/// prec must give the same chains (it went on to `main` before).
#[test]
fn exec_children_match_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let opts = ["--call-graph", "dwarf", "-F", "999"];
    let script =
        "for i in 1 2 3 4 5 6 7 8; do ls -lR /usr/share/perl5 /usr/include >/dev/null; done";
    let data = perf_record_program(
        dir.join("exec.data"),
        &opts,
        Path::new("/bin/sh"),
        &["-c", script],
    );
    let c = compare(&data);
    report("sh running ls 8 times", &c);
    assert!(c.samples >= 100, "too few samples: {}", c.samples);
    assert_chains_equal("exec", &c, 97.0);
}

/// A pc no `.eh_frame_hdr` entry covers (the fixture's hot leaf is
/// top-level asm without CFI): perf's libunwind does not use the CFI there
/// but guesses a frame from rbp (`[rbp + 8]` is taken as the return
/// address, so the leaf's real caller `middle` is skipped and the chain goes
/// on from `outer`). prec must give the same whole chains.
#[test]
fn pc_without_fde_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_dwarf(&dir, "nocfi", &fixture_bin("nocfi"), &["300"]);
    let c = compare(&data);
    report("nocfi", &c);
    assert!(c.samples >= 20, "too few samples: {}", c.samples);
    assert_chains_equal("nocfi", &c, 95.0);
    // The case itself was seen: samples in the leaf, unwound past it.
    let (mine, _) = unwind_file(&data);
    let in_leaf: Vec<&Unwound> = mine
        .iter()
        .filter(|u| {
            u.frames
                .first()
                .is_some_and(|f| f.1.iter().any(|n| n == "spin_nocfi"))
        })
        .collect();
    assert!(
        in_leaf.len() >= 20,
        "only {} samples in the leaf",
        in_leaf.len()
    );
    let skips_middle = in_leaf
        .iter()
        .filter(|u| {
            u.frames
                .get(1)
                .is_some_and(|f| f.1.iter().any(|n| n == "outer"))
                && u.frames.iter().any(|f| f.1.iter().any(|n| n == "main"))
        })
        .count();
    assert!(
        pct(skips_middle, in_leaf.len()) >= 95.0,
        "only {skips_middle} of {} leaf samples continue at outer (perf's frame-chain guess)",
        in_leaf.len()
    );
}

/// The frame lines of each sample of `perf script` text.
fn script_chains(script: &str) -> impl Iterator<Item = Vec<&str>> {
    script
        .split("\n\n")
        .map(|sample| sample.lines().skip(1).collect())
}

/// A static executable has `.eh_frame` but no `.eh_frame_hdr` search
/// table, the only way perf's libunwind reads `.eh_frame`: its
/// `find_proc_info` fails with `-EINVAL` and the chain ends at the sample's
/// own frame (no rbp guess, as for a pc without an FDE). prec prints the
/// same chains, inline frames and all.
#[test]
fn static_executable_without_search_table_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let bin = fixture_bin("inline_hot-static");
    let data = record_dwarf(&dir, "static", &bin, &["0.3"]);
    let script = |mut tool: Command| stdout_of(tool.arg("script").arg("-i").arg(&data));
    let theirs = script(perf());
    // The case itself: user chains of the leaf alone (its inline frame and
    // the function it is inlined into), not reaching main.
    let leaf_only = script_chains(&theirs)
        .filter(|frames| {
            frames.len() == 2
                && frames[0].contains("inlined_work")
                && frames[1].contains("caller_of_inline")
        })
        .count();
    assert!(leaf_only >= 20, "only {leaf_only} chains of the leaf alone");
    assert_eq_text(&theirs, &script(prec()));
}

/// The rbp guess past a stack copy too small to hold `[rbp]`: perf's
/// `access_mem` then asks the `[stack]` map's "file", which fails with a
/// positive status that libunwind takes for a successful read of 0, so the
/// guess goes on to a zero return address and perf shows the leaf and a
/// closing `ffffffffffffffff`. prec prints the same chains.
#[test]
fn rbp_guess_past_a_small_stack_copy_matches_perf_script() {
    zero_step_chains_match_perf_script("nocfi", "dwarf,16", &["300"], "spin_nocfi");
}

/// A return address the CFI finds and reads as 0 (the `zeroret` fixture
/// enters its hot function with 0 where the return address goes): framehop
/// ends the chain there as at `_start`, libunwind steps to pc 0 and perf
/// shows a closing `ffffffffffffffff`. prec prints perf's chains.
#[test]
fn zero_return_address_matches_perf_script() {
    zero_step_chains_match_perf_script("zeroret", "dwarf", &["0.3"], "spin_then_exit");
}

/// Records fixture `program` with `--call-graph MODE`; perf script must
/// show at least 20 chains of just `leaf` and libunwind's zero step, and
/// prec script the same text.
fn zero_step_chains_match_perf_script(program: &str, mode: &str, args: &[&str], leaf: &str) {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = perf_record_program(
        dir.join(format!("{program}.data")),
        &["--call-graph", mode],
        &fixture_bin(program),
        args,
    );
    let script = |mut tool: Command| stdout_of(tool.arg("script").arg("-i").arg(&data));
    let theirs = script(perf());
    let closed = script_chains(&theirs)
        .filter(|frames| {
            frames.len() == 2 && frames[0].contains(leaf) && frames[1].contains("ffffffffffffffff")
        })
        .count();
    assert!(
        closed >= 20,
        "{program}: only {closed} chains of {leaf} closed by a zero step"
    );
    assert_eq_text(&theirs, &script(prec()));
}

/// Three kinds of frames framehop alone gets wrong, one phase each of the
/// `oddframes` fixture: `cfa_expr_leaf` (its CFA is a DWARF expression,
/// which libunwind evaluates), `__vdso_clock_gettime` (`[vdso]` has no
/// file: its CFI comes from the symbolizer's image) and `remapped_spin` run
/// from a second mapping of the executable (perf's table lookup misses
/// there and guesses from rbp, while the first mapping unwinds normally),
/// and `epilogue_leaf` sampled after its `pop %rbp` (libunwind reads rbp
/// below the stack copy, and stops where the caller's CFA needs it).
#[test]
fn odd_frames_match_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = record_dwarf(&dir, "oddframes", &fixture_bin("oddframes"), &[]);
    let script = |tool: Command| {
        let mut tool = tool;
        stdout_of(tool.arg("script").arg("-i").arg(&data))
    };
    let (theirs, mine) = (script(perf()), script(prec()));
    // perf script's chains whose first frame (the line after the sample's
    // header) is in `leaf`.
    let chains_from = |leaf: &str| -> Vec<&str> {
        theirs
            .split("\n\n")
            .filter(|s| s.lines().nth(1).is_some_and(|l| l.contains(leaf)))
            .collect()
    };
    for leaf in ["cfa_expr_leaf", "__vdso_clock_gettime", "remapped_spin"] {
        let to_main = chains_from(leaf)
            .iter()
            .filter(|s| s.contains(" main+"))
            .count();
        assert!(
            to_main >= 20,
            "perf script has {to_main} chains from {leaf} to main"
        );
    }
    // perf loses rbp there and stops one frame up.
    let from_epilogue = chains_from("epilogue_leaf").len();
    assert!(
        from_epilogue >= 20,
        "perf script has {from_epilogue} chains from epilogue_leaf"
    );
    assert_eq_text(&theirs, &mine);
    let args = ["--no-children", "-g", "none", "--sort", "sym"];
    let report = report_stdio(prec(), &data, Input::File, &args);
    assert!(report.contains("[.] remapped_spin"), "{report}");
    if let Err(e) = compare_report(&data, Input::File, &args) {
        panic!("{e}");
    }
}

/// Scheduler samples of a parent asleep in glibc's `__vfork`, whose CFI
/// keeps the return address in rcx: unwound from the sampled registers
/// past it to `main`, as perf's libunwind does.
#[test]
fn vfork_frame_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let opts = ["-e", "sched:sched_switch", "--call-graph", "dwarf"];
    let data = perf_record_program(
        dir.join("vforker.data"),
        &opts,
        &fixture_bin("vforker"),
        &["100"],
    );
    let (mine, _) = unwind_file(&data);
    let in_vfork: Vec<&Unwound> = mine
        .iter()
        .filter(|u| u.comm == "vforker")
        .filter(|u| {
            u.frames
                .first()
                .is_some_and(|f| f.1.iter().any(|n| n.contains("vfork")))
        })
        .collect();
    assert!(
        in_vfork.len() >= 20,
        "only {} samples in __vfork",
        in_vfork.len()
    );
    let perf = perf_chains(&data);
    let (mut reach_main, mut equal) = (0, 0);
    for u in &in_vfork {
        let has_main = u.frames.iter().any(|f| f.1.iter().any(|n| n == "main"));
        reach_main += usize::from(has_main);
        let theirs = perf.get(&(u.tid, time_str(u.time)));
        let same = theirs.is_some_and(|t| {
            t.len() == u.frames.len() && t.iter().zip(&u.frames).all(|(a, b)| a.0 == b.0)
        });
        equal += usize::from(same);
    }
    assert!(
        pct(reach_main, in_vfork.len()) >= 95.0,
        "only {reach_main} of {} samples in __vfork reach main",
        in_vfork.len()
    );
    assert!(
        pct(equal, in_vfork.len()) >= 95.0,
        "only {equal} of {} chains from __vfork equal perf's",
        in_vfork.len()
    );
}

#[test]
fn dwarf_unwinding_matches_perf_script() {
    if !require_perf_record() {
        return;
    }
    let bin = fixture_bin("callgraph-nofp");
    let dir = tempdir();
    let data = record_dwarf(&dir, "dwarf", &bin, &["0.3"]);
    let c = compare(&data);
    report("fresh --call-graph dwarf recording", &c);
    assert!(c.samples >= 50, "too few samples: {}", c.samples);
    assert!(
        pct(c.reach_main, c.samples) >= 95.0,
        "only {:.1} % of the samples reach main",
        pct(c.reach_main, c.samples)
    );
    assert!(
        pct(c.equal_syms, c.samples) >= 95.0,
        "only {:.1} % of the chains equal perf's",
        pct(c.equal_syms, c.samples)
    );
}

#[test]
fn checked_in_fixture_reaches_main() {
    let data = own_fixture("callgraph-nofp-dwarf.data");
    let (mine, stats) = unwind_file(&data);
    eprintln!("{stats}");
    let ours: Vec<&Unwound> = mine.iter().filter(|u| u.comm == "callgraph-nofp").collect();
    assert!(!ours.is_empty());
    assert!(ours
        .iter()
        .all(|u| !u.frames.is_empty() || u.stop == Some(StopReason::NoRegisters)));
    assert_eq!(stats.samples as usize, mine.len());
    // The recorded binaries are the fixture programs; when they were rebuilt
    // differently here (other compiler), the comparison says so but only the
    // fresh recording above is authoritative.
    if !require_perf() {
        return;
    }
    let c = compare(&data);
    report("fixtures/perf/callgraph-nofp-dwarf.data (dwarf,4096)", &c);
    // perf reads the same (rebuilt) files, so the chains must still agree.
    assert_chains_equal("callgraph-nofp-dwarf.data", &c, 95.0);
}

fn le(words: &[u64]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

#[test]
fn bad_input_is_counted_not_fatal() {
    // A real process layout: the test binary itself mapped as an executable.
    let exe = std::env::current_exe().unwrap();
    let exe_s = exe.to_string_lossy().to_string();
    let mut machine = Machine::new();
    machine.comm(100, 100, b"victim");
    let exe_map = Mmap {
        pid: 100,
        tid: 100,
        addr: 0x5555_0000_0000,
        len: 0x100_0000,
        pgoff: 0,
        file_id: None,
        prot: 0,
        flags: 0,
        filename: exe_s.as_bytes(),
    };
    machine.mmap(misc::USER, 0, &exe_map);
    let mut sym = Symbolizer::new(SymbolizerOptions::default());
    let mut u = DwarfUnwinder::new();
    let mask = 0xff0fff_u64; // perf's dwarf register mask
    let nregs = mask.count_ones() as usize;
    let mut vals = vec![0u64; nregs];
    vals[6] = 0x7ffd_0000_1000; // bp
    vals[7] = 0x7ffd_0000_0000; // sp
    vals[8] = 0x5555_0000_1234; // ip
    let raw = le(&vals);
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    let cases: Vec<(u64, Vec<u8>, StackUser<'_>)> = vec![
        // abi 0: no registers
        (
            0,
            Vec::new(),
            StackUser {
                data: &[],
                dyn_size: 0,
            },
        ),
        // 32-bit abi
        (
            1,
            raw.clone(),
            StackUser {
                data: &garbage,
                dyn_size: 64,
            },
        ),
        // empty stack
        (
            2,
            raw.clone(),
            StackUser {
                data: &[],
                dyn_size: 0,
            },
        ),
        // stack copied but dyn_size 0
        (
            2,
            raw.clone(),
            StackUser {
                data: &garbage,
                dyn_size: 0,
            },
        ),
        // dyn_size larger than the copy
        (
            2,
            raw.clone(),
            StackUser {
                data: &garbage[..128],
                dyn_size: 1 << 40,
            },
        ),
        // garbage stack of full size
        (
            2,
            raw.clone(),
            StackUser {
                data: &garbage,
                dyn_size: 4096,
            },
        ),
        // truncated register dump (mask says more than is there)
        (
            2,
            raw[..40].to_vec(),
            StackUser {
                data: &garbage,
                dyn_size: 4096,
            },
        ),
    ];
    for (abi, raw, stack) in &cases {
        let regs = Regs {
            abi: *abi,
            mask,
            values: U64Slice::new(raw, Endian::Little),
        };
        let mut space = ThreadSpace::new(&mut machine, 100, 100);
        let r = u.unwind(100, &regs, stack, &mut space, &mut sym);
        assert!(r.frames.len() <= u.max_frames);
        if *abi == 2 && raw.len() == nregs * 8 && stack.dyn_size > 0 {
            assert_eq!(r.frames.first(), Some(&0x5555_0000_1234));
        }
    }
    // Random register values over a random stack, many times.
    let mut seed = 0x1234_5678_9abc_def0u64;
    for _ in 0..500 {
        let mut vals = vec![0u64; nregs];
        for v in vals.iter_mut() {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            *v = seed;
        }
        vals[8] = 0x5555_0000_0000 + (seed & 0xff_ffff);
        vals[7] = seed & 0x7fff_ffff_fff8;
        let raw = le(&vals);
        let regs = Regs {
            abi: 2,
            mask,
            values: U64Slice::new(&raw, Endian::Little),
        };
        let stack = StackUser {
            data: &garbage,
            dyn_size: seed % 5000,
        };
        let mut space = ThreadSpace::new(&mut machine, 100, 100);
        let r = u.unwind(100, &regs, &stack, &mut space, &mut sym);
        assert!(r.frames.len() <= u.max_frames);
        assert_eq!(r.frames.is_empty(), stack.dyn_size == 0);
    }
    let s = u.stats();
    eprintln!("{s} {s:?}");
    assert_eq!(s.samples, cases.len() as u64 + 500);
    assert_eq!(
        s.failed - s.empty_stack,
        3,
        "abi 0, abi 1 and the short register dump"
    );
    assert!(s.empty_stack >= 2);
    assert!(s.bad_stack_size >= 1);
    assert_eq!(
        s.complete + s.truncated + s.failed + s.stopped,
        s.samples,
        "every sample is counted once"
    );
}
