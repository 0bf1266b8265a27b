//! The HTTP/2 target: one client connection's bytes, after the client preface, into flint
//! serve's HTTP/2 session (nghttp2 under it, the same responder as HTTP/1.1) over the generated
//! root ([`crate::docroot`]), read whole and in two pieces.
//!
//! Beyond "no panic" (in the session, the responder, nghttp2's callbacks), what the server
//! writes is checked as a client would read it: whole frames only, the server's SETTINGS first,
//! HEADERS and DATA only on client (odd) streams, a stream's frames end with its END_STREAM (no
//! HEADERS or DATA after it), RST_STREAM and WINDOW_UPDATE of their fixed size, and after a
//! GOAWAY no response to a stream above the last one it names.

use serve::replay::Replay;
use serve::Config;

use crate::docroot;

const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const RST_STREAM: u8 = 3;
const SETTINGS: u8 = 4;
const GOAWAY: u8 = 7;
const WINDOW_UPDATE: u8 = 8;
const END_STREAM: u8 = 0x1;

pub fn check(data: &[u8]) {
    let config = Config {
        root: docroot::root().to_path_buf(),
        ..Config::default()
    };
    let mut input = PREFACE.to_vec();
    input.extend_from_slice(data);
    let mut whole = Vec::new();
    Replay::new(&config)
        .expect("the fuzzing root exists")
        .feed(&input, &mut whole);
    check_frames(&whole);
    // In two pieces, cut where the input's own hash says.
    let cut = PREFACE.len() + (hash(data) as usize % (data.len() + 1));
    let mut split = Vec::new();
    let mut server = Replay::new(&config).expect("the fuzzing root exists");
    if server.feed(&input[..cut], &mut split) {
        server.feed(&input[cut..], &mut split);
    }
    check_frames(&split);
}

fn hash(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn check_frames(out: &[u8]) {
    let mut at = 0;
    let mut first = true;
    let mut ended = std::collections::BTreeSet::new();
    let mut goaway_last: Option<u32> = None;
    while at < out.len() {
        assert!(out.len() >= at + 9, "a partial frame header at {at}");
        let len = u32::from_be_bytes([0, out[at], out[at + 1], out[at + 2]]) as usize;
        let (kind, flags) = (out[at + 3], out[at + 4]);
        let stream = u32::from_be_bytes(out[at + 5..at + 9].try_into().unwrap()) & 0x7fff_ffff;
        assert!(out.len() >= at + 9 + len, "a partial frame at {at}");
        let payload = &out[at + 9..at + 9 + len];
        if first {
            assert!(
                kind == SETTINGS && stream == 0 || kind == GOAWAY,
                "the server's first frame is its SETTINGS (or a GOAWAY), not type {kind}"
            );
            first = false;
        }
        match kind {
            DATA | HEADERS => {
                assert!(stream % 2 == 1, "a response on stream {stream}");
                assert!(
                    !ended.contains(&stream),
                    "frame type {kind} after stream {stream} ended"
                );
                if let Some(last) = goaway_last {
                    assert!(
                        kind == DATA || stream <= last,
                        "HEADERS on stream {stream} after GOAWAY naming {last}"
                    );
                }
                if flags & END_STREAM != 0 {
                    ended.insert(stream);
                }
            }
            RST_STREAM | WINDOW_UPDATE => assert_eq!(len, 4, "frame type {kind}"),
            GOAWAY => {
                assert!(len >= 8 && stream == 0, "a malformed GOAWAY");
                let last = u32::from_be_bytes(payload[..4].try_into().unwrap()) & 0x7fff_ffff;
                if let Some(before) = goaway_last {
                    assert!(last <= before, "a GOAWAY's last stream went up");
                }
                goaway_last = Some(last);
            }
            _ => {}
        }
        at += 9 + len;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The target reaches the responder: a GET in the seed corpus is answered with the file.
    #[test]
    fn a_get_is_answered_with_its_file() {
        let input = [
            PREFACE,
            &[0, 0, 0, SETTINGS, 0, 0, 0, 0, 0],
            &[0, 0, 19, HEADERS, 0x5, 0, 0, 0, 1, 0x82, 0x86, 0x04, 0x06],
            b"/a.txt",
            &[0x01, 0x07],
            b"example",
        ]
        .concat();
        let config = Config {
            root: docroot::root().to_path_buf(),
            ..Config::default()
        };
        let mut out = Vec::new();
        let mut server = Replay::new(&config).unwrap();
        assert!(server.feed(&input, &mut out));
        assert_eq!(server.requests(), 1);
        check_frames(&out);
        // a.txt is one byte: a DATA frame of length 1 with END_STREAM on stream 1.
        let data = [0, 0, 1, DATA, END_STREAM, 0, 0, 0, 1];
        assert!(out.windows(9).any(|w| w == data), "{out:?}");
    }
}
