//! `perf report --stdio` text, byte for byte as perf 6.1 prints it.
//!
//! Layout (perf's `evlist__tty_browse_hists` and `hists__fprintf`):
//!
//! ```text
//! # To display the perf.data header info, please use --header/--header-only options.
//! #
//! #
//! # Total Lost Samples: 0
//! #
//! # Samples: 930  of event 'cpu-clock:ppp'
//! # Event count (approx.): 232500000
//! #
//! # Overhead  Command  Shared Object  Symbol
//! # ........  .......  .............  ......
//! #
//!     50.22%  hot3     hot3           [.] hot_a
//! (two empty lines after each event, then the closing tip block)
//! ```
//!
//! Column widths follow perf's `hists__calc_col_len`, including its quirks:
//! the Command width comes from each entry's thread's final comm, and a DSO
//! column narrower than 16 is widened to 16 once an entry without a symbol
//! is seen (unless `--dsos` was given).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::aggregate::{Entry, EntryFields, Field, Hists, ModePeriods, ReportData, SortKey};
use crate::callgraph;

/// perf's `convert_unit`.
fn convert_unit(mut v: u64) -> (u64, char) {
    let mut unit = ' ';
    for u in ['K', 'M', 'G'] {
        if v > 1000 {
            v /= 1000;
            unit = u;
        }
    }
    (v, unit)
}

struct Widths {
    comm: usize,
    thread: usize,
    dso: usize,
    sym: usize,
    srcline: usize,
    srcfile: usize,
    parent: usize,
    /// Branch mode: HISTC_DSO_FROM, HISTC_DSO_TO, HISTC_SYMBOL_FROM,
    /// HISTC_SYMBOL_TO.
    dso_from: usize,
    dso_to: usize,
    sym_from: usize,
    sym_to: usize,
    trace: usize,
    /// Per tracepoint field key ([`SortKey::Field`]): perf's `hde_width`.
    fields: Vec<usize>,
    /// HISTC_TIME: fixed, 12 (16 with `--ns`).
    time: usize,
    /// HISTC_CGROUP: the longest name of an entry with a cgroup.
    cgroup: usize,
    /// Whether an entry was measured: perf's fixed widths (weights,
    /// memory keys) come with the first one.
    any: bool,
    /// HISTC_TRANSACTION: `hist_entry__transaction_len` once an entry has
    /// transaction flags.
    transaction: usize,
    /// HISTC_MEM_DADDR_SYMBOL, HISTC_MEM_IADDR_SYMBOL, HISTC_MEM_DADDR_DSO.
    daddr_sym: usize,
    iaddr_sym: usize,
    daddr_dso: usize,
}

fn fields_of(data: &ReportData) -> Vec<Field> {
    let shown = data.options.shown_keys();
    fields_all(data)
        .into_iter()
        .filter(|f| !matches!(f, Field::Key(k) if !shown.contains(k)))
        .collect()
}

fn fields_all(data: &ReportData) -> Vec<Field> {
    if let Some(f) = &data.options.fields {
        return f.clone();
    }
    // perf_hpp__setup_output_field: the sort list's fields not shown yet.
    // perf_hpp__cancel_cumulate drops `overhead_children` where --children
    // was on but the file has no callchains (--no-children keeps it: N/A).
    let children = children(data);
    let cancelled = data.options.callgraph.children && !children;
    let mut v = data.options.default_fields(children);
    let added = data.options.added_fields.iter().copied();
    let given = data.options.sort_fields.iter().flatten().copied();
    for f in added
        .chain(given)
        .chain(data.options.sort.iter().map(|&k| Field::Key(k)))
    {
        let dropped = cancelled && f == Field::Children;
        if !dropped && !v.contains(&f) {
            v.push(f);
        }
    }
    v
}

/// `--children` is in effect.
fn children(data: &ReportData) -> bool {
    data.callgraph.as_ref().is_some_and(|c| c.params.children)
}

/// perf's `callchain_list__sym_name` for `--stdio` graphs.
struct Namer<'a>(&'a ReportData);

impl callgraph::Namer for Namer<'_> {
    fn name(&self, f: &callgraph::FrameInfo, key: callgraph::Key) -> String {
        let mut name = self.full_name(f, key);
        // perf formats it into a 1024-byte buffer.
        crate::truncate_bytes(&mut name, PERF_HEADER_FIELD_MAX);
        name
    }
}

impl Namer<'_> {
    fn full_name(&self, f: &callgraph::FrameInfo, key: callgraph::Key) -> String {
        let d = self.0;
        match f.sym {
            Some(s) => {
                let name = d.strings.get(d.syms[s.0 as usize].name);
                let inl = if d.syms[s.0 as usize].inlined {
                    " (inlined)"
                } else {
                    ""
                };
                match f.srcline {
                    Some(src) if key != callgraph::Key::Function => {
                        format!("{name} {}{inl}", d.strings.get(src))
                    }
                    _ => format!("{name}{inl}"),
                }
            }
            None if f.ip == 0 => "0".to_string(),
            None => format!("{:#x}", f.ip),
        }
    }
}

/// Prints an entry's call graph (perf's `hist_entry_callchain__fprintf`).
/// `total` is what percentages are of.
fn write_callgraph(
    out: &mut dyn Write,
    data: &ReportData,
    h: &Hists,
    e: &Entry,
    total: u64,
) -> io::Result<()> {
    let Some(cg) = &data.callgraph else {
        return Ok(());
    };
    // (--percent-limit's effect on the threshold is in the params.)
    let p = &cg.params;
    let Some(ecg) = e.cg.as_ref().filter(|_| p.enabled) else {
        return Ok(());
    };
    let parent = if p.children { ecg.acc_period } else { e.period };
    let periods = if data.options.relative {
        &cg.callchain_unfiltered_period
    } else {
        &cg.callchain_period
    };
    let cp = periods.get(h.attr_index).copied().unwrap_or(0);
    let min_hit = (cp as f64 * (p.min_percent / 100.0)) as u64;
    callgraph::write_graph(
        out,
        &ecg.tree,
        &cg.frames,
        &Namer(data),
        p,
        total,
        parent,
        min_hit,
    )
}

/// How many entries share each entry's values of the sort keys before
/// `key`. perf computes some values (srcfile, trace output) only when it
/// compares two entries by that key while inserting, which it does only
/// between entries equal in the keys before it: an entry sharing those
/// values with no other (and merging no other sample) never got its value,
/// so it does not widen the column.
struct SharedPrefixes<'a> {
    data: &'a ReportData,
    before: Vec<SortKey>,
    counts: HashMap<String, usize>,
}

impl<'a> SharedPrefixes<'a> {
    /// Counts nothing (every entry unshared) unless `count`.
    fn new(data: &'a ReportData, entries: &[Entry], key: SortKey, count: bool) -> Self {
        let before = data
            .options
            .sort
            .iter()
            .take_while(|k| **k != key)
            .copied()
            .collect();
        let mut shared = SharedPrefixes {
            data,
            before,
            counts: HashMap::new(),
        };
        if count {
            for e in entries {
                *shared.counts.entry(shared.prefix(e)).or_default() += 1;
            }
        }
        shared
    }

    fn prefix(&self, e: &Entry) -> String {
        self.before
            .iter()
            .map(|&k| key_value(self.data, e, k, 256).trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\u{1}")
    }

    fn shared(&self, e: &Entry) -> bool {
        // Nothing counted (the key is not shown, or leads): no prefix to
        // build, which pads every key value of every entry.
        !self.counts.is_empty() && self.counts.get(&self.prefix(e)).is_some_and(|&n| n >= 2)
    }
}

fn visible(e: &Entry) -> bool {
    e.filtered == 0 && e.collapse_filtered == 0
}

fn sym_name<'a>(data: &'a ReportData, e: &Entry) -> Option<&'a str> {
    e.sym
        .map(|s| data.strings.get(data.syms[s.0 as usize].name))
}

fn calc_widths(data: &ReportData, h: &Hists) -> Widths {
    let shown = h
        .entries
        .iter()
        .filter(|e| visible(e))
        .map(|e| (e, None, true));
    calc_widths_of(data, h, shown)
}

