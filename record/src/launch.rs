//! Launching the profiled workload behind a start gate (like `perf record`).
//!
//! Sequence:
//! 1. [`Launched::spawn`] resolves the command like `execvp` (PATH search),
//!    so a missing command is reported *before* anything else (no perf.data
//!    is created), builds the argv `CString`s, creates a gate pipe and a
//!    close-on-exec error pipe, and forks. The child blocks reading the gate.
//! 2. The caller opens its events on [`SuspendedChild::pid`]
//!    (`disabled=1, enable_on_exec=1`).
//! 3. [`SuspendedChild::start`] releases the gate and waits on the error
//!    pipe: EOF means exec succeeded (the kernel closed the cloexec pipe), four
//!    bytes are the exec errno → [`LaunchError::Exec`] ("failed to run 'cmd':
//!    No such file or directory").
//! 4. [`RunningChild::wait`] / [`RunningChild::try_wait`] give an
//!    [`ExitStatus`]; [`ExitStatus::shell_code`] is the exit code, or
//!    128 + signal.
//!
//! Dropping a [`SuspendedChild`] closes the gate: the child exits (127)
//! without exec'ing and is reaped.
//!
//! [`install_signal_forwarding`] installs SIGINT/SIGTERM/SIGHUP handlers that
//! record the signal ([`signal_received`]) and forward it to the pid set
//! with [`set_forward_pid`].
#![forbid(unsafe_code)]

use std::ffi::{CString, OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use crate::sys;

/// Why the workload could not be started.
#[derive(Debug)]
pub enum LaunchError {
    /// The command was not found / not executable (before fork), or exec
    /// failed in the child; `error` carries the errno.
    Exec { program: String, error: io::Error },
    /// Some other system call failed (pipe, fork, ...).
    Io(io::Error),
}

impl LaunchError {
    /// The raw errno, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            LaunchError::Exec { error, .. } | LaunchError::Io(error) => error.raw_os_error(),
        }
    }
}

impl fmt::Display for LaunchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LaunchError::Exec { program, error } => {
                write!(f, "failed to run '{program}': {}", strip_os_error(error))
            }
            LaunchError::Io(e) => write!(f, "failed to start the workload: {e}"),
        }
    }
}

/// "No such file or directory (os error 2)" → "No such file or directory".
fn strip_os_error(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

impl std::error::Error for LaunchError {}

impl From<io::Error> for LaunchError {
    fn from(e: io::Error) -> Self {
        LaunchError::Io(e)
    }
}

/// How the workload ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    /// Normal exit with this code.
    Exited(i32),
    /// Killed by this signal.
    Signaled(i32),
}

impl ExitStatus {
    /// Exit code as a shell reports it: the code, or 128 + signal number.
    pub fn shell_code(&self) -> i32 {
        match *self {
            ExitStatus::Exited(c) => c,
            ExitStatus::Signaled(s) => 128 + s,
        }
    }

    /// True for `Exited(0)`.
    pub fn success(&self) -> bool {
        *self == ExitStatus::Exited(0)
    }
}

impl From<sys::WaitStatus> for ExitStatus {
    fn from(w: sys::WaitStatus) -> Self {
        match w {
            sys::WaitStatus::Exited(c) => ExitStatus::Exited(c),
            sys::WaitStatus::Signaled(s) => ExitStatus::Signaled(s),
        }
    }
}

