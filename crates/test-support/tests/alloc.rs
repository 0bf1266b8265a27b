//! The counting allocator counts what this thread allocates and leaves out excluded threads.

use test_support::alloc::{
    allocations, allocations_on_this_thread, exclude_current_thread, live_bytes_on_this_thread,
    Counting,
};

#[global_allocator]
static GLOBAL: Counting = Counting;

#[test]
fn counts_this_threads_allocations_and_not_an_excluded_threads() {
    // The other tests of this binary run beside this one on threads of their own, and the
    // harness allocates to start them: the process-wide count moves by theirs too, at any time.
    // So the exact figure is this thread's, and the process-wide count holds at least that.
    let (before, mine) = (allocations(), allocations_on_this_thread());
    let v: Vec<Box<u64>> = (0..100).map(Box::new).collect();
    let counted = allocations() - before;
    let counted_here = allocations_on_this_thread() - mine;
    assert!(
        (101..=110).contains(&counted_here),
        "100 boxes and a vector (grown a few times at most): {counted_here}"
    );
    assert!(
        counted >= counted_here,
        "this thread's {counted_here} allocations, counted in the process: {counted}"
    );
    assert_eq!(v.iter().map(|b| **b).sum::<u64>(), 4950);

    let other = std::thread::spawn(|| {
        exclude_current_thread();
        let (before, mine) = (allocations(), allocations_on_this_thread());
        let v: Vec<Box<u64>> = (0..1000).map(Box::new).collect();
        let made = allocations_on_this_thread() - mine;
        (v.len(), made, allocations() - before)
    });
    let here = allocations_on_this_thread();
    let (n, made_there, seen_there) = other.join().unwrap();
    // join may allocate a little on this thread; the other thread's thousand are not here.
    assert!(allocations_on_this_thread() - here < 10);
    assert_eq!(n, 1000);
    assert!((1001..=1010).contains(&made_there), "{made_there}");
    // Counted, that thread's allocations alone would have moved the process-wide count by
    // `made_there`; what moved it meanwhile is the other threads' (a few dozen in this whole
    // binary, far below a thousand).
    assert!(
        seen_there < made_there,
        "an excluded thread's {made_there} allocations were counted: {seen_there}"
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
