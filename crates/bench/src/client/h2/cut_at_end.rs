//! The uploads the end of the run cuts: a stream whose HEADERS reached the server but not its
//! whole request (flow control held its body back, or the socket had not taken all of its DATA)
//! is counted not sent, and the server must not take it for a request it has. The end of the
//! run's lingering close (`client/linger.rs`) therefore writes no more of the output than the
//! frame the socket was in the middle of (a frame, or a header block, cannot be cut short: the
//! rest of it goes, with the CONTINUATION frames of a header block), then, for each such stream,
//! a RST_STREAM with CANCEL ("the stream is no longer needed", RFC 9113 section 7), and nothing
//! after: the DATA nghttp2 still holds or had queued behind never goes. The server sees a
//! request cancelled, not one whose body merely stopped coming, which a server may still take
//! as a request (one that answers at the head, or that waits for the body until its timeout).
//!
//! Streams whose HEADERS had not gone by then are left alone: the server never heard of them,
//! and a RST_STREAM on a stream it thinks idle is a connection error (RFC 9113 section 5.1).
//! What the linger then did is what `at_end` reads (`Io::unsent_at_end`): a stream whose last
//! frame went whole before the cut is unfinished, any other not sent. Once a run, at its end:
//! nothing here runs per request.

use super::super::NONE;
use super::streams::{request_body, Io, Stream};
use http2::frame::frame_type::{CONTINUATION, DATA, HEADERS, RST_STREAM};
use http2::frame::{FrameHead, HEADER_LEN};
use http2::StreamId;

impl Io {
    /// At the end of the run, before the linger writes anything: the output is cut after the
    /// frame the socket is in (see above) and a RST_STREAM CANCEL put there for each stream cut
    /// short; returns where what the linger writes ends (`out_pos` if the frame the socket is
    /// in is not all in the output yet: nothing more can go then).
    pub(super) fn cancel_cut_uploads(&mut self) -> usize {
        let Some(cut) = boundary_after(&self.out, self.out_pos) else {
            return self.out_pos;
        };
        // What is behind the cut stays behind what the linger writes (`unsent_at_end` finds
        // the frames there unsent).
        let after = self.out.split_off(cut);
        for (slot, s) in self.flight.iter() {
            let body = request_body(s, &self.app, slot).len();
            if cut_short(s, body, &after) {
                let rst = FrameHead {
                    kind: RST_STREAM,
                    flags: 0,
                    stream: s.id,
                    len: 4,
                };
                self.out.extend(rst.to_bytes());
                self.out.extend(http2::error_code::CANCEL.to_be_bytes());
            }
        }
        let end = self.out.len();
        self.out.extend(after);
        end
    }
}

/// Whether stream `s` (its body `body` bytes) has gone in part and not whole, once the frames in
/// `after` (the output behind the cut) never go: its HEADERS are out (or before the cut) and
/// its body is not all produced, or some of its DATA is behind the cut.
fn cut_short(s: &Stream, body: usize, after: &[u8]) -> bool {
    // No HEADERS yet (the server's limit held it in nghttp2), or its HEADERS behind the cut:
    // the server never hears of it.
    if s.closed || s.ex.written_us == NONE || has_frame(after, s.id, &[HEADERS]) {
        return false;
    }
    s.body_pos < body || has_frame(after, s.id, &[CONTINUATION, DATA])
}

/// Whether `out` (whole frames from its start, the last one possibly incomplete) holds a frame
/// of stream `id` of one of `kinds`.
fn has_frame(out: &[u8], id: StreamId, kinds: &[u8]) -> bool {
    frames(out).any(|h| h.stream == id && kinds.contains(&h.kind))
}

/// The frame headers of `out` (whole frames from its start; a last one cut short is included
/// if its header is whole).
fn frames(out: &[u8]) -> impl Iterator<Item = FrameHead> + '_ {
    let mut pos = 0;
    std::iter::from_fn(move || {
        let head: &[u8; HEADER_LEN] = out.get(pos..pos + HEADER_LEN)?.try_into().ok()?;
        let h = FrameHead::parse(head);
        pos += HEADER_LEN + h.len as usize;
        Some(h)
    })
}

/// The first frame boundary of `out` at or after `written` that does not cut a header block
/// (CONTINUATION frames follow their HEADERS whole), if the output holds it.
fn boundary_after(out: &[u8], written: usize) -> Option<usize> {
    let mut pos = 0;
    loop {
        let head = out.get(pos..pos + HEADER_LEN);
        let continuation = head.is_some_and(|h| h[3] == CONTINUATION);
        if pos >= written && !continuation {
            break;
        }
        let h = FrameHead::parse(head?.try_into().ok()?);
        pos += HEADER_LEN + h.len as usize;
    }
    (pos <= out.len()).then_some(pos)
}

