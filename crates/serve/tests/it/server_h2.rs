//! HTTP/2 end to end: prior knowledge over cleartext and ALPN over TLS, the same answers as
//! HTTP/1.1 (the responder is shared), bodies of every kind through flow control, concurrent
//! streams, the limits, the counters, `http2 = false`, and the graceful shutdown.

use crate::common;
use crate::tls_support;

use std::io::{Read, Write};

use crate::common::{connect, content, exchange, TestServer};
use crate::h2_support::{raw, Client};
use crate::tls_support::{tls_connect, Certs};

fn h2c(srv: &TestServer) -> Client<std::net::TcpStream> {
    Client::new(connect(srv.addr), "localhost")
}

#[test]
fn prior_knowledge_gets_the_same_answers_as_http1() {
    let srv = TestServer::start(|_| {});
    let mut c = h2c(&srv);
    let r = c.get("/a.txt", &[]);
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    assert_eq!(r.header("content-length"), Some("5"));
    assert!(r.header("etag").is_some() && r.header("date").is_some());
    assert!(
        r.headers.iter().all(|(n, _)| n != "connection"),
        "no connection-specific field"
    );
    let etag = r.header("etag").unwrap().to_string();
    // Every kind of body: copied small, shared cached, file by sendfile (4 MiB, past the
    // 64 KiB windows: flow control paces it).
    for (name, len) in [
        ("1k.bin", 1024),
        ("300k.bin", 300 << 10),
        ("4m.bin", 4 << 20),
    ] {
        let r = c.get(&format!("/{name}"), &[]);
        assert_eq!(r.status, 200, "{name}");
        assert!(r.body == content(name, len), "{name}: body differs");
    }
    assert_eq!(c.get("/a.txt", &[("if-none-match", &etag)]).status, 304);
    assert_eq!(c.get("/a.txt", &[("if-match", "\"nope\"")]).status, 412);
    let r = c.get("/4m.bin", &[("range", "bytes=10-19")]);
    assert_eq!(r.status, 206);
    assert_eq!(r.body, content("4m.bin", 4 << 20)[10..20]);
    assert_eq!(r.header("content-range"), Some("bytes 10-19/4194304"));
    let r = c.request("HEAD", "/1k.bin", &[]);
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(r.header("content-length"), Some("1024"));
    assert_eq!(c.get("/nope", &[]).status, 404);
    assert_eq!(c.get("/.env", &[]).status, 404);
    assert_eq!(c.get("/../etc/passwd", &[]).status, 400);
    let r = c.request("DELETE", "/a.txt", &[]);
    assert_eq!((r.status, r.header("allow")), (405, Some("GET, HEAD")));
    assert!(!r.body.is_empty(), "the error page is framed");
    let st = srv.stop();
    assert_eq!(st.http2_connections, 1);
    assert_eq!(st.http1_connections, 0);
    assert_eq!(st.h2_streams, 12);
    assert_eq!(st.requests, 12);
}

#[test]
fn each_authority_is_checked_whatever_the_connection_sent_before() {
    // The connection keeps the last authority that passed: an equal one is not checked again,
    // another one always is.
    let srv = TestServer::start(|_| {});
    let mut c = h2c(&srv);
    for (authority, status) in [
        ("localhost", 200),
        ("localhost", 200),
        ("a..b", 400),
        ("localhost", 200),
        ("localhost:8080", 200),
        ("a..b:8080", 400),
        ("localhost:8080", 200),
    ] {
        c.authority = authority.to_string();
        assert_eq!(c.get("/a.txt", &[]).status, status, "{authority}");
    }
}

/// Reads frames until `done` holds for them; panics if the server closes first.
fn read_frames(
    s: &mut std::net::TcpStream,
    done: impl Fn(&[raw::Frame]) -> bool,
) -> Vec<raw::Frame> {
    let frames = raw::read_until(s, &done);
    assert!(done(&frames), "closed by the server: {frames:?}");
    frames
}

