//! `flint serve`'s answers to the requests of docs/serve.md's "HTTP semantics" table, and nginx's
//! beside them when nginx is installed: the same where the table says the same, and where they
//! differ, flint's answer is the one RFC 9110 / RFC 9112 ask for.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::Duration;

use lab_peers::{Peer, PeerKind, PeerSpec};

/// `(what, request, flint's status, nginx's status)`; `{etag}` is each server's own ETag of
/// /f.txt, `{past}` a date before the file was written. A table, laid out as one.
#[rustfmt::skip]
const CASES: &[(&str, &str, u16, u16)] = &[
    ("If-Match no match", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: \"nope\"\r\n\r\n", 412, 412),
    ("If-Match *", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: *\r\n\r\n", 200, 200),
    ("If-Match etag", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: {etag}\r\n\r\n", 200, 200),
    ("If-Match weak", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: W/{etag}\r\n\r\n", 412, 412),
    ("Range + IUS past", "GET /f.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=0-1\r\nIf-Unmodified-Since: {past}\r\n\r\n", 412, 412),
    ("IUS past", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Unmodified-Since: {past}\r\n\r\n", 412, 412),
    ("IUS garbage", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Unmodified-Since: garbage\r\n\r\n", 200, 412),
    ("If-Match * + IUS past", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: *\r\nIf-Unmodified-Since: {past}\r\n\r\n", 200, 412),
    ("If-None-Match etag", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: {etag}\r\n\r\n", 304, 304),
    ("If-None-Match two lines", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-None-Match: \"a\"\r\nIf-None-Match: {etag}\r\n\r\n", 304, 400),
    ("If-Match fails, If-None-Match matches", "GET /f.txt HTTP/1.1\r\nHost: t\r\nIf-Match: \"nope\"\r\nIf-None-Match: {etag}\r\n\r\n", 412, 412),
    ("Host a b", "GET /f.txt HTTP/1.1\r\nHost: a b\r\n\r\n", 400, 400),
    ("Host a/b", "GET /f.txt HTTP/1.1\r\nHost: a/b\r\n\r\n", 400, 400),
    ("Host ../x", "GET /f.txt HTTP/1.1\r\nHost: ../x\r\n\r\n", 400, 400),
    ("Host empty", "GET /f.txt HTTP/1.1\r\nHost: \r\n\r\n", 400, 400),
    ("Host a..b", "GET /f.txt HTTP/1.1\r\nHost: a..b\r\n\r\n", 400, 400),
    ("Host [::1]:80", "GET /f.txt HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 200, 200),
    ("Host x:80", "GET /f.txt HTTP/1.1\r\nHost: x:80\r\n\r\n", 200, 200),
    ("two Host lines", "GET /f.txt HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, 400),
    ("HTTP/1.1 without Host", "GET /f.txt HTTP/1.1\r\n\r\n", 400, 400),
    ("HTTP/1.0 without Host", "GET /f.txt HTTP/1.0\r\n\r\n", 200, 200),
    ("HTTP/1.0 empty Host", "GET /f.txt HTTP/1.0\r\nHost:\r\n\r\n", 400, 400),
    ("space in the target", "GET /f b HTTP/1.1\r\nHost: t\r\n\r\n", 400, 400),
    ("HTTP/1.2", "GET /f.txt HTTP/1.2\r\nHost: t\r\n\r\n", 200, 200),
    ("HTTP/1.9", "GET /f.txt HTTP/1.9\r\nHost: t\r\n\r\n", 200, 200),
    ("HTTP/2.0", "GET /f.txt HTTP/2.0\r\nHost: t\r\n\r\n", 505, 505),
    ("HTTP/0.9", "GET /f.txt HTTP/0.9\r\nHost: t\r\n\r\n", 505, 400),
    ("HTTP/1.10", "GET /f.txt HTTP/1.10\r\nHost: t\r\n\r\n", 400, 200),
    ("dotfile", "GET /.env HTTP/1.1\r\nHost: t\r\n\r\n", 404, 200),
    ("/.well-known/", "GET /.well-known/security.txt HTTP/1.1\r\nHost: t\r\n\r\n", 200, 200),
    ("GET with a body", "GET /f.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde", 200, 200),
    ("POST with a body", "POST /f.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nabcde", 405, 405),
    ("PUT chunked", "PUT /f.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\n0\r\n\r\n", 405, 405),
    ("Content-Length over 1 MiB", "GET /f.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 2000000\r\n\r\n", 413, 413),
    ("malformed chunked", "GET /f.txt HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400, 400),
    ("Expect: 100-continue", "GET /f.txt HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n", 100, 100),
];

const PAST: &str = "Sun, 06 Nov 1994 08:49:37 GMT";

/// Sends `request` on a new connection; the status line of the answer, and the whole head.
fn exchange(addr: SocketAddr, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(10)).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&got).into_owned();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {head:?} for {request:?}"));
    (status, head)
}

fn etag(addr: SocketAddr) -> String {
    let (status, head) = exchange(addr, "HEAD /f.txt HTTP/1.1\r\nHost: t\r\n\r\n");
    assert_eq!(status, 200);
    head.lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("etag")
                .then(|| value.trim().to_string())
        })
        .expect("an ETag")
}

/// Each case's status from the server at `addr`.
fn answers(addr: SocketAddr) -> Vec<u16> {
    let etag = etag(addr);
    CASES
        .iter()
        .map(|(_, req, _, _)| {
            exchange(addr, &req.replace("{etag}", &etag).replace("{past}", PAST)).0
        })
        .collect()
}

fn root(dir: &Path) {
    for (path, body) in [
        ("f.txt", "0123456789\n"),
        (".env", "SECRET=1\n"),
        (".well-known/security.txt", "contact\n"),
    ] {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, body).unwrap();
    }
}

fn spec(root: &Path) -> PeerSpec {
    PeerSpec {
        root: root.to_owned(),
        digest: false,
        max_clients: 8,
        cpu: None,
        flint_bin: Some(env!("CARGO_BIN_EXE_flint").into()),
        ready_timeout: Duration::from_secs(20),
        tls: None,
        http2: false,
        net: None,
    }
}

#[test]
fn flint_answers_as_the_rfcs_ask_and_as_nginx_where_they_agree() {
    let dir = tempfile::tempdir().unwrap();
    root(dir.path());
    let spec = spec(dir.path());
    // Both are stopped by process group when dropped, whatever happens.
    let flint = Peer::start(PeerKind::Flint, &spec).expect("flint serve starts");
    let got = answers(flint.addr());
    for ((what, _, want, _), got) in CASES.iter().zip(&got) {
        assert_eq!(got, want, "flint: {what}");
    }
    // scripts/install-peers.sh installs nginx: without it the comparison fails, never skips.
    let nginx =
        Peer::start(PeerKind::Nginx, &spec).unwrap_or_else(|e| panic!("nginx did not start: {e}"));
    let theirs = answers(nginx.addr());
    let mut differ = Vec::new();
    for ((what, _, ours, nginx_status), got) in CASES.iter().zip(&theirs) {
        if got != nginx_status {
            differ.push(format!(
                "{what}: nginx {} said {got}, the table says {nginx_status}",
                nginx.version()
            ));
        }
        if ours == nginx_status {
            assert_eq!(got, ours, "{what}: flint and nginx should agree");
        }
    }
    if !differ.is_empty() {
        // Another nginx release may answer otherwise where the two are documented to differ.
        eprintln!(
            "nginx differs from the documented table:\n{}",
            differ.join("\n")
        );
    }
}
