//! Client and server over real UDP sockets on 127.0.0.1 (port 0): the server on a thread of
//! its own running a small blocking loop, the client driven by the test's thread. Every wait
//! is bounded; the server thread stops when its handle is dropped.

#![allow(dead_code)]

use http3::{Client, ClientConfig, ClientEvent, Closed, RequestId, Server, ServerConfig};
use http3::{ServerEvent, MAX_DATAGRAM};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The byte at `offset` of every body the server sends.
pub fn pattern(offset: usize) -> u8 {
    (offset % 251) as u8
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Log {
    pub requests: u64,
    /// Requests for `/stall` (never answered).
    pub stalled: u64,
    /// (path, code) of each stream the client reset.
    pub resets: Vec<(String, u64)>,
    pub closed: Vec<Closed>,
    /// Handshakes that resumed a session, as the server counts them (`Server::counts`).
    pub resumed: u64,
    /// Requests handed out while their connection was in 0-RTT (`Server::in_early_data`),
    /// with `ServerConfig::early_data` (served as any other).
    pub early: u64,
    /// Connections accepted, and open (as the server's loop last saw them).
    pub accepted: u64,
    pub connections: usize,
    /// Turns of the server's loop that wrote the counts above, each after reading every
    /// datagram waiting: one begun after a client's socket closed has read all it sent.
    pub turns: u64,
    /// New client addresses the connections moved to (`ServerCounts::address_changes`).
    pub address_changes: u64,
    /// Datagrams dropped from new addresses of IPs not proved (`address_changes_refused`).
    pub address_changes_refused: u64,
}

/// A server on 127.0.0.1:0. Paths: `/bytes/N` (N bytes of `pattern`), `/count` (a POST: the
/// body's length and byte sum, as text, once it has all come), `/reset` (the stream reset
/// with H3_REQUEST_REJECTED), `/stall` (never answered).
pub struct UdpServer {
    pub addr: SocketAddr,
    pub log: Arc<Mutex<Log>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for UdpServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Pending {
    path: String,
    /// `/bytes/N`: bytes still to send, and sent so far.
    len: usize,
    sent: usize,
    /// `/bytes/N`: the head has gone (flow control may hold it back: `Error::Blocked`).
    head_sent: bool,
    /// `/count`: body length and byte sum.
    count: (u64, u64),
    answered: bool,
}

impl UdpServer {
    pub fn start(config: ServerConfig) -> UdpServer {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = sock.local_addr().unwrap();
        let log = Arc::new(Mutex::new(Log::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (log.clone(), stop.clone());
        let thread = std::thread::spawn(move || serve(sock, Server::new(config, addr), l, s));
        UdpServer {
            addr,
            log,
            stop,
            thread: Some(thread),
        }
    }
}

fn serve(sock: UdpSocket, mut server: Server, log: Arc<Mutex<Log>>, stop: Arc<AtomicBool>) {
    let mut buf = vec![0u8; 65536];
    let mut out = vec![0u8; MAX_DATAGRAM];
    let mut body = vec![0u8; 256 * 1024];
    let mut pending: HashMap<RequestId, Pending> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        while let Some(d) = server.send(&mut out) {
            let _ = sock.send_to(&out[..d.len], d.to);
        }
        let wait = server
            .deadline()
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        sock.set_read_timeout(Some(wait)).unwrap();
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            server.recv(&mut buf[..n], from);
            sock.set_nonblocking(true).unwrap();
            while let Ok((n, from)) = sock.recv_from(&mut buf) {
                server.recv(&mut buf[..n], from);
            }
            sock.set_nonblocking(false).unwrap();
        }
        server.on_deadline(Instant::now());
        let counts = server.counts();
        let mut l = log.lock().unwrap();
        l.resumed = counts.resumed;
        l.accepted = counts.accepted;
        l.connections = server.connections();
        l.turns += 1;
        l.address_changes = counts.address_changes;
        l.address_changes_refused = counts.address_changes_refused;
        drop(l);
        while let Some(ev) = server.poll() {
            match ev {
                ServerEvent::Request { id, fields, end } => {
                    let early = server.in_early_data(id.conn);
                    let mut l = log.lock().unwrap();
                    l.requests += 1;
                    l.early += u64::from(early);
                    drop(l);
                    let path = String::from_utf8_lossy(fields.path().unwrap_or(b"")).into_owned();
                    let len = path
                        .strip_prefix("/bytes/")
                        .and_then(|n| n.parse().ok())
                        .unwrap_or(0);
                    if path == "/stall" {
                        log.lock().unwrap().stalled += 1;
                    }
                    if path == "/reset" {
                        server.reset(id, 0x10b).unwrap();
                        continue;
                    }
                    if path == "/count" && end {
                        server.send_response(id, 400, &[], true).unwrap();
                    }
                    pending.insert(
                        id,
                        Pending {
                            path,
                            len,
                            sent: 0,
                            head_sent: false,
                            count: (0, 0),
                            answered: false,
                        },
                    );
                }
                ServerEvent::Body { id } => loop {
                    let n = server.recv_body(id, &mut buf).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    if let Some(p) = pending.get_mut(&id) {
                        p.count.0 += n as u64;
                        p.count.1 += buf[..n].iter().map(|&b| u64::from(b)).sum::<u64>();
                    }
                },
                ServerEvent::BodyEnd { id } => {
                    if let Some(p) = pending.get_mut(&id) {
                        if p.path == "/count" && !p.answered {
                            p.answered = true;
                            let text = format!("{} {}", p.count.0, p.count.1);
                            server.send_response(id, 200, &[], false).unwrap();
                            server.send_body(id, text.as_bytes(), true).unwrap();
                        }
                    }
                }
                ServerEvent::Reset { id, code } => {
                    let path = pending.remove(&id).map(|p| p.path).unwrap_or_default();
                    log.lock().unwrap().resets.push((path, code));
                }
                ServerEvent::Closed { why, .. } => log.lock().unwrap().closed.push(why),
                ServerEvent::Writable { .. } => {}
            }
        }
        // Bodies go on as flow control allows.
        pending.retain(|&id, p| {
            if !p.path.starts_with("/bytes/") {
                return true;
            }
            if !p.head_sent {
                let cl = p.len.to_string();
                match server.send_response(id, 200, &[(b"content-length", cl.as_bytes())], false) {
                    Ok(()) => p.head_sent = true,
                    // Until a Writable event (this loop runs at every turn).
                    Err(http3::Error::Blocked) => return true,
                    Err(e) => panic!("send_response: {e}"),
                }
            }
            while p.sent < p.len {
                let chunk = (p.len - p.sent).min(body.len());
                for (i, b) in body[..chunk].iter_mut().enumerate() {
                    *b = pattern(p.sent + i);
                }
                match server.send_body(id, &body[..chunk], p.sent + chunk == p.len) {
                    Ok(0) | Err(_) => return server.stats(id.conn).is_ok() && p.sent < p.len,
                    Ok(n) => p.sent += n,
                }
            }
            false
        });
    }
}

/// A client connection on its own socket, driven by the test's thread.
pub struct Driver {
    pub client: Client,
    sock: UdpSocket,
    /// The sockets left by `rebind`, kept open so that no later one gets the same port.
    left: Vec<UdpSocket>,
    server: SocketAddr,
    buf: Vec<u8>,
    /// Datagrams received, on whichever socket was the client's then.
    pub received: u64,
    /// If set, the datagrams of long-header packets after the first (the Initial that
    /// starts the connection) go from this socket instead: from another port.
    pub long_via: Option<UdpSocket>,
    /// If set, the next datagram is sent from this socket first, then from the client's (a
    /// copy of the client's packet from another port, ahead of it); cleared once used.
    pub copy_via: Option<UdpSocket>,
    /// Datagrams sent, and those of them sent from `long_via`.
    sent: u64,
    pub diverted: u64,
}

impl Driver {
    pub fn connect(config: &mut ClientConfig, name: &str, server: SocketAddr) -> Driver {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let local = sock.local_addr().unwrap();
        let client = Client::connect(config, name, local, server).expect("connect");
        Driver {
            client,
            sock,
            left: Vec::new(),
            server,
            buf: vec![0u8; 65536],
            received: 0,
            long_via: None,
            copy_via: None,
            sent: 0,
            diverted: 0,
        }
    }

    /// Sends what is queued, waits for datagrams (at most until the next deadline, and 20 ms),
    /// runs the timers, and returns the events.
    pub fn turn(&mut self) -> Vec<ClientEvent> {
        let mut out = [0u8; MAX_DATAGRAM];
        while let Some(d) = self.client.send(&mut out) {
            if let Some(via) = self.copy_via.take() {
                via.send_to(&out[..d.len], d.to).unwrap();
            }
            let sock = match &self.long_via {
                Some(via) if self.sent > 0 && out[0] & 0x80 != 0 => {
                    self.diverted += 1;
                    via
                }
                _ => &self.sock,
            };
            sock.send_to(&out[..d.len], d.to).unwrap();
            self.sent += 1;
        }
        let wait = self
            .client
            .deadline()
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        self.sock.set_read_timeout(Some(wait)).unwrap();
        if let Ok((n, from)) = self.sock.recv_from(&mut self.buf) {
            let _ = self.client.recv(&mut self.buf[..n], from);
            self.received += 1;
            self.sock.set_nonblocking(true).unwrap();
            while let Ok((n, from)) = self.sock.recv_from(&mut self.buf) {
                let _ = self.client.recv(&mut self.buf[..n], from);
                self.received += 1;
            }
            self.sock.set_nonblocking(false).unwrap();
        }
        if self.client.deadline().is_some_and(|d| d <= Instant::now()) {
            self.client.on_deadline();
        }
        let mut events = Vec::new();
        while let Some(e) = self.client.poll() {
            events.push(e);
        }
        events
    }

    /// Turns until `done` holds, or panics after `bound`.
    pub fn until(&mut self, bound: Duration, mut done: impl FnMut(&mut Driver) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < bound, "not done within {bound:?}");
        }
    }

    /// Turns until the handshake is done (or the connection has ended), within 10 s.
    pub fn ready(&mut self) {
        self.until(Duration::from_secs(10), |d| {
            d.turn();
            d.client.is_ready() || d.client.is_closed()
        });
    }

    pub fn server(&self) -> SocketAddr {
        self.server
    }

    /// Goes on from a new socket (a new port), as a NAT that rebinds the client's mapping
    /// does: the client's QUIC knows nothing of it (its local address stays the first).
    pub fn rebind(&mut self) {
        self.rebind_to([127, 0, 0, 1]);
    }

    /// Goes on from a new socket on `ip` (a loopback address: all of 127/8 is one's own), as a
    /// client that changed networks does; returns its address.
    pub fn rebind_to(&mut self, ip: [u8; 4]) -> SocketAddr {
        let new = UdpSocket::bind(SocketAddr::from((ip, 0))).expect("bind a loopback address");
        let addr = new.local_addr().unwrap();
        self.left.push(std::mem::replace(&mut self.sock, new));
        addr
    }

    /// Sends `bytes` to the server from every socket `rebind` left, oldest first.
    pub fn send_from_left(&self, bytes: &[u8]) {
        for s in &self.left {
            s.send_to(bytes, self.server).unwrap();
        }
    }

    /// Datagrams waiting, unread, at the socket left at `addr` (0 if there is none).
    pub fn waiting_at(&self, addr: SocketAddr) -> u64 {
        let mut buf = [0u8; 2048];
        let mut n = 0;
        for s in self
            .left
            .iter()
            .filter(|s| s.local_addr().ok() == Some(addr))
        {
            s.set_nonblocking(true).unwrap();
            while s.recv_from(&mut buf).is_ok() {
                n += 1;
            }
        }
        n
    }

    /// The port datagrams go from now.
    pub fn port(&self) -> u16 {
        self.sock.local_addr().unwrap().port()
    }
}

/// A GET's fields for `path`.
pub fn get(path: &str) -> [(&[u8], &[u8]); 4] {
    [
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", path.as_bytes()),
    ]
}
