//! The hot path: one thread's event loop over its Webchildren's connections.
//!
//! A Webchild is WebSTONE's unit of load: it picks a page by weight, fetches its files one after
//! another (or, pipelining, all at once; or, with several connections, as many at once, as a
//! browser does: `shared.rs`), records what happened, and picks the next page. Here a
//! Webchild is a small state machine, not a process or a thread, so that one core can drive
//! thousands of them and the client costs the server's neighbour as little CPU as possible.
//!
//! A Webchild is two parts side by side: its page logic ([`page::Child`]: which page next, think
//! time and schedule, what an exchange records, the end of the run's accounting) and its
//! connection, a [`Wire`] that speaks one protocol: HTTP/1.x ([`h1::H1`]: connect, write the
//! prebuilt request, read, frame the body with `wire`; keep-alive, HTTP/1.0 and pipelining) or
//! HTTP/2 ([`h2::H2`]: a page's files as concurrent streams of one connection through nghttp2's
//! sans-I/O session, or with one-file pages N streams each a page of its own) or HTTP/3
//! ([`h3::H3`]: a page's files as concurrent streams of one QUIC connection over a UDP socket,
//! through `crates/http3`). `--http 2` chooses `H2`, `--http 3` `H3`, anything else `H1`. The loop is generic over the wire, chosen once per run, so
//! each protocol is its own state machine in its own file and nothing is dispatched dynamically
//! per request.
//!
//! When there is nothing to do, `busy_poll::Waiter` polls a few microseconds before it sleeps,
//! and naps on a timer first when response times allow it (`read_slack::ReadSlack`), so that
//! the server does not pay to wake the client for every response.
//!
//! Every byte goes through [`crate::transport::Transport`]: plain TCP is those same calls; HTTPS
//! adds a handshake state between the TCP connect and the first request (timed apart from the
//! connect), and rustls decrypts into the same read buffer.
//!
//! Memory: reads go into one 64 KiB buffer per thread (over HTTPS, the ciphertext into a second
//! one, `transport/tls.rs`); a connection keeps only what its protocol
//! must carry between reads. A Webchild and its timer slot take under 300 bytes over HTTP/1 (a
//! test guards the figure).
//!
//! Time is kept in µs since the run's base instant; each Webchild has one deadline (connect
//! timeout, response timeout, or the end of a think/schedule/back-off wait) in `timers::Timers`.
//! The open loop also sets `alarm::Alarm` to the next deadline, so that pages leave on time to
//! the microsecond rather than to the next millisecond of `epoll_wait`.
//!
//! When the run ends, what was still going on is accounted for (`Webchild::at_end`): requests
//! sent and not answered are unfinished, those begun and not sent are apart, and in the open
//! loop pages that were due but never sent are counted. Nothing is begun or read into the
//! window at or after the end (see [`Wire`]). Before that accounting, the connections with a
//! page in progress get a lingering close (`linger.rs`), so the server has what was sent.

mod alarm;
mod app;
mod busy_poll;
mod connect;
mod errors;
mod exchange;
mod h1;
mod h2;
mod h3;
mod in_flight;
mod linger;
mod page;
mod page_flow;
mod read_slack;
mod redirects;
mod setup;
mod shared;
mod stream_lanes;
mod timers;

use alarm::Alarm;
pub(crate) use app::fixed_fields as app_fixed_fields;
pub(crate) use app::FixedFields as AppFixedFields;
use busy_poll::Waiter;
use exchange::Phase;
use h1::H1;
pub use h2::H2Requests;
use h2::H2;
pub(crate) use h3::trust as h3_trust;
use h3::H3;
use linger::Linger;
use page::Child;
use read_slack::ReadSlack;
use redirects::Redirects;
use setup::Running;
pub use setup::{
    child_rng, quota, Requests, RunShared, Schedule, ThreadOutcome, LATE_GRACE_MIN_US,
};
use shared::Group;
pub use shared::MAX_CONNECTIONS_PER_CHILD;
use timers::Timers;

use crate::config::HttpMode;
use crate::log::LogBuf;
use crate::progress::Counts;
use crate::stats::{second_index, ErrorKind, SecondStats, Stats};
use crate::Stop;
use mio::event::Event;
use mio::{Events, Poll, Registry};
use std::io::{self, Write};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// The per-thread read buffer. Larger than the longest response head wire accepts, so a
/// carried-over partial head always leaves room to read more.
pub const READ_BUF: usize = 64 * 1024;
const _: () = assert!(READ_BUF >= wire::response::MAX_RESPONSE_HEAD);
/// The longest the loop sleeps: Ctrl-C and the end of the run are seen within this.
const TICK_US: u64 = 50_000;
/// After a failed connect, wait this long before the next page: a dead server (refusing at once)
/// must not make the client spin at 100% CPU opening sockets, nor flood the figures with errors.
const BACKOFF_US: u64 = 10_000;
/// How often a thread publishes its live counts.
const PUBLISH_US: u64 = 100_000;
/// "No time": no deadline, no first byte yet, no connect.
const NONE: u64 = u64::MAX;
/// Seconds of time series a thread allocates before a timed run (about 27 KB each, mostly
/// untouched, so not resident, until the second comes).
const PREALLOCATED_SECONDS: usize = 3600;

