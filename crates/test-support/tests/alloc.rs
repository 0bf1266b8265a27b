//! The counting allocator counts what this thread allocates and leaves out excluded threads.

use test_support::alloc::{
    allocations, allocations_on_this_thread, exclude_current_thread, live_bytes_on_this_thread,
    Counting,
};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn counts_this_threads_allocations_and_not_an_excluded_threads() {
    let (before, mine) = (allocations(), allocations_on_this_thread());
    let v: Vec<Box<u64>> = (0..100).map(Box::new).collect();
    let counted = allocations() - before;
    let counted_here = allocations_on_this_thread() - mine;
    assert!(
        (101..=110).contains(&counted_here),
        "on this thread: {counted_here}"
    );
    assert!(
        (101..=110).contains(&counted),
        "100 boxes and a vector (grown a few times at most): {counted}"
    );
    assert_eq!(v.iter().map(|b| **b).sum::<u64>(), 4950);

    let other = std::thread::spawn(|| {
        exclude_current_thread();
        let before = allocations();
        let v: Vec<Box<u64>> = (0..1000).map(Box::new).collect();
        (v.len(), allocations() - before)
    });
    let here = allocations_on_this_thread();
    let (n, seen_there) = other.join().unwrap();
    // join may allocate a little on this thread; the other thread's thousand are not here.
    assert!(allocations_on_this_thread() - here < 10);
    assert_eq!(n, 1000);
    // Other threads (the test harness's) may allocate meanwhile, but not a thousand times.
    assert!(
        seen_there < 100,
        "an excluded thread's 1001 allocations were counted: {seen_there}"
    );
}

#[test]
fn keeps_the_bytes_this_thread_holds() {
    let before = live_bytes_on_this_thread();
    let mut v: Vec<u8> = Vec::with_capacity(100_000);
    assert_eq!(live_bytes_on_this_thread() - before, 100_000);
    v.reserve_exact(200_000);
    assert_eq!(live_bytes_on_this_thread() - before, 200_000);
    drop(v);
    assert_eq!(live_bytes_on_this_thread(), before);
    // Another thread's bytes are not this one's.
    let other = std::thread::spawn(|| {
        let before = live_bytes_on_this_thread();
        let v = std::hint::black_box(vec![1u8; 300_000]);
        let held = live_bytes_on_this_thread() - before;
        drop(v);
        held
    });
    let here = live_bytes_on_this_thread();
    let there = other.join().unwrap();
    assert_eq!(there, 300_000);
    assert!((live_bytes_on_this_thread() - here).abs() < 10_000);
}
