//! In-process DWARF unwinding of `--call-graph dwarf` samples (x86-64).
//!
//! A sample recorded with `PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER`
//! carries the user registers at the time of the sample and a copy of the
//! top of the user stack. [`DwarfUnwinder::unwind`] turns them into the list
//! of user-space addresses perf 6.1's `unwind__get_entries` produces: the
//! sample ip first, then one address per caller.
//!
//! # Which unwinder, and why
//!
//! The CFI interpretation is done by the [`framehop`] crate (MIT/Apache-2.0,
//! maintained; the unwinder of the `samply` profiler). It reads `.eh_frame`
//! through the `.eh_frame_hdr` binary-search table (or `.debug_frame` /
//! `.eh_frame` without a header, for which it builds an index once per
//! module), recovers only what return addresses need (`rip`, `rsp`, `rbp`),
//! handles prologues/epilogues, detects the end of the stack
//! (`.cfi_undefined rip` in `_start`) and caches unwind rules by address in a
//! fixed-size cache. Using gimli's `UnwindSection` directly would mean
//! re-implementing the FDE lookup, the rule cache and the register
//! bookkeeping that framehop already does; framehop itself uses gimli.
//! Sections are located with the `object` crate, as in `symbolize`.
//! (framehop 0.16 depends on gimli 0.33, so the build carries it next to
//! the workspace's gimli 0.32; no types cross between them.)
//!
//! # How it maps perf's model
//!
//! * Registers: perf's x86-64 numbering (`BP` 6, `SP` 7, `IP` 8); a value is
//!   found by its bit in the attr's `sample_regs_user` mask (values are
//!   stored in mask-bit order). ABI 0 (no user registers, e.g. a kernel
//!   thread) and 32-bit ABI samples are not unwound.
//! * Memory: only the stack copy is readable — address `SP + i` for
//!   `i < dyn_size` (clamped to the bytes present). A read outside it ends the
//!   unwinding and marks the result [`UnwindResult::truncated`]
//!   ([`StopReason::StackExhausted`]).
//! * Modules: the process's maps at the time of the sample, looked up through
//!   an [`AddressSpace`] (for a [`Machine`], [`ThreadSpace`] uses
//!   [`Machine::resolve`]). File-backed and `[vdso]` maps are opened through
//!   the [`Symbolizer`] (`binary(path, build_id)`, which honours `--symfs`,
//!   the build-id cache and build-id checks), their bytes are read with the
//!   symbolizer's [`FileLoader`](crate::symbolize::FileLoader) and the
//!   AVMA → SVMA bias comes from [`Symbolizer::to_elf_address`] (map
//!   start/pgoff and the ELF's PT_LOAD headers). Unwind sections are loaded
//!   once per binary and shared by every process mapping it; each process
//!   gets its own framehop module list, updated when a map changes (exec,
//!   dlopen, munmap + mmap). One rule cache serves all processes.
//! * Like perf (libunwind's and libdw's `--call-graph dwarf` back ends),
//!   caller frames are reported as *return address − 1*, so that they fall
//!   inside the call instruction; the first frame is the sample ip itself.
//! * An empty stack copy (`dyn_size` 0, e.g. a sample inside `execve`)
//!   gives no frames at all, like perf ("nothing was captured").
//! * A chain cut short by the end of the stack copy gets perf's closing
//!   `0xffffffffffffffff` entry in the
//!   [`callchain::Unwinder`](crate::callchain::Unwinder) output, not in
//!   [`UnwindResult::frames`], which holds only real addresses.
//! * Where the `.eh_frame_hdr` table has no FDE for the pc, perf's
//!   libunwind does not use any CFI but guesses the frame from rbp
//!   (`frame_chain`: taken only if `sp <= rbp <= sp + 0x4000`); prec does
//!   the same instead of framehop's own fallback. perf's `access_mem` never
//!   serves the stack copy's last 8 bytes, and neither does prec.
//! * perf finds a module's `.eh_frame_hdr` at the lowest start of any map
//!   of the same DSO in the thread, and keeps a process's maps from before
//!   its exec: a program started by a shell that had libc or ld.so at a
//!   lower address gets the shell's copy searched, finds no FDE there and
//!   falls back to the rbp guess (or stops, where nothing of the file is
//!   mapped at that address). prec models both.
//! * Unwinding stops when the pc is in no map or in a map without a
//!   readable binary (perf's libunwind cannot find unwind info there either),
//!   at the root of the stack (`_start`, `clone3`), or after
//!   [`DwarfUnwinder::max_frames`] addresses (perf's default 127).
//!
//! # Plugging it in (callchain / script)
//!
//! Keep one `DwarfUnwinder` for the whole run, next to the [`Machine`] that
//! replays the records and the [`Symbolizer`] used for symbol names (so each
//! binary is opened once). `DwarfUnwinder` implements
//! [`callchain::Unwinder`](crate::callchain::Unwinder), so with
//! [`Callchains::resolve`](crate::callchain::Callchains::resolve) just pass
//! `Some(&mut unwinder)`; it is used for samples that pass
//! [`callchain::can_unwind`](crate::callchain::can_unwind):
//!
//! ```no_run
//! # use prec_report::callchain::{Callchains, ChainParams, ChainFrame};
//! # use prec_report::unwind::DwarfUnwinder;
//! # fn f(sample: &prec_format::Sample<'_>, attr: &prec_format::Attr,
//! #      machine: &mut prec_report::tasks::Machine, resolver: &mut prec_report::aggregate::Resolver,
//! #      strings: &mut prec_report::aggregate::Strings) {
//! let mut unwinder = DwarfUnwinder::new(); // once per run
//! let mut cc = Callchains::new();
//! let mut frames: Vec<ChainFrame> = Vec::new();
//! cc.resolve(machine, resolver, strings, attr, sample, &ChainParams::default(),
//!            Some(&mut unwinder), &mut frames);
//! // at the end, e.g. for a warning like perf's:
//! let stats = unwinder.stats();
//! if stats.truncated > 0 {
//!     eprintln!("{stats}");
//! }
//! # }
//! ```
//!
//! Directly, per sample with `regs_user` and `stack_user`:
//!
//! ```no_run
//! # use prec_report::{tasks::Machine, symbolize::Symbolizer};
//! # use prec_report::unwind::{DwarfUnwinder, ThreadSpace};
//! # fn f(sample: &prec_format::Sample<'_>, machine: &mut Machine, symbolizer: &mut Symbolizer,
//! #      unwinder: &mut DwarfUnwinder) {
//! let (pid, tid) = (sample.pid.unwrap_or(0) as i32, sample.tid.unwrap_or(0) as i32);
//! if let (Some(regs), Some(stack)) = (&sample.regs_user, &sample.stack_user) {
//!     let mut space = ThreadSpace::new(machine, pid, tid);
//!     let r = unwinder.unwind(pid as u32, regs, stack, &mut space, symbolizer);
//!     // r.frames: callee first; r.frames[0] is the user ip, then return
//!     // addresses - 1. perf appends them after the kernel part of
//!     // PERF_SAMPLE_CALLCHAIN (callee order). Resolve each address with
//!     // machine.resolve(pid, tid, misc::USER, addr).
//! }
//! # }
//! ```
//!
//! `pid` keys the per-process module list: pass the sample's pid (threads
//! share their process's maps); `tid` only selects the thread for
//! [`Machine::resolve`]. The API takes `&mut Machine` because the machine
//! exposes a process's maps only through `resolve`; callers holding a
//! [`Maps`] can use [`MapsSpace`] instead.
//!
//! # Left out
//!
//! * Architectures other than x86-64 (framehop supports aarch64; the
//!   register mapping is not written), and 32-bit (`abi` 1) samples.
//! * Reading memory outside the stack copy (perf's libunwind can read
//!   `.eh_frame`-referenced data from the file; CFA expressions that
//!   dereference non-stack memory are not supported by framehop either).
//! * JIT code (`/tmp/perf-PID.map`) has no unwind info: unwinding stops there.
//! * Inline frames are a symbolization matter (`Symbolizer::inline_frames`).

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{FrameAddress, Module, ModuleSectionInfo, Unwinder};
use object::{Object, ObjectSection};
use prec_format::constants::misc;
use prec_format::sample::{Regs, StackUser};

