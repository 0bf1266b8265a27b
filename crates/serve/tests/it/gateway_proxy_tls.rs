//! The reverse proxy to `https://` upstreams: flint serve itself over TLS, and a scripted
//! upstream behind rustls, each with a certificate made at test time, the proxy trusting its
//! CA through the mount's `cacert`.
//! Requests and responses are checked byte for byte, the upstream's connections counted by its
//! accepts, and a certificate the proxy must refuse (an unknown issuer, another host name)
//! answers 502 at once, counted as a TLS failure, without reaching the upstream's handler.

use std::io::{BufReader, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use crate::proxy_support::*;
use test_support::certs::TestCa;

/// The proxy in front of `up`, reached by `host`, trusting `cacert` (or only the system).
fn proxy_to(up: &Upstream, host: &str, cacert: Option<&std::path::Path>) -> TestServer {
    let extra = match cacert {
        Some(path) => format!("cacert = {:?}", path.to_str().unwrap()),
        None => String::new(),
    };
    let m = mount("/api/", &[up.https_url(host)], &extra);
    TestServer::start(|c| c.proxy.push(m))
}

/// Answers each request with its own method, target and body in a body of its length.
fn echo(req: &Req) -> Vec<Step> {
    let line = req.head.lines().next().unwrap_or_default();
    let mut body = format!("{line}\n").into_bytes();
    body.extend_from_slice(&req.body);
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    vec![Step::Write(out)]
}

#[test]
fn get_and_post_go_byte_exact_over_one_kept_tls_connection() {
    let ca = TestCa::new("proxy test CA");
    let up = Upstream::start_tls(ca.leaf().server_config(), echo);
    let srv = proxy_to(&up, "127.0.0.1", Some(&ca.pem));
    // A body of every byte value, larger than a TLS record and the exchange's body chunk.
    let post: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    const ROUNDS: usize = 3;
    for round in 0..ROUNDS {
        s.write_all(format!("GET /api/get?{round} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
            .unwrap();
        let r = read_response(&mut rd, false).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(
            r.body,
            format!("GET /api/get?{round} HTTP/1.1\n").as_bytes()
        );
        let head = format!(
            "POST /api/post HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
            post.len()
        );
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(&post).unwrap();
        let r = read_response(&mut rd, false).unwrap();
        assert_eq!(r.status, 200);
        let mut want = b"POST /api/post HTTP/1.1\n".to_vec();
        want.extend_from_slice(&post);
        assert!(r.body == want, "the POST's body came back changed");
    }
    let requests = up.requests();
    assert_eq!(requests.len(), 2 * ROUNDS);
    assert!(requests
        .iter()
        .filter(|r| r.head.starts_with("POST"))
        .all(|r| r.body == post));
    let st = srv.stop();
    assert_eq!(st.proxy_requests, 2 * ROUNDS as u64);
    assert_eq!(st.proxy_tls_failures, 0);
    // Every request after the first went on the kept connection.
    let accepted = up.accepted.load(Ordering::SeqCst);
    assert_eq!((accepted, st.proxy_connects), (1, 1));
}

#[test]
fn flint_serve_over_tls_as_upstream_answers_files_on_one_kept_connection() {
    let ca = TestCa::new("proxy test CA");
    let (cert, key) = ca.leaf().write_pem(ca.dir());
    let upstream = TestServer::start(|c| {
        c.tls_cert = Some(cert);
        c.tls_key = Some(key);
    });
    std::fs::create_dir(upstream.root.path().join("api")).unwrap();
    let big = content("big", 300 * 1024);
    std::fs::write(upstream.root.path().join("api/big.bin"), &big).unwrap();
    let extra = format!("cacert = {:?}", ca.pem.to_str().unwrap());
    // By address (`localhost` may resolve to ::1, where nothing listens): the certificate is
    // checked for 127.0.0.1, which the leaf carries.
    let m = mount(
        "/api/",
        &[format!("https://127.0.0.1:{}", upstream.addr.port())],
        &extra,
    );
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    const N: usize = 4;
    for _ in 0..N {
        s.write_all(b"GET /api/big.bin HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = read_response(&mut rd, false).unwrap();
        assert_eq!(r.status, 200);
        assert!(r.body == big, "the file came back changed");
    }
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (N as u64, 1));
    let up = upstream.stop();
    assert_eq!((up.requests, up.accepted), (N as u64, 1));
}

/// A request the proxy must refuse to send: 502 at once, counted as a TLS failure, and the
/// upstream's handler never sees it.
fn refused(up: &Upstream, srv: TestServer) {
    let r = exchange(srv.addr, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_tls_failures), (1, 1));
    assert_eq!(st.proxy_refused + st.proxy_resets + st.proxy_timeouts, 0);
    assert!(up.requests().is_empty());
}

#[test]
fn an_upstream_certificate_of_an_untrusted_issuer_answers_502() {
    let ca = TestCa::new("proxy test CA");
    let other = TestCa::new("another CA");
    let up = Upstream::start_tls(ca.leaf().server_config(), echo);
    // The mount's own CA file, another CA's: a machine with no system roots runs it too.
    refused(&up, proxy_to(&up, "127.0.0.1", Some(&other.pem)));
}

#[test]
fn an_upstream_certificate_for_another_host_name_answers_502() {
    let ca = TestCa::new("proxy test CA");
    let leaf = ca.leaf_with(
        &["app.test"],
        test_support::certs::KeyKind::EcdsaP256,
        false,
    );
    let up = Upstream::start_tls(leaf.server_config(), echo);
    refused(&up, proxy_to(&up, "127.0.0.1", Some(&ca.pem)));
}

#[test]
fn a_cacert_that_cannot_be_read_stops_the_start_in_one_line() {
    let up = Upstream::start(echo);
    let mut m = mount("/api/", &[up.https_url("127.0.0.1")], "");
    m.cacert = Some("/nonexistent/ca.pem".into());
    let c = serve::Config {
        proxy: vec![m],
        ..Default::default()
    };
    let line = c.validate().unwrap_err().to_string();
    assert!(line.starts_with("`proxy.cacert`"), "{line}");
    assert!(line.contains("/nonexistent/ca.pem"), "{line}");
    // In the server's terms: bench's flags are no remedy here.
    assert!(!line.contains("--cacert"), "{line}");
    assert!(!line.contains('\n'), "{line}");
}

#[test]
fn an_upstream_silent_in_the_handshake_answers_504_at_the_connect_timeout() {
    // Connections complete in the listen backlog; nothing ever answers the ClientHello.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port();
    let m = mount(
        "/api/",
        &[format!("https://127.0.0.1:{port}")],
        "connect_timeout_ms = 300",
    );
    let srv = TestServer::start(|c| c.proxy.push(m));
    let start = std::time::Instant::now();
    let r = exchange(srv.addr, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n");
    let took = start.elapsed();
    assert_eq!(r.status, 504);
    // The connect timeout's, not the first byte's (60 s): a handshake is part of connecting.
    assert!(
        took >= Duration::from_millis(300) && took < Duration::from_secs(5),
        "504 after {took:?}"
    );
    let st = srv.stop();
    assert_eq!((st.proxy_timeouts, st.proxy_tls_failures), (1, 0));
}

#[test]
fn an_answer_sent_before_the_body_was_read_reaches_the_client_over_tls() {
    // An upstream that reads the head only, answers 413 and closes with the body unread (the
    // close resets the connection). Its small receive buffer holds the proxy back mid-body, so
    // when the answer and the reset arrive rustls holds body records the socket did not take:
    // their failed send ends the request, and the answer waiting in the socket is still read.
    let ca = TestCa::new("proxy test CA");
    let tls = ca.leaf().server_config();
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let any: std::net::SocketAddr = "127.0.0.1:0".parse().unwrap();
    sock.bind(&any.into()).unwrap();
    sock.listen(8).unwrap();
    let listener: std::net::TcpListener = sock.into();
    let addr = listener.local_addr().unwrap();
    let upstream = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if std::time::Instant::now() < until => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => panic!("no connection from the proxy within 10 s: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let conn = rustls::ServerConnection::new(tls).unwrap();
        let mut s = rustls::StreamOwned::new(conn, s);
        let mut head = Vec::new();
        let mut buf = [0u8; 4096];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => head.extend_from_slice(&buf[..n]),
            }
        }
        // The proxy fills both buffers and waits; then the answer and the close (no
        // close_notify) with body bytes unread: a reset.
        std::thread::sleep(Duration::from_millis(500));
        let _ = s.write_all(
            b"HTTP/1.1 413 Content Too Large\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntoo large",
        );
    });
    let extra = format!("cacert = {:?}", ca.pem.to_str().unwrap());
    let m = mount(
        "/api",
        &[format!("https://127.0.0.1:{}", addr.port())],
        &extra,
    );
    let srv = TestServer::start(|c| {
        c.max_body_bytes = 64 << 20;
        c.proxy.push(m)
    });
    let mut s = connect(srv.addr);
    let mut writer = s.try_clone().unwrap();
    let client = std::thread::spawn(move || {
        let _ = writer.write_all(
            b"POST /api/up HTTP/1.1\r\nHost: t\r\nContent-Length: 32000000\r\nConnection: close\r\n\r\n",
        );
        let chunk = vec![b'x'; 100_000];
        for _ in 0..(32_000_000 / chunk.len()) {
            if writer.write_all(&chunk).is_err() {
                return;
            }
        }
    });
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 413"),
        "the upstream's answer: {text}"
    );
    assert!(text.ends_with("\r\n\r\ntoo large"), "with its body: {text}");
    drop(s);
    upstream.join().unwrap();
    client.join().unwrap();
    let st = srv.stop();
    assert_eq!(st.proxy_resets, 0, "the response was whole");
}

