//! A request proxied behind HTTP/2 in steady state (ten streams in flight on one connection,
//! the upstream's keep-alive connections pooled) allocates a fixed few objects in the proxy,
//! as one behind HTTP/1.1 does (`gateway_proxy_alloc.rs`): no access-log line when there is no
//! log, no box for the program's start, the stream's exchange and its output buffer reused
//! from the slot's last one, the body after the upstream's head taken where it was read, and
//! the request buffers of a burst larger than the few spares kept for it (each a zeroed 16 KiB
//! input buffer when made anew). Counted with a global allocator over every thread of this
//! binary (alone in it); the client allocates nothing in the window (prebuilt frames, a fixed
//! buffer). The upstream is flint serve itself serving a file, which allocates nothing.

mod common;
mod h2_support;

use std::io::Write;

use common::*;
use h2_support::raw;
use test_support::alloc::{allocations, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Concurrent streams per round: more than the spare request buffers a pool keeps at least.
const BATCH: u32 = 12;

/// Allocations per proxied stream: the upstream side's exchange (boxed, shared with CGI and
/// FastCGI) and the checked response head's field list, as over HTTP/1.1 (whose third, the
/// client side's exchange, an HTTP/2 stream reuses from its slot).
const PER_STREAM: u64 = 2;

/// The frames of round `round`: `BATCH` GETs of the proxied file on the next stream ids.
fn batch(round: u32) -> Vec<u8> {
    let mut out = Vec::new();
    for i in 0..BATCH {
        raw::get(
            &mut out,
            1 + 2 * (round * BATCH + i),
            "/api/1k.bin",
            raw::END_STREAM,
        );
    }
    out
}

#[test]
fn a_request_proxied_behind_http2_allocates_a_fixed_few_objects() {
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
    let (rounds, warm): (u32, usize) = (200, 100);
    let frames: Vec<Vec<u8>> = (0..rounds).map(batch).collect();
    let mut s = connect(srv.addr);
    // The preface, stream windows of 16 MiB so no stream waits for a WINDOW_UPDATE.
    let mut start = raw::PREFACE.to_vec();
    raw::settings(&mut start, &[(4, 16 << 20)]);
    s.write_all(&start).unwrap();
    let mut buf = vec![0u8; 1 << 20];
    let mut have = 0;
    // Warm-up: the upstream connections pooled, the slots, exchanges and buffers grown.
    for f in &frames[..warm] {
        s.write_all(f).unwrap();
        h2_support::read_until_ended(&mut s, &mut buf, &mut have, BATCH);
    }
    let before = allocations();
    for f in &frames[warm..] {
        s.write_all(f).unwrap();
        h2_support::read_until_ended(&mut s, &mut buf, &mut have, BATCH);
    }
    let during = allocations() - before;
    drop(s);
    let streams = u64::from((rounds - warm as u32) * BATCH);
    let st = srv.stop();
    assert_eq!(st.proxy_requests, u64::from(rounds * BATCH));
    assert_eq!(
        st.status_2xx,
        u64::from(rounds * BATCH),
        "every stream answered 200"
    );
    // The upstream connections are pooled: a round's streams open at most one each, the
    // first time, and the later rounds reuse them (a reconnect per stream would also show as
    // allocations, but less plainly).
    assert!(
        (1..=u64::from(BATCH)).contains(&st.proxy_connects),
        "{} upstream connections for {} proxied streams in rounds of {BATCH}: not pooled",
        st.proxy_connects,
        rounds * BATCH
    );
    assert!(
        during <= PER_STREAM * streams,
        "{during} allocations for {streams} proxied streams: over {PER_STREAM} each"
    );
    assert_eq!(upstream.stop().requests, u64::from(rounds * BATCH));
}
