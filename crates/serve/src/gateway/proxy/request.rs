//! The request head sent upstream: HTTP/1.1 whatever the client spoke, the path unchanged, the
//! client's `Host` kept, the hop-by-hop fields taken out (RFC 9110 7.6.1: `Connection`, the
//! fields it names, `Keep-Alive`, `Proxy-Connection`, `TE`, `Transfer-Encoding`, `Upgrade`),
//! `Via` extended and `X-Forwarded-For`/`-Proto`/`-Host` set by the server: the client's own are
//! never passed (nor `Forwarded`, `X-Real-IP`, `True-Client-IP`), so an upstream can trust them.
//! Nor are fields whose names hold an underscore (CGI, PHP and WSGI applications map
//! `X_Forwarded_For` to the same variable as `X-Forwarded-For`, as nginx's default refusal
//! knows) or `Proxy` (httpoxy: it becomes an application's `HTTP_PROXY`). `Expect` is the server's to
//! answer (it sends `100 Continue` itself); the body is always sent with `Content-Length` (a
//! chunked one is read whole first, as for a program).

use std::io::Write;
use std::net::SocketAddr;

use wire::{Method, Request};

use crate::gateway::cgi::Asked;

/// What a proxied request sends: its head (without `Content-Length` and the empty line, which
/// wait for the body's length) and how to treat it.
#[derive(Debug)]
pub(crate) struct Forward {
    pub mount: usize,
    pub head: Vec<u8>,
    /// The client said a length (so the upstream is told one, even 0).
    pub length_said: bool,
    /// RFC 9110 9.2.2: may be sent twice.
    pub idempotent: bool,
    pub is_head: bool,
}

/// Fields never passed on: hop-by-hop, or the server's to set.
const DROPPED: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"te",
    b"transfer-encoding",
    b"upgrade",
    b"content-length",
    b"host",
    b"expect",
    b"via",
    b"cookie",
    b"forwarded",
    b"x-forwarded-for",
    b"x-forwarded-proto",
    b"x-forwarded-host",
    b"x-real-ip",
    b"true-client-ip",
    b"proxy",
    b"http2-settings",
];

/// The head of `req` for mount `mount`'s upstream.
pub(crate) fn forward<'a>(
    mount: usize,
    req: &Request<'_>,
    asked: Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])>>,
    peer: SocketAddr,
    https: bool,
    upstream_name: &str,
) -> Forward {
    let fields: Vec<(&[u8], &[u8])> = asked.fields.collect();
    let named = |name: &[u8]| {
        fields
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(b"connection"))
            .flat_map(|(_, v)| v.split(|&b| b == b','))
            .any(|t| wire::trim_ows(t).eq_ignore_ascii_case(name))
    };
    let host = req.host.unwrap_or(upstream_name.as_bytes());
    let mut head = Vec::with_capacity(512);
    head.extend_from_slice(asked.method);
    head.push(b' ');
    head.extend_from_slice(req.target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    head.extend_from_slice(host);
    head.extend_from_slice(b"\r\n");
    let (mut cookie, mut via) = (Vec::new(), Vec::new());
    for &(name, value) in &fields {
        if name.eq_ignore_ascii_case(b"cookie") {
            // HTTP/2 splits a Cookie into crumbs: one field again (RFC 9113 8.2.3).
            join(&mut cookie, value, b"; ");
        } else if name.eq_ignore_ascii_case(b"via") {
            join(&mut via, value, b", ");
        }
        let skip = name.first() == Some(&b':')
            || name.contains(&b'_')
            || DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d))
            || named(name);
        if !skip {
            field(&mut head, name, value);
        }
    }
    if !cookie.is_empty() {
        field(&mut head, b"Cookie", &cookie);
    }
    let protocol = match asked.protocol {
        b"HTTP/1.0" => &b"1.0"[..],
        b"HTTP/1.1" => b"1.1",
        _ => b"2",
    };
    head.extend_from_slice(b"Via: ");
    if !via.is_empty() {
        head.extend_from_slice(&via);
        head.extend_from_slice(b", ");
    }
    head.extend_from_slice(protocol);
    // Written in place: no string made per request.
    let _ = write!(head, " flint\r\nX-Forwarded-For: {}\r\n", peer.ip());
    let scheme: &[u8] = if https { b"https" } else { b"http" };
    field(&mut head, b"X-Forwarded-Proto", scheme);
    field(&mut head, b"X-Forwarded-Host", host);
    Forward {
        mount,
        head,
        length_said: asked.content_length.is_some() || req.chunked,
        idempotent: matches!(
            asked.method,
            b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PUT" | b"DELETE"
        ),
        is_head: req.method == Method::Head,
    }
}

