//! QUIC's pacing on the client's sends: quiche gives each datagram the time it should leave
//! (`Datagram::at`, `SendInfo::at`). A datagram due within
//! [`PACING_SLACK_US`] goes now, in the GSO batch being filled; the first one due later is kept
//! aside (one a connection: quiche's times only grow, so nothing more is asked of the client
//! until it has gone), the batch ends before it, and the Webchild's timer is armed to its
//! time: the loop sends it then, first in the next batch. No thread, no sleep.
//!
//! With flint's configuration nothing is paced: it sets no congestion control, so quiche uses
//! CUBIC, whose send time is always the time `send` was called (only BBR2's pacer gives later
//! times; `enable_pacing` does not change that). This honours a time when the library gives
//! one. `FLINT_H3_NO_PACING` set at start skips the check: every datagram goes at once.

use super::super::NONE;
use http3::udp::gso::{fill_batch, Batch};
use std::net::SocketAddr;

/// A datagram the client wrote: its length, its peer, when it is due (µs of the run's clock).
pub(super) type Written = (usize, SocketAddr, u64);

/// Turns pacing off when set in the environment at start (read once a thread).
pub(super) const NO_PACING_ENV: &str = "FLINT_H3_NO_PACING";

/// A datagram due within this of now goes now. Each datagram kept costs the loop a wake-up and,
/// in the open loop, a `timerfd_settime` for its alarm (whose wake-up is precise); in the
/// closed loop (closed-loop lanes, say) the wait is `epoll_wait`'s, whole milliseconds. A
/// datagram due sooner than this would leave barely later than now, for those system calls.
pub(super) const PACING_SLACK_US: u64 = 1_000;

thread_local! {
    static WANTED: bool = std::env::var_os(NO_PACING_ENV).is_none();
}

/// Whether sends are paced (`FLINT_H3_NO_PACING` not set).
pub(super) fn wanted() -> bool {
    WANTED.with(|w| *w)
}

/// Whether a datagram due `at` goes at `now` (within the slack). `now` was read at the event's
/// start and a big read since may have taken more than the slack: one that seems due later is
/// checked on the clock read again (`clock`), so that it is not kept by mistake (ending the
/// GSO batch, arming the timer, a turn of the loop later). The read is made only then.
#[inline]
fn due(at: u64, now: u64, clock: &mut impl FnMut() -> u64) -> bool {
    at <= now.saturating_add(PACING_SLACK_US) || at <= clock().saturating_add(PACING_SLACK_US)
}

/// One connection's datagram kept for its pacing time.
pub(super) struct Pacer {
    /// Pacing is on for this connection.
    pub(super) on: bool,
    /// A datagram's bytes (room for one, made once a Webchild).
    buf: Box<[u8]>,
    /// The datagram kept: its length, its peer, when it is due (µs of the run's clock).
    later: Option<(usize, SocketAddr, u64)>,
}

impl Pacer {
    pub(super) fn new() -> Pacer {
        Pacer {
            on: false,
            buf: vec![0; http3::MAX_DATAGRAM].into_boxed_slice(),
            later: None,
        }
    }

    /// A new connection: nothing kept, pacing as `on` says.
    pub(super) fn reset(&mut self, on: bool) {
        self.on = on;
        self.later = None;
    }

    /// When the datagram kept is due (NONE: none is kept).
    pub(super) fn due_at(&self) -> u64 {
        self.later.map_or(NONE, |(_, _, at)| at)
    }

    /// Whether a datagram is kept: the client is not asked for more until it has gone.
    #[inline]
    pub(super) fn holding(&self) -> bool {
        self.later.is_some()
    }

    /// One GSO batch of a flush into `out`: the datagram kept leads it once due (paced, by
    /// `paced_at`, the event's time; at once with None), then the client's datagrams (`send`)
    /// while they are due; the first due later is kept and the batch ends before it. None:
    /// nothing to send now. The flush (`h3/datagrams.rs`) and the tests go through this step.
    pub(super) fn fill(
        &mut self,
        out: &mut [u8],
        carry: &mut Option<(usize, usize, SocketAddr)>,
        gso: bool,
        paced_at: Option<u64>,
        mut clock: impl FnMut() -> u64,
        mut send: impl FnMut(&mut [u8]) -> Option<Written>,
    ) -> Option<Batch> {
        if carry.is_none() {
            *carry = match paced_at {
                Some(now) => self.release(out, now, &mut clock),
                None => self.release(out, u64::MAX, &mut || u64::MAX),
            };
        }
        let next = |b: &mut [u8]| {
            // Nothing more is asked of the client while a datagram waits for its time.
            if self.holding() {
                return None;
            }
            let d = send(b)?;
            match paced_at {
                Some(now) => self.admit(b, d, now, &mut clock),
                None => Some((d.0, d.1)),
            }
        };
        fill_batch(out, carry, gso, next)
    }

