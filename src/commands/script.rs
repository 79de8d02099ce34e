//! `prec script`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use prec_report::script::{self, ScriptError, ScriptOptions};

use crate::cli::ScriptArgs;
use crate::input::Input;

/// A comma-separated list of names.
fn names(s: &str) -> Vec<String> {
    s.split(',')
        .map(|x| x.trim().to_string())
        .filter(|x| !x.is_empty())
        .collect()
}

fn list<T: std::str::FromStr>(s: &str, what: &str) -> Result<Vec<T>> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| {
            x.parse::<T>()
                .map_err(|_| anyhow::anyhow!("bad {what} `{x}'"))
        })
        .collect()
}

/// perf's CPU list syntax: `0-2,5`.
pub(crate) fn cpu_list(s: &str) -> Result<Vec<u32>> {
    let mut v = Vec::new();
    for part in s.split(',').map(str::trim).filter(|x| !x.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.parse().with_context(|| format!("bad CPU list `{s}'"))?;
                let b: u32 = b.parse().with_context(|| format!("bad CPU list `{s}'"))?;
                if b < a || b - a > 65536 {
                    anyhow::bail!("bad CPU range `{part}'");
                }
                v.extend(a..=b);
            }
            None => v.push(
                part.parse()
                    .with_context(|| format!("bad CPU list `{s}'"))?,
            ),
        }
    }
    Ok(v)
}

/// The file loader that memory-maps binaries (prec-record holds the unsafe code).
pub(crate) fn file_loader() -> prec_report::symbolize::FileLoader {
    std::sync::Arc::new(|path: &std::path::Path| {
        prec_record::mapped::MappedFile::open(path).map(prec_report::symbolize::FileBytes::new)
    })
}

/// DWARF unwinding for `--call-graph dwarf` recordings.
pub(crate) fn dwarf_unwinder() -> prec_report::script::UnwinderFactory {
    std::sync::Arc::new(|| Box::new(prec_report::unwind::DwarfUnwinder::new()))
}

fn options(args: &ScriptArgs) -> Result<ScriptOptions> {
    let mut o = ScriptOptions::new();
    o.fields = args.fields.clone();
    o.show_task_events = args.show_task_events;
    o.show_mmap_events = args.show_mmap_events;
    o.show_switch_events = args.show_switch_events;
    o.show_bpf_events = args.show_bpf_events;
    o.show_cgroup_events = args.show_cgroup_events;
    o.show_lost_events = args.show_lost_events;
    o.show_namespace_events = args.show_namespace_events;
    o.show_round_events = args.show_round_events;
    o.unordered = args.dump_unsorted_raw_trace;
    o.reltime = args.reltime;
    o.deltatime = args.deltatime;
    o.dsos = args.dsos.as_deref().map(names);
    o.symbols = args.symbols.as_deref().map(names);
    o.hide_call_graph = args.hide_call_graph;
    o.max_stack = args.max_stack;
    o.stop_bt = args.stop_bt.as_deref().map(names);
    o.ns = args.ns;
    o.utc_offset = Some(prec_record::sys::utc_offset_at);
    o.full_source_path = args.full_source_path;
    o.no_inline = args.no_inline;
    o.comms = args.comms.as_deref().map(names);
    if let Some(p) = &args.pids {
        o.pids = Some(list(p, "pid")?);
    }
    if let Some(t) = &args.tids {
        o.tids = Some(list(t, "tid")?);
    }
    if let Some(c) = &args.cpu {
        o.cpus = Some(cpu_list(c)?);
    }
    o.symfs = crate::cli::effective_symfs(&args.data.symfs);
    o.build_id_dir = args.data.symfs.as_ref().map(|d| d.join(".debug"));
    o.kallsyms = args.data.kallsyms.clone();
    o.demangle = !args.data.no_demangle;
    o.demangle_params = args.verbose > 0;
    o.file_loader = Some(file_loader());
    o.unwinder = Some(dwarf_unwinder());
    Ok(o)
}

