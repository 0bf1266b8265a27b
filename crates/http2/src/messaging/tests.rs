//! Each rule of `messaging.rs`, one field or one block at a time.

use super::*;

const GET: [(&[u8], &[u8]); 4] = [
    (b":method", b"GET"),
    (b":scheme", b"http"),
    (b":path", b"/a"),
    (b":authority", b"example.com:80"),
];

/// Runs a request block: the verdict of each field, then whether its end is accepted.
fn block(fields: &[(&[u8], &[u8])], end_stream: bool) -> (Vec<Verdict>, bool) {
    let mut m = Messaging::new(true);
    request(&mut m, 1, fields, end_stream)
}

fn request(
    m: &mut Messaging,
    stream: StreamId,
    fields: &[(&[u8], &[u8])],
    end_stream: bool,
) -> (Vec<Verdict>, bool) {
    m.begin(stream, HeadersKind::Request);
    let v: Vec<Verdict> = fields.iter().map(|(n, v)| m.field(n, v)).collect();
    let end = m.end_headers(end_stream);
    (v, end)
}

/// The verdict of `extra` added after a valid GET's pseudo-headers.
fn after_get(name: &[u8], value: &[u8]) -> Verdict {
    let mut fields = GET.to_vec();
    fields.push((name, value));
    block(&fields, true).0[4]
}

#[test]
fn a_plain_get_passes() {
    let (v, end) = block(&GET, true);
    assert!(v.iter().all(|&v| v == Verdict::Pass));
    assert!(end);
}

#[test]
fn byte_classes_are_nghttp2s() {
    // Counts of nghttp2 1.68's tables (helper.c; http.c's authority table).
    let count = |class| {
        (0..=255u8)
            .filter(|&b| CLASS[b as usize] & class != 0)
            .count()
    };
    assert_eq!(count(NAME), 51);
    let values = (0..=255u8).filter(|&b| wire::is_field_value(&[b])).count();
    assert_eq!(values, 224, "wire's rule, nghttp2's value table");
    assert_eq!(count(METHOD), 77);
    assert_eq!(count(PATH), 222);
    assert_eq!(count(AUTHORITY), 81);
    // The members of the token-like classes, as nghttp2's tables list them.
    let members = |class| -> Vec<u8> {
        (0..=255u8)
            .filter(|&b| CLASS[b as usize] & class != 0)
            .collect()
    };
    assert_eq!(
        members(NAME),
        b"!#$%&'*+-.0123456789^_`abcdefghijklmnopqrstuvwxyz|~"
    );
    assert_eq!(
        members(METHOD),
        &b"!#$%&'*+-.0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ^_`abcdefghijklmnopqrstuvwxyz|~"[..]
    );
    assert_eq!(
        members(AUTHORITY),
        &b"!$%&'()*+,-.0123456789:;=ABCDEFGHIJKLMNOPQRSTUVWXYZ[]_abcdefghijklmnopqrstuvwxyz~"[..]
    );
    // A value's bytes are wire's rule, HTTP/1.1's: HTAB and bytes from 0x80 in, DEL and NUL out.
    assert!(value_valid(b"x\t\x80x") && !value_valid(b"\x7f") && !value_valid(b"\0"));
}

#[test]
fn names_with_uppercase_end_the_connection() {
    assert_eq!(after_get(b"Accept", b"*/*"), Verdict::Fail);
    assert_eq!(block(&[(b":Method", b"GET")], true).0[0], Verdict::Fail);
}

