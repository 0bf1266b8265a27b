//! HTTPS against a rustls server made here, with certificates made at test time by rcgen: the
//! trusted case in every HTTP mode, each kind of failure with its own error kind, resumption off
//! and on. Every case ends on time: runs are `-n` runs with short timeouts, and each failure
//! consumes its page.

use crate::per_connection;

use bench::config::{TlsOptions, TlsVersion};
use bench::stats::ErrorKind;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use per_connection::{read_until_stopped, PerConnection as Server};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use test_support::certs::{KeyKind, Leaf, TestCa, LOCAL_NAMES};

/// The HTTPS server most cases use: `leaf`'s chain, every request answered with a 100-byte
/// body; HTTP/1.0 requests are answered and closed (close_notify, then FIN).
fn https_server(leaf: &Leaf) -> Server {
    https_server_with_body(leaf, 100)
}

fn https_server_with_body(leaf: &Leaf, body_len: usize) -> Server {
    let config = leaf.server_config();
    Server::start(move |tcp, stop| {
        let conn = rustls::ServerConnection::new(config.clone()).unwrap();
        serve_http(rustls::StreamOwned::new(conn, tcp), stop, body_len);
    })
}

fn serve_http(
    mut s: rustls::StreamOwned<rustls::ServerConnection, TcpStream>,
    stop: &AtomicBool,
    body_len: usize,
) {
    let body = vec![b'x'; body_len];
    let mut have = Vec::new();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        have.extend_from_slice(data);
        while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
            let head: Vec<u8> = have.drain(..end + 4).collect();
            let http10 = head.windows(8).any(|w| w == b"HTTP/1.0");
            let version = if http10 { "1.0" } else { "1.1" };
            let head = format!("HTTP/{version} 200 OK\r\nContent-Length: {body_len}\r\n\r\n");
            if s.write_all(&[head.as_bytes(), &body].concat()).is_err() {
                return false;
            }
            if http10 {
                s.conn.send_close_notify();
                let _ = s.flush();
                return false;
            }
        }
        true
    });
}

/// A server that answers the client's ClientHello with `reply`, then waits for it to close.
fn answering_hello(reply: &'static [u8]) -> Server {
    Server::start(move |mut s, stop| {
        read_hello(&mut s);
        let _ = s.write_all(reply);
        await_close(&mut s, stop);
    })
}

/// Reads what the client sends first (its ClientHello), within a bound.
fn read_hello(s: &mut TcpStream) {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline {
        match s.read(&mut buf) {
            Ok(n) if n > 0 => return,
            Ok(_) => return,
            Err(_) => {}
        }
    }
}

/// Waits (bounded) for the client to close.
fn await_close(s: &mut TcpStream, stop: &AtomicBool) {
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline && !stop.load(Ordering::SeqCst) {
        match s.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => return,
        }
    }
}

fn one_file() -> Workload {
    Workload::from_paths(&["/a".to_string()]).unwrap()
}

fn config(target: Target, tls: TlsOptions, http: HttpMode, pages: u64) -> BenchConfig {
    BenchConfig {
        concurrency: 2,
        threads: 1,
        stop: Stop::Pages(pages),
        http,
        connect_timeout: Duration::from_secs(3),
        response_timeout: Duration::from_secs(3),
        tls,
        ..BenchConfig::new(target)
    }
}

fn trusting(ca: &TestCa) -> TlsOptions {
    TlsOptions {
        cacert: Some(ca.pem.clone()),
        ..TlsOptions::default()
    }
}

/// Runs and checks it ended on time.
fn run(config: &BenchConfig) -> RunResult {
    let started = Instant::now();
    let r = bench::run(config, &one_file(), &AtomicBool::new(false)).unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "took {:?}",
        started.elapsed()
    );
    r
}

