//! The C side: one `extern "C"` trampoline per nghttp2 callback, generic over the handler so
//! each call is a direct (static) call into it, and the table that registers them.
//!
//! nghttp2 calls these only from inside `nghttp2_session_mem_recv2` and `nghttp2_session_send`
//! (read in nghttp2 1.68's session.c: `nghttp2_session_del` frees streams and queues without a
//! callback, and the `submit_*` functions only queue). `Session` points the session's
//! `user_data` at a [`Ctx`] on its stack for the length of those two calls and back at null
//! after. A callback that finds null anyway is counted ([`stray_callbacks`]) and fails the
//! session instead of touching anything; the tests assert the count stays 0.

use std::any::Any;
use std::ffi::{c_int, c_void};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use libnghttp2_sys as sys;

use crate::handler::{Body, Handler, HeaderVerdict, HeadersKind};
use crate::messaging::{Checked, Messaging};
use crate::{error_code, frame_type, Error};

/// What a callback reaches through `user_data` during one `recv` or `send`.
pub(crate) struct Ctx<'a, H> {
    pub h: &'a mut H,
    /// Bytes of the header block being received (RFC 9113's size: name + value + 32 a field).
    pub header_bytes: &'a mut u64,
    /// Past this, a server refuses the request (the handler is told), a client resets the stream.
    pub max_header_list: u64,
    /// Past this, a server ends the connection (`Config::max_header_list_decoded`).
    pub max_header_list_decoded: u64,
    /// The last stream answered (a server's `submit_response`): what a GOAWAY for a connection
    /// error names (`Session::last_answered`).
    pub last_answered: i32,
    /// A server's request checks (nghttp2's HTTP messaging being off).
    pub messaging: &'a mut Messaging,
    /// Frame bytes the handler could not take yet (`Session::held`), kept by a server only: a
    /// client's frame buffer is its own, and what its handler cannot take stays there.
    pub held: Option<&'a mut Vec<u8>>,
    /// `Config::paced_stream_windows`: the connection's window is reopened here as body bytes
    /// arrive, a stream's by `Session::consume`.
    pub paced: bool,
    /// A handler's panic, caught at the boundary, resumed once nghttp2 has returned.
    pub panic: Option<Box<dyn Any + Send>>,
}

static STRAY: AtomicU64 = AtomicU64::new(0);

/// Callbacks nghttp2 made outside `recv`/`send` (none ever should; each one failed safely).
/// Tests only (the `test-support` feature): the tests hold every session's life to it.
#[cfg(any(test, feature = "test-support"))]
pub fn stray_callbacks() -> u64 {
    STRAY.load(Ordering::Relaxed)
}

