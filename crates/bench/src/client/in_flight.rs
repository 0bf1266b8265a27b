//! The exchanges in flight on one connection, in one table every multiplexing wire shares
//! (HTTP/2's streams in `h2/streams.rs`, HTTP/3's in `h3/streams.rs`): which exchange a
//! response belongs to (lookup by the wire's key, its stream id), which wait to be sent again
//! (`retry`: a GOAWAY's unprocessed streams, a refused stream, a redirect to follow), which was
//! written longest ago (the response timeout), and what each becomes when the run ends
//! (`record_at_end`: unfinished or unsent, through its exchange, so that the server's count is
//! the run's requests plus its unfinished ones).
//!
//! Its slots are made once, with the connection's wire (twice the most streams in flight, a
//! power of two; a queue's, the most to a power of two): opening and closing a stream moves an
//! exchange in and out of a slot and allocates nothing (a stream is built in its slot,
//! `insert_with`, and a slot with nothing to give back is not rewritten as it is freed,
//! `InFlightSlot::vacate`). What a wire keeps per
//! stream beside the exchange (flow control, bytes counted, reset codes, an application's
//! buffers) is the slot's own type `S`; a wire may keep more per slot index in tables of its
//! own. A wire whose responses come in the order its requests left (HTTP/1.1 pipelining:
//! batches and lanes) sees the table as a queue (`in_flight/queue.rs`). What a connection that
//! is done leaves in `retry` is judged by one rule for HTTP/2 and HTTP/3
//! (`in_flight/refusals.rs`).

mod queue;
mod refusals;

use super::exchange::Exchange;
use super::page::Child;
use super::{ThreadState, NONE};
pub(super) use queue::InFlightQueue;
pub(super) use refusals::{judge_refusals, not_retried, Refusals};

/// What a slot of an [`InFlight`] table holds: a wire's stream and its exchange.
pub(super) trait InFlightSlot {
    /// A free slot's value (what a slot holds before its stream and after it is taken out).
    const FREE: Self;

    /// The wire's stream ids advance by `1 << KEY_SHIFT` (HTTP/2 client streams: 2; HTTP/3
    /// client bidirectional streams: 4), so consecutive streams have consecutive home slots.
    const KEY_SHIFT: u32;

    /// The stream's exchange.
    fn exchange(&self) -> &Exchange;

    /// Moves the stream out of its slot as the table frees it. The slot may keep what is
    /// left (the table's next `insert_with` there writes every field a stream reads), so that
    /// a slot with nothing to give back (no buffer, no `Arc`) need not be rewritten whole:
    /// overriding this, a wire copies its fields out and takes only what it owns.
    #[inline]
    fn vacate(&mut self) -> Self
    where
        Self: Sized,
    {
        std::mem::replace(self, Self::FREE)
    }
}

/// A key no stream has: a free slot's.
const FREE_KEY: u64 = u64::MAX;

/// One connection's exchanges in flight, keyed by the wire's stream id, and those to send again.
pub(super) struct InFlight<S> {
    /// Each slot's stream id (`FREE_KEY`: free), apart from the slots so that a lookup walks
    /// only keys.
    keys: Box<[u64]>,
    slots: Box<[S]>,
    len: usize,
    /// Exchanges to send again, the next on top (`pop`): taken off the connection before a
    /// response (never processed by the server, or a redirect to follow), or never sent. A
    /// wire may keep them in an order of its own (HTTP/3 keeps a held request on top).
    pub retry: Vec<Exchange>,
}

impl<S: InFlightSlot> InFlight<S> {
    /// A table for at most `most` streams at once: twice as many slots (a lookup probes from
    /// a stream's home past those in flight), and room for `most` exchanges to send again.
    pub(super) fn new(most: usize) -> Self {
        let mut table = Self::with_slots((2 * most.max(1)).next_power_of_two());
        table.retry.reserve_exact(most);
        table
    }

    /// A table of `slots` slots (a power of two) and no room reserved to send again: for a
    /// wire that keeps each stream in its home slot and never probes (`InFlightQueue`).
    pub(super) fn with_slots(slots: usize) -> Self {
        assert!(
            slots.is_power_of_two(),
            "a table's slots are a power of two"
        );
        InFlight {
            keys: vec![FREE_KEY; slots].into_boxed_slice(),
            slots: (0..slots).map(|_| S::FREE).collect(),
            len: 0,
            retry: Vec::new(),
        }
    }

