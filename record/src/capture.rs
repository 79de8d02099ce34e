//! The `prec record` capture loop: open the events like `perf record`,
//! write the synthesized prologue, start the workload, drain the rings into
//! a perf.data file (or pipe) and finish it with perf's feature sections.
//!
//! Order of operations (so that a failing run leaves nothing behind):
//! 1. resolve and fork the workload behind its start gate (a missing command
//!    fails here), check `-p`/`-t` targets;
//! 2. open every (event, cpu, thread) with perf's fallbacks, map one ring
//!    per CPU and `SET_OUTPUT` the others to it;
//! 3. only now move an existing output to `.old` and create the new file
//!    (mode 0600), write header and prologue, enable, release the gate;
//! 4. poll/drain until the workload exits (or Ctrl-C without workload),
//!    FINISHED_ROUND after every pass that wrote data, header patched at
//!    least every 250 ms so a killed recorder leaves a readable file;
//! 5. BUILD_ID for every DSO that got samples, SAMPLE_TIME, host features.

#![forbid(unsafe_code)]

use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use prec_format::write::{FileWriter, PipeWriter};
use prec_format::{Attr, Endian, EventAttr};

use crate::compress::Compressor;
use crate::control::{Control, ControlCommand};
use crate::events::{EventSpec, EventTerms, TermCallGraph};
use crate::features::{self, DsoBuildId, EventInfo, RecordingFacts};
use crate::launch::{self, ExitStatus, RunningChild, SuspendedChild};
use crate::ring::{LostCounter, RingBuffer};
use crate::synth::{self, Synth};
use crate::sys::{self, flags, perf_type, read_format, sample, PerfEventAttr};
use crate::{buildid, proc_synth, sysinfo, tracefs};

/// The CPU "-1" (any CPU) in CPU lists.
const ANY_CPU: u32 = u32::MAX;

/// Call-graph mode (`-g`, `--call-graph`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallGraph {
    None,
    Fp,
    /// DWARF unwinding with this many bytes of user stack per sample.
    Dwarf(u32),
}

/// Where the data goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    File(PathBuf),
    /// Pipe mode on stdout (`-o -`).
    Stdout,
}

/// Everything `prec record` needs, already validated by the CLI.
#[derive(Clone, Debug)]
pub struct RecordConfig {
    /// Events; empty means perf's default `cycles:P`.
    pub events: Vec<EventSpec>,
    /// Sampling frequency (used when `period` is `None`).
    pub freq: u64,
    /// Fixed sample period (`-c`).
    pub period: Option<u64>,
    pub call_graph: CallGraph,
    pub output: Output,
    /// Workload argv (may be empty with `-p`/`-t`/`-a`).
    pub command: Vec<OsString>,
    pub pids: Vec<i32>,
    pub tids: Vec<i32>,
    /// `-u`: every process of this user at the start (prec itself
    /// excepted), and the threads they start later.
    pub uid: Option<u32>,
    /// `-a` (or `-C`): per-CPU, all tasks.
    pub system_wide: bool,
    /// `-C`: restrict to these CPUs.
    pub cpus: Option<Vec<u32>>,
    /// Data pages per ring (power of two).
    pub mmap_pages: usize,
    pub inherit: bool,
    pub quiet: bool,
    /// prec's own argv (the CMDLINE feature).
    pub cmdline: Vec<String>,
    /// The less common perf record options.
    pub modes: RecordModes,
}

/// When `--switch-output` starts a new file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchOutput {
    /// On SIGUSR2 (`--switch-output` or `--switch-output=signal`).
    Signal,
    /// Once the data written reaches this many bytes.
    Size(u64),
    /// Every this long.
    Time(Duration),
}

/// perf record's `--affinity`: where the thread reading the rings runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Affinity {
    /// Wherever the scheduler puts it.
    #[default]
    System,
    /// On the CPUs of the NUMA node of the ring's CPU.
    Node,
    /// On the ring's CPU.
    Cpu,
}

/// The CPUs the ring of `cpu` is read from under `affinity` (`None`: no
/// change; a ring of any CPU, `--per-thread`'s, has none).
fn affinity_mask(affinity: Affinity, cpu: u32) -> Option<Vec<u32>> {
    match affinity {
        Affinity::System => None,
        _ if cpu == ANY_CPU => None,
        Affinity::Cpu => Some(vec![cpu]),
        Affinity::Node => {
            let node_cpus = std::fs::read_dir("/sys/devices/system/node")
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .filter_map(|e| std::fs::read_to_string(e.path().join("cpulist")).ok())
                .filter_map(|list| sys::parse_cpu_list(&list).ok())
                .find(|cpus| cpus.contains(&cpu));
            node_cpus.or_else(|| sys::online_cpus().ok())
        }
    }
}

/// A planned change of `-D` windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Toggle {
    EnableAll,
    EnableNonDummy,
    DisableNonDummy,
    DisableAndStop,
}

/// perf record's `-D`: when the events start counting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Delay {
    /// `-D MS`: this many ms after the start.
    After(u64),
    /// `-D -1`: only when `--control` says `enable`.
    UntilEnabled,
    /// `-D A-B,C-D,...`: in these windows (ms after the start); the
    /// recording ends with the last one.
    Windows(Vec<(u64, u64)>),
}

impl Delay {
    /// Parses perf's `-D` forms: a positive number of ms, -1, or
    /// increasing non-overlapping `start-end` windows.
    pub fn parse(text: &str) -> Option<Delay> {
        if text == "-1" {
            return Some(Delay::UntilEnabled);
        }
        if let Ok(ms) = text.parse::<u64>() {
            return (ms > 0 && ms <= i32::MAX as u64).then_some(Delay::After(ms));
        }
        let mut windows: Vec<(u64, u64)> = Vec::new();
        for window in text.split(',') {
            let (start, end) = window.split_once('-')?;
            let start: u64 = start.trim().parse().ok()?;
            let end: u64 = end.trim().parse().ok()?;
            let after_previous = windows.last().is_none_or(|&(_, e)| start > e);
            if end <= start || !after_previous || end > i32::MAX as u64 {
                return None;
            }
            windows.push((start, end));
        }
        Some(Delay::Windows(windows))
    }
}

/// perf record's less common options (all off by default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecordModes {
    /// `--call-graph fp,N`: the frames kept of each chain
    /// (`sample_max_stack`; 0: the kernel's limit).
    pub fp_max_stack: u16,
    /// `-z`: zstd level; COMPRESSED records and feature, no BUILD_ID.
    pub compression_level: Option<u32>,
    /// `-k`: (clockid, clock resolution in ns).
    pub clockid: Option<(i32, u64)>,
    /// `-T`: sample TIME even with `--per-thread`.
    pub timestamp: bool,
    /// `-d`: ADDR | DATA_SRC, mmap_data on the tracking event.
    pub sample_addr: bool,
    /// `--sample-cpu`.
    pub sample_cpu: bool,
    /// `-P`.
    pub sample_period: bool,
    /// `-W`: WEIGHT_STRUCT.
    pub sample_weight: bool,
    /// `--transaction`: TRANSACTION.
    pub sample_transaction: bool,
    /// `--switch-events`: context_switch on the tracking event.
    pub switch_events: bool,
    /// `--namespaces`: namespaces on the tracking event, NAMESPACES records.
    pub namespaces: bool,
    /// `--per-thread`: no inherit, no TIME (unless `-T`).
    pub per_thread: bool,
    /// `--threads[=SPEC]`: a directory of per-thread data files (see
    /// [`crate::parallel`]).
    pub threads: Option<String>,
    /// `--all-cgroups`: samples carry their cgroup id, the tracking event
    /// reports new cgroups, and the existing ones are made up as CGROUP
    /// records.
    pub all_cgroups: bool,
    /// `--overwrite`: events write backward into read-only rings that keep
    /// the newest records, read at the end (and at each --switch-output);
    /// the targets' tasks are made up at the end (as --tail-synthesize).
    pub overwrite: bool,
    /// `-B` (and `-z`): no BUILD_ID feature, no sample count.
    pub no_buildid: bool,
    /// `--buildid-mmap`: the kernel puts each file's build-id in its MMAP2
    /// record (the tracking event's `build_id` bit), and the maps prec
    /// makes up carry them too.
    pub buildid_mmap: bool,
    /// `--buildid-all`: the BUILD_ID feature lists every file mapped, not
    /// only those sampled; samples are then not read back (no count, no
    /// sample times unless `timestamp_boundary`).
    pub buildid_all: bool,
    /// `--timestamp-boundary`: sample times even with `buildid_all`.
    pub timestamp_boundary: bool,
    /// `--no-buffering`: every event wakes the reader (wakeup_events 1).
    pub no_buffering: bool,
    /// `--switch-output`: when to close the file (renamed NAME.TIMESTAMP)
    /// and start a new one at NAME.
    pub switch_output: Option<SwitchOutput>,
    /// `--switch-max-files`: keep only this many switched files (0: all).
    pub switch_max_files: usize,
    /// `-r`: run prec (not the workload, which is started before) under
    /// `SCHED_FIFO` at this priority.
    pub realtime: Option<i32>,
    /// `--tail-synthesize`: the records made up from /proc (the id index,
    /// the kernel's maps, the thread and CPU maps, the targets' tasks) end
    /// each file instead of starting it, after its FINISHED_INIT.
    pub tail_synthesize: bool,
    /// `--max-size`: stop after this many bytes of data.
    pub max_size: Option<u64>,
    /// `-D`: when the events count (a dummy event does the tracking
    /// meanwhile).
    pub delay: Option<Delay>,
    /// `--control`: commands that enable, disable and stop.
    pub control: Option<crate::control::ControlSpec>,
    /// `--switch-output-event`: events whose every occurrence, on any
    /// CPU, switches the output file (as SIGUSR2 does).
    pub switch_output_events: Vec<EventSpec>,
    /// `-s`: inherit_stat and TOTAL_TIME_ENABLED | TOTAL_TIME_RUNNING.
    pub inherit_stat: bool,
    /// `--user-regs`: sample_regs_user mask (REGS_USER when non-zero).
    pub user_regs: u64,
    /// `--intr-regs`: sample_regs_intr mask (REGS_INTR when non-zero).
    pub intr_regs: u64,
    /// `-R`: RAW | CPU | TIME.
    pub raw_samples: bool,
    /// `-F` was given (the tracking dummy then samples at that frequency
    /// too).
    pub user_freq: bool,
    /// `-b` / `-j`: branch_sample_type (0: no branch stack).
    pub branch_filter: u64,
    /// `--phys-data`: PHYS_ADDR.
    pub phys_data: bool,
    /// `--data-page-size`: DATA_PAGE_SIZE.
    pub data_page_size: bool,
    /// `--code-page-size`: CODE_PAGE_SIZE.
    pub code_page_size: bool,
    /// `--sample-identifier`: IDENTIFIER on every event, even alone.
    pub sample_identifier: bool,
    /// `--synth=no`: no COMM, FORK or MMAP2 records for the processes that
    /// exist before recording (system-wide, `-p`, `-t`).
    pub no_synth_tasks: bool,
    /// `--synth=task`: their COMM and FORK records, no MMAP2.
    pub no_synth_mmaps: bool,
    /// `--aio=N`: the data written by a thread, up to N writes behind.
    pub aio: Option<usize>,
    /// `--affinity`: where the thread reading the rings runs while it reads
    /// each one.
    pub affinity: Affinity,
    /// `--mmap-flush`: bytes a ring must hold before it is read (but at
    /// the end), at most a quarter of it.
    pub mmap_flush: Option<u64>,
    /// `--proc-map-timeout`: how long to read one process's
    /// `/proc/PID/maps` (`None`: perf's 500 ms).
    pub proc_map_timeout: Option<Duration>,
    /// `--user-callchains`: exclude_callchain_kernel.
    pub user_callchains: bool,
    /// `--kernel-callchains`: exclude_callchain_user.
    pub kernel_callchains: bool,
    /// `-n`: no sample period (side-band records only).
    pub no_samples: bool,
    /// `--running-time`: enabled and running times in sample reads.
    pub running_time: bool,
    /// `--no-bpf-event`: no bpf_event on the tracking event.
    pub no_bpf_event: bool,
}

impl RecordModes {
    /// Whether the written records are read back at the end, as perf's
    /// `process_buildids` does to find the DSOs sampled: not with `-B` or
    /// `-z` (perf collects no build-ids with compression).
    pub fn reads_back(&self) -> bool {
        !self.no_buildid && self.compression_level.is_none()
    }

    /// Whether that reading counts the samples (perf skips them with
    /// `--buildid-all`, which needs no hits).
    pub fn counts_samples(&self) -> bool {
        self.reads_back() && !self.buildid_all
    }

    /// Whether the SAMPLE_TIME feature holds the first and last sample
    /// times (else zeros, as perf writes when it did not read them).
    pub fn sample_times_known(&self) -> bool {
        self.reads_back() && (!self.buildid_all || self.timestamp_boundary)
    }
}

