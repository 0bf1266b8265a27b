//! HTTP/3 session resumption against flint serve on two threads: a client's connections, each
//! from a new UDP port (so the kernel spreads them over the threads by its hash), offer the
//! session the last one was given. Every one after the first resumes, whichever thread it
//! lands on (the ticket key is the process's), and `h3_resumed` counts them. A ticket sealed
//! under another key (as a restarted or another server sees it) gives a full handshake and a
//! right answer, no error.

use crate::h3_support::{flush, recv_until_deadline, Certs, BOUND};
use http3::{Client, ClientConfig, ClientEvent, MAX_DATAGRAM};
use std::net::{SocketAddr, UdpSocket};
use std::time::Instant;

pub(crate) const FILE: usize = 5_000;

/// One connection from a new port offering `session`: a GET of `/5k.bin`, its status and
/// body read whole, then (the ticket comes after the handshake) the session it was given.
/// Returns whether the handshake resumed, the status, the body's length, the new session.
pub(crate) fn fetch(
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
        flush(&mut c, &sock);
        if let Some((n, from)) = recv_until_deadline(&c, &sock, &mut buf) {
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

/// A DER element's tag at `at`, and the range of its contents.
fn der(b: &[u8], at: usize) -> (u8, std::ops::Range<usize>) {
    let tag = b[at];
    let (len, head) = match b[at + 1] {
        n if n < 0x80 => (n as usize, 2),
        n => {
            let k = (n & 0x7f) as usize;
            let len = b[at + 2..at + 2 + k]
                .iter()
                .fold(0usize, |l, &x| l << 8 | x as usize);
            (len, 2 + k)
        }
    };
    (tag, at + head..at + head + len)
}

/// The ticket's bytes in a quiche session: its 8-byte length, then BoringSSL's `SSL_SESSION`
/// (a DER SEQUENCE whose `[10]` field is the ticket's OCTET STRING), then the transport
/// parameters.
pub(crate) fn ticket_of(session: &[u8]) -> std::ops::Range<usize> {
    let len = u64::from_be_bytes(session[..8].try_into().unwrap()) as usize;
    let tls = &session[8..8 + len];
    let (tag, fields) = der(tls, 0);
    assert_eq!(tag, 0x30, "an SSL_SESSION is a SEQUENCE");
    let mut at = fields.start;
    while at < fields.end {
        let (tag, body) = der(tls, at);
        if tag == 0xaa {
            let (tag, ticket) = der(tls, body.start);
            assert_eq!(tag, 0x04, "the ticket is an OCTET STRING");
            return 8 + ticket.start..8 + ticket.end;
        }
        at = body.end;
    }
    panic!("no ticket in the session");
}

#[test]
fn a_ticket_another_server_sealed_gives_a_full_handshake_and_no_error() {
    let certs = Certs::new();
    let first = certs.serve(|_| {});
    std::fs::write(first.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let mut config = certs.client();
    let (_, _, _, session) = fetch(&mut config, first.addr, &[]);
    drop(first);
    // Another server of this process shares its ticket key (a restarted process would not).
    // What a server restarted or another sees is a ticket sealed under a key name it does not
    // know: the session stays whole (the client offers it as it is: a ticket is opaque to it)
    // and only the ticket's first 16 bytes, BoringSSL's key name, differ.
    let ticket = ticket_of(&session);
    assert!(
        ticket.len() > 16 + 16 + 32,
        "name, IV, state, MAC: {ticket:?}"
    );
    let mut foreign = session.clone();
    for b in &mut foreign[ticket.start..ticket.start + 16] {
        *b ^= 0x5a;
    }
    let second = certs.serve(|_| {});
    std::fs::write(second.root.path().join("5k.bin"), vec![7u8; FILE]).unwrap();
    let (r, status, len, _) = fetch(&mut config, second.addr, &foreign);
    assert_eq!((r, status, len), (false, 200, FILE), "the foreign ticket");
    // The session untouched resumes on the same server (the process's key): what kept the
    // other from resuming was its ticket alone.
    let (r, status, len, _) = fetch(&mut config, second.addr, &session);
    assert_eq!((r, status, len), (true, 200, FILE), "the session as given");
    let st = second.stop();
    assert_eq!((st.http3_connections, st.h3_resumed), (2, 1), "{st:?}");
}
