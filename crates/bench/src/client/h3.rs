//! HTTP/3 on a Webchild's connection: a page's files as concurrent streams of one QUIC
//! connection, through `crates/http3`'s sans-I/O `Client` (quiche), under the same page logic
//! as HTTP/1 and HTTP/2. This file is the connection's state and what the event loop calls
//! (`Wire`); the rest is in `h3/`, one concept a file:
//!
//! - `connecting.rs`: a non-blocking UDP socket connected to the server, registered with the
//!   loop's poll under the Webchild's token; the QUIC handshake (TLS 1.3, ALPN `h3`) within the
//!   connect timeout, its time the connect row's; the client's configuration (trust: `--cacert`,
//!   `--insecure`), made once a thread.
//! - `datagrams.rs`: every datagram the socket holds handed to the client, every datagram the
//!   client gives sent once due (`recvmmsg` and UDP GRO in, UDP GSO out: `http3::udp`, as in
//!   flint serve), and QUIC's deadline on the Webchild's timer.
//! - `pacing.rs`: QUIC's pacing time honoured: a datagram due later is kept aside and sent at
//!   its time from the Webchild's timer, first in the next GSO batch.
//! - `streams.rs`: the page's files as streams, up to `--streams` in flight (default: the whole
//!   page) and the server's stream limit, in the connection's table of exchanges in flight
//!   (`client/in_flight.rs`); each response's head and body recorded as over HTTP/2 (time to
//!   first byte, response time, the page's time). When every page is one file and `--streams
//!   N` is more than one, each stream is a page of its own ("lanes", `client/stream_lanes.rs`,
//!   as over HTTP/2), N in flight: in the closed loop refilled in batches; in the open loop each
//!   starts at its slot on a free stream; with `--think` a lane thinks after its page.
//! - `app.rs`: an application workload's requests built per use as their streams open, and
//!   their responses kept per stream and judged, through `client/app.rs` (a workload without
//!   one never goes there).
//! - `outcomes.rs`: failures by kind. A stream the server resets fails alone
//!   (`h3_stream_reset`, its code named in `summary.http3`; one it rejects, H3_REQUEST_REJECTED,
//!   never processed, is sent again instead, as HTTP/2 sends a REFUSED_STREAM's: here once, or
//!   on a new connection if this one is going away or closes first, where its first rejection
//!   is sent again once more), and so does one unanswered past
//!   the response timeout (`response_timeout`, cancelled); a GOAWAY lets the streams it covers
//!   finish and sends those it did not process again on a new connection (counted as retried;
//!   judged by the rule HTTP/2 shares, `client/in_flight/refusals.rs`);
//!   a connection that ends fails its streams by why (`h3_handshake` with the TLS alert named,
//!   `h3_idle_timeout`, `h3_connection_closed` with the code named, `h3_protocol`).
//!
//! The connection is kept across a Webchild's pages. Between pages the page logic owns the
//! Webchild's timer, so QUIC's deadline is serviced when the next page starts (a connection
//! that timed out meanwhile is replaced then). Lanes waiting for a slot with streams in flight,
//! or thinking, are not between pages: the timer stays the connection's, armed to the lanes'
//! wake-up beside QUIC's deadline and the response timeout.

mod app;
mod connecting;
mod datagrams;
mod debug;
mod outcomes;
mod pacing;
mod streams;

use super::app::{AppExchange, AppStream, H2Request};
use super::exchange::Exchange;
use super::in_flight::InFlight;
use super::linger::Linger;
use super::page::Child;
use super::{RunShared, ThreadState, Wire, NONE};
use crate::stats::Packets;
pub(crate) use connecting::trust;
use connecting::{thread_config, ThreadConfig};
use mio::event::Event;
use mio::net::UdpSocket;
use std::collections::VecDeque;
use std::net::SocketAddr;
use streams::Stream;

/// Where an HTTP/3 connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No connection.
    Idle,
    /// No connection: the wait before the next one, after connections on which the server
    /// processed nothing (`connecting.rs`), until `backoff_until`.
    Backoff,
    /// The QUIC handshake is under way.
    Handshaking,
    /// Streams may be opened.
    Open,
}

