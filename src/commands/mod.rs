//! One module per subcommand: each turns its arguments into a library
//! configuration and runs it.

mod flamegraph;
mod inject;
mod record;
mod report;
mod script;

use std::process::ExitCode;

use anyhow::Result;

use crate::cli::{Cli, Command};

/// Runs the chosen subcommand.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Record(args) => record::run(*args),
        Command::Report(args) => report::run(*args),
        Command::Inject(args) => inject::run(args),
        Command::Script(args) => script::run(*args),
        Command::Flamegraph(args) => flamegraph::run(args),
    }
}
