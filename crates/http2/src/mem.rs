//! nghttp2's allocator: the C library's `malloc`, with the small blocks nghttp2 frees kept in a
//! per-thread cache for the next stream.
//!
//! Why: nghttp2 allocates several small blocks for every stream (the stream's state, the queued
//! HEADERS item and its copied fields, the received fields' buffers) and frees them when the
//! stream closes. A server answering a hundred streams per connection at once frees them in
//! bursts, past what glibc keeps in its per-thread cache (seven blocks a size), so each burst
//! takes glibc's slower paths (`_int_free`, `_int_malloc`): about 6% of a server's CPU per 1 KiB
//! request in profiles. Here a freed small block goes on a free list of its size class, and the
//! next allocation of that class takes it back: a few instructions each way.
//!
//! Every block carries a 16-byte header before the address nghttp2 sees (keeping malloc's
//! 16-byte alignment), holding its size class, or `LARGE` for blocks past the largest class,
//! which go straight to `malloc`/`free`. A cached block is a C-heap block like any other: it may
//! be freed on any thread, and the cache is bounded (`CACHE_BYTES` a thread), freeing to the C
//! library past it and when the thread ends. Nothing here goes through Rust's allocator.
//!
//! A server session's frame buffer is the thread's: nghttp2 gives every session a buffer of one
//! frame (`NGHTTP2_FRAMEBUF_CHUNKLEN`, 16,394 bytes) for its life, where it packs each frame it
//! sends, but a frame's bytes live there only until `Session::send` has handed them over:
//! `Session` takes every byte nghttp2 offers (what the handler cannot take yet waits in the
//! session's own `held`) and writes a DATA frame's header from the frame, not from the buffer.
//! So the sessions of one thread (`Session` is not `Send`) pack their frames in one buffer in
//! turn, as nginx reads every connection's frames into one buffer per worker, and an idle
//! connection holds no frame buffer. `with_shared_frame_buffer` marks the session being
//! created; its buffer's block is the thread's, and freeing it frees nothing.

use std::cell::Cell;
use std::ffi::c_void;
use std::ptr;

use libnghttp2_sys as sys;

/// Bytes before each block: its size class (malloc aligns to 16; so do we).
const HEADER: usize = 16;
/// Size classes are multiples of this, up to `CLASSES` of them.
const STEP: usize = 64;
const CLASSES: usize = 16;
/// The class mark of a block past the largest class (not cached).
const LARGE: usize = usize::MAX;
/// Bytes one thread's cache may hold (headers included).
const CACHE_BYTES: usize = 512 * 1024;
/// The class mark of the thread's shared frame buffer (never freed).
const SHARED: usize = usize::MAX - 1;
/// nghttp2's frame buffer: a frame header, a pad length byte and the largest payload
/// (`NGHTTP2_FRAMEBUF_CHUNKLEN` = 9 + 1 + 16,384), the one block of that size a session
/// allocates while it is created.
const FRAMEBUF_CHUNKLEN: usize = 9 + 1 + 16_384;

/// One thread's free lists: each a chain through the blocks' first word after the header.
struct Cache {
    heads: [Cell<*mut u8>; CLASSES],
    bytes: Cell<usize>,
}

impl Drop for Cache {
    fn drop(&mut self) {
        for head in &self.heads {
            let mut block = head.replace(ptr::null_mut());
            while !block.is_null() {
                // SAFETY: every block on a list came from libc::malloc (in `alloc`) with room
                // for a header and the next pointer, written by `release` when it was pushed;
                // it is unlinked before it is freed, so each is freed once.
                unsafe {
                    let next = *(block.add(HEADER) as *mut *mut u8);
                    libc::free(block as *mut c_void);
                    block = next;
                }
            }
        }
        self.bytes.set(0);
    }
}

thread_local! {
    static CACHE: Cache = const {
        Cache {
            heads: [const { Cell::new(ptr::null_mut()) }; CLASSES],
            bytes: Cell::new(0),
        }
    };
}

thread_local! {
    /// The session being created takes the thread's frame buffer (`with_shared_frame_buffer`).
    static SHARE_FRAMEBUF: Cell<bool> = const { Cell::new(false) };
    /// The thread's frame buffer: its address after the header, null until a session takes it.
    /// It lives as long as the thread's sessions may (until the process ends): 16 KiB a thread.
    static FRAMEBUF: Cell<*mut u8> = const { Cell::new(ptr::null_mut()) };
}

thread_local! {
    /// A server session of this thread is in `nghttp2_session_send`: its frame is in the
    /// thread's frame buffer until its handler has taken it.
    static SENDING: Cell<bool> = const { Cell::new(false) };
}

/// Marks the thread's frame buffer in use while a server session sends; `None` when another
/// server session of this thread is sending already (a handler's `write` that drives another
/// server session's `send`): packing that session's frame would overwrite the one being
/// handed over. Dropping the mark frees the buffer, on a panic too.
pub(crate) fn frame_buffer_in_use() -> Option<SendingMark> {
    SENDING.with(|s| (!s.replace(true)).then_some(SendingMark))
}

