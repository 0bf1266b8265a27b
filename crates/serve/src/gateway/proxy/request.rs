//! The request head sent upstream: HTTP/1.1 whatever the client spoke, the path unchanged, the
//! client's `Host` kept, the hop-by-hop fields taken out (RFC 9110 7.6.1: `Connection`, the
//! fields it names, `Keep-Alive`, `Proxy-Connection`, `TE`, `Transfer-Encoding`, `Upgrade`),
//! `Via` extended and the forwarding fields written by `forwarded.rs` (the client's own are passed
//! only from a trusted address; `X-Real-IP` and `True-Client-IP` never), so an upstream can trust
//! them. Nor are fields whose names hold an underscore (CGI, PHP and WSGI applications map
//! `X_Forwarded_For` to the same variable as `X-Forwarded-For`, as nginx's default refusal
//! knows) or `Proxy` (httpoxy: it becomes an application's `HTTP_PROXY`). `Expect` is the server's to
//! answer (it sends `100 Continue` itself); the body is always sent with `Content-Length` (a
//! chunked one is read whole first, as for a program).

use std::io::Write;

use wire::{Method, Request};

use super::forwarded::{self, Hop};
use super::named::Named;

use crate::gateway::asked::Asked;
use crate::gateway::upstream::Buffers;

/// What a proxied request sends: its head (without `Content-Length` and the empty line, which
/// wait for the body's length), written in the exchange's recycled buffers, and how to treat
/// it.
#[derive(Debug)]
pub(crate) struct Forward {
    pub mount: usize,
    /// The exchange's buffers; `out` holds the head.
    pub buffers: Buffers,
    /// The client said a length (so the upstream is told one, even 0).
    pub length_said: bool,
    /// RFC 9110 9.2.2: may be sent twice.
    pub idempotent: bool,
    pub is_head: bool,
    /// A trusted client's `Forwarded` broke RFC 7239's grammar and was dropped (counted in
    /// `proxy_forwarded_malformed` as the request starts).
    pub forwarded_malformed: bool,
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
    b"x-real-ip",
    b"true-client-ip",
    b"proxy",
    b"http2-settings",
];

fn dropped(name: &[u8]) -> bool {
    DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d))
}

/// The head of `req` for mount `mount`'s upstream, written into `buffers.out`.
pub(crate) fn forward<'a, F>(
    mount: usize,
    req: &Request<'_>,
    asked: Asked<'a, F>,
    hop: &Hop<'_>,
    mut buffers: Buffers,
) -> Forward
where
    F: Iterator<Item = (&'a [u8], &'a [u8])> + Clone,
{
    let fields = asked.fields;
    let named = Named::gather(fields.clone(), dropped);
    let host = req.host.unwrap_or(hop.default_host.as_bytes());
    buffers.head.clear();
    buffers.cgi.clear();
    let head = &mut buffers.out;
    head.clear();
    head.extend_from_slice(asked.method);
    head.push(b' ');
    head.extend_from_slice(req.target);
    head.extend_from_slice(b" HTTP/1.1\r\nHost: ");
    head.extend_from_slice(host);
    head.extend_from_slice(b"\r\n");
    let (mut cookie, mut via) = (false, false);
    for (name, value) in fields.clone() {
        cookie |= name.eq_ignore_ascii_case(b"cookie");
        via |= name.eq_ignore_ascii_case(b"via");
        let skip = name.first() == Some(&b':')
            || name.contains(&b'_')
            || dropped(name)
            || forwarded::is_forwarding(name)
            || named.lists(name, fields.clone());
        if !skip {
            field(head, name, value);
        }
    }
    if cookie {
        // HTTP/2 splits a Cookie into crumbs: one field again (RFC 9113 8.2.3).
        head.extend_from_slice(b"Cookie: ");
        join(head, fields.clone(), b"cookie", b"; ");
        head.extend_from_slice(b"\r\n");
    }
    let protocol = match asked.protocol {
        b"HTTP/1.0" => &b"1.0"[..],
        b"HTTP/1.1" => b"1.1",
        b"HTTP/3.0" => b"3",
        _ => b"2",
    };
    head.extend_from_slice(b"Via: ");
    if via {
        join(head, fields.clone(), b"via", b", ");
        head.extend_from_slice(b", ");
    }
    head.extend_from_slice(protocol);
    head.extend_from_slice(b" flint\r\n");
    // The host the client named, none when it named none (HTTP/1.0): the upstream's own name
    // in `Host` is only what an HTTP/1.1 request must carry, not a host the client asked for.
    let asked_host = req.host.unwrap_or_default();
    let forwarded_malformed = forwarded::write(head, fields, &named, hop, asked_host);
    Forward {
        mount,
        buffers,
        length_said: asked.content_length.is_some() || req.chunked,
        idempotent: matches!(
            asked.method,
            b"GET" | b"HEAD" | b"OPTIONS" | b"TRACE" | b"PUT" | b"DELETE"
        ),
        is_head: req.method == Method::Head,
        forwarded_malformed,
    }
}

