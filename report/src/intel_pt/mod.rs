//! Intel PT: the samples perf report makes from an AUX area trace.
//!
//! A file recorded with `-e intel_pt//` holds trace packets, not samples.
//! perf report decodes them as it reads the file and hands the tool
//! samples of events it invents ("instructions", "cbr", "psb", ...), and it
//! gives every recorded sample a call chain from the call stack it keeps
//! per thread while decoding. [`inject`] does the same ahead of the report:
//! it returns a copy of the file with those events' attrs, their samples in
//! the places perf delivers them, and the recorded samples with call chains,
//! which the ordinary report then reads.
//!
//! The decoding follows perf 6.1 (tools/perf/util/intel-pt.c and
//! intel-pt-decoder/) with one limit: prec does not walk the traced code,
//! so it decodes what perf decodes when the binaries are not at hand (the
//! trace's PSBs, timing, asynchronous branches and trace starts, and the
//! errors of the walks that fail).

mod decoder;
mod packet;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use prec_format::constants::{misc, sample_type as st, FeatureId, RecordType};
use prec_format::features::{self, EventDesc, EventDescs, Feature};
use prec_format::read::EventAttr;
use prec_format::record::Record;
use prec_format::{Attr, Endian, PerfFile, Sample, U64Slice};

use decoder::{flag, kind, Buffer, Code, Decoder, Params, State, WalkError};

/// AUXTRACE_INFO's type for Intel PT.
const AUXTRACE_INTEL_PT: u32 = 1;

/// perf's `PERF_TYPE_SYNTH` and its Intel PT configs.
const PERF_TYPE_SYNTH: u32 = 0x8000_0000;
const SYNTH_PTWRITE: u64 = 0;
const SYNTH_MWAIT: u64 = 1;
const SYNTH_PWRE: u64 = 2;
const SYNTH_EXSTOP: u64 = 3;
const SYNTH_PWRX: u64 = 4;
const SYNTH_CBR: u64 = 5;
const SYNTH_PSB: u64 = 6;

/// Call chain length perf's default itrace options give (`G` / `g16`).
const CALLCHAIN_SZ: usize = 16;

const CONTEXT_KERNEL: u64 = (-128i64) as u64;
const CONTEXT_USER: u64 = (-512i64) as u64;

/// perf's PERF_IP_FLAG_* bits that its thread stack looks at.
mod ip_flag {
    pub const BRANCH: u32 = 1 << 0;
    pub const CALL: u32 = 1 << 1;
    pub const RETURN: u32 = 1 << 2;
    pub const ASYNC: u32 = 1 << 5;
    pub const INTERRUPT: u32 = 1 << 6;
    pub const TX_ABORT: u32 = 1 << 7;
    pub const TRACE_BEGIN: u32 = 1 << 8;
    pub const TRACE_END: u32 = 1 << 9;
    pub const VMEXIT: u32 = 1 << 12;
}

/// `perf report -D`'s lines for an Intel PT AUXTRACE_INFO record (its
/// configuration, perf's intel_pt_print_info); false for other types.
pub fn dump_info(
    info_type: u32,
    private: &U64Slice<'_>,
    out: &mut dyn std::io::Write,
) -> std::io::Result<bool> {
    if info_type != AUXTRACE_INTEL_PT || private.len() < 10 {
        return Ok(false);
    }
    let at = |i: usize| private.get(i).unwrap_or(0);
    // C's %#x: no prefix for zero.
    let hex = |v: u64| {
        if v == 0 {
            "0".to_string()
        } else {
            format!("{v:#x}")
        }
    };
    writeln!(out, "  PMU Type            {}", at(0) as i64)?;
    writeln!(out, "  Time Shift          {}", at(1))?;
    writeln!(out, "  Time Muliplier      {}", at(2))?;
    writeln!(out, "  Time Zero           {}", at(3))?;
    writeln!(out, "  Cap Time Zero       {}", at(4) as i64)?;
    writeln!(out, "  TSC bit             {}", hex(at(5)))?;
    writeln!(out, "  NoRETComp bit       {}", hex(at(6)))?;
    writeln!(out, "  Have sched_switch   {}", at(7) as i64)?;
    writeln!(out, "  Snapshot mode       {}", at(8) as i64)?;
    writeln!(out, "  Per-cpu maps        {}", at(9) as i64)?;
    if private.len() > 14 {
        writeln!(out, "  MTC bit             {}", hex(at(10)))?;
        writeln!(out, "  MTC freq bits       {}", hex(at(11)))?;
        writeln!(out, "  TSC:CTC numerator   {}", at(12))?;
        writeln!(out, "  TSC:CTC denominator {}", at(13))?;
        writeln!(out, "  CYC bit             {}", hex(at(14)))?;
    }
    if private.len() > 15 {
        writeln!(out, "  Max non-turbo ratio {}", at(15))?;
    }
    if private.len() > 16 {
        let len = at(16);
        writeln!(out, "  Filter string len.  {len}")?;
        let mut filter = Vec::new();
        if len > 0 {
            for i in 17..private.len() {
                filter.extend_from_slice(&at(i).to_le_bytes());
            }
            if let Some(end) = filter.iter().position(|&b| b == 0) {
                filter.truncate(end);
            }
        }
        writeln!(
            out,
            "  {:<20}{}",
            "Filter string",
            String::from_utf8_lossy(&filter)
        )?;
    }
    Ok(true)
}

/// `perf report -D`'s packet dump of an Intel PT AUXTRACE record's data.
pub fn dump_trace(data: &[u8], out: &mut dyn std::io::Write) -> std::io::Result<()> {
    writeln!(out, ".")?;
    packet::dump(data, out)
}

/// The copy [`inject`] made.
pub struct Injected {
    /// A file-mode perf.data in the input's byte order.
    pub bytes: Vec<u8>,
    /// Decoder errors, which perf reports as "instruction trace errors".
    pub errors: u64,
    /// Binaries present on this machine that perf would have walked and
    /// prec did not: the report may differ from perf's there.
    pub undecoded_binaries: Vec<String>,
}

/// Bound on [`Info::tsc_start`]'s and [`Info::tsc_end`]'s search.
const MAX_TSC_STEPS: u32 = 1 << 16;

