//! Per-thread deadlines: one per Webchild, preallocated, nothing cancelled.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// "No deadline".
const NONE: u64 = u64::MAX;

/// One deadline per Webchild in a binary heap, without cancelling anything.
///
/// Deadlines change far more often than they expire (every keep-alive request moves the response
/// timeout), so moving a deadline later only stores it (`want`): the heap entry already queued
/// fires early, sees the later `want`, and is pushed again. Moving it earlier pushes a new entry
/// and makes the old one stale (its generation no longer matches). A slot has at most one live
/// entry, so compacting at capacity keeps the heap within its preallocated size.
pub(super) struct Timers {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    want: Vec<u64>,
    queued: Vec<u64>,
    gen: Vec<u32>,
}

impl Timers {
    pub(super) fn new(slots: usize) -> Self {
        Timers {
            heap: BinaryHeap::with_capacity(2 * slots + 16),
            want: vec![NONE; slots],
            queued: vec![NONE; slots],
            gen: vec![0; slots],
        }
    }

    #[inline]
    pub(super) fn arm(&mut self, slot: usize, at: u64) {
        self.want[slot] = at;
        if at < self.queued[slot] {
            self.push(slot, at);
        }
    }

    /// Moves the deadline to `at` if that is earlier, else leaves it: for a wake-up of its own
    /// that must not put off the deadline already wanted (whose owner re-arms it when woken).
    #[inline]
    pub(super) fn arm_by(&mut self, slot: usize, at: u64) {
        if at < self.want[slot] {
            self.arm(slot, at);
        }
    }

    pub(super) fn disarm(&mut self, slot: usize) {
        self.want[slot] = NONE;
    }

    fn push(&mut self, slot: usize, at: u64) {
        if self.heap.len() == self.heap.capacity() {
            let gen = &self.gen;
            self.heap.retain(|&Reverse((_, s, g))| gen[s as usize] == g);
        }
        self.gen[slot] = self.gen[slot].wrapping_add(1);
        self.queued[slot] = at;
        self.heap.push(Reverse((at, slot as u32, self.gen[slot])));
    }

    /// The earliest queued entry (possibly stale or early: then the loop just wakes once more).
    pub(super) fn next_at(&self) -> u64 {
        self.heap.peek().map_or(NONE, |e| e.0 .0)
    }

    /// A slot whose deadline has passed, if any; its deadline is cleared.
    pub(super) fn pop_expired(&mut self, now: u64) -> Option<usize> {
        while let Some(&Reverse((at, s, g))) = self.heap.peek() {
            if at > now {
                return None;
            }
            self.heap.pop();
            let slot = s as usize;
            if self.gen[slot] != g {
                continue;
            }
            self.queued[slot] = NONE;
            let want = self.want[slot];
            if want <= now {
                self.want[slot] = NONE;
                return Some(slot);
            }
            if want != NONE {
                self.push(slot, want);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_a_deadline_later_fires_at_the_later_time_only() {
        let mut t = Timers::new(2);
        t.arm(0, 100);
        t.arm(0, 300); // later: stored, not pushed
        assert_eq!(t.heap.len(), 1);
        assert_eq!(t.pop_expired(150), None); // the early entry re-queues itself
        assert_eq!(t.pop_expired(299), None);
        assert_eq!(t.pop_expired(300), Some(0));
        assert_eq!(t.pop_expired(10_000), None);
    }

    #[test]
    fn moving_a_deadline_earlier_supersedes_the_queued_one() {
        let mut t = Timers::new(1);
        t.arm(0, 500);
        t.arm(0, 100);
        assert_eq!(t.pop_expired(100), Some(0));
        assert_eq!(
            t.pop_expired(1_000),
            None,
            "the stale 500 entry must not fire"
        );
    }

    #[test]
    fn arming_by_a_later_time_keeps_the_earlier_deadline() {
        let mut t = Timers::new(1);
        t.arm(0, 500);
        t.arm_by(0, 900);
        assert_eq!(t.pop_expired(500), Some(0));
        t.arm(0, 2_000);
        t.arm_by(0, 1_000);
        assert_eq!(t.pop_expired(1_000), Some(0));
        assert_eq!(t.pop_expired(10_000), None);
    }

    #[test]
    fn disarmed_deadlines_never_fire() {
        let mut t = Timers::new(1);
        t.arm(0, 100);
        t.disarm(0);
        assert_eq!(t.pop_expired(1_000), None);
    }

    #[test]
    fn timer_heap_never_grows_past_its_preallocated_capacity() {
        let mut t = Timers::new(4);
        let cap = t.heap.capacity();
        // Alternating later/earlier deadlines leave stale entries behind; compaction bounds them.
        for i in 0..10_000u64 {
            let slot = (i % 4) as usize;
            t.arm(slot, 1_000_000 - i);
        }
        assert_eq!(t.heap.capacity(), cap);
    }
}
