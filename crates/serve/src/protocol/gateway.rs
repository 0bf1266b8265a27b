//! What HTTP/1.1's, HTTP/2's and HTTP/3's sides of a request a program answers
//! (`crate::gateway`) share, protocol-neutral: how a program's part in a response ended
//! ([`End`]), how much of its output a connection holds ([`OUTPUT_WINDOW`]), the request a
//! local redirect is answered as ([`local_request`]), whether its program may start before its
//! body is whole ([`body_gate`]), and the access-log line and status count kept until it ends
//! ([`Record`]). Each protocol keeps its own side (`h1/gateway.rs`,
//! `h2/gateway.rs`, `h3/gateway.rs`) on top of this; `gateway_seam.rs` is the seam `conn.rs`
//! sees above HTTP/1.1's and HTTP/2's, and `protocol/programs.rs` moves all three.

use wire::{Method, Request, Version};

use super::Worker;
use crate::gateway::head::{CgiHead, HeadReader};
use crate::gateway::Route;
use crate::respond::{Output, Reply};

/// Program output is read only while the connection has less than this queued: a client that
/// reads nothing holds at most this much of it in the server (the rest waits in the pipe, and
/// then in the program, blocked on its write).
pub(crate) const OUTPUT_WINDOW: u64 = 64 * 1024;

/// How a program's part in a response ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// Its stdout closed and it exited (by a status, not a signal).
    Complete,
    /// Killed by a signal before it finished (crashed, or killed by someone else).
    Died,
    /// Past its wall time: killed.
    TimedOut,
    /// Wrote more than `cgi_max_output_bytes`: killed.
    OutputLimit,
    /// Its head was refused (`gateway/head.rs`): killed.
    BadHead,
    /// It could not be started: this status (500, or 503 when short of resources).
    NotStarted(u16),
    /// The client went away first: killed; logged with 499 (nginx's "client closed the
    /// request") unless its status was sent.
    Abandoned,
}

/// Whether a request a program or an upstream answers may start it now, from what it said of
/// its body and what of it came. A program is told the body's length up front (RFC 3875
/// 4.1.2): a body whose length is not said and that has not ended is gathered whole first,
/// within `max_body_bytes`, then the program is told its length (HTTP/2's and HTTP/3's
/// answer to what HTTP/1.1's chunked body gets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BodyGate {
    /// The length is said, or the body is whole: the program starts now.
    Start,
    /// The body is gathered until it ends, then the request answered.
    Gather,
    /// Past `max_body_bytes`, said or gathered: 413.
    TooLarge,
}

/// [`BodyGate`] for a body whose `content-length` is `said`, `received` bytes of which came,
/// `ended` once its stream ended.
pub(crate) fn body_gate(said: Option<u64>, ended: bool, received: u64, max_body: u64) -> BodyGate {
    match said {
        Some(n) if n > max_body => BodyGate::TooLarge,
        Some(_) => BodyGate::Start,
        None if received > max_body => BodyGate::TooLarge,
        None if ended => BodyGate::Start,
        None => BodyGate::Gather,
    }
}

/// The request a program's local redirect (`Location: /path` alone, RFC 3875 6.2.2) is answered
/// as, from the files: a GET of the path (HEAD for a HEAD), with no conditions of the client's.
pub(crate) fn local_request(
    path: &[u8],
    is_head: bool,
    version: Version,
    keep_alive: bool,
) -> Request<'_> {
    Request {
        method: if is_head { Method::Head } else { Method::Get },
        target: path,
        version,
        keep_alive,
        host: Some(b"localhost"),
        if_match: Default::default(),
        if_none_match: Default::default(),
        if_modified_since: None,
        if_unmodified_since: None,
        range: None,
        if_range: None,
        accept_encoding: None,
        user_agent: None,
        referer: None,
        authorization: None,
        content_length: None,
        chunked: false,
        expect_continue: false,
        head_len: 0,
    }
}

