//! `--http 3` end to end: the engine against Debian's Caddy (HTTP/3 on by default; its access
//! log is the count) with pages of several files, in a `-n` run and in a run cut by its
//! duration with requests in flight; and against the `http3::Server` of crates/http3's UDP
//! tests (`/bytes/N`, `/reset`, `/stall`): a stream reset by the server, one never answered,
//! a certificate from an untrusted issuer. Every process started is stopped by its pid, every
//! wait is bounded.

#[path = "../../../http3/tests/common/caddy.rs"]
mod caddy;
use crate::{h3_runs, udp};

use bench::config::TlsOptions;
use bench::stats::{ErrorKind, TlsFailure};
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// The lines of Caddy's access log for the requests of one run: those whose URI ends with
/// its query, `?run=NAME` (Caddy serves the file and logs the URI whole).
fn logged(log: &Path, run: &str) -> Vec<String> {
    let tag = format!("?run={run}\"");
    let text = std::fs::read_to_string(log).unwrap_or_default();
    (text.lines())
        .filter(|l| l.contains(&tag))
        .map(str::to_owned)
        .collect()
}

/// [`logged`] once it holds `want` lines, within 20 s (fewer past it fail the test); more may
/// still come until Caddy has nothing under way and has exited ([`caddy::Caddy::stop`]).
fn logged_at_least(log: &Path, run: &str, want: u64) -> Vec<String> {
    let start = Instant::now();
    loop {
        let lines = logged(log, run);
        if lines.len() as u64 >= want {
            return lines;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "{} of {want} lines for run {run}: {lines:?}",
            lines.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn config(target: Target, tls: TlsOptions, stop: Stop, clients: usize) -> BenchConfig {
    BenchConfig {
        concurrency: clients,
        threads: 1,
        stop,
        http: HttpMode::Http3,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        tls,
        ..BenchConfig::new(target)
    }
}

fn trusting(ca: &TestCa) -> TlsOptions {
    TlsOptions {
        cacert: Some(ca.pem.clone()),
        ..TlsOptions::default()
    }
}

/// One page of `files`.
fn page(files: &[impl AsRef<str>]) -> Workload {
    let list: Vec<String> = files.iter().map(|f| format!("{:?}", f.as_ref())).collect();
    let text = format!(
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [{}]\n",
        list.join(", ")
    );
    Workload::parse(&text, "test").unwrap()
}

/// The run's `--json` document, checked against docs/bench-json.schema.json.
fn json_checked(r: &RunResult) -> serde_json::Value {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/bench-json.schema.json"
    );
    let schema = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is valid");
    let doc = bench::report::json(r);
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    doc
}

/// Runs and checks it ended within `bound`.
fn run(config: &BenchConfig, workload: &Workload, bound: Duration) -> RunResult {
    let started = Instant::now();
    let r = bench::run(config, workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < bound, "took {:?}", started.elapsed());
    r
}

#[test]
fn pages_from_caddy_over_http3_are_answered_whole_and_counted_as_caddy_logs_them() {
    let ca = TestCa::new("flint bench h3 test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let files: [(&str, usize); 3] = [("/a.html", 1_000), ("/b.css", 20_000), ("/c.js", 150_000)];
    for (name, len) in files {
        let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        std::fs::write(www.join(&name[1..]), bytes).unwrap();
    }
    let log = dir.path().join("access.log");
    let caddy = caddy::start(dir.path(), &www, (&cert, &key), &log);
    let addr: SocketAddr = format!("127.0.0.1:{}", caddy.port).parse().unwrap();
    let target = Target::https(addr, "localhost");
    // Each run's files under a query of its own: its lines in Caddy's log told apart.
    let workload = |run: &str| page(&files.map(|f| format!("{}?run={run}", f.0)));
    // Caddy takes a moment to listen: one page is tried until it is answered, within 20 s
    // (a datagram to a port not yet open is refused: that page's error).
    let start = Instant::now();
    let one = config(target.clone(), trusting(&ca), Stop::Pages(1), 1);
    loop {
        let r = run(&one, &workload("warm"), Duration::from_secs(15));
        if r.stats.errors.total() == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "caddy never answered over HTTP/3: {:?}",
            r.stats.errors
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    // 12 pages of three files, three Webchildren: each connection kept across its pages.
    let pages = 12;
    let r = run(
        &config(target.clone(), trusting(&ca), Stop::Pages(pages), 3),
        &workload("pages"),
        Duration::from_secs(30),
    );
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 3 * pages);
    assert_eq!(s.statuses.get(200), 3 * pages);
    let page_bytes: usize = files.iter().map(|f| f.1).sum();
    assert_eq!(s.bytes_body, pages * page_bytes as u64, "every body whole");
    assert_eq!(s.http3.connections, 3, "one connection a Webchild");
    assert_eq!(s.http3.streams, 3 * pages);
    assert_eq!(s.connect.count(), 3, "the handshake is the connect row");
    assert!(s.http3.wire_bytes_received > s.bytes_body);
    assert!(s.http3.packets_received > 0 && s.http3.packets_sent > 0);
    assert_eq!(s.http3.handshake_rtts, 3);
    let doc = json_checked(&r);
    let h3 = &doc["summary"]["http3"];
    assert_eq!(h3["streams"], 3 * pages);
    assert_eq!(h3["body_bytes"], s.bytes_body);
    assert!(h3["wire_per_body_byte"].as_f64().unwrap() > 1.0);
    assert_eq!(doc["config"]["http"], "http3");
    let pages_logged = s.requests + s.unfinished;
    let lines = logged_at_least(&log, "pages", pages_logged);
    assert!(lines.iter().all(|l| l.contains("\"proto\":\"HTTP/3.0\"")));

    // A run cut by its duration with requests in flight: every request Caddy logged is a
    // request or an unfinished one, and no more.
    let r = run(
        &config(
            target,
            trusting(&ca),
            Stop::Duration(Duration::from_secs(1)),
            4,
        ),
        &workload("cut"),
        Duration::from_secs(15),
    );
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert!(s.requests > 0);
    assert!(
        s.unfinished + s.unsent_at_end > 0,
        "four Webchildren in a closed loop: requests in flight at the end"
    );
    logged_at_least(&log, "cut", s.requests + s.unfinished);
    // Then Caddy with nothing under way (bench's connections closed, each request's handler
    // returned and logged), by its own gauge, and stopped: its log is whole, and a line more
    // than bench counted would be in it. Within 40 s: past the 30 s idle timeout that ends a
    // connection whose close was lost.
    let start = Instant::now();
    while caddy.under_way() > 0 {
        assert!(
            start.elapsed() < Duration::from_secs(40),
            "caddy still has {} requests under way",
            caddy.under_way()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let stopped = caddy.stop();
    assert!(
        !stopped.killed,
        "caddy did not exit on SIGTERM: {stopped:?}"
    );
    let pages_lines = logged(&log, "pages");
    assert_eq!(pages_lines.len() as u64, pages_logged, "{pages_lines:?}");
    assert_eq!(
        logged(&log, "cut").len() as u64,
        s.requests + s.unfinished,
        "Caddy's log against requests {} + unfinished {} (unsent {})",
        s.requests,
        s.unfinished,
        s.unsent_at_end
    );
}

/// crates/http3's UDP test server with a certificate from `ca`.
fn h3_server(ca: &TestCa) -> udp::UdpServer {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let config = http3::ServerConfig::new(&cert, &key, &http3::Limits::default()).unwrap();
    udp::UdpServer::start(config)
}

#[test]
fn a_stream_rejected_twice_by_the_server_fails_alone_as_its_kind() {
    // The server resets /reset with H3_REQUEST_REJECTED (not processed): it is sent again once
    // on the same connection, as HTTP/2 sends a REFUSED_STREAM's, then fails alone.
    let ca = TestCa::new("flint bench h3 test CA");
    let server = h3_server(&ca);
    let target = Target::https(server.addr, "localhost");
    let workload = page(&["/bytes/1000", "/reset", "/bytes/20000"]);
    let pages = 5;
    let r = run(
        &config(target, trusting(&ca), Stop::Pages(pages), 1),
        &workload,
        Duration::from_secs(20),
    );
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::H3StreamReset),
        pages,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), pages, "{:?}", s.errors);
    assert_eq!(s.requests, 2 * pages, "the page's other files are answered");
    assert_eq!(s.bytes_body, pages * 21_000);
    assert_eq!(
        s.http3.stream_resets.get("H3_REQUEST_REJECTED"),
        Some(&(2 * pages))
    );
    assert_eq!(s.http3.retried, pages, "{:?}", s.http3);
    assert_eq!(s.http3.streams, 4 * pages, "{:?}", s.http3);
    assert_eq!(s.http3.connections, 1, "the connection goes on");
    assert_eq!(h3_runs::settled(&server).0, 4 * pages);
}

#[test]
fn header_blocks_past_the_send_capacity_wait_their_turn_and_all_go() {
    // 40 files with a 1.5 KB field each: 60 KB of header blocks, more than QUIC's first
    // congestion window, so some wait (quiche's StreamBlocked) until what is queued goes out.
    let ca = TestCa::new("flint bench h3 test CA");
    let server = h3_server(&ca);
    let target = Target::https(server.addr, "localhost");
    let pad = "x".repeat(1500);
    let files: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "{{ path = \"/bytes/{}\", headers = [\"X-Pad: {pad}\"] }}",
                100 + i
            )
        })
        .collect();
    let text = format!(
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [{}]\n",
        files.join(", ")
    );
    let workload = Workload::parse(&text, "test").unwrap();
    let pages = 2;
    let config = config(target, trusting(&ca), Stop::Pages(pages), 1);
    // Bounded: a client that retried a blocked stream in a loop would never return.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    let flag = stop.clone();
    std::thread::spawn(move || {
        let _ = tx.send(bench::run(&config, &workload, &flag));
    });
    let r = match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(r) => r.unwrap(),
        Err(_) => {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            panic!("the run did not end within 60 s");
        }
    };
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 40 * pages);
    assert_eq!(s.bytes_body, pages * (0..40).map(|i| 100 + i).sum::<u64>());
    assert_eq!(h3_runs::settled(&server).0, 40 * pages);
}