/// The AUXTRACE_INFO fields perf's Intel PT support reads.
#[derive(Clone, Copy, Debug, Default)]
struct Info {
    pmu_type: u64,
    time_shift: u64,
    time_mult: u64,
    time_zero: u64,
    cap_user_time_zero: u64,
    tsc_bit: u64,
    have_sched_switch: u64,
    snapshot_mode: u64,
    per_cpu_mmaps: u64,
    mtc_freq_bits: u64,
    tsc_ctc_ratio_n: u64,
    tsc_ctc_ratio_d: u64,
    max_non_turbo_ratio: u64,
}

impl Info {
    fn parse(private: &U64Slice<'_>) -> Option<Info> {
        let at = |i: usize| private.get(i).unwrap_or(0);
        // perf needs the fields up to per_cpu_mmaps.
        if private.len() < 10 {
            return None;
        }
        Some(Info {
            pmu_type: at(0),
            time_shift: at(1),
            time_mult: at(2),
            time_zero: at(3),
            cap_user_time_zero: at(4),
            tsc_bit: at(5),
            have_sched_switch: at(7),
            snapshot_mode: at(8),
            per_cpu_mmaps: at(9),
            mtc_freq_bits: at(11),
            tsc_ctc_ratio_n: at(12),
            tsc_ctc_ratio_d: at(13),
            max_non_turbo_ratio: at(15),
        })
    }

    fn tsc_to_perf_time(&self, tsc: u64) -> u64 {
        let shift = self.time_shift.min(63);
        let quot = tsc >> shift;
        let rem = tsc & ((1u64 << shift) - 1);
        self.time_zero
            .wrapping_add(quot.wrapping_mul(self.time_mult))
            .wrapping_add(rem.wrapping_mul(self.time_mult) >> shift)
    }

    fn perf_time_to_tsc(&self, ns: u64) -> u64 {
        let shift = self.time_shift.min(63);
        let t = ns.wrapping_sub(self.time_zero);
        let quot = t / self.time_mult;
        let rem = t % self.time_mult;
        (quot << shift).wrapping_add((rem << shift) / self.time_mult)
    }

    /// The least TSC at or after `ns` (perf's intel_pt_tsc_start). The
    /// conversion's inverse lands within a tick or two; the steps are
    /// bounded for a corrupt conversion.
    fn tsc_start(&self, ns: u64) -> u64 {
        let mut tsc = self.perf_time_to_tsc(ns);
        for _ in 0..MAX_TSC_STEPS {
            if tsc == 0 || self.tsc_to_perf_time(tsc) < ns {
                break;
            }
            tsc -= 1;
        }
        for _ in 0..MAX_TSC_STEPS {
            if tsc == u64::MAX || self.tsc_to_perf_time(tsc) >= ns {
                break;
            }
            tsc += 1;
        }
        tsc
    }

    /// The greatest TSC at or before `ns` (perf's intel_pt_tsc_end).
    fn tsc_end(&self, ns: u64) -> u64 {
        let mut tsc = self.perf_time_to_tsc(ns);
        for _ in 0..MAX_TSC_STEPS {
            if tsc == u64::MAX || self.tsc_to_perf_time(tsc) > ns {
                break;
            }
            tsc += 1;
        }
        for _ in 0..MAX_TSC_STEPS {
            if tsc == 0 || self.tsc_to_perf_time(tsc) <= ns {
                break;
            }
            tsc -= 1;
        }
        tsc
    }

    fn ns_to_ticks(&self, ns: u64) -> u64 {
        let shift = self.time_shift.min(63);
        let quot = ns / self.time_mult;
        let rem = ns % self.time_mult;
        (quot << shift).wrapping_add((rem << shift) / self.time_mult)
    }
}

/// A map of the mini machine: enough to tell where perf's walk fails.
#[derive(Clone, Debug)]
struct Map {
    start: u64,
    end: u64,
    dso: Rc<str>,
}

fn insert_map(maps: &mut Vec<Map>, map: Map) {
    // perf's maps__fixup_overlappings: the new map wins where they overlap.
    let mut kept = Vec::with_capacity(maps.len() + 2);
    for m in maps.drain(..) {
        if m.end <= map.start || m.start >= map.end {
            kept.push(m);
            continue;
        }
        if m.start < map.start {
            kept.push(Map {
                end: map.start,
                ..m.clone()
            });
        }
        if m.end > map.end {
            kept.push(Map {
                start: map.end,
                ..m.clone()
            });
        }
    }
    kept.push(map);
    kept.sort_by_key(|m| m.start);
    *maps = kept;
}

fn find_map(maps: &[Map], ip: u64) -> Option<&Map> {
    let i = maps.partition_point(|m| m.start <= ip);
    maps[..i].last().filter(|m| ip < m.end)
}

/// Threads, maps and current tasks, as perf's machine has them at each
/// point of the decoding.
#[derive(Default)]
struct Machine {
    /// tid to pid (-1 when not known).
    threads: HashMap<i32, i32>,
    /// A process's maps, by pid.
    maps: HashMap<i32, Vec<Map>>,
    kernel_maps: Vec<Map>,
    kernel_start: Option<u64>,
    current_tid: HashMap<i32, i32>,
    /// perf's `dso->data` status per binary, which decides a failed walk's
    /// -EINVAL or -ENOENT.
    data_status: HashMap<Rc<str>, DataStatus>,
    undecoded: Vec<String>,
}

impl Machine {
    fn findnew_thread(&mut self, pid: i32, tid: i32) {
        let e = self.threads.entry(tid).or_insert(pid);
        if *e == -1 && pid != -1 {
            *e = pid;
        }
    }

    fn set_current_tid(&mut self, cpu: i32, pid: i32, tid: i32) {
        if cpu < 0 {
            return;
        }
        self.current_tid.insert(cpu, tid);
        self.findnew_thread(pid, tid);
    }

    fn current_tid(&self, cpu: i32) -> i32 {
        self.current_tid.get(&cpu).copied().unwrap_or(-1)
    }

    fn mmap(&mut self, pid: i32, tid: i32, kernel: bool, start: u64, len: u64, name: &[u8]) {
        let name: Rc<str> = String::from_utf8_lossy(name).into();
        let map = Map {
            start,
            end: start.wrapping_add(len),
            dso: name.clone(),
        };
        if kernel && pid == -1 {
            if self.kernel_start.is_none() && name.starts_with("[kernel.kallsyms]") {
                self.kernel_start = Some(start);
            }
            insert_map(&mut self.kernel_maps, map);
            return;
        }
        self.findnew_thread(pid, tid);
        let maps = self.maps.entry(pid).or_default();
        if &*name == "[vdso]" {
            // perf's machine__findnew_vdso asks each binary of the process
            // for its type (machine__thread_dso_type), opening its data: the
            // binaries not here are then marked unreadable.
            for m in maps.iter().filter(|m| m.dso.starts_with('/')) {
                if !std::path::Path::new(&*m.dso).exists() {
                    self.data_status
                        .entry(m.dso.clone())
                        .or_default()
                        .unreadable = true;
                }
            }
        }
        insert_map(maps, map);
    }

