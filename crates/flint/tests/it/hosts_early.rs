//! `flint bench --hosts` with `--http 3 --tls-resume --early-data`: every worker's orders carry
//! the option, so each host's resumed connections send their pages in 0-RTT to a `flint serve`
//! that accepts it (`h3_early_data`), closing a connection idle past its keep-alive, much
//! shorter than the run's think time, so that each page goes on a new, resumed connection. The
//! merged `summary.http3` 0-RTT counts are the sum of the hosts' (`hosts[].early_data`), and
//! the server's access log holds every request the hosts sent, done or unfinished; the report
//! is as docs/bench-json.schema.json says. Counts, not times; every process is stopped by its
//! PID.

use crate::common;
use crate::hosts_support;

use common::{flint, run_bounded, serve_tls, started_server, texts, Server};
use hosts_support::{local_launch, read_json, served, LIMIT};
use serde_json::Value;
use test_support::certs::{KeyKind, SelfSigned};

/// Pages over both hosts (one Webchild each, a file a page).
const PAGES: u64 = 8;

/// `flint serve` over HTTPS and HTTP/3, 0-RTT on, an idle connection closed after 50 ms,
/// serving `a.html` from `cert`'s directory and logging every request to `access.log` there.
fn serve_early(cert: &SelfSigned) -> Server {
    let dir = cert.dir();
    std::fs::write(dir.join("a.html"), vec![b'x'; 1024]).unwrap();
    let config = dir.join("serve.toml");
    std::fs::write(&config, "h3_early_data = true\nkeepalive_timeout_ms = 50\n").unwrap();
    let log = dir.join("access.log");
    let child = serve_tls(
        cert,
        &["--listen", "127.0.0.1:0", "--threads", "1", "--http3"],
    )
    .arg("--config")
    .arg(&config)
    .arg("--access-log")
    .arg(&log)
    .spawn()
    .expect("spawn flint serve");
    started_server(child, "https", true)
}

fn count(v: &Value, key: &str) -> u64 {
    v[key]
        .as_u64()
        .unwrap_or_else(|| panic!("no count {key} in {v}"))
}

#[test]
fn two_hosts_send_in_0rtt_and_their_early_counts_add_up_to_the_summarys() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let server = serve_early(&cert);
    let json = cert.dir().join("r.json");
    let template = local_launch();
    // Half a second's think: ten times the server's keep-alive, so that each page finds its
    // Webchild's last connection closed even when a busy machine's timers fire late.
    let out = run_bounded(
        flint()
            .args(["bench", &format!("https://{}/a.html", server.addr)])
            .args(["--http", "3", "--tls-resume", "--early-data", "-k"])
            .args(["-c", "2", "-t", "1", "-n", &PAGES.to_string()])
            .args(["--think", "500ms", "--timeout", "30s"])
            .args(["-q", "--report", "none", "--json", json.to_str().unwrap()])
            .args(["--hosts", "a,b", "--launch", &template]),
        LIMIT,
    );
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let doc = read_json(&json);
    // Each host's row, `early_data` included, is as the schema says.
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not as the schema says: {errors:#?}");
    let s = &doc["summary"];
    assert_eq!(count(s, "errors"), 0, "{s}");
    assert_eq!(count(s, "requests"), PAGES, "{s}");
    let h3 = &s["http3"];
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2, "{}", doc["hosts"]);
    for (merged, each) in [
        ("early_offered", "offered"),
        ("early_accepted", "accepted"),
        ("early_rejected", "rejected"),
        ("early_requests", "requests"),
    ] {
        let sum: u64 = hosts.iter().map(|h| count(&h["early_data"], each)).sum();
        assert_eq!(count(h3, merged), sum, "{merged}: {h3}\n{}", doc["hosts"]);
    }
    // Each Webchild's pages after its first go on resumed connections, which send in 0-RTT:
    // a worker that ran without the option would count none.
    assert!(count(h3, "early_accepted") > 0, "{h3}");
    for h in hosts {
        assert!(count(&h["early_data"], "offered") > 0, "{h}");
    }
    // The server's own count: every request a host sent, answered or not.
    let sent = count(s, "requests") + count(s, "unfinished");
    assert_eq!(served(cert.dir(), sent as usize) as u64, sent, "{s}");
}
