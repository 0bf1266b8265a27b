//! What happened on the server, as `Server::poll` hands it out.

use super::{ConnId, RequestId};
use crate::fields::Fields;
use crate::{Closed, Stats};

/// What happened on the server, one event at a time from
/// [`Server::poll`](super::Server::poll).
#[derive(Debug)]
pub enum ServerEvent {
    /// A request's head. `end`: it has no body; else `Body` events follow, then `BodyEnd`.
    Request {
        /// The request, for the answer and the body's events.
        id: RequestId,
        /// Its header block as received, pseudo-header fields (`:method`, `:path`...) included.
        fields: Fields,
        /// The stream ended with the head: no body.
        end: bool,
    },
    /// Request body bytes are waiting: read them with
    /// [`Server::recv_body`](super::Server::recv_body) until it returns 0.
    Body {
        /// The request whose body it is.
        id: RequestId,
    },
    /// The request's body is complete.
    BodyEnd {
        /// The request whose body ended.
        id: RequestId,
    },
    /// A response that flow control held back may go on (`send_response` or `send_body`).
    Writable {
        /// The request whose response may go on.
        id: RequestId,
    },
    /// The request's stream was reset (an HTTP/3 error code): by the client, or by this
    /// side when the request's body missed its deadline while its response was still held
    /// back by flow control ([`crate::Timeouts::body`]). What was kept for it can go.
    Reset {
        /// The request reset.
        id: RequestId,
        /// The HTTP/3 error code ([`crate::h3_code_name`]).
        code: u64,
    },
    /// A connection ended; its requests are gone.
    Closed {
        /// The connection, whose ID is stale from now on.
        conn: ConnId,
        /// Why it ended.
        why: Closed,
        /// Its packets and bytes, final.
        stats: Stats,
    },
}
