//! An HTTP/2 server written frame by frame (cleartext, prior knowledge), that misbehaves on
//! purpose: it resets streams, sends GOAWAY in the middle of a run, allows one stream, gives a
//! one-byte window, never sends its SETTINGS, splits its header blocks over CONTINUATION frames,
//! or answers HTTP/1. Raw frames, not a library, so that it can do what a library would refuse.
//! It counts what it received, so a test can hold flint's account against it. Over TLS too
//! (`start_tls`, ALPN `h2`).

#![allow(dead_code)] // each test binary uses its own subset

use bench::{HttpMode, RunResult, Stop, Workload};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};
use test_support::h2::{
    frame, setting, ACK, CONTINUATION, DATA, END_HEADERS, END_STREAM, GOAWAY, HEADERS, PADDED,
    PING, RST_STREAM, SETTINGS, WINDOW_UPDATE,
};

/// Runs `--http 2` against `server` with 2 Webchildren (`common::config`, then `tweak`);
/// checks it ended within 10 s of its window (a loaded machine's margin).
pub fn run(
    server: &H2Server,
    w: &Workload,
    stop: Stop,
    tweak: impl FnOnce(&mut bench::BenchConfig),
) -> RunResult {
    let mut cfg = crate::common::config(server.addr, 2, stop);
    cfg.http = HttpMode::Http2;
    tweak(&mut cfg);
    let t0 = Instant::now();
    let r = bench::run(&cfg, w, &AtomicBool::new(false)).expect("run");
    let limit = match stop {
        Stop::Duration(d) => d + Duration::from_secs(10),
        Stop::Pages(_) => Duration::from_secs(30),
    };
    assert!(t0.elapsed() <= limit, "took {:?}", t0.elapsed());
    r
}

/// The body every answer carries.
pub const BODY: &[u8] = b"hello, h2";

/// How the server misbehaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// None: every request answered 200 with [`BODY`].
    None,
    /// Every `n`th stream of a connection is reset (INTERNAL_ERROR) instead of answered.
    ResetEvery(u64),
    /// After answering `n` streams on a connection, GOAWAY with the last of them, then the
    /// streams above it are left unanswered and the connection closed once the GOAWAY is out.
    GoawayAfter(u64),
    /// SETTINGS_MAX_CONCURRENT_STREAMS 1 (and a stream opened beyond it is counted).
    OneStream,
    /// SETTINGS_INITIAL_WINDOW_SIZE 1: a request body comes one byte a frame, each answered by
    /// a WINDOW_UPDATE of 1.
    OneByteWindow,
    /// No SETTINGS ever: the preface is read and nothing is sent.
    NoSettings,
    /// Each response's header block is a HEADERS and `n` CONTINUATION frames.
    Continuations(usize),
    /// `HTTP/1.1 400` to the preface, then close.
    Http1,
    /// The connection is closed (no GOAWAY) a moment after each answer, as a server closes an
    /// idle connection.
    CloseIdle,
    /// The connection is closed (no GOAWAY) a moment after its `n`th answer: with `n` lanes,
    /// while every lane waits for its next page.
    CloseAfter(u64),
    /// SETTINGS_MAX_CONCURRENT_STREAMS 0: no stream may be opened, ever.
    NoStreams,
    /// SETTINGS_MAX_CONCURRENT_STREAMS 0, raised to 100 by a second SETTINGS once the client
    /// has acknowledged the first.
    NoStreamsThenSome,
    /// Every `n`th stream of a connection is reset with REFUSED_STREAM (not processed).
    RefuseEvery(u64),
    /// Every `n`th stream of a connection is never answered (the others are).
    StallEvery(u64),
    /// The odd streams of a connection (its 1st, 3rd, ...) are answered 302 with a Location of
    /// the same origin (`/next`), the even ones 200: a client that follows one redirect a
    /// request, one stream at a time, meets a redirect and then its target.
    RedirectOdd,
    /// The `n`th stream of a connection gets a GOAWAY whose last stream id is its own, then
    /// its HEADERS and half its body, then the connection is closed: the streams it covered
    /// die mid-DATA, those above it were never processed.
    GoawayThenClose(u64),
    /// `GoawayThenClose` on the one connection the server accepts: it stops listening then,
    /// so the client's next connection is refused.
    GoawayThenGone(u64),
    /// Every stream gets its HEADERS and half its body in a DATA frame with 10 bytes of
    /// padding, and never the rest; with `close`, the connection is then closed (a lingering
    /// close), so the streams fail; without, they stay in flight to the end of the run.
    PaddedHalf { close: bool },
    /// After answering the first stream of a connection, a GOAWAY (last stream: that one) split
    /// in time: its 9-byte frame header, then, this long after, its payload (a frame that
    /// straddles the start or the end of the measured window).
    SplitGoaway(Duration),
    /// Each request is answered by a frame that breaks the protocol (a WINDOW_UPDATE of 0 on the
    /// connection), then, in the same write, a RST_STREAM of the request and a GOAWAY.
    BrokenThenGoaway,
    /// Every `n`th stream of a connection gets its HEADERS, then a RST_STREAM REFUSED_STREAM
    /// (not processed, although a header block came first).
    HeadersThenRefuseEvery(u64),
    /// The `n`th stream of a connection gets its HEADERS, then a GOAWAY whose last stream is
    /// the one before it: not processed; the streams above it are left unanswered.
    HeadersThenGoawayBelow(u64),
    /// Each connection's SETTINGS come this long after the preface (a busy server's accept),
    /// and after answering `n` streams a connection, a GOAWAY as `GoawayAfter` (`u64::MAX`:
    /// never).
    SlowSettings(Duration, u64),
    /// Every connection's SETTINGS are followed at once by a GOAWAY whose last stream is 0:
    /// no stream will be processed, and none is answered.
    GoawayAtOnce,
    /// Every connection's first stream is answered by a GOAWAY whose last stream is 0 (not
    /// processed); the streams are left unanswered.
    GoawayEachStream,
}

