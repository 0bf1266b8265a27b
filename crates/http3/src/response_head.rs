//! A header block a client receives, judged alone before it is handed out: a response's head
//! (its status, and the body its `content-length` announces), a trailer section, or malformed.
//! One that is malformed is a stream error (RFC 9114 4.1.2): its stream is reset with
//! H3_MESSAGE_ERROR and the connection goes on, as the server does with a malformed request
//! (`server/malformed.rs`).
//!
//! Malformed here: a `content-length` that is not digits, or two that differ (RFC 9110 8.6).
//! Whether the block comes where a head or trailers may (RFC 9114 4.1), and whether the body
//! is what it announced, is the caller's to judge, which knows the stream.

use crate::fields::Fields;
use wire::FieldName;

/// What a received header block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Block {
    /// A response's head: its status, and the body length its `content-length` announces.
    Head {
        status: u16,
        length: Option<u64>,
    },
    /// No status: a trailer section (or, before any head, a head missing its status).
    Trailers,
    Malformed,
}

/// Judges the block `fields`.
pub(crate) fn judge(fields: &Fields) -> Block {
    let mut length = None;
    for (name, value) in fields.iter() {
        if FieldName::of_lower(name) == FieldName::ContentLength {
            match (digits(value), length) {
                (Some(n), None) => length = Some(n),
                (Some(n), Some(l)) if n == l => {}
                _ => return Block::Malformed,
            }
        }
    }
    match fields.status() {
        Some(status) => Block::Head { status, length },
        None => Block::Trailers,
    }
}

/// A `content-length` value: digits only, within 64 bits.
fn digits(value: &[u8]) -> Option<u64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0u64, |n, &b| {
        b.is_ascii_digit()
            .then_some(())
            .and_then(|()| n.checked_mul(10)?.checked_add(u64::from(b - b'0')))
    })
}

#[cfg(test)]
mod tests {
    use super::{judge, Block};
    use crate::fields::Fields;

    fn of(fields: &[(&str, &str)]) -> Block {
        let list = fields
            .iter()
            .map(|(n, v)| quiche::h3::Header::new(n.as_bytes(), v.as_bytes()));
        judge(&Fields(list.collect()))
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
    fn a_length_that_is_not_one_number_is_malformed() {
        for bad in ["12a", "", "-1", "99999999999999999999999"] {
            let fields = [(":status", "200"), ("content-length", bad)];
            assert_eq!(of(&fields), Block::Malformed, "{bad}");
        }
        let two = [
            (":status", "200"),
            ("content-length", "5"),
            ("content-length", "6"),
        ];
        assert_eq!(of(&two), Block::Malformed);
    }
}
