//! Thin, safe wrappers around the Linux system calls `prec record` needs.
//!
//! This module (together with [`crate::ring`]) is the only place in the crate
//! that contains `unsafe` code.  Everything exported here is safe to call:
//!
//! * [`PerfEventAttr`]: `struct perf_event_attr` in its 128-byte VER7 layout,
//!   with named bit constants for the `flags` bitfield ([`flags`]),
//!   `sample_type` ([`sample`]) and `read_format` ([`read_format`]) bits, and
//!   [`PerfEventAttr::as_bytes`] for writing the attr into perf.data.
//! * [`perf_event_open`] (always with `PERF_FLAG_FD_CLOEXEC`) and the
//!   `PERF_EVENT_IOC_*` ioctls as safe functions on borrowed fds.
//! * [`page_size`], [`online_cpus`] / [`parse_cpu_list`].
//! * Process primitives used by [`crate::launch`]: [`pipe_cloexec`],
//!   [`fork_gated_exec`], [`waitpid`], [`kill`], [`install_forward_handlers`].
//! * [`uname`] and [`vdso_image`] (a copy of this process's vDSO).

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

/// `PERF_TYPE_*` values for [`PerfEventAttr::type_`].
pub mod perf_type {
    pub const HARDWARE: u32 = 0;
    pub const SOFTWARE: u32 = 1;
    pub const TRACEPOINT: u32 = 2;
    pub const HW_CACHE: u32 = 3;
    pub const RAW: u32 = 4;
    pub const BREAKPOINT: u32 = 5;
}

/// The attr's flag bits (little-endian numbering), `PERF_SAMPLE_*` bits and
/// `PERF_FORMAT_*` bits: one definition, shared with the file format.
pub use prec_format::attr::flags;
pub use prec_format::constants::read_format;
pub use prec_format::constants::sample_type as sample;

/// `PERF_ATTR_SIZE_VER7`: the size of [`PerfEventAttr`].
pub const PERF_ATTR_SIZE_VER7: u32 = 128;
/// `PERF_FLAG_FD_CLOEXEC`.
pub const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;
/// `PERF_FLAG_PID_CGROUP`: `pid` is a cgroup directory's fd.
pub const PERF_FLAG_PID_CGROUP: u64 = 1 << 2;

/// ioctl request numbers (x86-64/arm64 encoding, identical on both).
pub mod ioc {
    pub const ENABLE: u64 = 0x2400;
    pub const DISABLE: u64 = 0x2401;
    pub const REFRESH: u64 = 0x2402;
    pub const RESET: u64 = 0x2403;
    pub const PERIOD: u64 = 0x4008_2404;
    pub const SET_OUTPUT: u64 = 0x2405;
    pub const SET_FILTER: u64 = 0x4008_2406;
    pub const ID: u64 = 0x8008_2407;
    pub const PAUSE_OUTPUT: u64 = 0x4004_2409;
}

