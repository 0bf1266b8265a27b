//! HTTP/2's framing layer as bytes (RFC 9113 sections 3.4, 4.1 and 6): the client preface, the
//! frame types and flags, the 9-byte frame header, and [`FrameScanner`], which follows the frame
//! boundaries of a byte stream. The session reads frame headers with [`FrameHead::parse`] before
//! nghttp2 sees them; bench follows what a server sends with [`FrameScanner`] to count every byte
//! as what it carries; tests build raw frames with [`FrameHead::to_bytes`].

pub(crate) mod input;
mod scan;

pub use scan::{FrameScanner, Span};

use crate::handler::StreamId;

/// The client connection preface (RFC 9113 3.4): not a frame, it comes before the first one.
pub const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// A frame header's length: payload length (24 bits), type, flags, stream (31 bits).
pub const HEADER_LEN: usize = 9;

/// HTTP/2 frame types (RFC 9113 section 6), as frame headers and the frame callbacks carry them.
pub mod frame_type {
    /// Body bytes of a stream.
    pub const DATA: u8 = 0;
    /// A header block's start (a request's or response's fields, or trailers); the first opens
    /// its stream.
    pub const HEADERS: u8 = 1;
    /// RFC 7540's stream priority, deprecated by RFC 9113.
    pub const PRIORITY: u8 = 2;
    /// Ends one stream, with an error code.
    pub const RST_STREAM: u8 = 3;
    /// The sender's parameters for the connection, or their acknowledgement.
    pub const SETTINGS: u8 = 4;
    /// A stream the server means to push (flint's client refuses push).
    pub const PUSH_PROMISE: u8 = 5;
    /// Eight bytes to echo, for round-trip time and liveness.
    pub const PING: u8 = 6;
    /// Ends the connection, naming the last stream the sender may have processed.
    pub const GOAWAY: u8 = 7;
    /// Credit added to a stream's or the connection's flow-control window.
    pub const WINDOW_UPDATE: u8 = 8;
    /// The rest of a header block begun by HEADERS or PUSH_PROMISE.
    pub const CONTINUATION: u8 = 9;
}

/// Frame flags (RFC 9113 section 6); each means something only on the frame types named.
pub mod flags {
    /// DATA, HEADERS: the stream's last frame from this side.
    pub const END_STREAM: u8 = 0x1;
    /// SETTINGS, PING: an acknowledgement.
    pub const ACK: u8 = 0x1;
    /// HEADERS, PUSH_PROMISE, CONTINUATION: the header block ends in this frame.
    pub const END_HEADERS: u8 = 0x4;
    /// DATA, HEADERS, PUSH_PROMISE: a pad length byte first, padding last.
    pub const PADDED: u8 = 0x8;
    /// HEADERS: a stream dependency and weight before the header block.
    pub const PRIORITY: u8 = 0x20;
}

/// A frame header: type, flags, stream, payload length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameHead {
    /// The frame type, one of [`frame_type`] (an unknown type is ignored by a receiver).
    pub kind: u8,
    /// The flags, of [`flags`]; what each means depends on the type.
    pub flags: u8,
    /// The stream (the reserved bit left out).
    pub stream: StreamId,
    /// The payload's length (24 bits).
    pub len: u32,
}

impl FrameHead {
    /// The header in its 9 bytes.
    #[inline]
    pub fn parse(h: &[u8; HEADER_LEN]) -> FrameHead {
        FrameHead {
            kind: h[3],
            flags: h[4],
            stream: (u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff) as StreamId,
            len: u32::from_be_bytes([0, h[0], h[1], h[2]]),
        }
    }

    /// Its 9 bytes (a `len` beyond 24 bits and a negative stream are cut to their fields).
    pub fn to_bytes(&self) -> [u8; HEADER_LEN] {
        let len = self.len.to_be_bytes();
        let stream = (self.stream as u32 & 0x7fff_ffff).to_be_bytes();
        [
            len[1], len[2], len[3], self.kind, self.flags, stream[0], stream[1], stream[2],
            stream[3],
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_reads_back_what_it_was_written_with() {
        let head = FrameHead {
            kind: frame_type::HEADERS,
            flags: flags::END_HEADERS | flags::END_STREAM,
            stream: 0x7fff_fffe,
            len: 0xab_cdef,
        };
        let bytes = head.to_bytes();
        assert_eq!(bytes, [0xab, 0xcd, 0xef, 1, 5, 0x7f, 0xff, 0xff, 0xfe]);
        assert_eq!(FrameHead::parse(&bytes), head);
        // The reserved bit is not part of the stream.
        let mut reserved = bytes;
        reserved[5] |= 0x80;
        assert_eq!(FrameHead::parse(&reserved), head);
    }
}
