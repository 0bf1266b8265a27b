//! Where the frames of the peer's byte stream begin, so `Session::recv` can hand nghttp2 the
//! input one frame at a time and look at each frame header first (its own checks, then
//! [`Handler::on_begin_frame`](crate::Handler::on_begin_frame)).
//!
//! Every frame starts with a 9-byte header whose first 3 bytes are the payload's length (RFC
//! 9113 4.1), so the boundaries follow from the headers alone; a server's input starts with the
//! 24-byte client preface, which is not a frame. A header split across reads is kept here until
//! it is whole, and so are the first 4 payload bytes of the frames whose check reads them
//! (PRIORITY's dependency, a stream WINDOW_UPDATE's increment): nghttp2 sees those bytes only
//! once the check has decided, and a frame the check drops never reaches it. Nothing is
//! allocated.

use super::{frame_type, FrameHead, HEADER_LEN, PREFACE};
use crate::handler::StreamId;

/// A header and the payload word a check reads.
const HELD_MAX: usize = HEADER_LEN + 4;

/// A frame whose header (and word, if it has one) is whole.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Found {
    /// Where its bytes begin in this input (0 if they began in an earlier one: `carried`).
    pub start: usize,
    /// Where its header (and word) end in this input.
    pub end: usize,
    pub head: FrameHead,
    /// The payload's first 4 bytes (big-endian), for the frames [`reads_word`] names.
    pub word: Option<u32>,
    /// Its bytes from earlier inputs, not handed to nghttp2 yet: `carried[..carried_len]`.
    pub carried: [u8; HELD_MAX],
    pub carried_len: usize,
}

/// What the scan of an input found next.
#[derive(Debug)]
pub(crate) enum Step {
    Frame(Found),
    /// The input ends; `input[held_from..]` is the start of a header (or word) kept here.
    End {
        held_from: usize,
    },
}

/// Whether a frame's check needs the first 4 bytes of its payload: a PRIORITY's stream
/// dependency, a stream WINDOW_UPDATE's increment (frames of another length are nghttp2's to
/// refuse).
fn reads_word(kind: u8, len: u32, stream: StreamId) -> bool {
    match kind {
        frame_type::PRIORITY => len == 5,
        frame_type::WINDOW_UPDATE => len == 4 && stream != 0,
        _ => false,
    }
}

/// The position in the peer's byte stream.
#[derive(Debug)]
pub(crate) struct Frames {
    /// Bytes still to pass on: the rest of the preface, or of the current frame's payload.
    skip: usize,
    /// The header being received (and its word), and how much of it is there.
    held: [u8; HELD_MAX],
    have: usize,
    /// How much is wanted: the header, or the header and its word.
    want: usize,
}

impl Frames {
    /// `server`: the input starts with the client preface.
    pub fn new(server: bool) -> Frames {
        Frames {
            skip: if server { PREFACE.len() } else { 0 },
            held: [0; HELD_MAX],
            have: 0,
            want: HEADER_LEN,
        }
    }

    /// Scans `input` from `at` (0, or the `end` of the frame found before in it).
    pub fn next(&mut self, input: &[u8], mut at: usize) -> Step {
        // Where this frame's bytes begin in this input, and how many came in earlier ones (a
        // call that returned a frame left none held, so only an input's first call has any).
        let mut start = at;
        let carried_len = self.have;
        loop {
            let left = input.len() - at;
            if left == 0 {
                let held_from = if self.have > 0 { start } else { input.len() };
                return Step::End { held_from };
            }
            if self.skip > 0 {
                let k = self.skip.min(left);
                self.skip -= k;
                at += k;
                start = at;
                continue;
            }
            let k = (self.want - self.have).min(left);
            self.held[self.have..self.have + k].copy_from_slice(&input[at..at + k]);
            self.have += k;
            at += k;
            if self.have < HEADER_LEN {
                continue; // the input ends
            }
            let h = &self.held;
            let head = FrameHead::parse(h[..HEADER_LEN].try_into().expect("a whole header"));
            let len = head.len;
            if self.want == HEADER_LEN && reads_word(head.kind, len, head.stream) {
                self.want = HELD_MAX;
                continue;
            }
            if self.have < self.want {
                continue; // the input ends
            }
            let word =
                (self.want == HELD_MAX).then(|| u32::from_be_bytes([h[9], h[10], h[11], h[12]]));
            let mut carried = [0; HELD_MAX];
            carried[..carried_len].copy_from_slice(&h[..carried_len]);
            self.skip = len as usize - (self.want - HEADER_LEN);
            self.have = 0;
            self.want = HEADER_LEN;
            return Step::Frame(Found {
                start,
                end: at,
                head,
                word,
                carried,
                carried_len,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let (stream, len) = (stream as StreamId, payload.len() as u32);
        let mut f = FrameHead {
            kind,
            flags,
            stream,
            len,
        }
        .to_bytes()
        .to_vec();
        f.extend_from_slice(payload);
        f
    }

    #[test]
    fn finds_every_header_and_word_however_the_input_is_cut() {
        let mut input = PREFACE.to_vec();
        let want = [
            (4, 0, 0, vec![0xAA; 6], None),
            (1, 5, 1, vec![0xAA; 20], None),
            (2, 0, 3, vec![0x80, 0, 0, 3, 16], Some(0x8000_0003)),
            (8, 0, 1, vec![0, 1, 0, 0], Some(0x1_0000)),
            (8, 0, 0, vec![0, 1, 0, 0], None), // the connection's window: no check reads it
            (2, 0, 5, vec![0; 4], None),       // a PRIORITY of the wrong length is nghttp2's
            (0, 1, 1, vec![], None),
            (0, 0, 3, vec![0xAA; 300], None),
        ];
        for (k, f, s, p, _) in &want {
            input.extend(frame(*k, *f, *s, p));
        }
        let want: Vec<_> = (want.iter())
            .map(|(k, f, s, p, w)| (*k, *f, *s as i32, p.len() as u32, *w))
            .collect();
        for cut in 1..input.len() {
            let mut frames = Frames::new(true);
            let mut seen = Vec::new();
            // What the session hands nghttp2, every frame accepted: the input, in order.
            let mut passed = Vec::new();
            for part in [&input[..cut], &input[cut..]] {
                let (mut at, mut fed) = (0, 0);
                loop {
                    match frames.next(part, at) {
                        Step::Frame(f) => {
                            assert!(fed <= f.start && f.start <= f.end && f.end <= part.len());
                            passed.extend_from_slice(&part[fed..f.start]);
                            passed.extend_from_slice(&f.carried[..f.carried_len]);
                            (fed, at) = (f.start, f.end);
                            let h = f.head;
                            seen.push((h.kind, h.flags, h.stream, h.len, f.word));
                        }
                        Step::End { held_from } => {
                            passed.extend_from_slice(&part[fed..held_from]);
                            break;
                        }
                    }
                }
            }
            assert_eq!(seen, want, "cut at {cut}");
            assert_eq!(passed, input, "cut at {cut}");
        }
    }
}