/// See [`frame_buffer_in_use`].
pub(crate) struct SendingMark;

impl Drop for SendingMark {
    fn drop(&mut self) {
        SENDING.with(|s| s.set(false));
    }
}

/// Runs `create` (one session's creation) with its frame buffer taken from the thread's.
pub(crate) fn with_shared_frame_buffer<R>(create: impl FnOnce() -> R) -> R {
    SHARE_FRAMEBUF.with(|s| s.set(true));
    let r = create();
    SHARE_FRAMEBUF.with(|s| s.set(false));
    r
}

/// The thread's frame buffer, if the session being created asks for it now (once).
fn shared_frame_buffer(size: usize) -> Option<*mut u8> {
    if size != FRAMEBUF_CHUNKLEN || !SHARE_FRAMEBUF.try_with(|s| s.replace(false)).ok()? {
        return None;
    }
    FRAMEBUF
        .try_with(|f| {
            if f.get().is_null() {
                // SAFETY: malloc of a nonzero size; the header is written only if it
                // succeeded, within the block.
                unsafe {
                    let block = libc::malloc(HEADER + FRAMEBUF_CHUNKLEN) as *mut u8;
                    if block.is_null() {
                        return ptr::null_mut();
                    }
                    *(block as *mut usize) = SHARED;
                    f.set(block.add(HEADER));
                }
            }
            f.get()
        })
        .ok()
        .filter(|p| !p.is_null())
}

/// The class of a request for `size` bytes (`LARGE` past the largest).
fn class_of(size: usize) -> usize {
    if size <= STEP * CLASSES {
        size.max(1).div_ceil(STEP) - 1
    } else {
        LARGE
    }
}

/// The bytes a block of `class` spans, header included.
fn block_size(class: usize) -> usize {
    HEADER + (class + 1) * STEP
}

/// A block for `size` bytes: its address after the header, or null if out of memory.
fn alloc(size: usize) -> *mut u8 {
    if let Some(shared) = shared_frame_buffer(size) {
        return shared;
    }
    let class = class_of(size);
    if class != LARGE {
        let cached = CACHE
            .try_with(|c| {
                let block = c.heads[class].get();
                if !block.is_null() {
                    // SAFETY: a listed block holds its next pointer after the header
                    // (`release`).
                    c.heads[class].set(unsafe { *(block.add(HEADER) as *mut *mut u8) });
                    c.bytes.set(c.bytes.get() - block_size(class));
                }
                block
            })
            .unwrap_or(ptr::null_mut());
        if !cached.is_null() {
            // SAFETY: the block spans block_size(class) bytes; its header still holds class.
            return unsafe { cached.add(HEADER) };
        }
    }
    let total = if class == LARGE {
        match size.checked_add(HEADER) {
            Some(t) => t,
            None => return ptr::null_mut(),
        }
    } else {
        block_size(class)
    };
    // SAFETY: malloc of a nonzero size; the header is written only if it succeeded, within
    // the block (total >= HEADER).
    unsafe {
        let block = libc::malloc(total) as *mut u8;
        if block.is_null() {
            return block;
        }
        *(block as *mut usize) = class;
        block.add(HEADER)
    }
}

/// Frees what `alloc` returned (null is ignored).
///
/// # Safety
/// `p` is null or an address from `alloc` (or `realloc`) not freed since.
unsafe fn release(p: *mut u8) {
    if p.is_null() {
        return;
    }
    // SAFETY: p came from alloc: HEADER bytes before it start the block, holding its class.
    let block = unsafe { p.sub(HEADER) };
    // SAFETY: the block's first HEADER bytes hold its class, written by alloc (aligned: malloc).
    let class = unsafe { *(block as *const usize) };
    if class == SHARED {
        return; // the thread's frame buffer outlives every session
    }
    if class != LARGE {
        let kept = CACHE
            .try_with(|c| {
                let size = block_size(class);
                if c.bytes.get() + size > CACHE_BYTES {
                    return false;
                }
                // SAFETY: a small block has room for a pointer after its header (STEP bytes
                // at least); nghttp2 gave it back, so nothing else uses those bytes now.
                unsafe { *(p as *mut *mut u8) = c.heads[class].get() };
                c.heads[class].set(block);
                c.bytes.set(c.bytes.get() + size);
                true
            })
            .unwrap_or(false);
        if kept {
            return;
        }
    }
    // SAFETY: the block came from libc::malloc and is freed once (it is on no list).
    unsafe { libc::free(block as *mut c_void) }
}

/// The capacity a block from `alloc` has (what nghttp2 may use of it).
///
/// # Safety
/// As for `release`, and `p` is not null.
unsafe fn capacity(p: *mut u8) -> Option<usize> {
    // SAFETY: as in release.
    let class = unsafe { *(p.sub(HEADER) as *const usize) };
    match class {
        LARGE => None,
        // Growing it moves its bytes to a block of the session's own (copied below, the
        // shared one kept: `release` leaves it alone).
        SHARED => Some(FRAMEBUF_CHUNKLEN),
        _ => Some((class + 1) * STEP),
    }
}

