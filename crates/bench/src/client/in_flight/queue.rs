//! The in-flight table seen as a queue, for a wire whose responses come back in the order its
//! requests left (HTTP/1.1 pipelining: a page's batch, or lanes of one-file pages): each
//! exchange's key is its sequence number on the connection, so that consecutive ones sit in
//! consecutive slots (each in its home), the oldest is found by one compare, and the walk in
//! order is the slots from the oldest's on, round the end of the table. Nothing probes, so a
//! table of the depth's next power of two is enough, and nothing is sent again from a queue
//! (its table keeps no room for that).

use super::{InFlight, InFlightSlot};
use crate::client::page::Child;
use crate::client::ThreadState;

/// One connection's exchanges in flight, oldest first.
pub(in crate::client) struct InFlightQueue<S> {
    table: InFlight<S>,
    /// The sequence number of the oldest in flight, and of the next one pushed.
    front: u64,
    back: u64,
}

impl<S: InFlightSlot> InFlightQueue<S> {
    /// A queue of at most `most` in flight at once (HTTP/1.1 pipelining: the depth, of which
    /// the one being read is out of the queue, so at most depth - 1 are in it).
    pub(in crate::client) fn new(most: usize) -> Self {
        // Sequence numbers step by one: consecutive ones, consecutive home slots. Those in
        // flight are `front..back`, fewer than the slots before a push (`most` at most, and
        // `most.next_power_of_two()` slots), so that no two share a home and the next one's
        // home (`back`'s, `slots` after `back - slots`, which left) is free: no probe.
        assert_eq!(S::KEY_SHIFT, 0, "a queue's keys are sequence numbers");
        InFlightQueue {
            table: InFlight::with_slots(most.max(1).next_power_of_two()),
            front: 0,
            back: 0,
        }
    }

    #[inline]
    pub(in crate::client) fn len(&self) -> usize {
        self.table.len()
    }

    #[inline]
    pub(in crate::client) fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Puts `s` behind the others in flight: in its home slot, free while fewer than the
    /// table's slots are in flight (the one there before it went `capacity` pushes ago).
    #[inline]
    pub(in crate::client) fn push_back(&mut self, s: S) {
        self.push_back_with(|slot| *slot = s);
    }

    /// Puts one behind the others in flight, built in its home slot by `fill` (no slot built
    /// apart and moved in): `fill` gets the slot as the one there before left it (`vacate`)
    /// and writes what the wire reads of it.
    #[inline]
    pub(in crate::client) fn push_back_with(&mut self, fill: impl FnOnce(&mut S)) {
        let t = &mut self.table;
        assert!(
            t.len < t.keys.len(),
            "room: a slot for each of the most in flight"
        );
        let slot = self.back as usize & (t.keys.len() - 1);
        debug_assert_eq!(
            t.keys[slot],
            super::FREE_KEY,
            "the home of the next is free"
        );
        t.keys[slot] = self.back;
        fill(&mut t.slots[slot]);
        t.len += 1;
        self.back += 1;
    }

    /// Takes out the oldest in flight, if any.
    #[inline]
    pub(in crate::client) fn pop_front(&mut self) -> Option<S> {
        if self.is_empty() {
            return None;
        }
        let slot = self.home(self.front);
        debug_assert_eq!(
            self.table.keys[slot], self.front,
            "the oldest is in its home"
        );
        self.front += 1;
        Some(self.table.take(slot))
    }

    /// Forgets the oldest in flight, if any, without moving it out of its slot (a wire that
    /// has what it needs of it); whether there was one.
    #[inline]
    pub(in crate::client) fn drop_front(&mut self) -> bool {
        if self.is_empty() {
            return false;
        }
        let slot = self.home(self.front);
        let t = &mut self.table;
        debug_assert_eq!(t.keys[slot], self.front, "the oldest is in its home");
        t.keys[slot] = super::FREE_KEY;
        t.len -= 1;
        self.front += 1;
        true
    }

    /// The `k`-th in flight from the oldest (0: the oldest), if there are that many.
    #[inline]
    pub(in crate::client) fn get(&self, k: usize) -> Option<&S> {
        (k < self.len()).then(|| self.table.get(self.home(self.front + k as u64)))
    }

    /// Those in flight, oldest first.
    pub(in crate::client) fn iter(&self) -> impl Iterator<Item = &S> {
        let (wrapped, from_front) = self.table.slots.split_at(self.home(self.front));
        from_front.iter().chain(wrapped).take(self.len())
    }

    /// Those in flight, oldest first, to change in place.
    pub(in crate::client) fn iter_mut(&mut self) -> impl Iterator<Item = &mut S> {
        let (len, front) = (self.len(), self.home(self.front));
        let (wrapped, from_front) = self.table.slots.split_at_mut(front);
        from_front.iter_mut().chain(wrapped).take(len)
    }

    /// Forgets those in flight (they were recorded, or are sent again). An empty queue is
    /// left alone: a wire may clear it once a page without looking.
    #[inline]
    pub(in crate::client) fn clear(&mut self) {
        if !self.is_empty() {
            self.table.clear();
        }
        self.front = self.back;
    }

