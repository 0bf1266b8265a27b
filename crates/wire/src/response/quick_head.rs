//! The quick reading of a response head: the shape every server sends, read in one pass that
//! stores no field. It accepts a subset of what httparse accepts (httparse 1.10's rules, with
//! its default configuration), so that wherever it answers, httparse would have answered the
//! same; wherever it is unsure it says nothing and httparse reads the head.
//!
//! Accepted: `HTTP/1.0` or `HTTP/1.1`, one space, three digits, then CRLF or a space, a reason
//! of HTAB, SP, VCHAR or obs-text and CRLF; then fields `name: value` each ending in CRLF, a
//! name of token characters right before its colon, a value of HTAB, SP, VCHAR or obs-text; at
//! most [`MAX_RESPONSE_HEADERS`] fields; an empty line (CRLF), within [`MAX_RESPONSE_HEAD`]
//! bytes. Not here (httparse's): leading empty lines, bare LF line ends, anything invalid and a
//! head not yet whole.

use super::{FramingFields, MAX_RESPONSE_HEAD, MAX_RESPONSE_HEADERS};

/// The head at the start of `buf` when it has the shape above: its version, status, length
/// and what its fields say of the framing.
#[inline]
pub(super) fn parse(buf: &[u8]) -> Option<(u8, u16, usize, FramingFields)> {
    let buf = &buf[..buf.len().min(MAX_RESPONSE_HEAD)];
    let lf = text_line(buf, 0)?;
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', v @ (b'0' | b'1'), b' ', d1, d2, d3, rest @ ..] =
        &buf[..lf - 1]
    else {
        return None;
    };
    let digits = [*d1, *d2, *d3];
    if !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let status = digits
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    // The reason's bytes are text (`text_line`), as httparse wants them.
    if !matches!(rest, [] | [b' ', ..]) {
        return None;
    }
    let mut fields = FramingFields::default();
    let mut at = lf + 1;
    let mut n = 0;
    loop {
        if buf[at..].starts_with(b"\r\n") {
            return Some((v - b'0', status, at + 2, fields));
        }
        let name_len = buf[at..].iter().position(|&b| !TOKEN[usize::from(b)])?;
        let colon = at + name_len;
        if name_len == 0 || buf[colon] != b':' {
            return None;
        }
        let lf = text_line(buf, colon + 1)?;
        n += 1;
        if n > MAX_RESPONSE_HEADERS {
            return None;
        }
        fields.field(&buf[at..colon], &buf[colon + 1..lf - 1]);
        at = lf + 1;
    }
}

/// Where the line from `from` ends (its LF) when it is text (HTAB, SP, VCHAR or obs-text, a
/// header value's and a reason's bytes for httparse) ending in CRLF; `None` for any other
/// byte, a CR without its LF, or no LF in `buf`. Eight bytes at a time: a word with no control
/// byte and no DEL is passed at once, and only the byte that stops it is looked at.
#[inline]
fn text_line(buf: &[u8], from: usize) -> Option<usize> {
    const CONTROL: u64 = u64::from_ne_bytes([0xe0; 8]);
    const DEL: u64 = u64::from_ne_bytes([0x7f; 8]);
    let mut i = from;
    loop {
        let stop = match buf.get(i..i + 8) {
            Some(word) => {
                let w = u64::from_le_bytes(word.try_into().ok()?);
                // Bytes below 0x20 (no bit of 0xe0 set) and DEL.
                let special = zero_bytes(w & CONTROL) | zero_bytes(w ^ DEL);
                if special == 0 {
                    i += 8;
                    continue;
                }
                i + (special.trailing_zeros() / 8) as usize
            }
            None => i + buf[i..].iter().position(|&b| b < 0x20 || b == 0x7f)?,
        };
        match (buf[stop], buf.get(stop + 1)) {
            (b'\t', _) => i = stop + 1,
            (b'\r', Some(b'\n')) => return Some(stop + 1),
            _ => return None,
        }
    }
}

/// 0x80 in each byte of `w` that is zero, 0 in the others (exact: no carry crosses a byte).
#[inline]
fn zero_bytes(w: u64) -> u64 {
    const LOW7: u64 = u64::from_ne_bytes([0x7f; 8]);
    !(((w & LOW7) + LOW7) | w | LOW7)
}

/// RFC 9110's token characters, a header name's (httparse's table).
static TOKEN: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric()
            || matches!(
                c,
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
            );
        b += 1;
    }
    t
};