pub fn run(args: ScriptArgs) -> Result<ExitCode> {
    let mut opts = options(&args)?;
    let input = std::sync::Arc::new(Input::open(&args.data.input(), args.data.force)?);
    // A large input need not stay resident once read.
    let mapped = input.clone();
    opts.release = Some(std::sync::Arc::new(move |offset| {
        mapped.release_prefix(offset)
    }));
    let file = input.parse()?;
    if args.cpu.is_some() && !crate::commands::report::samples_cpus(&file) {
        eprintln!("{}", crate::commands::report::NO_CPU_EVENTS);
        return Ok(ExitCode::FAILURE);
    }
    opts.time = match (args.time.as_deref(), args.reltime) {
        (Some(t), true) => {
            use prec_report::time_ranges::{sample_times, TimeRanges};
            Some(TimeRanges::parse_relative(t, sample_times(&file)).map_err(anyhow::Error::msg)?)
        }
        (t, _) => crate::commands::report::time_ranges(t, &file)?,
    };
    opts.evswitch = crate::commands::report::evswitch(&args.evswitch, &file)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    if args.header || args.header_only {
        let pipe = file.mode() == prec_format::read::Mode::Pipe;
        let features = !(args.header_only && pipe);
        crate::commands::report::write_header(&input, &file, args.show_info, features, &mut out)?;
        if args.header_only {
            out.flush()?;
            return Ok(ExitCode::SUCCESS);
        }
    }
    // Each way ends with its warnings, and the error that stopped a dump.
    let result = if args.dump_raw_trace || args.dump_unsorted_raw_trace {
        script::write_dump_script(&file, opts, &input.name, &mut out)
    } else if args.folded {
        prec_report::folded::folded(&file, opts).and_then(|(lines, warnings)| {
            for (stack, count) in &lines {
                writeln!(out, "{stack} {count}")?;
            }
            Ok((warnings, None))
        })
    } else if args.per_event_dump {
        // perf names the files after the path it was given: "(null)" for
        // a pipe on stdin without -i.
        let base = match &args.data.input {
            Some(path) => path.display().to_string(),
            None if args.data.input().as_os_str() == "-" => "(null)".to_string(),
            None => "perf.data".to_string(),
        };
        script::write_script_per_event(&file, opts, &base, &mut out).and_then(|(w, dumps)| {
            for d in &dumps {
                writeln!(
                    out,
                    "[ prec script: Wrote {:.3} MB {} ({} samples) ]",
                    d.bytes as f64 / 1024.0 / 1024.0,
                    d.path,
                    d.samples
                )?;
            }
            Ok((w, None))
        })
    } else {
        script::write_script(&file, opts, &mut out).map(|w| (w, None))
    };
    let (warnings, stopped) = match result {
        Ok(w) => w,
        Err(e) => {
            // A closed pipe (`prec script | head`) ends quietly.
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return Ok(ExitCode::SUCCESS);
                }
            }
            let _ = out.flush();
            // perf's own refusals of the fields, with its exit codes: an
            // unknown field is a usage error (129), a field the samples
            // lack fails the session's setup (-1, 255).
            if let Some(ScriptError(msg)) = e.downcast_ref::<ScriptError>() {
                if msg.starts_with("Invalid field requested") {
                    eprintln!("{msg}");
                    return Ok(ExitCode::from(129));
                }
                if msg.starts_with("Samples for ") {
                    eprintln!("{msg}");
                    return Ok(ExitCode::from(255));
                }
            }
            eprintln!("prec script: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(ExitCode::SUCCESS),
        r => r?,
    }
    if !args.quiet {
        for w in &warnings {
            eprintln!("prec: {}: {w}", input.name);
        }
    }
    if let Some(e) = stopped {
        eprintln!("prec: {}: {e}", input.name);
        return Ok(ExitCode::FAILURE);
    }
    // perf script fails on a damaged record (after printing those before
    // it); prec prints what it can read, said so above, and fails too.
    if warnings.iter().any(|w| script::is_damage(w)) {
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}
