//! HTTP/2 against a server that refuses every request by GOAWAY (last stream 0), before any
//! stream or on each one: a request is sent again once, then fails as `h2_goaway`, so a run of
//! N pages ends; and the connections after one that served nothing back off rather than spin.

use crate::common;
use crate::h2server;

use bench::stats::ErrorKind;
use bench::{RunResult, Stop};
use common::{ms, one_file};
use h2server::{Fault, H2Server};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

/// A run of one Webchild against `server`, `streams` at once: its result, or a panic if it has
/// not ended within a minute (it is interrupted then, so that the test fails, not hangs).
fn bounded_run(server: &H2Server, stop: Stop, streams: Option<u32>) -> RunResult {
    let mut cfg = common::config(server.addr, 1, stop);
    cfg.http = bench::HttpMode::Http2;
    cfg.streams = streams;
    let interrupt = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let flag = interrupt.clone();
    let runner = std::thread::spawn(move || {
        let _ = tx.send(bench::run(&cfg, &one_file(), &flag).expect("run"));
    });
    let r = rx.recv_timeout(Duration::from_secs(60));
    interrupt.store(true, Ordering::SeqCst);
    runner.join().expect("the run's thread");
    r.expect("the run ended within a minute")
}

/// Each page failed once as `h2_goaway`, nothing else, nothing answered.
fn each_page_one_goaway(r: &RunResult, pages: u64) {
    assert_eq!(r.stats.requests, 0);
    assert_eq!(
        r.stats.errors.get(ErrorKind::H2Goaway),
        pages,
        "{:?}",
        r.stats
    );
    assert_eq!(r.stats.errors.total(), pages, "{:?}", r.stats.errors);
    assert_eq!(r.stats.pages[0].errors, pages);
}

#[test]
fn a_goaway_on_every_stream_sends_each_request_again_once_then_fails_it() {
    let server = H2Server::start(Fault::GoawayEachStream);
    let r = bounded_run(&server, Stop::Pages(3), None);
    each_page_one_goaway(&r, 3);
    let h = &r.stats.http2;
    assert_eq!(h.retried, 3, "each request sent again once: {h:?}");
    assert_eq!(h.streams, 6, "{h:?}");
    assert_eq!(h.connections, 6, "two connections a request: {h:?}");
    assert!(server.quiet(Duration::from_secs(10)), "connections end");
    assert_eq!(server.streams.load(Ordering::SeqCst), 6);
}

#[test]
fn a_goaway_before_any_stream_counts_as_a_refusal_of_what_waited() {
    // The GOAWAY comes with the server's SETTINGS (read in one go, as a rule: no stream is
    // opened; read apart, the stream opened is refused by it): either way each page's request
    // is refused twice and fails, with lanes too.
    for streams in [None, Some(4)] {
        let server = H2Server::start(Fault::GoawayAtOnce);
        let r = bounded_run(&server, Stop::Pages(3), streams);
        each_page_one_goaway(&r, 3);
        let h = &r.stats.http2;
        assert!(
            (2..=6).contains(&h.connections),
            "{streams:?}: at most two connections a page: {h:?}"
        );
        assert!(h.streams <= 2 * 3, "{streams:?}: {h:?}");
    }
}

#[test]
fn connections_after_those_that_served_nothing_back_off() {
    // Three pages, each refused on two connections: six, each after the first waiting 10 ms
    // doubled each time (10 + 20 + 40 + 80 + 160 = 310 ms), however fast the machine (the
    // waits only grow under load; without them the run took a few milliseconds).
    let server = H2Server::start(Fault::GoawayAtOnce);
    let started = Instant::now();
    let r = bounded_run(&server, Stop::Pages(3), None);
    let took = started.elapsed();
    let h = &r.stats.http2;
    each_page_one_goaway(&r, 3);
    assert_eq!(h.connections, 6, "{h:?}");
    assert!(took >= ms(310), "{took:?}: {h:?}");
}
