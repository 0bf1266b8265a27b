//! HTTP/1.1's side of a request a program answers (`crate::gateway`): the request body handed
//! to the connection for the program's stdin as it arrives, the program's output encoded as it
//! is read (its head checked first: `gateway/head.rs`; then `Content-Length` if the program
//! gave one, else chunked, else for an HTTP/1.0 client delimited by the close), and the one
//! log line and count when it ends (a large body's line held until it is written, as a file's
//! is: `h1.rs`; its `%b` counted from where the body starts in the connection's output). No
//! other request on the connection is parsed meanwhile (responses leave in order).
//!
//! A chunked request body is read whole before the program starts, decoded (`body.rs`, within
//! `max_body_bytes`), as nginx buffers one: a program is told its body's length up front
//! (`CONTENT_LENGTH`, RFC 3875 4.1.2), and CGI programs and FastCGI applications (php-fpm)
//! rely on it to read their body.

use std::io::Write;

use wire::{Method, Request, Version};

use super::super::body::Drain;
use super::super::gateway::{answer_redirect, End, Record, OUTPUT_WINDOW};
use super::super::{Proto, Session, Worker};
use super::should_hold;
use crate::gateway::head::{CgiHead, HeadError, HeadReader, Location};
use crate::gateway::Launch;
use crate::pool::Pool;
use crate::respond::Body;

#[derive(Debug)]
enum Out {
    /// The head is being read.
    Head,
    /// The body: chunked, or `left` bytes of a `Content-Length` (`None`: until the close).
    Body { chunked: bool, left: Option<u64> },
    /// The response is whole (a local redirect answered, a `Content-Length` reached): the
    /// program's output is read and dropped until it ends.
    Discard,
}

/// A request a program answers on an HTTP/1.1 connection.
#[derive(Debug)]
pub(in crate::protocol) struct Exchange {
    /// Request body bytes still to come from the client (`Content-Length` framing).
    body_left: u64,
    /// A chunked body being read before its program starts: its decoder and the launch that
    /// waits for its length.
    collect: Option<Box<(Drain, Launch)>>,
    /// A chunked body, decoded: `kept[given..]` is still to be handed to the program.
    kept: Vec<u8>,
    given: usize,
    version: Version,
    is_head: bool,
    /// Close after this response (asked for, or the response is delimited by the close).
    close: bool,
    out: Out,
    head: HeadReader,
    /// Where the response's body starts in the connection's output (`Session::written` counts
    /// it): the access log's `%b` is what was written of it.
    body_start: u64,
    /// The access-log line's and the status count's part.
    rec: Record,
}

impl Exchange {
    pub fn new(
        req: &Request<'_>,
        request_line: &[u8],
        user: Option<&[u8]>,
        max_head: usize,
        proxied: bool,
        logged: bool,
    ) -> Exchange {
        Exchange {
            body_left: if req.chunked {
                0
            } else {
                req.content_length.unwrap_or(0)
            },
            collect: None,
            kept: Vec::new(),
            given: 0,
            version: req.version,
            is_head: req.method == Method::Head,
            close: !req.keep_alive,
            out: Out::Head,
            // A proxied response's `Location` is the upstream's to give, not a local redirect.
            head: HeadReader::new(max_head, !proxied),
            body_start: 0,
            rec: if logged {
                Record::new(req, request_line.to_vec(), user)
            } else {
                Record::counted_only()
            },
        }
    }
}

impl Exchange {
    /// Reads the (chunked) body `body` decodes before `launch` starts.
    pub fn collect(&mut self, body: Drain, launch: Launch) {
        self.collect = Some(Box::new((body, launch)));
    }

    /// The chunked body being read before the program starts.
    pub fn collecting(&mut self) -> Option<&mut Drain> {
        self.collect.as_mut().map(|c| &mut c.0)
    }
}

