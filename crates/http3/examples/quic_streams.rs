//! quiche's QUIC alone, in memory, measured as bench/quic-choice measures quinn-proto: N
//! requests over M connections, S streams at a time on each, a 41-byte request and a 1 KiB
//! response a stream (no HTTP/3). CPU time around each side's calls and Rust allocations per
//! request; as there, each datagram is copied into a `Vec` of its own between the sides (one
//! allocation per datagram, counted in the side that sent it).
//!
//! `cargo run --release -p http3 --example quic_streams -- [REQUESTS] [CONNECTIONS] [STREAMS] [ROUNDS]`
//! (defaults 20000 40 10 3).

#[path = "../tests/common/memory.rs"]
mod memory;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

const BODY: [u8; 1024] = [b'x'; 1024];
const REQUEST: &[u8] = b"GET /file HTTP/3-like request of 41 bytes";

#[derive(Default)]
struct Cost {
    time: Duration,
    allocations: u64,
}

fn config(certs: &memory::Certs, server: bool) -> quiche::Config {
    let mut c = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    c.set_application_protos(&[b"h3"]).unwrap();
    c.set_max_idle_timeout(30_000);
    c.set_initial_max_data(10 << 20);
    c.set_initial_max_stream_data_bidi_local(1 << 20);
    c.set_initial_max_stream_data_bidi_remote(1 << 20);
    c.set_initial_max_streams_bidi(100);
    if server {
        c.load_cert_chain_from_pem_file(certs.cert.to_str().unwrap())
            .unwrap();
        c.load_priv_key_from_pem_file(certs.key.to_str().unwrap())
            .unwrap();
    } else {
        c.load_verify_locations_from_file(certs.ca.pem.to_str().unwrap())
            .unwrap();
        c.verify_peer(true);
    }
    c
}

fn cid() -> quiche::ConnectionId<'static> {
    let mut id = [0u8; 16];
    let n = fastrand::u128(..).to_ne_bytes();
    id.copy_from_slice(&n);
    quiche::ConnectionId::from_vec(id.to_vec())
}

struct Lane {
    conn: quiche::Connection,
    addr: SocketAddr,
    quota: u64,
    flight: usize,
    next_stream: u64,
    inbox: VecDeque<Vec<u8>>,
}

