//! One proxied request on one upstream connection, moved by the client connection's driver as a
//! FastCGI request is (`protocol/programs.rs`): the head (and the first body bytes) out in one write,
//! the rest of the body as the upstream takes it (one chunk buffered at most), the response read
//! only while the client's response has room (a slow client slows the upstream read: what the
//! server holds is bounded by the output window and one read buffer), its head parsed by
//! `wire` (`parse_response_head`) and its body followed by `wire`'s `BodyDecoder` (length,
//! chunked, or the close), handed out decoded, as a program's CGI output.
//!
//! The upstream's 1xx heads are skipped (they do not move the deadline of the final head:
//! `first_byte_timeout_ms` from the request's end); a 101 (a protocol switch this proxy does
//! not carry) fails the request (502). Trailers are dropped. A body longer than its length, a malformed
//! head or chunk, or a connection that ends early marks the connection broken: it is closed,
//! never pooled, so nothing of it reaches another client. A failed write of the request
//! after part of it went ends the request body, not the exchange: an upstream may answer
//! (413, 401) and close without reading the rest, and that answer is still passed.
//!
//! This file holds the exchange and its write side; the response's read side (the TLS
//! handshake's end, the head, the body decoded) is `exchange/reading.rs`.

use crate::gateway::label::RequestLabel;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Instant;

use mio::Registry;
use wire::BodyDecoder;

use super::{Forward, Timeouts};
use crate::gateway::upstream::{tls, Buffers, Stream};

mod reading;

/// Request body bytes buffered at once beyond what the socket took.
const BODY_CHUNK: usize = 32 * 1024;

/// Why an exchange failed, counted by kind in the stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failure {
    /// The connection was refused (nothing reached the upstream).
    Refused,
    /// Reset, or closed before the response's end.
    Reset,
    /// A malformed or oversized head, a 101, a malformed chunk.
    BadResponse,
    /// An `https://` upstream's TLS handshake failed: its certificate refused (the reason in
    /// the error log), no version or cipher suite in common, not TLS.
    Tls,
}

impl Failure {
    /// The kind of a failed read or write of the connection.
    fn of(e: &io::Error) -> Failure {
        if tls::failure(e).is_some() {
            return Failure::Tls;
        }
        match e.kind() {
            io::ErrorKind::ConnectionRefused => Failure::Refused,
            _ => Failure::Reset,
        }
    }
}

/// The connection a request starts on, and what goes with it.
#[derive(Debug)]
pub(crate) struct Upstream {
    pub stream: Stream,
    pub slot: usize,
    pub addr: usize,
    pub group: usize,
    /// Taken from the pool, with a peek (`upstream::Pool::take_open`): a read of the connection.
    pub reused: bool,
    pub name: Rc<str>,
    pub timeouts: Timeouts,
    pub max_head: usize,
}

#[derive(Debug)]
enum State {
    Head,
    Body(BodyDecoder),
    Done,
}

/// One request under way.
#[derive(Debug)]
pub(crate) struct Exchange {
    stream: Stream,
    pub slot: usize,
    pub addr: usize,
    pub group: usize,
    pub mount: usize,
    /// The head and body bytes not yet written, from `sent`; kept whole while `replayable`.
    out: Vec<u8>,
    sent: usize,
    /// The head and first body bytes wait for the first write.
    first: bool,
    /// Request body bytes still to be taken from the client.
    body_left: u64,
    /// The body ended before its length (a failed write or the client's end): the request
    /// in `out` is not whole, so it is never sent again and the connection never pooled.
    body_cut: bool,
    /// A write failed after bytes of the request went: the request body ends there, and the
    /// response is still read (an upstream may answer, 413 or 401, and close unread).
    write_failed: bool,
    /// A byte of the request reached the socket.
    sent_any: bool,
    /// A byte of the response came back.
    received: bool,
    /// No body and an idempotent method: `out` keeps the whole request to send again.
    replayable: bool,
    /// Sent again once already.
    pub retried: bool,
    /// The connection came from the pool.
    pub reused: bool,
    connected: bool,
    is_head: bool,
    state: State,
    /// The response head as it arrives (its bytes up to the empty line).
    head: Vec<u8>,
    max_head: usize,
    /// Bytes of the 1xx heads skipped so far: counted against `max_head` with the final head.
    skipped: usize,
    /// The CGI head made of it, handed out before the body.
    cgi: Vec<u8>,
    cgi_at: usize,
    input: Box<[u8]>,
    in_pos: usize,
    in_end: usize,
    /// The last read filled `input`: more may wait in the socket with no event to say so.
    last_full: bool,
    /// The upstream lets the connection carry another request.
    keep_alive: bool,
    pub failure: Option<Failure>,
    /// The upstream sent bytes past its response's end: the response is passed as its length
    /// says, the rest dropped with the connection.
    pub overlong: bool,
    /// Something moved since the deadline was set.
    moved: bool,
    /// The request is out and the deadline is the final head's (`first_byte`): set once, not
    /// moved by 1xx heads or a head arriving in pieces.
    awaiting_head: bool,
    /// The request's last byte was written by the last write: no answer can be read yet.
    just_sent: bool,
    pub deadline: Instant,
    timeouts: Timeouts,
    /// Bytes of response (the CGI head and the decoded body) handed out.
    pub output: u64,
    /// Reads of the connection (peeks included, the pool's as it was taken): counted in the
    /// stats as `proxy_reads`.
    pub reads: u64,
    pub name: Rc<str>,
}

