//! What binutils' `addr2line` answers for an address without line
//! information, which decides perf 6.1's srcline there.
//!
//! perf 6.1 (built without libbfd, as Debian ships it) pipes addresses to
//! `addr2line -e DSO`. Without DWARF lines for the address, addr2line
//! (binutils 2.40) still reports success when BFD's `elf_find_function`
//! finds a function-like symbol at or before the address in the section
//! holding it: it prints `FILE:?` with the file of the `STT_FILE` symbol
//! before the function (`crtstuff.c:?`, `:?` for an empty name, `??:?`
//! without one), which perf shows as `FILE:0`. Otherwise it prints the
//! literal `??:0`, which perf
//! takes as a failure and replaces with `sym+offset` or `dso[addr]`. So in a
//! stripped binary (only `.dynsym`), addresses before the first exported
//! function of `.text` show as `ls[c0de]`, later ones as `??:0`.

use object::elf;
use object::read::elf::{FileHeader, SectionHeader, Sym as ElfSym};
use object::{Endianness, FileKind};

/// Per allocated section, in section-header order: its address range and
/// its function-like symbols as BFD's `elf_find_function` sees them.
///
/// Names stay in the ELF file's string table (a debug build has hundreds of
/// thousands of long ones): the lookups take the file's bytes again.
#[derive(Debug, Default)]
pub(crate) struct FunctionStarts {
    sections: Vec<SectionFunctions>,
    /// The `STT_FILE` names, in symbol-table order.
    files: Vec<Box<str>>,
    /// Names that are not UTF-8, made valid.
    lossy_names: Vec<Box<str>>,
}

#[derive(Debug, Default)]
struct SectionFunctions {
    start: u64,
    end: u64,
    /// Sorted by value; of equal values the first in symbol-table order
    /// (BFD keeps a later one only when it is higher).
    functions: Vec<FunctionStart>,
}

#[derive(Clone, Copy, Debug)]
struct FunctionStart {
    value: u64,
    /// The file name addr2line prints for the function: an index into
    /// [`FunctionStarts::files`], [`NO_FILE`] for none.
    file: u32,
    /// The function addr2line prints (`-f`, not demangled): its bytes in
    /// the ELF file, or with [`LOSSY`] set the index into
    /// [`FunctionStarts::lossy_names`].
    name_start: u32,
    name_len: u32,
}

const NO_FILE: u32 = u32::MAX;
const LOSSY: u32 = 1 << 31;

impl FunctionStarts {
    /// Reads `data` (an ELF file); empty when it cannot be parsed.
    pub fn new(data: &[u8]) -> FunctionStarts {
        let starts = match FileKind::parse(data) {
            Ok(FileKind::Elf32) => of::<elf::FileHeader32<Endianness>>(data),
            Ok(FileKind::Elf64) => of::<elf::FileHeader64<Endianness>>(data),
            _ => None,
        };
        starts.unwrap_or_default()
    }

    /// What addr2line answers for `addr` (an ELF virtual address) without
    /// line information: `None` when it finds no function (it prints
    /// `??:0`, a failure for perf); else the file it names, from the
    /// `STT_FILE` symbol before the function in the symbol table (`None`,
    /// printed `??`, when there is none or the function is global and
    /// follows a later file symbol). BFD looks in the first allocated
    /// section containing the address.
    pub fn function_file<'a>(&'a self, data: &'a [u8], addr: u64) -> Option<Option<&'a str>> {
        self.function(data, addr).map(|(_, file)| file)
    }

