//! In-process symbolization for `perf report`-compatible output.
//!
//! The [`Symbolizer`] turns sample addresses into symbol names, source lines
//! and inline frames without forking `addr2line`/`nm`. It lives for the whole
//! report and caches every binary it opens (keyed by mapped path and expected
//! build-id), including failures, so each file is opened and parsed once.
//!
//! # Usage
//!
//! ```no_run
//! use prec_report::symbolize::{Symbolizer, SymbolizerOptions};
//! let mut s = Symbolizer::new(SymbolizerOptions::default());
//! // MMAP2 record: start, pgoff, filename; sample ip.
//! if let Some(bin) = s.binary("/usr/bin/true", None) {
//!     let addr = s.to_elf_address(bin, 0x5555_5555_4000, 0, 0x5555_5555_6123);
//!     if let Some(sym) = s.symbol(bin, addr) {
//!         println!("{}+{:#x}", sym.name, addr - sym.start);
//!     }
//!     if let Some(loc) = s.source_location(bin, addr) {
//!         println!("{}", loc.srcline()); // "hot.c:10", like perf's srcline
//!     }
//! }
//! for d in s.diagnostics() {
//!     eprintln!("{d}");
//! }
//! ```
//!
//! # perf compatibility
//!
//! * Address translation follows perf's `map__map_ip` (runtime ip → file
//!   offset `ip - start + pgoff`) and then maps the file offset to the ELF
//!   virtual address through the PT_LOAD segment containing it. For `ET_EXEC`
//!   the runtime address already is the ELF address.
//! * Symbols come from `.symtab` (of the binary, or of its separate debug file
//!   when the binary is stripped), falling back to `.dynsym`. Only STT_FUNC /
//!   STT_GNU_IFUNC symbols and labels in text sections are kept; `name@plt`
//!   symbols are synthesized from the PLT relocations. Duplicate addresses are
//!   resolved with perf's `choose_best_symbol` rules (non-zero size, non-weak,
//!   global, fewer leading underscores, longer name) and zero-sized symbols
//!   extend to the next symbol (`symbols__fixup_end`). Like perf 6.1, PLT
//!   symbols are added after that fix-up, so a zero-sized `_init` right before
//!   `.plt` covers the PLT and wins (`_init+0x30`, verified with perf 6.1);
//!   set [`SymbolizerOptions::prefer_plt_names`] for `strlen@plt` instead.
//! * Names are demangled like perf 6.1 (see [`demangle()`]): C++ without the
//!   parameter list, Rust without hashes. `demangle: false` keeps raw names.
//! * Source lines: [`SourceLocation::srcline`] prints `basename:line` like
//!   perf's `srcline` sort key; DWARF is parsed only when asked for.
//! * Separate debug info is found by build-id
//!   (`/usr/lib/debug/.build-id/xx/yyyy.debug`), by `.gnu_debuglink` (next to
//!   the binary, in its `.debug/` subdirectory, under `/usr/lib/debug/<dir>`)
//!   and in perf's build-id cache (`~/.debug/.build-id/xx/yyyy/`).
//! * A binary whose build-id differs from the expected one is not used; a
//!   "build-id mismatch" diagnostic is recorded instead.
//! * Kernel symbols come from `/proc/kallsyms` (or a given file); JIT symbols
//!   from `/tmp/perf-PID.map`.

mod bfd;
mod demangle;
mod elf;
mod kallsyms;
mod symtab;

pub use demangle::demangle;

use elf::{ElfInfo, Table};
use rustc_hash::FxHashMap as HashMap;
use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use symtab::{Binding, Sym, SymbolTable};

/// Configuration of a [`Symbolizer`].
#[derive(Clone)]
pub struct SymbolizerOptions {
    /// Look binaries up under this directory (`--symfs`): `DIR + path`,
    /// and perf's build-id cache at `DIR/.debug`. Kernel symbols then come
    /// only from [`Self::kallsyms`], as in perf 6.1.
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache, when not `~/.debug`: perf's `--symfs DIR`
    /// sets it to `DIR/.debug` even where `DIR` is `/` (and so no symfs).
    /// The running system's vdso then stands for none of its entries.
    pub build_id_dir: Option<PathBuf>,
    /// kallsyms file to use instead of `/proc/kallsyms` (`--kallsyms`).
    pub kallsyms: Option<PathBuf>,
    /// Demangle C++ and Rust names (`--no-demangle` sets this to false).
    pub demangle: bool,
    /// C++ names with their parameters, as perf's `-v` demangles them.
    pub demangle_params: bool,
    /// Always report synthesized `name@plt` symbols for PLT addresses
    /// (newer perf, >= 6.3). When false (the default), reproduce perf 6.1:
    /// a zero-sized symbol before the PLT (usually `_init`) that was extended
    /// over it wins, so PLT samples show as `_init+0x30`.
    pub prefer_plt_names: bool,
    /// How to open binaries and debug files; `None` reads them into memory.
    /// The `prec` binary passes a loader that memory-maps them.
    pub loader: Option<FileLoader>,
}

impl fmt::Debug for SymbolizerOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymbolizerOptions")
            .field("symfs", &self.symfs)
            .field("build_id_dir", &self.build_id_dir)
            .field("kallsyms", &self.kallsyms)
            .field("demangle", &self.demangle)
            .field("demangle_params", &self.demangle_params)
            .field("prefer_plt_names", &self.prefer_plt_names)
            .field("loader", &self.loader.as_ref().map(|_| "custom"))
            .finish()
    }
}

impl Default for SymbolizerOptions {
    fn default() -> Self {
        SymbolizerOptions {
            symfs: None,
            build_id_dir: None,
            kallsyms: None,
            demangle: true,
            demangle_params: false,
            prefer_plt_names: false,
            loader: None,
        }
    }
}

/// Handle of a binary opened by [`Symbolizer::binary`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BinaryId(u32);

/// A symbol that contains a looked-up address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolInfo {
    /// Display name: demangled unless disabled (kernel and JIT names are raw).
    pub name: String,
    /// Start address, in the same address space as the lookup address, so
    /// `addr - start` is perf's symbol offset.
    pub start: u64,
    /// Size in bytes (after perf's end fix-up for zero-sized symbols).
    pub size: u64,
    /// Kernel module for kallsyms symbols of modules (`ext4`), else `None`.
    pub module: Option<String>,
    /// An ELF data object (STT_OBJECT); kallsyms symbols are never marked.
    pub object: bool,
}

/// A source position from the DWARF line table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// File path as recorded in DWARF (usually absolute).
    pub file: String,
    /// Line number (0 when DWARF has none).
    pub line: u32,
    /// Column, when recorded.
    pub column: Option<u32>,
}

impl SourceLocation {
    /// The base name of [`Self::file`].
    pub fn basename(&self) -> &str {
        self.file.rsplit('/').next().unwrap_or(&self.file)
    }

    /// `basename:line`, as printed by `perf report --sort srcline`.
    pub fn srcline(&self) -> String {
        format!("{}:{}", self.basename(), self.line)
    }
}

/// One frame of an inline chain (see [`Symbolizer::inline_frames`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// Function name (demangled unless disabled), when DWARF names it.
    pub function: Option<String>,
    /// Source position inside that function.
    pub location: Option<SourceLocation>,
}

/// What went wrong with a binary or symbol source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiagnosticKind {
    /// The mapped file could not be found or opened.
    Missing,
    /// The file exists but its build-id differs from the recorded one.
    BuildIdMismatch,
    /// The file is not a valid ELF file (or is corrupt).
    Corrupt,
    /// No function symbols at all (stripped, no debug file).
    NoSymbols,
    /// Source lines were requested but no DWARF was found or it is corrupt.
    NoDebugInfo,
    /// kallsyms could not be read.
    KallsymsMissing,
    /// kallsyms addresses are all zero (`kernel.kptr_restrict`).
    KallsymsRestricted,
    /// A JIT map `/tmp/perf-PID.map` could not be read.
    JitMapMissing,
}

/// A problem worth showing in the report header, with the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub kind: DiagnosticKind,
    /// The path concerned (as recorded in perf.data, or the file opened).
    pub path: String,
    /// Human-readable detail, including how to fix it.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

type DwarfReader<'a> = gimli::EndianSlice<'a, gimli::RunTimeEndian>;

/// What a binary's parsed DWARF borrows: the file's bytes, read in place
/// (a memory-mapped file's pages are read only where the lookups go), and
/// the sections that are stored compressed, decompressed once.
struct DwarfBytes {
    file: FileBytes,
    /// Decompressed sections, by their index in the file.
    decompressed: Vec<(object::SectionIndex, Box<[u8]>)>,
}

type DwarfContext<'a> = addr2line::Context<DwarfReader<'a>>;

