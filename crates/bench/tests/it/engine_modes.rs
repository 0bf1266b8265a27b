//! The engine against well-behaved servers: HTTP modes, framing, page counts, reproducibility.

use crate::common;

use bench::stats::ErrorKind;
use bench::{HttpMode, Stop};
use common::{config, one_file, workload, Behaviour, TestServer};
use std::sync::atomic::AtomicBool;

fn run(cfg: &bench::BenchConfig, w: &bench::Workload) -> bench::RunResult {
    bench::run(cfg, w, &AtomicBool::new(false)).expect("run")
}

#[test]
fn keep_alive_reuses_one_connection_per_webchild() {
    let srv = TestServer::start(Behaviour::Good(100));
    let w = workload(&[("p", 1.0, &["/a", "/b"])]);
    let r = run(&config(srv.addr, 4, Stop::Pages(40)), &w);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.pages_done, 40);
    assert_eq!(r.stats.requests, 80);
    assert_eq!(r.stats.connects, 4, "one connection per Webchild");
    assert_eq!(srv.seen.connections(), 4);
    assert_eq!(
        srv.seen.max_batch(),
        1,
        "keep-alive sends one request at a time"
    );
    assert_eq!(r.stats.bytes_body, 80 * 100);
    assert_eq!(r.stats.pages[0].hits, 40);
    assert_eq!(r.stats.urls[1].requests, 40);
    assert_eq!(r.stats.urls[1].last_body_size, 100);
    assert_eq!(r.stats.response.count(), 80);
    assert_eq!(r.stats.ttfb.count(), 80);
    assert_eq!(r.stats.page.count(), 40);
    assert_eq!(r.stats.connect.count(), 4);
    assert!(r.stats.bytes_total >= r.stats.bytes_header + r.stats.bytes_body);
    assert!(!r.interrupted);
}

#[test]
fn http10_opens_one_connection_per_file() {
    let srv = TestServer::start(Behaviour::Good(10));
    let w = workload(&[("p", 1.0, &["/a", "/b"])]);
    let mut cfg = config(srv.addr, 2, Stop::Pages(10));
    cfg.http = HttpMode::Http10;
    let r = run(&cfg, &w);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 20);
    assert_eq!(r.stats.connects, 20);
    assert_eq!(r.stats.pages[0].connects, 20);
    assert_eq!(r.stats.urls[0].connects, 10);
    assert_eq!(srv.seen.connections(), 20);
    assert_eq!(srv.seen.requests(), 20);
}

#[test]
fn pipelined_page_is_written_in_one_write() {
    let srv = TestServer::start(Behaviour::Good(50));
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    let mut cfg = config(srv.addr, 2, Stop::Pages(12));
    cfg.http = HttpMode::Pipeline;
    let r = run(&cfg, &w);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.pages_done, 12);
    assert_eq!(r.stats.requests, 36);
    assert_eq!(r.stats.connects, 2);
    assert_eq!(
        srv.seen.max_batch(),
        3,
        "the server saw the page's three requests before answering any"
    );
    assert_eq!(srv.seen.requests(), 36);
}

#[test]
fn pipelined_page_resumes_on_a_new_connection_when_the_server_closes() {
    // Each response closes the connection: the rest of the page is resent, nothing is lost.
    let srv = TestServer::start(Behaviour::CloseDelimited(20));
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    let mut cfg = config(srv.addr, 1, Stop::Pages(3));
    cfg.http = HttpMode::Pipeline;
    let r = run(&cfg, &w);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 9);
    assert_eq!(r.stats.connects, 9);
    assert_eq!(r.stats.bytes_body, 9 * 20);
    // Behind each close, the rest of its page, never processed: 2 + 1 a page.
    assert_eq!(r.stats.pipeline_resent, 9);
}

#[test]
fn n_pages_gives_exactly_n_pages() {
    let srv = TestServer::start(Behaviour::Good(10));
    let w = workload(&[("one", 1.0, &["/a"]), ("two", 2.0, &["/b", "/c"])]);
    let mut cfg = config(srv.addr, 5, Stop::Pages(37));
    cfg.threads = 2;
    let r = run(&cfg, &w);
    let hits: u64 = r.stats.pages.iter().map(|p| p.hits).sum();
    assert_eq!(hits, 37);
    assert_eq!(r.stats.pages_done, 37);
    assert_eq!(
        r.stats.requests,
        r.stats.pages[0].hits + 2 * r.stats.pages[1].hits
    );
    assert_eq!(srv.seen.requests(), r.stats.requests);
}

