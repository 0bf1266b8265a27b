//! A server that records every request it receives: the truth a client's counts are held to.
//!
//! One thread accepts on 127.0.0.1:0; each connection gets a thread that reads requests (a head
//! ends at CRLFCRLF; requests here have no body), counts each complete one the moment it has
//! read it, and answers each in order: half the delay, the head, the other half, a 10-byte body
//! (so a client can be caught between the two), then, for HTTP/1.0, the close (a TLS one without
//! close_notify, which the client takes as a close). Some paths answer redirects (see
//! `redirect`). Plain TCP or TLS
//! (rustls, with the configuration given). A request is counted when it has been received,
//! whether or not its answer could be written: a client that closes at the end of its run is
//! still held to every request it sent.
//!
//! [`Recording::settled`] waits (bounded) until every connection has ended, so the count is
//! final once the client has closed its sockets. Every wait is bounded: reads time out every
//! 20 ms to look at the stop flag, and dropping the server stops and joins every thread.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

/// What the server received.
#[derive(Debug, Default)]
pub struct Received {
    requests: AtomicU64,
    /// Connections whose thread has not ended yet.
    open: AtomicU64,
    /// Accepts that found no connection waiting: one counted after a moment means every
    /// connection made before that moment has been accepted (and counted in `open`).
    empty_accepts: AtomicU64,
    /// When each request was read (wall clock), for a client's end to be compared with.
    arrivals: Mutex<Vec<SystemTime>>,
}

/// A running recording server; dropped, it stops.
pub struct Recording {
    /// Where it listens: 127.0.0.1 and the port the system gave.
    pub addr: SocketAddr,
    received: Arc<Received>,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
}

impl Recording {
    /// Plain HTTP; each answer takes `delay` in all.
    pub fn start(delay: Duration) -> Recording {
        Self::start_with(delay, None)
    }

    /// HTTPS with `tls` when given.
    pub fn start_with(delay: Duration, tls: Option<Arc<rustls::ServerConfig>>) -> Recording {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local address");
        let received = Arc::new(Received::default());
        let stop = Arc::new(AtomicBool::new(false));
        let (rx, st) = (received.clone(), stop.clone());
        listener
            .set_nonblocking(true)
            .expect("a nonblocking listener");
        let accept = std::thread::spawn(move || {
            let mut conns: Vec<JoinHandle<()>> = Vec::new();
            while !st.load(Ordering::SeqCst) {
                let stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        rx.empty_accepts.fetch_add(1, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_millis(1));
                        continue;
                    }
                    Err(_) => continue,
                };
                rx.open.fetch_add(1, Ordering::SeqCst);
                let _ = stream.set_nonblocking(false);
                let (rx, st, tls) = (rx.clone(), st.clone(), tls.clone());
                conns.push(std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(Duration::from_millis(20)));
                    let _ = stream.set_nodelay(true);
                    match tls.map(rustls::ServerConnection::new) {
                        None => serve(stream, delay, &rx, &st),
                        Some(Ok(conn)) => {
                            serve(rustls::StreamOwned::new(conn, stream), delay, &rx, &st)
                        }
                        Some(Err(_)) => {} // cannot be made: the connection is dropped
                    }
                    rx.open.fetch_sub(1, Ordering::SeqCst);
                }));
                conns.retain(|h| !h.is_finished());
            }
            for h in conns {
                let _ = h.join();
            }
        });
        Recording {
            addr,
            received,
            stop,
            accept: Some(accept),
        }
    }

    /// Requests received so far.
    pub fn requests(&self) -> u64 {
        self.received.requests.load(Ordering::SeqCst)
    }

    /// The count once every connection made so far has been accepted and has ended (the client
    /// closed them all), or `None` if some are still open after `limit`.
    pub fn settled(&self, limit: Duration) -> Option<u64> {
        let deadline = Instant::now() + limit;
        // A connection still in the accept queue is in no count yet: wait for an accept that
        // starts after now and finds the queue empty.
        let before = self.received.empty_accepts.load(Ordering::SeqCst);
        while self.received.empty_accepts.load(Ordering::SeqCst) < before + 2 {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        while self.received.open.load(Ordering::SeqCst) > 0 {
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        Some(self.requests())
    }

    /// The arrival times of every request so far.
    pub fn arrivals(&self) -> Vec<SystemTime> {
        self.received
            .arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(h) = self.accept.take() {
            let _ = h.join();
        }
    }
}

/// Reads, counts and answers until the client closes (or the server stops).
fn serve(mut s: impl Read + Write, delay: Duration, rx: &Received, stop: &AtomicBool) {
    let mut have = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let mut answering = true;
    while !stop.load(Ordering::SeqCst) {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => have.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(_) => return,
        }
        let mut heads = Vec::new();
        while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
            heads.push(have.drain(..end + 4).collect::<Vec<u8>>());
        }
        if heads.is_empty() {
            continue;
        }
        let now = SystemTime::now();
        rx.requests.fetch_add(heads.len() as u64, Ordering::SeqCst);
        rx.arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(std::iter::repeat_n(now, heads.len()));
        // Once an answer cannot be written (the client is gone) the rest are only counted.
        for head in heads {
            match answering.then(|| answer(&mut s, &head, delay)) {
                Some(Ok(true)) | None => {}
                Some(Ok(false)) => return, // HTTP/1.0: answered; closing is the end of it
                Some(Err(_)) => answering = false,
            }
        }
    }
}

