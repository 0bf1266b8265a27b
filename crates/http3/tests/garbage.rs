//! Datagrams that are not a connection's: counted by kind and dropped, never a crash, and an
//! unknown version answered with version negotiation.

mod common;

use common::memory::Certs;
use http3::{Limits, Server, ServerCounts, MAX_DATAGRAM};
use std::net::SocketAddr;

fn server(certs: &Certs) -> Server {
    Server::new(
        certs.server(&Limits::default()),
        "127.0.0.1:4433".parse().unwrap(),
    )
}

/// A long-header packet: `first` byte, `version`, 8-byte IDs, padded to `len`.
fn long_header(first: u8, version: u32, len: usize) -> Vec<u8> {
    let mut p = vec![first];
    p.extend_from_slice(&version.to_be_bytes());
    p.push(8);
    p.extend_from_slice(&[1; 8]);
    p.push(8);
    p.extend_from_slice(&[2; 8]);
    p.resize(len, 0);
    p
}

#[test]
fn garbage_and_strangers_are_counted_and_dropped() {
    let certs = Certs::new();
    let mut s = server(&certs);
    let from: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    // Nothing to read a header from.
    s.recv(&mut [], from);
    s.recv(&mut [0xc0], from);
    // A short header for a connection that does not exist, with an ID of this thread (its
    // index, 0, in the first two bytes): a stateless reset answers it, shorter than the
    // packet and at most 43 bytes.
    let mut short = vec![0x40, 0, 0];
    short.extend_from_slice(&[9; 14]);
    short.resize(100, 0xaa);
    s.recv(&mut short, from);
    let mut out = [0u8; MAX_DATAGRAM];
    let reset = s.send(&mut out).expect("a stateless reset");
    assert_eq!((reset.len, reset.to), (43, from));
    // 21 bytes or fewer: no answer (a reset must be shorter than its packet and at least 21
    // bytes, so two endpoints cannot answer each other's resets in a loop).
    s.recv(&mut short[..21], from);
    assert!(s.send(&mut out).is_none());
    // An Initial under RFC 9000's 1,200 bytes.
    s.recv(&mut long_header(0xc0, 1, 300), from);
    // Random bytes, 2,000 datagrams of them.
    let mut rng = fastrand::Rng::with_seed(7);
    for _ in 0..2000 {
        let len = rng.usize(0..1400);
        let mut d: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
        s.recv(&mut d, from);
    }
    let c = s.counts();
    assert_eq!(c.accepted, 0, "{c:?}");
    assert!(
        c.malformed >= 2 && c.stateless_resets >= 1 && c.refused >= 1,
        "{c:?}"
    );
    assert_eq!(
        c.malformed + c.unknown + c.refused + c.version_negotiation + c.stateless_resets,
        2005,
        "{c:?}"
    );
    assert_eq!(s.connections(), 0);
    assert!(s.poll().is_none());
}

/// Datagrams shaped as QUIC v1 Initials (a long header of type Initial, 8-byte IDs, no token,
/// 1,226 bytes) whose packet number and payload are random: none decrypts, so none is a
/// connection, however many start one in quiche for the moment of reading it. They are
/// counted as datagrams for no connection, and a real client after them is the one
/// connection.
#[test]
fn initials_that_never_decrypt_are_not_connections() {
    use common::raw::{client_config, Peer};
    let certs = Certs::new();
    let mut s = server(&certs);
    let from: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    let mut rng = fastrand::Rng::with_seed(11);
    for i in 0..1000u32 {
        // Token length 0, then a two-byte length (0x44b0: 1,200), then the rest random.
        let mut d = long_header(0xc0 | rng.u8(..0x04), 1, 23);
        d[6..10].copy_from_slice(&i.to_be_bytes());
        d.extend_from_slice(&[0, 0x44, 0xb0]);
        d.extend((0..1200).map(|_| rng.u8(..)));
        assert_eq!(d.len(), 1226);
        s.recv(&mut d, from);
    }
    let c = s.counts();
    assert_eq!((c.accepted, c.unknown), (0, 1000), "{c:?}");
    assert_eq!(s.connections(), 0);
    // A client's real Initial is read: that connection counts.
    let mut config = client_config(1 << 20);
    let mut peer = Peer::connect(&mut config, "127.0.0.3:5000".parse().unwrap());
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let (n, info) = peer.quic.send(&mut buf).expect("the client's Initial");
    s.recv(&mut buf[..n], info.from);
    let c = s.counts();
    assert_eq!(
        (c.accepted, c.unknown, s.connections()),
        (1, 1000, 1),
        "{c:?}"
    );
}

