//! The protocol alone: request bytes in, response segments out, no socket anywhere.

use std::net::SocketAddr;
use std::os::unix::fs::FileExt;
use std::time::{Duration, Instant, SystemTime};

use test_support::h2::frame as h2_frame; // an HTTP/2 frame, written by hand
use wire::RequestLimits;

use super::{Negotiated, Session, Timeouts, Worker};
use crate::config::Config;
use crate::pool::{Pool, Seg};
use crate::respond::{Responder, SMALL_BODY};
use crate::stats::ServerStats;

struct Fixture {
    _root: tempfile::TempDir,
    worker: Worker,
    pool: Pool,
    session: Session,
}

fn fixture(max_pipeline: usize) -> Fixture {
    let root = tempfile::tempdir().unwrap();
    std::fs::write(root.path().join("a.txt"), b"hello").unwrap();
    std::fs::write(root.path().join("big.bin"), vec![7u8; 4 * SMALL_BODY]).unwrap();
    let config = Config {
        root: root.path().to_path_buf(),
        ..Config::default()
    };
    let now = Instant::now();
    let worker = Worker {
        responder: Responder::new(&config).unwrap(),
        log: None,
        stats: ServerStats::default(),
        limits: RequestLimits {
            max_request_line: config.max_request_line,
            max_head_bytes: config.max_header_bytes,
            max_headers: config.max_headers,
        },
        now,
        wall: SystemTime::now(),
        date: *b"Mon, 23 Nov 2026 14:00:00 GMT",
        max_pipeline: max_pipeline as u64,
        max_body: 100,
        body_min_rate: 500,
        timeouts: Timeouts {
            header: Duration::from_secs(1),
            body: Duration::from_secs(1),
            keepalive: Duration::from_secs(1),
            send: Duration::from_secs(1),
        },
        http2: Some(http2::Config::server()),
        gateways: None,
        auth: None,
        h2_spares: Default::default(),
    };
    Fixture {
        _root: root,
        worker,
        pool: Pool::new(16 * 1024, 4, max_pipeline),
        session: Session::new(SocketAddr::from(([127, 0, 0, 1], 1)), now),
    }
}

impl Fixture {
    /// Feeds `bytes` as a driver would (receive into the lent space), then answers.
    fn feed(&mut self, bytes: &[u8]) -> bool {
        let space = self.session.input_space(&mut self.pool);
        space[..bytes.len()].copy_from_slice(bytes);
        self.session.received(bytes.len(), self.worker.now);
        self.session
            .answer(&mut self.worker, &mut self.pool, Negotiated::Nothing)
    }

    /// Everything queued, in order, as the client would receive it.
    fn output(&self) -> Vec<u8> {
        let Some(b) = self.session.bufs.as_ref() else {
            return Vec::new();
        };
        let mut all = Vec::new();
        for seg in &b.segs {
            match seg {
                Seg::Mem { start, end } => all.extend_from_slice(&b.out[*start..*end]),
                Seg::Shared { data, start, len } => {
                    all.extend_from_slice(&data[*start..*start + *len])
                }
                Seg::File { file, offset, len } => {
                    let mut chunk = vec![0; *len as usize];
                    file.read_exact_at(&mut chunk, *offset).unwrap();
                    all.extend_from_slice(&chunk);
                }
            }
        }
        all
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|w| *w == needle)
        .count()
}

