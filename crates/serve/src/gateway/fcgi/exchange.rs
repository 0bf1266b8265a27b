//! One request to a FastCGI application over one connection, moved along by the client
//! connection's driver exactly as a program's pipes are (`protocol/programs.rs`): the request body
//! goes out as STDIN records while the application takes it, FCGI_STDOUT is read only while
//! the response has room (a client that reads nothing leaves the application's socket full,
//! not the server's memory), FCGI_STDERR goes to the error log, bounded.
//!
//! The records known at the start (BEGIN_REQUEST, the PARAMS stream, and the body bytes already
//! received, or the end of STDIN) leave in one write. At most one STDIN record of
//! [`STDIN_CHUNK`] is buffered at a time beyond what the socket took.

use std::io::{self, Read, Write};
use std::rc::Rc;
use std::time::Instant;

use mio::Registry;

use super::record::{Encoder, Event, Reader, REQUEST_COMPLETE};
use crate::gateway::program::{log_line, log_stderr};
use crate::gateway::upstream::{read_goes_on, Buffers, Stream};

/// Request body bytes put in one STDIN record.
const STDIN_CHUNK: usize = 32 * 1024;
/// The connection a request starts on, and what goes with it.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub stream: Stream,
    /// Its pool slot (its events' token).
    pub slot: usize,
    /// The application's index (its pool).
    pub app: usize,
    /// The connection came from the pool (so it is registered already).
    pub reused: bool,
    pub keep_conn: bool,
    /// The application, for the error log.
    pub name: Rc<str>,
    pub buffers: Buffers,
}

/// How a request ended, as the application said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct End {
    pub app_status: u32,
    pub protocol_status: u8,
}

/// One request under way.
#[derive(Debug)]
pub(crate) struct Exchange {
    stream: Stream,
    /// Its pool slot (its events' token).
    pub slot: usize,
    /// The application's index (its pool).
    pub app: usize,
    keep_conn: bool,
    encoder: Encoder,
    /// Records not yet written, from `sent`.
    out: Vec<u8>,
    sent: usize,
    /// The STDIN stream is not ended yet.
    stdin_open: bool,
    /// Nothing was written yet: body bytes join the records of `start` in the first write.
    first: bool,
    reader: Reader,
    input: Box<[u8]>,
    in_pos: usize,
    in_end: usize,
    /// END_REQUEST, once read.
    pub end: Option<End>,
    /// The connection failed or carried something malformed: never reused.
    broken: bool,
    /// A byte of the request reached the socket.
    sent_any: bool,
    /// A write failed after bytes of the request went: its STDIN ends there, unended, and the
    /// answer is still read (`upstream::read_goes_on`); the connection is never reused.
    write_failed: bool,
    /// The request may be sent again on a new connection if this one fails before the
    /// application says anything: it came from the pool (the application may have closed it
    /// as it was taken), has no body (so `out` keeps all of it), and its method is idempotent
    /// (RFC 9110 9.2.2): an application that ran it and died before writing anything cannot
    /// be told from one that never got it, and a POST must not run twice.
    replayable: bool,
    pub deadline: Instant,
    /// Bytes of FCGI_STDOUT read.
    pub output: u64,
    stderr_bytes: u64,
    /// FCGI_STDERR bytes of the whole request, held to `max_output` with the output: an
    /// application that writes only to its error stream is bounded as one writing its answer.
    stderr_total: u64,
    max_output: u64,
    stderr_line: Vec<u8>,
    stderr_lines: u32,
    /// The application, for the error log.
    pub name: Rc<str>,
    /// The buffers a proxied request uses, carried back to the pool untouched.
    spare: [Vec<u8>; 2],
    /// The thread's epoll instance: the connection is registered for reading alone, and for
    /// writing too only while a write waits (`asks_writable`).
    registry: Rc<Registry>,
    asks_writable: bool,
    /// The request's last record was written by the last write: no answer can be read yet.
    just_sent: bool,
    /// Something was read from the application for this request.
    received: bool,
    /// Reads of the connection, counted in the stats as `fastcgi_reads`.
    pub reads: u64,
}

