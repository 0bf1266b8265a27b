//! HTTP/2 downloads with the socket's receive low-water mark (transport/low_water.rs): it is set
//! from the bytes a `content-length` announces, so a server that breaks its word must never
//! leave a response waiting for bytes that will not come. A server written frame by frame (it
//! keeps HTTP/2's flow control) announces large bodies and then resets the stream mid-body,
//! ends it short, mixes in tiny responses, or pauses; every run must end as fast as the server
//! answered, never by the response timeout (set to a minute here, so a single wait for
//! it would fail the test's bound).

use crate::common;
use crate::raw_h2;

use bench::config::TlsOptions;
use bench::stats::ErrorKind;
use bench::{HttpMode, RunResult, Stop, Target};
use common::{config, one_file};
use raw_h2::{frame, head, RawServer, ACK, DATA, END_HEADERS, END_STREAM, HEADERS, PING};
use raw_h2::{RST_STREAM, SETTINGS, WINDOW_UPDATE};
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// The announced body of the large responses.
const BIG: usize = 1 << 20;
/// The pages of each run (two Webchildren, so half as many one after the other on each).
const PAGES: u64 = 16;
/// What a run may take: far below what one response timeout (a minute) would add.
const BOUND: Duration = Duration::from_secs(10);

/// What the server does with each response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Plan {
    /// The whole announced body.
    Whole,
    /// Announces `BIG`, sends 600 KiB, then RST_STREAM (INTERNAL_ERROR).
    ResetMidBody,
    /// Announces `BIG`, sends 600 KiB, then closes the connection.
    ShortBody,
    /// Odd responses of a connection `BIG`, even ones 10 bytes.
    TinyEveryOther,
    /// Announces `BIG`, sends 600 KiB, pauses `PAUSE`, then the rest.
    Pause,
}

const PAUSE: Duration = Duration::from_millis(40);
const CUT: usize = 600 * 1024;

fn start(plan: Plan, tls: Option<Arc<rustls::ServerConfig>>) -> RawServer {
    raw_h2::start(move |conn: TcpStream, stop: &AtomicBool| {
        let _ = conn.set_read_timeout(Some(Duration::from_millis(2)));
        let _ = conn.set_nodelay(true);
        let _ = match tls.clone() {
            None => serve(conn, plan, stop),
            Some(cfg) => match rustls::ServerConnection::new(cfg) {
                Ok(t) => handshake(t, conn, stop).and_then(|s| serve(s, plan, stop)),
                Err(_) => Ok(()),
            },
        };
    })
}

