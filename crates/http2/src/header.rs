//! `Header`: a name/value pair laid out as nghttp2's `nghttp2_nv`, so a slice of them is passed
//! to nghttp2 as it is, with nothing built per call.

use std::marker::PhantomData;

use libnghttp2_sys as sys;

/// One header field to send. `Header::new` borrows its bytes only for the `submit_*` call,
/// which copies them; `Header::from_static` bytes live for ever, so nghttp2 keeps pointers to
/// them instead of copying (NGHTTP2_NV_FLAG_NO_COPY_NAME/VALUE). Names must be lowercase.
#[derive(Clone, Copy)]
#[repr(transparent)]
pub struct Header<'a> {
    nv: sys::nghttp2_nv,
    _bytes: PhantomData<&'a [u8]>,
}

// SAFETY: a Header is a pair of shared borrows (&'a [u8]) held as raw pointers for nghttp2's
// layout; it is never written through and owns nothing, so sharing or sending it between threads
// is as sound as sharing the two slices (which are Sync and Send). This lets a server keep its
// constant headers in a `static` (tests/exchange.rs does).
unsafe impl Sync for Header<'_> {}
// SAFETY: as for Sync.
unsafe impl Send for Header<'_> {}

impl<'a> Header<'a> {
    const fn with(name: &'a [u8], value: &'a [u8], flags: u32) -> Header<'a> {
        Header {
            nv: sys::nghttp2_nv {
                // nghttp2 only reads through these pointers (they are `*mut` in its struct).
                name: name.as_ptr() as *mut u8,
                value: value.as_ptr() as *mut u8,
                namelen: name.len(),
                valuelen: value.len(),
                flags: flags as u8,
            },
            _bytes: PhantomData,
        }
    }

    /// A field whose bytes are copied when submitted.
    pub const fn new(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header::with(name, value, sys::NGHTTP2_NV_FLAG_NONE)
    }

    /// A field whose bytes nghttp2 points at instead of copying (NO_COPY), like
    /// [`Header::from_static`] for bytes that are not `'static`. Its name must be lowercase
    /// (nghttp2 lowercases only the names it copies).
    ///
    /// # Safety
    /// `name` and `value` must stay valid and unchanged after the field is submitted until
    /// nghttp2 says the HEADERS frame was sent ([`crate::Handler::on_headers_sent`]) or, for
    /// a frame never sent (its stream closed first), until its output queue is empty
    /// ([`crate::Session::outbound_queue_len`] 0): nghttp2's documented contract for NO_COPY
    /// fields. Nothing is read once the session is dropped.
    pub const unsafe fn no_copy(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header::with(
            name,
            value,
            sys::NGHTTP2_NV_FLAG_NO_COPY_NAME | sys::NGHTTP2_NV_FLAG_NO_COPY_VALUE,
        )
    }

    /// A field never put in the HPACK table (and never by an intermediary: "sensitive").
    pub const fn never_indexed(name: &'a [u8], value: &'a [u8]) -> Header<'a> {
        Header::with(name, value, sys::NGHTTP2_NV_FLAG_NO_INDEX)
    }

    /// A field with a static name (lowercase: nghttp2 neither copies nor lowercases it) and a
    /// value copied when submitted: a server's response fields, whose names are few and known,
    /// spare nghttp2 a copy and a lowercasing of each.
    pub fn static_name(name: &'static [u8], value: &'a [u8]) -> Header<'a> {
        debug_assert!(!name.iter().any(u8::is_ascii_uppercase), "a lowercase name");
        Header::with(name, value, sys::NGHTTP2_NV_FLAG_NO_COPY_NAME)
    }

    /// The field's name.
    pub fn name(&self) -> &'a [u8] {
        // SAFETY: built from a &'a [u8] of exactly this pointer and length.
        unsafe { std::slice::from_raw_parts(self.nv.name, self.nv.namelen) }
    }

    /// The field's value.
    pub fn value(&self) -> &'a [u8] {
        // SAFETY: built from a &'a [u8] of exactly this pointer and length.
        unsafe { std::slice::from_raw_parts(self.nv.value, self.nv.valuelen) }
    }
}

impl Header<'static> {
    /// A field of static bytes: nghttp2 points at them until the frame is written, no copy.
    pub const fn from_static(name: &'static [u8], value: &'static [u8]) -> Header<'static> {
        Header::with(
            name,
            value,
            sys::NGHTTP2_NV_FLAG_NO_COPY_NAME | sys::NGHTTP2_NV_FLAG_NO_COPY_VALUE,
        )
    }
}

impl std::fmt::Debug for Header<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            String::from_utf8_lossy(self.name()),
            String::from_utf8_lossy(self.value())
        )
    }
}
