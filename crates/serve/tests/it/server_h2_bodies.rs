//! HTTP/2 request bodies, stream by stream, with raw frames: a body that trickles past its
//! deadline resets its stream alone (the connection and the other streams go on), a large body
//! still arriving once its response is complete is stopped with RST_STREAM NO_ERROR, a small
//! one is read to its end; and a request with no authority at all.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common::{connect, TestServer, WAIT};
use crate::h2_support::raw;

/// Reads what is there within `wait` (nothing is fine) into `got`; panics if the server closed.
fn read_for(s: &mut TcpStream, got: &mut Vec<u8>, wait: Duration) {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut buf = vec![0; 1 << 16];
    match s.read(&mut buf) {
        Ok(0) => panic!("closed by the server: {:?}", raw::parse(got)),
        Ok(n) => got.extend_from_slice(&buf[..n]),
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted
            ) => {}
        Err(e) => panic!("read: {e}"),
    }
}

/// Reads until `done` holds for the frames, within `WAIT`.
fn read_until(s: &mut TcpStream, got: &mut Vec<u8>, done: impl Fn(&[raw::Frame]) -> bool) {
    let start = Instant::now();
    while !done(&raw::parse(got)) {
        assert!(
            start.elapsed() < WAIT,
            "not within {WAIT:?}: {:?}",
            raw::parse(got)
        );
        read_for(s, got, WAIT);
    }
}

fn reset_of(frames: &[raw::Frame], stream: u32) -> Option<u32> {
    (frames.iter())
        .find(|f| f.0 == raw::RST_STREAM && f.2 == stream)
        .map(|f| u32::from_be_bytes(f.3[..4].try_into().unwrap()))
}

fn answered(frames: &[raw::Frame], stream: u32) -> bool {
    (frames.iter()).any(|f| {
        (f.0 == raw::DATA || f.0 == raw::HEADERS) && f.2 == stream && f.1 & raw::END_STREAM != 0
    })
}

/// A POST of /a.txt with a body to follow, declaring `length` if given.
fn post(out: &mut Vec<u8>, stream: u32, length: Option<u64>) {
    let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
    raw::literal(&mut block, 4, b"/a.txt");
    raw::literal(&mut block, 1, b"localhost");
    if let Some(n) = length {
        raw::literal_name(&mut block, b"content-length", n.to_string().as_bytes());
    }
    raw::frame(out, raw::HEADERS, raw::END_HEADERS, stream, &block);
}

#[test]
fn a_body_trickling_past_its_deadline_resets_its_stream_alone() {
    // 400 ms, plus a second per 500 bytes: a byte every 50 ms earns 2 ms each.
    let srv = TestServer::start(|c| {
        c.body_timeout_ms = 400;
        c.body_min_rate = 500;
    });
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    post(&mut out, 1, None);
    post(&mut out, 3, Some(4));
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 3, b"done");
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    let start = Instant::now();
    // Stream 1's body trickles, a byte at a time, until the server resets it.
    while reset_of(&raw::parse(&got), 1).is_none() {
        assert!(start.elapsed() < WAIT, "no reset: {:?}", raw::parse(&got));
        let mut byte = Vec::new();
        raw::frame(&mut byte, raw::DATA, 0, 1, b"x");
        s.write_all(&byte).unwrap();
        read_for(&mut s, &mut got, Duration::from_millis(50));
    }
    // Not before its deadline (the gap between bytes was never near it: the rate was too low).
    assert!(
        start.elapsed() >= Duration::from_millis(400),
        "{:?}",
        start.elapsed()
    );
    let frames = raw::parse(&got);
    // Its response went out whole first: NO_ERROR, the client keeps it (RFC 9113 8.1).
    assert!(answered(&frames, 1), "{frames:?}");
    assert_eq!(reset_of(&frames, 1), Some(0), "{frames:?}");
    // The other stream was answered and ended normally, and the connection goes on.
    assert!(
        answered(&frames, 3) && reset_of(&frames, 3).is_none(),
        "{frames:?}"
    );
    let mut out = Vec::new();
    raw::get(&mut out, 5, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    read_until(&mut s, &mut got, |f| answered(f, 5));
    assert_eq!(raw::goaway_code(&raw::parse(&got)), None);
    let st = srv.stop();
    assert_eq!(st.body_timeouts, 1);
    assert_eq!(st.h2_resets_sent, 1);
}