    fn fork(&mut self, pid: i32, tid: i32, ppid: i32) {
        self.findnew_thread(pid, tid);
        if pid != ppid && !self.maps.contains_key(&pid) {
            if let Some(parent) = self.maps.get(&ppid).cloned() {
                self.maps.insert(pid, parent);
            }
        }
    }

    /// perf's machine__kernel_start: on x86_64 always 2^63, which the PTI
    /// entry trampolines below the kernel text are above.
    fn kernel_start(&self, x86_64: bool) -> u64 {
        match self.kernel_start {
            Some(start) if !x86_64 => start,
            _ => 1 << 63,
        }
    }
}

/// perf's `dso->data.status` (ERROR, here: none of the binaries is read)
/// and its `DSO_DATA_STATUS_SEEN_ITRACE` bit.
#[derive(Clone, Copy, Default)]
struct DataStatus {
    unreadable: bool,
    seen: bool,
}

/// What perf's walk callback finds: the map and its binary's readability.
struct Walker {
    machine: Rc<RefCell<Machine>>,
    /// The queue's thread, where perf has one.
    thread: Option<i32>,
    /// perf's `pt->kernel_start`, 0 until the first decoding run.
    kernel_start: Rc<RefCell<u64>>,
}

impl Code for Walker {
    fn walk_failure(&mut self, ip: u64, nr: bool) -> WalkError {
        if nr {
            return WalkError::Invalid;
        }
        let kernel = ip >= *self.kernel_start.borrow();
        let mut m = self.machine.borrow_mut();
        let dso = {
            let map = if kernel {
                find_map(&m.kernel_maps, ip)
            } else {
                let Some(tid) = self.thread else {
                    return WalkError::Invalid;
                };
                let pid = m.threads.get(&tid).copied().unwrap_or(-1);
                m.maps.get(&pid).and_then(|maps| find_map(maps, ip))
            };
            match map {
                Some(map) => map.dso.clone(),
                None => return WalkError::Invalid,
            }
        };
        let status = m.data_status.entry(dso.clone()).or_default();
        // perf's walk: a binary already found unreadable, and seen so by
        // the trace decoder once, is given up silently; else its read fails.
        if status.unreadable && status.seen {
            return WalkError::Unreadable;
        }
        if status.unreadable {
            status.seen = true;
        }
        let first = !status.unreadable && !status.seen;
        status.unreadable = true;
        if first && !kernel && dso.starts_with('/') && std::path::Path::new(&*dso).exists() {
            m.undecoded.push(dso.to_string());
        }
        WalkError::Invalid
    }
}

/// One return address of perf's thread stack.
#[derive(Clone, Copy)]
struct StackEntry {
    ret_addr: u64,
    trace_end: bool,
}

#[derive(Default)]
struct ThreadStack {
    trace_nr: u64,
    entries: Vec<StackEntry>,
}

/// perf's thread stacks, one per thread (per CPU for the idle thread).
#[derive(Default)]
struct ThreadStacks {
    stacks: HashMap<(i32, i32), ThreadStack>,
}

impl ThreadStacks {
    fn key(machine: &Machine, tid: i32, cpu: i32) -> (i32, i32) {
        let pid = machine.threads.get(&tid).copied().unwrap_or(-1);
        if tid == 0 && pid == 0 {
            (tid, cpu)
        } else {
            (tid, -1)
        }
    }

    /// perf's thread_stack__event.
    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        key: (i32, i32),
        flags: u32,
        from_ip: u64,
        to_ip: u64,
        insn_len: u64,
        trace_nr: u64,
    ) {
        let ts = self.stacks.entry(key).or_insert_with(|| ThreadStack {
            trace_nr,
            entries: Vec::new(),
        });
        if trace_nr != ts.trace_nr {
            if ts.trace_nr != 0 {
                ts.entries.clear();
            }
            ts.trace_nr = trace_nr;
        }
        if flags & ip_flag::CALL != 0 {
            if to_ip == 0 {
                return;
            }
            let ret_addr = from_ip.wrapping_add(insn_len);
            if ret_addr == to_ip {
                return;
            }
            ts.entries.push(StackEntry {
                ret_addr,
                trace_end: flags & ip_flag::TRACE_END != 0,
            });
        } else if flags & ip_flag::TRACE_BEGIN != 0 {
            pop(&mut ts.entries, to_ip);
            while ts.entries.last().is_some_and(|e| e.trace_end) {
                ts.entries.pop();
            }
        } else if flags & ip_flag::RETURN != 0 && from_ip != 0 {
            pop(&mut ts.entries, to_ip);
        }
    }

    /// perf's thread_stack__sample: the chain of a synthesized sample.
    fn sample(&self, key: Option<(i32, i32)>, ip: u64, kernel_start: u64) -> Vec<u64> {
        let sz = CALLCHAIN_SZ + 1;
        let context = callchain_context(ip, kernel_start);
        let mut chain = vec![context, ip];
        let Some(ts) = key.and_then(|k| self.stacks.get(&k)) else {
            return chain;
        };
        let mut last_context = context;
        let mut i = 2;
        for e in ts.entries.iter().rev() {
            if i >= sz {
                break;
            }
            let c = callchain_context(e.ret_addr, kernel_start);
            if c != last_context {
                if i >= sz - 1 {
                    break;
                }
                chain.push(c);
                i += 1;
                last_context = c;
            }
            chain.push(e.ret_addr);
            i += 1;
        }
        chain
    }

    /// perf's thread_stack__sample_late: the chain added to a recorded
    /// sample.
    fn sample_late(&self, key: (i32, i32), ip: u64, kernel_start: u64) -> Vec<u64> {
        let sz = CALLCHAIN_SZ + 1;
        let sample_context = callchain_context(ip, kernel_start);
        let mut chain = Vec::new();
        if let Some(ts) = self.stacks.get(&key) {
            let cnt = ts.entries.len();
            // Kernel entries above the sample's own frame came after it.
            let mut j = 1;
            while j <= cnt {
                let r = ts.entries[cnt - j].ret_addr;
                let c = callchain_context(r, kernel_start);
                if c == CONTEXT_USER || (c == sample_context && r == ip) {
                    break;
                }
                j += 1;
            }
            let mut last_context = ip;
            while chain.len() < sz && j <= cnt {
                let r = ts.entries[cnt - j].ret_addr;
                let c = callchain_context(r, kernel_start);
                if c != last_context {
                    if chain.len() >= sz - 1 {
                        break;
                    }
                    chain.push(c);
                    last_context = c;
                }
                chain.push(r);
                j += 1;
            }
        }
        if chain.is_empty() {
            chain = vec![sample_context, ip];
        }
        chain
    }
}

