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

/// A row in a few words: its server, experiment and what tells it from the others (`flint
/// sizes 2 KB`, `nginx dynamic fastcgi db`).
pub(super) fn row_name(lab: &LabResult, r: &LabRow) -> String {
    let mut words = vec![server(r).to_owned(), experiment_of(lab, r).to_owned()];
    words.extend(r.certificate.clone());
    words.extend(r.handshake.clone());
    words.extend(r.page_mode.clone());
    words.extend(r.deployment.clone());
    words.extend(r.test_type.clone());
    words.extend(r.size_bytes.map(|b| crate::text::bytes(b as f64)));
    words.join(" ")
}

/// What an interrupted lab run left undone, after "ended early by Ctrl-C": the measurement cut
/// short (left out of every table and chart, so said here) and the servers never reached.
pub(super) fn partial(lab: &LabResult) -> String {
    let mut out = String::new();
    for r in lab.results.iter().filter(|r| r.interrupted) {
        out.push_str(&format!(
            "; {} cut short after {:.2} s, left out of the tables",
            row_name(lab, r),
            r.duration_s
        ));
    }
    let never: Vec<&str> = (lab.servers.iter())
        .filter(|s| s.status == results::PeerStatus::NotRun)
        .map(|s| s.name.as_str())
        .collect();
    if !never.is_empty() {
        out.push_str(&format!("; not run: {}", never.join(", ")));
    }
    out
}

/// What a row without figures says in their place, escaped: a measurement that got not one
/// response says so in its own words (`measured nothing: ...`); a way that could not run is
/// `not available: why`. `None` for a row with figures.
pub(super) fn no_figures(r: &LabRow) -> Option<String> {
    let why = crate::text::esc(r.unavailable.as_deref()?);
    Some(if r.measured_nothing() {
        why
    } else {
        format!("not available: {why}")
    })
}

/// A note under a table whose rows without figures show `n/a`: each such row (named by
/// `name`) and why, or nothing when every row has figures.
pub(super) fn no_figures_note<'a>(
    rows: impl Iterator<Item = &'a LabRow>,
    name: impl Fn(&LabRow) -> String,
) -> String {
    let lines: Vec<String> = rows
        .filter_map(|r| {
            Some(format!(
                "{}: {}",
                crate::text::esc(&name(r)),
                no_figures(r)?
            ))
        })
        .collect();
    if lines.is_empty() {
        return String::new();
    }
    format!(r#"<p class="note">n/a: {}.</p>"#, lines.join("; "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    /// A row of `experiment` that ran for a millisecond and got not one response, as the lab
    /// writes it: zeros in its rates, and why in `unavailable`.
    fn nothing(experiment: &str, extra: serde_json::Value) -> serde_json::Value {
        let mut row = json!({"experiment": experiment, "server": "flint", "mode": "persistent",
            "requests": 0, "duration_s": 0.001, "requests_per_s": 0.0, "bytes_per_s": 0.0,
            "client_limited": true, "errors": 3,
            "unavailable": "measured nothing: not one response in 1.0 ms (3 errors)"});
        row.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        row
    }

    #[test]
    fn an_interrupted_lab_run_says_so_with_the_row_cut_short_and_the_servers_not_run() {
        let row = |size: u64, interrupted: bool| {
            json!({"experiment": "sizes", "server": "flint", "mode": "persistent",
                   "size_bytes": size, "requests": 500, "duration_s": 0.57,
                   "requests_per_s": 877.0, "bytes_per_s": 1e6, "interrupted": interrupted})
        };
        let lab = json!({"kind": "lab", "experiment": "sizes", "interrupted": true,
            "servers": [
                {"name": "flint", "version": "flint/0.1.0", "status": "ok", "note": null},
                {"name": "nginx", "version": "nginx/1.22.1", "status": "not_run",
                 "note": "not measured: the run was interrupted (Ctrl-C) before its turn"}],
            "results": [row(1024, false), row(2048, true)]});
        let html = crate::render(&[("lab.json".into(), lab.clone())]).unwrap();
        assert!(html.contains("ended early by Ctrl-C"), "{html}");
        assert!(
            html.contains("flint sizes 2.05 kB cut short after 0.57 s"),
            "{html}"
        );
        assert!(html.contains("not run: nginx"), "{html}");
        assert!(html.contains("<td>not run</td>"), "{html}");
        // A file older than the top-level flag: its row cut short says it.
        let mut older = lab;
        older.as_object_mut().unwrap().remove("interrupted");
        let html = crate::render(&[("lab.json".into(), older)]).unwrap();
        assert!(html.contains("ended early by Ctrl-C"), "{html}");
    }

    #[test]
    fn a_row_that_measured_nothing_is_shown_as_na_with_its_reason_once() {
        let lab = json!({"kind": "lab", "experiment": "all", "results": [
            nothing("tls", json!({"certificate": "ecdsa-p256", "handshake": "full",
                                  "mode": "http1.0"})),
            {"experiment": "tls", "server": "nginx", "mode": "http1.0",
             "certificate": "ecdsa-p256", "handshake": "full", "requests": 900,
             "duration_s": 1.0, "requests_per_s": 900.0, "bytes_per_s": 1e6},
            nothing("tls", json!({"certificate": "ecdsa-p256", "size_bytes": 1024})),
            nothing("sizes", json!({"size_bytes": 1024})),
            {"experiment": "sizes", "server": "flint", "mode": "persistent", "size_bytes": 4096,
             "requests": 5000, "duration_s": 1.0, "requests_per_s": 5000.0, "bytes_per_s": 2.1e7},
            nothing("digest", json!({"size_bytes": 1024})),
            nothing("syscalls", json!({"page_mode": "persistent", "tls": false, "rtt_ms": 0.0,
                                       "delay": "none"})),
        ]});
        let html = crate::render(&[("lab.json".into(), lab)]).unwrap();
        // No rate of 0 (client-limited at that) for a row without one.
        assert!(!html.contains(">0†<"), "{html}");
        assert!(
            html.contains("<td>full handshakes</td><td class=\"n\">n/a</td>"),
            "{html}"
        );
        // The reason in its own words, never `not available: measured nothing`.
        assert!(!html.contains("not available: measured nothing"), "{html}");
        let said = html.matches("measured nothing: not one response").count();
        assert!(said >= 4, "{said} in {html}");
        assert!(html.contains("<td class=\"n\">n/a</td>"), "{html}");
        // The rows with figures still show them.
        assert!(html.contains("900"), "{html}");
    }
}