/// A failed recording (nothing was written, or the error is reported after
/// cleaning up).
#[derive(Debug)]
pub struct RecordError(pub String);

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RecordError {}

fn err<T>(msg: impl Into<String>) -> Result<T, RecordError> {
    Err(RecordError(msg.into()))
}

impl From<io::Error> for RecordError {
    fn from(e: io::Error) -> Self {
        RecordError(e.to_string())
    }
}

/// What happened.
#[derive(Clone, Debug, Default)]
pub struct RecordOutcome {
    /// The workload's exit status (None without workload).
    pub exit: Option<ExitStatus>,
    pub samples: u64,
    /// Records in the (last) file, and of them SAMPLE records: perf's
    /// counts when it reads the file back for its build-ids.
    pub records: u64,
    pub sample_records: u64,
    /// Bytes in the data section (or written to the pipe).
    pub data_bytes: u64,
    pub lost: LostCounter,
    /// Number of poll wake-ups with data.
    pub wakeups: u64,
    /// With `-z`: (ring bytes, COMPRESSED bytes).
    pub compressed: Option<(u64, u64)>,
    /// With `--switch-output`: the files finished so far and kept, oldest
    /// first (the last one is still at the output's name).
    pub dumps: Vec<PathBuf>,
}

impl RecordOutcome {
    /// prec's exit code: the workload's (code or 128 + signal), else 0.
    pub fn exit_code(&self) -> i32 {
        self.exit.map_or(0, |e| e.shell_code())
    }
}

/// One event after fallbacks, with its fds' ids.
struct OpenEvent {
    name: String,
    attr: PerfEventAttr,
    ids: Vec<u64>,
    /// Asked for as `cpu-clock`/`task-clock` ([`EventSpec::is_clock`]).
    clock: bool,
}

fn note(quiet: bool, msg: &str) {
    if !quiet {
        eprintln!("{msg}");
    }
}

fn errno_name(e: &io::Error) -> String {
    let s = e.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Build the attr perf would use for `spec` (index `idx` in the list).
/// `sid` is the sample-id bit every event gets: 0, `ID` or `IDENTIFIER`
/// (see [`sample_id_bit`]).
fn build_attr(
    spec: &EventSpec,
    specs: &[EventSpec],
    cfg: &RecordConfig,
    tracking: bool,
    sid: u64,
    launching: bool,
) -> PerfEventAttr {
    let mut a = configure(spec.to_attr(), cfg, tracking, sid, launching);
    apply_terms(&mut a, &spec.terms, cfg, tracking);
    if spec.group_member {
        // The leader is disabled and enabled on exec; its members follow it.
        a.set_flag(flags::DISABLED | flags::ENABLE_ON_EXEC, false);
    }
    if spec.sample_read {
        // perf's evsel__config: samples carry the counter values (of the
        // whole group, then not inherited), with ids to tell them apart;
        // evsel__config_leader_sampling: only the leader samples.
        a.sample_type |= sample::READ;
        if a.sample_type & (sample::ID | sample::IDENTIFIER) == 0 {
            a.sample_type |= sample::ID;
        }
        if spec.group_leader.is_some() {
            a.read_format |= read_format::GROUP;
            a.set_flag(flags::INHERIT, false);
        }
        if spec.group_member {
            // evsel__config_leader_sampling: a member samples only with a
            // period or frequency of its own, and takes the leader's
            // sample_type.
            if spec.terms.period.is_none() && spec.terms.freq.is_none() {
                a.sample_period_or_freq = 0;
                a.set_flag(flags::FREQ, false);
            }
            let leader = spec.group_leader.and_then(|l| specs.get(l));
            if let Some(leader) = leader.filter(|l| !l.group_member) {
                a.sample_type = build_attr(leader, specs, cfg, false, sid, launching).sample_type;
            }
        }
        if cfg.modes.running_time {
            a.read_format |= read_format::TOTAL_TIME_ENABLED | read_format::TOTAL_TIME_RUNNING;
        }
    }
    a
}

/// perf's `evsel__apply_config_terms`: an event's own terms over the
/// command line's settings. A call-graph term first undoes the command
/// line's call graph (its CALLCHAIN, and for DWARF the registers and stack,
/// not the addresses), then sets its own, as perf does.
fn apply_terms(a: &mut PerfEventAttr, terms: &EventTerms, cfg: &RecordConfig, tracking: bool) {
    if let Some(period) = terms.period {
        a.sample_period_or_freq = period;
        a.set_flag(flags::FREQ, false);
        a.sample_type &= !sample::PERIOD;
    }
    if let Some(freq) = terms.freq {
        a.sample_period_or_freq = freq;
        a.set_flag(flags::FREQ, true);
        a.sample_type |= sample::PERIOD;
    }
    if let Some(time) = terms.time {
        if time {
            a.sample_type |= sample::TIME;
        } else {
            a.sample_type &= !sample::TIME;
        }
    }
    if let Some(inherit) = terms.inherit {
        a.set_flag(flags::INHERIT, inherit);
    }
    if !terms.sets_call_graph() {
        return;
    }
    // A max-stack alone means frame pointers; the mode is otherwise the
    // command line's.
    let global = match cfg.call_graph {
        CallGraph::None => None,
        CallGraph::Fp => Some(TermCallGraph::Fp),
        CallGraph::Dwarf(_) => Some(TermCallGraph::Dwarf),
    };
    let mode = match terms.call_graph {
        Some(TermCallGraph::No) => None,
        Some(m) => Some(m),
        None if terms.max_stack.is_some() => Some(TermCallGraph::Fp),
        None => global,
    };
    if let Some(g) = global {
        a.sample_type &= !sample::CALLCHAIN;
        if g == TermCallGraph::Dwarf {
            a.sample_type &= !(sample::REGS_USER | sample::STACK_USER);
        }
    }
    let Some(mode) = mode else {
        return;
    };
    a.sample_type |= sample::CALLCHAIN;
    a.sample_max_stack = terms.max_stack.unwrap_or(0);
    let m = &cfg.modes;
    if m.kernel_callchains {
        a.set_flag(flags::EXCLUDE_CALLCHAIN_USER, true);
    }
    if m.user_callchains {
        a.set_flag(flags::EXCLUDE_CALLCHAIN_KERNEL, true);
    }
    if mode == TermCallGraph::Dwarf {
        a.sample_type |= sample::ADDR | sample::DATA_SRC;
        a.set_flag(flags::MMAP_DATA, tracking);
        a.sample_type |= sample::REGS_USER | sample::STACK_USER;
        a.sample_regs_user |= 0xff0fff;
        // perf's default dump size, rounded up to whole words.
        let size = terms.stack_size.unwrap_or(8192);
        a.sample_stack_user = size.div_ceil(8).saturating_mul(8);
        a.set_flag(flags::EXCLUDE_CALLCHAIN_USER, true);
    }
}

/// perf's `evlist__config` choice: with several events, `ID` when they all
/// have the same sample_type, else `IDENTIFIER`; one event gets `ID` only
/// in pipe mode.
fn sample_id_bit(types: &[u64], cfg: &RecordConfig) -> u64 {
    if cfg.modes.sample_identifier {
        sample::IDENTIFIER
    } else if types.len() > 1 {
        if types.iter().all(|&t| t == types[0]) {
            sample::ID
        } else {
            sample::IDENTIFIER
        }
    } else if cfg.output == Output::Stdout {
        sample::ID
    } else {
        0
    }
}

fn configure(
    mut a: PerfEventAttr,
    cfg: &RecordConfig,
    tracking: bool,
    sid: u64,
    launching: bool,
) -> PerfEventAttr {
    let m = &cfg.modes;
    let mut st = sample::IP | sample::TID;
    if !m.per_thread || m.timestamp || m.raw_samples {
        st |= sample::TIME;
    }
    match cfg.period {
        Some(p) => a.sample_period_or_freq = p,
        None => {
            a.sample_period_or_freq = cfg.freq;
            a.set_flag(flags::FREQ, true);
            st |= sample::PERIOD;
        }
    }
    match cfg.call_graph {
        CallGraph::None => {}
        CallGraph::Fp => {
            st |= sample::CALLCHAIN;
            a.sample_max_stack = m.fp_max_stack;
        }
        CallGraph::Dwarf(size) => {
            st |= sample::CALLCHAIN
                | sample::REGS_USER
                | sample::STACK_USER
                | sample::ADDR
                | sample::DATA_SRC;
            a.sample_regs_user = 0xff0fff;
            a.sample_stack_user = size;
            a.set_flag(flags::EXCLUDE_CALLCHAIN_USER, true);
            // (only the tracking event maps data, as perf)
            a.set_flag(flags::MMAP_DATA, tracking);
        }
    }
    if m.sample_addr {
        st |= sample::ADDR | sample::DATA_SRC;
        if tracking {
            a.set_flag(flags::MMAP_DATA, true);
        }
    }
    if m.sample_period {
        st |= sample::PERIOD;
    }
    if m.sample_weight {
        st |= sample::WEIGHT_STRUCT;
    }
    if m.sample_transaction {
        st |= sample::TRANSACTION;
    }
    if m.sample_cpu || m.raw_samples {
        st |= sample::CPU;
    }
    if m.raw_samples {
        st |= sample::RAW;
    }
    if m.branch_filter != 0 {
        st |= sample::BRANCH_STACK;
        a.branch_sample_type = m.branch_filter;
    }
    if m.user_regs != 0 {
        st |= sample::REGS_USER;
        a.sample_regs_user |= m.user_regs;
    }
    if m.intr_regs != 0 {
        st |= sample::REGS_INTR;
        a.sample_regs_intr = m.intr_regs;
    }
    if m.phys_data {
        st |= sample::PHYS_ADDR;
    }
    if m.data_page_size {
        st |= sample::DATA_PAGE_SIZE;
    }
    if m.code_page_size {
        st |= sample::CODE_PAGE_SIZE;
    }
    if m.all_cgroups {
        st |= sample::CGROUP;
    }
    if st & sample::CALLCHAIN != 0 {
        if m.user_callchains {
            a.set_flag(flags::EXCLUDE_CALLCHAIN_KERNEL, true);
        }
        if m.kernel_callchains {
            a.set_flag(flags::EXCLUDE_CALLCHAIN_USER, true);
        }
    }
    if m.no_samples {
        // perf's evsel__config: no period, the freq flag kept.
        a.sample_period_or_freq = 0;
    }
    if cfg.system_wide {
        st |= sample::CPU;
    }
    if a.type_ == perf_type::TRACEPOINT {
        // perf's evsel__newtp: the raw record, time, CPU and period always,
        // and every hit a sample unless -c or -F says otherwise.
        st |= sample::RAW | sample::TIME | sample::CPU | sample::PERIOD;
        if cfg.period.is_none() && !m.user_freq {
            a.sample_period_or_freq = 1;
            a.set_flag(flags::FREQ, false);
        }
    }
    a.sample_type = st | sid;
    a.read_format = read_format::ID | read_format::LOST;
    if m.inherit_stat {
        a.read_format |= read_format::TOTAL_TIME_ENABLED | read_format::TOTAL_TIME_RUNNING;
        a.set_flag(flags::INHERIT_STAT, true);
    }
    set_clockid(&mut a, cfg);
    if m.no_buffering {
        a.wakeup_events = 1;
    }
    a.set_flag(flags::DISABLED, true);
    a.set_flag(flags::INHERIT, cfg.inherit && !m.per_thread);
    a.set_flag(flags::SAMPLE_ID_ALL, true);
    a.set_flag(flags::WRITE_BACKWARD, m.overwrite);
    if launching && !cfg.system_wide && m.delay.is_none() {
        a.set_flag(flags::ENABLE_ON_EXEC, true);
    }
    if tracking {
        a.set_flag(flags::CONTEXT_SWITCH, m.switch_events);
        a.set_flag(flags::NAMESPACES, m.namespaces);
        a.set_flag(
            flags::MMAP
                | flags::COMM
                | flags::TASK
                | flags::MMAP2
                | flags::COMM_EXEC
                | flags::KSYMBOL,
            true,
        );
        a.set_flag(flags::BPF_EVENT, !m.no_bpf_event);
        a.set_flag(flags::CGROUP, m.all_cgroups);
        a.set_flag(flags::BUILD_ID, m.buildid_mmap);
    }
    a
}

fn set_clockid(a: &mut PerfEventAttr, cfg: &RecordConfig) {
    if let Some((id, _)) = cfg.modes.clockid {
        a.set_flag(flags::USE_CLOCKID, true);
        a.clockid = id;
    }
}

/// perf's `dummy:HG` tracking event for system-wide recording (and `-D`).
fn dummy_attr(cfg: &RecordConfig, sid: u64, launching: bool) -> PerfEventAttr {
    let m = &cfg.modes;
    // Configured like the other events (perf's evsel__config), except:
    let mut a = configure(
        PerfEventAttr::new(perf_type::SOFTWARE, 9),
        cfg,
        true,
        sid,
        launching,
    );
    // period 1 unless -c/-F was given,
    if cfg.period.is_none() && !m.user_freq {
        a.sample_period_or_freq = 1;
        a.set_flag(flags::FREQ, false);
        if !m.sample_period {
            a.sample_type &= !sample::PERIOD;
        }
    }
    // no --user-regs/--intr-regs (DWARF's user regs stay),
    if m.user_regs != 0 && cfg.call_graph == CallGraph::None {
        a.sample_type &= !sample::REGS_USER;
        a.sample_regs_user = 0;
    }
    a.sample_type &= !sample::REGS_INTR;
    a.sample_regs_intr = 0;
    // enabled at once system-wide, else at exec (-D).
    if cfg.system_wide {
        a.set_flag(flags::DISABLED | flags::ENABLE_ON_EXEC, false);
    } else {
        a.set_flag(flags::DISABLED, true);
        a.set_flag(flags::ENABLE_ON_EXEC, launching);
    }
    a
}

fn is_fallback_errno(e: i32) -> bool {
    matches!(
        e,
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV | libc::ENXIO | libc::EINVAL
    )
}

struct Opener<'a> {
    cfg: &'a RecordConfig,
    paranoid: i32,
    said_kernel: bool,
}

