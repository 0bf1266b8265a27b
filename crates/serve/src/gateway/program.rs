//! A running program's I/O, all non-blocking and registered with the thread's epoll instance
//! under its connection's token (with [`super::PROGRAM_TOKEN`]): stdin takes the request body
//! as it arrives, stdout is read only while the connection's output has room (so a client that
//! reads nothing leaves the program blocked on a full pipe, not the server holding its output),
//! stderr goes to the error log a bounded number of lines, and the exit is seen through a
//! pidfd (readable once the child has exited; then `waitid(WNOHANG)` reaps it).
//!
//! Started off the loop by its spawner thread (`spawner.rs`: `posix_spawn`, a vfork-style
//! clone with no copy of the server's address space). The program leads its own process group,
//! so a wall-time kill takes its children too.

use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::process::{Child, ExitStatus};
use std::time::Instant;

use mio::unix::pipe::{Receiver, Sender};
use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};

use super::process_group::kill_group;
use super::spawner::Started;

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
    /// The server killed it at shutdown: its death is no crash of its own.
    pub killed_at_shutdown: bool,
}

/// A program its spawner started (`spawner.rs`), its pipes made non-blocking and registered
/// under `token | PROGRAM_TOKEN`. On an error it runs, unregistered: to be retired (killed).
pub(crate) fn registered(
    started: Started,
    name: Box<str>,
    token: usize,
    registry: &Registry,
    deadline: Instant,
) -> Result<Program, Box<Program>> {
    let Started {
        mut child,
        pidfd,
        killed_at_shutdown,
    } = started;
    let mut p = Program {
        stdin: child.stdin.take().map(Sender::from),
        stdout: child.stdout.take().map(Receiver::from),
        stderr: child.stderr.take().map(Receiver::from),
        child: Some(child),
        pidfd,
        deadline,
        exit: None,
        output: 0,
        stderr_line: Vec::new(),
        stderr_lines: 0,
        name,
        killed_at_shutdown,
    };
    match p.register(token, registry) {
        Ok(()) => Ok(p),
        Err(_) => Err(Box::new(p)),
    }
}

impl Program {
    /// The program's path, as its error-log lines name it.
    pub fn name(&self) -> &str {
        &self.name
    }

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

    /// [`Program::kill`] as the server stops, remembered so that its end is not counted as a
    /// crash.
    pub fn kill_at_shutdown(&mut self) {
        self.killed_at_shutdown = true;
        self.kill();
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
        let _ = io::stderr().write_all(&error_log_line(name, line));
    } else if *count == MAX_STDERR_LINES + 1 {
        let _ = writeln!(
            io::stderr(),
            "flint serve: {name}: more stderr lines not logged"
        );
    }
    line.clear();
}

/// One stderr line as the error log takes it: `flint serve: NAME: LINE` and a newline, its
/// trailing blanks off and its bytes escaped as the access log escapes (control bytes, CR, NUL,
/// non-ASCII as `\xHH`), so that a program can neither forge a line of the server's, nor
/// write escape sequences to the terminal that shows the log.
fn error_log_line(name: &str, line: &[u8]) -> Vec<u8> {
    let end = line
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
        .map_or(0, |i| i + 1);
    let mut out = b"flint serve: ".to_vec();
    crate::access_log::escape_into(&mut out, name.as_bytes());
    out.extend_from_slice(b": ");
    crate::access_log::escape_into(&mut out, &line[..end]);
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::error_log_line;

    #[test]
    fn a_stderr_line_is_escaped_so_it_can_forge_no_log_line() {
        let line = b"A\x1b[31mRED\rFAKE: flint serve: admin logged in\x00nul \xc3\xa9\r";
        let text = error_log_line("/srv/cgi/x", line);
        assert_eq!(
            String::from_utf8(text).unwrap(),
            "flint serve: /srv/cgi/x: A\\x1B[31mRED\\x0DFAKE: flint serve: admin logged in\\x00nul \\xC3\\xA9\n"
        );
        assert_eq!(error_log_line("p", b"plain  "), b"flint serve: p: plain\n");
    }
}
