//! A client's addresses over its connection's life: a NAT that rebinds gives the client a new
//! address (port, or address and port) with nothing said, and every change is a path of
//! quiche's that the connection keeps to its end.
//!
//! Why quiche cannot let go of them (0.30.0): a client that issued no spare connection IDs
//! (quiche's own client issues none unless asked; flint bench's none) is reached on a new
//! path with the ID it used before, copied from the active path without being linked to the
//! new one (`on_peer_migrated`, lib.rs 9213-9233). A path is dropped only to make room for
//! another, and only if it has no peer ID left (`PathMap::make_room_for_new_path` and
//! `Path::unused`, path.rs 794-812 and 358-363); a path's ID is taken from it only when that
//! ID is retired (`retire_dcid`, lib.rs 7436-7473; NEW_CONNECTION_ID's retire-prior-to,
//! lib.rs 8780-8805), and then only from the one path linked to it: retiring the shared ID
//! would leave the active path with an ID that no longer exists (its packets are written with
//! `get_dcid(seq)`, lib.rs 4438-4441; quiche lets it be retired while another path is
//! usable, and each path left is). So
//! a connection has at most `active_connection_id_limit` paths in its life, and a packet from
//! one address more is dropped unanswered (`insert_path` fails with `Done`, lib.rs 9124).
//!
//! The workaround, outside quiche: the server keeps the addresses quiche knows the client by
//! (at most [`MAX_PATHS`], the first being the one it was accepted from), each with the real
//! address it stands for now, and the IPs the client proved (the first address's, by the
//! handshake; then each whose new path quiche validated: PATH_CHALLENGE answered from there).
//! Only a short-header packet quiche decrypted is a change: quiche reads a long one
//! (Handshake, 0-RTT) on its active path whatever its source and makes no path for it.
//! The first changes are given to quiche as they are, and it validates each new path (sending
//! at most three times what it received there until answered). Once it has as many paths as
//! it can keep, a datagram from a new address whose IP the client proved (a NAT that rebinds
//! changes the port, rarely the IP) is given to quiche as coming from the address least
//! recently heard from in a packet quiche read (never the one heard from last nor quiche's
//! active path; one quiche gave up validating only if no other is left), which from then on
//! stands for the new one: quiche's datagrams to it go to the new address ([`Paths::real`]);
//! the path keeps the old address's congestion window and RTT (RFC 9000 9.4 would reset
//! them; quiche has the same to-do for its own migrations). That path was validated
//! before, so quiche moves to it at once, without its limit of three times the bytes
//! received; the server asks it to validate it again (`probe_path` works on a server's
//! existing path), and if the new address never answers, quiche gives the path up after
//! three probe timeouts and goes back to another it knows. A new address whose IP the client
//! has not proved, once the paths are full, is dropped unread (counted in
//! `ServerCounts::address_changes_refused`), as quiche alone drops it: taking over a path for
//! it would let an on-path attacker, copying a client's packet and sending it from a
//! victim's address, point the connection's traffic at any victim unchecked (RFC 9000 9.3).
//! What remains: such a copy sent from another port of an IP the client proved has the
//! connection's data sent there until the client's next packet or the failed validation.
//!
//! Memory: at most [`MAX_PATHS`] addresses and as many IPs a connection, allocated at its
//! first change; the path events quiche queues are drained at every datagram and timer
//! ([`Paths::drain_events`], which notes the validated and the failed ones). Cost: whether
//! quiche read a datagram is asked (of one path's packet count, or whether quiche made the
//! path) only for one from another address than the last one heard from.

use std::net::{IpAddr, SocketAddr};

/// The paths quiche keeps for a connection: the `active_connection_id_limit` both sides set.
pub(super) const MAX_PATHS: usize = crate::config::ACTIVE_CONNECTION_ID_LIMIT as usize;

/// An address quiche knows the client by.
struct Known {
    /// As quiche has it (the key of its path).
    quiche: SocketAddr,
    /// Where the client is that it stands for now (`quiche` itself until reused).
    real: SocketAddr,
    /// When quiche last read a packet from `real` after one from another address (the clock
    /// counts such switches): the order in which the addresses were last heard from.
    seen: u64,
    /// quiche gave up validating its path (a `FailedValidation` event, until `Validated`).
    failed: bool,
}

/// A connection's client addresses (empty until its first change: one address, unchanged).
#[derive(Default)]
pub(super) struct Paths {
    known: Vec<Known>,
    /// The IPs the client proved: the first address's, then those of paths quiche validated
    /// (at most [`MAX_PATHS`]: only a new path, one of quiche's, adds one).
    proven: Vec<IpAddr>,
    /// Switches from one address to another that quiche read (the clock of `seen`).
    tick: u64,
    /// The entry quiche read the last packet of the table's from.
    last: usize,
    /// Some address stands for another: [`Paths::real`] must look.
    reused: bool,
}