impl Opener<'_> {
    /// Opens the first fd of an event with perf's fallbacks; returns the fd,
    /// the final attr and name.
    fn open_first(
        &mut self,
        orig: &EventSpec,
        make: &dyn Fn(&EventSpec) -> PerfEventAttr,
        pid: i32,
        cpu: i32,
        group_fd: Option<BorrowedFd<'_>>,
        flags: u64,
    ) -> Result<(OwnedFd, PerfEventAttr, String), RecordError> {
        let mut base = orig.clone();
        let mut derived_name = false;
        let mut fell_back = false;
        loop {
            // precise_max: try precise_ip 3, 2, 1, 0.
            let mut spec = base.clone();
            let first_err = loop {
                let mut attr = make(&spec);
                match sys::perf_event_open(&mut attr, pid, cpu, group_fd, flags) {
                    Ok(fd) => return Ok((fd, attr, spec.name.clone())),
                    Err(e) => {
                        let code = e.raw_os_error().unwrap_or(0);
                        match spec.lower_precise() {
                            Some(l) if is_fallback_errno(code) => spec = l,
                            _ => break e,
                        }
                    }
                }
            };
            let code = first_err.raw_os_error().unwrap_or(0);
            if code == libc::EACCES
                && !base.exclude_kernel
                && !base.exclude_user
                && self.paranoid > 1
            {
                // perf's evsel__fallback: "excluding kernel and hypervisor".
                base.exclude_kernel = true;
                base.exclude_hv = true;
                let old = base.name.clone();
                base.name = if derived_name {
                    let stem = old.split(':').next().unwrap_or(&old).to_string();
                    format!("{stem}{}", base.modifier_suffix())
                } else if old.contains(':') || old.contains('/') {
                    format!("{old}u")
                } else {
                    format!("{old}:u")
                };
                if !self.said_kernel {
                    self.said_kernel = true;
                    note(
                        self.cfg.quiet,
                        &format!(
                            "Note: kernel.perf_event_paranoid={}, falling back to excluding kernel and hypervisor samples ({})",
                            self.paranoid, base.name
                        ),
                    );
                }
                continue;
            }
            if !fell_back && is_fallback_errno(code) {
                if let Some(f) = base.fallback() {
                    note(
                        self.cfg.quiet,
                        &format!(
                            "Note: {} is not supported here ({}), falling back to {}",
                            base.name,
                            errno_name(&first_err),
                            f.name
                        ),
                    );
                    base = f;
                    derived_name = true;
                    fell_back = true;
                    continue;
                }
            }
            if code == libc::EOPNOTSUPP && self.cfg.modes.branch_filter != 0 {
                return Err(RecordError(format!(
                    "{}: PMU Hardware or event type doesn't support branch stack sampling.",
                    base.name
                )));
            }
            return Err(open_error(&base.name, &first_err, pid, self.paranoid));
        }
    }
}

fn open_error(name: &str, e: &io::Error, pid: i32, paranoid: i32) -> RecordError {
    match e.raw_os_error() {
        Some(libc::ESRCH) => RecordError(format!("no such process: {pid}")),
        Some(libc::EACCES) | Some(libc::EPERM) => RecordError(format!(
            "no permission to open event {name} (kernel.perf_event_paranoid={paranoid}): {}\n\
             Hint: system-wide recording (-a/-C) and kernel profiling need privileges; \
             try running as root or lowering /proc/sys/kernel/perf_event_paranoid",
            errno_name(e)
        )),
        Some(libc::ENOENT) | Some(libc::EOPNOTSUPP) | Some(libc::ENODEV) => RecordError(format!(
            "the event {name} is not supported on this machine: {}",
            errno_name(e)
        )),
        _ => RecordError(format!("failed to open event {name}: {}", errno_name(e))),
    }
}

/// One mapping of a process, for build-id attribution.
#[derive(Clone, Debug)]
struct Map {
    start: u64,
    end: u64,
    file: usize,
}

/// Where a SAMPLE record's read values are (PERF_SAMPLE_READ).
#[derive(Clone, Copy, Debug)]
struct ReadLayout {
    /// Byte offset in the record, header included.
    offset: usize,
    group: bool,
    /// u64 words before the values (a group's nr, the times).
    times: usize,
    id: bool,
    lost: bool,
}

impl ReadLayout {
    /// The layout of `attr`'s samples, when they carry read values.
    fn of(attr: &Attr) -> Option<ReadLayout> {
        let st = attr.sample_type;
        if st & sample::READ == 0 {
            return None;
        }
        let before = [
            sample::IDENTIFIER,
            sample::IP,
            sample::TID,
            sample::TIME,
            sample::ADDR,
            sample::ID,
            sample::STREAM_ID,
            sample::CPU,
            sample::PERIOD,
        ];
        let rf = attr.read_format;
        let times = usize::from(rf & read_format::TOTAL_TIME_ENABLED != 0)
            + usize::from(rf & read_format::TOTAL_TIME_RUNNING != 0);
        Some(ReadLayout {
            offset: 8 + 8 * before.iter().filter(|&&b| st & b != 0).count(),
            group: rf & read_format::GROUP != 0,
            times,
            id: rf & read_format::ID != 0,
            lost: rf & read_format::LOST != 0,
        })
    }

    /// The (id, value) pairs of a sample record `b`.
    fn values(self, b: &[u8]) -> Vec<(u64, u64)> {
        let extra = usize::from(self.id) + usize::from(self.lost);
        let mut out = Vec::new();
        if self.group {
            let Some(nr) = rd_u64(b, self.offset) else {
                return out;
            };
            let mut at = self.offset + 8 * (1 + self.times);
            for _ in 0..nr.min(1 << 16) {
                let (Some(value), id) = (rd_u64(b, at), rd_u64(b, at + 8)) else {
                    break;
                };
                out.push((if self.id { id.unwrap_or(0) } else { 0 }, value));
                at += 8 * (1 + extra);
            }
        } else if let Some(value) = rd_u64(b, self.offset) {
            let id = rd_u64(b, self.offset + 8 * (1 + self.times));
            out.push((if self.id { id.unwrap_or(0) } else { 0 }, value));
        }
        out
    }
}

/// Scans the written stream: samples, times, maps, hits, lost records.
#[derive(Default)]
struct Tracker {
    /// Byte offset of `ip` in a SAMPLE record (8 or 16 with IDENTIFIER).
    ip_off: usize,
    /// Samples carry no TIME (`--per-thread` without `-T`).
    no_time: bool,
    /// With read values in the samples (leader sampling, `:S`), perf's
    /// session delivers a sample once per value that moved since that
    /// event's last sample, and perf record counts those deliveries.
    read: Option<ReadLayout>,
    /// The last value of each event id, for `read`.
    read_values: HashMap<u64, u64>,
    samples: u64,
    /// Records of the file, as perf's session counts them when it reads
    /// the file back (`nr_events[0]`), and of them SAMPLE records.
    records: u64,
    sample_records: u64,
    first_time: Option<u64>,
    last_time: u64,
    files: Vec<String>,
    file_idx: HashMap<String, usize>,
    maps: HashMap<u32, Vec<Map>>,
    hit: BTreeSet<usize>,
    kernel_hit: bool,
    lost: LostCounter,
    /// Each thread's latest COMM, by tid.
    comms: HashMap<u32, String>,
}

fn rd_u32(b: &[u8], off: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(off..off + 4)?.try_into().ok()?))
}

fn rd_u64(b: &[u8], off: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(off..off + 8)?.try_into().ok()?))
}

fn rd_str(b: &[u8], off: usize) -> Option<String> {
    let s = b.get(off..)?;
    let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
    Some(String::from_utf8_lossy(&s[..end]).into_owned())
}

impl Tracker {
    /// Forgets what concerns the file written so far (samples, their
    /// times, the files they hit), keeping the processes' maps.
    fn new_file(&mut self) {
        self.samples = 0;
        self.records = 0;
        self.sample_records = 0;
        self.read_values.clear();
        self.first_time = None;
        self.last_time = 0;
        self.hit.clear();
        self.kernel_hit = false;
    }

    /// Thread `tid`'s latest COMM in the records so far.
    fn comm(&self, tid: i32) -> Option<&str> {
        self.comms.get(&(tid as u32)).map(String::as_str)
    }

    fn add_map(&mut self, pid: u32, start: u64, len: u64, name: String) {
        let idx = match self.file_idx.get(&name) {
            Some(&i) => i,
            None => {
                self.files.push(name.clone());
                self.file_idx.insert(name, self.files.len() - 1);
                self.files.len() - 1
            }
        };
        self.maps.entry(pid).or_default().push(Map {
            start,
            end: start.saturating_add(len),
            file: idx,
        });
    }

