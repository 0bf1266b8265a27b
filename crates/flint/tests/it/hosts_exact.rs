//! Many hosts, every request accounted for: three local workers against a server that records
//! every request it receives; the merged `requests + unfinished` is the server's count exactly,
//! run after run, and no host's log has a request begun at or after the end.

use crate::common;
use crate::hosts_support;

use common::{flint, run_bounded};
use hosts_support::{local_launch, read_json, LIMIT};
use std::time::Duration;
use test_support::recording::Recording;

#[test]
fn three_hosts_account_for_every_request_the_server_received() {
    let dir = tempfile::tempdir().unwrap();
    let template = local_launch();
    let modes: [&[&str]; 4] = [
        &["--http", "1.1"],
        &["--http", "1.0"],
        &["--pipeline"],
        &["--rate", "3000"],
    ];
    for (run, mode) in modes.iter().enumerate() {
        let srv = Recording::start(Duration::from_millis(1));
        let json = dir.path().join(format!("{run}.json"));
        let log = dir.path().join(format!("{run}.csv"));
        let mut cmd = flint();
        cmd.args(["bench", &format!("http://{}/a", srv.addr), "/b", "/c"])
            .args([
                "-q", "--report", "none", "-c", "6", "-t", "1", "-d", "300ms",
            ])
            .args(*mode)
            .args(["--hosts", "a,b,c", "--launch", &template])
            .args([
                "--json",
                json.to_str().unwrap(),
                "--log",
                log.to_str().unwrap(),
            ]);
        let out = run_bounded(&mut cmd, LIMIT);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let received = srv
            .settled(Duration::from_secs(10))
            .expect("connections end");
        let doc = read_json(&json);
        let s = &doc["summary"];
        let count = |k: &str| s[k].as_u64().unwrap();
        let (requests, unfinished) = (count("requests"), count("unfinished"));
        let what = format!(
            "run {run} ({mode:?}): server {received}, requests {requests}, unfinished {unfinished}"
        );
        assert_eq!(s["errors"], 0, "{what}");
        assert_eq!(received, requests + unfinished, "{what}");
        let start_us = (doc["started_at_unix_s"].as_f64().unwrap() * 1e6).round() as u64;
        let end_us = start_us + (s["duration_s"].as_f64().unwrap() * 1e6).round() as u64;
        let mut rows = 0;
        for host in ["a", "b", "c"] {
            let text =
                std::fs::read_to_string(dir.path().join(format!("{run}.{host}.csv"))).unwrap();
            for line in text.lines().skip(1) {
                let begun: u64 = line.split(',').nth(4).unwrap().parse().unwrap();
                // The coordinator's clock, as the report's start: µs rounding aside.
                assert!(
                    begun <= end_us,
                    "{what}: {line} begun after the end {end_us}"
                );
                rows += 1;
            }
        }
        assert_eq!(
            rows,
            requests + unfinished + count("unsent_at_end"),
            "{what}"
        );
    }
}

/// `--connections-per-client` reaches the workers: a page of three files, each Webchild's three
/// connections sharing it, so the hosts open three connections a Webchild (one each without the
/// option), and the accounting stays exact.
#[test]
fn hosts_share_each_page_among_a_webchilds_connections() {
    let dir = tempfile::tempdir().unwrap();
    let template = local_launch();
    let page = dir.path().join("page.toml");
    std::fs::write(
        &page,
        "[[page]]\nname = \"p\"\nweight = 1\nfiles = [\"/a\", \"/b\", \"/c\"]\n",
    )
    .unwrap();
    let srv = Recording::start(Duration::from_millis(5));
    let json = dir.path().join("shared.json");
    let mut cmd = flint();
    cmd.args(["bench", &format!("http://{}", srv.addr)])
        .arg("-w")
        .arg(&page)
        .args(["-q", "--report", "none", "-c", "6", "-t", "1", "-n", "60"])
        .args(["--connections-per-client", "3"])
        .args(["--hosts", "a,b,c", "--launch", &template])
        .args(["--json", json.to_str().unwrap()]);
    let out = run_bounded(&mut cmd, LIMIT);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let received = srv
        .settled(Duration::from_secs(10))
        .expect("connections end");
    let doc = read_json(&json);
    let s = &doc["summary"];
    let count = |k: &str| s[k].as_u64().unwrap();
    let (requests, unfinished) = (count("requests"), count("unfinished"));
    assert_eq!(s["errors"], 0, "{s}");
    assert_eq!(received, requests + unfinished, "{s}");
    assert_eq!(
        doc["config"]["connections_per_client"], 3,
        "{}",
        doc["config"]
    );
    // Each of the 6 Webchildren deals its page's three files to its three connections, kept
    // alive from page to page: 18 connects in all.
    let connects: u64 = doc["urls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["connects"].as_u64().unwrap())
        .sum();
    assert_eq!(connects, 18, "{}", doc["urls"]);
}
