//! What the lab's end-to-end tests share: an experiment run with its report, its output and its
//! progress as text, and a figure of its JSON.

#![allow(dead_code)] // each test binary uses its own subset

use lab_experiments::{self as experiments, Experiment, LabOptions, LabReport};
use serde_json::Value;
use std::sync::atomic::AtomicBool;

/// `experiment` run with `opts` (`stopped`: as if Ctrl-C was pressed before it started): its
/// report, what it printed, and its progress lines.
pub fn run_lab(
    experiment: Experiment,
    opts: &LabOptions,
    stopped: bool,
) -> (LabReport, String, String) {
    let (mut out, mut progress) = (Vec::new(), Vec::new());
    let report = experiments::run(
        experiment,
        opts,
        &mut out,
        &mut progress,
        &AtomicBool::new(stopped),
    )
    .expect("lab run");
    let text = String::from_utf8_lossy(&out).into_owned();
    (
        report,
        text,
        String::from_utf8_lossy(&progress).into_owned(),
    )
}

/// `v[key]` as a number, or the test fails saying what `v` holds.
pub fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("{key} is not a number in {v}"))
}