#[test]
fn bytes_after_a_response_over_tls_never_reach_the_next_request() {
    // Records of 4 KiB: the response fills the first exactly, 4 KiB the proxy never asked for
    // follow in the next, both in one write. rustls takes the socket's bytes 4 KiB at a time,
    // so its first plaintext is the first record alone: a read that stopped there would end
    // the response with nothing left over and pool the connection, the extra bytes the next
    // request's answer.
    let ca = TestCa::new("proxy test CA");
    let mut tls = (*ca.leaf().server_config()).clone();
    const RECORD: usize = 4096;
    tls.max_fragment_size = Some(RECORD + 5);
    let up = Upstream::start_tls(std::sync::Arc::new(tls), |r| {
        if r.head.starts_with("GET /api/big ") {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: ";
            let mut len = RECORD - head.len() - "\r\n\r\n".len();
            len -= len.to_string().len();
            let mut bytes = format!("{head}{len}\r\n\r\n").into_bytes();
            bytes.resize(RECORD, b'b');
            let stolen = "HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n";
            bytes.extend_from_slice(stolen.as_bytes());
            bytes.resize(RECORD + stolen.len() + 4000, b's');
            vec![Step::Write(bytes)]
        } else {
            ok("fresh")
        }
    });
    let extra = format!("pool = 1\ncacert = {:?}", ca.pem.to_str().unwrap());
    let m = mount("/api/", &[up.https_url("127.0.0.1")], &extra);
    let srv = TestServer::start(|c| c.proxy.push(m));
    const ROUNDS: u64 = 10;
    for _ in 0..ROUNDS {
        let r = exchange(srv.addr, "GET /api/big HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.status, 200);
        assert!(r.body.iter().all(|&b| b == b'b'), "the first response only");
        let r = exchange(srv.addr, "GET /api/small HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            (r.status, String::from_utf8_lossy(&r.body).into_owned()),
            (200, "fresh".to_string()),
            "the next request gets its own response"
        );
    }
    let st = srv.stop();
    assert_eq!(
        st.proxy_overlong, ROUNDS,
        "the extra bytes counted each time"
    );
}

#[test]
fn a_body_to_the_close_cut_by_a_close_without_close_notify_fails() {
    // A FIN alone (no close_notify) may be anyone's on the path: a body that runs to the close
    // is not known whole then. One with a length is, by its length.
    let ca = TestCa::new("proxy test CA");
    let up = Upstream::start_tls(ca.leaf().server_config(), |r| {
        let head = if r.head.starts_with("GET /api/sized ") {
            "HTTP/1.1 200 OK\r\nContent-Length: 10\r\nConnection: close\r\n\r\n"
        } else {
            "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n"
        };
        vec![reply(&format!("{head}0123456789")), Step::Close]
    });
    let srv = proxy_to(&up, "127.0.0.1", Some(&ca.pem));
    let r = exchange(srv.addr, "GET /api/sized HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"0123456789"[..]));
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/to-close HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let st = srv.stop();
    assert_eq!(st.proxy_requests, 2);
    assert_eq!(
        st.proxy_resets, 1,
        "the body to the close counted cut short"
    );
    assert_eq!(up.requests().len(), 2);
}

#[test]
fn a_connection_the_upstream_closed_with_close_notify_is_not_used_again() {
    // The first connection's response comes with close_notify in the same flight, its TCP
    // left open: it carries nothing more, and the next request (a POST, never sent twice)
    // goes on a new connection.
    let ca = TestCa::new("proxy test CA");
    let tls = ca.leaf().server_config();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let upstream = std::thread::spawn(move || {
        listener.set_nonblocking(true).unwrap();
        let until = std::time::Instant::now() + Duration::from_secs(10);
        let mut held = Vec::new();
        for conn in 0..2 {
            let s = loop {
                match listener.accept() {
                    Ok((s, _)) => break s,
                    Err(_) if std::time::Instant::now() < until => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    Err(_) => return held.len(),
                }
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let c = rustls::ServerConnection::new(tls.clone()).unwrap();
            let mut s = rustls::StreamOwned::new(c, s);
            let mut got = Vec::new();
            let mut buf = [0u8; 4096];
            // A GET, then a POST of two bytes.
            let whole = |got: &[u8]| match got.windows(4).position(|w| w == b"\r\n\r\n") {
                Some(i) => got.starts_with(b"GET") || got.len() >= i + 4 + 2,
                None => false,
            };
            while !whole(&got) {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => return held.len(),
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            let body = format!("conn {conn}");
            let answer = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
                body.len()
            );
            s.conn.writer().write_all(answer.as_bytes()).unwrap();
            if conn == 0 {
                s.conn.send_close_notify();
            }
            while s.conn.wants_write() {
                s.conn.write_tls(&mut s.sock).unwrap();
            }
            held.push(s);
        }
        held.len()
    });
    let extra = format!("cacert = {:?}", ca.pem.to_str().unwrap());
    let m = mount(
        "/api/",
        &[format!("https://127.0.0.1:{}", addr.port())],
        &extra,
    );
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /api/a HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_response(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"conn 0"[..]));
    s.write_all(b"POST /api/b HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    let r = read_response(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"conn 1"[..]));
    drop((s, rd));
    let st = srv.stop();
    assert_eq!(upstream.join().unwrap(), 2, "two connections served");
    assert_eq!((st.proxy_connects, st.proxy_resets), (2, 0));
}

#[test]
fn an_upstream_closing_in_the_handshake_is_a_tls_failure_not_retried() {
    // It takes the ClientHello and closes: the connection was made (counted in proxy_connects)
    // and its handshake failed, which another connection would not mend.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let upstream = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let until = std::time::Instant::now() + Duration::from_secs(10);
            let mut accepted = 0;
            while !stop.load(Ordering::SeqCst) && std::time::Instant::now() < until {
                match listener.accept() {
                    Ok((mut s, _)) => {
                        accepted += 1;
                        s.set_nonblocking(false).unwrap();
                        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                        let _ = s.read(&mut [0u8; 4096]);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
            accepted
        })
    };
    let m = mount("/api/", &[format!("https://127.0.0.1:{port}")], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let r = exchange(srv.addr, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let st = srv.stop();
    stop.store(true, Ordering::SeqCst);
    assert_eq!(upstream.join().unwrap(), 1, "one connection: not retried");
    assert_eq!(
        (st.proxy_tls_failures, st.proxy_connects, st.proxy_resets),
        (1, 1, 0)
    );
}
