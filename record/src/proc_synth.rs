//! Reading `/proc` for synthesizing records about already-running processes
//! (`-p`, `-t`, `-a`) and the kernel.
//!
//! Returns plain structs; turning them into COMM/FORK/MMAP/MMAP2 records is
//! left to the caller:
//!
//! * [`all_pids`]: every numeric entry of `/proc` (for `-a`);
//! * [`threads`]: the tids of `/proc/PID/task`;
//! * [`thread_comm`], [`proc_status`] (Name/Tgid/Pid/PPid);
//! * [`exec_maps`] / [`parse_maps`]: executable mappings of `/proc/PID/maps`
//!   (including `[vdso]`, like perf) with dev major/minor, inode, prot and
//!   private/shared flags;
//! * [`kernel_text`]: `_text`/`_etext` from `/proc/kallsyms` (0 when
//!   addresses are hidden by kptr_restrict);
//! * [`modules`] / [`parse_modules`]: `/proc/modules` (empty if absent).
#![forbid(unsafe_code)]

use std::fs;
use std::io::{self, BufRead};
use std::path::Path;
use std::time::{Duration, Instant};

fn invalid(msg: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn numeric_dir_entries(dir: &Path) -> io::Result<Vec<i32>> {
    let mut out: Vec<i32> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()))
        .collect();
    out.sort_unstable();
    Ok(out)
}

/// All process ids in `/proc`, ascending.
pub fn all_pids() -> io::Result<Vec<i32>> {
    numeric_dir_entries(Path::new("/proc"))
}

/// Process ids whose `/proc/PID` belongs to `uid` (perf's thread map for
/// `-u`), ascending.
pub fn processes_of_user(uid: u32) -> io::Result<Vec<i32>> {
    use std::os::unix::fs::MetadataExt;
    Ok(all_pids()?
        .into_iter()
        .filter(|pid| fs::metadata(format!("/proc/{pid}")).is_ok_and(|m| m.uid() == uid))
        .collect())
}

/// Thread ids of `pid` (`/proc/PID/task`), ascending.
pub fn threads(pid: i32) -> io::Result<Vec<i32>> {
    numeric_dir_entries(&Path::new("/proc").join(pid.to_string()).join("task"))
}

/// `/proc/PID/task/TID/comm` without the trailing newline.
pub fn thread_comm(pid: i32, tid: i32) -> io::Result<String> {
    let s = fs::read_to_string(format!("/proc/{pid}/task/{tid}/comm"))?;
    Ok(s.strip_suffix('\n').unwrap_or(&s).to_string())
}

/// Fields of `/proc/PID/status` used for synthesis.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcStatus {
    /// `Name:` (the comm).
    pub name: String,
    pub tgid: i32,
    pub pid: i32,
    pub ppid: i32,
}

/// Parses the text of a `/proc/PID/status` (or `/proc/PID/task/TID/status`).
pub fn parse_status(text: &str) -> io::Result<ProcStatus> {
    let mut st = ProcStatus::default();
    let (mut have_tgid, mut have_pid) = (false, false);
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        let num = || {
            v.parse::<i32>()
                .map_err(|_| invalid(format!("bad {k} value '{v}'")))
        };
        match k {
            "Name" => st.name = v.to_string(),
            "Tgid" => {
                st.tgid = num()?;
                have_tgid = true;
            }
            "Pid" => {
                st.pid = num()?;
                have_pid = true;
            }
            "PPid" => st.ppid = num()?,
            _ => {}
        }
    }
    if !have_tgid || !have_pid {
        return Err(invalid("status without Tgid/Pid".to_string()));
    }
    Ok(st)
}

/// Reads `/proc/PID/status`.
pub fn proc_status(pid: i32) -> io::Result<ProcStatus> {
    parse_status(&fs::read_to_string(format!("/proc/{pid}/status"))?)
}

/// Reads `/proc/PID/task/TID/status`.
pub fn thread_status(pid: i32, tid: i32) -> io::Result<ProcStatus> {
    parse_status(&fs::read_to_string(format!(
        "/proc/{pid}/task/{tid}/status"
    ))?)
}