#[test]
fn a_request_body_over_the_limit_gets_413_and_a_dropped_one_is_fine() {
    let srv = TestServer::start(|c| c.max_body_bytes = 1000);
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let mut block = raw::get_block("/a.txt", "localhost");
    raw::literal_name(&mut block, b"content-length", b"99999999");
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, 1, &block);
    // A body within the limit is read and dropped; the answer is the file's.
    let mut block = raw::get_block("/a.txt", "localhost");
    raw::literal_name(&mut block, b"content-length", b"10");
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, 3, &block);
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 3, b"0123456789");
    s.write_all(&out).unwrap();
    let frames = read_frames(&mut s, |f| {
        f.iter().any(|f| f.0 == raw::HEADERS && f.2 == 1)
            && f.iter()
                .any(|f| f.0 == raw::DATA && f.2 == 3 && f.3 == b"hello")
    });
    let head = frames
        .iter()
        .find(|f| f.0 == raw::HEADERS && f.2 == 1)
        .unwrap();
    assert!(head.3.windows(3).any(|w| w == b"413"), "{head:?}");
}

#[test]
fn concurrent_streams_are_all_answered_on_one_connection() {
    let srv = TestServer::start(|_| {});
    let mut c = h2c(&srv);
    let names = ["a.txt", "1k.bin", "10k.bin", "300k.bin"];
    // Each file's validator, asked for alone first: the heads of the batch below alternate
    // (and some wait in the session's queue behind the large body), so the head kept for the
    // next equal one keeps changing, and each response must still carry its own fields.
    let etags: Vec<String> = (names.iter())
        .map(|name| {
            c.get(&format!("/{name}"), &[])
                .header("etag")
                .unwrap()
                .to_string()
        })
        .collect();
    let ids: Vec<_> = (0..60)
        .map(|i| {
            (
                names[i % 4],
                c.submit("GET", &format!("/{}", names[i % 4]), &[]),
            )
        })
        .collect();
    assert!(c.run_until(|s| ids
        .iter()
        .all(|(_, id)| s.responses.get(id).is_some_and(|r| r.done))));
    for (name, id) in ids {
        let r = &c.seen.responses[&id];
        let len = common::FILES.iter().find(|f| f.0 == name).unwrap().1;
        assert_eq!((r.status, r.reset), (200, Some(0)), "{name}");
        assert!(r.body == content(name, len), "{name}: body differs");
        let etag = &etags[names.iter().position(|n| *n == name).unwrap()];
        assert_eq!(r.header("etag"), Some(etag.as_str()), "{name}");
        assert_eq!(r.header("content-length"), Some(len.to_string().as_str()));
    }
}

#[test]
fn past_max_concurrent_streams_new_ones_are_refused() {
    let srv = TestServer::start(|c| c.h2_max_concurrent_streams = 2);
    // Raw frames: the client session would itself hold back past the server's limit.
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    for id in [1u32, 3, 5, 7] {
        raw::get(&mut out, id, "/4m.bin", raw::END_STREAM);
    }
    s.write_all(&out).unwrap();
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 16];
    let refused = |got: &[u8]| {
        raw::parse(got)
            .iter()
            .filter(|f| f.0 == raw::RST_STREAM && f.3 == 7u32.to_be_bytes())
            .count()
    };
    while refused(&got) < 2 {
        let n = s.read(&mut buf).expect("read");
        assert!(n > 0, "closed before refusing");
        got.extend_from_slice(&buf[..n]);
    }
    let stats = srv.stats();
    assert!(stats.h2_resets_sent >= 2, "{stats:?}");
}

