//! What the quiche test servers (h3_goaway_server's, [`RawServer`]) share: a server config on
//! a test CA's leaf, and the thread running a server's loop on a UDP socket bound to
//! 127.0.0.1:0, stopped and joined when dropped. Each server keeps its own loop.
//!
//! [`RawServer`] is QUIC with no HTTP/3 layer behind ALPN h3 (no control stream): each request
//! stream, read to its end, is answered with the same bytes, raw HTTP/3 frames written by the
//! test (a malformed response quiche's own HTTP/3 layer would not send: an uppercase name, a
//! status out of range, frames out of order, a body that is not its `content-length`), or
//! nothing (a QUIC server with no HTTP/3 behind it, as an aioquic server with no HTTP/3 layer
//! ends each stream), and ended.

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// A server config offering ALPN h3 with the CA's leaf, windows far above what a test sends,
/// and `max_data` for a connection's data limit.
pub fn config(ca: &TestCa, max_data: u64) -> quiche::Config {
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let mut config = quiche::Config::new(quiche::PROTOCOL_VERSION).unwrap();
    config
        .set_application_protos(quiche::h3::APPLICATION_PROTOCOL)
        .unwrap();
    config
        .load_cert_chain_from_pem_file(cert.to_str().unwrap())
        .unwrap();
    config
        .load_priv_key_from_pem_file(key.to_str().unwrap())
        .unwrap();
    config.set_max_idle_timeout(30_000);
    config.set_initial_max_data(max_data);
    config.set_initial_max_stream_data_bidi_remote(1 << 16);
    config.set_initial_max_streams_bidi(100);
    config.set_initial_max_streams_uni(3);
    config.set_initial_max_stream_data_uni(1 << 16);
    config
}