/// One line of `/proc/PID/maps`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapEntry {
    pub start: u64,
    pub end: u64,
    /// File offset.
    pub pgoff: u64,
    pub dev_major: u32,
    pub dev_minor: u32,
    pub inode: u64,
    /// `PROT_READ|PROT_WRITE|PROT_EXEC` bits (libc values).
    pub prot: u32,
    /// `MAP_PRIVATE` or `MAP_SHARED` (libc values), as perf puts in MMAP2.
    pub flags: u32,
    /// The path, `[vdso]`, `[heap]`, ..., or empty for anonymous maps. A
    /// trailing ` (deleted)` is kept as the kernel printed it.
    pub path: String,
}

impl MapEntry {
    /// True for `PROT_EXEC` mappings.
    pub fn is_exec(&self) -> bool {
        self.prot & libc::PROT_EXEC as u32 != 0
    }

    /// `end - start`.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// True for an empty range.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Parses one maps line: `start-end perms offset maj:min inode   path`.
pub fn parse_maps_line(line: &str) -> io::Result<MapEntry> {
    let bad = || invalid(format!("bad maps line '{line}'"));
    let mut it = line.splitn(6, ' ');
    let range = it.next().ok_or_else(bad)?;
    let perms = it.next().ok_or_else(bad)?.as_bytes();
    let off = it.next().ok_or_else(bad)?;
    let dev = it.next().ok_or_else(bad)?;
    let inode = it.next().ok_or_else(bad)?;
    let path = it.next().unwrap_or("").trim_start().to_string();
    let (s, e) = range.split_once('-').ok_or_else(bad)?;
    let hex = |x: &str| u64::from_str_radix(x, 16).map_err(|_| bad());
    let (maj, min) = dev.split_once(':').ok_or_else(bad)?;
    let hex32 = |x: &str| u32::from_str_radix(x, 16).map_err(|_| bad());
    if perms.len() < 4 {
        return Err(bad());
    }
    let mut prot = 0u32;
    if perms[0] == b'r' {
        prot |= libc::PROT_READ as u32;
    }
    if perms[1] == b'w' {
        prot |= libc::PROT_WRITE as u32;
    }
    if perms[2] == b'x' {
        prot |= libc::PROT_EXEC as u32;
    }
    let flags = if perms[3] == b's' {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    } as u32;
    Ok(MapEntry {
        start: hex(s)?,
        end: hex(e)?,
        pgoff: hex(off)?,
        dev_major: hex32(maj)?,
        dev_minor: hex32(min)?,
        inode: inode.parse().map_err(|_| bad())?,
        prot,
        flags,
        path,
    })
}

/// Parses a whole maps file (all entries).
pub fn parse_maps(text: &str) -> io::Result<Vec<MapEntry>> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(parse_maps_line)
        .collect()
}

/// The executable mappings of `/proc/PID/maps` that perf synthesizes MMAP2
/// records for: `PROT_EXEC` and either file-backed, `[vdso]` or
/// `[vsyscall]` (perf 6.1 writes the `--xp` vsyscall page too; anonymous
/// executable memory is skipped).
pub fn exec_maps(pid: i32) -> io::Result<Vec<MapEntry>> {
    Ok(exec_maps_within(pid, None)?.0)
}

/// [`exec_maps`], read for at most `timeout` (perf's `--proc-map-timeout`:
/// the kernel formats a huge process's maps slowly). Also returns the
/// mapping (of any kind) read when the time ran out, if it did: perf
/// writes that one with a PROC_MAP_PARSE_TIMEOUT mark.
pub fn exec_maps_within(
    pid: i32,
    timeout: Option<Duration>,
) -> io::Result<(Vec<MapEntry>, Option<MapEntry>)> {
    let start = Instant::now();
    let file = fs::File::open(format!("/proc/{pid}/maps"))?;
    let mut maps = Vec::new();
    for line in io::BufReader::new(file).lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let m = parse_maps_line(&line)?;
        if timeout.is_some_and(|t| start.elapsed() > t) {
            return Ok((maps, Some(m)));
        }
        if m.is_exec() && (m.path.starts_with('/') || m.path == "[vdso]" || m.path == "[vsyscall]")
        {
            maps.push(m);
        }
    }
    Ok((maps, None))
}

/// Kernel text range from `/proc/kallsyms`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KernelText {
    /// Address of `_text` (0 if hidden or absent).
    pub text: u64,
    /// Address of `_etext` (0 if hidden or absent).
    pub etext: u64,
}