/// The server: its address and counts.
pub struct H2Server {
    pub addr: SocketAddr,
    /// Streams opened by the client (HEADERS received, in a lingering close too).
    pub streams: Arc<AtomicU64>,
    /// Streams answered with END_STREAM.
    pub answered: Arc<AtomicU64>,
    /// Connections accepted.
    pub connections: Arc<AtomicU64>,
    /// Connections open (accepted and not yet ended on the server's side).
    pub open: Arc<AtomicU64>,
    /// A stream opened while the one allowed was open (OneStream).
    pub over_limit: Arc<AtomicU64>,
    /// Request body bytes received.
    pub body_bytes: Arc<AtomicU64>,
    /// RST_STREAM frames received, by error code (0 to 13).
    pub resets: Arc<[AtomicU64; 14]>,
    stop: Arc<AtomicBool>,
}

impl Drop for H2Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

impl H2Server {
    pub fn start(fault: Fault) -> H2Server {
        H2Server::start_with(fault, None)
    }

    /// Over TLS with `config` (its ALPN becomes `h2`).
    pub fn start_tls(fault: Fault, config: &rustls::ServerConfig) -> H2Server {
        let mut config = config.clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        H2Server::start_with(fault, Some(Arc::new(config)))
    }

    /// Waits (bounded by `limit`) until every connection has ended on the server's side: then
    /// its counts are final. False if one is still open.
    pub fn quiet(&self, limit: Duration) -> bool {
        let deadline = std::time::Instant::now() + limit;
        while self.open.load(Ordering::SeqCst) > 0 {
            if std::time::Instant::now() > deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(1));
        }
        true
    }

    fn start_with(fault: Fault, tls: Option<Arc<rustls::ServerConfig>>) -> H2Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().unwrap();
        let s = H2Server {
            addr,
            streams: Arc::default(),
            answered: Arc::default(),
            connections: Arc::default(),
            open: Arc::default(),
            over_limit: Arc::default(),
            body_bytes: Arc::default(),
            resets: Arc::new(std::array::from_fn(|_| AtomicU64::new(0))),
            stop: Arc::default(),
        };
        let counts = Counts {
            streams: s.streams.clone(),
            answered: s.answered.clone(),
            over_limit: s.over_limit.clone(),
            body_bytes: s.body_bytes.clone(),
            resets: s.resets.clone(),
        };
        let (stop, connections, open) = (s.stop.clone(), s.connections.clone(), s.open.clone());
        thread::spawn(move || {
            for conn in listener.incoming() {
                if stop.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(conn) = conn else { continue };
                connections.fetch_add(1, Ordering::Relaxed);
                open.fetch_add(1, Ordering::SeqCst);
                let counts = counts.clone();
                let (stop, open, tls) = (stop.clone(), open.clone(), tls.clone());
                thread::spawn(move || {
                    let prepared = conn
                        .set_read_timeout(Some(Duration::from_millis(100)))
                        .and_then(|()| conn.set_nodelay(true));
                    if prepared.is_ok() {
                        let _ = match tls {
                            None => serve(conn, fault, &counts, &stop),
                            Some(config) => match rustls::ServerConnection::new(config) {
                                Ok(tls) => serve(
                                    rustls::StreamOwned::new(tls, conn),
                                    fault,
                                    &counts,
                                    &stop,
                                ),
                                Err(_) => Ok(()),
                            },
                        };
                    }
                    open.fetch_sub(1, Ordering::SeqCst);
                });
                if let Fault::GoawayThenGone(_) = fault {
                    return; // the listener closes
                }
            }
        });
        s
    }
}