use crate::maps::{Dso, DsoId, DsoKind, Dsos, Map, Maps};
use crate::symbolize::{BinaryId, FileBytes, Symbolizer};
use crate::tasks::Machine;

/// perf's `PERF_REG_X86_BP`.
pub const PERF_REG_X86_BP: u32 = 6;
/// perf's `PERF_REG_X86_SP`.
pub const PERF_REG_X86_SP: u32 = 7;
/// perf's `PERF_REG_X86_IP`.
pub const PERF_REG_X86_IP: u32 = 8;
/// `PERF_SAMPLE_REGS_ABI_64`.
const ABI_64: u64 = 2;
/// perf's `PERF_MAX_STACK_DEPTH` (and default `kernel.perf_event_max_stack`).
pub const DEFAULT_MAX_FRAMES: usize = 127;

/// The maps of the sampled process, as the unwinder needs them.
pub trait AddressSpace {
    /// The user-space map containing `addr` at the time of the sample.
    fn find_map(&mut self, addr: u64) -> Option<Map>;
    /// The DSO behind a map.
    fn dso(&self, id: DsoId) -> &Dso;
    /// The lowest start of the maps of `dso` (perf's base address search).
    fn lowest_start(&mut self, dso: DsoId) -> Option<u64>;
}

/// A thread of a [`Machine`], resolved with [`Machine::resolve`] (user
/// cpumode). Pass the sample's pid/tid: the thread then already exists and
/// the lookups do not change the machine.
pub struct ThreadSpace<'a> {
    machine: &'a mut Machine,
    pid: i32,
    tid: i32,
}

impl<'a> ThreadSpace<'a> {
    /// The address space of thread `tid` of process `pid`.
    pub fn new(machine: &'a mut Machine, pid: i32, tid: i32) -> Self {
        ThreadSpace { machine, pid, tid }
    }
}

impl AddressSpace for ThreadSpace<'_> {
    fn find_map(&mut self, addr: u64) -> Option<Map> {
        self.machine
            .resolve(self.pid, self.tid, misc::USER, addr)
            .map
    }
    fn dso(&self, id: DsoId) -> &Dso {
        self.machine.dsos.get(id)
    }
    fn lowest_start(&mut self, dso: DsoId) -> Option<u64> {
        self.machine.lowest_map_start(self.pid, self.tid, dso)
    }
}

/// A plain [`Maps`] + [`Dsos`] pair (for callers that hold them directly).
pub struct MapsSpace<'a> {
    pub maps: &'a Maps,
    pub dsos: &'a Dsos,
}

impl AddressSpace for MapsSpace<'_> {
    fn find_map(&mut self, addr: u64) -> Option<Map> {
        self.maps.find(addr).copied()
    }
    fn dso(&self, id: DsoId) -> &Dso {
        self.dsos.get(id)
    }
    fn lowest_start(&mut self, dso: DsoId) -> Option<u64> {
        self.maps.lowest_start(dso)
    }
}

/// Why unwinding of a sample ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StopReason {
    /// The root of the stack was reached (the CFI marks the return address
    /// undefined, as in `_start`).
    Complete,
    /// A read fell outside the stack copy: the recorded stack was too small
    /// (`--call-graph dwarf,SIZE`) or empty. The result is truncated.
    StackExhausted,
    /// [`DwarfUnwinder::max_frames`] addresses were produced.
    MaxFrames,
    /// The pc is in no map of the process.
    Unmapped,
    /// The pc's map has no readable binary or no unwind information
    /// (anonymous/JIT memory, a missing or mismatching file).
    NoUnwindInfo,
    /// The unwinder gave up (the CFI led nowhere, a null return address,
    /// a loop).
    Error,
    /// Not unwound: no user registers (ABI 0), a 32-bit ABI, or the ip/sp
    /// registers missing from the mask.
    NoRegisters,
    /// Not unwound: the stack copy is empty (`dyn_size` 0, e.g. during
    /// `execve`); perf then shows no user frames either.
    NoStack,
}

/// The outcome for one sample.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct UnwindResult {
    /// User-space addresses, callee first: the sample ip, then each caller's
    /// return address − 1 (perf's `unwind__get_entries`). Empty when the
    /// registers are unusable or the stack copy is empty.
    pub frames: Vec<u64>,
    /// True when the stack copy ran out before the root of the stack
    /// ([`StopReason::StackExhausted`]).
    pub truncated: bool,
    /// Why unwinding ended (`None` only for [`UnwindResult::default`]).
    pub stop: Option<StopReason>,
}

/// Counters over all samples given to [`DwarfUnwinder::unwind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UnwindStats {
    /// Samples seen.
    pub samples: u64,
    /// Reached the root of the stack.
    pub complete: u64,
    /// The stack copy ran out first.
    pub truncated: u64,
    /// Not unwound at all (no/32-bit registers, empty stack copy).
    pub failed: u64,
    /// Stopped in memory without unwind info, unmapped code, on an unwinder
    /// error or at the frame limit.
    pub stopped: u64,
    /// Stack records with `dyn_size` larger than the copied bytes (clamped).
    pub bad_stack_size: u64,
    /// Samples with an empty stack copy (also counted in `failed`).
    pub empty_stack: u64,
}