/// Finds `_text` and `_etext` in kallsyms text (first match each).
pub fn parse_kallsyms_text(text: &str) -> KernelText {
    let mut kt = KernelText::default();
    for line in text.lines() {
        let mut it = line.split_whitespace();
        let (Some(addr), Some(_ty), Some(name)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let slot = match name {
            "_text" if kt.text == 0 => &mut kt.text,
            "_etext" if kt.etext == 0 => &mut kt.etext,
            _ => continue,
        };
        *slot = u64::from_str_radix(addr, 16).unwrap_or(0);
        if kt.text != 0 && kt.etext != 0 {
            break;
        }
    }
    kt
}

/// `_text`/`_etext` of the running kernel (zeros when restricted).
///
/// The kernel formats all of `/proc/kallsyms` for every read (about 70 ms
/// for 120k symbols), which would be most of `prec record -- true`. The
/// addresses cannot change until the next boot, so they are cached per boot
/// and user under `$XDG_CACHE_HOME/prec` (or `~/.cache/prec`).
pub fn kernel_text() -> io::Result<KernelText> {
    let cache = kernel_text_cache_path();
    if let Some(kt) = cache.as_deref().and_then(read_kernel_text_cache) {
        return Ok(kt);
    }
    let kt = parse_kallsyms_text(&fs::read_to_string("/proc/kallsyms")?);
    if let Some(path) = cache {
        // A cache that cannot be written only costs the next run the read.
        let _ = write_kernel_text_cache(&path, kt);
    }
    Ok(kt)
}

fn kernel_text_cache_path() -> Option<std::path::PathBuf> {
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot_id = boot_id.trim();
    if boot_id.is_empty() || !boot_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(d) if !d.is_empty() => std::path::PathBuf::from(d),
        _ => std::path::PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    let uid = fs::metadata("/proc/self").map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.uid()
    });
    Some(
        base.join("prec")
            .join(format!("kernel-text-{}-{boot_id}", uid.ok()?)),
    )
}

fn read_kernel_text_cache(path: &Path) -> Option<KernelText> {
    let text = fs::read_to_string(path).ok()?;
    let mut it = text.split_whitespace();
    let text_addr = u64::from_str_radix(it.next()?, 16).ok()?;
    let etext = u64::from_str_radix(it.next()?, 16).ok()?;
    Some(KernelText {
        text: text_addr,
        etext,
    })
}

fn write_kernel_text_cache(path: &Path, kt: KernelText) -> io::Result<()> {
    let dir = path.parent().ok_or(io::ErrorKind::NotFound)?;
    fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, format!("{:x} {:x}\n", kt.text, kt.etext))?;
    fs::rename(&tmp, path)
}

/// One line of `/proc/modules`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelModule {
    pub name: String,
    pub size: u64,
    /// Load address (0 when hidden).
    pub addr: u64,
}

/// Parses `/proc/modules` text: `name size refcnt deps state addr`.
pub fn parse_modules(text: &str) -> Vec<KernelModule> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let name = f.first()?.to_string();
            let size = f.get(1)?.parse().ok()?;
            let addr = f
                .get(5)
                .and_then(|a| u64::from_str_radix(a.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            Some(KernelModule { name, size, addr })
        })
        .collect()
}

