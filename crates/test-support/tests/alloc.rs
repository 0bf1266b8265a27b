//! The counting allocator counts what this thread allocates and leaves out excluded threads.

use test_support::alloc::{allocations, exclude_current_thread, Counting};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn counts_this_threads_allocations_and_not_an_excluded_threads() {
    let before = allocations();
    let v: Vec<Box<u64>> = (0..100).map(Box::new).collect();
    let counted = allocations() - before;
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
    let (n, seen_there) = other.join().unwrap();
    assert_eq!(n, 1000);
    // Other threads (the test harness's) may allocate meanwhile, but not a thousand times.
    assert!(
        seen_there < 100,
        "an excluded thread's 1001 allocations were counted: {seen_there}"
    );
}
