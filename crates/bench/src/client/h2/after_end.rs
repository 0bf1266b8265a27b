//! What the server said after the end of the run that changes what was sent: a GOAWAY, or a
//! stream refused (RST_STREAM with REFUSED_STREAM: not processed, RFC 9113 section 8.7). A
//! GOAWAY's last stream id tells which streams it will never process; one the server sent just
//! before the end may still be unread then (or read at the end and not looked at), and the
//! streams above it were sent in full and yet never reach its log; so for a refused stream. The
//! end of the run's lingering close (`client/linger.rs`) hands every byte it reads here, so that
//! `at_end` counts those streams as not sent. Nothing else of it is looked at: the window has
//! ended.

use http2::frame::frame_type::{GOAWAY, RST_STREAM};
use http2::frame::{FrameScanner, Span};
use http2::StreamId;

/// RST_STREAM's error code for a stream not processed.
const REFUSED_STREAM: u32 = 0x7;

/// The GOAWAYs and refusals among the bytes read after the end.
#[derive(Debug, Default)]
pub(super) struct AfterEnd {
    /// The lowest last stream id of a GOAWAY read after the end.
    pub goaway: Option<StreamId>,
    /// Streams reset with REFUSED_STREAM after the end (a few at most: those in flight).
    refused: Vec<StreamId>,
}

impl AfterEnd {
    /// Walks bytes read after the end from where the connection's `frames` left off.
    pub(super) fn scan(&mut self, frames: &mut FrameScanner, data: &[u8]) {
        frames.scan(data, |span, _| match span {
            Span::End {
                ty: GOAWAY, word, ..
            } => {
                let last = (word & 0x7fff_ffff) as StreamId;
                self.goaway = Some(self.goaway.map_or(last, |g| g.min(last)));
            }
            Span::End {
                ty: RST_STREAM,
                stream,
                word: REFUSED_STREAM,
                ..
            } if stream != 0 => self.refused.push(stream),
            _ => {}
        });
    }

    /// Whether the server said it will not process stream `id`.
    pub(super) fn refused(&self, id: StreamId) -> bool {
        self.goaway.is_some_and(|last| id > last) || self.refused.contains(&id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_goaway_split_anywhere() {
        // DATA of 3 on stream 1, then GOAWAY (last stream 5, NO_ERROR), then PING.
        let mut bytes = vec![0, 0, 3, 0, 0, 0, 0, 0, 1, b'a', b'b', b'c'];
        bytes.extend([0, 0, 8, GOAWAY, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0]);
        bytes.extend([0, 0, 8, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
        for cut in 0..bytes.len() {
            let (mut frames, mut late) = (FrameScanner::default(), AfterEnd::default());
            late.scan(&mut frames, &bytes[..cut]);
            late.scan(&mut frames, &bytes[cut..]);
            assert_eq!(late.goaway, Some(5), "cut at {cut}");
            assert!(late.refused(7) && !late.refused(5));
        }
    }

    #[test]
    fn starts_where_the_read_frames_left_off() {
        // The end fell inside a DATA frame: its rest is payload, not a frame header.
        let mut frames = FrameScanner::default();
        frames.scan(&[0, 0, 9, 0, 0, 0, 0, 0, 1, b'x'], |_, _| {});
        let mut rest = vec![7u8; 8];
        rest.extend([0, 0, 8, GOAWAY, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 2]);
        let mut late = AfterEnd::default();
        late.scan(&mut frames, &rest);
        assert_eq!(late.goaway, Some(3));
        // No GOAWAY: nothing refused.
        assert!(!AfterEnd::default().refused(1));
    }

    #[test]
    fn finds_a_refused_stream_split_anywhere_and_no_other_reset() {
        // RST_STREAM REFUSED_STREAM on stream 3, RST_STREAM CANCEL on stream 5.
        let mut bytes = vec![0, 0, 4, RST_STREAM, 0, 0, 0, 0, 3, 0, 0, 0, 7];
        bytes.extend([0, 0, 4, RST_STREAM, 0, 0, 0, 0, 5, 0, 0, 0, 8]);
        for cut in 0..bytes.len() {
            let (mut frames, mut late) = (FrameScanner::default(), AfterEnd::default());
            late.scan(&mut frames, &bytes[..cut]);
            late.scan(&mut frames, &bytes[cut..]);
            assert!(late.refused(3), "cut at {cut}");
            assert!(!late.refused(5) && !late.refused(1), "cut at {cut}");
            assert_eq!(late.goaway, None);
        }
    }
}
