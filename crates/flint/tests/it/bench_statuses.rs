//! Which statuses are errors: 4xx and 5xx, as wrk counts them (a 304 or a redirect is a
//! response), or with `--expect-status` every status not in its list.

use crate::common;

use common::{flint, run_bounded, start_server};
use std::time::Duration;

fn bench(args: &[&str]) -> (Option<i32>, String, String) {
    let out = run_bounded(flint().arg("bench").args(args), Duration::from_secs(60));
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The ETag flint serve gives `path`, from one plain request.
fn etag(addr: &str, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "HEAD {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut head = String::new();
    s.read_to_string(&mut head).unwrap();
    head.lines()
        .find_map(|l| {
            l.strip_prefix("ETag: ")
                .or_else(|| l.strip_prefix("etag: "))
        })
        .unwrap_or_else(|| panic!("no ETag in {head}"))
        .trim()
        .to_owned()
}

#[test]
fn a_304_is_a_response_and_expect_status_says_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), b"hello").unwrap();
    let server = start_server(dir.path(), 1);
    let url = format!("http://{}/a.html", server.addr);
    let header = format!("If-None-Match: {}", etag(&server.addr, "/a.html"));
    let (code, out, err) = bench(&[&url, "-H", &header, "-n", "20", "-c", "2", "-q"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Errors:    none"), "{out}");
    assert!(out.contains("Statuses:  304 20"), "{out}");

    let args = [&url, "-H", &header, "-n", "20", "-c", "2", "-q"];
    let (code, out, err) = bench(&[&args[..], &["--expect-status", "2xx"]].concat());
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("status_3xx 20"), "{out}");
    assert!(
        err.contains("not one response succeeded (status_3xx 20)"),
        "{err}"
    );

    let (code, out, err) = bench(&[&args[..], &["--expect-status", "200,304"]].concat());
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("Errors:    none"), "{out}");

    // Expected only 304: a 200 is an error of its class.
    let (code, out, _) = bench(&[&url, "-n", "10", "-c", "1", "-q", "--expect-status", "304"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("status_2xx 10"), "{out}");

    let (code, out, _) = bench(&[&format!("http://{}/none", server.addr), "-n", "5", "-q"]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("status_4xx 5"), "{out}");

    let (code, _, err) = bench(&[&url, "--expect-status", "2x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`2x` is not a status"), "{err}");
}