/// What a datagram from a client's address is to quiche, and what becomes of the table if
/// quiche reads a packet of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Arrival {
    /// The address to give quiche as the datagram's source.
    pub(super) quiche: SocketAddr,
    change: Change,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Change {
    /// Nothing to note: the address heard from last, a long header, or no change yet.
    None,
    /// A known address other than the one heard from last, at this index.
    Back(usize),
    /// A new address, given to quiche as it is (a new path).
    Add,
    /// A new address, standing in for the known one at this index.
    Reuse(usize),
    /// A new address past quiche's paths, its IP not proved: not given to quiche.
    Refuse,
}

impl Arrival {
    /// From an address not known yet, in a short-header packet.
    pub(super) fn is_new(&self) -> bool {
        matches!(self.change, Change::Add | Change::Reuse(_))
    }

    /// A new path for quiche if it reads the datagram.
    pub(super) fn is_added(&self) -> bool {
        self.change == Change::Add
    }

    /// Whether quiche read it is told by its path's count of packets read (`quiche`'s path
    /// exists already): a switch back to a known address, or one standing in for it.
    pub(super) fn counts_on_path(&self) -> bool {
        matches!(self.change, Change::Back(_) | Change::Reuse(_))
    }

    /// To be dropped unread: a new address, quiche's paths full, its IP not proved.
    pub(super) fn is_refused(&self) -> bool {
        self.change == Change::Refuse
    }
}

impl Paths {
    /// What a datagram from `from` is to quiche; `first`: the address the connection was
    /// accepted from; `short`: whether its first packet has a short header (quiche reads a
    /// long one, Handshake or 0-RTT, on its active path whatever its source: no new path);
    /// `active`: quiche's active path's address, asked only if an old path is to be taken.
    pub(super) fn arrival(
        &mut self,
        from: SocketAddr,
        first: SocketAddr,
        short: bool,
        active: impl FnOnce() -> Option<SocketAddr>,
    ) -> Arrival {
        let none = |quiche| Arrival {
            quiche,
            change: Change::None,
        };
        if self.known.is_empty() {
            if from == first || !short {
                return none(from);
            }
            self.known.reserve_exact(MAX_PATHS);
            self.known.push(Known {
                quiche: first,
                real: first,
                seen: 0,
                failed: false,
            });
            self.proven.reserve_exact(MAX_PATHS);
            self.proven.push(first.ip());
        }
        if let Some(i) = self.known.iter().position(|k| k.real == from) {
            let quiche = self.known[i].quiche;
            if i == self.last || !short {
                return none(quiche);
            }
            return Arrival {
                quiche,
                change: Change::Back(i),
            };
        }
        if !short {
            return none(from);
        }
        if self.known.len() < MAX_PATHS {
            return Arrival {
                quiche: from,
                change: Change::Add,
            };
        }
        if !self.proven.contains(&from.ip()) {
            return Arrival {
                quiche: from,
                change: Change::Refuse,
            };
        }
        // Not quiche's active path, nor the one heard from last (usually the same); of the
        // others, one quiche did not give up on, the least recently heard from.
        let active = active();
        let last = self.last;
        let (i, k) = (self.known.iter().enumerate())
            .filter(|&(i, k)| i != last && Some(k.quiche) != active)
            .min_by_key(|(_, k)| (k.failed, k.seen))
            .expect("the table is full: eight entries");
        Arrival {
            quiche: k.quiche,
            change: Change::Reuse(i),
        }
    }

    /// quiche read (`read`) a packet of the datagram from `from` that `arrival` describes, or
    /// not: if it did, a new address is kept and the one heard from last noted. Returns
    /// whether it took an old one's path (which quiche must then validate again).
    pub(super) fn taken(&mut self, from: SocketAddr, arrival: Arrival, read: bool) -> bool {
        if !read {
            return false;
        }
        let i = match arrival.change {
            Change::None | Change::Refuse => return false,
            Change::Back(i) | Change::Reuse(i) => i,
            Change::Add => {
                self.known.push(Known {
                    quiche: from,
                    real: from,
                    seen: 0,
                    failed: false,
                });
                self.known.len() - 1
            }
        };
        self.tick += 1;
        self.last = i;
        let k = &mut self.known[i];
        k.seen = self.tick;
        if let Change::Reuse(_) = arrival.change {
            k.real = from;
            self.reused = true;
            return true;
        }
        false
    }

