//! Clients that open every stream they may on several connections, send 20 KiB of a HEADERS
//! frame on each and never finish it: what the server holds of those blocks
//! (`Server::header_bytes`) stays within its header budget at every turn, each connection
//! within its share, the streams past it refused with H3_REQUEST_REJECTED and counted, and a
//! request on another connection is answered meanwhile.
//!
//! Before the budget, each such connection had the server hold its 100 streams' blocks (2
//! MiB here, about 6 MB with flint serve's limits) for the header timeout, with no bound
//! across connections.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer, BOUND};
use http3::{Limits, Timeouts, H3_REQUEST_REJECTED};
use std::time::{Duration, Instant};

/// What each stream sends of its header block.
const PARTIAL: usize = 20 * 1024;
/// The server's budget: a connection's share is an eighth of it, 128 KiB.
const BUDGET: u64 = 1 << 20;
/// Connections sending unfinished blocks: their shares together within the budget, so that
/// a request on another connection has room.
const HOSTILE: usize = 6;
/// What the server's HTTP/3 buffer for one block takes: the next power of two of its bytes
/// (it grows by doubling).
const BLOCK_BUFFER: u64 = 32 * 1024;
/// The server's stream limit (`Limits::default`).
const STREAMS: u64 = 100;

/// A HEADERS frame (type 1) announcing twice `PARTIAL` bytes (a 4-byte varint), and `PARTIAL`
/// of them: within the header block limit, never finished.
fn partial_headers() -> Vec<u8> {
    let announced = 2 * PARTIAL as u32;
    let mut frame = vec![0x01];
    frame.extend_from_slice(&(0x8000_0000 | announced).to_be_bytes());
    frame.resize(frame.len() + PARTIAL, b'a');
    frame
}

/// A turn of the network, checking the server's header bytes against the budget.
fn turn(net: &mut Net) {
    net.turn();
    let held = net.server.header_bytes();
    assert!(
        held <= BUDGET,
        "{held} bytes held past the budget of {BUDGET}"
    );
}

#[test]
fn unfinished_header_blocks_are_held_within_the_budget_and_others_are_served() {
    let certs = Certs::new();
    let limits = Limits {
        idle_timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    assert_eq!(limits.max_streams, STREAMS);
    // Deadlines past the test's bound: only the budget lets go of the blocks.
    let timeouts = Timeouts {
        header: Duration::from_secs(120),
        keep_alive: Duration::from_secs(120),
        send: Duration::from_secs(120),
        ..Timeouts::default()
    };
    let config = certs
        .server(&limits)
        .timeouts(timeouts)
        .header_budget(BUDGET);
    let mut net = Net::new(config, 100);
    let mut client = client_config(1 << 20);
    for i in 0..=HOSTILE {
        let mut peer = Peer::connect(
            &mut client,
            format!("127.0.0.{}:5000", 2 + i).parse().unwrap(),
        );
        // Streams read through QUIC only.
        peer.http3 = false;
        net.peers.push(peer);
    }
    net.until("handshakes", |n| {
        n.peers.iter().all(|p| p.quic.is_established())
    });

    // Every stream of every hostile connection, written as flow control takes it; a stream
    // the server refused takes no more.
    let frame = partial_headers();
    let mut at = vec![vec![0usize; STREAMS as usize]; HOSTILE];
    let start = Instant::now();
    loop {
        for (p, at) in net.peers[..HOSTILE].iter_mut().zip(at.iter_mut()) {
            for (i, at) in at.iter_mut().enumerate() {
                if *at < frame.len() {
                    match p.quic.stream_send(4 * i as u64, &frame[*at..], false) {
                        Ok(w) => *at += w,
                        Err(quiche::Error::Done) => {}
                        Err(_) => *at = frame.len(),
                    }
                }
            }
        }
        if at.iter().flatten().all(|&a| a == frame.len()) {
            break;
        }
        assert!(start.elapsed() < BOUND, "partial header blocks not taken");
        turn(&mut net);
    }
    // Meanwhile, a request on the other connection: answered whole.
    let normal = HOSTILE;
    net.peers[normal].get_on(0);
    let mut got = 0;
    let start = Instant::now();
    loop {
        let mut buf = [0u8; 4096];
        match net.peers[normal].quic.stream_recv(0, &mut buf) {
            Ok((len, fin)) => {
                got += len;
                if fin {
                    break;
                }
            }
            Err(quiche::Error::Done) => {
                assert!(start.elapsed() < BOUND, "no response");
                turn(&mut net);
            }
            Err(e) => panic!("the request failed: {e:?}"),
        }
    }
    assert!(got > 100, "a head and 100 bytes of body: {got}");
    assert_eq!(net.requests, 1, "only the whole request was handed out");

    // Every refused stream's client saw H3_REQUEST_REJECTED; the count is the server's.
    let mut rejected = vec![std::collections::HashSet::new(); HOSTILE];
    net.until("refusals seen", |n| {
        for (p, seen) in n.peers[..HOSTILE].iter_mut().zip(rejected.iter_mut()) {
            for s in (0..STREAMS).map(|i| 4 * i) {
                if !seen.contains(&s) && p.was_reset(s, H3_REQUEST_REJECTED) {
                    seen.insert(s);
                }
            }
        }
        let seen: usize = rejected.iter().map(|r| r.len()).sum();
        seen as u64 == n.server.counts().header_budget_refused
    });
    let c = net.server.counts();
    let share = BUDGET / 8;
    let mut kept = 0;
    for (i, r) in rejected.iter().enumerate() {
        // Each connection kept what fits its share (128 KiB: 4 blocks of 20 KiB at most, each
        // charged the buffer it takes), the rest refused.
        let k = STREAMS - r.len() as u64;
        assert!(
            k >= 1 && k * BLOCK_BUFFER <= share,
            "connection {i} kept {k}; {c:?}"
        );
        kept += k;
    }
    assert!(c.header_bytes_peak <= BUDGET, "{c:?}");
    // What is held is what the kept blocks sent, the refused ones' given back once HTTP/3 let
    // go of them.
    let kept_bytes = kept * BLOCK_BUFFER;
    net.until("refused streams let go of", |n| {
        n.server.header_bytes() == kept_bytes
    });
    assert_eq!((c.header_timeouts, net.closed), (0, 0), "{c:?}");
}
