//! `Session`: one HTTP/2 connection's state in nghttp2, bytes in and frames out, no I/O.

use std::ffi::c_void;
use std::marker::PhantomData;
use std::panic::resume_unwind;
use std::ptr::{self, NonNull};

use libnghttp2_sys as sys;

use crate::callbacks::{self, Ctx};
use crate::checks::{Check, Checks};
use crate::config::DEFAULT_WINDOW;
use crate::frame::input::{Found, Frames, Step};
use crate::handler::{FrameVerdict, Handler, StreamId};
use crate::mem;
use crate::messaging::Messaging;
use crate::{Config, Error, Header};

/// One HTTP/2 connection, client or server, over nghttp2's session.
///
/// Not `Send` (one per connection, on its thread). Dropping it frees everything nghttp2 holds
/// for it, open streams included, and calls no handler method.
pub struct Session<H: Handler> {
    raw: NonNull<sys::nghttp2_session>,
    header_bytes: u64,
    max_header_list: u64,
    max_header_list_decoded: u64,
    /// The highest stream `submit_response` answered: a GOAWAY for a connection error names
    /// it, not the last stream nghttp2 began to receive. RFC 9113 6.8: streams above the
    /// last stream id were not processed and may be retried; a request read in the same input
    /// as the error is never answered (nothing is written after that GOAWAY), so it must be
    /// above.
    last_answered: StreamId,
    /// A server's request checks, in place of nghttp2's HTTP messaging (`messaging.rs`).
    messaging: Messaging,
    /// Frame boundaries of the input, when the handler wants each header first.
    frames: Frames,
    /// The checks nghttp2 leaves out, made on each frame header when `frames` finds it.
    checks: Checks,
    /// `terminate` was called: all further input is ignored here, not scanned (a check or the
    /// handler may end the connection in the middle of an input, whose rest is never scanned,
    /// and nghttp2 ignores input from then on anyway).
    terminated: bool,
    /// Frame bytes nghttp2 handed over that the handler could not take yet, written before
    /// anything else at the next `send`. nghttp2 is told every byte it offers was taken, so no
    /// frame waits in its frame buffer between calls: a server's is its thread's (`mem.rs`).
    /// Empty (and without capacity) unless the handler pushed back.
    held: Vec<u8>,
    /// A server session (its frame buffer is its thread's, its frame bytes wait in `held`).
    server: bool,
    /// `Config::paced_stream_windows`.
    paced: bool,
    _handler: PhantomData<*mut H>,
}

fn check(rv: i32) -> Result<(), Error> {
    if rv < 0 {
        Err(Error::from_code(rv))
    } else {
        Ok(())
    }
}

impl<H: Handler> Session<H> {
    /// A client session: the first `send` writes the connection preface, then the SETTINGS of
    /// `config` (ENABLE_PUSH 0) and the connection window's WINDOW_UPDATE.
    pub fn client(config: &Config) -> Result<Session<H>, Error> {
        Session::new(config, true)
    }

    /// A server session: the first `send` writes the SETTINGS of `config` (the server's
    /// preface) and the connection window's WINDOW_UPDATE; `recv` expects the client preface.
    pub fn server(config: &Config) -> Result<Session<H>, Error> {
        Session::new(config, false)
    }