/// `struct perf_event_attr`, VER7 layout (128 bytes), as passed to the kernel
/// and as stored in the perf.data attr section.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `PERF_TYPE_*` ([`perf_type`]).
    pub type_: u32,
    /// Size of the structure; [`PerfEventAttr::new`] sets 128.
    pub size: u32,
    pub config: u64,
    /// `sample_period`, or `sample_freq` when [`flags::FREQ`] is set.
    pub sample_period_or_freq: u64,
    pub sample_type: u64,
    pub read_format: u64,
    /// The bitfield; see [`flags`].
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark`.
    pub wakeup_events: u32,
    pub bp_type: u32,
    /// `config1` / `bp_addr` / `kprobe_func` / `uprobe_path`.
    pub config1: u64,
    /// `config2` / `bp_len` / `kprobe_addr` / `probe_offset`.
    pub config2: u64,
    pub branch_sample_type: u64,
    pub sample_regs_user: u64,
    pub sample_stack_user: u32,
    pub clockid: i32,
    pub sample_regs_intr: u64,
    pub aux_watermark: u32,
    pub sample_max_stack: u16,
    pub reserved_2: u16,
    pub aux_sample_size: u32,
    pub reserved_3: u32,
    pub sig_data: u64,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == 128);

impl PerfEventAttr {
    /// A zeroed attr with `type`, `config` and `size = 128`.
    pub fn new(type_: u32, config: u64) -> Self {
        PerfEventAttr {
            type_,
            size: PERF_ATTR_SIZE_VER7,
            config,
            ..Default::default()
        }
    }

    /// Sets or clears the bits of `mask` in [`PerfEventAttr::flags`].
    pub fn set_flag(&mut self, mask: u64, on: bool) {
        if on {
            self.flags |= mask;
        } else {
            self.flags &= !mask;
        }
    }

    /// True when all bits of `mask` are set.
    pub fn has_flag(&self, mask: u64) -> bool {
        self.flags & mask == mask
    }

    /// `precise_ip` (0..=3).
    pub fn precise_ip(&self) -> u8 {
        ((self.flags & flags::PRECISE_IP_MASK) >> flags::PRECISE_IP_SHIFT) as u8
    }

    /// Sets `precise_ip` (values above 3 are clamped to 3).
    pub fn set_precise_ip(&mut self, p: u8) {
        let p = u64::from(p.min(3));
        self.flags = (self.flags & !flags::PRECISE_IP_MASK) | (p << flags::PRECISE_IP_SHIFT);
    }

    /// The 128 bytes of the struct in native byte order, field by field
    /// (no padding exists in this layout).
    pub fn as_bytes(&self) -> [u8; 128] {
        let mut b = [0u8; 128];
        let mut off = 0usize;
        let mut put = |bytes: &[u8]| {
            b[off..off + bytes.len()].copy_from_slice(bytes);
            off += bytes.len();
        };
        put(&self.type_.to_ne_bytes());
        put(&self.size.to_ne_bytes());
        put(&self.config.to_ne_bytes());
        put(&self.sample_period_or_freq.to_ne_bytes());
        put(&self.sample_type.to_ne_bytes());
        put(&self.read_format.to_ne_bytes());
        put(&self.flags.to_ne_bytes());
        put(&self.wakeup_events.to_ne_bytes());
        put(&self.bp_type.to_ne_bytes());
        put(&self.config1.to_ne_bytes());
        put(&self.config2.to_ne_bytes());
        put(&self.branch_sample_type.to_ne_bytes());
        put(&self.sample_regs_user.to_ne_bytes());
        put(&self.sample_stack_user.to_ne_bytes());
        put(&self.clockid.to_ne_bytes());
        put(&self.sample_regs_intr.to_ne_bytes());
        put(&self.aux_watermark.to_ne_bytes());
        put(&self.sample_max_stack.to_ne_bytes());
        put(&self.reserved_2.to_ne_bytes());
        put(&self.aux_sample_size.to_ne_bytes());
        put(&self.reserved_3.to_ne_bytes());
        put(&self.sig_data.to_ne_bytes());
        b
    }
}

fn cvt(ret: libc::c_long) -> io::Result<libc::c_long> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// `perf_event_open(attr, pid, cpu, group_fd, flags | PERF_FLAG_FD_CLOEXEC)`.
///
/// `pid` −1 means all tasks (needs privileges), `cpu` −1 any CPU; `group_fd`
/// `None` starts a new group. The kernel may write back `attr.size` on
/// `E2BIG`, hence `&mut`.
pub fn perf_event_open(
    attr: &mut PerfEventAttr,
    pid: i32,
    cpu: i32,
    group_fd: Option<BorrowedFd<'_>>,
    flags: u64,
) -> io::Result<OwnedFd> {
    let group = group_fd.map_or(-1, |f| f.as_raw_fd());
    // SAFETY: `attr` is a valid, exclusively borrowed 128-byte perf_event_attr
    // for the duration of the call; the other arguments are plain integers.
    let ret = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *mut PerfEventAttr,
            pid as libc::c_int,
            cpu as libc::c_int,
            group as libc::c_int,
            (flags as libc::c_ulong) | PERF_FLAG_FD_CLOEXEC,
        )
    };
    let fd = cvt(ret)? as RawFd;
    // SAFETY: the kernel just returned this fd to us; nobody else owns it.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn ioctl_arg(fd: BorrowedFd<'_>, req: u64, arg: libc::c_ulong) -> io::Result<()> {
    // SAFETY: the perf ioctls used with this helper take an integer argument
    // (or none); `fd` is a live descriptor for the duration of the call.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), req as _, arg) };
    cvt(ret as libc::c_long).map(|_| ())
}

/// Runs the calling process under `SCHED_FIFO` at `priority` (perf's
/// `--realtime`).
pub fn set_fifo_priority(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param for the duration of the call;
    // pid 0 is the calling process.
    let ret = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    cvt(ret as libc::c_long).map(|_| ())
}

/// How `-u USER` named a user that does not exist (perf's two messages).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserLookupError {
    /// Neither a user name nor a number.
    InvalidUser,
    /// A number that no user has.
    UserNotFound,
}

/// The user id of `user`: a name from the user database (NSS, as perf's
/// `parse_uid`), else a number that belongs to a user.
pub fn user_id(user: &str) -> Result<u32, UserLookupError> {
    let mut buf = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: passwd is plain data (pointers and integers); getpw*_r fills it.
    let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
    let mut result: *mut libc::passwd = std::ptr::null_mut();
    if let Ok(name) = std::ffi::CString::new(user) {
        // SAFETY: `name` is NUL-terminated, `pwd`, `buf` and `result` outlive
        // the call and `buf.len()` is the buffer's size.
        unsafe {
            libc::getpwnam_r(
                name.as_ptr(),
                &mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &mut result,
            )
        };
        if !result.is_null() {
            return Ok(pwd.pw_uid);
        }
    }
    let uid: u32 = user.parse().map_err(|_| UserLookupError::InvalidUser)?;
    // SAFETY: as above; `uid` is a plain integer.
    unsafe { libc::getpwuid_r(uid, &mut pwd, buf.as_mut_ptr(), buf.len(), &mut result) };
    if result.is_null() {
        return Err(UserLookupError::UserNotFound);
    }
    Ok(uid)
}

/// Lets the calling thread run only on `cpus` (perf's `--affinity`).
pub fn set_affinity(cpus: &[u32]) -> io::Result<()> {
    // SAFETY: cpu_set_t is plain data; all zeroes is the empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if (cpu as usize) < libc::CPU_SETSIZE as usize {
            // SAFETY: `cpu` is below CPU_SETSIZE, within `set`.
            unsafe { libc::CPU_SET(cpu as usize, &mut set) };
        }
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is the
    // calling thread.
    let ret = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    cvt(ret as libc::c_long).map(|_| ())
}

/// `PERF_EVENT_IOC_ENABLE`.
pub fn ioc_enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    ioctl_arg(fd, ioc::ENABLE, 0)
}

/// `PERF_EVENT_IOC_DISABLE`.
pub fn ioc_disable(fd: BorrowedFd<'_>) -> io::Result<()> {
    ioctl_arg(fd, ioc::DISABLE, 0)
}

/// `PERF_EVENT_IOC_PAUSE_OUTPUT`: stop (`true`) or resume the writing into
/// `fd`'s ring, so that an overwritable ring can be read whole.
pub fn ioc_pause_output(fd: BorrowedFd<'_>, pause: bool) -> io::Result<()> {
    ioctl_arg(fd, ioc::PAUSE_OUTPUT, libc::c_ulong::from(pause))
}

/// `PERF_EVENT_IOC_SET_OUTPUT`: redirect `fd`'s records into `target`'s ring
/// buffer (same CPU required). `None` stops redirection.
pub fn ioc_set_output(fd: BorrowedFd<'_>, target: Option<BorrowedFd<'_>>) -> io::Result<()> {
    let t = target.map_or(-1, |t| t.as_raw_fd());
    ioctl_arg(fd, ioc::SET_OUTPUT, t as libc::c_ulong)
}

/// `PERF_EVENT_IOC_SET_FILTER`: a tracepoint filter expression.
pub fn ioc_set_filter(fd: BorrowedFd<'_>, filter: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: the kernel reads a NUL-terminated string through the pointer,
    // which `filter` keeps alive for the call; `fd` is a live descriptor.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), ioc::SET_FILTER as _, filter.as_ptr()) };
    cvt(ret as libc::c_long).map(|_| ())
}

/// `PERF_EVENT_IOC_ID`: the kernel's sample id of the event.
pub fn ioc_id(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut id: u64 = 0;
    // SAFETY: PERF_EVENT_IOC_ID writes one u64 through the pointer, which
    // points to a live local.
    let ret = unsafe { libc::ioctl(fd.as_raw_fd(), ioc::ID as _, &mut id as *mut u64) };
    cvt(ret as libc::c_long)?;
    Ok(id)
}

/// `sysconf(_SC_PAGESIZE)` (4096 if sysconf fails).
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory-safety preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as usize
    } else {
        4096
    }
}

/// Parses a kernel CPU list such as `0-3,8,10-11` (whitespace trimmed).
pub fn parse_cpu_list(s: &str) -> io::Result<Vec<u32>> {
    let bad = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("bad cpu list '{}'", s.trim()),
        )
    };
    let mut out = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.trim().parse().map_err(|_| bad())?;
                let b: u32 = b.trim().parse().map_err(|_| bad())?;
                if b < a || b - a > 1 << 20 {
                    return Err(bad());
                }
                out.extend(a..=b);
            }
            None => out.push(part.trim().parse().map_err(|_| bad())?),
        }
    }
    Ok(out)
}

/// Online CPUs from `/sys/devices/system/cpu/online`.
pub fn online_cpus() -> io::Result<Vec<u32>> {
    parse_cpu_list(&std::fs::read_to_string("/sys/devices/system/cpu/online")?)
}

/// `pipe2(O_CLOEXEC)` → (read end, write end).
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` is a valid array of two ints for pipe2 to fill.
    let ret = unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
    cvt(ret as libc::c_long)?;
    // SAFETY: pipe2 succeeded, so both fds are fresh and owned by us.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Forks a child that waits on `gate` and then `execv(path, argv)`.