/// One Webchild's HTTP/3 connection and its streams.
pub(super) struct H3 {
    state: State,
    config: ThreadConfig,
    sock: Option<UdpSocket>,
    client: Option<http3::Client>,
    peer: SocketAddr,
    /// The run's base instant: QUIC's deadlines in the loop's µs.
    base: std::time::Instant,
    /// The client's datagrams written for one GSO send, and those the socket refused yet.
    tx: datagrams::Sender,
    /// The thread's receiving buffers; whether this connection's socket has UDP GRO.
    rx: datagrams::ThreadReceiver,
    gro: bool,
    /// Streams in flight (a few: a page's files at most), keyed by stream id, and the exchanges
    /// to send again: a GOAWAY's unprocessed ones on a new connection, a redirect to follow, a
    /// request held back.
    flight: InFlight<Stream>,
    /// Some stream in flight may have request body left to send (set when one with a body
    /// opens, cleared by a walk that finds none): without one (every GET) no walk is made.
    bodies_pending: bool,
    /// Streams in flight at most (`--streams`; a page's files when unset).
    want: usize,
    /// Whether each stream is a page of its own (one-file pages, `--streams N` above one: N
    /// pages in flight as lanes, as over HTTP/2).
    lanes: bool,
    /// Lanes with `--think`: when each lane whose page ended is done thinking, in order (the
    /// think time is the same for all); such a lane is not free for a new page before then.
    thinking: VecDeque<u64>,
    /// Lanes: when the connection must look again for a free lane's page (the next open-loop
    /// slot, or the first thinking lane's end; NONE: not before a stream ends), set by `fill`
    /// for the timer.
    lane_wake_us: u64,
    /// The page's next file to request; whether none failed so far.
    next_file: usize,
    page_ok: bool,
    /// The page was started and none of its files was sent yet.
    fresh: bool,
    /// A page is in progress; between pages the connection only waits.
    busy: bool,
    /// A stream was opened on this connection; the server processed one (it ended otherwise
    /// than above a GOAWAY: answered, reset, failed). What a GOAWAY leaves is judged by it
    /// (`outcomes.rs`, `judge_refusals`).
    opened_any: bool,
    processed: bool,
    /// Connections in a row that came up and on which the server processed no stream: the
    /// next one waits, longer each time (`connecting.rs`), until `backoff_until`.
    empty_in_a_row: u32,
    backoff_until: u64,
    /// Connections started so far: the one on which a refusal was counted as retried.
    conn_gen: u64,
    /// The server's GOAWAY: the first stream it will not process. No more streams here.
    goaway: Option<u64>,
    /// A GOAWAY read after the end of the run (`linger`): its first stream not processed.
    late_goaway: Option<u64>,
    /// Since when the page's next file has waited for the server to allow a stream (NONE: not
    /// waiting): the wait is bounded by the response timeout.
    no_room_since: u64,
    /// A bound below since when the stream in flight that has waited longest waits (NONE: none
    /// in flight), as HTTP/2's `oldest_us`: lowered as streams go, kept as they end, so the
    /// response timer fires early at worst and the table is scanned for late streams (and the
    /// bound made exact) only once it has expired, not at every wake-up.
    oldest_us: u64,
    connect_start_us: u64,
    connect_us: u64,
    /// When the connection being opened was begun, for the files waiting for it (NONE once
    /// they are sent): their response times hold the handshake, as their page's does.
    waited_from: u64,
    /// The connection's packet counts already added to the statistics.
    counted: Packets,
    /// The connection's figures when the run ended (the first step of its linger): what it
    /// reads after that is not the run's.
    at_end_stats: Option<http3::Stats>,
    /// An application workload (`h3/app.rs`): the Webchild's session, made at its first page;
    /// the request being built; the buffers of streams done, for the next ones; and whether a
    /// request of the page was not sent for a missing value.
    app: Option<Box<AppExchange>>,
    request: H2Request,
    spare: Vec<AppStream>,
    unsent: bool,
    /// An application's request built but not opened (no room for its header block yet): the
    /// index in `retry` of its exchange and its stream's buffers; its fields in
    /// `held_request` (swapped with `request`, so both buffers are reused). It goes as built
    /// when its exchange does, so that `{{seq}}` and `{{random}}` advance once per request.
    held: Option<(usize, AppStream)>,
    held_request: H2Request,
    /// `--tls-resume`: the session the server gave on the Webchild's last connection, offered
    /// by its next one (empty: none yet, or resumption off).
    session: Vec<u8>,
    /// `--tls-resume` was given: without it no session is kept nor offered, so every
    /// handshake is a full one (as over TCP).
    resume: bool,
}