self_cell::self_cell!(
    /// addr2line's context over the sections of [`DwarfBytes`].
    struct DwarfCell {
        owner: DwarfBytes,
        #[not_covariant]
        dependent: DwarfContext,
    }
);

enum DwarfState {
    NotLoaded,
    Failed,
    Loaded(Box<Dwarf>),
}

/// A binary's parsed DWARF.
struct Dwarf {
    cell: DwarfCell,
    /// Whether any line program is DWARF 5 (see [`binutils_files`]).
    line_v5: bool,
}

enum DebugFile {
    NotSearched,
    NotFound,
    Found(PathBuf, FileBytes, ElfInfo),
}

struct Binary {
    /// Path as recorded in the MMAP event.
    name: String,
    /// File actually opened.
    file: PathBuf,
    map: FileBytes,
    info: ElfInfo,
    symbols: SymbolTable,
    debug: DebugFile,
    dwarf: DwarfState,
    /// For addresses without line information ([`bfd`]), made on first use,
    /// and whether they are the debug file's.
    function_starts: std::cell::OnceCell<(bfd::FunctionStarts, bool)>,
}

enum Loaded<T> {
    Pending,
    Failed,
    Ok(T),
}

/// Cache of binaries and symbol sources for one report. See the module docs.
pub struct Symbolizer {
    options: SymbolizerOptions,
    binaries: Vec<Binary>,
    by_key: HashMap<(String, Vec<u8>), Option<BinaryId>>,
    /// The whole kallsyms table (core kernel, modules, BPF).
    kallsyms: Loaded<kallsyms::Kallsyms>,
    /// kallsyms being read and parsed in the background
    /// ([`Symbolizer::prefetch_kallsyms`]).
    kallsyms_prefetch: Option<std::thread::JoinHandle<KallsymsRead>>,
    /// Binaries being read in the background
    /// ([`Symbolizer::prefetch_binaries`]).
    prefetch: Option<Prefetch>,
    /// The core kernel's symbols from the per-boot cache (outer `None`: not
    /// looked for yet).
    core_kallsyms: Option<Option<kallsyms::CoreSymbols>>,
    jit: HashMap<u32, Option<SymbolTable>>,
    diagnostics: Vec<Diagnostic>,
    /// Per binary, the DWARF functions (by unit offset and DW_AT_name)
    /// that binutils renamed after their ELF symbol (see
    /// [`Symbolizer::inline_frames`]).
    renamed_functions: HashMap<(BinaryId, usize, String), String>,
}

/// The bytes of a binary or debug file: read into memory by default, or
/// memory-mapped when the caller supplies a [`FileLoader`] that maps (the
/// report crate itself has no `unsafe`, so mapping is the caller's choice).
///
/// Cloning shares the bytes.
#[derive(Clone)]
pub struct FileBytes(Arc<dyn Deref<Target = [u8]> + Send + Sync>);

impl FileBytes {
    /// Wraps any owner of bytes (a `Vec<u8>`, a memory map).
    pub fn new(bytes: impl Deref<Target = [u8]> + Send + Sync + 'static) -> Self {
        FileBytes(Arc::new(bytes))
    }
}

impl Deref for FileBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// Opens a file's bytes; see [`SymbolizerOptions::loader`].
pub type FileLoader = Arc<dyn Fn(&Path) -> std::io::Result<FileBytes> + Send + Sync>;

fn load_with(loader: Option<&FileLoader>, path: &Path) -> std::io::Result<FileBytes> {
    match loader {
        Some(load) => load(path),
        None => std::fs::read(path).map(FileBytes::new),
    }
}

impl Symbolizer {
    fn load_file(&self, path: &Path) -> std::io::Result<FileBytes> {
        load_with(self.options.loader.as_ref(), path)
    }
}

/// Build-ids in perf.data are zero-padded (20 bytes in a 24-byte field);
/// drop the padding for comparison.
fn normalize_build_id(id: &[u8]) -> &[u8] {
    let len = id.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    &id[..len]
}

