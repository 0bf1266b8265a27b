//! Client and server in one process through in-memory queues: every request answered with its
//! own bytes, over several connections and streams, and what each side allocates per request.

mod common;

use common::memory::{run, Certs, BODY_LEN};
use test_support::alloc::{allocations_on_this_thread, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn every_request_is_answered_with_its_own_bytes() {
    let certs = Certs::new();
    // 3 connections x 10 streams: streams interleave on each connection.
    let out = run(&certs, 300, 3, 10, allocations_on_this_thread);
    assert_eq!(out.answered, 300, "{out:?}");
    assert_eq!(out.wrong, 0, "{out:?}");
    assert_eq!(out.body_bytes, 300 * BODY_LEN as u64, "{out:?}");
}

#[test]
fn one_connection_one_stream_at_a_time() {
    let certs = Certs::new();
    let out = run(&certs, 50, 1, 1, allocations_on_this_thread);
    assert_eq!((out.answered, out.wrong), (50, 0), "{out:?}");
    assert_eq!(out.body_bytes, 50 * BODY_LEN as u64);
}

/// Allocations per request are bounded: what quiche allocates (stream state, buffers, the
/// decoded field list) does not grow with the run. A figure, not zero: see docs/http3.md.
#[test]
fn allocations_per_request_do_not_grow_with_the_run() {
    let certs = Certs::new();
    // This thread's allocations only: the file's other tests run beside this one on threads
    // of their own, and a count of the whole process could take theirs in. And the lowest of
    // three runs of each length: a loaded machine's late turns fire more acknowledgement and
    // loss timers, each a datagram and its allocations, so noise only ever adds (a CI run saw
    // the larger run at 36.3 against 22.8 a request).
    let lowest = |n: u64| {
        let mut best = (f64::MAX, f64::MAX);
        for _ in 0..3 {
            let o = run(&certs, n, 2, 10, allocations_on_this_thread);
            assert_eq!(o.wrong, 0, "{o:?}");
            best.0 = best.0.min(o.client.allocations as f64 / n as f64);
            best.1 = best.1.min(o.server.allocations as f64 / n as f64);
        }
        best
    };
    let (cs, ss) = lowest(200);
    let (cl, sl) = lowest(800);
    // The handshake's allocations spread over more requests: the larger run costs no more a
    // request, within a margin for the timing of acknowledgements.
    assert!(
        cl <= cs * 1.2 + 1.0,
        "client {cs:.1} then {cl:.1} a request"
    );
    assert!(
        sl <= ss * 1.2 + 1.0,
        "server {ss:.1} then {sl:.1} a request"
    );
}
