//! `--http 3` against a server that resets streams with H3_REQUEST_REJECTED (RFC 9114 4.1.1:
//! the request was not processed, the client may send it again), as flint serve does with a
//! request that comes after its GOAWAY (`h3_goaway_server::Reject`). A rejected request is sent
//! again, counted in `summary.http3.retried`, not failed; rejected a second time it fails as
//! `h3_stream_reset`, as HTTP/2's REFUSED_STREAM does (`h2_rst_stream`), so a server that
//! rejects everything ends a `-n` run on its one connection rather than keep it going round.
//! A request rejected as its connection closes, or moved to a new connection by a GOAWAY, is
//! sent again there, where its first rejection is again sent once more. The server's count of
//! requests it processed is `requests + unfinished`, exactly.

use crate::common::timed::until_busy;
use crate::common::{ms, one_file, workload};
use crate::h3_goaway_server::{Act, Counts, GoawayServer, Head, Plan, Reject, NEVER};

use bench::stats::ErrorKind;
use bench::{BenchConfig, RunResult, Stop, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// A server that never sends GOAWAY and rejects by `reject`.
fn rejecting(reject: Reject) -> Plan {
    Plan {
        after: NEVER,
        hold: 0,
        cover: 0,
        again: 0,
        close: false,
        reject,
        one_stream: false,
    }
}

/// One Webchild's run of `pages` against `server` (`--streams`), within a minute; the
/// server's counts once it has settled.
fn run(
    ca: &TestCa,
    server: &GoawayServer,
    pages: &Workload,
    streams: Option<u32>,
    stop: Stop,
) -> (RunResult, Counts) {
    let config = BenchConfig {
        streams,
        ..server.bench_config(ca, 1, stop)
    };
    let started = Instant::now();
    let r = bench::run(&config, pages, &AtomicBool::new(false)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    (r, server.settled())
}

fn what(r: &RunResult, c: &Counts) -> String {
    let s = &r.stats;
    format!(
        "requests {}, unfinished {}, unsent {}, errors {:?}, page errors {}, {:?}; server {c:?}",
        s.requests, s.unfinished, s.unsent_at_end, s.errors, s.pages[0].errors, s.http3
    )
}

fn rejected_resets(r: &RunResult) -> u64 {
    let resets = &r.stats.http3.stream_resets;
    resets.get("H3_REQUEST_REJECTED").copied().unwrap_or(0)
}

#[test]
fn a_rejected_request_is_sent_again_on_its_connection_and_answered() {
    // Every other request for /b is rejected, from the first: each page's /b is rejected once,
    // sent again on the same connection and answered.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let server = GoawayServer::start(&ca, rejecting(Reject::EveryOther("/b")));
    let pages = 5;
    let two = workload(&[("p", 1.0, &["/a", "/b"])]);
    let (r, c) = run(&ca, &server, &two, None, Stop::Pages(pages));
    let (s, h, what) = (&r.stats, &r.stats.http3, what(&r, &c));
    assert_eq!(s.errors.total(), 0, "{what}");
    assert_eq!(s.requests, 2 * pages, "{what}");
    assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
    assert_eq!(h.retried, pages, "each /b retried once: {what}");
    assert_eq!(h.streams, 3 * pages, "{what}");
    assert_eq!(rejected_resets(&r), pages, "{what}");
    assert_eq!(
        (c.seen, c.rejected, c.refused),
        (3 * pages, pages, pages),
        "{what}"
    );
    assert_eq!(c.answered, s.requests, "{what}");
    assert_eq!(c.processed(), s.requests + s.unfinished, "{what}");
    // Sent again on the connection that rejected it: it goes on.
    assert_eq!((h.connections, c.accepted), (1, 1), "{what}");
    let json = bench::report::json(&r);
    assert_eq!(json["summary"]["http3"]["retried"], pages, "{what}");
}

#[test]
fn a_server_rejecting_everything_fails_each_request_after_one_retry() {
    // Pages of two files, and one-file pages as four lanes: each request is sent twice, then
    // fails as h3_stream_reset; one connection, nothing answered, the run ends.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let shapes = [
        (
            "pages of two",
            workload(&[("p", 1.0, &["/a", "/b"])]),
            None,
            3,
            2,
        ),
        ("lanes", one_file(), Some(4), 8, 1),
    ];
    for (name, pages, streams, n, files) in shapes {
        let server = GoawayServer::start(&ca, rejecting(Reject::All));
        let (r, c) = run(&ca, &server, &pages, streams, Stop::Pages(n));
        let (s, h, what) = (
            &r.stats,
            &r.stats.http3,
            format!("{name}: {}", what(&r, &c)),
        );
        let sent = n * files;
        assert_eq!(s.requests, 0, "{what}");
        assert_eq!(s.errors.get(ErrorKind::H3StreamReset), sent, "{what}");
        assert_eq!(s.errors.total(), sent, "{what}");
        assert_eq!(s.pages[0].errors, n, "{what}");
        assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
        assert_eq!(h.retried, sent, "each request retried once: {what}");
        assert_eq!(h.streams, 2 * sent, "each request sent twice: {what}");
        assert_eq!(rejected_resets(&r), 2 * sent, "{what}");
        assert_eq!(
            (c.seen, c.rejected, c.answered),
            (2 * sent, 2 * sent, 0),
            "{what}"
        );
        // No loop: the one connection took every send.
        assert_eq!((h.connections, c.accepted), (1, 1), "{what}");
    }
}

#[test]
fn at_a_timed_end_a_request_rejected_after_the_end_is_not_sent() {
    // Every request rejected: the server processed none, so a request in flight at the end
    // whose rejection is read in the linger is not sent (not unfinished), and the run's
    // requests plus unfinished are the server's zero. A window that passed before a request
    // failed or before anything was left in flight at its end (a busy machine's handshake, or
    // its first rejections still on the way) is made longer.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let two = workload(&[("p", 1.0, &["/a", "/b"])]);
    let (r, c) = until_busy(
        ms(300),
        |window| {
            let server = GoawayServer::start(&ca, rejecting(Reject::All));
            let (r, c) = run(&ca, &server, &two, None, Stop::Duration(window));
            let (s, h, what) = (&r.stats, &r.stats.http3, what(&r, &c));
            assert_eq!(
                s.errors.get(ErrorKind::H3StreamReset),
                s.errors.total(),
                "{what}"
            );
            assert_eq!(c.processed(), 0, "{what}");
            assert_eq!(s.requests + s.unfinished, c.processed(), "{what}");
            let accounted = h.retried + s.errors.total();
            assert!(
                accounted <= h.streams && h.streams <= accounted + s.unsent_at_end,
                "streams: {what}"
            );
            // One connection at most (a window can end before its handshake does).
            assert!(h.connections <= 1 && c.accepted <= 1, "{window:?}: {what}");
            (r, c)
        },
        |(r, _)| r.stats.unsent_at_end > 0 && r.stats.errors.total() > 0,
    );
    let (s, h, what) = (&r.stats, &r.stats.http3, what(&r, &c));
    assert!(s.unsent_at_end > 0, "{what}");
    assert!(s.errors.total() > 0, "{what}");
    assert_eq!((h.connections, c.accepted), (1, 1), "{what}");
}

/// Each connection takes its first request and rejects its second, closing at once.
fn second_rejected_and_closed(h: Head) -> Act {
    match h.nth {
        2 => Act::RejectAndClose,
        _ => Act::Take,
    }
}

#[test]
fn a_request_rejected_as_its_connection_closes_goes_on_a_new_one() {
    // No GOAWAY: the server rejects a request and closes the connection before it could be
    // sent there again (one stream at a time). What was rejected is not failed with the
    // connection: it goes on a new one, which answers it and rejects the next request.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let plan = Plan {
        one_stream: true,
        ..rejecting(Reject::Script(second_rejected_and_closed))
    };
    let server = GoawayServer::start(&ca, plan);
    let pages = 3;
    let two = workload(&[("p", 1.0, &["/a", "/b"])]);
    let (r, c) = run(&ca, &server, &two, None, Stop::Pages(pages));
    let (s, h, what) = (&r.stats, &r.stats.http3, what(&r, &c));
    assert_eq!(s.errors.total(), 0, "{what}");
    assert_eq!(s.requests, 2 * pages, "{what}");
    assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
    // Every request but the first is rejected once, each by a connection of its own.
    let rejected = 2 * pages - 1;
    assert_eq!(h.retried, rejected, "{what}");
    assert_eq!(h.streams, 2 * pages + rejected, "{what}");
    assert_eq!(rejected_resets(&r), rejected, "{what}");
    assert_eq!(
        (c.seen, c.rejected),
        (2 * pages + rejected, rejected),
        "{what}"
    );
    assert_eq!(
        (c.answered, c.processed()),
        (s.requests, s.requests),
        "{what}"
    );
    assert_eq!(
        (h.connections, c.accepted),
        (2 * pages, 2 * pages),
        "{what}"
    );
}

