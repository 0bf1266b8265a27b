//! HTTP/1.x on a Webchild's connection: connect, handshake, write the prebuilt request, read,
//! frame the body with `wire`, and tell the page logic (`page.rs`) what happened. This file is
//! the connection's state machine and what the event loop calls (`Wire`): an event dispatched by
//! state, a complete response recorded and followed by the page's next file, a redirect's next
//! hop, or the page's end. The rest is in `h1/`, one concept a file:
//!
//! - `connecting.rs`: the TCP connect and, over HTTPS, the TLS handshake, each recorded apart.
//! - `sending.rs`: the prebuilt request written (`send`), and what the socket did not take yet
//!   written with its next writable event (`flush`).
//! - `reading.rs`: the socket read until drained, heads parsed by `wire` and bodies followed by
//!   their decoder (`on_readable`, `on_data`); a complete response comes back here.
//! - `pipelining.rs`: the requests behind the one being read, in the in-flight table seen as a
//!   queue (`behind`); `--pipeline`'s batch: the page's files queued as their requests are
//!   written, the next response read without a new request (`--pipeline N`: one more written
//!   as each ends), and at the end what of the queue was sent and how each is recorded.
//! - `lanes.rs`: `--pipeline N` when every page is one file: N pages in flight, each request a
//!   page of its own queued behind the one being read as each response ends, a read's worth
//!   written at once.
//! - `sharing.rs`: `--connections-per-client N`: this connection as one of a Webchild's
//!   several, taking the shared page's next file as it is free (`client/shared.rs`).
//! - `closing.rs`: HTTP/1.0's passive close, the server's FIN awaited before going on.
//! - `outcomes.rs`: failures by kind, the one resend of a request the server closed idle, and
//!   the pipelined requests behind a response after which the server closed, sent again.
//! - `after_end.rs`: what the server said after the end of the run (`Connection: close`), and
//!   when the lingering close may end the sending side (all but the last request answered).
//! - `app.rs`: an application workload's requests built per use and responses judged, through
//!   `client/app.rs` (a workload without one never goes there).
//!
//! What a keep-alive request costs, by design (the floor client `cfloor.c` does the same):
//! one `write` of a request prebuilt at start, one `read` that brings the whole response, and a
//! share of one `epoll_wait`. To get there:
//! - each socket is registered once, READABLE|WRITABLE, edge-triggered, and never re-registered;
//! - a read that returns less than the space offered drained the socket, so no second read is
//!   made only to see EAGAIN (edge-triggered epoll reports the next arrival anyway);
//! - the next request is written from the handler of the response that ended the previous one;
//! - requests are built once per URL (and per page, for pipelining) and written from that buffer.
//!
//! Memory: a keep-alive connection keeps only the bytes of a response head split across reads
//! (usually none); a body is counted and dropped by [`BodyDecoder`] as it passes. Pipelining
//! adds a queue of the requests in flight behind the one being read (`H1::behind`, made for
//! `--pipeline` runs only): a slot of 136 bytes (an exchange, its request's end, its key)
//! for each of the most in flight, to the next power of two: a bare `--pipeline`, the longest
//! page's files (a 200-file page: 256 slots, ~35 KB a connection, ~350 MB for 10,000);
//! `--pipeline N`, N at most.

mod after_end;
mod app;
mod closing;
mod connecting;
mod lanes;
mod outcomes;
mod pipelining;
mod reading;
mod sending;
mod sharing;

use super::exchange::{Answer, Exchange, PageRef};
use super::linger::{self, Linger};
use super::page::Child;
use super::page_flow::next_page;
use super::redirects::OWN;
use super::{RunShared, ThreadState, Wire};
use crate::config::HttpMode;
use crate::stats::ErrorKind;
use crate::transport::Transport;
use after_end::AfterEnd;
use lanes::Lanes;
use mio::event::Event;
use wire::response::{BodyDecoder, Framing};

/// The write source (`H1::src`) of the lanes' own buffer.
pub(super) const LANES: u32 = OWN - 1;

/// Whose bytes `wpos..wend` are: the Webchild's request built per use.
pub(super) const APP: u32 = LANES - 1;

/// Where an HTTP/1 connection is. Writing is not a state: a request's unsent bytes (`wpos..wend`)
/// may be pending while responses are already read, because with pipelining they overlap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// No request in flight (between pages); a keep-alive connection may stay open.
    Idle,
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
}