    fn new(config: &Config, client: bool) -> Result<Session<H>, Error> {
        let mut cbs = ptr::null_mut();
        let mut option = ptr::null_mut();
        let mut raw = ptr::null_mut();
        // SAFETY: the callbacks table and option are created, filled, used by *_new3 (which
        // copies what it needs: "The library code does not refer to |option| after this
        // function returns", and likewise for callbacks) and deleted here; user_data starts
        // null, so a callback before the first recv/send could touch nothing.
        let rv = unsafe {
            let mut rv = sys::nghttp2_session_callbacks_new(&mut cbs);
            if rv == 0 {
                callbacks::register::<H>(cbs);
                rv = sys::nghttp2_option_new(&mut option);
            }
            if rv == 0 {
                config.apply(option);
                if !client {
                    // The request checks are made by `messaging.rs`, at a fraction of the cost.
                    sys::nghttp2_option_set_no_http_messaging(option, 1);
                }
                // The allocator table is copied by *_new3 ("session->mem = *mem").
                let mut mem = mem::table();
                rv = if client {
                    sys::nghttp2_session_client_new3(
                        &mut raw,
                        cbs,
                        ptr::null_mut(),
                        option,
                        &mut mem,
                    )
                } else {
                    // A server's frames are packed in its thread's frame buffer (`mem.rs`):
                    // an idle connection holds none.
                    mem::with_shared_frame_buffer(|| {
                        sys::nghttp2_session_server_new3(
                            &mut raw,
                            cbs,
                            ptr::null_mut(),
                            option,
                            &mut mem,
                        )
                    })
                };
            }
            sys::nghttp2_option_del(option); // both accept null
            sys::nghttp2_session_callbacks_del(cbs);
            rv
        };
        check(rv)?;
        let session = Session {
            raw: NonNull::new(raw).ok_or(Error::from_code(sys::NGHTTP2_ERR_NOMEM))?,
            header_bytes: 0,
            max_header_list: u64::from(config.max_header_list_size),
            max_header_list_decoded: u64::from(
                (config.max_header_list_decoded).max(config.max_header_list_size),
            ),
            last_answered: 0,
            messaging: Messaging::new(!client),
            frames: Frames::new(!client),
            checks: Checks::new(!client),
            terminated: false,
            held: Vec::new(),
            server: !client,
            paced: config.paced_stream_windows,
            _handler: PhantomData,
        };
        let (iv, n) = config.settings(client);
        // SAFETY: the session is live; iv holds n entries and is copied by submit_settings.
        check(unsafe {
            sys::nghttp2_submit_settings(
                session.raw.as_ptr(),
                sys::NGHTTP2_FLAG_NONE as u8,
                iv.as_ptr(),
                n,
            )
        })?;
        if config.connection_window_size > DEFAULT_WINDOW {
            let window = config.connection_window_size.min(i32::MAX as u32) as i32;
            // SAFETY: the session is live; this queues a WINDOW_UPDATE on stream 0.
            check(unsafe {
                sys::nghttp2_session_set_local_window_size(
                    session.raw.as_ptr(),
                    sys::NGHTTP2_FLAG_NONE as u8,
                    0,
                    window,
                )
            })?;
        }
        Ok(session)
    }