///
/// Child side (only async-signal-safe calls): resets SIGPIPE/SIGINT/SIGTERM to
/// default and unblocks all signals, reads one byte from `gate` (retrying on
/// EINTR; EOF or error → `_exit(127)` without exec'ing), then execs. If exec
/// fails, the errno is written as 4 native-endian bytes to `err_pipe` (which
/// must be close-on-exec so that a successful exec closes it) and the child
/// `_exit(127)`s. `close_in_child` are closed in the child right after fork
/// (the parent's ends of the pipes: the gate's write end must be closed there
/// or the child would never see EOF). Returns the child pid in the parent.
/// The caller keeps (and later closes) its own copies of the pipe ends.
pub fn fork_gated_exec(
    path: &CStr,
    argv: &[CString],
    gate: BorrowedFd<'_>,
    err_pipe: BorrowedFd<'_>,
    close_in_child: &[BorrowedFd<'_>],
    stdout_to_stderr: bool,
) -> io::Result<i32> {
    // Everything that allocates happens before fork.
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let to_close: Vec<RawFd> = close_in_child.iter().map(|f| f.as_raw_fd()).collect();
    let gate_fd = gate.as_raw_fd();
    let err_fd = err_pipe.as_raw_fd();
    let path_ptr = path.as_ptr();

    // SAFETY: fork has no memory preconditions. After fork the child only
    // calls async-signal-safe functions (close, dup2, signal, sigprocmask,
    // read, execv, write, _exit) on data prepared before the fork, so it is
    // sound even if the parent is multi-threaded.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: child process; see above. `ptrs` is a NULL-terminated array
        // of pointers into `argv`'s CStrings, alive until exec or _exit.
        unsafe {
            for &fd in &to_close {
                libc::close(fd);
            }
            if stdout_to_stderr {
                libc::dup2(2, 1);
            }
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
            let mut b = 0u8;
            loop {
                let r = libc::read(gate_fd, &mut b as *mut u8 as *mut libc::c_void, 1);
                if r == 1 {
                    break;
                }
                if r < 0 && *libc::__errno_location() == libc::EINTR {
                    continue;
                }
                libc::_exit(127);
            }
            libc::execv(path_ptr, ptrs.as_ptr());
            let e: i32 = *libc::__errno_location();
            let bytes = e.to_ne_bytes();
            libc::write(err_fd, bytes.as_ptr() as *const libc::c_void, 4);
            libc::_exit(127);
        }
    }
    Ok(pid)
}

