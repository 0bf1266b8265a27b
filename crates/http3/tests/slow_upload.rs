//! A client uploading slowly but within its body deadline is never cut by the send timeout:
//! the send clock runs only while the server has bytes waiting to be taken or acknowledged,
//! and a response sent and acknowledged before the body ends leaves it nothing to wait for.
//! The server here answers each request at once, before reading its body (as a server that
//! answers before the upload ends), so the upload goes on long after the response is done.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer};
use http3::{Limits, Timeouts};
use quiche::h3;
use std::time::{Duration, Instant};

const SEND: Duration = Duration::from_millis(500);
const CHUNK: usize = 100;
const CHUNKS: usize = 12;
/// Between two chunks: the upload lasts at least `CHUNKS - 1` of these, many send timeouts.
const GAP: Duration = Duration::from_millis(250);

#[test]
fn an_upload_within_its_body_deadline_outlives_the_send_timeout() {
    let certs = Certs::new();
    let limits = Limits {
        idle_timeout: Duration::from_secs(120),
        ..Limits::default()
    };
    let timeouts = Timeouts {
        header: Duration::from_secs(60),
        keep_alive: Duration::from_secs(60),
        send: SEND,
        // Far above the gaps, and a rate the upload keeps easily: the body clock never ends it.
        body: Duration::from_secs(20),
        body_min_rate: 1,
    };
    let body_len = 4000;
    let mut net = Net::new(certs.server(&limits).timeouts(timeouts), body_len);
    let mut peer = Peer::connect(
        &mut client_config(256 * 1024),
        "127.0.0.2:5000".parse().unwrap(),
    );
    peer.ping = Some(Duration::from_millis(20));
    net.peers.push(peer);
    net.until("handshake", |n| n.peers[0].h3.is_some());

    let fields = [
        h3::Header::new(b":method", b"POST"),
        h3::Header::new(b":scheme", b"https"),
        h3::Header::new(b":authority", b"localhost"),
        h3::Header::new(b":path", b"/upload"),
    ];
    let p = &mut net.peers[0];
    let h3 = p.h3.as_mut().unwrap();
    let stream = h3.send_request(&mut p.quic, &fields, false).unwrap();
    // The response comes whole (and is acknowledged) while the body has hardly begun.
    net.until("response", |n| {
        n.peers[0].finished.get(&stream) == Some(&body_len)
    });
    let started = Instant::now();
    let chunk = [b'u'; CHUNK];
    for i in 0..CHUNKS {
        let last = i + 1 == CHUNKS;
        let p = &mut net.peers[0];
        let h3 = p.h3.as_mut().unwrap();
        assert_eq!(h3.send_body(&mut p.quic, stream, &chunk, last), Ok(CHUNK));
        let sent = Instant::now();
        net.until("the chunk read", |n| {
            n.body_read == ((i + 1) * CHUNK) as u64 || n.peers[0].quic.is_closed()
        });
        while sent.elapsed() < GAP && !last {
            net.turn();
        }
        assert!(!net.peers[0].quic.is_closed(), "closed after chunk {i}");
    }
    net.until("the body's end", |n| n.bodies_ended == 1);
    let upload = started.elapsed();
    assert!(upload >= SEND * 5, "the upload took {upload:?}");
    // With the body ended QUIC lets go of the stream: nothing waits, nothing is cut.
    let ended = Instant::now();
    while ended.elapsed() < SEND * 3 {
        net.turn();
    }
    let c = net.server.counts();
    assert_eq!((c.send_timeouts, c.body_timeouts), (0, 0), "{c:?}");
    assert!(!net.peers[0].quic.is_closed());
    assert_eq!(net.peers[0].finished.get(&stream), Some(&body_len));
}