/// Answers a program's local redirect to `path` into `out`, routed as a request for it would be
/// (RFC 3875 6.2.2: "as if the client had asked for that path"), but never running anything:
/// - under a protected prefix, a 302 to the path (made normal and encoded: never the program's
///   bytes): the request the server would make carries no credentials to check, so the client
///   asks with its own;
/// - a path a gateway claims (a program, a FastCGI script, a proxy mount) is not followed (a
///   program's bytes are never served as a file, and a redirect never starts another program,
///   so redirects never chain): 502, with one line in the error log; a path a gateway refuses
///   gets that refusal (404, 403);
/// - any other path is answered from the files.
pub(crate) fn answer_redirect(
    path: &[u8],
    is_head: bool,
    version: Version,
    keep_alive: bool,
    w: &mut Worker,
    out: Output<'_>,
) -> Reply {
    let req = local_request(path, is_head, version, keep_alive);
    if w.auth.as_mut().is_some_and(|g| g.protects(path)) {
        return w.responder.found(&req, &w.date, out);
    }
    match w.gateways.as_mut().and_then(|g| g.route(path, w.now)) {
        None => w.responder.respond(&req, &w.date, w.now, out),
        Some(Route::Refused(status)) => w.responder.error_to(&req, status, &w.date, out),
        Some(_) => {
            let mut line = b"flint serve: a program's local redirect to ".to_vec();
            crate::access_log::escape_into(&mut line, path);
            line.extend_from_slice(b" names a gateway's target: not followed (502)\n");
            let _ = std::io::Write::write_all(&mut std::io::stderr(), &line);
            w.responder.error_to(&req, 502, &w.date, out)
        }
    }
}

/// What a gateway request's access-log line and status count need, kept from its request until
/// its program's part ends: the same for HTTP/1.1 and HTTP/2, so that both log and count a
/// program's answer as the responder's own are.
#[derive(Debug)]
pub(crate) struct Record {
    request_line: Vec<u8>,
    referer: Option<Vec<u8>>,
    user_agent: Option<Vec<u8>>,
    /// The user Basic authentication let in (the log's third field).
    user: Option<Vec<u8>>,
    pub status: u16,
    pub body_bytes: u64,
}

impl Record {
    pub fn new(req: &Request<'_>, request_line: Vec<u8>, user: Option<&[u8]>) -> Record {
        Record {
            request_line,
            referer: req.referer.map(<[u8]>::to_vec),
            user_agent: req.user_agent.map(<[u8]>::to_vec),
            user: user.map(<[u8]>::to_vec),
            status: 0,
            body_bytes: 0,
        }
    }

    /// A record for a server with no access log: the status counted, nothing kept of the
    /// request (no copies made per request).
    pub fn counted_only() -> Record {
        Record {
            request_line: Vec::new(),
            referer: None,
            user_agent: None,
            user: None,
            status: 0,
            body_bytes: 0,
        }
    }

    /// The heap bytes its copies of the request hold.
    pub fn heap_bytes(&self) -> usize {
        let held = |v: &Option<Vec<u8>>| v.as_ref().map_or(0, Vec::capacity);
        self.request_line.capacity()
            + held(&self.referer)
            + held(&self.user_agent)
            + held(&self.user)
    }

    /// The request is over: its access-log line written, its status counted.
    pub fn finish(&self, peer: std::net::IpAddr, w: &mut Worker) {
        super::finish(w, self.status, || self.entry(peer));
    }

    /// Its access-log line's fields.
    pub fn entry(&self, peer: std::net::IpAddr) -> crate::access_log::Entry<'_> {
        crate::access_log::Entry {
            peer,
            request_line: &self.request_line,
            status: self.status,
            body_bytes: self.body_bytes,
            referer: self.referer.as_deref(),
            user_agent: self.user_agent.as_deref(),
            user: self.user.as_deref(),
        }
    }
}

#[derive(Debug)]
pub(in crate::protocol) enum State {
    Head,
    /// The body: `left` bytes of a `Content-Length`, or to the end.
    Body {
        left: Option<u64>,
    },
    /// The response is whole or sent elsewhere: output read and dropped.
    Discard,
}

/// One HTTP/2 or HTTP/3 request's exchange with its program: where its response is (head
/// being read, body, or output dropped), the body bytes read and not yet sent, and its
/// access-log record.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(in crate::protocol) state: State,
    pub(in crate::protocol) head: HeadReader,
    /// Body bytes read and not yet framed: `buf[start..]`.
    pub(in crate::protocol) buf: Vec<u8>,
    pub(in crate::protocol) start: usize,
    /// The program's output is complete: the stream ends after the buffer.
    pub(in crate::protocol) eof: bool,
    /// The program's output was cut: the stream is reset after the buffer. Not at once: an HTTP/2
    /// RST_STREAM submitted to nghttp2 drops the stream's HEADERS still queued before it, and
    /// the client would see a reset with no response where it should see the response cut.
    pub(in crate::protocol) cut: bool,
    /// The program's part is over.
    pub(in crate::protocol) done: bool,
    pub(in crate::protocol) is_head: bool,
    /// The access-log line's and the status count's part.
    pub(in crate::protocol) rec: Record,
}

