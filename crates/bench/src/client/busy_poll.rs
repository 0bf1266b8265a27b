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
//!
//! Sleeping itself comes in two steps: a nap on a timer first, when the loop has one
//! (`read_slack.rs`: a share of the mean response time, so that responses that trickle in are
//! read together without the server waking the client for each), then `epoll_wait`.

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
    /// How long to sleep on a timer before sleeping in `epoll_wait` (`read_slack.rs`); zero:
    /// sleep in `epoll_wait` at once.
    nap: Duration,
}

impl Waiter {
    pub(super) fn new(budget: Duration, late_is_miss: bool) -> Waiter {
        Waiter {
            budget,
            late_is_miss,
            misses: 0,
            sleep_at_once: 0,
            nap: Duration::ZERO,
        }
    }

    /// Naps of `nap` from now on before each sleep (zero: none).
    pub(super) fn set_nap(&mut self, nap: Duration) {
        self.nap = nap;
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
        if timeout.is_zero() {
            return poll.poll(events, Some(timeout));
        }
        if self.budget.is_zero() {
            return self.sleep(poll, events, timeout);
        }
        if self.sleep_at_once > 0 {
            self.sleep_at_once -= 1;
            return self.sleep(poll, events, timeout);
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
                return self.sleep(poll, events, timeout.saturating_sub(spent));
            }
            std::hint::spin_loop();
        }
    }

    /// Sleeps until an event or `timeout`: first, when a nap is set and the deadline is further
    /// off, on a timer, where the server's writes do not wake the client (`read_slack.rs`), and
    /// then in `epoll_wait` only if the nap found nothing.
    fn sleep(&self, poll: &mut Poll, events: &mut Events, timeout: Duration) -> io::Result<()> {
        if self.nap.is_zero() || timeout <= self.nap {
            return poll.poll(events, Some(timeout));
        }
        let start = Instant::now();
        std::thread::sleep(self.nap);
        poll.poll(events, Some(Duration::ZERO))?;
        if !events.is_empty() {
            return Ok(());
        }
        poll.poll(events, Some(timeout.saturating_sub(start.elapsed())))
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
    fn a_nap_reads_what_arrived_during_it_after_it() {
        let (mut poll, sock) = quiet_poll();
        let to = sock.local_addr().unwrap();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::ZERO, false);
        let nap = Duration::from_millis(30);
        w.set_nap(nap);
        let start = Instant::now();
        let sender = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
            s.send_to(b"x", to).unwrap();
        });
        w.wait(&mut poll, &mut events, Duration::from_secs(5))
            .unwrap();
        // Read once the nap was over, not when it arrived (had the sender been later than the
        // nap, the wait would have slept in `epoll_wait` and returned on its arrival, later).
        assert!(start.elapsed() >= nap, "{:?}", start.elapsed());
        assert_eq!(events.iter().count(), 1);
        sender.join().unwrap();
    }

    #[test]
    fn a_nap_that_finds_nothing_sleeps_until_the_deadline_and_none_is_longer_than_it() {
        let (mut poll, _sock) = quiet_poll();
        let mut events = Events::with_capacity(4);
        let mut w = Waiter::new(Duration::ZERO, false);
        w.set_nap(Duration::from_millis(2));
        let start = Instant::now();
        w.wait(&mut poll, &mut events, Duration::from_millis(40))
            .unwrap();
        assert!(events.is_empty());
        assert!(
            start.elapsed() >= Duration::from_millis(39),
            "{:?}",
            start.elapsed()
        );
        // A deadline nearer than the nap: no nap, the deadline is kept.
        w.set_nap(Duration::from_secs(2));
        let start = Instant::now();
        w.wait(&mut poll, &mut events, Duration::from_millis(3))
            .unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "{:?}",
            start.elapsed()
        );
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