/// Result of [`waitpid`]: `None` when `WNOHANG` and the child still runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WaitStatus {
    Exited(i32),
    Signaled(i32),
}

/// `waitpid(pid, &status, nohang ? WNOHANG : 0)`, retrying on EINTR; stops
/// (not requested) are never reported.
pub fn waitpid(pid: i32, nohang: bool) -> io::Result<Option<WaitStatus>> {
    loop {
        let mut status: libc::c_int = 0;
        let opts = if nohang { libc::WNOHANG } else { 0 };
        // SAFETY: `status` is a valid out-pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, opts) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EINTR) {
                continue;
            }
            return Err(e);
        }
        if r == 0 {
            return Ok(None);
        }
        if libc::WIFEXITED(status) {
            return Ok(Some(WaitStatus::Exited(libc::WEXITSTATUS(status))));
        }
        if libc::WIFSIGNALED(status) {
            return Ok(Some(WaitStatus::Signaled(libc::WTERMSIG(status))));
        }
        if nohang {
            return Ok(None);
        }
    }
}

/// `kill(pid, sig)`.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill has no memory-safety preconditions.
    let r = unsafe { libc::kill(pid, sig) };
    cvt(r as libc::c_long).map(|_| ())
}

/// `access(path, X_OK)` on a regular file: Ok if executable, else the errno.
pub fn access_exec(path: &CStr) -> io::Result<()> {
    // SAFETY: `path` is a valid NUL-terminated string.
    let r = unsafe { libc::access(path.as_ptr(), libc::X_OK) };
    cvt(r as libc::c_long).map(|_| ())
}

