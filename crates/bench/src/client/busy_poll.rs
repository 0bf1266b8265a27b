//! Spin, then sleep: how the event loop waits when it has nothing to do.
//!
//! A client that goes to sleep in `epoll_wait` the moment it runs out of work makes the server
//! pay for waking it: on loopback, the server's `write` of the next response runs the client's
//! TCP input and its wake-up (an inter-processor interrupt; on a virtual machine, an exit to the
//! hypervisor too) on the server's core, in the server's CPU time. The cheaper the client, the
//! more often it sleeps, and the fewer requests per second a server at 100% of its core can
//! answer. Measured against nginx over HTTPS (bench/README.md): sleeping at once, flint left
//! nginx at 0.88–0.97× the requests/s it reached under wrk (which spends more per request, so
//! it is rarely idle); polling for a few microseconds first took that away, at a small cost in
//! client CPU per request, which still stays under wrk's.
//!
//! So before it blocks, the loop polls without blocking for up to `budget` (`--busy-poll`;
//! zero turns it off). A spin that finds nothing is a miss; after [`MISSES`] misses in a row (a
//! slow server, or a paced open loop, where the next event is far off) the loop sleeps at once
//! for the next [`BACKOFF`] waits before it tries again, so a client with nothing to do wastes
//! at most a few spins out of a hundred waits. A spin lasts at most the budget, so a server
//! sharing the core waits at most that long for it. (Yielding between polls was tried: on a
//! dedicated core `sched_yield` cost more CPU per request than the polls themselves.)
//!
//! With many requests in flight on each connection (`--streams N`, N > 1), a spin that found
//! events only late, after more than half the budget, counts as a miss too. There a sleeping
//! client wakes to several responses at once, so a sleep costs little per request, while late
//! hits kept the client polling and taking the server's output a segment at a time: against
//! nginx over HTTP/2 at `-m 100`, whose responses trickle in every few microseconds, spins kept
//! finding events late and never paused, two to fifteen nonblocking `epoll_wait` calls a
//! request and 1.2 times h2load's CPU per request (docs/bench-http2.md, "What the server pays
//! for"). With one request in flight per connection every response is a wake-up, and the same
//! rule made nginx pay for ten times as many (HTTP/1.1 keep-alive: 0.17-0.21 sleeps a request
//! against 0.02, server CPU per request 1.09 to 1.16 times): there a late hit is still a hit.

use mio::{Events, Poll};
use std::io;
use std::time::{Duration, Instant};

/// Misses in a row after which spinning pauses.
const MISSES: u32 = 4;
/// Waits that sleep at once after [`MISSES`] misses in a row.
const BACKOFF: u32 = 64;

/// The waiting policy of one event loop.
#[derive(Debug)]
pub(super) struct Waiter {
    budget: Duration,
    /// A hit after more than half the budget is a miss (many requests in flight a connection).
    late_is_miss: bool,
    misses: u32,
    /// Waits left that sleep without spinning.
    sleep_at_once: u32,
}

impl Waiter {
    pub(super) fn new(budget: Duration, late_is_miss: bool) -> Waiter {
        Waiter {
            budget,
            late_is_miss,
            misses: 0,
            sleep_at_once: 0,
        }
    }

    /// Fills `events` with what is ready, waiting up to `timeout`: spinning first, within the
    /// budget, then sleeping. When events are already ready this is one `epoll_wait`, as a
    /// plain blocking poll would be.
    pub(super) fn wait(
        &mut self,
        poll: &mut Poll,
        events: &mut Events,
        timeout: Duration,
    ) -> io::Result<()> {
        if self.budget.is_zero() || timeout.is_zero() {
            return poll.poll(events, Some(timeout));
        }
        if self.sleep_at_once > 0 {
            self.sleep_at_once -= 1;
            return poll.poll(events, Some(timeout));
        }
        let limit = self.budget.min(timeout);
        let start = Instant::now();
        loop {
            poll.poll(events, Some(Duration::ZERO))?;
            if !events.is_empty() {
                self.hit(start.elapsed());
                return Ok(());
            }
            let spent = start.elapsed();
            if spent >= limit {
                // A deadline that cut the spin short says nothing about the server.
                if limit == self.budget {
                    self.miss();
                }
                // (The spin may have overrun a short `timeout`: then this poll does not block.)
                return poll.poll(events, Some(timeout.saturating_sub(spent)));
            }
            std::hint::spin_loop();
        }
    }

