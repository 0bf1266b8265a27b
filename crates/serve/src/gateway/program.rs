//! A running program's I/O, all non-blocking and registered with the thread's epoll instance
//! under its connection's token (with [`super::PROGRAM_TOKEN`]): stdin takes the request body
//! as it arrives, stdout is read only while the connection's output has room (so a client that
//! reads nothing leaves the program blocked on a full pipe, not the server holding its output),
//! stderr goes to the error log a bounded number of lines, and the exit is seen through a
//! pidfd (readable once the child has exited; then `waitid(WNOHANG)` reaps it).
//!
//! Started by `std::process::Command`, which on Linux uses `posix_spawn` (glibc: a
//! `clone(CLONE_VM | CLONE_VFORK)`, no copy of the server's address space) when nothing needs
//! code run in the child: no `pre_exec`, and `process_group(0)` maps to `POSIX_SPAWN_SETPGROUP`.
//! The program leads its own process group, so a wall-time kill takes its children too.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::Instant;

use mio::unix::pipe::{Receiver, Sender};
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::process::{Pid, PidfdFlags, Signal};

use super::Launch;

/// Lines of one program's stderr written to the error log; later ones are counted, not written.
const MAX_STDERR_LINES: u32 = 32;
/// A stderr line is cut at this many bytes.
const MAX_STDERR_LINE: usize = 512;

/// One running program.
#[derive(Debug)]
pub(crate) struct Program {
    /// `None` once reaped.
    child: Option<Child>,
    pidfd: Option<OwnedFd>,
    stdin: Option<Sender>,
    stdout: Option<Receiver>,
    stderr: Option<Receiver>,
    /// Its wall-time limit.
    pub deadline: Instant,
    /// How it ended, once reaped.
    pub exit: Option<ExitStatus>,
    /// Bytes read from its stdout.
    pub output: u64,
    stderr_line: Vec<u8>,
    stderr_lines: u32,
    name: Box<str>,
}

/// Why a program did not start.
#[derive(Debug)]
pub(crate) enum StartError {
    /// `posix_spawn` (or the exec in it) failed: nothing runs.
    Spawn(io::Error),
    /// It runs, but its pipes could not be registered: to be retired (killed).
    Register(Box<Program>),
}

/// Starts `launch`, its pipes and pidfd registered under `token | PROGRAM_TOKEN`.
pub(crate) fn start(
    launch: &Launch,
    token: usize,
    registry: &Registry,
    deadline: Instant,
) -> Result<Program, StartError> {
    let mut cmd = Command::new(&launch.program);
    cmd.env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&launch.dir)
        .process_group(0)
        .stdin(if launch.body > 0 {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(StartError::Spawn)?;
    let stdin = child.stdin.take().map(Sender::from);
    let stdout = child.stdout.take().map(Receiver::from);
    let stderr = child.stderr.take().map(Receiver::from);
    let pidfd = Pid::from_raw(child.id() as i32)
        .and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok());
    let mut p = Program {
        child: Some(child),
        pidfd,
        stdin,
        stdout,
        stderr,
        deadline,
        exit: None,
        output: 0,
        stderr_line: Vec::new(),
        stderr_lines: 0,
        name: launch.program.display().to_string().into(),
    };
    match p.register(token, registry) {
        Ok(()) => Ok(p),
        Err(_) => Err(StartError::Register(Box::new(p))),
    }
}

impl Program {
    fn register(&mut self, token: usize, registry: &Registry) -> io::Result<()> {
        let token = Token(token | super::PROGRAM_TOKEN);
        if let Some(s) = self.stdin.as_mut() {
            s.set_nonblocking(true)?;
            registry.register(s, token, Interest::WRITABLE)?;
        }
        for r in [self.stdout.as_mut(), self.stderr.as_mut()]
            .into_iter()
            .flatten()
        {
            r.set_nonblocking(true)?;
            registry.register(r, token, Interest::READABLE)?;
        }
        if let Some(fd) = self.pidfd.as_ref() {
            registry.register(&mut SourceFd(&fd.as_raw_fd()), token, Interest::READABLE)?;
        }
        Ok(())
    }

