//! The earliest deadline of a server's connections, kept between loop turns: each event loop
//! asks for it every turn (its poll's timeout), and a walk of every connection there made a
//! turn cost as many steps as connections are open, though most turns touch none of them.
//!
//! A connection's deadline (QUIC's timers and the [`crate::Timeouts`]' clocks) changes only
//! when the server acts on it: a datagram received for it, its events polled, its packets
//! sent, an answer written to it, its timers run, its end. Each of those touches its slot
//! ([`Timers::touch`], a flag and a push); the next ask recomputes the touched slots alone
//! and keeps them in a min-heap. An entry whose slot has moved on (a later deadline pushed,
//! or the connection gone) is stale and dropped as it comes to the top; the heap is rebuilt
//! from the live entries when it holds more than twice as many entries as there are live ones,
//! plus 64, so it stays within 2 x connections + 64 entries. A turn with no QUIC activity thus
//! costs a look at the top.

use super::{clocks, Conn, Slot};
use crate::config::Timeouts;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// A deadline of slot `.1` under generation `.2`, earliest on top.
type Entry = Reverse<(Instant, u32, u32)>;

#[derive(Default)]
pub(super) struct Timers {
    heap: BinaryHeap<Entry>,
    /// Per slot: the deadline and generation of its one live entry in `heap`.
    live: Vec<Option<(Instant, u32)>>,
    /// Slots with a live entry.
    live_count: usize,
    /// Per slot: in `touched`.
    queued: Vec<bool>,
    /// Slots acted on since the last [`Timers::refresh`]: their deadlines may have moved.
    touched: Vec<u32>,
}

/// The connection's earliest deadline: QUIC's, or its clocks'.
pub(super) fn deadline_of(conn: &Conn, t: &Timeouts) -> Option<Instant> {
    let quic = conn.quic.timeout_instant();
    match clocks::due(conn, t) {
        Some(due) => Some(quic.map_or(due, |q| q.min(due))),
        None => quic,
    }
}

impl Timers {
    /// Slot `slot`'s connection was acted on (or ended): its deadline is recomputed at the
    /// next ask.
    pub fn touch(&mut self, slot: u32) {
        let i = slot as usize;
        if i >= self.queued.len() {
            self.queued.resize(i + 1, false);
            self.live.resize(i + 1, None);
        }
        if !self.queued[i] {
            self.queued[i] = true;
            self.touched.push(slot);
        }
    }

    /// Recomputes the deadlines of the touched slots.
    pub fn refresh(&mut self, slots: &[Slot], t: &Timeouts) {
        self.refresh_with(|i| {
            let s = &slots[i];
            (s.conn.as_ref())
                .and_then(|c| deadline_of(c, t))
                .map(|d| (d, s.generation))
        });
    }

    /// [`Timers::refresh`], slot `i`'s deadline and generation (None: no connection, or one
    /// with no deadline) told by `deadline_of_slot`.
    fn refresh_with(&mut self, deadline_of_slot: impl Fn(usize) -> Option<(Instant, u32)>) {
        for k in 0..self.touched.len() {
            let slot = self.touched[k];
            let i = slot as usize;
            self.queued[i] = false;
            let next = deadline_of_slot(i);
            if next != self.live[i] {
                self.live_count = self.live_count + usize::from(next.is_some())
                    - usize::from(self.live[i].is_some());
                self.live[i] = next;
                if let Some((d, generation)) = next {
                    self.heap.push(Reverse((d, slot, generation)));
                }
            }
        }
        self.touched.clear();
        if self.heap.len() > 2 * self.live_count + 64 {
            // In place: the heap's own buffer keeps the live entries (a slot that went back
            // to an earlier deadline has two equal ones), without a walk of every slot ever
            // open or a new allocation.
            let mut entries = std::mem::take(&mut self.heap).into_vec();
            let live = &self.live;
            entries.retain(|&Reverse((d, slot, g))| live[slot as usize] == Some((d, g)));
            entries.sort_unstable();
            entries.dedup();
            self.heap = BinaryHeap::from(entries);
        }
    }

    /// The earliest live deadline, stale entries above it dropped (after a refresh).
    fn top(&mut self) -> Option<Instant> {
        while let Some(&Reverse((d, slot, generation))) = self.heap.peek() {
            if self.live[slot as usize] == Some((d, generation)) {
                return Some(d);
            }
            self.heap.pop();
        }
        None
    }

    /// The earliest deadline of all connections.
    pub fn earliest(&mut self, slots: &[Slot], t: &Timeouts) -> Option<Instant> {
        self.refresh(slots, t);
        self.top()
    }

    /// A slot whose deadline is `now` or before, taken off and touched (recomputed at the
    /// next refresh, not before: called after one [`Timers::refresh`] until None, each slot
    /// comes once).
    pub fn pop_due(&mut self, now: Instant) -> Option<u32> {
        if self.top()? > now {
            return None;
        }
        let Reverse((_, slot, _)) = self.heap.pop()?;
        self.live[slot as usize] = None;
        self.live_count -= 1;
        self.touch(slot);
        Some(slot)
    }
}

#[cfg(test)]
mod tests;
