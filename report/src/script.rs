//! `perf script`: one text line per sample (plus call chains), byte for
//! byte like perf 6.1's default output.
//!
//! Samples are walked in perf's delivery order
//! ([`PerfFile::ordered_records`]) while the [`Machine`] timeline is kept up
//! to date, so each sample sees the comm and maps of its time. The text
//! follows perf 6.1's `builtin-script.c` (`perf_sample__fprintf_start`,
//! `process_event`) and `util/evsel_fprintf.c` (`sample__fprintf_sym`,
//! `sample__fprintf_callchain`):
//!
//! ```text
//! {comm:%16s} {tid:%5d} [{cpu:%03d}] {time:%12s}: {period:%10d} {event:%*s}: {ip:%16x} {sym}+0x{off} ({dso})
//! ```
//!
//! * Default fields depend on the event type (perf's `output[]` table);
//!   fields whose data the attr does not sample are dropped (checked on the
//!   first event of each type, like perf).
//! * With call chains, the comm is not padded, the line ends after the
//!   event name and every frame follows as `\t{ip:%16x} {sym}+0x{off} ({dso})`,
//!   then an empty line.
//! * The DSO is perf's `dso->name`: the recorded path for files, the short
//!   name for the kernel and modules.
//!
//! [`Session::walk`] gives the resolved samples to a callback; the folded-stack
//! generator ([`crate::folded`]) uses it too.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::io::{self, Write};
use std::path::PathBuf;
use std::rc::Rc;

use prec_format::attr::attr_type;
use prec_format::constants::{misc, sample_type as st};
use prec_format::features::{self, Feature};
use prec_format::record::{MmapFileId, Record};
use prec_format::{Attr, FeatureId, PerfFile, RecordType, Sample};

use crate::aggregate::{Resolver, StrId, Strings};
use crate::callchain::{can_unwind, Callchains, ChainFrame, ChainParams, Order, Unwinder};
use crate::maps::{DsoId, DsoKind};
use crate::symbolize::{FileLoader, Symbolizer, SymbolizerOptions};
use crate::tasks::Machine;
use crate::tracepoint::Tracepoints;

/// perf's default `--max-stack` (`PERF_MAX_STACK_DEPTH`).
pub const PERF_MAX_STACK_DEPTH: usize = 127;

/// A frame's symbol as perf script prints it: `name`, `name+0xoff` with
/// `symoff`, `[unknown]` without one.
fn push_sym(s: &mut String, f: Fields, fr: &Frame) {
    match &fr.sym {
        Some((name, start, _)) if f.has(OutField::SymOff) => {
            s.push_str(name);
            s.push_str("+0x");
            push_hex(s, fr.addr.wrapping_sub(*start), 0);
        }
        Some((name, _, _)) => s.push_str(name),
        None => s.push_str("[unknown]"),
    }
}

/// perf's `misc` field: the cpumode letters (perf tests each mode's bits,
/// so a hypervisor sample reads `KUH`), a record type's flag, padded to 6.
fn push_misc(s: &mut String, misc: u16, kind: RecordType) {
    use prec_format::constants::misc as m;
    let start = s.len();
    let has = |bits: u16| misc & bits == bits;
    for (bits, c) in [
        (m::KERNEL, 'K'),
        (m::USER, 'U'),
        (m::HYPERVISOR, 'H'),
        (m::GUEST_KERNEL, 'G'),
        (m::GUEST_USER, 'g'),
    ] {
        if has(bits) {
            s.push(c);
        }
    }
    match kind {
        RecordType::MMAP | RecordType::MMAP2 if has(m::MMAP_DATA) => s.push('M'),
        RecordType::COMM if has(m::COMM_EXEC) => s.push('E'),
        RecordType::SWITCH | RecordType::SWITCH_CPU_WIDE if has(m::SWITCH_OUT) => {
            s.push('S');
            if has(m::SWITCH_OUT_PREEMPT) {
                s.push('p');
            }
        }
        _ => {}
    }
    // fprintf("%*s", 6 - ret, " ")
    let width = 6usize.saturating_sub(s.len() - start).max(1);
    s.push_str(&" ".repeat(width));
}

/// perf's `sample_addr_correlates_sym`: page-fault addresses are code or
/// data addresses worth a symbol.
fn addr_correlates_sym(a: &Attr) -> bool {
    a.type_ == attr_type::SOFTWARE && matches!(a.config, 2 | 5 | 6)
}

/// One output field of perf script (`-F` names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutField {
    Comm,
    Tid,
    Pid,
    Time,
    Cpu,
    Event,
    Ip,
    Sym,
    SymOff,
    Dso,
    Srcline,
    Period,
    Addr,
    /// A tracepoint's formatted record.
    Trace,
    /// The sample's cpumode letters (`K`, `U`, ...).
    Misc,
    Weight,
    /// The instruction latency of a WEIGHT_STRUCT weight.
    InsLat,
    PhysAddr,
    DataPageSize,
    CodePageSize,
    /// The sampled interrupt registers.
    Iregs,
    /// The sampled user registers.
    Uregs,
    /// The source code line of the sample's address, on a line of its own
    /// after the sample (when it differs from the thread's last one).
    SrcCode,
    /// A branch-trace sample's kind (`call`, `return`, ...); blank for the
    /// other samples.
    Flags,
    /// A branch-trace sample's symbol indented by call depth; nothing for
    /// the other samples.
    CallIndent,
    /// The sample's wall-clock time, from the CLOCK_DATA feature that
    /// `record -k/--clockid` writes.
    Tod,
    /// The memory data source (`record -d`), in hex and decoded.
    DataSrc,
    /// The branch stack (`record -b`): `from/to/flags` per branch.
    BrStack,
    /// The branch stack by symbol and offset.
    BrStackSym,
    /// The branch stack with DSO-relative addresses.
    BrStackOff,
    /// The bytes of the instruction at the sample's address, read from its
    /// binary.
    Insn,
    /// The length of that instruction.
    InsnLen,
    /// Instructions per cycle of a branch-trace sample; nothing for the
    /// samples perf records (only its Intel PT decoder fills them in).
    Ipc,
    /// A synthesized (Intel PT) event's payload; nothing for the others.
    Synth,
    /// Metrics of `-M` event groups; nothing for events without them.
    Metric,
    /// A `bpf-output` event's data (refused where there is one: not
    /// implemented).
    BpfOutput,
    /// The instructions between branches of a branch stack (refused as
    /// perf refuses it without an all-branches filter; not implemented
    /// with one).
    BrStackInsn,
    BrStackInsnLen,
}

const ALL_FIELDS: [(&str, OutField); 38] = [
    ("comm", OutField::Comm),
    ("tid", OutField::Tid),
    ("pid", OutField::Pid),
    ("time", OutField::Time),
    ("cpu", OutField::Cpu),
    ("event", OutField::Event),
    ("ip", OutField::Ip),
    ("sym", OutField::Sym),
    ("symoff", OutField::SymOff),
    ("dso", OutField::Dso),
    ("srcline", OutField::Srcline),
    ("period", OutField::Period),
    ("addr", OutField::Addr),
    ("trace", OutField::Trace),
    ("misc", OutField::Misc),
    ("weight", OutField::Weight),
    ("ins_lat", OutField::InsLat),
    ("phys_addr", OutField::PhysAddr),
    ("data_page_size", OutField::DataPageSize),
    ("code_page_size", OutField::CodePageSize),
    ("iregs", OutField::Iregs),
    ("uregs", OutField::Uregs),
    ("srccode", OutField::SrcCode),
    ("flags", OutField::Flags),
    ("callindent", OutField::CallIndent),
    ("tod", OutField::Tod),
    ("data_src", OutField::DataSrc),
    ("brstack", OutField::BrStack),
    ("brstacksym", OutField::BrStackSym),
    ("brstackoff", OutField::BrStackOff),
    ("insn", OutField::Insn),
    ("insnlen", OutField::InsnLen),
    ("ipc", OutField::Ipc),
    ("synth", OutField::Synth),
    ("metric", OutField::Metric),
    ("bpf-output", OutField::BpfOutput),
    ("brstackinsn", OutField::BrStackInsn),
    ("brstackinsnlen", OutField::BrStackInsnLen),
];

impl OutField {
    fn bit(self) -> u64 {
        1 << (self as u32)
    }

    /// perf's name of the field.
    pub fn name(self) -> &'static str {
        ALL_FIELDS
            .iter()
            .find(|(_, f)| *f == self)
            .map_or("", |(n, _)| n)
    }
}

/// A set of [`OutField`]s.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Fields(u64);

impl Fields {
    pub fn has(self, f: OutField) -> bool {
        self.0 & f.bit() != 0
    }
    fn set(&mut self, f: OutField) {
        self.0 |= f.bit();
    }
    fn clear(&mut self, f: OutField) {
        self.0 &= !f.bit();
    }
    fn of(list: &[OutField]) -> Fields {
        let mut s = Fields(0);
        for f in list {
            s.set(*f);
        }
        s
    }
}

/// perf 6.1's `get_branch_type`: the name of a branch entry's type (from
/// its flags word), empty when unknown.
fn branch_type_name(flags: u64) -> &'static str {
    const TYPES: [&str; 15] = [
        "",
        "COND",
        "UNCOND",
        "IND",
        "CALL",
        "IND_CALL",
        "RET",
        "SYSCALL",
        "SYSRET",
        "COND_CALL",
        "COND_RET",
        "ERET",
        "IRQ",
        "SERROR",
        "NO_TX",
    ];
    const NEW_TYPES: [&str; 8] = [
        "FAULT_ALGN",
        "FAULT_DATA",
        "FAULT_INST",
        "ARCH_1",
        "ARCH_2",
        "ARCH_3",
        "ARCH_4",
        "ARCH_5",
    ];
    let name = match ((flags >> 20) & 0xf) as usize {
        // PERF_BR_EXTEND_ABI: the type is in new_type.
        15 => NEW_TYPES.get(((flags >> 26) & 0xf) as usize),
        t => TYPES.get(t),
    };
    name.copied().unwrap_or("")
}

/// perf's output types (`output[]` index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum OutType {
    Hardware,
    Software,
    Tracepoint,
    HwCache,
    Raw,
    Breakpoint,
    Other,
}

