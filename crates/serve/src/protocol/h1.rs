//! HTTP/1.1 on one connection: parse (`wire`), answer every complete request through the
//! thread's [`Responder`](crate::respond::Responder), queue each response as segments and
//! decide what follows: keep the connection, close it after the queue is written, or close it
//! lingering because the client may still be sending. A request body (a static server has no use
//! for one) is read and dropped within a limit (`body.rs`), so the requests pipelined after it
//! are answered on the same connection. No system call here (as hyper's h1 keeps its protocol
//! state apart from its I/O).
//!
//! The access log's `%b` is the body bytes the kernel accepted (over TLS: sealed into records,
//! at most one round ahead of it): a response whose body is over
//! [`HOLD_BODY_BYTES`] holds its line (`held_log.rs`) with where its body ends in the
//! connection's output (pipelined responses queue one after another), and is logged once the
//! connection's writes pass that point, or when the connection goes, with what was written of
//! its body by then.

use std::collections::VecDeque;

use wire::{Method, Request};

use super::body::Drain;
use super::held_log::{HeldLog, HOLD_BODY_BYTES};
use super::{count_status, finish, Session, Worker};
use crate::access_log::Entry;
use crate::auth::Verdict;
use crate::gateway::{asked, cgi, Route};
use crate::pool::Seg;
use crate::respond::Body;

pub(crate) mod gateway;

/// What HTTP/1.1 keeps between reads beyond the session's buffers.
#[derive(Debug, Default)]
pub(super) struct H1 {
    /// The body of the last answered request, still being read and dropped.
    body: Option<Drain>,
    /// The request a program is answering (nothing else is parsed meanwhile).
    gateway: Option<Box<gateway::Exchange>>,
    /// Responses whose log line waits for their body to be written, in response order.
    held: VecDeque<Held>,
}

/// A response's log line held until its body is written (or the connection goes).
#[derive(Debug)]
struct Held {
    log: HeldLog,
    /// Where its body starts and ends in the connection's output (`Session::written` counts
    /// it). A program's body (`h1/gateway.rs`) spans its chunks' framing too.
    start: u64,
    end: u64,
}

impl Held {
    /// Its body bytes among the first `written` of the connection's output.
    fn sent(&self, written: u64) -> u64 {
        written
            .saturating_sub(self.start)
            .min(self.log.body_bytes())
    }
}

impl H1 {
    pub fn holds_logs(&self) -> bool {
        !self.held.is_empty()
    }

    /// Holds the line of a response whose body spans `start..end` of the connection's output,
    /// and counts its status. Apart, and cold: the small responses' path does not carry it.
    #[cold]
    #[inline(never)]
    fn hold_at(&mut self, entry: &Entry<'_>, start: u64, end: u64, w: &mut Worker) {
        count_status(&mut w.stats, entry.status);
        let log = w.held_logs.hold(entry);
        self.held.push_back(Held { log, start, end });
    }

    /// Logs the held responses whose body ends within the first `written` bytes of output.
    #[inline(never)]
    pub fn settle_held(&mut self, written: u64, w: &mut Worker) {
        while let Some(h) = self.held.pop_front_if(|h| h.end <= written) {
            let sent = h.sent(written);
            w.held_done(h.log, sent);
        }
    }

    /// The connection is gone: every held response is logged with what was written of it.
    pub fn log_held(&mut self, written: u64, w: &mut Worker) {
        while let Some(h) = self.held.pop_front() {
            let sent = h.sent(written);
            w.held_done(h.log, sent);
        }
    }

    pub fn reading_body(&self) -> bool {
        self.body.is_some()
    }

    /// The body being read: dropped after its response, or kept for a program that waits
    /// for it.
    pub fn body(&mut self) -> Option<&mut Drain> {
        match self.body.as_mut() {
            Some(d) => Some(d),
            None => self.gateway.as_deref_mut()?.collecting(),
        }
    }
}

/// Plain HTTP arrived on a TLS port (see [`Session::refuse_plain_http`]): the 400 that says so,
/// answered as HTTP/1.1, then a lingering close.
pub(super) fn refuse_plain_http(s: &mut Session, n: usize, w: &mut Worker) {
    let Some(b) = s.bufs.as_mut() else { return };
    let start = b.out.len();
    let reply = w.responder.plain_http_on_tls(&w.date, &mut b.out);
    w.stats.tls_plain_http += 1;
    finish(w, reply.status, || Entry {
        peer: s.peer.ip(),
        request_line: first_line(&b.input[..n.min(b.input.len())]),
        status: reply.status,
        body_bytes: reply.body_bytes,
        referer: None,
        user_agent: None,
        user: None,
    });
    s.served = true;
    s.queued += (b.out.len() - start) as u64;
    b.push_mem(start);
    s.close_after = true;
    s.linger = true;
}

