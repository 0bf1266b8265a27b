//! An HTTP/2 connection in steady state allocates nothing per request in Rust: its stream slots,
//! request and response heads and buffers are reused, the frames go into the pooled output
//! queue. Counted with a global allocator over every thread of this binary (alone in it), while
//! the client side of the window allocates nothing either: its requests are prebuilt frames,
//! its responses are parsed in a fixed buffer. nghttp2's own allocations (its stream state, the
//! HPACK tables, each response's copied fields) go through the C allocator and are not counted.

mod common;
mod h2_support;

use std::io::Write;

use common::*;
use h2_support::raw;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Concurrent streams per round.
const BATCH: u32 = 10;

/// The paths asked in turn: a copied, a shared and a file body, a small file, and a 404 (a
/// head and an error page the responder writes per request).
const PATHS: [&str; 5] = ["/1k.bin", "/10k.bin", "/300k.bin", "/a.txt", "/missing"];

/// The frames of round `round`: `BATCH` GETs on the next stream ids, `PATHS` in turn.
fn batch(round: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..BATCH {
        let id = 1 + 2 * (round * BATCH + i);
        raw::get(
            &mut out,
            id,
            PATHS[i as usize % PATHS.len()],
            raw::END_STREAM,
        );
    }
    out
}

#[test]
fn steady_state_h2_requests_allocate_nothing() {
    let srv = TestServer::start(|c| c.revalidate_ms = 600_000);
    let rounds = 300;
    let frames: Vec<Vec<u8>> = (0..rounds).map(batch).collect();
    let mut s = connect(srv.addr);
    // The preface, stream windows of 16 MiB so no stream waits for a WINDOW_UPDATE.
    let mut start = raw::PREFACE.to_vec();
    raw::settings(&mut start, &[(4, 16 << 20)]);
    s.write_all(&start).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0;
    // Warm-up: every path cached, the slots, buffers and pool grown.
    for f in &frames[..100] {
        s.write_all(f).unwrap();
        h2_support::read_until_ended(&mut s, &mut buf, &mut have, BATCH);
    }
    let before = allocations();
    for f in &frames[100..] {
        s.write_all(f).unwrap();
        h2_support::read_until_ended(&mut s, &mut buf, &mut have, BATCH);
    }
    let during = allocations() - before;
    let stats = srv.stop();
    assert_eq!(stats.requests, u64::from(rounds * BATCH));
    let missing = BATCH / PATHS.len() as u32;
    assert_eq!(stats.status_4xx, u64::from(rounds * missing), "the 404s");
    assert_eq!(
        during,
        0,
        "{during} allocations for {} requests",
        (rounds - 100) * BATCH
    );
}