const OUT_TYPES: [(&str, OutType); 7] = [
    ("hw", OutType::Hardware),
    ("sw", OutType::Software),
    ("trace", OutType::Tracepoint),
    ("hwcache", OutType::HwCache),
    ("raw", OutType::Raw),
    ("break", OutType::Breakpoint),
    ("other", OutType::Other),
];

fn out_type(t: u32) -> OutType {
    match t {
        attr_type::HARDWARE => OutType::Hardware,
        attr_type::SOFTWARE => OutType::Software,
        attr_type::TRACEPOINT => OutType::Tracepoint,
        attr_type::HW_CACHE => OutType::HwCache,
        attr_type::RAW => OutType::Raw,
        attr_type::BREAKPOINT => OutType::Breakpoint,
        _ => OutType::Other,
    }
}

/// perf 6.1's default fields per type.
fn default_fields(t: OutType) -> Fields {
    use OutField::*;
    let common = [Comm, Tid, Cpu, Time, Event, Ip, Sym, SymOff, Dso, Period];
    match t {
        OutType::Tracepoint => Fields::of(&[Comm, Tid, Cpu, Time, Event, Trace]),
        OutType::Raw => {
            let mut f = Fields::of(&common);
            for field in [
                Addr,
                DataSrc,
                Weight,
                PhysAddr,
                DataPageSize,
                CodePageSize,
                InsLat,
            ] {
                f.set(field);
            }
            f
        }
        _ => Fields::of(&common),
    }
}

/// What `prec script` prints.
#[derive(Clone, Default)]
pub struct ScriptOptions {
    /// `-F`: perf's field list (`[type:]field,...`, `+field`, `-field`).
    pub fields: Option<String>,
    pub show_task_events: bool,
    pub show_mmap_events: bool,
    /// `--show-switch-events`: SWITCH and SWITCH_CPU_WIDE records.
    pub show_switch_events: bool,
    /// `--show-lost-events`: LOST records.
    pub show_lost_events: bool,
    /// `--show-namespace-events`: NAMESPACES records.
    pub show_namespace_events: bool,
    /// `--show-bpf-events`: KSYMBOL and BPF_EVENT records.
    pub show_bpf_events: bool,
    /// `--show-cgroup-events`: CGROUP records.
    pub show_cgroup_events: bool,
    /// `--show-round-events`: FINISHED_ROUND records, and (as perf then
    /// turns its ordering off) every record in file order.
    pub show_round_events: bool,
    /// `--dump-unsorted-raw-trace`: every record in file order, as read
    /// (perf turns its ordering off).
    pub unordered: bool,
    /// `--reltime`: times relative to the first one printed.
    pub reltime: bool,
    /// `--deltatime`: times relative to the previous one printed.
    pub deltatime: bool,
    /// `--dsos`: only samples in these DSOs (short or long name).
    pub dsos: Option<Vec<String>>,
    /// `-S`/`--symbols`: only samples in these symbols (by name, or by
    /// the symbol's start address as `0x...`).
    pub symbols: Option<Vec<String>>,
    /// `-G`: no call chains.
    pub hide_call_graph: bool,
    /// `--max-stack` (default 127).
    pub max_stack: Option<usize>,
    /// `--stop-bt`: a call chain ends after its first entry in one of
    /// these symbols.
    pub stop_bt: Option<Vec<String>>,
    /// `--ns`: nanosecond timestamps.
    pub ns: bool,
    /// The local time zone's offset from UTC in seconds at a time (seconds
    /// since the epoch), for `tod`; `None` prints UTC.
    pub utc_offset: Option<fn(i64) -> i64>,
    /// `--full-source-path`: srclines with the whole file path.
    pub full_source_path: bool,
    /// `--no-inline`: DWARF-unwound frames are not expanded into their
    /// inline frames (perf's `symbol_conf.inline_name` off).
    pub no_inline: bool,
    pub comms: Option<Vec<String>>,
    pub pids: Option<Vec<i32>>,
    pub tids: Option<Vec<i32>>,
    pub cpus: Option<Vec<u32>>,
    /// `--switch-on`/`--switch-off`: windows of samples kept (decided after
    /// the thread, CPU, DSO and symbol filters, as perf script does).
    pub evswitch: crate::evswitch::EvSwitch,
    /// `--time`: the samples kept.
    pub time: Option<crate::time_ranges::TimeRanges>,
    pub symfs: Option<PathBuf>,
    /// perf's build-id cache when not `~/.debug` (see
    /// [`crate::symbolize::SymbolizerOptions::build_id_dir`]).
    pub build_id_dir: Option<PathBuf>,
    pub kallsyms: Option<PathBuf>,
    /// Demangle names (default true via [`ScriptOptions::new`]).
    pub demangle: bool,
    /// `-v`: demangled C++ names keep their parameters, as perf's
    /// verbose mode shows them.
    pub demangle_params: bool,
    pub file_loader: Option<FileLoader>,
    /// Makes the unwinder for `--call-graph dwarf` samples (e.g.
    /// `crate::unwind::DwarfUnwinder`); `None` shows only recorded chains.
    pub unwinder: Option<UnwinderFactory>,
    /// Called every [`RELEASE_STEP`] bytes of progress through the file
    /// with an offset that records are mostly done with (the delivered
    /// record's offset minus `RELEASE_STEP / 2`), so that the caller can
    /// drop the pages before it of a memory-mapped input from the resident
    /// set (`madvise(MADV_DONTNEED)`): a ~1 GB `--call-graph dwarf` file
    /// otherwise stays resident. Bytes below the offset may still be read
    /// (a record queued for time ordering), so the caller must only drop
    /// pages that are read back from the file on access, never free them.
    pub release: Option<ReleaseHook>,
}

/// Creates a [`Unwinder`] for one walk.
pub type UnwinderFactory = std::sync::Arc<dyn Fn() -> Box<dyn Unwinder> + Send + Sync>;

/// See [`ScriptOptions::release`].
pub type ReleaseHook = std::sync::Arc<dyn Fn(u64) + Send + Sync>;

/// How the warnings of a damaged data section start (see [`is_damage`]).
const STOPPED_READING: &str = "stopped reading ";
const SKIPPED_BAD: &str = "skipping bad ";

/// Whether a warning of [`write_script`] says the data section is damaged
/// (a record cut short or unreadable): the output is then partial, and
/// `prec script` fails after it as perf script does.
pub fn is_damage(warning: &str) -> bool {
    warning.starts_with(STOPPED_READING) || warning.starts_with(SKIPPED_BAD)
}

/// Progress between two calls of [`ScriptOptions::release`].
pub const RELEASE_STEP: u64 = 2 << 20;

impl ScriptOptions {
    /// Defaults: perf's fields, call chains, demangling.
    pub fn new() -> Self {
        ScriptOptions {
            demangle: true,
            ..Default::default()
        }
    }
}

/// Per-type field configuration after `-F` and the sample_type checks.
#[derive(Clone, Debug)]
struct FieldConfig {
    fields: HashMap<OutType, Fields>,
    user_set: HashMap<OutType, bool>,
    /// perf's `user_set_fields`: the fields `-F` names, `+field` too.
    user_fields: HashMap<OutType, Fields>,
    /// perf's `user_unset_fields`: the fields `-F` removes (`-field`).
    user_unset: HashMap<OutType, Fields>,
    /// What perf says of fields it ignores for some types.
    warnings: Vec<String>,
}

impl FieldConfig {
    fn get(&self, t: OutType) -> Fields {
        self.fields
            .get(&t)
            .copied()
            .unwrap_or_else(|| default_fields(t))
    }
}

fn parse_field(name: &str) -> Result<OutField, String> {
    ALL_FIELDS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, f)| *f)
        .ok_or_else(|| format!("Invalid field requested: {name}"))
}

/// Parses perf script's `-F` argument into per-type fields.
fn parse_fields_arg(s: &str) -> Result<FieldConfig, String> {
    let mut cfg = FieldConfig {
        fields: HashMap::default(),
        user_set: HashMap::default(),
        user_fields: HashMap::default(),
        user_unset: HashMap::default(),
        warnings: Vec::new(),
    };
    // "type:list" applies to one type, else all.
    let (types, list): (Vec<OutType>, &str) = match s.split_once(':') {
        Some((t, rest)) if OUT_TYPES.iter().any(|(n, _)| *n == t) => {
            let ty = OUT_TYPES.iter().find(|(n, _)| *n == t).map(|x| x.1);
            (ty.into_iter().collect(), rest)
        }
        _ => (OUT_TYPES.iter().map(|x| x.1).collect(), s),
    };
    let items: Vec<&str> = list
        .split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .collect();
    let modify = items
        .first()
        .is_some_and(|x| x.starts_with('+') || x.starts_with('-'));
    // perf's parse_output_fields: a field for every type is ignored, with
    // a warning per type, where the type cannot have it (`trace` outside
    // tracepoints; perf names the types past hardware-cache "unknown",
    // its raw, breakpoint, synthesized and other outputs).
    let all_types = types.len() > 1;
    // `bpf-output` is valid for software events and tracepoints.
    let ignored = |t: OutType, field: OutField| {
        all_types
            && match field {
                OutField::Trace => t != OutType::Tracepoint,
                OutField::BpfOutput => t != OutType::Software && t != OutType::Tracepoint,
                _ => false,
            }
    };
    if all_types {
        for it in &items {
            let name = it.trim_start_matches(['+', '-']);
            let Ok(field) = parse_field(name) else {
                continue;
            };
            if field != OutField::Trace && field != OutField::BpfOutput {
                continue;
            }
            let kinds = [
                (OutType::Hardware, "hardware"),
                (OutType::Software, "software"),
                (OutType::HwCache, "hardware-cache"),
                (OutType::Raw, "unknown"),
                (OutType::Breakpoint, "unknown"),
                (OutType::Other, "unknown"),
                (OutType::Other, "unknown"),
            ];
            for (t, kind) in kinds {
                if ignored(t, field) {
                    cfg.warnings
                        .push(format!("'{name}' not valid for {kind} events. Ignoring."));
                }
            }
        }
    }
    for t in &types {
        let mut f = if modify {
            default_fields(*t)
        } else {
            Fields(0)
        };
        let mut named = Fields(0);
        let mut removed = Fields(0);
        for it in &items {
            if let Some(n) = it.strip_prefix('+') {
                if !modify {
                    return Err("Cannot mix +-field with overridden fields".into());
                }
                if ignored(*t, parse_field(n)?) {
                    continue;
                }
                f.set(parse_field(n)?);
                named.set(parse_field(n)?);
            } else if let Some(n) = it.strip_prefix('-') {
                if !modify {
                    return Err("Cannot mix +-field with overridden fields".into());
                }
                f.clear(parse_field(n)?);
                removed.set(parse_field(n)?);
            } else if modify {
                return Err("Cannot mix +-field with overridden fields".into());
            } else if !ignored(*t, parse_field(it)?) {
                f.set(parse_field(it)?);
                named.set(parse_field(it)?);
            }
        }
        cfg.fields.insert(*t, f);
        cfg.user_fields.insert(*t, named);
        cfg.user_unset.insert(*t, removed);
        cfg.user_set.insert(*t, !modify);
    }
    Ok(cfg)
}

