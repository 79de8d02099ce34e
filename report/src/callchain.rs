//! Sample callchains resolved to frames, like perf 6.1's
//! `thread__resolve_callchain` (`util/machine.c`).
//!
//! [`Callchains::resolve`] turns one sample into perf's *callchain cursor*:
//! the list of frames perf report builds its call graphs from and perf script
//! prints. The rules are perf's:
//!
//! * The kernel's `PERF_SAMPLE_CALLCHAIN` already starts with the sample ip
//!   (after a `PERF_CONTEXT_*` marker); nothing is added for it. A sample
//!   without callchain (and without DWARF unwinding) gives no frames: use
//!   [`Callchains::frame`] for the sample ip alone.
//! * `PERF_CONTEXT_KERNEL/USER/HV` markers set the cpumode of the entries
//!   after them (entries before any marker are user); markers are not frames.
//!   Any other marker (guest contexts, garbage) discards the whole chain, as
//!   perf does ("invalid callchain context").
//! * [`Order::Caller`] walks the chain from its end (outermost caller
//!   first), [`Order::Callee`] from the sample ip. `max_stack` counts real
//!   entries in walking order, so with caller order it keeps the outermost
//!   frames (perf's behavior).
//! * DWARF (`--call-graph dwarf`): when the attr has `PERF_SAMPLE_REGS_USER`
//!   and `PERF_SAMPLE_STACK_USER`, the sample carries registers and a
//!   non-empty stack copy, and an [`Unwinder`] is given, user frames come
//!   from it (user cpumode; the unwinder returns the sample's user ip first,
//!   callers as return address − 1, callee first). perf puts them *before*
//!   the sample's chain in caller order and *after* it in callee order; each
//!   part gets its own `max_stack`.
//! * Inline frames (perf's `append_inlines` from `unwind_entry`: perf 6.1
//!   expands DWARF-unwound user frames only, never the entries of the
//!   sample's own chain; verified with perf report/script on
//!   `callgraph-fp-g.data` and `callgraph-nofp-dwarf.data`): with
//!   [`ChainParams::inline`], an unwound frame whose address is in a user
//!   DSO with DWARF and has a symbol is replaced by the DWARF inline chain
//!   at that address (innermost first in callee order,
//!   outermost first in caller order). A chain entry whose function name
//!   equals the symbol's name *is* the symbol; any other name becomes a
//!   fake symbol with the function's range and [`ChainFrame::inlined`] set
//!   (shown as `name (inlined)`). Each such frame carries its DWARF
//!   `file:line` in [`ChainFrame::srcline`].
//!
//! Maps are looked up with [`Machine::resolve`] at the state of the sample,
//! symbols through the shared [`Resolver`] (each (DSO, address) symbolized
//! once) and inline chains are cached per (DSO, address), so resolving a
//! sample allocates nothing once its addresses have been seen, apart from
//! what the unwinder returns.
//!
//! ```no_run
//! # use prec_report::callchain::{Callchains, ChainParams, ChainFrame};
//! # fn f(file: &prec_format::PerfFile<'_>, sample: &prec_format::Sample<'_>, attr: &prec_format::Attr,
//! #      machine: &mut prec_report::tasks::Machine, resolver: &mut prec_report::aggregate::Resolver,
//! #      strings: &mut prec_report::aggregate::Strings) {
//! let mut cc = Callchains::new();
//! let params = ChainParams::default(); // callee order, 127 frames, inlines of unwound frames
//! let mut frames: Vec<ChainFrame> = Vec::new();
//! cc.resolve(machine, resolver, strings, attr, sample, &params, None, &mut frames);
//! for f in &frames {
//!     let name = f.sym.map(|s| strings.get(resolver.syms[s.0 as usize].name).to_string());
//!     let dso = f.map.map(|m| machine.dsos.get(m.dso).short_name.clone());
//!     println!("{:16x} {}+{:#x} ({})", f.ip, name.as_deref().unwrap_or("[unknown]"),
//!              f.sym_offset(resolver), dso.as_deref().unwrap_or("[unknown]"));
//! }
//! # }
//! ```

use rustc_hash::FxHashMap as HashMap;

use prec_format::attr::Attr;
use prec_format::constants::{callchain_context as ctx, misc, sample_type as st};
use prec_format::Sample;

