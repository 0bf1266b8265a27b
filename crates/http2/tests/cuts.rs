//! However the peer's bytes are cut into reads, a session that looks at each frame header
//! (`BEGIN_FRAME`: the frame tracker and the checks nghttp2 leaves out) does the same: the same
//! handler calls in the same order and the same frames written. Random frame sequences, valid
//! and hostile (skipped and reused stream ids, PRIORITY on 0 or on itself, windows past 2^31-1,
//! padding, CONTINUATION, unknown types, frames past SETTINGS_MAX_FRAME_SIZE), are fed to a
//! server and to a client whole, a byte at a time, and in random pieces, and the runs compared.
//! A byte handed to nghttp2 twice, lost, or out of order desynchronises its framing, and a
//! check or a handler call made on a misplaced header shows in the log.

mod common;

use common::{frame, frames, get, raw_get_block};
use http2::{frame_type, Config, FrameVerdict, Handler, HeaderVerdict, HeadersKind, Session};
use http2::{Error, StreamId};

use http2::frame::flags::{END_HEADERS, END_STREAM, PADDED, PRIORITY as PRIORITY_FLAG};
use http2::frame::frame_type::{CONTINUATION, PUSH_PROMISE};
use http2::frame::PREFACE;

/// Records every call, body bytes merged per stream run (nghttp2 hands a DATA payload over in
/// as many pieces as it arrived in). `B`: whether it asks for frame headers (`BEGIN_FRAME`);
/// without, the input goes to nghttp2 as it comes, unchecked: the reference.
#[derive(Default)]
struct Log<const B: bool> {
    calls: Vec<String>,
    out: Vec<u8>,
}

impl<const B: bool> Log<B> {
    fn note(&mut self, call: String) {
        self.calls.push(call);
    }
}

impl<const B: bool> Handler for Log<B> {
    const BEGIN_FRAME: bool = B;

    fn on_begin_frame(&mut self, kind: u8, flags: u8, stream: StreamId) -> FrameVerdict {
        self.note(format!("begin {kind} {flags:#x} {stream}"));
        FrameVerdict::Accept
    }

    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_begin_headers(&mut self, stream: StreamId, kind: HeadersKind) {
        self.note(format!("headers {stream} {kind:?}"));
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        let (n, v) = (
            String::from_utf8_lossy(name),
            String::from_utf8_lossy(value),
        );
        self.note(format!("field {stream} {n}: {v}"));
        HeaderVerdict::Accept
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        self.note(format!("headers end {stream} {end_stream}"));
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        let prefix = format!("data {stream} ");
        if let Some(last) = self.calls.last_mut().filter(|c| c.starts_with(&prefix)) {
            let n: usize = last[prefix.len()..].parse().unwrap();
            *last = format!("{prefix}{}", n + data.len());
        } else {
            self.note(format!("{prefix}{}", data.len()));
        }
    }

    fn on_data_end(&mut self, stream: StreamId) {
        self.note(format!("data end {stream}"));
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        self.note(format!("close {stream} {error_code}"));
    }

    fn on_rst_stream(&mut self, stream: StreamId, error_code: u32) {
        self.note(format!("rst {stream} {error_code}"));
    }

    fn on_goaway(&mut self, last_stream_id: StreamId, error_code: u32) {
        self.note(format!("goaway {last_stream_id} {error_code}"));
    }

    fn on_settings(&mut self) {
        self.note("settings".into());
    }

    fn on_frame_received(&mut self, frame_type: u8) {
        self.note(format!("received {frame_type}"));
    }

    fn on_invalid_frame(&mut self, frame_type: u8, error: Error) {
        self.note(format!("invalid {frame_type} {}", error.code));
    }
}

