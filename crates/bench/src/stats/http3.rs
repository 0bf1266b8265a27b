//! What an HTTP/3 run counts besides requests and latencies: connections and streams, QUIC's
//! packets (sent, received, lost, retransmitted) and bytes on the wire, the round-trip time
//! measured by each handshake, and the failures by their names (a TLS alert, an HTTP/3 code).
//! Each connection's packet counts are taken as deltas (`take`), so a connection that lives
//! across pages is counted once, in the window its packets were sent in.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// An HTTP/3 run's own counters, of the measured window; all zero over TCP.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http3Stats {
    /// Connections whose handshake completed.
    pub connections: u64,
    /// Streams opened for the window's requests: one per request sent.
    pub streams: u64,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets received.
    pub packets_received: u64,
    /// Packets QUIC declared lost.
    pub packets_lost: u64,
    /// Packets sent again for data a lost one carried.
    pub retransmissions: u64,
    /// UDP payload bytes sent and received.
    pub wire_bytes_sent: u64,
    /// UDP payload bytes received.
    pub wire_bytes_received: u64,
    /// UDP datagrams read, and the receive system calls that read them (`recvmmsg`, or
    /// `recvmsg` where it is refused, each bringing a GRO burst): datagrams over calls is what
    /// batching saved. A call that found the socket empty counts.
    pub datagrams_received: u64,
    /// Receive system calls (see `datagrams_received`).
    pub recv_calls: u64,
    /// UDP datagrams sent, and the send system calls that sent them (one `sendmsg` a GSO
    /// batch, one `send` a datagram without GSO).
    pub datagrams_sent: u64,
    /// Send system calls (see `datagrams_sent`): one for each send that made one, refused,
    /// interrupted or failed ones too.
    pub send_calls: u64,
    /// Received messages the kernel cut short (`MSG_TRUNC`, `MSG_CTRUNC`), dropped before
    /// QUIC saw them: flint serve's `h3_dropped`.
    pub dropped: u64,
    /// Connections (handshakes completed) whose socket read one datagram a message: the
    /// kernel refused `UDP_GRO` (before Linux 5.0) or `FLINT_H3_NO_GRO` was set.
    pub gro_off: u64,
    /// Connections whose socket sent one datagram a call at the handshake's end: no
    /// `UDP_SEGMENT` (before Linux 4.18), refused by the route, or `FLINT_H3_NO_GSO` set.
    pub gso_off: u64,
    /// Connections read with one `recvmsg` a message: the kernel or a sandbox refused
    /// `recvmmsg` (`ENOSYS`, `EPERM`).
    pub recvmmsg_off: u64,
    /// The RTT QUIC measured at the end of each handshake: count, min, sum and max in µs.
    pub handshake_rtts: u64,
    /// The smallest handshake RTT, µs (meaningful when `handshake_rtts` > 0).
    pub handshake_rtt_min_us: u64,
    /// The sum of the handshake RTTs, µs: with `handshake_rtts`, their mean.
    pub handshake_rtt_sum_us: u64,
    /// The largest handshake RTT, µs.
    pub handshake_rtt_max_us: u64,
    /// GOAWAYs received from the server (it closes the connection to new streams).
    pub goaways: u64,
    /// Streams the server did not process, sent again: those a GOAWAY left (on a new
    /// connection), and those it rejected (H3_REQUEST_REJECTED; a second rejection of the same
    /// request on one connection fails it instead).
    pub retried: u64,
    /// `--early-data`: connections that sent requests in 0-RTT (a resumed session whose
    /// ticket allowed it), counted when their handshake completed.
    pub early_offered: u64,
    /// Of those, the ones whose 0-RTT the server accepted.
    pub early_accepted: u64,
    /// Of those, the ones whose 0-RTT the server rejected (QUIC sent the requests again
    /// after the handshake).
    pub early_rejected: u64,
    /// Requests sent in 0-RTT (before their connection's handshake completed).
    pub early_requests: u64,
    /// An application's requests held back as they were built (no stream or no send capacity
    /// for their header block yet), each sent as built once there is room: each request counted
    /// once, when first held (a static request blocked alike is not counted). Not in the
    /// report: a figure for the tests that the held path ran.
    pub held_back: u64,
    /// Requests queued to go next (a redirect followed, a stream a GOAWAY left unprocessed, or
    /// one failed with the connection) while a request held back was first in line: queued
    /// below it, so that it goes first. Not in the report: a figure for the tests that this
    /// path ran.
    pub queued_below_held: u64,
    /// Failures by name (a few distinct names at most; counted only when one happens).
    pub handshake_alerts: BTreeMap<String, u64>,
    /// Streams the server reset, by the HTTP/3 error code's name.
    pub stream_resets: BTreeMap<String, u64>,
    /// Connections closed with an error, by the error's name (QUIC's or HTTP/3's).
    pub connection_closes: BTreeMap<String, u64>,
}

