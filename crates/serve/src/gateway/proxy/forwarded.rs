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

use super::named::Named;
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
/// `Connection` does not name), and the server's hop of the kinds `hop.send` names. A
/// client's list is written again member by member, empty members left out (`a, , b` is
/// `a, b`). Returns whether a trusted client's `Forwarded` broke RFC 7239's grammar: then
/// none of it is passed (an unclosed quote would swallow the server's own element, and a
/// chain with a hole in it says nothing an upstream can use), only the server's element.
/// `host` is the `Host` the client sent: empty (none sent, or empty) writes no
/// `X-Forwarded-Host` and no `host=` of the server's (a trusted client's `-Host` stands).
pub(super) fn write<'a>(
    head: &mut Vec<u8>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
    named: &Named<'a>,
    hop: &Hop<'_>,
    host: &[u8],
) -> bool {
    let kept =
        |name: &[u8]| hop.trusted && hop.send.writes(name) && !named.lists(name, fields.clone());
    let theirs =
        |name: &'static [u8]| (fields.clone()).filter(move |(n, _)| n.eq_ignore_ascii_case(name));
    let peer = hop.peer.to_canonical();
    let scheme: &[u8] = if hop.https { b"https" } else { b"http" };
    let ours = hop.send.x_forwarded();
    let xff = kept(b"x-forwarded-for") && members(theirs(b"x-forwarded-for"), |_| {});
    if xff || ours {
        head.extend_from_slice(b"X-Forwarded-For: ");
        if xff {
            join_members(head, theirs(b"x-forwarded-for"));
        }
        if ours {
            if xff {
                head.extend_from_slice(b", ");
            }
            // Written in place: no string made per request.
            address(head, peer);
        }
        head.extend_from_slice(b"\r\n");
    }
    let single: [(&'static [u8], &[u8], &[u8]); 2] = [
        (b"x-forwarded-proto", b"X-Forwarded-Proto", scheme),
        (b"x-forwarded-host", b"X-Forwarded-Host", host),
    ];
    for (name, spelt, value) in single {
        let kept = kept(name) && members(theirs(name), |_| {});
        if kept || (ours && !value.is_empty()) {
            head.extend_from_slice(spelt);
            head.extend_from_slice(b": ");
            match kept {
                true => join_members(head, theirs(name)),
                false => head.extend_from_slice(value),
            }
            head.extend_from_slice(b"\r\n");
        }
    }
    let ours = hop.send.forwarded();
    let (mut any, mut malformed) = (false, false);
    if kept(b"forwarded") {
        for (_, v) in theirs(b"forwarded") {
            malformed |= !elements(v, |_| any = true);
        }
    }
    let kept = any && !malformed;
    if kept || ours {
        head.extend_from_slice(b"Forwarded: ");
        if kept {
            let mut first = true;
            for (_, v) in theirs(b"forwarded") {
                elements(v, |e| {
                    if !std::mem::take(&mut first) {
                        head.extend_from_slice(b", ");
                    }
                    head.extend_from_slice(e);
                });
            }
        }
        if ours {
            if kept {
                head.extend_from_slice(b", ");
            }
            element(head, peer, scheme, host);
        }
        head.extend_from_slice(b"\r\n");
    }
    malformed
}

/// The members of comma-separated lists (`X-Forwarded-For: a, b`), each trimmed, the empty
/// ones skipped (RFC 9110 5.6.1), given to `each`; whether there was one.
fn members<'a>(
    values: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    mut each: impl FnMut(&'a [u8]),
) -> bool {
    let mut any = false;
    for (_, v) in values {
        for m in v.split(|&b| b == b',') {
            let m = m.trim_ascii();
            if !m.is_empty() {
                any = true;
                each(m);
            }
        }
    }
    any
}

/// [`members`] written onto `head`, joined by `, `.
fn join_members<'a>(head: &mut Vec<u8>, values: impl Iterator<Item = (&'a [u8], &'a [u8])>) {
    let mut first = true;
    members(values, |m| {
        if !std::mem::take(&mut first) {
            head.extend_from_slice(b", ");
        }
        head.extend_from_slice(m);
    });
}

/// A `Forwarded` field line by RFC 7239's grammar: a comma-separated list (whitespace around
/// the commas, empty members skipped) of `forwarded-element = [pair] *(";" [pair])`, a pair
/// `token "=" (token / quoted-string)`. Each element with a pair is given to `each`, as it was
/// written; false if the line breaks the grammar (what came before was given all the same).
fn elements<'a>(v: &'a [u8], mut each: impl FnMut(&'a [u8])) -> bool {
    let ows = |i: &mut usize| {
        while v.get(*i).is_some_and(|&b| b == b' ' || b == b'\t') {
            *i += 1;
        }
    };
    let mut i = 0;
    loop {
        ows(&mut i);
        let start = i;
        let mut pairs = false;
        loop {
            if v.get(i).is_some_and(|&b| is_tchar(b)) {
                let Some(end) = pair(v, i) else {
                    return false;
                };
                i = end;
                pairs = true;
            }
            match v.get(i) {
                Some(b';') => i += 1,
                _ => break,
            }
        }
        let end = i;
        ows(&mut i);
        if pairs {
            each(&v[start..end]);
        }
        match v.get(i) {
            None => return true,
            Some(b',') => i += 1,
            Some(_) => return false,
        }
    }
}

