//! HTTP/2 frame rules that the framing's own checks enforce (see the `http2` crate's
//! `checks.rs`), end to end against the server with raw frames: a HEADERS on a skipped stream
//! id, PRIORITY on stream 0 or on itself, a stream window past 2^31-1.

use std::io::Write;

use crate::common::{connect, TestServer};
use crate::h2_support::raw;

/// Writes `out` on a new connection and reads until the GOAWAY; returns its code.
fn goaway_for(srv: &TestServer, out: &[u8]) -> Option<u32> {
    let mut s = connect(srv.addr);
    s.write_all(out).unwrap();
    raw::goaway_code(&raw::read_until(&mut s, |f| raw::goaway_code(f).is_some()))
}

#[test]
fn a_headers_on_a_skipped_stream_id_is_a_connection_error() {
    let srv = TestServer::start(|_| {});
    // RFC 9113 5.1.1: 3 was skipped (closed) when 5 opened; opening it now is PROTOCOL_ERROR.
    let mut out = raw::start();
    raw::get(&mut out, 5, "/a.txt", raw::END_STREAM);
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    assert_eq!(goaway_for(&srv, &out), Some(1));
    // A DATA on it: the stream is closed, STREAM_CLOSED (6.1).
    let mut out = raw::start();
    raw::get(&mut out, 5, "/a.txt", 0);
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 3, b"late");
    assert_eq!(goaway_for(&srv, &out), Some(5));
    srv.stop();
}

#[test]
fn priority_on_stream_zero_or_on_itself_is_a_connection_error() {
    let srv = TestServer::start(|_| {});
    for (stream, dependency) in [(0u32, 1u32), (1, 1)] {
        let mut out = raw::start();
        let mut payload = dependency.to_be_bytes().to_vec();
        payload.push(255);
        raw::frame(&mut out, raw::PRIORITY, 0, stream, &payload);
        assert_eq!(goaway_for(&srv, &out), Some(1), "PRIORITY on {stream}");
    }
    // A valid PRIORITY (deprecated, ignored) changes nothing: the request is answered.
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::frame(&mut out, raw::PRIORITY, 0, 1, &[0, 0, 0, 3, 15]);
    raw::get(&mut out, 1, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let frames = raw::read_until(&mut s, |f| f.iter().any(|f| f.0 == raw::DATA && f.2 == 1));
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
    srv.stop();
}

#[test]
fn a_stream_window_past_the_maximum_resets_that_stream_alone() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::get(&mut out, 1, "/a.txt", 0);
    let max = i32::MAX as u32;
    raw::frame(&mut out, raw::WINDOW_UPDATE, 0, 1, &max.to_be_bytes());
    raw::frame(&mut out, raw::WINDOW_UPDATE, 0, 1, &max.to_be_bytes());
    s.write_all(&out).unwrap();
    let frames = raw::read_until(&mut s, |f| f.iter().any(|f| f.0 == raw::RST_STREAM));
    let reset = frames
        .iter()
        .find(|f| f.0 == raw::RST_STREAM)
        .expect("RST_STREAM");
    assert_eq!(
        (reset.2, &reset.3[..]),
        (1, &3u32.to_be_bytes()[..]),
        "{frames:?}"
    );
    // The connection goes on: the next stream is answered.
    let mut out = Vec::new();
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let frames = raw::read_until(&mut s, |f| {
        f.iter()
            .any(|f| f.0 == raw::DATA && f.2 == 3 && f.1 & raw::END_STREAM != 0)
    });
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
    assert!(
        frames.iter().any(|f| f.0 == raw::DATA && f.2 == 3),
        "{frames:?}"
    );
    srv.stop();
}
