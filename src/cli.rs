//! Command-line arguments, with perf's names and defaults. These are the
//! "low" arguments; each command converts them into its library's config.

// The doc comments are clap's --help texts, in perf's `a[,b]` notation,
// not intra-doc links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::os::fd::AsFd;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

/// prec: record and report CPU profiles in Linux perf.data format.
// perf's option parser takes a repeated option, the last one winning
// (`--stdio --stdio`, `-s dso -s sym`), where clap's default refuses it.
#[derive(Parser, Debug)]
#[command(name = "prec", version, about, args_override_self = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run a command and record its profile into perf.data.
    // perf takes any unambiguous prefix of a long option (`--comm`).
    #[command(infer_long_args = true)]
    Record(Box<RecordArgs>),
    /// Read perf.data and display the profile.
    // perf takes any unambiguous prefix of a long option (`--comm`).
    #[command(infer_long_args = true)]
    Report(Box<ReportArgs>),
    /// Read a perf.data and write it again (file or pipe mode, either byte order).
    Inject(InjectArgs),
    /// Read perf.data and display every sample (perf script's text).
    // perf takes any unambiguous prefix of a long option (`--comm`).
    #[command(infer_long_args = true)]
    Script(Box<ScriptArgs>),
    /// Read perf.data and write an SVG flame graph.
    Flamegraph(FlamegraphArgs),
}

/// The perf.data input and where its symbols come from: the options
/// `prec report` and `prec script` share.
#[derive(Args, Debug)]
pub struct PerfDataArgs {
    /// Input file name ("-" reads pipe mode from stdin); without it,
    /// perf.data, or standard input when that is a pipe (as perf).
    #[arg(short = 'i', long = "input")]
    pub input: Option<PathBuf>,
    /// Look for binaries relative to this directory (perf's build-id cache
    /// too: DIR/.debug); kernel symbols then only from --kallsyms.
    #[arg(long = "symfs")]
    pub symfs: Option<PathBuf>,
    /// Kernel symbols file (instead of /proc/kallsyms).
    #[arg(long = "kallsyms")]
    pub kallsyms: Option<PathBuf>,
    /// Do not demangle symbol names.
    #[arg(long = "no-demangle", overrides_with = "demangle")]
    pub no_demangle: bool,
    /// Demangle symbol names (the default).
    #[arg(long = "demangle", overrides_with = "no_demangle")]
    pub demangle: bool,
    /// Accepted for perf compatibility: perf 6.1 demangles kernel names
    /// with it only in kernel ELF images (vmlinux, modules); kernel
    /// symbols from kallsyms, the only ones prec reads, stay as they are.
    #[arg(long = "demangle-kernel")]
    pub demangle_kernel: bool,
    /// Don't complain about files owned by other users (accepted for perf compatibility).
    #[arg(short = 'f', long = "force")]
    pub force: bool,
}

/// The `--symfs` directory as perf's `symbol__init` takes it: one that
/// resolves to `/` is no symfs at all.
pub fn effective_symfs(symfs: &Option<PathBuf>) -> Option<PathBuf> {
    let dir = symfs.as_ref()?;
    let root = std::fs::canonicalize(dir).is_ok_and(|p| p == std::path::Path::new("/"));
    (!root).then(|| dir.clone())
}

impl PerfDataArgs {
    /// The input to read: `-i`, else perf's default (`check_pipe`): "-"
    /// when standard input is a pipe, else perf.data.
    pub fn input(&self) -> PathBuf {
        match &self.input {
            Some(path) => path.clone(),
            None if is_pipe(std::io::stdin().as_fd()) => PathBuf::from("-"),
            None => PathBuf::from("perf.data"),
        }
    }
}

/// Whether `fd` is a pipe (a FIFO).
pub fn is_pipe(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fd.try_clone_to_owned()
        .map(std::fs::File::from)
        .and_then(|f| f.metadata())
        .is_ok_and(|m| m.file_type().is_fifo())
}

