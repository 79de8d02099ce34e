//! `prec report` sort keys of the sample's other values (weights, the
//! transaction, page sizes, the address) and `--mem-mode` with its memory
//! keys, each compared with Linux perf 6.1's whole stdout (except the
//! random `# (Tip:` line) on page-fault recordings that perf and prec make
//! here with `-d` (a software event's weight and data source are empty:
//! perf still prints them), and on quipper's Intel load-latency file with
//! real weights and data sources.
//!
//! Without perf the tests print why and pass, except under `CI=true`.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// A program that faults on pages of its own, of its libraries and of
/// its heap: gzip compressing the prec binary to /dev/null.
fn workload() -> Vec<String> {
    vec![
        "gzip".into(),
        "-1".into(),
        "-c".into(),
        prec_bin().to_string_lossy().into_owned(),
    ]
}

/// Records the workload with perf and with prec, with `opts` after
/// `-e page-faults -c 1`.
fn record_page_faults(dir: &Path, name: &str, opts: &[&str]) -> [PathBuf; 2] {
    let argv = workload();
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let mut all = vec!["-e", "page-faults", "-c", "1"];
    all.extend_from_slice(opts);
    record_both(dir, name, &all, &argv)
}

fn compare_all(files: &[PathBuf], runs: &[&[&str]]) {
    let compare = |file: &Path, args: &[&str]| compare_report(file, Input::File, args);
    assert_no_failures(&compare_each(files, runs, |_, _| None, compare));
}

/// The keys of the sample's values, alone, in combinations with comm, dso
/// and sym, with -n; `p_stage_cyc` is one perf 6.1 drops from `--sort` on
/// x86 but shows with `-F`.
#[test]
fn weight_and_address_keys_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut files = Vec::new();
    files.extend(record_page_faults(&dir, "weight", &["-d", "-W"]));
    files.extend(record_page_faults(
        &dir,
        "page-sizes",
        &["-d", "--data-page-size", "--code-page-size"],
    ));
    compare_all(
        &files,
        &[
            &["--sort", "weight"],
            &["--sort", "local_weight"],
            &["--sort", "ins_lat"],
            &["--sort", "local_ins_lat"],
            &["--sort", "p_stage_cyc"],
            &["--sort", "comm,local_p_stage_cyc,dso"],
            &["-F", "overhead,p_stage_cyc,local_p_stage_cyc"],
            &["--sort", "transaction"],
            &["--sort", "addr"],
            &["--sort", "code_page_size"],
            &["--sort", "comm,weight,dso,sym", "-n"],
            &["--sort", "addr,sym"],
            &["--sort", "sym,code_page_size", "-n"],
            &["--sort", "dso,local_weight,transaction,addr"],
            // perf's prefix match of key names.
            &["--sort", "weig,local,code"],
        ],
    );
}

/// With call graphs and children: a chain entry's `addr` is its raw
/// address mapped once more (perf's fill_callchain_info), and the address
/// comparison wraps between kernel and user addresses.
#[test]
fn value_keys_with_call_graphs_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let files = record_page_faults(&dir, "graphs", &["-d", "-W", "-g"]);
    compare_all(
        &files,
        &[
            &["--sort", "addr"],
            &["--sort", "addr,sym", "--children"],
            &["--sort", "comm,addr", "-g", "caller"],
            &["--sort", "weight,sym"],
            &["--sort", "sym,local_weight", "-n", "--no-children"],
            &["--sort", "local_ins_lat,dso"],
        ],
    );
}

/// `--mem-mode`: perf's default memory sort order and its header lines,
/// each memory key, combinations, -n and call graphs (caller order, no
/// children).
#[test]
fn mem_mode_matches_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let mut files = Vec::new();
    files.extend(record_page_faults(&dir, "mem", &["-d", "-W"]));
    files.extend(record_page_faults(
        &dir,
        "mem-sizes",
        &["-d", "--data-page-size", "--phys-data"],
    ));
    let mut runs: Vec<Vec<&str>> = vec![vec!["--mem-mode"], vec!["--mem-mode", "-n"]];
    for key in [
        "symbol_daddr",
        "symbol_iaddr",
        "dso_daddr",
        "locked",
        "tlb",
        "mem",
        "snoop",
        "phys_daddr",
        "data_page_size",
        "blocked",
        "comm,dso,sym,mem",
        "symbol_daddr,dso",
        "dso_daddr,sym",
        "data_page_size,phys_daddr,symbol_daddr",
        "comm,symbol_iaddr,weight",
    ] {
        runs.push(vec!["--mem-mode", "--sort", key]);
    }
    let runs: Vec<&[&str]> = runs.iter().map(Vec::as_slice).collect();
    compare_all(&files, &runs);

    let graphs = record_page_faults(&dir, "mem-g", &["-d", "-W", "-g"]);
    compare_all(
        &graphs,
        &[
            &["--mem-mode"],
            &["--mem-mode", "--no-children"],
            &["--mem-mode", "-g", "callee"],
            &["--mem-mode", "--sort", "sym,mem", "-n"],
        ],
    );
}

