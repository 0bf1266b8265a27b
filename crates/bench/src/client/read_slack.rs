//! Read slack: how late the client may read a response, so that the server need not wake it.
//!
//! A client asleep in `epoll_wait` is woken by the server's write of the next response: on
//! loopback that wake-up (the client's TCP input, an inter-processor interrupt, on a virtual
//! machine an exit to the hypervisor) runs on the server's core, in the server's CPU time.
//! Spinning first (`busy_poll.rs`) avoids it when the next response is a few microseconds away;
//! when responses trickle in, each a little later than a spin lasts, the client sleeps between
//! nearly every two of them. Against nginx over HTTP/2 at `-m 100` that was 0.6 wake-ups a
//! request, nginx's CPU per request 1.2 times what it was under h2load (which, slower per
//! request, found the next responses already there more often: 0.15), and 0.83 of h2load's
//! requests/s (docs/bench-http2.md, "What the server pays for").
//!
//! So when a loop would sleep, it first naps on a timer, where the server's writes do not wake
//! it, and then polls: the responses that arrived meanwhile are read together, and the server
//! wrote them to a client that was not waiting. Only if the nap found nothing does the loop sleep
//! in `epoll_wait`. The nap delays reading a response that arrives during it, so it is bounded
//! by what that costs the measurement: a share (`--read-slack`, 1% by default) of the mean
//! response time of the thread's responses in the last interval, and no nap at all when that is
//! under [`MIN_NAP`] (a fast server, few requests in flight: the response times a nap would
//! blur are short, and spinning serves them). It is at most [`MAX_NAP`], so that a slow server
//! is still read in small batches.
//!
//! Only with more than one request in flight a connection (`--streams N`, N > 1), where
//! responses come in streams of small writes. One stream of a large body already wakes the
//! client once per large chunk (the receive low-water mark, `transport/low_water.rs`), and a
//! nap there let the socket's buffer fill and the server wait to write: h2o over TLS spent 1.01
//! to 1.07 times h2load's CPU per MiB on flint's traffic with naps, 0.95 to 1.03 without (1 MiB,
//! 8 connections, two runs each).

use std::num::NonZeroU64;
use std::time::Duration;

/// Shorter naps cost the client a timer wake-up for little batching: none below this.
const MIN_NAP: Duration = Duration::from_micros(10);
/// The longest nap, whatever the response times.
const MAX_NAP: Duration = Duration::from_micros(100);

/// The nap of one event loop, from the mean response time of its recent responses.
#[derive(Debug)]
pub(super) struct ReadSlack {
    /// The share of the mean response time a nap may take (0: never nap).
    share: f64,
    /// The totals at the last [`ReadSlack::nap`]: responses and their summed times, µs.
    responses: u64,
    response_us: u64,
}

impl ReadSlack {
    /// `share`: `--read-slack` as a fraction. Makes the calling thread's timers precise to the
    /// microsecond when naps are on: Linux lets a normal thread's timers run up to 50 µs late
    /// (its timer slack), which would make every nap that much longer than its bound.
    pub(super) fn new(share: f64) -> ReadSlack {
        if share > 0.0 {
            // Best effort: without it naps are longer, never wrong.
            let _ = rustix::thread::set_current_timer_slack(NonZeroU64::new(1_000));
        }
        ReadSlack {
            share,
            responses: 0,
            response_us: 0,
        }
    }

    /// The nap for the next interval, given the thread's totals so far (responses and their
    /// summed response times, µs); `None` when no response came since the last call (keep the
    /// nap as it is).
    pub(super) fn nap(&mut self, responses: u64, response_us: u64) -> Option<Duration> {
        let n = responses.saturating_sub(self.responses);
        let us = response_us.saturating_sub(self.response_us);
        (self.responses, self.response_us) = (responses, response_us);
        if n == 0 {
            return None;
        }
        let mean_ns = us.saturating_mul(1_000) / n;
        let nap = Duration::from_nanos((mean_ns as f64 * self.share).round() as u64);
        Some(if nap < MIN_NAP {
            Duration::ZERO
        } else {
            nap.min(MAX_NAP)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_share_of_the_last_intervals_mean_response_time_within_bounds() {
        let mut s = ReadSlack::new(0.01);
        // 100 responses of 4 ms: 40 µs.
        assert_eq!(s.nap(100, 400_000), Some(Duration::from_micros(40)));
        // Nothing since: keep what there is.
        assert_eq!(s.nap(100, 400_000), None);
        // The next 10 took 500 µs each: 5 µs is below the minimum, no nap.
        assert_eq!(s.nap(110, 405_000), Some(Duration::ZERO));
        // 60 ms each: capped.
        assert_eq!(s.nap(111, 465_000), Some(MAX_NAP));
    }

    #[test]
    fn a_zero_share_never_naps() {
        let mut s = ReadSlack::new(0.0);
        assert_eq!(s.nap(10, 10_000_000), Some(Duration::ZERO));
    }
}
