//! HTTP/3 against flint serve: a test CA and a leaf for localhost (the server's certificate),
//! and a client connection (the `http3` crate's `Client`) on its own UDP socket, driven by
//! the test's thread; `cgi` sets up programs behind such a server. Every wait is bounded.
#![allow(dead_code)]

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use http3::{Client, ClientConfig, ClientEvent, Limits, Trust, MAX_DATAGRAM};
use test_support::certs::TestCa;

use crate::common::TestServer;

pub mod cgi;

/// Every wait of these tests is bounded by this.
pub const BOUND: Duration = Duration::from_secs(30);

/// A CA the client trusts and a leaf for localhost it signed, as PEM files.
pub struct Certs {
    pub ca: TestCa,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Certs {
    pub fn new() -> Certs {
        let ca = TestCa::new("flint serve HTTP/3 test CA");
        let (cert, key) = ca.leaf().write_pem(ca.dir());
        Certs { ca, cert, key }
    }

    /// flint serve with TLS and HTTP/3 required on 127.0.0.1:0, one thread; `tweak` adjusts.
    pub fn serve(&self, tweak: impl FnOnce(&mut serve::Config)) -> TestServer {
        let (cert, key) = (self.cert.clone(), self.key.clone());
        TestServer::start(move |c| {
            c.tls_cert = Some(cert);
            c.tls_key = Some(key);
            c.http3 = Some(true);
            tweak(c);
        })
    }

    pub fn client(&self) -> ClientConfig {
        self.client_with(&Limits::default())
    }

    /// A client with these limits (its idle timeout, say).
    pub fn client_with(&self, limits: &Limits) -> ClientConfig {
        let trust = Trust {
            cacert: Some(self.ca.pem.clone()),
            insecure: false,
        };
        ClientConfig::new(&trust, limits).expect("client config")
    }
}

/// Sends on `sock` every datagram `client` has to send.
pub fn flush(client: &mut Client, sock: &UdpSocket) {
    let mut out = [0u8; MAX_DATAGRAM];
    while let Some(d) = client.send(&mut out) {
        sock.send_to(&out[..d.len], d.to).unwrap();
    }
}

/// Waits on `sock` for a datagram until `client`'s next deadline (1 to 20 ms): its length in
/// `buf` and its sender, or None if none came.
pub fn recv_until_deadline(
    client: &Client,
    sock: &UdpSocket,
    buf: &mut [u8],
) -> Option<(usize, SocketAddr)> {
    let wait = (client.deadline())
        .map(|d| d.saturating_duration_since(Instant::now()))
        .unwrap_or(Duration::from_millis(20))
        .clamp(Duration::from_millis(1), Duration::from_millis(20));
    sock.set_read_timeout(Some(wait)).unwrap();
    sock.recv_from(buf).ok()
}

/// One response as the client saw it.
#[derive(Debug, Default, Clone)]
pub struct Got {
    pub status: u16,
    pub fields: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub finished: bool,
    pub reset: Option<u64>,
}

impl Got {
    pub fn field(&self, name: &str) -> Option<&str> {
        (self.fields.iter().find(|(n, _)| n == name)).map(|(_, v)| v.as_str())
    }
}

/// A client connection on its own socket.
pub struct Driver {
    pub client: Client,
    sock: UdpSocket,
    /// The sockets `rebind` left, kept open so that no later one gets the same port (a port
    /// the connection had already is no change of address).
    left: Vec<UdpSocket>,
    buf: Vec<u8>,
    pub got: HashMap<u64, Got>,
    pub goaway: Option<u64>,
    /// Read response bodies (false: the client never opens its windows to them).
    pub reads: bool,
    /// PING every turn (the QUIC idle timeout never ends the connection).
    pub pings: bool,
}

impl Driver {
    /// Connects to `server` and waits (bounded) for the handshake.
    pub fn connect(config: &mut ClientConfig, server: SocketAddr) -> Driver {
        let d = Driver::try_connect(config, server);
        assert!(d.client.is_ready(), "handshake: {:?}", d.client.closed());
        d
    }

    /// Connects to `server` and waits (bounded) for the handshake to finish or fail.
    pub fn try_connect(config: &mut ClientConfig, server: SocketAddr) -> Driver {
        let sock = UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let local = sock.local_addr().unwrap();
        let client = Client::connect(config, "localhost", local, server).expect("connect");
        let mut d = Driver {
            client,
            sock,
            left: Vec::new(),
            buf: vec![0u8; 65536],
            got: HashMap::new(),
            goaway: None,
            reads: true,
            pings: false,
        };
        d.until(|d| d.client.is_ready() || d.client.is_closed());
        d
    }

    /// Moves the connection to a new UDP socket (a new source port), as a NAT that rebinds
    /// the client's mapping would; the client is not told (its quiche still sees its first
    /// address), and what the old socket gets is no longer read. The new socket's address.
    pub fn rebind(&mut self) -> SocketAddr {
        let new = UdpSocket::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        self.left.push(std::mem::replace(&mut self.sock, new));
        self.sock.local_addr().unwrap()
    }

