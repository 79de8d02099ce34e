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
use super::FileBytes;

/// Addresses of the symbols perf relocates kernel symbols by (its
/// `ref_reloc_sym`, named in the kernel MMAP record: `[kernel.kallsyms]_text`).
/// Kept apart: the symbol table drops them as duplicates of `startup_64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct RefAddrs {
    text: Option<u64>,
    stext: Option<u64>,
}

impl RefAddrs {
    /// The address of `_text` or `_stext`.
    pub fn get(&self, name: &str) -> Option<u64> {
        match name {
            "_text" => self.text,
            "_stext" => self.stext,
            _ => None,
        }
    }
}

/// A parsed kallsyms.
pub(crate) struct Kallsyms {
    pub table: SymbolTable,
    pub refs: RefAddrs,
}

/// Parses kallsyms text: the symbols perf 6.1 keeps (`symbol_type__filter`:
/// text, weak, data and bss, `T`/`W`/`D`/`B` in either case). The data
/// and bss symbols matter only where they end the text symbols before
/// them and, the last of them, the kernel map (perf's `map__fixup_end`).
/// Returns `None` when every address is zero (`kernel.kptr_restrict`
/// hides them).
pub(crate) fn parse(text: &[u8]) -> Option<Kallsyms> {
    let mut syms = Vec::new();
    let mut refs = RefAddrs::default();
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
            Some(b'T' | b'D' | b'B') => Binding::Global,
            Some(b't' | b'd' | b'b') => Binding::Local,
            Some(b'W' | b'w') => Binding::Weak,
            _ => continue,
        };
        match name {
            b"_text" => refs.text = Some(addr),
            b"_stext" => refs.stext = Some(addr),
            _ => {}
        }
        let mut sym = Sym::new(addr, 0, binding, &String::from_utf8_lossy(name));
        if let Some(m) = fields.next() {
            let m = String::from_utf8_lossy(m);
            sym.module = Some(m.trim_start_matches('[').trim_end_matches(']').into());
        }
        syms.push(sym);
    }
    any_nonzero.then(|| Kallsyms {
        table: SymbolTable::build(syms, true, false),
        refs,
    })
}

/// The core kernel's part of a full table, encoded for the cache: every
/// symbol before the first module symbol except the last, whose end depends
/// on what follows it. `None` when module symbols are interleaved with the
/// core's (then only the full table is right).
pub(crate) fn encode_core(full: &Kallsyms) -> Option<Vec<u8>> {
    let syms = full.table.syms();
    let core_len = syms
        .iter()
        .position(|s| s.module.is_some())
        .unwrap_or(syms.len());
    if syms[core_len..].iter().any(|s| s.module.is_none()) || core_len < 2 {
        return None;
    }
    let kept = &syms[..core_len - 1];
    let names_len: usize = kept.iter().map(|s| s.name.len().min(NAME_MAX)).sum();
    let mut out = Vec::with_capacity(HEADER + ENTRY * kept.len() + names_len);
    out.extend_from_slice(MAGIC);
    for v in [
        kept[0].start,
        syms[core_len - 1].start,
        kept.len() as u64,
        names_len as u64,
        full.refs.text.unwrap_or(NO_ADDR),
        full.refs.stext.unwrap_or(NO_ADDR),
    ] {
        out.extend_from_slice(&v.to_le_bytes());
    }
    let mut name_off = 0u32;
    for s in kept {
        let len = s.name.len().min(NAME_MAX);
        out.extend_from_slice(&s.start.to_le_bytes());
        out.extend_from_slice(&s.end.to_le_bytes());
        out.extend_from_slice(&name_off.to_le_bytes());
        out.extend_from_slice(&(len as u16).to_le_bytes());
        out.push(match s.binding {
            Binding::Local => 0,
            Binding::Global => 1,
            Binding::Weak => 2,
        });
        out.push(0);
        name_off = name_off.checked_add(len as u32)?;
    }
    for s in kept {
        out.extend_from_slice(&s.name.as_bytes()[..s.name.len().min(NAME_MAX)]);
    }
    Some(out)
}

/// kallsyms names are at most KSYM_NAME_LEN (512) bytes; the cache stores
/// lengths in 16 bits.
const NAME_MAX: usize = u16::MAX as usize;
const MAGIC: &[u8; 8] = b"PRECKS04";
/// Magic, core start, core end, symbol count, names length, `_text`,
/// `_stext`.
const HEADER: usize = 8 + 6 * 8;
/// A missing `_text`/`_stext` in the cache.
const NO_ADDR: u64 = u64::MAX;
/// start, end, name offset (u32), name length (u16), binding, padding.
const ENTRY: usize = 8 + 8 + 4 + 2 + 1 + 1;

/// The cached core kernel symbols, searched in place (no per-symbol
/// allocation: the file is memory-mapped when the loader maps).
pub(crate) struct CoreSymbols {
    pub refs: RefAddrs,
    data: FileBytes,
    start: u64,
    end: u64,
    count: usize,
    names_len: usize,
}

/// One cached symbol: start, exclusive end, name.
pub(crate) struct CoreSym<'a> {
    pub start: u64,
    pub end: u64,
    pub name: &'a str,
}

