//! What flint serve does with a parsed request head, without a socket: the responder answers it
//! from [`crate::docroot`], as the connection loop would, and the answer is read back with the
//! client's own parser.
//!
//! Properties: every answer is one well-formed response whose status is the one reported; its
//! framing is a Content-Length that the bytes after the head (inline, shared or by sendfile) add
//! up to; a HEAD answer has no body; the server never keeps open a connection the client asked to
//! close; a redirect's `Location` is a path on this server (never `//host`); a 200 or 206 body is
//! exactly the bytes of a file under the root at the offsets `Content-Range` names; and a second
//! answer to the same request (from the cache) is byte for byte the first.

use std::os::unix::fs::FileExt;
use std::time::Instant;

use serve::respond::{Body, Reply, Responder};
use serve::Config;
use wire::{parse_response_head, Framing, Method, Request};

use crate::docroot;

/// A fixed Date, so that two answers to the same request can be compared byte for byte.
const DATE: &[u8] = b"Mon, 23 Nov 2026 14:00:00 GMT";

/// A responder over the fuzzing root, fresh for each input so that one input's cache state cannot
/// change another's answer (the fuzzer needs runs to be repeatable).
pub struct Server {
    responder: Responder,
    now: Instant,
    max_body: u64,
}

impl Server {
    pub fn new() -> Server {
        let config = Config {
            root: docroot::root().to_path_buf(),
            ..Config::default()
        };
        Server {
            responder: Responder::new(&config).expect("the fuzzing root exists"),
            now: Instant::now(),
            max_body: config.max_body_bytes,
        }
    }

    /// Answers `req` twice (a cache miss, then a hit) and checks both answers.
    pub fn answer(&mut self, req: &Request<'_>) {
        let first = self.answer_once(req);
        let second = self.answer_once(req);
        assert_eq!(
            first, second,
            "the cached answer differs from the first one"
        );
    }

    /// The response bytes (head and whole body) and status of one answer.
    fn answer_once(&mut self, req: &Request<'_>) -> (Vec<u8>, u16) {
        let head = req.method == Method::Head;
        // As the connection loop does: a body is read and dropped and the request answered,
        // unless its Content-Length is over the limit (413 and close). (A chunked body that
        // turns out malformed or too long closes the connection, without saying so in the head;
        // only the responder's own promise is checked here.)
        let mut out = Vec::new();
        let reply = if req.content_length > Some(self.max_body) {
            self.responder.error(413, DATE, true, &mut out)
        } else {
            self.responder.respond(req, DATE, self.now, &mut out)
        };
        if !req.keep_alive {
            assert!(
                reply.close,
                "the client asked to close, the server keeps the connection"
            );
        }
        let status = reply.status;
        (check_response(out, reply, head), status)
    }
}

impl Default for Server {
    fn default() -> Self {
        Server::new()
    }
}

/// Checks one answer; returns its bytes with the body appended.
fn check_response(mut out: Vec<u8>, reply: Reply, head_request: bool) -> Vec<u8> {
    let h = match parse_response_head(&out, head_request) {
        Ok(Some(h)) => h,
        other => panic!(
            "the server wrote a response its client cannot parse ({other:?}): {:?}",
            String::from_utf8_lossy(&out)
        ),
    };
    let text = String::from_utf8_lossy(&out[..h.head_len]).into_owned();
    assert_eq!(
        h.status, reply.status,
        "status line and reply disagree: {text}"
    );
    assert!(text.starts_with("HTTP/1.1 "), "{text}");
    assert_eq!(
        h.keep_alive, !reply.close,
        "the head's persistence and the reply's disagree: {text}"
    );
    let inline = out.len() - h.head_len;
    match reply.body {
        Body::None => {}
        Body::Shared {
            ref data,
            start,
            len,
        } => {
            assert_eq!(inline, 0, "a shared body after inline bytes: {text}");
            out.extend_from_slice(&data[start..start + len]);
        }
        Body::File {
            ref file,
            offset,
            len,
        } => {
            assert_eq!(inline, 0, "a file body after inline bytes: {text}");
            let mut buf = vec![0; usize::try_from(len).expect("fuzz root files are small")];
            file.read_exact_at(&mut buf, offset)
                .expect("reading the file body");
            out.extend_from_slice(&buf);
        }
    }
    let body = &out[h.head_len..];
    match h.framing {
        _ if head_request => {
            assert!(body.is_empty(), "a body after a HEAD response: {text}");
            assert_eq!(reply.body_bytes, 0, "{text}");
        }
        Framing::Empty => assert!(body.is_empty(), "a body on a {} response", h.status),
        Framing::Length(n) => {
            assert_eq!(
                body.len() as u64,
                n,
                "Content-Length disagrees with the body: {text}"
            );
            assert_eq!(reply.body_bytes, n, "{text}");
        }
        Framing::Chunked | Framing::Close => {
            panic!("flint serve framed by {:?}: {text}", h.framing)
        }
    }
    if !head_request {
        check_body(&text, h.status, body);
    }
    if let Some(location) = header(&text, "location") {
        assert!(
            location.starts_with('/') && !location.starts_with("//"),
            "a redirect off this server: {text}"
        );
        assert!(!location.contains(' '), "{text}");
    }
    out
}