/// perf's `hists__calc_col_len` over `shown` entries. An entry that stands
/// for a `--hierarchy` level comes with its key: perf keeps its srcline,
/// srcfile and trace output only at their own levels; and whether perf has
/// computed its srcline by then (it does so lazily, in comparisons).
fn calc_widths_of<'e>(
    data: &ReportData,
    h: &Hists,
    shown: impl Iterator<Item = (&'e Entry, Option<SortKey>, bool)>,
) -> Widths {
    let mut w = Widths {
        comm: 0,
        thread: 0,
        dso: 0,
        sym: 0,
        srcline: 0,
        srcfile: 0,
        parent: 0,
        dso_from: 0,
        dso_to: 0,
        sym_from: 0,
        sym_to: 0,
        time: if data.options.nanosecs { 16 } else { 12 },
        trace: 0,
        fields: field_widths(data, h),
        cgroup: 0,
        any: false,
        transaction: 0,
        daddr_sym: 0,
        iaddr_sym: 0,
        daddr_dso: 0,
    };
    let keys = &data.options.sort;
    // With the key first, every entry is compared when made or when a
    // later one is, unless only one was ever made.
    let made_once = match h.entries.as_slice() {
        [e] => e.nr_samples <= 1 && e.cg.as_ref().is_none_or(|c| c.acc_count <= 1),
        _ => false,
    };
    let srcfile_first = keys.first() == Some(&SortKey::Srcfile) && !made_once;
    // The same for srclines: perf computes them in comparisons too.
    let srcline_first = keys.first() == Some(&SortKey::Srcline) && !made_once;
    let srcline_shared = SharedPrefixes::new(
        data,
        &h.entries,
        SortKey::Srcline,
        keys.contains(&SortKey::Srcline) && !srcline_first,
    );
    let srcfile_shared = SharedPrefixes::new(
        data,
        &h.entries,
        SortKey::Srcfile,
        keys.contains(&SortKey::Srcfile) && !srcfile_first,
    );
    // perf's he->trace_output, made in sort__trace_cmp: an entry never
    // compared by it does not widen the column, and is cut to the width
    // when printed.
    let trace_shared = SharedPrefixes::new(
        data,
        &h.entries,
        SortKey::Trace,
        keys.contains(&SortKey::Trace),
    );
    for (e, level, srcline_known) in shown {
        w.any = true;
        value_widths(data, e, &mut w);
        let at_level = |k: SortKey| level.is_none_or(|l| l == k);
        if let (Some(t), true) = (e.trace, at_level(SortKey::Trace)) {
            if e.nr_samples >= 2 || e.trace_compared || trace_shared.shared(e) {
                w.trace = w.trace.max(data.strings.get(t).len());
            }
        }
        match sym_name(data, e) {
            // -v: the address and the symbol table's origin first.
            Some(n) if data.options.verbose => w.sym = w.sym.max(n.len() + 4 + 21),
            Some(n) => w.sym = w.sym.max(n.len() + 4),
            None => {
                w.sym = w.sym.max(16 + 4 + 2);
                // hists__set_unres_dso_col_len: not with a --dsos list.
                let widen = data.options.dsos.is_none() && data.options.field_sep.is_none();
                if w.dso < 16 && widen {
                    w.dso = 16;
                }
            }
        }
        let len = data.machine.thread_comm(e.thread).len();
        if len > w.comm {
            w.comm = len;
            w.thread = len + 8;
        }
        if let Some(m) = e.map {
            w.dso = w.dso.max(data.machine.dsos.get(m.dso).shown_name.len());
        }
        let srcline_compared = match level {
            Some(_) => srcline_known,
            None => {
                let inserted = e.nr_samples.max(e.cg.as_ref().map_or(0, |c| c.acc_count));
                srcline_first || inserted >= 2 || e.srcline_compared || srcline_shared.shared(e)
            }
        };
        if let (Some(s), true) = (e.srcline, at_level(SortKey::Srcline) && srcline_compared) {
            w.srcline = w.srcline.max(data.strings.get(s).len());
        }
        if let Some(p) = e.parent {
            w.parent = w.parent.max(data.strings.get(p).len());
        }
        if e.cgroup != 0 {
            w.cgroup = w.cgroup.max(cgroup_name(data, e).len());
        }
        // perf computes he->srcfile lazily in se_cmp: after another key,
        // only entries a later sample merged into have it when the widths
        // are computed.
        if at_level(SortKey::Srcfile)
            && (srcfile_first || e.nr_samples >= 2 || srcfile_shared.shared(e))
        {
            let sf = e.srcfile.map_or(0, |s| data.strings.get(s).len());
            w.srcfile = w.srcfile.max(sf);
        }
        if let Some(b) = &e.branch {
            // hists__calc_col_len: the DSO width counts only with a symbol.
            let end = |a: &crate::aggregate::BranchAddr, sym: &mut usize, dso: &mut usize| match (
                a.sym, a.map,
            ) {
                (Some(s), Some(m)) => {
                    let n = data.strings.get(data.syms[s.0 as usize].name).len();
                    // -v: the address and the symbol table's origin first.
                    let verbose = if data.options.verbose { 21 } else { 0 };
                    *sym = (*sym).max(n + 4 + verbose);
                    *dso = (*dso).max(data.machine.dsos.get(m.dso).shown_name.len());
                }
                _ => {
                    *sym = (*sym).max(16 + 4 + 2);
                    *dso = (*dso).max(16);
                }
            };
            end(&b.from, &mut w.sym_from, &mut w.dso_from);
            end(&b.to, &mut w.sym_to, &mut w.dso_to);
        }
    }
    w
}

/// perf's `hists__calc_col_len` for the keys of the sample's values.
fn value_widths(data: &ReportData, e: &Entry, w: &mut Widths) {
    let Some(v) = e.values.as_deref() else {
        return;
    };
    if v.transaction != 0 {
        // hist_entry__transaction_len: the flags' names that count, and
        // `:XX `.
        w.transaction = 32;
    }
    let Some(m) = &v.mem else {
        return;
    };
    // A symbol's name, `[x] `, and room for an address (the `+0x...` of a
    // data object).
    let sym_width = |a: &crate::aggregate::BranchAddr| match (a.sym, a.map) {
        (Some(s), Some(_)) => data.strings.get(data.syms[s.0 as usize].name).len() + 4 + 16 + 2,
        _ => 16 + 4 + 2,
    };
    w.daddr_sym = w.daddr_sym.max(sym_width(&m.daddr));
    w.iaddr_sym = w.iaddr_sym.max(sym_width(&m.iaddr));
    match m.daddr.map {
        Some(map) => {
            w.daddr_dso = w
                .daddr_dso
                .max(data.machine.dsos.get(map.dso).shown_name.len())
        }
        // hists__set_unres_dso_col_len, as for the dso key.
        None => {
            if data.options.dsos.is_none() && data.options.field_sep.is_none() {
                w.daddr_dso = w.daddr_dso.max(16);
            }
        }
    }
}

/// perf's `hde_width` of each tracepoint field key, for the table of `h`:
/// the name, the field's size, the longest value an entry took from its
/// trace output (perf's `update_dynamic_len`, over every entry, filtered
/// or not), and for a `__data_loc` field [`Hists::data_loc_widths`].
fn field_widths(data: &ReportData, h: &Hists) -> Vec<usize> {
    let dynamic = &data.options.dynamic;
    let mut widths: Vec<usize> = dynamic.iter().map(|d| d.field.min_width).collect();
    for (i, d) in dynamic.iter().enumerate() {
        if d.attr_index != h.attr_index {
            continue;
        }
        widths[i] = widths[i].max(h.data_loc_widths.get(i).copied().unwrap_or(0));
        for e in &h.entries {
            let Some(f) = e.fields.map(|f| data.strings.get(f)) else {
                continue;
            };
            let (text, from_trace) = EntryFields::text(f, i);
            if from_trace {
                widths[i] = widths[i].max(text.len());
            }
        }
    }
    widths
}

/// Whether output field `f` has a column in the table of `h`: a tracepoint
/// field key only in its event's (perf's `perf_hpp__should_skip`).
fn in_table(data: &ReportData, h: &Hists, f: &Field) -> bool {
    match f {
        Field::Key(SortKey::Field(i)) => data
            .options
            .dynamic
            .get(*i as usize)
            .is_some_and(|d| d.attr_index == h.attr_index),
        _ => true,
    }
}

/// A tracepoint field key's column head: its name, right-aligned (`%*.*s`).
fn field_header(data: &ReportData, i: u16, width: usize) -> String {
    let name = data
        .options
        .dynamic
        .get(i as usize)
        .map_or("", |d| d.field.name.as_str());
    format!("{name:>width$.width$}")
}

