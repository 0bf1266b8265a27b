//! `--serve` processes: a server that cannot start says why, and nothing it started survives.

use lab_compare::{LocalServer, ServerError, ServerOptions};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

/// Running (not gone, not a zombie waiting for a reaper that may never come in a container).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name.
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X'])),
        Err(_) => false,
    }
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .trim()
        .parse()
        .unwrap()
}

/// Polls until `pid` is gone; bounded.
fn gone_within(pid: u32, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    while running(pid) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn quick() -> ServerOptions {
    ServerOptions {
        ready_timeout: Duration::from_secs(1),
        stop_grace: Duration::from_millis(200),
    }
}

#[test]
fn server_that_exits_at_start_reports_the_end_of_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let start = Instant::now();
    let err = LocalServer::start(
        "echo 'line one'; echo 'bad config at line 3' >&2; exit 3 # {port}",
        &log,
        // A deadline far beyond the bound below, which a loaded machine still meets easily.
        ServerOptions {
            ready_timeout: Duration::from_secs(60),
            ..ServerOptions::default()
        },
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "waited the deadline"
    );
    assert!(matches!(err, ServerError::Exited { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains("bad config at line 3"), "{text}");
    assert!(text.contains("line one"), "{text}");
}

#[test]
fn server_that_never_listens_is_killed_with_its_whole_group() {
    let dir = tempfile::tempdir().unwrap();
    let (leader, child) = (dir.path().join("leader"), dir.path().join("child"));
    // Both processes ignore SIGTERM, so only the SIGKILL after the grace period ends them.
    let command = format!(
        ": {{port}}; trap '' TERM; sleep 30 & echo $! > {}; echo $$ > {}; wait",
        child.display(),
        leader.display()
    );
    let start = Instant::now();
    let err = LocalServer::start(
        &command,
        &dir.path().join("s.log"),
        quick(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(err, ServerError::NotReady { .. }), "{err:?}");
    assert!(err.to_string().contains("within 1.0 s"), "{err}");
    // Not the 30 s its sleep would last; the margin is for a loaded machine.
    assert!(
        start.elapsed() < Duration::from_secs(15),
        "{:?}",
        start.elapsed()
    );
    for pid in [read_pid(&leader), read_pid(&child)] {
        assert!(
            gone_within(pid, Duration::from_secs(2)),
            "pid {pid} survived"
        );
    }
}

#[test]
fn stop_flag_ends_the_readiness_wait_and_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let leader = dir.path().join("leader");
    let command = format!(": {{port}}; echo $$ > {}; exec sleep 30", leader.display());
    let stop = AtomicBool::new(true);
    let options = ServerOptions {
        ready_timeout: Duration::from_secs(60),
        ..quick()
    };
    let start = Instant::now();
    let err = LocalServer::start(&command, &dir.path().join("s.log"), options, &stop).unwrap_err();
    assert!(matches!(err, ServerError::Interrupted), "{err:?}");
    // Well before the 60 s deadline or the 30 s sleep; the margin is for a loaded machine.
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "{:?}",
        start.elapsed()
    );
    // The shell may not have written its pid before it was stopped (the redirection creates
    // the file before echo writes to it, so it may be there and empty); if it did, it is gone.
    let written = std::fs::read_to_string(&leader).ok();
    if let Some(pid) = written.and_then(|text| text.trim().parse::<u32>().ok()) {
        assert!(
            gone_within(pid, Duration::from_secs(2)),
            "pid {pid} survived"
        );
    }
}

#[test]
fn port_placeholder_is_replaced_before_the_command_runs() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("s.log");
    let err = LocalServer::start(
        "echo port={port}; exit 1",
        &log,
        quick(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    let text = err.to_string();
    let port: u16 = text
        .split("port=")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {text}"));
    assert!(port > 0);
}

#[test]
fn a_server_that_exits_at_start_is_tried_again_on_other_ports() {
    // The port found free may have been taken before the command bound it: it exits, and is
    // started again on another port, a bounded number of times.
    let dir = tempfile::tempdir().unwrap();
    let runs = dir.path().join("runs");
    let err = LocalServer::start(
        &format!("echo {{port}} >> {}; exit 1", runs.display()),
        &dir.path().join("s.log"),
        quick(),
        &AtomicBool::new(false),
    )
    .unwrap_err();
    assert!(matches!(err, ServerError::Exited { .. }), "{err:?}");
    let ports: Vec<u16> = std::fs::read_to_string(&runs)
        .unwrap()
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    assert_eq!(ports.len(), lab_compare::START_ATTEMPTS, "{ports:?}");
}