/// The end of the `token "=" (token / quoted-string)` at `v[i..]`, if it is one.
fn pair(v: &[u8], mut i: usize) -> Option<usize> {
    let token = |i: &mut usize| {
        let start = *i;
        while v.get(*i).is_some_and(|&b| is_tchar(b)) {
            *i += 1;
        }
        *i > start
    };
    if !token(&mut i) || v.get(i) != Some(&b'=') {
        return None;
    }
    i += 1;
    if v.get(i) != Some(&b'"') {
        return token(&mut i).then_some(i);
    }
    i += 1;
    loop {
        match *v.get(i)? {
            b'"' => return Some(i + 1),
            b'\\' if v.get(i + 1).is_some_and(|&b| in_quoted(b)) => i += 2,
            b if b != b'\\' && in_quoted(b) => i += 1,
            _ => return None,
        }
    }
}

/// Whether a quoted-string may hold byte `b` (RFC 9110 5.6.4: HTAB, SP, VCHAR, obs-text; `"`
/// and `\` only escaped).
fn in_quoted(b: u8) -> bool {
    b == b'\t' || (b' '..=b'~').contains(&b) || b >= 0x80
}

/// `peer` as text: an IPv4 address's four numbers written digit by digit (the formatter's
/// `Display` took a thousand instructions for them, on every proxied request), an IPv6
/// address through `Display`.
fn address(head: &mut Vec<u8>, peer: IpAddr) {
    let IpAddr::V4(ip) = peer else {
        let _ = write!(head, "{peer}");
        return;
    };
    for (i, n) in ip.octets().into_iter().enumerate() {
        if i > 0 {
            head.push(b'.');
        }
        if n >= 100 {
            head.push(b'0' + n / 100);
        }
        if n >= 10 {
            head.push(b'0' + n / 10 % 10);
        }
        head.push(b'0' + n % 10);
    }
}