/// A random sequence of frames a peer might send: mostly well-formed, some hostile. `server`:
/// they go to a server (requests open odd streams); else to a client whose streams 1, 3 and 5
/// are open. Without `hostile`, none that a check refuses or drops (some nghttp2 refuses).
fn frames_for(rng: &mut fastrand::Rng, server: bool, hostile: bool) -> Vec<u8> {
    let mut input = if server { PREFACE.to_vec() } else { Vec::new() };
    input.extend(frame(frame_type::SETTINGS, 0, 0, &[]));
    let mut next: u32 = 1;
    let mut used: Vec<u32> = if server { Vec::new() } else { vec![1, 3, 5] };
    let stream = |rng: &mut fastrand::Rng, used: &[u32], next: u32| match rng.u8(..10) {
        0 => 0,
        1 => next + 2 * rng.u32(..4),
        2 if hostile => rng.u32(..12),
        _ => used
            .get(rng.usize(..used.len().max(1)))
            .copied()
            .unwrap_or(1),
    };
    for _ in 0..rng.usize(1..24) {
        match rng.u8(..14) {
            0..=2 => {
                let id = if server && (rng.u8(..4) > 0 || !hostile) {
                    let id = next + 2 * rng.u32(..3); // in order, or skipping some
                    next = id + 2;
                    used.push(id);
                    id
                } else {
                    stream(rng, &used, next) // reused, skipped, even, 0
                };
                let mut block = raw_get_block();
                let mut flags = if rng.bool() { END_STREAM } else { 0 };
                let mut payload = Vec::new();
                if rng.u8(..4) == 0 {
                    flags |= PADDED;
                    payload.push(rng.u8(..8));
                }
                if rng.u8(..4) == 0 {
                    flags |= PRIORITY_FLAG;
                    let dependency = if rng.bool() { id } else { rng.u32(..8) };
                    payload.extend_from_slice(&dependency.to_be_bytes());
                    payload.push(rng.u8(..));
                }
                let cut = if rng.u8(..3) == 0 {
                    rng.usize(..=block.len())
                } else {
                    block.len()
                };
                let rest = block.split_off(cut);
                payload.extend_from_slice(&block);
                if flags & PADDED != 0 {
                    payload.resize(payload.len() + usize::from(payload[0]), 0);
                }
                if rest.is_empty() {
                    flags |= END_HEADERS;
                }
                input.extend(frame(frame_type::HEADERS, flags, id, &payload));
                if !rest.is_empty() {
                    input.extend(frame(CONTINUATION, END_HEADERS, id, &rest));
                }
            }
            3..=5 => {
                let id = stream(rng, &used, next);
                let mut payload = Vec::new();
                let mut flags = if rng.u8(..3) == 0 { END_STREAM } else { 0 };
                let len = rng.usize(..300);
                if rng.u8(..4) == 0 {
                    flags |= PADDED;
                    let pad = rng.u8(..20);
                    payload.push(pad);
                    payload.resize(1 + len + usize::from(pad), 0xDA);
                } else {
                    payload.resize(len, 0xDA);
                }
                input.extend(frame(frame_type::DATA, flags, id, &payload));
            }
            6 => {
                let mut id = stream(rng, &used, next);
                let mut dependency = match rng.u8(..3) {
                    0 => id,
                    1 => id | 0x8000_0000,
                    _ => rng.u32(..8),
                };
                if !hostile {
                    id = id.max(1);
                    if dependency & 0x7fff_ffff == id {
                        dependency = id + 1;
                    }
                }
                let mut payload = dependency.to_be_bytes().to_vec();
                payload.push(rng.u8(..));
                if rng.u8(..6) == 0 {
                    payload.truncate(rng.usize(..5)); // the wrong length
                }
                input.extend(frame(frame_type::PRIORITY, 0, id, &payload));
            }
            7..=9 => {
                let id = if rng.u8(..4) == 0 {
                    0
                } else {
                    stream(rng, &used, next)
                };
                let increment = match rng.u8(..5) {
                    0 => 0,
                    _ if !hostile => rng.u32(1..100_000),
                    1 => i32::MAX as u32,
                    2 => i32::MAX as u32 - rng.u32(..70_000),
                    _ => rng.u32(1..100_000),
                };
                let mut payload = increment.to_be_bytes().to_vec();
                if rng.u8(..8) == 0 {
                    payload.push(0); // the wrong length
                }
                input.extend(frame(frame_type::WINDOW_UPDATE, 0, id, &payload));
            }
            10 => {
                let id = stream(rng, &used, next);
                input.extend(frame(frame_type::RST_STREAM, 0, id, &8u32.to_be_bytes()));
            }
            11 => {
                // SETTINGS_INITIAL_WINDOW_SIZE: windows of open streams move, up or below 0.
                let mut payload = vec![0, 4];
                payload.extend_from_slice(&rng.u32(..1 << 20).to_be_bytes());
                input.extend(frame(frame_type::SETTINGS, 0, 0, &payload));
            }
            12 => match rng.u8(..5) {
                0 => input.extend(frame(frame_type::PING, 0, 0, &[7; 8])),
                1 => input.extend(frame(0x20, 0xff, rng.u32(..8), &[1; 17])), // unknown
                2 => {
                    let promised = (2 * rng.u32(1..4)).to_be_bytes();
                    input.extend(frame(PUSH_PROMISE, END_HEADERS, 1, &promised));
                }
                3 => {
                    let len = 16_385 + rng.usize(..100); // past SETTINGS_MAX_FRAME_SIZE
                    let kind = [frame_type::DATA, frame_type::HEADERS][rng.usize(..2)];
                    input.extend(frame(kind, 0, next, &vec![0; len]));
                }
                // A GOAWAY: with no stream open, nghttp2 reads no more. Given the input as it
                // comes, it still takes the frames after it in the same read: the reference
                // would then depend on where the input was cut.
                _ if hostile => {
                    let mut payload = rng.u32(..12).to_be_bytes().to_vec();
                    payload.extend_from_slice(&0u32.to_be_bytes());
                    input.extend(frame(frame_type::GOAWAY, 0, 0, &payload));
                }
                _ => input.extend(frame(frame_type::PING, 0, 0, &[8; 8])),
            },
            _ => {
                let garbage: Vec<u8> = (0..rng.usize(1..16)).map(|_| rng.u8(..)).collect();
                input.extend_from_slice(&garbage); // the framing itself broken
                break;
            }
        }
    }
    input
}