impl Wire for H3 {
    fn new(sh: &RunShared<'_>) -> Self {
        let w = sh.workload;
        let most_files = w.pages.iter().map(|p| p.files.len()).max().unwrap_or(1);
        let want = sh.config.streams.map_or(most_files, |n| n.max(1) as usize);
        let lanes = most_files == 1 && want > 1;
        H3 {
            state: State::Idle,
            config: thread_config(sh),
            sock: None,
            client: None,
            peer: sh.config.target.addr,
            base: sh.schedule.base,
            tx: datagrams::Sender::new(),
            rx: datagrams::thread_receiver(),
            gro: false,
            flight: InFlight::new(want),
            bodies_pending: false,
            want,
            lanes,
            thinking: VecDeque::with_capacity(if lanes { want } else { 0 }),
            lane_wake_us: NONE,
            next_file: 0,
            page_ok: true,
            fresh: false,
            busy: false,
            opened_any: false,
            processed: false,
            empty_in_a_row: 0,
            backoff_until: NONE,
            conn_gen: 0,
            goaway: None,
            late_goaway: None,
            no_room_since: NONE,
            oldest_us: NONE,
            connect_start_us: 0,
            connect_us: NONE,
            waited_from: NONE,
            counted: Packets::default(),
            session: Vec::new(),
            resume: sh.config.tls.resume,
            at_end_stats: None,
            app: None,
            request: H2Request::default(),
            held: None,
            held_request: H2Request::default(),
            spare: Vec::new(),
            unsent: false,
        }
    }

    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.next_file = 0;
        self.page_ok = true;
        self.fresh = true;
        self.busy = true;
        self.unsent = false;
        // A new page has nothing held back from the last one (its buffers back to the pool).
        self.release_held();
        if cx.sh.workload.app.0.is_some() && !self.app_page(ch, cx, now) {
            return;
        }
        if self.state == State::Open {
            // Kept since the last page: QUIC's deadline may have passed meanwhile (acks,
            // the idle timeout), and the server may have closed it or sent GOAWAY.
            self.service_deadline(now);
            if self.client.as_ref().is_none_or(http3::Client::is_closed) || self.goaway.is_some() {
                self.take_packets(cx, now);
                self.close();
            }
        }
        match self.state {
            State::Idle => self.connect(ch, cx, now),
            State::Open => self.next(ch, cx, now),
            // The page's streams go when the handshake is done (after the wait, if any).
            State::Backoff | State::Handshaking => {}
        }
    }

    fn on_event(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event) {
        if matches!(self.state, State::Idle | State::Backoff) {
            return;
        }
        let now = cx.now();
        if cx.ended(now) {
            // At or after the end nothing is read or sent: `linger` reads what is left.
            return;
        }
        let read = ev.is_readable() || ev.is_error();
        if ev.is_writable() && self.tx.held.is_some() {
            if !self.flush(ch, cx, now) {
                return;
            }
            // A datagram kept for its pacing time by this flush needs the timer (a read arms
            // it after its own flush).
            if !read {
                self.arm(ch, cx);
            }
        }
        if read {
            self.on_readable(ch, cx, buf, now);
        }
    }

    fn on_timer(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if cx.ended(now) {
            return; // in flight at the end: `at_end` counts it
        }
        if self.state == State::Backoff {
            return self.start(ch, cx, now);
        }
        self.service_deadline(now);
        if self.client.as_ref().is_some_and(http3::Client::is_closed) {
            return self.closed(ch, cx, now);
        }
        if self.state == State::Handshaking
            && now >= self.connect_start_us + cx.sh.schedule.connect_timeout_us
        {
            return self.conn_failed(ch, cx, crate::stats::ErrorKind::ConnectTimeout, now);
        }
        if self.state == State::Open {
            self.timed_out(ch, cx, now);
        }
        if self.state != State::Idle {
            self.next(ch, cx, now);
        }
    }

    fn at_end(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, end: u64) {
        self.take_packets(cx, end);
        // Sent in full (its head's datagrams out, its body taken whole by quiche) and not
        // refused by a late GOAWAY or rejection: unfinished; else, and those to send again, not
        // sent (an upload cut short so is cancelled by the linger: `linger_step`). A body taken
        // whole may still sit partly in quiche (its cap on what it takes counts the peer's
        // credit, not what it already buffers): what gets it out is the linger, which sends
        // after each read until its bound (1 s); cut by that bound, it is counted, not
        // delivered.
        let late_goaway = self.late_goaway;
        let any = self.flight.record_at_end(ch, cx, end, |id, s| {
            let refused = late_goaway.is_some_and(|first| id >= first) || s.rejected_late;
            let whole = s.ex.written_us != NONE && s.body_left() == 0;
            (whole && !refused).then(|| s.ex.bytes())
        });
        // Connecting, or waiting for the server to allow a stream: the page's next file was
        // begun and not sent (lanes: the page picked last, whatever the other lanes hold).
        if self.fresh && (self.lanes || !any) {
            let ex = self.first_exchange(ch, cx.sh.workload);
            ch.record_unsent(cx, &ex, end);
        }
    }

    fn linger(&mut self, _: &Child, _: &ThreadState<'_>, at: Linger, _: &mut [u8]) -> Linger {
        self.linger_step(at)
    }

    const LINGER_TIMERS: bool = true;

    fn linger_wake(&self) -> Option<std::time::Instant> {
        self.client.as_ref().and_then(http3::Client::deadline)
    }

    fn close(&mut self) {
        self.say_goodbye();
        self.keep_session();
        // Dropping the socket also removes it from the epoll set.
        self.sock = None;
        self.client = None;
        if self.state == State::Open {
            self.empty_in_a_row = match self.processed {
                true => 0,
                false => self.empty_in_a_row.saturating_add(1),
            };
        }
        self.state = State::Idle;
        self.tx.held = None;
        self.backoff_until = NONE;
        // The streams' buffers back to the pool, for the requests built next; a request held
        // back stays only with its exchange (kept across a new connection after a GOAWAY).
        self.spare.extend(self.flight.drain().filter_map(|s| s.app));
        if self
            .held
            .as_ref()
            .is_some_and(|(at, _)| *at >= self.flight.retry.len())
        {
            self.release_held();
        }
        self.goaway = None;
        self.late_goaway = None;
        (self.opened_any, self.processed) = (false, false);
        self.thinking.clear();
        self.lane_wake_us = NONE;
        self.no_room_since = NONE;
        self.oldest_us = NONE;
        self.waited_from = NONE;
        self.counted = Packets::default();
        self.at_end_stats = None;
    }
}