#[test]
fn a_trusted_certificate_works_in_every_mode_with_handshakes_apart() {
    let ca = TestCa::new("flint test CA");
    let server = https_server(&ca.leaf());
    let target = Target::https(server.addr, "localhost");
    for http in [HttpMode::KeepAlive, HttpMode::Pipeline, HttpMode::Http10] {
        let r = run(&config(target.clone(), trusting(&ca), http, 40));
        let s = &r.stats;
        assert_eq!(s.errors.total(), 0, "{http:?}: {:?}", s.errors);
        assert_eq!(s.requests, 40, "{http:?}");
        assert_eq!(
            s.tls_handshakes, s.connects,
            "{http:?}: a handshake per connection"
        );
        assert_eq!(s.tls_handshake.count(), s.tls_handshakes);
        assert_eq!(s.tls_resumed, 0, "{http:?}: resumption is off by default");
        if http == HttpMode::Http10 {
            assert_eq!(s.tls_handshakes, 40, "HTTP/1.0: a handshake per request");
        } else {
            assert_eq!(s.tls_handshakes, 2, "{http:?}: one per Webchild");
        }
        let session = s.tls_session.as_ref().expect("a session was recorded");
        assert_eq!(session.version, "TLSv1_3");
        assert_eq!(session.alpn.as_deref(), Some("http/1.1"));
        // rustls's server follows the client's order, as nginx and h2o do: browsers' first
        // suite; and it has the hybrid post-quantum group rustls offers first, as browsers do.
        assert_eq!(session.cipher, "TLS13_AES_128_GCM_SHA256");
        assert_eq!(session.kx, "X25519MLKEM768");
        let json = bench::report::json(&r);
        assert_eq!(json["summary"]["tls"]["kx"], "X25519MLKEM768");
        assert_eq!(json["summary"]["tls"]["handshakes"], s.tls_handshakes);
        assert_eq!(
            json["summary"]["tls_handshake_ms"]["count"],
            s.tls_handshakes
        );
        assert_eq!(json["config"]["tls"]["verify"], true);
    }
    // An IP address is checked against the certificate's IP addresses.
    let by_ip = Target::parse(&format!("https://127.0.0.1:{}/", server.addr.port())).unwrap();
    let r = run(&config(by_ip, trusting(&ca), HttpMode::KeepAlive, 4));
    assert_eq!((r.stats.requests, r.stats.errors.total()), (4, 0));
    // --tls 1.2 pins the version.
    let pinned = TlsOptions {
        version: Some(TlsVersion::Tls12),
        ..trusting(&ca)
    };
    let r = run(&config(target, pinned, HttpMode::KeepAlive, 4));
    assert_eq!(r.stats.requests, 4);
    assert_eq!(r.stats.tls_session.unwrap().version, "TLSv1_2");
}

/// Every page fails with `kind`, and nothing succeeds.
#[test]
fn large_bodies_arrive_whole_in_every_mode() {
    // 300 KiB a response: many records in one socket read, records cut between reads, and reads
    // with less room left in the event loop's buffer than a record.
    const BODY: usize = 300 * 1024;
    let ca = TestCa::new("flint test CA");
    let server = https_server_with_body(&ca.leaf(), BODY);
    let target = Target::https(server.addr, "localhost");
    for http in [HttpMode::KeepAlive, HttpMode::Pipeline, HttpMode::Http10] {
        let r = run(&config(target.clone(), trusting(&ca), http, 20));
        let s = &r.stats;
        assert_eq!(s.errors.total(), 0, "{http:?}: {:?}", s.errors);
        assert_eq!(s.requests, 20, "{http:?}");
        assert_eq!(s.bytes_body, 20 * BODY as u64, "{http:?}");
    }
}

fn assert_fails(r: &RunResult, kind: ErrorKind, pages: u64) {
    assert_eq!(r.stats.requests, 0);
    assert_eq!(r.stats.errors.get(kind), pages, "{:?}", r.stats.errors);
    assert_eq!(r.stats.errors.total(), pages, "{:?}", r.stats.errors);
}

#[test]
fn certificates_that_must_be_refused_are_tls_certificate_errors_unless_insecure() {
    let ca_good = TestCa::new("flint test CA");
    let ca_other = TestCa::new("another CA");
    let server = https_server(&ca_good.leaf());
    let target = Target::https(server.addr, "localhost");
    // Untrusted: signed by a CA the client does not know.
    let r = run(&config(
        target.clone(),
        trusting(&ca_other),
        HttpMode::KeepAlive,
        3,
    ));
    assert_fails(&r, ErrorKind::TlsCertificate, 3);
    // Wrong name.
    let wrong = Target::https(server.addr, "wrong.example");
    let r = run(&config(wrong, trusting(&ca_good), HttpMode::KeepAlive, 3));
    assert_fails(&r, ErrorKind::TlsCertificate, 3);
    // --insecure accepts the untrusted one, and the JSON says nothing was verified.
    let insecure = TlsOptions {
        insecure: true,
        ..TlsOptions::default()
    };
    let r = run(&config(target, insecure, HttpMode::KeepAlive, 3));
    assert_eq!((r.stats.requests, r.stats.errors.total()), (3, 0));
    assert_eq!(bench::report::json(&r)["config"]["tls"]["verify"], false);
    assert!(bench::report::summary(&r).contains("NOT verified (--insecure)"));

    let expired = https_server(&ca_good.leaf_with(LOCAL_NAMES, KeyKind::EcdsaP256, true));
    let target = Target::https(expired.addr, "localhost");
    let r = run(&config(target, trusting(&ca_good), HttpMode::KeepAlive, 3));
    assert_fails(&r, ErrorKind::TlsCertificate, 3);
}