use crate::aggregate::{Resolver, StrId, Strings, Sym, SymId};
use crate::maps::{DsoId, DsoKind, Map};
use crate::symbolize::Symbolizer;
use crate::tasks::{Machine, ThreadId};

/// perf's `PERF_MAX_STACK_DEPTH` (`--max-stack` default).
pub const DEFAULT_MAX_STACK: usize = 127;

/// Callchain order (`-g caller` / `-g callee`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Order {
    /// From the sample ip outwards (perf's `ORDER_CALLEE`).
    #[default]
    Callee,
    /// From the outermost caller inwards (perf's `ORDER_CALLER`).
    Caller,
}

/// How to walk callchains.
#[derive(Clone, Copy, Debug)]
pub struct ChainParams {
    pub order: Order,
    /// `--max-stack`.
    pub max_stack: usize,
    /// Expand inline frames of DWARF-unwound entries (perf's
    /// `symbol_conf.inline_name`, `--no-inline`); the sample's own chain
    /// is never expanded (perf 6.1).
    pub inline: bool,
}

impl Default for ChainParams {
    fn default() -> Self {
        ChainParams {
            order: Order::Callee,
            max_stack: DEFAULT_MAX_STACK,
            inline: true,
        }
    }
}

/// One frame of a resolved callchain (perf's `callchain_cursor_node`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainFrame {
    /// The address as recorded (runtime address).
    pub ip: u64,
    /// `PERF_RECORD_MISC_KERNEL/USER/HYPERVISOR` in effect for the entry.
    pub cpumode: u16,
    /// perf's level of the map lookup: `k` kernel maps, `.` user maps,
    /// `H` no lookup (hypervisor).
    pub level: u8,
    /// The map hit (its DSO is `map.dso`).
    pub map: Option<Map>,
    /// perf's `al->addr`: `map.map_ip(ip)`, or `ip` without a map.
    pub addr: u64,
    /// The symbol (for inline frames, the inlined function's fake symbol).
    pub sym: Option<SymId>,
    /// An inline frame whose function is not the symbol's (`(inlined)`).
    pub inlined: bool,
    /// `file:line` of an inline-expanded frame (DWARF); for other frames
    /// use [`Callchains::srcline`].
    pub srcline: Option<StrId>,
    /// Came from DWARF unwinding (perf's `unwind_entry`), not from the
    /// sample's callchain (`add_callchain_ip`: `--parent` looks only there).
    pub unwound: bool,
}

impl ChainFrame {
    /// Offset of `addr` in its symbol (0 without symbol).
    pub fn sym_offset(&self, resolver: &Resolver) -> u64 {
        self.sym.map_or(0, |s| {
            self.addr.wrapping_sub(resolver.syms[s.0 as usize].start)
        })
    }
}

/// Source of user frames for samples with `REGS_USER` + `STACK_USER`
/// (`--call-graph dwarf`). Returns the user addresses callee first (the
/// sample's user ip, then each caller's return address − 1), or `None` when
/// the sample cannot be unwound (then only the sample's own chain is used).
pub trait Unwinder {
    fn unwind_user(
        &mut self,
        sample: &Sample<'_>,
        pid: i32,
        tid: i32,
        machine: &mut Machine,
        symbolizer: &mut Symbolizer,
    ) -> Option<Vec<u64>>;
}

/// Adapts a plain `Fn(&Sample, pid) -> Option<Vec<u64>>` to [`Unwinder`].
pub struct FnUnwinder<F>(pub F);

impl<F: FnMut(&Sample<'_>, i32) -> Option<Vec<u64>>> Unwinder for FnUnwinder<F> {
    fn unwind_user(
        &mut self,
        sample: &Sample<'_>,
        pid: i32,
        _tid: i32,
        _machine: &mut Machine,
        _symbolizer: &mut Symbolizer,
    ) -> Option<Vec<u64>> {
        (self.0)(sample, pid)
    }
}

#[derive(Clone, Copy, Debug)]
struct InlineEntry {
    sym: SymId,
    inlined: bool,
    srcline: Option<StrId>,
}

