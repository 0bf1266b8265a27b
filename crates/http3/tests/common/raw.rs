//! A server and clients that are quiche connections driven by the test itself (no socket:
//! datagrams are handed across in memory, on the real clock), so a client can do what the
//! crate's `Client` never does: PING forever, send half a header block, never read a body,
//! come back with a Retry token of its own making. The server answers every request with
//! `body_len` bytes, sending more on each `Writable` event.

#![allow(dead_code)]

use http3::{RequestId, Server, ServerConfig, ServerEvent, MAX_DATAGRAM};
use quiche::h3;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

/// Every wait is bounded by this.
pub const BOUND: Duration = Duration::from_secs(30);

pub const SERVER: &str = "127.0.0.1:4433";

/// A client's QUIC settings: windows of `stream_window` bytes a stream (it reads nothing past
/// them unless it reads), the server's three HTTP/3 streams allowed, no certificate check.
pub fn client_config(stream_window: u64) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"h3"]).unwrap();
    c.verify_peer(false);
    c.set_max_idle_timeout(120_000);
    c.set_max_recv_udp_payload_size(MAX_DATAGRAM);
    c.set_max_send_udp_payload_size(1350);
    c.set_initial_max_data(stream_window * 4);
    c.set_initial_max_stream_data_bidi_local(stream_window);
    c.set_initial_max_stream_data_bidi_remote(stream_window);
    c.set_initial_max_stream_data_uni(64 * 1024);
    c.set_initial_max_streams_uni(3);
    c
}

/// One client connection.
pub struct Peer {
    pub quic: quiche::Connection,
    pub h3: Option<h3::Connection>,
    /// Sets up HTTP/3 once connected (false: the test reads its streams through QUIC alone,
    /// and the client keeps nothing of them at the HTTP/3 layer).
    pub http3: bool,
    pub addr: SocketAddr,
    /// Read response bodies (false: the client never opens its windows).
    pub reads: bool,
    /// PING every this long.
    pub ping: Option<Duration>,
    last_ping: Instant,
    pub goaway: Option<u64>,
    /// Streams answered whole, and their body bytes.
    pub finished: HashMap<u64, usize>,
    /// Streams the server reset, with the code.
    pub resets: HashMap<u64, u64>,
    /// Retry packets the server sent it.
    pub retries: u32,
    /// Changes each datagram it sends before the server gets it.
    pub tamper: Option<fn(&mut [u8])>,
    /// Set to drop every datagram the server sends it (a client gone quiet).
    pub deaf: bool,
}

impl Peer {
    /// A connection from `addr` (nothing sent until the next turn).
    pub fn connect(config: &mut quiche::Config, addr: SocketAddr) -> Peer {
        let id: [u8; 16] = std::array::from_fn(|_| fastrand::u8(..));
        let scid = quiche::ConnectionId::from_ref(&id);
        let quic = quiche::connect(
            Some("localhost"),
            &scid,
            addr,
            SERVER.parse().unwrap(),
            config,
        )
        .unwrap();
        Peer {
            quic,
            h3: None,
            http3: true,
            addr,
            reads: true,
            ping: None,
            last_ping: Instant::now(),
            goaway: None,
            finished: HashMap::new(),
            resets: HashMap::new(),
            retries: 0,
            tamper: None,
            deaf: false,
        }
    }

    /// A GET of `path`, whole (HEADERS and FIN); its stream.
    pub fn get(&mut self, path: &str) -> u64 {
        let fields = [
            h3::Header::new(b":method", b"GET"),
            h3::Header::new(b":scheme", b"https"),
            h3::Header::new(b":authority", b"localhost"),
            h3::Header::new(b":path", path.as_bytes()),
        ];
        let h3 = self.h3.as_mut().expect("HTTP/3 set up");
        h3.send_request(&mut self.quic, &fields, true).unwrap()
    }