impl fmt::Display for UnwindStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "dwarf unwinding: {} samples, {} complete, {} truncated (stack copy too small), \
             {} not unwound (no user registers or stack), {} stopped early",
            self.samples, self.complete, self.truncated, self.failed, self.stopped
        )
    }
}

/// Bytes of one unwind section: a range of the shared file bytes, or a
/// decompressed copy.
#[derive(Clone)]
pub struct SectionBytes(SectionRepr);

#[derive(Clone)]
enum SectionRepr {
    File(Arc<FileBytes>, Range<usize>),
    Owned(Arc<[u8]>),
}

impl Deref for SectionBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match &self.0 {
            SectionRepr::File(f, r) => f.get(r.clone()).unwrap_or(&[]),
            SectionRepr::Owned(v) => v,
        }
    }
}

/// The sections framehop asks for, and the PLT sections whose code
/// libunwind's `is_plt_entry` looks at.
const SECTIONS: [&[u8]; 8] = [
    b".eh_frame",
    b".eh_frame_hdr",
    b".debug_frame",
    b".text",
    b".got",
    b".plt",
    b".plt.sec",
    b".plt.got",
];

struct Section {
    name: &'static [u8],
    svma: Range<u64>,
    data: Option<SectionBytes>,
}

/// The unwind sections of one binary, loaded once.
struct BinaryUnwindInfo {
    sections: Vec<Section>,
}

impl BinaryUnwindInfo {
    /// A loaded section's address and bytes.
    fn section(&self, name: &[u8]) -> Option<(u64, SectionBytes)> {
        self.sections
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| Some((s.svma.start, s.data.clone()?)))
    }

    fn has(&self, name: &[u8]) -> bool {
        self.sections
            .iter()
            .any(|s| s.name == name && s.data.is_some())
    }
}

fn load_sections(bytes: Arc<FileBytes>, wanted: &[&'static [u8]]) -> Vec<Section> {
    let Ok(file) = object::File::parse(&**bytes) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for &name in wanted {
        let Ok(name_str) = std::str::from_utf8(name) else {
            continue;
        };
        let Some(sec) = file.section_by_name(name_str) else {
            continue;
        };
        let svma = sec.address()..sec.address().saturating_add(sec.size());
        let data = match sec.compressed_file_range() {
            Ok(r) if r.format == object::CompressionFormat::None => {
                let start = usize::try_from(r.offset).ok();
                let len = usize::try_from(r.uncompressed_size).ok();
                match (start, len) {
                    (Some(s), Some(l)) if s.checked_add(l).is_some_and(|e| e <= bytes.len()) => {
                        Some(SectionBytes(SectionRepr::File(bytes.clone(), s..s + l)))
                    }
                    _ => None,
                }
            }
            Ok(_) => sec
                .uncompressed_data()
                .ok()
                .map(|d| SectionBytes(SectionRepr::Owned(Arc::from(&*d)))),
            Err(_) => None,
        };
        // NOBITS sections (a stripped debug file's copies) have no file data.
        let data = data.filter(|d| !d.is_empty());
        out.push(Section { name, svma, data });
    }
    out
}

/// framehop's view of one binary's sections (ELF: base SVMA 0).
struct ModuleSections(Arc<BinaryUnwindInfo>);

impl ModuleSectionInfo<SectionBytes> for ModuleSections {
    fn base_svma(&self) -> u64 {
        0
    }
    fn section_svma_range(&mut self, name: &[u8]) -> Option<Range<u64>> {
        self.0
            .sections
            .iter()
            .find(|s| s.name == name)
            .map(|s| s.svma.clone())
    }
    fn section_data(&mut self, name: &[u8]) -> Option<SectionBytes> {
        self.0
            .sections
            .iter()
            .find(|s| s.name == name)
            .and_then(|s| s.data.clone())
    }
}

/// One map known to a process's framehop unwinder.
struct Entry {
    map: Map,
    /// The unwind sections and bias (AVMA - SVMA) of the framehop module
    /// added for it; `None` when no module could be made.
    module: Option<ModuleInfo>,
}

/// What the unwind loop needs of a module besides framehop's view.
#[derive(Clone)]
struct ModuleInfo {
    info: Arc<BinaryUnwindInfo>,
    bias: u64,
    dso: DsoId,
    /// perf's `elf_base_address` of the binary and the end of its image.
    elf_base: u64,
    image_end: u64,
}

/// Where perf 6.1 looks for a module's `.eh_frame_hdr` table.
///
/// perf's `find_proc_info` takes the module's base address as the lowest
/// start of any map of the same DSO in the thread, minus the ELF's base.
/// perf keeps the maps of a process from before its exec, so a program
/// started by a shell that had the same library (ld.so, libc) at a lower
/// address gets the shell's base: libunwind then reads the table there.
#[derive(Clone, Copy, PartialEq, Eq)]
enum TableBase {
    /// The module's own load address.
    Right,
    /// Another load address, holding the same file's bytes: no FDE covers
    /// the pc (`-UNW_ENOINFO`), so libunwind guesses from rbp.
    Misplaced,
    /// Another load address with nothing of this file mapped: the read
    /// fails and so does the unwinding.
    Unreadable,
}

impl TableBase {
    fn of(module: &ModuleInfo, space: &mut dyn AddressSpace) -> TableBase {
        let Some(lowest) = space.lowest_start(module.dso) else {
            return TableBase::Right;
        };
        let base = lowest.wrapping_sub(module.elf_base);
        // Only a base of another mapping of the whole file is modelled; a
        // base a few pages off (a missing first segment) reads the table
        // from inside the same image, with unpredictable results.
        if base.abs_diff(module.bias) < module.image_end {
            return TableBase::Right;
        }
        let (Some((hdr_svma, hdr)), Some((eh_svma, eh))) = (
            module.info.section(b".eh_frame_hdr"),
            module.info.section(b".eh_frame"),
        ) else {
            return TableBase::Right;
        };
        // libunwind reads the search table and then an FDE there: both
        // sections must lie in maps of the file (what is left of them).
        let ends = [
            hdr_svma,
            hdr_svma + (hdr.len() as u64).saturating_sub(1),
            eh_svma,
            eh_svma + (eh.len() as u64).saturating_sub(1),
        ];
        let readable = ends.iter().all(|&svma| {
            space
                .find_map(base.wrapping_add(svma))
                .is_some_and(|m| m.dso == module.dso)
        });
        if readable {
            TableBase::Misplaced
        } else {
            TableBase::Unreadable
        }
    }
}

/// Per-process module list.
#[derive(Default)]
struct Process {
    unwinder: UnwinderX86_64<SectionBytes>,
    entries: BTreeMap<u64, Entry>,
}

/// Unwinds `--call-graph dwarf` samples; see the module docs.
pub struct DwarfUnwinder {
    cache: CacheX86_64,
    processes: HashMap<u32, Process>,
    binaries: HashMap<BinaryId, Option<Arc<BinaryUnwindInfo>>>,
    /// Per (binary, address): what of its CFI framehop does not model
    /// (see [`Unmodelled`]).
    unmodelled: HashMap<(usize, u64), Unmodelled>,
    stats: UnwindStats,
    /// Most addresses returned per sample, the ip included (perf's
    /// `max_stack`, default [`DEFAULT_MAX_FRAMES`]).
    pub max_frames: usize,
}

impl Default for DwarfUnwinder {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for DwarfUnwinder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DwarfUnwinder")
            .field("processes", &self.processes.len())
            .field("binaries", &self.binaries.len())
            .field("stats", &self.stats)
            .field("max_frames", &self.max_frames)
            .finish()
    }
}

