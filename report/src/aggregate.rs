//! Sample aggregation: perf 6.1's `hists` for `perf report`.
//!
//! [`build`] walks a file's records in delivery order, keeps the
//! [`Machine`] timeline up to date, resolves every
//! sample to thread, map and symbol, and adds its period to the hist entry of
//! its sort key values, one table per event. Entries are keyed by small
//! integers (interned comm, DSO name, symbol ids), so the hot path does not
//! allocate; each distinct (DSO, address) is symbolized once.
//!
//! Entry order follows perf's `hists__output_resort`: by period descending,
//! then by each sort key's `se_sort` in order; entries still equal keep the
//! order of perf's collapsed tree (each key's `se_cmp`).

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::cmp::Ordering;
use std::path::PathBuf;

use prec_format::attr::{attr_type, flags as af};
use prec_format::constants::sample_type as st;
use prec_format::features::{self, Feature};
use prec_format::record::Record;
use prec_format::{Attr, FeatureId, PerfFile, RecordType};

use crate::callchain::{Callchains, ChainFrame, ChainParams, FrameToken, Order, FRAME_SLOTS};
use crate::callgraph::{Appended, CallTree, CursorFrame, Frames, IpSpan, WalkMemo, OWN};
use crate::maps::{DsoId, DsoKind, Map};
use crate::permute::permute;
use crate::read_ahead::{Delivered, ReadAhead};
use crate::replay::{Check, Effect, RawOutcome, SampleReplay, Trees, NO_NODE};
use crate::symbolize::{BinaryId, FileLoader, Symbolizer, SymbolizerOptions};
use crate::tasks::{CommId, Machine, ThreadId};

/// A `--sort` key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SortKey {
    Comm,
    /// perf's `pid` key (shows `tid:comm`).
    Pid,
    /// prec extension: same as `pid`.
    Tid,
    Dso,
    Sym,
    /// prec extension: `sym+0xoff`.
    SymOff,
    Srcline,
    Srcfile,
    Cpu,
    /// The CPU's socket (package) from the CPU_TOPOLOGY header.
    Socket,
    Parent,
    /// Branch mode: the branch source's DSO.
    DsoFrom,
    /// Branch mode: the branch target's DSO.
    DsoTo,
    /// Branch mode: the branch source's symbol.
    SymFrom,
    /// Branch mode: the branch target's symbol.
    SymTo,
    /// Branch mode: the basic block's cycles.
    Cycles,
    /// A tracepoint's trace output (perf's default key when every event
    /// is a tracepoint).
    Trace,
    /// The sample's time, rounded down to `--time-quantum`.
    Time,
    /// The symbol's size (`symbol_size`).
    SymSize,
    /// The size of the sample's mapping (`dso_size`).
    DsoSize,
    /// perf's `ipc_null`: perf report appends it to a `--sort` list that
    /// contains the word `symbol` (outside branch mode). It splits entries
    /// like `sym` (so `--sort symbol_size` keeps one row per symbol) and
    /// shows no IPC.
    IpcNull,
    /// The sample's cgroup (`cgroup`): its path from the CGROUP records,
    /// `N/A` without one (`perf record --all-cgroups`).
    Cgroup,
    /// The (dev, inode) of the sample thread's cgroup namespace
    /// (`cgroup_id`), from its last NAMESPACES record (`perf record
    /// --namespaces`), 0/0x0 without one.
    CgroupId,
    /// The sample's weight (`local_weight`: PERF_SAMPLE_WEIGHT, or the
    /// first 32 bits of WEIGHT_STRUCT).
    LocalWeight,
    /// `weight`: the same key, shown times the entry's samples.
    Weight,
    /// `local_ins_lat`: the instruction latency (WEIGHT_STRUCT's bits
    /// 32-47).
    LocalInsLat,
    /// `ins_lat`: the same key, shown times the entry's samples.
    InsLat,
    /// `local_p_stage_cyc`: the pipeline stage cycles (WEIGHT_STRUCT's
    /// bits 48-63). perf 6.1 on x86 drops it from `--sort` (its
    /// `arch_support_sort_key`), but shows it as a `-F` field.
    LocalPStageCyc,
    /// `p_stage_cyc`: the same, shown times the entry's samples.
    PStageCyc,
    /// `transaction`: the sample's PERF_SAMPLE_TRANSACTION flags.
    Transaction,
    /// `code_page_size`: PERF_SAMPLE_CODE_PAGE_SIZE.
    CodePageSize,
    /// `addr`: the sample's instruction address.
    Addr,
    /// Memory mode: the data address and its symbol (`symbol_daddr`).
    SymDaddr,
    /// Memory mode: the instruction address and its symbol
    /// (`symbol_iaddr`).
    SymIaddr,
    /// Memory mode: the data address's DSO (`dso_daddr`).
    DsoDaddr,
    /// Memory mode: the data source's lock bits (`locked`).
    Locked,
    /// Memory mode: the data source's TLB bits (`tlb`).
    Tlb,
    /// Memory mode: the data source's memory level bits (`mem`).
    Mem,
    /// Memory mode: the data source's snoop bits (`snoop`).
    Snoop,
    /// Memory mode: the data address's physical address (`phys_daddr`).
    PhysDaddr,
    /// Memory mode: the data address's page size (`data_page_size`).
    DataPageSize,
    /// Memory mode: the data source's blocking bits (`blocked`).
    Blocked,
    /// A tracepoint field (perf's dynamic sort entry): its index in
    /// [`Options::dynamic`].
    Field(u16),
}

/// A `--sort` key naming a tracepoint field: perf's dynamic sort entry.
/// It splits, orders and shows only the entries of its event; the other
/// events' tables leave its column out.
#[derive(Clone, Debug)]
pub struct DynamicKey {
    /// The event's index in the file's attrs.
    pub attr_index: usize,
    pub field: crate::tracepoint::FieldKey,
    /// `FIELD/raw` or `--raw-trace`: the value as the field prints alone,
    /// not as the event's trace output shows it.
    pub raw: bool,
}

/// Whether perf's get_default_sort_order sees a file of tracepoints only
/// (`trace` order): it looks before reading any record, so a pipe (whose
/// events come as records) never is.
pub fn tracepoints_only(file: &PerfFile<'_>) -> bool {
    let attrs = file.attrs();
    file.mode() == prec_format::read::Mode::File
        && !attrs.is_empty()
        && attrs.iter().all(|a| a.attr.type_ == attr_type::TRACEPOINT)
}

/// A sample's values of the tracepoint field keys, as one interned string
/// (an entry's [`Entry::fields`]): per [`Options::dynamic`] key the field's
/// bytes in hex, which keeps the order of perf's `memcmp` of them, and
/// the text shown, marked by whether it came from the event's trace output
/// (perf widens the column by those only). Keys of other events are empty.
pub struct EntryFields;

/// Marks of [`EntryFields`] texts: from the trace output, or printed from
/// the field alone.
const FROM_TRACE: char = '=';
const FROM_FIELD: char = '~';

impl EntryFields {
    /// The values of a raw record of event `attr_index`; `trace` is its
    /// trace output.
    fn of(
        tracepoints: &crate::tracepoint::Tracepoints,
        dynamic: &[DynamicKey],
        attr_index: usize,
        raw: &[u8],
        trace: Option<&str>,
    ) -> String {
        use std::fmt::Write;
        let mut bytes = String::new();
        let mut texts = String::new();
        for (i, d) in dynamic.iter().enumerate() {
            if i > 0 {
                bytes.push('|');
            }
            texts.push('\x1f');
            if d.attr_index != attr_index {
                continue;
            }
            for b in tracepoints.field_bytes(&d.field, raw) {
                let _ = write!(bytes, "{b:02x}");
            }
            // perf's __sort__hde_entry: the word of the trace output that
            // starts with the field's name, else the field printed alone.
            match trace
                .filter(|_| !d.raw)
                .and_then(|t| trace_word(t, &d.field.name))
            {
                Some(word) => {
                    texts.push(FROM_TRACE);
                    texts.push_str(word);
                }
                None => {
                    texts.push(FROM_FIELD);
                    texts.push_str(&tracepoints.field_text(&d.field, raw));
                }
            }
        }
        bytes + &texts
    }

    /// Key `i`'s bytes, in hex.
    pub fn bytes(fields: &str, i: usize) -> &str {
        let bytes = fields.split('\x1f').next().unwrap_or("");
        bytes.split('|').nth(i).unwrap_or("")
    }

    /// Key `i`'s text, and whether it came from the trace output.
    pub fn text(fields: &str, i: usize) -> (&str, bool) {
        let text = fields.split('\x1f').nth(i + 1).unwrap_or("");
        match text.strip_prefix(FROM_TRACE) {
            Some(t) => (t, true),
            None => (text.strip_prefix(FROM_FIELD).unwrap_or(text), false),
        }
    }
}

/// The value in the first space-separated word of `trace` that starts
/// with `name`: what follows the name and one more character (the `=`).
fn trace_word<'t>(trace: &'t str, name: &str) -> Option<&'t str> {
    let word = trace.split(' ').find(|w| w.starts_with(name))?;
    Some(word.get(name.len() + 1..).unwrap_or(""))
}

/// perf's `add_dynamic_entry`: the sort keys a `--sort` name that is no
/// sort key of perf's makes of the file's tracepoint fields, added to
/// `dynamic`. The name is `FIELD`, `EVENT.FIELD` or `EVENT.*` (EVENT: a
/// full name, a part of one name, or `%N`, the Nth event), or
/// `trace_fields` for every field of every tracepoint, each optionally with
/// `/raw`. `None` where it names none.
pub fn dynamic_keys(
    file: &PerfFile<'_>,
    tracepoints: Option<&crate::tracepoint::Tracepoints>,
    name: &str,
    raw_trace: bool,
    dynamic: &mut Vec<DynamicKey>,
) -> Option<Vec<SortKey>> {
    // perf sets its keys up before a pipe's events arrive.
    if file.mode() == prec_format::read::Mode::Pipe {
        return None;
    }
    let tracepoints = tracepoints?;
    let (event, field) = match name.split_once('.') {
        Some((e, f)) => (Some(e), f),
        None => (None, name),
    };
    let (field, raw) = match field.split_once('/') {
        Some((f, "raw")) => (f, true),
        Some(_) => return None,
        None => (field, raw_trace),
    };
    let attrs = file.attrs();
    let names = event_names(file);
    let is_tracepoint = |i: usize| attrs[i].attr.type_ == attr_type::TRACEPOINT;
    let mut found: Vec<(usize, crate::tracepoint::FieldKey)> = Vec::new();
    if field == "trace_fields" {
        for i in (0..attrs.len()).filter(|&i| is_tracepoint(i)) {
            let fields = tracepoints.own_fields(attrs[i].attr.config);
            found.extend(fields.into_iter().map(|f| (i, f)));
        }
    } else if let Some(event) = event {
        // perf's find_evsel.
        let i = if let Some(n) = event.strip_prefix('%') {
            let n: usize = n.parse().ok()?;
            n.checked_sub(1).filter(|&i| i < attrs.len())?
        } else if event.contains(':') {
            names.iter().position(|n| n == event)?
        } else {
            let mut matching = names.iter().enumerate().filter(|(_, n)| n.contains(event));
            let (i, _) = matching.next()?;
            if matching.next().is_some() {
                return None;
            }
            i
        };
        if !is_tracepoint(i) {
            return None;
        }
        let id = attrs[i].attr.config;
        if field == "*" {
            found.extend(tracepoints.own_fields(id).into_iter().map(|f| (i, f)));
        } else {
            found.push((i, tracepoints.field(id, field)?));
        }
    } else {
        for i in (0..attrs.len()).filter(|&i| is_tracepoint(i)) {
            if let Some(f) = tracepoints.field(attrs[i].attr.config, field) {
                found.push((i, f));
            }
        }
        if found.is_empty() {
            return None;
        }
    }
    Some(
        found
            .into_iter()
            .map(|(attr_index, field)| {
                // perf shows a field named twice once (`__sort__hde_equal`).
                let same = |d: &DynamicKey| d.attr_index == attr_index && d.field == field;
                let i = dynamic.iter().position(same).unwrap_or_else(|| {
                    dynamic.push(DynamicKey {
                        attr_index,
                        field,
                        raw,
                    });
                    dynamic.len() - 1
                });
                SortKey::Field(i as u16)
            })
            .collect(),
    )
}

/// Which of perf's tables of sort keys a key is in: a branch key counts
/// only in branch mode, a memory key only in memory mode (`--mem-mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyMode {
    Any,
    Branch,
    Memory,
}

/// perf 6.1's sort dimensions in the order `sort_dimension__add` tries
/// them (common, then the output fields, then branch, then memory keys),
/// for its prefix match. The output fields are `None` here ([`Field`]
/// parses them); `ipc_null`, `ipc_lbr`, `mispredict`, `in_tx`, `abort`,
/// `srcline_from`, `srcline_to`, `addr_from`, `addr_to` and `dcacheline`
/// have no key in prec.
const PERF_KEYS: &[(&str, Option<SortKey>, KeyMode)] = &[
    ("pid", Some(SortKey::Pid), KeyMode::Any),
    ("comm", Some(SortKey::Comm), KeyMode::Any),
    ("dso", Some(SortKey::Dso), KeyMode::Any),
    ("symbol", Some(SortKey::Sym), KeyMode::Any),
    ("parent", Some(SortKey::Parent), KeyMode::Any),
    ("cpu", Some(SortKey::Cpu), KeyMode::Any),
    ("socket", Some(SortKey::Socket), KeyMode::Any),
    ("srcline", Some(SortKey::Srcline), KeyMode::Any),
    ("srcfile", Some(SortKey::Srcfile), KeyMode::Any),
    ("local_weight", Some(SortKey::LocalWeight), KeyMode::Any),
    ("weight", Some(SortKey::Weight), KeyMode::Any),
    ("transaction", Some(SortKey::Transaction), KeyMode::Any),
    ("trace", Some(SortKey::Trace), KeyMode::Any),
    ("symbol_size", Some(SortKey::SymSize), KeyMode::Any),
    ("dso_size", Some(SortKey::DsoSize), KeyMode::Any),
    ("cgroup", Some(SortKey::Cgroup), KeyMode::Any),
    ("cgroup_id", Some(SortKey::CgroupId), KeyMode::Any),
    ("ipc_null", None, KeyMode::Any),
    ("time", Some(SortKey::Time), KeyMode::Any),
    ("code_page_size", Some(SortKey::CodePageSize), KeyMode::Any),
    ("local_ins_lat", Some(SortKey::LocalInsLat), KeyMode::Any),
    ("ins_lat", Some(SortKey::InsLat), KeyMode::Any),
    (
        "local_p_stage_cyc",
        Some(SortKey::LocalPStageCyc),
        KeyMode::Any,
    ),
    ("p_stage_cyc", Some(SortKey::PStageCyc), KeyMode::Any),
    ("addr", Some(SortKey::Addr), KeyMode::Any),
    ("overhead", None, KeyMode::Any),
    ("overhead_sys", None, KeyMode::Any),
    ("overhead_us", None, KeyMode::Any),
    ("overhead_guest_sys", None, KeyMode::Any),
    ("overhead_guest_us", None, KeyMode::Any),
    ("overhead_children", None, KeyMode::Any),
    ("sample", None, KeyMode::Any),
    ("period", None, KeyMode::Any),
    ("dso_from", Some(SortKey::DsoFrom), KeyMode::Branch),
    ("dso_to", Some(SortKey::DsoTo), KeyMode::Branch),
    ("symbol_from", Some(SortKey::SymFrom), KeyMode::Branch),
    ("symbol_to", Some(SortKey::SymTo), KeyMode::Branch),
    ("mispredict", None, KeyMode::Branch),
    ("in_tx", None, KeyMode::Branch),
    ("abort", None, KeyMode::Branch),
    ("cycles", Some(SortKey::Cycles), KeyMode::Branch),
    ("srcline_from", None, KeyMode::Branch),
    ("srcline_to", None, KeyMode::Branch),
    ("ipc_lbr", None, KeyMode::Branch),
    ("addr_from", None, KeyMode::Branch),
    ("addr_to", None, KeyMode::Branch),
    ("symbol_daddr", Some(SortKey::SymDaddr), KeyMode::Memory),
    ("symbol_iaddr", Some(SortKey::SymIaddr), KeyMode::Memory),
    ("dso_daddr", Some(SortKey::DsoDaddr), KeyMode::Memory),
    ("locked", Some(SortKey::Locked), KeyMode::Memory),
    ("tlb", Some(SortKey::Tlb), KeyMode::Memory),
    ("mem", Some(SortKey::Mem), KeyMode::Memory),
    ("snoop", Some(SortKey::Snoop), KeyMode::Memory),
    ("dcacheline", None, KeyMode::Memory),
    ("phys_daddr", Some(SortKey::PhysDaddr), KeyMode::Memory),
    (
        "data_page_size",
        Some(SortKey::DataPageSize),
        KeyMode::Memory,
    ),
    ("blocked", Some(SortKey::Blocked), KeyMode::Memory),
];

/// perf 6.1's `default_mem_sort_order` (`--mem-mode` without `--sort`).
pub const DEFAULT_MEM_SORT_ORDER: &str = "local_weight,mem,sym,dso,symbol_daddr,dso_daddr,\
     snoop,tlb,locked,blocked,local_ins_lat,local_p_stage_cyc";

impl SortKey {
    /// Parses one key name: prec's own (`tid`, `symoff`), else the first
    /// of perf's keys that the name starts (perf's case-insensitive
    /// prefix match: `sym` is `symbol`, `weig` is `weight`).
    pub fn parse(s: &str) -> Option<SortKey> {
        match s {
            "tid" => Some(SortKey::Tid),
            "symoff" => Some(SortKey::SymOff),
            _ => perf_key(s).and_then(|(_, k, _)| k),
        }
    }

    /// The mode a key name needs ([`KeyMode::Any`] for names that are not
    /// perf's branch or memory keys).
    pub fn mode_of(s: &str) -> KeyMode {
        match s {
            "tid" | "symoff" => KeyMode::Any,
            _ => perf_key(s).map_or(KeyMode::Any, |(_, _, m)| m),
        }
    }

    /// Column header.
    pub fn header(self) -> &'static str {
        match self {
            SortKey::Comm => "Command",
            SortKey::Pid | SortKey::Tid => "    Pid:Command",
            SortKey::Dso => "Shared Object",
            SortKey::Sym | SortKey::SymOff => "Symbol",
            SortKey::Srcline => "Source:Line",
            SortKey::Srcfile => "Source File",
            SortKey::Cpu => "CPU",
            SortKey::Socket => "Socket",
            SortKey::Parent => "Parent symbol",
            SortKey::DsoFrom => "Source Shared Object",
            SortKey::DsoTo => "Target Shared Object",
            SortKey::SymFrom => "Source Symbol",
            SortKey::SymTo => "Target Symbol",
            SortKey::Cycles => "Basic Block Cycles",
            SortKey::Trace => "Trace output",
            SortKey::Time => "Time",
            SortKey::IpcNull => "IPC   [IPC Coverage]",
            SortKey::SymSize => "Symbol size",
            SortKey::DsoSize => "DSO size",
            SortKey::Cgroup => "Cgroup",
            SortKey::CgroupId => "cgroup id (dev/inode)",
            SortKey::LocalWeight => "Local Weight",
            SortKey::Weight => "Weight",
            SortKey::LocalInsLat => "Local INSTR Latency",
            SortKey::InsLat => "INSTR Latency",
            SortKey::LocalPStageCyc => "Local Pipeline Stage Cycle",
            SortKey::PStageCyc => "Pipeline Stage Cycle",
            SortKey::Transaction => "Transaction                ",
            SortKey::CodePageSize => "Code Page Size",
            SortKey::Addr => "Address",
            SortKey::SymDaddr => "Data Symbol",
            SortKey::SymIaddr => "Code Symbol",
            SortKey::DsoDaddr => "Data Object",
            SortKey::Locked => "Locked",
            SortKey::Tlb => "TLB access",
            SortKey::Mem => "Memory access",
            SortKey::Snoop => "Snoop",
            SortKey::PhysDaddr => "Data Physical Address",
            SortKey::DataPageSize => "Data Page Size",
            SortKey::Blocked => "Blocked",
            // The field's name, right-aligned (see the output).
            SortKey::Field(_) => "",
        }
    }

    /// Whether the key needs memory mode (`--mem-mode`).
    pub fn is_mem(self) -> bool {
        matches!(
            self,
            SortKey::SymDaddr
                | SortKey::SymIaddr
                | SortKey::DsoDaddr
                | SortKey::Locked
                | SortKey::Tlb
                | SortKey::Mem
                | SortKey::Snoop
                | SortKey::PhysDaddr
                | SortKey::DataPageSize
                | SortKey::Blocked
        )
    }

    /// Whether the key reads the sample's values that prec keeps in an
    /// entry's [`SampleValues`] (weights, transaction, page size, memory
    /// information).
    fn reads_values(self) -> bool {
        self.is_mem()
            || matches!(
                self,
                SortKey::LocalWeight
                    | SortKey::Weight
                    | SortKey::LocalInsLat
                    | SortKey::InsLat
                    | SortKey::LocalPStageCyc
                    | SortKey::PStageCyc
                    | SortKey::Transaction
                    | SortKey::CodePageSize
            )
    }

    /// perf 6.1's `arch_specific_sort_keys`: `--sort` drops them where
    /// `arch_support_sort_key` says no, which is everywhere but powerpc.
    pub fn dropped_from_sort(self) -> bool {
        matches!(self, SortKey::LocalPStageCyc | SortKey::PStageCyc)
            && !cfg!(target_arch = "powerpc64")
    }

    /// Whether the key needs branch-stack mode.
    pub fn is_branch(self) -> bool {
        matches!(
            self,
            SortKey::DsoFrom | SortKey::DsoTo | SortKey::SymFrom | SortKey::SymTo | SortKey::Cycles
        )
    }
}

/// perf's `sort_dimension__add` lookup: the first of [`PERF_KEYS`] whose
/// name starts with `s` (ignoring case).
fn perf_key(s: &str) -> Option<(&'static str, Option<SortKey>, KeyMode)> {
    if s.is_empty() {
        return None;
    }
    PERF_KEYS
        .iter()
        .find(|(name, _, _)| {
            name.len() >= s.len() && name.as_bytes()[..s.len()].eq_ignore_ascii_case(s.as_bytes())
        })
        .copied()
}

/// perf 6.1's `default_branch_sort_order`.
pub const BRANCH_SORT: &[SortKey] = &[
    SortKey::Comm,
    SortKey::DsoFrom,
    SortKey::SymFrom,
    SortKey::SymTo,
    SortKey::Cycles,
];

/// An output column (`-F`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    /// `--children`: the Children column.
    Children,
    Overhead,
    /// The overhead of the samples in one cpumode (`--show-cpu-utilization`
    /// and perf's `overhead_sys`, `overhead_us`, `overhead_guest_sys`,
    /// `overhead_guest_us`): the [`ModePeriods`] slot.
    ModeOverhead(usize),
    Sample,
    Period,
    Key(SortKey),
}

/// What to report.
#[derive(Clone)]
pub struct Options {
    /// Called as the read advances, like [`crate::script::ScriptOptions::release`].
    pub release: Option<crate::script::ReleaseHook>,
    /// Sort keys (default `comm,dso,sym`).
    pub sort: Vec<SortKey>,
    /// The tracepoint fields [`SortKey::Field`] keys name.
    pub dynamic: Vec<DynamicKey>,
    /// Explicit output fields (`-F`); `None` = overhead [+ samples] + keys.
    pub fields: Option<Vec<Field>>,
    pub show_nr_samples: bool,
    /// `-T`/`--threads`: the per-thread counter values of READ records
    /// (`perf record -s`) after the report.
    pub show_threads: bool,
    /// `--show-total-period`: a Period column.
    pub show_total_period: bool,
    /// `--hierarchy`: entries as a tree, one level per sort key.
    pub hierarchy: bool,
    /// Keep the periods by cpumode (`--show-cpu-utilization`, `-F
    /// overhead_sys,...`).
    pub cpu_utilization: bool,
    /// `--show-cpu-utilization`: `sys` and `usr` columns after the
    /// overhead.
    pub show_cpu_utilization: bool,
    /// perf's hpp sort list when `-F` was given (perf's "strict" field
    /// order): `--sort` keys, then the output fields not among them.
    /// `None`: `[Children,] Overhead`, then the sort keys.
    pub sort_list: Option<Vec<Field>>,
    /// The `--sort` list, without `-F`, when it names output fields
    /// (perf's `--sort sym,period`): those are shown after the default
    /// columns and sorted by where the list puts them, after perf's
    /// implicit `[overhead_children,] overhead` (see
    /// [`Options::output_sort_list`]).
    pub sort_fields: Option<Vec<Field>>,
    /// `-F +FIELDS`: output fields shown after the default columns (and
    /// before the sort keys'), perf's non-strict field order.
    pub added_fields: Vec<Field>,
    /// `-t`/`--field-separator`: columns joined by it, without padding.
    pub field_sep: Option<String>,
    /// `--percentage relative`: percentages and totals of the entries left
    /// after the filters.
    pub relative: bool,
    /// `--hide-unresolved`: hide samples without a symbol.
    pub hide_unresolved: bool,
    /// `-x`/`--exclude-other`: hide entries without a `--parent` match.
    pub exclude_other: bool,
    /// `--full-source-path`.
    pub full_source_path: bool,
    /// `--show-ref-call-graph`: an event recorded with `call-graph=no` says
    /// so in its header.
    pub show_ref_callgraph: bool,
    /// `-p`/`--parent` (POSIX extended regex, perf's default
    /// `^sys_|^do_page_fault`).
    pub parent_regex: String,
    /// `-w`/`--column-widths`: a width per column (0: the default).
    pub column_widths: Vec<usize>,
    /// `--socket-filter`: only entries of CPUs of this socket.
    pub socket_filter: Option<i32>,
    /// `--ignore-callees` (POSIX extended regex): a call-chain function
    /// that matches takes its callees' samples.
    pub ignore_callees: Option<String>,
    /// Set by [`build`]: `--sort parent` on a file without callchains
    /// (perf stops with an error).
    pub parent_no_callchain: bool,
    /// Set by [`build`]: perf reports "no samples" whatever was read
    /// (`--hierarchy` on a pipe).
    pub no_samples_shown: bool,
    /// `-g` given (not `none`) for a file, not a pipe: perf requires
    /// callchains (or branch stacks).
    pub callgraph_required: bool,
    /// Set by [`build`]: `callgraph_required` but the file has neither
    /// (perf stops with "Selected -g or --branch-history").
    pub callgraph_missing: bool,
    pub percent_limit: f64,
    pub comms: Option<Vec<String>>,
    pub pids: Option<Vec<i32>>,
    pub tids: Option<Vec<i32>>,
    pub dsos: Option<Vec<String>>,
    pub symbols: Option<Vec<String>>,
    /// `--symbol-filter`: only show entries whose symbol name contains it.
    pub symbol_filter: Option<String>,
    /// perf's `need_collapse`: a `--sort` key (not one `-F` appended) has a
    /// collapse step, i.e. `comm`.
    pub need_collapse: bool,
    pub cpus: Option<Vec<u32>>,
    /// `--switch-on`/`--switch-off`: windows of samples kept.
    pub evswitch: crate::evswitch::EvSwitch,
    /// `--time`: the samples kept.
    pub time: Option<crate::time_ranges::TimeRanges>,
    /// The `--time` argument as given (perf prints it in the Samples line).
    pub time_str: Option<String>,
    /// `--sort time` buckets, in ns (`--time-quantum`; perf's default is
    /// 100 ms).
    pub time_quantum: u64,
    /// `--ns`: times with nanoseconds.
    pub nanosecs: bool,
    /// `--group`: show the events as one group even without GROUP_DESC.
    pub group: bool,
    /// `--no-group`: show the events of recorded groups separately.
    pub no_group: bool,
    /// `--group-sort-idx`: in group mode, order by the period of the
    /// member at this index first (0, or past the last member: by the
    /// leader's, as without it).
    pub group_sort_idx: i32,
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache when not `~/.debug` (see
    /// [`SymbolizerOptions::build_id_dir`]).
    pub build_id_dir: Option<PathBuf>,
    pub kallsyms: Option<PathBuf>,
    pub demangle: bool,
    pub quiet: bool,
    /// `--raw-trace`: the `trace` key shows a tracepoint's fields, not its
    /// print format.
    pub raw_trace: bool,
    /// `-v`: long DSO names, and each symbol's address and where its
    /// symbol table came from.
    pub verbose: bool,
    /// How binaries are opened (see [`SymbolizerOptions::loader`]).
    pub file_loader: Option<FileLoader>,
    /// Call graphs and `--children` (used when the file has callchains).
    pub callgraph: crate::callgraph::Params,
    /// Whether `sort` was chosen by the user (`--sort`/`-F`); otherwise
    /// branch mode replaces it with [`BRANCH_SORT`].
    pub sort_given: bool,
    /// `--branch-stack` (Some(true)) / `--no-branch-stack` (Some(false));
    /// None: branch mode when the file has the BRANCH_STACK feature.
    pub branch_stack: Option<bool>,
    /// Resolved by [`build`]: one hist entry per branch-stack entry.
    pub branch_mode: bool,
    /// `--mem-mode`: each entry also keyed by the memory access (perf's
    /// `mem_info`), its period the sample's weight (1 for none), no
    /// children.
    pub mem_mode: bool,
    /// The `--sort` text as perf keeps it (with its `,ipc_null`), which
    /// memory mode prints as the sort order.
    pub sort_text: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            release: None,
            sort: vec![SortKey::Comm, SortKey::Dso, SortKey::Sym],
            fields: None,
            show_nr_samples: false,
            show_threads: false,
            show_total_period: false,
            hierarchy: false,
            cpu_utilization: false,
            show_cpu_utilization: false,
            sort_list: None,
            sort_fields: None,
            added_fields: Vec::new(),
            field_sep: None,
            relative: false,
            hide_unresolved: false,
            exclude_other: false,
            full_source_path: false,
            show_ref_callgraph: false,
            parent_regex: DEFAULT_PARENT.to_string(),
            ignore_callees: None,
            socket_filter: None,
            column_widths: Vec::new(),
            parent_no_callchain: false,
            no_samples_shown: false,
            callgraph_required: false,
            callgraph_missing: false,
            percent_limit: 0.0,
            comms: None,
            pids: None,
            tids: None,
            dsos: None,
            symbols: None,
            symbol_filter: None,
            need_collapse: true,
            cpus: None,
            evswitch: Default::default(),
            time: None,
            time_str: None,
            time_quantum: 100_000_000,
            nanosecs: false,
            group: false,
            no_group: false,
            group_sort_idx: 0,
            symfs: None,
            build_id_dir: None,
            kallsyms: None,
            demangle: true,
            quiet: false,
            dynamic: Vec::new(),
            raw_trace: false,
            verbose: false,
            file_loader: None,
            callgraph: crate::callgraph::Params::default(),
            sort_given: false,
            branch_stack: None,
            branch_mode: false,
            mem_mode: false,
            sort_text: None,
        }
    }
}

/// Each attr's event name as perf names its evsel: EVENT_DESC's, else one
/// made from the attr ([`event_name`]).
pub fn event_names(file: &PerfFile<'_>) -> Vec<String> {
    let names = event_desc_names(file);
    file.attrs()
        .iter()
        .zip(names)
        .map(|(a, name)| name.unwrap_or_else(|| event_name(&a.attr)))
        .collect()
}

/// Each attr's name from the EVENT_DESC feature (matched by its first id,
/// as perf does), `None` where the file does not say.
fn event_desc_names(file: &PerfFile<'_>) -> Vec<Option<String>> {
    let attrs = file.attrs();
    let mut names: Vec<Option<String>> = vec![None; attrs.len()];
    let Some(f) = file.feature(FeatureId::EVENT_DESC) else {
        return names;
    };
    let Ok(Feature::EventDesc(d)) = features::decode(f.id, f.data, f.offset, file.endian()) else {
        return names;
    };
    for ev in d.events {
        let idx = if attrs.len() == 1 {
            Some(0)
        } else {
            ev.ids.first().and_then(|&id| {
                if id == 0 {
                    Some(0)
                } else {
                    file.attr_of_id(id)
                }
            })
        };
        if let Some(i) = idx {
            if names[i].is_none() && !ev.name.is_empty() {
                names[i] = Some(ev.name);
            }
        }
    }
    names
}

