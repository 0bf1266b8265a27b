//! A peer's processes: spawned pinned in a process group of their own, polled until they accept
//! connections, and stopped whatever happens.
//!
//! The whole group is signalled, not just the process we spawned: Apache's parent forks the
//! children that serve, and a parent killed without its children would leave servers holding the
//! port and the core. Every wait here has a deadline; nothing sleeps for a fixed time to "let the
//! server start".

use std::io::{self, Read};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Between two readiness polls: short against a server's start-up, long against a busy loop.
const POLL: Duration = Duration::from_millis(10);

/// A free loopback port, found by binding port 0 and letting it go. Another process could take
/// it before the peer binds; [`super::Peer::start`] retries with a new one when the peer exits.
pub fn free_port() -> io::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `name` on PATH or in the sbin directories (which a non-root PATH often lacks).
pub fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/local/sbin", "/sbin"].map(PathBuf::from))
        .map(|dir| dir.join(name))
        .find(|p| is_executable(p))
}

pub fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Runs a short command (`nginx -v`) to completion within `timeout`, killing it past that.
pub fn output_within(cmd: &mut Command, timeout: Duration) -> io::Result<Output> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("no answer within {timeout:?}"),
            ));
        }
        std::thread::sleep(POLL);
    };
    // The process has exited: its pipes hold all it wrote (a version line fits in any pipe).
    let (mut stdout, mut stderr) = (Vec::new(), Vec::new());
    if let Some(mut out) = child.stdout.take() {
        out.read_to_end(&mut stdout)?;
    }
    if let Some(mut err) = child.stderr.take() {
        err.read_to_end(&mut stderr)?;
    }
    Ok(Output {
        status,
        stdout,
        stderr,
    })
}

/// Spawns `program args` in a new process group, on `cpu` when given (through `taskset`, which
/// execs the program: the pid we get is the server's, and its children inherit the pinning), with
/// stdout and stderr appended to `log`.
pub fn spawn(
    program: &Path,
    args: &[String],
    cpu: Option<usize>,
    log: &Path,
    cwd: &Path,
) -> io::Result<Child> {
    let mut cmd = match cpu {
        Some(cpu) => {
            let taskset = find_program("taskset").ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "taskset not found (apt-get install -y util-linux)",
                )
            })?;
            let mut c = Command::new(taskset);
            c.arg("-c").arg(cpu.to_string()).arg(program);
            c
        }
        None => Command::new(program),
    };
    let out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .process_group(0)
        .spawn()
}

/// Why a peer did not become ready.
#[derive(Debug)]
pub enum NotReady {
    Exited(ExitStatus),
    TimedOut,
    Io(io::Error),
}

/// Polls until `addr` accepts a connection and `settled` says the process tree is complete, the
/// process exits, or `timeout` passes.
pub fn wait_ready(
    child: &mut Child,
    addr: SocketAddr,
    timeout: Duration,
    settled: impl Fn(u32) -> bool,
) -> Result<(), NotReady> {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(status) = child.try_wait().map_err(NotReady::Io)? {
            return Err(NotReady::Exited(status));
        }
        if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            && settled(child.id())
        {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(NotReady::TimedOut);
        }
        std::thread::sleep(POLL);
    }
}

/// Sends `signal` to every process of group `pgid`; false when the group is empty.
fn signal_group(pgid: u32, signal: libc::c_int) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    if pgid <= 1 {
        // Never signal "every process" (-1) or our own group (0) by mistake.
        return false;
    }
    // SAFETY: kill(2) takes two integers and touches no memory of ours; a negative pid addresses
    // the process group, which is the peer's own (spawned with process_group(0), pgid = its pid,
    // checked above not to be 0 or 1).
    unsafe { libc::kill(-pgid, signal) == 0 }
}

