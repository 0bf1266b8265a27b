//! What a target URL puts on the wire: its path and query as the request target, no fragment,
//! its user and password as Basic auth, and its host (with a written port) as `Host`.

use bench::{BenchConfig, Stop, Target, Workload};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Serves one connection: reads one request head, answers it, and returns the head.
fn one_request_server() -> (std::net::SocketAddr, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let handle = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut head = Vec::new();
        let mut chunk = [0u8; 1024];
        while !head.ends_with(b"\r\n\r\n") {
            match s.read(&mut chunk) {
                Ok(0) | Err(_) => break,
                Ok(n) => head.extend_from_slice(&chunk[..n]),
            }
        }
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
        String::from_utf8_lossy(&head).into_owned()
    });
    (addr, handle)
}

#[test]
fn the_url_gives_path_query_auth_and_host_and_never_the_fragment() {
    let (addr, server) = one_request_server();
    let url = format!(
        "HTTP://alice:s%3Acret@127.0.0.1:{}/docs/a.html?x=1#part",
        addr.port()
    );
    let target = Target::parse(&url).unwrap();
    let path = target.path.clone().expect("the URL names a path");
    let workload = Workload::from_paths(&[path]).unwrap();
    let config = BenchConfig {
        concurrency: 1,
        stop: Stop::Pages(1),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(target)
    };
    let result = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    let head = server.join().unwrap();
    assert_eq!(result.stats.requests, 1, "{head}");
    assert_eq!(result.stats.errors.total(), 0);
    let mut lines = head.lines();
    assert_eq!(lines.next(), Some("GET /docs/a.html?x=1 HTTP/1.1"));
    assert!(
        head.contains(&format!("\r\nHost: 127.0.0.1:{}\r\n", addr.port())),
        "{head}"
    );
    // base64("alice:s:cret"): the password percent-decoded.
    assert!(
        head.contains("\r\nAuthorization: Basic YWxpY2U6czpjcmV0\r\n"),
        "{head}"
    );
    assert!(!head.contains("part"), "{head}");
    assert!(
        !result.config.target.url.contains("s%3Acret"),
        "{}",
        result.config.target.url
    );
}

/// Sends the one page of application workload `toml` (with `-H X-Default: d` and
/// `-H X-Fixed: cli`) to a server that keeps its request, and returns the request's head split
/// into lines, the `{{seq}}` of its path and the server's address.
fn one_application_request(toml: &str) -> (Vec<String>, String, std::net::SocketAddr) {
    let (addr, server) = one_request_server();
    let url = format!("http://alice:s%3Acret@127.0.0.1:{}/", addr.port());
    let target = Target::parse(&url).unwrap();
    let defaults = bench::workload::RequestSpec {
        headers: vec![
            ("X-Default".into(), "d".into()),
            ("X-Fixed".into(), "cli".into()),
        ],
        ..Default::default()
    };
    let workload = Workload::parse(toml, "workload.toml")
        .unwrap()
        .with_defaults(&defaults)
        .unwrap();
    assert!(
        workload.app.0.is_some(),
        "a template makes it an application's"
    );
    let config = BenchConfig {
        concurrency: 1,
        stop: Stop::Pages(1),
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(5),
        ..BenchConfig::new(target)
    };
    let result = bench::run(&config, &workload, &AtomicBool::new(false)).unwrap();
    let head = server.join().unwrap();
    assert_eq!(result.stats.requests, 1, "{head}");
    assert_eq!(result.stats.errors.total(), 0, "{head}");
    let lines: Vec<String> = head.split("\r\n").map(str::to_owned).collect();
    assert!(lines[0].starts_with("GET /item?n="), "{head}");
    assert!(lines[0].ends_with(" HTTP/1.1"), "{head}");
    let n = lines[0]["GET /item?n=".len()..lines[0].len() - " HTTP/1.1".len()].to_owned();
    (lines, n, addr)
}

/// An application workload's request: the fields that are the same on every request (written
/// once a run and copied) come in the same order and bytes as the rest: the request line,
/// `Host`, `User-Agent`, the URL's `Authorization`, the `-H` fields (those after
/// `Authorization`: the entry's `X-Fixed` replaces the `-H` one), then the entry's fields (each
/// one compiled as a template).
#[test]
fn an_application_request_carries_the_target_s_fields_then_its_own_then_its_templates() {
    let (lines, n, addr) = one_application_request(
        r#"
[[page]]
weight = 1
files = [{ path = "/item?n={{seq}}", headers = { "X-Fixed" = "a", "X-Seq" = "{{seq}}" } }]
"#,
    );
    assert_eq!(
        lines[1..],
        [
            format!("Host: 127.0.0.1:{}", addr.port()),
            "User-Agent: flint".into(),
            "Authorization: Basic YWxpY2U6czpjcmV0".into(),
            "X-Default: d".into(),
            "X-Fixed: a".into(),
            format!("X-Seq: {n}"),
            String::new(),
            String::new(),
        ],
        "{lines:?}"
    );
}

/// A templated `auth` replaces the URL's credentials: exactly one `Authorization`, the
/// templated one, where the URL's would be.
#[test]
fn an_application_request_s_templated_auth_replaces_the_url_s() {
    let (lines, n, addr) = one_application_request(
        r#"
[[page]]
weight = 1
files = [{ path = "/item?n={{seq}}", auth = "bob:{{seq}}" }]
"#,
    );
    let b64 = base64::Engine::encode(
        &base64::prelude::BASE64_STANDARD,
        format!("bob:{n}").as_bytes(),
    );
    assert_eq!(
        lines[1..],
        [
            format!("Host: 127.0.0.1:{}", addr.port()),
            "User-Agent: flint".into(),
            format!("Authorization: Basic {b64}"),
            "X-Default: d".into(),
            "X-Fixed: cli".into(),
            String::new(),
            String::new(),
        ],
        "{lines:?}"
    );
}
