//! A server session's request checks (RFC 9113 8.1 to 8.3, made by the session in place of
//! nghttp2's HTTP messaging) through a real session, fed raw frames whole and a byte at a time:
//! what nghttp2 ends the connection for ends it (GOAWAY PROTOCOL_ERROR) before the handler
//! sees the request, and a malformed regular field or a `:path` not in origin form makes its
//! request malformed (RST_STREAM PROTOCOL_ERROR) while the connection goes on.

mod common;

use common::{frame, frames, goaways_in, raw_get_block, raw_preface, Peer};
use http2::{error_code, frame_type, Config, Session};

use http2::frame::flags::{END_HEADERS, END_STREAM};

/// A literal field without indexing, new name (RFC 7541 6.2.2), no Huffman.
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    assert!(name.len() < 127 && value.len() < 127);
    let mut b = vec![0x00, name.len() as u8];
    b.extend_from_slice(name);
    b.push(value.len() as u8);
    b.extend_from_slice(value);
    b
}

/// The preface, then `frames` after it.
fn input(frames: &[Vec<u8>]) -> Vec<u8> {
    let mut all = raw_preface();
    frames.iter().for_each(|f| all.extend_from_slice(f));
    all
}

/// Feeds `input` to a fresh server whole and a byte at a time (both must agree); returns the
/// handler and the GOAWAY error codes written.
fn run(input: &[u8]) -> (Peer, Vec<u32>) {
    let mut results = Vec::new();
    for bytewise in [false, true] {
        let mut server = Session::<Peer>::server(&Config::server()).unwrap();
        let mut h = Peer::new();
        if bytewise {
            input
                .chunks(1)
                .for_each(|b| assert_eq!(server.recv(b, &mut h), Ok(1)));
        } else {
            assert_eq!(server.recv(input, &mut h), Ok(input.len()));
        }
        server.send(&mut h).unwrap();
        let codes: Vec<u32> = goaways_in(&h.out).into_iter().map(|g| g.1).collect();
        results.push((h, codes));
    }
    let (b, a) = (results.pop().unwrap(), results.pop().unwrap());
    assert_eq!(
        a.0.headers_ended(),
        b.0.headers_ended(),
        "whole and bytewise"
    );
    assert_eq!(a.1, b.1, "whole and bytewise");
    a
}

/// A GET with `extra` fields after its pseudo-headers, ending the stream.
fn get_with(extra: &[Vec<u8>]) -> Vec<u8> {
    let mut block = raw_get_block();
    extra.iter().for_each(|f| block.extend_from_slice(f));
    input(&[frame(
        frame_type::HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &block,
    )])
}

fn refused(input: &[u8]) {
    let (h, goaways) = run(input);
    assert_eq!(goaways, [error_code::PROTOCOL_ERROR]);
    assert!(
        h.headers_ended().is_empty(),
        "the handler never sees the request"
    );
}

#[test]
fn a_valid_get_reaches_the_handler() {
    let (h, goaways) = run(&get_with(&[literal(b"accept", b"*/*")]));
    assert!(goaways.is_empty());
    assert_eq!(h.headers_ended(), [(1, true)]);
    assert_eq!(h.header(1, b"accept").as_deref(), Some(&b"*/*"[..]));
}

#[test]
fn connection_specific_fields_and_te_end_the_connection() {
    for name in [
        &b"connection"[..],
        b"keep-alive",
        b"proxy-connection",
        b"upgrade",
    ] {
        refused(&get_with(&[literal(name, b"x")]));
    }
    refused(&get_with(&[literal(b"transfer-encoding", b"chunked")]));
    refused(&get_with(&[literal(b"te", b"gzip")]));
    let (h, goaways) = run(&get_with(&[literal(b"te", b"trailers")]));
    assert!(goaways.is_empty() && h.headers_ended() == [(1, true)]);
}