/// Resolves `program` like `execvp`: a name containing `/` is used as is,
/// otherwise each `$PATH` entry is tried (default `/bin:/usr/bin`; empty
/// entries mean the current directory). The first existing, executable,
/// non-directory candidate wins. Errors carry ENOENT (nothing found) or
/// EACCES (found but not executable).
pub fn resolve_program(program: &OsStr) -> Result<PathBuf, LaunchError> {
    let name = program.to_string_lossy().into_owned();
    let err = |errno: i32| LaunchError::Exec {
        program: name.clone(),
        error: io::Error::from_raw_os_error(errno),
    };
    if program.is_empty() {
        return Err(err(libc::ENOENT));
    }
    let check = |p: &Path| -> Result<(), i32> {
        let meta = std::fs::metadata(p).map_err(|e| e.raw_os_error().unwrap_or(libc::ENOENT))?;
        if meta.is_dir() {
            return Err(libc::EACCES);
        }
        let c = CString::new(p.as_os_str().as_bytes()).map_err(|_| libc::ENOENT)?;
        sys::access_exec(&c).map_err(|e| e.raw_os_error().unwrap_or(libc::EACCES))
    };
    if program.as_bytes().contains(&b'/') {
        let p = PathBuf::from(program);
        return check(&p).map(|_| p).map_err(err);
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| OsString::from("/bin:/usr/bin"));
    let mut saw_eacces = false;
    for dir in path.as_bytes().split(|&b| b == b':') {
        let dir = if dir.is_empty() {
            Path::new(".")
        } else {
            Path::new(OsStr::from_bytes(dir))
        };
        let cand = dir.join(program);
        match check(&cand) {
            Ok(()) => return Ok(cand),
            Err(libc::EACCES) => saw_eacces = true,
            Err(_) => {}
        }
    }
    Err(err(if saw_eacces {
        libc::EACCES
    } else {
        libc::ENOENT
    }))
}

/// Namespace for [`Launched::spawn`].
pub struct Launched;

impl Launched {
    /// Resolves `argv[0]`, forks, and leaves the child waiting at the gate.
    /// A missing/non-executable command fails here, before fork.
    pub fn spawn<S: AsRef<OsStr>>(argv: &[S]) -> Result<SuspendedChild, LaunchError> {
        Self::spawn_with(argv, false)
    }

    /// [`Launched::spawn`]; with `stdout_to_stderr` the workload's stdout
    /// is its stderr, as perf does when the recording itself goes to
    /// stdout (pipe mode): the program's output would corrupt the data.
    pub fn spawn_with<S: AsRef<OsStr>>(
        argv: &[S],
        stdout_to_stderr: bool,
    ) -> Result<SuspendedChild, LaunchError> {
        let first = argv.first().ok_or_else(|| {
            LaunchError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "empty command line",
            ))
        })?;
        let program = first.as_ref().to_string_lossy().into_owned();
        let path = resolve_program(first.as_ref())?;
        let nul_err = || {
            LaunchError::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "command line contains a NUL byte",
            ))
        };
        let cpath = CString::new(path.into_os_string().into_vec()).map_err(|_| nul_err())?;
        let cargs = argv
            .iter()
            .map(|a| CString::new(a.as_ref().as_bytes()).map_err(|_| nul_err()))
            .collect::<Result<Vec<_>, _>>()?;
        let (gate_r, gate_w) = sys::pipe_cloexec()?;
        let (err_r, err_w) = sys::pipe_cloexec()?;
        let pid = sys::fork_gated_exec(
            &cpath,
            &cargs,
            gate_r.as_fd(),
            err_w.as_fd(),
            &[gate_w.as_fd(), err_r.as_fd()],
            stdout_to_stderr,
        )?;
        drop(gate_r);
        drop(err_w);
        Ok(SuspendedChild {
            pid,
            program,
            gate: Some(gate_w),
            err_pipe: Some(err_r),
        })
    }
}

/// A forked child blocked before exec.
#[derive(Debug)]
pub struct SuspendedChild {
    pid: i32,
    program: String,
    gate: Option<OwnedFd>,
    err_pipe: Option<OwnedFd>,
}

impl SuspendedChild {
    /// Same as [`Launched::spawn`].
    pub fn spawn<S: AsRef<OsStr>>(argv: &[S]) -> Result<SuspendedChild, LaunchError> {
        Launched::spawn(argv)
    }

