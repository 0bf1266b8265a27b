//! Request smuggling through the proxy: the published desync cases (CL.TE, TE.CL, TE.TE
//! variants, two lengths even equal ones, obs-fold, bare CR, a bare LF inside a field) sent to a proxy whose upstream records every
//! byte it receives. serve's request parser refuses each before anything reaches the upstream,
//! so no smuggled request (nor any byte of the refused one) arrives, and the connection closes.

use std::io::{Read, Write};

use crate::common::*;
use crate::proxy_support::*;

/// What a desynchronised upstream would read as a second request.
const SMUGGLED: &str = "GET /api/SMUGGLED HTTP/1.1\r\nHost: t\r\n\r\n";

fn cases() -> Vec<(&'static str, String)> {
    let post = "POST /api/a HTTP/1.1\r\nHost: t\r\n";
    let n = SMUGGLED.len();
    vec![
        (
            "CL.TE",
            format!("{post}Content-Length: {}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{SMUGGLED}", n + 5),
        ),
        (
            "TE.CL",
            format!("{post}Content-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{SMUGGLED}\r\n0\r\n\r\n", n),
        ),
        (
            "TE.TE: a second, unknown coding",
            format!("{post}Transfer-Encoding: chunked\r\nTransfer-Encoding: x\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE.TE: xchunked",
            format!("{post}Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE.TE: chunked, identity",
            format!("{post}Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE.TE: a space before the colon",
            format!("{post}Transfer-Encoding : chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE.TE: obs-fold",
            format!("{post}X-A: 1\r\n Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE.TE: a folded value",
            format!("{post}Transfer-Encoding:\r\n chunked\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "bare CR",
            format!("{post}X-A: 1\rTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "bare LF inside a field",
            format!("{post}X-A: 1\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "two lengths",
            format!("{post}Content-Length: 0\r\nContent-Length: {n}\r\n\r\n{SMUGGLED}"),
        ),
        (
            "a length list",
            format!("{post}Content-Length: 0, {n}\r\n\r\n{SMUGGLED}"),
        ),
        (
            "two equal lengths",
            format!("{post}Content-Length: {n}\r\nContent-Length: {n}\r\n\r\n{SMUGGLED}"),
        ),
        (
            "a list of one length twice",
            format!("{post}Content-Length: {n}, {n}\r\n\r\n{SMUGGLED}"),
        ),
        (
            "a signed length",
            format!("{post}Content-Length: +0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "a malformed chunk size",
            format!("{post}Transfer-Encoding: chunked\r\n\r\n0x0\r\n\r\n{SMUGGLED}"),
        ),
        (
            "TE in HTTP/1.0",
            format!("POST /api/a HTTP/1.0\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n{SMUGGLED}"),
        ),
    ]
}

#[test]
fn the_published_desync_cases_never_reach_the_upstream() {
    let up = Upstream::start(|_| ok("fine"));
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    for (name, request) in cases() {
        let mut s = connect(srv.addr);
        s.write_all(request.as_bytes()).unwrap();
        let mut got = Vec::new();
        let _ = s.read_to_end(&mut got);
        let text = String::from_utf8_lossy(&got);
        let status = text.get(9..12).unwrap_or("");
        assert!(
            status.starts_with('4') || status.starts_with('5'),
            "{name}: {text}"
        );
        assert_eq!(
            text.matches("HTTP/1.1 ").count(),
            1,
            "{name}: one response, then the close: {text}"
        );
    }
    // The proxy still works, and the upstream saw that request only.
    let mut s = connect(srv.addr);
    s.write_all(b"GET /api/after HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(String::from_utf8_lossy(&got).ends_with("fine"));
    let raw = up.raw_text();
    assert!(!raw.contains("SMUGGLED"), "{raw}");
    let seen: Vec<String> = (up.requests().iter())
        .map(|r| r.head.lines().next().unwrap().to_string())
        .collect();
    assert_eq!(seen, ["GET /api/after HTTP/1.1"]);
}

#[test]
fn a_chunked_body_holding_a_request_arrives_as_a_body_with_its_length() {
    let up = Upstream::start(|_| ok("fine"));
    let m = mount("/api/", &[up.url()], "");
    let srv = TestServer::start(|c| c.proxy.push(m));
    let mut s = connect(srv.addr);
    let req = format!(
        "POST /api/a HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n{:x}\r\n{SMUGGLED}\r\n0\r\n\r\n",
        SMUGGLED.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut got = Vec::new();
    let _ = s.read_to_end(&mut got);
    assert!(String::from_utf8_lossy(&got).ends_with("fine"));
    let reqs = up.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].body, SMUGGLED.as_bytes());
    assert_eq!(
        reqs[0].field("content-length"),
        Some(SMUGGLED.len().to_string().as_str())
    );
    assert_eq!(reqs[0].field("transfer-encoding"), None);
}
