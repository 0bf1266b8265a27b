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
//! It also keeps the bytes each thread holds (`live_bytes_on_this_thread`). Counting touches an
//! atomic and const-initialised thread-local `Cell`s (no allocation, no
//! destructor), so it cannot recurse into the allocator or change what it counts.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    // Const-initialised and without destructors: reading them never allocates or registers.
    static EXCLUDED: Cell<bool> = const { Cell::new(false) };
    static THIS_THREAD: Cell<u64> = const { Cell::new(0) };
    // Bytes allocated less bytes freed on this thread (what a thread frees that another
    // allocated counts against it: a test reads it where one thread does all the work).
    static LIVE_HERE: Cell<i64> = const { Cell::new(0) };
}

/// The system allocator, counting each allocation (`alloc`, `alloc_zeroed` and `realloc`; a
/// `realloc` may move, so it counts as one) made on a thread that has not left itself out.
pub struct Counting;

/// Allocations counted so far in this process.
pub fn allocations() -> u64 {
    ALLOCATIONS.load(Ordering::SeqCst)
}

/// Allocations made on the calling thread so far, excluded or not (for a test that runs the code
/// under test on its own thread, beside a harness that allocates on others).
pub fn allocations_on_this_thread() -> u64 {
    THIS_THREAD.with(Cell::get)
}

/// From now on, this thread's allocations are not counted (a test's own server or client, whose
/// allocations are not the code under test's).
pub fn exclude_current_thread() {
    EXCLUDED.with(|e| e.set(true));
}

/// Bytes allocated on the calling thread and not yet freed there (what a test that runs the code
/// under test on one thread reads to see whether what it holds grows; freeing on this thread
/// what another allocated lowers it, so it is a difference between two reads, not a size).
pub fn live_bytes_on_this_thread() -> i64 {
    LIVE_HERE.with(Cell::get)
}

fn live(delta: i64) {
    let _ = LIVE_HERE.try_with(|c| c.set(c.get() + delta));
}

fn count() {
    // try_with: a thread being torn down has no thread-locals left; it is counted then.
    let _ = THIS_THREAD.try_with(|c| c.set(c.get() + 1));
    if !EXCLUDED.try_with(Cell::get).unwrap_or(false) {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    }
}

// SAFETY: every method forwards its arguments unchanged to the system allocator, which upholds
// GlobalAlloc's contract; the only additions are `count` and `live` (an atomic add and reads and
// writes of const-initialised thread-local Cells, which allocate nothing and never touch the
// memory handed out). Exercised by tests/alloc.rs, which installs it as its global allocator.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's layout, passed on as GlobalAlloc::alloc requires.
        let p = unsafe { System.alloc(layout) };
        // A failed allocation holds nothing.
        if !p.is_null() {
            live(layout.size() as i64);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: as for alloc.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            live(layout.size() as i64);
        }
        p
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: ptr was allocated by System (every allocation here goes there) with layout.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        // A failed realloc leaves the old block as it was.
        if !p.is_null() {
            live(new_size as i64 - layout.size() as i64);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        live(-(layout.size() as i64));
        // SAFETY: as for realloc.
        unsafe { System.dealloc(ptr, layout) }
    }
}
