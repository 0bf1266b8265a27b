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

use bench::{BenchConfig, HttpMode, Workload};
use per_connection::{read_until_stopped, HeadEnds, PerConnection};
use std::io::Write;
use std::net::TcpStream;
use std::sync::atomic::AtomicBool;
use steady_state::{assert_steady, config};
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
    let mut heads = HeadEnds::default();
    let mut at = 0; // bytes of the request so far
    let mut answer = OK;
    read_until_stopped(&mut s, stop, &mut [0u8; 4096], |s, data| {
        for &b in data {
            if at == 5 {
                answer = match b {
                    b'r' => FOUND,
                    b'x' => AWAY,
                    _ => OK,
                };
            }
            at += 1;
            if heads.at(b) {
                at = 0;
                if s.write_all(answer).is_err() {
                    return false;
                }
            }
        }
        true
    });
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
        assert_steady(&format!("{http:?}"), &w, |stop| BenchConfig {
            http,
            redirect: 1,
            ..config(addr, stop)
        });
    }
    server.stop();
}
