//! A global allocator that counts: what a test binary allocates, less the threads that leave
//! themselves out.
//!
//! ```
//! use test_support::alloc::{allocations, Counting};
//!
//! #[global_allocator]
//! static GLOBAL: Counting = Counting;
//!
//! fn main() {
//!     let before = allocations();
//!     let boxed = Box::new(7u64);
//!     assert!(allocations() > before, "{boxed}");
//! }
//! ```
//!
//! Counting touches an atomic and a const-initialised thread-local `Cell` (no allocation, no
//! destructor), so it cannot recurse into the allocator or change what it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static EXCLUDED: Cell<bool> = const { Cell::new(false) };
}

/// The system allocator, counting each allocation (`alloc`, `alloc_zeroed` and `realloc`; a
/// `realloc` may move, so it counts as one) made on a thread that has not left itself out.
pub struct Counting;

/// Allocations counted so far in this process.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// From now on, this thread's allocations are not counted (a test's own server or client, whose
/// allocations are not the code under test's).
pub fn exclude_current_thread() {
    EXCLUDED.with(|e| e.set(true));
}

fn count() {
    // try_with: a thread being torn down has no thread-locals left; it is counted then.
    if !EXCLUDED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// GlobalAlloc's contract; the only additions are `count` (an atomic add and a read of a
// const-initialised thread-local Cell, which allocate nothing and never touch the memory handed
// out). Exercised by tests/alloc.rs, which installs it as its global allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout, passed on as GlobalAlloc::alloc requires.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for alloc.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: ptr was allocated by System (every allocation here goes there) with layout.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as for realloc.
        unsafe { System.dealloc(ptr, layout) }
    }
}
