//! An application's stand-in for the application workload tests: HTTP/1.1 keep-alive, each
//! request read whole (its head, then a `Content-Length` body) and kept, then answered with the
//! bytes the test's `answer` gives for its path. The tests hold what the client sent against
//! what they expected, and what it counted against what the server received.

#![allow(dead_code)] // each test module uses its own part

use crate::per_connection::{read_until_stopped, PerConnection};
use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// One request as the server read it.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request line and header fields, as sent.
    pub head: String,
    /// The path of the request line.
    pub path: String,
    /// The body (empty without one).
    pub body: Vec<u8>,
}

impl Received {
    /// The value of the first field named `name` (any case).
    pub fn field(&self, name: &str) -> Option<&str> {
        self.head.lines().skip(1).find_map(|l| {
            let (n, v) = l.split_once(':')?;
            n.trim().eq_ignore_ascii_case(name).then(|| v.trim())
        })
    }
}

/// A running server; dropped, it stops.
pub struct AppServer {
    pub addr: SocketAddr,
    received: Arc<Mutex<Vec<Received>>>,
    server: Option<PerConnection>,
}

impl AppServer {
    /// Answers each request with `answer(path)`: a whole response, head and body.
    pub fn start(answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> AppServer {
        let received = Arc::new(Mutex::new(Vec::new()));
        let kept = received.clone();
        let server = PerConnection::start(move |mut s, stop: &AtomicBool| {
            let mut have: Vec<u8> = Vec::new();
            read_until_stopped(&mut s, stop, &mut [0u8; 8192], |s, data| {
                have.extend_from_slice(data);
                while let Some(r) = take_request(&mut have) {
                    let response = answer(&r.path);
                    kept.lock().unwrap().push(r);
                    if s.write_all(&response).is_err() {
                        return false;
                    }
                }
                true
            });
        });
        AppServer {
            addr: server.addr,
            received,
            server: Some(server),
        }
    }

    /// Every request received so far, in the order read.
    pub fn received(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    pub fn stop(mut self) {
        if let Some(s) = self.server.take() {
            s.stop();
        }
    }
}

/// A 200 with `fields` (whole `Name: value` lines, without their CRLF) and `body`.
pub fn ok_with(fields: &[String], body: &str) -> Vec<u8> {
    let mut r = String::from("HTTP/1.1 200 OK\r\n");
    for f in fields {
        r.push_str(f);
        r.push_str("\r\n");
    }
    r.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    r.into_bytes()
}

/// The first complete request at the start of `have`, taken out of it.
fn take_request(have: &mut Vec<u8>) -> Option<Received> {
    let end = have.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = String::from_utf8_lossy(&have[..end - 4]).into_owned();
    let path = head.split(' ').nth(1).unwrap_or("/").to_owned();
    let mut r = Received {
        head,
        path,
        body: Vec::new(),
    };
    let length: usize = r.field("content-length").map_or(0, |v| v.parse().unwrap());
    if have.len() < end + length {
        return None;
    }
    r.body = have[end..end + length].to_vec();
    have.drain(..end + length);
    Some(r)
}