/// Reads the chunked body of a request whose program waits for it, from the input buffer:
/// decoded and kept until its end, then the program is started with its length. A malformed
/// body gets 400, one over `max_body_bytes` 413 (then the connection closes, lingering: the
/// client may still be sending), and no program starts; nor at `cgi_max_programs` (503, the
/// connection kept: the body was read whole).
pub(in crate::protocol) fn collect_body(s: &mut Session, w: &mut Worker) {
    let Proto::H1(h) = &mut s.proto else {
        return;
    };
    let (Some(x), Some(b)) = (h.gateway.as_deref_mut(), s.bufs.as_mut()) else {
        return;
    };
    let Some(c) = x.collect.as_mut() else {
        return;
    };
    let fed = c.0.feed_into(&b.input[..b.in_len], w.now, &mut x.kept);
    let refused = match fed {
        Ok(fed) => {
            b.input.copy_within(fed.used..b.in_len, 0);
            b.in_len -= fed.used;
            if !fed.done {
                return;
            }
            let Some(c) = x.collect.take() else { return };
            let (_, mut launch) = *c;
            let proxy_mount = launch.proxy.as_ref().map(|f| f.mount);
            match w.gateways.as_ref() {
                Some(g) if g.reserve_for(proxy_mount) => {
                    crate::gateway::cgi::set_length(&mut launch, x.kept.len() as u64);
                    s.launches.push((0, launch));
                    return;
                }
                _ => {
                    w.stats.count_busy(proxy_mount);
                    x.kept = Vec::new();
                    503
                }
            }
        }
        Err(e) => {
            b.in_len = 0;
            x.close = true;
            s.linger = true;
            e.status()
        }
    };
    let start = b.out.len();
    let reply = match refused {
        503 => (w.responder).busy_after_body(x.close, x.is_head, &w.date, &mut b.out),
        status => w.responder.error(status, &w.date, x.close, &mut b.out),
    };
    x.rec.status = reply.status;
    x.rec.body_bytes = reply.body_bytes;
    s.queued += (b.out.len() - start) as u64;
    b.push_mem(start);
    x.rec.finish(s.peer.ip(), w);
    s.served = true;
    s.close_after |= x.close;
    h.gateway = None;
}

fn exchange(s: &Session) -> Option<&Exchange> {
    match &s.proto {
        Proto::H1(h) => h.gateway.as_deref(),
        _ => None,
    }
}

fn exchange_mut(proto: &mut Proto) -> Option<&mut Exchange> {
    match proto {
        Proto::H1(h) => h.gateway.as_deref_mut(),
        _ => None,
    }
}

impl Session {
    /// A program is answering this connection's current request.
    pub(in crate::protocol) fn h1_gateway_active(&self) -> bool {
        exchange(self).is_some()
    }

    /// Request body bytes received and not yet handed to the program.
    pub(in crate::protocol) fn h1_gateway_body(&self) -> &[u8] {
        match (exchange(self), self.bufs.as_ref()) {
            (Some(x), _) if !x.kept.is_empty() => &x.kept[x.given..],
            (Some(x), Some(b)) => &b.input[..b.in_len.min(x.body_left as usize)],
            _ => &[],
        }
    }

    /// The whole request body has been handed over.
    pub(in crate::protocol) fn h1_gateway_body_done(&self) -> bool {
        exchange(self).is_none_or(|x| x.body_left == 0 && x.given == x.kept.len())
    }

    /// `n` bytes of [`Session::gateway_body`] were taken (written to the program, or dropped).
    pub(in crate::protocol) fn h1_gateway_body_taken(&mut self, n: usize) {
        let Some(x) = exchange_mut(&mut self.proto) else {
            return;
        };
        if !x.kept.is_empty() {
            x.given += n;
            if x.given == x.kept.len() {
                x.kept = Vec::new();
                x.given = 0;
            }
            return;
        }
        let Some(b) = self.bufs.as_mut() else {
            return;
        };
        b.input.copy_within(n..b.in_len, 0);
        b.in_len -= n;
        x.body_left -= n as u64;
    }