impl Exchange {
    /// Starts `fwd` (its head ended with `body`'s length) on a connection: the head is sent
    /// from the buffer it was written in.
    pub fn start(
        mut fwd: Forward,
        body: u64,
        mut up: Upstream,
        registry: &Registry,
        now: Instant,
    ) -> Result<Exchange, (io::Error, Buffers)> {
        if !up.reused {
            if let Err(e) = up.stream.register(registry, up.slot) {
                return Err((e, fwd.buffers));
            }
        }
        fwd.finish(body);
        let Buffers {
            out,
            input,
            head,
            cgi,
        } = fwd.buffers;
        let connect = if up.reused {
            up.timeouts.idle
        } else {
            up.timeouts.connect
        };
        Ok(Exchange {
            stream: up.stream,
            slot: up.slot,
            addr: up.addr,
            group: up.group,
            mount: fwd.mount,
            out,
            sent: 0,
            first: true,
            body_left: body,
            body_cut: false,
            write_failed: false,
            sent_any: false,
            received: false,
            replayable: body == 0 && fwd.idempotent,
            retried: false,
            reused: up.reused,
            connected: up.reused,
            is_head: fwd.is_head,
            state: State::Head,
            head,
            max_head: up.max_head,
            skipped: 0,
            cgi,
            cgi_at: 0,
            input,
            in_pos: 0,
            in_end: 0,
            last_full: false,
            keep_alive: false,
            failure: None,
            overlong: false,
            moved: false,
            awaiting_head: false,
            just_sent: false,
            deadline: now + connect,
            timeouts: up.timeouts,
            output: 0,
            reads: u64::from(up.reused),
            name: up.name,
        })
    }

