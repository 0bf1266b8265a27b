//! The open loop's precise wake-up: a timerfd in the event loop's poll set.
//!
//! `epoll_wait` takes its timeout in whole milliseconds (mio rounds up) and the kernel adds its
//! timer slack, so a loop that sleeps until a page is due wakes up to a millisecond late, and in
//! the open loop that lateness is counted as the server's latency. A timerfd expires on a
//! high-resolution timer without slack and makes the epoll set readable at that instant, so the
//! same `epoll_wait` returns within microseconds of the deadline. It is one `timerfd_settime`
//! when the loop's next deadline changes, and none otherwise; it is never read: it is registered
//! edge-triggered, every expiry is a new edge, and setting it again resets its count. The closed
//! loop does not use it: its deadlines are timeouts, which need no such precision, and its cost
//! per request stays as it was.

use mio::unix::SourceFd;
use mio::{Interest, Registry, Token};
use rustix::time::Timespec;
use rustix::time::{
    timerfd_create, timerfd_settime, Itimerspec, TimerfdClockId, TimerfdFlags, TimerfdTimerFlags,
};
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

/// The alarm's token: no Webchild has it (mio keeps `usize::MAX` for itself).
pub(super) const ALARM: Token = Token(usize::MAX - 1);

/// A one-shot timer that wakes the poll at a µs deadline.
pub(super) struct Alarm {
    fd: OwnedFd,
    /// The deadline it is set for (µs since the run's base), or `u64::MAX`.
    armed_at: u64,
}

impl Alarm {
    pub(super) fn new(registry: &Registry) -> io::Result<Alarm> {
        let fd = timerfd_create(
            TimerfdClockId::Monotonic,
            TimerfdFlags::NONBLOCK | TimerfdFlags::CLOEXEC,
        )?;
        registry.register(&mut SourceFd(&fd.as_raw_fd()), ALARM, Interest::READABLE)?;
        Ok(Alarm {
            fd,
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
        let us = at - now;
        let spec = Itimerspec {
            it_interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: Timespec {
                tv_sec: (us / 1_000_000) as i64,
                tv_nsec: (us % 1_000_000 * 1_000) as _,
            },
        };
        timerfd_settime(&self.fd, TimerfdTimerFlags::empty(), &spec)?;
        self.armed_at = at;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mio::{Events, Poll};
    use std::time::{Duration, Instant};

    /// The poll wakes within a fraction of a millisecond of a 300 µs deadline. The best of 20
    /// tries is compared, so a busy machine cannot make it fail by chance; a millisecond poll
    /// timeout could never get under 700 µs late here.
    #[test]
    fn alarm_wakes_the_poll_within_a_fraction_of_a_millisecond() {
        let mut poll = Poll::new().unwrap();
        let mut alarm = Alarm::new(poll.registry()).unwrap();
        let mut events = Events::with_capacity(4);
        let base = Instant::now();
        let now_us = || base.elapsed().as_micros() as u64;
        let mut best = u64::MAX;
        for _ in 0..20 {
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
        println!("best lateness: {best} µs");
        assert!(best < 300, "best lateness {best} µs");
    }
}