impl Options {
    /// perf's `sort__setup_elide`: a sort key filtered to exactly one
    /// value (`--comms x`, `--dsos x`, `--symbols x`) is not shown as a
    /// column; the key and its value.
    pub fn elided_keys(&self) -> Vec<(SortKey, String)> {
        let mut v = Vec::new();
        for &k in &self.sort {
            let names_of = |l: &Option<Vec<String>>| -> Vec<String> {
                l.as_deref().map_or(Vec::new(), |l| split_symbol_list(l).0)
            };
            let list: Vec<String> = match k {
                SortKey::Comm => self.comms.clone().unwrap_or_default(),
                SortKey::Dso => self.dsos.clone().unwrap_or_default(),
                // Addresses are not names (perf's setup_addrlist).
                SortKey::Sym => names_of(&self.symbols),
                _ => continue,
            };
            if let [only] = &list[..] {
                v.push((k, only.clone()));
            }
        }
        v
    }

    /// `--symbols`' names and addresses (see [`split_symbol_list`]).
    fn symbol_names_and_addresses(&self) -> (Vec<String>, Vec<u64>) {
        self.symbols
            .as_deref()
            .map_or_else(Default::default, split_symbol_list)
    }

    /// perf's hpp sort list: `-F`'s ([`Options::sort_list`]), or for a
    /// `--sort` list naming output fields, that list after perf's
    /// `setup_overhead` and the sort keys perf appended (`ipc_null`),
    /// followed by the default output fields not in it. `None`: the
    /// default order.
    pub fn output_sort_list(&self, children: bool) -> Option<Vec<Field>> {
        if self.sort_list.is_some() {
            return self.sort_list.clone();
        }
        let given = self.sort_fields.as_ref()?;
        // setup_overhead puts `overhead` first, then with children
        // `overhead_children`, unless the list's text already holds the
        // word: `--sort overhead_sys,comm` gets no `overhead`.
        let names_overhead = given.iter().any(|f| {
            matches!(
                f,
                Field::Overhead | Field::Children | Field::ModeOverhead(_)
            )
        });
        let mut list = Vec::new();
        if children && !given.contains(&Field::Children) {
            list.push(Field::Children);
        }
        if !names_overhead {
            list.push(Field::Overhead);
        }
        list.extend(given);
        let appended = self.sort.iter().map(|&k| Field::Key(k));
        let defaults = self.default_fields(children);
        for f in appended.chain(defaults) {
            if !list.contains(&f) {
                list.push(f);
            }
        }
        Some(list)
    }

    /// perf's `perf_hpp__init` columns, before the sort keys.
    pub fn default_fields(&self, children: bool) -> Vec<Field> {
        let mut v = if children {
            vec![Field::Children, Field::Overhead]
        } else {
            vec![Field::Overhead]
        };
        if self.show_cpu_utilization {
            v.extend([Field::ModeOverhead(0), Field::ModeOverhead(1)]);
        }
        if self.show_nr_samples {
            v.push(Field::Sample);
        }
        if self.show_total_period {
            v.push(Field::Period);
        }
        v
    }

    /// The sort keys shown as columns: all when every one is elided.
    pub fn shown_keys(&self) -> Vec<SortKey> {
        let elided = self.elided_keys();
        let shown: Vec<SortKey> = self
            .sort
            .iter()
            .copied()
            .filter(|k| !elided.iter().any(|e| e.0 == *k))
            .collect();
        if shown.is_empty() {
            self.sort.clone()
        } else {
            shown
        }
    }
}

/// Parses a `-F` list into fields and the sort keys it implies.
pub fn parse_fields(s: &str) -> Result<Vec<Field>, String> {
    let mut v = Vec::new();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        match Field::parse(k) {
            Some(f) => v.push(f),
            None => return Err(unknown_key("--fields", k)),
        }
    }
    Ok(v)
}

/// The error for a key `Field::parse` does not know: perf's, or one of
/// perf's keys prec does not implement.
fn unknown_key(option: &str, key: &str) -> String {
    match perf_key(key) {
        Some((name, _, _)) => {
            format!("{option} key `{key}' (perf's `{name}') is not supported by prec")
        }
        None => format!("Unknown {option} key: `{key}'"),
    }
}

/// Parses a `--sort` list that may also name output fields (perf's
/// `--sort overhead,sym` or `--sort sym,period`): those add a column and
/// sort by it, without splitting entries.
///
/// A name that is no key of perf's goes to `dynamic` (see
/// [`dynamic_keys`]), which gives the keys it makes, if any.
pub fn parse_sort_fields(
    s: &str,
    dynamic: &mut dyn FnMut(&str) -> Option<Vec<SortKey>>,
) -> Result<Vec<Field>, String> {
    let mut v = Vec::new();
    for k in s.split(',').map(str::trim).filter(|k| !k.is_empty()) {
        let fields = match Field::parse(k) {
            Some(f) => vec![f],
            None => match dynamic(k) {
                Some(keys) => keys.into_iter().map(Field::Key).collect(),
                None => return Err(unknown_key("--sort", k)),
            },
        };
        for f in fields {
            if !v.contains(&f) {
                v.push(f)
            }
        }
    }
    if v.is_empty() {
        return Err("empty --sort list".into());
    }
    Ok(v)
}

impl Field {
    /// Parses one field name: perf's output field names, or a sort key's.
    pub fn parse(name: &str) -> Option<Field> {
        if matches!(name, "tid" | "symoff") {
            return SortKey::parse(name).map(Field::Key);
        }
        let (perf_name, key, _) = perf_key(name)?;
        Some(match (perf_name, key) {
            (_, Some(k)) => Field::Key(k),
            ("overhead", _) => Field::Overhead,
            ("overhead_children", _) => Field::Children,
            ("overhead_sys", _) => Field::ModeOverhead(0),
            ("overhead_us", _) => Field::ModeOverhead(1),
            ("overhead_guest_sys", _) => Field::ModeOverhead(2),
            ("overhead_guest_us", _) => Field::ModeOverhead(3),
            ("sample", _) => Field::Sample,
            ("period", _) => Field::Period,
            _ => return None,
        })
    }
}

/// Handle of an interned string (DSO short names, symbol names, srclines).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// perf's `he_stat` periods by the samples' cpumode: kernel (`sys`), user
/// (`usr`), guest kernel and guest user; other modes count in none.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModePeriods(pub [u64; 4]);

impl ModePeriods {
    /// perf's column header of a slot.
    pub fn header(slot: usize) -> &'static str {
        ["sys", "usr", "guest sys", "guest usr"][slot.min(3)]
    }

    /// The slot of a `PERF_RECORD_MISC_*` cpumode.
    fn slot(cpumode: u16) -> Option<usize> {
        use prec_format::constants::misc;
        match cpumode {
            misc::KERNEL => Some(0),
            misc::USER => Some(1),
            misc::GUEST_KERNEL => Some(2),
            misc::GUEST_USER => Some(3),
            _ => None,
        }
    }

    fn add(&mut self, cpumode: u16, period: u64) {
        if let Some(i) = Self::slot(cpumode) {
            self.0[i] += period;
        }
    }

    fn merge(&mut self, other: &ModePeriods) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

/// perf's `HIST_FILTER__*` bits of [`Entry::filtered`]: which filter
/// hides the entry.
pub mod filter {
    /// `--comms`, `--pid`, `--tid`.
    pub const THREAD: u8 = 1;
    /// `--dsos`.
    pub const DSO: u8 = 2;
    /// `--symbols`.
    pub const SYMBOL: u8 = 4;
    /// `-x`: no `--parent` match.
    pub const PARENT: u8 = 8;
    /// `--socket-filter`.
    pub const SOCKET: u8 = 16;
}

/// String interner.
///
/// Each string is stored once, shared by the list and the map (and by the
/// copies `Self::extend_copy` makes on the adding thread): a source-line
/// report interns hundreds of thousands of long names.
#[derive(Debug, Default)]
pub struct Strings {
    v: Vec<std::sync::Arc<str>>,
    map: HashMap<std::sync::Arc<str>, StrId>,
}

impl Strings {
    pub fn intern(&mut self, s: &str) -> StrId {
        if let Some(&id) = self.map.get(s) {
            return id;
        }
        let id = StrId(self.v.len() as u32);
        let shared: std::sync::Arc<str> = s.into();
        self.v.push(shared.clone());
        self.map.insert(shared, id);
        id
    }

    pub fn get(&self, id: StrId) -> &str {
        self.v.get(id.0 as usize).map_or("", |s| s)
    }

    /// The strings interned after the first `n`.
    fn since(&self, n: usize) -> &[std::sync::Arc<str>] {
        self.v.get(n..).unwrap_or(&[])
    }

    fn len(&self) -> usize {
        self.v.len()
    }

    /// Appends strings interned elsewhere (see [`Self::since`]): a copy of
    /// another table's strings, for [`Self::get`] only.
    fn extend_copy(&mut self, strings: &[std::sync::Arc<str>]) {
        self.v.extend_from_slice(strings);
    }
}

/// A resolved symbol.
#[derive(Clone, Debug)]
pub struct Sym {
    pub name: StrId,
    /// Start and end in perf's DSO-relative address space (`al->addr`).
    pub start: u64,
    pub end: u64,
    /// An inline frame's function (perf's fake `sym->inlined` symbol: the
    /// range of the real function it was inlined into, its own name).
    pub inlined: bool,
    /// A data object (perf's STT_OBJECT symbol): a data address shows as
    /// `name+0xoffset`.
    pub object: bool,
    /// An inline frame's real function: what perf's `map__find_symbol`
    /// finds at its start.
    pub base: Option<SymId>,
}

/// Symbol identity within a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SymId(pub u32);

/// The sort-key values of one entry; unused parts stay 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Key {
    comm: u32,
    tid: i32,
    /// DSO short name + 1 (0 = no map).
    dso: u32,
    /// Symbol id + 1, 0 = none (then `addr` decides).
    sym: u32,
    addr: u64,
    srcline: u32,
    srcfile: u32,
    cpu: u32,
    parent: u32,
    trace: u32,
    /// The tracepoint fields' [`EntryFields`] + 1.
    fields: u32,
    /// [`ValueKey`] id + 1 (0: no key reads the sample's values).
    values: u32,
    /// [`RareKey`] id + 1 (0: none of its keys, or all their values 0).
    rare: u32,
}

/// The values of the sort keys few reports use (branch, cgroup, socket,
/// time and size keys), interned per report so that [`Key`], of which
/// there is one per entry in each of the pass's tables, stays small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct RareKey {
    cgroup: u64,
    cgroup_ns: (u64, u64),
    socket: i32,
    /// Branch mode: DSO name + 1 of source/target, symbol id + 1 (else the
    /// raw address) of source/target, cycles.
    from_dso: u32,
    to_dso: u32,
    from_sym: u32,
    from_addr: u64,
    to_sym: u32,
    to_addr: u64,
    cycles: u16,
    time: u64,
    sym_size: u64,
    dso_size: u64,
}

/// The [`RareKey`]s of a report, by id.
#[derive(Default)]
struct RareKeys {
    ids: HashMap<RareKey, u32>,
    /// A sort key of [`RareKey`]'s is wanted (else every key's is 0).
    wanted: bool,
}

impl RareKeys {
    fn for_sort(sort: &[SortKey]) -> RareKeys {
        use SortKey as K;
        let rare = [
            K::Cgroup,
            K::CgroupId,
            K::Socket,
            K::Time,
            K::SymSize,
            K::DsoSize,
            K::DsoFrom,
            K::DsoTo,
            K::SymFrom,
            K::SymTo,
            K::Cycles,
        ];
        RareKeys {
            ids: HashMap::default(),
            wanted: sort.iter().any(|k| rare.contains(k)),
        }
    }

    /// The [`Key::rare`] of `k`: 0 for all values 0, else its id + 1
    /// (added if new).
    fn id(&mut self, k: RareKey) -> u32 {
        if !self.wanted || k == RareKey::default() {
            return 0;
        }
        let n = self.ids.len() as u32;
        *self.ids.entry(k).or_insert(n) + 1
    }
}

/// The sample values the keys of a report compare (the wanted ones; the
/// others stay 0), interned per report so that [`Key`] stays small.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct ValueKey {
    weight: u64,
    ins_lat: u16,
    p_stage_cyc: u16,
    transaction: u64,
    code_page_size: u64,
    /// `addr`: the runtime instruction address.
    ip: u64,
    /// `symbol_daddr`: the data address.
    daddr: u64,
    /// `symbol_iaddr`: the instruction address.
    iaddr: u64,
    /// `dso_daddr`: the data address's DSO name + 1.
    daddr_dso: u32,
    /// The data source's bits of the wanted memory keys.
    data_src: u64,
    phys_addr: u64,
    data_page_size: u64,
}

/// perf's `mem_info` of a memory-mode entry: its sample's instruction and
/// data addresses, resolved, and the data source.
#[derive(Clone, Copy, Debug)]
pub struct MemInfo {
    pub iaddr: BranchAddr,
    pub daddr: BranchAddr,
    pub data_src: u64,
    pub phys_addr: u64,
    pub data_page_size: u64,
}

/// The sample values a hist entry keeps from its first sample (perf's
/// `hist_entry` weight, ins_lat, p_stage_cyc, transaction and
/// code_page_size, and its `mem_info`).
#[derive(Clone, Copy, Debug, Default)]
pub struct SampleValues {
    /// PERF_SAMPLE_WEIGHT, or WEIGHT_STRUCT's low 32 bits.
    pub weight: u64,
    /// WEIGHT_STRUCT's bits 32-47.
    pub ins_lat: u16,
    /// WEIGHT_STRUCT's bits 48-63.
    pub p_stage_cyc: u16,
    pub transaction: u64,
    pub code_page_size: u64,
    /// Memory mode only.
    pub mem: Option<MemInfo>,
}

impl SampleValues {
    /// The weight fields of a sample of `attr`, as perf's
    /// `evsel__parse_sample` splits a WEIGHT_STRUCT.
    fn of(attr: &Attr, s: &prec_format::sample::Sample<'_>) -> SampleValues {
        let raw = s.weight.unwrap_or(0);
        let (weight, ins_lat, p_stage_cyc) = if attr.sample_type & st::WEIGHT_STRUCT != 0 {
            (raw & 0xffff_ffff, (raw >> 32) as u16, (raw >> 48) as u16)
        } else {
            (raw, 0, 0)
        };
        SampleValues {
            weight,
            ins_lat,
            p_stage_cyc,
            transaction: s.transaction.unwrap_or(0),
            code_page_size: s.code_page_size.unwrap_or(0),
            mem: None,
        }
    }
}

impl SampleValues {
    /// Whether perf's children `he_tmp`, which has none of these, differs
    /// from an entry with these values.
    fn he_tmp_differs(&self) -> bool {
        self.weight != 0
            || self.ins_lat != 0
            || self.p_stage_cyc != 0
            || self.transaction != 0
            || self.code_page_size != 0
    }
}

impl ValueKey {
    /// [`SampleValues::he_tmp_differs`] for the wanted values.
    fn he_tmp_differs(&self) -> bool {
        self.weight != 0
            || self.ins_lat != 0
            || self.p_stage_cyc != 0
            || self.transaction != 0
            || self.code_page_size != 0
    }
}

/// An entry without [`SampleValues`] compares as one with these.
static NO_VALUES: SampleValues = SampleValues {
    weight: 0,
    ins_lat: 0,
    p_stage_cyc: 0,
    transaction: 0,
    code_page_size: 0,
    mem: None,
};

/// The sample values of `e` (zeros without).
pub fn values_of(e: &Entry) -> &SampleValues {
    e.values.as_deref().unwrap_or(&NO_VALUES)
}

/// perf's `PERF_MEM_DATA_SRC_NONE` (no level number, unlike the
/// kernel's `PERF_MEM_NA`): a sample without a data source.
const DATA_SRC_NONE: u64 = 0x5080021;

/// The keys of perf 6.1's default memory-mode order (without the ones
/// `--sort` drops here, see [`SortKey::dropped_from_sort`]).
pub fn mem_sort_keys() -> Vec<SortKey> {
    DEFAULT_MEM_SORT_ORDER
        .split(',')
        .filter_map(SortKey::parse)
        .filter(|k| !k.dropped_from_sort())
        .collect()
}

/// The values of `v` that `keys` compare; `ip` is the sample's runtime
/// address (after `--ignore-callees`), `daddr_dso` the name id of the
/// data address's DSO.
fn value_key(keys: &[SortKey], v: &SampleValues, ip: u64, daddr_dso: Option<u32>) -> ValueKey {
    let mut k = ValueKey::default();
    for &key in keys {
        match key {
            SortKey::LocalWeight | SortKey::Weight => k.weight = v.weight,
            SortKey::LocalInsLat | SortKey::InsLat => k.ins_lat = v.ins_lat,
            SortKey::LocalPStageCyc | SortKey::PStageCyc => k.p_stage_cyc = v.p_stage_cyc,
            SortKey::Transaction => k.transaction = v.transaction,
            SortKey::CodePageSize => k.code_page_size = v.code_page_size,
            SortKey::Addr => k.ip = ip,
            _ => {}
        }
        let Some(m) = &v.mem else { continue };
        match key {
            SortKey::SymDaddr => k.daddr = m.daddr.addr,
            SortKey::SymIaddr => k.iaddr = m.iaddr.addr,
            SortKey::DsoDaddr => k.daddr_dso = daddr_dso.map_or(0, |d| d + 1),
            SortKey::PhysDaddr => k.phys_addr = m.phys_addr,
            SortKey::DataPageSize => k.data_page_size = m.data_page_size,
            _ => k.data_src |= m.data_src & data_src_bits(key),
        }
    }
    k
}

/// The id + 1 of `k` in `ids` (added if new).
fn intern_value(ids: &mut HashMap<ValueKey, u32>, k: ValueKey) -> u32 {
    let n = ids.len() as u32;
    *ids.entry(k).or_insert(n) + 1
}

/// perf's `sample__resolve_mem`: the instruction address found as a
/// branch's end is (`ip__resolve_ams`), the data address in the maps of
/// the sample's cpumode (`ip__resolve_data`, `thread__find_symbol`).
fn resolve_mem(
    (machine, resolver, strings): (&mut Machine, &mut Resolver, &mut Strings),
    s: &prec_format::sample::Sample<'_>,
    (pid, tid, cpumode): (i32, i32, u16),
    thread: ThreadId,
) -> MemInfo {
    let iaddr = branch_addr(machine, resolver, strings, thread, pid, s.ip.unwrap_or(0));
    let addr = s.addr.unwrap_or(0);
    let loc = resolve_loading(machine, resolver, pid, tid, cpumode, addr);
    let sym = loc
        .map
        .as_ref()
        .and_then(|m| resolver.symbol(machine, strings, m, pid, addr, loc.addr));
    MemInfo {
        iaddr,
        daddr: BranchAddr {
            map: loc.map,
            sym,
            addr,
            al_addr: loc.addr,
            level: loc.level,
        },
        data_src: s.data_src.unwrap_or(DATA_SRC_NONE),
        phys_addr: s.phys_addr.unwrap_or(0),
        data_page_size: s.data_page_size.unwrap_or(0),
    }
}

/// The bits of the data source word the memory keys compare (perf's
/// `mem_lock`, `mem_dtlb`, `mem_lvl`, `mem_snoop`, `mem_blk`).
fn data_src_bits(k: SortKey) -> u64 {
    let bits = |shift: u32, width: u32| ((1u64 << width) - 1) << shift;
    match k {
        SortKey::Locked => bits(24, 2),
        SortKey::Tlb => bits(26, 7),
        SortKey::Mem => bits(5, 14),
        SortKey::Snoop => bits(19, 5),
        SortKey::Blocked => bits(40, 3),
        _ => 0,
    }
}

/// One end of a branch (perf's `addr_map_symbol`).
#[derive(Clone, Copy, Debug)]
pub struct BranchAddr {
    pub map: Option<Map>,
    pub sym: Option<SymId>,
    /// The raw address.
    pub addr: u64,
    /// `al_addr`: the map-relative address.
    pub al_addr: u64,
    /// `al_level`.
    pub level: u8,
}

/// perf's `branch_info` of a branch-mode hist entry.
#[derive(Clone, Copy, Debug)]
pub struct BranchInfo {
    pub from: BranchAddr,
    pub to: BranchAddr,
    pub cycles: u16,
}

/// One line of the report.
#[derive(Clone, Debug)]
pub struct Entry {
    pub period: u64,
    pub nr_samples: u64,
    /// The group members' values in group mode (boxed: most reports have
    /// no group, and entries are many).
    pub group: Option<Box<GroupValues>>,
    /// The first sample's resolution (perf keeps it in the hist entry).
    pub thread: ThreadId,
    pub comm: CommId,
    pub level: u8,
    pub map: Option<Map>,
    /// perf's `he->ip` (`al->addr` of the first sample).
    pub addr: u64,
    pub sym: Option<SymId>,
    pub srcline: Option<StrId>,
    pub srcfile: Option<StrId>,
    /// `--sort trace`: the tracepoint's trace output.
    pub trace: Option<StrId>,
    /// perf compared the entry with a children entry of its own sample
    /// (he_cache), which makes its trace output: the column then counts it.
    pub trace_compared: bool,
    /// perf compared the entry with a children entry of its own sample
    /// (he_cache) as far as the srcline key, which computes its srcline:
    /// the column then counts it.
    pub srcline_compared: bool,
    /// Tracepoint field keys ([`SortKey::Field`]): see [`EntryFields`].
    pub fields: Option<StrId>,
    /// `--sort time`: the sample's time bucket (ns).
    pub time: u64,
    pub cpu: u32,
    /// The sample's cgroup id (0: none).
    pub cgroup: u64,
    /// The sample thread's cgroup namespace (dev, inode), (0, 0): none.
    pub cgroup_ns: (u64, u64),
    /// The CPU's socket id (-1: unknown).
    pub socket: i32,
    /// `--sort parent`: the first callchain symbol matching `--parent`.
    pub parent: Option<StrId>,
    /// Why the entry is filtered out ([`filter`] bits; 0: shown).
    pub filtered: u8,
    /// [`filter`] bits of the filters perf applies while collapsing
    /// (`--symbol-filter`, `--socket-filter`): its samples still count in
    /// the header, as in perf.
    pub collapse_filtered: u8,
    /// Call-graph mode: children period and call tree.
    pub cg: Option<Box<EntryCg>>,
    /// With CPU-utilization columns: the period by cpumode (see
    /// [`ModePeriods`]).
    pub mode_periods: Option<Box<ModePeriods>>,
    /// Branch mode: the branch of this entry (boxed: most reports have
    /// none, and entries are many).
    pub branch: Option<Box<BranchInfo>>,
    /// The sample values the keys read, when one does (boxed for the same
    /// reason).
    pub values: Option<Box<SampleValues>>,
}

impl Entry {
    /// A copy of the key fields, with no samples (no call graph, branch or
    /// group data).
    fn copy_keys(&self) -> Entry {
        Entry {
            level: self.level,
            map: self.map,
            addr: self.addr,
            sym: self.sym,
            srcline: self.srcline,
            srcfile: self.srcfile,
            trace: self.trace,
            trace_compared: self.trace_compared,
            srcline_compared: self.srcline_compared,
            fields: self.fields,
            time: self.time,
            cpu: self.cpu,
            cgroup: self.cgroup,
            cgroup_ns: self.cgroup_ns,
            socket: self.socket,
            parent: self.parent,
            filtered: self.filtered,
            collapse_filtered: self.collapse_filtered,
            mode_periods: self.mode_periods.as_ref().map(|_| Box::default()),
            values: self.values.clone(),
            ..Entry::blank(self.thread, self.comm)
        }
    }

    /// Adds `period` of a sample in `cpumode` to the CPU-utilization
    /// periods, if kept.
    fn add_mode_period(&mut self, cpumode: u16, period: u64) {
        if let Some(m) = &mut self.mode_periods {
            m.add(cpumode, period);
        }
    }

    /// An entry of `thread` with nothing else set yet.
    fn blank(thread: ThreadId, comm: CommId) -> Entry {
        Entry {
            mode_periods: None,
            period: 0,
            nr_samples: 0,
            group: None,
            thread,
            comm,
            level: 0,
            map: None,
            addr: 0,
            sym: None,
            srcline: None,
            srcfile: None,
            trace: None,
            trace_compared: false,
            srcline_compared: false,
            fields: None,
            time: 0,
            cpu: 0,
            cgroup: 0,
            cgroup_ns: (0, 0),
            socket: 0,
            parent: None,
            filtered: 0,
            collapse_filtered: 0,
            cg: None,
            branch: None,
            values: None,
        }
    }
}

/// An entry's call-graph data (perf's `stat_acc` and `callchain`).
#[derive(Clone, Debug, Default)]
pub struct EntryCg {
    /// `--children` period: samples whose chain contains the entry.
    pub acc_period: u64,
    /// How many samples' chains contain the entry (perf inserts it that
    /// many times).
    pub acc_count: u64,
    pub tree: CallTree,
}

/// An entry's values per member of its event's group (leader first).
#[derive(Clone, Debug, Default)]
pub struct GroupValues {
    pub periods: Box<[u64]>,
    pub samples: Box<[u64]>,
    /// `--children` periods.
    pub acc: Box<[u64]>,
    /// The members' [`Entry::mode_periods`].
    pub mode_periods: Box<[ModePeriods]>,
}

impl GroupValues {
    /// Zeros for `n` members, with mode periods when `modes`.
    fn zeros(n: usize, modes: bool) -> GroupValues {
        GroupValues {
            periods: vec![0; n].into_boxed_slice(),
            samples: vec![0; n].into_boxed_slice(),
            acc: vec![0; n].into_boxed_slice(),
            mode_periods: match modes {
                true => vec![ModePeriods::default(); n].into_boxed_slice(),
                false => Box::default(),
            },
        }
    }
}

impl Entry {
    /// Periods of the group members (leader first) in group mode (else
    /// empty).
    pub fn group_periods(&self) -> &[u64] {
        self.group.as_ref().map_or(&[], |g| &g.periods)
    }

    /// Sample counts of the group members (leader first) in group mode.
    pub fn group_samples(&self) -> &[u64] {
        self.group.as_ref().map_or(&[], |g| &g.samples)
    }

    /// `--children` periods of the group members (leader first).
    pub fn group_acc(&self) -> &[u64] {
        self.group.as_ref().map_or(&[], |g| &g.acc)
    }

    /// The group members' [`Entry::mode_periods`] (leader first) in group
    /// mode.
    pub fn group_mode_periods(&self) -> &[ModePeriods] {
        self.group.as_ref().map_or(&[], |g| &g.mode_periods)
    }

    /// The children period (0 without `--children`).
    pub fn acc_period(&self) -> u64 {
        self.cg.as_ref().map_or(0, |c| c.acc_period)
    }
}

/// Call-graph state of a report (effective parameters, frame table).
#[derive(Debug)]
pub struct CallgraphData {
    /// Effective parameters (order forced to caller with `--children`).
    pub params: crate::callgraph::Params,
    pub frames: Frames,
    /// perf's `hists->callchain_period`, per hists.
    pub callchain_period: Vec<u64>,
    /// perf's `callchain_non_filtered_period` (for `--percentage
    /// relative`), per hists.
    pub callchain_unfiltered_period: Vec<u64>,
}

/// One event's hists.
#[derive(Clone, Debug)]
pub struct Hists {
    /// Index in the file's attrs.
    pub attr_index: usize,
    pub name: String,
    pub entries: Vec<Entry>,
    index: HashMap<Key, usize>,
    /// [`perf_tree_keys`] mode: each sample's entry and period, in order.
    hits: Vec<(u32, u16, u64)>,
    /// [`perf_tree_keys`] mode with call graphs: per sample, in order, its
    /// range of [`Hists::graph_effects`], its period and its thread.
    graph_hits: Vec<(u32, u32, u64, ThreadId)>,
    /// The entry insertions perf makes for a sample (its own entry, then
    /// with `--children` one per chain element), each with the call-tree
    /// node its chain reached; samples that repeat one share its range.
    graph_effects: Vec<Effect>,
    /// With the call-graph pass's entries in shards (see [`Shard`]): per
    /// entry, the sample that made it and its place in that sample (0 for
    /// its own entry, 1 + the frame's for a children entry).
    created: Vec<(u64, u32)>,
    pub nr_samples: u64,
    pub total_period: u64,
    /// Members of the group this event leads in the recording (1: none);
    /// perf says "events" for such a leader even with `--no-group`.
    pub recorded_members: u32,
    /// `--hierarchy`: the tree's nodes, and the first level's in output
    /// order.
    pub hierarchy: Vec<HierNode>,
    pub hierarchy_roots: Vec<usize>,
    /// Per tracepoint field key ([`SortKey::Field`]) of a `__data_loc`
    /// field: the longest data perf compared it by, in its comparisons
    /// while inserting entries (the column's width).
    pub data_loc_widths: Vec<usize>,
}

/// `--hierarchy`: a row of perf's tree of entries, which has one level per
/// (shown) sort key.
#[derive(Clone, Debug)]
pub struct HierNode {
    /// The level: 0 for the first sort key.
    pub depth: usize,
    /// Index of the first entry under the node in [`Hists::entries`]: its
    /// values of the sort keys are the node's.
    pub entry: usize,
    pub period: u64,
    pub nr_samples: u64,
    /// Sums of the entries' [`Entry::group_periods`] and
    /// [`Entry::group_samples`].
    pub group_periods: Vec<u64>,
    pub group_samples: Vec<u64>,
    /// Sums of the entries' [`Entry::mode_periods`] and
    /// [`Entry::group_mode_periods`].
    pub mode_periods: ModePeriods,
    pub group_mode_periods: Vec<ModePeriods>,
    /// [`filter`] bits as perf sets them for a level: a filter of this
    /// level's key hides the node when its entries fail it; a filter of
    /// another level's key hides it when no node below passes.
    pub filtered: u8,
    /// The nodes one level down, in output order (none at the last level).
    pub children: Vec<usize>,
}

/// Counters for the quality notes.
#[derive(Clone, Debug, Default)]
pub struct Quality {
    pub samples: u64,
    pub no_map: u64,
    pub no_symbol: u64,
    pub lost_samples: u64,
    pub lost_events: u64,
    pub throttled: u64,
    pub unknown_id: u64,
    pub bad_samples: u64,
    /// MMAP records marked PROC_MAP_PARSE_TIMEOUT: processes whose
    /// `/proc/PID/maps` the recorder stopped reading.
    pub proc_map_timeouts: u64,
    /// A kernel sample's symbols were refused: the recorded kernel's
    /// build-id is not this machine's (perf's "No kallsyms or vmlinux with
    /// build-id ... was found").
    pub kernel_symbols_refused: bool,
}

/// A display group (`--group`, or the file's GROUP_DESC).
#[derive(Clone, Debug)]
pub struct Group {
    /// Indices into [`ReportData::hists`], leader first.
    pub members: Vec<usize>,
    /// perf's `evsel__group_desc`.
    pub desc: String,
}

/// Everything needed to print the report.
pub struct ReportData {
    pub hists: Vec<Hists>,
    pub groups: Option<Vec<Group>>,
    pub machine: Machine,
    pub strings: Strings,
    pub syms: Vec<Sym>,
    pub total_lost_samples: u64,
    pub quality: Quality,
    /// Problems to show on stderr.
    pub warnings: Vec<String>,
    pub symbolizer: Symbolizer,
    pub options: Options,
    /// Call graphs, when the file has callchains.
    pub callgraph: Option<CallgraphData>,
    /// `-T`: per-thread counter values.
    pub thread_values: ThreadValues,
    /// With `-v`: where each shown DSO's symbols come from (see
    /// [`Symbolizer::symtab_origin`]).
    pub symtab_origins: HashMap<DsoId, char>,
    /// Each cgroup id's path, from the CGROUP records.
    pub cgroups: HashMap<u64, StrId>,
}