impl Drop for H3 {
    /// The run is over: the server is told the connection ends (one datagram, not waited for),
    /// rather than left to its idle timeout.
    fn drop(&mut self) {
        self.say_goodbye();
    }
}

impl H3 {
    /// A file's outcome for its page: with lanes the page is the file's own, recorded now (its
    /// end is the file's), and its lane thinks (`--think`) before its next page; else the page
    /// (recorded when its last file ends) is a hit only if every file is.
    pub(super) fn file_done(
        &mut self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        ok: bool,
        now: u64,
    ) {
        if self.lanes {
            Child::record_page(cx, ex.page, ok, now);
            // A page whose stream ended was taken out of the table first, so its lane always
            // thinks, as over HTTP/2 (which thinks only for streams that ended). Here a page
            // may also fail with no stream (the wait for room timed out): with every lane busy
            // or thinking it held none, and thinking for it would make the lanes more than N
            // and grow the queue past the capacity reserved for it (one a lane).
            let think = cx.sh.schedule.think_us;
            if think > 0 && self.flight.len() + self.thinking.len() < self.want {
                self.thinking.push_back(now + think);
            }
        } else {
            self.page_ok &= ok;
        }
    }

    /// A request held back by quiche given up: its buffers back to the pool.
    pub(super) fn release_held(&mut self) {
        self.spare.extend(self.held.take().map(|(_, kept)| kept));
    }

    /// The exchange the connection is made for (what its connect is recorded on, and a failed
    /// connect counted on): the first to send again after a GOAWAY, or the page's next file.
    fn first_exchange(&self, ch: &Child, w: &crate::Workload) -> Exchange {
        let file = match self.flight.retry.last() {
            // Lanes: its own page, not the one the Webchild picked last (unless that one is
            // still to be sent: it is what waits for the connection).
            Some(ex) if self.lanes && !self.fresh => {
                return Exchange {
                    connect_us: self.connect_us,
                    ..*ex
                }
            }
            Some(ex) => ex.file,
            None => self.next_file,
        };
        Exchange {
            file: file.min(ch.files(w) - 1),
            file_start_us: ch.page.start_us,
            connect_us: self.connect_us,
            ..Exchange::new(ch.page)
        }
    }
}
