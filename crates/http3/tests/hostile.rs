//! A server's limits against clients that hold a connection without using it, each of which
//! QUIC's idle timeout alone never ends (their PINGs or ACKs restart it): one that PINGs
//! forever with no request open (keep-alive: GOAWAY, then H3_NO_ERROR), one that sends half a
//! header block (header timeout: the stream reset, the connection kept), one that never opens
//! its windows to a response or never acknowledges it (send timeout: reset and closed), one
//! that stops in the middle of its handshake. The server's own idle timeout is two minutes:
//! each test ends well inside it, by its deadline, with the right count. And one address opening more connections than
//! it may, Initials spoofed in its name, tokens foreign and forged, a client skipping stream
//! numbers, stateless resets only from the thread holding a connection, and the shutdown's
//! GOAWAY sent before its close.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer, SERVER};
use http3::{Limits, Retry, ServerConfig, Timeouts, H3_NO_ERROR, H3_REQUEST_INCOMPLETE};
use std::time::{Duration, Instant};

fn server(certs: &Certs, timeouts: Timeouts) -> ServerConfig {
    let limits = Limits {
        idle_timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    certs.server(&limits).timeouts(timeouts)
}

/// A client from 127.0.0.2:5000 with a stream window of `window` bytes.
fn peer(window: u64) -> Peer {
    Peer::connect(
        &mut client_config(window),
        "127.0.0.2:5000".parse().unwrap(),
    )
}

/// As [`peer`], PINGing every 20 ms (so it is never idle: only the timeout under test ends it).
fn pinging(window: u64) -> Peer {
    let mut p = peer(window);
    p.ping = Some(Duration::from_millis(20));
    p
}

/// `peer` joins `net` as its first client, turned until its HTTP/3 connection is up.
fn handshake(net: &mut Net, peer: Peer) {
    net.peers.push(peer);
    net.until("handshake", |n| n.peers[0].h3.is_some());
}

/// Turns until the server has forgotten the one connection it closed.
fn until_forgotten(net: &mut Net) {
    net.until("forgotten", |n| {
        n.server.connections() == 0 && n.closed == 1
    });
}

/// QUIC's transport error for a connection the server will not take (RFC 9000 20.1).
const CONNECTION_REFUSED: u64 = 0x2;

const LONG: Duration = Duration::from_secs(120);
const SHORT: Duration = Duration::from_millis(300);

#[test]
fn a_client_that_pings_forever_with_no_request_gets_goaway_then_close() {
    let certs = Certs::new();
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: SHORT,
        send: LONG,
        ..Timeouts::default()
    };
    let mut net = Net::new(server(&certs, timeouts), 100);
    net.peers.push(pinging(1 << 20));
    // (No request first: on a busy machine the test could not be sure to send it in time.)
    net.until("keep-alive close", |n| n.peers[0].quic.is_closed());
    let p = &net.peers[0];
    assert_eq!(p.goaway, Some(0), "GOAWAY: no request processed");
    assert_eq!(p.closed_by_server(), Some((true, H3_NO_ERROR)));
    let c = net.server.counts();
    assert_eq!((c.keep_alive_closes, c.goaways_sent), (1, 1), "{c:?}");
    assert_eq!((c.header_timeouts, c.send_timeouts), (0, 0), "{c:?}");
    net.until("forgotten", |n| n.server.connections() == 0);
}

#[test]
fn half_a_header_block_is_reset_at_the_header_timeout_and_the_connection_goes_on() {
    let certs = Certs::new();
    // Long enough for the handshake, which the header timeout bounds too.
    let timeouts = Timeouts {
        header: Duration::from_secs(1),
        keep_alive: LONG,
        send: LONG,
        ..Timeouts::default()
    };
    let mut net = Net::new(server(&certs, timeouts), 100);
    handshake(&mut net, pinging(1 << 20));
    // A HEADERS frame (type 1) announcing 100 bytes, 10 of them sent, no FIN, on stream 40
    // (the client's HTTP/3 layer numbers its own requests from 0).
    let mut half = vec![0x01, 0x40, 100];
    half.extend_from_slice(&[0; 10]);
    assert_eq!(
        net.peers[0].quic.stream_send(40, &half, false),
        Ok(half.len())
    );
    net.until("reset", |n| n.peers[0].was_reset(40, H3_REQUEST_INCOMPLETE));
    assert_eq!(net.server.counts().header_timeouts, 1);
    // The connection is not the stream's: a whole request after it is answered.
    let stream = net.peers[0].get("/b");
    assert_eq!(stream, 0);
    net.until("response", |n| {
        n.peers[0].finished.get(&stream) == Some(&100)
    });
    assert!(!net.peers[0].quic.is_closed());
    let c = net.server.counts();
    assert_eq!(
        (c.header_timeouts, c.send_timeouts, c.keep_alive_closes),
        (1, 0, 0),
        "{c:?}"
    );
}