    /// Streams in flight.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Slots in the table (each slot index is below it).
    pub(super) fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// The slot of stream `key`, if it is in flight: from its home slot on, every slot (a slot
    /// freed before it may lie between its home and it).
    #[inline]
    pub(super) fn find(&self, key: u64) -> Option<usize> {
        // No stream id is FREE_KEY (HTTP/2's are below 2^31, HTTP/3's below 2^62).
        debug_assert!(key != FREE_KEY, "a stream id is never the free key");
        let mask = self.keys.len() - 1;
        let mut i = (key >> S::KEY_SHIFT) as usize & mask;
        for _ in 0..self.keys.len() {
            if self.keys[i] == key {
                return Some(i);
            }
            i = (i + 1) & mask;
        }
        None
    }

    /// Puts stream `key` in the first free slot from its home on (there is one: the table is
    /// twice the streams allowed); its slot.
    #[inline]
    pub(super) fn insert(&mut self, key: u64, stream: S) -> usize {
        self.insert_with(key, |slot| *slot = stream)
    }

    /// Puts stream `key` in the first free slot from its home on, built there by `fill` (no
    /// stream built apart and moved in): `fill` gets the slot as its last stream left it
    /// (`vacate`) and sets every field; its slot.
    #[inline]
    pub(super) fn insert_with(&mut self, key: u64, fill: impl FnOnce(&mut S)) -> usize {
        assert!(
            self.len < self.keys.len(),
            "a free slot: the table is twice the streams in flight"
        );
        let mask = self.keys.len() - 1;
        let mut i = (key >> S::KEY_SHIFT) as usize & mask;
        while self.keys[i] != FREE_KEY {
            i = (i + 1) & mask;
        }
        self.keys[i] = key;
        fill(&mut self.slots[i]);
        self.len += 1;
        i
    }

    /// The stream of `slot` (in flight, or what a free slot's last stream left there).
    #[inline]
    pub(super) fn get(&self, slot: usize) -> &S {
        &self.slots[slot]
    }

    #[inline]
    pub(super) fn get_mut(&mut self, slot: usize) -> &mut S {
        &mut self.slots[slot]
    }

    /// The stream of key `key`, if it is in flight.
    #[inline]
    pub(super) fn by_key(&mut self, key: u64) -> Option<&mut S> {
        self.find(key).map(|i| &mut self.slots[i])
    }

    /// Takes the stream of `slot` out of the table: its slot is free again. A free slot gives
    /// its `FREE` value and leaves the count alone (a debug build stops there: a wire that
    /// takes a free slot has lost track of its streams), so that a release build never wraps
    /// `len` and keeps opening streams.
    #[inline]
    pub(super) fn take(&mut self, slot: usize) -> S {
        debug_assert!(self.keys[slot] != FREE_KEY, "taking a free slot");
        if self.keys[slot] == FREE_KEY {
            return S::FREE;
        }
        self.keys[slot] = FREE_KEY;
        self.len -= 1;
        self.slots[slot].vacate()
    }

    /// Takes stream `key` out of the table, if it is in flight.
    pub(super) fn take_key(&mut self, key: u64) -> Option<S> {
        self.find(key).map(|i| self.take(i))
    }

    /// The streams in flight, with their slots: the walk stops at the last of the `len` in
    /// flight, so that it costs the streams in flight rather than the table's slots.
    pub(super) fn iter(&self) -> impl Iterator<Item = (usize, &S)> {
        let keys = &self.keys;
        (self.slots.iter().enumerate())
            .filter(move |(i, _)| keys[*i] != FREE_KEY)
            .take(self.len)
    }

    pub(super) fn iter_mut(&mut self) -> impl Iterator<Item = &mut S> {
        let keys = &self.keys;
        let slots = self.slots.iter_mut().enumerate();
        slots
            .filter(move |(i, _)| keys[*i] != FREE_KEY)
            .take(self.len)
            .map(|(_, s)| s)
    }

    /// The slot of the first stream in flight that `pred` holds of, if any.
    pub(super) fn position(&self, mut pred: impl FnMut(&S) -> bool) -> Option<usize> {
        self.iter().find(|(_, s)| pred(s)).map(|(i, _)| i)
    }