/// `prec script` arguments (perf script's names).
#[derive(Args, Debug)]
pub struct ScriptArgs {
    #[command(flatten)]
    pub data: PerfDataArgs,
    /// Fields: comm,tid,pid,time,cpu,event,ip,sym,symoff,dso,srcline,srccode,period,addr,
    /// misc,weight,ins_lat,phys_addr,data_page_size,code_page_size,iregs,uregs,
    /// flags,callindent,trace,tod,data_src,brstack,brstacksym,brstackoff,insn,insnlen,
    /// ipc,synth,metric,bpf-output
    /// (optionally `type:` first, or +field/-field to change the defaults).
    #[arg(short = 'F', long = "fields", allow_hyphen_values = true)]
    pub fields: Option<String>,
    /// Dump every record (as `prec report -D`), each sample followed by
    /// its line.
    #[arg(short = 'D', long = "dump-raw-trace")]
    pub dump_raw_trace: bool,
    /// Dump every record like -D, in file order (no time ordering).
    #[arg(long = "dump-unsorted-raw-trace")]
    pub dump_unsorted_raw_trace: bool,
    /// Verbose: C++ names with their parameters (perf's other verbose
    /// messages go to stderr).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// System-wide collection (perf's live mode); reading a file, no effect.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Show the perf.data header first.
    #[arg(long = "header")]
    pub header: bool,
    /// Show only the perf.data header.
    #[arg(long = "header-only")]
    pub header_only: bool,
    /// Show the whole path of source files (`srcline`).
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,
    /// Show the inline functions of DWARF-unwound call-chain entries (the
    /// default, as in perf 6.1).
    #[arg(long = "inline", overrides_with = "no_inline")]
    pub inline: bool,
    /// Do not expand DWARF-unwound entries into their inline functions.
    #[arg(long = "no-inline", overrides_with = "inline")]
    pub no_inline: bool,
    /// With --header/--header-only: show all header information.
    #[arg(short = 'I', long = "show-info")]
    pub show_info: bool,
    /// Show the kernel image's path instead of `[kernel.kallsyms]` where
    /// its symbols came from one; prec's come from kallsyms, whose name
    /// stays, as in perf.
    #[arg(long = "show-kernel-path")]
    pub show_kernel_path: bool,
    /// Show COMM, FORK and EXIT events.
    #[arg(long = "show-task-events")]
    pub show_task_events: bool,
    /// Show MMAP and MMAP2 events.
    #[arg(long = "show-mmap-events")]
    pub show_mmap_events: bool,
    /// Show context switch events (SWITCH, SWITCH_CPU_WIDE).
    #[arg(long = "show-switch-events")]
    pub show_switch_events: bool,
    /// Show LOST events (samples the kernel dropped).
    #[arg(long = "show-lost-events")]
    pub show_lost_events: bool,
    /// Show KSYMBOL and BPF_EVENT events (BPF programs loaded and
    /// unloaded).
    #[arg(long = "show-bpf-events")]
    pub show_bpf_events: bool,
    /// Show CGROUP events.
    #[arg(long = "show-cgroup-events")]
    pub show_cgroup_events: bool,
    /// Show NAMESPACES events.
    #[arg(long = "show-namespace-events")]
    pub show_namespace_events: bool,
    /// Show FINISHED_ROUND events; every record then comes in file order,
    /// unsorted, as perf shows them.
    #[arg(long = "show-round-events")]
    pub show_round_events: bool,
    /// Show times relative to the first event shown.
    #[arg(long = "reltime", conflicts_with = "deltatime")]
    pub reltime: bool,
    /// Show times relative to the previous event shown.
    #[arg(long = "deltatime")]
    pub deltatime: bool,
    /// Don't show call chains.
    #[arg(short = 'G', long = "hide-call-graph")]
    pub hide_call_graph: bool,
    /// Show at most this many call chain entries.
    #[arg(long = "max-stack")]
    pub max_stack: Option<usize>,
    /// Stop each call chain after the first entry in one of these
    /// symbols (comma-separated names).
    #[arg(long = "stop-bt", value_name = "SYMBOLS")]
    pub stop_bt: Option<String>,
    /// Timestamps with nanoseconds.
    #[arg(long = "ns")]
    pub ns: bool,
    /// Only samples of these commands.
    #[arg(short = 'c', long = "comms")]
    pub comms: Option<String>,
    /// Only samples of these process ids (perf's --pid).
    #[arg(long = "pid", alias = "pids")]
    pub pids: Option<String>,
    /// Only samples of these thread ids (perf's --tid).
    #[arg(long = "tid", alias = "tids")]
    pub tids: Option<String>,
    /// Only samples in these shared objects.
    #[arg(long = "dsos")]
    pub dsos: Option<String>,
    /// Only samples in these symbols (names, or start addresses as 0x...).
    #[arg(short = 'S', long = "symbols")]
    pub symbols: Option<String>,
    /// Only samples on these CPUs.
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Only samples in these times, as `prec report --time` takes them
    /// (seconds or percentages of the recording).
    #[arg(long = "time")]
    pub time: Option<String>,
    #[command(flatten)]
    pub evswitch: EvSwitchArgs,
    /// Print folded stacks (`comm;outer;...;leaf count`) instead, like
    /// inferno-collapse-perf / stackcollapse-perf.pl on perf script's output.
    #[arg(long = "folded")]
    pub folded: bool,
    /// Each event's samples to its own file, `INPUT.EVENT.dump` (perf's
    /// names); other lines and a summary to stdout.
    #[arg(long = "per-event-dump")]
    pub per_event_dump: bool,
    /// Don't show warnings.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// perf's sample windows between two events' samples.
#[derive(Args, Debug)]
pub struct EvSwitchArgs {
    /// Only samples after one of this event (as `perf evlist` names it),
    /// until one of --switch-off's.
    #[arg(long = "switch-on", value_name = "EVENT")]
    pub switch_on: Option<String>,
    /// No samples after one of this event, until one of --switch-on's.
    #[arg(long = "switch-off", value_name = "EVENT")]
    pub switch_off: Option<String>,
    /// Keep the samples of the --switch-on and --switch-off events.
    #[arg(long = "show-on-off-events")]
    pub show_on_off_events: bool,
}

/// perf report options for its annotation and TUI browsers.
#[derive(Args, Debug)]
pub struct BrowserArgs {
    /// Disassembler style for annotation (perf's -M).
    #[arg(short = 'M', long = "disassembler-style", value_name = "STYLE")]
    pub disassembler_style: Option<String>,
    /// Annotation: show raw instruction encoding.
    #[arg(long = "asm-raw")]
    pub asm_raw: bool,
    /// Annotation: interleave source code with assembly.
    #[arg(long = "source", overrides_with = "no_source")]
    pub source: bool,
    /// Annotation: no source code.
    #[arg(long = "no-source", overrides_with = "source")]
    pub no_source: bool,
    /// Annotation: objdump binary to use.
    #[arg(long = "objdump", value_name = "PATH")]
    pub objdump: Option<PathBuf>,
    /// Annotation: prefix added to source file paths.
    #[arg(long = "prefix", value_name = "PREFIX")]
    pub prefix: Option<String>,
    /// Annotation: leading path components removed from source file paths.
    #[arg(long = "prefix-strip", value_name = "N")]
    pub prefix_strip: Option<u32>,
    /// Annotation: what percentages are of.
    #[arg(long = "percent-type", value_name = "TYPE",
          value_parser = ["local-period", "global-period", "local-hits", "global-hits"])]
    pub percent_type: Option<String>,
    /// TUI: samples kept per entry for browsing.
    #[arg(long = "samples", value_name = "N")]
    pub samples: Option<u32>,
    /// Load module symbols from a live kernel (perf's -m; prec reads
    /// modules' symbols from kallsyms).
    #[arg(short = 'm', long = "modules")]
    pub modules: bool,
}

