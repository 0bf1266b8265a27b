//! One module per command; each declares its arguments and turns them into calls on the library
//! crates.

pub mod bench;
pub mod compare;
pub mod discover;
pub mod fileset;
pub mod lab;
pub mod report;
pub mod run;
pub mod serve;
pub mod worker;

use crate::output;
use anyhow::Context;
use std::path::Path;

/// Writes a result document where the user asked: as JSON, and as a self-contained HTML page
/// (the same page `flint report` renders from that JSON); `-` is stdout. Each file written is
/// announced on stderr.
pub fn write_outputs(
    json: &serde_json::Value,
    json_path: Option<&Path>,
    html_path: Option<&Path>,
) -> anyhow::Result<()> {
    if let Some(path) = json_path {
        let text = serde_json::to_string_pretty(json)? + "\n";
        output::write_file(path, text.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        if !output::is_stdout(path) {
            output::error_line(&format!("flint: wrote {}", path.display()));
        }
    }
    if let Some(path) = html_path {
        let page = ::report::render_one(json)?;
        output::write_file(path, page.as_bytes())
            .with_context(|| format!("writing {}", path.display()))?;
        if !output::is_stdout(path) {
            output::error_line(&format!("flint: wrote {}", path.display()));
        }
    }
    Ok(())
}

/// Checks the result files of a command before anything starts (exit 2, as any bad usage): at
/// most one of them is stdout, no two name one file, and every other one can be written. A run of minutes (`flint lab
/// all`, a `flint compare` of many rounds) must not end by finding that its result has nowhere
/// to go.
pub fn check_outputs(outputs: &[(&'static str, Option<&Path>)]) -> anyhow::Result<()> {
    one_stdout(outputs.iter().copied())?;
    let mut files: Vec<(&str, &Path, std::path::PathBuf)> = Vec::new();
    for &(flag, path) in outputs {
        if let Some(path) = path.filter(|p| !output::is_stdout(p)) {
            output::check_writable(path).map_err(|e| anyhow::anyhow!("{flag} {e}"))?;
            let file = output::canonical(path);
            // One file by its path, or (hard links) by its inode: the last output written
            // would overwrite the other.
            let same = files
                .iter()
                .find(|(_, p, f)| *f == file || output::same_existing_file(p, path));
            if let Some((other, _, _)) = same {
                anyhow::bail!(
                    "{other} and {flag} both write {}: give each its own file",
                    path.display()
                );
            }
            files.push((flag, path, file));
        }
    }
    Ok(())
}

/// Refuses two results bound for stdout at once: they would interleave.
pub fn one_stdout<'a>(
    outputs: impl IntoIterator<Item = (&'static str, Option<&'a Path>)>,
) -> anyhow::Result<()> {
    let to_stdout: Vec<&str> = outputs
        .into_iter()
        .filter(|(_, p)| p.is_some_and(output::is_stdout))
        .map(|(flag, _)| flag)
        .collect();
    if to_stdout.len() > 1 {
        anyhow::bail!(
            "{} all write to stdout (`-`): give all but one a file name",
            to_stdout.join(" and ")
        );
    }
    Ok(())
}
