//! A request body that trickles (a byte every 50 ms: never a gap long enough for a timeout
//! between bytes) is cut at its deadline: `body_timeout_ms` from its start plus a second per
//! `body_min_rate` bytes received. Below the rate, the deadline comes.

use std::io::{BufReader, Write};
use std::time::{Duration, Instant};

use crate::common::*;

#[test]
fn a_body_at_one_byte_per_interval_is_cut_at_its_deadline() {
    // 500 ms, plus a second per 100 bytes: at 20 bytes a second the deadline comes at about
    // 0.625 s (0.5 + t/5 = t), the gap (50 ms) never.
    let srv = TestServer::start(|c| {
        c.body_timeout_ms = 500;
        c.body_min_rate = 100;
        c.header_timeout_ms = 60_000;
        c.keepalive_timeout_ms = 60_000;
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    let start = Instant::now();
    let mut sent = 0;
    while srv.stats().body_timeouts == 0 {
        assert!(
            start.elapsed() < 2 * WAIT,
            "a body trickling at 20 B/s still read after {:?} ({sent} bytes)",
            start.elapsed()
        );
        if s.write_all(b"x").is_err() {
            break;
        }
        sent += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert!(closed_by_peer(&mut r));
    let st = srv.stop();
    assert_eq!((st.body_timeouts, st.header_timeouts), (1, 0), "{st:?}");
}

/// A body that keeps to the rate is read to its end, however long that takes beyond the timeout.
#[test]
fn a_body_above_the_rate_is_read_past_the_timeout() {
    let srv = TestServer::start(|c| {
        // The gap allowed between bytes is the timeout: 2 s against 100 ms pauses, so a loaded
        // machine stretching a pause many times over cannot trip it.
        c.body_timeout_ms = 2_000;
        c.body_min_rate = 100;
    });
    let mut s = connect(srv.addr);
    s.write_all(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 1200\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s.try_clone().unwrap());
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    // 40 bytes every 100 ms: 400 B/s, four times the rate, for 3 s (past the 2 s).
    for _ in 0..30 {
        s.write_all(&[b'x'; 40]).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    s.write_all(get("/a.txt").as_bytes()).unwrap();
    assert_eq!(read_response(&mut r, false).unwrap().status, 200);
    let st = srv.stop();
    assert_eq!((st.body_timeouts, st.requests), (0, 2), "{st:?}");
}