/// Pid that [`install_forward_handlers`]' handler forwards signals to (0 = none).
pub static FORWARD_PID: AtomicI32 = AtomicI32::new(0);
/// Set by the handler when SIGINT/SIGTERM/SIGHUP arrived.
pub static SIGNAL_SEEN: AtomicBool = AtomicBool::new(false);
/// The last signal number the handler saw (0 = none).
pub static LAST_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn forward_handler(sig: libc::c_int) {
    SIGNAL_SEEN.store(true, Ordering::SeqCst);
    LAST_SIGNAL.store(sig, Ordering::SeqCst);
    let pid = FORWARD_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe; errno is saved/restored below.
        unsafe {
            let saved = *libc::__errno_location();
            libc::kill(pid, sig);
            *libc::__errno_location() = saved;
        }
    }
}

/// Set by the SIGUSR2 handler of `--switch-output`.
pub static SWITCH_REQUESTED: AtomicBool = AtomicBool::new(false);

extern "C" fn switch_handler(_sig: libc::c_int) {
    SWITCH_REQUESTED.store(true, Ordering::SeqCst);
}

/// Installs a SIGUSR2 handler (with `SA_RESTART`) that sets
/// [`SWITCH_REQUESTED`], or (`ignore`) ignores SIGUSR2.
pub fn install_switch_handler(ignore: bool) -> io::Result<()> {
    let handler = if ignore {
        libc::SIG_IGN
    } else {
        switch_handler as *const () as libc::sighandler_t
    };
    // SAFETY: a zeroed sigaction is a valid starting point; the handler is
    // SIG_IGN or an `extern "C" fn(c_int)` that only stores to an atomic.
    let r = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = handler;
        sa.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut sa.sa_mask);
        libc::sigaction(libc::SIGUSR2, &sa, std::ptr::null_mut())
    };
    cvt(r as libc::c_long)?;
    Ok(())
}

