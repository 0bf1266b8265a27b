//! The published HTTP/2 attacks, each run against the server with raw frames: the connection
//! ends as it should (GOAWAY with the code that says why, or a close once the client stops
//! reading), the server's memory stays bounded, and another client is served meanwhile by the
//! same (single) event-loop thread.
//!
//! Rapid reset (CVE-2023-44487), CONTINUATION flood (CVE-2024-27316), the HPACK bomb, and
//! the 2019 family: data dribble (CVE-2019-9511), ping flood (9512), resource loop (9513),
//! reset flood (9514), settings flood (9515), 0-length headers leak (9516), internal data
//! buffering (9517), empty frames flood (9518).

mod common;
mod h2_support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{connect, TestServer};
use h2_support::raw::{self, Frame};
use h2_support::Client;

/// Resident memory may grow by at most this during an attack (the test process holds the
/// server; the files served are at most 4 MiB and never read whole).
const MEMORY_BOUND: u64 = 64 << 20;
/// How long an attack may take to be ended.
const END_WITHIN: Duration = Duration::from_secs(15);

const ENHANCE_YOUR_CALM: u32 = 0xb;
const INTERNAL_ERROR: u32 = 0x2;
const PROTOCOL_ERROR: u32 = 0x1;

/// One attack at a time: resident memory is the process's, and the tests share the process.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

/// What the attacker saw.
#[derive(Debug)]
struct Outcome {
    frames: Vec<Frame>,
    /// The server closed the connection.
    closed: bool,
}

impl Outcome {
    fn goaway(&self) -> Option<u32> {
        raw::goaway_code(&self.frames)
    }

    fn resets(&self) -> usize {
        self.frames
            .iter()
            .filter(|f| f.0 == raw::RST_STREAM)
            .count()
    }
}

/// Runs `attack` (which writes frames until told to stop or the socket refuses them) on one
/// connection; reads what comes back if `read`, else reads nothing until the attack is over
/// (the slow-reader attacks). Meanwhile a second client must be served. Returns once the
/// server closed the connection or `END_WITHIN` passed.
fn run(
    srv: &TestServer,
    read: bool,
    attack: impl FnOnce(&mut TcpStream, &AtomicBool) + Send,
) -> Outcome {
    let _alone = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let before = rss();
    let mut sock = connect(srv.addr);
    sock.set_write_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut writer = sock.try_clone().unwrap();
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let outcome = std::thread::scope(|s| {
        let stop = &stop;
        let attacker = s.spawn(move || attack(&mut writer, stop));
        // Another client, on the same server thread, while the attack runs.
        let mut other = Client::new(connect(srv.addr), "localhost");
        let r = other.get("/1k.bin", &[]);
        assert_eq!(
            r.status, 200,
            "another client was not served during the attack"
        );
        if !read {
            // The slow reader: nothing read until the server gives up on it.
            while start.elapsed() < END_WITHIN && !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                if srv.stats().closed > 1 {
                    break;
                }
            }
        }
        let mut got = Vec::new();
        let mut buf = vec![0; 1 << 16];
        sock.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let closed = loop {
            match sock.read(&mut buf) {
                Ok(0) => break true,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => break true,
            }
            if start.elapsed() > END_WITHIN {
                break false;
            }
        };
        stop.store(true, Ordering::Relaxed);
        attacker.join().unwrap();
        Outcome {
            frames: raw::parse(&got),
            closed,
        }
    });
    let grew = rss().saturating_sub(before);
    eprintln!(
        "GOAWAY {:?}, {} resets, closed {}, after {:?}, memory +{} KiB",
        outcome.goaway(),
        outcome.resets(),
        outcome.closed,
        start.elapsed(),
        grew >> 10
    );
    assert!(
        grew < MEMORY_BOUND,
        "memory grew by {grew} bytes during the attack"
    );
    outcome
}

/// Writes `frames` over and over until stopped or the socket stops taking them.
fn repeat(
    sock: &mut TcpStream,
    stop: &AtomicBool,
    first: &[u8],
    mut next: impl FnMut(u32) -> Vec<u8>,
) {
    if sock.write_all(first).is_err() {
        return;
    }
    for round in 0.. {
        if stop.load(Ordering::Relaxed) || sock.write_all(&next(round)).is_err() {
            return;
        }
    }
}

fn server() -> TestServer {
    TestServer::start(|c| {
        c.send_timeout_ms = 2000;
        c.keepalive_timeout_ms = 5000;
    })
}

