//! quinn-proto's QUIC alone, in memory: N requests over M connections, S streams at a time on
//! each, a 41-byte request and a 1 KiB response a stream (no HTTP/3: quinn has none). Prints
//! CPU time (around each side's calls) and Rust allocations per request, for comparison with
//! `cargo run --release -p http3 --example quic_streams` (quiche's QUIC the same way).
//!
//! `cargo run --release -- [REQUESTS] [CONNECTIONS] [STREAMS] [ROUNDS]` (defaults 20000 40 10 3)

use bytes::BytesMut;
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, Endpoint, EndpointConfig,
    Event, ServerConfig, StreamEvent, StreamId, TransportConfig, VarInt,
};
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
struct Counting;
// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(p, l, n) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) }
    }
}
#[global_allocator]
static GLOBAL: Counting = Counting;
fn count() -> u64 {
    ALLOCATIONS.load(Ordering::Relaxed)
}

const BODY: [u8; 1024] = [b'x'; 1024];
const REQUEST: &[u8] = b"GET /file HTTP/3-like request of 41 bytes";

#[derive(Default)]
struct Cost {
    time: Duration,
    allocations: u64,
}

fn configs() -> (ServerConfig, ClientConfig) {
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let key = rustls::pki_types::PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der());
    let mut sc = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![ck.cert.der().clone()], key.into())
        .unwrap();
    sc.alpn_protocols = vec![b"h3".to_vec()];
    let mut transport = TransportConfig::default();
    transport.max_concurrent_bidi_streams(VarInt::from_u32(100));
    let mut server = ServerConfig::with_crypto(Arc::new(QuicServerConfig::try_from(sc).unwrap()));
    server.transport_config(Arc::new(transport));
    let mut roots = rustls::RootCertStore::empty();
    roots.add(ck.cert.der().clone()).unwrap();
    let mut cc = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cc.alpn_protocols = vec![b"h3".to_vec()];
    let client = ClientConfig::new(Arc::new(QuicClientConfig::try_from(cc).unwrap()));
    (server, client)
}

struct Side {
    ep: Endpoint,
    conns: HashMap<ConnectionHandle, Connection>,
}

