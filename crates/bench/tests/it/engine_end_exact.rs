//! The end of a run, held to a server that records every request it receives: whatever state a
//! Webchild is in when the window closes (connecting, in the TLS handshake, writing, reading a
//! head, reading a body, between pages, thinking, waiting for its open-loop slot), no request
//! is begun at or after the end, and every request the server received is either counted or
//! unfinished: the server's count is `requests + unfinished`, exactly, in every run.
//!
//! Each mode runs many short runs against a server that takes about a millisecond per answer
//! (half before its head, half before its body), so that the close lands in every state.

use crate::common;
use crate::h2server;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant, UNIX_EPOCH};
use test_support::certs::TestCa;
use test_support::recording::Recording;

const RUNS: usize = 30;
const WINDOW: Duration = Duration::from_millis(200);
/// The server's time per answer.
const DELAY: Duration = Duration::from_millis(1);

fn workload(files: usize) -> Workload {
    let paths: Vec<String> = (0..files).map(|i| format!("/f{i}")).collect();
    let page = bench::Page {
        name: "p".into(),
        weight: 1.0,
        files: (0..files).collect(),
    };
    Workload {
        pages: vec![page],
        urls: paths,
        requests: Vec::new(),
        app: Default::default(),
    }
}

fn config(target: Target, concurrency: usize, http: HttpMode) -> BenchConfig {
    BenchConfig {
        concurrency,
        threads: 2,
        stop: Stop::Duration(WINDOW),
        http,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(target)
    }
}

/// `RUNS` runs of `cfg` against a fresh recording server each (from `server`); each must be
/// exact. Returns how many runs ended with requests unfinished, to show the close was caught
/// in flight.
fn exact_every_time(
    server: impl Fn() -> Recording,
    cfg: impl Fn(&Recording) -> BenchConfig,
    w: &Workload,
) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let mut caught = 0;
    for run in 0..RUNS {
        let srv = server();
        let log = dir.path().join(format!("{run}.csv"));
        let cfg = BenchConfig {
            log: Some(log.clone()),
            ..cfg(&srv)
        };
        let r = bench::run(&cfg, w, &AtomicBool::new(false)).unwrap();
        // The client has closed every socket: the server's count is final once it has read
        // what each brought.
        let received = srv
            .settled(Duration::from_secs(10))
            .expect("connections end");
        check(run, &r, received, &std::fs::read_to_string(&log).unwrap());
        caught += usize::from(r.stats.unfinished > 0);
    }
    println!(
        "{RUNS} runs in {:?}; {caught} ended with requests in flight",
        started.elapsed()
    );
    caught
}

fn check(run: usize, r: &RunResult, received: u64, log: &str) {
    let s = &r.stats;
    let what = format!(
        "run {run}: server {received}, requests {}, unfinished {}, unsent {}, errors {:?}",
        s.requests, s.unfinished, s.unsent_at_end, s.errors
    );
    assert_eq!(s.errors.total(), 0, "{what}");
    assert_eq!(received, s.requests + s.unfinished, "{what}");
    // The log has a row for each, and none begun at or after the end.
    let start_us = r.started_at.duration_since(UNIX_EPOCH).unwrap().as_micros() as u64;
    let end_us = start_us + r.duration.as_micros() as u64;
    let rows: Vec<Vec<&str>> = log
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    let kind = |k: &str| rows.iter().filter(|r| r[12] == k).count() as u64;
    assert_eq!(kind("unfinished"), s.unfinished, "{what}");
    assert_eq!(kind("unsent"), s.unsent_at_end, "{what}");
    let all = s.requests + s.unfinished + s.unsent_at_end;
    assert_eq!(rows.len() as u64, all, "{what}");
    for row in &rows {
        let begun: u64 = row[4].parse().unwrap();
        assert!(
            begun < end_us,
            "{what}: a request begun {} µs after the end",
            begun - end_us
        );
    }
}

#[test]
fn closed_loop_keep_alive_is_exact_at_every_end() {
    let w = workload(1);
    let caught = exact_every_time(
        || Recording::start(DELAY),
        |s| config(Target::http(s.addr), 6, HttpMode::KeepAlive),
        &w,
    );
    assert!(caught > 0, "no run ended with a request in flight");
}

#[test]
fn closed_loop_with_think_time_is_exact_at_every_end() {
    let w = workload(2);
    exact_every_time(
        || Recording::start(DELAY),
        |s| BenchConfig {
            think: Some(Duration::from_micros(700)),
            ..config(Target::http(s.addr), 6, HttpMode::KeepAlive)
        },
        &w,
    );
}

