//! The hot path: one thread's event loop over its Webchildren's connections.
//!
//! A Webchild is WebSTONE's unit of load: it picks a page by weight, fetches its files one after
//! another (or, pipelining, all at once), records what happened, and picks the next page. Here a
//! Webchild is a small state machine, not a process or a thread, so that one core can drive
//! thousands of them and the client costs the server's neighbour as little CPU as possible.
//!
//! What a keep-alive request costs, by design (the floor client `cfloor.c` does the same):
//! one `write` of a request prebuilt at start, one `read` that brings the whole response, and a
//! share of one `epoll_wait` (when there is nothing to do, `busy_poll::Waiter` polls a few
//! microseconds before it sleeps, so that the server does not pay to wake the client for every
//! response). To get there:
//! - each socket is registered once, READABLE|WRITABLE, edge-triggered, and never re-registered;
//! - a read that returns less than the space offered drained the socket, so no second read is
//!   made only to see EAGAIN (edge-triggered epoll reports the next arrival anyway);
//! - the next request is written from the handler of the response that ended the previous one;
//! - requests are built once per URL (and per page, for pipelining) and written from that buffer.
//!
//! Every byte goes through [`crate::transport::Transport`]: plain TCP is those same calls; HTTPS
//! adds a handshake state between the TCP connect and the first request (timed apart from the
//! connect), and rustls decrypts into the same read buffer.
//!
//! Memory: reads go into one 64 KiB buffer per thread; a connection keeps only the bytes of a
//! response head split across reads (usually none), and a body is counted and dropped by
//! [`BodyDecoder`] as it passes. A Webchild and its timer slot take under 300 bytes, plus that
//! carry-over buffer (a test guards the figure).
//!
//! Time is kept in µs since the run's base instant; each Webchild has one deadline (connect
//! timeout, response timeout, or the end of a think/schedule/back-off wait) in `timers::Timers`.
//! The open loop also sets `alarm::Alarm` to the next deadline, so that pages leave on time to
//! the microsecond rather than to the next millisecond of `epoll_wait`.
//!
//! When the run ends, what was still going on is accounted for (`Webchild::at_end`): requests in
//! flight are unfinished, and in the open loop pages that were due but never sent are counted.

mod alarm;
mod busy_poll;
mod errors;
mod setup;
mod timers;

use alarm::Alarm;
use busy_poll::Waiter;
use errors::{connect_error, handshake_error, head_error, status_error};
use setup::Running;
pub use setup::{child_rng, Requests, RunShared, Schedule, ThreadOutcome};
use timers::Timers;