#[test]
fn uppercase_names_and_misplaced_pseudo_headers_end_the_connection() {
    refused(&get_with(&[literal(b"X-Up", b"1")]));
    refused(&get_with(&[
        literal(b"accept", b"*/*"),
        literal(b":path", b"/b"),
    ]));
    refused(&get_with(&[literal(b":protocol", b"websocket")]));
    refused(&get_with(&[literal(b":status", b"200")]));
    refused(&get_with(&[literal(b":path", b"/again")]));
}

#[test]
fn a_malformed_regular_field_resets_its_stream_and_the_connection_goes_on() {
    // RFC 9113 8.2.1: NUL, CR or LF anywhere in a value, white space at either end, a name that
    // is no token: the request is malformed (8.1.1: a stream error of type PROTOCOL_ERROR).
    for bad in [
        literal(b"x-bad", b"a\r\nb"),
        literal(b"x-bad", b"a\0b"),
        literal(b"x-bad", b"a\rb"),
        literal(b"x-bad", b"a\nb"),
        literal(b"x-bad", b"a\x01b"),
        literal(b"x-bad", b" v"),
        literal(b"bad name", b"v"),
        literal(b"host", b"a b"),
    ] {
        let mut block = raw_get_block();
        block.extend_from_slice(&bad);
        block.extend_from_slice(&literal(b"x-after", b"v"));
        let (h, goaways) = run(&input(&[
            frame(frame_type::HEADERS, END_HEADERS | END_STREAM, 1, &block),
            frame(
                frame_type::HEADERS,
                END_HEADERS | END_STREAM,
                3,
                &raw_get_block(),
            ),
        ]));
        assert!(goaways.is_empty(), "{bad:?}");
        assert_eq!(h.headers_ended(), [(3, true)], "{bad:?}");
        assert_eq!(
            h.header(1, b"x-after"),
            None,
            "nothing after the malformed field"
        );
        let resets: Vec<(u32, u32)> = frames(&h.out)
            .into_iter()
            .filter(|f| f.0 == frame_type::RST_STREAM)
            .map(|f| (f.2, u32::from_be_bytes([f.3[0], f.3[1], f.3[2], f.3[3]])))
            .collect();
        assert_eq!(resets, [(1, error_code::PROTOCOL_ERROR)], "{bad:?}");
    }
}

#[test]
fn a_path_not_in_origin_form_resets_its_stream_and_the_connection_goes_on() {
    // RFC 9113 8.3.1: an `http` request's `:path` is origin-form; `a.txt` or an absolute URL
    // makes it malformed (8.1.1: a stream error), with a body following or not; a GET after
    // it on the same connection is answered.
    let block = |path: &[u8]| {
        // :method GET, :scheme http, :authority localhost, then the :path.
        let mut b = vec![0x82, 0x86, 0x01, 9];
        b.extend_from_slice(b"localhost");
        b.extend_from_slice(&literal(b":path", path));
        b
    };
    let (h, goaways) = run(&input(&[
        frame(
            frame_type::HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &block(b"a.txt"),
        ),
        frame(
            frame_type::HEADERS,
            END_HEADERS,
            3,
            &block(b"http://localhost/a"),
        ),
        frame(frame_type::DATA, END_STREAM, 3, b"body"),
        frame(
            frame_type::HEADERS,
            END_HEADERS | END_STREAM,
            5,
            &raw_get_block(),
        ),
    ]));
    assert!(goaways.is_empty(), "{goaways:?}");
    assert_eq!(h.headers_ended(), [(5, true)]);
    let resets: Vec<(u32, u32)> = frames(&h.out)
        .into_iter()
        .filter(|f| f.0 == frame_type::RST_STREAM)
        .map(|f| (f.2, u32::from_be_bytes([f.3[0], f.3[1], f.3[2], f.3[3]])))
        .collect();
    assert_eq!(
        resets,
        [
            (1, error_code::PROTOCOL_ERROR),
            (3, error_code::PROTOCOL_ERROR)
        ]
    );
}