fn pop(entries: &mut Vec<StackEntry>, ret_addr: u64) {
    if let Some(i) = entries.iter().rposition(|e| e.ret_addr == ret_addr) {
        entries.truncate(i);
    }
}

fn callchain_context(ip: u64, kernel_start: u64) -> u64 {
    if ip < kernel_start {
        CONTEXT_USER
    } else {
        CONTEXT_KERNEL
    }
}

/// The events perf makes up, with their ids.
#[derive(Clone, Copy, Default)]
struct SynthIds {
    instructions: u64,
    transactions: u64,
    ptwrite: u64,
    cbr: u64,
    psb: u64,
    mwait: Option<u64>,
    pwre: Option<u64>,
    exstop: Option<u64>,
    pwrx: Option<u64>,
}

/// A sample to write, before its attr's layout is applied.
struct Synth {
    attr: usize,
    misc: u16,
    sample_fields: SynthSample,
}

#[derive(Clone)]
struct SynthSample {
    id: u64,
    ip: u64,
    pid: i32,
    tid: i32,
    time: u64,
    cpu: i32,
    period: u64,
    callchain: Vec<u64>,
    raw: Vec<u8>,
}

/// One queue of trace data (a CPU's, with per-CPU buffers).
struct Queue<'a> {
    decoder: Decoder<'a, Walker>,
    cpu: i32,
    record_tid: i32,
    pid: i32,
    tid: i32,
    timestamp: u64,
    have_sample: bool,
    state: State,
    flags: u32,
    cbr_seen: u32,
    on_heap: bool,
    /// perf's ptq->thread: the tid, where the machine knows the thread.
    thread: Option<i32>,
    /// `--time`: the next range start (when `sel_start`) or end to reach,
    /// in TSC; 0 when none.
    sel_timestamp: u64,
    sel_start: bool,
    sel_idx: usize,
}

struct Session<'a> {
    info: Info,
    endian: Endian,
    machine: Rc<RefCell<Machine>>,
    kernel_start: Rc<RefCell<u64>>,
    kernel_start_known: bool,
    /// The recording's architecture is x86_64 (perf's machine__is).
    x86_64: bool,
    stacks: ThreadStacks,
    queues: Vec<Queue<'a>>,
    heap: Vec<(u64, usize)>,
    set_up: bool,
    ids: SynthIds,
    /// Index of each synthesized event's attr in the copy.
    attr_of: HashMap<u64, usize>,
    /// The id and attr index of the file's first event, which perf gives
    /// samples of id 0.
    first_event: (u64, usize),
    max_non_turbo_ratio: u32,
    cbr2khz: u64,
    errors: u64,
    callchains: bool,
    /// `--time` ranges in TSC (perf's intel_pt_setup_time_ranges); 0 is an
    /// open end.
    ranges: Vec<(u64, u64)>,
    out: Vec<Synth>,
}

impl<'a> Session<'a> {
    fn setup_queues(&mut self) {
        self.set_up = true;
        for q in 0..self.queues.len() {
            let ranges = &self.ranges;
            let queue = &mut self.queues[q];
            if let Some(&(start, end)) = ranges.first() {
                queue.sel_idx = 0;
                if start != 0 {
                    queue.sel_timestamp = start;
                    queue.sel_start = true;
                } else {
                    queue.sel_timestamp = end;
                    queue.sel_start = false;
                }
            }
            if queue.sel_start && queue.sel_timestamp != 0 {
                queue.decoder.fast_forward(queue.sel_timestamp);
            }
            let state = loop {
                let s = queue.decoder.decode();
                if s.err != 0 {
                    if s.err == decoder::code::NODATA {
                        break None;
                    }
                    continue;
                }
                if s.timestamp != 0 {
                    break Some(s);
                }
            };
            let Some(state) = state else { continue };
            queue.timestamp = state.timestamp;
            queue.state = state;
            queue.have_sample = !(queue.sel_start
                && queue.sel_timestamp != 0
                && queue.timestamp < queue.sel_timestamp);
            queue.flags = sample_flags(&state);
            queue.on_heap = true;
            self.heap.push((queue.timestamp, q));
        }
    }

    fn pop_heap(&mut self) -> Option<(u64, usize)> {
        let i = (0..self.heap.len()).min_by_key(|&i| self.heap[i])?;
        Some(self.heap.swap_remove(i))
    }

    fn process_queues(&mut self, timestamp: u64) {
        loop {
            let Some(&(first, _)) = self.heap.iter().min() else {
                return;
            };
            if first >= timestamp {
                return;
            }
            let Some((_, q)) = self.pop_heap() else {
                return;
            };
            let mut ts = match self.heap.iter().min() {
                Some(&(next, _)) => next.saturating_add(1).min(timestamp),
                None => timestamp,
            };
            self.set_pid_tid_cpu(q);
            if self.run_decoder(q, &mut ts) {
                self.queues[q].on_heap = false;
            } else {
                self.heap.push((ts, q));
            }
        }
    }

    fn set_pid_tid_cpu(&mut self, q: usize) {
        let m = self.machine.borrow();
        let queue = &mut self.queues[q];
        if queue.record_tid == -1 || self.info.have_sched_switch != 0 {
            queue.tid = m.current_tid(queue.cpu);
            if queue.tid == -1 {
                queue.pid = -1;
            }
        }
        let thread = (queue.tid != -1)
            .then(|| m.threads.get(&queue.tid).map(|&pid| (queue.tid, pid)))
            .flatten();
        queue.thread = thread.map(|t| t.0);
        queue.decoder.code().thread = queue.thread;
        if let Some((_, pid)) = thread {
            queue.pid = pid;
        }
    }

