use super::*;

fn parse(buf: &[u8]) -> Result<Option<Request<'_>>, RequestError> {
    parse_request(buf, &RequestLimits::default())
}

fn ok(buf: &[u8]) -> Request<'_> {
    parse(buf).expect("parse error").expect("incomplete")
}

fn err(buf: &[u8]) -> RequestError {
    parse(buf).expect_err("expected an error")
}

#[test]
fn simple_get_is_parsed_with_borrowed_fields() {
    let buf = b"GET /a/b.html?x=1 HTTP/1.1\r\nHost: example\r\nUser-Agent: t\r\n\r\n";
    let r = ok(buf);
    assert_eq!(r.method, Method::Get);
    assert_eq!(r.target, b"/a/b.html?x=1");
    assert_eq!(r.version, Version::Http11);
    assert!(r.keep_alive);
    assert_eq!(r.host, Some(&b"example"[..]));
    assert_eq!(r.user_agent, Some(&b"t"[..]));
    assert_eq!(r.content_length, None);
    assert!(!r.chunked);
    assert_eq!(r.head_len, buf.len());
}

#[test]
fn header_names_match_case_insensitively() {
    let buf = b"HEAD / HTTP/1.1\r\nHOST: h\r\nif-none-match: \"e\"\r\nIf-Modified-Since: d\r\n\
RANGE: bytes=0-1\r\nIf-Range: \"e\"\r\naccept-ENCODING: gzip\r\nReferer: r\r\nX-Other: o\r\n\r\n";
    let r = ok(buf);
    assert_eq!(r.method, Method::Head);
    assert_eq!(r.host, Some(&b"h"[..]));
    assert_eq!(r.if_none_match.iter().collect::<Vec<_>>(), [&b"\"e\""[..]]);
    assert_eq!(r.if_modified_since, Some(&b"d"[..]));
    assert_eq!(r.range, Some(&b"bytes=0-1"[..]));
    assert_eq!(r.if_range, Some(&b"\"e\""[..]));
    assert_eq!(r.accept_encoding, Some(&b"gzip"[..]));
    assert_eq!(r.referer, Some(&b"r"[..]));
}

#[test]
fn other_methods_are_other() {
    assert_eq!(
        ok(b"POST / HTTP/1.1\r\nHost: h\r\n\r\n").method,
        Method::Other
    );
    assert_eq!(
        ok(b"get / HTTP/1.1\r\nHost: h\r\n\r\n").method,
        Method::Other
    );
}

#[test]
fn every_prefix_of_a_head_is_incomplete() {
    let buf = b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n";
    for end in 0..buf.len() {
        assert_eq!(parse(&buf[..end]), Ok(None), "prefix of {end} bytes");
    }
    assert!(ok(buf).head_len == buf.len());
}

#[test]
fn pipelined_requests_parse_back_to_back() {
    let buf = b"GET /1 HTTP/1.1\r\nHost: h\r\n\r\nGET /2 HTTP/1.1\r\nHost: h\r\n\r\nGET /3 HT";
    let first = ok(buf);
    assert_eq!(first.target, b"/1");
    let rest = &buf[first.head_len..];
    let second = ok(rest);
    assert_eq!(second.target, b"/2");
    assert_eq!(parse(&rest[second.head_len..]), Ok(None));
}

#[test]
fn leading_empty_lines_are_skipped() {
    let buf = b"\r\nGET / HTTP/1.1\r\nHost: h\r\n\r\n";
    assert_eq!(ok(buf).head_len, buf.len());
}

