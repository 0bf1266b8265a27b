//! HTTP/3 by default: a TLS server that did not ask for it serves it (and advertises it); a
//! UDP port another socket holds is a warning and TCP alone, with nothing advertised, unless
//! HTTP/3 was required (then the start fails; required with a certificate and no key, or the
//! reverse, the refusal names what is missing); turned off, no UDP socket answers and nothing
//! is advertised. A request body that stalls over HTTP/3 is ended by `body_timeout_ms`, as
//! over HTTP/1.1 and HTTP/2; one that comes slowly within it outlives `send_timeout_ms`.

use crate::tls_support;

use std::io::{BufReader, Write};
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::{content, get, read_response, Response, TestServer};
use crate::h3_support::{Certs, Driver};
use http3::{Closed, H3_REQUEST_INCOMPLETE};
use serve::ServeError;

/// An HTTP/1.1 GET of `path` over TLS (the certificate is the h3 test CA's leaf).
fn get_over_tls(certs: &Certs, addr: SocketAddr, path: &str) -> Response {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(certs.ca.der()).unwrap();
    let provider = std::sync::Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let mut t = BufReader::new(tls_support::tls_connect(addr, &std::sync::Arc::new(config)));
    t.get_mut().write_all(get(path).as_bytes()).unwrap();
    read_response(&mut t, false).expect("a response over TLS")
}

#[test]
fn a_tls_server_that_did_not_ask_serves_http3_and_advertises_it() {
    let certs = Certs::new();
    let srv = certs.serve(|c| c.http3 = None);
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let got = d.fetch(&[("GET", "/a.txt"), ("GET", "/10k.bin")]);
    assert_eq!((got[0].status, &got[0].body[..]), (200, &b"hello"[..]));
    assert!(got[1].status == 200 && got[1].body == content("10k.bin", 10 * 1024));
    let r = get_over_tls(&certs, srv.addr, "/a.txt");
    let want = format!("h3=\":{}\"; ma=86400", srv.addr.port());
    assert_eq!((r.status, r.header("alt-svc")), (200, Some(&*want)));
    // Closed first: a shutdown lets an open connection's responses finish.
    d.client.close(http3::H3_NO_ERROR, b"");
    d.turn();
    let st = srv.stop();
    assert_eq!((st.http3_connections, st.http3_requests), (1, 2), "{st:?}");
}

/// A UDP socket of this test on a port whose TCP twin was free, and a one-thread TLS server
/// asked (`http3`) to listen on that address: its warning, or `bind`'s error. A port whose
/// TCP twin another program took meanwhile is passed over (bounded).
fn beside_a_taken_udp_port(
    certs: &Certs,
    http3: Option<bool>,
) -> (UdpSocket, Result<TestServer, ServeError>, Option<String>) {
    for _ in 0..32 {
        let taken = UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = taken.local_addr().unwrap();
        let mut warning = None;
        let started = TestServer::try_start(
            |c| {
                c.listen = addr;
                c.tls_cert = Some(certs.cert.clone());
                c.tls_key = Some(certs.key.clone());
                c.http3 = http3;
            },
            |s| {
                assert!(!s.http3(), "the UDP port is the test's");
                warning = s.http3_warning().map(|w| {
                    let ServeError::BindUdp { addr: at, source } = w else {
                        panic!("not a UDP bind: {w}");
                    };
                    assert_eq!((*at, source.kind()), (addr, std::io::ErrorKind::AddrInUse));
                    w.to_string()
                });
            },
        );
        match started {
            Err(ServeError::Bind { source, .. })
                if source.kind() == std::io::ErrorKind::AddrInUse => {}
            started => return (taken, started, warning),
        }
    }
    panic!("no UDP port of 32 had its TCP twin free");
}

#[test]
fn a_udp_port_taken_is_a_warning_and_tcp_serves_without_alt_svc() {
    let certs = Certs::new();
    let (taken, srv, warning) = beside_a_taken_udp_port(&certs, None);
    let srv = srv.expect("TCP serves");
    let addr = taken.local_addr().unwrap();
    assert_eq!(srv.addr, addr);
    assert_eq!(
        warning.as_deref(),
        Some(&*format!("cannot listen on UDP {addr} for HTTP/3"))
    );
    let r = get_over_tls(&certs, srv.addr, "/a.txt");
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    assert_eq!(
        r.header("alt-svc"),
        None,
        "no port nobody of ours listens on"
    );
    let missing = get_over_tls(&certs, srv.addr, "/missing");
    assert_eq!((missing.status, missing.header("alt-svc")), (404, None));
    assert_eq!(srv.stop().http3_connections, 0);
}