#[test]
fn other_malformed_regular_fields_make_the_request_malformed() {
    assert_eq!(after_get(b"a b", b"x"), Verdict::Malformed);
    assert_eq!(after_get(b"", b"x"), Verdict::Malformed);
    assert_eq!(after_get(b"x", b"a\r\nb"), Verdict::Malformed);
    assert_eq!(after_get(b"x", b"a\0"), Verdict::Malformed);
    assert_eq!(after_get(b"x", b" a"), Verdict::Malformed);
    assert_eq!(after_get(b"x", b"a\t"), Verdict::Malformed);
    assert_eq!(after_get(b"x", b""), Verdict::Pass);
    assert_eq!(after_get(b"x", b"a \t\x80b"), Verdict::Pass);
    // A malformed field ends the pseudo-headers too.
    let (v, _) = block(
        &[(b":method", b"GET"), (b"a b", b"x"), (b":path", b"/")],
        true,
    );
    assert_eq!(v, [Verdict::Pass, Verdict::Malformed, Verdict::Fail]);
}

#[test]
fn malformed_pseudo_headers_end_the_connection() {
    for f in [
        (b":".as_slice(), b"x".as_slice()),
        (b":method", b"G T"),
        (b":method", b""),
        (b":path", b"/a b"),
        (b":authority", b"user@host"),
        (b":scheme", b"1http"),
        (b":scheme", b""),
        (b":path", b""),
        (b":authority", b""),
    ] {
        assert_eq!(block(&[f], true).0[0], Verdict::Fail, "{f:?}");
    }
}

#[test]
fn pseudo_headers_are_known_once_and_first() {
    assert_eq!(after_get(b":method", b"GET"), Verdict::Fail);
    assert_eq!(after_get(b":path", b"/"), Verdict::Fail);
    assert_eq!(after_get(b":scheme", b"http"), Verdict::Fail);
    assert_eq!(after_get(b":authority", b"a"), Verdict::Fail);
    assert_eq!(after_get(b":status", b"200"), Verdict::Fail);
    assert_eq!(after_get(b":protocol", b"websocket"), Verdict::Fail);
    let (v, _) = block(&[(b"accept", b"*/*"), (b":method", b"GET")], true);
    assert_eq!(v, [Verdict::Pass, Verdict::Fail]);
}

#[test]
fn connection_specific_fields_and_te_end_the_connection() {
    for n in [
        b"connection".as_slice(),
        b"keep-alive",
        b"proxy-connection",
        b"transfer-encoding",
        b"upgrade",
    ] {
        assert_eq!(after_get(n, b"x"), Verdict::Fail);
    }
    assert_eq!(after_get(b"te", b"trailers"), Verdict::Pass);
    assert_eq!(after_get(b"te", b"TRAILERS"), Verdict::Pass);
    assert_eq!(after_get(b"te", b"gzip"), Verdict::Fail);
}

#[test]
fn host_once_and_content_length_once_and_numeric() {
    assert_eq!(after_get(b"host", b"a"), Verdict::Pass);
    let mut fields = GET.to_vec();
    fields.extend([(b"host".as_slice(), b"a".as_slice()), (b"host", b"a")]);
    assert_eq!(block(&fields, true).0[5], Verdict::Fail);
    assert_eq!(after_get(b"content-length", b"12a"), Verdict::Fail);
    assert_eq!(after_get(b"content-length", b""), Verdict::Fail);
    assert_eq!(
        after_get(b"content-length", b"99999999999999999999"),
        Verdict::Fail
    );
    let mut fields = GET.to_vec();
    fields.extend([
        (b"content-length".as_slice(), b"0".as_slice()),
        (b"content-length", b"0"),
    ]);
    assert_eq!(block(&fields, true).0[5], Verdict::Fail);
}

#[test]
fn a_request_needs_its_pseudo_headers() {
    for missing in 0..4 {
        let fields: Vec<_> = GET
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != missing)
            .map(|(_, f)| *f)
            .collect();
        // Without :authority, host stands in.
        let (_, end) = block(&fields, true);
        assert!(!end, "without field {missing}");
    }
    let mut fields = GET[..3].to_vec();
    fields.push((b"host", b"a"));
    assert!(block(&fields, true).1);
}

