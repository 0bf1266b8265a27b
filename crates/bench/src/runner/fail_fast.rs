//! Fail fast: a run whose every attempt has failed the same way for a second stops, with the
//! reason, rather than failing thousands more times for its whole duration (a closed port,
//! `--http 2` against a server without HTTP/2, a certificate refused, every file missing).
//!
//! The rule, over the live counts every thread already publishes (warm-up included): at least
//! [`GRACE`] since the run's start, at least [`MIN_ATTEMPTS`] failures, every one of one kind,
//! and not one success. One success disables it for the run. The coordinating thread checks it
//! (a sum over the threads' slots, at most every 100 ms) and acts on a verdict that has held for
//! [`CONFIRM`]; the threads only see it at their publishing tick, so nothing is added per
//! request. `--no-fail-fast` turns it off.

use crate::progress::Counts;
use crate::stats::{ErrorKind, GaveUp};
use std::time::Duration;

/// How long every attempt must have failed the same way.
pub const GRACE: Duration = Duration::from_secs(1);
/// Fewer failures than this say too little (one slow connect timing out, say).
pub const MIN_ATTEMPTS: u64 = 3;
/// The verdict must hold again this much later, longer than a thread's publishing period: a
/// thread's counters are published field by field, so one read may see its errors of now and
/// its successes of 100 ms ago; by the second read every thread has published since the first.
pub const CONFIRM: Duration = Duration::from_millis(150);

/// The verdict on `total` (every thread's counts) at `elapsed` since the run's start: `Some`
/// when the run should stop.
pub fn verdict(total: &Counts, elapsed: Duration) -> Option<GaveUp> {
    if elapsed < GRACE || total.errors < MIN_ATTEMPTS {
        return None;
    }
    let kind = *ErrorKind::ALL.get(total.failing.checked_sub(1)? as usize)?;
    // A status error is a response too: no success means no response beyond the errors. Any
    // other failure is not a response: then none at all.
    let failed_responses = if ErrorKind::STATUSES.contains(&kind) {
        total.errors
    } else {
        0
    };
    (total.requests == failed_responses).then_some(GaveUp {
        kind,
        attempts: total.errors,
        after: elapsed,
        tcp_answered: false,
    })
}

/// The coordinating thread's judge: [`verdict`], held for [`CONFIRM`] before it counts.
#[derive(Debug, Default)]
pub struct Judge {
    /// When the verdict was first `Some` in the current unbroken run of them.
    since: Option<Duration>,
}

impl Judge {
    /// The verdict on `total` at `elapsed`, once it has held for [`CONFIRM`].
    pub fn judge(&mut self, total: &Counts, elapsed: Duration) -> Option<GaveUp> {
        let Some(gave_up) = verdict(total, elapsed) else {
            self.since = None;
            return None;
        };
        let since = *self.since.get_or_insert(elapsed);
        (elapsed - since >= CONFIRM).then_some(gave_up)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::progress::{combine, with_failure, MIXED_FAILURES, NO_FAILURE};

    fn failing(kinds: &[ErrorKind]) -> Counts {
        let mut c = Counts::default();
        for &k in kinds {
            c.errors += 1;
            c.failing = with_failure(c.failing, k);
        }
        c
    }

    const SECOND: Duration = GRACE;

    #[test]
    fn a_second_of_one_kind_of_failure_stops_the_run() {
        let refused = [ErrorKind::ConnectRefused; 3];
        let gave_up = verdict(&failing(&refused), SECOND).expect("stopped");
        assert_eq!(gave_up.kind, ErrorKind::ConnectRefused);
        assert_eq!(gave_up.attempts, 3);
        // Not before the grace, nor with too few attempts.
        assert_eq!(verdict(&failing(&refused), SECOND / 2), None);
        assert_eq!(verdict(&failing(&refused[..2]), SECOND), None);
    }

    #[test]
    fn two_kinds_of_failure_or_one_success_do_not() {
        let mixed = [
            ErrorKind::ConnectRefused,
            ErrorKind::ConnectRefused,
            ErrorKind::ConnectTimeout,
            ErrorKind::ConnectRefused,
        ];
        assert_eq!(verdict(&failing(&mixed), SECOND), None);
        let mut one_success = failing(&[ErrorKind::ConnectRefused; 5]);
        one_success.requests = 1;
        assert_eq!(verdict(&one_success, SECOND), None);
    }

    #[test]
    fn error_statuses_are_responses_and_stop_only_when_every_response_is_one() {
        let mut all_404 = failing(&[ErrorKind::Status4xx; 10]);
        all_404.requests = 10;
        assert_eq!(
            verdict(&all_404, SECOND).map(|g| g.kind),
            Some(ErrorKind::Status4xx)
        );
        all_404.requests = 11;
        assert_eq!(verdict(&all_404, SECOND), None);
    }

    #[test]
    fn the_verdict_counts_only_once_it_has_held_for_a_while() {
        let refused = failing(&[ErrorKind::ConnectRefused; 3]);
        let mut judge = Judge::default();
        assert_eq!(judge.judge(&refused, SECOND), None);
        assert!(judge.judge(&refused, SECOND + CONFIRM).is_some());
        // A success in between starts it over.
        let mut judge = Judge::default();
        assert_eq!(judge.judge(&refused, SECOND), None);
        let mut answered = refused;
        answered.requests = 1;
        assert_eq!(judge.judge(&answered, SECOND + CONFIRM / 2), None);
        assert_eq!(judge.judge(&refused, SECOND + CONFIRM), None);
        assert!(judge.judge(&refused, SECOND + 2 * CONFIRM).is_some());
    }

    #[test]
    fn hosts_that_stopped_for_one_reason_add_their_attempts() {
        let at = |kind, attempts, ms| GaveUp {
            kind,
            attempts,
            after: Duration::from_millis(ms),
            tcp_answered: false,
        };
        let a = at(ErrorKind::ConnectRefused, 100, 1150);
        let b = at(ErrorKind::ConnectRefused, 120, 1200);
        let both = GaveUp::merge(Some(a), Some(b)).unwrap();
        assert_eq!(both, at(ErrorKind::ConnectRefused, 220, 1200));
        assert_eq!(GaveUp::merge(None, Some(b)), Some(b));
        let other = at(ErrorKind::Reset, 5, 1300);
        assert_eq!(GaveUp::merge(Some(a), Some(other)), Some(a));
        // One host whose TCP port answered is enough to say HTTP/3 may be off there.
        let answered = GaveUp {
            tcp_answered: true,
            ..b
        };
        assert!(GaveUp::merge(Some(a), Some(answered)).unwrap().tcp_answered);
        assert!(GaveUp::merge(Some(answered), Some(a)).unwrap().tcp_answered);
    }

    #[test]
    fn signatures_combine_across_threads() {
        let refused = with_failure(NO_FAILURE, ErrorKind::ConnectRefused);
        assert_eq!(combine(NO_FAILURE, refused), refused);
        assert_eq!(combine(refused, refused), refused);
        let reset = with_failure(NO_FAILURE, ErrorKind::Reset);
        assert_eq!(combine(refused, reset), MIXED_FAILURES);
        assert_eq!(combine(MIXED_FAILURES, NO_FAILURE), MIXED_FAILURES);
    }
}