    /// Decodes queue `q` until its time reaches `*ts`; true when its data
    /// ran out.
    fn run_decoder(&mut self, q: usize, ts: &mut u64) -> bool {
        if !self.kernel_start_known {
            self.kernel_start_known = true;
            *self.kernel_start.borrow_mut() = self.machine.borrow().kernel_start(self.x86_64);
        }
        let kernel_start = *self.kernel_start.borrow();
        let mut ff_timestamp = 0;
        loop {
            self.sample(q);
            let queue = &mut self.queues[q];
            let state = queue.decoder.decode();
            if state.err != 0 {
                if state.err == decoder::code::NODATA {
                    return true;
                }
                queue.timestamp = state.est_timestamp;
                self.errors += 1;
                continue;
            }
            queue.state = state;
            queue.have_sample = true;
            queue.flags = sample_flags(&state);
            // perf's estimate on return to user space.
            if (state.from_ip >= kernel_start || state.from_ip == 0)
                && state.to_ip != 0
                && state.to_ip < kernel_start
            {
                queue.timestamp = state.est_timestamp;
            } else if state.timestamp > queue.timestamp {
                queue.timestamp = state.timestamp;
            }
            if queue.sel_timestamp != 0 && time_filter(queue, &self.ranges, &mut ff_timestamp) {
                return true;
            }
            if queue.timestamp >= *ts {
                *ts = queue.timestamp;
                return false;
            }
        }
    }

    /// perf's intel_pt_sample: the samples of the queue's last state, then
    /// its branch on the thread stack.
    fn sample(&mut self, q: usize) {
        if !self.queues[q].have_sample {
            return;
        }
        self.queues[q].have_sample = false;
        let state = self.queues[q].state;
        if state.kind & kind::PSB_EVT != 0 {
            let mut raw = Vec::new();
            self.endian.put_u32(&mut raw, 0);
            self.endian.put_u64(&mut raw, state.psb_offset);
            self.synth(q, self.ids.psb, false, raw);
        }
        if state.cbr != self.queues[q].cbr_seen {
            self.queues[q].cbr_seen = state.cbr;
            let flags = (state.cbr_payload as u16 as u32) | (self.max_non_turbo_ratio << 16);
            let mut raw = Vec::new();
            self.endian.put_u32(&mut raw, flags);
            let freq = u64::from(state.cbr) * self.cbr2khz;
            self.endian.put_u32(&mut raw, freq as u32);
            self.endian.put_u32(&mut raw, 0);
            self.synth(q, self.ids.cbr, false, raw);
        }
        let pwr = [
            (kind::MWAIT_OP, self.ids.mwait),
            (kind::PWR_ENTRY, self.ids.pwre),
            (kind::EX_STOP, self.ids.exstop),
            (kind::PWR_EXIT, self.ids.pwrx),
        ];
        for (bit, id) in pwr {
            if state.kind & bit != 0 {
                // Without the power events' attrs (no pwr_evt in the
                // config) perf still makes these, with id 0, which its
                // evlist gives to the first event: the intel_pt one.
                self.synth(q, id.unwrap_or(0), false, vec![0u8; 12]);
            }
        }
        if state.kind & kind::INSTRUCTION != 0 {
            self.synth(q, self.ids.instructions, true, Vec::new());
        }
        if state.kind & kind::TRANSACTION != 0 {
            self.synth(q, self.ids.transactions, false, Vec::new());
        }
        if state.kind & kind::PTW != 0 {
            self.synth(q, self.ids.ptwrite, false, vec![0u8; 12]);
        }
        // perf keeps thread stacks only for call chains.
        if state.kind & kind::BRANCH == 0 || !self.callchains {
            return;
        }
        let queue = &self.queues[q];
        let Some(tid) = queue.thread else {
            return;
        };
        let key = ThreadStacks::key(&self.machine.borrow(), tid, queue.cpu);
        let flags = queue.flags;
        let insn_len = 0;
        self.stacks.event(
            key,
            flags,
            state.from_ip,
            state.to_ip,
            insn_len,
            state.trace_nr,
        );
    }

    fn synth(&mut self, q: usize, id: u64, with_period: bool, raw: Vec<u8>) {
        let queue = &self.queues[q];
        let state = &queue.state;
        let kernel_start = *self.kernel_start.borrow();
        let ip = state.from_ip;
        let (cpumode_ip, nr) = if ip != 0 {
            (ip, state.from_nr)
        } else {
            (state.to_ip, state.to_nr)
        };
        let misc = match (nr, cpumode_ip >= kernel_start) {
            (true, true) => misc::GUEST_KERNEL,
            (true, false) => misc::GUEST_USER,
            (false, true) => misc::KERNEL,
            (false, false) => misc::USER,
        };
        let key = queue
            .thread
            .map(|tid| ThreadStacks::key(&self.machine.borrow(), tid, queue.cpu));
        let callchain = if self.callchains {
            self.stacks.sample(key, ip, kernel_start)
        } else {
            Vec::new()
        };
        let (id, attr) = match self.attr_of.get(&id) {
            Some(&attr) => (id, attr),
            None => self.first_event,
        };
        self.out.push(Synth {
            attr,
            misc,
            sample_fields: SynthSample {
                id,
                ip,
                pid: queue.pid,
                tid: queue.tid,
                time: self.info.tsc_to_perf_time(queue.timestamp),
                cpu: queue.cpu,
                period: if with_period { 1 } else { 0 },
                callchain,
                raw,
            },
        });
    }
}

/// perf's intel_pt_next_time: the queue's next range boundary; false when
/// none is left.
fn next_time(queue: &mut Queue<'_>, ranges: &[(u64, u64)]) -> bool {
    if queue.sel_start {
        queue.sel_start = false;
        queue.sel_timestamp = ranges.get(queue.sel_idx).map_or(0, |r| r.1);
        true
    } else if queue.sel_idx + 1 < ranges.len() {
        queue.sel_start = true;
        queue.sel_idx += 1;
        queue.sel_timestamp = ranges[queue.sel_idx].0;
        true
    } else {
        false
    }
}

/// perf's intel_pt_time_filter: no samples before a range, a fast forward
/// to it; true when the last range has ended and decoding stops.
fn time_filter(queue: &mut Queue<'_>, ranges: &[(u64, u64)], ff_timestamp: &mut u64) -> bool {
    loop {
        if queue.sel_start {
            if queue.timestamp >= queue.sel_timestamp {
                next_time(queue, ranges);
                if queue.sel_timestamp == 0 {
                    return false;
                }
                continue;
            }
            queue.have_sample = false;
            if queue.sel_timestamp > *ff_timestamp {
                *ff_timestamp = queue.sel_timestamp;
                queue.decoder.fast_forward(queue.sel_timestamp);
            }
            return false;
        } else if queue.timestamp > queue.sel_timestamp {
            if !next_time(queue, ranges) {
                queue.have_sample = false;
                return true;
            }
            continue;
        } else {
            return false;
        }
    }
}