    /// Where a datagram quiche addressed to `to` goes.
    pub(super) fn real(&self, to: SocketAddr) -> SocketAddr {
        if !self.reused {
            return to;
        }
        (self.known.iter().find(|k| k.quiche == to)).map_or(to, |k| k.real)
    }

    /// Empties quiche's queue of path events (one or two are queued at each change of address:
    /// `New`, `Validated`, `PeerMigrated`...), noting the IP of each path validated (the
    /// client answered a PATH_CHALLENGE sent there) and the paths quiche gave up on.
    pub(super) fn drain_events(&mut self, quic: &mut quiche::Connection) {
        while let Some(event) = quic.path_event_next() {
            match event {
                quiche::PathEvent::Validated(_, peer) => self.validated(peer),
                quiche::PathEvent::FailedValidation(_, peer) => self.failed(peer),
                _ => {}
            }
        }
    }

    /// quiche validated its path to `quiche`: the IP of the address it stands for is proved.
    /// (Only a new path's address can bring an IP not proved yet: one standing in for another
    /// has a proved IP.)
    fn validated(&mut self, quiche: SocketAddr) {
        let Some(k) = self.known.iter_mut().find(|k| k.quiche == quiche) else {
            return;
        };
        k.failed = false;
        let ip = k.real.ip();
        if !self.proven.contains(&ip) && self.proven.len() < MAX_PATHS {
            self.proven.push(ip);
        }
    }

    /// quiche gave up validating its path to `quiche`: taken over last.
    fn failed(&mut self, quiche: SocketAddr) {
        if let Some(k) = self.known.iter_mut().find(|k| k.quiche == quiche) {
            k.failed = true;
        }
    }

    /// The addresses kept (1 until the first change).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.known.len().max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::{Paths, MAX_PATHS};
    use std::net::SocketAddr;