/// perf's `perf_read_values`: READ record values summed per (pid, tid) and
/// event, both in order of first appearance.
#[derive(Debug, Default)]
pub struct ThreadValues {
    /// (attr index, event name).
    pub counters: Vec<(usize, String)>,
    /// (pid, tid, value per counter).
    pub threads: Vec<(u32, u32, Vec<u64>)>,
}

impl ThreadValues {
    fn add(&mut self, pid: u32, tid: u32, attr: usize, name: &str, value: u64) {
        let c = match self.counters.iter().position(|(a, _)| *a == attr) {
            Some(c) => c,
            None => {
                self.counters.push((attr, name.to_string()));
                self.counters.len() - 1
            }
        };
        let t = match self.threads.iter().position(|t| t.0 == pid && t.1 == tid) {
            Some(t) => t,
            None => {
                self.threads.push((pid, tid, Vec::new()));
                self.threads.len() - 1
            }
        };
        let values = &mut self.threads[t].2;
        if values.len() <= c {
            values.resize(c + 1, 0);
        }
        values[c] = values[c].wrapping_add(value);
    }
}

/// perf's `evsel__name` for an attr without a recorded name.
pub fn event_name(attr: &Attr) -> String {
    const HW: [&str; 10] = [
        "cycles",
        "instructions",
        "cache-references",
        "cache-misses",
        "branches",
        "branch-misses",
        "bus-cycles",
        "stalled-cycles-frontend",
        "stalled-cycles-backend",
        "ref-cycles",
    ];
    const SW: [&str; 12] = [
        "cpu-clock",
        "task-clock",
        "page-faults",
        "context-switches",
        "cpu-migrations",
        "minor-faults",
        "major-faults",
        "alignment-faults",
        "emulation-faults",
        "dummy",
        "bpf-output",
        "cgroup-switches",
    ];
    let base = match attr.type_ {
        attr_type::HARDWARE => HW.get(attr.config as usize).map_or_else(
            || format!("unknown-hardware:{}", attr.config),
            |s| s.to_string(),
        ),
        attr_type::SOFTWARE => SW.get(attr.config as usize).map_or_else(
            || format!("unknown-software:{}", attr.config),
            |s| s.to_string(),
        ),
        attr_type::RAW => format!("raw 0x{:x}", attr.config),
        attr_type::TRACEPOINT => "unknown tracepoint".to_string(),
        attr_type::HW_CACHE => format!("hw-cache 0x{:x}", attr.config),
        attr_type::BREAKPOINT => format!("mem:0x{:x}", attr.config1),
        t => format!("unknown attr type: {t}"),
    };
    format!("{base}{}", modifiers(attr))
}

/// perf's `evsel__add_modifiers`.
fn modifiers(attr: &Attr) -> String {
    let mut s = String::new();
    let mut exclude_guest_default = false;
    let ex = |f: u64| attr.flags & f != 0;
    if ex(af::EXCLUDE_KERNEL) || ex(af::EXCLUDE_USER) || ex(af::EXCLUDE_HV) {
        if !ex(af::EXCLUDE_KERNEL) {
            s.push('k');
        }
        if !ex(af::EXCLUDE_USER) {
            s.push('u');
        }
        if !ex(af::EXCLUDE_HV) {
            s.push('h');
        }
        exclude_guest_default = true;
    }
    let p = attr.precise_ip();
    if p > 0 {
        s.push_str(&"ppp"[..p as usize]);
        exclude_guest_default = true;
    }
    if ex(af::EXCLUDE_HOST) || ex(af::EXCLUDE_GUEST) == exclude_guest_default {
        if !ex(af::EXCLUDE_HOST) {
            s.push('H');
        }
        if !ex(af::EXCLUDE_GUEST) {
            s.push('G');
        }
    }
    if s.is_empty() {
        s
    } else {
        format!(":{s}")
    }
}

/// The build-id of the running kernel (`/sys/kernel/notes`).
fn running_kernel_build_id() -> Option<Vec<u8>> {
    let notes = std::fs::read("/sys/kernel/notes").ok()?;
    let mut i = 0usize;
    while i + 12 <= notes.len() {
        let namesz = u32::from_ne_bytes(notes[i..i + 4].try_into().ok()?) as usize;
        let descsz = u32::from_ne_bytes(notes[i + 4..i + 8].try_into().ok()?) as usize;
        let ty = u32::from_ne_bytes(notes[i + 8..i + 12].try_into().ok()?);
        let name_start = i + 12;
        let desc_start = name_start + namesz.div_ceil(4) * 4;
        let next = desc_start + descsz.div_ceil(4) * 4;
        if next > notes.len() {
            return None;
        }
        if ty == 3 && notes.get(name_start..name_start + 3) == Some(b"GNU") {
            return Some(notes[desc_start..desc_start + descsz].to_vec());
        }
        i = next;
    }
    None
}

fn trim_build_id(b: &[u8]) -> &[u8] {
    let len = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
    &b[..len]
}

/// An address's srcline and srcfile (either may be missing).
type SrclineFile = (Option<StrId>, Option<StrId>);

/// Symbol resolution with per-DSO and per-address caches: each distinct
/// (DSO, address) is symbolized once. Shared by the report, callchains
/// ([`crate::callchain`]) and `prec script`.
pub struct Resolver {
    pub symbolizer: Symbolizer,
    binaries: HashMap<DsoId, Option<BinaryId>>,
    /// (dso, al->addr) → symbol.
    cache: HashMap<(DsoId, u64), Option<SymId>>,
    by_start: HashMap<(DsoId, u64, u64), SymId>,
    /// All symbols handed out; index with [`SymId`].
    pub syms: Vec<Sym>,
    kernel_ok: Option<bool>,
    kernel_delta: Option<u64>,
    /// By DSO, address, and whether that is a children entry's raw ip
    /// (see [`Resolver::children_srcline`]).
    srclines: HashMap<(DsoId, u64, bool), SrclineFile>,
    /// The srclines above that are perf's `get_srcline` failure text (no
    /// line, addr2line failed), which call chains show differently.
    srcline_failures: HashSet<(DsoId, u64)>,
    /// `--full-source-path`: srclines with the DWARF file path.
    pub full_source_path: bool,
    /// Keep perf 6.1's count of each DSO's failed addr2line lookups, and
    /// give up on a DSO's source lines where perf does (its
    /// A2L_FAIL_LIMIT): for reports whose first sort key is the srcline.
    pub a2l_fail_limit: bool,
    a2l_failures: HashMap<DsoId, A2lFailures>,
    /// The srclines keys whose lookup found something.
    a2l_found: HashSet<(DsoId, u64, bool)>,
    /// How many DSOs perf gave up on so far.
    pub a2l_gave_up: u32,
}

/// perf 6.1's `dso->a2l_fails`: it starts at 1, a successful lookup sets
/// it to 0 for good, and each failed one before that adds 1; past
/// A2L_FAIL_LIMIT perf stops running addr2line on the DSO
/// (`dso->has_srcline = 0`) and every later srcline of it is the failure
/// text (`tar[4d789]`, not addr2line's `??:0`). It counts in the order
/// perf computes srclines, which prec follows where the srcline is the
/// first sort key (each new entry's srcline is computed as it is made).
#[derive(Clone, Copy)]
struct A2lFailures {
    fails: u32,
    gave_up: bool,
}

/// perf's A2L_FAIL_LIMIT.
const A2L_FAIL_LIMIT: u32 = 123;

impl Resolver {
    /// A resolver over `symbolizer`, with empty caches.
    pub fn new(symbolizer: Symbolizer) -> Resolver {
        Resolver {
            symbolizer,
            binaries: HashMap::default(),
            cache: HashMap::default(),
            by_start: HashMap::default(),
            syms: Vec::new(),
            kernel_ok: None,
            kernel_delta: None,
            srclines: HashMap::default(),
            srcline_failures: HashSet::default(),
            full_source_path: false,
            a2l_fail_limit: false,
            a2l_failures: HashMap::default(),
            a2l_found: HashSet::default(),
            a2l_gave_up: 0,
        }
    }

    /// The opened binary of a user-space DSO (opened on first use).
    pub fn binary(&mut self, machine: &Machine, dso: DsoId) -> Option<BinaryId> {
        if let Some(b) = self.binaries.get(&dso) {
            return *b;
        }
        let d = machine.dsos.get(dso);
        let b = match d.kind {
            DsoKind::User | DsoKind::Vdso => {
                self.symbolizer.binary(&d.long_name, d.build_id.as_deref())
            }
            _ => None,
        };
        self.binaries.insert(dso, b);
        b
    }

    /// Adds a symbol that is not a table symbol (an inline frame's
    /// function), returning its id.
    pub fn add_sym(&mut self, sym: Sym) -> SymId {
        self.syms.push(sym);
        SymId(self.syms.len() as u32 - 1)
    }

    /// Whether the kernel's symbols were used (looked up and not refused).
    pub(crate) fn kernel_symbols_loaded(&self) -> bool {
        self.kernel_ok == Some(true)
    }

    fn kernel_allowed(&mut self, machine: &Machine, dso: DsoId) -> bool {
        if let Some(ok) = self.kernel_ok {
            return ok;
        }
        let options = self.symbolizer.options();
        let ok = match machine.dsos.get(dso).build_id.as_deref() {
            // perf 6.1 reads no local kallsyms with --symfs.
            _ if options.symfs.is_some() && options.kallsyms.is_none() => false,
            None => true,
            Some(b) => {
                let b = trim_build_id(b);
                b.is_empty()
                    || running_kernel_build_id().is_some_and(|r| trim_build_id(&r) == b)
                    || self.symbolizer.options().kallsyms.is_some()
            }
        };
        self.kernel_ok = Some(ok);
        ok
    }

    /// perf's `kallsyms__delta`: how far the running kernel's `_text` (the
    /// kernel MMAP's reference symbol) is from where it was when recorded.
    fn kernel_delta(&mut self, machine: &Machine) -> u64 {
        if let Some(d) = self.kernel_delta {
            return d;
        }
        let d = machine
            .kernel_ref
            .as_ref()
            .and_then(|(name, recorded)| {
                let running = self.symbolizer.kernel_ref_address(name)?;
                Some(running.wrapping_sub(*recorded))
            })
            .unwrap_or(0);
        self.kernel_delta = Some(d);
        d
    }

    /// Where perf's kernel map lies once the kernel's symbols are loaded
    /// (see [`Machine::kernel_symbols_loaded`]): from the first core
    /// kallsyms symbol to the page after the last one's, moved to the
    /// recorded boot's addresses. `None` when perf would not load them.
    fn kernel_symbols_span(&mut self, machine: &Machine) -> Option<(u64, u64)> {
        let kernel = machine.dsos.find("[kernel.kallsyms]")?;
        if !self.kernel_allowed(machine, kernel) {
            return None;
        }
        let (first, last) = self.symbolizer.kernel_symbols_span()?;
        // symbols__fixup_end: the last kernel symbol ends a page after the
        // page it starts in.
        let end = last.checked_next_multiple_of(4096)?.checked_add(4096)?;
        let delta = self.kernel_delta(machine);
        Some((first.wrapping_sub(delta), end.wrapping_sub(delta)))
    }

    /// The kernel function at `addr` (recorded addresses) and its start:
    /// perf's `machine__resolve_kernel_addr`, which names `%pS` pointers of
    /// tracepoints.
    pub fn kernel_function(&mut self, machine: &Machine, addr: u64) -> Option<(String, u64)> {
        if let Some(kernel) = machine.dsos.find("[kernel.kallsyms]") {
            if !self.kernel_allowed(machine, kernel) {
                return None;
            }
        }
        let delta = self.kernel_delta(machine);
        let s = self.symbolizer.kernel_symbol(addr.wrapping_add(delta))?;
        Some((s.name, s.start.wrapping_sub(delta)))
    }

    /// perf's `thread__find_symbol` after the map lookup: the symbol at
    /// `addr` (= `map.map_ip(ip)`) of `map`, cached per (DSO, addr).
    pub fn symbol(
        &mut self,
        machine: &Machine,
        strings: &mut Strings,
        map: &Map,
        pid: i32,
        ip: u64,
        addr: u64,
    ) -> Option<SymId> {
        let key = (map.dso, addr);
        if let Some(&r) = self.cache.get(&key) {
            return r;
        }
        let dso = machine.dsos.get(map.dso);
        // (name, start, end, object) in al->addr space.
        let found = match dso.kind {
            DsoKind::Kernel | DsoKind::Module => {
                if self.kernel_allowed(machine, map.dso) {
                    // perf relocates the kernel's symbols to the recorded
                    // boot's addresses (KASLR), not the modules'.
                    let delta = if dso.kind == DsoKind::Kernel {
                        self.kernel_delta(machine)
                    } else {
                        0
                    };
                    self.symbolizer
                        .kernel_symbol(ip.wrapping_add(delta))
                        .map(|s| {
                            let start = map.map_ip(s.start.wrapping_sub(delta));
                            (s.name, start, start.wrapping_add(s.size), s.object)
                        })
                } else {
                    None
                }
            }
            DsoKind::Jit => self
                .symbolizer
                .jit_symbol(pid as u32, ip)
                .map(|s| (s.name, s.start, s.start.wrapping_add(s.size), s.object)),
            DsoKind::NoFile => None,
            DsoKind::User | DsoKind::Vdso => {
                let bin = match self.binaries.get(&map.dso) {
                    Some(b) => *b,
                    None => {
                        let b = self
                            .symbolizer
                            .binary(&dso.long_name, dso.build_id.as_deref());
                        self.binaries.insert(map.dso, b);
                        b
                    }
                };
                bin.and_then(|bin| {
                    let elf = self
                        .symbolizer
                        .to_elf_address(bin, map.start, map.pgoff, ip);
                    self.symbolizer.symbol(bin, elf).map(|s| {
                        // Express the symbol in al->addr space.
                        let start = addr.wrapping_sub(elf.wrapping_sub(s.start));
                        (s.name, start, start.wrapping_add(s.size), s.object)
                    })
                })
            }
        };
        let r = found.map(|(name, start, end, object)| {
            let k = (map.dso, start, end);
            if let Some(&id) = self.by_start.get(&k) {
                return id;
            }
            let id = SymId(self.syms.len() as u32);
            let name = strings.intern(&name);
            self.syms.push(Sym {
                name,
                start,
                end,
                inlined: false,
                object,
                base: None,
            });
            self.by_start.insert(k, id);
            id
        });
        self.cache.insert(key, r);
        r
    }

    /// The DWARF source file (as recorded, usually absolute) and line of
    /// `ip` in `map`: perf's `get_srcline_split`, for `srccode`.
    pub fn source_line(&mut self, machine: &Machine, map: &Map, ip: u64) -> Option<(String, u32)> {
        let dso = machine.dsos.get(map.dso);
        if !matches!(dso.kind, DsoKind::User) || dso.long_name.starts_with('[') {
            return None;
        }
        let bin = self.binary(machine, map.dso)?;
        let elf = self
            .symbolizer
            .to_elf_address(bin, map.start, map.pgoff, ip);
        let loc = self.symbolizer.source_location(bin, elf)?;
        Some((loc.file, loc.line))
    }

    /// perf's `get_srcline(dso, addr, sym, true, true)` and srcfile.
    pub fn srcline(
        &mut self,
        machine: &Machine,
        strings: &mut Strings,
        map: &Map,
        ip: u64,
        addr: u64,
        sym: Option<SymId>,
    ) -> (Option<StrId>, Option<StrId>) {
        self.srcline_keyed(machine, strings, map, (ip, addr, sym), (false, 1))
    }

    /// [`Self::srcline`] for a children entry, which perf looks up twice
    /// (see [`Self::count_raw_failure`]).
    pub(crate) fn children_identity_srcline(
        &mut self,
        machine: &Machine,
        strings: &mut Strings,
        map: &Map,
        (ip, addr, sym): (u64, u64, Option<SymId>),
    ) -> (Option<StrId>, Option<StrId>) {
        self.srcline_keyed(machine, strings, map, (ip, addr, sym), (false, 2))
    }

    /// The srcline of a children entry of an `ET_EXEC` program, at the raw
    /// ip `ip`: perf's `map__rip_2objdump` adds the text offset to an
    /// address that is already the linked one (`prog[801060]` for
    /// 0x401060), and looks that up; `sym+offset` counts from the raw ip.
    pub fn children_srcline(
        &mut self,
        machine: &Machine,
        strings: &mut Strings,
        map: &Map,
        ip: u64,
        sym: Option<SymId>,
        text_offset: u64,
    ) -> (Option<StrId>, Option<StrId>) {
        let at = ip.wrapping_add(text_offset);
        self.srcline_keyed(machine, strings, map, (at, ip, sym), (true, 2))
    }

    /// Counts one addr2line lookup of `dso` in its [`A2lFailures`].
    fn count_a2l(&mut self, dso: DsoId, found: bool) {
        let a = self.a2l_failures.entry(dso).or_insert(A2lFailures {
            fails: 1,
            gave_up: false,
        });
        if found {
            a.fails = 0;
        } else if a.fails != 0 && !a.gave_up {
            a.fails += 1;
            if a.fails > A2L_FAIL_LIMIT {
                a.gave_up = true;
                self.a2l_gave_up += 1;
            }
        }
    }

    /// A children entry's srcline looked up at the raw ip of a DSO perf
    /// runs addr2line on, which finds nothing there: twice, as perf looks
    /// up the srcline of its he_tmp and then of the entry it adds.
    pub(crate) fn count_raw_failure(&mut self, dso: DsoId) {
        if self.a2l_fail_limit {
            self.count_a2l(dso, false);
            self.count_a2l(dso, false);
        }
    }

    pub(crate) fn srcline_keyed(
        &mut self,
        machine: &Machine,
        strings: &mut Strings,
        map: &Map,
        (ip, addr, sym): (u64, u64, Option<SymId>),
        (raw, lookups): (bool, u32),
    ) -> (Option<StrId>, Option<StrId>) {
        let gave_up =
            self.a2l_fail_limit && self.a2l_failures.get(&map.dso).is_some_and(|a| a.gave_up);
        // After perf gave up on the DSO, its lookups are failures, unlike
        // those cached from before.
        let key = (map.dso, addr, raw || gave_up);
        if let Some(&r) = self.srclines.get(&key).filter(|_| !gave_up) {
            if self.a2l_fail_limit {
                let found = self.a2l_found.contains(&key);
                for _ in 0..lookups {
                    self.count_a2l(map.dso, found);
                }
            }
            return r;
        }
        let dso = machine.dsos.get(map.dso);
        let mut loc = None;
        let mut addr2line_file = None;
        // perf's map__rip_2objdump: an ET_EXEC's addresses are shown as
        // linked (`gcc[40ef39]`), others as file offsets.
        let mut objdump_addr = addr;
        if matches!(dso.kind, DsoKind::User) && !dso.long_name.starts_with('[') {
            if let Some(Some(bin)) = self.binaries.get(&map.dso).copied() {
                let elf = self
                    .symbolizer
                    .to_elf_address(bin, map.start, map.pgoff, ip);
                // perf 6.1 adjusts the symbols of ET_DYN objects too: a
                // failure shows the ELF address (lld puts .text 0x1000
                // above its file offset).
                if self.symbolizer.is_executable(bin) || !raw {
                    objdump_addr = elf;
                }
                if !gave_up {
                    loc = self.symbolizer.source_location(bin, elf);
                    if loc.is_none() {
                        addr2line_file = self.symbolizer.addr2line_function_file(bin, elf);
                    }
                }
            }
        }
        if self.a2l_fail_limit && !gave_up {
            let found = loc.is_some() || addr2line_file.is_some();
            if found {
                self.a2l_found.insert(key);
            }
            for _ in 0..lookups {
                self.count_a2l(map.dso, found);
            }
        }
        let r = match loc {
            Some(l) if self.full_source_path => (
                Some(strings.intern(&format!("{}:{}", l.file, l.line))),
                Some(strings.intern(&l.file)),
            ),
            Some(l) => (
                Some(strings.intern(&l.srcline())),
                Some(strings.intern(l.basename())),
            ),
            // perf runs addr2line on a binary it found; without line
            // information, addr2line's `FILE:?` (a function was found)
            // shows as `FILE:0` (`??:0` without a file symbol), and its
            // `??:0` means failure.
            None if addr2line_file.is_some() => match addr2line_file.flatten() {
                Some(file) => {
                    let shown = if self.full_source_path {
                        file.as_str()
                    } else {
                        file.rsplit('/').next().unwrap_or(&file)
                    };
                    // An empty file name is perf's empty srcfile, the same
                    // as none.
                    let srcfile = (!shown.is_empty()).then(|| strings.intern(shown));
                    (Some(strings.intern(&format!("{shown}:0"))), srcfile)
                }
                None => (Some(strings.intern("??:0")), None),
            },
            None => {
                if !raw {
                    self.srcline_failures.insert((map.dso, addr));
                }
                let s = match sym {
                    Some(id) => {
                        let sy = &self.syms[id.0 as usize];
                        let name = strings.get(sy.name).to_string();
                        format!("{name}+{}", addr.wrapping_sub(sy.start))
                    }
                    None => format!("{}[{objdump_addr:x}]", dso.short_name),
                };
                (Some(strings.intern(&s)), None)
            }
        };
        if !gave_up {
            self.srclines.insert(key, r);
        }
        r
    }
}

/// [`Machine::resolve`], loading the kernel's symbols on the first hit of
/// the kernel map as perf does, which can widen that map.
pub(crate) fn resolve_loading(
    machine: &mut Machine,
    resolver: &mut Resolver,
    pid: i32,
    tid: i32,
    cpumode: u16,
    ip: u64,
) -> crate::tasks::Location {
    let loc = machine.resolve(pid, tid, cpumode, ip);
    if loc.map.is_some_and(|m| machine.kernel_symbols_pending(&m)) {
        let span = resolver.kernel_symbols_span(machine);
        machine.kernel_symbols_loaded(span);
        // perf fixes up the map this sample found, in place: the sample
        // sees it with the symbols' span (`--sort dso_size`).
        let fixed = machine.resolve(pid, tid, cpumode, ip);
        if fixed
            .map
            .is_some_and(|m| loc.map.is_some_and(|old| old.dso == m.dso))
        {
            return fixed;
        }
    }
    loc
}

/// Resolves one end of a branch (perf's `ip__resolve_ams`).
fn branch_addr(
    machine: &Machine,
    resolver: &mut Resolver,
    strings: &mut Strings,
    thread: ThreadId,
    pid: i32,
    ip: u64,
) -> BranchAddr {
    let (level, map, al_addr) = machine.resolve_branch(thread, ip);
    let sym = map
        .as_ref()
        .and_then(|m| resolver.symbol(machine, strings, m, pid, ip, al_addr));
    BranchAddr {
        map,
        sym,
        addr: ip,
        al_addr,
        level,
    }
}

/// Adds the DSOs of a BUILD_ID feature table to `machine` with their
/// build-ids (guest machines are not modelled); returns each one's id and
/// kind.
pub(crate) fn add_build_ids(
    machine: &mut Machine,
    entries: &[features::BuildIdEntry],
) -> Vec<(DsoId, DsoKind)> {
    entries
        .iter()
        .map(|e| {
            let cpumode = e.misc & prec_format::constants::misc::CPUMODE_MASK;
            let kind = if e.filename.starts_with("[kernel.kallsyms]") {
                DsoKind::Kernel
            } else if cpumode == prec_format::constants::misc::KERNEL {
                DsoKind::Module
            } else if crate::maps::is_vdso(&e.filename) {
                DsoKind::Vdso
            } else {
                DsoKind::User
            };
            let name = if kind == DsoKind::Kernel {
                "[kernel.kallsyms]"
            } else {
                &e.filename
            };
            let id = machine.dsos.findnew(name, kind);
            machine.dsos.set_build_id(id, &e.build_id);
            (id, kind)
        })
        .collect()
}

/// Reading a large binary's symbols takes long: has `symbolizer` read
/// those of the user binaries `machine` knows so far (perf's BUILD_ID
/// table lists those it saw samples in) on another thread.
pub(crate) fn prefetch_sampled_binaries(machine: &Machine, symbolizer: &mut Symbolizer) {
    let sampled: Vec<(String, Option<Vec<u8>>)> = (0..machine.dsos.len() as u32)
        .map(|i| machine.dsos.get(DsoId(i)))
        .filter(|d| d.kind == DsoKind::User)
        .map(|d| {
            (
                d.long_name.clone(),
                d.build_id.as_deref().map(<[u8]>::to_vec),
            )
        })
        .collect();
    symbolizer.prefetch_binaries(&sampled);
}

/// Whether perf reports `file` in branch mode: by default when the file
/// has the BRANCH_STACK feature (not with user stacks), or as `-b` /
/// `--no-branch-stack` say.
pub fn branch_mode(file: &PerfFile<'_>, options: &Options) -> bool {
    let has_br_stack = file.feature(FeatureId::BRANCH_STACK).is_some()
        && file
            .attrs()
            .iter()
            .all(|a| a.attr.sample_type & st::STACK_USER == 0);
    options.branch_stack.unwrap_or(has_br_stack)
}

/// Reads the file and aggregates its samples.
pub fn build(file: &PerfFile<'_>, options: Options) -> ReportData {
    let pass = |options: Options, late: &[(crate::tasks::ThreadId, String)]| {
        std::thread::scope(|scope| build_naming(file, options, late, ReadAhead::spawn(scope, file)))
    };
    let data = pass(options.clone(), &[]);
    // Rare (a thread sampled before its COMM): read again, naming those
    // samples as perf's in-place comm override does.
    let late = data.machine.late_names();
    if late.is_empty() {
        return data;
    }
    pass(options, &late)
}

/// Whether one of the replay tables that find samples by their raw bytes
/// (see [`crate::replay`]) pays. Its lookups and stored keys cost about
/// what its hits save, so one that finds fewer than a third of the samples
/// it is asked for is turned off (call chains of a program without frame
/// pointers, whose garbage return addresses rarely repeat exactly). A
/// sample no table finds is resolved in full: the output stays the same.
struct TableUse {
    lookups: u32,
    hits: u32,
    on: bool,
}

/// Lookups after which [`TableUse`] decides.
const TABLE_TRIAL: u32 = 2048;

impl Default for TableUse {
    fn default() -> Self {
        TableUse {
            lookups: 0,
            hits: 0,
            on: true,
        }
    }
}

impl TableUse {
    fn looked_up(&mut self, hit: bool) {
        self.lookups += 1;
        self.hits += hit as u32;
        if self.lookups == TABLE_TRIAL && self.hits * 3 < self.lookups {
            self.on = false;
        }
    }
}