    /// A GET of `/` on `stream`, chosen by the test (the client's HTTP/3 layer numbers its
    /// own from 0, one after the other): a HEADERS frame whose QPACK block names only the
    /// static table, sent whole with FIN.
    pub fn get_on(&mut self, stream: u64) {
        // Required insert count 0, base 0; :method GET (17), :scheme https (23), :path /
        // (1) indexed; :authority (0) named, with a literal value.
        let mut block = vec![0x00, 0x00, 0xc0 | 17, 0xc0 | 23, 0xc0 | 1, 0x50, 9];
        block.extend_from_slice(b"localhost");
        let mut frame = vec![0x01, block.len() as u8];
        frame.extend_from_slice(&block);
        assert_eq!(self.quic.stream_send(stream, &frame, true), Ok(frame.len()));
    }

    /// Whether the server reset `stream` with `code` (seen by HTTP/3 or by QUIC).
    pub fn was_reset(&mut self, stream: u64, code: u64) -> bool {
        let mut buf = [0u8; 64];
        self.resets.get(&stream) == Some(&code)
            || self.quic.stream_recv(stream, &mut buf) == Err(quiche::Error::StreamReset(code))
    }

    /// The server's CONNECTION_CLOSE, if it sent one: (application close, code).
    pub fn closed_by_server(&self) -> Option<(bool, u64)> {
        self.quic.peer_error().map(|e| (e.is_app, e.error_code))
    }