    /// A datagram the client just wrote at the start of `out` (`len` bytes to `to`, due `at`):
    /// `Some` to send it now, or `None` when it is due later, kept (copied aside).
    #[inline]
    fn admit(
        &mut self,
        out: &[u8],
        (len, to, at): Written,
        now: u64,
        clock: &mut impl FnMut() -> u64,
    ) -> Option<(usize, SocketAddr)> {
        if !self.on || due(at, now, clock) {
            return Some((len, to));
        }
        self.buf[..len].copy_from_slice(&out[..len]);
        self.later = Some((len, to, at));
        None
    }

    /// The datagram kept, if it is due by `now`, written at the start of `out` for the next
    /// batch to begin with (as `fill_batch`'s carry: `(0, len, to)`).
    fn release(
        &mut self,
        out: &mut [u8],
        now: u64,
        clock: &mut impl FnMut() -> u64,
    ) -> Option<(usize, usize, SocketAddr)> {
        let (len, to, at) = self.later?;
        if !due(at, now, clock) {
            return None;
        }
        self.later = None;
        out[..len].copy_from_slice(&self.buf[..len]);
        Some((0, len, to))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http3::udp::gso::{send_step, Gso, Step};

    /// Datagrams of 100 bytes, the i-th filled with i and due at `due[i]`.
    fn client(due: &[u64]) -> impl FnMut(&mut [u8]) -> Option<(usize, SocketAddr, u64)> + '_ {
        let to: SocketAddr = "127.0.0.1:443".parse().unwrap();
        let mut i = 0;
        move |b: &mut [u8]| {
            let at = *due.get(i)?;
            b[..100].fill(i as u8);
            i += 1;
            Some((100, to, at))
        }
    }

    /// What one flush at `now` sends: the datagrams' first bytes, batch by batch.
    fn flush(
        pacer: &mut Pacer,
        next: &mut impl FnMut(&mut [u8]) -> Option<(usize, SocketAddr, u64)>,
        now: u64,
    ) -> Vec<Vec<u8>> {
        flush_reading(pacer, next, now, || now)
    }

    /// As `flush`, with the clock read again giving what `clock` says.
    fn flush_reading(
        pacer: &mut Pacer,
        next: &mut impl FnMut(&mut [u8]) -> Option<(usize, SocketAddr, u64)>,
        now: u64,
        mut clock: impl FnMut() -> u64,
    ) -> Vec<Vec<u8>> {
        let mut out = vec![0u8; 10 * http3::MAX_DATAGRAM];
        let mut carry = None;
        let mut sent = Vec::new();
        loop {
            let Some(batch) = pacer.fill(
                &mut out,
                &mut carry,
                true,
                Some(now),
                &mut clock,
                &mut *next,
            ) else {
                return sent;
            };
            // The batch's datagrams one by one (GSO off here), each seen by its first byte.
            let (mut held, mut gso, mut firsts) = (Some(batch), Gso::connected(false), Vec::new());
            while held.is_some() {
                let one = |d: &[u8], _| {
                    firsts.push(d[0]);
                    Ok(d.len())
                };
                assert!(matches!(
                    send_step(&mut held, &out, &mut gso, -1, one),
                    Step::Sent(1)
                ));
            }
            sent.push(firsts);
        }
    }

    #[test]
    fn a_datagram_due_later_waits_for_its_time_and_leads_the_next_batch() {
        let mut pacer = Pacer::new();
        pacer.reset(true);
        // Two due now (one within the slack), then one 5 ms on, then one right after it.
        let due = [1_000, 1_900, 6_000, 6_100];
        let mut next = client(&due);
        assert_eq!(flush(&mut pacer, &mut next, 1_000), [vec![0, 1]]);
        assert_eq!(pacer.due_at(), 6_000, "the third kept, the timer's time");
        // Woken early (another event): still not due, nothing sent, nothing more asked.
        assert_eq!(flush(&mut pacer, &mut next, 4_000), Vec::<Vec<u8>>::new());
        // At its time it goes, and the one due with it in the same batch.
        assert_eq!(flush(&mut pacer, &mut next, 6_000), [vec![2, 3]]);
        assert_eq!(pacer.due_at(), NONE);
    }

    #[test]
    fn a_datagram_that_seems_due_later_goes_now_if_the_clock_read_again_says_it_is_due() {
        let mut pacer = Pacer::new();
        pacer.reset(true);
        // The event began at 1,000; a long read since: the clock now says 7,000.
        let due = [1_000, 6_500, 7_500];
        let mut next = client(&due);
        let mut reads = 0;
        let clock = || {
            reads += 1;
            7_000
        };
        assert_eq!(
            flush_reading(&mut pacer, &mut next, 1_000, clock),
            [vec![0, 1, 2]]
        );
        assert_eq!(pacer.due_at(), NONE);
        assert_eq!(reads, 2, "read again only for those that seemed due later");
    }

    #[test]
    fn without_pacing_every_datagram_goes_at_once() {
        let mut pacer = Pacer::new();
        pacer.reset(false);
        let due = [1_000, 6_000, 9_000];
        let mut next = client(&due);
        assert_eq!(flush(&mut pacer, &mut next, 1_000), [vec![0, 1, 2]]);
        assert_eq!(pacer.due_at(), NONE);
    }
}
