//! A bench result from many client hosts: the page shows a row per host (a lost one with its
//! reason) and each host's throughput over time, read through the typed result.

mod common;

use results::{HostRecord, HostStatus, LatencySummary};

fn with_hosts() -> serde_json::Value {
    let mut v = common::bench(1000.0, 1.0, 3, 1, false);
    let mut hosts = vec![
        HostRecord {
            name: "gateweb-indy9".into(),
            webchildren: 6,
            requests: 2400,
            clock_offset_ms: Some(0.125),
            start_skew_ms: Some(0.5),
            client_cpu_us_per_request: Some(12.5),
            response_ms: LatencySummary {
                count: 2400,
                p50: 1.0,
                p99: 3.0,
                ..LatencySummary::default()
            },
            requests_per_second: vec![800, 800, 800],
            ..HostRecord::default()
        },
        HostRecord {
            name: "gateweb-indy11".into(),
            webchildren: 6,
            requests: 1200,
            start_skew_ms: Some(1500.0),
            warning: Some(
                "started late: its first request 1500.0 ms after the agreed start".into(),
            ),
            requests_per_second: vec![0, 600, 600],
            ..HostRecord::default()
        },
        HostRecord {
            name: "gateweb-indy10".into(),
            webchildren: 6,
            status: HostStatus::Lost,
            reason: Some("no heartbeat for 3 s".into()),
            requests: 1578,
            known_until_s: Some(2.0),
            requests_per_second: vec![790, 788],
            ..HostRecord::default()
        },
    ];
    v["hosts"] = serde_json::to_value(&hosts).unwrap();
    v["incomplete"] = true.into();
    // What the section reads back is what was written.
    let typed: Vec<HostRecord> = serde_json::from_value(v["hosts"].clone()).unwrap();
    assert_eq!(typed, std::mem::take(&mut hosts));
    v
}

#[test]
fn hosts_get_a_table_and_a_throughput_chart() {
    let html = report::render(&[("hosts.json".into(), with_hosts())]).unwrap();
    assert!(html.contains("Client hosts"), "section heading");
    assert!(html.contains("gateweb-indy9") && html.contains("gateweb-indy10"));
    assert!(html.contains("lost: no heartbeat for 3 s (figures as last heard, 2.0 s in)"));
    assert!(
        html.contains("ok (started late: its first request 1500.0 ms after the agreed start)"),
        "a late host's warning"
    );
    assert!(
        html.contains("1,578") || html.contains("1578"),
        "what the lost host had done"
    );
    assert!(html.contains("Incomplete"));
    assert!(html.contains("Throughput per host"), "the chart");
    assert!(html.contains("12.5"), "client CPU per request");
}

#[test]
fn a_run_in_one_process_has_no_hosts_section() {
    let html =
        report::render(&[("one.json".into(), common::bench(1000.0, 1.0, 3, 1, false))]).unwrap();
    assert!(!html.contains("Client hosts"));
}