    /// The child's pid (open events on it before [`SuspendedChild::start`]).
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Releases the gate and waits until the child has exec'd. On exec
    /// failure the child is reaped and [`LaunchError::Exec`] returned.
    pub fn start(mut self) -> Result<RunningChild, LaunchError> {
        let pid = self.pid;
        let program = std::mem::take(&mut self.program);
        let gate = self.gate.take();
        let err_pipe = self.err_pipe.take();
        // From here on `self` holds nothing; its Drop is a no-op.
        let (Some(gate), Some(err_pipe)) = (gate, err_pipe) else {
            return Err(LaunchError::Io(io::Error::other("child already started")));
        };
        let mut gate = File::from(gate);
        let released = gate.write_all(b"g");
        drop(gate);
        if let Err(e) = released {
            let _ = sys::kill(pid, libc::SIGKILL);
            let _ = sys::waitpid(pid, false);
            return Err(LaunchError::Io(e));
        }
        let mut buf = Vec::with_capacity(4);
        let mut errf = File::from(err_pipe);
        let read = errf.read_to_end(&mut buf);
        if let Err(e) = read {
            return Err(LaunchError::Io(e));
        }
        if buf.len() >= 4 {
            let errno = i32::from_ne_bytes([buf[0], buf[1], buf[2], buf[3]]);
            let _ = sys::waitpid(pid, false);
            return Err(LaunchError::Exec {
                program,
                error: io::Error::from_raw_os_error(errno),
            });
        }
        Ok(RunningChild { pid, reaped: None })
    }
}

impl Drop for SuspendedChild {
    fn drop(&mut self) {
        if self.gate.take().is_some() {
            // The closed gate makes the child _exit(127) without exec.
            self.err_pipe = None;
            let _ = sys::waitpid(self.pid, false);
        }
    }
}

/// The exec'd workload.
#[derive(Debug)]
pub struct RunningChild {
    pid: i32,
    reaped: Option<ExitStatus>,
}

impl RunningChild {
    /// The workload's pid.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Blocks until the workload exits (retries on EINTR). Idempotent.
    pub fn wait(&mut self) -> io::Result<ExitStatus> {
        if let Some(s) = self.reaped {
            return Ok(s);
        }
        match sys::waitpid(self.pid, false)? {
            Some(s) => {
                self.reaped = Some(s.into());
                Ok(s.into())
            }
            None => Err(io::Error::other("waitpid returned no status")),
        }
    }

    /// Non-blocking: `Ok(None)` while the workload runs.
    pub fn try_wait(&mut self) -> io::Result<Option<ExitStatus>> {
        if let Some(s) = self.reaped {
            return Ok(Some(s));
        }
        let s = sys::waitpid(self.pid, true)?.map(ExitStatus::from);
        self.reaped = s;
        Ok(s)
    }