/// One thread: Webchildren `ids` (global indexes) on one event loop, until the end.
pub fn run_thread(
    sh: &RunShared<'_>,
    thread: usize,
    ids: Range<usize>,
) -> io::Result<ThreadOutcome> {
    match sh.config.http {
        HttpMode::Http2 => run::<H2>(sh, thread, ids),
        HttpMode::Http3 => run::<H3>(sh, thread, ids),
        _ => run::<H1>(sh, thread, ids),
    }
}

/// [`run_thread`] with the connection type of the run's protocol.
fn run<C: Wire>(sh: &RunShared<'_>, thread: usize, ids: Range<usize>) -> io::Result<ThreadOutcome> {
    let running = Running(sh);
    let mut poll = Poll::new()?;
    // With several connections a Webchild, each is a member of its Webchild's group, in a
    // slot of its own (`shared.rs`).
    let members = sh.config.connections_per_child.max(1);
    let n = ids.len() * members;
    let groups = match members {
        1 => Vec::new(),
        _ => (ids.clone().enumerate())
            .map(|(i, id)| Group::new(i * members, id, sh))
            .collect(),
    };
    let mut cx = ThreadState {
        sh,
        thread,
        registry: poll.registry().try_clone()?,
        timers: Timers::new(n),
        stats: Stats::new(sh.workload, sh.schedule.interval_us.is_some()),
        log: sh.log.as_ref().map(LogBuf::new),
        live: Counts::default(),
        active: 0,
        first_connect_late_us: NONE,
        redirects: Redirects::default(),
        response_us: 0,
        members,
        groups,
    };
    // A timed run's seconds (+1 for a partial one) are allocated now, up to an hour; past that,
    // and with -n, a second allocates its histogram when it starts, in a vector with room.
    let seconds = match sh.config.stop {
        Stop::Duration(d) => (d.as_secs() as usize).saturating_add(1),
        Stop::Pages(_) => 1,
    };
    let room = seconds.clamp(PREALLOCATED_SECONDS, 24 * PREALLOCATED_SECONDS);
    cx.stats.timeseries.reserve_exact(room);
    cx.stats
        .preallocate_seconds(seconds.min(PREALLOCATED_SECONDS));
    let mut events = Events::with_capacity(n.clamp(16, 1024));
    let mut buf = vec![0u8; READ_BUF].into_boxed_slice();
    let mut children: Vec<Webchild<C>> = ids
        .enumerate()
        .flat_map(|(i, id)| (0..members).map(move |j| (i * members + j, id)))
        .map(|(slot, id)| Webchild::new(slot, id, sh))
        .collect();
    let schedule = &sh.schedule;
    let mut alarm = match schedule.interval_us {
        Some(_) => Some(Alarm::new(poll.registry(), schedule.base)?),
        None => None,
    };
    let now = cx.now();
    let began_us = now;
    for c in &mut children {
        c.begin(&mut cx, now);
    }
    let mut next_publish = now + PUBLISH_US;
    // Many requests in flight a connection: a sleep wakes to several responses (busy_poll.rs).
    let many_in_flight = sh.config.streams.is_some_and(|n| n > 1);
    let mut waiter = Waiter::new(sh.config.busy_poll, many_in_flight);
    // And there only, a nap before a sleep (read_slack.rs).
    let mut slack = ReadSlack::new(if many_in_flight {
        sh.config.read_slack
    } else {
        0.0
    });
    let (end_us, interrupted) = loop {
        let now = cx.now();
        if sh.stop.load(Ordering::Relaxed) {
            break (now.min(schedule.end_us), true);
        }
        if now >= schedule.end_us {
            break (schedule.end_us, false);
        }
        if cx.active == 0 {
            let last = children.iter().map(|c| c.ch.done_us).max().unwrap_or(now);
            break (last, false);
        }
        while let Some(slot) = cx.timers.pop_expired(now) {
            children[slot].on_timer(&mut cx, now);
        }
        if now >= next_publish {
            cx.live.behind = schedule
                .interval_us
                .map_or(0, |iv| behind(&children, iv, now));
            sh.progress.publish(thread, cx.live);
            next_publish = now + PUBLISH_US;
            if let Some(nap) = slack.nap(cx.live.requests, cx.response_us) {
                waiter.set_nap(nap);
            }
            // Every attempt has failed the same way (`runner/fail_fast.rs`): the run ends.
            if sh.gave_up.get().is_some() {
                break (now.min(schedule.end_us), false);
            }
        }
        let deadline = cx.timers.next_at().min(schedule.end_us);
        let until = deadline.min(now + TICK_US);
        // Only a real deadline needs the alarm; the tick does not (nor a syscall per wake-up).
        if let Some(alarm) = alarm.as_mut().filter(|_| deadline == until) {
            alarm.wake_at(until, now)?;
        }
        let timeout = Duration::from_micros(until.saturating_sub(now));
        if let Err(e) = waiter.wait(&mut poll, &mut events, timeout) {
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in events.iter() {
            if let Some(c) = children.get_mut(ev.token().0) {
                c.on_event(&mut cx, &mut buf, ev);
            }
        }
    };
    // After the window: a lingering close, so that every request counted as sent reaches the
    // server, and a late GOAWAY or `Connection: close` is seen (`linger.rs`). Nothing is counted.
    linger::linger_all(&mut poll, &mut events, &mut children, &cx, &mut buf);
    for c in &mut children {
        c.at_end(&mut cx, end_us);
    }
    drop(running);
    sh.progress.publish(thread, cx.live);
    // WebSTONE's cumulative time: how long each Webchild (all its connections) took part in
    // the measured window.
    for c in children.chunks(members) {
        let done = c.iter().map(|c| c.ch.done_us).max().unwrap_or(NONE);
        cx.stats.cumulative_us += done.min(end_us).saturating_sub(schedule.measure_us);
    }
    Ok(ThreadOutcome {
        stats: cx.stats,
        end_us,
        first_connect_late_us: Some(cx.first_connect_late_us).filter(|&t| t != NONE),
        began_us,
        interrupted,
        log_error: cx.log.and_then(LogBuf::finish),
    })
}

/// Open loop: pages due by `now` that their Webchildren have not started, beyond the one each
/// is about to start: a Webchild late by less than a whole interval is not behind yet.
fn behind<C>(children: &[Webchild<C>], interval_us: f64, now: u64) -> u64 {
    let late = |c: &Child| (now as f64 - c.next_intended_us) / interval_us;
    children
        .iter()
        .map(|c| &c.ch)
        .filter(|c| c.phase != Phase::Done && c.next_intended_us <= now as f64)
        .map(|c| late(c) as u64)
        .sum()
}

/// A thread's state other than its Webchildren (so a Webchild can borrow it mutably).
struct ThreadState<'a> {
    sh: &'a RunShared<'a>,
    thread: usize,
    registry: Registry,
    timers: Timers,
    stats: Stats,
    log: Option<LogBuf<'a>>,
    live: Counts,
    /// Webchildren not yet `Done`.
    active: usize,
    /// How late the thread's first connect began (see `ThreadOutcome`); `NONE` before it.
    first_connect_late_us: u64,
    /// `--redirect N`: the redirect targets this thread has learned, their requests built once.
    redirects: Redirects,
    /// The summed response times of `live.requests`, µs: what the read slack's nap is a share of.
    response_us: u64,
    /// Connections a Webchild (`--connections-per-client`), each a member of its group; with
    /// more than one, the groups, one a Webchild (`shared.rs`).
    members: usize,
    groups: Vec<Group>,
}

