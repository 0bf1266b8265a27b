//! The pool's tests, apart from it: its idle connections on a real poll (registration, events,
//! closes seen while idle or busy, stale events of a reused slot), its spare buffers and its
//! trimming past a group's limit or max_idle.

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
