//! Packets of no connection: a Retry answering an Initial, a stateless reset answering a
//! short header for no connection known here. Queued (with version negotiation) in a bounded
//! queue that `send` empties first.

use super::Server;
use crate::{cid, token};
use std::net::SocketAddr;

/// Packets of no connection (version negotiation, Retry, stateless reset) waiting to be
/// sent, at most.
pub(super) const MAX_STATELESS: usize = 64;
/// Stateless resets waiting to be sent, at most (a quarter of the queue: a flood of short
/// headers for unknown IDs leaves room for Retries and version negotiation, and costs at most
/// this many MACs between two sends).
const MAX_RESETS: usize = MAX_STATELESS / 4;
/// The shortest stateless reset (RFC 9000 10.3: five bytes before its 16-byte token): one is
/// sent only for a packet longer than this, and is shorter than that packet, so two
/// endpoints cannot reset each other in a loop.
pub(super) const MIN_RESET: usize = 21;
/// The longest: as long as a short header with a 20-byte ID and a small packet.
const MAX_RESET: usize = 43;

impl Server {
    /// Answers a client's Initial with a Retry: a new connection ID to use and a token
    /// sealing its address, the ID its Initial went to, and an expiry. No state is kept.
    pub(super) fn send_retry(&mut self, hdr: &quiche::Header<'_>, from: SocketAddr) {
        if self.stateless.len() >= MAX_STATELESS {
            self.counts.refused += 1;
            return;
        }
        let new = cid::issued(self.config.thread);
        let lifetime = self.config.token_lifetime;
        let token = token::seal(from, &hdr.dcid, &new, self.now, lifetime);
        let new = quiche::ConnectionId::from_ref(&new);
        let mut out = vec![0u8; crate::MAX_DATAGRAM];
        if let Ok(n) = quiche::retry(&hdr.scid, &hdr.dcid, &new, &token, hdr.version, &mut out) {
            out.truncate(n);
            self.stateless.push_back((out, from));
            self.counts.retries += 1;
        }
    }

    /// Answers a short-header packet of `len` bytes for no connection known here with a
    /// stateless reset (RFC 9000 10.3): random bytes ending in the ID's reset token, which
    /// the client's end of the connection (if it has one) takes as the connection's end.
    pub(super) fn send_reset(
        &mut self,
        dcid: &quiche::ConnectionId<'_>,
        len: usize,
        from: SocketAddr,
    ) {
        if self.stateless.len() >= MAX_STATELESS || self.resets_queued >= MAX_RESETS {
            self.counts.unknown += 1;
            return;
        }
        self.resets_queued += 1;
        let mut out = vec![0u8; (len - 1).min(MAX_RESET)];
        cid::fill(&mut out);
        // A short header's first bits: 0 (short), 1 (fixed).
        out[0] = 0x40 | (out[0] & 0x3f);
        let n = out.len();
        let token = token::reset(self.config.thread, dcid);
        out[n - 16..].copy_from_slice(&token.to_be_bytes());
        self.stateless.push_back((out, from));
        self.counts.stateless_resets += 1;
    }
}