#[test]
fn keep_alive_follows_version_and_connection_header() {
    let cases: [(&[u8], bool); 8] = [
        (b"GET / HTTP/1.0\r\n\r\n", false),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true),
        (b"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true),
        (b"GET / HTTP/1.1\r\nHost: h\r\n\r\n", true),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
            false,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: TE, CLOSE\r\n\r\n",
            false,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n",
            false,
        ),
        (
            b"GET / HTTP/1.1\r\nHost: h\r\nConnection: closed\r\n\r\n",
            true,
        ),
    ];
    for (buf, keep_alive) in cases {
        assert_eq!(
            ok(buf).keep_alive,
            keep_alive,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn request_line_over_limit_is_414_even_while_incomplete() {
    let limits = RequestLimits {
        max_request_line: 32,
        ..RequestLimits::default()
    };
    let mut long = b"GET /".to_vec();
    long.resize(40, b'a');
    assert_eq!(parse_request(&long, &limits), Err(RequestError::UriTooLong));
    // Complete, too.
    long.extend_from_slice(b" HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(parse_request(&long, &limits), Err(RequestError::UriTooLong));
}

#[test]
fn request_line_exactly_at_limit_is_accepted() {
    let line = b"GET /abcdefghijklmnopq HTTP/1.1";
    let limits = RequestLimits {
        max_request_line: line.len(),
        ..RequestLimits::default()
    };
    let mut buf = line.to_vec();
    // Incomplete at every length up to and including the CR: not yet too long.
    for end in 0..=line.len() {
        assert_eq!(parse_request(&buf[..end], &limits), Ok(None), "{end}");
    }
    buf.push(b'\r');
    assert_eq!(parse_request(&buf, &limits), Ok(None), "line + CR");
    buf.pop();
    buf.extend_from_slice(b"\r\nHost: h\r\n\r\n");
    assert!(parse_request(&buf, &limits).unwrap().is_some());
    let tighter = RequestLimits {
        max_request_line: line.len() - 1,
        ..limits
    };
    assert_eq!(parse_request(&buf, &tighter), Err(RequestError::UriTooLong));
    assert_eq!(
        parse_request(&buf[..line.len()], &tighter),
        Err(RequestError::UriTooLong)
    );
}

#[test]
fn head_over_limit_is_431_while_incomplete_and_when_complete() {
    let limits = RequestLimits {
        max_head_bytes: 64,
        ..RequestLimits::default()
    };
    let mut buf = b"GET / HTTP/1.1\r\nHost: h\r\nX-Pad: ".to_vec();
    buf.resize(64, b'p');
    assert_eq!(
        parse_request(&buf, &limits),
        Err(RequestError::HeadersTooLarge)
    );
    assert_eq!(parse_request(&buf[..63], &limits), Ok(None));
    buf.extend_from_slice(b"\r\n\r\n");
    assert_eq!(
        parse_request(&buf, &limits),
        Err(RequestError::HeadersTooLarge)
    );
}

#[test]
fn endless_empty_lines_hit_the_head_limit() {
    let limits = RequestLimits {
        max_head_bytes: 64,
        ..RequestLimits::default()
    };
    let buf = b"\r\n".repeat(40);
    assert_eq!(
        parse_request(&buf, &limits),
        Err(RequestError::HeadersTooLarge)
    );
}

#[test]
fn too_many_headers_is_431() {
    let limits = RequestLimits {
        max_headers: 3,
        ..RequestLimits::default()
    };
    let three = b"GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\n\r\n";
    assert!(parse_request(three, &limits).unwrap().is_some());
    let four = b"GET / HTTP/1.1\r\nHost: h\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
    assert_eq!(
        parse_request(four, &limits),
        Err(RequestError::TooManyHeaders)
    );
    assert_eq!(RequestError::TooManyHeaders.status(), 431);
}

#[test]
fn malformed_requests_are_400() {
    for buf in [
        &b"GET  / HTTP/1.1\r\n\r\n"[..],
        b"G(T / HTTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        b"GET / HTTP/1.1\r\n: x\r\n\r\n",
        b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
        b"GET / FTP/1.1\r\n\r\n",
        b"GET / HTTP/1.1 \r\n\r\n",
    ] {
        let e = err(buf);
        assert_eq!(
            e,
            RequestError::Malformed,
            "{}",
            String::from_utf8_lossy(buf)
        );
        assert_eq!(e.status(), 400);
    }
}

#[test]
fn other_major_versions_are_505() {
    for buf in [
        &b"GET / HTTP/2.0\r\n\r\n"[..],
        b"GET / HTTP/0.9\r\nHost: h\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
        b"\r\nGET / HTTP/3.0\r\n\r\n",
    ] {
        assert_eq!(
            err(buf),
            RequestError::VersionNotSupported,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
    assert_eq!(RequestError::VersionNotSupported.status(), 505);
}

#[test]
fn later_minor_versions_are_answered_as_http_1_1() {
    for minor in 2..=9 {
        let buf = format!(
            "GET /a?b HTTP/1.{minor}\r\nHost: h\r\nIf-None-Match: \"x\"\r\nConnection: close\r\n\r\nGET"
        );
        let r = ok(buf.as_bytes());
        assert_eq!(r.version, Version::Http11, "HTTP/1.{minor}");
        assert_eq!((r.method, r.target), (Method::Get, &b"/a?b"[..]));
        assert_eq!(r.host, Some(&b"h"[..]));
        assert!(!r.keep_alive);
        assert_eq!(r.if_none_match.iter().count(), 1);
        assert_eq!(
            r.head_len,
            buf.len() - 3,
            "the next request starts after the head"
        );
    }
    let r = ok(b"\r\nHEAD / HTTP/1.5\nHost: h\n\n");
    assert_eq!(
        (r.method, r.version, r.keep_alive),
        (Method::Head, Version::Http11, true)
    );
    // Their heads obey the same rules as any other.
    assert_eq!(
        err(b"GET / HTTP/1.2\r\nHost: a\r\nHost: b\r\n\r\n"),
        RequestError::BadHost
    );
    assert_eq!(
        err(b"GET / HTTP/1.2\r\nBad Name: x\r\n\r\n"),
        RequestError::Malformed
    );
    let limits = RequestLimits {
        max_headers: 1,
        ..RequestLimits::default()
    };
    assert_eq!(
        parse_request(b"GET / HTTP/1.2\r\nA: 1\r\nB: 2\r\n\r\n", &limits),
        Err(RequestError::TooManyHeaders)
    );
}

#[test]
fn every_prefix_of_a_later_minor_head_is_incomplete() {
    let buf = b"GET /x HTTP/1.7\r\nHost: h\r\nConnection: close\r\n\r\n";
    for end in 0..buf.len() {
        assert_eq!(parse(&buf[..end]), Ok(None), "prefix of {end} bytes");
    }
    assert_eq!(ok(buf).head_len, buf.len());
}

#[test]
fn a_space_inside_the_target_is_400_not_505() {
    for buf in [
        &b"GET /a b HTTP/1.1\r\nHost: h\r\n\r\n"[..],
        b"GET /a b c HTTP/1.1\r\n\r\n",
        b"GET /a HTTP/1.1 HTTP/1.1\r\n\r\n",
        b"GET /a b HTTP/2.0\r\n\r\n",
        // Not finished, but already wrong.
        b"GET /a b HTTP/1.1",
        b"GET / XTTP",
        b"GET / HTTP/1.12",
        b"GET / HTTP/1.x\r\n\r\n",
        b"GET / HTTP/12.0\r\n\r\n",
    ] {
        assert_eq!(
            err(buf),
            RequestError::Malformed,
            "{}",
            String::from_utf8_lossy(buf)
        );
    }
}

#[test]
fn host_is_validated() {
    for host in [
        "example.com",
        "example.com:8080",
        "127.0.0.1:80",
        "[::1]:8080",
    ] {
        let buf = format!("GET / HTTP/1.1\r\nHost: {host}\r\n\r\n");
        assert_eq!(ok(buf.as_bytes()).host, Some(host.as_bytes()));
    }
    for host in ["a b", "a/b", "../x", "", "a..b", "[::1"] {
        for version in ["1.0", "1.1"] {
            let buf = format!("GET / HTTP/{version}\r\nHost: {host}\r\n\r\n");
            let e = err(buf.as_bytes());
            assert_eq!(e, RequestError::BadHost, "{buf:?}");
            assert_eq!(e.status(), 400);
        }
    }
}

#[test]
fn duplicate_host_is_rejected() {
    assert_eq!(
        err(b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n"),
        RequestError::BadHost
    );
    assert_eq!(
        err(b"GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n"),
        RequestError::BadHost
    );
}

#[test]
fn list_fields_keep_every_line_and_scalar_preconditions_are_kept() {
    let r = ok(
        b"GET / HTTP/1.1\r\nHost: h\r\nIf-None-Match: \"a\"\r\nIf-Match: *\r\n\
if-none-match: \"b\", \"c\"\r\nIf-Unmodified-Since: d\r\n\r\n",
    );
    assert_eq!(
        r.if_none_match.iter().collect::<Vec<_>>(),
        [&b"\"a\""[..], b"\"b\", \"c\""]
    );
    assert_eq!(r.if_match.iter().collect::<Vec<_>>(), [&b"*"[..]]);
    assert_eq!(r.if_unmodified_since, Some(&b"d"[..]));
    let plain = ok(b"GET / HTTP/1.1\r\nHost: h\r\n\r\n");
    assert!(plain.if_match.is_empty() && plain.if_none_match.is_empty());
    let mut many = String::from("GET / HTTP/1.1\r\nHost: h\r\n");
    for i in 0..MAX_FIELD_LINES {
        many.push_str(&format!("If-None-Match: \"{i}\"\r\n"));
    }
    assert_eq!(
        ok(format!("{many}\r\n").as_bytes())
            .if_none_match
            .iter()
            .count(),
        MAX_FIELD_LINES
    );
    let e = err(format!("{many}If-None-Match: \"x\"\r\n\r\n").as_bytes());
    assert_eq!((e, e.status()), (RequestError::TooManyFieldLines, 400));
}

#[test]
fn content_length_is_parsed() {
    let r = ok(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 42\r\n\r\n");
    assert_eq!(r.content_length, Some(42));
}

#[test]
fn content_length_with_plus_sign_is_rejected() {
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nContent-Length: +5\r\n\r\n"),
        RequestError::BadContentLength
    );
    assert_eq!(RequestError::BadContentLength.status(), 400);
}

#[test]
fn content_length_that_is_not_all_digits_is_rejected() {
    for value in [
        &b"-1"[..],
        b" 5x",
        b"",
        b"5 5",
        b"0x5",
        b"1e3",
        b"99999999999999999999",
    ] {
        let mut buf = b"POST / HTTP/1.1\r\nContent-Length: ".to_vec();
        buf.extend_from_slice(value);
        buf.extend_from_slice(b"\r\n\r\n");
        assert_eq!(err(&buf), RequestError::BadContentLength, "{value:?}");
    }
}

#[test]
fn repeated_or_listed_content_length_is_refused_even_when_it_agrees() {
    // RFC 9110 8.6 lets a recipient take `5, 5` or two lines of 5 as one length; a proxy that
    // passes the request on is safer refusing them, as nginx does (400).
    for head in [
        &b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n",
        b"POST / HTTP/1.1\r\nContent-Length: 5,5\r\n\r\n",
    ] {
        let e = err(head);
        assert_eq!((e, e.status()), (RequestError::BadContentLength, 400));
    }
    let differing = b"POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n";
    assert_eq!(err(differing), RequestError::BadContentLength);
    assert_eq!(
        err(b"POST / HTTP/1.1\r\nContent-Length: 5, 6\r\n\r\n"),
        RequestError::BadContentLength
    );
}

#[test]
fn an_absolute_form_target_gives_its_path_and_its_host() {
    let r = ok(b"GET http://admin.internal/api/abs?x=1 HTTP/1.1\r\nHost: public.example\r\n\r\n");
    assert_eq!(
        (r.target, r.host),
        (&b"/api/abs?x=1"[..], Some(&b"admin.internal"[..]))
    );
    let r = ok(b"GET HTTPS://h.example:8443 HTTP/1.1\r\nHost: h\r\n\r\n");
    assert_eq!(
        (r.target, r.host),
        (&b"/"[..], Some(&b"h.example:8443"[..]))
    );
    let r = ok(b"GET http://h/ HTTP/1.0\r\n\r\n");
    assert_eq!((r.target, r.host), (&b"/"[..], Some(&b"h"[..])));
    // Origin-form and other forms are left as they are.
    assert_eq!(
        ok(b"GET /http://x/ HTTP/1.1\r\nHost: h\r\n\r\n").target,
        b"/http://x/"
    );
    assert_eq!(ok(b"OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n").target, b"*");
    for (head, want) in [
        (
            &b"GET http://u@h/x HTTP/1.1\r\nHost: h\r\n\r\n"[..],
            RequestError::BadHost,
        ),
        (
            b"GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n",
            RequestError::BadHost,
        ),
        (
            b"GET http://a%0d%0aX:y/x HTTP/1.1\r\nHost: h\r\n\r\n",
            RequestError::BadHost,
        ),
        (
            b"GET http://h?q HTTP/1.1\r\nHost: h\r\n\r\n",
            RequestError::Malformed,
        ),
    ] {
        assert_eq!(err(head), want, "{}", String::from_utf8_lossy(head));
    }
}

/// RFC 9112 3.2: an HTTP/1.1 request with no Host is a 400, an absolute-form one too (its
/// target names a host, but the field must still be there); HTTP/1.0 needs none.
#[test]
fn an_http_1_1_absolute_form_request_without_host_is_400() {
    for head in [
        &b"GET http://h/x HTTP/1.1\r\n\r\n"[..],
        b"GET http://h HTTP/1.1\r\nUser-Agent: a\r\n\r\n",
    ] {
        let e = err(head);
        assert_eq!((e, e.status()), (RequestError::BadHost, 400));
    }
    assert_eq!(ok(b"GET http://h/x HTTP/1.0\r\n\r\n").host, Some(&b"h"[..]));
}

#[test]
fn a_second_authorization_field_is_400() {
    let one = b"GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YTpi\r\n\r\n";
    assert_eq!(ok(one).authorization, Some(&b"Basic YTpi"[..]));
    for second in ["Authorization: Basic Yzpk", "authorization: Basic YTpi"] {
        let head =
            format!("GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Basic YTpi\r\n{second}\r\n\r\n");
        let e = err(head.as_bytes());
        assert_eq!((e, e.status()), (RequestError::RepeatedAuthorization, 400));
    }
}

#[test]
fn content_length_and_transfer_encoding_is_ambiguous() {
    for buf in [
        &b"POST / HTTP/1.1\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"[..],
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n",
    ] {
        let e = err(buf);
        assert_eq!(e, RequestError::AmbiguousFraming);
        assert_eq!(e.status(), 400);
    }
}

#[test]
fn chunked_transfer_encoding_is_accepted_case_insensitively() {
    let r = ok(b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n");
    assert!(r.chunked);
    assert_eq!(r.content_length, None);
}

#[test]
fn transfer_encoding_other_than_chunked_is_501() {
    for te in [
        &b"gzip"[..],
        b"gzip, chunked",
        b"chunked, gzip",
        b"chunked, chunked",
        b"chunkedx",
        b"",
    ] {
        let mut buf = b"POST / HTTP/1.1\r\nTransfer-Encoding: ".to_vec();
        buf.extend_from_slice(te);
        buf.extend_from_slice(b"\r\n\r\n");
        let e = err(&buf);
        assert_eq!(e, RequestError::UnsupportedTransferEncoding, "{te:?}");
        assert_eq!(e.status(), 501);
    }
    let twice =
        b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n";
    assert_eq!(err(twice), RequestError::UnsupportedTransferEncoding);
}

#[test]
fn transfer_encoding_in_http_1_0_is_malformed() {
    assert_eq!(
        err(b"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"),
        RequestError::Malformed
    );
}

#[test]
fn statuses_match_the_contract() {
    assert_eq!(RequestError::UriTooLong.status(), 414);
    assert_eq!(RequestError::HeadersTooLarge.status(), 431);
    assert_eq!(RequestError::Malformed.status(), 400);
}

#[test]
fn max_headers_above_the_stack_cap_is_clamped_not_a_panic() {
    let limits = RequestLimits {
        max_headers: usize::MAX,
        ..RequestLimits::default()
    };
    let buf = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n";
    assert!(parse_request(buf, &limits).unwrap().is_some());
}

/// Found by fuzzing (split against whole reads): the status of a request with another version
/// must not depend on where the reads fell.
#[test]
fn other_versions_get_the_same_answer_however_the_line_arrives() {
    let limits = RequestLimits::default();
    for (whole, status) in [
        (&b"GET / HTTP/2.0\r\n\r\n"[..], 505),
        (b"GET /a b.txt HTTP/1.1\r\nHost: a\r\n\r\n", 400),
        (b"GET / HTTP/1.x\r\n\r\n", 400),
    ] {
        assert_eq!(
            err(whole).status(),
            status,
            "{}",
            String::from_utf8_lossy(whole)
        );
        // Every prefix either waits for more or already has the same answer.
        for n in 1..whole.len() {
            match parse_request(&whole[..n], &limits) {
                Ok(None) => {}
                Ok(Some(_)) => panic!("a prefix of a refused request was accepted"),
                Err(e) => assert_eq!(e.status(), status, "prefix {n} of {whole:?}"),
            }
        }
    }
    // A request line over the limit is a 414 whatever version ends it.
    let long = format!("GET /{} HTTP/2.0\r\n\r\n", "a".repeat(9000));
    assert_eq!(err(long.as_bytes()), RequestError::UriTooLong);
}

/// Found by fuzzing: a buffer past a limit that is also wrong elsewhere is answered as the first
/// of the two a server reading byte by byte meets.
#[test]
fn an_error_and_a_limit_are_answered_in_byte_order() {
    let small = RequestLimits {
        max_request_line: 40,
        max_head_bytes: 120,
        max_headers: 4,
    };
    // The version is wrong long before the line is too long: 400, not 414.
    let bad_early = format!("GET / o{}\r\n\r\n", "o".repeat(60));
    // The line is too long long before the bad byte: 414, not 400.
    let bad_late = format!("GET /{}\x01 HTTP/1.1\r\n\r\n", "a".repeat(60));
    // The head is over 120 bytes before the malformed field line: 431, not 400.
    let field_late = format!(
        "GET / HTTP/1.1\r\nX-A: {}\r\nno colon\r\n\r\n",
        "v".repeat(110)
    );
    for (raw, status) in [(bad_early, 400), (bad_late, 414), (field_late, 431)] {
        let raw = raw.as_bytes();
        let whole = parse_request(raw, &small).expect_err("refused");
        assert_eq!(whole.status(), status, "{}", String::from_utf8_lossy(raw));
        let first = (1..=raw.len())
            .find_map(|n| parse_request(&raw[..n], &small).err())
            .expect("some prefix is refused");
        assert_eq!(first.status(), status, "byte by byte");
    }
}

#[test]
fn expect_100_continue_is_seen_whatever_its_case() {
    assert!(!ok(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n").expect_continue);
    assert!(ok(b"POST / HTTP/1.1\r\nHost: a\r\nExpect:  100-Continue \r\n\r\n").expect_continue);
    assert!(!ok(b"POST / HTTP/1.1\r\nHost: a\r\nExpect: 200-ok\r\n\r\n").expect_continue);
}
