//! HTTP/2 on a Webchild's connection: a page's files as concurrent streams of one connection,
//! through nghttp2's sans-I/O session (`http2::Session`), under the same page logic as HTTP/1.
//!
//! A connection is up when the server's SETTINGS have arrived: TCP connect, TLS handshake (ALPN
//! `h2`; cleartext is HTTP/2 by prior knowledge), the preface and the SETTINGS exchange, all
//! within the connect timeout. Then the page's files go as streams, up to `--streams` in flight
//! (default: the whole page) and never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS
//! (read before each batch: a later SETTINGS may change it; while it is 0 the page waits, within
//! the response timeout); the page ends with its last stream. When every page is one file and `--streams N` is more
//! than one, each stream is a page of its own and N of them are kept in flight (h2load's `-m`).
//!
//! What a request costs: its HEADERS built by nghttp2 from a header list prebuilt at start (an
//! array of references on the stack, nothing allocated but nghttp2's own stream state), one
//! `write` for all that `send` queued, one `read` for all that arrived. Every byte read is
//! first walked frame by frame (`frames.rs`) so that header blocks, bodies and framing are
//! counted apart.
//!
//! Failures: a stream the server resets fails alone (`h2_rst_stream`; REFUSED_STREAM, never
//! processed, is sent again instead, once), and so does one left
//! unanswered past the response timeout (`response_timeout`, reset with CANCEL; the timer
//! follows the oldest stream in flight, not the connection's last progress); a GOAWAY lets the
//! streams it covers finish and sends those it did not process again on a new connection
//! (counted as retried, not failed); anything that ends the connection fails its streams by
//! its kind (a protocol error, a reset, a timeout).

mod frames;
mod outcomes;
mod requests;
mod streams;

pub use requests::H2Requests;

use super::errors::{alpn_refused, connect_error, handshake_error};
use super::page::{self, Child, Exchange};
use super::redirects::OWN;
use super::{RunShared, ThreadState, Wire, NONE};
use crate::config::{H2_CONNECTION_WINDOW, H2_STREAM_WINDOW};
use crate::stats::ErrorKind;
use crate::transport::Transport;
use frames::{FrameScanner, Span};
use http2::{Header, Session};
use mio::event::Event;
use mio::Token;
use requests::STACK_FIELDS;
use std::io;
use std::sync::atomic::{AtomicI32, Ordering};
use streams::{Io, PageRef};

/// For tests only: the id of each connection's first stream when not 0 (nghttp2 refuses new
/// streams once ids run out after 2^30 of them; starting near the end reaches that in a few).
#[doc(hidden)]
pub static FIRST_STREAM_ID: AtomicI32 = AtomicI32::new(0);

/// Where an HTTP/2 connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No connection.
    Idle,
    /// Nonblocking connect in flight.
    Connecting,
    /// HTTPS: the TLS handshake is under way.
    Handshaking,
    /// The preface is sent; the server's SETTINGS have not arrived.
    Settings,
    /// Streams may be opened.
    Open,
}

/// One Webchild's HTTP/2 connection and its streams.
pub(super) struct H2 {
    state: State,
    conn: Option<Transport>,
    session: Option<Session<Io>>,
    io: Io,
    frames: FrameScanner,
    /// Whether each stream is a page of its own (one-file pages, several streams).
    lanes: bool,
    /// Streams in flight at most (`--streams`; a page's files when unset), before the server's
    /// own limit.
    want: usize,
    /// The limit on this connection: `want` and the server's limit (its SETTINGS may change
    /// it at any time: read before streams are opened).
    limit: usize,
    /// Since when work has waited with no stream allowed (the server's limit is 0), or NONE:
    /// the wait is bounded by the response timeout.
    no_room_since: u64,
    /// When the oldest stream in flight was written (NONE: none in flight): the response
    /// timer is armed to it plus the response timeout, so one stalled stream times out even
    /// while others progress.
    oldest_us: u64,
    in_flight: usize,
    /// Page mode: the next file of the page to request.
    next_file: usize,
    /// Page mode: no file of the page failed so far.
    page_ok: bool,
    /// Lanes: the Webchild's current page was picked and not yet sent.
    fresh: bool,
    /// A page (or, lanes, a run of them) is in progress; between pages the connection only
    /// waits, and a server that closes it or sends GOAWAY then fails nothing.
    busy: bool,
    /// No more streams on this connection (a GOAWAY, or nghttp2 refused one: stream ids ran
    /// out): those in flight finish, then what is left goes on a new connection.
    draining: bool,
    /// Exchanges the server's GOAWAY left unprocessed, to send again on a new connection, and
    /// (`--redirect N`) redirects to follow, sent as the page's next streams.
    retry: Vec<(Exchange, PageRef)>,
    connect_start_us: u64,
    handshake_start_us: u64,
    connect_us: u64,
}