use crate::config::HttpMode;
use crate::log::{LogBuf, LogRecord};
use crate::progress::Counts;
use crate::stats::{second_index, ErrorKind, ResponseSample, SecondStats, Stats};
use crate::transport::Transport;
use crate::{Stop, Workload};
use mio::event::Event;
use mio::{Events, Poll, Registry, Token};
use std::io::{self, Write};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wire::response::{parse_response_head, BodyDecoder, Framing};

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
    let running = Running(sh);
    let mut poll = Poll::new()?;
    let n = ids.len();
    let mut cx = ThreadState {
        sh,
        thread,
        registry: poll.registry().try_clone()?,
        timers: Timers::new(n),
        stats: Stats::new(sh.workload, sh.schedule.interval_us.is_some()),
        log: sh.log.as_ref().map(LogBuf::new),
        live: Counts::default(),
        active: 0,
        certificate_failures: 0,
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
    let mut children: Vec<Webchild> = ids
        .enumerate()
        .map(|(slot, id)| Webchild::new(slot, id, sh))
        .collect();
    let schedule = &sh.schedule;
    let mut alarm = match schedule.interval_us {
        Some(_) => Some(Alarm::new(poll.registry(), schedule.base)?),
        None => None,
    };
    let now = cx.now();
    for c in &mut children {
        c.begin(&mut cx, now);
    }
    let mut next_publish = now + PUBLISH_US;
    let mut waiter = Waiter::new(sh.config.busy_poll);
    let (end_us, interrupted) = loop {
        let now = cx.now();
        if sh.stop.load(Ordering::Relaxed) {
            break (now.min(schedule.end_us), true);
        }
        if now >= schedule.end_us {
            break (schedule.end_us, false);
        }
        if cx.active == 0 {
            let last = children.iter().map(|c| c.done_us).max().unwrap_or(now);
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
            if cx.certificate_hopeless(now) {
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
    for c in &mut children {
        c.at_end(&mut cx, end_us);
    }
    drop(running);
    sh.progress.publish(thread, cx.live);
    // WebSTONE's cumulative time: how long each Webchild took part in the measured window.
    for c in &children {
        let end = c.done_us.min(end_us);
        cx.stats.cumulative_us += end.saturating_sub(schedule.measure_us);
    }
    Ok(ThreadOutcome {
        stats: cx.stats,
        end_us,
        interrupted,
        log_error: cx.log.and_then(LogBuf::finish),
    })
}

/// Open loop: pages due by `now` that their Webchildren have not started, beyond the one each
/// is about to start: a Webchild late by less than a whole interval is not behind yet.
fn behind(children: &[Webchild], interval_us: f64, now: u64) -> u64 {
    let late = |c: &Webchild| (now as f64 - c.next_intended_us) / interval_us;
    children
        .iter()
        .filter(|c| c.state != State::Done && c.next_intended_us <= now as f64)
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
    /// Handshakes that failed on the server's certificate, in the window or not: with no
    /// response at all, after a second they end the run (see `errors::certificate_hopeless`).
    certificate_failures: u64,
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

    /// The time series' entry for `now` (in the window): an index, no clock read.
    #[inline]
    fn second(&mut self, now: u64) -> &mut SecondStats {
        let i = second_index(now.saturating_sub(self.sh.schedule.measure_us));
        self.stats.second(i)
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

/// Where a Webchild is. Writing is not a state: a request's unsent bytes (`wpos..wend`) may be
/// pending while responses are already read, because with pipelining they overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Between pages: thinking, waiting for its open-loop slot, or backing off after a failed
    /// connect. A keep-alive connection may stay open meanwhile.
    Wait,
    /// Nonblocking connect in flight; the socket's first writable event ends it.
    Connecting,
    /// HTTPS: TCP is up, the TLS handshake is under way (within the connect timeout).
    Handshaking,
    /// Request sent (or being sent); the response head has not fully arrived.
    ReadingHead,
    /// Following the body with `decoder`.
    ReadingBody,
    /// HTTP/1.0: the response is complete; waiting for the server to close first.
    Closing,
    /// Quota done: nothing more to fetch.
    Done,
}

/// One Webchild: a connection, the page in progress and the timings of the file in progress.
struct Webchild {
    /// Index in this thread: the mio token and the timer slot.
    slot: usize,
    /// Global index: the log's `child` column and the random stream's key.
    id: usize,
    state: State,
    conn: Option<Transport>,
    /// Bumped at every close: data read from a connection that is gone is not processed.
    conn_gen: u32,
    /// Responses completed on this connection: a reused one the server may have closed idle.
    conn_responses: u32,
    /// Pages of the measured window, and a separate stream for warm-up, so the measured
    /// sequence is the same whatever the warm-up's length.
    rng: fastrand::Rng,
    warmup_rng: fastrand::Rng,
    pages_left: u64,
    next_intended_us: f64,
    page: usize,
    /// Index in the page's files of the response being read.
    file: usize,
    page_intended_us: u64,
    page_start_us: u64,
    file_start_us: u64,
    connect_start_us: u64,
    connect_us: u64,
    handshake_start_us: u64,
    written_us: u64,
    first_byte_us: u64,
    status: u16,
    resp_keep_alive: bool,
    header_bytes: u64,
    body_bytes: u64,
    /// Chunked framing of the response in progress (read, but neither head nor body).
    framing_bytes: u64,
    /// Bytes of a failing response that were never parsed as head or body.
    lost_bytes: u64,
    decoder: BodyDecoder,
    /// The current file was already retried once on a fresh connection.
    retried: bool,
    /// `Closing` goes on with the page's next file (else with the next page).
    next_file: bool,
    wpos: usize,
    wend: usize,
    /// A response head split across reads (usually empty).
    head: Vec<u8>,
    done_us: u64,
}

impl Webchild {
    fn new(slot: usize, id: usize, sh: &RunShared<'_>) -> Self {
        let offset = sh.schedule.interval_us.map_or(0.0, |iv| {
            // Spread the children's schedules over one interval, so pages do not come in bursts.
            iv * id as f64 / sh.schedule.concurrency as f64
        });
        Webchild {
            slot,
            id,
            state: State::Wait,
            conn: None,
            conn_gen: 0,
            conn_responses: 0,
            rng: child_rng(sh.config.seed, id, 0),
            warmup_rng: child_rng(sh.config.seed, id, 1),
            pages_left: sh.schedule.quota(id),
            next_intended_us: offset,
            page: 0,
            file: 0,
            page_intended_us: 0,
            page_start_us: 0,
            file_start_us: 0,
            connect_start_us: 0,
            connect_us: NONE,
            handshake_start_us: 0,
            written_us: 0,
            first_byte_us: NONE,
            status: 0,
            resp_keep_alive: false,
            header_bytes: 0,
            body_bytes: 0,
            framing_bytes: 0,
            lost_bytes: 0,
            decoder: BodyDecoder::new(Framing::Empty),
            retried: false,
            next_file: false,
            wpos: 0,
            wend: 0,
            head: Vec::new(),
            done_us: NONE,
        }
    }

    fn begin(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        cx.active += 1;
        if self.pages_left == 0 {
            return self.finish(cx, now);
        }
        match cx.sh.schedule.interval_us {
            None => self.start_page(cx, now),
            Some(_) => cx.timers.arm(self.slot, self.next_intended_us as u64),
        }
    }

    /// The URL index of the file in progress.
    fn url(&self, w: &Workload) -> usize {
        w.pages[self.page].files[self.file]
    }

    // ---- events ------------------------------------------------------------------------------

    fn on_event(&mut self, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event) {
        match self.state {
            State::Done => {}
            State::Connecting => self.on_connect_ready(cx),
            State::Handshaking => {
                let now = cx.now();
                self.on_handshake(cx, now);
            }
            // Between pages only a close (or garbage) can arrive: on_readable closes on either.
            State::Wait => self.on_readable(cx, buf, true),
            // The FIN (or an error) is all this state waits for; no read is needed to see it.
            State::Closing if ev.is_read_closed() || ev.is_error() => {
                let now = cx.now();
                self.closed(cx, now);
            }
            State::Closing if ev.is_readable() => self.on_readable(cx, buf, false),
            State::Closing => {}
            State::ReadingHead | State::ReadingBody => {
                let pending =
                    self.wpos < self.wend || self.conn.as_ref().is_some_and(Transport::wants_write);
                if ev.is_writable() && pending {
                    let now = cx.now();
                    if !self.flush(cx, now) {
                        return;
                    }
                }
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.on_readable(cx, buf, closed);
                }
            }
        }
    }

    fn on_timer(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        match self.state {
            State::Wait => self.start_page(cx, now),
            State::Connecting => self.fail(cx, ErrorKind::ConnectTimeout, now),
            State::Handshaking => self.fail(cx, ErrorKind::TlsHandshake, now),
            State::Closing => self.closed(cx, now),
            State::ReadingHead | State::ReadingBody => {
                self.fail(cx, ErrorKind::ResponseTimeout, now)
            }
            State::Done => {}
        }
    }

    // ---- pages and files ---------------------------------------------------------------------

    fn start_page(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let schedule = &cx.sh.schedule;
        let intended = match schedule.interval_us {
            Some(iv) => {
                let t = self.next_intended_us;
                self.next_intended_us += iv;
                (t as u64).min(now)
            }
            None => now,
        };
        let measured = intended >= schedule.measure_us;
        if measured {
            if self.pages_left == 0 {
                return self.finish(cx, now);
            }
            if schedule.pages.is_some() {
                self.pages_left -= 1;
            }
            if schedule.interval_us.is_some() && intended < schedule.end_us {
                cx.stats.record_send_lag(now - intended);
            }
        }
        let rng = if measured {
            &mut self.rng
        } else {
            &mut self.warmup_rng
        };
        self.page = cx.sh.picker.pick(rng);
        self.page_intended_us = intended;
        self.page_start_us = now;
        self.file = 0;
        self.start_file(cx, now);
    }

    fn start_file(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.file_start_us = now;
        self.retried = false;
        self.reset_response();
        if self.conn.is_some() {
            self.send(cx, now);
        } else {
            self.connect(cx, now);
        }
    }

    fn reset_response(&mut self) {
        self.connect_us = NONE;
        self.first_byte_us = NONE;
        self.status = 0;
        self.header_bytes = 0;
        self.body_bytes = 0;
        self.framing_bytes = 0;
        self.lost_bytes = 0;
    }

    /// Everything read so far for the response in progress.
    fn response_bytes(&self) -> u64 {
        self.header_bytes
            + self.body_bytes
            + self.framing_bytes
            + self.lost_bytes
            + self.head.len() as u64
    }

    /// An error status (4xx, 5xx, or one not in `--expect-status`) ends the page as an error
    /// (it is not a hit) although the response itself completed and counts as a request; the
    /// connection stays usable when the server says so.
    fn response_done(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let schedule = &cx.sh.schedule;
        let url = self.url(cx.sh.workload);
        let kind = status_error(self.status, cx.sh.config.expect_status.as_ref());
        let ok = kind.is_none();
        let open_first = schedule.interval_us.is_some() && self.file == 0;
        self.conn_responses += 1;
        cx.live.requests += 1;
        cx.live.errors += u64::from(!ok);
        if cx.counts(self.file_start_us, now) {
            // Open loop, first file: both count from when the page was due (no coordinated
            // omission); otherwise from the file's start and from the request's last byte.
            let (start, ttfb_from) = if open_first {
                (self.page_intended_us, self.page_intended_us)
            } else {
                (self.file_start_us, self.written_us)
            };
            let r = ResponseSample {
                header_bytes: self.header_bytes,
                body_bytes: self.body_bytes,
                ttfb_us: self.first_byte_us.saturating_sub(ttfb_from),
                response_us: now - start,
                response_uncorrected_us: now - self.file_start_us,
                transfer_us: now.saturating_sub(self.written_us),
            };
            cx.stats.record_response(self.page, url, &r);
            cx.stats.statuses.add(self.status);
            cx.stats.bytes_chunk_framing += self.framing_bytes;
            let second = cx.second(now);
            second.requests += 1;
            second.response.record_us(r.response_us);
            if let Some(kind) = kind {
                cx.record_error(url, kind, now);
            }
            self.log(cx, Some(r.response_us), kind.map_or("", ErrorKind::name));
        }
        let nfiles = cx.sh.workload.pages[self.page].files.len();
        let http10 = cx.sh.config.http == HttpMode::Http10;
        let pipelined = cx.sh.config.http == HttpMode::Pipeline;
        let more = self.file + 1 < nfiles;
        if http10 && !self.resp_keep_alive && self.conn.is_some() {
            return self.await_close(cx, now, ok, more);
        }
        // HTTP/1.0 closes after each file; a pipelined page cut short by an error still has its
        // other responses in flight, so its connection cannot be reused either.
        if !self.resp_keep_alive || http10 || (!ok && pipelined && more) {
            self.close();
        }
        if !ok || !more {
            return self.end_page(cx, ok, now, false);
        }
        self.file += 1;
        if pipelined && self.conn.is_some() {
            // Its request went with the page's batch; the response is on its way.
            self.reset_response();
            self.retried = false;
            self.state = State::ReadingHead;
            cx.timers
                .arm(self.slot, now + cx.sh.schedule.response_timeout_us);
        } else {
            self.start_file(cx, now);
        }
    }

    /// HTTP/1.0, the response complete (and recorded, so its time ends at its last byte): waits
    /// for the server's FIN before closing, so that the server closes first and keeps the
    /// TIME_WAIT, as with a 1995 client; closing at once left ~2% of them on the client. The FIN
    /// usually comes with the data (the event that brought it says so: then this state ends
    /// before the next read) or right after it, and epoll's read-closed flag shows it without a
    /// read, so the next file hardly waits. A server that keeps the connection open is waited
    /// for at most the response timeout, then closed.
    fn await_close(&mut self, cx: &mut ThreadState<'_>, now: u64, ok: bool, more: bool) {
        self.next_file = ok && more;
        if !self.next_file {
            self.record_page(cx, ok, now); // the page ended at its last byte, not at the FIN
        }
        self.state = State::Closing;
        cx.timers
            .arm(self.slot, now + cx.sh.schedule.response_timeout_us);
    }

    /// The end of `Closing`: the server's FIN (or the timeout, an error, stray bytes).
    fn closed(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        if self.next_file {
            self.file += 1;
            self.start_file(cx, now);
        } else {
            self.next_page(cx, now, false);
        }
    }

    fn end_page(&mut self, cx: &mut ThreadState<'_>, hit: bool, now: u64, backoff: bool) {
        self.record_page(cx, hit, now);
        self.next_page(cx, now, backoff);
    }

    fn record_page(&mut self, cx: &mut ThreadState<'_>, hit: bool, now: u64) {
        if hit {
            // For the live line's estimate of the Webchildren a rate needs.
            cx.live.pages += 1;
            cx.live.page_us += now - self.page_start_us;
        }
        if cx.counts(self.page_intended_us, now) {
            cx.live.window_pages += 1;
            cx.stats.record_page(
                self.page,
                hit,
                now - self.page_intended_us,
                now - self.page_start_us,
            );
        }
    }

    /// Thinks, waits for the next open-loop slot, or starts the next page (or finishes).
    fn next_page(&mut self, cx: &mut ThreadState<'_>, now: u64, backoff: bool) {
        if self.pages_left == 0 {
            return self.finish(cx, now);
        }
        let schedule = &cx.sh.schedule;
        let mut at = match schedule.interval_us {
            // Open loop: the next slot, however late this page ended (then it starts at once).
            Some(_) => self.next_intended_us as u64,
            None => now + schedule.think_us,
        };
        if backoff {
            at = at.max(now + BACKOFF_US);
        }
        if at <= now {
            return self.start_page(cx, now);
        }
        self.state = State::Wait;
        cx.timers.arm(self.slot, at);
    }

    fn finish(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        self.state = State::Done;
        self.done_us = now;
        cx.timers.disarm(self.slot);
        cx.active -= 1;
    }

    /// A request failed: counted by kind, the connection dropped, the page abandoned.
    fn fail(&mut self, cx: &mut ThreadState<'_>, kind: ErrorKind, now: u64) {
        cx.live.errors += 1;
        if cx.counts(self.file_start_us, now) {
            cx.record_error(self.url(cx.sh.workload), kind, now);
            cx.stats.bytes_failed += self.response_bytes();
            self.log(cx, None, kind.name());
        }
        self.close();
        let backoff = matches!(kind, ErrorKind::ConnectRefused | ErrorKind::ConnectOther);
        self.end_page(cx, false, now, backoff);
    }

    /// The log's line for the current file; `error` is empty for a success.
    fn log(&self, cx: &mut ThreadState<'_>, response_us: Option<u64>, error: &str) {
        let Some(log) = &mut cx.log else { return };
        let some = |t: u64| (t != NONE).then_some(t);
        let base = cx.sh.schedule.base_unix_us;
        log.push(&LogRecord {
            thread: cx.thread,
            child: self.id,
            page: &cx.sh.workload.pages[self.page].name,
            url: &cx.sh.workload.urls[self.url(cx.sh.workload)],
            intended_unix_us: cx
                .sh
                .schedule
                .interval_us
                .map(|_| base + self.page_intended_us),
            start_unix_us: base + self.file_start_us,
            connect_us: some(self.connect_us),
            ttfb_us: some(self.first_byte_us).map(|t| t.saturating_sub(self.written_us)),
            response_us,
            status: (self.status != 0).then_some(self.status),
            header_bytes: self.header_bytes,
            body_bytes: self.body_bytes,
            error,
        });
    }

    /// The run ended at `end`: a request of the window still in flight is unfinished (in the
    /// open loop it enters the corrected figures with its wait so far), and in the open loop
    /// every page due in the window that this Webchild never started is a page not sent.
    fn at_end(&mut self, cx: &mut ThreadState<'_>, end: u64) {
        let schedule = &cx.sh.schedule;
        let open = schedule.interval_us.is_some();
        let in_flight = matches!(
            self.state,
            State::Connecting | State::Handshaking | State::ReadingHead | State::ReadingBody
        );
        if in_flight && self.file_start_us >= schedule.measure_us {
            let start = if open && self.file == 0 {
                self.page_intended_us
            } else {
                self.file_start_us
            };
            let page_wait = open.then(|| end.saturating_sub(self.page_intended_us));
            let bytes = self.response_bytes();
            cx.stats
                .record_unfinished(end.saturating_sub(start), page_wait, bytes);
            self.log(cx, None, "unfinished");
        }
        let Some(iv) = schedule.interval_us else {
            return;
        };
        if self.state == State::Done {
            return;
        }
        // Its slots from `next_intended_us` on that were due in the window, up to its quota.
        let slot = |t: f64| ((t - self.next_intended_us) / iv).ceil().max(0.0);
        let (from, to) = (slot(schedule.measure_us as f64), slot(end as f64));
        let n = ((to - from).max(0.0) as u64).min(self.pages_left);
        let first = self.next_intended_us + from * iv;
        cx.stats.record_not_sent(end, first, iv, n);
    }

    // ---- connections -------------------------------------------------------------------------

    fn connect(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Connecting;
        self.conn_responses = 0;
        let prepared = match cx.sh.connector.prepare() {
            Ok(p) => p,
            Err(e) => return self.fail(cx, connect_error(&e), now),
        };
        // HTTPS: the TLS state (its key shares) was made just now, before the TCP connect, and
        // is not part of it; the response time, from `file_start_us`, still has it.
        let now = if prepared.is_tls() { cx.now() } else { now };
        self.connect_start_us = now;
        match Transport::open(&cx.sh.connector, prepared, &cx.registry, Token(self.slot)) {
            Ok(s) => {
                self.conn = Some(s);
                cx.timers
                    .arm(self.slot, now + cx.sh.schedule.connect_timeout_us);
            }
            Err(e) => self.fail(cx, connect_error(&e), now),
        }
    }

    /// The first event of a connecting socket: connected, failed, or (a stale event) neither yet.
    fn on_connect_ready(&mut self, cx: &mut ThreadState<'_>) {
        let Some(conn) = &self.conn else { return };
        let now = cx.now();
        match conn.connected() {
            Ok(true) => {}
            Ok(false) => return, // a stale event: still connecting
            Err(e) => return self.fail(cx, connect_error(&e), now),
        }
        self.connect_us = now - self.connect_start_us;
        if cx.counts(self.file_start_us, now) {
            let url = self.url(cx.sh.workload);
            cx.stats.record_connect(self.page, url, self.connect_us);
        }
        self.state = State::Handshaking;
        self.handshake_start_us = now;
        self.on_handshake(cx, now);
    }

    /// Moves the transport's handshake on (plain TCP has none: it is ready at once); when it is
    /// done, records it apart from the TCP connect and sends the request.
    fn on_handshake(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let Some(conn) = &mut self.conn else { return };
        match conn.handshake() {
            Ok(false) => {} // waiting for the socket, still under the connect deadline
            Ok(true) => {
                let mut now = now;
                if let Some((session, resumed)) = conn.tls_session() {
                    // Read after the handshake's own I/O: one call can send the ClientHello, read
                    // the server's whole flight and answer it, and `now` is from before.
                    now = cx.now();
                    if cx.counts(self.file_start_us, now) {
                        let took = now - self.handshake_start_us;
                        cx.stats.record_tls_handshake(took, resumed, session);
                    }
                }
                self.send(cx, now);
            }
            Err(e) => {
                cx.handshake_failed(&e, self.file_start_us, now);
                self.fail(cx, handshake_error(&e), now)
            }
        }
    }

    /// Starts writing the current file's request (pipelining: the page's, from this file on).
    fn send(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let r = &cx.sh.requests;
        let range = r.for_file(self.page, self.file, self.url(cx.sh.workload));
        cx.debug(&r.bytes()[range.clone()]);
        (self.wpos, self.wend) = (range.start, range.end);
        self.state = State::ReadingHead;
        cx.timers
            .arm(self.slot, now + cx.sh.schedule.response_timeout_us);
        self.flush(cx, now);
    }

    /// Writes what is pending; false if the write failed (and the failure was handled).
    fn flush(&mut self, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let Some(conn) = &mut self.conn else {
            return false;
        };
        while self.wpos < self.wend {
            match conn.write(&cx.sh.requests.bytes()[self.wpos..self.wend]) {
                Ok(0) => {
                    self.io_failed(cx, io::ErrorKind::WriteZero.into(), now);
                    return false;
                }
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io_failed(cx, e, now);
                    return false;
                }
            }
        }
        // TLS records the socket could not take yet go with its next writable event.
        if conn.wants_write() {
            if let Err(e) = conn.send_pending() {
                self.io_failed(cx, e, now);
                return false;
            }
        }
        self.written_us = now;
        true
    }

    /// Reads until the socket is drained, the connection is gone, or the data is unwanted.
    /// `closed`: the event also reported the peer's FIN or RST, which no later edge will report
    /// again, so the socket is read until it says so even after a short read.
    fn on_readable(&mut self, cx: &mut ThreadState<'_>, buf: &mut [u8], closed: bool) {
        let gen = self.conn_gen;
        loop {
            let carry = self.head.len();
            buf[..carry].copy_from_slice(&self.head);
            let Some(conn) = &mut self.conn else { return };
            let res = conn.read(&mut buf[carry..]);
            let now = cx.now();
            match res {
                Ok(0) => return self.on_eof(cx, now),
                Ok(n) => {
                    cx.live.bytes += n as u64;
                    if cx.counts(now, now) {
                        cx.stats.bytes_total += n as u64;
                        cx.second(now).bytes += n as u64;
                    }
                    self.head.clear();
                    self.on_data(cx, &buf[..carry + n], now);
                    let drained = n < buf.len() - carry;
                    if self.conn_gen != gen {
                        return;
                    }
                    // HTTP/1.0: the FIN came with the response and all is read: closing now is
                    // the passive close, without a read to see the EOF.
                    if closed && drained && self.state == State::Closing {
                        return self.closed(cx, now);
                    }
                    // Less than offered: drained (edge-triggered epoll reports what comes next).
                    if drained && !closed {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(cx, e, now),
            }
        }
    }

    /// Parses heads and follows bodies through `data`; pipelined responses follow back to back.
    fn on_data(&mut self, cx: &mut ThreadState<'_>, data: &[u8], now: u64) {
        let gen = self.conn_gen;
        let mut pos = 0;
        while self.conn_gen == gen {
            match self.state {
                State::ReadingHead => {
                    if pos == data.len() {
                        return;
                    }
                    if self.first_byte_us == NONE {
                        self.first_byte_us = now;
                    }
                    let rest = &data[pos..];
                    let head_request = cx.sh.requests.is_head(self.url(cx.sh.workload));
                    let h = match parse_response_head(rest, head_request) {
                        Ok(Some(h)) => h,
                        Ok(None) => return self.head.extend_from_slice(rest),
                        Err(e) => {
                            self.lost_bytes += rest.len() as u64;
                            return self.fail(cx, head_error(e), now);
                        }
                    };
                    cx.debug(&rest[..h.head_len]);
                    pos += h.head_len;
                    self.header_bytes += h.head_len as u64;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue; // interim response: the final one follows
                    }
                    self.status = h.status;
                    self.resp_keep_alive = h.keep_alive && h.status != 101;
                    self.decoder = BodyDecoder::new(h.framing);
                    self.state = State::ReadingBody;
                }
                // An empty slice is fed too: a bodiless response is complete right after its head.
                State::ReadingBody => match self.decoder.feed(&data[pos..]) {
                    Err(_) => {
                        self.lost_bytes += (data.len() - pos) as u64;
                        return self.fail(cx, ErrorKind::ShortBody, now);
                    }
                    Ok(p) => {
                        pos += p.consumed;
                        self.body_bytes += p.body as u64;
                        self.framing_bytes += (p.consumed - p.body) as u64;
                        if !p.done {
                            return;
                        }
                        self.response_done(cx, now);
                    }
                },
                _ if pos == data.len() => return,
                // Bytes nobody asked for (between pages, or after the last response): the
                // connection is out of step with us, so it is dropped.
                State::Closing => return self.closed(cx, now),
                _ => return self.close(),
            }
        }
    }

    fn on_eof(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        match self.state {
            State::ReadingHead if self.may_retry(cx) => self.retry(cx, now),
            State::ReadingHead => self.fail(cx, ErrorKind::Reset, now),
            State::ReadingBody => match self.decoder.eof() {
                Ok(()) => {
                    // Close-delimited: complete, and the server has closed already.
                    self.close();
                    self.response_done(cx, now)
                }
                Err(_) => self.fail(cx, ErrorKind::ShortBody, now),
            },
            State::Closing => self.closed(cx, now), // the server closed first, as it should
            _ => self.close(), // the server closed an idle keep-alive connection
        }
    }

    fn io_failed(&mut self, cx: &mut ThreadState<'_>, e: io::Error, now: u64) {
        if self.state == State::Closing {
            return self.closed(cx, now);
        }
        if !matches!(self.state, State::ReadingHead | State::ReadingBody) {
            return self.close();
        }
        let reset = matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        );
        if reset && self.may_retry(cx) {
            return self.retry(cx, now);
        }
        let kind = if reset {
            ErrorKind::Reset
        } else {
            ErrorKind::Io
        };
        self.fail(cx, kind, now);
    }

    /// A reused keep-alive connection that closes before any byte of the response was most
    /// likely closed idle by the server as we wrote: RFC 9112 9.3.1 lets a client resend an
    /// idempotent request once, on a new connection. A fresh connection failing is an error.
    fn may_retry(&self, cx: &ThreadState<'_>) -> bool {
        cx.sh.requests.may_resend(self.url(cx.sh.workload))
            && self.conn_responses > 0
            && !self.retried
            && self.first_byte_us == NONE
            && self.head.is_empty()
    }

    fn retry(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        self.retried = true;
        self.reset_response();
        self.connect(cx, now);
    }

    fn close(&mut self) {
        // Dropping the socket also removes it from the epoll set: no deregister call needed.
        if self.conn.take().is_some() {
            self.conn_gen = self.conn_gen.wrapping_add(1);
        }
        self.conn_responses = 0;
        self.head.clear();
        self.wpos = 0;
        self.wend = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_connection_state_stays_far_below_16_kib() {
        // The Webchild, its timer slot (want, queued, gen) and its share of the heap (at most
        // two entries); plus the carried-over head, which is empty unless a head straddles reads.
        let per_child = std::mem::size_of::<Webchild>() + 8 + 8 + 4 + 2 * 16;
        println!("per-connection state: {per_child} bytes");
        assert!(per_child <= 512, "{per_child} bytes");
    }
}
