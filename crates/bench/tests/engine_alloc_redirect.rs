//! `--redirect N` allocates on first sight only: the first time a thread meets a redirect it
//! builds the target's request (or notes why it is not followed), and from then on meeting it
//! again allocates nothing. A short run
//! and a run with many times its requests make (almost) the same number of allocations.
//!
//! A counting global allocator sees every allocation in this test binary, so the server here
//! allocates nothing per request, and this file holds a single test.

#[path = "common/per_connection.rs"]
mod per_connection;
#[path = "common/steady_state.rs"]
mod steady_state;

use bench::{BenchConfig, HttpMode, Stop, Target, Workload};
use per_connection::PerConnection;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use steady_state::{assert_no_allocation_per_request, measure};
use test_support::alloc::Counting;

#[global_allocator]
static GLOBAL: Counting = Counting;

const FOUND: &[u8] = b"HTTP/1.1 302 Found\r\nLocation: a.html\r\nContent-Length: 0\r\n\r\n";
const AWAY: &[u8] =
    b"HTTP/1.1 302 Found\r\nLocation: http://flint.invalid/\r\nContent-Length: 0\r\n\r\n";
const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";

/// Keep-alive, fixed buffers: a request for `/r...` is answered 302 to the relative `a.html`,
/// one for `/x...` 302 to another origin (not followed), any other 200. A request's target is
/// read from its first bytes (`GET /r`).
fn serve(mut s: TcpStream, stop: &AtomicBool) {
    // Pipelined answers are written one by one: without this, Nagle holds each second one for
    // the client's delayed ACK.
    let _ = s.set_nodelay(true);
    let mut buf = [0u8; 4096];
    let mut matched = 0; // bytes of "\r\n\r\n" matched so far
    let mut at = 0; // bytes of the request so far
    let mut answer = OK;
    while !stop.load(Ordering::Relaxed) {
        let n = match s.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(_) => return,
        };
        for &b in &buf[..n] {
            if at == 5 {
                answer = match b {
                    b'r' => FOUND,
                    b'x' => AWAY,
                    _ => OK,
                };
            }
            at += 1;
            let want = b"\r\n\r\n"[matched];
            matched = if b == want {
                matched + 1
            } else {
                usize::from(b == b'\r')
            };
            if matched == 4 {
                (matched, at) = (0, 0);
                if s.write_all(answer).is_err() {
                    return;
                }
            }
        }
    }
}

fn config(addr: SocketAddr, http: HttpMode, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: 4,
        threads: 2,
        stop,
        http,
        redirect: 1,
        connect_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(2),
        ..BenchConfig::new(Target::http(addr))
    }
}

#[test]
fn following_a_redirect_allocates_nothing_per_request() {
    let server = PerConnection::start(serve);
    let addr = server.addr;
    let w = Workload::from_pages([
        ("a".to_string(), 1.0, vec!["/r1", "/b.gif"]),
        ("b".to_string(), 2.0, vec!["/r2"]),
        ("c".to_string(), 1.0, vec!["/x"]),
    ])
    .unwrap();
    for http in [HttpMode::KeepAlive, HttpMode::Pipeline] {
        let run = |ms| {
            measure(
                &config(addr, http, Stop::Duration(Duration::from_millis(ms))),
                &w,
            )
        };
        let (short, long) = (run(200), run(800));
        assert_no_allocation_per_request(&format!("{http:?}"), short, long);
    }
    server.stop();
}
