//! Servers scripted in the test's process, and the crawl options the tests start from.

#![allow(dead_code)] // each test binary uses its own subset

use discover::{Http, Limits, Options, TlsOptions};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A server answering each request by `answer(path)`: the raw response bytes, or `None` to
/// say nothing and hold the connection open. A path under `/slow/` has its head sent and never
/// its body: the connection is held until the client closes it (a minute at most), so the
/// response is certainly still coming whatever the client does meanwhile.
pub fn serve(answer: fn(&str) -> Option<Vec<u8>>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(conn) = conn else { return };
            std::thread::spawn(move || connection(conn, answer));
        }
    });
    addr
}

fn connection(mut conn: TcpStream, answer: fn(&str) -> Option<Vec<u8>>) {
    let mut have = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&have[..end]).into_owned();
            have.drain(..end + 4);
            let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
            match answer(&path) {
                // The head, never the body: a response still coming until the client goes.
                Some(bytes) if path.starts_with("/slow/") => {
                    let head = bytes
                        .windows(4)
                        .position(|w| w == b"\r\n\r\n")
                        .map_or(0, |e| e + 4);
                    if conn.write_all(&bytes[..head]).is_err() {
                        return;
                    }
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(60)));
                    while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
                    return;
                }
                Some(bytes) => {
                    // A short body is only short once the server closes.
                    if conn.write_all(&bytes).is_err() || path == "/short.png" {
                        return;
                    }
                }
                None => {
                    // Stall: hold the connection until the client gives up.
                    let _ = conn.set_read_timeout(Some(Duration::from_secs(30)));
                    let _ = conn.read(&mut buf);
                    return;
                }
            }
        }
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => have.extend_from_slice(&buf[..n]),
        }
    }
}

pub fn ok(kind: &str, body: &[u8]) -> Vec<u8> {
    let mut r = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    r.extend_from_slice(body);
    r
}

pub fn redirect(to: &str) -> Vec<u8> {
    format!("HTTP/1.1 302 Found\r\nLocation: {to}\r\nContent-Length: 0\r\n\r\n").into_bytes()
}

pub fn options(timeout: Duration) -> Options {
    Options {
        depth: 1,
        max_pages: 10,
        max_files: 1000,
        ignore_robots: false,
        viewport: None,
        dark: false,
        limits: Limits {
            max_size: 1 << 20,
            timeout,
            rate: 0.0,
        },
        tls: TlsOptions::default(),
        http: Http::Http11,
        stop: None,
        browser: None,
    }
}