/// [`build`], with the comm each of `late_names`' threads gets from its
/// first sample on.
fn build_naming(
    file: &PerfFile<'_>,
    options: Options,
    late_names: &[(crate::tasks::ThreadId, String)],
    records: ReadAhead<'_>,
) -> ReportData {
    let endian = file.endian();
    let mut warnings: Vec<String> = file.warnings().to_vec();
    let attrs = file.attrs();
    let mut options = options;
    options.branch_mode = branch_mode(file, &options);
    if options.branch_mode {
        // perf's ipc_lbr instead: no column without cycle counts.
        options.sort.retain(|&k| k != SortKey::IpcNull);
    }
    // perf's get_default_sort_order: `trace` for a file of tracepoints.
    if !options.sort_given && tracepoints_only(file) {
        // The parent key of a non-default --parent after it; no key
        // collapses, so neither does the symbol filter apply.
        let parent = options.sort.contains(&SortKey::Parent);
        options.sort = vec![SortKey::Trace];
        if parent {
            options.sort.push(SortKey::Parent);
        }
        options.need_collapse = false;
    } else if options.mem_mode && !options.sort_given {
        // perf's default_mem_sort_order, and the parent key of a
        // non-default --parent after it.
        let parent = options.sort.contains(&SortKey::Parent);
        options.sort = mem_sort_keys();
        if parent {
            options.sort.push(SortKey::Parent);
        }
    }
    if options.branch_mode && !options.sort_given {
        // perf appends the parent key of a non-default --parent after the
        // branch keys.
        let parent = options.sort.contains(&SortKey::Parent);
        options.sort = BRANCH_SORT.to_vec();
        if parent {
            options.sort.push(SortKey::Parent);
        }
    }
    let names = event_names(file);
    let mut group_descs = Vec::new();
    let mut sockets: Vec<i32> = Vec::new();
    let mut machine = Machine::new();
    machine.name_late_threads(late_names);
    if options.verbose {
        machine.dsos.show_long_names();
    }
    // CPU_TOPOLOGY's per-CPU ids are as many as NRCPUS says are available.
    let mut topology_ctx = features::DecodeContext::default();
    if let Some(f) = file.feature(FeatureId::NRCPUS) {
        if let Ok(Feature::NrCpus { available, .. }) =
            features::decode(f.id, f.data, f.offset, endian)
        {
            topology_ctx.nr_cpus_avail = Some(available);
        }
    }
    for f in file.features() {
        match f.id {
            FeatureId::CPU_TOPOLOGY => {
                if let Ok(Feature::CpuTopology(t)) =
                    features::decode_with(f.id, f.data, f.offset, endian, &topology_ctx)
                {
                    if let Some(cpus) = &t.cpus {
                        sockets = cpus.iter().map(|c| c.socket_id as i32).collect();
                    }
                }
            }
            FeatureId::GROUP_DESC => {
                if let Ok(Feature::GroupDesc(g)) = features::decode(f.id, f.data, f.offset, endian)
                {
                    group_descs = g;
                }
            }
            FeatureId::BUILD_ID => {
                if let Ok(Feature::BuildId(entries)) =
                    features::decode(f.id, f.data, f.offset, endian)
                {
                    add_build_ids(&mut machine, &entries);
                }
            }
            _ => {}
        }
    }
    let mut hists: Vec<Hists> = (0..attrs.len())
        .map(|i| Hists {
            hits: Vec::new(),
            graph_hits: Vec::new(),
            graph_effects: Vec::new(),
            created: Vec::new(),
            hierarchy: Vec::new(),
            hierarchy_roots: Vec::new(),
            data_loc_widths: Vec::new(),
            attr_index: i,
            name: names[i].clone(),
            entries: Vec::new(),
            index: HashMap::default(),
            nr_samples: 0,
            total_period: 0,
            recorded_members: group_descs
                .iter()
                .find(|g| g.leader_idx as usize == i)
                .map_or(1, |g| g.nr_members),
        })
        .collect();
    if options.no_group {
        group_descs.clear();
    }

    // Kernel symbols from perf's build-id cache when the kernel differs.
    let mut sym_opts = SymbolizerOptions {
        symfs: options.symfs.clone(),
        build_id_dir: options.build_id_dir.clone(),
        kallsyms: options.kallsyms.clone(),
        demangle: options.demangle,
        demangle_params: options.verbose,
        loader: options.file_loader.clone(),
        ..SymbolizerOptions::default()
    };
    // perf 6.1 (dso__load_kernel_sym) reads no local kallsyms with
    // --symfs: only what --kallsyms names.
    let local_kallsyms = sym_opts.symfs.is_none();
    if sym_opts.kallsyms.is_none() && local_kallsyms {
        if let Some(k) = machine.dsos.find("[kernel.kallsyms]") {
            if let Some(b) = machine.dsos.get(k).build_id.as_deref() {
                let b = trim_build_id(b);
                let running = running_kernel_build_id();
                if !b.is_empty() && running.as_deref().map(trim_build_id) != Some(b) {
                    sym_opts.kallsyms = crate::symbolize::cached_kallsyms(&sym_opts, b);
                }
            }
        }
    }
    let mut resolver = Resolver {
        full_source_path: options.full_source_path,
        a2l_fail_limit: options.sort.first() == Some(&SortKey::Srcline),
        ..Resolver::new(Symbolizer::new(sym_opts))
    };
    let mut strings = Strings::default();
    let mut quality = Quality::default();
    let mut total_lost_samples = 0u64;
    let mut thread_values = ThreadValues::default();

    let want = |k: SortKey| options.sort.contains(&k);
    // Keys that read more of the sample than its ip (see ValueKey).
    let want_values = options.mem_mode
        || options
            .sort
            .iter()
            .any(|&k| k.reads_values() || k == SortKey::Addr);
    let mut value_ids: HashMap<ValueKey, u32> = HashMap::default();
    let mut rare_ids = RareKeys::for_sort(&options.sort);
    let need_src = want(SortKey::Srcline) || want(SortKey::Srcfile);
    let mut dso_names: HashMap<DsoId, u32> = HashMap::default();

    // Call graphs: perf's report__setup_sample_type and callchain_param.
    let has_callchain = attrs
        .iter()
        .any(|a| a.attr.sample_type & st::CALLCHAIN != 0);
    let mut cgp = options.callgraph.clone();
    cgp.enabled &= has_callchain;
    // Branch mode: perf turns --children off, and its branch entries get no
    // callchains.
    // Memory mode turns --children off too, after perf chose the caller
    // order for it.
    let mem_children = options.mem_mode && cgp.children;
    // perf decides to cumulate before a pipe's attrs arrive, from an empty
    // evlist without callchains: a pipe (a pipe-mode file given with -i
    // too) never has children, but the caller order --children chose.
    let pipe = file.mode() == prec_format::read::Mode::Pipe;
    let pipe_children = pipe && cgp.children;
    cgp.children &= has_callchain && !options.branch_mode && !options.mem_mode && !pipe;
    if (cgp.children || mem_children || pipe_children) && !cgp.order_set {
        cgp.order = Order::Caller;
    }
    let cg_on = cgp.enabled || cgp.children;
    let want_parent = want(SortKey::Parent) && has_callchain;
    // Every sample's symbol is looked up.
    prefetch_sampled_binaries(&machine, &mut resolver.symbolizer);
    // Reading /proc/kallsyms is slow; overlap it with the sample pass.
    // After the binaries: finding this boot's cached kernel symbols takes
    // this thread a few milliseconds, which the binaries' thread can use.
    if local_kallsyms
        && attrs
            .iter()
            .any(|a| !a.attr.has(prec_format::attr::flags::EXCLUDE_KERNEL))
    {
        resolver.symbolizer.prefetch_kallsyms();
    }
    // perf checks this for file-mode data only (a pipe-mode file given
    // with -i too).
    options.callgraph_missing = options.callgraph_required
        && !has_callchain
        && file.mode() != prec_format::read::Mode::Pipe;
    options.parent_no_callchain = want(SortKey::Parent) && !has_callchain && !pipe;
    // perf sets up --hierarchy's columns for the events it has at setup,
    // which for a pipe is none: it shows no samples.
    options.no_samples_shown = options.hierarchy && pipe;
    let parent_re = want(SortKey::Parent).then(|| Regex::new(&options.parent_regex));
    let ignore_callees_re = options.ignore_callees.as_deref().map(Regex::new);
    let chain_params = ChainParams {
        order: cgp.order,
        max_stack: cgp.max_stack,
        inline: cgp.inline,
    };
    let mut callchains = Callchains::new();
    let mut unwinder = crate::unwind::DwarfUnwinder::new();
    let mut chain: Vec<ChainFrame> = Vec::new();
    let mut fids: Vec<CursorFrame> = Vec::new();
    let mut scratch = FreshScratch::default();
    let mut replay_ips: Vec<u64> = Vec::new();
    // Per FrameToken slot: a remembered frame's call-graph frame and
    // replay frame id (NO_FRAME_ID until known), which a frame's
    // resolution alone decides.
    let mut frame_memo: Vec<(FrameToken, CursorFrame, u32)> = Vec::new();
    let mut frame_tokens: Vec<FrameToken> = Vec::new();
    let mut cg_frames = Frames::default();
    let mut callchain_period = vec![0u64; attrs.len()];
    let tree_keys = perf_tree_keys(&options.sort, false) && !cg_on && !options.branch_mode;
    // The same with call graphs, where each entry's graph splits with it;
    // not when a collapse step would merge the pieces again (comm).
    let tree_graphs =
        perf_tree_keys(&options.sort, true) && cg_on && !options.branch_mode && !options.hierarchy;
    // Unresolved entries of different DSOs stay apart for the replay; with
    // a collapsing key, which replays only when a symbol is looked up
    // again (see sort_entries), they merge by address as before.
    let unresolved_by_dso = tree_graphs && !options.need_collapse;
    let mut graph_log: Vec<GraphLog> = Vec::new();
    // Branch entries are per branch-stack entry: not replayed.
    // A tracepoint's trace output depends on its raw data, which the raw
    // key does not hold.
    // Nor is a sample's time.
    let replay_on = !options.branch_mode
        && !want(SortKey::Trace)
        && options.dynamic.is_empty()
        && !want(SortKey::Time)
        // Nor the cgroups, which the replay keys do not hold.
        && !want(SortKey::Cgroup)
        && !want(SortKey::CgroupId)
        // Nor the sample's other values (weights, data addresses).
        && !want_values
        // Each sample walks perf's tree.
        && !tree_keys
        // perf's addr2line failures count per lookup (see A2lFailures).
        && !resolver.a2l_fail_limit;
    let tracepoints = if want(SortKey::Trace) || !options.dynamic.is_empty() {
        crate::tracepoint::from_file(file)
    } else {
        None
    };
    let mut replay = SampleReplay::default();
    let mut raw_table = TableUse::default();
    let mut tail_table = TableUse::default();
    let mut evswitch = options.evswitch.clone();
    let cpu_utilization = options.cpu_utilization;
    let mode_periods = || cpu_utilization.then(Box::<ModePeriods>::default);
    let mut replay_kernel_epoch = machine.kernel_epoch;
    let mut sample_reads = crate::sample_read::SampleReads::default();
    let mut replay_key: Vec<u64> = Vec::new();
    let mut replay_frames: Vec<u32> = Vec::new();
    let replay_cpu = want(SortKey::Cpu) || want(SortKey::Socket);
    // The tail table (see crate::replay) forgets the sample's exact ip and
    // first chain entry: only where nothing reads more of them than their
    // map, symbol and level.
    let (symbol_names, symbol_addresses) = options.symbol_names_and_addresses();
    let tail_on = replay_on
        && symbol_addresses.is_empty()
        && cg_on
        && cgp.key == crate::callgraph::Key::Function
        && !need_src
        && !want(SortKey::SymOff)
        && !want_parent
        && !options.hide_unresolved
        && ignore_callees_re.is_none();

    // CGROUP records: each cgroup id's path.
    let mut cgroups: HashMap<u64, StrId> = HashMap::default();
    // NAMESPACES records: each thread's cgroup namespace (dev, inode), for
    // the cgroup_id key only.
    let want_cgroup_ns = want(SortKey::CgroupId);
    let mut cgroup_namespaces: HashMap<i32, (u64, u64)> = HashMap::default();
    let mut released = 0u64;
    // With call graphs, samples are resolved on this thread and added to
    // the hists on another (see Pipe); with PREC_REPORT_SEQUENTIAL=1 this
    // thread adds them too, for comparing the two.
    let pipelined = cg_on && !options.branch_mode;
    let mut entry_keys = EntryKeys::default();
    let mut sample_seq = 0u64;
    let mut added: Vec<Adder> = Vec::new();
    std::thread::scope(|scope| {
        let mut pipe: Option<Pipe> = None;
        let mut adding = Vec::new();
        if pipelined {
            let adder = |shard| Adder {
                hists: hists.clone(),
                replay: SampleReplay::default(),
                callchain_period: callchain_period.clone(),
                graph_log: Vec::new(),
                scratch: FreshScratch::default(),
                entries: EntryIds::default(),
                frames: Frames::default(),
                strings: Strings::default(),
                resolutions: Vec::new(),
                cgp: cgp.clone(),
                sort: options.sort.clone(),
                tree_graphs,
                cpu_utilization,
                shard,
            };
            let mut to = Adding::Inline(Box::new(adder(Shard::ALL)));
            if std::env::var_os("PREC_REPORT_SEQUENTIAL").is_none() {
                // The reading thread takes about half a core: a second
                // adding thread pays only with a third core (two cores:
                // 2% faster on a deep profile, 8% slower on a shallow one).
                // PREC_ADDERS=N sets the number. Graph effects are logged
                // per sample, across its entries: one thread.
                let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
                let count: u32 = if tree_graphs {
                    1
                } else {
                    std::env::var("PREC_ADDERS")
                        .ok()
                        .and_then(|v| v.parse().ok())
                        .filter(|&n| n > 0)
                        .unwrap_or(if cores >= 3 { 2 } else { 1 })
                };
                let mut sends = Vec::new();
                for index in 0..count {
                    let (send, receive) = std::sync::mpsc::sync_channel(PIPE_AHEAD);
                    let thread = adder(Shard { index, count });
                    match std::thread::Builder::new()
                        .name("hists".into())
                        .spawn_scoped(scope, move || thread.run(receive))
                    {
                        Ok(handle) => {
                            sends.push(send);
                            adding.push(handle);
                        }
                        Err(_) => break,
                    }
                }
                if sends.len() == count as usize {
                    to = Adding::Threads(sends);
                } else {
                    // Those that started end with no samples.
                    drop(sends);
                    for handle in adding.drain(..) {
                        let _ = handle.join();
                    }
                }
            }
            pipe = Some(Pipe::new(to));
            // The raw and tail tables would hold the adding side's outcomes.
            raw_table.on = false;
            tail_table.on = false;
        }
        for r in records {
            let Delivered {
                raw: r,
                attr_index: attr_idx,
            } = match r {
                Ok(r) => r,
                Err(e) => {
                    warnings.push(format!(
                        "stopped reading {e}; the report covers the records before it"
                    ));
                    break;
                }
            };
            let kind = r.header.kind;
            if r.offset >= released.saturating_add(crate::script::RELEASE_STEP) {
                if let Some(release) = &options.release {
                    release(r.offset - crate::script::RELEASE_STEP / 2);
                }
                released = r.offset;
            }
            if !kind.is_kernel() {
                continue;
            }
            let attr = attr_idx.map(|i| &attrs[i].attr);
            let rec = match r.parse(attr) {
                Ok(rec) => rec,
                Err(e) => {
                    if kind == RecordType::SAMPLE {
                        quality.bad_samples += 1;
                    }
                    warnings.push(format!("skipping bad {kind} record: {e}"));
                    continue;
                }
            };
            match rec {
                Record::Comm { pid, tid, comm, .. } => {
                    replay.invalidate(Some(pid as i32));
                    machine.comm(pid as i32, tid as i32, comm)
                }
                Record::Fork(t) => {
                    replay.invalidate(Some(t.pid as i32));
                    machine.fork(
                        t.pid as i32,
                        t.tid as i32,
                        t.ppid as i32,
                        t.ptid as i32,
                        r.header.misc,
                    )
                }
                Record::Exit(t) => {
                    replay.invalidate(Some(t.pid as i32));
                    machine.exit(t.tid as i32)
                }
                Record::Mmap(m) | Record::Mmap2(m) => {
                    if r.header.misc & prec_format::constants::misc::PROC_MAP_PARSE_TIMEOUT != 0 {
                        quality.proc_map_timeouts += 1;
                    }
                    replay.invalidate((m.pid as i32 != -1).then_some(m.pid as i32));
                    machine.mmap(r.cpumode(), r.header.misc, &m);
                }
                // perf's thread__set_namespaces: a thread's last record counts;
                // its cgroup namespace is the 7th pair.
                Record::Namespaces {
                    tid, namespaces, ..
                } if want_cgroup_ns => {
                    if let (Some(dev), Some(ino)) = (namespaces.get(12), namespaces.get(13)) {
                        cgroup_namespaces.insert(tid as i32, (dev, ino));
                    }
                }
                // perf's cgroup__findnew: the first path given an id stays.
                Record::Cgroup { id, path } => {
                    let path = String::from_utf8_lossy(path);
                    let path = strings.intern(&path);
                    cgroups.entry(id).or_insert(path);
                }
                Record::LostSamples { lost } => {
                    total_lost_samples += lost;
                    quality.lost_samples += lost;
                }
                Record::Lost { lost, .. } => quality.lost_events += lost,
                Record::Throttle { .. } => quality.throttled += 1,
                // perf's process_read_event takes `read.value`, the word after
                // the tid (the entry count with a group read_format).
                Record::Read { pid, tid, values } if options.show_threads => {
                    if let Some(ai) = attr_idx {
                        let value = match values.single {
                            Some(e) => e.value,
                            None => values.iter().count() as u64,
                        };
                        thread_values.add(pid, tid, ai, &hists[ai].name, value);
                    }
                }
                Record::Sample(s) => {
                    let Some(sample_ai) = attr_idx else {
                        quality.unknown_id += 1;
                        continue;
                    };
                    for delivery in
                        sample_reads.deliveries(file, sample_ai, &s, &mut quality.unknown_id)
                    {
                        let ai = delivery.attr_index;
                        let a = &attrs[ai].attr;
                        if options
                            .time
                            .as_ref()
                            .is_some_and(|r| r.skips(s.time.unwrap_or(0)))
                        {
                            continue;
                        }
                        if evswitch.discard(ai) {
                            continue;
                        }
                        let cpu = s.cpu.unwrap_or(u32::MAX);
                        let cgroup = s.cgroup.unwrap_or(0);
                        let cgroup_ns = match s.tid {
                            Some(t) if want_cgroup_ns => cgroup_namespaces
                                .get(&(t as i32))
                                .copied()
                                .unwrap_or((0, 0)),
                            _ => (0, 0),
                        };
                        // perf's hist_time.
                        let time_bucket = {
                            // Without PERF_SAMPLE_TIME perf's sample time is
                            // -1, whose bucket it shows (18446744073.).
                            let t = s.time.unwrap_or(u64::MAX);
                            t - t % options.time_quantum.max(1)
                        };
                        let socket = sockets.get(cpu as usize).copied().unwrap_or(-1);
                        if let Some(cpus) = &options.cpus {
                            if !cpus.contains(&cpu) {
                                continue;
                            }
                        }
                        let pid = s.pid.map_or(-1, |p| p as i32);
                        let tid = s.tid.map_or(-1, |t| t as i32);
                        let mut ip = s.ip.unwrap_or(0);
                        let period = match delivery.period {
                            Some(p) => p,
                            None if a.sample_type & st::PERIOD != 0 => s.period.unwrap_or(0),
                            None => a.sample_period_or_freq,
                        };
                        let period = if period == 0 { 1 } else { period };
                        let mut raw_pending = None;
                        if machine.kernel_epoch != replay_kernel_epoch {
                            replay_kernel_epoch = machine.kernel_epoch;
                            replay.invalidate(None);
                        }
                        if replay_on && raw_table.on && !crate::callchain::can_unwind(a, &s) {
                            let chain = match &s.callchain {
                                Some(c) if cg_on || want_parent => c.as_bytes(),
                                _ => &[],
                            };
                            let cpu_key = if replay_cpu { cpu } else { 0 };
                            match replay.find_raw(
                                ai,
                                pid,
                                tid,
                                r.cpumode(),
                                ip,
                                cpu_key,
                                chain,
                                HistTrees {
                                    hists: &hists,
                                    key: cgp.key,
                                    frames: &cg_frames,
                                    strings: &strings,
                                },
                            ) {
                                Ok(outcome) => {
                                    raw_table.looked_up(true);
                                    quality.samples += 1;
                                    quality.no_map += outcome.no_map as u64;
                                    if let Some(i) = outcome.resolved {
                                        // A raw hit's thread was resolved
                                        // before (the table forgets a pid's
                                        // samples when its tasks change).
                                        let thread = || machine.find(tid).unwrap_or(ThreadId(0));
                                        count_replayed(
                                            &mut replay,
                                            (&mut hists[ai], &mut callchain_period[ai]),
                                            tree_graphs.then_some(&mut graph_log),
                                            (i, period, thread),
                                            Shard::ALL,
                                        );
                                    }
                                    continue;
                                }
                                Err(pending) => {
                                    raw_table.looked_up(false);
                                    // Its copies so far counted where its walks
                                    // went then.
                                    if let Some(stale) = pending.stale() {
                                        if let Some((hi, count, period, effects)) =
                                            replay.take_repeats_of(stale)
                                        {
                                            apply_effects(&mut hists[hi], effects, count, period);
                                        }
                                    }
                                    raw_pending = Some(pending)
                                }
                            }
                        }
                        let mut loc =
                            resolve_loading(&mut machine, &mut resolver, pid, tid, r.cpumode(), ip);
                        quality.samples += 1;
                        let mut sym = None;
                        if let Some(map) = &loc.map {
                            // perf resolves every sample's symbol, whatever
                            // the keys: an entry without one widens the DSO
                            // column (hists__set_unres_dso_col_len), and the
                            // quality note counts them.
                            sym = resolver.symbol(&machine, &mut strings, map, pid, ip, loc.addr);
                            // Branch entries are per branch, not per sample: count
                            // the sample here.
                            if options.branch_mode && sym.is_none() {
                                quality.no_symbol += 1;
                            }
                        } else {
                            quality.no_map += 1;
                        }
                        let mut tail_pending = None;
                        // Only samples the raw table may replay (not those
                        // unwound from their stack copies).
                        // Nor where resolving the ip moved the kernel's map: the
                        // table's epoch would not say so until the next sample.
                        if tail_on
                            && tail_table.on
                            && raw_pending.is_some()
                            && sym.is_some()
                            && machine.kernel_epoch == replay_kernel_epoch
                        {
                            let found = find_tail(
                                &mut replay,
                                &mut callchains,
                                (&mut machine, &mut resolver, &mut strings),
                                &s,
                                (loc.map, loc.level, sym),
                                [
                                    ai as u64 | (r.cpumode() as u64) << 32,
                                    (pid as u32 as u64) << 32 | tid as u32 as u64,
                                    if replay_cpu { cpu as u64 } else { 0 },
                                ],
                                (&hists, &cg_frames),
                            );
                            if let Some(found) = &found {
                                tail_table.looked_up(found.is_ok());
                            }
                            match found {
                                Some(Ok(i)) => {
                                    count_replayed(
                                        &mut replay,
                                        (&mut hists[ai], &mut callchain_period[ai]),
                                        tree_graphs.then_some(&mut graph_log),
                                        (i, period, || loc.thread),
                                        Shard::ALL,
                                    );
                                    if let Some(pending) = raw_pending {
                                        let outcome = RawOutcome {
                                            no_map: false,
                                            resolved: Some(i),
                                        };
                                        replay.remember_raw(pending, outcome);
                                    }
                                    continue;
                                }
                                Some(Err(pending)) => tail_pending = Some(pending),
                                None => {}
                            }
                        }
                        if options.hide_unresolved && sym.is_none() {
                            if let Some(pending) = raw_pending {
                                let outcome = RawOutcome {
                                    no_map: loc.map.is_none(),
                                    resolved: None,
                                };
                                replay.remember_raw(pending, outcome);
                            }
                            continue;
                        }
                        // The sample's callchain (before the key: --sort parent
                        // needs it).
                        let mut parent: Option<StrId> = None;
                        if (cg_on || want_parent) && !options.branch_mode {
                            let uw: Option<&mut dyn crate::callchain::Unwinder> =
                                if crate::callchain::can_unwind(a, &s) {
                                    Some(&mut unwinder)
                                } else {
                                    None
                                };
                            callchains.set_epoch(Some(replay.epoch(pid)));
                            callchains.resolve(
                                &mut machine,
                                &mut resolver,
                                &mut strings,
                                a,
                                &s,
                                &chain_params,
                                uw,
                                &mut chain,
                            );
                            frame_tokens.clear();
                            frame_tokens.extend_from_slice(callchains.tokens());
                            if options.hide_unresolved {
                                // perf's add_callchain_ip drops unresolved entries.
                                chain.retain(|f| f.sym.is_some());
                                frame_tokens.clear();
                            }
                            if let Some(re) = &parent_re {
                                // perf's add_callchain_ip: the first entry whose
                                // symbol matches --parent.
                                parent = chain.iter().filter(|f| !f.unwound).find_map(|f| {
                                    let name = resolver.syms[f.sym?.0 as usize].name;
                                    re.is_match(strings.get(name)).then_some(name)
                                });
                            }
                            if let Some(re) = &ignore_callees_re {
                                // perf's add_callchain_ip: each entry that
                                // matches (in the chain's order) restarts the
                                // chain at itself and becomes the sample's own
                                // location, so the last match wins: the
                                // outermost in callee order, the innermost in
                                // caller order.
                                let last = chain.iter().rposition(|f| {
                                    !f.unwound
                                        && f.sym.is_some_and(|id| {
                                            re.is_match(
                                                strings.get(resolver.syms[id.0 as usize].name),
                                            )
                                        })
                                });
                                if let Some(k) = last {
                                    chain.drain(..k);
                                    frame_tokens.clear();
                                    let root = &chain[0];
                                    ip = root.ip;
                                    loc.map = root.map;
                                    loc.addr = root.addr;
                                    loc.level = root.level;
                                    sym = root.sym;
                                }
                            }
                        }
                        // The values the keys read (perf's hist_entry fields
                        // from the sample, and in memory mode its mem_info).
                        let mut values = SampleValues::default();
                        let mut vkey = ValueKey::default();
                        if want_values {
                            values = SampleValues::of(a, &s);
                            if options.mem_mode {
                                values.mem = Some(resolve_mem(
                                    (&mut machine, &mut resolver, &mut strings),
                                    &s,
                                    (pid, tid, r.cpumode()),
                                    loc.thread,
                                ));
                            }
                            let daddr_dso = values.mem.and_then(|m| {
                                dso_name_id(&mut dso_names, &mut strings, &machine, m.daddr.map)
                            });
                            vkey = value_key(&options.sort, &values, ip, daddr_dso);
                        }
                        let value_id = if want_values {
                            intern_value(&mut value_ids, vkey)
                        } else {
                            0
                        };
                        // perf's iter_add_single_mem_entry: the weight is the
                        // period (1 without one).
                        let period = if options.mem_mode {
                            values.weight.max(1)
                        } else {
                            period
                        };
                        let boxed_values = || want_values.then(|| Box::new(values));
                        let th = machine.thread(loc.thread);
                        // perf's symbol__parent_filter.
                        let mut filtered = 0;
                        if options.exclude_other && parent.is_none() {
                            filtered |= filter::PARENT;
                        }
                        let thread_wanted = options
                            .comms
                            .as_ref()
                            .is_none_or(|c| c.iter().any(|c| c == machine.comms.get(th.comm)))
                            && options.pids.as_ref().is_none_or(|p| p.contains(&th.pid))
                            && options.tids.as_ref().is_none_or(|t| t.contains(&th.tid));
                        if !thread_wanted {
                            filtered |= filter::THREAD;
                        }
                        let dso_name = dso_name_id(&mut dso_names, &mut strings, &machine, loc.map);
                        if let Some(d) = &options.dsos {
                            if !loc.map.is_some_and(|m| {
                                let dso = machine.dsos.get(m.dso);
                                d.iter()
                                    .any(|x| *x == dso.short_name || *x == dso.long_name)
                            }) {
                                filtered |= filter::DSO;
                            }
                        }
                        if options.symbols.is_some() {
                            let named = sym.is_some_and(|id| {
                                let n = strings.get(resolver.syms[id.0 as usize].name);
                                symbol_names.iter().any(|x| x == n)
                            });
                            // perf's addr_list: by the sample's ip, only
                            // with a map.
                            let at = loc.map.is_some() && symbol_addresses.contains(&ip);
                            if !named && !at {
                                filtered |= filter::SYMBOL;
                            }
                        }
                        if options.branch_mode {
                            let Some(bs) = &s.branch_stack else { continue };
                            let tid = th.tid;
                            let nr = bs.entries.len() / 3;
                            let w0_flags = bs.entries.get(2).unwrap_or(0);
                            for i in 0..nr {
                                let w = |j: usize| bs.entries.get(i * 3 + j).unwrap_or(0);
                                let from = branch_addr(
                                    &machine,
                                    &mut resolver,
                                    &mut strings,
                                    loc.thread,
                                    pid,
                                    w(0),
                                );
                                let to = branch_addr(
                                    &machine,
                                    &mut resolver,
                                    &mut strings,
                                    loc.thread,
                                    pid,
                                    w(1),
                                );
                                let bi = BranchInfo {
                                    from,
                                    to,
                                    cycles: ((w(2) >> 4) & 0xffff) as u16,
                                };
                                // The entry's srcline is map__srcline of its
                                // address, the target's raw one (see below).
                                let branch_src = match (need_src, to.map) {
                                    (false, _) => (None, None),
                                    (true, Some(m)) => resolver.srcline_keyed(
                                        &machine,
                                        &mut strings,
                                        &m,
                                        (to.addr, to.addr, to.sym),
                                        (true, 1),
                                    ),
                                    (true, None) => (Some(strings.intern("??:0")), None),
                                };
                                let mut dso_id = |m: Option<Map>| -> u32 {
                                    dso_name_id(&mut dso_names, &mut strings, &machine, m)
                                        .map_or(0, |n| n + 1)
                                };
                                // perf's iter_add_next_branch_entry: the
                                // weight is the cycles of the stack's first
                                // branch (`bi->flags`, not `bi[i]`; 1 for none),
                                // the entry's address the target's raw one.
                                let (branch_values, branch_value_id) = if want_values {
                                    let first_cycles = ((w0_flags >> 4) & 0xffff) as u16;
                                    let v = SampleValues {
                                        weight: u64::from(first_cycles.max(1)),
                                        ..values
                                    };
                                    let ip =
                                        bi.to.map.map_or(bi.to.addr, |m| m.unmap_ip(bi.to.addr));
                                    let k = value_key(&options.sort, &v, ip, None);
                                    (Some(Box::new(v)), intern_value(&mut value_ids, k))
                                } else {
                                    (None, 0)
                                };
                                let mut key = Key {
                                    values: branch_value_id,
                                    ..Key::default()
                                };
                                let mut rare = RareKey::default();
                                for k in &options.sort {
                                    match k {
                                        SortKey::Comm => key.comm = loc.comm.0,
                                        SortKey::Pid | SortKey::Tid => key.tid = tid,
                                        SortKey::Dso => key.dso = dso_id(to.map),
                                        SortKey::Sym | SortKey::SymOff | SortKey::IpcNull => {
                                            match to.sym {
                                                Some(id) => {
                                                    key.sym = id.0 + 1;
                                                    key.dso = dso_id(to.map);
                                                }
                                                None => key.addr = to.addr,
                                            }
                                            if *k == SortKey::SymOff {
                                                key.addr = to.addr;
                                            }
                                        }
                                        SortKey::DsoFrom => rare.from_dso = dso_id(from.map),
                                        SortKey::DsoTo => rare.to_dso = dso_id(to.map),
                                        SortKey::SymFrom => match from.sym {
                                            Some(id) => rare.from_sym = id.0 + 1,
                                            None => rare.from_addr = from.addr,
                                        },
                                        SortKey::SymTo => match to.sym {
                                            Some(id) => rare.to_sym = id.0 + 1,
                                            None => rare.to_addr = to.addr,
                                        },
                                        SortKey::Cycles => rare.cycles = bi.cycles,
                                        SortKey::Cpu => key.cpu = cpu,
                                        SortKey::Cgroup => rare.cgroup = cgroup,
                                        SortKey::CgroupId => rare.cgroup_ns = cgroup_ns,
                                        SortKey::Socket => rare.socket = socket,
                                        SortKey::Time => rare.time = time_bucket,
                                        // perf's branch entries have no symbol
                                        // of their own: "unknown".
                                        SortKey::SymSize => {}
                                        SortKey::DsoSize => rare.dso_size = map_size(to.map),
                                        SortKey::Srcline => {
                                            key.srcline = branch_src.0.map_or(0, |s| s.0 + 1)
                                        }
                                        SortKey::Srcfile => {
                                            key.srcfile = branch_src.1.map_or(0, |s| s.0 + 1)
                                        }
                                        SortKey::Parent | SortKey::Trace => {}
                                        // In the sample's values.
                                        _ => {}
                                    }
                                }
                                key.rare = rare_ids.id(rare);
                                let h = &mut hists[ai];
                                h.nr_samples += 1;
                                h.total_period += 1;
                                let n = h.entries.len();
                                let idx = *h.index.entry(key).or_insert(n);
                                if idx == n {
                                    h.entries.push(Entry {
                                        level: loc.level,
                                        map: to.map,
                                        addr: to.addr,
                                        sym: to.sym,
                                        srcline: branch_src.0,
                                        srcfile: branch_src.1,
                                        cpu,
                                        cgroup,
                                        cgroup_ns,
                                        time: time_bucket,
                                        socket,
                                        filtered,
                                        branch: Some(Box::new(bi)),
                                        values: branch_values,
                                        mode_periods: mode_periods(),
                                        ..Entry::blank(loc.thread, loc.comm)
                                    });
                                }
                                let e = &mut h.entries[idx];
                                e.period += 1;
                                e.nr_samples += 1;
                            }
                            continue;
                        }
                        // perf's hist_entry__trace: libtraceevent's text of the
                        // record.
                        let trace = match (&tracepoints, s.raw) {
                            (Some(tp), Some(raw)) if a.type_ == attr_type::TRACEPOINT => {
                                let text = if options.raw_trace {
                                    tp.format_fields(a.config, raw)
                                } else {
                                    tp.format(a.config, raw, &mut |addr| {
                                        resolver.kernel_function(&machine, addr)
                                    })
                                };
                                text.map(|t| strings.intern(&t))
                            }
                            // hist_entry__trace_snprintf of another event.
                            _ if want(SortKey::Trace) && a.type_ != attr_type::TRACEPOINT => {
                                Some(strings.intern("N/A"))
                            }
                            _ => None,
                        };
                        let fields = match (&tracepoints, s.raw) {
                            (Some(tp), Some(raw)) if !options.dynamic.is_empty() => {
                                let trace = trace.map(|t| strings.get(t));
                                let text = EntryFields::of(tp, &options.dynamic, ai, raw, trace);
                                Some(strings.intern(&text))
                            }
                            _ => None,
                        };
                        let mut key = Key {
                            values: value_id,
                            ..Key::default()
                        };
                        let mut rare = RareKey::default();
                        for k in &options.sort {
                            match k {
                                SortKey::Comm => key.comm = loc.comm.0,
                                SortKey::Pid | SortKey::Tid => key.tid = th.tid,
                                SortKey::Dso => key.dso = dso_name.map_or(0, |d| d + 1),
                                SortKey::Sym | SortKey::SymOff | SortKey::IpcNull => {
                                    match sym {
                                        Some(id) => key.sym = id.0 + 1,
                                        None => key.addr = loc.addr,
                                    }
                                    if *k == SortKey::SymOff {
                                        key.addr = loc.addr;
                                    }
                                    // In perf's tree each sample's own DSO steers the
                                    // walk, so unresolved entries keep theirs.
                                    if sym.is_some()
                                        || *k == SortKey::SymOff
                                        || tree_keys
                                        || unresolved_by_dso
                                    {
                                        key.dso = dso_name.map_or(0, |d| d + 1);
                                    }
                                }
                                SortKey::Cpu => key.cpu = cpu,
                                SortKey::Cgroup => rare.cgroup = cgroup,
                                SortKey::CgroupId => rare.cgroup_ns = cgroup_ns,
                                SortKey::Socket => rare.socket = socket,
                                SortKey::Time => rare.time = time_bucket,
                                SortKey::SymSize => rare.sym_size = sym_size(&resolver.syms, sym),
                                SortKey::DsoSize => rare.dso_size = map_size(loc.map),
                                SortKey::Srcline | SortKey::Srcfile => {}
                                SortKey::Trace => key.trace = trace.map_or(0, |t| t.0 + 1),
                                SortKey::Field(_) => key.fields = fields.map_or(0, |t| t.0 + 1),
                                SortKey::Parent => key.parent = parent.map_or(0, |p| p.0 + 1),
                                // Branch keys: only in branch mode.
                                SortKey::DsoFrom
                                | SortKey::DsoTo
                                | SortKey::SymFrom
                                | SortKey::SymTo
                                | SortKey::Cycles => {}
                                // In the sample's values.
                                _ => {}
                            }
                        }
                        key.rare = rare_ids.id(rare);
                        let mut src = (None, None);
                        if need_src {
                            src = match &loc.map {
                                Some(map) => {
                                    resolver.srcline(&machine, &mut strings, map, ip, loc.addr, sym)
                                }
                                None => (Some(strings.intern("??:0")), None),
                            };
                            if want(SortKey::Srcline) {
                                key.srcline = src.0.map_or(0, |s| s.0 + 1);
                            }
                            if want(SortKey::Srcfile) {
                                key.srcfile = src.1.map_or(0, |s| s.0 + 1);
                            }
                        }
                        let own_seed = EntrySeed {
                            ai: ai as u32,
                            level: loc.level,
                            map: loc.map,
                            addr: loc.addr,
                            sym,
                            srcline: src.0,
                            srcline_given: false,
                            srcfile: src.1,
                            values: boxed_values(),
                        };
                        let mut own = OwnEntry {
                            entry: 0,
                            level: loc.level,
                            comm: loc.comm,
                            trace,
                            fields,
                            parent,
                            filtered,
                        };
                        sample_seq += 1;
                        let stamp = SampleStamp {
                            seq: sample_seq,
                            period,
                            thread: loc.thread,
                            cpu,
                            cgroup,
                            cgroup_ns,
                            socket,
                            time: time_bucket,
                        };
                        // With call graphs the adding side has the entries:
                        // here they are key ids.
                        let idx = match &mut pipe {
                            Some(pipe) => {
                                let (id, new) = entry_keys.id(ai, key);
                                if new {
                                    pipe.seeds().push(own_seed.clone());
                                }
                                id as usize
                            }
                            None => entry_index(
                                &mut hists[ai],
                                key,
                                (&own_seed, &own, &stamp),
                                cpu_utilization,
                            ),
                        };
                        own.entry = idx as u32;
                        if cg_on {
                            fids.clear();
                            for (i, f) in chain.iter().enumerate() {
                                let token =
                                    frame_tokens.get(i).copied().unwrap_or(FrameToken::NONE);
                                if let Some(m) = token.slot().and_then(|slot| frame_memo.get(slot))
                                {
                                    if m.0 == token {
                                        fids.push(m.1);
                                        continue;
                                    }
                                }
                                let sym = f.sym.map(|id| {
                                    let s = &resolver.syms[id.0 as usize];
                                    (s.start, s.name)
                                });
                                // perf's callchain_srcline: every entry gets its
                                // file:line unless the key is `function`.
                                let src = if cgp.key == crate::callgraph::Key::Function {
                                    f.srcline
                                } else {
                                    chain_srcline(
                                        cgp.key,
                                        &mut callchains,
                                        &machine,
                                        &mut resolver,
                                        &mut strings,
                                        f,
                                    )
                                };
                                let fid = cg_frames.intern(cgp.key, f, sym, src);
                                if let Some(slot) = token.slot() {
                                    if frame_memo.is_empty() {
                                        frame_memo.resize(
                                            FRAME_SLOTS,
                                            (FrameToken::NONE, fid, NO_FRAME_ID),
                                        );
                                    }
                                    frame_memo[slot] = (token, fid, NO_FRAME_ID);
                                }
                                fids.push(fid);
                            }
                        }
                        // The resolved sample's key (see crate::replay): everything
                        // the entries and call trees below read.
                        let no_map = loc.map.is_none();
                        let th_tid = machine.thread(loc.thread).tid;
                        // Fields that no key reads matter only to the entries a
                        // first resolution creates: samples of other threads or
                        // CPUs share the effects.
                        let key_tid = if want(SortKey::Pid) || want(SortKey::Tid) {
                            th_tid
                        } else {
                            0
                        };
                        let (key_cpu, key_socket) = if replay_cpu { (cpu, socket) } else { (0, 0) };
                        replay_key.clear();
                        replay_key.extend_from_slice(&[
                            ai as u64
                                | (s.callchain.is_some() as u64) << 32
                                | (loc.level as u64) << 40
                                | (filtered as u64) << 48
                                | (r.cpumode() as u64) << 56,
                            idx as u64,
                            loc.comm.0 as u64 | (key_tid as u32 as u64) << 32,
                            key_cpu as u64 | (key_socket as u32 as u64) << 32,
                            parent.map_or(0, |p| p.0 as u64 + 1),
                        ]);
                        if resolver.a2l_fail_limit {
                            // The frames' srclines change when perf gives up
                            // on a DSO.
                            replay_key.push(resolver.a2l_gave_up as u64);
                        }
                        replay_frames.clear();
                        replay_ips.clear();
                        if cg_on {
                            replay_ips.extend(chain.iter().map(|f| f.ip));
                            let by_ip = want(SortKey::SymOff) || want(SortKey::Addr) || need_src;
                            for (i, (f, fid)) in chain.iter().zip(&fids).enumerate() {
                                let token =
                                    frame_tokens.get(i).copied().unwrap_or(FrameToken::NONE);
                                let memo = token
                                    .slot()
                                    .and_then(|slot| frame_memo.get_mut(slot))
                                    .filter(|m| m.0 == token);
                                if let Some(m) = &memo {
                                    if m.2 != NO_FRAME_ID {
                                        replay_frames.push(m.2);
                                        continue;
                                    }
                                }
                                let id = replay.frame_id([
                                    fid.id.0 as u64
                                        | (f.map.map_or(0, |m| m.dso.0 as u64 + 1)) << 32,
                                    f.sym.map_or(u64::MAX, |s| s.0 as u64),
                                    if f.sym.is_none() || by_ip { f.ip } else { 0 },
                                    if need_src { f.addr } else { 0 },
                                    f.level as u64
                                        | (f.cpumode as u64) << 8
                                        | (f.unwound as u64) << 24
                                        | (f.inlined as u64) << 25
                                        | (f.map.is_some() as u64) << 26
                                        | (f.srcline.map_or(0, |s| s.0 as u64 + 1)) << 32,
                                ]);
                                if let Some(m) = memo {
                                    m.2 = id;
                                }
                                replay_frames.push(id);
                            }
                        }
                        if let Some(pipe) = &mut pipe {
                            let (resolved, new) = pipe.resolved_id(&replay_key, &replay_frames);
                            if !new && resolver.a2l_fail_limit && cgp.children {
                                // perf looks each one up again.
                                for f in &chain {
                                    children_srcline(
                                        f,
                                        cgp.key,
                                        (&machine, &mut resolver, &mut strings, &mut callchains),
                                    );
                                }
                            }
                            if new {
                                let frames = frame_seeds(
                                    &chain,
                                    &fids,
                                    Seeder {
                                        machine: &machine,
                                        resolver: &mut resolver,
                                        strings: &mut strings,
                                        callchains: &mut callchains,
                                        dso_names: &mut dso_names,
                                        keys: &mut entry_keys,
                                        new_seeds: pipe.seeds(),
                                        value_ids: &mut value_ids,
                                        rare_ids: &mut rare_ids,
                                    },
                                    &SeedParams {
                                        sort: &options.sort,
                                        children: cgp.children,
                                        key: cgp.key,
                                        need_src,
                                        tree_graphs: unresolved_by_dso,
                                    },
                                    &OwnSeed {
                                        ai,
                                        level: loc.level,
                                        comm: loc.comm,
                                        tid: th_tid,
                                        cpu,
                                        cgroup,
                                        cgroup_ns,
                                        socket,
                                        time: time_bucket,
                                        parent,
                                        trace: key.trace,
                                        fields: key.fields,
                                        values: want_values.then_some((vkey, value_id, values)),
                                    },
                                );
                                pipe.add_resolution(Resolution {
                                    ai,
                                    cpumode: r.cpumode(),
                                    has_callchain: s.callchain.is_some(),
                                    weighed: vkey.he_tmp_differs(),
                                    own,
                                    frames,
                                });
                            }
                            if !pipe.add_sample(
                                resolved,
                                stamp,
                                &replay_ips,
                                (&cg_frames, &strings),
                            ) {
                                // The adding thread failed: its join says why.
                                break;
                            }
                            continue;
                        }
                        let found = replay.find_resolved(
                            &replay_key,
                            &replay_frames,
                            &replay_ips,
                            HistTrees {
                                hists: &hists,
                                key: cgp.key,
                                frames: &cg_frames,
                                strings: &strings,
                            },
                        );
                        let resolved_pending = match found {
                            Ok(i) => {
                                count_replayed(
                                    &mut replay,
                                    (&mut hists[ai], &mut callchain_period[ai]),
                                    tree_graphs.then_some(&mut graph_log),
                                    (i, period, || loc.thread),
                                    Shard::ALL,
                                );
                                if tree_keys {
                                    hists[ai].hits.push((idx as u32, r.cpumode(), period));
                                }
                                if let Some(pending) = raw_pending {
                                    let outcome = RawOutcome {
                                        no_map,
                                        resolved: Some(i),
                                    };
                                    replay.remember_raw(pending, outcome);
                                }
                                if let Some(pending) = tail_pending {
                                    replay.remember_tail(pending, i, &replay_ips);
                                }
                                continue;
                            }
                            Err(pending) => {
                                // As for a stale raw sample (unless that was it).
                                if let Some(stale) = pending.stale().filter(|&r| {
                                    raw_pending.as_ref().and_then(|p| p.stale()) != Some(r)
                                }) {
                                    if let Some((hi, count, period, effects)) =
                                        replay.take_repeats_of(stale)
                                    {
                                        apply_effects(&mut hists[hi], effects, count, period);
                                    }
                                }
                                pending
                            }
                        };
                        let stale = resolved_pending
                            .stale()
                            .or(raw_pending.as_ref().and_then(|p| p.stale()));
                        // Without call graphs (with them the Pipe has the
                        // samples).
                        let frames = Vec::new();
                        let res = Resolution {
                            ai,
                            cpumode: r.cpumode(),
                            has_callchain: s.callchain.is_some(),
                            weighed: vkey.he_tmp_differs(),
                            own,
                            frames,
                        };
                        let resolved = fresh(
                            &mut scratch,
                            Pass {
                                hists: &mut hists,
                                replay: &mut replay,
                                callchain_period: &mut callchain_period,
                                graph_log: &mut graph_log,
                                entries: &mut EntryIds::default(),
                            },
                            (&res, &stamp, &replay_ips, Some(idx)),
                            (resolved_pending, stale),
                            &FreshParams {
                                shard: Shard::ALL,
                                cgp: &cgp,
                                frames: &cg_frames,
                                strings: &strings,
                                sort: &options.sort,
                                cg_on,
                                tree_keys,
                                tree_graphs,
                                cpu_utilization,
                            },
                        );
                        if let (Some(pending), Some(i)) = (raw_pending, resolved) {
                            let outcome = RawOutcome {
                                no_map,
                                resolved: Some(i),
                            };
                            replay.remember_raw(pending, outcome);
                        }
                        if let (Some(pending), Some(i)) = (tail_pending, resolved) {
                            replay.remember_tail(pending, i, &replay_ips);
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(mut pipe) = pipe {
            pipe.flush(&cg_frames, &strings);
            if let Adding::Inline(mut adder) = pipe.adding {
                adder.finish();
                added.push(*adder);
            }
        }
        for handle in adding {
            added.push(
                handle
                    .join()
                    .unwrap_or_else(|e| std::panic::resume_unwind(e)),
            );
        }
    });
    // perf forces its --group leader at setup, before a pipe's attrs
    // arrive (grouping nothing), and again at a pipe's end-of-features
    // marker (perf 6.1's process_feature_event), which older pipes lack.
    let features_ended = file.feature(FeatureId::LAST_FEATURE_6_1).is_some();
    let force_group = options.group && !options.no_group && (!pipe || features_ended);
    let groups = make_groups(&hists, &group_descs, force_group, attrs.len());
    if let Some(adder) = Adder::merge(added) {
        hists = adder.hists;
        replay = adder.replay;
        callchain_period = adder.callchain_period;
        graph_log = adder.graph_log;
        // Only linking a group's members finds entries by key: the index
        // is as large as the entries' keys, at the pass's peak of memory.
        if groups.iter().flatten().any(|g| g.members.len() > 1) {
            entry_keys.index(&mut hists, &adder.entries);
        }
    }
    for (ai, count, period, effects) in replay.take_repeats() {
        apply_effects(&mut hists[ai], effects, count, period);
    }
    let mut replayed_ranges: HashMap<u32, (usize, u32, u32)> = HashMap::default();
    for log in graph_log {
        match log {
            GraphLog::Fresh(ai, start, end, period, thread) => {
                hists[ai].graph_hits.push((start, end, period, thread))
            }
            GraphLog::Replayed(i, period, thread) => {
                let range = match replayed_ranges.get(&i) {
                    Some(&r) => Some(r),
                    None => replay.effects_of(i).and_then(|(ai, effects)| {
                        let (&own, chain) = effects.split_last()?;
                        let g = &mut hists[ai].graph_effects;
                        let start = g.len() as u32;
                        g.push(own);
                        g.extend_from_slice(chain);
                        let r = (ai, start, g.len() as u32);
                        replayed_ranges.insert(i, r);
                        Some(r)
                    }),
                };
                if let Some((ai, start, end)) = range {
                    hists[ai].graph_hits.push((start, end, period, thread));
                }
            }
        }
    }
    for h in &hists {
        for e in h.entries.iter().filter(|e| e.branch.is_none()) {
            if e.map.is_some() && e.sym.is_none() {
                quality.no_symbol += e.nr_samples;
            }
        }
    }
    let callgraph = if cg_on {
        finish_trees(&mut hists, cgp.key, &cg_frames, &strings);
        // perf's callchain_non_filtered_period: the self periods of
        // entries no filter hides.
        let callchain_unfiltered_period = hists
            .iter()
            .map(|h| {
                h.entries
                    .iter()
                    .filter(|e| e.filtered == 0)
                    .map(|e| e.period)
                    .sum()
            })
            .collect();
        Some(CallgraphData {
            params: cgp,
            frames: cg_frames,
            callchain_period,
            callchain_unfiltered_period,
        })
    } else {
        None
    };
    quality.kernel_symbols_refused = resolver.kernel_ok == Some(false);
    let mut data = ReportData {
        hists,
        groups,
        machine,
        strings,
        syms: resolver.syms,
        total_lost_samples,
        quality,
        warnings,
        symbolizer: resolver.symbolizer,
        options,
        callgraph,
        thread_values,
        symtab_origins: HashMap::default(),
        cgroups,
    };
    if data.options.verbose {
        data.symtab_origins = symtab_origins(&data);
    }
    // perf 6.1 applies the symbol filter while collapsing the first
    // event's entries (the socket filter: every event's), and collapses
    // only when a key needs it (comm).
    let symbol_filter = data.options.symbol_filter.clone();
    let socket_filter = data.options.socket_filter;
    if data.options.need_collapse {
        for (i, h) in data.hists.iter_mut().enumerate() {
            for e in &mut h.entries {
                if let Some(filter) = symbol_filter.as_deref().filter(|_| i == 0) {
                    let matches = e.sym.is_some_and(|id| {
                        data.strings
                            .get(data.syms[id.0 as usize].name)
                            .contains(filter)
                    });
                    if !matches {
                        e.collapse_filtered |= filter::SYMBOL;
                    }
                }
                if socket_filter.is_some_and(|s| e.socket != s) {
                    e.collapse_filtered |= filter::SOCKET;
                }
            }
        }
    }
    if let Some(groups) = data.groups.clone() {
        for g in &groups {
            link_group(&mut data, g);
        }
    }
    for i in 0..data.hists.len() {
        data.hists[i].data_loc_widths = data_loc_widths(&data, &data.hists[i]);
        let collapsed = sort_entries(&mut data, i);
        if data.options.hierarchy {
            let (nodes, roots) = build_hierarchy(&data, &data.hists[i].entries, collapsed);
            data.hists[i].hierarchy = nodes;
            data.hists[i].hierarchy_roots = roots;
        }
    }
    data
}

/// perf's `hists__hierarchy_insert_entry` and output resort: the shown
/// entries merged level by level (a level's node sums the entries that
/// agree in its key and the keys above), each level in perf's output order.
fn build_hierarchy(
    d: &ReportData,
    entries: &[Entry],
    collapsed: Vec<usize>,
) -> (Vec<HierNode>, Vec<usize>) {
    // perf 6.1 shows elided keys as levels.
    let levels = &d.options.sort;
    let cmp = KeyCmp::new(d);
    // The filters whose level (key) perf's hist_entry__check_and_remove_filter
    // looks for.
    let o = &d.options;
    let checked: Vec<(u8, &[SortKey])> = [
        (
            filter::THREAD,
            &[SortKey::Comm, SortKey::Pid, SortKey::Tid][..],
            o.comms.is_some() || o.pids.is_some() || o.tids.is_some(),
        ),
        (filter::DSO, &[SortKey::Dso][..], o.dsos.is_some()),
        (filter::SYMBOL, &[SortKey::Sym][..], o.symbols.is_some()),
    ]
    .into_iter()
    .filter(|c| c.2)
    .map(|(bit, keys, _)| (bit, keys))
    .collect();
    let mut nodes: Vec<HierNode> = Vec::new();
    let mut parents: Vec<usize> = Vec::new();
    let mut roots = Vec::new();
    // perf's rbtree of each node's children (the first level's at 0, node
    // n's at n + 1), walked with the level key's se_collapse; tree node
    // ids index the Vec of hierarchy nodes.
    let mut trees: Vec<(crate::rbtree::RbTree, Vec<usize>)> = vec![Default::default()];
    // perf inserts the entries in its collapsed tree's order: a node's
    // first entry, whose values it keeps, is the first in that order.
    // Every entry, the filtered ones too: a level's node sums them all,
    // and is shown when one entry below it passes its level's filter.
    for i in collapsed {
        let e = &entries[i];
        let mut parent = usize::MAX;
        for (depth, &k) in levels.iter().enumerate() {
            let slot = parent.wrapping_add(1);
            let (tree, ids) = &trees[slot];
            let mut walk = tree.root;
            let mut found = None;
            while let Some(t) = tree.nodes.get(walk as usize) {
                let child = ids[walk as usize];
                match cmp.collapse(k, e, &entries[nodes[child].entry]) {
                    Ordering::Equal => {
                        found = Some(child);
                        break;
                    }
                    Ordering::Less => walk = t.left,
                    Ordering::Greater => walk = t.right,
                }
            }
            let n = match found {
                Some(n) => n,
                None => {
                    let n = nodes.len();
                    let (tree, ids) = &mut trees[slot];
                    tree.insert_by(0, |t, _| {
                        cmp.collapse(k, e, &entries[nodes[ids[t]].entry]) == Ordering::Less
                    });
                    ids.push(n);
                    trees.push(Default::default());
                    let mut filtered = e.filtered;
                    for &(bit, keys) in &checked {
                        if keys.contains(&k) {
                            if filtered & bit == 0 {
                                let mut p = parent;
                                while let Some(up) = nodes.get_mut(p) {
                                    up.filtered &= !bit;
                                    p = parents[p];
                                }
                            }
                        } else {
                            filtered |= nodes.get(parent).map_or(bit, |p| p.filtered & bit);
                        }
                    }
                    // perf's hists__filter_entry_by_symbol and _by_socket
                    // on the node's first entry.
                    filtered |= e.collapse_filtered;
                    nodes.push(HierNode {
                        depth,
                        entry: i,
                        period: 0,
                        nr_samples: 0,
                        group_periods: vec![0; e.group_periods().len()],
                        group_samples: vec![0; e.group_samples().len()],
                        mode_periods: ModePeriods::default(),
                        group_mode_periods: vec![
                            ModePeriods::default();
                            e.group_mode_periods().len()
                        ],
                        filtered,
                        children: Vec::new(),
                    });
                    parents.push(parent);
                    match nodes.get_mut(parent) {
                        Some(p) => p.children.push(n),
                        None => roots.push(n),
                    }
                    n
                }
            };
            let node = &mut nodes[n];
            node.period += e.period;
            node.nr_samples += e.nr_samples;
            for (sum, v) in node.group_periods.iter_mut().zip(e.group_periods().iter()) {
                *sum += v;
            }
            for (sum, v) in node.group_samples.iter_mut().zip(e.group_samples().iter()) {
                *sum += v;
            }
            if let Some(m) = &e.mode_periods {
                node.mode_periods.merge(m);
            }
            for (sum, m) in node
                .group_mode_periods
                .iter_mut()
                .zip(e.group_mode_periods().iter())
            {
                sum.merge(m);
            }
            parent = n;
        }
    }
    // perf's hist_entry__sort on each level: overhead (the group's
    // members next), then every sort key's se_sort, then -n's samples.
    let order = |a: &HierNode, b: &HierNode| -> Ordering {
        b.period
            .cmp(&a.period)
            .then_with(|| {
                let members = a.group_periods.iter().zip(&b.group_periods).skip(1);
                members
                    .map(|(x, y)| y.cmp(x))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| {
                let (x, y) = (&entries[a.entry], &entries[b.entry]);
                d.options
                    .sort
                    .iter()
                    .map(|&k| cmp.sort(k, x, y))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
            .then_with(|| {
                if d.options.show_nr_samples {
                    b.nr_samples.cmp(&a.nr_samples)
                } else {
                    Ordering::Equal
                }
            })
    };
    // perf inserts each level's nodes, in its collapse tree's order, into
    // an output rbtree: equal ones keep that order.
    for (slot, (tree, ids)) in trees.iter().enumerate() {
        let collapsed: Vec<usize> = tree.in_order().into_iter().map(|t| ids[t]).collect();
        let output = crate::callgraph::rb_insertion_order(collapsed.len(), |n, e| {
            order(&nodes[collapsed[n]], &nodes[collapsed[e]]) == Ordering::Less
        });
        let sorted: Vec<usize> = output.into_iter().map(|i| collapsed[i]).collect();
        match slot.checked_sub(1) {
            Some(parent) => nodes[parent].children = sorted,
            None => roots = sorted,
        }
    }
    (nodes, roots)
}

/// The interned short name of `map`'s DSO, remembered per DSO (the `dso`
/// sort key compares names, not DSO objects).
fn dso_name_id(
    names: &mut HashMap<DsoId, u32>,
    strings: &mut Strings,
    machine: &Machine,
    map: Option<Map>,
) -> Option<u32> {
    let m = map?;
    Some(
        *names
            .entry(m.dso)
            .or_insert_with(|| strings.intern(&machine.dsos.get(m.dso).shown_name).0),
    )
}

/// perf's symtab origin of each DSO an entry shows.
fn symtab_origins(data: &ReportData) -> HashMap<DsoId, char> {
    let entries = || data.hists.iter().flat_map(|h| &h.entries);
    // DSOs with a resolved symbol: for kallsyms and JIT maps, whether
    // perf found their symbols.
    let resolved: HashSet<DsoId> = entries()
        .filter(|e| e.sym.is_some())
        .filter_map(|e| e.map.map(|m| m.dso))
        .collect();
    let mut origins = HashMap::default();
    for m in entries().filter_map(|e| e.map) {
        origins.entry(m.dso).or_insert_with(|| {
            let dso = data.machine.dsos.get(m.dso);
            // perf's dso__load of a module it finds no file of leaves it
            // at the system module path.
            match (dso.kind, resolved.contains(&m.dso)) {
                (DsoKind::Kernel | DsoKind::Module, true) => 'k',
                (DsoKind::Module, false) => 'K',
                (DsoKind::Jit, true) => 'j',
                (DsoKind::Kernel | DsoKind::Jit | DsoKind::NoFile, _) => '!',
                (DsoKind::User | DsoKind::Vdso, _) => data
                    .symbolizer
                    .symtab_origin(&dso.long_name, dso.build_id.as_deref()),
            }
        });
    }
    origins
}

/// Adds `count` more samples of total `period` to a remembered sample's
/// `effects` (see [`crate::replay`]).
/// A sample as [`Hists::graph_hits`] needs it: its effects, or those of
/// the resolved sample it repeats, with its period.
enum GraphLog {
    /// (hists, range of its graph effects, period, thread).
    Fresh(usize, u32, u32, u64, ThreadId),
    Replayed(u32, u64, ThreadId),
}

/// A frame memo's replay frame id before it is known.
const NO_FRAME_ID: u32 = u32::MAX;

/// The call trees of the hists' entries, as [`SampleReplay`] asks them,
/// and how their walks compare frames.
struct HistTrees<'h> {
    hists: &'h [Hists],
    key: crate::callgraph::Key,
    frames: &'h Frames,
    strings: &'h Strings,
}

impl HistTrees<'_> {
    fn tree(&self, hists: usize, entry: u32) -> Option<&CallTree> {
        let e = self.hists.get(hists)?.entries.get(entry as usize)?;
        e.cg.as_ref().map(|cg| &cg.tree)
    }
}

impl Trees for HistTrees<'_> {
    fn version(&self, hists: usize, entry: u32, node: u32) -> Option<u32> {
        self.tree(hists, entry)?.mixed_version(node)
    }

    fn rewalk(&self, hists: usize, check: &Check, ip: u64) -> Option<IpSpan> {
        let tree = self.tree(hists, check.entry)?;
        let cursor = check.cursor?.with_ip(ip);
        let (child, span) =
            tree.find_mixed(check.node, &cursor, self.key, self.frames, self.strings)?;
        (child == check.child).then_some(span)
    }

    fn descends_from(&self, hists: usize, entry: u32, node: u32, ancestor: u32) -> bool {
        self.tree(hists, entry)
            .is_none_or(|t| t.descends_from(node, ancestor))
    }
}

/// What a resolution of one sample adds to the hists, besides the sample's
/// own stamp ([`SampleStamp`]): all of it follows from the sample's
/// resolved key (see [`crate::replay`]), so samples that share the key
/// share it.
struct Resolution {
    /// Index of the event's hists.
    ai: usize,
    cpumode: u16,
    has_callchain: bool,
    /// The sample has weights or the like, which perf's children entries
    /// do not compare (see [`fresh`]).
    weighed: bool,
    own: OwnEntry,
    /// The call-graph frames, with call graphs.
    frames: Vec<FrameSeed>,
}

/// The sample's own entry, and what its children entries take from it.
#[derive(Clone, Copy)]
struct OwnEntry {
    /// Its key's id (see [`EntryKeys`]); in the pass without call graphs,
    /// the entry's index.
    entry: u32,
    level: u8,
    comm: CommId,
    trace: Option<StrId>,
    fields: Option<StrId>,
    parent: Option<StrId>,
    filtered: u8,
}

/// A call-graph frame of a [`Resolution`]: the frame (at the address of the
/// sample that made it) and, with `--children`, its entry's key id and
/// level.
#[derive(Clone, Copy)]
struct FrameSeed {
    frame: CursorFrame,
    entry: u32,
    level: u8,
}

/// What a new entry takes from the resolution of its first sample, besides
/// that sample's stamp and its [`OwnEntry`]'s comm, trace output, parent
/// and filters.
#[derive(Clone)]
struct EntrySeed {
    /// The index of the entry's hists.
    ai: u32,
    level: u8,
    map: Option<Map>,
    /// perf's `he->ip` (`al->addr`).
    addr: u64,
    sym: Option<SymId>,
    srcline: Option<StrId>,
    /// The callchain node gave perf's entry its srcline (an inline
    /// expansion's, or any with `-g ...,address`/`srcline`): it counts in
    /// the column width without a comparison computing it.
    srcline_given: bool,
    srcfile: Option<StrId>,
    /// The sample values the keys read, when one does.
    values: Option<Box<SampleValues>>,
}

/// The entry made from `seed` for a sample with `stamp` whose own entry
/// is `own`.
fn new_entry(
    seed: &EntrySeed,
    own: &OwnEntry,
    stamp: &SampleStamp,
    cpu_utilization: bool,
) -> Entry {
    Entry {
        level: seed.level,
        map: seed.map,
        addr: seed.addr,
        sym: seed.sym,
        srcline: seed.srcline,
        srcline_compared: seed.srcline_given,
        srcfile: seed.srcfile,
        trace: own.trace,
        fields: own.fields,
        cpu: stamp.cpu,
        cgroup: stamp.cgroup,
        cgroup_ns: stamp.cgroup_ns,
        time: stamp.time,
        socket: stamp.socket,
        parent: own.parent,
        filtered: own.filtered,
        mode_periods: cpu_utilization.then(Box::<ModePeriods>::default),
        values: seed.values.clone(),
        ..Entry::blank(stamp.thread, own.comm)
    }
}

/// The index of the entry with `key` in `h`, a new one made from `seed` if
/// it has none.
fn entry_index(
    h: &mut Hists,
    key: Key,
    (seed, own, stamp): (&EntrySeed, &OwnEntry, &SampleStamp),
    cpu_utilization: bool,
) -> usize {
    let n = h.entries.len();
    let idx = *h.index.entry(key).or_insert(n);
    if idx == n {
        h.entries.push(new_entry(seed, own, stamp, cpu_utilization));
    }
    idx
}

/// Entry keys by id, for the pass with call graphs: its resolved keys and
/// [`Resolution`]s name entries by the ids of their keys, which the adding
/// side turns into entries ([`EntryIds`]).
#[derive(Default)]
struct EntryKeys {
    ids: HashMap<(u32, Key), u32>,
}

impl EntryKeys {
    /// The id of `key` in hists `ai`, and whether it is new.
    fn id(&mut self, ai: usize, key: Key) -> (u32, bool) {
        let next = self.ids.len() as u32;
        let id = *self.ids.entry((ai as u32, key)).or_insert(next);
        (id, id == next)
    }

    /// Fills each hists' index of keys with the entries of `entries`.
    fn index(self, hists: &mut [Hists], entries: &EntryIds) {
        for ((ai, key), id) in self.ids {
            let Some(&idx) = entries.of.get(id as usize) else {
                continue;
            };
            if let Some(h) = hists.get_mut(ai as usize).filter(|_| idx != NO_ENTRY) {
                h.index.insert(key, idx as usize);
            }
        }
    }
}

/// The adding side's entries by key id (see [`EntryKeys`]), each made from
/// its key's seed when first used.
#[derive(Default)]
struct EntryIds {
    /// Per key id, its entry's index ([`NO_ENTRY`] until made).
    of: Vec<u32>,
    seeds: Vec<EntrySeed>,
}

const NO_ENTRY: u32 = u32::MAX;

impl EntryIds {
    /// Takes the seeds of the next key ids.
    fn add_seeds(&mut self, seeds: &[EntrySeed]) {
        self.seeds.extend_from_slice(seeds);
        self.of.resize(self.seeds.len(), NO_ENTRY);
    }

    /// The index of key `id`'s entry in `h`, made now for a sample with
    /// `stamp` whose own entry is `own` if it has none (at `place` in
    /// that sample, when the entries are in shards).
    fn entry(
        &mut self,
        h: &mut Hists,
        id: u32,
        (own, stamp, place): (&OwnEntry, &SampleStamp, Option<(u64, u32)>),
        cpu_utilization: bool,
    ) -> usize {
        let Some(&idx) = self.of.get(id as usize) else {
            // No seed: not sent, which the resolving side never does.
            return usize::MAX;
        };
        if idx != NO_ENTRY {
            return idx as usize;
        }
        let idx = h.entries.len();
        h.entries.push(new_entry(
            &self.seeds[id as usize],
            own,
            stamp,
            cpu_utilization,
        ));
        self.of[id as usize] = idx as u32;
        if let Some(place) = place {
            h.created.push(place);
        }
        idx
    }
}

/// Which entries an [`Adder`] adds to: those whose key ids are in shard
/// `index` of `count`. Each call tree depends only on the appends to it, so
/// entries can be added to on different threads; the entries made are put
/// back in the order one thread would have made them.
#[derive(Clone, Copy, Debug)]
struct Shard {
    index: u32,
    count: u32,
}

impl Shard {
    const ALL: Shard = Shard { index: 0, count: 1 };

    fn has(self, entry: u32) -> bool {
        self.count == 1 || (entry.wrapping_mul(0x9e37_79b9) >> 16) % self.count == self.index
    }

    /// The shard that counts the hists' samples and periods.
    fn counts_totals(self) -> bool {
        self.index == 0
    }

    fn sharded(self) -> bool {
        self.count > 1
    }
}

/// What a sample's entries take from the sample itself (a new entry takes
/// the first sample's).
#[derive(Clone, Copy)]
struct SampleStamp {
    /// The sample's number in the pass.
    seq: u64,
    period: u64,
    thread: ThreadId,
    cpu: u32,
    cgroup: u64,
    cgroup_ns: (u64, u64),
    socket: i32,
    time: u64,
}

/// What [`frame_seeds`] resolves with.
struct Seeder<'a> {
    machine: &'a Machine,
    resolver: &'a mut Resolver,
    strings: &'a mut Strings,
    callchains: &'a mut Callchains,
    dso_names: &'a mut HashMap<DsoId, u32>,
    /// The entry keys, and the seeds of the new ones (in id order).
    keys: &'a mut EntryKeys,
    new_seeds: &'a mut Vec<EntrySeed>,
    /// The sample values the keys read, by id.
    value_ids: &'a mut HashMap<ValueKey, u32>,
    /// The rare keys' values, by id.
    rare_ids: &'a mut RareKeys,
}

/// The report's options [`frame_seeds`] reads.
struct SeedParams<'a> {
    sort: &'a [SortKey],
    children: bool,
    key: crate::callgraph::Key,
    need_src: bool,
    tree_graphs: bool,
}

/// What the children entries' keys take from the sample's own entry.
struct OwnSeed {
    ai: usize,
    level: u8,
    comm: CommId,
    tid: i32,
    cpu: u32,
    cgroup: u64,
    cgroup_ns: (u64, u64),
    socket: i32,
    time: u64,
    parent: Option<StrId>,
    /// The own key's trace value.
    trace: u32,
    /// The own key's tracepoint fields.
    fields: u32,
    /// The sample values the keys read, and their id (see [`ValueKey`]),
    /// when one does.
    values: Option<(ValueKey, u32, SampleValues)>,
}

/// The [`FrameSeed`]s of a sample's resolved call chain `chain` (interned
/// as `frames`): with `--children`, each frame's entry key as perf's
/// `iter_add_next_cumulative_entry` makes it.
fn frame_seeds(
    chain: &[ChainFrame],
    frames: &[CursorFrame],
    seeder: Seeder<'_>,
    p: &SeedParams<'_>,
    own: &OwnSeed,
) -> Vec<FrameSeed> {
    let Seeder {
        machine,
        resolver,
        strings,
        callchains,
        dso_names,
        keys,
        new_seeds,
        value_ids,
        rare_ids,
    } = seeder;
    let mut seeds = Vec::with_capacity(chain.len());
    // fill_callchain_info keeps the level of the last frame with a map for
    // frames without one.
    let mut level = own.level;
    for (f, &frame) in chain.iter().zip(frames) {
        if !p.children {
            seeds.push(FrameSeed {
                frame,
                entry: NO_ENTRY,
                level,
            });
            continue;
        }
        if f.map.is_some() {
            level = if f.cpumode == prec_format::constants::misc::KERNEL {
                b'k'
            } else {
                b'.'
            };
        }
        // perf's children entries: he->srcline is the callchain node's
        // (NULL with `-g ...,function`), else map__srcline() of the raw ip,
        // which misses for user DSOs and falls back to sym+offset.
        let srcline_given = f.map.is_some()
            && ((f.unwound && f.srcline.is_some()) || p.key != crate::callgraph::Key::Function);
        let csrc = if p.need_src {
            children_srcline(f, p.key, (machine, resolver, strings, callchains))
        } else {
            (None, None)
        };
        let fdso = dso_name_id(dso_names, strings, machine, f.map).map_or(0, |n| n + 1);
        let mut ck = Key::default();
        let mut rare = RareKey::default();
        if let Some((vkey, value_id, _)) = &own.values {
            ck.values = *value_id;
            // The frame's own address for `addr`: perf's
            // fill_callchain_info gives the entry the frame's raw address as
            // its map-relative one, which `addr` maps once more.
            if p.sort.contains(&SortKey::Addr) {
                let ip = f.map.map_or(f.ip, |m| m.unmap_ip(f.ip));
                ck.values = intern_value(value_ids, ValueKey { ip, ..*vkey });
            }
        }
        for k in p.sort {
            match k {
                SortKey::Comm => ck.comm = own.comm.0,
                SortKey::Pid | SortKey::Tid => ck.tid = own.tid,
                SortKey::Dso => ck.dso = fdso,
                SortKey::Sym | SortKey::SymOff | SortKey::IpcNull => {
                    match f.sym {
                        Some(id) => ck.sym = id.0 + 1,
                        None => ck.addr = f.ip,
                    }
                    if *k == SortKey::SymOff {
                        ck.addr = f.ip;
                    }
                    if f.sym.is_some() || *k == SortKey::SymOff || p.tree_graphs {
                        ck.dso = fdso;
                    }
                }
                SortKey::Cpu => ck.cpu = own.cpu,
                SortKey::Cgroup => rare.cgroup = own.cgroup,
                SortKey::CgroupId => rare.cgroup_ns = own.cgroup_ns,
                SortKey::Socket => rare.socket = own.socket,
                SortKey::Time => rare.time = own.time,
                SortKey::Parent => ck.parent = own.parent.map_or(0, |p| p.0 + 1),
                SortKey::Srcline => ck.srcline = csrc.0.map_or(0, |s| s.0 + 1),
                SortKey::Srcfile => ck.srcfile = csrc.1.map_or(0, |s| s.0 + 1),
                SortKey::Trace => ck.trace = own.trace,
                SortKey::Field(_) => ck.fields = own.fields,
                SortKey::SymSize => rare.sym_size = sym_size(&resolver.syms, f.sym),
                SortKey::DsoSize => rare.dso_size = map_size(f.map),
                _ => {}
            }
        }
        ck.rare = rare_ids.id(rare);
        let (entry, new) = keys.id(own.ai, ck);
        if new {
            new_seeds.push(EntrySeed {
                ai: own.ai as u32,
                level,
                map: f.map,
                addr: f.ip,
                sym: f.sym,
                srcline: csrc.0,
                srcline_given,
                srcfile: csrc.1,
                values: own.values.as_ref().map(|(_, _, v)| Box::new(*v)),
            });
        }
        seeds.push(FrameSeed {
            frame,
            entry,
            level,
        });
    }
    seeds
}

/// The srcline and srcfile of a children entry made from chain frame `f`
/// (see [`frame_seeds`]).
fn children_srcline(
    f: &ChainFrame,
    key: crate::callgraph::Key,
    (machine, resolver, strings, callchains): (
        &Machine,
        &mut Resolver,
        &mut Strings,
        &mut Callchains,
    ),
) -> (Option<StrId>, Option<StrId>) {
    match f.map {
        // A DWARF-unwound entry of an inline expansion carries its
        // srcline (perf's unwind_entry appends the inline list);
        // another has one only when the key is not the function
        // (callchain_srcline), else it is computed from the raw ip.
        Some(_) if f.unwound && f.srcline.is_some() => (
            Some(callchains.srcline(machine, resolver, strings, f)),
            None,
        ),
        Some(_) if key != crate::callgraph::Key::Function => (
            chain_srcline(key, callchains, machine, resolver, strings, f),
            None,
        ),
        Some(m) if m.identity => {
            resolver.children_identity_srcline(machine, strings, &m, (f.ip, f.addr, f.sym))
        }
        Some(m)
            if resolver
                .binary(machine, m.dso)
                .is_some_and(|b| resolver.symbolizer.is_executable(b)) =>
        {
            let bin = resolver.binary(machine, m.dso);
            let text_offset = bin.map_or(0, |b| resolver.symbolizer.text_offset(b));
            resolver.children_srcline(machine, strings, &m, f.ip, f.sym, text_offset)
        }
        Some(m) => {
            resolver.count_raw_failure(m.dso);
            let s = match f.sym {
                Some(id) => {
                    let sy = &resolver.syms[id.0 as usize];
                    format!("{}+{}", strings.get(sy.name), f.ip.wrapping_sub(sy.start))
                }
                // map__rip_2objdump adds the text offset.
                None => {
                    let bin = resolver.binary(machine, m.dso);
                    let text_offset = bin.map_or(0, |b| resolver.symbolizer.text_offset(b));
                    let at = f.ip.wrapping_add(text_offset);
                    format!("{}[{at:x}]", machine.dsos.get(m.dso).short_name)
                }
            };
            (Some(strings.intern(&s)), None)
        }
        None => (Some(strings.intern("??:0")), None),
    }
}

/// Scratch space of [`fresh`], kept between samples.
#[derive(Default)]
struct FreshScratch {
    walk_memo: WalkMemo,
    /// perf's he_cache, by entry: a u32 compares faster than a key.
    he_cache: Vec<u32>,
    /// The same by entry key id, in every shard (for srcline_compared).
    he_cache_keys: Vec<u32>,
    effects: Vec<Effect>,
    checks: Vec<Check>,
    pins: Vec<(u32, IpSpan)>,
    /// Entries whose call trees the sample's appends reordered.
    reordered: Vec<(u32, u32)>,
    frames: Vec<CursorFrame>,
}

/// What the sample pass adds resolved samples to.
struct Pass<'p, 'a> {
    hists: &'p mut [Hists],
    replay: &'p mut SampleReplay<'a>,
    callchain_period: &'p mut [u64],
    graph_log: &'p mut Vec<GraphLog>,
    /// The children entries by key id.
    entries: &'p mut EntryIds,
}

/// The report's options [`fresh`] reads.
struct FreshParams<'a> {
    shard: Shard,
    cgp: &'a crate::callgraph::Params,
    frames: &'a Frames,
    strings: &'a Strings,
    sort: &'a [SortKey],
    cg_on: bool,
    tree_keys: bool,
    tree_graphs: bool,
    cpu_utilization: bool,
}

/// Adds a sample that no remembered resolution covers to its own entry
/// (number `idx`, in the hists of `res`; `None` when not in this shard) and,
/// with call graphs, its chain to the entries' call trees, as perf's
/// `hist_entry_iter` does; remembers what it did under `pending` (see
/// [`SampleReplay::remember_resolved`]). `ips` are the addresses of the
/// sample's call-graph frames. Returns the resolved sample's index, `None`
/// when its effects cannot be replayed.
fn fresh<'a>(
    scratch: &mut FreshScratch,
    pass: Pass<'_, 'a>,
    (res, stamp, ips, idx): (&Resolution, &SampleStamp, &[u64], Option<usize>),
    (pending, stale): (crate::replay::Pending<'a>, Option<u32>),
    p: &FreshParams<'_>,
) -> Option<u32> {
    let FreshScratch {
        walk_memo,
        he_cache,
        he_cache_keys,
        effects,
        checks,
        pins,
        reordered,
        frames: fids,
    } = scratch;
    let Pass {
        hists,
        replay,
        callchain_period,
        graph_log,
        entries,
    } = pass;
    let cgp = p.cgp;
    let want = |k: SortKey| p.sort.contains(&k);
    let ai = res.ai;
    let period = stamp.period;
    effects.clear();
    checks.clear();
    pins.clear();
    reordered.clear();
    fids.clear();
    fids.extend(
        res.frames
            .iter()
            .zip(ips)
            .map(|(f, &ip)| f.frame.with_ip(ip)),
    );
    let mut replayable = true;
    let totals = p.shard.counts_totals();
    let h = &mut hists[ai];
    if totals {
        h.nr_samples += 1;
        h.total_period += period;
    }
    if let (true, Some(idx)) = (p.tree_keys, idx) {
        h.hits.push((idx as u32, res.cpumode, period));
    }
    if let Some(e) = idx.and_then(|idx| h.entries.get_mut(idx)) {
        e.period += period;
        e.nr_samples += 1;
        e.add_mode_period(res.cpumode, period);
    }
    let mut own = idx.map(|idx| Effect {
        entry: idx as u32,
        own: true,
        acc: false,
        cpumode: res.cpumode as u8,
        level: res.own.level,
        node: NO_NODE,
    });
    if p.cg_on {
        if cgp.enabled && totals {
            callchain_period[ai] += period;
        }
        let h = &mut hists[ai];
        if cgp.enabled {
            walk_memo.start((ai as u64) << 32 | stamp.thread.0 as u64, fids);
        }
        if let (Some(own), Some(idx)) = (&mut own, idx) {
            let cg = h.entries[idx].cg.get_or_insert_with(Default::default);
            if cgp.children {
                cg.acc_period += period;
                cg.acc_count += 1;
                own.acc = true;
            }
            if cgp.enabled && res.has_callchain {
                let a = append_memoized(
                    &mut cg.tree,
                    walk_memo,
                    (OWN, idx as u32),
                    fids,
                    period,
                    (cgp.key, p.frames, p.strings),
                    (&mut *checks, &mut *pins),
                );
                own.node = a.node.unwrap_or(NO_NODE);
                replayable &= a.replayable;
                if a.changed_mixed {
                    replay.trees_changed(ai, idx as u32);
                }
                if a.reorders {
                    let nodes = cg.tree.reordered().iter();
                    reordered.extend(nodes.map(|&n| (idx as u32, n)));
                }
            }
        }
        if cgp.children {
            he_cache.clear();
            he_cache.extend(idx.map(|idx| idx as u32));
            // perf's he_tmp lacks the socket, the time, the cgroup and the
            // weights: with those keys only socket 0 / time 0 / cgroup 0 /
            // weight 0 entries match, and the others add each frame's period
            // again.
            let no_dedup = (stamp.socket != 0 && want(SortKey::Socket))
                || (stamp.time != 0 && want(SortKey::Time))
                || (stamp.cgroup != 0 && want(SortKey::Cgroup))
                || (stamp.cgroup_ns != (0, 0) && want(SortKey::CgroupId))
                || res.weighed;
            // The srcline key computes srclines only where perf's
            // comparison gets to it; first, it always does.
            let srcline_marks = p.sort.iter().skip(1).any(|&k| k == SortKey::Srcline);
            he_cache_keys.clear();
            he_cache_keys.push(res.own.entry);
            for (i, f) in res.frames.iter().enumerate() {
                if srcline_marks {
                    mark_srcline_compared(h, entries, he_cache_keys, f.entry, (stamp, p));
                }
                if !p.shard.has(f.entry) {
                    continue;
                }
                let place = p.shard.sharded().then_some((stamp.seq, i as u32 + 1));
                let cidx = entries.entry(h, f.entry, (&res.own, stamp, place), p.cpu_utilization);
                if let Some(idx) = idx.filter(|_| cidx != usize::MAX) {
                    // perf compares each frame's entry with the sample's
                    // own (its he_cache), key by key, making the trace
                    // output when it gets to that key.
                    if !h.entries[idx].trace_compared && h.entries[idx].trace.is_some() {
                        let reached = trace_key_reached(&h.entries[idx], &h.entries[cidx], p.sort);
                        h.entries[idx].trace_compared = reached;
                    }
                }
                if cidx == usize::MAX || (!no_dedup && he_cache.contains(&(cidx as u32))) {
                    continue;
                }
                he_cache.push(cidx as u32);
                let cg = h.entries[cidx].cg.get_or_insert_with(Default::default);
                cg.acc_period += period;
                cg.acc_count += 1;
                let mut node = NO_NODE;
                if cgp.enabled {
                    let a = append_memoized(
                        &mut cg.tree,
                        walk_memo,
                        (i, cidx as u32),
                        fids,
                        period,
                        (cgp.key, p.frames, p.strings),
                        (&mut *checks, &mut *pins),
                    );
                    node = a.node.unwrap_or(NO_NODE);
                    replayable &= a.replayable;
                    if a.changed_mixed {
                        replay.trees_changed(ai, cidx as u32);
                    }
                    if a.reorders {
                        let nodes = cg.tree.reordered().iter();
                        reordered.extend(nodes.map(|&n| (cidx as u32, n)));
                    }
                }
                effects.push(Effect {
                    entry: cidx as u32,
                    own: false,
                    acc: true,
                    cpumode: 0,
                    level: f.level,
                    node,
                });
            }
        }
        if cgp.enabled {
            walk_memo.finish();
        }
    }
    if p.tree_graphs {
        let g = &mut hists[ai].graph_effects;
        let start = g.len() as u32;
        // perf adds the sample's own entry first (not sharded here).
        g.extend(own);
        g.extend_from_slice(effects);
        graph_log.push(GraphLog::Fresh(
            ai,
            start,
            g.len() as u32,
            period,
            stamp.thread,
        ));
    }
    effects.extend(own);
    for &(entry, node) in reordered.iter() {
        replay.reordered(ai, entry, node);
    }
    if !replayable {
        // Applied above; copies must walk the trees again.
        return None;
    }
    // One span per frame: where its walks all go the same way.
    pins.sort_unstable_by_key(|&(frame, _)| frame);
    pins.dedup_by(|later, first| {
        let same = later.0 == first.0;
        if same {
            first.1 = first.1.intersect(later.1);
        }
        same
    });
    replay.remember_resolved(
        pending,
        ai,
        p.cg_on && cgp.enabled,
        effects,
        checks,
        pins,
        stale,
    )
}

/// Whether perf's comparison of entries `own` and `frame` (a sample's own
/// entry and a children entry of it) gets to the trace key: the keys
/// before it are equal. Keys not known to be equal count as different.
/// perf's check of a sample's children entry (its he_tmp, made from key
/// `frame`) against the entries the sample was added to so far (keys
/// `cached`, its he_cache): each one is compared key by key (perf 6.1 has
/// no fast path by symbol), which computes both srclines when it gets to
/// the srcline key.
/// Marks the cached entries of this shard that it computes, and adds
/// `frame` to `cached` when the comparison finds no equal entry.
fn mark_srcline_compared(
    h: &mut Hists,
    entries: &EntryIds,
    cached: &mut Vec<u32>,
    frame: u32,
    (stamp, p): (&SampleStamp, &FreshParams<'_>),
) {
    let Some(new) = entries.seeds.get(frame as usize) else {
        return;
    };
    for &c in cached.iter() {
        let Some(old) = entries.seeds.get(c as usize) else {
            continue;
        };
        if srcline_key_reached(old, new, stamp, p.sort) && p.shard.has(c) {
            let idx = entries.of.get(c as usize).copied().unwrap_or(NO_ENTRY);
            if let Some(e) = h.entries.get_mut(idx as usize) {
                e.srcline_compared = true;
            }
        }
        if c == frame {
            return;
        }
    }
    cached.push(frame);
}

/// Whether perf's `hist_entry__cmp` of the entry made from seed `old` with
/// the he_tmp of seed `new`, both for the sample with `stamp`, gets to the
/// srcline key: whether every key before it compares equal.
fn srcline_key_reached(
    old: &EntrySeed,
    new: &EntrySeed,
    stamp: &SampleStamp,
    sort: &[SortKey],
) -> bool {
    let same_dso = old.map.map(|m| m.dso) == new.map.map(|m| m.dso);
    sort.iter()
        .take_while(|&&k| k != SortKey::Srcline)
        .all(|k| match k {
            // The sample's own, in both.
            SortKey::Pid
            | SortKey::Tid
            | SortKey::Comm
            | SortKey::Cpu
            | SortKey::Parent
            | SortKey::Trace
            | SortKey::Field(_) => true,
            // he_tmp has none of them.
            SortKey::Socket => stamp.socket == 0,
            SortKey::Time => stamp.time == 0,
            SortKey::Cgroup => stamp.cgroup == 0,
            SortKey::CgroupId => stamp.cgroup_ns == (0, 0),
            SortKey::Dso => same_dso,
            SortKey::Sym => match (old.sym, new.sym) {
                (Some(a), Some(b)) => same_dso && a == b,
                (None, None) => old.addr == new.addr,
                _ => false,
            },
            SortKey::SymOff => old.addr == new.addr,
            SortKey::Srcfile => old.srcfile == new.srcfile,
            _ => false,
        })
}

fn trace_key_reached(own: &Entry, frame: &Entry, sort: &[SortKey]) -> bool {
    sort.iter()
        .take_while(|&&k| k != SortKey::Trace)
        .all(|k| match k {
            // The sample's own, in both.
            SortKey::Pid | SortKey::Tid | SortKey::Cpu | SortKey::Field(_) => true,
            SortKey::Comm => own.comm == frame.comm,
            SortKey::Parent => own.parent == frame.parent,
            SortKey::Dso => own.map.map(|m| m.dso) == frame.map.map(|m| m.dso),
            SortKey::Sym => {
                own.map.map(|m| m.dso) == frame.map.map(|m| m.dso)
                    && match (own.sym, frame.sym) {
                        (Some(a), Some(b)) => a == b,
                        (None, None) => own.addr == frame.addr,
                        _ => false,
                    }
            }
            _ => false,
        })
}

/// Samples per hand-over from the resolving thread to the adding one.
const PIPE_BATCH: usize = 1024;
/// Batches the resolving thread may be ahead.
const PIPE_AHEAD: usize = 4;

/// Resolved samples handed from the side that resolves them to the one that
/// adds them to the hists (see [`Pipe`]), with what the adding side needs
/// to know of the resolving side's tables since the last batch.
#[derive(Default)]
struct Batch {
    samples: Vec<PipedSample>,
    /// The samples' call-graph frame addresses.
    ips: Vec<u64>,
    /// The resolutions of the resolved keys first seen in this batch, in
    /// the order of their ids.
    resolutions: Vec<std::sync::Arc<Resolution>>,
    /// The seeds of the entry keys first seen in this batch, in the order
    /// of their ids.
    seeds: Vec<EntrySeed>,
    /// Call-graph frames and strings interned since the last batch.
    frames: Vec<crate::callgraph::FrameInfo>,
    strings: Vec<std::sync::Arc<str>>,
}

/// A sample by its resolved key's id, its own stamp, and its range of
/// [`Batch::ips`].
struct PipedSample {
    resolved: u32,
    stamp: SampleStamp,
    ips: (u32, u32),
}

/// Where a [`Pipe`] hands batches to.
enum Adding {
    /// The threads of each [`Shard`].
    Threads(Vec<std::sync::mpsc::SyncSender<std::sync::Arc<Batch>>>),
    /// No thread (PREC_REPORT_SEQUENTIAL=1, or none could be started): the
    /// resolving side adds them.
    Inline(Box<Adder>),
}

/// The resolving side of the sample pass with call graphs.
///
/// With call graphs, resolving a sample (its maps, symbols and frames) and
/// adding it to the entries and their call trees each took about half of a
/// report on one thread. Only the adding depends on the samples before it
/// through the trees; what a sample resolves to depends on the records
/// before it, which the resolving thread reads. So one thread resolves each
/// sample to its resolved key (see [`crate::replay`]), interned as an id,
/// and another ([`Adder`]) adds the samples in order, by id: a key's
/// [`Resolution`] is made once and sent with the first sample that has it.
struct Pipe {
    adding: Adding,
    batch: Batch,
    /// Resolved keys (context words, then frame ids) by id.
    resolved: HashMap<Box<[u64]>, u32>,
    key: Vec<u64>,
    frames_sent: usize,
    strings_sent: usize,
}

impl Pipe {
    fn new(adding: Adding) -> Pipe {
        Pipe {
            adding,
            batch: Batch::default(),
            resolved: HashMap::default(),
            key: Vec::new(),
            frames_sent: 0,
            strings_sent: 0,
        }
    }

    /// The id of the resolved key of `context` words and `frames`; true
    /// when it is new (then [`Self::add_resolution`] must follow).
    fn resolved_id(&mut self, context: &[u64], frames: &[u32]) -> (u32, bool) {
        self.key.clear();
        self.key.extend_from_slice(context);
        // Two frame ids a word, after their count: a table of every
        // distinct chain is among a report's largest.
        self.key.push(frames.len() as u64);
        self.key.extend(frames.chunks(2).map(|pair| {
            pair.iter()
                .enumerate()
                .fold(0u64, |word, (i, &f)| word | (f as u64) << (32 * i))
        }));
        if let Some(&id) = self.resolved.get(&self.key[..]) {
            return (id, false);
        }
        let id = self.resolved.len() as u32;
        self.resolved
            .insert(self.key.clone().into_boxed_slice(), id);
        (id, true)
    }

    fn add_resolution(&mut self, res: Resolution) {
        self.batch.resolutions.push(std::sync::Arc::new(res));
    }

    /// The seeds of new entry keys (see [`frame_seeds`]), in id order.
    fn seeds(&mut self) -> &mut Vec<EntrySeed> {
        &mut self.batch.seeds
    }

    /// Queues a sample; hands the batch over when it is full. False when
    /// the adding thread is gone.
    fn add_sample(
        &mut self,
        resolved: u32,
        stamp: SampleStamp,
        ips: &[u64],
        (frames, strings): (&Frames, &Strings),
    ) -> bool {
        let start = self.batch.ips.len() as u32;
        self.batch.ips.extend_from_slice(ips);
        self.batch.samples.push(PipedSample {
            resolved,
            stamp,
            ips: (start, self.batch.ips.len() as u32),
        });
        self.batch.samples.len() < PIPE_BATCH || self.flush(frames, strings)
    }

    /// Hands the queued samples over. False when the adding thread is gone.
    fn flush(&mut self, frames: &Frames, strings: &Strings) -> bool {
        let mut batch = std::mem::take(&mut self.batch);
        batch.frames = frames.since(self.frames_sent).to_vec();
        self.frames_sent = frames.len();
        batch.strings = strings.since(self.strings_sent).to_vec();
        self.strings_sent = strings.len();
        match &mut self.adding {
            Adding::Threads(sends) => {
                let batch = std::sync::Arc::new(batch);
                sends.iter().all(|send| send.send(batch.clone()).is_ok())
            }
            Adding::Inline(adder) => {
                adder.take(&batch);
                true
            }
        }
    }
}

/// The adding side of the sample pass with call graphs (see [`Pipe`]): the
/// hists and what the pass remembers of resolved samples, and copies of
/// the resolving side's frames and strings that the call trees compare.
struct Adder {
    hists: Vec<Hists>,
    replay: SampleReplay<'static>,
    callchain_period: Vec<u64>,
    graph_log: Vec<GraphLog>,
    scratch: FreshScratch,
    entries: EntryIds,
    frames: Frames,
    strings: Strings,
    resolutions: Vec<std::sync::Arc<Resolution>>,
    cgp: crate::callgraph::Params,
    sort: Vec<SortKey>,
    tree_graphs: bool,
    cpu_utilization: bool,
    shard: Shard,
}

impl Adder {
    /// Adds the batches' samples in order until the resolving side is done.
    fn run(mut self, batches: std::sync::mpsc::Receiver<std::sync::Arc<Batch>>) -> Adder {
        for batch in batches {
            self.take(&batch);
        }
        self.finish();
        self
    }

    /// The adders of each shard as one: their entries in the order one
    /// adder would have made them.
    fn merge(mut adders: Vec<Adder>) -> Option<Adder> {
        if adders.len() <= 1 {
            return adders.pop();
        }
        let count = adders.len() as u32;
        // Per hists, per shard, per entry: its index in the merged hists.
        let mut moved: Vec<Vec<Vec<u32>>> = Vec::new();
        let mut hists = Vec::new();
        for ai in 0..adders[0].hists.len() {
            let mut order: Vec<(u64, u32, usize, usize)> = Vec::new();
            let mut taken: Vec<Vec<Option<Entry>>> = Vec::new();
            for (k, adder) in adders.iter_mut().enumerate() {
                let h = &mut adder.hists[ai];
                let created = std::mem::take(&mut h.created);
                order.extend(
                    created
                        .iter()
                        .enumerate()
                        .map(|(i, &(seq, place))| (seq, place, k, i)),
                );
                taken.push(
                    std::mem::take(&mut h.entries)
                        .into_iter()
                        .map(Some)
                        .collect(),
                );
            }
            order.sort_unstable();
            // The totals are the first shard's.
            let mut h = adders[0].hists[ai].clone();
            let mut new_index: Vec<Vec<u32>> =
                taken.iter().map(|t| vec![NO_ENTRY; t.len()]).collect();
            for (_, _, k, i) in order {
                if let Some(e) = taken[k][i].take() {
                    new_index[k][i] = h.entries.len() as u32;
                    h.entries.push(e);
                }
            }
            moved.push(new_index);
            hists.push(h);
        }
        let mut merged = adders.remove(0);
        let mut entries = std::mem::take(&mut merged.entries);
        for (id, of) in entries.of.iter_mut().enumerate() {
            let id32 = id as u32;
            let Some(k) = (0..count).find(|&index| Shard { index, count }.has(id32)) else {
                continue;
            };
            let local = match k {
                0 => *of,
                k => adders[k as usize - 1]
                    .entries
                    .of
                    .get(id)
                    .copied()
                    .unwrap_or(NO_ENTRY),
            };
            let ai = entries.seeds.get(id).map_or(0, |s| s.ai as usize);
            *of = moved
                .get(ai)
                .and_then(|m| m.get(k as usize))
                .and_then(|m| m.get(local as usize))
                .copied()
                .unwrap_or(NO_ENTRY);
        }
        merged.hists = hists;
        merged.entries = entries;
        Some(merged)
    }

    /// Adds the copies of remembered samples counted so far.
    fn finish(&mut self) {
        for (ai, count, period, effects) in self.replay.take_repeats() {
            apply_effects(&mut self.hists[ai], effects, count, period);
        }
    }

    fn take(&mut self, batch: &Batch) {
        self.frames.extend_copy(&batch.frames);
        self.strings.extend_copy(&batch.strings);
        self.entries.add_seeds(&batch.seeds);
        self.resolutions.extend(batch.resolutions.iter().cloned());
        for s in &batch.samples {
            let ips = batch
                .ips
                .get(s.ips.0 as usize..s.ips.1 as usize)
                .unwrap_or(&[]);
            self.add(s, ips);
        }
    }

    fn add(&mut self, s: &PipedSample, ips: &[u64]) {
        let Adder {
            hists,
            replay,
            callchain_period,
            graph_log,
            scratch,
            entries,
            frames,
            strings,
            resolutions,
            cgp,
            sort,
            tree_graphs,
            cpu_utilization,
            shard,
        } = self;
        let Some(res) = resolutions.get(s.resolved as usize) else {
            return;
        };
        let ai = res.ai;
        let place = shard.sharded().then_some((s.stamp.seq, 0));
        let own = (&res.own, &s.stamp, place);
        let idx = shard
            .has(res.own.entry)
            .then(|| entries.entry(&mut hists[ai], res.own.entry, own, *cpu_utilization))
            .filter(|&idx| idx != usize::MAX);
        let found = replay.find_resolved(
            &[s.resolved as u64],
            &[],
            ips,
            HistTrees {
                hists,
                key: cgp.key,
                frames,
                strings,
            },
        );
        let pending = match found {
            Ok(i) => {
                count_replayed(
                    replay,
                    (&mut hists[ai], &mut callchain_period[ai]),
                    tree_graphs.then_some(graph_log),
                    (i, s.stamp.period, || s.stamp.thread),
                    *shard,
                );
                return;
            }
            Err(pending) => pending,
        };
        let stale = pending.stale();
        if let Some(stale) = stale {
            if let Some((hi, count, period, effects)) = replay.take_repeats_of(stale) {
                apply_effects(&mut hists[hi], effects, count, period);
            }
        }
        fresh(
            scratch,
            Pass {
                hists,
                replay,
                callchain_period,
                graph_log,
                entries,
            },
            (res, &s.stamp, ips, idx),
            (pending, stale),
            &FreshParams {
                shard: *shard,
                cgp,
                frames,
                strings,
                sort,
                cg_on: true,
                tree_keys: false,
                tree_graphs: *tree_graphs,
                cpu_utilization: *cpu_utilization,
            },
        );
    }
}

/// Appends the chain from frame `at` on (all of `chain` for [`OWN`]) to
/// `tree`, entry `entry`'s, through `memo`; adds the checks and pinned
/// frames the node it reaches depends on.
fn append_memoized(
    tree: &mut CallTree,
    memo: &mut WalkMemo,
    (at, entry): (usize, u32),
    chain: &[CursorFrame],
    period: u64,
    (key, frames, strings): (crate::callgraph::Key, &Frames, &Strings),
    (checks, pins): (&mut Vec<Check>, &mut Vec<(u32, IpSpan)>),
) -> Appended {
    let first = if at == OWN { 0 } else { at };
    let (start, known) = memo.resume(at, entry, tree);
    let a = tree.append_resumed(
        start,
        chain.len() - first,
        &chain[first + known..],
        period,
        key,
        frames,
        strings,
        memo.path(),
    );
    // Steps are indexes into the walk, which starts at frame `first`.
    let path = memo.walk_path();
    let check = |step: usize, node: u32, version: u32| Check {
        entry,
        node,
        version,
        frame: (first + step) as u32,
        cursor: chain.get(first + step).copied(),
        child: path.get(step).copied().unwrap_or(NO_NODE),
    };
    for g in memo.gates() {
        checks.push(check(g.step as usize, g.parent, g.version));
        pins.push((first as u32 + g.step, g.span));
    }
    for (&(step, span), (node, version)) in tree.walked_steps().iter().zip(tree.walked_mixed()) {
        checks.push(check(known + step as usize, node, version));
        pins.push(((first + known) as u32 + step, span));
    }
    if a.reorders {
        memo.invalidate();
    } else {
        memo.walked(at, entry, known, tree);
    }
    a
}

/// Finishes every entry's call tree ([`CallTree::finish`]), on two
/// threads: the trees are independent, and a big profile has thousands.
fn finish_trees(
    hists: &mut [Hists],
    key: crate::callgraph::Key,
    frames: &Frames,
    strings: &Strings,
) {
    let mut trees: Vec<&mut CallTree> = hists
        .iter_mut()
        .flat_map(|h| h.entries.iter_mut())
        .filter_map(|e| e.cg.as_mut().map(|cg| &mut cg.tree))
        .collect();
    // Halves by nodes, the work's measure.
    let total: usize = trees.iter().map(|t| t.node_count()).sum();
    let mut half = 0;
    let mut nodes = 0;
    while half < trees.len() && nodes < total / 2 {
        nodes += trees[half].node_count();
        half += 1;
    }
    let (first, second) = trees.split_at_mut(half);
    let finish = |part: &mut [&mut CallTree]| {
        for t in part {
            t.finish(key, frames, strings);
        }
    };
    if total < 1 << 16 {
        finish(first);
        finish(second);
        return;
    }
    std::thread::scope(|scope| {
        scope.spawn(|| finish(first));
        finish(second);
    });
}

/// Counts a sample found in one of the replay's tables (resolved sample
/// `i`, with `period`): its copy for the replay to add, the event's totals,
/// and with `graph_log` (perf's split graphs) its thread's entry.
fn count_replayed(
    replay: &mut SampleReplay<'_>,
    (hists, callchain_period): (&mut Hists, &mut u64),
    graph_log: Option<&mut Vec<GraphLog>>,
    (i, period, thread): (u32, u64, impl FnOnce() -> ThreadId),
    shard: Shard,
) {
    let callchain = replay.repeat(i, period);
    if let Some(log) = graph_log {
        log.push(GraphLog::Replayed(i, period, thread()));
    }
    if shard.counts_totals() {
        if callchain {
            *callchain_period += period;
        }
        hists.nr_samples += 1;
        hists.total_period += period;
    }
}

/// Looks a sample up in the replay's tail table (see
/// [`SampleReplay::find_tail`]): `own` is what its ip resolved to (map,
/// level, symbol), `context` its raw words other than addresses. `None`
/// when its ip has no map, or its chain does not start with a marker and
/// an address whose frame has a map and a symbol: those are not looked
/// up.
fn find_tail<'a>(
    replay: &mut SampleReplay<'a>,
    callchains: &mut Callchains,
    (machine, resolver, strings): (&mut Machine, &mut Resolver, &mut Strings),
    s: &prec_format::Sample<'a>,
    own: (Option<Map>, u8, Option<SymId>),
    context: [u64; 3],
    (hists, cg_frames): (&[Hists], &Frames),
) -> Option<Result<u32, crate::replay::TailPending<'a>>> {
    let (Some(own_map), own_level, own_sym) = own else {
        return None;
    };
    let chain = s.callchain.as_ref()?;
    let (marker, first) = (chain.get(0)?, chain.get(1)?);
    let mode = crate::callchain::marker_mode(marker)?;
    if first >= prec_format::constants::callchain_context::MAX {
        return None;
    }
    let pid = s.pid.map_or(-1, |p| p as i32);
    let tid = s.tid.map_or(-1, |t| t as i32);
    let epoch = replay.epoch(pid);
    callchains.set_epoch(Some(epoch));
    let kernel_epoch = machine.kernel_epoch;
    let frame = callchains.frame(machine, resolver, strings, pid, tid, mode, first);
    if machine.kernel_epoch != kernel_epoch {
        return None;
    }
    let (Some(frame_map), Some(frame_sym)) = (frame.map, frame.sym) else {
        return None;
    };
    let place = |m: Map, level: u8, sym: Option<SymId>| {
        [
            m.start,
            m.dso.0 as u64 | (level as u64) << 32,
            sym.map_or(0, |s| s.0 as u64 + 1),
        ]
    };
    let [c0, c1, c2] = context;
    let [o0, o1, o2] = place(own_map, own_level, own_sym);
    let [f0, f1, f2] = place(frame_map, frame.level, Some(frame_sym));
    let head = [c0, c1, c2, epoch, marker, o0, o1, o2, f0, f1, f2];
    let rest = chain.as_bytes().get(16..)?;
    Some(replay.find_tail(
        &head,
        first,
        rest,
        HistTrees {
            hists,
            key: crate::callgraph::Key::Function,
            frames: cg_frames,
            strings,
        },
    ))
}

fn apply_effects(h: &mut Hists, effects: &[Effect], count: u64, period: u64) {
    for eff in effects {
        let e = &mut h.entries[eff.entry as usize];
        if eff.own {
            e.period += period;
            e.nr_samples += count;
            e.add_mode_period(eff.cpumode as u16, period);
        }
        if let Some(cg) = &mut e.cg {
            if eff.acc {
                cg.acc_period += period;
                cg.acc_count += count;
            }
            if eff.node != NO_NODE {
                cg.tree.add_hits(eff.node, count, period);
            }
        }
    }
}

fn make_groups(
    hists: &[Hists],
    descs: &[features::GroupDesc],
    force: bool,
    nr: usize,
) -> Option<Vec<Group>> {
    let mut leader_of: Vec<usize> = (0..nr).collect();
    let mut names: HashMap<usize, Option<String>> = HashMap::default();
    let mut any = false;
    // perf's evsel->forced_leader: the description is the bare list.
    let mut forced = false;
    if force && descs.iter().all(|d| d.nr_members <= 1) {
        if nr > 1 {
            // --group without GROUP_DESC: perf forces one group of all events.
            leader_of.iter_mut().for_each(|l| *l = 0);
            names.insert(0, None);
            any = true;
            forced = true;
        }
    } else {
        for d in descs {
            let l = d.leader_idx as usize;
            if d.nr_members <= 1 || l >= nr {
                continue;
            }
            let end = (l + d.nr_members as usize).min(nr);
            leader_of[l..end].iter_mut().for_each(|x| *x = l);
            names.insert(l, (d.name != "{anon_group}").then(|| d.name.clone()));
            any = true;
        }
    }
    if !any {
        return None;
    }
    let mut groups = Vec::new();
    for i in 0..nr {
        if leader_of[i] != i {
            continue;
        }
        let members: Vec<usize> = (0..nr).filter(|&m| leader_of[m] == i).collect();
        let desc = if members.len() > 1 && forced {
            let list: Vec<&str> = members.iter().map(|&m| hists[m].name.as_str()).collect();
            list.join(", ")
        } else if members.len() > 1 {
            let list: Vec<&str> = members.iter().map(|&m| hists[m].name.as_str()).collect();
            let name = names.get(&i).cloned().flatten();
            format!(
                "{} {{ {} }}",
                name.as_deref().unwrap_or("anon group"),
                list.join(", ")
            )
        } else {
            hists[i].name.clone()
        };
        groups.push(Group { members, desc });
    }
    Some(groups)
}

/// Merges group members' entries into the leader's hists (perf's
/// `hists__match` + `hists__link`): entries only members have are added to
/// the leader with a zero period.
fn link_group(data: &mut ReportData, g: &Group) {
    let n = g.members.len();
    if n <= 1 {
        return;
    }
    let leader = g.members[0];
    for e in &mut data.hists[leader].entries {
        let mut values = GroupValues::zeros(n, e.mode_periods.is_some());
        values.periods[0] = e.period;
        values.samples[0] = e.nr_samples;
        values.acc[0] = e.acc_period();
        if let Some(m) = &e.mode_periods {
            values.mode_periods[0] = **m;
        }
        e.group = Some(Box::new(values));
    }
    for (mi, &m) in g.members.iter().enumerate().skip(1) {
        let member = std::mem::take(&mut data.hists[m].entries);
        let index = std::mem::take(&mut data.hists[m].index);
        let mut by_idx: Vec<(Key, usize)> = index.into_iter().collect();
        by_idx.sort_by_key(|x| x.1);
        for (key, idx) in by_idx {
            let Some(me) = member.get(idx) else { continue };
            let h = &mut data.hists[leader];
            let pos = match h.index.get(&key) {
                // hists__find_entry compared them with every key.
                Some(&p) => {
                    h.entries[p].srcline_compared = true;
                    p
                }
                None => {
                    // perf's hists__add_dummy_entry: no period, no
                    // children period, an empty call tree.
                    let mut e = me.clone();
                    e.period = 0;
                    e.nr_samples = 0;
                    e.cg = e.cg.as_ref().map(|_| Box::default());
                    if let Some(m) = &mut e.mode_periods {
                        **m = ModePeriods::default();
                    }
                    e.group = Some(Box::new(GroupValues::zeros(n, e.mode_periods.is_some())));
                    h.entries.push(e);
                    let p = h.entries.len() - 1;
                    h.index.insert(key, p);
                    p
                }
            };
            let Some(values) = h.entries[pos].group.as_deref_mut() else {
                continue;
            };
            values.periods[mi] += me.period;
            values.samples[mi] += me.nr_samples;
            values.acc[mi] += me.acc_period();
            if let (Some(slot), Some(m)) = (values.mode_periods.get_mut(mi), &me.mode_periods) {
                slot.merge(m);
            }
        }
        data.hists[m].entries = member;
    }
}

/// An entry of `--symbols` that perf's `setup_addrlist` takes for an
/// address: all of it (but trailing blanks) read by `strtoul(s, 16)`, so
/// `0x4d789`, `4d789` and `cafe` are addresses, `main` and `free` names.
/// perf keeps the samples whose ip is one of them.
pub fn symbol_list_address(s: &str) -> Option<u64> {
    let t = s.trim_start_matches([' ', '\t', '\n', '\r', '\x0b', '\x0c']);
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let t = match t.get(..2) {
        Some("0x" | "0X") if t[2..].starts_with(|c: char| c.is_ascii_hexdigit()) => &t[2..],
        _ => t,
    };
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_hexdigit()).len();
    if digits == 0 || !t[digits..].trim_end().is_empty() {
        return None;
    }
    // strtoul sets ERANGE past 64 bits, which perf skips.
    let v = u64::from_str_radix(&t[..digits], 16).ok()?;
    Some(if negative { v.wrapping_neg() } else { v })
}