fn key_width(k: SortKey, w: &Widths) -> usize {
    let v = match k {
        SortKey::Field(i) => w.fields.get(i as usize).copied().unwrap_or(0),
        SortKey::Comm => w.comm,
        SortKey::Pid | SortKey::Tid => w.thread,
        SortKey::Dso => w.dso,
        SortKey::Sym | SortKey::SymOff => w.sym,
        SortKey::Srcline => w.srcline,
        SortKey::Srcfile => w.srcfile,
        // perf never widens HISTC_CPU / HISTC_SOCKET past the header.
        SortKey::Cpu | SortKey::Socket => 0,
        SortKey::Parent => w.parent,
        SortKey::DsoFrom => w.dso_from,
        SortKey::DsoTo => w.dso_to,
        SortKey::SymFrom => w.sym_from,
        SortKey::SymTo => w.sym_to,
        SortKey::Cycles | SortKey::IpcNull | SortKey::SymSize | SortKey::DsoSize => 0,
        SortKey::Trace => w.trace,
        SortKey::Time => w.time,
        SortKey::Cgroup => w.cgroup,
        SortKey::CgroupId => 0,
        SortKey::Transaction => w.transaction,
        SortKey::SymDaddr => w.daddr_sym,
        SortKey::SymIaddr => w.iaddr_sym,
        SortKey::DsoDaddr => w.daddr_dso,
        // perf's fixed widths (HISTC_MEM_LVL is 21 + 3 in 6.1).
        _ if !w.any => 0,
        SortKey::LocalWeight | SortKey::Weight => 12,
        SortKey::LocalInsLat | SortKey::InsLat | SortKey::LocalPStageCyc | SortKey::PStageCyc => 13,
        SortKey::CodePageSize | SortKey::Locked => 6,
        SortKey::Addr => 18,
        SortKey::Tlb | SortKey::PhysDaddr | SortKey::DataPageSize => 22,
        SortKey::Mem => 24,
        SortKey::Snoop => 12,
        SortKey::Blocked => 10,
    };
    v.max(k.header().len())
}

/// perf's `hist_entry__cgroup_snprintf`: `N/A` without a cgroup, its path,
/// or `unknown` when no CGROUP record named it.
fn cgroup_name<'d>(data: &'d ReportData, e: &Entry) -> &'d str {
    match e.cgroup {
        0 => "N/A",
        id => data
            .cgroups
            .get(&id)
            .map_or("unknown", |&p| data.strings.get(p)),
    }
}

/// `s` cut to `width` characters and padded with spaces to them (`%-*.*s`).
fn pad(s: &str, width: usize) -> String {
    let t = match s.char_indices().nth(width) {
        Some((end, _)) => &s[..end],
        None => s,
    };
    let fill = width.saturating_sub(t.chars().count());
    let mut out = String::with_capacity(t.len() + fill);
    out.push_str(t);
    // Wide columns (long C++ and Rust names) pad every row by hundreds.
    const SPACES: &str = "                                                                ";
    let mut left = fill;
    while left > 0 {
        let n = left.min(SPACES.len());
        out.push_str(&SPACES[..n]);
        left -= n;
    }
    out
}

fn key_value(data: &ReportData, e: &Entry, k: SortKey, width: usize) -> String {
    match k {
        // perf's __sort__hde_entry: `%*.*s`.
        SortKey::Field(i) => {
            let text = e
                .fields
                .map_or("", |f| EntryFields::text(data.strings.get(f), i as usize).0);
            format!("{text:>width$.width$}")
        }
        // perf's timestamp__scnprintf_usec/_nsec, `%-.*s` (the caller pads
        // it when another column follows).
        SortKey::Time => {
            let (secs, ns) = (e.time / 1_000_000_000, e.time % 1_000_000_000);
            let text = if data.options.nanosecs {
                format!("{secs}.{ns:09}")
            } else {
                format!("{secs}.{:06}", ns / 1000)
            };
            text.chars().take(width).collect()
        }
        // perf's `%-.*s`: cut to the width, never padded.
        SortKey::Trace => e
            .trace
            .map_or("", |t| data.strings.get(t))
            .chars()
            .take(width)
            .collect(),
        SortKey::Comm => pad(data.machine.comms.get(e.comm), width),
        // "%s": neither cut nor padded (the caller pads a middle column).
        SortKey::Cgroup => cgroup_name(data, e).to_string(),
        // "%lu/0x%lx", not padded.
        SortKey::CgroupId => format!("{}/{:#x}", e.cgroup_ns.0, e.cgroup_ns.1),
        // "%-5s %2s" of "-", "-", padded.
        SortKey::IpcNull => pad("-      -", width),
        // "%*d" of the size, or "unknown" right-aligned.
        SortKey::SymSize => match crate::aggregate::entry_sym_size(data, e) {
            Some(size) => format!("{:>width$}", size as i32),
            None => format!("{:>width$}", "unknown"),
        },
        SortKey::DsoSize => match e.map {
            Some(m) => format!("{:>width$}", crate::aggregate::map_size(Some(m)) as i32),
            None => format!("{:>width$}", "unknown"),
        },
        SortKey::Pid | SortKey::Tid => {
            let t = data.machine.thread(e.thread);
            let cw = width.max(7) - 8;
            format!("{:7}:{}", t.tid, pad(data.machine.comms.get(t.comm), cw))
        }
        SortKey::Dso => match e.map {
            Some(m) => pad(&data.machine.dsos.get(m.dso).shown_name, width),
            None => pad("[unknown]", width),
        },
        SortKey::Sym | SortKey::SymOff => {
            let prefix = sym_prefix(data, e.map, e.addr, e.level);
            match (e.sym, e.map) {
                (Some(s), Some(map)) => {
                    let sym = &data.syms[s.0 as usize];
                    let name = data.strings.get(sym.name);
                    let room = width.saturating_sub(prefix.len());
                    let name: String = name.chars().take(room.max(name.len())).collect();
                    if k == SortKey::SymOff {
                        format!("{prefix}{name}+0x{:x}", e.addr.wrapping_sub(sym.start))
                    } else if sym.object {
                        // perf's STT_OBJECT case: the offset from the
                        // symbol's start, mapped back into the process.
                        let offset = e.addr.wrapping_sub(map.unmap_ip(sym.start));
                        format!("{prefix}{name}+0x{offset:x}")
                    } else if sym.inlined {
                        format!("{prefix}{name} (inlined)")
                    } else {
                        format!("{prefix}{name}")
                    }
                }
                // printf("%-#.*llx", 16, addr): no 0x for zero.
                _ if e.addr == 0 => format!("{prefix}{:016x}", 0),
                _ => format!("{prefix}{:#018x}", e.addr),
            }
        }
        // "%-.*s": cut to the column (only a --hierarchy srcline perf had
        // not computed when sizing the column is longer).
        SortKey::Srcline => e
            .srcline
            .map_or("??:0", |s| data.strings.get(s))
            .chars()
            .take(width)
            .collect(),
        // "%.*s": truncated to the column, not padded.
        SortKey::Srcfile => e
            .srcfile
            .map_or("", |s| data.strings.get(s))
            .chars()
            .take(width)
            .collect(),
        SortKey::Cpu => c_int(e.cpu as i32, width, width),
        SortKey::Socket => c_int(e.socket, width, width.saturating_sub(3)),
        SortKey::Parent => pad(e.parent.map_or("[other]", |p| data.strings.get(p)), width),
        SortKey::DsoFrom | SortKey::DsoTo => {
            let a = e
                .branch
                .as_ref()
                .map(|b| if k == SortKey::DsoFrom { b.from } else { b.to });
            match a {
                None => pad("N/A", width),
                Some(a) => match a.map {
                    Some(m) => pad(&data.machine.dsos.get(m.dso).shown_name, width),
                    None => pad("[unknown]", width),
                },
            }
        }
        SortKey::SymFrom | SortKey::SymTo => {
            let a = e
                .branch
                .as_ref()
                .map(|b| if k == SortKey::SymFrom { b.from } else { b.to });
            match a {
                None => pad("N/A", width),
                Some(a) => branch_sym(data, &a, width),
            }
        }
        SortKey::Cycles => match e.branch.as_deref() {
            None => "N/A".chars().take(width).collect(),
            Some(b) if b.cycles == 0 => pad("-", width),
            Some(b) => pad(&(b.cycles as i16).to_string(), width),
        },
        _ => value_key_text(data, e, k, width),
    }
}

