//! What the server said after the end of the run that changes what was sent: a GOAWAY. Its
//! last stream id tells which streams it will never process; one the server sent just before
//! the end may still be unread then (or read at the end and not looked at), and the streams
//! above it were sent in full and yet never reach its log. The end of the run's lingering
//! close (`client/linger.rs`) hands every byte it reads here, so that `at_end` counts those
//! streams as not sent. Nothing else of it is looked at: the window has ended.

use super::frames::{FrameScanner, Span};
use http2::StreamId;

/// The GOAWAY frame type (RFC 9113 section 6.8).
const GOAWAY: u8 = 0x7;

/// The GOAWAYs among the bytes read after the end.
#[derive(Debug, Default)]
pub(super) struct AfterEnd {
    /// The lowest last stream id of a GOAWAY read after the end.
    pub goaway: Option<StreamId>,
    /// Bytes of a GOAWAY's last stream id still to take (its payload's first four).
    taking: u8,
    id: [u8; 4],
}

impl AfterEnd {
    /// Walks bytes read after the end from where the connection's `frames` left off.
    pub(super) fn scan(&mut self, frames: &mut FrameScanner, data: &[u8]) {
        let mut at = 0;
        frames.scan(data, |span, n| {
            if let Span::Frame(ty) = span {
                self.taking = if ty == GOAWAY { 4 } else { 0 };
                return;
            }
            // A GOAWAY's payload is at least 8 bytes: its first 4 come before any next header.
            if self.taking > 0 {
                let have = 4 - self.taking as usize;
                let k = n.min(self.taking as usize);
                self.id[have..have + k].copy_from_slice(&data[at..at + k]);
                self.taking -= k as u8;
                if self.taking == 0 {
                    let last = (u32::from_be_bytes(self.id) & 0x7fff_ffff) as StreamId;
                    self.goaway = Some(self.goaway.map_or(last, |g| g.min(last)));
                }
            }
            at += n;
        });
    }

    /// Whether the server said it will not process stream `id`.
    pub(super) fn refused(&self, id: StreamId) -> bool {
        self.goaway.is_some_and(|last| id > last)
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
}
