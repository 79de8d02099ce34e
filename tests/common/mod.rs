//! Shared helpers for the integration tests of the root package `prec`.
//!
//! Use from a test file with `mod common;` and `use common::*;`.
//!
//! * [`prec`] / [`prec_bin`]: the `prec` binary built by Cargo for this test run.
//! * [`perf`], [`perf_available`], [`require_perf`], [`require_perf_record`]:
//!   the oracle, Linux perf at `/usr/bin/perf` (override with `PREC_PERF`).
//!   When perf is missing, the `require_*` helpers print why and return
//!   `false` so the test can `return` early; with `CI=true` they panic instead,
//!   so CI can never silently skip the comparisons.
//! * [`fixture_bins`]: the programs of `fixtures/src`, built once per test
//!   process by `fixtures/build.sh` into `target/prec-fixtures/<hash>/`.
//! * [`own_fixtures`], [`own_fixture`], [`quipper_dir`], [`quipper_files`]:
//!   checked-in perf.data files.
//! * [`tempdir`], [`run`], [`run_fail`], [`stdout_of`], [`assert_eq_text`].
//! * perf against prec on the same file: [`report_stdio`] / [`compare_report`],
//!   [`script_stdout`] / [`compare_script`] (perf.data given as [`Input`]),
//!   [`compare_each`] over files and option sets, [`same_text`],
//!   [`assert_no_failures`], [`without_tip`], [`perf_record_program`].
//!
//! Only std is used.
#![allow(dead_code)]

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsStr;
use std::fs;
use std::hash::{Hash, Hasher};
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{SystemTime, UNIX_EPOCH};

// ---------------------------------------------------------------------------
// Paths
// ---------------------------------------------------------------------------

/// Root of the repository (the directory holding the workspace Cargo.toml).
pub fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory, derived from the running test executable
/// (`<target>/<profile>/deps/<test>-<hash>`), so `CARGO_TARGET_DIR` and
/// `--target <triple>` layouts work too. Falls back to `<repo>/target`.
pub fn target_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
            let dir = PathBuf::from(dir);
            return if dir.is_absolute() {
                dir
            } else {
                repo_root().join(dir)
            };
        }
        std::env::current_exe()
            .ok()
            .and_then(|exe| {
                let deps = exe.parent()?;
                if deps.file_name() != Some(OsStr::new("deps")) {
                    return None;
                }
                Some(deps.parent()?.parent()?.to_path_buf())
            })
            .unwrap_or_else(|| repo_root().join("target"))
    })
    .clone()
}

// ---------------------------------------------------------------------------
// prec
// ---------------------------------------------------------------------------

/// Path of the `prec` binary Cargo built for these integration tests.
pub fn prec_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_prec"))
}

/// A `Command` for the `prec` binary.
pub fn prec() -> Command {
    Command::new(prec_bin())
}

// ---------------------------------------------------------------------------
// perf (the oracle)
// ---------------------------------------------------------------------------

/// True when the environment variable `CI` is `true` (or `1`).
pub fn is_ci() -> bool {
    matches!(std::env::var("CI").as_deref(), Ok("true") | Ok("1"))
}

/// Path of Linux perf: `$PREC_PERF` if set, else `/usr/bin/perf`.
pub fn perf_path() -> PathBuf {
    std::env::var_os("PREC_PERF")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/perf"))
}

/// `Err(reason)` if perf is missing or does not run (`perf --version`).
/// Checked once per process. Note that Debian's /usr/bin/perf is a wrapper
/// that fails when no perf matching the running kernel is installed.
pub fn perf_status() -> Result<(), String> {
    static STATUS: OnceLock<Result<(), String>> = OnceLock::new();
    STATUS
        .get_or_init(|| {
            let path = perf_path();
            if !path.exists() {
                return Err(format!("{} not found (install linux-perf)", path.display()));
            }
            match Command::new(&path)
                .arg("--version")
                .stdin(Stdio::null())
                .output()
            {
                Ok(o) if o.status.success() => Ok(()),
                Ok(o) => Err(format!(
                    "`{} --version` failed ({}): {}",
                    path.display(),
                    o.status,
                    String::from_utf8_lossy(&o.stderr).trim()
                )),
                Err(e) => Err(format!("cannot run {}: {e}", path.display())),
            }
        })
        .clone()
}

/// Whether perf is installed and runs.
pub fn perf_available() -> bool {
    perf_status().is_ok()
}