/// One Webchild's HTTP/1 connection and the exchange in progress on it.
pub(super) struct H1 {
    state: State,
    conn: Option<Transport>,
    /// Bumped at every close: data read from a connection that is gone is not processed.
    conn_gen: u32,
    /// Responses completed on this connection: a reused one the server may have closed idle.
    conn_responses: u32,
    /// The file in progress (pipelining: the one whose response is being read).
    ex: Exchange,
    /// Pipelining: the requests in flight behind `ex`, oldest first, each with where its
    /// request ends in the bytes written (`pipelining.rs`): the rest of a page's batch, or the
    /// lanes' pages. Made once, with room for the most in flight, for `--pipeline` runs only.
    behind: pipelining::BehindQueue,
    connect_start_us: u64,
    handshake_start_us: u64,
    resp_keep_alive: bool,
    decoder: BodyDecoder,
    /// The current file was already retried once on a fresh connection.
    retried: bool,
    /// `Closing` goes on with the page's next file (else with the next page).
    next_file: bool,
    /// Pipelining: a response of this page was not a success; the rest of its batch is still
    /// read and counted (the server has those requests), and the page is not a hit.
    page_failed: bool,
    wpos: usize,
    wend: usize,
    /// Whose bytes `wpos..wend` are: the run's prebuilt requests (`OWN`), or a learned
    /// redirect target's request (`--redirect N`).
    src: u32,
    /// `--redirect N`: a redirect to follow once the server's close ends `Closing` (HTTP/1.0).
    hop_next: bool,
    /// Pipelining: redirects met in the page's batch, followed one by one after it (file, learned
    /// request, hops); `after_batch` while they are. Empty, and unallocated, without redirects.
    deferred: Vec<(usize, u32, u32)>,
    after_batch: bool,
    /// A response head split across reads (usually empty).
    head: Vec<u8>,
    /// The responses read after the end (`after_end.rs`), made at the end only.
    late: Option<Box<AfterEnd>>,
    /// `--pipeline N` with one-file pages: the pages in flight behind the one being read
    /// (`lanes.rs`); made once, for such runs only.
    lanes: Option<Box<Lanes>>,
    /// An application workload: this Webchild's session and request buffer (`h1/app.rs`);
    /// made at its first page, for such runs only.
    app: Option<Box<super::app::AppExchange>>,
}

