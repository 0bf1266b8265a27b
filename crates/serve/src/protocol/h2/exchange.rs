//! One HTTP/2 stream's exchange with the program that answers it: where its response is
//! (head being read, body, or output dropped), the program's body bytes read and not yet
//! framed, and its access-log record. Kept in the stream's slot (`streams.rs`); moved by the
//! protocol's side of the gateway seam (`gateway.rs`) and framed by the handler
//! (`handler.rs`).

use wire::{Method, Request};

use crate::gateway::head::HeadReader;
use crate::protocol::gateway::Record;

#[derive(Debug)]
pub(super) enum State {
    Head,
    /// The body: `left` bytes of a `Content-Length`, or to the end.
    Body {
        left: Option<u64>,
    },
    /// The response is whole or sent elsewhere: output read and dropped.
    Discard,
}

/// One stream's exchange with its program.
#[derive(Debug)]
pub(crate) struct Exchange {
    pub(super) state: State,
    pub(super) head: HeadReader,
    /// Body bytes read and not yet framed: `buf[start..]`.
    pub(super) buf: Vec<u8>,
    pub(super) start: usize,
    /// The program's output is complete: END_STREAM after the buffer.
    pub(super) eof: bool,
    /// The program's output was cut: RST_STREAM after the buffer. Not submitted at once: a
    /// RST_STREAM submitted to nghttp2 drops the stream's HEADERS still queued before it, and
    /// the client would see a reset with no response where it should see the response cut.
    pub(super) cut: bool,
    /// The program's part is over.
    pub(super) done: bool,
    pub(super) is_head: bool,
    /// The access-log line's and the status count's part.
    pub(super) rec: Record,
}

impl Exchange {
    pub(super) fn new(
        req: &Request<'_>,
        method: &[u8],
        user: Option<&[u8]>,
        max_head: usize,
        proxied: bool,
    ) -> Exchange {
        let mut log_line = method.to_vec();
        log_line.push(b' ');
        log_line.extend_from_slice(req.target);
        log_line.extend_from_slice(b" HTTP/2.0");
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
            rec: Record::new(req, log_line, user),
        }
    }

    /// Whether the program still takes request body bytes.
    pub(super) fn takes_body(&self) -> bool {
        !self.done
    }

    /// What nghttp2 may frame now (see `handler.rs`).
    pub(super) fn body_ready(&self, max: usize) -> http2::Body {
        let avail = self.buf.len() - self.start;
        if avail == 0 && self.cut {
            return http2::Body::Reset;
        }
        if avail == 0 && !self.eof {
            return http2::Body::Deferred;
        }
        let len = avail.min(max);
        http2::Body::Ready {
            len,
            end: self.eof && len == avail,
        }
    }

    /// Moves `len` framed bytes into the output queue.
    pub(super) fn take_into(&mut self, len: usize, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.buf[self.start..self.start + len]);
        self.start += len;
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        }
    }
}
