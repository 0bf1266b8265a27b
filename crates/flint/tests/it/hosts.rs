//! `flint bench --hosts`: many client hosts through launch templates, end to end. Workers run on
//! this machine (a template without ssh); the server's access log is the independent count.

use crate::common;
use crate::hosts_support;

use bench::config::TlsOptions;
use bench::hosts::protocol::{self, Orders, RunOrders, ToWorker};
use bench::{HttpMode, Scheme, Workload};
use common::{flint, run_bounded, texts, wait_exit};
use hosts_support::{
    bench, exe, launch_killing_victim, local_launch, read_json, served, server, sum, LIMIT,
};
use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn three_local_workers_fetch_exactly_n_pages_and_the_server_agrees() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let template = local_launch();
    let out = run_bounded(
        bench(&server, &["-c", "7", "-n", "900", "--hosts", "a,b,c"]).args([
            "--launch",
            &template,
            "--json",
            json.to_str().unwrap(),
        ]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    for line in [
        "Waiting for READY from 3 clients",
        "All READYs received",
        "Sending GO to all clients",
        "All clients started at",
        "All clients ended at",
    ] {
        assert!(stderr.contains(line), "{line:?} missing from {stderr}");
    }
    assert!(stdout.contains("Client hosts: 3 (3 ok)"), "{stdout}");
    let doc = read_json(&json);
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&doc).map(|e| e.to_string()).collect();
    assert!(
        errors.is_empty(),
        "not as docs/bench-json.schema.json says: {errors:#?}"
    );
    let hosts = doc["hosts"].as_array().unwrap();
    let children: Vec<u64> = hosts
        .iter()
        .map(|h| h["webchildren"].as_u64().unwrap())
        .collect();
    assert_eq!(children, [3, 2, 2], "the remainder goes to the first host");
    assert!(hosts.iter().all(|h| h["status"] == "ok"), "{hosts:?}");
    // -n is split exactly: every page fetched once, one file per page.
    assert_eq!(doc["summary"]["pages"], 900);
    assert_eq!(doc["summary"]["requests"], 900);
    assert_eq!(sum(hosts, "requests"), 900, "merged = sum of hosts");
    assert_eq!(doc["summary"]["errors"], 0);
    assert_eq!(
        served(dir.path(), 900),
        900,
        "server-side count = merged count"
    );
    let response_count: u64 = doc["summary"]["response_ms"]["count"].as_u64().unwrap();
    assert_eq!(
        response_count, 900,
        "the merged histogram holds every request"
    );
    for h in hosts {
        // One machine, one clock: the measured offset is within a round trip's half of 0.
        let offset = h["clock_offset_ms"].as_f64().unwrap();
        assert!(offset.abs() < 100.0, "{h}");
        assert!(h["start_skew_ms"].as_f64().unwrap() >= 0.0, "{h}");
        assert!(
            h["client_cpu_us_per_request"].as_f64().unwrap() > 0.0,
            "{h}"
        );
        assert!(h["response_ms"]["count"].as_u64().unwrap() > 0, "{h}");
    }
}

