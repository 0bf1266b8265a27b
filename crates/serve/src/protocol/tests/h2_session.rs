//! The protocol alone over HTTP/2: the session's frames in and out on the same fixture as
//! HTTP/1.1's, for what only HTTP/2 has (HPACK's amplification, the output bound per frame,
//! trailers behind a waiting DATA frame, listings held a few streams at a time, a request body
//! trailing its response). Apart from `tests.rs` so each protocol's tests read alone.

use super::*;
use test_support::h2::frame as h2_frame; // an HTTP/2 frame, written by hand

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
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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

/// Over HTTP/2 a request body still arriving once its response is out trails it: the session
/// says so with the stream's deadline (its own clock); past it, `expire` resets the stream, and
/// the connection goes on with nothing to wait for.
#[test]
fn an_h2_body_trailing_its_response_is_due_by_the_protocols_clock_and_expires() {
    use crate::protocol::Wait;
    let mut f = fixture(1 << 20);
    let mut out = crate::protocol::preface::PREFACE.to_vec();
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
