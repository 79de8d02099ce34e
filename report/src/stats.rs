//! Record counts like `perf report --stats` (and the tail of `perf report -D`):
//! the "Aggregated stats:" table per record type, then per-event sample counts,
//! with event names as perf 6.1's `evsel__name` makes them.

use std::io::{self, Write};

use prec_format::attr::{attr_type, flags};
use prec_format::constants::sample_type as st;
use prec_format::features::{self, Feature};
use prec_format::{FeatureId, PerfFile, RawRecord, Record, RecordType};

use crate::sample_read::SampleReads;

/// perf 6.1's `PERF_RECORD_HEADER_MAX`.
pub const HEADER_MAX: u32 = 83;

/// The name perf 6.1 gives a record type (`perf_event__name`).
pub fn record_name(kind: u32) -> &'static str {
    match kind {
        0 => "TOTAL",
        64 => "ATTR",
        65 => "EVENT_TYPE",
        66 => "TRACING_DATA",
        67 => "BUILD_ID",
        80 => "FEATURE",
        k if k >= HEADER_MAX => "INVALID",
        k => RecordType(k).name().unwrap_or("UNKNOWN"),
    }
}

/// Counts per record type and per event.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Index 0 is the total.
    pub nr_events: Vec<u64>,
    /// Samples per attr index.
    pub nr_samples: Vec<u64>,
    /// Samples the LOST_SAMPLES records say were lost, per attr index
    /// (perf's `hists__inc_nr_lost_samples`).
    pub nr_lost_samples: Vec<u64>,
}

impl Stats {
    pub fn new(nr_attrs: usize) -> Stats {
        Stats {
            nr_events: vec![0; HEADER_MAX as usize],
            nr_samples: vec![0; nr_attrs],
            nr_lost_samples: vec![0; nr_attrs],
        }
    }

    /// Counts one record in the aggregated table (perf's `events_stats__inc`).
    pub fn count_record(&mut self, kind: RecordType) {
        if let Some(n) = self.nr_events.get_mut(kind.0 as usize) {
            *n += 1;
            self.nr_events[0] += 1;
        }
    }

    /// Counts one sample (or, with its lost count `by`, a LOST_SAMPLES
    /// record) of attr `idx`.
    pub fn count_event(&mut self, kind: RecordType, idx: Option<usize>, by: u64) {
        let Some(idx) = idx else { return };
        let v = if kind == RecordType::SAMPLE {
            &mut self.nr_samples
        } else {
            &mut self.nr_lost_samples
        };
        if v.len() <= idx {
            v.resize(idx + 1, 0);
        }
        v[idx] += by;
    }

    /// Prints `\nAggregated stats:` and the per-event tables like perf 6.1.
    /// `stats_mode` is `perf report --stats`, which ignores pipe-mode
    /// features and EVENT_UPDATE records when naming events.
    pub fn print(
        &self,
        file: &PerfFile<'_>,
        stats_mode: bool,
        out: &mut dyn Write,
    ) -> io::Result<()> {
        let msg = if file.feature(FeatureId::AUXTRACE).is_some() {
            " (excludes AUX area (e.g. instruction trace) decoded / synthesized events)"
        } else {
            ""
        };
        writeln!(out, "\nAggregated stats:{msg}")?;
        let total = self.nr_events.first().copied().unwrap_or(0);
        writeln!(out, "{:>16} events: {:>10}", "TOTAL", total)?;
        for (i, &n) in self.nr_events.iter().enumerate().skip(1) {
            let name = record_name(i as u32);
            if name == "UNKNOWN" || n == 0 {
                continue;
            }
            if total != 0 {
                let pct = n as f64 * 100.0 / total as f64;
                writeln!(out, "{name:>16} events: {n:>10}  ({pct:4.1}%)")?;
            } else {
                writeln!(out, "{name:>16} events: {n:>10}")?;
            }
        }
        let names = event_names(file, !stats_mode);
        for (i, name) in names.iter().enumerate() {
            let s = self.nr_samples.get(i).copied().unwrap_or(0);
            let l = self.nr_lost_samples.get(i).copied().unwrap_or(0);
            if s == 0 && l == 0 {
                continue;
            }
            writeln!(out, "{name} stats:")?;
            if s != 0 {
                writeln!(out, "{:>16} events: {s:>10}", "SAMPLE")?;
            }
            if l != 0 {
                writeln!(out, "{:>16} events: {l:>10}", "LOST_SAMPLES")?;
            }
        }
        Ok(())
    }
}

