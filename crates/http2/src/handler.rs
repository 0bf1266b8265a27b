//! What a connection's owner implements: the input events of a session and the output it takes.

use wire::FieldName;

use crate::Error;

/// An HTTP/2 stream identifier (odd: opened by the client; 0 is the connection).
pub type StreamId = i32;

/// What a block of headers that begins is ([`Handler::on_begin_headers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeadersKind {
    /// A request opening a stream (server side).
    Request,
    /// The first response headers on a stream (client side).
    Response,
    /// Headers after those: trailers, or the final response after a 1xx.
    Trailers,
    /// A pushed response; never seen in practice, the client refuses push (ENABLE_PUSH 0, and
    /// no reserved streams are allowed), so nghttp2 resets such a stream.
    PushRefused,
}

/// What [`Handler::on_header`] decides about one header field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderVerdict {
    /// Keep going.
    Accept,
    /// Reset this stream (RST_STREAM INTERNAL_ERROR, as nghttp2 sends for a refused field); the
    /// rest of its header block is ignored and the connection goes on.
    ResetStream,
    /// End the connection: GOAWAY PROTOCOL_ERROR is queued, all further input is ignored, and
    /// the session is done once that GOAWAY is written.
    FailConnection,
}

/// What [`Handler::on_begin_frame`] decides about a frame whose header just arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameVerdict {
    /// nghttp2 processes the frame.
    Accept,
    /// End the connection: GOAWAY with this error code is queued, this frame and all further
    /// input are ignored, and the session is done once that GOAWAY is written.
    FailConnection(u32),
}

/// What [`Handler::body_ready`] says about a stream's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `len` bytes (at most the `max` asked for; 0 only with `end`) can go now, in one DATA
    /// frame that [`Handler::write_data`] writes; `end` if they are the last of the body
    /// (END_STREAM). A `len` above `max` is cut to `max` and the body goes on (`end` ignored);
    /// 0 without `end` is taken as `Deferred`.
    Ready {
        /// Body bytes that go in this DATA frame.
        len: usize,
        /// Whether they end the body.
        end: bool,
    },
    /// Nothing yet: the stream waits until the caller calls `Session::resume_data`.
    Deferred,
    /// The body cannot be produced: reset the stream (RST_STREAM INTERNAL_ERROR).
    Reset,
}

/// The owner of a connection: receives what the peer sent and takes what the session writes.
///
/// One `Session<H>` calls these only from inside `Session::recv` and `Session::send`, with the
/// `&mut H` passed to that call: never from `submit_*`, the queries, or `Drop`. Slices passed in
/// are borrowed from nghttp2's buffers for the duration of the call only.
///
/// A panic in a method is caught at the C boundary, the session fails (it is unusable after),
/// and the panic resumes when `recv`/`send` returns.
pub trait Handler {
    /// Whether [`Handler::on_begin_frame`] is called: the input is then handed to nghttp2 one
    /// frame at a time (a few more calls into it per read, nothing allocated).
    const BEGIN_FRAME: bool = false;

    /// A frame's 9-byte header arrived (every frame, CONTINUATION included), before nghttp2
    /// sees it and after it has processed every frame before it. Unlike nghttp2's own
    /// `on_begin_frame_callback`, it is called for frames nghttp2 would ignore unseen (DATA on
    /// a stream it has forgotten), which is what it is for: a stream nghttp2 has closed and
    /// freed is unknown to it, and only the caller can remember how it ended. Called only when
    /// [`Handler::BEGIN_FRAME`] is true, and not once the session has ended the connection
    /// itself (this method, a check below, or `Session::terminate`) or its GOAWAY is written;
    /// after a connection error nghttp2 found in an earlier frame of the same input, it may
    /// still be called for the frames that follow, which nghttp2 ignores. Also then,
    /// the session makes the checks nghttp2 leaves out first (a HEADERS on a skipped stream id,
    /// PRIORITY on stream 0 or on itself, a stream window past 2^31-1), and a frame they refuse
    /// or drop is not shown here.
    fn on_begin_frame(&mut self, frame_type: u8, flags: u8, stream: StreamId) -> FrameVerdict {
        let _ = (frame_type, flags, stream);
        FrameVerdict::Accept
    }

    /// Takes bytes to send to the peer (frame headers, HEADERS blocks, control frames); returns
    /// how many it took. A client's: fewer than offered, the rest is offered again at once; 0,
    /// it can take none now, `send` returns and nghttp2 offers the same bytes at the next
    /// `send`. A server's: fewer than offered, it can take no more now; the rest, and the frames
    /// nghttp2 has ready after it, wait in the session (no DATA frame is written meanwhile) and
    /// are offered first at the next `send`.
    fn write(&mut self, bytes: &[u8]) -> usize;

    /// How much of `stream`'s body can go now, at most `max` bytes; asked for a stream that was
    /// submitted with a body. The default has no bodies: it resets the stream.
    fn body_ready(&mut self, stream: StreamId, max: usize) -> Body {
        let _ = (stream, max);
        Body::Reset
    }