/// `prec flamegraph` arguments.
#[derive(Args, Debug)]
pub struct FlamegraphArgs {
    /// Input perf.data ("-" reads pipe mode from stdin).
    #[arg(short = 'i', long = "input", default_value = "perf.data")]
    pub input: PathBuf,
    /// Output SVG file ("-" for stdout).
    #[arg(short = 'o', long = "output", default_value = "flamegraph.svg")]
    pub output: String,
    /// Read folded stacks (`a;b;c count` lines) from this file instead of a perf.data.
    #[arg(long = "folded")]
    pub folded: Option<PathBuf>,
    /// Title of the graph.
    #[arg(long = "title", default_value = "Flame Graph")]
    pub title: String,
    /// Width of the image in pixels.
    #[arg(long = "width", default_value_t = 1200)]
    pub width: u32,
    /// Don't show call chains beyond this depth.
    #[arg(long = "max-stack")]
    pub max_stack: Option<usize>,
    /// Look for binaries relative to this directory (perf's build-id cache
    /// too: DIR/.debug); kernel symbols then only from --kallsyms.
    #[arg(long = "symfs")]
    pub symfs: Option<PathBuf>,
    /// Kernel symbols file (instead of /proc/kallsyms).
    #[arg(long = "kallsyms")]
    pub kallsyms: Option<PathBuf>,
    /// Don't show warnings.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}

/// `prec inject` arguments.
#[derive(Args, Debug)]
pub struct InjectArgs {
    /// Input file name ("-" reads pipe mode from stdin).
    #[arg(short = 'i', long = "input", default_value = "-")]
    pub input: PathBuf,
    /// Output file name ("-" writes pipe mode to stdout).
    #[arg(short = 'o', long = "output", default_value = "-")]
    pub output: String,
    /// Byte order of the output: native (default), little or big.
    #[arg(long = "byte-order", default_value = "native")]
    pub byte_order: String,
}

/// `prec record` arguments (perf record's names).
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Event selector(s), comma separated (e.g. cpu-clock, task-clock, page-faults, cycles:u,
    /// sched:sched_switch, 'syscalls:sys_enter_*').
    #[arg(short = 'e', long = "event")]
    pub events: Vec<String>,
    /// A tracepoint filter for the events of the -e before it (the
    /// kernel's filter syntax: 'prev_pid != 0 && next_prio < 120');
    /// several for one -e must all hold.
    #[arg(long = "filter", value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Don't record the recorder's own records of the tracepoints of the
    /// -e before it (a `common_pid != PID` filter).
    #[arg(long = "exclude-perf", action = clap::ArgAction::Count)]
    pub exclude_perf: u8,
    /// Which records to make up for processes running before the
    /// recording (system-wide, -p, -t): no, all (default), task (COMM and
    /// FORK), mmap (task and MMAP2), cgroup; comma-separated.
    #[arg(long = "synth", value_name = "WHAT")]
    pub synth: Option<String>,
    /// Sampling frequency in Hz.
    #[arg(short = 'F', long = "freq")]
    pub freq: Option<String>,
    /// Sample period: one sample every PERIOD events.
    #[arg(short = 'c', long = "count")]
    pub count: Option<u64>,
    /// Record call chains with frame pointers (same as --call-graph fp).
    #[arg(short = 'g')]
    pub call_graph_fp: bool,
    /// Call chain mode: fp, dwarf[,SIZE] or lbr.
    #[arg(long = "call-graph")]
    pub call_graph: Option<String>,
    /// Output file name ("-" writes pipe mode to stdout); without it,
    /// perf.data, or standard output when that is a pipe (as perf).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Record existing process id(s), comma separated.
    #[arg(short = 'p', long = "pid")]
    pub pid: Option<String>,
    /// Record existing thread id(s), comma separated.
    #[arg(short = 't', long = "tid")]
    pub tid: Option<String>,
    /// Record the processes of this user (a name or a uid) that run when
    /// recording starts, and the threads they start.
    #[arg(short = 'u', long = "uid")]
    pub uid: Option<String>,
    /// System-wide collection from all CPUs.
    #[arg(short = 'a', long = "all-cpus")]
    pub all_cpus: bool,
    /// Only these CPUs (list like 0-2,5).
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Ring buffer size in pages (a power of two) per CPU.
    #[arg(short = 'm', long = "mmap-pages")]
    pub mmap_pages: Option<String>,
    /// Child tasks do not inherit counters.
    #[arg(short = 'i', long = "no-inherit", overrides_with = "inherit")]
    pub no_inherit: bool,
    /// Child tasks inherit counters (the default; undoes an earlier
    /// --no-inherit, as perf's negated option).
    #[arg(long = "inherit", overrides_with = "no_inherit")]
    pub inherit: bool,
    /// Don't print any messages.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
    /// Verbose: the recording's settings (perf's `-v` lines) and the size
    /// of each ring buffer on stderr.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Compress the data with zstd (level 1 unless given as -z=N or --compression-level=N).
    #[arg(
        short = 'z',
        long = "compression-level",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "1"
    )]
    pub compression_level: Option<u32>,
    /// Clock for the timestamps: monotonic, monotonic_raw, realtime, boottime, tai or a number.
    #[arg(short = 'k', long = "clockid")]
    pub clockid: Option<String>,
    /// Sample timestamps (also with --per-thread).
    #[arg(short = 'T', long = "timestamp")]
    pub timestamp: bool,
    /// Record the sample (data) addresses.
    #[arg(short = 'd', long = "data")]
    pub data: bool,
    /// Record the sample CPU.
    #[arg(long = "sample-cpu")]
    pub sample_cpu: bool,
    /// Record the sample period.
    #[arg(short = 'P', long = "period")]
    pub period: bool,
    /// Record the sample weight.
    #[arg(short = 'W', long = "weight")]
    pub weight: bool,
    /// Write the data from a second thread, with up to N (1 to 4, default
    /// 1) writes waiting for it.
    #[arg(long = "aio", value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "1")]
    pub aio: Option<usize>,
    /// Where the thread reading the ring buffers runs while it reads each
    /// one: `cpu` (on that buffer's CPU) or `node` (on its NUMA node's).
    #[arg(long = "affinity", value_name = "node|cpu")]
    pub affinity: Option<String>,
    /// Take data out of a CPU's ring buffer only once it holds this much
    /// (e.g. 64K; units B, K, M, G; at most a quarter of the buffer), except
    /// at the end.
    #[arg(long = "mmap-flush", value_name = "SIZE")]
    pub mmap_flush: Option<String>,
    /// How long to read each running process's /proc/PID/maps, in ms
    /// (default 500): what was read by then is kept.
    #[arg(long = "proc-map-timeout", value_name = "MS")]
    pub proc_map_timeout: Option<u64>,
    /// Record the sample's transaction flags (abort reasons of hardware
    /// transactions; 0 where the CPU has none).
    #[arg(long = "transaction")]
    pub transaction: bool,
    /// Record the data addresses' physical addresses.
    #[arg(long = "phys-data")]
    pub phys_data: bool,
    /// Record the data addresses' page sizes.
    #[arg(long = "data-page-size")]
    pub data_page_size: bool,
    /// Record the code addresses' page sizes.
    #[arg(long = "code-page-size")]
    pub code_page_size: bool,
    /// Record the sample identifier (IDENTIFIER) even with one event.
    #[arg(long = "sample-identifier")]
    pub sample_identifier: bool,
    /// Call chains of user space only.
    #[arg(long = "user-callchains")]
    pub user_callchains: bool,
    /// Call chains of the kernel only.
    #[arg(long = "kernel-callchains")]
    pub kernel_callchains: bool,
    /// Do not sample (only the side-band records: comm, mmap, ...).
    #[arg(short = 'n', long = "no-samples")]
    pub no_samples: bool,
    /// With sample reads (:S), record the enabled and running times too.
    #[arg(long = "running-time")]
    pub running_time: bool,
    /// Do not record BPF program load/unload events.
    #[arg(long = "no-bpf-event")]
    pub no_bpf_event: bool,
    /// Put all events into one group (the first leads).
    #[arg(long = "group")]
    pub group: bool,
    /// Fail instead of lowering a frequency above the kernel's maximum.
    #[arg(long = "strict-freq")]
    pub strict_freq: bool,
    /// Record context switch events.
    #[arg(long = "switch-events")]
    pub switch_events: bool,
    /// Record namespaces events.
    #[arg(long = "namespaces")]
    pub namespaces: bool,
    /// Per-thread ring buffers, no inheritance and no timestamps (unless -T).
    #[arg(long = "per-thread")]
    pub per_thread: bool,
    /// Do not update the build-id cache (prec has none; accepted for perf compatibility).
    #[arg(short = 'N', long = "no-buildid-cache")]
    pub no_buildid_cache: bool,
    /// Do not collect build-ids (no BUILD_ID feature).
    #[arg(short = 'B', long = "no-buildid")]
    pub no_buildid: bool,
    /// Record the build-id of every file mapped, sampled or not.
    #[arg(long = "buildid-all")]
    pub buildid_all: bool,
    /// Record each mapped file's build-id in its MMAP2 record (the kernel
    /// reads it; no BUILD_ID feature then).
    #[arg(long = "buildid-mmap")]
    pub buildid_mmap: bool,
    /// Off-CPU profiling (perf's BPF-based `--off-cpu`): accepted and
    /// ignored with a warning, as perf built without BPF skeletons does.
    #[arg(long = "off-cpu")]
    pub off_cpu: bool,
    /// Record the first and last sample times even with --buildid-all.
    #[arg(long = "timestamp-boundary")]
    pub timestamp_boundary: bool,
    /// Write records as they come: every event wakes prec (wakeup_events 1).
    #[arg(long = "no-buffering")]
    pub no_buffering: bool,
    /// Check the options, then exit without recording.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Flight recorder: rings keep the newest records, overwriting the
    /// oldest, and are written at the end (and at each --switch-output)
    #[arg(long = "overwrite")]
    pub overwrite: bool,
    /// Record each sample's cgroup (report --sort cgroup)
    #[arg(long = "all-cgroups")]
    pub all_cgroups: bool,
    /// Count the events (in -e order; NAME,NAME,... or one -G each) only in
    /// these cgroups, system-wide (-a or -C)
    #[arg(short = 'G', long = "cgroup", value_name = "NAME")]
    pub cgroups: Vec<String>,
    /// Parallel streaming: write a directory (DIR/data and a DIR/data.N per
    /// ring), each reading thread's rings to its own file; SPEC groups the
    /// CPUs: cpu (default), core, package, numa, or MAPS/AFFINITY[:...]
    #[arg(long = "threads", value_name = "SPEC", num_args = 0..=1, require_equals = true,
          default_missing_value = "cpu")]
    pub threads: Option<String>,
    /// Rename the output to NAME.YYYYMMDDhhmmssCC (local time) when done.
    #[arg(long = "timestamp-filename")]
    pub timestamp_filename: bool,
    /// Start a new output file on SIGUSR2 (`signal`, the default), once a
    /// size is written (e.g. 100M) or every so long (e.g. 30s); each file
    /// perf's number of threads that read /proc at the start; prec reads
    /// it in one pass, which takes milliseconds, and accepts the option.
    #[arg(long = "num-thread-synthesize")]
    pub num_thread_synthesize: Option<u32>,
    /// Switch the output file (as SIGUSR2 does) whenever this event occurs
    /// on any CPU, e.g. a tracepoint; implies --switch-output=signal.
    #[arg(long = "switch-output-event")]
    pub switch_output_event: Vec<String>,
    /// is renamed NAME.TIMESTAMP.
    #[arg(long = "switch-output", num_args = 0..=1, require_equals = true,
          default_missing_value = "signal", value_name = "signal|SIZE|TIME")]
    pub switch_output: Option<String>,
    /// With --switch-output: keep only the newest N files.
    #[arg(long = "switch-max-files", value_name = "N")]
    pub switch_max_files: Option<usize>,
    /// Run prec with this SCHED_FIFO priority (the command keeps its own).
    #[arg(short = 'r', long = "realtime", value_name = "PRIORITY")]
    pub realtime: Option<i32>,
    /// Write the tasks' COMM and MMAP records and the kernel's maps made up
    /// from /proc at the end of the file (of each --switch-output file),
    /// not at the start.
    #[arg(long = "tail-synthesize")]
    pub tail_synthesize: bool,
    /// Stop after writing this much data (e.g. 10M; units B, K, M, G).
    #[arg(long = "max-size")]
    pub max_size: Option<String>,
    /// Enable the events this many milliseconds after the program starts;
    /// -1: start disabled (for --control); or windows of time to count in,
    /// e.g. 10-20,30-40 (ms), after which recording stops.
    #[arg(short = 'D', long = "delay", allow_hyphen_values = true)]
    pub delay: Option<String>,
    /// Take commands (enable, disable, evlist, ping, stop, snapshot; one a
    /// line) from fd:CTL[,ACK] or fifo:CTL[,ACK], answering "ack" on ACK.
    #[arg(long = "control")]
    pub control: Option<String>,
    /// Per-thread counts (inherit_stat).
    #[arg(short = 's', long = "stat")]
    pub stat: bool,
    /// Sample these user registers (comma separated; all without a value).
    #[arg(long = "user-regs", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub user_regs: Option<String>,
    /// Sample these registers at the interrupt (comma separated; all without a value).
    #[arg(short = 'I', long = "intr-regs", num_args = 0..=1, require_equals = true, default_missing_value = "")]
    pub intr_regs: Option<String>,
    /// Sample raw data (and CPU and time).
    #[arg(short = 'R', long = "raw-samples")]
    pub raw_samples: bool,
    /// Sample any taken branch (branch stack; needs hardware that records
    /// branches, e.g. Intel LBR).
    #[arg(short = 'b', long = "branch-any")]
    pub branch_any: bool,
    /// Sample these taken branches: any, any_call, any_ret, ind_call, ind_jmp,
    /// call, cond, abort_tx, in_tx, no_tx, save_type, stack, and u, k, hv.
    #[arg(short = 'j', long = "branch-filter")]
    pub branch_filter: Option<String>,
    /// Only user-space samples (exclude_kernel on every event).
    #[arg(long = "all-user")]
    pub all_user: bool,
    /// Only kernel samples (exclude_user on every event).
    #[arg(long = "all-kernel")]
    pub all_kernel: bool,
    /// The command to run, and its arguments.
    #[arg(trailing_var_arg = true)]
    pub command: Vec<String>,
}

