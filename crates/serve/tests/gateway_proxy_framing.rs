//! The proxy's request and response framing when an upstream misbehaves at a boundary: a
//! retried request never goes with part of its body, bytes past a response never reach the
//! next request, and an answer sent before the request's body was read still reaches the
//! client.

mod cgi_support;
mod common;
mod proxy_support;

use std::io::{Read, Write};
use std::time::Duration;

use cgi_support::*;
use common::*;
use proxy_support::*;

/// Reads a whole response (the server closes after it, or the client's read times out).
fn read_all(s: &mut std::net::TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    got
}

#[test]
fn a_body_that_came_in_part_is_never_retried_short_on_another_address() {
    let up = Upstream::start(|r| ok(&format!("{} bytes", r.body.len())));
    let dead = format!("http://{}", dead_port());
    let m = mount(
        "/api",
        &[dead, up.url()],
        "fail_timeout_ms = 60000\nfirst_byte_timeout_ms = 3000\nidle_timeout_ms = 3000",
    );
    let srv = TestServer::start(|c| c.proxy.push(m));
    let body: Vec<u8> = (0..100_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let mut s = connect(srv.addr);
    s.write_all(
        b"POST /api/x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\nConnection: close\r\n\r\n",
    )
    .unwrap();
    s.write_all(&body[..1000]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    // The server may have answered and closed already: the rest may not be taken.
    let _ = s.write_all(&body[1000..]);
    let got = read_all(&mut s);
    let text = String::from_utf8_lossy(&got);
    assert!(
        text.starts_with("HTTP/1.1 502") || text.ends_with("\r\n\r\n100000 bytes"),
        "the whole body echoed or a 502, never a request cut short: {text}"
    );
    // A request the upstream read whole had the whole body; nothing arrived short.
    for r in up.requests() {
        assert_eq!(r.body, body, "the upstream got the body whole");
    }
    let raw = up.raw.lock().unwrap().len();
    let whole = up.requests().len();
    assert!(
        raw == 0 || whole > 0,
        "{raw} bytes reached the upstream without making a whole request"
    );
    srv.stop();
}

#[test]
fn bytes_after_a_response_that_filled_the_read_buffer_never_reach_the_next_request() {
    // One write: a response of exactly 16 KiB (the proxy's read buffer), then another the
    // proxy never asked for.
    let up = Upstream::start(|r| {
        if r.head.starts_with("GET /api/big ") {
            let head = "HTTP/1.1 200 OK\r\nContent-Length: ";
            let mut len = 16_384 - head.len() - "\r\n\r\n".len();
            len -= len.to_string().len();
            let mut bytes = format!("{head}{len}\r\n\r\n").into_bytes();
            bytes.resize(16_384, b'b');
            bytes.extend_from_slice(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nSTOLEN");
            vec![Step::Write(bytes)]
        } else {
            ok("fresh")
        }
    });
    let m = mount("/api", &[up.url()], "pool = 1");
    let srv = TestServer::start(|c| c.proxy.push(m));
    for _ in 0..3 {
        let r = ask(&srv, "GET /api/big HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(r.status, 200);
        assert!(r.body.iter().all(|&b| b == b'b'), "the first response only");
        let r = ask(&srv, "GET /api/small HTTP/1.1\r\nHost: t\r\n\r\n");
        assert_eq!(
            (r.status, String::from_utf8_lossy(&r.body).into_owned()),
            (200, "fresh".to_string()),
            "the next request gets its own response"
        );
    }
    let st = srv.stop();
    assert!(st.proxy_overlong >= 1, "the extra bytes counted");
}
