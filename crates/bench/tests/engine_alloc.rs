//! Nothing is allocated per request: a short run and a run with many times its requests make
//! (almost) the same number of allocations.
//!
//! A counting global allocator sees every allocation in this test binary, so the server here is
//! one that allocates nothing per request either (the shared test server builds each response
//! in a `Vec`), and this file holds a single test, so no other test runs beside it.

#[path = "common/per_connection.rs"]
mod per_connection;
#[path = "common/steady_state.rs"]
mod steady_state;

use bench::{BenchConfig, HttpMode, Workload};
use per_connection::{read_until_stopped, HeadEnds, PerConnection};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use steady_state::{assert_steady, config};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A response with a 100-byte body.
const RESPONSE: &[u8; 140] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\
    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";

/// Keep-alive, one thread per connection, fixed buffers: answers each request head (counted by
/// its CRLFCRLF, which may straddle reads) with `RESPONSE`.
fn serve(mut s: TcpStream, stop: &AtomicBool) {
    // Pipelined answers are written one by one: without this, Nagle holds each second one for
    // the client's delayed ACK.
    let _ = s.set_nodelay(true);
    let mut heads = HeadEnds::default();
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        for &b in data {
            if heads.at(b) && s.write_all(RESPONSE).is_err() {
                return false;
            }
        }
        true
    });
}

#[test]
fn no_allocation_per_request_in_steady_state() {
    let server = PerConnection::start(serve);
    let addr = server.addr;
    let w = Workload::from_pages([
        ("a".to_string(), 1.0, vec!["/a.html", "/b.gif"]),
        ("b".to_string(), 2.0, vec!["/c.gif"]),
        (
            "c".to_string(),
            1.0,
            vec!["/a.html", "/b.gif", "/c.gif", "/d.gif"],
        ),
    ])
    .unwrap();
    assert_steady("keep-alive", &w, |stop| config(addr, stop));
    // `--pipeline` and `--pipeline 2` on pages of several files: each page's batch queued
    // behind the file being read in the connection's queue, made with it; with `--pipeline 2`,
    // the 4-file page's third and fourth requests are written and queued as responses end.
    for (name, depth) in [("pipelined pages", None), ("pipeline 2", Some(2))] {
        assert_steady(name, &w, |stop| BenchConfig {
            http: HttpMode::Pipeline,
            streams: depth,
            ..config(addr, stop)
        });
    }
    // `--pipeline 4` on one-file pages: each answered page's place taken by a new one.
    let lanes = Workload::from_pages([
        ("b".to_string(), 1.0, vec!["/c.gif"]),
        ("d".to_string(), 1.0, vec!["/d.gif"]),
    ])
    .unwrap();
    assert_steady("pipeline lanes", &lanes, |stop| BenchConfig {
        http: HttpMode::Pipeline,
        streams: Some(4),
        ..config(addr, stop)
    });
    server.stop();
}
