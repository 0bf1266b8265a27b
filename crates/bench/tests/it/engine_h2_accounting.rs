//! HTTP/2 counts held to their identities against servers that misbehave (`common/h2server.rs`):
//! every stream opened is a request, unfinished, retried or failed; every byte read is a head,
//! a body, framing, or belongs to a failed or unfinished request; GOAWAY and RST_STREAM frames
//! received are the GOAWAYs and resets counted; the server's count of streams it answered is
//! `requests + unfinished`.

use crate::common;
use crate::h2_accounting;
use crate::h2server;

use bench::stats::ErrorKind;
use bench::{RunResult, Stop, Workload};
use common::timed::until_busy;
use common::{ms, one_file, workload};
use h2_accounting::{exact_streams, identities, settled};
use h2server::{run, Fault, H2Server};

const FOUR: &[&str] = &["/a", "/b", "/c", "/d"];

/// Each GOAWAY then close failed the one stream it covered and not yet answered, and nothing
/// else: the streams above it were never processed and went on a new connection.
fn one_failure_a_goaway(r: &RunResult) {
    let s = &r.stats;
    assert_eq!(
        s.errors.get(ErrorKind::H2Goaway),
        s.http2.goaways,
        "{:?}",
        s.http2
    );
    assert_eq!(s.errors.total(), s.http2.goaways, "{:?}", s.errors);
    assert!(s.http2.retried > 0, "{:?}", s.http2);
}

fn pages_of_four() -> Workload {
    workload(&[("p", 1.0, FOUR)])
}

/// The server answered every request flint counts and saw every stream it opened.
fn server_saw_what_flint_counts(server: &H2Server, r: &RunResult, what: &str) {
    assert_eq!(
        settled(server, &server.answered),
        r.stats.requests,
        "{what}"
    );
    assert_eq!(
        settled(server, &server.streams),
        r.stats.http2.streams,
        "{what}"
    );
}

#[test]
fn goaway_after_a_few_streams_keeps_every_count_to_a_quota() {
    for k in [1, 2, 3, 5] {
        let server = H2Server::start(Fault::GoawayAfter(k));
        let r = run(&server, &pages_of_four(), Stop::Pages(20), |_| {});
        let what = format!("GOAWAY after {k}, pages of four");
        exact_streams(&what, &r);
        assert_eq!(r.stats.errors.total(), 0, "{what}");
        server_saw_what_flint_counts(&server, &r, &what);

        let server = H2Server::start(Fault::GoawayAfter(k));
        let r = run(&server, &one_file(), Stop::Pages(40), |c| {
            c.streams = Some(4)
        });
        let what = format!("GOAWAY after {k}, lanes");
        exact_streams(&what, &r);
        server_saw_what_flint_counts(&server, &r, &what);
    }
}

#[test]
fn goaway_after_a_few_streams_keeps_every_count_at_a_timed_end() {
    for (k, lanes, rate) in [(3, false, None), (2, true, None), (3, false, Some(400.0))] {
        for _ in 0..5 {
            let server = H2Server::start(Fault::GoawayAfter(k));
            let w = if lanes { one_file() } else { pages_of_four() };
            let r = run(&server, &w, Stop::Duration(ms(200)), |c| {
                c.streams = lanes.then_some(4);
                c.rate = rate;
            });
            let what = format!("GOAWAY after {k}, lanes {lanes}, rate {rate:?}");
            identities(&what, &r);
            assert_eq!(r.stats.errors.total(), 0, "{what}");
            let s = &r.stats;
            assert_eq!(
                settled(&server, &server.answered),
                s.requests + s.unfinished,
                "server's log: {what}: requests {}, unfinished {}, unsent {}",
                s.requests,
                s.unfinished,
                s.unsent_at_end
            );
        }
    }
}

#[test]
fn goaway_then_close_mid_data_fails_the_stream_it_covered_once() {
    for k in [1, 2, 3] {
        let server = H2Server::start(Fault::GoawayThenClose(k));
        let r = run(&server, &pages_of_four(), Stop::Pages(10), |_| {});
        exact_streams(&format!("GOAWAY then close at {k}, pages of four"), &r);
        one_failure_a_goaway(&r);
        let server = H2Server::start(Fault::GoawayThenClose(k));
        let r = run(&server, &one_file(), Stop::Pages(20), |c| {
            c.streams = Some(4)
        });
        exact_streams(&format!("GOAWAY then close at {k}, lanes"), &r);
        one_failure_a_goaway(&r);
    }
}

