//! A response whose DATA ends (END_STREAM) short of its `content-length`: a malformed response
//! (RFC 9113 8.1.1), over which nghttp2 ends the connection (GOAWAY PROTOCOL_ERROR). It must
//! fail at once as a short body, the streams in flight with it as the connection's protocol
//! error, and the run go on over a new connection; nothing may wait for the response timeout
//! (a minute here).

use crate::common;

use crate::raw_h2;

use bench::stats::ErrorKind;
use bench::{HttpMode, Stop};
use common::{config, one_file};
use raw_h2::{frame, head, start, ACK, DATA, END_HEADERS, END_STREAM, HEADERS, SETTINGS};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

const PAGES: u64 = 40;
const BOUND: Duration = Duration::from_secs(20);

/// Answers every request with `abc`; the second of each connection (stream 3) announces 10
/// bytes.
fn serve(mut conn: TcpStream, stop: &AtomicBool) {
    let _ = conn.set_read_timeout(Some(Duration::from_millis(20)));
    let mut out = Vec::new();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    if conn.write_all(&out).is_err() {
        return;
    }
    let (mut got, mut pos) = (Vec::new(), 24);
    let mut buf = [0u8; 16384];
    let until = Instant::now() + BOUND;
    while !stop.load(Ordering::Relaxed) && Instant::now() < until {
        match conn.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(_) => continue,
        }
        out.clear();
        while got.len() >= pos + 9 {
            let len = u32::from_be_bytes([0, got[pos], got[pos + 1], got[pos + 2]]) as usize;
            if got.len() < pos + 9 + len {
                break;
            }
            let (ty, flags) = (got[pos + 3], got[pos + 4]);
            let id = u32::from_be_bytes(got[pos + 5..pos + 9].try_into().unwrap()) & 0x7fff_ffff;
            if ty == SETTINGS && flags & ACK == 0 {
                frame(&mut out, SETTINGS, ACK, 0, &[]);
            } else if ty == HEADERS {
                let announced = if id == 3 { 10 } else { 3 };
                frame(&mut out, HEADERS, END_HEADERS, id, &head(announced));
                frame(&mut out, DATA, END_STREAM, id, b"abc");
            }
            pos += 9 + len;
        }
        if !out.is_empty() && conn.write_all(&out).is_err() {
            return;
        }
    }
}

#[test]
fn a_body_short_of_its_content_length_fails_at_once_as_a_short_body() {
    let server = start(serve);
    for streams in [1u32, 4] {
        let mut cfg = config(server.addr, 1, Stop::Pages(PAGES));
        cfg.http = HttpMode::Http2;
        cfg.streams = Some(streams);
        cfg.response_timeout = Duration::from_secs(60);
        let t0 = Instant::now();
        let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
        let (took, e) = (t0.elapsed(), &r.stats.errors);
        assert!(took < BOUND, "--streams {streams}: took {took:?}: {e:?}");
        assert_eq!(e.get(ErrorKind::ResponseTimeout), 0, "{streams}: {e:?}");
        // One short body per connection (the last may have ended before its second stream).
        let short = e.get(ErrorKind::ShortBody);
        let connections = r.stats.http2.connections;
        assert!(
            short + 1 >= connections && short <= connections,
            "{streams}: {e:?}"
        );
        assert!(short >= 2, "{streams}: {e:?}");
        // Those in flight with it fail with the connection; nothing else does.
        let with_it = e.get(ErrorKind::H2Protocol);
        assert!(
            with_it <= short * u64::from(streams - 1),
            "{streams}: {e:?}"
        );
        assert_eq!(e.total(), short + with_it, "{streams}: {e:?}");
        assert!(r.stats.requests >= short, "{streams}: {e:?}");
    }
}
