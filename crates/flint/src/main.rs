//! The `flint` binary: parses the command line and hands each command to its crate.
//!
//! Nothing here measures or serves: `bench`, `serve` and their friends live in their own crates so
//! that tests and other front ends can call them. `main` stays thin and returns an exit code
//! ([`exit::Status`]): the same codes for every command.

mod cli;
mod cmd;
mod duration;
mod exit;
mod habits;
mod output;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args = habits::translate(cmd::bench::join_tls_version(std::env::args_os()));
    let cli = match cli::Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(err) => {
            // Another tool's flag gets flint's equivalent named, in place of clap's guess.
            let refused = [ContextKind::InvalidArg, ContextKind::InvalidValue]
                .into_iter()
                .find_map(|kind| match err.get(kind) {
                    Some(ContextValue::String(s)) => Some(s.clone()),
                    _ => None,
                });
            // Help nobody asked for is clap reading a habit (`-host`) as `-h` and more.
            let misread = err.use_stderr()
                || (err.kind() == ErrorKind::DisplayHelp && habits::help_not_asked(&args));
            let line = habits::explain(&args, refused.as_deref()).filter(|_| misread);
            if let Some(line) = line {
                output::error_line(&format!("flint: error: {line}"));
                return exit::Status::Usage.into();
            }
            err.exit()
        }
    };
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
