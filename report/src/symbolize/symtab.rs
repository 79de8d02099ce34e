//! Sorted, immutable symbol tables with perf's duplicate and end fix-ups.

use std::cell::OnceCell;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use super::FileBytes;

use crate::rbtree::{RbTree, NIL};

/// ELF-style symbol binding, as used by perf's `choose_best_symbol`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Binding {
    Local,
    Global,
    Weak,
}

/// One symbol of a table. `end` is exclusive (perf >= 5.x semantics).
#[derive(Debug)]
pub(crate) struct Sym {
    pub start: u64,
    pub end: u64,
    pub binding: Binding,
    /// An ELF STT_OBJECT (data) symbol.
    pub object: bool,
    pub name: SymName,
    /// Kernel module name for kallsyms entries (`[ext4]` → `ext4`).
    pub module: Option<Box<str>>,
    /// Demangled name, computed on first use.
    pub demangled: OnceCell<Box<str>>,
}

impl Sym {
    pub fn new(start: u64, size: u64, binding: Binding, name: &str) -> Self {
        Sym::named(start, size, binding, SymName::Own(name.into()))
    }

    pub fn named(start: u64, size: u64, binding: Binding, name: SymName) -> Self {
        Sym {
            start,
            end: start.saturating_add(size),
            binding,
            object: false,
            name,
            module: None,
            demangled: OnceCell::new(),
        }
    }
}

/// A symbol's name: its own copy, or where it is in the binary read. A big
/// binary's names are megabytes (Rust's mangled names are long), and a
/// copy of each took most of the time of reading its table, which the
/// report waits for.
#[derive(Clone)]
pub(crate) enum SymName {
    Own(Box<str>),
    /// `len` bytes at `at` in `file`, checked to be UTF-8 when read.
    InFile {
        file: FileBytes,
        at: u32,
        len: u32,
    },
}

impl Deref for SymName {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            SymName::Own(name) => name,
            SymName::InFile { file, at, len } => file
                .get(*at as usize..(*at as usize).saturating_add(*len as usize))
                .and_then(|bytes| std::str::from_utf8(bytes).ok())
                .unwrap_or_default(),
        }
    }
}

impl std::fmt::Debug for SymName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// A sorted symbol table. ELF tables also know the shape of perf's symbol
/// rbtree ([`RbTree`]): where symbols overlap (a zero-sized `_init`
/// extended over the PLT, nested asm labels), perf 6.1's `symbols__find`
/// returns the first containing symbol on its root-to-leaf path, which
/// depends on that shape; elsewhere it agrees with a binary search. So the
/// tree is built apart from the table (a big binary's costs as much again),
/// by [`SymbolTable::tree_builder`] on another thread, or at the first
/// lookup where symbols overlap.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
    /// The symbols' starts, for the binary search (a big table's symbols
    /// are megabytes), and every [`STRIDE`]-th of them.
    starts: Vec<u64>,
    sparse: Vec<u64>,
    /// The address ranges (first, last) where symbols overlap or one has
    /// no size, sorted: only there does perf's tree decide.
    contested: Vec<(u64, u64)>,
    /// How perf built its tree (ELF tables only).
    shape: Option<Arc<TreeShape>>,
    tree: Arc<OnceLock<RbTree>>,
}

/// Symbols per block of [`SymbolTable::find`]'s first search.
const STRIDE: usize = 64;

/// The insertions and erasures perf 6.1 makes in a DSO's symbol tree.
#[derive(Debug, Default)]
struct TreeShape {
    /// Per node (the symbol table's symbols in its order, then the PLT
    /// entries): its start, and its symbol's index in the table ([`NIL`]
    /// once erased).
    nodes: Vec<(u64, u32)>,
    /// The symbol-table nodes `symbols__fixup_duplicate` erased, in order;
    /// the PLT entries are inserted after that.
    erased: Vec<u32>,
    symtab_nodes: usize,
    /// Each node's symbol's end (after the fix-ups).
    ends: Vec<u64>,
}

impl TreeShape {
    fn build(&self) -> RbTree {
        let mut tree = RbTree::default();
        for (id, &(start, _)) in self.nodes[..self.symtab_nodes].iter().enumerate() {
            tree.insert(id, start);
        }
        for &id in &self.erased {
            tree.erase(id as usize);
        }
        for (id, &(start, _)) in self.nodes.iter().enumerate().skip(self.symtab_nodes) {
            tree.insert(id, start);
        }
        for ((node, &(_, sym)), &end) in tree.nodes.iter_mut().zip(&self.nodes).zip(&self.ends) {
            if sym != NIL {
                node.sym = sym;
                node.end = end;
            }
        }
        tree
    }
}