/// The session's calls and what it wrote after `input` arrived in `pieces`.
fn run<const B: bool>(server: bool, input: &[u8], pieces: &[usize]) -> (Vec<String>, Vec<Frame>) {
    let (mut session, mut h) = if server {
        (
            Session::<Log<B>>::server(&Config::server()).unwrap(),
            Log::default(),
        )
    } else {
        let mut client = Session::<Log<B>>::client(&Config::client()).unwrap();
        for path in [&b"/1"[..], b"/3", b"/5"] {
            client.submit_request(&get(path), false).unwrap();
        }
        let mut h = Log::default();
        client.send(&mut h).unwrap();
        h.out.clear();
        (client, h)
    };
    let mut at = 0;
    for &n in pieces {
        let piece = &input[at..at + n];
        at += n;
        match session.recv(piece, &mut h) {
            Ok(taken) => assert_eq!(taken, piece.len()),
            Err(e) => {
                h.note(format!("fatal {}", e.code));
                break;
            }
        }
    }
    let _ = session.send(&mut h);
    (h.calls, frames(&h.out))
}

type Frame = (u8, u8, u32, Vec<u8>);

fn compare(server: bool, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let input = frames_for(&mut rng, server, true);
    let whole = run::<true>(server, &input, &[input.len()]);
    let bytewise = run::<true>(server, &input, &vec![1; input.len()]);
    assert_eq!(whole, bytewise, "seed {seed}, a byte at a time");
    for _ in 0..3 {
        let mut pieces = Vec::new();
        let mut left = input.len();
        while left > 0 {
            let n = rng.usize(1..=left.min(40));
            pieces.push(n);
            left -= n;
        }
        let cut = run::<true>(server, &input, &pieces);
        assert_eq!(whole, cut, "seed {seed}, in pieces {pieces:?}");
    }
}

#[test]
fn a_server_does_the_same_however_its_input_is_cut() {
    for seed in 0..2000 {
        compare(true, seed);
    }
}

#[test]
fn a_client_does_the_same_however_its_input_is_cut() {
    for seed in 0..2000 {
        compare(false, seed);
    }
}

/// The frame headers of `input` (after the preface, if `server`), as a simple parse finds them.
fn headers_of(server: bool, input: &[u8]) -> Vec<String> {
    let mut at = if server { PREFACE.len() } else { 0 };
    let mut found = Vec::new();
    while at + 9 <= input.len() {
        let h = &input[at..at + 9];
        let len = usize::from(h[0]) << 16 | usize::from(h[1]) << 8 | usize::from(h[2]);
        let stream = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) & 0x7fff_ffff;
        found.push(format!("begin {} {:#x} {stream}", h[3], h[4]));
        at += 9 + len;
    }
    found
}

/// Frames no check refuses or drops reach nghttp2 exactly as they came: the session calls the
/// handler as one that hands nghttp2 the input unseen does, and shows it each frame header of
/// the input in order (until the session stops reading).
fn reference(server: bool, seed: u64) {
    let mut rng = fastrand::Rng::with_seed(seed);
    let input = frames_for(&mut rng, server, false);
    let (plain, plain_out) = run::<false>(server, &input, &[input.len()]);
    let headers = headers_of(server, &input);
    let pieces = [vec![input.len()], vec![1; input.len()]];
    for pieces in &pieces {
        let (calls, out) = run::<true>(server, &input, pieces);
        let (begins, rest): (Vec<_>, Vec<_>) =
            calls.into_iter().partition(|c| c.starts_with("begin"));
        assert_eq!(rest, plain, "seed {seed}");
        assert_eq!(out, plain_out, "seed {seed}");
        assert!(
            headers.starts_with(&begins),
            "seed {seed}: headers shown {begins:?}, in the input {headers:?}"
        );
    }
}

#[test]
fn frames_no_check_refuses_reach_nghttp2_as_they_came() {
    for seed in 0..2000 {
        reference(true, seed);
        reference(false, seed);
    }
}