/// Stops the group led by `child`: SIGTERM, up to `grace` for everything to exit, then SIGKILL.
/// Returns how the leader ended.
pub fn stop_group(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    let pgid = child.id();
    if let Some(status) = child.try_wait()? {
        // The leader is gone; members it left behind (if any) still go.
        signal_group(pgid, libc::SIGKILL);
        return Ok(status);
    }
    signal_group(pgid, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    let mut leader = None;
    while Instant::now() < deadline {
        if leader.is_none() {
            leader = child.try_wait()?;
        }
        // Reaped leader and no live member left: all stopped.
        if leader.is_some() && !group_alive(pgid) {
            return Ok(leader.unwrap_or_else(|| unreachable!()));
        }
        std::thread::sleep(POLL);
    }
    signal_group(pgid, libc::SIGKILL);
    match leader {
        Some(status) => Ok(status),
        // SIGKILL cannot be ignored: this wait ends.
        None => child.wait(),
    }
}

/// What the lab reads of /proc/PID/stat.
struct ProcStat {
    /// 'R', 'S', ..., 'Z' (zombie: exited, not yet reaped).
    state: char,
    ppid: u32,
    pgrp: u32,
    threads: u64,
}

fn proc_stat(pid: u32) -> Option<ProcStat> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces or ')': fields follow the last ')'.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After the name: state (field 3), ppid (4), pgrp (5), ..., num_threads (20).
    Some(ProcStat {
        state: fields.first()?.chars().next()?,
        ppid: fields.get(1)?.parse().ok()?,
        pgrp: fields.get(2)?.parse().ok()?,
        threads: fields.get(17)?.parse().ok()?,
    })
}

/// Every process in /proc with its stat.
fn all_processes() -> Vec<(u32, ProcStat)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter_map(|pid| Some((pid, proc_stat(pid)?)))
        .collect()
}

/// Whether group `pgid` has a member that has not exited. Zombies do not count: once the leader
/// is killed its orphans are reaped by init, whenever that gets to it.
pub fn group_alive(pgid: u32) -> bool {
    all_processes()
        .iter()
        .any(|(_, s)| s.pgrp == pgid && s.state != 'Z')
}

/// Threads of `pid` (0 when it is gone).
pub fn thread_count(pid: u32) -> u64 {
    proc_stat(pid).map_or(0, |s| s.threads)
}

/// `pid` and every process descended from it, parents before children.
pub fn process_tree(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = all_processes()
        .into_iter()
        .filter(|(_, s)| s.state != 'Z')
        .map(|(p, s)| (p, s.ppid))
        .collect();
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i];
        let mut children: Vec<u32> = parents
            .iter()
            .filter(|&&(_, ppid)| ppid == parent)
            .map(|&(p, _)| p)
            .collect();
        children.sort_unstable();
        tree.extend(children);
        i += 1;
    }
    tree
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_tree_holds_the_process_and_its_children() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let me = std::process::id();
        let tree = process_tree(me);
        assert_eq!(tree[0], me);
        assert!(tree.contains(&child.id()), "{tree:?} lacks {}", child.id());
        assert!(thread_count(me) >= 1);
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(thread_count(child.id()), 0);
    }

    #[test]
    fn stop_group_ends_a_process_that_ignores_sigterm_and_its_children() {
        let dir = tempfile::tempdir().expect("tempdir");
        let log = dir.path().join("log");
        // A shell that ignores TERM and has a child: both must be gone after stop_group.
        let args = ["-c", "trap '' TERM; sleep 30 & wait"].map(String::from);
        let mut child = spawn(Path::new("/bin/sh"), &args, None, &log, dir.path()).expect("spawn");
        let pgid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while process_tree(pgid).len() < 2 {
            assert!(Instant::now() < deadline, "the shell never forked");
            std::thread::sleep(POLL);
        }
        let started = Instant::now();
        let status = stop_group(&mut child, Duration::from_millis(300)).expect("stop");
        assert!(!status.success());
        assert!(started.elapsed() < Duration::from_secs(5));
        // SIGKILL is delivered asynchronously to the orphaned child: poll, bounded.
        let deadline = Instant::now() + Duration::from_secs(5);
        while group_alive(pgid) {
            assert!(
                Instant::now() < deadline,
                "group {pgid} still has live members"
            );
            std::thread::sleep(POLL);
        }
    }

    #[test]
    fn signal_group_refuses_the_dangerous_pids() {
        assert!(!signal_group(0, 0));
        assert!(!signal_group(1, 0));
    }

    #[test]
    fn output_within_kills_what_does_not_answer() {
        let started = Instant::now();
        let err = output_within(Command::new("sleep").arg("30"), Duration::from_millis(100))
            .expect_err("must time out");
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() < Duration::from_secs(5));
        let out =
            output_within(Command::new("echo").arg("hi"), Duration::from_secs(10)).expect("echo");
        assert_eq!(out.stdout, b"hi\n");
    }
}