fn build_id_matches(file_id: Option<&[u8]>, expected: &[u8]) -> bool {
    match file_id {
        Some(id) => normalize_build_id(id) == expected,
        None => false,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `symfs + path` (or `path` without `--symfs`).
fn with_symfs(symfs: Option<&Path>, path: &Path) -> PathBuf {
    match symfs {
        Some(root) => root.join(path.strip_prefix("/").unwrap_or(path)),
        None => path.to_path_buf(),
    }
}

/// The running process's vdso image (from `/proc/self/maps` and
/// `/proc/self/mem`).
fn current_vdso() -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let maps = std::fs::read_to_string("/proc/self/maps")?;
    let line = maps
        .lines()
        .find(|l| l.trim_end().ends_with("[vdso]"))
        .ok_or_else(|| std::io::Error::other("no [vdso] mapping"))?;
    let range = line.split_whitespace().next().unwrap_or("");
    let (a, b) = range.split_once('-').unwrap_or(("", ""));
    let parse = |x: &str| u64::from_str_radix(x, 16).map_err(std::io::Error::other);
    let (start, end) = (parse(a)?, parse(b)?);
    let mut mem = std::fs::File::open("/proc/self/mem")?;
    mem.seek(SeekFrom::Start(start))?;
    let mut buf = vec![0u8; end.saturating_sub(start) as usize];
    mem.read_exact(&mut buf)?;
    Ok(buf)
}

/// perf's build-id cache: `~/.debug`, or `DIR/.debug` with `--symfs DIR`
/// (perf's `symbol__config_symfs` skips the local cache then).
fn build_id_cache_dir(options: &SymbolizerOptions) -> Option<PathBuf> {
    match (&options.build_id_dir, &options.symfs) {
        (Some(dir), _) => Some(dir.clone()),
        (None, Some(root)) => Some(root.join(".debug")),
        (None, None) => std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")),
    }
}

/// The kernel symbols perf record kept for the kernel with build-id `id`
/// in perf's build-id cache (`~/.debug/[kernel.kallsyms]/ID/kallsyms`).
pub(crate) fn cached_kallsyms(options: &SymbolizerOptions, id: &[u8]) -> Option<PathBuf> {
    let p = build_id_cache_dir(options)?
        .join("[kernel.kallsyms]")
        .join(hex(id))
        .join("kallsyms");
    p.exists().then_some(p)
}

/// perf's build-id cache entry of `id` (`~/.debug/.build-id/xx/yyyy/`,
/// holding `elf` and `debug`).
fn build_id_cache_entry(options: &SymbolizerOptions, id: &[u8]) -> Option<PathBuf> {
    if id.len() <= 1 {
        return None;
    }
    let h = hex(id);
    Some(
        build_id_cache_dir(options)?
            .join(".build-id")
            .join(&h[..2])
            .join(&h[2..]),
    )
}

/// Mapped names that are not files (anonymous memory, vdso, heap, ...).
fn is_pseudo_path(path: &str) -> bool {
    path.is_empty()
        || path.starts_with('[')
        || path.starts_with("//anon")
        || path.starts_with("/memfd:")
        || path.starts_with("anon_inode:")
        || !path.starts_with('/')
}

/// A binary opened and its symbols read by [`prepare_binary`], on the
/// caller's thread or the prefetch thread.
struct PreparedBinary {
    file: PathBuf,
    map: FileBytes,
    info: ElfInfo,
    symbols: SymbolTable,
    debug: DebugFile,
}

/// What [`prepare_binary`] found, and what to say about it.
struct Prepared {
    binary: Option<PreparedBinary>,
    diagnostics: Vec<(DiagnosticKind, String)>,
}

/// Binaries read on another thread (see [`Symbolizer::prefetch_binaries`]).
struct Prefetch {
    /// (path, expected build-id) of each, in the thread's order.
    keys: Vec<(String, Vec<u8>)>,
    /// Whether the thread or a lookup has taken each (whoever sets it
    /// first reads the binary).
    claims: Arc<[std::sync::atomic::AtomicBool]>,
    receive: std::sync::mpsc::Receiver<(usize, Prepared)>,
    /// Received before they were looked up, by index in `keys`.
    received: HashMap<usize, Prepared>,
}

fn no_vdso() -> std::io::Error {
    std::io::Error::other("not [vdso]")
}

/// Opens the binary mapped as `path` (`vdso`: this process's vdso image
/// for `[vdso]`) and reads its symbols: [`Symbolizer::binary`]'s work,
/// apart from the symbolizer's state, so that it can run on another thread.
fn prepare_binary(
    options: &SymbolizerOptions,
    path: &str,
    expected: Option<&[u8]>,
    vdso: std::io::Result<FileBytes>,
) -> Prepared {
    let mut diagnostics = Vec::new();
    let pseudo = is_pseudo_path(path);
    let symfs = options.symfs.as_deref();
    let load = |p: &Path| load_with(options.loader.as_ref(), p);
    let mut candidates = Vec::new();
    if !pseudo {
        candidates.push(with_symfs(symfs, Path::new(path)));
    }
    if let Some(cached) = expected.and_then(|id| build_id_cache_entry(options, id)) {
        candidates.push(cached.join("elf"));
    }
    let mut mismatch: Option<(PathBuf, Option<Vec<u8>>)> = None;
    let mut corrupt: Option<(PathBuf, String)> = None;
    let mut data_file = false;
    let is_vdso = path == "[vdso]";
    // This system's vdso stands for the copy perf record keeps in the
    // user's own cache.
    if is_vdso && options.build_id_dir.is_none() && symfs.is_none() {
        candidates.push(PathBuf::from("[vdso]"));
    }
    let mut vdso = Some(vdso);
    for cand in candidates {
        let loaded = if is_vdso && cand.as_os_str() == "[vdso]" {
            vdso.take().unwrap_or_else(|| Err(no_vdso()))
        } else {
            load(&cand)
        };
        let Ok(map) = loaded else {
            continue;
        };
        let info = match elf::parse_info(&map) {
            Ok(i) => i,
            // A mapped data file (ld.so.cache, a font) has no symbols, as
            // in perf: nothing to fix.
            Err(_) if !map.starts_with(b"\x7fELF") => {
                data_file = true;
                continue;
            }
            Err(e) => {
                corrupt.get_or_insert((cand, e));
                continue;
            }
        };
        if let Some(exp) = expected {
            if !build_id_matches(info.build_id.as_deref(), exp) {
                mismatch.get_or_insert((cand, info.build_id.clone()));
                continue;
            }
        }
        let binary = read_symbols(options, path, cand, map, info, &mut diagnostics);
        return Prepared {
            binary: Some(binary),
            diagnostics,
        };
    }
    if pseudo || (data_file && mismatch.is_none() && corrupt.is_none()) {
        return Prepared {
            binary: None,
            diagnostics,
        };
    }
    if let Some((file, found)) = mismatch {
        let msg = format!(
            "build-id mismatch: {} has {}, perf.data expects {}; symbols not used. \
             Fix: report on the machine that recorded, pass --symfs to a copy of its \
             files, or keep the binaries unchanged (perf record's ~/.debug build-id cache)",
            file.display(),
            found
                .as_deref()
                .map_or_else(|| "no build-id".to_string(), hex),
            hex(expected.unwrap_or_default()),
        );
        diagnostics.push((DiagnosticKind::BuildIdMismatch, msg));
    } else if let Some((file, err)) = corrupt {
        let msg = format!(
            "cannot parse {}: {err}. Fix: make sure the file is a complete, valid ELF binary",
            file.display()
        );
        diagnostics.push((DiagnosticKind::Corrupt, msg));
    } else {
        let looked = with_symfs(symfs, Path::new(path));
        let msg = format!(
            "binary not found (looked at {}). Fix: install it at that path or pass \
             --symfs DIR pointing at a copy of the recording machine's files",
            looked.display()
        );
        diagnostics.push((DiagnosticKind::Missing, msg));
    }
    Prepared {
        binary: None,
        diagnostics,
    }
}

/// The symbol table of binary `map` (opened as `file` for `name`): its
/// .symtab, else its separate debug file's, else its .dynsym, with PLT
/// entries.
fn read_symbols(
    options: &SymbolizerOptions,
    name: &str,
    file: PathBuf,
    map: FileBytes,
    info: ElfInfo,
    diagnostics: &mut Vec<(DiagnosticKind, String)>,
) -> PreparedBinary {
    let mut bin = PreparedBinary {
        file,
        map,
        info,
        symbols: SymbolTable::default(),
        debug: DebugFile::NotSearched,
    };
    let mut syms = match elf::function_symbols(&bin.map, Table::Symtab) {
        Ok(s) => s,
        Err(e) => {
            diagnostics.push((
                DiagnosticKind::Corrupt,
                format!("{e}; trying other sources"),
            ));
            Vec::new()
        }
    };
    if syms.is_empty() {
        // Stripped: prefer the separate debug file's .symtab, like perf.
        let load = |p: &Path| load_with(options.loader.as_ref(), p);
        bin.debug = find_debug_file(options, &load, name, &bin.file, &bin.info);
        if let DebugFile::Found(_, map, _) = &bin.debug {
            syms = elf::function_symbols(map, Table::Symtab).unwrap_or_default();
        }
    }
    if syms.is_empty() {
        syms = elf::function_symbols(&bin.map, Table::Dynsym).unwrap_or_default();
    }
    // perf 6.1's dso__load synthesizes PLT symbols only when
    // dso__load_sym found some: a binary stripped down to imports keeps
    // its PLT samples as raw addresses.
    let plt = if syms.is_empty() {
        Vec::new()
    } else {
        elf::plt_symbols(&bin.map)
    };
    if syms.is_empty() {
        let msg = format!(
            "no symbols in {} (stripped, no debug file found). Fix: install its debug \
             info (e.g. the -dbg/-dbgsym package) or rebuild without stripping",
            bin.file.display()
        );
        diagnostics.push((DiagnosticKind::NoSymbols, msg));
    }
    bin.symbols = SymbolTable::build_elf(syms, plt);
    bin
}

impl Symbolizer {
    /// Creates an empty symbolizer; nothing is read until first use.
    pub fn new(options: SymbolizerOptions) -> Self {
        Symbolizer {
            options,
            binaries: Vec::new(),
            by_key: HashMap::default(),
            kallsyms: Loaded::Pending,
            kallsyms_prefetch: None,
            prefetch: None,
            core_kallsyms: None,
            jit: HashMap::default(),
            diagnostics: Vec::new(),
            renamed_functions: HashMap::default(),
        }
    }

    /// The options this symbolizer was created with.
    pub fn options(&self) -> &SymbolizerOptions {
        &self.options
    }

    fn diag(&mut self, kind: DiagnosticKind, path: &str, message: String) {
        if self
            .diagnostics
            .iter()
            .any(|d| d.kind == kind && d.path == path)
        {
            return;
        }
        self.diagnostics.push(Diagnostic {
            kind,
            path: path.to_string(),
            message,
        });
    }

    /// Opens (once) the binary mapped as `path`, e.g.
    /// `/usr/lib/x86_64-linux-gnu/libc.so.6`, optionally checking it against
    /// the build-id recorded in perf.data (trailing zero padding is ignored).
    /// Tries `symfs + path`, then perf's build-id cache
    /// (`~/.debug/.build-id/xx/yyyy/elf`). Returns `None` for pseudo mappings
    /// (`[vdso]`, `//anon`, ...) not in the build-id cache and for files that
    /// are missing, corrupt or mismatching (with a diagnostic). Results,
    /// including failures, are cached.
    pub fn binary(&mut self, path: &str, build_id: Option<&[u8]>) -> Option<BinaryId> {
        let expected = build_id.map(normalize_build_id).filter(|b| !b.is_empty());
        let key = (
            path.to_string(),
            expected.map(<[u8]>::to_vec).unwrap_or_default(),
        );
        if let Some(r) = self.by_key.get(&key) {
            return *r;
        }
        let r = self.load_binary(path, expected);
        self.by_key.insert(key, r);
        r
    }

    fn load_binary(&mut self, path: &str, expected: Option<&[u8]>) -> Option<BinaryId> {
        let prepared = match self.prefetched(path, expected) {
            Some(p) => p,
            None if path == "[vdso]" => {
                // perf copies its own process's vdso for `[vdso]` maps
                // (`machine__findnew_vdso`): the running kernel's image.
                let vdso = current_vdso().map(FileBytes::new);
                prepare_binary(&self.options, path, expected, vdso)
            }
            None => prepare_binary(&self.options, path, expected, Err(no_vdso())),
        };
        for (kind, message) in prepared.diagnostics {
            self.diag(kind, path, message);
        }
        let p = prepared.binary?;
        let id = BinaryId(self.binaries.len() as u32);
        self.binaries.push(Binary {
            name: path.to_string(),
            file: p.file,
            map: p.map,
            info: p.info,
            symbols: p.symbols,
            debug: p.debug,
            dwarf: DwarfState::NotLoaded,
            function_starts: std::cell::OnceCell::new(),
        });
        Some(id)
    }

    /// Opens the binaries `wanted` names (each with the build-id the
    /// recording expects, as [`Self::binary`] takes them) and reads their
    /// symbols on another thread, in that order, so that the first lookups
    /// in them need not wait for it. [`Self::binary`] takes a binary from
    /// there, or opens it itself when that thread has not started on it.
    pub fn prefetch_binaries(&mut self, wanted: &[(String, Option<Vec<u8>>)]) {
        if self.prefetch.is_some() {
            return;
        }
        let mut keys: Vec<(String, Vec<u8>)> = wanted
            .iter()
            .filter(|(path, _)| !is_pseudo_path(path))
            .map(|(path, id)| {
                let expected = id.as_deref().map(normalize_build_id).unwrap_or_default();
                (path.clone(), expected.to_vec())
            })
            .filter(|key| !self.by_key.contains_key(key))
            .collect();
        if keys.is_empty() {
            return;
        }
        // The biggest first: it takes longest, and the report thread reads
        // the others itself where it meets them before this thread does.
        let symfs = self.options.symfs.as_deref();
        keys.sort_by_cached_key(|(path, _)| {
            let size = std::fs::metadata(with_symfs(symfs, Path::new(path))).map_or(0, |m| m.len());
            std::cmp::Reverse(size)
        });
        let claims: Arc<[std::sync::atomic::AtomicBool]> =
            keys.iter().map(|_| Default::default()).collect();
        let (send, receive) = std::sync::mpsc::channel();
        let options = self.options.clone();
        let (work, thread_claims) = (keys.clone(), claims.clone());
        let spawned = std::thread::Builder::new()
            .name("binaries".into())
            .spawn(move || {
                for (i, (path, expected)) in work.iter().enumerate() {
                    if thread_claims[i].swap(true, std::sync::atomic::Ordering::AcqRel) {
                        continue;
                    }
                    let expected = (!expected.is_empty()).then_some(&expected[..]);
                    let prepared = prepare_binary(&options, path, expected, Err(no_vdso()));
                    let tree = prepared
                        .binary
                        .as_ref()
                        .and_then(|b| b.symbols.tree_builder());
                    if send.send((i, prepared)).is_err() {
                        return;
                    }
                    if let Some(build) = tree {
                        build();
                    }
                }
            });
        if spawned.is_ok() {
            self.prefetch = Some(Prefetch {
                keys,
                claims,
                receive,
                received: HashMap::default(),
            });
        }
    }

    /// The binary the prefetch thread prepared for `path`, waiting for it
    /// if that thread has started on it; `None` (and the thread will not
    /// start on it) if it has not.
    fn prefetched(&mut self, path: &str, expected: Option<&[u8]>) -> Option<Prepared> {
        let p = self.prefetch.as_mut()?;
        let i = p
            .keys
            .iter()
            .position(|(k, e)| k == path && e == expected.unwrap_or_default())?;
        if !p.claims[i].swap(true, std::sync::atomic::Ordering::AcqRel) {
            return None;
        }
        loop {
            if let Some(prepared) = p.received.remove(&i) {
                return Some(prepared);
            }
            // The thread ended without it only if it panicked.
            let (j, prepared) = p.receive.recv().ok()?;
            p.received.insert(j, prepared);
        }
    }

    fn bin(&self, bin: BinaryId) -> Option<&Binary> {
        self.binaries.get(bin.0 as usize)
    }

    /// Path of the file actually opened for `bin` (after `--symfs` / cache).
    pub fn binary_path(&self, bin: BinaryId) -> Option<&Path> {
        self.bin(bin).map(|b| b.file.as_path())
    }

    /// The bytes of the file opened for `bin` (for `[vdso]`, the running
    /// kernel's image), shared.
    pub fn binary_bytes(&self, bin: BinaryId) -> Option<FileBytes> {
        self.bin(bin).map(|b| b.map.clone())
    }

    /// The bytes of the separate debug file found for `bin`, shared.
    pub fn debug_file_bytes(&self, bin: BinaryId) -> Option<FileBytes> {
        match &self.bin(bin)?.debug {
            DebugFile::Found(_, map, _) => Some(map.clone()),
            _ => None,
        }
    }

    /// Separate debug file found for `bin`, if one was searched for and found
    /// (searched when the binary is stripped or DWARF is requested).
    pub fn debug_file_path(&self, bin: BinaryId) -> Option<&Path> {
        match &self.bin(bin)?.debug {
            DebugFile::Found(p, _, _) => Some(p),
            _ => None,
        }
    }

    /// Build-id found in the binary's `.note.gnu.build-id`.
    pub fn build_id(&self, bin: BinaryId) -> Option<&[u8]> {
        self.bin(bin)?.info.build_id.as_deref()
    }

    /// Converts a runtime address inside a mapping (MMAP `start`, `pgoff`)
    /// to the ELF's own virtual address, like perf's `map__map_ip` plus the
    /// dso adjustment: file offset `ip - start + pgoff`, mapped to a vaddr via
    /// the PT_LOAD segment containing that offset. An `ET_EXEC` binary is
    /// translated the same way (perf adjusts its symbols to file offsets
    /// too): its usual mappings are at the link address, where that gives
    /// `ip` back, but a program may map its own file again elsewhere, as
    /// node does with V8's embedded builtins.
    pub fn to_elf_address(&self, bin: BinaryId, map_start: u64, map_pgoff: u64, ip: u64) -> u64 {
        let offset = ip.wrapping_sub(map_start).wrapping_add(map_pgoff);
        let Some(b) = self.bin(bin) else {
            return offset;
        };
        let segs = &b.info.segments;
        let seg = segs
            .iter()
            .find(|s| offset >= s.offset && offset - s.offset < s.filesz)
            .or_else(|| {
                segs.iter()
                    .find(|s| offset >= s.offset && offset - s.offset < s.memsz)
            });
        match seg {
            Some(s) => offset - s.offset + s.vaddr,
            None if b.info.is_exec => ip,
            None => offset,
        }
    }

    fn display_name<'a>(&self, sym: &'a Sym) -> Cow<'a, str> {
        if !self.options.demangle {
            return Cow::Borrowed(&sym.name);
        }
        Cow::Borrowed(sym.demangled.get_or_init(|| {
            let (base, suffix) = match sym.name.strip_suffix("@plt") {
                Some(b) => (b, "@plt"),
                None => (&*sym.name, ""),
            };
            match demangle::demangle_with(base, self.options.demangle_params) {
                Some(d) => format!("{d}{suffix}").into_boxed_str(),
                None => (*sym.name).into(),
            }
        }))
    }

    fn info_of(name: Cow<'_, str>, sym: &Sym) -> SymbolInfo {
        SymbolInfo {
            name: name.into_owned(),
            start: sym.start,
            size: sym.end - sym.start,
            module: sym.module.as_deref().map(str::to_string),
            object: sym.object,
        }
    }

    /// The function symbol containing `elf_addr` (an address returned by
    /// [`Self::to_elf_address`]). O(log n).
    pub fn symbol(&self, bin: BinaryId, elf_addr: u64) -> Option<SymbolInfo> {
        let sym = self
            .bin(bin)?
            .symbols
            .find_with(elf_addr, self.options.prefer_plt_names)?;
        Some(Self::info_of(self.display_name(sym), sym))
    }

    /// Number of symbols loaded for `bin` (0 for stripped binaries without
    /// any symbol source).
    pub fn symbol_count(&self, bin: BinaryId) -> usize {
        self.bin(bin).map_or(0, |b| b.symbols.len())
    }

    fn dwarf(&mut self, bin: BinaryId) -> Option<&Dwarf> {
        let idx = bin.0 as usize;
        if matches!(self.binaries.get(idx)?.dwarf, DwarfState::NotLoaded) {
            let options = self.options.clone();
            let binary = self.binaries.get_mut(idx)?;
            if !binary.info.has_dwarf {
                let load = |p: &Path| load_with(options.loader.as_ref(), p);
                search_debug_file(&options, &load, binary);
            }
            let data = if binary.info.has_dwarf {
                Some(&binary.map)
            } else {
                match &binary.debug {
                    DebugFile::Found(_, map, info) if info.has_dwarf => Some(map),
                    _ => None,
                }
            };
            let result = match data.map(|data| load_dwarf(data.clone())) {
                Some(Ok(ctx)) => Ok(ctx),
                Some(Err(e)) => Err(format!("corrupt DWARF: {e}")),
                None => Err("no DWARF debug info".to_string()),
            };
            match result {
                Ok(ctx) => binary.dwarf = DwarfState::Loaded(Box::new(ctx)),
                Err(e) => {
                    binary.dwarf = DwarfState::Failed;
                    let name = binary.name.clone();
                    let msg = format!(
                        "{e}: source lines unavailable. Fix: build with -g, or install the \
                         debug info (/usr/lib/debug/.build-id/...) for this binary"
                    );
                    self.diag(DiagnosticKind::NoDebugInfo, &name, msg);
                }
            }
        }
        match &self.binaries.get(idx)?.dwarf {
            DwarfState::Loaded(dwarf) => Some(dwarf),
            _ => None,
        }
    }

    /// Source file and line of `elf_addr` (innermost, i.e. inside any
    /// inlined function, which is what perf's srcline shows). Loads DWARF
    /// for this binary on first use.
    ///
    /// Like binutils 2.40's addr2line (what perf 6.1 without libbfd runs):
    /// in a DWARF 5 line table, a row whose file register still holds its
    /// initial value 1 (no `DW_LNS_set_file` yet in its sequence) names file
    /// entry 0, the compilation unit's primary file, not entry 1. So code of
    /// a header included first (glibc's `dl-cacheinfo.h` in
    /// `dl-get-cpu-features.c`) shows the `.c` file with the header's line.
    pub fn source_location(&mut self, bin: BinaryId, elf_addr: u64) -> Option<SourceLocation> {
        let dwarf = self.dwarf(bin)?;
        let mut out = dwarf
            .cell
            .with_dependent(|_, ctx| convert_location(&ctx.find_location(elf_addr).ok()??))?;
        if let Some(file) = binutils_files(dwarf, elf_addr).initial {
            out.file = file;
        }
        Some(out)
    }

    /// What binutils' `addr2line` answers at `elf_addr` when
    /// [`Self::source_location`] has no line for it. `None`: it fails (no
    /// function-like symbol precedes the address in its section), and perf
    /// 6.1 falls back to `sym+offset` or `dso[addr]`. Otherwise the file it
    /// names, from the symbol table's `STT_FILE` entries (`None` for `??`);
    /// perf shows `FILE:0`.
    pub fn addr2line_function_file(&self, bin: BinaryId, elf_addr: u64) -> Option<Option<String>> {
        let (starts, data) = self.bfd_functions(bin)?;
        starts
            .function_file(data, elf_addr)
            .map(|file| file.map(str::to_string))
    }

    /// [`Self::addr2line_function_file`] with the function addr2line names
    /// (`-f`), demangled as perf demangles it (perf 6.1 takes it as the
    /// frame's function where DWARF has no line for the address).
    pub fn addr2line_function(
        &self,
        bin: BinaryId,
        elf_addr: u64,
    ) -> Option<(String, Option<String>)> {
        let (starts, data) = self.bfd_functions(bin)?;
        let (name, file) = starts.function(data, elf_addr)?;
        let name = if self.options.demangle {
            demangle::demangle_with(name, self.options.demangle_params)
                .unwrap_or_else(|| name.to_string())
        } else {
            name.to_string()
        };
        Some((name, file.map(str::to_string)))
    }

    /// The symbols BFD looks functions up in for `bin`: perf runs
    /// addr2line on the file it read symbols from, a separate debug file
    /// when that has a `.symtab`. A debug file without one (perf record's
    /// cached copy of a stripped build with the same build-id) loses to a
    /// binary that has one.
    fn bfd_functions(&self, bin: BinaryId) -> Option<(&bfd::FunctionStarts, &[u8])> {
        let b = self.bin(bin)?;
        let (starts, from_debug) = b.function_starts.get_or_init(|| match &b.debug {
            DebugFile::Found(_, map, _)
                if elf::symbol_sources(map).is_some_and(|(_, symtab, _)| symtab) =>
            {
                (bfd::FunctionStarts::new(map), true)
            }
            _ => (bfd::FunctionStarts::new(&b.map), false),
        });
        let data: &[u8] = match &b.debug {
            DebugFile::Found(_, map, _) if *from_debug => map,
            _ => &b.map,
        };
        Some((starts, data))
    }

    /// perf's `elf_base_address`: the first PT_LOAD's `p_vaddr - p_offset`
    /// (0 for shared objects and PIEs), and the end of the highest PT_LOAD.
    pub fn load_layout(&self, bin: BinaryId) -> Option<(u64, u64)> {
        let segs = &self.bin(bin)?.info.segments;
        let first = segs.first()?;
        let end = segs.iter().map(|s| s.vaddr.saturating_add(s.memsz)).max()?;
        Some((first.vaddr.wrapping_sub(first.offset), end))
    }

    /// Whether `bin` is an `ET_EXEC` executable (linked at a fixed address).
    pub fn is_executable(&self, bin: BinaryId) -> bool {
        self.bin(bin).is_some_and(|b| b.info.is_exec)
    }

    /// `.text`'s address minus its file offset in `bin` (perf's
    /// `dso->text_offset`; 0x400000 in a classic non-PIE executable).
    pub fn text_offset(&self, bin: BinaryId) -> u64 {
        self.bin(bin).map_or(0, |b| b.info.text_offset)
    }

    /// Inline chain at `elf_addr`, innermost first (the same order as
    /// `addr2line -f -i`): the last frame is the real (outer) function.
    /// Empty when no DWARF is available.
    ///
    /// Where a function's DWARF name is not its linkage name (a C++
    /// template instance for a lambda has only `DW_AT_name`), binutils'
    /// `addr2line` names the innermost frame after the ELF symbol at the
    /// address the first time it meets the function there; from then on
    /// the function keeps the symbol's name where it is the symbol's
    /// (starting at its address), also wherever it shows as an inliner,
    /// and its own name otherwise. perf then sees the symbol's own name
    /// where that is the name, not an inline frame.
    pub fn inline_frames(&mut self, bin: BinaryId, elf_addr: u64) -> Vec<Frame> {
        let (do_demangle, params) = (self.options.demangle, self.options.demangle_params);
        let Some(dwarf) = self.dwarf(bin) else {
            return Vec::new();
        };
        let BinutilsFiles {
            initial: initial_file,
            relative_unit_dir,
        } = binutils_files(dwarf, elf_addr);
        // (raw name, whether binutils takes it as the linkage name, the
        // function's DIE offset, location), innermost first.
        let raw_frames = dwarf.cell.with_dependent(|_, ctx| {
            let mut raw_frames = Vec::new();
            let Ok(mut iter) = ctx.find_frames(elf_addr).skip_all_loads() else {
                return raw_frames;
            };
            while let Ok(Some(frame)) = iter.next() {
                let name = frame.function.as_ref().and_then(|f| {
                    let raw = f.raw_name().ok()?.into_owned();
                    let linkage = f.language.is_some_and(name_is_linkage)
                        || raw.starts_with("_Z")
                        || raw.starts_with("_R");
                    Some((raw, linkage))
                });
                let die = frame.dw_die_offset.map_or(usize::MAX, |o| o.0);
                let location = frame.location.as_ref().and_then(convert_location);
                raw_frames.push((name, die, location));
                if raw_frames.len() > 256 {
                    break; // corrupt DWARF guard
                }
            }
            raw_frames
        });
        let inlined = raw_frames.len() > 1;
        let mut out = Vec::with_capacity(raw_frames.len());
        for (depth, (name, die, mut location)) in raw_frames.into_iter().enumerate() {
            let function = name.map(|(raw, linkage)| {
                let raw = if linkage {
                    raw
                } else if depth == 0 {
                    self.innermost_without_linkage(bin, elf_addr, (die, raw), inlined)
                } else {
                    let key = (bin, die, raw);
                    self.renamed_functions.get(&key).cloned().unwrap_or(key.2)
                };
                if do_demangle {
                    demangle::demangle_with(&raw, params).unwrap_or(raw)
                } else {
                    raw
                }
            });
            // The innermost record's file, as binutils names it.
            if let (0, Some(l), Some(f)) = (depth, location.as_mut(), &initial_file) {
                l.file = f.clone();
            }
            // An inliner's call file, as binutils names one of directory
            // entry 0 (see BinutilsFiles); addr2line's reading puts
            // such a file right under the unit's directory, and only there.
            if let (1.., Some(l), Some(dir)) = (depth, location.as_mut(), &relative_unit_dir) {
                let under_dir0 = l
                    .file
                    .strip_prefix(dir.as_str())
                    .and_then(|rest| rest.strip_prefix('/'))
                    .filter(|name| !name.contains('/'));
                if let Some(name) = under_dir0 {
                    l.file = format!("{dir}/{dir}/{name}");
                }
            }
            out.push(Frame { function, location });
        }
        out
    }

    /// binutils' name for the innermost function at `elf_addr` when its
    /// DWARF name `raw` (of DIE `die`) is no linkage name: at the
    /// function's first lookup the ELF symbol at the address, later the
    /// name it settled on then: the symbol's where that starts the function
    /// (it is not `inlined` there, nor a cold part), else its own (a
    /// lambda's `build` inlined into `_M_run` prints as `_M_run` once).
    fn innermost_without_linkage(
        &mut self,
        bin: BinaryId,
        elf_addr: u64,
        (die, raw): (usize, String),
        inlined: bool,
    ) -> String {
        let Some(symbol) = self
            .bfd_functions(bin)
            .and_then(|(starts, data)| starts.function(data, elf_addr))
            .map(|(name, _)| name.to_string())
        else {
            let key = (bin, die, raw);
            return self.renamed_functions.get(&key).cloned().unwrap_or(key.2);
        };
        // binutils settles the function's name at its first lookup: the
        // symbol's where that starts the function, else its DWARF name from
        // then on (it marks the name a linkage name either way); only that
        // first answer names the symbol.
        let key = (bin, die, raw);
        if let Some(settled) = self.renamed_functions.get(&key) {
            return settled.clone();
        }
        let settled = if !inlined && !symbol.contains(".cold") {
            symbol.clone()
        } else {
            key.2.clone()
        };
        self.renamed_functions.insert(key, settled);
        symbol
    }

    /// Starts reading kallsyms on another thread, so that the kernel's slow
    /// formatting of `/proc/kallsyms` (about 0.1 s for 120k symbols) and the
    /// parsing overlap with the caller's work; the first
    /// [`Symbolizer::kernel_symbol`] that needs it waits for it. Call it when
    /// kernel samples are likely. Nothing is read when this boot's core
    /// kernel symbols are cached (see `kallsyms.rs`).
    pub fn prefetch_kallsyms(&mut self) {
        if !matches!(self.kallsyms, Loaded::Pending) || self.kallsyms_prefetch.is_some() {
            return;
        }
        if self.core_kallsyms().is_some() {
            return;
        }
        let path = self.kallsyms_path();
        let cache = self.uses_proc_kallsyms();
        self.kallsyms_prefetch = std::thread::Builder::new()
            .name("kallsyms".into())
            .spawn(move || read_kallsyms(&path, cache))
            .ok();
    }

    fn uses_proc_kallsyms(&self) -> bool {
        self.options.kallsyms.is_none()
    }

    fn kallsyms_path(&self) -> PathBuf {
        self.options
            .kallsyms
            .clone()
            .unwrap_or_else(|| PathBuf::from("/proc/kallsyms"))
    }

    /// This boot's cached core kernel symbols, when reading `/proc/kallsyms`.
    fn core_kallsyms(&mut self) -> Option<&kallsyms::CoreSymbols> {
        if self.core_kallsyms.is_none() {
            let core = if self.uses_proc_kallsyms() {
                kallsyms::cache_path()
                    .and_then(|p| self.load_file(&p).ok())
                    .and_then(kallsyms::CoreSymbols::new)
            } else {
                None
            };
            self.core_kallsyms = Some(core);
        }
        self.core_kallsyms.as_ref().and_then(Option::as_ref)
    }

    fn load_kallsyms(&mut self) {
        let path = self.kallsyms_path();
        let shown = path.display().to_string();
        let read = match self.kallsyms_prefetch.take().map(|h| h.join()) {
            Some(Ok(result)) => result,
            // The reader thread panicked or was never started: read here.
            Some(Err(_)) | None => read_kallsyms(&path, self.uses_proc_kallsyms()),
        };
        match read {
            Ok(Some(t)) => self.kallsyms = Loaded::Ok(t),
            Ok(None) => {
                self.kallsyms = Loaded::Failed;
                let msg = "kernel addresses are hidden (all zero). Fix: run as root or set \
                           `sysctl kernel.kptr_restrict=0` when recording/reporting, or pass \
                           --kallsyms with a readable copy"
                    .to_string();
                self.diag(DiagnosticKind::KallsymsRestricted, &shown, msg);
            }
            Err(e) => {
                self.kallsyms = Loaded::Failed;
                let msg = format!(
                    "cannot read kallsyms: {e}. Fix: pass --kallsyms FILE (a copy of the \
                     recording machine's /proc/kallsyms)"
                );
                self.diag(DiagnosticKind::KallsymsMissing, &shown, msg);
            }
        }
    }

    /// Kernel (or module) text symbol containing `addr`, from `/proc/kallsyms`
    /// or the `kallsyms` option file (read on first use). Names are not
    /// demangled, like perf. `None` when kallsyms is unreadable or
    /// restricted (a diagnostic is recorded).
    pub fn kernel_symbol(&mut self, addr: u64) -> Option<SymbolInfo> {
        if matches!(self.kallsyms, Loaded::Pending) && self.kallsyms_prefetch.is_none() {
            if let Some(core) = self.core_kallsyms().filter(|c| c.covers(addr)) {
                let sym = core.find(addr)?;
                return Some(SymbolInfo {
                    name: sym.name.to_string(),
                    start: sym.start,
                    size: sym.end - sym.start,
                    module: None,
                    object: false,
                });
            }
        }
        if matches!(self.kallsyms, Loaded::Pending) {
            self.load_kallsyms();
        }
        let Loaded::Ok(k) = &self.kallsyms else {
            return None;
        };
        let sym = k.table.find(addr)?;
        Some(Self::info_of(Cow::Borrowed(&sym.name), sym))
    }

    /// The start of the core kernel's first kallsyms symbol and of its
    /// last (the last before the modules' symbols), in running addresses.
    pub fn kernel_symbols_span(&mut self) -> Option<(u64, u64)> {
        if matches!(self.kallsyms, Loaded::Pending) && self.kallsyms_prefetch.is_none() {
            if let Some(core) = self.core_kallsyms() {
                return Some(core.first_and_last_start());
            }
        }
        if matches!(self.kallsyms, Loaded::Pending) {
            self.load_kallsyms();
        }
        let Loaded::Ok(k) = &self.kallsyms else {
            return None;
        };
        let mut core = k.table.syms().iter().filter(|s| s.module.is_none());
        let first = core.next()?.start;
        Some((first, core.last().map_or(first, |s| s.start)))
    }

    /// The running kernel's address of `_text` or `_stext` (perf's
    /// `ref_reloc_sym`), from kallsyms like [`Self::kernel_symbol`].
    pub fn kernel_ref_address(&mut self, name: &str) -> Option<u64> {
        if matches!(self.kallsyms, Loaded::Pending) && self.kallsyms_prefetch.is_none() {
            if let Some(core) = self.core_kallsyms() {
                return core.refs.get(name);
            }
        }
        if matches!(self.kallsyms, Loaded::Pending) {
            self.load_kallsyms();
        }
        match &self.kallsyms {
            Loaded::Ok(k) => k.refs.get(name),
            _ => None,
        }
    }

    /// Symbol of JIT-compiled code from `/tmp/perf-PID.map` (lines
    /// `START SIZE name`, hex), loaded once per pid. Later entries win over
    /// earlier ones at the same address. Names are used as written.
    pub fn jit_symbol(&mut self, pid: u32, addr: u64) -> Option<SymbolInfo> {
        if !self.jit.contains_key(&pid) {
            let path = PathBuf::from(format!("/tmp/perf-{pid}.map"));
            let table = match std::fs::read(&path) {
                Ok(t) => Some(parse_perf_map(&String::from_utf8_lossy(&t))),
                Err(e) => {
                    let shown = path.display().to_string();
                    let msg = format!(
                        "cannot read JIT map: {e}. Fix: keep the runtime's perf map file \
                         (e.g. node --perf-basic-prof, JVM perf-map-agent) until reporting"
                    );
                    self.diag(DiagnosticKind::JitMapMissing, &shown, msg);
                    None
                }
            };
            self.jit.insert(pid, table);
        }
        let sym = self.jit.get(&pid)?.as_ref()?.find(addr)?;
        Some(Self::info_of(Cow::Borrowed(&sym.name), sym))
    }

    /// perf's `dso__symtab_origin` for a user-space DSO recorded as
    /// `long_name`: where `dso__load` takes its symbols from, as the
    /// letter `perf report -v` shows. perf tries its places in a fixed
    /// order and reads the first file with a `.symtab`, else the first
    /// with a `.dynsym`; a file whose build-id differs is skipped; `!`
    /// when none will do.
    pub fn symtab_origin(&self, long_name: &str, build_id: Option<&[u8]>) -> char {
        let symfs = self.options.symfs.as_deref();
        let binary = with_symfs(symfs, Path::new(long_name));
        // The binary itself: its build-id and .gnu_debuglink, read once.
        let info = match is_pseudo_path(long_name) {
            true => None,
            false => self
                .load_file(&binary)
                .ok()
                .and_then(|b| elf::parse_info(&b).ok()),
        };
        // Without a recorded build-id, perf reads the binary's (for a vdso:
        // this machine's, which it copies to a file of its own).
        let vdso_id;
        let expected = match build_id.map(normalize_build_id).filter(|b| !b.is_empty()) {
            Some(id) => Some(id),
            None if long_name == "[vdso]" => {
                vdso_id = current_vdso()
                    .ok()
                    .and_then(|b| elf::symbol_sources(&b))
                    .and_then(|(id, _, _)| id);
                vdso_id.as_deref().map(normalize_build_id)
            }
            None if Path::new(long_name).is_file() => info
                .as_ref()
                .and_then(|i| i.build_id.as_deref())
                .map(normalize_build_id),
            None => None,
        };
        let mut places: Vec<(char, PathBuf)> = Vec::new();
        // DEBUGLINK: the binary's .gnu_debuglink name, relative to the
        // working directory, beside the binary, in its .debug/, and under
        // /usr/lib/debug.
        if let Some(link) = info.as_ref().and_then(|i| i.debuglink.as_deref()) {
            let dir = binary.parent().unwrap_or(Path::new(""));
            for candidate in [
                PathBuf::from(link),
                dir.join(link),
                dir.join(".debug").join(link),
                PathBuf::from(format!("/usr/lib/debug{}/{link}", dir.display())),
            ] {
                if candidate.is_file() {
                    places.push(('l', candidate));
                    break;
                }
            }
        }
        if let Some(entry) = expected.and_then(|id| build_id_cache_entry(&self.options, id)) {
            // perf caches a vdso image as `vdso`, any other as `elf`.
            let image = if long_name.starts_with("[vdso") {
                "vdso"
            } else {
                "elf"
            };
            places.push(('B', entry.join(image)));
            places.push(('D', entry.join("debug")));
        }
        if !is_pseudo_path(long_name) {
            let debug = |suffix: &str| {
                with_symfs(
                    symfs,
                    Path::new(&format!("/usr/lib/debug{long_name}{suffix}")),
                )
            };
            places.push(('f', debug(".debug")));
            places.push(('u', debug("")));
        }
        if let Some(id) = expected {
            let hex = hex(id);
            let (dir, rest) = hex.split_at(2.min(hex.len()));
            let path = format!("/usr/lib/debug/.build-id/{dir}/{rest}.debug");
            places.push(('b', with_symfs(symfs, Path::new(&path))));
        }
        if !is_pseudo_path(long_name) {
            places.push(('d', binary));
        }
        let mut runtime = None;
        for (origin, path) in places {
            let Ok(bytes) = self.load_file(&path) else {
                continue;
            };
            let Some((file_id, symtab, dynsym)) = elf::symbol_sources(&bytes) else {
                continue;
            };
            if let Some(expected) = expected {
                if !build_id_matches(file_id.as_deref(), expected) {
                    continue;
                }
            }
            if symtab {
                return origin;
            }
            if dynsym && runtime.is_none() {
                runtime = Some(origin);
            }
        }
        runtime.unwrap_or('!')
    }

    /// Problems met so far (missing binaries, build-id mismatches, no
    /// symbols, no debug info, restricted kallsyms), each once per path, in
    /// the order they were found.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
}

