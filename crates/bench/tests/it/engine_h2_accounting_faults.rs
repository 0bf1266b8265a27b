//! HTTP/2 counts held to their identities (`common/h2_accounting.rs`) when a timed run ends
//! against a server that resets streams, stalls some, holds a request body behind a one-byte
//! window, allows no stream and then some, or sends GOAWAYs over TLS: whatever was in flight at
//! the end, the server answered (its access log) exactly `requests + unfinished`, and an upload
//! the end cut short reached it cancelled.

use crate::common;
use crate::h2_accounting;
use crate::h2server;

use bench::config::TlsOptions;
use bench::{RequestSpec, RunResult, Stop, Target, Workload};
use common::timed::{self, until_busy};
use common::{ms, one_file, workload};
use h2_accounting::{identities, settled};
use h2server::{run, Fault, H2Server};
use std::sync::atomic::Ordering;
use std::time::Duration;
use test_support::certs::TestCa;

const FOUR: &[&str] = &["/a", "/b", "/c", "/d"];
const RUNS: usize = 4;
/// RST_STREAM's error code for a stream no longer needed (RFC 9113 section 7).
const CANCEL: usize = 0x8;

/// `RUNS` timed runs of `w` against a fresh `server()` each: the identities, and the streams
/// the server answered (its access log) are `requests + unfinished`.
fn timed_runs(
    what: &str,
    server: impl Fn() -> H2Server,
    w: &Workload,
    tweak: impl Fn(&mut bench::BenchConfig, &H2Server),
) -> Vec<RunResult> {
    let truth = |srv: &H2Server, r: &RunResult| {
        let s = &r.stats;
        (settled(srv, &srv.answered), s.requests + s.unfinished)
    };
    timed_runs_held(what, server, w, tweak, truth, sent)
}

/// `timed_runs` with another truth: `truth(server, run)` is the server's count and what flint's
/// counts say it must be. A run whose window ended before it was `busy` (a busy machine can
/// spend a whole short window connecting) is made again, with a longer window.
fn timed_runs_held(
    what: &str,
    server: impl Fn() -> H2Server,
    w: &Workload,
    tweak: impl Fn(&mut bench::BenchConfig, &H2Server),
    truth: impl Fn(&H2Server, &RunResult) -> (u64, u64),
    busy: impl Fn(&RunResult) -> bool,
) -> Vec<RunResult> {
    (0..RUNS)
        .map(|run_no| {
            let once = |window| held(what, run_no, &server, w, &tweak, &truth, window);
            let r = until_busy(ms(200), once, &busy);
            assert!(
                busy(&r),
                "{what}, run {run_no}: not busy in {:?}",
                timed::LONGEST
            );
            r
        })
        .collect()
}

/// One run of [`timed_runs_held`].
fn held(
    what: &str,
    run_no: usize,
    server: &impl Fn() -> H2Server,
    w: &Workload,
    tweak: &impl Fn(&mut bench::BenchConfig, &H2Server),
    truth: &impl Fn(&H2Server, &RunResult) -> (u64, u64),
    window: Duration,
) -> RunResult {
    let srv = server();
    let r = run(&srv, w, Stop::Duration(window), |c| tweak(c, &srv));
    let what = format!("{what}, run {run_no}, {window:?}");
    identities(&what, &r);
    let s = &r.stats;
    let (server_count, flint_count) = truth(&srv, &r);
    assert_eq!(
        server_count, flint_count,
        "the server's count: {what}: requests {}, unfinished {}, unsent {}, {:?}, {:?}",
        s.requests, s.unfinished, s.unsent_at_end, s.errors, s.http2
    );
    r
}

/// Whether a run's streams went out: what it then did at its end is worth checking.
fn sent(r: &RunResult) -> bool {
    r.stats.http2.streams > 0
}

#[test]
fn resets_at_a_timed_end() {
    // Some streams fail: the server answered those flint counts, and received those too.
    let rs = timed_runs_held(
        "RST_STREAM every 3rd",
        || H2Server::start(Fault::ResetEvery(3)),
        &workload(&[("p", 1.0, FOUR)]),
        |_, _| {},
        |srv, r| {
            let s = &r.stats;
            let received = s.requests + s.unfinished + s.errors.total();
            (settled(srv, &srv.streams), received)
        },
        |r| r.stats.http2.rst_streams[2] > 0,
    );
    assert!(rs.iter().all(|r| r.stats.http2.rst_streams[2] > 0));
    // Refused streams are sent again (a second refusal fails, and is not in the log either).
    timed_runs(
        "REFUSED_STREAM every 3rd, lanes",
        || H2Server::start(Fault::RefuseEvery(3)),
        &one_file(),
        |c, _| c.streams = Some(4),
    );
}

#[test]
fn no_stream_then_some_at_a_timed_end() {
    timed_runs(
        "MAX_CONCURRENT_STREAMS 0 then 100",
        || H2Server::start(Fault::NoStreamsThenSome),
        &workload(&[("p", 1.0, FOUR)]),
        |_, _| {},
    );
    timed_runs(
        "MAX_CONCURRENT_STREAMS 1, lanes",
        || H2Server::start(Fault::OneStream),
        &one_file(),
        |c, _| c.streams = Some(8),
    );
}

