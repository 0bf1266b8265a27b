//! `--http 3` against a server that resets streams with H3_REQUEST_REJECTED (RFC 9114 4.1.1:
//! the request was not processed, the client may send it again), as flint serve does with a
//! request that comes after its GOAWAY (`h3_goaway_server::Reject`). A rejected request is sent
//! again, counted in `summary.http3.retried`, not failed; rejected a second time it fails as
//! `h3_stream_reset`, as HTTP/2's REFUSED_STREAM does (`h2_rst_stream`), so a server that
//! rejects everything ends a `-n` run on its one connection rather than keep it going round.
//! The server's count of requests it processed is `requests + unfinished`, exactly.

use crate::common::{ms, one_file, workload};
use crate::h3_goaway_server::{Counts, GoawayServer, Plan, Reject, NEVER};

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
    // requests plus unfinished are the server's zero.
    let ca = TestCa::new("flint bench h3 REQUEST_REJECTED test CA");
    let server = GoawayServer::start(&ca, rejecting(Reject::All));
    let two = workload(&[("p", 1.0, &["/a", "/b"])]);
    let (r, c) = run(&ca, &server, &two, None, Stop::Duration(ms(300)));
    let (s, h, what) = (&r.stats, &r.stats.http3, what(&r, &c));
    assert!(s.errors.total() > 0, "{what}");
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
    assert_eq!((h.connections, c.accepted), (1, 1), "{what}");
}