/// Installs a `sigaction` handler (with `SA_RESTART`) for each of `signals`
/// that sets [`SIGNAL_SEEN`]/[`LAST_SIGNAL`] and forwards the signal to
/// [`FORWARD_PID`] if it is > 0.
pub fn install_forward_handlers(signals: &[i32]) -> io::Result<()> {
    for &sig in signals {
        // SAFETY: a zeroed sigaction is a valid starting point; the handler is
        // an `extern "C" fn(c_int)` that only touches atomics and calls the
        // async-signal-safe kill().
        let r = unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = forward_handler as *const () as libc::sighandler_t;
            sa.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut())
        };
        cvt(r as libc::c_long)?;
    }
    Ok(())
}

/// `uname(2)` fields as strings.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Uname {
    pub sysname: String,
    pub nodename: String,
    pub release: String,
    pub version: String,
    pub machine: String,
}

/// `uname(2)`.
pub fn uname() -> io::Result<Uname> {
    // SAFETY: utsname is plain old data; zeroed is valid and uname fills it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `u` is a valid out-pointer.
    let r = unsafe { libc::uname(&mut u) };
    cvt(r as libc::c_long)?;
    fn field(f: &[libc::c_char]) -> String {
        let bytes: Vec<u8> = f
            .iter()
            .take_while(|&&c| c != 0)
            .map(|&c| c as u8)
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }
    Ok(Uname {
        sysname: field(&u.sysname),
        nodename: field(&u.nodename),
        release: field(&u.release),
        version: field(&u.version),
        machine: field(&u.machine),
    })
}

/// `getauxval(AT_SYSINFO_EHDR)`: the vDSO's load address (0 if none).
pub fn vdso_base() -> u64 {
    // SAFETY: getauxval has no memory-safety preconditions.
    unsafe { libc::getauxval(libc::AT_SYSINFO_EHDR) as u64 }
}

/// A copy of this process's vDSO image (the `[vdso]` mapping of
/// `/proc/self/maps`, checked against `getauxval(AT_SYSINFO_EHDR)` and copied
/// out of our own address space). `None` if there is no vDSO.
pub fn vdso_image() -> Option<Vec<u8>> {
    let base = vdso_base();
    if base == 0 {
        return None;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let (start, end) = maps.lines().find_map(|l| {
        if !l.trim_end().ends_with("[vdso]") {
            return None;
        }
        let range = l.split_whitespace().next()?;
        let (a, b) = range.split_once('-')?;
        Some((
            u64::from_str_radix(a, 16).ok()?,
            u64::from_str_radix(b, 16).ok()?,
        ))
    })?;
    if start != base || end <= start || end - start > 64 << 20 {
        return None;
    }
    let len = (end - start) as usize;
    // SAFETY: [start, end) is the readable [vdso] mapping of this very
    // process (cross-checked with AT_SYSINFO_EHDR); the vDSO is never
    // unmapped or written to, so reading `len` bytes from it is sound. The
    // pointer does not escape: the bytes are copied into a Vec.
    let bytes = unsafe { std::slice::from_raw_parts(start as usize as *const u8, len) };
    Some(bytes.to_vec())
}

/// Whether `fd` is an open descriptor of this process.
pub fn fd_is_open(fd: RawFd) -> bool {
    // SAFETY: F_GETFD only reads the descriptor table; any integer is a
    // valid argument (EBADF for a closed one).
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

/// Sets `O_NONBLOCK` on an open `fd`.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL on an integer fd touch no memory of ours.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    cvt(flags as libc::c_long)?;
    // SAFETY: as above.
    let ret = unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) };
    cvt(ret as libc::c_long).map(|_| ())
}

/// `read(fd, buf)`.
pub fn read_fd(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `buf` is writable for `buf.len()` bytes during the call.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    cvt(n as libc::c_long).map(|n| n as usize)
}