#[test]
fn a_keep_alive_request_queues_one_segment_and_keeps_the_connection() {
    let mut f = fixture(1 << 20);
    assert!(!f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n"));
    let out = f.output();
    assert!(out.starts_with(b"HTTP/1.1 200 OK\r\n"), "{out:?}");
    assert!(out.ends_with(b"\r\n\r\nhello"));
    assert_eq!(f.session.queued, out.len() as u64);
    assert_eq!(f.session.bufs.as_ref().unwrap().segs.len(), 1);
    assert!(!f.session.close_after && !f.session.linger && f.session.served);
    assert!(!f.session.has_input());
    assert_eq!(f.worker.stats.requests, 1);
}

#[test]
fn pipelined_requests_are_all_answered_in_order_and_a_partial_head_waits() {
    let mut f = fixture(1 << 20);
    let batch = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nHEAD /a.txt HTTP/1.1\r\nHost: t\r\n\r\n\
                  GET /big.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /a.t";
    f.feed(batch);
    assert_eq!(f.worker.stats.requests, 3);
    let out = f.output();
    assert_eq!(count(&out, b"HTTP/1.1 200 OK\r\n"), 3);
    assert_eq!(count(&out, b"hello"), 1, "no body after the HEAD's head");
    assert!(out.ends_with(&vec![7u8; 4 * SMALL_BODY]));
    let b = f.session.bufs.as_ref().unwrap();
    assert!(matches!(b.segs.back(), Some(Seg::File { .. })));
    assert_eq!(
        &b.input[..b.in_len],
        b"GET /a.t",
        "the partial head is kept"
    );
    assert_eq!(f.session.queued, out.len() as u64);
    f.feed(b"xt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(f.worker.stats.requests, 4);
    assert!(f.output().ends_with(b"hello"));
}

#[test]
fn http_1_0_closes_after_the_response_without_lingering() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.0\r\n\r\n");
    assert!(f.output().starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(f.session.close_after && !f.session.linger);
    assert!(
        !f.session.wants_input(),
        "nothing is parsed after a closing response"
    );
}

fn statuses(out: &[u8]) -> Vec<u16> {
    String::from_utf8_lossy(out)
        .match_indices("HTTP/1.1 ")
        .map(|(i, _)| {
            String::from_utf8_lossy(&out[i + 9..i + 12])
                .parse()
                .unwrap()
        })
        .collect()
}

const NEXT: &[u8] = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn a_get_with_a_body_is_served_and_the_next_request_answered() {
    let mut f = fixture(1 << 20);
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde",
            NEXT,
        ]
        .concat(),
    );
    let out = f.output();
    assert_eq!(statuses(&out), [200, 200]);
    assert_eq!(count(&out, b"hello"), 2);
    assert!(!f.session.close_after && !f.session.linger && !f.session.reading_body());
    assert!(
        !f.session.has_input(),
        "the body is not parsed as a request"
    );
}

#[test]
fn a_post_gets_405_and_its_chunked_body_is_dropped_across_reads() {
    let mut f = fixture(1 << 20);
    f.feed(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab");
    assert_eq!(
        statuses(&f.output()),
        [405],
        "answered before the body is in"
    );
    assert!(f.session.reading_body() && !f.session.has_input());
    f.feed(b"cde\r\n3;ext=1\r\nxyz\r\n0\r\nTrailer: t\r\n");
    assert!(f.session.reading_body());
    f.feed(&[b"\r\n".as_slice(), NEXT].concat());
    assert_eq!(statuses(&f.output()), [405, 200]);
    assert!(!f.session.reading_body() && !f.session.close_after);
    assert_eq!(f.worker.stats.requests, 2);
}

#[test]
fn a_content_length_over_the_limit_gets_413_and_a_lingering_close() {
    let mut f = fixture(1 << 20);
    f.feed(b"PUT /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 101\r\n\r\nabcde");
    assert_eq!(statuses(&f.output()), [413]);
    assert!(f.session.close_after && f.session.linger);
    assert!(!f.session.has_input() && !f.session.wants_input());
    // At the limit it is read.
    let mut f = fixture(1 << 20);
    let body = vec![b'x'; 100];
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n".as_slice(),
            &body,
            NEXT,
        ]
        .concat(),
    );
    assert_eq!(statuses(&f.output()), [200, 200]);
}

#[test]
fn malformed_chunked_framing_gets_400_when_seen_before_the_answer() {
    let mut f = fixture(1 << 20);
    f.feed(
        &[
            b"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"
                .as_slice(),
            NEXT,
        ]
        .concat(),
    );
    assert_eq!(statuses(&f.output()), [400]);
    assert!(f.session.close_after && f.session.linger);
}

#[test]
fn a_body_that_goes_wrong_after_its_answer_closes_without_a_second_response() {
    for rest in [
        b"5\r\nabcdeXX".as_slice(),
        &[b"65\r\n".as_slice(), &[b'x'; 101]].concat(),
    ] {
        let mut f = fixture(1 << 20);
        f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n");
        assert!(f.session.reading_body());
        f.feed(&[rest, NEXT].concat());
        assert_eq!(
            statuses(&f.output()),
            [200],
            "{:?}",
            String::from_utf8_lossy(rest)
        );
        assert!(f.session.close_after && f.session.linger);
        assert!(!f.session.has_input());
    }
}

