//! A request's header block checked before it is handed out (RFC 9114 4.1.2, 4.2, 4.3.1): one
//! that is malformed has its stream reset with H3_MESSAGE_ERROR, a stream error, and the
//! connection goes on. HTTP/2's server ends its connection for most of the same faults (RFC
//! 9113 8.1.1 allows either); HTTP/3 asks for the stream's reset.
//!
//! Malformed here: a pseudo-header after a regular field, unknown (`:protocol`, `:status`, any
//! other), repeated or empty; a request without `:method`, `:scheme` and `:path` (CONNECT:
//! with `:authority` and neither of the others), or without `:authority` or `host`; a field
//! name with an uppercase letter or another byte than a token's; a connection-specific field
//! (`connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`) or a `te`
//! other than `trailers`. Names are recognised by `wire::FieldName`, the table HTTP/1.1's
//! parser and HTTP/2's checks read them with. Field values and the meaning of the others
//! (`content-length`, `host`) are `wire`'s request reader's to judge, for every protocol alike
//! (a 400).

use wire::FieldName;

// What the block has shown so far.
const METHOD: u8 = 1;
const SCHEME: u8 = 1 << 1;
const PATH: u8 = 1 << 2;
const AUTHORITY: u8 = 1 << 3;
const HOST: u8 = 1 << 4;
const REGULAR: u8 = 1 << 5;
const CONNECT: u8 = 1 << 6;

/// Whether `b` may be in a field name as HTTP/3 carries it: a token's byte, not uppercase.
fn name_byte(b: u8) -> bool {
    b.is_ascii_lowercase()
        || b.is_ascii_digit()
        || matches!(
            b,
            b'!' | b'#'
                | b'$'
                | b'%'
                | b'&'
                | b'\''
                | b'*'
                | b'+'
                | b'-'
                | b'.'
                | b'^'
                | b'_'
                | b'`'
                | b'|'
                | b'~'
        )
}

/// Whether the request head `fields` (names and values in the order received) is malformed.
pub(crate) fn malformed<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> bool {
    let mut seen = 0u8;
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
            if flag == METHOD && value == b"CONNECT" {
                seen |= CONNECT;
            }
            seen |= flag;
            continue;
        }
        seen |= REGULAR;
        match FieldName::of_lower(name) {
            FieldName::Connection
            | FieldName::KeepAlive
            | FieldName::ProxyConnection
            | FieldName::TransferEncoding
            | FieldName::Upgrade => return true,
            FieldName::Te if value != b"trailers" => return true,
            FieldName::Host => seen |= HOST,
            FieldName::Other if name.is_empty() || !name.iter().all(|&b| name_byte(b)) => {
                return true
            }
            _ => {}
        }
    }
    if seen & CONNECT != 0 {
        return seen & (SCHEME | PATH) != 0 || seen & AUTHORITY == 0;
    }
    seen & (METHOD | SCHEME | PATH) != METHOD | SCHEME | PATH || seen & (AUTHORITY | HOST) == 0
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
            ("te", "trailers"),
            ("x-a_b~1", "")
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
    fn bad_names_and_connection_specific_fields_are_malformed() {
        for bad in [
            ("Accept", "*/*"),
            ("x-A", "1"),
            ("a b", "1"),
            ("", "1"),
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
