//! Sorted, immutable symbol tables with perf's duplicate and end fix-ups.

use std::cell::OnceCell;

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
    /// Index of an earlier (non-PLT) symbol whose end was extended over this
    /// synthesized PLT entry (see [`SymbolTable::add_plt`]).
    pub covered_by: Option<u32>,
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
            covered_by: None,
        }
    }
}

/// A sorted symbol table; lookups are binary searches.
#[derive(Debug, Default)]
pub(crate) struct SymbolTable {
    syms: Vec<Sym>,
}

fn leading_underscores(name: &str) -> usize {
    name.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol`: true when `a` should be kept over `b`
/// (both start at the same address).
fn prefer_first(a: &Sym, b: &Sym) -> bool {
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
    let (ua, ub) = (leading_underscores(&a.name), leading_underscores(&b.name));
    if ub > ua {
        return true;
    }
    if ua > ub {
        return false;
    }
    // Prefer the longer name; on a tie keep the first one.
    a.name.len() >= b.name.len()
}

impl SymbolTable {
    /// Builds a table like perf: stable sort by start address, then
    /// `symbols__fixup_duplicate` (unless `keep_last_duplicate`, used for JIT
    /// maps where the most recent entry wins), then `symbols__fixup_end`.
    /// For kallsyms perf 6.1 (`__dso__load_kallsyms`) fixes the ends first:
    /// of symbols sharing an address only the last one then has a size, so
    /// `choose_best_symbol` keeps it (`__pi_memcpy`, not `memcpy`).
    pub fn build(mut syms: Vec<Sym>, is_kallsyms: bool, keep_last_duplicate: bool) -> Self {
        syms.sort_by_key(|s| s.start);
        if is_kallsyms {
            fixup_end(&mut syms, true);
            SymbolTable {
                syms: fixup_duplicate(syms, keep_last_duplicate),
            }
        } else {
            let mut out = fixup_duplicate(syms, keep_last_duplicate);
            fixup_end(&mut out, false);
            SymbolTable { syms: out }
        }
    }

    /// Adds synthesized PLT symbols after the fix-ups, like perf 6.1 does
    /// (`dso__synthesize_plt_symbols` runs after `dso__load_sym`). A
    /// zero-sized symbol before the PLT (typically `_init` in `.init`) has
    /// then already been extended over the PLT; perf 6.1's tree search meets
    /// that symbol first, so samples in the PLT show as `_init+0x30`. That
    /// covering symbol is remembered so [`Self::find`] can reproduce it.
    pub fn add_plt(&mut self, plt: Vec<Sym>) {
        if plt.is_empty() {
            return;
        }
        let mut all: Vec<Sym> = std::mem::take(&mut self.syms);
        let first_plt = all.len();
        all.extend(plt);
        // Stable: existing symbols stay before PLT symbols at equal starts.
        let mut order: Vec<usize> = (0..all.len()).collect();
        order.sort_by_key(|&i| (all[i].start, i >= first_plt));
        let mut slots: Vec<Option<Sym>> = all.into_iter().map(Some).collect();
        let mut out = Vec::with_capacity(slots.len());
        let mut last_real: Option<usize> = None;
        for i in order {
            let Some(mut sym) = slots[i].take() else {
                continue;
            };
            if i >= first_plt {
                if let Some(r) = last_real {
                    let real: &Sym = &out[r];
                    if real.end > sym.start {
                        sym.covered_by = u32::try_from(r).ok();
                    }
                }
            } else {
                last_real = Some(out.len());
            }
            out.push(sym);
        }
        self.syms = out;
    }

    /// Like [`Self::find`], but a symbol that perf 6.1 would shadow with a
    /// covering symbol is returned as is when `prefer_plt` is set.
    pub fn find_with(&self, addr: u64, prefer_plt: bool) -> Option<&Sym> {
        let sym = self.find(addr)?;
        if !prefer_plt {
            if let Some(c) = sym.covered_by.and_then(|c| self.syms.get(c as usize)) {
                if addr >= c.start && addr < c.end {
                    return Some(c);
                }
            }
        }
        Some(sym)
    }

    /// A table of symbols already sorted and fixed up (a cache's content).
    pub fn from_sorted(syms: Vec<Sym>) -> Self {
        SymbolTable { syms }
    }

    /// The symbols, sorted by start address.
    pub fn syms(&self) -> &[Sym] {
        &self.syms
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// The symbol whose `[start, end)` contains `addr`.
    pub fn find(&self, addr: u64) -> Option<&Sym> {
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

fn round_up_page(v: u64) -> u64 {
    v.checked_add(4095).map_or(!4095, |x| x & !4095)
}
