//! What names a gateway request in the error log, as nginx's `request: "GET /x HTTP/1.1"`:
//! its method, target and protocol, kept inline from its start (nothing allocated per
//! request; only a failure writes it), cut past [`LABEL_BYTES`] and escaped as the access log
//! escapes its request line.

use std::fmt;

/// The most of a request line kept (a longer target is cut, and said to be with `...`).
const LABEL_BYTES: usize = 200;

/// One request's line, for its failure's error-log line.
#[derive(Clone, Copy)]
pub(crate) struct RequestLabel {
    bytes: [u8; LABEL_BYTES],
    len: u8,
}

impl Default for RequestLabel {
    fn default() -> RequestLabel {
        RequestLabel {
            bytes: [0; LABEL_BYTES],
            len: 0,
        }
    }
}

impl RequestLabel {
    /// `method target protocol`, the target cut to what fits.
    pub fn new(method: &[u8], target: &[u8], protocol: &[u8]) -> RequestLabel {
        let mut l = RequestLabel::default();
        let fixed = method.len() + protocol.len() + 2;
        let room = LABEL_BYTES.saturating_sub(fixed + 3);
        let (target, cut) = match target.len() > room {
            true => (&target[..room], &b"..."[..]),
            false => (target, &b""[..]),
        };
        for part in [method, b" ", target, cut, b" ", protocol] {
            l.push(part);
        }
        l
    }

    fn push(&mut self, part: &[u8]) {
        let at = usize::from(self.len);
        let n = part.len().min(LABEL_BYTES - at);
        self.bytes[at..at + n].copy_from_slice(&part[..n]);
        self.len = (at + n) as u8;
    }

    fn bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// `request: "GET /x HTTP/1.1"`, escaped by the access log's rule (control bytes, non-ASCII,
/// `"` and `\` as `\xHH`). Only a failure's line is written, so the copy it escapes into is
/// no per-request cost.
impl fmt::Display for RequestLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut escaped = Vec::with_capacity(4 * LABEL_BYTES);
        crate::access_log::escape_into(&mut escaped, self.bytes());
        // Escaped, every byte is printable ASCII.
        let text = std::str::from_utf8(&escaped).map_err(|_| fmt::Error)?;
        write!(f, "request: \"{text}\"")
    }
}

impl fmt::Debug for RequestLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_line_is_kept_escaped_and_a_long_target_cut() {
        let l = RequestLabel::new(b"GET", b"/x?a=\"b\"\n", b"HTTP/1.1");
        assert_eq!(
            l.to_string(),
            r#"request: "GET /x?a=\x22b\x22\x0A HTTP/1.1""#
        );
        let long = vec![b'a'; 1000];
        let l = RequestLabel::new(b"POST", &long, b"HTTP/2.0");
        let s = l.to_string();
        assert!(s.ends_with("aaa... HTTP/2.0\""), "{s}");
        assert_eq!(s.len(), "request: \"\"".len() + LABEL_BYTES);
    }
}
