//! The access-log line of a response whose body may outlive the turn it is answered in,
//! shared by the three protocols: Common Log Format's `%b` is the body bytes sent, so a client
//! that cuts a 20 MB transfer off after 2 MB is logged with about 2 MB, not 20. Such a
//! response's line is copied into a [`HeldLog`] when it is answered (its request is gone by
//! the time the response ends) and written when it ends with what each protocol counts as sent
//! (`h1.rs`: body bytes the kernel accepted; `h2/logging.rs`: DATA bytes framed into the
//! connection's output; `h3/logging.rs`: body bytes handed to QUIC). Every other response is
//! logged as it is answered, at no cost. Its status is counted as it is answered, held or not,
//! so the counts are the same with or without a log.
//!
//! Records come from the thread's [`Spares`] (`Worker::held_logs`, one list for the three
//! protocols) and go back to it, so that no allocation is made per response once the list has
//! grown to the responses held at once. The records held at once are bounded by their bytes
//! ([`HELD_BYTES_BUDGET`] a thread): past it, a response is logged as it is answered with its
//! whole length, as a small one is (a hundred HTTP/2 streams with 16 KiB headers each, on
//! every connection, would otherwise pin megabytes until each stream ends).

use std::net::IpAddr;

use std::time::SystemTime;

use crate::access_log::{AccessLog, Entry};
use crate::protocol::Worker;

/// A response body longer than this is held (HTTP/1.1, HTTP/2): a shorter one is logged as it
/// is answered with its whole length, whether or not all of it left (in practice the socket
/// buffer takes it in that turn), with nothing copied. (HTTP/3 holds exactly the responses
/// QUIC did not take whole at once.)
pub(crate) const HOLD_BODY_BYTES: u64 = 64 * 1024;

/// Spares kept past this many are dropped (a burst of held responses does not pin memory).
const MAX_SPARES: usize = 256;
/// A record whose buffers grew past this (a long path, `Referer` or `User-Agent`) is dropped,
/// not kept as a spare: 256 spares of 16 KiB fields would pin 4 MiB on a thread.
const MAX_SPARE_BYTES: usize = 2048;
/// The bytes the records held at once on a thread may own: past this, a response is logged as
/// it is answered (its whole length), not held. 4 MiB is a thousand records of ordinary
/// headers, or 256 of the longest a request may carry.
pub(crate) const HELD_BYTES_BUDGET: usize = 4 * 1024 * 1024;

/// What a held response's log line needs, owned.
#[derive(Default, Debug)]
pub(crate) struct HeldLog {
    peer: Option<IpAddr>,
    line: Vec<u8>,
    referer: Kept,
    user_agent: Kept,
    user: Kept,
    status: u16,
    /// The body's whole length, as the responder said it.
    body_bytes: u64,
}

/// A field that may be absent, its bytes kept for the next fill either way.
#[derive(Default, Debug)]
struct Kept {
    present: bool,
    bytes: Vec<u8>,
}

impl Kept {
    /// A copy of `from`, reusing the allocation.
    fn refill(&mut self, from: Option<&[u8]>) {
        self.bytes.clear();
        self.present = from.is_some();
        self.bytes.extend_from_slice(from.unwrap_or_default());
    }

    fn shown(&self) -> Option<&[u8]> {
        self.present.then_some(&self.bytes[..])
    }
}

impl HeldLog {
    /// The body's whole length, as the responder said it.
    pub fn body_bytes(&self) -> u64 {
        self.body_bytes
    }

    /// Writes the line with `sent` body bytes (at most the whole body) when there is a log.
    fn write(&self, sent: u64, log: Option<&mut AccessLog>, wall: SystemTime) {
        if let Some(log) = log {
            let entry = Entry {
                peer: self.peer.unwrap_or(IpAddr::from([0, 0, 0, 0])),
                request_line: &self.line,
                status: self.status,
                body_bytes: sent.min(self.body_bytes),
                referer: self.referer.shown(),
                user_agent: self.user_agent.shown(),
                user: self.user.shown(),
            };
            log.record(&entry, wall);
        }
    }

    /// The bytes its buffers hold on to.
    fn capacity(&self) -> usize {
        self.line.capacity()
            + self.referer.bytes.capacity()
            + self.user_agent.bytes.capacity()
            + self.user.bytes.capacity()
    }
}