/// perf's `--symbols` list as `setup_addrlist` leaves it: in strlist
/// order (sorted, no duplicates), each entry that is an address (see
/// [`symbol_list_address`]) moves to the address list, until one repeats
/// an address already there (`intlist__add` fails: perf stops, and the
/// rest stay names).
pub fn split_symbol_list(list: &[String]) -> (Vec<String>, Vec<u64>) {
    let mut sorted: Vec<&String> = list.iter().collect();
    sorted.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    sorted.dedup();
    let mut names = Vec::new();
    let mut addresses = Vec::new();
    let mut stopped = false;
    for s in sorted {
        match symbol_list_address(s) {
            Some(a) if !stopped && !addresses.contains(&a) => addresses.push(a),
            Some(_) if !stopped => {
                stopped = true;
                names.push(s.clone());
            }
            _ => names.push(s.clone()),
        }
    }
    (names, addresses)
}

/// Compares two comm/dso/sym strings like perf (`strcmp`, bytes).
fn scmp(a: &str, b: &str) -> Ordering {
    a.as_bytes().cmp(b.as_bytes())
}

/// "null last" comparison of optional values.
fn null_last<T>(a: Option<T>, b: Option<T>, f: impl FnOnce(T, T) -> Ordering) -> Ordering {
    match (a, b) {
        (Some(a), Some(b)) => f(a, b),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    }
}