/// Finds the separate debug file of `bin` (once).
fn search_debug_file(
    options: &SymbolizerOptions,
    loader: &dyn Fn(&Path) -> std::io::Result<FileBytes>,
    bin: &mut Binary,
) {
    if matches!(bin.debug, DebugFile::NotSearched) {
        bin.debug = find_debug_file(options, loader, &bin.name, &bin.file, &bin.info);
    }
}

/// The separate debug file of the binary mapped as `name`, opened as
/// `file`, whose ELF is `info`.
fn find_debug_file(
    options: &SymbolizerOptions,
    loader: &dyn Fn(&Path) -> std::io::Result<FileBytes>,
    name: &str,
    file: &Path,
    info: &ElfInfo,
) -> DebugFile {
    let symfs = options.symfs.as_deref();
    let mut candidates: Vec<PathBuf> = Vec::new();
    let usr_debug = with_symfs(symfs, Path::new("/usr/lib/debug"));
    if let Some(id) = info.build_id.as_deref().filter(|i| i.len() > 1) {
        let h = hex(id);
        candidates.push(
            usr_debug
                .join(".build-id")
                .join(&h[..2])
                .join(format!("{}.debug", &h[2..])),
        );
    }
    let orig = Path::new(name);
    if let Some(link) = &info.debuglink {
        if let Some(dir) = file.parent() {
            candidates.push(dir.join(link));
            candidates.push(dir.join(".debug").join(link));
        }
        if let Some(dir) = orig.parent() {
            candidates.push(
                usr_debug
                    .join(dir.strip_prefix("/").unwrap_or(dir))
                    .join(link),
            );
        }
    }
    let rel = orig.strip_prefix("/").unwrap_or(orig);
    candidates.push(usr_debug.join(format!("{}.debug", rel.display())));
    candidates.push(usr_debug.join(rel));
    if let Some(cached) = info
        .build_id
        .as_deref()
        .and_then(|id| build_id_cache_entry(options, id))
    {
        candidates.push(cached.join("debug"));
        // perf record's copy of the binary: perf reads its symbols and
        // lines from there first, so a copy at the recorded path that lost
        // its DWARF still has source lines in perf report.
        candidates.push(cached.join("elf"));
    }
    let own = std::fs::canonicalize(file).ok();
    for cand in candidates {
        if own.is_some() && std::fs::canonicalize(&cand).ok() == own {
            continue;
        }
        let Ok(map) = loader(&cand) else { continue };
        let Ok(debug_info) = elf::parse_info(&map) else {
            continue;
        };
        if let (Some(a), Some(b)) = (&info.build_id, &debug_info.build_id) {
            if a != b {
                continue;
            }
        }
        return DebugFile::Found(cand, map, debug_info);
    }
    DebugFile::NotFound
}

