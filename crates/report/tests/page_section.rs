//! The page experiment's rows (`flint lab syscalls` with `--rtt`): page time against round trip
//! per way, the per-page table with the wire's packets, and the truss tables side by side per
//! way; a way that could not run is shown as such in each.

use serde_json::{json, Value};

fn row(server: &str, way: &str, tls: bool, rtt: f64, page_ms: f64) -> Value {
    let mode = match way {
        "http1.0" | "http1.0-4" => "http1.0",
        "pipelined" => "pipelined",
        _ => "persistent",
    };
    if way == "h2" {
        return json!({"experiment": "syscalls", "server": server, "mode": mode, "page_mode": way,
            "tls": tls, "rtt_ms": rtt, "delay": "delay-line",
            "unavailable": "client lacks HTTP/2"});
    }
    json!({"experiment": "syscalls", "server": server, "mode": mode, "page_mode": way,
        "tls": tls, "rtt_ms": rtt, "delay": if rtt > 0.0 { "delay-line" } else { "none" },
        "rtt_measured_ms": rtt * 1.05, "requests": 220, "duration_s": 1.0,
        "requests_per_s": 220.0, "bytes_per_s": 1e6, "syscalls_per_request": 3.0,
        "server_cpu_us_per_request": 20.0, "client_limited": false, "interrupted": false,
        "errors": 0, "profile_method": "perf",
        "syscalls": [{"name": "sendfile", "calls": 220, "errors": 0, "seconds": null},
                     {"name": "writev", "calls": 440, "errors": 0, "seconds": null}],
        "connections_per_page": if way == "keepalive-6" { 6.0 } else { 1.0 },
        "page_ms_p50": page_ms, "page_ms_p99": page_ms * 1.5, "connect_ms_p50": rtt + 0.1,
        "wire": {"packets_to_server": 101.0, "packets_to_client": 149.0,
                 "bytes_to_server": 9000.0, "bytes_to_client": 191_000.0, "pages": 5}})
}

fn lab() -> Value {
    let mut results = Vec::new();
    for rtt in [0.0, 10.0, 50.0] {
        for server in ["flint", "nginx"] {
            for (way, rtts) in [("persistent", 46.0), ("keepalive-6", 9.0), ("h2", 0.0)] {
                for tls in [false, true] {
                    results.push(row(server, way, tls, rtt, 2.0 + rtts * rtt));
                }
            }
        }
    }
    json!({"kind": "lab", "schema_version": 1, "experiment": "syscalls", "results": results})
}

#[test]
fn page_time_against_round_trip_the_wire_and_truss_tables_per_way() {
    let html = report::render(&[("page.json".into(), lab())]).expect("renders");
    for text in [
        "persistent: page time",
        "keepalive-6 over TLS: page time",
        "round trip (ms)",
        "Per page, by server and way",
        "not available: client lacks HTTP/2",
        "Calls per page, experiment syscalls",
        "keepalive-6 tls",
    ] {
        assert!(html.contains(text), "{text:?} missing");
    }
    // The truss tables hold the shortest round trip only: 3 calls per request is 132 per page.
    assert!(html.contains(">132<"), "calls per page in the truss tables");
    // Packets per page, as counted.
    assert!(html.contains(">149<"), "packets to the client per page");
}

/// A lab run without a tracer (`--no-profile`): the per-page table has no syscalls column (it
/// would be dashes throughout), and keeps the rest, CPU included.
#[test]
fn an_untraced_run_has_no_column_of_dashes_for_syscalls() {
    let mut lab = lab();
    for r in lab["results"].as_array_mut().unwrap() {
        if r.get("unavailable").is_none() {
            r["syscalls_per_request"] = Value::Null;
            r["syscalls"] = Value::Null;
            r["profile_method"] = Value::Null;
        }
    }
    let html = report::render(&[("page.json".into(), lab)]).expect("renders");
    let at = html
        .find("Per page, by server and way")
        .expect("the page table");
    let table = &html[at..at + html[at..].find("</table>").unwrap()];
    assert!(!table.contains("Syscalls/page"), "{table}");
    assert!(table.contains("CPU µs/page"), "{table}");
    assert!(
        table.contains("not available: client lacks HTTP/2"),
        "{table}"
    );
    // The traced run keeps it.
    let html = report::render(&[("page.json".into(), self::lab())]).expect("renders");
    assert!(html.contains("Syscalls/page"));
}