#[test]
fn paths_of_http_requests_start_with_a_slash() {
    // (block accepted, request malformed): a path that is not origin-form resets its stream
    // (RFC 9113 8.3.1, 8.1.1); the connection goes on.
    let req = |method: &'static [u8], scheme: &'static [u8], path: &'static [u8], end: bool| {
        let mut m = Messaging::new(true);
        let fields: [(&[u8], &[u8]); 4] = [
            (b":method", method),
            (b":scheme", scheme),
            (b":path", path),
            (b"host", b"a"),
        ];
        let (_, accepted) = request(&mut m, 1, &fields, end);
        (accepted, m.malformed(), m.open.len())
    };
    assert_eq!(req(b"GET", b"http", b"a", true), (true, true, 0));
    assert_eq!(req(b"GET", b"http", b"http://h/a", true), (true, true, 0));
    assert_eq!(req(b"GET", b"HTTPS", b"*", true), (true, true, 0));
    // A body follows a malformed request: no entry is kept for it.
    assert_eq!(req(b"POST", b"https", b"a", false), (true, true, 0));
    assert_eq!(req(b"OPTIONS", b"https", b"*", true), (true, false, 0));
    assert_eq!(req(b"GET", b"ftp", b"a", true), (true, false, 0));
    assert_eq!(req(b"POST", b"http", b"/a", false), (true, false, 1));
}

#[test]
fn connect_has_an_authority_only() {
    assert!(block(&[(b":method", b"CONNECT"), (b":authority", b"a:443")], true).1);
    assert!(!block(&[(b":method", b"CONNECT"), (b"host", b"a:443")], true).1);
    let (_, end) = block(
        &[
            (b":method", b"CONNECT"),
            (b":authority", b"a:443"),
            (b":path", b"/"),
        ],
        true,
    );
    assert!(!end);
}

#[test]
fn a_body_must_match_its_content_length() {
    let mut with_length = GET.to_vec();
    with_length.push((b"content-length", b"5"));
    // Declared but the head ends the stream.
    assert!(!block(&with_length, true).1);
    let mut zero = GET.to_vec();
    zero.push((b"content-length", b"0"));
    assert!(block(&zero, true).1);

    let mut m = Messaging::new(true);
    assert!(request(&mut m, 1, &with_length, false).1);
    assert!(m.data(1, 3));
    assert!(!m.data_end(1), "3 of 5 bytes");
    assert!(m.open.is_empty());

    assert!(request(&mut m, 3, &with_length, false).1);
    assert!(m.data(3, 5));
    assert!(m.data_end(3));

    assert!(request(&mut m, 5, &with_length, false).1);
    assert!(!m.data(5, 6), "past the declared length");

    // No content-length: any body.
    assert!(request(&mut m, 7, &GET, false).1);
    assert!(m.data(7, 1 << 20));
    m.close(7);
    assert_eq!(m.open.len(), 1);
    m.close(5);
    assert!(m.open.is_empty());
}

#[test]
fn trailers_end_the_stream_without_pseudo_headers() {
    let mut m = Messaging::new(true);
    let mut with_length = GET.to_vec();
    with_length.push((b"content-length", b"2"));
    assert!(request(&mut m, 1, &with_length, false).1);
    assert!(m.data(1, 2));
    m.begin(1, HeadersKind::Trailers);
    assert_eq!(m.field(b"x-sum", b"1"), Verdict::Pass);
    assert_eq!(m.field(b":path", b"/"), Verdict::Fail);
    assert_eq!(
        m.field(b"content-length", b"2"),
        Verdict::Fail,
        "declared in the head"
    );
    assert!(m.end_headers(true));
    assert!(m.open.is_empty());

    assert!(request(&mut m, 3, &GET, false).1);
    m.begin(3, HeadersKind::Trailers);
    assert!(!m.end_headers(false), "trailers without END_STREAM");

    assert!(request(&mut m, 5, &GET, false).1);
    assert!(m.data(5, 4));
    m.begin(5, HeadersKind::Trailers);
    assert_eq!(m.field(b"content-length", b"3"), Verdict::Pass);
    assert!(
        !m.end_headers(true),
        "4 bytes received, 3 declared in the trailers"
    );
}