impl Wire for H1 {
    fn new(sh: &RunShared<'_>) -> Self {
        H1 {
            state: State::Idle,
            conn: None,
            conn_gen: 0,
            conn_responses: 0,
            ex: Exchange::new(PageRef::NONE),
            behind: pipelining::queue_of_run(sh),
            connect_start_us: 0,
            handshake_start_us: 0,
            resp_keep_alive: false,
            decoder: BodyDecoder::new(Framing::Empty),
            retried: false,
            next_file: false,
            page_failed: false,
            wpos: 0,
            wend: 0,
            src: OWN,
            hop_next: false,
            deferred: Vec::new(),
            after_batch: false,
            head: Vec::new(),
            late: None,
            lanes: Lanes::of_run(sh),
            app: None,
        }
    }

    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if cx.members > 1 {
            return self.next_shared(ch, cx, now);
        }
        self.ex.page = ch.page;
        self.ex.file = 0;
        self.page_failed = false;
        if cx.sh.workload.app.0.is_some() && !self.app_page(ch, cx, now) {
            return;
        }
        self.start_file(ch, cx, now);
    }

    fn on_event(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, buf: &mut [u8], ev: &Event) {
        match self.state {
            State::Connecting => self.on_connect_ready(ch, cx),
            State::Handshaking => {
                let now = cx.now();
                if !cx.ended(now) {
                    self.on_handshake(ch, cx, now);
                }
            }
            // Between pages only a close (or garbage) can arrive: on_readable closes on either.
            State::Idle => self.on_readable(ch, cx, buf, true),
            // The FIN (or an error) is all this state waits for; no read is needed to see it.
            State::Closing if ev.is_read_closed() || ev.is_error() => {
                let now = cx.now();
                if !cx.ended(now) {
                    self.closed(ch, cx, now);
                }
            }
            State::Closing if ev.is_readable() => self.on_readable(ch, cx, buf, false),
            State::Closing => {}
            State::ReadingHead | State::ReadingBody => {
                let pending =
                    self.wpos < self.wend || self.conn.as_ref().is_some_and(Transport::wants_write);
                if ev.is_writable() && pending {
                    let now = cx.now();
                    if cx.ended(now) || !self.flush(ch, cx, now) {
                        return;
                    }
                }
                let closed = ev.is_read_closed() || ev.is_error();
                if ev.is_readable() || closed {
                    self.on_readable(ch, cx, buf, closed);
                }
            }
        }
    }

    fn on_timer(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        match self.state {
            State::Idle => {}
            State::Connecting => self.fail(ch, cx, ErrorKind::ConnectTimeout, now),
            State::Handshaking => self.fail(ch, cx, ErrorKind::TlsHandshake, now),
            State::Closing => self.closed(ch, cx, now),
            State::ReadingHead | State::ReadingBody => {
                self.fail(ch, cx, ErrorKind::ResponseTimeout, now)
            }
        }
    }

    fn at_end(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, end: u64) {
        let sent = match self.state {
            State::Idle | State::Closing => return,
            State::Connecting | State::Handshaking => 0,
            State::ReadingHead | State::ReadingBody => self.sent_in_full(cx),
        };
        // Those the server said, after the end, it would never process were not sent.
        let processed = sent - self.late.as_ref().map_or(0, |l| l.unprocessed(sent));
        if processed == 0 {
            ch.record_unsent(cx, &self.ex, end);
        } else {
            ch.record_unfinished(cx, &self.ex, self.response_bytes(), end);
        }
        // Pipelining: those behind it (the rest of the batch, or the lanes) written, nothing of
        // their responses read.
        self.record_behind_at_end(ch, cx, (sent, processed), end);
    }

    fn linger(&mut self, _: &Child, cx: &ThreadState<'_>, at: Linger, buf: &mut [u8]) -> Linger {
        if !self.busy() {
            return linger::step(self.conn.as_mut(), at, buf, |_| {});
        }
        // More than one request outstanding: the FIN waits until the server has answered all
        // but the last (`after_end.rs`), read meanwhile.
        let sent = self.sent_in_full(cx);
        if at == Linger::Flushing && self.holds_fin(sent) {
            let Some(conn) = self.conn.as_mut() else {
                return Linger::Done;
            };
            if conn.send_pending().is_err() {
                return Linger::Done;
            }
            match self.linger_read(cx, Linger::Draining, buf) {
                Linger::Draining if self.holds_fin(sent) => return Linger::Flushing,
                Linger::Draining => {}
                done => return done,
            }
        }
        self.linger_read(cx, at, buf)
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
        // The lanes keep what was written of their requests on this connection until the next
        // one is written to (`send_lanes`): what is dropped after a close is told by it. A
        // batch's files behind the one being read go with the connection: the batch is written
        // again on the next, from the file in progress on (`send`), and queued again.
        if let (None, Some(behind)) = (&self.lanes, &mut self.behind) {
            behind.clear();
        }
    }
}

impl H1 {
    /// The URL of the file in progress.
    fn url(&self, cx: &ThreadState<'_>) -> usize {
        self.ex.url(cx.sh.workload)
    }

    /// Starts the page's file `ex.file`: its time begins now.
    fn start_file(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.ex.file_start_us = now;
        self.ex.first_request();
        self.start_request(ch, cx, now);
    }

    /// Starts the request of the entry in progress: its own, or the redirect it follows (whose
    /// time goes on from the entry's start).
    fn start_request(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if !ch.may_begin(cx, now) {
            self.state = State::Idle;
            return;
        }
        self.retried = false;
        self.ex.reset_response();
        if self.conn.is_some() {
            self.send(ch, cx, now);
        } else {
            self.connect(ch, cx, now);
        }
    }

    /// Whether requests are in flight (for what is read after the end).
    fn busy(&self) -> bool {
        matches!(self.state, State::ReadingHead | State::ReadingBody)
    }

    /// Everything read so far for the response in progress.
    fn response_bytes(&self) -> u64 {
        self.ex.bytes() + self.head.len() as u64
    }

    /// A complete response: recorded, then the page's next file, the page's end, or (HTTP/1.0)
    /// the wait for the server's close. The connection stays usable when the server says so.
    fn response_done(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.lanes.is_some() {
            return self.lane_done(ch, cx, now);
        }
        self.conn_responses += 1;
        if self.app.is_some() {
            self.judge(ch, cx, now);
        }
        match ch.answered(cx, &self.ex, now) {
            Answer::Final(ok) => self.after_response(ch, cx, ok, now),
            Answer::Follow(to) => self.follow(ch, cx, to, now),
        }
    }

