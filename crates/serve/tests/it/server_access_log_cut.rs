//! The access log's `%b` for a transfer the client cuts off: the body bytes sent, not the
//! body's whole length, over HTTP/1.1 and HTTP/2 (HTTP/3's are in `server_h3_default.rs`); a
//! whole transfer logs the whole length; a transfer under way at shutdown is logged once; an
//! HTTP/1.1 transfer cut over TLS, and an HTTP/2 stream reset on a connection that goes on, log
//! theirs too. The counts are those of a response answered, whatever became of its body.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};

use crate::common::*;
use crate::h2_support::{raw, read_until_ended, Client};
use crate::tls_support::{both_versions, Certs, TlsStream};

/// What the client reads of a large body before it closes.
pub(crate) const READ: usize = 256 << 10;
/// The receive buffer the client asks for (the kernel doubles it).
use crate::server_access_log::lines;

const CLIENT_RCVBUF: usize = 32 << 10;

/// The most a server socket's send buffer may hold: the kernel's autotuning stops at
/// `tcp_wmem`'s maximum (the server sets no SO_SNDBUF).
fn server_sndbuf_max() -> u64 {
    let tcp = std::fs::read_to_string("/proc/sys/net/ipv4/tcp_wmem").unwrap_or_default();
    (tcp.split_whitespace().last()).map_or(4 << 20, |v| v.parse().unwrap())
}

/// A large file in the server's root: at least 8 MiB, and at least twice what the kernel's
/// buffers could hold, so a cut transfer is well below it.
fn large_file(srv: &TestServer) -> (String, u64) {
    let len = (8u64 << 20).max(2 * (server_sndbuf_max() + (2 << 20)));
    let len = len.next_multiple_of(1 << 20);
    let name = "large.bin";
    std::fs::write(srv.root.path().join(name), content(name, len as usize)).unwrap();
    (format!("/{name}"), len)
}

/// A client socket with a small receive buffer (set before connect, so the window it
/// advertises is small from the start) and what the kernel made of it.
pub(crate) fn small_client(addr: SocketAddr) -> (TcpStream, u64) {
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(CLIENT_RCVBUF).unwrap();
    sock.connect_timeout(&addr.into(), WAIT).unwrap();
    let rcvbuf = sock.recv_buffer_size().unwrap() as u64;
    let s: TcpStream = sock.into();
    s.set_read_timeout(Some(WAIT)).unwrap();
    s.set_write_timeout(Some(WAIT)).unwrap();
    (s, rcvbuf)
}

/// The `%b` of a Common Log Format line (`-` is 0).
pub(crate) fn bytes_of(line: &str) -> u64 {
    let last = line.rsplit(' ').next().unwrap();
    if last == "-" {
        0
    } else {
        last.parse().unwrap_or_else(|_| panic!("no %b in {line}"))
    }
}

/// Waits (bounded) for the log to hold `n` lines, and returns them.
pub(crate) fn logged(log: &Path, n: usize) -> Vec<String> {
    assert!(
        eventually(WAIT, || lines(log).len() >= n),
        "{:?}",
        lines(log)
    );
    let got = lines(log);
    assert_eq!(got.len(), n, "{got:?}");
    got
}

/// A temporary folder (removed when dropped) and the access log's path in it.
pub(crate) fn log_path() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("access.log");
    (dir, log)
}

/// The requests counted are `n`, each answered with a 2xx.
fn assert_answered(st: &serve::ServerStats, n: u64) {
    assert_eq!((st.requests, st.status_2xx), (n, n), "{st:?}");
}

/// A cut transfer's `%b` is at least what the client read and at most `bound` (the figures
/// printed, and `len`, the file's whole length, for scale).
fn assert_within(b: u64, read: u64, bound: u64, len: u64) {
    println!("%b {b}: read {read}, bound {bound}, file {len}");
    assert!(
        b >= read && b <= bound,
        "%b {b}: read {read}, bound {bound}, file {len}"
    );
}

