//! `prec record`: turns perf record's options into a
//! [`prec_record::capture::RecordConfig`] and runs it.

use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use prec_record::capture::{self, Affinity, CallGraph, Output, RecordConfig, RecordModes};
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
/// perf's `parse_pages_arg`: a number of pages, or a size with a B, K,
/// M or G suffix; rounded up to a power of two (saying so, as perf does).
fn parse_mmap_pages(text: &str, quiet: bool) -> Option<usize> {
    let text = text.trim();
    let page = 4096usize;
    let scale = match text.chars().last()?.to_ascii_uppercase() {
        'B' => Some(1usize),
        'K' => Some(1 << 10),
        'M' => Some(1 << 20),
        'G' => Some(1 << 30),
        _ => None,
    };
    let pages = match scale {
        Some(scale) => {
            let n: usize = text[..text.len() - 1].parse().ok()?;
            n.checked_mul(scale)?.div_ceil(page)
        }
        None => text.parse().ok()?,
    };
    if pages.is_power_of_two() {
        return Some(pages);
    }
    // perf's roundup_pow_of_two(0) is 1.
    let rounded = pages.max(1).checked_next_power_of_two()?;
    if !quiet {
        let mut n = rounded * page;
        let mut unit = 0;
        while n / 1024 > 1 && unit < 3 {
            n /= 1024;
            unit += 1;
        }
        let unit = ['B', 'K', 'M', 'G'][unit];
        eprintln!("rounding mmap pages size to {n}{unit} ({rounded} pages)");
    }
    Some(rounded)
}

fn default_mmap_pages() -> usize {
    let page = sys::page_size();
    let pages = (516 * 1024) / page;
    let pages = pages.saturating_sub(1).max(1);
    1usize << (usize::BITS - 1 - pages.leading_zeros())
}