/// The first connection rejects its first request, holds the one sent after it, and sends
/// the GOAWAY; the second rejects its first request once.
fn rejected_before_the_goaway(h: Head) -> Act {
    match (h.conn, h.nth) {
        (1 | 2, 1) => Act::Reject,
        _ => Act::Take,
    }
}

/// As `rejected_before_the_goaway`, and the first connection rejects the request its GOAWAY
/// covered, read after the GOAWAY.
fn rejected_before_and_after_the_goaway(h: Head) -> Act {
    match h.covered && h.conn == 1 {
        true => Act::Reject,
        false => rejected_before_the_goaway(h),
    }
}

#[test]
fn a_request_a_goaway_moves_is_sent_again_once_on_the_next_connection() {
    // A page of two: the first request is rejected and sent again on its connection, which
    // then sends GOAWAY, above that request (left unanswered) or below it (and rejects it,
    // the connection going away). Either way it goes on a new connection, whose one rejection
    // of it is sent again there, not failed: it is answered.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let cases: [(&str, u64, _); 2] = [
        (
            "GOAWAY above it",
            0,
            rejected_before_the_goaway as fn(Head) -> Act,
        ),
        (
            "rejected after the GOAWAY",
            1,
            rejected_before_and_after_the_goaway,
        ),
    ];
    for (name, cover, script) in cases {
        let plan = Plan {
            after: 2,
            hold: 1,
            cover: cover as usize,
            ..rejecting(Reject::Script(script))
        };
        let server = GoawayServer::start(&ca, plan);
        let two = workload(&[("p", 1.0, &["/a", "/b"])]);
        let (r, c) = run(&ca, &server, &two, None, Stop::Pages(1));
        let (s, h, what) = (
            &r.stats,
            &r.stats.http3,
            format!("{name}: {}", what(&r, &c)),
        );
        assert_eq!(s.errors.total(), 0, "{what}");
        assert_eq!(s.requests, 2, "{what}");
        assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
        // Rejected, moved by the GOAWAY (or rejected as it went), rejected on the next.
        assert_eq!(h.retried, 3, "{what}");
        assert_eq!(h.streams, 5, "{what}");
        assert_eq!((h.goaways, c.goaways), (1, 1), "{what}");
        assert_eq!((c.seen, c.refused, c.rejected), (5, 3, 2 + cover), "{what}");
        assert_eq!((c.answered, c.processed()), (2, 2), "{what}");
        assert_eq!((h.connections, c.accepted), (2, 2), "{what}");
    }
}