/// binutils' `non_mangled`: whether a DWARF function's `DW_AT_name` is its
/// linkage name in a unit of `language` (C-like languages; C++ and Rust
/// names need `DW_AT_linkage_name`).
fn name_is_linkage(language: gimli::DwLang) -> bool {
    use gimli::constants as c;
    [
        c::DW_LANG_C89,
        c::DW_LANG_C,
        c::DW_LANG_Ada83,
        c::DW_LANG_Cobol74,
        c::DW_LANG_Cobol85,
        c::DW_LANG_Fortran77,
        c::DW_LANG_Pascal83,
        c::DW_LANG_C99,
        c::DW_LANG_Ada95,
        c::DW_LANG_PLI,
        c::DW_LANG_UPC,
        c::DW_LANG_C11,
        c::DW_LANG_Mips_Assembler,
    ]
    .contains(&language)
}

/// Where binutils 2.40 names files of the unit at `addr` otherwise than
/// the DWARF reading (DWARF 5 line tables only; empty otherwise).
#[derive(Default)]
struct BinutilsFiles {
    /// The file binutils names for `addr` itself when that differs: the
    /// primary file (entry 0) for a row whose file register was never set
    /// in its sequence (see [`Symbolizer::source_location`]), and a file of
    /// a relative directory entry 0, which binutils puts under the unit's
    /// directory.
    initial: Option<String>,
    /// The unit's directory where it is relative, which directory entry 0
    /// then is: binutils puts the unit's directory before that entry again
    /// (glibc's `./elf/./elf/`).
    relative_unit_dir: Option<String>,
}