#[test]
fn expect_100_continue_gets_its_interim_response_before_the_answer() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\n");
    assert!(f
        .output()
        .starts_with(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n"));
    f.feed(&[b"abc".as_slice(), NEXT].concat());
    assert_eq!(statuses(&f.output()), [100, 200, 200]);
    // Not when the body is already here.
    let mut f = fixture(1 << 20);
    f.feed(
        b"GET /a.txt HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(statuses(&f.output()), [200]);
}

#[test]
fn a_closing_response_with_its_body_unread_lingers() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.0\r\nContent-Length: 50\r\n\r\nabc");
    assert_eq!(statuses(&f.output()), [200]);
    assert!(f.session.close_after && f.session.linger && !f.session.reading_body());
}

#[test]
fn garbage_gets_one_error_response_and_a_lingering_close() {
    let mut f = fixture(1 << 20);
    f.feed(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 not http\r\n\r\n");
    let out = f.output();
    assert!(
        out.starts_with(b"HTTP/1.1 400 "),
        "{:?}",
        String::from_utf8_lossy(&out)
    );
    assert!(f.session.close_after && f.session.linger);
    assert_eq!(f.worker.stats.status_4xx, 1);
}

#[test]
fn parsing_pauses_at_the_pipeline_limit_and_resumes() {
    let mut f = fixture(64);
    let one = b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n";
    let limited = f.feed(&one.repeat(3));
    assert!(limited, "stopped at the limit with input left");
    assert_eq!(f.worker.stats.requests, 1);
    // The driver writes the queue, then answers again.
    let b = f.session.bufs.as_mut().unwrap();
    b.segs.clear();
    b.out.clear();
    f.session.queued = 0;
    assert!(f
        .session
        .answer(&mut f.worker, &mut f.pool, Negotiated::Nothing));
    assert_eq!(f.worker.stats.requests, 2);
}

#[test]
fn idle_sessions_give_their_buffers_back() {
    let mut f = fixture(1 << 20);
    f.feed(b"GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    f.session.release_idle(&mut f.pool);
    assert!(f.session.bufs.is_some(), "output still queued");
    let b = f.session.bufs.as_mut().unwrap();
    b.segs.clear();
    f.session.queued = 0;
    f.session.release_idle(&mut f.pool);
    assert!(f.session.bufs.is_none());
}

#[test]
fn a_pipeline_limit_of_zero_still_answers_one_request_at_a_time() {
    let mut f = fixture(0);
    let limited = f.feed(&NEXT.repeat(2));
    assert!(
        limited,
        "paused with one answer queued and one request left"
    );
    assert_eq!(f.worker.stats.requests, 1);
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 5.1) after the bits `first`.
fn hpack_int(b: &mut Vec<u8>, first: u8, n: u32, mut v: usize) {
    let max = (1usize << n) - 1;
    if v < max {
        b.push(first | v as u8);
        return;
    }
    b.push(first | max as u8);
    v -= max;
    while v >= 128 {
        b.push((v % 128 + 128) as u8);
        v /= 128;
    }
    b.push(v as u8);
}

/// What an HTTP/2 connection holds of its requests is bounded, however HPACK multiplies them:
/// 100 streams, each repeating a 4,000-byte field of the dynamic table 16 times for one byte
/// each (8.6 KB on the wire for 6.4 MB of fields), under a header list limit that allows it.
#[test]
fn hpack_amplified_requests_get_431_and_the_connection_keeps_little() {
    /// What one connection may keep of its requests: a slot's ordinary request for each
    /// stream, plus the heads it builds (each at most the head limit) and slack.
    const RETAINED_CAP: usize = 104 * 2 * 1024 + 4 * 16 * 1024;
    let mut f = fixture(1 << 20);
    f.worker.http2.as_mut().unwrap().max_header_list_size = 1 << 20;
    let mut out = super::preface::PREFACE.to_vec();
    h2_frame(&mut out, 4, 0, 0, &[]);
    let get = |b: &mut Vec<u8>| {
        b.extend_from_slice(&[0x82, 0x86, 0x04, 6]); // GET, http, :path literal
        b.extend_from_slice(b"/a.txt");
        b.extend_from_slice(&[0x01, 1, b't']); // :authority t
    };
    let mut first = Vec::new();
    get(&mut first);
    hpack_int(&mut first, 0x40, 6, 58); // user-agent, indexed into the dynamic table
    hpack_int(&mut first, 0, 7, 4000);
    first.extend_from_slice(&[b'x'; 4000]);
    first.extend_from_slice(&[0xbe; 15]); // dynamic entry 62, 15 times more
    h2_frame(&mut out, 1, 0x5, 1, &first);
    for i in 1..100u32 {
        let mut block = Vec::new();
        get(&mut block);
        block.extend_from_slice(&[0xbe; 16]);
        h2_frame(&mut out, 1, 0x5, 1 + 2 * i, &block);
    }
    assert!(out.len() < 10_000, "{} bytes on the wire", out.len());
    f.feed(&out);
    assert_eq!(f.worker.stats.requests, 100);
    assert_eq!(f.worker.stats.status_4xx, 100, "each one a 431");
    let retained = f.session.h2_retained();
    assert!(retained <= RETAINED_CAP, "{retained} bytes kept");
}

/// What an HTTP/2 connection queues stays within `max_pipeline_bytes` and one frame, however
/// often it is woken: here by a thousand one-byte segments while the client reads nothing.
#[test]
fn h2_output_stays_within_the_pipeline_bound_and_one_frame() {
    const BOUND: usize = 4096;
    /// One DATA frame at the default SETTINGS_MAX_FRAME_SIZE, with its header.
    const ONE_FRAME: u64 = 9 + 16_384;
    let mut f = fixture(BOUND);
    let mut out = super::preface::PREFACE.to_vec();
    // Windows wide open: only the bound holds the body back.
    h2_frame(&mut out, 4, 0, 0, &[0, 4, 0x40, 0, 0, 0]);
    h2_frame(&mut out, 8, 0, 0, &(1u32 << 30).to_be_bytes());
    let mut block = vec![0x82, 0x86, 0x04, 8];
    block.extend_from_slice(b"/big.bin");
    block.extend_from_slice(&[0x01, 1, b't']);
    h2_frame(&mut out, 1, 0x5, 1, &block);
    f.feed(&out);
    let mut high = f.session.queued;
    let mut ping = Vec::new();
    for _ in 0..125 {
        h2_frame(&mut ping, 6, 0, 0, &[0; 8]);
    }
    for byte in ping.chunks(1).take(1000) {
        f.feed(byte);
        high = high.max(f.session.queued);
    }
    assert!(f.worker.stats.requests == 1);
    assert!(high <= BOUND as u64 + ONE_FRAME, "{high} bytes queued");
}

/// A malformed trailer block arriving while a DATA frame of the same stream waits in nghttp2
/// for the output queue to drain: once the queue is written, that frame leaves and the reset
/// after it, and the connection goes on (the stream's slot is kept until the stream closes).
#[test]
fn h2_malformed_trailers_behind_a_waiting_data_frame_still_reset_the_stream() {
    const BOUND: usize = 4096;
    let mut f = fixture(BOUND);
    let mut out = super::preface::PREFACE.to_vec();
    h2_frame(&mut out, 4, 0, 0, &[0, 4, 0x40, 0, 0, 0]);
    h2_frame(&mut out, 8, 0, 0, &(1u32 << 30).to_be_bytes());
    let mut block = vec![0x82, 0x86, 0x04, 8];
    block.extend_from_slice(b"/big.bin");
    block.extend_from_slice(&[0x01, 1, b't']);
    h2_frame(&mut out, 1, 0x4, 1, &block); // END_HEADERS: a body (here, trailers) follows
    f.feed(&out);
    assert_eq!(f.worker.stats.requests, 1);
    // The queue is at its bound: the next DATA frame waits in nghttp2. Trailers with a NUL in
    // a value are malformed (RFC 9113 8.2.1): the stream is to be reset.
    let mut trailers = vec![0, 5];
    trailers.extend_from_slice(b"x-bad");
    trailers.extend_from_slice(&[3, b'a', 0, b'b']);
    let mut t = Vec::new();
    h2_frame(&mut t, 1, 0x5, 1, &trailers);
    f.feed(&t);
    // The driver writes the queue and answers again, as often as it has something to write.
    let mut written = Vec::new();
    for _ in 0..64 {
        let queued = f.output();
        if queued.is_empty() {
            break;
        }
        written.extend_from_slice(&queued);
        let b = f.session.bufs.as_mut().unwrap();
        b.segs.clear();
        b.out.clear();
        f.session.queued = 0;
        f.session
            .answer(&mut f.worker, &mut f.pool, Negotiated::Nothing);
    }
    let mut frames = Vec::new();
    let mut at = 0;
    while written.len() >= at + 9 {
        let len = u32::from_be_bytes([0, written[at], written[at + 1], written[at + 2]]) as usize;
        let stream = u32::from_be_bytes(written[at + 5..at + 9].try_into().unwrap());
        frames.push((
            written[at + 3],
            stream,
            written[at + 9..at + 9 + len].to_vec(),
        ));
        at += 9 + len;
    }
    assert!(
        frames.contains(&(3, 1, 1u32.to_be_bytes().to_vec())),
        "RST_STREAM PROTOCOL_ERROR on stream 1 among {:?}",
        frames.iter().map(|f| (f.0, f.1)).collect::<Vec<_>>()
    );
    // The connection goes on: the next request is answered.
    let mut next = Vec::new();
    let mut block = vec![0x82, 0x86, 0x04, 6];
    block.extend_from_slice(b"/a.txt");
    block.extend_from_slice(&[0x01, 1, b't']);
    h2_frame(&mut next, 1, 0x5, 3, &block);
    f.feed(&next);
    assert_eq!(f.worker.stats.requests, 2);
    assert!(f.output().ends_with(b"hello"));
}

/// A hundred streams asking for a large directory listing: each listing is generated, but the
/// connection holds only as many as its output bound allows at a time, not one per stream.
#[test]
fn h2_listings_for_many_streams_are_held_a_few_at_a_time() {
    const BOUND: usize = 64 * 1024;
    let mut f = fixture(BOUND);
    let dir = f._root.path().join("list");
    std::fs::create_dir(&dir).unwrap();
    for i in 0..1500 {
        std::fs::write(dir.join(format!("{i:04}-{}", "n".repeat(60))), b"x").unwrap();
    }
    let config = Config {
        root: f._root.path().to_path_buf(),
        autoindex: true,
        ..Config::default()
    };
    f.worker.responder = Responder::new(&config).unwrap();
    // The listing's size, from one HTTP/1.1 request on another connection.
    let mut h1 = Session::new(SocketAddr::from(([127, 0, 0, 1], 2)), f.worker.now);
    let req = b"GET /list/ HTTP/1.1\r\nHost: t\r\n\r\n";
    h1.input_space(&mut f.pool)[..req.len()].copy_from_slice(req);
    h1.received(req.len(), f.worker.now);
    h1.answer(&mut f.worker, &mut f.pool, Negotiated::Nothing);
    let listing = h1.queued as usize;
    assert!(listing > 2 * BOUND, "a listing of {listing} bytes");
    let mut out = super::preface::PREFACE.to_vec();
    h2_frame(&mut out, 4, 0, 0, &[]);
    for i in 0..100u32 {
        let mut block = vec![0x82, 0x86, 0x04, 6];
        block.extend_from_slice(b"/list/");
        block.extend_from_slice(&[0x01, 1, b't']);
        h2_frame(&mut out, 1, 0x5, 1 + 2 * i, &block);
    }
    f.feed(&out);
    // The client's windows (65,535 bytes) hold the first listing; the others wait.
    let retained = f.session.h2_retained();
    let cap = BOUND + 2 * listing + 256 * 1024;
    assert!(
        retained <= cap,
        "{retained} bytes kept, {listing} a listing"
    );
    let h2_answered = f.worker.stats.requests - 1;
    assert!(
        (1..100).contains(&h2_answered),
        "{h2_answered} answered, {retained} kept"
    );
}

/// A request's `referer` and `user-agent` reach a Combined access log over HTTP/2 (they are
/// carried only when a log is kept), with the request line as HTTP/2 has it.
#[test]
fn h2_requests_are_logged_with_their_referer_and_user_agent() {
    let mut f = fixture(1 << 20);
    let path = f._root.path().join("access.log");
    let file = crate::access_log::open(&path).unwrap();
    let format = crate::config::LogFormat::Combined;
    f.worker.log = Some(crate::access_log::AccessLog::new(file, format));
    let mut out = super::preface::PREFACE.to_vec();
    h2_frame(&mut out, 4, 0, 0, &[]);
    let mut block = vec![0x82, 0x86, 0x04, 6]; // GET, http, :path literal
    block.extend_from_slice(b"/a.txt");
    block.extend_from_slice(&[0x01, 1, b't']); // :authority t
    block.extend_from_slice(&[0x0f, 0x2b, 9]); // user-agent (static 58), literal
    block.extend_from_slice(b"probe/1.0");
    block.extend_from_slice(&[0x0f, 0x24, 9]); // referer (static 51), literal
    block.extend_from_slice(b"http://r/");
    h2_frame(&mut out, 1, 0x5, 1, &block);
    f.feed(&out);
    assert_eq!(f.worker.stats.requests, 1);
    f.worker.log.as_mut().unwrap().flush();
    let line = std::fs::read_to_string(&path).unwrap();
    assert!(line.contains("\"GET /a.txt HTTP/2.0\" 200 5"), "{line}");
    assert!(line.contains("\"http://r/\" \"probe/1.0\""), "{line}");
}

/// The driver asks the session what it waits for and by when, the same way whatever the
/// protocol: over HTTP/1.1 a head from accept, a body being dropped by its own clock, then
/// nothing (idle); no clock of the protocol's own.
#[test]
fn the_session_says_what_an_http1_connection_waits_for() {
    use super::Wait;
    let mut f = fixture(1 << 20);
    let (w, header) = (&f.worker, f.worker.timeouts.header);
    let clock = f.session.clock(w, false);
    assert_eq!(clock.due, None);
    let wait = f.session.wait(w, false, clock);
    assert_eq!(wait, Wait::Head(f.session.head_since + header));
    f.feed(b"POST /a.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    assert_eq!(statuses(&f.output()), [405]);
    let clock = f.session.clock(&f.worker, false);
    assert_eq!(clock.due, None);
    let Wait::Body(due) = f.session.wait(&f.worker, false, clock) else {
        panic!("a body is being read");
    };
    assert!(due > f.worker.now, "due later");
    f.feed(b"defghij");
    assert_eq!(f.session.wait(&f.worker, false, clock), Wait::Idle);
}

/// Over HTTP/2 a request body still arriving once its response is out trails it: the session
/// says so with the stream's deadline (its own clock); past it, `expire` resets the stream, and
/// the connection goes on with nothing to wait for.
#[test]
fn an_h2_body_trailing_its_response_is_due_by_the_protocols_clock_and_expires() {
    use super::Wait;
    let mut f = fixture(1 << 20);
    let mut out = super::preface::PREFACE.to_vec();
    h2_frame(&mut out, 4, 0, 0, &[]);
    let mut block = vec![0x82, 0x86, 0x04, 6]; // GET, http, :path literal
    block.extend_from_slice(b"/a.txt");
    block.extend_from_slice(&[0x01, 1, b't']); // :authority t
    h2_frame(&mut out, 1, 0x4, 1, &block); // END_HEADERS only: a body follows
    h2_frame(&mut out, 0, 0, 1, b"ab");
    f.feed(&out);
    assert_eq!(f.worker.stats.requests, 1, "answered before its body ends");
    let clock = f.session.clock(&f.worker, false);
    let due = clock.due.expect("the stream's body is due");
    assert_eq!(f.session.wait(&f.worker, false, clock), Wait::Trailing(due));
    assert!(!f.session.busy(), "nothing under way for the server");
    f.worker.now = due;
    assert!(f.session.expire(&mut f.worker), "the late stream is reset");
    assert_eq!(f.worker.stats.body_timeouts, 1);
    f.session
        .answer(&mut f.worker, &mut f.pool, Negotiated::Nothing);
    let clock = f.session.clock(&f.worker, false);
    assert_eq!(clock.due, None);
    assert_eq!(f.session.wait(&f.worker, false, clock), Wait::Idle);
}