    /// Writes what is pending; `Ok` when all is written or the socket is full. `request`
    /// (kept by the source's list, `protocol/programs.rs`) names the request in a failure's
    /// error-log line, as it does in the calls below.
    pub fn send_pending(&mut self, request: &RequestLabel) -> io::Result<()> {
        if self.failure.is_some() {
            return Err(io::Error::other("the upstream connection failed"));
        }
        self.first = false;
        if self.write_failed {
            return Ok(());
        }
        while self.sent < self.out.len() {
            match self.stream.write(&self.out[self.sent..]) {
                Ok(0) => {
                    return Err(self.fail(io::ErrorKind::WriteZero.into(), Failure::Reset, request))
                }
                Ok(n) => {
                    self.sent += n;
                    self.sent_any = true;
                    self.connected = true;
                    self.moved = true;
                    self.just_sent = self.sent == self.out.len() && self.body_left == 0;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if self.sent_any => return Err(self.end_request(e)),
                Err(e) => {
                    let kind = self.kind_of(&e);
                    return Err(self.fail(e, kind, request));
                }
            }
        }
        if !self.replayable {
            self.out.clear();
            self.sent = 0;
        }
        // Records an `https://` upstream's rustls still holds (the request's last ones the
        // socket did not take): a failure to send them ends the request as a failed write does.
        match self.stream.flush() {
            Ok(()) => Ok(()),
            Err(e) if self.sent_any => Err(self.end_request(e)),
            Err(e) => {
                let kind = self.kind_of(&e);
                Err(self.fail(e, kind, request))
            }
        }
    }

    /// Request body bytes; returns how many were taken (`WouldBlock` while the previous chunk
    /// is not written).
    pub fn write_stdin(&mut self, data: &[u8], request: &RequestLabel) -> io::Result<usize> {
        if self.body_left == 0 {
            return Ok(0);
        }
        if !self.first {
            self.send_pending(request)?;
            if self.sent < self.out.len() {
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
        let take = data.len().min(BODY_CHUNK).min(self.body_left as usize);
        self.out.extend_from_slice(&data[..take]);
        self.body_left -= take as u64;
        self.send_pending(request)?;
        Ok(take)
    }

    /// The client's body is over: one that fell short of its length leaves the upstream
    /// waiting for the rest, so the connection is not reused.
    pub fn close_stdin(&mut self) {
        if self.body_left > 0 {
            self.body_left = 0;
            self.body_cut = true;
            self.keep_alive = false;
            self.failure.get_or_insert(Failure::Reset);
        }
    }

    pub fn has_stdin(&self) -> bool {
        self.body_left > 0 && self.failure.is_none()
    }

    /// A pass of the connection's driver is over (`Source::pass_ended`): the read
    /// `just_sent` skipped is made at the next pass.
    pub fn pass_ended(&mut self) {
        self.just_sent = false;
    }

    pub fn stdout_done(&self) -> bool {
        matches!(self.state, State::Done) && self.cgi_at == self.cgi.len()
    }

    /// The deadline for what the exchange waits for now, moved when something moved: the
    /// connection; once the request is out, the final response head, within `first_byte` of
    /// then whatever comes before it (1xx heads, sent forever, would otherwise hold the request
    /// and its slot without end); else the idle gap.
    pub fn progress(&mut self, now: Instant) {
        if !std::mem::take(&mut self.moved) {
            return;
        }
        let request_out = self.body_left == 0 && self.sent == self.out.len();
        let wait = if !self.connected {
            self.timeouts.connect
        } else if matches!(self.state, State::Head) && request_out {
            if std::mem::replace(&mut self.awaiting_head, true) {
                return;
            }
            self.timeouts.first_byte
        } else {
            self.timeouts.idle
        };
        self.deadline = now + wait;
    }

    /// Whether the exchange opened its connection (not taken from the pool) and it connected:
    /// a connection refused, or still connecting, was never one.
    pub fn opened(&self) -> bool {
        !self.reused && self.connected
    }

    /// Whether the upstream connected and nothing came back (a timeout then marks the address).
    pub fn silent(&self) -> bool {
        !self.received
    }

    /// Whether the connection failed before the upstream answered, and the request may go
    /// again, once, on a new connection: nothing of it was sent, or it is idempotent with no
    /// body (kept whole) and nothing came back. A body cut short (a write that failed after
    /// bytes were taken from the client ends it) is never sent again: `out` holds only its
    /// first part, and the rest is gone.
    pub fn may_retry(&self) -> bool {
        matches!(self.failure, Some(Failure::Refused | Failure::Reset))
            && !self.received
            && !self.retried
            && !self.body_cut
            && (!self.sent_any || self.replayable)
    }

    /// Puts the request on `stream`, a new connection to address `addr`, to be sent again
    /// from its start (by [`Exchange::send_pending`], which the caller makes next).
    pub fn retry(
        &mut self,
        mut stream: Stream,
        addr: usize,
        group: usize,
        name: Rc<str>,
        registry: &Registry,
        now: Instant,
    ) -> io::Result<()> {
        stream.register(registry, self.slot)?;
        self.stream = stream;
        self.addr = addr;
        self.group = group;
        self.name = name;
        self.retried = true;
        self.reused = false;
        self.failure = None;
        self.write_failed = false;
        self.sent = 0;
        self.connected = false;
        self.awaiting_head = false;
        self.deadline = now + self.timeouts.connect;
        Ok(())
    }

    /// The connection, if it may carry another request (the response whole and the upstream
    /// keeping it, the request all sent, nothing left over), and the buffers.
    pub fn finish(self) -> (Option<(usize, Stream)>, Buffers) {
        let clean = matches!(self.state, State::Done)
            && self.keep_alive
            && self.failure.is_none()
            && !self.overlong
            && self.in_pos == self.in_end
            && self.sent == self.out.len()
            && self.body_left == 0
            && !self.body_cut
            && !self.write_failed;
        let mut out = self.out;
        out.clear();
        let buffers = Buffers {
            out,
            input: self.input,
            head: self.head,
            cgi: self.cgi,
        };
        (clean.then_some((self.group, self.stream)), buffers)
    }

    /// A write failed once the upstream had part of the request: the request body ends (the
    /// connection is not pooled), and the response, which may already be on its way, is read
    /// on: the exchange fails only if the response does. Returns the error.
    fn end_request(&mut self, e: io::Error) -> io::Error {
        self.write_failed = true;
        self.body_cut |= self.body_left > 0;
        self.body_left = 0;
        self.keep_alive = false;
        let _ = writeln!(
            io::stderr(),
            "flint serve: proxy {}: the request's write: {e} (the response is still read)",
            self.name
        );
        e
    }

    /// The kind of a failed read or write. A TLS error is a handshake failure only while the
    /// handshake is under way (after it, a broken record is a broken connection: a reset), and
    /// an upstream closing in the handshake is one too (not retried); either way the
    /// connection did connect.
    fn kind_of(&mut self, e: &io::Error) -> Failure {
        let handshaking = matches!(&self.stream, Stream::Tls(t) if t.is_handshaking());
        if handshaking && (e.kind() == io::ErrorKind::UnexpectedEof || tls::failure(e).is_some()) {
            self.connected = true;
            return Failure::Tls;
        }
        match Failure::of(e) {
            Failure::Tls => Failure::Reset,
            kind => kind,
        }
    }

    /// Records the failure and logs why (a refused TLS handshake by its reason's name, as
    /// `flint bench` counts it, and what it means); returns the error.
    fn fail(&mut self, e: io::Error, kind: Failure, request: &RequestLabel) -> io::Error {
        if self.failure.is_none() {
            self.failure = Some(kind);
            let name = &self.name;
            let handshake = tls::failure(&e).filter(|_| kind == Failure::Tls);
            let _ = match handshake {
                Some(why) => {
                    let line = tls::log_line(name, why, &e);
                    writeln!(io::stderr(), "{line}, {request}")
                }
                None => writeln!(io::stderr(), "flint serve: proxy {name}: {e}, {request}"),
            };
        }
        e
    }
}