/// Counts the records of a whole file the way `perf report --stats` does.
/// Returns the stats and the error that stopped reading, if any.
pub fn collect(file: &PerfFile<'_>) -> (Stats, Option<prec_format::Error>) {
    let mut stats = Stats::new(file.attrs().len());
    for r in file.raw_records() {
        match r {
            Ok(r) if r.header.kind == RecordType::COMPRESSED => stats.count_record(r.header.kind),
            _ => {}
        }
    }
    let mut err = None;
    let mut reads = SampleReads::default();
    for r in file.records() {
        match r {
            Ok(r) => count(file, &mut stats, &mut reads, &r),
            Err(e) => {
                err = Some(e);
                break;
            }
        }
    }
    (stats, err)
}

/// Counts one (decompressed) record. A sample with counter values counts
/// once per event it is delivered to (see [`crate::sample_read`]).
pub fn count(file: &PerfFile<'_>, stats: &mut Stats, reads: &mut SampleReads, r: &RawRecord<'_>) {
    stats.count_record(r.header.kind);
    if r.header.kind == RecordType::SAMPLE || r.header.kind == RecordType::LOST_SAMPLES {
        let idx = sample_attr_index(file, r);
        let attr = idx.map(|i| &file.attrs()[i].attr);
        if let (Some(i), Some(a)) = (idx, attr) {
            if r.header.kind == RecordType::SAMPLE && a.sample_type & st::READ != 0 {
                if let Ok(Record::Sample(s)) = r.parse(attr) {
                    let mut unknown = 0;
                    for d in reads.deliveries(file, i, &s, &mut unknown) {
                        stats.count_event(r.header.kind, Some(d.attr_index), 1);
                    }
                    return;
                }
            }
        }
        let by = match r.parse(attr) {
            Ok(Record::LostSamples { lost }) => lost,
            _ => 1,
        };
        stats.count_event(r.header.kind, idx, by);
    }
}

/// The attr of a sample as perf finds it (`evlist__event2evsel`): an id that
/// is in no attr's list gives `None`, a single attr owns everything.
pub fn sample_attr_index(file: &PerfFile<'_>, r: &RawRecord<'_>) -> Option<usize> {
    file.attr_index(r)
}

/// `perf report --stats`.
pub fn print_stats(
    file: &PerfFile<'_>,
    out: &mut dyn Write,
) -> io::Result<Option<prec_format::Error>> {
    let (stats, err) = collect(file);
    if err.is_some() {
        return Ok(err);
    }
    stats.print(file, true, out)?;
    Ok(None)
}

/// The events' names, in attr order: EVENT_DESC names (file mode, or pipe
/// mode with `records`), overridden by EVENT_UPDATE name records (with
/// `records`); otherwise perf's name for the attr.
///
/// `perf report --stats` handles no feature or EVENT_UPDATE record, so it
/// passes `records: false`.
pub fn event_names(file: &PerfFile<'_>, records: bool) -> Vec<String> {
    let attrs = file.attrs();
    let mut names: Vec<Option<String>> = vec![None; attrs.len()];
    let pipe = file.mode() == prec_format::read::Mode::Pipe;
    let desc = if records || !pipe {
        file.feature(FeatureId::EVENT_DESC)
    } else {
        None
    };
    if let Some(f) = desc {
        if let Ok(Feature::EventDesc(d)) = features::decode(f.id, f.data, f.offset, file.endian()) {
            for (i, ev) in d.events.iter().enumerate() {
                if let Some(slot) = names.get_mut(i) {
                    if slot.is_none() && !ev.name.is_empty() {
                        *slot = Some(ev.name.clone());
                    }
                }
            }
        }
    }
    for r in file.raw_records().map_while(|r| r.ok()) {
        if !records {
            break;
        }
        if r.header.kind != RecordType::EVENT_UPDATE || r.body.len() < 16 {
            continue;
        }
        let e = file.endian();
        let kind = e.u64(r.body);
        let id = e.u64(&r.body[8..]);
        if kind != 2 {
            continue;
        }
        if let Some(i) = file.attr_of_id(id) {
            let name = prec_format::bytes::until_nul(&r.body[16..]);
            names[i] = Some(String::from_utf8_lossy(name).into_owned());
        }
    }
    names
        .into_iter()
        .zip(attrs)
        .map(|(n, a)| n.unwrap_or_else(|| attr_name(&a.attr)))
        .collect()
}

