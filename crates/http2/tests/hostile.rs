//! A hostile client, written frame by frame, against a server session: malformed frames,
//! CONTINUATION floods, rapid resets, PING floods.

mod common;

use common::{frame, goaways_in, raw_get_block, raw_preface, Event, Peer};
use http2::{error_code, frame_type, lib_error, Config, Session};

use http2::frame::flags::{END_HEADERS, END_STREAM};

fn server(config: &Config) -> (Session<Peer>, Peer) {
    (Session::server(config).unwrap(), Peer::new())
}

/// Streams `1 + 2i` for each `i` in `range`, each opened by a GET and reset by the client at
/// once (CANCEL), as a rapid reset does.
fn opened_and_cancelled(range: std::ops::Range<u32>) -> Vec<u8> {
    let mut out = Vec::new();
    for i in range {
        let stream = 1 + 2 * i;
        let get = raw_get_block();
        out.extend(frame(
            frame_type::HEADERS,
            END_STREAM | END_HEADERS,
            stream,
            &get,
        ));
        let cancel = error_code::CANCEL.to_be_bytes();
        out.extend(frame(frame_type::RST_STREAM, 0, stream, &cancel));
    }
    out
}

#[test]
fn data_on_stream_zero_is_goaway_protocol_error() {
    let (mut server, mut s) = server(&Config::server());
    let mut input = raw_preface();
    input.extend(frame(frame_type::DATA, 0, 0, b"oops"));
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    server.send(&mut s).unwrap();
    assert_eq!(goaways_in(&s.out), vec![(0, error_code::PROTOCOL_ERROR)]);
    assert!(s
        .events
        .contains(&Event::GoawaySent(0, error_code::PROTOCOL_ERROR)));
    assert!(
        !server.want_read() && !server.want_write(),
        "the session is over"
    );
}

#[test]
fn a_settings_frame_of_the_wrong_length_is_goaway_frame_size_error() {
    let (mut server, mut s) = server(&Config::server());
    let mut input = raw_preface();
    input.extend(frame(frame_type::SETTINGS, 0, 0, &[0, 3, 0, 0, 0]));
    server.recv(&input, &mut s).unwrap();
    server.send(&mut s).unwrap();
    assert_eq!(goaways_in(&s.out), vec![(0, error_code::FRAME_SIZE_ERROR)]);
}