/// `prec report` arguments (perf report's names).
#[derive(Args, Debug)]
pub struct ReportArgs {
    #[command(flatten)]
    pub data: PerfDataArgs,
    /// Sort by key(s): comm, pid, tid, dso, sym, symoff, srcline, srcfile, cpu, socket,
    /// parent, time, trace, symbol_size, dso_size, cgroup, cgroup_id, local_weight, weight,
    /// local_ins_lat, ins_lat, transaction, code_page_size, addr (branch mode: dso_from,
    /// dso_to, symbol_from, symbol_to, cycles; --mem-mode: symbol_daddr, symbol_iaddr,
    /// dso_daddr, locked, tlb, mem, snoop, phys_daddr, data_page_size, blocked). A key
    /// may be shortened to a prefix, as perf allows. Another name is a tracepoint field:
    /// FIELD (of every tracepoint that has it), EVENT.FIELD, EVENT.* or %N.FIELD (the
    /// Nth event), trace_fields (all of them), each with /raw for the raw value.
    #[arg(short = 's', long = "sort")]
    pub sort: Option<String>,
    /// Memory access profile (files recorded with -d): entries by the
    /// sample's data access too, weighted by the sample's weight, sorted by
    /// perf's local_weight,mem,sym,dso,symbol_daddr,dso_daddr,snoop,tlb,locked,
    /// blocked,local_ins_lat by default.
    #[arg(long = "mem-mode")]
    pub mem_mode: bool,
    /// Output fields (overhead, sample, period, plus sort keys).
    #[arg(short = 'F', long = "fields")]
    pub fields: Option<String>,
    /// Branch-stack mode: one entry per sampled branch (default when the
    /// file has branch stacks).
    #[arg(short = 'b', long = "branch-stack", overrides_with = "no_branch_stack")]
    pub branch_stack: bool,
    /// Report samples, not branches, for files with branch stacks.
    #[arg(long = "no-branch-stack")]
    pub no_branch_stack: bool,
    /// perf's branch history: call graphs by address (each node with its
    /// source line), sorted by srcline,symbol,dso unless --sort says
    /// otherwise. prec does not add branch stacks to the call graphs: on a
    /// file with them it refuses.
    #[arg(long = "branch-history")]
    pub branch_history: bool,
    /// Call graphs: print_type,threshold[,print_limit],order,sort_key,value
    /// (graph|fractal|flat|folded|none, caller|callee, function|address|srcline,
    /// percent|period|count); bare -g is graph,0.5,caller,function,percent.
    #[arg(
        short = 'g',
        long = "call-graph",
        num_args = 0..=1,
        require_equals = false,
        default_missing_value = "graph,0.5,caller,function,percent"
    )]
    pub call_graph: Option<String>,
    /// Accumulate callchains of children into parent entries (default with callchains).
    #[arg(long = "children", overrides_with = "no_children")]
    pub children: bool,
    /// Do not accumulate callchains: Overhead is self time only.
    #[arg(long = "no-children")]
    pub no_children: bool,
    /// Caller-based call graphs (alias for -g caller order).
    #[arg(short = 'G', long = "inverted")]
    pub inverted: bool,
    /// Use at most this many callchain entries per sample.
    #[arg(long = "max-stack")]
    pub max_stack: Option<usize>,
    /// Show inline functions of DWARF-unwound call-chain entries (default,
    /// like perf 6.1; frame-pointer entries are never expanded).
    #[arg(long = "inline", overrides_with = "no_inline")]
    pub inline: bool,
    /// Do not show inline functions in call chains.
    #[arg(long = "no-inline")]
    pub no_inline: bool,
    /// Show a column with the number of samples.
    #[arg(short = 'n', long = "show-nr-samples")]
    pub show_nr_samples: bool,
    /// Show the per-thread counter values a `record -s` file carries.
    #[arg(short = 'T', long = "threads")]
    pub threads: bool,
    /// Show a column with the sum of the periods.
    #[arg(long = "show-total-period")]
    pub show_total_period: bool,
    /// Show the overhead of kernel (sys) and user (usr) samples too.
    #[arg(long = "show-cpu-utilization")]
    pub show_cpu_utilization: bool,
    /// Show the entries as a tree, one level per sort key (perf's
    /// --hierarchy; no --children, no -F).
    #[arg(long = "hierarchy", conflicts_with = "fields")]
    pub hierarchy: bool,
    /// Separate the columns with this string, without padding the numbers.
    #[arg(short = 't', long = "field-separator")]
    pub field_separator: Option<String>,
    /// How percentages of filtered entries are computed: relative (to the
    /// entries left) or absolute (to all samples, the default).
    #[arg(long = "percentage", value_parser = ["relative", "absolute"])]
    pub percentage: Option<String>,
    /// Only show entries that resolved to a symbol.
    #[arg(short = 'U', long = "hide-unresolved")]
    pub hide_unresolved: bool,
    /// Show full source file paths in source lines.
    #[arg(long = "full-source-path")]
    pub full_source_path: bool,
    /// Show the reference event's call graph for events recorded with
    /// `call-graph=no` (their header says so).
    #[arg(long = "show-ref-call-graph")]
    pub show_ref_call_graph: bool,
    /// Regex of the parent symbols for `--sort parent` (adds the key).
    #[arg(short = 'p', long = "parent")]
    pub parent: Option<String>,
    /// Column widths, in column order (0: the default width).
    #[arg(short = 'w', long = "column-widths", value_name = "W,W,...")]
    pub column_widths: Option<String>,
    /// Only entries of CPUs of this processor socket.
    #[arg(long = "socket-filter", value_name = "SOCKET")]
    pub socket_filter: Option<i32>,
    /// Regex of functions whose callees' samples count as theirs (their
    /// callees leave the call graphs).
    #[arg(long = "ignore-callees", value_name = "REGEX")]
    pub ignore_callees: Option<String>,
    /// Only show entries with a parent match (see --parent).
    #[arg(short = 'x', long = "exclude-other")]
    pub exclude_other: bool,
    /// Hide entries below this overhead percentage.
    #[arg(long = "percent-limit")]
    pub percent_limit: Option<f64>,
    /// Only consider samples of these commands.
    #[arg(short = 'c', long = "comms")]
    pub comms: Option<String>,
    /// Only consider samples of these process ids (perf's --pid).
    #[arg(long = "pid", alias = "pids")]
    pub pids: Option<String>,
    /// Only consider samples of these thread ids (perf's --tid).
    #[arg(long = "tid", alias = "tids")]
    pub tids: Option<String>,
    /// Only consider samples in these shared objects.
    #[arg(short = 'd', long = "dsos")]
    pub dsos: Option<String>,
    /// Only consider these symbols.
    #[arg(short = 'S', long = "symbols")]
    pub symbols: Option<String>,
    /// Only show entries whose symbol contains this text (also given as
    /// the one positional argument, like perf).
    #[arg(long = "symbol-filter")]
    pub symbol_filter: Option<String>,
    /// The symbol filter, as perf takes a lone extra argument.
    #[arg(value_name = "SYMBOL_FILTER")]
    pub symbol_filter_arg: Option<String>,
    /// Only consider samples on these CPUs.
    #[arg(short = 'C', long = "cpu")]
    pub cpu: Option<String>,
    /// Only samples in these times (perf's --time): START,STOP in seconds
    /// (either may be empty; several pairs separated by spaces), or
    /// percentages of the recording: 10%/2 (the second tenth), 0%-10%,
    /// 30%-40% (ranges, comma-separated), 25% (the first quarter).
    #[arg(long = "time")]
    pub time: Option<String>,
    #[command(flatten)]
    pub evswitch: EvSwitchArgs,
    /// Bucket size of `--sort time` (default 100ms; units s, ms, us, ns).
    #[arg(long = "time-quantum")]
    pub time_quantum: Option<String>,
    /// Show times with nanoseconds (`--sort time`).
    #[arg(long = "ns")]
    pub ns: bool,
    /// Show the perf.data header before the report.
    #[arg(long = "header")]
    pub header: bool,
    /// Show only the perf.data header.
    #[arg(long = "header-only")]
    pub header_only: bool,
    /// With --header/--header-only: show all header information.
    #[arg(short = 'I', long = "show-info")]
    pub show_info: bool,
    /// Show record counts per type.
    #[arg(long = "stats")]
    pub stats: bool,
    /// Show the recorded tasks as a process tree (pid, tid, ppid, comm).
    #[arg(long = "tasks")]
    pub tasks: bool,
    /// Show the recorded tasks with their memory maps.
    #[arg(long = "mmaps")]
    pub mmaps: bool,
    /// Dump every record (perf report -D).
    #[arg(short = 'D', long = "dump-raw-trace")]
    pub dump_raw_trace: bool,
    /// Show events of a group together.
    #[arg(long = "group", overrides_with = "no_group")]
    pub group: bool,
    /// Show the events of recorded groups separately.
    #[arg(long = "no-group", overrides_with = "group")]
    pub no_group: bool,
    /// With --group: order the entries by the event at this index of the
    /// group (0 or out of range: the first).
    #[arg(
        long = "group-sort-idx",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub group_sort_idx: Option<i32>,
    /// Plain text output (the only output; accepted for perf compatibility).
    #[arg(long = "stdio")]
    pub stdio: bool,
    /// perf's interactive browser. prec has none: it prints the --stdio
    /// report (as perf does when the output is not a terminal).
    #[arg(long = "tui")]
    pub tui: bool,
    /// perf's pretty-printing style key (normal, raw); perf 6.1's report
    /// output does not depend on it.
    #[arg(long = "pretty", value_name = "KEY")]
    pub pretty: Option<String>,
    /// Colors of the --stdio output (prec prints none; accepted for perf
    /// compatibility).
    #[arg(long = "stdio-color", num_args = 0..=1, default_missing_value = "always",
          value_parser = ["always", "never", "auto"])]
    pub stdio_color: Option<String>,
    /// Do not load vmlinux (prec takes kernel symbols from kallsyms only).
    #[arg(long = "ignore-vmlinux")]
    pub ignore_vmlinux: bool,
    /// Leave out events without samples (accepted for perf compatibility:
    /// perf 6.1's --stdio and prec leave them out anyway).
    #[arg(long = "skip-empty")]
    pub skip_empty: bool,
    /// Accepted for perf compatibility: perf 6.1's report still delivers
    /// the records sorted by time with it (its output does not change), and
    /// so does prec.
    #[arg(long = "disable-order")]
    pub disable_order: bool,
    /// Options of perf's annotation and TUI browsers, which the --stdio
    /// report does not read: accepted (and ignored) so that perf command
    /// lines work unchanged.
    #[command(flatten)]
    pub browser: BrowserArgs,
    /// Show a tracepoint's raw fields in the `trace` key, not its print
    /// format.
    #[arg(long = "raw-trace")]
    pub raw_trace: bool,
    /// More messages; with --stdio: long DSO names, each symbol's address
    /// and where its symbol table came from, C++ parameters.
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Don't show warnings and header comments.
    #[arg(short = 'q', long = "quiet")]
    pub quiet: bool,
}