    /// Takes every stream out of the table (the connection is gone), slot by slot.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = S> + '_ {
        let mut next = 0;
        std::iter::from_fn(move || {
            let i = next + self.keys[next..].iter().position(|&k| k != FREE_KEY)?;
            next = i + 1;
            Some(self.take(i))
        })
    }

    /// Forgets the streams in flight (the connection is gone; their exchanges were recorded):
    /// every slot free. Those to send again stay.
    pub(super) fn clear(&mut self) {
        self.drain().for_each(drop);
    }

    /// Since when the stream in flight that has waited longest for its response waits (its
    /// request written, or, not written yet, its file's start), if any: a scan of the table.
    pub(super) fn oldest_written(&self) -> Option<u64> {
        self.iter().map(|(_, s)| waiting_since(s.exchange())).min()
    }

    /// The exchanges this connection still owes a response: those in flight, then those to
    /// send again.
    pub(super) fn exchanges(&self) -> impl Iterator<Item = &Exchange> {
        (self.iter().map(|(_, s)| s.exchange())).chain(&self.retry)
    }

    /// The run ended at `end`: each exchange in flight is recorded as unfinished (with the bytes
    /// `unfinished` says were read of its response) or, where `unfinished` says `None` (its
    /// request had not left whole, or the server refused it), as not sent; each one to send
    /// again as not sent. True if any was recorded.
    pub(super) fn record_at_end(
        &self,
        ch: &Child,
        cx: &mut ThreadState<'_>,
        end: u64,
        unfinished: impl Fn(u64, &S) -> Option<u64>,
    ) -> bool {
        for (i, s) in self.iter() {
            match unfinished(self.keys[i], s) {
                Some(bytes) => ch.record_unfinished(cx, s.exchange(), bytes, end),
                None => ch.record_unsent(cx, s.exchange(), end),
            }
        }
        for ex in &self.retry {
            ch.record_unsent(cx, ex, end);
        }
        self.len > 0 || !self.retry.is_empty()
    }
}