fn binutils_files(dwarf: &Dwarf, addr: u64) -> BinutilsFiles {
    // Finding the unit parses its functions: skip it for DWARF 4.
    if !dwarf.line_v5 {
        return BinutilsFiles::default();
    }
    dwarf.cell.with_dependent(|_, ctx| {
        let Some(unit) = ctx.find_dwarf_and_unit(addr).skip_all_loads() else {
            return BinutilsFiles::default();
        };
        let v5 = unit
            .unit
            .line_program
            .as_ref()
            .is_some_and(|p| p.header().version() >= 5);
        if !v5 {
            return BinutilsFiles::default();
        }
        let relative_unit_dir = unit
            .unit
            .comp_dir
            .as_ref()
            .map(|d| d.to_string_lossy().into_owned())
            .filter(|d| !d.is_empty() && !d.starts_with('/'));
        BinutilsFiles {
            initial: initial_file_of_unit(unit, addr),
            relative_unit_dir,
        }
    })
}

fn initial_file_of_unit(
    unit_ref: gimli::UnitRef<'_, DwarfReader<'_>>,
    addr: u64,
) -> Option<String> {
    let (dwarf, unit) = (unit_ref.dwarf, unit_ref.unit);
    let program = unit.line_program.as_ref()?;
    let mut rows = program.clone().rows();
    // (address, file index, file register still initial) of the previous row.
    let mut prev: Option<(u64, u64, bool)> = None;
    let mut initial = true;
    let mut found = None;
    let mut guard = 0u32;
    while let Ok(Some((_, row))) = rows.next_row() {
        guard += 1;
        if guard > 50_000_000 {
            return None; // corrupt DWARF guard
        }
        if let Some((a, f, init)) = prev {
            if a <= addr && addr < row.address() {
                found = Some((f, init));
                // Later sequences may cover the address too; the first
                // match is what the line table lookup takes as well.
                break;
            }
        }
        if row.end_sequence() {
            prev = None;
            initial = true;
            continue;
        }
        if row.file_index() != 1 {
            initial = false;
        }
        prev = Some((row.address(), row.file_index(), initial));
    }
    let (file_index, initial) = found?;
    let header = rows.header();
    let render = |f: &gimli::FileEntry<DwarfReader<'_>>| -> Option<String> {
        let name = dwarf.attr_string(unit, f.path_name()).ok()?;
        let name = name.to_string_lossy().into_owned();
        if name.starts_with('/') {
            return Some(name);
        }
        let mut path = String::new();
        if let Some(dir) = f.directory(header) {
            let dir = dwarf.attr_string(unit, dir).ok()?;
            let dir = dir.to_string_lossy().into_owned();
            if !dir.starts_with('/') {
                if let Some(comp) = &unit.comp_dir {
                    path.push_str(&comp.to_string_lossy());
                    path.push('/');
                }
            }
            path.push_str(&dir);
            path.push('/');
        }
        path.push_str(&name);
        Some(path)
    };
    if file_index == 1 && initial {
        let (p, e) = (render(header.file(0)?)?, render(header.file(1)?)?);
        if p != e {
            return Some(p);
        }
    }
    // binutils puts the unit's directory before directory entry 0 too when
    // that is relative (glibc: `./elf/./elf/dl-reloc.c`), where DWARF 5
    // makes entry 0 the unit's directory itself.
    let entry = header.file(file_index)?;
    let relative_dir0 = entry.directory_index() == 0
        && entry.directory(header).is_some_and(|d| {
            dwarf
                .attr_string(unit, d)
                .is_ok_and(|d| !d.to_string_lossy().starts_with('/'))
        });
    if relative_dir0 {
        render(entry)
    } else {
        None
    }
}