impl ThreadState<'_> {
    #[inline]
    fn now(&self) -> u64 {
        self.sh.schedule.base.elapsed().as_micros() as u64
    }

    /// Whether something that started at `start` and ends `now` is in the measured window.
    #[inline]
    fn counts(&self, start: u64, now: u64) -> bool {
        start >= self.sh.schedule.measure_us && now < self.sh.schedule.end_us
    }

    /// Whether the run's time is up at `now` (a clock read of this thread): from then on a
    /// Webchild begins nothing and takes nothing it reads into account, so that what is in
    /// flight stays in flight for `at_end` (docs/latency.md, the end of the run).
    #[inline]
    fn ended(&self, now: u64) -> bool {
        now >= self.sh.schedule.end_us
    }

    /// The time series' entry for `now` (in the window): an index, no clock read.
    #[inline]
    fn second(&mut self, now: u64) -> &mut SecondStats {
        let i = second_index(now.saturating_sub(self.sh.schedule.measure_us));
        self.stats.second(i)
    }

    /// `n` bytes read from a connection at `now`: the live count, and the window's.
    #[inline]
    fn count_read(&mut self, n: usize, now: u64) {
        self.live.bytes += n as u64;
        if self.counts(now, now) {
            self.stats.bytes_total += n as u64;
            self.second(now).bytes += n as u64;
        }
    }

    /// A failed request (or a non-2xx response) of `url`, in the window.
    #[inline]
    fn record_error(&mut self, url: usize, kind: ErrorKind, now: u64) {
        self.stats.record_error(url, kind);
        self.second(now).errors += 1;
    }

    fn debug(&self, head: &[u8]) {
        if self.sh.config.debug {
            let mut err = io::stderr().lock();
            let _ = err.write_all(head);
            let _ = err.write_all(b"\n");
        }
    }
}

