use super::*;

fn head(buf: &[u8]) -> ResponseHead {
    parse_response_head(buf, false)
        .expect("parse error")
        .expect("incomplete")
}

fn head_err(buf: &[u8]) -> ResponseError {
    parse_response_head(buf, false).expect_err("expected an error")
}

/// Feeds `input` in pieces split at `splits`, returning (consumed, body, done) totals.
fn feed_split(framing: Framing, input: &[u8], splits: &[usize]) -> (usize, usize, bool) {
    let mut d = BodyDecoder::new(framing);
    let (mut consumed, mut body) = (0, 0);
    let mut start = 0;
    for &end in splits.iter().chain([input.len()].iter()) {
        let mut piece = &input[start..end];
        // A caller re-feeds what was not consumed together with new bytes; with these
        // well-formed inputs everything up to the end of the body is consumed at once.
        while !piece.is_empty() {
            let p = d.feed(piece).expect("feed error");
            consumed += p.consumed;
            body += p.body;
            if p.done || p.consumed == 0 {
                break;
            }
            piece = &piece[p.consumed..];
        }
        start = end;
        if d.is_done() {
            break;
        }
    }
    (consumed, body, d.is_done())
}

#[test]
fn content_length_response_is_length_framed_and_keep_alive() {
    let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 1024\r\n\r\n";
    let h = head(buf);
    assert_eq!(h.status, 200);
    assert_eq!(h.version, 1);
    assert_eq!(h.head_len, buf.len());
    assert_eq!(h.framing, Framing::Length(1024));
    assert!(h.keep_alive);
}

#[test]
fn bodiless_responses_are_empty_whatever_the_headers_say() {
    for status in [
        "100 Continue",
        "101 Switching",
        "204 No Content",
        "304 Not Modified",
    ] {
        let buf = format!("HTTP/1.1 {status}\r\nContent-Length: 10\r\n\r\n");
        let h = head(buf.as_bytes());
        assert_eq!(h.framing, Framing::Empty, "{status}");
        assert!(h.keep_alive);
    }
    let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n";
    let h = parse_response_head(buf, true).unwrap().unwrap();
    assert_eq!(h.framing, Framing::Empty);
    let buf = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    let h = parse_response_head(buf, true).unwrap().unwrap();
    assert_eq!(h.framing, Framing::Empty);
}