impl Exchange {
    /// `protocol` as the access log shows it (`HTTP/2.0`, `HTTP/3.0`); `logged`: the server
    /// keeps an access log (else nothing of the request is copied: only the status is counted).
    pub(in crate::protocol) fn new(
        req: &Request<'_>,
        method: &[u8],
        protocol: &[u8],
        user: Option<&[u8]>,
        max_head: usize,
        proxied: bool,
        logged: bool,
    ) -> Exchange {
        let rec = if logged {
            let mut log_line = method.to_vec();
            log_line.push(b' ');
            log_line.extend_from_slice(req.target);
            log_line.push(b' ');
            log_line.extend_from_slice(protocol);
            Record::new(req, log_line, user)
        } else {
            Record::counted_only()
        };
        Exchange {
            state: State::Head,
            // A proxied response's `Location` is the upstream's to give, not a local redirect.
            head: HeadReader::new(max_head, !proxied),
            buf: Vec::new(),
            start: 0,
            eof: false,
            cut: false,
            done: false,
            is_head: req.method == Method::Head,
            rec,
        }
    }

    /// The heap bytes it holds outside its own size: the output buffer, the log record's
    /// copies, a head being gathered.
    pub(in crate::protocol) fn heap_bytes(&self) -> usize {
        self.buf.capacity() + self.rec.heap_bytes() + self.head.heap_bytes()
    }

    /// Whether the program still takes request body bytes.
    pub(in crate::protocol) fn takes_body(&self) -> bool {
        !self.done
    }
}

/// A program's part in its response once its head is checked, the same for HTTP/2 and HTTP/3.
impl Exchange {
    /// Answers a local redirect (`Location: /path` alone) into `out` ([`answer_redirect`], as
    /// over HTTP/1.1); the program's output is dropped from now on.
    pub(in crate::protocol) fn answer_local(
        &mut self,
        path: &[u8],
        w: &mut Worker,
        out: Output<'_>,
    ) -> Reply {
        let reply = answer_redirect(path, self.is_head, Version::Http11, true, w, out);
        self.rec.status = reply.status;
        self.rec.body_bytes = reply.body_bytes;
        self.state = State::Discard;
        reply
    }

    /// The program's head is taken as the response's: its status recorded, its body to
    /// follow. Returns whether the response has no body (a HEAD, a 204, a 304), and the
    /// `Content-Length` to say (none on a 204 or a 304, RFC 9110 8.6, as over HTTP/1.1: a
    /// client resets a 204's stream that says one).
    pub(in crate::protocol) fn head_taken(&mut self, parsed: &CgiHead) -> (bool, Option<u64>) {
        self.rec.status = parsed.status;
        let bodiless = parsed.status == 204 || parsed.status == 304;
        let no_body = self.is_head || bodiless;
        self.state = match no_body {
            true => State::Discard,
            false => State::Body {
                left: parsed.content_length,
            },
        };
        (no_body, parsed.content_length.filter(|_| !bodiless))
    }

    /// Body bytes of the program into the buffer (up to its `Content-Length`): how many.
    pub(in crate::protocol) fn take_body(&mut self, mut data: &[u8]) -> usize {
        let State::Body { left } = &mut self.state else {
            return 0;
        };
        if let Some(left) = left {
            let take = data.len().min(*left as usize);
            data = &data[..take];
            *left -= take as u64;
        }
        if *left == Some(0) {
            self.state = State::Discard;
        }
        self.buf.extend_from_slice(data);
        self.rec.body_bytes += data.len() as u64;
        data.len()
    }

    /// The program's part is over: the status of the error page that answers instead when no
    /// head came (502, 504, or the start's), else the response is to end after its buffer
    /// (`eof`) or be cut (`cut`: the program died, timed out, went over its limit, or stopped
    /// short of its `Content-Length`). A client that went away is logged with 499 if no
    /// status was sent.
    pub(in crate::protocol) fn ended(&mut self, end: End, w: &mut Worker) -> Option<u16> {
        self.done = true;
        match (&self.state, end) {
            (State::Head, End::Abandoned) => self.rec.status = 499,
            (_, End::Abandoned) => {}
            (State::Head, _) => {
                w.stats.cgi_bad_heads += u64::from(end == End::Complete);
                return Some(match end {
                    End::TimedOut => 504,
                    End::NotStarted(status) => status,
                    _ => 502,
                });
            }
            (State::Body { left: Some(n) }, End::Complete) if *n > 0 => self.cut = true,
            (State::Body { .. }, End::Complete) | (State::Discard, _) => self.eof = true,
            (State::Body { .. }, _) => self.cut = true,
        }
        None
    }
}
