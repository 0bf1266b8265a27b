//! What HTTP/1.1's and HTTP/2's sides of a request a program answers (`crate::gateway`) share,
//! protocol-neutral: how a program's part in a response ended ([`End`]), how much of its
//! output a connection holds ([`OUTPUT_WINDOW`]), the request a local redirect is answered as
//! ([`local_request`]), and the access-log line and status count kept until it ends
//! ([`Record`]). Each protocol keeps its own side (`h1/gateway.rs`, `h2/gateway.rs`) on top of
//! this; `gateway_seam.rs` is the seam `conn.rs` sees, above both.

use wire::{Method, Request, Version};

use super::Worker;

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

    /// The request is over: its access-log line written, its status counted.
    pub fn finish(&self, peer: std::net::IpAddr, w: &mut Worker) {
        super::finish(w, self.status, || crate::access_log::Entry {
            peer,
            request_line: &self.request_line,
            status: self.status,
            body_bytes: self.body_bytes,
            referer: self.referer.as_deref(),
            user_agent: self.user_agent.as_deref(),
            user: self.user.as_deref(),
        });
    }
}