impl Side {
    /// A datagram in: to its connection, or a new one.
    fn recv(
        &mut self,
        now: Instant,
        from: SocketAddr,
        data: &[u8],
        out: &mut VecDeque<(Vec<u8>, SocketAddr)>,
    ) {
        let mut resp = Vec::new();
        match self
            .ep
            .handle(now, from, None, None, BytesMut::from(data), &mut resp)
        {
            Some(DatagramEvent::ConnectionEvent(ch, ev)) => {
                if let Some(c) = self.conns.get_mut(&ch) {
                    c.handle_event(ev)
                }
            }
            Some(DatagramEvent::NewConnection(inc)) => {
                match self.ep.accept(inc, now, &mut resp, None) {
                    Ok((ch, c)) => {
                        self.conns.insert(ch, c);
                    }
                    Err(e) => {
                        if let Some(t) = e.response {
                            out.push_back((resp[..t.size].to_vec(), t.destination));
                        }
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                out.push_back((resp[..t.size].to_vec(), t.destination))
            }
            None => {}
        }
    }

    /// Endpoint events, then every datagram to send.
    fn flush(
        &mut self,
        now: Instant,
        buf: &mut Vec<u8>,
        out: &mut VecDeque<(Vec<u8>, SocketAddr)>,
    ) -> u64 {
        let mut n = 0;
        for (&ch, c) in self.conns.iter_mut() {
            while let Some(ev) = c.poll_endpoint_events() {
                if let Some(cev) = self.ep.handle_event(ch, ev) {
                    c.handle_event(cev);
                }
            }
            loop {
                buf.clear();
                match c.poll_transmit(now, 1, buf) {
                    Some(t) => {
                        out.push_back((buf[..t.size].to_vec(), t.destination));
                        n += 1;
                    }
                    None => break,
                }
            }
        }
        n
    }
}

fn run(n: u64, m: usize, s: usize) -> (u64, Cost, Cost) {
    let (server_config, client_config) = configs();
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let mut server = Side {
        ep: Endpoint::new(
            Arc::new(EndpointConfig::default()),
            Some(Arc::new(server_config)),
            true,
            None,
        ),
        conns: HashMap::new(),
    };
    let mut clients: Vec<(
        Side,
        SocketAddr,
        ConnectionHandle,
        u64,
        usize,
        VecDeque<(Vec<u8>, SocketAddr)>,
    )> = (0..m)
        .map(|i| {
            let addr: SocketAddr = format!("127.0.0.2:{}", 10_000 + i).parse().unwrap();
            let mut ep = Endpoint::new(Arc::new(EndpointConfig::default()), None, true, None);
            let (ch, conn) = ep
                .connect(
                    Instant::now(),
                    client_config.clone(),
                    server_addr,
                    "localhost",
                )
                .unwrap();
            let mut conns = HashMap::new();
            conns.insert(ch, conn);
            let quota = n / m as u64 + u64::from((i as u64) < n % m as u64);
            (Side { ep, conns }, addr, ch, quota, 0usize, VecDeque::new())
        })
        .collect();
    let mut to_server: VecDeque<(Vec<u8>, SocketAddr, SocketAddr)> = VecDeque::new();
    let mut buf = Vec::with_capacity(1500);
    let (mut cc, mut sc) = (Cost::default(), Cost::default());
    let mut answered = 0u64;
    let mut connected = vec![false; m];
    let start = Instant::now();
    while answered < n {
        assert!(
            start.elapsed() < Duration::from_secs(300),
            "stuck at {answered}"
        );
        let mut moved = 0;
        let (t, a) = (Instant::now(), count());
        for (i, (side, addr, ch, quota, flight, inbox)) in clients.iter_mut().enumerate() {
            let now = Instant::now();
            let mut sink = VecDeque::new();
            while let Some((d, _)) = inbox.pop_front() {
                side.recv(now, server_addr, &d, &mut sink);
            }
            let conn = side.conns.get_mut(ch).unwrap();
            while let Some(ev) = conn.poll() {
                if std::env::var_os("DEBUG").is_some() {
                    eprintln!("client {i}: {ev:?}");
                }
                match ev {
                    Event::Connected => connected[i] = true,
                    Event::Stream(StreamEvent::Readable { id }) => {
                        let mut rs = conn.recv_stream(id);
                        let Ok(mut chunks) = rs.read(true) else {
                            continue;
                        };
                        let mut done = false;
                        loop {
                            match chunks.next(usize::MAX) {
                                Ok(Some(_)) => {}
                                Ok(None) => {
                                    done = true;
                                    break;
                                }
                                Err(_) => break,
                            }
                        }
                        let _ = chunks.finalize();
                        if done {
                            answered += 1;
                            *flight -= 1;
                            moved += 1;
                        }
                    }
                    _ => {}
                }
            }
            while connected[i] && *flight < s && *quota > 0 {
                let Some(id): Option<StreamId> = conn.streams().open(Dir::Bi) else {
                    break;
                };
                conn.send_stream(id).write(REQUEST).unwrap();
                conn.send_stream(id).finish().unwrap();
                *flight += 1;
                *quota -= 1;
            }
            let mut out = VecDeque::new();
            moved += side.flush(now, &mut buf, &mut out);
            for (d, _) in out {
                to_server.push_back((d, *addr, server_addr));
            }
        }
        cc.time += t.elapsed();
        cc.allocations += count() - a;

        let (t, a) = (Instant::now(), count());
        let now = Instant::now();
        let mut out = VecDeque::new();
        while let Some((d, from, _)) = to_server.pop_front() {
            server.recv(now, from, &d, &mut out);
        }
        for c in server.conns.values_mut() {
            while let Some(ev) = c.poll() {
                if std::env::var_os("DEBUG").is_some() {
                    eprintln!("server: {ev:?}");
                }
                if let Event::Stream(StreamEvent::Opened { dir: Dir::Bi }) = ev {
                    while let Some(id) = c.streams().accept(Dir::Bi) {
                        // A new stream's first bytes come with it (no Readable event for them);
                        // the rest, if any, when Readable. Answered at once.
                        if let Ok(mut chunks) = c.recv_stream(id).read(true) {
                            while let Ok(Some(_)) = chunks.next(usize::MAX) {}
                            let _ = chunks.finalize();
                        }
                        let _ = c.send_stream(id).write(&BODY);
                        let _ = c.send_stream(id).finish();
                    }
                }
                if let Event::Stream(StreamEvent::Readable { id }) = ev {
                    if let Ok(mut chunks) = c.recv_stream(id).read(true) {
                        while let Ok(Some(_)) = chunks.next(usize::MAX) {}
                        let _ = chunks.finalize();
                    }
                }
            }
        }
        moved += server.flush(now, &mut buf, &mut out);
        for (d, to) in out {
            let i = (to.port() - 10_000) as usize;
            clients[i].5.push_back((d, to));
        }
        sc.time += t.elapsed();
        sc.allocations += count() - a;

        if moved == 0 {
            let next = clients
                .iter_mut()
                .filter_map(|c| c.0.conns.values_mut().next().and_then(|c| c.poll_timeout()))
                .chain(server.conns.values_mut().filter_map(|c| c.poll_timeout()))
                .min();
            if let Some(next) = next {
                let now = Instant::now();
                if next > now {
                    std::thread::sleep((next - now).min(Duration::from_millis(50)));
                }
            }
            let now = Instant::now();
            let (t, a) = (Instant::now(), count());
            for c in clients.iter_mut() {
                for conn in c.0.conns.values_mut() {
                    if conn.poll_timeout().is_some_and(|d| d <= now) {
                        conn.handle_timeout(now);
                    }
                }
            }
            cc.time += t.elapsed();
            cc.allocations += count() - a;
            let (t, a) = (Instant::now(), count());
            for conn in server.conns.values_mut() {
                if conn.poll_timeout().is_some_and(|d| d <= now) {
                    conn.handle_timeout(now);
                }
            }
            sc.time += t.elapsed();
            sc.allocations += count() - a;
        }
    }
    (answered, cc, sc)
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
    println!("quinn-proto 0.11 (QUIC only, rustls + aws-lc-rs): {n} requests, {m} connections x {s} streams, 1 KiB responses, in memory");
    println!("round  client us/req  client allocs/req  server us/req  server allocs/req");
    for r in 1..=rounds {
        let (answered, c, sv) = run(n, m, s);
        assert_eq!(answered, n);
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
