//! `prec`: a profiler that reads and writes Linux perf.data.
//!
//! The binary only wires: it parses the command line ([`cli`]), turns the
//! arguments into library configurations and calls the `prec-record` and
//! `prec-report` crates, then maps the result to an exit code.

mod cli;
mod commands;
mod input;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(code) => code,
        Err(e) => {
            // A closed stdout (`prec report | head`) is not an error.
            if let Some(io) = e.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::BrokenPipe {
                    return ExitCode::SUCCESS;
                }
            }
            eprintln!("prec: {e:#}");
            ExitCode::FAILURE
        }
    }
}
