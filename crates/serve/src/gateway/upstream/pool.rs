//! One thread's idle FastCGI (and proxy upstream) connections, per application, their slots
//! in the thread's token space, and the buffers of requests that ended.

use std::time::{Duration, Instant};

#[cfg(test)]
use super::POOL_TOKEN;
use super::{Buffers, Stream};

/// What a pool slot's connection does now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    /// No connection (the slot is on the free list).
    Free,
    /// Idle in the pool of this application.
    Idle(usize),
    /// Carrying a request of the client connection `token`; `closed`: the application has
    /// closed it (seen in an event while busy: an application that answers and closes at once
    /// makes one event of both), so it does not go back to the pool.
    Busy { token: usize, closed: bool },
}

/// Request buffers kept for the next requests at least; more while more connections are idle
/// ([`Pool::spare_bound`]).
const SPARE_BUFFERS: usize = 8;

/// A slot's handle (what the other calls take, and its connection's token under `POOL_TOKEN`)
/// is its index in the low bits and its generation above them: a slot whose connection closed
/// is reused for the next one under a new generation, so that an event of the old connection
/// still in the loop's batch (a close seen with the same poll) is told apart and ignored, never
/// taken for the new connection's.
const INDEX_BITS: u32 = usize::BITS / 2;
const INDEX_MASK: usize = (1 << INDEX_BITS) - 1;
/// Generations wrap below `POOL_TOKEN`'s bit (on a 64-bit target a stale event would have to
/// outlive 2^29 reuses of its slot to be mistaken).
const GENERATIONS: usize = (super::POOL_TOKEN >> INDEX_BITS) - 1;

fn index(slot: usize) -> usize {
    slot & INDEX_MASK
}

/// One thread's idle connections, per application, and the buffers of requests that ended.
#[derive(Debug)]
pub(crate) struct Pool {
    /// Per application: idle connections, their slots and when they came back, oldest first.
    idle: Vec<Vec<(Stream, usize, Instant)>>,
    /// Idle connections kept per application (`fastcgi_pool`), or per proxy upstream address
    /// (its mount's `pool`): the proxy's connections share the pool's slots and token space.
    limits: Vec<usize>,
    /// How long a group's connection stays idle before [`Pool::trim`] closes it (a proxy
    /// group's); `None`: until the application closes it.
    max_idle: Vec<Option<Duration>>,
    buffers: Vec<Buffers>,
    /// Connections dropped because the application (or upstream) closed them, or wrote
    /// unasked, while idle, as their request ended or as a request took them: never used for
    /// another request.
    pub peer_closed: u64,
    /// Take-time peeks ([`Pool::take_open`]) that found their connection closed or holding
    /// bytes (or whose request could not start), not yet handed to the stats: reads of the
    /// connection, as the peek of the one taken is (counted with its request), so
    /// `proxy_reads` counts every read made for the proxy. Drained by
    /// [`Pool::take_dropped_peeks`].
    dropped_peeks: u64,
    /// Every open connection's slot (its token is `slot | POOL_TOKEN`), idle or busy, by index.
    slots: Vec<Slot>,
    /// Per slot index: its generation now (the handle's high bits).
    gens: Vec<usize>,
    free_slots: Vec<usize>,
    /// Per application: connections taken during this wake-up of the loop.
    taken: Vec<usize>,
    /// Per application: idle past its limit at the end of the last wake-up; trimmed at the
    /// end of this one ([`Pool::end_wake`]).
    surplus: Vec<bool>,
    /// Whether [`Pool::end_wake`] has anything to do (a take, a put or a surplus).
    busy_wake: bool,
    /// Idle connections an application keeps at most even before a trim: the server's
    /// `cgi_max_programs`, which no burst of this thread passes.
    cap: usize,
}

impl Pool {
    pub fn new(apps: usize, limit: usize) -> Pool {
        Pool {
            idle: (0..apps).map(|_| Vec::with_capacity(limit)).collect(),
            limits: vec![limit; apps],
            max_idle: vec![None; apps],
            buffers: Vec::new(),
            slots: Vec::new(),
            gens: Vec::new(),
            free_slots: Vec::new(),
            peer_closed: 0,
            dropped_peeks: 0,
            taken: vec![0; apps],
            surplus: vec![false; apps],
            busy_wake: false,
            cap: usize::MAX,
        }
    }