fn run(certs: &memory::Certs, n: u64, m: usize, s: usize) -> (Cost, Cost) {
    let mut sconf = config(certs, true);
    let mut cconf = config(certs, false);
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    // The server's connections, by the client's port (each client has its own address).
    let mut server: Vec<Option<quiche::Connection>> = (0..m).map(|_| None).collect();
    let mut lanes: Vec<Lane> = (0..m)
        .map(|i| {
            let addr: SocketAddr = format!("127.0.0.2:{}", 10_000 + i).parse().unwrap();
            let conn =
                quiche::connect(Some("localhost"), &cid(), addr, server_addr, &mut cconf).unwrap();
            let quota = n / m as u64 + u64::from((i as u64) < n % m as u64);
            Lane {
                conn,
                addr,
                quota,
                flight: 0,
                next_stream: 0,
                inbox: VecDeque::new(),
            }
        })
        .collect();
    let mut to_server: VecDeque<(Vec<u8>, SocketAddr)> = VecDeque::new();
    let mut buf = [0u8; 1500];
    let mut read = [0u8; 4096];
    let (mut cc, mut sc) = (Cost::default(), Cost::default());
    let mut answered = 0;
    let start = Instant::now();
    while answered < n {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "stuck at {answered}"
        );
        let mut moved = 0;
        let (t, a) = (Instant::now(), allocations());
        for lane in lanes.iter_mut() {
            let conn = &mut lane.conn;
            while let Some(mut d) = lane.inbox.pop_front() {
                let info = quiche::RecvInfo {
                    from: server_addr,
                    to: lane.addr,
                };
                let _ = conn.recv(&mut d, info);
            }
            while let Some(id) = conn.stream_readable_next() {
                while let Ok((_, fin)) = conn.stream_recv(id, &mut read) {
                    if fin {
                        answered += 1;
                        lane.flight -= 1;
                        moved += 1;
                    }
                }
            }
            while conn.is_established() && lane.flight < s && lane.quota > 0 {
                if conn.stream_send(lane.next_stream, REQUEST, true).is_err() {
                    break;
                }
                lane.next_stream += 4;
                lane.flight += 1;
                lane.quota -= 1;
            }
            while let Ok((len, _)) = conn.send(&mut buf) {
                to_server.push_back((buf[..len].to_vec(), lane.addr));
                moved += 1;
            }
        }
        cc.time += t.elapsed();
        cc.allocations += allocations() - a;

        let (t, a) = (Instant::now(), allocations());
        while let Some((mut d, from)) = to_server.pop_front() {
            let i = (from.port() - 10_000) as usize;
            if server[i].is_none() {
                server[i] =
                    Some(quiche::accept(&cid(), None, server_addr, from, &mut sconf).unwrap());
            }
            let conn = server[i].as_mut().unwrap();
            let info = quiche::RecvInfo {
                from,
                to: server_addr,
            };
            let _ = conn.recv(&mut d, info);
        }
        for (i, conn) in server.iter_mut().enumerate() {
            let Some(conn) = conn.as_mut() else { continue };
            while let Some(id) = conn.stream_readable_next() {
                while let Ok((_, fin)) = conn.stream_recv(id, &mut read) {
                    if fin {
                        conn.stream_send(id, &BODY, true).unwrap();
                    }
                }
            }
            while let Ok((len, info)) = conn.send(&mut buf) {
                debug_assert_eq!((info.to.port() - 10_000) as usize, i);
                lanes[i].inbox.push_back(buf[..len].to_vec());
                moved += 1;
            }
        }
        sc.time += t.elapsed();
        sc.allocations += allocations() - a;

        if moved == 0 {
            let next = lanes
                .iter()
                .filter_map(|l| l.conn.timeout_instant())
                .chain(server.iter().flatten().filter_map(|c| c.timeout_instant()))
                .min();
            if let Some(next) = next {
                let now = Instant::now();
                if next > now {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                }
            }
            let now = Instant::now();
            let (t, a) = (Instant::now(), allocations());
            for lane in lanes.iter_mut() {
                if lane.conn.timeout_instant().is_some_and(|d| d <= now) {
                    lane.conn.on_timeout();
                }
            }
            cc.time += t.elapsed();
            cc.allocations += allocations() - a;
            let (t, a) = (Instant::now(), allocations());
            for conn in server.iter_mut().flatten() {
                if conn.timeout_instant().is_some_and(|d| d <= now) {
                    conn.on_timeout();
                }
            }
            sc.time += t.elapsed();
            sc.allocations += allocations() - a;
        }
    }
    (cc, sc)
}

fn arg(i: usize, d: u64) -> u64 {
    std::env::args()
        .nth(i)
        .map(|a| a.parse().expect("a number"))
        .unwrap_or(d)
}

fn main() {
    let (n, m, s, rounds) = (
        arg(1, 20_000),
        arg(2, 40) as usize,
        arg(3, 10) as usize,
        arg(4, 3),
    );
    let certs = memory::Certs::new();
    println!("quiche 0.30 (QUIC only, BoringSSL): {n} requests, {m} connections x {s} streams, 1 KiB responses, in memory");
    println!("round  client us/req  client allocs/req  server us/req  server allocs/req");
    for r in 1..=rounds {
        let (c, sv) = run(&certs, n, m, s);
        let per = |x: f64| x / n as f64;
        println!(
            "{r:>5}  {:>13.2}  {:>17.1}  {:>13.2}  {:>17.1}",
            per(c.time.as_secs_f64() * 1e6),
            per(c.allocations as f64),
            per(sv.time.as_secs_f64() * 1e6),
            per(sv.allocations as f64)
        );
    }
}