/// The values of every field `name` of `fields`, joined by `sep`, onto `out`.
pub(super) fn join<'a>(
    out: &mut Vec<u8>,
    fields: impl Iterator<Item = (&'a [u8], &'a [u8])>,
    name: &[u8],
    sep: &[u8],
) {
    let values = fields.filter(|(n, _)| n.eq_ignore_ascii_case(name));
    for (k, (_, value)) in values.enumerate() {
        if k > 0 {
            out.extend_from_slice(sep);
        }
        out.extend_from_slice(value);
    }
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
        let head = &mut self.buffers.out;
        if body > 0 || self.length_said {
            // Written in place: no string made per request.
            let _ = write!(head, "Content-Length: {body}\r\n");
        }
        head.extend_from_slice(b"\r\n");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Forwarding;
    use crate::gateway::asked::asked_h1;

    /// A client at 10.0.0.7, not trusted, the default forwarding fields.
    fn hop(https: bool, default_host: &'static str) -> Hop<'static> {
        Hop {
            peer: [10, 0, 0, 7].into(),
            https,
            default_host,
            send: Forwarding::XForwarded,
            trusted: false,
        }
    }

    #[test]
    fn hop_by_hop_fields_go_and_the_proxy_s_own_come() {
        let text = b"POST /api/x?q=1 HTTP/1.1\r\nHost: example.com\r\nConnection: keep-alive, X-Secret\r\nX-Secret: 1\r\nKeep-Alive: 5\r\nTE: trailers\r\nUpgrade: h2c\r\nX-Forwarded-For: 6.6.6.6\r\nVia: 1.1 other\r\nCookie: a=1\r\nAccept: */*\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n";
        let limits = wire::RequestLimits::default();
        let req = wire::parse_request(text, &limits).unwrap().unwrap();
        let asked = asked_h1(&req, &text[..req.head_len]);
        let mut f = forward(0, &req, asked, &hop(true, "127.0.0.1:1"), Buffers::new());
        f.finish(3);
        let head = String::from_utf8(f.buffers.out).unwrap();
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
        let asked = asked_h1(&req, &text[..req.head_len]);
        let f = forward(0, &req, asked, &hop(false, "127.0.0.1:1"), Buffers::new());
        let head = String::from_utf8(f.buffers.out).unwrap();
        assert!(!head.contains("6.6.6.6"), "{head}");
        assert!(!head.contains("evil"), "{head}");
        assert!(head.contains("X-Kept: yes\r\n"), "{head}");
        assert!(head.contains("X-Forwarded-For: 10.0.0.7\r\n"), "{head}");
        assert!(f.idempotent);
    }

    /// The idempotent methods (RFC 9110 9.2.2) may be sent again when nothing came back.
    #[test]
    fn the_idempotent_methods_may_be_sent_again() {
        let limits = wire::RequestLimits::default();
        for method in ["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"] {
            let text = format!("{method} /api/ HTTP/1.1\r\nHost: h\r\n\r\n");
            let text = text.as_bytes();
            let req = wire::parse_request(text, &limits).unwrap().unwrap();
            let asked = asked_h1(&req, &text[..req.head_len]);
            let f = forward(0, &req, asked, &hop(false, "127.0.0.1:1"), Buffers::new());
            assert!(f.idempotent, "{method}");
        }
    }

    /// Every field the `Connection` fields name goes, however many they name (past the few
    /// kept in place, they are looked up again), and the rest stays.
    #[test]
    fn every_field_connection_names_goes_however_many() {
        let mut text = String::from("GET / HTTP/1.1\r\nHost: h\r\nConnection: a1, a2\r\n");
        text.push_str("Connection: a3,a4 , a5, a6, a7, a8, a9, a10, A11\r\n");
        for k in 1..=11 {
            text.push_str(&format!("a{k}: x\r\n"));
        }
        text.push_str("a12: kept\r\nCookie: a=1\r\nCookie: b=2\r\n\r\n");
        let limits = wire::RequestLimits::default();
        let req = wire::parse_request(text.as_bytes(), &limits)
            .unwrap()
            .unwrap();
        let asked = asked_h1(&req, &text.as_bytes()[..req.head_len]);
        let f = forward(0, &req, asked, &hop(false, "u"), Buffers::new());
        let head = String::from_utf8(f.buffers.out).unwrap();
        assert_eq!(
            head,
            "GET / HTTP/1.1\r\nHost: h\r\na12: kept\r\nCookie: a=1; b=2\r\nVia: 1.1 flint\r\n\
             X-Forwarded-For: 10.0.0.7\r\nX-Forwarded-Proto: http\r\nX-Forwarded-Host: h\r\n"
        );
    }
}