#[test]
fn tls_alpn_picks_h2_and_http11_stays() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let mut config = (*certs.client(&tls_support::both_versions())).clone();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let config = std::sync::Arc::new(config);
    let mut tls = tls_connect(srv.addr, &config);
    // The handshake runs on first use; ALPN is known after it.
    let mut c = Client::new(&mut tls, "localhost");
    let r = c.get("/300k.bin", &[]);
    assert!(r.status == 200 && r.body == content("300k.bin", 300 << 10));
    drop(c);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
    // A client that offers only http/1.1 gets it.
    let h1 = certs.client(&tls_support::both_versions());
    let mut t = tls_connect(srv.addr, &h1);
    t.write_all(b"GET /a.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let r = common::read_response(&mut std::io::BufReader::new(&mut t), false).unwrap();
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    assert_eq!(t.conn.alpn_protocol(), Some(&b"http/1.1"[..]));
    let st = srv.stop();
    assert_eq!((st.http2_connections, st.http1_connections), (1, 1));
}

#[test]
fn http2_off_refuses_the_preface_as_http1_does() {
    let srv = TestServer::start(|c| c.http2 = false);
    let r = exchange(srv.addr, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    assert_eq!(r.status, 505);
    let on = TestServer::start(|_| {});
    // With HTTP/2 on, requests that only start like the preface are still HTTP/1.1.
    let r = exchange(on.addr, "POST /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 405);
    let r = exchange(on.addr, "PUT /a.txt HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(r.status, 405);
}

#[test]
fn shutdown_sends_goaway_and_finishes_the_streams_under_way() {
    let srv = TestServer::start(|_| {});
    let mut c = h2c(&srv);
    assert_eq!(c.get("/a.txt", &[]).status, 200);
    // A large body under way, its reading paused by the client's window.
    let id = c.submit("GET", "/4m.bin", &[]);
    assert!(c.run_until(|s| s.responses.get(&id).is_some_and(|r| !r.body.is_empty())));
    srv.handle.shutdown();
    assert!(c.run_until(|s| s.goaway.is_some() && s.responses[&id].done));
    assert_eq!(c.seen.goaway.map(|g| g.1), Some(0), "GOAWAY NO_ERROR");
    let r = &c.seen.responses[&id];
    assert_eq!(r.reset, Some(0));
    assert!(r.body == content("4m.bin", 4 << 20), "the stream finished");
}

/// A ClientHello in two segments (a post-quantum one is larger than a segment): the server
/// reads the first half, and still learns ALPN before deciding the protocol.
#[test]
fn tls_client_hello_split_across_reads_still_gets_h2() {
    let certs = Certs::new(false);
    let srv = certs.serve(|_| {});
    let mut config = (*certs.client(&tls_support::both_versions())).clone();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let config = std::sync::Arc::new(config);
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut hello = Vec::new();
    conn.write_tls(&mut hello).unwrap();
    let mut sock = connect(srv.addr);
    sock.write_all(&hello[..hello.len() / 2]).unwrap();
    // The server reads (and answers, if it would) the first half on its own.
    std::thread::sleep(std::time::Duration::from_millis(200));
    sock.write_all(&hello[hello.len() / 2..]).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, sock);
    let mut c = Client::new(&mut tls, "localhost");
    let r = c.get("/a.txt", &[]);
    assert_eq!((r.status, &r.body[..]), (200, &b"hello"[..]));
    drop(c);
    assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
    let st = srv.stop();
    assert_eq!((st.http2_connections, st.http1_connections), (1, 0));
}

/// A frame on a stream the client ended, once the server has answered and closed it, is a
/// connection error STREAM_CLOSED (RFC 9113 5.1), however the client's bytes were cut into
/// reads: here the late frame is written only after the response is complete.
#[test]
fn a_frame_after_the_clients_end_of_a_closed_stream_is_stream_closed() {
    let srv = TestServer::start(|c| c.max_body_bytes = 1000);
    // (what ends the client's side, the late frame's type)
    let cases = [
        (raw::END_STREAM, raw::DATA),
        (raw::END_STREAM, raw::HEADERS),
        (0, raw::DATA), // ended by the client's RST_STREAM
    ];
    for (end, late) in cases {
        let mut s = connect(srv.addr);
        let mut out = raw::start();
        let block = raw::get_block("/a.txt", "localhost");
        raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS | end, 1, &block);
        if end == 0 {
            raw::frame(&mut out, raw::RST_STREAM, 0, 1, &8u32.to_be_bytes());
        } else {
            s.write_all(&out).unwrap();
            out.clear();
            read_frames(&mut s, |f| {
                f.iter()
                    .any(|f| f.0 == raw::DATA && f.2 == 1 && f.1 & raw::END_STREAM != 0)
            });
        }
        if late == raw::DATA {
            raw::frame(&mut out, raw::DATA, raw::END_STREAM, 1, b"late");
        } else {
            raw::get(&mut out, 1, "/a.txt", 0);
        }
        s.write_all(&out).unwrap();
        let frames = read_frames(&mut s, |f| raw::goaway_code(f).is_some());
        assert_eq!(
            raw::goaway_code(&frames),
            Some(5),
            "{end} {late}: {frames:?}"
        );
    }
    // Frames that crossed the server's own RST_STREAM are ignored: the connection goes on.
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::get(&mut out, 1, "/a.txt", 0);
    raw::frame(&mut out, raw::DATA, 0, 1, &[b'x'; 1500]);
    s.write_all(&out).unwrap();
    read_frames(&mut s, |f| {
        f.iter().any(|f| f.0 == raw::RST_STREAM && f.2 == 1)
    });
    let mut out = Vec::new();
    raw::frame(&mut out, raw::DATA, raw::END_STREAM, 1, b"crossed");
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let frames = read_frames(&mut s, |f| {
        f.iter()
            .any(|f| f.0 == raw::DATA && f.2 == 3 && f.3 == b"hello")
    });
    assert_eq!(raw::goaway_code(&frames), None, "{frames:?}");
}

/// A download the client paces with its flow control (16 KiB of window every 100 ms, as a
/// slow reader does) never blocks the socket, yet is progressing: it is not cut at the
/// keep-alive timeout, only after the send timeout without progress.
#[test]
fn a_download_paced_by_flow_control_outlives_the_keepalive_timeout() {
    let srv = TestServer::start(|c| {
        c.keepalive_timeout_ms = 300;
        c.send_timeout_ms = 5_000;
    });
    let mut s = connect(srv.addr);
    s.set_read_timeout(Some(std::time::Duration::from_millis(20)))
        .unwrap();
    let mut out = raw::start();
    raw::get(&mut out, 1, "/300k.bin", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let start = std::time::Instant::now();
    let mut last_grant = start;
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 16];
    let body_done = |got: &[u8]| {
        raw::parse(got)
            .iter()
            .any(|f| f.0 == raw::DATA && f.2 == 1 && f.1 & raw::END_STREAM != 0)
    };
    while !body_done(&got) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(30),
            "too slow"
        );
        match s.read(&mut buf) {
            Ok(0) => panic!("closed after {:?}", start.elapsed()),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(e) => panic!("{e} after {:?}", start.elapsed()),
        }
        assert_eq!(raw::goaway_code(&raw::parse(&got)), None);
        if last_grant.elapsed() >= std::time::Duration::from_millis(100) {
            last_grant = std::time::Instant::now();
            let mut w = Vec::new();
            for stream in [1, 0] {
                raw::frame(
                    &mut w,
                    raw::WINDOW_UPDATE,
                    0,
                    stream,
                    &16384u32.to_be_bytes(),
                );
            }
            s.write_all(&w).unwrap();
        }
    }
    let body: Vec<u8> = raw::parse(&got)
        .iter()
        .filter(|f| f.0 == raw::DATA && f.2 == 1)
        .flat_map(|f| f.3.clone())
        .collect();
    assert!(
        body == content("300k.bin", 300 << 10),
        "{} bytes",
        body.len()
    );
    assert!(
        start.elapsed() > std::time::Duration::from_millis(600),
        "paced, not all at once"
    );
    // The connection lived through the whole download: no GOAWAY and no close were read
    // while it ran (checked at every read above). Its idle timeout is not asked about now:
    // once the body is whole the connection is idle, and a loaded machine may let 300 ms
    // pass before the question, when the server rightly closes it.
    drop(srv);
}

