//! The checks the session makes on frame headers before nghttp2 sees them (a handler with
//! `BEGIN_FRAME`), each fed whole and one byte at a time: a frame header or a checked word cut
//! across reads is decided the same way.

mod common;

use common::{frame, frames, raw_get_block, raw_preface};
use http2::{error_code, frame_type, Config, Handler, Session};

use http2::frame::flags::{END_HEADERS, END_STREAM};

/// A server's handler that asks to see frame headers and keeps what the session writes.
#[derive(Default)]
struct Framed {
    out: Vec<u8>,
    /// Frame types `on_begin_frame` saw.
    seen: Vec<u8>,
}

impl Handler for Framed {
    const BEGIN_FRAME: bool = true;

    fn on_begin_frame(&mut self, kind: u8, _: u8, _: i32) -> http2::FrameVerdict {
        self.seen.push(kind);
        http2::FrameVerdict::Accept
    }

    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }
}

/// A frame written: (type, flags, stream, payload).
type Frame = (u8, u8, u32, Vec<u8>);

/// Feeds `input` to a fresh server session whole, or a byte at a time; returns the frames it
/// wrote (SETTINGS and the like included), and what the handler saw.
fn run(input: &[u8], bytewise: bool) -> (Vec<Frame>, Framed, bool) {
    let mut server = Session::<Framed>::server(&Config::server()).unwrap();
    let mut h = Framed::default();
    if bytewise {
        for b in input.chunks(1) {
            assert_eq!(server.recv(b, &mut h), Ok(1));
        }
    } else {
        assert_eq!(server.recv(input, &mut h), Ok(input.len()));
    }
    server.send(&mut h).unwrap();
    let alive = server.want_read();
    (frames(&h.out), h, alive)
}

fn goaway(f: &[Frame]) -> Option<u32> {
    (f.iter())
        .find(|f| f.0 == frame_type::GOAWAY)
        .map(|f| u32::from_be_bytes(f.3[4..8].try_into().unwrap()))
}

fn headers(stream: u32) -> Vec<u8> {
    frame(frame_type::HEADERS, END_HEADERS, stream, &raw_get_block())
}

#[test]
fn a_headers_on_a_skipped_stream_id_is_a_protocol_error() {
    let mut input = raw_preface();
    input.extend(headers(5));
    input.extend(headers(3)); // 3 was skipped when 5 opened (RFC 9113 5.1.1)
    for bytewise in [false, true] {
        let (f, _, alive) = run(&input, bytewise);
        assert_eq!(goaway(&f), Some(error_code::PROTOCOL_ERROR), "{f:?}");
        assert!(!alive);
    }
    // In order, with a skipped id left alone: no error.
    let mut input = raw_preface();
    input.extend(headers(1));
    input.extend(headers(5));
    input.extend(frame(frame_type::DATA, END_STREAM, 1, b"body"));
    let (f, _, alive) = run(&input, true);
    assert_eq!(goaway(&f), None, "{f:?}");
    assert!(alive);
}

#[test]
fn priority_on_stream_zero_or_on_itself_is_a_protocol_error() {
    for (stream, dependency) in [(0u32, 1u32), (1, 1), (3, 0x8000_0003)] {
        let mut input = raw_preface();
        let mut payload = dependency.to_be_bytes().to_vec();
        payload.push(15);
        input.extend(frame(frame_type::PRIORITY, 0, stream, &payload));
        for bytewise in [false, true] {
            let (f, _, _) = run(&input, bytewise);
            assert_eq!(
                goaway(&f),
                Some(error_code::PROTOCOL_ERROR),
                "{stream}: {f:?}"
            );
        }
    }
    // Any other dependency is taken and ignored, and so is what follows it.
    let mut input = raw_preface();
    input.extend(frame(frame_type::PRIORITY, 0, 3, &[0, 0, 0, 1, 15]));
    input.extend(frame(frame_type::PING, 0, 0, &[7; 8]));
    let (f, h, alive) = run(&input, true);
    assert_eq!(goaway(&f), None, "{f:?}");
    assert!(alive);
    assert!(
        f.iter().any(|f| f.0 == frame_type::PING && f.1 == 1),
        "{f:?}"
    );
    assert_eq!(
        h.seen,
        [frame_type::SETTINGS, frame_type::PRIORITY, frame_type::PING]
    );
}

#[test]
fn a_stream_window_past_the_maximum_resets_the_stream_and_the_connection_goes_on() {
    let mut input = raw_preface();
    input.extend(headers(1));
    let max = i32::MAX as u32;
    input.extend(frame(frame_type::WINDOW_UPDATE, 0, 1, &max.to_be_bytes()));
    input.extend(frame(frame_type::WINDOW_UPDATE, 0, 1, &max.to_be_bytes()));
    input.extend(frame(frame_type::PING, 0, 0, &[7; 8]));
    for bytewise in [false, true] {
        let (f, h, alive) = run(&input, bytewise);
        let resets: Vec<_> = (f.iter())
            .filter(|f| f.0 == frame_type::RST_STREAM)
            .map(|f| (f.2, u32::from_be_bytes(f.3[..4].try_into().unwrap())))
            .collect();
        assert_eq!(resets, [(1, error_code::FLOW_CONTROL_ERROR)], "{f:?}");
        assert_eq!(goaway(&f), None, "{f:?}");
        assert!(alive);
        assert!(
            f.iter().any(|f| f.0 == frame_type::PING && f.1 == 1),
            "{f:?}"
        );
        // The dropped frames never reached the handler (nor nghttp2).
        assert!(!h.seen.contains(&frame_type::WINDOW_UPDATE), "{:?}", h.seen);
    }
    // The connection's window past the maximum stays nghttp2's: GOAWAY FLOW_CONTROL_ERROR.
    let mut input = raw_preface();
    input.extend(frame(frame_type::WINDOW_UPDATE, 0, 0, &max.to_be_bytes()));
    let (f, _, _) = run(&input, true);
    assert_eq!(goaway(&f), Some(error_code::FLOW_CONTROL_ERROR), "{f:?}");
}

/// A peer that overflows one stream window after another is cancelling its requests without
/// RST_STREAM (which nghttp2 rate-limits): after a few resets the connection ends.
#[test]
fn windows_overflowed_again_and_again_end_the_connection() {
    let max = i32::MAX as u32;
    let mut input = raw_preface();
    for stream in (1..40).step_by(2) {
        input.extend(headers(stream));
        input.extend(frame(
            frame_type::WINDOW_UPDATE,
            0,
            stream,
            &max.to_be_bytes(),
        ));
    }
    for bytewise in [false, true] {
        let (f, h, alive) = run(&input, bytewise);
        assert_eq!(goaway(&f), Some(error_code::FLOW_CONTROL_ERROR), "{f:?}");
        assert!(!alive);
        // Ended at one of them, not by running out of input (the resets queued before the
        // GOAWAY are not sent: the connection is over; nothing was answered, so the GOAWAY
        // names no stream).
        let requests = (h.seen.iter())
            .filter(|&&k| k == frame_type::HEADERS)
            .count();
        assert!((1..20).contains(&requests), "{requests} {f:?}");
        let last = (f.iter())
            .find(|f| f.0 == frame_type::GOAWAY)
            .map(|f| f.3[..4].to_vec());
        assert_eq!(last, Some(vec![0; 4]), "{f:?}");
    }
}
