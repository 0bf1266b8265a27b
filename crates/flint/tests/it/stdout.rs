//! Results on stdout (`--json -`, `--log -`) with the reports moved to stderr, and a reader that
//! goes away (`| head`): the run ends quietly with its usual status, never a panic.

use crate::common;

use common::{counting_responder, flint, run_bounded, wait_exit};
use std::process::Stdio;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(60);

#[test]
fn json_dash_writes_the_json_alone_on_stdout() {
    let (addr, _) = counting_responder();
    let out = run_bounded(
        flint().args([
            "bench",
            &format!("http://{addr}/x"),
            "-c",
            "2",
            "-n",
            "30",
            "-q",
            "--json",
            "-",
        ]),
        LIMIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("stdout is one JSON document and nothing else");
    assert_eq!(doc["summary"]["pages"], 30);
    assert!(
        stderr.contains("Latency (ms)"),
        "the report went to stderr: {stderr}"
    );
}

#[test]
fn log_dash_writes_the_csv_alone_on_stdout() {
    let (addr, _) = counting_responder();
    let out = run_bounded(
        flint().args([
            "bench",
            &format!("http://{addr}/x"),
            "-c",
            "2",
            "-n",
            "25",
            "-q",
            "--report",
            "summary",
            "--log",
            "-",
        ]),
        LIMIT,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let mut lines = csv.lines();
    assert!(lines.next().unwrap().starts_with("thread,child,page,url,"));
    assert_eq!(
        lines.count(),
        25,
        "one line per request, nothing else:\n{csv}"
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("Requests:"));
}

/// Runs `flint bench` with stdout a pipe whose reader has already gone.
fn with_closed_stdout(extra: &[&str]) -> (Option<i32>, String) {
    let (addr, _) = counting_responder();
    let mut child = flint()
        .args([
            "bench",
            &format!("http://{addr}/x"),
            "-c",
            "2",
            "-n",
            "200",
            "-q",
        ])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint bench");
    drop(child.stdout.take()); // the reader goes away before a byte is written
    let mut stderr = child.stderr.take().unwrap();
    let drain = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let Some(status) = wait_exit(&mut child, LIMIT) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint bench did not end with a closed stdout");
    };
    (status.code(), drain.join().unwrap())
}

#[test]
fn a_closed_pipe_ends_the_output_quietly_with_the_usual_status() {
    for extra in [&["--report", "all"][..], &["--log", "-"], &["--json", "-"]] {
        let (code, stderr) = with_closed_stdout(extra);
        assert!(!stderr.contains("panicked"), "{extra:?}: {stderr}");
        assert!(!stderr.contains("flint: error"), "{extra:?}: {stderr}");
        assert_eq!(code, Some(0), "{extra:?}: {stderr}");
    }
}