/// Caches for resolving callchains: inline chains per (DSO, address), and
/// recently resolved frames (see [`Callchains::set_epoch`]).
#[derive(Default)]
pub struct Callchains {
    /// (dso, addr) → inline chain, innermost first; empty = no expansion.
    inlines: HashMap<(DsoId, u64), Box<[InlineEntry]>>,
    /// Fake inline symbols by (base symbol, name).
    inline_syms: HashMap<(SymId, StrId), SymId>,
    /// What recent (epoch, pid, tid, cpumode, ip)s resolved to, while the
    /// caller keeps epochs (see [`Callchains::set_epoch`]): direct-mapped
    /// by hash, so its memory stays fixed however many frames a file has.
    frames: Vec<Option<(FrameKey, ChainFrame, u32)>>,
    epoch: Option<u64>,
    /// Counts writes to [`Self::frames`]: each write's serial.
    serial: u32,
    /// Per frame of the last [`Self::resolve`], its [`FrameToken`].
    tokens: Vec<FrameToken>,
    /// The sample's callchain words, read once in the file's byte order.
    words: Vec<u64>,
}

/// Names the value of one frame of [`Callchains::resolve`]'s output: two
/// frames with the same token (other than [`FrameToken::NONE`]) are equal,
/// so a caller can keep what it derives from a frame by token (see
/// [`FrameToken::slot`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameToken(u64);

impl FrameToken {
    /// A frame that was not remembered (inline-expanded or DWARF-unwound
    /// frames, or no epoch set).
    pub const NONE: FrameToken = FrameToken(u64::MAX);

    /// Where to keep what is derived from the frame: tokens share
    /// [`FRAME_SLOTS`] slots, so a slot holds the latest token's.
    pub fn slot(self) -> Option<usize> {
        (self != Self::NONE).then_some((self.0 & 0xffff_ffff) as usize)
    }
}

/// Slots of the frame cache of [`Callchains`] (and of [`FrameToken::slot`]).
pub const FRAME_SLOTS: usize = 1 << 11;

/// ([`Callchains::set_epoch`]'s epoch, the machine's kernel epoch, pid,
/// tid, cpumode, ip).
type FrameKey = (u64, u32, i32, i32, u16, u64);

/// Whether the attr and sample allow DWARF unwinding
/// (perf's `thread__resolve_callchain_unwind` precondition).
pub fn can_unwind(attr: &Attr, sample: &Sample<'_>) -> bool {
    attr.sample_type & st::REGS_USER != 0
        && attr.sample_type & st::STACK_USER != 0
        && sample
            .regs_user
            .is_some_and(|r| r.abi != 0 && !r.values.is_empty())
        && sample.stack_user.is_some_and(|s| s.dyn_size != 0)
}

impl Callchains {
    pub fn new() -> Self {
        Self::default()
    }

    /// Resolves one address of thread `pid`/`tid` in `cpumode` to a frame,
    /// without inline expansion (e.g. the sample ip of a sample without
    /// callchain).
    #[allow(clippy::too_many_arguments)]
    pub fn frame(
        &mut self,
        machine: &mut Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        pid: i32,
        tid: i32,
        cpumode: u16,
        ip: u64,
    ) -> ChainFrame {
        self.remembered_frame(machine, resolver, strings, pid, tid, cpumode, ip)
            .0
    }

    /// [`Self::frame`] and its token.
    #[allow(clippy::too_many_arguments)]
    fn remembered_frame(
        &mut self,
        machine: &mut Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        pid: i32,
        tid: i32,
        cpumode: u16,
        ip: u64,
    ) -> (ChainFrame, FrameToken) {
        let Some(epoch) = self.epoch else {
            let f = Self::resolve_frame(machine, resolver, strings, pid, tid, cpumode, ip);
            return (f, FrameToken::NONE);
        };
        if let Some((f, token)) = self.cached_frame(machine.kernel_epoch, pid, tid, cpumode, ip) {
            return (*f, token);
        }
        let slot = Self::frame_slot(epoch, pid, tid, ip);
        if self.frames.is_empty() {
            self.frames.resize(FRAME_SLOTS, None);
        }
        let token = |serial: u32| FrameToken((serial as u64) << 32 | slot as u64);
        let f = Self::resolve_frame(machine, resolver, strings, pid, tid, cpumode, ip);
        // Resolving the first kernel frame can load the kernel's symbols
        // and move its map: that frame belongs to the new kernel epoch.
        let key = (epoch, machine.kernel_epoch, pid, tid, cpumode, ip);
        // After 2^32 writes a serial could name an old frame again: stop
        // giving tokens rather than give a wrong one.
        let Some(serial) = self.serial.checked_add(1) else {
            self.frames[slot] = Some((key, f, u32::MAX));
            return (f, FrameToken::NONE);
        };
        self.serial = serial;
        self.frames[slot] = Some((key, f, serial));
        (f, token(serial))
    }