#[test]
fn eight_bytes_at_a_time_agree_with_the_table() {
    // Strings of every length to 40 from a small alphabet around the classes' edges.
    let alphabet = b"az09-.:AZ \t\x1f\x7e\x7f\x80\xff/!@[_,\x2c\x3b\x40\x5b\x60\x7b";
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for _ in 0..20_000 {
        let len = (next() % 41) as usize;
        // Mostly plain bytes, so the fast path is taken and its misses are rare.
        let s: Vec<u8> = (0..len)
            .map(|_| {
                let r = next();
                if r % 8 == 0 {
                    alphabet[(r >> 8) as usize % alphabet.len()]
                } else {
                    alphabet[(r >> 8) as usize % 9]
                }
            })
            .collect();
        let by_byte = s.iter().all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f));
        assert_eq!(wire::is_field_value(&s), by_byte, "{s:?}");
        assert_eq!(authority_bytes(&s), all(&s, AUTHORITY), "{s:?}");
    }
}

#[test]
fn the_priority_field_is_parsed_onto_the_default_field_after_field() {
    let priority = |values: &[&[u8]]| {
        let mut m = Messaging::new(true);
        let mut fields = GET.to_vec();
        fields.extend(values.iter().map(|v| (&b"priority"[..], *v)));
        let (v, end) = request(&mut m, 1, &fields, true);
        assert!(end && v.iter().all(|&v| v == Verdict::Pass), "{v:?}");
        m.take_priority().map(|p| (p.urgency, p.inc))
    };
    assert_eq!(priority(&[]), None);
    assert_eq!(priority(&[b"u=0, i"]), Some((0, 1)));
    assert_eq!(priority(&[b"i"]), Some((3, 1)), "the default urgency");
    assert_eq!(priority(&[b"u=1", b"i"]), Some((1, 1)));
    assert_eq!(
        priority(&[b"u=5, x=\"y\""]),
        Some((5, 0)),
        "other keys ignored"
    );
    assert_eq!(priority(&[b"u=9"]), None, "out of range: refused");
    assert_eq!(priority(&[b"u=a"]), None);
    assert_eq!(
        priority(&[b"u=1, (", b"u=2"]),
        None,
        "once one fails, the rest too"
    );

    let mut m = Messaging::new(true);
    assert!(request(&mut m, 1, &GET, false).1);
    m.begin(1, HeadersKind::Trailers);
    assert_eq!(m.field(b"priority", b"u=0"), Verdict::Pass);
    assert!(m.end_headers(true));
    assert!(
        m.take_priority().is_none(),
        "trailers' priority is not applied"
    );
}

#[test]
fn a_passed_field_carries_the_name_the_checks_recognised() {
    let mut m = Messaging::new(true);
    m.begin(1, HeadersKind::Request);
    let fields: [(&[u8], &[u8], FieldName); 10] = [
        (b":method", b"GET", FieldName::Method),
        (b":scheme", b"https", FieldName::Scheme),
        (b":path", b"/", FieldName::Path),
        (b":authority", b"a", FieldName::Authority),
        (b"host", b"a", FieldName::Host),
        (b"if-unmodified-since", b"x", FieldName::IfUnmodifiedSince),
        (b"range", b"bytes=0-1", FieldName::Range),
        (b"user-agent", b"x", FieldName::UserAgent),
        (b"accept", b"*/*", FieldName::Other),
        (b"x-custom", b"y", FieldName::Other),
    ];
    for (name, value, known) in fields {
        assert_eq!(m.check(name, value), Checked::Pass(known), "{name:?}");
    }
    // A field the checks ignore or refuse is not named.
    assert_eq!(m.check(b"x", b" a"), Checked::Malformed);
    assert_eq!(m.check(b"te", b"gzip"), Checked::Fail);
}
