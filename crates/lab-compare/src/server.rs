//! A `--serve` command: started by flint on a free loopback port, stopped by flint, always.
//!
//! The command runs through `sh -c` as a [`lab_process::Group`]: a shell command may start
//! several processes (a master and workers), the group is what a signal reaches all at once,
//! and the terminal's Ctrl-C goes to flint's group only, so the servers keep serving until flint
//! has reported and stops them itself, in order. Stopping is SIGTERM to the group, a bounded
//! wait for the whole group to go, then SIGKILL, on every path out (the group's `Drop`).
//!
//! Readiness is a connect poll with a deadline (never a fixed sleep: a fast server should not
//! wait, a slow one should not be measured while it starts).
//!
//! The port is picked by binding 127.0.0.1:0 and closing the socket: another process could take
//! it before the server binds it; the server then fails to start, and is started again on
//! another port (three attempts in all). Readiness stays a connect, since a command may serve
//! from processes outside its group (a container's proxy): a server that took the port in
//! between and answers before the command has exited is not told apart.

use super::spec;
use lab_process::{free_port, Group, StopPolicy};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
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
    /// No loopback port could be bound to find a free one.
    #[error("no free loopback port: {0}")]
    Port(#[source] std::io::Error),
    /// The file for the command's output could not be created.
    #[error("creating the log {path}: {source}")]
    Log {
        /// The log file.
        path: PathBuf,
        /// Why it could not be created.
        source: std::io::Error,
    },
    /// `sh` could not be started.
    #[error("starting `sh -c {command}`: {source}")]
    Spawn {
        /// The command, `{port}` replaced.
        command: String,
        /// Why the spawn failed.
        source: std::io::Error,
    },
    /// The command ended before its port accepted a connection.
    #[error("the server exited ({status}) before accepting connections{}", tail_text(.tail))]
    Exited {
        /// How it ended.
        status: ExitStatus,
        /// The end of its output (the log's last 20 lines, 2 KiB at most); empty if none.
        tail: String,
    },
    /// The server exited after it had started accepting connections (seen before a round).
    #[error("the server exited ({status}){}", tail_text(.tail))]
    Died {
        /// How it ended.
        status: ExitStatus,
        /// The end of its output (the log's last 20 lines, 2 KiB at most); empty if none.
        tail: String,
    },
    /// The port accepted no connection within the ready timeout (the server was stopped).
    #[error("no connection accepted on 127.0.0.1:{port} within {:.1} s{}", .waited.as_secs_f64(), tail_text(.tail))]
    NotReady {
        /// The port it was told to listen on.
        port: u16,
        /// How long it was given: the ready timeout.
        waited: Duration,
        /// The end of its output (the log's last 20 lines, 2 KiB at most); empty if none.
        tail: String,
    },
    /// `stop` was set (Ctrl-C) before the server was ready.
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

/// Start-up attempts, each on a port found free.
pub const START_ATTEMPTS: usize = 3;

/// A running server command; stopped (group and all) when dropped.
#[derive(Debug)]
pub struct LocalServer {
    group: Group,
    port: u16,
    command: String,
    log: PathBuf,
    options: ServerOptions,
}

impl LocalServer {
    /// Picks a free port, runs `command` (with `{port}` replaced) through `sh -c` with its
    /// stdout and stderr going to `log`, and waits until the port accepts a connection, the
    /// process exits, `options.ready_timeout` passes, or `stop` is set.
    ///
    /// If the command exits before it accepts a connection, it is started again on another
    /// port, up to [`START_ATTEMPTS`] times in all: the port found free may have been taken.
    pub fn start(
        command: &str,
        log: &Path,
        options: ServerOptions,
        stop: &AtomicBool,
    ) -> Result<LocalServer, ServerError> {
        let mut attempt = 1;
        loop {
            match Self::start_once(command, log, options, stop) {
                Err(ServerError::Exited { .. }) if attempt < START_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    fn start_once(
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
        let group = Group::spawn(
            Command::new("sh")
                .arg("-c")
                .arg(&command)
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err),
            None,
            StopPolicy::terminate(options.stop_grace),
        )
        .map_err(|source| ServerError::Spawn {
            command: command.clone(),
            source,
        })?;
        let mut server = LocalServer {
            group,
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
        let mut backoff = lab_process::Backoff::new();
        loop {
            if let Some(status) = self.exited() {
                return Err(ServerError::Exited {
                    status,
                    tail: self.log_tail(),
                });
            }
            let now = Instant::now();
            if now >= deadline {
                // The wait asked for, which the user set; the last poll may end a little
                // after it on a loaded machine (1.1 s for 1.0 s at load 20).
                return Err(ServerError::NotReady {
                    port: self.port,
                    waited: self.options.ready_timeout,
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
            // A refused connect returns at once: pause between attempts, longer as they fail.
            backoff.pause(deadline);
        }
    }

    /// The loopback port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The group leader's pid (the `sh`, or the server if the shell exec'd it).
    pub fn pid(&self) -> u32 {
        self.group.pid()
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
        self.group.exited()
    }

    /// The last lines of its log (at most 2 KiB, 20 lines).
    pub fn log_tail(&self) -> String {
        tail(&self.log, 2048, 20)
    }

    /// SIGTERM to the group, up to `stop_grace` for every process of it to exit, then SIGKILL.
    /// Idempotent; returns the leader's exit status.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        self.group.stop().status
    }
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