/// A header block under way (HEADERS without END_HEADERS, its CONTINUATION never sent) is due
/// within the header timeout, as an HTTP/1.1 head is, not the keep-alive.
#[test]
fn a_header_block_under_way_is_due_within_the_header_timeout() {
    let srv = TestServer::start(|c| {
        c.header_timeout_ms = 300;
        c.keepalive_timeout_ms = 60_000;
    });
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    raw::get(&mut out, 1, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    read_frames(&mut s, |f| f.iter().any(|f| f.0 == raw::DATA && f.2 == 1));
    let mut out = Vec::new();
    let block = raw::get_block("/a.txt", "localhost");
    raw::frame(&mut out, raw::HEADERS, raw::END_STREAM, 3, &block[..4]);
    s.write_all(&out).unwrap();
    let start = std::time::Instant::now();
    assert!(common::closed_by_peer(&mut s), "closed");
    assert!(
        start.elapsed() < std::time::Duration::from_secs(5),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(srv.stats().header_timeouts, 1);
}

/// A HEAD answered with an error has no body, as any HEAD.
#[test]
fn a_head_answered_with_an_error_has_no_body() {
    let srv = TestServer::start(|c| c.max_body_bytes = 1000);
    let mut s = connect(srv.addr);
    let mut out = raw::start();
    let mut block = Vec::new();
    raw::literal(&mut block, 2, b"HEAD");
    block.push(0x86);
    raw::literal(&mut block, 4, b"/a.txt");
    raw::literal(&mut block, 1, b"localhost");
    raw::literal_name(&mut block, b"content-length", b"99999999");
    raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, 1, &block);
    raw::get(&mut out, 3, "/a.txt", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let frames = read_frames(&mut s, |f| {
        f.iter().any(|f| f.0 == raw::HEADERS && f.2 == 1)
            && f.iter().any(|f| f.0 == raw::DATA && f.2 == 3)
    });
    let head = frames
        .iter()
        .find(|f| f.0 == raw::HEADERS && f.2 == 1)
        .unwrap();
    assert!(head.3.windows(3).any(|w| w == b"413"), "{head:?}");
    assert!(head.1 & raw::END_STREAM != 0, "no body: {head:?}");
    assert!(
        !frames.iter().any(|f| f.0 == raw::DATA && f.2 == 1),
        "{frames:?}"
    );
    let data = frames
        .iter()
        .find(|f| f.0 == raw::DATA && f.2 == 3)
        .unwrap();
    assert_eq!(data.3, b"hello");
}

/// A client that opens no window for its download and pings meanwhile is not reading: the
/// PING ACKs it gets are no progress, and the send timeout ends the connection.
#[test]
fn pings_are_no_progress_for_a_download_whose_window_stays_shut() {
    let srv = TestServer::start(|c| {
        c.send_timeout_ms = 500;
        c.keepalive_timeout_ms = 60_000;
    });
    let mut s = connect(srv.addr);
    s.set_read_timeout(Some(std::time::Duration::from_millis(20)))
        .unwrap();
    let mut out = raw::PREFACE.to_vec();
    raw::settings(&mut out, &[(4, 0)]); // INITIAL_WINDOW_SIZE 0: no DATA may come
    raw::get(&mut out, 1, "/300k.bin", raw::END_STREAM);
    s.write_all(&out).unwrap();
    let start = std::time::Instant::now();
    let mut last_ping = start;
    let mut buf = vec![0; 1 << 16];
    loop {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(8),
            "still open"
        );
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => break, // reset: closed too
        }
        if last_ping.elapsed() >= std::time::Duration::from_millis(100) {
            last_ping = std::time::Instant::now();
            let mut ping = Vec::new();
            raw::frame(&mut ping, raw::PING, 0, 0, &[0; 8]);
            if s.write_all(&ping).is_err() {
                break;
            }
        }
    }
    assert_eq!(srv.stats().send_timeouts, 1);
}
