//! What binutils' `addr2line` answers for an address without line
//! information, which decides perf 6.1's srcline there.
//!
//! perf 6.1 (built without libbfd, as Debian ships it) pipes addresses to
//! `addr2line -e DSO`. Without DWARF lines for the address, addr2line
//! (binutils 2.40) still reports success when BFD's `elf_find_function`
//! finds a function-like symbol at or before the address in the section
//! holding it: it prints `??:?`, which perf parses as file `??`, line 0 and
//! shows as `??:0`. Otherwise it prints the literal `??:0`, which perf
//! takes as a failure and replaces with `sym+offset` or `dso[addr]`. So in a
//! stripped binary (only `.dynsym`), addresses before the first exported
//! function of `.text` show as `ls[c0de]`, later ones as `??:0`.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym as ElfSym};
use object::{Endianness, FileKind};

/// Per allocated section, in section-header order: its address range and
/// the lowest value of a function-like symbol in it.
#[derive(Debug, Default)]
pub(crate) struct FunctionStarts(Vec<(u64, u64, Option<u64>)>);

impl FunctionStarts {
    /// Reads `data` (an ELF file); empty when it cannot be parsed.
    pub fn new(data: &[u8]) -> FunctionStarts {
        let sections = match FileKind::parse(data) {
            Ok(FileKind::Elf32) => of::<elf::FileHeader32<Endianness>>(data),
            Ok(FileKind::Elf64) => of::<elf::FileHeader64<Endianness>>(data),
            _ => None,
        };
        FunctionStarts(sections.unwrap_or_default())
    }

    /// Whether addr2line finds a function for `addr` (an ELF virtual
    /// address): BFD looks in the first allocated section containing it.
    pub fn finds_function(&self, addr: u64) -> bool {
        self.0
            .iter()
            .find(|&&(start, end, _)| addr >= start && addr < end)
            .is_some_and(|&(_, _, low)| low.is_some_and(|low| low <= addr))
    }
}

fn of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<Vec<(u64, u64, Option<u64>)>> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    // addr2line's slurp_symtab: .symtab, or .dynsym when .symtab has no
    // symbol.
    let mut symbols = sections.symbols(endian, data, elf::SHT_SYMTAB).ok()?;
    if symbols.len() <= 1 {
        symbols = sections.symbols(endian, data, elf::SHT_DYNSYM).ok()?;
    }
    let mut out: Vec<(u64, u64, Option<u64>)> = sections
        .iter()
        .map(|s| {
            let flags: u64 = s.sh_flags(endian).into();
            let alloc = flags & u64::from(elf::SHF_ALLOC) != 0;
            let start: u64 = s.sh_addr(endian).into();
            let size: u64 = if alloc { s.sh_size(endian).into() } else { 0 };
            (start, start.saturating_add(size), None)
        })
        .collect();
    for (i, sym) in symbols.iter().enumerate() {
        let Some(index) = symbols
            .symbol_section(endian, sym, object::SymbolIndex(i))
            .ok()
            .flatten()
        else {
            continue;
        };
        if !maybe_function(sym, endian) {
            continue;
        }
        let Some(slot) = out.get_mut(index.0) else {
            continue;
        };
        let value: u64 = sym.st_value(endian).into();
        slot.2 = Some(slot.2.map_or(value, |low: u64| low.min(value)));
    }
    Some(out)
}

/// BFD's `_bfd_elf_maybe_function_sym`: not an object, section, file or TLS
/// symbol, and not a hidden local zero-sized NOTYPE (annobin) marker.
fn maybe_function<S: ElfSym>(sym: &S, endian: S::Endian) -> bool {
    let ty = sym.st_type();
    if matches!(
        ty,
        elf::STT_OBJECT | elf::STT_SECTION | elf::STT_FILE | elf::STT_TLS | elf::STT_COMMON
    ) {
        return false;
    }
    let size: u64 = sym.st_size(endian).into();
    !(size == 0
        && sym.st_bind() == elf::STB_LOCAL
        && ty == elf::STT_NOTYPE
        && sym.st_visibility() == elf::STV_HIDDEN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// Equals `addr2line` on the system's stripped `ls` (binutils decides
    /// perf's srcline, so it is the reference).
    #[test]
    fn agrees_with_binutils_addr2line() {
        let bin = "/usr/bin/ls";
        let (Ok(data), Ok(_)) = (
            std::fs::read(bin),
            Command::new("addr2line").arg("-v").output(),
        ) else {
            return;
        };
        let starts = FunctionStarts::new(&data);
        let addrs: Vec<u64> = (0x1000u64..0x30000).step_by(0x3a1).collect();
        let args: Vec<String> = addrs.iter().map(|a| format!("{a:x}")).collect();
        let out = Command::new("addr2line")
            .arg("-e")
            .arg(bin)
            .args(&args)
            .output()
            .expect("addr2line runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut checked = 0;
        for (addr, line) in addrs.iter().zip(text.lines()) {
            // Only the no-line-info answers are modelled here.
            if line == "??:0" || line == "??:?" {
                assert_eq!(
                    starts.finds_function(*addr),
                    line == "??:?",
                    "{addr:#x}: {line}"
                );
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
    }
}
