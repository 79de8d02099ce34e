//! `prec record`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::RecordArgs;

pub fn run(args: RecordArgs) -> Result<ExitCode> {
    let _ = args;
    anyhow::bail!("prec record is being built")
}
