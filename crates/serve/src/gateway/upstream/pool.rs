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
mod pool_tests {
    use std::io::Write;

    use mio::net::UnixStream;
    use mio::{Events, Poll, Token};

    use super::{Duration, Instant, Pool, Stream, POOL_TOKEN};

    /// Polls until slot `slot` has an event; its readability and whether it says closed.
    fn slot_event(poll: &mut Poll, slot: usize) -> (bool, bool) {
        let mut events = Events::with_capacity(16);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            poll.poll(&mut events, Some(Duration::from_millis(100)))
                .unwrap();
            let ev = events
                .iter()
                .find(|e| e.token() == Token(slot | POOL_TOKEN));
            if let Some(e) = ev {
                return (e.is_readable(), e.is_read_closed() || e.is_error());
            }
        }
        panic!("no event for slot {slot} within 10 s");
    }

    #[test]
    fn an_idle_connection_stays_registered_and_a_reuse_moves_its_events() {
        let mut poll = Poll::new().unwrap();
        let mut pool = Pool::new(1, 2);
        let (ours, mut app) = UnixStream::pair().unwrap();
        let mut s = Stream::Unix(ours);
        let slot = pool.open_slot(5);
        s.register_readable(poll.registry(), slot).unwrap();
        assert_eq!(pool.event(slot, false, false), Some(5));
        pool.put(0, s, slot, Instant::now());
        // A stale event of an idle, open connection leaves it in the pool.
        assert_eq!(pool.event(slot, true, false), None);
        assert_eq!(pool.idle(0), 1);
        // Taken by another client connection: the slot's events drive that one, with no new
        // registration.
        let (s, again) = pool.take(0, 9).unwrap();
        assert_eq!(again, slot);
        app.write_all(b"x").unwrap();
        assert_eq!(slot_event(&mut poll, slot), (true, false));
        assert_eq!(pool.event(slot, true, false), Some(9));
        drop(s);
        pool.close_slot(slot);
        let reused = pool.open_slot(3);
        assert_eq!(
            super::index(reused),
            super::index(slot),
            "a closed connection's slot is reused"
        );
        assert_ne!(reused, slot, "under a new generation: another token");
    }

    #[test]
    fn an_idle_connection_the_application_closes_is_dropped_on_its_event() {
        let mut poll = Poll::new().unwrap();
        let mut pool = Pool::new(1, 2);
        let (ours, app) = UnixStream::pair().unwrap();
        let mut s = Stream::Unix(ours);
        let slot = pool.open_slot(5);
        s.register_readable(poll.registry(), slot).unwrap();
        pool.put(0, s, slot, Instant::now());
        drop(app);
        let (readable, closed) = slot_event(&mut poll, slot);
        assert!(closed);
        assert_eq!(pool.event(slot, readable, closed), None);
        assert_eq!(pool.idle(0), 0);
        assert!(pool.take(0, 9).is_none());
    }

    #[test]
    fn a_connection_closed_while_busy_does_not_go_back_to_the_pool() {
        let mut pool = Pool::new(1, 2);
        let (ours, _app) = UnixStream::pair().unwrap();
        let slot = pool.open_slot(5);
        // The application's answer and its close, seen in one event while the request runs.
        assert_eq!(pool.event(slot, true, true), Some(5));
        pool.put(0, Stream::Unix(ours), slot, Instant::now());
        assert_eq!(pool.idle(0), 0);
        assert!(pool.take(0, 9).is_none());
    }

    #[test]
    fn spare_buffers_follow_the_idle_connections_and_go_with_them() {
        use super::{Buffers, SPARE_BUFFERS};
        let mut pool = Pool::new(1, 64);
        let t0 = Instant::now();
        let burst = 3 * SPARE_BUFFERS;
        let mut apps = Vec::new();
        let mut inputs = Vec::new();
        // A burst of requests ends together: each connection back idle, its buffers kept.
        for k in 0..burst {
            let (ours, app) = UnixStream::pair().unwrap();
            apps.push(app);
            let slot = pool.open_slot(k);
            pool.put(0, Stream::Unix(ours), slot, t0);
            let b = Buffers::new();
            inputs.push(b.input.as_ptr());
            pool.recycle(b);
        }
        assert_eq!(pool.idle(0), burst);
        assert_eq!(pool.spare_buffers(), burst, "one for each idle connection");
        // The next burst takes the connections and finds the buffers: none is made.
        let mut taken = Vec::new();
        for k in 0..burst {
            let (s, _) = pool.take(0, k).unwrap();
            drop(s);
            taken.push(pool.buffers());
        }
        let mut again: Vec<_> = taken.iter().map(|b| b.input.as_ptr()).collect();
        again.sort();
        inputs.sort();
        assert_eq!(again, inputs, "the same buffers");
        // Those requests' connections closed (none idle): their buffers are kept only up to
        // the floor, and the spares past it go at the end of the wake-up.
        for b in taken {
            pool.recycle(b);
        }
        assert_eq!(pool.spare_buffers(), SPARE_BUFFERS);
        let (ours, _app) = UnixStream::pair().unwrap();
        let slot = pool.open_slot(0);
        pool.put(0, Stream::Unix(ours), slot, t0);
        for _ in 0..2 {
            pool.recycle(Buffers::new());
        }
        assert_eq!(
            pool.spare_buffers(),
            SPARE_BUFFERS,
            "one idle connection: the floor"
        );
        pool.end_wake();
        assert_eq!(pool.spare_buffers(), SPARE_BUFFERS);

        // Idle connections past an application's limit closed by the sweep: their spares go.
        let mut small = Pool::new(1, 2);
        for k in 0..burst {
            let (ours, app) = UnixStream::pair().unwrap();
            apps.push(app);
            let slot = small.open_slot(k);
            small.put(0, Stream::Unix(ours), slot, t0);
            small.recycle(Buffers::new());
        }
        assert_eq!(small.spare_buffers(), burst);
        small.trim(t0);
        assert_eq!(small.idle(0), 2);
        assert_eq!(small.spare_buffers(), SPARE_BUFFERS);
    }

    #[test]
    fn spare_buffers_go_with_idle_connections_the_upstream_closes() {
        use super::{Buffers, SPARE_BUFFERS};
        let mut poll = Poll::new().unwrap();
        let mut pool = Pool::new(0, 0);
        let group = pool.add_group(64, Duration::from_secs(60));
        let burst = 3 * SPARE_BUFFERS;
        let mut peers = Vec::new();
        let mut slots = Vec::new();
        for k in 0..burst {
            let (ours, peer) = UnixStream::pair().unwrap();
            peers.push(Some(peer));
            let mut s = Stream::Unix(ours);
            let slot = pool.open_slot(k);
            s.register_readable(poll.registry(), slot).unwrap();
            pool.put(group, s, slot, Instant::now());
            pool.recycle(Buffers::new());
            slots.push(slot);
        }
        assert_eq!(pool.spare_buffers(), burst);
        // The upstream closes all but a few, each dropped on its event: no sweep follows
        // (nothing ages out soon), so the drop itself frees their buffers.
        let stay = SPARE_BUFFERS + 2;
        for k in stay..burst {
            drop(peers[k].take());
            let (readable, closed) = slot_event(&mut poll, slots[k]);
            assert_eq!(pool.event(slots[k], readable, closed), None);
        }
        assert_eq!(pool.idle(group), stay);
        assert_eq!(
            pool.spare_buffers(),
            stay,
            "one for each idle connection left"
        );
        // Those found closed as a request takes them: the same.
        for peer in &mut peers[1..stay] {
            drop(peer.take());
        }
        let (s, got) = pool.take_open(group, 99).unwrap();
        assert_eq!(got, slots[0]);
        assert_eq!(pool.idle(group), 0);
        assert_eq!(pool.spare_buffers(), SPARE_BUFFERS, "the floor");
        drop(s);
    }

    #[test]
    fn an_application_s_connections_past_its_limit_are_kept_until_the_sweep() {
        let mut pool = Pool::new(1, 2);
        let t0 = Instant::now();
        let mut apps = Vec::new();
        let mut slots = Vec::new();
        // Four requests of one wake-up end together.
        for k in 0..4 {
            let (ours, app) = UnixStream::pair().unwrap();
            apps.push(app);
            let slot = pool.open_slot(k);
            pool.put(0, Stream::Unix(ours), slot, t0);
            slots.push(slot);
        }
        assert_eq!(pool.idle(0), 4, "kept for the next wake-up's requests");
        assert_eq!(pool.next_trim(t0), Some(t0), "the sweep has work");
        // Two are taken again before the sweep: no new connection for them.
        let (a, _) = pool.take(0, 7).unwrap();
        let (b, _) = pool.take(0, 8).unwrap();
        assert_eq!(pool.idle(0), 2);
        assert_eq!(pool.next_trim(t0), None);
        pool.put(0, a, slots[3], t0);
        pool.put(0, b, slots[2], t0);
        // The sweep trims the pool to its limit, the oldest first.
        pool.trim(t0);
        assert_eq!(pool.idle(0), 2);
        assert_eq!(pool.next_trim(t0), None);
        let kept = [pool.take(0, 1).unwrap().1, pool.take(0, 2).unwrap().1];
        assert_eq!(kept, [slots[2], slots[3]], "the last put are kept");
        // A pool of 0 keeps nothing.
        let mut none = Pool::new(1, 0);
        let (ours, _app) = UnixStream::pair().unwrap();
        let slot = none.open_slot(0);
        none.put(0, Stream::Unix(ours), slot, t0);
        assert_eq!(none.idle(0), 0);
    }

    #[test]
    fn a_surplus_is_capped_and_trimmed_to_what_the_next_wake_up_took() {
        let mut pool = Pool::new(1, 2);
        pool.cap_idle(6);
        let t0 = Instant::now();
        let mut apps = Vec::new();
        let mut slots = Vec::new();
        // Eight requests of one wake-up end together: six are kept, the cap.
        for k in 0..8 {
            let (ours, app) = UnixStream::pair().unwrap();
            apps.push(app);
            let slot = pool.open_slot(k);
            pool.put(0, Stream::Unix(ours), slot, t0);
            slots.push(slot);
        }
        assert_eq!(pool.idle(0), 6, "capped at cgi_max_programs");
        pool.end_wake();
        assert_eq!(pool.idle(0), 6, "kept for the next wake-up's requests");
        // The next wake-up takes three and they end: the surplus is trimmed to three.
        let taken: Vec<_> = (0..3).map(|k| pool.take(0, 10 + k).unwrap()).collect();
        for (s, slot) in taken {
            pool.put(0, s, slot, t0);
        }
        pool.end_wake();
        assert_eq!(pool.idle(0), 3, "what this wake-up took");
        // A wake-up that takes none: back to the limit, no sweep needed.
        pool.end_wake();
        assert_eq!(pool.idle(0), 2);
        assert_eq!(pool.next_trim(t0), None);
        // The newest are kept, the closed ones' slots are free.
        let kept = [pool.take(0, 1).unwrap().1, pool.take(0, 2).unwrap().1];
        assert!(kept.iter().all(|s| slots[..6].contains(s)));
        pool.end_wake();
        let reused = super::index(pool.open_slot(3));
        assert!(slots[..6].iter().any(|&s| super::index(s) == reused));
    }

    #[test]
    fn idle_proxy_connections_are_closed_once_unused_past_max_idle_oldest_first() {
        let mut pool = Pool::new(1, 4);
        let group = pool.add_group(4, Duration::from_secs(60));
        let t0 = Instant::now();
        let mut peers = Vec::new();
        for (k, at) in [0, 10, 20].into_iter().enumerate() {
            let (ours, peer) = UnixStream::pair().unwrap();
            peers.push(peer);
            let slot = pool.open_slot(k);
            pool.put(
                group,
                Stream::Unix(ours),
                slot,
                t0 + Duration::from_secs(at),
            );
        }
        // A FastCGI application's idle connection is never aged out.
        let (ours, _app) = UnixStream::pair().unwrap();
        let app_slot = pool.open_slot(7);
        pool.put(0, Stream::Unix(ours), app_slot, t0);
        pool.trim(t0 + Duration::from_secs(59));
        assert_eq!((pool.idle(group), pool.idle(0)), (3, 1));
        pool.trim(t0 + Duration::from_secs(75));
        assert_eq!((pool.idle(group), pool.idle(0)), (1, 1), "the two oldest");
        let newest = t0 + Duration::from_secs(20 + 60);
        assert_eq!(
            pool.next_trim(t0),
            Some(newest),
            "when the one left ages out"
        );
        // The one left is the newest, and the closed ones' slots are free again.
        let (_, slot) = pool.take_open(group, 9).unwrap();
        assert_eq!(slot, 2);
        assert_eq!(pool.next_trim(t0), None);
        assert!([0, 1].contains(&super::index(pool.open_slot(4))));
    }

    #[test]
    fn a_connection_closed_while_idle_leaves_the_rest_oldest_first() {
        let mut poll = Poll::new().unwrap();
        let mut pool = Pool::new(0, 0);
        let group = pool.add_group(4, Duration::from_secs(60));
        let t0 = Instant::now();
        let mut peers = Vec::new();
        let mut slots = Vec::new();
        for (k, at) in [0, 10, 20].into_iter().enumerate() {
            let (ours, peer) = UnixStream::pair().unwrap();
            peers.push(Some(peer));
            let mut s = Stream::Unix(ours);
            let slot = pool.open_slot(k);
            s.register_readable(poll.registry(), slot).unwrap();
            pool.put(group, s, slot, t0 + Duration::from_secs(at));
            slots.push(slot);
        }
        // The oldest is closed by the upstream and dropped on its event.
        drop(peers[0].take());
        let (readable, closed) = slot_event(&mut poll, slots[0]);
        assert_eq!(pool.event(slots[0], readable, closed), None);
        assert_eq!(pool.idle(group), 2);
        // Past the second one's age, not the third's: the second goes, the third stays.
        pool.trim(t0 + Duration::from_secs(75));
        assert_eq!(pool.idle(group), 1);
        assert_eq!(pool.take_open(group, 9).unwrap().1, slots[2]);
    }

    #[test]
    fn a_proxy_take_drops_an_idle_connection_holding_bytes_before_its_event_is_handled() {
        let mut pool = Pool::new(0, 0);
        let group = pool.add_group(2, Duration::from_secs(60));
        let (open, _open_peer) = UnixStream::pair().unwrap();
        let open_slot = pool.open_slot(5);
        pool.put(group, Stream::Unix(open), open_slot, Instant::now());
        let (late, mut late_peer) = UnixStream::pair().unwrap();
        let late_slot = pool.open_slot(6);
        pool.put(group, Stream::Unix(late), late_slot, Instant::now());
        // Bytes after a response's end, their event not handled yet: taken last in, checked
        // first, dropped (counted); the open one is taken.
        late_peer.write_all(b"STOLEN").unwrap();
        let (s, got) = pool.take_open(group, 9).unwrap();
        assert_eq!(got, open_slot);
        assert_eq!((pool.idle(group), pool.peer_closed), (0, 1));
        drop(s);
        assert!(pool.take_open(group, 9).is_none());
    }

    #[test]
    fn a_stale_close_of_a_slot_s_old_connection_leaves_its_new_one_be() {
        let mut pool = Pool::new(0, 0);
        let group = pool.add_group(2, Duration::from_secs(60));
        let old = pool.open_slot(5);
        // Its connection closes (a failed request), and the same wake-up opens another on the
        // freed slot; the old one's close is still in the batch.
        pool.close_slot(old);
        let new = pool.open_slot(7);
        assert_eq!(new & 0xffff, old & 0xffff, "the slot is reused");
        assert_ne!(new, old, "under a new generation");
        assert_eq!(pool.event(old, true, true), None, "stale: nobody is driven");
        let (ours, _peer) = UnixStream::pair().unwrap();
        pool.put(group, Stream::Unix(ours), new, Instant::now());
        assert_eq!(
            (pool.idle(group), pool.peer_closed),
            (1, 0),
            "the new connection kept, nothing counted closed"
        );
        assert_eq!(pool.event(new, false, false), None, "idle, open: kept");
        assert_eq!(pool.idle(group), 1);
    }
}