impl Wire for H2 {
    fn new(sh: &RunShared<'_>) -> Self {
        let w = sh.workload;
        let most_files = w.pages.iter().map(|p| p.files.len()).max().unwrap_or(1);
        let streams = sh.config.streams.map(|n| n.max(1) as usize);
        let lanes = most_files == 1 && streams.is_some_and(|n| n > 1);
        let want = streams.unwrap_or(most_files);
        let mut io = Io::new(want);
        io.follow = sh.config.redirect > 0;
        H2 {
            state: State::Idle,
            conn: None,
            session: None,
            io,
            frames: FrameScanner::default(),
            lanes,
            want,
            limit: 0,
            no_room_since: NONE,
            oldest_us: NONE,
            in_flight: 0,
            next_file: 0,
            page_ok: true,
            fresh: false,
            busy: false,
            draining: false,
            retry: Vec::with_capacity(want),
            connect_start_us: 0,
            handshake_start_us: 0,
            connect_us: NONE,
        }
    }

    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.next_file = 0;
        self.page_ok = true;
        self.fresh = true;
        self.busy = true;
        match self.state {
            State::Idle => self.connect(ch, cx, now),
            // From a timer (after think time, at an open-loop slot): its HEADERS are written
            // now, not with the next read.
            State::Open => {
                self.next(ch, cx, now);
            }
            // Connecting: the page's streams go when the connection is up.
            _ => {}
        }
    }

    fn on_event(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event) {
        match self.state {
            State::Idle => {}
            State::Connecting => self.on_connect_ready(ch, cx),
            State::Handshaking => {
                let now = cx.now();
                if !cx.ended(now) {
                    self.on_handshake(ch, cx, now);
                }
            }
            State::Settings | State::Open => {
                // Over HTTPS, records rustls holds wait for the socket too.
                let waiting = self.io.out_pos < self.io.out.len()
                    || self.conn.as_ref().is_some_and(Transport::wants_write);
                if ev.is_writable() && waiting {
                    let now = cx.now();
                    if cx.ended(now) || !self.flush(ch, cx, now) {
                        return;
                    }
                }
                if ev.is_readable() || ev.is_read_closed() || ev.is_error() {
                    self.on_readable(ch, cx, buf);
                }
            }
        }
    }

    fn on_timer(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.state == State::Open && self.in_flight > 0 {
            return self.streams_timed_out(ch, cx, now);
        }
        let kind = match self.state {
            State::Idle => return,
            State::Connecting => ErrorKind::ConnectTimeout,
            State::Handshaking => ErrorKind::TlsHandshake,
            State::Settings => ErrorKind::H2SettingsTimeout,
            State::Open => ErrorKind::ResponseTimeout,
        };
        self.conn_failed(ch, cx, kind, now);
    }

    fn at_end(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, end: u64) {
        let saved = PageRef::of(ch);
        let mut any = false;
        // Streams open on the connection: unfinished when their request left whole, else not
        // sent (nghttp2 held its HEADERS, or the socket had not taken them; over HTTPS, records
        // rustls still holds are not looked into: docs/latency.md).
        for s in self.io.in_flight() {
            s.page.restore(ch);
            if self.io.unsent_at_end(s) {
                ch.record_unsent(cx, &s.ex, end);
            } else {
                ch.record_unfinished(cx, &s.ex, s.ex.bytes(), end);
            }
            any = true;
        }
        // Refused by a GOAWAY, waiting for a new connection: not processed by the server.
        for (ex, p) in &self.retry {
            p.restore(ch);
            ch.record_unsent(cx, ex, end);
            any = true;
        }
        saved.restore(ch);
        // Connecting for the page's first file: begun, not sent, as over HTTP/1.
        let connecting = matches!(
            self.state,
            State::Connecting | State::Handshaking | State::Settings
        );
        if connecting && !any && self.fresh {
            let ex = self.first_exchange(ch, cx.sh.workload);
            ch.record_unsent(cx, &ex, end);
        }
    }

    fn close(&mut self) {
        // Dropping the socket also removes it from the epoll set; dropping the session frees
        // its streams without calling the handler.
        self.conn = None;
        self.session = None;
        self.io.reset();
        self.frames = FrameScanner::default();
        self.state = State::Idle;
        self.in_flight = 0;
        self.draining = false;
        self.no_room_since = NONE;
        self.oldest_us = NONE;
    }
}

