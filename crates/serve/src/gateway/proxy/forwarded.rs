//! The forwarding fields of a proxied request: who asked, over what, for which host. The mount
//! says which kinds the server writes (`X-Forwarded-For`/`-Proto`/`-Host`, RFC 7239's
//! `Forwarded`, both or none) and which clients are other proxies whose own fields of those
//! kinds are kept: theirs come first, the server's hop appended (`X-Forwarded-For: 192.0.2.1,
//! 10.0.0.2`), or, for the single-valued `-Proto` and `-Host`, theirs stand (they saw the
//! original request). A kind the server does not write is not passed either, from anyone: a
//! chain without this server's hop would let an upstream that counts hops from the right take
//! an address the client chose. So an upstream can trust what it gets.
//! Written into the request head's recycled buffer: nothing allocated.

use std::io::Write;
use std::net::IpAddr;

use super::request::{join, Named};
use crate::config::Forwarding;

/// The client side of a proxied request.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Hop<'h> {
    pub peer: IpAddr,
    pub https: bool,
    /// The `Host` of a request that has none (the upstream's).
    pub default_host: &'h str,
    pub send: Forwarding,
    /// The client is a proxy the mount trusts: its forwarding fields are kept.
    pub trusted: bool,
}

/// The forwarding fields, a client's own never passed as they came.
const FIELDS: &[&[u8]] = &[
    b"forwarded",
    b"x-forwarded-for",
    b"x-forwarded-proto",
    b"x-forwarded-host",
];

pub(super) fn is_forwarding(name: &[u8]) -> bool {
    FIELDS.iter().any(|f| name.eq_ignore_ascii_case(f))
}

/// Writes the forwarding fields onto `head`: a trusted client's (those of `fields` its
/// `Connection` does not name), and the server's hop of the kinds `hop.send` names.
pub(super) fn write<'a>(
    head: &mut Vec<u8>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    named: &Named<'a>,
    hop: &Hop<'_>,
    host: &[u8],
) {
    let kept = |name: &[u8]| {
        hop.trusted
            && hop.send.writes(name)
            && !named.lists(name, fields.clone())
            && fields
                .clone()
                .any(|(n, v)| n.eq_ignore_ascii_case(name) && !v.is_empty())
    };
    let peer = hop.peer.to_canonical();
    let scheme: &[u8] = if hop.https { b"https" } else { b"http" };
    let ours = hop.send.x_forwarded();
    let xff = kept(b"x-forwarded-for");
    if xff || ours {
        head.extend_from_slice(b"X-Forwarded-For: ");
        if xff {
            join(head, fields.clone(), b"x-forwarded-for", b", ");
        }
        if ours {
            if xff {
                head.extend_from_slice(b", ");
            }
            // Written in place: no string made per request.
            let _ = write!(head, "{peer}");
        }
        head.extend_from_slice(b"\r\n");
    }
    let single: [(&[u8], &[u8], &[u8]); 2] = [
        (b"x-forwarded-proto", b"X-Forwarded-Proto", scheme),
        (b"x-forwarded-host", b"X-Forwarded-Host", host),
    ];
    for (name, spelt, value) in single {
        let theirs = kept(name);
        if theirs || ours {
            head.extend_from_slice(spelt);
            head.extend_from_slice(b": ");
            match theirs {
                true => join(head, fields.clone(), name, b", "),
                false => head.extend_from_slice(value),
            }
            head.extend_from_slice(b"\r\n");
        }
    }
    let ours = hop.send.forwarded();
    let theirs = kept(b"forwarded");
    if theirs || ours {
        head.extend_from_slice(b"Forwarded: ");
        if theirs {
            join(head, fields, b"forwarded", b", ");
        }
        if ours {
            if theirs {
                head.extend_from_slice(b", ");
            }
            element(head, peer, scheme, host);
        }
        head.extend_from_slice(b"\r\n");
    }
}

/// One `Forwarded` element (RFC 7239 4): `for=192.0.2.1;proto=http;host=example.com`, an IPv6
/// address bracketed and quoted (`for="[2001:db8::1]"`), a value that is not a token (a host
/// with a port) quoted.
fn element(head: &mut Vec<u8>, peer: IpAddr, scheme: &[u8], host: &[u8]) {
    // Written in place: no string made per request.
    let _ = match peer {
        IpAddr::V4(ip) => write!(head, "for={ip}"),
        IpAddr::V6(ip) => write!(head, "for=\"[{ip}]\""),
    };
    head.extend_from_slice(b";proto=");
    head.extend_from_slice(scheme);
    head.extend_from_slice(b";host=");
    value(head, host);
}