#[test]
fn header_bytes_of_a_stream_the_server_then_refused_are_framing() {
    // The server sends a stream's HEADERS and then says it never processed it: the stream is
    // sent again, and its header block, part of no response, is still a byte accounted for.
    for fault in [
        Fault::HeadersThenRefuseEvery(3),
        Fault::HeadersThenGoawayBelow(2),
    ] {
        for (shape, w, streams) in [
            ("pages of four", pages_of_four(), None),
            ("lanes", one_file(), Some(4)),
        ] {
            let what = format!("{fault:?}, {shape}");
            let server = H2Server::start(fault);
            let r = run(&server, &w, Stop::Pages(12), |c| c.streams = streams);
            exact_streams(&what, &r);
            let h = &r.stats.http2;
            assert!(h.retried > 0, "{what}: {h:?}");
            assert_eq!(
                settled(&server, &server.answered),
                r.stats.requests,
                "{what}: {:?}",
                r.stats.errors
            );
        }
    }
}

#[test]
fn padding_of_a_response_cut_short_is_framing_of_a_failed_request() {
    let server = H2Server::start(Fault::PaddedHalf { close: true });
    let r = run(&server, &pages_of_four(), Stop::Pages(4), |_| {});
    assert!(r.stats.bytes_failed > 0, "{:?}", r.stats.errors);
    exact_streams("padded half, then closed", &r);
}

#[test]
fn padding_of_a_response_unfinished_at_the_end_is_framing_of_an_unfinished_request() {
    let server = H2Server::start(Fault::PaddedHalf { close: false });
    let r = until_busy(
        ms(200),
        |window| run(&server, &pages_of_four(), Stop::Duration(window), |_| {}),
        |r| r.stats.bytes_unfinished > 0,
    );
    assert!(r.stats.bytes_unfinished > 0, "{:?}", r.stats);
    identities("padded half, in flight at the end", &r);
}

#[test]
fn after_a_warm_up_streams_are_counted_by_their_request_s_start_as_requests_are() {
    // A request begun in the warm-up and refused by a GOAWAY is sent again in the window: its
    // streams, its retry and its response all belong to the warm-up, as its response does.
    for (w, streams) in [(pages_of_four(), None), (one_file(), Some(8))] {
        for _ in 0..3 {
            let server = H2Server::start(Fault::GoawayAfter(2));
            let r = run(&server, &w, Stop::Duration(ms(200)), |c| {
                c.warmup = ms(100);
                c.streams = streams;
            });
            let s = &r.stats;
            let h = &s.http2;
            let accounted = s.requests + s.unfinished + h.retried + s.errors.total();
            assert!(
                accounted <= h.streams && h.streams <= accounted + s.unsent_at_end,
                "--streams {streams:?}: requests {}, unfinished {}, unsent {}, {h:?}",
                s.requests,
                s.unfinished,
                s.unsent_at_end
            );
        }
    }
}

#[test]
fn a_goaway_that_straddles_the_window_s_start_or_end_is_counted_once_or_not_at_all() {
    // Its frame header read on one side of the boundary, its payload on the other: the frame
    // and the GOAWAY are counted on the same side.
    let straddles = [
        (ms(100), ms(300), "start"), // header in the warm-up, payload in the window
        (ms(0), ms(100), "end"),     // header in the window, payload after it
    ];
    for (warmup, duration, boundary) in straddles {
        let server = H2Server::start(Fault::SplitGoaway(ms(200)));
        let r = run(&server, &one_file(), Stop::Duration(duration), |c| {
            c.warmup = warmup;
            c.concurrency = 1;
            c.threads = 1;
        });
        let h = &r.stats.http2;
        assert_eq!(
            h.frames_received[7], h.goaways,
            "across the {boundary}: {h:?}"
        );
    }
}

#[test]
fn frames_after_a_protocol_error_are_counted_as_what_they_say_is() {
    let server = H2Server::start(Fault::BrokenThenGoaway);
    let r = run(&server, &one_file(), Stop::Pages(4), |_| {});
    assert_eq!(r.stats.errors.total(), 4, "{:?}", r.stats.errors);
    identities("a protocol error, then RST_STREAM and GOAWAY", &r);
}

#[test]
fn streams_to_send_again_after_a_goaway_fail_when_the_server_is_gone() {
    // The GOAWAY's covered stream dies with the connection, the others wait to be sent again,
    // and the next connection is refused: they fail as connect_refused (not a reconnect loop
    // that counts nothing to the end of the run).
    let r = until_busy(
        ms(300),
        |window| {
            let server = H2Server::start(Fault::GoawayThenGone(1));
            run(&server, &pages_of_four(), Stop::Duration(window), |c| {
                c.concurrency = 1;
                c.threads = 1;
            })
        },
        |r| r.stats.errors.get(ErrorKind::ConnectRefused) >= 3,
    );
    let s = &r.stats;
    let h = &s.http2;
    assert_eq!(s.errors.get(ErrorKind::H2Goaway), 1, "{:?}", s.errors);
    assert!(
        s.errors.get(ErrorKind::ConnectRefused) >= 3,
        "{:?}",
        s.errors
    );
    // The streams: one failed with the connection, three refused by the GOAWAY.
    assert_eq!((h.streams, h.retried), (4, 3), "{h:?}");
    assert_eq!(s.requests + s.unfinished, 0);
}