    /// Sends what is queued, waits for datagrams (until the next deadline, at most 20 ms),
    /// runs the timers, and files each event under its stream.
    pub fn turn(&mut self) {
        if self.pings && self.client.is_ready() {
            self.client.ping();
        }
        flush(&mut self.client, &self.sock);
        if let Some((n, from)) = recv_until_deadline(&self.client, &self.sock, &mut self.buf) {
            let _ = self.client.recv(&mut self.buf[..n], from);
            self.sock.set_nonblocking(true).unwrap();
            while let Ok((n, from)) = self.sock.recv_from(&mut self.buf) {
                let _ = self.client.recv(&mut self.buf[..n], from);
            }
            self.sock.set_nonblocking(false).unwrap();
        }
        if self.client.deadline().is_some_and(|d| d <= Instant::now()) {
            self.client.on_deadline();
        }
        while let Some(e) = self.client.poll() {
            match e {
                ClientEvent::Response {
                    stream,
                    status,
                    fields,
                    end,
                    ..
                } => {
                    let g = self.got.entry(stream).or_default();
                    g.status = status;
                    g.fields = fields
                        .iter()
                        .map(|(n, v)| {
                            let s = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
                            (s(n), s(v))
                        })
                        .collect();
                    g.finished |= end;
                }
                ClientEvent::Data { .. } if !self.reads => {}
                ClientEvent::Data { stream } => loop {
                    let n = self.client.recv_body(stream, &mut self.buf).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    let g = self.got.entry(stream).or_default();
                    g.body.extend_from_slice(&self.buf[..n]);
                },
                ClientEvent::Finished { stream } => {
                    self.got.entry(stream).or_default().finished = true
                }
                ClientEvent::Reset { stream, code } => {
                    self.got.entry(stream).or_default().reset = Some(code)
                }
                ClientEvent::GoAway { id } => self.goaway = Some(id),
                ClientEvent::Trailers { .. } => {}
                // flint serve never sends one: a test that meets it fails.
                ClientEvent::Malformed { stream } => panic!("stream {stream}: a malformed head"),
            }
        }
    }

    /// Turns until `done` holds; panics past [`BOUND`].
    pub fn until(&mut self, mut done: impl FnMut(&mut Driver) -> bool) {
        let start = Instant::now();
        while !done(self) {
            assert!(start.elapsed() < BOUND, "not done within {BOUND:?}");
            self.turn();
        }
    }

    /// Sends a request for `path` with `method` and extra `fields`; its stream.
    pub fn request(&mut self, method: &str, path: &str, fields: &[(&str, &str)]) -> u64 {
        self.open(method, path, fields, true)
    }

    /// Sends a request's head, ending its stream when `end` (else a body is to follow);
    /// its stream.
    pub fn open(&mut self, method: &str, path: &str, fields: &[(&str, &str)], end: bool) -> u64 {
        let mut list: Vec<(&[u8], &[u8])> = vec![
            (b":method", method.as_bytes()),
            (b":scheme", b"https"),
            (b":authority", b"localhost"),
            (b":path", path.as_bytes()),
        ];
        list.extend(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())));
        self.client.send_request(&list, end).expect("send_request")
    }

    /// Sends `body` on `stream` and ends it, turning as flow control allows.
    pub fn send_all(&mut self, stream: u64, body: &[u8]) {
        let mut at = 0;
        self.until(|d| {
            at += d.client.send_body(stream, &body[at..], true).unwrap_or(0);
            at == body.len()
        });
    }

    /// Reads what `stream` holds for the client now into its response (what came while
    /// `reads` was off: its `Data` events were passed over).
    pub fn drain(&mut self, stream: u64) {
        while let Ok(n @ 1..) = self.client.recv_body(stream, &mut self.buf) {
            let g = self.got.entry(stream).or_default();
            g.body.extend_from_slice(&self.buf[..n]);
        }
    }

    /// Closes the connection (no error) and sends the close.
    pub fn close(&mut self) {
        self.client.close(http3::H3_NO_ERROR, b"");
        self.turn();
    }

    /// Sends every request at once, then turns until each has finished or been reset.
    pub fn fetch(&mut self, requests: &[(&str, &str)]) -> Vec<Got> {
        let streams: Vec<u64> = (requests.iter())
            .map(|(method, path)| self.request(method, path, &[]))
            .collect();
        self.wait(&streams)
    }

    /// Turns until every one of `streams` has finished or been reset; their responses.
    pub fn wait(&mut self, streams: &[u64]) -> Vec<Got> {
        self.until(|d| {
            streams
                .iter()
                .all(|s| (d.got.get(s)).is_some_and(|g| g.finished || g.reset.is_some()))
        });
        streams.iter().map(|s| self.got[s].clone()).collect()
    }
}
