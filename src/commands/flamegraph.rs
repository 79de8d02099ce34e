//! `prec flamegraph`: folded stacks of a perf.data (or a folded file) as an SVG.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};

use prec_report::flamegraph::{write_svg, FlameOptions};
use prec_report::folded;
use prec_report::script::ScriptOptions;

use crate::cli::FlamegraphArgs;
use crate::input::Input;

pub fn run(args: FlamegraphArgs) -> Result<ExitCode> {
    let (stacks, warnings, name) = match &args.folded {
        Some(p) => {
            let text = std::fs::read_to_string(p)
                .with_context(|| format!("cannot read {}", p.display()))?;
            (
                folded::parse_folded(&text),
                Vec::new(),
                p.display().to_string(),
            )
        }
        None => {
            let input = Input::open(&args.input, true)?;
            let file = input.parse()?;
            let mut o = ScriptOptions::new();
            o.max_stack = args.max_stack;
            o.symfs = crate::cli::effective_symfs(&args.symfs);
            o.kallsyms = args.kallsyms.clone();
            o.file_loader = Some(super::script::file_loader());
            o.unwinder = Some(super::script::dwarf_unwinder());
            let (stacks, warnings) =
                folded::folded(&file, o).map_err(|e| anyhow::anyhow!("{}: {e}", input.name))?;
            (stacks, warnings, input.name.clone())
        }
    };
    if !args.quiet {
        for w in &warnings {
            eprintln!("prec: {name}: {w}");
        }
        if stacks.is_empty() {
            eprintln!(
                "prec: {name}: no call chains (record with -g or --call-graph); the graph is empty"
            );
        }
    }
    let opts = FlameOptions {
        title: args.title.clone(),
        width: args.width.max(100),
        ..FlameOptions::default()
    };
    if args.output == "-" {
        let stdout = std::io::stdout();
        let mut out = std::io::BufWriter::new(stdout.lock());
        write_svg(&mut out, &stacks, &opts)?;
        out.flush()?;
    } else {
        let f = std::fs::File::create(&args.output)
            .with_context(|| format!("cannot create {}", args.output))?;
        let mut out = std::io::BufWriter::new(f);
        write_svg(&mut out, &stacks, &opts)?;
        out.flush()
            .with_context(|| format!("cannot write {}", args.output))?;
    }
    Ok(ExitCode::SUCCESS)
}