#[test]
fn open_loop_is_exact_at_every_end() {
    let w = workload(1);
    exact_every_time(
        || Recording::start(DELAY),
        |s| BenchConfig {
            rate: Some(3000.0),
            ..config(Target::http(s.addr), 8, HttpMode::KeepAlive)
        },
        &w,
    );
}

#[test]
fn pipelined_pages_are_exact_at_every_end() {
    // Every request of a page is sent at once: at the end, all those not answered are
    // unfinished, not only the one being read.
    let w = workload(4);
    let caught = exact_every_time(
        || Recording::start(DELAY),
        |s| config(Target::http(s.addr), 4, HttpMode::Pipeline),
        &w,
    );
    assert!(caught > 0, "no run ended with a request in flight");
}

#[test]
fn pipelined_with_a_depth_is_exact_at_every_end() {
    // `--pipeline 2`: two requests in flight, one more written as each response ends.
    let w = workload(5);
    exact_every_time(
        || Recording::start(DELAY),
        |s| BenchConfig {
            streams: Some(2),
            ..config(Target::http(s.addr), 4, HttpMode::Pipeline)
        },
        &w,
    );
}

#[test]
fn pipelined_one_file_pages_are_exact_at_every_end() {
    // `--pipeline 4` on one-file pages: four pages in flight a connection, all written.
    let w = workload(1);
    let caught = exact_every_time(
        || Recording::start(DELAY),
        |s| BenchConfig {
            streams: Some(4),
            ..config(Target::http(s.addr), 2, HttpMode::Pipeline)
        },
        &w,
    );
    assert!(caught > 0, "no run ended with a request in flight");
}

#[test]
fn connections_sharing_a_page_are_exact_at_every_end() {
    // Six connections a Webchild sharing a page of seven files, kept alive, and four one per
    // file over HTTP/1.0.
    let w = workload(7);
    for (http, n) in [(HttpMode::KeepAlive, 6), (HttpMode::Http10, 4)] {
        exact_every_time(
            || Recording::start(DELAY),
            |s| BenchConfig {
                connections_per_child: n,
                ..config(Target::http(s.addr), 2, http)
            },
            &w,
        );
    }
}

#[test]
fn http10_is_exact_at_every_end() {
    // A connection per file: the end often finds a Webchild connecting, which has sent nothing.
    let w = workload(2);
    exact_every_time(
        || Recording::start(DELAY),
        |s| config(Target::http(s.addr), 6, HttpMode::Http10),
        &w,
    );
}

#[test]
fn https_is_exact_at_every_end() {
    let ca = TestCa::new("flint test CA");
    let leaf = ca.leaf();
    let tls = TlsOptions {
        cacert: Some(ca.pem.clone()),
        ..TlsOptions::default()
    };
    let w = workload(1);
    for http in [HttpMode::KeepAlive, HttpMode::Http10] {
        exact_every_time(
            || Recording::start_with(DELAY, Some(leaf.server_config())),
            |s| BenchConfig {
                tls: tls.clone(),
                ..config(Target::https(s.addr, "localhost"), 4, http)
            },
            &w,
        );
    }
}

#[test]
fn a_pipelined_page_cut_short_by_a_status_still_counts_the_rest_of_its_batch() {
    // Every answer is a 404: the page is not a hit, but the server has all its requests, and
    // each of their responses is read and counted.
    let srv = common::TestServer::start(common::Behaviour::Status(404));
    let w = workload(3);
    let cfg = BenchConfig {
        stop: Stop::Pages(5),
        ..config(Target::http(srv.addr), 1, HttpMode::Pipeline)
    };
    let r = bench::run(&cfg, &w, &AtomicBool::new(false)).unwrap();
    let s = &r.stats;
    assert_eq!(srv.seen.requests(), 15);
    assert_eq!(s.requests, 15, "every request sent is counted");
    assert_eq!(s.errors.total(), 15, "each a status error");
    assert_eq!(s.pages[0].errors, 5, "each page abandoned once");
    assert_eq!(
        (s.pages_done, s.connects),
        (0, 1),
        "the connection stays in step"
    );
}