impl PageRef {
    fn of(ch: &Child) -> PageRef {
        PageRef {
            page: ch.page,
            intended_us: ch.page_intended_us,
            start_us: ch.page_start_us,
            refused_once: false,
        }
    }

    fn restore(&self, ch: &mut Child) {
        ch.page = self.page;
        ch.page_intended_us = self.intended_us;
        ch.page_start_us = self.start_us;
    }
}

impl H2 {
    /// The exchange the connection is made for (what its connect is recorded on, and a failed
    /// connect counted on): the first to send again after a GOAWAY, or the page's next file.
    fn first_exchange(&self, ch: &Child, w: &crate::Workload) -> Exchange {
        let file = match self.retry.last() {
            Some((ex, _)) => ex.file,
            None if self.lanes => 0,
            None => self.next_file,
        };
        Exchange {
            file: file.min(ch.files(w) - 1),
            file_start_us: ch.page_start_us,
            connect_us: self.connect_us,
            ..Exchange::new()
        }
    }

    // ---- the connection ----------------------------------------------------------------------

    fn connect(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        self.state = State::Connecting;
        self.connect_us = NONE;
        let prepared = match cx.sh.connector.prepare() {
            Ok(p) => p,
            Err(e) => return self.conn_failed(ch, cx, connect_error(&e), now),
        };
        let now = if prepared.is_tls() { cx.now() } else { now };
        self.connect_start_us = now;
        ch.connect_began(cx, now);
        match Transport::open(&cx.sh.connector, prepared, &cx.registry, Token(ch.slot)) {
            Ok(s) => {
                self.conn = Some(s);
                self.state = State::Connecting;
                cx.timers
                    .arm(ch.slot, now + cx.sh.schedule.connect_timeout_us);
            }
            Err(e) => self.conn_failed(ch, cx, connect_error(&e), now),
        }
    }

    fn on_connect_ready(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>) {
        let Some(conn) = &self.conn else { return };
        let now = cx.now();
        if cx.ended(now) {
            return; // connected or not, nothing is sent now: begun, not sent
        }
        match conn.connected() {
            Ok(true) => {}
            Ok(false) => return,
            Err(e) => return self.conn_failed(ch, cx, connect_error(&e), now),
        }
        self.connect_us = now - self.connect_start_us;
        let ex = self.first_exchange(ch, cx.sh.workload);
        ch.record_connect(cx, &ex, now);
        self.state = State::Handshaking;
        self.handshake_start_us = now;
        self.on_handshake(ch, cx, now);
    }