unsafe extern "C" fn mem_malloc(size: usize, _user: *mut c_void) -> *mut c_void {
    alloc(size) as *mut c_void
}

unsafe extern "C" fn mem_free(p: *mut c_void, _user: *mut c_void) {
    // SAFETY: nghttp2 frees only what this allocator gave it, once.
    unsafe { release(p as *mut u8) }
}

unsafe extern "C" fn mem_calloc(n: usize, size: usize, _user: *mut c_void) -> *mut c_void {
    let Some(total) = n.checked_mul(size) else {
        return ptr::null_mut();
    };
    let p = alloc(total);
    if !p.is_null() {
        // SAFETY: the block holds at least `total` bytes after p.
        unsafe { ptr::write_bytes(p, 0, total) };
    }
    p as *mut c_void
}

unsafe extern "C" fn mem_realloc(p: *mut c_void, size: usize, _user: *mut c_void) -> *mut c_void {
    let p = p as *mut u8;
    if p.is_null() {
        return alloc(size) as *mut c_void;
    }
    // SAFETY: nghttp2 reallocates only what this allocator gave it and has not freed.
    match unsafe { capacity(p) } {
        Some(cap) if size <= cap && size > 0 => p as *mut c_void,
        Some(cap) => {
            let q = alloc(size);
            if !q.is_null() {
                // SAFETY: both blocks are live and distinct; min(cap, size) bytes fit in each.
                unsafe {
                    ptr::copy_nonoverlapping(p, q, cap.min(size));
                    release(p);
                }
            }
            q as *mut c_void
        }
        None => {
            let Some(total) = size.checked_add(HEADER) else {
                return ptr::null_mut();
            };
            // SAFETY: a large block is a malloc'd block from its header on, its header says
            // LARGE and stays so; realloc keeps the header bytes.
            unsafe {
                let block = libc::realloc(p.sub(HEADER) as *mut c_void, total) as *mut u8;
                if block.is_null() {
                    return ptr::null_mut();
                }
                block.add(HEADER) as *mut c_void
            }
        }
    }
}

/// The allocator table given to every session (nghttp2 copies it).
pub(crate) fn table() -> sys::nghttp2_mem {
    sys::nghttp2_mem {
        mem_user_data: ptr::null_mut(),
        malloc: Some(mem_malloc),
        free: Some(mem_free),
        calloc: Some(mem_calloc),
        realloc: Some(mem_realloc),
    }
}

/// Bytes this thread's cache holds now (for the tests that bound it).
#[cfg(test)]
fn cached_bytes() -> usize {
    CACHE.try_with(|c| c.bytes.get()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_reused_by_class_and_bounded() {
        let before = cached_bytes();
        // SAFETY: each pointer comes from the allocator and is freed once.
        unsafe {
            let a = mem_malloc(100, ptr::null_mut()) as *mut u8;
            ptr::write_bytes(a, 0xaa, 100);
            mem_free(a as *mut c_void, ptr::null_mut());
            assert_eq!(cached_bytes(), before + block_size(class_of(100)));
            // Same class: the same block back.
            let b = mem_malloc(128, ptr::null_mut()) as *mut u8;
            assert_eq!(a, b);
            assert_eq!(cached_bytes(), before);
            // calloc zeroes a reused block.
            mem_free(b as *mut c_void, ptr::null_mut());
            let c = mem_calloc(4, 30, ptr::null_mut()) as *mut u8;
            assert_eq!(c, a);
            assert!(std::slice::from_raw_parts(c, 120).iter().all(|&x| x == 0));
            // realloc within the class keeps the block; past it, moves the bytes.
            *c = 7;
            let d = mem_realloc(c as *mut c_void, 128, ptr::null_mut()) as *mut u8;
            assert_eq!(d, c);
            let e = mem_realloc(d as *mut c_void, 5000, ptr::null_mut()) as *mut u8;
            assert_eq!(*e, 7);
            let f = mem_realloc(e as *mut c_void, 9000, ptr::null_mut()) as *mut u8;
            assert_eq!(*f, 7);
            let g = mem_realloc(f as *mut c_void, 10, ptr::null_mut()) as *mut u8;
            assert_eq!(*g, 7);
            mem_free(g as *mut c_void, ptr::null_mut());
            mem_free(ptr::null_mut(), ptr::null_mut());
            // The cache stops at its bound; the rest goes back to the C library.
            let many: Vec<*mut c_void> = (0..20_000)
                .map(|_| mem_malloc(1000, ptr::null_mut()))
                .collect();
            for p in many {
                mem_free(p, ptr::null_mut());
            }
            assert!(cached_bytes() <= CACHE_BYTES);
            assert!(cached_bytes() > CACHE_BYTES - block_size(CLASSES - 1));
        }
    }

    #[test]
    fn classes_cover_their_sizes() {
        for size in 0..=STEP * CLASSES {
            let class = class_of(size);
            assert!(class < CLASSES);
            assert!((class + 1) * STEP >= size);
        }
        assert_eq!(class_of(STEP * CLASSES + 1), LARGE);
    }
}