#[test]
fn a_request_without_its_path_ends_the_connection() {
    // :method GET, :scheme http, :authority localhost; no :path.
    let mut block = vec![0x82, 0x86, 0x01, 9];
    block.extend_from_slice(b"localhost");
    refused(&input(&[frame(
        frame_type::HEADERS,
        END_HEADERS | END_STREAM,
        1,
        &block,
    )]));
}

/// A request declaring `content-length: 3`, then DATA frames with these bodies, the last one
/// ending the stream.
fn post(bodies: &[&[u8]]) -> Vec<u8> {
    let mut block = vec![0x83, 0x86, 0x84, 0x01, 9]; // :method POST
    block.extend_from_slice(b"localhost");
    block.extend(literal(b"content-length", b"3"));
    let mut frames = vec![frame(frame_type::HEADERS, END_HEADERS, 1, &block)];
    for (i, body) in bodies.iter().enumerate() {
        let flags = if i + 1 == bodies.len() { END_STREAM } else { 0 };
        frames.push(frame(frame_type::DATA, flags, 1, body));
    }
    input(&frames)
}

#[test]
fn a_body_must_match_its_content_length() {
    let (h, goaways) = run(&post(&[b"ab", b"c"]));
    assert!(goaways.is_empty());
    assert_eq!(h.received.get(&1).map(Vec::as_slice), Some(&b"abc"[..]));

    let (_, goaways) = run(&post(&[b"ab"]));
    assert_eq!(goaways, [error_code::PROTOCOL_ERROR], "short");
    let (h, goaways) = run(&post(&[b"ab", b"cd"]));
    assert_eq!(goaways, [error_code::PROTOCOL_ERROR], "long");
    assert_eq!(h.received.get(&1).map(Vec::as_slice), Some(&b"ab"[..]));
}

#[test]
fn trailers_must_end_the_stream() {
    let head = frame(frame_type::HEADERS, END_HEADERS, 1, &raw_get_block());
    let trailers = literal(b"x-sum", b"1");
    let (_, goaways) = run(&input(&[
        head.clone(),
        frame(frame_type::HEADERS, END_HEADERS, 1, &trailers),
    ]));
    assert_eq!(goaways, [error_code::PROTOCOL_ERROR]);
    let (h, goaways) = run(&input(&[
        head,
        frame(frame_type::HEADERS, END_HEADERS | END_STREAM, 1, &trailers),
    ]));
    assert!(goaways.is_empty());
    assert_eq!(h.headers_ended(), [(1, false), (1, true)]);
}

/// Two GETs, stream 1 then 3, with these `priority` fields; both answered with a body at
/// once, in stream order: the stream whose DATA the server writes first.
fn first_data(priorities: [Option<&[u8]>; 2]) -> u32 {
    let mut frames = Vec::new();
    for (stream, p) in [1u32, 3].into_iter().zip(priorities) {
        let mut block = raw_get_block();
        if let Some(p) = p {
            block.extend(literal(b"priority", p));
        }
        frames.push(frame(
            frame_type::HEADERS,
            END_HEADERS | END_STREAM,
            stream,
            &block,
        ));
    }
    let mut server = Session::<Peer>::server(&Config::server()).unwrap();
    let mut h = Peer::new();
    let bytes = input(&frames);
    assert_eq!(server.recv(&bytes, &mut h), Ok(bytes.len()));
    common::responder(|_| vec![b'x'; 100])(&mut server, &mut h);
    server.send(&mut h).unwrap();
    common::frames(&h.out)
        .into_iter()
        .find(|f| f.0 == frame_type::DATA)
        .expect("a DATA frame")
        .2
}

#[test]
fn a_requests_priority_field_orders_the_responses() {
    assert_eq!(first_data([None, None]), 1, "the same urgency: in order");
    assert_eq!(first_data([Some(b"u=7"), Some(b"u=0")]), 3);
    assert_eq!(
        first_data([Some(b"u=5"), None]),
        3,
        "stream 3 has the default, 3"
    );
    assert_eq!(
        first_data([Some(b"u=9"), Some(b"u=4")]),
        1,
        "a bad field is not applied"
    );
}