/// One `Forwarded` element (RFC 7239 4): `for=192.0.2.1;proto=http;host=example.com`, an IPv6
/// address bracketed and quoted (`for="[2001:db8::1]"`), a value that is not a token (a host
/// with a port, an IPv6 literal) quoted. A host no quoted-string can hold (empty, or with a
/// control byte) is left out: the element stays well formed.
fn element(head: &mut Vec<u8>, peer: IpAddr, scheme: &[u8], host: &[u8]) {
    // Written in place: no string made per request.
    match peer {
        IpAddr::V4(_) => {
            head.extend_from_slice(b"for=");
            address(head, peer);
        }
        IpAddr::V6(ip) => drop(write!(head, "for=\"[{ip}]\"")),
    }
    head.extend_from_slice(b";proto=");
    head.extend_from_slice(scheme);
    if !host.is_empty() && host.iter().all(|&b| in_quoted(b)) {
        head.extend_from_slice(b";host=");
        value(head, host);
    }
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
        written_and(fields, hop, host).0
    }

    /// The fields written, and whether a trusted client's `Forwarded` was dropped as malformed.
    fn written_and(
        fields: &[(&'static str, &'static str)],
        hop: Hop<'_>,
        host: &str,
    ) -> (String, bool) {
        let fields = fields.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        let named = Named::gather(fields.clone(), |_| false);
        let mut head = Vec::new();
        let malformed = write(&mut head, fields, &named, &hop, host.as_bytes());
        (String::from_utf8(head).unwrap(), malformed)
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
        // No host named (HTTP/1.0 without `Host`): none said, a trusted client's stands.
        assert_eq!(
            written(CLIENTS, hop("10.0.0.7", Forwarding::XForwarded, false), ""),
            "X-Forwarded-For: 10.0.0.7\r\nX-Forwarded-Proto: http\r\n"
        );
        let theirs = [("X-Forwarded-Host", "front.example")];
        let got = written(&theirs, hop("10.0.0.7", Forwarding::XForwarded, true), "");
        assert!(
            got.ends_with("X-Forwarded-Host: front.example\r\n"),
            "{got}"
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

    #[test]
    fn a_trusted_client_s_malformed_forwarded_is_dropped_and_ours_written_alone() {
        let trusted = hop("10.0.0.7", Forwarding::Forwarded, true);
        let ours = "Forwarded: for=10.0.0.7;proto=http;host=h\r\n";
        for bad in [
            // An unclosed quote would swallow the server's element appended after it.
            "for=\"[2001:db8::1]",
            "for=192.0.2.1;proto",
            "for=192.0.2.1 ;proto=http",
            "for=192.0.2.1;by=\"a\\",
            "=192.0.2.1",
            "for=192.0.2.1 for=192.0.2.2",
            "for=\"a\u{7f}\"",
        ] {
            let (got, malformed) = written_and(&[("Forwarded", bad)], trusted, "h");
            assert_eq!((got.as_str(), malformed), (ours, true), "{bad:?}");
        }
        // One malformed line drops the client's chain whole: a chain with a hole in it says
        // nothing an upstream can use.
        let fields = &[
            ("Forwarded", "for=192.0.2.1"),
            ("Forwarded", "for=\"unclosed"),
        ];
        assert_eq!(written_and(fields, trusted, "h"), (ours.to_string(), true));
        // An untrusted client's is dropped unread, not counted.
        let untrusted = hop("10.0.0.7", Forwarding::Forwarded, false);
        assert_eq!(
            written_and(&[("Forwarded", "for=\"unclosed")], untrusted, "h"),
            (ours.to_string(), false)
        );
    }

    #[test]
    fn a_trusted_client_s_lists_are_written_again_without_empty_members() {
        let fields = &[
            (
                "Forwarded",
                " , for=192.0.2.1;proto=https ,,for=\"[2001:db8::2]\";by=\"a\\\"b\" ,",
            ),
            ("Forwarded", ""),
            ("Forwarded", ";;, for=198.51.100.1"),
            ("X-Forwarded-For", ", 192.0.2.1 ,, "),
            ("X-Forwarded-For", ""),
            ("X-Forwarded-For", "198.51.100.7"),
            ("X-Forwarded-Proto", " , "),
        ];
        let (got, malformed) = written_and(fields, hop("10.0.0.7", Forwarding::Both, true), "h");
        assert!(!malformed);
        assert_eq!(
            got,
            "X-Forwarded-For: 192.0.2.1, 198.51.100.7, 10.0.0.7\r\nX-Forwarded-Proto: http\r\n\
             X-Forwarded-Host: h\r\nForwarded: for=192.0.2.1;proto=https, \
             for=\"[2001:db8::2]\";by=\"a\\\"b\", for=198.51.100.1, \
             for=10.0.0.7;proto=http;host=h\r\n"
        );
        // Nothing but empty members: as if the client had sent none.
        let fields = &[("X-Forwarded-For", " ,, "), ("Forwarded", " , ")];
        let got = written(fields, hop("10.0.0.7", Forwarding::Both, true), "h");
        assert!(got.starts_with("X-Forwarded-For: 10.0.0.7\r\n"), "{got}");
        assert!(
            got.ends_with("\r\nForwarded: for=10.0.0.7;proto=http;host=h\r\n"),
            "{got}"
        );
    }

    #[test]
    fn the_host_of_our_element_is_a_token_a_quoted_string_or_left_out() {
        let ours = |host: &str| written(&[], hop("192.0.2.9", Forwarding::Forwarded, false), host);
        assert_eq!(
            ours("ex.com"),
            "Forwarded: for=192.0.2.9;proto=http;host=ex.com\r\n"
        );
        assert_eq!(
            ours("[2001:db8::1]:8443"),
            "Forwarded: for=192.0.2.9;proto=http;host=\"[2001:db8::1]:8443\"\r\n"
        );
        // No host to say (an empty `Host`), or one a quoted-string cannot hold: no `host=`,
        // the element well formed all the same.
        assert_eq!(ours(""), "Forwarded: for=192.0.2.9;proto=http\r\n");
        assert_eq!(ours("a\u{1}b"), "Forwarded: for=192.0.2.9;proto=http\r\n");
        for host in ["ex.com", "[2001:db8::1]:8443", "", "a\"b"] {
            let line = ours(host);
            let value = line.strip_prefix("Forwarded: ").unwrap().trim_end();
            assert!(elements(value.as_bytes(), |_| {}), "{line:?}");
        }
    }

    #[test]
    fn an_ipv4_address_is_written_as_its_display_writes_it() {
        let mut out = Vec::new();
        for n in 0..=255u8 {
            for ip in [
                [n, 0, 0, 1],
                [127, n, 9, 10],
                [10, 99, n, 100],
                [255, 254, 200, n],
            ] {
                let ip = IpAddr::from(ip);
                out.clear();
                address(&mut out, ip);
                assert_eq!(out, ip.to_string().as_bytes());
            }
        }
        let v6: IpAddr = "2001:db8::1".parse().unwrap();
        out.clear();
        address(&mut out, v6);
        assert_eq!(out, b"2001:db8::1");
    }
}
