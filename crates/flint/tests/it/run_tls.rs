//! `flint run --tls`: the main job over HTTPS, the client trusting exactly the certificate made
//! for the run.

use crate::common;

use common::{flint, run_bounded};
use std::time::Duration;

#[test]
fn run_over_tls_verifies_the_throwaway_certificate_and_reports_handshakes() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("run.json");
    let out = run_bounded(
        flint()
            .args(["run", "--tls", "-n", "40", "-c", "4", "--quiet", "--json"])
            .arg(&json_path),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stderr: {stderr}");
    assert!(stderr.contains("https://localhost:"), "{stderr}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();

    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(
        errors.is_empty(),
        "not as docs/bench-json.schema.json says: {errors:#?}"
    );

    assert_eq!(
        json["config"]["target"]["scheme"], "https",
        "{}",
        json["config"]
    );
    // Verified against the run's own certificate, not skipped.
    assert_eq!(json["config"]["tls"]["verify"], true, "{}", json["config"]);
    assert!(json["config"]["tls"]["cacert"].is_string());
    let summary = &json["summary"];
    assert_eq!(summary["errors"], 0, "{summary}");
    assert!(
        summary["requests"].as_u64().is_some_and(|n| n > 0),
        "{summary}"
    );
    let handshakes = summary["tls"]["handshakes"]
        .as_u64()
        .expect("tls.handshakes");
    assert!(handshakes >= 1, "{summary}");
    assert!(
        summary["tls"]["version"]
            .as_str()
            .is_some_and(|v| v.contains("1_3") || v.contains("1.3")),
        "{summary}"
    );
}

#[test]
fn run_tls_with_a_version_speaks_only_that_version() {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("run.json");
    let out = run_bounded(
        flint()
            .args([
                "run", "--tls", "1.2", "-n", "20", "-c", "2", "--quiet", "--json",
            ])
            .arg(&json_path),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_eq!(
        json["config"]["tls"]["version"], "1.2",
        "{}",
        json["config"]
    );
    let version = json["summary"]["tls"]["version"]
        .as_str()
        .unwrap_or_default();
    assert!(version.contains("1_2"), "{}", json["summary"]["tls"]);
}