fn hits(seed: u64) -> Vec<u64> {
    let srv = TestServer::start(Behaviour::Good(1));
    let w = workload(&[
        ("a", 10.0, &["/a"]),
        ("b", 20.0, &["/b"]),
        ("c", 30.0, &["/c"]),
        ("d", 40.0, &["/d"]),
    ]);
    let mut cfg = config(srv.addr, 4, Stop::Pages(200));
    cfg.seed = seed;
    run(&cfg, &w).stats.pages.iter().map(|p| p.hits).collect()
}

#[test]
fn same_seed_fetches_the_same_pages() {
    let first = hits(42);
    assert_eq!(first.iter().sum::<u64>(), 200);
    assert_eq!(hits(42), first);
    assert_ne!(hits(43), first, "another seed picks other pages");
}

#[test]
fn chunked_bodies_are_followed_to_their_end() {
    let srv = TestServer::start(Behaviour::Chunked(250));
    let r = run(&config(srv.addr, 2, Stop::Pages(10)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 10);
    assert_eq!(
        r.stats.bytes_body,
        10 * 250,
        "payload only, not the chunk framing"
    );
    assert_eq!(r.stats.connects, 2, "chunked keeps the connection");
}

#[test]
fn close_delimited_bodies_complete_at_close() {
    let srv = TestServer::start(Behaviour::CloseDelimited(300));
    let r = run(&config(srv.addr, 2, Stop::Pages(10)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 10);
    assert_eq!(r.stats.bytes_body, 10 * 300);
    assert_eq!(
        r.stats.connects, 10,
        "a close-delimited body ends its connection"
    );
}

#[test]
fn interim_1xx_responses_are_skipped() {
    let srv = TestServer::start(Behaviour::Interim);
    let r = run(&config(srv.addr, 1, Stop::Pages(5)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.errors.get(ErrorKind::Status1xx), 0);
    assert_eq!(r.stats.requests, 5);
    assert_eq!(r.stats.bytes_body, 25);
}

#[test]
fn idle_close_by_the_server_is_retried_not_counted() {
    // The server closes after each response without a `Connection: close`: the next request on
    // that connection meets the close, and is resent once on a new connection.
    let srv = TestServer::start(Behaviour::SilentClose(10));
    let r = run(&config(srv.addr, 1, Stop::Pages(5)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 5);
    assert_eq!(r.stats.pages_done, 5);
}

#[test]
fn log_has_a_header_and_one_line_per_request() {
    let srv = TestServer::start(Behaviour::Good(7));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.csv");
    let w = workload(&[("p", 1.0, &["/a", "/b"])]);
    let mut cfg = config(srv.addr, 2, Stop::Pages(6));
    cfg.log = Some(path.clone());
    let r = run(&cfg, &w);
    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], bench::log::HEADER.trim_end());
    assert_eq!(lines.len() as u64, 1 + r.stats.requests);
    for l in &lines[1..] {
        let f: Vec<&str> = l.split(',').collect();
        assert_eq!(f.len(), 13, "{l}");
        assert_eq!(f[2], "p");
        assert_eq!(f[5], "", "no intended start in the closed loop: {l}");
        assert!(f[3] == "/a" || f[3] == "/b");
        assert_eq!(f[9], "200");
        assert_eq!(f[11], "7");
        assert_eq!(f[12], "");
    }
}

#[test]
fn log_file_that_cannot_be_created_is_an_error_before_anything_starts() {
    let srv = TestServer::start(Behaviour::Good(7));
    let mut cfg = config(srv.addr, 1, Stop::Pages(1));
    cfg.log = Some("/nonexistent-dir/x/log.csv".into());
    let err = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).unwrap_err();
    assert!(matches!(err, bench::BenchError::LogCreate { .. }), "{err}");
    assert_eq!(srv.seen.requests(), 0);
}

#[test]
fn bad_options_are_refused() {
    let srv = TestServer::start(Behaviour::Good(7));
    let stop = AtomicBool::new(false);
    let mut cfg = config(srv.addr, 1, Stop::Pages(1));
    cfg.concurrency = 0;
    assert!(bench::run(&cfg, &one_file(), &stop).is_err());
    let mut cfg = config(srv.addr, 1, Stop::Pages(0));
    assert!(bench::run(&cfg, &one_file(), &stop).is_err());
    cfg.stop = Stop::Pages(1);
    cfg.rate = Some(0.0);
    assert!(bench::run(&cfg, &one_file(), &stop).is_err());
    cfg.rate = None;
    let mut w = one_file();
    w.pages[0].files.clear();
    assert!(bench::run(&cfg, &w, &stop).is_err());
    assert_eq!(srv.seen.requests(), 0);
}

#[test]
fn head_split_across_reads_is_carried_over() {
    let srv = TestServer::start(Behaviour::SplitHead(2000));
    let r = run(&config(srv.addr, 2, Stop::Pages(4)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 4);
    assert_eq!(r.stats.bytes_body, 4 * 2000);
    // The head was counted once, whole, although it arrived in two reads.
    assert_eq!(r.stats.bytes_header % 4, 0);
    assert!(r.stats.bytes_header / 4 > 100);
    assert_eq!(r.stats.connects, 2);
}

#[test]
fn large_bodies_span_many_reads() {
    let srv = TestServer::start(Behaviour::Good(1_000_000));
    let r = run(&config(srv.addr, 2, Stop::Pages(6)), &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 6);
    assert_eq!(r.stats.bytes_body, 6_000_000);
    assert_eq!(r.stats.urls[0].last_body_size, 1_000_000);
}

#[test]
fn http10_client_lets_the_server_close_first() {
    // The server pauses 500 ms after each response before closing: a client that closes as soon
    // as it has the body is caught closing first (and would keep the TIME_WAIT).
    let srv = TestServer::start(Behaviour::CloseAfterPause(1000));
    let mut cfg = config(srv.addr, 2, Stop::Pages(6));
    cfg.http = HttpMode::Http10;
    // The wait for the server's close is bounded by this; far beyond its 500 ms pause.
    cfg.response_timeout = std::time::Duration::from_secs(5);
    let r = run(&cfg, &one_file());
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 6);
    assert_eq!(srv.seen.connections(), 6);
    assert_eq!(srv.seen.client_closed_first(), 0);
    assert_eq!(srv.seen.server_closed_first_reaching(6), 6);
    // The wait for the close (500 ms) is not response time: that ended at the last body byte.
    // The bound is the pause, not how fast a loaded machine answers.
    let response = r.stats.response.summary();
    let page = r.stats.page.summary();
    assert!(response.max < 450.0, "response max {} ms", response.max);
    assert!(page.max < 450.0, "page max {} ms", page.max);
}

#[test]
fn http10_next_file_starts_after_the_servers_close() {
    let srv = TestServer::start(Behaviour::CloseAfterPause(10));
    let w = workload(&[("p", 1.0, &["/a", "/b", "/c"])]);
    let mut cfg = config(srv.addr, 1, Stop::Pages(2));
    cfg.http = HttpMode::Http10;
    // The wait for the server's close is bounded by this; far beyond its 500 ms pause.
    cfg.response_timeout = std::time::Duration::from_secs(5);
    let r = run(&cfg, &w);
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 6);
    assert_eq!(r.stats.connects, 6);
    assert_eq!(srv.seen.client_closed_first(), 0);
    assert_eq!(srv.seen.server_closed_first_reaching(6), 6);
}

#[test]
fn http10_waits_for_the_servers_close_at_most_the_response_timeout() {
    // A server that never closes: the client gives up waiting after the response timeout,
    // closes itself, and goes on; the responses were complete, so nothing is an error.
    let srv = TestServer::start(Behaviour::NeverClose(10));
    let mut cfg = config(srv.addr, 1, Stop::Pages(3));
    cfg.http = HttpMode::Http10;
    // Long enough that a loaded machine's slow response is never taken for the wait.
    cfg.response_timeout = std::time::Duration::from_millis(1000);
    let t0 = std::time::Instant::now();
    let r = run(&cfg, &one_file());
    let took = t0.elapsed();
    assert_eq!(r.stats.errors.total(), 0);
    assert_eq!(r.stats.requests, 3);
    assert_eq!(srv.seen.connections(), 3);
    assert!(
        took >= std::time::Duration::from_millis(2 * 1000),
        "{took:?}"
    );
    // Not stuck on a connection that never closes; the margin is for a loaded machine.
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
    // The response time ends with the response, not with the wait for the close.
    assert!(r.stats.response.summary().max < 900.0);
}
