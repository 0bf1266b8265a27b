use super::*;
use crate::record::{Encoder, Event, Reader, OVERLOADED, REQUEST_ID};

/// A request as flint serve writes it: params, then a body, then the end of STDIN.
fn request(params: &[(&[u8], &[u8])], body: &[u8], keep_conn: bool) -> Vec<u8> {
    let mut buf = Vec::new();
    let mut enc = Encoder::default();
    enc.begin(&mut buf, keep_conn);
    for (name, value) in params {
        enc.param(&mut buf, name, value);
    }
    enc.end_params(&mut buf);
    assert_eq!(enc.stdin(&mut buf, body, usize::MAX), body.len());
    enc.end_stdin(&mut buf);
    buf
}

/// Feeds `input` to a decoder `step` bytes at a time into a growing buffer, as a socket would;
/// what steps came out.
fn decode(input: &[u8], step: usize) -> Result<Vec<Step>, RequestError> {
    let mut dec = Decoder::new();
    let mut buf = Vec::new();
    let mut steps = Vec::new();
    for piece in input.chunks(step) {
        buf.extend_from_slice(piece);
        loop {
            let (used, step) = dec.read(&buf)?;
            buf.drain(..used);
            match step {
                Some(s) => steps.push(s),
                None => break,
            }
        }
    }
    assert!(buf.is_empty(), "{} bytes left unread", buf.len());
    Ok(steps)
}

#[test]
fn a_request_reads_the_same_whatever_its_split() {
    let long = vec![b'v'; 70_000];
    let body: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
    let input = request(
        &[
            (b"REQUEST_METHOD", b"POST"),
            (b"PATH_INFO", b"/json"),
            (b"HTTP_X_LONG", &long),
            (b"QUERY_STRING", b""),
        ],
        &body,
        true,
    );
    for step in [1, 7, 8, 9, 4096, input.len()] {
        let steps = decode(&input, step).unwrap();
        let [Step::Request(r)] = &steps[..] else {
            panic!("step {step}: {steps:?}");
        };
        assert_eq!(r.id, REQUEST_ID);
        assert!(r.keep_conn);
        assert_eq!(r.param("REQUEST_METHOD"), Some(&b"POST"[..]));
        assert_eq!(r.param("PATH_INFO"), Some(&b"/json"[..]));
        assert_eq!(r.param("HTTP_X_LONG").map(<[u8]>::len), Some(70_000));
        assert_eq!(r.param("QUERY_STRING"), Some(&b""[..]));
        assert_eq!(r.param("NOPE"), None);
        assert_eq!(r.params().count(), 4);
        assert_eq!(r.stdin, body);
    }
}

#[test]
fn an_answer_reads_back_as_the_server_reads_it() {
    let answer: Vec<u8> = b"Status: 200\r\nContent-Type: text/plain\r\n\r\n"
        .iter()
        .copied()
        .chain(std::iter::repeat_n(b'x', 150_000))
        .collect();
    let mut out = Vec::new();
    respond(&mut out, REQUEST_ID, &answer, 0);
    let mut reader = Reader::new();
    let (mut stdout, mut end) = (Vec::new(), None);
    let mut at = 0;
    while at < out.len() {
        let (used, event) = reader.read(&out[at..], usize::MAX).unwrap();
        at += used;
        match event {
            Some(Event::Stdout(d)) => stdout.extend_from_slice(d),
            Some(Event::End {
                app_status,
                protocol_status,
            }) => end = Some((app_status, protocol_status)),
            Some(Event::Stderr(_)) => panic!("no stderr was written"),
            None => assert_eq!(used, 0, "a record without an event is only a header"),
        }
        if used == 0 {
            break;
        }
    }
    assert_eq!(stdout, answer);
    assert_eq!(end, Some((0, REQUEST_COMPLETE)));
    assert!(reader.ended() && at == out.len());
}

/// A record as a server writes it.
fn record(kind: u8, id: u16, content: &[u8]) -> Vec<u8> {
    let mut r = Vec::new();
    header_for(&mut r, kind, id, content.len(), 0);
    r.extend_from_slice(content);
    r
}

