//! The upstream's response read back: the TLS handshake finished first where there is one, the
//! head parsed once whole (1xx heads skipped, a 101 refused), the body decoded as the client's
//! response has room, and its end (its length, its last chunk, the close) or its overrun.
//! Apart from `exchange.rs` because it is the read side of the exchange, as the request's
//! write side is there.

use std::io::{self, Read, Write};

use wire::{BodyDecoder, Framing};

use super::{Exchange, Failure, State};
use crate::gateway::label::RequestLabel;
use crate::gateway::upstream::{read_goes_on, Stream};

impl Exchange {
    /// Reads the response into `buf`: the CGI head, then the body decoded; `Ok(0)` at its end.
    pub fn read_stdout(&mut self, buf: &mut [u8], request: &RequestLabel) -> io::Result<usize> {
        if self.failure.is_some() {
            return Err(io::Error::other("the upstream connection failed"));
        }
        if !self.handshake(request)? {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        // A write that fails here after part of the request went (`end_request`) ends the
        // request, not the read: the answer (a 413 read before the reset, its head handed out
        // by an earlier call and its body still in `input`) is read on. Returning the error
        // would end the response after its head.
        read_goes_on(self.send_pending(request), self.write_failed)?;
        if std::mem::take(&mut self.just_sent) && !self.received {
            // The request has only just left: its answer cannot be here yet, and its arrival
            // is an event of the connection (edge-triggered epoll reports every arrival), so
            // the read that would find nothing is not made.
            return Err(io::ErrorKind::WouldBlock.into());
        }
        loop {
            if self.cgi_at < self.cgi.len() {
                let n = (self.cgi.len() - self.cgi_at).min(buf.len());
                buf[..n].copy_from_slice(&self.cgi[self.cgi_at..self.cgi_at + n]);
                self.cgi_at += n;
                self.output += n as u64;
                return Ok(n);
            }
            if let State::Done = self.state {
                return Ok(0);
            }
            if self.in_pos < self.in_end {
                let n = self.decode(buf, request)?;
                if n > 0 || matches!(self.state, State::Done) {
                    self.output += n as u64;
                    return Ok(n);
                }
                continue;
            }
            self.in_pos = 0;
            self.in_end = 0;
            self.reads += 1;
            match self.stream.read(&mut self.input) {
                Ok(0) => return self.eof(request),
                Ok(n) => {
                    self.received = true;
                    self.last_full = n == self.input.len();
                    self.replayable = false;
                    self.moved = true;
                    if let State::Head = self.state {
                        self.head.extend_from_slice(&self.input[..n]);
                        self.parse_head(request)?;
                    } else {
                        self.in_end = n;
                    }
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                    ) =>
                {
                    return Err(e)
                }
                Err(e) => {
                    let kind = self.kind_of(&e);
                    return Err(self.fail(e, kind, request));
                }
            }
        }
    }

    /// An `https://` upstream's handshake moved on (a plain connection has none): whether it
    /// is done. Done before the request's write and the response's read, whichever event
    /// comes, so that the request goes out in the call that finishes it. Once it is done this
    /// sends nothing: records left over are `send_pending`'s, whose failure ends the request
    /// and leaves the answer already in the socket to be read.
    fn handshake(&mut self, request: &RequestLabel) -> io::Result<bool> {
        let Stream::Tls(tls) = &mut self.stream else {
            return Ok(true);
        };
        if !tls.is_handshaking() {
            return Ok(true);
        }
        match tls.handshake() {
            Ok(done) => Ok(done),
            Err(e) => {
                let kind = self.kind_of(&e);
                Err(self.fail(e, kind, request))
            }
        }
    }

    /// The head gathered so far: skips 1xx heads; once the final head is whole, its CGI head
    /// is made and the bytes after it go to the body. The skipped heads count against
    /// `max_head` with the final one: an upstream that floods 1xx heads keeps the socket
    /// readable, so the read loop would never come back to the deadline. They are passed by
    /// an offset and drained once, not moved down one by one.
    fn parse_head(&mut self, request: &RequestLabel) -> io::Result<()> {
        let mut at = 0;
        let result = loop {
            let parsed = match wire::parse_response_head(&self.head[at..], self.is_head) {
                Ok(Some(h)) => h,
                Ok(None) if self.skipped + self.head.len() - at > self.max_head => {
                    break Err(io::Error::other("response head over max_header_bytes"));
                }
                Ok(None) => break Ok(()),
                Err(e) => break Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            };
            if self.skipped + parsed.head_len > self.max_head {
                break Err(io::Error::other("response head over max_header_bytes"));
            }
            if parsed.status == 101 {
                let e = "101 Switching Protocols: upgrades are not proxied";
                break Err(io::Error::other(e));
            }
            if (100..200).contains(&parsed.status) {
                at += parsed.head_len;
                self.skipped += parsed.head_len;
                continue;
            }
            crate::gateway::proxy::response::cgi_head(
                &self.head[at..at + parsed.head_len],
                parsed.status,
                &mut self.cgi,
            );
            self.keep_alive = parsed.keep_alive;
            let rest = &self.head[at + parsed.head_len..];
            // The rest came in the last read, which filled at most the input buffer.
            self.input[..rest.len()].copy_from_slice(rest);
            self.in_pos = 0;
            self.in_end = rest.len();
            self.head.clear();
            self.state = match parsed.framing {
                Framing::Empty | Framing::Length(0) => State::Done,
                framing => State::Body(BodyDecoder::new(framing)),
            };
            if let State::Done = self.state {
                self.ended();
            }
            return Ok(());
        };
        match result {
            Ok(()) => {
                self.head.drain(..at);
                Ok(())
            }
            Err(e) => Err(self.fail(e, Failure::BadResponse, request)),
        }
    }

    /// Body bytes of the input decoded into `buf`; how many.
    fn decode(&mut self, buf: &mut [u8], request: &RequestLabel) -> io::Result<usize> {
        let State::Body(decoder) = &mut self.state else {
            return Ok(0);
        };
        let end = self.in_end.min(self.in_pos + buf.len());
        let mut n = 0;
        let fed = decoder.feed_payload(&self.input[self.in_pos..end], |p| {
            buf[n..n + p.len()].copy_from_slice(p);
            n += p.len();
        });
        match fed {
            Ok(progress) => {
                self.in_pos += progress.consumed;
                if progress.done {
                    self.state = State::Done;
                    self.ended();
                }
                Ok(n)
            }
            Err(e) => {
                let e = io::Error::new(io::ErrorKind::InvalidData, e);
                Err(self.fail(e, Failure::BadResponse, request))
            }
        }
    }

    /// The upstream closed: the end of a close-delimited body (over TLS, with close_notify),
    /// else a failure.
    fn eof(&mut self, request: &RequestLabel) -> io::Result<usize> {
        self.keep_alive = false;
        // Over TLS, a close with no close_notify may be an attacker's: a body that runs to the
        // close is then not known whole (one with a length or chunks has its own check).
        let cut = matches!(&self.stream, Stream::Tls(t) if t.cut());
        let short = match &self.state {
            State::Body(d) => d.eof().is_err() || cut,
            State::Head => true,
            State::Done => false,
        };
        if short {
            let e = io::Error::new(
                io::ErrorKind::UnexpectedEof,
                match self.state {
                    State::Head => "the upstream closed the connection before its response head",
                    _ => "the upstream closed the connection before the end of the body",
                },
            );
            return Err(self.fail(e, Failure::Reset, request));
        }
        self.state = State::Done;
        Ok(0)
    }

    /// The response ended: bytes after it, in the input or still in the socket, belong to no
    /// request. The socket is looked at (one peek) only when the last read filled the input:
    /// what stayed behind then has had its edge-triggered event already, and a pooled
    /// connection holding it would hand it to the next request as its response.
    fn ended(&mut self) {
        if self.in_pos < self.in_end {
            return self.overlong();
        }
        if self.last_full && self.keep_alive {
            self.reads += 1;
            match self.stream.peek_byte() {
                Ok(0) => self.keep_alive = false,
                Ok(_) => self.overlong(),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => self.keep_alive = false,
            }
        }
    }

    /// Bytes past the body's end: the response is whole, the rest is dropped with the
    /// connection (never read as another response).
    fn overlong(&mut self) {
        self.overlong = true;
        self.keep_alive = false;
        self.in_pos = self.in_end;
        let _ = writeln!(
            io::stderr(),
            "flint serve: proxy {}: more bytes than the response's length (the connection is closed)",
            self.name
        );
    }
}
