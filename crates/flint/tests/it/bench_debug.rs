//! `flint bench --debug` prints every head it sends and receives on stderr: HTTP/1's as they
//! are on the wire, HTTP/2's and HTTP/3's as their header fields, pseudo-headers first.

use crate::common;

use common::{flint, run_bounded, serve_tls, start_server, started_server};
use std::time::Duration;
use test_support::certs::{KeyKind, SelfSigned};

#[test]
fn debug_prints_http2_request_and_response_fields() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let out = run_bounded(
        flint()
            .arg("bench")
            .args([&url, "--http", "2", "-n", "2", "-c", "1", "-q", "--debug"]),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    for line in [
        "[HTTP/2 stream 1: request]",
        ":method: GET",
        ":path: /a.html",
        "[HTTP/2 stream 1: response]",
        "[HTTP/2 stream 3: response]",
        ":status: 200",
        "content-length: 5",
    ] {
        assert!(err.lines().any(|l| l == line), "no `{line}` in: {err}");
    }
}

#[test]
fn connection_specific_fields_are_not_sent_over_http2_and_the_start_says_so() {
    // flint serve takes a request with `te: gzip` for malformed (RFC 9113 section 8.2.2) and
    // ends the connection: sent, no request would succeed.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let out = run_bounded(
        flint()
            .arg("bench")
            .args([&url, "--http", "2", "-n", "2", "-c", "1", "-q", "--debug"])
            .args(["-H", "TE: gzip", "-H", "Proxy-Connection: keep-alive"])
            .args(["-H", "X-Kept: 1", "-H", "CONNECTION: close"]),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let note = "flint: note: TE, Proxy-Connection, CONNECTION not sent over HTTP/2: \
                connection-specific fields";
    assert_eq!(err.matches(note).count(), 1, "{err}");
    assert_eq!(
        err.lines().filter(|l| *l == "x-kept: 1").count(),
        2,
        "{err}"
    );
    for sent in ["te:", "proxy-connection:", "connection:"] {
        assert!(
            !err.lines().any(|l| l.starts_with(sent)),
            "{sent} in: {err}"
        );
    }
    // `TE: trailers` is HTTP/2's one TE, sent.
    let out = run_bounded(
        flint()
            .arg("bench")
            .args([&url, "--http", "2", "-n", "1", "-c", "1", "-q", "--debug"])
            .args(["-H", "TE: trailers"]),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.lines().any(|l| l == "te: trailers"), "{err}");
    assert!(!err.contains("flint: note"), "{err}");
}

#[test]
fn debug_prints_http3_request_and_response_fields() {
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    std::fs::write(cert.dir().join("a.html"), b"hello").unwrap();
    let args = ["--listen", "127.0.0.1:0", "--threads", "1", "--http3"];
    let child = serve_tls(&cert, &args).spawn().expect("spawn flint serve");
    let server = started_server(child, "https", true);
    let url = format!("https://localhost:{}/a.html", server.port());
    let out = run_bounded(
        flint()
            .arg("bench")
            .args([&url, "--http", "3", "-n", "2", "-c", "1", "-q"])
            .args(["--debug", "--cacert", cert.cert.to_str().unwrap()]),
        Duration::from_secs(60),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Client-initiated bidirectional streams: 0, 4, 8...
    for line in [
        "[HTTP/3 stream 0: request]",
        ":method: GET",
        ":path: /a.html",
        "[HTTP/3 stream 0: response]",
        "[HTTP/3 stream 4: request]",
        "[HTTP/3 stream 4: response]",
        ":status: 200",
        "content-length: 5",
    ] {
        assert!(err.lines().any(|l| l == line), "no `{line}` in: {err}");
    }
}

/// The report's Mode line says what an HTTP/2 run did: a page's files as streams, or (one-file
/// pages with `--streams N`) N pages in flight per connection, as h2load's `-m N`.
#[test]
fn the_mode_line_tells_lanes_from_a_page_as_streams() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    for (streams, want) in [
        (
            None,
            "Mode:      HTTP/2, a page's files as concurrent streams",
        ),
        (
            Some("4"),
            "Mode:      HTTP/2, 4 one-file pages in flight per connection as streams",
        ),
    ] {
        let mut cmd = flint();
        cmd.arg("bench")
            .args([&url, "--http", "2", "-n", "8", "-c", "1"]);
        if let Some(n) = streams {
            cmd.args(["--streams", n]);
        }
        let out = run_bounded(&mut cmd, Duration::from_secs(60));
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with(want)),
            "no `{want}` in: {text}"
        );
    }
}

/// More streams asked for than the server allows at once: the Mode line says the number that
/// applied, the server's, beside the one asked.
#[test]
fn the_mode_line_says_the_streams_the_server_allowed() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let out = run_bounded(
        flint().args([
            "bench",
            &url,
            "--http",
            "2",
            "--streams",
            "1000",
            "-n",
            "8",
            "-c",
            "1",
        ]),
        Duration::from_secs(60),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let allowed: u64 = text
        .split_once("(server allows ")
        .and_then(|(_, rest)| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no server limit in: {text}"));
    assert!(allowed < 1000, "{text}");
    let want = format!(
        "Mode:      HTTP/2, {allowed} one-file pages in flight per connection as streams \
         (1000 asked, the server allows {allowed}), closed loop"
    );
    assert!(text.lines().any(|l| l == want), "no `{want}` in: {text}");
}
