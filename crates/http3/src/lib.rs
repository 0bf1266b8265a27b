//! HTTP/3 for flint serve (the server role) and flint bench (the client role): QUIC and
//! HTTP/3 from Cloudflare's `quiche` under a sans-I/O API that flint's own mio loops drive.
//! The crate owns no socket, starts no thread and reads no clock but quiche's: the caller
//! hands it each datagram received, sends each datagram it gives, and calls it back at its
//! deadline.
//!
//! - [`Client`]: one connection to a server. `connect`, then `send` (the Initial), `recv`
//!   each datagram from the server, `send` until None, `on_deadline` when `deadline` passes;
//!   once `is_ready`, `send_request` opens a stream and `poll` hands out its events
//!   (`Response`, `Data` to read with `recv_body`, `Finished`, `Reset`, `GoAway`).
//! - [`Server`]: every connection arriving on one UDP socket. `recv` each datagram (a client's
//!   Initial starts a connection), `poll` for `Request`s (method, path, fields), answer with
//!   `send_response` and `send_body` (which takes what flow control allows: a `Writable` event
//!   says when more may go), and `send` until None.
//! - [`Closed`]: why a connection ended, by kind: idle timeout, a handshake refused on a TLS
//!   alert (a certificate not trusted or not naming the server), a CONNECTION_CLOSE with its
//!   QUIC or HTTP/3 code.
//!
//! docs/http3.md says why quiche, what it costs per request (in memory, both sides), and the
//! limits' defaults.

#![warn(missing_docs)]

mod cid;
mod client;
mod config;
mod error;
mod fields;
mod response_head;
mod server;
mod tickets;
mod token;
pub mod udp;

pub use client::{CertificateRefusal, Client, ClientEvent, EarlyData};
pub use config::{ClientConfig, Limits, Retry, ServerConfig, Timeouts, Trust};
pub use config::{DEFAULT_HEADER_BUDGET, DEFAULT_RETRY_HANDSHAKES};
pub use error::{alert_name, h3_code_name, quic_code_name, Closed, Error};
pub use fields::{Field, Fields, MAX_FIELDS};
pub use server::{ConnId, RequestId, Server, ServerCounts, ServerEvent};
pub use tickets::{TicketClock, DEFAULT_TICKET_KEY_PERIOD};

use std::net::SocketAddr;
use std::time::Instant;

/// The largest datagram either side reads or writes: buffers handed to `send` and `recv` are
/// this large (the largest UDP payload over Ethernet's 1,500-byte MTU and IPv4, with room).
pub const MAX_DATAGRAM: usize = 1500;

/// The length of the connection IDs a server issues. Their first two bytes are the index of
/// the thread holding the connection ([`ServerConfig::thread`]), big-endian: what flint serve's
/// `SO_REUSEPORT` program reads to hand a packet to that thread's socket.
pub const CID_LEN: usize = cid::LEN;

/// HTTP/3's code for a request cancelled by the client (RFC 9114 8.1).
pub const H3_REQUEST_CANCELLED: u64 = 0x10c;
/// HTTP/3's code for a request the server did not process (RFC 9114 8.1): the client may
/// send it again.
pub const H3_REQUEST_REJECTED: u64 = 0x10b;
/// HTTP/3's code for a malformed request or response (RFC 9114 8.1, 4.1.2).
pub const H3_MESSAGE_ERROR: u64 = 0x10e;
/// HTTP/3's code for a clean end (RFC 9114 8.1).
pub const H3_NO_ERROR: u64 = 0x100;
/// HTTP/3's code for a request stream that ended (here: was cut) before a whole request
/// (RFC 9114 8.1).
pub const H3_REQUEST_INCOMPLETE: u64 = 0x10d;

/// A datagram written by `send`: its length, where it goes, and when (QUIC's pacing: the
/// caller may hold it until `at`; now or earlier means at once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram {
    /// Bytes written at the start of the caller's buffer.
    pub len: usize,
    /// The peer's address: where to send it.
    pub to: SocketAddr,
    /// When to send it, by quiche's pacer.
    pub at: Instant,
}

/// Packets and bytes of one connection (64-bit counts) and its round-trip time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets received.
    pub packets_received: u64,
    /// Packets sent that were declared lost.
    pub packets_lost: u64,
    /// Packets sent that carried retransmitted data.
    pub retransmitted: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Bytes of the packets declared lost.
    pub bytes_lost: u64,
    /// The smoothed round-trip time of the active path.
    pub rtt: std::time::Duration,
}

impl Stats {
    pub(crate) fn of(conn: &quiche::Connection) -> Stats {
        let s = conn.stats();
        let rtt = conn
            .path_stats()
            .find(|p| p.active)
            .map(|p| p.rtt)
            .unwrap_or_default();
        Stats {
            packets_sent: s.sent as u64,
            packets_received: s.recv as u64,
            packets_lost: s.lost as u64,
            retransmitted: s.retrans as u64,
            bytes_sent: s.sent_bytes,
            bytes_received: s.recv_bytes,
            bytes_lost: s.lost_bytes,
            rtt,
        }
    }
}