    /// The TLS handshake (none for cleartext); then the preface and our SETTINGS.
    fn on_handshake(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let first = self.first_exchange(ch, cx.sh.workload);
        let Some(conn) = &mut self.conn else { return };
        let mut now = now;
        match conn.handshake() {
            Ok(false) => return,
            Ok(true) => {
                if let Some(session) = conn.tls_session() {
                    now = cx.now();
                    let took = now - self.handshake_start_us;
                    ch.record_handshake(cx, &first, now, took, session);
                }
            }
            Err(e) if alpn_refused(&e) => {
                return self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now)
            }
            Err(e) => {
                cx.handshake_failed(&e, first.file_start_us, now);
                return self.conn_failed(ch, cx, handshake_error(&e), now);
            }
        }
        if !conn.negotiated_h2() {
            return self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now);
        }
        let window = cx.sh.config.h2_window;
        let config = http2::Config {
            initial_window_size: window.unwrap_or(H2_STREAM_WINDOW),
            connection_window_size: window.unwrap_or(H2_CONNECTION_WINDOW),
            ..http2::Config::client()
        };
        match Session::client(&config) {
            Ok(s) => self.session = Some(s),
            Err(_) => return self.conn_failed(ch, cx, ErrorKind::H2Protocol, now),
        }
        let first = FIRST_STREAM_ID.load(Ordering::Relaxed);
        if let (Some(s), true) = (&mut self.session, first > 0) {
            let _ = s.set_next_stream_id(first);
        }
        self.state = State::Settings;
        self.flush(ch, cx, now);
    }

    /// Has the session write what it queued, and writes it; false if the connection failed
    /// (and that was handled).
    fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        self.io.now = now;
        let res = self.write_out();
        self.take_counts(cx, cx.counts(now, now));
        match res {
            Ok(()) => true,
            Err(kind) => {
                self.conn_failed(ch, cx, kind, now);
                false
            }
        }
    }

    /// What `flush` does with the session and the socket, until the socket is full or the
    /// session has nothing more.
    fn write_out(&mut self) -> Result<(), ErrorKind> {
        let (Some(session), Some(conn)) = (&mut self.session, &mut self.conn) else {
            return Ok(());
        };
        let io = &mut self.io;
        loop {
            session.send(io).map_err(|_| ErrorKind::H2Protocol)?;
            while io.out_pos < io.out.len() {
                match conn.write(&io.out[io.out_pos..]) {
                    Ok(0) => return Err(ErrorKind::Reset),
                    Ok(n) => io.out_pos += n,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(()),
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(io_kind(&e)),
                }
            }
            io.out.clear();
            io.out_pos = 0;
            if conn.wants_write() {
                conn.send_pending().map_err(|e| io_kind(&e))?;
            }
            if !session.want_write() {
                return Ok(());
            }
        }
    }

    /// Reads until the socket is drained; hands each read to the session.
    fn on_readable(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, buf: &mut [u8]) {
        loop {
            let Some(conn) = &mut self.conn else { return };
            let res = conn.read(buf);
            let now = cx.now();
            if cx.ended(now) {
                // Read at or after the end: nothing of it is taken into account; the streams
                // stay in flight for `at_end`.
                return;
            }
            match res {
                Ok(0) => {
                    let kind = if self.io.goaway.is_some() {
                        ErrorKind::H2Goaway
                    } else {
                        ErrorKind::Reset
                    };
                    return self.conn_failed(ch, cx, kind, now);
                }
                Ok(n) => {
                    cx.count_read(n, now);
                    if !self.on_data(ch, cx, &buf[..n], now) {
                        return;
                    }
                    if n < buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.conn_failed(ch, cx, io_kind(&e), now),
            }
        }
    }

    /// One read's bytes: counted frame by frame, given to the session, then acted on; false if
    /// the connection is gone.
    fn on_data(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, data: &[u8], now: u64) -> bool {
        // A server that answers HTTP/1 to the preface does not speak HTTP/2.
        if self.state == State::Settings && !self.io.settings && data.starts_with(b"HTTP/") {
            self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now);
            return false;
        }
        let in_window = cx.counts(now, now);
        let io = &mut self.io;
        let stats = &mut cx.stats.http2;
        self.frames.scan(data, |span, n| match span {
            Span::Framing => {
                if in_window {
                    stats.bytes_framing += n as u64;
                }
            }
            Span::Header(id) | Span::Data(id) => match io.find(id) {
                Some(i) => {
                    let s = io.stream(i);
                    if matches!(span, Span::Header(_)) {
                        s.ex.header_bytes += n as u64;
                    } else {
                        s.data_bytes += n as u64;
                    }
                }
                None if in_window => stats.bytes_framing += n as u64,
                None => {}
            },
            Span::Frame(ty) => {
                if in_window {
                    stats.count_frame(ty);
                }
            }
        });
        let Some(session) = &mut self.session else {
            return false;
        };
        self.io.now = now;
        let res = session.recv(data, &mut self.io);
        let ended = self.io.invalid && !session.want_read();
        self.take_counts(cx, in_window);
        if res.is_err() || ended {
            self.conn_failed(ch, cx, ErrorKind::H2Protocol, now);
            return false;
        }
        if self.state == State::Settings && self.io.settings {
            self.on_settings(cx, now);
        }
        self.streams_closed(ch, cx, now);
        if self.conn.is_none() {
            return false;
        }
        self.next(ch, cx, now)
    }

    /// The session's counters into the statistics (those of the window).
    fn take_counts(&mut self, cx: &mut ThreadState<'_>, in_window: bool) {
        let c = &mut self.io.counts;
        let h = &mut cx.stats.http2;
        if in_window {
            h.header_bytes_sent += c.header_bytes_sent;
        }
        c.header_bytes_sent = 0;
        // Resets and GOAWAYs are rare: the whole record only then.
        if c.goaways > 0 || c.rst_streams.iter().any(|&n| n > 0) {
            let c = std::mem::take(c);
            if in_window {
                h.merge(&c);
            }
        }
    }

    /// The server's SETTINGS arrived: the connection is up.
    fn on_settings(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Open;
        let server = self
            .session
            .as_ref()
            .map_or(0, |s| s.remote_max_concurrent_streams());
        if cx.counts(now, now) {
            let h = &mut cx.stats.http2;
            h.connections += 1;
            h.max_concurrent_streams = h.max_concurrent_streams.max(u64::from(server));
        }
    }

    /// What follows a read or a page's start: more streams, the page's end, a new connection
    /// after GOAWAY; false if the connection is gone.
    fn next(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        if self.state == State::Open {
            self.fill(ch, cx, now);
        }
        if self.conn.is_none() || !self.flush(ch, cx, now) {
            return false;
        }
        if self.io.closed.is_empty() {
            return true;
        }
        // nghttp2 closed streams while sending (those a GOAWAY refused before their HEADERS
        // left): kept to be sent again now, not failed if the server closes first.
        self.streams_closed(ch, cx, now);
        if self.state == State::Open && self.conn.is_some() {
            self.fill(ch, cx, now);
        }
        self.conn.is_some() && self.flush(ch, cx, now)
    }

    // ---- streams -----------------------------------------------------------------------------

    /// Opens streams while there is room and something to send; ends the page (or the lanes)
    /// when nothing is left.
    fn fill(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let end = cx.sh.schedule.end_us;
        self.draining |= self.io.goaway.is_some();
        if !self.busy {
            // Between pages: a GOAWAY only means the next page needs a new connection.
            if self.draining {
                self.close();
            }
            return;
        }
        // The server's limit as of now: a later SETTINGS may lower or raise it.
        let server = self
            .session
            .as_ref()
            .map_or(0, |s| s.remote_max_concurrent_streams());
        self.limit = self.want.min(server as usize);
        // Lanes: the quota is done (no page left to pick).
        let mut quota_done = false;
        while !self.draining && self.in_flight < self.limit && now < end {
            if let Some((ex, page)) = self.retry.pop() {
                self.submit(ch, cx, ex, page, now);
                continue;
            }
            if self.lanes {
                if !self.fresh && !page::pick(ch, cx, now) {
                    quota_done = true;
                    break;
                }
                self.fresh = false;
                let ex = Exchange {
                    file: 0,
                    file_start_us: now,
                    ..Exchange::new()
                };
                self.submit(ch, cx, ex, PageRef::of(ch), now);
            } else if self.page_ok && self.next_file < ch.files(cx.sh.workload) {
                let ex = Exchange {
                    file: self.next_file,
                    file_start_us: now,
                    connect_us: if self.next_file == 0 {
                        self.connect_us
                    } else {
                        NONE
                    },
                    ..Exchange::new()
                };
                self.next_file += 1;
                self.fresh = false;
                self.submit(ch, cx, ex, PageRef::of(ch), now);
            } else {
                break;
            }
            if self.conn.is_none() {
                return;
            }
        }
        if self.in_flight > 0 {
            return;
        }
        if self.draining {
            // The GOAWAY's streams are done: what is left goes on a new connection.
            let left = !self.retry.is_empty()
                || (!self.lanes && self.page_ok && self.next_file < ch.files(cx.sh.workload))
                || (self.lanes && self.fresh);
            if left && now < end {
                return self.connect(ch, cx, now);
            }
            self.close();
        }
        if self.limit == 0 && now < end && self.conn.is_some() {
            let pending = !self.retry.is_empty()
                || if self.lanes {
                    !quota_done
                } else {
                    self.page_ok && self.next_file < ch.files(cx.sh.workload)
                };
            if pending {
                // The server allows no stream now: wait for a SETTINGS that raises the limit,
                // within the response timeout (then a `response_timeout` error), never ending
                // the page or the lanes as if done.
                if self.no_room_since == NONE {
                    self.no_room_since = now;
                    cx.timers
                        .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
                }
                return;
            }
        }
        if self.lanes {
            // Every lane is done (the quota, or the run's end): the Webchild is done.
            self.busy = false;
            return page::finish(self, ch, cx, now);
        }
        let done = !self.page_ok || self.next_file >= ch.files(cx.sh.workload);
        if done && self.retry.is_empty() {
            let hit = self.page_ok;
            self.busy = false;
            page::end_page(self, ch, cx, hit, now, false);
        }
    }

    /// Opens a stream for `ex`.
    fn submit(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        mut ex: Exchange,
        page: PageRef,
        now: u64,
    ) {
        let Some(session) = &mut self.session else {
            return;
        };
        // A redirect followed (`--redirect N`) sends its learned request, URL 0 of its own list.
        let (h, url) = match ex.learned {
            OWN => (
                cx.sh.h2.as_ref().expect("HTTP/2 requests built"),
                ch.url_of(cx.sh.workload, page.page, ex.file),
            ),
            learned => (cx.redirects.h2(learned), 0),
        };
        let body = h.body(url).cloned();
        let n = h.field_count(url);
        let res = if n <= STACK_FIELDS {
            let mut list = [Header::new(b"", b""); STACK_FIELDS];
            for (slot, (name, value)) in list.iter_mut().zip(h.fields(url)) {
                *slot = Header::new(name, value);
            }
            session.submit_request(&list[..n], body.is_some())
        } else {
            let list: Vec<Header<'_>> = h.fields(url).map(|(n, v)| Header::new(n, v)).collect();
            session.submit_request(&list, body.is_some())
        };
        let id = match res {
            Ok(id) => id,
            Err(_) => {
                // nghttp2 opens no more streams here: stream ids ran out (after 2^30 streams on
                // one connection, a long `--streams` run), or memory did. Sent again on a new
                // connection once those in flight are done; trying again here would spin.
                self.retry.push((ex, page));
                self.draining = true;
                return;
            }
        };
        // Written when nghttp2 puts its HEADERS in the output (`Io`), not now: the server's
        // limit may hold it in nghttp2's queue.
        ex.written_us = NONE;
        self.no_room_since = NONE;
        self.io.insert(id, ex, page, body);
        self.in_flight += 1;
        if cx.counts(now, now) {
            let plain = h.plain_size(url);
            cx.stats.http2.streams += 1;
            cx.stats.http2.header_bytes_plain += plain;
        }
        if self.oldest_us == NONE {
            self.oldest_us = now;
            cx.timers
                .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        }
    }
}

/// What a failed read or write counts as.
fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Io,
    }
}
