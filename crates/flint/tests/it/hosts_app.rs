//! `flint bench --hosts` with an application workload: two workers on this machine (a launch
//! template without ssh) against the test application (`app_support`), which notes every
//! request's body (a login's names its user). A `unique` data set is split between the
//! hosts, so no row is used twice; each host's checks and errors are merged into the one
//! report, and the application's count agrees.

use crate::app_support;
use crate::common;
use crate::hosts_support;

use bench::hosts::protocol::PROTOCOL_VERSION;
use common::{flint, run_bounded, texts};
use hosts_support::{local_launch, read_json, sum, LIMIT};
use std::sync::atomic::Ordering;

/// A visit: log in (a cookie and a token), the account page (a CSRF value), a form needing it.
const VISIT: &str = r#"
[data.users]
file = "users.csv"
pick = "unique"

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

/// The application's four users and four it does not know (their login fails its check): the
/// hosts, of one Webchild each, take half the rows each, host 0 rows 0-3 (two of each kind),
/// host 1 rows 4-7.
const USERS: &str = "id,name,pass\n1,ann,pa\n2,bo,pb\n5,x5,no\n6,x6,no\n\
                     3,cy,pc\n4,di,pd\n7,x7,no\n8,x8,no\n";

#[test]
fn two_hosts_split_unique_rows_and_merge_their_checks() {
    let app = app_support::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), VISIT).unwrap();
    std::fs::write(dir.path().join("users.csv"), USERS).unwrap();
    let json = dir.path().join("r.json");
    // One Webchild a host, five pages each: four rows, then it runs out.
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", app.addr), "-q"])
            .arg("-w")
            .arg(dir.path().join("w.toml"))
            .args(["-c", "2", "-n", "10", "--no-fail-fast", "--hosts", "a,b"])
            .args(["--launch", &local_launch(), "--json"])
            .arg(&json),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{:?}\n{stdout}{stderr}", out.status);
    let doc = read_json(&json);
    let requests = app.requests.lock().unwrap().clone();
    let logins = requests.iter().filter(|r| r.path == "/login");
    let mut logins: Vec<&str> = logins
        .map(|r| {
            r.body
                .split('&')
                .next()
                .unwrap()
                .trim_start_matches("user=")
        })
        .collect();
    logins.sort();
    assert_eq!(
        logins,
        ["ann", "bo", "cy", "di", "x5", "x6", "x7", "x8"],
        "every row used once across the hosts\n{stdout}{stderr}"
    );
    let errors = &doc["errors_by_kind"];
    assert_eq!(errors["check_status"], 4, "the unknown users' logins");
    assert_eq!(errors["data_exhausted"], 2, "each host ran out once");
    let summary = &doc["summary"];
    assert_eq!(summary["pages"], 4, "the known users' visits");
    assert_eq!(summary["requests"], 4 * 3 + 4);
    assert_eq!(summary["errors"], 6);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 2);
    for h in hosts {
        assert_eq!(h["status"], "ok", "{h}");
        // Each host: two visits, two failed logins, then its rows ran out.
        assert_eq!((&h["pages"], &h["errors"]), (&2.into(), &3.into()), "{h}");
    }
    assert_eq!(sum(hosts, "requests"), 16, "merged = sum of hosts");
    let failures = doc["check_failures"].as_array().map_or(0, Vec::len);
    assert_eq!(failures, 4, "both hosts' failures shown: {doc}");
    let sent = summary["requests"].as_u64().unwrap() + summary["unfinished"].as_u64().unwrap();
    assert_eq!(app.received.load(Ordering::Relaxed), sent, "server count");
}

#[test]
fn a_host_that_never_reads_its_orders_ends_the_run_with_that_reason() {
    let app = app_support::start();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("w.toml"), VISIT).unwrap();
    // Orders far larger than a pipe holds: writing them blocks until the host reads.
    let mut users = String::from("id,name,pass\n");
    for i in 0..20_000 {
        users.push_str(&format!("{i},user{i},pass{i}\n"));
    }
    std::fs::write(dir.path().join("users.csv"), users).unwrap();
    // A worker of this build's protocol that says hello, then never reads its stdin.
    let hello =
        format!(r#"{{"type":"hello","protocol":{PROTOCOL_VERSION},"flint_version":"9.9.9"}}"#);
    let template = format!("echo '{hello}'; exec sleep 600");
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", app.addr), "-q"])
            .arg("-w")
            .arg(dir.path().join("w.toml"))
            .args([
                "-c", "1", "-n", "1", "--hosts", "mute", "--launch", &template,
            ]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}{stderr}");
    assert!(
        stderr.contains("mute: orders not delivered within 30 s"),
        "{stdout}{stderr}"
    );
    assert_eq!(app.received.load(Ordering::Relaxed), 0, "nothing sent");
}