#[test]
fn a_response_the_client_never_opens_its_window_to_is_reset_and_closed() {
    let certs = Certs::new();
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: LONG,
        send: SHORT,
        ..Timeouts::default()
    };
    // 1 MiB to a client whose stream window is 16 KiB and which never reads.
    let mut net = Net::new(server(&certs, timeouts), 1 << 20);
    let mut peer = pinging(16 * 1024);
    peer.reads = false;
    handshake(&mut net, peer);
    net.peers[0].get("/big");
    net.until("send timeout", |n| n.peers[0].quic.is_closed());
    assert_eq!(net.peers[0].closed_by_server(), Some((true, H3_NO_ERROR)));
    let c = net.server.counts();
    assert_eq!((c.send_timeouts, c.keep_alive_closes), (1, 0), "{c:?}");
    // Its state is gone with it (what waited to be sent included).
    until_forgotten(&mut net);
}

#[test]
fn a_response_the_client_never_acknowledges_is_closed_at_the_send_timeout() {
    let certs = Certs::new();
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: LONG,
        send: SHORT,
        ..Timeouts::default()
    };
    // A response well inside the client's windows: flow control takes it all at once, and
    // only its acknowledgement is left to wait for.
    let mut net = Net::new(server(&certs, timeouts), 2000);
    handshake(&mut net, pinging(256 * 1024));
    // From here it hears nothing, so acknowledges nothing, but PINGs on.
    net.peers[0].deaf = true;
    net.peers[0].get("/small");
    net.until("send timeout", |n| n.server.counts().send_timeouts == 1);
    let c = net.server.counts();
    assert_eq!((c.keep_alive_closes, c.body_timeouts), (0, 0), "{c:?}");
    until_forgotten(&mut net);
}

#[test]
fn a_client_uploading_slowly_that_never_acknowledges_is_closed_at_the_send_timeout() {
    let certs = Certs::new();
    // A body deadline the upload keeps for minutes: only the send clock can end it.
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: LONG,
        send: SHORT,
        body: LONG,
        body_min_rate: 1,
    };
    // The server answers at the head, whole at once; the body goes on after it.
    let mut net = Net::new(server(&certs, timeouts), 2000);
    handshake(&mut net, pinging(256 * 1024));
    // From here it hears nothing, so acknowledges nothing, but uploads and PINGs on.
    net.peers[0].deaf = true;
    let fields = [
        quiche::h3::Header::new(b":method", b"POST"),
        quiche::h3::Header::new(b":scheme", b"https"),
        quiche::h3::Header::new(b":authority", b"localhost"),
        quiche::h3::Header::new(b":path", b"/upload"),
    ];
    let p = &mut net.peers[0];
    let h3 = p.h3.as_mut().unwrap();
    let stream = h3.send_request(&mut p.quic, &fields, false).unwrap();
    // A chunk every 20 ms, 200 at most: the upload would last over 4 s, many send timeouts.
    let mut chunks = 0;
    for _ in 0..200 {
        if net.server.counts().send_timeouts > 0 {
            break;
        }
        let p = &mut net.peers[0];
        let h3 = p.h3.as_mut().unwrap();
        if h3.send_body(&mut p.quic, stream, b"0123456789", false) == Ok(10) {
            chunks += 1;
        }
        let gap = Instant::now();
        while gap.elapsed() < Duration::from_millis(20) {
            net.turn();
        }
    }
    assert!(net.body_read >= 10, "the upload went on: {chunks} chunks");
    let c = net.server.counts();
    assert_eq!(
        (c.send_timeouts, c.body_timeouts),
        (1, 0),
        "{c:?}, {chunks} chunks"
    );
    until_forgotten(&mut net);
}