fn convert_location(loc: &addr2line::Location<'_>) -> Option<SourceLocation> {
    Some(SourceLocation {
        file: loc.file?.to_string(),
        line: loc.line.unwrap_or(0),
        column: loc.column,
    })
}

/// Parses the DWARF of `bytes`, an ELF file's.
///
/// The DWARF sections line and inline-frame lookups read: not location
/// lists, macros or type units, which in a distribution's compressed debug
/// file would be decompressed for nothing (glibc's location lists are a
/// third of its debug info).
const SECTIONS_READ: [gimli::SectionId; 10] = {
    use gimli::SectionId as S;
    [
        S::DebugAbbrev,
        S::DebugAddr,
        S::DebugAranges,
        S::DebugInfo,
        S::DebugLine,
        S::DebugLineStr,
        S::DebugStr,
        S::DebugStrOffsets,
        S::DebugRanges,
        S::DebugRngLists,
    ]
};

/// The sections are read where they are: when `bytes` is a memory map,
/// only the pages that lookups touch become resident, and nothing is
/// copied. Compressed sections are decompressed once, here.
fn load_dwarf(bytes: FileBytes) -> Result<Dwarf, String> {
    use object::{Object, ObjectSection};
    let file = object::File::parse(&*bytes).map_err(|e| e.to_string())?;
    let endian = if file.is_little_endian() {
        gimli::RunTimeEndian::Little
    } else {
        gimli::RunTimeEndian::Big
    };
    let mut decompressed = Vec::new();
    for sec in file.sections() {
        let read = sec.name().is_ok_and(|n| {
            let n = n
                .strip_prefix(".zdebug_")
                .map(|rest| format!(".debug_{rest}"));
            let n = n.as_deref().or(sec.name().ok());
            SECTIONS_READ.iter().any(|id| Some(id.name()) == n)
        });
        let compressed = sec
            .compressed_file_range()
            .is_ok_and(|r| r.format != object::CompressionFormat::None);
        if read && compressed {
            // Unreadable compressed data reads as an empty section, as
            // when the section is absent.
            let data = sec
                .uncompressed_data()
                .map(Cow::into_owned)
                .unwrap_or_default();
            decompressed.push((sec.index(), data.into_boxed_slice()));
        }
    }
    let owner = DwarfBytes {
        file: bytes,
        decompressed,
    };
    let mut line_v5 = false;
    let cell = DwarfCell::try_new(owner, |owner| {
        let file = object::File::parse(&*owner.file).map_err(|e| e.to_string())?;
        let section = |id: gimli::SectionId| -> &[u8] {
            if !SECTIONS_READ.contains(&id) {
                return &[];
            }
            let Some(sec) = file.section_by_name(id.name()) else {
                return &[];
            };
            if let Some((_, data)) = owner.decompressed.iter().find(|(i, _)| *i == sec.index()) {
                return data;
            }
            match sec.compressed_file_range() {
                Ok(r) if r.format == object::CompressionFormat::None => {
                    let range = usize::try_from(r.offset).ok().and_then(|start| {
                        Some(start..start.checked_add(usize::try_from(r.uncompressed_size).ok()?)?)
                    });
                    range.and_then(|r| owner.file.get(r)).unwrap_or(&[])
                }
                _ => &[],
            }
        };
        let dwarf = gimli::Dwarf::load(|id| {
            Ok::<_, gimli::Error>(gimli::EndianSlice::new(section(id), endian))
        })
        .map_err(|e| e.to_string())?;
        line_v5 = has_v5_line_program(
            gimli::Section::reader(&dwarf.debug_line).slice(),
            endian == gimli::RunTimeEndian::Big,
        );
        addr2line::Context::from_dwarf(dwarf).map_err(|e| e.to_string())
    })?;
    Ok(Dwarf { cell, line_v5 })
}

