//! `flint bench --hosts` when the hosts run different flint builds: a message with a field one
//! side does not know, or lacking one it needs, stops the run before anything is sent to the
//! target, naming the field and both flint versions; never a run other than the one asked for.

use crate::common;
use crate::hosts_support;

use bench::hosts::protocol::{FLINT_VERSION, PROTOCOL_VERSION};
use common::run_bounded;
use hosts_support::{bench, exe, served, server, LIMIT};
use std::time::Duration;

/// Runs `-c 1 -d 1s` on one host `other` started by `template`; its exit code and stderr.
fn run_with(template: &str) -> (Option<i32>, String) {
    run_on("other", "1", template)
}

/// Runs `-c c -d 1s` on `hosts` started by `template`, expecting it not to start: its exit
/// code and stderr.
fn run_on(hosts: &str, c: &str, template: &str) -> (Option<i32>, String) {
    let (dir, server) = server();
    let out = run_bounded(
        &mut bench(
            &server,
            &["-c", c, "-d", "1s", "--hosts", hosts, "--launch", template],
        ),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("Sending GO"), "{stderr}");
    std::thread::sleep(Duration::from_millis(1200)); // one access-log flush interval
    assert_eq!(served(dir.path(), 0), 0, "nothing connected: {stderr}");
    (out.status.code(), stderr)
}

#[test]
fn a_worker_whose_orders_carry_a_field_it_does_not_know_refuses_them() {
    // The real worker, its orders given a field as a newer coordinator would send it.
    let template = format!(
        r#"sed -u 's/"redirect":/"newer_option":1,"redirect":/' | {} worker"#,
        exe()
    );
    let (code, stderr) = run_with(&template);
    assert_eq!(code, Some(2), "{stderr}");
    let reason = format!(
        "the run did not start: other: orders from the coordinator (flint {FLINT_VERSION}) \
         refused: unknown field `run.newer_option`; this worker is flint {FLINT_VERSION} \
         (protocol {PROTOCOL_VERSION})"
    );
    assert!(stderr.contains(&reason), "{stderr}");
}

#[test]
fn a_worker_message_with_a_field_too_many_or_too_few_is_refused_by_the_coordinator() {
    let hello =
        format!(r#"{{"type":"hello","protocol":{PROTOCOL_VERSION},"flint_version":"9.9.9"}}"#);
    for (ready, why) in [
        (
            r#"{"type":"ready","threads":1,"pid":1,"newer_option":4}"#,
            "unknown field `newer_option`",
        ),
        (r#"{"type":"ready","threads":1}"#, "missing field `pid`"),
    ] {
        // A worker of another build: its hello, then READY once the orders came.
        let template = format!("echo '{hello}'; read orders; echo '{ready}'; exec sleep 30");
        let (code, stderr) = run_with(&template);
        assert_eq!(code, Some(2), "{stderr}");
        let reason = format!(
            "other: ready from its worker (flint 9.9.9) refused: {why}; this coordinator is \
             flint {FLINT_VERSION} (protocol {PROTOCOL_VERSION})"
        );
        assert!(stderr.contains(&reason), "{stderr}");
    }
}

#[test]
fn a_hello_of_another_protocol_version_is_refused_by_its_versions_whatever_its_fields() {
    // A newer worker's hello may carry fields this coordinator does not know: the versions are
    // what it names.
    let template = r#"echo '{"type":"hello","protocol":999,"flint_version":"9.9.9","newer_option":8}'; exec sleep 30"#;
    let (code, stderr) = run_with(template);
    assert_eq!(code, Some(2), "{stderr}");
    let reason = format!(
        "other: its worker speaks protocol version 999 (flint 9.9.9), this coordinator version \
         {PROTOCOL_VERSION} (flint {FLINT_VERSION})"
    );
    assert!(stderr.contains(&reason), "{stderr}");
}

/// The real worker, with `garbage` written into its channel as its line `n` (sed, unbuffered,
/// inserts it before the worker's own line `n`).
fn worker_saying_at(n: u32, garbage: &str) -> String {
    format!("{} worker | sed -u '{n}i {garbage}'", exe())
}

#[test]
fn a_line_that_is_not_json_during_the_clock_probes_means_the_run_does_not_start() {
    // Line 1 the hello, line 2 READY, line 3 would be the first pong: the garbage comes among
    // the pongs.
    let (code, stderr) = run_with(&worker_saying_at(3, "garbage"));
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "the run did not start: other: during the clock probes it said line 3 of its \
             channel, not a message (expected value at column 1): \"garbage\""
        ),
        "{stderr}"
    );
}

#[test]
fn a_line_that_is_not_json_during_the_run_loses_the_host_naming_the_channels_line() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    // The hello, READY, eight pongs, one line of the run: the garbage is line 12.
    let template = format!(
        "if [ {{host}} = b ]; then {}; else exec {} worker; fi",
        worker_saying_at(12, "garbage"),
        exe()
    );
    let out = run_bounded(
        bench(&server, &["-c", "2", "-d", "3s", "--hosts", "a,b"]).args([
            "--launch",
            &template,
            "--json",
            json.to_str().unwrap(),
        ]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc = hosts_support::read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["status"], "ok", "{stderr}");
    assert_eq!(hosts[1]["status"], "lost", "{stderr}");
    let reason = hosts[1]["reason"].as_str().unwrap();
    assert!(
        reason.contains("line 12 of its channel, not a message (expected value at column 1)"),
        "{reason}"
    );
    assert!(!reason.contains("line 1 column"), "{reason}");
}

#[test]
fn a_ready_host_saying_what_is_not_json_while_another_starts_means_the_run_does_not_start() {
    // b says READY (its line 2), then garbage at once (sed appends it after line 2), then
    // marks that it has; a starts only then, so b's line comes while a is still starting.
    let dir = tempfile::tempdir().unwrap();
    let mark = dir.path().join("said");
    let mark = mark.to_str().unwrap();
    let template = format!(
        "if [ {{host}} = b ]; then {exe} worker | sed -u '2a garbage' | while IFS= read -r l; do \
         printf '%s\\n' \"$l\"; [ \"$l\" = garbage ] && touch {mark}; done; else \
         while [ ! -e {mark} ]; do sleep 0.05; done; exec {exe} worker; fi",
        exe = exe()
    );
    let (code, stderr) = run_on("a,b", "2", &template);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "b: while the other hosts started it said line 3 of its channel, not a message \
             (expected value at column 1): \"garbage\""
        ),
        "{stderr}"
    );
}

#[test]
fn a_host_that_answers_no_clock_probe_fails_and_the_run_does_not_start() {
    // The hello and READY get through; sed drops every line after them, the pongs too.
    let template = format!("{} worker | sed -u '3,$d'", exe());
    let (code, stderr) = run_with(&template);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("other: no answer to clock probe 1 of 8 within 5 s"),
        "{stderr}"
    );
}
