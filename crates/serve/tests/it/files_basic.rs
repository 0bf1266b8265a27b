//! GET and HEAD of files, directories, content types, headers and error pages.

use crate::files_support;

use crate::files_support::{Site, DATE};

#[test]
fn get_returns_the_exact_body_with_its_metadata() {
    let mut site = Site::new(&[("hello.txt", b"hello")]);
    let r = site.get("/hello.txt", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello");
    assert_eq!(r.body_kind, "inline");
    assert_eq!(r.header("Content-Length"), Some("5"));
    assert_eq!(r.header("Content-Type"), Some("text/plain; charset=utf-8"));
    assert_eq!(r.header("Date").unwrap().as_bytes(), DATE);
    assert_eq!(r.header("Server"), Some("flint"));
    assert_eq!(r.header("Accept-Ranges"), Some("bytes"));
    assert!(r.header("ETag").unwrap().starts_with('"'));
    let lm = r.header("Last-Modified").unwrap();
    assert!(wire::parse_http_date(lm.as_bytes()).is_some(), "{lm}");
    assert!(!r.has("Connection"), "HTTP/1.1 keep-alive says nothing");
    assert!(!r.has("Content-MD5"), "digests are off by default");
    assert!(!r.has("Vary"), "no sibling, no Vary");
    assert!(!r.reply_close);
}

#[test]
fn etag_and_last_modified_are_stable_across_requests() {
    let mut site = Site::new(&[("a.txt", b"abc")]);
    let first = site.get("/a.txt", &[]);
    for _ in 0..3 {
        let again = site.get("/a.txt", &[]);
        assert_eq!(again.header("ETag"), first.header("ETag"));
        assert_eq!(again.header("Last-Modified"), first.header("Last-Modified"));
    }
    let c = site.responder.counters();
    assert_eq!((c.misses, c.hits), (1, 3));
}

#[test]
fn the_etag_is_short_and_survives_a_restart() {
    let mut site = Site::new(&[("a.txt", b"abc")]);
    let first = site.get("/a.txt", &[]);
    let etag = first.header("ETag").unwrap();
    assert_eq!(etag.len(), 13, "11 base64url characters in quotes: {etag}");
    let inner = &etag[1..12];
    assert!(
        inner
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'),
        "{etag}"
    );
    // A new responder over the same root, as after a restart: nothing cached, the same tag.
    site.responder = serve::respond::Responder::new(&serve::Config {
        root: site.root(),
        ..serve::Config::default()
    })
    .unwrap();
    let again = site.get("/a.txt", &[]);
    assert_eq!(again.header("ETag"), Some(etag));
    assert_eq!(site.responder.counters().misses, 1, "built anew");
}

#[test]
fn head_sends_the_same_head_without_a_body() {
    let mut site = Site::new(&[("a.html", b"<p>hi</p>")]);
    let get = site.get("/a.html", &[]);
    let head = site.method("HEAD", "/a.html", &[]);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());
    assert_eq!(head.body_bytes, 0);
    assert_eq!(head.headers, get.headers);
}

#[test]
fn missing_files_are_404_and_not_cached() {
    let mut site = Site::new(&[]);
    for _ in 0..3 {
        let r = site.get("/nope.html", &[]);
        assert_eq!(r.status, 404);
        assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
        assert_eq!(
            r.header("Content-Length").unwrap(),
            r.body.len().to_string()
        );
        assert!(String::from_utf8_lossy(&r.body).contains("404 Not Found"));
    }
    let c = site.responder.counters();
    assert_eq!(c.not_found, 3);
    assert_eq!(
        c.entries, 0,
        "a hostile client cannot grow the cache with misses"
    );
}

#[test]
fn other_methods_get_405_with_allow() {
    let mut site = Site::new(&[("a", b"x")]);
    for m in ["POST", "PUT", "DELETE", "OPTIONS", "BREW"] {
        let r = site.method(m, "/a", &[]);
        assert_eq!(r.status, 405, "{m}");
        assert_eq!(r.header("Allow"), Some("GET, HEAD"));
    }
}

#[test]
fn http11_without_host_is_400() {
    let mut site = Site::new(&[("a", b"x")]);
    assert_eq!(site.raw(b"GET /a HTTP/1.1\r\n\r\n").status, 400);
    assert_eq!(site.raw(b"GET /a HTTP/1.0\r\n\r\n").status, 200);
}

#[test]
fn directory_without_slash_redirects_and_with_slash_serves_its_index() {
    let mut site = Site::new(&[
        ("docs/index.html", b"<h1>docs</h1>"),
        ("empty/.keep", b""),
        ("sp ace/index.html", b"x"),
    ]);
    let r = site.get("/docs?v=1", &[]);
    assert_eq!(r.status, 301);
    assert_eq!(r.header("Location"), Some("/docs/?v=1"));
    let r = site.get("/docs/", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"<h1>docs</h1>");
    assert_eq!(r.header("Content-Type"), Some("text/html; charset=utf-8"));
    assert_eq!(site.get("/docs/.", &[]).body, b"<h1>docs</h1>");
    assert_eq!(site.get("/empty/", &[]).status, 404, "no listings");
    assert_eq!(
        site.get("/sp%20ace", &[]).header("Location"),
        Some("/sp%20ace/")
    );
    assert_eq!(site.get("/", &[]).status, 404, "the root has no index here");
}