/// One thread's records of responses no longer held, kept for the next, and the bytes of the
/// records out (held).
#[derive(Default, Debug)]
pub(crate) struct Spares {
    spare: Vec<HeldLog>,
    /// The buffers' bytes of the records handed out by [`Spares::hold`] and not given back.
    held_bytes: usize,
}

impl Spares {
    /// Whether one more response may be held: the records held now own less than
    /// [`HELD_BYTES_BUDGET`]. Otherwise the response is logged as it is answered.
    pub fn has_room(&self) -> bool {
        self.held_bytes < HELD_BYTES_BUDGET
    }

    /// A record holding a copy of `e`, from the spares when there is one.
    pub fn hold(&mut self, e: &Entry<'_>) -> HeldLog {
        let mut h = self.spare.pop().unwrap_or_default();
        h.peer = Some(e.peer);
        h.line.clear();
        h.line.extend_from_slice(e.request_line);
        h.referer.refill(e.referer);
        h.user_agent.refill(e.user_agent);
        h.user.refill(e.user);
        (h.status, h.body_bytes) = (e.status, e.body_bytes);
        self.held_bytes += h.capacity();
        h
    }

    /// Takes `h` back (its buffers unchanged since [`Spares::hold`]) and keeps it for the next
    /// hold, unless enough are kept or it grew large.
    fn give(&mut self, h: HeldLog) {
        self.held_bytes = self.held_bytes.saturating_sub(h.capacity());
        if kept_as_spare(&h, self.spare.len()) {
            self.spare.push(h);
        }
    }
}

impl Worker {
    /// A held response is over: its line written with `sent` body bytes (its status was
    /// counted when it was answered), its record kept for the next.
    pub(crate) fn held_done(&mut self, h: HeldLog, sent: u64) {
        h.write(sent, self.log.as_mut(), self.wall);
        self.held_logs.give(h);
    }
}

/// Whether `h` joins the `spares` kept: only while few are, and only if its buffers are small.
fn kept_as_spare(h: &HeldLog, spares: usize) -> bool {
    spares < MAX_SPARES && h.capacity() <= MAX_SPARE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_grown_large_is_not_kept_as_a_spare() {
        let mut h = HeldLog::default();
        h.line.extend_from_slice(b"GET /a HTTP/3.0");
        h.user_agent.refill(Some(b"curl/8"));
        assert!(kept_as_spare(&h, 0));
        assert!(!kept_as_spare(&h, MAX_SPARES));
        h.referer.refill(Some(&[b'r'; 16 * 1024]));
        assert!(!kept_as_spare(&h, 0));
    }

    fn entry<'a>(user_agent: &'a [u8]) -> Entry<'a> {
        Entry {
            peer: IpAddr::from([127, 0, 0, 1]),
            request_line: b"GET /big HTTP/2.0",
            status: 200,
            body_bytes: 1 << 20,
            referer: None,
            user_agent: Some(user_agent),
            user: None,
        }
    }

    #[test]
    fn the_records_held_at_once_stop_at_the_byte_budget_and_make_room_as_they_end() {
        let mut spares = Spares::default();
        let long = vec![b'u'; 16 * 1024];
        let mut held = Vec::new();
        while spares.has_room() {
            held.push(spares.hold(&entry(&long)));
            assert!(held.len() <= HELD_BYTES_BUDGET / long.len() + 1, "no limit");
        }
        // Each record owns at least its 16 KiB copy: the budget stops them at about 256.
        assert!(
            held.len() >= HELD_BYTES_BUDGET / (2 * long.len()),
            "{}",
            held.len()
        );
        let owned: usize = held.iter().map(HeldLog::capacity).sum();
        assert_eq!(spares.held_bytes, owned);
        assert!(owned >= HELD_BYTES_BUDGET);
        spares.give(held.pop().unwrap());
        assert!(spares.has_room(), "a record that ends makes room");
        for h in held.drain(..) {
            spares.give(h);
        }
        assert_eq!(spares.held_bytes, 0);
        // Small records from the spares count too, and go back to nothing.
        let small = spares.hold(&entry(b"curl/8"));
        assert!(spares.held_bytes > 0 && spares.has_room());
        spares.give(small);
        assert_eq!(spares.held_bytes, 0);
    }
}