#[test]
fn a_second_request_or_another_role_is_refused_and_management_answered() {
    let mut input = request(&[(b"A", b"1")], b"", false);
    // A second request begun while the first is under way (its STDIN not ended yet).
    let first_end = input.len() - HEADER_LEN;
    let mut begin2 = record(BEGIN_REQUEST, 2, &[0, 1, 0, 0, 0, 0, 0, 0]);
    begin2.extend(record(BEGIN_REQUEST, 3, &[0, 2, 0, 0, 0, 0, 0, 0]));
    begin2.extend(record(GET_VALUES, 0, b"\x0f\x00FCGI_MPXS_CONNS"));
    begin2.extend(record(OVERLOADED + 40, 0, b""));
    input.splice(first_end..first_end, begin2);
    let steps = decode(&input, 5).unwrap();
    let ends: Vec<(u8, u16, Vec<u8>)> = steps
        .iter()
        .filter_map(|s| match s {
            Step::Reply(r) => Some((r[1], u16::from_be_bytes([r[2], r[3]]), r[8..].to_vec())),
            Step::Request(_) => None,
        })
        .collect();
    assert_eq!(
        ends,
        [
            (END_REQUEST, 2, vec![0, 0, 0, 0, CANT_MPX_CONN, 0, 0, 0]),
            (END_REQUEST, 3, vec![0, 0, 0, 0, CANT_MPX_CONN, 0, 0, 0]),
            (
                GET_VALUES_RESULT,
                0,
                b"\x0f\x01FCGI_MPXS_CONNS0\0\0\0\0\0\0".to_vec()
            ),
            (UNKNOWN_TYPE, 0, vec![OVERLOADED + 40, 0, 0, 0, 0, 0, 0, 0]),
        ]
    );
    assert!(matches!(steps.last(), Some(Step::Request(r)) if r.param("A") == Some(b"1")));
    // Alone, another role is refused as unknown.
    let steps = decode(&record(BEGIN_REQUEST, 9, &[0, 2, 0, 0, 0, 0, 0, 0]), 3).unwrap();
    assert!(matches!(&steps[..], [Step::Reply(r)] if r[4 + HEADER_LEN] == UNKNOWN_ROLE));
}

#[test]
fn an_aborted_request_ends_and_its_late_records_are_ignored() {
    let mut input = record(BEGIN_REQUEST, 1, &[0, 1, 1, 0, 0, 0, 0, 0]);
    input.extend(record(PARAMS, 1, b"\x01\x01AB"));
    input.extend(record(ABORT_REQUEST, 1, b""));
    input.extend(record(PARAMS, 1, b""));
    input.extend(record(STDIN, 1, b""));
    let steps = decode(&input, 1).unwrap();
    let [Step::Reply(r)] = &steps[..] else {
        panic!("{steps:?}")
    };
    assert_eq!(
        (r[1], &r[8..]),
        (END_REQUEST, &[0, 0, 0, 1, 0, 0, 0, 0][..])
    );
}

#[test]
fn malformed_or_oversized_input_is_refused() {
    let mut bad = record(BEGIN_REQUEST, 1, &[0, 1, 0, 0, 0, 0, 0, 0]);
    bad[0] = 2;
    assert_eq!(decode(&bad, 64), Err(RequestError::Version(2)));
    let short = record(BEGIN_REQUEST, 1, &[0, 1, 0]);
    assert_eq!(decode(&short, 64), Err(RequestError::BeginLength(3)));
    let stdout = record(STDOUT, 1, b"x");
    assert_eq!(
        decode(&stdout, 64),
        Err(RequestError::UnexpectedType(STDOUT))
    );
    let big = vec![0u8; MAX_STREAM + 1];
    let mut input = request(&[], b"", false);
    input.truncate(input.len() - HEADER_LEN);
    let mut enc = Encoder::default();
    enc.stdin(&mut input, &big, usize::MAX);
    assert_eq!(decode(&input, 1 << 16), Err(RequestError::TooLarge));
}
