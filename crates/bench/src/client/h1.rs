//! HTTP/1.x on a Webchild's connection: connect, handshake, write the prebuilt request, read,
//! frame the body with `wire`, and tell the page logic (`page.rs`) what happened.
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
//! Memory: a connection keeps only the bytes of a response head split across reads (usually
//! none); a body is counted and dropped by [`BodyDecoder`] as it passes.

mod after_end;

use super::connect;
use super::errors::{handshake_error, head_error};
use super::linger::{self, Linger};
use super::page::{end_page, next_page, Answer, Child, Exchange};
use super::redirects::OWN;
use super::{RunShared, ThreadState, Wire, NONE};
use crate::config::HttpMode;
use crate::stats::ErrorKind;
use crate::transport::Transport;
use after_end::AfterEnd;
use mio::event::Event;
use std::io;
use wire::response::{parse_response_head, BodyDecoder, Framing};

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
}

impl Wire for H1 {
    fn new(_: &RunShared<'_>) -> Self {
        H1 {
            state: State::Idle,
            conn: None,
            conn_gen: 0,
            conn_responses: 0,
            ex: Exchange::new(),
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
        }
    }

    fn start_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.ex.file = 0;
        self.page_failed = false;
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
            State::ReadingHead | State::ReadingBody => self.sent_in_full(ch, cx),
        };
        // Those the server said, after the end, it would never process were not sent.
        let processed = sent - self.late.as_ref().map_or(0, |l| l.unprocessed(sent));
        if processed == 0 {
            ch.record_unsent(cx, &self.ex, end);
        } else {
            ch.record_unfinished(cx, &self.ex, self.response_bytes(), end);
        }
        // Pipelining: the rest of the batch written, nothing of their responses read.
        for k in 1..sent {
            let mut ex = self.ex;
            ex.file += k as usize;
            ex.reset_response();
            match k < processed {
                true => ch.record_unfinished(cx, &ex, 0, end),
                false => ch.record_unsent(cx, &ex, end),
            }
        }
    }

    fn linger(&mut self, ch: &Child, cx: &ThreadState<'_>, at: Linger, buf: &mut [u8]) -> Linger {
        if !self.busy() {
            return linger::step(self.conn.as_mut(), at, buf, |_| {});
        }
        let is_head = self.batch_is_head(ch, cx);
        let body = (self.state == State::ReadingBody).then_some(&self.decoder);
        let (late, head) = (&mut self.late, &self.head);
        linger::step(self.conn.as_mut(), at, buf, |b| {
            follow_late(late, (head, body), b, &is_head)
        })
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

/// Bytes read after the end on a connection with requests in flight, followed to see where
/// the server stopped (`after_end.rs`).
fn follow_late(
    late: &mut Option<Box<AfterEnd>>,
    window: (&[u8], Option<&BodyDecoder>),
    data: &[u8],
    is_head: &impl Fn(u64) -> bool,
) {
    if !data.is_empty() {
        let late = late.get_or_insert_with(Box::default);
        late.feed(data, window, is_head);
    }
}

impl H1 {
    /// Whether the k-th request from the one in progress (pipelining: of its batch) is a HEAD.
    fn batch_is_head<'a>(
        &self,
        ch: &'a Child,
        cx: &'a ThreadState<'_>,
    ) -> impl Fn(u64) -> bool + 'a {
        let (first, file) = (self.is_head(ch, cx), self.ex.file);
        move |k| match k {
            0 => first,
            k => cx
                .sh
                .requests
                .is_head(ch.url(cx.sh.workload, file + k as usize)),
        }
    }

    fn url(&self, ch: &Child, cx: &ThreadState<'_>) -> usize {
        ch.url(cx.sh.workload, self.ex.file)
    }

    /// Whether the request in flight is a HEAD (its response has no body).
    fn is_head(&self, ch: &Child, cx: &ThreadState<'_>) -> bool {
        match self.ex.learned {
            OWN => cx.sh.requests.is_head(self.url(ch, cx)),
            learned => cx.redirects.is_head(learned),
        }
    }

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

    /// Of the request in progress on (pipelining: of its batch), how many the server can have
    /// received: every byte written and, over HTTPS, handed to the socket (TLS records still
    /// waiting hold the last request written, which then counts as not sent). At the end only.
    fn sent_in_full(&self, ch: &Child, cx: &ThreadState<'_>) -> u64 {
        let url = self.url(ch, cx);
        let r = &cx.sh.requests;
        let whole = match self.src {
            OWN => r.whole_before(ch.page, self.ex.file, url, self.wpos),
            _ => u64::from(self.wpos >= self.wend),
        };
        let waiting = self.conn.as_ref().is_some_and(Transport::wants_write);
        whole.saturating_sub(u64::from(waiting))
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
        self.conn_responses += 1;
        match ch.answered(cx, &self.ex, now) {
            Answer::Final(ok) => self.after_response(ch, cx, ok, now),
            Answer::Follow(to) => self.follow(ch, cx, to, now),
        }
    }

    /// The entry's final response recorded: what comes next on this connection.
    fn after_response(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, ok: bool, now: u64) {
        let http10 = cx.sh.config.http == HttpMode::Http10;
        // After a pipelined batch, its redirects are followed one request at a time.
        let pipelined = cx.sh.config.http == HttpMode::Pipeline && !self.after_batch;
        let more = !self.after_batch && self.ex.file + 1 < ch.files(cx.sh.workload);
        if http10 && !self.resp_keep_alive && self.conn.is_some() {
            return self.await_close(ch, cx, now, ok, more);
        }
        // HTTP/1.0 closes after each file. A pipelined page whose response is not a success
        // goes on reading the rest of its batch, which the server has: each is counted, and
        // the connection stays in step.
        if !self.resp_keep_alive || http10 {
            self.close();
        }
        let read_on = pipelined && more && self.conn.is_some();
        self.page_failed |= !ok && read_on;
        if !more || (!ok && !read_on) {
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
        if pipelined && self.conn.is_some() {
            // Its request went with the page's batch; the response is on its way.
            self.ex.reset_response();
            self.ex.first_request();
            self.retried = false;
            self.state = State::ReadingHead;
            cx.timers
                .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
            // `--pipeline N`: one response out, one more request in (the batch is contiguous).
            if let Some(d) = cx.sh.config.streams {
                let last = self.ex.file + d as usize - 1;
                if last < ch.files(cx.sh.workload) {
                    self.wend = cx.sh.requests.file_end(ch.page, last);
                    // The file in progress was written before; its times stay.
                    let written = self.ex.written_us;
                    if !self.flush(ch, cx, now) {
                        return;
                    }
                    self.ex.written_us = written;
                }
            }
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

    fn end_page(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        hit: bool,
        now: u64,
        backoff: bool,
    ) {
        self.state = State::Idle;
        self.deferred.clear();
        self.after_batch = false;
        self.hop_next = false;
        end_page(self, ch, cx, hit, now, backoff);
    }

    /// HTTP/1.0, the response complete (and recorded, so its time ends at its last byte): waits
    /// for the server's FIN before closing, so that the server closes first and keeps the
    /// TIME_WAIT, as with a 1995 client; closing at once left ~2% of them on the client. The FIN
    /// usually comes with the data (the event that brought it says so: then this state ends
    /// before the next read) or right after it, and epoll's read-closed flag shows it without a
    /// read, so the next file hardly waits. A server that keeps the connection open is waited
    /// for at most the response timeout, then closed.
    fn await_close(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        now: u64,
        ok: bool,
        more: bool,
    ) {
        self.next_file = ok && more;
        if !self.next_file {
            ch.record_page(cx, ok, now); // the page ended at its last byte, not at the FIN
        }
        self.state = State::Closing;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
    }

    /// The end of `Closing`: the server's FIN (or the timeout, an error, stray bytes).
    fn closed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        if std::mem::take(&mut self.hop_next) {
            self.start_request(ch, cx, now);
        } else if self.next_file {
            self.ex.file += 1;
            self.start_file(ch, cx, now);
        } else {
            self.state = State::Idle;
            next_page(self, ch, cx, now, false);
        }
    }

    /// A request failed: counted by kind, the connection dropped, the page abandoned.
    fn fail(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, kind: ErrorKind, now: u64) {
        ch.record_failure(cx, &self.ex, kind, self.response_bytes(), now);
        self.close();
        let backoff = matches!(kind, ErrorKind::ConnectRefused | ErrorKind::ConnectOther);
        self.end_page(ch, cx, false, now, backoff);
    }

    // ---- the connection ----------------------------------------------------------------------

    fn connect(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Connecting;
        self.conn_responses = 0;
        match connect::open(ch, cx, now) {
            Ok((conn, start)) => {
                self.conn = Some(conn);
                self.connect_start_us = start;
            }
            Err((kind, now)) => self.fail(ch, cx, kind, now),
        }
    }

    /// The first event of a connecting socket: connected, failed, or (a stale event) neither yet.
    fn on_connect_ready(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>) {
        let Some(conn) = &self.conn else { return };
        let now = match connect::ready(conn, cx) {
            Ok(Some(now)) => now,
            Ok(None) => return,
            Err((kind, now)) => return self.fail(ch, cx, kind, now),
        };
        self.ex.connect_us = now - self.connect_start_us;
        ch.record_connect(cx, &self.ex, now);
        self.state = State::Handshaking;
        self.handshake_start_us = now;
        self.on_handshake(ch, cx, now);
    }

    /// Moves the transport's handshake on (plain TCP has none: it is ready at once); when it is
    /// done, records it apart from the TCP connect and sends the request.
    fn on_handshake(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let Some(conn) = &mut self.conn else { return };
        match conn.handshake() {
            Ok(false) => {} // waiting for the socket, still under the connect deadline
            Ok(true) => {
                let mut now = now;
                if let Some(session) = conn.tls_session() {
                    // Read after the handshake's own I/O: one call can send the ClientHello, read
                    // the server's whole flight and answer it, and `now` is from before.
                    now = cx.now();
                    let took = now - self.handshake_start_us;
                    ch.record_handshake(cx, &self.ex, now, took, session);
                }
                self.send(ch, cx, now);
            }
            Err(e) => {
                cx.handshake_failed(&e, self.ex.file_start_us, now);
                self.fail(ch, cx, handshake_error(&e), now)
            }
        }
    }

    /// Starts writing the current file's request (pipelining: the page's, from this file on).
    fn send(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let r = &cx.sh.requests;
        let depth = cx
            .sh
            .config
            .streams
            .filter(|_| cx.sh.config.http == HttpMode::Pipeline);
        let range = match self.ex.learned {
            OWN => {
                let range = r.for_file(ch.page, self.ex.file, self.url(ch, cx), depth);
                cx.debug(&r.bytes()[range.clone()]);
                range
            }
            learned => {
                cx.debug(cx.redirects.request(learned));
                0..cx.redirects.request(learned).len()
            }
        };
        self.src = self.ex.learned;
        (self.wpos, self.wend) = (range.start, range.end);
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.flush(ch, cx, now);
    }

    /// Writes what is pending; false if the write failed (and the failure was handled).
    fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let Some(conn) = &mut self.conn else {
            return false;
        };
        while self.wpos < self.wend {
            let bytes = match self.src {
                OWN => cx.sh.requests.bytes(),
                learned => cx.redirects.request(learned),
            };
            match conn.write(&bytes[self.wpos..self.wend]) {
                Ok(0) => {
                    self.io_failed(ch, cx, io::ErrorKind::WriteZero.into(), now);
                    return false;
                }
                Ok(n) => self.wpos += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.io_failed(ch, cx, e, now);
                    return false;
                }
            }
        }
        // TLS records the socket could not take yet go with its next writable event.
        if conn.wants_write() {
            if let Err(e) = conn.send_pending() {
                self.io_failed(ch, cx, e, now);
                return false;
            }
        }
        self.ex.written_us = now;
        true
    }

    /// Reads until the socket is drained, the connection is gone, or the data is unwanted.
    /// `closed`: the event also reported the peer's FIN or RST, which no later edge will report
    /// again, so the socket is read until it says so even after a short read.
    fn on_readable(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        closed: bool,
    ) {
        let gen = self.conn_gen;
        loop {
            let carry = self.head.len();
            buf[..carry].copy_from_slice(&self.head);
            let Some(conn) = &mut self.conn else { return };
            let res = conn.read(&mut buf[carry..]);
            let now = cx.now();
            if cx.ended(now) {
                // Read at or after the end: nothing of it is taken into account, whatever it
                // completes; the request stays in flight for `at_end`, which only looks for
                // where the server stopped.
                if let (Ok(n), true) = (&res, self.busy()) {
                    let is_head = self.batch_is_head(ch, cx);
                    let body = (self.state == State::ReadingBody).then_some(&self.decoder);
                    let data = &buf[carry..carry + n];
                    follow_late(&mut self.late, (&self.head, body), data, &is_head);
                }
                return;
            }
            match res {
                Ok(0) => return self.on_eof(ch, cx, now),
                Ok(n) => {
                    cx.count_read(n, now);
                    self.head.clear();
                    self.on_data(ch, cx, &buf[..carry + n], now);
                    let drained = n < buf.len() - carry;
                    if self.conn_gen != gen {
                        return;
                    }
                    // HTTP/1.0: the FIN came with the response and all is read: closing now is
                    // the passive close, without a read to see the EOF.
                    if closed && drained && self.state == State::Closing {
                        return self.closed(ch, cx, now);
                    }
                    // Less than offered: drained (edge-triggered epoll reports what comes next).
                    if drained && !closed {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ch, cx, e, now),
            }
        }
    }

    /// Parses heads and follows bodies through `data`; pipelined responses follow back to back.
    fn on_data(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, data: &[u8], now: u64) {
        let gen = self.conn_gen;
        let mut pos = 0;
        while self.conn_gen == gen {
            match self.state {
                State::ReadingHead => {
                    if pos == data.len() {
                        return;
                    }
                    if self.ex.first_byte_us == NONE {
                        self.ex.first_byte_us = now;
                    }
                    let rest = &data[pos..];
                    let head_request = self.is_head(ch, cx);
                    let h = match parse_response_head(rest, head_request) {
                        Ok(Some(h)) => h,
                        Ok(None) => return self.head.extend_from_slice(rest),
                        Err(e) => {
                            self.ex.lost_bytes += rest.len() as u64;
                            return self.fail(ch, cx, head_error(e), now);
                        }
                    };
                    cx.debug(&rest[..h.head_len]);
                    pos += h.head_len;
                    self.ex.header_bytes += h.head_len as u64;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue; // interim response: the final one follows
                    }
                    self.ex.status = h.status;
                    if cx.sh.config.redirect > 0 {
                        let request = (self.url(ch, cx), self.ex.learned);
                        let (config, workload) = (cx.sh.config, cx.sh.workload);
                        let head = &rest[..h.head_len];
                        self.ex.next = cx
                            .redirects
                            .on_head(config, workload, request, h.status, head);
                    }
                    self.resp_keep_alive = h.keep_alive && h.status != 101;
                    self.decoder = BodyDecoder::new(h.framing);
                    self.state = State::ReadingBody;
                }
                // An empty slice is fed too: a bodiless response is complete right after its head.
                State::ReadingBody => match self.decoder.feed(&data[pos..]) {
                    Err(_) => {
                        self.ex.lost_bytes += (data.len() - pos) as u64;
                        return self.fail(ch, cx, ErrorKind::ShortBody, now);
                    }
                    Ok(p) => {
                        pos += p.consumed;
                        self.ex.body_bytes += p.body as u64;
                        self.ex.framing_bytes += (p.consumed - p.body) as u64;
                        if !p.done {
                            return;
                        }
                        self.response_done(ch, cx, now);
                    }
                },
                _ if pos == data.len() => return,
                // Bytes nobody asked for (between pages, or after the last response): the
                // connection is out of step with us, so it is dropped.
                State::Closing => return self.closed(ch, cx, now),
                _ => return self.close(),
            }
        }
    }

    fn on_eof(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        match self.state {
            State::ReadingHead if self.may_retry(ch, cx) => self.retry(ch, cx, now),
            State::ReadingHead => self.fail(ch, cx, ErrorKind::Reset, now),
            State::ReadingBody => match self.decoder.eof() {
                Ok(()) => {
                    // Close-delimited: complete, and the server has closed already.
                    self.close();
                    self.response_done(ch, cx, now)
                }
                Err(_) => self.fail(ch, cx, ErrorKind::ShortBody, now),
            },
            State::Closing => self.closed(ch, cx, now), // the server closed first, as it should
            _ => self.close(), // the server closed an idle keep-alive connection
        }
    }

    fn io_failed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, e: io::Error, now: u64) {
        if self.state == State::Closing {
            return self.closed(ch, cx, now);
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
        if reset && self.may_retry(ch, cx) {
            return self.retry(ch, cx, now);
        }
        let kind = if reset {
            ErrorKind::Reset
        } else {
            ErrorKind::Io
        };
        self.fail(ch, cx, kind, now);
    }

    /// A reused keep-alive connection that closes before any byte of the response was most
    /// likely closed idle by the server as we wrote: RFC 9112 9.3.1 lets a client resend an
    /// idempotent request once, on a new connection. A fresh connection failing is an error.
    fn may_retry(&self, ch: &Child, cx: &ThreadState<'_>) -> bool {
        let resend = match self.ex.learned {
            OWN => cx.sh.requests.may_resend(self.url(ch, cx)),
            learned => cx.redirects.may_resend(learned),
        };
        resend
            && self.conn_responses > 0
            && !self.retried
            && self.ex.first_byte_us == NONE
            && self.head.is_empty()
    }

    fn retry(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        self.retried = true;
        self.ex.reset_response();
        self.connect(ch, cx, now);
    }
}
