//! Malformed requests (RFC 9114 4.1.2, 4.2, 4.3.1) are stream errors: each is reset with
//! H3_MESSAGE_ERROR, counted, never handed out, and the connection goes on to answer a whole
//! request after them. The header blocks are written here byte by byte (QPACK literals), as
//! quiche's own encoder lowercases names.

mod common;

use common::memory::Certs;
use common::raw::{client_config, Net, Peer};
use http3::{Limits, H3_MESSAGE_ERROR};

/// QPACK's prefixed integer (RFC 7541 5.1) after `first`'s high bits.
fn int(out: &mut Vec<u8>, first: u8, prefix: u32, v: usize) {
    let max = (1usize << prefix) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    let mut v = v - max;
    while v >= 128 {
        out.push((v % 128 + 128) as u8);
        v /= 128;
    }
    out.push(v as u8);
}

/// A HEADERS frame whose fields are all literals with literal names, as given.
fn headers_frame(fields: &[(&str, &str)]) -> Vec<u8> {
    let mut block = vec![0x00, 0x00];
    for (name, value) in fields {
        int(&mut block, 0x20, 3, name.len());
        block.extend_from_slice(name.as_bytes());
        int(&mut block, 0x00, 7, value.len());
        block.extend_from_slice(value.as_bytes());
    }
    assert!(block.len() < 1 << 14);
    let mut frame = vec![0x01, 0x40 | (block.len() >> 8) as u8, block.len() as u8];
    frame.extend_from_slice(&block);
    frame
}

const GET: [(&str, &str); 4] = [
    (":method", "GET"),
    (":scheme", "https"),
    (":authority", "localhost"),
    (":path", "/"),
];

#[test]
fn malformed_requests_are_reset_with_message_error_and_the_connection_goes_on() {
    let certs = Certs::new();
    let mut net = Net::new(certs.server(&Limits::default()), 100);
    let peer = Peer::connect(
        &mut client_config(1 << 20),
        "127.0.0.2:5000".parse().unwrap(),
    );
    net.peers.push(peer);
    net.until("handshake", |n| n.peers[0].h3.is_some());
    let with = |extra: &[(&'static str, &'static str)]| [&GET[..], extra].concat();
    let requests: Vec<Vec<(&str, &str)>> = vec![
        vec![GET[0], GET[2], GET[3]],  // no :scheme
        with(&[(":path", "/second")]), // two :path
        with(&[("X-Upper", "1")]),     // an uppercase name
        with(&[("transfer-encoding", "chunked")]),
        with(&[("connection", "close")]),
        with(&[("te", "gzip")]),
        vec![GET[0], GET[1], ("accept", "*/*"), GET[2], GET[3]], // a pseudo-header late
        with(&[(":protocol", "websocket")]),
    ];
    for (k, fields) in requests.iter().enumerate() {
        let stream = 4 * k as u64;
        let frame = headers_frame(fields);
        let sent = net.peers[0].quic.stream_send(stream, &frame, true);
        assert_eq!(sent, Ok(frame.len()), "{fields:?}");
        net.until("the reset", |n| {
            n.peers[0].was_reset(stream, H3_MESSAGE_ERROR)
        });
        assert!(!net.peers[0].finished.contains_key(&stream), "{fields:?}");
    }
    let c = net.server.counts();
    assert_eq!(c.malformed_requests, requests.len() as u64, "{c:?}");
    // The same connection answers a whole request after them.
    let stream = 4 * requests.len() as u64;
    let frame = headers_frame(&GET);
    assert_eq!(
        net.peers[0].quic.stream_send(stream, &frame, true),
        Ok(frame.len())
    );
    net.until("the answer", |n| {
        n.peers[0].finished.get(&stream) == Some(&100)
    });
    assert!(net.peers[0].closed_by_server().is_none());
    assert_eq!(
        net.server.counts().malformed_requests,
        requests.len() as u64
    );
}

/// A trailer section after a request's body is no request: not reset as one without its
/// pseudo-headers, not handed out twice; the request is answered once.
#[test]
fn a_trailer_section_is_not_taken_for_a_malformed_request() {
    let certs = Certs::new();
    let mut net = Net::new(certs.server(&Limits::default()), 100);
    let peer = Peer::connect(
        &mut client_config(1 << 20),
        "127.0.0.2:5000".parse().unwrap(),
    );
    net.peers.push(peer);
    net.until("handshake", |n| n.peers[0].h3.is_some());
    let post = [GET[1], GET[2], GET[3], (":method", "POST")];
    let mut bytes = headers_frame(&[post[3], post[0], post[1], post[2]]);
    bytes.extend_from_slice(&[0x00, 5]);
    bytes.extend_from_slice(b"hello");
    bytes.extend_from_slice(&headers_frame(&[("x-checksum", "1")]));
    assert_eq!(
        net.peers[0].quic.stream_send(0, &bytes, true),
        Ok(bytes.len())
    );
    net.until("the answer and the body's end", |n| {
        n.peers[0].finished.get(&0) == Some(&100) && n.bodies_ended == 1
    });
    assert!(!net.peers[0].was_reset(0, H3_MESSAGE_ERROR));
    assert_eq!((net.body_read, net.requests), (5, 1));
    assert_eq!(net.server.counts().malformed_requests, 0);
}
