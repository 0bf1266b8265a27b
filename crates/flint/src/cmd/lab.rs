//! `flint lab` (stub: being written).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct LabArgs {}

pub fn lab(_args: LabArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("flint lab is not built yet")
}
