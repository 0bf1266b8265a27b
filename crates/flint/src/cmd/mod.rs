//! One module per command; each turns parsed arguments into calls on the library crates.

pub mod bench;
pub mod compare;
mod fileset;
pub mod lab;
pub mod report;
mod run;
mod serve;

use crate::cli::{Cli, Command, MixArg};
use std::process::ExitCode;

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Bench(args) => bench::bench(args),
        Command::Serve(args) => serve::serve(args),
        Command::Fileset(args) => fileset::fileset(args),
        Command::Run(args) => run::run(args),
        Command::Lab(args) => lab::lab(args),
        Command::Compare(args) => compare::compare(args),
        Command::Report(args) => report::report(args),
    }
}

impl From<MixArg> for ::bench::fileset::Mix {
    fn from(mix: MixArg) -> Self {
        use ::bench::fileset::Mix;
        match mix {
            MixArg::Modem => Mix::Modem,
            MixArg::General => Mix::General,
            MixArg::Media => Mix::Media,
            MixArg::Mixed => Mix::Mixed,
        }
    }
}
