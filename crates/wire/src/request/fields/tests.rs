//! `Request::with_fields` against `parse_request` on the HTTP/1.1 head the same fields make: the
//! two must give the same request or the same error, but for a target not in origin-form (or
//! `*` for OPTIONS), which HTTP/1.1 reads and HTTP/2 and HTTP/3 refuse.

use super::super::{parse_request, PassedHost, Request, RequestError, RequestLimits};

type Fields<'a> = &'a [(&'a [u8], &'a [u8])];

/// The HTTP/1.1 head an HTTP/2 request's fields stand for.
fn head(method: &[u8], target: &[u8], authority: Option<&[u8]>, fields: Fields) -> Vec<u8> {
    let mut h = [method, b" ", target, b" HTTP/1.1\r\n"].concat();
    for (name, value) in authority.map(|a| (&b"host"[..], a)).iter().chain(fields) {
        h.extend_from_slice(&[name, &b": "[..], value, b"\r\n"].concat());
    }
    h.extend_from_slice(b"\r\n");
    h
}

fn same(
    method: &[u8],
    target: &[u8],
    authority: Option<&[u8]>,
    fields: Fields,
    limits: RequestLimits,
) {
    let bytes = head(method, target, authority, fields);
    let parsed = parse_request(&bytes, &limits).map(|r| r.expect("a complete head"));
    // With nothing passed yet, with another authority passed, then with this one passed (if it
    // passes): the answer never depends on what the connection's earlier requests carried.
    let mut other = PassedHost::default();
    let primed = from_fields(
        b"GET",
        b"/",
        Some(b"other:1"),
        &[],
        &RequestLimits::default(),
        &mut other,
    );
    assert!(primed.is_ok());
    for passed in [&mut PassedHost::default(), &mut other] {
        for round in ["first", "again"] {
            let built = from_fields(method, target, authority, fields, &limits, passed);
            let text = String::from_utf8_lossy(&bytes);
            assert_eq!(built, parsed, "{round} after {passed:?}: {text:?}");
        }
    }
}

fn from_fields<'b>(
    method: &'b [u8],
    target: &'b [u8],
    authority: Option<&'b [u8]>,
    fields: Fields<'b>,
    limits: &RequestLimits,
    passed: &mut PassedHost,
) -> Result<Request<'b>, RequestError> {
    let fields = fields.iter().copied();
    Request::with_fields(method, target, authority, fields, limits, passed, |r| {
        r.cloned()
    })
}

fn same_default(method: &[u8], target: &[u8], authority: Option<&[u8]>, fields: Fields) {
    same(method, target, authority, fields, RequestLimits::default());
}

#[test]
fn ordinary_requests_are_the_same_request() {
    same_default(
        b"GET",
        b"/a?b=1",
        Some(b"example:80"),
        &[(b"user-agent", b"t/1")],
    );
    same_default(
        b"HEAD",
        b"/",
        None,
        &[(b"host", b"h"), (b"range", b"bytes=0-1")],
    );
    same_default(b"OPTIONS", b"*", None, &[]);
    same_default(
        b"GET",
        b"/x",
        Some(b"h"),
        &[
            (b"if-none-match", b"\"a\""),
            (b"if-none-match", b"\"b\""),
            (b"if-match", b"*"),
            (b"if-modified-since", b"Sun, 06 Nov 1994 08:49:37 GMT"),
            (b"if-unmodified-since", b"Sun, 06 Nov 1994 08:49:37 GMT"),
            (b"if-range", b"\"a\""),
            (b"accept-encoding", b"gzip"),
            (b"referer", b"http://h/"),
            (b"range", b"bytes=0-"),
            (b"range", b"bytes=1-"),
        ],
    );
}

#[test]
fn values_are_trimmed_as_the_parser_trims_them() {
    same_default(b"GET", b"/", Some(b"h"), &[(b"user-agent", b"  a b \t")]);
    same_default(b"GET", b"/", None, &[(b"host", b" h ")]);
}

#[test]
fn bad_syntax_is_the_same_error() {
    same_default(b"G T", b"/", None, &[]);
    same_default(b"", b"/", None, &[]);
    same_default(b"GET", b"", None, &[]);
    same_default(b"GET", b"/a b", None, &[]);
    same_default(b"GET", b"/\x7f", None, &[]);
    same_default(b"GET", b"/\xff", None, &[]);
    same_default(b"GET", b"/\xc3\xa9", None, &[]);
    same_default(b"GET", b"/", Some(b"h"), &[(b"user-agent", b"a\rb")]);
    same_default(b"GET", b"/", Some(b"h"), &[(b"referer", b"a\x7fb")]);
    same_default(b"GET", b"/", Some(b"h"), &[(b"referer", b"a\x01b")]);
    same_default(b"GET", b"/", Some(b"h"), &[(b"bad name", b"x")]);
}

