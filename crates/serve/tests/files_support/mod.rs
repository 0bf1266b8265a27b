//! Shared by the files_* tests: a document root in a temporary directory, a Responder over it,
//! and requests driven through it without sockets (parsed with wire, answered into a buffer,
//! the answer parsed back with wire).
#![allow(dead_code)]

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serve::respond::{Body, Reply, Responder};
use serve::Config;

pub const DATE: &[u8] = b"Sun, 06 Nov 1994 08:49:37 GMT";

pub struct Site {
    pub dir: tempfile::TempDir,
    pub responder: Responder,
}

/// A parsed response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub reply_close: bool,
    pub body_bytes: u64,
    /// How the body travelled: "inline", "shared", "file" or "none".
    pub body_kind: &'static str,
}

impl Resp {
    /// The value of a header (case-insensitive name); panics when there are several.
    pub fn header(&self, name: &str) -> Option<&str> {
        let mut found = self
            .headers
            .iter()
            .filter(|(n, _)| n.eq_ignore_ascii_case(name));
        let first = found.next().map(|(_, v)| v.as_str());
        assert!(found.next().is_none(), "{name} appears twice");
        first
    }

    pub fn has(&self, name: &str) -> bool {
        self.header(name).is_some()
    }
}

/// Writes `files` (path relative to the root, content) under a fresh root.
pub fn write_files(root: &Path, files: &[(&str, &[u8])]) {
    for (path, content) in files {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, content).unwrap();
    }
}

impl Site {
    pub fn new(files: &[(&str, &[u8])]) -> Site {
        Site::with(files, |_| {})
    }

    pub fn with(files: &[(&str, &[u8])], tune: impl FnOnce(&mut Config)) -> Site {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        write_files(&root, files);
        let mut config = Config {
            root: root.clone(),
            revalidate_ms: 60_000,
            ..Config::default()
        };
        tune(&mut config);
        let responder = Responder::new(&config).unwrap();
        Site { dir, responder }
    }

    pub fn root(&self) -> PathBuf {
        self.dir.path().join("root")
    }

    /// `GET target` over HTTP/1.1 with Host and the extra header lines.
    pub fn get(&mut self, target: &str, headers: &[&str]) -> Resp {
        self.method("GET", target, headers)
    }

    pub fn method(&mut self, method: &str, target: &str, headers: &[&str]) -> Resp {
        let mut raw = format!("{method} {target} HTTP/1.1\r\nHost: test\r\n");
        for h in headers {
            raw.push_str(h);
            raw.push_str("\r\n");
        }
        raw.push_str("\r\n");
        self.raw(raw.as_bytes())
    }

    /// Sends a whole raw request head.
    pub fn raw(&mut self, raw: &[u8]) -> Resp {
        self.raw_at(raw, Instant::now())
    }

    pub fn raw_at(&mut self, raw: &[u8], now: Instant) -> Resp {
        let req = wire::parse_request(raw, &wire::RequestLimits::default())
            .expect("valid request")
            .expect("complete request");
        let head = req.method == wire::Method::Head;
        let mut out = Vec::new();
        let reply = self.responder.respond(&req, DATE, now, &mut out);
        parse(&out, reply, head)
    }
}

/// Parses `out` plus the reply's body into a response.
pub fn parse(out: &[u8], reply: Reply, head: bool) -> Resp {
    let parsed = wire::parse_response_head(out, head)
        .expect("valid response head")
        .expect("complete response head");
    assert_eq!(
        parsed.status, reply.status,
        "Reply.status matches the status line"
    );
    let text = std::str::from_utf8(&out[..parsed.head_len]).expect("ASCII head");
    assert!(text.starts_with("HTTP/1.1 "), "{text}");
    let mut headers = Vec::new();
    for line in text.split("\r\n").skip(1) {
        if line.is_empty() {
            continue;
        }
        let (name, value) = line.split_once(':').expect("header line");
        headers.push((name.to_string(), value.trim().to_string()));
    }
    let mut body = out[parsed.head_len..].to_vec();
    let body_kind = match &reply.body {
        Body::None if body.is_empty() => "none",
        Body::None => "inline",
        Body::Shared { data, start, len } => {
            assert!(body.is_empty(), "shared body after an inline one");
            body.extend_from_slice(&data[*start..start + len]);
            "shared"
        }
        Body::File { file, offset, len } => {
            assert!(body.is_empty(), "file body after an inline one");
            let mut buf = vec![0u8; *len as usize];
            file.read_exact_at(&mut buf, *offset).unwrap();
            body.extend_from_slice(&buf);
            "file"
        }
    };
    assert_eq!(reply.body_bytes, body.len() as u64, "Reply.body_bytes");
    Resp {
        status: reply.status,
        headers,
        body,
        reply_close: reply.close,
        body_bytes: reply.body_bytes,
        body_kind,
    }
}
