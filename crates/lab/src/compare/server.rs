//! A `--serve` command: started by flint on a free loopback port, stopped by flint, always.
//!
//! The command runs through `sh -c` in a process group of its own, for two reasons: a shell
//! command may start several processes (a master and workers), and the group is what a signal
//! can reach all at once; and the terminal's Ctrl-C goes to flint's group only, so the servers
//! keep serving until flint has reported and stops them itself, in order.
//!
//! Readiness is a connect poll with a deadline (never a fixed sleep: a fast server should not
//! wait, a slow one should not be measured while it starts). Stopping is SIGTERM to the group, a
//! bounded wait for the whole group to go, then SIGKILL; [`LocalServer`]'s `Drop` does it, so a
//! server is stopped on every path out, errors and panics included. Only SIGKILL of flint itself
//! can leave one running.
//!
//! The port is picked by binding 127.0.0.1:0 and closing the socket: another process could take
//! it before the server binds it; the server then fails to start, and says so in its log.

use super::spec;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long to wait for a server, each way.
#[derive(Debug, Clone, Copy)]
pub struct ServerOptions {
    /// From spawn to the first accepted connection.
    pub ready_timeout: Duration,
    /// From SIGTERM to SIGKILL.
    pub stop_grace: Duration,
}

impl Default for ServerOptions {
    fn default() -> Self {
        ServerOptions {
            ready_timeout: Duration::from_secs(10),
            stop_grace: Duration::from_secs(5),
        }
    }
}

/// Why a server could not be started, or stopped running.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("no free loopback port: {0}")]
    Port(#[source] std::io::Error),
    #[error("creating the log {path}: {source}")]
    Log {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("starting `sh -c {command}`: {source}")]
    Spawn {
        command: String,
        source: std::io::Error,
    },
    #[error("the server exited ({status}) before accepting connections{}", tail_text(.tail))]
    Exited { status: ExitStatus, tail: String },
    #[error("the server exited ({status}){}", tail_text(.tail))]
    Died { status: ExitStatus, tail: String },
    #[error("no connection accepted on 127.0.0.1:{port} within {:.1} s{}", .waited.as_secs_f64(), tail_text(.tail))]
    NotReady {
        port: u16,
        waited: Duration,
        tail: String,
    },
    #[error("interrupted while waiting for the server")]
    Interrupted,
}

fn tail_text(tail: &str) -> String {
    if tail.is_empty() {
        "; its output was empty".to_owned()
    } else {
        format!("; the end of its output:\n{tail}")
    }
}

/// A running server command; stopped (group and all) when dropped.
#[derive(Debug)]
pub struct LocalServer {
    child: Option<Child>,
    pid: u32,
    port: u16,
    command: String,
    log: PathBuf,
    options: ServerOptions,
}

