//! ELF parsing: symbols (.symtab / .dynsym / synthesized PLT entries),
//! PT_LOAD segments, build-id and .gnu_debuglink. Everything is extracted
//! once into owned data; nothing here panics on malformed input.

use super::symtab::{Binding, Sym, SymName};
use super::FileBytes;
use object::elf;
use object::read::elf::{FileHeader, Rel, Rela, SectionHeader, Sym as ElfSym};
use object::{Endianness, FileKind, Object, ObjectSection, ObjectSegment, SectionKind};

/// A PT_LOAD segment (file range → virtual address).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Segment {
    pub offset: u64,
    pub vaddr: u64,
    pub filesz: u64,
    pub memsz: u64,
}

/// Header-level facts about an ELF file.
#[derive(Debug, Default)]
pub(crate) struct ElfInfo {
    pub is_exec: bool,
    pub segments: Vec<Segment>,
    pub build_id: Option<Vec<u8>>,
    pub debuglink: Option<String>,
    pub has_dwarf: bool,
    /// `.text`'s address minus its file offset (perf's `text_offset`).
    pub text_offset: u64,
}

pub(crate) fn parse_info(data: &[u8]) -> Result<ElfInfo, String> {
    let file = object::File::parse(data).map_err(|e| format!("not a valid object file: {e}"))?;
    if !matches!(file.format(), object::BinaryFormat::Elf) {
        return Err("not an ELF file".into());
    }
    let is_exec = file.kind() == object::ObjectKind::Executable;
    let segments = file
        .segments()
        .map(|s| {
            let (offset, filesz) = s.file_range();
            Segment {
                offset,
                vaddr: s.address(),
                filesz,
                memsz: s.size(),
            }
        })
        .collect();
    let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    let debuglink = file
        .gnu_debuglink()
        .ok()
        .flatten()
        .map(|(name, _crc)| String::from_utf8_lossy(name).into_owned());
    let has_dwarf = file
        .section_by_name(".debug_info")
        .is_some_and(|s| s.kind() != SectionKind::UninitializedData && s.size() > 0);
    let text_offset = file.section_by_name(".text").map_or(0, |s| {
        let offset = s.file_range().map_or(0, |(offset, _)| offset);
        s.address().wrapping_sub(offset)
    });
    Ok(ElfInfo {
        is_exec,
        segments,
        build_id,
        debuglink,
        has_dwarf,
        text_offset,
    })
}

/// What perf's `symsrc__init` sees of a file it may read symbols from:
/// its build-id, and whether it has a `.symtab` (perf's
/// `symsrc__has_symtab`) or a `.dynsym` (`symsrc__possibly_runtime`).
pub(crate) fn symbol_sources(data: &[u8]) -> Option<(Option<Vec<u8>>, bool, bool)> {
    let file = object::File::parse(data).ok()?;
    if !matches!(file.format(), object::BinaryFormat::Elf) {
        return None;
    }
    let build_id = file.build_id().ok().flatten().map(<[u8]>::to_vec);
    let symtab = file.section_by_name(".symtab").is_some();
    let dynsym = file.section_by_name(".dynsym").is_some();
    Some((build_id, symtab, dynsym))
}

/// Which symbol table to read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Table {
    Symtab,
    Dynsym,
}

/// Symbols of `.symtab` or `.dynsym`, in table order, filtered like perf
/// 6.1's `dso__load_sym`: named STT_FUNC / STT_GNU_IFUNC / STT_OBJECT
/// symbols of a loaded, defined section, plus visible STT_NOTYPE labels of
/// a "text" or "data" section.
/// Names that are UTF-8 are not copied: they point into `file`.
pub(crate) fn function_symbols(file: &FileBytes, table: Table) -> Result<Vec<Sym>, String> {
    let data: &[u8] = file;
    match FileKind::parse(data) {
        Ok(FileKind::Elf32) => symbols_of::<elf::FileHeader32<Endianness>>(file, table),
        Ok(FileKind::Elf64) => symbols_of::<elf::FileHeader64<Endianness>>(file, table),
        _ => return Err("not an ELF file".into()),
    }
    .map_err(|e| format!("cannot read symbol table: {e}"))
}

