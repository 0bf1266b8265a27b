//! Programs start off the event loop: the loop thread hands each to its spawner thread and
//! serves its other connections while the `posix_spawn` (a vfork-style clone, which suspends
//! its caller until the child's `execve`) runs there. Seen by tracing the loop thread alone
//! (strace attached to its thread id): no `clone` of any kind comes from it, whatever the number
//! of programs it ran. A request given up while its program was being started leaves no
//! process and no program slot behind.

mod cgi_support;
mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::net::Shutdown;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

use cgi_support::*;
use common::*;

/// This process's threads: (id, name).
fn threads() -> BTreeSet<(u32, String)> {
    let mut all = BTreeSet::new();
    for entry in std::fs::read_dir("/proc/self/task").expect("/proc/self/task") {
        let entry = entry.expect("task");
        let Ok(tid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        all.insert((tid, comm.trim().to_string()));
    }
    all
}

/// strace attached to one thread, tracing the calls named, its output in `out`. Returns once
/// strace says it is attached (bounded).
fn trace_thread(tid: u32, calls: &str, out: &Path) -> Child {
    let mut strace = Command::new("strace")
        .args([
            "-p",
            &tid.to_string(),
            "-e",
            &format!("trace={calls}"),
            "-o",
        ])
        .arg(out)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("strace is missing: scripts/install-peers.sh installs it");
    let stderr = strace.stderr.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            let _ = tx.send(line);
        }
    });
    loop {
        match rx.recv_timeout(WAIT) {
            Ok(line) if line.contains("attached") => return strace,
            Ok(line) => eprintln!("strace: {line}"),
            Err(_) => {
                let _ = strace.kill();
                let _ = strace.wait();
                panic!("strace did not attach to thread {tid} in time");
            }
        }
    }
}

/// Detaches strace (SIGINT) and waits for it, bounded.
fn stop_trace(mut strace: Child) {
    let pid = rustix::process::Pid::from_child(&strace);
    let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
    let exited = eventually(WAIT, || strace.try_wait().ok().flatten().is_some());
    if !exited {
        let _ = strace.kill();
        let _ = strace.wait();
        panic!("strace did not detach in time");
    }
}

#[test]
fn the_loop_thread_never_waits_in_a_clone_for_a_program_to_start() {
    const PROGRAMS: usize = 20;
    let scripts = Scripts::new();
    scripts.add("hello", HELLO);
    let before = threads();
    let srv = start(&scripts, |_| {});
    // One answer: the loop runs (and its spawner thread, if it has one, was started with it).
    assert_eq!(ask(&srv, &get("/1k.bin")).status, 200);
    // The server's thread is this test's (its name inherited: tests running alongside have
    // theirs), the first of the new ones: the spawner thread, if any, is started from it.
    let me = std::fs::read_to_string("/proc/thread-self/comm").unwrap();
    let new: Vec<_> = threads().difference(&before).cloned().collect();
    let loop_tid = (new.iter())
        .filter(|(_, name)| *name == me.trim())
        .map(|&(tid, _)| tid)
        .min()
        .unwrap_or_else(|| panic!("no new thread named {me:?}: {new:?}"));

    let out = tempfile::NamedTempFile::new().unwrap();
    let strace = trace_thread(
        loop_tid,
        "clone,clone3,fork,vfork,epoll_wait,epoll_pwait",
        out.path(),
    );
    for _ in 0..PROGRAMS {
        let r = ask(&srv, &get("/cgi-bin/hello"));
        assert_eq!((r.status, r.body.as_slice()), (200, &b"hello\n"[..]));
    }
    assert_eq!(ask(&srv, &get("/1k.bin")).status, 200);
    stop_trace(strace);

    let trace = std::fs::read_to_string(out.path()).unwrap();
    let calls = |names: &[&str]| {
        trace
            .lines()
            .filter(|l| names.iter().any(|n| l.starts_with(&format!("{n}("))))
            .count()
    };
    // The trace saw the loop working: it waited for events between the requests.
    assert!(
        calls(&["epoll_wait", "epoll_pwait"]) >= PROGRAMS,
        "strace saw too little of the loop thread:\n{trace}"
    );
    assert_eq!(
        calls(&["clone", "clone3", "fork", "vfork"]),
        0,
        "the loop thread started programs itself:\n{trace}"
    );
    assert_eq!(srv.stats().cgi_starts, PROGRAMS as u64);
}

#[test]
fn a_request_given_up_while_its_program_starts_leaves_no_slot_behind() {
    const GIVEN_UP: usize = 20;
    let scripts = Scripts::new();
    let pids = scripts.path().join("pids");
    scripts.add(
        "linger",
        &format!("echo $$ >> {}\nexec sleep 1000\n", pids.display()),
    );
    scripts.add("hello", HELLO);
    // One slot: a program leaked (never reaped, its slot never given back) would leave every
    // later request a 503.
    let srv = start(&scripts, |c| c.cgi_max_programs = 1);
    for _ in 0..GIVEN_UP {
        let mut s = connect(srv.addr);
        // The request and the FIN together: the loop sees both in one pass, most often while
        // the spawner is still starting the program.
        s.write_all(get("/cgi-bin/linger").as_bytes()).unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let mut rest = Vec::new();
        let _ = std::io::Read::read_to_end(&mut s, &mut rest);
    }
    assert!(
        eventually(WAIT, || ask(&srv, &get("/cgi-bin/hello")).status == 200),
        "the program slot never came back"
    );
    let started = std::fs::read_to_string(&pids).unwrap_or_default();
    for pid in started.lines().filter_map(|l| l.trim().parse::<u32>().ok()) {
        assert!(
            eventually(WAIT, || proc_state(pid).is_none()),
            "pid {pid} left"
        );
    }
    let st = srv.stats();
    assert_eq!(st.cgi_timeouts, 0);
    assert!(st.cgi_starts >= 1);
}