    /// Whether to read the program's output now: while its head is read, or its body has room
    /// in the output queue (or is being dropped).
    pub(in crate::protocol) fn h1_gateway_wants_output(&self) -> bool {
        match exchange(self) {
            Some(x) => matches!(x.out, Out::Discard) || self.queued < OUTPUT_WINDOW,
            None => false,
        }
    }

    /// Bytes the program wrote to stdout: its head checked and encoded, then its body framed.
    pub(in crate::protocol) fn h1_gateway_output(
        &mut self,
        data: &[u8],
        w: &mut Worker,
        pool: &mut Pool,
    ) -> Result<(), HeadError> {
        let Some(x) = exchange_mut(&mut self.proto) else {
            return Ok(());
        };
        if !matches!(x.out, Out::Head) {
            let b = self.bufs.get_or_insert_with(|| pool.take());
            let start = b.out.len();
            push_body(x, data, &mut b.out);
            self.queued += (b.out.len() - start) as u64;
            b.push_mem(start);
            return Ok(());
        }
        let Some((parsed, rest)) = x.head.feed(data)? else {
            return Ok(());
        };
        let b = self.bufs.get_or_insert_with(|| pool.take());
        let start = b.out.len();
        let body = match &parsed.location {
            Some(Location::Local(path)) => local_redirect(x, path, w, &mut b.out),
            _ => {
                push_head(x, &parsed, w, &mut b.out);
                let head = (b.out.len() - start) as u64;
                x.body_start = self.written + self.queued + head;
                push_body(x, &rest, &mut b.out);
                Body::None
            }
        };
        self.queued += (b.out.len() - start) as u64;
        b.push_mem(start);
        self.queued += super::queue_body(body, &mut b.segs);
        if matches!(parsed.location, Some(Location::Local(_))) {
            // The answer's body is the last of the queue.
            x.body_start = (self.written + self.queued).saturating_sub(x.rec.body_bytes);
        }
        Ok(())
    }

    /// The program's part is over: the response is finished (the last chunk), or closed
    /// short, or (nothing of it sent yet) replaced by an error page; then logged and counted,
    /// and the connection goes on to its next request.
    pub(in crate::protocol) fn h1_gateway_end(
        &mut self,
        end: End,
        w: &mut Worker,
        pool: &mut Pool,
    ) {
        let Proto::H1(h) = &mut self.proto else {
            return;
        };
        let Some(mut x) = h.gateway.take() else {
            return;
        };
        if end == End::Abandoned {
            match x.out {
                Out::Head => x.rec.status = 499,
                // The connection is gone: what was written of the body.
                _ if !x.is_head => {
                    x.rec.body_bytes =
                        (x.rec.body_bytes).min(self.written.saturating_sub(x.body_start))
                }
                _ => {}
            }
            x.rec.finish(self.peer.ip(), w);
            return;
        }
        let b = self.bufs.get_or_insert_with(|| pool.take());
        let start = b.out.len();
        match (&x.out, end) {
            (Out::Head, _) => {
                // Ended before its head did: as bad a head as a malformed one.
                w.stats.cgi_bad_heads += u64::from(end == End::Complete);
                let status = match end {
                    End::TimedOut => 504,
                    End::NotStarted(status) => status,
                    _ => 502,
                };
                let reply = w.responder.error(status, &w.date, x.close, &mut b.out);
                x.rec.status = reply.status;
                x.rec.body_bytes = reply.body_bytes;
            }
            (Out::Body { chunked: true, .. }, End::Complete) => {
                if !x.is_head {
                    b.out.extend_from_slice(b"0\r\n\r\n");
                }
            }
            (Out::Body { left: Some(0), .. } | Out::Discard, _) => {}
            // A body cut short, or delimited by the close.
            (Out::Body { .. }, _) => x.close = true,
        }
        self.queued += (b.out.len() - start) as u64;
        b.push_mem(start);
        if x.body_left > 0 {
            // The program did not take all of the body: what is still coming is not read.
            x.close = true;
            self.linger = true;
        }
        // A large body still partly queued: its line waits for it to be written (or the
        // connection to go), as a static response's does (`h1.rs`); an error page given in
        // place of the program's answer (`Out::Head`) is the server's own, small.
        let end_at = self.written + self.queued;
        let no_body = x.is_head || matches!(x.out, Out::Head);
        let held = should_hold(no_body, x.rec.body_bytes, w) && end_at > self.written;
        match &mut self.proto {
            Proto::H1(h) if held => {
                h.hold_at(&x.rec.entry(self.peer.ip()), x.body_start, end_at, w)
            }
            _ => x.rec.finish(self.peer.ip(), w),
        }
        self.served = true;
        if x.close {
            self.close_after = true;
        }
    }
}