/// perf's `se_snprintf` of the keys of the sample's values.
fn value_key_text(data: &ReportData, e: &Entry, k: SortKey, width: usize) -> String {
    use crate::data_src;
    let v = crate::aggregate::values_of(e);
    // perf's he_stat.nr_events is a u32.
    let nr = e.nr_samples as u32;
    let mem = v.mem.as_ref();
    let src = mem.map_or(NO_DATA_SRC, |m| m.data_src);
    // perf's fixed buffers of the memory keys' texts.
    let cut = |mut s: String, size: usize| {
        crate::truncate_bytes(&mut s, size - 1);
        s
    };
    match k {
        SortKey::LocalWeight => format!("{:<width$}", v.weight),
        SortKey::Weight => format!("{:<width$}", v.weight.wrapping_mul(u64::from(nr))),
        SortKey::LocalInsLat => format!("{:<width$}", v.ins_lat),
        SortKey::InsLat => format!("{:<width$}", u32::from(v.ins_lat).wrapping_mul(nr)),
        SortKey::LocalPStageCyc => format!("{:<width$}", v.p_stage_cyc),
        SortKey::PStageCyc => format!("{:<width$}", u32::from(v.p_stage_cyc).wrapping_mul(nr)),
        SortKey::Transaction => format!("{:<width$}", transaction_text(v.transaction)),
        SortKey::CodePageSize => {
            format!("{:<width$}", crate::dump::page_size_name(v.code_page_size))
        }
        // "%-#*llx" (C's # adds no 0x to a zero).
        SortKey::Addr => match crate::aggregate::entry_ip(e) {
            0 => format!("{:<width$}", 0),
            ip => format!("{:<width$}", format!("{ip:#x}")),
        },
        SortKey::SymDaddr | SortKey::SymIaddr => match mem {
            Some(m) => {
                let a = if k == SortKey::SymDaddr {
                    &m.daddr
                } else {
                    &m.iaddr
                };
                data_sym(data, a, e.level, width)
            }
            None => format!("[{}] {:016x}", e.level as char, 0),
        },
        SortKey::DsoDaddr => match mem.and_then(|m| m.daddr.map) {
            Some(m) => pad(&data.machine.dsos.get(m.dso).shown_name, width),
            None => pad("[unknown]", width),
        },
        // "%.*s" of perf's 10- and 16-byte buffers: cut, not padded.
        SortKey::Locked => cut(data_src::lock(src).to_string(), 10)
            .chars()
            .take(width)
            .collect(),
        SortKey::Blocked => cut(data_src::blocked(src), 16)
            .chars()
            .take(width)
            .collect(),
        // "%-*s" of 64-byte buffers.
        SortKey::Tlb => format!("{:<width$}", cut(data_src::tlb(src), 64)),
        SortKey::Mem => format!("{:<width$}", cut(data_src::level(src), 64)),
        SortKey::Snoop => format!("{:<width$}", cut(data_src::snoop(src), 64)),
        // "[%c] %-#.*llx", padded and cut to the width.
        SortKey::PhysDaddr => {
            let phys = mem.map_or(0, |m| m.phys_addr);
            let text = match phys {
                0 => format!("[{}] {:016x}", e.level as char, 0),
                p => format!("[{}] {p:#018x}", e.level as char),
            };
            pad(&text, width)
        }
        SortKey::DataPageSize => format!(
            "{:<width$}",
            crate::dump::page_size_name(mem.map_or(0, |m| m.data_page_size))
        ),
        _ => String::new(),
    }
}

/// perf's `PERF_MEM_DATA_SRC_NONE`.
const NO_DATA_SRC: u64 = 0x5080021;

/// perf's `_hist_entry__sym_snprintf` of a data or instruction address:
/// the entry's level, then the symbol (a data object's with its offset)
/// or the raw address.
fn data_sym(
    data: &ReportData,
    a: &crate::aggregate::BranchAddr,
    level: u8,
    width: usize,
) -> String {
    let mut s = format!("[{}] ", level as char);
    match (a.sym, a.map) {
        (Some(id), Some(map)) => {
            let sym = &data.syms[id.0 as usize];
            let name = data.strings.get(sym.name);
            if sym.object {
                s.push_str(name);
                s.push_str(&format!(
                    "+0x{:x}",
                    a.addr.wrapping_sub(map.unmap_ip(sym.start))
                ));
            } else {
                s.extend(name.chars().take(width.saturating_sub(4)));
                if sym.inlined {
                    s.push_str(" (inlined)");
                }
            }
        }
        _ if a.addr == 0 => s.push_str(&format!("{:016x}", 0)),
        _ => s.push_str(&format!("{:#018x}", a.addr)),
    }
    s
}

/// perf's `hist_entry__transaction_snprintf`: the names of the set flags,
/// `NEITHER ` for a transaction neither sync nor async, and `:` with the
/// abort code.
fn transaction_text(t: u64) -> String {
    const BITS: [(u64, &str); 8] = [
        (1 << 0, "EL "),
        (1 << 1, "TX "),
        (1 << 2, "SYNC "),
        (1 << 3, "ASYNC "),
        (1 << 4, "RETRY "),
        (1 << 5, "CON "),
        (1 << 6, "CAP-WRITE "),
        (1 << 7, "CAP-READ "),
    ];
    let mut s = String::new();
    for (bit, name) in BITS {
        if t & bit != 0 {
            s.push_str(name);
        }
    }
    if t != 0 && t & (1 << 2 | 1 << 3) == 0 {
        s.push_str("NEITHER ");
    }
    let abort = t >> 32;
    if abort != 0 {
        s.push_str(&format!(":{abort:x}"));
    }
    s
}

/// What perf's `_hist_entry__sym_snprintf` prints before a symbol: with
/// -v, `"%-#*llx %c "` of the address and the DSO's symbol origin; then the
/// level, `[k] ` or `[.] `.
fn sym_prefix(data: &ReportData, map: Option<crate::maps::Map>, addr: u64, level: u8) -> String {
    let level = level as char;
    if !data.options.verbose {
        return format!("[{level}] ");
    }
    let origin = map
        .and_then(|m| data.symtab_origins.get(&m.dso))
        .copied()
        .unwrap_or('!');
    let addr = match addr {
        0 => "0".to_string(),
        a => format!("{a:#x}"),
    };
    format!("{addr:<18} {origin} [{level}] ")
}

/// perf's `_hist_entry__sym_snprintf` for a branch end.
fn branch_sym(data: &ReportData, a: &crate::aggregate::BranchAddr, width: usize) -> String {
    let mut s = sym_prefix(data, a.map, a.al_addr, a.level);
    match (a.sym, a.map) {
        (Some(sym), Some(_)) => {
            let name = data.strings.get(data.syms[sym.0 as usize].name);
            // "%.*s" of the width less what is printed: a negative
            // precision (a column narrower than that) cuts nothing.
            match width.checked_sub(s.len()) {
                Some(room) => s.extend(name.chars().take(room)),
                None => s.push_str(name),
            }
        }
        _ => {
            if a.al_addr == 0 {
                s.push_str("0000000000000000");
            } else {
                s.push_str(&format!("{:#018x}", a.al_addr));
            }
        }
    }
    // Only a name is cut to the width, and nothing is padded: the
    // column's alignment pads it, and the hierarchy's levels print it as
    // it is.
    s
}

/// C's `printf("%*.*d", width, prec, v)`.
fn c_int(v: i32, width: usize, prec: usize) -> String {
    let digits = format!("{:0prec$}", v.unsigned_abs());
    let s = if v < 0 { format!("-{digits}") } else { digits };
    format!("{s:>width$}")
}

fn pct(v: u64, total: u64) -> f64 {
    if total == 0 {
        0.0
    } else {
        v as f64 * 100.0 / total as f64
    }
}

