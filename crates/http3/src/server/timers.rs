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
//! from the live entries when stale ones outnumber them, so it stays within twice the
//! connections. A turn with no QUIC activity thus costs a look at the top.

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
        for k in 0..self.touched.len() {
            let slot = self.touched[k];
            let i = slot as usize;
            self.queued[i] = false;
            let s = &slots[i];
            let next = (s.conn.as_ref())
                .and_then(|c| deadline_of(c, t))
                .map(|d| (d, s.generation));
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
            let live = self.live.iter().enumerate();
            self.heap = live
                .filter_map(|(i, e)| e.map(|(d, g)| Reverse((d, i as u32, g))))
                .collect();
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
