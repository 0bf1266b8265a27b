//! `flint lab` killed with SIGKILL (a CI job's timeout, the OOM killer) runs no code of its
//! own, yet its peer server does not outlive it: the kernel sends the peer its stop signal as
//! its parent-death signal.

use crate::common::flint;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[test]
fn a_lab_killed_with_sigkill_leaves_no_peer_running() {
    // The lab's temporary directories (which a killed process cannot remove) in this test's.
    let tmp = tempfile::tempdir().unwrap();
    let mut lab = flint()
        .args(["lab", "sizes", "--servers", "nginx", "--no-profile"])
        .args(["-d", "60", "--warmup", "0s"])
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint lab");
    let stderr = lab.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // nginx is up once the first measurement has started.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut said = String::new();
    while !said.contains("[1/") {
        match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => said += &(line + "\n"),
            Err(_) => {
                let _ = lab.kill();
                panic!("the first measurement never started: {said}");
            }
        }
    }
    let lab_pid = lab.id();
    let tree = lab_process::procfs::process_tree(lab_pid).unwrap_or_default();
    let nginx: Vec<u32> = (tree.into_iter())
        .filter(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "nginx")
        })
        .collect();
    lab.kill().expect("SIGKILL to the lab");
    lab.wait().expect("the lab reaped");
    assert!(!nginx.is_empty(), "no nginx under the lab: {said}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(&alive) = nginx.iter().find(|&&p| lab_process::procfs::group_alive(p)) {
        if Instant::now() >= deadline {
            // Stopped by its group (the lab made nginx the leader of one), so as to fail only.
            for pid in nginx
                .iter()
                .filter_map(|&p| rustix::process::Pid::from_raw(p as i32))
            {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
            panic!("nginx {alive} still runs 30 s after its lab was killed");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}
