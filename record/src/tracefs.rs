//! Tracepoints in the kernel's tracing directory (tracefs): finding them
//! by `system:name` (with `*` and `?` globs, as `perf record -e` takes
//! them), and the files perf saves as the TRACING_DATA feature so that
//! their samples can be decoded on another machine.
#![forbid(unsafe_code)]

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use prec_format::tracing::TracingFiles;

/// One tracepoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracepoint {
    /// The tracing system (`sched`).
    pub system: String,
    /// The event (`sched_switch`).
    pub name: String,
    /// Its id: `perf_event_attr.config` of a `PERF_TYPE_TRACEPOINT` event.
    pub id: u64,
}

/// Why a tracepoint could not be found.
#[derive(Debug)]
pub enum TracepointError {
    /// No tracefs mounted (neither place perf looks at).
    NoTracefs,
    /// The tracing directory is there but not readable (not root).
    NoPermission(PathBuf),
    /// No such system or event, or a glob that matched nothing.
    Unknown(PathBuf),
    /// Another error reading `path`.
    Io(PathBuf, io::Error),
}

impl fmt::Display for TracepointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TracepointError::NoTracefs => write!(
                f,
                "can't access trace events: tracefs is not mounted at /sys/kernel/tracing \
                 (Hint: mount -t tracefs nodev /sys/kernel/tracing)"
            ),
            TracepointError::NoPermission(p) => write!(
                f,
                "can't access trace events: no permission to read {} \
                 (Hint: run as root, or 'mount -o remount,mode=755 /sys/kernel/tracing/')",
                p.display()
            ),
            TracepointError::Unknown(p) => {
                write!(f, "unknown tracepoint: {} not found", p.display())
            }
            TracepointError::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

impl std::error::Error for TracepointError {}

/// The tracing directory perf 6.1 uses: tracefs at `/sys/kernel/tracing`,
/// else the one under debugfs.
pub fn tracing_dir() -> Option<PathBuf> {
    find_tracing_dir().ok()
}

fn find_tracing_dir() -> Result<PathBuf, TracepointError> {
    let mut denied = None;
    for dir in ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"] {
        let events = Path::new(dir).join("events");
        match std::fs::metadata(&events) {
            Ok(m) if m.is_dir() => return Ok(PathBuf::from(dir)),
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(PathBuf::from(dir));
            }
            _ => {}
        }
    }
    Err(denied.map_or(TracepointError::NoTracefs, TracepointError::NoPermission))
}

fn classify(path: &Path, e: io::Error) -> TracepointError {
    match e.kind() {
        io::ErrorKind::PermissionDenied => TracepointError::NoPermission(path.to_path_buf()),
        io::ErrorKind::NotFound => TracepointError::Unknown(path.to_path_buf()),
        _ => TracepointError::Io(path.to_path_buf(), e),
    }
}

/// Whether `text` matches the shell-style `pattern` (`*`, `?`).
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    // Where the last `*` was, and the text position it has swallowed to.
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                star = Some((p, t));
                p += 1;
            }
            Some(&c) if c == b'?' || c == text[t] => {
                p += 1;
                t += 1;
            }
            _ => match star {
                Some((sp, st)) => {
                    p = sp + 1;
                    t = st + 1;
                    star = Some((sp, st + 1));
                }
                None => return false,
            },
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

fn is_glob(s: &str) -> bool {
    s.contains(['*', '?'])
}

/// Subdirectories of `dir` whose names match `pattern`, in directory order
/// (perf's order).
fn matching_dirs(dir: &Path, pattern: &str) -> Result<Vec<String>, TracepointError> {
    if !is_glob(pattern) {
        let path = dir.join(pattern);
        return match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => Ok(vec![pattern.to_string()]),
            Ok(_) => Err(TracepointError::Unknown(path)),
            Err(e) => Err(classify(&path, e)),
        };
    }
    let entries = std::fs::read_dir(dir).map_err(|e| classify(dir, e))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| classify(dir, e))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir())
            && glob_match(pattern.as_bytes(), name.as_bytes())
        {
            names.push(name);
        }
    }
    Ok(names)
}

/// The whole of a tracefs file. Some (`events/header_page`) answer only
/// the first read and then report the end, so that read must be big:
/// `std::fs::read` starts with a 32-byte probe and would keep 32 bytes.
fn read_whole(path: &Path) -> io::Result<Vec<u8>> {
    use std::io::Read;
    const CHUNK: usize = 1 << 16;
    let mut file = std::fs::File::open(path)?;
    let mut out = Vec::new();
    loop {
        let len = out.len();
        out.resize(len + CHUNK, 0);
        let n = file.read(&mut out[len..])?;
        out.truncate(len + n);
        if n == 0 {
            return Ok(out);
        }
    }
}

