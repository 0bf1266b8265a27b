//! Client against server over real UDP sockets on 127.0.0.1: bytes checked, a request body,
//! many concurrent streams, resets both ways, the idle timeout, a certificate refused.

mod common;

use common::memory::Certs;
use common::udp::{get, pattern, Driver, UdpServer};
use http3::{ClientConfig, ClientEvent, Closed, Limits, Trust, H3_REQUEST_CANCELLED};
use std::collections::HashMap;
use std::time::Duration;

const BOUND: Duration = Duration::from_secs(20);

/// Per stream: status, body bytes that matched the pattern, body length, finished.
#[derive(Debug, Default, Clone)]
struct Got {
    status: u16,
    good: usize,
    len: usize,
    body: Vec<u8>,
    finished: bool,
    reset: Option<u64>,
}

/// Turns, filing each event under its stream, until `done`.
fn collect(
    d: &mut Driver,
    got: &mut HashMap<u64, Got>,
    mut done: impl FnMut(&HashMap<u64, Got>) -> bool,
) {
    let mut buf = vec![0u8; 65536];
    d.until(BOUND, |d| {
        for ev in d.turn() {
            match ev {
                ClientEvent::Response { stream, status, .. } => {
                    got.entry(stream).or_default().status = status
                }
                ClientEvent::Data { stream } => loop {
                    let n = d.client.recv_body(stream, &mut buf).unwrap();
                    if n == 0 {
                        break;
                    }
                    let g = got.entry(stream).or_default();
                    for &b in &buf[..n] {
                        if b == pattern(g.len) {
                            g.good += 1;
                        }
                        g.len += 1;
                    }
                    if g.body.len() < 1024 {
                        g.body.extend_from_slice(&buf[..n.min(1024)]);
                    }
                },
                ClientEvent::Finished { stream } => got.entry(stream).or_default().finished = true,
                ClientEvent::Reset { stream, code } => {
                    got.entry(stream).or_default().reset = Some(code)
                }
                _ => {}
            }
        }
        done(got)
    });
}

fn setup(limits: &Limits) -> (Certs, UdpServer, ClientConfig) {
    let certs = Certs::new();
    let server = UdpServer::start(certs.server(limits));
    let client = certs.client(limits);
    (certs, server, client)
}

#[test]
fn a_get_is_answered_with_the_right_bytes() {
    let (_certs, server, mut config) = setup(&Limits::default());
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
    assert!(d.client.handshake_time().is_some());
    let stream = d.client.send_request(&get("/bytes/100000"), true).unwrap();
    let mut got = HashMap::new();
    collect(&mut d, &mut got, |g| {
        g.get(&stream).is_some_and(|s| s.finished)
    });
    let g = &got[&stream];
    assert_eq!((g.status, g.len, g.good), (200, 100_000, 100_000));
    let stats = d.client.stats();
    assert!(
        stats.packets_received > 0 && stats.bytes_received > 100_000,
        "{stats:?}"
    );
    assert_eq!(server.log.lock().unwrap().requests, 1);
}

#[test]
fn a_request_body_reaches_the_server_through_flow_control() {
    // A 3 MiB body through 1 MiB stream windows: the client's send_body takes what the
    // window allows and the rest once the server has read and opened it.
    let (_certs, server, mut config) = setup(&Limits::default());
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    let fields = [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/count"),
    ];
    let stream = d.client.send_request(&fields, false).unwrap();
    let body: Vec<u8> = (0..3 << 20).map(|i| (i % 7) as u8).collect();
    let mut sent = 0;
    let mut got = HashMap::new();
    let mut blocked = 0u64;
    collect(&mut d, &mut got, |_| true);
    while sent < body.len() {
        let n = d.client.send_body(stream, &body[sent..], true).unwrap();
        if n < body.len() - sent {
            blocked += 1;
        }
        sent += n;
        collect(&mut d, &mut got, |_| true);
    }
    collect(&mut d, &mut got, |g| {
        g.get(&stream).is_some_and(|s| s.finished)
    });
    let sum: u64 = body.iter().map(|&b| u64::from(b)).sum();
    let g = &got[&stream];
    assert_eq!(g.status, 200);
    assert_eq!(
        String::from_utf8_lossy(&g.body),
        format!("{} {sum}", body.len())
    );
    assert!(
        blocked > 0,
        "the body never waited for the window: flow control untested"
    );
}

#[test]
fn a_hundred_concurrent_streams_each_get_their_bytes() {
    let (_certs, server, mut config) = setup(&Limits::default());
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    assert_eq!(d.client.streams_left(), 100);
    // Sizes differ so that a body given to the wrong stream shows; the largest passes the
    // 1 MiB stream window, so the server's send_body waits for Writable.
    let mut want = HashMap::new();
    for i in 0..100u64 {
        let len = if i == 0 {
            1_500_000
        } else {
            1000 + i as usize * 97
        };
        let s = d
            .client
            .send_request(&get(&format!("/bytes/{len}")), true)
            .unwrap();
        want.insert(s, len);
    }
    assert_eq!(d.client.streams_left(), 0);
    assert!(matches!(
        d.client.send_request(&get("/bytes/1"), true),
        Err(http3::Error::NoStream)
    ));
    let mut got = HashMap::new();
    collect(&mut d, &mut got, |g| {
        g.values().filter(|s| s.finished).count() == 100
    });
    for (s, len) in want {
        let g = &got[&s];
        assert_eq!((g.status, g.len, g.good), (200, len, len), "stream {s}");
    }
    assert_eq!(server.log.lock().unwrap().requests, 100);
}

