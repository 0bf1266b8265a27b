//! HTTP/1.1 on one connection, apart from its I/O: bytes in, response segments out.
//!
//! A [`Session`] is given the plaintext bytes its driver received (into the input buffer it
//! lends), answers every complete request through the thread's [`Responder`], queues each
//! response as segments (heads and small bodies copied into one buffer, cached bodies shared,
//! file ranges) and decides what follows: keep the connection, close it after the queue is
//! written, or close it lingering because the client may still be sending. A request body (a
//! static server has no use for one) is read and dropped within a limit (`protocol/body.rs`), so
//! the requests pipelined after it are answered on the same connection. It makes no system
//! call, so it is tested with byte slices in and segments out (as hyper's h1 keeps its protocol
//! state apart from its I/O); the drivers (plain TCP, TLS) move the bytes and share it unchanged.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use wire::{Method, RequestLimits};

use crate::access_log::{AccessLog, Entry};
use crate::pool::{Bufs, Pool, Seg};
use crate::respond::{Body, Reply, Responder};
use crate::stats::ServerStats;
use body::Drain;

/// The timeouts the driver loop applies, by what a connection waits for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// A request head (and, over TLS, the handshake before it) is due.
    pub header: Duration,
    /// Between requests.
    pub keepalive: Duration,
    /// Output queued that the client is not taking, since the last progress.
    pub send: Duration,
}

/// What answering needs besides the connection: everything one event-loop thread owns, nothing
/// shared with another thread.
pub(crate) struct Worker {
    pub responder: Responder,
    pub log: Option<AccessLog>,
    pub stats: ServerStats,
    pub limits: RequestLimits,
    /// The clocks and the Date value, read once per wakeup: a batch shares them.
    pub now: Instant,
    pub wall: SystemTime,
    pub date: [u8; wire::date::HTTP_DATE_LEN],
    /// Parsing pauses once this many bytes are queued.
    pub max_pipeline: u64,
    /// A request body is read and dropped up to this many bytes; above it the request gets 413
    /// (or, once answered, the connection is closed).
    pub max_body: u64,
    pub timeouts: Timeouts,
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// Input and output, held only while there is something in them (see [`crate::pool`]).
    pub bufs: Option<Bufs>,
    /// Unsent bytes in the output queue.
    pub queued: u64,
    /// Close once the queued output is written (no more requests are parsed).
    pub close_after: bool,
    /// The close must be a lingering one: the client may still be sending (an error response).
    pub linger: bool,
    /// At least one request has been answered.
    pub served: bool,
    /// When the current request head started (accept for the first one); while a body is read,
    /// when its latest bytes arrived into an empty buffer.
    pub head_since: Instant,
    /// The body of the last answered request, still being read and dropped.
    body: Option<Drain>,
}

impl Session {
    pub fn new(peer: SocketAddr, now: Instant) -> Session {
        Session {
            peer,
            bufs: None,
            queued: 0,
            close_after: false,
            linger: false,
            served: false,
            head_since: now,
            body: None,
        }
    }

    /// Whether more input is wanted: requests are still parsed and the input buffer has room.
    pub fn wants_input(&self) -> bool {
        !self.close_after && self.bufs.as_ref().is_none_or(|b| b.in_len < b.input.len())
    }

    /// The free part of the input buffer, for the driver to receive into (then [`received`]).
    ///
    /// [`received`]: Session::received
    pub fn input_space(&mut self, pool: &mut Pool) -> &mut [u8] {
        let b = self.bufs.get_or_insert_with(|| pool.take());
        &mut b.input[b.in_len..]
    }

    /// `n` bytes were received into [`Session::input_space`].
    pub fn received(&mut self, n: usize, now: Instant) {
        let Some(b) = self.bufs.as_mut() else { return };
        // The header timeout runs from a head's first byte (from accept for the first request:
        // a connect-and-wait client is a slowloris too).
        if b.in_len == 0 && self.served {
            self.head_since = now;
        }
        b.in_len += n;
    }

    /// Bytes of a request head are waiting (a partial one once everything is answered).
    pub fn has_input(&self) -> bool {
        self.bufs.as_ref().is_some_and(|b| b.in_len > 0)
    }

    /// A request's body is still being read (the header timeout applies, from its latest bytes).
    pub fn reading_body(&self) -> bool {
        self.body.is_some()
    }

    /// Plain HTTP arrived on a TLS port: the transport received its first `n` bytes into
    /// [`Session::input_space`] without handing them over as plaintext. Queues the 400 that says
    /// so (the transport sends it unencrypted) and closes, lingering: the client may still be
    /// sending.
    pub fn refuse_plain_http(&mut self, n: usize, w: &mut Worker) {
        let Some(b) = self.bufs.as_mut() else { return };
        let start = b.out.len();
        let reply = w.responder.plain_http_on_tls(&w.date, &mut b.out);
        if let Some(log) = w.log.as_mut() {
            let e = Entry {
                peer: self.peer.ip(),
                request_line: first_line(&b.input[..n.min(b.input.len())]),
                status: reply.status,
                body_bytes: reply.body_bytes,
                referer: None,
                user_agent: None,
            };
            log.record(&e, w.wall);
        }
        w.stats.tls_plain_http += 1;
        count_status(&mut w.stats, &reply);
        self.served = true;
        self.queued += (b.out.len() - start) as u64;
        b.push_mem(start);
        self.close_after = true;
        self.linger = true;
    }