/// The TLS handshake, done before `serve` writes its SETTINGS: a write while still handshaking
/// reads the ClientHello under the 2 ms read timeout, and fails the connection (the client saw
/// `tls_reset`) when a busy machine has not yet let the client send it. Waits as long as the
/// server runs, as `serve` does.
fn handshake(
    mut tls: rustls::ServerConnection,
    mut conn: TcpStream,
    stop: &AtomicBool,
) -> io::Result<rustls::StreamOwned<rustls::ServerConnection, TcpStream>> {
    while tls.is_handshaking() && !stop.load(Ordering::Relaxed) {
        match tls.complete_io(&mut conn) {
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(rustls::StreamOwned::new(tls, conn))
}

/// A response being sent: what is left of it before its cut (or end), and what then.
struct Sending {
    stream: u32,
    left: usize,
    /// Stream window the client gave.
    window: i64,
    last: Last,
    /// Pause before the rest (`Plan::Pause`): bytes still to send after it.
    after_pause: usize,
}

#[derive(Clone, Copy, PartialEq)]
enum Last {
    EndStream,
    Reset,
    Close,
}

fn serve<S: Read + Write>(mut conn: S, plan: Plan, stop: &AtomicBool) -> io::Result<()> {
    let mut inbuf = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    let mut out = Vec::new();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    conn.write_all(&out)?;
    let (mut conn_window, mut initial): (i64, i64) = (65_535, 65_535);
    let mut sending: Vec<Sending> = Vec::new();
    let mut answered = 0u64;
    let body = vec![b'x'; 16 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match conn.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => inbuf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(e),
        }
        let mut out = Vec::new();
        // Complete frames (after the client's 24-byte preface).
        let mut pos = if inbuf.starts_with(b"PRI ") && inbuf.len() >= 24 {
            24
        } else if inbuf.starts_with(b"PRI ") {
            continue;
        } else {
            0
        };
        while inbuf.len() >= pos + 9 {
            let len = u32::from_be_bytes([0, inbuf[pos], inbuf[pos + 1], inbuf[pos + 2]]) as usize;
            if inbuf.len() < pos + 9 + len {
                break;
            }
            let (ty, flags) = (inbuf[pos + 3], inbuf[pos + 4]);
            let id = u32::from_be_bytes(inbuf[pos + 5..pos + 9].try_into().unwrap()) & 0x7fff_ffff;
            let p = &inbuf[pos + 9..pos + 9 + len];
            match ty {
                SETTINGS if flags & ACK == 0 => {
                    for s in p.chunks_exact(6) {
                        if u16::from_be_bytes([s[0], s[1]]) == 4 {
                            let v = i64::from(u32::from_be_bytes([s[2], s[3], s[4], s[5]]));
                            sending.iter_mut().for_each(|r| r.window += v - initial);
                            initial = v;
                        }
                    }
                    frame(&mut out, SETTINGS, ACK, 0, &[]);
                }
                PING if flags & ACK == 0 => frame(&mut out, PING, ACK, 0, p),
                WINDOW_UPDATE if len == 4 => {
                    let inc = i64::from(u32::from_be_bytes(p.try_into().unwrap()) & 0x7fff_ffff);
                    if id == 0 {
                        conn_window += inc;
                    } else if let Some(r) = sending.iter_mut().find(|r| r.stream == id) {
                        r.window += inc;
                    }
                }
                HEADERS if flags & END_STREAM != 0 => {
                    answered += 1;
                    let tiny = plan == Plan::TinyEveryOther && answered.is_multiple_of(2);
                    let length = if tiny { 10 } else { BIG };
                    frame(&mut out, HEADERS, END_HEADERS, id, &head(length));
                    let (left, last, after_pause) = match plan {
                        Plan::ResetMidBody => (CUT, Last::Reset, 0),
                        Plan::ShortBody => (CUT, Last::Close, 0),
                        Plan::Pause => (CUT, Last::EndStream, BIG - CUT),
                        Plan::Whole | Plan::TinyEveryOther => (length, Last::EndStream, 0),
                    };
                    sending.push(Sending {
                        stream: id,
                        left,
                        window: initial,
                        last,
                        after_pause,
                    });
                }
                _ => {}
            }
            pos += 9 + len;
        }
        inbuf.drain(..pos);
        // Body frames, as far as the windows allow.
        for r in &mut sending {
            while r.left > 0 && r.window > 0 && conn_window > 0 {
                let n = r
                    .left
                    .min(body.len())
                    .min(r.window.min(conn_window) as usize);
                r.left -= n;
                r.window -= n as i64;
                conn_window -= n as i64;
                let end = r.left == 0 && r.after_pause == 0 && r.last == Last::EndStream;
                frame(
                    &mut out,
                    DATA,
                    if end { END_STREAM } else { 0 },
                    r.stream,
                    &body[..n],
                );
            }
            if r.left == 0 && r.after_pause == 0 && r.last == Last::Reset {
                frame(&mut out, RST_STREAM, 0, r.stream, &2u32.to_be_bytes());
            }
        }
        if !out.is_empty() {
            conn.write_all(&out)?;
            conn.flush()?;
        }
        if sending.iter().any(|r| r.left == 0 && r.last == Last::Close) {
            return Ok(()); // the connection closes
        }
        for r in &mut sending {
            if r.left == 0 && r.after_pause > 0 {
                thread::sleep(PAUSE);
                r.left = std::mem::take(&mut r.after_pause);
            }
        }
        sending.retain(|r| r.left > 0);
    }
    Ok(())
}

/// `PAGES` pages of one file over `--http 2` (TLS with `tls`), with a response timeout of a
/// minute; asserts the run took less than `BOUND`.
fn run(
    server: &RawServer,
    tls: Option<&TestCa>,
    tweak: impl FnOnce(&mut bench::BenchConfig),
) -> RunResult {
    let mut cfg = config(server.addr, 2, Stop::Pages(PAGES));
    cfg.http = HttpMode::Http2;
    cfg.response_timeout = Duration::from_secs(60);
    if let Some(ca) = tls {
        cfg.target = Target::https(server.addr, "localhost");
        cfg.tls = TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        };
    }
    tweak(&mut cfg);
    let t0 = Instant::now();
    let r = bench::run(&cfg, &one_file(), &AtomicBool::new(false)).expect("run");
    assert!(t0.elapsed() < BOUND, "took {:?}", t0.elapsed());
    r
}

