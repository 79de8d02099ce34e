//! `perf report -D` (`--dump-raw-trace`): every record as a hex dump and a
//! decoded line, in the order perf 6.1 delivers them, then the stats.
//!
//! The order follows perf's session: perf's own (user) records are printed
//! when read; kernel records with a timestamp go through perf's
//! `ordered_events` queue, flushed at each FINISHED_ROUND up to the newest
//! time seen before the previous round, and at the end. Sample sub-lines
//! `... thread:` / `...... dso:` come from a small thread and map model
//! (perf's `machine__findnew_thread`, fork/comm handling and maps with
//! overlap fixup).

use rustc_hash::FxHashMap as HashMap;
use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};

use prec_format::constants::{misc, sample_type as st};
use prec_format::features::{self, Feature};
use prec_format::read::Mode;
use prec_format::record::{Mmap, MmapFileId};
use prec_format::sample::Sample;
use prec_format::{Attr, FeatureId, PerfFile, RawRecord, Record, RecordType};

use crate::sample_read::SampleReads;
use crate::stats::{self, Stats};

/// C's `%#x`: `0` for zero, else `0x…`.
struct Hx(u64);

impl fmt::Display for Hx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 == 0 {
            f.write_str("0")
        } else {
            write!(f, "{:#x}", self.0)
        }
    }
}

/// Bytes printed as C strings would be (lossy for non-UTF-8).
struct Cs<'a>(&'a [u8]);

impl fmt::Display for Cs<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match std::str::from_utf8(self.0) {
            Ok(s) => f.write_str(s),
            Err(_) => f.write_str(&String::from_utf8_lossy(self.0)),
        }
    }
}

/// Dumps every record of `file` to `out` like `perf report -D -i <name>`.
///
/// Returns `Ok(Some(error))` when the data is bad: the records before the
/// error have been dumped, the stats are not printed (like perf). I/O errors
/// (a closed pipe) are returned as `Err`.
pub fn dump_raw_trace<W: Write>(
    file: &PerfFile<'_>,
    name: &str,
    out: &mut W,
) -> io::Result<Option<prec_format::Error>> {
    out.write_all(crate::output::HEADER_HINT.as_bytes())?;
    dump(Dumper::new(file, name), true, out)
}

/// `perf script -D`: the dump of `perf report -D`, each sample followed by
/// its `perf script` text (`script_lines`, by record), without the hint
/// before it and the stats after it; THREAD_MAP and CPU_MAP records are
/// not "unhandled" there.
pub fn dump_with_script<W: Write>(
    file: &PerfFile<'_>,
    name: &str,
    script_lines: HashMap<usize, Vec<String>>,
    unordered: bool,
    out: &mut W,
) -> io::Result<Option<prec_format::Error>> {
    let mut d = Dumper::new(file, name);
    d.script_lines = Some(script_lines);
    d.unordered = unordered;
    dump(d, false, out)
}

fn dump<W: Write>(
    mut d: Dumper<'_, '_>,
    with_stats: bool,
    out: &mut W,
) -> io::Result<Option<prec_format::Error>> {
    let file = d.file;
    for r in file.raw_records() {
        match r {
            Ok(r) if r.header.kind == RecordType::COMPRESSED => d.stats.count_record(r.header.kind),
            _ => {}
        }
    }
    let mut error = None;
    for r in file.records() {
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                error = Some(e);
                break;
            }
        };
        if let Err(e) = d.process(&r, out)? {
            error = Some(e);
            break;
        }
    }
    d.flush(u64::MAX, out)?;
    if error.is_some() {
        return Ok(error);
    }
    if with_stats {
        d.stats.print(file, false, out)?;
    }
    Ok(None)
}

/// A map of a thread or of the kernel: end and dso name.
#[derive(Clone, Debug)]
struct MapEntry {
    end: u64,
    name: std::rc::Rc<str>,
}

/// Non-overlapping maps by start address.
#[derive(Clone, Debug, Default)]
struct Maps(BTreeMap<u64, MapEntry>);

impl Maps {
    /// Inserts `[start, end)`, cutting what it overlaps (perf's
    /// `maps__fixup_overlappings`).
    fn insert(&mut self, start: u64, end: u64, name: std::rc::Rc<str>) {
        if end <= start {
            return;
        }
        let overlapping: Vec<u64> = self
            .0
            .range(..end)
            .rev()
            .take_while(|(_, m)| m.end > start)
            .map(|(&s, _)| s)
            .collect();
        for s in overlapping {
            let Some(m) = self.0.remove(&s) else { continue };
            if s < start {
                self.0.insert(
                    s,
                    MapEntry {
                        end: start,
                        name: m.name.clone(),
                    },
                );
            }
            if m.end > end {
                self.0.insert(
                    end,
                    MapEntry {
                        end: m.end,
                        name: m.name,
                    },
                );
            }
        }
        self.0.insert(start, MapEntry { end, name });
    }

    fn find(&self, addr: u64) -> Option<&MapEntry> {
        self.0
            .range(..=addr)
            .next_back()
            .map(|(_, m)| m)
            .filter(|m| addr < m.end)
    }
}

#[derive(Clone, Debug)]
struct Thread {
    pid: i32,
    comm: Vec<u8>,
    comm_set: bool,
    maps: usize,
}

/// perf's host machine, reduced to what the dump prints.
#[derive(Default)]
struct Machine {
    threads: HashMap<i32, Thread>,
    groups: Vec<Maps>,
    kernel: Maps,
}

impl Machine {
    fn new() -> Machine {
        let mut m = Machine::default();
        m.groups.push(Maps::default());
        m.threads.insert(
            0,
            Thread {
                pid: 0,
                comm: b"swapper".to_vec(),
                comm_set: true,
                maps: 0,
            },
        );
        m
    }

    fn new_group(&mut self) -> usize {
        self.groups.push(Maps::default());
        self.groups.len() - 1
    }

    /// `machine__find_thread`: also fixes up an unknown pid.
    fn find(&mut self, pid: i32, tid: i32) -> bool {
        if self.threads.contains_key(&tid) {
            self.update_pid(pid, tid);
            true
        } else {
            false
        }
    }

    /// `machine__findnew_thread`.
    fn findnew(&mut self, pid: i32, tid: i32) -> &mut Thread {
        if !self.find(pid, tid) {
            let maps = if pid == tid || pid == -1 {
                self.new_group()
            } else {
                self.findnew(pid, pid).maps
            };
            self.threads.insert(
                tid,
                Thread {
                    pid,
                    comm: format!(":{tid}").into_bytes(),
                    comm_set: false,
                    maps,
                },
            );
        }
        self.threads.entry(tid).or_insert_with(|| Thread {
            pid,
            comm: Vec::new(),
            comm_set: false,
            maps: 0,
        })
    }

