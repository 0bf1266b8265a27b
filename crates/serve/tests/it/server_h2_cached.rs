//! A cached file's HTTP/2 head, end to end: its prebuilt fields are handed to nghttp2 without
//! a copy and stay alive with the stream however the cache changes meanwhile (many streams on
//! one connection, the cache evicting between them: fields and bytes exact), and a
//! precompressed sibling's head says so (`vary`, `content-encoding`) as HTTP/1.1's does.

use crate::common;

use crate::common::{connect, content, exchange, TestServer};
use crate::h2_support::Client;

fn h2c(srv: &TestServer) -> Client<std::net::TcpStream> {
    Client::new(connect(srv.addr), "localhost")
}

/// The fields but `date` (written per response), in order.
fn fields(headers: &[(String, String)]) -> Vec<(String, String)> {
    (headers.iter())
        .map(|(n, v)| (n.to_ascii_lowercase(), v.clone()))
        .filter(|(n, _)| n != "date")
        .collect()
}

#[test]
fn heads_stay_exact_while_the_cache_evicts_their_file_versions() {
    // One entry: each request for another file evicts the entry whose fields the previous
    // streams' HEADERS, still queued in nghttp2, point at.
    let srv = TestServer::start(|c| {
        c.cache_entries = 1;
        c.digest = true;
    });
    let mut c = h2c(&srv);
    let names = ["a.txt", "1k.bin", "10k.bin", "300k.bin"];
    // Each file's heads asked for alone: a 200's and a 304's.
    let alone: Vec<_> = (names.iter())
        .map(|name| {
            let full = c.get(&format!("/{name}"), &[]);
            let etag = full.header("etag").unwrap().to_string();
            let not_modified = c.get(&format!("/{name}"), &[("if-none-match", &etag)]);
            assert_eq!((full.status, not_modified.status), (200, 304), "{name}");
            (etag, fields(&full.headers), fields(&not_modified.headers))
        })
        .collect();
    let ids: Vec<_> = (0..80)
        .map(|i| {
            let file = i % names.len();
            let path = format!("/{}", names[file]);
            let not_modified = i % 3 == 0;
            let extra: &[(&str, &str)] = match not_modified {
                true => &[("if-none-match", &alone[file].0)],
                false => &[],
            };
            (file, not_modified, c.submit("GET", &path, extra))
        })
        .collect();
    assert!(c.run_until(|s| ids
        .iter()
        .all(|(_, _, id)| s.responses.get(id).is_some_and(|r| r.done))));
    for (file, not_modified, id) in ids {
        let (name, r) = (names[file], &c.seen.responses[&id]);
        assert_eq!(r.reset, Some(0), "{name}");
        assert!(r.header("date").is_some(), "{name}");
        if not_modified {
            assert_eq!(r.status, 304, "{name}");
            assert_eq!(fields(&r.headers), alone[file].2, "{name}");
            assert!(r.body.is_empty(), "{name}");
        } else {
            let len = common::FILES.iter().find(|f| f.0 == name).unwrap().1;
            assert_eq!(r.status, 200, "{name}");
            assert_eq!(fields(&r.headers), alone[file].1, "{name}");
            assert!(r.body == content(name, len), "{name}: body differs");
        }
    }
}

#[test]
fn a_precompressed_siblings_head_is_http1s_as_fields() {
    let srv = TestServer::start(|c| c.precompressed = true);
    let gz = b"\x1f\x8b gzip bytes of a.txt".to_vec();
    std::fs::write(srv.root.path().join("a.txt.gz"), &gz).unwrap();
    let mut c = h2c(&srv);
    for method in ["GET", "HEAD"] {
        let r = c.request(method, "/a.txt", &[("accept-encoding", "gzip")]);
        assert_eq!(r.status, 200, "{method}");
        assert_eq!(r.header("content-encoding"), Some("gzip"), "{method}");
        assert_eq!(r.header("vary"), Some("Accept-Encoding"), "{method}");
        let len = gz.len().to_string();
        assert_eq!(r.header("content-length"), Some(len.as_str()), "{method}");
        let body: &[u8] = if method == "GET" { &gz } else { b"" };
        assert_eq!(r.body, body, "{method}");
        // The same fields as the HTTP/1.1 head, names lowercase, Date and Connection aside.
        let request = format!(
            "{method} /a.txt HTTP/1.1\r\nHost: localhost\r\nAccept-Encoding: gzip\r\n\
             Connection: close\r\n\r\n"
        );
        let http1 = exchange(srv.addr, &request);
        let mut http1_fields = fields(&http1.headers);
        http1_fields.retain(|(n, _)| n != "connection");
        assert_eq!(fields(&r.headers), http1_fields, "{method}");
    }
    // Without gzip accepted: the file itself, still varying.
    let r = c.get("/a.txt", &[]);
    assert_eq!(
        (r.header("content-encoding"), &r.body[..]),
        (None, &b"hello"[..])
    );
    assert_eq!(r.header("vary"), Some("Accept-Encoding"));
}
