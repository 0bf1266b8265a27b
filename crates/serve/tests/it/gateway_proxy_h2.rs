//! The proxy behind HTTP/2 and TLS clients: the request goes upstream as HTTP/1.1 whatever the
//! client spoke, the response comes back as DATA frames paced by flow control, and a client
//! that reads nothing holds the upstream back rather than the server's memory.

use crate::h2_support;
use crate::tls_support;

use std::io::{BufReader, Read, Write};
use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::common::*;
use crate::proxy_support::*;

fn echo(r: &Req) -> Vec<Step> {
    let mut out = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: {}\r\n\r\n",
        r.body.len()
    )
    .into_bytes();
    out.extend_from_slice(&r.body);
    vec![Step::Write(out)]
}

#[test]
fn an_http2_client_is_proxied_as_http_1_1() {
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        "/api/big" => vec![Step::Write(
            [
                b"HTTP/1.1 200 OK\r\nContent-Length: 700000\r\n\r\n".to_vec(),
                vec![b'x'; 700_000],
            ]
            .concat(),
        )],
        _ => echo(r),
    });
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut h2 = h2_support::Client::new(connect(srv.addr), "example.com");
    let r = h2.get(
        "/api/x",
        &[("cookie", "a=1"), ("cookie", "b=2"), ("x-custom", "v")],
    );
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-length"), Some("0"));
    let got = &up.requests()[0];
    assert!(
        got.head.starts_with("GET /api/x HTTP/1.1\r\n"),
        "{}",
        got.head
    );
    assert_eq!(got.field("host"), Some("example.com"));
    assert_eq!(got.field("cookie"), Some("a=1; b=2"));
    assert_eq!(got.field("via"), Some("2 flint"));
    assert_eq!(got.field("x-custom"), Some("v"));
    // Many times the stream's window: paced by flow control.
    let r = h2.get("/api/big", &[]);
    assert_eq!((r.status, r.body.len()), (200, 700_000));
    let r = h2.request("HEAD", "/api/big", &[]);
    assert_eq!((r.status, r.body.len()), (200, 0));
    assert_eq!(r.header("content-length"), Some("700000"));
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (3, 1));
}

/// A stream reset while its upstream has not answered gives its upstream connection up, and
/// that connection is counted in `proxy_connects` as one whose response ended.
#[test]
fn a_reset_stream_still_counts_its_upstream_connection() {
    let up = Upstream::start(|r| match r.head.split(' ').nth(1).unwrap() {
        // Longer than the test: only the reset ends it.
        "/api/slow" => vec![Step::Sleep(Duration::from_secs(60))],
        _ => echo(r),
    });
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut h2 = h2_support::Client::new(connect(srv.addr), "t");
    let id = h2.submit("GET", "/api/slow", &[]);
    h2.flush();
    assert!(
        eventually(WAIT, || up.requests().len() == 1),
        "the request went upstream"
    );
    h2.session
        .submit_rst_stream(id, http2::error_code::CANCEL)
        .unwrap();
    h2.flush();
    // Its connection closed with it: the next request opens another.
    assert_eq!(h2.get("/api/x", &[]).status, 200);
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_connects), (2, 2));
    assert_eq!(up.accepted.load(Ordering::SeqCst), 2);
}

#[test]
fn a_tls_client_is_proxied_with_its_scheme_said() {
    let up = Upstream::start(echo);
    let certs = tls_support::Certs::new(false);
    let m = mount("/api/", &[up.url()], "");
    let srv = certs.serve(|c| c.proxy.push(m));
    let config = certs.client(&tls_support::both_versions());
    let mut s = tls_support::tls_connect(srv.addr, &config);
    s.write_all(b"POST /api/e HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    let text = String::from_utf8_lossy(&got);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("hello"), "{text}");
    let got = &up.requests()[0];
    assert_eq!(got.field("x-forwarded-proto"), Some("https"));
    assert_eq!(got.body, b"hello");
}

#[test]
fn a_client_that_reads_nothing_holds_the_upstream_back() {
    const TOTAL: u64 = 256 << 20;
    let up = Upstream::start(|_| {
        let mut steps = vec![reply(&format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {TOTAL}\r\n\r\n"
        ))];
        steps.extend((0..TOTAL / (1 << 20)).map(|_| Step::Write(vec![b'z'; 1 << 20])));
        steps
    });
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/huge HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    // The upstream writes until every buffer between it and the client is full, then stops.
    // Steady for five samples in a row (a busy machine may pause the upstream for one).
    let (mut last, mut steady) = (0, 0);
    for _ in 0..200 {
        std::thread::sleep(Duration::from_millis(100));
        let now = up.written.load(Ordering::SeqCst);
        steady = if now == last && now > 0 {
            steady + 1
        } else {
            0
        };
        if steady == 5 {
            break;
        }
        last = now;
    }
    let held = up.written.load(Ordering::SeqCst);
    assert!(
        held < 64 << 20,
        "the upstream wrote {held} bytes to a client that reads nothing"
    );
    // Then the client reads all of it.
    let mut rd = BufReader::new(s);
    let (status, _) = read_head(&mut rd).unwrap();
    assert_eq!(status, 200);
    let mut left = TOTAL;
    let mut buf = vec![0u8; 1 << 16];
    while left > 0 {
        let n = rd.read(&mut buf).unwrap();
        assert!(n > 0, "closed with {left} bytes to go");
        left -= n as u64;
    }
}
