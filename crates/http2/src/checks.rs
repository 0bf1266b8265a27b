//! The frame checks of RFC 9113 that nghttp2 1.68 leaves out, made from a frame's header (and,
//! for PRIORITY and a stream WINDOW_UPDATE, its first 4 payload bytes) before nghttp2 sees the
//! frame. Each costs a comparison or two on the frames it concerns and nothing on the others;
//! nothing is allocated.
//!
//! - A HEADERS on a client stream id that was skipped (RFC 9113 5.1.1: "The identifier of a
//!   newly established stream MUST be numerically greater than all streams that the initiating
//!   endpoint has opened ... An endpoint that receives an unexpected stream identifier MUST
//!   respond with a connection error (Section 5.4.1) of type PROTOCOL_ERROR"). nghttp2 knows
//!   only the highest id and the streams still open, so it ignores a HEADERS below the highest
//!   id on a stream it does not know: it cannot tell an id the client skipped (idle, then
//!   closed when a higher one opened: never opened, so a HEADERS there opens a stream below the
//!   highest, a protocol error) from a stream that was opened and has closed (trailers that
//!   crossed our RST_STREAM, which must be ignored). Here the ids skipped are remembered as
//!   ranges (a client numbering its streams in order skips none); a DATA on one is a
//!   connection error STREAM_CLOSED (6.1: DATA on a stream not open "MUST respond with a stream
//!   error ... STREAM_CLOSED", and no stream error can be sent for a stream never opened).
//!   Only the latest [`GAPS`] ranges are kept: a frame on an older one is ignored, as nghttp2
//!   does, never wrongly refused.
//! - A PRIORITY on stream 0 (6.3: "the recipient MUST respond with a connection error ... of
//!   type PROTOCOL_ERROR"): nghttp2 ignores PRIORITY frames once RFC 7540's priorities are gone.
//! - A PRIORITY whose stream depends on itself: a connection error PROTOCOL_ERROR, as nghttp2
//!   treats a HEADERS that does (RFC 7540 5.3.1, "A stream cannot depend on itself"; RFC 9113
//!   keeps the fields "to ensure that implementations of this document remain interoperable"
//!   with RFC 7540's, 5.3.2, and no stream error can be sent for an idle stream).
//! - A WINDOW_UPDATE that would take a stream's window past 2^31-1 resets that stream with
//!   FLOW_CONTROL_ERROR and the frame is dropped (6.9.1: "For streams, the sender sends a
//!   RST_STREAM with an error code of FLOW_CONTROL_ERROR"); nghttp2 would end the connection.
//!   After [`WINDOW_RESETS`] such resets the connection is ended instead: the reset closes a
//!   stream the peer opened without the peer sending RST_STREAM, so a peer repeating it would
//!   cancel requests at a rate nghttp2's limit on received RST_STREAMs never sees (the "rapid
//!   reset" attack: requests started, their answers never read).

use crate::error::error_code;
use crate::frame::frame_type;
use crate::frame::FrameHead;
use crate::handler::StreamId;

/// Ranges of skipped client stream ids remembered.
const GAPS: usize = 8;
/// The largest flow-control window (RFC 9113 6.9.1).
const MAX_WINDOW: i64 = (1 << 31) - 1;
/// Streams reset for a window past the maximum before the next such update ends the connection
/// (RFC 9113 5.4: "an endpoint MAY choose to treat a stream error as a connection error"). A
/// peer that keeps its flow-control accounting overflows no window at all.
pub(crate) const WINDOW_RESETS: u32 = 8;

/// What the checks decide about a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Check {
    /// nghttp2 processes it.
    Accept,
    /// A connection error with this code.
    Fail(u32),
    /// The frame is dropped, and the stream reset with this code (none if `stream` is 0: the
    /// stream was reset already).
    Reset { stream: StreamId, code: u32 },
}

/// What the checks remember of a connection.
#[derive(Debug)]
pub(crate) struct Checks {
    /// A server's checks of the client's stream ids.
    server: bool,
    /// The highest stream id the client opened (a HEADERS seen), 0 before.
    last_opened: StreamId,
    /// Ranges (first, last) of ids the client skipped, the latest `GAPS`.
    gaps: [(StreamId, StreamId); GAPS],
    gaps_len: usize,
    gaps_next: usize,
    /// The stream last reset for its window: later WINDOW_UPDATEs on it are dropped unanswered.
    window_reset: StreamId,
    /// Streams reset for their window so far.
    window_resets: u32,
}

