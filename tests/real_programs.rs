//! perf and prec on real programs, recorded live.
//!
//! Each test runs a program installed on the machine (gzip, bzip2, xz,
//! perl, python3, sh, a C program compiled with gcc) under `perf record` and
//! under `prec record` with one of perf's recording modes, then checks, for
//! both files, that `prec report --stdio` prints what `perf report --stdio`
//! prints (whole text but perf's random tip line) for several `--sort` keys
//! and options, and that `prec script` prints what `perf script` prints.
//! perf must read prec's files without a word on stderr, and the two
//! recordings of the same run must agree on the big rows (a loose,
//! statistical check: timing differs from run to run).
//!
//! These programs found bugs the fixture programs did not: PLT entries
//! under an `_init` that perf 6.1 extends over `.plt` (named after perf's
//! symbol-tree walk), the same in an lld-linked program (whose `.plt` has
//! no entry size), `--percent-limit` cutting the call graph, Rust v0 and
//! C++ lambda names.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::*;

/// Report options compared on every file (perf's default sort first).
const REPORT_RUNS: &[&[&str]] = &[
    &[],
    &["--sort", "comm,dso,sym", "-n"],
    &["--sort", "dso,sym"],
    &["--sort", "comm"],
    &["--sort", "pid"],
    &["--sort", "dso"],
    &["--no-children"],
    &["-g", "none"],
    &["--percent-limit", "1"],
];

const SCRIPT_RUNS: &[&[&str]] = &[&[], &["-F", "comm,tid,time,ip,sym,dso"]];

/// The absolute path of `program` on the PATH, or `None` (the test is then
/// skipped with a message; CI must have it). Absolute, because perf puts
/// its own directories first on the workload's PATH (`setup_path`), so a
/// bare name may find another program under perf than under prec.
fn which(program: &str) -> Option<String> {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|p| p.starts_with('/'));
    if found.is_none() {
        if is_ci() {
            panic!("{program} is required when CI=true");
        }
        eprintln!("SKIPPED: {program} not installed");
    }
    found
}

/// `size` bytes that do not compress well (an xorshift stream), so the
/// compressors work for a while.
fn noise_file(dir: &Path, size: usize) -> PathBuf {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut data = Vec::with_capacity(size + 8);
    while data.len() < size {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        // Half the bytes from a small alphabet: some work for the matchers.
        let b = x.to_le_bytes();
        data.extend_from_slice(&b[..4]);
        data.extend(b[4..].iter().map(|c| b'a' + c % 4));
    }
    data.truncate(size);
    let path = dir.join("noise.bin");
    std::fs::write(&path, data).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    path
}

/// perf's stderr lines for `perf report -i FILE`.
fn perf_report_stderr(file: &Path) -> Result<Vec<String>, String> {
    let o = perf()
        .args(["report", "--stdio", "-i"])
        .arg(file)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run perf report: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "perf report -i {} failed: {}",
            file.display(),
            o.status
        ));
    }
    Ok(String::from_utf8_lossy(&o.stderr)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// `perf report` says nothing about prec's file that it does not say about
/// its own recording of the same run. Lost events (system-wide tracepoints
/// on a busy machine) are the machine's load, not the file's format: their
/// counts differ from run to run, so those lines are not compared.
fn perf_reads_clean(perf_file: &Path, prec_file: &Path) -> Result<(), String> {
    let load = |l: &String| l.contains(" lost ") || l.contains("Check IO/CPU overload");
    let own = perf_report_stderr(perf_file)?;
    let lines = perf_report_stderr(prec_file)?;
    // perf heads that report with a bare "Warning:" line.
    let lost = lines.iter().any(load);
    let new: Vec<String> = lines
        .into_iter()
        .filter(|l| !own.contains(l) && !load(l) && (!lost || l != "Warning:"))
        .collect();
    if new.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "perf report -i {} on stderr: {new:#?}",
            prec_file.display()
        ))
    }
}