/// Writes one event (or group) section.
fn write_hists(
    out: &mut dyn Write,
    data: &ReportData,
    h: &Hists,
    members: &[usize],
    desc: &str,
) -> io::Result<()> {
    let nr_members = members.len().max(1);
    let grouped = nr_members > 1;
    let relative = data.options.relative;
    // perf's hists__total_period: with --percentage relative, the totals
    // of the entries the filters left.
    let totals: Vec<u64> = if relative {
        // Each member's own entries that its filters leave (perf's
        // total_non_filtered_period): a member's entry is filtered by its
        // own first sample, which may differ from its leader's.
        let period_left = |h: &Hists| -> u64 {
            h.entries
                .iter()
                .filter(|e| visible(e))
                .map(|e| e.period)
                .sum()
        };
        if grouped {
            members
                .iter()
                .map(|&m| data.hists.get(m).map_or(0, period_left))
                .collect()
        } else {
            vec![period_left(h)]
        }
    } else if grouped {
        members
            .iter()
            .map(|&m| data.hists[m].total_period)
            .collect()
    } else {
        vec![h.total_period]
    };
    let mut nr_samples = h.nr_samples;
    let mut total = h.total_period;
    for &m in members.iter().skip(1) {
        nr_samples += data.hists[m].nr_samples;
        total += data.hists[m].total_period;
    }
    if relative {
        // perf 6.1 does not take --symbol-filter's entries out of
        // nr_non_filtered_samples.
        // A group's members count theirs (nr_non_filtered_samples).
        let members =
            std::iter::once(h).chain(members.iter().skip(1).filter_map(|&m| data.hists.get(m)));
        nr_samples = members
            .flat_map(|h| &h.entries)
            .filter(|e| e.filtered == 0)
            .map(|e| e.nr_samples)
            .sum();
        total = totals.iter().sum();
    }
    let (n, unit) = convert_unit(nr_samples);
    let plural = if nr_members > 1 || h.recorded_members > 1 {
        "s"
    } else {
        ""
    };
    // -q: no header lines at all.
    let mut head: Vec<u8> = Vec::new();
    write!(head, "# Samples: {n}{unit} of event{plural} '{desc}'")?;
    if let Some(t) = &data.options.time_str {
        write!(head, " (time slices: {t})")?;
    }
    if data.options.show_ref_callgraph && desc.contains("call-graph=no") {
        write!(head, ", show reference callgraph")?;
    }
    writeln!(head)?;
    if data.options.mem_mode {
        // perf's hists__fprintf_nr_sample_events in memory mode: the
        // periods are the weights, and the sort order as given.
        writeln!(head, "# Total weight : {total}")?;
        let order = data
            .options
            .sort_text
            .as_deref()
            .unwrap_or(crate::aggregate::DEFAULT_MEM_SORT_ORDER);
        writeln!(head, "# Sort order   : {order}")?;
    } else {
        writeln!(head, "# Event count (approx.): {total}")?;
    }
    if let Some(socket) = data.options.socket_filter {
        writeln!(head, "# Processor Socket: {socket}")?;
    }
    writeln!(head, "#")?;

    let fields: Vec<Field> = fields_of(data)
        .into_iter()
        .filter(|f| in_table(data, h, f))
        .collect();
    let w = calc_widths(data, h);
    if data.options.hierarchy {
        let overheads: Vec<(Field, usize)> = fields
            .iter()
            .filter(|f| !matches!(f, Field::Key(_)))
            .map(|&f| {
                let width = match f {
                    Field::ModeOverhead(slot) => mode_width(slot, nr_members),
                    Field::Sample | Field::Period => 12 * nr_members,
                    _ => 8 * nr_members,
                };
                (f, width)
            })
            .collect();
        // perf's hierarchy_recalc_total_periods: the first level's sums,
        // filtered entries included unless --percentage relative.
        let roots = || {
            h.hierarchy_roots
                .iter()
                .map(|&n| &h.hierarchy[n])
                .filter(|n| !relative || n.filtered == 0)
        };
        let totals: Vec<u64> = if grouped {
            (0..nr_members)
                .map(|mi| {
                    roots()
                        .map(|n| n.group_periods.get(mi).copied().unwrap_or(0))
                        .sum()
                })
                .collect()
        } else {
            vec![roots().map(|n| n.period).sum()]
        };
        let levels = data.options.sort.clone();
        // A srcline node's srcline exists when perf compared it: with a
        // sibling (collapsing), or its first entry with another of the
        // same keys before srcline (perf's entries_in). perf 6.1.187 has
        // every one when it refused the kernel's symbols for two samples or
        // more (seen on every fixture; --kallsyms or --symfs turn it
        // around; the mechanism is not known).
        let refused_kernel_samples: u64 = data
            .hists
            .iter()
            .flat_map(|h| &h.entries)
            .filter(|e| e.level == b'k' && e.sym.is_none())
            .map(|e| e.nr_samples)
            .sum();
        let all_known = data.quality.kernel_symbols_refused && refused_kernel_samples >= 2;
        let shared = SharedPrefixes::new(data, &h.entries, SortKey::Srcline, true);
        let mut siblings = vec![h.hierarchy_roots.len(); h.hierarchy.len()];
        for node in &h.hierarchy {
            for &c in &node.children {
                siblings[c] = node.children.len();
            }
        }
        let shown = h
            .hierarchy
            .iter()
            .enumerate()
            .filter(|(_, n)| n.filtered == 0)
            .map(|(i, n)| {
                let e = &h.entries[n.entry];
                let inserted = e.nr_samples.max(e.cg.as_ref().map_or(0, |c| c.acc_count));
                let known = all_known || siblings[i] >= 2 || inserted >= 2 || shared.shared(e);
                (e, Some(levels[n.depth]), known)
            });
        let w = calc_widths_of(data, h, shown);
        let hierarchy = Hierarchy {
            data,
            h,
            w: &w,
            overheads: &overheads,
            levels,
            totals: &totals,
        };
        return hierarchy.write(out, head);
    }
    let sep = data.options.field_sep.as_deref();
    // -w: perf's user widths, by column (0: the default); ignored with -t.
    let user_width = |i: usize, _: &Field| -> Option<usize> {
        let u = *data.options.column_widths.get(i)?;
        (u > 0 && sep.is_none()).then_some(u)
    };
    let overhead_name = || {
        // perf renames the column only without -F.
        if children(data) && data.options.fields.is_none() {
            "Self"
        } else {
            "Overhead"
        }
    };
    let col_width = |i: usize, f: &Field| -> usize {
        let default = match f {
            Field::Children | Field::Overhead => 8 * if grouped { nr_members } else { 1 },
            Field::ModeOverhead(slot) => mode_width(*slot, nr_members),
            Field::Sample | Field::Period => 12 * if grouped { nr_members } else { 1 },
            Field::Key(k) => key_width(*k, &w),
        };
        // perf's hpp__width_fn: a group's members' default widths, and at
        // least the header's length.
        let event_group = grouped || (data.options.group && !data.options.no_group);
        let members = |per: usize| if event_group { per * nr_members } else { 0 };
        match (user_width(i, f), f) {
            (None, _) => default,
            (Some(u), Field::Key(_)) => u,
            (Some(u), Field::Children) => u.max("Children".len()).max(members(8)),
            (Some(u), Field::Overhead) => u.max(overhead_name().len()).max(members(8)),
            (Some(u), Field::ModeOverhead(slot)) => u
                .max(ModePeriods::header(*slot).len())
                .max(members(mode_cell_width(*slot))),
            (Some(u), Field::Sample) => u.max("Samples".len()).max(members(12)),
            (Some(u), Field::Period) => u.max("Period".len()).max(members(12)),
        }
    };
    let mut header = String::from("# ");
    let mut dots = String::from("# ");
    for (i, f) in fields.iter().enumerate() {
        let cw = col_width(i, f);
        if i > 0 {
            header.push_str(sep.unwrap_or("  "));
            dots.push_str("  ");
        }
        match f {
            Field::Children => header.push_str(&format!("{:>cw$}", "Children")),
            Field::Overhead => header.push_str(&format!("{:>cw$}", overhead_name())),
            // perf's `%-*.*s` into a 1024-byte buffer: a user width cuts
            // the header, and so does that buffer (symbols over 1019
            // characters, as Rust's can be).
            Field::Key(SortKey::Field(k)) => header.push_str(&field_header(data, *k, cw)),
            Field::Key(k) => {
                let text = match user_width(i, f) {
                    Some(_) => format!("{:<cw$.cw$}", k.header()),
                    None => format!("{:<cw$}", k.header()),
                };
                header.extend(text.chars().take(PERF_HEADER_FIELD_MAX));
            }
            Field::ModeOverhead(slot) => {
                header.push_str(&format!("{:>cw$}", ModePeriods::header(*slot)))
            }
            Field::Sample => header.push_str(&format!("{:>cw$}", "Samples")),
            Field::Period => header.push_str(&format!("{:>cw$}", "Period")),
        }
        dots.push_str(&".".repeat(cw));
    }
    writeln!(head, "{header}")?;
    if sep.is_none() {
        writeln!(head, "{dots}")?;
        writeln!(head, "#")?;
    }
    if !data.options.quiet {
        out.write_all(&head)?;
    }
    let limit = data.options.percent_limit;
    // perf's hists__fprintf prints each entry into a buffer of the
    // columns' widths with two-space gaps, plus 3 (and -v's address and
    // origin with a symbol column); only without -t does it leave room for
    // colours. An ` (inlined)` symbol can overflow it.
    let verbose_sym =
        data.options.verbose && fields.iter().any(|f| matches!(f, Field::Key(SortKey::Sym)));
    let sep_line_cap = dots.len() - 2 + 3 + if verbose_sym { 3 + 16 } else { 0 };
    let mut line = String::new();
    for e in h.entries.iter().filter(|e| visible(e)) {
        let shown = if children(data) {
            e.acc_period()
        } else {
            e.period
        };
        if limit > 0.0 && pct(shown, totals[0]) < limit {
            continue;
        }
        line.clear();
        if let Some(sep) = sep {
            write_sep_line(&mut line, data, e, &fields, &w, &totals, sep);
            crate::truncate_bytes(&mut line, sep_line_cap);
            writeln!(out, "{line}")?;
            write_callgraph(out, data, h, e, h.total_period)?;
            continue;
        }
        line.push_str("  ");
        for (i, f) in fields.iter().enumerate() {
            if i > 0 {
                line.push_str("  ");
            }
            if let Some(u) = user_width(i, f) {
                let last = i + 1 == fields.len();
                line.push_str(&user_width_cell(
                    data,
                    e,
                    f,
                    u,
                    col_width(i, f),
                    &totals,
                    last,
                ));
                continue;
            }
            match f {
                Field::Overhead => {
                    if grouped {
                        for (mi, t) in totals.iter().enumerate() {
                            let p = e.group_periods().get(mi).copied().unwrap_or(0);
                            line.push_str(&percent_cell(pct(p, *t), 8));
                        }
                    } else {
                        line.push_str(&percent_cell(pct(e.period, totals[0]), 8));
                    }
                }
                Field::ModeOverhead(slot) => line.push_str(&mode_percents(e, *slot, &totals)),
                // perf's `overhead_children` without --children: N/A, in a
                // group's whole column.
                Field::Children if !children(data) => {
                    let cell = format!("{:>8}", "N/A");
                    let last = i + 1 == fields.len();
                    let width = if last { 0 } else { col_width(i, f) };
                    line.push_str(&format!("{cell:<width$}"));
                }
                Field::Children if grouped => {
                    for (mi, t) in totals.iter().enumerate() {
                        let p = e.group_acc().get(mi).copied().unwrap_or(0);
                        line.push_str(&percent_cell(pct(p, *t), 8));
                    }
                }
                Field::Children => line.push_str(&percent_cell(pct(e.acc_period(), totals[0]), 8)),
                Field::Sample | Field::Period => {
                    let (v, g) = if *f == Field::Sample {
                        (e.nr_samples, e.group_samples())
                    } else {
                        (e.period, e.group_periods())
                    };
                    if grouped {
                        for mi in 0..totals.len() {
                            let x = g.get(mi).copied().unwrap_or(0);
                            line.push_str(&format!(" {x:>11}"));
                        }
                    } else {
                        line.push_str(&format!(" {v:>11}"));
                    }
                }
                Field::Key(k) => {
                    let cw = key_width(*k, &w);
                    let v = key_value(data, e, *k, cw);
                    let last = i + 1 == fields.len();
                    if !last
                        && matches!(
                            k,
                            SortKey::Sym
                                | SortKey::SymOff
                                | SortKey::SymFrom
                                | SortKey::SymTo
                                | SortKey::Srcline
                                | SortKey::Srcfile
                                | SortKey::Trace
                                | SortKey::Time
                                | SortKey::Cgroup
                                | SortKey::CgroupId
                                | SortKey::SymDaddr
                                | SortKey::SymIaddr
                                | SortKey::Locked
                                | SortKey::Blocked
                        )
                    {
                        line.push_str(&format!("{v:<cw$}"));
                    } else {
                        line.push_str(&v);
                    }
                }
            }
        }
        writeln!(out, "{line}")?;
        write_callgraph(out, data, h, e, h.total_period)?;
    }
    writeln!(out)?;
    writeln!(out)?;
    Ok(())
}

