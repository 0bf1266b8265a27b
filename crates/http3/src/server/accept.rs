//! A client's Initial for no connection: a new connection, or why not (the connection limit,
//! a version to negotiate, `go_away`, address validation by Retry, an address's limit).

use super::paths::Paths;
use super::stateless::MIN_RESET;
use super::{Conn, Server, Slot};
use crate::config::Retry;
use crate::{cid, token};
use std::net::{IpAddr, SocketAddr};

impl Server {
    /// A new connection for a client's Initial, or None (not an Initial, the limit reached).
    /// It is a connection once its Initial is read (`receive.rs`): one that does not decrypt
    /// is let go of at once, uncounted.
    pub(super) fn accept(
        &mut self,
        hdr: &quiche::Header<'_>,
        len: usize,
        from: SocketAddr,
    ) -> Option<u32> {
        // A reset only for an ID this thread issued: another thread's connection is alive
        // there (this packet came from another address, or from someone who saw its ID), and
        // its token would end it.
        if hdr.ty == quiche::Type::Short
            && len > MIN_RESET
            && cid::thread_of(&hdr.dcid) == Some(self.config.thread)
        {
            self.send_reset(&hdr.dcid, len, from);
            return None;
        }
        if hdr.ty != quiche::Type::Initial {
            self.counts.unknown += 1;
            return None;
        }
        // RFC 9000 14.1: a client's first datagram is at least 1,200 bytes (so that what we
        // answer stays within three times what it sent); a smaller one gets no answer, not even
        // version negotiation (RFC 9000 6.1).
        if len < 1200 || self.live >= self.config.max_connections || self.going_away {
            self.counts.refused += 1;
            return None;
        }
        // (A version to negotiate was answered before the header was read as QUIC v1's:
        // `receive.rs`, `stateless.rs`.)
        if !quiche::version_is_supported(hdr.version) {
            self.counts.unknown += 1;
            return None;
        }
        // One address (an IPv6 /64) does not take every connection. Only connections from
        // where their client is known to be count against it (a Retry's token brought back,
        // or the handshake done): Initials spoofed in its name, which never complete, do not
        // shut it out. At its limit an Initial without a token gets a Retry (no state), and
        // one with a good token is refused: with a CONNECTION_CLOSE (CONNECTION_REFUSED), for
        // which the connection is made, reads the Initial, sends its first flight (so that
        // every client has the keys to read the close: quiche could not seal one before it
        // for aioquic's Initial) and then closes (`send.rs`), so that its client fails at
        // once rather than waiting out its connect timeout. Its client has proved its address,
        // so this answers no spoofer, and the connection lives only through QUIC's closing
        // period, not counted against the address (nor as a handshake, for `Retry::Flood`;
        // it does count against `max_connections` while it closes). One such connection at a
        // time per address: while it closes, further Initials from there with a good token
        // are dropped, as a full address's were before, so refusing costs one handshake
        // (its TLS flight and signature) per closing period, not one per Initial.
        let key = address_key(from.ip());
        let (at_limit, refusing) = match self.per_address.get(&key) {
            Some(a) => (
                a.counted as usize >= self.config.max_per_address,
                a.refusing,
            ),
            None => (false, false),
        };
        // A token not of our format (another server's, or one of ours from before a format
        // change) is taken as none (RFC 9000 8.1.3): its client is not shut out for it.
        let token = (hdr.token.as_deref()).filter(|t| token::ours(t));
        let (scid, odcid) = if let Some(token) = token {
            // A Retry's token: good, or the Initial is dropped. (This server gives no other
            // token, and answering a bad one of ours would only help whoever forges them.)
            match token::open(token, from, &hdr.dcid, self.now) {
                Some(_) if at_limit && refusing => {
                    self.counts.refused += 1;
                    return None;
                }
                Some(odcid) if hdr.dcid.len() == cid::LEN => {
                    let odcid = quiche::ConnectionId::from_vec(odcid.to_vec());
                    (hdr.dcid.clone().into_owned(), Some(odcid))
                }
                _ => {
                    self.counts.bad_tokens += 1;
                    return None;
                }
            }
        } else if at_limit
            || match self.config.retry {
                Retry::Never => false,
                Retry::Flood(handshakes) => flood_retry(
                    handshakes,
                    self.handshakes,
                    self.live,
                    self.config.max_connections,
                ),
                Retry::Always => true,
            }
        {
            self.send_retry(hdr, from);
            return None;
        } else {
            let ours = cid::issued(self.config.thread);
            (quiche::ConnectionId::from_vec(ours.to_vec()), None)
        };
        // Its stateless reset token, which this thread can make again from the ID after
        // losing the connection (restarted).
        let reset = self.reset_key.token(self.config.thread, &scid);
        (self.config.quic).set_stateless_reset_token(Some(reset));
        let quic = quiche::accept(
            &scid,
            odcid.as_ref(),
            self.local,
            from,
            &mut self.config.quic,
        )
        .ok()?;
        let theirs = hdr.dcid.clone().into_owned();
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    conn: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.by_id.insert(scid.clone(), slot);
        self.by_id.insert(theirs.clone(), slot);
        self.slots[slot as usize].conn = Some(Conn {
            quic,
            h3: None,
            ids: [scid, theirs],
            blocked: Vec::new(),
            peer: from,
            paths: Paths::default(),
            last_request: None,
            goaway: None,
            settled_below: 0,
            goaway_written: false,
            close_when_sent: false,
            reset_when_sent: Vec::new(),
            accepted_at: self.now,
            heads: Vec::new(),
            charge: super::head_budget::Charge::new(&self.head_held),
            bodies: Vec::new(),
            next_stream: 0,
            counted: odcid.is_some() && !at_limit,
            quiet_since: None,
            acked: 0,
            acked_at_answer: 0,
            probed: false,
            unacked: Vec::new(),
            ending: Vec::new(),
            waiting: false,
            progress_at: self.now,
            pinged_at: self.now,
            polling: false,
            sending: false,
            refused: odcid.is_some() && at_limit,
        });
        self.live += 1;
        if odcid.is_some() && at_limit {
            self.per_address.entry(key).or_default().refusing = true;
            self.counts.refused_per_address += 1;
            return Some(slot);
        }
        self.handshakes += 1;
        // Validated by its token: counted now (else once its handshake is done).
        if odcid.is_some() {
            self.per_address.entry(key).or_default().counted += 1;
        }
        // Counted in `accepted` once quiche reads a packet of the Initial (`receive.rs`).
        Some(slot)
    }
}