#[test]
fn a_request_body_behind_a_one_byte_window_at_a_timed_end() {
    // The body goes a byte a round trip: at the end, a request whose body has not all left is
    // not sent, and not one the server has (it answers at END_STREAM). Its HEADERS reached the
    // server, so flint cancels it (RST_STREAM CANCEL) rather than let its body stop short:
    // every stream the server saw is one flint counts as sent, or one it cancelled.
    let mut w = one_file();
    w.requests = vec![RequestSpec {
        method: Some("POST".into()),
        body: Some(vec![b'x'; 2000]),
        ..RequestSpec::default()
    }];
    // Runs whose server saw a CANCEL: the cancel itself must be seen to work, not only the
    // counts to hold without one.
    let runs_cancelling = std::cell::Cell::new(0u64);
    let truth = |srv: &H2Server, r: &RunResult| {
        let s = &r.stats;
        let sent = s.requests + s.unfinished;
        assert_eq!(settled(srv, &srv.answered), sent, "answered: {:?}", s.http2);
        let cancelled = srv.resets[CANCEL].load(Ordering::SeqCst);
        assert!(
            cancelled <= s.unsent_at_end,
            "cancelled {cancelled}, unsent {}",
            s.unsent_at_end
        );
        runs_cancelling.set(runs_cancelling.get() + u64::from(cancelled > 0));
        (settled(srv, &srv.streams) - cancelled, sent)
    };
    timed_runs_held(
        "one-byte window, POST",
        || H2Server::start(Fault::OneByteWindow),
        &w,
        |_, _| {},
        truth,
        // An upload cut short by the end: what this test is about.
        |r| r.stats.unsent_at_end > 0,
    );
    assert!(
        runs_cancelling.get() > 0,
        "no run's server saw an upload cancelled"
    );
}

#[test]
fn goaways_over_tls_at_a_timed_end() {
    let ca = TestCa::new("flint test CA");
    let config = ca.leaf().server_config();
    let tls = TlsOptions {
        cacert: Some(ca.pem.clone()),
        ..TlsOptions::default()
    };
    for (w, streams) in [(workload(&[("p", 1.0, FOUR)]), None), (one_file(), Some(4))] {
        timed_runs(
            "GOAWAY after 3, TLS",
            || H2Server::start_tls(Fault::GoawayAfter(3), &config),
            &w,
            |c, srv| {
                c.target = Target::https(srv.addr, "localhost");
                c.tls = tls.clone();
                c.streams = streams;
            },
        );
    }
}

#[test]
fn a_refusal_read_after_the_end_makes_its_stream_not_sent() {
    // REFUSED_STREAM: never processed (RFC 9113 section 8.7). One the server sent just before
    // the end and flint read after it is a request the server does not have.
    timed_runs(
        "REFUSED_STREAM every 3rd, pages of four",
        || H2Server::start(Fault::RefuseEvery(3)),
        &workload(&[("p", 1.0, FOUR)]),
        |_, _| {},
    );
}

#[test]
fn every_page_due_in_an_open_loop_of_lanes_is_accounted_for() {
    // One-file pages: each due in the window is a request, an error, unfinished, not sent at
    // the end, or a page never started; a server that allows one stream keeps lanes waiting.
    for fault in [Fault::None, Fault::OneStream, Fault::GoawayAfter(3)] {
        let rs = timed_runs(
            &format!("{fault:?}, lanes, open loop"),
            || H2Server::start(fault),
            &one_file(),
            |c, _| {
                c.streams = Some(8);
                c.rate = Some(20_000.0);
            },
        );
        for r in rs {
            let s = &r.stats;
            assert_eq!(
                s.pages_scheduled,
                s.requests + s.errors.total() + s.unfinished + s.unsent_at_end + s.pages_not_sent,
                "{fault:?}: requests {}, unfinished {}, unsent {}, not sent {}, {:?}",
                s.requests,
                s.unfinished,
                s.unsent_at_end,
                s.pages_not_sent,
                s.errors
            );
        }
    }
}

#[test]
fn a_connection_closed_under_lanes_fails_only_the_streams_it_carried() {
    // Every response is cut short and the connection closed: the lanes' streams fail with it;
    // a page due meanwhile and not yet sent is not one of them.
    for rate in [None, Some(20_000.0)] {
        let what = format!("lanes, connection closed, rate {rate:?}");
        let r = until_busy(
            ms(200),
            |window| {
                let server = H2Server::start(Fault::PaddedHalf { close: true });
                let r = run(&server, &one_file(), Stop::Duration(window), |c| {
                    c.streams = Some(4);
                    c.rate = rate;
                });
                identities(&format!("{what}, {window:?}"), &r);
                r
            },
            |r| r.stats.errors.total() > 0,
        );
        let s = &r.stats;
        assert!(s.errors.total() > 0, "{what}: {:?}", s.errors);
        if rate.is_some() {
            let accounted = s.requests + s.errors.total() + s.unfinished + s.unsent_at_end;
            assert_eq!(s.pages_scheduled, accounted + s.pages_not_sent, "{s:?}");
        }
    }
}
