//! Lanes over streams (HTTP/2 and HTTP/3): when every page is one file and `--streams N` is
//! more than one, each stream is a page of its own, N in flight on one connection. What does
//! not depend on the wire is here, for both: when a lane's next page is picked, the exchange a
//! lane's page is, and when closed-loop lanes are refilled (`H2_REFILL_SHARE`).

use super::exchange::Exchange;
use super::page::Child;
use super::page_flow;
use super::{ThreadState, NONE};
use crate::config::H2_REFILL_SHARE;

/// What a free lane has to send.
pub(super) enum Lane {
    /// The Webchild's current page (`ch.page`): picked now, or before, and not sent yet.
    Page,
    /// Open loop: the next page's slot is still to come.
    SlotAhead,
    /// The quota is done: no page left to pick.
    QuotaDone,
}

/// The page a free lane sends: the one picked and not sent yet (`fresh`), else the next one,
/// picked now (in the open loop once its slot has come). `fresh` is true after `Lane::Page`:
/// the caller clears it once the page's request is on its way.
#[inline]
pub(super) fn next_lane(
    fresh: &mut bool,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    now: u64,
) -> Lane {
    if *fresh {
        return Lane::Page;
    }
    // Open loop: a page starts at its slot on a free stream, or, when every stream was busy
    // at its slot, as soon as one is free (its send lag).
    if cx.sh.schedule.interval_us.is_some() && ch.next_intended_us as u64 > now {
        return Lane::SlotAhead;
    }
    if !page_flow::pick(ch, cx, now) {
        return Lane::QuotaDone;
    }
    *fresh = true;
    Lane::Page
}

/// A lane's page as an exchange: its one file, begun with the page (picked now, or before the
/// connection it waited for).
#[inline]
pub(super) fn lane_exchange(ch: &Child) -> Exchange {
    Exchange {
        file_start_us: ch.page.start_us,
        ..Exchange::new(ch.page)
    }
}

/// Whether closed-loop lanes wait to be refilled together (`H2_REFILL_SHARE`): true while
/// fewer than the batch of `limit` are free and a stream is still in flight (its end refills
/// again). `closed_loop`: no `--rate` (a page's slot is its start) and no `--think` (a lane's
/// timer is its start); `retry`: exchanges to send again, never held.
#[inline]
pub(super) fn refill_held(closed_loop: bool, limit: usize, in_flight: usize, retry: usize) -> bool {
    if !closed_loop || in_flight == 0 || retry > 0 {
        return false;
    }
    limit.saturating_sub(in_flight) < refill_batch(limit)
}

/// Frees the lanes whose think time (`--think`: each lane's end of thinking, oldest first) is
/// over at `now`.
#[inline]
pub(super) fn end_thinking(thinking: &mut std::collections::VecDeque<u64>, now: u64) {
    while thinking.front().is_some_and(|&t| t <= now) {
        thinking.pop_front();
    }
}

/// When the lanes next have work without a stream ending: the next page's open-loop slot
/// (`slot_ahead`: a stream is free for it) or the first thinking lane's end; `NONE`: neither.
#[inline]
pub(super) fn lane_wake(
    slot_ahead: bool,
    ch: &Child,
    thinking: &std::collections::VecDeque<u64>,
) -> u64 {
    let slot = if slot_ahead {
        ch.next_intended_us as u64
    } else {
        NONE
    };
    slot.min(thinking.front().copied().unwrap_or(NONE))
}

/// The fewest free lanes worth a write, of `limit` in flight at most.
fn refill_batch(limit: usize) -> usize {
    limit.div_ceil(H2_REFILL_SHARE).max(1)
}

#[cfg(test)]
mod tests {
    use super::{refill_batch, refill_held};

    #[test]
    fn lanes_refill_in_batches_of_an_eighth() {
        // Up to 8 lanes, each goes as it frees (h2load's -m 1 and the like are unchanged).
        for limit in 0..=8 {
            assert_eq!(refill_batch(limit), 1, "limit {limit}");
        }
        assert_eq!(refill_batch(9), 2);
        assert_eq!(refill_batch(10), 2);
        assert_eq!(refill_batch(100), 13);
        assert_eq!(refill_batch(1000), 125);
    }

    #[test]
    fn a_lane_waits_for_the_batch_only_in_the_closed_loop_with_streams_in_flight() {
        // 10 lanes, 9 in flight: one free, the batch is two.
        assert!(refill_held(true, 10, 9, 0));
        assert!(!refill_held(true, 10, 8, 0), "two free: the batch");
        assert!(
            !refill_held(true, 10, 0, 0),
            "none in flight: nothing would refill"
        );
        assert!(
            !refill_held(false, 10, 9, 0),
            "open loop or --think: never held"
        );
        assert!(
            !refill_held(true, 10, 9, 1),
            "an exchange to send again goes at once"
        );
        assert!(
            !refill_held(true, 8, 7, 0),
            "up to 8 lanes each goes as it frees"
        );
    }
}