/// The body's clock runs while a response waits for the client's window (the connection is
/// then in its send phase, yet reading): only a server that takes no input stops it.
#[test]
fn a_body_is_due_while_a_response_waits_for_the_window() {
    let srv = TestServer::start(|c| {
        c.body_timeout_ms = 400;
        c.body_min_rate = 500;
    });
    let mut s = connect(srv.addr);
    let mut out = raw::PREFACE.to_vec();
    raw::settings(&mut out, &[(4, 0)]); // SETTINGS_INITIAL_WINDOW_SIZE 0: no DATA may come
    post(&mut out, 1, None);
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    let start = Instant::now();
    while reset_of(&raw::parse(&got), 1).is_none() {
        assert!(start.elapsed() < WAIT, "no reset: {:?}", raw::parse(&got));
        let mut byte = Vec::new();
        raw::frame(&mut byte, raw::DATA, 0, 1, b"x");
        s.write_all(&byte).unwrap();
        read_for(&mut s, &mut got, Duration::from_millis(50));
    }
    let frames = raw::parse(&got);
    // The response never went out whole: CANCEL.
    assert!(!answered(&frames, 1), "{frames:?}");
    assert_eq!(reset_of(&frames, 1), Some(8), "{frames:?}");
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
    assert_eq!(srv.stop().body_timeouts, 1);
}

#[test]
fn a_large_body_after_a_complete_response_is_stopped_a_small_one_read() {
    let srv = TestServer::start(|_| {});
    let mut s = connect(srv.addr);
    let mut got = Vec::new();
    let mut out = raw::start();
    // Small: read to its end after the response, no reset.
    post(&mut out, 1, Some(10));
    s.write_all(&out).unwrap();
    read_until(&mut s, &mut got, |f| answered(f, 1));
    let mut out = Vec::new();
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 1, b"0123456789");
    // Large: the response is complete, the body goes on: RST_STREAM NO_ERROR once more comes.
    post(&mut out, 3, Some(1 << 20));
    s.write_all(&out).unwrap();
    read_until(&mut s, &mut got, |f| answered(f, 3));
    let mut out = Vec::new();
    raw::frame(&mut out, raw::DATA, 0, 3, &[b'x'; 1000]);
    s.write_all(&out).unwrap();
    read_until(&mut s, &mut got, |f| reset_of(f, 3).is_some());
    let frames = raw::parse(&got);
    assert_eq!(reset_of(&frames, 3), Some(0), "{frames:?}");
    assert_eq!(reset_of(&frames, 1), None, "{frames:?}");
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
    let st = srv.stop();
    assert_eq!(st.body_timeouts, 0);
}

/// A small body still arriving after its response, within its own deadline, keeps the
/// connection open: the idle timeout (shorter here) does not cut it.
#[test]
fn a_body_arriving_after_its_response_is_not_cut_by_the_idle_timeout() {
    let srv = TestServer::start(|c| {
        c.keepalive_timeout_ms = 300;
        c.body_timeout_ms = 8_000;
    });
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    post(&mut out, 1, Some(12));
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    read_until(&mut s, &mut got, |f| answered(f, 1));
    // A byte every 100 ms: over a second, several idle timeouts; far from the body's deadline.
    for i in 0..12 {
        let flags = if i == 11 { raw::END_STREAM } else { 0 };
        let mut byte = Vec::new();
        raw::frame(&mut byte, raw::DATA, flags, 1, b"x");
        s.write_all(&byte).unwrap();
        read_for(&mut s, &mut got, Duration::from_millis(100));
    }
    let mut out = Vec::new();
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    read_until(&mut s, &mut got, |f| answered(f, 3));
    let frames = raw::parse(&got);
    assert_eq!(reset_of(&frames, 1), None, "{frames:?}");
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
    assert_eq!(srv.stop().body_timeouts, 0);
}

#[test]
fn a_request_without_authority_or_host_ends_the_connection_one_with_host_is_answered() {
    let srv = TestServer::start(|_| {});
    let mut block = vec![0x82, 0x86]; // GET, http
    raw::literal(&mut block, 4, b"/a.txt");
    let flags = raw::END_HEADERS | raw::END_STREAM;
    // With `host` alone (RFC 9110 7.2 allows either): answered.
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let mut with_host = block.clone();
    raw::literal_name(&mut with_host, b"host", b"localhost");
    raw::frame(&mut out, raw::HEADERS, flags, 1, &with_host);
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    read_until(&mut s, &mut got, |f| answered(f, 1));
    let frames = raw::parse(&got);
    let data = frames
        .iter()
        .find(|f| f.0 == raw::DATA && f.2 == 1)
        .expect("answered");
    assert_eq!(data.3, b"hello", "{frames:?}");
    // With neither: nghttp2 takes the request for malformed (RFC 9113 8.1.1) and ends the
    // connection with PROTOCOL_ERROR (5.4.1 allows a stream error to be a connection error).
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::frame(&mut out, raw::HEADERS, flags, 1, &block);
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    let start = Instant::now();
    let mut buf = vec![0; 1 << 16];
    while raw::goaway_code(&raw::parse(&got)).is_none() && start.elapsed() < WAIT {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let frames = raw::parse(&got);
    assert_eq!(raw::goaway_code(&frames), Some(1), "{frames:?}");
    assert!(!frames.iter().any(|f| f.0 == raw::DATA), "{frames:?}");
    srv.stop();
}