#[test]
fn a_handshake_left_half_done_is_closed_at_the_header_timeout() {
    let certs = Certs::new();
    let timeouts = Timeouts {
        header: SHORT,
        keep_alive: LONG,
        send: LONG,
        ..Timeouts::default()
    };
    let mut net = Net::new(server(&certs, timeouts), 100);
    // Its Initial reaches the server; nothing the server sends reaches it.
    let mut peer = peer(1 << 20);
    peer.deaf = true;
    net.peers.push(peer);
    net.until("accepted", |n| n.server.counts().accepted == 1);
    net.until("handshake timeout", |n| n.server.connections() == 0);
    assert_eq!(net.server.counts().handshake_timeouts, 1);
}

#[test]
fn one_address_gets_no_more_than_its_connections() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).max_per_address(2);
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    for port in [5000, 5001] {
        let addr = format!("127.0.0.2:{port}").parse().unwrap();
        net.peers.push(Peer::connect(&mut client, addr));
    }
    let ready = |n: &Net, i: usize| n.peers[i].h3.is_some();
    net.until("handshakes", |n| ready(n, 0) && ready(n, 1));
    // At its limit the address's next Initial gets a Retry (no state), and the Initial that
    // brings the token back, from an address now known to be there, is refused: closed with
    // CONNECTION_REFUSED (a transport error), which the client hears at once (its idle
    // timeout is two minutes; `until` gives up after 30 s).
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5002".parse().unwrap(),
    ));
    // Another address is not held back by the first one's.
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.3:5000".parse().unwrap(),
    ));
    net.until("a validated Initial refused", |n| {
        n.peers[2].closed_by_server() == Some((false, CONNECTION_REFUSED)) && ready(n, 3)
    });
    // (Its client may have read the server's first flight, sent before the close so that
    // any client can read the close: it is closed all the same.)
    let refused = &net.peers[2].quic;
    assert!(refused.is_closed() || refused.is_draining());
    assert!(net.peers[2].retries >= 1);
    assert_eq!(net.server.counts().refused_per_address, 1);
    // The refused connection lives only through QUIC's closing period.
    net.until("the refused one forgotten", |n| n.server.connections() == 3);
    let c = net.server.counts();
    assert_eq!((c.accepted, c.refused_per_address), (3, 1), "{c:?}");
    // Once one of its connections has ended, the address may open another.
    net.peers[0].quic.close(true, H3_NO_ERROR, b"").unwrap();
    net.until("closed", |n| n.server.connections() == 2);
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5003".parse().unwrap(),
    ));
    net.until("a new one", |n| ready(n, 4));
}

#[test]
fn an_address_at_its_limit_has_one_refused_connection_at_a_time() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).max_per_address(1);
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    handshake(&mut net, peer(1 << 20));
    // Three more from the address at once: each Initial gets a Retry, and the three bring
    // their tokens back in the same turn. One connection is made to refuse them (its TLS
    // flight, its close); the others' Initials are dropped while it closes, and are refused in
    // turn as their clients send them again.
    for port in [5001, 5002, 5003] {
        let addr = format!("127.0.0.2:{port}").parse().unwrap();
        net.peers.push(Peer::connect(&mut client, addr));
    }
    let mut most = 0;
    net.until("all three refused", |n| {
        most = most.max(n.server.connections());
        (n.peers[1..].iter()).all(|p| p.closed_by_server() == Some((false, CONNECTION_REFUSED)))
    });
    assert_eq!(most, 2, "one connection and one refused at a time");
    let c = net.server.counts();
    // Each refused connection once; the Initials dropped meanwhile apart.
    assert_eq!(c.refused_per_address, 3, "{c:?}");
    assert!(c.refused >= 2, "{c:?}");
    assert_eq!(c.accepted, 1, "{c:?}");
    // The refused ones live only through their closing period.
    net.until("the refused ones forgotten", |n| {
        n.server.connections() == 1
    });
}

