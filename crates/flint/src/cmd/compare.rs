//! `flint compare` (stub: being written).

use std::process::ExitCode;

#[derive(Debug, clap::Args)]
pub struct CompareArgs {}

pub fn compare(_args: CompareArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("flint compare is not built yet")
}