#[test]
fn bad_meaning_is_the_same_error() {
    same_default(b"GET", b"/", Some(b"h"), &[(b"host", b"h")]);
    same_default(b"GET", b"/", Some(b"a b"), &[]);
    same_default(b"GET", b"/", None, &[(&b"if-match"[..], &b"1"[..]); 9]);
    // Two credentials: which one is checked and which one passes on must not differ.
    let twice: Fields = &[
        (b"authorization", b"Basic YTpi"),
        (b"authorization", b"Basic Yzpk"),
    ];
    same_default(b"GET", b"/", Some(b"h"), twice);
    // The syntax of a later field is checked before the meaning of an earlier one.
    same_default(
        b"GET",
        b"/",
        Some(b"h"),
        &[(b"host", b"h"), (b"referer", b"\x01")],
    );
}

#[test]
fn an_authority_is_kept_only_once_it_passed_and_if_it_fits() {
    let limits = RequestLimits::default();
    let mut passed = PassedHost::default();
    let get = |authority: &'static [u8], passed: &mut PassedHost| {
        from_fields(b"GET", b"/", Some(authority), &[], &limits, passed).map(|r| r.host)
    };
    assert_eq!(get(b"a b", &mut passed), Err(RequestError::BadHost));
    assert_eq!(get(b"a\x01", &mut passed), Err(RequestError::Malformed));
    assert_eq!(
        format!("{passed:?}"),
        "PassedHost(\"\")",
        "nothing refused is kept"
    );
    assert_eq!(get(b"h:1", &mut passed), Ok(Some(&b"h:1"[..])));
    assert_eq!(format!("{passed:?}"), "PassedHost(\"h:1\")");
    // A kept one is compared whole: a prefix or a longer value is checked again.
    assert_eq!(get(b"h:", &mut passed), Ok(Some(&b"h:"[..])));
    assert_eq!(get(b"h:1 x", &mut passed), Err(RequestError::BadHost));
    assert_eq!(format!("{passed:?}"), "PassedHost(\"h:\")");
    let long: &'static [u8] = &[b'a'; PassedHost::CAP + 1];
    assert_eq!(get(long, &mut passed), Ok(Some(long)));
    assert_eq!(
        format!("{passed:?}"),
        "PassedHost(\"h:\")",
        "too long to keep"
    );
    let fits: &'static [u8] = &[b'b'; PassedHost::CAP];
    assert_eq!(get(fits, &mut passed), Ok(Some(fits)));
    assert!(format!("{passed:?}").contains("bbbb"));
    let zero = RequestLimits {
        max_headers: 0,
        ..limits
    };
    let r = from_fields(b"GET", b"/", Some(fits), &[], &zero, &mut passed);
    assert_eq!(
        r,
        Err(RequestError::TooManyHeaders),
        "a kept authority still counts"
    );
}

#[test]
fn limits_are_the_same_error() {
    let limits = RequestLimits {
        max_request_line: 40,
        max_head_bytes: 120,
        max_headers: 3,
    };
    let long = [b'a'; 60];
    let mut target = b"/".to_vec();
    target.extend_from_slice(&long);
    same(b"GET", &target, None, &[], limits);
    // A bad byte before the line limit is a 400, one past it a 414.
    let mut early = target.clone();
    early[5] = b'\x01';
    same(b"GET", &early, None, &[], limits);
    let mut late = target.clone();
    late[50] = b'\x01';
    same(b"GET", &late, None, &[], limits);
    same(b"GET", &target, None, &[(b"host", b"a b")], limits);
    let fields: Fields = &[(b"referer", b"a"), (b"referer", b"b"), (b"referer", b"c")];
    same(b"GET", b"/", Some(b"h"), fields, limits);
    same(b"GET", b"/", None, fields, limits);
    same(
        b"GET",
        b"/",
        None,
        &[(b"referer", &long), (b"referer", &long)],
        limits,
    );
    same(
        b"GET",
        b"/",
        None,
        &[(b"referer", &long), (b"host", b"a b")],
        limits,
    );
}

/// RFC 9113 8.3.1: `:path` is origin-form, or `*` for OPTIONS. An absolute-form one is
/// malformed over HTTP/2 and HTTP/3 (HTTP/1.1 reads it), so it never names a host in place of
/// the `:authority` that was checked.
#[test]
fn a_path_not_in_origin_form_is_malformed() {
    let limits = RequestLimits::default();
    for (method, target) in [
        (&b"GET"[..], &b"http://evil/x"[..]),
        (b"GET", b"https://evil"),
        (b"GET", b"http://a@h/x"),
        (b"GET", b"x"),
        (b"GET", b"*"),
    ] {
        let got = from_fields(
            method,
            target,
            Some(b"h"),
            &[],
            &limits,
            &mut PassedHost::default(),
        );
        assert_eq!(got.err(), Some(RequestError::Malformed), "{target:?}");
    }
    let star = from_fields(
        b"OPTIONS",
        b"*",
        Some(b"h"),
        &[],
        &limits,
        &mut PassedHost::default(),
    );
    assert_eq!(star.map(|r| r.target), Ok(&b"*"[..]));
    let origin = from_fields(
        b"GET",
        b"/x",
        Some(b"h"),
        &[],
        &limits,
        &mut PassedHost::default(),
    );
    assert_eq!(
        origin.map(|r| (r.target, r.host)),
        Ok((&b"/x"[..], Some(&b"h"[..])))
    );
}
