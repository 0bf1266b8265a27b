//! The hit path allocates nothing, parsing included: counted with a global allocator that counts
//! this thread's allocations (it is the allocator of the whole `it` executable: the other tests'
//! threads allocate as before, through the system allocator, and are not counted here).
//! Preconditions (304, 412, If-Range), Host validation, later HTTP/1.x minor versions and hidden
//! names are on it too.

use std::time::{Duration, Instant};

use crate::files_support::{Site, DATE};
use test_support::alloc::{allocations_on_this_thread, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    allocations_on_this_thread()
}

#[test]
fn hit_path_does_no_allocation() {
    let medium = vec![b'm'; 64 * 1024];
    let large = vec![b'l'; 512 * 1024];
    let mut site = Site::with(
        &[
            ("index.html", b"<h1>home</h1>"),
            ("small.txt", b"hello"),
            ("medium.bin", &medium),
            ("large.bin", &large),
            ("app.js", b"identity"),
            ("app.js.gz", b"gzip"),
            (".env", b"SECRET"),
        ],
        |c| {
            c.digest = true;
            c.revalidate_ms = 1000;
        },
    );
    let first = site.get("/small.txt", &[]);
    let etag = first.header("ETag").unwrap().to_string();
    let lm = first.header("Last-Modified").unwrap().to_string();
    let past = "Sun, 06 Nov 1994 08:49:37 GMT";
    let requests: Vec<String> = vec![
        "GET /small.txt HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET / HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "HEAD /small.txt HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET /medium.bin HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET /large.bin HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "GET /large.bin HTTP/1.1\r\nHost: h\r\nRange: bytes=100-199\r\n\r\n".into(),
        "GET /small.txt HTTP/1.1\r\nHost: h\r\nRange: bytes=1-2\r\n\r\n".into(),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-None-Match: {etag}\r\n\r\n"),
        "GET /app.js HTTP/1.1\r\nHost: h\r\nAccept-Encoding: gzip, br\r\n\r\n".into(),
        "GET /sm%61ll.txt?x=1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".into(),
        "GET /../etc/passwd HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        "POST /small.txt HTTP/1.1\r\nHost: h\r\n\r\n".into(),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-Match: {etag}\r\n\r\n"),
        "GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-Match: \"nope\"\r\n\r\n".into(),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-Unmodified-Since: {past}\r\nRange: bytes=0-1\r\n\r\n"),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-Unmodified-Since: {lm}\r\nRange: bytes=0-1\r\nIf-Range: {etag}\r\n\r\n"),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"a\"\r\nIf-None-Match: {etag}\r\n\r\n"),
        format!("GET /small.txt HTTP/1.1\r\nHost: h\r\nIf-Modified-Since: {lm}\r\n\r\n"),
        "GET /small.txt HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n".into(),
        "GET /small.txt HTTP/1.1\r\nHost: www.example.com.:80\r\n\r\n".into(),
        "GET /small.txt HTTP/1.7\r\nHost: h\r\n\r\n".into(),
        "GET /.env HTTP/1.1\r\nHost: h\r\n\r\n".into(),
    ];
    let mut out = Vec::with_capacity(64 * 1024);
    let t0 = Instant::now();
    // Warm up: every path cached, every body loaded, every buffer grown.
    for raw in &requests {
        site.raw_at(raw.as_bytes(), t0);
    }
    let limits = wire::RequestLimits::default();
    let before = allocations();
    drop(std::hint::black_box(vec![1u8; 10]));
    assert_eq!(allocations(), before + 1, "the counting allocator counts");
    // Inside the window, and across revalidations (one stat each, still no allocation).
    for step in 0..5u64 {
        let now = t0 + Duration::from_millis(700 * step);
        for raw in &requests {
            out.clear();
            let before = allocations();
            let req = wire::parse_request(raw.as_bytes(), &limits)
                .unwrap()
                .unwrap();
            let reply = site.responder.respond(&req, DATE, now, &mut out);
            let after = allocations();
            assert_eq!(
                after - before,
                0,
                "{raw:?} allocated (status {})",
                reply.status
            );
        }
    }
    assert!(site.responder.counters().revalidations > 0);
}

#[test]
fn refused_heads_allocate_nothing_either() {
    let limits = wire::RequestLimits::default();
    for raw in [
        &b"GET / HTTP/1.1\r\nHost: a b\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: ../x\r\n\r\n",
        b"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n",
        b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n",
        b"GET / HTTP/2.0\r\nHost: h\r\n\r\n",
        b"GET / HTTP/1.2\r\nBad Name: x\r\n\r\n",
    ] {
        let before = allocations();
        let status = wire::parse_request(raw, &limits).unwrap_err().status();
        assert_eq!(allocations(), before, "{:?}", String::from_utf8_lossy(raw));
        assert!(status == 400 || status == 505);
    }
}