/// `--hierarchy`'s table of one event (perf's `print_hierarchy_header` and
/// `hist_entry__hierarchy_fprintf`).
struct Hierarchy<'a> {
    data: &'a ReportData,
    h: &'a Hists,
    w: &'a Widths,
    /// The columns before the keys (overhead, -n's samples, periods), with
    /// their widths.
    overheads: &'a [(Field, usize)],
    levels: Vec<SortKey>,
    /// Per group member: the total of percentages.
    totals: &'a [u64],
}

/// perf's HIERARCHY_INDENT.
/// The most characters perf prints of one column's header (its
/// `hists__fprintf_headers` buffer is 1024 bytes).
const PERF_HEADER_FIELD_MAX: usize = 1023;

const HIERARCHY_INDENT: usize = 3;

/// The length of perf's string of dots for `--hierarchy` headers.
const HIERARCHY_DOTS: usize = 207;

impl Hierarchy<'_> {
    /// The indent for the levels below the first, before the keys.
    fn key_indent(&self) -> usize {
        self.levels.len().saturating_sub(1) * HIERARCHY_INDENT
    }

    fn write(&self, out: &mut dyn Write, mut head: Vec<u8>) -> io::Result<()> {
        let data = self.data;
        let sep = data.options.field_sep.as_deref();
        // perf's print_hierarchy_indent prints nothing with -t.
        let indent = if sep.is_some() { 0 } else { self.key_indent() };
        let mut header = format!("# {}", " ".repeat(indent));
        for (f, width) in self.overheads {
            let name = match f {
                Field::Sample => "Samples",
                Field::Period => "Period",
                Field::ModeOverhead(slot) => ModePeriods::header(*slot),
                _ => "Overhead",
            };
            header.push_str(&format!("{name:>width$}{}", sep.unwrap_or("  ")));
        }
        let names: Vec<&str> = self
            .levels
            .iter()
            .map(|k| match k {
                SortKey::Field(i) => data
                    .options
                    .dynamic
                    .get(*i as usize)
                    .map_or("", |d| d.field.name.as_str()),
                k => k.header().trim(),
            })
            .collect();
        let names = names.join(" / ");
        header.push_str(&names);
        let mut dots = format!("# {}", ".".repeat(indent.min(HIERARCHY_DOTS)));
        let columns: Vec<String> = self.overheads.iter().map(|(_, w)| ".".repeat(*w)).collect();
        dots.push_str(&columns.join(sep.unwrap_or("..")));
        let widest = self
            .levels
            .iter()
            .enumerate()
            .map(|(depth, &k)| depth * HIERARCHY_INDENT + key_width(k, self.w))
            .max()
            .unwrap_or(0);
        dots.push_str(sep.unwrap_or("  "));
        // perf prints these from a 207-dot string ("%.*s").
        dots.push_str(&".".repeat(widest.max(names.len()).min(HIERARCHY_DOTS)));
        writeln!(head, "{header}")?;
        writeln!(head, "{dots}")?;
        writeln!(head, "#")?;
        if !data.options.quiet {
            out.write_all(&head)?;
        }
        for &n in &self.h.hierarchy_roots {
            self.write_node(out, n)?;
        }
        writeln!(out)?;
        writeln!(out)?;
        Ok(())
    }

    /// Above `--percent-limit`.
    fn above_limit(&self, n: usize) -> bool {
        let limit = self.data.options.percent_limit;
        limit <= 0.0 || pct(self.h.hierarchy[n].period, self.totals[0]) >= limit
    }

    fn write_node(&self, out: &mut dyn Write, n: usize) -> io::Result<()> {
        let data = self.data;
        let node = &self.h.hierarchy[n];
        // perf's __rb_hierarchy_next walks every node: a hidden one's
        // children still print.
        if node.filtered != 0 || !self.above_limit(n) {
            for &c in &node.children {
                self.write_node(out, c)?;
            }
            return Ok(());
        }
        let e = &self.h.entries[node.entry];
        let mut line = " ".repeat(node.depth * HIERARCHY_INDENT);
        if let Some(sep) = data.options.field_sep.as_deref() {
            self.write_sep_node(&mut line, n, sep);
        } else {
            self.write_columns(&mut line, n);
        }
        writeln!(out, "{line}")?;
        if node.depth + 1 == self.levels.len() {
            // perf's hierarchy takes hists__total_period (--percentage
            // relative: the shown entries'), the flat output the total.
            return write_callgraph(out, data, self.h, e, self.totals[0]);
        }
        // perf's hist_entry__has_hierarchy_children: the first child
        // not filtered out, above the limit.
        let first = node
            .children
            .iter()
            .find(|&&c| self.h.hierarchy[c].filtered == 0);
        if !first.is_some_and(|&c| self.above_limit(c)) {
            let overhead_width: usize =
                self.overheads.iter().map(|(_, w)| w + 2).sum::<usize>() - 2;
            // print_hierarchy_indent prints nothing with -t.
            let levels_indent = match data.options.field_sep {
                Some(_) => 0,
                None => (self.levels.len() + node.depth) * HIERARCHY_INDENT,
            };
            let pad = levels_indent + overhead_width + 4;
            writeln!(
                out,
                "{}no entry >= {:.2}%",
                " ".repeat(pad),
                data.options.percent_limit
            )?;
        }
        for &c in &node.children {
            self.write_node(out, c)?;
        }
        Ok(())
    }

    /// The values of overhead column `f` of node `n`, one per group member
    /// (one without a group).
    fn node_cells(&self, n: usize, f: Field) -> Vec<NodeCell> {
        let node = &self.h.hierarchy[n];
        let grouped = self.totals.len() > 1;
        let totals = self.totals.iter();
        match f {
            Field::ModeOverhead(slot) => totals
                .enumerate()
                .map(|(mi, t)| {
                    let p = match node.group_mode_periods.get(mi) {
                        Some(m) => m.0[slot],
                        None => node.mode_periods.0[slot],
                    };
                    NodeCell::Percent(pct(p, *t))
                })
                .collect(),
            Field::Sample | Field::Period => {
                let (v, g) = if f == Field::Sample {
                    (node.nr_samples, &node.group_samples)
                } else {
                    (node.period, &node.group_periods)
                };
                if grouped {
                    g.iter().map(|&x| NodeCell::Count(x)).collect()
                } else {
                    vec![NodeCell::Count(v)]
                }
            }
            _ if grouped => node
                .group_periods
                .iter()
                .zip(totals)
                .map(|(p, t)| NodeCell::Percent(pct(*p, *t)))
                .collect(),
            _ => vec![NodeCell::Percent(pct(node.period, self.totals[0]))],
        }
    }

    /// Node `n`'s line with `-t SEP` after its indent (perf's
    /// `hist_entry__hierarchy_fprintf` with `field_sep`): each overhead
    /// column unpadded after one space, then padded to its width; the key
    /// after SEP, its leading blanks skipped, SEP's first character in it
    /// replaced by '.'.
    fn write_sep_node(&self, line: &mut String, n: usize, sep: &str) {
        let node = &self.h.hierarchy[n];
        for (i, &(f, width)) in self.overheads.iter().enumerate() {
            if i > 0 {
                line.push_str(sep);
            }
            let cell: String = self
                .node_cells(n, f)
                .into_iter()
                .map(|c| match c {
                    NodeCell::Percent(p) => format!(" {p:.2}%"),
                    NodeCell::Count(v) => format!(" {v}"),
                })
                .collect();
            line.push_str(&format!("{cell:<width$}"));
        }
        line.push_str(sep);
        let e = &self.h.entries[node.entry];
        let k = self.levels[node.depth];
        let mut v = key_value(self.data, e, k, key_width(k, self.w));
        if let Some(c) = sep.chars().next() {
            v = v.replace(c, ".");
        }
        line.push_str(v.trim_start());
    }

    /// Node `n`'s columns after its indent, without `-t`.
    fn write_columns(&self, line: &mut String, n: usize) {
        let node = &self.h.hierarchy[n];
        for &(f, _) in self.overheads {
            line.push_str("  ");
            let percent_width = match f {
                Field::ModeOverhead(slot) => mode_cell_width(slot),
                _ => 8,
            };
            for c in self.node_cells(n, f) {
                match c {
                    NodeCell::Percent(p) => line.push_str(&percent_cell(p, percent_width)),
                    NodeCell::Count(v) => line.push_str(&format!(" {v:>11}")),
                }
            }
        }
        line.push_str(&" ".repeat(self.key_indent()));
        line.push_str("  ");
        let e = &self.h.entries[node.entry];
        let k = self.levels[node.depth];
        line.push_str(key_value(self.data, e, k, key_width(k, self.w)).trim_start());
    }
}

