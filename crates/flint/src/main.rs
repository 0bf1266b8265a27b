//! The `flint` binary: parses the command line and hands each command to its crate.
//!
//! Nothing here measures or serves: `bench`, `serve` and their friends live in their own crates so
//! that tests and other front ends can call them. `main` stays thin and returns an exit code.

mod cli;
mod cmd;
mod duration;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.command.run() {
        Ok(code) => code,
        Err(err) => {
            eprintln!("flint: error: {err:#}");
            ExitCode::from(2)
        }
    }
}