#[test]
fn chunked_takes_precedence_over_content_length() {
    let h = head(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n");
    assert_eq!(h.framing, Framing::Chunked);
    // Both framings: used, but the connection is not trusted for another response.
    assert!(!h.keep_alive);
    let h = head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, CHUNKED\r\n\r\n");
    assert_eq!(h.framing, Framing::Chunked);
    assert!(h.keep_alive);
}

#[test]
fn transfer_encoding_not_ending_in_chunked_is_close_delimited() {
    let h = head(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n");
    assert_eq!(h.framing, Framing::Close);
    assert!(!h.keep_alive);
    let h =
        head(b"HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(h.framing, Framing::Close);
    assert!(!h.keep_alive);
}

#[test]
fn no_length_means_close_delimited_and_never_keep_alive() {
    let h = head(b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\n\r\n");
    assert_eq!(h.framing, Framing::Close);
    assert!(!h.keep_alive);
}

#[test]
fn keep_alive_follows_version_and_connection_header() {
    let cases: [(&[u8], bool); 5] = [
        (b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n", false),
        (
            b"HTTP/1.0 200 OK\r\nContent-Length: 1\r\nConnection: Keep-Alive\r\n\r\n",
            true,
        ),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\n", true),
        (
            b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nConnection: Close\r\n\r\n",
            false,
        ),
        (
            b"HTTP/1.1 304 Not Modified\r\nConnection: upgrade, close\r\n\r\n",
            false,
        ),
    ];
    for (buf, keep_alive) in cases {
        assert_eq!(
            head(buf).keep_alive,
            keep_alive,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn response_content_length_is_validated() {
    for cl in ["+5", "-1", " 5x", "", "5, 6"] {
        let buf = format!("HTTP/1.1 200 OK\r\nContent-Length: {cl}\r\n\r\n");
        assert_eq!(
            head_err(buf.as_bytes()),
            ResponseError::BadContentLength,
            "{cl:?}"
        );
    }
    let differing = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
    assert_eq!(head_err(differing), ResponseError::BadContentLength);
    let same = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\ncontent-length: 5\r\n\r\n";
    assert_eq!(head(same).framing, Framing::Length(5));
}

#[test]
fn bad_status_lines_are_malformed_status_line() {
    for buf in [
        &b"HTTP/1.1 2x0 OK\r\n\r\n"[..],
        b"HTTP/1.1 20 OK\r\n\r\n",
        b"HTTP/2.0 200 OK\r\n\r\n",
        b"HTP/1.1 200 OK\r\n\r\n",
        b"HTTP/1.1200 OK\r\n\r\n",
        b"<html>\r\n",
        b"HTTP/1.1 200 O\x01K\r\n\r\n",
    ] {
        assert_eq!(
            head_err(buf),
            ResponseError::MalformedStatusLine,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn bad_header_lines_are_malformed_headers() {
    for buf in [
        &b"HTTP/1.1 200 OK\r\nBad Name: x\r\n\r\n"[..],
        b"HTTP/1.1 200 OK\r\n: x\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nNoColon\r\n\r\n",
        b"HTTP/1.1 200\r\n(x): y\r\n\r\n",
    ] {
        assert_eq!(
            head_err(buf),
            ResponseError::MalformedHeaders,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn every_prefix_of_a_response_head_is_incomplete() {
    let buf = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\n";
    for end in 0..buf.len() {
        assert_eq!(parse_response_head(&buf[..end], false), Ok(None), "{end}");
    }
}

#[test]
fn huge_incomplete_head_is_too_large() {
    let mut buf = b"HTTP/1.1 200 OK\r\nX-Pad: ".to_vec();
    buf.resize(MAX_RESPONSE_HEAD - 1, b'p');
    assert_eq!(parse_response_head(&buf, false), Ok(None));
    buf.push(b'p');
    assert_eq!(
        parse_response_head(&buf, false),
        Err(ResponseError::TooLarge)
    );
    let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
    for _ in 0..=MAX_RESPONSE_HEADERS {
        many.extend_from_slice(b"X: y\r\n");
    }
    many.extend_from_slice(b"\r\n");
    assert_eq!(
        parse_response_head(&many, false),
        Err(ResponseError::TooLarge)
    );
}

#[test]
fn length_body_stops_at_its_end() {
    let mut d = BodyDecoder::new(Framing::Length(5));
    let p = d.feed(b"hel").unwrap();
    assert_eq!((p.consumed, p.body, p.done), (3, 3, false));
    assert_eq!(d.eof(), Err(ResponseError::ShortBody));
    let p = d.feed(b"loHTTP/1.1").unwrap();
    assert_eq!((p.consumed, p.body, p.done), (2, 2, true));
    assert_eq!(d.feed(b"more").unwrap().consumed, 0);
    assert_eq!(d.eof(), Ok(()));
}

#[test]
fn empty_and_zero_length_bodies_are_done_at_once() {
    for framing in [Framing::Empty, Framing::Length(0)] {
        let mut d = BodyDecoder::new(framing);
        assert!(d.is_done());
        let p = d.feed(b"HTTP/1.1 200 OK").unwrap();
        assert_eq!((p.consumed, p.body, p.done), (0, 0, true));
        let p = d.feed(b"").unwrap();
        assert!(p.done);
    }
}

#[test]
fn close_delimited_body_takes_everything_until_eof() {
    let mut d = BodyDecoder::new(Framing::Close);
    let p = d.feed(b"abc").unwrap();
    assert_eq!((p.consumed, p.body, p.done), (3, 3, false));
    assert_eq!(d.eof(), Ok(()));
}

const CHUNKED: &[u8] =
    b"4\r\nWiki\r\n1a;foo=bar\r\nabcdefghijklmnopqrstuvwxyz\r\nA ; x\r\n0123456789\r\n\
0\r\nExpires: never\r\nX: y\r\n\r\n";
const CHUNKED_BODY: usize = 4 + 26 + 10;

#[test]
fn chunked_body_in_one_piece() {
    assert_eq!(
        feed_split(Framing::Chunked, CHUNKED, &[]),
        (CHUNKED.len(), CHUNKED_BODY, true)
    );
}

#[test]
fn chunked_body_split_at_every_offset() {
    for at in 0..=CHUNKED.len() {
        let got = feed_split(Framing::Chunked, CHUNKED, &[at]);
        assert_eq!(got, (CHUNKED.len(), CHUNKED_BODY, true), "split at {at}");
    }
}

#[test]
fn chunked_body_fed_byte_by_byte() {
    let mut d = BodyDecoder::new(Framing::Chunked);
    let mut body = 0;
    for (i, b) in CHUNKED.iter().enumerate() {
        let p = d.feed(std::slice::from_ref(b)).unwrap();
        assert_eq!(p.consumed, 1);
        body += p.body;
        assert_eq!(
            p.done,
            i == CHUNKED.len() - 1,
            "done only after the final CRLF ({i})"
        );
    }
    assert_eq!(body, CHUNKED_BODY);
}

#[test]
fn chunked_body_does_not_consume_next_response() {
    let mut input = b"3\r\nabc\r\n0\r\n\r\n".to_vec();
    let end = input.len();
    input.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    let mut d = BodyDecoder::new(Framing::Chunked);
    let p = d.feed(&input).unwrap();
    assert_eq!((p.consumed, p.body, p.done), (end, 3, true));
    assert_eq!(d.feed(&input[end..]).unwrap().consumed, 0);
}

#[test]
fn chunk_sizes_accept_upper_and_lower_hex() {
    let input = b"aB\r\n";
    let mut d = BodyDecoder::new(Framing::Chunked);
    d.feed(input).unwrap();
    let payload = vec![b'x'; 0xab];
    let p = d.feed(&payload).unwrap();
    assert_eq!((p.body, p.done), (0xab, false));
    assert!(d.feed(b"\r\n0\r\n\r\n").unwrap().done);
}

#[test]
fn chunk_size_overflow_is_bad_chunk() {
    let mut d = BodyDecoder::new(Framing::Chunked);
    assert_eq!(
        d.feed(b"10000000000000000\r\n"),
        Err(ResponseError::BadChunk)
    );
    // Sixteen digits still fit, and leading zeros do not count.
    let mut d = BodyDecoder::new(Framing::Chunked);
    assert!(d.feed(b"ffffffffffffffff\r\n").is_ok());
    let mut d = BodyDecoder::new(Framing::Chunked);
    assert!(
        d.feed(b"00000000000000000001\r\nx\r\n0\r\n\r\n")
            .unwrap()
            .done
    );
}

#[test]
fn malformed_chunk_framing_is_bad_chunk() {
    for input in [
        &b"\r\n"[..],
        b"x\r\n",
        b";ext\r\n",
        b"3\nabc\r\n",
        b"3\r\nabcd\r\n",
        b"3\r\nabc\n0\r\n\r\n",
        b"3 x\r\n",
        b"3;a\x01b\r\n",
        b"0\r\nX: y\n\r\n",
        b"0\r\n\n",
    ] {
        let mut d = BodyDecoder::new(Framing::Chunked);
        assert_eq!(d.feed(input), Err(ResponseError::BadChunk), "{input:?}");
    }
}

#[test]
fn endless_chunk_extension_is_refused() {
    let mut d = BodyDecoder::new(Framing::Chunked);
    let mut input = b"1;".to_vec();
    input.resize(10_000, b'a');
    assert_eq!(d.feed(&input), Err(ResponseError::BadChunk));
}

#[test]
fn eof_before_the_end_of_a_chunked_body_is_a_short_body() {
    let mut d = BodyDecoder::new(Framing::Chunked);
    d.feed(b"3\r\nabc\r\n0\r\n").unwrap();
    assert_eq!(d.eof(), Err(ResponseError::ShortBody));
    d.feed(b"\r\n").unwrap();
    assert_eq!(d.eof(), Ok(()));
}

/// Found by fuzzing: httparse takes any three digits, and a status of 000 would pass for "no
/// status" in the client's bookkeeping.
#[test]
fn a_status_below_100_is_a_malformed_status_line() {
    for raw in [
        &b"HTTP/1.1 000 OK\r\nContent-Length: 2\r\n\r\nhi"[..],
        b"HTTP/1.1 099 X\r\n\r\n",
        b"HTTP/1.1 000 OK\r\nbad header\r\n\r\n",
    ] {
        assert_eq!(
            parse_response_head(raw, false),
            Err(ResponseError::MalformedStatusLine),
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
    let h = parse_response_head(b"HTTP/1.1 999 Later\r\nContent-Length: 0\r\n\r\n", false)
        .unwrap()
        .unwrap();
    assert_eq!(h.status, 999, "600 to 999 are still read");
}

/// Found by fuzzing: a stray CR before a status line was blamed on the headers when the whole
/// head had arrived, and on the status line when only its start had.
#[test]
fn a_stray_cr_before_the_status_line_is_blamed_on_the_status_line() {
    let raw = b"\rHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz";
    for n in 2..=raw.len() {
        assert_eq!(
            parse_response_head(&raw[..n], false),
            Err(ResponseError::MalformedStatusLine),
            "first {n} bytes"
        );
    }
    let ok = head(b"\r\n\nHTTP/1.1 204 No Content\r\n\r\n");
    assert_eq!(ok.status, 204, "whole empty lines are skipped");
}

#[test]
fn feed_payload_hands_out_the_decoded_body_however_the_input_is_split() {
    let input = b"3;ext=1\r\nabc\r\n4\r\ndefg\r\n0\r\nX-Trailer: t\r\n\r\nNEXT";
    for split in 1..input.len() {
        let mut d = BodyDecoder::new(Framing::Chunked);
        let mut payload = Vec::new();
        let first = d
            .feed_payload(&input[..split], |run| payload.extend_from_slice(run))
            .unwrap();
        let rest = &input[first.consumed..];
        let second = d
            .feed_payload(rest, |run| payload.extend_from_slice(run))
            .unwrap();
        assert_eq!(payload, b"abcdefg", "split at {split}");
        assert_eq!(first.body + second.body, 7);
        assert!(second.done);
        assert_eq!(&rest[second.consumed..], b"NEXT");
    }
}
