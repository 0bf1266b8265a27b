//! The binary end to end: what a user types, what a user sees.

use crate::common;

use common::{
    counting_responder, flint, run_bounded, start_server, start_server_with, wait_exit, Server,
};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

/// SIGTERM to the server, then a bounded wait for it to exit.
fn terminate(server: &mut Server) -> ExitStatus {
    let pid = rustix::process::Pid::from_child(&server.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    wait_exit(&mut server.child, Duration::from_secs(10))
        .expect("flint serve did not exit on SIGTERM")
}

#[test]
fn run_with_defaults_prints_the_webstone_report() {
    let out = run_bounded(
        flint().args(["run", "-d", "1s", "--quiet"]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("WEBSTONE number"), "{stdout}");
    let pages = stdout
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Total number of pages retrieved from server:")
        })
        .expect("a pages line")
        .trim()
        .parse::<u64>()
        .expect("a page count");
    assert!(pages > 0, "no pages in a 1 s run:\n{stdout}");
}

#[test]
fn bench_json_matches_the_schema_and_its_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), vec![b'a'; 1000]).unwrap();
    let server = start_server(dir.path(), 1);
    let json_path = dir.path().join("out.json");
    let out = run_bounded(
        flint()
            .args([
                "bench",
                &format!("http://{}", server.addr),
                "/a.html",
                "-c",
                "4",
                "-n",
                "200",
                "--quiet",
                "--threshold",
                "p99<10s",
                "--busy-poll",
                "20us",
            ])
            .arg("--json")
            .arg(&json_path)
            .arg("--html")
            .arg(dir.path().join("out.html")),
        Duration::from_secs(30),
    );
    drop(server);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match docs/bench-json.schema.json: {errors:#?}"
    );
    let s = &json["summary"];
    assert_eq!(s["pages"], 200);
    assert_eq!(s["requests"], 200);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["bytes_body"], 200 * 1000);
    assert_eq!(json["thresholds"][0]["pass"], true);
    assert_eq!(json["config"]["busy_poll_us"], 20);
    let html = std::fs::read_to_string(dir.path().join("out.html")).expect("--html wrote a page");
    assert!(html.contains("<svg"), "the page has no chart");
    assert!(
        !html.contains("src=\"http"),
        "the page must be self-contained"
    );
}

#[test]
fn serve_exits_cleanly_on_sigterm_and_stops_accepting() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "hello").unwrap();
    let mut server = start_server(dir.path(), 1);
    assert!(get(&server.addr, "/").ends_with("hello"));
    let status = terminate(&mut server);
    assert!(status.success(), "exit status {status:?}");
    assert!(
        TcpStream::connect(&server.addr).is_err(),
        "still accepting after SIGTERM"
    );
}

#[test]
fn serve_survives_a_closed_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "hello").unwrap();
    let mut server = start_server_with(dir.path(), 1, false);
    assert!(get(&server.addr, "/").ends_with("hello"));
    let status = terminate(&mut server);
    assert!(
        status.success(),
        "writing to a closed stderr killed the server: {status:?}"
    );
}

#[test]
fn malformed_workload_names_its_line_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("filelist");
    std::fs::write(&wl, "2\n40 1\n/a.html\n60 x\n/b.html\n").unwrap();
    let out = run_bounded(
        flint()
            .args(["bench", "http://127.0.0.1:9", "-w"])
            .arg(&wl)
            .args(["-d", "1s"]),
        Duration::from_secs(10),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("filelist:4"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "a report was printed for a run that must not start"
    );
}

#[test]
fn fileset_filelist_sizes_files_by_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n100 2\n/file500.html\n/img/file3k.gif\n").unwrap();
    let docs = dir.path().join("docs");
    let out = run_bounded(
        flint()
            .arg("fileset")
            .arg(&docs)
            .arg("--filelist")
            .arg(&list),
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(docs.join("file500.html")).unwrap().len(),
        500
    );
    assert_eq!(
        std::fs::metadata(docs.join("img/file3k.gif"))
            .unwrap()
            .len(),
        3072
    );
}

#[test]
fn ctrl_c_ends_a_bench_early_and_still_reports_what_was_measured() {
    use std::sync::atomic::Ordering;
    let (addr, answered) = counting_responder();
    let mut bench = flint()
        .args([
            "bench",
            &format!("http://{addr}"),
            "/x",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "60s",
        ])
        .args(["--quiet", "--report", "summary"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint bench");
    let deadline = Instant::now() + Duration::from_secs(20);
    while answered.load(Ordering::Relaxed) < 100 {
        assert!(Instant::now() < deadline, "the run never got going");
        std::thread::sleep(Duration::from_millis(10));
    }
    let sent_at = Instant::now();
    let pid = rustix::process::Pid::from_child(&bench);
    rustix::process::kill_process(pid, rustix::process::Signal::INT).expect("SIGINT");
    // The run asked for 60 s: ending within 30 s of Ctrl-C shows it was cut short, with a
    // margin for a loaded machine (it takes well under a second here).
    let status = wait_exit(&mut bench, Duration::from_secs(30));
    let Some(status) = status else {
        let _ = bench.kill();
        let _ = bench.wait();
        panic!("flint bench did not end within 30 s of Ctrl-C");
    };
    println!("Ctrl-C took {:?}", sent_at.elapsed());
    let out = bench.wait_with_output().expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        status.code(),
        Some(130),
        "an interrupted run exits 130: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("Interrupted"),
        "no interrupted note:\n{stdout}"
    );
    let requests: u64 = stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests:"))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("a Requests line");
    assert!(
        requests >= 1,
        "the report lost what was measured:\n{stdout}"
    );
}