#[test]
fn a_client_hello_in_two_datagrams_is_refused_after_the_first_flight() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).max_per_address(1);
    let mut net = Net::new(config, 100);
    handshake(&mut net, peer(1 << 20));
    // A ClientHello too long for one Initial (a long ALPN list, as a browser's post-quantum
    // key share makes it): after the first datagram the server has only an ACK to send, and
    // its close must wait for the rest and its first flight, which gives any client the keys
    // to read it.
    let filler: Vec<Vec<u8>> = (0..40)
        .map(|i| format!("x-{i:02}-{}", "p".repeat(40)).into_bytes())
        .collect();
    let mut protos: Vec<&[u8]> = filler.iter().map(Vec::as_slice).collect();
    protos.push(b"h3");
    let mut long = client_config(1 << 20);
    long.set_application_protos(&protos).unwrap();
    let mut p = Peer::connect(&mut long, "127.0.0.2:5001".parse().unwrap());
    // Each of the client's datagrams reaches the server alone, and what the server sends for
    // it reaches the client before the next: the Retry first, then the token's two Initials.
    let server_addr = SERVER.parse().unwrap();
    let mut buf = vec![0u8; 65_536];
    let mut out = vec![0u8; 65_536];
    for _round in 0..2 {
        let mut sent = Vec::new();
        while let Ok((n, _)) = p.quic.send(&mut buf) {
            sent.push(buf[..n].to_vec());
        }
        assert!(
            sent.len() >= 2,
            "the ClientHello in {} datagrams",
            sent.len()
        );
        for mut d in sent {
            net.server.recv(&mut d, p.addr);
            while let Some(g) = net.server.send(&mut out) {
                let info = quiche::RecvInfo {
                    from: server_addr,
                    to: p.addr,
                };
                let _ = p.quic.recv(&mut out[..g.len], info);
            }
        }
    }
    net.peers.push(p);
    net.until("refused", |n| {
        n.peers[1].closed_by_server() == Some((false, CONNECTION_REFUSED))
    });
    // The server's certificate came before the close: its first flight went first.
    assert!(
        net.peers[1].quic.peer_cert().is_some(),
        "the close came before the first flight"
    );
    assert_eq!(net.server.counts().refused_per_address, 1);
}

#[test]
fn handshakes_never_completed_do_not_count_against_their_address() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).max_per_address(2);
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    // Initials sent in a victim's name (spoofed: the answers never reach their sender).
    for port in [5000, 5001, 5002] {
        let mut spoofed = Peer::connect(&mut client, format!("127.0.0.2:{port}").parse().unwrap());
        spoofed.deaf = true;
        net.peers.push(spoofed);
    }
    net.until("accepted", |n| n.server.counts().accepted == 3);
    // The victim itself still connects.
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:6000".parse().unwrap(),
    ));
    net.until("the victim's handshake", |n| n.peers[3].h3.is_some());
    // Handshakes that complete together past the limit: the last to complete is closed.
    for port in [6001, 6002] {
        let addr = format!("127.0.0.2:{port}").parse().unwrap();
        net.peers.push(Peer::connect(&mut client, addr));
    }
    net.until("one refused", |n| {
        n.peers[4..]
            .iter()
            .any(|p| p.quic.is_closed() || p.quic.is_draining())
            && n.peers[4..].iter().any(|p| p.h3.is_some())
    });
    assert_eq!(net.server.counts().refused_per_address, 1);
}

/// Where the token of an Initial is, if the datagram is one and carries a token (the token
/// is sent in the clear, before what the packet protects).
fn token_of(datagram: &mut [u8]) -> Option<&mut [u8]> {
    // Long header, type Initial.
    if datagram[0] & 0xb0 != 0x80 {
        return None;
    }
    let mut at = 5;
    for _ in 0..2 {
        at += 1 + datagram[at] as usize; // a connection ID's length, then the ID
    }
    // The token's length: a varint of 1, 2 or 4 bytes here.
    let (len, size) = match datagram[at] >> 6 {
        0 => (datagram[at] as usize & 0x3f, 1),
        1 => (
            u16::from_be_bytes([datagram[at] & 0x3f, datagram[at + 1]]) as usize,
            2,
        ),
        _ => panic!("a token longer than 16 KiB"),
    };
    (len > 0).then(|| &mut datagram[at + size..at + size + len])
}

/// Flips the last byte of an Initial's token.
fn forge_token(datagram: &mut [u8]) {
    if let Some(token) = token_of(datagram) {
        *token.last_mut().unwrap() ^= 1;
    }
}

/// Makes an Initial's token one of no format of ours (as a token from another server, or
/// from an older version of this one, is).
fn foreign_token(datagram: &mut [u8]) {
    if let Some(token) = token_of(datagram) {
        token[0] ^= 0xff;
    }
}