#[test]
fn http3_required_with_its_udp_port_taken_fails_at_start() {
    let certs = Certs::new();
    let (taken, started, _) = beside_a_taken_udp_port(&certs, Some(true));
    let addr = taken.local_addr().unwrap();
    match started {
        Err(e @ ServeError::BindUdp { .. }) => {
            assert_eq!(
                e.to_string(),
                format!("cannot listen on UDP {addr} for HTTP/3")
            );
            let source = std::error::Error::source(&e).expect("its cause");
            assert!(
                source.to_string().contains("Address already in use"),
                "{source}"
            );
        }
        Err(e) => panic!("another error: {e}"),
        Ok(_) => panic!("started without the HTTP/3 it was asked for"),
    }
}

#[test]
fn turned_off_no_udp_socket_answers_and_nothing_is_advertised() {
    let certs = Certs::new();
    let mut on = None;
    let srv = TestServer::try_start(
        |c| {
            c.tls_cert = Some(certs.cert.clone());
            c.tls_key = Some(certs.key.clone());
            c.http3 = Some(false);
        },
        |s| on = Some((s.http3(), s.http3_warning().is_some())),
    )
    .expect("bind");
    assert_eq!(on, Some((false, false)), "no HTTP/3, and no warning for it");
    let r = get_over_tls(&certs, srv.addr, "/a.txt");
    assert_eq!((r.status, r.header("alt-svc")), (200, None));
    // A QUIC client at the port number hears nothing: it gives up at its idle timeout.
    let limits = http3::Limits {
        idle_timeout: Duration::from_secs(1),
        ..http3::Limits::default()
    };
    let d = Driver::try_connect(&mut certs.client_with(&limits), srv.addr);
    assert_eq!(d.client.closed(), Some(Closed::IdleTimeout));
    assert_eq!(srv.stop().h3_datagrams_received, 0);
}

/// Opens a GET whose body never ends: its head, `sent` bytes of body, then nothing.
fn stalled_body(d: &mut Driver, path: &str, sent: usize) -> u64 {
    let list: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", path.as_bytes()),
    ];
    let stream = d.client.send_request(&list, false).expect("send_request");
    let body = vec![b'x'; sent];
    assert_eq!(d.client.send_body(stream, &body, false).unwrap(), sent);
    stream
}

#[test]
fn a_stalled_request_body_is_ended_by_the_body_deadline() {
    let certs = Certs::new();
    // The body's deadline alone can end it: the others are far off.
    let srv = certs.serve(|c| {
        c.http3 = None;
        c.body_timeout_ms = 300;
        c.body_min_rate = 0;
        c.send_timeout_ms = 600_000;
        c.keepalive_timeout_ms = 600_000;
        c.h3_idle_timeout_ms = 600_000;
    });
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    d.pings = true;
    // A small response goes out whole: the server then stops the body (STOP_SENDING), and
    // the client keeps its response.
    let small = stalled_body(&mut d, "/a.txt", 10);
    let got = d.wait(&[small]);
    assert_eq!((got[0].status, &got[0].body[..]), (200, &b"hello"[..]));
    d.until(|_| srv.stats().h3_body_timeouts == 1);
    d.until(|d| d.client.send_body(small, b"more", false).is_err());
    // A large response the client does not read is held back by flow control: the request
    // is cut with it (its stream reset both ways). The client reads again only once the
    // server has counted it, so the response cannot have gone whole first.
    d.reads = false;
    let large = stalled_body(&mut d, "/4m.bin", 10);
    d.until(|_| srv.stats().h3_body_timeouts == 2);
    d.reads = true;
    d.until(|d| d.got.get(&large).is_some_and(|g| g.reset.is_some()));
    assert_eq!(d.got[&large].reset, Some(H3_REQUEST_INCOMPLETE));
    assert!(d.got[&large].body.len() < 4 << 20, "cut, not sent whole");
    // The connection goes on.
    let after = d.fetch(&[("GET", "/a.txt")]);
    assert_eq!((after[0].status, &after[0].body[..]), (200, &b"hello"[..]));
    d.client.close(http3::H3_NO_ERROR, b"");
    d.turn();
    let st = srv.stop();
    assert_eq!(
        (
            st.h3_body_timeouts,
            st.h3_send_timeouts,
            st.http3_connections
        ),
        (2, 0, 1),
        "{st:?}"
    );
}

