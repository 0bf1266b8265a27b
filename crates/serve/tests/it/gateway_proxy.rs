//! The reverse proxy in front of real and scripted upstreams: flint serve itself, and upstreams
//! written here that record what reached them and answer as each test says. Each response is
//! checked on the wire, what the upstream received byte for byte, and the counters.

use std::io::{BufReader, Read, Write};
use std::time::Duration;

use crate::cgi_support::*;
use crate::common::*;
use crate::proxy_support::*;

fn proxy_to(up: &Upstream, extra: &str) -> TestServer {
    let m = mount("/api/", &[up.url()], extra);
    TestServer::start(|c| c.proxy.push(m))
}

#[test]
fn flint_serve_as_upstream_answers_get_head_and_errors_through_one_pooled_connection() {
    let upstream = TestServer::start(|_| {});
    std::fs::create_dir(upstream.root.path().join("api")).unwrap();
    std::fs::write(upstream.root.path().join("api/x.txt"), b"from upstream").unwrap();
    let url = format!("http://{}", upstream.addr);
    let srv = TestServer::start(|c| c.proxy.push(format!("/api/={url}").parse().unwrap()));
    let r = ask(&srv, "GET /api/x.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"from upstream"[..]));
    assert_eq!(r.header("content-length"), Some("13"));
    assert!(r.header("etag").is_some(), "the upstream's fields pass");
    // HEAD: the length said, no body, the connection kept.
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"HEAD /api/x.txt HTTP/1.1\r\nHost: t\r\n\r\nGET /api/nope HTTP/1.1\r\nHost: t\r\n\r\nGET /a.txt HTTP/1.0\r\n\r\n")
        .unwrap();
    let head = read_reply(&mut rd, true).unwrap();
    assert_eq!(
        (head.status, head.header("content-length")),
        (200, Some("13"))
    );
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 404);
    // Outside the prefix: the proxy's own files.
    let local = read_reply(&mut rd, false).unwrap();
    assert_eq!((local.status, local.body.as_slice()), (200, &b"hello"[..]));
    // An HTTP/1.0 client.
    let r = ask(&srv, "GET /api/x.txt HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"from upstream"[..]));
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (4, 1));
    assert_eq!(upstream.stop().requests, 4);
}