/// The value of perf register `idx` in a `sample_regs_user` dump.
pub fn reg_value(regs: &Regs<'_>, idx: u32) -> Option<u64> {
    if idx >= 64 || regs.mask & (1u64 << idx) == 0 {
        return None;
    }
    let pos = (regs.mask & ((1u64 << idx) - 1)).count_ones() as usize;
    regs.values.get(pos)
}

impl DwarfUnwinder {
    /// An unwinder with empty caches.
    pub fn new() -> Self {
        DwarfUnwinder {
            cache: CacheX86_64::new(),
            processes: HashMap::default(),
            binaries: HashMap::default(),
            unmodelled: HashMap::default(),
            stats: UnwindStats::default(),
            max_frames: DEFAULT_MAX_FRAMES,
        }
    }

    /// Counters so far.
    pub fn stats(&self) -> UnwindStats {
        self.stats
    }

    /// Forgets the module list of process `pid` (e.g. after its EXIT); it is
    /// rebuilt on demand if samples of it still come.
    pub fn forget_process(&mut self, pid: u32) {
        self.processes.remove(&pid);
    }

    /// Unwinds one sample of process `pid`: returns user-space addresses, the
    /// first being the sample ip, like perf's `unwind__get_entries`. Never
    /// panics on bad input; see [`UnwindResult`] and [`UnwindStats`].
    pub fn unwind(
        &mut self,
        pid: u32,
        regs: &Regs<'_>,
        stack: &StackUser<'_>,
        space: &mut dyn AddressSpace,
        symbolizer: &mut Symbolizer,
    ) -> UnwindResult {
        self.stats.samples += 1;
        let r = self.unwind_inner(pid, regs, stack, space, symbolizer);
        match r.stop {
            Some(StopReason::Complete) => self.stats.complete += 1,
            Some(StopReason::StackExhausted) => self.stats.truncated += 1,
            Some(StopReason::NoRegisters | StopReason::NoStack) | None => self.stats.failed += 1,
            Some(_) => self.stats.stopped += 1,
        }
        r
    }

