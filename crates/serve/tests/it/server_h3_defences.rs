//! HTTP/3 defences of flint serve as an outside tester met them: Initials from many
//! addresses, never continued, against a low `h3_max_connections` (Retries start before the
//! slots run out: a real client connects with them still held), a shutdown with a handshake
//! half done (over in well under QUIC's closing period), and a header block past HTTP/1.1's
//! head limit (within the advertised block size) answered 431 on its stream while the
//! connection, and a download on it, go on.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::eventually;
use crate::h3_support::{flush, Certs, Driver, BOUND};
use http3::Client;

/// One real Initial (a ClientHello) to `server` from a socket on `local`, never continued:
/// the socket is returned, never read.
fn one_initial(certs: &Certs, local: &str, server: SocketAddr) -> UdpSocket {
    let sock = UdpSocket::bind(local).expect("bind a loopback address");
    let from = sock.local_addr().unwrap();
    let mut client = Client::connect(&mut certs.client(), "localhost", from, server).unwrap();
    flush(&mut client, &sock);
    sock
}

#[test]
fn initials_from_many_addresses_leave_a_real_client_room_under_a_low_limit() {
    let certs = Certs::new();
    // Eight connections; a handshake deadline past the test's bound, so that only Retries
    // (not the deadline freeing the slots) can let the real client in.
    let srv = certs.serve(|c| {
        c.h3_max_connections = 8;
        c.header_timeout_ms = 120_000;
    });
    let flood: Vec<UdpSocket> = (0..8)
        .map(|i| one_initial(&certs, &format!("127.0.0.{}:0", 10 + i), srv.addr))
        .collect();
    // Half of them hold a handshake, the others' Initials got a Retry (each of the first
    // flight's, which may be more than one a client).
    assert!(
        eventually(BOUND, || {
            let st = srv.stats();
            st.http3_connections == 4 && st.h3_retries >= 4
        }),
        "{:?}",
        srv.stats()
    );
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let stream = d.request("GET", "/a.txt", &[]);
    d.until(|d| d.got.get(&stream).is_some_and(|g| g.finished));
    assert_eq!(d.got[&stream].status, 200);
    d.close();
    let st = srv.stop();
    assert_eq!(st.http3_connections, 5, "{st:?}");
    assert!(st.h3_retries >= 5, "{st:?}");
    drop(flood);
}

#[test]
fn a_shutdown_with_a_handshake_half_done_ends_at_once() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.header_timeout_ms = 120_000);
    let _sock = one_initial(&certs, "127.0.0.1:0", srv.addr);
    assert!(eventually(BOUND, || srv.stats().http3_connections == 1));
    // (The handshake is under way: the server's first flight went to a socket never read.)
    let start = Instant::now();
    let st = srv.stop();
    let took = start.elapsed();
    // QUIC's closing period for a handshake with no round trip measured is three PTOs of
    // about a second each; the drain waits for none of it (generous for a loaded machine).
    assert!(took <= Duration::from_millis(2500), "{took:?}");
    assert_eq!(st.h3_handshake_timeouts, 0, "{st:?}");
}

#[test]
fn a_header_block_past_the_head_limit_is_431_and_the_connection_goes_on() {
    let certs = Certs::new();
    let srv = certs.serve(|_| {});
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    // A download under way on another stream.
    let download = d.request("GET", "/4m.bin", &[]);
    d.until(|d| d.got.get(&download).is_some_and(|g| !g.body.is_empty()));
    // A header block of about 17 KB as QPACK counts it (name, value, 32 bytes a field):
    // within the advertised limit (26,624: HTTP/1.1's request line, head and 32 bytes a field)
    // and past HTTP/1.1's head (16,384 bytes). Small on the wire (Huffman coding): quiche's
    // client sends a block only whole, within its congestion window.
    let big = "a".repeat(17_000);
    let list: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/a.txt"),
        (b"x-big", big.as_bytes()),
    ];
    let mut sent = None;
    d.until(|d| {
        sent = d.client.send_request(&list, true).ok();
        sent.is_some()
    });
    let stream = sent.unwrap();
    d.until(|d| {
        d.got
            .get(&stream)
            .is_some_and(|g| g.finished || g.reset.is_some())
    });
    assert_eq!(d.got[&stream].status, 431);
    d.until(|d| d.got.get(&download).is_some_and(|g| g.finished) || d.client.is_closed());
    assert_eq!(d.client.closed(), None, "the connection goes on");
    assert_eq!(d.got[&download].body.len(), 4 << 20);
    let after = d.request("GET", "/a.txt", &[]);
    d.until(|d| d.got.get(&after).is_some_and(|g| g.finished));
    assert_eq!(d.got[&after].status, 200);
}