#[test]
fn hop_by_hop_fields_are_removed_both_ways_and_the_forwarding_fields_set() {
    let up = Upstream::start(|_| {
        vec![reply(
            "HTTP/1.1 200 OK\r\nConnection: X-Internal\r\nX-Internal: secret\r\nKeep-Alive: timeout=5\r\nLocation: /moved\r\nContent-Length: 2\r\n\r\nok",
        )]
    });
    let srv = proxy_to(&up, "");
    let r = ask(
        &srv,
        "GET /api/a?b=%20c HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Drop\r\nX-Drop: 1\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\nUser-Agent: t\r\n\r\n",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    assert_eq!(r.header("x-internal"), None);
    assert_eq!(r.header("keep-alive"), None);
    assert_eq!(r.header("location"), Some("/moved"), "passed, not followed");
    let got = &up.requests()[0];
    assert!(
        got.head.starts_with("GET /api/a?b=%20c HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    assert_eq!(got.field("host"), Some("example.com"));
    assert_eq!(got.field("x-forwarded-for"), Some("127.0.0.1"));
    assert_eq!(got.field("x-forwarded-proto"), Some("http"));
    assert_eq!(got.field("x-forwarded-host"), Some("example.com"));
    assert_eq!(got.field("via"), Some("1.1 flint"));
    assert_eq!(got.field("user-agent"), Some("t"));
    for gone in ["connection", "x-drop", "te", "forwarded"] {
        assert_eq!(got.field(gone), None, "{gone} in {}", got.head);
    }
    assert_eq!(got.head.matches("X-Forwarded-For").count(), 1);
}

#[test]
fn request_bodies_go_with_their_length_whichever_way_the_client_sent_them() {
    let up = Upstream::start(|r| {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            r.body.len()
        )
        .into_bytes();
        out.extend_from_slice(&r.body);
        vec![Step::Write(out)]
    });
    let srv = proxy_to(&up, "");
    let body: Vec<u8> = (0..300_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    let head = format!(
        "POST /api/echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.len()), (200, body.len()));
    assert!(r.body == body);
    // Chunked from the client: read whole, sent with its length.
    let r = send_and_read(&s, &mut rd, chunked_post("/api/echo", b"hello chunks", 5));
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello chunks"[..]));
    // An empty body the client said: `Content-Length: 0` upstream.
    s.write_all(b"POST /api/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 200);
    let got = up.requests();
    assert_eq!(got[0].field("content-length"), Some("300000"));
    assert_eq!(got[1].field("content-length"), Some("12"));
    assert_eq!(got[1].field("transfer-encoding"), None);
    assert_eq!(got[2].field("content-length"), Some("0"));
    assert_eq!(up.accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

#[test]
fn chunked_and_close_delimited_upstream_bodies_are_framed_again_and_1xx_skipped() {
    let up = Upstream::start(|r| {
        match r.head.split(' ').nth(1).unwrap() {
        "/api/chunked" => vec![reply(
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-T\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
        )],
        "/api/close" => vec![reply("HTTP/1.1 200 OK\r\n\r\nuntil the close"), Step::Close],
        _ => vec![reply("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n")],
    }
    });
    let srv = proxy_to(&up, "");
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    s.write_all(b"GET /api/chunked HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!((r.status, r.body.as_slice()), (200, &b"hello world"[..]));
    assert_eq!(r.header("transfer-encoding"), Some("chunked"));
    assert_eq!(r.header("trailer"), None, "trailers are dropped");
    s.write_all(b"GET /api/close HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let r = read_reply(&mut rd, false).unwrap();
    assert_eq!(
        (r.status, r.body.as_slice()),
        (200, &b"until the close"[..])
    );
    // A protocol switch is refused: 502.
    s.write_all(b"GET /api/upgrade HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 502);
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_bad_responses), (3, 1));
}

#[test]
fn a_refused_address_is_skipped_and_the_request_retried_on_another() {
    let up = Upstream::start(|_| ok("alive"));
    let dead = format!("http://{}", dead_port());
    let m = mount("/api", &[dead.clone(), up.url()], "fail_timeout_ms = 60000");
    let srv = TestServer::start(|c| c.proxy.push(m));
    for _ in 0..4 {
        let r = ask(
            &srv,
            "POST /api/x HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\nx",
        );
        assert_eq!((r.status, r.body.as_slice()), (200, &b"alive"[..]));
    }
    let st = srv.stop();
    // Tried once, marked failed, then skipped; the one connection opened, to the live one,
    // pooled.
    assert_eq!((st.proxy_retries, st.proxy_connects), (1, 1));
    // With only the dead address: 502, counted as refused.
    let m = mount("/api", &[dead], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let r = ask(&srv, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let st = srv.stop();
    assert_eq!((st.proxy_refused, st.proxy_retries), (1, 0));
}

#[test]
fn a_silent_upstream_times_out_with_504_and_a_stall_or_crash_mid_body_cuts_the_response() {
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        "/api/silent" => vec![Step::Sleep(Duration::from_secs(4)), Step::Close],
        "/api/stall" => vec![
            reply("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nfive."),
            Step::Sleep(Duration::from_secs(4)),
            Step::Close,
        ],
        _ => vec![
            reply("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly ten.."),
            Step::Close,
        ],
    });
    let srv = proxy_to(&up, "first_byte_timeout_ms = 1000\nidle_timeout_ms = 1000");
    let r = ask(&srv, "GET /api/silent HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 504);
    // Silent mid-body past the idle timeout: the response cut, the connection closed.
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/stall HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(String::from_utf8_lossy(&got).ends_with("\r\n\r\nfive."));
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/crash HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(
        text.ends_with("only ten.."),
        "cut short, then closed: {text}"
    );
    let st = srv.stop();
    assert_eq!((st.proxy_timeouts, st.proxy_resets), (2, 1));
}

/// An absolute-form target (RFC 9112 3.2.2): its authority is the request's host, whatever
/// `Host` says, and the upstream gets the origin-form path, never the absolute URL.
#[test]
fn an_absolute_form_target_goes_on_as_its_path_with_its_host() {
    let up = Upstream::start(|_| ok("abs"));
    let srv = proxy_to(&up, "");
    let r = ask(
        &srv,
        "GET http://admin.internal/api/abs?x=1 HTTP/1.1\r\nHost: public.example\r\n\r\n",
    );
    assert_eq!((r.status, r.body.as_slice()), (200, &b"abs"[..]));
    // Outside the mount, the files answer its path; a bad authority is a 400.
    assert_eq!(
        ask(&srv, "GET HTTP://h/a.txt HTTP/1.1\r\nHost: h\r\n\r\n").status,
        200
    );
    let bad = "GET http://u@admin.internal/api/abs HTTP/1.1\r\nHost: public.example\r\n\r\n";
    assert_eq!(ask(&srv, bad).status, 400);
    srv.stop();
    let got = up.requests();
    assert_eq!(got.len(), 1);
    assert!(
        got[0].head.starts_with("GET /api/abs?x=1 HTTP/1.1\r\n"),
        "{}",
        got[0].head
    );
    assert_eq!(got[0].field("host"), Some("admin.internal"));
    assert_eq!(got[0].field("x-forwarded-host"), Some("admin.internal"));
    assert!(!got[0].head.contains("public.example"), "{}", got[0].head);
}

/// An upstream that sends `103 Early Hints` every 10 ms and never a final head: the 1xx heads
/// are skipped and do not move the deadline, so the request gets 504 at `first_byte_timeout_ms`
/// (the idle gap, far longer than 10 ms, would never come).
#[test]
fn endless_1xx_heads_time_out_at_the_first_byte_timeout() {
    let mut hints = Vec::new();
    for _ in 0..1000 {
        hints.push(reply("HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"));
        hints.push(Step::Sleep(Duration::from_millis(10)));
    }
    hints.push(Step::Close);
    let hints = std::sync::Mutex::new(Some(hints));
    let up = Upstream::start(move |_| hints.lock().unwrap().take().unwrap_or_default());
    let srv = proxy_to(&up, "first_byte_timeout_ms = 500\nidle_timeout_ms = 2000");
    let r = ask(&srv, "GET /api/hints HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 504);
    let st = srv.stop();
    assert_eq!((st.proxy_timeouts, st.proxy_resets), (1, 0));
}

/// An upstream that writes about 1 MiB of `103` heads at once, then a final head: the socket is
/// always readable, so the skipped heads count against `max_header_bytes` and the request gets
/// 502 (the upstream's bad response) instead of holding the thread in its read loop.
#[test]
fn a_flood_of_1xx_heads_past_max_header_bytes_answers_502() {
    let hint = "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n";
    let mut flood = hint.repeat((1 << 20) / hint.len());
    flood.push_str("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let up = Upstream::start(move |_| vec![reply(&flood)]);
    let srv = proxy_to(&up, "");
    let r = ask(&srv, "GET /api/flood HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(r.status, 502);
    let st = srv.stop();
    assert_eq!((st.proxy_bad_responses, st.proxy_timeouts), (1, 0));
}

#[test]
fn a_body_longer_than_its_length_never_reaches_another_request() {
    let up = Upstream::start(|_| {
        vec![reply(
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled",
        )]
    });
    let srv = proxy_to(&up, "");
    for _ in 0..2 {
        let r = ask(&srv, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    }
    // Each on its own connection: the first one's extra bytes closed it.
    assert_eq!(up.accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
    let st = srv.stop();
    assert_eq!(st.proxy_overlong, 2);
}

#[test]
fn a_pooled_connection_the_upstream_closed_is_retried_for_a_get_and_not_for_a_post() {
    // Each connection answers once, then closes when the next request arrives.
    let up = Upstream::start(|r| {
        if r.index == 0 {
            ok(&format!("conn {}", r.conn))
        } else {
            vec![Step::Close]
        }
    });
    let srv = proxy_to(&up, "");
    let mut s = connect(srv.addr);
    let mut rd = BufReader::new(s.try_clone().unwrap());
    for want in ["conn 0", "conn 1"] {
        s.write_all(b"GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        let r = read_reply(&mut rd, false).unwrap();
        assert_eq!((r.status, r.body.as_slice()), (200, want.as_bytes()));
    }
    s.write_all(b"POST /api/x HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi")
        .unwrap();
    assert_eq!(read_reply(&mut rd, false).unwrap().status, 502);
    let st = srv.stop();
    assert_eq!(
        (st.proxy_connects, st.proxy_retries, st.proxy_resets),
        (2, 1, 1)
    );
}

#[test]
fn a_flood_of_keep_alive_requests_is_answered_with_the_pool_bounded() {
    let up = Upstream::start(|r| ok(&format!("{}", r.index)));
    let srv = proxy_to(&up, "pool = 4");
    let clients: Vec<_> = (0..10)
        .map(|_| {
            let addr = srv.addr;
            std::thread::spawn(move || {
                let mut s = connect(addr);
                let mut rd = BufReader::new(s.try_clone().unwrap());
                let mut answered = 0;
                for _ in 0..100 {
                    s.write_all(b"GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n")
                        .unwrap();
                    if read_reply(&mut rd, false).unwrap().status == 200 {
                        answered += 1;
                    }
                }
                answered
            })
        })
        .collect();
    let answered: usize = clients.into_iter().map(|c| c.join().unwrap()).sum();
    assert_eq!(answered, 1000);
    assert_eq!(up.requests().len(), 1000);
    // Once the flood is over, at most the pool's 4 idle connections stay open.
    let open = || up.open.load(std::sync::atomic::Ordering::SeqCst);
    assert!(eventually(WAIT, || open() <= 4), "{} open", open());
    let st = srv.stop();
    assert_eq!(st.proxy_requests, 1000);
    assert_eq!(
        st.proxy_connects,
        up.accepted.load(std::sync::atomic::Ordering::SeqCst) as u64
    );
}

#[test]
fn a_client_that_leaves_mid_response_closes_the_upstream_connection() {
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        "/api/big" => {
            let mut steps = vec![reply("HTTP/1.1 200 OK\r\nContent-Length: 67108864\r\n\r\n")];
            steps.extend((0..64).map(|_| Step::Write(vec![b'z'; 1 << 20])));
            steps
        }
        _ => ok("small"),
    });
    let srv = proxy_to(&up, "");
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/big HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut some = [0u8; 4096];
    assert!(s.read(&mut some).unwrap() > 0);
    drop(s);
    // The upstream sees its connection closed (its write fails), and the next request opens
    // a new one.
    let open = || up.open.load(std::sync::atomic::Ordering::SeqCst);
    assert!(eventually(WAIT, || open() == 0), "{} open", open());
    let r = ask(&srv, "GET /api/small HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"small"[..]));
    assert_eq!(up.accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
}

/// A `unix:` upstream is spoken to as a TCP one is: the same request head, `Host` the
/// client's (or `localhost` when the client sent none: a path is no host name), the
/// connection pooled.
#[test]
fn a_unix_socket_upstream_gets_the_request_a_tcp_one_gets_on_a_pooled_connection() {
    use std::io::BufRead;
    use std::os::unix::net::UnixListener;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("up.sock");
    let listener = UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    let upstream = std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + WAIT;
        let s = loop {
            match listener.accept() {
                Ok((s, _)) => break s,
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(5))
                }
                Err(e) => panic!("no connection from the proxy: {e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(WAIT)).unwrap();
        let mut rd = BufReader::new(s.try_clone().unwrap());
        let mut w = s;
        let mut heads = Vec::new();
        for _ in 0..2 {
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if rd.read_line(&mut line).unwrap() == 0 {
                    return heads;
                }
                head.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            heads.push(head);
            w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                .unwrap();
        }
        heads
    });
    let srv = TestServer::start(|c| {
        let m = format!("/api/=unix:{}", path.display());
        c.proxy.push(m.parse().unwrap())
    });
    let r = ask(&srv, "GET /api/x?q=1 HTTP/1.1\r\nHost: example.com\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    let r = ask(&srv, "GET /api/y HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"ok"[..]));
    let st = srv.stop();
    let heads = upstream.join().unwrap();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(
        heads[0].starts_with("GET /api/x?q=1 HTTP/1.1\r\nHost: example.com\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[0].contains("X-Forwarded-For: 127.0.0.1\r\n"),
        "{}",
        heads[0]
    );
    assert!(
        heads[1].starts_with("GET /api/y HTTP/1.1\r\nHost: localhost\r\n"),
        "{}",
        heads[1]
    );
    assert_eq!((st.proxy_requests, st.proxy_connects), (2, 1));
}

/// A head the upstream's parser passes but the server's response checks refuse (a status past
/// 599) is the upstream's bad response: 502, counted with the proxy's, not the CGI programs'.
#[test]
fn a_head_the_response_checks_refuse_counts_as_the_upstream_s_bad_response() {
    let up = Upstream::start(|_| vec![reply("HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n")]);
    let srv = proxy_to(&up, "");
    assert_eq!(
        ask(&srv, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n").status,
        502
    );
    let st = srv.stop();
    assert_eq!((st.proxy_bad_responses, st.cgi_bad_heads), (1, 0));
}

/// A request that times out waiting for its answer on a pooled connection says nothing of its
/// address (the address answered the request before on that connection): it stays in turn.
#[test]
fn a_first_byte_timeout_on_a_pooled_connection_leaves_its_address_in_turn() {
    let slow = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        "/api/slow" => vec![Step::Sleep(Duration::from_secs(5)), Step::Close],
        _ => ok("a"),
    });
    let fast = Upstream::start(|_| ok("b"));
    let extra = "first_byte_timeout_ms = 300\nfail_timeout_ms = 60000";
    let m = mount("/api", &[slow.url(), fast.url()], extra);
    let srv = TestServer::start(|c| c.proxy.push(m));
    let get = |path: &str| ask(&srv, &format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
    // One request each, round robin: both connections pooled.
    let bodies: Vec<Vec<u8>> = (0..2).map(|_| get("/api/x").body).collect();
    assert_eq!(bodies, [b"a".to_vec(), b"b".to_vec()]);
    // The first address, on its pooled connection, answers nothing in time.
    assert_eq!(get("/api/slow").status, 504);
    // Both addresses still take their turns.
    let bodies: Vec<Vec<u8>> = (0..4).map(|_| get("/api/x").body).collect();
    assert_eq!(
        bodies.iter().filter(|b| b.as_slice() == b"a").count(),
        2,
        "{bodies:?}"
    );
    let st = srv.stop();
    assert_eq!(st.proxy_timeouts, 1);
}

/// An answer the proxy never read because its client reads nothing (the responses before it
/// fill the connection's output) is no fault of the address, whose timeout it is not.
#[test]
fn a_timeout_behind_a_client_that_reads_nothing_leaves_the_address_in_turn() {
    let a = Upstream::start(|_| ok("a"));
    let b = Upstream::start(|_| ok("b"));
    let extra = "first_byte_timeout_ms = 300\nidle_timeout_ms = 300\nfail_timeout_ms = 60000";
    let m = mount("/api", &[a.url(), b.url()], extra);
    let srv = TestServer::start(|c| {
        c.max_pipeline_bytes = 16 << 20;
        c.proxy.push(m)
    });
    // A client with a small receive window that reads nothing: the 4 MiB file stays queued,
    // and the proxied request behind it, sent upstream, has its answer left unread.
    let sock = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    sock.connect(&srv.addr.into()).unwrap();
    let mut stalled: std::net::TcpStream = sock.into();
    stalled
        .write_all(b"GET /4m.bin HTTP/1.1\r\nHost: t\r\n\r\nGET /api/x HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    assert!(
        eventually(WAIT, || srv.stats().proxy_timeouts == 1),
        "the unread answer timed out"
    );
    assert_eq!(
        a.requests().len(),
        1,
        "the stalled request went to the first address"
    );
    drop(stalled);
    let get = || ask(&srv, "GET /api/x HTTP/1.1\r\nHost: t\r\n\r\n").body;
    let bodies: Vec<Vec<u8>> = (0..4).map(|_| get()).collect();
    assert_eq!(
        bodies.iter().filter(|b| b.as_slice() == b"a").count(),
        2,
        "{bodies:?}"
    );
}
