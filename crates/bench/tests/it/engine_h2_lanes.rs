//! One-file pages as lanes (`--streams N`, each stream a page of its own) in the open loop: a
//! page starts at its slot on a free stream, and a page whose slot finds every stream busy
//! starts when one frees, that wait counted as its send lag.

use crate::common;
use crate::h2server;

use bench::stats::ErrorKind;
use bench::Stop;
use common::{ms, one_file};
use h2server::{run, Fault, H2Server};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

#[test]
fn lanes_at_open_loop_slots_send_every_page_on_the_open_connection() {
    let server = H2Server::start(Fault::None);
    let t0 = Instant::now();
    let r = run(&server, &one_file(), Stop::Pages(40), |c| {
        c.streams = Some(4);
        c.rate = Some(400.0);
    });
    // Paced, not sent at once: each Webchild's 20 pages are 5 ms apart.
    assert!(t0.elapsed() >= ms(95), "took {:?}", t0.elapsed());
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 40);
    assert_eq!(s.pages.iter().map(|p| p.hits).sum::<u64>(), 40);
    assert_eq!(s.pages_scheduled, 40, "every page's send lag is recorded");
    assert_eq!(s.pages_not_sent, 0);
    // Between pages the connection waits for the next slot: one per Webchild for the run.
    assert_eq!(s.http2.connections, 2, "{:?}", s.http2);
    assert!(server.quiet(Duration::from_secs(10)), "connections end");
    assert_eq!(server.streams.load(Ordering::SeqCst), 40);
}

#[test]
fn a_page_whose_slot_finds_every_stream_busy_waits_for_one_as_send_lag() {
    // One Webchild, two streams; every second stream of a connection is never answered and
    // times out after TIMEOUT. Pages are due every 5 ms: the 4th page's stream is the second
    // stalled one, so from the 5th slot (20 ms) on both streams are taken until the first
    // stalled stream times out (at 5 ms + TIMEOUT at the earliest): the 5th page waits at
    // least TIMEOUT - 15 ms past its slot, however slow the machine (it can only be later).
    const TIMEOUT: Duration = Duration::from_millis(150);
    let server = H2Server::start(Fault::StallEvery(2));
    let r = run(&server, &one_file(), Stop::Pages(12), |c| {
        c.concurrency = 1;
        c.threads = 1;
        c.streams = Some(2);
        c.rate = Some(200.0);
        c.response_timeout = TIMEOUT;
    });
    let s = &r.stats;
    let lag = s.send_lag.as_ref().expect("open loop: send lag");
    assert_eq!(lag.count(), 12, "every page's send lag is recorded");
    let least = (TIMEOUT - ms(15)).as_micros() as u64;
    assert!(
        lag.histogram().max() >= least,
        "max send lag {} µs, expected at least {least}",
        lag.histogram().max()
    );
    // Every page was sent: the stalled half timed out, the rest answered.
    let timeouts = s.errors.get(ErrorKind::ResponseTimeout);
    assert!(timeouts >= 1, "{:?}", s.errors);
    assert_eq!(s.errors.total(), timeouts, "{:?}", s.errors);
    assert_eq!(s.requests + timeouts, 12);
    assert_eq!(s.pages_not_sent, 0);
}

#[test]
fn after_a_goaway_the_lanes_go_on_on_a_new_connection() {
    // The server's GOAWAY after 5 streams a connection: the streams it processed finish, those
    // above it are sent again, and the next pages go on a new connection (closed and open
    // loop), not the end of the Webchild.
    for rate in [None, Some(2000.0)] {
        let server = H2Server::start(Fault::GoawayAfter(5));
        let r = run(&server, &one_file(), Stop::Pages(40), |c| {
            c.streams = Some(4);
            c.rate = rate;
        });
        let s = &r.stats;
        assert_eq!(s.errors.total(), 0, "rate {rate:?}: {:?}", s.errors);
        assert_eq!(s.requests, 40, "rate {rate:?}");
        assert!(s.http2.connections >= 8, "rate {rate:?}: {:?}", s.http2);
        assert!(server.quiet(Duration::from_secs(10)), "connections end");
        assert_eq!(server.answered.load(Ordering::SeqCst), 40, "rate {rate:?}");
    }
}

#[test]
fn each_lane_thinks_after_its_page_before_the_next() {
    // One Webchild, two lanes, 20 ms of think time: 10 pages are 5 rounds of two, each round
    // after the think time of the one before, on one connection.
    let server = H2Server::start(Fault::None);
    let t0 = Instant::now();
    let r = run(&server, &one_file(), Stop::Pages(10), |c| {
        c.concurrency = 1;
        c.threads = 1;
        c.streams = Some(2);
        c.think = Some(ms(20));
    });
    let elapsed = t0.elapsed();
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 10);
    assert_eq!(s.http2.connections, 1, "{:?}", s.http2);
    assert!(elapsed >= ms(80), "took {elapsed:?}: lanes did not think");
}

#[test]
fn a_server_closing_while_every_lane_thinks_fails_nothing_and_counts_each_page_once() {
    // The server closes (no GOAWAY) a moment after both lanes' answers, while both think: no
    // request was in flight, so nothing failed, and no page already counted is counted again.
    let server = H2Server::start(Fault::CloseAfter(2));
    let r = run(&server, &one_file(), Stop::Pages(10), |c| {
        c.concurrency = 1;
        c.threads = 1;
        c.streams = Some(2);
        // Long beside the server's 5 ms before its close, so that on a busy machine the close
        // still comes while both lanes think, not after one has sent its next page.
        c.think = Some(ms(500));
    });
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 10);
    let pages: u64 = s.pages.iter().map(|p| p.hits + p.errors).sum();
    assert_eq!(pages, 10, "{:?}", s.pages);
}

#[test]
fn closed_loop_lanes_refilled_in_batches_send_every_page_and_count_it_once() {
    // 32 lanes a connection refill 4 at a time (an eighth): every page is still sent, answered
    // and counted once, with a well-behaved server, one that resets every 7th stream, and one
    // that sends GOAWAY after 20 streams (the lanes go on on a new connection).
    for fault in [Fault::None, Fault::ResetEvery(7), Fault::GoawayAfter(20)] {
        let server = H2Server::start(fault);
        let r = run(&server, &one_file(), Stop::Pages(300), |c| {
            c.streams = Some(32);
        });
        let s = &r.stats;
        let resets = s.errors.get(ErrorKind::H2RstStream);
        assert_eq!(s.errors.total(), resets, "{fault:?}: {:?}", s.errors);
        assert_eq!(s.requests + resets, 300, "{fault:?}");
        assert_eq!(s.pages.iter().map(|p| p.hits).sum::<u64>(), s.requests);
        assert!(
            server.quiet(Duration::from_secs(10)),
            "{fault:?}: connections end"
        );
        assert_eq!(
            server.answered.load(Ordering::SeqCst),
            s.requests,
            "{fault:?}"
        );
        if fault == Fault::None {
            assert_eq!(s.http2.connections, 2, "{:?}", s.http2);
            assert_eq!(server.streams.load(Ordering::SeqCst), 300);
        }
    }
}
