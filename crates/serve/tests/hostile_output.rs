//! A client that asks for a large file, reads nothing, and keeps its connection eventful (a
//! 1-byte TLS record, or a byte of plain input, every few ms) holds a bounded amount of the
//! server's memory, and is cut by the send timeout: only bytes the kernel took count as progress,
//! not output moved into a transport's buffer (sealed into TLS records).
//!
//! The server runs in this process (alone in this binary), so its memory is this process's
//! resident set; the clients read nothing and allocate little.

mod common;
mod h2_support;
mod tls_support;

use std::io::Write;
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use h2_support::raw;
use rustls::pki_types::ServerName;
use rustls::{ClientConnection, StreamOwned};
use tls_support::*;

/// Connections that ask for the file and read nothing.
const CONNS: usize = 4;
const FILE_MB: usize = 32;
/// Resident growth allowed per such connection: one round of sealed records (256 KiB), rustls's
/// and the pool's buffers, with room for the allocator. Without the bound each connection came
/// to hold the whole file, encrypted (32 MiB here).
const CAP_PER_CONN: u64 = 4 << 20;
const SEND_TIMEOUT_MS: u64 = 1500;

/// The two tests share the process's resident set: one at a time.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The resident set after returning the allocator's free memory to the system, so that memory a
/// test before this one freed does not hide this one's growth.
fn settled_rss() -> u64 {
    // SAFETY: malloc_trim only releases free heap memory back to the system; it takes no
    // pointer and is safe to call from any thread at any time.
    unsafe { libc::malloc_trim(0) };
    rss()
}

fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb << 10
}

fn write_big_file(srv: &TestServer) {
    let mut f = std::fs::File::create(srv.root.path().join("big.bin")).unwrap();
    let chunk = vec![7u8; 1 << 20];
    for _ in 0..FILE_MB {
        f.write_all(&chunk).unwrap();
    }
}

/// A socket with a small receive window, so the server's side fills early.
fn small_window(addr: SocketAddr) -> TcpStream {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&addr.into()).unwrap();
    let s: TcpStream = sock.into();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    s
}