/// perf's intel_pt_sample_flags: the branch kind the thread stack sees.
fn sample_flags(state: &State) -> u32 {
    let mut flags = if state.flags & flag::ABORT_TX != 0 {
        ip_flag::BRANCH | ip_flag::TX_ABORT
    } else if state.flags & flag::ASYNC != 0 {
        if state.to_ip == 0 {
            ip_flag::BRANCH | ip_flag::ASYNC | ip_flag::TRACE_END
        } else if state.from_nr && !state.to_nr {
            ip_flag::BRANCH | ip_flag::CALL | ip_flag::VMEXIT
        } else {
            ip_flag::BRANCH | ip_flag::CALL | ip_flag::ASYNC | ip_flag::INTERRUPT
        }
    } else if state.from_ip != 0 {
        // A walked instruction's kind; prec walks none.
        0
    } else {
        ip_flag::BRANCH | ip_flag::TRACE_BEGIN
    };
    if state.kind & kind::TRACE_BEGIN != 0 {
        flags |= ip_flag::TRACE_BEGIN;
    }
    if state.kind & kind::TRACE_END != 0 {
        flags |= ip_flag::TRACE_END;
    }
    flags
}

/// The attr of a made-up event, from the traced event's as perf's
/// intel_pt_synth_events builds it.
fn synth_attr(pt: &Attr, type_: u32, config: u64, sample_type: u64, period: u64) -> Attr {
    use prec_format::attr::flags as af;
    let copied = af::EXCLUDE_USER
        | af::EXCLUDE_KERNEL
        | af::EXCLUDE_HV
        | af::EXCLUDE_HOST
        | af::EXCLUDE_GUEST
        | af::SAMPLE_ID_ALL;
    Attr {
        type_,
        size: prec_format::write::WRITE_ATTR_SIZE,
        config,
        sample_period_or_freq: period,
        sample_type,
        read_format: pt.read_format,
        flags: pt.flags & copied,
        ..Attr::default()
    }
}