#[test]
fn an_unknown_version_is_answered_with_version_negotiation() {
    let certs = Certs::new();
    let mut s = server(&certs);
    let from: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    s.recv(&mut long_header(0xc0, 0x1a2a_3a4a, 1200), from);
    assert_eq!(
        s.counts(),
        ServerCounts {
            version_negotiation: 1,
            ..ServerCounts::default()
        }
    );
    let mut out = [0u8; MAX_DATAGRAM];
    let d = s.send(&mut out).expect("a version negotiation packet");
    assert_eq!(d.to, from);
    // Version 0 marks version negotiation (RFC 9000 17.2.1); it lists QUIC v1.
    assert_eq!(&out[1..5], &[0, 0, 0, 0]);
    assert!(out[..d.len].windows(4).any(|w| w == [0, 0, 0, 1]));
    assert!(s.send(&mut out).is_none());
    assert_eq!(s.connections(), 0);
}

#[test]
fn version_negotiation_waiting_to_be_sent_is_bounded() {
    let certs = Certs::new();
    let mut s = server(&certs);
    let from: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    for _ in 0..1000 {
        s.recv(&mut long_header(0xc0, 0x1a2a_3a4a, 1200), from);
    }
    let c = s.counts();
    assert_eq!((c.version_negotiation, c.refused), (64, 936), "{c:?}");
    let mut out = [0u8; MAX_DATAGRAM];
    let mut sent = 0;
    while s.send(&mut out).is_some() {
        sent += 1;
    }
    assert_eq!(sent, 64);
}

/// A datagram carrying a connection's ID from another address (which anyone can send: the
/// ID is in the clear) does not change the peer the server reports for it, whether or not it
/// decrypts.
#[test]
fn a_datagram_from_another_address_does_not_change_the_peer() {
    use http3::{Client, ServerEvent};
    let certs = Certs::new();
    let mut s = server(&certs);
    let server_addr: SocketAddr = "127.0.0.1:4433".parse().unwrap();
    let client_addr: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    let spoofer: SocketAddr = "127.0.0.3:6000".parse().unwrap();
    let mut config = certs.client(&Limits::default());
    let mut c = Client::connect(&mut config, "localhost", client_addr, server_addr).unwrap();
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut request = None;
    let mut last_short: Option<Vec<u8>> = None;
    // Bounded: a handshake and a request take a handful of round trips.
    for _ in 0..50 {
        while let Some(d) = c.send(&mut buf) {
            let mut datagram = buf[..d.len].to_vec();
            if datagram[0] & 0x80 == 0 {
                last_short = Some(datagram.clone()); // a 1-RTT packet: the connection's ID
            }
            s.recv(&mut datagram, client_addr);
        }
        while let Some(d) = s.send(&mut buf) {
            assert_eq!(d.to, client_addr);
            c.recv(&mut buf[..d.len], server_addr).unwrap();
        }
        if c.is_ready() && request.is_none() {
            let fields: [(&[u8], &[u8]); 4] = [
                (b":method", b"GET"),
                (b":scheme", b"https"),
                (b":authority", b"localhost"),
                (b":path", b"/"),
            ];
            c.send_request(&fields, true).unwrap();
            request = Some(());
        }
        if let Some(ServerEvent::Request { id, .. }) = s.poll() {
            assert_eq!(s.peer(id.conn).unwrap(), client_addr);
            let mut forged = last_short.take().expect("a 1-RTT packet was sent");
            // Another address, the same ID; once as it was (a replay), once corrupted.
            s.recv(&mut forged.clone(), spoofer);
            *forged.last_mut().unwrap() ^= 0xff;
            s.recv(&mut forged, spoofer);
            assert_eq!(s.peer(id.conn).unwrap(), client_addr);
            while let Some(d) = s.send(&mut buf) {
                assert_eq!(d.to, client_addr, "nothing is sent to the other address");
            }
            return;
        }
    }
    panic!("no request reached the server");
}

#[test]
fn stateless_resets_waiting_to_be_sent_are_bounded_apart() {
    let certs = Certs::new();
    let mut s = server(&certs);
    let from: SocketAddr = "127.0.0.2:5000".parse().unwrap();
    // A flood of short headers for IDs of this thread that it does not know.
    for i in 0..100u8 {
        let mut short = vec![0x40, 0, 0, i];
        short.resize(100, 0xaa);
        s.recv(&mut short, from);
    }
    // Fewer than the whole queue: a flood of them leaves room for Retries and version
    // negotiation; the rest are dropped, counted.
    let c = s.counts();
    assert!(c.stateless_resets > 0 && c.stateless_resets < 64, "{c:?}");
    assert_eq!(c.stateless_resets + c.unknown, 100, "{c:?}");
    let mut out = [0u8; MAX_DATAGRAM];
    let mut sent = 0;
    while s.send(&mut out).is_some() {
        sent += 1;
    }
    assert_eq!(sent, c.stateless_resets);
    // Once sent, as many more may wait.
    let mut short = vec![0x40, 0, 0, 200];
    short.resize(100, 0xaa);
    s.recv(&mut short, from);
    assert_eq!(s.counts().stateless_resets, c.stateless_resets + 1);
}