    /// `machine__update_thread_pid`.
    fn update_pid(&mut self, pid: i32, tid: i32) {
        let Some(th) = self.threads.get_mut(&tid) else {
            return;
        };
        if pid == th.pid || pid == -1 || th.pid != -1 {
            return;
        }
        th.pid = pid;
        if pid == tid {
            return;
        }
        let leader = self.findnew(pid, pid).maps;
        if let Some(th) = self.threads.get_mut(&tid) {
            th.maps = leader;
        }
    }

    fn comm(&mut self, pid: i32, tid: i32, comm: &[u8]) {
        let th = self.findnew(pid, tid);
        th.comm = comm.to_vec();
        th.comm_set = true;
    }

    /// `machine__process_fork_event` after its print; returns the
    /// "removing erroneous parent" message if any.
    fn fork<W: Write>(
        &mut self,
        t: &prec_format::record::TaskEvent,
        clone_maps: bool,
        out: &mut W,
    ) -> io::Result<()> {
        let (pid, tid, ppid, ptid) = (t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32);
        let exists = self.find(pid, tid);
        let ppid_now = self.findnew(ppid, ptid).pid;
        if ppid_now != ppid {
            writeln!(out, "removing erroneous parent thread {ppid_now}/{ptid}")?;
            self.threads.remove(&ptid);
            self.findnew(ppid, ptid);
        }
        if exists {
            self.threads.remove(&tid);
        }
        self.findnew(pid, tid);
        let Some(parent) = self.threads.get(&ptid).cloned() else {
            return Ok(());
        };
        let Some(child) = self.threads.get_mut(&tid) else {
            return Ok(());
        };
        if parent.comm_set {
            child.comm = parent.comm.clone();
            child.comm_set = true;
        }
        if child.pid == parent.pid || child.maps == parent.maps || !clone_maps {
            return Ok(());
        }
        let g = child.maps;
        let src = self.groups.get(parent.maps).cloned().unwrap_or_default();
        if let Some(dst) = self.groups.get_mut(g) {
            for (s, m) in src.0 {
                dst.insert(s, m.end, m.name);
            }
        }
        Ok(())
    }

    fn mmap(&mut self, m: &Mmap<'_>, cpumode: u16, misc_bits: u16) {
        let start = m.addr;
        let end = m.addr.wrapping_add(m.len);
        let name = m.filename;
        if cpumode == misc::KERNEL || cpumode == misc::GUEST_KERNEL {
            if name.starts_with(b"[kernel.kallsyms") || name.starts_with(b"[guest.kernel.kallsyms")
            {
                let end = if start == 0 && m.len == 0 {
                    u64::MAX
                } else {
                    end
                };
                // The vmlinux map is replaced.
                self.kernel.0.retain(|_, e| &*e.name != "[kernel.kallsyms]");
                self.kernel.0.insert(
                    start,
                    MapEntry {
                        end,
                        name: "[kernel.kallsyms]".into(),
                    },
                );
            } else if name.first() == Some(&b'/') || name.first() == Some(&b'[') {
                let n: std::rc::Rc<str> = String::from_utf8_lossy(name).into();
                self.kernel.0.insert(start, MapEntry { end, name: n });
            }
            return;
        }
        let (pid, tid) = (m.pid as i32, m.tid as i32);
        let th_pid;
        let g = {
            let th = self.findnew(pid, tid);
            th_pid = th.pid;
            th.maps
        };
        let exec = if m.file_id.is_some() {
            m.prot & 4 != 0
        } else {
            misc_bits & misc::MMAP_DATA == 0
        };
        let hugetlb = m.file_id.is_some() && m.flags & 0x40000 != 0;
        let anon = name == b"//anon"
            || name.starts_with(b"/dev/zero")
            || name.starts_with(b"/anon_hugepage")
            || hugetlb;
        let no_dso = name.starts_with(b"[stack") || name.starts_with(b"/SYSV") || name == b"[heap]";
        let dso: std::rc::Rc<str> = if (anon || no_dso) && exec {
            format!("/tmp/perf-{th_pid}.map").into()
        } else {
            String::from_utf8_lossy(name).into()
        };
        if let Some(maps) = self.groups.get_mut(g) {
            maps.insert(start, end, dso);
        }
    }
}

/// A record waiting in the ordered queue.
struct Queued<'a> {
    r: RawRecord<'a>,
}

struct Dumper<'f, 'a> {
    file: &'f PerfFile<'a>,
    name: &'f str,
    pipe: bool,
    stats: Stats,
    machine: Machine,
    queue: BTreeMap<(u64, u64), Queued<'f>>,
    seq: u64,
    next_flush: u64,
    max_timestamp: u64,
    /// Attrs known so far (pipe mode learns them from ATTR records).
    nr_attrs_seen: usize,
    combined_sample_type: u64,
    arch: Arch,
    branch_mode: bool,
    /// Event names, made on the first READ record.
    names: Option<Vec<String>>,
    sample_reads: SampleReads,
    /// `perf script -D`: each sample's script lines, by record (see
    /// [`crate::script::ResolvedSample::record`]), printed after its dump.
    /// `perf script -D`: each sample record's script text, one per
    /// delivery (a leader-sampled group's record has one per member).
    script_lines: Option<HashMap<usize, Vec<String>>>,
    /// Deliver each record as it is read, not in time order (`perf script
    /// --dump-unsorted-raw-trace`).
    unordered: bool,
    /// An Intel PT AUXTRACE_INFO was read: AUXTRACE records dump packets.
    intel_pt: bool,
}

/// The kernel's PERF_TYPE_MAX: types below it are the kernel's own.
const PERF_TYPE_MAX: u32 = 6;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Arch {
    X86,
    Arm64,
    Arm,
    Other,
}

