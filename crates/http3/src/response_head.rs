//! A header block a client receives, judged alone before it is handed out (RFC 9114 4.1.2, 4.2,
//! 4.3.2): a response's head, a trailer section, or malformed. One that is malformed is a
//! stream error: its stream is reset with H3_MESSAGE_ERROR and the connection goes on, as the
//! server does with a malformed request (`server/malformed.rs`).
//!
//! Malformed here: a pseudo-header other than `:status`, a second `:status`, one after a
//! regular field, or one whose value is not three digits from 100 to 599 (RFC 9110 15); a
//! field name with an uppercase letter; a connection-specific field (`connection`,
//! `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`); a `content-length`
//! that is not digits, or two that differ (RFC 9110 8.6). Whether the block comes where a head
//! or trailers may (RFC 9114 4.1) is the caller's to judge, which knows the stream.

use wire::{parse_digits, FieldName};

/// What a received header block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// A response's head: its status, and the body length its `content-length` announces.
    Head {
        status: u16,
        length: Option<u64>,
    },
    /// No pseudo-header: a trailer section (or, before any head, a head missing its status).
    Trailers,
    Malformed,
}

/// Judges the block `fields` (names and values in the order received).
pub(crate) fn judge<'a>(fields: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Block {
    let (mut status, mut length, mut regular) = (None, None, false);
    for (name, value) in fields {
        if name.first() == Some(&b':') {
            if name != b":status" || status.is_some() || regular {
                return Block::Malformed;
            }
            match value {
                &[a @ b'1'..=b'5', b @ b'0'..=b'9', c @ b'0'..=b'9'] => {
                    let digit = |d: u8| u16::from(d - b'0');
                    status = Some(digit(a) * 100 + digit(b) * 10 + digit(c));
                }
                _ => return Block::Malformed,
            }
            continue;
        }
        regular = true;
        match FieldName::of_lower(name) {
            f if f.is_connection_specific() => return Block::Malformed,
            FieldName::ContentLength => match (parse_digits(value), length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(l)) if n == l => {}
                _ => return Block::Malformed,
            },
            FieldName::Other if name.iter().any(u8::is_ascii_uppercase) => return Block::Malformed,
            _ => {}
        }
    }
    match status {
        Some(status) => Block::Head { status, length },
        None => Block::Trailers,
    }
}

#[cfg(test)]
mod tests {
    use super::{judge, Block};

    fn of(fields: &[(&str, &str)]) -> Block {
        judge(fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())))
    }

    #[test]
    fn a_head_gives_its_status_and_length() {
        let head = of(&[(":status", "200"), ("content-length", "1000")]);
        assert_eq!(
            head,
            Block::Head {
                status: 200,
                length: Some(1000)
            }
        );
        let bare = of(&[(":status", "103"), ("link", "</a>")]);
        assert_eq!(
            bare,
            Block::Head {
                status: 103,
                length: None
            }
        );
        let twice = of(&[
            (":status", "200"),
            ("content-length", "5"),
            ("content-length", "5"),
        ]);
        assert_eq!(
            twice,
            Block::Head {
                status: 200,
                length: Some(5)
            }
        );
        assert_eq!(of(&[("x-t", "1")]), Block::Trailers);
        assert_eq!(of(&[]), Block::Trailers);
    }

    #[test]
    fn a_status_outside_100_to_599_is_malformed() {
        for bad in ["999", "600", "099", "20", "2000", "abc", ""] {
            assert_eq!(of(&[(":status", bad)]), Block::Malformed, "{bad}");
        }
        assert!(matches!(of(&[(":status", "599")]), Block::Head { .. }));
    }

    #[test]
    fn bad_pseudo_headers_names_and_lengths_are_malformed() {
        let cases: &[&[(&str, &str)]] = &[
            &[(":status", "200"), (":status", "200")],
            &[(":status", "200"), (":path", "/")],
            &[("x", "1"), (":status", "200")],
            &[(":status", "200"), ("X-Up", "1")],
            &[("X-Up", "1")],
            &[(":status", "200"), ("connection", "close")],
            &[(":status", "200"), ("transfer-encoding", "chunked")],
            &[(":status", "200"), ("content-length", "12a")],
            &[(":status", "200"), ("content-length", "")],
            &[
                (":status", "200"),
                ("content-length", "99999999999999999999999"),
            ],
            &[
                (":status", "200"),
                ("content-length", "5"),
                ("content-length", "6"),
            ],
        ];
        for fields in cases {
            assert_eq!(of(fields), Block::Malformed, "{fields:?}");
        }
    }
}
