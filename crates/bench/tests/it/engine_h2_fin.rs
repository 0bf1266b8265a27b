//! Bytes that come with an event about something else, which edge-triggered epoll reports once:
//!
//! - a server's FIN that arrives with its last bytes, in one segment: the data and the close are
//!   one event. The HTTP/2 client must read on after that event's short read and see the end at
//!   once, failing the streams still in flight as the connection's close, never leaving them for
//!   the response timeout (a minute here, far above the test's bound);
//! - a server's SETTINGS, sent as soon as it accepts (as nginx and h2o do), that arrive before
//!   the client has seen its connect complete: the connect's event is also the SETTINGS' one,
//!   and the client must read them then, or wait for its SETTINGS timeout (in about one
//!   connection in eight before it did; the run makes dozens).

use crate::common;

use crate::raw_h2;

use bench::stats::ErrorKind;
use bench::{HttpMode, Stop};
use common::{config, one_file};
use raw_h2::{frame, head, start, ACK, END_HEADERS, END_STREAM, HEADERS, SETTINGS};
use socket2::SockRef;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Pages of the run: two per connection (each answers one of its two streams, then closes).
const PAGES: u64 = 80;
const BOUND: Duration = Duration::from_secs(20);

/// Reads until the client's two requests (HEADERS on streams 1 and 3) have come, or 5 s.
fn two_requests(conn: &mut TcpStream) -> bool {
    const PREFACE: usize = 24;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let until = Instant::now() + Duration::from_secs(5);
    while Instant::now() < until {
        match conn.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => {}
        }
        let (mut pos, mut heads) = (PREFACE, 0);
        while got.len() >= pos + 9 {
            let len = u32::from_be_bytes([0, got[pos], got[pos + 1], got[pos + 2]]) as usize;
            if got[pos + 3] == HEADERS {
                heads += 1;
            }
            pos += 9 + len;
        }
        if heads >= 2 {
            return true;
        }
    }
    false
}

/// Answers stream 1 and then, in the same segment (corked), ends the connection with a FIN;
/// stream 3 is never answered. The socket stays open for reading, so no RST follows.
fn serve(mut conn: TcpStream, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(20)));
    let mut out = Vec::new();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    if conn.write_all(&out).is_err() || !two_requests(&mut conn) {
        return;
    }
    out.clear();
    frame(&mut out, SETTINGS, ACK, 0, &[]);
    frame(&mut out, HEADERS, END_HEADERS | END_STREAM, 1, &head(0));
    let sock = SockRef::from(&conn);
    sock.set_tcp_cork(true).expect("TCP_CORK");
    conn.write_all(&out).expect("write");
    // The corked bytes leave with the FIN, one segment on loopback.
    conn.shutdown(Shutdown::Write).expect("shutdown");
    let mut sink = [0u8; 4096];
    let until = Instant::now() + BOUND;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        if let Ok(0) = conn.read(&mut sink) {
            return;
        }
    }
}

#[test]
fn settings_on_accept_and_a_fin_with_the_last_bytes_are_seen_at_once() {
    let server = start(serve);
    let mut cfg = config(server.addr, 1, Stop::Pages(PAGES));
    cfg.http = HttpMode::Http2;
    cfg.streams = Some(2);
    cfg.response_timeout = Duration::from_secs(60);
    let t0 = Instant::now();
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
    let took = t0.elapsed();
    assert!(took < BOUND, "took {took:?}: {:?}", r.stats.errors);
    assert_eq!(
        r.stats.errors.get(ErrorKind::ResponseTimeout),
        0,
        "{:?}",
        r.stats.errors
    );
    assert_eq!(
        r.stats.errors.get(ErrorKind::H2SettingsTimeout),
        0,
        "{:?}",
        r.stats.errors
    );
    assert!(r.stats.requests >= 1, "{:?}", r.stats.errors);
    assert!(
        r.stats.errors.get(ErrorKind::Reset) >= 1,
        "the unanswered streams fail as the connection's close: {:?}",
        r.stats.errors
    );
}