#[cfg(test)]
mod tests {
    use super::super::super::exchange::{Exchange, PageRef};
    use super::*;
    use std::sync::Arc;

    fn frame(out: &mut Vec<u8>, kind: u8, stream: StreamId, len: usize) {
        let head = FrameHead {
            kind,
            flags: 0,
            stream,
            len: len as u32,
        };
        out.extend(head.to_bytes());
        out.extend(std::iter::repeat_n(0xaa, len));
    }

    /// A table of stream 1 (an upload of 10 bytes, `sent` of them produced) and stream 3 (a
    /// GET), both with their HEADERS produced.
    fn io(sent: usize) -> Io {
        let mut io = Io::new(4);
        let mut ex = Exchange::new(PageRef::NONE);
        ex.written_us = 5;
        let body: Arc<[u8]> = Arc::from(&[b'u'; 10][..]);
        let slot = io.insert(1, ex, Some(body));
        io.stream(slot).body_pos = sent;
        io.insert(3, ex, None);
        io
    }

    fn rst_streams(out: &[u8]) -> Vec<StreamId> {
        frames(out)
            .filter(|h| h.kind == RST_STREAM)
            .map(|h| h.stream)
            .collect()
    }

    #[test]
    fn an_upload_whose_body_is_held_back_is_cancelled_after_the_frame_in_the_socket() {
        // HEADERS 1, DATA 1 (4 of its 10 bytes), the socket in the middle of that DATA.
        let mut io = io(4);
        frame(&mut io.out, HEADERS, 1, 5);
        frame(&mut io.out, DATA, 1, 4);
        let cut = io.out.len();
        io.out_pos = 9 + 5 + 3;
        let end = io.cancel_cut_uploads();
        assert_eq!(end, cut + 13, "the DATA goes whole, then one RST_STREAM");
        assert_eq!(rst_streams(&io.out[cut..end]), [1]);
        assert_eq!(&io.out[cut + 9..end], &8u32.to_be_bytes(), "CANCEL");
        // Written up to there: stream 1 is not sent, stream 3 (its HEADERS long gone) is.
        io.out_pos = end;
        let unsent = |id| {
            let (_, s) = io.flight.iter().find(|(_, s)| s.id == id).unwrap();
            io.unsent_at_end(s)
        };
        assert!(unsent(1) && !unsent(3));
    }

    #[test]
    fn nothing_behind_the_cut_goes_and_a_stream_whose_headers_are_behind_it_is_left_alone() {
        // Body all produced: HEADERS 1 and DATA 1 (END_STREAM) behind the cut; the socket in
        // the middle of HEADERS 3. Stream 1's HEADERS never go: no RST_STREAM for it.
        let mut io = io(10);
        frame(&mut io.out, HEADERS, 3, 6);
        let cut = io.out.len();
        frame(&mut io.out, HEADERS, 1, 5);
        frame(&mut io.out, DATA, 1, 10);
        io.out_pos = 4;
        assert_eq!(io.cancel_cut_uploads(), cut);
        assert!(rst_streams(&io.out).is_empty());
    }

    #[test]
    fn an_upload_whose_data_is_behind_the_cut_is_cancelled_and_a_header_block_goes_whole() {
        // HEADERS 1 without END_HEADERS and its CONTINUATION, then DATA 1: the socket in the
        // HEADERS. The CONTINUATION goes with it, the DATA does not: stream 1 is cut short.
        let mut io = io(10);
        frame(&mut io.out, HEADERS, 1, 5);
        frame(&mut io.out, CONTINUATION, 1, 5);
        let cut = io.out.len();
        frame(&mut io.out, DATA, 1, 10);
        io.out_pos = 2;
        let end = io.cancel_cut_uploads();
        assert_eq!(rst_streams(&io.out[cut..end]), [1]);
        assert_eq!(end, cut + 13);
        // The DATA is still there, behind what the linger writes.
        assert!(has_frame(&io.out[end..], 1, &[DATA]));
    }

    #[test]
    fn a_frame_not_all_in_the_output_yet_lets_nothing_more_go() {
        // The socket in a frame whose rest nghttp2 still holds: no boundary to cut at. (`Io`'s
        // write takes a frame whole, so this is a guard, not a case that arises.)
        let mut io = io(4);
        frame(&mut io.out, HEADERS, 1, 5);
        io.out.truncate(10);
        io.out_pos = 9;
        assert_eq!(io.cancel_cut_uploads(), 9);
        assert_eq!(io.out.len(), 10);
    }

    #[test]
    fn an_empty_output_cancels_the_uploads_at_once() {
        let mut io = io(4);
        let end = io.cancel_cut_uploads();
        assert_eq!(rst_streams(&io.out[..end]), [1]);
    }
}