/// The branch keys' `se_cmp` (also their sort order: they have no
/// `se_sort`), as an ordering where `Less` comes first.
fn branch_cmp(d: &ReportData, k: SortKey, a: &Entry, b: &Entry) -> Ordering {
    let (Some(x), Some(y)) = (&a.branch, &b.branch) else {
        return null_last(a.branch.as_ref(), b.branch.as_ref(), |_, _| Ordering::Equal);
    };
    let dso = |e: &BranchAddr| e.map.map(|m| d.machine.dsos.get(m.dso).shown_name.as_str());
    // _sort__dso_cmp(left, right) without perf's usual swap: descending,
    // no map first.
    let dso_cmp = |p: &BranchAddr, q: &BranchAddr| match (dso(p), dso(q)) {
        (Some(p), Some(q)) => scmp(q, p),
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let sym_cmp = |p: &BranchAddr, q: &BranchAddr| {
        if p.sym.is_none() && q.sym.is_none() {
            // _sort__addr_cmp: (s64)(right - left)
            return (p.addr as i64).cmp(&(q.addr as i64));
        }
        null_last(
            p.sym.map(|s| &d.syms[s.0 as usize]),
            q.sym.map(|s| &d.syms[s.0 as usize]),
            |s, t| {
                (s.start as i64)
                    .cmp(&(t.start as i64))
                    .then((s.end as i64).cmp(&(t.end as i64)))
            },
        )
    };
    match k {
        SortKey::DsoFrom => dso_cmp(&x.from, &y.from),
        SortKey::DsoTo => dso_cmp(&x.to, &y.to),
        SortKey::SymFrom => sym_cmp(&x.from, &y.from),
        SortKey::SymTo => sym_cmp(&x.to, &y.to),
        SortKey::Cycles => y.cycles.cmp(&x.cycles),
        _ => Ordering::Equal,
    }
}

/// perf's comparators of two entries by one sort key.
struct KeyCmp<'a> {
    d: &'a ReportData,
    /// Each comm's place in the order of the comms' names, and each DSO's
    /// in that of their shown names (equal names, equal places): sorting
    /// compares entries' comms and DSOs again and again.
    comm_ranks: Vec<u32>,
    dso_ranks: Vec<u32>,
}

