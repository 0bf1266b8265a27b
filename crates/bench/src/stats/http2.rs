//! What an HTTP/2 run counts besides requests and latencies: connections and streams, the
//! server's stream limit, resets by error code, GOAWAYs, HPACK's saving on the request headers,
//! frames received by type, and the bytes that were framing rather than a response's head or
//! body (so that the paper's identity, data moved = heads + bodies, still holds).

use serde::{Deserialize, Serialize};

/// RFC 9113's error codes (0 to 13); a code beyond them is counted in the last slot.
pub const ERROR_CODES: usize = 15;
/// RFC 9113's frame types (0 to 9); an unknown type is counted in the last slot.
pub const FRAME_TYPES: usize = 11;

/// An HTTP/2 run's own counters, of the measured window; all zero over HTTP/1.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http2Stats {
    /// Connections whose server's SETTINGS arrived (the HTTP/2 connection is then up).
    pub connections: u64,
    /// Streams opened for the window's requests (those begun in it, as `requests` counts them):
    /// one per request sent (a request a GOAWAY sends again opens two), so that
    /// streams = requests + unfinished + retried + the streams that failed.
    pub streams: u64,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (the largest seen; 0: none received).
    pub max_concurrent_streams: u64,
    /// RST_STREAM frames received, by error code (read from the frames, as `frames_received`
    /// is: also those nghttp2 ignored after a frame that broke the protocol).
    pub rst_streams: [u64; ERROR_CODES],
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server did not process before its GOAWAY, sent again on a new connection.
    pub retried: u64,
    /// HPACK-encoded request header blocks sent.
    pub header_bytes_sent: u64,
    /// The request header lists uncompressed (names and values): what HPACK saved is this less
    /// `header_bytes_sent`, in the request direction (h2load's "space savings" is the same ratio
    /// in the response direction).
    pub header_bytes_plain: u64,
    /// Frames received, by type (CONTINUATION frames included), each counted in the window
    /// its last byte was read in, as what it says is (a GOAWAY in `goaways`, a RST_STREAM in
    /// `rst_streams`).
    pub frames_received: [u64; FRAME_TYPES],
    /// Bytes read that are HTTP/2 framing: frame headers, padding, and frames that belong to no
    /// response (SETTINGS, PING, WINDOW_UPDATE, GOAWAY, RST_STREAM).
    pub bytes_framing: u64,
}

impl Http2Stats {
    /// Adds another thread's (or host's) counters: sums, and the largest `max_concurrent_streams`
    /// seen.
    pub fn merge(&mut self, o: &Http2Stats) {
        self.connections += o.connections;
        self.streams += o.streams;
        self.max_concurrent_streams = self.max_concurrent_streams.max(o.max_concurrent_streams);
        for (a, b) in self.rst_streams.iter_mut().zip(&o.rst_streams) {
            *a += b;
        }
        self.goaways += o.goaways;
        self.retried += o.retried;
        self.header_bytes_sent += o.header_bytes_sent;
        self.header_bytes_plain += o.header_bytes_plain;
        for (a, b) in self.frames_received.iter_mut().zip(&o.frames_received) {
            *a += b;
        }
        self.bytes_framing += o.bytes_framing;
    }

    /// What HPACK saved on the request headers.
    pub fn header_bytes_saved(&self) -> u64 {
        self.header_bytes_plain
            .saturating_sub(self.header_bytes_sent)
    }

    /// A RST_STREAM received with `code`.
    #[inline]
    pub fn count_rst(&mut self, code: u32) {
        self.rst_streams[(code as usize).min(ERROR_CODES - 1)] += 1;
    }

    /// A frame of type `ty` received.
    #[inline]
    pub fn count_frame(&mut self, ty: u8) {
        self.frames_received[(ty as usize).min(FRAME_TYPES - 1)] += 1;
    }
}

/// RFC 9113's name of error code `code` (`code_0x..` beyond them).
pub fn error_code_name(code: usize) -> &'static str {
    const NAMES: [&str; ERROR_CODES - 1] = [
        "NO_ERROR",
        "PROTOCOL_ERROR",
        "INTERNAL_ERROR",
        "FLOW_CONTROL_ERROR",
        "SETTINGS_TIMEOUT",
        "STREAM_CLOSED",
        "FRAME_SIZE_ERROR",
        "REFUSED_STREAM",
        "CANCEL",
        "COMPRESSION_ERROR",
        "CONNECT_ERROR",
        "ENHANCE_YOUR_CALM",
        "INADEQUATE_SECURITY",
        "HTTP_1_1_REQUIRED",
    ];
    NAMES.get(code).copied().unwrap_or("OTHER")
}

/// RFC 9113's name of frame type `ty` (`OTHER` beyond them).
pub fn frame_type_name(ty: usize) -> &'static str {
    const NAMES: [&str; FRAME_TYPES - 1] = [
        "DATA",
        "HEADERS",
        "PRIORITY",
        "RST_STREAM",
        "SETTINGS",
        "PUSH_PROMISE",
        "PING",
        "GOAWAY",
        "WINDOW_UPDATE",
        "CONTINUATION",
    ];
    NAMES.get(ty).copied().unwrap_or("OTHER")
}
