//! Inputs placed so that their last byte is the last readable byte of the address space around it.
//!
//! Safe Rust cannot index past a slice, but httparse scans with SIMD loads through raw pointers,
//! and a parser that reads one byte beyond a partial buffer would read stale bytes of an earlier
//! request in a real server. Copying each input so that it ends right before an inaccessible
//! page turns any such read into a SIGSEGV, which the fuzzer reports as a crash.

use std::cell::RefCell;
use std::ffi::c_void;
use std::ptr::NonNull;

use rustix::mm::{mmap_anonymous, mprotect, MapFlags, MprotectFlags, ProtFlags};

/// Largest input placed against the guard; longer ones are checked unguarded (the fuzz runs cap
/// inputs well below this, see `scripts/fuzz`).
pub const CAPACITY: usize = 1 << 20;

/// `CAPACITY` readable bytes followed by one page that is neither readable nor writable.
struct Guarded {
    base: NonNull<u8>,
}

impl Guarded {
    fn new() -> Guarded {
        let page = rustix::param::page_size();
        assert_eq!(
            CAPACITY % page,
            0,
            "CAPACITY is a multiple of the page size"
        );
        let readable = CAPACITY;
        // SAFETY: a fresh anonymous private mapping at an address of the kernel's choosing;
        // it aliases nothing, and nothing else knows of it.
        let base = unsafe {
            mmap_anonymous(
                std::ptr::null_mut(),
                readable + page,
                ProtFlags::empty(),
                MapFlags::PRIVATE,
            )
        }
        .expect("mmap of the guarded input buffer");
        // SAFETY: the first `readable` bytes of the mapping made just above; the page after them
        // stays PROT_NONE, which is the point.
        unsafe { mprotect(base, readable, MprotectFlags::READ | MprotectFlags::WRITE) }
            .expect("mprotect of the guarded input buffer");
        Guarded {
            base: NonNull::new(base.cast::<u8>()).expect("mmap returned a non-null address"),
        }
    }
}

thread_local! {
    static BUFFER: RefCell<Option<Guarded>> = const { RefCell::new(None) };
}

/// Calls `f` with a copy of `input` whose end touches the guard page. Reentrant calls and inputs
/// longer than [`CAPACITY`] get `input` itself.
pub fn with_guarded<R>(input: &[u8], f: impl FnOnce(&[u8]) -> R) -> R {
    if input.len() > CAPACITY {
        return f(input);
    }
    BUFFER.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return f(input);
        };
        let buf = slot.get_or_insert_with(Guarded::new);
        let start = CAPACITY - input.len();
        // SAFETY: `start..CAPACITY` lies inside the readable part of the mapping, which lives as
        // long as the thread and is only reached through this borrowed `RefCell`, so no other
        // reference to these bytes exists while `copy` is alive (the `RefMut` is held until `f`
        // returns).
        let copy = unsafe {
            let dst = std::slice::from_raw_parts_mut(buf.base.as_ptr().add(start), input.len());
            dst.copy_from_slice(input);
            &*dst
        };
        f(copy)
    })
}

/// The address one past the readable part: where every guarded copy ends. For the test that
/// proves the guard page faults.
pub fn guard_address() -> *const u8 {
    BUFFER.with(|cell| {
        let mut slot = cell.borrow_mut();
        let buf = slot.get_or_insert_with(Guarded::new);
        // SAFETY: one past the end of the readable part, still inside the same mapping (the
        // guard page), so the offset computation stays in bounds.
        unsafe { buf.base.as_ptr().add(CAPACITY) as *const u8 }
    })
}

impl Drop for Guarded {
    fn drop(&mut self) {
        let page = rustix::param::page_size();
        // SAFETY: the whole mapping made in `new`; no reference into it outlives the `RefCell`
        // borrow that ends before the thread-local is destroyed.
        let _ = unsafe { rustix::mm::munmap(self.base.as_ptr().cast::<c_void>(), CAPACITY + page) };
    }
}
