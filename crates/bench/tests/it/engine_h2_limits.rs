//! HTTP/2 against a server's limits: SETTINGS_MAX_CONCURRENT_STREAMS 0 (no stream allowed, or
//! not yet), and a stream the server never answers while others go on. Each ends as a named
//! error or in full, never as a Webchild that quits with nothing said.

use crate::common;
use crate::h2server;

use bench::stats::ErrorKind;
use bench::Stop;
use common::{ms, one_file, workload};
use h2server::{run, Fault, H2Server};
use std::time::{Duration, Instant};

const FOUR: &[&str] = &["/a", "/b", "/c", "/d"];

#[test]
fn a_server_that_allows_no_stream_is_a_response_timeout_in_page_and_lanes_mode() {
    let server = H2Server::start(Fault::NoStreams);
    for (w, streams) in [(workload(&[("p", 1.0, FOUR)]), None), (one_file(), Some(4))] {
        let r = run(&server, &w, Stop::Duration(ms(800)), |c| {
            c.streams = streams;
            c.response_timeout = ms(150);
        });
        let s = &r.stats;
        let timeouts = s.errors.get(ErrorKind::ResponseTimeout);
        assert!(timeouts > 0, "{streams:?}: {:?}", s.errors);
        assert_eq!(s.errors.total(), timeouts, "{streams:?}: {:?}", s.errors);
        assert_eq!((s.requests, s.http2.streams), (0, 0), "{streams:?}");
    }
}

#[test]
fn a_limit_the_server_raises_after_its_first_settings_is_used() {
    let server = H2Server::start(Fault::NoStreamsThenSome);
    let pages = run(
        &server,
        &workload(&[("p", 1.0, FOUR)]),
        Stop::Pages(10),
        |_| {},
    );
    let lanes = run(&server, &one_file(), Stop::Pages(20), |c| {
        c.streams = Some(4)
    });
    for (r, n) in [(&pages, 40), (&lanes, 20)] {
        assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
        assert_eq!(r.stats.requests, n);
        assert_eq!(r.stats.http2.connections, 2);
    }
}

#[test]
fn a_stalled_stream_times_out_and_is_cancelled_while_the_others_go_on() {
    // Every 5th stream is never answered; with 4 lanes the others keep the connection busy, so
    // only a timer per stream (the oldest's) sees the stalled one.
    let server = H2Server::start(Fault::StallEvery(5));
    let r = run(&server, &one_file(), Stop::Duration(ms(1500)), |c| {
        c.streams = Some(4);
        c.response_timeout = ms(200);
    });
    let s = &r.stats;
    let timeouts = s.errors.get(ErrorKind::ResponseTimeout);
    assert!(timeouts > 0, "{:?}", s.errors);
    assert_eq!(s.errors.total(), timeouts, "{:?}", s.errors);
    assert!(
        s.requests > 4 * timeouts,
        "the lanes went on: {}",
        s.requests
    );
    // Each was cancelled on the connection, which stayed up.
    let cancel = &server.resets[8];
    let deadline = Instant::now() + Duration::from_secs(10);
    while cancel.load(std::sync::atomic::Ordering::Relaxed) < timeouts && Instant::now() < deadline
    {
        std::thread::sleep(ms(1));
    }
    assert_eq!(
        cancel.load(std::sync::atomic::Ordering::Relaxed),
        timeouts,
        "RST_STREAM CANCEL"
    );
    assert_eq!(s.http2.connections, 2);
}