/// Loaded kernel modules (empty when `/proc/modules` does not exist, e.g. a
/// kernel without module support).
pub fn modules() -> io::Result<Vec<KernelModule>> {
    match fs::read_to_string("/proc/modules") {
        Ok(t) => Ok(parse_modules(&t)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// The cgroup hierarchy perf's `perf_event__synthesize_cgroups` walks: the
/// v1 hierarchy with the `perf_event` controller, else the cgroup2 one.
/// Returns its mount point from `/proc/mounts` text.
pub fn parse_cgroup_mount(mounts: &str) -> Option<String> {
    let mut unified = None;
    for line in mounts.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [_, dir, fstype, options, ..] = f[..] else {
            continue;
        };
        match fstype {
            "cgroup" if options.split(',').any(|o| o == "perf_event") => {
                return Some(dir.to_string())
            }
            "cgroup2" if unified.is_none() => unified = Some(dir.to_string()),
            _ => {}
        }
    }
    unified
}

/// Every cgroup of the hierarchy perf records (see [`parse_cgroup_mount`]):
/// (id, path below the mount point, `/` for its root), the root first, then
/// each directory's children depth first in directory order. A cgroup's id
/// is its directory's inode number, which is what the kernel's sample
/// `cgroup` field and perf's file handles give. Empty without cgroups.
pub fn cgroups() -> Vec<(u64, String)> {
    let Some(root) = std::fs::read_to_string("/proc/mounts")
        .ok()
        .and_then(|m| parse_cgroup_mount(&m))
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk_cgroups(Path::new(&root), "", &mut out);
    out
}

fn walk_cgroups(dir: &Path, rel: &str, out: &mut Vec<(u64, String)>) {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = std::fs::metadata(dir) else {
        return;
    };
    out.push((
        meta.ino(),
        if rel.is_empty() {
            "/".into()
        } else {
            rel.into()
        },
    ));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            let name = entry.file_name();
            let rel = format!("{rel}/{}", name.to_string_lossy());
            walk_cgroups(&entry.path(), &rel, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn self_process() {
        let me = std::process::id() as i32;
        let st = proc_status(me).unwrap();
        assert_eq!(st.tgid, me);
        assert_eq!(st.pid, me);
        assert!(st.ppid > 0);
        let tids = threads(me).unwrap();
        assert!(tids.contains(&me));
        let comm = thread_comm(me, me).unwrap();
        assert!(!comm.is_empty() && !comm.ends_with('\n'));
        assert_eq!(comm, st.name);
        assert!(all_pids().unwrap().contains(&me));
        let maps = exec_maps(me).unwrap();
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        let exe_map = maps
            .iter()
            .find(|m| Path::new(&m.path) == exe)
            .expect("own exe mapped");
        assert!(
            exe_map.is_exec() && exe_map.inode != 0 && exe_map.flags == libc::MAP_PRIVATE as u32
        );
        assert!(maps.iter().any(|m| m.path == "[vdso]"));
        assert!(maps.iter().all(|m| m.end > m.start));
    }

    #[test]
    fn maps_line() {
        let m = parse_maps_line(
            "7f0000001000-7f0000002000 r-xs 00003000 fd:01 123456                     /usr/lib/x.so",
        )
        .unwrap();
        assert_eq!(
            (m.start, m.end, m.pgoff, m.dev_major, m.dev_minor, m.inode),
            (0x7f0000001000, 0x7f0000002000, 0x3000, 0xfd, 1, 123456)
        );
        assert_eq!(m.flags, libc::MAP_SHARED as u32);
        assert_eq!(m.prot, (libc::PROT_READ | libc::PROT_EXEC) as u32);
        assert_eq!(m.path, "/usr/lib/x.so");
        let anon = parse_maps_line("7f0000001000-7f0000002000 rw-p 00000000 00:00 0 ").unwrap();
        assert_eq!(anon.path, "");
        assert!(parse_maps_line("garbage").is_err());
    }

    #[test]
    fn kallsyms_and_modules() {
        let kt = parse_kallsyms_text(
            "ffffffff81000000 T _stext\nffffffff81000000 T _text\nffffffff82276f48 T _etext\n",
        );
        assert_eq!(
            kt,
            KernelText {
                text: 0xffffffff81000000,
                etext: 0xffffffff82276f48
            }
        );
        assert_eq!(parse_kallsyms_text("0000000000000000 T _text\n").text, 0);
        let m = parse_modules(
            "ext4 1003520 1 - Live 0xffffffffc0a00000\nfoo 10 0 - Live 0x0000000000000000\n",
        );
        assert_eq!(
            m[0],
            KernelModule {
                name: "ext4".into(),
                size: 1003520,
                addr: 0xffffffffc0a00000
            }
        );
        assert_eq!(m[1].addr, 0);
        kernel_text().unwrap();
        modules().unwrap();
    }

    #[test]
    fn cgroup_mount_prefers_the_perf_event_controller() {
        let v1_and_v2 = "cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
                         cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n\
                         cgroup /sys/fs/cgroup/perf_event cgroup rw,perf_event 0 0\n";
        assert_eq!(
            parse_cgroup_mount(v1_and_v2).as_deref(),
            Some("/sys/fs/cgroup/perf_event")
        );
        let v2 = "proc /proc proc rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nsdelegate 0 0\n";
        assert_eq!(parse_cgroup_mount(v2).as_deref(), Some("/sys/fs/cgroup"));
        assert_eq!(parse_cgroup_mount("proc /proc proc rw 0 0\n"), None);
    }
}
