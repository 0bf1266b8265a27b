//! Client and server in one thread, exchanging datagrams through in-memory queues (no socket):
//! N requests over M connections, S streams at a time on each, 1 KiB responses whose bytes
//! depend on the request (so a response given to the wrong request shows). Each side's time
//! and Rust allocations are counted around its own calls only: the harness's buffers are
//! taken from pools filled before the run.

#![allow(dead_code)]

use http3::{Client, ClientConfig, ClientEvent, Limits, RequestId, Server, ServerConfig};
use http3::{ServerEvent, Trust, MAX_DATAGRAM};
use std::collections::VecDeque;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The response body's length.
pub const BODY_LEN: usize = 1024;

/// The body answered to request number `seed`: each byte depends on it and on its offset.
pub fn body_byte(seed: u64, offset: usize) -> u8 {
    ((seed.wrapping_mul(31) + offset as u64) % 251) as u8
}

/// A test CA and a leaf for localhost, as PEM files.
pub struct Certs {
    pub ca: test_support::certs::TestCa,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl Certs {
    pub fn new() -> Certs {
        let ca = test_support::certs::TestCa::new("flint http3 test CA");
        let (cert, key) = ca.leaf().write_pem(ca.dir());
        Certs { ca, cert, key }
    }

    pub fn server(&self, limits: &Limits) -> ServerConfig {
        ServerConfig::new(&self.cert, &self.key, limits).expect("server config")
    }

    pub fn client(&self, limits: &Limits) -> ClientConfig {
        let trust = Trust {
            cacert: Some(self.ca.pem.clone()),
            insecure: false,
        };
        ClientConfig::new(&trust, limits).expect("client config")
    }
}

/// What one side cost.
#[derive(Debug, Default, Clone, Copy)]
pub struct Cost {
    pub time: Duration,
    pub allocations: u64,
}

/// What a run did and cost.
#[derive(Debug, Default)]
pub struct Outcome {
    pub answered: u64,
    pub body_bytes: u64,
    pub wrong: u64,
    pub client: Cost,
    pub server: Cost,
    pub datagrams: u64,
}

struct Lane {
    client: Client,
    addr: SocketAddr,
    inbox: VecDeque<(Box<[u8]>, usize)>,
    /// Streams in flight: (stream, request number, body bytes checked so far).
    flight: Vec<(u64, u64, usize)>,
    issued: u64,
    quota: u64,
}

/// A pool of datagram buffers, filled before the run.
struct Pool(Vec<Box<[u8]>>);

impl Pool {
    fn take(&mut self) -> Box<[u8]> {
        self.0
            .pop()
            .unwrap_or_else(|| vec![0u8; MAX_DATAGRAM].into_boxed_slice())
    }
}

/// `n` requests over `m` connections, `s` at a time on each. `count` returns the allocations
/// counted so far (the test's global allocator), or 0 when none counts.
pub fn run(certs: &Certs, n: u64, m: usize, s: usize, count: fn() -> u64) -> Outcome {
    let limits = Limits::default();
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let mut server = Server::new(certs.server(&limits), server_addr);
    let mut client_config = certs.client(&limits);
    let mut pool = Pool(
        (0..4096)
            .map(|_| vec![0u8; MAX_DATAGRAM].into_boxed_slice())
            .collect(),
    );
    let mut lanes: Vec<Lane> = (0..m)
        .map(|i| {
            let addr: SocketAddr = format!("127.0.0.2:{}", 10_000 + i).parse().unwrap();
            let quota = n / m as u64 + u64::from((i as u64) < n % m as u64);
            Lane {
                client: Client::connect(&mut client_config, "localhost", addr, server_addr)
                    .expect("connect"),
                addr,
                inbox: VecDeque::with_capacity(4096),
                flight: Vec::with_capacity(s),
                issued: 0,
                quota,
            }
        })
        .collect();
    let mut to_server: VecDeque<(Box<[u8]>, usize, SocketAddr)> = VecDeque::with_capacity(4096);
    let mut pending: Vec<(RequestId, u64, usize)> = Vec::with_capacity(m * s);
    let mut body = [0u8; BODY_LEN];
    let mut read = vec![0u8; 64 * 1024];
    let mut paths: Vec<String> = (0..n).map(|k| format!("/file/{k}")).collect();
    let mut out = Outcome::default();
    let mut next_seed = 0u64;
    let deadline = Instant::now() + Duration::from_secs(120);

    while out.answered < n {
        assert!(Instant::now() < deadline, "no end within 120 s: {out:?}");
        let mut moved = 0u64;

        // The clients.
        let (t, a) = (Instant::now(), count());
        for lane in lanes.iter_mut() {
            while let Some((mut buf, len)) = lane.inbox.pop_front() {
                let _ = lane.client.recv(&mut buf[..len], server_addr);
                pool.0.push(buf);
            }
            while let Some(ev) = lane.client.poll() {
                match ev {
                    ClientEvent::Response { status, .. } => {
                        if status != 200 {
                            out.wrong += 1;
                        }
                    }
                    ClientEvent::Data { stream } => loop {
                        let got = lane.client.recv_body(stream, &mut read).unwrap_or(0);
                        if got == 0 {
                            break;
                        }
                        let Some(f) = lane.flight.iter_mut().find(|f| f.0 == stream) else {
                            out.wrong += 1;
                            break;
                        };
                        for (i, &b) in read[..got].iter().enumerate() {
                            if b != body_byte(f.1, f.2 + i) {
                                out.wrong += 1;
                            }
                        }
                        f.2 += got;
                        out.body_bytes += got as u64;
                    },
                    ClientEvent::Finished { stream } => {
                        if let Some(i) = lane.flight.iter().position(|f| f.0 == stream) {
                            if lane.flight[i].2 != BODY_LEN {
                                out.wrong += 1;
                            }
                            lane.flight.swap_remove(i);
                            out.answered += 1;
                            moved += 1;
                        }
                    }
                    other => panic!("unexpected {other:?}"),
                }
            }
            while lane.client.is_ready() && lane.flight.len() < s && lane.issued < lane.quota {
                let seed = next_seed;
                let path = std::mem::take(&mut paths[seed as usize]);
                let fields = [
                    (&b":method"[..], &b"GET"[..]),
                    (b":scheme", b"https"),
                    (b":authority", b"localhost"),
                    (b":path", path.as_bytes()),
                    (b"user-agent", b"flint"),
                ];
                let stream = lane
                    .client
                    .send_request(&fields, true)
                    .expect("send_request");
                paths[seed as usize] = path;
                lane.flight.push((stream, seed, 0));
                lane.issued += 1;
                next_seed += 1;
            }
            loop {
                let mut buf = pool.take();
                match lane.client.send(&mut buf) {
                    Some(d) => {
                        to_server.push_back((buf, d.len, lane.addr));
                        out.datagrams += 1;
                        moved += 1;
                    }
                    None => {
                        pool.0.push(buf);
                        break;
                    }
                }
            }
        }
        out.client.time += t.elapsed();
        out.client.allocations += count() - a;

        // The server.
        let (t, a) = (Instant::now(), count());
        while let Some((mut buf, len, from)) = to_server.pop_front() {
            server.recv(&mut buf[..len], from);
            pool.0.push(buf);
        }
        while let Some(ev) = server.poll() {
            match ev {
                ServerEvent::Request { id, fields, .. } => {
                    let seed = fields
                        .path()
                        .and_then(|p| p.strip_prefix(b"/file/"))
                        .and_then(|d| std::str::from_utf8(d).ok()?.parse::<u64>().ok());
                    let Some(seed) = seed else {
                        server.send_response(id, 404, &[], true).expect("404");
                        continue;
                    };
                    server
                        .send_response(
                            id,
                            200,
                            &[
                                (b"content-length", b"1024"),
                                (b"content-type", b"application/octet-stream"),
                            ],
                            false,
                        )
                        .expect("send_response");
                    pending.push((id, seed, 0));
                }
                ServerEvent::Writable { .. } | ServerEvent::BodyEnd { .. } => {}
                other => panic!("unexpected {other:?}"),
            }
        }
        let mut i = 0;
        while i < pending.len() {
            let (id, seed, sent) = pending[i];
            for (j, b) in body[sent..].iter_mut().enumerate() {
                *b = body_byte(seed, sent + j);
            }
            let took = server
                .send_body(id, &body[sent..], true)
                .expect("send_body");
            if sent + took == BODY_LEN {
                pending.swap_remove(i);
            } else {
                pending[i].2 += took;
                i += 1;
            }
        }
        loop {
            let mut buf = pool.take();
            match server.send(&mut buf) {
                Some(d) => {
                    let lane = (d.to.port() - 10_000) as usize;
                    lanes[lane].inbox.push_back((buf, d.len));
                    out.datagrams += 1;
                    moved += 1;
                }
                None => {
                    pool.0.push(buf);
                    break;
                }
            }
        }
        out.server.time += t.elapsed();
        out.server.allocations += count() - a;

        if moved == 0 {
            // Nothing in flight: wait for the earliest timer (acknowledgement delay, loss
            // detection), bounded, and run it.
            let next = lanes
                .iter()
                .filter_map(|l| l.client.deadline())
                .chain(server.deadline())
                .min();
            let now = Instant::now();
            if let Some(next) = next {
                if next > now {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                }
            }
            let now = Instant::now();
            let (t, a) = (Instant::now(), count());
            for lane in lanes.iter_mut() {
                if lane.client.deadline().is_some_and(|d| d <= now) {
                    lane.client.on_deadline();
                }
            }
            out.client.time += t.elapsed();
            out.client.allocations += count() - a;
            let (t, a) = (Instant::now(), count());
            server.on_deadline(now);
            out.server.time += t.elapsed();
            out.server.allocations += count() - a;
        }
    }
    out
}