    fn scan(&mut self, buf: &[u8]) {
        let _ = self.lost.scan(buf);
        for rec in crate::ring::records(buf) {
            let Ok(rec) = rec else { break };
            self.records += 1;
            if rec.type_ == synth::PERF_RECORD_SAMPLE {
                self.sample_records += 1;
            }
            let b = rec.bytes;
            let cpumode = rec.misc & 7;
            match rec.type_ {
                synth::PERF_RECORD_SAMPLE => {
                    match self.read {
                        None => self.samples += 1,
                        Some(layout) => {
                            for (id, value) in layout.values(b) {
                                // An id no event has (no ID in the read
                                // format) is delivered to none.
                                if !layout.id {
                                    continue;
                                }
                                let last = self.read_values.insert(id, value).unwrap_or(0);
                                if value != last {
                                    self.samples += 1;
                                }
                            }
                        }
                    }
                    let o = self.ip_off;
                    // perf's sample time without TIME is -1.
                    let time = if self.no_time {
                        Some(u64::MAX)
                    } else {
                        rd_u64(b, o + 16)
                    };
                    let (Some(ip), Some(pid), Some(time)) = (rd_u64(b, o), rd_u32(b, o + 8), time)
                    else {
                        continue;
                    };
                    if self.first_time.is_none_or(|f| time < f) {
                        self.first_time = Some(time);
                    }
                    self.last_time = self.last_time.max(time);
                    if cpumode == synth::MISC_KERNEL {
                        self.kernel_hit = true;
                    } else if let Some(maps) = self.maps.get(&pid) {
                        if let Some(m) = maps.iter().rev().find(|m| m.start <= ip && ip < m.end) {
                            self.hit.insert(m.file);
                        }
                    }
                }
                synth::PERF_RECORD_MMAP | synth::PERF_RECORD_MMAP2 => {
                    if cpumode == synth::MISC_KERNEL {
                        continue;
                    }
                    let name_off = if rec.type_ == synth::PERF_RECORD_MMAP {
                        40
                    } else {
                        72
                    };
                    if let (Some(pid), Some(start), Some(len), Some(name)) = (
                        rd_u32(b, 8),
                        rd_u64(b, 16),
                        rd_u64(b, 24),
                        rd_str(b, name_off),
                    ) {
                        self.add_map(pid, start, len, name);
                    }
                }
                synth::PERF_RECORD_FORK => {
                    if let (Some(pid), Some(ppid)) = (rd_u32(b, 8), rd_u32(b, 12)) {
                        if pid != ppid && !self.maps.contains_key(&pid) {
                            if let Some(m) = self.maps.get(&ppid).cloned() {
                                self.maps.insert(pid, m);
                            }
                        }
                    }
                }
                synth::PERF_RECORD_COMM => {
                    if let (Some(tid), Some(comm)) = (rd_u32(b, 12), rd_str(b, 16)) {
                        self.comms.insert(tid, comm);
                    }
                    // exec: the old address space is gone.
                    if rec.misc & (1 << 13) != 0 {
                        if let Some(pid) = rd_u32(b, 8) {
                            self.maps.remove(&pid);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    /// The BUILD_ID feature's entries, in perf's order (that of its DSOs'
    /// creation: the kernel, then files as first mapped, the vDSO among
    /// them): the kernel and files sampled, or with `all` every file
    /// mapped; the vDSO always, as perf writes it hit or not.
    fn build_ids(&self, all: bool) -> Vec<DsoBuildId> {
        let mut out = Vec::new();
        if self.kernel_hit || all {
            if let Ok(Some(id)) = buildid::kernel_build_id() {
                out.push(DsoBuildId {
                    cpumode: synth::MISC_KERNEL,
                    build_id: id,
                    filename: "[kernel.kallsyms]".to_string(),
                });
            }
        }
        let vdso = || {
            buildid::vdso_build_id()
                .ok()
                .flatten()
                .map(|id| DsoBuildId {
                    cpumode: synth::MISC_USER,
                    build_id: id,
                    filename: "[vdso]".to_string(),
                })
        };
        let mut vdso_done = false;
        for (i, f) in self.files.iter().enumerate() {
            if f == "[vdso]" {
                out.extend(vdso());
                vdso_done = true;
                continue;
            }
            if f.starts_with('[') || !f.starts_with('/') || !(all || self.hit.contains(&i)) {
                continue;
            }
            if let Ok(Some(id)) = buildid::file_build_id(Path::new(f)) {
                out.push(DsoBuildId {
                    cpumode: synth::MISC_USER,
                    build_id: id,
                    filename: f.clone(),
                });
            }
        }
        if !vdso_done {
            out.extend(vdso());
        }
        out
    }
}

/// Where the records go: the file or pipe writer.
enum Writer {
    File(FileWriter<File>),
    Pipe(PipeWriter<BufWriter<io::Stdout>>),
}

impl Writer {
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Writer::File(w) => w.write_records(b),
            Writer::Pipe(w) => w.write_records(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Writer::File(w) => w.flush(),
            Writer::Pipe(w) => w.flush(),
        }
    }
    fn data_bytes(&self) -> u64 {
        match self {
            Writer::File(w) => w.data_size(),
            Writer::Pipe(w) => w.written(),
        }
    }
}

/// A [`Writer`], used directly or (perf's `--aio`) by a thread.
enum Sink {
    Direct(Writer),
    Async(AsyncSink),
}

impl Sink {
    /// With `aio` buffers (perf's `--aio=N`), `writer` used by a thread, up
    /// to that many writes behind.
    fn new(writer: Writer, aio: Option<usize>) -> io::Result<Sink> {
        match aio {
            Some(n) => AsyncSink::start(writer, n).map(Sink::Async),
            None => Ok(Sink::Direct(writer)),
        }
    }
    fn write(&mut self, b: &[u8]) -> io::Result<()> {
        match self {
            Sink::Direct(w) => w.write(b),
            Sink::Async(a) => a.send(Chunk::Records(b.to_vec())),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Sink::Direct(w) => w.flush(),
            Sink::Async(a) => a.send(Chunk::Flush),
        }
    }
    fn data_bytes(&self) -> u64 {
        match self {
            Sink::Direct(w) => w.data_bytes(),
            Sink::Async(a) => a.data_bytes,
        }
    }
    /// A file's features ahead of its end (see
    /// [`FileWriter::write_features_early`]); nothing for a pipe or --aio.
    fn write_features_early(
        &mut self,
        features: &[(prec_format::FeatureId, Vec<u8>)],
    ) -> io::Result<()> {
        match self {
            Sink::Direct(Writer::File(w)) => w.write_features_early(features),
            _ => Ok(()),
        }
    }
    /// The writer, once all writing is done.
    fn into_writer(self) -> io::Result<Writer> {
        match self {
            Sink::Direct(w) => Ok(w),
            Sink::Async(a) => a.finish(),
        }
    }
}

/// What [`AsyncSink`] hands its thread.
enum Chunk {
    Records(Vec<u8>),
    Flush,
}

/// perf's `--aio`: the data written by a thread while the rings are read;
/// at most `n` chunks wait for it.
struct AsyncSink {
    send: Option<std::sync::mpsc::SyncSender<Chunk>>,
    thread: Option<std::thread::JoinHandle<io::Result<Writer>>>,
    data_bytes: u64,
}

impl AsyncSink {
    fn start(mut writer: Writer, n: usize) -> io::Result<AsyncSink> {
        let data_bytes = writer.data_bytes();
        let (send, receive) = std::sync::mpsc::sync_channel::<Chunk>(n.max(1));
        let thread = std::thread::Builder::new()
            .name("prec-aio".into())
            .spawn(move || {
                for chunk in receive {
                    match chunk {
                        Chunk::Records(b) => writer.write(&b)?,
                        Chunk::Flush => writer.flush()?,
                    }
                }
                Ok(writer)
            })?;
        Ok(AsyncSink {
            send: Some(send),
            thread: Some(thread),
            data_bytes,
        })
    }

    fn send(&mut self, chunk: Chunk) -> io::Result<()> {
        let len = match &chunk {
            Chunk::Records(b) => b.len() as u64,
            Chunk::Flush => 0,
        };
        let sent = self.send.as_ref().is_some_and(|s| s.send(chunk).is_ok());
        if !sent {
            // The thread stopped at a write error: that error.
            return Err(match self.join() {
                Err(e) => e,
                Ok(_) => io::Error::other("the writing thread stopped"),
            });
        }
        self.data_bytes += len;
        Ok(())
    }

    fn join(&mut self) -> io::Result<Writer> {
        self.send = None;
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(io::Error::other("the writing thread panicked")),
            None => Err(io::Error::other("the writing thread already stopped")),
        }
    }

    fn finish(mut self) -> io::Result<Writer> {
        self.join()
    }
}

/// The output path with `.old` appended.
fn old_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".old");
    PathBuf::from(s)
}

/// perf's `check_backup`: a non-empty file or a directory (an earlier
/// `--threads` recording) at `path` moves to `PATH.old`, replacing an
/// earlier `.old`. Returns where it went.
fn move_to_old(path: &Path) -> Result<Option<PathBuf>, RecordError> {
    match std::fs::metadata(path) {
        Ok(m) if (m.is_file() && m.len() > 0) || m.is_dir() => {
            let old = old_path(path);
            if m.is_dir() || std::fs::symlink_metadata(&old).is_ok_and(|o| o.is_dir()) {
                remove_old(&old)?;
            }
            std::fs::rename(path, &old).map_err(|e| {
                RecordError(format!(
                    "cannot rename {} to {}: {}",
                    path.display(),
                    old.display(),
                    errno_name(&e)
                ))
            })?;
            Ok(Some(old))
        }
        _ => Ok(None),
    }
}

/// Creates the output file (mode 0600), moving what was there to `.old`
/// first (and back if creation fails).
fn create_output(path: &Path) -> Result<File, RecordError> {
    let moved = move_to_old(path)?;
    match OpenOptions::new()
        .write(true)
        .read(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
    {
        Ok(f) => Ok(f),
        Err(e) => {
            if let Some(old) = moved {
                let _ = std::fs::rename(&old, path);
            }
            err(format!(
                "cannot create output file {}: {}",
                path.display(),
                errno_name(&e)
            ))
        }
    }
}

/// The directory of cgroup `name` below the mount perf uses for cgroups
/// (see [`proc_synth::parse_cgroup_mount`]), opened for
/// `PERF_FLAG_PID_CGROUP`.
fn open_cgroup(name: &str) -> Result<File, RecordError> {
    let mount = std::fs::read_to_string("/proc/mounts")
        .ok()
        .and_then(|m| proc_synth::parse_cgroup_mount(&m))
        .ok_or_else(|| RecordError(format!("no access to cgroup {name}: no cgroup file system")))?;
    // perf's words, its double slash too.
    let path = format!("{mount}/{name}");
    File::open(&path)
        .map_err(|e| RecordError(format!("no access to cgroup {path} ({})", errno_name(&e))))
}

/// Pauses or resumes the writing into each ring, through the fd that owns
/// it (`--overwrite` rings are read paused).
fn pause_rings(fds: &[Vec<OwnedFd>], pause: bool) {
    for first in fds.iter().filter_map(|cpu_fds| cpu_fds.first()) {
        let _ = sys::ioc_pause_output(first.as_fd(), pause);
    }
}

/// One `data.N` file of a `--threads` directory: raw ring records, or
/// COMPRESSED records of its own zstd stream with `-z`.
struct DataFile {
    file: File,
    compressor: Option<Compressor>,
    zbuf: Vec<u8>,
    written: u64,
}

impl DataFile {
    fn create(path: &Path, compression_level: Option<u32>) -> Result<DataFile, RecordError> {
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(path)
            .map_err(|e| {
                RecordError(format!(
                    "cannot create output file {}: {}",
                    path.display(),
                    errno_name(&e)
                ))
            })?;
        Ok(DataFile {
            file,
            compressor: compression_level.map(Compressor::new),
            zbuf: Vec::new(),
            written: 0,
        })
    }

    /// Writes at once (no buffer), so that a killed recording leaves every
    /// record it read.
    fn write(&mut self, records: &[u8]) -> io::Result<()> {
        let bytes = match &mut self.compressor {
            Some(c) => {
                self.zbuf.clear();
                c.compress(records, &mut self.zbuf);
                &self.zbuf[..]
            }
            None => records,
        };
        self.file.write_all(bytes)?;
        self.written += bytes.len() as u64;
        Ok(())
    }
}

/// Creates a `--threads` output directory (mode 0700), moving an existing
/// file or directory to `.old` first as perf does, and its header file.
fn create_output_dir(path: &Path) -> Result<File, RecordError> {
    move_to_old(path)?;
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| {
            RecordError(format!(
                "cannot create output directory {}: {}",
                path.display(),
                errno_name(&e)
            ))
        })?;
    create_output(&path.join("data"))
}

/// Removes a previous `.old` output: a file, or a directory holding only
/// perf.data files (perf's `rm_rf_perf_data`), never anything else.
fn remove_old(old: &Path) -> Result<(), RecordError> {
    let Ok(meta) = std::fs::symlink_metadata(old) else {
        return Ok(());
    };
    let refuse =
        |what: &str| RecordError(format!("Can't remove old data: {what} ({})", old.display()));
    if !meta.is_dir() {
        return std::fs::remove_file(old).map_err(|e| refuse(&errno_name(&e)));
    }
    let entries = std::fs::read_dir(old).map_err(|e| refuse(&errno_name(&e)))?;
    for entry in entries {
        let entry = entry.map_err(|e| refuse(&errno_name(&e)))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let is_data = name == "data" || name.starts_with("data.");
        if !is_data || !entry.file_type().is_ok_and(|t| t.is_file()) {
            return Err(refuse("Unknown file found"));
        }
        std::fs::remove_file(entry.path()).map_err(|e| refuse(&errno_name(&e)))?;
    }
    std::fs::remove_dir(old).map_err(|e| refuse(&errno_name(&e)))
}

/// Runs a whole recording.
pub fn record(cfg: &RecordConfig) -> Result<RecordOutcome, RecordError> {
    // 1. Targets. The user's processes are listed before the workload
    // starts, as perf builds its thread map first: a workload is only the
    // duration.
    // Opened first: a wrong --control fails before anything runs.
    let mut control = match &cfg.modes.control {
        Some(spec) => Some(Control::open(spec).map_err(RecordError)?),
        None => None,
    };
    let user_pids = match cfg.uid {
        Some(uid) => {
            let me = std::process::id() as i32;
            let mut pids = proc_synth::processes_of_user(uid)
                .map_err(|e| RecordError(format!("cannot list /proc: {e}")))?;
            pids.retain(|&p| p != me);
            if pids.is_empty() {
                return err(format!(
                    "no process of uid {uid} is running: -u records the processes the user runs when recording starts"
                ));
            }
            pids
        }
        None => Vec::new(),
    };
    let mut child: Option<SuspendedChild> = None;
    if !cfg.command.is_empty() {
        let to_stdout = matches!(cfg.output, Output::Stdout);
        child = Some(
            launch::Launched::spawn_with(&cfg.command, to_stdout)
                .map_err(|e| RecordError(e.to_string()))?,
        );
    } else if cfg.pids.is_empty() && cfg.tids.is_empty() && user_pids.is_empty() && !cfg.system_wide
    {
        return err("no command given (use -- CMD, -p PID, -t TID or -a)");
    }
    // As perf: after the workload's fork (it keeps the usual policy),
    // before any file is written.
    if let Some(priority) = cfg.modes.realtime {
        sys::set_fifo_priority(priority).map_err(|e| {
            RecordError(format!(
                "Could not set realtime priority {priority}: {e} (SCHED_FIFO needs root or \
                 CAP_SYS_NICE, and a priority from 1 to 99)"
            ))
        })?;
    }
    // (pid of each open, tgid for synthesis)
    let mut threads: Vec<i32> = Vec::new();
    let mut procs: Vec<i32> = Vec::new();
    let on_child =
        !cfg.system_wide && cfg.pids.is_empty() && cfg.tids.is_empty() && user_pids.is_empty();
    if cfg.system_wide {
        threads.push(-1);
    } else if on_child {
        if let Some(c) = &child {
            threads.push(c.pid());
        }
    } else {
        for &p in &cfg.pids {
            let t =
                proc_synth::threads(p).map_err(|_| RecordError(format!("no such process: {p}")))?;
            threads.extend(t);
            procs.push(p);
        }
        // A process of the user may have ended since it was listed.
        for &p in &user_pids {
            if let Ok(t) = proc_synth::threads(p) {
                threads.extend(t);
                procs.push(p);
            }
        }
        for &t in &cfg.tids {
            if !Path::new(&format!("/proc/{t}")).exists() {
                return err(format!("no such thread: {t}"));
            }
            threads.push(t);
        }
    }
    // --per-thread: one fd per thread on any CPU (u32::MAX stands for -1),
    // and a ring per thread.
    let per_thread = cfg.modes.per_thread && !cfg.system_wide;
    let cpus: Vec<u32> = match (&cfg.cpus, cfg.system_wide) {
        _ if per_thread => vec![ANY_CPU],
        (Some(c), _) => c.clone(),
        _ => sys::online_cpus()?,
    };
    let online = sys::online_cpus()?;
    for c in &cpus {
        if *c != ANY_CPU && !online.contains(c) {
            return err(format!("CPU {c} is not online"));
        }
    }

    // 2. Events.
    let paranoid = sysinfo::perf_event_paranoid().unwrap_or(2);
    let is_root = sys_geteuid_is_root();
    let specs = if cfg.events.is_empty() {
        // perf's evsel__new_cycles: the default event leaves the kernel out
        // from the start when the user may not profile it (so, unlike an
        // event that falls back, it keeps the hypervisor).
        let cpuid = sysinfo::cpuid().ok().flatten();
        let mut default = EventSpec::default_event_for(cpuid.as_deref());
        default.exclude_kernel = !is_root && paranoid > 1;
        if default.exclude_kernel {
            note(
                cfg.quiet,
                &format!(
                    "Note: kernel.perf_event_paranoid={paranoid}: recording user space only \
                     (profiling the kernel needs root, or a setting of 1 or less)"
                ),
            );
        }
        vec![default]
    } else {
        cfg.events.clone()
    };
    // Events follow the launched workload (enable_on_exec) only when it is
    // the target; with -p/-t/-a the command just sets the duration.
    let launching = child.is_some() && on_child;
    // A dummy event does the tracking system-wide and while -D delays the
    // real events.
    let use_dummy = cfg.system_wide || cfg.modes.delay.is_some();
    let sid = {
        let mut types: Vec<u64> = specs
            .iter()
            .enumerate()
            .map(|(i, s)| {
                build_attr(s, &specs, cfg, !use_dummy && i == 0, 0, launching).sample_type
            })
            .collect();
        if use_dummy {
            types.push(dummy_attr(cfg, 0, launching).sample_type);
        }
        sample_id_bit(&types, cfg)
    };
    let mut opener = Opener {
        cfg,
        paranoid: if is_root { -1 } else { paranoid },
        said_kernel: false,
    };
    let mut events: Vec<OpenEvent> = Vec::new();
    // (id, event index, cpu, tid) for ID_INDEX.
    let mut id_index: Vec<[u64; 4]> = Vec::new();
    // fds[cpu_index] = all fds on that CPU in open order (per thread with
    // --per-thread).
    let ngroups = if per_thread {
        threads.len()
    } else {
        cpus.len()
    };
    let mut fds: Vec<Vec<OwnedFd>> = (0..ngroups).map(|_| Vec::new()).collect();
    let cpu_id = |c: u32| {
        if c == ANY_CPU {
            u64::MAX
        } else {
            u64::from(c)
        }
    };
    // Where each event's fd of each (CPU, thread) went in `fds`, for the
    // members of a group to name their leader's.
    let mut fd_slots: Vec<Vec<Option<(usize, usize)>>> = Vec::new();
    let mut all_specs: Vec<Option<EventSpec>> = specs.iter().cloned().map(Some).collect();
    if use_dummy {
        all_specs.push(None); // dummy
    }
    for (ei, spec) in all_specs.iter().enumerate() {
        let tracking = if use_dummy { spec.is_none() } else { ei == 0 };
        let mut ids = Vec::new();
        let leader = spec
            .as_ref()
            .filter(|s| s.group_member)
            .and_then(|s| s.group_leader);
        let mut slots = vec![None; cpus.len() * threads.len()];
        // -G: the event counts in a cgroup, whose directory's fd takes the
        // pid's place (perf's open_cgroup).
        let cgroup_fd = match spec.as_ref().and_then(|s| s.cgroup.as_deref()) {
            Some(name) => Some(open_cgroup(name)?),
            None => None,
        };
        let target_of = |tid: i32| match &cgroup_fd {
            Some(fd) => (fd.as_raw_fd(), sys::PERF_FLAG_PID_CGROUP),
            None => (tid, 0),
        };
        let (name, attr) = match spec {
            Some(spec) => {
                let make = |s: &EventSpec| build_attr(s, &specs, cfg, tracking, sid, launching);
                let group_fd = leader.and_then(|l| {
                    let (g, k) = (*fd_slots.get(l)?.first()?)?;
                    Some(fds[g][k].as_fd())
                });
                let (pid, flags) = target_of(threads[0]);
                let (fd, attr, name) =
                    opener.open_first(spec, &make, pid, cpus[0] as i32, group_fd, flags)?;
                ids.push(sys::ioc_id(fd.as_fd())?);
                id_index.push([ids[0], ei as u64, cpu_id(cpus[0]), threads[0] as u64]);
                slots[0] = Some((0, fds[0].len()));
                fds[0].push(fd);
                (name, attr)
            }
            None => {
                let mut attr = dummy_attr(cfg, sid, launching);
                let fd = sys::perf_event_open(&mut attr, threads[0], cpus[0] as i32, None, 0)
                    .map_err(|e| open_error("dummy:HG", &e, threads[0], paranoid))?;
                ids.push(sys::ioc_id(fd.as_fd())?);
                id_index.push([ids[0], ei as u64, cpu_id(cpus[0]), threads[0] as u64]);
                slots[0] = Some((0, fds[0].len()));
                fds[0].push(fd);
                ("dummy:HG".to_string(), attr)
            }
        };
        for (ci, &cpu) in cpus.iter().enumerate() {
            for (ti, &tid) in threads.iter().enumerate() {
                if ci == 0 && ti == 0 {
                    continue;
                }
                let mut a = attr;
                let pos = ci * threads.len() + ti;
                let group_fd = leader.and_then(|l| {
                    let (g, k) = (*fd_slots.get(l)?.get(pos)?)?;
                    Some(fds[g][k].as_fd())
                });
                let (pid, flags) = target_of(tid);
                match sys::perf_event_open(&mut a, pid, cpu as i32, group_fd, flags) {
                    Ok(fd) => {
                        let id = sys::ioc_id(fd.as_fd())?;
                        ids.push(id);
                        id_index.push([id, ei as u64, cpu_id(cpu), tid as u64]);
                        let g = if per_thread { ti } else { ci };
                        slots[pos] = Some((g, fds[g].len()));
                        fds[g].push(fd);
                    }
                    // A thread of -p that exited meanwhile.
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) && tid > 0 && !launching => {}
                    Err(e) => return Err(open_error(&name, &e, tid, paranoid)),
                }
            }
        }
        fd_slots.push(slots);
        let clock = spec.as_ref().is_some_and(EventSpec::is_clock);
        events.push(OpenEvent {
            name,
            attr,
            ids,
            clock,
        });
    }
    // perf's evlist__apply_filters, on every fd of a filtered event.
    for (spec, slots) in specs.iter().zip(&fd_slots) {
        let Some(filter) = &spec.filter else {
            continue;
        };
        let text = std::ffi::CString::new(filter.as_str())
            .map_err(|_| RecordError(format!("--filter {filter:?} contains a NUL byte")))?;
        for &(g, k) in slots.iter().flatten() {
            sys::ioc_set_filter(fds[g][k].as_fd(), &text).map_err(|e| {
                RecordError(format!(
                    "failed to set filter \"{filter}\" on event {} with {} ({})",
                    spec.name,
                    e.raw_os_error().unwrap_or(0),
                    errno_name(&e)
                ))
            })?;
        }
    }
    // Rings: first fd of each CPU owns it.
    let mut rings: Vec<(RingBuffer, i32)> = Vec::new();
    // Per ring, where --affinity reads it.
    let mut ring_masks: Vec<Option<Vec<u32>>> = Vec::new();
    let mut ring_cpus: Vec<u32> = Vec::new();
    for (i, cpu_fds) in fds.iter().enumerate() {
        let Some(first) = cpu_fds.first() else {
            continue;
        };
        let cpu = if per_thread { ANY_CPU } else { cpus[i] };
        ring_masks.push(affinity_mask(cfg.modes.affinity, cpu));
        ring_cpus.push(cpu);
        let rb = if cfg.modes.overwrite {
            RingBuffer::new_overwrite(first.as_fd(), cfg.mmap_pages)
        } else {
            RingBuffer::new(first.as_fd(), cfg.mmap_pages)
        };
        let rb = rb.map_err(|e| {
            RecordError(format!(
                "failed to mmap the ring buffer ({} pages): {}{}",
                cfg.mmap_pages,
                errno_name(&e),
                if e.raw_os_error() == Some(libc::EPERM) {
                    "\nHint: /proc/sys/kernel/perf_event_mlock_kb limits the ring size; try a smaller -m"
                } else {
                    ""
                }
            ))
        })?;
        for other in &cpu_fds[1..] {
            sys::ioc_set_output(other.as_fd(), Some(first.as_fd()))?;
        }
        rings.push((rb, first.as_raw_fd()));
    }

    // --threads: ring i's records go to data.i. prec reads every ring
    // from this thread; the spec is checked as perf checks it.
    let parallel = cfg.modes.threads.is_some();
    if let Some(spec) = &cfg.modes.threads {
        crate::parallel::check_spec(spec, &ring_cpus).map_err(|e| {
            RecordError(format!(
                "{e}\nFailed to initialize parallel data streaming masks"
            ))
        })?;
    }

    let fattrs: Vec<Attr> = events
        .iter()
        .map(|e| Attr::from_bytes(&e.attr.as_bytes(), Endian::NATIVE, 128))
        .collect();
    let event_infos: Vec<EventInfo> = events
        .iter()
        .zip(&fattrs)
        .map(|(e, a)| EventInfo {
            attr: a.clone(),
            name: e.name.clone(),
            ids: e.ids.clone(),
        })
        .collect();
    let writer_attrs: Vec<EventAttr> = events
        .iter()
        .zip(&fattrs)
        .map(|(e, a)| EventAttr {
            attr: a.clone(),
            ids: e.ids.clone(),
        })
        .collect();

    // 3. Output.
    let mut host = features::host_features();
    let groups: Vec<prec_format::features::GroupDesc> = specs
        .iter()
        .enumerate()
        .filter(|(i, s)| s.group_leader == Some(*i))
        .map(|(i, _)| prec_format::features::GroupDesc {
            name: "{anon_group}".to_string(),
            leader_idx: i as u32,
            nr_members: specs.iter().filter(|s| s.group_leader == Some(i)).count() as u32,
        })
        .collect();
    if !groups.is_empty() {
        host.push(prec_format::features::Feature::GroupDesc(groups));
    }
    let tracepoints: Vec<tracefs::Tracepoint> = specs
        .iter()
        .filter(|s| s.type_ == perf_type::TRACEPOINT)
        .filter_map(|s| {
            let (system, name) = s.tracepoint.clone()?;
            Some(tracefs::Tracepoint {
                system,
                name,
                id: s.config,
            })
        })
        .collect();
    let tracing_data = if tracepoints.is_empty() {
        None
    } else {
        let files = tracefs::tracing_files(&tracepoints)
            .map_err(|e| RecordError(format!("tracing data: {e}")))?;
        Some(prec_format::tracing::encode(&files))
    };
    // (A pipe gets it as a record instead, after the features.)
    if let (Some(bytes), Output::File(_)) = (&tracing_data, &cfg.output) {
        host.push(prec_format::features::Feature::Raw {
            id: prec_format::FeatureId::TRACING_DATA,
            bytes: bytes.clone(),
        });
    }
    if let Some((id, res)) = cfg.modes.clockid {
        host.extend(features::clock_features(id, res));
    }
    let mut comp = cfg.modes.compression_level.map(Compressor::new);
    if let Some(c) = &comp {
        host.push(prec_format::features::Feature::Compressed(
            prec_format::features::Compressed {
                version: 0,
                type_: 1,
                level: c.level,
                ratio: 0,
                mmap_len: ((cfg.mmap_pages + 1) * sys::page_size()) as u32,
            },
        ));
    }
    let mut data_files: Vec<DataFile> = Vec::new();
    if parallel {
        host.push(prec_format::features::Feature::DirFormat(1));
    }
    let sink = match &cfg.output {
        Output::File(p) if parallel => {
            let f = create_output_dir(p)?;
            for n in 0..rings.len() {
                let path = p.join(format!("data.{n}"));
                data_files.push(DataFile::create(&path, cfg.modes.compression_level)?);
            }
            Writer::File(FileWriter::new(f, Endian::NATIVE, &writer_attrs)?)
        }
        Output::File(p) => {
            let f = create_output(p)?;
            Writer::File(FileWriter::new(f, Endian::NATIVE, &writer_attrs)?)
        }
        Output::Stdout => {
            let out = BufWriter::with_capacity(1 << 16, io::stdout());
            let mut w = PipeWriter::new(out, Endian::NATIVE, &writer_attrs)?;
            w.write_features(&features::pipe_features(
                &host,
                &cfg.cmdline,
                &event_infos,
                Endian::NATIVE,
            ))?;
            if let Some(bytes) = &tracing_data {
                w.write_tracing_data(bytes)?;
            }
            Writer::Pipe(w)
        }
    };
    let mut sink = Sink::new(sink, cfg.modes.aio)?;

    // Prologue.
    let first = &fattrs[0];
    let syn = Synth {
        trailer: first.id_trailer_size(),
        buildid_mmap: cfg.modes.buildid_mmap,
    };
    let mut tracker = Tracker {
        ip_off: if first.sample_type & sample::IDENTIFIER != 0 {
            16
        } else {
            8
        },
        no_time: first.sample_type & sample::TIME == 0,
        read: ReadLayout::of(first).filter(|_| {
            fattrs
                .iter()
                .all(|a| a.sample_type == first.sample_type && a.read_format == first.read_format)
        }),
        ..Default::default()
    };
    let kernel_possible = events
        .iter()
        .any(|e| !e.attr.has_flag(flags::EXCLUDE_KERNEL));
    // What every file starts with (the first, and each --switch-output
    // one): the id index and the kernel's and modules' maps.
    let start_file = |pro: &mut Vec<u8>| {
        synth::id_index(pro, &id_index);
        if kernel_possible {
            if let Ok(k) = proc_synth::kernel_text() {
                if k.text != 0 {
                    syn.kernel_mmap(pro, &k);
                    for m in proc_synth::modules().unwrap_or_default() {
                        if m.addr != 0 && m.size != 0 {
                            syn.module_mmap(pro, &m.name, m.addr, m.size);
                        }
                    }
                }
            }
        }
    };
    // --all-cgroups: the cgroups that exist, after the CPU map (perf's
    // perf_event__synthesize_cgroups).
    let synth_cgroups = |pro: &mut Vec<u8>| {
        if cfg.modes.all_cgroups {
            for (id, path) in proc_synth::cgroups() {
                syn.cgroup(pro, id, &path);
            }
        }
    };
    // perf_event__synthesize_extra_attr, as perf record's
    // record__synthesize calls it after the kernel's maps (at the tail with
    // --tail-synthesize): a clock event's unit and scale, and in a pipe
    // every event's name (file mode has them in EVENT_DESC).
    let pipe = cfg.output == Output::Stdout;
    let event_updates = |pro: &mut Vec<u8>| {
        for e in &events {
            let Some(&id) = e.ids.first() else {
                continue;
            };
            if e.clock {
                synth::event_update(pro, synth::event_update::UNIT, id, b"msec\0");
                synth::event_update(pro, synth::event_update::SCALE, id, &1e-6f64.to_ne_bytes());
            }
            if pipe {
                let mut name = e.name.clone().into_bytes();
                name.push(0);
                synth::event_update(pro, synth::event_update::NAME, id, &name);
            }
        }
    };
    let tail = cfg.modes.tail_synthesize;
    let mut pro = Vec::with_capacity(4096);
    if !tail {
        start_file(&mut pro);
        event_updates(&mut pro);
    }
    // perf's perf_event__synthesize_mmap_events: the maps read in time,
    // then the line read when the time ran out, marked (perf report
    // counts such marks), and a warning. False when the maps could not be
    // read (a process of another user namespace).
    let synth_maps = |pro: &mut Vec<u8>, pid: i32| -> bool {
        let timeout = cfg.modes.proc_map_timeout;
        let timeout = timeout.unwrap_or(Duration::from_millis(500));
        let Ok((maps, cut)) = proc_synth::exec_maps_within(pid, Some(timeout)) else {
            return false;
        };
        for m in &maps {
            syn.mmap2(pro, pid, pid, m);
        }
        if let Some(m) = cut {
            note(
                cfg.quiet,
                &format!(
                    "Reading /proc/{pid}/task/{pid}/maps time out. You may want to \
                     increase the time limit by --proc-map-timeout"
                ),
            );
            let mark = prec_format::constants::misc::PROC_MAP_PARSE_TIMEOUT;
            syn.mmap2_marked(pro, pid, pid, &m, mark);
        }
        true
    };
    // perf's __event__synthesize_thread, thread by thread: with all of
    // /proc (`full`) a FORK first (the main thread's from its parent, the
    // others' from the main one), NAMESPACES (--namespaces) and COMM in
    // perf's order for the mode, and at the main thread the process's maps.
    // A lone thread of a process (-t) brings its main thread along.
    let synth_proc = |pro: &mut Vec<u8>, pid: i32, only_tid: Option<i32>, full: bool| {
        if cfg.modes.no_synth_tasks {
            return;
        }
        let mut tids = match only_tid {
            Some(t) => vec![t],
            None => proc_synth::threads(pid).unwrap_or_default(),
        };
        if only_tid.is_some_and(|t| t != pid) {
            tids.push(pid);
        }
        let ppid = match full {
            true => proc_synth::proc_status(pid).map_or(0, |s| s.ppid),
            false => 0,
        };
        for &t in &tids {
            // Threads that ended since the scan are left out.
            let Ok(comm) = proc_synth::thread_comm(pid, t) else {
                continue;
            };
            if full {
                match t == pid {
                    true => syn.fork(pro, pid, ppid, pid, ppid),
                    false => syn.fork(pro, pid, pid, t, pid),
                }
                if cfg.modes.namespaces {
                    syn.namespaces(pro, pid, t);
                }
                syn.comm(pro, pid, t, &comm, false);
            } else {
                syn.comm(pro, pid, t, &comm, false);
                if cfg.modes.namespaces {
                    syn.namespaces(pro, pid, t);
                }
            }
            // perf stops at a process whose maps it cannot read: its
            // other threads go unsaid.
            if t == pid && !cfg.modes.no_synth_mmaps && !synth_maps(pro, pid) && full {
                break;
            }
        }
    };
    let thread_names: Vec<(i32, String)> = threads
        .iter()
        .map(|&t| {
            let comm = if t > 0 && !launching {
                proc_synth::proc_status(t)
                    .map(|s| s.name)
                    .unwrap_or_default()
            } else {
                String::new()
            };
            (t, comm)
        })
        .collect();
    if !tail {
        synth::thread_map(&mut pro, &thread_names);
        synth::cpu_map(&mut pro, &cpus);
        synth_cgroups(&mut pro);
    }
    // The tasks of the targets, from /proc: every process system-wide, the
    // running `workload` (after a --switch-output), or the -p/-t ones.
    let synth_targets = |pro: &mut Vec<u8>, workload: Option<i32>| {
        if cfg.system_wide {
            for pid in proc_synth::all_pids().unwrap_or_default() {
                synth_proc(pro, pid, None, true);
            }
        } else if let Some(pid) = workload {
            synth_proc(pro, pid, None, false);
        } else if !launching {
            for &p in &procs {
                synth_proc(pro, p, None, false);
            }
            for &t in &cfg.tids {
                let tgid = proc_synth::proc_status(t).map(|s| s.tgid).unwrap_or(t);
                synth_proc(pro, tgid, Some(t), false);
            }
        }
    };
    // perf names its workload child `perf-exec` until the exec, whatever
    // --synth says (system-wide too), after the targets.
    let synth_child = |pro: &mut Vec<u8>| {
        if let Some(c) = child.as_ref() {
            syn.comm(pro, c.pid(), c.pid(), "perf-exec", false);
            if cfg.modes.namespaces {
                syn.namespaces(pro, c.pid(), c.pid());
            }
        }
    };
    if !tail {
        synth_targets(&mut pro, None);
        synth_child(&mut pro);
        synth::bare(&mut pro, synth::PERF_RECORD_FINISHED_INIT);
    } else {
        synth_child(&mut pro);
    }
    tracker.scan(&pro);
    sink.write(&pro)?;
    sink.flush()?;
    if parallel {
        // The header file's data is complete: its features (DIR_FORMAT
        // above all) now, so that a killed recording's directory reads.
        let facts = RecordingFacts {
            cmdline: cfg.cmdline.clone(),
            events: event_infos.to_vec(),
            sample_time: None,
            build_ids: Vec::new(),
        };
        let early = features::file_features(&host, &facts, Endian::NATIVE);
        sink.write_features_early(&early)?;
    }
    // The workload as perf's record__synthesize_workload makes it up: its
    // main thread's COMM (once reaped, the last one it had: perf reads a
    // zombie's) and maps.
    let synth_workload = |pro: &mut Vec<u8>, pid: i32, last_comm: Option<&str>| {
        let comm = proc_synth::thread_comm(pid, pid).ok();
        if let Some(c) = comm.as_deref().or(last_comm) {
            syn.comm(pro, pid, pid, c, false);
        }
        if !cfg.modes.no_synth_mmaps {
            synth_maps(pro, pid);
        }
    };
    // --tail-synthesize: what a file did not start with ends it, in perf's
    // order: FINISHED_INIT, at exit the workload's task, record__synthesize's
    // records, at a switch the workload's task.
    // The workload, whose task a file gets made up after the start (a
    // command beside -p/-t only times the recording).
    let workload = child.as_ref().map(|c| c.pid()).filter(|_| launching);
    let write_tail = |sink: &mut Sink, tracker: &mut Tracker, at_exit: bool| {
        let comm = workload.and_then(|pid| tracker.comm(pid));
        let mut pro = Vec::with_capacity(4096);
        synth::bare(&mut pro, synth::PERF_RECORD_FINISHED_INIT);
        if let (Some(pid), true) = (workload, at_exit) {
            synth_workload(&mut pro, pid, comm);
        }
        start_file(&mut pro);
        event_updates(&mut pro);
        synth::thread_map(&mut pro, &thread_names);
        synth::cpu_map(&mut pro, &cpus);
        synth_cgroups(&mut pro);
        synth_targets(&mut pro, None);
        if let (Some(pid), false) = (workload, at_exit) {
            synth_workload(&mut pro, pid, comm);
        }
        tracker.scan(&pro);
        sink.write(&pro)
    };

    // perf's side-band evlist of --switch-output-event: counted on every
    // CPU, a record in any of their rings asks for a switch. perf parses
    // them without a period: only tracepoints (period 1) ever sample.
    let mut switch_rings: Vec<(RingBuffer, OwnedFd)> = Vec::new();
    for spec in &cfg.modes.switch_output_events {
        for &cpu in &online {
            let mut attr = PerfEventAttr::new(spec.type_, spec.config);
            attr.sample_period_or_freq = u64::from(spec.type_ == perf_type::TRACEPOINT);
            attr.sample_type = sample::IP | sample::TID | sample::TIME;
            attr.set_flag(flags::SAMPLE_ID_ALL | flags::WATERMARK, true);
            attr.wakeup_events = 1;
            let fd = sys::perf_event_open(&mut attr, -1, cpu as i32, None, 0).map_err(|e| {
                RecordError(format!(
                    "cannot open --switch-output-event {} on CPU {cpu}: {e} (it counts system-wide)",
                    spec.name
                ))
            })?;
            let ring = RingBuffer::new(fd.as_fd(), 1)
                .map_err(|e| RecordError(format!("cannot map the ring of {}: {e}", spec.name)))?;
            switch_rings.push((ring, fd));
        }
    }
    // Enable and start.
    launch::install_signal_forwarding()?;
    // The events' fds, each (group, index) into `fds`; the dummy last.
    let event_fds = |event: usize| {
        fd_slots[event]
            .iter()
            .flatten()
            .map(|&(g, k)| fds[g][k].as_fd())
    };
    let set_events = |which: &dyn Fn(usize) -> bool, enable: bool| {
        for event in (0..events.len()).filter(|&e| which(e)) {
            for fd in event_fds(event) {
                let _ = if enable {
                    sys::ioc_enable(fd)
                } else {
                    sys::ioc_disable(fd)
                };
            }
        }
    };
    if !launching && cfg.modes.delay.is_none() {
        set_events(&|_| true, true);
    }
    let mut running: Option<RunningChild> = None;
    if let Some(c) = child.take() {
        let pid = c.pid();
        launch::set_forward_pid(pid);
        match c.start() {
            Ok(r) => running = Some(r),
            Err(e) => {
                launch::set_forward_pid(0);
                // Leave a valid (empty) file behind, like perf.
                finish_sink(sink, &host, cfg, &event_infos, &tracker)?;
                return Err(RecordError(e.to_string()));
            }
        }
    }

    // 4. Drain.
    let mut pollfds: Vec<sys::PollFd> = rings
        .iter()
        .map(|(_, fd)| sys::PollFd {
            fd: *fd,
            revents: 0,
        })
        .collect();
    // Then the control fd, then the --switch-output-event rings (their
    // records wake the loop at once, as perf's signal does).
    let control_slot = rings.len();
    if let Some(c) = &control {
        pollfds.push(sys::PollFd {
            fd: c.poll_fd().unwrap_or(-1),
            revents: 0,
        });
    }
    for (_, fd) in &switch_rings {
        pollfds.push(sys::PollFd {
            fd: fd.as_raw_fd(),
            revents: 0,
        });
    }
    let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
    let mut last_flush = Instant::now();
    let mut wakeups = 0u64;
    let mut exit: Option<ExitStatus> = None;
    let mut zbuf: Vec<u8> = Vec::new();
    let mut current_mask: Option<Vec<u32>> = None;
    // What the --threads data files hold so far.
    let parallel_bytes = std::cell::Cell::new(0u64);
    let mut drain = |rings: &mut Vec<(RingBuffer, i32)>,
                     sink: &mut Sink,
                     tracker: &mut Tracker,
                     buf: &mut Vec<u8>,
                     last: bool|
     -> io::Result<bool> {
        buf.clear();
        let mut held_back = false;
        let mut wrote_parallel = false;
        // An overwritable ring is read only when stopped: at the end and
        // at a switch.
        let read_ring = |rb: &mut RingBuffer, buf: &mut Vec<u8>| {
            if cfg.modes.overwrite {
                if last {
                    rb.read_overwritten(buf);
                }
            } else {
                rb.read_available(buf);
            }
        };
        for (i, (rb, _)) in rings.iter_mut().enumerate() {
            // perf's --mmap-flush (record__mmap_flush_parse caps it).
            let flush = cfg.modes.mmap_flush.unwrap_or(1);
            if !last && rb.available() < flush.clamp(1, rb.data_size() / 4) {
                held_back |= rb.available() > 0;
                continue;
            }
            // perf's record__adjust_affinity: only when the mask changes;
            // a refusal (a CPU outside the allowed ones) leaves it as it was.
            if let Some(mask) = ring_masks.get(i).and_then(Option::as_ref) {
                if current_mask.as_ref() != Some(mask) {
                    let _ = sys::set_affinity(mask);
                    current_mask = Some(mask.clone());
                }
            }
            if parallel {
                // Parallel streaming: the ring's own records, to its
                // own file, without rounds (each file is in time
                // order already; readers merge them).
                let start = buf.len();
                read_ring(rb, buf);
                if buf.len() > start {
                    tracker.scan(&buf[start..]);
                    let file = &mut data_files[i];
                    let before = file.written;
                    file.write(&buf[start..])?;
                    parallel_bytes.set(parallel_bytes.get() + file.written - before);
                    wrote_parallel = true;
                }
                buf.truncate(start);
                continue;
            }
            read_ring(rb, buf);
        }
        if parallel {
            return Ok(wrote_parallel);
        }
        if buf.is_empty() {
            return Ok(false);
        }
        tracker.scan(buf);
        if let Some(c) = comp.as_mut() {
            zbuf.clear();
            c.compress(buf, &mut zbuf);
            sink.write(&zbuf)?;
            buf.clear();
        }
        // The records made up at a file's end (--tail-synthesize) have no
        // time: a reader that flushed earlier rounds would have resolved
        // their samples without them (perf's own such files lose kernel
        // samples that way). Without rounds readers sort the whole file.
        // Nor while a ring holds records back (--mmap-flush): they may be
        // older than what this round has, and a reader flushing the round
        // would meet them out of order (perf writes the round anyway).
        // perf ends an --overwrite read with a round too: the whole read is
        // one, whose flush waits for the end.
        if (!tail || cfg.modes.overwrite) && !held_back {
            synth::bare(buf, synth::PERF_RECORD_FINISHED_ROUND);
            tracker.records += 1;
        }
        sink.write(buf)?;
        Ok(true)
    };
    // On a write error (disk full, closed pipe) the workload is stopped
    // rather than left running unobserved.
    let started = Instant::now();
    let mut toggles: std::collections::VecDeque<(Instant, Toggle)> = match &cfg.modes.delay {
        None | Some(Delay::UntilEnabled) => Default::default(),
        Some(Delay::After(ms)) => {
            [(started + Duration::from_millis(*ms), Toggle::EnableAll)].into()
        }
        Some(Delay::Windows(windows)) => {
            let at = |ms: u64| started + Duration::from_millis(ms);
            let mut plan = Vec::new();
            for (i, &(start, end)) in windows.iter().enumerate() {
                let on = if i == 0 {
                    Toggle::EnableAll
                } else {
                    Toggle::EnableNonDummy
                };
                let off = if i + 1 == windows.len() {
                    Toggle::DisableAndStop
                } else {
                    Toggle::DisableNonDummy
                };
                plan.push((at(start), on));
                plan.push((at(end), off));
            }
            plan.into()
        }
    };
    if cfg.modes.delay.is_some() {
        note(cfg.quiet, "Events disabled");
    }
    let dummy = use_dummy.then(|| events.len() - 1);
    let mut stop_requested = false;
    let mut last_switch = Instant::now();
    let mut switch_wakeups = 0u64;
    let mut dumps: Vec<PathBuf> = Vec::new();
    // Here, after the workload started: its SIGUSR2 stays its own.
    launch::install_switch_request(cfg.modes.switch_output.is_some())?;
    let loop_result = (|| -> Result<(), RecordError> {
        loop {
            drain(&mut rings, &mut sink, &mut tracker, &mut buf, false)?;
            while toggles.front().is_some_and(|&(t, _)| Instant::now() >= t) {
                let Some((_, toggle)) = toggles.pop_front() else {
                    break;
                };
                let not_dummy = |e: usize| Some(e) != dummy;
                match toggle {
                    Toggle::EnableAll => set_events(&|_| true, true),
                    Toggle::EnableNonDummy => set_events(&not_dummy, true),
                    Toggle::DisableNonDummy | Toggle::DisableAndStop => {
                        set_events(&not_dummy, false)
                    }
                }
                let enabled = matches!(toggle, Toggle::EnableAll | Toggle::EnableNonDummy);
                note(
                    cfg.quiet,
                    if enabled {
                        "Events enabled"
                    } else {
                        "Events disabled"
                    },
                );
                if toggle == Toggle::DisableAndStop {
                    stop_requested = true;
                }
            }
            if let Some(control) = control.as_mut() {
                let readable = pollfds
                    .get(control_slot)
                    .is_some_and(|p| p.fd >= 0 && p.revents & sys::pollbits::IN != 0);
                if readable {
                    for line in control.read_commands() {
                        let command = ControlCommand::parse(&line);
                        match &command {
                            ControlCommand::Enable(name) | ControlCommand::Disable(name) => {
                                let enable = matches!(command, ControlCommand::Enable(_));
                                let word = if enable { "enabled" } else { "disabled" };
                                match name {
                                    None => {
                                        set_events(&|_| true, enable);
                                        note(cfg.quiet, &format!("Events {word}"));
                                    }
                                    Some(name) => {
                                        match events.iter().position(|e| &e.name == name) {
                                            Some(e) => {
                                                set_events(&|i| i == e, enable);
                                                note(cfg.quiet, &format!("Event {name} {word}"));
                                            }
                                            None => note(
                                                cfg.quiet,
                                                &format!("failed: can't find '{name}' event"),
                                            ),
                                        }
                                    }
                                }
                            }
                            ControlCommand::Evlist(detail) => {
                                for e in &events {
                                    let line = match detail.as_deref() {
                                        Some("-F") if e.attr.has_flag(flags::FREQ) => {
                                            format!(
                                                "{}: sample_freq={}",
                                                e.name, e.attr.sample_period_or_freq
                                            )
                                        }
                                        Some("-F") => {
                                            format!(
                                                "{}: sample_period={}",
                                                e.name, e.attr.sample_period_or_freq
                                            )
                                        }
                                        _ => e.name.clone(),
                                    };
                                    note(cfg.quiet, &line);
                                }
                            }
                            ControlCommand::Malformed => note(cfg.quiet, "failed: wrong command"),
                            ControlCommand::Stop => stop_requested = true,
                            ControlCommand::Snapshot
                            | ControlCommand::Ping
                            | ControlCommand::Unsupported => {}
                        }
                        if command.is_acked() {
                            let _ = control.ack();
                        }
                    }
                }
                if let Some(p) = pollfds.get_mut(control_slot) {
                    p.fd = control.poll_fd().unwrap_or(-1);
                }
            }
            if stop_requested {
                if let Some(r) = running.as_mut() {
                    let _ = r.kill(libc::SIGTERM);
                    exit = Some(r.wait()?);
                }
                break;
            }
            // SIGUSR2 switches in every mode, as in perf.
            let mut event_switch = false;
            for (ring, _) in switch_rings.iter_mut() {
                if ring.available() > 0 {
                    let mut seen = Vec::new();
                    ring.read_available(&mut seen);
                    event_switch = true;
                }
            }
            let switch_now = launch::take_switch_request()
                || event_switch
                || match cfg.modes.switch_output {
                    Some(SwitchOutput::Size(size)) => sink.data_bytes() >= size,
                    Some(SwitchOutput::Time(every)) => last_switch.elapsed() >= every,
                    Some(SwitchOutput::Signal) | None => false,
                };
            if let (true, Output::File(path)) = (switch_now, &cfg.output) {
                // perf's record__switch_output: the file so far is finished
                // and renamed NAME.TIMESTAMP, a new one starts at NAME with
                // the kernel's maps and the targets' tasks made up again.
                // What --mmap-flush left in the rings belongs to this file,
                // and what --overwrite rings hold, read while paused.
                if cfg.modes.overwrite {
                    pause_rings(&fds, true);
                    drain(&mut rings, &mut sink, &mut tracker, &mut buf, true)?;
                    pause_rings(&fds, false);
                } else if cfg.modes.mmap_flush.is_some() {
                    drain(&mut rings, &mut sink, &mut tracker, &mut buf, true)?;
                }
                if tail {
                    write_tail(&mut sink, &mut tracker, false)?;
                }
                let dumped = stamped_name(path)?;
                std::fs::rename(path, &dumped).map_err(|e| {
                    RecordError(format!(
                        "cannot rename {} to {}: {e}",
                        path.display(),
                        dumped.display()
                    ))
                })?;
                let f = create_output(path)?;
                let next = Writer::File(FileWriter::new(f, Endian::NATIVE, &writer_attrs)?);
                let next = Sink::new(next, cfg.modes.aio)?;
                let done = std::mem::replace(&mut sink, next);
                finish_sink(done, &host, cfg, &event_infos, &tracker)?;
                note(
                    cfg.quiet,
                    &format!("[ prec record: dump data: Woken up {switch_wakeups} times ]"),
                );
                note(
                    cfg.quiet,
                    &format!("[ prec record: Dump {} ]", dumped.display()),
                );
                switch_wakeups = 0;
                dumps.push(dumped);
                if cfg.modes.switch_max_files > 0 && dumps.len() > cfg.modes.switch_max_files {
                    let _ = std::fs::remove_file(dumps.remove(0));
                }
                tracker.new_file();
                if !tail {
                    let mut pro = Vec::with_capacity(4096);
                    start_file(&mut pro);
                    synth::thread_map(&mut pro, &thread_names);
                    synth::cpu_map(&mut pro, &cpus);
                    synth_cgroups(&mut pro);
                    synth_targets(&mut pro, workload);
                    synth::bare(&mut pro, synth::PERF_RECORD_FINISHED_INIT);
                    tracker.scan(&pro);
                    sink.write(&pro)?;
                }
                last_switch = Instant::now();
            }
            if let Some(max) = cfg.modes.max_size {
                let written = sink.data_bytes() + parallel_bytes.get();
                if written >= max {
                    // perf prints this even with -q.
                    eprintln!(
                        "[ prec record: perf size limit reached ({} KB), stopping session ]",
                        written / 1024
                    );
                    // The workload's status is the recording's, as when
                    // it ends by itself: perf exits 143 then.
                    if let Some(r) = running.as_mut() {
                        let _ = r.kill(libc::SIGTERM);
                        exit = r.wait().ok();
                    }
                    break;
                }
            }
            if last_flush.elapsed() >= Duration::from_millis(250) {
                sink.flush()?;
                last_flush = Instant::now();
            }
            if let Some(r) = running.as_mut() {
                if let Some(st) = r.try_wait()? {
                    exit = Some(st);
                    break;
                }
            } else if launch::signal_received().is_some() {
                break;
            }
            let all_hup = pollfds[..rings.len()].iter().all(|p| p.fd < 0);
            if all_hup {
                match running.as_mut() {
                    Some(r) => {
                        // The -p/-t targets are gone: perf ends the
                        // command that only timed the recording.
                        if !launching {
                            let _ = r.kill(libc::SIGTERM);
                        }
                        exit = Some(r.wait()?);
                        break;
                    }
                    None => break,
                }
            }
            let timeout = toggles.front().map_or(100, |&(t, _)| {
                t.saturating_duration_since(Instant::now())
                    .as_millis()
                    .min(100) as i32
            });
            sys::poll(&mut pollfds, timeout)?;
            // perf counts the times the kernel woke it: a ring past its
            // watermark, or its tasks' end (not this loop's timeouts).
            if pollfds[..rings.len()].iter().any(|p| p.revents != 0) {
                wakeups += 1;
                switch_wakeups += 1;
            }
            for p in pollfds.iter_mut() {
                if p.revents & (sys::pollbits::HUP | sys::pollbits::ERR) != 0 {
                    p.fd = -1;
                }
            }
        }
        Ok(())
    })();
    if let Err(e) = loop_result {
        launch::set_forward_pid(0);
        if let Some(r) = running.as_mut() {
            let _ = r.kill(libc::SIGTERM);
            let _ = r.wait();
        }
        return Err(e);
    }
    launch::set_forward_pid(0);
    for cpu_fds in &fds {
        for fd in cpu_fds {
            let _ = sys::ioc_disable(fd.as_fd());
        }
    }
    drain(&mut rings, &mut sink, &mut tracker, &mut buf, true)?;
    let mut lost = Vec::new();
    for (event, slots) in events.iter().zip(&fd_slots) {
        for &(g, k) in slots.iter().flatten() {
            lost_samples(&mut lost, &event.attr, fds[g][k].as_fd());
        }
    }
    if !lost.is_empty() {
        tracker.scan(&lost);
        sink.write(&lost)?;
    }
    if tail {
        write_tail(&mut sink, &mut tracker, true)?;
    }
    let overruns: u64 = rings.iter().map(|(r, _)| r.overruns()).sum();
    if overruns > 0 {
        note(
            cfg.quiet,
            &format!("Warning: prec failed to keep up with mmap data {overruns} time(s)"),
        );
    }
    drop(rings);
    drop(fds);

    // 5. Finish.
    // With --threads the data files hold the compressed data.
    let compressed = comp.map(|c| {
        let (transferred, compressed) = data_files
            .iter()
            .filter_map(|f| f.compressor.as_ref())
            .fold((c.transferred, c.compressed), |(t, z), f| {
                (t + f.transferred, z + f.compressed)
            });
        let ratio = if compressed == 0 {
            0.0
        } else {
            transferred as f64 / compressed as f64
        };
        for f in host.iter_mut() {
            if let prec_format::features::Feature::Compressed(x) = f {
                // perf: (u32)(ratio + 0.5).
                x.ratio = (ratio + 0.5) as u32;
            }
        }
        (transferred, compressed)
    });
    let data_bytes = finish_sink(sink, &host, cfg, &event_infos, &tracker)? + parallel_bytes.get();
    Ok(RecordOutcome {
        exit,
        samples: tracker.samples,
        records: tracker.records,
        sample_records: tracker.sample_records,
        data_bytes,
        lost: tracker.lost,
        wakeups,
        compressed,
        dumps,
    })
}

/// perf's `record__read_lost_samples` for one fd: the count of samples the
/// kernel dropped (`PERF_FORMAT_LOST`), when not 0, as a
/// `PERF_RECORD_LOST_SAMPLES` appended to `out`, with the fd's id in a
/// sample_id trailer whose other fields are 0 (perf writes the trailer
/// whatever `sample_id_all` says). A member of a group reads its group,
/// whose first counter is the leader's: perf 6.1 takes that one's count.
fn lost_samples(out: &mut Vec<u8>, attr: &PerfEventAttr, fd: BorrowedFd<'_>) {
    let rf = attr.read_format;
    if rf & read_format::LOST == 0 {
        return;
    }
    let mut bytes = [0u8; 4096];
    let Ok(n) = sys::read_fd(fd, &mut bytes) else {
        return;
    };
    let words: Vec<u64> = bytes[..n]
        .chunks_exact(8)
        .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or_default()))
        .collect();
    // Non-group: value, [enabled], [running], [id], lost. Group: nr,
    // [enabled], [running], then value, [id], lost per counter.
    let group = rf & read_format::GROUP != 0;
    let times = usize::from(rf & read_format::TOTAL_TIME_ENABLED != 0)
        + usize::from(rf & read_format::TOTAL_TIME_RUNNING != 0);
    let value_at = if group { 1 + times } else { 0 };
    let id_at = if group { value_at + 1 } else { 1 + times };
    let has_id = rf & read_format::ID != 0;
    let lost_at = id_at + usize::from(has_id);
    let (Some(&lost), id) = (words.get(lost_at), words.get(id_at).filter(|_| has_id)) else {
        return;
    };
    let id = match id {
        Some(&id) => id,
        None => sys::ioc_id(fd).unwrap_or(0),
    };
    if lost == 0 {
        return;
    }
    let st = attr.sample_type;
    let mut trailer = Vec::new();
    if st & sample::TID != 0 {
        trailer.push(0); // pid, tid
    }
    if st & sample::TIME != 0 {
        trailer.push(0);
    }
    if st & sample::ID != 0 {
        trailer.push(id);
    }
    if st & sample::STREAM_ID != 0 {
        trailer.push(0);
    }
    if st & sample::CPU != 0 {
        trailer.push(0); // cpu, reserved
    }
    if st & sample::IDENTIFIER != 0 {
        trailer.push(id);
    }
    let size = 16 + 8 * trailer.len() as u16;
    out.extend_from_slice(&crate::ring::PERF_RECORD_LOST_SAMPLES.to_ne_bytes());
    out.extend_from_slice(&0u16.to_ne_bytes());
    out.extend_from_slice(&size.to_ne_bytes());
    out.extend_from_slice(&lost.to_ne_bytes());
    for w in trailer {
        out.extend_from_slice(&w.to_ne_bytes());
    }
}