/// The answer's status and Location by the request's path, for clients that follow redirects:
/// - `/hop/K/CODE...`: CODE with a Location to `/hop/K-1/CODE...` while K > 0 (a chain of K
///   redirects of the same origin), absolute paths;
/// - `/rel/K/x`: 302 to the relative `../K-1/x` while K > 0;
/// - `/loop`: 302 to itself, for ever;
/// - `/away`: 302 to another origin; `/nowhere`: 302 without a Location; `/bad`: 302 to a
///   Location that is no URL;
/// - anything else: 200.
fn redirect(path: &str) -> (u16, Option<String>) {
    let parts: Vec<&str> = path.split('/').collect();
    let hop = |k: &str| k.parse::<u32>().ok().filter(|&k| k > 0);
    match parts.as_slice() {
        ["", "hop", k, code, rest @ ..] if hop(k).is_some() => {
            let status = code.parse().unwrap_or(302);
            let next = (hop(k).unwrap() - 1).to_string();
            let to = [&["", "hop", next.as_str(), code], rest].concat();
            (status, Some(to.join("/")))
        }
        ["", "rel", k, name] if hop(k).is_some() => {
            (302, Some(format!("../{}/{name}", hop(k).unwrap() - 1)))
        }
        ["", "loop"] => (302, Some("/loop".into())),
        ["", "away"] => (302, Some("http://flint.invalid/away".into())),
        ["", "nowhere"] => (302, None),
        ["", "bad"] => (302, Some("http://[::1".into())),
        _ => (200, None),
    }
}

/// Half the delay, the head, the other half, the body; `Ok(false)` when the server closes now
/// (HTTP/1.0).
fn answer(s: &mut impl Write, head: &[u8], delay: Duration) -> io::Result<bool> {
    let http10 = head
        .split(|&b| b == b'\n')
        .next()
        .is_some_and(|l| l.ends_with(b"HTTP/1.0\r"));
    let v = if http10 { "HTTP/1.0" } else { "HTTP/1.1" };
    let path = head
        .split(|&b| b == b' ')
        .nth(1)
        .map(String::from_utf8_lossy)
        .unwrap_or_default();
    let (status, location) = redirect(&path);
    let location = location.map_or(String::new(), |l| format!("Location: {l}\r\n"));
    std::thread::sleep(delay / 2);
    let head = format!("{v} {status} X\r\n{location}Content-Length: 10\r\n\r\n");
    s.write_all(head.as_bytes())?;
    s.flush()?;
    std::thread::sleep(delay / 2);
    s.write_all(b"0123456789")?;
    s.flush()?;
    Ok(!http10)
}
