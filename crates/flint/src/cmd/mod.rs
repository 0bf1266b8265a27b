//! One module per command; each turns parsed arguments into calls on the library crates.

pub mod bench;
pub mod compare;
mod fileset;
pub mod lab;
pub mod report;
mod run;
mod serve;
mod worker;

use crate::cli::{Cli, Command, MixArg};
use anyhow::Context;
use std::path::Path;
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
        Command::Worker => worker::worker(),
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

/// Writes a result document where the user asked: as JSON, and as a self-contained HTML page
/// (the same page `flint report` renders from that JSON).
pub fn write_outputs(
    json: &serde_json::Value,
    json_path: Option<&Path>,
    html_path: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(path) = json_path {
        let text = serde_json::to_string_pretty(json)?;
        std::fs::write(path, text + "\n").with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = html_path {
        let page = ::report::render_one(json)?;
        std::fs::write(path, page).with_context(|| format!("writing {}", path.display()))?;
        eprintln!("flint: wrote {}", path.display());
    }
    Ok(())
}