    /// [`Self::function_file`] with the function's name, as `addr2line -f`
    /// prints it.
    ///
    /// `data` is the ELF file [`Self::new`] read.
    pub fn function<'a>(&'a self, data: &'a [u8], addr: u64) -> Option<(&'a str, Option<&'a str>)> {
        let section = self
            .sections
            .iter()
            .find(|s| addr >= s.start && addr < s.end)?;
        let i = section.functions.partition_point(|f| f.value <= addr);
        // The lowest index of the last value at or below addr.
        let last = i.checked_sub(1)?;
        let value = section.functions[last].value;
        let first = section.functions[..=last].partition_point(|f| f.value < value);
        let f = &section.functions[first];
        let name = if f.name_start & LOSSY != 0 {
            self.lossy_names
                .get((f.name_start & !LOSSY) as usize)
                .map(|n| &**n)
        } else {
            let start = f.name_start as usize;
            data.get(start..start + f.name_len as usize)
                .and_then(|b| std::str::from_utf8(b).ok())
        };
        let file = self.files.get(f.file as usize).map(|f| &**f);
        Some((name.unwrap_or_default(), file))
    }

    /// Whether addr2line finds a function for `addr` (see
    /// [`Self::function_file`]).
    #[cfg(test)]
    pub fn finds_function(&self, data: &[u8], addr: u64) -> bool {
        self.function_file(data, addr).is_some()
    }
}