/// Answers every complete request in the input buffer while the output queue is under
/// `max_pipeline`, then compacts the buffer (see [`Session::answer`]).
pub(super) fn answer(s: &mut Session, w: &mut Worker) -> bool {
    let super::Proto::H1(h) = &mut s.proto else {
        return false;
    };
    let Some(b) = s.bufs.as_mut() else {
        return false;
    };
    if h.gateway.is_some() {
        // The input is the program's body, or the next request, which waits.
        gateway::collect_body(s, w);
        return false;
    }
    let mut pos = 0;
    let mut limited = false;
    while pos < b.in_len && !s.close_after && h.gateway.is_none() {
        if let Some(drain) = h.body.as_mut() {
            // The rest of the last request's body: read and dropped.
            match drain.feed(&b.input[pos..b.in_len], w.now) {
                Ok(fed) => {
                    pos += fed.used;
                    if !fed.done {
                        break; // all of the input was body
                    }
                    h.body = None;
                    continue;
                }
                Err(_) => {
                    // Its response is out already: nothing to say but the close, which
                    // lingers since the client is still sending.
                    pos = b.in_len;
                    s.close_after = true;
                    s.linger = true;
                    break;
                }
            }
        }
        // Paused only with something queued: with nothing to wait for, a pause would spin.
        if s.queued > 0 && s.queued >= w.max_pipeline {
            limited = true;
            break;
        }
        let buf = &b.input[pos..b.in_len];
        let start = b.out.len();
        let mut used;
        let mut is_head = false;
        let (reply, referer, user_agent, user) = match wire::parse_request(buf, &w.limits) {
            Ok(None) => break,
            Ok(Some(req)) => {
                used = req.head_len;
                is_head = req.method == Method::Head;
                // Only when a prefix is protected: before files or programs.
                let verdict = match w.auth.as_mut() {
                    Some(a) => a.check(&req, s.peer.ip(), w.now, &mut w.stats),
                    None => Verdict::Open,
                };
                // Only when a gateway is configured: the static path checks nothing more.
                let routed = match (&verdict, w.gateways.as_mut()) {
                    (Verdict::Denied(_), _) | (_, None) => None,
                    (_, Some(g)) => g.route(req.target, w.now),
                };
                let refused = match routed {
                    Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                        let user = verdict.user();
                        match start_gateway(&req, buf, &route, s.peer, user, w) {
                            Ok((mut x, launch)) => {
                                let body_coming =
                                    req.chunked || req.content_length.is_some_and(|n| n > 0);
                                let continues = req.expect_continue && body_coming;
                                match Drain::of(&req, w.max_body, w.now) {
                                    // Its program starts once the body is read (`gateway.rs`).
                                    Ok(Some(d)) if req.chunked => x.collect(d, launch),
                                    _ => s.launches.push((0, launch)),
                                }
                                if continues {
                                    b.out.extend_from_slice(b"HTTP/1.1 100 Continue\r\n\r\n");
                                    s.queued += (b.out.len() - start) as u64;
                                    b.push_mem(start);
                                }
                                h.gateway = Some(x);
                                pos += used;
                                break;
                            }
                            Err(status) => Some(status),
                        }
                    }
                    Some(Route::Refused(status)) => Some(status),
                    None => None,
                };
                // The body's bytes already here are read before answering, so a malformed
                // or oversized one found now gets its 400 or 413 instead of the response.
                let body = Drain::of(&req, w.max_body, w.now).and_then(|d| match d {
                    None => Ok(None),
                    Some(mut d) => d.feed(&buf[used..], w.now).map(|fed| {
                        used += fed.used;
                        (!fed.done).then_some(d)
                    }),
                });
                let reply = match body {
                    Err(e) => {
                        used = buf.len();
                        s.linger = true;
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
                        h.body = rest;
                        match (&verdict, refused) {
                            (Verdict::Denied(d), _) => {
                                d.count(req.authorization.is_some(), &mut w.stats);
                                w.responder.denied(&req, d, &w.date, &mut b.out)
                            }
                            (_, Some(503)) => w.responder.busy(&req, &w.date, &mut b.out),
                            (_, Some(status)) => {
                                w.responder.error_to(&req, status, &w.date, &mut b.out)
                            }
                            (_, None) => w.responder.respond(&req, &w.date, w.now, &mut b.out),
                        }
                    }
                };
                let user = match verdict {
                    Verdict::Allowed(user) => Some(user),
                    _ => None,
                };
                (reply, req.referer, req.user_agent, user)
            }
            Err(e) => {
                used = buf.len();
                s.linger = true;
                let reply = w.responder.error(e.status(), &w.date, true, &mut b.out);
                (reply, None, None, None)
            }
        };
        let entry = || Entry {
            peer: s.peer.ip(),
            request_line: first_line(buf),
            status: reply.status,
            body_bytes: reply.body_bytes,
            referer,
            user_agent,
            user: user.as_deref(),
        };
        if should_hold(is_head, reply.body_bytes, w) {
            // The body is the last of the queue (in `out` or after it).
            let out = (b.out.len() - start) as u64;
            let end = s.written + s.queued + out + reply.body.bytes();
            h.hold_at(&entry(), end.saturating_sub(reply.body_bytes), end, w);
        } else {
            finish(w, reply.status, entry);
        }
        pos += used;
        s.served = true;
        s.queued += (b.out.len() - start) as u64;
        b.push_mem(start);
        // Never a body after a HEAD's head, whatever the responder said.
        if !is_head {
            s.queued += queue_body(reply.body, &mut b.segs);
        }
        if reply.close {
            s.close_after = true;
            // A body still coming is not read after a closing response: the close lingers.
            s.linger |= h.body.take().is_some();
        }
    }
    if pos > 0 {
        b.input.copy_within(pos..b.in_len, 0);
        b.in_len -= pos;
        if b.in_len > 0 {
            s.head_since = w.now;
        }
    }
    // A chunked body that came with its head, for a program waiting for it.
    gateway::collect_body(s, w);
    limited
}

