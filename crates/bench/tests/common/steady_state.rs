//! The allocation tests' measure and verdict: a run as (allocations, requests), and a short run
//! and a long one that make (almost) the same number of allocations, so that nothing is
//! allocated per request.

#![allow(dead_code)] // each test binary uses its own subset

use bench::{BenchConfig, Stop, Target, Workload};
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::time::Duration;
use test_support::alloc::allocations;

/// The allocation tests' run against `addr`: 4 Webchildren on 2 threads, bounded waits.
pub fn config(addr: SocketAddr, stop: Stop) -> BenchConfig {
    BenchConfig {
        concurrency: 4,
        threads: 2,
        stop,
        connect_timeout: Duration::from_secs(2),
        response_timeout: Duration::from_secs(2),
        ..BenchConfig::new(Target::http(addr))
    }
}

/// Requests the short run must make to be past its start: every Webchild connected and its
/// buffers grown to their size (50 each of `config`'s 4), so that what the long run allocates
/// beyond it is per request or per second, not the start it has and the short run had not.
pub const WARM_REQUESTS: u64 = 200;

/// Holds `w` to no allocation per request: a short run and a longer one (see [`short_and_long`]),
/// each `config` for its length (timed runs: their seconds are allocated before they start),
/// measured and held to each other by [`assert_no_allocation_per_request`].
///
/// A short run past [`WARM_REQUESTS`] can still hold a thread's start: on a machine at load 20 one
/// of the two threads may have made few of its requests yet, and meets a redirect, a page or a
/// buffer size for the first time in the long run (34 more allocations for 3,415 more requests,
/// seen once). So when the long run allocated more, it becomes the short one and a run twice as
/// long is held to it: allocations that stop growing as requests grow are a start that came
/// late; one per request (thousands more) fails either way.
pub fn assert_steady(name: &str, w: &Workload, config: impl Fn(Stop) -> BenchConfig) {
    let run = |ms| measure(&config(Stop::Duration(Duration::from_millis(ms))), w);
    let (short, (long, long_ms)) = short_and_long_ms(run);
    if long.0.saturating_sub(short.0) <= 16 {
        return assert_no_allocation_per_request(name, short, long);
    }
    println!("{name}: short {short:?}, long {long:?}: held again to a run twice as long");
    let mut ms = long_ms * 2;
    let mut longer = run(ms);
    while longer.1 < long.1 + 1000 && ms < 4 * long_ms {
        ms *= 2;
        longer = run(ms);
    }
    assert_no_allocation_per_request(name, long, longer);
}

/// A short run and a long one of `run` (milliseconds to (allocations, requests)). The short run
/// is 200 ms, doubled (up to 3.2 s) while it makes fewer than [`WARM_REQUESTS`]: on a busy
/// machine 200 ms may hold one request, before most Webchildren have connected. The long run is
/// 600 ms longer, the difference doubled (up to 2.4 s) while it is under the 1,000 requests
/// needed to tell.
pub fn short_and_long(run: impl Fn(u64) -> (u64, u64)) -> ((u64, u64), (u64, u64)) {
    let (short, (long, _)) = short_and_long_ms(run);
    (short, long)
}

/// [`short_and_long`], with the long run's length in milliseconds.
fn short_and_long_ms(run: impl Fn(u64) -> (u64, u64)) -> ((u64, u64), ((u64, u64), u64)) {
    let mut ms = 200;
    let mut short = run(ms);
    while short.1 < WARM_REQUESTS && ms < 3200 {
        ms *= 2;
        short = run(ms);
    }
    let mut extra = 600;
    let mut long = run(ms + extra);
    while long.1 < short.1 + 1000 && extra < 2400 {
        extra *= 2;
        long = run(ms + extra);
    }
    (short, (long, ms + extra))
}

/// One run of `config` on `w`, free of errors: the allocations it made (as the test binary's
/// counting allocator sees them) and its requests.
pub fn measure(config: &BenchConfig, w: &Workload) -> (u64, u64) {
    measure_stopped(config, w, &AtomicBool::new(false))
}

/// [`measure`], ended early if `stop` is set.
pub fn measure_stopped(config: &BenchConfig, w: &Workload, stop: &AtomicBool) -> (u64, u64) {
    let before = allocations();
    let r = bench::run(config, w, stop).unwrap();
    let counted = allocations() - before;
    assert_eq!(r.stats.errors.total(), 0, "{:?}", r.stats.errors);
    (counted, r.stats.requests)
}

/// Holds `long` to `short`: at least 1,000 more requests (else the difference says nothing),
/// and at most 16 more allocations, the long run's extra second of time series per thread (and
/// the merged result's). `name` says which run in the messages.
pub fn assert_no_allocation_per_request(name: &str, short: (u64, u64), long: (u64, u64)) {
    println!("{name}: short {short:?}, long {long:?} (allocations, requests)");
    assert!(
        long.1 >= short.1 + 1000,
        "{name}: too few requests to tell: {short:?} {long:?}"
    );
    let extra = long.0.saturating_sub(short.0);
    assert!(
        extra <= 16,
        "{name}: {extra} more allocations for {} more requests",
        long.1 - short.1
    );
}