/// Rows of `perf report --sort KEYS`: the row's key values → percent.
fn overhead_rows(file: &Path, keys: &str) -> BTreeMap<String, f64> {
    let text = report_stdio(
        perf(),
        file,
        Input::File,
        &["--sort", keys, "--no-children"],
    );
    let mut rows = BTreeMap::new();
    for l in text.lines() {
        let t = l.trim_start();
        if t.starts_with('#') {
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

/// Both recordings are of the same kind of run: a process with ≥ 25 % in
/// one has ≥ 10 % in the other, and every `comm,dso` row with ≥ 25 % in one
/// is in the other. How a process's time splits between its binary and
/// libc is not compared: for the PLT loop it swings between 8 % and 63 %
/// from one run of the same binary to the next (code alignment under ASLR).
fn similar_runs(perf_file: &Path, prec_file: &Path) -> Result<(), String> {
    for keys in ["comm", "comm,dso"] {
        let a = overhead_rows(perf_file, keys);
        let b = overhead_rows(prec_file, keys);
        let least = if keys == "comm" { 10.0 } else { 0.0 };
        for (x, y, who) in [(&a, &b, "perf"), (&b, &a, "prec")] {
            for (k, &p) in x.iter().filter(|(_, &p)| p >= 25.0) {
                let q = y.get(k).copied().unwrap_or(0.0);
                if q < least || !y.contains_key(k) {
                    return Err(format!(
                        "--sort {keys} row {k:?}: {p:.2}% in {who}'s recording, {q:.2}% in the other\n{a:?}\n{b:?}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// All comparisons of one case: for both recordings, every report and script
/// option set; perf reads prec's file cleanly; the runs look alike.
fn check(files: &[PathBuf; 2], reports: &[&[&str]]) {
    let mut failures = compare_each(
        files,
        reports,
        |_, _| None,
        |f, args| {
            let report = |tool| with_address_ties_sorted(&report_stdio(tool, f, Input::File, args));
            same_text(
                &format!("{} {args:?}", f.display()),
                &report(perf()),
                &report(prec()),
            )
        },
    );
    failures.extend(compare_each(
        files,
        SCRIPT_RUNS,
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    if let Err(e) = perf_reads_clean(&files[0], &files[1]) {
        failures.push(e);
    }
    if let Err(e) = similar_runs(&files[0], &files[1]) {
        failures.push(e);
    }
    assert_no_failures(&failures);
}

/// Writes `source` to DIR/OUT.c and compiles it to DIR/OUT with `flags`,
/// then `libs` after the source.
fn compile_c(
    gcc: &str,
    dir: &Path,
    source: &str,
    out: &str,
    flags: &[&str],
    libs: &[&str],
) -> PathBuf {
    let src = dir.join(format!("{out}.c"));
    std::fs::write(&src, source).expect("write source");
    let exe = dir.join(out);
    run(Command::new(gcc)
        .args(flags)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .args(libs));
    exe
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

#[test]
fn gzip_default_mode() {
    let Some(gzip) = which("gzip").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let data = noise_file(&dir, 6 << 20);
    let files = record_both(&dir, "gzip", &[], &[&gzip, "-c", "-6", path_str(&data)]);
    check(&files, REPORT_RUNS);
}

/// `--call-graph dwarf` of a stripped program, by source line: a children
/// entry's srcline is its node's for a frame of an inline expansion, else
/// perf computes it from the raw address (`gzip[55…]`, the binary has no
/// line table). Not compared: `--no-inline`, where perf's failed lookups
/// of raw addresses in libc pass its limit (A2L_FAIL_LIMIT) and libc's
/// later srclines become `sym+off`; and keys before srcline, whose column
/// width follows the srclines perf computed while comparing.
#[test]
fn dwarf_srcline_of_a_stripped_program() {
    let Some(gzip) = which("gzip").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let data = noise_file(&dir, 3 << 20);
    let file = dir.join("gzip-dwarf.data");
    record(
        perf(),
        &file,
        &["--call-graph", "dwarf,4096"],
        &[&gzip, "-c", "-1", path_str(&data)],
    );
    let runs: &[&[&str]] = &[&["--sort", "srcline"]];
    assert_no_failures(&compare_each(
        &[file],
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
}

/// `--sort sym` without a dso key: perf 6.1's comparator compares two
/// unresolved entries by address and others by DSO first, so its tree
/// splits some symbols into two rows (in about two runs of three of this
/// workload): the stripped cc1, sort and md5sum with libc give it
/// unresolved addresses in several DSOs.
#[test]
fn sort_pipeline_symbol_keys() {
    let (Some(sh), Some(_), Some(_), Some(_)) =
        (which("sh"), which("gcc"), which("sort"), which("md5sum"))
    else {
        return;
    };
    if !require_perf_record() {
        return;
    }
    let dir = tempdir();
    let data = noise_file(&dir, 6 << 20);
    let source = dir.join("q.c");
    std::fs::write(
        &source,
        "#include <stdlib.h>\nstatic int cmp(const void *a, const void *b) \
         { return *(const int *)a - *(const int *)b; }\n\
         int main(void) { int v[64]; for (int i = 0; i < 64; i++) v[i] = rand(); \
         qsort(v, 64, sizeof v[0], cmp); return v[0] & 1; }\n",
    )
    .expect("write q.c");
    let pipeline = format!(
        "gcc -O2 -c {0} -o {0}.o; sort {1} | md5sum",
        path_str(&source),
        path_str(&data)
    );
    let files = record_both(&dir, "pipeline", &[], &[&sh, "-c", &pipeline]);
    check(
        &files,
        &[
            &["--sort", "sym"],
            &["--sort", "comm,sym", "-n"],
            &["--sort", "pid,sym"],
            &["-F", "overhead,sym,comm"],
            &["--sort", "sym", "--dsos", "libc.so.6"],
            &["--sort", "sym,dso"],
            // --hierarchy: level-wise collapse of the same entries.
            &["--hierarchy"],
            &["--hierarchy", "--sort", "sym"],
            &["--hierarchy", "--sort", "pid,sym", "--dsos", "libc.so.6"],
        ],
    );
}

#[test]
fn bzip2_two_events() {
    let Some(bzip2) = which("bzip2").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let data = noise_file(&dir, 2 << 20);
    let files = record_both(
        &dir,
        "bzip2",
        &["-e", "cpu-clock,page-faults"],
        &[&bzip2, "-c", path_str(&data)],
    );
    check(&files, REPORT_RUNS);
}

#[test]
fn xz_threads_user_only() {
    let Some(xz) = which("xz").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let data = noise_file(&dir, 3 << 20);
    let files = record_both(
        &dir,
        "xz",
        &["-e", "cpu-clock:u"],
        &[&xz, "-c", "-T2", "-3", path_str(&data)],
    );
    check(&files, REPORT_RUNS);
}

#[test]
fn perl_fixed_period() {
    let Some(perl) = which("perl").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let files = record_both(
        &dir,
        "perl",
        &["-c", "100000"],
        &[
            &perl,
            "-e",
            "my %h; for my $i (1..250000) { $h{$i % 1000} .= 'x'; my @a = sort { $a <=> $b } (1..5) } print scalar(keys %h)",
        ],
    );
    check(&files, REPORT_RUNS);
}

/// The python3 interpreter itself, not a wrapper script (pyenv's shims),
/// when there is one and perf can record.
fn python_interpreter() -> Option<String> {
    let python = which("python3").filter(|_| require_perf_record())?;
    let exe = stdout_of(Command::new(python).args(["-c", "import sys; print(sys.executable)"]));
    Some(exe.trim().to_string())
}

/// libpython's PLT lies under `_init` extended by perf's fix-ups: perf 6.1
/// names some entries `_init` and others `PyObject_Malloc@plt`, as its
/// symbol-tree walk meets them.
#[test]
fn python_loop_default_mode() {
    let Some(python) = python_interpreter() else {
        return;
    };
    let dir = tempdir();
    let files = record_both(
        &dir,
        "python",
        &[],
        &[
            &python,
            "-c",
            "import json, re\ns = 0\nfor i in range(150000):\n    s += len(json.dumps({'a': i, 'b': [i] * 3}))\n    re.match(r'(\\d+)x', str(i) + 'x')\nprint(s)",
        ],
    );
    check(&files, REPORT_RUNS);
}

/// Call-graph keys on an interpreter without frame pointers: short chains
/// through the PLT, glibc with line information, libpython and python
/// without. perf's callchain srclines differ from its `--sort srcline`
/// ones: no symbol name where no line was found (nothing with `-g
/// srcline`, `+OFFSET` with `-g address`).
#[test]
fn python_call_graph_keys() {
    let Some(python) = python_interpreter() else {
        return;
    };
    let dir = tempdir();
    let files = record_both(
        &dir,
        "python-g",
        &["-g"],
        &[
            &python,
            "-c",
            "s = 0\nfor i in range(300000):\n    s += len(str(i) * 3) + sum([i, i])\nprint(s)",
        ],
    );
    check(
        &files,
        &[
            &["-g", "srcline"],
            &["-g", "srcline", "--sort", "dso"],
            &["--no-children", "-g", "srcline"],
            &["-g", "address"],
            &["-g", "address,0", "--sort", "dso"],
        ],
    );
}

/// Many short children (fork + exec) with call graphs; `--percent-limit`
/// also cuts the graphs.
#[test]
fn shell_forks_with_call_graph() {
    let Some(sh) = which("sh").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let files = record_both(
        &dir,
        "sh",
        &["-g"],
        &[
            &sh,
            "-c",
            "i=0; while [ $i -lt 120 ]; do /bin/true; echo $i | cat > /dev/null; i=$((i+1)); done",
        ],
    );
    check(
        &files,
        &[
            &[],
            &["--sort", "comm,dso,sym"],
            &["--sort", "comm"],
            &["--sort", "dso"],
            // Every call-graph node: libc's children mix symbols with
            // unresolved libc addresses of other processes' mappings,
            // where perf's walk can add a second node for one function.
            &["--sort", "dso", "-g", "graph,0"],
            &["--sort", "dso", "-g", "srcline"],
            &["--sort", "dso", "-g", "address"],
            &["--no-children"],
            &["-g", "none"],
            &["--percent-limit", "1"],
            &["--percent-limit", "2", "--no-children"],
        ],
    );
}

const PLT_LOOP_C: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
int main(void) {
    volatile size_t t = 0;
    char buf[8] = "abc";
    for (long i = 0; i < 15000000; i++) {
        t += strlen(buf);
        t += (size_t)toupper((int)i & 0x7f);
        t += (size_t)atoi(buf + 3);
        t += (size_t)abs((int)i - 5);
    }
    printf("%zu\n", (size_t)t);
    return 0;
}
"#;

/// A gcc -O2 program spending time in its PLT stubs: perf 6.1 shows them
/// as `_init` (extended over `.plt`, met first by the tree walk).
#[test]
fn gcc_program_in_plt_stubs() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let exe = compile_c(
        &gcc,
        &dir,
        PLT_LOOP_C,
        "pltloop",
        &["-O2", "-g", "-fno-builtin"],
        &[],
    );
    let files = record_both(&dir, "plt", &["-F", "999"], &[path_str(&exe)]);
    let rows = report_stdio(perf(), &files[0], Input::File, &[]);
    if !rows.contains("[.] _init") {
        eprintln!("note: no sample in the PLT stubs this time:\n{rows}");
    }
    check(&files, REPORT_RUNS);
}

/// A C++ lambda called through `std::function`, built -O0: the template
/// instances for the lambda's local type have only a `DW_AT_name` in their
/// DWARF (`_M_invoke`), no linkage name. binutils' addr2line, which perf
/// 6.1 asks for inline frames, then names the function after its ELF
/// symbol, so perf shows `std::_Function_handler<...>::_M_invoke` as a
/// function, not `_M_invoke (inlined)`.
#[test]
fn cpp_lambda_without_linkage_names_in_dwarf_call_graph() {
    let Some(gxx) = which("g++").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    // g++ compiles a `.c` file as C++.
    let exe = compile_c(
        &gxx,
        &dir,
        "#include <functional>\n#include <cstdio>\n\
         int main() { int k = 3; std::function<int(int)> f = [&](int x) { return x + k; };\n\
         long z = 0; for (int i = 0; i < 10000000; i++) z += f(i);\n\
         std::printf(\"%ld\\n\", z); }\n",
        "lambda",
        &["-O0", "-g"],
        &[],
    );
    let files = record_both(
        &dir,
        "lambda",
        &["--call-graph", "dwarf", "-F", "999"],
        &[path_str(&exe)],
    );
    let rows = report_stdio(perf(), &files[0], Input::File, &["--no-children"]);
    assert!(
        rows.contains("_M_invoke") && !rows.contains("_M_invoke (inlined)"),
        "perf names the lambda's callers after their symbols:\n{rows}"
    );
    check(&files, REPORT_RUNS);
}

/// A function inlined into a thread's lambda, built -O2: the inlined
/// `build` has no linkage name and its code starts after its symbol
/// `std::thread::_State_impl<...>::_M_run`. binutils names it after the
/// symbol only the first time it looks it up; perf shows `build (inlined)`
/// at every later address, and prec does the same.
#[test]
fn function_inlined_into_a_thread_lambda_in_dwarf_call_graph() {
    let Some(gxx) = which("g++").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let exe = compile_c(
        &gxx,
        &dir,
        "#include <thread>\n#include <vector>\n#include <map>\n#include <string>\n\
         #include <cstdio>\n\
         static std::map<std::string, int> build(int n) {\n\
           std::map<std::string, int> m;\n\
           for (int i = 0; i < n; i++) m[std::to_string(i * 7919)] = i;\n\
           return m; }\n\
         int main() { std::vector<std::thread> t; long tot[2] = {0};\n\
           for (int k = 0; k < 2; k++) t.emplace_back([k, &tot] {\n\
             for (int r = 0; r < 4; r++) tot[k] += build(60000).size(); });\n\
           for (auto &x : t) x.join(); std::printf(\"%ld\\n\", tot[0] + tot[1]); }\n",
        "thread_lambda",
        &["-O2", "-g", "-pthread"],
        &[],
    );
    let files = record_both(
        &dir,
        "thread_lambda",
        &["--call-graph", "dwarf"],
        &[path_str(&exe)],
    );
    let script = stdout_of(perf().arg("script").arg("-i").arg(&files[0]));
    assert!(
        script.contains(" build+0x") && script.contains("_M_run+0x"),
        "perf names the inlined function both ways:\n{script}"
    );
    assert_no_failures(&compare_each(
        &files,
        &[&["-F", "+srcline"]],
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    check(&files, REPORT_RUNS);
}

/// A function template whose template arguments end in two empty
/// parameter packs: perf (libiberty) prints `hot<int, 0>`, each empty pack
/// taking back its comma.
#[test]
fn cpp_template_with_trailing_empty_packs() {
    let Some(gxx) = which("g++").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let exe = compile_c(
        &gxx,
        &dir,
        "#include <cstdio>\n\
         template <typename... A> struct P {};\n\
         template <int... N> struct I {};\n\
         template <typename... T, int... N, typename... U, typename... V>\n\
         __attribute__((noinline)) long hot(P<T...>, I<N...>, P<U...>, P<V...>, long n) {\n\
         long s = 0; for (long i = 0; i < n; i++) s += i * 3 % 7; return s; }\n\
         int main() { long z = 0;\n\
         for (int r = 0; r < 200; r++) z += hot(P<int>{}, I<0>{}, P<>{}, P<>{}, 1000000L);\n\
         std::printf(\"%ld\\n\", z); }\n",
        "packs",
        &["-O1", "-g"],
        &[],
    );
    let files = record_both(&dir, "packs", &[], &[path_str(&exe)]);
    let rows = report_stdio(perf(), &files[0], Input::File, &["--sort", "sym"]);
    assert!(
        rows.contains("[.] hot<int, 0>\n") || rows.contains("[.] hot<int, 0> "),
        "{rows}"
    );
    check(&files, REPORT_RUNS);
}

/// A directory with `ld.lld` (Rust's own `rust-lld`, which links Rust
/// programs by default), for `gcc -B DIR -fuse-ld=lld`.
fn lld_dir(dir: &Path) -> PathBuf {
    let sysroot = stdout_of(Command::new("rustc").args(["--print", "sysroot"]));
    let host = stdout_of(Command::new("rustc").args(["--print", "host-tuple"]));
    let lld = Path::new(sysroot.trim())
        .join("lib/rustlib")
        .join(host.trim())
        .join("bin/rust-lld");
    assert!(lld.exists(), "no rust-lld at {}", lld.display());
    let bin = dir.join("lld-bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    std::os::unix::fs::symlink(&lld, bin.join("ld.lld")).expect("symlink ld.lld");
    bin
}

/// The PLT program linked by lld, as Rust programs are: `.plt` comes last
/// in the text segment after `.fini`, and has no entry size, so perf 6.1
/// synthesizes every PLT symbol zero-sized at the section's start; its
/// tree walk then misses the `_fini` extended over `.plt`, and PLT samples
/// stay raw addresses.
#[test]
fn lld_linked_program_in_plt_stubs() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let lld = lld_dir(&dir);
    let flags = [
        "-O2",
        "-g",
        "-fno-builtin",
        "-fuse-ld=lld",
        "-B",
        path_str(&lld),
    ];
    let exe = compile_c(&gcc, &dir, PLT_LOOP_C, "pltloop-lld", &flags, &[]);
    let files = record_both(&dir, "plt-lld", &["-F", "9999"], &[path_str(&exe)]);
    let rows = report_stdio(perf(), &files[0], Input::File, &["--sort", "dso,sym"]);
    if !rows
        .lines()
        .any(|l| l.contains("pltloop-lld") && l.contains("[.] 0x"))
    {
        eprintln!("note: no sample in the PLT stubs this time:\n{rows}");
    }
    check(&files, REPORT_RUNS);
}

/// `-p PID` of a process that was running before the recording (its maps
/// come from /proc).
#[test]
fn attach_to_running_process() {
    let Some(perl) = which("perl").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let mut files = Vec::new();
    for (tool, name) in [(perf(), "perf"), (prec(), "prec")] {
        let mut child = Command::new(&perl)
            .args([
                "-e",
                "my $s = 0; while (1) { $s += length(sprintf('%d', $s)) }",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("start perl");
        // Let it start and map its libraries.
        std::thread::sleep(std::time::Duration::from_millis(200));
        let pid = child.id().to_string();
        let out = dir.join(format!("{name}.pid.data"));
        let mut t = tool;
        t.args(["record", "-q", "-p", &pid, "-o"])
            .arg(&out)
            .args(["--", "sleep", "0.6"])
            .stdin(Stdio::null())
            .stdout(Stdio::null());
        let o = t.output().expect("record -p");
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            o.status.success(),
            "{name} record -p failed: {}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        files.push(out);
    }
    let files: [PathBuf; 2] = [files[0].clone(), files[1].clone()];
    check(&files, REPORT_RUNS);
}

/// An unprivileged user (nobody) records its own program into a directory
/// only nobody may write (under the system temp directory, which nobody can
/// reach).
#[test]
fn unprivileged_user() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let Some(gzip) = which("gzip").filter(|_| require_perf_record()) else {
        return;
    };
    let Some(runuser) = which("runuser") else {
        return;
    };
    // Only root can run a program as another user.
    if std::fs::metadata("/proc/self").map_or(true, |m| m.uid() != 0) {
        eprintln!("SKIPPED: not root, cannot run as nobody");
        return;
    }
    let base = std::env::temp_dir().join(format!("prec-real-programs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir(&base).expect("mkdir");
    std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let data = noise_file(&base, 4 << 20);
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = base.join("out");
    std::fs::create_dir(&out).expect("mkdir");
    std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    std::os::unix::fs::chown(&out, Some(65534), Some(65534)).expect("chown nobody");
    let mut files = Vec::new();
    for (bin, name) in [(perf_path(), "perf"), (prec_bin(), "prec")] {
        let file = out.join(format!("{name}.nobody.data"));
        let o = Command::new(&runuser)
            .args(["-u", "nobody", "--"])
            .arg(&bin)
            .args(["record", "-q", "-o"])
            .arg(&file)
            .args(["--", &gzip, "-c", path_str(&data)])
            .env("PERF_CONFIG", "/dev/null")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .output()
            .expect("runuser");
        assert!(
            o.status.success(),
            "{name} record as nobody failed: {}\n{}",
            o.status,
            String::from_utf8_lossy(&o.stderr)
        );
        let owner = std::fs::metadata(&file).map(|m| m.uid());
        assert_eq!(owner.ok(), Some(65534), "{name}'s file is nobody's");
        // perf reads only files of its own user (or -f).
        std::os::unix::fs::chown(&file, Some(0), Some(0)).expect("chown root");
        files.push(file);
    }
    let files: [PathBuf; 2] = [files[0].clone(), files[1].clone()];
    check(
        &files,
        &[&[], &["--sort", "comm,dso,sym", "-n"], &["--sort", "dso"]],
    );
    let _ = std::fs::remove_dir_all(&base);
}

const RELOAD_MAIN_C: &str = r#"
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
    if (argc < 3) return 2;
    for (int round = 0; round < 6; round++) {
        void *h = dlopen(argv[1 + round % 2], RTLD_NOW);
        if (!h) { fprintf(stderr, "%s\n", dlerror()); return 1; }
        unsigned long (*spin)(unsigned long) =
            (unsigned long (*)(unsigned long))dlsym(h, "spin");
        volatile unsigned long r = spin(40000000UL);
        (void)r;
        dlclose(h);
    }
    return 0;
}
"#;

/// A library whose hot code has the same layout in both variants, so that
/// the second, loaded where the first was unloaded, runs at the same
/// addresses under another name. The multipliers differ (both need an
/// `imul` with a 32-bit immediate) so that the build-ids differ: perf takes
/// the symbols of a known build-id from its cache.
fn reload_lib_c(name: &str, multiplier: u32) -> String {
    format!(
        "static __attribute__((noinline)) unsigned long work_{name}(unsigned long i, unsigned long s) \
         {{ return s + (i * {multiplier}UL ^ (s >> 3)); }}\n\
         unsigned long spin(unsigned long n) {{ unsigned long s = 0; \
         for (unsigned long i = 0; i < n; i++) s = work_{name}(i, s); return s; }}\n"
    )
}

/// Samples at the same address of the same process in two libraries,
/// loaded one after the other at the same place: each belongs to the
/// library mapped at its time (prec's replay of repeated samples must see
/// the new MMAP).
#[test]
fn same_addresses_in_reloaded_libraries() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let mut libs = Vec::new();
    for (name, multiplier) in [("alpha", 1_000_003), ("bravo", 1_000_033)] {
        libs.push(compile_c(
            &gcc,
            &dir,
            &reload_lib_c(name, multiplier),
            &format!("lib{name}.so"),
            &["-O1", "-fno-omit-frame-pointer", "-shared", "-fPIC"],
            &[],
        ));
    }
    let flags = ["-O1", "-fno-omit-frame-pointer"];
    let exe = compile_c(&gcc, &dir, RELOAD_MAIN_C, "reload", &flags, &["-ldl"]);
    let argv = [path_str(&exe), path_str(&libs[0]), path_str(&libs[1])];
    let files = record_both(&dir, "reload", &["-g"], &argv);
    let rows = report_stdio(
        prec(),
        &files[1],
        Input::File,
        &["--sort", "dso,sym", "--no-children"],
    );
    for sym in ["work_alpha", "work_bravo"] {
        assert!(rows.contains(sym), "no {sym} in prec's report:\n{rows}");
    }
    check(&files, REPORT_RUNS);
}

/// The PLT loop, stripped: `.dynsym` then defines nothing, and perf 6.1
/// synthesizes `@plt` symbols only for a binary with other symbols, so its
/// PLT samples stay raw addresses.
#[test]
fn stripped_program_without_symbols() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let flags = ["-O2", "-fno-builtin", "-s"];
    let exe = compile_c(&gcc, &dir, PLT_LOOP_C, "pltloop-stripped", &flags, &[]);
    let files = record_both(&dir, "stripped", &["-F", "999"], &[path_str(&exe)]);
    let rows = report_stdio(prec(), &files[1], Input::File, &["--sort", "dso,sym"]);
    assert!(
        !rows.contains("@plt"),
        "PLT symbols in a stripped binary:\n{rows}"
    );
    check(&files, REPORT_RUNS);
}

/// `-a -g`: every CPU, the idle task's kernel stacks (which run through
/// init code, `start_kernel`, past the recorded kernel map's `_etext`) and
/// perf's extra `dummy` event, also grouped. The comparisons keep to the
/// program and the idle task (`--comms`): whatever else the machine runs
/// meanwhile (other tests, compilers with C++ names) is not this test's
/// business, and system-wide runs differ too much for the runs-alike check.
#[test]
fn system_wide_with_call_graph() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let flags = ["-O2", "-g", "-fno-builtin", "-fno-omit-frame-pointer"];
    let exe = compile_c(&gcc, &dir, PLT_LOOP_C, "pltloop", &flags, &[]);
    let files = record_both(
        &dir,
        "system",
        &["-a", "-g", "-F", "499"],
        &[path_str(&exe)],
    );
    const COMMS: [&str; 2] = ["--comms", "pltloop,swapper"];
    let runs: Vec<Vec<&str>> = REPORT_RUNS
        .iter()
        .copied()
        .chain([&["--group"][..], &["--group", "--no-children", "-n"][..]])
        .map(|r| COMMS.iter().chain(r).copied().collect())
        .collect();
    let runs: Vec<&[&str]> = runs.iter().map(Vec::as_slice).collect();
    let script_runs: Vec<Vec<&str>> = SCRIPT_RUNS
        .iter()
        .map(|r| COMMS.iter().chain(r.iter()).copied().collect())
        .collect();
    let script_runs: Vec<&[&str]> = script_runs.iter().map(Vec::as_slice).collect();
    // Known difference: with --comms and `--sort dso` alone, perf leaves
    // the DSO column at its header's width where prec widens it to 16 for
    // an unresolved entry the filter hides.
    let skip = |_: &str, args: &[&str]| {
        args.ends_with(&["--sort", "dso"])
            .then_some("DSO width of filtered unresolved entries differs")
    };
    let mut failures = compare_each(&files, &runs, skip, |f, args| {
        compare_report(f, Input::File, args)
    });
    failures.extend(compare_each(
        &files,
        &script_runs,
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    if let Err(e) = perf_reads_clean(&files[0], &files[1]) {
        failures.push(e);
    }
    assert_no_failures(&failures);
}

/// Tracepoints (scheduler, system calls, timers, allocations, block I/O),
/// recorded by perf and by prec (the same attrs, TRACING_DATA as perf
/// writes it): `prec script` prints each record's trace output as perf
/// does, from the formats in the file's TRACING_DATA. Recorded without
/// `-a` (so with no `dummy` event) `perf report` sorts by that output
/// (`--sort trace`), except from a pipe. Both readers read prec's pipe.
#[test]
fn tracepoints_trace_output() {
    let Some(sh) = which("sh").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let events = "sched:sched_switch,sched:sched_wakeup,sched:sched_process_exec,\
                  raw_syscalls:sys_enter,raw_syscalls:sys_exit,timer:timer_start,\
                  timer:hrtimer_start,kmem:kmalloc,kmem:kmem_cache_alloc,\
                  kmem:mm_page_alloc,block:block_rq_issue,workqueue:workqueue_queue_work,\
                  irq:softirq_entry";
    let work = format!(
        "ls -R /usr/share/doc >/dev/null; cat /etc/passwd > {}; sync",
        path_str(&dir.join("copy"))
    );
    let files = record_both(
        &dir,
        "tracepoints",
        &["-a", "-e", events],
        &[&sh, "-c", &work],
    );
    for file in &files {
        let (text, _) = script_stdout(perf(), file, Input::File, &[]);
        for want in ["prev_comm=", "NR ", "call_site=", "function="] {
            assert!(
                text.contains(want),
                "no {want:?} in perf script of {}:\n{}",
                file.display(),
                text.get(..2000).unwrap_or(&text)
            );
        }
    }
    let runs: &[&[&str]] = &[
        &[],
        &["-F", "comm,tid,cpu,time,event,trace"],
        &["-F", "trace"],
    ];
    let mut failures = compare_each(
        &files,
        runs,
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    );
    failures.extend(compare_each(
        &files,
        REPORT_RUNS,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
    if let Err(e) = perf_reads_clean(&files[0], &files[1]) {
        failures.push(e);
    }
    // A field added with `+` that a tracepoint's fields cannot show (they
    // have no ip, nor sym): an error in both, nothing printed.
    for added in ["+srcline", "+symoff"] {
        for file in &files {
            let args = ["-F", added];
            let (_, perf_ok) = script_stdout(perf(), file, Input::File, &args);
            let (text, prec_ok) = script_stdout(prec(), file, Input::File, &args);
            if perf_ok || prec_ok || !text.is_empty() {
                failures.push(format!(
                    "{} -F {added}: perf succeeded: {perf_ok}, prec succeeded: {prec_ok}, \
                     prec printed {} bytes",
                    file.display(),
                    text.len()
                ));
            }
        }
    }
    // With call chains (children mode), perf makes an entry's trace output
    // when it compares the entry with its own sample's children entries,
    // as far as the keys before `trace` agree: the column then fits it,
    // even for an event with a single entry.
    let exec = ["-g", "-e", "sched:sched_process_exec"];
    let chained = record_both(&dir, "exec-g", &exec, &[&sh, "-c", "true"]);
    let runs: &[&[&str]] = &[
        &[],
        &["-g", "none"],
        &["--sort", "sym,trace"],
        &["--sort", "dso,trace"],
        &["--sort", "cpu,trace"],
        &["--no-children"],
    ];
    failures.extend(compare_each(
        &chained,
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
    let ls = which("ls").unwrap_or_else(|| "/bin/ls".into());
    let syscalls = ["-e", "raw_syscalls:sys_enter,sched:sched_process_exec"];
    let own = record_both(&dir, "syscalls", &syscalls, &[&ls, "/"]);
    let runs: &[&[&str]] = &[
        &[],
        &["-n"],
        &["--sort", "comm,trace"],
        &["--sort", "trace,comm"],
    ];
    failures.extend(compare_each(
        &own,
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
    failures.extend(compare_each(
        &own,
        SCRIPT_RUNS,
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    if let Err(e) = perf_reads_clean(&own[0], &own[1]) {
        failures.push(e);
    }
    // --raw-trace: libtraceevent's tep_print_fields instead of the print
    // format (strings, signed and unsigned numbers). Not on events with
    // array fields: perf leaves the text after an array's `]`
    // unterminated, and prints whatever the buffer held.
    let sched = [
        "-e",
        "sched:sched_switch,sched:sched_process_exec,sched:sched_process_fork",
    ];
    let raw = record_both(&dir, "rawtrace", &sched, &[&sh, "-c", &work]);
    // Tracepoint fields as sort keys (perf's dynamic sort entries): by
    // name in every event that has one, EVENT.FIELD, EVENT.*, %N.FIELD,
    // trace_fields (--raw-trace's default order for a file of
    // tracepoints), /raw, and common fields.
    let runs: &[&[&str]] = &[
        &["--raw-trace", "--sort", "trace"],
        &["--raw-trace", "--sort", "comm,trace", "-n"],
        &["--raw-trace"],
        &["--sort", "prev_state,next_comm"],
        &["--sort", "comm,prev_comm/raw", "-n"],
        &["--sort", "sched:sched_switch.next_pid,filename"],
        &["--sort", "sched_process_fork.*"],
        &["--sort", "%1.prev_prio,trace_fields"],
        &["--sort", "common_pid,pid", "--percent-limit", "5"],
        &["--sort", "prev_state", "--raw-trace", "-t", ","],
        // Without call chains: perf's error, after the header hint.
        &["--parent", "read"],
    ];
    failures.extend(compare_each(
        &raw,
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
    for key in ["no_such_field", "sched_switch.nope", "prev_state/bogus"] {
        let refused = prec()
            .args(["report", "--stdio", "--sort", key, "-i", path_str(&raw[0])])
            .output()
            .expect("run prec report");
        let stderr = String::from_utf8_lossy(&refused.stderr);
        if refused.status.success() || !stderr.contains(&format!("Unknown --sort key: `{key}'")) {
            failures.push(format!(
                "prec report --sort {key}: {:?}, {stderr:?}",
                refused.status
            ));
        }
    }
    // With call chains, perf script shows them under each trace line.
    let chains = record_both(
        &dir,
        "tpchains",
        &["-g", "-e", "sched:sched_switch"],
        &[&sh, "-c", "sleep 0.01; ls / >/dev/null; sleep 0.01"],
    );
    failures.extend(compare_each(
        &chains,
        &[
            &["--sort", "prev_state,next_comm"],
            &["--no-children", "--sort", "sym,next_comm", "-g", "caller"],
            // perf's default `trace` order has no key that collapses, so
            // no symbol filter; a --parent adds its key.
            &["--symbol-filter", "xyz"],
            &["--parent", "schedule", "--exclude-other"],
            // perf's tracepoint mode replaces the memory mode (whose
            // header lines stay): no error without data sources.
            &["--mem-mode"],
            &["--mem-mode", "--sort", "+comm", "-n"],
        ],
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
    failures.extend(compare_each(
        &chains,
        &[
            &[],
            &["-G"],
            &["-F", "+ip"],
            &["-F", "-trace"],
            &["-F", "comm,ip,sym"],
        ],
        |_, _| None,
        |f, args| compare_script(f, Input::File, args),
    ));
    // prec's pipe: the tracing data as a record.
    let piped = dir.join("prec.pipe.data");
    let out = std::fs::File::create(&piped).expect("create pipe file");
    let o = prec()
        .args([
            "record",
            "-q",
            "-e",
            "sched:sched_switch,raw_syscalls:sys_enter",
        ])
        .args(["-o", "-", "--"])
        .arg(&ls)
        .arg("/")
        .stdin(Stdio::null())
        .stdout(out)
        .output()
        .expect("run prec record -o -");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let piped = [piped];
    failures.extend(compare_each(
        &piped,
        &[&[], &["--sort", "trace"]],
        |_, _| None,
        |f, args| compare_report(f, Input::Stdin, args),
    ));
    failures.extend(compare_each(
        &piped,
        &[&[]],
        |_, _| None,
        |f, args| compare_script(f, Input::Stdin, args),
    ));
    // perf's pipe with call chains: its script adds only ip and sym to the
    // tracepoint's fields (the attrs arrive after the file-mode check).
    let perf_piped = dir.join("perf.tp-g.pipe.data");
    let out = std::fs::File::create(&perf_piped).expect("create pipe file");
    run(perf()
        .args(["record", "-q", "-g", "-e", "sched:sched_process_exec"])
        .args(["-e", "cpu-clock", "-o", "-", "--"])
        .arg(&sh)
        .args(["-c", "ls / >/dev/null; ls /usr >/dev/null"])
        .stdin(Stdio::null())
        .stdout(out));
    failures.extend(compare_each(
        &[perf_piped],
        &[&[], &["-G"], &["-F", "comm,tid,event,ip,sym"]],
        |_, _| None,
        |f, args| compare_script(f, Input::Stdin, args),
    ));
    assert_no_failures(&failures);
}

/// A tracepoint that does not exist, or that an ordinary user cannot read
/// (tracefs is root's), is a clear error naming it, before anything runs.
/// A file of one sample: perf computes a srcline or srcfile only when a
/// comparison needs it, and the only entry of a file is never compared,
/// not even with the key first. So the column keeps its title's width and
/// the value is cut to it (`bprm_execve+1189` prints `bprm_execve`,
/// `__traceiter_sched_process_exec+62` prints `__traceiter`).
#[test]
fn one_sample_source_columns_keep_their_titles_width() {
    let Some(sh) = which("sh").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let files = record_both(
        &dir,
        "one-exec",
        &["-e", "sched:sched_process_exec"],
        &[&sh, "-c", ":"],
    );
    let runs: &[&[&str]] = &[
        &["--sort", "srcline"],
        &["--sort", "srcline,sym"],
        &["--sort", "srcfile"],
        &["--sort", "srcline", "--no-children"],
    ];
    for file in &files {
        // The sample's kernel function varies (bprm_execve, __traceiter_*):
        // its `sym+offset` srcline is cut to `Source:Line`'s width.
        let text = report_stdio(perf(), file, Input::File, &["--sort", "srcline"]);
        let value = text
            .lines()
            .find_map(|l| l.strip_prefix("   100.00%  "))
            .map(str::trim_end);
        assert!(
            value.is_some_and(|v| !v.is_empty() && !v.contains('+') && v.len() <= 11),
            "perf cuts the srcline of {}:\n{text}",
            file.display()
        );
    }
    assert_no_failures(&compare_each(
        &files,
        runs,
        |_, _| None,
        |f, args| compare_report(f, Input::File, args),
    ));
}

#[test]
fn tracepoint_errors() {
    if !require_perf_record() {
        return;
    }
    if !Path::new("/sys/kernel/tracing/events").is_dir() {
        eprintln!("SKIPPED: no tracefs at /sys/kernel/tracing");
        return;
    }
    let dir = tempdir();
    let out = dir.join("x.data");
    let o = prec()
        .args(["record", "-e", "sched:no_such_event", "-o"])
        .arg(&out)
        .args(["--", "true"])
        .output()
        .expect("run prec");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains("'sched:no_such_event'"),
        "{err}"
    );
    assert!(err.contains("unknown tracepoint"), "{err}");
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    if let Some(runuser) = which("runuser").filter(|_| root) {
        let o = Command::new(runuser)
            .args(["-u", "nobody", "--"])
            .arg(prec_bin())
            .args([
                "record",
                "-e",
                "sched:sched_switch",
                "-o",
                "/tmp/prec-nobody-tp.data",
            ])
            .args(["--", "true"])
            .output()
            .expect("run runuser");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "{err}");
        assert!(err.contains("can't access trace events"), "{err}");
    }
}

/// A symbol longer than perf's 1024-byte header buffer (Rust's generic
/// instances get that long): perf cuts that column's header there, not
/// its rows; and its call-graph lines (graph, flat, folded) at 1023 bytes
/// of the name.
#[test]
fn symbol_longer_than_perfs_header_buffer() {
    let Some(gcc) = which("gcc").filter(|_| require_perf_record()) else {
        return;
    };
    let dir = tempdir();
    let name = format!("long_{}", "x".repeat(1100));
    let source = format!(
        "static volatile unsigned long sink;\n\
         __attribute__((noinline)) void {name}(unsigned long n) \
         {{ for (unsigned long i = 0; i < n; i++) sink += i; }}\n\
         int main(void) {{ {name}(300000000UL); return 0; }}\n"
    );
    let flags = ["-O1", "-fno-omit-frame-pointer"];
    let exe = compile_c(&gcc, &dir, &source, "longname", &flags, &[]);
    let files = record_both(&dir, "longname", &["-F", "999"], &[path_str(&exe)]);
    let rows = report_stdio(prec(), &files[1], Input::File, &["--sort", "sym"]);
    assert!(rows.contains(&name), "no {name} in prec's report:\n{rows}");
    check(
        &files,
        &[&[], &["--sort", "sym"], &["--sort", "comm,dso,sym", "-n"]],
    );
    let files = record_both(&dir, "longname-g", &["-F", "999", "-g"], &[path_str(&exe)]);
    let graph = report_stdio(perf(), &files[0], Input::File, &["--sort", "sym"]);
    assert!(
        graph
            .lines()
            .any(|l| l.contains("--long_x") || l.trim_start().starts_with("long_x")),
        "no call-graph line of {name} in perf's report:\n{graph}"
    );
    check(
        &files,
        &[
            &["--sort", "sym"],
            &["--sort", "sym", "-g", "folded"],
            &["--sort", "sym", "-g", "flat"],
            &["--no-children", "--sort", "sym", "-g", "caller"],
        ],
    );
}

/// The tie forgiveness of [`with_address_ties_sorted`] covers only the
/// order of equal raw-address siblings, on lines as perf prints them.
#[test]
fn only_raw_address_ties_are_reordered() {
    let block = |pct: &str, head: &str, leaf: &str| {
        format!("            |--{pct}%--{head}\n            |          asm_exc_page_fault\n            |          {leaf}\n            |          \n")
    };
    let graph = |blocks: &[String]| {
        format!("    45.00%  [kernel.kallsyms]\n            |\n{}            |--0.10%--read\n            |          vfs_read\n", blocks.concat())
    };
    let true_first = graph(&[
        block("0.14", "0x5580fcd003d0", "handle_mm_fault"),
        block("0.14", "0x55ecf4585130", "do_fault"),
    ]);
    let cat_first = graph(&[
        block("0.14", "0x55ecf4585130", "do_fault"),
        block("0.14", "0x5580fcd003d0", "handle_mm_fault"),
    ]);
    assert_ne!(true_first, cat_first);
    assert_eq!(
        with_address_ties_sorted(&true_first),
        with_address_ties_sorted(&cat_first)
    );
    // Not forgiven: different percentages, a symbol instead of an address,
    // or a different subtree.
    for other in [
        graph(&[
            block("0.14", "0x55ecf4585130", "do_fault"),
            block("0.15", "0x5580fcd003d0", "handle_mm_fault"),
        ]),
        graph(&[
            block("0.14", "main", "do_fault"),
            block("0.14", "0x5580fcd003d0", "handle_mm_fault"),
        ]),
        graph(&[
            block("0.14", "0x55ecf4585130", "do_fault"),
            block("0.14", "0x5580fcd003d0", "do_fault"),
        ]),
    ] {
        assert_ne!(
            with_address_ties_sorted(&true_first),
            with_address_ties_sorted(&other)
        );
    }
}