#[test]
fn rapid_reset_ends_with_goaway() {
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        let block = raw::get_block("/1k.bin", "localhost");
        repeat(s, stop, &raw::start(), |round| {
            let mut out = Vec::new();
            for i in 0..100 {
                let id = 1 + 2 * (round * 100 + i);
                raw::frame(
                    &mut out,
                    raw::HEADERS,
                    raw::END_HEADERS | raw::END_STREAM,
                    id,
                    &block,
                );
                raw::frame(&mut out, raw::RST_STREAM, 0, id, &8u32.to_be_bytes());
            }
            out
        })
    });
    assert_eq!(
        o.goaway(),
        Some(INTERNAL_ERROR),
        "nghttp2's rapid-reset limit: {o:?}"
    );
    assert!(o.closed);
    assert!(srv.stats().h2_resets_received > 0);
}

#[test]
fn continuation_flood_ends_with_goaway() {
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        let mut first = raw::start();
        let block = raw::get_block("/1k.bin", "localhost");
        raw::frame(&mut first, raw::HEADERS, raw::END_STREAM, 1, &block);
        repeat(s, stop, &first, |_| {
            let mut out = Vec::new();
            let mut piece = Vec::new();
            raw::literal_name(&mut piece, b"x-flood", &[b'a'; 100]);
            raw::frame(&mut out, raw::CONTINUATION, 0, 1, &piece);
            out
        })
    });
    assert_eq!(o.goaway(), Some(ENHANCE_YOUR_CALM), "{o:?}");
    assert!(o.closed);
}

#[test]
fn hpack_bomb_ends_the_connection_at_the_first_block() {
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        // One 4000-byte field into the dynamic table (literal with incremental indexing), then
        // the one-byte reference to it (index 62) thousands of times in each request.
        let mut first = raw::start();
        let mut block = raw::get_block("/1k.bin", "localhost");
        block.push(0x40);
        raw::int7(&mut block, 6);
        block.extend_from_slice(b"x-bomb");
        raw::int7(&mut block, 4000);
        block.extend_from_slice(&[b'b'; 4000]);
        raw::frame(
            &mut first,
            raw::HEADERS,
            raw::END_HEADERS | raw::END_STREAM,
            1,
            &block,
        );
        repeat(s, stop, &first, |round| {
            let mut block = raw::get_block("/1k.bin", "localhost");
            block.extend(std::iter::repeat_n(0xbe, 8000)); // indexed field 62
            let mut out = Vec::new();
            if round < 200 {
                raw::frame(
                    &mut out,
                    raw::HEADERS,
                    raw::END_HEADERS | raw::END_STREAM,
                    3 + 2 * round,
                    &block,
                );
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
            out
        })
    });
    // 8000 references of 4 KB: 32 MB of header list from 8 KB. Decoding stops at the field
    // past the decoding bound (four times the largest request HTTP/1.1 takes) and the
    // connection ends there, at the first bomb: the frames sent after it are not decoded (no
    // stream of theirs begins).
    assert_eq!(o.goaway(), Some(ENHANCE_YOUR_CALM), "{o:?}");
    assert!(o.closed, "{o:?}");
    assert_eq!(o.resets(), 0, "{o:?}");
    let streams = srv.stats().h2_streams;
    assert!(
        streams <= 3,
        "{streams} streams begun: the table's, the bomb's, the other client's"
    );
}

#[test]
fn ping_flood_from_a_client_that_does_not_read_is_cut() {
    // CVE-2019-9512: PINGs whose ACKs the client never reads. The ACKs queue up to
    // max_pipeline_bytes, then nothing more is read from the client, and it is cut at the send
    // timeout (or by nghttp2's bound on queued ACKs: GOAWAY ENHANCE_YOUR_CALM).
    let srv = server();
    let o = run(&srv, false, |s, stop| {
        repeat(s, stop, &raw::start(), |_| {
            let mut out = Vec::new();
            for _ in 0..100 {
                raw::frame(&mut out, raw::PING, 0, 0, &[7; 8]);
            }
            out
        })
    });
    assert!(o.closed, "{o:?}");
    assert!(o.goaway().is_none_or(|c| c == ENHANCE_YOUR_CALM));
}

#[test]
fn settings_flood_from_a_client_that_does_not_read_is_cut() {
    let srv = server();
    let o = run(&srv, false, |s, stop| {
        repeat(s, stop, &raw::start(), |_| {
            let mut out = Vec::new();
            for _ in 0..100 {
                raw::settings(&mut out, &[(4, 65535)]);
            }
            out
        })
    });
    assert!(o.closed, "{o:?}");
    assert!(o.goaway().is_none_or(|c| c == ENHANCE_YOUR_CALM));
}