/// The address ranges of `syms` (sorted by start) where symbols overlap or
/// have no size, merged.
fn contested_ranges(syms: &[Sym]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    // The current run of chained overlaps: its first start, last end
    // (exclusive), and whether it needs the tree.
    let mut run: Option<(u64, u64, bool)> = None;
    for s in syms {
        let end = s.end.max(s.start.saturating_add(1));
        let zero = s.end <= s.start;
        run = match run {
            Some((first, last, _)) if s.start < last => Some((first, last.max(end), true)),
            _ => {
                if let Some((first, last, true)) = run {
                    out.push((first, last - 1));
                }
                Some((s.start, end, zero))
            }
        };
    }
    if let Some((first, last, true)) = run {
        out.push((first, last - 1));
    }
    out
}

fn leading_underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol`: true when `a` should be kept over `b`
/// (both start at the same address).
fn prefer_first(a: &Sym, b: &Sym) -> bool {
    prefer_first_named(a, b, &a.name, &b.name)
}

/// [`prefer_first`] on ELF symbols: perf compares the names it stores,
/// which dso__load_sym has already demangled (a `.llvm.123` clone of
/// another local function loses to the one with the longer demangled name).
fn prefer_first_demangled(a: &Sym, b: &Sym) -> bool {
    let na = super::demangle::demangle(&a.name);
    let nb = super::demangle::demangle(&b.name);
    prefer_first_named(
        a,
        b,
        na.as_deref().unwrap_or(&a.name),
        nb.as_deref().unwrap_or(&b.name),
    )
}

fn prefer_first_named(a: &Sym, b: &Sym, name_a: &str, name_b: &str) -> bool {
    // Prefer a symbol with non-zero length.
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if lb == 0 && la > 0 {
        return true;
    }
    if la == 0 && lb > 0 {
        return false;
    }
    // Prefer a non-weak symbol over a weak one.
    let (wa, wb) = (a.binding == Binding::Weak, b.binding == Binding::Weak);
    if wb && !wa {
        return true;
    }
    if wa && !wb {
        return false;
    }
    // Prefer a global symbol over a non-global one.
    let (ga, gb) = (a.binding == Binding::Global, b.binding == Binding::Global);
    if ga && !gb {
        return true;
    }
    if gb && !ga {
        return false;
    }
    // Prefer the symbol with fewer leading underscores.
    let (ua, ub) = (leading_underscores(name_a), leading_underscores(name_b));
    if ub > ua {
        return true;
    }
    if ua > ub {
        return false;
    }
    // Prefer the longer name; on a tie keep the first one.
    name_a.len() >= name_b.len()
}

impl SymbolTable {
    /// Builds a table like perf. ELF symbols (`syms` in symbol-table order)
    /// go through perf 6.1's `dso__load_sym`: rbtree insertion (stable by
    /// start), `symbols__fixup_end`, then `symbols__fixup_duplicate`.
    /// For kallsyms perf 6.1 (`__dso__load_kallsyms`) also fixes the ends
    /// first: of symbols sharing an address only the last one then has a
    /// size, so `choose_best_symbol` keeps it (`__pi_memcpy`, not `memcpy`).
    /// JIT maps (`keep_last_duplicate`) keep the most recent entry of an
    /// address.
    pub fn build(syms: Vec<Sym>, is_kallsyms: bool, keep_last_duplicate: bool) -> Self {
        if is_kallsyms || keep_last_duplicate {
            let mut syms = syms;
            syms.sort_by_key(|s| s.start);
            if is_kallsyms {
                fixup_end(&mut syms, true);
                return SymbolTable::without_shape(fixup_duplicate(syms, keep_last_duplicate));
            }
            let mut out = fixup_duplicate(syms, keep_last_duplicate);
            fixup_end(&mut out, false);
            return SymbolTable::without_shape(out);
        }
        SymbolTable::build_elf(syms, Vec::new())
    }

    /// [`Self::build`] of an ELF symbol table, then the synthesized PLT
    /// symbols `plt` added after the fix-ups, like perf 6.1 does
    /// (`dso__synthesize_plt_symbols` runs after `dso__load_sym` and only
    /// inserts into the rbtree). A zero-sized symbol before the PLT
    /// (typically `_init` in `.init`) has then already been extended over
    /// the PLT; whether a PLT address finds it or the PLT entry depends on
    /// which of the two perf's tree search meets first (`_init+0x30` in a
    /// small program, `strlen@plt` in a big library).
    pub fn build_elf(mut syms: Vec<Sym>, plt: Vec<Sym>) -> Self {
        // The tree's in-order: by start, equal starts in insertion order.
        let mut keys: Vec<(u64, usize)> = syms.iter().map(|s| s.start).zip(0..).collect();
        keys.sort_unstable();
        let order: Vec<usize> = keys.into_iter().map(|(_, i)| i).collect();
        fixup_end_in_order(&mut syms, &order);
        // symbols__fixup_duplicate, erasing from the tree in perf's order.
        let mut erased = Vec::new();
        let mut kept: Option<usize> = None;
        for &id in &order {
            let (Some(prev), Some(sym)) = (kept.and_then(|k| syms.get(k)), syms.get(id)) else {
                kept = Some(id);
                continue;
            };
            if prev.start != sym.start {
                kept = Some(id);
            } else if prefer_first_demangled(prev, sym) {
                erased.push(id as u32);
            } else {
                if let Some(old) = kept {
                    erased.push(old as u32);
                }
                kept = Some(id);
            }
        }
        let symtab_nodes = syms.len();
        let mut nodes: Vec<(u64, u32)> = syms.iter().chain(&plt).map(|s| (s.start, 0)).collect();
        for &id in &erased {
            nodes[id as usize].1 = NIL;
        }
        // PLT entries go after the symbols of equal start.
        let mut plt_order: Vec<usize> = (symtab_nodes..nodes.len()).collect();
        plt_order.sort_by_key(|&id| nodes[id].0);
        let mut plt_order = plt_order.into_iter().peekable();
        // The node at each place of the table; the erased ones last.
        let mut merged = Vec::with_capacity(nodes.len());
        for id in order.into_iter().filter(|&id| nodes[id].1 != NIL) {
            merged.extend(std::iter::from_fn(|| {
                plt_order.next_if(|&p| nodes[p].0 < nodes[id].0)
            }));
            merged.push(id);
        }
        merged.extend(plt_order);
        let kept = merged.len();
        for (place, &id) in merged.iter().enumerate() {
            nodes[id].1 = place as u32;
        }
        merged.extend(erased.iter().map(|&id| id as usize));
        // The symbols move in place (a big binary has tens of thousands:
        // new memory for them costs more than the moves).
        syms.extend(plt);
        let mut out = crate::permute::permute(syms, &merged);
        out.truncate(kept);
        let ends = nodes
            .iter()
            .map(|&(_, at)| out.get(at as usize).map_or(0, |s| s.end))
            .collect();
        let shape = TreeShape {
            symtab_nodes,
            nodes,
            erased,
            ends,
        };
        SymbolTable::with_shape(out, Some(shape))
    }

    fn without_shape(syms: Vec<Sym>) -> Self {
        SymbolTable::with_shape(syms, None)
    }

    /// The table of `syms` (sorted), with what its lookups search.
    fn with_shape(syms: Vec<Sym>, shape: Option<TreeShape>) -> Self {
        SymbolTable {
            contested: match shape {
                Some(_) => contested_ranges(&syms),
                None => Vec::new(),
            },
            starts: syms.iter().map(|s| s.start).collect(),
            sparse: syms.iter().step_by(STRIDE).map(|s| s.start).collect(),
            syms,
            shape: shape.map(Arc::new),
            tree: Arc::default(),
        }
    }

    /// Like [`Self::find`], but with `prefer_plt` the symbol starting last
    /// at or before `addr` wins over an enclosing one (`strlen@plt` rather
    /// than the `_init` perf 6.1 may extend over the PLT).
    pub fn find_with(&self, addr: u64, prefer_plt: bool) -> Option<&Sym> {
        if prefer_plt {
            return self.find_last_starting(addr);
        }
        self.find(addr)
    }
    /// A table of symbols already sorted and fixed up (a cache's content).
    #[allow(dead_code)]
    pub fn from_sorted(syms: Vec<Sym>) -> Self {
        SymbolTable::without_shape(syms)
    }

    /// The symbols, sorted by start address.
    pub fn syms(&self) -> &[Sym] {
        &self.syms
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// The symbol perf 6.1's `symbols__find` returns for `addr`: the first
    /// symbol on the tree path containing it (`[start, end)`, or exactly
    /// `start` for a zero-sized one). Without a tree, the last symbol
    /// starting at or before `addr`, if it contains it.
    pub fn find(&self, addr: u64) -> Option<&Sym> {
        let (Some(shape), true) = (&self.shape, self.is_contested(addr)) else {
            return self.find_last_starting(addr);
        };
        self.find_in(self.tree.get_or_init(|| shape.build()), addr)
    }

    /// Where lookups will need perf's tree (symbols overlap), what builds
    /// it, for another thread to run while the table is in use: the first
    /// such lookup then waits at most for the rest of it.
    pub fn tree_builder(&self) -> Option<impl FnOnce() + Send + 'static> {
        let shape = self.shape.clone().filter(|_| !self.contested.is_empty())?;
        let tree = self.tree.clone();
        Some(move || {
            tree.get_or_init(|| shape.build());
        })
    }

    /// perf's `symbols__find` in `tree`.
    fn find_in(&self, tree: &RbTree, addr: u64) -> Option<&Sym> {
        let nodes = &tree.nodes;
        let mut n = tree.root;
        while let Some(node) = nodes.get(n as usize) {
            if addr < node.start {
                n = node.left;
            } else if addr > node.end || (addr == node.end && addr != node.start) {
                n = node.right;
            } else {
                return self.syms.get(node.sym as usize);
            }
        }
        None
    }

    fn is_contested(&self, addr: u64) -> bool {
        let i = self.contested.partition_point(|&(first, _)| first <= addr);
        i.checked_sub(1)
            .and_then(|i| self.contested.get(i))
            .is_some_and(|&(_, last)| addr <= last)
    }

    fn find_last_starting(&self, addr: u64) -> Option<&Sym> {
        // The block first, by every STRIDE-th start: those stay in cache.
        let block = self.sparse.partition_point(|&start| start <= addr);
        let first = block.saturating_sub(1) * STRIDE;
        let end = (block * STRIDE).min(self.starts.len());
        let idx = first
            + self
                .starts
                .get(first..end)?
                .partition_point(|&start| start <= addr);
        let sym = self.syms.get(idx.checked_sub(1)?)?;
        (addr < sym.end).then_some(sym)
    }

    #[cfg(test)]
    pub fn iter(&self) -> impl Iterator<Item = &Sym> {
        self.syms.iter()
    }
}

/// perf's `symbols__fixup_duplicate` on a start-sorted list.
fn fixup_duplicate(syms: Vec<Sym>, keep_last: bool) -> Vec<Sym> {
    let mut out: Vec<Sym> = Vec::with_capacity(syms.len());
    for sym in syms {
        match out.last() {
            Some(prev) if prev.start == sym.start => {
                if keep_last || !prefer_first(prev, &sym) {
                    out.pop();
                    out.push(sym);
                }
            }
            _ => out.push(sym),
        }
    }
    out
}

/// perf's `symbols__fixup_end` on a start-sorted list.
fn fixup_end(out: &mut [Sym], is_kallsyms: bool) {
    let n = out.len();
    for i in 1..n {
        let (head, tail) = out.split_at_mut(i);
        let prev = &mut head[i - 1];
        let curr = &tail[0];
        if prev.end == prev.start {
            if is_kallsyms && prev.module.is_some() != curr.module.is_some() {
                // Last kernel/module symbol: map to the end of the page.
                prev.end = round_up_page(prev.end.saturating_add(4096));
            } else {
                prev.end = curr.start;
            }
        }
    }
    if let Some(last) = out.last_mut() {
        if last.end == last.start {
            last.end = round_up_page(last.start).saturating_add(4096);
        }
    }
}

/// [`fixup_end`] (user space) on `syms` taken in `order` (indexes, by
/// start).
fn fixup_end_in_order(syms: &mut [Sym], order: &[usize]) {
    for pair in order.windows(2) {
        let Some(start) = syms.get(pair[1]).map(|s| s.start) else {
            continue;
        };
        if let Some(prev) = syms.get_mut(pair[0]) {
            if prev.end == prev.start {
                prev.end = start;
            }
        }
    }
    if let Some(last) = order.last().and_then(|&i| syms.get_mut(i)) {
        if last.end == last.start {
            last.end = round_up_page(last.start).saturating_add(4096);
        }
    }
}

fn round_up_page(v: u64) -> u64 {
    v.checked_add(4095).map_or(!4095, |x| x & !4095)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sym(start: u64, size: u64, name: &str) -> Sym {
        Sym::new(start, size, Binding::Global, name)
    }

    #[test]
    fn duplicates_compare_demangled_names() {
        // Identical code folded under two local names; the mangled one with
        // the LLVM suffix is longer, the other one's demangled name is.
        let t = SymbolTable::build(
            vec![
                Sym::new(
                    0x100,
                    0x53,
                    Binding::Local,
                    "_ZNK12_GLOBAL__N_132FixupStatepointCallerSavedLegacy16getAnalysisUsageERN4llvm13AnalysisUsageE",
                ),
                Sym::new(
                    0x100,
                    0x53,
                    Binding::Local,
                    "_ZNK12_GLOBAL__N_127X86DomainReassignmentLegacy16getAnalysisUsageERN4llvm13AnalysisUsageE.llvm.7702345684471436505",
                ),
            ],
            false,
            false,
        );
        let names: Vec<&str> = t.iter().map(|s| &*s.name).collect();
        assert_eq!(names.len(), 1);
        assert!(names[0].contains("FixupStatepoint"), "{names:?}");
    }

    #[test]
    fn plt_under_init_depends_on_the_tree_path() {
        // _init (zero-sized) is extended over the PLT by fixup_end; perf's
        // search returns it when it lies on the path to the PLT entry.
        // Symtab order m1, _init, m2: _init's node is the parent of the
        // PLT entry's.
        let t = SymbolTable::build_elf(
            vec![
                sym(0x3000, 0x10, "m1"),
                sym(0x1000, 0, "_init"),
                sym(0x4000, 0x10, "m2"),
            ],
            vec![sym(0x1020, 0x10, "a@plt")],
        );
        let names: Vec<&str> = t.iter().map(|s| &*s.name).collect();
        assert_eq!(names, ["_init", "a@plt", "m1", "m2"]);
        assert_eq!(t.find(0x1024).map(|s| &*s.name), Some("_init"));
        assert_eq!(t.find_with(0x1024, true).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(t.find(0x1000).map(|s| &*s.name), Some("_init"));
        assert_eq!(t.find(0x4010).map(|s| &*s.name), None);

        // Symtab order _init, main: the PLT insertions rotate a@plt to the
        // root and b@plt below main, so neither search meets _init.
        let t = SymbolTable::build_elf(
            vec![sym(0x1000, 0, "_init"), sym(0x2000, 0x10, "main")],
            vec![sym(0x1020, 0x10, "a@plt"), sym(0x1030, 0x10, "b@plt")],
        );
        assert_eq!(t.find(0x1024).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(t.find(0x1034).map(|s| &*s.name), Some("b@plt"));
        assert_eq!(t.find(0x1010).map(|s| &*s.name), Some("_init"));
    }

    #[test]
    fn binary_search_outside_contested_ranges_agrees_with_the_tree() {
        // Tables with nested, overlapping, zero-sized and duplicate
        // symbols and PLT entries: every address finds what a walk of the
        // whole tree finds, though the tree is only built for the
        // contested ranges.
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for round in 0..200 {
            // Some span several of find's blocks.
            let count = 1 + next(if round % 4 == 0 { 400 } else { 40 });
            let mut syms = Vec::new();
            for i in 0..count {
                let start = 0x1000 + next(0x400) * 4;
                let size = match next(4) {
                    0 => 0,
                    1 => next(0x40),
                    _ => next(0x10) * 4,
                };
                let binding = [Binding::Global, Binding::Weak, Binding::Local][next(3) as usize];
                syms.push(Sym::new(start, size, binding, &format!("s{i}")));
            }
            let plt = (0..next(4))
                .map(|i| sym(0x1000 + next(0x400) * 4, 0x10, &format!("p{i}@plt")))
                .collect();
            let t = SymbolTable::build_elf(syms, plt);
            let Some(shape) = &t.shape else {
                panic!("an ELF table has a tree shape");
            };
            // Each kept node's symbol moved to its place, in start order.
            assert!(t.syms.windows(2).all(|w| w[0].start <= w[1].start));
            for (id, &(_, at)) in shape.nodes.iter().enumerate() {
                let Some(placed) = t.syms.get(at as usize) else {
                    continue;
                };
                let name = match id.checked_sub(shape.symtab_nodes) {
                    Some(j) => format!("p{j}@plt"),
                    None => format!("s{id}"),
                };
                assert_eq!(*placed.name, name, "round {round}");
            }
            let whole = shape.build();
            for addr in 0xff0..0x2100 {
                let lazily = t.find(addr).map(|s| &*s.name);
                let walked = t.find_in(&whole, addr).map(|s| &*s.name);
                assert_eq!(lazily, walked, "round {round}, address {addr:#x}");
            }
        }
    }
}