    fn addr(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// A datagram from port `port`, taken: the address quiche sees, whether the port was
    /// new, whether it took an old one's path.
    fn from(p: &mut Paths, port: u16) -> (SocketAddr, bool, bool) {
        let a = p.arrival(addr(port), addr(1000), true, || None);
        let reused = p.taken(addr(port), a, true);
        (a.quiche, a.is_new(), reused)
    }

    #[test]
    fn one_address_costs_nothing() {
        let mut p = Paths::default();
        for _ in 0..3 {
            assert_eq!(from(&mut p, 1000), (addr(1000), false, false));
        }
        assert!(p.known.is_empty());
        assert_eq!(p.real(addr(1000)), addr(1000));
    }

    #[test]
    fn the_first_changes_are_new_paths_then_the_least_recent_stands_in() {
        let mut p = Paths::default();
        assert_eq!(from(&mut p, 1000).0, addr(1000));
        for port in 1001..1000 + MAX_PATHS as u16 {
            assert_eq!(from(&mut p, port), (addr(port), true, false));
        }
        assert_eq!(p.len(), MAX_PATHS);
        // Back to a known one: as it was.
        assert_eq!(from(&mut p, 1001), (addr(1001), false, false));
        // A new one past the limit: the least recently heard from (1000) stands in for it.
        assert_eq!(from(&mut p, 2000), (addr(1000), true, true));
        assert_eq!(p.real(addr(1000)), addr(2000));
        assert_eq!(p.real(addr(1001)), addr(1001));
        // Then 1002, and so on, never growing.
        assert_eq!(from(&mut p, 2001), (addr(1002), true, true));
        let mut last = addr(2001);
        for port in 3000..4000 {
            let a = p.arrival(addr(port), addr(1000), true, || None);
            assert_ne!(p.real(a.quiche), last, "the current address stays");
            assert!(a.is_new() && p.taken(addr(port), a, true));
            assert_eq!(p.real(a.quiche), addr(port));
            last = addr(port);
        }
        assert_eq!(p.len(), MAX_PATHS);
        assert!(p.known.capacity() <= MAX_PATHS);
    }

    #[test]
    fn a_datagram_quiche_refuses_changes_nothing() {
        let mut p = Paths::default();
        for port in 1000..1000 + MAX_PATHS as u16 {
            from(&mut p, port);
        }
        // Garbage from a new address: asked, not taken.
        let a = p.arrival(addr(5000), addr(1000), true, || None);
        assert_eq!(a.quiche, addr(1000));
        assert!(!p.taken(addr(5000), a, false));
        assert_eq!(p.real(addr(1000)), addr(1000));
        assert!(!p.reused);
    }

    fn at(ip: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((ip, port))
    }

    #[test]
    fn past_the_paths_only_a_proved_ip_takes_one_over() {
        let mut p = Paths::default();
        let first = addr(1000);
        // Six new ports of the first IP, and one new IP (quiche's last path: its own).
        for port in 1001..1000 + MAX_PATHS as u16 - 1 {
            let a = p.arrival(addr(port), first, true, || None);
            p.taken(addr(port), a, true);
        }
        let other = at([127, 0, 0, 2], 3000);
        let a = p.arrival(other, first, true, || None);
        assert_eq!((a.quiche, a.is_new(), a.is_refused()), (other, true, false));
        p.taken(other, a, true);
        assert_eq!(p.len(), MAX_PATHS);
        // Another port of it, quiche's path to it not validated yet: refused, nothing moved.
        let moved = at([127, 0, 0, 2], 3001);
        let a = p.arrival(moved, first, true, || None);
        assert!(a.is_refused());
        assert!(!p.taken(moved, a, true));
        assert!(!p.reused);
        // A new IP never seen: refused, as often as it comes.
        let stranger = at([127, 0, 0, 3], 4000);
        for _ in 0..3 {
            assert!(p.arrival(stranger, first, true, || None).is_refused());
        }
        // A new port of the first IP takes the least recent path over.
        let a = p.arrival(addr(2000), first, true, || None);
        assert_eq!((a.quiche, a.is_refused()), (addr(1000), false));
        assert!(p.taken(addr(2000), a, true));
        // Once quiche validated its path to 127.0.0.2, that IP's new ports take paths over.
        p.validated(other);
        let a = p.arrival(moved, first, true, || None);
        assert!(!a.is_refused() && a.is_new());
        assert!(p.taken(moved, a, true));
        assert_eq!(p.real(a.quiche), moved);
        // A validation heard for an address quiche does not know proves nothing.
        p.validated(stranger);
        assert!(p.arrival(stranger, first, true, || None).is_refused());
        assert_eq!(p.proven.len(), 2);
        assert!(p.proven.capacity() <= MAX_PATHS);
    }

    /// A long header (Handshake, 0-RTT) from a new address: quiche reads it on its active
    /// path and makes none, so the table takes no slot for it, before the first change or
    /// after.
    #[test]
    fn a_long_header_from_a_new_address_takes_no_slot() {
        let mut p = Paths::default();
        for port in 2000..2000 + 2 * MAX_PATHS as u16 {
            let a = p.arrival(addr(port), addr(1000), false, || None);
            assert_eq!(
                (a.quiche, a.is_new(), a.is_refused()),
                (addr(port), false, false)
            );
            assert!(!p.taken(addr(port), a, true));
        }
        assert!(p.known.is_empty());
        from(&mut p, 1001);
        for port in 3000..3000 + 2 * MAX_PATHS as u16 {
            let a = p.arrival(addr(port), addr(1000), false, || None);
            assert!(!a.is_new() && !p.taken(addr(port), a, true));
        }
        assert_eq!(p.len(), 2);
    }

    /// Datagrams quiche did not read (garbage with the connection's ID) from the old
    /// addresses leave the order of those heard from as it was: the current address is never
    /// the one taken over, nor quiche's active path, and one quiche gave up on comes last.
    #[test]
    fn only_what_quiche_read_orders_the_addresses() {
        let mut p = Paths::default();
        for port in 1000..1000 + MAX_PATHS as u16 {
            from(&mut p, port);
        }
        let current = addr(999 + MAX_PATHS as u16);
        for port in 1000..999 + MAX_PATHS as u16 {
            let a = p.arrival(addr(port), addr(1000), true, || None);
            assert!(!a.is_new() && a.counts_on_path());
            assert!(!p.taken(addr(port), a, false));
        }
        // From the current address: nothing to ask quiche.
        let a = p.arrival(current, addr(1000), true, || None);
        assert!(!a.counts_on_path());
        // The least recently read stands in, not the current address.
        let a = p.arrival(addr(2000), addr(1000), true, || None);
        assert_eq!(a.quiche, addr(1000));
        // Nor quiche's active path, if it is another.
        let a = p.arrival(addr(2000), addr(1000), true, || Some(addr(1000)));
        assert_eq!(a.quiche, addr(1001));
        // A path quiche gave up on comes after the others, until validated again.
        p.failed(addr(1000));
        let a = p.arrival(addr(2000), addr(1000), true, || None);
        assert_eq!(a.quiche, addr(1001));
        p.validated(addr(1000));
        let a = p.arrival(addr(2000), addr(1000), true, || None);
        assert_eq!(a.quiche, addr(1000));
        // A switch back that quiche read moves that address last in the order.
        let a = p.arrival(addr(1000), addr(1000), true, || None);
        assert!(!p.taken(addr(1000), a, true));
        let a = p.arrival(addr(2000), addr(1000), true, || None);
        assert_eq!(a.quiche, addr(1001));
    }
}