/// Reads the Intel PT trace of `file` as perf report does and returns the
/// copy to report from; `None` when the file holds no Intel PT trace, or
/// one prec does not decode (no timestamps; a pipe-mode stream, of which
/// perf warns its output cannot be relied upon).
///
/// `callchains` is false for `-g none`: perf then cannot register its call
/// chain parameters and decodes without call chains, though its report
/// still counts children (it takes an AUX area file to have call chains).
pub fn inject(
    file: &PerfFile<'_>,
    callchains: bool,
    time: Option<&crate::time_ranges::TimeRanges>,
) -> Option<Injected> {
    if file.mode() == prec_format::read::Mode::Pipe {
        return None;
    }
    let endian = file.endian();
    let mut info = None;
    let mut auxtrace = Vec::new();
    for r in file.records() {
        let Ok(r) = r else { break };
        match r.header.kind {
            RecordType::AUXTRACE_INFO => {
                if let Ok(Record::AuxtraceInfo { info_type, private }) = r.parse(None) {
                    if info_type == AUXTRACE_INTEL_PT && info.is_none() {
                        info = Info::parse(&private);
                    }
                }
            }
            RecordType::AUXTRACE => {
                if let Ok(Record::Auxtrace {
                    reference,
                    idx,
                    tid,
                    cpu,
                    data,
                    ..
                }) = r.parse(None)
                {
                    auxtrace.push((idx, tid as i32, cpu as i32, reference, data));
                }
            }
            _ => {}
        }
    }
    let info = info?;
    let attrs = file.attrs();
    let pt_index = attrs
        .iter()
        .position(|a| u64::from(a.attr.type_) == info.pmu_type && !a.ids.is_empty())?;
    let pt = &attrs[pt_index].attr;
    let pt_attrs = || {
        attrs
            .iter()
            .filter(|a| u64::from(a.attr.type_) == info.pmu_type)
    };
    // perf's intel_pt_timeless_decoding: prec needs the timestamps.
    let tsc = info.tsc_bit != 0
        && info.cap_user_time_zero != 0
        && attrs.iter().all(|a| a.attr.sample_type & st::TIME != 0)
        && pt_attrs().all(|a| a.attr.config & info.tsc_bit != 0);
    if !tsc || info.time_mult == 0 {
        return None;
    }
    let branch_enable = !pt_attrs().any(|a| a.attr.config & 1 != 0 && a.attr.config & 0x2000 == 0);
    let mtc_shift = if info.mtc_freq_bits == 0 {
        0
    } else {
        let shift = info.mtc_freq_bits.trailing_zeros();
        ((pt.config & info.mtc_freq_bits) >> shift) as u32
    };
    let tsc_freq = info.ns_to_ticks(1_000_000_000);
    let max_non_turbo_ratio = if info.max_non_turbo_ratio != 0 {
        info.max_non_turbo_ratio
    } else {
        (tsc_freq + 50_000_000) / 100_000_000
    };
    let cbr2khz = tsc_freq.checked_div(max_non_turbo_ratio).unwrap_or(0) / 1000;
    let params = Params {
        branch_enable,
        mtc_shift,
        tsc_ctc_ratio_n: info.tsc_ctc_ratio_n as u32,
        tsc_ctc_ratio_d: info.tsc_ctc_ratio_d as u32,
        max_non_turbo_ratio: max_non_turbo_ratio as u32,
    };

    // The copy's attrs: the recorded ones with call chains (perf adds them
    // to every sample), then perf's made-up events.
    let mut new_attrs: Vec<EventAttr> = attrs
        .iter()
        .map(|a| {
            let mut a = a.clone();
            a.attr.sample_type |= st::CALLCHAIN;
            a
        })
        .collect();
    let mut names: Vec<Option<String>> = vec![None; attrs.len()];
    let mut sample_type =
        (pt.sample_type & PERF_SAMPLE_MASK) | st::IP | st::TID | st::PERIOD | st::TIME;
    if info.per_cpu_mmaps == 0 {
        sample_type &= !st::CPU;
    }
    // prec finds a sample's attr by its identifier.
    sample_type |= st::IDENTIFIER | st::CALLCHAIN;
    let mut next_id = pt_id(&attrs[pt_index]);
    let mut ids = SynthIds::default();
    let mut attr_of = HashMap::new();
    let mut add = |name: &str, attr: Attr, names: &mut Vec<Option<String>>| {
        let id = next_id;
        next_id += 1;
        attr_of.insert(id, new_attrs.len());
        new_attrs.push(EventAttr {
            attr,
            ids: vec![id],
        });
        names.push(Some(name.to_string()));
        id
    };
    let insn_period = info.ns_to_ticks(100_000);
    ids.instructions = add(
        "instructions",
        synth_attr(pt, 0, 1, sample_type, insn_period),
        &mut names,
    );
    let sample_type = sample_type & !st::PERIOD;
    ids.transactions = add(
        "transactions",
        synth_attr(pt, 0, 1, sample_type, 1),
        &mut names,
    );
    let sample_type = sample_type | st::RAW;
    let synth = |config| synth_attr(pt, PERF_TYPE_SYNTH, config, sample_type, 1);
    ids.ptwrite = add("ptwrite", synth(SYNTH_PTWRITE), &mut names);
    ids.cbr = add("cbr", synth(SYNTH_CBR), &mut names);
    ids.psb = add("psb", synth(SYNTH_PSB), &mut names);
    if pt.config & 0x10 != 0 {
        ids.mwait = Some(add("mwait", synth(SYNTH_MWAIT), &mut names));
        ids.pwre = Some(add("pwre", synth(SYNTH_PWRE), &mut names));
        ids.exstop = Some(add("exstop", synth(SYNTH_EXSTOP), &mut names));
        ids.pwrx = Some(add("pwrx", synth(SYNTH_PWRX), &mut names));
    }

    // Queues: one per AUXTRACE idx, buffers numbered in file order.
    let machine = Rc::new(RefCell::new(Machine::default()));
    let kernel_start = Rc::new(RefCell::new(0u64));
    let mut by_idx: Vec<(u32, i32, i32, Vec<Buffer<'_>>)> = Vec::new();
    for (buffer_nr, (idx, tid, cpu, reference, data)) in auxtrace.into_iter().enumerate() {
        let slot = match by_idx.iter().position(|q| q.0 == idx) {
            Some(i) => i,
            None => {
                by_idx.push((idx, tid, cpu, Vec::new()));
                by_idx.len() - 1
            }
        };
        let first = by_idx[slot].3.is_empty();
        by_idx[slot].3.push(Buffer {
            data,
            reference,
            trace_nr: buffer_nr as u64 + 1,
            // Snapshots may overlap; perf trims the overlap, prec starts
            // each afresh.
            consecutive: !first && info.snapshot_mode == 0,
        });
    }
    by_idx.sort_by_key(|q| q.0);
    let queues = by_idx
        .into_iter()
        .map(|(_, tid, cpu, buffers)| Queue {
            decoder: Decoder::new(
                params,
                buffers,
                Walker {
                    machine: machine.clone(),
                    thread: None,
                    kernel_start: kernel_start.clone(),
                },
            ),
            cpu,
            record_tid: tid,
            pid: -1,
            tid,
            timestamp: 0,
            have_sample: false,
            state: State::default(),
            flags: 0,
            cbr_seen: u32::MAX,
            on_heap: false,
            thread: None,
            sel_timestamp: 0,
            sel_start: false,
            sel_idx: 0,
        })
        .collect();
    let mut session = Session {
        info,
        endian,
        machine: machine.clone(),
        kernel_start: kernel_start.clone(),
        kernel_start_known: false,
        x86_64: recorded_arch(file).is_none_or(|a| a == "x86_64"),
        stacks: ThreadStacks::default(),
        queues,
        heap: Vec::new(),
        set_up: false,
        ids,
        attr_of,
        first_event: (attrs[0].ids.first().copied().unwrap_or(0), 0),
        max_non_turbo_ratio: max_non_turbo_ratio as u32,
        cbr2khz,
        errors: 0,
        callchains,
        ranges: time.map_or_else(Vec::new, |t| {
            t.ranges()
                .iter()
                .map(|&(start, end)| {
                    (
                        if start != 0 { info.tsc_start(start) } else { 0 },
                        if end != 0 { info.tsc_end(end) } else { 0 },
                    )
                })
                .collect()
        }),
        out: Vec::new(),
    };

    // perf's delivery: before each timed event, the queues decode up to
    // its time and their samples go first; then the event, a recorded
    // sample with its call chain added.
    let mut data = Vec::with_capacity(file.input().len() / 2);
    for r in file.ordered_records() {
        let Ok(r) = r else { break };
        let kind_ = r.header.kind;
        if kind_ == RecordType::AUXTRACE || !keep_record(kind_) {
            continue;
        }
        let attr_index = file.attr_index(&r);
        let attr = attr_index.map(|i| &attrs[i].attr);
        let id = attr.map(|a| r.sample_id(a)).unwrap_or_default();
        if kind_.is_kernel() {
            if let Some(time) = id.time.filter(|&t| t != 0 && t != u64::MAX) {
                let tsc = session.info.perf_time_to_tsc(time);
                if tsc != 0 {
                    if !session.set_up {
                        session.setup_queues();
                    }
                    session.process_queues(tsc);
                    write_synths(&mut session.out, &new_attrs, endian, &mut data);
                }
            }
        }
        let record = r.parse(attr).ok();
        let cpu = id.cpu.map_or(-1, |c| c as i32);
        let pid = id.pid.map_or(-1, |p| p as i32);
        let tid = id.tid.map_or(-1, |t| t as i32);
        match &record {
            Some(Record::Sample(sample))
                if attr.is_some_and(|a| a.sample_type & st::CALLCHAIN == 0) =>
            {
                let Some(i) = attr_index else { continue };
                let ip = sample.ip.unwrap_or(0);
                let (pid, tid) = (
                    sample.pid.map_or(-1, |p| p as i32),
                    sample.tid.map_or(-1, |t| t as i32),
                );
                let cpu = sample.cpu.map_or(-1, |c| c as i32);
                let chain = {
                    let mut m = machine.borrow_mut();
                    m.findnew_thread(pid, tid);
                    let key = ThreadStacks::key(&m, tid, cpu);
                    if callchains {
                        session.stacks.sample_late(key, ip, *kernel_start.borrow())
                    } else {
                        Vec::new()
                    }
                };
                let chain_words = words(&chain, endian);
                let with_chain = Sample {
                    callchain: Some(U64Slice::new(&chain_words, endian)),
                    ..sample.clone()
                };
                if prec_format::encode::encode_sample(
                    &with_chain,
                    &new_attrs[i].attr,
                    r.header.misc,
                    endian,
                    &mut data,
                )
                .is_err()
                {
                    continue;
                }
            }
            _ => {
                endian.put_u32(&mut data, kind_.0);
                endian.put_u16(&mut data, r.header.misc);
                endian.put_u16(&mut data, r.header.size);
                data.extend_from_slice(r.body);
            }
        }
        // What perf's Intel PT support and its machine take from the event.
        let mut m = machine.borrow_mut();
        match record {
            Some(Record::SwitchCpuWide {
                out,
                next_prev_pid,
                next_prev_tid,
                ..
            }) if session.info.have_sched_switch == 3 => {
                if out {
                    m.set_current_tid(cpu, next_prev_pid as i32, next_prev_tid as i32);
                } else if m.current_tid(cpu) != tid {
                    m.set_current_tid(cpu, pid, tid);
                }
            }
            Some(Record::Switch { out: false, .. })
            | Some(Record::SwitchCpuWide { out: false, .. })
                if session.info.have_sched_switch == 2 =>
            {
                m.set_current_tid(cpu, pid, tid);
            }
            Some(Record::ItraceStart { pid, tid }) if session.info.per_cpu_mmaps != 0 => {
                m.set_current_tid(cpu, pid as i32, tid as i32);
            }
            Some(Record::Sample(s)) => {
                m.findnew_thread(
                    s.pid.map_or(-1, |p| p as i32),
                    s.tid.map_or(-1, |t| t as i32),
                );
            }
            Some(Record::Comm { pid, tid, .. }) => m.findnew_thread(pid as i32, tid as i32),
            Some(Record::Fork(t)) => m.fork(t.pid as i32, t.tid as i32, t.ppid as i32),
            Some(Record::Mmap(mm)) | Some(Record::Mmap2(mm)) => {
                let kernel = r.header.misc & misc::CPUMODE_MASK == misc::KERNEL;
                m.mmap(
                    mm.pid as i32,
                    mm.tid as i32,
                    kernel,
                    mm.addr,
                    mm.len,
                    mm.filename,
                );
            }
            _ => {}
        }
    }
    session.process_queues(u64::MAX);
    write_synths(&mut session.out, &new_attrs, endian, &mut data);

    let features = copy_features(file, &new_attrs, &names);
    let mut w =
        prec_format::write::FileWriter::new(std::io::Cursor::new(Vec::new()), endian, &new_attrs)
            .ok()?;
    w.write_records(&data).ok()?;
    let bytes = w.finish(&features).ok()?.into_inner();
    let undecoded_binaries = std::mem::take(&mut machine.borrow_mut().undecoded);
    Some(Injected {
        bytes,
        errors: session.errors,
        undecoded_binaries,
    })
}

/// The ARCH feature's machine name; perf takes the running machine's
/// without it (x86_64 here, where Intel PT is).
fn recorded_arch(file: &PerfFile<'_>) -> Option<String> {
    let f = file.feature(FeatureId::ARCH)?;
    match features::decode(f.id, f.data, f.offset, file.endian()) {
        Ok(Feature::Arch(a)) => Some(a),
        _ => None,
    }
}

/// perf's PERF_SAMPLE_MASK.
const PERF_SAMPLE_MASK: u64 = st::IP
    | st::TID
    | st::TIME
    | st::ADDR
    | st::ID
    | st::STREAM_ID
    | st::CPU
    | st::PERIOD
    | st::IDENTIFIER;

/// The first made-up event's id: perf's `id[0] + 1000000000`.
fn pt_id(pt: &EventAttr) -> u64 {
    match pt.ids[0].wrapping_add(1_000_000_000) {
        0 => 1,
        id => id,
    }
}

/// Records the report reads (perf's own stream records are not copied).
fn keep_record(kind: RecordType) -> bool {
    !matches!(
        kind,
        RecordType::HEADER_ATTR
            | RecordType::HEADER_FEATURE
            | RecordType::HEADER_EVENT_TYPE
            | RecordType::HEADER_TRACING_DATA
            | RecordType::COMPRESSED
    )
}

fn words(values: &[u64], endian: Endian) -> Vec<u8> {
    let mut b = Vec::with_capacity(values.len() * 8);
    for &v in values {
        endian.put_u64(&mut b, v);
    }
    b
}

fn write_synths(out: &mut Vec<Synth>, attrs: &[EventAttr], endian: Endian, data: &mut Vec<u8>) {
    for s in out.drain(..) {
        let f = &s.sample_fields;
        let callchain = words(&f.callchain, endian);
        let sample = Sample {
            identifier: Some(f.id),
            ip: Some(f.ip),
            pid: Some(f.pid as u32),
            tid: Some(f.tid as u32),
            time: Some(f.time),
            id: Some(f.id),
            stream_id: Some(f.id),
            cpu: Some(f.cpu as u32),
            period: Some(f.period),
            callchain: Some(U64Slice::new(&callchain, endian)),
            raw: (!f.raw.is_empty()).then_some(&f.raw[..]),
            ..Sample::default()
        };
        // A sample that does not fit a record is left out, as perf fails
        // to deliver it.
        let _ =
            prec_format::encode::encode_sample(&sample, &attrs[s.attr].attr, s.misc, endian, data);
    }
}

/// The input's features for the copy: EVENT_DESC names the made-up events
/// (perf's intel_pt_set_event_name); the AUXTRACE index is dropped with
/// the trace.
fn copy_features(
    file: &PerfFile<'_>,
    attrs: &[EventAttr],
    names: &[Option<String>],
) -> Vec<(FeatureId, Vec<u8>)> {
    let endian = file.endian();
    let mut features: Vec<(FeatureId, Vec<u8>)> =
        prec_format::convert::copied_features(file, endian)
            .into_iter()
            .filter(|f| f.0 != FeatureId::AUXTRACE && f.0 != FeatureId::EVENT_DESC)
            .collect();
    let recorded = crate::aggregate::event_names(file);
    let events = attrs
        .iter()
        .enumerate()
        .map(|(i, a)| EventDesc {
            attr: a.attr.clone(),
            name: names
                .get(i)
                .cloned()
                .flatten()
                .or_else(|| recorded.get(i).cloned())
                .unwrap_or_default(),
            ids: a.ids.clone(),
            reserved_set: false,
        })
        .collect();
    let desc = Feature::EventDesc(EventDescs {
        attr_size: prec_format::write::WRITE_ATTR_SIZE,
        events,
    });
    features.push((FeatureId::EVENT_DESC, features::encode(&desc, endian)));
    features.sort_by_key(|f| f.0);
    features
}
