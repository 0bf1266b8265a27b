//! A small HTTP server for the engine's tests, well-behaved or misbehaving on purpose.
//!
//! One thread accepts on 127.0.0.1:0; each connection gets a thread that reads requests (a head
//! ends at CRLFCRLF) and answers every complete one in order, the way `Behaviour` says. It counts
//! what it saw: connections, requests, and the most requests that were complete in its buffer at
//! once before it answered any (a pipelining client shows its whole page there). Every wait is
//! bounded: reads time out every 20 ms to look at the stop flag, and dropping the server stops
//! and joins every thread.
#![allow(dead_code)] // each test file uses a different part

pub mod timed;

use bench::{BenchConfig, Page, Stop, Target, Workload};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
pub enum Behaviour {
    /// `Content-Length` bodies of this size; keep-alive unless HTTP/1.0 or `Connection: close`.
    Good(usize),
    /// Chunked bodies of this size, in chunks of at most 100 bytes.
    Chunked(usize),
    /// A body delimited by closing the connection.
    CloseDelimited(usize),
    /// Answers with a final status and an empty body (404, 500, 301...).
    Status(u16),
    /// `100 Continue`, then a good 5-byte response.
    Interim,
    /// Promises 100000 bytes, sends 10, then resets (SO_LINGER 0).
    ResetMidBody,
    /// Promises 100 bytes, sends 10, then closes normally.
    ShortBody,
    GarbageStatus,
    GarbageHeaders,
    /// Reads requests and never answers.
    NeverAnswer,
    /// A good response whose head is written in two parts 30 ms apart, so the client reads it
    /// in two pieces.
    SplitHead(usize),
    /// The head and half of a 1 MB body, then nothing (the connection stays open).
    StallMidBody,
    /// Good(body) responses, but closes after each without saying so (a keep-alive connection
    /// the server drops while idle).
    SilentClose(usize),
    /// A `Connection: close` response of this size, then 100 ms in which the client may close
    /// first (counted in `Seen::client_closed_first`), then the server's own close:
    /// `shutdown(Write)`, and the client's close after it is `Seen::server_closed_first`.
    CloseAfterPause(usize),
    /// A `Connection: close` response of this size, then no close: the connection stays open
    /// until the client closes it.
    NeverClose(usize),
    /// Ground truth for latency: each response (10-byte body) is written this long after its
    /// request was read, so no response can take less.
    Delayed(Duration),
    /// Ground truth for the end of a run: answers this many requests in all (10-byte bodies),
    /// then reads every later one and never answers, as a server that freezes.
    FreezeAfter(u64),
    /// Ground truth for what the client sends: the body of each response is the request
    /// exactly as received (head and body); to a HEAD, the head alone, with the Content-Length
    /// the body would have had.
    Echo,
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub connections: AtomicU64,
    pub requests: AtomicU64,
    pub max_batch: AtomicU64,
    pub client_closed_first: AtomicU64,
    pub server_closed_first: AtomicU64,
    /// Responses written (by the behaviours that count them: `FreezeAfter`).
    pub answered: AtomicU64,
    /// The last request `Echo` answered, exactly as received.
    pub last_request: std::sync::Mutex<Vec<u8>>,
}