/// One group member's value in a `--hierarchy` overhead column.
enum NodeCell {
    Percent(f64),
    Count(u64),
}

/// A cell of a column with a `-w` width `user` (perf's `hpp__fmt` with
/// `user_len`: each group member in that width; padded to the column's
/// `width` by `hist_entry__snprintf_alignment`). A key's own `snprintf`
/// cuts its text to the width, a symbol's name only when the width holds
/// the `[.] ` before it (perf's unsigned `width - 4`).
fn user_width_cell(
    data: &ReportData,
    e: &Entry,
    f: &Field,
    user: usize,
    width: usize,
    totals: &[u64],
    last: bool,
) -> String {
    let grouped = totals.len() > 1;
    let percents = |own: u64, group: &[u64]| -> String {
        let p = user.saturating_sub(2);
        totals
            .iter()
            .enumerate()
            .map(|(mi, t)| {
                let v = if grouped {
                    group.get(mi).copied().unwrap_or(0)
                } else {
                    own
                };
                format!(" {:>p$.2}%", pct(v, *t))
            })
            .collect()
    };
    let numbers = |own: u64, group: &[u64]| -> String {
        let p = user.saturating_sub(1);
        if grouped {
            group.iter().map(|v| format!(" {v:>p$}")).collect()
        } else {
            format!(" {own:>p$}")
        }
    };
    let cell = match f {
        Field::Children if !children(data) => format!("{:>user$}", "N/A"),
        Field::Children => percents(e.acc_period(), e.group_acc()),
        Field::Overhead => percents(e.period, e.group_periods()),
        Field::ModeOverhead(slot) => {
            let group: Vec<u64> = (0..totals.len())
                .map(|mi| mode_period(e, *slot, mi))
                .collect();
            percents(mode_period(e, *slot, 0), &group)
        }
        Field::Sample => numbers(e.nr_samples, e.group_samples()),
        Field::Period => numbers(e.period, e.group_periods()),
        Field::Key(k) => {
            let mut v = key_value(data, e, *k, user);
            let symbol = matches!(k, SortKey::Sym | SortKey::SymOff) && e.sym.is_some();
            if symbol && user >= 4 {
                v = v.chars().take(user).collect();
            }
            if last {
                return v;
            }
            v
        }
    };
    format!("{cell:<width$}")
}

/// The width of one group member's cell in a cpumode overhead column: at
/// least its header's ("guest sys").
fn mode_cell_width(slot: usize) -> usize {
    ModePeriods::header(slot).len().max(8)
}

/// The width of a cpumode overhead column.
fn mode_width(slot: usize, nr_members: usize) -> usize {
    mode_cell_width(slot) * nr_members.max(1)
}

/// An entry's period in a cpumode, for group member `member` (0 without a
/// group).
fn mode_period(e: &Entry, slot: usize, member: usize) -> u64 {
    match e.group_mode_periods().get(member) {
        Some(m) => m.0[slot],
        None if member == 0 => e.mode_periods.as_ref().map_or(0, |m| m.0[slot]),
        None => 0,
    }
}

/// A cpumode overhead column's text: one percentage per group member.
fn mode_percents(e: &Entry, slot: usize, totals: &[u64]) -> String {
    mode_cells(slot, totals, |mi| mode_period(e, slot, mi))
}

/// A cpumode column's cells: `period(member)` as a percentage of each
/// member's total.
fn mode_cells(slot: usize, totals: &[u64], period: impl Fn(usize) -> u64) -> String {
    let cw = mode_cell_width(slot);
    totals
        .iter()
        .enumerate()
        .map(|(mi, t)| percent_cell(pct(period(mi), *t), cw))
        .collect()
}

/// perf's `hpp__fmt` of a percentage in a column `width` wide: a space,
/// the number in `width - 2`, the sign; wider numbers (over 999.99%, a
/// `--children` total with `--sort time`) push the line right.
fn percent_cell(percent: f64, width: usize) -> String {
    format!(" {:>w$.2}%", percent, w = width.saturating_sub(2))
}