    /// Gives the buffers back once both are empty: an idle connection holds none.
    pub fn release_idle(&mut self, pool: &mut Pool) {
        if let Some(b) = self.bufs.take_if(|b| b.idle()) {
            pool.give(b);
        }
    }

    /// Answers every complete request in the input buffer while the output queue is under
    /// `max_pipeline`, then compacts the buffer. Returns true if it stopped at that limit with
    /// input left (the driver resumes once the queue is written).
    pub fn answer(&mut self, w: &mut Worker) -> bool {
        let Some(b) = self.bufs.as_mut() else {
            return false;
        };
        let mut pos = 0;
        let mut limited = false;
        while pos < b.in_len && !self.close_after {
            if let Some(drain) = self.body.as_mut() {
                // The rest of the last request's body: read and dropped.
                match drain.feed(&b.input[pos..b.in_len]) {
                    Ok(fed) => {
                        pos += fed.used;
                        if !fed.done {
                            break; // all of the input was body
                        }
                        self.body = None;
                        continue;
                    }
                    Err(_) => {
                        // Its response is out already: nothing to say but the close, which
                        // lingers since the client is still sending.
                        pos = b.in_len;
                        self.close_after = true;
                        self.linger = true;
                        break;
                    }
                }
            }
            // Paused only with something queued: with nothing to wait for, a pause would spin.
            if self.queued > 0 && self.queued >= w.max_pipeline {
                limited = true;
                break;
            }
            let buf = &b.input[pos..b.in_len];
            let start = b.out.len();
            let mut used;
            let mut is_head = false;
            let (reply, referer, user_agent) = match wire::parse_request(buf, &w.limits) {
                Ok(None) => break,
                Ok(Some(req)) => {
                    used = req.head_len;
                    is_head = req.method == Method::Head;
                    // The body's bytes already here are read before answering, so a malformed
                    // or oversized one found now gets its 400 or 413 instead of the response.
                    let body = Drain::of(&req, w.max_body).and_then(|d| match d {
                        None => Ok(None),
                        Some(mut d) => d.feed(&buf[used..]).map(|fed| {
                            used += fed.used;
                            (!fed.done).then_some(d)
                        }),
                    });
                    let reply = match body {
                        Err(e) => {
                            used = buf.len();
                            self.linger = true;
                            w.responder.error(e.status(), &w.date, true, &mut b.out)
                        }
                        Ok(rest) => {
                            if rest.is_some()
                                && req.keep_alive
                                && req.expect_continue
                                && req.version == wire::Version::Http11
                            {
                                // The client waits for this before sending the body it will
                                // then send (and which is dropped), as nginx does.
                                b.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                            }
                            self.body = rest;
                            w.responder.respond(&req, &w.date, w.now, &mut b.out)
                        }
                    };
                    (reply, req.referer, req.user_agent)
                }
                Err(e) => {
                    used = buf.len();
                    self.linger = true;
                    let reply = w.responder.error(e.status(), &w.date, true, &mut b.out);
                    (reply, None, None)
                }
            };
            if let Some(log) = w.log.as_mut() {
                let e = Entry {
                    peer: self.peer.ip(),
                    request_line: first_line(buf),
                    status: reply.status,
                    body_bytes: reply.body_bytes,
                    referer,
                    user_agent,
                };
                log.record(&e, w.wall);
            }
            pos += used;
            self.served = true;
            count_status(&mut w.stats, &reply);
            self.queued += (b.out.len() - start) as u64;
            b.push_mem(start);
            match reply.body {
                _ if is_head => {} // never a body after a HEAD's head, whatever the responder said
                Body::None => {}
                Body::Shared { data, start, len } if len > 0 => {
                    self.queued += len as u64;
                    b.segs.push_back(Seg::Shared { data, start, len });
                }
                Body::File { file, offset, len } if len > 0 => {
                    self.queued += len;
                    b.segs.push_back(Seg::File { file, offset, len });
                }
                Body::Shared { .. } | Body::File { .. } => {}
            }
            if reply.close {
                self.close_after = true;
                // A body still coming is not read after a closing response: the close lingers.
                self.linger |= self.body.take().is_some();
            }
        }
        if pos > 0 {
            b.input.copy_within(pos..b.in_len, 0);
            b.in_len -= pos;
            if b.in_len > 0 {
                self.head_since = w.now;
            }
        }
        limited
    }
}

fn count_status(st: &mut ServerStats, reply: &Reply) {
    st.requests += 1;
    match reply.status / 100 {
        1 => st.status_1xx += 1,
        2 => st.status_2xx += 1,
        3 => st.status_3xx += 1,
        4 => st.status_4xx += 1,
        _ => st.status_5xx += 1,
    }
}

/// The request line as received (for the log), without leading empty lines or the CRLF.
fn first_line(buf: &[u8]) -> &[u8] {
    let start = buf
        .iter()
        .position(|&c| c != b'\r' && c != b'\n')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
    let line = &rest[..end];
    line.strip_suffix(b"\r").unwrap_or(line)
}

mod body;

#[cfg(test)]
#[path = "protocol/tests.rs"]
mod tests;