    /// Where [`Self::frames`] keeps a frame.
    fn frame_slot(epoch: u64, pid: i32, tid: i32, ip: u64) -> usize {
        use std::hash::{BuildHasher, Hasher};
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        h.write_u64(ip);
        h.write_u64(epoch ^ (pid as u32 as u64) << 32 ^ tid as u32 as u64);
        (h.finish() >> 20) as usize % FRAME_SLOTS
    }

    /// The remembered frame of `ip`, if any, and its token. Deep chains
    /// repeat their outer frames in most samples; a map and symbol lookup
    /// per frame cost more than this one.
    fn cached_frame(
        &self,
        kernel_epoch: u32,
        pid: i32,
        tid: i32,
        cpumode: u16,
        ip: u64,
    ) -> Option<(&ChainFrame, FrameToken)> {
        let epoch = self.epoch?;
        let slot = Self::frame_slot(epoch, pid, tid, ip);
        match self.frames.get(slot) {
            Some(Some((k, f, serial))) if *k == (epoch, kernel_epoch, pid, tid, cpumode, ip) => {
                Some((f, FrameToken((*serial as u64) << 32 | slot as u64)))
            }
            _ => None,
        }
    }

    /// Lets [`Self::frame`] remember what addresses resolve to until
    /// `epoch` changes; the caller changes it whenever a COMM, FORK, EXIT
    /// or MMAP record may have changed what `pid`'s addresses resolve to.
    /// `None` (the default) resolves every frame afresh.
    pub fn set_epoch(&mut self, epoch: Option<u64>) {
        self.epoch = epoch;
    }

    /// The [`FrameToken`] of each frame of the last [`Self::resolve`].
    pub fn tokens(&self) -> &[FrameToken] {
        &self.tokens
    }

    #[allow(clippy::too_many_arguments)]
    fn resolve_frame(
        machine: &mut Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        pid: i32,
        tid: i32,
        cpumode: u16,
        ip: u64,
    ) -> ChainFrame {
        let loc = crate::aggregate::resolve_loading(machine, resolver, pid, tid, cpumode, ip);
        let sym = loc
            .map
            .as_ref()
            .and_then(|m| resolver.symbol(machine, strings, m, pid, ip, loc.addr));
        ChainFrame {
            ip,
            cpumode,
            level: loc.level,
            map: loc.map,
            addr: loc.addr,
            sym,
            inlined: false,
            srcline: None,
            unwound: false,
        }
    }

    /// Resolves `sample`'s callchain into `out` (cleared first), in
    /// `params.order`. See the module docs for the rules.
    #[allow(clippy::too_many_arguments)]
    pub fn resolve(
        &mut self,
        machine: &mut Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        attr: &Attr,
        sample: &Sample<'_>,
        params: &ChainParams,
        unwinder: Option<&mut dyn Unwinder>,
        out: &mut Vec<ChainFrame>,
    ) {
        out.clear();
        self.tokens.clear();
        let pid = sample.pid.map_or(-1, |p| p as i32);
        let tid = sample.tid.map_or(-1, |t| t as i32);
        let mut user: Option<Vec<u64>> = None;
        if let Some(u) = unwinder {
            if can_unwind(attr, sample) {
                user = u.unwind_user(sample, pid, tid, machine, &mut resolver.symbolizer);
            }
        }
        let mut c = Ctx {
            cc: self,
            machine,
            resolver,
            strings,
            pid,
            tid,
            params,
            out,
        };
        match params.order {
            Order::Callee => {
                if !c.sample_chain(sample) {
                    return;
                }
                if let Some(u) = &user {
                    for &ip in u.iter().take(params.max_stack) {
                        c.add(misc::USER, ip, true);
                    }
                }
            }
            Order::Caller => {
                if let Some(u) = &user {
                    let n = u.len().min(params.max_stack);
                    for &ip in u[..n].iter().rev() {
                        c.add(misc::USER, ip, true);
                    }
                }
                c.sample_chain(sample);
            }
        }
    }

