//! nghttp2's library error codes as one small `Copy` error, and the HTTP/2 error codes.

use std::ffi::CStr;
use std::fmt;

use libnghttp2_sys as sys;

/// An error nghttp2 returned: its library error code (negative, `NGHTTP2_ERR_*`) and its text
/// (`nghttp2_strerror`, a static string: making an `Error` allocates nothing).
///
/// A protocol error the peer made is mostly not an `Error`: nghttp2 answers it itself (RST_STREAM
/// for a stream error, GOAWAY for a connection error, reported to
/// [`Handler::on_invalid_frame`](crate::Handler::on_invalid_frame)) and `recv` returns `Ok`;
/// the connection then ends when `want_read` and `want_write` are both false. An `Error` from
/// `recv` or `send` that [`is_fatal`](Error::is_fatal) means the session is unusable: close the
/// connection without sending anything more (floods and the CONTINUATION limit end here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Error {
    /// nghttp2's library error code, `NGHTTP2_ERR_*` (see [`lib_error`]).
    pub code: i32,
    /// nghttp2's text for the code.
    pub message: &'static str,
}

impl Error {
    pub(crate) fn from_code(code: i32) -> Error {
        // SAFETY: nghttp2_strerror returns a pointer to a static NUL-terminated ASCII string for
        // every int (unknown codes get "Unknown error code"); it is never freed.
        let text = unsafe { CStr::from_ptr(sys::nghttp2_strerror(code)) };
        Error {
            code,
            message: text.to_str().unwrap_or("nghttp2 error"),
        }
    }

    /// The session cannot be used any more (nghttp2_is_fatal): drop it and close the connection.
    pub fn is_fatal(&self) -> bool {
        // SAFETY: nghttp2_is_fatal only compares its argument with a constant.
        unsafe { sys::nghttp2_is_fatal(self.code) != 0 }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "nghttp2: {} ({})", self.message, self.code)
    }
}

impl std::error::Error for Error {}

/// nghttp2's library error codes that callers and tests look for (`Error::code`).
pub mod lib_error {
    use libnghttp2_sys as sys;
    /// The peer queued too many PING or SETTINGS acknowledgements (a flood): fatal.
    pub const FLOODED: i32 = sys::NGHTTP2_ERR_FLOODED;
    /// More CONTINUATION frames followed a HEADERS than `Config::max_continuations`: fatal.
    pub const TOO_MANY_CONTINUATIONS: i32 = sys::NGHTTP2_ERR_TOO_MANY_CONTINUATIONS;
    /// The client preface was wrong: fatal.
    pub const BAD_CLIENT_MAGIC: i32 = sys::NGHTTP2_ERR_BAD_CLIENT_MAGIC;
    /// A handler callback failed (a panic in a handler, or a callback outside recv/send).
    pub const CALLBACK_FAILURE: i32 = sys::NGHTTP2_ERR_CALLBACK_FAILURE;
    /// A frame was malformed.
    pub const PROTO: i32 = sys::NGHTTP2_ERR_PROTO;
    /// No new stream may start (GOAWAY sent or received).
    pub const START_STREAM_NOT_ALLOWED: i32 = sys::NGHTTP2_ERR_START_STREAM_NOT_ALLOWED;
    /// The stream is closed or was never opened.
    pub const STREAM_CLOSED: i32 = sys::NGHTTP2_ERR_STREAM_CLOSED;
    /// The argument was wrong (stream 0, a value out of range).
    pub const INVALID_ARGUMENT: i32 = sys::NGHTTP2_ERR_INVALID_ARGUMENT;
    /// A call the session's state does not allow now: a server session's `send` from inside
    /// another server session's handler on the same thread.
    pub const INVALID_STATE: i32 = sys::NGHTTP2_ERR_INVALID_STATE;
}

/// HTTP/2 error codes (RFC 9113 section 7), as RST_STREAM and GOAWAY carry them.
pub mod error_code {
    use libnghttp2_sys as sys;
    /// 0x0: a graceful end, not an error.
    pub const NO_ERROR: u32 = sys::NGHTTP2_NO_ERROR;
    /// 0x1: a protocol violation, the generic error (the frame checks send it).
    pub const PROTOCOL_ERROR: u32 = sys::NGHTTP2_PROTOCOL_ERROR;
    /// 0x2: the sender failed on its own account (a body that cannot be produced).
    pub const INTERNAL_ERROR: u32 = sys::NGHTTP2_INTERNAL_ERROR;
    /// 0x3: the peer sent more than a flow-control window allowed.
    pub const FLOW_CONTROL_ERROR: u32 = sys::NGHTTP2_FLOW_CONTROL_ERROR;
    /// 0x4: a SETTINGS frame was not acknowledged in time.
    pub const SETTINGS_TIMEOUT: u32 = sys::NGHTTP2_SETTINGS_TIMEOUT;
    /// 0x5: a frame came on a stream already half-closed.
    pub const STREAM_CLOSED: u32 = sys::NGHTTP2_STREAM_CLOSED;
    /// 0x6: a frame had a length its type does not allow.
    pub const FRAME_SIZE_ERROR: u32 = sys::NGHTTP2_FRAME_SIZE_ERROR;
    /// 0x7: the stream was refused before any processing; it can be retried.
    pub const REFUSED_STREAM: u32 = sys::NGHTTP2_REFUSED_STREAM;
    /// 0x8: the stream is no longer needed.
    pub const CANCEL: u32 = sys::NGHTTP2_CANCEL;
    /// 0x9: the HPACK state cannot be kept in step.
    pub const COMPRESSION_ERROR: u32 = sys::NGHTTP2_COMPRESSION_ERROR;
    /// 0xa: a CONNECT request's connection was reset or closed.
    pub const CONNECT_ERROR: u32 = sys::NGHTTP2_CONNECT_ERROR;
    /// 0xb: the peer is generating excessive load (the flood mitigations send it).
    pub const ENHANCE_YOUR_CALM: u32 = sys::NGHTTP2_ENHANCE_YOUR_CALM;
    /// 0xc: the TLS connection does not meet HTTP/2's requirements.
    pub const INADEQUATE_SECURITY: u32 = sys::NGHTTP2_INADEQUATE_SECURITY;
    /// 0xd: the request must be sent again over HTTP/1.1.
    pub const HTTP_1_1_REQUIRED: u32 = sys::NGHTTP2_HTTP_1_1_REQUIRED;
}
