//! HTTP/2 on a Webchild's connection: a page's files as concurrent streams of one connection,
//! through nghttp2's sans-I/O session (`http2::Session`), under the same page logic as HTTP/1.
//! This file is the connection's state and what the event loop calls (`Wire`); the rest is in
//! `h2/`, one concept a file:
//!
//! - `connecting.rs`: up when the server's SETTINGS have arrived: TCP connect, TLS handshake
//!   (ALPN `h2`; cleartext is HTTP/2 by prior knowledge), the preface and the SETTINGS
//!   exchange, all within the connect timeout.
//! - `opening.rs`: the page's files as streams, up to `--streams` in flight (default: the whole
//!   page) and never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS (read before each
//!   batch: a later SETTINGS may change it; while it is 0 the page waits, within the response
//!   timeout); the page ends with its last stream. When every page is one file and `--streams
//!   N` is more than one, each stream is a page of its own ("lanes"), N in flight (h2load's
//!   `-m`); in the open loop each starts at its slot on a free stream; with `--think` a lane
//!   thinks after its page.
//! - `socket.rs`: one `write` for all that `send` queued, one `read` for all that arrived, each
//!   read first walked frame by frame (http2's `frame::FrameScanner`) so that header blocks,
//!   bodies and framing are counted apart.
//! - `streams.rs`: the stream table (`client/in_flight.rs`: each stream's exchange by id, and
//!   those to send again) and the handler nghttp2 calls; `requests.rs`: the header lists
//!   prebuilt at start (a request's HEADERS are made by nghttp2 from them, nothing allocated
//!   but nghttp2's own stream state).
//! - `outcomes.rs`: failures. A stream the server resets fails alone (`h2_rst_stream`;
//!   REFUSED_STREAM, never processed, is sent again instead, once), and so does one left
//!   unanswered past the response timeout (`response_timeout`, reset with CANCEL; the timer
//!   follows the oldest stream in flight, not the connection's last progress); a GOAWAY lets
//!   the streams it covers finish and sends those it did not process again on a new connection
//!   (counted as retried, not failed; from a connection on which the server processed no
//!   stream, once: refused so twice, a request is `h2_goaway`, and the next connection waits,
//!   `connecting.rs`; the rule HTTP/3 shares, `client/in_flight/refusals.rs`); anything that
//!   ends the connection fails its streams by its kind (a protocol error, a reset, a timeout).
//! - `after_end.rs`, `cut_at_end.rs`: the end of the run's lingering close: a GOAWAY or a refusal
//!   read after the end, and the uploads the end cut short, cancelled (RST_STREAM CANCEL).

mod after_end;
mod app;
mod connecting;
mod cut_at_end;
mod opening;
mod outcomes;
pub(super) mod requests;
mod socket;
mod streams;

pub use requests::H2Requests;

use super::app::{AppExchange, H2Request};
use super::connect;
use super::exchange::Exchange;
use super::linger::{self, Linger};
use super::page::Child;
use super::{RunShared, ThreadState, Wire, NONE};
use crate::stats::ErrorKind;
use crate::transport::Transport;
use after_end::AfterEnd;
use http2::frame::FrameScanner;
use http2::Session;
use mio::event::Event;
use std::collections::VecDeque;
use streams::Io;