#[test]
fn reset_flood_ends_with_goaway_or_is_cut() {
    // CVE-2019-9514: requests the server must reset (an uppercase field name), never reading.
    let srv = server();
    let o = run(&srv, false, |s, stop| {
        repeat(s, stop, &raw::start(), |round| {
            let mut out = Vec::new();
            for i in 0..50 {
                let mut block = raw::get_block("/1k.bin", "localhost");
                raw::literal_name(&mut block, b"X-Upper", b"1");
                raw::frame(
                    &mut out,
                    raw::HEADERS,
                    raw::END_HEADERS | raw::END_STREAM,
                    1 + 2 * (round * 50 + i),
                    &block,
                );
            }
            out
        })
    });
    assert!(o.closed, "{o:?}");
    assert!(o
        .goaway()
        .is_none_or(|c| c == ENHANCE_YOUR_CALM || c == PROTOCOL_ERROR));
}

#[test]
fn empty_frames_flood_ends_with_goaway() {
    // CVE-2019-9518: empty DATA frames without END_STREAM, on a request with a body.
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        let mut first = raw::start();
        raw::get(&mut first, 1, "/1k.bin", 0);
        repeat(s, stop, &first, |_| {
            let mut out = Vec::new();
            for _ in 0..100 {
                raw::frame(&mut out, raw::DATA, 0, 1, &[]);
            }
            out
        })
    });
    assert_eq!(o.goaway(), Some(ENHANCE_YOUR_CALM), "{o:?}");
    assert!(o.closed);
}

#[test]
fn resource_loop_of_priority_frames_ends_with_goaway() {
    // CVE-2019-9513: PRIORITY frames reshuffling streams. nghttp2 no longer keeps a priority
    // tree; the frames are glitches, and past the glitch limit: GOAWAY ENHANCE_YOUR_CALM.
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        repeat(s, stop, &raw::start(), |round| {
            let mut out = Vec::new();
            for i in 0..100u32 {
                let id = 1 + 2 * ((round * 100 + i) % 1000);
                let dep = 1 + 2 * ((round * 100 + i + 1) % 1000);
                let mut p = dep.to_be_bytes().to_vec();
                p.push(255);
                raw::frame(&mut out, raw::PRIORITY, 0, id, &p);
            }
            out
        })
    });
    assert!(o.closed, "{o:?}");
    assert_eq!(o.goaway(), Some(ENHANCE_YOUR_CALM), "{o:?}");
}

#[test]
fn zero_length_headers_are_refused_without_leaking() {
    // CVE-2019-9516: header fields with empty names (and values), many of them per request.
    let srv = server();
    let o = run(&srv, true, |s, stop| {
        repeat(s, stop, &raw::start(), |round| {
            let mut block = raw::get_block("/1k.bin", "localhost");
            for _ in 0..1000 {
                raw::literal_name(&mut block, b"", b"");
            }
            let mut out = Vec::new();
            if round < 500 {
                raw::frame(
                    &mut out,
                    raw::HEADERS,
                    raw::END_HEADERS | raw::END_STREAM,
                    1 + 2 * round,
                    &block,
                );
            } else {
                std::thread::sleep(Duration::from_millis(20));
            }
            out
        })
    });
    // Each request is refused (an empty name makes it malformed; 1,000 empty fields, 32 KB of
    // header list at 32 bytes a field, also pass the limit, which alone would be a 431), and
    // past 16 refusals the connection is told to go away and closes.
    assert_eq!(o.goaway(), Some(ENHANCE_YOUR_CALM), "{o:?}");
    assert!(o.closed, "{o:?}");
}

#[test]
fn data_dribble_and_zero_window_slow_reads_hold_no_body_in_memory() {
    // CVE-2019-9511 and 9517: 100 streams of a 4 MiB file with a 1-byte window, windows opened
    // a byte at a time (the dribble), and a client that does not read what it asked for.
    let srv = server();
    let o = run(&srv, false, |s, stop| {
        let mut first = raw::PREFACE.to_vec();
        raw::settings(&mut first, &[(4, 1)]); // SETTINGS_INITIAL_WINDOW_SIZE = 1
        for i in 0..100 {
            let block = raw::get_block("/4m.bin", "localhost");
            raw::frame(
                &mut first,
                raw::HEADERS,
                raw::END_HEADERS | raw::END_STREAM,
                1 + 2 * i,
                &block,
            );
        }
        repeat(s, stop, &first, |round| {
            let mut out = Vec::new();
            raw::frame(
                &mut out,
                raw::WINDOW_UPDATE,
                0,
                1 + 2 * (round % 100),
                &1u32.to_be_bytes(),
            );
            std::thread::sleep(Duration::from_millis(1));
            out
        })
    });
    // Every stream holds a shared descriptor, not a copy: memory is bounded (checked by `run`).
    // The connection stays as long as it makes progress within the timeouts.
    let _ = o;
}
