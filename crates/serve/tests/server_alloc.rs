//! In steady state the event loop allocates nothing per request or per connection: buffers come
//! from the thread's pool, connections reuse slab slots. Counted with a global allocator over
//! every thread of this binary (alone in it), while the client side of the window allocates
//! nothing either (prebuilt requests, a preallocated read buffer).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::*;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Reads exactly `buf.len()` bytes (std's read_exact does not allocate either; this keeps the
/// error path allocation-free too).
fn fill(s: &mut TcpStream, buf: &mut [u8]) {
    let mut got = 0;
    while got < buf.len() {
        let n = s.read(&mut buf[got..]).expect("read");
        assert!(n > 0, "early EOF");
        got += n;
    }
}

#[test]
fn steady_state_requests_allocate_nothing() {
    let srv = TestServer::start(|c| c.revalidate_ms = 600_000);
    let one = get("/1k.bin").into_bytes();
    let sixteen: Vec<u8> = one.repeat(16);
    // A deep pipeline whose responses (16 x 10 KiB, copied after their heads) outgrow a small
    // output buffer: the pool must keep the grown buffer, not shrink and regrow it every batch.
    let deep: Vec<u8> = get("/10k.bin").into_bytes().repeat(16);
    let close = b"GET /1k.bin HTTP/1.0\r\n\r\n".to_vec();
    // Response sizes, learned outside the window.
    let ka_len = {
        let mut s = connect(srv.addr);
        s.write_all(&one).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        let status_line = "HTTP/1.1 200 OK\r\n".len();
        status_line + head + 2 + r.body.len()
    };
    let deep_len = {
        let mut s = connect(srv.addr);
        s.write_all(&get("/10k.bin").into_bytes()).unwrap();
        let r = read_response(&mut std::io::BufReader::new(s), false).unwrap();
        let head: usize = r.headers.iter().map(|(n, v)| n.len() + v.len() + 4).sum();
        ("HTTP/1.1 200 OK\r\n".len() + head + 2 + r.body.len()) * 16
    };
    let mut s = connect(srv.addr);
    let mut buf = vec![0u8; (ka_len * 16).max(deep_len)];
    let mut scratch = vec![0u8; 64 * 1024];
    let mut round = |s: &mut TcpStream, buf: &mut [u8]| {
        for _ in 0..200 {
            s.write_all(&one).unwrap();
            fill(s, &mut buf[..ka_len]);
        }
        for _ in 0..10 {
            s.write_all(&deep).unwrap();
            fill(s, &mut buf[..deep_len]);
        }
        for _ in 0..20 {
            s.write_all(&sixteen).unwrap();
            fill(s, &mut buf[..ka_len * 16]);
        }
        for _ in 0..20 {
            let mut c = TcpStream::connect(srv.addr).unwrap();
            c.write_all(&close).unwrap();
            while c.read(&mut scratch).unwrap() > 0 {}
        }
    };
    round(&mut s, &mut buf); // warm-up: pools, slab, queues reach their working size
    assert!(buf[..ka_len].starts_with(b"HTTP/1.1 200 OK\r\n"));
    assert!(
        buf[..ka_len].ends_with(&content("1k.bin", 1024)),
        "response size learned right"
    );
    let before = allocations();
    round(&mut s, &mut buf);
    let allocated = allocations() - before;
    assert_eq!(
        allocated, 0,
        "allocations during 700 requests in steady state"
    );
    drop(s);
    let st = srv.stop();
    assert_eq!(st.requests, 2 * 700 + 2);
}