    /// Writes request body bytes to stdin; `Ok(0)` when stdin is closed.
    pub fn write_stdin(&mut self, data: &[u8]) -> io::Result<usize> {
        match self.stdin.as_mut() {
            Some(s) => s.write(data),
            None => Ok(0),
        }
    }

    /// The whole body is written (or the program stopped reading it): EOF on its stdin.
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    pub fn has_stdin(&self) -> bool {
        self.stdin.is_some()
    }

    /// Reads stdout; `Ok(0)` at its end (then it stays ended).
    pub fn read_stdout(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let Some(r) = self.stdout.as_mut() else {
            return Ok(0);
        };
        let n = r.read(buf)?;
        if n == 0 {
            self.stdout = None;
        }
        self.output += n as u64;
        Ok(n)
    }

    pub fn stdout_done(&self) -> bool {
        self.stdout.is_none()
    }

    /// Reads what stderr holds and logs its lines, a bounded number per program. Returns the
    /// bytes read.
    pub fn drain_stderr(&mut self) -> u64 {
        let Some(r) = self.stderr.as_mut() else {
            return 0;
        };
        let mut buf = [0u8; 1024];
        let mut total = 0;
        loop {
            match r.read(&mut buf) {
                Ok(0) => {
                    self.stderr = None;
                    break;
                }
                Ok(n) => {
                    total += n as u64;
                    log_stderr(
                        &self.name,
                        &buf[..n],
                        &mut self.stderr_line,
                        &mut self.stderr_lines,
                    );
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if self.stderr.is_none() && !self.stderr_line.is_empty() {
            log_line(&self.name, &mut self.stderr_line, &mut self.stderr_lines);
        }
        total
    }

    /// How it ended, once it has (reaped here; `None` while it runs).
    pub fn poll_exit(&mut self) -> Option<ExitStatus> {
        if self.exit.is_none() {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    self.exit = Some(status);
                    self.child = None;
                    self.pidfd = None;
                }
            }
        }
        self.exit
    }

    /// SIGKILL to its process group (its own children too), unless it was reaped.
    pub fn kill(&mut self) {
        if let Some(child) = self.child.as_ref() {
            kill_group(child.id());
        }
    }

    /// The child still to reap, if any.
    pub fn into_child(mut self) -> Option<Child> {
        self.child.take()
    }
}

/// Bytes of a program's (or a FastCGI application's) stderr: each complete line to the error
/// log, cut at `MAX_STDERR_LINE`; `line` holds the unfinished one.
pub(crate) fn log_stderr(name: &str, bytes: &[u8], line: &mut Vec<u8>, count: &mut u32) {
    for &b in bytes {
        if b == b'\n' {
            log_line(name, line, count);
        } else if line.len() < MAX_STDERR_LINE {
            line.push(b);
        }
    }
}

/// One stderr line to the error log (the server's stderr), while the program is under
/// `MAX_STDERR_LINES`; then one line saying the rest is not logged.
pub(crate) fn log_line(name: &str, line: &mut Vec<u8>, count: &mut u32) {
    *count += 1;
    if *count <= MAX_STDERR_LINES {
        let text = String::from_utf8_lossy(line);
        let _ = writeln!(io::stderr(), "flint serve: {name}: {}", text.trim_end());
    } else if *count == MAX_STDERR_LINES + 1 {
        let _ = writeln!(
            io::stderr(),
            "flint serve: {name}: more stderr lines not logged"
        );
    }
    line.clear();
}

/// SIGKILL to the process group `pid` leads (the program's: it was started with
/// `process_group(0)`, and is not reaped yet, so the id is still its own).
pub(crate) fn kill_group(pid: u32) {
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}
