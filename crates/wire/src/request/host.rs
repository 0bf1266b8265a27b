//! The Host field's value: `uri-host [ ":" port ]` (RFC 9110 7.2), with `uri-host` as RFC 3986
//! 3.2.2 defines it. RFC 9112 3.2 makes an invalid one a 400.
//!
//! Why a static server checks a value it does not route on: whatever consumes the Host later (an
//! access log, a redirect, a proxy behind or in front) should never see a host with a space, a
//! slash or `..` in it. nginx refuses the same values (`a b`, `a/b`, `../x`, an empty host); on
//! top of RFC 3986 it refuses an empty label (`a..b`), and so does this.

use std::net::Ipv6Addr;

/// Whether `value` (optional whitespace already trimmed) is a valid Host value.
pub(super) fn is_valid(value: &[u8]) -> bool {
    if value.first() == Some(&b'[') {
        let Some(end) = value.iter().position(|&b| b == b']') else {
            return false;
        };
        return is_ip_literal(&value[1..end]) && is_port(&value[end + 1..]);
    }
    // `reg-name [ ":" port ]` in one pass (a host is checked on every request): a reg-name holds
    // no colon, so the first one starts the port. `reg-name = *( unreserved / pct-encoded /
    // sub-delims )`, an IPv4 address included; not empty, and no empty label (a trailing dot,
    // the root of the DNS, is allowed).
    let mut i = 0;
    let mut prev_dot = true;
    // Where the first empty label ends: a dot that starts the host or follows a dot.
    let mut empty_label = usize::MAX;
    while i < value.len() {
        match HOST.0[value[i] as usize] {
            Class::Name => prev_dot = false,
            Class::Dot => {
                if prev_dot && empty_label == usize::MAX {
                    empty_label = i;
                }
                prev_dot = true;
            }
            Class::Percent => {
                let hex = |j: usize| value.get(j).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 2;
                prev_dot = false;
            }
            Class::Colon => break,
            Class::Other => return false,
        }
        i += 1;
    }
    let (host, port) = value.split_at(i);
    // The name is the host without its one trailing dot: that dot ends no empty label.
    let name_len = host.len() - usize::from(host.last() == Some(&b'.'));
    name_len != 0 && empty_label >= name_len && is_port(port)
}

/// The last Host value (as received, before trimming) that passed both its checks, the syntax
/// of a field value and [`is_valid`]: a connection's requests mostly carry the same one (an
/// HTTP/2 client sends one `:authority` on every stream), so one comparison stands for the scans.
/// Kept in a fixed buffer, not allocated; a longer value is checked each time.
#[derive(Clone)]
pub struct PassedHost {
    bytes: [u8; PassedHost::CAP],
    len: u8,
}

impl PassedHost {
    /// The longest value kept: `[2001:db8:...:7]:65535` and most names fit.
    pub const CAP: usize = 64;

    /// Whether `value` is the one that passed last (never an empty value: none is kept yet).
    pub(super) fn is(&self, value: &[u8]) -> bool {
        self.len != 0 && value == &self.bytes[..usize::from(self.len)]
    }

    /// Keeps `value`, which just passed, if it fits.
    pub(super) fn keep(&mut self, value: &[u8]) {
        if let Some(to) = self.bytes.get_mut(..value.len()) {
            to.copy_from_slice(value);
            self.len = value.len() as u8;
        }
    }
}

impl Default for PassedHost {
    fn default() -> Self {
        PassedHost {
            bytes: [0; PassedHost::CAP],
            len: 0,
        }
    }
}

impl std::fmt::Debug for PassedHost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kept = &self.bytes[..usize::from(self.len)];
        write!(f, "PassedHost({:?})", String::from_utf8_lossy(kept))
    }
}

/// `[ ":" port ]` with `port = *DIGIT`: "host:" is valid, and so is any run of digits.
fn is_port(port: &[u8]) -> bool {
    match port {
        [] => true,
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    }
}

/// `IP-literal = "[" ( IPv6address / IPvFuture ) "]"`, without its brackets.
fn is_ip_literal(inner: &[u8]) -> bool {
    match inner {
        // IPvFuture = "v" 1*HEXDIG "." 1*( unreserved / sub-delims / ":" )
        [b'v' | b'V', rest @ ..] => {
            let Some(dot) = rest.iter().position(|&b| b == b'.') else {
                return false;
            };
            let (version, tail) = (&rest[..dot], &rest[dot + 1..]);
            !version.is_empty()
                && version.iter().all(u8::is_ascii_hexdigit)
                && !tail.is_empty()
                && tail
                    .iter()
                    .all(|&b| is_unreserved(b) || is_sub_delim(b) || b == b':')
        }
        // std's parser follows RFC 4291 2.2, the grammar RFC 3986 copies; it does not allocate.
        _ => std::str::from_utf8(inner).is_ok_and(|s| s.parse::<Ipv6Addr>().is_ok()),
    }
}

/// What a byte is to a reg-name and its port, as a table: one load a byte.
#[derive(Clone, Copy)]
enum Class {
    /// `unreserved / sub-delims` but the dot.
    Name,
    Dot,
    Percent,
    Colon,
    Other,
}

struct Table([Class; 256]);

static HOST: Table = {
    let mut table = [Class::Other; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'.' => Class::Dot,
            b'%' => Class::Percent,
            b':' => Class::Colon,
            c if is_unreserved(c) || is_sub_delim(c) => Class::Name,
            _ => Class::Other,
        };
        b += 1;
    }
    Table(table)
};

const fn is_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

const fn is_sub_delim(b: u8) -> bool {
    matches!(
        b,
        b'!' | b'$' | b'&' | b'\'' | b'(' | b')' | b'*' | b'+' | b',' | b';' | b'='
    )
}

#[cfg(test)]
mod tests {
    use super::is_valid;

    #[test]
    fn names_addresses_and_ports_are_valid() {
        for ok in [
            "example.com",
            "example.com.",
            "EXAMPLE.com:8080",
            "localhost:",
            "127.0.0.1",
            "127.0.0.1:80",
            "[::1]",
            "[::1]:8080",
            "[2001:db8::7]",
            "[::ffff:192.0.2.1]:443",
            "[v1.fe80::a+en1]",
            "my_host-1~x",
            "caf%C3%A9.example",
            "a!$&'()*+,;=b",
            "example.com.:443",
            "%41.b:",
        ] {
            assert!(is_valid(ok.as_bytes()), "{ok}");
        }
    }

    #[test]
    fn what_nginx_refuses_is_invalid() {
        for bad in [
            "", "a b", "a/b", "../x", "..", ".", ".a", "a..b", "a\\b", "a\0b", "a\tb", "a:b",
            "a:80:90", "a:-1", "[::1", "::1", "[::1]x", "[::1]:x", "[zz::1]", "[v1.]", "[vx.a]",
            "a%zz", "a%4", ".:80", "a..b:80", "a%4.", "a@b", "a?b", "a#b", "a\"b", "<a>", "a\x7fb",
        ] {
            assert!(!is_valid(bad.as_bytes()), "{bad:?}");
        }
    }
}
