//! The bytes request header blocks hold while they arrive, bounded across connections.
//!
//! quiche's HTTP/3 layer reads a HEADERS frame into a buffer of its own until the frame is
//! whole (up to 1.5 times the header block limit a stream), and a connection may have its
//! stream limit of such blocks open for the header timeout: without a bound across
//! connections, a client could have a server hold that much per connection, as many
//! connections as it may open. So each server (one thread's socket) has a budget of bytes
//! held in unfinished header blocks ([`ServerConfig::header_budget`]), and each connection a
//! share of it (an eighth, at least one whole block).
//!
//! Each datagram's new bytes of a stream still in its header block are charged to it as
//! QUIC receives them, before HTTP/3 reads them: `stream_readable_len`, less what was seen
//! unread at the last datagram (HTTP/3 reads all of a partial block's bytes at each poll, so
//! once a connection's poll is done nothing counted is unread), charged as the buffer they
//! take: HTTP/3's grows by doubling, so a block is charged the next power of two of its
//! bytes. Bytes that would take the
//! connection past its share or the server past its budget are refused with their stream:
//! STOP_SENDING and RESET_STREAM with H3_REQUEST_REJECTED (RFC 9114 4.1.1: nothing of the
//! request was processed, its head was never whole, so the client may send it again, which
//! it may not after H3_EXCESSIVE_LOAD; a client over its share is told to retry later, not
//! that it erred), counted in `header_budget_refused`. QUIC discards the refused bytes at
//! once; what HTTP/3 read of the stream before stays charged until HTTP/3 lets go of it
//! (`ending.rs`), so the charge is what the server holds, and never passes the budget.
//!
//! A block handed out (whole) gives its charge back. The counts are a few integers a
//! connection and one a server (shared by its connections through an `Arc`, so that a
//! stream let go of anywhere gives back to both, and a server stays `Send`: it may be made on
//! one thread and run on another; only the thread running it touches the count); nothing is allocated for them and nothing
//! is walked but the streams of a datagram that are still in their header block, and those
//! once a poll of their connection is done.
//!
//! [`ServerConfig::header_budget`]: crate::ServerConfig::header_budget

use super::Conn;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::Instant;

/// A request stream opened whose header block has not come whole yet.
#[derive(Debug, Clone, Copy)]
pub(super) struct Head {
    pub(super) stream: u64,
    /// When it was first seen (its header deadline runs from here).
    pub(super) since: Instant,
    /// The bytes of its block received.
    held: u32,
    /// What QUIC held unread of it at the last datagram (0 once its connection's poll is done:
    /// HTTP/3 has read it).
    unread: u32,
}

impl Head {
    pub(super) fn new(stream: u64, since: Instant) -> Head {
        Head {
            stream,
            since,
            held: 0,
            unread: 0,
        }
    }
}

/// What one connection's header blocks hold, within its server's count.
#[derive(Debug)]
pub(super) struct Charge {
    server: Arc<AtomicU64>,
    held: u64,
}

impl Charge {
    pub(super) fn new(server: &Arc<AtomicU64>) -> Charge {
        Charge {
            server: Arc::clone(server),
            held: 0,
        }
    }

    fn add(&mut self, n: u64) {
        self.held += n;
        self.server.fetch_add(n, Relaxed);
    }

    pub(super) fn give_back(&mut self, n: u64) {
        let n = n.min(self.held);
        self.held -= n;
        // (The server's count holds this connection's `held`: it cannot go below 0.)
        self.server.fetch_sub(n, Relaxed);
    }
}

impl Drop for Charge {
    /// A connection gone gives back what its blocks held (HTTP/3's state goes with it).
    fn drop(&mut self) {
        let held = self.held;
        self.give_back(held);
    }
}

/// A server's budget: all its connections' unfinished header blocks, and one connection's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Budget {
    pub(crate) server: u64,
    pub(crate) connection: u64,
    /// The most one stream's block can hold (1.5 times the header block limit, and its frame
    /// header): a stream's charge stops there (past it quiche ends the connection).
    pub(crate) block: u64,
}

impl Budget {
    /// `server` bytes for a server whose header block limit is `max_field_section`; a
    /// connection's share an eighth of it; each at least one whole block.
    pub(crate) fn new(server: u64, max_field_section: u64) -> Budget {
        let block = max_field_section.saturating_mul(3) / 2 + 16;
        let server = server.max(block);
        Budget {
            server,
            connection: (server / 8).max(block),
            block,
        }
    }
}

/// What charging a stream's new bytes did.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Charged {
    /// Nothing new to charge, or the stream is past its header block.
    Nothing,
    /// Bytes charged: the server's count may have risen.
    Added,
    /// They would pass the connection's share or the server's budget: the caller refuses the
    /// stream (STOP_SENDING and RESET_STREAM with H3_REQUEST_REJECTED), charging nothing.
    Refused,
}

/// Charges the new bytes a datagram brought of `stream`, if it is still in its header block,
/// unless they would pass the connection's share or the server's budget.
pub(super) fn charge(conn: &mut Conn, stream: u64, budget: &Budget) -> Charged {
    // `heads` is in stream order (noted as they open, removed in place).
    let Ok(i) = conn.heads.binary_search_by_key(&stream, |h| h.stream) else {
        return Charged::Nothing;
    };
    let head = conn.heads[i];
    let readable = conn.quic.stream_readable_len(stream, budget.block as usize) as u64;
    let new = readable.saturating_sub(u64::from(head.unread));
    let new = new.min(budget.block.saturating_sub(u64::from(head.held)));
    if new == 0 {
        conn.heads[i].unread = readable as u32;
        return Charged::Nothing;
    }
    let held = head.held + new as u32;
    let more = buffer(held) - buffer(head.held);
    if conn.charge.held + more > budget.connection
        || conn.charge.server.load(Relaxed) + more > budget.server
    {
        return Charged::Refused;
    }
    conn.charge.add(more);
    let h = &mut conn.heads[i];
    h.held = held;
    h.unread = readable as u32;
    Charged::Added
}

/// What a block of `bytes` received takes of memory: HTTP/3's buffer grows by doubling as
/// the bytes come (quiche's `state_buf`, in steps of 4 KiB at least), so up to the next power
/// of two of them (64 KiB for a block of 39,936 bytes).
fn buffer(bytes: u32) -> u64 {
    if bytes == 0 {
        return 0;
    }
    u64::from(bytes).next_power_of_two()
}

/// `conn`'s poll is done: HTTP/3 has read every byte of its header blocks QUIC held.
pub(super) fn read_by_http3(conn: &mut Conn) {
    for h in &mut conn.heads {
        h.unread = 0;
    }
}

/// `stream`'s header block is no longer waited for: its entry taken out of `heads`, with the
/// bytes charged to it (0 if it was not there). The caller gives them back, or keeps them
/// charged while HTTP/3 holds the stream.
pub(super) fn take(conn: &mut Conn, stream: u64) -> u32 {
    match conn.heads.binary_search_by_key(&stream, |h| h.stream) {
        // At most the next power of two of a block's limit: within u32.
        Ok(i) => buffer(conn.heads.remove(i).held) as u32,
        Err(_) => 0,
    }
}

/// `stream`'s header block came whole and was handed out (or refused as a request): its
/// bytes are a request's now, no longer a block's that may never end.
pub(super) fn whole(conn: &mut Conn, stream: u64) {
    let held = take(conn, stream);
    conn.charge.give_back(u64::from(held));
}