/// perf's `unit_number__scnprintf`: `n` in the largest unit of 1024 that
/// leaves more than 1 (`258K`).
fn unit_number(mut n: u64) -> String {
    let units = b"BKMGTPE";
    let mut i = 0;
    while n / 1024 > 1 && i < 7 {
        n /= 1024;
        i += 1;
    }
    format!("{n}{}", units[i.min(6)] as char)
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

/// The kernel's `perf_event_max_stack` (perf's sysctl__max_stack: 127
/// when unreadable).
fn kernel_max_stack() -> u64 {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_max_stack")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(127)
}

fn parse_call_graph(s: &str) -> Result<CallGraph> {
    let mut parts = s.split(',');
    let mode = parts.next().unwrap_or("");
    match mode {
        // `fp,N` keeps N frames, when below the kernel's limit (perf's
        // parse_callchain_record; it reads N as strtoul does).
        "fp" => Ok(CallGraph::Fp),
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

/// perf's `-k` names (`parse_clockid`): case-insensitive, an optional
/// `CLOCK_` prefix, or a number.
fn parse_clockid(s: &str) -> Result<i32> {
    if let Ok(n) = s.trim().parse::<i32>() {
        return Ok(n);
    }
    let l = s.trim().to_ascii_lowercase();
    let l = l.strip_prefix("clock_").unwrap_or(&l);
    Ok(match l {
        "monotonic" | "mono" => 1,
        "monotonic_raw" | "raw" => 4,
        "realtime" | "real" => 0,
        "boottime" | "boot" => 7,
        "tai" => 11,
        _ => bail!("unknown clockid '{s}' (use monotonic, monotonic_raw, realtime, boottime, tai or a number)"),
    })
}

/// Size units (perf's `tags_size`), and the lower-case ones `--max-size`
/// also takes.
const SIZE_UNITS: [(&str, u64); 4] = [("B", 1), ("K", 1 << 10), ("M", 1 << 20), ("G", 1 << 30)];
const SIZE_UNITS_LOWER: [(&str, u64); 4] =
    [("b", 1), ("k", 1 << 10), ("m", 1 << 20), ("g", 1 << 30)];
/// Time units in seconds (perf's `tags_time`).
const TIME_UNITS: [(&str, u64); 4] = [("s", 1), ("m", 60), ("h", 3600), ("d", 86400)];

/// perf's `parse_tag_value`: a number followed by one of `units`, times
/// that unit's multiplier.
fn tag_value(s: &str, units: &[(&str, u64)]) -> Option<u64> {
    units
        .iter()
        .find_map(|&(unit, mult)| s.strip_suffix(unit)?.parse::<u64>().ok()?.checked_mul(mult))
}

/// perf's `switch_output_setup`: `signal`, a size with its unit (B, K, M,
/// G) or a time with its unit (s, m, h, d).
fn parse_switch_output(s: &str) -> Result<capture::SwitchOutput> {
    use capture::SwitchOutput;
    if s == "signal" {
        Ok(SwitchOutput::Signal)
    } else if let Some(size) = tag_value(s, &SIZE_UNITS) {
        Ok(SwitchOutput::Size(size))
    } else if let Some(secs) = tag_value(s, &TIME_UNITS) {
        Ok(SwitchOutput::Time(Duration::from_secs(secs)))
    } else {
        bail!("invalid --switch-output '{s}': expected signal, a size (10M) or a time (30s)")
    }
}

/// perf's `--max-size` (`parse_tag_value`): a number with a B, K, M or G
/// unit (a bare number is bytes).
fn parse_size(option: &str, s: &str) -> Result<u64> {
    let t = s.trim();
    tag_value(t, &SIZE_UNITS)
        .or_else(|| tag_value(t, &SIZE_UNITS_LOWER))
        .or_else(|| t.parse().ok())
        .ok_or_else(|| anyhow::anyhow!("invalid {option} '{s}': expected a size like 10M"))
}

/// x86-64 register names (perf's `sample_reg_masks`); `intr` allows XMM.
#[cfg(target_arch = "x86_64")]
fn reg_bit(name: &str, intr: bool) -> Option<u32> {
    const NAMES: [&str; 24] = [
        "ax", "bx", "cx", "dx", "si", "di", "bp", "sp", "ip", "flags", "cs", "ss", "ds", "es",
        "fs", "gs", "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
    ];
    if let Some(i) = NAMES.iter().position(|n| *n == name) {
        return Some(i as u32);
    }
    let x: u32 = name.strip_prefix("xmm")?.parse().ok()?;
    (intr && x < 16).then_some(32 + 2 * x)
}

/// arm64 register names: x0..x29, lr, sp, pc.
#[cfg(target_arch = "aarch64")]
fn reg_bit(name: &str, _intr: bool) -> Option<u32> {
    match name {
        "lr" => Some(30),
        "sp" => Some(31),
        "pc" => Some(32),
        _ => name
            .strip_prefix('x')?
            .parse()
            .ok()
            .filter(|&n: &u32| n < 30),
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
fn reg_bit(_name: &str, _intr: bool) -> Option<u32> {
    None
}

/// perf's default register mask (PERF_REGS_MASK).
fn all_regs() -> u64 {
    if cfg!(target_arch = "aarch64") {
        (1 << 33) - 1
    } else {
        0xff0fff
    }
}

/// `--user-regs` / `--intr-regs`: comma-separated names, empty = all.
fn parse_regs(s: &str, opt: &str, intr: bool) -> Result<u64> {
    if s.trim().is_empty() {
        return Ok(all_regs());
    }
    let mut mask = 0u64;
    for name in s.split(',') {
        let n = name.trim().to_ascii_lowercase();
        let bit =
            reg_bit(&n, intr).ok_or_else(|| anyhow::anyhow!("unknown register '{n}' in {opt}"))?;
        // XMM registers are 128 bits: two mask bits each.
        mask |= if bit >= 32 && n.starts_with("xmm") {
            3 << bit
        } else {
            1 << bit
        };
    }
    Ok(mask)
}

/// For each `--filter` and `--exclude-perf` in `argv` (the arguments
/// after `record`), in order: the index of the `-e` before it among the
/// `-e`s (perf applies both to the events of the last `-e`), and which
/// `--filter` it is (`None` for `--exclude-perf`). `None` when the
/// arguments cannot be matched up with what clap parsed (`events`
/// `-e`s, `filters` and `excludes` of the others).
fn filter_targets(
    argv: &[OsString],
    events: usize,
    filters: usize,
    excludes: usize,
) -> Option<Vec<(usize, Option<usize>)>> {
    let mut seen_events: usize = 0;
    let mut seen_filters = 0;
    let mut targets = Vec::new();
    let mut args = argv.iter().map(|a| a.to_string_lossy());
    while let Some(arg) = args.next() {
        let filter = match &*arg {
            "--" => break,
            "-e" | "--event" => {
                args.next();
                seen_events += 1;
                continue;
            }
            a if a.starts_with("--event=") || (a.starts_with("-e") && !a.starts_with("--")) => {
                seen_events += 1;
                continue;
            }
            "--filter" => {
                args.next();
                true
            }
            a if a.starts_with("--filter=") => true,
            "--exclude-perf" => false,
            _ => continue,
        };
        let which = filter.then(|| {
            seen_filters += 1;
            seen_filters - 1
        });
        targets.push((seen_events.checked_sub(1)?, which));
    }
    (seen_events == events && seen_filters == filters && targets.len() == filters + excludes)
        .then_some(targets)
}

/// perf's `parse_synth_opt`: whether to synthesize the running processes'
/// COMM/FORK records and their MMAP2 records. `no` and `all` decide at
/// once; `mmap` implies `task`; `cgroup` (perf's cgroup records) adds
/// nothing prec makes.
fn parse_synth(what: &str) -> Result<(bool, bool)> {
    let (mut tasks, mut mmaps) = (false, false);
    for part in what.split(',') {
        match part.to_ascii_lowercase().as_str() {
            "no" | "none" => return Ok((false, false)),
            "all" => return Ok((true, true)),
            "task" => tasks = true,
            "mmap" => (tasks, mmaps) = (true, true),
            "cgroup" => {}
            _ => bail!("invalid --synth {what:?}: expected no, all, task, mmap or cgroup"),
        }
    }
    Ok((tasks, mmaps))
}

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let quiet = args.quiet;
    if args.off_cpu {
        // perf 6.1 without BPF skeletons says this and records as usual.
        eprintln!(" Warning: option `off-cpu' is being ignored: prec has no BPF off-CPU profiling");
    }
    let mut evs = Vec::new();
    let mut from_option = Vec::new();
    for (i, e) in args.events.iter().enumerate() {
        let parsed = events::parse_event_list(e).map_err(|e| anyhow::anyhow!("{e}"))?;
        from_option.extend(std::iter::repeat_n(i, parsed.len()));
        evs.extend(parsed);
    }
    let excludes = usize::from(args.exclude_perf);
    if !args.filters.is_empty() || excludes > 0 {
        let argv: Vec<OsString> = std::env::args_os()
            .skip_while(|a| a != "record")
            .skip(1)
            .collect();
        let Some(targets) = filter_targets(&argv, args.events.len(), args.filters.len(), excludes)
        else {
            bail!(
                "--filter and --exclude-perf should follow a -e tracepoint option \
                 (write each as --filter FILTER after its -e EVENT)"
            );
        };
        for &(option, which) in &targets {
            let (name, filter) = match which.and_then(|i| args.filters.get(i)) {
                Some(f) => ("--filter", f.clone()),
                // perf's add_exclude_perf_filter: the recorder's own pid.
                None => (
                    "--exclude-perf",
                    format!("common_pid != {}", std::process::id()),
                ),
            };
            for (e, _) in evs
                .iter_mut()
                .zip(&from_option)
                .filter(|&(_, &o)| o == option)
            {
                if e.tracepoint.is_none() {
                    bail!(
                        "{name} option should follow a -e tracepoint option ({} is not one)",
                        e.name
                    );
                }
                // perf's evsel__append_tp_filter.
                e.filter = Some(match e.filter.take() {
                    Some(old) => format!("({old}) && ({filter})"),
                    None => filter.clone(),
                });
            }
        }
    }
    // perf's parse_cgroups: the N-th cgroup name (over every -G, split at
    // commas; an empty one skips an event) goes to the N-th event.
    if !args.cgroups.is_empty() {
        if evs.is_empty() {
            bail!("must define events before cgroups");
        }
        let names: Vec<&str> = args.cgroups.iter().flat_map(|g| g.split(',')).collect();
        if names.len() > evs.len() {
            bail!(
                "more cgroups ({}) than events ({}) in -G",
                names.len(),
                evs.len()
            );
        }
        for (e, name) in evs.iter_mut().zip(names) {
            e.cgroup = (!name.is_empty()).then(|| name.to_string());
        }
        if !args.all_cpus && args.cpu.is_none() {
            bail!("cgroup monitoring only available in system-wide mode");
        }
    }
    // perf's --group (evlist__set_leader): the whole list is one group
    // led by its first event.
    if args.group && evs.len() > 1 {
        for (i, e) in evs.iter_mut().enumerate() {
            e.group_leader = Some(0);
            e.group_member = i > 0;
        }
    }
    if args.all_user && args.all_kernel {
        bail!("--all-user and --all-kernel cannot be used together");
    }
    if (args.all_user || args.all_kernel) && evs.is_empty() {
        let cpuid = sysinfo::cpuid().ok().flatten();
        evs.push(events::EventSpec::default_event_for(cpuid.as_deref()));
    }
    for e in evs.iter_mut() {
        if args.all_user {
            e.exclude_kernel = true;
            e.exclude_user = false;
        }
        if args.all_kernel {
            e.exclude_kernel = false;
            e.exclude_user = true;
        }
    }
    let clockid = match &args.clockid {
        Some(c) => {
            let id = parse_clockid(c)?;
            let res = sys::clock_getres_ns(id).map_err(|e| anyhow::anyhow!("clockid {c}: {e}"))?;
            Some((id, res))
        }
        None => None,
    };
    let compression_level = match args.compression_level {
        Some(l) if l > 22 => {
            bail!("invalid -z {l}: the compression level must be between 1 and 22")
        }
        Some(0) | None => None,
        Some(l) => Some(l),
    };
    let (synth_tasks, synth_mmaps) = match &args.synth {
        Some(what) => parse_synth(what)?,
        None => (true, true),
    };
    // `--call-graph fp,N` (perf's parse_callchain_record: N read as
    // strtoul reads it, kept when below the kernel's perf_event_max_stack).
    let fp_max_stack = args
        .call_graph
        .as_deref()
        .and_then(|s| s.strip_prefix("fp,"))
        .map(|n| {
            let n = n.trim();
            let (digits, radix) = match n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
                Some(hex) => (hex, 16),
                None if n.len() > 1 && n.starts_with('0') => (&n[1..], 8),
                None => (n, 10),
            };
            let end = digits
                .find(|c: char| !c.is_digit(radix))
                .unwrap_or(digits.len());
            u64::from_str_radix(&digits[..end], radix).unwrap_or(0)
        })
        .filter(|&n| n < kernel_max_stack())
        .map_or(0, |n| n as u16);
    let modes = RecordModes {
        fp_max_stack,
        compression_level,
        clockid,
        timestamp: args.timestamp,
        sample_addr: args.data,
        sample_cpu: args.sample_cpu,
        sample_period: args.period,
        sample_weight: args.weight,
        sample_transaction: args.transaction,
        aio: match args.aio {
            Some(n @ 1..=4) => Some(n),
            Some(n) => bail!("invalid --aio={n}: expected 1 to 4 (perf's limit)"),
            None => None,
        },
        affinity: match args.affinity.as_deref() {
            None => Affinity::System,
            Some("node") => Affinity::Node,
            Some("cpu") => Affinity::Cpu,
            Some(other) => bail!("invalid --affinity '{other}': expected node or cpu"),
        },
        proc_map_timeout: args.proc_map_timeout.map(std::time::Duration::from_millis),
        switch_events: args.switch_events,
        namespaces: args.namespaces,
        per_thread: args.per_thread,
        // perf's --buildid-mmap: the maps carry the build-ids, so the
        // files are not read back for them.
        no_buildid: args.no_buildid || args.buildid_mmap,
        buildid_mmap: args.buildid_mmap,
        buildid_all: args.buildid_all,
        timestamp_boundary: args.timestamp_boundary,
        no_buffering: args.no_buffering,
        // perf ignores these in parallel streaming mode, with a warning.
        // perf's --switch-output-event implies the signal mode.
        switch_output: match args.switch_output.as_deref() {
            Some(s) => Some(parse_switch_output(s)?),
            None if !args.switch_output_event.is_empty() => Some(prec_record::capture::SwitchOutput::Signal),
            None => None,
        }
        .filter(|_| args.threads.is_none()),
        switch_output_events: args
            .switch_output_event
            .iter()
            .map(|e| events::parse_event_list(e).map_err(|e| anyhow::anyhow!("{e}")))
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect(),
        threads: args.threads.clone(),
        switch_max_files: args.switch_max_files.unwrap_or(0),
        // perf: --overwrite makes the tasks up at the end.
        tail_synthesize: args.tail_synthesize || args.overwrite,
        overwrite: args.overwrite,
        all_cgroups: args.all_cgroups,
        realtime: args.realtime.filter(|&p| p != 0),
        max_size: args
            .max_size
            .as_deref()
            .map(|s| parse_size("--max-size", s))
            .transpose()?,
        mmap_flush: args
            .mmap_flush
            .as_deref()
            .map(|s| parse_size("--mmap-flush", s))
            .transpose()?,
        delay: args
            .delay
            .as_deref()
            .map(|d| {
                prec_record::capture::Delay::parse(d).ok_or_else(|| {
                    anyhow::anyhow!(
                        "invalid -D '{d}': expected milliseconds, -1 (start disabled) or increasing windows like 10-20,30-40"
                    )
                })
            })
            .transpose()?,
        control: args
            .control
            .as_deref()
            .map(prec_record::control::ControlSpec::parse)
            .transpose()
            .map_err(|e| anyhow::anyhow!(e))?,
        inherit_stat: args.stat,
        user_regs: match &args.user_regs {
            Some(s) => parse_regs(s, "--user-regs", false)?,
            None => 0,
        },
        intr_regs: match &args.intr_regs {
            Some(s) => parse_regs(s, "--intr-regs", true)?,
            None => 0,
        },
        raw_samples: args.raw_samples,
        user_freq: args.freq.is_some(),
        phys_data: args.phys_data,
        data_page_size: args.data_page_size,
        code_page_size: args.code_page_size,
        sample_identifier: args.sample_identifier,
        no_synth_tasks: !synth_tasks,
        no_synth_mmaps: !synth_mmaps,
        user_callchains: args.user_callchains,
        kernel_callchains: args.kernel_callchains,
        no_samples: args.no_samples,
        running_time: args.running_time,
        no_bpf_event: args.no_bpf_event,
        branch_filter: match &args.branch_filter {
            Some(f) => parse_branch_filter(f)?,
            None if args.branch_any => BRANCH_ANY,
            None => 0,
        },
    };
    let _ = args.no_buildid_cache;
    if args.count.is_some() && args.freq.is_some() {
        bail!("-c and -F cannot be used together");
    }
    // perf takes -c 0 for no -c (after refusing it beside -F).
    let period = args.count.filter(|&c| c > 0);
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
            if freq > m && args.strict_freq {
                bail!(
                    "Maximum frequency rate ({m} Hz) exceeded: use -F with a lower value, \
                     or raise /proc/sys/kernel/perf_event_max_sample_rate"
                );
            }
            if freq > m {
                if !quiet {
                    // perf's words and indent.
                    let indent = " ".repeat(9);
                    eprintln!(
                        "warning: Maximum frequency rate ({m} Hz) exceeded, throttling from {freq} Hz to {m} Hz.\n\
                         {indent}The limit can be raised via /proc/sys/kernel/perf_event_max_sample_rate.\n\
                         {indent}The kernel will lower it when perf's interrupts take too long.\n\
                         {indent}Use --strict-freq to disable this throttling, refusing to record."
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
            // perf's `-m DATA[,AUX]`: the AUX area's size is checked, and
            // unused (no AUX events here).
            let (data, aux) = match s.split_once(',') {
                Some((d, a)) => (d, Some(a)),
                None => (s.as_str(), None),
            };
            if let Some(aux) = aux.filter(|a| !a.trim().is_empty()) {
                parse_mmap_pages(aux, quiet)
                    .ok_or_else(|| anyhow::anyhow!("invalid -m '{s}': bad AUX area size"))?;
            }
            if data.trim().is_empty() {
                default_mmap_pages()
            } else {
                parse_mmap_pages(data, quiet).ok_or_else(|| {
                    anyhow::anyhow!("invalid -m '{s}': expected pages or a size (B/K/M/G)")
                })?
            }
        }
    };
    // perf's switch_output_size_warn: files get at least what the kernel
    // buffers before a wake-up.
    if let (Some(s), false, false) = (&args.switch_output, args.no_buffering, quiet) {
        if let Ok(capture::SwitchOutput::Size(size)) = parse_switch_output(s) {
            let wakeup = (mmap_pages as u64 + 1) * sys::page_size() as u64 / 2;
            if size < wakeup {
                eprintln!(
                    "WARNING: switch-output data size lower than wakeup kernel buffer size ({}) \
                     expect bigger perf.data sizes",
                    unit_number(wakeup)
                );
            }
        }
    }
    let pids = match &args.pid {
        Some(s) => parse_ids(s, "pid")?,
        None => Vec::new(),
    };
    let tids = match &args.tid {
        Some(s) => parse_ids(s, "tid")?,
        None => Vec::new(),
    };
    let mut cpus = match &args.cpu {
        Some(s) => Some(sys::parse_cpu_list(s).map_err(|e| anyhow::anyhow!("invalid -C: {e}"))?),
        None => None,
    };
    let mut all_cpus = args.all_cpus;
    let mut user = args.uid.as_deref();
    // perf's target__validate: a task target wins over CPUs, a user and
    // system-wide; a user over CPUs and system-wide. Only the first
    // conflict is told.
    let has_task = !pids.is_empty() || !tids.is_empty();
    let mut overridden: Option<&str> = None;
    for (conflict, message) in [
        (has_task && cpus.is_some(), "PID/TID switch overriding CPU"),
        (has_task && user.is_some(), "PID/TID switch overriding UID"),
        (
            user.is_some() && cpus.is_some(),
            "UID switch overriding CPU",
        ),
        (has_task && all_cpus, "PID/TID switch overriding SYSTEM"),
        (user.is_some() && all_cpus, "UID switch overriding SYSTEM"),
    ] {
        if conflict {
            overridden.get_or_insert(message);
        }
    }
    if has_task {
        user = None;
    }
    if has_task || user.is_some() {
        cpus = None;
        all_cpus = false;
    }
    if let Some(message) = overridden {
        eprintln!("Warning:\n{message}");
    }
    let uid = match user {
        Some(name) => Some(sys::user_id(name).map_err(|e| match e {
            sys::UserLookupError::InvalidUser => anyhow::anyhow!("Invalid User: {name}"),
            sys::UserLookupError::UserNotFound => {
                anyhow::anyhow!("Problems obtaining information for user {name}")
            }
        })?),
        None => None,
    };
    // Without a command or a target, perf records system-wide (until
    // Ctrl-C). With a target, a command is only the duration.
    let system_wide =
        all_cpus || cpus.is_some() || (args.command.is_empty() && !has_task && uid.is_none());
    // perf's default (check_pipe): standard output when it is a pipe.
    let output_name = match &args.output {
        Some(name) => name.clone(),
        None if crate::cli::is_pipe(std::io::stdout().as_fd()) => "-".to_string(),
        None => "perf.data".to_string(),
    };
    let output = if output_name == "-" {
        Output::Stdout
    } else {
        Output::File(PathBuf::from(&output_name))
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
        uid,
        system_wide,
        cpus,
        mmap_pages,
        // perf's record: -t TID means no inheritance unless -i was given
        // either way (the TID's later threads are not followed).
        inherit: !args.no_inherit && args.tid.is_none(),
        quiet,
        cmdline: std::env::args().collect(),
        modes,
    };
    if args.verbose > 0 && !quiet {
        // perf record -v's settings lines, then its line per ring buffer
        // size (data pages plus the control page).
        eprintln!("nr_cblocks: {}", cfg.modes.aio.unwrap_or(0));
        let affinity = match cfg.modes.affinity {
            Affinity::System => "SYS",
            Affinity::Node => "NODE",
            Affinity::Cpu => "CPU",
        };
        eprintln!("affinity: {affinity}");
        eprintln!("mmap flush: {}", cfg.modes.mmap_flush.unwrap_or(1).max(1));
        eprintln!("comp level: {}", cfg.modes.compression_level.unwrap_or(0));
        eprintln!("mmap size {}B", (cfg.mmap_pages + 1) * sys::page_size());
    }
    if cfg.modes.threads.is_some() {
        if cfg.modes.aio.is_some() {
            bail!("Asynchronous streaming mode (--aio) is mutually exclusive to parallel streaming mode.");
        }
        if cfg.modes.per_thread {
            bail!("--per-thread option is mutually exclusive to parallel streaming mode.");
        }
        if matches!(cfg.output, Output::Stdout) {
            bail!("parallel streaming mode (--threads) writes a directory: it needs -o DIR, not a pipe");
        }
        for (given, option) in [
            (args.switch_output.is_some(), "--switch-output"),
            (args.timestamp_filename, "--timestamp-filename"),
        ] {
            if given {
                eprintln!("WARNING: {option} option is not available in parallel streaming mode.");
            }
        }
    }
    if cfg.modes.switch_output.is_some() {
        if matches!(cfg.output, Output::Stdout) {
            bail!("--switch-output needs a file output (-o FILE), not a pipe");
        }
        if cfg.modes.compression_level.is_some() {
            bail!("--switch-output cannot be combined with -z in prec");
        }
    }
    // perf writes the pipe's attrs with the tail too, after the samples
    // that need them: its own report cannot read that stream.
    if cfg.modes.overwrite && matches!(cfg.output, Output::Stdout) {
        bail!("--overwrite needs a file output (-o FILE): the tasks are made up at the end, after the samples a pipe's readers need them for");
    }
    if cfg.modes.tail_synthesize && matches!(cfg.output, Output::Stdout) {
        bail!("--tail-synthesize needs a file output (-o FILE): a pipe's readers need the events' attributes first");
    }
    if args.dry_run {
        return Ok(ExitCode::SUCCESS);
    }
    // perf counts the samples of the last file only, and prints none
    // after switching.
    let counts_samples = cfg.modes.counts_samples() && cfg.modes.switch_output.is_none();
    let out = capture::record(&cfg)?;
    // --timestamp-filename: the finished file gets the time as a suffix
    // (a pipe only the message).
    let dumped = if (args.timestamp_filename
        || args.switch_output.is_some()
        || !args.switch_output_event.is_empty())
        && cfg.modes.threads.is_none()
    {
        match &output {
            Output::Stdout => {
                let stamp = sys::local_timestamp().context("cannot read the time")?;
                Some(format!("-.{stamp}"))
            }
            Output::File(p) => {
                let to = capture::stamped_name(p).context("cannot read the time")?;
                let to = to.display().to_string();
                std::fs::rename(p, &to)
                    .with_context(|| format!("cannot rename {} to {to}", p.display()))?;
                // --switch-max-files counts this last file too, as perf's
                // rotation does.
                let mut kept = out.dumps.clone();
                kept.push(PathBuf::from(&to));
                let max = cfg.modes.switch_max_files;
                while max > 0 && kept.len() > max {
                    let _ = std::fs::remove_file(kept.remove(0));
                }
                Some(to)
            }
        }
    } else {
        None
    };
    if !quiet {
        eprintln!(
            "[ prec record: Woken up {} times to write data ]",
            out.wakeups
        );
        warn_about_lost(&out, counts_samples);
        let mut name = match &output {
            Output::Stdout => "-".to_string(),
            Output::File(p) => p.display().to_string(),
        };
        if let Some(dumped) = &dumped {
            eprintln!("[ prec record: Dump {dumped} ]");
            // perf's own words: the name is not repeated.
            name.push_str(".<timestamp>");
        }
        // perf counts samples while collecting build-ids: without them
        // (-B, -z, --buildid-all), or without samples, it prints no count.
        let samples = if !counts_samples || out.samples == 0 {
            String::new()
        } else {
            format!(" ({} samples)", out.samples)
        };
        let compressed = match out.compressed {
            Some((orig, comp)) if orig > 0 && comp > 0 => format!(
                ", compressed (original {:.3} MB, ratio is {:.3})",
                orig as f64 / (1024.0 * 1024.0),
                orig as f64 / comp as f64
            ),
            _ => String::new(),
        };
        eprintln!(
            "[ prec record: Captured and wrote {:.3} MB {}{}{} ]",
            out.data_bytes as f64 / (1024.0 * 1024.0),
            name,
            samples,
            compressed
        );
    }
    Ok(ExitCode::from(out.exit_code().clamp(0, 255) as u8))
}

/// `PERF_SAMPLE_BRANCH_ANY`.
const BRANCH_ANY: u64 = 1 << 3;

/// perf's `-j` names → `perf_branch_sample_type` bits (uapi
/// `perf_branch_sample_type_shift`).
fn parse_branch_filter(list: &str) -> Result<u64> {
    const NAMES: [(&str, u32); 15] = [
        ("u", 0),
        ("k", 1),
        ("hv", 2),
        ("any", 3),
        ("any_call", 4),
        ("any_ret", 5),
        ("ind_call", 6),
        ("abort_tx", 7),
        ("in_tx", 8),
        ("no_tx", 9),
        ("cond", 10),
        ("stack", 11),
        ("ind_jmp", 12),
        ("call", 13),
        ("save_type", 16),
    ];
    let mut bits = 0u64;
    for name in list.split(',').map(str::trim) {
        match NAMES.iter().find(|(n, _)| *n == name) {
            Some((_, shift)) => bits |= 1 << shift,
            None => bail!("unknown branch filter {name:?}, check man page"),
        }
    }
    // perf's parse_branch_str: no branch type means any branch (and the
    // privilege levels are then dropped).
    if bits & !0b111 == 0 {
        bits = BRANCH_ANY;
    }
    Ok(bits)
}

/// The warnings perf record prints about lost data: perf's session's
/// (`perf_session__warn_about_errors`) while it reads the file back for
/// build-ids, so in its words and only where it reads it; elsewhere prec's
/// own short ones, as losing data should never go unsaid.
fn warn_about_lost(out: &capture::RecordOutcome, read_back: bool) {
    let lost = &out.lost;
    if !read_back {
        if lost.lost_records > 0 {
            eprintln!(
                "Warning:\nlost {} chunks ({} events)!\n\nCheck IO/CPU overload!\n",
                lost.lost_records, lost.lost_events
            );
        }
        if lost.lost_samples > 0 {
            eprintln!("Warning:\n{} samples lost!\n", lost.lost_samples);
        }
        return;
    }
    if lost.lost_records > 0 {
        eprintln!(
            "Warning:\nProcessed {} events and lost {} chunks!\n\nCheck IO/CPU overload!\n",
            out.records, lost.lost_records
        );
    }
    let processed = out.sample_records + lost.lost_samples;
    if processed > 0 {
        let drop_rate = lost.lost_samples as f64 / processed as f64;
        if drop_rate > 0.05 {
            eprintln!(
                "Warning:\nProcessed {processed} samples and lost {:3.2}%!\n",
                drop_rate * 100.0
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(
        args: &[&str],
        events: usize,
        filters: usize,
        excludes: usize,
    ) -> Option<Vec<(usize, Option<usize>)>> {
        let argv: Vec<OsString> = args.iter().map(OsString::from).collect();
        filter_targets(&argv, events, filters, excludes)
    }

    #[test]
    fn synth_values_like_perf() {
        assert_eq!(parse_synth("no").ok(), Some((false, false)));
        assert_eq!(parse_synth("task").ok(), Some((true, false)));
        assert_eq!(parse_synth("mmap").ok(), Some((true, true)));
        assert_eq!(parse_synth("cgroup").ok(), Some((false, false)));
        assert_eq!(parse_synth("task,all").ok(), Some((true, true)));
        assert_eq!(parse_synth("task,no").ok(), Some((false, false)));
        assert!(parse_synth("tasks").is_err());
    }

    #[test]
    fn a_filter_belongs_to_the_event_option_before_it() {
        let args = [
            "-e",
            "sched:a",
            "--filter",
            "x",
            "-esched:b",
            "--filter=y",
            "--filter",
            "z",
            "-a",
            "--event=c",
            "--",
            "prog",
            "-e",
            "--filter",
        ];
        assert_eq!(
            targets(&args, 3, 3, 0),
            Some(vec![(0, Some(0)), (1, Some(1)), (1, Some(2))])
        );
        let args = ["-e", "a", "--exclude-perf", "-e", "b", "--filter", "x"];
        assert_eq!(targets(&args, 2, 1, 1), Some(vec![(0, None), (1, Some(0))]));
        // Nothing before the first filter, or counts clap saw otherwise.
        assert_eq!(targets(&["--filter", "x", "-e", "a"], 1, 1, 0), None);
        assert_eq!(targets(&["-e", "a", "--filter", "x"], 2, 1, 0), None);
    }
}