#[derive(Clone)]
struct Counts {
    streams: Arc<AtomicU64>,
    answered: Arc<AtomicU64>,
    over_limit: Arc<AtomicU64>,
    body_bytes: Arc<AtomicU64>,
    resets: Arc<[AtomicU64; 14]>,
}

/// `:status: 200` (HPACK static index 8), then an `x-pad` field of 40 bytes: enough bytes to
/// split over many frames.
fn header_block(padded: bool) -> Vec<u8> {
    let mut b = vec![0x88];
    if padded {
        b.extend_from_slice(&[0x00, 5]);
        b.extend_from_slice(b"x-pad");
        b.push(40);
        b.extend_from_slice(&[b'a'; 40]);
    }
    b
}

fn serve<S: Read + Write>(
    mut conn: S,
    fault: Fault,
    c: &Counts,
    stop: &AtomicBool,
) -> io::Result<()> {
    let mut preface = [0u8; 24];
    read_exact(&mut conn, &mut preface, stop)?;
    let mut out = Vec::new();
    if let Fault::SlowSettings(pause, _) = fault {
        thread::sleep(pause);
    }
    match fault {
        Fault::Http1 => {
            conn.write_all(
                b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )?;
            return Ok(());
        }
        Fault::NoSettings => {
            // Reads (and drops) until the client gives up.
            let mut sink = [0u8; 4096];
            while !stop.load(Ordering::Relaxed) {
                match conn.read(&mut sink) {
                    Ok(0) => return Ok(()),
                    Ok(_) => {}
                    Err(e) if is_timeout(&e) => {}
                    Err(e) => return Err(e),
                }
            }
            return Ok(());
        }
        Fault::OneStream => frame(&mut out, SETTINGS, 0, 0, &setting(3, 1)),
        Fault::OneByteWindow => frame(&mut out, SETTINGS, 0, 0, &setting(4, 1)),
        Fault::NoStreams | Fault::NoStreamsThenSome => {
            frame(&mut out, SETTINGS, 0, 0, &setting(3, 0))
        }
        _ => frame(&mut out, SETTINGS, 0, 0, &[]),
    }
    let goaway_at_once = fault == Fault::GoawayAtOnce;
    if goaway_at_once {
        frame(&mut out, GOAWAY, 0, 0, &[0; 8]);
    }
    conn.write_all(&out)?;
    let (mut answered, mut open, mut goaway_sent) = (0u64, 0u64, goaway_at_once);
    let mut received = 0u64;
    let mut answering = true;
    loop {
        let mut head = [0u8; 9];
        if read_exact(&mut conn, &mut head, stop).is_err() {
            return Ok(());
        }
        let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
        let (ty, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        read_exact(&mut conn, &mut payload, stop)?;
        let mut out = Vec::new();
        match ty {
            SETTINGS if flags & ACK == 0 => frame(&mut out, SETTINGS, ACK, 0, &[]),
            SETTINGS if fault == Fault::NoStreamsThenSome => {
                frame(&mut out, SETTINGS, 0, 0, &setting(3, 100))
            }
            PING if flags & ACK == 0 => frame(&mut out, PING, ACK, 0, &payload),
            RST_STREAM if payload.len() == 4 => {
                let code = u32::from_be_bytes([payload[0], payload[1], payload[2], payload[3]]);
                if let Some(n) = c.resets.get(code as usize) {
                    n.fetch_add(1, Ordering::Relaxed);
                }
            }
            HEADERS => {
                c.streams.fetch_add(1, Ordering::Relaxed);
                received += 1;
                let stalled = matches!(fault, Fault::StallEvery(k) if received.is_multiple_of(k));
                if fault == Fault::OneStream && open > 0 {
                    c.over_limit.fetch_add(1, Ordering::Relaxed);
                }
                open += 1;
                if goaway_sent || stalled {
                    // Above the GOAWAY's last stream, or stalled: left unanswered.
                } else if flags & END_STREAM != 0 {
                    answered += 1;
                    open -= 1;
                    if answer(&mut out, fault, stream, answered, &mut goaway_sent) {
                        c.answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            DATA => {
                let body = len as u64;
                c.body_bytes.fetch_add(body, Ordering::Relaxed);
                if fault == Fault::OneByteWindow && body > 0 {
                    frame(&mut out, WINDOW_UPDATE, 0, 0, &(body as u32).to_be_bytes());
                    frame(
                        &mut out,
                        WINDOW_UPDATE,
                        0,
                        stream,
                        &(body as u32).to_be_bytes(),
                    );
                }
                if flags & END_STREAM != 0 && !goaway_sent {
                    answered += 1;
                    open -= 1;
                    if answer(&mut out, fault, stream, answered, &mut goaway_sent) {
                        c.answered.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            _ => {}
        }
        // A client gone (its run ended) cannot take answers; what it sent is still read and
        // counted, so the counts are of every stream received.
        if !out.is_empty() && answering && conn.write_all(&out).is_err() {
            answering = false;
        }
        if let Fault::SplitGoaway(pause) = fault {
            if answered == 1 && !goaway_sent && answering {
                let mut g = Vec::new();
                frame(&mut g, GOAWAY, 0, 0, &[0, 0, 0, 1, 0, 0, 0, 0]);
                let _ = conn.write_all(&g[..9]).and_then(|()| conn.flush());
                thread::sleep(pause);
                let _ = conn.write_all(&g[9..]).and_then(|()| conn.flush());
                goaway_sent = true;
            }
        }
        let cut = matches!(fault, Fault::PaddedHalf { close: true }) && answered > 0;
        let goaway_close = matches!(
            fault,
            Fault::GoawayThenClose(_)
                | Fault::GoawayThenGone(_)
                | Fault::GoawayAtOnce
                | Fault::GoawayEachStream
        );
        if cut || (goaway_close && goaway_sent) {
            linger(&mut conn, c, stop);
            return Ok(());
        }
        let close_after = matches!(fault, Fault::CloseAfter(n) if answered >= n);
        if (fault == Fault::CloseIdle && answered > 0) || close_after {
            thread::sleep(Duration::from_millis(5));
            return Ok(());
        }
    }
}

/// A lingering close: what the client still sends is read until it is quiet for a read
/// timeout, so that the close is a FIN after the GOAWAY, not a reset. The HEADERS in it (streams
/// above the GOAWAY's last one, or sent before the client read the response cut short) are
/// streams received as any others are, counted in `streams`. It begins at a frame's start:
/// `serve` reads whole frames.
fn linger<S: Read>(conn: &mut S, c: &Counts, stop: &AtomicBool) {
    let (mut held, mut chunk) = (Vec::new(), [0u8; 4096]);
    while !stop.load(Ordering::Relaxed) {
        let Ok(n @ 1..) = conn.read(&mut chunk) else {
            return;
        };
        held.extend_from_slice(&chunk[..n]);
        let mut at = 0;
        while let Some(head) = held.get(at..at + 9) {
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            if held.len() < at + 9 + len {
                break;
            }
            if head[3] == HEADERS {
                c.streams.fetch_add(1, Ordering::Relaxed);
            }
            at += 9 + len;
        }
        held.drain(..at);
    }
}

/// Answers the `n`th request of the connection, on `stream`: true for a response, false for a
/// reset. A GOAWAY follows the answer that `GoawayAfter` names (the client then closes).
fn answer(out: &mut Vec<u8>, fault: Fault, stream: u32, n: u64, goaway_sent: &mut bool) -> bool {
    match fault {
        Fault::ResetEvery(k) if n.is_multiple_of(k) => {
            frame(out, RST_STREAM, 0, stream, &2u32.to_be_bytes());
            return false;
        }
        Fault::RefuseEvery(k) if n.is_multiple_of(k) => {
            frame(out, RST_STREAM, 0, stream, &7u32.to_be_bytes());
            return false;
        }
        Fault::HeadersThenRefuseEvery(k) if n.is_multiple_of(k) => {
            frame(out, HEADERS, END_HEADERS, stream, &header_block(false));
            frame(out, RST_STREAM, 0, stream, &7u32.to_be_bytes());
            return false;
        }
        Fault::GoawayEachStream => {
            frame(out, GOAWAY, 0, 0, &[0; 8]);
            *goaway_sent = true;
            return false;
        }
        Fault::HeadersThenGoawayBelow(k) if n == k => {
            frame(out, HEADERS, END_HEADERS, stream, &header_block(false));
            let mut g = stream.saturating_sub(2).to_be_bytes().to_vec();
            g.extend_from_slice(&0u32.to_be_bytes());
            frame(out, GOAWAY, 0, 0, &g);
            *goaway_sent = true;
            return false;
        }
        Fault::Continuations(parts) => {
            let block = header_block(true);
            let step = block.len().div_ceil(parts + 1);
            let mut chunks = block.chunks(step);
            frame(out, HEADERS, 0, stream, chunks.next().unwrap());
            let rest: Vec<&[u8]> = chunks.collect();
            for (i, chunk) in rest.iter().enumerate() {
                let last = i + 1 == rest.len();
                frame(
                    out,
                    CONTINUATION,
                    if last { END_HEADERS } else { 0 },
                    stream,
                    chunk,
                );
            }
        }
        Fault::GoawayThenClose(k) | Fault::GoawayThenGone(k) if n == k => {
            let mut g = stream.to_be_bytes().to_vec();
            g.extend_from_slice(&0u32.to_be_bytes());
            frame(out, GOAWAY, 0, 0, &g);
            frame(out, HEADERS, END_HEADERS, stream, &header_block(false));
            frame(out, DATA, 0, stream, &BODY[..BODY.len() / 2]);
            *goaway_sent = true;
            return false;
        }
        Fault::BrokenThenGoaway => {
            frame(out, WINDOW_UPDATE, 0, 0, &0u32.to_be_bytes());
            frame(out, RST_STREAM, 0, stream, &2u32.to_be_bytes());
            let mut g = stream.to_be_bytes().to_vec();
            g.extend_from_slice(&0u32.to_be_bytes());
            frame(out, GOAWAY, 0, 0, &g);
            return false;
        }
        Fault::PaddedHalf { .. } => {
            frame(out, HEADERS, END_HEADERS, stream, &header_block(false));
            let mut padded = vec![10];
            padded.extend_from_slice(&BODY[..BODY.len() / 2]);
            padded.extend_from_slice(&[0; 10]);
            frame(out, DATA, PADDED, stream, &padded);
            return false;
        }
        Fault::RedirectOdd if n % 2 == 1 => {
            // `:status: 302` and `location: /next`, literal fields with indexed names (HPACK
            // static indexes 8 and 46).
            let mut b = vec![0x08, 3];
            b.extend_from_slice(b"302");
            b.extend_from_slice(&[0x0f, 46 - 15, 5]);
            b.extend_from_slice(b"/next");
            frame(out, HEADERS, END_HEADERS, stream, &b);
        }
        _ => frame(out, HEADERS, END_HEADERS, stream, &header_block(false)),
    }
    frame(out, DATA, END_STREAM, stream, BODY);
    if let Fault::GoawayAfter(k) | Fault::SlowSettings(_, k) = fault {
        if n == k {
            let mut g = stream.to_be_bytes().to_vec();
            g.extend_from_slice(&0u32.to_be_bytes());
            frame(out, GOAWAY, 0, 0, &g);
            *goaway_sent = true;
        }
    }
    true
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// `read_exact` that gives up when the server is stopped.
fn read_exact<S: Read>(conn: &mut S, buf: &mut [u8], stop: &AtomicBool) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        if stop.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::Interrupted.into());
        }
        match conn.read(&mut buf[got..]) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if is_timeout(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
