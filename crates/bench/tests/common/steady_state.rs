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

/// Holds `w` to no allocation per request: a run of 200 ms and one of 800 ms, each `config` for
/// its length (timed runs: their seconds are allocated before they start), measured and held to
/// each other by [`assert_no_allocation_per_request`].
pub fn assert_steady(name: &str, w: &Workload, config: impl Fn(Stop) -> BenchConfig) {
    let run = |ms| measure(&config(Stop::Duration(Duration::from_millis(ms))), w);
    let short = run(200);
    let long = run(800);
    assert_no_allocation_per_request(name, short, long);
}

/// One run of `config` on `w`, free of errors: the allocations it made (as the test binary's
/// counting allocator sees them) and its requests.
pub fn measure(config: &BenchConfig, w: &Workload) -> (u64, u64) {
    let before = allocations();
    let r = bench::run(config, w, &AtomicBool::new(false)).unwrap();
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