    fn unwind_inner(
        &mut self,
        pid: u32,
        regs: &Regs<'_>,
        stack: &StackUser<'_>,
        space: &mut dyn AddressSpace,
        symbolizer: &mut Symbolizer,
    ) -> UnwindResult {
        let fail = |stop| UnwindResult {
            frames: Vec::new(),
            truncated: false,
            stop: Some(stop),
        };
        if regs.abi != ABI_64 {
            return fail(StopReason::NoRegisters);
        }
        let (Some(ip), Some(sp)) = (
            reg_value(regs, PERF_REG_X86_IP),
            reg_value(regs, PERF_REG_X86_SP),
        ) else {
            return fail(StopReason::NoRegisters);
        };
        let bp = reg_value(regs, PERF_REG_X86_BP).unwrap_or(0);

        // The readable part of the stack copy.
        let have = stack.data.len() as u64;
        if stack.dyn_size > have {
            self.stats.bad_stack_size += 1;
        }
        let valid = stack.dyn_size.min(have) as usize;
        let data = &stack.data[..valid];
        if data.is_empty() {
            // perf's thread__resolve_callchain_unwind: "Bail out if nothing
            // was captured" (dyn_size 0): no user frames at all.
            self.stats.empty_stack += 1;
            return fail(StopReason::NoStack);
        }
        let mut read_stack = |addr: u64| -> Result<u64, ()> {
            let off = addr.checked_sub(sp).ok_or(())?;
            let off = usize::try_from(off).map_err(|_| ())?;
            let end = off.checked_add(8).ok_or(())?;
            // perf's access_mem (unwind-libunwind-local.c) serves a word
            // from the stack copy only if `addr + 8 < sp + dyn_size`: the
            // copy's last word is never read (the read then goes to the
            // [stack] map's "file" and fails).
            if end >= data.len() {
                return Err(());
            }
            let b = data.get(off..end).ok_or(())?;
            let mut w = [0u8; 8];
            w.copy_from_slice(b);
            Ok(u64::from_le_bytes(w))
        };

        let mut frames = vec![ip];
        // Per loaded image (a file mapped twice has two).
        let mut table_bases: Vec<((DsoId, u64), TableBase)> = Vec::new();
        let max = self.max_frames.max(1);
        let mut uregs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut addr = FrameAddress::from_instruction_pointer(ip);
        let mut rbp_lost = false;
        // The frames stepped so far (callee first): their unwind info, the
        // pc's address in it and their CFA, for registers framehop does not
        // track (see `restored_register`).
        let mut stepped: Vec<(Arc<BinaryUnwindInfo>, u64, u64)> = Vec::new();
        let stop = loop {
            if frames.len() >= max {
                break StopReason::MaxFrames;
            }
            let pc = addr.address();
            let module = match self.ensure_module(pid, pc, space, symbolizer) {
                Ok(m) => m,
                Err(stop) => break stop,
            };
            // perf's libunwind finds the FDE through `.eh_frame_hdr`; where
            // that table has none for the pc, libunwind does not use the
            // CFI at all but guesses a frame from rbp (see frame_chain).
            let lookup = addr.address_for_lookup().wrapping_sub(module.bias);
            let image = (module.dso, module.bias);
            let table_base = match table_bases.iter().find(|(i, _)| *i == image) {
                Some(&(_, b)) => b,
                None => {
                    let b = TableBase::of(&module, space);
                    table_bases.push((image, b));
                    b
                }
            };
            if table_base == TableBase::Unreadable {
                break StopReason::NoUnwindInfo;
            }
            if without_libunwind_tables(&module.info) {
                break StopReason::NoUnwindInfo;
            }
            if table_base == TableBase::Misplaced
                || hdr_has_fde(&module.info, lookup) == Some(false)
            {
                // perf's access_mem takes a word outside the stack copy
                // from the file of the map holding it (access_dso_mem);
                // where that map has no file (the stack itself, the heap),
                // the failed read still counts as a success with 0
                // (access_dso_mem returns 1, and libunwind fails only on
                // negative values). Outside every map the read fails.
                let mut read_guess = |addr: u64| {
                    read_stack(addr).or_else(|()| match space.find_map(addr) {
                        Some(m) if m.identity => Ok(0),
                        _ => Err(()),
                    })
                };
                let step = if is_plt_entry(&module.info, pc.wrapping_sub(module.bias)) {
                    // libunwind: "Like regular frame, CFA = RSP+8, RA =
                    // [CFA-8], no regs saved."
                    let sp = uregs.sp();
                    read_guess(sp)
                        .ok()
                        .inspect(|_| uregs.set_sp(sp.wrapping_add(8)))
                } else {
                    frame_chain(&mut uregs, &mut read_guess)
                };
                match step {
                    Some(ra) => {
                        frames.push(ra.wrapping_sub(1));
                        match FrameAddress::from_return_address(ra) {
                            Some(next) => {
                                addr = next;
                                continue;
                            }
                            None => break StopReason::Complete,
                        }
                    }
                    None => break StopReason::NoUnwindInfo,
                }
            }
            // CFI that framehop does not model, stepped by the CFI row
            // here: a return address held in a register (glibc's __vfork
            // keeps it in rdi), known in the first frame only, where every
            // register is; a CFA given by an expression (OpenSSL's
            // assembly), which libunwind evaluates.
            let first = frames.len() == 1;
            let key = (Arc::as_ptr(&module.info) as usize, lookup);
            let unmodelled = *self
                .unmodelled
                .entry(key)
                .or_insert_with(|| Unmodelled::at(&module.info, lookup));
            // libunwind restores rbp from where the CFI says; a read below
            // the stack copy fails, and so does the first step that needs
            // that rbp.
            if rbp_lost && unmodelled.cfa_from_rbp {
                break StopReason::Error;
            }
            rbp_lost = (rbp_lost && !unmodelled.rbp_saved) || (first && unmodelled.rbp_below_sp);
            if (first && unmodelled.ra_in_register)
                || unmodelled.cfa_from_other
                || unmodelled.cfa_expression
            {
                let (sp, bp) = (uregs.sp(), uregs.bp());
                // A CFA on another register (ld.so's resolver keeps it in
                // rbx): libunwind knows that register as the callees' CFI
                // restored it.
                let other = match cfi_row(&module.info, lookup).map(|(row, _)| row.cfa().clone()) {
                    Some(gimli::CfaRule::RegisterAndOffset { register, .. })
                        if !first
                            && register != gimli::X86_64::RSP
                            && register != gimli::X86_64::RBP =>
                    {
                        restored_register(register, &stepped, regs, &mut read_stack)
                            .map(|v| (register, v))
                    }
                    _ => None,
                };
                let known = |r: gimli::Register| {
                    if first {
                        sampled_register(regs, r)
                    } else if r == gimli::X86_64::RA {
                        // The pc (a PLT's CFA depends on it).
                        Some(pc)
                    } else if r == gimli::X86_64::RSP {
                        Some(sp)
                    } else if r == gimli::X86_64::RBP {
                        Some(bp)
                    } else {
                        other.filter(|(o, _)| *o == r).map(|(_, v)| v)
                    }
                };
                // A read past the stack copy ends the chain as truncated
                // (perf's closing -1 frame), like framehop's
                // CouldNotReadStack below.
                let mut read_failed = false;
                let mut read_tracked = |a: u64| {
                    let r = read_stack(a);
                    read_failed |= r.is_err();
                    r
                };
                let Some((ra, sp, bp)) = cfi_step(&module.info, lookup, &known, &mut read_tracked)
                else {
                    break if read_failed {
                        StopReason::StackExhausted
                    } else {
                        StopReason::Error
                    };
                };
                stepped.push((module.info.clone(), lookup, sp));
                uregs.set_sp(sp);
                uregs.set_bp(bp);
                match FrameAddress::from_return_address(ra) {
                    Some(next) => {
                        frames.push(ra - 1);
                        addr = next;
                        continue;
                    }
                    None => break StopReason::Complete,
                }
            }
            let Some(process) = self.processes.get(&pid) else {
                break StopReason::Error;
            };
            // framehop ends the chain both where the CFI leaves the return
            // address undefined (`_start`, `clone3`: no read) and where the
            // return address it reads is 0 (its last read). libunwind
            // takes the latter as a step to pc 0, which perf shows as
            // `0 - 1`.
            let mut last_read_zero = false;
            let mut read_tracked = |a: u64| {
                let r = read_stack(a);
                last_read_zero = r == Ok(0);
                r
            };
            match process.unwinder.unwind_frame(
                addr,
                &mut uregs,
                &mut self.cache,
                &mut read_tracked,
            ) {
                Ok(Some(ra)) => match FrameAddress::from_return_address(ra) {
                    Some(next) => {
                        frames.push(ra - 1);
                        stepped.push((module.info.clone(), lookup, uregs.sp()));
                        addr = next;
                    }
                    None => break StopReason::Complete,
                },
                Ok(None) if last_read_zero => {
                    frames.push(u64::MAX);
                    break StopReason::Complete;
                }
                Ok(None) => break StopReason::Complete,
                Err(framehop::Error::CouldNotReadStack(_)) => break StopReason::StackExhausted,
                Err(_) => break StopReason::Error,
            }
        };
        UnwindResult {
            frames,
            truncated: stop == StopReason::StackExhausted,
            stop: Some(stop),
        }
    }

