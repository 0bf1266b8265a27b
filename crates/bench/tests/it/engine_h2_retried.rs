//! HTTP/2's `summary.http2.retried` held to what the server received when a connection breaks
//! after its GOAWAY (`Fault::GoawayThenClose`): the stream the GOAWAY covered fails with the
//! connection (`h2_goaway`), and the streams above it, never processed, are counted as retried
//! once each as they are taken and go on a new connection (`client/h2/outcomes.rs`,
//! `conn_failed`). Each so counted is a request the server received twice; one failed instead
//! of sent again would have to be taken back out of `retried` (`client/in_flight/refusals.rs`,
//! `not_retried`), or the count would claim sends the server never had. At a timed end, those
//! still waiting for the new connection are not sent, and their refused stream, which the
//! server received, stays counted in `retried` (docs/bench-http2.md): never as unfinished too.

use crate::common;
use crate::h2_accounting;
use crate::h2server;

use bench::stats::ErrorKind;
use bench::{RunResult, Stop};
use common::timed::{self, until_busy};
use common::{ms, workload};
use h2_accounting::{exact_streams, identities, settled};
use h2server::{run, Fault, H2Server};

const FOUR: &[&str] = &["/a", "/b", "/c", "/d"];

#[test]
fn streams_a_goaway_left_as_its_connection_broke_are_retried_once_for_each_second_send() {
    const PAGES: u64 = 10;
    // The GOAWAY at a connection's 1st stream fails every file in turn (each new connection's
    // first stream is covered again), at its 2nd and 3rd some are answered.
    for k in [1, 2, 3] {
        let server = H2Server::start(Fault::GoawayThenClose(k));
        let r = run(
            &server,
            &workload(&[("p", 1.0, FOUR)]),
            Stop::Pages(PAGES),
            |_| {},
        );
        let (s, h) = (&r.stats, &r.stats.http2);
        let what = format!("GOAWAY at stream {k}, then close: {:?}, {h:?}", s.errors);
        // Every file of every page ends once, answered or failed, on its last stream; every
        // other stream the server received was one it did not process, sent again after.
        let ended = s.requests + s.errors.total();
        assert_eq!(ended, 4 * PAGES, "{what}");
        let received = settled(&server, &server.streams);
        assert_eq!(ended + h.retried, received, "retried, sent twice: {what}");
        assert!(h.retried > 0, "{what}");
        assert_eq!(h.streams, received, "{what}");
        // Nothing failed but the stream each GOAWAY covered.
        assert_eq!(s.errors.get(ErrorKind::H2Goaway), h.goaways, "{what}");
        assert_eq!(s.errors.total(), h.goaways, "{what}");
        assert_eq!(settled(&server, &server.answered), s.requests, "{what}");
        exact_streams(&what, &r);
    }
}

#[test]
fn streams_a_goaway_left_waiting_at_a_timed_end_are_retried_once_as_the_server_received_them() {
    // A connection spends most of its life draining: the server closes it only once the client
    // has been quiet for its read timeout, and what the GOAWAY left waits meanwhile; so a
    // timed end finds streams waiting to be sent again as a rule (a run that ended before any
    // did, on a busy machine, is made again with a longer window).
    let waiting = |r: &RunResult| r.stats.unsent_at_end > 0 && r.stats.http2.retried > 0;
    for k in [1, 3] {
        for run_no in 0..4 {
            let once = |window| {
                let server = H2Server::start(Fault::GoawayThenClose(k));
                let r = run(
                    &server,
                    &workload(&[("p", 1.0, FOUR)]),
                    Stop::Duration(window),
                    |_| {},
                );
                let (s, h) = (&r.stats, &r.stats.http2);
                let what = format!(
                    "GOAWAY at stream {k}, then close, run {run_no}, {window:?}: requests {}, \
                     unfinished {}, unsent {}, {:?}, {h:?}",
                    s.requests, s.unfinished, s.unsent_at_end, s.errors
                );
                identities(&what, &r);
                // Each stream the server received is one of these once: a response, one in
                // flight at the end, one refused (`retried`), one failed. (A request not sent
                // at the end may be one it received too: refused by a GOAWAY read after the
                // end.)
                let received = settled(&server, &server.streams);
                let accounted = s.requests + s.unfinished + h.retried + s.errors.total();
                assert!(accounted <= received, "received {received}: {what}");
                assert!(
                    received <= accounted + s.unsent_at_end,
                    "received {received}: {what}"
                );
                r
            };
            let r = until_busy(ms(200), once, waiting);
            assert!(waiting(&r), "k {k}, run {run_no}: {:?}", timed::LONGEST);
        }
    }
}
