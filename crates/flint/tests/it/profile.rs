//! `flint bench --profile`: flint serve profiled under a short run, end to end. strace is
//! installed by scripts/test; without it these tests fail (they never skip).

use crate::common;

use common::{flint, run_bounded, start_server, Server};
use serde_json::Value;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

fn require_strace() {
    let ok = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "strace is not installed: run the tests through scripts/test, or `sudo apt-get install strace`"
    );
}

/// `flint bench` of /a.html for 2 s with `--profile what`: its stdout, stderr and JSON.
fn bench_with_profile(server: &Server, dir: &Path, what: &str) -> (String, String, Value) {
    let json_path = dir.join(format!("{}.json", what.replace(':', "-")));
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", server.addr), "/a.html"])
            .args(["-c", "4", "-d", "2s", "--quiet", "--report", "summary"])
            .args(["--profile", what])
            .arg("--json")
            .arg(&json_path),
        Duration::from_secs(120),
    );
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(out.status.success(), "stdout: {stdout}\nstderr: {stderr}");
    let json = serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    (stdout, stderr, json)
}

fn docroot() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), vec![b'a'; 2000]).unwrap();
    dir
}

/// What must hold of any profile of flint serve under keep-alive load.
fn check_keepalive_profile(json: &Value, stdout: &str) -> Value {
    let requests = json["summary"]["requests"].as_u64().unwrap();
    assert!(
        requests > 100,
        "too few requests to check anything: {requests}"
    );
    let p = &json["server_profile"];
    assert!(p.is_object(), "no server_profile in the JSON");
    let total = p["total_calls"].as_u64().unwrap();
    assert!(total > 0);
    let per_request = p["calls_per_request"].as_f64().unwrap();
    assert!(
        (per_request * requests as f64 - total as f64).abs() < 1e-6 * total as f64,
        "{per_request} calls per request x {requests} requests != {total} calls"
    );
    assert!(p["cpu_us_per_request"].as_f64().unwrap() > 0.0);
    let rows = p["syscalls"].as_array().unwrap();
    let sum: u64 = rows.iter().map(|r| r["calls"].as_u64().unwrap()).sum();
    assert_eq!(sum, total, "the rows do not add up to the total");
    let calls = |names: &[&str]| -> u64 {
        rows.iter()
            .filter(|r| names.contains(&r["name"].as_str().unwrap()))
            .map(|r| r["calls"].as_u64().unwrap())
            .sum()
    };
    // A keep-alive server reads each request and writes each response at least once.
    let received = calls(&["recvfrom", "read", "recvmsg"]);
    let sent = calls(&["sendmsg", "writev", "sendto", "write", "sendfile"]);
    assert!(
        received * 10 >= requests * 9,
        "{received} reads for {requests} requests: {rows:?}"
    );
    assert!(
        sent * 10 >= requests * 9,
        "{sent} writes for {requests} requests: {rows:?}"
    );
    assert!(stdout.contains("sys totals:"), "no truss table:\n{stdout}");
    assert!(stdout.contains("syscalls per request"), "{stdout}");
    p.clone()
}

#[test]
fn profile_of_flint_serve_adds_up_with_the_tracer_found_here() {
    require_strace();
    let dir = docroot();
    let server = start_server(dir.path(), 2);
    let pid = server.child.id().to_string();
    let (stdout, stderr, json) = bench_with_profile(&server, dir.path(), &pid);
    let p = check_keepalive_profile(&json, &stdout);
    let method = p["method"].as_str().unwrap();
    assert!(method == "perf" || method == "strace", "{method}");
    assert_eq!(p["pid"].as_u64().unwrap().to_string(), pid);
    assert!(!stderr.contains("no server profile"), "{stderr}");
    // The JSON still matches its schema with the profile in it.
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    assert!(validator.is_valid(&json));
}

#[test]
fn profile_with_strace_says_so_and_times_each_syscall() {
    require_strace();
    let dir = docroot();
    let server = start_server(dir.path(), 2);
    let what = format!("{}:strace", server.child.id());
    let (stdout, _, json) = bench_with_profile(&server, dir.path(), &what);
    let p = check_keepalive_profile(&json, &stdout);
    assert_eq!(p["method"], "strace");
    assert!(p["note"].as_str().unwrap().contains("slower"), "{p}");
    assert!(p["total_seconds"].as_f64().is_some());
    assert!(stdout.contains("strace -c -f"), "{stdout}");
}

#[test]
fn profile_auto_finds_the_local_server_by_its_port() {
    require_strace();
    let dir = docroot();
    let server = start_server(dir.path(), 2);
    let (stdout, _, json) = bench_with_profile(&server, dir.path(), "auto:strace");
    let p = check_keepalive_profile(&json, &stdout);
    assert_eq!(p["pid"].as_u64(), Some(u64::from(server.child.id())));
}

#[test]
fn profile_of_a_gone_process_is_refused_before_the_run() {
    let dir = docroot();
    let server = start_server(dir.path(), 2);
    let mut gone = Command::new("true").spawn().unwrap();
    let pid = gone.id().to_string();
    gone.wait().unwrap();
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}", server.addr), "/a.html"])
            .args(["-c", "4", "-d", "30s", "--quiet", "--profile", &pid]),
        Duration::from_secs(20),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("--profile {pid}: no process has that pid")),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "a run started");
}