/// Whether a response's line waits for its body to be written (its status is counted at
/// once, as every response's is): a body over [`HOLD_BODY_BYTES`] may not be taken whole in
/// this turn, and the thread's held records are within their budget. A static response's
/// (`answer`) and a program's (`h1/gateway.rs`) alike.
fn should_hold(is_head: bool, body_bytes: u64, w: &Worker) -> bool {
    w.log.is_some() && !is_head && body_bytes > HOLD_BODY_BYTES && w.held_logs.has_room()
}

/// Queues a reply's body (shared cached bytes, a file range); returns its bytes.
fn queue_body(body: Body, segs: &mut VecDeque<Seg>) -> u64 {
    match body {
        Body::Shared { data, start, len } if len > 0 => {
            segs.push_back(Seg::Shared { data, start, len });
            len as u64
        }
        Body::File { file, offset, len } if len > 0 => {
            segs.push_back(Seg::File { file, offset, len });
            len
        }
        Body::None | Body::Shared { .. } | Body::File { .. } => 0,
    }
}

/// A request a program answers: its launch and the exchange that follows it, or the status
/// that refuses it: 413 for a body over `max_body_bytes`, 503 at `cgi_max_programs` (a proxy
/// mount's `max_in_flight`). A chunked body is read before its program starts (`gateway.rs`):
/// its reservation waits too.
fn start_gateway(
    req: &Request<'_>,
    buf: &[u8],
    route: &Route,
    peer: std::net::SocketAddr,
    user: Option<&[u8]>,
    w: &mut Worker,
) -> Result<(Box<gateway::Exchange>, crate::gateway::Launch), u16> {
    let Some(g) = w.gateways.as_mut() else {
        return Err(500);
    };
    match route {
        Route::Cgi(script) => w.stats.count_gateway_request(script.app.is_some()),
        _ => w.stats.proxy_requests += 1,
    }
    if !req.chunked && req.content_length.is_some_and(|n| n > w.max_body) {
        return Err(413);
    }
    if !req.chunked && !g.reserve_for(route.proxy_mount()) {
        w.stats.count_busy(route.proxy_mount());
        return Err(503);
    }
    let head = &buf[..req.head_len];
    // The fields are read as they are needed, from the head, with no list made of them.
    let mut launch = g.launch(route, req, asked::asked_h1(req, head), peer);
    if let Some(user) = user {
        cgi::set_user(&mut launch, user);
    }
    let max_head = w.limits.max_head_bytes;
    let proxied = matches!(route, Route::Proxy(_));
    let logged = w.log.is_some();
    let x = gateway::Exchange::new(req, first_line(head), user, max_head, proxied, logged);
    Ok((Box::new(x), launch))
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
