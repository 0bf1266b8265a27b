//! A QUIC server that agrees to ALPN h3 but has no HTTP/3 behind it (no control stream; each
//! request stream ended with nothing on it, as an aioquic server with no HTTP/3 layer does):
//! bench closes each connection over the server's error (`h3_protocol`: a CONNECTION_CLOSE
//! with H3_GENERAL_PROTOCOL_ERROR, the server hears it) and the next page has a new one, so a
//! run fails each page once instead of spinning through streams on one connection.

use crate::quiche_server::{self, ServerThread};
use bench::config::TlsOptions;
use bench::stats::ErrorKind;
use bench::{BenchConfig, HttpMode, Stop, Target, Workload};
use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

const BOUND: Duration = Duration::from_secs(20);

/// What the server saw of each connection: the client's close, once it came (application
/// close, code).
type Closes = Arc<Mutex<Vec<Option<(bool, u64)>>>>;

struct QuicOnly {
    addr: SocketAddr,
    closes: Closes,
    _thread: ServerThread,
}

impl QuicOnly {
    fn start(ca: &TestCa) -> QuicOnly {
        let config = quiche_server::config(ca, 1 << 20);
        let closes = Closes::default();
        let c = closes.clone();
        let thread = ServerThread::spawn(move |sock, stop| serve(sock, config, c, stop));
        QuicOnly {
            addr: thread.addr,
            closes,
            _thread: thread,
        }
    }
}

/// The server's loop: connections keyed by the client's address (each of bench's has a port
/// of its own), each request stream read and ended empty. A connection is dropped once closed,
/// and one draining gives way to a new Initial from its address: a later connection of bench's
/// on a port the system handed out again is not fed to a dead one.
fn serve(sock: UdpSocket, mut config: quiche::Config, closes: Closes, stop: Arc<AtomicBool>) {
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
                        let _ = conn.stream_send(stream, b"", true);
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

#[test]
fn each_connection_is_closed_over_a_stream_ended_without_a_head() {
    let ca = TestCa::new("flint bench QUIC-only test CA");
    let server = QuicOnly::start(&ca);
    let pages = 4;
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        stop: Stop::Pages(pages),
        http: HttpMode::Http3,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(10),
        fail_fast: false,
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    };
    let workload = Workload::from_paths(&["/".to_string()]).unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < BOUND, "took {:?}", started.elapsed());
    let s = &r.stats;
    // Each page's file failed once, each on a connection of its own, which bench closed.
    assert_eq!(s.errors.get(ErrorKind::H3Protocol), pages, "{:?}", s.errors);
    assert_eq!(s.errors.total(), pages, "{:?}", s.errors);
    assert_eq!(s.http3.connections, pages, "{:?}", s.http3);
    // The server heard each close, with HTTP/3's H3_GENERAL_PROTOCOL_ERROR.
    let start = Instant::now();
    let heard = || server.closes.lock().unwrap().clone();
    while heard().iter().any(Option::is_none) && start.elapsed() < BOUND {
        std::thread::sleep(Duration::from_millis(10));
    }
    let closes = heard();
    assert_eq!(closes.len() as u64, pages, "{closes:?}");
    assert!(
        closes.iter().all(|c| *c == Some((true, 0x101))),
        "{closes:?}"
    );
}