#[test]
fn a_slow_upload_within_its_body_deadline_is_not_cut_by_the_send_timeout() {
    let certs = Certs::new();
    // The send timeout is a fraction of the upload; the body's deadline is far off and its
    // rate kept easily. Two seconds: a response the client has read but not yet acknowledged
    // (a stalled test thread) has that long, and a ping's as long again, before it counts.
    let srv = certs.serve(|c| {
        c.http3 = None;
        c.send_timeout_ms = 2_000;
        c.body_timeout_ms = 20_000;
        c.body_min_rate = 1;
        c.keepalive_timeout_ms = 600_000;
        c.h3_idle_timeout_ms = 600_000;
    });
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    d.pings = true;
    // A small file is answered whole at once, and acknowledged, while the body goes on.
    let stream = stalled_body(&mut d, "/a.txt", 10);
    let got = d.wait(&[stream]);
    assert_eq!((got[0].status, &got[0].body[..]), (200, &b"hello"[..]));
    let started = Instant::now();
    for i in 0..12 {
        let last = i == 11;
        assert_eq!(d.client.send_body(stream, b"0123456789", last).unwrap(), 10);
        let sent = Instant::now();
        while sent.elapsed() < Duration::from_millis(750) {
            d.turn();
        }
        assert_eq!(srv.stats().h3_send_timeouts, 0, "cut after chunk {i}");
    }
    // Four send timeouts and more.
    let upload = started.elapsed();
    assert!(upload >= Duration::from_millis(8_250), "{upload:?}");
    // The upload is what this test is about: its send timeouts are read here, before a fetch
    // whose own send clock a stalled test thread could run out.
    assert_eq!(srv.stats().h3_send_timeouts, 0, "cut by the upload's end");
    // The connection goes on.
    let after = d.fetch(&[("GET", "/a.txt")]);
    assert_eq!((after[0].status, &after[0].body[..]), (200, &b"hello"[..]));
    d.client.close(http3::H3_NO_ERROR, b"");
    d.turn();
    let st = srv.stop();
    assert_eq!(
        (st.h3_body_timeouts, st.http3_connections),
        (0, 1),
        "{st:?}"
    );
}

#[test]
fn requests_stopped_or_cancelled_with_their_head_leave_no_body_clock_behind() {
    let certs = Certs::new();
    let srv = certs.serve(|c| {
        c.http3 = None;
        c.body_timeout_ms = 200;
        c.body_min_rate = 0;
        c.send_timeout_ms = 600_000;
        c.keepalive_timeout_ms = 600_000;
        c.h3_idle_timeout_ms = 600_000;
    });
    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    d.pings = true;
    // Each head goes out with a STOP_SENDING in the same datagram, its body never ended: the
    // server's answer cannot be sent, so the server resets the stream, and that must end the
    // body's clock (no event of the client's ever will). Then as many cancelled both ways
    // (RESET_STREAM too), whose end is the client's.
    let list: Vec<(&[u8], &[u8])> = vec![
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"localhost"),
        (b":path", b"/a.txt"),
    ];
    for i in 0..20 {
        let stream = d.client.send_request(&list, false).expect("send_request");
        match i % 2 {
            0 => d.client.stop_sending(stream, 0x10c).expect("stop_sending"),
            _ => d.client.reset(stream, 0x10c).expect("reset"),
        }
        d.turn();
    }
    // Well past the body deadline (five times it), by the clock: a clock left behind expires
    // and is counted; on a slow machine the wait is only longer.
    let start = std::time::Instant::now();
    d.until(|_| start.elapsed() > Duration::from_millis(1000));
    let after = d.fetch(&[("GET", "/a.txt")]);
    assert_eq!((after[0].status, &after[0].body[..]), (200, &b"hello"[..]));
    d.client.close(http3::H3_NO_ERROR, b"");
    d.turn();
    let st = srv.stop();
    assert_eq!(st.h3_body_timeouts, 0, "{st:?}");
}

#[test]
fn half_of_tls_is_refused_whatever_http3_is_naming_the_missing_half() {
    let certs = Certs::new();
    let root = tempfile::tempdir().unwrap();
    let half = |cert: bool, http3: Option<bool>| serve::Config {
        root: root.path().to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 1,
        tls_cert: cert.then(|| certs.cert.clone()),
        tls_key: (!cert).then(|| certs.key.clone()),
        http3,
        ..serve::Config::default()
    };
    // One line, nothing bound, naming what is missing (not only that TLS is), whether HTTP/3
    // was asked for, left to the default, or turned off: a half is never a cleartext server.
    for http3 in [Some(true), None, Some(false)] {
        for (cert, set, names) in [
            (
                true,
                "`tls_cert` = ",
                "without `tls_key`: its private key is missing",
            ),
            (
                false,
                "`tls_key` = ",
                "without `tls_cert`: the certificate is missing",
            ),
        ] {
            let config = half(cert, http3);
            let e = config.validate().expect_err("refused by validation");
            assert_eq!(e.key, if cert { "tls_cert" } else { "tls_key" }, "{e}");
            let Err(e) = serve::Server::bind(config) else {
                panic!("{http3:?}: a half of TLS was served");
            };
            let line = e.to_string();
            assert!(line.starts_with(set), "{http3:?}: {line}");
            assert!(line.ends_with(names), "{http3:?}: {line}");
            assert_eq!(line.lines().count(), 1, "{line}");
        }
    }
}
