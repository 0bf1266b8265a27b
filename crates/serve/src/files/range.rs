//! `Range: bytes=...` for a single range (RFC 9110 14).
//!
//! One range is served as 206; a range that starts past the end is 416. Several ranges would need
//! `multipart/byteranges`, which no browser or download tool needs from a static server: RFC 9110
//! 14.2 lets a server ignore `Range`, so a list, like anything unparsable, gets the whole 200.

use wire::trim_ows;

/// What to do with a `Range` header, given the representation's length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeSpec {
    /// Send the whole representation (200).
    Ignore,
    /// Send `len` bytes from `start` (206).
    Partial {
        /// The first byte, from 0.
        start: u64,
        /// Bytes from `start`, at least 1.
        len: u64,
    },
    /// 416 with `Content-Range: bytes */size`.
    Unsatisfiable,
}

/// Interprets a `Range` header value for a representation of `size` bytes.
pub fn parse(value: &[u8], size: u64) -> RangeSpec {
    let value = trim_ows(value);
    if value.len() < 6
        || !value[..5].eq_ignore_ascii_case(b"bytes")
        || trim_ows(&value[5..]).first() != Some(&b'=')
    {
        return RangeSpec::Ignore;
    }
    let eq = value.iter().position(|&b| b == b'=').unwrap_or(0);
    let set = &value[eq + 1..];
    // Exactly one non-empty element (empty list elements are legal, RFC 9110 5.6.1).
    let mut spec = None;
    for element in set.split(|&b| b == b',') {
        let element = trim_ows(element);
        if element.is_empty() {
            continue;
        }
        if spec.replace(element).is_some() {
            return RangeSpec::Ignore;
        }
    }
    let Some(spec) = spec else {
        return RangeSpec::Ignore;
    };
    let Some(dash) = spec.iter().position(|&b| b == b'-') else {
        return RangeSpec::Ignore;
    };
    let (first, last) = (&spec[..dash], &spec[dash + 1..]);
    if first.is_empty() {
        // Suffix range: the last n bytes.
        let Some(n) = digits(last) else {
            return RangeSpec::Ignore;
        };
        if n == 0 || size == 0 {
            return RangeSpec::Unsatisfiable;
        }
        let len = n.min(size);
        return RangeSpec::Partial {
            start: size - len,
            len,
        };
    }
    let Some(start) = digits(first) else {
        return RangeSpec::Ignore;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match digits(last) {
            Some(end) if end >= start => end,
            // `5-2` is invalid syntax (RFC 9110 14.1.1): ignored, not 416.
            _ => return RangeSpec::Ignore,
        }
    };
    if start >= size {
        return RangeSpec::Unsatisfiable;
    }
    let end = end.min(size - 1);
    RangeSpec::Partial {
        start,
        len: end - start + 1,
    }
}

/// 1*DIGIT; values past u64::MAX saturate (a start that large is unsatisfiable anyway, an end
/// that large means "to the end").
fn digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(s.iter().fold(0u64, |n, &d| {
        n.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::RangeSpec::*;
    use super::*;

    fn p(start: u64, len: u64) -> RangeSpec {
        Partial { start, len }
    }

    #[test]
    fn single_ranges() {
        assert_eq!(parse(b"bytes=0-4", 10), p(0, 5));
        assert_eq!(parse(b"bytes=5-", 10), p(5, 5));
        assert_eq!(parse(b"bytes=-3", 10), p(7, 3));
        assert_eq!(parse(b"bytes=-30", 10), p(0, 10));
        assert_eq!(parse(b"bytes=8-100", 10), p(8, 2));
        assert_eq!(parse(b"Bytes = 1-1 ", 10), p(1, 1));
        assert_eq!(parse(b"bytes=0-1,", 10), p(0, 2));
        assert_eq!(parse(b"bytes=2-99999999999999999999999", 10), p(2, 8));
    }

    #[test]
    fn unsatisfiable_ranges() {
        assert_eq!(parse(b"bytes=10-", 10), Unsatisfiable);
        assert_eq!(parse(b"bytes=10-20", 10), Unsatisfiable);
        assert_eq!(parse(b"bytes=-0", 10), Unsatisfiable);
        assert_eq!(parse(b"bytes=0-", 0), Unsatisfiable);
        assert_eq!(parse(b"bytes=-5", 0), Unsatisfiable);
        assert_eq!(parse(b"bytes=99999999999999999999999-", 10), Unsatisfiable);
    }

    #[test]
    fn multiple_ranges_and_garbage_are_ignored() {
        for v in [
            &b"bytes=0-1,3-4"[..],
            b"bytes=5-2",
            b"bytes=",
            b"bytes=abc",
            b"bytes=1",
            b"items=0-1",
            b"bytes 0-1",
            b"bytes=0x1-2",
            b"bytes=-",
            b"bytes=+1-2",
            b"",
        ] {
            assert_eq!(parse(v, 10), Ignore, "{:?}", String::from_utf8_lossy(v));
        }
    }
}