fn join(list: &mut Vec<u8>, value: &[u8], sep: &[u8]) {
    if !list.is_empty() {
        list.extend_from_slice(sep);
    }
    list.extend_from_slice(value);
}

fn field(head: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    head.extend_from_slice(name);
    head.extend_from_slice(b": ");
    head.extend_from_slice(value);
    head.extend_from_slice(b"\r\n");
}

impl Forward {
    /// The head, ended: `Content-Length` when there is a body or the client said one.
    pub fn finish(&mut self, body: u64) {
        if body > 0 || self.length_said {
            field(
                &mut self.head,
                b"Content-Length",
                body.to_string().as_bytes(),
            );
        }
        self.head.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_fields_go_and_the_proxy_s_own_come() {
        let text = b"POST /api/x?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\nX-Forwarded-For: 6.6.6.6\r\nVia: 1.1 other\r\nCookie: a=1\r\nAccept: */*\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
        let limits = wire::RequestLimits::default();
        let req = wire::parse_request(text, &limits).unwrap().unwrap();
        let asked = crate::gateway::cgi::asked_h1(&req, &text[..req.head_len]);
        let peer: SocketAddr = "10.0.0.7:5555".parse().unwrap();
        let mut f = forward(0, &req, asked, peer, true, "127.0.0.1:1");
        f.finish(3);
        let head = String::from_utf8(f.head).unwrap();
        assert_eq!(
            head,
            "POST /api/x?q=1 HTTP/1.1\r\nHost: example.com\r\nAccept: */*\r\nCookie: a=1\r\n\
             Via: 1.1 other, 1.1 flint\r\nX-Forwarded-For: 10.0.0.7\r\nX-Forwarded-Proto: https\r\n\
             X-Forwarded-Host: example.com\r\nContent-Length: 3\r\n\r\n"
        );
        assert!(!f.idempotent);
    }

    /// Fields an upstream might read as the client's address or as a proxy setting, under any
    /// spelling a CGI-style application folds into the same variable, never pass.
    #[test]
    fn spoofable_fields_and_underscored_names_do_not_pass() {
        let text = b"GET /api/ HTTP/1.1\r\nHost: h\r\nX_Forwarded_For: 6.6.6.6\r\nX-Real-IP: 6.6.6.6\r\nTrue-Client-IP: 6.6.6.6\r\nProxy: http://evil:8080\r\nForwarded: for=6.6.6.6\r\nX-Kept: yes\r\n\r\n";
        let limits = wire::RequestLimits::default();
        let req = wire::parse_request(text, &limits).unwrap().unwrap();
        let asked = crate::gateway::cgi::asked_h1(&req, &text[..req.head_len]);
        let peer: SocketAddr = "10.0.0.7:5555".parse().unwrap();
        let f = forward(0, &req, asked, peer, false, "127.0.0.1:1");
        let head = String::from_utf8(f.head).unwrap();
        assert!(!head.contains("6.6.6.6"), "{head}");
        assert!(!head.contains("evil"), "{head}");
        assert!(head.contains("X-Kept: yes\r\n"), "{head}");
        assert!(head.contains("X-Forwarded-For: 10.0.0.7\r\n"), "{head}");
        assert!(f.idempotent);
    }
}
