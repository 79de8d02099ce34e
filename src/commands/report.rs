//! `prec report`.

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::ReportArgs;
use crate::input::Input;

pub fn run(args: ReportArgs) -> Result<ExitCode> {
    let input = Input::open(&args.input)?;
    let file = input.parse()?;
    let _ = file;
    anyhow::bail!("prec report is being built")
}
