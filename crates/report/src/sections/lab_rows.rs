//! The rows of a lab file that every lab section reads: which experiment a row belongs to, the
//! rows of one experiment, a row's server, and the distinct values of a column in first-seen
//! order. Apart from the sections so that they depend on it, not on each other.

use results::{LabResult, LabRow};

/// The experiment a row belongs to: its own, or (in a file older than the row's field) the
/// file's.
pub(super) fn experiment_of<'a>(lab: &'a LabResult, r: &'a LabRow) -> &'a str {
    if r.experiment.is_empty() {
        &lab.experiment
    } else {
        &r.experiment
    }
}

/// The rows of one experiment in a lab file, less any measurement cut short by Ctrl-C
/// (`interrupted`): part of a window is not a figure to chart beside the others.
pub(super) fn results<'a>(
    lab: &'a LabResult,
    experiment: &'a str,
) -> impl Iterator<Item = &'a LabRow> {
    lab.results
        .iter()
        .filter(move |r| experiment_of(lab, r) == experiment)
        .filter(|r| !r.interrupted)
}

/// A row's server, `?` where an older file left it out.
pub(super) fn server(r: &LabRow) -> &str {
    if r.server.is_empty() {
        "?"
    } else {
        &r.server
    }
}

/// The distinct values of `it`, in the order first seen.
pub(super) fn distinct<'a>(it: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for x in it {
        if !out.contains(&x) {
            out.push(x);
        }
    }
    out
}
