//! `--json` output: checked against docs/bench-json.schema.json, and its figures against the
//! text reports'.

mod report_support;

use bench::report::{json, rfc3339, SCHEMA_VERSION};
use bench::stats::ErrorKind;
use report_support::{empty, netsite, small};
use serde_json::Value;
use std::time::{Duration, UNIX_EPOCH};

fn schema() -> Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/bench-json.schema.json"
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn violations(doc: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(&schema()).expect("the schema is valid");
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

#[test]
fn json_of_every_kind_of_run_matches_the_schema() {
    for (name, r) in [
        ("netsite", netsite()),
        ("closed", small(false)),
        ("open", small(true)),
        ("empty", empty()),
    ] {
        let doc = json(&r);
        let bad = violations(&doc);
        assert!(bad.is_empty(), "{name}: {bad:#?}");
    }
}

#[test]
fn schema_rejects_what_it_should() {
    let good = json(&small(false));
    let mut missing = good.clone();
    missing["summary"]
        .as_object_mut()
        .unwrap()
        .remove("webstone_number");
    let mut negative = good.clone();
    negative["pages"][0]["hits"] = serde_json::json!(-1);
    let mut kind = good.clone();
    kind["errors_by_kind"]
        .as_object_mut()
        .unwrap()
        .remove("reset");
    let mut latency = good.clone();
    latency["summary"]["response_ms"]
        .as_object_mut()
        .unwrap()
        .remove("p999");
    for (what, doc) in [
        ("missing webstone_number", missing),
        ("negative hits", negative),
        ("missing error kind", kind),
        ("latency without p999", latency),
    ] {
        assert!(!violations(&doc).is_empty(), "{what} was accepted");
    }
}

#[test]
fn schema_requires_every_error_kind() {
    let schema = schema();
    let required: Vec<&str> = schema["$defs"]["errors_by_kind"]["required"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    for k in ErrorKind::ALL {
        assert!(required.contains(&k.name()), "{}", k.name());
    }
}

#[test]
fn json_summary_carries_the_papers_figures() {
    let doc = json(&netsite());
    let s = &doc["summary"];
    assert_eq!(s["pages"], 15770);
    assert_eq!(s["connects"], 41672);
    assert_eq!(s["bytes_total"], 17409474560u64);
    assert_eq!(s["bytes_header"], 7966720);
    assert_eq!(s["bytes_body"], 17401507840u64);
    let f = |k: &str| s[k].as_f64().unwrap();
    assert!((f("webstone_number") - 450.5714).abs() < 1e-3);
    assert!((f("webstone_thruput_bytes_per_s") - 345879.49).abs() < 0.01);
    assert!((f("throughput_bytes_per_s") - 8290225.98).abs() < 0.01);
    assert!((f("avg_response_s") - 1.2078597).abs() < 1e-6);
    assert!((f("avg_connect_s") - 0.0043039).abs() < 1e-6);
    assert_eq!(f("duration_s"), 2100.0);
    assert_eq!(doc["pages"][2]["size_bytes"], 6291456);
    assert_eq!(doc["pages"][2]["files"][0], "/file5m.html");
    assert_eq!(doc["schema_version"], SCHEMA_VERSION);
    assert_eq!(doc["started_at"], "1995-03-17T11:23:10.000Z");
    assert_eq!(doc["config"]["http"], "http1.0");
    assert_eq!(doc["config"]["stop"], "duration");
    assert_eq!(doc["config"]["pages"], Value::Null);
    assert!(doc.get("response_uncorrected_ms").is_none());
}

#[test]
fn json_of_a_recorded_run_has_urls_errors_and_open_loop_figures() {
    let doc = json(&small(true));
    let s = &doc["summary"];
    assert_eq!(s["requests"], 200);
    assert_eq!(s["requests_per_s"], 100.0);
    assert_eq!(s["errors"], 3);
    assert_eq!(s["response_ms"]["count"], 200);
    assert_eq!(s["response_uncorrected_ms"]["count"], 200);
    assert_eq!(s["page_uncorrected_ms"]["count"], 100);
    assert_eq!(doc["errors_by_kind"]["status_5xx"], 2);
    assert_eq!(doc["errors_by_kind"]["connect_refused"], 0);
    let logo = doc["urls"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["url"] == "/logo1k.gif")
        .unwrap();
    assert_eq!(logo["requests"], 100);
    assert_eq!(logo["size_bytes"], 1024);
    assert_eq!(
        logo["connect_ms"]["min"],
        Value::Null,
        "no connect opened for it"
    );
    assert_eq!(logo["transfer_ms"]["min"], 0.6);
    assert_eq!(doc["config"]["rate_pages_per_s"], 50.0);
    assert_eq!(doc["config"]["stop"], "pages");
    assert_eq!(doc["config"]["pages"], 100);
    assert_eq!(doc["pages"][0]["errors"], 1);
}

#[test]
fn json_of_an_empty_run_has_no_nan() {
    let doc = json(&empty());
    let text = serde_json::to_string(&doc).unwrap();
    assert!(
        !text.contains("NaN") && !text.contains("null,\"pages_per_s"),
        "{text}"
    );
    assert_eq!(doc["summary"]["requests_per_s"], 0.0);
    assert_eq!(doc["interrupted"], true);
    assert_eq!(doc["started_at"], "1970-01-01T00:00:00.000Z");
}

#[test]
fn rfc3339_dates_are_right_across_leap_years() {
    let at = |s: u64, ms: u64| rfc3339(UNIX_EPOCH + Duration::from_millis(s * 1000 + ms));
    assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
    assert_eq!(at(951_782_400, 0), "2000-02-29T00:00:00.000Z");
    assert_eq!(at(1_709_251_199, 999), "2024-02-29T23:59:59.999Z");
    assert_eq!(at(4_107_542_400, 0), "2100-03-01T00:00:00.000Z");
}