fn symbols_of<Elf: FileHeader<Endian = Endianness>>(
    file: &FileBytes,
    table: Table,
) -> object::Result<Vec<Sym>> {
    let data: &[u8] = file;
    let header = Elf::parse(data)?;
    let endian = header.endian()?;
    let machine = header.e_machine(endian);
    let sections = header.sections(endian, data)?;
    let sh_type = match table {
        Table::Symtab => elf::SHT_SYMTAB,
        Table::Dynsym => elf::SHT_DYNSYM,
    };
    let symtab = sections.symbols(endian, data, sh_type)?;
    let mut out = Vec::with_capacity(symtab.len());
    for sym in symtab.symbols() {
        let ty = sym.st_type();
        let shndx = sym.st_shndx(endian);
        if sym.st_name(endian) == 0 || shndx == elf::SHN_UNDEF || shndx == elf::SHN_ABS {
            continue;
        }
        // perf 6.1's elf_sym__filter keeps data objects too: they take part
        // in the symbol tree (its shape, the end fix-ups) and name data
        // addresses.
        let is_func = ty == elf::STT_FUNC || ty == elf::STT_GNU_IFUNC || ty == elf::STT_OBJECT;
        let vis = sym.st_other() & 3;
        let is_label = ty == elf::STT_NOTYPE && vis != elf::STV_HIDDEN && vis != elf::STV_INTERNAL;
        if !is_func && !is_label {
            continue;
        }
        if shndx >= elf::SHN_LORESERVE {
            continue;
        }
        let Ok(section) = sections.section(object::SectionIndex(usize::from(shndx))) else {
            continue;
        };
        // Sections that are not loaded (.gnu.warning.*) have no addresses.
        let flags: u64 = section.sh_flags(endian).into();
        if flags & u64::from(elf::SHF_ALLOC) == 0 {
            continue;
        }
        if is_label {
            // elf_sec__filter: labels only count in text or data sections.
            let name = sections.section_name(endian, section).unwrap_or(&[]);
            let has = |w: &[u8]| name.windows(w.len()).any(|x| x == w);
            if !has(b"text") && !has(b"data") {
                continue;
            }
        }
        let Ok(raw_name) = symtab.symbol_name(endian, sym) else {
            continue;
        };
        // ARM / AArch64 mapping symbols ($a, $d, $t, $x) are not functions.
        if matches!(machine, elf::EM_ARM | elf::EM_AARCH64) && raw_name.first() == Some(&b'$') {
            continue;
        }
        let binding = match sym.st_bind() {
            elf::STB_GLOBAL => Binding::Global,
            elf::STB_WEAK => Binding::Weak,
            _ => Binding::Local,
        };
        let mut start: u64 = sym.st_value(endian).into();
        if machine == elf::EM_ARM {
            start &= !1; // Thumb bit
        }
        let size: u64 = sym.st_size(endian).into();
        // from_utf8 checks ASCII a word at a time; the lossy conversion
        // goes byte by byte, which showed in loading large tables.
        let at = (raw_name.as_ptr() as usize).wrapping_sub(data.as_ptr() as usize);
        let name = match (
            std::str::from_utf8(raw_name),
            u32::try_from(at),
            u32::try_from(raw_name.len()),
        ) {
            (Ok(_), Ok(at), Ok(len)) if at as usize + len as usize <= data.len() => {
                SymName::InFile {
                    file: file.clone(),
                    at,
                    len,
                }
            }
            _ => SymName::Own(String::from_utf8_lossy(raw_name).into()),
        };
        let mut s = Sym::named(start, size, binding, name);
        s.object = ty == elf::STT_OBJECT;
        out.push(s);
    }
    Ok(out)
}

