//! Fail fast: a run whose every attempt fails the same way (a closed port, `--http 2` against a
//! server without HTTP/2, every file missing) stops after about a second with the reason and
//! what to do about it, exit 1, the results so far still reported; a server that fails a few
//! requests and then answers is not stopped.

use crate::common;

use common::{counting_responder, flint, run_bounded, texts};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A `-d 30s` run that fails fast ends well before its duration.
const WELL_BEFORE: Duration = Duration::from_secs(15);
/// Any run here, killed and failed past this.
const LIMIT: Duration = Duration::from_secs(60);

/// A keep-alive HTTP/1.1 responder in this process: the `n`th request it answers (from 0, over
/// all connections) gets `answer(n)`.
fn responder(answer: fn(u64) -> &'static [u8]) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let answered = Arc::new(AtomicU64::new(0));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let answered = answered.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut have = Vec::new();
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        have.drain(..end + 4);
                        let n = answered.fetch_add(1, Ordering::Relaxed);
                        if conn.write_all(answer(n)).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    addr
}

fn not_found(_: u64) -> &'static [u8] {
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found"
}

/// Fails the first five requests, then answers every one.
fn fails_at_first(n: u64) -> &'static [u8] {
    if n < 5 {
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"
    } else {
        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
    }
}

#[test]
fn refused_connects_stop_the_run_and_ask_whether_the_server_runs() {
    let refused = common::refused_addr();
    let port = refused.addr.port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let html = dir.path().join("out.html");
    let url = format!("http://127.0.0.1:{port}/");
    let started = Instant::now();
    let out = run_bounded(
        flint()
            .args(["bench", &url, "-d", "30s", "-c", "2", "-q", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
        LIMIT,
    );
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < WELL_BEFORE, "a 30 s run went on for {took:?}");
    let line = stderr
        .lines()
        .find(|l| l.contains("stopped early"))
        .unwrap_or_else(|| panic!("no reason given: {stderr}"));
    assert!(
        line.contains("every attempt failed as connect_refused ("),
        "{line}"
    );
    assert!(
        line.contains(&format!("is the server running on 127.0.0.1:{port}?")),
        "{line}"
    );
    // The results so far are still reported, and the JSON says why the run stopped.
    assert!(stdout.contains("connect_refused"), "{stdout}");
    assert!(
        stdout.contains("Stopped early: every attempt failed as connect_refused"),
        "{stdout}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "not as the schema says: {errors:#?}");
    let stopped = &doc["stopped_early"];
    assert_eq!(stopped["kind"], "connect_refused", "{doc}");
    assert!(stopped["attempts"].as_u64().unwrap() >= 3, "{stopped}");
    assert!(stopped["after_s"].as_f64().unwrap() >= 1.0, "{stopped}");
    assert!(doc["errors_by_kind"]["connect_refused"].as_u64().unwrap() > 0);
    assert_eq!(doc["interrupted"], false);
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("stopped early"), "no mark in the HTML report");
    assert!(
        page.contains("is the server running on"),
        "no reason in the HTML report"
    );
}

#[test]
fn no_fail_fast_runs_its_whole_duration() {
    let refused = common::refused_addr();
    let url = format!("http://127.0.0.1:{}/", refused.addr.port());
    let started = Instant::now();
    let out = run_bounded(
        flint().args(["bench", &url, "-d", "2s", "-c", "2", "-q", "--no-fail-fast"]),
        LIMIT,
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("stopped early"), "{stderr}");
    assert!(started.elapsed() >= Duration::from_secs(2));
}

#[test]
fn http2_against_a_server_without_it_says_so() {
    let (addr, _) = counting_responder();
    let url = format!("http://{addr}/");
    let started = Instant::now();
    let out = run_bounded(
        flint().args(["bench", &url, "--http", "2", "-d", "30s", "-c", "2", "-q"]),
        LIMIT,
    );
    let took = started.elapsed();
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < WELL_BEFORE, "a 30 s run went on for {took:?}");
    assert!(
        stderr.contains("every attempt failed as h2_not_negotiated ("),
        "{stderr}"
    );
    assert!(
        stderr.contains("the server does not speak HTTP/2 in cleartext (h2c) on that port"),
        "{stderr}"
    );
}

#[test]
fn run_against_a_target_without_the_files_suggests_flint_fileset() {
    let addr = responder(not_found);
    let url = format!("http://{addr}");
    let started = Instant::now();
    let out = run_bounded(
        flint().args(["run", "--target", &url, "-d", "30s", "-c", "2", "-q"]),
        LIMIT,
    );
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < WELL_BEFORE, "a 30 s run went on for {took:?}");
    assert!(
        stderr.contains("every attempt failed as status_4xx ("),
        "{stderr}"
    );
    assert!(
        stderr.contains("flint fileset DIR --mix general"),
        "{stderr}"
    );
    // The paper's report of what was measured is still there.
    assert!(stdout.contains("status_4xx"), "{stdout}");
}

