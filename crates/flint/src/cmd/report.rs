//! `flint report`: results people would rather look at.
//!
//! Reads the JSON that `flint bench`, `flint compare` and `flint lab` write and renders one
//! self-contained HTML file: no network, no CDN, every chart an inline SVG with axes and units.
//! The rendering is the `report` crate's; this command only reads files, names the one that is
//! wrong when something is, and writes the page.

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;

/// Render bench, compare and lab results as one HTML page.
///
/// Examples:
///   flint report run.json -o run.html
///   flint report nginx.json flint.json lab-sizes.json compare.json -o report.html
#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Result files: `flint bench --json`, `flint compare --json`, `flint lab --json` output.
    #[arg(value_name = "RESULT.json", required = true)]
    pub inputs: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
}

pub fn report(args: ReportArgs) -> anyhow::Result<ExitCode> {
    let mut inputs = Vec::with_capacity(args.inputs.len());
    for path in &args.inputs {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        let value: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{}: not valid JSON", path.display()))?;
        inputs.push((path.display().to_string(), value));
    }
    // The library's errors already start with the file name.
    let html = report::render(&inputs)?;
    std::fs::write(&args.output, html)
        .with_context(|| format!("{}: cannot write the report", args.output.display()))?;
    println!("{}", args.output.display());
    Ok(ExitCode::SUCCESS)
}