#[test]
fn forty_local_workers_run_a_timed_open_loop_and_merge_per_second() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let template = local_launch();
    let names: Vec<String> = (1..=40).map(|i| format!("w{i}")).collect();
    let out = run_bounded(
        bench(
            &server,
            &["-c", "40", "-d", "2s", "--rate", "400", "-t", "1"],
        )
        .args(["--hosts", &names.join(","), "--launch", &template])
        .args(["--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let doc = read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    let not_ok: Vec<&Value> = hosts.iter().filter(|h| h["status"] != "ok").collect();
    assert!(
        out.status.success(),
        "{}\n{not_ok:#?}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(hosts.len(), 40);
    assert!(hosts.iter().all(|h| h["status"] == "ok"));
    let requests = doc["summary"]["requests"].as_u64().unwrap();
    assert_eq!(sum(hosts, "requests"), requests);
    let per_second: u64 = doc["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["requests"].as_u64().unwrap())
        .sum();
    assert_eq!(
        per_second, requests,
        "the aligned seconds add up to the total"
    );
    // 400 pages/s for 2 s, each Webchild on its own slot of the whole schedule: never more than
    // the schedule holds. A loaded machine makes fewer (a late Webchild does not catch up), so
    // the exact checks are the sums above and the server's count below.
    assert!((1..=900).contains(&requests), "{requests}");
    // A timed run: the server also received what was in flight when the window closed (at most
    // one request per Webchild), which the clients counted as unfinished (the access log has
    // those it answered: the exact count is held by hosts_exact.rs's recording server).
    let unfinished = doc["summary"]["unfinished"].as_u64().unwrap();
    assert!(unfinished <= 40, "{unfinished}");
    let server_side = served(dir.path(), requests as usize) as u64;
    assert!(
        (requests..=requests + unfinished).contains(&server_side),
        "server {server_side}, merged {requests} + {unfinished} unfinished"
    );
}

#[test]
fn a_host_that_starts_late_is_named_with_its_skew_and_a_warning_and_bytes_add_up() {
    // Host `late` gets its GO 1.5 s after the others (a filter on its stdin holds the line), so
    // its load begins about a second after the agreed start, into its 2 s window.
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let template = format!(
        r#"if [ {{host}} = late ]; then while IFS= read -r l; do case "$l" in *'"type":"go"'*) sleep 1.5;; esac; printf '%s\n' "$l"; done | {exe} worker; else exec {exe} worker; fi"#,
        exe = exe()
    );
    let out = run_bounded(
        bench(
            &server,
            &[
                "-c",
                "2",
                "-d",
                "2s",
                "--http",
                "2",
                "--hosts",
                "early,late",
            ],
        )
        .args(["--launch", &template, "--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let (stdout, stderr) = texts(&out);
    assert!(out.status.success(), "{stderr}");
    let doc = read_json(&json);
    let hosts = doc["hosts"].as_array().unwrap();
    let late = &hosts[1];
    assert_eq!(late["name"], "late", "{hosts:?}");
    let skew = late["start_skew_ms"].as_f64().expect("a skew");
    assert!(skew >= 900.0, "{late}");
    let warning = late["warning"].as_str().expect("a warning");
    assert!(warning.contains("started late"), "{warning}");
    assert!(stderr.contains("Warning: late: started late"), "{stderr}");
    assert!(stdout.contains("Warning: late: started late"), "{stdout}");
    // One name, one quantity: the hosts' data moved is the summary's, and so are the bytes
    // read (over HTTP/2 more: its framing, and the responses unfinished at the end).
    let summary = &doc["summary"];
    assert_eq!(
        sum(hosts, "bytes_total"),
        summary["bytes_total"].as_u64().unwrap()
    );
    assert_eq!(
        sum(hosts, "bytes_read"),
        summary["bytes_read"].as_u64().unwrap()
    );
    assert!(
        sum(hosts, "bytes_read") > sum(hosts, "bytes_total"),
        "{hosts:?}"
    );
    // The host on time: a warning only if it, too, began more than 1% of its window late.
    let early = &hosts[0];
    if early["start_skew_ms"].as_f64().unwrap() < 15.0 {
        assert!(early.get("warning").is_none(), "{early}");
    }
}

#[test]
fn expect_status_reaches_every_worker() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let template = local_launch();
    let hosts = [
        "-c", "4", "-n", "200", "--hosts", "a,b", "--launch", &template,
    ];
    // Only a 304 succeeds: every 200 of both workers is an error of its class.
    let out = run_bounded(
        bench(&server, &hosts).args(["--expect-status", "304", "--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("not one response succeeded (status_2xx 200)"),
        "{stderr}"
    );
    let doc = read_json(&json);
    assert_eq!(doc["summary"]["requests"], 200);
    assert_eq!(doc["summary"]["errors"], 200);
    for h in doc["hosts"].as_array().unwrap() {
        assert_eq!(h["errors"], h["requests"], "{h}");
    }
    assert_eq!(
        served(dir.path(), 200),
        200,
        "the server answered every one"
    );
    // The list as given succeeds on both.
    let out = run_bounded(
        bench(&server, &hosts).args(["--expect-status", "200"]),
        LIMIT,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
}

#[test]
fn redirect_reaches_every_worker() {
    let (dir, server) = server();
    let www = dir.path().join("www");
    std::fs::create_dir(www.join("d")).unwrap();
    std::fs::write(www.join("d/index.html"), b"index").unwrap();
    let json = dir.path().join("r.json");
    let template = local_launch();
    // `/d` is answered 301 to `/d/`: followed on both hosts, each hop a line of the log.
    let out = run_bounded(
        flint()
            .args(["bench", &format!("http://{}/d", server.addr), "-q"])
            .args([
                "-c", "4", "-n", "100", "--hosts", "a,b", "--launch", &template,
            ])
            .args(["--redirect", "1", "--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = read_json(&json);
    assert_eq!(doc["summary"]["requests"], 200);
    assert_eq!(doc["summary"]["redirects"]["followed"], 100);
    assert_eq!(doc["summary"]["status_counts"]["200"], 100);
    assert_eq!(served(dir.path(), 200), 200, "the server logged every hop");
}

#[test]
fn a_host_that_refuses_stops_the_run_before_anything_is_sent() {
    let (dir, server) = server();
    let template = format!(
        "if [ {{host}} = bad ]; then echo 'ssh: connect to host bad port 22: Connection refused' >&2; exit 255; fi; exec {} worker",
        exe()
    );
    let out = run_bounded(
        &mut bench(
            &server,
            &[
                "-c", "2", "-d", "1s", "--hosts", "good,bad", "--launch", &template,
            ],
        ),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("did not start: bad: exited before READY"),
        "{stderr}"
    );
    assert!(stderr.contains("Connection refused"), "{stderr}");
    assert!(!stderr.contains("Sending GO"), "{stderr}");
    std::thread::sleep(Duration::from_millis(1200)); // one access-log flush interval
    assert_eq!(served(dir.path(), 0), 0, "nothing connected");
}

#[test]
fn a_reason_said_after_the_channel_closed_is_quoted() {
    // ssh closes the channel, then says why as it exits: on a busy machine that can come long
    // after the close. The shell here closes its stdout and says why a second later.
    let (_dir, server) = server();
    let template = format!(
        "if [ {{host}} = bad ]; then exec >&-; sleep 1; echo 'ssh: connect to host bad port 22: Connection refused' >&2; exit 255; fi; exec {} worker",
        exe()
    );
    let out = run_bounded(
        &mut bench(
            &server,
            &[
                "-c", "2", "-d", "1s", "--hosts", "good,bad", "--launch", &template,
            ],
        ),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "bad: exited before READY (ssh: connect to host bad port 22: Connection refused)"
        ),
        "{stderr}"
    );
}

#[test]
fn a_worker_of_another_protocol_version_is_refused_with_both_versions() {
    let (_dir, server) = server();
    let template =
        r#"echo '{"type":"hello","protocol":999,"flint_version":"9.9.9"}'; exec sleep 30"#;
    let started = Instant::now();
    let out = run_bounded(
        &mut bench(
            &server,
            &[
                "-c", "1", "-d", "1s", "--hosts", "old", "--launch", template,
            ],
        ),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("protocol version 999 (flint 9.9.9)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("(flint {})", env!("CARGO_PKG_VERSION"))),
        "{stderr}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "the sleeper was not waited for"
    );
}

#[test]
fn a_worker_killed_mid_run_is_lost_and_the_others_finish() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    // The victim's worker is killed 1.5 s into its run.
    let template = launch_killing_victim("2");
    let out = run_bounded(
        bench(
            &server,
            &["-c", "2", "-d", "4s", "--hosts", "steady,victim"],
        )
        .args(["--launch", &template, "--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("incomplete"), "{stderr}");
    let doc = read_json(&json);
    assert_eq!(doc["incomplete"], true);
    let hosts = doc["hosts"].as_array().unwrap();
    assert_eq!(hosts[0]["status"], "ok");
    assert_eq!(hosts[1]["status"], "lost");
    assert!(
        hosts[1]["reason"].as_str().unwrap().contains("closed"),
        "{}",
        hosts[1]
    );
    assert_eq!(
        doc["summary"]["requests"], hosts[0]["requests"],
        "the merge of the rest"
    );
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
}

#[test]
fn bad_host_input_is_one_clear_line_before_anything_starts() {
    let (_dir, server) = server();
    for (args, message) in [
        (vec!["--hosts", " , "], "the host list is empty"),
        (
            vec!["--hosts", "a", "--launch", "  "],
            "the launch template has no command",
        ),
        (
            vec!["-c", "2", "--hosts", "a,b,c"],
            "2 Webchildren cannot be spread over 3 hosts",
        ),
        (
            vec!["--launch", "x"],
            "--launch needs --hosts or --hosts-file",
        ),
    ] {
        let out = run_bounded(&mut bench(&server, &args), LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(message), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn ctrl_c_stops_every_worker_and_reports_what_was_measured() {
    let (dir, server) = server();
    let json = dir.path().join("r.json");
    let pids = dir.path().join("pids");
    std::fs::create_dir(&pids).unwrap();
    let template = format!(
        "echo $$ > {}/{{host}}; exec {} worker",
        pids.display(),
        exe()
    );
    let mut child = bench(&server, &["-c", "2", "-d", "60s", "--hosts", "a,b"])
        .args(["--launch", &template, "--json", json.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Wait (bounded) until both workers run and requests flow, then Ctrl-C.
    let deadline = Instant::now() + Duration::from_secs(30);
    while served(dir.path(), 1) == 0 {
        assert!(Instant::now() < deadline, "no request reached the server");
    }
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::INT).unwrap();
    let status = wait_exit(&mut child, Duration::from_secs(15));
    if status.is_none() {
        let _ = child.kill();
        panic!("the coordinator did not end after Ctrl-C");
    }
    let doc = read_json(&json);
    assert_eq!(doc["interrupted"], true);
    assert!(doc["summary"]["requests"].as_u64().unwrap() > 0);
    for host in ["a", "b"] {
        let worker: i32 = std::fs::read_to_string(pids.join(host))
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(
            !Path::new(&format!("/proc/{worker}")).exists(),
            "worker {host} ({worker}) outlived its run"
        );
    }
}

#[test]
fn a_worker_stops_within_a_second_when_its_stdin_closes() {
    let (_dir, server) = server();
    let mut worker = Command::new(exe())
        .arg("worker")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(worker.stdout.take().unwrap()).lines();
    let hello = lines.next().unwrap().unwrap();
    assert!(hello.contains("\"type\":\"hello\""), "{hello}");
    let mut stdin = worker.stdin.take().unwrap();
    let orders = one_webchild_for_a_minute(&server.addr.to_string());
    stdin
        .write_all(&protocol::encode(&orders).unwrap())
        .unwrap();
    let ready = lines.next().unwrap().unwrap();
    assert!(ready.contains("\"type\":\"ready\""), "{ready}");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as u64;
    writeln!(
        stdin,
        r#"{{"type":"go","start_unix_us":{now},"clock_offset_us":0}}"#
    )
    .unwrap();
    // Running (a heartbeat or a live line came), then the coordinator goes away.
    let next = lines.next().unwrap().unwrap();
    assert!(
        next.contains("heartbeat") || next.contains("live"),
        "{next}"
    );
    std::thread::spawn(move || lines.for_each(drop)); // its result must not fill the pipe
    drop(stdin);
    let closed = Instant::now();
    // It would otherwise run on; the margin is for a loaded machine.
    let status = wait_exit(&mut worker, Duration::from_secs(15));
    let _ = worker.kill();
    let _ = worker.wait();
    assert!(
        status.is_some(),
        "the worker is still running 15 s after its stdin closed"
    );
    println!("exited {:?} after its stdin closed", closed.elapsed());
}

/// Orders of this build for one Webchild fetching `/a.html` from `addr` for a minute.
fn one_webchild_for_a_minute(addr: &str) -> ToWorker {
    ToWorker::Orders(Box::new(Orders {
        protocol: protocol::PROTOCOL_VERSION,
        flint_version: protocol::FLINT_VERSION.into(),
        host: "h".into(),
        url: format!("http://{addr}/"),
        connect_to: addr.into(),
        host_header: addr.into(),
        scheme: Scheme::Http,
        server_name: String::new(),
        authorization: None,
        tls: TlsOptions::default(),
        first_child: 0,
        end_child: 1,
        run: RunOrders {
            concurrency: 1,
            threads: Some(1),
            duration_us: Some(60_000_000),
            pages: None,
            warmup_us: 0,
            think_us: None,
            rate: None,
            http: HttpMode::KeepAlive,
            connections_per_child: 1,
            streams: None,
            h2_window: None,
            connect_timeout_us: 1_000_000,
            response_timeout_us: 1_000_000,
            busy_poll_us: 0,
            read_slack: 0.0,
            seed: 1,
            expect_status: None,
            redirect: 0,
            fail_fast: true,
            early_data: false,
            log: None,
        },
        workload: Workload::from_pages([("a".to_owned(), 1.0, vec!["/a.html"])]).unwrap(),
    }))
}

#[test]
fn compare_takes_its_load_from_hosts_too() {
    let (dir, server) = server();
    let json = dir.path().join("c.json");
    let template = local_launch();
    let out = run_bounded(
        flint()
            .args([
                "compare",
                "--target",
                &format!("a=http://{}", server.addr),
                "/a.html",
            ])
            .args([
                "-c", "2", "-n", "200", "--rounds", "2", "-q", "--report", "none",
            ])
            .args(["--hosts", "w1,w2", "--launch", &template])
            .args(["--json", json.to_str().unwrap()]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let doc = read_json(&json);
    let target = &doc["targets"][0];
    assert_eq!(target["status"], "ok", "{target}");
    let rounds = target["rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2);
    assert!(rounds.iter().all(|r| r["requests"] == 200), "{rounds:?}");
    assert_eq!(
        served(dir.path(), 400),
        400,
        "two rounds of 200 pages, from the hosts"
    );
}

#[test]
fn host_names_never_run_commands_on_the_coordinator() {
    let (dir, server) = server();
    let planted = dir.path().join("planted");
    let names = format!("a;touch${{IFS}}{}", planted.display());
    let file = dir.path().join("clients");
    std::fs::write(&file, format!("ok 1\n$(touch {}) 1\n", planted.display())).unwrap();
    for args in [
        vec!["--hosts".to_owned(), names.clone()],
        vec!["--hosts-file".to_owned(), file.display().to_string()],
        vec!["--hosts=a,-oProxyCommand=touch".to_owned()],
    ] {
        let mut cmd = bench(&server, &["-c", "2", "-d", "1s"]);
        cmd.args(&args).args(["--launch", ": {host}; flint worker"]);
        let out = run_bounded(&mut cmd, LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("is not a host name"), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(!planted.exists(), "{args:?} ran a command");
    }
    // A name that passes and needs quoting (an IPv6 address's brackets, a glob to sh) reaches
    // the template as it was given.
    let seen = dir.path().join("seen");
    std::fs::write(dir.path().join("a"), "").unwrap(); // something `[::a]` could glob to
    let template = format!(
        "cd {}; printf %s {{host}} > seen; exec {} worker",
        dir.path().display(),
        exe()
    );
    let out = run_bounded(
        bench(&server, &["-c", "1", "-n", "5", "--hosts", "[::a]"]).args(["--launch", &template]),
        LIMIT,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(std::fs::read_to_string(seen).unwrap(), "[::a]");
}
