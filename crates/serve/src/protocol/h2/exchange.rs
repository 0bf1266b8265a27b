//! One HTTP/2 stream's exchange with the program that answers it (the protocol-neutral
//! [`Exchange`], `protocol/gateway.rs`): kept in the stream's slot (`streams.rs`); moved by the
//! protocol's side of the gateway seam (`gateway.rs`) and framed by the handler (`handler.rs`),
//! which asks it what nghttp2 may frame now.

pub(in crate::protocol) use crate::protocol::gateway::{Exchange, State};

impl Exchange {
    /// What nghttp2 may frame now (see `handler.rs`).
    pub(in crate::protocol) fn body_ready(&self, max: usize) -> http2::Body {
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