/// Pokes every connection every 10 ms until the server has cut all of them, bounded; returns
/// the peak resident growth over `base` and how long the cuts took.
fn poke_until_cut(srv: &TestServer, base: u64, mut poke: impl FnMut(usize)) -> (u64, Duration) {
    let start = Instant::now();
    let mut peak = 0;
    let mut i = 0u64;
    loop {
        for c in 0..CONNS {
            poke(c);
        }
        peak = peak.max(rss().saturating_sub(base));
        i += 1;
        if i.is_multiple_of(10) && srv.stats().send_timeouts == CONNS as u64 {
            return (peak, start.elapsed());
        }
        assert!(
            start.elapsed() < 4 * WAIT,
            "not cut after {:?} (peak growth {} MiB)",
            start.elapsed(),
            peak >> 20
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn tls_reader_that_reads_nothing_holds_bounded_memory_and_is_cut() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.send_timeout_ms = SEND_TIMEOUT_MS);
    write_big_file(&srv);
    let client = certs.client(&both_versions());
    // Warm-up: the server's first TLS connection and its thread's buffers.
    let mut warm = tls_connect(srv.addr, &client);
    warm.write_all(get("/a.txt").as_bytes()).unwrap();
    read_response(&mut std::io::BufReader::new(&mut warm), false).unwrap();
    drop(warm);
    let base = settled_rss();
    let mut conns: Vec<StreamOwned<ClientConnection, TcpStream>> = (0..CONNS)
        .map(|_| {
            let name = ServerName::try_from("localhost").unwrap();
            let conn = ClientConnection::new(client.clone(), name).unwrap();
            let mut s = StreamOwned::new(conn, small_window(srv.addr));
            s.write_all(get("/big.bin").as_bytes()).unwrap();
            s
        })
        .collect();
    let (peak, took) = poke_until_cut(&srv, base, |c| {
        // One record of one byte: an event on the server, and input it need not read.
        let s = &mut conns[c];
        if s.conn.writer().write_all(b"\n").is_ok() {
            let _ = s.conn.write_tls(&mut s.sock);
        }
    });
    eprintln!(
        "TLS: peak growth {} KiB for {CONNS} connections, cut after {took:?}",
        peak >> 10
    );
    assert!(
        peak < CONNS as u64 * CAP_PER_CONN,
        "resident growth {} KiB for {CONNS} connections",
        peak >> 10
    );
    assert!(took >= Duration::from_millis(SEND_TIMEOUT_MS));
    let st = srv.stop();
    assert_eq!(st.send_timeouts, CONNS as u64);
    assert!(st.file_read_bytes < (FILE_MB as u64) << 20, "{st:?}");
}

/// The same over HTTP/2 (ALPN h2): one stream asks for the file with every window open, and
/// the client keeps the connection eventful with PINGs, which the server must answer (more
/// output) while it reads nothing.
#[test]
fn tls_h2_reader_that_reads_nothing_holds_bounded_memory_and_is_cut() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.send_timeout_ms = SEND_TIMEOUT_MS);
    write_big_file(&srv);
    let mut client = (*certs.client(&both_versions())).clone();
    client.alpn_protocols = vec![b"h2".to_vec()];
    let client = Arc::new(client);
    let mut warm = tls_connect(srv.addr, &certs.client(&both_versions()));
    warm.write_all(get("/a.txt").as_bytes()).unwrap();
    read_response(&mut std::io::BufReader::new(&mut warm), false).unwrap();
    drop(warm);
    let base = settled_rss();
    let mut request = raw::start();
    raw::settings(&mut request, &[(4, 0x7fff_ffff)]); // SETTINGS_INITIAL_WINDOW_SIZE
    raw::frame(
        &mut request,
        raw::WINDOW_UPDATE,
        0,
        0,
        &(0x7fff_ffffu32 - 65_535).to_be_bytes(),
    );
    raw::get(&mut request, 1, "/big.bin", raw::END_STREAM);
    let mut conns: Vec<StreamOwned<ClientConnection, TcpStream>> = (0..CONNS)
        .map(|_| {
            let name = ServerName::try_from("localhost").unwrap();
            let conn = ClientConnection::new(client.clone(), name).unwrap();
            let mut s = StreamOwned::new(conn, small_window(srv.addr));
            s.write_all(&request).unwrap();
            assert_eq!(s.conn.alpn_protocol(), Some(&b"h2"[..]));
            s
        })
        .collect();
    let mut ping = Vec::new();
    raw::frame(&mut ping, raw::PING, 0, 0, &[0u8; 8]);
    let (peak, took) = poke_until_cut(&srv, base, |c| {
        let s = &mut conns[c];
        if s.conn.writer().write_all(&ping).is_ok() {
            let _ = s.conn.write_tls(&mut s.sock);
        }
    });
    eprintln!(
        "TLS h2: peak growth {} KiB for {CONNS} connections, cut after {took:?}",
        peak >> 10
    );
    assert!(
        peak < CONNS as u64 * CAP_PER_CONN,
        "resident growth {} KiB for {CONNS} connections",
        peak >> 10
    );
    assert!(took >= Duration::from_millis(SEND_TIMEOUT_MS));
    let st = srv.stop();
    assert_eq!(st.send_timeouts, CONNS as u64, "{st:?}");
    assert!(st.file_read_bytes < (FILE_MB as u64) << 20, "{st:?}");
}

#[test]
fn plain_reader_that_reads_nothing_is_cut_while_it_sends() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let srv = TestServer::start(|c| c.send_timeout_ms = SEND_TIMEOUT_MS);
    write_big_file(&srv);
    exchange(srv.addr, &get("/a.txt"));
    let base = settled_rss();
    let mut conns: Vec<TcpStream> = (0..CONNS)
        .map(|_| {
            let mut s = small_window(srv.addr);
            s.write_all(get("/big.bin").as_bytes()).unwrap();
            s
        })
        .collect();
    let (peak, took) = poke_until_cut(&srv, base, |c| {
        let _ = conns[c].write(b"\n");
    });
    eprintln!(
        "plain: peak growth {} KiB for {CONNS} connections, cut after {took:?}",
        peak >> 10
    );
    assert!(peak < CONNS as u64 * CAP_PER_CONN);
    assert!(took >= Duration::from_millis(SEND_TIMEOUT_MS));
    let st = srv.stop();
    assert_eq!(st.send_timeouts, CONNS as u64);
}
