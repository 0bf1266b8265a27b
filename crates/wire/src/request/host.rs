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
    let (host, port) = match value.first() {
        Some(b'[') => match value.iter().position(|&b| b == b']') {
            Some(end) => {
                if !is_ip_literal(&value[1..end]) {
                    return false;
                }
                (&value[..=end], &value[end + 1..])
            }
            None => return false,
        },
        // A reg-name holds no colon, so the first one starts the port.
        _ => match value.iter().position(|&b| b == b':') {
            Some(colon) => (&value[..colon], &value[colon..]),
            None => (value, &value[value.len()..]),
        },
    };
    let port_ok = match port {
        [] => true,
        // `port = *DIGIT`: "host:" is valid, and so is any run of digits.
        [b':', digits @ ..] => digits.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    port_ok && (host.first() == Some(&b'[') || is_reg_name(host))
}

/// `reg-name = *( unreserved / pct-encoded / sub-delims )`, an IPv4 address included; not empty,
/// and no empty label (a trailing dot, the root of the DNS, is allowed).
fn is_reg_name(host: &[u8]) -> bool {
    let name = host.strip_suffix(b".").unwrap_or(host);
    if name.is_empty() || name.starts_with(b".") {
        return false;
    }
    let mut i = 0;
    let mut prev = 0u8;
    while i < name.len() {
        let b = name[i];
        match b {
            b'%' => {
                let hex = |j: usize| name.get(j).is_some_and(u8::is_ascii_hexdigit);
                if !(hex(i + 1) && hex(i + 2)) {
                    return false;
                }
                i += 2;
            }
            b'.' if prev == b'.' => return false,
            _ if REG_NAME.0[b as usize] => {}
            _ => return false,
        }
        prev = b;
        i += 1;
    }
    true
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

/// `unreserved / sub-delims` as a table: a host is checked on every request.
struct Table([bool; 256]);

static REG_NAME: Table = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = is_unreserved(b as u8) || is_sub_delim(b as u8);
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
        ] {
            assert!(is_valid(ok.as_bytes()), "{ok}");
        }
    }

    #[test]
    fn what_nginx_refuses_is_invalid() {
        for bad in [
            "", "a b", "a/b", "../x", "..", ".", ".a", "a..b", "a\\b", "a\0b", "a\tb", "a:b",
            "a:80:90", "a:-1", "[::1", "::1", "[::1]x", "[::1]:x", "[zz::1]", "[v1.]", "[vx.a]",
            "a%zz", "a%4", "a@b", "a?b", "a#b", "a\"b", "<a>", "a\x7fb",
        ] {
            assert!(!is_valid(bad.as_bytes()), "{bad:?}");
        }
    }
}
