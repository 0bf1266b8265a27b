//! `--http 3` against a server that refuses everything: each connection's GOAWAY names stream 0
//! as soon as HTTP/3 is up (`h3_goaway_server::REFUSE_ALL`). Each of a page's two files is
//! sent again once and then fails as `h3_goaway`, whether the GOAWAY came before its stream was
//! opened or above it, so a run of N pages ends with 2N failures; each connection after one
//! that served nothing waits, 10 ms doubled each time, as over HTTP/2.

use crate::common::{ms, workload};
use crate::h3_goaway_server::{GoawayServer, Plan, Reject, REFUSE_ALL};

use bench::stats::ErrorKind;
use bench::{RunResult, Stop};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// One Webchild's run of two-file pages against `server`, and how long it took (within a
/// minute).
fn run(ca: &TestCa, server: &GoawayServer, stop: Stop) -> (RunResult, Duration) {
    let config = server.bench_config(ca, 1, stop);
    let pages = workload(&[("p", 1.0, &["/a", "/b"])]);
    let started = Instant::now();
    let r = bench::run(&config, &pages, &AtomicBool::new(false)).unwrap();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(60), "took {took:?}");
    (r, took)
}

/// The least a run of `connections` that each served nothing waits between them: 10 ms before
/// the second, doubled for each after it, at most 640 ms.
fn least_backoff(connections: u64) -> Duration {
    (1..connections).map(|k| ms(10 << (k - 1).min(6))).sum()
}

#[test]
fn a_server_refusing_everything_fails_each_file_once_and_the_run_ends() {
    let ca = TestCa::new("flint bench h3 GOAWAY 0 test CA");
    // What it refuses left unanswered, or rejected (H3_REQUEST_REJECTED) as flint serve does:
    // a rejection on a connection going away is judged as its GOAWAY's refusals are.
    let rejecting = Plan {
        reject: Reject::AboveGoaway,
        ..REFUSE_ALL
    };
    for plan in [REFUSE_ALL, rejecting] {
        refusing_everything(&ca, plan);
    }
}

fn refusing_everything(ca: &TestCa, plan: Plan) {
    let server = GoawayServer::start(ca, plan);
    let pages = 3;
    let (r, took) = run(ca, &server, Stop::Pages(pages));
    let c = server.settled();
    let s = &r.stats;
    let h = &s.http3;
    let what = format!(
        "{plan:?}: requests {}, errors {:?}, page errors {}, unfinished {}, unsent {}, {h:?}; \
         server {c:?}; took {took:?}",
        s.requests, s.errors, s.pages[0].errors, s.unfinished, s.unsent_at_end
    );
    assert_eq!(s.requests, 0, "{what}");
    // Both files of each page, refused twice each, fail: none is left out, none sent a third
    // time.
    assert_eq!(s.errors.get(ErrorKind::H3Goaway), 2 * pages, "{what}");
    assert_eq!(s.errors.total(), 2 * pages, "{what}");
    assert_eq!(s.pages[0].errors, pages, "{what}");
    assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
    assert_eq!((c.answered, c.answered_above), (0, 0), "{what}");
    assert_eq!(c.refused, c.seen, "{what}");
    // Two connections refuse a file; a page's second file may go only on its first's second
    // one (that connection's GOAWAY came before its streams), then on one more.
    assert!((2 * pages..=3 * pages).contains(&h.connections), "{what}");
    assert_eq!(h.connections, c.accepted, "{what}");
    assert_eq!(h.goaways, c.goaways, "{what}");
    // A file counts as retried once if its stream was opened on the first connection that
    // refused it (not if that GOAWAY came before its stream): never twice.
    assert!(h.retried <= 2 * pages, "{what}");
    assert!(
        h.retried <= h.streams && h.streams <= h.retried + 2 * pages,
        "{what}"
    );
    // Every connection served nothing: each after the first waited, longer each time.
    assert!(took >= least_backoff(h.connections), "{what}");
}

#[test]
fn connections_after_those_that_refused_everything_back_off() {
    // 800 ms: the waits (10 + 20 + ... + 320 = 630 ms before the eighth connection) leave room
    // for at most eight connections however fast the machine; without them, hundreds.
    let ca = TestCa::new("flint bench h3 GOAWAY 0 test CA");
    let server = GoawayServer::start(&ca, REFUSE_ALL);
    let (r, _) = run(&ca, &server, Stop::Duration(ms(800)));
    let c = server.counts.lock().unwrap().clone();
    let s = &r.stats;
    let what = format!(
        "requests {}, errors {:?}, {:?}; server {c:?}",
        s.requests, s.errors, s.http3
    );
    assert!(s.http3.connections <= 8, "{what}");
    assert_eq!(s.requests, 0, "{what}");
    assert_eq!(
        s.errors.get(ErrorKind::H3Goaway),
        s.errors.total(),
        "{what}"
    );
}
