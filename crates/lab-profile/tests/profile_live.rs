//! Profiles of real processes: strace (installed by scripts/test; the tests fail, not skip,
//! without it), perf when this machine allows it (else the error must say why), /proc readings.
//!
//! The process traced for exact counts is an echo server (`cat` between two pipes) that makes
//! syscalls only when this test sends it a request: one read and one write per line. Each window
//! opens and closes while it is blocked in its read (quiescent: asleep, with nothing to read),
//! so the window holds exactly the syscalls of the requests sent inside it, whatever the
//! machine's load, and the counts are asserted exactly. (A process copying at full speed
//! instead, as `dd` does, is caught mid-call by the window's boundaries and fills perf's ring
//! buffer faster than a busy machine lets perf drain it: its counts differ by chance.)

use lab_process::cpu;
use lab_process::procfs::{self, pid_listening_on, ProcError};
use lab_process::{Group, StopPolicy, POLL};
use lab_profile::Window;
use lab_profile::{detect_method, Method, Profile, ProfileError, SyscallRow};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// Requests sent in a counted window: few enough that perf's ring buffer holds all their
/// events even if perf is not scheduled during the window (2 events of ~100 B per syscall).
const REQUESTS: u64 = 2000;

/// A process group stopped when the test ends, passed or not.
fn spawn(script: &str) -> Group {
    Group::spawn(
        Command::new("sh")
            .args(["-c", script])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        None,
        StopPolicy::terminate(Duration::from_secs(2)),
    )
    .expect("spawn sh")
}

/// An echo server between two pipes: answers each line it is sent with the same line.
struct Echo {
    group: Group,
    /// The process that answers (the group's leader, or its child under a shell).
    worker: u32,
    to: ChildStdin,
    from: ChildStdout,
}

impl Echo {
    /// `cat` itself.
    fn start() -> Echo {
        Self::spawn(Command::new("cat"), 1)
    }

    /// `sh -c SCRIPT`, whose process tree has `processes` processes once it is running; the
    /// last of them answers.
    fn shell(script: &str, processes: usize) -> Echo {
        let mut sh = Command::new("sh");
        sh.args(["-c", script]);
        Self::spawn(sh, processes)
    }

    fn spawn(mut cmd: Command, processes: usize) -> Echo {
        let mut group = Group::spawn(
            cmd.stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null()),
            None,
            StopPolicy::terminate(Duration::from_secs(2)),
        )
        .expect("spawn the echo server");
        let to = group.child_mut().stdin.take().unwrap();
        let from = group.child_mut().stdout.take().unwrap();
        let pid = group.pid();
        let mut echo = Echo {
            group,
            worker: pid,
            to,
            from,
        };
        echo.requests(1); // it has started and reached its loop
        wait_tree(pid, processes);
        echo.worker = *procfs::process_tree(pid).unwrap().last().unwrap();
        echo
    }

    fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// `n` requests, each answered before the next is sent.
    fn requests(&mut self, n: u64) {
        let mut answer = [0u8; 2];
        for _ in 0..n {
            self.to.write_all(b"x\n").unwrap();
            self.from.read_exact(&mut answer).unwrap();
            assert_eq!(&answer, b"x\n");
        }
    }

    /// Until cat sleeps in its read of an empty pipe: its answer to the last request can reach
    /// us before its write has returned, so "answered" is not yet "quiescent".
    fn wait_quiescent(&self) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while procfs::stat(self.worker)
            .expect("the echo server runs")
            .state
            != 'S'
        {
            assert!(
                Instant::now() < deadline,
                "the echo server never went back to its read"
            );
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// A window around exactly `n` requests.
    fn profile(&mut self, method: Method, n: u64) -> Result<Profile, ProfileError> {
        let window = prepare(self.pid(), method)?;
        self.wait_quiescent();
        window.open();
        self.requests(n);
        self.wait_quiescent();
        window.close();
        finish(window)
    }
}

fn prepare(pid: u32, method: Method) -> Result<Window, ProfileError> {
    let window = Window::prepare(pid, Some(method)).map_err(ProfileError::from)?;
    match window.take_tracer_error() {
        Some(e) => Err(e),
        None => Ok(window),
    }
}

fn finish(window: Window) -> Result<Profile, ProfileError> {
    let mut seen = window.finish();
    match seen.profile {
        Some(p) => Ok(p),
        None => Err(seen.profile_errors.remove(0)),
    }
}

/// A window of `length` around whatever `pid` does.
fn profile(pid: u32, method: Method, length: Duration) -> Result<Profile, ProfileError> {
    let window = prepare(pid, method)?;
    window.open();
    std::thread::sleep(length);
    window.close();
    finish(window)
}

