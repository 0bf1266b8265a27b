//! The datagrams out: packets of no connection first, then those of the connections queued to
//! send from (a cut response's reset and a GOAWAY's close held until what precedes them is out).

use super::Server;
use crate::{Datagram, H3_NO_ERROR};
use std::time::Instant;

impl Server {
    /// The next datagram to send, written into `out` (at least [`crate::MAX_DATAGRAM`]
    /// bytes), or None when no connection has anything to send now.
    pub fn send(&mut self, out: &mut [u8]) -> Option<Datagram> {
        if let Some((bytes, to)) = self.stateless.pop_front() {
            if self.stateless.is_empty() {
                self.resets_queued = 0;
            }
            out[..bytes.len()].copy_from_slice(&bytes);
            return Some(Datagram {
                len: bytes.len(),
                to,
                at: Instant::now(),
            });
        }
        loop {
            let slot = *self.to_send.front()?;
            self.timers.get_mut().touch(slot);
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                self.to_send.pop_front();
                continue;
            };
            match conn.quic.send(out) {
                Ok((len, info)) => {
                    return Some(Datagram {
                        len,
                        to: conn.paths.real(info.to),
                        at: info.at,
                    })
                }
                // All sent: the cut responses' bytes are out, their resets follow the next
                // acknowledgement (`recv`).
                Err(_) if conn.reset_when_sent.iter().any(|r| r.sent_at.is_none()) => {
                    let acked = conn.quic.stats().acked_bytes;
                    for r in &mut conn.reset_when_sent {
                        r.sent_at.get_or_insert(acked);
                    }
                    // A PING, so an acknowledgement comes even if the bytes went (and were
                    // acknowledged) before.
                    let _ = conn.quic.send_ack_eliciting();
                }
                // A connection refused at its address's limit (`accept.rs`): its first flight
                // is out (the client has the keys to read what follows), its close follows.
                // Closed before that flight, quiche could not seal the close for every client
                // (aioquic's Initial left it a CryptoFail). A ClientHello in two Initials (a
                // browser's post-quantum key share) has only an ACK for the first: the flight,
                // and so the close, waits for the rest (an ALPN chosen says TLS read it whole
                // and wrote the flight).
                Err(_)
                    if conn.refused
                        && conn.quic.local_error().is_none()
                        && !conn.quic.application_proto().is_empty() =>
                {
                    let _ = conn
                        .quic
                        .close(false, super::receive::CONNECTION_REFUSED, b"");
                }
                // All sent: the GOAWAY is out, the CONNECTION_CLOSE may follow.
                Err(_) if conn.close_when_sent => {
                    conn.close_when_sent = false;
                    let _ = conn.quic.close(true, H3_NO_ERROR, b"");
                }
                Err(_) => {
                    conn.sending = false;
                    self.to_send.pop_front();
                    self.sweep(slot, true);
                }
            }
        }
    }
}
