//! Kernel symbols from `/proc/kallsyms`, with a per-boot cache of the core
//! kernel's part.
//!
//! The kernel formats every line of `/proc/kallsyms` on each read (about
//! 70 ms of system time for 120k symbols), which would be a large part of a
//! report. The core kernel's symbols (lines without a `[module]` tag) are
//! fixed from boot to shutdown, so after the first read they are kept in
//! `$XDG_CACHE_HOME/prec/kallsyms-UID-BOOTID` (mode 0600: the addresses
//! reveal the kernel's load offset). Module, BPF and ftrace symbols can come
//! and go, so an address outside the cached core range still reads
//! `/proc/kallsyms`.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use super::symtab::{Binding, Sym, SymbolTable};

/// Parses kallsyms text (text symbols only: `T`/`t`/`W`/`w`). Returns
/// `None` when every address is zero (`kernel.kptr_restrict` hides them).
pub(crate) fn parse(text: &[u8]) -> Option<SymbolTable> {
    let mut syms = Vec::new();
    let mut any_nonzero = false;
    for line in text.split(|&b| b == b'\n') {
        let mut fields = line
            .split(|&b| b == b' ' || b == b'\t')
            .filter(|f| !f.is_empty());
        let (Some(addr), Some(ty), Some(name)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let Some(addr) = std::str::from_utf8(addr)
            .ok()
            .and_then(|a| u64::from_str_radix(a, 16).ok())
        else {
            continue;
        };
        any_nonzero |= addr != 0;
        let binding = match ty.first() {
            Some(b'T') => Binding::Global,
            Some(b't') => Binding::Local,
            Some(b'W' | b'w') => Binding::Weak,
            _ => continue,
        };
        let mut sym = Sym::new(addr, 0, binding, &String::from_utf8_lossy(name));
        if let Some(m) = fields.next() {
            let m = String::from_utf8_lossy(m);
            sym.module = Some(m.trim_start_matches('[').trim_end_matches(']').into());
        }
        syms.push(sym);
    }
    any_nonzero.then(|| SymbolTable::build(syms, true, false))
}

/// The core kernel's symbols, valid for addresses in `[start, end)`.
pub(crate) struct CoreSymbols {
    pub table: SymbolTable,
    start: u64,
    end: u64,
}

impl CoreSymbols {
    pub fn covers(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end
    }

    /// The core part of a full table: every symbol before the first module
    /// symbol, except the last, whose end depends on what follows it. `None`
    /// when module symbols are interleaved with the core's (then only the
    /// full table is right).
    pub fn from_full(full: &SymbolTable) -> Option<CoreSymbols> {
        let syms = full.syms();
        let core_len = syms
            .iter()
            .position(|s| s.module.is_some())
            .unwrap_or(syms.len());
        if syms[core_len..].iter().any(|s| s.module.is_none()) || core_len < 2 {
            return None;
        }
        let kept = &syms[..core_len - 1];
        let table = SymbolTable::from_sorted(
            kept.iter()
                .map(|s| Sym::new(s.start, s.end.saturating_sub(s.start), s.binding, &s.name))
                .collect(),
        );
        Some(CoreSymbols {
            table,
            start: kept[0].start,
            end: syms[core_len - 1].start,
        })
    }
}

const MAGIC: &[u8; 8] = b"PRECKS01";

/// `$XDG_CACHE_HOME/prec/kallsyms-UID-BOOTID` (or under `~/.cache`), or
/// `None` when the boot id or a home directory is unknown.
pub(crate) fn cache_path() -> Option<PathBuf> {
    let boot_id = fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let boot_id = boot_id.trim();
    if boot_id.is_empty() || !boot_id.chars().all(|c| c.is_ascii_hexdigit() || c == '-') {
        return None;
    }
    let base = match std::env::var_os("XDG_CACHE_HOME") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(std::env::var_os("HOME")?).join(".cache"),
    };
    let uid = {
        use std::os::unix::fs::MetadataExt;
        fs::metadata("/proc/self").ok()?.uid()
    };
    Some(base.join("prec").join(format!("kallsyms-{uid}-{boot_id}")))
}

