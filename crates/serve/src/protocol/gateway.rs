//! What the connection asks of its session while programs answer requests
//! (`crate::gateway`): per request (an HTTP/2 stream id; 0 on HTTP/1.1), the body to hand to
//! the program, whether to read its output now, its output, and its end. Each protocol keeps
//! its own side (`h1/gateway.rs`, `h2/gateway.rs`); this is the one seam `conn.rs` sees.

use http2::StreamId;
use wire::{Method, Request, Version};

use super::{h2, Proto, Session, Worker};
use crate::gateway::head::HeadError;
use crate::pool::Pool;

pub(crate) use super::h1::gateway::End;

impl Session {
    /// Whether request `id` still wants its program (false once the client reset its stream).
    pub fn gateway_alive(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::alive(h, id),
            _ => self.h1_gateway_active(),
        }
    }

    /// Request body bytes received for `id` and not yet handed to its program.
    pub fn gateway_body(&self, id: StreamId) -> &[u8] {
        match &self.proto {
            Proto::H2(h) => h2::gateway::body(h, id),
            _ => self.h1_gateway_body(),
        }
    }

    /// The whole request body of `id` has been handed over.
    pub fn gateway_body_done(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::body_done(h, id),
            _ => self.h1_gateway_body_done(),
        }
    }

    /// `n` bytes of [`Session::gateway_body`] were taken.
    pub fn gateway_body_taken(&mut self, id: StreamId, n: usize) {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::body_taken(h, id, n),
            _ => self.h1_gateway_body_taken(n),
        }
    }

    /// Whether to read `id`'s program output now (its response has room for it).
    pub fn gateway_wants_output(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::wants_output(h, id),
            _ => self.h1_gateway_wants_output(),
        }
    }

    /// Output of `id`'s program: its head checked, then its body.
    pub fn gateway_output(
        &mut self,
        id: StreamId,
        data: &[u8],
        w: &mut Worker,
        pool: &mut Pool,
    ) -> Result<(), HeadError> {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::output(h, id, data, w),
            _ => self.h1_gateway_output(data, w, pool),
        }
    }

    /// `id`'s program is done: its response finished, cut, or replaced by an error.
    pub fn gateway_end(&mut self, id: StreamId, end: End, w: &mut Worker, pool: &mut Pool) {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::end(h, id, end, w, self.peer),
            _ => self.h1_gateway_end(end, w, pool),
        }
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