fn require_strace() {
    let ok = Command::new("strace")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        ok,
        "strace is not installed: run the tests through scripts/test, or `sudo apt-get install strace`"
    );
}

fn row<'a>(rows: &'a [SyscallRow], name: &str) -> &'a SyscallRow {
    rows.iter()
        .find(|r| r.name == name)
        .unwrap_or_else(|| panic!("no {name} in {rows:?}"))
}

fn wait_tree(pid: u32, len: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while procfs::process_tree(pid).map_or(0, |t| t.len()) < len {
        assert!(Instant::now() < deadline, "the shell started no child");
        std::thread::sleep(POLL);
    }
}

#[test]
fn strace_counts_one_read_and_one_write_per_request() {
    require_strace();
    let mut echo = Echo::start();
    let p = echo.profile(Method::Strace, REQUESTS).unwrap();
    assert_eq!(p.method, Method::Strace);
    let (read, write) = (row(&p.syscalls, "read"), row(&p.syscalls, "write"));
    assert_eq!(write.calls, REQUESTS, "{:?}", p.syscalls);
    // strace stops cat to attach and to detach, which interrupts the read it sleeps in (the
    // kernel restarts it): whether strace counts that one read depends on where in its own
    // attach it catches it. So the reads are the requests' give or take that one call at each
    // boundary; the writes, of which none is under way at either boundary, are exact.
    assert!(read.calls.abs_diff(REQUESTS) <= 1, "{:?}", p.syscalls);
    assert!(read.seconds.is_some());
    assert_eq!(
        p.total_calls,
        p.syscalls.iter().map(|r| r.calls).sum::<u64>()
    );
    assert!(
        p.cpu_user + p.cpu_sys > Duration::ZERO,
        "cat answered {REQUESTS} requests on no CPU?"
    );
    assert!(p.notes[0].contains("slower"), "{:?}", p.notes);
}

#[test]
fn strace_follows_child_processes_of_the_profiled_one() {
    require_strace();
    // The shell does nothing but wait for cat, its child, which does the syscalls (`; exit`
    // keeps the shell from exec'ing cat in its place).
    let mut echo = Echo::shell("cat; exit 0", 2);
    assert_ne!(echo.worker, echo.pid());
    let p = echo.profile(Method::Strace, REQUESTS).unwrap();
    assert_eq!(p.pids, [echo.pid(), echo.worker]);
    assert_eq!(
        row(&p.syscalls, "write").calls,
        REQUESTS,
        "{:?}",
        p.syscalls
    );
}