/// `RUNS` HTTP/2 runs of `cfg` against a fresh stream-counting server each (from `server`):
/// once the server has seen every connection end, its count of streams (each stream's HEADERS
/// received) is `requests + unfinished`, exactly. Returns how many runs ended with streams in
/// flight.
fn h2_exact_every_time(
    server: impl Fn() -> h2server::H2Server,
    cfg: impl Fn(&h2server::H2Server) -> BenchConfig,
    w: &Workload,
) -> usize {
    let mut caught = 0;
    for run in 0..RUNS {
        let srv = server();
        let r = bench::run(&cfg(&srv), w, &AtomicBool::new(false)).unwrap();
        let s = &r.stats;
        let what = format!(
            "run {run}: requests {}, unfinished {}, unsent {}, errors {:?}",
            s.requests, s.unfinished, s.unsent_at_end, s.errors
        );
        assert_eq!(s.errors.total(), 0, "{what}");
        // The client has closed every socket: the server's count is final once each of its
        // connections has read what it brought and ended.
        assert!(
            srv.quiet(Duration::from_secs(10)),
            "{what}: connections end"
        );
        let seen = srv.streams.load(std::sync::atomic::Ordering::SeqCst);
        assert_eq!(seen, s.requests + s.unfinished, "{what}");
        // Every stream opened is a request, unfinished, or not sent (none is retried or
        // failed against this server). A request not sent need not have opened a stream: one
        // whose connection was still connecting, or waiting for the server's SETTINGS, at the
        // end is counted unsent with no stream (a slow start on a busy machine ends so).
        assert!(
            s.http2.streams >= s.requests + s.unfinished
                && s.http2.streams <= s.requests + s.unfinished + s.unsent_at_end,
            "{what}: streams {}",
            s.http2.streams
        );
        caught += usize::from(s.unfinished > 0);
    }
    println!("{RUNS} HTTP/2 runs; {caught} ended with streams in flight");
    caught
}

#[test]
fn http2_is_exact_at_every_end() {
    // A page's files as concurrent streams. The server answers at once, so the end finds
    // streams in flight on the wire or in its queue.
    let caught = h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| config(Target::http(s.addr), 4, HttpMode::Http2),
        &workload(4),
    );
    assert!(caught > 0, "no run ended with a stream in flight");
}

#[test]
fn http2_lanes_and_open_loop_are_exact_at_every_end() {
    // One-file pages, 8 streams each a page of its own (h2load's -m).
    let lanes = h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| BenchConfig {
            streams: Some(8),
            ..config(Target::http(s.addr), 4, HttpMode::Http2)
        },
        &workload(1),
    );
    assert!(lanes > 0, "lanes: no run ended with a stream in flight");
    // 32 lanes, refilled 4 at a time: a lane held back at the end was never sent.
    let batched = h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| BenchConfig {
            streams: Some(32),
            ..config(Target::http(s.addr), 4, HttpMode::Http2)
        },
        &workload(1),
    );
    assert!(
        batched > 0,
        "32 lanes: no run ended with a stream in flight"
    );
    // Pages at open-loop slots: between pages the connection waits.
    h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| BenchConfig {
            rate: Some(3000.0),
            ..config(Target::http(s.addr), 4, HttpMode::Http2)
        },
        &workload(3),
    );
    // Lanes that think between their pages.
    h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| BenchConfig {
            streams: Some(8),
            think: Some(Duration::from_millis(2)),
            ..config(Target::http(s.addr), 4, HttpMode::Http2)
        },
        &workload(1),
    );
    // Both: one-file pages at open-loop slots, each on a free stream of 8.
    h2_exact_every_time(
        || h2server::H2Server::start(h2server::Fault::None),
        |s| BenchConfig {
            streams: Some(8),
            rate: Some(20_000.0),
            ..config(Target::http(s.addr), 4, HttpMode::Http2)
        },
        &workload(1),
    );
}

#[test]
fn http2_over_tls_is_exact_at_every_end() {
    // Exact as long as the socket takes what rustls encrypts (a loopback socket does; a full
    // one leaves HEADERS in rustls's records, counted unfinished: see docs/latency.md).
    let ca = TestCa::new("flint test CA");
    let leaf = ca.leaf();
    let tls = TlsOptions {
        cacert: Some(ca.pem.clone()),
        ..TlsOptions::default()
    };
    let server_config = leaf.server_config();
    let caught = h2_exact_every_time(
        || h2server::H2Server::start_tls(h2server::Fault::None, &server_config),
        |s| BenchConfig {
            tls: tls.clone(),
            ..config(Target::https(s.addr, "localhost"), 4, HttpMode::Http2)
        },
        &workload(4),
    );
    assert!(caught > 0, "no run ended with a stream in flight");
}