#[test]
fn a_stream_never_answered_times_out_within_the_response_timeout() {
    let ca = TestCa::new("flint bench h3 test CA");
    let server = h3_server(&ca);
    let target = Target::https(server.addr, "localhost");
    let workload = page(&["/bytes/500", "/stall"]);
    let pages = 2;
    let config = BenchConfig {
        // Long enough for the page's other file on a loaded machine.
        response_timeout: Duration::from_millis(3000),
        ..config(target, trusting(&ca), Stop::Pages(pages), 1)
    };
    let started = Instant::now();
    let r = run(&config, &workload, Duration::from_secs(20));
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::ResponseTimeout),
        pages,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), pages, "{:?}", s.errors);
    assert_eq!(s.requests, pages, "the page's other file is answered");
    assert!(
        started.elapsed() >= Duration::from_millis(3000 * pages),
        "each stall waited the response timeout"
    );
    // The stalled stream was given up (cancelled), the connection kept for the next page.
    assert_eq!(s.http3.connections, 1);
    assert_eq!(h3_runs::settled(&server).0, 2 * pages);
}

#[test]
fn a_certificate_from_an_untrusted_issuer_fails_the_handshake_with_its_alert_named() {
    let ca = TestCa::new("flint bench h3 test CA");
    let other = TestCa::new("another CA");
    let server = h3_server(&ca);
    let target = Target::https(server.addr, "localhost");
    let workload = page(&["/bytes/100"]);
    let pages = 3;
    let r = run(
        &config(target.clone(), trusting(&other), Stop::Pages(pages), 1),
        &workload,
        Duration::from_secs(20),
    );
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::H3Handshake),
        pages,
        "{:?}",
        s.errors
    );
    assert_eq!(s.requests, 0);
    assert_eq!(
        s.http3.handshake_alerts.get("unknown_ca (48)"),
        Some(&pages)
    );
    // Its reason, as over TCP: what the reports and the run's last line say.
    assert_eq!(s.tls_failures.get(TlsFailure::UnknownIssuer), pages);
    assert_eq!(s.tls_failures.total(), pages);
    assert_eq!(s.http3.connections, 0);
    let doc = json_checked(&r);
    assert_eq!(doc["summary"]["tls"]["failures"]["unknown_issuer"], pages);
    assert_eq!(doc["errors_by_kind"]["h3_handshake"], pages);
    assert_eq!(
        doc["summary"]["http3"]["handshake_alerts"]["unknown_ca (48)"],
        pages
    );
    // The same server with -k: answered.
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let r = run(
        &config(target, insecure, Stop::Pages(pages), 1),
        &workload,
        Duration::from_secs(20),
    );
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    assert_eq!(r.stats.requests, pages);
}

#[test]
fn a_certificate_for_another_name_fails_the_handshake_with_its_reason_as_over_tcp() {
    // The leaf names localhost and 127.0.0.1: asked for another name, BoringSSL refuses it
    // (alert 42, bad_certificate), and the reason counted is TCP's, name_mismatch.
    let ca = TestCa::new("flint bench h3 test CA");
    let server = h3_server(&ca);
    let target = Target::https(server.addr, "other.example");
    let pages = 3;
    let r = run(
        &config(target, trusting(&ca), Stop::Pages(pages), 1),
        &page(&["/bytes/100"]),
        Duration::from_secs(20),
    );
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::H3Handshake),
        pages,
        "{:?}",
        s.errors
    );
    assert_eq!(s.errors.total(), pages, "{:?}", s.errors);
    assert_eq!(s.tls_failures.get(TlsFailure::NameMismatch), pages);
    assert_eq!(s.tls_failures.total(), pages);
    let text = bench::report::summary_body(&r);
    assert!(
        text.contains("TLS failed: 3 name_mismatch: the certificate is not for the URL's host"),
        "{text}"
    );
}
