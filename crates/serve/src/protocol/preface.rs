//! Telling HTTP/2 from HTTP/1.1 on a cleartext connection by its first bytes (RFC 9113 3.3:
//! "prior knowledge"; the client preface is the very first thing such a client sends).
//!
//! The preface, `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, was chosen so that an HTTP/1.1 server
//! refuses it (`PRI` is no method it serves, `HTTP/2.0` no version it speaks); read the other way,
//! no HTTP/1.1 request starts with it. So the first bytes decide: all 24 equal to the preface is
//! HTTP/2; a byte that differs is HTTP/1.1 (answered as before, a 505 for `PRI * HTTP/2.0` cut
//! short); fewer bytes than that, all matching so far (`P` could still be `POST`), wait for more.

/// The HTTP/2 client connection preface.
pub(crate) const PREFACE: &[u8; 24] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sniff {
    /// The whole preface is there.
    H2,
    /// A byte differs from the preface: HTTP/1.x (or garbage, for HTTP/1.1 to refuse).
    Http1,
    /// Every byte so far is the preface's: more are needed to tell.
    Wait,
}

/// What the first bytes of a connection say (`first` is not empty).
pub(crate) fn sniff(first: &[u8]) -> Sniff {
    let n = first.len().min(PREFACE.len());
    if first[..n] != PREFACE[..n] {
        Sniff::Http1
    } else if n == PREFACE.len() {
        Sniff::H2
    } else {
        Sniff::Wait
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_whole_preface_is_http2_and_any_prefix_of_it_waits() {
        assert_eq!(sniff(PREFACE), Sniff::H2);
        let mut with_frames = PREFACE.to_vec();
        with_frames.extend_from_slice(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
        assert_eq!(sniff(&with_frames), Sniff::H2);
        for n in 1..PREFACE.len() {
            assert_eq!(sniff(&PREFACE[..n]), Sniff::Wait, "{n} bytes");
        }
    }

    #[test]
    fn a_byte_off_the_preface_is_http1() {
        assert_eq!(sniff(b"GET / HTTP/1.1\r\n"), Sniff::Http1);
        assert_eq!(sniff(b"POST"), Sniff::Http1, "P then O: not the preface");
        assert_eq!(sniff(b"PRI * HTTP/2.0\r\n\r\n\r\n"), Sniff::Http1);
        assert_eq!(sniff(b"PUT"), Sniff::Http1);
    }
}
