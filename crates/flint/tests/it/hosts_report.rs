//! `flint bench --hosts` as its report tells it: who made the load (every host's threads, the
//! hosts file's counts), where each host's log goes, and what a lost host leaves. Workers run on
//! this machine through local templates; the server's access log is the independent count.

use crate::common;
use crate::hosts_support;

use common::{run_bounded, texts};
use hosts_support::{bench, launch_killing_victim, local_launch, read_json, served, server, LIMIT};

#[test]
fn three_workers_on_one_machine_each_log_to_their_own_file_in_one_clock() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let log = dir.path().join("run.csv");
    let hosts = dir.path().join("clients");
    std::fs::write(&hosts, "a 1\nb 1\nc 1\n").unwrap();
    let template = local_launch();
    let out = run_bounded(
        bench(&server, &["-c", "16", "-n", "600", "-t", "1"])
            .args([
                "--hosts-file",
                hosts.to_str().unwrap(),
                "--launch",
                &template,
            ])
            .args([
                "--log",
                log.to_str().unwrap(),
                "--json",
                json.to_str().unwrap(),
            ]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    // The hosts file's counts are the run's Webchildren, and the coordinator said so.
    assert!(
        stderr.contains("3 Webchildren, as the hosts file gives them (-c 16 is not used)"),
        "{stderr}"
    );
    // Every host's threads are on the Load line.
    assert!(
        stdout.contains("Load:      3 Webchildren on 3 threads on 3 hosts"),
        "{stdout}"
    );
    assert!(!log.exists(), "no host wrote the shared name");
    let doc = read_json(&json);
    let started_us = (doc["started_at_unix_s"].as_f64().unwrap() * 1e6) as u64;
    let mut rows = 0;
    for host in ["a", "b", "c"] {
        let text = std::fs::read_to_string(dir.path().join(format!("run.{host}.csv")))
            .unwrap_or_else(|e| panic!("run.{host}.csv: {e}"));
        let mut lines = text.lines();
        assert!(lines.next().unwrap().starts_with("thread,child,"), "{host}");
        for line in lines {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields.len(), 13, "a torn row in run.{host}.csv: {line:?}");
            assert_eq!(fields[12], "", "{line}");
            // In the coordinator's clock: not before the run's start as the report gives it
            // (the agreed start, in the coordinator's clock; µs truncation aside).
            let start: u64 = fields[4].parse().unwrap();
            assert!(start + 1 >= started_us, "{start} before {started_us}");
            rows += 1;
        }
    }
    assert_eq!(rows, 600, "one row per request, none lost");
    assert_eq!(served(dir.path(), 600), 600);
}

#[test]
fn a_lost_host_is_apart_from_the_clients_and_shows_what_it_was_known_to_do() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    // The victim's worker is killed 2.5 s after it starts, well into a run of 6 s.
    let template = launch_killing_victim("2.5");
    let out = run_bounded(
        bench(
            &server,
            &["-c", "4", "-d", "6s", "-t", "1", "--think", "2ms"],
        )
        .args(["--hosts", "steady,victim", "--launch", &template])
        .args([
            "--report",
            "webstone,summary",
            "--json",
            json.to_str().unwrap(),
        ]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let doc = read_json(&json);
    assert_eq!(doc["incomplete"], true);
    assert_eq!(doc["summary"]["clients"], 2, "the merged Webchildren");
    assert_eq!(doc["summary"]["clients_lost"], 2);
    assert!(stdout.contains("Total number of clients: 2\n"), "{stdout}");
    assert!(
        stdout.contains("Clients lost with their hosts: 2 (not in these figures)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("2 Webchildren on 1 thread on 1 host (2 more on lost hosts"),
        "{stdout}"
    );
    let hosts = doc["hosts"].as_array().unwrap();
    let (steady, victim) = (&hosts[0], &hosts[1]);
    assert_eq!(victim["status"], "lost", "{victim}");
    // What it was known to have done: its live figures, up to when it was last heard.
    let known = victim["known_until_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("{victim}"));
    assert!((0.5..=6.0).contains(&known), "{victim}");
    let victim_requests = victim["requests"].as_u64().unwrap();
    assert!(victim_requests > 0, "{victim}");
    let per_second: u64 = victim["requests_per_second"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(per_second, victim_requests, "{victim}");
    assert!(stdout.contains("as last heard"), "{stdout}");
    // The server answered at least what both say they did (more: the victim's requests after
    // its last live figures, and each host's in flight at the end).
    let merged = doc["summary"]["requests"].as_u64().unwrap();
    assert_eq!(merged, steady["requests"].as_u64().unwrap());
    let expected = (merged + victim_requests) as usize;
    assert!(served(dir.path(), expected) >= expected);
}

#[test]
fn a_log_to_stdout_is_refused_on_many_hosts() {
    // Stdout is each worker's control channel.
    let (_dir, server) = server();
    let template = local_launch();
    let out = run_bounded(
        bench(&server, &["-c", "2", "-n", "10", "--log", "-"])
            .args(["--hosts", "a,b", "--launch", &template]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--log - would write into the workers' control channel"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn hosts_given_no_page_of_a_page_count_are_not_warned_of_a_late_start() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let template = local_launch();
    // One page over three hosts of one Webchild each: b's and c's have nothing to send.
    let out = run_bounded(
        bench(&server, &["-n", "1", "-c", "3", "--hosts", "a,b,c"]).args([
            "--launch",
            &template,
            "--json",
            json.to_str().unwrap(),
        ]),
        LIMIT,
    );
    let (_, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    // a's start may well be late for a window of one page (a few ms): b and c had none.
    assert!(!stderr.contains("Warning: b:"), "{stderr}");
    assert!(!stderr.contains("Warning: c:"), "{stderr}");
    let doc = read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts.len(), 3);
    assert_eq!(hosts[0]["requests"], 1, "{}", hosts[0]);
    for h in &hosts[1..] {
        assert_eq!(h["requests"], 0, "{h}");
        assert!(h["warning"].is_null(), "{h}");
    }
    assert_eq!(served(dir.path(), 1), 1);
}
