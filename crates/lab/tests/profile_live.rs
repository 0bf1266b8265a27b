//! Profiles of real processes: strace (installed by scripts/test; the tests fail, not skip,
//! without it), perf when this machine allows it (else the error must say why), /proc readings.

use lab::profile::{
    cpu_time, detect_method, pid_listening_on, Method, ProfileError, Profiler, SyscallRow,
};
use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A child killed (and reaped) when the test ends, passed or not, with its descendants: a
/// shell's background job would otherwise spin on, orphaned.
struct Kid(Child);

impl Drop for Kid {
    fn drop(&mut self) {
        let tree = lab::profile::procfs::process_tree(self.0.id()).unwrap_or_default();
        for pid in tree.into_iter().skip(1).rev() {
            // SAFETY: kill takes plain integers; these pids are our child's descendants, read
            // just now (a pid reused in between would be a process of ours too: tests only).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGKILL) };
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(cmd: &str) -> Kid {
    Kid(Command::new("sh")
        .args(["-c", cmd])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn sh"))
}

/// `dd` copying byte by byte: one read and one write per byte, as long as it is let run.
const DD: &str = "exec dd if=/dev/zero of=/dev/null bs=1 count=100000000000";

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

fn profile(
    pid: u32,
    method: Method,
    window: Duration,
) -> Result<lab::profile::Profile, ProfileError> {
    let p = Profiler::start(pid, method)?;
    std::thread::sleep(window);
    p.stop()
}

#[test]
fn strace_counts_a_busy_process_reads_and_writes_one_for_one() {
    require_strace();
    let dd = spawn(DD);
    let p = profile(dd.0.id(), Method::Strace, Duration::from_millis(500)).unwrap();
    assert_eq!(p.method, Method::Strace);
    assert!(p.window >= Duration::from_millis(500));
    let (read, write) = (row(&p.syscalls, "read"), row(&p.syscalls, "write"));
    assert!(read.calls > 100, "{:?}", p.syscalls);
    assert!(read.calls.abs_diff(write.calls) <= 1, "{read:?} {write:?}");
    assert!(read.seconds.is_some());
    assert_eq!(
        p.total_calls,
        p.syscalls.iter().map(|r| r.calls).sum::<u64>()
    );
    assert!(
        p.cpu_user + p.cpu_sys > Duration::ZERO,
        "dd ran 0.5 s on no CPU?"
    );
    assert!(p.notes[0].contains("slower"), "{:?}", p.notes);
}

#[test]
fn strace_follows_child_processes_of_the_profiled_one() {
    require_strace();
    // The shell does nothing but wait; its child does the syscalls.
    let sh = spawn(&format!("{} & wait", DD.trim_start_matches("exec ")));
    let deadline = Instant::now() + Duration::from_secs(10);
    while lab::profile::procfs::process_tree(sh.0.id()).unwrap().len() < 2 {
        assert!(Instant::now() < deadline, "the shell started no child");
        std::thread::sleep(Duration::from_millis(10));
    }
    let p = profile(sh.0.id(), Method::Strace, Duration::from_millis(300)).unwrap();
    assert_eq!(p.pids.len(), 2, "{:?}", p.pids);
    assert!(row(&p.syscalls, "write").calls > 100, "{:?}", p.syscalls);
}

#[test]
fn a_second_tracer_is_refused_with_what_to_do() {
    require_strace();
    let dd = spawn(DD);
    let first = Profiler::start(dd.0.id(), Method::Strace).unwrap();
    // ptrace allows one tracer per process: the second gets EPERM, as without privileges.
    let err = Profiler::start(dd.0.id(), Method::Strace)
        .err()
        .expect("second tracer refused");
    assert!(
        matches!(err, ProfileError::NoPermission { tool: "strace", .. }),
        "{err}"
    );
    assert!(err.to_string().contains("ptrace_scope"), "{err}");
    drop(first);
}

#[test]
fn perf_profiles_here_or_says_why_not() {
    let dd = spawn(DD);
    match profile(dd.0.id(), Method::Perf, Duration::from_millis(500)) {
        Ok(p) => {
            assert!(p.syscalls.len() > 1, "no table: {:?}", p.notes);
            let (read, write) = (row(&p.syscalls, "read"), row(&p.syscalls, "write"));
            assert!(read.calls > 1000, "{:?}", p.syscalls);
            assert!(read.calls.abs_diff(write.calls) <= 2, "{read:?} {write:?}");
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
        // Covered by perf_profiles_here_or_says_why_not: perf must then explain itself.
        assert!(Profiler::start(std::process::id(), Method::Perf).is_err());
        return;
    }
    // Every stat of a missing file fails with ENOENT.
    let sh = spawn("while :; do test -e /nonexistent/x; done");
    let p = profile(sh.0.id(), Method::Perf, Duration::from_millis(300)).unwrap();
    let failing: u64 = p.syscalls.iter().map(|r| r.errors).sum();
    assert!(failing > 10, "{:?}", p.syscalls);
    assert_eq!(p.total_errors, failing);
}

#[test]
fn detect_method_finds_a_tracer() {
    require_strace();
    let m = detect_method().unwrap();
    assert!(matches!(m, Method::Perf | Method::Strace));
}

#[test]
fn a_gone_process_is_named_as_such() {
    let mut kid = spawn("exit 0");
    let pid = kid.0.id();
    kid.0.wait().unwrap();
    assert!(matches!(cpu_time(pid), Err(ProfileError::ProcessGone { pid: p }) if p == pid));
    let err = Profiler::start(pid, Method::Strace)
        .err()
        .expect("no process");
    assert!(matches!(err, ProfileError::ProcessGone { .. }), "{err}");
}

#[test]
fn cpu_time_grows_while_a_child_spins() {
    let spin = spawn("while :; do :; done");
    let pid = spin.0.id();
    let (u0, s0) = cpu_time(pid).unwrap();
    let started = Instant::now();
    let deadline = started + Duration::from_secs(20);
    loop {
        let (u, s) = cpu_time(pid).unwrap();
        if u + s - u0 - s0 >= Duration::from_millis(200) {
            assert!(u > u0, "spinning in the shell is user time: {u:?}");
            // Never more than the wall time (one thread), give or take a tick.
            assert!(u + s - u0 - s0 <= started.elapsed() + Duration::from_millis(20));
            break;
        }
        assert!(Instant::now() < deadline, "no CPU time in 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn cpu_time_includes_descendants() {
    let sh = spawn("while :; do :; done & wait");
    let (u0, s0) = cpu_time(sh.0.id()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while cpu_time(sh.0.id()).map(|(u, s)| u + s - u0 - s0).unwrap() < Duration::from_millis(100) {
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
    let mut py = Kid(Command::new("python3")
        .args([
            "-c",
            "import socket,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); \
             print(s.getsockname()[1], flush=True); time.sleep(30)",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3"));
    let mut line = String::new();
    BufReader::new(py.0.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port: u16 = line.trim().parse().expect("python printed its port");
    assert_eq!(pid_listening_on(port), Some(py.0.id()));
}

#[test]
fn pid_listening_on_ignores_ports_nobody_listens_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    // The client's own port is in /proc/net/tcp, connected, not listening.
    assert_eq!(pid_listening_on(client.local_addr().unwrap().port()), None);
}