impl<'f, 'a: 'f> Dumper<'f, 'a> {
    fn new(file: &'f PerfFile<'a>, name: &'f str) -> Self {
        let pipe = file.mode() == Mode::Pipe;
        let arch = match file.feature(FeatureId::ARCH) {
            Some(f) => match features::decode(f.id, f.data, f.offset, file.endian()) {
                Ok(Feature::Arch(a)) => arch_of(&a),
                _ => arch_of(std::env::consts::ARCH),
            },
            None => arch_of(std::env::consts::ARCH),
        };
        Dumper {
            file,
            name: if pipe { "pipe" } else { name },
            pipe,
            stats: Stats::new(file.attrs().len()),
            sample_reads: SampleReads::default(),
            machine: Machine::new(),
            queue: BTreeMap::new(),
            seq: 0,
            next_flush: 0,
            max_timestamp: 0,
            nr_attrs_seen: if pipe { 0 } else { file.attrs().len() },
            combined_sample_type: 0,
            arch,
            branch_mode: file.feature(FeatureId::BRANCH_STACK).is_some(),
            names: None,
            script_lines: None,
            unordered: false,
            intel_pt: false,
        }
    }

    /// The offset perf prints: in pipe mode, perf counts from after the
    /// 16-byte pipe header.
    fn offset(&self, r: &RawRecord<'_>) -> u64 {
        if self.pipe {
            r.offset.saturating_sub(16)
        } else {
            r.offset
        }
    }

    /// Handles one record as read (perf's `perf_session__process_event`).
    fn process<W: Write>(
        &mut self,
        r: &RawRecord<'f>,
        out: &mut W,
    ) -> io::Result<Result<(), prec_format::Error>> {
        let kind = r.header.kind;
        if kind.0 >= stats::HEADER_MAX {
            return Ok(Err(prec_format::Error::new(
                r.offset,
                prec_format::ErrorKind::BadRecord {
                    record_type: kind.0,
                    problem: "unknown record type".into(),
                },
            )));
        }
        self.stats.count_record(kind);
        if !kind.is_kernel() {
            self.deliver_user(r, out)?;
            if kind == RecordType::HEADER_ATTR {
                self.nr_attrs_seen += 1;
                // perf's process_attr recomputes the combined sample_type
                // that the decoded lines' cpu and time columns follow;
                // script's only for an event of a type it has not seen (of
                // the kernel's own types).
                let attrs = self.attrs_seen();
                let new_type = attrs.split_last().is_some_and(|(last, earlier)| {
                    last.attr.type_ < PERF_TYPE_MAX
                        && !earlier.iter().any(|a| a.attr.type_ == last.attr.type_)
                });
                if self.script_lines.is_none() || new_type {
                    self.combined_sample_type = attrs.iter().fold(0, |a, e| a | e.attr.sample_type);
                }
            }
            if kind == RecordType::FINISHED_ROUND && !self.queue.is_empty() {
                let limit = self.next_flush;
                if limit != 0 {
                    self.flush(limit, out)?;
                }
                self.next_flush = self.max_timestamp;
            }
            return Ok(Ok(()));
        }
        match self.file.record_time(r) {
            Some(t) if t != 0 && t != u64::MAX && !self.unordered => {
                let at_tail = self.queue.last_key_value().is_none_or(|(k, _)| k.0 <= t);
                if at_tail {
                    self.max_timestamp = t;
                }
                self.queue.insert((t, self.seq), Queued { r: *r });
                self.seq += 1;
                Ok(Ok(()))
            }
            _ => self.deliver_kernel(r, out),
        }
    }

    fn flush<W: Write>(&mut self, limit: u64, out: &mut W) -> io::Result<()> {
        while let Some(entry) = self.queue.first_entry() {
            if entry.key().0 > limit {
                break;
            }
            let q = entry.remove();
            // Errors in delivery are printed inline; keep going.
            let _ = self.deliver_kernel(&q.r, out)?;
        }
        Ok(())
    }

    fn attrs_seen(&self) -> &'f [prec_format::EventAttr] {
        let a = self.file.attrs();
        &a[..self.nr_attrs_seen.min(a.len())]
    }

    /// perf's `dump_event`: the hex dump, then the start of the decoded line.
    fn dump_event<W: Write>(
        &mut self,
        r: &RawRecord<'_>,
        sample: Option<(u32, u64)>,
        out: &mut W,
    ) -> io::Result<()> {
        let off = self.offset(r);
        let size = u64::from(r.header.size);
        write!(out, "\n{}@", Hx(off))?;
        // A directory's files are named: its header file `data`, then the
        // data files.
        match self.file.data_file_name(r.file) {
            Some(name) => out.write_all(name.as_bytes())?,
            None if self.file.feature(FeatureId::DIR_FORMAT).is_some() => {
                write!(out, "{}/data", self.name)?
            }
            None => out.write_all(self.name.as_bytes())?,
        }
        writeln!(out, " [{}]: event: {}", Hx(size), r.header.kind.0)?;
        hex_dump(r, out)?;
        // evlist__print_tstamp
        let attrs = self.attrs_seen();
        if self.combined_sample_type == 0 {
            self.combined_sample_type = attrs.iter().fold(0, |a, e| a | e.attr.sample_type);
        }
        let sample_id_all = attrs.first().is_some_and(|a| a.attr.sample_id_all());
        if r.header.kind != RecordType::SAMPLE && !sample_id_all {
            out.write_all(b"-1 -1 ")?;
        } else {
            let (cpu, time) = sample.unwrap_or((0, 0));
            if self.combined_sample_type & st::CPU != 0 {
                write!(out, "{cpu} ")?;
            }
            if self.combined_sample_type & st::TIME != 0 {
                write!(out, "{time} ")?;
            }
        }
        write!(
            out,
            "{} [{}]: PERF_RECORD_{}",
            Hx(off),
            Hx(size),
            stats::record_name(r.header.kind.0)
        )
    }

    fn deliver_user<W: Write>(&mut self, r: &RawRecord<'_>, out: &mut W) -> io::Result<()> {
        let kind = r.header.kind;
        self.dump_event(r, None, out)?;
        let e = self.file.endian();
        let rec = r.parse(None);
        match kind {
            // Without ordering perf has no handler for rounds.
            RecordType::FINISHED_ROUND if self.unordered => out.write_all(b": unhandled!\n")?,
            RecordType::FINISHED_ROUND => out.write_all(b"\n")?,
            RecordType::ID_INDEX => {
                if let Ok(Record::IdIndex { entries }) = rec {
                    let max = (r.body.len().saturating_sub(8)) / 32;
                    let n = r.body.get(..8).map_or(0, |b| e.u64(b));
                    writeln!(out, " nr: {n}")?;
                    if n as usize <= max {
                        for i in 0..n as usize {
                            let g = |k| entries.get(i * 4 + k).unwrap_or(0);
                            writeln!(
                                out,
                                " ... id: {}  idx: {}  cpu: {}  tid: {}",
                                g(0),
                                g(1),
                                g(2) as i64,
                                g(3) as i64
                            )?;
                        }
                    }
                } else {
                    writeln!(out, " nr: 0")?;
                }
            }
            RecordType::THREAD_MAP => {
                out.write_all(b" nr: ")?;
                match rec {
                    Ok(Record::ThreadMap { entries }) => {
                        let n = entries.len() / 24;
                        write!(out, "{n} thread{}: ", if n > 1 { "s" } else { "" })?;
                        for i in 0..n {
                            let pid = e.u64(&entries[i * 24..]) as i32;
                            if i > 0 {
                                out.write_all(b", ")?;
                            }
                            write!(out, "{pid}")?;
                        }
                        out.write_all(b"\n")?;
                    }
                    _ => out.write_all(b"failed to get threads from event\n")?,
                }
                // perf script handles it.
                if self.script_lines.is_none() {
                    out.write_all(b": unhandled!\n")?;
                }
            }
            RecordType::CPU_MAP => {
                out.write_all(b": ")?;
                match cpu_map(r.body, e) {
                    Some(cpus) => writeln!(out, "{}", cpu_list(&cpus))?,
                    None => out.write_all(b"failed to get cpumap from event\n")?,
                }
                if self.script_lines.is_none() {
                    out.write_all(b": unhandled!\n")?;
                }
            }
            RecordType::TIME_CONV => {
                if let Ok(Record::TimeConv {
                    time_shift,
                    time_mult,
                    time_zero,
                    time_cycles,
                    time_mask,
                    cap_user_time_zero,
                    cap_user_time_short,
                }) = rec
                {
                    write!(
                        out,
                        "\n... Time Shift      {time_shift}\n... Time Muliplier  {time_mult}\n... Time Zero       {time_zero}\n"
                    )?;
                    if let (Some(c), Some(m), Some(z), Some(s)) = (
                        time_cycles,
                        time_mask,
                        cap_user_time_zero,
                        cap_user_time_short,
                    ) {
                        write!(
                            out,
                            "... Time Cycles     {c}\n... Time Mask       {}\n... Cap Time Zero   {}\n... Cap Time Short  {}\n",
                            Hx(m),
                            u8::from(z),
                            u8::from(s)
                        )?;
                    }
                }
                out.write_all(b": unhandled!\n")?;
            }
            RecordType::EVENT_UPDATE if r.body.len() >= 16 => {
                let t = e.u64(r.body);
                let id = e.u64(&r.body[8..]);
                let p = &r.body[16..];
                write!(out, "\n... id:    {id}\n")?;
                match t {
                    0 => writeln!(out, "... unit:  {}", Cs(prec_format::bytes::until_nul(p)))?,
                    1 => {
                        let v = p.get(..8).map_or(0.0, |b| f64::from_bits(e.u64(b)));
                        writeln!(out, "... scale: {v:.6}")?
                    }
                    2 => writeln!(out, "... name:  {}", Cs(prec_format::bytes::until_nul(p)))?,
                    3 => {
                        out.write_all(b"... ")?;
                        match cpu_map(p, e) {
                            Some(c) => writeln!(out, "{}", cpu_list(&c))?,
                            None => out.write_all(b"failed to get cpus\n")?,
                        }
                    }
                    _ => out.write_all(b"... unknown type\n")?,
                }
            }
            RecordType::STAT_CONFIG => {
                let mut aggr = 0u64;
                let mut scale = 0u64;
                let mut interval = 0u64;
                if let Ok(Record::StatConfig { entries }) = rec {
                    for i in 0..entries.len() / 2 {
                        let tag = entries.get(2 * i).unwrap_or(0);
                        let v = entries.get(2 * i + 1).unwrap_or(0);
                        match tag {
                            0 => aggr = v,
                            1 => scale = v,
                            2 => interval = v,
                            _ => {}
                        }
                    }
                }
                write!(
                    out,
                    "\n... aggr_mode {}\n... scale     {}\n... interval  {}\n: unhandled!\n",
                    aggr as i32, scale as i32, interval as u32
                )?;
            }
            RecordType::STAT => {
                if let Ok(Record::Stat {
                    id,
                    cpu,
                    thread,
                    val,
                    ena,
                    run,
                }) = rec
                {
                    write!(
                        out,
                        "\n... id {id}, cpu {}, thread {}\n... value {val}, enabled {ena}, running {run}\n",
                        cpu as i32, thread as i32
                    )?;
                }
                out.write_all(b": unhandled!\n")?;
            }
            RecordType::STAT_ROUND => {
                if let Ok(Record::StatRound { round_type, time }) = rec {
                    write!(
                        out,
                        "\n... time {time}, type {}\n",
                        if round_type == 1 { "FINAL" } else { "INTERVAL" }
                    )?;
                }
                out.write_all(b": unhandled!\n")?;
            }
            RecordType::FINISHED_INIT => out.write_all(b": unhandled!\n")?,
            RecordType::AUXTRACE_INFO => {
                if let Ok(Record::AuxtraceInfo { info_type, private }) = rec {
                    writeln!(out, " type: {info_type}")?;
                    // perf's Intel PT support prints its configuration, and
                    // from then on dumps the trace's packets.
                    if crate::intel_pt::dump_info(info_type, &private, out)? {
                        self.intel_pt = true;
                    }
                }
            }
            RecordType::AUXTRACE => {
                if let Ok(Record::Auxtrace {
                    size,
                    offset,
                    reference,
                    idx,
                    tid,
                    cpu,
                    ..
                }) = rec
                {
                    writeln!(
                        out,
                        " size: {}  offset: {}  ref: {}  idx: {idx}  tid: {}  cpu: {}",
                        Hx(size),
                        Hx(offset),
                        Hx(reference),
                        tid as i32,
                        cpu as i32
                    )?;
                    if self.intel_pt {
                        crate::intel_pt::dump_trace(r.trailing, out)?;
                    }
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Delivers a kernel record (perf's `machines__deliver_event`).
    fn deliver_kernel<W: Write>(
        &mut self,
        r: &RawRecord<'_>,
        out: &mut W,
    ) -> io::Result<Result<(), prec_format::Error>> {
        let kind = r.header.kind;
        let idx = self.file.attr_index(r);
        let attr: Option<&Attr> = idx.and_then(|i| self.file.attrs().get(i)).map(|a| &a.attr);
        let sid = attr.map(|a| r.sample_id(a)).unwrap_or_default();
        let cpu = sid.cpu.unwrap_or(u32::MAX);
        let time = sid.time.unwrap_or(u64::MAX);
        let (cpu, time) = if kind != RecordType::SAMPLE && !attr.is_some_and(|a| a.sample_id_all())
        {
            (u32::MAX, u64::MAX)
        } else {
            (cpu, time)
        };
        self.dump_event(r, Some((cpu, time)), out)?;
        let Some(attr) = attr else {
            if kind == RecordType::SAMPLE {
                // perf: unknown id, the sample is dropped.
                return Ok(Ok(()));
            }
            out.write_all(b"\n")?;
            return Ok(Ok(()));
        };
        let rec = match r.parse(Some(attr)) {
            Ok(rec) => rec,
            Err(e) => {
                out.write_all(b"\n")?;
                return Ok(Err(e));
            }
        };
        let cpumode = r.cpumode();
        match rec {
            Record::Sample(s) => {
                // A sample with counter values goes to each event whose
                // counter grew (see crate::sample_read).
                let deliveries = match idx {
                    Some(i) if attr.sample_type & st::READ != 0 => {
                        let mut unknown = 0;
                        self.sample_reads
                            .deliveries(self.file, i, &s, &mut unknown)
                            .map(|d| Some(d.attr_index))
                            .collect()
                    }
                    _ => vec![idx],
                };
                // perf report counts hist entries: one per branch in
                // branch mode (a file with branch stacks), else one.
                for &to in &deliveries {
                    if self.branch_mode {
                        if let Some(bs) = s.branch_stack {
                            for _ in 0..bs.entries.len() / 3 {
                                self.stats.count_event(kind, to, 1);
                            }
                        }
                    } else {
                        self.stats.count_event(kind, to, 1);
                    }
                }
                self.dump_sample(r, attr, &s, out)?;
                let pid = s.pid.map_or(-1, |p| p as i32);
                let tid = s.tid.map_or(-1, |p| p as i32);
                let ip = s.ip.unwrap_or(0);
                let record = r.body.as_ptr() as usize;
                let texts = self.script_lines.as_ref().and_then(|l| l.get(&record));
                // perf script prints each delivery's text after its thread
                // and DSO lines; unless some were filtered out.
                let interleaved = texts.filter(|t| t.len() == deliveries.len());
                for (i, _) in deliveries.iter().enumerate() {
                    let th = self.machine.findnew(pid, tid);
                    writeln!(out, " ... thread: {}:{tid}", Cs(&th.comm))?;
                    let g = th.maps;
                    let map = match cpumode {
                        misc::KERNEL => self.machine.kernel.find(ip),
                        misc::USER => self.machine.groups.get(g).and_then(|m| m.find(ip)),
                        _ => None,
                    };
                    let dso: &str = match map {
                        Some(m) => &m.name,
                        None if cpumode == misc::KERNEL || cpumode == misc::USER => "<not found>",
                        None => "[hypervisor]",
                    };
                    writeln!(out, " ...... dso: {dso}")?;
                    if let Some(text) = interleaved.and_then(|t| t.get(i)) {
                        out.write_all(text.as_bytes())?;
                    }
                }
                if interleaved.is_none() {
                    for text in texts.into_iter().flatten() {
                        out.write_all(text.as_bytes())?;
                    }
                }
            }
            Record::Mmap(m) | Record::Mmap2(m) => {
                write!(
                    out,
                    " {}/{}: [{}({}) @ {}",
                    m.pid as i32,
                    m.tid as i32,
                    Hx(m.addr),
                    Hx(m.len),
                    Hx(m.pgoff)
                )?;
                match m.file_id {
                    None => {
                        let rx = if r.header.misc & misc::MMAP_DATA != 0 {
                            'r'
                        } else {
                            'x'
                        };
                        writeln!(out, "]: {rx} {}", Cs(m.filename))?;
                    }
                    Some(id) => {
                        match id {
                            MmapFileId::BuildId(b) => {
                                out.write_all(b" <")?;
                                for x in b {
                                    write!(out, "{x:02x}")?;
                                }
                                out.write_all(b">")?;
                            }
                            MmapFileId::Inode {
                                maj,
                                min,
                                ino,
                                ino_generation,
                            } => write!(out, " {maj:02x}:{min:02x} {ino} {ino_generation}")?,
                        }
                        writeln!(
                            out,
                            "]: {}{}{}{} {}",
                            if m.prot & 1 != 0 { 'r' } else { '-' },
                            if m.prot & 2 != 0 { 'w' } else { '-' },
                            if m.prot & 4 != 0 { 'x' } else { '-' },
                            if m.flags & 1 != 0 { 's' } else { 'p' },
                            Cs(m.filename)
                        )?;
                    }
                }
                self.machine.mmap(&m, cpumode, r.header.misc);
            }
            Record::Comm {
                pid,
                tid,
                comm,
                exec,
            } => {
                writeln!(
                    out,
                    "{}: {}:{}/{}",
                    if exec { " exec" } else { "" },
                    Cs(comm),
                    pid as i32,
                    tid as i32
                )?;
                self.machine.comm(pid as i32, tid as i32, comm);
            }
            Record::Fork(t) => {
                writeln!(
                    out,
                    "({}:{}):({}:{})",
                    t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32
                )?;
                let clone = r.header.misc & (1 << 13) == 0;
                self.machine.fork(&t, clone, out)?;
            }
            Record::Exit(t) => {
                writeln!(
                    out,
                    "({}:{}):({}:{})",
                    t.pid as i32, t.tid as i32, t.ppid as i32, t.ptid as i32
                )?;
                self.machine.find(t.pid as i32, t.tid as i32);
            }
            Record::Lost { id, lost } => writeln!(out, ": id:{id}: lost:{lost}")?,
            Record::LostSamples { lost } => {
                let id = sid.id.or(sid.identifier).unwrap_or(u64::MAX);
                writeln!(out, ": id:{id}: lost samples :{lost}")?
            }
            Record::Read { pid, tid, values } => {
                let file = self.file;
                let names = self
                    .names
                    .get_or_insert_with(|| stats::event_names(file, true));
                let name = names.get(idx.unwrap_or(0)).cloned().unwrap_or_default();
                let first = values.iter().next();
                writeln!(
                    out,
                    ": {} {} {} {}",
                    pid as i32,
                    tid as i32,
                    name,
                    first.map_or(0, |e| e.value)
                )?;
                if let Some(t) = values.time_enabled {
                    writeln!(out, "... time enabled : {t}")?;
                }
                if let Some(t) = values.time_running {
                    writeln!(out, "... time running : {t}")?;
                }
                if let Some(id) = first.and_then(|e| e.id) {
                    writeln!(out, "... id           : {id}")?;
                }
                if let Some(l) = first.and_then(|e| e.lost) {
                    writeln!(out, "... lost         : {l}")?;
                }
                // perf script has no READ handler.
                if self.script_lines.is_some() {
                    out.write_all(b": unhandled!\n")?;
                }
            }
            Record::Aux {
                aux_offset,
                aux_size,
                flags,
            } => writeln!(
                out,
                " offset: {} size: {} flags: {} [{}{}{}]",
                Hx(aux_offset),
                Hx(aux_size),
                Hx(flags),
                if flags & 1 != 0 { "T" } else { "" },
                if flags & 2 != 0 { "O" } else { "" },
                if flags & 4 != 0 { "P" } else { "" }
            )?,
            Record::ItraceStart { pid, tid } => writeln!(out, " pid: {pid} tid: {tid}")?,
            Record::Switch { .. }
            | Record::SwitchCpuWide { .. }
            | Record::Namespaces { .. }
            | Record::Ksymbol { .. }
            | Record::BpfEvent { .. }
            | Record::Cgroup { .. } => {
                out.write_all(side_event_text(&rec).unwrap_or_default().as_bytes())?
            }
            Record::AuxOutputHwId { hw_id } => writeln!(out, " hw_id: {}", Hx(hw_id))?,
            // perf script handles them (its --show-throttle-events), and
            // ends the line only with the next record's dump.
            Record::Throttle { .. } | Record::Unthrottle { .. } if self.script_lines.is_some() => {}
            Record::Throttle { .. } | Record::Unthrottle { .. } => {
                out.write_all(b": unhandled!\n")?
            }
            Record::TextPoke {
                addr,
                old_bytes,
                new_bytes,
            } => writeln!(
                out,
                " {addr:x} old len {} new len {}",
                old_bytes.len(),
                new_bytes.len()
            )?,
            _ => out.write_all(b"\n")?,
        }
        Ok(Ok(()))
    }

    /// perf's `dump_sample`.
    fn dump_sample<W: Write>(
        &self,
        r: &RawRecord<'_>,
        attr: &Attr,
        s: &Sample<'_>,
        out: &mut W,
    ) -> io::Result<()> {
        writeln!(
            out,
            "(IP, 0x{:x}): {}/{}: {} period: {} addr: {}",
            r.header.misc,
            s.pid.map_or(-1, |p| p as i32),
            s.tid.map_or(-1, |p| p as i32),
            Hx(s.ip.unwrap_or(0)),
            s.period.unwrap_or(attr.sample_period_or_freq),
            Hx(s.addr.unwrap_or(0))
        )?;
        let t = attr.sample_type;
        const CALL_STACK: u64 = 1 << 11;
        let callstack = attr.branch_sample_type & CALL_STACK != 0;
        if let Some(cc) = s.callchain {
            writeln!(out, "... FP chain: nr:{}", cc.len())?;
            for (i, ip) in cc.iter().enumerate() {
                writeln!(out, "..... {i:2}: {ip:016x}")?;
            }
        }
        if let Some(bs) = s.branch_stack {
            let nr = bs.entries.len() / 3;
            if callstack {
                writeln!(out, "... branch callstack: nr:{}", nr + 1)?;
            } else {
                writeln!(out, "... branch stack: nr:{nr}")?;
            }
            for i in 0..nr {
                let from = bs.entries.get(3 * i).unwrap_or(0);
                let to = bs.entries.get(3 * i + 1).unwrap_or(0);
                let f = bs.entries.get(3 * i + 2).unwrap_or(0);
                if callstack {
                    if i == 0 {
                        writeln!(
                            out,
                            "..... {i:2}: {to:016x}\n..... {:2}: {from:016x}",
                            i + 1
                        )?;
                    } else {
                        writeln!(out, "..... {:2}: {from:016x}", i + 1)?;
                    }
                    continue;
                }
                // perf 6.1 prints the reserved bits (33..) and an empty
                // string where later versions print the speculation state.
                writeln!(
                    out,
                    "..... {i:2}: {from:016x} -> {to:016x} {} cycles {}{}{}{} {:x} ",
                    (f >> 4) & 0xffff,
                    if f & 1 != 0 { "M" } else { " " },
                    if f & 2 != 0 { "P" } else { " " },
                    if f & 8 != 0 { "A" } else { " " },
                    if f & 4 != 0 { "T" } else { " " },
                    f >> 33,
                )?;
            }
        }
        if let Some(regs) = s.regs_user {
            self.regs(out, "user", &regs)?;
        }
        if let Some(regs) = s.regs_intr {
            self.regs(out, "intr", &regs)?;
        }
        if t & st::STACK_USER != 0 {
            if let Some(stack) = s.stack_user {
                writeln!(
                    out,
                    "... ustack: size {}, offset 0x{:x}",
                    stack.dyn_size,
                    stack_offset(r, attr, s)
                )?;
            }
        }
        if let Some(w) = s.weight {
            if t & st::WEIGHT_STRUCT != 0 {
                writeln!(
                    out,
                    "... weight: {},0x{:x},0x{:x}",
                    w & 0xffff_ffff,
                    (w >> 32) & 0xffff,
                    (w >> 48) & 0xffff
                )?;
            } else {
                writeln!(out, "... weight: {w}")?;
            }
        }
        if let Some(d) = s.data_src {
            writeln!(out, " . data_src: 0x{d:x}")?;
        }
        if let Some(p) = s.phys_addr {
            writeln!(out, " .. phys_addr: 0x{p:x}")?;
        }
        if let Some(p) = s.data_page_size {
            writeln!(out, " .. data page size: {}", page_size_name(p))?;
        }
        if let Some(p) = s.code_page_size {
            writeln!(out, " .. code page size: {}", page_size_name(p))?;
        }
        if let Some(x) = s.transaction {
            writeln!(out, "... transaction: {x:x}")?;
        }
        if let Some(rv) = s.read {
            out.write_all(b"... sample_read:\n")?;
            if let Some(t) = rv.time_enabled {
                writeln!(out, "...... time enabled {t:016x}")?;
            }
            if let Some(t) = rv.time_running {
                writeln!(out, "...... time running {t:016x}")?;
            }
            let lost = rv.format & prec_format::constants::read_format::LOST != 0;
            if rv.single.is_none() {
                let w = 1
                    + usize::from(rv.format & prec_format::constants::read_format::ID != 0)
                    + usize::from(lost);
                writeln!(out, ".... group nr {}", rv.group.len() / w)?;
            }
            for v in rv.iter() {
                write!(
                    out,
                    "..... id {:016x}, value {:016x}",
                    v.id.unwrap_or(0),
                    v.value
                )?;
                if lost {
                    write!(out, ", lost {}", v.lost.unwrap_or(0))?;
                }
                out.write_all(b"\n")?;
            }
        }
        Ok(())
    }

    fn regs<W: Write>(
        &self,
        out: &mut W,
        what: &str,
        regs: &prec_format::sample::Regs<'_>,
    ) -> io::Result<()> {
        if regs.abi == 0 {
            return Ok(());
        }
        let abi = match regs.abi {
            1 => "32-bit",
            2 => "64-bit",
            _ => "unknown",
        };
        writeln!(out, "... {what} regs: mask 0x{:x} ABI {abi}", regs.mask)?;
        let mut i = 0;
        for bit in 0..64 {
            if regs.mask & (1 << bit) == 0 {
                continue;
            }
            let v = regs.values.get(i).unwrap_or(0);
            i += 1;
            writeln!(out, ".... {:<5} 0x{v:016x}", reg_name(self.arch, bit))?;
        }
        Ok(())
    }
}

/// perf script's `iregs`/`uregs` text: ` ABI:n ` and `%5s:0x%x ` per
/// sampled register (perf_sample__fprintf_regs).
pub(crate) fn regs_text(file: &PerfFile<'_>, regs: &prec_format::sample::Regs<'_>) -> String {
    use std::fmt::Write as _;
    let arch = match file.feature(FeatureId::ARCH) {
        Some(f) => match features::decode(f.id, f.data, f.offset, file.endian()) {
            Ok(Feature::Arch(a)) => arch_of(&a),
            _ => Arch::X86,
        },
        None => Arch::X86,
    };
    // perf prints nothing for a sample without registers (ABI 0).
    if regs.abi == 0 {
        return String::new();
    }
    let mut out = format!(" ABI:{} ", regs.abi);
    let mut i = 0;
    for bit in 0..64u32 {
        if regs.mask & (1 << bit) == 0 {
            continue;
        }
        let v = regs.values.get(i).unwrap_or(0);
        i += 1;
        let _ = write!(out, "{:>5}:0x{v:x} ", reg_name(arch, bit));
    }
    out
}

/// perf's `perf_event__fprintf` text (after the record name) of the
/// side-band records `perf script --show-*-events` prints the same way
/// `perf report -D` does: SWITCH, SWITCH_CPU_WIDE, NAMESPACES.
pub(crate) fn side_event_text(rec: &Record<'_>) -> Option<String> {
    use std::fmt::Write as _;
    let mut out = String::new();
    match *rec {
        Record::Switch { out: o, preempt } => {
            let _ = writeln!(out, " {}", in_out(o, preempt));
        }
        Record::SwitchCpuWide {
            out: o,
            preempt,
            next_prev_pid,
            next_prev_tid,
        } => {
            let _ = writeln!(
                out,
                " {}  {} pid/tid: {:5}/{:<5}",
                in_out(o, preempt),
                if o { "next" } else { "prev" },
                next_prev_pid as i32,
                next_prev_tid as i32
            );
        }
        Record::Namespaces {
            pid,
            tid,
            ref namespaces,
        } => {
            let nr = namespaces.len() / 2;
            let _ = write!(
                out,
                " {}/{} - nr_namespaces: {nr}\n\t\t[",
                pid as i32, tid as i32
            );
            const NS: [&str; 7] = ["net", "uts", "ipc", "pid", "user", "mnt", "cgroup"];
            for i in 0..nr {
                if i != 0 && i % 4 == 0 {
                    out.push_str("\n\t\t ");
                }
                let _ = write!(
                    out,
                    "{i}/{}: {}/{}{}",
                    NS.get(i).copied().unwrap_or("UNKNOWN"),
                    namespaces.get(2 * i).unwrap_or(0),
                    Hx(namespaces.get(2 * i + 1).unwrap_or(0)),
                    if i + 1 != nr { ", " } else { "]\n" }
                );
            }
        }
        Record::Ksymbol {
            addr,
            len,
            ksym_type,
            flags,
            name,
        } => {
            let _ = writeln!(
                out,
                " addr {addr:x} len {len} type {ksym_type} flags 0x{flags:x} name {}",
                Cs(name)
            );
        }
        Record::BpfEvent {
            event_type,
            flags,
            id,
            ..
        } => {
            let _ = writeln!(out, " type {event_type}, flags {flags}, id {id}");
        }
        Record::Cgroup { id, path } => {
            let _ = writeln!(out, " cgroup: {id} {}", Cs(path));
        }
        _ => return None,
    }
    Some(out)
}

fn in_out(out: bool, preempt: bool) -> &'static str {
    if !out {
        "IN         "
    } else if !preempt {
        "OUT        "
    } else {
        "OUT preempt"
    }
}

/// Offset of the user stack size word from the record start, as perf
/// reports it.
fn stack_offset(r: &RawRecord<'_>, attr: &Attr, s: &Sample<'_>) -> usize {
    let t = attr.sample_type;
    let mut after = 0usize;
    let stack_len = s.stack_user.map_or(0, |u| u.data.len());
    if stack_len != 0 {
        after += stack_len + 8;
    }
    for (bit, present) in [
        (st::WEIGHT | st::WEIGHT_STRUCT, true),
        (st::DATA_SRC, true),
        (st::TRANSACTION, true),
    ] {
        if t & bit != 0 && present {
            after += 8;
        }
    }
    if let Some(ri) = s.regs_intr {
        after += 8 + 8 * ri.values.len();
    }
    for bit in [
        st::PHYS_ADDR,
        st::CGROUP,
        st::DATA_PAGE_SIZE,
        st::CODE_PAGE_SIZE,
    ] {
        if t & bit != 0 {
            after += 8;
        }
    }
    if let Some(aux) = s.aux {
        after += 8 + aux.len();
    }
    // The size word itself.
    (8 + r.body.len()).saturating_sub(after + 8)
}

/// perf's `get_page_size_name`: `N/A` for 0, else its
/// `unit_number__scnprintf` (which divides while the quotient is above 1:
/// 1024 is `1024B`, a 1 GiB page `1024M`).
pub(crate) fn page_size_name(size: u64) -> String {
    if size == 0 {
        return "N/A".into();
    }
    crate::header::unit_number(size)
}

fn arch_of(a: &str) -> Arch {
    if a.starts_with("x86") || a == "i386" || a == "i686" || a == "amd64" {
        Arch::X86
    } else if a == "aarch64" || a == "arm64" {
        Arch::Arm64
    } else if a.starts_with("arm") {
        Arch::Arm
    } else {
        Arch::Other
    }
}

fn reg_name(arch: Arch, id: u32) -> String {
    const X86: [&str; 24] = [
        "AX", "BX", "CX", "DX", "SI", "DI", "BP", "SP", "IP", "FLAGS", "CS", "SS", "DS", "ES",
        "FS", "GS", "R8", "R9", "R10", "R11", "R12", "R13", "R14", "R15",
    ];
    const ARM: [&str; 16] = [
        "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "fp", "ip", "sp", "lr",
        "pc",
    ];
    match arch {
        Arch::X86 => {
            if let Some(n) = X86.get(id as usize) {
                return (*n).into();
            }
            if (32..64).contains(&id) && id.is_multiple_of(2) {
                return format!("XMM{}", (id - 32) / 2);
            }
            "unknown".into()
        }
        Arch::Arm64 => match id {
            0..=28 => format!("x{id}"),
            29 => "x29".into(),
            30 => "lr".into(),
            31 => "sp".into(),
            32 => "pc".into(),
            33 => "vg".into(),
            _ => "unknown".into(),
        },
        Arch::Arm => ARM
            .get(id as usize)
            .map_or("unknown".into(), |n| (*n).into()),
        Arch::Other => "unknown".into(),
    }
}

/// Decodes a `perf_record_cpu_map_data` (CPUS, MASK or RANGE).
fn cpu_map(data: &[u8], e: prec_format::Endian) -> Option<Vec<i32>> {
    let t = e.u16(data.get(..2)?);
    let d = &data[2..];
    match t {
        0 => {
            let nr = usize::from(e.u16(d.get(..2)?));
            let mut v = Vec::with_capacity(nr);
            for i in 0..nr {
                v.push(i32::from(e.u16(d.get(2 + 2 * i..4 + 2 * i)?) as i16));
            }
            Some(v)
        }
        1 => {
            let nr = usize::from(e.u16(d.get(..2)?));
            let long_size = usize::from(e.u16(d.get(2..4)?));
            let mut v = Vec::new();
            // The 64-bit form has 4 bytes of padding before the masks.
            let masks = d.get(if long_size == 8 { 8.. } else { 4.. })?;
            for i in 0..nr {
                let word = match long_size {
                    4 => u64::from(e.u32(masks.get(4 * i..4 * i + 4)?)),
                    8 => e.u64(masks.get(8 * i..8 * i + 8)?),
                    _ => return None,
                };
                for b in 0..long_size * 8 {
                    if word & (1 << b) != 0 {
                        v.push((i * long_size * 8 + b) as i32);
                    }
                }
            }
            Some(v)
        }
        2 => {
            let any = *d.first()?;
            let start = i32::from(e.u16(d.get(2..4)?));
            let end = i32::from(e.u16(d.get(4..6)?));
            let mut v = Vec::new();
            if any != 0 {
                v.push(-1);
            }
            v.extend(start..=end);
            Some(v)
        }
        _ => None,
    }
}

/// perf's `cpu_map__snprint`: ranges like `0-3,5`.
fn cpu_list(cpus: &[i32]) -> String {
    let mut s = String::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        if !s.is_empty() {
            s.push(',');
        }
        if j > i {
            s.push_str(&format!("{start}-{}", cpus[j]));
        } else {
            s.push_str(&start.to_string());
        }
        i = j + 1;
    }
    s
}

/// perf's `trace_event`: the record as hex and ASCII, 16 bytes a line.
fn hex_dump<W: Write>(r: &RawRecord<'_>, out: &mut W) -> io::Result<()> {
    let e = r.endian;
    let size = usize::from(r.header.size);
    write!(out, ".\n. ... raw event: size {size} bytes\n")?;
    let mut hdr = [0u8; 8];
    let (k, m, s) = match e {
        prec_format::Endian::Little => (
            r.header.kind.0.to_le_bytes(),
            r.header.misc.to_le_bytes(),
            r.header.size.to_le_bytes(),
        ),
        prec_format::Endian::Big => (
            r.header.kind.0.to_be_bytes(),
            r.header.misc.to_be_bytes(),
            r.header.size.to_be_bytes(),
        ),
    };
    hdr[..4].copy_from_slice(&k);
    hdr[4..6].copy_from_slice(&m);
    hdr[6..].copy_from_slice(&s);
    let byte = |i: usize| -> u8 {
        if i < 8 {
            hdr[i]
        } else {
            r.body.get(i - 8).copied().unwrap_or(0)
        }
    };
    let mut line = [0u8; 80];
    let mut i = 0;
    while i < size {
        let n = (size - i).min(16);
        let mut p = 0;
        let mut put = |s: &[u8], p: &mut usize| {
            line[*p..*p + s.len()].copy_from_slice(s);
            *p += s.len();
        };
        put(b".  ", &mut p);
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let a = i & 0xffff;
        put(
            &[
                HEX[(a >> 12) & 15],
                HEX[(a >> 8) & 15],
                HEX[(a >> 4) & 15],
                HEX[a & 15],
                b':',
                b' ',
            ],
            &mut p,
        );
        for k in 0..16 {
            if k < n {
                let b = byte(i + k);
                put(
                    &[b' ', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]],
                    &mut p,
                );
            } else {
                put(b"   ", &mut p);
            }
        }
        put(b"  ", &mut p);
        for k in 0..16 {
            if k < n {
                let b = byte(i + k);
                put(&[if (0x20..0x7f).contains(&b) { b } else { b'.' }], &mut p);
            } else {
                put(b" ", &mut p);
            }
        }
        put(b"\n", &mut p);
        out.write_all(&line[..p])?;
        i += 16;
    }
    out.write_all(b"\n")
}

#[cfg(test)]
mod page_size_tests {
    use super::page_size_name;

    /// perf 6.1's unit_number__scnprintf stops once the quotient is 1.
    #[test]
    fn page_sizes_as_perf_names_them() {
        let cases = [
            (0, "N/A"),
            (512, "512B"),
            (1024, "1024B"),
            (4096, "4K"),
            (2 << 20, "2M"),
            (1 << 30, "1024M"),
        ];
        for (size, name) in cases {
            assert_eq!(page_size_name(size), name, "{size}");
        }
    }
}