/// The exchange's access-log line and status count.
/// The response head for a checked program head.
fn push_head(x: &mut Exchange, h: &CgiHead, w: &Worker, out: &mut Vec<u8>) {
    x.rec.status = h.status;
    out.extend_from_slice(b"HTTP/1.1 ");
    // Numbers written in place: no string made per response.
    let _ = write!(out, "{}", h.status);
    out.push(b' ');
    out.extend_from_slice(wire::head::reason(h.status).as_bytes());
    out.extend_from_slice(b"\r\nDate: ");
    out.extend_from_slice(&w.date);
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(w.responder.server_line());
    h.fields.write_lines(out);
    let no_body = h.status == 204 || h.status == 304;
    x.out = if no_body {
        Out::Body {
            chunked: false,
            left: Some(0),
        }
    } else if let Some(n) = h.content_length {
        let _ = write!(out, "Content-Length: {n}\r\n");
        Out::Body {
            chunked: false,
            // A HEAD's response says the length of the body it does not carry.
            left: Some(if x.is_head { 0 } else { n }),
        }
    } else if x.version == Version::Http11 {
        out.extend_from_slice(b"Transfer-Encoding: chunked\r\n");
        Out::Body {
            chunked: true,
            left: None,
        }
    } else {
        x.close = true;
        Out::Body {
            chunked: false,
            left: None,
        }
    };
    if x.close {
        out.extend_from_slice(b"Connection: close\r\n");
    } else if x.version == Version::Http10 {
        out.extend_from_slice(b"Connection: keep-alive\r\n");
    }
    out.extend_from_slice(b"\r\n");
}

/// Body bytes, framed as the head said (nothing for HEAD; nothing past a `Content-Length`).
fn push_body(x: &mut Exchange, mut data: &[u8], out: &mut Vec<u8>) {
    let Out::Body { chunked, left } = &mut x.out else {
        return;
    };
    if let Some(left) = left {
        let take = data.len().min(*left as usize);
        data = &data[..take];
        *left -= take as u64;
    }
    if !x.is_head && !data.is_empty() {
        if *chunked {
            let _ = write!(out, "{:x}\r\n", data.len());
            out.extend_from_slice(data);
            out.extend_from_slice(b"\r\n");
        } else {
            out.extend_from_slice(data);
        }
        x.rec.body_bytes += data.len() as u64;
    }
    if *left == Some(0) {
        x.out = Out::Discard;
    }
}

/// `Location: /path` alone: the server answers as if the client had asked for the path (GET,
/// or HEAD for a HEAD: `answer_redirect`); the program's body is dropped.
fn local_redirect(x: &mut Exchange, path: &[u8], w: &mut Worker, out: &mut Vec<u8>) -> Body {
    let reply = answer_redirect(path, x.is_head, x.version, !x.close, w, out.into());
    x.rec.status = reply.status;
    x.rec.body_bytes = reply.body_bytes;
    x.close |= reply.close;
    x.out = Out::Discard;
    if x.is_head {
        Body::None
    } else {
        reply.body
    }
}