impl CoreSymbols {
    /// Checks the header and that entries are sorted and in bounds; `None`
    /// for a missing or damaged cache (it is then rebuilt).
    pub fn new(data: FileBytes) -> Option<CoreSymbols> {
        let header = data.get(..HEADER)?;
        if !header.starts_with(MAGIC) {
            return None;
        }
        let field = |i: usize| {
            let at = 8 + 8 * i;
            Some(u64::from_le_bytes(header.get(at..at + 8)?.try_into().ok()?))
        };
        let (start, end) = (field(0)?, field(1)?);
        let count = usize::try_from(field(2)?).ok()?;
        let names_len = usize::try_from(field(3)?).ok()?;
        let addr = |v: u64| (v != NO_ADDR).then_some(v);
        let refs = RefAddrs {
            text: addr(field(4)?),
            stext: addr(field(5)?),
        };
        let size = count
            .checked_mul(ENTRY)?
            .checked_add(HEADER)?
            .checked_add(names_len)?;
        if data.len() != size || start > end {
            return None;
        }
        let core = CoreSymbols {
            refs,
            data,
            start,
            end,
            count,
            names_len,
        };
        let mut prev = 0;
        for i in 0..count {
            let (s, e, off, len) = core.entry(i);
            if s < prev || e < s || off.checked_add(len)? > names_len {
                return None;
            }
            prev = s;
        }
        Some(core)
    }

    /// The first core symbol's start and the last one's start (the cache
    /// holds the symbols before the last).
    pub fn first_and_last_start(&self) -> (u64, u64) {
        (self.start, self.end)
    }

    /// Whether `addr` is in the range the cache answers for.
    pub fn covers(&self, addr: u64) -> bool {
        addr >= self.start && addr < self.end
    }

    /// (start, end, name offset, name length) of entry `i` (< count).
    fn entry(&self, i: usize) -> (u64, u64, usize, usize) {
        let at = HEADER + i * ENTRY;
        let b = &self.data[at..at + ENTRY];
        let u64_at = |o: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&b[o..o + 8]);
            u64::from_le_bytes(w)
        };
        let off = u32::from_le_bytes([b[16], b[17], b[18], b[19]]) as usize;
        let len = u16::from_le_bytes([b[20], b[21]]) as usize;
        (u64_at(0), u64_at(8), off, len)
    }

    /// The symbol whose `[start, end)` contains `addr`.
    pub fn find(&self, addr: u64) -> Option<CoreSym<'_>> {
        // The first entry starting after `addr`; the one before may hold it.
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.entry(mid).0 <= addr {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        let (start, end, off, len) = self.entry(lo.checked_sub(1)?);
        if addr >= end {
            return None;
        }
        let names = HEADER + self.count * ENTRY;
        debug_assert!(off + len <= self.names_len);
        let name = std::str::from_utf8(self.data.get(names + off..names + off + len)?).ok()?;
        Some(CoreSym { start, end, name })
    }
}

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

/// Writes `bytes` to `path` atomically, readable by its owner only.
pub(crate) fn write_cache(path: &Path, bytes: &[u8]) -> io::Result<()> {
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
        f.write_all(bytes)?;
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

    fn core_of(full: &Kallsyms) -> CoreSymbols {
        CoreSymbols::new(FileBytes::new(encode_core(full).expect("core part"))).expect("valid")
    }

    fn same(core: &CoreSymbols, full: &Kallsyms, addr: u64) {
        let got = core
            .find(addr)
            .map(|c| (c.start, c.end, c.name.to_string()));
        let want = full
            .table
            .find(addr)
            .map(|s| (s.start, s.end, s.name.to_string()));
        assert_eq!(got, want, "{addr:#x}");
    }

    #[test]
    fn core_cache_answers_like_the_full_table() {
        let full = parse(TEXT).expect("nonzero");
        let core = core_of(&full);
        assert_eq!(core.refs.get("_stext"), Some(0xffffffff81000000));
        assert_eq!(core.refs.get("_text"), None);
        // The last core symbol (_etext) is left to the full table.
        assert!(core.covers(0xffffffff81000000));
        assert!(!core.covers(0xffffffff81000100));
        assert!(!core.covers(0xffffffffc0000000));
        for addr in (0xffffffff81000000u64..0xffffffff81000100).step_by(8) {
            same(&core, &full, addr);
        }
        let dir = std::env::temp_dir().join(format!("prec-kallsyms-{}", std::process::id()));
        let path = dir.join("cache");
        let bytes = encode_core(&full).expect("core");
        write_cache(&path, &bytes).expect("write");
        assert_eq!(fs::read(&path).expect("read"), bytes);
        // A damaged cache is ignored, not trusted.
        for cut in [0, 8, 20, HEADER, bytes.len() - 1] {
            assert!(
                CoreSymbols::new(FileBytes::new(bytes[..cut].to_vec())).is_none(),
                "cut at {cut}"
            );
        }
        let mut unsorted = bytes.clone();
        unsorted[HEADER..HEADER + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(CoreSymbols::new(FileBytes::new(unsorted)).is_none());
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
        let core = core_of(&full);
        assert_eq!(core.refs, full.refs);
        assert!(full.refs.get("_text").is_some());
        for s in full.table.syms().iter().filter(|s| core.covers(s.start)) {
            same(&core, &full, s.start);
            same(&core, &full, s.end - 1);
        }
    }
}
