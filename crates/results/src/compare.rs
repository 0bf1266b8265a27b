//! One `flint compare` run: the document `--json` writes (docs/compare.md).
//!
//! Each target's rounds are the bench `summary` of each measured round, so a reader finds the
//! same figures, with the same names and units, as in a bench result.

use crate::bench::{Environment, Summary};
use crate::{HttpMode, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole comparison.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompareResult {
    /// What wrote the document: [`Kind::Compare`] here.
    pub kind: Kind,
    /// Version of the compare layout (docs/compare.md); bumped when a field is renamed or removed.
    pub schema_version: u64,
    /// The version of the flint that wrote it.
    pub flint_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// The machine the comparison ran on.
    pub environment: Environment,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
    /// The load options, the same for every round of every target.
    pub options: CompareOptions,
    /// The pages every target served.
    pub workload: CompareWorkload,
    /// The targets, in command-line order; the first is the baseline of the ratios.
    pub targets: Vec<CompareTarget>,
}

/// The load options, applied to every round of every target.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompareOptions {
    /// Measured rounds of each target (`--rounds`), taken in turn (A B A B ...).
    pub rounds: u64,
    /// Webchildren of each round (`-c`).
    pub clients: u64,
    /// Event-loop threads of each round (`-t`).
    pub threads: u64,
    /// Length of a round when it stops on time (`null` when it stops on pages).
    pub duration_s: Option<f64>,
    /// Pages of a round when it stops on a count (`null` when it stops on time).
    pub pages: Option<u64>,
    /// How files were fetched over connections.
    pub http: HttpMode,
    /// Warm-up before each round's measured window, seconds; nothing from it is counted.
    pub warmup_s: f64,
    /// Closed loop: the pause after each page, seconds (`--think`); `None`: no pause.
    pub think_s: Option<f64>,
    /// Open loop: pages per second across all Webchildren (`--rate`); `None`: closed loop.
    pub rate_pages_per_s: Option<f64>,
    /// Seed of the Webchildren's random page choices (`--seed`), the same for every round.
    pub seed: u64,
    /// A connect not done after this long fails, seconds.
    pub connect_timeout_s: f64,
    /// A response not complete after this long fails, seconds (`--timeout`).
    pub response_timeout_s: f64,
    /// How long a `--serve` command had to start accepting connections before its target failed,
    /// seconds (`--serve-timeout`).
    pub serve_ready_timeout_s: f64,
}

/// The pages every target served.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompareWorkload {
    /// The workload's pages, in its order.
    pub pages: Vec<WorkloadPage>,
}

impl CompareWorkload {
    /// The paths fetched, in a line for people (`/a.bin, /b.bin`; a page of several files as
    /// `home (/index.html + 43 files)`), the first `max` pages and how many more: the table's
    /// header and the HTML report say what every target served.
    pub fn describe(&self, max: usize) -> String {
        let page = |p: &WorkloadPage| match p.files.as_slice() {
            [] => p.name.clone(),
            [one] if *one == p.name => one.clone(),
            [one] => format!("{} ({one})", p.name),
            [first, rest @ ..] => {
                let s = if rest.len() == 1 { "" } else { "s" };
                format!("{} ({first} + {} file{s})", p.name, rest.len())
            }
        };
        let mut parts: Vec<String> = self.pages.iter().take(max).map(page).collect();
        if self.pages.len() > max {
            parts.push(format!("and {} more pages", self.pages.len() - max));
        }
        parts.join(", ")
    }
}

/// One page of the workload: its files by URL path.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WorkloadPage {
    /// The page's name, as the workload gives it (a bare path's page is named by its path).
    pub name: String,
    /// Its weight in the Webchildren's random choice of a page, relative to the other pages'.
    pub weight: f64,
    /// Its files' URL paths, in the order fetched.
    pub files: Vec<String>,
}

/// How a target was reached.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    /// A server already running (`--target`).
    #[default]
    Target,
    /// A command started by compare (`--serve`).
    Serve,
}

/// Whether a target was measured to the end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetStatus {
    /// Every round was measured.
    #[default]
    Ok,
    /// Refused, did not start, exited or failed a round: `error` says why; the rounds measured
    /// before stay.
    Failed,
}

/// One target: what it is, whether it held, its rounds and figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CompareTarget {
    /// The name given before `=` (`NAME=URL`, `NAME=COMMAND`).
    pub name: String,
    /// `None` only for a `--serve` command that never started.
    pub url: Option<String>,
    /// Whether it was already running or started by compare.
    pub kind: TargetKind,
    /// The `--serve` command as run.
    pub command: Option<String>,
    /// Whether it was measured to the end.
    pub status: TargetStatus,
    /// Why it failed.
    pub error: Option<String>,
    /// The bench `summary` of each measured round, in order.
    pub rounds: Vec<Summary>,
    /// Per figure (`requests_per_s`, `response_p50_ms`, ...) its spread over the rounds.
    pub figures: BTreeMap<String, FigureSpread>,
}

/// One figure over the rounds of a target, `None` without rounds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FigureSpread {
    /// The median over the rounds (of an even number: the mean of the middle two).
    pub median: Option<f64>,
    /// The smallest over the rounds.
    pub min: Option<f64>,
    /// The largest over the rounds.
    pub max: Option<f64>,
    /// Median / the first target's median.
    pub ratio: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_workload_is_described_by_its_paths() {
        let page = |name: &str, files: &[&str]| WorkloadPage {
            name: name.into(),
            weight: 1.0,
            files: files.iter().map(|f| f.to_string()).collect(),
        };
        let paths = CompareWorkload {
            pages: vec![page("/a.bin", &["/a.bin"]), page("/b.bin", &["/b.bin"])],
        };
        assert_eq!(paths.describe(8), "/a.bin, /b.bin");
        assert_eq!(paths.describe(1), "/a.bin, and 1 more pages");
        let pages = CompareWorkload {
            pages: vec![
                page("home", &["/index.html", "/a.gif", "/b.gif"]),
                page("about", &["/about.html"]),
            ],
        };
        assert_eq!(
            pages.describe(8),
            "home (/index.html + 2 files), about (/about.html)"
        );
        let two = CompareWorkload {
            pages: vec![page("docs", &["/docs.html", "/docs.css"])],
        };
        assert_eq!(two.describe(8), "docs (/docs.html + 1 file)");
    }

    #[test]
    fn a_target_reads_back_as_written() {
        let target = CompareTarget {
            name: "nginx".into(),
            kind: TargetKind::Serve,
            status: TargetStatus::Failed,
            error: Some("exited".into()),
            figures: [(
                "requests_per_s".to_owned(),
                FigureSpread {
                    median: Some(2.0),
                    ratio: None,
                    ..FigureSpread::default()
                },
            )]
            .into(),
            ..CompareTarget::default()
        };
        let v = serde_json::to_value(&target).expect("serializes");
        assert_eq!(
            (&v["kind"], &v["status"]),
            (&json!("serve"), &json!("failed"))
        );
        assert_eq!(v["figures"]["requests_per_s"]["ratio"], json!(null));
        let back: CompareTarget = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, target);
    }

    #[test]
    fn an_empty_document_reads_as_a_compare_without_targets() {
        let c: CompareResult = serde_json::from_value(json!({"kind": "compare"})).expect("lenient");
        assert_eq!(c.kind, Kind::Compare);
        assert!(c.targets.is_empty());
        assert_eq!(c.options.duration_s, None);
    }
}