/// Each case over cleartext and over TLS.
fn both(plan: Plan, check: impl Fn(&RunResult, &str)) {
    let r = run(&start(plan, None), None, |_| {});
    check(&r, "h2c");
    let ca = TestCa::new("flint test CA");
    let mut tls = (*ca.leaf().server_config()).clone();
    tls.alpn_protocols = vec![b"h2".to_vec()];
    let server = start(plan, Some(Arc::new(tls)));
    let r = run(&server, Some(&ca), |_| {});
    check(&r, "TLS");
}

#[test]
fn whole_large_bodies_all_arrive() {
    both(Plan::Whole, |r, how| {
        assert_eq!(r.stats.errors.total(), 0, "{how}: {:?}", r.stats.errors);
        assert_eq!(r.stats.requests, PAGES, "{how}");
        assert_eq!(r.stats.bytes_body, PAGES * BIG as u64, "{how}");
    });
}

#[test]
fn a_stream_reset_mid_body_is_seen_without_waiting_for_the_rest() {
    both(Plan::ResetMidBody, |r, how| {
        assert_eq!(
            r.stats.errors.get(ErrorKind::H2RstStream),
            PAGES,
            "{how}: {:?}",
            r.stats.errors
        );
        assert_eq!(r.stats.errors.total(), PAGES, "{how}");
    });
}

#[test]
fn a_connection_closed_mid_body_ends_without_waiting_for_the_rest() {
    both(Plan::ShortBody, |r, how| {
        assert_eq!(r.stats.requests, 0, "{how}");
        assert_eq!(r.stats.errors.total(), PAGES, "{how}: {:?}", r.stats.errors);
    });
}

#[test]
fn tiny_responses_between_large_ones_are_not_held() {
    both(Plan::TinyEveryOther, |r, how| {
        assert_eq!(r.stats.errors.total(), 0, "{how}: {:?}", r.stats.errors);
        assert_eq!(r.stats.requests, PAGES, "{how}");
    });
}

#[test]
fn a_server_that_pauses_mid_body_is_read_when_it_goes_on() {
    both(Plan::Pause, |r, how| {
        assert_eq!(r.stats.errors.total(), 0, "{how}: {:?}", r.stats.errors);
        assert_eq!(r.stats.requests, PAGES, "{how}");
        assert_eq!(r.stats.bytes_body, PAGES * BIG as u64, "{how}");
    });
}

#[test]
fn a_small_receive_window_never_holds_the_body() {
    // The mark stays below half the window: the server can always send that much before our
    // WINDOW_UPDATE.
    for window in [65_535, 128 * 1024, 300 * 1024] {
        let server = start(Plan::Whole, None);
        let r = run(&server, None, |c| c.h2_window = Some(window));
        assert_eq!(r.stats.errors.total(), 0, "{window}: {:?}", r.stats.errors);
        assert_eq!(r.stats.bytes_body, PAGES * BIG as u64, "{window}");
    }
}
