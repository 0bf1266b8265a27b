//! `flint bench URL` as wrk and curl users type it: a URL with a path is a target; a URL that
//! cannot be used is one clear line, and nothing starts.

mod common;

use common::{flint, run_bounded};
use std::io::{Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Answers every request head with a 5-byte body and counts the request lines it saw for
/// `/index.html` (the only path the test asks for).
fn counting_server() -> (String, Arc<AtomicU64>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let count = Arc::new(AtomicU64::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                let mut have = Vec::new();
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head: Vec<u8> = have.drain(..end + 4).collect();
                        if head.starts_with(b"GET /index.html HTTP/1.1\r\n") {
                            seen.fetch_add(1, Ordering::Relaxed);
                        }
                        let response = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
                        if conn.write_all(response).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, count)
}

#[test]
fn a_url_with_a_path_is_fetched() {
    let (addr, count) = counting_server();
    let url = format!("http://{addr}/index.html");
    let out = run_bounded(
        flint().args([
            "bench", &url, "-c", "2", "-n", "6", "-q", "--report", "summary",
        ]),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(count.load(Ordering::Relaxed), 6, "{stderr}");
}

#[test]
fn unusable_urls_get_one_line_and_nothing_starts() {
    for (url, says) in [
        (
            "http://127.0.0.1:70000/",
            "port must be a number from 1 to 65535",
        ),
        (
            "http://no-such-host.invalid/",
            "cannot resolve `no-such-host.invalid`",
        ),
        ("ftp://127.0.0.1/", "ftp:// is not supported"),
    ] {
        let out = run_bounded(
            flint().args(["bench", url, "-d", "5s", "-q"]),
            Duration::from_secs(20),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{url}: {stderr}");
        assert!(stderr.contains(says), "{url}: {stderr}");
        let lines = stderr.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(lines, 1, "{url}: one line, got: {stderr}");
        assert!(
            out.stdout.is_empty(),
            "{url}: a report for a run that never started"
        );
    }
}