/// A Webchild's connection: one protocol's state machine under the page logic. Its methods are
/// called by the loop with the Webchild's page state beside it; it calls the page logic
/// (`page.rs`) as its exchanges progress, and starts the next page through `page_flow::end_page`.
///
/// At the end of the run every wire keeps one rule, so that the server's count is the
/// client's `requests + unfinished` whatever the protocol: it begins a request only through
/// [`Child::may_begin`], and from its first clock read at or after the end
/// ([`ThreadState::ended`]) it connects, writes and processes nothing more, so what was in flight
/// stays in flight; `at_end` then tells the page logic, per request, whether it was sent in full
/// ([`Child::record_unfinished`]) or not ([`Child::record_unsent`]).
trait Wire: Sized {
    fn new(sh: &RunShared<'_>) -> Self;
    /// Fetch the page `ch` just picked (connecting first when there is no connection).
    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64);
    /// A readiness event of its socket (never while the Webchild is done).
    fn on_event(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event);
    /// Its deadline passed while a page is in progress (a timeout of its own).
    fn on_timer(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64);
    /// The run ended at `end`: each request in flight is recorded as unfinished (sent in full)
    /// or unsent (connecting, handshaking, partly written).
    fn at_end(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, end: u64);
    /// Drops the connection (if any).
    fn close(&mut self);
    /// After the end, before `at_end`: one step of the connection's lingering close from `at`
    /// (see `linger.rs`); what it reads is not counted.
    fn linger(&mut self, ch: &Child, cx: &ThreadState<'_>, at: Linger, buf: &mut [u8]) -> Linger;
    /// Whether a lingering connection also has timers of its own (QUIC's loss recovery):
    /// `linger_wake` is asked only then.
    const LINGER_TIMERS: bool = false;
    /// When the lingering connection must take a step without an event (None: only on one).
    fn linger_wake(&self) -> Option<std::time::Instant> {
        None
    }
}

/// One Webchild: its page logic and its connection.
struct Webchild<C> {
    ch: Child,
    conn: C,
}

impl<C: Wire> Webchild<C> {
    fn new(slot: usize, id: usize, sh: &RunShared<'_>) -> Self {
        Webchild {
            ch: Child::new(slot, id, sh),
            conn: C::new(sh),
        }
    }

    fn begin(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        cx.active += 1;
        if self.ch.pages_left == 0 {
            return page_flow::finish(&mut self.conn, &mut self.ch, cx, now);
        }
        match cx.sh.schedule.interval_us {
            None => page_flow::start_page(&mut self.conn, &mut self.ch, cx, now),
            Some(_) => cx.timers.arm(self.ch.slot, self.ch.next_intended_us as u64),
        }
    }

    #[inline]
    fn on_event(&mut self, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event) {
        if self.ch.phase != Phase::Done {
            self.conn.on_event(&mut self.ch, cx, buf, ev);
        }
    }

    fn on_timer(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        match self.ch.phase {
            Phase::Wait => page_flow::start_page(&mut self.conn, &mut self.ch, cx, now),
            Phase::Busy => self.conn.on_timer(&mut self.ch, cx, now),
            Phase::Done => {}
        }
    }

    /// The run ended at `end`: a request of the window still in flight is unfinished, and in
    /// the open loop every page due in the window that this Webchild never started is a page
    /// not sent.
    fn at_end(&mut self, cx: &mut ThreadState<'_>, end: u64) {
        if self.ch.phase == Phase::Busy {
            self.conn.at_end(&mut self.ch, cx, end);
        }
        self.ch.record_not_sent(cx, end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_connection_state_stays_far_below_16_kib() {
        // The Webchild, its timer slot (want, queued, gen) and its share of the heap (at most
        // two entries); plus the carried-over head, which is empty unless a head straddles reads.
        let per_child = std::mem::size_of::<Webchild<H1>>() + 8 + 8 + 4 + 2 * 16;
        println!("per-connection state: {per_child} bytes");
        assert!(per_child <= 512, "{per_child} bytes");
    }
}