/// A DWARF source file and line.
type SourceLine = (Rc<str>, u32);

/// A source file read for `srccode`, with where each line starts.
struct SourceFile {
    bytes: Vec<u8>,
    line_starts: Vec<usize>,
}

impl SourceFile {
    fn read(path: &str) -> Option<SourceFile> {
        let bytes = std::fs::read(path).ok()?;
        let newlines = bytes.iter().enumerate().filter(|&(_, &b)| b == b'\n');
        let line_starts = std::iter::once(0)
            .chain(newlines.map(|(i, _)| i + 1))
            .collect();
        Some(SourceFile { bytes, line_starts })
    }

    /// Line `line` (1-based) without its newline.
    fn line(&self, line: u32) -> Option<String> {
        let index = (line as usize).checked_sub(1)?;
        let start = *self.line_starts.get(index)?;
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.bytes.len(), |next| next - 1);
        let text = self.bytes.get(start..end)?;
        Some(String::from_utf8_lossy(text).into_owned())
    }
}

/// One resolved frame (the sample's ip or a call chain entry).
#[derive(Clone, Debug)]
pub struct Frame {
    pub ip: u64,
    /// perf's `al->addr` (`map_ip(ip)`, or `ip` without a map).
    pub addr: u64,
    /// Symbol name and its start in `addr` space.
    pub sym: Option<(Rc<str>, u64, u64)>,
    /// perf's `dso->name`, `None` without a map.
    pub dso: Option<Rc<str>>,
    /// Source line (only computed when asked for; `None` when perf shows none).
    pub srcline: Option<Rc<str>>,
    /// An inline frame (`(inlined)`, no DSO shown).
    pub inlined: bool,
    /// Resolved in the kernel's maps (perf prints the raw address of
    /// kernel call chain entries, the map-relative one of user entries).
    pub kernel: bool,
}

/// A sample ready to print.
#[derive(Debug)]
pub struct ResolvedSample<'s> {
    /// The sample's record, by the address of its bytes: the same in
    /// another pass over the same [`PerfFile`] (see
    /// [`crate::dump::dump_with_script`]).
    pub record: usize,
    pub attr_index: usize,
    pub event: &'s str,
    pub comm: &'s str,
    pub pid: i32,
    pub tid: i32,
    pub cpu: u32,
    pub time: u64,
    pub period: u64,
    pub addr: u64,
    /// `addr` resolved like an ip, for page-fault events (perf's
    /// `sample_addr_correlates_sym`).
    pub addr_frame: Option<Frame>,
    /// The record header's misc bits.
    pub misc: u16,
    /// perf's `sample->weight` (a WEIGHT_STRUCT's first word) and
    /// `ins_lat`.
    pub weight: u64,
    pub ins_lat: u16,
    pub data_src: u64,
    /// The `brstack`, `brstacksym` or `brstackoff` text, when shown.
    pub branches: String,
    /// The `insnlen` and `insn` text, when shown.
    pub instruction: String,
    pub phys_addr: u64,
    pub data_page_size: u64,
    pub code_page_size: u64,
    /// perf's ` ABI:n  REG:0x...` texts of the sampled registers.
    pub iregs: String,
    pub uregs: String,
    /// A tracepoint's formatted record, when shown.
    pub trace: Option<String>,
    pub frame: Frame,
    /// With `srccode`: the line perf prints after the sample (`|LINE
    /// text`), if any.
    pub srccode: Option<String>,
    /// The call chain, innermost first, when it is shown.
    pub chain: Option<Vec<Frame>>,
}

fn trim_build_id(b: &[u8]) -> &[u8] {
    let len = b.iter().rposition(|&x| x != 0).map_or(0, |i| i + 1);
    &b[..len]
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

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

/// The walk's state: machine, resolver, event names and fields.
pub struct Session<'f> {
    file: &'f PerfFile<'f>,
    opts: ScriptOptions,
    machine: Machine,
    resolver: Resolver,
    strings: Strings,
    cc: Callchains,
    chain_buf: Vec<ChainFrame>,
    /// Shared strings of symbol names and DSO names.
    rc_names: HashMap<StrId, Rc<str>>,
    /// `srccode`: each address's (file, line), each thread's last printed
    /// one, and the source files read.
    source_lines: HashMap<(DsoId, u64), Option<SourceLine>>,
    srccode_last: HashMap<i32, SourceLine>,
    source_files: HashMap<Rc<str>, Option<SourceFile>>,
    dso_names: HashMap<DsoId, Rc<str>>,
    /// Kernel modules listed in the BUILD_ID table.
    bid_modules: HashSet<DsoId>,
    unwinder: Option<Box<dyn Unwinder>>,
    /// Event name per attr.
    pub names: Vec<String>,
    /// perf's `evlist__max_name_len`.
    pub name_width: usize,
    cfg: FieldConfig,
    /// Tracepoint formats from TRACING_DATA.
    tracepoints: Option<Tracepoints>,
    sample_reads: crate::sample_read::SampleReads,
    evswitch: crate::evswitch::EvSwitch,
    /// `--reltime`/`--deltatime`: the first and the previous time printed.
    printed_times: std::cell::Cell<(u64, u64)>,
    /// `tod`: the CLOCK_DATA reference (clockid ns, wall-clock ns) and the
    /// local time zone's offset there.
    clock_reference: Option<(u64, u64, i64)>,
    /// `data_src`: the longest one printed so far.
    data_src_width: std::cell::Cell<usize>,
    /// perf's `native_arch`: the recording's architecture is this
    /// machine's, so `insn` reads instructions from the binaries here.
    native_arch: bool,
    /// DSOs a sample's symbol made perf load (see
    /// [`Session::branch_offset`]); kept only when brstackoff is shown.
    symbols_loaded: Option<HashSet<DsoId>>,
    /// `--symbols` as perf keeps it: names, and addresses (see
    /// [`crate::aggregate::split_symbol_list`]).
    symbol_filter: Option<(Vec<String>, Vec<u64>)>,
    /// Problems to report on stderr.
    pub warnings: Vec<String>,
}

/// An error perf script would stop on (bad `-F`, missing sample data).
#[derive(Debug)]
pub struct ScriptError(pub String);

impl std::fmt::Display for ScriptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ScriptError {}

/// Event names: EVENT_DESC by id, else from the attr (like the report).
/// Adds the BUILD_ID table's DSOs to the machine; kernel modules found
/// there go into `bid_modules` (perf names those DSOs by their path).
fn event_names(
    file: &PerfFile<'_>,
    machine: &mut Machine,
    bid_modules: &mut HashSet<DsoId>,
) -> Vec<String> {
    let endian = file.endian();
    if let Some(f) = file.feature(FeatureId::BUILD_ID) {
        if let Ok(Feature::BuildId(entries)) = features::decode(f.id, f.data, f.offset, endian) {
            let added = crate::aggregate::add_build_ids(machine, &entries);
            bid_modules.extend(
                added
                    .into_iter()
                    .filter(|&(_, kind)| kind == DsoKind::Module)
                    .map(|(id, _)| id),
            );
        }
    }
    crate::aggregate::event_names(file)
}