/// A server's loop on a thread of its own; dropping this stops and joins it.
pub struct ServerThread {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ServerThread {
    /// Binds 127.0.0.1:0 and runs `serve` on the socket; `serve` returns once the flag it is
    /// given is set (every wait in it bounded, so that it sees the flag).
    pub fn spawn(serve: impl FnOnce(UdpSocket, Arc<AtomicBool>) + Send + 'static) -> ServerThread {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let thread = std::thread::spawn(move || serve(sock, s));
        ServerThread {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a [`RawServer`] saw of each connection: the client's close, once it came (application
/// close, code).
pub type Closes = Arc<Mutex<Vec<Option<(bool, u64)>>>>;

/// A QUIC server answering every request stream with the same bytes (module docs).
pub struct RawServer {
    pub addr: SocketAddr,
    pub closes: Closes,
    _thread: ServerThread,
}

impl RawServer {
    /// One Webchild, one thread, `pages` pages over HTTP/3 to this server, trusting `ca`, no
    /// fail-fast (each test counts every failure): what each raw-server test runs, with its
    /// response timeout.
    pub fn bench_config(
        &self,
        ca: &TestCa,
        pages: u64,
        response_timeout: Duration,
    ) -> bench::BenchConfig {
        bench::BenchConfig {
            concurrency: 1,
            threads: 1,
            stop: bench::Stop::Pages(pages),
            http: bench::HttpMode::Http3,
            connect_timeout: Duration::from_secs(5),
            response_timeout,
            fail_fast: false,
            tls: bench::config::TlsOptions {
                cacert: Some(ca.pem.clone()),
                ..bench::config::TlsOptions::default()
            },
            ..bench::BenchConfig::new(bench::Target::https(self.addr, "localhost"))
        }
    }

    /// Answers each request stream with `answer` and ends it.
    pub fn start(ca: &TestCa, answer: Vec<u8>) -> RawServer {
        let config = config(ca, 1 << 20);
        let closes = Closes::default();
        let c = closes.clone();
        let thread = ServerThread::spawn(move |sock, stop| serve(sock, config, c, stop, answer));
        RawServer {
            addr: thread.addr,
            closes,
            _thread: thread,
        }
    }
}

/// The raw server's loop: connections keyed by the client's address (each of bench's has a
/// port of its own), each request stream read and, at its end, answered with `answer` and
/// ended. A connection is dropped once closed, and one draining gives way to a new Initial
/// from its address: a later connection of bench's on a port the system handed out again is
/// not fed to a dead one.
fn serve(
    sock: UdpSocket,
    mut config: quiche::Config,
    closes: Closes,
    stop: Arc<AtomicBool>,
    answer: Vec<u8>,
) {
    sock.set_read_timeout(Some(Duration::from_millis(10)))
        .unwrap();
    let local = sock.local_addr().unwrap();
    let mut conns: HashMap<SocketAddr, (usize, quiche::Connection)> = HashMap::new();
    let (mut buf, mut out) = (vec![0u8; 65536], vec![0u8; 1500]);
    while !stop.load(Ordering::SeqCst) {
        if let Ok((len, from)) = sock.recv_from(&mut buf) {
            let initial = quiche::Header::from_slice(&mut buf[..len], quiche::MAX_CONN_ID_LEN)
                .is_ok_and(|h| h.ty == quiche::Type::Initial);
            if initial && conns.get(&from).is_some_and(|(_, c)| c.is_draining()) {
                conns.remove(&from);
            }
            if let Entry::Vacant(slot) = conns.entry(from) {
                let index = {
                    let mut c = closes.lock().unwrap();
                    c.push(None);
                    c.len() - 1
                };
                let id = [index as u8 + 1; 16];
                let scid = quiche::ConnectionId::from_ref(&id);
                if let Ok(conn) = quiche::accept(&scid, None, local, from, &mut config) {
                    slot.insert((index, conn));
                }
            }
            if let Some((_, conn)) = conns.get_mut(&from) {
                let info = quiche::RecvInfo { from, to: local };
                let _ = conn.recv(&mut buf[..len], info);
                let readable: Vec<u64> = conn.readable().collect();
                for stream in readable {
                    let mut fin = false;
                    while let Ok((_, f)) = conn.stream_recv(stream, &mut out) {
                        fin |= f;
                    }
                    if fin && stream % 4 == 0 {
                        // (Far below the stream's window: taken whole.)
                        let _ = conn.stream_send(stream, &answer, true);
                    }
                }
            }
        }
        for (index, conn) in conns.values_mut() {
            if conn.timeout_instant().is_some_and(|t| t <= Instant::now()) {
                conn.on_timeout();
            }
            while let Ok((n, info)) = conn.send(&mut out) {
                let _ = sock.send_to(&out[..n], info.to);
            }
            if let Some(e) = conn.peer_error() {
                closes.lock().unwrap()[*index] = Some((e.is_app, e.error_code));
            }
        }
        conns.retain(|_, (_, conn)| !conn.is_closed());
    }
}

/// A HEADERS frame (RFC 9114 7.2.2) whose field section (QPACK, RFC 9204 4.5: no dynamic
/// table, each field a literal) holds `:status` if given, then `fields`, names as given
/// (QPACK's encoder in quiche lowercases them; a [`RawServer`] may send any). Names and values
/// under 127 bytes.
pub fn headers(status: Option<&[u8]>, fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    // Required Insert Count 0, Base 0.
    let mut block = vec![0u8, 0];
    if let Some(status) = status {
        // A literal with a static name reference: `:status` is index 24 (15 + 9).
        block.extend_from_slice(&[0x5f, 24 - 15, status.len() as u8]);
        block.extend_from_slice(status);
    }
    for (name, value) in fields {
        assert!(name.len() < 127 && value.len() < 127);
        // A literal with a literal name: a 3-bit prefix for the name's length.
        match name.len() {
            n @ 0..7 => block.push(0x20 | n as u8),
            n => block.extend_from_slice(&[0x27, (n - 7) as u8]),
        }
        block.extend_from_slice(name);
        block.push(value.len() as u8);
        block.extend_from_slice(value);
    }
    frame(0x01, &block)
}

/// A DATA frame of `n` bytes of body.
pub fn data(n: usize) -> Vec<u8> {
    frame(0x00, &vec![b'x'; n])
}

/// A frame: its type, its length (QUIC variable-length integers, here of one or two bytes)
/// and its payload.
fn frame(ty: u8, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![ty];
    match payload.len() {
        n @ 0..64 => out.push(n as u8),
        n @ 64..16384 => out.extend_from_slice(&[0x40 | (n >> 8) as u8, n as u8]),
        n => panic!("a frame of {n} bytes"),
    }
    out.extend_from_slice(payload);
    out
}