#[test]
fn failed_handshakes_have_their_own_kinds() {
    let ca = TestCa::new("flint test CA");
    // A TLS 1.0-only server, as OpenSSL answers a client that offers only newer versions: a
    // fatal protocol_version alert in a TLS 1.0 record.
    let old = answering_hello(&[0x15, 0x03, 0x01, 0x00, 0x02, 0x02, 0x46]);
    let r = run(&config(
        Target::https(old.addr, "localhost"),
        trusting(&ca),
        HttpMode::KeepAlive,
        3,
    ));
    assert_fails(&r, ErrorKind::TlsHandshake, 3);

    // A plaintext HTTP server on an https URL answers the ClientHello with a 400.
    let plain = answering_hello(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    );
    let r = run(&config(
        Target::https(plain.addr, "localhost"),
        trusting(&ca),
        HttpMode::KeepAlive,
        3,
    ));
    assert_fails(&r, ErrorKind::TlsHandshake, 3);

    // A reset in the middle of the handshake.
    let reset = Server::start(|mut s, _| {
        read_hello(&mut s);
        let _ = socket2::SockRef::from(&s).set_linger(Some(Duration::ZERO));
    });
    let r = run(&config(
        Target::https(reset.addr, "localhost"),
        trusting(&ca),
        HttpMode::KeepAlive,
        3,
    ));
    assert_fails(&r, ErrorKind::TlsReset, 3);

    // A server that never answers the ClientHello: the connect timeout ends the handshake.
    let silent = Server::start(|mut s, stop| await_close(&mut s, stop));
    let mut c = config(
        Target::https(silent.addr, "localhost"),
        trusting(&ca),
        HttpMode::KeepAlive,
        2,
    );
    c.connect_timeout = Duration::from_millis(300);
    let r = run(&c);
    assert_fails(&r, ErrorKind::TlsHandshake, 2);
}

#[test]
fn resumption_is_off_by_default_and_counted_when_on() {
    let ca = TestCa::new("flint test CA");
    let server = https_server(&ca.leaf());
    let target = Target::https(server.addr, "localhost");
    let off = run(&config(target.clone(), trusting(&ca), HttpMode::Http10, 20));
    assert_eq!((off.stats.requests, off.stats.tls_handshakes), (20, 20));
    assert_eq!(off.stats.tls_resumed, 0);
    let resume = TlsOptions {
        resume: true,
        ..trusting(&ca)
    };
    let on = run(&config(target, resume, HttpMode::Http10, 20));
    assert_eq!((on.stats.requests, on.stats.tls_handshakes), (20, 20));
    // The first connection of each Webchild may be full; after that, tickets are at hand.
    assert!(
        on.stats.tls_resumed >= 10 && on.stats.tls_resumed < 20,
        "resumed {}",
        on.stats.tls_resumed
    );
}

/// As lighttpd closes an HTTPS connection: after an HTTP/1.0 response its close_notify, then
/// its FIN only once the client has answered (its close_notify or its own close), or when its
/// linger ends, seconds later.
fn serve_http10_lingering(
    mut s: rustls::StreamOwned<rustls::ServerConnection, TcpStream>,
    stop: &AtomicBool,
) {
    // Its close_notify goes out at once, as lighttpd's does (not held by Nagle's algorithm).
    let _ = s.sock.set_nodelay(true);
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut have = Vec::new();
    let mut chunk = [0u8; 4096];
    while !have.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => have.extend_from_slice(&chunk[..n]),
            Err(_) if Instant::now() < deadline && !stop.load(Ordering::SeqCst) => {}
            Err(_) => return,
        }
    }
    let body = [b'x'; 100];
    let head = "HTTP/1.0 200 OK\r\nContent-Length: 100\r\n\r\n";
    if s.write_all(&[head.as_bytes(), &body].concat()).is_err() {
        return;
    }
    s.conn.send_close_notify();
    let _ = s.flush();
    // The linger: until the client's close_notify (a clean end of its stream), its FIN, or 3 s.
    let linger = Instant::now() + Duration::from_secs(3);
    while Instant::now() < linger && !stop.load(Ordering::SeqCst) {
        match s.read(&mut chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(_) => break,
        }
    }
}

#[test]
fn http10_over_tls_answers_a_lingering_servers_close_notify_and_keeps_its_rate() {
    let ca = TestCa::new("flint test CA");
    let server_config = ca.leaf().server_config();
    let server = Server::start(move |tcp, stop| {
        let conn = rustls::ServerConnection::new(server_config.clone()).unwrap();
        serve_http10_lingering(rustls::StreamOwned::new(conn, tcp), stop);
    });
    let target = Target::https(server.addr, "localhost");
    // Ten pages a Webchild, one after the other: waiting out the server's 3 s linger after
    // each would take 30 s.
    let cfg = config(target, trusting(&ca), HttpMode::Http10, 20);
    let r = run(&cfg);
    let s = &r.stats;
    assert_eq!(s.errors.total(), 0, "{:?}", s.errors);
    assert_eq!(s.requests, 20);
    assert!(
        r.duration < Duration::from_secs(10),
        "{:?} for 20 pages: the close waits for the linger",
        r.duration
    );
}