fn of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> Option<FunctionStarts> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    // addr2line's slurp_symtab: .symtab, or .dynsym when .symtab has no
    // symbol.
    let mut symbols = sections.symbols(endian, data, elf::SHT_SYMTAB).ok()?;
    if symbols.len() <= 1 {
        symbols = sections.symbols(endian, data, elf::SHT_DYNSYM).ok()?;
    }
    let mut out: Vec<SectionFunctions> = sections
        .iter()
        .map(|s| {
            let flags: u64 = s.sh_flags(endian).into();
            let alloc = flags & u64::from(elf::SHF_ALLOC) != 0;
            let start: u64 = s.sh_addr(endian).into();
            let size: u64 = if alloc { s.sh_size(endian).into() } else { 0 };
            SectionFunctions {
                start,
                end: start.saturating_add(size),
                functions: Vec::new(),
            }
        })
        .collect();
    // elf_find_function's walk: the last STT_FILE seen names the file of
    // the functions after it, except global ones once a file symbol has
    // followed another symbol (the globals at the end of the table).
    let mut files: Vec<Box<str>> = Vec::new();
    let mut lossy_names: Vec<Box<str>> = Vec::new();
    let mut file = NO_FILE;
    let mut seen_symbol = false;
    let mut file_after_symbol = false;
    for (i, sym) in symbols.iter().enumerate() {
        if i == 0 {
            continue;
        }
        if sym.st_type() == elf::STT_FILE {
            let name = symbols.symbol_name(endian, sym).unwrap_or_default();
            file = files.len() as u32;
            files.push(String::from_utf8_lossy(name).into());
            file_after_symbol |= seen_symbol;
            continue;
        }
        seen_symbol = true;
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
        let named = if sym.st_bind() != elf::STB_LOCAL && file_after_symbol {
            NO_FILE
        } else {
            file
        };
        let name = symbols.symbol_name(endian, sym).unwrap_or_default();
        // The name's place in `data` (it is a slice of it).
        let at = (name.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let in_place = std::str::from_utf8(name).is_ok()
            && at < LOSSY as usize
            && u32::try_from(name.len()).is_ok()
            && data.get(at..at + name.len()) == Some(name);
        let (name_start, name_len) = if in_place {
            (at as u32, name.len() as u32)
        } else {
            lossy_names.push(String::from_utf8_lossy(name).into());
            ((lossy_names.len() - 1) as u32 | LOSSY, 0)
        };
        slot.functions.push(FunctionStart {
            value,
            file: named,
            name_start,
            name_len,
        });
    }
    for section in &mut out {
        // Stable: equal values keep their table order.
        section.functions.sort_by_key(|f| f.value);
    }
    Some(FunctionStarts {
        sections: out,
        files,
        lossy_names,
    })
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

    /// `source` built with `gcc -O0` (no debug info) in a fresh directory
    /// named after `tag`: the directory, the program and its bytes; `None`
    /// without a compiler.
    fn compiled(
        tag: &str,
        source: &str,
    ) -> Option<(std::path::PathBuf, std::path::PathBuf, Vec<u8>)> {
        let dir = std::env::temp_dir().join(format!("{tag}-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let (src, bin) = (dir.join("p.c"), dir.join("p"));
        std::fs::write(&src, source).ok()?;
        let built = Command::new("gcc")
            .args(["-O0", "-o"])
            .arg(&bin)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
        let data = std::fs::read(&bin).ok().filter(|_| built)?;
        Some((dir, bin, data))
    }

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
                    starts.finds_function(&data, *addr),
                    line == "??:?",
                    "{addr:#x}: {line}"
                );
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
    }

    /// The function `addr2line -f` names without line information: the
    /// last function-like symbol before the address, so a label inside a
    /// function (here from inline assembly) names the code after it.
    #[test]
    fn function_names_agree_with_binutils_addr2line() {
        let Some((dir, bin, data)) = compiled(
            "prec-bfd-f",
            "int work(int x) { int y = x * 3; __asm__ volatile(\"mid_label: nop; nop\"); \
             return y + 1; }\n\
             int main(int c, char **v) { (void)v; return work(c); }\n",
        ) else {
            return; // no compiler here
        };
        let starts = FunctionStarts::new(&data);
        let nm = Command::new("nm").arg(&bin).output().expect("nm runs");
        let nm = String::from_utf8_lossy(&nm.stdout);
        let at = |name: &str| {
            nm.lines().find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 3 && f[2] == name).then(|| u64::from_str_radix(f[0], 16).ok())?
            })
        };
        let (Some(work), Some(main)) = (at("work"), at("main")) else {
            panic!("work and main in nm:\n{nm}");
        };
        // One process per address: BFD remembers the last function found
        // and answers it again for addresses inside its size, so a batch
        // depends on the order of its queries (this models a fresh lookup).
        let mut labels = 0;
        for addr in work..main + 8 {
            let out = Command::new("addr2line")
                .args(["-f", "-e"])
                .arg(&bin)
                .arg(format!("{addr:x}"))
                .output()
                .expect("addr2line runs");
            let text = String::from_utf8_lossy(&out.stdout);
            let mut lines = text.lines();
            let (Some(function), Some(line)) = (lines.next(), lines.next()) else {
                panic!("addr2line -f answers in pairs: {text}");
            };
            if line.ends_with(":?") {
                assert_eq!(
                    starts.function(&data, addr).map(|(name, _)| name),
                    Some(function),
                    "{addr:#x}"
                );
                labels += usize::from(function == "mid_label");
            }
        }
        assert!(labels > 0, "no address named after the label");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// The file addr2line names without line information (`crtstuff.c:?`,
    /// `:?` after an empty file symbol, `??:?` for globals), on a program
    /// built here without debug info.
    #[test]
    fn file_names_agree_with_binutils_addr2line() {
        let Some((dir, bin, data)) = compiled(
            "prec-bfd",
            "static int helper(int x) { return x * 3; }\n\
             int main(int c, char **v) { (void)v; return helper(c); }\n",
        ) else {
            return; // no compiler here
        };
        let starts = FunctionStarts::new(&data);
        let nm = Command::new("nm").arg(&bin).output().expect("nm runs");
        let addrs: Vec<String> = String::from_utf8_lossy(&nm.stdout)
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let (addr, kind) = (f.next()?, f.next()?);
                matches!(kind, "t" | "T").then(|| addr.to_string())
            })
            .collect();
        let out = Command::new("addr2line")
            .arg("-e")
            .arg(&bin)
            .args(&addrs)
            .output()
            .expect("addr2line runs");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut named = 0;
        for (addr, line) in addrs.iter().zip(text.lines()) {
            let a = u64::from_str_radix(addr, 16).expect("nm address");
            let file = line.strip_suffix(":?").expect("no line information");
            let expected = (file != "??").then_some(file);
            assert_eq!(
                starts.function_file(&data, a),
                Some(expected),
                "{addr}: {line}"
            );
            named += usize::from(expected.is_some());
        }
        assert!(named > 0, "no function with a file name: {text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
