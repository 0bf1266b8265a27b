//! `flint discover` stopped, held up or refused: SIGINT and SIGTERM write the workload found so
//! far; a silent server is waited for once, within `--timeout`; a refused certificate is told
//! with bench's reason and fix, and the workload's "run it" line carries what bench needs.

use crate::common;
use crate::discover_site;

use common::{flint, wait_exit};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A site without end, in this process: `/p/K` links `/p/K+1`, robots.txt is `robots`. Counts
/// the pages asked for, and robots.txt's requests.
fn endless_site(robots: &'static str) -> (String, Arc<AtomicU64>, Arc<AtomicU64>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let pages = Arc::new(AtomicU64::new(0));
    let robots_asked = Arc::new(AtomicU64::new(0));
    let (counted, robots_counted) = (pages.clone(), robots_asked.clone());
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let (counted, robots_counted) = (counted.clone(), robots_counted.clone());
            std::thread::spawn(move || {
                let mut have = Vec::new();
                let mut buf = [0u8; 4096];
                while let Ok(n) = conn.read(&mut buf) {
                    if n == 0 {
                        return;
                    }
                    have.extend_from_slice(&buf[..n]);
                    while let Some(end) = have.windows(4).position(|w| w == b"\r\n\r\n") {
                        let head = String::from_utf8_lossy(&have[..end]).into_owned();
                        have.drain(..end + 4);
                        let path = head.split_whitespace().nth(1).unwrap_or("/").to_owned();
                        let k: u64 = path
                            .strip_prefix("/p/")
                            .and_then(|k| k.parse().ok())
                            .unwrap_or(0);
                        let (kind, body) = if path == "/robots.txt" {
                            robots_counted.fetch_add(1, Ordering::Relaxed);
                            ("text/plain", robots.to_owned())
                        } else {
                            counted.fetch_add(1, Ordering::Relaxed);
                            ("text/html", format!("<a href=\"/p/{}\">next</a>", k + 1))
                        };
                        let response = format!(
                            "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        if conn.write_all(response.as_bytes()).is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    (addr, pages, robots_asked)
}

#[test]
fn sigint_and_sigterm_write_the_pages_found_so_far() {
    for signal in [rustix::process::Signal::INT, rustix::process::Signal::TERM] {
        let (addr, pages, _) = endless_site("");
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("site.toml");
        let mut child = flint()
            .args([
                "discover",
                &format!("http://{addr}/p/0"),
                "--depth",
                "100000",
            ])
            .args(["--max-pages", "100000", "--crawl-rate", "50", "-o"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Signalled once it has asked for five pages (bounded wait).
        let deadline = Instant::now() + Duration::from_secs(60);
        while pages.load(Ordering::Relaxed) < 5 {
            assert!(Instant::now() < deadline, "5 pages not asked for in 60 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let pid = rustix::process::Pid::from_child(&child);
        rustix::process::kill_process(pid, signal).unwrap();
        let Some(status) = wait_exit(&mut child, Duration::from_secs(30)) else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("flint discover did not end within 30 s of {signal:?}");
        };
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(130), "{signal:?}: {status:?} {stderr}");
        let text = std::fs::read_to_string(&file).expect("the workload was written");
        let written = text.matches("[[page]]").count();
        assert!(written >= 4, "{written} pages: {text}");
        assert!(
            text.contains(&format!(
                "# interrupted (SIGINT or SIGTERM) after {written} pages: the crawl stopped there\n"
            )),
            "{text}"
        );
        assert!(text.contains("name = \"/p/0\""), "{text}");
        assert!(stderr.contains("interrupted"), "{stderr}");
    }
}

#[test]
fn a_signal_ends_a_long_crawl_delay() {
    // A minute, and more seconds than a `Duration` holds (held to a day).
    for robots_txt in [
        "User-agent: *\nCrawl-delay: 60\n",
        "User-agent: *\nCrawl-delay: 1e20\n",
    ] {
        a_signal_ends_the_crawl_delay_of(robots_txt);
    }
}

fn a_signal_ends_the_crawl_delay_of(robots_txt: &'static str) {
    let (addr, pages, robots) = endless_site(robots_txt);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("site.toml");
    let mut child = flint()
        .args(["discover", &format!("http://{addr}/p/0"), "-o"])
        .arg(&file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // The start page, then robots.txt asking for a minute between requests.
    let deadline = Instant::now() + Duration::from_secs(60);
    while robots.load(Ordering::Relaxed) < 1 {
        assert!(
            Instant::now() < deadline,
            "robots.txt not asked for in 60 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let signalled = Instant::now();
    rustix::process::kill_process(
        rustix::process::Pid::from_child(&child),
        rustix::process::Signal::INT,
    )
    .unwrap();
    let Some(status) = wait_exit(&mut child, Duration::from_secs(50)) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint discover did not end within 50 s of SIGINT");
    };
    // Well within the minute it would otherwise have waited.
    assert!(
        signalled.elapsed() < Duration::from_secs(20),
        "{:?}",
        signalled.elapsed()
    );
    assert_eq!(status.code(), Some(130), "{robots_txt}");
    assert_eq!(
        pages.load(Ordering::Relaxed),
        1,
        "no request after the signal"
    );
    let text = std::fs::read_to_string(&file).expect("the workload was written");
    assert!(text.contains("name = \"/p/0\""), "{text}");
    assert!(
        text.contains("# interrupted (SIGINT or SIGTERM) after 1 pages"),
        "{text}"
    );
    if robots_txt.contains("1e20") {
        assert!(
            text.contains("Crawl-delay of 100000000000000000000 s: clamped to 86400 s (a day)"),
            "{text}"
        );
    }
}

/// A listener that accepts connections and never answers; open while the test runs.
fn silent_listener() -> (String, std::thread::JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let held = std::thread::spawn(move || {
        let mut conns = Vec::new();
        listener.set_nonblocking(true).unwrap();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            match listener.accept() {
                Ok((c, _)) => conns.push(c),
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
        }
    });
    (addr, held)
}

#[test]
fn a_silent_server_is_waited_for_once_within_the_timeout() {
    let (addr, _held) = silent_listener();
    let timeout = 4.0;
    for (scheme, http) in [("http", "2"), ("https", "2"), ("http", "1.1")] {
        let began = Instant::now();
        let out = common::run_bounded(
            flint().args([
                "discover",
                &format!("{scheme}://{addr}/"),
                "-k",
                "--http",
                http,
                "--timeout",
                &format!("{timeout}s"),
            ]),
            Duration::from_secs(60),
        );
        let took = began.elapsed().as_secs_f64();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{scheme} {http}: {stderr}");
        assert!(
            stderr.contains(&format!("no response within {timeout}s")),
            "{stderr}"
        );
        // Once the timeout, and generous slack for a busy machine: not once for robots.txt and
        // again for the page.
        assert!(
            (timeout..timeout * 1.75).contains(&took),
            "{scheme} --http {http}: {took:.1} s with --timeout {timeout}s"
        );
    }
}

#[test]
fn tls_refusals_are_told_as_bench_tells_them_and_run_it_names_the_flags() {
    use test_support::certs::{KeyKind, SelfSigned, TestCa};
    let root = tempfile::tempdir().unwrap();
    // A certificate marked CA:TRUE presented as the server's own, as `openssl req -x509` makes.
    let cert = SelfSigned::marked_ca(KeyKind::EcdsaP256);
    let server = discover_site::serve(
        root.path(),
        &[
            "--tls-cert",
            cert.cert.to_str().unwrap(),
            "--tls-key",
            cert.key.to_str().unwrap(),
        ],
    );
    discover_site::write(root.path(), &server.addr);
    let start = format!("https://{}/index.html", server.addr);
    let discover = |extra: &[&str]| {
        common::run_bounded(
            flint()
                .args(["discover", &start, "--crawl-rate", "1000"])
                .args(extra),
            Duration::from_secs(120),
        )
    };

    let out = discover(&[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "flint: error: {start}: TLS: the server presented a CA certificate as its own: \
             give that certificate with --cacert (or -k)"
        )
    );

    // Another certificate given: named as not the server's, not suggested again.
    let other = TestCa::new("another CA");
    let other_pem = other.pem.to_str().unwrap();
    let out = discover(&["--cacert", other_pem]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "TLS: the server presented a CA certificate as its own, and --cacert {other_pem} \
             is not that certificate (or -k)"
        )),
        "{stderr}"
    );

    // The right one, over HTTP/2: the run-it line carries both.
    let cacert = cert.cert.to_str().unwrap();
    let out = discover(&["--cacert", cacert, "--http", "2"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run_it = format!(
        "# run it: flint bench https://{} -w THIS_FILE --http 2 --cacert {cacert}\n",
        server.addr
    );
    assert!(stdout.contains(&run_it), "{stdout}");
    let out = discover(&["-k"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains(&format!(
            "# run it: flint bench https://{} -w THIS_FILE -k\n",
            server.addr
        )),
        "{stdout}"
    );
}
