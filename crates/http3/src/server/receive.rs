//! A datagram received: given to its connection (or starting one), the connection's streams,
//! GOAWAY, cut responses' resets and flow-control back-pressure brought up to date, and the
//! connection queued to be polled and sent from.

use super::accept::address_key;
use super::goaway::{goaway_done, write_goaway};
use super::head_budget::{self, Charged};
use super::resets::{reset_acknowledged, shut_stream};
use super::stateless::version_to_negotiate;
use super::{clocks, ConnId, RequestId, Server, ServerEvent, DATA_FRAME_HEADER};
use crate::cid;
use crate::config::h3_config;
use quiche::h3;
use std::net::SocketAddr;
use std::time::Instant;

/// QUIC's transport error for a connection the server will not take (RFC 9000 20.1).
pub(super) const CONNECTION_REFUSED: u64 = 0x2;

impl Server {
    /// A datagram received from `from`: given to its connection, or starting one if it is a
    /// client's Initial. What cannot be read is counted and dropped, never an error.
    pub fn recv(&mut self, datagram: &mut [u8], from: SocketAddr) {
        self.now = Instant::now();
        // A version this server does not speak: only the fields every version shares are
        // read (RFC 8999), never the rest as if it were v1's (which could fail on a valid
        // packet of another version and leave it unanswered).
        if let Some((dcid, scid)) = version_to_negotiate(datagram) {
            self.send_version_negotiation(dcid, scid, datagram.len(), from);
            return;
        }
        // A short header does not say how long its connection ID is: it is ours, so ours.
        let hdr = match quiche::Header::from_slice(datagram, cid::LEN) {
            Ok(h) => h,
            Err(_) => {
                self.counts.malformed += 1;
                return;
            }
        };
        let (slot, new) = match self.by_id.get(&hdr.dcid) {
            Some(&slot) => (slot, false),
            None => match self.accept(&hdr, datagram.len(), from) {
                Some(slot) => (slot, true),
                None => return,
            },
        };
        let max_field_section = self.config.max_field_section;
        let generation = self.slots[slot as usize].generation;
        let now = self.now;
        let local = self.local;
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
            return;
        };
        // The address quiche knows the client by (server/paths.rs: past quiche's paths, a
        // new address stands in for an old one). Only a short header can make a path.
        let short = hdr.ty == quiche::Type::Short;
        let arrival = (conn.paths).arrival(from, conn.peer, short, || active_peer(&conn.quic));
        if arrival.is_refused() {
            // Past quiche's paths, from an IP the client has not proved: taking a path for it
            // would send the connection's data there unchecked (server/paths.rs).
            self.counts.address_changes_refused += 1;
            return;
        }
        let info = quiche::RecvInfo {
            from: arrival.quiche,
            to: local,
        };
        // Whether quiche read a packet of it (`recv` says Ok of one it could not decrypt):
        // what a stranger sends with the connection's ID changes nothing. Asked only of a
        // datagram from another address than the last one's, of the one path it is on.
        let read_before =
            (arrival.counts_on_path()).then(|| path_read(&conn.quic, local, arrival.quiche));
        // An error is the connection's: QUIC has closed it (or will), as `sweep` finds.
        let _ = conn.quic.recv(datagram, info);
        if new && !conn.refused {
            // A connection is one once a packet of its client's Initial is read. One shaped
            // as an Initial that does not decrypt (garbage, or a forgery without the keys its
            // connection ID derives) is let go of now, no event, counted as a datagram for no
            // connection: it held nothing, and must neither count as a connection nor hold a
            // handshake's place (for `Retry::Flood`) until the next sweep.
            if conn.quic.stats().recv == 0 {
                self.counts.unknown += 1;
                self.remove(slot);
                return;
            }
            self.counts.accepted += 1;
        }
        if conn.refused {
            // At its address's limit (`server/accept.rs`): closed once its first flight is
            // out (`send.rs`); nothing more is done for it.
            self.mark(slot);
            return;
        }
        let read = match read_before {
            Some(n) => path_read(&conn.quic, local, arrival.quiche) > n,
            // quiche makes a path only for a packet it decrypted.
            None => arrival.is_added() && conn.quic.is_path_validated(local, from).is_ok(),
        };
        if read && arrival.is_new() {
            self.counts.address_changes += 1;
        }
        if conn.paths.taken(from, arrival, read) {
            // Validated again at its new address (an answer changes nothing quiche keeps;
            // none fails the path, and quiche goes back to another).
            let _ = conn.quic.probe_path(local, arrival.quiche);
        }
        conn.paths.drain_events(&mut conn.quic);
        if conn.h3.is_none() && (conn.quic.is_established() || conn.quic.is_in_early_data()) {
            if let Ok(h3) = h3_config(max_field_section)
                .and_then(|c| Ok(h3::Connection::with_transport(&mut conn.quic, &c)?))
            {
                conn.h3 = Some(h3);
                // Quiet from now if nothing is under way (`clocks::update` below), and only
                // once the handshake is done (a 0-RTT connection's is not yet).
                self.handshakes -= 1;
                self.counts.resumed += u64::from(conn.quic.is_resumed());
                // The client is at its address now: it counts against it, or, the address
                // having its connections (handshakes that completed together), is refused.
                if !conn.counted {
                    let a = (self.per_address)
                        .entry(address_key(conn.peer.ip()))
                        .or_default();
                    if a.counted as usize >= self.config.max_per_address {
                        let _ = conn.quic.close(false, CONNECTION_REFUSED, b"");
                        self.counts.refused_per_address += 1;
                    } else {
                        a.counted += 1;
                        conn.counted = true;
                    }
                }
            }
        }
        // The streams it opened, and what the header blocks under way hold, within the budget
        // (`head_budget.rs`): one walk of its readable streams (quiche makes their list anew
        // at each call).
        let mut added = false;
        if conn.h3.is_some() {
            for stream in conn.quic.readable() {
                clocks::note_stream(conn, stream, now);
                match head_budget::charge(conn, stream, &self.config.head_budget) {
                    Charged::Nothing => {}
                    Charged::Added => added = true,
                    Charged::Refused => {
                        let _ = shut_stream(conn, stream, crate::H3_REQUEST_REJECTED);
                        self.counts.header_budget_refused += 1;
                    }
                }
            }
        }
        if added {
            let held = self.header_bytes();
            self.counts.header_bytes_peak = self.counts.header_bytes_peak.max(held);
        }
        // The connection again, once the server's count is read.
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
            return;
        };
        // Streams being ended: our resets once the client's sides end, HTTP/3's state let go
        // once QUIC collects them (what this datagram acknowledged or reset).
        if !conn.ending.is_empty() {
            super::ending::settle(conn);
        }
        // Cut responses' resets, their bytes acknowledged (sent by the `mark` below).
        reset_acknowledged(conn);
        // After a GOAWAY (written once there is room), the acknowledgement of the last
        // response ends the connection.
        if conn.goaway.is_some() {
            self.counts.goaways_sent += u64::from(write_goaway(conn));
            // Closed once the GOAWAY is out: closing now would drop it unsent.
            conn.close_when_sent |= goaway_done(conn);
        }
        // Responses held back by flow control may go on now.
        let mut i = 0;
        while i < conn.blocked.len() {
            let stream = conn.blocked[i];
            match conn.quic.stream_capacity(stream) {
                // No room for a byte of body (as `capacity` counts it).
                Ok(n) if n <= DATA_FRAME_HEADER => i += 1,
                // Room, or the stream is gone (stopped by the client: the next call says so).
                _ => {
                    conn.blocked.swap_remove(i);
                    let id = RequestId {
                        conn: ConnId { slot, generation },
                        stream,
                    };
                    self.events.push_back(ServerEvent::Writable { id });
                }
            }
        }
        clocks::update(conn, now, false);
        self.mark(slot);
    }
}

/// The packets quiche read on its path from `peer` to `local` (0 if it has none): a walk of
/// at most `MAX_PATHS` paths, not of the streams as `stats()` is.
fn path_read(quic: &quiche::Connection, local: SocketAddr, peer: SocketAddr) -> usize {
    (quic.path_stats())
        .find(|p| p.local_addr == local && p.peer_addr == peer)
        .map_or(0, |p| p.recv)
}

/// The client's address on quiche's active path.
fn active_peer(quic: &quiche::Connection) -> Option<SocketAddr> {
    quic.path_stats().find(|p| p.active).map(|p| p.peer_addr)
}