/// A token as it is, anything else as a quoted-string (RFC 9110 5.6.4: `"` and `\` escaped).
fn value(head: &mut Vec<u8>, v: &[u8]) {
    if !v.is_empty() && v.iter().all(|&b| is_tchar(b)) {
        head.extend_from_slice(v);
        return;
    }
    head.push(b'"');
    for &b in v {
        if b == b'"' || b == b'\\' {
            head.push(b'\\');
        }
        head.push(b);
    }
    head.push(b'"');
}

fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(fields: &[(&'static str, &'static str)], hop: Hop<'_>, host: &str) -> String {
        let fields = fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        let named = Named::gather(fields.clone(), |_| false);
        let mut head = Vec::new();
        write(&mut head, fields, &named, &hop, host.as_bytes());
        String::from_utf8(head).unwrap()
    }

    fn hop(peer: &str, send: Forwarding, trusted: bool) -> Hop<'static> {
        Hop {
            peer: peer.parse().unwrap(),
            https: false,
            default_host: "up",
            send,
            trusted,
        }
    }

    const CLIENTS: &[(&str, &str)] = &[
        ("X-Forwarded-For", "192.0.2.1"),
        ("x-forwarded-for", "198.51.100.7"),
        ("X-Forwarded-Proto", "https"),
        ("Forwarded", "for=192.0.2.1;proto=https"),
    ];

    #[test]
    fn the_default_writes_x_forwarded_and_drops_an_untrusted_client_s() {
        let got = written(CLIENTS, hop("10.0.0.7", Forwarding::XForwarded, false), "h");
        assert_eq!(
            got,
            "X-Forwarded-For: 10.0.0.7\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h\r\n"
        );
        assert_eq!(
            written(CLIENTS, hop("10.0.0.7", Forwarding::None, false), "h"),
            ""
        );
    }

    #[test]
    fn forwarded_elements_quote_ipv6_and_non_tokens() {
        let got = written(
            &[],
            hop("2001:db8::1", Forwarding::Forwarded, false),
            "h:8080",
        );
        assert_eq!(
            got,
            "Forwarded: for=\"[2001:db8::1]\";proto=http;host=\"h:8080\"\r\n"
        );
        // An IPv4 client on an IPv6 socket is named by its IPv4 address.
        let got = written(
            &[],
            hop("::ffff:10.1.2.3", Forwarding::Both, false),
            "ex.com",
        );
        assert_eq!(
            got,
            "X-Forwarded-For: 10.1.2.3\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: ex.com\r\n\
             Forwarded: for=10.1.2.3;proto=http;host=ex.com\r\n"
        );
        let mut quoted = Vec::new();
        value(&mut quoted, b"a\"b\\c");
        assert_eq!(quoted, b"\"a\\\"b\\\\c\"");
    }

    #[test]
    fn a_trusted_client_s_fields_are_kept_and_appended_to() {
        let got = written(CLIENTS, hop("10.0.0.7", Forwarding::Both, true), "h");
        assert_eq!(
            got,
            "X-Forwarded-For: 192.0.2.1, 198.51.100.7, 10.0.0.7\r\nX-Forwarded-Proto: https\r\n\
             X-Forwarded-Host: h\r\nForwarded: for=192.0.2.1;proto=https, \
             for=10.0.0.7;proto=http;host=h\r\n"
        );
        // A kind the server does not write is not passed, even from a trusted client: its
        // chain would lack this server's hop.
        let got = written(CLIENTS, hop("10.0.0.7", Forwarding::None, true), "h");
        assert_eq!(got, "");
        let got = written(CLIENTS, hop("10.0.0.7", Forwarding::XForwarded, true), "h");
        assert_eq!(
            got,
            "X-Forwarded-For: 192.0.2.1, 198.51.100.7, 10.0.0.7\r\nX-Forwarded-Proto: https\r\n\
             X-Forwarded-Host: h\r\n"
        );
    }

    #[test]
    fn a_forwarding_field_the_connection_names_is_hop_by_hop_even_from_a_trusted_client() {
        let fields = &[
            ("Connection", "X-Forwarded-For"),
            ("X-Forwarded-For", "192.0.2.1"),
        ];
        let got = written(fields, hop("10.0.0.7", Forwarding::XForwarded, true), "h");
        assert!(got.starts_with("X-Forwarded-For: 10.0.0.7\r\n"), "{got}");
    }
}