/// `PATH.TIMESTAMP` (`--timestamp-filename`, `--switch-output`), with
/// perf's timestamp (local time to the hundredth of a second); should that
/// name exist already (two files finished within 10 ms), the next
/// hundredth's, so that no file replaces another.
pub fn stamped_name(path: &Path) -> io::Result<PathBuf> {
    loop {
        let name = PathBuf::from(format!("{}.{}", path.display(), sys::local_timestamp()?));
        if !name.exists() {
            return Ok(name);
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn finish_sink(
    sink: Sink,
    host: &[prec_format::features::Feature],
    cfg: &RecordConfig,
    event_infos: &[EventInfo],
    tracker: &Tracker,
) -> Result<u64, RecordError> {
    let data_bytes = sink.data_bytes();
    match sink.into_writer()? {
        Writer::File(w) => {
            let facts = RecordingFacts {
                cmdline: cfg.cmdline.clone(),
                events: event_infos.to_vec(),
                sample_time: cfg
                    .modes
                    .sample_times_known()
                    .then_some(tracker.first_time.map(|f| (f, tracker.last_time)))
                    .flatten(),
                build_ids: if cfg.modes.reads_back() {
                    tracker.build_ids(cfg.modes.buildid_all)
                } else {
                    Vec::new()
                },
            };
            let feats = features::file_features(host, &facts, Endian::NATIVE);
            let mut f = w.finish(&feats)?;
            f.flush()?;
        }
        Writer::Pipe(w) => {
            let mut out = w.finish()?;
            out.flush()?;
        }
    }
    Ok(data_bytes)
}

fn sys_geteuid_is_root() -> bool {
    // /proc/self/status "Uid:" line: real, effective, saved, fs.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proc_synth::MapEntry;

    fn sample(ip: u64, pid: u32, time: u64, misc: u16) -> Vec<u8> {
        // IP | TID | TIME | PERIOD
        let mut v = Vec::new();
        v.extend_from_slice(&synth::PERF_RECORD_SAMPLE.to_ne_bytes());
        v.extend_from_slice(&misc.to_ne_bytes());
        v.extend_from_slice(&40u16.to_ne_bytes());
        v.extend_from_slice(&ip.to_ne_bytes());
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(&pid.to_ne_bytes());
        v.extend_from_slice(&time.to_ne_bytes());
        v.extend_from_slice(&1u64.to_ne_bytes());
        v
    }

    fn map(start: u64, end: u64, path: &str) -> MapEntry {
        MapEntry {
            start,
            end,
            pgoff: 0,
            dev_major: 0,
            dev_minor: 0,
            inode: 1,
            prot: 5,
            flags: 2,
            path: path.to_string(),
        }
    }

    #[test]
    fn tracker_attributes_samples_to_maps_across_fork_and_exec() {
        let syn = Synth {
            trailer: 16,
            buildid_mmap: false,
        };
        let mut buf = Vec::new();
        syn.mmap2(&mut buf, 10, 10, &map(0x1000, 0x2000, "/bin/a"));
        syn.mmap2(&mut buf, 10, 10, &map(0x5000, 0x6000, "/lib/b.so"));
        buf.extend(sample(0x1800, 10, 50, synth::MISC_USER));
        syn.fork(&mut buf, 11, 10, 11, 10);
        buf.extend(sample(0x5800, 11, 40, synth::MISC_USER));
        buf.extend(sample(0xffff_ffff_8100_0000, 10, 70, synth::MISC_KERNEL));
        // exec in 10: old maps dropped, so this sample hits nothing.
        syn.comm(&mut buf, 10, 10, "c", true);
        buf.extend(sample(0x5100, 10, 60, synth::MISC_USER));
        let mut t = Tracker {
            ip_off: 8,
            ..Default::default()
        };
        t.scan(&buf);
        assert_eq!(t.samples, 4);
        assert_eq!(t.first_time, Some(40));
        assert_eq!(t.last_time, 70);
        assert!(t.kernel_hit);
        let hit: Vec<&str> = t.hit.iter().map(|&i| t.files[i].as_str()).collect();
        assert_eq!(hit, ["/bin/a", "/lib/b.so"]);
    }

    #[test]
    fn delays_parse_like_perf() {
        assert_eq!(Delay::parse("250"), Some(Delay::After(250)));
        assert_eq!(Delay::parse("-1"), Some(Delay::UntilEnabled));
        assert_eq!(
            Delay::parse("10-20,30-40"),
            Some(Delay::Windows(vec![(10, 20), (30, 40)]))
        );
        for refused in ["0", "-2", "20-10", "5-10,8-20", "10-20,30", "abc", ""] {
            assert_eq!(Delay::parse(refused), None, "{refused}");
        }
    }

    #[test]
    fn attrs_follow_perf() {
        let cfg = RecordConfig {
            events: Vec::new(),
            freq: 4000,
            period: None,
            call_graph: CallGraph::None,
            output: Output::File("x".into()),
            command: vec!["true".into()],
            pids: Vec::new(),
            tids: Vec::new(),
            uid: None,
            system_wide: false,
            cpus: None,
            mmap_pages: 128,
            inherit: true,
            quiet: true,
            cmdline: Vec::new(),
            modes: RecordModes::default(),
        };
        let spec = EventSpec::parse("cpu-clock").unwrap();
        let a = build_attr(&spec, &[], &cfg, true, 0, true);
        assert_eq!(
            a.sample_type,
            sample::IP | sample::TID | sample::TIME | sample::PERIOD
        );
        assert!(a.has_flag(flags::FREQ | flags::ENABLE_ON_EXEC | flags::MMAP2 | flags::INHERIT));
        let b = build_attr(&spec, &[], &cfg, false, sample::ID, true);
        assert!(!b.has_flag(flags::MMAP) && b.sample_type & sample::ID != 0);
        let c = build_attr(
            &spec,
            &[],
            &RecordConfig {
                period: Some(1000),
                call_graph: CallGraph::Dwarf(4096),
                ..cfg.clone()
            },
            true,
            0,
            true,
        );
        assert_eq!(c.sample_period_or_freq, 1000);
        assert!(!c.has_flag(flags::FREQ) && c.sample_type & sample::PERIOD == 0);
        assert_eq!((c.sample_regs_user, c.sample_stack_user), (0xff0fff, 4096));
        assert!(c.has_flag(flags::EXCLUDE_CALLCHAIN_USER | flags::MMAP_DATA));
    }

    #[test]
    fn old_path_appends_suffix() {
        assert_eq!(
            old_path(Path::new("a/perf.data")),
            Path::new("a/perf.data.old")
        );
    }
}
