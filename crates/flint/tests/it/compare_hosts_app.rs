//! `flint compare --hosts` with an application workload runs as `flint bench --hosts` does:
//! the workload's plan (data, templates, checks, extraction) travels to the workers in their
//! orders, and every round's requests are the application's own. Two workers on this machine
//! (a launch template without ssh) against the test application (`app_support`), which notes
//! every request's body (a login's names its user).

use crate::app_support;
use crate::common;
use crate::hosts_support;

use common::{flint, run_bounded, texts};
use hosts_support::{local_launch, LIMIT};
use std::sync::atomic::Ordering;

/// A visit: log in (a cookie and a token), the account page (a CSRF value), a form needing it.
const VISIT: &str = r#"
[data.users]
file = "users.csv"

[[page]]
name = "visit"
weight = 1
files = [
  { path = "/login", method = "POST", body = "user={{users.name}}&pass={{users.pass}}",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 303 }, extract = { token = { header = "X-Token" } } },
  { path = "/account?id={{users.id}}",
    expect = { status = 200, body_contains = "Hello {{users.name}}" },
    extract = { csrf = { regex = 'name="csrf" value="([^"]+)"' } } },
  { path = "/transfer", method = "POST", body = "csrf={{csrf}}&amount=1",
    headers = { "Content-Type" = "application/x-www-form-urlencoded" },
    expect = { status = 200, body_contains = "done" } },
]
"#;

#[test]
fn an_application_workload_runs_on_hosts_each_round() {
    let app = app_support::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), VISIT).unwrap();
    std::fs::write(dir.path().join("users.csv"), app_support::USERS_CSV).unwrap();
    let json = dir.path().join("r.json");
    // Two rounds of four visits, one Webchild on each of two hosts.
    let out = run_bounded(
        flint()
            .args(["compare", "--target", &format!("http://{}", app.addr), "-q"])
            .arg("-w")
            .arg(dir.path().join("w.toml"))
            .args(["--rounds", "2", "-c", "2", "-n", "4", "--hosts", "a,b"])
            .args(["--launch", &local_launch(), "--json"])
            .arg(&json),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{:?}\n{stdout}{stderr}", out.status);
    let requests = app.requests.lock().unwrap().clone();
    let logins: Vec<&str> = (requests.iter().filter(|r| r.path == "/login"))
        .map(|r| r.body.split('&').next().unwrap())
        .collect();
    assert_eq!(logins.len(), 2 * 4, "{logins:?}\n{stdout}{stderr}");
    // Each login named a user of the data set (its template expanded on the worker), and each
    // visit's form carried the CSRF value its account page gave (else `done` fails its check).
    let known = ["user=ann", "user=bo", "user=cy", "user=di"];
    assert!(logins.iter().all(|l| known.contains(l)), "{logins:?}");
    let transfers = requests.iter().filter(|r| r.path == "/transfer").count();
    assert_eq!(transfers, 2 * 4, "{stdout}{stderr}");
    assert_eq!(app.received.load(Ordering::Relaxed), 2 * 4 * 3);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let text = doc.to_string();
    assert!(!text.contains("check_"), "no check failed: {text}");
}
