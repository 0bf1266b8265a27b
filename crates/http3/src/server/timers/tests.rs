//! The heap against a table of slots (deadline, generation) the test moves as a server would,
//! each change touched: what it gives is always the table's earliest.

use super::Timers;
use std::time::{Duration, Instant};

/// Slots as the server holds them: per slot, its connection's deadline and generation.
struct Table {
    at: Instant,
    slots: Vec<Option<(Instant, u32)>>,
    timers: Timers,
}

impl Table {
    fn new(n: usize) -> Table {
        Table {
            at: Instant::now(),
            slots: vec![None; n],
            timers: Timers::default(),
        }
    }

    fn secs(&self, s: u64) -> Instant {
        self.at + Duration::from_secs(s)
    }

    /// Slot `i` now has `e`, and is touched (as the server does when it acts on it).
    fn set(&mut self, i: usize, e: Option<(Instant, u32)>) {
        self.slots[i] = e;
        self.timers.touch(i as u32);
    }

    /// The heap's earliest, after a refresh, checked against the table's.
    fn earliest(&mut self) -> Option<Instant> {
        let slots = &self.slots;
        self.timers.refresh_with(|i| slots[i]);
        let got = self.timers.top();
        let scan = self.slots.iter().flatten().map(|&(d, _)| d).min();
        assert_eq!(got, scan, "the heap's earliest is the table's");
        got
    }
}

#[test]
fn a_reused_slot_is_known_by_its_new_generation() {
    let mut t = Table::new(2);
    let (early, late) = (t.secs(10), t.secs(20));
    t.set(0, Some((early, 0)));
    t.set(1, Some((late, 0)));
    assert_eq!(t.earliest(), Some(early));
    // Slot 0's connection ends, and a new one takes the slot with the same deadline: the old
    // entry, equal but for its generation, is not the new connection's.
    t.set(0, None);
    assert_eq!(t.earliest(), Some(late));
    t.set(0, Some((early, 1)));
    assert_eq!(t.earliest(), Some(early));
    assert_eq!(t.timers.pop_due(early), Some(0));
    assert_eq!(t.timers.pop_due(early), None, "each slot comes once");
    // Its timers run, it ends: nothing of either generation stays.
    t.set(0, None);
    assert_eq!(t.earliest(), Some(late));
    assert_eq!(t.timers.pop_due(late), Some(1));
    t.set(1, None);
    assert_eq!(t.earliest(), None);
}

#[test]
fn a_deadline_moved_earlier_or_later_is_the_one_kept() {
    let mut t = Table::new(3);
    t.set(0, Some((t.secs(30), 0)));
    t.set(1, Some((t.secs(40), 0)));
    assert_eq!(t.earliest(), Some(t.secs(30)));
    t.set(1, Some((t.secs(5), 0)));
    assert_eq!(t.earliest(), Some(t.secs(5)));
    // Later again: the entry at 5 s is stale, not a deadline.
    t.set(1, Some((t.secs(50), 0)));
    assert_eq!(t.earliest(), Some(t.secs(30)));
    assert_eq!(t.timers.pop_due(t.secs(29)), None);
    assert_eq!(t.timers.pop_due(t.secs(30)), Some(0));
    assert_eq!(t.timers.pop_due(t.secs(49)), None);
    // Slot 0 popped is recomputed at the next refresh: it has a new deadline, slot 2 one too.
    t.set(0, Some((t.secs(60), 0)));
    t.set(2, Some((t.secs(45), 0)));
    assert_eq!(t.earliest(), Some(t.secs(45)));
    let due: Vec<u32> = std::iter::from_fn(|| t.timers.pop_due(t.secs(60))).collect();
    assert_eq!(due, [2, 1, 0], "earliest first, each once");
}

#[test]
fn stale_entries_are_dropped_in_place_keeping_every_live_one() {
    let n = 8;
    let mut t = Table::new(n);
    for i in 0..n {
        t.set(i, Some((t.secs(1000 + i as u64), 0)));
    }
    assert_eq!(t.earliest(), Some(t.secs(1000)));
    // Slot 0 goes back and forth between two deadlines (two equal live entries at times) and
    // slot 1 moves later each turn: stale entries pile up until a rebuild.
    let (mut most, mut rebuilds, mut before) = (0, 0, t.timers.heap.len());
    for k in 0..500u64 {
        let back = if k % 2 == 0 { 2000 } else { 1000 };
        t.set(0, Some((t.secs(back), 0)));
        t.set(1, Some((t.secs(3000 + k), 0)));
        t.earliest();
        let len = t.timers.heap.len();
        most = most.max(len);
        // A stale top is dropped one or two at a time; a rebuild leaves the live entries
        // alone, each once (slot 0's equal ones merged).
        if len + 10 < before {
            rebuilds += 1;
            assert_eq!(len, n, "after a rebuild, one entry per live slot");
        }
        before = len;
    }
    assert!(rebuilds > 0, "the stale entries outgrew the bound");
    assert!(most <= 2 * n + 64, "bounded: {most} entries");
    // Every live slot comes out once, in deadline order.
    let due: Vec<u32> = std::iter::from_fn(|| t.timers.pop_due(t.secs(4000))).collect();
    assert_eq!(due, [0, 2, 3, 4, 5, 6, 7, 1]);
}
