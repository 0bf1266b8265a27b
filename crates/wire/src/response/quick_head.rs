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
use crate::text::trim_ows;

/// The head at the start of `buf` when it has the shape above: its version, status, length
/// and what its fields say of the framing.
#[inline]
pub(super) fn parse(buf: &[u8]) -> Option<(u8, u16, usize, FramingFields)> {
    let buf = &buf[..buf.len().min(MAX_RESPONSE_HEAD)];
    let nl = memchr::memchr(b'\n', buf)?;
    let line = buf[..nl].strip_suffix(b"\r")?;
    let [b'H', b'T', b'T', b'P', b'/', b'1', b'.', v @ (b'0' | b'1'), b' ', d1, d2, d3, rest @ ..] =
        line
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
    match rest {
        [] => {}
        [b' ', reason @ ..] if all_text(reason) => {}
        _ => return None,
    }
    let mut fields = FramingFields::default();
    let mut at = nl + 1;
    let mut n = 0;
    loop {
        let rest = &buf[at..];
        if rest.starts_with(b"\r\n") {
            return Some((v - b'0', status, at + 2, fields));
        }
        let nl = memchr::memchr(b'\n', rest)?;
        let line = rest[..nl].strip_suffix(b"\r")?;
        let colon = line.iter().position(|&b| !TOKEN[usize::from(b)])?;
        if colon == 0 || line[colon] != b':' {
            return None;
        }
        let value = &line[colon + 1..];
        n += 1;
        if n > MAX_RESPONSE_HEADERS || !all_text(value) {
            return None;
        }
        fields.field(&line[..colon], trim_ows(value));
        at += nl + 1;
    }
}

/// Whether every byte is HTAB, SP, VCHAR or obs-text (a header value's and a reason's bytes
/// for httparse); no early exit, so that it runs over many bytes at a time.
#[inline]
fn all_text(bytes: &[u8]) -> bool {
    bytes.iter().fold(true, |ok, &b| {
        ok & ((b == b'\t') | ((b >= b' ') & (b != 0x7f)))
    })
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
