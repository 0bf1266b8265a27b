//! `--http 3` responses that break HTTP/3's message rules, from a server writing raw HTTP/3
//! frames (`quiche_server::RawServer`), each failed at once as the server's error
//! (`h3_protocol`), never counted as an answer nor left to the response timeout (a minute
//! here): a head after the final one (a trailer section with a pseudo-header, RFC 9114 4.3),
//! an uppercase field name (4.2), a `:status` outside 100 to 599 (RFC 9110 15), each a
//! malformed response whose stream alone fails (reset with H3_MESSAGE_ERROR, 4.1.2) on a
//! connection that goes on; DATA after the trailer section (4.1: frames out of order) closes
//! the connection with H3_FRAME_UNEXPECTED. Interim heads and trailers in their places are
//! answers like others.

use crate::quiche_server::{data, headers, RawServer};
use bench::stats::{ErrorKind, Stats};
use bench::Workload;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const PAGES: u64 = 4;
/// What a run may take: far below the response timeout (a minute), which a response left
/// waiting would add.
const BOUND: Duration = Duration::from_secs(30);

/// A run of [`PAGES`] one-file pages, one Webchild, against a server answering each request
/// with `answer`; its statistics and the closes the server heard.
fn run(answer: Vec<u8>) -> (Stats, Vec<Option<(bool, u64)>>) {
    let ca = TestCa::new("flint bench h3 malformed test CA");
    let server = RawServer::start(&ca, answer);
    let config = server.bench_config(&ca, PAGES, Duration::from_secs(60));
    let workload = Workload::from_paths(&["/".to_string()]).unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    // Every connection is closed by the run's end (bench closes what it kept): wait, bounded,
    // for the server to hear each close.
    let heard = || server.closes.lock().unwrap().clone();
    while heard().iter().any(Option::is_none) && started.elapsed() < BOUND {
        std::thread::sleep(Duration::from_millis(10));
    }
    (r.stats, heard())
}

/// Each page's response failed alone as the server's error, on the one connection.
fn each_stream_failed(s: &Stats) {
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), PAGES, "{:?}", s.errors);
    assert_eq!(s.errors.total(), PAGES, "{:?}", s.errors);
    assert_eq!(s.requests, 0, "none counted as an answer");
    assert_eq!(
        s.http3.connections, 1,
        "the connection goes on: {:?}",
        s.http3
    );
}

const LENGTH: (&[u8], &[u8]) = (b"content-length", b"10");

#[test]
fn a_second_final_head_is_a_malformed_trailer_section() {
    let answer = [
        headers(Some(b"200"), &[LENGTH]),
        headers(Some(b"200"), &[LENGTH]),
        data(10),
    ];
    each_stream_failed(&run(answer.concat()).0);
}

#[test]
fn an_uppercase_field_name_is_malformed() {
    let answer = [headers(Some(b"200"), &[LENGTH, (b"X-Up", b"1")]), data(10)];
    each_stream_failed(&run(answer.concat()).0);
}

#[test]
fn a_status_outside_100_to_599_is_malformed_not_a_5xx() {
    let (s, _) = run(headers(Some(b"999"), &[(b"content-length", b"0")]));
    assert_eq!(s.errors.get(ErrorKind::Status5xx), 0, "{:?}", s.errors);
    each_stream_failed(&s);
}

#[test]
fn data_after_the_trailer_section_closes_the_connection_at_once() {
    let answer = [
        headers(Some(b"200"), &[]),
        data(10),
        headers(None, &[(b"x-t", b"1")]),
        data(10),
    ];
    let (s, closes) = run(answer.concat());
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), PAGES, "{:?}", s.errors);
    assert_eq!(s.errors.total(), PAGES, "{:?}", s.errors);
    assert_eq!(s.requests, 0);
    // Each page's connection closed over it with H3_FRAME_UNEXPECTED, which the server heard.
    assert_eq!(s.http3.connections, PAGES, "{:?}", s.http3);
    assert_eq!(closes.len() as u64, PAGES, "{closes:?}");
    assert!(
        closes.iter().all(|c| *c == Some((true, 0x105))),
        "{closes:?}"
    );
}

#[test]
fn interim_heads_and_trailers_in_their_places_are_answers() {
    let answer = [
        headers(Some(b"103"), &[(b"link", b"</a>")]),
        headers(Some(b"200"), &[LENGTH]),
        data(10),
        headers(None, &[(b"x-t", b"1")]),
    ];
    let (s, _) = run(answer.concat());
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES);
    assert_eq!(s.bytes_body, PAGES * 10);
    assert_eq!(s.http3.connections, 1, "{:?}", s.http3);
}
