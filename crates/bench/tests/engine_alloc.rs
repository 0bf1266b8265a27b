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

use bench::{BenchConfig, Stop, Target, Workload};
use per_connection::PerConnection;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use steady_state::{assert_no_allocation_per_request, measure};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A response with a 100-byte body.
const RESPONSE: &[u8; 140] = b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n\
    0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789";

/// Keep-alive, one thread per connection, fixed buffers: answers each request head (counted by
/// its CRLFCRLF, which may straddle reads) with `RESPONSE`.
fn serve(mut s: TcpStream, stop: &AtomicBool) {
    let mut buf = [0u8; 4096];
    let mut matched = 0; // bytes of "\r\n\r\n" matched so far
    while !stop.load(Ordering::Relaxed) {
        let n = match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        };
        for &b in &buf[..n] {
            let want = b"\r\n\r\n"[matched];
            matched = if b == want {
                matched + 1
            } else {
                usize::from(b == b'\r')
            };
            if matched == 4 {
                matched = 0;
                if s.write_all(RESPONSE).is_err() {
                    return;
                }
            }
        }
    }
}

fn config(addr: SocketAddr, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: 4,
        threads: 2,
        stop,
        connect_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(2),
        ..BenchConfig::new(Target::http(addr))
    }
}

#[test]
fn no_allocation_per_request_in_steady_state() {
    let server = PerConnection::start(serve);
    let addr = server.addr;
    let w = Workload::from_pages([
        ("a".to_string(), 1.0, vec!["/a.html", "/b.gif"]),
        ("b".to_string(), 2.0, vec!["/c.gif"]),
    ])
    .unwrap();
    // Timed runs: their seconds are allocated before they start (a -n run adds one a second).
    let short = measure(
        &config(addr, Stop::Duration(Duration::from_millis(200))),
        &w,
    );
    let long = measure(
        &config(addr, Stop::Duration(Duration::from_millis(800))),
        &w,
    );
    server.stop();
    assert_no_allocation_per_request("keep-alive", short, long);
}
