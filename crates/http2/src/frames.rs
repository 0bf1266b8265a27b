//! Where the frames of the peer's byte stream begin, so `Session::recv` can hand nghttp2 the
//! input one frame at a time and show the caller each frame header first
//! ([`Handler::on_begin_frame`](crate::Handler::on_begin_frame)).
//!
//! Every frame starts with a 9-byte header whose first 3 bytes are the payload's length (RFC
//! 9113 4.1), so the boundaries follow from the headers alone; a server's input starts with the
//! 24-byte client preface, which is not a frame. A header split across reads is kept here until
//! it is whole. Nothing is allocated.

use crate::handler::StreamId;

/// The client connection preface's length (RFC 9113 3.4).
const PREFACE_LEN: usize = 24;
const HEADER_LEN: usize = 9;

/// A frame header: type, flags, stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FrameHead {
    pub kind: u8,
    pub flags: u8,
    pub stream: StreamId,
}

/// The position in the peer's byte stream.
#[derive(Debug)]
pub(crate) struct Frames {
    /// Bytes still to skip: the rest of the preface, or of the current frame's payload.
    skip: usize,
    /// The header being received, and how much of it is there.
    head: [u8; HEADER_LEN],
    have: usize,
}

impl Frames {
    /// `server`: the input starts with the client preface.
    pub fn new(server: bool) -> Frames {
        Frames {
            skip: if server { PREFACE_LEN } else { 0 },
            head: [0; HEADER_LEN],
            have: 0,
        }
    }

    /// Scans `input` from `at`: returns where the next whole frame header's bytes begin in
    /// `input` (0 if it began in an earlier input), where they end, and the header; `None` if
    /// no header completes in the rest of `input` (what was scanned is remembered).
    pub fn next(&mut self, input: &[u8], mut at: usize) -> Option<(usize, usize, FrameHead)> {
        loop {
            let left = input.len() - at;
            if left == 0 {
                return None;
            }
            if self.skip > 0 {
                let k = self.skip.min(left);
                self.skip -= k;
                at += k;
                continue;
            }
            let start = at;
            let k = (HEADER_LEN - self.have).min(left);
            self.head[self.have..self.have + k].copy_from_slice(&input[at..at + k]);
            self.have += k;
            at += k;
            if self.have < HEADER_LEN {
                return None;
            }
            self.have = 0;
            let h = &self.head;
            self.skip = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
            let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
            let head = FrameHead {
                kind: h[3],
                flags: h[4],
                stream: stream as StreamId,
            };
            // The header's first byte in this input: where it started, unless it started in an
            // earlier one (then `start` is 0 and the bytes before it here are its own).
            return Some((start, at, head));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: usize) -> Vec<u8> {
        let mut f = vec![
            (payload >> 16) as u8,
            (payload >> 8) as u8,
            payload as u8,
            kind,
            flags,
        ];
        f.extend_from_slice(&stream.to_be_bytes());
        f.resize(f.len() + payload, 0xAA);
        f
    }

    #[test]
    fn finds_every_header_however_the_input_is_cut() {
        let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
        let want = [(4, 0, 0, 6), (1, 5, 1, 20), (0, 1, 1, 0), (0, 0, 3, 300)];
        for &(k, f, s, n) in &want {
            input.extend(frame(k, f, s, n));
        }
        for cut in 1..input.len() {
            let mut frames = Frames::new(true);
            let mut seen = Vec::new();
            for part in [&input[..cut], &input[cut..]] {
                let mut at = 0;
                while let Some((start, end, h)) = frames.next(part, at) {
                    assert!(start <= end && end <= part.len());
                    seen.push((h.kind, h.flags, h.stream));
                    at = end;
                }
            }
            let want: Vec<_> = want.iter().map(|&(k, f, s, _)| (k, f, s as i32)).collect();
            assert_eq!(seen, want, "cut at {cut}");
        }
    }
}