/// Appends `v` in lower-case hex, right-aligned in `width` columns (C's
/// `%*lx`): the per-frame formatting of `core::fmt` padding was a tenth of
/// `prec script`'s time on `--call-graph dwarf` files.
fn push_hex(s: &mut String, v: u64, width: usize) {
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b"0123456789abcdef"[(v & 0xf) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    let digits = buf.len() - i;
    for _ in digits..width {
        s.push(' ');
    }
    // Only ASCII hex digits were written.
    s.push_str(std::str::from_utf8(&buf[i..]).unwrap_or(""));
}

/// C's `%#x`.
fn hx(v: u64) -> String {
    if v == 0 {
        "0".into()
    } else {
        format!("{v:#x}")
    }
}

impl<'f> Session<'f> {
    /// Prepares a walk over `file`; fails like perf on a bad `-F`.
    pub fn new(file: &'f PerfFile<'f>, opts: ScriptOptions) -> Result<Self, ScriptError> {
        let evswitch = opts.evswitch.clone();
        let full_source_path = opts.full_source_path;
        let mut machine = Machine::new();
        let mut bid_modules = HashSet::default();
        let names = event_names(file, &mut machine, &mut bid_modules);
        let name_width = names.iter().map(|n| n.len()).max().unwrap_or(0);
        let mut cfg = match &opts.fields {
            Some(s) => parse_fields_arg(s).map_err(ScriptError)?,
            None => FieldConfig {
                fields: HashMap::default(),
                user_set: HashMap::default(),
                user_fields: HashMap::default(),
                user_unset: HashMap::default(),
                warnings: Vec::new(),
            },
        };
        // perf checks the first event of each type against its sample_type.
        let attrs = file.attrs();
        let mut seen = Vec::new();
        for (i, a) in attrs.iter().enumerate() {
            let t = out_type(a.attr.type_);
            if seen.contains(&t) {
                continue;
            }
            seen.push(t);
            let user = cfg.user_set.get(&t).copied().unwrap_or(false);
            let mut f = cfg.get(t);
            let stype = a.attr.sample_type;
            let checks: [(OutField, u64, &str); 15] = [
                (OutField::Ip, st::IP, "IP"),
                (OutField::Addr, st::ADDR, "ADDR"),
                (OutField::DataSrc, st::DATA_SRC, "DATA_SRC"),
                (OutField::Weight, st::WEIGHT | st::WEIGHT_STRUCT, "WEIGHT"),
                (OutField::InsLat, st::WEIGHT_STRUCT, "WEIGHT_STRUCT"),
                (OutField::PhysAddr, st::PHYS_ADDR, "PHYS_ADDR"),
                (OutField::DataPageSize, st::DATA_PAGE_SIZE, "DATA_PAGE_SIZE"),
                (OutField::CodePageSize, st::CODE_PAGE_SIZE, "CODE_PAGE_SIZE"),
                (OutField::Iregs, st::REGS_INTR, "IREGS"),
                (OutField::Uregs, st::REGS_USER, "UREGS"),
                (OutField::Tid, st::TID, "TID"),
                (OutField::Pid, st::TID, "TID"),
                (OutField::Time, st::TIME, "TIME"),
                (OutField::Cpu, st::CPU, "CPU"),
                (OutField::Period, 0, "PERIOD"),
            ];
            for (field, bit, what) in checks {
                if bit == 0 || !f.has(field) || stype & bit != 0 {
                    continue;
                }
                let named = cfg.user_fields.get(&t).is_some_and(|u| u.has(field));
                if user || named {
                    return Err(ScriptError(format!(
                        "Samples for '{}' event do not have {what} attribute set. Cannot print '{}' field.",
                        names[i],
                        field.name()
                    )));
                }
                f.clear(field);
                if field == OutField::Tid || field == OutField::Pid {
                    f.clear(OutField::Tid);
                    f.clear(OutField::Pid);
                }
            }
            // perf's evsel__check_attr: symbols and DSOs need addresses
            // in the samples, not in the fields (`-F comm,sym` prints no
            // symbol, and no error). A field added with `+` is checked too
            // (`-F +srcline` on tracepoints, whose fields have no ip).
            let addresses = stype & (st::IP | st::ADDR) != 0;
            let added = cfg.user_fields.get(&t).copied().unwrap_or(Fields(0));
            let asked = |field: OutField| user || added.has(field);
            if f.has(OutField::Sym) && !addresses && asked(OutField::Sym) {
                return Err(ScriptError(
                    "Display of symbols requested but neither sample IP nor sample address\navailable. Hence, no addresses to convert to symbols."
                        .into(),
                ));
            }
            // perf checks the fields in effect: offsets left after `-sym`
            // fail too.
            let sym_removed = !user && default_fields(t).has(OutField::Sym);
            if f.has(OutField::SymOff)
                && !f.has(OutField::Sym)
                && (asked(OutField::SymOff) || sym_removed)
            {
                return Err(ScriptError(
                    "Display of offsets requested but symbol is not selected.".into(),
                ));
            }
            if f.has(OutField::Dso) && !addresses && asked(OutField::Dso) {
                return Err(ScriptError(
                    "Display of DSO requested but no address to convert.".into(),
                ));
            }
            let wants_lines = [OutField::Srcline, OutField::SrcCode]
                .into_iter()
                .any(|k| f.has(k) && asked(k));
            if wants_lines && !f.has(OutField::Ip) {
                return Err(ScriptError(
                    "Display of source line number requested but sample IP is not\nselected. Hence, no address to lookup the source line number."
                        .into(),
                ));
            }
            cfg.fields.insert(t, f);
        }
        // perf_session__check_output_opt: tracepoints show their call
        // chains (ip, sym, symoff, dso) when one has them, unless -F
        // touched the tracepoint fields (`+field` too) or -G hides call
        // chains.
        // A pipe's attrs arrive after that check, and its process_attr
        // adds only ip and sym, to the first event of each type, when the
        // events so far have call chains, unless -F removed them
        // (`-ip`): a list that leaves them out does not.
        let tracepoint = OutType::Tracepoint;
        let pipe = file.mode() == prec_format::read::Mode::Pipe;
        if pipe && !opts.hide_call_graph {
            let mut combined = 0u64;
            let mut seen: Vec<u32> = Vec::new();
            for a in attrs.iter() {
                combined |= a.attr.sample_type;
                let kind = a.attr.type_;
                // perf's PERF_TYPE_MAX: the generic types only.
                if kind >= 6 || seen.contains(&kind) {
                    continue;
                }
                seen.push(kind);
                let dwarf = st::REGS_USER | st::STACK_USER;
                let chains =
                    combined & (st::CALLCHAIN | st::BRANCH_STACK) != 0 || combined & dwarf == dwarf;
                let t = out_type(kind);
                if chains {
                    let removed = cfg.user_unset.get(&t).copied().unwrap_or(Fields(0));
                    let mut f = cfg.get(t);
                    for field in [OutField::Ip, OutField::Sym] {
                        if !removed.has(field) {
                            f.set(field);
                        }
                    }
                    cfg.fields.insert(t, f);
                }
            }
        }
        if !pipe
            && !opts.hide_call_graph
            && !cfg.user_fields.contains_key(&tracepoint)
            && attrs.iter().any(|a| {
                a.attr.type_ == attr_type::TRACEPOINT && a.attr.sample_type & st::CALLCHAIN != 0
            })
        {
            let mut f = cfg.get(tracepoint);
            for field in [OutField::Ip, OutField::Sym, OutField::SymOff, OutField::Dso] {
                f.set(field);
            }
            cfg.fields.insert(tracepoint, f);
        }
        // perf's cmd_script: a pipe counts as this machine's recording, a
        // file by its ARCH feature (i386 on x86_64 too).
        let arch = file
            .feature(FeatureId::ARCH)
            .and_then(|f| features::decode(f.id, f.data, f.offset, file.endian()).ok());
        let native_arch = file.mode() == prec_format::read::Mode::Pipe
            || match arch {
                Some(Feature::Arch(arch)) => {
                    let here = std::env::consts::ARCH;
                    arch == here || (here == "x86_64" && arch == "i386")
                }
                _ => false,
            };
        let asked = |field: OutField| {
            attrs
                .iter()
                .any(|a| cfg.get(out_type(a.attr.type_)).has(field))
        };
        // perf's check for the branch-stack disassembly: it needs every
        // branch; prec does not disassemble them at all.
        if asked(OutField::BrStackInsn) || asked(OutField::BrStackInsnLen) {
            const BRANCH_ANY: u64 = 1 << 3;
            let all_branches = attrs
                .iter()
                .fold(0, |bits, a| bits | a.attr.branch_sample_type)
                & BRANCH_ANY
                != 0;
            return Err(ScriptError(if all_branches {
                "brstackinsn and brstackinsnlen (disassembled branch stacks) are not supported by prec script".into()
            } else {
                "Display of branch stack assembler requested, but non all-branch filter set\nHint: run 'perf record -b ...'".into()
            }));
        }
        // A bpf-output event (software event 10) would print its data.
        let bpf_output_event = attrs.iter().any(|a| {
            a.attr.type_ == attr_type::SOFTWARE
                && a.attr.config == 10
                && cfg.get(OutType::Software).has(OutField::BpfOutput)
        });
        if bpf_output_event {
            return Err(ScriptError(
                "bpf-output data is not supported by prec script".into(),
            ));
        }
        // perf_session__check_output_opt: `tod` needs the clock reference.
        let clock_reference = file
            .feature(FeatureId::CLOCK_DATA)
            .and_then(|f| features::decode(f.id, f.data, f.offset, file.endian()).ok())
            .and_then(|f| match f {
                Feature::ClockData(c) => {
                    let offset = opts
                        .utc_offset
                        .map_or(0, |at| at((c.wall_ns / 1_000_000_000) as i64));
                    Some((c.clockid_ns, c.wall_ns, offset))
                }
                _ => None,
            });
        if asked(OutField::Tod) && clock_reference.is_none() {
            return Err(ScriptError(
                "Can't provide 'tod' time, missing clock data. Please record with -k/--clockid option."
                    .into(),
            ));
        }
        let symbols_loaded = asked(OutField::BrStackOff).then(HashSet::default);
        let field_warnings: Vec<String> = std::mem::take(&mut cfg.warnings)
            .into_iter()
            .chain(file.warnings().iter().cloned())
            .collect();
        // Kernel symbols from perf's build-id cache when the kernel differs.
        let mut sym_opts = SymbolizerOptions {
            symfs: opts.symfs.clone(),
            build_id_dir: opts.build_id_dir.clone(),
            kallsyms: opts.kallsyms.clone(),
            demangle: opts.demangle,
            demangle_params: opts.demangle_params,
            loader: opts.file_loader.clone(),
            ..SymbolizerOptions::default()
        };
        if sym_opts.kallsyms.is_none() {
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
        let unwinder = opts.unwinder.as_ref().map(|f| f());
        let mut resolver = Resolver::new(Symbolizer::new(sym_opts));
        resolver.full_source_path = full_source_path;
        crate::aggregate::prefetch_sampled_binaries(&machine, &mut resolver.symbolizer);
        Ok(Session {
            file,
            symbol_filter: opts
                .symbols
                .as_deref()
                .map(crate::aggregate::split_symbol_list),
            opts,
            machine,
            resolver,
            strings: Strings::default(),
            cc: Callchains::new(),
            chain_buf: Vec::new(),
            rc_names: HashMap::default(),
            source_lines: HashMap::default(),
            srccode_last: HashMap::default(),
            source_files: HashMap::default(),
            dso_names: HashMap::default(),
            bid_modules,
            unwinder,
            names,
            name_width,
            cfg,
            tracepoints: crate::tracepoint::from_file(file),
            sample_reads: Default::default(),
            evswitch,
            printed_times: Default::default(),
            clock_reference,
            data_src_width: Default::default(),
            symbols_loaded,
            native_arch,
            warnings: field_warnings,
        })
    }

    /// perf's `tod_scnprintf`: the clock reference's wall-clock time moved
    /// by the sample's distance from its clockid time, in local time.
    fn push_tod(&self, s: &mut String, time: u64) {
        use std::fmt::Write as _;
        let Some((clockid_ns, wall_ns, utc_offset)) = self.clock_reference else {
            s.push_str("disabled ");
            return;
        };
        let tod_ns = wall_ns.wrapping_add(time.wrapping_sub(clockid_ns));
        let secs = tod_ns / 1_000_000_000;
        let ns = tod_ns % 1_000_000_000;
        let (date, clock) = crate::header::civil(secs as i64 + utc_offset);
        if self.opts.ns {
            let _ = write!(s, "{date} {clock}.{ns:09} ");
        } else {
            let _ = write!(s, "{date} {clock}.{:06} ", ns / 1000);
        }
    }

    /// Unwinds `--call-graph dwarf` user stacks with `unwinder` (without
    /// one, such samples show only the chain they carry).
    pub fn set_unwinder(&mut self, unwinder: Box<dyn Unwinder>) {
        self.unwinder = Some(unwinder);
    }

    /// The fields printed for samples of attr `i`.
    pub fn fields_of(&self, attr: &Attr) -> Fields {
        self.cfg.get(out_type(attr.type_))
    }

    /// Whether call chains of this attr are shown.
    fn use_callchain(&self, attr: &Attr) -> bool {
        !self.opts.hide_call_graph && attr.sample_type & st::CALLCHAIN != 0
    }

    fn rc(&mut self, id: StrId) -> Rc<str> {
        if let Some(r) = self.rc_names.get(&id) {
            return r.clone();
        }
        let r: Rc<str> = Rc::from(self.strings.get(id));
        self.rc_names.insert(id, r.clone());
        r
    }

    /// perf's `dso->name`: the recorded path, the short name for the
    /// kernel and modules.
    fn dso_name(&mut self, dso: DsoId) -> Rc<str> {
        if let Some(n) = self.dso_names.get(&dso) {
            return n.clone();
        }
        let d = self.machine.dsos.get(dso);
        let n: Rc<str> = match d.kind {
            DsoKind::Module if self.bid_modules.contains(&dso) => Rc::from(d.long_name.as_str()),
            DsoKind::Kernel | DsoKind::Module => Rc::from(d.short_name.as_str()),
            _ => Rc::from(d.long_name.as_str()),
        };
        self.dso_names.insert(dso, n.clone());
        n
    }

    /// perf's `print_srccode` for a sample of thread `tid` at `cf`: the
    /// source line of its address, unless it is the one last printed for
    /// the thread, or its file or line cannot be read.
    fn srccode(&mut self, tid: i32, cf: &ChainFrame) -> Option<String> {
        let map = cf.map?;
        let (machine, resolver) = (&self.machine, &mut self.resolver);
        let (file, line) = self
            .source_lines
            .entry((map.dso, cf.addr))
            .or_insert_with(|| {
                let (file, line) = resolver.source_line(machine, &map, cf.ip)?;
                Some((Rc::from(file), line))
            })
            .clone()?;
        if self
            .srccode_last
            .get(&tid)
            .is_some_and(|(f, l)| *f == file && *l == line)
        {
            return None;
        }
        let text = self
            .source_files
            .entry(file.clone())
            .or_insert_with(|| SourceFile::read(&file))
            .as_ref()?
            .line(line)?;
        self.srccode_last.insert(tid, (file, line));
        Some(format!("|{line:<8} {text}"))
    }

    /// A [`ChainFrame`] as printed.
    fn make_frame(&mut self, cf: &ChainFrame, src: bool) -> Frame {
        let sym = cf.sym.map(|id| {
            let s = self.resolver.syms[id.0 as usize].clone();
            (self.rc(s.name), s.start, s.end)
        });
        let dso = cf.map.map(|m| self.dso_name(m.dso));
        let mut found = None;
        if let (true, Some(l)) = (src, cf.srcline) {
            // An inline-expanded frame's own line: where the next inner
            // function was inlined (perf's ilist->srcline), not the
            // address's innermost line.
            found = Some(l);
        } else if src {
            if let Some(m) = &cf.map {
                found = self
                    .resolver
                    .srcline(
                        &self.machine,
                        &mut self.strings,
                        m,
                        cf.ip,
                        cf.addr,
                        // map__fprintf_srcline passes no symbol: without line
                        // info perf shows `dso[addr]`, not `sym+off`.
                        None,
                    )
                    .0;
            }
        }
        // A DWARF-unwound entry with a symbol goes through perf's
        // append_inlines, whose entries carry their own srcline, `??:0`
        // too; for the others map__fprintf_srcline leaves an unknown line
        // out.
        let own_line = cf.unwound && cf.sym.is_some() && !self.opts.no_inline;
        let srcline = found
            .filter(|&l| own_line || !self.strings.get(l).starts_with("??:0"))
            .map(|l| self.rc(l));
        Frame {
            ip: cf.ip,
            addr: cf.addr,
            sym,
            dso,
            srcline,
            inlined: cf.inlined,
            kernel: cf.level == b'k',
        }
    }

    /// Walks all records in delivery order, keeping the machine up to date,
    /// and calls `on_sample` for every sample that passes the filters and
    /// `on_side` for side-band records (COMM/FORK/EXIT/MMAP) with their
    /// perf script text. Stops at the first I/O error of a callback.
    pub fn walk(
        &mut self,
        mut on_sample: impl FnMut(&ResolvedSample<'_>, &Session<'f>) -> io::Result<()>,
        mut on_side: impl FnMut(&str) -> io::Result<()>,
    ) -> io::Result<()> {
        let file = self.file;
        let attrs = file.attrs();
        let records: Box<
            dyn Iterator<Item = prec_format::Result<prec_format::RawRecord<'f>>> + '_,
        > = if self.opts.show_round_events || self.opts.unordered {
            Box::new(file.records())
        } else {
            Box::new(file.ordered_records())
        };
        let mut comm = String::new();
        let mut more = Vec::new();
        let mut released = 0u64;
        for r in records {
            let r = match r {
                Ok(r) => r,
                Err(e) => {
                    self.warnings.push(format!(
                        "{STOPPED_READING}{e}; the output covers the records before it"
                    ));
                    break;
                }
            };
            let kind = r.header.kind;
            if r.offset >= released.saturating_add(RELEASE_STEP) {
                if let Some(release) = &self.opts.release {
                    release(r.offset - RELEASE_STEP / 2);
                }
                released = r.offset;
            }
            if !kind.is_kernel() {
                if kind == RecordType::FINISHED_ROUND && self.opts.show_round_events {
                    on_side("PERF_RECORD_FINISHED_ROUND\n")?;
                }
                continue;
            }
            let attr_idx = file.attr_index(&r);
            let attr = attr_idx.map(|i| &attrs[i].attr);
            let rec = match r.parse(attr) {
                Ok(rec) => rec,
                Err(e) => {
                    self.warnings
                        .push(format!("{SKIPPED_BAD}{kind} record: {e}"));
                    continue;
                }
            };
            let side_prefix = |s: &Session<'f>, pid: u32, tid: u32| -> Option<String> {
                let a = attr?;
                let id = r.sample_id(a);
                s.side_prefix(a, &id, pid as i32, tid as i32, (r.header.misc, kind))
            };
            match rec {
                Record::Comm {
                    pid,
                    tid,
                    comm,
                    exec,
                } => {
                    self.machine.comm(pid as i32, tid as i32, comm);
                    if self.opts.show_task_events {
                        if let Some(p) = side_prefix(self, pid, tid) {
                            let line = format!(
                                "{p}PERF_RECORD_COMM{}: {}:{pid}/{tid}\n",
                                if exec { " exec" } else { "" },
                                String::from_utf8_lossy(comm)
                            );
                            on_side(&line)?;
                        }
                    }
                }
                Record::Fork(t) => {
                    self.machine.fork(
                        t.pid as i32,
                        t.tid as i32,
                        t.ppid as i32,
                        t.ptid as i32,
                        r.header.misc,
                    );
                    if self.opts.show_task_events {
                        if let Some(p) = side_prefix(self, t.pid, t.tid) {
                            let line = format!(
                                "{p}PERF_RECORD_FORK({}:{}):({}:{})\n",
                                t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32
                            );
                            on_side(&line)?;
                        }
                    }
                }
                Record::Exit(t) => {
                    if self.opts.show_task_events {
                        if let Some(p) = side_prefix(self, t.pid, t.tid) {
                            let line = format!(
                                "{p}PERF_RECORD_EXIT({}:{}):({}:{})\n",
                                t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32
                            );
                            on_side(&line)?;
                        }
                    }
                    self.machine.exit(t.tid as i32);
                }
                Record::Mmap(m) | Record::Mmap2(m) => {
                    self.machine.mmap(r.cpumode(), r.header.misc, &m);
                    if self.opts.show_mmap_events {
                        if let Some(p) = side_prefix(self, m.pid, m.tid) {
                            let name = String::from_utf8_lossy(m.filename);
                            let line = if kind == RecordType::MMAP {
                                let x = if r.header.misc & misc::MMAP_DATA != 0 {
                                    'r'
                                } else {
                                    'x'
                                };
                                format!(
                                    "{p}PERF_RECORD_MMAP {}/{}: [{}({}) @ {}]: {x} {name}\n",
                                    m.pid as i32,
                                    m.tid as i32,
                                    hx(m.addr),
                                    hx(m.len),
                                    hx(m.pgoff)
                                )
                            } else {
                                let id = match m.file_id {
                                    Some(MmapFileId::BuildId(b)) => format!(" <{}>", hex(b)),
                                    Some(MmapFileId::Inode {
                                        maj,
                                        min,
                                        ino,
                                        ino_generation,
                                    }) => format!(" {maj:02x}:{min:02x} {ino} {ino_generation}"),
                                    None => String::new(),
                                };
                                let p4 =
                                    |bit: u32, c: char| if m.prot & bit != 0 { c } else { '-' };
                                let shared = if m.flags & 1 != 0 { 's' } else { 'p' };
                                format!(
                                    "{p}PERF_RECORD_MMAP2 {}/{}: [{}({}) @ {}{id}]: {}{}{}{shared} {name}\n",
                                    m.pid as i32,
                                    m.tid as i32,
                                    hx(m.addr),
                                    hx(m.len),
                                    hx(m.pgoff),
                                    p4(1, 'r'),
                                    p4(2, 'w'),
                                    p4(4, 'x'),
                                )
                            };
                            on_side(&line)?;
                        }
                    }
                }
                Record::Switch { .. }
                | Record::SwitchCpuWide { .. }
                | Record::Ksymbol { .. }
                | Record::BpfEvent { .. }
                | Record::Cgroup { .. }
                    if self.shows_side_event(&rec) =>
                {
                    // perf's print_event, process_bpf_events,
                    // process_cgroup_event: the sample's thread.
                    let Some(a) = attr else { continue };
                    let id = r.sample_id(a);
                    let pid = id.pid.map_or(-1, |p| p as i32);
                    let tid = id.tid.map_or(-1, |t| t as i32);
                    if let Some(p) = self.side_prefix(a, &id, pid, tid, (r.header.misc, kind)) {
                        let text = crate::dump::side_event_text(&rec).unwrap_or_default();
                        on_side(&format!("{p}{kind}{text}"))?;
                    }
                }
                Record::Namespaces { pid, tid, .. } if self.opts.show_namespace_events => {
                    if let Some(p) = side_prefix(self, pid, tid) {
                        let text = crate::dump::side_event_text(&rec).unwrap_or_default();
                        on_side(&format!("{p}PERF_RECORD_NAMESPACES{text}"))?;
                    }
                }
                Record::Lost { lost, .. } if self.opts.show_lost_events => {
                    let Some(a) = attr else { continue };
                    let id = r.sample_id(a);
                    let pid = id.pid.map_or(-1, |p| p as i32);
                    let tid = id.tid.map_or(-1, |t| t as i32);
                    if let Some(p) = self.side_prefix(a, &id, pid, tid, (r.header.misc, kind)) {
                        on_side(&format!("{p}PERF_RECORD_LOST lost {lost}\n"))?;
                    }
                }
                Record::Sample(s) => {
                    let Some(sample_ai) = attr_idx else { continue };
                    let mut unknown = 0;
                    for delivery in self
                        .sample_reads
                        .deliveries(file, sample_ai, &s, &mut unknown)
                    {
                        let ai = delivery.attr_index;
                        let a = &attrs[ai].attr;
                        let time = s.time.unwrap_or(0);
                        if self.opts.time.as_ref().is_some_and(|r| r.skips(time)) {
                            continue;
                        }
                        let pid = s.pid.map_or(-1, |p| p as i32);
                        let tid = s.tid.map_or(-1, |t| t as i32);
                        let cpu = s.cpu.unwrap_or(0);
                        let ip = s.ip.unwrap_or(0);
                        let cf = self.frame_at(pid, tid, r.cpumode(), ip);
                        let loc = crate::aggregate::resolve_loading(
                            &mut self.machine,
                            &mut self.resolver,
                            pid,
                            tid,
                            r.cpumode(),
                            ip,
                        );
                        let th = self.machine.thread(loc.thread);
                        let (tpid, ttid) = (th.pid, th.tid);
                        let comm_id = loc.comm;
                        if let Some(c) = &self.opts.comms {
                            if !c.iter().any(|c| c == self.machine.comms.get(comm_id)) {
                                continue;
                            }
                        }
                        if let Some(p) = &self.opts.pids {
                            if !p.contains(&tpid) {
                                continue;
                            }
                        }
                        if let Some(t) = &self.opts.tids {
                            if !t.contains(&ttid) {
                                continue;
                            }
                        }
                        if let Some(cpus) = &self.opts.cpus {
                            if !cpus.contains(&cpu) {
                                continue;
                            }
                        }
                        if !self.dso_and_symbol_wanted(&cf) {
                            continue;
                        }
                        if self.evswitch.discard(ai) {
                            continue;
                        }
                        let fields = self.fields_of(a);
                        let srccode = if fields.has(OutField::SrcCode) {
                            self.srccode(tid, &cf)
                        } else {
                            None
                        };
                        let src = fields.has(OutField::Srcline);
                        let frame = self.make_frame(&cf, src);
                        // perf's machine__resolve looks the sample's symbol
                        // up whatever the fields, loading its DSO.
                        if let (Some(loaded), Some(map)) = (&mut self.symbols_loaded, cf.map) {
                            loaded.insert(map.dso);
                        }
                        let chain = if self.use_callchain(a) && fields.has(OutField::Ip) {
                            let max_stack = self.opts.max_stack.unwrap_or(PERF_MAX_STACK_DEPTH);
                            // The sample's own chain: perf 6.1 adds no inline
                            // frames to it (verified with perf script --inline).
                            let params = ChainParams {
                                order: Order::Callee,
                                max_stack,
                                inline: false,
                            };
                            let mut buf = std::mem::take(&mut self.chain_buf);
                            self.cc.resolve(
                                &mut self.machine,
                                &mut self.resolver,
                                &mut self.strings,
                                a,
                                &s,
                                &params,
                                None,
                                &mut buf,
                            );
                            // DWARF-unwound user frames come after it, with
                            // inline frames (perf's unwind_entry → append_inlines).
                            if let Some(mut unw) = self.unwinder.take() {
                                if can_unwind(a, &s) {
                                    let user_only = Sample {
                                        callchain: None,
                                        ..s.clone()
                                    };
                                    let params = ChainParams {
                                        order: Order::Callee,
                                        max_stack,
                                        inline: !self.opts.no_inline,
                                    };
                                    more.clear();
                                    self.cc.resolve(
                                        &mut self.machine,
                                        &mut self.resolver,
                                        &mut self.strings,
                                        a,
                                        &user_only,
                                        &params,
                                        Some(&mut *unw as &mut dyn Unwinder),
                                        &mut more,
                                    );
                                    buf.extend_from_slice(&more);
                                }
                                self.unwinder = Some(unw);
                            }
                            if let Some(loaded) = &mut self.symbols_loaded {
                                loaded.extend(buf.iter().filter_map(|f| f.map).map(|m| m.dso));
                            }
                            let v: Vec<Frame> =
                                buf.iter().map(|f| self.make_frame(f, src)).collect();
                            self.chain_buf = buf;
                            Some(v)
                        } else {
                            None
                        };
                        let period = delivery
                            .period
                            .unwrap_or(s.period.unwrap_or(a.sample_period_or_freq));
                        let trace = match (&self.tracepoints, s.raw) {
                            (Some(tp), Some(raw))
                                if a.type_ == attr_type::TRACEPOINT
                                    && self.fields_of(a).has(OutField::Trace) =>
                            {
                                let (resolver, machine) = (&mut self.resolver, &self.machine);
                                tp.format(a.config, raw, &mut |addr| {
                                    resolver.kernel_function(machine, addr)
                                })
                            }
                            _ => None,
                        };
                        // A copy (the callback borrows the session), in a buffer
                        // kept across samples.
                        comm.clear();
                        comm.push_str(self.machine.comms.get(comm_id));
                        let addr = s.addr.unwrap_or(0);
                        let addr_frame = (fields.has(OutField::Addr)
                            && (fields.has(OutField::Sym) || fields.has(OutField::Dso))
                            && addr_correlates_sym(a))
                        .then(|| {
                            let af = self.frame_at_fb(pid, tid, r.cpumode(), addr);
                            self.make_frame(&af, false)
                        });
                        let branches = match &s.branch_stack {
                            Some(bs) => self.branch_stack_text(pid, tid, r.cpumode(), bs, fields),
                            None => String::new(),
                        };
                        let instruction =
                            self.instruction_text(pid, tid, s.ip.unwrap_or(0), fields);
                        let raw_weight = s.weight.unwrap_or(0);
                        let (weight, ins_lat) = if a.sample_type & st::WEIGHT_STRUCT != 0 {
                            (raw_weight & 0xffff_ffff, (raw_weight >> 32) as u16)
                        } else {
                            (raw_weight, 0)
                        };
                        let regs_text = |regs: Option<prec_format::sample::Regs<'_>>| {
                            regs.map(|r| crate::dump::regs_text(file, &r))
                                .unwrap_or_default()
                        };
                        let rs = ResolvedSample {
                            record: r.body.as_ptr() as usize,
                            attr_index: ai,
                            event: &self.names[ai],
                            comm: &comm,
                            pid,
                            tid,
                            cpu,
                            time,
                            period,
                            addr,
                            addr_frame,
                            misc: r.header.misc,
                            weight,
                            ins_lat,
                            data_src: s.data_src.unwrap_or(0),
                            branches,
                            instruction,
                            phys_addr: s.phys_addr.unwrap_or(0),
                            data_page_size: s.data_page_size.unwrap_or(0),
                            code_page_size: s.code_page_size.unwrap_or(0),
                            iregs: if fields.has(OutField::Iregs) {
                                regs_text(s.regs_intr)
                            } else {
                                String::new()
                            },
                            uregs: if fields.has(OutField::Uregs) {
                                regs_text(s.regs_user)
                            } else {
                                String::new()
                            },
                            trace,
                            frame,
                            chain,
                            srccode,
                        };
                        on_sample(&rs, self)?;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// perf's `thread__find_map_fb`: the frame at `addr` in the maps of
    /// `cpumode`, else in those of the address's half.
    fn frame_at_fb(&mut self, pid: i32, tid: i32, cpumode: u16, addr: u64) -> ChainFrame {
        let by_addr = if addr >= 1 << 63 {
            prec_format::constants::misc::KERNEL
        } else {
            prec_format::constants::misc::USER
        };
        let frame = self.frame_at(pid, tid, cpumode, addr);
        if frame.map.is_some() || by_addr == cpumode {
            return frame;
        }
        self.frame_at(pid, tid, by_addr, addr)
    }

    /// perf's `perf_sample__fprintf_brstack` (or `brstacksym`, or
    /// `brstackoff`, whichever of them `fields` has first).
    fn branch_stack_text(
        &mut self,
        pid: i32,
        tid: i32,
        cpumode: u16,
        bs: &prec_format::sample::BranchStack<'_>,
        fields: Fields,
    ) -> String {
        use std::fmt::Write as _;
        let kind = [
            OutField::BrStack,
            OutField::BrStackSym,
            OutField::BrStackOff,
        ]
        .into_iter()
        .find(|&k| fields.has(k));
        let Some(kind) = kind else {
            return String::new();
        };
        let with_dso = fields.has(OutField::Dso);
        let mut out = String::new();
        for i in 0..bs.entries.len() / 3 {
            let word = |j: usize| bs.entries.get(i * 3 + j).unwrap_or(0);
            let (from, to, flags) = (word(0), word(1), word(2));
            for (n, addr) in [from, to].into_iter().enumerate() {
                let frame = self.frame_at_fb(pid, tid, cpumode, addr);
                let dso = frame.map.map(|m| self.dso_name(m.dso));
                match kind {
                    OutField::BrStackSym => {
                        if n == 1 {
                            out.push('/');
                        }
                        match frame.sym {
                            Some(id) => {
                                let sym = &self.resolver.syms[id.0 as usize];
                                let name = self.strings.get(sym.name);
                                let offset = frame.addr.wrapping_sub(sym.start);
                                let _ = write!(out, "{name}+{offset:#x}");
                            }
                            None => out.push_str("[unknown]"),
                        }
                    }
                    _ => {
                        let shown = if kind == OutField::BrStackOff {
                            self.branch_offset(&frame, addr)
                        } else {
                            addr
                        };
                        let _ = write!(out, "{}{shown:#x}", if n == 0 { " " } else { "/" });
                    }
                }
                if with_dso {
                    let _ = write!(out, "({})", dso.as_deref().unwrap_or("[unknown]"));
                }
            }
            let mispredicted = match (flags & 1 != 0, flags & 2 != 0) {
                (true, _) => 'M',
                (false, true) => 'P',
                (false, false) => '-',
            };
            let _ = write!(
                out,
                "/{mispredicted}/{}/{}/{}/{} ",
                if flags & 4 != 0 { 'X' } else { '-' },
                if flags & 8 != 0 { 'A' } else { '-' },
                (flags >> 4) & 0xffff,
                branch_type_name(flags)
            );
        }
        out
    }

    /// perf's `perf_sample__fprintf_insn` for `insnlen` and `insn`.
    fn instruction_text(&mut self, pid: i32, tid: i32, ip: u64, fields: Fields) -> String {
        use std::fmt::Write as _;
        if !fields.has(OutField::Insn) && !fields.has(OutField::InsnLen) {
            return String::new();
        }
        let bytes = self.instruction_at(pid, tid, ip);
        let mut out = String::new();
        if fields.has(OutField::InsnLen) {
            let _ = write!(out, " ilen: {}", bytes.len());
        }
        if fields.has(OutField::Insn) && !bytes.is_empty() {
            out.push_str(" insn:");
            for b in &bytes {
                let _ = write!(out, " {b:02x}");
            }
        }
        out
    }

    /// perf's `arch_fetch_insn` (x86): the instruction at `ip` read from
    /// the file of its user-space map (kernel code has no file perf reads)
    /// and decoded for its length; nothing when the recording is of
    /// another architecture, or the bytes are not an instruction.
    fn instruction_at(&mut self, pid: i32, tid: i32, ip: u64) -> Vec<u8> {
        if ip == 0 || !self.native_arch {
            return Vec::new();
        }
        let cpumode = if ip >= 1 << 63 {
            prec_format::constants::misc::KERNEL
        } else {
            prec_format::constants::misc::USER
        };
        let frame = self.frame_at(pid, tid, cpumode, ip);
        let Some(map) = frame.map else {
            return Vec::new();
        };
        let Some(bin) = self.resolver.binary(&self.machine, map.dso) else {
            return Vec::new();
        };
        let Some(file) = self.resolver.symbolizer.binary_bytes(bin) else {
            return Vec::new();
        };
        // perf reads 16 bytes (MAX_INSN) at the address's file offset.
        let offset = ip.wrapping_sub(map.start).wrapping_add(map.pgoff);
        let Some(code) = usize::try_from(offset)
            .ok()
            .and_then(|start| file.get(start..file.len().min(start.saturating_add(16))))
        else {
            return Vec::new();
        };
        // ELF's EI_CLASS: 2 is 64-bit.
        let bitness = if file.get(4) == Some(&2) { 64 } else { 32 };
        let mut decoder =
            iced_x86::Decoder::new(bitness, code, iced_x86::DecoderOptions::NO_INVALID_CHECK);
        let instruction = decoder.decode();
        if instruction.is_invalid() || instruction.len() > code.len() {
            return Vec::new();
        }
        code[..instruction.len()].to_vec()
    }

    /// perf's brstackoff address: `map_ip(addr)`, unless the DSO's
    /// symbols are at run-time addresses (`dso->adjust_symbols`: a user
    /// program or library perf loaded from its file, loaded by looking a
    /// sample's symbol up in it). perf's kernel map keeps the record's
    /// start but not its offset, and its addresses are absolute once the
    /// kernel's symbols loaded.
    fn branch_offset(&self, frame: &ChainFrame, addr: u64) -> u64 {
        let Some(map) = frame.map else { return addr };
        let dso = self.machine.dsos.get(map.dso);
        match dso.kind {
            DsoKind::Kernel if self.resolver.kernel_symbols_loaded() => addr,
            DsoKind::Kernel => addr.wrapping_sub(map.start),
            // A JIT map's symbols are at run-time addresses, but perf's
            // map_ip is the usual one.
            DsoKind::Jit => addr.wrapping_sub(map.start).wrapping_add(map.pgoff),
            DsoKind::User | DsoKind::Vdso
                if self
                    .symbols_loaded
                    .as_ref()
                    .is_some_and(|l| l.contains(&map.dso))
                    && self
                        .resolver
                        .symbolizer
                        .symtab_origin(&dso.long_name, dso.build_id.as_deref())
                        != '!' =>
            {
                addr
            }
            _ => frame.addr,
        }
    }

    /// `addr` of thread `pid`/`tid` in `cpumode` resolved to a frame.
    fn frame_at(&mut self, pid: i32, tid: i32, cpumode: u16, addr: u64) -> ChainFrame {
        self.cc.frame(
            &mut self.machine,
            &mut self.resolver,
            &mut self.strings,
            pid,
            tid,
            cpumode,
            addr,
        )
    }

    /// perf's `--dsos` and `-S` filters (machine__resolve): a sample
    /// without a map passes `--dsos`; `-S` also takes the symbol's start
    /// address (`0x...`).
    fn dso_and_symbol_wanted(&self, frame: &ChainFrame) -> bool {
        if let (Some(dsos), Some(map)) = (&self.opts.dsos, &frame.map) {
            let dso = self.machine.dsos.get(map.dso);
            if !dsos
                .iter()
                .any(|d| *d == dso.short_name || *d == dso.long_name)
            {
                return false;
            }
        }
        if let Some((names, addresses)) = &self.symbol_filter {
            // perf's setup_addrlist: addresses match the sample's ip.
            if frame.map.is_some() && addresses.contains(&frame.ip) {
                return true;
            }
            let Some(id) = frame.sym else { return false };
            let sym = &self.resolver.syms[id.0 as usize];
            let name = self.strings.get(sym.name);
            let start = frame.map.map_or(sym.start, |m| m.unmap_ip(sym.start));
            let start = format!("{start:#x}");
            if !names.iter().any(|s| *s == name || *s == start) {
                return false;
            }
        }
        true
    }

    /// perf_sample__fprintf_start for a side-band record; `None` when the
    /// record is filtered out.
    fn side_prefix(
        &self,
        attr: &Attr,
        id: &prec_format::record::SampleId,
        pid: i32,
        tid: i32,
        misc: (u16, RecordType),
    ) -> Option<String> {
        let rec_tid = tid;
        let (pid, tid, cpu, time) = if attr.sample_id_all() {
            (
                id.pid.map_or(pid, |p| p as i32),
                id.tid.map_or(tid, |t| t as i32),
                id.cpu.unwrap_or(0),
                id.time.unwrap_or(0),
            )
        } else {
            (pid, tid, 0, 0)
        };
        if let Some(cpus) = &self.opts.cpus {
            if !cpus.contains(&cpu) {
                return None;
            }
        }
        // The comm is that of the record's own thread.
        let comm = match self.machine.find(rec_tid) {
            Some(t) => self.machine.thread_comm(t).to_string(),
            None => format!(":{rec_tid}"),
        };
        let f = self.fields_of(attr);
        let mut s = String::new();
        self.start(&mut s, f, attr, &comm, pid, tid, cpu, time, misc);
        Some(s)
    }

    /// Whether an option asks for this record printed (the records whose
    /// line starts with the thread of their sample id).
    fn shows_side_event(&self, rec: &Record<'_>) -> bool {
        match rec {
            Record::Switch { .. } | Record::SwitchCpuWide { .. } => self.opts.show_switch_events,
            Record::Ksymbol { .. } | Record::BpfEvent { .. } => self.opts.show_bpf_events,
            Record::Cgroup { .. } => self.opts.show_cgroup_events,
            _ => false,
        }
    }

    /// perf's `perf_sample__fprintf_start`.
    #[allow(clippy::too_many_arguments)]
    fn start(
        &self,
        s: &mut String,
        f: Fields,
        attr: &Attr,
        comm: &str,
        pid: i32,
        tid: i32,
        cpu: u32,
        time: u64,
        (misc, kind): (u16, RecordType),
    ) {
        use std::fmt::Write as _;
        if f.has(OutField::Comm) {
            if f.has(OutField::Ip) && self.use_callchain(attr) {
                let _ = write!(s, "{comm} ");
            } else {
                let _ = write!(s, "{comm:>16} ");
            }
        }
        if f.has(OutField::Pid) && f.has(OutField::Tid) {
            let _ = write!(s, "{pid:5}/{tid:<5} ");
        } else if f.has(OutField::Pid) {
            let _ = write!(s, "{pid:5} ");
        } else if f.has(OutField::Tid) {
            let _ = write!(s, "{tid:5} ");
        }
        if f.has(OutField::Cpu) {
            let _ = write!(s, "[{cpu:03}] ");
        }
        if f.has(OutField::Misc) {
            push_misc(s, misc, kind);
        }
        if f.has(OutField::Tod) {
            self.push_tod(s, time);
        }
        if f.has(OutField::Time) {
            let (mut first, mut previous) = self.printed_times.get();
            let time = if self.opts.reltime {
                // perf keeps a first time of 0 unlatched.
                if first == 0 {
                    first = time;
                }
                time.wrapping_sub(first)
            } else if self.opts.deltatime {
                let delta = if previous == 0 {
                    0
                } else {
                    time.wrapping_sub(previous)
                };
                previous = time;
                delta
            } else {
                time
            };
            self.printed_times.set((first, previous));
            let secs = time / 1_000_000_000;
            let ns = time % 1_000_000_000;
            if self.opts.ns {
                let _ = write!(s, "{secs:5}.{ns:09}: ");
            } else {
                // `{secs}.{us:06}` right-aligned in 12 columns, without
                // formatting it into a temporary first.
                let mut len = 8;
                let mut v = secs;
                while v >= 10 {
                    v /= 10;
                    len += 1;
                }
                for _ in len..12 {
                    s.push(' ');
                }
                let _ = write!(s, "{secs}.{:06}: ", ns / 1000);
            }
        }
    }

    /// Formats one sample like perf script.
    pub fn format_sample(&self, rs: &ResolvedSample<'_>, s: &mut String) {
        use std::fmt::Write as _;
        let a = &self.file.attrs()[rs.attr_index].attr;
        let f = self.fields_of(a);
        // perf prints nothing for an event left without fields (`-F trace`
        // of events that are not tracepoints).
        if f == Fields::default() {
            return;
        }
        let misc = (rs.misc, RecordType::SAMPLE);
        self.start(s, f, a, rs.comm, rs.pid, rs.tid, rs.cpu, rs.time, misc);
        if f.has(OutField::Period) {
            let _ = write!(s, "{:10} ", rs.period);
        }
        if f.has(OutField::Event) {
            let _ = write!(s, "{:>w$}: ", rs.event, w = self.name_width);
        }
        if f.has(OutField::Flags) {
            // perf_sample__fprintf_flags: "  %-21s ". Only the decoders of
            // branch traces (Intel PT, BTS) set a sample's flags; a
            // recorded sample's are 0, shown as nothing.
            s.push_str(&" ".repeat(24));
        }
        if let Some(t) = rs.trace.as_deref().filter(|_| f.has(OutField::Trace)) {
            s.push_str(t);
        }
        if f.has(OutField::Addr) {
            let _ = write!(s, "{:16x}", rs.addr);
            // perf_sample__fprintf_addr: the address's symbol and DSO.
            if let Some(fr) = &rs.addr_frame {
                if f.has(OutField::Sym) {
                    s.push(' ');
                    push_sym(s, f, fr);
                }
                if f.has(OutField::Dso) {
                    s.push_str(" (");
                    s.push_str(fr.dso.as_deref().unwrap_or("[unknown]"));
                    s.push(')');
                }
            }
        }
        if f.has(OutField::DataSrc) {
            // perf's data_src__fprintf pads to the longest one so far.
            let text = crate::data_src::script_field(rs.data_src);
            let width = self.data_src_width.get().max(text.len());
            self.data_src_width.set(width);
            let _ = write!(s, "{text:<width$}");
        }
        if f.has(OutField::Weight) {
            let _ = write!(s, "{:16}", rs.weight);
        }
        if f.has(OutField::InsLat) {
            let _ = write!(s, "{:16}", rs.ins_lat);
        }
        if f.has(OutField::Ip) {
            match &rs.chain {
                Some(chain) => {
                    s.push('\n');
                    for fr in chain {
                        self.format_frame(s, f, fr, '\t');
                        s.push('\n');
                        let stops = |list: &Vec<String>| {
                            fr.sym
                                .as_ref()
                                .is_some_and(|(name, ..)| list.iter().any(|n| **n == **name))
                        };
                        if self.opts.stop_bt.as_ref().is_some_and(stops) {
                            break;
                        }
                    }
                }
                None => {
                    s.push(' ');
                    self.format_frame(s, f, &rs.frame, '\0');
                }
            }
        }
        if f.has(OutField::Iregs) {
            s.push_str(&rs.iregs);
        }
        if f.has(OutField::Uregs) {
            s.push_str(&rs.uregs);
        }
        s.push_str(&rs.branches);
        s.push_str(&rs.instruction);
        if f.has(OutField::PhysAddr) {
            let _ = write!(s, "{:16x}", rs.phys_addr);
        }
        if f.has(OutField::DataPageSize) {
            let _ = write!(s, " {}", crate::dump::page_size_name(rs.data_page_size));
        }
        if f.has(OutField::CodePageSize) {
            let _ = write!(s, " {}", crate::dump::page_size_name(rs.code_page_size));
        }
        s.push('\n');
        if let Some(code) = &rs.srccode {
            s.push_str(code);
            s.push('\n');
        }
    }

    fn format_frame(&self, s: &mut String, f: Fields, fr: &Frame, lead: char) {
        use std::fmt::Write as _;
        if lead != '\0' && f.has(OutField::Ip) {
            s.push(lead);
        }
        if f.has(OutField::Ip) {
            // perf 6.1 shows call chain entries as map-relative addresses.
            let ip = if lead == '\0' || fr.kernel {
                fr.ip
            } else {
                fr.addr
            };
            push_hex(s, ip, 16);
        }
        if f.has(OutField::Sym) {
            s.push(' ');
            push_sym(s, f, fr);
        }
        if f.has(OutField::Dso) && !fr.inlined {
            s.push_str(" (");
            s.push_str(fr.dso.as_deref().unwrap_or("[unknown]"));
            s.push(')');
        }
        if f.has(OutField::Srcline) {
            if let Some(l) = &fr.srcline {
                let _ = write!(s, "\n  {l}");
            }
        }
        if fr.inlined {
            s.push_str(" (inlined)");
        }
    }
}

/// Writes `perf script` output for `file` to `out`. Returns the warnings
/// to show on stderr.
pub fn write_script<W: Write>(
    file: &PerfFile<'_>,
    opts: ScriptOptions,
    out: &mut W,
) -> Result<Vec<String>, Box<dyn std::error::Error>> {
    let mut session = Session::new(file, opts)?;
    let mut line = String::with_capacity(256);
    let out = std::cell::RefCell::new(out);
    session.walk(
        |rs, sess| {
            line.clear();
            sess.format_sample(rs, &mut line);
            out.borrow_mut().write_all(line.as_bytes())
        },
        |side| out.borrow_mut().write_all(side.as_bytes()),
    )?;
    Ok(session.warnings)
}

/// One event's file of `perf script --per-event-dump`.
#[derive(Clone, Debug)]
pub struct EventDump {
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// Samples written.
    pub samples: u64,
}

/// `perf script --per-event-dump`: each event's samples go to
/// `BASE.EVENT.dump` (perf's naming: `BASE` is the input's path), the
/// side-band lines to `out`. Every event gets its file, samples or not.
/// Returns the warnings to show and each event's file, in event order.
#[allow(clippy::type_complexity)]
pub fn write_script_per_event<W: Write>(
    file: &PerfFile<'_>,
    opts: ScriptOptions,
    base: &str,
    out: &mut W,
) -> Result<(Vec<String>, Vec<EventDump>), Box<dyn std::error::Error>> {
    let mut session = Session::new(file, opts)?;
    // Events of one name share their file (perf would open it twice).
    let mut writers: Vec<io::BufWriter<std::fs::File>> = Vec::new();
    let mut writer_of_event = Vec::new();
    let mut dumps: Vec<EventDump> = Vec::new();
    for name in &session.names {
        let path = format!("{base}.{name}.dump");
        let shared = dumps.iter().position(|d| d.path == path);
        let w = match shared {
            Some(event) => writer_of_event[event],
            None => {
                let f = std::fs::File::create(&path)
                    .map_err(|e| format!("cannot create {path}: {e}"))?;
                writers.push(io::BufWriter::new(f));
                writers.len() - 1
            }
        };
        writer_of_event.push(w);
        dumps.push(EventDump {
            path,
            bytes: 0,
            samples: 0,
        });
    }
    let mut line = String::with_capacity(256);
    let out = std::cell::RefCell::new(out);
    let counts = std::cell::RefCell::new(&mut dumps);
    session.walk(
        |rs, sess| {
            line.clear();
            sess.format_sample(rs, &mut line);
            let Some(&w) = writer_of_event.get(rs.attr_index) else {
                return out.borrow_mut().write_all(line.as_bytes());
            };
            counts.borrow_mut()[rs.attr_index].samples += 1;
            writers[w].write_all(line.as_bytes())
        },
        |side| out.borrow_mut().write_all(side.as_bytes()),
    )?;
    for (w, file_writer) in writers.iter_mut().enumerate() {
        file_writer.flush()?;
        let size = file_writer.get_ref().metadata()?.len();
        for (event, d) in dumps.iter_mut().enumerate() {
            if writer_of_event[event] == w {
                d.bytes = size;
            }
        }
    }
    Ok((session.warnings, dumps))
}

/// `perf script -D`: the dump of every record (see
/// [`crate::dump::dump_with_script`]), each sample followed by its text.
/// Returns the warnings to show, and the error that ended the dump early.
#[allow(clippy::type_complexity)]
pub fn write_dump_script<W: Write>(
    file: &PerfFile<'_>,
    opts: ScriptOptions,
    name: &str,
    out: &mut W,
) -> Result<(Vec<String>, Option<prec_format::Error>), Box<dyn std::error::Error>> {
    let mut session = Session::new(file, opts)?;
    let mut lines: HashMap<usize, Vec<String>> = HashMap::default();
    session.walk(
        |rs, sess| {
            let mut text = String::new();
            sess.format_sample(rs, &mut text);
            lines.entry(rs.record).or_default().push(text);
            Ok(())
        },
        |_| Ok(()),
    )?;
    let unordered = session.opts.unordered;
    let stopped = crate::dump::dump_with_script(file, name, lines, unordered, out)?;
    Ok((session.warnings, stopped))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// perf 6.1 `perf script -F comm,trace`: seven warnings (hardware,
    /// software, hardware-cache, then its four other outputs as
    /// "unknown"), and `trace` only for tracepoints.
    #[test]
    fn trace_field_is_for_tracepoints_only() {
        let cfg = parse_fields_arg("comm,trace").expect("parses");
        assert_eq!(cfg.warnings.len(), 7);
        assert_eq!(
            cfg.warnings[0],
            "'trace' not valid for hardware events. Ignoring."
        );
        assert!(cfg.get(OutType::Tracepoint).has(OutField::Trace));
        assert!(!cfg.get(OutType::Software).has(OutField::Trace));
        assert!(cfg.get(OutType::Software).has(OutField::Comm));
        let typed = parse_fields_arg("trace:comm,trace").expect("parses");
        assert!(typed.warnings.is_empty());
        assert!(typed.get(OutType::Tracepoint).has(OutField::Trace));
    }
}
