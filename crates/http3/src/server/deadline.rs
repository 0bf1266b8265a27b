//! When the caller's loop must call back (`deadline`, the earliest of every connection's, kept
//! in the heap of `timers.rs`) and what passing it does (`on_deadline`: QUIC's timers and the
//! clocks of `clocks.rs`).

use super::{clocks, ConnId, Server};
use std::time::Instant;

impl Server {
    /// The earliest deadline of all connections, QUIC's and the [`crate::Timeouts`]': kept
    /// between calls, the connections acted on since recomputed (`timers`), so a turn with no
    /// QUIC activity costs a look at a heap's top.
    pub fn deadline(&self) -> Option<Instant> {
        let earliest = (self.timers.borrow_mut()).earliest(&self.slots, &self.config.timeouts);
        // The heap's invariant, checked against a walk of every connection in debug builds
        // (every test): a connection acted on and not touched would show here.
        #[cfg(debug_assertions)]
        {
            let t = &self.config.timeouts;
            let scan = (self.slots.iter())
                .filter_map(|s| s.conn.as_ref())
                .filter_map(|c| super::timers::deadline_of(c, t))
                .min();
            assert_eq!(
                earliest, scan,
                "the cached earliest deadline is every connection's"
            );
        }
        earliest
    }

    /// Runs the timers of every connection whose deadline is `now` or before.
    pub fn on_deadline(&mut self, now: Instant) {
        self.now = now;
        let timeouts = self.config.timeouts;
        self.timers.get_mut().refresh(&self.slots, &timeouts);
        while let Some(slot) = self.timers.get_mut().pop_due(now) {
            let generation = self.slots[slot as usize].generation;
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                continue;
            };
            let mut due = false;
            if conn.quic.timeout_instant().is_some_and(|t| t <= now) {
                conn.quic.on_timeout();
                // A path that failed its validation says so here.
                conn.paths.drain_events(&mut conn.quic);
                due = true;
            }
            if clocks::due(conn, &timeouts).is_some_and(|t| t <= now) {
                clocks::update(conn, now, true);
                let id = ConnId { slot, generation };
                let (counts, events) = (&mut self.counts, &mut self.events);
                clocks::expire(conn, id, &timeouts, now, counts, events);
                due = true;
            }
            if due {
                self.mark_send(slot);
                self.sweep(slot, false);
            }
        }
    }
}
