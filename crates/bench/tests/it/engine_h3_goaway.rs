//! `--http 3` against a server that sends each connection a GOAWAY (RFC 9114 5.2) after a few
//! requests (`h3_goaway_server`): naming the stream after the last request it has, or one below
//! requests it already has (left unanswered), and then, or not, closing the connection with
//! what the GOAWAY covered cut short. For pages of four files and `--streams 4` lanes, at a
//! count end and a timed end: the requests the server took (answered, cut, or held at the
//! end) are exactly `requests + unfinished + h3_goaway failures`; the responses it sent whole
//! are the requests counted (none answered twice, none lost); no request at or above a GOAWAY
//! was answered; the GOAWAYs are counted in `summary.http3.goaways` and what they left
//! unprocessed in `retried`, sent again on a new connection; the run ends within its bound.

use crate::common::timed::until_busy;
use crate::common::{ms, one_file, workload};
use crate::h3_goaway_server::{Counts, GoawayServer, Plan, Reject, BODY};

use bench::stats::ErrorKind;
use bench::{BenchConfig, RunResult, Stop, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const BOUND: Duration = Duration::from_secs(60);

/// The server's plans: the GOAWAY after the 3rd request naming the stream after it; after the
/// 3rd with the 2nd and 3rd held and refused; the same with the 2nd covered (answered); and
/// with the 2nd covered and cut by the close; and both held covered, then a second GOAWAY
/// taking the 3rd back, without and with the close.
const PLANS: [Plan; 6] = [
    AFTER_THIRD,
    Plan {
        hold: 2,
        ..AFTER_THIRD
    },
    Plan {
        hold: 2,
        cover: 1,
        ..AFTER_THIRD
    },
    Plan {
        hold: 2,
        cover: 1,
        close: true,
        ..AFTER_THIRD
    },
    Plan {
        hold: 2,
        cover: 2,
        again: 1,
        ..AFTER_THIRD
    },
    Plan {
        hold: 2,
        cover: 2,
        again: 1,
        close: true,
        ..AFTER_THIRD
    },
];

/// The GOAWAY after the 3rd request naming the stream after it: the plans' base.
const AFTER_THIRD: Plan = Plan {
    after: 3,
    hold: 0,
    cover: 0,
    again: 0,
    close: false,
    reject: Reject::Never,
    one_stream: false,
};

/// A run's shape: its pages, `--streams` and `--rate`.
struct Shape {
    name: &'static str,
    pages: Workload,
    streams: Option<u32>,
    rate: Option<f64>,
}

/// Pages of four files (their streams at once), one-file pages as four lanes, and those lanes
/// in the open loop (a page at its slot on a free lane).
fn shapes() -> [Shape; 3] {
    let four = workload(&[("p", 1.0, &["/a", "/b", "/c", "/d"])]);
    [
        Shape {
            name: "pages of four",
            pages: four,
            streams: None,
            rate: None,
        },
        Shape {
            name: "lanes",
            pages: one_file(),
            streams: Some(4),
            rate: None,
        },
        Shape {
            name: "lanes at --rate 400",
            pages: one_file(),
            streams: Some(4),
            rate: Some(400.0),
        },
    ]
}

/// A run of two Webchildren on one thread against `server`, stopped by `stop`, within `BOUND`.
fn run(ca: &TestCa, server: &GoawayServer, shape: &Shape, stop: Stop) -> RunResult {
    let config = BenchConfig {
        streams: shape.streams,
        rate: shape.rate,
        ..server.bench_config(ca, 2, stop)
    };
    let started = Instant::now();
    let r = bench::run(&config, &shape.pages, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    r
}

/// What holds at any end: the server's count against flint's, exactly.
fn accounts(what: &str, r: &RunResult, c: &Counts) {
    let s = &r.stats;
    let h = &s.http3;
    let what = format!(
        "{what}: requests {}, unfinished {}, unsent {}, errors {:?}, retried {}, goaways {}, \
         streams {}, connections {}; server {c:?}",
        s.requests,
        s.unfinished,
        s.unsent_at_end,
        s.errors,
        h.retried,
        h.goaways,
        h.streams,
        h.connections
    );
    // First: a request answered at or above a GOAWAY is the server's fault (it said the
    // request was not processed), and bench sends it again: counted twice by the server.
    assert_eq!(c.answered_above, 0, "answered at or above a GOAWAY: {what}");
    let goaway_failed = s.errors.get(ErrorKind::H3Goaway);
    assert_eq!(
        s.errors.total(),
        goaway_failed,
        "only GOAWAY failures: {what}"
    );
    assert_eq!(
        c.processed(),
        s.requests + s.unfinished + goaway_failed,
        "every request the server took is counted once: {what}"
    );
    // Every response sent whole was read whole, or is unfinished (read in part at the end).
    assert!(
        s.requests <= c.answered && c.answered <= s.requests + s.unfinished,
        "responses: {what}"
    );
    assert_eq!(s.statuses.get(200), s.requests, "{what}");
    assert!(h.goaways <= c.goaways, "{what}");
    // Streams opened: each a request, unfinished, retried or failed, or one not sent at the
    // end (its refusal read after the end).
    let accounted = s.requests + s.unfinished + h.retried + s.errors.total();
    assert!(
        accounted <= h.streams && h.streams <= accounted + s.unsent_at_end,
        "streams: {what}"
    );
}

/// A count end: nothing left in flight, every GOAWAY read in the run, every cut counted.
fn exact(what: &str, r: &RunResult, c: &Counts, plan: Plan) {
    accounts(what, r, c);
    let s = &r.stats;
    let h = &s.http3;
    let what = format!("{what}: {s:?}");
    assert_eq!((s.unfinished, s.unsent_at_end), (0, 0), "{what}");
    assert_eq!(
        c.answered, s.requests,
        "none answered twice, none lost: {what}"
    );
    assert_eq!(
        s.bytes_body,
        s.requests * BODY as u64,
        "every body whole: {what}"
    );
    assert_eq!(h.goaways, c.goaways, "{what}");
    assert_eq!(s.errors.get(ErrorKind::H3Goaway), c.cut, "{what}");
    assert_eq!(
        h.streams,
        s.requests + h.retried + s.errors.total(),
        "{what}"
    );
    // Every refused head the server read was a stream sent again (one reset before its head
    // came is retried too, unseen).
    assert!(h.retried >= c.refused, "{what}");
    if plan.hold > plan.cover - plan.again {
        assert!(
            c.refused > 0,
            "a GOAWAY below requests the server had: {what}"
        );
    }
    if plan.close {
        assert!(c.cut > 0, "{what}");
    }
    if plan.again > 0 {
        assert!(c.goaways > c.accepted, "second GOAWAYs: {what}");
    }
    // The run went on after each GOAWAY on a new connection.
    assert!(c.goaways > 0 && h.connections > 2, "{what}");
    assert_eq!(h.connections, c.accepted, "{what}");
    // The summary says so, in the JSON and the text report.
    let json = bench::report::json(r);
    let h3 = &json["summary"]["http3"];
    assert_eq!(h3["goaways"], c.goaways, "{h3}");
    assert_eq!(h3["retried"], h.retried, "{h3}");
    let line = format!("{} GOAWAY, {} streams retried", c.goaways, h.retried);
    let text = bench::report::summary(r);
    assert!(text.contains(&line), "{line:?} in:\n{text}");
}

#[test]
fn goaways_at_a_count_end_keep_every_count_exact() {
    let ca = TestCa::new("flint bench h3 GOAWAY test CA");
    for plan in PLANS {
        for shape in shapes() {
            let server = GoawayServer::start(&ca, plan);
            let (pages, files) = if shape.streams.is_some() {
                (40, 1)
            } else {
                (12, 4)
            };
            let r = run(&ca, &server, &shape, Stop::Pages(pages));
            let what = format!("{plan:?}, {}", shape.name);
            let c = server.settled();
            exact(&what, &r, &c, plan);
            let failed = r.stats.errors.total();
            assert_eq!(r.stats.requests + failed, pages * files, "{what}");
        }
    }
}

#[test]
fn goaways_at_a_timed_end_keep_every_count_exact() {
    // A window that passed before a GOAWAY (a busy machine's handshakes) is made longer; every
    // run keeps the counts.
    let ca = TestCa::new("flint bench h3 GOAWAY test CA");
    for plan in PLANS {
        for shape in shapes() {
            let what = format!("{plan:?}, {}", shape.name);
            let r = until_busy(
                ms(300),
                |window| {
                    let server = GoawayServer::start(&ca, plan);
                    let r = run(&ca, &server, &shape, Stop::Duration(window));
                    accounts(&format!("{what}, {window:?}"), &r, &server.settled());
                    r
                },
                |r| r.stats.requests > 0 && r.stats.http3.goaways > 0,
            );
            assert!(r.stats.requests > 0, "{what}");
            assert!(r.stats.http3.goaways > 0, "{what}");
        }
    }
}

#[test]
fn goaways_whose_server_rejects_what_they_refused_keep_every_count_exact() {
    // As flint serve does: the requests at or above the GOAWAY are reset with
    // H3_REQUEST_REJECTED rather than left unanswered. Whether a rejection or the GOAWAY is
    // read first, each such request is sent again on a new connection, once counted.
    let ca = TestCa::new("flint bench h3 GOAWAY test CA");
    for plan in [PLANS[1], PLANS[3], PLANS[4]] {
        let plan = Plan {
            reject: Reject::AboveGoaway,
            ..plan
        };
        for shape in shapes() {
            let server = GoawayServer::start(&ca, plan);
            let (pages, files) = if shape.streams.is_some() {
                (40, 1)
            } else {
                (12, 4)
            };
            let r = run(&ca, &server, &shape, Stop::Pages(pages));
            let what = format!("{plan:?}, {}", shape.name);
            let c = server.settled();
            exact(&what, &r, &c, plan);
            assert!(c.rejected > 0, "{what}: {c:?}");
            assert_eq!(
                r.stats.requests + r.stats.errors.total(),
                pages * files,
                "{what}"
            );
        }
    }
}
