//! A request's header block checked before it is handed out (RFC 9114 4.1.2, 4.2, 4.3.1): one
//! that is malformed has its stream reset with H3_MESSAGE_ERROR, a stream error, and the
//! connection goes on. HTTP/2's server ends its connection for most of the same faults (RFC
//! 9113 8.1.1 allows either); HTTP/3 asks for the stream's reset.
//!
//! Malformed here: a pseudo-header after a regular field, unknown (`:protocol`, `:status`, any
//! other), repeated or empty; a request without `:method`, `:scheme` and `:path` (CONNECT:
//! with `:authority` and neither of the others), or without `:authority` or `host`; an
//! `http` or `https` request whose `:path` does not start with `/` (nor is `*` for OPTIONS);
//! a field name with an uppercase letter; a connection-specific field (`connection`,
//! `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`) or a `te` other than
//! `trailers` (any case, as HTTP/2's checks take it). Names are recognised by
//! `wire::FieldName`, the table HTTP/1.1's parser and HTTP/2's checks read them with. A name
//! that is no token, field values and the meaning of the others (`content-length`, `host`)
//! are `wire`'s request reader's to judge, for every protocol alike (a 400): names are
//! scanned once for their syntax, there.

use wire::FieldName;

// What the block has shown so far.
const METHOD: u16 = 1;
const SCHEME: u16 = 1 << 1;
const PATH: u16 = 1 << 2;
const AUTHORITY: u16 = 1 << 3;
const HOST: u16 = 1 << 4;
const REGULAR: u16 = 1 << 5;
const CONNECT: u16 = 1 << 6;
const OPTIONS: u16 = 1 << 7;
/// `:scheme` is `http` or `https` (any case): `:path` is then an origin or asterisk form.
const SCHEME_HTTP: u16 = 1 << 8;
const PATH_SLASH: u16 = 1 << 9;
const PATH_ASTERISK: u16 = 1 << 10;

/// Whether the request head `fields` (names and values in the order received) is malformed.
pub(crate) fn malformed<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> bool {
    let mut seen = 0u16;
    for (name, value) in fields {
        if name.first() == Some(&b':') {
            let flag = match FieldName::of_lower(name) {
                FieldName::Method => METHOD,
                FieldName::Scheme => SCHEME,
                FieldName::Path => PATH,
                FieldName::Authority => AUTHORITY,
                _ => return true,
            };
            if seen & (REGULAR | flag) != 0 || value.is_empty() {
                return true;
            }
            seen |= flag
                | match (flag, value) {
                    (METHOD, b"CONNECT") => CONNECT,
                    (METHOD, b"OPTIONS") => OPTIONS,
                    (SCHEME, _)
                        if value.eq_ignore_ascii_case(b"http")
                            || value.eq_ignore_ascii_case(b"https") =>
                    {
                        SCHEME_HTTP
                    }
                    (PATH, [b'/', ..]) => PATH_SLASH,
                    (PATH, b"*") => PATH_ASTERISK,
                    _ => 0,
                };
            continue;
        }
        seen |= REGULAR;
        // Only what makes HTTP/3 differ from the other protocols is checked here: a name
        // that is no token is `wire`'s to refuse (a 400), as for HTTP/1.1 and HTTP/2.
        match FieldName::of_lower(name) {
            f if f.is_connection_specific() => return true,
            FieldName::Te if !value.eq_ignore_ascii_case(b"trailers") => return true,
            FieldName::Host => seen |= HOST,
            FieldName::Other if name.iter().any(u8::is_ascii_uppercase) => return true,
            _ => {}
        }
    }
    if seen & CONNECT != 0 {
        return seen & (SCHEME | PATH) != 0 || seen & AUTHORITY == 0;
    }
    let path_ok = seen & SCHEME_HTTP == 0
        || seen & PATH_SLASH != 0
        || seen & (OPTIONS | PATH_ASTERISK) == OPTIONS | PATH_ASTERISK;
    seen & (METHOD | SCHEME | PATH) != METHOD | SCHEME | PATH
        || seen & (AUTHORITY | HOST) == 0
        || !path_ok
}

#[cfg(test)]
mod tests {
    use super::malformed;

    const GET: [(&str, &str); 4] = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "localhost"),
        (":path", "/"),
    ];

    fn check(fields: &[(&str, &str)]) -> bool {
        malformed(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    fn with(extra: &[(&str, &str)]) -> bool {
        check(&[&GET[..], extra].concat())
    }

    #[test]
    fn a_whole_request_passes() {
        assert!(!check(&GET));
        assert!(!with(&[
            ("accept", "*/*"),
            ("te", "Trailers"),
            ("x-a_b~1", "")
        ]));
        // A name that is no token is `wire`'s to refuse (a 400), not a malformed block.
        assert!(!with(&[("a b", "1")]));
        assert!(!with(&[("", "1")]));
        assert!(!check(&[
            (":method", "OPTIONS"),
            (":scheme", "https"),
            (":authority", "h"),
            (":path", "*")
        ]));
        // Another scheme's path is not held to the origin form.
        assert!(!check(&[
            GET[0],
            (":scheme", "foo"),
            GET[2],
            (":path", "x")
        ]));
        // `host` stands for `:authority`.
        assert!(!check(&[GET[0], GET[1], GET[3], ("host", "h")]));
        assert!(!check(&[(":method", "CONNECT"), (":authority", "h:443")]));
    }

    #[test]
    fn a_missing_pseudo_header_is_malformed() {
        for (i, (name, _)) in GET.iter().enumerate() {
            let mut fields = GET.to_vec();
            fields.remove(i);
            assert!(check(&fields), "without {name}");
        }
        assert!(check(&[
            (":method", "CONNECT"),
            (":authority", "h"),
            (":path", "/")
        ]));
        assert!(check(&[(":method", "CONNECT")]));
    }

    #[test]
    fn a_repeated_unknown_empty_or_late_pseudo_header_is_malformed() {
        assert!(with(&[(":path", "/other")]));
        assert!(with(&[(":method", "GET")]));
        assert!(with(&[(":protocol", "websocket")]));
        assert!(with(&[(":status", "200")]));
        assert!(check(&[GET[0], GET[1], GET[2], (":path", "")]));
        assert!(check(&[GET[0], GET[1], GET[2], ("accept", "*/*"), GET[3]]));
    }

    #[test]
    fn an_http_path_not_in_origin_or_asterisk_form_is_malformed() {
        assert!(check(&[GET[0], GET[1], GET[2], (":path", "a")]));
        assert!(check(&[GET[0], GET[1], GET[2], (":path", "*")]));
        assert!(check(&[
            GET[0],
            (":scheme", "HTTP"),
            GET[2],
            (":path", "x")
        ]));
        // `:path` before `:scheme`: the same.
        assert!(check(&[GET[0], (":path", "x"), GET[2], GET[1]]));
    }

    #[test]
    fn bad_names_and_connection_specific_fields_are_malformed() {
        for bad in [
            ("Accept", "*/*"),
            ("x-A", "1"),
            ("connection", "close"),
            ("keep-alive", "5"),
            ("proxy-connection", "x"),
            ("transfer-encoding", "chunked"),
            ("upgrade", "h2c"),
            ("te", "gzip"),
        ] {
            assert!(with(&[bad]), "{bad:?}");
        }
    }
}