fn logging_server(log: &Path, tweak: impl FnOnce(&mut serve::Config)) -> TestServer {
    let l2 = log.to_path_buf();
    TestServer::start(move |c| {
        c.access_log = Some(l2);
        tweak(c);
    })
}

/// A byte stream: TCP, or TLS over it.
pub(crate) trait ReadWrite: Read + Write {}
impl<S: Read + Write> ReadWrite for S {}

/// Sends an HTTP/1.1 GET for `path` and reads until `body` bytes of its body are in; returns
/// the body bytes read (a read may bring more).
pub(crate) fn h1_read_part(s: &mut impl ReadWrite, path: &str, body: u64) -> u64 {
    write!(s, "GET {path} HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    let mut buf = vec![0u8; 64 << 10];
    // The head's bytes (kept until its end is found), then only a count.
    let mut head = Vec::new();
    let mut head_len = None;
    let mut total = 0u64;
    loop {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed before {body} body bytes");
        total += n as u64;
        if head_len.is_none() {
            head.extend_from_slice(&buf[..n]);
            head_len = head
                .windows(4)
                .position(|w| w == b"\r\n\r\n")
                .map(|p| p as u64 + 4);
            assert!(head_len.is_none() || head.starts_with(b"HTTP/1.1 200 "));
        }
        if let Some(h) = head_len.filter(|&h| total - h >= body) {
            return total - h;
        }
    }
}

#[test]
fn a_cut_http1_transfer_logs_the_bytes_sent() {
    let (_dir, log) = log_path();
    let srv = logging_server(&log, |_| {});
    let (path, len) = large_file(&srv);
    let (mut s, rcvbuf) = small_client(srv.addr);
    let read = h1_read_part(&mut s, &path, READ as u64);
    // Answered, so counted, though its body is under way.
    assert_answered(&srv.stats(), 1);
    drop(s);
    let got = logged(&log, 1);
    let b = bytes_of(&got[0]);
    let bound = read + rcvbuf + server_sndbuf_max();
    assert_within(b, read, bound, len);
    assert!(b < len, "{}", got[0]);
    assert_answered(&srv.stop(), 1);
}

/// Reads one whole response with its body (Content-Length) from `s`.
fn h1_read_whole(s: &mut std::io::BufReader<TcpStream>) -> (u16, usize) {
    let r = read_response(s, false).expect("response");
    (r.status, r.body.len())
}

#[test]
fn whole_http1_transfers_log_the_whole_body_pipelined_or_not() {
    let (_dir, log) = log_path();
    let srv = logging_server(&log, |_| {});
    let (path, len) = large_file(&srv);
    let mut s = connect(srv.addr);
    // Two large bodies and a small one pipelined, then a HEAD of the large file (no body).
    write!(
        s,
        "GET /300k.bin HTTP/1.1\r\nHost: t\r\n\r\nGET {path} HTTP/1.1\r\nHost: t\r\n\r\n\
         GET /a.txt HTTP/1.1\r\nHost: t\r\n\r\nHEAD {path} HTTP/1.1\r\nHost: t\r\n\r\n"
    )
    .unwrap();
    let mut r = std::io::BufReader::new(s);
    assert_eq!(h1_read_whole(&mut r), (200, 300 << 10));
    assert_eq!(h1_read_whole(&mut r), (200, len as usize));
    assert_eq!(h1_read_whole(&mut r), (200, 5));
    assert_eq!(read_response(&mut r, true).unwrap().status, 200);
    let got = logged(&log, 4);
    let sizes: Vec<u64> = got.iter().map(|l| bytes_of(l)).collect();
    // Held lines are written as their bodies finish: the small one may come first.
    let mut want = vec![300 << 10, len, 5, 0];
    let mut sorted = sizes.clone();
    sorted.sort_unstable();
    want.sort_unstable();
    assert_eq!(sorted, want, "{got:?}");
    assert!(got
        .iter()
        .any(|l| l.contains(&format!("\"HEAD {path} HTTP/1.1\" 200 -"))));
    assert_answered(&srv.stop(), 4);
}

#[test]
fn a_transfer_under_way_at_shutdown_is_logged_once_with_the_bytes_sent() {
    let (_dir, log) = log_path();
    // The shutdown's grace for output under way is the send timeout: short, so the stalled
    // client is let go within the test's bound, and long enough that the send timeout does not
    // close the connection before the stop (its line is then written as the loop ends).
    let srv = logging_server(&log, |c| c.send_timeout_ms = 5_000);
    let (path, len) = large_file(&srv);
    let (mut s, rcvbuf) = small_client(srv.addr);
    let read = h1_read_part(&mut s, &path, READ as u64);
    // The client stalls: it reads no more and keeps its connection open.
    assert!(lines(&log).is_empty(), "logged before the transfer ended");
    // The shutdown `flint serve`'s SIGTERM handler asks for.
    assert_answered(&srv.stop(), 1);
    let got = lines(&log);
    assert_eq!(got.len(), 1, "{got:?}");
    let b = bytes_of(&got[0]);
    let bound = read + rcvbuf + server_sndbuf_max();
    assert_within(b, read, bound, len);
    drop(s);
}

/// An HTTP/2 client over a socket with a small receive buffer.
fn h2c_small(addr: SocketAddr) -> (Client<TcpStream>, u64) {
    let (s, rcvbuf) = small_client(addr);
    (Client::new(s, "localhost"), rcvbuf)
}

/// Asks for `path` over HTTP/2 and runs the client until `READ` bytes of its body are in:
/// the stream, and the body bytes read (a run may bring more).
fn h2_read_part<S: Read + Write>(c: &mut Client<S>, path: &str) -> (http2::StreamId, u64) {
    let id = c.submit("GET", path, &[]);
    assert!(c.run_until(|s| s.responses.get(&id).is_some_and(|r| r.body.len() >= READ)));
    (id, c.seen.responses[&id].body.len() as u64)
}

#[test]
fn a_cut_http2_transfer_logs_the_data_bytes_framed() {
    let (_dir, log) = log_path();
    let srv = logging_server(&log, |_| {});
    let max_pipeline = serve::Config::default().max_pipeline_bytes as u64;
    let (path, len) = large_file(&srv);
    let (mut c, rcvbuf) = h2c_small(srv.addr);
    let (_, read) = h2_read_part(&mut c, &path);
    assert_answered(&srv.stats(), 1);
    drop(c);
    let got = logged(&log, 1);
    let b = bytes_of(&got[0]);
    // Framed is at most what the kernel took plus what the connection may queue, and a
    // frame of 16 KiB over it (frame headers are not body bytes).
    let bound = read + rcvbuf + server_sndbuf_max() + max_pipeline + (16 << 10);
    assert_within(b, read, bound, len);
    assert!(b < len, "{}", got[0]);
    assert!(
        got[0].contains(&format!("\"GET {path} HTTP/2.0\" 200 ")),
        "{}",
        got[0]
    );
    assert_answered(&srv.stop(), 1);
}

#[test]
fn a_whole_http2_transfer_logs_the_whole_body() {
    let (_dir, log) = log_path();
    let srv = logging_server(&log, |_| {});
    let (path, len) = large_file(&srv);
    let mut c = Client::new(connect(srv.addr), "localhost");
    let r = c.get(&path, &[]);
    assert_eq!((r.status, r.body.len() as u64), (200, len));
    let r = c.request("HEAD", &path, &[]);
    assert_eq!((r.status, r.body.len()), (200, 0));
    let got = logged(&log, 2);
    assert_eq!(bytes_of(&got[0]), len, "{got:?}");
    assert!(got[1].ends_with("\" 200 -"), "{got:?}");
    assert_answered(&srv.stop(), 2);
}

#[test]
fn a_cut_http1_transfer_over_tls_logs_the_bytes_sealed() {
    let (_dir, log) = log_path();
    let certs = Certs::new(false);
    let l2 = log.clone();
    let srv = certs.serve(move |c| c.access_log = Some(l2));
    let (path, len) = large_file(&srv);
    let (sock, rcvbuf) = small_client(srv.addr);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let conn = rustls::ClientConnection::new(certs.client(&both_versions()), name).unwrap();
    let mut s: TlsStream = rustls::StreamOwned::new(conn, sock);
    let read = h1_read_part(&mut s, &path, READ as u64);
    assert_answered(&srv.stats(), 1);
    drop(s);
    let got = logged(&log, 1);
    let b = bytes_of(&got[0]);
    // Sealed into records is at most one round (256 KiB) ahead of what the kernel took; the
    // kernel's buffers hold records, each longer than the body bytes it carries.
    let bound = read + rcvbuf + server_sndbuf_max() + (256 << 10);
    assert_within(b, read, bound, len);
    assert!(b < len, "{}", got[0]);
    assert_answered(&srv.stop(), 1);
}

/// A socket that counts the bytes read from it.
struct Counted {
    s: TcpStream,
    read: u64,
}

impl Read for Counted {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.s.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.s.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.s.flush()
    }
}

