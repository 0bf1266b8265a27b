//! A reference reader of the chunked transfer coding (RFC 9112 section 7.1), written for clarity
//! over a whole buffer, to check `wire::BodyDecoder`'s incremental byte-at-a-time state machine.
//!
//! It implements the same grammar the decoder promises: hex size, then optional whitespace and
//! `;` extensions (any visible or obs-text byte, spaces and tabs) up to CRLF; data and CRLF; after
//! the zero-size chunk, trailer lines of non-control bytes each ending in CRLF, then an empty
//! line. It applies none of the decoder's length limits; it reports how close the input came to
//! them so the caller can tell a limit apart from a disagreement.

/// A complete chunked body as the reference reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunked {
    /// Bytes from the first size digit to the final LF, inclusive.
    pub consumed: usize,
    /// Sum of the chunk sizes.
    pub payload: u64,
    /// Longest run of bytes between a size's last digit and its CR.
    pub longest_ext: usize,
    /// Bytes of trailer section before the final empty line.
    pub trailer_bytes: usize,
}

/// Reads one chunked body from the start of `b`; `None` when it is malformed or incomplete.
pub fn read(b: &[u8]) -> Option<Chunked> {
    let mut pos = 0;
    let mut payload: u64 = 0;
    let mut longest_ext = 0;
    loop {
        let digits = b[pos..]
            .iter()
            .take_while(|c| c.is_ascii_hexdigit())
            .count();
        if digits == 0 {
            return None;
        }
        let hex = &b[pos..pos + digits];
        // Leading zeros do not count towards the 16 digits a u64 holds.
        let significant = &hex[hex.iter().position(|&c| c != b'0').unwrap_or(hex.len())..];
        if significant.len() > 16 {
            return None;
        }
        let size = significant.iter().fold(0u64, |n, &c| {
            n << 4 | (c as char).to_digit(16).unwrap() as u64
        });
        pos += digits;
        let cr = pos + b[pos..].iter().position(|&c| c == b'\r')?;
        let ext = &b[pos..cr];
        if !extension_ok(ext) {
            return None;
        }
        longest_ext = longest_ext.max(ext.len());
        if b.get(cr + 1) != Some(&b'\n') {
            return None;
        }
        pos = cr + 2;
        if size == 0 {
            break;
        }
        let data_end = pos.checked_add(usize::try_from(size).ok()?)?;
        if b.get(data_end..data_end.checked_add(2)?)? != b"\r\n" {
            return None;
        }
        payload = payload.checked_add(size)?;
        pos = data_end + 2;
    }
    let trailers_start = pos;
    loop {
        let lf_line = &b[pos..];
        let end = lf_line.iter().position(|&c| c == b'\n')?;
        let line = &lf_line[..end];
        let line = line.strip_suffix(b"\r")?;
        if line.is_empty() {
            return Some(Chunked {
                consumed: pos + end + 1,
                payload,
                longest_ext,
                trailer_bytes: pos - trailers_start,
            });
        }
        if line.iter().any(|&c| is_control(c)) {
            return None;
        }
        pos += end + 1;
    }
}

/// `*( BWS ";" ... )` as the decoder takes it: before the first `;` only spaces and tabs; from it
/// on, spaces, tabs, visible ASCII and obs-text.
fn extension_ok(ext: &[u8]) -> bool {
    let first_semicolon = ext.iter().position(|&c| c == b';').unwrap_or(ext.len());
    let (bws, rest) = ext.split_at(first_semicolon);
    bws.iter().all(|&c| c == b' ' || c == b'\t') && rest.iter().all(|&c| !is_control(c))
}

fn is_control(c: u8) -> bool {
    (c < b' ' && c != b'\t') || c == 0x7f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_sizes_extensions_and_trailers() {
        let body = b"5;name=\"v\"\r\nhello\r\n0 ; last\r\nX-Sum: 1\r\n\r\nNEXT";
        let c = read(body).expect("valid");
        assert_eq!(c.payload, 5);
        assert_eq!(c.consumed, body.len() - 4);
        assert_eq!(c.longest_ext, ";name=\"v\"".len());
        assert_eq!(c.trailer_bytes, "X-Sum: 1\r\n".len());
    }

    #[test]
    fn refuses_what_the_grammar_forbids() {
        for bad in [
            &b""[..],
            b"\r\n",
            b"x\r\n",
            b"5\r\nhell\r\n0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b"5 x\r\nhello\r\n0\r\n\r\n",
            b"0\r\nbad\x01\r\n\r\n",
            b"0\r\n\n",
            b"10000000000000000\r\n",
            b"0\r\n",
        ] {
            assert_eq!(read(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
        assert!(read(b"0000000000000000000a\r\n0123456789\r\n0\r\n\r\n").is_some());
    }
}