/// Writes all of `bytes` to `fd`.
pub fn write_fd(fd: BorrowedFd<'_>, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        // SAFETY: `bytes` is readable for `bytes.len()` bytes during the call.
        let n = unsafe { libc::write(fd.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
        match cvt(n as libc::c_long) {
            Ok(n) => bytes = &bytes[n as usize..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One entry for [`poll`]: a raw fd (negative = ignored) and the returned
/// events.
#[derive(Clone, Copy, Debug)]
pub struct PollFd {
    pub fd: RawFd,
    /// `revents` after [`poll`].
    pub revents: i16,
}

/// `POLLIN | POLLHUP | POLLERR` bits for [`PollFd::revents`].
pub mod pollbits {
    pub const IN: i16 = libc::POLLIN;
    pub const HUP: i16 = libc::POLLHUP;
    pub const ERR: i16 = libc::POLLERR;
}

/// `poll(fds, timeout_ms)` waiting for `POLLIN` on every fd; returns the
/// number of fds with events, 0 on timeout or `EINTR` (a signal arrived).
pub fn poll(fds: &mut [PollFd], timeout_ms: i32) -> io::Result<usize> {
    let mut raw: Vec<libc::pollfd> = fds
        .iter()
        .map(|f| libc::pollfd {
            fd: f.fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: `raw` is a valid array of `raw.len()` pollfd structs that the
    // kernel may write (revents) during the call; it outlives the call.
    let r = unsafe { libc::poll(raw.as_mut_ptr(), raw.len() as libc::nfds_t, timeout_ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            for f in fds.iter_mut() {
                f.revents = 0;
            }
            return Ok(0);
        }
        return Err(e);
    }
    for (f, r) in fds.iter_mut().zip(&raw) {
        f.revents = r.revents;
    }
    Ok(r as usize)
}

/// `clock_gettime(clockid)` in ns.
pub fn clock_gettime_ns(clockid: i32) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_gettime(clockid as libc::clockid_t, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `clock_getres(clockid)` in ns.
pub fn clock_getres_ns(clockid: i32) -> io::Result<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec.
    if unsafe { libc::clock_getres(clockid as libc::clockid_t, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// `gettimeofday` in ns (microsecond precision, as perf's CLOCK_DATA).
pub fn gettimeofday_ns() -> u64 {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; a null timezone is allowed.
    unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) };
    tv.tv_sec as u64 * 1_000_000_000 + tv.tv_usec as u64 * 1000
}

/// The local time zone's offset from UTC in seconds at `secs` since the
/// epoch (`localtime_r`'s `tm_gmtoff`); 0 where the time cannot be
/// converted.
pub fn utc_offset_at(secs: i64) -> i64 {
    // A 32-bit time_t wraps past 2038, as perf's own conversion would.
    let t = secs as libc::time_t;
    // SAFETY: an all-zero `tm` is a valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r writes only
    // `tm` and is thread-safe.
    if unsafe { libc::localtime_r(&t, &mut tm) }.is_null() {
        return 0;
    }
    tm.tm_gmtoff
}

/// perf's `fetch_current_timestamp`: local time as `YYYYMMDDhhmmss` and
/// hundredths of a second (`--timestamp-filename`).
pub fn local_timestamp() -> io::Result<String> {
    let mut tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 0,
    };
    // SAFETY: `tv` is a valid, writable timeval; a null timezone is allowed.
    if unsafe { libc::gettimeofday(&mut tv, std::ptr::null_mut()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: an all-zero `tm` is a valid value of this plain C struct.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both pointers are valid for the call; localtime_r writes only
    // `tm` and is thread-safe.
    if unsafe { libc::localtime_r(&tv.tv_sec, &mut tm) }.is_null() {
        return Err(io::Error::last_os_error());
    }
    Ok(format!(
        "{:04}{:02}{:02}{:02}{:02}{:02}{:02}",
        tm.tm_year + 1900,
        tm.tm_mon + 1,
        tm.tm_mday,
        tm.tm_hour,
        tm.tm_min,
        tm.tm_sec,
        tv.tv_usec / 10000
    ))
}
