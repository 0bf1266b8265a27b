//! What an idle HTTP/2 connection costs the server in heap: 1,000 h2c connections held after
//! the preface and SETTINGS exchange, then again after one request each (and after uploads in
//! many small DATA frames, which must keep nothing), the bytes the C heap has in use (Rust's
//! allocations and nghttp2's both come from it) counted before and after.
//! By count, not time: each connection's exchange is finished (a PING answered after the
//! SETTINGS ACK) before the heap is read.

mod common;
mod h2_support;

use std::io::{Read, Write};
use std::net::TcpStream;

use common::*;
use h2_support::raw;

/// Connections held.
const CONNS: usize = 1_000;

/// Heap bytes an idle connection may hold, after the SETTINGS exchange or after a request.
/// Measured: 6.7 KB after SETTINGS, 8.6 KB after a request (nghttp2's session, its HPACK tables
/// and the responses' fields its encoder indexed, the connection's own state), down from 23.9 KB
/// and 27.9 KB when each session kept a 16 KiB frame buffer and each connection its stream
/// slots and response head buffers while idle.
const IDLE_BOUND: usize = 10 * 1024;

/// Bytes the C heap has handed out and not taken back (arenas and mmap'd blocks, all threads).
fn heap_in_use() -> usize {
    // SAFETY: mallinfo2 only reads glibc's counters; it takes no pointer and has no precondition.
    let info = unsafe { libc::mallinfo2() };
    info.uordblks + info.hblkhd
}

/// Reads frames from `s` into `buf` until one of `kind` with `flags` arrives.
fn read_until_frame(s: &mut TcpStream, buf: &mut [u8], kind: u8, flags: u8) {
    let mut have = 0;
    loop {
        let mut at = 0;
        while have >= at + 9 {
            let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
            if have < at + 9 + len {
                break;
            }
            if buf[at + 3] == kind && buf[at + 4] & flags == flags {
                return;
            }
            at += 9 + len;
        }
        buf.copy_within(at..have, 0);
        have -= at;
        let n = s.read(&mut buf[have..]).expect("read");
        assert!(n > 0, "closed by the server");
        have += n;
    }
}

/// A PING answered (after `ack_settings`, the server's SETTINGS acknowledged first): the
/// server has read all we sent.
fn settle(s: &mut TcpStream, buf: &mut [u8], out: &mut Vec<u8>, ack_settings: bool) {
    out.clear();
    if ack_settings {
        raw::frame(out, raw::SETTINGS, 1, 0, &[]);
    }
    raw::frame(out, raw::PING, 0, 0, &[7; 8]);
    s.write_all(out).unwrap();
    read_until_frame(s, buf, raw::PING, 1);
}

/// Heap bytes a connection may keep for having been sent many small DATA frames rather than one.
const FRAMES_BOUND: usize = 1024;

/// POSTs on streams `ids`, their `len`-byte bodies in one-byte DATA frames, the streams taking
/// turns.
fn alternating_uploads(ids: [u32; 2], len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for id in ids {
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        raw::literal(&mut block, 4, b"/a.txt");
        raw::literal(&mut block, 1, b"t");
        raw::literal_name(&mut block, b"content-length", len.to_string().as_bytes());
        raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, id, &block);
    }
    for k in 0..len {
        let flags = if k + 1 == len { raw::END_STREAM } else { 0 };
        for id in ids {
            raw::frame(&mut out, raw::DATA, flags, id, b"u");
        }
    }
    out
}

#[test]
fn an_idle_h2c_connection_holds_a_few_kib() {
    let srv = TestServer::start(|_| {});
    let mut buf = vec![0u8; 1 << 16];
    let mut out = Vec::with_capacity(1024);
    let mut request = Vec::new();
    raw::get(&mut request, 1, "/a.txt", raw::END_STREAM);
    // Warm-up: one connection through both phases, so the loop's pools and caches have grown.
    {
        let mut s = connect(srv.addr);
        s.write_all(&raw::start()).unwrap();
        read_until_frame(&mut s, &mut buf, raw::SETTINGS, 0);
        settle(&mut s, &mut buf, &mut out, true);
        s.write_all(&request).unwrap();
        read_until_frame(&mut s, &mut buf, raw::DATA, raw::END_STREAM);
    }
    let mut conns = Vec::with_capacity(CONNS);
    let before = heap_in_use();
    for _ in 0..CONNS {
        let mut s = connect(srv.addr);
        s.write_all(&raw::start()).unwrap();
        read_until_frame(&mut s, &mut buf, raw::SETTINGS, 0);
        settle(&mut s, &mut buf, &mut out, true);
        conns.push(s);
    }
    let after_settings = (heap_in_use().saturating_sub(before)) / CONNS;
    for s in &mut conns {
        s.write_all(&request).unwrap();
        read_until_frame(s, &mut buf, raw::DATA, raw::END_STREAM);
        settle(s, &mut buf, &mut out, false);
    }
    let after_request = (heap_in_use().saturating_sub(before)) / CONNS;
    // Two uploads the server drops, of one byte each, then two of 1,000 bytes in one-byte DATA
    // frames taking turns between the streams: what the server does for each frame keeps
    // nothing once they are read.
    let small = alternating_uploads([3, 5], 1);
    let many = alternating_uploads([7, 9], 1_000);
    let mut after = [0; 2];
    for (k, uploads) in [small, many].iter().enumerate() {
        for s in &mut conns {
            s.write_all(uploads).unwrap();
            settle(s, &mut buf, &mut out, false);
        }
        after[k] = (heap_in_use().saturating_sub(before)) / CONNS;
    }
    let frames_cost = after[1].saturating_sub(after[0]);
    eprintln!(
        "heap per idle h2c connection: {after_settings} B after SETTINGS, \
         {after_request} B after one request, {} B after two small uploads, {frames_cost} B more \
         after two in 2,000 DATA frames ({CONNS} connections)",
        after[0]
    );
    let stats = srv.stats();
    assert_eq!(stats.requests, 5 * CONNS as u64 + 1);
    assert!(
        after_settings <= IDLE_BOUND && after_request <= IDLE_BOUND,
        "{after_settings} B after SETTINGS, {after_request} B after a request (bound {IDLE_BOUND})"
    );
    assert!(
        frames_cost <= FRAMES_BOUND,
        "{frames_cost} B kept for 2,000 DATA frames (bound {FRAMES_BOUND})"
    );
    drop(conns);
    srv.stop();
}
