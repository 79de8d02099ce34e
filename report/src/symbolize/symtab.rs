//! Sorted, immutable symbol tables with perf's duplicate and end fix-ups.

use std::cell::OnceCell;

use crate::rbtree::RbTree;

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
    pub name: Box<str>,
    /// Kernel module name for kallsyms entries (`[ext4]` → `ext4`).
    pub module: Option<Box<str>>,
    /// Demangled name, computed on first use.
    pub demangled: OnceCell<Box<str>>,
}

impl Sym {
    pub fn new(start: u64, size: u64, binding: Binding, name: &str) -> Self {
        Sym {
            start,
            end: start.saturating_add(size),
            binding,
            name: name.into(),
            module: None,
            demangled: OnceCell::new(),
        }
    }
}

/// A sorted symbol table. ELF tables also keep the shape of perf's symbol
/// rbtree ([`RbTree`]): where symbols overlap (a zero-sized `_init`
/// extended over the PLT, nested asm labels), perf 6.1's `symbols__find`
/// returns the first containing symbol on its root-to-leaf path, which
/// depends on that shape; elsewhere it agrees with a binary search.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
    tree: RbTree,
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
                return SymbolTable {
                    syms: fixup_duplicate(syms, keep_last_duplicate),
                    tree: RbTree::default(),
                };
            }
            let mut out = fixup_duplicate(syms, keep_last_duplicate);
            fixup_end(&mut out, false);
            return SymbolTable {
                syms: out,
                tree: RbTree::default(),
            };
        }
        // Node ids are indexes into `syms`: the symbols move once, into
        // the finished table (a big binary has tens of thousands).
        let mut syms = syms;
        let mut tree = RbTree::default();
        for (i, sym) in syms.iter().enumerate() {
            tree.insert(i, sym.start);
        }
        let order = tree.in_order();
        fixup_end_in_order(&mut syms, &order);
        // symbols__fixup_duplicate, erasing from the tree in perf's order.
        let mut kept: Option<usize> = None;
        for &id in &order {
            let (Some(prev), Some(sym)) = (kept.and_then(|k| syms.get(k)), syms.get(id)) else {
                kept = Some(id);
                continue;
            };
            if prev.start != sym.start {
                kept = Some(id);
            } else if prefer_first_demangled(prev, sym) {
                tree.erase(id);
            } else {
                if let Some(old) = kept {
                    tree.erase(old);
                }
                kept = Some(id);
            }
        }
        let mut table = SymbolTable {
            syms: Vec::new(),
            tree,
        };
        table.finish(syms.into_iter().map(Some).collect());
        table
    }

    /// Stores the symbols of the tree's live nodes (`by_node`, indexed by
    /// node id) in the tree's in-order and points each node at its
    /// symbol's index.
    fn finish(&mut self, mut by_node: Vec<Option<Sym>>) {
        let mut out = Vec::with_capacity(by_node.len());
        for id in self.tree.in_order() {
            let Some(sym) = by_node.get_mut(id).and_then(Option::take) else {
                continue;
            };
            let node = &mut self.tree.nodes[id];
            node.end = sym.end;
            node.sym = out.len() as u32;
            out.push(sym);
        }
        self.syms = out;
    }

    /// Adds synthesized PLT symbols after the fix-ups, like perf 6.1 does
    /// (`dso__synthesize_plt_symbols` runs after `dso__load_sym` and only
    /// inserts into the rbtree). A zero-sized symbol before the PLT
    /// (typically `_init` in `.init`) has then already been extended over
    /// the PLT; whether a PLT address finds it or the PLT entry depends on
    /// which of the two perf's tree search meets first (`_init+0x30` in a
    /// small program, `strlen@plt` in a big library).
    pub fn add_plt(&mut self, plt: Vec<Sym>) {
        if plt.is_empty() {
            return;
        }
        if self.tree.nodes.is_empty() && !self.syms.is_empty() {
            // A table without perf's tree shape (kallsyms, JIT): keep its
            // symbols first at equal starts, as the tree would.
            let mut all = std::mem::take(&mut self.syms);
            all.extend(plt);
            all.sort_by_key(|s| s.start);
            self.syms = all;
            return;
        }
        // Existing nodes are found again through their symbol index.
        let mut old: Vec<Option<Sym>> = std::mem::take(&mut self.syms)
            .into_iter()
            .map(Some)
            .collect();
        let mut by_node: Vec<Option<Sym>> = Vec::new();
        by_node.resize_with(self.tree.nodes.len() + plt.len(), || None);
        for (node, slot) in self.tree.nodes.iter().zip(by_node.iter_mut()) {
            if !node.erased {
                *slot = old.get_mut(node.sym as usize).and_then(Option::take);
            }
        }
        for sym in plt {
            let id = self.tree.insert(self.tree.nodes.len(), sym.start);
            if let Some(slot) = by_node.get_mut(id) {
                *slot = Some(sym);
            }
        }
        self.finish(by_node);
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
        SymbolTable {
            syms,
            tree: RbTree::default(),
        }
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
        if self.tree.nodes.is_empty() {
            return self.find_last_starting(addr);
        }
        let nodes = &self.tree.nodes;
        let mut n = self.tree.root;
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

    fn find_last_starting(&self, addr: u64) -> Option<&Sym> {
        let idx = self.syms.partition_point(|s| s.start <= addr);
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
        let mut t = SymbolTable::build(
            vec![
                sym(0x3000, 0x10, "m1"),
                sym(0x1000, 0, "_init"),
                sym(0x4000, 0x10, "m2"),
            ],
            false,
            false,
        );
        t.add_plt(vec![sym(0x1020, 0x10, "a@plt")]);
        let names: Vec<&str> = t.iter().map(|s| &*s.name).collect();
        assert_eq!(names, ["_init", "a@plt", "m1", "m2"]);
        assert_eq!(t.find(0x1024).map(|s| &*s.name), Some("_init"));
        assert_eq!(t.find_with(0x1024, true).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(t.find(0x1000).map(|s| &*s.name), Some("_init"));
        assert_eq!(t.find(0x4010).map(|s| &*s.name), None);

        // Symtab order _init, main: the PLT insertions rotate a@plt to the
        // root and b@plt below main, so neither search meets _init.
        let mut t = SymbolTable::build(
            vec![sym(0x1000, 0, "_init"), sym(0x2000, 0x10, "main")],
            false,
            false,
        );
        t.add_plt(vec![sym(0x1020, 0x10, "a@plt"), sym(0x1030, 0x10, "b@plt")]);
        assert_eq!(t.find(0x1024).map(|s| &*s.name), Some("a@plt"));
        assert_eq!(t.find(0x1034).map(|s| &*s.name), Some("b@plt"));
        assert_eq!(t.find(0x1010).map(|s| &*s.name), Some("_init"));
    }
}