    /// Sends `sig` to the workload (no-op error if it was already reaped).
    pub fn kill(&self, sig: i32) -> io::Result<()> {
        if self.reaped.is_some() {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        sys::kill(self.pid, sig)
    }
}

/// Installs SIGINT, SIGTERM and SIGHUP handlers (sigaction, SA_RESTART) that
/// set a flag ([`signal_received`]) and forward the signal to the pid set
/// with [`set_forward_pid`].
pub fn install_signal_forwarding() -> io::Result<()> {
    sys::install_forward_handlers(&[libc::SIGINT, libc::SIGTERM, libc::SIGHUP])
}

/// Sets the pid signals are forwarded to (0 disables forwarding).
pub fn set_forward_pid(pid: i32) {
    sys::FORWARD_PID.store(pid, Ordering::SeqCst);
}

/// The last forwarded signal, if one arrived since start or the last
/// [`clear_signal`].
pub fn signal_received() -> Option<i32> {
    if sys::SIGNAL_SEEN.load(Ordering::SeqCst) {
        Some(sys::LAST_SIGNAL.load(Ordering::SeqCst))
    } else {
        None
    }
}

/// Makes SIGUSR2 ask for an output switch ([`take_switch_request`]), as
/// `perf record --switch-output` does; without it (`enabled` false)
/// SIGUSR2 is ignored, as perf record ignores it.
pub fn install_switch_request(enabled: bool) -> io::Result<()> {
    sys::install_switch_handler(!enabled)
}

/// Whether SIGUSR2 arrived since the last call.
pub fn take_switch_request() -> bool {
    sys::SWITCH_REQUESTED.swap(false, Ordering::SeqCst)
}

/// Resets the flag read by [`signal_received`].
pub fn clear_signal() {
    sys::SIGNAL_SEEN.store(false, Ordering::SeqCst);
    sys::LAST_SIGNAL.store(0, Ordering::SeqCst);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_command_fails_before_fork() {
        let e = Launched::spawn(&["nosuchcmd-prec-test"]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
        assert_eq!(
            e.to_string(),
            "failed to run 'nosuchcmd-prec-test': No such file or directory"
        );
        let e = Launched::spawn(&["/etc/passwd"]).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EACCES));
    }

    #[test]
    fn exec_failure_reported_through_cloexec_pipe() {
        // A script without a shebang passes access(X_OK) but execv fails with
        // ENOEXEC (execvp would retry with /bin/sh; we report the error).
        let dir = std::env::temp_dir().join(format!("prec-launch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("noexec");
        std::fs::write(&f, [0x7f, b'E', b'L', b'F', 0, 0, 0, 0]).unwrap();
        std::fs::set_permissions(&f, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let child = Launched::spawn(&[f.as_os_str()]).unwrap();
        assert!(child.pid() > 0);
        let e = child.start().unwrap_err();
        assert!(matches!(e, LaunchError::Exec { .. }), "{e:?}");
        assert_eq!(e.raw_os_error(), Some(libc::ENOEXEC));
        assert!(e.to_string().starts_with("failed to run '"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn gate_holds_child_until_start() {
        let dir = std::env::temp_dir().join(format!("prec-gate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let marker = dir.join("ran");
        let cmd = format!("touch {}; exit 3", marker.display());
        let child = Launched::spawn(&["sh", "-c", &cmd]).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!marker.exists(), "child ran before the gate opened");
        let mut running = child.start().unwrap();
        let st = running.wait().unwrap();
        assert_eq!(st, ExitStatus::Exited(3));
        assert_eq!(st.shell_code(), 3);
        assert!(marker.exists());
        // Dropping a suspended child never runs it.
        let marker2 = dir.join("ran2");
        let cmd2 = format!("touch {}", marker2.display());
        drop(Launched::spawn(&["sh", "-c", &cmd2]).unwrap());
        assert!(!marker2.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn signaled_exit_code() {
        let mut c = Launched::spawn(&["sleep", "5"]).unwrap().start().unwrap();
        assert_eq!(c.try_wait().unwrap(), None);
        c.kill(libc::SIGTERM).unwrap();
        let st = c.wait().unwrap();
        assert_eq!(st, ExitStatus::Signaled(libc::SIGTERM));
        assert_eq!(st.shell_code(), 143);
    }
}

#[cfg(test)]
mod signal_tests {
    use super::*;

    #[test]
    fn sigterm_is_forwarded_to_child() {
        let mut c = Launched::spawn(&["sleep", "5"]).unwrap().start().unwrap();
        install_signal_forwarding().unwrap();
        set_forward_pid(c.pid());
        sys::kill(std::process::id() as i32, libc::SIGTERM).unwrap();
        let st = c.wait().unwrap();
        set_forward_pid(0);
        assert_eq!(st, ExitStatus::Signaled(libc::SIGTERM));
        assert_eq!(signal_received(), Some(libc::SIGTERM));
        clear_signal();
        assert_eq!(signal_received(), None);
    }
}