/// The place of each of `count` names (by index) in their byte order,
/// equal names sharing one.
fn name_ranks<'n>(count: usize, name: impl Fn(u32) -> &'n str) -> Vec<u32> {
    let mut by_name: Vec<u32> = (0..count as u32).collect();
    by_name.sort_by(|&a, &b| scmp(name(a), name(b)));
    let mut ranks = vec![0; count];
    let mut rank = 0;
    for (i, pair) in by_name.iter().enumerate() {
        if i > 0 && name(by_name[i - 1]) != name(*pair) {
            rank += 1;
        }
        ranks[*pair as usize] = rank;
    }
    ranks
}

impl<'a> KeyCmp<'a> {
    fn new(d: &'a ReportData) -> Self {
        let (comms, dsos) = (&d.machine.comms, &d.machine.dsos);
        KeyCmp {
            d,
            comm_ranks: name_ranks(comms.len(), |c| comms.get(CommId(c))),
            dso_ranks: name_ranks(dsos.len(), |id| dsos.get(DsoId(id)).shown_name.as_str()),
        }
    }

    /// The place of the entry's DSO's shown name (None without a map).
    fn dso_rank(&self, e: &Entry) -> Option<u32> {
        e.map.map(|m| self.dso_ranks[m.dso.0 as usize])
    }

    fn sym_of(&self, e: &Entry) -> Option<&'a Sym> {
        e.sym.map(|s| &self.d.syms[s.0 as usize])
    }

    /// The keys whose `se_cmp` and `se_sort` agree (all but sym/symoff).
    fn same(&self, k: SortKey, a: &Entry, b: &Entry) -> Ordering {
        let d = self.d;
        let tid = |e: &Entry| d.machine.thread(e.thread).tid;
        let src = |e: &Entry| e.srcline.map_or("??:0", |s| d.strings.get(s));
        let srcfile = |e: &Entry| e.srcfile.map_or("", |s| d.strings.get(s));
        match k {
            SortKey::Comm => {
                self.comm_ranks[a.comm.0 as usize].cmp(&self.comm_ranks[b.comm.0 as usize])
            }
            SortKey::Pid | SortKey::Tid => tid(a).cmp(&tid(b)),
            SortKey::Dso => null_last(self.dso_rank(a), self.dso_rank(b), |x, y| x.cmp(&y)),
            SortKey::Sym | SortKey::SymOff | SortKey::IpcNull => Ordering::Equal,
            // perf's _sort__sym_size_cmp / _sort__dso_size_cmp.
            SortKey::SymSize => entry_sym_size(d, a)
                .unwrap_or(0)
                .cmp(&entry_sym_size(d, b).unwrap_or(0)),
            // perf's _sort__dso_size_cmp compares the sizes as int64_t: a
            // map reaching the top of the address space sorts first.
            SortKey::DsoSize => (map_size(a.map) as i64).cmp(&(map_size(b.map) as i64)),
            SortKey::Srcline => scmp(src(a), src(b)),
            SortKey::Srcfile => scmp(srcfile(a), srcfile(b)),
            SortKey::Trace => scmp(
                a.trace.map_or("", |t| d.strings.get(t)),
                b.trace.map_or("", |t| d.strings.get(t)),
            ),
            // perf's __sort__hde_cmp: memcmp(left, right) of the fields'
            // bytes, where perf's other keys compare right with left.
            SortKey::Field(i) => {
                let bytes = |e: &Entry| {
                    e.fields
                        .map_or("", |f| EntryFields::bytes(d.strings.get(f), i as usize))
                };
                scmp(bytes(b), bytes(a))
            }
            SortKey::Cpu => (a.cpu as i32).cmp(&(b.cpu as i32)),
            // perf's sort__cgroup_cmp: right - left as int64_t.
            SortKey::Cgroup => (b.cgroup.wrapping_sub(a.cgroup) as i64).cmp(&0),
            // perf's sort__cgroup_id_cmp: dev, then inode, unsigned.
            SortKey::CgroupId => a.cgroup_ns.cmp(&b.cgroup_ns),
            SortKey::Time => a.time.cmp(&b.time),
            SortKey::Socket => a.socket.cmp(&b.socket),
            SortKey::Parent => null_last(a.parent, b.parent, |x, y| {
                scmp(d.strings.get(x), d.strings.get(y))
            }),
            SortKey::DsoFrom
            | SortKey::DsoTo
            | SortKey::SymFrom
            | SortKey::SymTo
            | SortKey::Cycles => branch_cmp(d, k, a, b),
            _ => self.values_cmp(k, a, b),
        }
    }

    /// The keys of the sample's values, as perf's comparators order them
    /// (see [`KeyCmp::same`]: `Less` is perf's `cmp(b, a) < 0`).
    fn values_cmp(&self, k: SortKey, a: &Entry, b: &Entry) -> Ordering {
        let (x, y) = (values_of(a), values_of(b));
        // (s64)(right - left) of perf's left = b, right = a.
        let signed = |p: u64, q: u64| (p.wrapping_sub(q) as i64).cmp(&0);
        let mem = |v: &SampleValues, f: &dyn Fn(&MemInfo) -> u64| v.mem.as_ref().map_or(0, f);
        match k {
            // perf's sort__weight_cmp and co.: left - right.
            SortKey::LocalWeight | SortKey::Weight => signed(y.weight, x.weight),
            SortKey::LocalInsLat | SortKey::InsLat => y.ins_lat.cmp(&x.ins_lat),
            SortKey::LocalPStageCyc | SortKey::PStageCyc => y.p_stage_cyc.cmp(&x.p_stage_cyc),
            SortKey::Transaction => signed(y.transaction, x.transaction),
            // The others: right - left.
            SortKey::CodePageSize => signed(x.code_page_size, y.code_page_size),
            SortKey::Addr => signed(entry_ip(a), entry_ip(b)),
            SortKey::SymDaddr => signed(mem(x, &|m| m.daddr.addr), mem(y, &|m| m.daddr.addr)),
            SortKey::SymIaddr => signed(mem(x, &|m| m.iaddr.addr), mem(y, &|m| m.iaddr.addr)),
            SortKey::PhysDaddr => signed(mem(x, &|m| m.phys_addr), mem(y, &|m| m.phys_addr)),
            SortKey::DataPageSize => {
                signed(mem(x, &|m| m.data_page_size), mem(y, &|m| m.data_page_size))
            }
            // _sort__dso_cmp(left, right) without perf's usual swap:
            // descending, no map first.
            SortKey::DsoDaddr => {
                let dsos = &self.d.machine.dsos;
                let name = |v: &SampleValues| {
                    let m = v.mem.as_ref()?.daddr.map?;
                    Some(dsos.get(m.dso).shown_name.as_str())
                };
                match (name(x), name(y)) {
                    (Some(p), Some(q)) => scmp(q, p),
                    (None, Some(_)) => Ordering::Less,
                    (Some(_), None) => Ordering::Greater,
                    (None, None) => Ordering::Equal,
                }
            }
            // The data source's bits (the `NA` value without a mem_info).
            _ => {
                let bits = data_src_bits(k);
                let src = |v: &SampleValues| v.mem.map_or(DATA_SRC_NONE, |m| m.data_src) & bits;
                src(x).cmp(&src(y))
            }
        }
    }

    /// `se_cmp` (and `se_collapse`): the entries' identity.
    fn collapse(&self, k: SortKey, a: &Entry, b: &Entry) -> Ordering {
        match k {
            SortKey::Sym | SortKey::SymOff | SortKey::IpcNull => {
                let o = if a.sym.is_none() && b.sym.is_none() {
                    // perf's _sort__addr_cmp: the signed difference
                    // (kernel addresses sort before user ones).
                    (a.addr.wrapping_sub(b.addr) as i64).cmp(&0)
                } else {
                    let dsos = null_last(self.dso_rank(a), self.dso_rank(b), |x, y| x.cmp(&y));
                    dsos.then_with(|| {
                        null_last(self.sym_of(a), self.sym_of(b), |x, y| {
                            // perf's _sort__sym_cmp: an inline frame's
                            // symbol is its function's name over its range,
                            // compared the other way round from addresses
                            // (strcmp(left, right) where those are
                            // right - left).
                            if x.inlined || y.inlined {
                                let names =
                                    scmp(self.d.strings.get(y.name), self.d.strings.get(x.name));
                                if names.is_ne() || (x.start <= y.end && x.end >= y.start) {
                                    return names;
                                }
                            }
                            x.start.cmp(&y.start).then(x.end.cmp(&y.end))
                        })
                    })
                };
                if k == SortKey::SymOff {
                    o.then(a.addr.cmp(&b.addr))
                } else {
                    o
                }
            }
            _ => self.same(k, a, b),
        }
    }

    /// `se_sort`: the output order of entries with equal overheads.
    fn sort(&self, k: SortKey, a: &Entry, b: &Entry) -> Ordering {
        match k {
            SortKey::Sym | SortKey::SymOff => null_last(self.sym_of(a), self.sym_of(b), |x, y| {
                scmp(self.d.strings.get(x.name), self.d.strings.get(y.name))
            }),
            // No se_sort: perf sorts by its se_cmp, sym's.
            SortKey::IpcNull => self.collapse(k, a, b),
            _ => self.same(k, a, b),
        }
    }
}

/// The longest data of each `__data_loc` tracepoint field key among the
/// entries of `h` that perf's `__sort__hde_cmp` widens the column by: the
/// left side of its comparisons, which in `hists__findnew_entry` is the
/// entry in the tree, compared when the keys before the field are equal.
/// Replays that walk for each entry in creation order (the entries are
/// still in it), and for the later samples of an entry, its path in the
/// final tree. 0 for other keys.
fn data_loc_widths(d: &ReportData, h: &Hists) -> Vec<usize> {
    let dynamic = &d.options.dynamic;
    let wanted: Vec<(usize, usize)> = d
        .options
        .sort
        .iter()
        .enumerate()
        .filter_map(|(at, k)| match k {
            SortKey::Field(i) => {
                let key = dynamic.get(*i as usize)?;
                (key.attr_index == h.attr_index && key.field.data_loc).then_some((at, *i as usize))
            }
            _ => None,
        })
        .collect();
    let mut widths = vec![0; dynamic.len()];
    if wanted.is_empty() {
        return widths;
    }
    let keys = &d.options.sort;
    let cmp = KeyCmp::new(d);
    // The sort key at which `new` and `existing` first differ (perf's
    // hist_entry__cmp stops there), `keys.len()` when equal.
    let first_difference = |new: &Entry, existing: &Entry| -> (usize, Ordering) {
        keys.iter()
            .enumerate()
            .map(|(at, &k)| (at, cmp.collapse(k, new, existing)))
            .find(|(_, o)| o.is_ne())
            .unwrap_or((keys.len(), Ordering::Equal))
    };
    let mut widen = |existing: &Entry, reached: usize| {
        for &(at, i) in &wanted {
            if reached >= at {
                let f = existing.fields.map_or("", |f| d.strings.get(f));
                widths[i] = widths[i].max(EntryFields::bytes(f, i).len() / 2);
            }
        }
    };
    // One insertion into a tree of entries (`entry_of` its node's): the
    // walk, widening by each entry met, then the new node.
    let insert = |tree: &mut crate::rbtree::RbTree,
                  entry_of: &dyn Fn(usize) -> usize,
                  new: &Entry,
                  widen: &mut dyn FnMut(&Entry, usize),
                  add: bool| {
        let mut node = tree.root;
        while let Some(n) = tree.nodes.get(node as usize) {
            let existing = &h.entries[entry_of(node as usize)];
            let (reached, order) = first_difference(new, existing);
            widen(existing, reached);
            match order {
                Ordering::Equal => break,
                Ordering::Less => node = n.left,
                Ordering::Greater => node = n.right,
            }
        }
        // (Node ids stay the entries' order: an equal one is added too.)
        if add {
            tree.insert_by(0, |at, _| {
                first_difference(new, &h.entries[entry_of(at)]).1 == Ordering::Less
            });
        }
    };
    let mut tree = crate::rbtree::RbTree::default();
    for e in &h.entries {
        insert(&mut tree, &|at| at, e, &mut widen, true);
    }
    for e in &h.entries {
        let inserted = e.nr_samples.max(e.cg.as_ref().map_or(0, |c| c.acc_count));
        if inserted >= 2 {
            insert(&mut tree, &|at| at, e, &mut widen, false);
        }
    }
    let mut in_order: Vec<usize> = (0..h.entries.len()).collect();
    in_order.sort_by(|&a, &b| first_difference(&h.entries[a], &h.entries[b]).1);
    // A key that collapses (comm) makes perf insert them again, in that
    // tree's order, into the collapsed tree.
    if d.options.need_collapse {
        let mut collapsed = crate::rbtree::RbTree::default();
        let mut inserted: Vec<usize> = Vec::new();
        for &i in &in_order {
            let of = |at: usize| inserted[at];
            insert(&mut collapsed, &of, &h.entries[i], &mut widen, true);
            inserted.push(i);
        }
    }
    // The output resort inserts them in that order again, each the left
    // side: it reaches the field where an entry inserted before has the
    // same overheads and keys before it (one is then on its path).
    for &(at, _) in &wanted {
        // Entries whose keys before the field are equal are adjacent in
        // that order.
        let mut overheads: HashSet<(u64, u64)> = HashSet::default();
        let mut run_start: Option<usize> = None;
        for &i in &in_order {
            let e = &h.entries[i];
            if run_start.is_none_or(|s| first_difference(e, &h.entries[s]).0 < at) {
                run_start = Some(i);
                overheads.clear();
            }
            if !overheads.insert((e.period, e.acc_period())) {
                widen(e, at);
            }
        }
    }
    widths
}