/// The tracepoints `system:name` names (either part may be a glob), in
/// the order perf opens them.
pub fn find(system: &str, name: &str) -> Result<Vec<Tracepoint>, TracepointError> {
    let events = find_tracing_dir()?.join("events");
    let mut out = Vec::new();
    for sys in matching_dirs(&events, system)? {
        let sys_dir = events.join(&sys);
        let names = match matching_dirs(&sys_dir, name) {
            Ok(n) => n,
            // A system glob also meets systems without this event.
            Err(TracepointError::Unknown(_)) if is_glob(system) => continue,
            Err(e) => return Err(e),
        };
        for ev in names {
            let id_path = sys_dir.join(&ev).join("id");
            let text = std::fs::read_to_string(&id_path).map_err(|e| classify(&id_path, e))?;
            let id = text.trim().parse().map_err(|_| {
                TracepointError::Io(id_path.clone(), io::ErrorKind::InvalidData.into())
            })?;
            out.push(Tracepoint {
                system: sys.clone(),
                name: ev,
                id,
            });
        }
    }
    if out.is_empty() {
        return Err(TracepointError::Unknown(events.join(system).join(name)));
    }
    Ok(out)
}

/// The tracing files perf 6.1 saves for `tracepoints` (`tracing_data_get`):
/// the ring-buffer headers, the format of each recorded event grouped by
/// system in directory order, the ftrace formats of the same names, no
/// kallsyms, the printk formats and the saved command lines. Files that
/// cannot be read are saved empty, as perf does.
pub fn tracing_files(tracepoints: &[Tracepoint]) -> Result<TracingFiles, TracepointError> {
    let dir = find_tracing_dir()?;
    let events = dir.join("events");
    let read = |p: PathBuf| read_whole(&p).unwrap_or_default();
    let recorded = |system: &str, name: &str| {
        tracepoints
            .iter()
            .any(|t| t.system == system && t.name == name)
    };
    let names_in = |system: &str| -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(events.join(system)) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect()
    };
    // perf keeps an ftrace format whose name is any recorded event's.
    let ftrace = names_in("ftrace")
        .into_iter()
        .filter(|n| tracepoints.iter().any(|t| &t.name == n))
        .map(|n| read(events.join("ftrace").join(n).join("format")))
        .collect();
    let mut systems = Vec::new();
    if let Ok(entries) = std::fs::read_dir(&events) {
        for entry in entries.filter_map(|e| e.ok()) {
            let system = entry.file_name().to_string_lossy().into_owned();
            if system == "ftrace" || !tracepoints.iter().any(|t| t.system == system) {
                continue;
            }
            let formats: Vec<Vec<u8>> = names_in(&system)
                .into_iter()
                .filter(|n| recorded(&system, n))
                .map(|n| read(events.join(&system).join(n).join("format")))
                .collect();
            systems.push((system, formats));
        }
    }
    Ok(TracingFiles {
        big_endian: cfg!(target_endian = "big"),
        long_size: std::mem::size_of::<libc::c_long>() as u8,
        page_size: crate::sys::page_size() as u32,
        header_page: read(events.join("header_page")),
        header_event: read(events.join("header_event")),
        ftrace,
        systems,
        kallsyms: Vec::new(),
        printk: read(dir.join("printk_formats")),
        saved_cmdlines: read(dir.join("saved_cmdlines")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        for (p, t, want) in [
            ("*", "sched_switch", true),
            ("sched_*", "sched_switch", true),
            ("sched_*", "irq_handler", false),
            ("*_switch", "sched_switch", true),
            ("s?hed", "sched", true),
            ("s?hed", "schhed", false),
            ("*a*b", "xaxxb", true),
            ("*a*b", "xaxxbc", false),
            ("", "", true),
        ] {
            assert_eq!(glob_match(p.as_bytes(), t.as_bytes()), want, "{p} {t}");
        }
    }

    /// The ids agree with what the kernel lists (needs root for tracefs).
    #[test]
    fn finds_sched_switch_like_the_kernel() {
        let Some(dir) = tracing_dir() else {
            eprintln!("skipping: no tracefs");
            return;
        };
        let id_path = dir.join("events/sched/sched_switch/id");
        let Ok(id) = std::fs::read_to_string(&id_path) else {
            eprintln!("skipping: {} not readable", id_path.display());
            return;
        };
        let found = find("sched", "sched_switch").expect("sched:sched_switch");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].id.to_string(), id.trim());
        let all = find("sched", "*").expect("sched:*");
        assert!(all.len() > 5 && all.iter().any(|t| t.name == "sched_switch"));
        assert!(matches!(
            find("sched", "no_such_event"),
            Err(TracepointError::Unknown(_))
        ));
        let files = tracing_files(&found).expect("tracing files");
        let header_page = std::process::Command::new("cat")
            .arg(dir.join("events/header_page"))
            .output()
            .expect("cat header_page");
        assert_eq!(
            files.header_page, header_page.stdout,
            "header_page as cat reads it"
        );
        assert_eq!(files.systems.len(), 1);
        let format = String::from_utf8_lossy(&files.systems[0].1[0]).into_owned();
        assert!(format.starts_with("name: sched_switch"), "{format}");
    }
}
