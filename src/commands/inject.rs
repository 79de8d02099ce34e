//! `prec inject`: read a perf.data and write it again, like `perf inject`
//! with no options. The copy is what perf 6.1 reads (see
//! `prec_format::convert`), so this also converts newer or compressed files
//! for an older perf, pipe mode to file mode and back, and byte order.

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use prec_format::convert::{copy_to_file, copy_to_pipe};
use prec_format::Endian;

use crate::cli::InjectArgs;
use crate::input::Input;

pub fn run(args: InjectArgs) -> Result<ExitCode> {
    let endian = match args.byte_order.as_str() {
        "native" => Endian::NATIVE,
        "little" => Endian::Little,
        "big" => Endian::Big,
        other => bail!("--byte-order: expected native, little or big, got '{other}'"),
    };
    let input = Input::open(&args.input, true)?;
    let file = input.parse()?;
    for w in file.warnings() {
        eprintln!("prec: warning: {}: {w}", input.name);
    }
    let stats = if args.output == "-" {
        let stdout = std::io::stdout().lock();
        let (mut out, stats) = copy_to_pipe(&file, BufWriter::new(stdout), endian)
            .map_err(|e| anyhow::anyhow!("{}: {e}", input.name))?;
        out.flush().context("writing to standard output")?;
        stats
    } else {
        let out = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&args.output)
            .with_context(|| format!("cannot create {}", args.output))?;
        let (_, stats) =
            copy_to_file(&file, out, endian).map_err(|e| anyhow::anyhow!("{}: {e}", input.name))?;
        stats
    };
    if stats.dropped > 0 {
        eprintln!(
            "prec: note: left out {} records of types perf 6.1 does not know",
            stats.dropped
        );
    }
    Ok(ExitCode::SUCCESS)
}
