//! `flint lab` whose every measurement got not one response: exit 1 and a note naming the
//! row, and the JSON marks the row (`unavailable`, no rate it did not measure) and lists only
//! the server it used. A window of a microsecond with no warm-up measures nothing: no 6.5 MB
//! response (the digest experiment's file) can be asked for and read in it.

use crate::common::{flint, run_bounded};
use serde_json::Value;
use std::time::Duration;

#[test]
fn a_lab_run_that_measured_nothing_exits_1_with_a_note_and_marks_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("lab.json");
    let out = run_bounded(
        flint()
            .args(["lab", "digest", "--servers", "flint", "--no-profile"])
            .args(["-d", "1us", "--warmup", "0s", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("1 measurement measured nothing (not one response): flint digest"),
        "{stderr}"
    );
    assert!(stderr.contains("nothing was measured"), "{stderr}");
    let doc: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let rows = doc["results"].as_array().unwrap();
    assert_eq!(rows.len(), 1, "{doc}");
    let row = &rows[0];
    assert_eq!(row["requests"], 0);
    assert_eq!(row["client_limited"], false);
    let why = row["unavailable"].as_str().expect("marked unavailable");
    assert!(
        why.starts_with("measured nothing: not one response in"),
        "{why}"
    );
    // Only the server the experiment used, as lib.rs writes the list.
    let servers: Vec<&str> = (doc["servers"].as_array().unwrap().iter())
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(servers, ["flint"], "{doc}");
}
