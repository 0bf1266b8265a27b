//! The forwarding fields a proxy mount writes (`forwarding`) and the clients whose own it keeps
//! (`trusted`), as an upstream receives them.

use crate::common::*;
use crate::proxy_support::*;

const ASKED: &str = "GET /PREFIX/x HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 192.0.2.1\r\nForwarded: for=192.0.2.1;proto=https\r\nX-Forwarded-Proto: https\r\nConnection: close\r\n\r\n";

#[test]
fn a_trusted_client_s_fields_are_appended_to_and_an_untrusted_one_s_dropped() {
    let up = Upstream::start(|_| ok("seen"));
    let trusting = mount(
        "/trusting/",
        &[up.url()],
        "forwarding = \"both\"\ntrusted = [\"10.0.0.0/8\", \"127.0.0.0/8\"]",
    );
    let wary = mount(
        "/wary/",
        &[up.url()],
        "forwarding = \"forwarded\"\ntrusted = [\"10.0.0.0/8\", \"::1\"]",
    );
    let silent = mount("/silent/", &[up.url()], "forwarding = \"none\"");
    let srv = TestServer::start(|c| c.proxy.extend([trusting, wary, silent]));
    for prefix in ["trusting", "wary", "silent"] {
        let r = exchange(srv.addr, &ASKED.replace("PREFIX", prefix));
        assert_eq!((r.status, r.body.as_slice()), (200, &b"seen"[..]));
    }
    let got = up.requests();
    assert_eq!(got.len(), 3);
    // From 127.0.0.1, trusted: its fields first, the server's hop appended; its proto stands.
    let fields = |k: usize, name: &str| {
        let head = &got[k].head;
        let lines = head.lines().skip(1).filter_map(|l| l.split_once(": "));
        lines
            .filter(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(fields(0, "x-forwarded-for"), ["192.0.2.1, 127.0.0.1"]);
    assert_eq!(
        fields(0, "forwarded"),
        ["for=192.0.2.1;proto=https, for=127.0.0.1;proto=http;host=t"]
    );
    assert_eq!(fields(0, "x-forwarded-proto"), ["https"]);
    assert_eq!(fields(0, "x-forwarded-host"), ["t"]);
    // Not trusted: the client's dropped, only the server's `Forwarded`.
    assert_eq!(fields(1, "forwarded"), ["for=127.0.0.1;proto=http;host=t"]);
    for name in ["x-forwarded-for", "x-forwarded-proto", "x-forwarded-host"] {
        assert!(fields(1, name).is_empty(), "{name} in {}", got[1].head);
    }
    // None written, none passed.
    for name in [
        "forwarded",
        "x-forwarded-for",
        "x-forwarded-proto",
        "x-forwarded-host",
    ] {
        assert!(fields(2, name).is_empty(), "{name} in {}", got[2].head);
    }
    assert_eq!(srv.stop().proxy_requests, 3);
}

#[test]
fn a_trusted_client_s_malformed_forwarded_is_dropped_and_counted() {
    let up = Upstream::start(|_| ok("seen"));
    // Trusted by the IPv4-mapped form of its block: the client comes as 127.0.0.1.
    let m = mount(
        "/api/",
        &[up.url()],
        "forwarding = \"both\"\ntrusted = [\"::ffff:127.0.0.0/104\"]",
    );
    let srv = TestServer::start(|c| c.proxy.push(m));
    // An unclosed quote: passed as it came, it would swallow the server's element.
    let asked = "GET /api/x HTTP/1.1\r\nHost: t\r\nForwarded: for=\"[2001:db8::1]\r\n\
                 X-Forwarded-For: , 192.0.2.1,,\r\nConnection: close\r\n\r\n";
    let r = exchange(srv.addr, asked);
    assert_eq!((r.status, r.body.as_slice()), (200, &b"seen"[..]));
    let got = &up.requests()[0];
    assert_eq!(
        got.field("forwarded"),
        Some("for=127.0.0.1;proto=http;host=t"),
        "{}",
        got.head
    );
    assert_eq!(got.field("x-forwarded-for"), Some("192.0.2.1, 127.0.0.1"));
    let st = srv.stop();
    assert_eq!((st.proxy_requests, st.proxy_forwarded_malformed), (1, 1));
}

#[test]
fn a_request_without_host_names_no_forwarded_host() {
    // HTTP/1.0 needs no `Host`: the upstream is sent its own name as `Host` (a request line
    // needs one), but the client named no host, so no `X-Forwarded-Host` and no `host=` say
    // it did.
    let up = Upstream::start(|_| ok("seen"));
    let m = mount("/api/", &[up.url()], "forwarding = \"both\"");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let r = exchange(srv.addr, "GET /api/x HTTP/1.0\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"seen"[..]));
    let r = exchange(srv.addr, "GET /api/y HTTP/1.0\r\nHost: named\r\n\r\n");
    assert_eq!((r.status, r.body.as_slice()), (200, &b"seen"[..]));
    let got = up.requests();
    assert_eq!(got.len(), 2);
    let upstream = up.url();
    let own = upstream.trim_start_matches("http://").trim_end_matches('/');
    assert_eq!(got[0].field("host"), Some(own), "{}", got[0].head);
    assert_eq!(got[0].field("x-forwarded-host"), None, "{}", got[0].head);
    assert_eq!(
        got[0].field("forwarded"),
        Some("for=127.0.0.1;proto=http"),
        "{}",
        got[0].head
    );
    assert_eq!(got[0].field("x-forwarded-for"), Some("127.0.0.1"));
    // The same request naming its host: it is forwarded.
    assert_eq!(got[1].field("x-forwarded-host"), Some("named"));
    assert_eq!(
        got[1].field("forwarded"),
        Some("for=127.0.0.1;proto=http;host=named")
    );
    assert_eq!(srv.stop().proxy_requests, 2);
}