impl Exchange {
    /// Starts a request on a connection (a new one, or an idle one from the pool): its
    /// BEGIN_REQUEST and PARAMS are in `up.buffers.out` already (`Params`, whose `encoder`
    /// this is), ended here; the first write waits for the body bytes already received
    /// (`Exchange::write_stdin`) or the first pump.
    pub fn start(
        mut encoder: Encoder,
        idempotent: bool,
        body: u64,
        mut up: Upstream,
        registry: &Rc<Registry>,
        deadline: Instant,
        max_output: u64,
    ) -> Result<Exchange, (io::Error, Buffers)> {
        if !up.reused {
            if let Err(e) = up.stream.register_readable(registry, up.slot) {
                return Err((e, up.buffers));
            }
        }
        let Buffers {
            mut out,
            input,
            head,
            cgi,
        } = up.buffers;
        encoder.end_params(&mut out);
        let stdin_open = body > 0;
        if !stdin_open {
            encoder.end_stdin(&mut out);
        }
        Ok(Exchange {
            stream: up.stream,
            slot: up.slot,
            app: up.app,
            keep_conn: up.keep_conn,
            encoder,
            out,
            sent: 0,
            stdin_open,
            first: true,
            reader: Reader::new(),
            input,
            in_pos: 0,
            in_end: 0,
            end: None,
            broken: false,
            sent_any: false,
            write_failed: false,
            replayable: up.reused && !stdin_open && idempotent,
            deadline,
            output: 0,
            stderr_bytes: 0,
            stderr_total: 0,
            max_output,
            stderr_line: Vec::new(),
            stderr_lines: 0,
            name: up.name,
            spare: [head, cgi],
            registry: registry.clone(),
            asks_writable: false,
            just_sent: false,
            received: false,
            reads: 0,
        })
    }

    /// Writes what records are pending; `Ok` when all are written or the socket is full, or
    /// once a failed write ended the request (nothing more is sent).
    pub fn send_pending(&mut self) -> io::Result<()> {
        if self.broken {
            return Err(io::Error::other("the connection to the application failed"));
        }
        self.first = false;
        if self.write_failed {
            return Ok(());
        }
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => return Err(self.fail(io::ErrorKind::WriteZero.into())),
                Ok(n) => {
                    self.sent += n;
                    self.sent_any = true;
                    self.just_sent = self.sent == self.out.len() && !self.stdin_open;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.wait_writable(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.sent_any => return Err(self.end_request(e)),
                Err(e) => return Err(self.fail(e)),
            }
        }
        if !self.replayable {
            self.out.clear();
            self.sent = 0;
        }
        Ok(())
    }

    /// Request body bytes as STDIN records; returns how many were taken (`WouldBlock` while
    /// the previous record is not written).
    pub fn write_stdin(&mut self, data: &[u8]) -> io::Result<usize> {
        if !self.stdin_open {
            return Ok(0);
        }
        if !self.first {
            self.send_pending()?;
            if !self.out.is_empty() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        let n = self.encoder.stdin(&mut self.out, data, STDIN_CHUNK);
        self.send_pending()?;
        Ok(n)
    }

    /// The whole body is taken: the end of STDIN.
    pub fn close_stdin(&mut self) {
        if self.stdin_open {
            self.stdin_open = false;
            self.encoder.end_stdin(&mut self.out);
            // A failure shows when the response is read.
            let _ = self.send_pending();
        }
    }

    pub fn has_stdin(&self) -> bool {
        self.stdin_open
    }

    /// Reads response bytes (FCGI_STDOUT) into `buf`: `Ok(0)` once END_REQUEST is read. The
    /// application closing the connection before it, or a malformed record, is an error.
    pub fn read_stdout(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.end.is_some() {
            return Ok(0);
        }
        // A write that fails here after part of the request went (`end_request`) ends the
        // request, not the read: the answer may be whole in the socket already.
        read_goes_on(self.send_pending(), self.write_failed)?;
        if std::mem::take(&mut self.just_sent) && !self.received {
            // The request has only just left: its answer cannot be here yet, and its arrival
            // is an event of the connection (edge-triggered epoll reports every arrival), so
            // the read that would find nothing is not made.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        loop {
            if self.in_pos < self.in_end {
                let input = &self.input[self.in_pos..self.in_end];
                let (used, event) = match self.reader.read(input, buf.len()) {
                    Ok(x) => x,
                    Err(e) => return Err(self.fail(io::Error::new(io::ErrorKind::InvalidData, e))),
                };
                self.in_pos += used;
                match event {
                    Some(Event::Stdout(d)) => {
                        buf[..d.len()].copy_from_slice(d);
                        self.output += d.len() as u64;
                        return Ok(d.len());
                    }
                    Some(Event::Stderr(d)) => {
                        self.stderr_bytes += d.len() as u64;
                        self.stderr_total += d.len() as u64;
                        log_stderr(&self.name, d, &mut self.stderr_line, &mut self.stderr_lines);
                        if self.stderr_total > self.max_output {
                            let e = io::Error::other(
                                "the application's FCGI_STDERR passed cgi_max_output_bytes",
                            );
                            return Err(self.fail(e));
                        }
                    }
                    Some(Event::End {
                        app_status,
                        protocol_status,
                    }) => {
                        self.end = Some(End {
                            app_status,
                            protocol_status,
                        });
                        if !self.stderr_line.is_empty() {
                            log_line(&self.name, &mut self.stderr_line, &mut self.stderr_lines);
                        }
                        return Ok(0);
                    }
                    None => {}
                }
                continue;
            }
            self.in_pos = 0;
            self.in_end = 0;
            self.reads += 1;
            match self.stream.read(&mut self.input) {
                Ok(0) => {
                    let e = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the application closed the connection before FCGI_END_REQUEST",
                    );
                    return Err(self.fail(e));
                }
                Ok(n) => {
                    // The application answered: the request reached it.
                    self.replayable = false;
                    self.received = true;
                    self.in_end = n;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    return Err(e)
                }
                Err(e) => return Err(self.fail(e)),
            }
        }
    }

