//! The pause between two polls of a readiness wait ([`Backoff`]): [`POLL`] at first, doubling to
//! [`Backoff::MAX`]. A process usually gets ready in its first few milliseconds, and is then
//! seen at once; one that never does (a server that hangs in its start-up) is polled ten times a
//! second, not two hundred, so that a check that reads `/proc/net/tcp` (thousands of lines on a
//! busy machine) does not take a core for the whole of the wait.

use crate::POLL;
use std::time::{Duration, Instant};

/// Growing pauses of a bounded wait.
#[derive(Debug, Clone)]
pub struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl Backoff {
    /// The longest pause: a readiness noticed at most this late.
    pub const MAX: Duration = Duration::from_millis(100);

    /// The first pause is [`POLL`].
    pub fn new() -> Backoff {
        Backoff { next: POLL }
    }

    /// Sleeps the next pause, never past `deadline`.
    pub fn pause(&mut self, deadline: Instant) {
        std::thread::sleep(self.next_pause(deadline));
    }

    /// The pause [`Backoff::pause`] sleeps: the next one, cut to what is left before `deadline`
    /// (zero once it has passed); the one after it grows.
    pub fn next_pause(&mut self, deadline: Instant) -> Duration {
        let left = deadline.saturating_duration_since(Instant::now());
        let pause = self.next.min(left);
        self.next = (self.next * 2).min(Self::MAX);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_cap_and_stop_at_the_deadline() {
        let mut b = Backoff::new();
        let far = Instant::now() + Duration::from_secs(3600);
        let seen: Vec<Duration> = (0..8).map(|_| b.next_pause(far)).collect();
        assert_eq!(seen[0], POLL);
        assert!(seen
            .windows(2)
            .all(|w| w[1] == (w[0] * 2).min(Backoff::MAX)));
        assert_eq!(*seen.last().unwrap(), Backoff::MAX);
        // A deadline already past: no pause at all.
        assert_eq!(b.next_pause(Instant::now()), Duration::ZERO);
    }
}