    fn poll(&mut self) {
        if self.h3.is_none() && self.http3 && self.quic.is_established() {
            let config = h3::Config::new().unwrap();
            self.h3 = Some(h3::Connection::with_transport(&mut self.quic, &config).unwrap());
        }
        let Some(h3) = self.h3.as_mut() else {
            return;
        };
        let mut buf = [0u8; 16 * 1024];
        loop {
            match h3.poll(&mut self.quic) {
                Ok((stream, h3::Event::Data)) if self.reads => {
                    while let Ok(n) = h3.recv_body(&mut self.quic, stream, &mut buf) {
                        *self.finished.entry(stream).or_default() += n;
                    }
                }
                Ok((stream, h3::Event::Finished)) => {
                    self.finished.entry(stream).or_default();
                }
                Ok((id, h3::Event::GoAway)) => self.goaway = Some(id),
                Ok((stream, h3::Event::Reset(code))) => {
                    self.resets.insert(stream, code);
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    }
}

/// The server, its clients, and what the server answers.
pub struct Net {
    pub server: Server,
    pub peers: Vec<Peer>,
    pub body_len: usize,
    /// Responses under way: how much of the body each has sent.
    sent: HashMap<RequestId, usize>,
    /// Requests whose response head flow control refused: never answered.
    unanswered: Vec<RequestId>,
    body: Vec<u8>,
    /// Connections the server reported closed.
    pub closed: u64,
    /// Request body bytes the server read, and bodies it saw end.
    pub body_read: u64,
    pub bodies_ended: u64,
    /// Requests the server handed out.
    pub requests: u64,
    /// Bodies left unread at their `Body` event, kept here for the test to read (as a
    /// server reads a body when whoever takes it wants more).
    pub deferred: Option<Vec<RequestId>>,
}

impl Net {
    pub fn new(config: ServerConfig, body_len: usize) -> Net {
        Net {
            server: Server::new(config, SERVER.parse().unwrap()),
            peers: Vec::new(),
            body_len,
            sent: HashMap::new(),
            unanswered: Vec::new(),
            body: vec![b'x'; body_len],
            closed: 0,
            body_read: 0,
            bodies_ended: 0,
            requests: 0,
            deferred: None,
        }
    }

    /// Datagrams both ways until none moves, the server's answers, both sides' timers, then
    /// a wait for the next deadline (at most 5 ms).
    pub fn turn(&mut self) {
        let mut buf = vec![0u8; 65_536];
        let server_addr: SocketAddr = SERVER.parse().unwrap();
        loop {
            let mut moved = false;
            for p in self.peers.iter_mut() {
                if p.ping.is_some_and(|every| p.last_ping.elapsed() >= every)
                    && p.quic.is_established()
                {
                    let _ = p.quic.send_ack_eliciting();
                    p.last_ping = Instant::now();
                }
                while let Ok((n, _)) = p.quic.send(&mut buf) {
                    if let Some(tamper) = p.tamper {
                        tamper(&mut buf[..n]);
                    }
                    self.server.recv(&mut buf[..n], p.addr);
                    moved = true;
                }
            }
            self.answer();
            while let Some(d) = self.server.send(&mut buf) {
                moved = true;
                let Some(p) = self.peers.iter_mut().find(|p| p.addr == d.to) else {
                    continue;
                };
                // A long header of type Retry (QUIC v1).
                p.retries += u32::from(buf[0] & 0xb0 == 0xb0);
                if !p.deaf {
                    let info = quiche::RecvInfo {
                        from: server_addr,
                        to: p.addr,
                    };
                    let _ = p.quic.recv(&mut buf[..d.len], info);
                    // Read as it comes: what precedes a CONNECTION_CLOSE is seen.
                    p.poll();
                }
            }
            for p in self.peers.iter_mut() {
                p.poll();
            }
            if !moved {
                break;
            }
        }
        let now = Instant::now();
        if self.server.deadline().is_some_and(|d| d <= now) {
            self.server.on_deadline(now);
        }
        for p in self.peers.iter_mut() {
            if p.quic.timeout_instant().is_some_and(|d| d <= now) {
                p.quic.on_timeout();
            }
        }
        let next = (self.server.deadline().into_iter())
            .chain(self.peers.iter().filter_map(|p| p.quic.timeout_instant()))
            .min()
            .map_or(Duration::from_millis(5), |d| {
                d.saturating_duration_since(Instant::now())
            });
        std::thread::sleep(next.min(Duration::from_millis(5)));
    }

    /// Turns until `done` holds; panics past [`BOUND`].
    pub fn until(&mut self, what: &str, mut done: impl FnMut(&mut Net) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(
                start.elapsed() < BOUND,
                "{what}: not within {BOUND:?}; {:?}",
                self.server.counts()
            );
            self.turn();
        }
    }

    fn answer(&mut self) {
        while let Some(e) = self.server.poll() {
            match e {
                ServerEvent::Request { id, .. } => {
                    self.requests += 1;
                    let len = self.body_len.to_string();
                    let fields = [(&b"content-length"[..], len.as_bytes())];
                    if self.server.send_response(id, 200, &fields, false).is_ok() {
                        self.sent.insert(id, 0);
                        self.push(id);
                    } else {
                        self.unanswered.push(id);
                    }
                }
                ServerEvent::Writable { id } => self.push(id),
                // A request body is read as it comes (the response does not wait for it).
                ServerEvent::Body { id } if self.deferred.is_some() => {
                    self.deferred.as_mut().unwrap().push(id);
                }
                ServerEvent::Body { id } => {
                    let mut buf = [0u8; 4096];
                    while let Ok(n @ 1..) = self.server.recv_body(id, &mut buf) {
                        self.body_read += n as u64;
                    }
                }
                ServerEvent::BodyEnd { .. } => self.bodies_ended += 1,
                // The client cancelled: what was left to send of its response is dropped, and
                // its stream reset, as flint serve does (a response never ended would keep
                // the stream, when the client reset only its request's side).
                ServerEvent::Reset { id, .. } => {
                    let unanswered = self.unanswered.len();
                    self.unanswered.retain(|&u| u != id);
                    let dropped = self.unanswered.len() < unanswered;
                    if self.sent.remove(&id).is_some() || dropped {
                        let _ = self.server.reset(id, http3::H3_REQUEST_CANCELLED);
                    }
                }
                ServerEvent::Closed { .. } => self.closed += 1,
            }
        }
    }

    fn push(&mut self, id: RequestId) {
        let Some(at) = self.sent.get_mut(&id) else {
            return;
        };
        match self.server.send_body(id, &self.body[*at..], true) {
            Ok(n) => *at += n,
            Err(_) => *at = self.body.len(),
        }
        if *at == self.body.len() {
            self.sent.remove(&id);
        }
    }
}