    /// Records each in flight, oldest first, at `end`
    /// (the run's end, or a close that leaves them unanswered: the table's end-of-run walk, in
    /// order): unfinished, with the bytes `unfinished` says were read of its response (given
    /// its place from the oldest, 0 first, and itself), or, where it says `None` (its request
    /// had not left whole, or the server would not process it), not sent. They stay in the
    /// queue (what is read after the end still needs them); `clear` forgets them.
    pub(in crate::client) fn record_at_end(
        &self,
        ch: &Child,
        cx: &mut ThreadState<'_>,
        end: u64,
        unfinished: impl Fn(usize, &S) -> Option<u64>,
    ) {
        for (k, s) in self.iter().enumerate() {
            match unfinished(k, s) {
                Some(bytes) => ch.record_unfinished(cx, s.exchange(), bytes, end),
                None => ch.record_unsent(cx, s.exchange(), end),
            }
        }
    }

    /// The home slot of sequence number `seq`: where it is while in flight.
    #[inline]
    fn home(&self, seq: u64) -> usize {
        seq as usize & (self.table.capacity() - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::exchange::{Exchange, PageRef};
    use std::collections::VecDeque;

    #[derive(Clone, Copy)]
    struct Tagged {
        ex: Exchange,
    }

    impl InFlightSlot for Tagged {
        const FREE: Self = Tagged {
            ex: Exchange::new(PageRef::NONE),
        };
        const KEY_SHIFT: u32 = 0;
        fn exchange(&self) -> &Exchange {
            &self.ex
        }
        fn vacate(&mut self) -> Self {
            *self
        }
    }

    fn tagged(tag: u64) -> Tagged {
        let mut ex = Exchange::new(PageRef::NONE);
        ex.written_us = tag;
        Tagged { ex }
    }

    fn tags<'a>(it: impl Iterator<Item = &'a Tagged>) -> Vec<u64> {
        it.map(|t| t.ex.written_us).collect()
    }

    #[test]
    fn the_oldest_comes_out_first_and_the_walk_goes_round_the_end_of_the_table() {
        let mut q: InFlightQueue<Tagged> = InFlightQueue::new(4);
        assert_eq!(q.table.capacity(), 4);
        assert_eq!(q.table.retry.capacity(), 0, "a queue sends nothing again");
        for tag in 0..3 {
            q.push_back(tagged(tag));
        }
        assert_eq!(q.pop_front().map(|t| t.ex.written_us), Some(0));
        // Sequence numbers 1, 2, 3, 4: slots 1, 2, 3, then 0.
        q.push_back(tagged(3));
        q.push_back(tagged(4));
        assert_eq!(tags(q.iter()), [1, 2, 3, 4]);
        assert_eq!(q.get(3).map(|t| t.ex.written_us), Some(4));
        assert!(q.get(4).is_none());
        q.iter_mut().for_each(|t| t.ex.written_us += 10);
        assert_eq!(tags(q.iter()), [11, 12, 13, 14]);
        q.clear();
        assert!(q.is_empty() && q.pop_front().is_none() && q.iter().next().is_none());
        q.push_back(tagged(5));
        assert_eq!(tags(q.iter()), [5]);
    }

    /// splitmix64: a seeded sequence, the same on every run.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    #[test]
    fn pushes_pops_and_walks_agree_with_a_vecdeque() {
        // Every depth from 1 to 40, thousands of operations each: the sequence numbers go
        // round the table many times, and the queue fills to its depth and empties.
        let mut rng = 0x5eed_0001;
        for most in 1..=40usize {
            let mut q: InFlightQueue<Tagged> = InFlightQueue::new(most);
            assert_eq!(q.table.capacity(), most.next_power_of_two());
            let mut model: VecDeque<u64> = VecDeque::new();
            let mut clears = 0u32;
            for op in 0..3000u64 {
                let r = next(&mut rng);
                match r % 8 {
                    0..=3 if model.len() < most => {
                        // In place, writing only the tag over what the slot's last one left.
                        match (r >> 8) % 2 {
                            0 => q.push_back(tagged(op)),
                            _ => q.push_back_with(|t| t.ex.written_us = op),
                        }
                        model.push_back(op);
                    }
                    0..=5 if (r >> 8).is_multiple_of(2) => {
                        let got = q.pop_front().map(|t| t.ex.written_us);
                        assert_eq!(got, model.pop_front());
                    }
                    0..=5 => {
                        let oldest = q.get(0).map(|t| t.ex.written_us);
                        assert_eq!(q.drop_front(), oldest.is_some());
                        assert_eq!(oldest, model.pop_front());
                    }
                    6 => {
                        let k = (r >> 8) as usize % (most + 2);
                        let got = q.get(k).map(|t| t.ex.written_us);
                        assert_eq!(got, model.get(k).copied(), "k {k}");
                    }
                    // Other bits than the low three that picked this arm (7 here, odd).
                    _ if (r >> 8).is_multiple_of(16) => {
                        q.clear();
                        model.clear();
                        clears += 1;
                    }
                    _ => {
                        let k = (r >> 8) as usize % (model.len() + 1);
                        if let Some(t) = q.iter_mut().nth(k) {
                            t.ex.written_us += 1_000_000;
                            model[k] += 1_000_000;
                        }
                    }
                }
                assert_eq!(q.len(), model.len());
                assert_eq!(tags(q.iter()), model.iter().copied().collect::<Vec<_>>());
            }
            assert!(clears > 0, "depth {most}: the clear branch never taken");
        }
    }
}