/// Where an HTTP/2 connection is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No connection.
    Idle,
    /// No connection yet: on the last one, which came up, the server processed no stream (a
    /// GOAWAY at once, say), so the next waits (`connecting.rs`) before it is opened, rather
    /// than spin.
    Backoff,
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
    /// A GOAWAY read after the end (`after_end.rs`).
    late: AfterEnd,
    /// Where the output the end of the run's linger writes ends, set at its first step (the
    /// uploads cut short cancelled there: `cut_at_end.rs`).
    linger_out: Option<usize>,
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
    /// When the oldest stream in flight was written, or earlier (NONE: none in flight): the
    /// response timer is armed to it plus the response timeout, so one stalled stream times out
    /// even while others progress. Exact after each timer; between, a bound below (the oldest
    /// may have closed since).
    oldest_us: u64,
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
    /// Lanes with `--think`: when each lane whose page ended is done thinking, in order (the
    /// think time is the same for all); such a lane is not free for a new page before then.
    thinking: VecDeque<u64>,
    connect_start_us: u64,
    handshake_start_us: u64,
    connect_us: u64,
    /// When the connection being opened was begun, for the work waiting for it (NONE once its
    /// first streams are open): they began then, so their response times hold the connect, the
    /// handshake and the SETTINGS wait as their page's time does, and a one-file page's time
    /// is its file's response time.
    waited_from: u64,
    /// Connections opened so far: whether the one being read is still the one opened.
    conn_gen: u64,
    /// A stream was opened on this connection; the server processed one (it ended otherwise
    /// than refused: answered, or failed).
    opened_any: bool,
    processed: bool,
    /// Connections in a row that came up and on which the server processed no stream: the
    /// next one waits, longer each time (`connecting.rs`).
    empty_in_a_row: u32,
    /// An application workload: the Webchild's session, its request being built, and whether
    /// the page ended on a request not sent (`h2/app.rs`).
    app: Option<Box<AppExchange>>,
    request: H2Request,
    unsent: bool,
}