/// One entry with `-t SEP` (perf's `hist_entry__snprintf` with
/// `field_sep`): numbers unpadded after one space, every column but the
/// last padded to its width, SEP's first character in values replaced by
/// '.'.
fn write_sep_line(
    line: &mut String,
    data: &ReportData,
    e: &Entry,
    fields: &[Field],
    w: &Widths,
    totals: &[u64],
    sep: &str,
) {
    let sep_char = sep.chars().next();
    for (i, f) in fields.iter().enumerate() {
        if i > 0 {
            line.push_str(sep);
        }
        let (v, width) = match f {
            Field::Overhead => {
                let mut v = String::new();
                for (mi, t) in totals.iter().enumerate() {
                    let p = if totals.len() > 1 {
                        e.group_periods().get(mi).copied().unwrap_or(0)
                    } else {
                        e.period
                    };
                    v.push_str(&format!(" {:.2}%", pct(p, *t)));
                }
                (v, 8 * totals.len())
            }
            Field::ModeOverhead(slot) => {
                let mut v = String::new();
                for (mi, t) in totals.iter().enumerate() {
                    v.push_str(&format!(" {:.2}%", pct(mode_period(e, *slot, mi), *t)));
                }
                (v, mode_width(*slot, totals.len()))
            }
            Field::Children if !children(data) => (" N/A".to_string(), 8),
            Field::Children if totals.len() > 1 => {
                let mut v = String::new();
                for (mi, t) in totals.iter().enumerate() {
                    let p = e.group_acc().get(mi).copied().unwrap_or(0);
                    v.push_str(&format!(" {:.2}%", pct(p, *t)));
                }
                (v, 8 * totals.len())
            }
            Field::Children => (format!(" {:.2}%", pct(e.acc_period(), totals[0])), 8),
            Field::Sample | Field::Period => {
                let (v, g) = if *f == Field::Sample {
                    (e.nr_samples, e.group_samples())
                } else {
                    (e.period, e.group_periods())
                };
                if totals.len() > 1 {
                    let mut s = String::new();
                    for mi in 0..totals.len() {
                        s.push_str(&format!(" {}", g.get(mi).copied().unwrap_or(0)));
                    }
                    (s, 12 * totals.len())
                } else {
                    (format!(" {v}"), 12)
                }
            }
            Field::Key(k) => {
                let cw = key_width(*k, w);
                let mut v = key_value(data, e, *k, cw);
                if let Some(c) = sep_char {
                    v = v.replace(c, ".");
                }
                (v, cw)
            }
        };
        let last = i + 1 == fields.len();
        if last {
            line.push_str(&v);
        } else {
            line.push_str(&format!("{v:<width$}"));
        }
    }
}

/// The two lines perf report starts its output with.
pub const HEADER_HINT: &str =
    "# To display the perf.data header info, please use --header/--header-only options.\n#\n";

/// No event has a sample left (perf's "data has no samples" error).
pub fn no_samples(data: &ReportData) -> bool {
    data.options.no_samples_shown || data.hists.iter().all(|h| h.nr_samples == 0)
}

/// Writes the whole report as `perf report --stdio` does.
pub fn write_report(out: &mut dyn Write, data: &ReportData) -> io::Result<()> {
    let quiet = data.options.quiet;
    if quiet && data.options.no_samples_shown {
        return Ok(());
    }
    if !quiet {
        out.write_all(HEADER_HINT.as_bytes())?;
        // perf stops with an error: --sort parent without callchains
        // before the elided keys' lines, no samples and -g without
        // callchains after them.
        if data.options.parent_no_callchain {
            return Ok(());
        }
        for (k, v) in data.options.elided_keys() {
            let name = match k {
                SortKey::Comm => "comm",
                SortKey::Dso => "dso",
                _ => "symbol",
            };
            writeln!(out, "# {name}: {v}")?;
        }
        if no_samples(data) || data.options.callgraph_missing {
            return Ok(());
        }
        writeln!(out, "#")?;
        writeln!(out, "# Total Lost Samples: {}", data.total_lost_samples)?;
        writeln!(out, "#")?;
    }
    match &data.groups {
        Some(groups) => {
            for g in groups {
                let leader = g.members[0];
                let h = &data.hists[leader];
                // perf's skip_empty looks at the leader's own samples: a
                // group whose leader got none is left out, members' too.
                if h.nr_samples == 0 {
                    continue;
                }
                write_hists(out, data, h, &g.members, &g.desc)?;
            }
        }
        None => {
            for h in &data.hists {
                if h.nr_samples == 0 {
                    continue;
                }
                write_hists(out, data, h, &[], &h.name)?;
            }
        }
    }
    if !quiet {
        writeln!(out, "#")?;
        writeln!(
            out,
            "# (Tip: To record callchains for each sample: perf record -g)"
        )?;
        writeln!(out, "#")?;
    }
    if data.options.show_threads {
        write_thread_values(out, &data.thread_values)?;
    }
    Ok(())
}

/// perf's `perf_read_values__display_pretty`.
fn write_thread_values(out: &mut dyn Write, v: &crate::aggregate::ThreadValues) -> io::Result<()> {
    let mut pid_w = 3;
    let mut tid_w = 3;
    let mut widths: Vec<usize> = v.counters.iter().map(|(_, n)| n.len()).collect();
    for (pid, tid, values) in &v.threads {
        pid_w = pid_w.max((*pid as i32).to_string().len());
        tid_w = tid_w.max((*tid as i32).to_string().len());
        for (w, x) in widths.iter_mut().zip(values) {
            *w = (*w).max(x.to_string().len());
        }
    }
    write!(out, "# {:>pid_w$}  {:>tid_w$}", "PID", "TID")?;
    for ((_, name), w) in v.counters.iter().zip(&widths) {
        write!(out, "  {name:>w$}")?;
    }
    writeln!(out)?;
    for (pid, tid, values) in &v.threads {
        write!(out, "  {:>pid_w$}  {:>tid_w$}", *pid as i32, *tid as i32)?;
        for (c, w) in widths.iter().enumerate() {
            write!(out, "  {:>w$}", values.get(c).copied().unwrap_or(0))?;
        }
        writeln!(out)?;
    }
    Ok(())
}

/// Quality notes for stderr: samples without map or symbol, lost and
/// throttled samples, with how to fix them. Empty when all is well.
pub fn quality_notes(data: &ReportData) -> Vec<String> {
    let q = &data.quality;
    let mut v = Vec::new();
    if q.samples > 0 && q.no_map > 0 {
        v.push(format!(
            "{} of {} samples ({:.1}%) hit no known mapping (shown as [unknown]): the MMAP records were lost or the process started before recording",
            q.no_map,
            q.samples,
            pct(q.no_map, q.samples)
        ));
    }
    if q.samples > 0 && q.no_symbol > 0 {
        v.push(format!(
            "{} of {} samples ({:.1}%) have no symbol (shown as raw addresses): install the binaries' debug info (-dbg/-dbgsym packages) or point --symfs at a copy of the recording machine's files",
            q.no_symbol,
            q.samples,
            pct(q.no_symbol, q.samples)
        ));
    }
    if q.lost_samples > 0 || q.lost_events > 0 {
        v.push(format!(
            "{} samples and {} events were lost while recording: record with a lower frequency (-F) or bigger buffers (-m)",
            q.lost_samples, q.lost_events
        ));
    }
    if q.throttled > 0 {
        v.push(format!(
            "sampling was throttled {} times: the kernel limited the sample rate (see /proc/sys/kernel/perf_event_max_sample_rate)",
            q.throttled
        ));
    }
    if q.proc_map_timeouts > 0 {
        v.push(format!(
            "the maps of {} processes running before the recording were not all read (the recorder's /proc/PID/maps timeout ran out): samples in the missing maps stay unresolved; record again with a longer --proc-map-timeout",
            q.proc_map_timeouts
        ));
    }
    if q.unknown_id > 0 {
        v.push(format!(
            "{} samples belong to no event of the file and were skipped",
            q.unknown_id
        ));
    }
    if q.bad_samples > 0 {
        v.push(format!(
            "{} samples could not be decoded and were skipped",
            q.bad_samples
        ));
    }
    for d in data.symbolizer.diagnostics() {
        v.push(d.to_string());
    }
    v
}

#[cfg(test)]
mod tests {
    use super::percent_cell;

    /// perf 6.1 on a `-g` file with `--sort time` (children above 999.99%):
    /// `   1286.26%    54.11%  68160.300000`, the wide number pushing its
    /// line one column right.
    #[test]
    fn percentages_overflow_their_column_like_perf() {
        assert_eq!(percent_cell(54.11, 8), "  54.11%");
        assert_eq!(percent_cell(100.0, 8), " 100.00%");
        assert_eq!(percent_cell(1286.26, 8), " 1286.26%");
        assert_eq!(percent_cell(0.0, 9), "    0.00%");
    }
}