/// Sorts an event's entries into perf's output order; returns their
/// indexes in perf's collapsed-tree order (see [`build_hierarchy`]).
fn sort_entries(data: &mut ReportData, hi: usize) -> Vec<usize> {
    let entries = std::mem::take(&mut data.hists[hi].entries);
    let hits = std::mem::take(&mut data.hists[hi].hits);
    let graph_hits = std::mem::take(&mut data.hists[hi].graph_hits);
    let graph_effects = std::mem::take(&mut data.hists[hi].graph_effects);
    let graph_hits = graph_hits.iter().flat_map(|&(start, end, period, thread)| {
        let effects = graph_effects
            .get(start as usize..end as usize)
            .unwrap_or(&[]);
        effects.iter().map(move |&e| (e, period, thread))
    });
    let keys = data.options.sort.clone();
    let d = &*data;
    let cmp = KeyCmp::new(d);
    // perf's collapsed-tree order (se_cmp of each key).
    let collapse = |a: &Entry, b: &Entry| -> Ordering {
        keys.iter()
            .map(|&k| cmp.collapse(k, a, b))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    // perf builds hists->entries_in (se_cmp) in sample order, then the
    // collapsed tree (se_collapse, the same comparators here) from its
    // in-order walk; both are rbtree insertions.
    let tree_keys = !hits.is_empty() && d.groups.is_none();
    let mut tree_graphs = !graph_effects.is_empty() && d.groups.is_none();
    // With a key that needs collapsing (comm), perf's collapse merges most
    // pieces of its input tree again; the replay pays (3x on deep frame
    // pointer chains) only where perf's order can come out otherwise:
    // where there are inline frames (DWARF-unwound chains: their entries
    // tie with their real functions', and perf's input tree decides), or
    // an inline frame's entry hit from two map spaces, which has its
    // symbol looked up again (RefindSym) and stays apart.
    let is_inline = |s: SymId| {
        d.syms
            .get(s.0 as usize)
            .is_some_and(|sym| sym.base.is_some())
    };
    if tree_graphs
        && d.options.need_collapse
        && !entries.iter().any(|e| e.sym.is_some_and(is_inline))
    {
        // perf's sym comparison orders symbol-less entries by address but
        // others by DSO first: entries split only where no DSO key before
        // it ordered them already.
        let sym_splits = keys
            .iter()
            .position(|k| matches!(k, SortKey::Sym | SortKey::SymOff | SortKey::IpcNull))
            .is_some_and(|at| !keys[..at].contains(&SortKey::Dso));
        tree_graphs = collapse_needs_replay(
            &entries,
            graph_hits.clone(),
            |thread, level| map_space(d, thread, level),
            is_inline,
            sym_splits,
        );
    }
    let mut entries = if tree_keys {
        split_like_perf(entries, &hits, &collapse)
    } else if let (true, Some(cg)) = (tree_graphs, &d.callgraph) {
        let space = |thread: ThreadId, level: u8| map_space(d, thread, level);
        let refind = RefindSym {
            enabled: keys.contains(&SortKey::Sym),
            space: &space,
            base: &|s: SymId| d.syms.get(s.0 as usize).and_then(|sym| sym.base),
        };
        let collapses = d.options.need_collapse;
        split_graphs_like_perf(
            entries, graph_hits, &collapse, cg, &d.strings, &refind, collapses,
        )
    } else {
        entries
    };
    // Either way entries_in is perf's split tree from here on.
    let split = tree_keys || tree_graphs;
    // Without a key that needs collapsing (comm), perf outputs from
    // entries_in itself.
    let in_tree_order = |entries: Vec<Entry>| {
        let order = crate::callgraph::rb_insertion_order(entries.len(), |n, e| {
            collapse(&entries[n], &entries[e]) == Ordering::Less
        });
        permute(entries, &order)
    };
    // (The call-graph split returns its tree's order.)
    if !(tree_graphs && d.callgraph.is_some()) || tree_keys {
        entries = in_tree_order(entries);
    }
    if d.options.hierarchy {
        // perf's hierarchy collapses entries_in level by level
        // (build_hierarchy).
    } else if !split {
        entries = in_tree_order(entries);
    } else if d.options.need_collapse && !(tree_graphs && d.callgraph.is_some()) {
        entries = collapse_like_perf(entries, &collapse);
    }
    let cgp = d.callgraph.as_ref().map(|c| &c.params);
    // perf's __hpp__sort: after the leader's value, the members'.
    let members_cmp = |a: &[u64], b: &[u64]| -> Ordering {
        let members = a.iter().zip(b).skip(1);
        members
            .map(|(x, y)| y.cmp(x))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal)
    };
    let group_cmp = |a: &Entry, b: &Entry| members_cmp(a.group_periods(), b.group_periods());
    // perf's __hpp__group_sort_idx: the chosen member's value, then the
    // other members' in order; the leader's is not compared.
    let sort_idx = usize::try_from(d.options.group_sort_idx).unwrap_or(0);
    let by_member = |a: &[u64], b: &[u64]| -> Option<Ordering> {
        if sort_idx == 0 || sort_idx >= a.len() || a.len() != b.len() {
            return None;
        }
        let rest = (1..a.len()).filter(|&i| i != sort_idx);
        let o = std::iter::once(sort_idx)
            .chain(rest)
            .map(|i| b[i].cmp(&a[i]))
            .find(|o| o.is_ne())
            .unwrap_or(Ordering::Equal);
        Some(o)
    };
    let period_cmp = |a: &Entry, b: &Entry| -> Ordering {
        by_member(a.group_periods(), b.group_periods())
            .unwrap_or_else(|| b.period.cmp(&a.period).then_with(|| group_cmp(a, b)))
    };
    let sort_list = d
        .options
        .output_sort_list(d.callgraph.as_ref().is_some_and(|c| c.params.children));
    // perf's output sort skips the keys sort__setup_elide hid
    // (perf_hpp__should_skip): with `--comms x` the comm no longer
    // separates entries, and the ties of the children order fall
    // differently.
    let output_keys = d.options.shown_keys();
    let show_nr_samples = d.options.show_nr_samples;
    let show_cpu_utilization = d.options.show_cpu_utilization;
    // perf's hpp__sort_overhead_sys and co.: the leader's period in the
    // mode, then the members'.
    let mode_cmp = |slot: usize, a: &Entry, b: &Entry| -> Ordering {
        let mode = |e: &Entry| e.mode_periods.as_ref().map_or(0, |m| m.0[slot]);
        mode(b).cmp(&mode(a)).then_with(|| {
            let members = a
                .group_mode_periods()
                .iter()
                .zip(b.group_mode_periods().iter());
            members
                .skip(1)
                .map(|(x, y)| y.0[slot].cmp(&x.0[slot]))
                .find(|o| o.is_ne())
                .unwrap_or(Ordering::Equal)
        })
    };
    // perf's overhead_children key (__hpp__sort_acc: callers above callees
    // on equal periods); nothing without --children.
    let children_cmp = |a: &Entry, b: &Entry| -> Ordering {
        let Some(p) = cgp.filter(|p| p.children) else {
            return Ordering::Equal;
        };
        let o = b.acc_period().cmp(&a.acc_period());
        if o != Ordering::Equal || a.thread != b.thread || !p.enabled {
            return o;
        }
        let depth = |e: &Entry| e.cg.as_ref().map_or(0, |c| c.tree.max_depth);
        if p.order == Order::Caller {
            depth(b).cmp(&depth(a))
        } else {
            depth(a).cmp(&depth(b))
        }
    };
    // Set when a comparison gets to the srcline key, whose perf
    // comparator computes both entries' srclines.
    let srcline_reached = std::cell::Cell::new(false);
    let output = |a: &Entry, b: &Entry| -> Ordering {
        // -F: perf's hpp sort list as given (no implicit overhead first);
        // --sort with output fields: see Options::output_sort_list.
        if let Some(sl) = &sort_list {
            for f in sl {
                let o = match f {
                    Field::Overhead => period_cmp(a, b),
                    Field::ModeOverhead(slot) => mode_cmp(*slot, a, b),
                    Field::Period => period_cmp(a, b),
                    Field::Sample => b
                        .nr_samples
                        .cmp(&a.nr_samples)
                        .then_with(|| members_cmp(a.group_samples(), b.group_samples())),
                    Field::Children => children_cmp(a, b),
                    Field::Key(k) if !output_keys.contains(k) => Ordering::Equal,
                    Field::Key(k) => {
                        if *k == SortKey::Srcline {
                            srcline_reached.set(true);
                        }
                        cmp.sort(*k, a, b)
                    }
                };
                if o != Ordering::Equal {
                    return o;
                }
            }
            return Ordering::Equal;
        }

        // --children: perf's overhead_children key first.
        let o = children_cmp(a, b);
        if o != Ordering::Equal {
            return o;
        }
        let o = period_cmp(a, b);
        if o != Ordering::Equal {
            return o;
        }
        for &k in &output_keys {
            if k == SortKey::Srcline {
                srcline_reached.set(true);
            }
            let o = cmp.sort(k, a, b);
            if o != Ordering::Equal {
                return o;
            }
        }
        // perf appends the output fields that are not sort keys
        // (--show-cpu-utilization's, -n's samples) to the sort list.
        if show_cpu_utilization {
            let o = mode_cmp(0, a, b).then_with(|| mode_cmp(1, a, b));
            if o != Ordering::Equal {
                return o;
            }
        }
        if show_nr_samples {
            return b.nr_samples.cmp(&a.nr_samples);
        }
        Ordering::Equal
    };
    // perf inserts the collapsed entries one by one into an rbtree; the
    // walk (not a sort) decides ties and non-transitive cases.
    // perf computes each entry's column widths right after inserting it: a
    // srcline computed then counts, one computed by a later insertion not.
    let mut srcline_computed = vec![false; entries.len()];
    let order = crate::callgraph::rb_insertion_order(entries.len(), |n, e| {
        srcline_reached.set(false);
        let o = output(&entries[n], &entries[e]);
        srcline_computed[n] |= srcline_reached.get();
        o == Ordering::Less
    });
    for (e, computed) in entries.iter_mut().zip(srcline_computed) {
        e.srcline_compared |= computed;
    }
    // Where each entry of the collapsed order lands in the output order.
    let mut collapsed = vec![0; order.len()];
    for (position, &i) in order.iter().enumerate() {
        collapsed[i] = position;
    }
    data.hists[hi].entries = permute(entries, &order);
    collapsed
}

/// Sort keys whose perf comparator is not transitive: `sym` compares two
/// unresolved entries by address alone and others by DSO name first, so
/// perf's rbtree of entries can miss an equal entry and make a second one.
/// A `dso` key before it leaves that within a DSO (checked against perf on
/// `dso,sym` with call graphs: a `malloc` split by glibc's inline frames,
/// unresolved entries' order). With `dso` after it, merged entries match
/// perf on `git-log-g.data` but not on `tar-bzip2-dwarf.data`, where perf
/// splits an inline frame's entry: not modelled. Without call graphs
/// (`graphs` false) a `dso` key anywhere keeps entries merged: the split
/// replay does not model perf's comm of a thread named after its samples
/// (`:665` becoming `prec`), which the default `comm,dso,sym` shows.
///
/// The address keys (`addr`, `symbol_daddr`, `symbol_iaddr`) compare
/// addresses by their signed difference, which wraps between kernel and
/// user addresses: perf's tree can split their entries anywhere.
fn perf_tree_keys(keys: &[SortKey], graphs: bool) -> bool {
    if keys
        .iter()
        .any(|k| matches!(k, SortKey::Addr | SortKey::SymDaddr | SortKey::SymIaddr))
    {
        return true;
    }
    let Some(sym) = keys
        .iter()
        .position(|&k| k == SortKey::Sym || k == SortKey::IpcNull)
    else {
        return false;
    };
    keys.iter()
        .position(|&k| k == SortKey::Dso)
        .is_none_or(|dso| graphs && dso < sym)
}

/// Replays the samples (`hits`: merged entry and period, in order) through
/// perf's `hists__findnew_entry` walk with `cmp` (perf's se_cmp order:
/// `cmp(new, existing) == Less` goes left), splitting an entry where the
/// walk misses its equal. Returns the entries in creation order.
fn split_like_perf(
    merged: Vec<Entry>,
    hits: &[(u32, u16, u64)],
    cmp: &dyn Fn(&Entry, &Entry) -> Ordering,
) -> Vec<Entry> {
    let mut tree = crate::rbtree::RbTree::default();
    let mut out: Vec<Entry> = Vec::new();
    for &(idx, cpumode, period) in hits {
        let Some(template) = merged.get(idx as usize) else {
            continue;
        };
        let i = match find_equal(&tree, |n| out.get(n), template, cmp) {
            Some(i) => i,
            None => {
                tree.insert_by(0, |e, _| cmp(template, &out[e]) == Ordering::Less);
                out.push(template.copy_keys());
                out.len() - 1
            }
        };
        out[i].period += period;
        out[i].nr_samples += 1;
        out[i].add_mode_period(cpumode, period);
    }
    out
}

/// [`split_like_perf`] with call graphs: each of perf's entry insertions
/// (`hits`: the merged entry, the call-tree node its chain reached there,
/// and the period) walks perf's tree; the entry it lands in gets the
/// period and the same chain appended to its own call tree.
/// The map a hit of `thread` at `level` resolved in, as far as it
/// matters here: the kernel's, or its process's (a forked process copies
/// its parent's maps into new ones). A process's two maps of one DSO (an
/// exec loading it elsewhere) count as one.
fn map_space(d: &ReportData, thread: ThreadId, level: u8) -> u64 {
    if level == b'k' {
        u64::MAX
    } else {
        u64::from(d.machine.thread(thread).maps.0)
    }
}

/// Whether perf's collapse can come out otherwise than merging by key:
/// some entry whose symbol is an inline frame's gets hits from two map
/// spaces (see [`RefindSym`]), or (where the sym key splits entries,
/// `sym_splits`) some entry without a map gets hits at two levels
/// (fill_callchain_info leaves a mapless frame the level of the
/// frame before it, so its pieces in perf's input tree differ in level,
/// and the piece the collapse meets first gives the merged entry its
/// `[k]` or `[.]`).
fn collapse_needs_replay(
    entries: &[Entry],
    hits: impl Iterator<Item = (Effect, u64, ThreadId)>,
    space: impl Fn(ThreadId, u8) -> u64,
    inline: impl Fn(SymId) -> bool,
    sym_splits: bool,
) -> bool {
    let mut first_space: HashMap<u32, u64> = HashMap::default();
    let mut first_level: HashMap<u32, u8> = HashMap::default();
    for (eff, _, thread) in hits {
        let Some(e) = entries.get(eff.entry as usize) else {
            continue;
        };
        if e.map.is_none() {
            if sym_splits && *first_level.entry(eff.entry).or_insert(eff.level) != eff.level {
                return true;
            }
            continue;
        }
        if !e.sym.is_some_and(&inline) {
            continue;
        }
        let at = space(thread, eff.level);
        if *first_space.entry(eff.entry).or_insert(at) != at {
            return true;
        }
    }
    false
}

/// perf's `hists__findnew_entry` when it meets an equal entry of another
/// map (another process's copy of the DSO's map, or the kernel's): it
/// takes the new map and looks the entry's symbol up again at the
/// symbol's start. An inline frame's symbol becomes its real function
/// there, which no longer compares equal to the inline frames after it.
struct RefindSym<'a> {
    /// `sym` is a sort key (perf's `hists__has(hists, sym)`).
    enabled: bool,
    /// The map space of a hit of `thread` at `level`.
    space: &'a dyn Fn(ThreadId, u8) -> u64,
    /// The real function of an inline frame's symbol.
    base: &'a dyn Fn(SymId) -> Option<SymId>,
}

fn split_graphs_like_perf(
    merged: Vec<Entry>,
    hits: impl Iterator<Item = (Effect, u64, ThreadId)> + Clone,
    cmp: &dyn Fn(&Entry, &Entry) -> Ordering,
    cg: &CallgraphData,
    strings: &Strings,
    refind: &RefindSym<'_>,
    collapse: bool,
) -> Vec<Entry> {
    // Which entry of perf's each insertion lands in. A walk depends only
    // on the tree, which changes when an entry is added: until then, an
    // entry's next insertion lands where its last one did.
    let mut tree = crate::rbtree::RbTree::default();
    // The merged entry of each piece, and the thread of the sample that
    // made it: perf's entry keeps that thread, and its children order
    // compares callers above callees only between entries of one thread.
    let mut pieces: Vec<u32> = Vec::new();
    let mut creators: Vec<(ThreadId, u8)> = Vec::new();
    let mut landed: Vec<u32> = Vec::new();
    let mut last: Vec<(u32, u32)> = vec![(u32::MAX, u32::MAX); merged.len()];
    // perf's he_cache: the entries this sample was added to so far.
    let mut this_sample: Vec<u32> = Vec::new();
    let mut skipped = vec![false; merged.len()];
    // Each piece's map space, and its keys once its symbol was looked up
    // again (see RefindSym); a change of keys changes the walks, as a new
    // piece does.
    let mut spaces: Vec<u64> = Vec::new();
    let mut refound: Vec<Option<Entry>> = Vec::new();
    let mut changes = 0u32;
    for (eff, _, thread) in hits.clone() {
        let Some(template) = merged.get(eff.entry as usize) else {
            landed.push(u32::MAX);
            continue;
        };
        // perf compares its he_tmp, which has no socket, time, cgroup or
        // weights.
        let bare;
        let weighed = template.values.as_deref().filter(|v| v.he_tmp_differs());
        let probe = if template.cgroup != 0
            || template.cgroup_ns != (0, 0)
            || template.time != 0
            || template.socket != 0
            || weighed.is_some()
        {
            bare = Entry {
                cgroup: 0,
                cgroup_ns: (0, 0),
                time: 0,
                socket: 0,
                values: template.values.as_deref().map(|v| {
                    Box::new(SampleValues {
                        weight: 0,
                        ins_lat: 0,
                        p_stage_cyc: 0,
                        transaction: 0,
                        code_page_size: 0,
                        ..*v
                    })
                }),
                ..template.copy_keys()
            };
            &bare
        } else {
            template
        };
        if eff.own {
            this_sample.clear();
        } else if this_sample.iter().any(|&p| {
            cmp(piece_key(&merged, &pieces, &refound, p as usize), probe) == Ordering::Equal
        }) {
            // A chain entry equal to one the sample already has: perf
            // skips it.
            landed.push(u32::MAX);
            skipped[eff.entry as usize] = true;
            continue;
        }
        let version = pieces.len() as u32 + changes;
        let space = (refind.space)(thread, eff.level);
        let (piece, seen) = last[eff.entry as usize];
        let piece = if seen == version {
            piece
        } else {
            let entry_of =
                |n: usize| (n < pieces.len()).then(|| piece_key(&merged, &pieces, &refound, n));
            match find_equal(&tree, entry_of, template, cmp) {
                Some(p) => p as u32,
                None => {
                    tree.insert_by(0, |p, _| {
                        cmp(template, piece_key(&merged, &pieces, &refound, p)) == Ordering::Less
                    });
                    pieces.push(eff.entry);
                    creators.push((thread, eff.level));
                    spaces.push(space);
                    refound.push(None);
                    pieces.len() as u32 - 1
                }
            }
        };
        let p = piece as usize;
        let mut walk_again = false;
        if refind.enabled && spaces[p] != space {
            spaces[p] = space;
            let now = piece_key(&merged, &pieces, &refound, p);
            if let Some(base) = now.sym.and_then(|s| (refind.base)(s)) {
                let mut key = now.copy_keys();
                key.sym = Some(base);
                refound[p] = Some(key);
                changes += 1;
                // The piece no longer has this entry's keys: its next hit
                // walks the tree again.
                walk_again = true;
            }
        }
        let version = match walk_again {
            true => u32::MAX,
            false => pieces.len() as u32 + changes,
        };
        last[eff.entry as usize] = (piece, version);
        landed.push(piece);
        this_sample.push(piece);
    }
    // perf's hists__collapse_resort, when a key needs it: each piece, in
    // entries_in's order, merges into the equal one its walk meets (the
    // merged-into piece's chains first, then the other's, as
    // callchain_merge adds them). `rank`: a piece's place in its group.
    let mut group: Vec<u32> = (0..pieces.len() as u32).collect();
    let mut rank: Vec<u32> = vec![0; pieces.len()];
    let order: Vec<usize> = if collapse {
        let mut collapsed = crate::rbtree::RbTree::default();
        let mut reps: Vec<usize> = Vec::new();
        let mut members: Vec<u32> = vec![1; pieces.len()];
        for p in tree.in_order() {
            let key = piece_key(&merged, &pieces, &refound, p);
            let rep_key = |n: usize| {
                reps.get(n)
                    .map(|&r| piece_key(&merged, &pieces, &refound, r))
            };
            match find_equal(&collapsed, rep_key, key, cmp) {
                Some(n) => {
                    let r = reps[n];
                    group[p] = r as u32;
                    rank[p] = members[r];
                    members[r] += 1;
                }
                None => {
                    collapsed.insert_by(0, |x, _| {
                        cmp(key, piece_key(&merged, &pieces, &refound, reps[x])) == Ordering::Less
                    });
                    reps.push(p);
                }
            }
        }
        collapsed.in_order().into_iter().map(|n| reps[n]).collect()
    } else {
        tree.in_order()
    };
    // An entry that is one of perf's, with the same hits, stays as it is;
    // the others are made again from their hits: entries perf split, the
    // ones it merged with others, those that lost hits to the he_cache, and
    // those whose symbol was looked up again or that collapsed together.
    let mut whole = vec![0u32; merged.len()];
    for &m in &pieces {
        whole[m as usize] += 1;
    }
    let mut whole: Vec<bool> = whole
        .iter()
        .zip(&skipped)
        .map(|(&n, &skipped)| n == 1 && !skipped)
        .collect();
    for (&m, key) in pieces.iter().zip(&refound) {
        if key.is_some() {
            whole[m as usize] = false;
        }
    }
    for (p, &r) in group.iter().enumerate() {
        if r as usize != p {
            whole[pieces[p] as usize] = false;
            whole[pieces[r as usize] as usize] = false;
        }
    }
    for ((eff, _, _), &piece) in hits.clone().zip(&landed) {
        if let Some(&creator) = pieces.get(piece as usize) {
            if creator != eff.entry {
                whole[creator as usize] = false;
                whole[eff.entry as usize] = false;
            }
        }
    }
    let mut merged: Vec<Option<Entry>> = merged.into_iter().map(Some).collect();
    let mut out: Vec<Entry> = pieces
        .iter()
        .zip(&creators)
        .zip(&refound)
        .map(|((&m, &(creator, level)), key)| {
            let whole = whole[m as usize];
            match merged.get_mut(m as usize) {
                Some(slot) if whole => slot.take(),
                Some(Some(template)) => {
                    let mut piece = template.copy_keys();
                    piece.thread = creator;
                    piece.level = level;
                    if let Some(key) = key {
                        piece.sym = key.sym;
                    }
                    piece.cg = template.cg.as_ref().map(|_| Box::default());
                    Some(piece)
                }
                _ => None,
            }
            .unwrap_or_else(|| Entry::blank(ThreadId(0), CommId(0)))
        })
        .collect();
    // The hits of the rebuilt pieces, each group's by rank, then in
    // sample order.
    let mut rebuilt: Vec<(u32, u32, u32, Effect, u64)> = Vec::new();
    for ((eff, period, _), &piece) in hits.zip(&landed) {
        match pieces.get(piece as usize) {
            Some(&creator) if !whole[creator as usize] => {}
            _ => continue,
        }
        let p = piece as usize;
        rebuilt.push((rank[p], piece, group[p], eff, period));
    }
    rebuilt.sort_by_key(|&(rank, ..)| rank);
    // A piece merged into another (rank > 0) first has its own call tree,
    // which perf's callchain_merge then appends node by node.
    let mut own_trees: HashMap<u32, (u32, CallTree)> = HashMap::default();
    for (rank, piece, target, eff, period) in rebuilt {
        let (Some(Some(template)), Some(to)) =
            (merged.get(eff.entry as usize), out.get_mut(target as usize))
        else {
            continue;
        };
        if eff.own {
            to.period += period;
            to.nr_samples += 1;
            to.add_mode_period(eff.cpumode as u16, period);
        }
        let (Some(from), Some(to)) = (&template.cg, &mut to.cg) else {
            continue;
        };
        if eff.acc {
            to.acc_period += period;
            to.acc_count += 1;
        }
        if eff.node != NO_NODE {
            let chain = from.tree.chain_to(eff.node);
            let tree = match rank {
                0 => &mut to.tree,
                _ => {
                    &mut own_trees
                        .entry(piece)
                        .or_insert((target, CallTree::default()))
                        .1
                }
            };
            tree.append(&chain, period, cg.params.key, &cg.frames, strings);
        }
    }
    // In the collapse's order: a group's pieces by rank.
    let mut merging: Vec<(u32, (u32, CallTree))> = own_trees.into_iter().collect();
    merging.sort_by_key(|(piece, _)| rank[*piece as usize]);
    for (_, (target, mut tree)) in merging {
        let Some(to) = out.get_mut(target as usize).and_then(|e| e.cg.as_mut()) else {
            continue;
        };
        tree.finish(cg.params.key, &cg.frames, strings);
        // callchain_merge leaves the merged-into root's max_depth, and
        // adds each node's hits as one chain: one sample in count mode.
        let depth = to.tree.max_depth;
        for (node, hit) in tree.hits_in_merge_order() {
            let chain = tree.chain_to(node);
            to.tree
                .append(&chain, hit, cg.params.key, &cg.frames, strings);
        }
        to.tree.max_depth = depth;
    }
    for (e, &m) in out.iter_mut().zip(&pieces) {
        if whole[m as usize] {
            continue;
        }
        if let Some(c) = &mut e.cg {
            c.tree.finish(cg.params.key, &cg.frames, strings);
        }
    }
    // In the tree's order: where a symbol was looked up again, inserting
    // the pieces anew would not rebuild it. Merged pieces drop out.
    let mut out: Vec<Option<Entry>> = out.into_iter().map(Some).collect();
    order
        .iter()
        .filter_map(|&p| out.get_mut(p).and_then(Option::take))
        .collect()
}

/// The keys piece `p` compares with: its first entry's, or those its
/// symbol was looked up again to.
fn piece_key<'e>(
    merged: &'e [Entry],
    pieces: &[u32],
    refound: &'e [Option<Entry>],
    p: usize,
) -> &'e Entry {
    match refound.get(p) {
        Some(Some(e)) => e,
        _ => &merged[pieces[p] as usize],
    }
}

/// perf's rbtree walk for `new`: the node whose entry (`entry_of(node)`)
/// it meets that compares equal, if any.
fn find_equal<'e>(
    tree: &crate::rbtree::RbTree,
    entry_of: impl Fn(usize) -> Option<&'e Entry>,
    new: &Entry,
    cmp: &dyn Fn(&Entry, &Entry) -> Ordering,
) -> Option<usize> {
    let mut node = tree.root;
    while let (Some(n), Some(e)) = (tree.nodes.get(node as usize), entry_of(node as usize)) {
        match cmp(new, e) {
            Ordering::Equal => return Some(node as usize),
            Ordering::Less => node = n.left,
            Ordering::Greater => node = n.right,
        }
    }
    None
}

/// perf's `hists__collapse_resort` on entries in `entries_in` order: each
/// is inserted into a new tree, merging into an equal entry the walk meets.
fn collapse_like_perf(entries: Vec<Entry>, cmp: &dyn Fn(&Entry, &Entry) -> Ordering) -> Vec<Entry> {
    let mut tree = crate::rbtree::RbTree::default();
    let mut out: Vec<Entry> = Vec::new();
    for e in entries {
        match find_equal(&tree, |n| out.get(n), &e, cmp) {
            Some(i) => {
                out[i].period += e.period;
                out[i].nr_samples += e.nr_samples;
                if let (Some(m), Some(add)) = (&mut out[i].mode_periods, &e.mode_periods) {
                    m.merge(add);
                }
            }
            None => {
                tree.insert_by(0, |x, _| cmp(&e, &out[x]) == Ordering::Less);
                out.push(e);
            }
        }
    }
    permute(out, &tree.in_order())
}

/// perf's `callchain_srcline`: `get_srcline(..., show_sym = false,
/// show_addr = key == address)`: DSOs perf runs no addr2line on, and
/// addresses it finds no line for, show `+offset` with `-g address`,
/// nothing with `-g srcline`.
fn chain_srcline(
    key: crate::callgraph::Key,
    callchains: &mut Callchains,
    machine: &Machine,
    resolver: &mut Resolver,
    strings: &mut Strings,
    f: &ChainFrame,
) -> Option<StrId> {
    // perf's callchain_srcline: nothing without a map.
    let map = f.map?;
    if let Some(s) = f.srcline {
        return Some(s);
    }
    let dso = machine.dsos.get(map.dso);
    let runs_addr2line = matches!(dso.kind, DsoKind::User) && !dso.long_name.starts_with('[');
    let found = runs_addr2line.then(|| callchains.srcline(machine, resolver, strings, f));
    if found.is_some() && !resolver.srcline_failures.contains(&(map.dso, f.addr)) {
        return found;
    }
    // get_srcline's failure text without the symbol's name (show_sym is
    // false): none for `-g srcline`, `+OFFSET` (or `DSO[ADDR]`) for
    // `-g address`.
    if key != crate::callgraph::Key::Address {
        return None;
    }
    Some(match f.sym {
        Some(id) => strings.intern(&format!(
            "+{}",
            f.addr.wrapping_sub(resolver.syms[id.0 as usize].start)
        )),
        None => {
            found.unwrap_or_else(|| strings.intern(&format!("{}[{:x}]", dso.short_name, f.addr)))
        }
    })
}

/// perf's `symbol__size` (0 without a symbol).
pub(crate) fn sym_size(syms: &[Sym], sym: Option<SymId>) -> u64 {
    sym.and_then(|id| syms.get(id.0 as usize))
        .map_or(0, |s| s.end.wrapping_sub(s.start))
}

/// The `symbol_size` of an entry (perf's branch entries have none).
pub(crate) fn entry_sym_size(data: &ReportData, e: &Entry) -> Option<u64> {
    match e.sym {
        Some(_) if e.branch.is_none() => Some(sym_size(&data.syms, e.sym)),
        _ => None,
    }
}

/// perf's `map__size` (0 without a map).
pub(crate) fn map_size(map: Option<Map>) -> u64 {
    map.map_or(0, |m| m.end.wrapping_sub(m.start))
}

/// perf's default `--parent` pattern.
pub const DEFAULT_PARENT: &str = "^sys_|^do_page_fault";

/// A small POSIX extended regex (what `--parent` patterns use): `|`,
/// `( )`, `^`, `$`, `.`, `*`, `+`, `?`, `[...]` classes and `\` escapes;
/// unanchored search like `regexec`.
#[derive(Debug, Clone)]
pub struct Regex {
    alts: Vec<Vec<Node>>,
}

#[derive(Debug, Clone)]
enum Atom {
    Any,
    Char(char),
    Class(Vec<(char, char)>, bool),
    Group(Box<Regex>),
    Start,
    End,
}

#[derive(Debug, Clone)]
struct Node {
    atom: Atom,
    min: usize,
    max: usize,
}

impl Regex {
    /// Parses `pat`; unbalanced parts are taken literally.
    pub fn new(pat: &str) -> Regex {
        let chars: Vec<char> = pat.chars().collect();
        let mut pos = 0;
        Self::parse(&chars, &mut pos)
    }

    fn parse(c: &[char], pos: &mut usize) -> Regex {
        let mut alts = vec![Vec::new()];
        while *pos < c.len() {
            let ch = c[*pos];
            *pos += 1;
            let atom = match ch {
                '|' => {
                    alts.push(Vec::new());
                    continue;
                }
                ')' => break,
                '(' => Atom::Group(Box::new(Self::parse(c, pos))),
                '.' => Atom::Any,
                '^' => Atom::Start,
                '$' => Atom::End,
                '\\' if *pos < c.len() => {
                    *pos += 1;
                    Atom::Char(c[*pos - 1])
                }
                '[' => {
                    let neg = c.get(*pos) == Some(&'^');
                    if neg {
                        *pos += 1;
                    }
                    let mut ranges = Vec::new();
                    let mut first = true;
                    while *pos < c.len() && (first || c[*pos] != ']') {
                        first = false;
                        let lo = c[*pos];
                        *pos += 1;
                        if c.get(*pos) == Some(&'-') && c.get(*pos + 1).is_some_and(|&x| x != ']') {
                            ranges.push((lo, c[*pos + 1]));
                            *pos += 2;
                        } else {
                            ranges.push((lo, lo));
                        }
                    }
                    *pos += 1;
                    Atom::Class(ranges, neg)
                }
                _ => Atom::Char(ch),
            };
            let (min, max) = match c.get(*pos) {
                Some('*') => (0, usize::MAX),
                Some('+') => (1, usize::MAX),
                Some('?') => (0, 1),
                _ => (1, 1),
            };
            if (min, max) != (1, 1) {
                *pos += 1;
            }
            alts.last_mut().unwrap().push(Node { atom, min, max });
        }
        Regex { alts }
    }

    /// Whether the pattern matches anywhere in `s`.
    pub fn is_match(&self, s: &str) -> bool {
        let c: Vec<char> = s.chars().collect();
        (0..=c.len()).any(|i| !self.ends(&c, i).is_empty())
    }

    /// All end positions of matches starting at `i`.
    fn ends(&self, c: &[char], i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        for alt in &self.alts {
            Self::seq(alt, c, i, &mut out);
        }
        out
    }

    fn seq(nodes: &[Node], c: &[char], i: usize, out: &mut Vec<usize>) {
        let Some((n, rest)) = nodes.split_first() else {
            if !out.contains(&i) {
                out.push(i);
            }
            return;
        };
        // Positions after k repetitions, breadth first.
        let mut cur = vec![i];
        let mut k = 0;
        loop {
            if k >= n.min {
                for &p in &cur {
                    Self::seq(rest, c, p, out);
                }
            }
            if k >= n.max || cur.is_empty() {
                break;
            }
            let mut next = Vec::new();
            for &p in &cur {
                for q in Self::atom(&n.atom, c, p) {
                    if !next.contains(&q) && (q != p || k < n.min) {
                        next.push(q);
                    }
                }
            }
            cur = next;
            k += 1;
        }
    }

    fn atom(a: &Atom, c: &[char], i: usize) -> Vec<usize> {
        match a {
            Atom::Start => (i == 0).then_some(i).into_iter().collect(),
            Atom::End => (i == c.len()).then_some(i).into_iter().collect(),
            Atom::Any => (i < c.len()).then_some(i + 1).into_iter().collect(),
            Atom::Char(x) => (c.get(i) == Some(x)).then_some(i + 1).into_iter().collect(),
            Atom::Class(r, neg) => c
                .get(i)
                .filter(|&&x| r.iter().any(|&(lo, hi)| lo <= x && x <= hi) != *neg)
                .map(|_| i + 1)
                .into_iter()
                .collect(),
            Atom::Group(g) => g.ends(c, i),
        }
    }
}

#[cfg(test)]
mod regex_tests {
    use super::Regex;

    #[test]
    fn parent_patterns() {
        let r = Regex::new("^sys_|^do_page_fault");
        assert!(r.is_match("sys_read"));
        assert!(r.is_match("do_page_fault"));
        assert!(!r.is_match("x_sys_read"));
        assert!(Regex::new("leaf|lib_hot").is_match("lib_hot"));
        assert!(Regex::new("^a.*f$").is_match("abcdef"));
        assert!(!Regex::new("^a.*f$").is_match("abcdefg"));
        assert!(Regex::new("^(re)+curse$").is_match("rerecurse"));
        assert!(Regex::new("[a-c]+_x?").is_match("zz_bca_"));
        assert!(!Regex::new("^[^a-z]").is_match("abc"));
    }
}

/// perf's `unmap_ip(he->ip)`: the runtime address of an entry's sample.
pub(crate) fn entry_ip(e: &Entry) -> u64 {
    e.map.map_or(e.addr, |m| m.unmap_ip(e.addr))
}
