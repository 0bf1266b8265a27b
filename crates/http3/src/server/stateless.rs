//! Packets of no connection: a Retry answering an Initial, a stateless reset answering a
//! short header for no connection known here, a Version Negotiation answering a long header
//! of a version not ours. Queued in a bounded queue that `send` empties first.

use super::Server;
use crate::{cid, token};
use quiche::ConnectionId;
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

/// The connection IDs of a long-header datagram of a QUIC version this server does not speak
/// (destination, source), read as RFC 8999 5.1 defines every version's long header: the
/// first bit set, a version, then each ID after its length byte (up to 255 bytes each). The
/// rest (the other bits of the first byte, what follows the IDs) belongs to that version and
/// is not read. None for a short header, a version spoken here, version 0 (a Version
/// Negotiation itself, never answered: RFC 9000 6.1), or a datagram too short to hold the IDs.
pub(super) fn version_to_negotiate(datagram: &[u8]) -> Option<(&[u8], &[u8])> {
    let (&first, rest) = datagram.split_first()?;
    let (version, rest) = rest.split_first_chunk::<4>()?;
    let version = u32::from_be_bytes(*version);
    if first & 0x80 == 0 || version == 0 || quiche::version_is_supported(version) {
        return None;
    }
    let (&len, rest) = rest.split_first()?;
    let (dcid, rest) = rest.split_at_checked(len as usize)?;
    let (&len, rest) = rest.split_first()?;
    let (scid, _) = rest.split_at_checked(len as usize)?;
    Some((dcid, scid))
}

impl Server {
    /// Answers a long header of a version not spoken here, in a datagram of `len` bytes,
    /// with a Version Negotiation naming QUIC v1 (RFC 9000 6.1), its IDs those the datagram
    /// carried, swapped. Only a datagram that could open a connection (1,200 bytes or more:
    /// RFC 9000 14.1) is answered, so the answer is never larger than what came; others
    /// are dropped (`refused`).
    pub(super) fn send_version_negotiation(
        &mut self,
        dcid: &[u8],
        scid: &[u8],
        len: usize,
        from: SocketAddr,
    ) {
        // Bounded: a caller that stops sending does not let a flood queue without end.
        if len < 1200 || self.stateless.len() >= MAX_STATELESS {
            self.counts.refused += 1;
            return;
        }
        let mut out = vec![0u8; crate::MAX_DATAGRAM];
        let (scid, dcid) = (ConnectionId::from_ref(scid), ConnectionId::from_ref(dcid));
        if let Ok(n) = quiche::negotiate_version(&scid, &dcid, &mut out) {
            out.truncate(n);
            self.stateless.push_back((out, from));
            self.counts.version_negotiation += 1;
        }
    }

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
        let token = self.reset_key.token(self.config.thread, dcid);
        out[n - 16..].copy_from_slice(&token.to_be_bytes());
        self.stateless.push_back((out, from));
        self.counts.stateless_resets += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::version_to_negotiate;

    /// A long header of `version` with these IDs, then `body`.
    fn long(first: u8, version: u32, dcid: &[u8], scid: &[u8], body: &[u8]) -> Vec<u8> {
        let mut d = vec![first];
        d.extend_from_slice(&version.to_be_bytes());
        d.push(dcid.len() as u8);
        d.extend_from_slice(dcid);
        d.push(scid.len() as u8);
        d.extend_from_slice(scid);
        d.extend_from_slice(body);
        d
    }

    #[test]
    fn only_the_invariant_fields_are_read() {
        let body = [0xffu8; 1200];
        // Any first byte with the long-header bit, any body, IDs up to 255 bytes.
        for first in [0x80, 0xf0, 0xff, 0xc3] {
            let d = long(first, 0x1a2a_3a4a, b"dcid", b"scid", &body);
            assert_eq!(version_to_negotiate(&d), Some((&b"dcid"[..], &b"scid"[..])));
        }
        let big = [7u8; 255];
        let d = long(0x80, 0xff00_001d, &big, &[], &[]);
        assert_eq!(version_to_negotiate(&d), Some((&big[..], &[][..])));
        // QUIC v1, a Version Negotiation (version 0), a short header, cut in its IDs.
        assert_eq!(
            version_to_negotiate(&long(0xc0, 1, b"d", b"s", &body)),
            None
        );
        assert_eq!(
            version_to_negotiate(&long(0x80, 0, b"d", b"s", &body)),
            None
        );
        assert_eq!(
            version_to_negotiate(&long(0x40, 7, b"d", b"s", &body)),
            None
        );
        let d = long(0x80, 7, b"dcid", b"scid", &[]);
        assert_eq!(version_to_negotiate(&d[..d.len() - 1]), None);
        assert_eq!(version_to_negotiate(&d[..3]), None);
    }
}
