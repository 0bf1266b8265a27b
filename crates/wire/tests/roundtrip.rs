//! The writers and the parsers of this crate against each other: what flint's client writes,
//! flint's server must parse, and what the server writes, the client must frame exactly.

use wire::head::{write_header, write_header_u64, write_request, write_status_line};
use wire::{
    parse_request, parse_response_head, BodyDecoder, DateCache, Framing, Method, RequestLimits,
    Version,
};

#[test]
fn written_requests_parse_back() {
    let limits = RequestLimits::default();
    let mut out = Vec::new();
    for (method, parsed) in [
        ("GET", Method::Get),
        ("HEAD", Method::Head),
        ("DELETE", Method::Other),
    ] {
        for v in [Version::Http10, Version::Http11] {
            for keep_alive in [true, false] {
                out.clear();
                write_request(
                    &mut out,
                    method,
                    "/dir/file%201.html",
                    "localhost:8080",
                    v,
                    keep_alive,
                );
                let r = parse_request(&out, &limits).unwrap().expect("complete");
                assert_eq!(r.method, parsed);
                assert_eq!(r.target, b"/dir/file%201.html");
                assert_eq!(r.version, v);
                assert_eq!(r.host, Some(&b"localhost:8080"[..]));
                assert_eq!(r.user_agent, Some(&b"flint"[..]));
                assert_eq!(r.head_len, out.len());
                // HTTP/1.0 requests are written without keep-alive, so they close.
                assert_eq!(r.keep_alive, keep_alive && v == Version::Http11);
            }
        }
    }
}

#[test]
fn pipelined_written_requests_parse_one_after_another() {
    let limits = RequestLimits::default();
    let mut out = Vec::new();
    for i in 0..16 {
        write_request(
            &mut out,
            "GET",
            &format!("/f{i}"),
            "h",
            Version::Http11,
            true,
        );
    }
    let mut rest = &out[..];
    for i in 0..16 {
        let r = parse_request(rest, &limits).unwrap().expect("complete");
        assert_eq!(r.target, format!("/f{i}").as_bytes());
        rest = &rest[r.head_len..];
    }
    assert!(rest.is_empty());
    assert_eq!(parse_request(rest, &limits), Ok(None));
}

/// A server-style response: status line, Date, Content-Length or chunked, body.
fn write_response(out: &mut Vec<u8>, date: &mut DateCache, body: &[u8], chunked: bool) {
    write_status_line(out, Version::Http11, 200);
    write_header(out, b"Date", date.get());
    if chunked {
        write_header(out, b"Transfer-Encoding", b"chunked");
        out.extend_from_slice(b"\r\n");
        for piece in body.chunks(7) {
            out.extend_from_slice(format!("{:x}\r\n", piece.len()).as_bytes());
            out.extend_from_slice(piece);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
    } else {
        write_header_u64(out, b"Content-Length", body.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(body);
    }
}

#[test]
fn pipelined_responses_are_framed_exactly() {
    let mut date = DateCache::new();
    let mut out = Vec::new();
    let bodies: Vec<Vec<u8>> = (0..8).map(|i| vec![b'a' + i as u8; i * 13]).collect();
    for (i, body) in bodies.iter().enumerate() {
        write_response(&mut out, &mut date, body, i % 2 == 1);
    }
    let mut rest = &out[..];
    for (i, body) in bodies.iter().enumerate() {
        let h = parse_response_head(rest, false)
            .unwrap()
            .expect("complete head");
        assert_eq!(h.status, 200);
        assert!(h.keep_alive);
        let expect = if i % 2 == 1 {
            Framing::Chunked
        } else {
            Framing::Length(body.len() as u64)
        };
        assert_eq!(h.framing, expect);
        rest = &rest[h.head_len..];
        let mut d = BodyDecoder::new(h.framing);
        let p = d.feed(rest).unwrap();
        assert!(p.done, "response {i} incomplete");
        assert_eq!(p.body, body.len(), "response {i}");
        rest = &rest[p.consumed..];
    }
    assert!(rest.is_empty(), "{} bytes left over", rest.len());
}

#[test]
fn pipelined_responses_survive_every_split_point() {
    let mut date = DateCache::new();
    let mut out = Vec::new();
    write_response(&mut out, &mut date, b"first body, chunked", true);
    write_response(&mut out, &mut date, b"second", false);
    // Simulate a client reading into one buffer in two reads split at `at`.
    for at in 0..=out.len() {
        let mut buf: Vec<u8> = out[..at].to_vec();
        let mut pending = &out[at..];
        let mut bodies = Vec::new();
        let mut pos = 0;
        let mut decoder: Option<BodyDecoder> = None;
        let mut body_len = 0;
        loop {
            let progressed = match decoder.as_mut() {
                None => match parse_response_head(&buf[pos..], false).unwrap() {
                    Some(h) => {
                        pos += h.head_len;
                        decoder = Some(BodyDecoder::new(h.framing));
                        true
                    }
                    None => false,
                },
                Some(d) => {
                    let p = d.feed(&buf[pos..]).unwrap();
                    pos += p.consumed;
                    body_len += p.body;
                    if p.done {
                        bodies.push(body_len);
                        body_len = 0;
                        decoder = None;
                    }
                    p.done || p.consumed > 0
                }
            };
            if !progressed {
                if pending.is_empty() {
                    break;
                }
                buf.extend_from_slice(pending);
                pending = &[];
            }
        }
        assert_eq!(bodies, vec![19, 6], "split at {at}");
        assert_eq!(pos, out.len(), "split at {at}");
    }
}

/// Every single-byte corruption of valid heads and bodies, and random bytes: errors are values,
/// never panics (the parsers face whatever a peer sends).
#[test]
fn corrupted_input_is_an_error_never_a_panic() {
    let limits = RequestLimits::default();
    let request = b"GET /x HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nConnection: close\r\n\r\n";
    let response = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1a;x=y\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nT: v\r\n\r\n";
    let replacements = [
        0u8, b'\r', b'\n', b' ', b':', b';', b',', b'0', b'f', b'z', 0x7f, 0xff,
    ];
    for at in 0..response.len() {
        for &r in &replacements {
            let mut req = request.to_vec();
            if at < req.len() {
                req[at] = r;
                let _ = parse_request(&req, &limits);
            }
            let mut resp = response.to_vec();
            resp[at] = r;
            if let Ok(Some(h)) = parse_response_head(&resp, false) {
                let mut d = BodyDecoder::new(h.framing);
                if let Ok(p) = d.feed(&resp[h.head_len..]) {
                    assert!(h.head_len + p.consumed <= resp.len());
                }
                let _ = d.eof();
            }
        }
    }
    // A small xorshift: deterministic, no dependency.
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut buf = [0u8; 256];
    for _ in 0..2000 {
        for b in buf.iter_mut() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        let len = (x % 257) as usize;
        let _ = parse_request(&buf[..len], &limits);
        let _ = parse_response_head(&buf[..len], false);
        let mut d = BodyDecoder::new(Framing::Chunked);
        let _ = d.feed(&buf[..len]);
    }
}