const HW_NAMES: [&str; 10] = [
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

const SW_NAMES: [&str; 12] = [
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

const CACHE_TYPES: [&str; 7] = [
    "L1-dcache",
    "L1-icache",
    "LLC",
    "dTLB",
    "iTLB",
    "branch",
    "node",
];
const CACHE_OPS: [[&str; 2]; 3] = [
    ["load", "loads"],
    ["store", "stores"],
    ["prefetch", "prefetches"],
];
const CACHE_RESULTS: [&str; 2] = ["refs", "misses"];

/// perf 6.1's `evsel__name` for an event without a stored name.
pub fn attr_name(a: &prec_format::Attr) -> String {
    let c = a.config;
    let mut s = match a.type_ {
        attr_type::HARDWARE => HW_NAMES
            .get(c as usize)
            .copied()
            .unwrap_or("unknown-hardware")
            .to_string(),
        attr_type::SOFTWARE => SW_NAMES
            .get(c as usize)
            .copied()
            .unwrap_or("unknown-software")
            .to_string(),
        attr_type::RAW => format!("raw 0x{c:x}"),
        attr_type::HW_CACHE => {
            let (t, op, res) = (c & 0xff, (c >> 8) & 0xff, (c >> 16) & 0xff);
            match (
                CACHE_TYPES.get(t as usize),
                CACHE_OPS.get(op as usize),
                CACHE_RESULTS.get(res as usize),
            ) {
                (Some(t), Some(op), Some(r)) => {
                    if res != 0 {
                        format!("{t}-{}-{r}", op[0])
                    } else {
                        format!("{t}-{}", op[1])
                    }
                }
                _ => "unknown-ext-hardware-cache-type".to_string(),
            }
        }
        attr_type::TRACEPOINT => return "unknown tracepoint".to_string(),
        attr_type::BREAKPOINT => {
            let mut s = format!("mem:0x{:x}:", a.config1);
            if a.bp_type & 1 != 0 {
                s.push('r');
            }
            if a.bp_type & 2 != 0 {
                s.push('w');
            }
            if a.bp_type & 4 != 0 {
                s.push('x');
            }
            s
        }
        t => return format!("unknown attr type: {t}"),
    };
    add_modifiers(a, &mut s);
    s
}

/// perf's `evsel__add_modifiers`.
fn add_modifiers(a: &prec_format::Attr, s: &mut String) {
    let mut m = String::new();
    let ex_k = a.has(flags::EXCLUDE_KERNEL);
    let ex_u = a.has(flags::EXCLUDE_USER);
    let ex_hv = a.has(flags::EXCLUDE_HV);
    let mut exclude_guest_default = false;
    if ex_k || ex_u || ex_hv {
        if !ex_k {
            m.push('k');
        }
        if !ex_u {
            m.push('u');
        }
        if !ex_hv {
            m.push('h');
        }
        exclude_guest_default = true;
    }
    let p = a.precise_ip() as usize;
    if p != 0 {
        m.push_str(&"ppp"[..p.min(3)]);
        exclude_guest_default = true;
    }
    let ex_host = a.has(flags::EXCLUDE_HOST);
    let ex_guest = a.has(flags::EXCLUDE_GUEST);
    if ex_host || ex_guest == exclude_guest_default {
        if !ex_host {
            m.push('H');
        }
        if !ex_guest {
            m.push('G');
        }
    }
    if !m.is_empty() {
        s.push(':');
        s.push_str(&m);
    }
}