/// perf's non-strict sort order: `--sort +KEYS` puts the keys after the
/// default order of the mode (memory, branch, ordinary), and `ipc_null`
/// joins only a given text with "symbol" in it.
#[test]
fn plus_sort_orders_match_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let [perf_file, prec_file] = record_page_faults(&dir, "plus", &["-d", "-W", "-g"]);
    let runs: &[&[&str]] = &[
        &["--sort", "+weight"],
        &["--sort", "+pid,cpu", "--no-children"],
        &["--sort", "+sym", "-g", "none"],
        &["--mem-mode", "--sort", "+phys_daddr"],
        &["--mem-mode", "--sort", "+symbol_iaddr"],
    ];
    compare_all(&[perf_file.clone(), prec_file], runs);
    let branch = quipper_dir().join("perf.data.branch-4.14");
    compare_all(&[branch], &[&["--sort", "+cycles"]]);
    // Data files mapped by the program (ld.so.cache) are no binaries to
    // complain about.
    let out = run(prec()
        .args(["report", "--stdio", "--mem-mode", "-i"])
        .arg(&perf_file));
    let notes = String::from_utf8_lossy(&out.stderr);
    assert!(!notes.contains("cannot parse"), "{notes}");
}

/// Memory mode in a pipe: perf records to stdout, both read it from
/// stdin.
#[test]
fn mem_mode_pipe_matches_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = dir.join("pipe.data");
    let out = fs::File::create(&data).expect("create pipe.data");
    let argv = workload();
    let status = perf()
        .args(["record", "-q", "-d", "-W", "-e", "page-faults", "-c", "1"])
        .args(["-o", "-", "--"])
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::null())
        .status()
        .expect("run perf record");
    assert!(status.success(), "perf record -o - failed: {status}");
    let mut failures = Vec::new();
    for args in [
        &["--mem-mode"][..],
        &["--mem-mode", "--sort", "dso_daddr,tlb"],
        &["--sort", "weight,addr,sym"],
    ] {
        if let Err(e) = compare_report(&data, Input::Pipe, args) {
            failures.push(e);
        }
    }
    assert_no_failures(&failures);
}

/// quipper's Intel load-latency samples: real weights (the periods of
/// memory mode) and data sources of several levels.
#[test]
fn mem_mode_weight_struct_matches_perf() {
    if !require_perf() {
        return;
    }
    let file = quipper_dir().join("perf.data.weight_struct");
    let mut runs: Vec<Vec<&str>> = vec![vec!["--mem-mode"], vec!["--mem-mode", "-n"]];
    for key in [
        "symbol_daddr",
        "symbol_iaddr",
        "dso_daddr",
        "locked",
        "tlb",
        "mem",
        "snoop",
        "weight",
        "ins_lat",
        "comm,dso,sym,mem",
    ] {
        runs.push(vec!["--mem-mode", "--sort", key]);
    }
    for key in [
        "weight",
        "local_weight",
        "local_ins_lat",
        "addr",
        "comm,weight",
    ] {
        runs.push(vec!["--sort", key]);
    }
    let runs: Vec<&[&str]> = runs.iter().map(Vec::as_slice).collect();
    compare_all(&[file], &runs);
}

/// Branch mode's weight is the cycles of each stack's first branch (perf
/// reads `bi->flags`, not the entry's), its address the target's.
#[test]
fn weight_in_branch_mode_matches_perf() {
    if !require_perf() {
        return;
    }
    let files: Vec<PathBuf> = ["perf.data.branch-4.14", "perf.data.branch_stack_spec"]
        .iter()
        .map(|f| quipper_dir().join(f))
        .collect();
    compare_all(
        &files,
        &[
            &["--sort", "weight,addr", "-g", "none"],
            &["--sort", "cycles,local_weight,addr"],
        ],
    );
}

/// perf refuses branch keys outside branch mode and memory keys outside
/// memory mode (`Invalid --sort key`), and memory mode on a file without
/// data sources; prec refuses them too, with a non-zero exit.
#[test]
fn mode_keys_refused_like_perf() {
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let [plain, _] = record_page_faults(&dir, "plain", &[]);
    let [with_src, _] = record_page_faults(&dir, "src", &["-d"]);
    let refused = |file: &Path, args: &[&str], perf_says: &str| {
        let theirs = perf()
            .args(["report", "--stdio", "-i"])
            .arg(file)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("run perf report");
        let text = String::from_utf8_lossy(&theirs.stderr);
        assert!(
            text.contains(perf_says),
            "perf report {args:?} did not say {perf_says:?}:\n{text}"
        );
        let ours = run_fail(
            Command::new(prec_bin())
                .args(["report", "--stdio", "-i"])
                .arg(file)
                .args(args),
        );
        let text = String::from_utf8_lossy(&ours.stderr);
        assert!(
            text.contains(perf_says),
            "prec report {args:?} did not say {perf_says:?}:\n{text}"
        );
    };
    for key in [
        "dso_from",
        "symbol_to",
        "cycles",
        "mem",
        "symbol_daddr",
        "tlb",
    ] {
        refused(
            &with_src,
            &["--sort", key],
            &format!("Invalid --sort key: `{key}'"),
        );
    }
    refused(
        &with_src,
        &["--mem-mode", "--sort", "comm,dso_to"],
        "Invalid --sort key: `dso_to'",
    );
    refused(
        &plain,
        &["--mem-mode"],
        "Selected --mem-mode but no mem data. Did you call perf record without -d?",
    );
}