#[test]
fn a_wrong_preface_is_fatal() {
    let (mut server, mut s) = server(&Config::server());
    let err = server
        .recv(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n", &mut s)
        .unwrap_err();
    assert_eq!(err.code, lib_error::BAD_CLIENT_MAGIC);
    assert!(err.is_fatal());
}

#[test]
fn a_continuation_flood_ends_the_session() {
    let config = Config {
        max_continuations: 8,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    let mut input = raw_preface();
    // HEADERS without END_HEADERS, then CONTINUATIONs that never end the block, each with one
    // more header (a literal without indexing: x-a: b).
    input.extend(frame(frame_type::HEADERS, END_STREAM, 1, &raw_get_block()));
    for _ in 0..100 {
        input.extend(frame(
            frame_type::CONTINUATION,
            0,
            1,
            &[0, 3, b'x', b'-', b'a', 1, b'b'],
        ));
    }
    let err = server.recv(&input, &mut s).unwrap_err();
    assert_eq!(err.code, lib_error::TOO_MANY_CONTINUATIONS);
    assert!(
        err.is_fatal(),
        "nghttp2 ends the session: the caller closes the connection"
    );
    assert!(s.headers_ended().is_empty());
    // Eight were allowed: a block of up to 8 CONTINUATIONs is still fine.
    let (mut server, mut s) = self::server(&config);
    let mut input = raw_preface();
    input.extend(frame(frame_type::HEADERS, END_STREAM, 1, &raw_get_block()));
    for i in 0..8 {
        let flags = if i == 7 { END_HEADERS } else { 0 };
        input.extend(frame(
            frame_type::CONTINUATION,
            flags,
            1,
            &[0, 3, b'x', b'-', b'a', 1, b'b'],
        ));
    }
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    assert_eq!(s.headers_ended(), vec![(1, true)]);
}

#[test]
fn rapid_reset_gets_goaway_once_the_budget_is_spent() {
    // A burst of 10 resets, then one a second: a client that opens and cancels 50 streams at
    // once is told to go away (INTERNAL_ERROR, nghttp2's choice) and no new stream starts.
    let config = Config {
        stream_reset_burst: 10,
        stream_reset_rate: 1,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    let mut input = raw_preface();
    input.extend(opened_and_cancelled(0..50));
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    server.send(&mut s).unwrap();
    let goaways = goaways_in(&s.out);
    assert_eq!(goaways.len(), 1, "{goaways:?}");
    let (last, code) = goaways[0];
    assert_eq!(code, error_code::INTERNAL_ERROR);
    // Within the burst (and the one token a second that may have come meanwhile).
    assert!(
        (21..=25).contains(&last),
        "GOAWAY after the 11th or 12th reset: {last}"
    );
    assert!(s.events.contains(&Event::GoawaySent(last as i32, code)));
    // Once the GOAWAY is written, no new stream is processed: the rest of one read's bytes
    // were (nghttp2 answers at the next send), later reads are not.
    let processed = s.headers_ended().len();
    let more = opened_and_cancelled(50..100);
    assert_eq!(server.recv(&more, &mut s), Ok(more.len()));
    assert_eq!(
        s.headers_ended().len(),
        processed,
        "no stream after the GOAWAY"
    );
}

#[test]
fn resets_within_the_budget_are_fine() {
    let config = Config {
        stream_reset_burst: 100,
        stream_reset_rate: 1,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    let mut input = raw_preface();
    input.extend(opened_and_cancelled(0..50));
    server.recv(&input, &mut s).unwrap();
    server.send(&mut s).unwrap();
    assert!(goaways_in(&s.out).is_empty());
    assert_eq!(s.headers_ended().len(), 50);
}

#[test]
fn a_ping_flood_against_a_reader_that_never_writes_is_fatal() {
    // The server's output is blocked (the client does not read): PING ACKs pile up until
    // max_outbound_ack, then recv fails.
    let config = Config {
        max_outbound_ack: 100,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    s.blocked = true;
    let mut input = raw_preface();
    for _ in 0..1000 {
        input.extend(frame(frame_type::PING, 0, 0, &[0; 8]));
    }
    let err = server.recv(&input, &mut s).unwrap_err();
    assert_eq!(err.code, lib_error::FLOODED);
    assert!(err.is_fatal());
}

#[test]
fn pings_that_are_read_are_answered() {
    let (mut server, mut s) = server(&Config::server());
    let mut input = raw_preface();
    for i in 0..1000u64 {
        input.extend(frame(frame_type::PING, 0, 0, &i.to_be_bytes()));
        server.recv(&input, &mut s).unwrap();
        input.clear();
        server.send(&mut s).unwrap();
    }
    let acks = common::frames(&s.out)
        .into_iter()
        .filter(|f| f.0 == frame_type::PING && f.1 == 1)
        .count();
    assert_eq!(acks, 1000);
}

#[test]
fn too_many_settings_entries_are_refused() {
    let config = Config {
        max_settings: 4,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    let mut input = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    let entries: Vec<u8> = (0..10).flat_map(|_| [0u8, 3, 0, 0, 0, 100]).collect();
    input.extend(frame(frame_type::SETTINGS, 0, 0, &entries));
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    server.send(&mut s).unwrap();
    assert_eq!(goaways_in(&s.out), vec![(0, error_code::ENHANCE_YOUR_CALM)]);
    assert!(!server.want_read() && !server.want_write());
}

#[test]
fn a_flood_of_useless_frames_passes_the_glitch_limit() {
    // PRIORITY frames (RFC 7540's deprecated priorities) do nothing but cost: each is a glitch.
    let config = Config {
        glitch_burst: 10,
        glitch_rate: 1,
        ..Config::server()
    };
    let (mut server, mut s) = server(&config);
    let mut input = raw_preface();
    for i in 0..100u32 {
        input.extend(frame(frame_type::PRIORITY, 0, 1 + 2 * i, &[0, 0, 0, 0, 15]));
    }
    assert_eq!(server.recv(&input, &mut s), Ok(input.len()));
    server.send(&mut s).unwrap();
    assert_eq!(goaways_in(&s.out), vec![(0, error_code::ENHANCE_YOUR_CALM)]);
    assert!(!server.want_read() && !server.want_write());
}
