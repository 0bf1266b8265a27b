//! A server's defences as an outside tester met them: spoofed Initials from many addresses
//! against a low connection limit (Retries start before the slots run out, so a real client
//! still connects), stateless reset tokens that a new server made with the same key material
//! makes again (a restart's resets end its predecessor's connections), a shutdown that drops a
//! half-done handshake at once rather than after QUIC's closing period, and Version
//! Negotiation for any long header of a version not spoken, read by its invariant fields only.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer, SERVER};
use http3::{Limits, Server, ServerConfig, Timeouts};
use std::net::SocketAddr;
use std::time::Duration;

const LONG: Duration = Duration::from_secs(120);

/// A server whose own deadlines (idle, header, keep-alive, send) are far past any test's
/// end: only what a test looks at ends a connection.
fn server(certs: &Certs) -> ServerConfig {
    let limits = Limits {
        idle_timeout: LONG,
        ..Limits::default()
    };
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: LONG,
        send: LONG,
        ..Timeouts::default()
    };
    certs.server(&limits).timeouts(timeouts)
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

#[test]
fn a_flood_of_initials_from_many_addresses_leaves_a_real_client_room() {
    let certs = Certs::new();
    // Eight connections at most, the default Retry mode (128 handshakes: never reached here).
    let mut net = Net::new(server(&certs).max_connections(8), 100);
    let mut client = client_config(1 << 20);
    // One real Initial each from eight addresses, never continued (nothing reaches them).
    for i in 0..8 {
        let mut spoofed = Peer::connect(&mut client, addr(&format!("127.0.0.{}:5000", 10 + i)));
        spoofed.deaf = true;
        net.peers.push(spoofed);
    }
    // Half the slots take handshakes; the others' Initials get a Retry (no state).
    net.until("the flood answered", |n| {
        n.peers.iter().filter(|p| p.retries > 0).count() == 4
    });
    let c = net.server.counts();
    assert_eq!((c.accepted, net.server.connections()), (4, 4), "{c:?}");
    // A real client, with the half-done handshakes still held: through a Retry, connected.
    net.peers
        .push(Peer::connect(&mut client, addr("127.0.0.99:6000")));
    net.until("the real client's handshake", |n| n.peers[8].h3.is_some());
    assert!(net.peers[8].retries >= 1);
    let c = net.server.counts();
    assert_eq!((c.accepted, c.bad_tokens), (5, 0), "{c:?}");
    assert!(c.retries >= 5, "{c:?}");
}

#[test]
fn spoofed_initials_get_retries_once_real_connections_hold_half_the_slots() {
    let certs = Certs::new();
    // Eight slots, six of them held by real clients whose handshakes are done (so none of
    // them counts as a handshake under way).
    let mut net = Net::new(server(&certs).max_connections(8), 100);
    let mut client = client_config(1 << 20);
    for i in 0..6 {
        let real = addr(&format!("127.0.0.{}:5000", 10 + i));
        net.peers.push(Peer::connect(&mut client, real));
        net.until("a real client's handshake", |n| n.peers[i].h3.is_some());
    }
    assert_eq!(net.server.connections(), 6);
    // Two spoofed Initials: each a Retry, no slot taken.
    for i in 0..2 {
        let mut spoofed = Peer::connect(&mut client, addr(&format!("127.0.0.{}:5000", 50 + i)));
        spoofed.deaf = true;
        net.peers.push(spoofed);
    }
    net.until("the spoofed Initials answered", |n| {
        n.peers[6..].iter().all(|p| p.retries > 0)
    });
    assert_eq!(net.server.connections(), 6);
    // A real client still connects (through a Retry).
    net.peers
        .push(Peer::connect(&mut client, addr("127.0.0.99:6000")));
    net.until("the last real client's handshake", |n| {
        n.peers[8].h3.is_some()
    });
    assert!(net.peers[8].retries >= 1);
    let c = net.server.counts();
    assert_eq!((c.accepted, c.refused), (7, 0), "{c:?}");
}

/// The stateless reset token `server` answers a short-header packet for connection ID `cid`
/// with (an ID of thread 0's, which the server does not know).
fn reset_token(server: &mut Server, cid: &[u8; 16]) -> [u8; 16] {
    let mut packet = vec![0x41];
    packet.extend_from_slice(cid);
    packet.resize(60, 0x5a);
    server.recv(&mut packet, addr("192.0.2.1:4000"));
    let mut out = vec![0u8; 65_536];
    let d = server.send(&mut out).expect("a stateless reset");
    assert!(
        d.len < 60 && out[0] & 0xc0 == 0x40,
        "a short header, shorter"
    );
    out[d.len - 16..d.len].try_into().unwrap()
}

