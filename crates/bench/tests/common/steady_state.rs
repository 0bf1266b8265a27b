//! The allocation tests' verdict: a short run and a long one, each as (allocations, requests),
//! make (almost) the same number of allocations, so nothing is allocated per request.

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