    /// The entry's final response recorded: what comes next on this connection.
    fn after_response(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, ok: bool, now: u64) {
        if cx.members > 1 {
            return self.shared_response(ch, cx, ok, now);
        }
        let http10 = cx.sh.config.http == HttpMode::Http10;
        // After a pipelined batch, its redirects are followed one request at a time.
        let pipelined = cx.sh.config.http == HttpMode::Pipeline && !self.after_batch;
        let more = !self.after_batch && self.ex.file + 1 < self.ex.page.files(cx.sh.workload);
        if http10 && !self.resp_keep_alive && self.conn.is_some() {
            return self.await_close(ch, cx, now, ok, more);
        }
        // HTTP/1.0 closes after each file. A pipelined page whose response is not a success
        // goes on reading the rest of its batch, which the server has: each is counted, and
        // the connection stays in step. A server closing after a response (a success or
        // not) never processed those written behind it: they go again, on a new connection
        // (`batch_closed`), their start kept, unless one is not idempotent (the page ends).
        let mut resent = false;
        if !self.resp_keep_alive || http10 {
            if pipelined && more {
                if !self.batch_closed(cx, now, false) {
                    self.close();
                    return self.end_page(ch, cx, false, now, false);
                }
                resent = self.next_written();
            }
            self.close();
        }
        // An application workload's batch may end before the page does (`h1/app.rs`).
        let in_batch = more && self.in_batch(self.ex.file + 1);
        let read_on = pipelined && in_batch && self.conn.is_some();
        // The rest of a page whose response was not a success is read (the server has it, or
        // has it again when `resent`), the page not a hit.
        let read_rest = read_on || resent;
        self.page_failed |= !ok && read_rest;
        if !more || (!ok && !read_rest) || (self.page_failed && !in_batch) {
            let hit = ok && !self.page_failed;
            if let Some((file, to, hops)) = self.deferred.pop().filter(|_| hit) {
                self.after_batch = true;
                self.ex.file = file;
                (self.ex.learned, self.ex.hops) = (to, hops);
                return self.start_request(ch, cx, now);
            }
            return self.end_page(ch, cx, hit, now, false);
        }
        self.ex.file += 1;
        if read_on {
            self.next_in_batch(ch, cx, now); // its request went with the batch
        } else if resent {
            self.ex.first_request();
            self.start_request(ch, cx, now);
        } else {
            self.start_file(ch, cx, now);
        }
    }

    /// `--redirect N`: the response was a redirect to follow (recorded as a request): its
    /// learned request `to` goes next, on this connection if it stays open. In a pipelined
    /// batch it waits for the batch's end (the batch's requests are on the wire already).
    fn follow(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, to: u32, now: u64) {
        let hops = self.ex.hops + 1;
        if cx.sh.config.http == HttpMode::Pipeline && !self.after_batch {
            self.deferred.push((self.ex.file, to, hops));
            return self.after_response(ch, cx, true, now);
        }
        (self.ex.learned, self.ex.hops) = (to, hops);
        let http10 = cx.sh.config.http == HttpMode::Http10;
        if http10 && !self.resp_keep_alive && self.conn.is_some() {
            self.hop_next = true;
            return self.await_close(ch, cx, now, true, true);
        }
        if !self.resp_keep_alive || http10 {
            self.close();
        }
        self.start_request(ch, cx, now);
    }

    /// The page is over (a hit or not): its redirects and batch state dropped (a batch's queue
    /// is empty by then, or cleared with its connection: `close`), the page logic told.
    fn end_page(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        hit: bool,
        now: u64,
        backoff: bool,
    ) {
        self.state = State::Idle;
        debug_assert!(
            self.lanes.is_some() || self.behind.as_ref().is_none_or(|q| q.is_empty()),
            "a batch's queue is read, or cleared with its connection, before its page ends"
        );
        self.deferred.clear();
        self.after_batch = false;
        self.hop_next = false;
        if cx.members > 1 {
            // Only a failure ends a shared page's file here (`sharing.rs` ends the others).
            return self.shared_failed(ch, cx, now, backoff);
        }
        // The page of the exchange in progress: with lanes, the Webchild has picked the pages
        // behind it since.
        Child::record_page(cx, self.ex.page, hit, now);
        next_page(self, ch, cx, now, backoff);
    }
}
