//! Where a request's response comes from: a program's pipes (`program.rs`, once its spawner
//! started it), a FastCGI connection (`fcgi/exchange.rs`) or an upstream HTTP/1.1 connection
//! (`proxy/exchange.rs`). The connection moves either through the same calls
//! (`protocol/programs.rs`): request body in, response bytes out while the client keeps up, stderr
//! to the log, and how it ended.

use std::time::Instant;

use super::label::RequestLabel;
use super::{fcgi, proxy, Program};

/// Where a request's response comes from: a program's pipes, or a FastCGI application's
/// connection. Both give a CGI response (head, then body) read only while the client's
/// response has room.
#[derive(Debug)]
pub(crate) enum Source {
    /// A program its spawner thread is starting (`spawner.rs`): nothing moves until it runs.
    Starting(Starting),
    Program(Program),
    FastCgi(Box<fcgi::Exchange>),
    Proxy(Box<proxy::Exchange>),
}

/// A program being started off the loop: which job, the wall time it runs under, and its path
/// as its error-log lines name it (a timeout before it runs too; `Program` takes it over).
#[derive(Debug, Clone)]
pub(crate) struct Starting {
    pub ticket: u64,
    pub deadline: Instant,
    pub name: Box<str>,
}

/// How a source's part ended, once its output is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finished {
    /// Exited by a status (a program), or the request completed (FastCGI).
    Complete,
    /// Killed by a signal (a program), or the request refused (FastCGI).
    Died,
}

impl Source {
    pub fn deadline(&self) -> Instant {
        match self {
            Source::Starting(s) => s.deadline,
            Source::Program(p) => p.deadline,
            Source::FastCgi(x) => x.deadline,
            Source::Proxy(x) => x.deadline,
        }
    }

    /// Bytes of response read so far.
    pub fn output(&self) -> u64 {
        match self {
            Source::Starting(_) => 0,
            Source::Program(p) => p.output,
            Source::FastCgi(x) => x.output,
            Source::Proxy(x) => x.output,
        }
    }

    /// Request body bytes in; returns how many were taken. `request` is its request, as a
    /// failure's error-log line names it (a proxied request's; the list of sources keeps it,
    /// `protocol/programs.rs`), as in [`Source::send_pending`] and [`Source::read_stdout`].
    pub fn write_stdin(&mut self, data: &[u8], request: &RequestLabel) -> std::io::Result<usize> {
        match self {
            Source::Starting(_) => Err(std::io::ErrorKind::WouldBlock.into()),
            Source::Program(p) => p.write_stdin(data),
            Source::FastCgi(x) => x.write_stdin(data),
            Source::Proxy(x) => x.write_stdin(data, request),
        }
    }

    pub fn close_stdin(&mut self) {
        match self {
            Source::Starting(_) => {}
            Source::Program(p) => p.close_stdin(),
            Source::FastCgi(x) => x.close_stdin(),
            Source::Proxy(x) => x.close_stdin(),
        }
    }

    pub fn has_stdin(&self) -> bool {
        match self {
            Source::Starting(_) => true,
            Source::Program(p) => p.has_stdin(),
            Source::FastCgi(x) => x.has_stdin(),
            Source::Proxy(x) => x.has_stdin(),
        }
    }

    /// Writes what the source has pending that no body byte waits for (FastCGI: the request's
    /// records when its body is empty or ended). A failure shows when the response is read.
    pub fn send_pending(&mut self, request: &RequestLabel) {
        match self {
            Source::FastCgi(x) => drop(x.send_pending()),
            Source::Proxy(x) => drop(x.send_pending(request)),
            Source::Program(_) | Source::Starting(_) => {}
        }
    }

    /// A pass of the connection's driver over this source is over: a read skipped because the
    /// request had only just left (FastCGI, proxy) is made at the next pass. Only the pass
    /// that sent it may skip: its answer's arrival is an event still to come, while in a
    /// later pass (one that had no room for output when the request left) it may have come.
    pub fn pass_ended(&mut self) {
        match self {
            Source::FastCgi(x) => x.pass_ended(),
            Source::Proxy(x) => x.pass_ended(),
            Source::Program(_) | Source::Starting(_) => {}
        }
    }

    pub fn read_stdout(
        &mut self,
        buf: &mut [u8],
        request: &RequestLabel,
    ) -> std::io::Result<usize> {
        match self {
            Source::Starting(_) => Err(std::io::ErrorKind::WouldBlock.into()),
            Source::Program(p) => p.read_stdout(buf),
            Source::FastCgi(x) => x.read_stdout(buf),
            Source::Proxy(x) => x.read_stdout(buf, request),
        }
    }

    pub fn stdout_done(&self) -> bool {
        match self {
            Source::Starting(_) => false,
            Source::Program(p) => p.stdout_done(),
            Source::FastCgi(x) => x.stdout_done(),
            Source::Proxy(x) => x.stdout_done(),
        }
    }

    /// Logs what stderr holds; returns its bytes since the last call.
    pub fn drain_stderr(&mut self) -> u64 {
        match self {
            Source::Program(p) => p.drain_stderr(),
            Source::FastCgi(x) => x.take_stderr_bytes(),
            Source::Proxy(_) | Source::Starting(_) => 0,
        }
    }

    /// How it ended, once its output is done (`None` while a program has not exited).
    pub fn finished(&mut self) -> Option<Finished> {
        use std::os::unix::process::ExitStatusExt;
        match self {
            Source::Starting(_) => None,
            Source::Program(p) => p.poll_exit().map(|status| match status.signal() {
                Some(_) => Finished::Died,
                None => Finished::Complete,
            }),
            Source::FastCgi(x) if !x.stdout_done() => None,
            Source::FastCgi(x) if x.completed() => Some(Finished::Complete),
            Source::FastCgi(_) => Some(Finished::Died),
            Source::Proxy(x) if !x.stdout_done() => None,
            Source::Proxy(x) if x.failure.is_none() => Some(Finished::Complete),
            Source::Proxy(_) => Some(Finished::Died),
        }
    }
}