impl Wire for H2 {
    fn new(sh: &RunShared<'_>) -> Self {
        let w = sh.workload;
        let most_files = w.pages.iter().map(|p| p.files.len()).max().unwrap_or(1);
        let streams = sh.config.streams.map(|n| n.max(1) as usize);
        let lanes = most_files == 1 && streams.is_some_and(|n| n > 1);
        let want = streams.unwrap_or(most_files);
        let mut io = Io::new(want);
        if sh.config.debug {
            io.debug = Some(Vec::new());
        }
        io.follow = sh.config.redirect > 0;
        if w.app.0.is_some() {
            io.keep_app_streams();
        }
        H2 {
            state: State::Idle,
            conn: None,
            session: None,
            io,
            frames: FrameScanner::default(),
            late: AfterEnd::default(),
            linger_out: None,
            lanes,
            want,
            limit: 0,
            no_room_since: NONE,
            oldest_us: NONE,
            next_file: 0,
            page_ok: true,
            fresh: false,
            busy: false,
            draining: false,
            thinking: VecDeque::with_capacity(if lanes { want } else { 0 }),
            connect_start_us: 0,
            handshake_start_us: 0,
            connect_us: NONE,
            waited_from: NONE,
            conn_gen: 0,
            opened_any: false,
            processed: false,
            empty_in_a_row: 0,
            app: None,
            request: H2Request::default(),
            unsent: false,
        }
    }

    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if cx.sh.workload.app.0.is_some() && !self.app_page(ch, cx, now) {
            return;
        }
        self.unsent = false;
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
        let connecting = matches!(self.state, State::Connecting | State::Handshaking);
        match self.state {
            State::Idle | State::Backoff => {}
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
                    self.on_readable(ch, cx, buf, ev.is_read_closed());
                }
            }
        }
        // Up now: the event that finished connecting may have brought the server's first bytes
        // too (its SETTINGS, sent on accept; over TLS, records after the handshake's, which
        // rustls holds), and no later edge reports them again.
        if connecting && self.state == State::Settings {
            self.on_readable(ch, cx, buf, ev.is_read_closed());
        }
    }

    fn on_timer(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        // A stream's response timeout, or with lanes an open-loop slot or the end of a lane's
        // think time.
        if self.state == State::Open && (!self.io.flight.is_empty() || !self.thinking.is_empty()) {
            return self.streams_timed_out(ch, cx, now);
        }
        let kind = match self.state {
            State::Idle => return,
            State::Backoff if cx.ended(now) => return,
            State::Backoff => return self.open(ch, cx, now),
            State::Connecting => ErrorKind::ConnectTimeout,
            State::Handshaking => ErrorKind::TlsHandshake,
            State::Settings => ErrorKind::H2SettingsTimeout,
            State::Open => ErrorKind::ResponseTimeout,
        };
        self.conn_failed(ch, cx, kind, now);
    }

    fn at_end(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, end: u64) {
        // Streams open on the connection: unfinished when their request left whole (by the
        // linger's writes too: the rest of the frame the socket was in), else not sent
        // (nghttp2 held its HEADERS or some of its body, or the socket had not taken them;
        // over HTTPS, records rustls still holds are not looked into: docs/latency.md); an
        // upload cut short so was cancelled by the linger (`cut_at_end.rs`). Those refused by a
        // GOAWAY, waiting for a new connection, were not processed by the server: not sent.
        let (io, late) = (&self.io, &self.late);
        let any = io.flight.record_at_end(ch, cx, end, |_, s| {
            let unsent = io.unsent_at_end(s) || late.refused(s.id);
            (!unsent).then(|| s.bytes_read())
        });
        // Connecting for the page's first file: begun, not sent, as over HTTP/1.
        let connecting = matches!(
            self.state,
            State::Backoff | State::Connecting | State::Handshaking | State::Settings
        );
        if connecting && !any && self.fresh {
            let ex = self.first_exchange(ch, cx.sh.workload);
            ch.record_unsent(cx, &ex, end);
        }
    }

    fn linger(&mut self, _: &Child, _: &ThreadState<'_>, at: Linger, buf: &mut [u8]) -> Linger {
        let (frames, late) = (&mut self.frames, &mut self.late);
        let scan = |b: &[u8]| late.scan(frames, b);
        if at == Linger::Flushing && self.state == State::Open {
            // The rest of the frame the socket is in, and a RST_STREAM CANCEL for each upload
            // the end cut short (`cut_at_end.rs`), before the FIN.
            let io = &mut self.io;
            let end = *self
                .linger_out
                .get_or_insert_with(|| io.cancel_cut_uploads());
            let Some(conn) = self.conn.as_mut() else {
                return Linger::Done;
            };
            match connect::write_out(conn, &io.out[..end], &mut io.out_pos) {
                Ok(true) => {}
                // The socket is full: read meanwhile (the server may wait for room to answer),
                // write on at the next event.
                Ok(false) => {
                    return match linger::step(Some(conn), Linger::Draining, buf, scan) {
                        Linger::Draining => Linger::Flushing,
                        done => done,
                    }
                }
                Err(_) => return Linger::Done,
            }
        }
        linger::step(self.conn.as_mut(), at, buf, scan)
    }

    fn close(&mut self) {
        // Dropping the socket also removes it from the epoll set; dropping the session frees
        // its streams without calling the handler.
        if self.state == State::Open {
            self.empty_in_a_row = match self.processed {
                true => 0,
                false => self.empty_in_a_row.saturating_add(1),
            };
        }
        (self.opened_any, self.processed) = (false, false);
        self.conn = None;
        self.session = None;
        self.io.reset();
        self.frames = FrameScanner::default();
        self.late = AfterEnd::default();
        self.linger_out = None;
        self.state = State::Idle;
        self.draining = false;
        self.thinking.clear();
        self.no_room_since = NONE;
        self.oldest_us = NONE;
        self.waited_from = NONE;
    }
}

impl H2 {
    /// The exchange the connection is made for (what its connect is recorded on, and a failed
    /// connect counted on): the first to send again after a GOAWAY, or the page's next file.
    fn first_exchange(&self, ch: &Child, w: &crate::Workload) -> Exchange {
        if let Some(ex) = self.io.flight.retry.last() {
            // Its own page and file, not the page the Webchild picked last.
            return Exchange {
                connect_us: self.connect_us,
                ..*ex
            };
        }
        let file = if self.lanes { 0 } else { self.next_file };
        Exchange {
            file: file.min(ch.files(w) - 1),
            file_start_us: ch.page.start_us,
            connect_us: self.connect_us,
            ..Exchange::new(ch.page)
        }
    }
}