/// Runs `f` on the handler behind `user_data`, returning `fail` if there is none or it panics.
///
/// # Safety
/// `user_data` is null or points at a live `Ctx<H>` that nothing else uses during this call;
/// `Session<H>` guarantees both (it sets it from `&mut` borrows for the length of its call).
unsafe fn guarded<H: Handler, R>(
    user_data: *mut c_void,
    fail: R,
    f: impl FnOnce(&mut Ctx<'_, H>) -> R,
) -> R {
    if user_data.is_null() {
        STRAY.fetch_add(1, Ordering::Relaxed);
        return fail;
    }
    // SAFETY: per this function's contract, a non-null user_data is an exclusive Ctx<H>.
    let ctx = unsafe { &mut *(user_data as *mut Ctx<'_, H>) };
    if ctx.panic.is_some() {
        return fail;
    }
    match catch_unwind(AssertUnwindSafe(|| f(&mut *ctx))) {
        Ok(r) => r,
        Err(payload) => {
            ctx.panic = Some(payload);
            fail
        }
    }
}

/// A byte slice from nghttp2 (null allowed when empty).
///
/// # Safety
/// `ptr` is valid for `len` bytes for the duration of the callback, as nghttp2 documents for
/// every pointer/length pair it passes.
unsafe fn bytes<'a>(ptr: *const u8, len: usize) -> &'a [u8] {
    if len == 0 {
        &[]
    } else {
        // SAFETY: per the contract, ptr is non-null and valid for len bytes.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

const FAIL: c_int = sys::NGHTTP2_ERR_CALLBACK_FAILURE;

/// Ends the connection with `code`: GOAWAY naming the last stream answered is queued and all
/// further input ignored (nghttp2 allows this from a callback, and stops processing the input as
/// soon as the callback returns; a header callback must also return TEMPORAL_CALLBACK_FAILURE,
/// or nghttp2 goes on decoding the block). Returns 0, or FAIL if nghttp2 could not queue it.
///
/// # Safety
/// `session` is the live session making the callback.
#[cold]
unsafe fn end_connection(session: *mut sys::nghttp2_session, last: i32, code: u32) -> c_int {
    // SAFETY: per the contract.
    match unsafe { sys::nghttp2_session_terminate_session2(session, last, code) } {
        0 => 0,
        _ => FAIL,
    }
}

/// Ends the connection with PROTOCOL_ERROR, as nghttp2 does for a request its HTTP messaging
/// refuses.
///
/// # Safety
/// As [`end_connection`].
#[cold]
unsafe fn refuse(session: *mut sys::nghttp2_session, last: i32) -> c_int {
    // SAFETY: per the contract.
    unsafe { end_connection(session, last, error_code::PROTOCOL_ERROR) }
}

/// [`end_connection`] from a header callback: decoding stops at this field.
///
/// # Safety
/// As [`end_connection`].
#[cold]
unsafe fn end_in_block(session: *mut sys::nghttp2_session, last: i32, code: u32) -> c_int {
    // SAFETY: per the contract.
    match unsafe { end_connection(session, last, code) } {
        0 => sys::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE,
        fail => fail,
    }
}

unsafe extern "C" fn send<H: Handler>(
    _: *mut sys::nghttp2_session,
    data: *const u8,
    length: usize,
    _: c_int,
    user_data: *mut c_void,
) -> sys::nghttp2_ssize {
    // SAFETY: user_data is managed by Session (see `guarded`); data/length come from nghttp2.
    unsafe {
        guarded::<H, _>(user_data, FAIL as isize, |ctx| {
            // Every byte is taken: what the handler cannot take now waits in `held` (in order,
            // behind bytes already waiting), never in nghttp2's frame buffer, which a server
            // shares with its thread's other sessions.
            let offered = bytes(data, length);
            let Some(held) = ctx.held.as_mut() else {
                return match ctx.h.write(offered).min(length) {
                    // 0 must be WOULDBLOCK: nghttp2_session_send would offer the same bytes
                    // forever.
                    0 => sys::NGHTTP2_ERR_WOULDBLOCK as isize,
                    n => n as isize,
                };
            };
            let n = if held.is_empty() {
                ctx.h.write(offered).min(length)
            } else {
                0
            };
            held.extend_from_slice(&offered[n..]);
            length as isize
        })
    }
}

unsafe extern "C" fn send_data<H: Handler>(
    _: *mut sys::nghttp2_session,
    frame: *mut sys::nghttp2_frame,
    framehd: *const u8,
    length: usize,
    _: *mut sys::nghttp2_data_source,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live DATA frame; padding is never chosen (no select_padding
    // callback), so the frame is a 9-byte header and length bytes.
    unsafe {
        let hd = (*frame).hd;
        let padlen = (*frame).data.padlen;
        let _ = framehd;
        guarded::<H, _>(user_data, FAIL, |ctx| {
            // Inside the guard: a panic must not unwind through nghttp2's C frames.
            debug_assert_eq!(padlen, 0);
            if ctx.held.as_ref().is_some_and(|held| !held.is_empty()) {
                return sys::NGHTTP2_ERR_WOULDBLOCK; // the frames before it go first
            }
            // The header is written from the frame: after a WOULDBLOCK, nghttp2 offers the
            // frame again with `framehd` in its frame buffer, which a server's other sessions
            // have packed their frames in meanwhile (`mem.rs`).
            let header = data_frame_header(&hd);
            if ctx.h.write_data(hd.stream_id, &header, length) {
                0
            } else {
                sys::NGHTTP2_ERR_WOULDBLOCK
            }
        })
    }
}

/// A DATA frame's 9-byte header (RFC 9113 4.1): length, type, flags, stream id.
fn data_frame_header(hd: &sys::nghttp2_frame_hd) -> [u8; 9] {
    let len = (hd.length as u32).to_be_bytes();
    let id = (hd.stream_id as u32 & 0x7fff_ffff).to_be_bytes();
    [
        len[1], len[2], len[3], hd.type_, hd.flags, id[0], id[1], id[2], id[3],
    ]
}

unsafe extern "C" fn read_body<H: Handler>(
    _: *mut sys::nghttp2_session,
    stream_id: i32,
    _: *mut u8,
    length: usize,
    data_flags: *mut u32,
    _: *mut sys::nghttp2_data_source,
    user_data: *mut c_void,
) -> sys::nghttp2_ssize {
    // SAFETY: data_flags points at nghttp2's flags word for this call.
    unsafe {
        guarded::<H, _>(user_data, FAIL as isize, |ctx| {
            match ctx.h.body_ready(stream_id, length) {
                // An empty non-final frame would be a glitch to the peer: treat it as "not yet".
                Body::Ready { len: 0, end: false } | Body::Deferred => {
                    sys::NGHTTP2_ERR_DEFERRED as isize
                }
                Body::Ready { len, end } => {
                    // More than asked for: this frame carries what fits, and the body does not
                    // end here (body_ready is asked again for the rest).
                    let (len, end) = if len > length {
                        (length, false)
                    } else {
                        (len, end)
                    };
                    // NO_COPY: nothing is copied into nghttp2's buffer; send_data writes it.
                    *data_flags |= sys::NGHTTP2_DATA_FLAG_NO_COPY;
                    if end {
                        *data_flags |= sys::NGHTTP2_DATA_FLAG_EOF;
                    }
                    len as isize
                }
                Body::Reset => sys::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE as isize,
            }
        })
    }
}

unsafe extern "C" fn begin_headers<H: Handler>(
    _: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live HEADERS or PUSH_PROMISE frame; `cat` is read only for
    // HEADERS, whose union member it belongs to.
    unsafe {
        let stream = (*frame).hd.stream_id;
        let kind = if u32::from((*frame).hd.type_) != sys::NGHTTP2_HEADERS {
            HeadersKind::PushRefused
        } else {
            match (*frame).headers.cat {
                sys::NGHTTP2_HCAT_REQUEST => HeadersKind::Request,
                sys::NGHTTP2_HCAT_RESPONSE => HeadersKind::Response,
                sys::NGHTTP2_HCAT_PUSH_RESPONSE => HeadersKind::PushRefused,
                _ => HeadersKind::Trailers,
            }
        };
        guarded::<H, _>(user_data, FAIL, |ctx| {
            *ctx.header_bytes = 0;
            if ctx.messaging.active() {
                ctx.messaging.begin(stream, kind);
            }
            ctx.h.on_begin_headers(stream, kind);
            0
        })
    }
}

#[allow(clippy::too_many_arguments)] // nghttp2's signature
unsafe extern "C" fn header<H: Handler>(
    session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    name: *const u8,
    namelen: usize,
    value: *const u8,
    valuelen: usize,
    _: u8,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live frame and name/value valid for their lengths.
    unsafe {
        let stream = (*frame).hd.stream_id;
        let (name, value) = (bytes(name, namelen), bytes(value, valuelen));
        guarded::<H, _>(user_data, FAIL, |ctx| {
            // Counted as decoded, every field (one the checks refuse as well): HPACK lets a byte
            // on the wire stand for a 4 KB field, so the list's size is checked here, not after
            // the block.
            let before = *ctx.header_bytes;
            *ctx.header_bytes += (namelen + valuelen + 32) as u64;
            let over = *ctx.header_bytes > ctx.max_header_list;
            if over {
                if !ctx.messaging.active() {
                    // A client: that response is reset (nghttp2 decodes the rest of the block
                    // without callbacks), the other streams go on.
                    return sys::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
                }
                // A server: the request is refused once its block is read, so the client gets
                // an answer (431) and its other streams go on. nghttp2 must decode the rest of
                // the block either way (the dynamic table follows the peer's); past the hard
                // bound that decoding is not worth it, and the connection ends.
                if *ctx.header_bytes > ctx.max_header_list_decoded {
                    return end_in_block(session, ctx.last_answered, error_code::ENHANCE_YOUR_CALM);
                }
                if before <= ctx.max_header_list {
                    ctx.h.on_header_list_too_large(stream);
                }
            }
            let known = if ctx.messaging.active() {
                if ctx.messaging.malformed() {
                    // The request is refused at the block's end; its fields are only counted.
                    return 0;
                }
                // Still checked past the list limit: what ends the connection (a repeated
                // pseudo-header, a connection-specific field) does so whatever the list's size.
                match ctx.messaging.check(name, value) {
                    Checked::Pass(_) if over => return 0,
                    Checked::Pass(known) => Some(known),
                    Checked::Malformed => return 0,
                    Checked::Fail => {
                        return end_in_block(session, ctx.last_answered, error_code::PROTOCOL_ERROR)
                    }
                }
            } else {
                None
            };
            let verdict = match known {
                Some(known) => ctx.h.on_request_header(stream, known, name, value),
                None => ctx.h.on_header(stream, name, value),
            };
            match verdict {
                HeaderVerdict::Accept => 0,
                HeaderVerdict::ResetStream => sys::NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE,
                HeaderVerdict::FailConnection => {
                    end_in_block(session, ctx.last_answered, error_code::PROTOCOL_ERROR)
                }
            }
        })
    }
}

unsafe extern "C" fn frame_recv<H: Handler>(
    session: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live frame, each union member read only for its frame type, and
    // the live session making the callback (nghttp2 allows calls into it from callbacks).
    unsafe {
        let hd = (*frame).hd;
        let end_stream = u32::from(hd.flags) & sys::NGHTTP2_FLAG_END_STREAM != 0;
        guarded::<H, _>(user_data, FAIL, |ctx| {
            if ctx.messaging.active() {
                // Checked before the handler hears of the frame, as nghttp2 checks before
                // its on_frame_recv callback; a block a field already made malformed is not
                // (its stream is reset below), and the block's end may make it so.
                let ok = match hd.type_ {
                    frame_type::HEADERS if ctx.messaging.malformed() => true,
                    frame_type::HEADERS => ctx.messaging.end_headers(end_stream),
                    frame_type::DATA if end_stream => ctx.messaging.data_end(hd.stream_id),
                    _ => true,
                };
                if !ok {
                    return refuse(session, ctx.last_answered);
                }
                if hd.type_ == frame_type::HEADERS && ctx.messaging.malformed() {
                    // RFC 9113 8.1.1: a malformed request is a stream error of type
                    // PROTOCOL_ERROR. The reset marks the stream closing, so nghttp2 adds none
                    // of its own.
                    let rv = sys::nghttp2_submit_rst_stream(
                        session,
                        sys::NGHTTP2_FLAG_NONE as u8,
                        hd.stream_id,
                        error_code::PROTOCOL_ERROR,
                    );
                    if rv != 0 && sys::nghttp2_is_fatal(rv) != 0 {
                        return FAIL;
                    }
                    ctx.h.on_frame_received(hd.type_);
                    ctx.h.on_malformed_request(hd.stream_id);
                    return 0;
                }
                if let Some(p) = ctx.messaging.take_priority() {
                    // What nghttp2's HTTP messaging does with a request's `priority` field:
                    // the stream's urgency (it has no DATA queued yet).
                    let rv = sys::nghttp2_session_change_extpri_stream_priority(
                        session,
                        hd.stream_id,
                        &p,
                        0,
                    );
                    // Only running out of memory is fatal (the stream is live: nghttp2 calls
                    // this callback for streams it keeps); anything else leaves the default.
                    if rv != 0 && sys::nghttp2_is_fatal(rv) != 0 {
                        return FAIL;
                    }
                }
            }
            let h = &mut *ctx.h;
            h.on_frame_received(hd.type_);
            match hd.type_ {
                frame_type::HEADERS => h.on_headers_end(hd.stream_id, end_stream),
                frame_type::DATA if end_stream => h.on_data_end(hd.stream_id),
                frame_type::RST_STREAM => {
                    h.on_rst_stream(hd.stream_id, (*frame).rst_stream.error_code)
                }
                frame_type::GOAWAY => {
                    let g = (*frame).goaway;
                    h.on_goaway(g.last_stream_id, g.error_code)
                }
                // flags & ACK: our own SETTINGS acknowledged, nothing new from the peer.
                frame_type::SETTINGS if u32::from(hd.flags) & sys::NGHTTP2_FLAG_ACK == 0 => {
                    h.on_settings()
                }
                _ => {}
            }
            0
        })
    }
}

unsafe extern "C" fn data_chunk<H: Handler>(
    session: *mut sys::nghttp2_session,
    _: u8,
    stream_id: i32,
    data: *const u8,
    len: usize,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: data is valid for len bytes during the callback; session is the live session
    // calling back, which `nghttp2_session_consume_connection` and
    // `nghttp2_session_consume_stream` may be given from a callback (nghttpx does).
    unsafe {
        let data = bytes(data, len);
        guarded::<H, _>(user_data, FAIL, |ctx| {
            if ctx.messaging.active() && !ctx.messaging.data(stream_id, len) {
                return refuse(session, ctx.last_answered);
            }
            if !ctx.paced {
                ctx.h.on_data(stream_id, data);
                return 0;
            }
            // The connection's window reopens now; the stream's by what the handler took now,
            // the rest as the caller consumes.
            let taken = ctx.h.on_data_paced(stream_id, data).min(len);
            let rv = sys::nghttp2_session_consume_connection(session, len);
            if rv < 0 {
                return rv;
            }
            if taken > 0 {
                let rv = sys::nghttp2_session_consume_stream(session, stream_id, taken);
                if rv < 0 {
                    return rv;
                }
            }
            0
        })
    }
}

unsafe extern "C" fn stream_close<H: Handler>(
    _: *mut sys::nghttp2_session,
    stream_id: i32,
    error_code: u32,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: only user_data is dereferenced, through `guarded`.
    unsafe {
        guarded::<H, _>(user_data, FAIL, |ctx| {
            if ctx.messaging.active() {
                ctx.messaging.close(stream_id);
            }
            ctx.h.on_stream_close(stream_id, error_code);
            0
        })
    }
}

unsafe extern "C" fn frame_send<H: Handler>(
    _: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live frame; the goaway member is read only for a GOAWAY.
    unsafe {
        let hd = (*frame).hd;
        guarded::<H, _>(user_data, FAIL, |ctx| {
            ctx.h.on_frame_sent(hd.type_, hd.length);
            if hd.type_ == frame_type::HEADERS {
                ctx.h.on_headers_sent(hd.stream_id);
            }
            let end_stream = u32::from(hd.flags) & sys::NGHTTP2_FLAG_END_STREAM != 0;
            if end_stream && (hd.type_ == frame_type::HEADERS || hd.type_ == frame_type::DATA) {
                ctx.h.on_end_stream_sent(hd.stream_id);
            }
            if hd.type_ == frame_type::GOAWAY {
                let g = (*frame).goaway;
                ctx.h.on_goaway_sent(g.last_stream_id, g.error_code);
            }
            0
        })
    }
}

unsafe extern "C" fn invalid_frame<H: Handler>(
    _: *mut sys::nghttp2_session,
    frame: *const sys::nghttp2_frame,
    lib_error_code: c_int,
    user_data: *mut c_void,
) -> c_int {
    // SAFETY: nghttp2 passes a live frame; only its common header is read.
    unsafe {
        let kind = (*frame).hd.type_;
        guarded::<H, _>(user_data, FAIL, |ctx| {
            ctx.h
                .on_invalid_frame(kind, Error::from_code(lib_error_code));
            0
        })
    }
}

/// The data provider every body uses: no source, the handler says what is ready.
pub(crate) fn data_provider<H: Handler>() -> sys::nghttp2_data_provider2 {
    sys::nghttp2_data_provider2 {
        source: sys::nghttp2_data_source {
            ptr: std::ptr::null_mut(),
        },
        read_callback: Some(read_body::<H>),
    }
}

/// Registers every trampoline for `H` in a fresh callbacks table.
///
/// # Safety
/// `cbs` must be a live table from `nghttp2_session_callbacks_new`.
pub(crate) unsafe fn register<H: Handler>(cbs: *mut sys::nghttp2_session_callbacks) {
    // SAFETY: the caller guarantees cbs is live; each setter stores a function pointer whose
    // signature is the one bindgen generated for that callback.
    unsafe {
        sys::nghttp2_session_callbacks_set_send_callback2(cbs, Some(send::<H>));
        sys::nghttp2_session_callbacks_set_send_data_callback(cbs, Some(send_data::<H>));
        sys::nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, Some(begin_headers::<H>));
        sys::nghttp2_session_callbacks_set_on_header_callback(cbs, Some(header::<H>));
        sys::nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, Some(frame_recv::<H>));
        sys::nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, Some(data_chunk::<H>));
        sys::nghttp2_session_callbacks_set_on_stream_close_callback(cbs, Some(stream_close::<H>));
        sys::nghttp2_session_callbacks_set_on_frame_send_callback(cbs, Some(frame_send::<H>));
        sys::nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(
            cbs,
            Some(invalid_frame::<H>),
        );
    }
}