    pub fn stdout_done(&self) -> bool {
        self.end.is_some()
    }

    /// The pass that sent the request's end is over: a read it skipped (`just_sent`) is made
    /// at the next pass, which an event of the connection or the client starts.
    pub fn pass_ended(&mut self) {
        self.just_sent = false;
    }

    /// Bytes of FCGI_STDERR read since the last call (its lines are logged as they come).
    pub fn take_stderr_bytes(&mut self) -> u64 {
        std::mem::take(&mut self.stderr_bytes)
    }

    /// Whether the application completed the request (`FCGI_REQUEST_COMPLETE`); a refusal
    /// (overloaded, cannot multiplex, unknown role) is logged.
    pub fn completed(&self) -> bool {
        match self.end {
            Some(e) if e.protocol_status == REQUEST_COMPLETE => true,
            Some(e) => {
                let why = match e.protocol_status {
                    1 => "cannot multiplex connections",
                    2 => "overloaded",
                    3 => "unknown role",
                    _ => "an unknown protocol status",
                };
                let _ = writeln!(
                    io::stderr(),
                    "flint serve: FastCGI {}: refused the request: {why} (502)",
                    self.name
                );
                false
            }
            None => false,
        }
    }

    /// The connection, if it may carry another request (the request ended cleanly, the
    /// application was asked to keep it, and nothing is left on it either way), and the
    /// buffers.
    pub fn finish(mut self) -> (Option<(usize, Stream)>, Buffers) {
        let mut clean = self
            .end
            .is_some_and(|e| e.protocol_status == REQUEST_COMPLETE)
            && self.keep_conn
            && !self.broken
            && self.in_pos == self.in_end
            && self.sent == self.out.len()
            && !self.write_failed
            // An application that answered before the body's end leaves the rest of the
            // request's STDIN unsent: the next request on the connection would follow a
            // stream the application still reads.
            && !self.stdin_open;
        if clean && self.asks_writable {
            // Idle, it is registered for reading alone again.
            clean = (self.stream)
                .set_writable_interest(&self.registry, self.slot, false)
                .is_ok();
        }
        let mut out = self.out;
        out.clear();
        let [head, cgi] = self.spare;
        let buffers = Buffers {
            out,
            input: self.input,
            head,
            cgi,
        };
        (clean.then_some((self.app, self.stream)), buffers)
    }

    /// Whether the request failed on a pooled connection before the application said anything,
    /// and may be sent again (once) on a new one: the application closed the connection as it
    /// was taken, so the request never reached it.
    pub fn may_retry(&self) -> bool {
        self.broken && self.replayable
    }

    /// Sends the request again on `stream`, a new connection.
    pub fn retry(&mut self, mut stream: Stream) -> io::Result<()> {
        // The slot carries over: it still drives this request's client connection.
        stream.register_readable(&self.registry, self.slot)?;
        self.asks_writable = false;
        // The failed connection is closed (and so leaves the epoll set) as it is replaced.
        self.stream = stream;
        self.replayable = false;
        self.broken = false;
        self.sent_any = false;
        self.write_failed = false;
        self.sent = 0;
        self.reader = Reader::new();
        self.in_pos = 0;
        self.in_end = 0;
        self.send_pending()
    }

    /// A write blocked: the connection's events say when it is writable again, until the
    /// request ends (`finish` takes writability back off before the connection is pooled).
    fn wait_writable(&mut self) -> io::Result<()> {
        if !self.asks_writable {
            let r = self
                .stream
                .set_writable_interest(&self.registry, self.slot, true);
            r.map_err(|e| self.fail(e))?;
            self.asks_writable = true;
        }
        Ok(())
    }

    /// A write failed once the application had part of the request: its STDIN ends (the rest
    /// of the body is dropped, the connection not pooled), and the answer, which may be whole
    /// in the socket already (an application that rejects an upload unread, then closes), is
    /// read on: the request fails only if the answer does. Returns the error.
    fn end_request(&mut self, e: io::Error) -> io::Error {
        self.write_failed = true;
        self.stdin_open = false;
        let _ = writeln!(
            io::stderr(),
            "flint serve: FastCGI {}: the request's write: {e} (the answer is still read)",
            self.name
        );
        e
    }

    /// Marks the connection broken and logs why; returns the error.
    fn fail(&mut self, e: io::Error) -> io::Error {
        if !self.broken {
            self.broken = true;
            let _ = writeln!(io::stderr(), "flint serve: FastCGI {}: {e}", self.name);
        }
        e
    }
}
