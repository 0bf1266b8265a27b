//! Choosing between a file and its precompressed siblings by `Accept-Encoding` (RFC 9110 12.5.3).
//!
//! Only files that have a `.br` or `.gz` sibling ever get here, so the common request pays
//! nothing. The header is walked in place, no allocation. Rules:
//! - no header: identity (a client that says nothing may not decode anything);
//! - each coding's weight is its own `q`, else that of `*`, else 0; `x-gzip` is `gzip`;
//! - the acceptable (q > 0) compressed coding with the highest q wins, `br` over `gzip` on a tie
//!   (smaller for the same content), and over identity unless identity was given a higher `q`;
//! - when nothing is acceptable (`identity;q=0` with no sibling allowed), identity is sent anyway:
//!   RFC 9110 lets a server ignore the header rather than answer 406, and a body the client may
//!   reject beats an error page nobody reads.

use wire::trim_ows;

/// A representation of a file: the file itself or one of its precompressed siblings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// The file itself.
    Identity = 0,
    /// Its `.gz` sibling (`Content-Encoding: gzip`).
    Gzip = 1,
    /// Its `.br` sibling (`Content-Encoding: br`).
    Br = 2,
}

impl Coding {
    /// Every coding, in the order of their index (the cache's representation slots).
    pub const ALL: [Coding; 3] = [Coding::Identity, Coding::Gzip, Coding::Br];

    /// The `Content-Encoding` token (none for identity).
    pub fn token(self) -> Option<&'static str> {
        match self {
            Coding::Identity => None,
            Coding::Gzip => Some("gzip"),
            Coding::Br => Some("br"),
        }
    }

    /// The suffix of the sibling file holding this coding.
    pub fn suffix(self) -> &'static [u8] {
        match self {
            Coding::Identity => b"",
            Coding::Gzip => b".gz",
            Coding::Br => b".br",
        }
    }
}

/// Picks the representation to send. `gzip` / `br`: whether that sibling exists.
pub fn choose(accept_encoding: Option<&[u8]>, gzip: bool, br: bool) -> Coding {
    let Some(header) = accept_encoding else {
        return Coding::Identity;
    };
    // Weights in thousandths; None = not mentioned.
    let (mut q_br, mut q_gzip, mut q_identity, mut q_star) = (None, None, None, None);
    for element in header.split(|&b| b == b',') {
        let mut parts = element.split(|&b| b == b';');
        let coding = trim_ows(parts.next().unwrap_or(b""));
        if coding.is_empty() {
            continue;
        }
        let mut q = Some(1000u16);
        for param in parts {
            let param = trim_ows(param);
            if param.len() >= 2 && param[..2].eq_ignore_ascii_case(b"q=") {
                q = qvalue(&param[2..]);
            }
        }
        // An element with a malformed weight is ignored, as if not sent.
        let Some(q) = q else { continue };
        let slot = if coding.eq_ignore_ascii_case(b"br") {
            &mut q_br
        } else if coding.eq_ignore_ascii_case(b"gzip") || coding.eq_ignore_ascii_case(b"x-gzip") {
            &mut q_gzip
        } else if coding.eq_ignore_ascii_case(b"identity") {
            &mut q_identity
        } else if coding == b"*" {
            &mut q_star
        } else {
            continue;
        };
        *slot = Some(q);
    }
    let weight = |q: Option<u16>| q.or(q_star).unwrap_or(0);
    let br_q = if br { weight(q_br) } else { 0 };
    let gzip_q = if gzip { weight(q_gzip) } else { 0 };
    let (best, best_q) = if br_q >= gzip_q {
        (Coding::Br, br_q)
    } else {
        (Coding::Gzip, gzip_q)
    };
    if best_q == 0 {
        return Coding::Identity;
    }
    // Identity has no weight unless given one (itself or through `*`).
    match q_identity.or(q_star) {
        Some(identity_q) if identity_q > best_q => Coding::Identity,
        _ => best,
    }
}

/// `0`, `0.5`, `1`, `1.000` (RFC 9110 12.4.2) in thousandths; None if malformed.
fn qvalue(s: &[u8]) -> Option<u16> {
    let s = trim_ows(s);
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(dot) => (&s[..dot], &s[dot + 1..]),
        None => (s, &s[..0]),
    };
    if frac.len() > 3 || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut thousandths = 0u16;
    for i in 0..3 {
        thousandths = thousandths * 10 + frac.get(i).map_or(0, |&d| u16::from(d - b'0'));
    }
    match int {
        b"0" => Some(thousandths),
        b"1" if thousandths == 0 => Some(1000),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::Coding::*;
    use super::*;

    fn c(h: &str) -> Coding {
        choose(Some(h.as_bytes()), true, true)
    }

    #[test]
    fn br_is_preferred_over_gzip_when_both_are_acceptable() {
        assert_eq!(c("gzip, deflate, br"), Br);
        assert_eq!(c("br;q=0.9, gzip;q=0.9"), Br);
        assert_eq!(c("*"), Br);
    }

    #[test]
    fn q_values_rank_codings() {
        assert_eq!(c("br;q=0.5, gzip"), Gzip);
        assert_eq!(c("gzip;q=0.2"), Gzip);
        assert_eq!(c("x-gzip"), Gzip);
        assert_eq!(c("br;q=0, gzip;q=0"), Identity);
        assert_eq!(c("identity;q=1, gzip;q=0.5"), Identity);
        assert_eq!(c("deflate"), Identity);
        assert_eq!(c(""), Identity);
        assert_eq!(c("*;q=0.1, identity;q=0.5"), Identity);
        assert_eq!(c("*;q=0.5, br;q=0"), Gzip);
    }

    #[test]
    fn identity_q0_edge_cases_still_send_something() {
        assert_eq!(c("identity;q=0"), Identity);
        assert_eq!(c("identity;q=0, gzip"), Gzip);
        assert_eq!(c("*;q=0"), Identity);
        assert_eq!(c("gzip;q=nope, br;q=1.5"), Identity);
        assert_eq!(choose(None, true, true), Identity);
    }

    #[test]
    fn only_existing_siblings_are_chosen() {
        assert_eq!(choose(Some(b"br, gzip"), true, false), Gzip);
        assert_eq!(choose(Some(b"br"), true, false), Identity);
        assert_eq!(choose(Some(b"gzip"), false, true), Identity);
    }
}