#[test]
fn servers_with_the_same_key_make_the_same_reset_tokens() {
    let (certs, other) = (Certs::new(), Certs::new());
    let cid = [0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14];
    let local = addr(SERVER);
    let token = |config: ServerConfig| reset_token(&mut Server::new(config, local), &cid);
    // Two servers of one TLS key (a server and the one started after it): one token.
    let first = token(server(&certs));
    assert_eq!(first, token(server(&certs)));
    // Another key, another token (nothing shared by the process decides it).
    assert_ne!(first, token(server(&other)));
    // Another connection ID, another token.
    let mut next = cid;
    next[15] ^= 1;
    assert_ne!(
        first,
        reset_token(&mut Server::new(server(&certs), local), &next)
    );
    // Another address or port on the same key (a second listener, another server of a
    // fleet sharing a certificate): another token, so that a connection ID seen on one
    // cannot be turned into the other's reset.
    let other_port = addr("127.0.0.1:4434");
    assert_ne!(local, other_port);
    assert_ne!(
        first,
        reset_token(&mut Server::new(server(&certs), other_port), &cid)
    );
    assert_ne!(
        first,
        reset_token(
            &mut Server::new(server(&certs), addr("127.0.0.2:4433")),
            &cid
        )
    );
    // A secret of its own, whatever the TLS key, and whatever the address (a fleet that
    // routes by connection ID gives every server one on purpose).
    let secret = |c: &Certs| server(c).stateless_reset_secret(b"kept apart");
    assert_eq!(token(secret(&certs)), token(secret(&other)));
    assert_eq!(
        token(secret(&certs)),
        reset_token(&mut Server::new(secret(&certs), other_port), &cid)
    );
    assert_ne!(token(secret(&certs)), first);
}

#[test]
fn a_new_server_of_the_same_key_ends_the_old_ones_connection_with_a_reset() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs), 100);
    let mut peer = Peer::connect(&mut client_config(1 << 20), addr("127.0.0.2:5000"));
    peer.ping = Some(Duration::from_millis(20));
    net.peers.push(peer);
    net.until("handshake", |n| n.peers[0].h3.is_some());
    // First a server of another key on the same address: its resets carry tokens the client
    // does not hold, and end nothing (so that the reset below is the key's doing, not any
    // reset's).
    net.server = Server::new(server(&Certs::new()), addr(SERVER));
    net.until("resets of another key", |n| {
        n.server.counts().stateless_resets >= 3
    });
    assert!(!net.peers[0].quic.is_closed() && !net.peers[0].quic.is_draining());
    // A new configuration read from the same files, as a restarted process reads them.
    net.server = Server::new(server(&certs), addr(SERVER));
    net.until("reset", |n| {
        n.peers[0].quic.is_closed() || n.peers[0].quic.is_draining()
    });
    assert!(net.server.counts().stateless_resets >= 1);
    assert_eq!(
        net.peers[0].quic.peer_error(),
        None,
        "no CONNECTION_CLOSE: a reset"
    );
}

#[test]
fn at_shutdown_a_half_done_handshake_is_dropped_at_once() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs), 100);
    let mut peer = Peer::connect(&mut client_config(1 << 20), addr("127.0.0.2:5000"));
    peer.deaf = true;
    net.peers.push(peer);
    net.until("accepted", |n| n.server.counts().accepted == 1);
    assert_eq!(net.server.connections(), 1);
    net.server.go_away();
    // Its close is sent (as far as the amplification limit lets it), and it is gone: no
    // closing period waited for, no turn of the clock.
    let mut out = vec![0u8; 65_536];
    let mut sent = 0;
    while net.server.send(&mut out).is_some() {
        sent += 1;
        assert!(sent < 100, "sends without end");
    }
    assert_eq!(net.server.connections(), 0);
    let mut closed = 0;
    while let Some(e) = net.server.poll() {
        closed += u32::from(matches!(e, http3::ServerEvent::Closed { .. }));
    }
    assert_eq!(closed, 1);
}

/// A long header of `version` in a datagram of 1,200 bytes: `first`, the IDs, then `body`'s
/// byte repeated.
fn long_header(first: u8, version: u32, body: u8) -> Vec<u8> {
    let mut d = vec![first];
    d.extend_from_slice(&version.to_be_bytes());
    d.push(8);
    d.extend_from_slice(b"dest-cid");
    d.push(5);
    d.extend_from_slice(b"s-cid");
    d.resize(1200, body);
    d
}

#[test]
fn any_long_header_of_another_version_gets_version_negotiation() {
    let certs = Certs::new();
    let mut server = Server::new(server(&certs), addr(SERVER));
    let from = addr("127.0.0.2:5000");
    let mut out = vec![0u8; 65_536];
    // A first byte no v1 packet type reads as an Initial, a body that is no v1 Initial's (a
    // token length past the datagram), a reserved version (RFC 9000 15).
    for (first, version, body) in [(0xf0, 0x1a2a_3a4a, 0xff), (0xc0, 0xff00_0022, 0xff)] {
        let mut d = long_header(first, version, body);
        server.recv(&mut d, from);
        let n = server.send(&mut out).expect("a Version Negotiation").len;
        let vn = &out[..n];
        // Version 0, the IDs swapped, QUIC v1 offered.
        assert_eq!(vn[0] & 0x80, 0x80);
        assert_eq!(&vn[1..5], &[0, 0, 0, 0]);
        assert_eq!(&vn[5..12], b"\x05s-cid\x08");
        assert_eq!(&vn[12..20], b"dest-cid");
        assert_eq!(&vn[20..], &1u32.to_be_bytes());
    }
    // Shorter than a client's first datagram, or a Version Negotiation itself: no answer.
    let mut short = long_header(0xc0, 0x1a2a_3a4a, 0);
    short.truncate(1199);
    server.recv(&mut short, from);
    server.recv(&mut long_header(0x80, 0, 0), from);
    assert!(server.send(&mut out).is_none());
    assert_eq!(server.counts().version_negotiation, 2);
}