impl Seen {
    pub fn last_request(&self) -> String {
        String::from_utf8_lossy(&self.last_request.lock().unwrap()).into_owned()
    }
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }
    pub fn max_batch(&self) -> u64 {
        self.max_batch.load(Ordering::SeqCst)
    }
    pub fn client_closed_first(&self) -> u64 {
        self.client_closed_first.load(Ordering::SeqCst)
    }
    pub fn server_closed_first(&self) -> u64 {
        self.server_closed_first.load(Ordering::SeqCst)
    }
    /// `server_closed_first` once it reaches `n` or 2 s have passed: the server thread counts a
    /// close after it sees the client's, which can be a moment after the run has returned.
    pub fn server_closed_first_reaching(&self, n: u64) -> u64 {
        let deadline = std::time::Instant::now() + Duration::from_secs(2);
        while self.server_closed_first() < n && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        self.server_closed_first()
    }
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl TestServer {
    pub fn start(behaviour: Behaviour) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let seen = Arc::new(Seen::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (s2, st2) = (seen.clone(), stop.clone());
        let accept = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for stream in listener.incoming() {
                if st2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                s2.connections.fetch_add(1, Ordering::SeqCst);
                let (s3, st3) = (s2.clone(), st2.clone());
                conns.push(std::thread::spawn(move || {
                    serve(stream, behaviour, &s3, &st3)
                }));
                // Reap finished connection threads so a long run does not pile them up.
                conns.retain(|h: &JoinHandle<()>| !h.is_finished());
            }
            for h in conns {
                let _ = h.join();
            }
        });
        TestServer {
            addr,
            seen,
            stop,
            accept: Some(accept),
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the blocking accept.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// A loopback address nothing listens on, for as long as this lives: a TCP socket bound to it,
/// never listening. Connects to it are refused, and no other socket can bind it meanwhile
/// (a port found free and released could go to another test's server: tests share a process).
pub struct RefusedAddr {
    _socket: socket2::Socket,
    pub addr: SocketAddr,
}

pub fn refused_addr() -> RefusedAddr {
    use socket2::{Domain, Socket, Type};
    // No SO_REUSEADDR: nobody else may bind the port, listening or not.
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    socket
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    let addr = socket.local_addr().unwrap().as_socket().unwrap();
    RefusedAddr {
        _socket: socket,
        addr,
    }
}

fn serve(mut s: TcpStream, b: Behaviour, seen: &Seen, stop: &AtomicBool) {
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    while !stop.load(Ordering::SeqCst) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let mut batch = Vec::new();
        while let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            // A request body (Content-Length) belongs to its request.
            let len = end + 4 + content_length(&buf[..end]);
            if buf.len() < len {
                break;
            }
            batch.push(buf.drain(..len).collect::<Vec<u8>>());
        }
        if batch.is_empty() {
            continue;
        }
        seen.requests
            .fetch_add(batch.len() as u64, Ordering::SeqCst);
        seen.max_batch
            .fetch_max(batch.len() as u64, Ordering::SeqCst);
        for req in batch {
            let text = String::from_utf8_lossy(&req);
            let http10 = text.lines().next().is_some_and(|l| l.ends_with("HTTP/1.0"));
            let close = http10 || text.to_ascii_lowercase().contains("connection: close");
            if !answer(&mut s, b, &req, http10, close, seen) {
                return;
            }
        }
    }
}

/// The Content-Length of a request head, 0 if none.
fn content_length(head: &[u8]) -> usize {
    String::from_utf8_lossy(head)
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse().ok())
        .unwrap_or(0)
}

/// Writes one answer; false when the connection must end.
fn answer(
    s: &mut TcpStream,
    b: Behaviour,
    req: &[u8],
    http10: bool,
    close: bool,
    seen: &Seen,
) -> bool {
    let v = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let conn = if close { "Connection: close\r\n" } else { "" };
    let w = |s: &mut TcpStream, bytes: &[u8]| s.write_all(bytes).is_ok();
    match b {
        Behaviour::Good(n) => {
            let head = format!("{v} 200 OK\r\nContent-Length: {n}\r\n{conn}\r\n");
            w(s, &[head.as_bytes(), &vec![b'x'; n]].concat()) && !close
        }
        Behaviour::SilentClose(n) => {
            let head = format!("{v} 200 OK\r\nContent-Length: {n}\r\n\r\n");
            let _ = w(s, &[head.as_bytes(), &vec![b'x'; n]].concat());
            false
        }
        Behaviour::Chunked(n) => {
            let mut out =
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{conn}\r\n").into_bytes();
            let mut left = n;
            while left > 0 {
                let k = left.min(100);
                out.extend_from_slice(format!("{k:x}\r\n").as_bytes());
                out.extend_from_slice(&vec![b'y'; k]);
                out.extend_from_slice(b"\r\n");
                left -= k;
            }
            out.extend_from_slice(b"0\r\n\r\n");
            w(s, &out) && !close
        }
        Behaviour::CloseDelimited(n) => {
            let head = format!("{v} 200 OK\r\n\r\n");
            let _ = w(s, &[head.as_bytes(), &vec![b'z'; n]].concat());
            false
        }
        Behaviour::Status(code) => {
            let head = format!(
                "{v} {code} Whatever\r\nLocation: /elsewhere\r\nContent-Length: 0\r\n{conn}\r\n"
            );
            w(s, head.as_bytes()) && !close
        }
        Behaviour::Interim => {
            let out = format!(
                "HTTP/1.1 100 Continue\r\n\r\n{v} 200 OK\r\nContent-Length: 5\r\n{conn}\r\nhello"
            );
            w(s, out.as_bytes()) && !close
        }
        Behaviour::ResetMidBody => {
            let _ = w(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n0123456789",
            );
            let _ = socket2::SockRef::from(&*s).set_linger(Some(Duration::ZERO));
            false
        }
        Behaviour::ShortBody => {
            let _ = w(
                s,
                b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789",
            );
            false
        }
        Behaviour::GarbageStatus => w(s, b"HTTX/9 what is this\r\n\r\n"),
        Behaviour::GarbageHeaders => w(
            s,
            b"HTTP/1.1 200 OK\r\nthis is not a header\r\nContent-Length: 0\r\n\r\n",
        ),
        Behaviour::NeverAnswer => true,
        Behaviour::SplitHead(n) => {
            let head = format!(
                "{v} 200 OK\r\nX-Padding: {}\r\nContent-Length: {n}\r\n{conn}\r\n",
                "p".repeat(100)
            );
            let (a, b) = head.as_bytes().split_at(40);
            let ok = w(s, a);
            std::thread::sleep(Duration::from_millis(30));
            ok && w(s, &[b, &vec![b'x'; n]].concat()) && !close
        }
        Behaviour::CloseAfterPause(n) => {
            let head = format!("{v} 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n");
            if !w(s, &[head.as_bytes(), &vec![b'x'; n]].concat()) {
                return false;
            }
            // EOF before our own close: the client closed first (and keeps the TIME_WAIT).
            // Half a second: long beside a loaded machine's scheduling, so that the response
            // time a client measures (which ends before this pause) stays clearly below it.
            if eof_within(s, Duration::from_millis(500)) {
                seen.client_closed_first.fetch_add(1, Ordering::SeqCst);
                return false;
            }
            let _ = s.shutdown(std::net::Shutdown::Write);
            if eof_within(s, Duration::from_secs(2)) {
                seen.server_closed_first.fetch_add(1, Ordering::SeqCst);
            }
            false
        }
        Behaviour::NeverClose(n) => {
            let head = format!("{v} 200 OK\r\nContent-Length: {n}\r\nConnection: close\r\n\r\n");
            w(s, &[head.as_bytes(), &vec![b'x'; n]].concat())
        }
        Behaviour::Delayed(d) => {
            std::thread::sleep(d);
            let head = format!("{v} 200 OK\r\nContent-Length: 10\r\n{conn}\r\n");
            w(s, &[head.as_bytes(), b"0123456789"].concat()) && !close
        }
        Behaviour::FreezeAfter(n) => {
            if seen.answered.fetch_add(1, Ordering::SeqCst) >= n {
                return true; // frozen: read on, answer nothing
            }
            let head = format!("{v} 200 OK\r\nContent-Length: 10\r\n{conn}\r\n");
            w(s, &[head.as_bytes(), b"0123456789"].concat()) && !close
        }
        Behaviour::Echo => {
            let head = format!(
                "{v} 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n{conn}\r\n",
                req.len()
            );
            let body: &[u8] = if req.starts_with(b"HEAD ") { b"" } else { req };
            *seen.last_request.lock().unwrap() = req.to_vec();
            w(s, &[head.as_bytes(), body].concat()) && !close
        }
        Behaviour::StallMidBody => {
            let _ = w(s, b"HTTP/1.1 200 OK\r\nContent-Length: 1000000\r\n\r\n");
            let _ = w(s, &vec![b'x'; 500_000]);
            true
        }
    }
}

