//! What the connection asks of its session while programs answer requests
//! (`crate::gateway`, moved by `programs.rs`): per request (an HTTP/2 stream id; 0 on
//! HTTP/1.1), the body to hand to the program, whether to read its output now, its output, and
//! its end. HTTP/3 is the other [`Side`] (`h3/gateway.rs`). Each protocol keeps
//! its own side (`h1/gateway.rs`, `h2/gateway.rs`, on the protocol-neutral `gateway.rs`); this
//! is the one seam `conn.rs` sees, the only file that knows both.

use std::time::Instant;

use http2::StreamId;

use super::gateway::End;
use super::{h2, Proto, Session, Worker};
use crate::gateway::head::HeadError;
use crate::pool::Pool;
use crate::protocol::programs::Side;

impl Side for Session {
    type Id = StreamId;
    type Ctx = Pool;

    /// Whether request `id` still wants its program (false once the client reset its stream).
    fn gateway_alive(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::alive(h, id),
            _ => self.h1_gateway_active(),
        }
    }

    /// Request body bytes received for `id` and not yet handed to its program.
    fn gateway_body(&mut self, id: StreamId) -> &[u8] {
        match &self.proto {
            Proto::H2(h) => h2::gateway::body(h, id),
            _ => self.h1_gateway_body(),
        }
    }

    /// The whole request body of `id` has been handed over.
    fn gateway_body_done(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::body_done(h, id),
            _ => self.h1_gateway_body_done(),
        }
    }

    /// `n` bytes of [`Session::gateway_body`] were taken.
    fn gateway_body_taken(&mut self, id: StreamId, n: usize, now: Instant) {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::body_taken(h, id, n, now),
            _ => self.h1_gateway_body_taken(n),
        }
    }

    /// Whether to read `id`'s program output now (its response has room for it).
    fn gateway_wants_output(&self, id: StreamId) -> bool {
        match &self.proto {
            Proto::H2(h) => h2::gateway::wants_output(h, id),
            _ => self.h1_gateway_wants_output(),
        }
    }

    /// Output of `id`'s program: its head checked, then its body.
    fn gateway_output(
        &mut self,
        id: StreamId,
        data: &[u8],
        w: &mut Worker,
        ctx: &mut Pool,
    ) -> Result<(), HeadError> {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::output(h, id, data, w),
            _ => self.h1_gateway_output(data, w, ctx),
        }
    }

    /// `id`'s program is done: its response finished, cut, or replaced by an error.
    fn gateway_end(&mut self, id: StreamId, end: End, w: &mut Worker, ctx: &mut Pool) {
        match &mut self.proto {
            Proto::H2(h) => h2::gateway::end(h, id, end, w, self.peer),
            _ => self.h1_gateway_end(end, w, ctx),
        }
    }
}
