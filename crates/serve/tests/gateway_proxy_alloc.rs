//! A proxied request in steady state (the upstream's keep-alive connection pooled, the
//! exchange's buffers recycled) allocates a fixed few objects in the proxy, none per field or
//! per byte: its request head is written into the recycled buffer, the fields read in place,
//! the upstream's response head checked where it was read. The upstream is flint serve itself
//! serving a file, which allocates nothing; counted with a global allocator over every thread
//! of this binary (alone in it), the client allocating nothing in the window.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::*;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

fn fill(s: &mut TcpStream, buf: &mut [u8]) {
    let mut got = 0;
    while got < buf.len() {
        let n = s.read(&mut buf[got..]).expect("read");
        assert!(n > 0, "early EOF");
        got += n;
    }
}

/// Requests per counted round.
const ROUND: usize = 300;

/// Allocations per proxied request, all three objects of the gateway machinery that CGI and
/// FastCGI share, one each per exchange: the client side's exchange and the upstream side's
/// (each boxed, so that an idle connection stays small), and the checked response head's field
/// list. Recycling them is a change to that shared machinery, left for when it is reworked.
const PER_REQUEST: u64 = 3;

#[test]
fn a_proxied_request_allocates_a_fixed_few_objects_through_a_warm_pool() {
    let upstream = TestServer::start(|c| c.revalidate_ms = 600_000);
    std::fs::create_dir(upstream.root.path().join("api")).unwrap();
    std::fs::write(
        upstream.root.path().join("api/1k.bin"),
        content("1k.bin", 1024),
    )
    .unwrap();
    let url = format!("http://{}", upstream.addr);
    let srv = TestServer::start(|c| {
        c.revalidate_ms = 600_000;
        c.proxy.push(format!("/api/={url}").parse().unwrap());
    });
    let one = get("/api/1k.bin").into_bytes();
    let len = {
        let mut s = connect(srv.addr);
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.body, content("1k.bin", 1024));
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        "HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()
    };
    let mut s = connect(srv.addr);
    let mut buf = vec![0u8; len];
    let round = |s: &mut TcpStream, buf: &mut [u8]| {
        for _ in 0..ROUND {
            s.write_all(&one).unwrap();
            fill(s, buf);
        }
    };
    round(&mut s, &mut buf); // warm-up: the pool, the buffers, the caches
    assert!(buf.ends_with(&content("1k.bin", 1024)));
    let before = allocations();
    round(&mut s, &mut buf);
    let allocated = allocations() - before;
    assert!(buf.ends_with(&content("1k.bin", 1024)));
    assert!(
        allocated <= PER_REQUEST * ROUND as u64,
        "{allocated} allocations during {ROUND} proxied requests: over {PER_REQUEST} each"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!(st.proxy_requests, 2 * ROUND as u64 + 1);
    assert_eq!(st.proxy_connects, 1, "one pooled upstream connection");
    assert_eq!(upstream.stop().requests, 2 * ROUND as u64 + 1);
}
