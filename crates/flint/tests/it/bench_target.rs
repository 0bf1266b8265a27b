//! `flint bench URL` as wrk and curl users type it: a URL with a path is a target; a URL that
//! cannot be used is one clear line, and nothing starts.

use crate::common;

use common::{counting_responder_of, flint, run_bounded};
use std::sync::atomic::Ordering;
use std::time::Duration;

#[test]
fn a_url_with_a_path_is_fetched() {
    // Only the path the test asks for is counted.
    let (addr, count) =
        counting_responder_of(|head| head.starts_with(b"GET /index.html HTTP/1.1\r\n"));
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
