//! `flint report` (stub: being written).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct ReportArgs {}

pub fn report(_args: ReportArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("flint report is not built yet")
}
