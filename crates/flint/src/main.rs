//! The `flint` binary: parses the command line and hands each command to its crate.
//!
//! Nothing here measures or serves: `bench`, `serve` and their friends live in their own crates so
//! that tests and other front ends can call them. `main` stays thin and returns an exit code
//! ([`exit::Status`]): the same codes for every command.

mod cli;
mod cmd;
mod duration;
mod exit;
mod output;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse_from(cmd::bench::join_tls_version(std::env::args_os()));
    // Often 1024 by default while the hard limit is far higher: a run of more Webchildren, or a
    // server with more connections, would fail at connect or accept instead.
    cmd::bench::raise_open_files();
    match cli.command.run() {
        Ok(code) => code,
        // Whoever read our output has gone (`| head`): nothing more to say, and no one to say it to.
        Err(err) if exit::is_closed_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            output::error_line(&format!("flint: error: {}", exit::one_line(&err)));
            exit::status_of(&err).into()
        }
    }
}
