//! A request answered 307 or 308 is sent again to the Location with the same method and the
//! very body bytes it sent, over HTTP/1.1 and HTTP/2, against the test application
//! (`app_support`), which notes every request's method and body: an application workload's
//! body is not expanded again (a `{{seq}}` or a `{{random}}` would change), and a request built
//! once, before the run, is repeated as it is.

use crate::app_support;
use crate::common;

use app_support::{Front, Received};
use common::{flint, run_bounded, texts};
use std::time::Duration;

/// A POST answered 307, a PUT answered 308: each body different every time it is expanded.
const REPEAT: &str = r#"
[[page]]
weight = 1
files = [
  { path = "/keep/307", method = "POST", body = "n={{seq}}&r={{random 1 1000000000}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 200, body_contains = "kept" } },
  { path = "/keep/308", method = "PUT", body = "{\"n\":{{seq}}}",
    headers = { "Content-Type" = "application/json" },
    expect = { status = 200, body_contains = "kept" } },
]
"#;

/// The same pages without templates: requests built once, before the run.
const STATIC: &str = r#"
[[page]]
weight = 1
files = [
  { path = "/keep/307", method = "POST", body = "a=1&b=2" },
  { path = "/keep/308", method = "PUT", body = "{\"n\":1}" },
]
"#;

/// HTTP/1.1 keep-alive (the default) and HTTP/2 by prior knowledge.
const MODES: [&[&str]; 2] = [&[], &["--http", "2"]];

/// Runs `workload` for three pages, following one redirect, against a new application over
/// `mode`: the requests it received.
fn run(workload: &str, mode: &[&str]) -> Vec<Received> {
    let app = match mode.is_empty() {
        true => app_support::start(),
        false => app_support::start_with(Front::H2c),
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), workload).unwrap();
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", app.addr), "-q", "-w"])
            .arg(dir.path().join("w.toml"))
            .args(["-c", "1", "-n", "3", "--redirect", "1", "--no-fail-fast"])
            .args(mode),
        Duration::from_secs(120),
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{mode:?}\n{stdout}{stderr}");
    let requests = app.requests.lock().unwrap().clone();
    requests
}

/// The requests of `requests` to `path`, in the order they came.
fn to(requests: &[Received], path: &str) -> Vec<Received> {
    requests
        .iter()
        .filter(|r| r.path == path)
        .cloned()
        .collect()
}

#[test]
fn a_307_or_308_sends_the_same_method_and_body_again() {
    for mode in MODES {
        let requests = run(REPEAT, mode);
        for code in ["307", "308"] {
            let sent = to(&requests, &format!("/keep/{code}"));
            assert_eq!(sent.len(), 3, "{mode:?} {code}: {requests:?}");
            let bodies: std::collections::BTreeSet<&str> =
                sent.iter().map(|r| r.body.as_str()).collect();
            assert_eq!(bodies.len(), 3, "a new body each page: {sent:?}");
            // Sent again: the same method and body, to the Location.
            let want: Vec<Received> = (sent.iter())
                .map(|r| Received {
                    path: format!("/kept/{code}"),
                    ..r.clone()
                })
                .collect();
            let again = to(&requests, &format!("/kept/{code}"));
            assert_eq!(again, want, "{mode:?}");
        }
    }
}

#[test]
fn a_request_built_once_is_repeated_as_it_is_too() {
    for mode in MODES {
        let requests = run(STATIC, mode);
        for (code, method, body) in [("307", "POST", "a=1&b=2"), ("308", "PUT", "{\"n\":1}")] {
            let again = to(&requests, &format!("/kept/{code}"));
            assert_eq!(again.len(), 3, "{mode:?} {code}: {requests:?}");
            let same = |r: &Received| r.method == method && r.body == body;
            assert!(again.iter().all(same), "{mode:?} {code}: {again:?}");
        }
    }
}
