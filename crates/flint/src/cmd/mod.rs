//! One module per command; each declares its arguments and turns them into calls on the library
//! crates.

pub mod bench;
pub mod compare;
pub mod fileset;
pub mod lab;
pub mod report;
pub mod run;
pub mod serve;
pub mod worker;

use anyhow::Context;
use std::path::Path;

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
