//! `--json` output: checked against docs/bench-json.schema.json, and its figures against the
//! text reports'.

use crate::report_support;

use bench::report::{environment, json, rfc3339, SCHEMA_VERSION};
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

#[test]
fn json_says_what_it_is_and_where_it_ran() {
    let doc = json(&small(false));
    assert_eq!(doc["kind"], "bench");
    assert_eq!(doc["schema_version"], 3);
    assert_eq!(
        doc["environment"],
        serde_json::to_value(environment()).unwrap()
    );
    for k in [
        "hostname",
        "os",
        "kernel",
        "cpu_model",
        "cores",
        "memory_bytes",
    ] {
        assert!(doc["environment"].get(k).is_some(), "{k}");
    }
}

#[test]
fn json_spectrum_halves_the_remainder_as_far_as_the_count_allows() {
    let doc = json(&small(false));
    let points = doc["summary"]["response_spectrum"].as_array().unwrap();
    let p: Vec<f64> = points
        .iter()
        .map(|x| x["percentile"].as_f64().unwrap())
        .collect();
    // 200 responses: 1 / (1 - p) up to 128 (99.21875 %), then 100.
    assert_eq!(
        p,
        [0.0, 50.0, 75.0, 87.5, 93.75, 96.875, 98.4375, 99.21875, 100.0]
    );
    let ms: Vec<f64> = points.iter().map(|x| x["ms"].as_f64().unwrap()).collect();
    assert!(ms.windows(2).all(|w| w[0] <= w[1]), "{ms:?}");
    let response = &doc["summary"]["response_ms"];
    assert_eq!(ms[0], response["min"].as_f64().unwrap());
    assert_eq!(ms[8], response["max"].as_f64().unwrap());
    // 100 pages: up to 64 (98.4375 %).
    let pages = doc["summary"]["page_spectrum"].as_array().unwrap();
    assert_eq!(pages.len(), 8);
    // Nothing measured, no points; one value, its two ends.
    assert_eq!(
        json(&empty())["summary"]["response_spectrum"],
        serde_json::json!([])
    );
    let doc = json(&netsite());
    let (one, response) = (
        &doc["summary"]["response_spectrum"],
        &doc["summary"]["response_ms"],
    );
    assert_eq!(one.as_array().unwrap().len(), 2, "{one}");
    assert_eq!(one[0]["percentile"], 0.0);
    assert_eq!(one[0]["ms"], response["min"]);
    assert_eq!(one[1]["percentile"], 100.0);
    assert_eq!(one[1]["ms"], response["max"]);
}

#[test]
fn json_timeseries_has_the_seconds_of_the_window() {
    let doc = json(&small(false));
    let ts = doc["timeseries"].as_array().unwrap();
    assert_eq!(ts.len(), 2);
    assert_eq!(ts[0]["t_s"], 1.0);
    assert_eq!(ts[1]["t_s"], 2.0);
    let sum = |k: &str| ts.iter().map(|e| e[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(
        sum("requests"),
        doc["summary"]["requests"].as_u64().unwrap()
    );
    assert_eq!(sum("errors"), doc["summary"]["errors"].as_u64().unwrap());
    assert_eq!(sum("bytes"), doc["summary"]["bytes_read"].as_u64().unwrap());
    // Later pages of the fixture are slower: the second second's median is higher.
    assert!(ts[1]["p50_ms"].as_f64() > ts[0]["p50_ms"].as_f64());
    assert!(ts[0]["p99_ms"].as_f64() >= ts[0]["p50_ms"].as_f64());
}

fn profile() -> Value {
    serde_json::json!({
        "pid": 1234, "method": "strace", "window_s": 2.0,
        "cpu_user_s": 0.5, "cpu_sys_s": 1.25, "cpu_us_per_request": 8.75,
        "syscalls": [
            {"name": "read", "seconds": 0.12, "calls": 400, "errors": 0},
            {"name": "accept4", "seconds": null, "calls": 200, "errors": 3}
        ],
        "total_calls": 600, "total_errors": 3, "total_seconds": 0.12,
        "calls_per_request": 3.0, "calls_per_page": 6.0,
        "note": "strace -c -f: slows the server"
    })
}

#[test]
fn schema_accepts_a_server_profile_and_checks_it() {
    let mut doc = json(&small(false));
    doc["server_profile"] = profile();
    assert!(violations(&doc).is_empty(), "{:#?}", violations(&doc));
    let mut bad_method = doc.clone();
    bad_method["server_profile"]["method"] = "dtrace".into();
    let mut no_totals = doc.clone();
    no_totals["server_profile"]
        .as_object_mut()
        .unwrap()
        .remove("total_calls");
    let mut negative = doc.clone();
    negative["server_profile"]["syscalls"][0]["calls"] = (-1).into();
    for (what, d) in [
        ("unknown method", bad_method),
        ("no total_calls", no_totals),
        ("negative calls", negative),
    ] {
        assert!(!violations(&d).is_empty(), "{what} was accepted");
    }
}

#[test]
fn schema_requires_the_version_2_fields() {
    let good = json(&small(false));
    let mut no_kind = good.clone();
    no_kind.as_object_mut().unwrap().remove("kind");
    let mut old = good.clone();
    old["schema_version"] = 1.into();
    let mut second = good.clone();
    second["timeseries"][0]
        .as_object_mut()
        .unwrap()
        .remove("p99_ms");
    let mut env = good.clone();
    env["environment"].as_object_mut().unwrap().remove("kernel");
    let mut spectrum = good.clone();
    spectrum["summary"]["response_spectrum"][0]["percentile"] = 101.into();
    for (what, d) in [
        ("no kind", no_kind),
        ("version 1", old),
        ("a second without p99_ms", second),
        ("environment without kernel", env),
        ("percentile above 100", spectrum),
    ] {
        assert!(!violations(&d).is_empty(), "{what} was accepted");
    }
}