/// Whether the peer's EOF (or a reset) arrives within `limit`; false if data or nothing came.
fn eof_within(s: &mut TcpStream, limit: Duration) -> bool {
    let _ = s.set_read_timeout(Some(limit));
    let r = s.read(&mut [0u8; 64]);
    let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
    match r {
        Ok(n) => n == 0,
        // A reset is a close too; a timeout is not.
        Err(e) => !matches!(
            e.kind(),
            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
        ),
    }
}

/// A workload from (name, weight, paths); URLs deduplicated in order of appearance.
pub fn workload(pages: &[(&str, f64, &[&str])]) -> Workload {
    let mut urls: Vec<String> = Vec::new();
    let pages = pages
        .iter()
        .map(|(name, weight, paths)| Page {
            name: (*name).into(),
            weight: *weight,
            files: paths
                .iter()
                .map(|p| match urls.iter().position(|u| u == p) {
                    Some(i) => i,
                    None => {
                        urls.push((*p).into());
                        urls.len() - 1
                    }
                })
                .collect(),
        })
        .collect();
    Workload {
        pages,
        urls,
        requests: Vec::new(),
        app: Default::default(),
    }
}

/// One page, one file.
pub fn one_file() -> Workload {
    Workload {
        pages: vec![Page {
            name: "a".into(),
            weight: 1.0,
            files: vec![0],
        }],
        urls: vec!["/a".into()],
        requests: Vec::new(),
        app: Default::default(),
    }
}

/// Keep-alive, closed loop, no warm-up, timeouts of 1 s, 2 threads at most.
pub fn config(addr: SocketAddr, concurrency: usize, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency,
        threads: concurrency.min(2),
        stop,
        connect_timeout: Duration::from_secs(1),
        response_timeout: Duration::from_secs(1),
        // These tests hold a run's accounting to what the server saw, faults included: a run
        // whose every attempt fails one way (a server that breaks each connection's first
        // stream) must run to its end, not stop early (`runner/fail_fast.rs` has tests of its
        // own).
        fail_fast: false,
        ..BenchConfig::new(Target::http(addr))
    }
}

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