impl Checks {
    pub fn new(server: bool) -> Checks {
        Checks {
            server,
            last_opened: 0,
            gaps: [(0, 0); GAPS],
            gaps_len: 0,
            gaps_next: 0,
            window_reset: 0,
            window_resets: 0,
        }
    }

    fn skipped(&self, stream: StreamId) -> bool {
        (self.gaps[..self.gaps_len].iter()).any(|&(a, b)| a <= stream && stream <= b)
    }

    /// Checks one frame: its header, its payload's first 4 bytes for PRIORITY and a stream
    /// WINDOW_UPDATE (`word`), and `window`: how much a stream may still be sent (None if the
    /// stream is not open), asked only for such a WINDOW_UPDATE.
    pub fn check(
        &mut self,
        head: &FrameHead,
        word: Option<u32>,
        window: impl FnOnce(StreamId) -> Option<i32>,
    ) -> Check {
        let stream = head.stream;
        match head.kind {
            frame_type::HEADERS if self.server && stream & 1 == 1 => {
                if stream > self.last_opened {
                    // The next id in order is the last + 2 (1 first); those below `stream` are
                    // skipped, and closed as it opens (5.1.1).
                    let next = if self.last_opened == 0 {
                        1
                    } else {
                        self.last_opened + 2
                    };
                    if stream > next {
                        self.gaps[self.gaps_next] = (next, stream - 2);
                        self.gaps_next = (self.gaps_next + 1) % GAPS;
                        self.gaps_len = (self.gaps_len + 1).min(GAPS);
                    }
                    self.last_opened = stream;
                } else if self.gaps_len > 0 && self.skipped(stream) {
                    return Check::Fail(error_code::PROTOCOL_ERROR);
                }
            }
            frame_type::DATA if self.gaps_len > 0 && self.skipped(stream) => {
                return Check::Fail(error_code::STREAM_CLOSED);
            }
            frame_type::PRIORITY => {
                let dependency = word.map(|w| (w & 0x7fff_ffff) as StreamId);
                if stream == 0 || dependency == Some(stream) {
                    return Check::Fail(error_code::PROTOCOL_ERROR);
                }
            }
            frame_type::WINDOW_UPDATE => {
                let Some(increment) = word.map(|w| i64::from(w & 0x7fff_ffff)) else {
                    return Check::Accept;
                };
                // An increment of 0 is nghttp2's to refuse (PROTOCOL_ERROR).
                if increment == 0 {
                    return Check::Accept;
                }
                if stream == self.window_reset {
                    return Check::Reset { stream: 0, code: 0 };
                }
                if window(stream).is_some_and(|w| i64::from(w) + increment > MAX_WINDOW) {
                    if self.window_resets == WINDOW_RESETS {
                        return Check::Fail(error_code::FLOW_CONTROL_ERROR);
                    }
                    self.window_resets += 1;
                    self.window_reset = stream;
                    return Check::Reset {
                        stream,
                        code: error_code::FLOW_CONTROL_ERROR,
                    };
                }
            }
            _ => {}
        }
        Check::Accept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(kind: u8, stream: StreamId, len: u32) -> FrameHead {
        FrameHead {
            kind,
            flags: 0,
            stream,
            len,
        }
    }

    fn open(c: &mut Checks, stream: StreamId) -> Check {
        c.check(&head(frame_type::HEADERS, stream, 10), None, |_| None)
    }

    #[test]
    fn a_headers_on_a_skipped_id_is_a_protocol_error_on_a_closed_one_nghttp2s() {
        let mut c = Checks::new(true);
        for id in [1, 3, 9, 11, 15] {
            assert_eq!(open(&mut c, id), Check::Accept);
        }
        // 5 and 7 were skipped (9 opened after 3), and 13 (15 after 11).
        for id in [5, 7, 13] {
            assert_eq!(open(&mut c, id), Check::Fail(error_code::PROTOCOL_ERROR));
            let data = c.check(&head(frame_type::DATA, id, 4), None, |_| None);
            assert_eq!(data, Check::Fail(error_code::STREAM_CLOSED));
        }
        // Streams that were opened: trailers, or a frame that crossed a reset, nghttp2 decides.
        for id in [1, 3, 9, 11, 15] {
            assert_eq!(open(&mut c, id), Check::Accept);
            let data = c.check(&head(frame_type::DATA, id, 4), None, |_| None);
            assert_eq!(data, Check::Accept);
        }
        // Only the latest gaps are remembered: an older one is let through, never refused wrongly.
        let mut id = 15;
        for _ in 0..GAPS {
            id += 4;
            assert_eq!(open(&mut c, id), Check::Accept);
        }
        assert_eq!(open(&mut c, 5), Check::Accept);
        assert_eq!(
            open(&mut c, id - 2),
            Check::Fail(error_code::PROTOCOL_ERROR)
        );
        // A client checks none of this (the server opens no streams: push is refused).
        let mut client = Checks::new(false);
        assert_eq!(open(&mut client, 7), Check::Accept);
        assert_eq!(open(&mut client, 3), Check::Accept);
    }

    #[test]
    fn the_highest_stream_ids_do_not_overflow() {
        let mut c = Checks::new(true);
        assert_eq!(open(&mut c, i32::MAX - 2), Check::Accept);
        assert_eq!(open(&mut c, i32::MAX), Check::Accept);
        assert_eq!(open(&mut c, 1), Check::Fail(error_code::PROTOCOL_ERROR));
    }

    #[test]
    fn priority_on_stream_zero_or_on_itself_is_a_protocol_error() {
        let mut c = Checks::new(true);
        let prio = |c: &mut Checks, stream, word| {
            c.check(&head(frame_type::PRIORITY, stream, 5), word, |_| None)
        };
        let fail = Check::Fail(error_code::PROTOCOL_ERROR);
        assert_eq!(prio(&mut c, 0, Some(3)), fail);
        assert_eq!(prio(&mut c, 3, Some(3)), fail);
        assert_eq!(prio(&mut c, 3, Some(0x8000_0003)), fail); // exclusive
        assert_eq!(prio(&mut c, 3, Some(1)), Check::Accept);
        assert_eq!(prio(&mut c, 5, Some(0)), Check::Accept);
    }

    #[test]
    fn a_stream_window_past_the_maximum_resets_that_stream_once() {
        let mut c = Checks::new(true);
        let mut update = |stream, inc: u32, window: Option<i32>| {
            c.check(
                &head(frame_type::WINDOW_UPDATE, stream, 4),
                Some(inc),
                |_| window,
            )
        };
        let max = i32::MAX as u32;
        assert_eq!(update(1, max - 65_535, Some(65_535)), Check::Accept);
        assert_eq!(
            update(1, 1, Some(i32::MAX)),
            Check::Reset { stream: 1, code: 3 }
        );
        assert_eq!(
            update(1, max, Some(i32::MAX)),
            Check::Reset { stream: 0, code: 0 }
        );
        assert_eq!(update(3, max, None), Check::Accept); // not open: nghttp2's
        assert_eq!(update(5, 0, Some(10)), Check::Accept); // 0: nghttp2 refuses it
        assert_eq!(update(7, max, Some(0)), Check::Accept);
    }

    #[test]
    fn streams_reset_for_their_window_again_and_again_end_the_connection() {
        let mut c = Checks::new(true);
        let max = i32::MAX as u32;
        let mut update = |stream| {
            c.check(
                &head(frame_type::WINDOW_UPDATE, stream, 4),
                Some(max),
                |_| Some(1),
            )
        };
        for i in 0..WINDOW_RESETS as StreamId {
            let stream = 1 + 2 * i;
            assert_eq!(update(stream), Check::Reset { stream, code: 3 });
            assert_eq!(update(stream), Check::Reset { stream: 0, code: 0 });
        }
        let next = 1 + 2 * WINDOW_RESETS as StreamId;
        assert_eq!(update(next), Check::Fail(error_code::FLOW_CONTROL_ERROR));
    }
}
