use super::*;

/// An application's record, as a responder writes it.
fn record(kind: u8, id: u16, content: &[u8], padding: u8) -> Vec<u8> {
    let mut r = vec![VERSION_1, kind];
    r.extend_from_slice(&id.to_be_bytes());
    r.extend_from_slice(&(content.len() as u16).to_be_bytes());
    r.extend_from_slice(&[padding, 0]);
    r.extend_from_slice(content);
    r.extend(std::iter::repeat_n(0xAA, padding as usize));
    r
}

fn end_request(app_status: u32, protocol_status: u8) -> Vec<u8> {
    let mut c = app_status.to_be_bytes().to_vec();
    c.extend_from_slice(&[protocol_status, 0, 0, 0]);
    record(END_REQUEST, REQUEST_ID, &c, 0)
}

/// What a reader makes of `input` fed in pieces of `step` bytes, stream content at most
/// `max` at a time: stdout, stderr, and the end.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    end: Option<(u32, u8)>,
}

fn read_all(input: &[u8], step: usize, max: usize) -> Result<Seen, RecordError> {
    let mut r = Reader::new();
    let mut seen = Seen::default();
    for piece in input.chunks(step) {
        let mut pos = 0;
        loop {
            let (used, event) = r.read(&piece[pos..], max)?;
            pos += used;
            match event {
                Some(Event::Stdout(d)) => {
                    assert!(d.len() <= max && !d.is_empty());
                    seen.stdout.extend_from_slice(d)
                }
                Some(Event::Stderr(d)) => seen.stderr.extend_from_slice(d),
                Some(Event::End {
                    app_status,
                    protocol_status,
                }) => seen.end = Some((app_status, protocol_status)),
                None => {
                    assert_eq!(pos, piece.len(), "no event, yet input left");
                    break;
                }
            }
        }
    }
    Ok(seen)
}

fn response() -> Vec<u8> {
    let mut input = record(STDOUT, REQUEST_ID, b"Content-Type: text/plain\r\n\r\n", 4);
    input.extend(record(STDERR, REQUEST_ID, b"a warning\n", 6));
    input.extend(record(GET_VALUES_RESULT, 0, b"\x0e\x01FCGI_MAX_CONNS1", 0));
    input.extend(record(STDOUT, REQUEST_ID, b"hello", 3));
    input.extend(record(STDOUT, REQUEST_ID, b"", 0));
    input.extend(record(STDERR, REQUEST_ID, b"", 0));
    input.extend(end_request(7, REQUEST_COMPLETE));
    input
}

#[test]
fn a_response_reads_the_same_whatever_its_split() {
    let input = response();
    let whole = read_all(&input, input.len(), usize::MAX).unwrap();
    assert_eq!(whole.stdout, b"Content-Type: text/plain\r\n\r\nhello");
    assert_eq!(whole.stderr, b"a warning\n");
    assert_eq!(whole.end, Some((7, REQUEST_COMPLETE)));
    for step in [1, 2, 3, 7, 8, 9, 13] {
        for max in [1, 4, 1000] {
            assert_eq!(
                read_all(&input, step, max).unwrap(),
                whole,
                "step {step} max {max}"
            );
        }
    }
}

#[test]
fn the_end_is_reported_once_its_padding_is_read_and_nothing_may_follow() {
    let mut r = Reader::new();
    let mut end = end_request(0, REQUEST_COMPLETE);
    end[6] = 8; // padding
    end.extend_from_slice(&[0; 8]);
    let (used, event) = r.read(&end[..16], 8).unwrap();
    assert_eq!((used, event), (16, None));
    assert!(!r.ended());
    let (used, event) = r.read(&end[16..], 8).unwrap();
    assert_eq!(used, 8);
    assert!(matches!(event, Some(Event::End { .. })));
    assert!(r.ended() && r.at_boundary());
    assert_eq!(r.read(b"", 8), Ok((0, None)));
    assert_eq!(r.read(b"x", 8), Err(RecordError::AfterEnd));
}

#[test]
fn malformed_records_are_refused_with_what_is_wrong() {
    let mut v2 = record(STDOUT, REQUEST_ID, b"x", 0);
    v2[0] = 2;
    let cases = [
        (v2, RecordError::Version(2)),
        (
            record(BEGIN_REQUEST, REQUEST_ID, &[0; 8], 0),
            RecordError::UnexpectedType(BEGIN_REQUEST),
        ),
        (
            record(42, REQUEST_ID, b"", 0),
            RecordError::UnexpectedType(42),
        ),
        (record(STDOUT, 2, b"x", 0), RecordError::RequestId(2)),
        (record(STDOUT, 0, b"x", 0), RecordError::RequestId(0)),
        (
            record(END_REQUEST, REQUEST_ID, &[0; 4], 0),
            RecordError::EndLength(4),
        ),
    ];
    for (input, want) in cases {
        assert_eq!(read_all(&input, 3, 100), Err(want));
        assert!(!want.to_string().is_empty());
    }
    let mut r = Reader::new();
    assert_eq!(r.read(&[1, STDOUT, 0], 10), Ok((3, None)));
    assert!(!r.at_boundary(), "in the middle of a header");
}