#[test]
fn a_file_with_a_trailing_slash_is_404() {
    let mut site = Site::new(&[("a.txt", b"x")]);
    assert_eq!(site.get("/a.txt/", &[]).status, 404);
}

#[test]
fn content_types_follow_the_extension() {
    let cases = [
        ("a.html", "text/html; charset=utf-8"),
        ("a.css", "text/css; charset=utf-8"),
        ("a.js", "text/javascript; charset=utf-8"),
        ("a.json", "application/json"),
        ("a.svg", "image/svg+xml"),
        ("a.gif", "image/gif"),
        ("a.JPG", "image/jpeg"),
        ("a.png", "image/png"),
        ("a.pdf", "application/pdf"),
        ("a.mp4", "video/mp4"),
        ("a.mp3", "audio/mpeg"),
        ("a.aiff", "audio/aiff"),
        ("Makefile", "application/octet-stream"),
        (".hidden", "application/octet-stream"),
    ];
    let files: Vec<(&str, &[u8])> = cases.iter().map(|(n, _)| (*n, &b"x"[..])).collect();
    let mut site = Site::with(&files, |c| c.dotfiles = serve::config::Dotfiles::Allow);
    for (name, ty) in cases {
        let r = site.get(&format!("/{name}"), &[]);
        assert_eq!(r.status, 200, "{name}");
        assert_eq!(r.header("Content-Type"), Some(ty), "{name}");
    }
}

#[test]
fn connection_headers_follow_the_request() {
    let mut site = Site::new(&[("a", b"x")]);
    let r = site.raw(b"GET /a HTTP/1.0\r\n\r\n");
    assert!(r.reply_close);
    assert_eq!(r.header("Connection"), Some("close"));
    let r = site.raw(b"GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    assert!(!r.reply_close);
    assert_eq!(r.header("Connection"), Some("keep-alive"));
    let r = site.raw(b"GET /a HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert!(r.reply_close);
    assert_eq!(r.header("Connection"), Some("close"));
    let r = site.raw(b"GET /missing HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n");
    assert_eq!((r.status, r.reply_close), (404, true));
    assert_eq!(r.header("Connection"), Some("close"));
}

#[test]
fn body_travels_inline_shared_or_by_file_by_size() {
    let small = vec![b's'; 16 * 1024];
    let medium = vec![b'm'; 100 * 1024];
    let large = vec![b'l'; 300 * 1024];
    let mut site = Site::with(
        &[("small", &small), ("medium", &medium), ("large", &large)],
        |c| c.cache_max_file = 256 * 1024,
    );
    for (name, data, kind) in [
        ("small", &small, "inline"),
        ("medium", &medium, "shared"),
        ("large", &large, "file"),
    ] {
        for _ in 0..2 {
            let r = site.get(&format!("/{name}"), &[]);
            assert_eq!(r.status, 200);
            assert_eq!(&r.body, data, "{name}");
            assert_eq!(r.body_kind, kind, "{name}");
        }
    }
}

#[test]
fn large_file_descriptor_is_opened_once_per_version() {
    let large = vec![b'l'; 4096];
    let mut site = Site::with(&[("large", &large)], |c| c.cache_max_file = 1024);
    site.get("/large", &[]);
    let opens = site.responder.counters().opens;
    for _ in 0..5 {
        assert_eq!(site.get("/large", &[]).body, large);
    }
    assert_eq!(site.responder.counters().opens, opens);
}

#[test]
fn empty_files_are_served_with_zero_length() {
    let mut site = Site::new(&[("empty.txt", b"")]);
    let r = site.get("/empty.txt", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(r.header("Content-Length"), Some("0"));
    assert!(r.body.is_empty());
}

#[test]
fn error_responses_for_unparsable_requests_close_when_asked() {
    let mut site = Site::new(&[]);
    for status in [400, 413, 414, 431, 501, 505, 503] {
        let mut out = Vec::new();
        let reply = site.responder.error(status, DATE, true, &mut out);
        let r = files_support::parse(&out, reply, false);
        assert_eq!(r.status, status);
        assert!(r.reply_close);
        assert_eq!(r.header("Connection"), Some("close"));
        assert_eq!(
            r.header("Content-Length").unwrap(),
            r.body.len().to_string()
        );
        assert!(String::from_utf8_lossy(&r.body).contains(&status.to_string()));
    }
    let mut out = Vec::new();
    let reply = site.responder.error(404, DATE, false, &mut out);
    assert!(!reply.close);
    assert!(!String::from_utf8_lossy(&out).contains("Connection"));
}

#[test]
fn missing_root_is_an_error_at_construction() {
    let config = serve::Config {
        root: "/definitely/not/here".into(),
        ..serve::Config::default()
    };
    assert!(serve::respond::Responder::new(&config).is_err());
}
