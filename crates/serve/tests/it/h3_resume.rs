//! HTTP/3 session resumption against flint serve on two threads: a client's connections, each
//! from a new UDP port (so the kernel spreads them over the threads by its hash), offer the
//! session the last one was given. Every one after the first resumes, whichever thread it
//! lands on (the ticket key is the process's), and `h3_resumed` counts them. A session the
//! client cannot use (its bytes garbled) gives a full handshake and a right answer, no error.

use crate::h3_support::{Certs, BOUND};
use http3::{Client, ClientConfig, ClientEvent, MAX_DATAGRAM};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

const FILE: usize = 5_000;

/// One connection from a new port offering `session`: a GET of `/5k.bin`, its status and
/// body read whole, then (the ticket comes after the handshake) the session it was given.
/// Returns whether the handshake resumed, the status, the body's length, the new session.
fn fetch(
    config: &mut ClientConfig,
    server: SocketAddr,
    session: &[u8],
) -> (bool, u16, usize, Vec<u8>) {
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    let local = sock.local_addr().unwrap();
    let mut c = Client::resume(config, "localhost", local, server, session).unwrap();
    let (mut buf, mut out) = (vec![0u8; 65536], vec![0u8; MAX_DATAGRAM]);
    let (mut stream, mut status, mut len, mut done) = (None, 0, 0, false);
    let start = Instant::now();
    while !(done && c.session().is_some()) {
        assert!(
            start.elapsed() < BOUND,
            "not done within {BOUND:?}: {:?}",
            c.closed()
        );
        assert!(!c.is_closed(), "closed: {:?}", c.closed());
        if stream.is_none() && c.is_ready() {
            let get = [
                (&b":method"[..], &b"GET"[..]),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/5k.bin"),
            ];
            stream = Some(c.send_request(&get, true).unwrap());
        }
        while let Some(d) = c.send(&mut out) {
            sock.send_to(&out[..d.len], d.to).unwrap();
        }
        let wait = c
            .deadline()
            .map(|d| d.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_millis(20))
            .clamp(Duration::from_millis(1), Duration::from_millis(20));
        sock.set_read_timeout(Some(wait)).unwrap();
        if let Ok((n, from)) = sock.recv_from(&mut buf) {
            let _ = c.recv(&mut buf[..n], from);
        }
        if c.deadline().is_some_and(|d| d <= Instant::now()) {
            c.on_deadline();
        }
        while let Some(e) = c.poll() {
            match e {
                ClientEvent::Response { status: s, .. } => status = s,
                ClientEvent::Data { stream } => loop {
                    let n = c.recv_body(stream, &mut buf).unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    len += n;
                },
                ClientEvent::Finished { .. } => done = true,
                _ => {}
            }
        }
    }
    let resumed = c.is_resumed();
    let session = c.session().unwrap().to_vec();
    c.close(http3::H3_NO_ERROR, b"");
    while let Some(d) = c.send(&mut out) {
        let _ = sock.send_to(&out[..d.len], d.to);
    }
    (resumed, status, len, session)
}

#[test]
fn every_connection_after_the_first_resumes_on_either_thread_and_is_counted() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.threads = 2);
    std::fs::write(srv.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client();
    let n = 8;
    let mut session = Vec::new();
    let mut resumed = 0u64;
    for i in 0..n {
        let (r, status, len, next) = fetch(&mut config, srv.addr, &session);
        assert_eq!((status, len), (200, FILE), "connection {i}");
        assert_eq!(r, i > 0, "connection {i} resumed: {r}");
        resumed += u64::from(r);
        session = next;
    }
    let st = srv.stop();
    assert_eq!(st.http3_connections, n, "{st:?}");
    assert_eq!(st.h3_resumed, resumed, "{st:?}");
    assert_eq!(resumed, n - 1);
}

#[test]
fn an_unusable_session_gives_a_full_handshake_and_no_error() {
    let certs = Certs::new();
    let first = certs.serve(|_| {});
    std::fs::write(first.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client();
    let (_, _, _, session) = fetch(&mut config, first.addr, &[]);
    drop(first);
    // Another server of this process shares its ticket key (a restarted process would not):
    // the session's TLS bytes are garbled instead, which the client cannot offer.
    let mut foreign = session.clone();
    let len = u64::from_be_bytes(foreign[..8].try_into().unwrap()) as usize;
    for b in &mut foreign[8..8 + len] {
        *b ^= 0x5a;
    }
    let second = certs.serve(|_| {});
    std::fs::write(second.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let (r, status, len, _) = fetch(&mut config, second.addr, &foreign);
    assert_eq!((r, status, len), (false, 200, FILE));
    assert_eq!(second.stop().h3_resumed, 0);
}