/// A PARAMS stream's name-value pairs, as an application reads them.
fn decode_params(mut stream: &[u8]) -> Vec<(Vec<u8>, Vec<u8>)> {
    fn len(s: &mut &[u8]) -> usize {
        if s[0] < 128 {
            let n = s[0] as usize;
            *s = &s[1..];
            n
        } else {
            let n = u32::from_be_bytes([s[0] & 0x7f, s[1], s[2], s[3]]) as usize;
            *s = &s[4..];
            n
        }
    }
    let mut pairs = Vec::new();
    while !stream.is_empty() {
        let (n, v) = (len(&mut stream), len(&mut stream));
        pairs.push((stream[..n].to_vec(), stream[n..n + v].to_vec()));
        stream = &stream[n + v..];
    }
    pairs
}

/// The records of `buf`: (type, content), each checked for id, alignment of padding.
fn records(mut buf: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        assert_eq!(buf[0], VERSION_1);
        assert_eq!(u16::from_be_bytes([buf[2], buf[3]]), REQUEST_ID);
        let len = u16::from_be_bytes([buf[4], buf[5]]) as usize;
        let padding = buf[6] as usize;
        assert_eq!((len + padding) % 8, 0, "records are kept 8-byte aligned");
        out.push((buf[1], buf[8..8 + len].to_vec()));
        buf = &buf[8 + len + padding..];
    }
    out
}

#[test]
fn a_request_is_begun_its_params_paired_and_its_body_streamed() {
    let mut e = Encoder::default();
    let mut buf = Vec::new();
    e.begin(&mut buf, true);
    let long = vec![b'v'; 200];
    let huge = vec![b'h'; 70_000];
    e.param(&mut buf, b"REQUEST_METHOD", b"POST");
    e.param(&mut buf, b"HTTP_LONG", &long);
    e.param(&mut buf, b"HTTP_HUGE", &huge);
    e.param(&mut buf, b"EMPTY", b"");
    e.end_params(&mut buf);
    let body = vec![b'b'; 70_000];
    assert_eq!(e.stdin(&mut buf, &body, 100_000), body.len());
    assert_eq!(e.stdin(&mut buf, b"abc", 2), 2);
    e.end_stdin(&mut buf);

    let recs = records(&buf);
    assert_eq!(
        recs[0],
        (BEGIN_REQUEST, vec![0, 1, KEEP_CONN, 0, 0, 0, 0, 0])
    );
    let params: Vec<_> = recs.iter().filter(|r| r.0 == PARAMS).collect();
    assert!(
        params.len() >= 3,
        "70 kB of params span records, then the empty one"
    );
    assert!(params.last().unwrap().1.is_empty());
    assert!(params.iter().all(|r| r.1.len() <= MAX_CONTENT));
    let stream: Vec<u8> = params.iter().flat_map(|r| r.1.iter().copied()).collect();
    let pairs = decode_params(&stream);
    let want: Vec<(Vec<u8>, Vec<u8>)> = vec![
        (b"REQUEST_METHOD".to_vec(), b"POST".to_vec()),
        (b"HTTP_LONG".to_vec(), long),
        (b"HTTP_HUGE".to_vec(), huge),
        (b"EMPTY".to_vec(), vec![]),
    ];
    assert_eq!(pairs, want);
    let stdin: Vec<&(u8, Vec<u8>)> = recs.iter().filter(|r| r.0 == STDIN).collect();
    assert_eq!(
        stdin.len(),
        4,
        "two for 70 kB, one for 2 bytes, the empty end"
    );
    let sent: Vec<u8> = stdin.iter().flat_map(|r| r.1.iter().copied()).collect();
    assert_eq!(sent.len(), 70_002);
    assert!(stdin.last().unwrap().1.is_empty());
    let mut order: Vec<u8> = recs.iter().map(|r| r.0).collect();
    order.dedup();
    assert_eq!(order, [BEGIN_REQUEST, PARAMS, STDIN]);
}

#[test]
fn a_request_without_params_still_ends_its_params_stream() {
    let mut e = Encoder::default();
    let mut buf = Vec::new();
    e.begin(&mut buf, false);
    e.end_params(&mut buf);
    e.end_stdin(&mut buf);
    let recs = records(&buf);
    assert_eq!(recs[0].1[2], 0, "no KEEP_CONN");
    assert_eq!(
        recs.iter().map(|r| (r.0, r.1.len())).collect::<Vec<_>>(),
        [(BEGIN_REQUEST, 8), (PARAMS, 0), (STDIN, 0)]
    );
}