    /// Writes one whole DATA frame: the 9 bytes of `frame_header`, then the next `len` bytes of
    /// `stream`'s body (from memory, a shared cached body, a file range: the caller's choice).
    /// Returns true if the frame was taken whole, false if nothing was taken (nghttp2 asks again
    /// with the same frame at the next `send`). Taking part of a frame is not possible.
    /// Called only after `body_ready` answered `Ready`; the default takes nothing.
    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        let _ = (stream, frame_header, len);
        false
    }

    /// A block of headers begins on `stream`.
    fn on_begin_headers(&mut self, stream: StreamId, kind: HeadersKind) {
        let _ = (stream, kind);
    }

    /// One header field (pseudo-headers first, as received; names are lowercase). Fields are
    /// checked against RFC 9113's rules first: by nghttp2 in a client, by the session's own
    /// request checks in a server (`messaging.rs`), which end the connection or reset the
    /// stream for a malformed request, and show no field from the first malformed one on.
    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        let _ = (stream, name, value);
        HeaderVerdict::Accept
    }

    /// One field of a block a server session received, once its checks passed it, with the name
    /// they recognised: a handler matches `known` instead of the name's bytes again (the checks
    /// already did). A server session calls this in place of [`Handler::on_header`], which it
    /// is by default.
    fn on_request_header(
        &mut self,
        stream: StreamId,
        known: FieldName,
        name: &[u8],
        value: &[u8],
    ) -> HeaderVerdict {
        let _ = known;
        self.on_header(stream, name, value)
    }

    /// The request on `stream` was malformed (a server session's checks: a field RFC 9113 8.2.1
    /// refuses): its stream is reset with PROTOCOL_ERROR, [`Handler::on_headers_end`] is not
    /// called for it, and [`Handler::on_stream_close`] follows once the reset is written.
    fn on_malformed_request(&mut self, stream: StreamId) {
        let _ = stream;
    }

    /// The header list of the request on `stream` (a server session's) passed
    /// `Config::max_header_list_size`: the handler hears none of its fields from this one on,
    /// and answers it as too large (HTTP's 431, RFC 9113 10.5.1) once [`Handler::on_headers_end`]
    /// comes. Called once per block; for trailers too. Past `Config::max_header_list_decoded`
    /// the connection ends instead.
    fn on_header_list_too_large(&mut self, stream: StreamId) {
        let _ = stream;
    }

    /// The block of headers on `stream` is complete; `end_stream` if the peer's side of the
    /// stream ends with it (a request without a body, trailers).
    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        let _ = (stream, end_stream);
    }

    /// Body bytes of `stream` (any part of a DATA frame, padding removed).
    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        let _ = (stream, data);
    }

    /// With `Config::paced_stream_windows`, called instead of [`Handler::on_data`]: returns
    /// how many of `data` are taken already (dropped, or kept where they hold no window), and
    /// the stream's window reopens by them at once, as nghttpx consumes in its data callback;
    /// the others reopen it by `Session::consume`. None unless the handler says so.
    fn on_data_paced(&mut self, stream: StreamId, data: &[u8]) -> usize {
        self.on_data(stream, data);
        0
    }

    /// The peer's body on `stream` ended (a DATA frame with END_STREAM).
    fn on_data_end(&mut self, stream: StreamId) {
        let _ = stream;
    }

    /// `stream` is closed (both sides ended, reset by either side, or the session ended);
    /// `error_code` is the HTTP/2 error code (0 for a normal end). Called once per stream.
    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        let _ = (stream, error_code);
    }

    /// The peer reset `stream` (`on_stream_close` follows).
    fn on_rst_stream(&mut self, stream: StreamId, error_code: u32) {
        let _ = (stream, error_code);
    }

    /// The peer sent GOAWAY: streams above `last_stream_id` were not processed (they close with
    /// REFUSED_STREAM) and no new stream may start.
    fn on_goaway(&mut self, last_stream_id: StreamId, error_code: u32) {
        let _ = (last_stream_id, error_code);
    }

    /// The peer's SETTINGS were received and applied (`Session::remote_max_concurrent_streams`
    /// and the windows now say what the peer allows).
    fn on_settings(&mut self) {}

    /// A frame was received (every type, CONTINUATION folded into its HEADERS), for counting.
    fn on_frame_received(&mut self, frame_type: u8) {
        let _ = frame_type;
    }

    /// A frame was written; `len` is its payload length (for HEADERS, the whole header block
    /// with its CONTINUATIONs), for counting.
    fn on_frame_sent(&mut self, frame_type: u8, len: usize) {
        let _ = (frame_type, len);
    }

    /// This side's HEADERS on `stream` was written whole (its header block, CONTINUATION frames
    /// included): a client's request has left, whatever body follows.
    fn on_headers_sent(&mut self, stream: StreamId) {
        let _ = stream;
    }

    /// This side's HEADERS or DATA frame with END_STREAM on `stream` was written: its side of
    /// the stream is complete (a server's response sent whole). The stream stays open while
    /// the peer's side has not ended.
    fn on_end_stream_sent(&mut self, stream: StreamId) {
        let _ = stream;
    }

    /// A frame the peer sent broke the protocol and nghttp2 has answered (RST_STREAM or
    /// GOAWAY). Not every error is reported here (nghttp2 rejects some frames before it has
    /// one to report); every connection error ends in [`Handler::on_goaway_sent`].
    fn on_invalid_frame(&mut self, frame_type: u8, error: Error) {
        let _ = (frame_type, error);
    }

    /// This side wrote GOAWAY: a graceful shutdown (NO_ERROR) or a connection error (any other
    /// code, e.g. PROTOCOL_ERROR for a malformed frame, ENHANCE_YOUR_CALM past the glitch limit,
    /// INTERNAL_ERROR past the rapid-reset limit).
    fn on_goaway_sent(&mut self, last_stream_id: StreamId, error_code: u32) {
        let _ = (last_stream_id, error_code);
    }
}
