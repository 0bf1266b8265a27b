//! Follows the frame boundaries of a byte stream, so that every byte read can be counted as what
//! it is: a header block (HEADERS, CONTINUATION), a DATA payload, or framing (the 9-byte frame
//! headers, and frames that belong to no stream). bench reads a server's output with it ahead of
//! nghttp2, which reports frames but not their sizes: 9 bytes looked at per frame is the cheapest
//! way to keep its identity (data moved = heads + bodies) exact. Nothing is allocated.

use super::frame_type::{CONTINUATION, DATA, GOAWAY, HEADERS, RST_STREAM};
use super::{FrameHead, HEADER_LEN};
use crate::handler::StreamId;

/// What a span of received bytes is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Span {
    /// Framing: frame headers and frames no response owns.
    Framing,
    /// Part of a header block of stream `id`.
    Header(StreamId),
    /// Part of a DATA payload of stream `id` (padding included; the body is what nghttp2
    /// hands over).
    Data(StreamId),
    /// A frame of this type, on this stream, begins (its header is complete; no bytes).
    Frame(u8, StreamId),
    /// A frame is complete (its last byte read; no bytes): where nghttp2 acts on it, so a frame
    /// is counted on the same side of the window's edges as what it says. `word`: the first
    /// four bytes of a RST_STREAM's or GOAWAY's payload (its error code, its last stream id);
    /// `flags`: the frame's flags (END_STREAM on a DATA frame).
    End {
        /// The frame's type, of [`frame_type`](crate::frame::frame_type).
        ty: u8,
        /// The frame's flags, of [`flags`](crate::frame::flags).
        flags: u8,
        /// The frame's stream, 0 for the connection.
        stream: StreamId,
        /// The payload's first four bytes, big-endian (zero-filled past a shorter payload), of a
        /// RST_STREAM or GOAWAY; 0 for other types.
        word: u32,
    },
}

/// The position in the frame stream, kept across reads.
#[derive(Debug, Clone, Copy, Default)]
pub struct FrameScanner {
    head: [u8; HEADER_LEN],
    have: u8,
    /// Payload bytes of the current frame still to come.
    left: u32,
    ty: u8,
    stream: StreamId,
    /// A RST_STREAM's or GOAWAY's first payload bytes, and how many are in.
    word: [u8; 4],
    got: u8,
}

impl FrameScanner {
    /// Walks `data`, calling `each(span, len)` for every span, `each(Frame(type, stream), 0)`
    /// when a frame header is complete and `each(End { .. }, 0)` when its payload is.
    #[inline]
    pub fn scan(&mut self, mut data: &[u8], mut each: impl FnMut(Span, usize)) {
        while !data.is_empty() {
            if self.left > 0 {
                let n = (self.left as usize).min(data.len());
                let span = match self.ty {
                    HEADERS | CONTINUATION if self.stream != 0 => Span::Header(self.stream),
                    DATA if self.stream != 0 => Span::Data(self.stream),
                    _ => Span::Framing,
                };
                each(span, n);
                if matches!(self.ty, RST_STREAM | GOAWAY) && self.got < 4 {
                    let k = n.min(4 - self.got as usize);
                    let at = self.got as usize;
                    self.word[at..at + k].copy_from_slice(&data[..k]);
                    self.got += k as u8;
                }
                self.left -= n as u32;
                data = &data[n..];
                if self.left == 0 {
                    each(self.end(), 0);
                }
                continue;
            }
            let want = HEADER_LEN - self.have as usize;
            let n = want.min(data.len());
            self.head[self.have as usize..self.have as usize + n].copy_from_slice(&data[..n]);
            self.have += n as u8;
            data = &data[n..];
            each(Span::Framing, n);
            if self.have as usize == HEADER_LEN {
                let head = FrameHead::parse(&self.head);
                self.left = head.len;
                self.ty = head.kind;
                self.stream = head.stream;
                self.have = 0;
                (self.word, self.got) = ([0; 4], 0);
                each(Span::Frame(self.ty, self.stream), 0);
                if self.left == 0 {
                    each(self.end(), 0);
                }
            }
        }
    }

    #[inline] // called from `scan`, which is generic: compiled in the caller's crate
    fn end(&self) -> Span {
        Span::End {
            ty: self.ty,
            flags: self.head[4],
            stream: self.stream,
            word: u32::from_be_bytes(self.word),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_follow_frames_across_reads() {
        // SETTINGS (empty), HEADERS of 3 bytes on stream 1, DATA of 4 on stream 1.
        let mut bytes = vec![0, 0, 0, 4, 0, 0, 0, 0, 0];
        bytes.extend([0, 0, 3, 1, 4, 0, 0, 0, 1, 0x88, 0x89, 0x8a]);
        bytes.extend([0, 0, 4, 0, 1, 0, 0, 0, 1, b'a', b'b', b'c', b'd']);
        for cut in 0..bytes.len() {
            let mut s = FrameScanner::default();
            let (mut framing, mut header, mut data) = (0, 0, 0);
            let (mut frames, mut ends) = (Vec::new(), Vec::new());
            for part in [&bytes[..cut], &bytes[cut..]] {
                s.scan(part, |span, n| match span {
                    Span::Framing => framing += n,
                    Span::Header(1) => header += n,
                    Span::Data(1) => data += n,
                    Span::Frame(t, _) => frames.push(t),
                    Span::End { ty, .. } => ends.push(ty),
                    other => panic!("{other:?}"),
                });
            }
            assert_eq!((framing, header, data), (27, 3, 4), "cut at {cut}");
            assert_eq!(frames, [4, 1, 0]);
            // Each ends once, after its last byte: at the cut only if that byte came first.
            assert_eq!(ends, [4, 1, 0], "cut at {cut}");
        }
    }
}