/// A 200 or 206 body is a file of the root, whole or at the range `Content-Range` names.
fn check_body(text: &str, status: u16, body: &[u8]) {
    match status {
        200 => assert!(
            docroot::matches_some_file(body, 0, body.len()),
            "a 200 body that is no file of the root: {text}"
        ),
        206 => {
            let range = header(text, "content-range").expect("206 without Content-Range");
            let (first, last, total) = parse_content_range(range)
                .unwrap_or_else(|| panic!("malformed Content-Range: {text}"));
            assert!(first <= last && last < total, "{text}");
            assert_eq!(last - first + 1, body.len(), "{text}");
            assert!(
                docroot::matches_some_file(body, first, total),
                "a 206 body that is not that range of a root file: {text}"
            );
        }
        _ => {}
    }
}

/// `bytes first-last/total`.
fn parse_content_range(v: &str) -> Option<(usize, usize, usize)> {
    let (range, total) = v.strip_prefix("bytes ")?.split_once('/')?;
    let (first, last) = range.split_once('-')?;
    Some((first.parse().ok()?, last.parse().ok()?, total.parse().ok()?))
}

/// The value of the first header named `name` (lower case) in a head's text.
fn header<'t>(head: &'t str, name: &str) -> Option<&'t str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (n, v) = line.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(raw: &[u8]) {
        let req = wire::parse_request(raw, &wire::RequestLimits::default())
            .unwrap()
            .unwrap();
        Server::new().answer(&req);
    }

    #[test]
    fn answers_to_ordinary_requests_pass_the_checks() {
        for raw in [
            &b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"[..],
            b"GET /big.bin HTTP/1.1\r\nHost: a\r\nRange: bytes=100-30000\r\n\r\n",
            b"GET /mid.js HTTP/1.1\r\nHost: a\r\n\r\n",
            b"HEAD /page.html HTTP/1.0\r\n\r\n",
            b"GET /style.css HTTP/1.1\r\nHost: a\r\nAccept-Encoding: br, gzip\r\n\r\n",
            b"GET /dir?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
            b"GET /link-out HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET /index.html HTTP/1.1\r\nHost: a\r\nRange: bytes=-10\r\n\r\n",
            b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n",
        ] {
            answer(raw);
        }
    }

    #[test]
    fn content_range_and_headers_are_read() {
        assert_eq!(parse_content_range("bytes 0-9/300"), Some((0, 9, 300)));
        assert_eq!(parse_content_range("bytes */300"), None);
        let head = "HTTP/1.1 301 Moved\r\nLocation: /dir/\r\n\r\n";
        assert_eq!(header(head, "location"), Some("/dir/"));
        assert_eq!(header(head, "range"), None);
    }

    #[test]
    #[should_panic(expected = "no file of the root")]
    fn a_body_from_outside_the_root_fails_the_check() {
        check_body("", 200, &[0xff; 64]);
    }
}