fn method_not_allowed(_: u64) -> &'static [u8] {
    b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 2\r\n\r\nno"
}

#[test]
fn a_run_refused_with_405_says_the_statuses_not_missing_files() {
    let addr = responder(method_not_allowed);
    let url = format!("http://{addr}/f");
    let out = run_bounded(
        flint().args(["bench", &url, "-d", "30s", "-c", "2", "-q"]),
        LIMIT,
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("every attempt failed as status_4xx ("),
        "{stderr}"
    );
    assert!(!stderr.contains("no such files"), "{stderr}");
    assert!(stderr.contains("the server answered 405 ("), "{stderr}");
}

#[test]
fn a_server_that_fails_at_first_and_then_answers_is_not_stopped() {
    let addr = responder(fails_at_first);
    let url = format!("http://{addr}/");
    let out = run_bounded(
        flint().args(["bench", &url, "-n", "200", "-c", "2", "-q"]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("stopped early"), "{stderr}");
    assert!(stdout.contains("status_5xx 5"), "{stdout}");
    assert!(stdout.contains("Statuses:  200 195"), "{stdout}");
}

#[test]
fn on_many_hosts_each_worker_stops_and_the_run_says_why() {
    let refused = common::refused_addr();
    let url = format!("http://127.0.0.1:{}/", refused.addr.port());
    let launch = format!("{} worker", env!("CARGO_BIN_EXE_flint"));
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let started = Instant::now();
    let out = run_bounded(
        flint()
            .args([
                "bench", &url, "-d", "30s", "-c", "2", "-q", "--hosts", "a,b",
            ])
            .args(["--launch", &launch, "--json"])
            .arg(&json),
        LIMIT,
    );
    let took = started.elapsed();
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(took < WELL_BEFORE, "a 30 s run went on for {took:?}");
    assert!(
        stderr.contains("every attempt failed as connect_refused ("),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_early"]["kind"], "connect_refused", "{doc}");
    // Both hosts stopped early and finished: their results are merged, none lost.
    let hosts = doc["hosts"].as_array().expect("hosts");
    assert_eq!(hosts.len(), 2);
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{doc}");
}

/// A loopback port where a TCP server listens and UDP is refused, for as long as both live: the
/// listener, and a UDP socket bound to the port and connected to itself. A connected socket takes
/// datagrams from its peer only, so the kernel refuses everyone else's as if nothing were bound
/// (ICMP port unreachable), while no other socket (another test's QUIC server or client) can
/// take the port and answer or swallow them.
fn tcp_only_port() -> (std::net::TcpListener, std::net::UdpSocket) {
    for _ in 0..100 {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = tcp.local_addr().unwrap();
        // Its UDP side may be taken: another port.
        let Ok(udp) = std::net::UdpSocket::bind(addr) else {
            continue;
        };
        udp.connect(addr).unwrap();
        return (tcp, udp);
    }
    panic!("no loopback port free over both TCP and UDP in 100 tries");
}

#[test]
fn http3_refused_where_tcp_answers_asks_tcp_once_whatever_the_outputs() {
    // A TCP server on the port, HTTP/3's datagrams refused. The connects the run makes to tell
    // the two apart are counted from the listener's backlog once the run is over, so that one
    // made last is not missed.
    let (tcp, _refusing) = tcp_only_port();
    let port = tcp.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let html = dir.path().join("out.html");
    let url = format!("https://127.0.0.1:{port}/");
    // A refusal is an ICMP message, which the kernel may leave unsent under its rate limit
    // (shared by every test): a connect timeout past the run's duration keeps such an attempt
    // waiting for its next Initial's refusal instead of failing as connect_timeout, so that
    // every failure is a refusal and the run stops on them.
    let out = run_bounded(
        flint()
            .args(["bench", &url, "--http", "3", "-k", "-d", "30s", "-c", "2"])
            .args(["--connect-timeout", "60s", "-q", "--json"])
            .arg(&json)
            .arg("--html")
            .arg(&html),
        LIMIT,
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("nothing answered over UDP (QUIC)"),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["stopped_early"]["kind"], "connect_refused", "{doc}");
    let reason = doc["stopped_early"]["reason"].as_str().unwrap();
    assert!(reason.contains("HTTP/3 may be off"), "{reason}");
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("HTTP/3 may be off"),
        "no reason in the HTML report"
    );
    tcp.set_nonblocking(true).unwrap();
    let accepted = std::iter::from_fn(|| tcp.accept().ok()).count();
    assert_eq!(accepted, 1, "TCP connects made to say why the run stopped");
}
