//! The connection cap cannot be locked by connections that say nothing: at `max_connections` a
//! new client takes the place of the connection that has waited longest for a request, silent
//! since accept (plain, or past the TLS handshake) as much as idle between requests. And the cap
//! is the server's, not a share per thread.

use crate::h2_support;

use std::io::{BufReader, Write};
use std::net::TcpStream;

use crate::common::*;
use crate::tls_support::*;

const CAP: usize = 8;
const SILENT: usize = 10;
const NEW: usize = 10;

#[test]
fn silent_plain_connections_do_not_lock_the_cap() {
    let srv = TestServer::start(|c| {
        c.max_connections = CAP;
        c.defer_accept = false; // the kernel hands over connections that have sent nothing
    });
    let silent: Vec<TcpStream> = (0..SILENT).map(|_| connect(srv.addr)).collect();
    assert!(eventually(WAIT, || srv.stats().accepted == SILENT as u64));
    for i in 0..NEW {
        let r = exchange(srv.addr, &get("/a.txt"));
        assert_eq!(r.status, 200, "new client {i}");
    }
    let st = srv.stop();
    assert_eq!(st.rejected, 0, "{st:?}");
    assert!(st.idle_evictions >= (SILENT - CAP + 1) as u64, "{st:?}");
    assert_eq!(st.requests, NEW as u64);
    drop(silent);
}

#[test]
fn silent_tls_connections_past_the_handshake_do_not_lock_the_cap() {
    let certs = Certs::new(false);
    let srv = certs.serve(|c| c.max_connections = CAP);
    let client = certs.client(&both_versions());
    let mut silent = Vec::new();
    for _ in 0..SILENT {
        let mut s = tls_connect(srv.addr, &client);
        while s.conn.is_handshaking() {
            s.conn.complete_io(&mut s.sock).unwrap();
        }
        silent.push(s);
    }
    assert!(eventually(WAIT, || srv.stats().tls_handshakes >= CAP as u64));
    for i in 0..NEW {
        let mut s = tls_connect(srv.addr, &client);
        s.write_all(get("/a.txt").as_bytes()).unwrap();
        let r = read_response(&mut BufReader::new(&mut s), false).unwrap();
        assert_eq!(r.status, 200, "new client {i}");
    }
    let st = srv.stop();
    assert_eq!(st.rejected, 0, "{st:?}");
    assert_eq!(st.requests, NEW as u64);
    drop(silent);
}

/// HTTP/2 connections that sent their preface and SETTINGS and opened no stream wait for a
/// first request as much as silent ones: at the cap they make room too.
#[test]
fn h2_connections_without_a_stream_do_not_lock_the_cap() {
    let srv = TestServer::start(|c| c.max_connections = CAP);
    let mut held = Vec::new();
    for _ in 0..SILENT {
        let mut s = connect(srv.addr);
        s.write_all(&h2_support::raw::start()).unwrap();
        held.push(s);
    }
    assert!(eventually(WAIT, || srv.stats().accepted == SILENT as u64));
    for i in 0..NEW {
        let r = exchange(srv.addr, &get("/a.txt"));
        assert_eq!(r.status, 200, "new client {i}");
    }
    let st = srv.stop();
    assert_eq!(st.rejected, 0, "{st:?}");
    assert_eq!(st.requests, NEW as u64);
    drop(held);
}

/// Four threads, a cap of four: four connections each busy with a request are all held, however
/// the kernel spreads them over the threads (a share of one per thread refused most spreads),
/// and a fifth is refused, the server being full.
#[test]
fn the_cap_is_the_servers_not_a_threads_share() {
    let srv = TestServer::start(|c| {
        c.threads = 4;
        c.max_connections = 4;
        c.defer_accept = false;
    });
    let mut busy = Vec::new();
    for _ in 0..4 {
        let mut s = connect(srv.addr);
        s.write_all(b"GET /a.txt HTTP/1.1\r\n").unwrap(); // a head under way
        busy.push(s);
    }
    assert!(eventually(WAIT, || srv.stats().accepted == 4));
    let mut extra = connect(srv.addr);
    extra.write_all(get("/a.txt").as_bytes()).unwrap();
    assert!(closed_by_peer(&mut extra), "the fifth is refused");
    for s in busy {
        let mut w = s.try_clone().unwrap();
        w.write_all(b"Host: t\r\n\r\n").unwrap();
        let r = read_response(&mut BufReader::new(s), false).unwrap();
        assert_eq!(r.status, 200, "a held connection finished its request");
    }
    let st = srv.stop();
    assert_eq!((st.rejected, st.requests), (1, 4), "{st:?}");
}

/// HTTP/2 connections whose requests never end (HEADERS without END_STREAM, the body never
/// sent) are answered: with nothing left to send they wait for a request like any idle
/// connection, and at the cap a new client takes the place of one.
#[test]
fn h2_connections_with_unfinished_requests_do_not_lock_the_cap() {
    use crate::h2_support::raw;
    let srv = TestServer::start(|c| {
        c.max_connections = 2;
        c.threads = 1;
        c.defer_accept = false;
    });
    let mut held = Vec::new();
    for _ in 0..2 {
        let mut s = connect(srv.addr);
        let mut out = raw::start();
        raw::get(&mut out, 1, "/a.txt", 0);
        s.write_all(&out).unwrap();
        // The whole answer.
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !raw::parse(&got)
            .iter()
            .any(|f| f.0 == raw::DATA && f.2 == 1 && f.1 & raw::END_STREAM != 0)
        {
            let n = std::io::Read::read(&mut s, &mut buf).expect("read");
            assert!(n > 0, "closed: {:?}", raw::parse(&got));
            got.extend_from_slice(&buf[..n]);
        }
        held.push(s);
    }
    let r = exchange(srv.addr, &get("/a.txt"));
    assert_eq!(r.status, 200, "a new client is admitted");
    let st = srv.stop();
    assert_eq!(st.rejected, 0, "{st:?}");
    assert!(st.idle_evictions >= 1, "{st:?}");
    drop(held);
}