/// Whether `.debug_line` holds a version 5 (or later) line program, by its
/// headers (each starts with its length and version). Unreadable headers
/// count as yes, which only costs time.
fn has_v5_line_program(debug_line: &[u8], big_endian: bool) -> bool {
    let read = |at: usize, n: usize| -> Option<u64> {
        let b = debug_line.get(at..at.checked_add(n)?)?;
        let mut v = 0u64;
        for i in 0..n {
            let byte = if big_endian { b[i] } else { b[n - 1 - i] };
            v = v << 8 | byte as u64;
        }
        Some(v)
    };
    let mut at = 0usize;
    while at < debug_line.len() {
        let Some(length32) = read(at, 4) else {
            return true;
        };
        // 64-bit DWARF: the length follows as 8 bytes.
        let (length, header) = match length32 {
            0xffff_ffff => match read(at + 4, 8) {
                Some(l) => (l, 12),
                None => return true,
            },
            l => (l, 4),
        };
        match read(at + header, 2) {
            Some(version) if version < 5 => {}
            _ => return true,
        }
        match usize::try_from(length)
            .ok()
            .and_then(|l| (at + header).checked_add(l))
        {
            Some(next) => at = next,
            None => return true,
        }
    }
    false
}

/// What reading kallsyms gives: the table, `None` when the addresses are
/// hidden, or the read error.
type KallsymsRead = std::io::Result<Option<kallsyms::Kallsyms>>;

/// Reads and parses kallsyms at `path`; with `cache`, also stores the core
/// kernel's part for the rest of this boot.
fn read_kallsyms(path: &Path, cache: bool) -> KallsymsRead {
    let table = kallsyms::parse(&std::fs::read(path)?);
    if let (true, Some(full)) = (cache, &table) {
        if let (Some(core), Some(p)) = (kallsyms::encode_core(full), kallsyms::cache_path()) {
            // A cache that cannot be written only costs the next report the read.
            let _ = kallsyms::write_cache(&p, &core);
        }
    }
    Ok(table)
}

/// Parses a `/tmp/perf-PID.map` file.
fn parse_perf_map(text: &str) -> SymbolTable {
    let parse_hex = |s: &str| {
        let s = s.strip_prefix("0x").unwrap_or(s);
        u64::from_str_radix(s, 16).ok()
    };
    let mut syms = Vec::new();
    for line in text.lines() {
        let line = line.trim_end();
        let mut parts = line.splitn(3, ' ');
        let (Some(start), Some(size), Some(name)) = (parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let (Some(start), Some(size)) = (parse_hex(start), parse_hex(size)) else {
            continue;
        };
        syms.push(Sym::new(start, size, Binding::Global, name));
    }
    SymbolTable::build(syms, false, true)
}

#[cfg(test)]
mod tests;