/// Synthesizes `name@plt` symbols for PLT entries, from the PLT relocation
/// table (`.rela.plt` / `.rel.plt`) and `.dynsym`, as perf does. When an IBT
/// `.plt.sec` section exists, the call stubs live there (no header), otherwise
/// in `.plt` after its header entry.
pub(crate) fn plt_symbols(data: &[u8]) -> Vec<Sym> {
    let r = match FileKind::parse(data) {
        Ok(FileKind::Elf32) => plt_of::<elf::FileHeader32<Endianness>>(data),
        Ok(FileKind::Elf64) => plt_of::<elf::FileHeader64<Endianness>>(data),
        _ => return Vec::new(),
    };
    r.unwrap_or_default()
}

fn plt_of<Elf: FileHeader<Endian = Endianness>>(data: &[u8]) -> object::Result<Vec<Sym>> {
    let header = Elf::parse(data)?;
    let endian = header.endian()?;
    let machine = header.e_machine(endian);
    let is_mips64el = header.is_mips64el(endian);
    let sections = header.sections(endian, data)?;
    let dynsym = sections.symbols(endian, data, elf::SHT_DYNSYM)?;
    if dynsym.is_empty() {
        return Ok(Vec::new());
    }
    let Some((_, rel_sec)) = sections
        .section_by_name(endian, b".rela.plt")
        .or_else(|| sections.section_by_name(endian, b".rel.plt"))
    else {
        return Ok(Vec::new());
    };
    if rel_sec.link(endian) != dynsym.section() {
        return Ok(Vec::new());
    }
    // The symbol index of each PLT slot, in relocation order.
    let mut slots: Vec<u32> = Vec::new();
    if let Some((relas, _)) = rel_sec.rela(endian, data)? {
        slots.extend(relas.iter().map(|r| r.r_sym(endian, is_mips64el)));
    } else if let Some((rels, _)) = rel_sec.rel(endian, data)? {
        slots.extend(rels.iter().map(|r| r.r_sym(endian)));
    }
    let plt = sections.section_by_name(endian, b".plt").map(|(_, s)| s);
    let plt_sec = sections
        .section_by_name(endian, b".plt.sec")
        .map(|(_, s)| s);
    let (base, header_size, entry_size) = match (plt_sec, plt) {
        (Some(sec), _) => {
            let ent: u64 = sec.sh_entsize(endian).into();
            let ent = if ent == 0 { 16 } else { ent };
            (sec.sh_addr(endian).into(), 0u64, ent)
        }
        (None, Some(sec)) => {
            let ent: u64 = sec.sh_entsize(endian).into();
            let (h, e) = match machine {
                elf::EM_ARM => (20, 12),
                elf::EM_AARCH64 => (32, 16),
                elf::EM_SPARC => (48, 12),
                elf::EM_SPARCV9 => (128, 32),
                _ => (ent, ent),
            };
            (sec.sh_addr(endian).into(), h, e)
        }
        (None, None) => return Ok(Vec::new()),
    };
    // A `.plt` without an entry size (lld writes 0) gets perf 6.1's
    // symbols all the same: every entry zero-sized at the start of the
    // section. They name nothing but that address, yet they shape the
    // symbol tree, whose walks then miss the symbol extended over the PLT.
    let mut out = Vec::with_capacity(slots.len());
    for (i, symidx) in slots.into_iter().enumerate() {
        let name = if symidx == 0 {
            // IRELATIVE slot: no symbol. perf 6.1 prints the empty name
            // (`@plt`); objdump and newer perf say `*ABS*+0x…@plt`.
            String::new()
        } else {
            match dynsym
                .symbol(object::SymbolIndex(symidx as usize))
                .and_then(|s| dynsym.symbol_name(endian, s))
            {
                Ok(n) => String::from_utf8_lossy(n).into_owned(),
                Err(_) => continue,
            }
        };
        let start = base
            .wrapping_add(header_size)
            .wrapping_add((i as u64).wrapping_mul(entry_size));
        out.push(Sym::new(
            start,
            entry_size,
            Binding::Global,
            &format!("{name}@plt"),
        ));
    }
    Ok(out)
}
