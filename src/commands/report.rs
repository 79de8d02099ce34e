//! `prec report`.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use prec_report::aggregate::{self, Options};
use prec_report::output;

use crate::cli::ReportArgs;
use crate::input::Input;

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
fn cpu_list(s: &str) -> Result<Vec<u32>> {
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

fn strings(s: &Option<String>) -> Option<Vec<String>> {
    s.as_ref().map(|s| {
        s.split(',')
            .map(|x| x.trim().to_string())
            .filter(|x| !x.is_empty())
            .collect()
    })
}

/// Turns the command-line arguments into report options; `sort` is the
/// sort order in effect (see [`non_strict_sort`]).
fn options(
    args: &ReportArgs,
    sort: Option<&str>,
    file: &prec_format::PerfFile<'_>,
) -> Result<Options> {
    let mut o = Options::default();
    // `-F +FIELDS` adds columns to the default ones (perf's non-strict
    // field order); otherwise -F's list is the columns.
    let strict_fields = match args.fields.as_deref() {
        Some(f) if f.starts_with('+') => {
            o.added_fields = aggregate::parse_fields(&f[1..]).map_err(anyhow::Error::msg)?;
            if o.added_fields.is_empty() {
                bail!("Invalid --fields key: `+'");
            }
            None
        }
        other => other,
    };
    let raw_sort = &args.sort;
    let sort_text: Option<String> = sort.map(str::to_string);
    // Names of tracepoint fields (perf's dynamic sort keys).
    let tracepoints = std::cell::OnceCell::new();
    let mut dynamic_key = |name: &str| {
        let tracepoints = tracepoints.get_or_init(|| prec_report::tracepoint::from_file(file));
        aggregate::dynamic_keys(
            file,
            tracepoints.as_ref(),
            name,
            args.raw_trace,
            &mut o.dynamic,
        )
    };
    let mut sort_given = match &sort_text {
        Some(s) => aggregate::parse_sort_fields(s, &mut dynamic_key).map_err(anyhow::Error::msg)?,
        None => Vec::new(),
    };
    // perf's arch_specific_sort_keys: --sort leaves them out here (-F
    // keeps them).
    sort_given.retain(|f| !matches!(f, aggregate::Field::Key(k) if k.dropped_from_sort()));
    let keys_of = |fields: &[aggregate::Field]| -> Vec<aggregate::SortKey> {
        fields
            .iter()
            .filter_map(|f| match f {
                aggregate::Field::Key(k) => Some(*k),
                _ => None,
            })
            .collect()
    };
    let sort_keys = keys_of(&sort_given);
    if sort_text.is_some() {
        o.sort = sort_keys.clone();
        // perf's cmd_report appends `ipc_null` (`ipc_lbr` in branch mode,
        // see aggregate::build) to a --sort list with "symbol" in it (as
        // given: before a `+` list gets the default order).
        if strict_fields.is_none() && raw_sort.as_deref().is_some_and(|s| s.contains("symbol")) {
            o.sort.push(aggregate::SortKey::IpcNull);
        }
    }
    // perf's sort_order, which memory mode prints: --sort's text, and the
    // `,ipc_null` perf adds to a text with "symbol" (branch mode, whose
    // `ipc_lbr` differs, excludes memory mode).
    o.sort_text = sort_text.as_ref().map(|s| {
        if raw_sort.as_deref().is_some_and(|r| r.contains("symbol")) {
            format!("{s},ipc_null")
        } else {
            s.clone()
        }
    });
    // perf_hpp__append_sort_keys: a key among -F +FIELDS sorts (and
    // splits) after the sort order's keys.
    for f in &o.added_fields {
        if let aggregate::Field::Key(k) = f {
            if !o.sort.contains(k) {
                o.sort.push(*k);
            }
        }
    }
    o.mem_mode = args.mem_mode;
    if let Some(f) = strict_fields {
        // perf's strict field order: output fields are -F's, then the
        // --sort keys not among them; the sort list is the --sort keys,
        // then the output fields not among them.
        let mut fields = aggregate::parse_fields(f).map_err(anyhow::Error::msg)?;
        for f in &sort_given {
            if !fields.contains(f) {
                fields.push(*f);
            }
        }
        let mut sort_list = sort_given.clone();
        for f in &fields {
            if !sort_list.contains(f) {
                sort_list.push(*f);
            }
        }
        // Without keys (`-F overhead,sample`) nothing splits the samples:
        // perf shows one entry.
        o.sort = keys_of(&sort_list);
        o.fields = Some(fields);
        o.sort_list = Some(sort_list);
    } else if sort_given
        .iter()
        .any(|f| !matches!(f, aggregate::Field::Key(_)))
    {
        o.sort_fields = Some(sort_given.clone());
    }
    o.sort_given = sort_text.is_some() || strict_fields.is_some();
    // Keys -F adds (with or without --sort) do not make perf collapse.
    o.need_collapse = if sort_text.is_some() {
        sort_keys.contains(&aggregate::SortKey::Comm)
    } else {
        strict_fields.is_none()
    };
    if args.no_branch_stack {
        o.branch_stack = Some(false);
    } else if args.branch_stack {
        o.branch_stack = Some(true);
    }
    // Call graphs (perf's -g/--children/-G/--max-stack).
    if let Some(g) = &args.call_graph {
        prec_report::callgraph::parse_report_opt(g, &mut o.callgraph)
            .map_err(anyhow::Error::msg)?;
    }
    if args.branch_history {
        o.callgraph.key = prec_report::callgraph::Key::Address;
    }
    o.show_cpu_utilization = args.show_cpu_utilization;
    o.cpu_utilization = args.show_cpu_utilization
        || o.fields.iter().chain(&o.sort_fields).any(|f| {
            f.iter()
                .any(|f| matches!(f, aggregate::Field::ModeOverhead(_)))
        });
    o.hierarchy = args.hierarchy;
    if args.hierarchy {
        o.need_collapse = true;
    }
    if args.no_children {
        o.callgraph.children = false;
    } else if args.children {
        o.callgraph.children = true;
    }
    if args.inverted {
        o.callgraph.order = prec_report::callchain::Order::Caller;
    }
    // perf turns --children off for --hierarchy after choosing the
    // children's caller order.
    if args.hierarchy {
        if o.callgraph.children && !o.callgraph.order_set {
            o.callgraph.order = prec_report::callchain::Order::Caller;
            o.callgraph.order_set = true;
        }
        o.callgraph.children = false;
    }
    if let Some(n) = args.max_stack {
        o.callgraph.max_stack = n;
    }
    o.callgraph.inline = !args.no_inline;
    o.callgraph.skip_first_sym =
        strict_fields.is_none() && sort_text.as_deref().is_some_and(|s| s.starts_with("sym"));
    o.show_nr_samples = args.show_nr_samples;
    o.show_threads = args.threads;
    o.show_total_period = args.show_total_period;
    o.field_sep = args.field_separator.clone();
    o.relative = args.percentage.as_deref() == Some("relative");
    o.hide_unresolved = args.hide_unresolved;
    o.exclude_other = args.exclude_other;
    o.ignore_callees = args.ignore_callees.clone();
    o.socket_filter = args.socket_filter;
    if let Some(w) = &args.column_widths {
        o.column_widths = parse_column_widths(w);
    }
    o.full_source_path = args.full_source_path;
    o.show_ref_callgraph = args.show_ref_call_graph;
    o.callgraph_required = args.data.input().as_os_str() != "-"
        && args
            .call_graph
            .as_deref()
            .is_some_and(|g| !g.starts_with("none"));
    if let Some(p) = &args.parent {
        // perf: a non-default --parent adds the parent sort key.
        o.parent_regex = p.clone();
        if p != aggregate::DEFAULT_PARENT && !o.sort.contains(&aggregate::SortKey::Parent) {
            o.sort.push(aggregate::SortKey::Parent);
        }
    }
    o.percent_limit = args.percent_limit.unwrap_or(0.0);
    if let Some(limit) = args.percent_limit.filter(|l| *l > 0.0) {
        // perf's --percent-limit callback also sets the call graph
        // threshold (through strtof); a -g threshold given after it wins.
        let g_threshold_later = args.call_graph.as_deref().is_some_and(|g| {
            let mut probe = prec_report::callgraph::Params {
                min_percent: f64::NAN,
                ..Default::default()
            };
            let has_threshold = prec_report::callgraph::parse_report_opt(g, &mut probe).is_ok()
                && !probe.min_percent.is_nan();
            has_threshold
                && last_position(&["-g", "--call-graph"]) > last_position(&["--percent-limit"])
        });
        if !g_threshold_later {
            o.callgraph.min_percent = f64::from(limit as f32);
        }
    }
    o.comms = strings(&args.comms);
    o.dsos = strings(&args.dsos);
    o.symbols = strings(&args.symbols);
    if let Some(p) = &args.pids {
        o.pids = Some(list(p, "pid")?);
    }
    if let Some(t) = &args.tids {
        o.tids = Some(list(t, "tid")?);
    }
    if let Some(c) = &args.cpu {
        o.cpus = Some(cpu_list(c)?);
    }
    // Parsed with the file (percentages need its sample times).
    o.time_str = args.time.clone();
    if let Some(q) = &args.time_quantum {
        o.time_quantum = parse_time_quantum(q)?;
    }
    o.nanosecs = args.ns;
    o.symbol_filter = args
        .symbol_filter_arg
        .clone()
        .or_else(|| args.symbol_filter.clone());
    o.group = args.group;
    o.no_group = args.no_group;
    o.group_sort_idx = args.group_sort_idx.unwrap_or(0);
    o.symfs = crate::cli::effective_symfs(&args.data.symfs);
    o.build_id_dir = args.data.symfs.as_ref().map(|d| d.join(".debug"));
    o.kallsyms = args.data.kallsyms.clone();
    o.demangle = !args.data.no_demangle;
    // Binaries are memory-mapped (the mapping lives in prec-record, which
    // holds all of prec's unsafe code).
    o.file_loader = Some(std::sync::Arc::new(|path: &std::path::Path| {
        prec_record::mapped::MappedFile::open(path).map(prec_report::symbolize::FileBytes::new)
    }));
    o.quiet = args.quiet;
    o.verbose = args.verbose > 0;
    o.raw_trace = args.raw_trace;
    Ok(o)
}

/// perf's checks of the report's mode: branch keys only in branch mode,
/// memory keys only with `--mem-mode` (`Invalid --sort key`), memory mode
/// neither with branch stacks nor without data sources.
fn check_key_modes(
    args: &ReportArgs,
    opts: &Options,
    file: &prec_format::PerfFile<'_>,
) -> Result<()> {
    use aggregate::KeyMode;
    let branch = aggregate::branch_mode(file, opts);
    if opts.mem_mode && branch {
        bail!(
            "branch and mem mode incompatible (the file has branch stacks: add --no-branch-stack)"
        );
    }
    for (option, text) in [("--sort", &args.sort), ("--fields", &args.fields)] {
        let Some(text) = text else { continue };
        let text = text.strip_prefix('+').unwrap_or(text);
        for key in text.split(',').map(str::trim) {
            match aggregate::SortKey::mode_of(key) {
                KeyMode::Branch if !branch => bail!(
                    "Invalid {option} key: `{key}' (a branch-stack key: the file has no \
                     branch stacks)"
                ),
                KeyMode::Memory if !opts.mem_mode => {
                    bail!("Invalid {option} key: `{key}' (a memory key: needs --mem-mode)")
                }
                _ => {}
            }
        }
    }
    // perf checks the sample type of a file, not of a pipe, and only in
    // memory mode: its default sort order of a file of tracepoints
    // switches to the tracepoint mode (the memory header lines stay).
    let data_src = file
        .attrs()
        .iter()
        .any(|a| a.attr.sample_type & prec_format::constants::sample_type::DATA_SRC != 0);
    let default_order = match (&args.sort, &args.fields) {
        (Some(sort), _) => sort.starts_with('+'),
        (None, Some(fields)) => fields.starts_with('+'),
        (None, None) => true,
    };
    let tracepoint_mode = default_order && aggregate::tracepoints_only(file);
    if opts.mem_mode
        && !data_src
        && !tracepoint_mode
        && file.mode() != prec_format::read::Mode::Pipe
    {
        // perf finds this out after printing its header hint.
        print_header_hint(args);
        bail!("Selected --mem-mode but no mem data. Did you call perf record without -d?");
    }
    Ok(())
}

/// perf's "use --header" hint, which it prints (unless -q) before some
/// refusals too.
fn print_header_hint(args: &ReportArgs) {
    if !args.quiet {
        print!("{}", output::HEADER_HINT);
    }
}

/// Index of the last command-line argument spelling one of `options`
/// (`-g X`, `-gX`, `--call-graph=X`), or `None`: perf applies options in
/// order, so a later one can override an earlier one's side effect.
fn last_position(options: &[&str]) -> Option<usize> {
    let spells = |a: &str| {
        options.iter().any(|o| {
            a == *o
                || a.strip_prefix(o).is_some_and(|rest| {
                    if o.starts_with("--") {
                        rest.starts_with('=')
                    } else {
                        !rest.is_empty()
                    }
                })
        })
    };
    let args: Vec<String> = std::env::args().collect();
    (1..args.len()).rev().find(|&i| spells(&args[i]))
}

/// perf's `--time-quantum`: a number of ns, or with a unit (`s`, `ms`,
/// `us`, `ns`).
fn parse_time_quantum(arg: &str) -> Result<u64> {
    let text = arg.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let scale = match unit.trim() {
        "" | "ns" => 1,
        "us" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => bail!("Cannot parse time quantum `{arg}'"),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| anyhow::anyhow!("Cannot parse time quantum `{arg}'"))?;
    if value == 0 {
        bail!("time quantum cannot be 0");
    }
    Ok(value.saturating_mul(scale))
}

/// `--switch-on`/`--switch-off` with the events named as `perf evlist`
/// names them.
pub fn evswitch(
    args: &crate::cli::EvSwitchArgs,
    file: &prec_format::PerfFile<'_>,
) -> Result<prec_report::evswitch::EvSwitch> {
    let names = aggregate::event_names(file);
    let find = |option: &str, name: &Option<String>| -> Result<Option<usize>> {
        let Some(name) = name else {
            return Ok(None);
        };
        match names.iter().position(|n| n == name) {
            Some(i) => Ok(Some(i)),
            None => bail!(
                "{option} event not found ({name}); the file's events: {}",
                names.join(", ")
            ),
        }
    };
    Ok(prec_report::evswitch::EvSwitch::new(
        find("switch-on", &args.switch_on)?,
        find("switch-off", &args.switch_off)?,
        args.show_on_off_events,
    ))
}

/// Whether the file's GROUP_DESC feature names a group of several events.
fn recorded_groups(file: &prec_format::read::PerfFile<'_>) -> bool {
    use prec_format::features::{self, Feature};
    use prec_format::FeatureId;
    file.feature(FeatureId::GROUP_DESC).is_some_and(|f| {
        matches!(
            features::decode(f.id, f.data, f.offset, file.endian()),
            Ok(Feature::GroupDesc(g)) if g.iter().any(|g| g.nr_members > 1)
        )
    })
}

/// perf's non-strict `--sort +KEYS`: the keys after the default order
/// (`setup_sort_order`); `None` for another order.
fn non_strict_sort(args: &ReportArgs) -> Option<&str> {
    args.sort.as_deref()?.strip_prefix('+')
}

/// perf's `get_default_sort_order`, which `--sort +KEYS` extends.
fn default_sort_order(opts: &Options, file: &prec_format::PerfFile<'_>) -> &'static str {
    if aggregate::branch_mode(file, opts) {
        "comm,dso_from,symbol_from,symbol_to,cycles"
    } else if aggregate::tracepoints_only(file) {
        // Memory mode too: perf's tracepoint mode replaces it.
        "trace"
    } else if opts.mem_mode {
        aggregate::DEFAULT_MEM_SORT_ORDER
    } else {
        "comm,dso,symbol"
    }
}

pub fn run(mut args: ReportArgs) -> Result<ExitCode> {
    if non_strict_sort(&args) == Some("") {
        bail!("Invalid --sort key: `+'");
    }
    let input = std::sync::Arc::new(Input::open(&args.data.input(), args.data.force)?);
    let file = input.parse()?;
    if args.branch_history {
        // perf's branch_call_mode: its own default order; the call graph's
        // key is the address whatever -g says.
        if aggregate::branch_mode(&file, &Options::default()) {
            bail!(
                "--branch-history on a file with branch stacks: prec does not add them to \
                 the call graphs yet (report the branches with the default branch mode, \
                 or the samples with --no-branch-stack)"
            );
        }
        if args.sort.is_none() {
            args.sort = Some("srcline,symbol,dso".to_string());
        }
        if args.call_graph.is_none() {
            args.call_graph = Some("address".to_string());
        }
    }
    let mut opts = options(
        &args,
        non_strict_sort(&args).or(args.sort.as_deref()),
        &file,
    )?;
    if let Some(keys) = non_strict_sort(&args) {
        let sort = format!("{},{keys}", default_sort_order(&opts, &file));
        opts = options(&args, Some(&sort), &file)?;
    }
    // perf's get_default_sort_order with --raw-trace, for a file of
    // tracepoints: a column per field.
    if opts.raw_trace && !opts.sort_given && aggregate::tracepoints_only(&file) {
        opts = options(&args, Some("trace_fields"), &file)?;
    }
    // A large input need not stay resident once read.
    let mapped = input.clone();
    opts.release = Some(std::sync::Arc::new(move |offset| {
        mapped.release_prefix(offset)
    }));
    check_key_modes(&args, &opts, &file)?;
    // perf has printed its header hint by the time it rejects a time
    // string.
    opts.time =
        time_ranges(args.time.as_deref(), &file).inspect_err(|_| print_header_hint(&args))?;
    opts.evswitch = evswitch(&args.evswitch, &file)?;
    // perf refuses it where there is no group to sort by (--group makes
    // one of two or more events).
    let grouped = recorded_groups(&file) || (args.group && file.attrs().len() > 1);
    if args.group_sort_idx.is_some_and(|i| i != 0) && !grouped {
        bail!(
            "--group-sort-idx needs grouped events: pass --group, or record the events \
             as a group (-e '{{a,b}}')"
        );
    }
    if args.dump_raw_trace || args.stats || args.tasks || args.mmaps {
        return dump_or_stats(&args, &input, &file);
    }
    if args.header_only {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        write_header(&input, &file, args.show_info, true, &mut out)?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.cpu.is_some() && !samples_cpus(&file) {
        print_header_hint(&args);
        eprintln!("{NO_CPU_EVENTS}\nError:\nfailed to set cpu bitmap");
        return Ok(ExitCode::SUCCESS);
    }
    if args.tui && std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        eprintln!("prec: note: prec has no TUI; printing the --stdio report");
    }
    // An Intel PT trace: report from a copy with perf's made-up events.
    let injected = prec_report::intel_pt::inject(&file, opts.callgraph.enabled, opts.time.as_ref());
    let traced = match &injected {
        Some(i) => {
            if i.errors > 0 {
                eprintln!("Warning:\n{} instruction trace errors", i.errors);
            }
            for b in &i.undecoded_binaries {
                eprintln!(
                    "prec: note: {b}: prec does not walk Intel PT traced code; perf decodes \
                     the branches in it, so the report can differ from perf's there"
                );
            }
            // The copy's offsets are not the input's.
            opts.release = None;
            Some(prec_format::PerfFile::parse(&i.bytes)?)
        }
        None => None,
    };
    let data = aggregate::build(traced.as_ref().unwrap_or(&file), opts);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    if args.header {
        // perf prints the header in place of its "use --header" hint line.
        write_header(&input, &file, args.show_info, true, &mut out)?;
        let mut report = Vec::new();
        output::write_report(&mut report, &data)?;
        let hint = output::HEADER_HINT.as_bytes();
        let body = report.strip_prefix(hint).unwrap_or(&report[..]);
        out.write_all(body)?;
    } else {
        output::write_report(&mut out, &data)?;
    }
    out.flush()?;
    if data.options.callgraph_missing {
        eprintln!(
            "Error:\nSelected -g or --branch-history.\nBut no callchain or branch data.\n\
             Did you call 'perf record' without -g or -b?"
        );
    } else if data.options.parent_no_callchain {
        eprintln!(
            "Error:\nSelected --sort parent, but no callchain data. Did you call 'perf record' without -g?"
        );
    } else if output::no_samples(&data) {
        eprintln!("Error:\nThe {} data has no samples!", input.name);
    }
    // Notes on the samples would contradict "no samples".
    if !args.quiet && !data.options.no_samples_shown {
        for w in &data.warnings {
            eprintln!("prec: {}: {w}", input.name);
        }
        for n in output::quality_notes(&data) {
            eprintln!("prec: note: {n}");
        }
    }
    // The process ends here: freeing the report's many small allocations
    // one by one would only delay the exit.
    std::mem::forget(data);
    Ok(ExitCode::SUCCESS)
}

/// perf's refusal of `-C` (`perf_session__cpu_bitmap`).
pub(crate) const NO_CPU_EVENTS: &str =
    "File does not contain CPU events. Remove -C option to proceed.";

/// Whether `-C` can select samples of `file`: perf requires the CPU in
/// the samples of the first event of each type.
pub(crate) fn samples_cpus(file: &prec_format::PerfFile<'_>) -> bool {
    use prec_format::constants::sample_type::CPU;
    let mut seen = Vec::new();
    file.attrs().iter().all(|a| {
        if seen.contains(&a.attr.type_) {
            return true;
        }
        seen.push(a.attr.type_);
        a.attr.sample_type & CPU != 0
    })
}

/// `--time` of report and script, as perf parses it for `file`.
pub(crate) fn time_ranges(
    arg: Option<&str>,
    file: &prec_format::PerfFile<'_>,
) -> Result<Option<prec_report::time_ranges::TimeRanges>> {
    use prec_report::time_ranges::{sample_times, TimeRanges};
    arg.map(|t| TimeRanges::parse(t, sample_times(file)).map_err(anyhow::Error::msg))
        .transpose()
}

/// perf's `perf_hpp__set_user_width`: `strtol` on each item (0 when it
/// does not start with a number), stopping after an item not followed by
/// a comma.
fn parse_column_widths(list: &str) -> Vec<usize> {
    let mut widths = Vec::new();
    let mut rest = list;
    loop {
        let trimmed = rest.trim_start();
        let digits = trimmed
            .char_indices()
            .take_while(|&(i, c)| c.is_ascii_digit() || (i == 0 && (c == '+' || c == '-')))
            .last()
            .map_or(0, |(i, c)| i + c.len_utf8());
        let value: i64 = trimmed[..digits].parse().unwrap_or(0);
        // perf keeps the width in an int and ignores widths below 1.
        widths.push(usize::try_from(value).unwrap_or(0));
        match trimmed[digits..].strip_prefix(',') {
            Some(next) if digits > 0 || trimmed.is_empty() || trimmed.starts_with(',') => {
                rest = next
            }
            _ => break,
        }
    }
    widths
}

/// `--header` / `--header-only` (of report and script): the header block
/// perf prints; `show_info` is `-I`. Without `features` only the fixed part
/// (perf script --header-only on pipe data stops before the feature
/// records).
pub(crate) fn write_header(
    input: &Input,
    file: &prec_format::PerfFile<'_>,
    show_info: bool,
    features: bool,
    out: &mut dyn Write,
) -> Result<()> {
    use prec_report::header::{print_header, HeaderInfo};
    let attrs = file
        .attrs()
        .iter()
        .map(|a| (a.attr.clone(), a.ids.clone()))
        .collect();
    let sections: Vec<_> = file
        .features()
        .iter()
        .filter(|_| features)
        .map(|f| (f.id, f.data, f.offset))
        .collect();
    let (data_offset, data_size) = match file.header() {
        Some(h) => (h.data.offset, h.data.size),
        None => (0, 0),
    };
    let mtime = input.mtime.unwrap_or_else(std::time::SystemTime::now);
    let mut info = HeaderInfo::from_sections(
        file.endian(),
        attrs,
        &sections,
        data_offset,
        data_size,
        mtime,
    );
    info.full = show_info;
    info.utc_offset = prec_record::sys::utc_offset_at(info.mtime);
    info.is_pipe = file.mode() == prec_format::read::Mode::Pipe;
    print_header(out, &info)?;
    Ok(())
}

/// `-D` / `--stats` / `--tasks`: dumps records, counts them or lists the
/// tasks like perf; a data error stops with what was read before it printed
/// and a non-zero exit.
fn dump_or_stats(
    args: &ReportArgs,
    input: &Input,
    file: &prec_format::PerfFile<'_>,
) -> Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let err = if args.dump_raw_trace {
        prec_report::dump::dump_raw_trace(file, &input.name, &mut out)?
    } else if args.stats {
        prec_report::stats::print_stats(file, &mut out)?
    } else {
        prec_report::tasks::print_tasks(file, &mut out, args.mmaps)?
    };
    out.flush()?;
    match err {
        Some(e) => {
            eprintln!("prec: {}: {e}", input.name);
            Ok(ExitCode::FAILURE)
        }
        None => Ok(ExitCode::SUCCESS),
    }
}