/// Reads a cache written by [`write_cache`]; `None` when it is missing or
/// not well-formed (it is then rebuilt).
pub(crate) fn read_cache(path: &Path) -> Option<CoreSymbols> {
    let data = fs::read(path).ok()?;
    let mut r = data.strip_prefix(MAGIC)?;
    let u64_at = |r: &mut &[u8]| -> Option<u64> {
        let (head, tail) = r.split_first_chunk::<8>()?;
        *r = tail;
        Some(u64::from_le_bytes(*head))
    };
    let start = u64_at(&mut r)?;
    let end = u64_at(&mut r)?;
    let count = u64_at(&mut r)?;
    let mut syms = Vec::with_capacity(usize::try_from(count).ok()?.min(1 << 20));
    let mut prev_start = 0;
    for _ in 0..count {
        let sym_start = u64_at(&mut r)?;
        let sym_end = u64_at(&mut r)?;
        let (&[binding, len_lo, len_hi], tail) = r.split_first_chunk::<3>()?;
        let len = usize::from(u16::from_le_bytes([len_lo, len_hi]));
        let name = std::str::from_utf8(tail.get(..len)?).ok()?;
        r = &tail[len..];
        let binding = match binding {
            0 => Binding::Local,
            1 => Binding::Global,
            2 => Binding::Weak,
            _ => return None,
        };
        if sym_start < prev_start || sym_end < sym_start {
            return None;
        }
        prev_start = sym_start;
        let mut sym = Sym::new(sym_start, 0, binding, name);
        sym.end = sym_end;
        syms.push(sym);
    }
    if !r.is_empty() || start > end {
        return None;
    }
    Some(CoreSymbols {
        table: SymbolTable::from_sorted(syms),
        start,
        end,
    })
}

/// Writes `core` to `path` atomically, readable by its owner only.
pub(crate) fn write_cache(path: &Path, core: &CoreSymbols) -> io::Result<()> {
    let mut out = Vec::with_capacity(64 * core.table.len());
    out.extend_from_slice(MAGIC);
    for v in [core.start, core.end, core.table.len() as u64] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    for s in core.table.syms() {
        out.extend_from_slice(&s.start.to_le_bytes());
        out.extend_from_slice(&s.end.to_le_bytes());
        out.push(match s.binding {
            Binding::Local => 0,
            Binding::Global => 1,
            Binding::Weak => 2,
        });
        // kallsyms names are at most KSYM_NAME_LEN (512) bytes.
        let name = &s.name.as_bytes()[..s.name.len().min(usize::from(u16::MAX))];
        out.extend_from_slice(&(name.len() as u16).to_le_bytes());
        out.extend_from_slice(name);
    }
    let dir = path.parent().ok_or(io::ErrorKind::NotFound)?;
    fs::create_dir_all(dir)?;
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    {
        use std::os::unix::fs::OpenOptionsExt;
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(&out)?;
    }
    fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &[u8] = b"ffffffff81000000 T _stext\n\
        ffffffff81000010 t helper\n\
        ffffffff81000010 T helper_alias\n\
        ffffffff81000040 D some_data\n\
        ffffffff81000080 W weak_fn\n\
        ffffffff81000100 T _etext\n\
        ffffffffc0000000 t mod_fn\t[ext4]\n\
        ffffffffc0000100 t bpf_prog_1\t[bpf]\n";

    #[test]
    fn core_cache_answers_like_the_full_table() {
        let full = parse(TEXT).expect("nonzero");
        let core = CoreSymbols::from_full(&full).expect("core");
        // The last core symbol (_etext) is left to the full table.
        assert!(core.covers(0xffffffff81000000));
        assert!(!core.covers(0xffffffff81000100));
        assert!(!core.covers(0xffffffffc0000000));
        let dir = std::env::temp_dir().join(format!("prec-kallsyms-{}", std::process::id()));
        let path = dir.join("cache");
        write_cache(&path, &core).expect("write");
        let cached = read_cache(&path).expect("read back");
        for addr in (0xffffffff81000000u64..0xffffffff81000100).step_by(8) {
            let want = full.find(addr).map(|s| (s.start, s.end, s.name.clone()));
            let got = cached
                .table
                .find(addr)
                .map(|s| (s.start, s.end, s.name.clone()));
            assert_eq!(got, want, "{addr:#x}");
        }
        // A damaged cache is ignored, not trusted.
        let bytes = fs::read(&path).expect("read");
        for cut in [0, 8, 20, bytes.len() - 1] {
            fs::write(&path, &bytes[..cut]).expect("write");
            assert!(read_cache(&path).is_none(), "cut at {cut}");
        }
        let _ = fs::remove_dir_all(dir);
    }

    #[test]
    fn restricted_kallsyms_is_none() {
        assert!(parse(b"0000000000000000 T _stext\n0000000000000000 t x\n").is_none());
    }

    /// On this machine (root in CI), the cached core table gives the same
    /// symbol as the full `/proc/kallsyms` for every core symbol start.
    #[test]
    fn real_kallsyms_core_matches() {
        let Ok(text) = fs::read("/proc/kallsyms") else {
            return;
        };
        let Some(full) = parse(&text) else {
            return; // restricted for this user
        };
        let core = CoreSymbols::from_full(&full).expect("core part");
        for s in full.syms().iter().filter(|s| core.covers(s.start)) {
            for addr in [s.start, s.end - 1] {
                let got = core.table.find(addr).map(|c| (c.start, c.end, &c.name));
                let want = full.find(addr).map(|c| (c.start, c.end, &c.name));
                assert_eq!(got, want, "{addr:#x}");
            }
        }
    }
}