    /// A spin that found events after `spun` (late in the budget, with `late_is_miss`: a miss).
    fn hit(&mut self, spun: Duration) {
        if self.late_is_miss && spun * 2 > self.budget {
            self.miss();
        } else {
            self.misses = 0;
        }
    }

    fn miss(&mut self) {
        self.misses += 1;
        if self.misses >= MISSES {
            self.misses = 0;
            self.sleep_at_once = BACKOFF;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::net::UdpSocket;
    use mio::{Interest, Token};

    fn quiet_poll() -> (Poll, UdpSocket) {
        let poll = Poll::new().unwrap();
        let mut sock = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        poll.registry()
            .register(&mut sock, Token(0), Interest::READABLE)
            .unwrap();
        (poll, sock)
    }

    #[test]
    fn returns_at_once_with_what_is_ready() {
        let (mut poll, sock) = quiet_poll();
        let sender = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        sender.send_to(b"x", sock.local_addr().unwrap()).unwrap();
        let mut events = Events::with_capacity(4);
        // A budget long enough that the hit is early even on a loaded machine.
        let mut w = Waiter::new(Duration::from_secs(2), true);
        let start = Instant::now();
        w.wait(&mut poll, &mut events, Duration::from_secs(5))
            .unwrap();
        assert!(start.elapsed() < Duration::from_secs(1));
        assert_eq!(events.iter().count(), 1);
        assert_eq!((w.misses, w.sleep_at_once), (0, 0));
    }

    #[test]
    fn misses_in_a_row_stop_the_spinning_for_a_while() {
        let (mut poll, _sock) = quiet_poll();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::from_micros(20), false);
        for i in 1..MISSES {
            w.wait(&mut poll, &mut events, Duration::from_millis(1))
                .unwrap();
            assert!(events.is_empty());
            assert_eq!(w.misses, i);
        }
        w.wait(&mut poll, &mut events, Duration::from_millis(1))
            .unwrap();
        assert_eq!((w.misses, w.sleep_at_once), (0, BACKOFF));
        // The backoff's waits do not spin, so they count neither hits nor misses.
        w.wait(&mut poll, &mut events, Duration::from_millis(1))
            .unwrap();
        assert_eq!((w.misses, w.sleep_at_once), (0, BACKOFF - 1));
    }

    #[test]
    fn a_late_hit_is_a_miss_and_an_early_one_clears_them() {
        let mut w = Waiter::new(Duration::from_micros(8), true);
        w.hit(Duration::from_micros(5));
        w.hit(Duration::from_micros(7));
        assert_eq!(w.misses, 2);
        w.hit(Duration::from_micros(4));
        assert_eq!(w.misses, 0);
        for _ in 0..MISSES {
            w.hit(Duration::from_micros(6));
        }
        assert_eq!((w.misses, w.sleep_at_once), (0, BACKOFF));
        // One request in flight a connection: a late hit is a hit.
        let mut w = Waiter::new(Duration::from_micros(8), false);
        w.hit(Duration::from_micros(7));
        assert_eq!(w.misses, 0);
    }

    #[test]
    fn a_deadline_shorter_than_the_budget_is_not_a_miss() {
        let (mut poll, _sock) = quiet_poll();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::from_millis(50), false);
        let start = Instant::now();
        w.wait(&mut poll, &mut events, Duration::from_micros(200))
            .unwrap();
        assert!(start.elapsed() < Duration::from_millis(40));
        assert_eq!(w.misses, 0);
        // A deadline so near that the first poll overruns it: no wait at all, and no panic.
        w.wait(&mut poll, &mut events, Duration::from_nanos(1))
            .unwrap();
        assert_eq!(w.misses, 0);
    }

    #[test]
    fn zero_budget_sleeps_at_once() {
        let (mut poll, _sock) = quiet_poll();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::ZERO, false);
        w.wait(&mut poll, &mut events, Duration::from_millis(1))
            .unwrap();
        assert_eq!((w.misses, w.sleep_at_once), (0, 0));
    }
}
