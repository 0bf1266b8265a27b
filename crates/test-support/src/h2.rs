//! HTTP/2 written and read by hand (RFC 9113 section 4.1, RFC 7541), for tests that send what a
//! well-behaved peer never would or read a peer's frames one by one (as the h2 crate's
//! `h2-support`): the preface, frames of every type a test writes, header blocks, and a reader
//! of the frames in a byte stream. The frame types, flags and header layout are the `http2`
//! crate's.

use http2::frame::FrameHead;
use std::io::Read;

pub use http2::frame::flags::{ACK, END_HEADERS, END_STREAM, PADDED};
pub use http2::frame::frame_type::*;
pub use http2::frame::PREFACE;

/// HEADERS' PRIORITY flag (the frame type of that name is [`PRIORITY`]).
pub const PRIORITY_FLAG: u8 = http2::frame::flags::PRIORITY;

/// A frame read: (type, flags, stream, payload).
pub type Frame = (u8, u8, u32, Vec<u8>);

/// Appends one frame (the stream's reserved bit left out).
pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    let head = FrameHead {
        kind,
        flags,
        stream: (stream & 0x7fff_ffff) as i32,
        len: payload.len() as u32,
    };
    out.extend_from_slice(&head.to_bytes());
    out.extend_from_slice(payload);
}

/// One frame's bytes.
pub fn frame_bytes(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(9 + payload.len());
    frame(&mut out, kind, flags, stream, payload);
    out
}

/// The client preface and an empty SETTINGS, as a client's connection starts.
pub fn start() -> Vec<u8> {
    let mut out = PREFACE.to_vec();
    frame(&mut out, SETTINGS, 0, 0, &[]);
    out
}

/// One SETTINGS parameter: identifier, value.
pub fn setting(id: u16, value: u32) -> [u8; 6] {
    let mut s = [0; 6];
    s[..2].copy_from_slice(&id.to_be_bytes());
    s[2..].copy_from_slice(&value.to_be_bytes());
    s
}

/// A SETTINGS frame with these (id, value) pairs.
pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
    let payload: Vec<u8> = pairs.iter().flat_map(|&(id, v)| setting(id, v)).collect();
    frame(out, SETTINGS, 0, 0, &payload);
}

/// A HEADERS frame (END_HEADERS, and `flags`) for `GET path` on `localhost`.
pub fn get(out: &mut Vec<u8>, stream: u32, path: &str, flags: u8) {
    let block = get_block(path, "localhost");
    frame(out, HEADERS, END_HEADERS | flags, stream, &block);
}

/// A WINDOW_UPDATE frame: `increment` more bytes on `stream` (0: the connection).
pub fn window_update(out: &mut Vec<u8>, stream: u32, increment: u32) {
    frame(out, WINDOW_UPDATE, 0, stream, &increment.to_be_bytes());
}

/// A RST_STREAM frame with `error_code`.
pub fn rst_stream(out: &mut Vec<u8>, stream: u32, error_code: u32) {
    frame(out, RST_STREAM, 0, stream, &error_code.to_be_bytes());
}

/// A GOAWAY frame: the last stream processed, `error_code`, no debug data.
pub fn goaway(out: &mut Vec<u8>, last_stream: u32, error_code: u32) {
    let mut payload = (last_stream & 0x7fff_ffff).to_be_bytes().to_vec();
    payload.extend_from_slice(&error_code.to_be_bytes());
    frame(out, GOAWAY, 0, 0, &payload);
}

/// A PING frame (its ACK with `ack`) carrying `opaque`.
pub fn ping(out: &mut Vec<u8>, ack: bool, opaque: [u8; 8]) {
    frame(out, PING, if ack { ACK } else { 0 }, 0, &opaque);
}

/// An HPACK block for `GET path` on `authority`, literal fields without indexing (RFC 7541
/// 6.2.2; `:method GET` and `:scheme http` are static entries 2 and 6).
pub fn get_block(path: &str, authority: &str) -> Vec<u8> {
    let mut b = vec![0x82, 0x86];
    literal(&mut b, 4, path.as_bytes()); // :path
    literal(&mut b, 1, authority.as_bytes()); // :authority
    b
}