    /// Caps each application's idle connections at `max_programs` (or its limit, if larger)
    /// even before a trim.
    pub fn cap_idle(&mut self, max_programs: usize) {
        self.cap = max_programs;
    }

    /// A group of idle connections (a proxy upstream address) keeping at most `limit`, each
    /// for at most `max_idle` unused; its index, taken as an application's by the other calls.
    pub fn add_group(&mut self, limit: usize, max_idle: Duration) -> usize {
        self.idle.push(Vec::with_capacity(limit));
        self.limits.push(limit);
        self.max_idle.push(Some(max_idle));
        self.taken.push(0);
        self.surplus.push(false);
        self.idle.len() - 1
    }

    /// Whether requests ask application `app` to keep their connection.
    pub fn keeps(&self, app: usize) -> bool {
        self.limits[app] > 0
    }

    /// An idle connection to `app` and its slot, if there is one, now serving the client
    /// connection `token`. One that the application closed was dropped when it said so
    /// ([`Pool::event`]); one it closes as it is taken fails its first write or read, and the
    /// request is sent again (`Exchange::may_retry`).
    pub fn take(&mut self, app: usize, token: usize) -> Option<(Stream, usize)> {
        let (s, slot, _) = self.idle[app].pop()?;
        let i = index(slot);
        self.slots[i] = Slot::Busy {
            token,
            closed: false,
        };
        self.taken[app] += 1;
        self.busy_wake = true;
        Some((s, slot))
    }

    /// [`Pool::take`] for an HTTP upstream, which may write after a response's end (a body
    /// after HEAD, 204 or 304, or anything unasked): bytes read there would be taken as the
    /// next request's response. Each connection is checked with one non-blocking peek as it is
    /// taken, and one holding bytes (or closed) is dropped, never read, and the next tried.
    ///
    /// Why a peek, though an idle connection's bytes have an event that drops it
    /// ([`Pool::event`]): that event only covers bytes that came before the loop's last poll,
    /// and the request goes out later, when the loop reaches it in that poll's batch (after
    /// the events ahead of it, and whatever time the thread was not running). Bytes that land
    /// in between have their event in the next poll's batch, where the answer's comes too,
    /// merged with it or ahead of it: nothing in the events tells them from the answer
    /// (`stray_tests` writes such bytes between a poll and the take: without the peek they are
    /// read as the answer). Bytes that land after the peek and before the request's write are
    /// not caught; after the write, no proxy can tell them from the answer.
    pub fn take_open(&mut self, app: usize, token: usize) -> Option<(Stream, usize)> {
        loop {
            let (s, slot, _) = self.idle[app].pop()?;
            if s.idle_and_open() {
                self.slots[index(slot)] = Slot::Busy {
                    token,
                    closed: false,
                };
                return Some((s, slot));
            }
            drop(s);
            self.close_slot(slot);
            self.peer_closed += 1;
            self.dropped_peeks += 1;
            self.trim_buffers();
        }
    }

    /// A take-time peek of a connection taken for a request that could not start: no
    /// request counts it, so it is handed to the stats with the dropping ones.
    pub fn count_unsent_peek(&mut self) {
        self.dropped_peeks += 1;
    }

    /// The take-time peeks that dropped a connection since the last call (each a read of the
    /// connection, for `proxy_reads`), and those of a taken connection whose request could
    /// not start.
    pub fn take_dropped_peeks(&mut self) -> u64 {
        std::mem::take(&mut self.dropped_peeks)
    }

    /// A slot for a new connection serving the client connection `token`: its handle.
    pub fn open_slot(&mut self, token: usize) -> usize {
        let busy = Slot::Busy {
            token,
            closed: false,
        };
        match self.free_slots.pop() {
            Some(i) => {
                self.slots[i] = busy;
                (self.gens[i] << INDEX_BITS) | i
            }
            None => {
                self.slots.push(busy);
                self.gens.push(0);
                self.slots.len() - 1
            }
        }
    }

