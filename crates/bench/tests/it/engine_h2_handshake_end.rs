//! An HTTP/2 connection over TLS whose handshake is done only as the run ends (its last flight
//! worked through in the loop's last round) and then fails (no ALPN `h2`): it never came
//! up, so nothing of the page's request reached the server. The request is begun and not sent
//! (`unsent_at_end`), not unfinished, which would break "the server's count = requests +
//! unfinished". `handshake_past_end` makes the handshake end past the run's end every time.

use crate::per_connection::{read_until_stopped, PerConnection as Server};

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, Stop, Target, Workload};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use test_support::certs::TestCa;

/// What the server saw: handshakes completed, and bytes of HTTP (any version) received.
#[derive(Default)]
struct Seen {
    handshakes: AtomicU64,
    bytes: AtomicU64,
}

/// A rustls server that knows no ALPN (an HTTP/1 server's handshake completes so: one that
/// offered http/1.1 alone would refuse the client's `h2` with an alert instead), which counts
/// its handshakes and every byte of plaintext the client sends after one.
fn no_alpn_server(ca: &TestCa, seen: Arc<Seen>) -> Server {
    let mut config = (*ca.leaf().server_config()).clone();
    config.alpn_protocols.clear();
    let config = Arc::new(config);
    Server::start(move |tcp, stop| {
        let conn = rustls::ServerConnection::new(config.clone()).unwrap();
        let mut s = rustls::StreamOwned::new(conn, tcp);
        let mut counted = false;
        read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
            if !counted && !s.conn.is_handshaking() {
                seen.handshakes.fetch_add(1, Ordering::SeqCst);
                counted = true;
            }
            seen.bytes.fetch_add(data.len() as u64, Ordering::SeqCst);
            true
        });
        // A handshake done with nothing sent after it ends the read with the client's close.
        if !counted && !s.conn.is_handshaking() {
            seen.handshakes.fetch_add(1, Ordering::SeqCst);
        }
    })
}

#[test]
fn a_handshake_done_past_the_end_without_h2_leaves_its_request_unsent() {
    let ca = TestCa::new("flint test CA");
    let seen = Arc::new(Seen::default());
    let server = no_alpn_server(&ca, seen.clone());
    let config = BenchConfig {
        concurrency: 1,
        threads: 1,
        // Time for the handshake's flight to come and be read before the end, on a busy machine
        // too (the handshake the server saw done says it was).
        stop: Stop::Duration(Duration::from_secs(1)),
        http: HttpMode::Http2,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        tls: TlsOptions {
            cacert: Some(ca.pem.clone()),
            ..TlsOptions::default()
        },
        handshake_past_end: true,
        ..BenchConfig::new(Target::https(server.addr, "localhost"))
    };
    let workload = Workload::from_paths(&["/a".to_string()]).unwrap();
    let started = Instant::now();
    let r = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    assert!(started.elapsed() < Duration::from_secs(15));
    let s = &r.stats;
    // The one connection's handshake ended past the end: its page's file was begun, not sent.
    assert_eq!(
        s.unfinished, 0,
        "nothing reached the server: none unfinished"
    );
    assert_eq!(s.unsent_at_end, 1, "the page's file, begun and not sent");
    assert_eq!(s.requests, 0);
    assert_eq!(s.errors.total(), 0, "past the end: {:?}", s.errors);
    server.stop();
    // Done on both sides: the client read the server's flight before the end, and answered it.
    assert_eq!(seen.handshakes.load(Ordering::SeqCst), 1, "one handshake");
    assert_eq!(
        seen.bytes.load(Ordering::SeqCst),
        0,
        "no request, no preface"
    );
}
