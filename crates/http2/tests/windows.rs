//! Paced stream windows (`Config::paced_stream_windows`): a stream's receive window reopens only
//! as the caller consumes its body, the connection's as the bytes arrive.

mod common;

use common::{frame, frames, raw_get_block, raw_preface, Peer};
use http2::frame::flags::END_HEADERS;
use http2::{frame_type, Config, Session};

/// The WINDOW_UPDATEs in `out`: (stream, increment).
fn updates(out: &[u8]) -> Vec<(u32, u32)> {
    (frames(out).into_iter())
        .filter(|f| f.0 == frame_type::WINDOW_UPDATE)
        .map(|f| (f.2, u32::from_be_bytes(f.3[..4].try_into().unwrap())))
        .collect()
}

/// Stream 1 opened, its body not ended, and `chunks` DATA frames of 16 KiB on it.
fn upload(chunks: usize) -> Vec<u8> {
    let mut input = raw_preface();
    input.extend(frame(frame_type::HEADERS, END_HEADERS, 1, &raw_get_block()));
    for _ in 0..chunks {
        input.extend(frame(frame_type::DATA, 0, 1, &[7; 16_384]));
    }
    input
}

#[test]
fn a_paced_stream_s_window_reopens_only_as_its_body_is_consumed() {
    let config = Config {
        paced_stream_windows: true,
        ..Config::server()
    };
    let mut server: Session<Peer> = Session::server(&config).unwrap();
    let mut s = Peer::new();
    let input = upload(3);
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    server.send(&mut s).unwrap();
    // Past half of each window: the connection's reopens (as soon as half was received), the
    // stream's waits.
    assert_eq!(updates(&s.out), vec![(0, 32_768)]);
    s.out.clear();
    server.consume(1, 49_152).unwrap();
    server.send(&mut s).unwrap();
    assert_eq!(updates(&s.out), vec![(1, 49_152)]);
}

#[test]
fn unpaced_both_windows_reopen_as_bytes_arrive_and_consume_does_nothing() {
    let mut server: Session<Peer> = Session::server(&Config::server()).unwrap();
    let mut s = Peer::new();
    let input = upload(3);
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    assert_eq!(server.consume(1, 49_152), Ok(()));
    server.send(&mut s).unwrap();
    let mut got = updates(&s.out);
    got.sort();
    assert_eq!(got, vec![(0, 32_768), (1, 32_768)]);
}

/// Takes the first two DATA frames whole as they arrive (as a server drops a body no one
/// wants), the rest left to `Session::consume`.
#[derive(Default)]
struct TakesTwo {
    out: Vec<u8>,
    given: usize,
}

impl http2::Handler for TakesTwo {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_data(&mut self, _: http2::StreamId, _: &[u8]) {
        panic!("paced: on_data_paced is called instead");
    }

    fn on_data_paced(&mut self, _: http2::StreamId, data: &[u8]) -> usize {
        self.given += data.len();
        if self.given <= 32_768 {
            data.len()
        } else {
            0
        }
    }
}

#[test]
fn a_paced_stream_s_window_reopens_at_once_by_what_the_handler_took_as_it_arrived() {
    let config = Config {
        paced_stream_windows: true,
        ..Config::server()
    };
    let mut server: Session<TakesTwo> = Session::server(&config).unwrap();
    let mut h = TakesTwo::default();
    let input = upload(3);
    assert_eq!(server.recv(&input, &mut h), Ok(input.len()));
    assert_eq!(h.given, 3 * 16_384);
    server.send(&mut h).unwrap();
    // The two frames taken at once reopen the stream's window; the third waits.
    let mut got = updates(&h.out);
    got.sort();
    assert_eq!(got, vec![(0, 32_768), (1, 32_768)]);
}