/// Since when `ex` waits for its response: from its request written, or, not written yet (a
/// limit or flow control holds it), from its file's start.
#[inline]
pub(super) fn waiting_since(ex: &Exchange) -> u64 {
    match ex.written_us {
        NONE => ex.file_start_us,
        t => t,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::exchange::PageRef;

    struct S {
        ex: Exchange,
    }

    impl InFlightSlot for S {
        const FREE: S = S {
            ex: Exchange::new(PageRef::NONE),
        };
        // HTTP/3's ids: 0, 4, 8, ... (0 is a stream, not a free slot).
        const KEY_SHIFT: u32 = 2;
        fn exchange(&self) -> &Exchange {
            &self.ex
        }
    }

    fn written(at: u64) -> S {
        let mut ex = Exchange::new(PageRef::NONE);
        ex.file_start_us = 1;
        ex.written_us = at;
        S { ex }
    }

    #[test]
    fn streams_are_found_by_key_and_free_their_slots_when_taken() {
        let mut t: InFlight<S> = InFlight::new(3);
        assert_eq!(t.capacity(), 8);
        let a = t.insert(0, written(10));
        let b = t.insert(4, written(20));
        assert_ne!(a, b);
        assert_eq!((t.find(0), t.find(4), t.find(8)), (Some(a), Some(b), None));
        assert_eq!(t.len(), 2);
        assert_eq!(t.take(a).ex.written_us, 10);
        assert_eq!((t.find(0), t.len()), (None, 1));
        assert!(t.take_key(0).is_none());
        assert_eq!(t.take_key(4).map(|s| s.ex.written_us), Some(20));
        assert!(t.is_empty());
    }

    #[test]
    fn colliding_keys_probe_to_the_next_free_slot() {
        // Ids a table apart share a home slot; each is still found, and after the first is
        // taken the second still is.
        let mut t: InFlight<S> = InFlight::new(2);
        let size = t.capacity() as u64;
        let first = t.insert(4, written(1));
        let second = t.insert(4 + 4 * size, written(2));
        assert_ne!(first, second);
        t.take(first);
        assert_eq!(t.find(4 + 4 * size), Some(second));
        assert_eq!(t.iter().count(), 1);
    }

    #[test]
    fn the_oldest_is_the_earliest_written_or_begun_and_drain_empties_the_table() {
        let mut t: InFlight<S> = InFlight::new(4);
        assert_eq!(t.oldest_written(), None);
        t.insert(0, written(30));
        t.insert(4, written(20));
        // Not written yet: waits from its file's start (1).
        t.insert(8, written(NONE));
        assert_eq!(t.oldest_written(), Some(1));
        t.retry.push(Exchange::new(PageRef::NONE));
        assert_eq!(t.exchanges().count(), 4);
        assert_eq!(t.drain().count(), 3);
        assert!(t.is_empty() && t.find(0).is_none());
        assert_eq!(
            t.retry.len(),
            1,
            "those to send again outlive the connection"
        );
    }

    #[test]
    fn taking_a_free_slot_leaves_the_count_alone() {
        // A debug build stops at the wire's mistake; a release one gives the free value, and
        // either way the table still counts one stream and opens others.
        let mut t: InFlight<S> = InFlight::new(2);
        let a = t.insert(0, written(5));
        let free = (a + 1) % t.capacity();
        let taken =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| t.take(free).ex.written_us));
        assert_eq!(taken.is_err(), cfg!(debug_assertions));
        if let Ok(written_us) = taken {
            assert_eq!(written_us, NONE, "a free slot's value");
        }
        assert_eq!(t.len(), 1);
        let b = t.insert(4, written(6));
        assert_eq!((t.find(0), t.find(4), t.len()), (Some(a), Some(b), 2));
    }

    /// A slot whose ids step by `1 << SHIFT` (1: HTTP/2's, 2: HTTP/3's), tagged by its value.
    struct Tagged<const SHIFT: u32> {
        ex: Exchange,
    }

    impl<const SHIFT: u32> InFlightSlot for Tagged<SHIFT> {
        const FREE: Self = Tagged {
            ex: Exchange::new(PageRef::NONE),
        };
        const KEY_SHIFT: u32 = SHIFT;
        fn exchange(&self) -> &Exchange {
            &self.ex
        }
    }

    fn tagged<const SHIFT: u32>(tag: u64) -> Tagged<SHIFT> {
        let mut ex = Exchange::new(PageRef::NONE);
        ex.file_start_us = 1;
        ex.written_us = tag;
        Tagged { ex }
    }

    /// splitmix64: a seeded sequence, the same on every run.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Random inserts, finds and takes against a `HashMap`, for every table size from 1 to
    /// 100 streams: ids from `first` by `1 << SHIFT`, mostly in order (a connection's next
    /// stream) and some anywhere in a range a few tables wide (homes that collide, probes that
    /// wrap past the last slot); finds of ids in flight, taken and never used.
    fn agrees_with_a_map<const SHIFT: u32>(first: u64, seed: u64) {
        use std::collections::HashMap;
        let step = 1u64 << SHIFT;
        let mut rng = seed;
        for most in 1..=100usize {
            let mut t: InFlight<Tagged<SHIFT>> = InFlight::new(most);
            let span = 3 * t.capacity() as u64;
            let mut model: HashMap<u64, u64> = HashMap::new();
            let mut next_id = first;
            for op in 0..2500u64 {
                let r = next(&mut rng);
                match r % 8 {
                    // Open a stream: the next id, or one anywhere in the range.
                    0..=2 if model.len() < most => {
                        let id = if r.is_multiple_of(5) {
                            first + step * ((r >> 8) % span)
                        } else {
                            next_id += step;
                            next_id - step
                        };
                        if model.contains_key(&id) {
                            continue;
                        }
                        let slot = t.insert(id, tagged(op));
                        assert_eq!(t.get(slot).ex.written_us, op);
                        model.insert(id, op);
                    }
                    // Close one in flight (any of them, as responses end out of order), by
                    // slot or by key.
                    3..=5 if !model.is_empty() => {
                        let ids: Vec<u64> = model.keys().copied().collect();
                        let id = ids[(r >> 8) as usize % ids.len()];
                        let tag = model.remove(&id).unwrap();
                        let got = if r.is_multiple_of(2) {
                            t.take_key(id)
                        } else {
                            t.find(id).map(|slot| t.take(slot))
                        };
                        assert_eq!(got.map(|s| s.ex.written_us), Some(tag), "id {id}");
                        assert!(t.take_key(id).is_none(), "id {id} taken twice");
                    }
                    // Look one up: in flight, or not (taken, never used, or past the last).
                    _ => {
                        let id = first + step * ((r >> 8) % (span + 4));
                        let found = t.find(id).map(|slot| t.get(slot).ex.written_us);
                        assert_eq!(found, model.get(&id).copied(), "id {id}");
                        if let Some(s) = t.by_key(id) {
                            assert_eq!(s.ex.written_us, model[&id]);
                        }
                    }
                }
                assert_eq!(t.len(), model.len());
                // The walk of the streams in flight sees each one once (it stops after the
                // last), and the oldest is the model's.
                let mut seen: Vec<u64> = t.iter().map(|(_, s)| s.ex.written_us).collect();
                let mut want: Vec<u64> = model.values().copied().collect();
                seen.sort_unstable();
                want.sort_unstable();
                assert_eq!(seen, want);
                assert_eq!(t.iter_mut().count(), model.len());
                assert_eq!(t.oldest_written(), want.first().copied());
            }
            assert_eq!(t.drain().count(), model.len());
            assert!(t.is_empty() && t.iter().next().is_none());
        }
    }

    #[test]
    fn http2_ids_agree_with_a_map() {
        // Client streams 1, 3, 5, ...
        agrees_with_a_map::<1>(1, 0x5eed_0002);
    }

    #[test]
    fn http3_ids_agree_with_a_map() {
        // Client bidirectional streams 0, 4, 8, ... (id 0 is a stream like any other).
        agrees_with_a_map::<2>(0, 0x5eed_0004);
    }
}