fn skip_or_panic(what: &str, reason: &str) -> bool {
    if is_ci() {
        panic!("{what} is required when CI=true: {reason}");
    }
    eprintln!("SKIPPED: {what} unavailable: {reason}");
    false
}

/// Call at the start of a test that needs perf:
/// `if !require_perf() { return; }`.
/// Returns false (after printing the reason) when perf is unavailable;
/// panics instead when `CI=true`.
pub fn require_perf() -> bool {
    match perf_status() {
        Ok(()) => true,
        Err(reason) => skip_or_panic("perf", &reason),
    }
}

/// Like [`require_perf`], but also checks that this user can actually record
/// (`perf record -e cpu-clock -- true`); fails e.g. in containers without
/// perf_event_open. Checked once per process.
pub fn require_perf_record() -> bool {
    static STATUS: OnceLock<Result<(), String>> = OnceLock::new();
    if !require_perf() {
        return false;
    }
    let status = STATUS.get_or_init(|| {
        let dir = tempdir();
        let out = perf()
            .args(["record", "-q", "-e", "cpu-clock", "-o"])
            .arg(dir.join("probe.data"))
            .args(["--", "true"])
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run perf: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "`perf record -e cpu-clock -- true` failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    });
    match status {
        Ok(()) => true,
        Err(reason) => skip_or_panic("perf record", reason),
    }
}

/// A `Command` for Linux perf. Panics with the reason if perf is unavailable,
/// so guard the test with [`require_perf`] first.
pub fn perf() -> Command {
    if let Err(reason) = perf_status() {
        panic!("perf unavailable: {reason} (guard the test with require_perf())");
    }
    let mut cmd = Command::new(perf_path());
    // Keep perf from paging or reading a user config that changes output.
    cmd.env("PAGER", "cat")
        .env("PERF_PAGER", "cat")
        .env("PERF_CONFIG", "/dev/null");
    cmd
}

// ---------------------------------------------------------------------------
// Fixture programs
// ---------------------------------------------------------------------------

/// Directory holding the fixture programs built by `fixtures/build.sh`
/// (hot3, hot3-stripped, hot3-debuglink(+.debug), libhot.so, uselib, dlopen,
/// threads, forkexec, rust_hot, cpp_hot, inline_hot, callgraph-fp,
/// callgraph-nofp). Built at most once per test process.
///
/// The directory is `target/prec-fixtures/<hash of fixtures/src + build.sh>`.
/// Each build goes to a private temporary directory that is then renamed into
/// place, so test binaries running concurrently never see a half-built
/// directory (the loser of a race simply discards its copy).
pub fn fixture_bins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(build_fixture_bins)
}

/// Path of one fixture program, e.g. `fixture_bin("hot3")`.
pub fn fixture_bin(name: &str) -> PathBuf {
    let p = fixture_bins().join(name);
    assert!(p.exists(), "fixture program {} was not built", p.display());
    p
}

fn fixture_sources_hash() -> u64 {
    let fixtures = repo_root().join("fixtures");
    let mut files: Vec<PathBuf> = fs::read_dir(fixtures.join("src"))
        .expect("read fixtures/src")
        .map(|e| e.expect("read fixtures/src entry").path())
        .collect();
    files.push(fixtures.join("build.sh"));
    files.sort();
    let mut h = DefaultHasher::new();
    for f in &files {
        f.file_name().hash(&mut h);
        fs::read(f)
            .unwrap_or_else(|e| panic!("read {}: {e}", f.display()))
            .hash(&mut h);
    }
    h.finish()
}

fn build_fixture_bins() -> PathBuf {
    let base = target_dir().join("prec-fixtures");
    let dir = base.join(format!("{:016x}", fixture_sources_hash()));
    if dir.join(".build-stamp").exists() {
        return dir;
    }
    fs::create_dir_all(&base).expect("create target/prec-fixtures");
    let tmp = base.join(format!(".tmp-{}-{}", std::process::id(), unique_suffix()));
    let script = repo_root().join("fixtures/build.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(&tmp)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    if !out.status.success() {
        let _ = fs::remove_dir_all(&tmp);
        panic!(
            "fixtures/build.sh failed ({})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if fs::rename(&tmp, &dir).is_err() {
        // Another process won the race; its directory is complete.
        let _ = fs::remove_dir_all(&tmp);
        assert!(
            dir.join(".build-stamp").exists(),
            "cannot move {} to {}",
            tmp.display(),
            dir.display()
        );
    }
    dir
}

// ---------------------------------------------------------------------------
// perf.data fixtures
// ---------------------------------------------------------------------------

/// Where `fixtures/perf/record.sh` put the programs it recorded: the
/// recordings name their binaries by this path.
pub const RECORDED_BINS: &str = "/tmp/prec-fixtures-bin";

/// `fixtures/perf`, holding perf.data files recorded by perf 6.1 (see its
/// README.md). The programs they recorded (`fixtures/perf/bin`, kept
/// because a rebuild gets other build-ids) are first installed at
/// [`RECORDED_BINS`], so perf and prec both find them on any machine.
pub fn own_fixtures_dir() -> PathBuf {
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(install_recorded_bins);
    repo_root().join("fixtures/perf")
}

/// Copies each of `fixtures/perf/bin` to [`RECORDED_BINS`] unless an equal
/// file is there; through a temporary name, so a concurrent test process
/// never runs a half-written binary.
fn install_recorded_bins() {
    let from = repo_root().join("fixtures/perf/bin");
    let to = Path::new(RECORDED_BINS);
    fs::create_dir_all(to).unwrap_or_else(|e| panic!("create {}: {e}", to.display()));
    let entries = fs::read_dir(&from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
    for entry in entries {
        let src = entry.expect("read fixtures/perf/bin entry").path();
        let dst = to.join(src.file_name().expect("file name"));
        let bytes = fs::read(&src).unwrap_or_else(|e| panic!("read {}: {e}", src.display()));
        if fs::read(&dst).is_ok_and(|old| old == bytes) {
            continue;
        }
        let tmp = to.join(format!(
            ".{}.{}",
            src.file_name().and_then(OsStr::to_str).unwrap_or("bin"),
            std::process::id()
        ));
        fs::copy(&src, &tmp).unwrap_or_else(|e| panic!("copy to {}: {e}", tmp.display()));
        fs::rename(&tmp, &dst).unwrap_or_else(|e| panic!("install {}: {e}", dst.display()));
    }
}

/// All `fixtures/perf/*.data`, sorted by name.
pub fn own_fixtures() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(own_fixtures_dir())
        .expect("read fixtures/perf")
        .map(|e| e.expect("read fixtures/perf entry").path())
        .filter(|p| p.extension() == Some(OsStr::new("data")))
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no fixtures/perf/*.data files");
    v
}

/// One file of `fixtures/perf`, e.g. `own_fixture("hot3-default.data")`.
pub fn own_fixture(name: &str) -> PathBuf {
    let p = own_fixtures_dir().join(name);
    assert!(p.exists(), "missing fixture {}", p.display());
    p
}

/// `../shared/fixtures/quipper` beside the repository (perf.data test files
/// from ChromiumOS quipper, perf 3.2 .. 6.12, several architectures).
pub fn quipper_dir() -> PathBuf {
    repo_root().join("../shared/fixtures/quipper")
}

/// The quipper perf.data files (names starting with `perf.data`, without the
/// `*.buildids` side files), sorted. Includes deliberately corrupted ones
/// (name contains `corrupted`) and pipe-mode ones (name contains `piped`).
/// Panics if the directory is missing.
pub fn quipper_files() -> Vec<PathBuf> {
    let dir = quipper_dir();
    let mut v: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("read quipper entry").path())
        .filter(|p| {
            let name = p.file_name().and_then(OsStr::to_str).unwrap_or("");
            name.starts_with("perf.data") && !name.contains(".buildids")
        })
        .collect();
    v.sort();
    v
}

/// The file name of `path` ("" if none or not UTF-8).
pub fn file_name(path: &Path) -> &str {
    path.file_name().and_then(OsStr::to_str).unwrap_or("")
}

/// The name of a quipper file without its `perf.data.` prefix.
pub fn quipper_short_name(path: &Path) -> &str {
    let name = file_name(path);
    name.strip_prefix("perf.data.").unwrap_or(name)
}

/// [`quipper_files`] but those whose [`quipper_short_name`] `known` lists
/// with a reason (printed as not compared).
pub fn quipper_files_except(known: &[(&str, &str)]) -> Vec<PathBuf> {
    quipper_files()
        .into_iter()
        .filter(|f| {
            let short = quipper_short_name(f);
            match known.iter().find(|(n, _)| *n == short) {
                Some((_, why)) => {
                    eprintln!("not compared: {}: {why}", file_name(f));
                    false
                }
                None => true,
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Temporary directories
// ---------------------------------------------------------------------------

fn unique_suffix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{}-{}", N.fetch_add(1, Ordering::Relaxed), nanos)
}

/// A unique directory under `target/tmp`, removed on drop unless the test is
/// panicking (so failed tests leave their files for inspection) or
/// `PREC_KEEP_TMP` is set. Derefs to `Path`: `dir.join("perf.data")`.
pub struct TempDir {
    path: PathBuf,
}

impl TempDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for TempDir {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("keeping {} of the failed test", self.path.display());
        } else if std::env::var_os("PREC_KEEP_TMP").is_none() {
            let _ = fs::remove_dir_all(&self.path);
        }
    }
}

/// The `runuser` program, when this process is root and may run commands
/// as another user (`None` otherwise).
pub fn runuser_if_root() -> Option<&'static str> {
    use std::os::unix::fs::MetadataExt;
    let root = fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0);
    ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        .into_iter()
        .find(|p| Path::new(p).exists())
        .filter(|_| root)
}

/// A fresh directory under the system's temp dir that every user may
/// write to (`target/tmp` may not be reachable for `nobody`).
pub fn shared_tempdir(name: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod");
    dir
}

/// Create a fresh unique directory under `target/tmp`, named after the test
/// executable and thread.
pub fn tempdir() -> TempDir {
    let exe = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .unwrap_or_else(|| "test".into());
    let thread = std::thread::current()
        .name()
        .unwrap_or("t")
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '_', "_");
    let path = target_dir().join("tmp").join(format!(
        "{exe}-{thread}-{}-{}",
        std::process::id(),
        unique_suffix()
    ));
    fs::create_dir_all(&path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    TempDir { path }
}

// ---------------------------------------------------------------------------
// Running commands
// ---------------------------------------------------------------------------

fn describe(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        let a = a.to_string_lossy();
        if a.is_empty() || a.contains(|c: char| c.is_whitespace() || c == '\'') {
            s.push_str(&format!(" '{}'", a.replace('\'', "'\\''")));
        } else {
            s.push(' ');
            s.push_str(&a);
        }
    }
    s
}

fn show_output(out: &Output) -> String {
    const MAX: usize = 20_000;
    let cut = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        if s.len() > MAX {
            let mut end = MAX;
            while !s.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}\n... ({} bytes total)", &s[..end], s.len())
        } else {
            s.into_owned()
        }
    };
    format!(
        "--- stdout ---\n{}\n--- stderr ---\n{}",
        cut(&out.stdout),
        cut(&out.stderr)
    )
}

/// Run `cmd` (stdin from /dev/null unless set), wait, and return its output;
/// panics showing the command line, status, stdout and stderr unless it
/// exits successfully.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", describe(cmd)));
    if !out.status.success() {
        panic!(
            "`{}` failed: {}\n{}",
            describe(cmd),
            out.status,
            show_output(&out)
        );
    }
    out
}

/// Like [`run`], but expects the command to fail; returns its output.
pub fn run_fail(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", describe(cmd)));
    if out.status.success() {
        panic!(
            "`{}` succeeded but was expected to fail\n{}",
            describe(cmd),
            show_output(&out)
        );
    }
    out
}

/// [`run`] and return stdout as a String (lossy UTF-8).
pub fn stdout_of(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

// ---------------------------------------------------------------------------
// Text comparison
// ---------------------------------------------------------------------------

/// Assert two texts are equal; on mismatch panic with a unified-style line
/// diff (`-` expected, `+` actual, 3 lines of context, line numbers).
pub fn assert_eq_text(expected: &str, actual: &str) {
    if expected == actual {
        return;
    }
    let diff = line_diff(expected, actual);
    panic!(
        "texts differ (- expected, + actual); {} vs {} lines\n{}",
        expected.lines().count(),
        actual.lines().count(),
        diff
    );
}

/// A readable line diff of two texts (empty if equal).
pub fn line_diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.split('\n').collect();
    let b: Vec<&str> = actual.split('\n').collect();
    if a == b {
        return String::new();
    }
    // Common prefix and suffix, then an LCS on the middle (bounded size).
    let mut pre = 0;
    while pre < a.len() && pre < b.len() && a[pre] == b[pre] {
        pre += 1;
    }
    let mut suf = 0;
    while suf < a.len() - pre && suf < b.len() - pre && a[a.len() - 1 - suf] == b[b.len() - 1 - suf]
    {
        suf += 1;
    }
    let (ma, mb) = (&a[pre..a.len() - suf], &b[pre..b.len() - suf]);

    // ops: (' ' | '-' | '+', index into a or b)
    let mut ops: Vec<(char, usize)> = (0..pre).map(|i| (' ', i)).collect();
    if ma.len().saturating_mul(mb.len()) <= 4_000_000 {
        let (n, m) = (ma.len(), mb.len());
        let mut lcs = vec![0u32; (n + 1) * (m + 1)];
        for i in (0..n).rev() {
            for j in (0..m).rev() {
                lcs[i * (m + 1) + j] = if ma[i] == mb[j] {
                    lcs[(i + 1) * (m + 1) + j + 1] + 1
                } else {
                    lcs[(i + 1) * (m + 1) + j].max(lcs[i * (m + 1) + j + 1])
                };
            }
        }
        let (mut i, mut j) = (0, 0);
        while i < n || j < m {
            if i < n && j < m && ma[i] == mb[j] {
                ops.push((' ', pre + i));
                i += 1;
                j += 1;
            } else if i < n && (j == m || lcs[(i + 1) * (m + 1) + j] >= lcs[i * (m + 1) + j + 1]) {
                ops.push(('-', pre + i));
                i += 1;
            } else {
                ops.push(('+', pre + j));
                j += 1;
            }
        }
    } else {
        ops.extend((0..ma.len()).map(|i| ('-', pre + i)));
        ops.extend((0..mb.len()).map(|j| ('+', pre + j)));
    }
    ops.extend((0..suf).map(|k| (' ', a.len() - suf + k)));

    // Print changed lines with 3 lines of context, eliding the rest.
    const CTX: usize = 3;
    const MAX_LINES: usize = 400;
    let changed: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, o)| o.0 != ' ')
        .map(|(k, _)| k)
        .collect();
    let near = |k: usize| changed.iter().any(|&c| c + CTX >= k && k + CTX >= c);
    let mut out = String::new();
    let mut printed = 0;
    let mut elided = false;
    for (k, &(op, idx)) in ops.iter().enumerate() {
        if !near(k) {
            elided = true;
            continue;
        }
        if elided {
            out.push_str("   ...\n");
            elided = false;
        }
        if printed == MAX_LINES {
            out.push_str("   ... (diff truncated)\n");
            break;
        }
        let text = if op == '+' { b[idx] } else { a[idx] };
        out.push_str(&format!("{op}{:>5} |{}\n", idx + 1, visible(text)));
        printed += 1;
    }
    out
}

/// Make trailing whitespace and control characters visible in diff lines.
fn visible(s: &str) -> String {
    let trimmed = s.trim_end_matches([' ', '\t', '\r']);
    let mut out: String = trimmed
        .chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect();
    for c in s[trimmed.len()..].chars() {
        out.push_str(match c {
            ' ' => "\u{b7}",
            '\t' => "\u{2192}",
            _ => "\\r",
        });
    }
    out
}

// ---------------------------------------------------------------------------
// perf against prec
// ---------------------------------------------------------------------------

/// `text` without perf's random `# (Tip: ...)` line (line ends as `\n`, the
/// last one dropped).
pub fn without_tip(text: &str) -> String {
    text.lines()
        .filter(|l| !l.starts_with("# (Tip:"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `Ok` when the texts are equal; else `Err` with `what` and a [`line_diff`]
/// (`-` expected, `+` actual).
pub fn same_text(what: &str, expected: &str, actual: &str) -> Result<(), String> {
    if expected == actual {
        Ok(())
    } else {
        Err(format!("{what}:\n{}", line_diff(expected, actual)))
    }
}

/// Panics listing `failures` (the `Err`s of the comparisons) unless there
/// are none.
pub fn assert_no_failures(failures: &[String]) {
    assert!(
        failures.is_empty(),
        "{} comparison(s) differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs `compare(file, args)` on every file with every option set, except
/// where `skip(file name, args)` gives a reason (printed as not compared);
/// returns the `Err`s.
pub fn compare_each(
    files: &[PathBuf],
    runs: &[&[&str]],
    skip: impl Fn(&str, &[&str]) -> Option<&'static str>,
    compare: impl Fn(&Path, &[&str]) -> Result<(), String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for file in files {
        let name = file_name(file);
        for args in runs {
            if let Some(why) = skip(name, args) {
                eprintln!("not compared: {name} {args:?}: {why}");
                continue;
            }
            if let Err(e) = compare(file, args) {
                failures.push(e);
            }
        }
    }
    failures
}

/// How a perf.data file is handed to perf or prec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// `-i FILE`, stdin from /dev/null.
    File,
    /// `-i -`, stdin opened on the file.
    Stdin,
    /// `-i -`, the file written into a pipe on stdin.
    Pipe,
}

impl Input {
    /// `self` for a pipe-mode file (`piped`), else [`Input::File`].
    pub fn if_piped(self, piped: bool) -> Input {
        if piped {
            self
        } else {
            Input::File
        }
    }

    /// Adds `-i FILE` or `-i -` to `cmd`, and its stdin.
    fn add_to(self, cmd: &mut Command, file: &Path) {
        match self {
            Input::File => cmd.arg("-i").arg(file).stdin(Stdio::null()),
            Input::Stdin => {
                let f =
                    fs::File::open(file).unwrap_or_else(|e| panic!("open {}: {e}", file.display()));
                cmd.args(["-i", "-"]).stdin(Stdio::from(f))
            }
            Input::Pipe => cmd.args(["-i", "-"]).stdin(Stdio::piped()),
        };
    }

    /// Runs `cmd` (given `-i` by [`Input::add_to`]) and returns its output,
    /// whatever its exit status.
    fn output(self, cmd: &mut Command, file: &Path) -> Output {
        if self != Input::Pipe {
            return cmd
                .output()
                .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", describe(cmd)));
        }
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", describe(cmd)));
        let data = fs::read(file).unwrap_or_else(|e| panic!("read {}: {e}", file.display()));
        let mut stdin = child.stdin.take().expect("piped stdin");
        let writer = std::thread::spawn(move || {
            use std::io::Write;
            let _ = stdin.write_all(&data);
        });
        let out = child.wait_with_output().expect("wait");
        let _ = writer.join();
        out
    }
}

/// `TOOL report -i FILE --stdio ARGS` (`tool` is [`perf`] or [`prec`]),
/// which must succeed: its stdout without perf's random `# (Tip:` line and
/// trailing blank lines.
pub fn report_stdio(mut tool: Command, file: &Path, input: Input, args: &[&str]) -> String {
    tool.arg("report");
    input.add_to(&mut tool, file);
    tool.arg("--stdio").args(args);
    let out = input.output(&mut tool, file);
    assert!(
        out.status.success(),
        "report on {} {args:?} failed: {}\n{}",
        file.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    without_tip(&String::from_utf8_lossy(&out.stdout))
        .trim_end()
        .to_string()
}

/// perf's and prec's [`report_stdio`] of `file` with `args`: `Err` with a
/// diff where they differ.
pub fn compare_report(file: &Path, input: Input, args: &[&str]) -> Result<(), String> {
    let expected = without_read_time(input, report_stdio(perf(), file, input, args));
    let actual = without_read_time(input, report_stdio(prec(), file, input, args));
    same_text(&format!("{} {args:?}", file.display()), &expected, &actual)
}

/// `report_stdio` output with runs of tied call-graph siblings sorted, where
/// perf's order comes from its heap rather than from the file.
///
/// perf orders the children of a call-graph node in its input tree with
/// `match_chain`; two frames without symbols compare by their DSO objects'
/// heap addresses first (`match_chain_dso_addresses`), and siblings with
/// equal hits print in that tree's order. Which of two DSOs malloc placed
/// lower depends on everything perf allocated before: one recording of
/// `sh` running `true` and `cat` prints them either way. prec orders them by
/// DSO creation order, which agrees unless malloc reused a hole. This sorts
/// every run of interior siblings (`|--` heads under the same prefix) that
/// have the same percentage and a raw address as their frame, so only that
/// order is forgiven: their text, counts and everything else still compare.
pub fn with_address_ties_sorted(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let raw_head = |line: &str| -> Option<(usize, String)> {
        let at = line.find("|--")?;
        let (prefix, rest) = (&line[..at], &line[at + 3..]);
        if !prefix.chars().all(|c| c == ' ' || c == '|') {
            return None;
        }
        let (pct, frame) = rest.split_once("%--")?;
        let hex = frame.strip_prefix("0x")?;
        (!hex.is_empty() && hex.chars().all(|c| c.is_ascii_hexdigit()))
            .then(|| (at, format!("{prefix}|{pct}")))
    };
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let Some((at, key)) = raw_head(lines[i]) else {
            out.push(lines[i].to_string());
            i += 1;
            continue;
        };
        let mut blocks: Vec<Vec<&str>> = Vec::new();
        let mut j = i;
        while j < lines.len() && raw_head(lines[j]).is_some_and(|(a, k)| a == at && k == key) {
            let mut end = j + 1;
            while end < lines.len()
                && lines[end].get(..at) == lines[i].get(..at)
                && lines[end]
                    .get(at..)
                    .is_some_and(|r| r.starts_with('|') && !r.starts_with("|--"))
            {
                end += 1;
            }
            blocks.push(lines[j..end].to_vec());
            j = end;
        }
        blocks.sort();
        out.extend(blocks.concat().into_iter().map(str::to_string));
        i = j;
    }
    out.join("\n")
}

/// A header's `# captured on` line is the input's modification time: for
/// a pipe, the moment it is read, which differs between the two tools'
/// runs. It is dropped from pipe input's output.
fn without_read_time(input: Input, text: String) -> String {
    if input != Input::Pipe {
        return text;
    }
    text.lines()
        .filter(|l| !l.starts_with("# captured on"))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// `TOOL script ARGS -i FILE` (`tool` is [`perf`] or [`prec`]): its stdout,
/// and whether it succeeded.
pub fn script_stdout(
    mut tool: Command,
    file: &Path,
    input: Input,
    args: &[&str],
) -> (String, bool) {
    tool.arg("script").args(args);
    input.add_to(&mut tool, file);
    let out = input.output(&mut tool, file);
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    )
}

/// perf's and prec's [`script_stdout`] of `file` with `args` (whatever their
/// exit status): `Err` with a diff where they differ.
pub fn compare_script(file: &Path, input: Input, args: &[&str]) -> Result<(), String> {
    let (expected, _) = script_stdout(perf(), file, input, args);
    let (actual, _) = script_stdout(prec(), file, input, args);
    let (expected, actual) = (
        without_read_time(input, expected),
        without_read_time(input, actual),
    );
    same_text(
        &format!(
            "{} {args:?}: prec script differs from perf script",
            file.display()
        ),
        &expected,
        &actual,
    )
}

/// `perf record -q OPTS -o DATA -- PROGRAM ARGS`, which must succeed;
/// returns `data`.
pub fn perf_record_program(data: PathBuf, opts: &[&str], program: &Path, args: &[&str]) -> PathBuf {
    run(perf()
        .arg("record")
        .arg("-q")
        .args(opts)
        .arg("-o")
        .arg(&data)
        .arg("--")
        .arg(program)
        .args(args));
    data
}

/// `TOOL record -q OPTS -o OUT -- ARGV` with the program's stdout thrown
/// away; panics with stderr unless it succeeds.
pub fn record(mut tool: Command, out: &Path, opts: &[&str], argv: &[&str]) {
    tool.args(["record", "-q"])
        .args(opts)
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let o = tool
        .output()
        .unwrap_or_else(|e| panic!("cannot run record {argv:?}: {e}"));
    assert!(
        o.status.success(),
        "record {opts:?} -- {argv:?} -o {} failed: {}\n{}",
        out.display(),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Records `argv` with perf and with prec in `dir`; returns both files.
pub fn record_both(dir: &Path, name: &str, opts: &[&str], argv: &[&str]) -> [PathBuf; 2] {
    let p = dir.join(format!("perf.{name}.data"));
    let q = dir.join(format!("prec.{name}.data"));
    record(perf(), &p, opts, argv);
    record(prec(), &q, opts, argv);
    [p, q]
}

/// `perf evlist -v` of a recording, without the ids (which differ between
/// recordings).
pub fn evlist(file: &Path) -> String {
    stdout_of(perf().args(["evlist", "-v", "-i"]).arg(file))
        .lines()
        .map(|l| match (l.find(", id = {"), l.find('}')) {
            (Some(a), Some(b)) if b > a => format!("{}{}", &l[..a], &l[b + 1..]),
            _ => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}