    /// Makes sure process `pid`'s framehop unwinder has the module of the map
    /// containing `pc`, as the process's maps are now.
    fn ensure_module(
        &mut self,
        pid: u32,
        pc: u64,
        space: &mut dyn AddressSpace,
        symbolizer: &mut Symbolizer,
    ) -> Result<ModuleInfo, StopReason> {
        let map = space.find_map(pc).ok_or(StopReason::Unmapped)?;
        let process = self.processes.entry(pid).or_default();
        if let Some((_, e)) = process.entries.range(..=pc).next_back() {
            if e.map == map {
                return e.module.clone().ok_or(StopReason::NoUnwindInfo);
            }
        }
        // The process's maps changed here: drop what the new map covers.
        let stale: Vec<u64> = process
            .entries
            .range(..map.end.max(map.start.saturating_add(1)))
            .filter(|(_, e)| e.map.end > map.start || e.map.start >= map.start)
            .map(|(&k, _)| k)
            .collect();
        for k in stale {
            if process
                .entries
                .remove(&k)
                .is_some_and(|e| e.module.is_some())
            {
                process.unwinder.remove_module(k);
            }
        }
        let module = module_for(&mut self.binaries, &map, pc, space, symbolizer);
        let process = self.processes.entry(pid).or_default();
        let module = module.map(|(m, info)| {
            process.unwinder.add_module(m);
            info
        });
        process.entries.insert(
            map.start,
            Entry {
                map,
                module: module.clone(),
            },
        );
        module.ok_or(StopReason::NoUnwindInfo)
    }
}

/// Builds the framehop module of `map` (None without a usable binary).
fn module_for(
    binaries: &mut HashMap<BinaryId, Option<Arc<BinaryUnwindInfo>>>,
    map: &Map,
    pc: u64,
    space: &dyn AddressSpace,
    symbolizer: &mut Symbolizer,
) -> Option<(Module<SectionBytes>, ModuleInfo)> {
    if map.identity || map.end <= map.start {
        return None;
    }
    let dso = space.dso(map.dso);
    if !matches!(dso.kind, DsoKind::User | DsoKind::Vdso) {
        return None;
    }
    let bin = symbolizer.binary(&dso.long_name, dso.build_id.as_deref())?;
    let info = binaries
        .entry(bin)
        .or_insert_with(|| load_binary(bin, symbolizer).map(Arc::new))
        .clone()?;
    // The bias from an address inside the map's code: the map's first page
    // can belong to the file range of the previous PT_LOAD segment (the map
    // start is page-aligned down; lld links text at offset + 0x1000), whose
    // offset-to-vaddr delta differs.
    let svma = symbolizer.to_elf_address(bin, map.start, map.pgoff, pc);
    let bias = pc.wrapping_sub(svma);
    let (elf_base, image_end) = symbolizer.load_layout(bin).unwrap_or((0, 0));
    let module = Module::new(
        dso.long_name.clone(),
        map.start..map.end,
        bias,
        ModuleSections(info.clone()),
    );
    Some((
        module,
        ModuleInfo {
            info,
            bias,
            dso: map.dso,
            elf_base,
            image_end,
        },
    ))
}

/// Whether perf's libunwind finds no unwind table in a binary at all: it
/// reads `.eh_frame` only through the `.eh_frame_hdr` search table, which
/// a static executable may lack, and otherwise only `.debug_frame`. perf's
/// `find_proc_info` then fails with `-EINVAL`, which (unlike a table
/// without the FDE, `-UNW_ENOINFO`) ends the unwinding: no rbp guess.
fn without_libunwind_tables(info: &BinaryUnwindInfo) -> bool {
    !info.has(b".eh_frame_hdr") && !info.has(b".debug_frame")
}

/// Whether the `.eh_frame_hdr` search table of a binary has an FDE covering
/// `svma`, looked up as libunwind's `dwarf_search_unwind_table` does (the
/// last table entry at or below the address, then the FDE's own range).
/// `None` when the binary has no usable `.eh_frame_hdr` table (libunwind
/// then searches `.debug_frame`; framehop's answer is kept).
fn hdr_has_fde(info: &BinaryUnwindInfo, svma: u64) -> Option<bool> {
    use gimli::UnwindSection;
    let section = |name: &[u8]| info.section(name);
    let (hdr_svma, hdr) = section(b".eh_frame_hdr")?;
    let (eh_svma, eh) = section(b".eh_frame")?;
    let mut bases = gimli::BaseAddresses::default()
        .set_eh_frame_hdr(hdr_svma)
        .set_eh_frame(eh_svma);
    if let Some((text_svma, _)) = section(b".text") {
        bases = bases.set_text(text_svma);
    }
    if let Some((got_svma, _)) = section(b".got") {
        bases = bases.set_got(got_svma);
    }
    let parsed = gimli::EhFrameHdr::new(&hdr, gimli::LittleEndian)
        .parse(&bases, 8)
        .ok()?;
    let table = parsed.table()?;
    let mut eh_frame = gimli::EhFrame::new(&eh, gimli::LittleEndian);
    eh_frame.set_address_size(8);
    match table.fde_for_address(&eh_frame, &bases, svma, gimli::EhFrame::cie_from_offset) {
        Ok(_) => Some(true),
        Err(gimli::Error::NoUnwindInfoForAddress) => Some(false),
        Err(_) => None,
    }
}

/// The CFI row at `svma` (from `.eh_frame`), with the bytes of its CFA
/// expression when the CFA is given by one.
fn cfi_row(
    info: &BinaryUnwindInfo,
    svma: u64,
) -> Option<(gimli::UnwindTableRow<usize>, Option<Vec<u8>>)> {
    use gimli::UnwindSection;
    let section = |name: &[u8]| info.section(name);
    let (eh_svma, eh) = section(b".eh_frame")?;
    let mut bases = gimli::BaseAddresses::default().set_eh_frame(eh_svma);
    if let Some((text_svma, _)) = section(b".text") {
        bases = bases.set_text(text_svma);
    }
    let mut eh_frame = gimli::EhFrame::new(&eh, gimli::LittleEndian);
    eh_frame.set_address_size(8);
    // The search table when there is one: a scan of `.eh_frame` costs a
    // parse of every FDE before the one wanted.
    let hdr_section = section(b".eh_frame_hdr");
    let hdr = hdr_section.as_ref().and_then(|(hdr_svma, hdr)| {
        let bases = bases.clone().set_eh_frame_hdr(*hdr_svma);
        let parsed = gimli::EhFrameHdr::new(hdr, gimli::LittleEndian)
            .parse(&bases, 8)
            .ok()?;
        let table = parsed.table()?;
        table
            .fde_for_address(&eh_frame, &bases, svma, gimli::EhFrame::cie_from_offset)
            .ok()
    });
    let fde = match hdr {
        Some(fde) => fde,
        None => eh_frame
            .fde_for_address(&bases, svma, gimli::EhFrame::cie_from_offset)
            .ok()?,
    };
    let mut ctx = gimli::UnwindContext::new();
    let row = fde
        .unwind_info_for_address(&eh_frame, &bases, &mut ctx, svma)
        .ok()?
        .clone();
    let expression = match row.cfa() {
        gimli::CfaRule::Expression(e) => Some(e.get(&eh_frame).ok()?.0.slice().to_vec()),
        gimli::CfaRule::RegisterAndOffset { .. } => None,
    };
    Some((row, expression))
}

