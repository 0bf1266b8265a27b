//! Running a tracer as a child process: starting it, knowing when it counts, stopping it in
//! bounded time whatever it does.
//!
//! Both tracers write their summary when interrupted (SIGINT), so stopping is: SIGINT, wait a
//! bounded time, SIGKILL if it is still there (its summary is then lost, which is an error, not
//! an empty profile).

use super::{perf, strace, Method, ProfileError, SyscallRow};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How long a tracer gets to attach, and to write its summary once interrupted.
pub(crate) const TRACER_DEADLINE: Duration = Duration::from_secs(15);

/// What a tracer counted over the window.
#[derive(Debug, Default)]
pub(crate) struct Counted {
    pub rows: Vec<SyscallRow>,
    /// None: the sum of the rows.
    pub total_calls: Option<u64>,
    pub total_errors: Option<u64>,
    pub total_seconds: Option<f64>,
    pub notes: Vec<String>,
}

/// A tracer ready to start: perf with its events opened and disabled; strace checked.
pub(crate) enum Pending {
    Strace,
    Perf(perf::PerfRun),
}

impl Pending {
    pub fn prepare(method: Method, pids: &[u32]) -> Result<Pending, ProfileError> {
        Ok(match method {
            Method::Strace => {
                strace_installed().map_err(|e| {
                    if e.contains("not installed") {
                        ProfileError::NotInstalled {
                            tool: "strace",
                            package: "strace",
                        }
                    } else {
                        ProfileError::Tracer {
                            tool: "strace",
                            detail: e,
                        }
                    }
                })?;
                Pending::Strace
            }
            Method::Perf => Pending::Perf(perf::PerfRun::prepare(pids)?),
        })
    }

    /// Attaches strace, or enables perf's events; returns once the tracer is counting.
    pub fn start(self, pids: &[u32]) -> Result<Run, ProfileError> {
        Ok(match self {
            Pending::Strace => Run::Strace(strace::StraceRun::start(pids)?),
            Pending::Perf(mut p) => {
                p.enable()?;
                Run::Perf(p)
            }
        })
    }
}

/// A tracer counting.
pub(crate) enum Run {
    Strace(strace::StraceRun),
    Perf(perf::PerfRun),
}

impl Run {
    pub fn stop(self) -> Result<Counted, ProfileError> {
        match self {
            Run::Strace(r) => r.stop(),
            Run::Perf(r) => r.stop(),
        }
    }
}

/// Sends `signal` to a child that has not been waited for.
pub(crate) fn signal(child: &Child, signal: libc::c_int) {
    if let Ok(pid) = libc::pid_t::try_from(child.id()) {
        // SAFETY: kill takes plain integers and touches no memory of ours; the pid is our
        // child's, not yet reaped, so it cannot have been reused by another process.
        unsafe { libc::kill(pid, signal) };
    }
}

/// Waits for `child` at most `limit`; None if it is still running.
pub(crate) fn wait_for(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            _ => return None,
        }
    }
}

/// SIGINT, a bounded wait, then SIGKILL. True if the child exited on SIGINT (or before).
pub(crate) fn interrupt(child: &mut Child) -> bool {
    if let Ok(Some(_)) = child.try_wait() {
        return true;
    }
    signal(child, libc::SIGINT);
    if wait_for(child, TRACER_DEADLINE).is_some() {
        return true;
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// Runs a short command to completion (bounded); Ok(()) if it succeeded, else its stderr.
fn probe(cmd: &mut Command, tool: &str) -> Result<(), String> {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => format!("{tool} is not installed"),
            _ => format!("cannot run {tool}: {e}"),
        })?;
    let Some(status) = wait_for(&mut child, TRACER_DEADLINE) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{tool} did not finish within {TRACER_DEADLINE:?}"));
    };
    if status.success() {
        return Ok(());
    }
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    let first = err.lines().map(str::trim).find(|l| !l.is_empty());
    Err(format!(
        "{tool} failed ({status}): {}",
        first.unwrap_or("no message")
    ))
}

/// Whether `perf stat -e raw_syscalls:sys_enter -- true` works here.
pub(crate) fn perf_works() -> Result<(), String> {
    probe(
        Command::new("perf")
            .args(["stat", "-e", "raw_syscalls:sys_enter", "--", "true"])
            .env("LC_ALL", "C"),
        "perf",
    )
    .map_err(|e| {
        if e.contains("not installed") {
            format!("{e} (`sudo apt-get install {}`)", perf::PACKAGE)
        } else {
            e
        }
    })
}

/// Whether strace runs here.
pub(crate) fn strace_installed() -> Result<(), String> {
    probe(Command::new("strace").arg("-V"), "strace").map_err(|e| {
        if e.contains("not installed") {
            format!("{e} (`sudo apt-get install strace`)")
        } else {
            e
        }
    })
}
