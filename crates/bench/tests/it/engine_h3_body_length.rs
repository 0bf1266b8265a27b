//! `--http 3` responses whose DATA is not the body their `content-length` announces (RFC 9114
//! 4.1.2: malformed), from a server writing raw HTTP/3 frames (`quiche_server::RawServer`):
//! one ended short fails as `short_body`, one that goes past it as `h3_protocol` (its stream
//! reset with H3_MESSAGE_ERROR), each at once and alone, the connection kept, as over HTTP/1.1
//! and HTTP/2; never a response counted whole. A body in several DATA frames that adds up is
//! whole, and a HEAD, a 204 and a 304 carry a `content-length` and no body.

use crate::quiche_server::{data, headers, RawServer};
use bench::stats::ErrorKind;
use bench::{RequestSpec, RunResult, Workload};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const PAGES: u64 = 4;
/// What a run may take: far below the response timeout (a minute), which a response left
/// waiting would add.
const BOUND: Duration = Duration::from_secs(30);

/// A run of [`PAGES`] one-file pages, one Webchild, against a server answering each request
/// with `answer`; `method` for the request.
fn run(answer: Vec<u8>, method: &str) -> RunResult {
    let ca = TestCa::new("flint bench h3 body length test CA");
    let server = RawServer::start(&ca, answer);
    let config = server.bench_config(&ca, PAGES, Duration::from_secs(60));
    let spec = RequestSpec {
        method: Some(method.into()),
        ..RequestSpec::default()
    };
    let workload = Workload::from_paths(&["/".to_string()])
        .unwrap()
        .with_defaults(&spec)
        .unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    r
}

/// `:status` and a `content-length` of `length`.
fn head(status: &[u8], length: usize) -> Vec<u8> {
    headers(
        Some(status),
        &[(b"content-length", length.to_string().as_bytes())],
    )
}

#[test]
fn a_body_short_of_its_content_length_fails_as_a_short_body() {
    let r = run([head(b"200", 2000), data(1000)].concat(), "GET");
    let s = &r.stats;
    assert_eq!(s.errors.get(ErrorKind::ShortBody), PAGES, "{:?}", s.errors);
    assert_eq!(s.errors.total(), PAGES, "{:?}", s.errors);
    assert_eq!(s.requests, 0, "none counted whole");
    assert_eq!(s.bytes_body, 0);
    // The stream alone failed: the connection went on.
    assert_eq!(s.http3.connections, 1, "{:?}", s.http3);
}

#[test]
fn a_body_past_its_content_length_fails_as_the_servers_protocol_error() {
    let r = run([head(b"200", 500), data(1000)].concat(), "GET");
    let s = &r.stats;
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), PAGES, "{:?}", s.errors);
    assert_eq!(s.errors.total(), PAGES, "{:?}", s.errors);
    assert_eq!(s.requests, 0, "none counted whole");
    assert_eq!(s.bytes_body, 0);
    assert_eq!(s.http3.connections, 1, "{:?}", s.http3);
}

#[test]
fn a_body_in_several_data_frames_that_adds_up_is_whole() {
    let r = run([head(b"200", 1000), data(600), data(400)].concat(), "GET");
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, PAGES);
    assert_eq!(s.bytes_body, PAGES * 1000);
}

#[test]
fn a_head_a_204_and_a_304_carry_a_content_length_and_no_body() {
    for (status, method) in [(&b"200"[..], "HEAD"), (b"204", "GET"), (b"304", "GET")] {
        let r = run(head(status, 1000), method);
        let s = &r.stats;
        let what = String::from_utf8_lossy(status);
        assert_eq!(s.errors.total(), 0, "{what} {method}: {:?}", s.errors);
        assert_eq!(s.requests, PAGES, "{what} {method}");
        assert_eq!(s.bytes_body, 0, "{what} {method}");
    }
    // A HEAD's response with a body after all is past what it announced.
    let r = run([head(b"200", 1000), data(1000)].concat(), "HEAD");
    let s = &r.stats;
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), PAGES, "{:?}", s.errors);
    assert_eq!(s.errors.total(), PAGES, "{:?}", s.errors);
}