#[test]
fn streams_are_reset_both_ways_with_their_codes() {
    let (_certs, server, mut config) = setup(&Limits::default());
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    // The server resets one (H3_REQUEST_REJECTED)...
    let rejected = d.client.send_request(&get("/reset"), true).unwrap();
    let mut got = HashMap::new();
    collect(&mut d, &mut got, |g| {
        g.get(&rejected).is_some_and(|s| s.reset.is_some())
    });
    assert_eq!(got[&rejected].reset, Some(0x10b));
    // ... and the client cancels a request whose body is still coming.
    let fields = [
        (&b":method"[..], &b"POST"[..]),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/count"),
    ];
    let cancelled = d.client.send_request(&fields, false).unwrap();
    d.client.send_body(cancelled, b"some", false).unwrap();
    // Reset once the server has the request (a reset that overtakes the head is one the
    // server never hears the path of).
    d.until(BOUND, |d| {
        d.turn();
        server.log.lock().unwrap().requests == 2
    });
    d.client.reset(cancelled, H3_REQUEST_CANCELLED).unwrap();
    d.until(BOUND, |d| {
        d.turn();
        !server.log.lock().unwrap().resets.is_empty()
    });
    assert_eq!(
        server.log.lock().unwrap().resets,
        vec![("/count".to_string(), H3_REQUEST_CANCELLED)]
    );
    // The connection goes on.
    let after = d.client.send_request(&get("/bytes/10"), true).unwrap();
    collect(&mut d, &mut got, |g| {
        g.get(&after).is_some_and(|s| s.finished)
    });
    assert_eq!(got[&after].len, 10);
}

#[test]
fn an_idle_connection_times_out_on_both_sides() {
    let limits = Limits {
        idle_timeout: Duration::from_millis(300),
        ..Limits::default()
    };
    let (_certs, server, mut config) = setup(&limits);
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    d.ready();
    let s = d.client.send_request(&get("/bytes/10"), true).unwrap();
    let mut got = HashMap::new();
    collect(&mut d, &mut got, |g| g.get(&s).is_some_and(|s| s.finished));
    d.until(BOUND, |d| {
        d.turn();
        d.client.is_closed()
    });
    assert_eq!(d.client.closed(), Some(Closed::IdleTimeout));
    d.until(BOUND, |d| {
        d.turn();
        !server.log.lock().unwrap().closed.is_empty()
    });
    assert_eq!(server.log.lock().unwrap().closed, vec![Closed::IdleTimeout]);
}

/// Turns until the connection ends (the handshake must fail); its reason.
fn refused(d: &mut Driver) -> Closed {
    d.until(BOUND, |d| {
        d.turn();
        d.client.is_closed()
    });
    assert!(!d.client.is_ready());
    d.client.closed().unwrap()
}

#[test]
fn a_certificate_from_an_unknown_ca_is_refused_with_its_reason() {
    let (_certs, server, _) = setup(&Limits::default());
    let other = test_support::certs::TestCa::new("another CA");
    let trust = Trust {
        cacert: Some(other.pem.clone()),
        insecure: false,
    };
    let mut config = ClientConfig::new(&trust, &Limits::default()).unwrap();
    let mut d = Driver::connect(&mut config, "localhost", server.addr);
    let why = refused(&mut d);
    assert_eq!(
        why,
        Closed::Handshake {
            alert: 48,
            by_peer: false
        },
        "{why}"
    );
    assert!(why.to_string().contains("unknown_ca"), "{why}");
    // The server hears the alert as the handshake's failure.
    d.until(BOUND, |d| {
        d.turn();
        !server.log.lock().unwrap().closed.is_empty()
    });
    let closed = server.log.lock().unwrap().closed.clone();
    assert!(
        matches!(
            closed[..],
            [Closed::Handshake {
                alert: 48,
                by_peer: true
            }]
        ),
        "{closed:?}"
    );
}

#[test]
fn a_certificate_for_another_name_is_refused() {
    let (_certs, server, mut config) = setup(&Limits::default());
    let mut d = Driver::connect(&mut config, "example.com", server.addr);
    let why = refused(&mut d);
    assert_eq!(
        why,
        Closed::Handshake {
            alert: 42,
            by_peer: false
        },
        "{why}"
    );
}

#[test]
fn insecure_skips_the_check() {
    let (_certs, server, _) = setup(&Limits::default());
    let trust = Trust {
        cacert: None,
        insecure: true,
    };
    let mut config = ClientConfig::new(&trust, &Limits::default()).unwrap();
    let mut d = Driver::connect(&mut config, "example.com", server.addr);
    d.ready();
    assert!(d.client.is_ready(), "{:?}", d.client.closed());
}