impl LocalServer {
    /// Picks a free port, runs `command` (with `{port}` replaced) through `sh -c` with its
    /// stdout and stderr going to `log`, and waits until the port accepts a connection, the
    /// process exits, `options.ready_timeout` passes, or `stop` is set.
    pub fn start(
        command: &str,
        log: &Path,
        options: ServerOptions,
        stop: &AtomicBool,
    ) -> Result<LocalServer, ServerError> {
        let port = free_port().map_err(ServerError::Port)?;
        let command = spec::with_port(command, port);
        let log_err = |source| ServerError::Log {
            path: log.to_owned(),
            source,
        };
        let out = File::create(log).map_err(log_err)?;
        let err = out.try_clone().map_err(log_err)?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(&command)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0)
            .spawn()
            .map_err(|source| ServerError::Spawn {
                command: command.clone(),
                source,
            })?;
        let mut server = LocalServer {
            pid: child.id(),
            child: Some(child),
            port,
            command,
            log: log.to_owned(),
            options,
        };
        server.wait_ready(stop)?;
        Ok(server)
    }

    /// Polls a connect until it succeeds; each failure leaves the server to `Drop`.
    fn wait_ready(&mut self, stop: &AtomicBool) -> Result<(), ServerError> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let start = Instant::now();
        let deadline = start + self.options.ready_timeout;
        loop {
            if let Some(status) = self.exited() {
                return Err(ServerError::Exited {
                    status,
                    tail: self.log_tail(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(ServerError::NotReady {
                    port: self.port,
                    waited: now - start,
                    tail: self.log_tail(),
                });
            }
            let attempt = (deadline - now).min(Duration::from_millis(200));
            if TcpStream::connect_timeout(&addr, attempt).is_ok() {
                return Ok(());
            }
            if stop.load(Ordering::Relaxed) {
                return Err(ServerError::Interrupted);
            }
            // A refused connect returns at once: pause a little between attempts.
            std::thread::sleep(
                Duration::from_millis(10).min(deadline.saturating_duration_since(Instant::now())),
            );
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The group leader's pid (the `sh`, or the server if the shell exec'd it).
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// The command as run, `{port}` replaced.
    pub fn command(&self) -> &str {
        &self.command
    }

    /// Its log file (stdout and stderr).
    pub fn log(&self) -> &Path {
        &self.log
    }

    /// An error if the server has exited since it started.
    pub fn check_running(&mut self) -> Result<(), ServerError> {
        match self.exited() {
            Some(status) => Err(ServerError::Died {
                status,
                tail: self.log_tail(),
            }),
            None => Ok(()),
        }
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// The last lines of its log (at most 2 KiB, 20 lines).
    pub fn log_tail(&self) -> String {
        tail(&self.log, 2048, 20)
    }

    /// SIGTERM to the group, up to `stop_grace` for every process of it to exit, then SIGKILL.
    /// Idempotent; returns the leader's exit status the first time.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let mut child = self.child.take()?;
        let pgid = self.pid as libc::pid_t;
        let mut status = child.try_wait().ok().flatten();
        signal_group(pgid, libc::SIGTERM);
        let deadline = Instant::now() + self.options.stop_grace;
        loop {
            if status.is_none() {
                status = child.try_wait().ok().flatten();
            }
            // The group id cannot be reused while any member lives (nor while the unreaped
            // leader does), so the signals below reach only this server's processes.
            if status.is_some() && !group_exists(pgid) {
                return status;
            }
            if Instant::now() >= deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        signal_group(pgid, libc::SIGKILL);
        // After SIGKILL the wait is short: the kernel ends the process without its cooperation.
        status.or_else(|| child.wait().ok())
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port nothing listens on right now.
pub fn free_port() -> std::io::Result<u16> {
    Ok(TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?
        .local_addr()?
        .port())
}

fn signal_group(pgid: libc::pid_t, signal: libc::c_int) {
    if pgid <= 1 {
        return; // never signal "every process" (-1) or our own group (0)
    }
    // SAFETY: kill(2) takes plain integers and touches no memory of ours; a negative pid
    // addresses the process group `pgid`, which `process_group(0)` created for the server
    // (pgid > 1 is checked above, so it is never "all processes" or our own group). Errors
    // (ESRCH: the group is gone) are the expected outcome of a race with its exit. Exercised by
    // crates/lab/tests/compare_server.rs.
    unsafe {
        libc::kill(-pgid, signal);
    }
}

fn group_exists(pgid: libc::pid_t) -> bool {
    if pgid <= 1 {
        return false;
    }
    // SAFETY: as in `signal_group`; signal 0 only checks that the group exists.
    unsafe { libc::kill(-pgid, 0) == 0 }
}

/// The last `max_lines` lines within the last `max_bytes` of `path` ("" if unreadable).
fn tail(path: &Path, max_bytes: u64, max_lines: usize) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    if f.seek(SeekFrom::Start(len.saturating_sub(max_bytes)))
        .is_err()
    {
        return String::new();
    }
    let mut bytes = Vec::new();
    if f.take(max_bytes).read_to_end(&mut bytes).is_err() {
        return String::new();
    }
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.trim_end().lines().collect();
    lines[lines.len().saturating_sub(max_lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tail_keeps_the_last_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let text: String = (0..50).map(|i| format!("line {i}\n")).collect();
        std::fs::write(&path, text).unwrap();
        let t = tail(&path, 4096, 3);
        assert_eq!(t, "line 47\nline 48\nline 49");
        assert_eq!(tail(&dir.path().join("missing"), 100, 3), "");
    }
}
