//! Where nginx answers, flint serve answers too: a TLS client offering only ALPN `http/1.0` is
//! served without ALPN (rustls alone would refuse it with `no_application_protocol`); a
//! ClientHello declaring 16 MiB gets a `decode_error` alert and the close (rustls alone closes
//! without one); two Range lines: the first is served.

use std::io::{BufReader, Read, Write};
use std::sync::Arc;

use crate::common::*;
use crate::tls_support::*;

#[test]
fn an_alpn_offer_of_only_http10_is_served_without_alpn() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let mut config = (*certs.client(&both_versions())).clone();
    config.alpn_protocols = vec![b"http/1.0".to_vec()];
    let config = Arc::new(config);
    for _ in 0..2 {
        let mut s = tls_connect(srv.addr, &config);
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        let r = read_response(&mut BufReader::new(&mut s), false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello"[..]));
        assert_eq!(s.conn.alpn_protocol(), None);
    }
    let st = srv.stop();
    assert_eq!((st.tls_handshakes, st.tls_errors), (2, 0), "{st:?}");
}

#[test]
fn a_client_hello_declaring_16_mib_gets_the_alert_and_the_close() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    // A handshake record whose ClientHello header declares 2^24 - 1 bytes.
    let mut hello = vec![0x01, 0xff, 0xff, 0xff, 0x03, 0x03];
    hello.extend([0u8; 100]);
    let mut record = vec![0x16, 0x03, 0x01, 0x00, hello.len() as u8];
    record.extend(&hello);
    let mut s = connect(srv.addr);
    s.write_all(&record).unwrap();
    let mut got = Vec::new();
    s.read_to_end(&mut got).expect("closed, not timed out");
    // alert, TLS 1.2 record version, length 2, fatal, decode_error
    assert_eq!(got, [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x32]);
    assert_eq!(srv.stop().tls_errors, 1);
}

#[test]
fn of_two_range_lines_the_first_is_served() {
    let srv = TestServer::start(|_| {});
    let r = exchange(
        srv.addr,
        "GET /1k.bin HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\nRange: bytes=2-3\r\n\r\n",
    );
    assert_eq!(r.status, 206);
    assert_eq!(r.header("content-range"), Some("bytes 0-1/1024"));
    assert_eq!(r.body, content("1k.bin", 1024)[..2]);
}