    /// Slot `slot` has a new connection for the same request (`Exchange::retry`): what was
    /// seen of the old one (its close) does not hold for it, and the old one's events still to
    /// come are stale. Returns the slot's new handle, to register the new connection under.
    pub fn renew_slot(&mut self, slot: usize) -> usize {
        let i = index(slot);
        if let Slot::Busy { token, .. } = self.slots[i] {
            self.slots[i] = Slot::Busy {
                token,
                closed: false,
            };
            self.gens[i] = (self.gens[i] + 1) & GENERATIONS;
        }
        (self.gens[i] << INDEX_BITS) | i
    }

    /// The slot of a connection that was closed (closing its socket took it out of the epoll
    /// set).
    pub fn close_slot(&mut self, slot: usize) {
        self.free(index(slot));
    }

    /// Slot index `i` is free: its next connection comes under a new generation.
    fn free(&mut self, i: usize) {
        if self.slots[i] != Slot::Free {
            self.slots[i] = Slot::Free;
            self.gens[i] = (self.gens[i] + 1) & GENERATIONS;
            self.free_slots.push(i);
        }
    }

    /// Whether `slot` is the handle of its index's connection now (else an event of an older
    /// connection's).
    fn current(&self, slot: usize) -> bool {
        let i = index(slot);
        i < self.slots.len() && ((self.gens[i] << INDEX_BITS) | i) == slot
    }

    /// A connection whose request ended cleanly at `now`: kept, still registered, unless the
    /// application has closed it or the pool keeps none. An application's pool may hold more
    /// than its limit (up to `cgi_max_programs`) until the end of the next wake-up
    /// ([`Pool::end_wake`]): the requests of one wake-up end together and the next ones start
    /// together, so closing what passes the limit at once would make each burst connect again
    /// (half the requests at 40 concurrent clients and a pool of 8).
    pub fn put(&mut self, app: usize, s: Stream, slot: usize, now: Instant) {
        let idle = &mut self.idle[app];
        let i = index(slot);
        let closed = matches!(self.slots[i], Slot::Busy { closed: true, .. });
        let limit = self.limits[app];
        let room = match self.max_idle[app] {
            None => limit > 0 && idle.len() < limit.max(self.cap),
            Some(_) => idle.len() < limit,
        };
        self.busy_wake = true;
        if room && !closed {
            idle.push((s, slot, now));
            self.slots[i] = Slot::Idle(app);
        } else {
            self.peer_closed += u64::from(closed);
            drop(s);
            self.close_slot(slot);
        }
    }

    /// An event of slot `slot`'s connection (`closed`: the application closed it or it
    /// failed): the client connection to drive if it carries a request. An idle one that was
    /// closed, or became readable (it wrote what no request asked for), is closed. A stale
    /// event (one of the connection the slot had before, in the same batch: its handle's
    /// generation is not the slot's now) is ignored: it says nothing of the new connection.
    /// An idle connection is checked once per event (and a proxy's once more as it is taken,
    /// [`Pool::take_open`]).
    pub fn event(&mut self, slot: usize, readable: bool, closed: bool) -> Option<usize> {
        if !self.current(slot) {
            return None;
        }
        let i = index(slot);
        match self.slots[i] {
            Slot::Busy { token, closed: was } => {
                self.slots[i] = Slot::Busy {
                    token,
                    closed: was || closed,
                };
                Some(token)
            }
            Slot::Idle(app) if readable || closed => {
                let idle = &mut self.idle[app];
                let k = idle.iter().position(|(_, s, _)| *s == slot)?;
                if !idle[k].0.idle_and_open() {
                    // In place: the rest stay oldest first, as `trim` needs.
                    drop(idle.remove(k));
                    self.close_slot(slot);
                    self.peer_closed += 1;
                    // Its spare buffers go with it: once nothing is idle no sweep comes
                    // (`next_trim`), and a burst's would stay.
                    self.trim_buffers();
                }
                None
            }
            Slot::Idle(_) | Slot::Free => None,
        }
    }

    /// Closes the idle connections of proxy groups unused for their `max_idle` by `now`, and
    /// those of an application past its limit: taken last in, first out, the oldest are at
    /// the front, and those a burst of requests opened go once the load that needed them is
    /// gone. Called by the event loop's sweep.
    pub fn trim(&mut self, now: Instant) {
        for (app, max_idle) in self.max_idle.iter().enumerate() {
            let idle = &mut self.idle[app];
            let aged = match *max_idle {
                Some(max_idle) => idle.partition_point(|(_, _, since)| now >= *since + max_idle),
                // An application's: those past its limit, the oldest.
                None => idle.len().saturating_sub(self.limits[app]),
            };
            for (s, slot, _) in idle.drain(..aged) {
                drop(s);
                let i = index(slot);
                self.slots[i] = Slot::Free;
                self.gens[i] = (self.gens[i] + 1) & GENERATIONS;
                self.free_slots.push(i);
            }
        }
        self.trim_buffers();
    }