#[test]
fn a_token_not_of_ours_is_taken_as_none() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).retry(Retry::Always);
    let mut net = Net::new(config, 100);
    let mut peer = peer(1 << 20);
    peer.tamper = Some(foreign_token);
    net.peers.push(peer);
    // Its Initials with the token are answered as if they had none: with a Retry. (Its
    // first ClientHello may take two Initials, each answered: more than two Retries are
    // answers to Initials carrying the token, retransmitted.)
    net.until("Retries for a foreign token", |n| {
        n.server.counts().retries >= 4
    });
    let c = net.server.counts();
    assert_eq!((c.bad_tokens, c.accepted), (0, 0), "{c:?}");
}

#[test]
fn a_client_completes_through_a_retry_and_a_forged_or_expired_token_is_dropped() {
    let certs = Certs::new();
    let config = server(&certs, Timeouts::default()).retry(Retry::Always);
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5000".parse().unwrap(),
    ));
    net.until("handshake through a Retry", |n| n.peers[0].h3.is_some());
    let stream = net.peers[0].get("/a");
    net.until("response", |n| {
        n.peers[0].finished.get(&stream) == Some(&100)
    });
    // (A ClientHello may take two Initials: each is answered, the client takes the first.)
    let c = net.server.counts();
    assert!(net.peers[0].retries >= 1, "{c:?}");
    assert_eq!(
        (c.retries, c.accepted, c.bad_tokens),
        (u64::from(net.peers[0].retries), 1, 0),
        "{c:?}"
    );

    // A token changed on the way: no connection, each Initial carrying it counted.
    let mut forger = Peer::connect(&mut client, "127.0.0.2:5001".parse().unwrap());
    forger.tamper = Some(forge_token);
    net.peers.push(forger);
    net.until("a forged token dropped", |n| {
        n.server.counts().bad_tokens >= 1
    });
    assert_eq!(net.server.counts().accepted, 1);
    assert_eq!(net.server.connections(), 1);

    // Tokens good for no time at all: every one is expired when it comes back.
    let config = server(&certs, Timeouts::default())
        .retry(Retry::Always)
        .token_lifetime(Duration::ZERO);
    let mut net = Net::new(config, 100);
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5000".parse().unwrap(),
    ));
    net.until("an expired token dropped", |n| {
        n.server.counts().bad_tokens >= 1
    });
    let c = net.server.counts();
    assert_eq!((c.accepted, net.server.connections()), (0, 0), "{c:?}");
    assert!(c.retries >= 1, "{c:?}");
}

#[test]
fn past_the_flood_threshold_handshakes_go_through_a_retry() {
    let certs = Certs::new();
    // One handshake under way is a flood here.
    let config = server(&certs, Timeouts::default()).retry(Retry::Flood(1));
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    // Both Initials arrive before either handshake is done: the second gets a Retry.
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5000".parse().unwrap(),
    ));
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5001".parse().unwrap(),
    ));
    net.until("both handshakes", |n| {
        n.peers[0].h3.is_some() && n.peers[1].h3.is_some()
    });
    let c = net.server.counts();
    let retried: Vec<u32> = net.peers.iter().map(|p| p.retries).collect();
    assert!(retried[0] == 0 && retried[1] >= 1, "{retried:?} {c:?}");
    assert_eq!((c.accepted, c.bad_tokens), (2, 0), "{c:?}");
    // Once no handshake is under way, a third goes straight through.
    net.peers.push(Peer::connect(
        &mut client,
        "127.0.0.2:5002".parse().unwrap(),
    ));
    net.until("third handshake", |n| n.peers[2].h3.is_some());
    assert_eq!(net.peers[2].retries, 0);
    assert_eq!(net.server.counts().retries, c.retries);
}

#[test]
fn a_server_that_lost_a_connection_ends_it_with_a_stateless_reset() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs, Timeouts::default()), 100);
    handshake(&mut net, pinging(1 << 20));
    // The server starts again, knowing nothing of the connection; the key is the TLS key's.
    net.server = http3::Server::new(
        server(&certs, Timeouts::default()),
        common::raw::SERVER.parse().unwrap(),
    );
    net.until("reset", |n| {
        n.peers[0].quic.is_closed() || n.peers[0].quic.is_draining()
    });
    let c = net.server.counts();
    assert!(c.stateless_resets >= 1, "{c:?}");
    assert_eq!(c.accepted, 0);
}

