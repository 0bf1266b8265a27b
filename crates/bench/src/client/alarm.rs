//! The open loop's precise wake-up: a timerfd in the event loop's poll set.
//!
//! `epoll_wait` takes its timeout in whole milliseconds (mio rounds up) and the kernel adds its
//! timer slack, so a loop that sleeps until a page is due wakes up to a millisecond late, and in
//! the open loop that lateness is counted as the server's latency. A timerfd expires on a
//! high-resolution timer without slack and makes the epoll set readable at that instant, so the
//! same `epoll_wait` returns within microseconds of the deadline. The deadline is absolute on
//! the monotonic clock `Instant` reads, so the time the loop spends between reading the clock
//! and setting the timer does not make it later. It is one `timerfd_settime` when the loop's
//! next deadline changes, and none otherwise; it is never read: it is registered
//! edge-triggered, every expiry is a new edge, and setting it again resets its count. The closed
//! loop does not use it: its deadlines are timeouts, which need no such precision, and its cost
//! per request stays as it was.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::time::{
    clock_gettime, timerfd_create, timerfd_settime, ClockId, Itimerspec, TimerfdClockId,
    TimerfdFlags, TimerfdTimerFlags, Timespec,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::time::Instant;

/// The alarm's token: no Webchild has it (mio keeps `usize::MAX` for itself).
pub(super) const ALARM: Token = Token(usize::MAX - 1);

/// A one-shot timer that wakes the poll at a µs deadline.
pub(super) struct Alarm {
    fd: OwnedFd,
    /// The run's base instant on the monotonic clock, ns.
    base_ns: i128,
    /// The deadline it is set for (µs since the run's base), or `u64::MAX`.
    armed_at: u64,
}

impl Alarm {
    /// `base`: the instant deadlines count from (on Linux, `Instant` is `CLOCK_MONOTONIC`).
    pub(super) fn new(registry: &Registry, base: Instant) -> io::Result<Alarm> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), ALARM, Interest::READABLE)?;
        // Two clock reads a few ns apart: the base is placed on the clock to within them.
        let mono = clock_gettime(ClockId::Monotonic);
        let elapsed = base.elapsed().as_nanos() as i128;
        let base_ns = mono.tv_sec as i128 * 1_000_000_000 + mono.tv_nsec as i128 - elapsed;
        Ok(Alarm {
            fd,
            base_ns,
            armed_at: u64::MAX,
        })
    }

    /// Makes the poll wake at `at` (µs since base; `now` is the current time). Nothing is done
    /// when it is already set for `at` and that has not passed.
    #[inline]
    pub(super) fn wake_at(&mut self, at: u64, now: u64) -> io::Result<()> {
        if at <= now || (at == self.armed_at && self.armed_at > now) {
            return Ok(());
        }
        let ns = self.base_ns + i128::from(at) * 1_000;
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (ns / 1_000_000_000) as i64,
                tv_nsec: (ns % 1_000_000_000) as _,
            },
        };
        timerfd_settime(&self.fd, TimerfdTimerFlags::ABSTIME, &spec)?;
        self.armed_at = at;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};
    use std::time::{Duration, Instant};

    /// The poll wakes within a fraction of a millisecond of a 300 µs deadline. The best try is
    /// compared, and tries go on (up to 2000, well under a second each) until one is on time,
    /// so a busy machine that delays most wake-ups cannot make it fail by chance; a millisecond
    /// poll timeout could never get under 700 µs late here, however many tries.
    #[test]
    fn alarm_wakes_the_poll_within_a_fraction_of_a_millisecond() {
        let mut poll = Poll::new().unwrap();
        let base = Instant::now();
        let mut alarm = Alarm::new(poll.registry(), base).unwrap();
        let mut events = Events::with_capacity(4);
        let now_us = || base.elapsed().as_micros() as u64;
        let mut best = u64::MAX;
        let mut tries = 0;
        while best >= 300 && tries < 2000 {
            tries += 1;
            let now = now_us();
            let at = now + 300;
            alarm.wake_at(at, now).unwrap();
            // The poll's own timeout is a safety net far beyond the deadline.
            poll.poll(&mut events, Some(Duration::from_millis(50)))
                .unwrap();
            let woke = now_us();
            assert!(
                events.iter().any(|e| e.token() == ALARM),
                "the alarm, not the timeout, woke the poll"
            );
            assert!(woke >= at, "woke {} µs early", at - woke);
            best = best.min(woke - at);
        }
        println!("best lateness: {best} µs in {tries} tries");
        assert!(best < 300, "best lateness {best} µs");
    }
}