#[test]
fn an_http2_stream_reset_mid_transfer_logs_its_bytes_and_the_connection_goes_on() {
    let (_dir, log) = log_path();
    let srv = logging_server(&log, |_| {});
    let max_pipeline = serve::Config::default().max_pipeline_bytes as u64;
    let (path, len) = large_file(&srv);
    let (sock, rcvbuf) = small_client(srv.addr);
    let mut c = Client::new(Counted { s: sock, read: 0 }, "localhost");
    let (id, read) = h2_read_part(&mut c, &path);
    const CANCEL: u32 = 0x8;
    c.session.submit_rst_stream(id, CANCEL).unwrap();
    c.flush();
    // The same connection, a small response after the reset.
    let r = c.get("/a.txt", &[]);
    assert_eq!((r.status, r.body.len()), (200, 5));
    let got = logged(&log, 2);
    let cut = (got
        .iter()
        .find(|l| l.contains(&format!("\"GET {path} HTTP/2.0\" 200 "))))
    .unwrap_or_else(|| panic!("no line of the reset stream: {got:?}"));
    let b = bytes_of(cut);
    // The stream goes on until the server reads the reset: what the client drained meanwhile
    // (dropped by its session, so counted off the socket, frames and all) is framed too.
    let bound = c.io.read + rcvbuf + server_sndbuf_max() + max_pipeline + (16 << 10);
    assert_within(b, read, bound, len);
    assert!(b < len, "{cut}");
    let small = (got
        .iter()
        .find(|l| l.contains("\"GET /a.txt HTTP/2.0\" 200 ")))
    .unwrap_or_else(|| panic!("no line of the GET after: {got:?}"));
    assert_eq!(bytes_of(small), 5, "{small}");
    drop(c);
    let st = srv.stop();
    assert_answered(&st, 2);
    assert_eq!((st.accepted, st.h2_resets_received), (1, 1), "{st:?}");
}

#[test]
fn an_http2_line_is_written_once_its_body_is_framed_whole_with_the_request_body_still_open() {
    let (_dir, log) = log_path();
    // The request body may take a minute: the stream stays open past the test's wait.
    let srv = logging_server(&log, |c| c.body_timeout_ms = 60_000);
    let mut s = connect(srv.addr);
    let mut out = raw::PREFACE.to_vec();
    raw::settings(&mut out, &[(4, 16 << 20)]); // a stream window for the whole body
    raw::get(&mut out, 1, "/300k.bin", 0); // no END_STREAM: a body is coming
    s.write_all(&out).unwrap();
    let (mut buf, mut have) = (vec![0u8; 64 << 10], 0);
    read_until_ended(&mut s, &mut buf, &mut have, 1);
    let got = logged(&log, 1);
    assert_eq!(bytes_of(&got[0]), 300 << 10, "{got:?}");
    let st = srv.stats();
    assert_eq!(
        (st.requests, st.h2_resets_sent),
        (1, 0),
        "the stream is open: {st:?}"
    );
    drop(s);
    srv.stop();
}