/// Evaluates a CFA expression (`DW_CFA_def_cfa_expression`), reading
/// `reg` for registers and `read_stack` for memory, as libunwind does.
fn evaluate_cfa(
    bytes: &[u8],
    reg: &dyn Fn(gimli::Register) -> Option<u64>,
    read_stack: &mut dyn FnMut(u64) -> Result<u64, ()>,
) -> Option<u64> {
    let encoding = gimli::Encoding {
        address_size: 8,
        format: gimli::Format::Dwarf32,
        version: 4,
    };
    let expression = gimli::Expression(gimli::EndianSlice::new(bytes, gimli::LittleEndian));
    let mut eval = expression.evaluation(encoding);
    // A branch back in a corrupt expression must not hang the report.
    eval.set_max_iterations(1000);
    let mut step = eval.evaluate().ok()?;
    loop {
        step = match step {
            gimli::EvaluationResult::Complete => break,
            gimli::EvaluationResult::RequiresRegister { register, .. } => eval
                .resume_with_register(gimli::Value::Generic(reg(register)?))
                .ok()?,
            gimli::EvaluationResult::RequiresMemory {
                address, size: 8, ..
            } => eval
                .resume_with_memory(gimli::Value::Generic(read_stack(address).ok()?))
                .ok()?,
            _ => return None,
        };
    }
    match eval.result().first()?.location {
        gimli::Location::Address { address } => Some(address),
        _ => None,
    }
}

/// What of the CFI at an address framehop does not model.
#[derive(Clone, Copy, Debug, Default)]
struct Unmodelled {
    /// The return address is kept in a register.
    ra_in_register: bool,
    /// The CFA is given by a DWARF expression.
    cfa_expression: bool,
    /// The CFA is based on a register other than rsp and rbp (ld.so's
    /// `_dl_runtime_resolve` keeps it in rbx while it realigns rsp).
    cfa_from_other: bool,
    /// The CFA is rbp-based.
    cfa_from_rbp: bool,
    /// rbp is restored from this frame's stack.
    rbp_saved: bool,
    /// ... from below the sp (after an epilogue's `pop %rbp`, where the
    /// CFI still names its slot): not in perf's stack copy.
    rbp_below_sp: bool,
}

impl Unmodelled {
    fn at(info: &BinaryUnwindInfo, svma: u64) -> Self {
        cfi_row(info, svma).map_or_else(Unmodelled::default, |(row, expression)| {
            let rbp_offset = match row.register(gimli::X86_64::RBP) {
                gimli::RegisterRule::Offset(o) => Some(o),
                _ => None,
            };
            let (cfa_register, cfa_offset) = match row.cfa() {
                gimli::CfaRule::RegisterAndOffset { register, offset } => {
                    (Some(*register), *offset)
                }
                gimli::CfaRule::Expression(_) => (None, 0),
            };
            Unmodelled {
                ra_in_register: matches!(
                    row.register(gimli::X86_64::RA),
                    gimli::RegisterRule::Register(_)
                ),
                cfa_expression: expression.is_some(),
                cfa_from_other: cfa_register
                    .is_some_and(|r| r != gimli::X86_64::RSP && r != gimli::X86_64::RBP),
                cfa_from_rbp: cfa_register == Some(gimli::X86_64::RBP),
                rbp_saved: rbp_offset.is_some(),
                rbp_below_sp: cfa_register == Some(gimli::X86_64::RSP)
                    && rbp_offset.is_some_and(|o| cfa_offset.saturating_add(o) < 0),
            }
        })
    }
}

/// One step by the CFI row at `svma`: (return address, caller's sp,
/// caller's rbp), as libunwind takes it. `reg` gives the registers known in
/// the frame (DWARF numbering): all of them in the first frame (perf's
/// sampled registers), sp and rbp above it.
fn cfi_step(
    info: &BinaryUnwindInfo,
    svma: u64,
    reg: &dyn Fn(gimli::Register) -> Option<u64>,
    read_stack: &mut dyn FnMut(u64) -> Result<u64, ()>,
) -> Option<(u64, u64, u64)> {
    use gimli::{CfaRule, RegisterRule};
    let (row, expression) = cfi_row(info, svma)?;
    let cfa = match row.cfa() {
        CfaRule::RegisterAndOffset { register, offset } => {
            reg(*register)?.checked_add_signed(*offset)?
        }
        CfaRule::Expression(_) => evaluate_cfa(expression.as_deref()?, reg, read_stack)?,
    };
    let mut value = |rule: &RegisterRule<usize>, own: Option<u64>| -> Option<u64> {
        match rule {
            RegisterRule::Undefined | RegisterRule::SameValue => own,
            RegisterRule::Offset(o) => read_stack(cfa.checked_add_signed(*o)?).ok(),
            RegisterRule::ValOffset(o) => cfa.checked_add_signed(*o),
            RegisterRule::Register(r) => reg(*r),
            _ => None,
        }
    };
    let ra = value(&row.register(gimli::X86_64::RA), None)?;
    let bp = value(&row.register(gimli::X86_64::RBP), reg(gimli::X86_64::RBP))?;
    Some((ra, cfa, bp))
}

/// The value register `r` has in the frame after `stepped` (callee first,
/// each with its unwind info, pc address and CFA), as libunwind restores
/// it: from the nearest callee whose CFI saved it (`r` at CFA + offset),
/// else as sampled. `None` where a callee's rule is not a stack slot.
fn restored_register(
    r: gimli::Register,
    stepped: &[(Arc<BinaryUnwindInfo>, u64, u64)],
    regs: &Regs<'_>,
    read_stack: &mut dyn FnMut(u64) -> Result<u64, ()>,
) -> Option<u64> {
    for (info, svma, cfa) in stepped.iter().rev() {
        let Some((row, _)) = cfi_row(info, *svma) else {
            continue;
        };
        match row.register(r) {
            gimli::RegisterRule::Undefined | gimli::RegisterRule::SameValue => continue,
            gimli::RegisterRule::Offset(o) => {
                return read_stack(cfa.checked_add_signed(o)?).ok();
            }
            _ => return None,
        }
    }
    sampled_register(regs, r)
}

/// A first frame's register by DWARF number, from perf's sampled ones.
fn sampled_register(regs: &Regs<'_>, r: gimli::Register) -> Option<u64> {
    // DWARF x86-64 register numbers → perf's sample_regs_user order (the
    // return address column, 16, is the ip).
    const PERF: [u32; 17] = [0, 3, 2, 1, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23, 8];
    reg_value(regs, *PERF.get(usize::from(r.0))?)
}