/// A short-header packet of the peer's connection (a PING), as an on-path observer could
/// copy it.
fn short_packet(peer: &mut Peer) -> Vec<u8> {
    peer.quic.send_ack_eliciting().unwrap();
    let mut buf = vec![0u8; 65_536];
    let (n, _) = peer.quic.send(&mut buf).unwrap();
    assert_eq!(buf[0] & 0x80, 0, "a short header");
    buf.truncate(n);
    buf
}

#[test]
fn only_the_thread_holding_a_connection_answers_for_it_with_a_reset() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs, Timeouts::default()).thread(0), 100);
    handshake(&mut net, peer(1 << 20));
    // Thread 1 shares the key; a copy of the connection's packet sent from another address
    // lands on it: no reset (it would be the live connection's, and end it).
    let mut other = http3::Server::new(
        server(&certs, Timeouts::default()).thread(1),
        common::raw::SERVER.parse().unwrap(),
    );
    let mut packet = short_packet(&mut net.peers[0]);
    other.recv(&mut packet, "192.0.2.9:7000".parse().unwrap());
    let mut out = vec![0u8; 65_536];
    assert!(other.send(&mut out).is_none(), "{:?}", other.counts());
    let c = other.counts();
    assert_eq!((c.stateless_resets, c.unknown), (0, 1), "{c:?}");
    // Thread 0 restarted (its connections lost) still ends the connection with its reset.
    net.server = http3::Server::new(
        server(&certs, Timeouts::default()).thread(0),
        common::raw::SERVER.parse().unwrap(),
    );
    net.peers[0].ping = Some(Duration::from_millis(20));
    net.until("reset", |n| {
        n.peers[0].quic.is_closed() || n.peers[0].quic.is_draining()
    });
    assert!(net.server.counts().stateless_resets >= 1);
}

#[test]
fn a_client_that_skips_stream_zero_leaves_no_record_per_request() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs, Timeouts::default()), 100);
    handshake(&mut net, pinging(1 << 20));
    // Requests on 4, 8, ... (QUIC allows a client to skip stream 0), one after the other.
    let n = 60;
    for k in 1..=n {
        let stream = 4 * k;
        net.peers[0].get_on(stream);
        net.until("response", |n| {
            n.peers[0].finished.get(&stream) == Some(&100)
        });
    }
    // At most the skipped stream 0 (it may yet open) and the last one, not one per request.
    let tracked = net.server.streams_tracked();
    assert!(tracked <= 2, "{tracked} streams tracked after {n} requests");
}

#[test]
fn a_header_block_never_finished_does_not_hold_the_keep_alive_clock() {
    let certs = Certs::new();
    let timeouts = Timeouts {
        header: LONG,
        keep_alive: SHORT,
        send: LONG,
        ..Timeouts::default()
    };
    let mut net = Net::new(server(&certs, timeouts), 100);
    handshake(&mut net, pinging(1 << 20));
    // A HEADERS frame announcing 100 bytes, 10 sent, never finished, while PINGing: the
    // header timeout is far off, the keep-alive one is not.
    let mut half = vec![0x01, 0x40, 100];
    half.extend_from_slice(&[0; 10]);
    assert_eq!(
        net.peers[0].quic.stream_send(0, &half, false),
        Ok(half.len())
    );
    net.until("keep-alive close", |n| n.peers[0].quic.is_closed());
    assert_eq!(net.peers[0].goaway, Some(4), "GOAWAY after the stream seen");
    assert_eq!(net.peers[0].closed_by_server(), Some((true, H3_NO_ERROR)));
    let c = net.server.counts();
    assert_eq!((c.keep_alive_closes, c.header_timeouts), (1, 0), "{c:?}");
}

#[test]
fn at_shutdown_an_idle_connection_gets_its_goaway_before_the_close() {
    let certs = Certs::new();
    let mut net = Net::new(server(&certs, Timeouts::default()), 100);
    handshake(&mut net, peer(1 << 20));
    let stream = net.peers[0].get("/a");
    net.until("response", |n| {
        n.peers[0].finished.get(&stream) == Some(&100)
    });
    // Nothing under way: the close follows at once, but only once the GOAWAY has gone.
    net.server.go_away();
    net.until("closed", |n| n.peers[0].quic.is_closed());
    assert_eq!(
        net.peers[0].goaway,
        Some(4),
        "the GOAWAY, read before the close"
    );
    assert_eq!(net.peers[0].closed_by_server(), Some((true, H3_NO_ERROR)));
    assert_eq!(net.server.counts().goaways_sent, 1);
}