/// Whether [`Retry::Flood`] answers a tokenless Initial with a Retry: when `handshakes`
/// handshakes are under way, at least the threshold `configured`, or when `live` connections
/// (handshaking or not) hold half the `max_connections` slots. Spoofed Initials (one each from
/// many addresses, never continued) hold their slots until the handshake's deadline; counting
/// only handshakes, a server whose slots real connections mostly hold would give the last
/// ones to them, and a real client's Initial would be dropped until they time out. Past half
/// the slots, every new connection proves its address first: unvalidated connections never
/// take more than half, and the rest is left to clients that prove theirs.
pub(super) fn flood_retry(
    configured: usize,
    handshakes: usize,
    live: usize,
    max_connections: usize,
) -> bool {
    handshakes >= configured || live >= max_connections / 2
}

/// What `max_per_address` counts by: an IPv4 address (also as a dual-stack socket sees it,
/// mapped), or an IPv6 address's /64 (a host is commonly given a whole /64).
pub(super) fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{address_key, flood_retry};
    use std::net::IpAddr;

    #[test]
    fn retries_start_at_the_threshold_or_by_half_the_connection_slots() {
        // Handshakes under way at the threshold.
        assert!(!flood_retry(128, 127, 127, 10_000));
        assert!(flood_retry(128, 128, 128, 10_000));
        // Half the slots held, by handshakes or by connections done.
        assert!(!flood_retry(128, 49, 49, 100));
        assert!(flood_retry(128, 50, 50, 100));
        assert!(flood_retry(128, 0, 50, 100));
        assert!(flood_retry(128, 0, 0, 1));
    }

    #[test]
    fn addresses_count_by_ipv4_address_and_ipv6_64() {
        let key = |s: &str| address_key(s.parse::<IpAddr>().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }
}
