//! `flint bench --http 1.1 --pipeline 8 -c 1 -n 200` on one URL against flint serve and nginx:
//! 8 requests in flight, written in batches as responses arrive (as `h2load --h1 -m 8` and wrk's
//! pipeline.lua do), so that the client's writes to its socket, counted by strace, are far
//! fewer than its 200 requests; every request is answered, and nginx's access log has a line
//! for each.
//!
//! nginx and strace are installed by scripts/install-peers.sh; without them these tests fail
//! saying so. Every server is stopped whatever happens (flint serve on drop, nginx by its
//! process group); every wait is bounded.

use crate::common;

use common::peer_server::{nginx, PeerServer};
use common::{flint, run_bounded, start_server};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

const BODY: usize = 1024;

/// A document root with `/one.txt` of [`BODY`] bytes.
fn site() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("root")).unwrap();
    std::fs::write(dir.path().join("root/one.txt"), vec![b'a'; BODY]).unwrap();
    dir
}

/// `flint bench URL --http 1.1 --pipeline 8 -c 1 -n 200` under strace: its JSON, and the
/// writes it made to its TCP socket.
fn pipelined(dir: &Path, url: &str) -> (Value, usize) {
    let json = dir.join("bench.json");
    let trace = dir.join("strace.txt");
    let out = run_bounded(
        std::process::Command::new("strace")
            .args(["-f", "-y", "-e", "trace=write,writev,sendto,sendmsg", "-o"])
            .arg(&trace)
            .arg(env!("CARGO_BIN_EXE_flint"))
            .args(["bench", url, "--http", "1.1", "--pipeline", "8"])
            .args(["-c", "1", "-n", "200", "-q", "--report", "none", "--json"])
            .arg(&json),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "flint bench under strace: {stderr}");
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let trace = std::fs::read_to_string(&trace).expect("strace's output: is strace installed?");
    let writes = trace
        .lines()
        .filter(|l| l.contains("<socket:") && !l.contains("resumed>"))
        .count();
    (json, writes)
}

/// Every one of the 200 requests answered, none unfinished, in far fewer writes than requests.
fn check(json: &Value, writes: usize) {
    let summary = &json["summary"];
    assert_eq!(summary["requests"], 200, "{summary}");
    assert_eq!(summary["errors"], 0, "{summary}");
    assert_eq!(summary["unfinished"], 0, "{summary}");
    // One write per batch of responses read: a handful of requests each, 25 at best; one
    // request a write (the behaviour this replaces) would be 200.
    assert!(
        (1..=100).contains(&writes),
        "{writes} writes for 200 pipelined requests"
    );
}

#[test]
fn flint_serve_answers_200_pipelined_requests_written_in_batches() {
    let dir = site();
    let server = start_server(&dir.path().join("root"), 1);
    let url = format!("http://{}/one.txt", server.addr);
    let (json, writes) = pipelined(dir.path(), &url);
    drop(server);
    println!("flint serve: {writes} writes");
    check(&json, writes);
}

#[test]
fn nginx_logs_200_pipelined_requests_written_in_batches() {
    let dir = site();
    let nginx = PeerServer::start("nginx", dir.path(), |port, log| {
        let d = dir.path();
        nginx(d, port, log, "", &format!("listen 127.0.0.1:{port};"))
    });
    let url = format!("http://127.0.0.1:{}/one.txt", nginx.addr.port());
    let (json, writes) = pipelined(dir.path(), &url);
    println!("nginx: {writes} writes");
    check(&json, writes);
    let lines = nginx.logged(200);
    assert_eq!(lines.len(), 200, "nginx logged {} requests", lines.len());
    assert!(lines
        .iter()
        .all(|l| l.contains("\"GET /one.txt HTTP/1.1\" 200 ")));
}

#[test]
fn nginx_closing_after_3_requests_logs_requests_plus_unfinished_exactly() {
    // `keepalive_requests 3` under `--pipeline 4`: every connection ends with `Connection:
    // close` and requests written behind it, which nginx never processes: they are sent
    // again, and its log holds every request counted or unfinished, no more.
    let dir = site();
    let nginx = PeerServer::start("nginx", dir.path(), |port, log| {
        let d = dir.path();
        let server = format!("listen 127.0.0.1:{port}; keepalive_requests 3;");
        nginx(d, port, log, "", &server)
    });
    let url = format!("http://127.0.0.1:{}/one.txt", nginx.addr.port());
    let json = dir.path().join("bench.json");
    let out = run_bounded(
        flint()
            .args(["bench", &url, "--pipeline", "4", "-c", "4", "-d", "1s"])
            .args(["-q", "--report", "none", "--json"])
            .arg(&json),
        Duration::from_secs(60),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &json["summary"];
    let count = |k: &str| s[k].as_u64().unwrap_or_else(|| panic!("{k}: {s}"));
    let expected = (count("requests") + count("unfinished")) as usize;
    let lines = nginx.logged(expected);
    println!("nginx logged {}: {s}", lines.len());
    assert_eq!(count("errors"), 0, "{s}");
    assert!(count("requests") > 30, "{s}");
    assert!(count("pipeline_resent") > 0, "{s}");
    assert_eq!(lines.len(), expected, "{s}");
}

#[test]
fn pipeline_is_http_1_1s() {
    for (http, says) in [("1.0", "--http 1.1"), ("2", "--streams N")] {
        let out = run_bounded(
            flint().args([
                "bench",
                "http://127.0.0.1:9/",
                "--pipeline",
                "4",
                "--http",
                http,
            ]),
            Duration::from_secs(30),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(says), "--http {http}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
    }
}