/// libunwind's `is_plt_entry`: the 16 code bytes at the pc look like a
/// lazy-binding PLT entry (`jmp *x(%rip)`, `push $n`, `jmp plt0`), the pc
/// being its first byte. Code is read from the binary's PLT and text
/// sections (perf's `access_dso_mem`).
fn is_plt_entry(info: &BinaryUnwindInfo, svma: u64) -> bool {
    let code = info.sections.iter().find_map(|s| {
        let end = svma.checked_add(16)?;
        if svma < s.svma.start || end > s.svma.end {
            return None;
        }
        let off = usize::try_from(svma - s.svma.start).ok()?;
        let data = s.data.as_ref()?;
        data.get(off..off.checked_add(16)?).map(<[u8]>::to_vec)
    });
    code.is_some_and(|c| c[0] == 0xff && c[1] == 0x25 && c[6] == 0x68 && c[11] == 0xe9)
}

/// libunwind 1.6's x86-64 `unw_step` when `dwarf_step` finds no unwind
/// info for the pc (perf's libunwind back end): not a PLT stub nor a signal
/// frame, so it guesses a frame from rbp. The guess is taken only if rbp is
/// non-zero, `[rbp]` is readable and `cfa <= rbp <= cfa + 0x4000` (the CFA
/// being the current sp); the return address is then `[rbp + 8]`, the
/// caller's rbp `[rbp]` and its CFA `cfa + 16` (libunwind does not take
/// `rbp + 16`). Returns the return address, or `None` where libunwind stops.
fn frame_chain(
    regs: &mut UnwindRegsX86_64,
    read_stack: &mut dyn FnMut(u64) -> Result<u64, ()>,
) -> Option<u64> {
    let (sp, rbp) = (regs.sp(), regs.bp());
    if rbp == 0 {
        return None;
    }
    let rbp1 = read_stack(rbp).ok()?;
    if rbp < sp || rbp - sp > 0x4000 {
        return None;
    }
    // A zero return address is still a successful step for libunwind (perf
    // then shows `0 - 1`); the caller ends there.
    let ra = read_stack(rbp.checked_add(8)?).ok()?;
    regs.set_sp(sp.wrapping_add(16));
    regs.set_bp(rbp1);
    Some(ra)
}

/// Loads the unwind sections of a binary opened by the symbolizer (its
/// bytes, shared: `[vdso]` has no file); takes `.debug_frame` from its
/// separate debug file when it has no CFI itself.
fn load_binary(bin: BinaryId, symbolizer: &Symbolizer) -> Option<BinaryUnwindInfo> {
    let bytes = Arc::new(symbolizer.binary_bytes(bin)?);
    let mut info = BinaryUnwindInfo {
        sections: load_sections(bytes, &SECTIONS),
    };
    if !info.has(b".eh_frame") && !info.has(b".debug_frame") {
        if let Some(dbg) = symbolizer.debug_file_bytes(bin) {
            let extra = load_sections(Arc::new(dbg), &[b".debug_frame"]);
            info.sections.retain(|s| s.name != b".debug_frame");
            info.sections.extend(extra);
        }
    }
    if !info.has(b".eh_frame") && !info.has(b".debug_frame") {
        return None;
    }
    Some(info)
}

impl crate::callchain::Unwinder for DwarfUnwinder {
    /// The user frames of `sample` ([`DwarfUnwinder::unwind`]); `None` when
    /// nothing could be unwound (no usable registers).
    fn unwind_user(
        &mut self,
        sample: &prec_format::Sample<'_>,
        pid: i32,
        tid: i32,
        machine: &mut Machine,
        symbolizer: &mut Symbolizer,
    ) -> Option<Vec<u64>> {
        let (regs, stack) = (sample.regs_user.as_ref()?, sample.stack_user.as_ref()?);
        let mut space = ThreadSpace::new(machine, pid, tid);
        let mut r = self.unwind(pid as u32, regs, stack, &mut space, symbolizer);
        // perf 6.1's libunwind back end, when the stack copy ends before the
        // next return address, still takes one step to a zero pc and
        // reports it as 0 - 1: perf report and script show a closing
        // `ffffffffffffffff [unknown]` frame on every truncated chain
        // (checked with bench/callgraph.sh: with it, ~98 % of the chains of
        // a 100k-sample recording are identical to perf script's, without
        // it ~13 %).
        if r.truncated && r.frames.len() < self.max_frames {
            r.frames.push(u64::MAX);
        }
        (!r.frames.is_empty()).then_some(r.frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symbolize::SymbolizerOptions;
    use prec_format::{Endian, U64Slice};

    fn regs(abi: u64, mask: u64, raw: &[u8]) -> Regs<'_> {
        Regs {
            abi,
            mask,
            values: U64Slice::new(raw, Endian::Little),
        }
    }

    #[test]
    fn reg_positions_follow_the_mask() {
        let raw: Vec<u8> = [10u64, 20, 30]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let r = regs(2, (1 << 6) | (1 << 7) | (1 << 8), &raw);
        assert_eq!(reg_value(&r, PERF_REG_X86_BP), Some(10));
        assert_eq!(reg_value(&r, PERF_REG_X86_SP), Some(20));
        assert_eq!(reg_value(&r, PERF_REG_X86_IP), Some(30));
        assert_eq!(reg_value(&r, 0), None);
        assert_eq!(reg_value(&r, 70), None);
    }

    #[test]
    fn bad_input_does_not_panic() {
        let mut u = DwarfUnwinder::new();
        let mut sym = Symbolizer::new(SymbolizerOptions::default());
        let maps = Maps::new();
        let dsos = Dsos::default();
        let mut space = MapsSpace {
            maps: &maps,
            dsos: &dsos,
        };
        let raw: Vec<u8> = [0u64, 0x7ff0, 0x401000]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let stack = StackUser {
            data: &[1, 2, 3],
            dyn_size: 1 << 40,
        };
        let r = u.unwind(1, &regs(0, 0, &[]), &stack, &mut space, &mut sym);
        assert_eq!(r.stop, Some(StopReason::NoRegisters));
        let r = u.unwind(1, &regs(2, 0x1c0, &raw[..8]), &stack, &mut space, &mut sym);
        assert_eq!(r.stop, Some(StopReason::NoRegisters));
        let r = u.unwind(1, &regs(2, 0x1c0, &raw), &stack, &mut space, &mut sym);
        assert_eq!(r.frames, vec![0x401000]);
        assert_eq!(r.stop, Some(StopReason::Unmapped));
        let s = u.stats();
        assert_eq!(
            (s.samples, s.failed, s.stopped, s.bad_stack_size),
            (3, 2, 1, 1)
        );
    }
}