impl Http3Stats {
    /// Adds another thread's (or host's) counters: sums, the RTT extremes kept, the failures by
    /// name added.
    pub fn merge(&mut self, o: &Http3Stats) {
        self.connections += o.connections;
        self.streams += o.streams;
        self.add_packets(&o.packets());
        if o.handshake_rtts > 0 {
            self.handshake_rtt_min_us = match self.handshake_rtts {
                0 => o.handshake_rtt_min_us,
                _ => self.handshake_rtt_min_us.min(o.handshake_rtt_min_us),
            };
        }
        self.handshake_rtts += o.handshake_rtts;
        self.handshake_rtt_sum_us += o.handshake_rtt_sum_us;
        self.handshake_rtt_max_us = self.handshake_rtt_max_us.max(o.handshake_rtt_max_us);
        self.goaways += o.goaways;
        self.datagrams_received += o.datagrams_received;
        self.recv_calls += o.recv_calls;
        self.datagrams_sent += o.datagrams_sent;
        self.send_calls += o.send_calls;
        self.dropped += o.dropped;
        self.gro_off += o.gro_off;
        self.gso_off += o.gso_off;
        self.recvmmsg_off += o.recvmmsg_off;
        self.retried += o.retried;
        self.early_offered += o.early_offered;
        self.early_accepted += o.early_accepted;
        self.early_rejected += o.early_rejected;
        self.early_requests += o.early_requests;
        self.held_back += o.held_back;
        self.queued_below_held += o.queued_below_held;
        for (mine, theirs) in [
            (&mut self.handshake_alerts, &o.handshake_alerts),
            (&mut self.stream_resets, &o.stream_resets),
            (&mut self.connection_closes, &o.connection_closes),
        ] {
            for (name, n) in theirs {
                *mine.entry(name.clone()).or_default() += n;
            }
        }
    }

    fn packets(&self) -> Packets {
        Packets {
            sent: self.packets_sent,
            received: self.packets_received,
            lost: self.packets_lost,
            retransmitted: self.retransmissions,
            bytes_sent: self.wire_bytes_sent,
            bytes_received: self.wire_bytes_received,
        }
    }

    /// A connection's packets since they were last taken.
    pub fn add_packets(&mut self, p: &Packets) {
        self.packets_sent += p.sent;
        self.packets_received += p.received;
        self.packets_lost += p.lost;
        self.retransmissions += p.retransmitted;
        self.wire_bytes_sent += p.bytes_sent;
        self.wire_bytes_received += p.bytes_received;
    }

    /// Bytes received on the wire per body byte (0 without a body byte).
    pub fn wire_per_body_byte(&self, body_bytes: u64) -> f64 {
        match body_bytes {
            0 => 0.0,
            b => self.wire_bytes_received as f64 / b as f64,
        }
    }

    /// A handshake's RTT.
    pub fn add_handshake_rtt(&mut self, us: u64) {
        self.handshake_rtt_min_us = match self.handshake_rtts {
            0 => us,
            _ => self.handshake_rtt_min_us.min(us),
        };
        self.handshake_rtts += 1;
        self.handshake_rtt_sum_us += us;
        self.handshake_rtt_max_us = self.handshake_rtt_max_us.max(us);
    }

    /// One failure named `name` in `counts` (allocates only for a name not seen before).
    pub fn count(counts: &mut BTreeMap<String, u64>, name: &str) {
        match counts.get_mut(name) {
            Some(n) => *n += 1,
            None => {
                counts.insert(name.to_owned(), 1);
            }
        }
    }
}

/// A connection's packet and byte counts (QUIC's, all 64-bit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Packets {
    /// Packets sent.
    pub sent: u64,
    /// Packets received.
    pub received: u64,
    /// Packets declared lost.
    pub lost: u64,
    /// Packets sent again for lost data.
    pub retransmitted: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
}

impl Packets {
    /// What `now` counts beyond `before` (counts only grow on one connection).
    pub fn since(&self, before: &Packets) -> Packets {
        Packets {
            sent: self.sent.saturating_sub(before.sent),
            received: self.received.saturating_sub(before.received),
            lost: self.lost.saturating_sub(before.lost),
            retransmitted: self.retransmitted.saturating_sub(before.retransmitted),
            bytes_sent: self.bytes_sent.saturating_sub(before.bytes_sent),
            bytes_received: self.bytes_received.saturating_sub(before.bytes_received),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_add_up_and_keep_the_rtt_extremes() {
        let mut a = Http3Stats::default();
        a.add_handshake_rtt(300);
        a.add_handshake_rtt(100);
        Http3Stats::count(&mut a.stream_resets, "H3_REQUEST_REJECTED");
        let mut b = Http3Stats::default();
        b.add_handshake_rtt(500);
        b.add_packets(&Packets {
            sent: 3,
            bytes_received: 4000,
            ..Packets::default()
        });
        Http3Stats::count(&mut b.stream_resets, "H3_REQUEST_REJECTED");
        let mut sum = Http3Stats::default();
        sum.merge(&a);
        sum.merge(&b);
        assert_eq!(sum.handshake_rtts, 3);
        assert_eq!(sum.handshake_rtt_min_us, 100);
        assert_eq!(sum.handshake_rtt_max_us, 500);
        assert_eq!(sum.handshake_rtt_sum_us, 900);
        assert_eq!(sum.packets_sent, 3);
        assert_eq!(sum.wire_bytes_received, 4000);
        assert_eq!(sum.stream_resets["H3_REQUEST_REJECTED"], 2);
        let later = Packets {
            sent: 10,
            ..Packets::default()
        };
        let before = Packets {
            sent: 4,
            ..Packets::default()
        };
        assert_eq!(later.since(&before).sent, 6);
    }
}