    /// perf's srcline of a frame: the inline chain's `file:line` when the
    /// frame came from one, else the DWARF line of its address (`??:0` or
    /// `sym+off` fallbacks, like the `srcline` sort key).
    pub fn srcline(
        &mut self,
        machine: &Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        frame: &ChainFrame,
    ) -> StrId {
        if let Some(s) = frame.srcline {
            return s;
        }
        match &frame.map {
            Some(m) => resolver
                .srcline(machine, strings, m, frame.ip, frame.addr, frame.sym)
                .0
                .unwrap_or_else(|| strings.intern("??:0")),
            None => strings.intern("??:0"),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn inline_chain(
        &mut self,
        machine: &Machine,
        resolver: &mut Resolver,
        strings: &mut Strings,
        map: &Map,
        ip: u64,
        addr: u64,
        base: SymId,
    ) -> &[InlineEntry] {
        let key = (map.dso, addr);
        if !self.inlines.contains_key(&key) {
            let mut v = Vec::new();
            if machine.dsos.get(map.dso).kind == DsoKind::User {
                if let Some(bin) = resolver.binary(machine, map.dso) {
                    let elf = resolver
                        .symbolizer
                        .to_elf_address(bin, map.start, map.pgoff, ip);
                    let mut frames = resolver.symbolizer.inline_frames(bin, elf);
                    if frames.is_empty() {
                        // perf asks addr2line, which without a line for the
                        // address still names the function-like symbol
                        // before it (`FILE:?`): a local label inside a
                        // function becomes an inline frame of that name.
                        frames.extend(resolver.symbolizer.addr2line_function(bin, elf).map(
                            |(name, file)| crate::symbolize::Frame {
                                function: Some(name),
                                location: Some(crate::symbolize::SourceLocation {
                                    file: file.unwrap_or_else(|| "??".to_string()),
                                    line: 0,
                                    column: None,
                                }),
                            },
                        ));
                    }
                    let b = resolver.syms[base.0 as usize].clone();
                    let base_name = strings.get(b.name).to_string();
                    let outermost = frames.len().saturating_sub(1);
                    for (depth, f) in frames.into_iter().enumerate() {
                        // Code without a DWARF function (assembly: crti.S's
                        // _init) has a line but no name; binutils then
                        // names the outer function from the symbol table.
                        let fallback = if depth == outermost { &base_name } else { "??" };
                        let name = f.function.as_deref().unwrap_or(fallback);
                        let srcline = f.location.as_ref().map(|l| {
                            if resolver.full_source_path {
                                strings.intern(&format!("{}:{}", l.file, l.line))
                            } else {
                                strings.intern(&l.srcline())
                            }
                        });
                        let (sym, inlined) = if name == base_name {
                            (base, false)
                        } else {
                            let n = strings.intern(name);
                            let id = *self.inline_syms.entry((base, n)).or_insert_with(|| {
                                resolver.add_sym(Sym {
                                    name: n,
                                    start: b.start,
                                    end: b.end,
                                    inlined: true,
                                    object: false,
                                    base: Some(base),
                                })
                            });
                            (id, true)
                        };
                        v.push(InlineEntry {
                            sym,
                            inlined,
                            srcline,
                        });
                    }
                }
            }
            self.inlines.insert(key, v.into_boxed_slice());
        }
        &self.inlines[&key]
    }
}

struct Ctx<'a> {
    cc: &'a mut Callchains,
    machine: &'a mut Machine,
    resolver: &'a mut Resolver,
    strings: &'a mut Strings,
    pid: i32,
    tid: i32,
    params: &'a ChainParams,
    out: &'a mut Vec<ChainFrame>,
}

/// The cpumode a marker sets, `None` for an invalid one.
pub(crate) fn marker_mode(ip: u64) -> Option<u16> {
    match ip {
        ctx::HV => Some(misc::HYPERVISOR),
        ctx::KERNEL => Some(misc::KERNEL),
        ctx::USER => Some(misc::USER),
        _ => None,
    }
}

impl Ctx<'_> {
    /// perf's `add_callchain_ip` (or `unwind_entry` when `unwound`) for a
    /// real address.
    fn add(&mut self, cpumode: u16, ip: u64, unwound: bool) {
        if !unwound {
            let cached =
                self.cc
                    .cached_frame(self.machine.kernel_epoch, self.pid, self.tid, cpumode, ip);
            if let Some((f, token)) = cached {
                self.out.push(*f);
                self.cc.tokens.push(token);
                return;
            }
        }
        let (mut f, token) = self.cc.remembered_frame(
            self.machine,
            self.resolver,
            self.strings,
            self.pid,
            self.tid,
            cpumode,
            ip,
        );
        f.unwound = unwound;
        if self.params.inline && unwound {
            if let (Some(map), Some(sym)) = (f.map, f.sym) {
                let chain = self.cc.inline_chain(
                    self.machine,
                    self.resolver,
                    self.strings,
                    &map,
                    ip,
                    f.addr,
                    sym,
                );
                if !chain.is_empty() {
                    let mut push = |e: &InlineEntry| {
                        self.out.push(ChainFrame {
                            sym: Some(e.sym),
                            inlined: e.inlined,
                            srcline: e.srcline,
                            ..f
                        })
                    };
                    match self.params.order {
                        Order::Callee => chain.iter().for_each(&mut push),
                        Order::Caller => chain.iter().rev().for_each(&mut push),
                    }
                    let n = chain.len();
                    let tokens = &mut self.cc.tokens;
                    tokens.resize(tokens.len() + n, FrameToken::NONE);
                    return;
                }
            }
        }
        self.out.push(f);
        // The remembered frame is not unwound.
        self.cc
            .tokens
            .push(if unwound { FrameToken::NONE } else { token });
    }