#[test]
fn a_second_tracer_is_refused_with_what_to_do() {
    require_strace();
    let echo = Echo::start();
    let first = prepare(echo.pid(), Method::Strace).unwrap();
    first.open();
    // ptrace allows one tracer per process: the second gets EPERM, as without privileges.
    let err =
        profile(echo.pid(), Method::Strace, Duration::ZERO).expect_err("second tracer refused");
    assert!(
        matches!(err, ProfileError::NoPermission { tool: "strace", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("ptrace_scope"), "{err}");
    first.close();
    assert!(first.finish().profile.is_some());
}

#[test]
fn perf_counts_one_read_and_one_write_per_request_or_says_why_not() {
    let mut echo = Echo::start();
    match echo.profile(Method::Perf, REQUESTS) {
        Ok(p) => {
            assert!(p.syscalls.len() > 1, "no table: {:?}", p.notes);
            let (read, write) = (row(&p.syscalls, "read"), row(&p.syscalls, "write"));
            // Nothing happens at the boundaries: exactly the requests' calls, nothing lost.
            assert_eq!(write.calls, REQUESTS, "{:?}", p.syscalls);
            assert_eq!(read.calls, REQUESTS, "{:?}", p.syscalls);
            assert!(
                p.syscalls
                    .iter()
                    .all(|r| r.name != lab_profile::UNATTRIBUTED),
                "{:?}",
                p.syscalls
            );
            // perf record times the calls.
            assert!(read.seconds.is_some() && p.total_seconds.is_some());
            assert_eq!(
                p.total_calls,
                p.syscalls.iter().map(|r| r.calls).sum::<u64>()
            );
            assert_eq!(detect_method().unwrap(), Method::Perf);
        }
        Err(e) => {
            assert!(
                matches!(
                    e,
                    ProfileError::NoPermission { .. }
                        | ProfileError::NotInstalled { .. }
                        | ProfileError::Tracer { .. }
                ),
                "{e}"
            );
            assert_ne!(
                detect_method().ok(),
                Some(Method::Perf),
                "perf detected, yet: {e}"
            );
        }
    }
}

#[test]
fn perf_counts_errors_per_syscall() {
    if detect_method().ok() != Some(Method::Perf) {
        // Covered by the test above: perf must then explain itself.
        assert!(prepare(std::process::id(), Method::Perf).is_err());
        return;
    }
    // Per request, one stat of a missing file (ENOENT) and nothing else that fails.
    let mut echo = Echo::shell(
        "while read -r line; do test -e /nonexistent/x; echo \"$line\"; done",
        1,
    );
    let p = echo.profile(Method::Perf, REQUESTS).unwrap();
    let failing: Vec<&SyscallRow> = p.syscalls.iter().filter(|r| r.errors > 0).collect();
    assert_eq!(failing.len(), 1, "{:?}", p.syscalls);
    assert_eq!(failing[0].errors, REQUESTS, "{:?}", p.syscalls);
    assert_eq!(p.total_errors, REQUESTS);
}

#[test]
fn detect_method_finds_a_tracer() {
    require_strace();
    let m = detect_method().unwrap();
    assert!(matches!(m, Method::Perf | Method::Strace));
}

#[test]
fn a_gone_process_is_named_as_such() {
    let mut sh = spawn("exit 0");
    let pid = sh.pid();
    assert!(sh.wait_exit(Duration::from_secs(20)).is_some());
    assert!(matches!(cpu::tree(pid), Err(ProcError::Gone { pid: p }) if p == pid));
    let Err(err) = prepare(pid, Method::Strace) else {
        panic!("a tracer prepared for no process");
    };
    assert!(matches!(err, ProfileError::ProcessGone { .. }), "{err}");
}

#[test]
fn the_window_clocks_a_spinning_child_as_user_time_within_the_wall_time() {
    let spin = spawn("while :; do :; done");
    let window = Window::prepare(spin.pid(), None).unwrap();
    let started = Instant::now();
    window.open();
    let deadline = started + Duration::from_secs(20);
    let since = cpu::tree(spin.pid()).unwrap();
    while cpu::tree(spin.pid()).unwrap().since(&since).total() < Duration::from_millis(200) {
        assert!(Instant::now() < deadline, "no CPU time in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    window.close();
    let wall = started.elapsed();
    let seen = window.finish();
    let used = seen.server_cpu.expect("server CPU");
    assert!(
        used.user > used.sys,
        "spinning in the shell is user time: {used:?}"
    );
    // One thread: never more than the wall time (the clock is exact, not in ticks), but for the
    // two clocks' rates: CPU time runs on the scheduler's clock, the wall on CLOCK_MONOTONIC,
    // and on a virtual machine they drift apart by a fraction of a percent (215.7 ms of CPU
    // was seen in 215.0 ms of wall time).
    assert!(used.total() <= wall + wall / 100, "{used:?} in {wall:?}");
    assert!(used.total() >= Duration::from_millis(200));
    assert!(seen.client_cpu.is_some() && seen.profile.is_none());
}

#[test]
fn the_tree_clock_includes_descendants() {
    let sh = spawn("while :; do :; done & wait");
    wait_tree(sh.pid(), 2);
    let before = cpu::tree(sh.pid()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while cpu::tree(sh.pid()).unwrap().since(&before).total() < Duration::from_millis(100) {
        assert!(
            Instant::now() < deadline,
            "the spinning grandchild's CPU is not counted"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn pid_listening_on_finds_our_own_listeners_v4_and_v6() {
    let v4 = TcpListener::bind("127.0.0.1:0").unwrap();
    assert_eq!(
        pid_listening_on(v4.local_addr().unwrap().port()),
        Some(std::process::id())
    );
    if let Ok(v6) = TcpListener::bind("[::1]:0") {
        assert_eq!(
            pid_listening_on(v6.local_addr().unwrap().port()),
            Some(std::process::id())
        );
    }
}

#[test]
fn pid_listening_on_finds_a_listener_in_a_child_process() {
    let mut py = Group::spawn(
        Command::new("python3")
            .args([
                "-c",
                "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); \
                 print(s.getsockname()[1], flush=True); time.sleep(30)",
            ])
            .stdout(Stdio::piped()),
        None,
        StopPolicy::terminate(Duration::from_secs(2)),
    )
    .expect("python3");
    let mut line = String::new();
    BufReader::new(py.child_mut().stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("python printed its port");
    assert_eq!(pid_listening_on(port), Some(py.pid()));
}

#[test]
fn pid_listening_on_ignores_ports_nobody_listens_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    // The client's own port is in /proc/net/tcp, connected, not listening.
    assert_eq!(pid_listening_on(client.local_addr().unwrap().port()), None);
}
