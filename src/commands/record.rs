//! `prec record`: turns perf record's options into a
//! [`prec_record::capture::RecordConfig`] and runs it.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Result};
use prec_record::capture::{self, CallGraph, Output, RecordConfig};
use prec_record::events;
use prec_record::sys;
use prec_record::sysinfo;

use crate::cli::RecordArgs;

/// perf's default sampling frequency.
const DEFAULT_FREQ: u64 = 4000;
/// perf's default DWARF stack dump size.
const DEFAULT_DWARF_SIZE: u32 = 8192;
/// perf's default data pages per ring: (516 KiB / page) - 1 rounded down to a
/// power of two = 128 with 4 KiB pages.
fn default_mmap_pages() -> usize {
    let page = sys::page_size();
    let pages = (516 * 1024) / page;
    let pages = pages.saturating_sub(1).max(1);
    1usize << (usize::BITS - 1 - pages.leading_zeros())
}

fn parse_ids(s: &str, what: &str) -> Result<Vec<i32>> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| {
            p.trim()
                .parse::<i32>()
                .ok()
                .filter(|&v| v > 0)
                .ok_or_else(|| anyhow::anyhow!("invalid {what} '{}'", p.trim()))
        })
        .collect()
}

fn parse_call_graph(s: &str) -> Result<CallGraph> {
    let mut parts = s.split(',');
    let mode = parts.next().unwrap_or("");
    match mode {
        "fp" => {
            if parts.next().is_some() {
                bail!("--call-graph fp takes no size");
            }
            Ok(CallGraph::Fp)
        }
        "dwarf" => {
            let size = match parts.next() {
                None => DEFAULT_DWARF_SIZE,
                Some(v) => {
                    let n: u64 = v
                        .trim()
                        .parse()
                        .map_err(|_| anyhow::anyhow!("invalid --call-graph dwarf size '{v}'"))?;
                    // perf: rounded up to a multiple of 8, at most 65528.
                    let n = n.div_ceil(8) * 8;
                    if n == 0 || n > 65528 {
                        bail!("--call-graph dwarf size must be between 1 and 65528, got {v}");
                    }
                    n as u32
                }
            };
            Ok(CallGraph::Dwarf(size))
        }
        "lbr" => bail!(
            "--call-graph lbr is not supported by prec (it needs Intel LBR hardware); use fp or dwarf"
        ),
        other => bail!("unknown --call-graph mode '{other}' (use fp or dwarf[,SIZE])"),
    }
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let quiet = args.quiet;
    let mut evs = Vec::new();
    for e in &args.events {
        evs.extend(events::parse_event_list(e).map_err(|e| anyhow::anyhow!("{e}"))?);
    }
    if args.count.is_some() && args.freq.is_some() {
        bail!("-c and -F cannot be used together");
    }
    let period = match args.count {
        Some(0) => bail!("invalid -c 0: the sample period must be greater than 0"),
        other => other,
    };
    let max_rate = sysinfo::max_sample_rate().ok();
    let mut freq = DEFAULT_FREQ;
    if let Some(f) = &args.freq {
        freq = if f == "max" {
            max_rate.unwrap_or(DEFAULT_FREQ)
        } else {
            match f.trim().parse::<u64>() {
                Ok(0) => bail!("invalid -F 0: the frequency must be greater than 0"),
                Ok(v) => v,
                Err(_) => bail!("invalid -F '{f}': expected a frequency in Hz or 'max'"),
            }
        };
    }
    if period.is_none() {
        if let Some(m) = max_rate {
            if freq > m {
                if !quiet {
                    eprintln!(
                        "warning: Maximum frequency rate ({m} Hz) exceeded, throttling from {freq} Hz to {m} Hz.\n\
                         The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate."
                    );
                }
                freq = m;
            }
        }
    }
    let call_graph = match (&args.call_graph, args.call_graph_fp) {
        (Some(s), _) => parse_call_graph(s)?,
        (None, true) => CallGraph::Fp,
        (None, false) => CallGraph::None,
    };
    let mmap_pages = match &args.mmap_pages {
        None => default_mmap_pages(),
        Some(s) => {
            let n: usize = s
                .trim()
                .parse()
                .map_err(|_| anyhow::anyhow!("invalid -m '{s}': expected a number of pages"))?;
            if n == 0 || !n.is_power_of_two() {
                bail!("invalid -m {n}: the number of mmap pages must be a power of two");
            }
            n
        }
    };
    let pids = match &args.pid {
        Some(s) => parse_ids(s, "pid")?,
        None => Vec::new(),
    };
    let tids = match &args.tid {
        Some(s) => parse_ids(s, "tid")?,
        None => Vec::new(),
    };
    let cpus = match &args.cpu {
        Some(s) => Some(sys::parse_cpu_list(s).map_err(|e| anyhow::anyhow!("invalid -C: {e}"))?),
        None => None,
    };
    let system_wide = args.all_cpus || cpus.is_some();
    if system_wide && (!pids.is_empty() || !tids.is_empty()) {
        bail!("-a/-C cannot be combined with -p/-t");
    }
    if args.command.is_empty() && pids.is_empty() && tids.is_empty() && !system_wide {
        bail!("no command to record: use prec record [OPTIONS] -- CMD [ARGS...], or -p PID, -t TID, -a");
    }
    if !args.command.is_empty() && (!pids.is_empty() || !tids.is_empty()) {
        // perf records the targets and uses the command only as a duration.
    }
    let output = if args.output == "-" {
        Output::Stdout
    } else {
        Output::File(PathBuf::from(&args.output))
    };
    let cfg = RecordConfig {
        events: evs,
        freq,
        period,
        call_graph,
        output: output.clone(),
        command: args.command.iter().map(OsString::from).collect(),
        pids,
        tids,
        system_wide,
        cpus,
        mmap_pages,
        inherit: !args.no_inherit,
        quiet,
        cmdline: std::env::args().collect(),
    };
    let out = capture::record(&cfg)?;
    if !quiet {
        if out.lost.lost_records > 0 {
            eprintln!(
                "Warning:\nProcessed {} samples and lost {} chunks ({} events)!\n\nCheck IO/CPU overload!\n",
                out.samples, out.lost.lost_records, out.lost.lost_events
            );
        }
        if out.lost.lost_samples > 0 {
            eprintln!("Warning:\n{} samples lost!\n", out.lost.lost_samples);
        }
        eprintln!(
            "[ prec record: Woken up {} times to write data ]",
            out.wakeups
        );
        let name = match &output {
            Output::Stdout => "-".to_string(),
            Output::File(p) => p.display().to_string(),
        };
        eprintln!(
            "[ prec record: Captured and wrote {:.3} MB {} ({} samples) ]",
            out.data_bytes as f64 / (1024.0 * 1024.0),
            name,
            out.samples
        );
    }
    Ok(ExitCode::from(out.exit_code().clamp(0, 255) as u8))
}
