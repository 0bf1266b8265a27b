//! Small byte-level helpers for header values, shared by the request and response parsers.
//!
//! Header values arrive as borrowed bytes; these walk them in place so that neither parser
//! allocates (no `str::split`, no lowercase copies).

/// Calls `f` with each non-empty element of a comma-separated list, optional whitespace trimmed
/// (RFC 9110 5.6.1: empty elements are legal and ignored).
pub(crate) fn for_each_element<'a>(value: &'a [u8], mut f: impl FnMut(&'a [u8])) {
    for element in value.split(|&b| b == b',') {
        let element = trim_ows(element);
        if !element.is_empty() {
            f(element);
        }
    }
}

/// Case-insensitive token comparison.
#[inline]
pub(crate) fn eq_token(a: &[u8], b: &[u8]) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Strips leading and trailing spaces and tabs (RFC 9110 5.6.3 OWS; not CR, LF or other
/// whitespace, which a header value cannot hold). Public: serve's header parsers use it too.
pub fn trim_ows(mut s: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = s {
        s = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = s {
        s = rest;
    }
    s
}

/// A response's Content-Length value: 1*DIGIT, or a list of identical such values (RFC 9110 8.6 lets a
/// recipient accept `5, 5`). Signs, spaces inside, empty values, differing list members and
/// values past `u64::MAX` are all `None`.
pub(crate) fn parse_content_length(value: &[u8]) -> Option<u64> {
    let mut result = None;
    for element in value.split(|&b| b == b',') {
        let n = parse_digits(trim_ows(element))?;
        if result.is_some_and(|prev| prev != n) {
            return None;
        }
        result = Some(n);
    }
    result
}

/// 1*DIGIT as u64; `None` when empty, on any other byte, or on overflow.
pub fn parse_digits(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);

/// The high bit of each byte of `w` (all below 0x80) that is in `lo..=hi`, exactly: no byte
/// carries into the next.
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = w.wrapping_add(ONES * u64::from(0x80 - lo));
    let above_hi = w.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least_lo & !above_hi & HIGH
}

/// Whether every byte of a field value may be there, as both protocols read one: HTAB, visible
/// ASCII, space, and bytes from 0x80 (RFC 9110 5.5's `field-content`, obs-text allowed); no
/// other control byte and no DEL. The one rule for a field value's bytes, HTTP/1.1's parser and
/// HTTP/2's request checks alike (RFC 9113 8.2.1's NUL, CR and LF among the refused), so the two
/// cannot disagree on a value. Plain values (visible ASCII and space) are read 8 bytes at a time:
/// the check runs on every field of every request.
pub fn is_field_value(bytes: &[u8]) -> bool {
    let plain = |w: u64| w & HIGH == 0 && in_range(w, 0x20, 0x7e) == HIGH;
    if bytes.len() >= 8 {
        let load = |at: usize| {
            let w = &bytes[at..at + 8];
            u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
        };
        let last = bytes.len() - 8;
        let mut at = 0;
        let mut all_plain = true;
        while at < last && all_plain {
            all_plain = plain(load(at));
            at += 8;
        }
        if all_plain && plain(load(last)) {
            return true;
        }
    }
    bytes
        .iter()
        .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_accepts_digits_and_identical_lists() {
        assert_eq!(parse_content_length(b"0"), Some(0));
        assert_eq!(parse_content_length(b"12345"), Some(12345));
        assert_eq!(parse_content_length(b" 7 "), Some(7));
        assert_eq!(parse_content_length(b"5, 5"), Some(5));
        assert_eq!(
            parse_content_length(b"18446744073709551615"),
            Some(u64::MAX)
        );
    }

    #[test]
    fn content_length_rejects_signs_junk_overflow_and_differing_lists() {
        for bad in [
            &b""[..],
            b" ",
            b"+5",
            b"-1",
            b" 5x",
            b"5 5",
            b"0x10",
            b"5, 6",
            b"5,",
            b",5",
            b"18446744073709551616",
        ] {
            assert_eq!(parse_content_length(bad), None, "{:?}", bad);
        }
    }

    #[test]
    fn list_elements_are_trimmed_and_empties_skipped() {
        let mut seen = [&b""[..]; 4];
        let mut n = 0;
        for_each_element(b" close ,, Keep-Alive\t,", |t| {
            seen[n] = t;
            n += 1;
        });
        assert_eq!(&seen[..n], &[&b"close"[..], b"Keep-Alive"]);
        assert!(eq_token(b"Keep-Alive", b"keep-alive"));
    }

    #[test]
    fn a_field_value_holds_no_control_byte_but_htab() {
        for ok in [
            &b""[..],
            b"a",
            b"a\tb",
            b"caf\xc3\xa9",
            b"visible ascii and space ~!",
        ] {
            assert!(is_field_value(ok), "{ok:?}");
        }
        // NUL, CR and LF (RFC 9113 8.2.1) and every other control byte, DEL, at any place:
        // first, last, inside a run of plain bytes read 8 at a time.
        let plain = b"0123456789abcdefghij";
        for bad in (0u8..0x20).filter(|&b| b != b'\t').chain([0x7f]) {
            for at in [0, 7, 8, 13, plain.len() - 1] {
                let mut v = plain.to_vec();
                v[at] = bad;
                assert!(!is_field_value(&v), "{bad:#x} at {at}");
            }
        }
    }
}