    /// The end of a wake-up of the loop: an application's idle connections past its limit at
    /// the end of the last wake-up are trimmed, the oldest first, to its limit or to the
    /// connections this wake-up took, if more. Idle connections hold an application's workers
    /// (php-fpm's `pm.max_children` is shared by every thread): a surplus kept until the sweep
    /// would keep them from the other threads for up to a quarter of a second; a surplus the
    /// next wake-up's requests take is kept for them.
    pub fn end_wake(&mut self) {
        if !self.busy_wake {
            return;
        }
        let mut surplus = false;
        for app in 0..self.idle.len() {
            let limit = self.limits[app];
            let keep = limit.max(std::mem::take(&mut self.taken[app]));
            let idle = &mut self.idle[app];
            if self.max_idle[app].is_none() && self.surplus[app] {
                let extra = idle.len().saturating_sub(keep);
                for (s, slot, _) in idle.drain(..extra) {
                    drop(s);
                    let i = index(slot);
                    self.slots[i] = Slot::Free;
                    self.gens[i] = (self.gens[i] + 1) & GENERATIONS;
                    self.free_slots.push(i);
                }
            }
            self.surplus[app] = self.max_idle[app].is_none() && idle.len() > limit;
            surplus |= self.surplus[app];
        }
        self.busy_wake = surplus;
        self.trim_buffers();
    }

    /// When [`Pool::trim`] has work next: `now` while an application keeps idle connections
    /// past its limit, else when the oldest idle proxy connection ages out (`None`: never, the
    /// loop may sleep). An idle server's loop wakes once for that, not at every sweep.
    pub fn next_trim(&self, now: Instant) -> Option<Instant> {
        let groups = self.max_idle.iter().zip(&self.idle).zip(&self.limits);
        (groups.into_iter())
            .filter_map(|((m, idle), &limit)| match m {
                Some(max_idle) => idle.first().map(|(_, _, since)| *since + *max_idle),
                None => (idle.len() > limit).then_some(now),
            })
            .min()
    }

    /// Idle connections kept for `app`.
    #[cfg(test)]
    pub fn idle(&self, app: usize) -> usize {
        self.idle[app].len()
    }

    /// Spare buffers kept.
    #[cfg(test)]
    pub fn spare_buffers(&self) -> usize {
        self.buffers.len()
    }

    /// Buffers for a request: a request's that ended, or new ones.
    pub fn buffers(&mut self) -> Buffers {
        self.buffers.pop().unwrap_or_else(Buffers::new)
    }

    /// A request's buffers, kept for the next one (up to [`Pool::spare_bound`]; the rest are
    /// freed).
    pub fn recycle(&mut self, b: Buffers) {
        if self.buffers.len() < self.spare_bound() && !b.is_records_only() {
            self.buffers.push(b);
        }
    }

    /// Spare buffers kept: as many as idle connections (each the next request's as it takes
    /// one), at least `SPARE_BUFFERS`. The requests of one wake-up end together and the next
    /// ones start together: with a fixed few, a burst past them (400 proxied HTTP/2 streams in
    /// flight, or 40 HTTP/1.1 clients) allocated and zeroed a 16 KiB input buffer for most
    /// of its requests, and grew the head's anew. Bounded by the idle connections kept, so the
    /// spares go as those close: aged out or past a limit (`trim`, `end_wake`), or closed by
    /// the upstream (`event`, `take_open`).
    fn spare_bound(&self) -> usize {
        SPARE_BUFFERS.max(self.idle.iter().map(Vec::len).sum())
    }

    /// Frees the spare buffers past [`Pool::spare_bound`] (idle connections were closed).
    fn trim_buffers(&mut self) {
        let bound = self.spare_bound();
        self.buffers.truncate(bound);
    }
}

#[cfg(test)]
mod tests;