    /// perf's `thread__resolve_callchain_sample` (no LBR). Returns false
    /// when an invalid marker discarded the chain.
    fn sample_chain(&mut self, sample: &Sample<'_>) -> bool {
        let Some(chain) = sample.callchain else {
            return true;
        };
        let mut words = std::mem::take(&mut self.cc.words);
        words.clear();
        words.extend(chain.iter());
        let ok = self.chain_words(&words);
        self.cc.words = words;
        ok
    }

    /// [`Self::sample_chain`] of the callchain `chain`.
    fn chain_words(&mut self, chain: &[u64]) -> bool {
        let nr = chain.len();
        let get = |i: usize| chain[i];
        let mut cpumode = misc::USER;
        // find_prev_cpumode: the nearest marker before index `ent`.
        let prev_mode = |ent: usize, cpumode: &mut u16| -> bool {
            for k in (0..ent).rev() {
                let ip = get(k);
                if ip >= ctx::MAX {
                    match marker_mode(ip) {
                        Some(m) => *cpumode = m,
                        None => return false,
                    }
                    break;
                }
            }
            true
        };
        let caller = self.params.order == Order::Caller;
        if caller && !prev_mode(nr, &mut cpumode) {
            self.out.clear();
            self.cc.tokens.clear();
            return false;
        }
        let mut n = 0;
        let mut i = 0;
        while i < nr && n < self.params.max_stack {
            let j = if caller { nr - i - 1 } else { i };
            i += 1;
            let ip = get(j);
            if ip >= ctx::MAX {
                let ok = if caller {
                    prev_mode(j, &mut cpumode)
                } else {
                    match marker_mode(ip) {
                        Some(m) => {
                            cpumode = m;
                            true
                        }
                        None => false,
                    }
                };
                if !ok {
                    self.out.clear();
                    self.cc.tokens.clear();
                    return false;
                }
                continue;
            }
            n += 1;
            self.add(cpumode, ip, false);
        }
        true
    }
}

/// The thread a sample belongs to (perf's `machine__findnew_thread`).
pub fn sample_thread(machine: &mut Machine, sample: &Sample<'_>) -> ThreadId {
    machine.findnew(
        sample.pid.map_or(-1, |p| p as i32),
        sample.tid.map_or(-1, |t| t as i32),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers() {
        assert_eq!(marker_mode(ctx::KERNEL), Some(misc::KERNEL));
        assert_eq!(marker_mode(ctx::USER), Some(misc::USER));
        assert_eq!(marker_mode(ctx::GUEST), None);
    }
}