/// An HPACK block for a response: `:status: 200` (static entry 8) and `content-length: length`
/// (a literal whose name is static entry 28).
pub fn status_200_block(length: usize) -> Vec<u8> {
    let digits = length.to_string();
    let mut b = vec![0x88, 0x0f, 28 - 15, digits.len() as u8];
    b.extend_from_slice(digits.as_bytes());
    b
}

/// A literal field without indexing whose name is static entry `index` (below 15).
pub fn literal(b: &mut Vec<u8>, index: u8, value: &[u8]) {
    b.push(index); // 0000xxxx
    int7(b, value.len());
    b.extend_from_slice(value);
}

/// A literal field with a literal name, without indexing.
pub fn literal_name(b: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    b.push(0);
    int7(b, name.len());
    b.extend_from_slice(name);
    int7(b, value.len());
    b.extend_from_slice(value);
}

/// A string length with a 7-bit prefix, no Huffman (RFC 7541 5.1).
pub fn int7(b: &mut Vec<u8>, mut n: usize) {
    if n < 127 {
        b.push(n as u8);
        return;
    }
    b.push(127);
    n -= 127;
    while n >= 128 {
        b.push((n % 128 + 128) as u8);
        n /= 128;
    }
    b.push(n as u8);
}

/// Reads the whole frames at the start of `input` (a frame cut short at its end is left out).
pub fn parse(input: &[u8]) -> Vec<Frame> {
    let mut frames = Vec::new();
    let mut at = 0;
    while input.len() >= at + 9 {
        let head = FrameHead::parse(input[at..at + 9].try_into().unwrap());
        let end = at + 9 + head.len as usize;
        if input.len() < end {
            break;
        }
        let payload = input[at + 9..end].to_vec();
        frames.push((head.kind, head.flags, head.stream as u32, payload));
        at = end;
    }
    frames
}

/// Reads frames from `s` until `done` holds for them or the peer closes (then `done` may not
/// hold); every read is bounded by the socket's timeout, a failed one fails the test.
pub fn read_until(s: &mut impl Read, done: impl Fn(&[Frame]) -> bool) -> Vec<Frame> {
    let mut got = Vec::new();
    let mut buf = vec![0; 1 << 16];
    loop {
        let frames = parse(&got);
        if done(&frames) {
            return frames;
        }
        let n = match s.read(&mut buf) {
            // A read with a timeout (SO_RCVTIMEO) fails with EINTR when a signal comes, whatever
            // SA_RESTART says: in a process whose server runs programs, one does.
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            read => read.expect("read"),
        };
        if n == 0 {
            return frames;
        }
        got.extend_from_slice(&buf[..n]);
    }
}

/// The error code of the GOAWAY among `frames`, if any.
pub fn goaway_code(frames: &[Frame]) -> Option<u32> {
    frames
        .iter()
        .find(|f| f.0 == GOAWAY && f.3.len() >= 8)
        .map(|f| u32::from_be_bytes(f.3[4..8].try_into().unwrap()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_written_read_back() {
        let mut out = start();
        get(&mut out, 1, "/a", END_STREAM);
        window_update(&mut out, 0, 1 << 20);
        rst_stream(&mut out, 1, 8);
        goaway(&mut out, 1, 11);
        ping(&mut out, true, [7; 8]);
        let mut cut = out[PREFACE.len()..].to_vec();
        cut.extend_from_slice(&[0, 0, 4, DATA]); // a frame header cut short
        let frames = parse(&cut);
        let kinds: Vec<_> = frames.iter().map(|f| (f.0, f.1, f.2)).collect();
        assert_eq!(
            kinds,
            [
                (SETTINGS, 0, 0),
                (HEADERS, END_HEADERS | END_STREAM, 1),
                (WINDOW_UPDATE, 0, 0),
                (RST_STREAM, 0, 1),
                (GOAWAY, 0, 0),
                (PING, ACK, 0),
            ]
        );
        assert_eq!(
            frames[1].3,
            [
                0x82, 0x86, 4, 2, b'/', b'a', 1, 9, b'l', b'o', b'c', b'a', b'l', b'h', b'o', b's',
                b't'
            ]
        );
        assert_eq!(goaway_code(&frames), Some(11));
    }

    #[test]
    fn a_long_length_takes_more_bytes() {
        let mut b = Vec::new();
        int7(&mut b, 1337);
        // The prefix full (127), then 1337 - 127 = 1210 = 58 + 9 * 128, low 7 bits first.
        assert_eq!(b, [127, 58 + 128, 9]);
    }
}