    /// Runs one nghttp2 call with `h` reachable from the callbacks, and only then.
    fn with_handler<R>(
        &mut self,
        h: &mut H,
        call: impl FnOnce(*mut sys::nghttp2_session) -> R,
    ) -> R {
        let raw = self.raw.as_ptr();
        let mut ctx = Ctx {
            h,
            header_bytes: &mut self.header_bytes,
            max_header_list: self.max_header_list,
            max_header_list_decoded: self.max_header_list_decoded,
            last_answered: self.last_answered,
            messaging: &mut self.messaging,
            held: self.server.then_some(&mut self.held),
            paced: self.paced,
            panic: None,
        };
        // SAFETY: ctx outlives the call below and is reached by nothing else meanwhile (the
        // callbacks run on this thread, inside `call`); user_data is null again before ctx
        // goes out of scope, so no callback can see it dangling.
        let result = unsafe {
            sys::nghttp2_session_set_user_data(raw, &mut ctx as *mut Ctx<'_, H> as *mut c_void);
            let result = call(raw);
            sys::nghttp2_session_set_user_data(raw, ptr::null_mut());
            result
        };
        if let Some(payload) = ctx.panic {
            resume_unwind(payload);
        }
        result
    }

    /// Processes bytes received from the peer, calling `h`'s input methods; returns how many
    /// were consumed (all of them unless it fails). Also queues what the input calls for
    /// (SETTINGS ACK, PING ACK, WINDOW_UPDATE, RST_STREAM, GOAWAY): call `send` after.
    ///
    /// With [`Handler::BEGIN_FRAME`], each frame header is looked at before nghttp2 sees it:
    /// first by the checks nghttp2 leaves out (`checks.rs`), then by the handler.
    pub fn recv(&mut self, input: &[u8], h: &mut H) -> Result<usize, Error> {
        if !H::BEGIN_FRAME {
            return self.recv_raw(input, h);
        }
        if self.terminated {
            return Ok(input.len());
        }
        // `input[..fed]` is handled: given to nghttp2, or dropped.
        let mut fed = 0;
        let mut at = 0;
        loop {
            let f = match self.frames.next(input, at) {
                Step::Frame(f) => f,
                Step::End { held_from } => {
                    if fed < held_from {
                        self.recv_raw(&input[fed..held_from], h)?;
                    }
                    return Ok(input.len());
                }
            };
            at = f.end;
            // The frames before this one, then this one's bytes kept from earlier inputs.
            if f.start > fed {
                self.recv_raw(&input[fed..f.start], h)?;
            }
            fed = f.start;
            if !self.want_read() {
                // Done (GOAWAY exchanged, or written after a connection error): nghttp2
                // ignores the rest.
                self.recv_carried(&f, h)?;
                continue;
            }
            let raw = self.raw.as_ptr();
            let check = self.checks.check(&f.head, f.word, |stream| {
                // SAFETY: raw is live; a query (-1 for a stream nghttp2 does not know).
                let w = unsafe { sys::nghttp2_session_get_stream_remote_window_size(raw, stream) };
                (w >= 0).then_some(w)
            });
            let code = match check {
                Check::Accept => match h.on_begin_frame(f.head.kind, f.head.flags, f.head.stream) {
                    FrameVerdict::Accept => None,
                    FrameVerdict::FailConnection(code) => Some(code),
                },
                Check::Fail(code) => Some(code),
                Check::Reset { stream, code } => {
                    // The frame is dropped whole (a check reads only frames that end with the
                    // word it reads): nghttp2 never sees it.
                    if stream != 0 {
                        self.submit_rst_stream(stream, code)?;
                    }
                    fed = f.end;
                    continue;
                }
            };
            if let Some(code) = code {
                self.terminate(code)?;
                return Ok(input.len());
            }
            self.recv_carried(&f, h)?;
        }
    }

    /// Gives nghttp2 a frame's bytes that came in earlier inputs, if any.
    fn recv_carried(&mut self, f: &Found, h: &mut H) -> Result<(), Error> {
        if f.carried_len > 0 {
            self.recv_raw(&f.carried[..f.carried_len], h)?;
        }
        Ok(())
    }

    fn recv_raw(&mut self, input: &[u8], h: &mut H) -> Result<usize, Error> {
        let n = self.with_handler(h, |raw| {
            // SAFETY: raw is live, input is valid for its length and only read.
            unsafe { sys::nghttp2_session_mem_recv2(raw, input.as_ptr(), input.len()) }
        });
        if n < 0 {
            Err(Error::from_code(n as i32))
        } else {
            Ok(n as usize)
        }
    }

    /// Writes what is queued through `h.write` and `h.write_data`, until everything is written
    /// or `h` takes no more (then call again when it can). A server session's `send` called
    /// from inside another server session's handler on the same thread is refused
    /// (`NGHTTP2_ERR_INVALID_STATE`): both pack frames in the thread's one frame buffer.
    pub fn send(&mut self, h: &mut H) -> Result<(), Error> {
        let _mark = if self.server {
            match mem::frame_buffer_in_use() {
                Some(mark) => Some(mark),
                None => return Err(Error::from_code(sys::NGHTTP2_ERR_INVALID_STATE)),
            }
        } else {
            None
        };
        if !self.held.is_empty() {
            let n = h.write(&self.held).min(self.held.len());
            if n < self.held.len() {
                self.held.drain(..n);
                return Ok(());
            }
            // Written: the connection holds no frame bytes of its own again.
            self.held = Vec::new();
        }
        let rv = self.with_handler(h, |raw| {
            // SAFETY: raw is live.
            unsafe { sys::nghttp2_session_send(raw) }
        });
        check(rv)
    }

    /// The session wants to read: false once it is done (GOAWAY exchanged and no stream left,
    /// or terminated).
    pub fn want_read(&self) -> bool {
        // SAFETY: raw is live; a query.
        unsafe { sys::nghttp2_session_want_read(self.raw.as_ptr()) != 0 }
    }

    /// The session has frames to write (or a deferred body was resumed, or frame bytes the
    /// handler could not take wait in the session).
    pub fn want_write(&self) -> bool {
        // SAFETY: raw is live; a query.
        !self.held.is_empty() || unsafe { sys::nghttp2_session_want_write(self.raw.as_ptr()) != 0 }
    }

    /// Opens a stream with a request (client): `headers` are copied (pseudo-headers first:
    /// `:method`, `:scheme`, `:authority`, `:path`). With `body`, its bytes come from
    /// `Handler::body_ready`/`write_data`; without, HEADERS carries END_STREAM. Returns the
    /// stream's id. If the server's MAX_CONCURRENT_STREAMS is reached, the request waits in
    /// nghttp2's queue until a stream closes.
    pub fn submit_request(
        &mut self,
        headers: &[Header<'_>],
        body: bool,
    ) -> Result<StreamId, Error> {
        let provider = callbacks::data_provider::<H>();
        let provider = if body {
            &provider as *const _
        } else {
            ptr::null()
        };
        // SAFETY: raw is live; Header is repr(transparent) over nghttp2_nv, so the slice is an
        // nv array of its length; nghttp2 copies the provider struct and every field before
        // returning, except the bytes of a field flagged NO_COPY, which it points at until it
        // packs the HEADERS frame at a later `send`. Such fields are made only by
        // `Header::from_static`, `Header::static_name` (static bytes) and the unsafe
        // `Header::no_copy`, whose caller promises the bytes stay until the frame is sent.
        let id = unsafe {
            sys::nghttp2_submit_request2(
                self.raw.as_ptr(),
                ptr::null(),
                headers.as_ptr() as *const sys::nghttp2_nv,
                headers.len(),
                provider,
                ptr::null_mut(),
            )
        };
        check(id)?;
        Ok(id)
    }

    /// Answers `stream` (server): `headers` (`:status` first) are copied, except the bytes of
    /// fields made by [`Header::no_copy`] (see there); with `body`, as for `submit_request`.
    pub fn submit_response(
        &mut self,
        stream: StreamId,
        headers: &[Header<'_>],
        body: bool,
    ) -> Result<(), Error> {
        let provider = callbacks::data_provider::<H>();
        let provider = if body {
            &provider as *const _
        } else {
            ptr::null()
        };
        self.last_answered = self.last_answered.max(stream);
        // SAFETY: as for submit_request.
        check(unsafe {
            sys::nghttp2_submit_response2(
                self.raw.as_ptr(),
                stream,
                headers.as_ptr() as *const sys::nghttp2_nv,
                headers.len(),
                provider,
            )
        })
    }

    /// Resets `stream` with `error_code` (RST_STREAM).
    pub fn submit_rst_stream(&mut self, stream: StreamId, error_code: u32) -> Result<(), Error> {
        // SAFETY: raw is live; this queues a frame.
        check(unsafe {
            sys::nghttp2_submit_rst_stream(
                self.raw.as_ptr(),
                sys::NGHTTP2_FLAG_NONE as u8,
                stream,
                error_code,
            )
        })
    }

    /// The first step of a graceful shutdown (server): GOAWAY with the largest stream id, so the
    /// client stops opening streams while those in flight go on. After a round trip (a PING or
    /// a moment), `submit_goaway` with the real last stream id.
    pub fn submit_shutdown_notice(&mut self) -> Result<(), Error> {
        // SAFETY: raw is live; this queues a frame.
        check(unsafe { sys::nghttp2_submit_shutdown_notice(self.raw.as_ptr()) })
    }

    /// GOAWAY with the last stream processed (`last_proc_stream_id`) and `error_code`: no new
    /// stream, those up to it finish; the session is done when they have.
    pub fn submit_goaway(&mut self, error_code: u32) -> Result<(), Error> {
        // SAFETY: raw is live; this queues a frame (no opaque data).
        check(unsafe {
            sys::nghttp2_submit_goaway(
                self.raw.as_ptr(),
                sys::NGHTTP2_FLAG_NONE as u8,
                self.last_proc_stream_id(),
                error_code,
                ptr::null(),
                0,
            )
        })
    }

    /// A PING (its ACK tells the peer is there; the round trip is the caller's to time). Tests
    /// only (the `test-support` feature): neither side sends one of its own.
    #[cfg(any(test, feature = "test-support"))]
    pub fn submit_ping(&mut self) -> Result<(), Error> {
        // SAFETY: raw is live; null opaque data means eight zero bytes.
        check(unsafe {
            sys::nghttp2_submit_ping(self.raw.as_ptr(), sys::NGHTTP2_FLAG_NONE as u8, ptr::null())
        })
    }

    /// Ends the session now: GOAWAY with `error_code` naming the last stream answered
    /// ([`Session::last_answered`]), input ignored from here, and the session is done once
    /// that GOAWAY is written.
    pub fn terminate(&mut self, error_code: u32) -> Result<(), Error> {
        // SAFETY: raw is live; this queues a frame.
        check(unsafe {
            sys::nghttp2_session_terminate_session2(
                self.raw.as_ptr(),
                self.last_answered,
                error_code,
            )
        })?;
        self.terminated = true;
        Ok(())
    }

    /// `n` body bytes of `stream` that `Handler::on_data` was given are taken: its window
    /// reopens by them (a WINDOW_UPDATE is queued once half of it is due). With
    /// `Config::paced_stream_windows` only; a stream no longer open is left alone. Never more
    /// than the stream received: nghttp2 would end the connection for it.
    pub fn consume(&mut self, stream: StreamId, n: usize) -> Result<(), Error> {
        if n == 0 || !self.paced {
            return Ok(());
        }
        // SAFETY: raw is live; this counts bytes and may queue a WINDOW_UPDATE.
        check(unsafe { sys::nghttp2_session_consume_stream(self.raw.as_ptr(), stream, n) })
    }

    /// `stream`'s body has more bytes ready after `Body::Deferred`: ask `body_ready` again.
    pub fn resume_data(&mut self, stream: StreamId) -> Result<(), Error> {
        // SAFETY: raw is live; this moves the stream back to the send queue.
        check(unsafe { sys::nghttp2_session_resume_data(self.raw.as_ptr(), stream) })
    }

    /// Sets the id the next stream opened by this side gets (odd for a client, even for a
    /// server, and above every id used so far). A long-lived connection runs out of ids after
    /// 2^30 streams; starting near the end lets a test reach that in a few.
    pub fn set_next_stream_id(&mut self, id: StreamId) -> Result<(), Error> {
        // SAFETY: raw is live; nghttp2 checks the id (parity, not below those in use).
        check(unsafe { sys::nghttp2_session_set_next_stream_id(self.raw.as_ptr(), id) })
    }

    /// The peer's SETTINGS_MAX_CONCURRENT_STREAMS (unlimited, u32::MAX, until its SETTINGS).
    pub fn remote_max_concurrent_streams(&self) -> u32 {
        // SAFETY: raw is live; a query.
        unsafe {
            sys::nghttp2_session_get_remote_settings(
                self.raw.as_ptr(),
                sys::NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS,
            )
        }
    }

    /// The highest stream this side answered (`submit_response`; 0 for a client): what a
    /// GOAWAY for a connection error names, streams above it unprocessed (RFC 9113 6.8).
    pub fn last_answered(&self) -> StreamId {
        self.last_answered
    }

    /// The id of the last stream the peer opened that this side processed (for GOAWAY).
    pub fn last_proc_stream_id(&self) -> StreamId {
        // SAFETY: raw is live; a query.
        unsafe { sys::nghttp2_session_get_last_proc_stream_id(self.raw.as_ptr()) }
    }

    /// How many body bytes may still be sent on `stream` by its own flow-control window (the
    /// connection's window, `connection_remote_window`, may allow fewer); None if the stream is
    /// not open. Tests only (the `test-support` feature).
    #[cfg(any(test, feature = "test-support"))]
    pub fn stream_remote_window(&self, stream: StreamId) -> Option<u32> {
        // SAFETY: raw is live; a query (-1 for an unknown stream).
        let w = unsafe {
            sys::nghttp2_session_get_stream_remote_window_size(self.raw.as_ptr(), stream)
        };
        u32::try_from(w).ok()
    }

    /// How many body bytes may still be sent on the connection, all streams together. Tests
    /// only (the `test-support` feature).
    #[cfg(any(test, feature = "test-support"))]
    pub fn connection_remote_window(&self) -> u32 {
        // SAFETY: raw is live; a query.
        let w = unsafe { sys::nghttp2_session_get_remote_window_size(self.raw.as_ptr()) };
        u32::try_from(w).unwrap_or(0)
    }

    /// Bytes in our HPACK encoder's dynamic table now. Tests only (the `test-support` feature).
    #[cfg(any(test, feature = "test-support"))]
    pub fn hpack_deflate_size(&self) -> usize {
        // SAFETY: raw is live; a query.
        unsafe { sys::nghttp2_session_get_hd_deflate_dynamic_table_size(self.raw.as_ptr()) }
    }

    /// Frames queued and not yet written (control frames and HEADERS; bodies not counted).
    pub fn outbound_queue_len(&self) -> usize {
        // SAFETY: raw is live; a query.
        unsafe { sys::nghttp2_session_get_outbound_queue_size(self.raw.as_ptr()) }
    }
}

impl<H: Handler> Drop for Session<H> {
    fn drop(&mut self) {
        // SAFETY: raw came from *_new3 and is deleted once, here; nghttp2_session_del frees
        // streams and queues without calling a callback (and user_data is null anyway).
        unsafe { sys::nghttp2_session_del(self.raw.as_ptr()) }
    }
}
