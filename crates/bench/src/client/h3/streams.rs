//! An HTTP/3 connection's streams: the page's files opened as streams while there is room
//! (`--streams`, the server's limit), each request's fields from the run's prebuilt header
//! lists (`H2Requests`: HTTP/2 and HTTP/3 carry the same fields) gathered on the stack; then
//! the client's events: a response's head (its first byte), its body, its end, a reset, a
//! GOAWAY. When nothing is left in flight or to send, the page ends.

use super::super::app::AppStream;
use super::super::exchange::{Answer, Exchange, PageRef};
use super::super::in_flight::{judge_refusals, waiting_since, InFlightSlot};
use super::super::page::Child;
use super::super::page_flow;
use super::super::redirects::OWN;
use super::super::stream_lanes::{self, Lane};
use super::super::{ThreadState, Wire, NONE};
use super::{State, H3};
use crate::stats::{ErrorKind, Http3Stats};
use http3::ClientEvent;
use std::sync::Arc;

/// Fields of a request gathered on the stack (a command line's requests have far fewer; one
/// with more is sent from the heap).
const STACK_FIELDS: usize = 32;

/// What became of a request given to the connection.
enum Submitted {
    Sent,
    /// Not opened now (no room, or its header block does not fit the send capacity): first in
    /// line for the next try.
    Blocked,
    /// The connection failed (recorded).
    Failed,
    /// An application's request that needs a value never extracted: not sent (counted).
    Unsent,
}

/// One stream in flight.
#[derive(Debug)]
pub(super) struct Stream {
    pub id: u64,
    /// Its `written_us` is when the client had sent its request's head (NONE until then), as
    /// over HTTP/2: its body may still be going (`body_left`).
    pub ex: Exchange,
    /// A request body, and how much of it the stream took so far.
    body: Option<Arc<[u8]>>,
    body_pos: usize,
    /// An application workload: what the stream keeps of its response (`h3/app.rs`), and
    /// whether its request's body is the one built for it (`AppStream::request_body`).
    pub app: Option<AppStream>,
    own_body: bool,
    /// The server rejected it (H3_REQUEST_REJECTED) after the run's end, read in the linger:
    /// never processed, so not sent rather than unfinished (`at_end`).
    pub rejected_late: bool,
    /// The body its final response has (RFC 9114 4.1.2: the `content-length`; none for a
    /// HEAD, a 204 or a 304), checked against the DATA that comes; `NONE`: not announced.
    length: u64,
    /// Its trailer section has come: nothing more may (RFC 9114 4.1).
    trailers: bool,
}

impl InFlightSlot for Stream {
    // Client bidirectional streams: 0, 4, 8, ...
    const KEY_SHIFT: u32 = 2;
    const FREE: Stream = Stream {
        id: 0,
        ex: Exchange::new(PageRef::NONE),
        body: None,
        body_pos: 0,
        app: None,
        own_body: false,
        rejected_late: false,
        length: NONE,
        trailers: false,
    };

    fn exchange(&self) -> &Exchange {
        &self.ex
    }
}

impl Stream {
    /// Request body bytes not yet taken by the stream.
    pub(super) fn body_left(&self) -> usize {
        self.body().map_or(0, |b| b.len() - self.body_pos)
    }

    /// The request's body: the run's prebuilt one, or the one built for this stream.
    fn body(&self) -> Option<&[u8]> {
        match (&self.body, &self.app) {
            (Some(b), _) => Some(b),
            (None, Some(app)) if self.own_body => Some(&app.request_body),
            _ => None,
        }
    }
}

impl H3 {
    /// Opens streams while there is room and something to send; ends the page when nothing is
    /// left.
    pub(super) fn fill(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if !self.busy {
            return;
        }
        let end = cx.sh.schedule.end_us;
        let files = ch.files(cx.sh.workload);
        // A page's files begin now, or, if they waited for this connection, when it was begun.
        let begun = match self.waited_from {
            NONE => now,
            t => t,
        };
        self.send_bodies();
        // Lanes: the quota is done (no page left to pick); the next page's open-loop slot is
        // still to come.
        let (mut quota_done, mut slot_ahead) = (false, false);
        self.lane_wake_us = NONE;
        // Lanes whose think time is over are free again.
        stream_lanes::end_thinking(&mut self.thinking, now);
        // Closed-loop lanes are refilled in batches, as over HTTP/2; in the open loop and with
        // `--think` each goes as it frees (its slot, its timer).
        // The batch is sized as HTTP/2's: from `--streams` and the server's limit, the lowest
        // (QUIC's limit is a credit of streams left: the concurrent limit is those in flight
        // and the credit).
        // (Asked of quiche only with lanes: a page's files need no batch.)
        let schedule = &cx.sh.schedule;
        let closed_loop = schedule.interval_us.is_none() && schedule.think_us == 0;
        let held = self.lanes && {
            let server = self.client.as_ref().map_or(0, http3::Client::streams_left);
            let limit = self
                .want
                .min(self.flight.len().saturating_add(server as usize));
            let (flight, retry) = (self.flight.len(), self.flight.retry.len());
            stream_lanes::refill_held(closed_loop, limit, flight, retry)
        };
        while !held
            && self.goaway.is_none()
            && self.flight.len() + self.thinking.len() < self.want
            && now < end
        {
            if self.flight.retry.is_empty() && self.lanes {
                // A lane is free, but a page is picked only with a stream for it, as over
                // HTTP/2: picked now and sent a round trip later (quiche's credit comes back
                // once the server has collected a stream), its send lag would leave out that
                // wait.
                if !self.fresh && self.client.as_ref().map_or(0, http3::Client::streams_left) == 0 {
                    self.wait_for_room(now);
                    return;
                }
                // The page picked and not sent yet, or the next one (in the open loop once its
                // slot has come).
                match stream_lanes::next_lane(&mut self.fresh, ch, cx, now) {
                    Lane::Page => {}
                    Lane::SlotAhead => {
                        slot_ahead = true;
                        break;
                    }
                    Lane::QuotaDone => {
                        quota_done = true;
                        break;
                    }
                }
            } else if self.flight.retry.is_empty() && !(self.page_ok && self.next_file < files) {
                // Nothing left to send: the page ends with its last stream (below), whatever
                // room the server allows.
                break;
            } else if self.flight.retry.is_empty() && self.waits_for_values(cx.sh.workload) {
                // An application's next file waits for the values it may need.
                break;
            }
            let room = self.client.as_ref().map_or(0, http3::Client::streams_left);
            if room == 0 {
                // The server allows no stream now: wait for it to (its MAX_STREAMS), within
                // the response timeout, unless a stream in flight frees one first.
                self.wait_for_room(now);
                return;
            }
            let again = self.flight.retry.pop();
            // A lane's page picked and not sent stays so while exchanges sent again go first.
            self.fresh &= self.lanes && again.is_some();
            let ex = match again {
                Some(ex) => ex,
                // A lane's page is its one file; the connection's time goes with the first.
                None if self.lanes => Exchange {
                    connect_us: std::mem::replace(&mut self.connect_us, NONE),
                    ..stream_lanes::lane_exchange(ch)
                },
                None => {
                    let file = self.next_file;
                    self.next_file += 1;
                    Exchange {
                        file,
                        file_start_us: begun,
                        connect_us: if file == 0 {
                            std::mem::replace(&mut self.connect_us, NONE)
                        } else {
                            NONE
                        },
                        ..Exchange::new(ch.page)
                    }
                }
            };
            match self.submit(ch, cx, ex, now) {
                // The wait for room (bounded by the response timeout) ends when a request
                // goes, not when one is tried: a request held back keeps waiting from when
                // it began to.
                Submitted::Sent => {
                    self.no_room_since = NONE;
                    self.opened_any = true;
                }
                // Held back (the stream's send capacity is smaller than the header block
                // until what is queued goes out): first in line again, sent when a read or
                // the timer calls here next, never retried in this loop.
                Submitted::Blocked => {
                    self.wait_for_room(now);
                    return;
                }
                Submitted::Failed => return,
                // Not sent (a value missing): the page opens no more files.
                Submitted::Unsent => self.no_room_since = NONE,
            }
        }
        // Lanes: wake at the next page's slot (a stream is free for it) or when the first
        // thinking lane is done (`arm`, beside the response timeout and QUIC's deadline).
        let wake = stream_lanes::lane_wake(slot_ahead, ch, &self.thinking);
        if !quota_done && self.goaway.is_none() && now < end {
            self.lane_wake_us = wake;
        }
        if !self.flight.is_empty() {
            self.waited_from = NONE;
            return;
        }
        if self.lane_wake_us != NONE && !self.thinking.is_empty() {
            // Nothing in flight and a lane thinking: the lanes go on, the timer wakes them.
            return;
        }
        let mut left = self.left(files);
        // (A connection that ends with nothing processed on it makes the next one wait:
        // `connect`.)
        if self.goaway.is_some() {
            // The GOAWAY's streams are done: what is left goes on a new connection (once only,
            // from a connection on which the server processed nothing: `judge_refusals`).
            if left && now < end {
                judge_refusals(self, ch, cx, now);
                left = self.left(files);
                if left {
                    return self.connect(ch, cx, now);
                }
            }
            self.take_packets(cx, now);
            self.close();
        }
        // (At the end of the run, what is left stays for `at_end`.)
        if self.lanes && (quota_done || !left) {
            // No lane in flight and none to open now (the quota is done, or the run has
            // ended): finished, or the next page as after any page.
            self.busy = false;
            self.take_packets(cx, now);
            return match quota_done {
                true => page_flow::finish(self, ch, cx, now),
                false => page_flow::next_page(self, ch, cx, now, false),
            };
        }
        if !left {
            self.busy = false;
            self.take_packets(cx, now);
            // A request not sent for a missing value: the next page after a back-off, so that
            // a Webchild whose every page fails alike does not spin.
            let backoff = std::mem::take(&mut self.unsent);
            page_flow::end_page(self, ch, cx, self.page_ok, now, backoff);
        }
    }

    /// Whether anything is left for a new connection: exchanges to send again, the lane's page
    /// picked, or the page's next file (of `files`).
    fn left(&self, files: usize) -> bool {
        !self.flight.retry.is_empty()
            || match self.lanes {
                true => self.fresh,
                false => self.page_ok && self.next_file < files,
            }
    }

    /// Without a stream in flight to end it, a wait for room is bounded by the response
    /// timeout from now.
    fn wait_for_room(&mut self, now: u64) {
        if self.flight.is_empty() && self.no_room_since == NONE {
            self.no_room_since = now;
        }
    }

    /// Opens a stream for `ex`.
    fn submit(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        ex: Exchange,
        now: u64,
    ) -> Submitted {
        if self.client.is_none() {
            // The connection is gone: the exchange fails with the others waiting (recorded,
            // a request held back for it returned to the pool).
            self.requeue(cx, ex, now);
            self.conn_failed(ch, cx, ErrorKind::Reset, now);
            return Submitted::Failed;
        }
        // An application's request is built now, with the session's values and cookies, unless
        // it was built already and held back (`held`): then it goes as it was built.
        let held = self.held.take_if(|(at, _)| *at == self.flight.retry.len());
        let held_before = held.is_some();
        let app = match (self.app.is_some(), held) {
            (true, Some((_, kept))) => {
                std::mem::swap(&mut self.request, &mut self.held_request);
                Some(kept)
            }
            (true, None) => match self.build_app(cx, (&*ch, &ex), now) {
                Some(kept) => Some(kept),
                None => return Submitted::Unsent,
            },
            (false, _) => None,
        };
        // Checked above; building the request does not touch the connection.
        let client = self.client.as_mut().expect("submit: connection present");
        let (res, body, own_body) = match &app {
            Some(kept) => {
                let req = &self.request;
                // The built body went with the stream (`build_app`). One that expanded to
                // nothing ends the stream with its HEADERS: no DATA will ever come to end it.
                let body = &kept.request_body;
                let has_body = req.has_body && !body.is_empty();
                let res = send_fields(client, req.fields(), req.field_count(), !has_body);
                (res, None, has_body)
            }
            None => {
                // A redirect followed (`--redirect N`) sends its learned request, URL 0 of its
                // own list.
                let (h, url) = match ex.learned {
                    OWN => (
                        cx.sh.h2.as_ref().expect("HTTP/3 requests built"),
                        ex.url(cx.sh.workload),
                    ),
                    learned => (cx.redirects.h2(learned), 0),
                };
                // An empty prebuilt body (`body = ""`) likewise ends the stream at once.
                let body = h.body(url).filter(|b| !b.is_empty()).cloned();
                let res = send_fields(client, h.fields(url), h.field_count(url), body.is_none());
                if let (true, Ok(id)) = (cx.sh.config.debug, &res) {
                    super::debug::block(cx, *id, "request", h.fields(url), None);
                }
                (res, body, false)
            }
        };
        let id = match res {
            Ok(id) => id,
            Err(e) => {
                if let http3::Error::NoStream | http3::Error::Blocked = e {
                    // No room after all (the limit, or flow control for the header block):
                    // first in line again, sent when a stream frees or the server raises its
                    // limit, as built now (its fields to `held_request`, its body with its
                    // buffers). Only the exchange on top of `retry` can be held, and what is
                    // queued while it is goes below it (`requeue`): it stays on top.
                    // Counted once, when an application's request is first held.
                    if app.is_some() && !held_before && cx.counts(ex.file_start_us, now) {
                        cx.stats.http3.held_back += 1;
                    }
                    self.flight.retry.push(ex);
                    if let Some(kept) = app {
                        self.held = Some((self.flight.retry.len() - 1, kept));
                        std::mem::swap(&mut self.request, &mut self.held_request);
                    }
                    return Submitted::Blocked;
                }
                self.flight.retry.push(ex);
                self.spare.extend(app);
                self.conn_failed(ch, cx, ErrorKind::H3Protocol, now);
                return Submitted::Failed;
            }
        };
        if let (true, Some(kept)) = (cx.sh.config.debug, &app) {
            // As sent: a request held back is shown once, when it goes.
            let req = &self.request;
            let body = req.has_body.then_some(&kept.request_body[..]);
            super::debug::block(cx, id, "request", req.fields(), body);
        }
        if cx.counts(ex.file_start_us, now) {
            cx.stats.http3.streams += 1;
        }
        let mut ex = ex;
        ex.written_us = NONE;
        let stream = Stream {
            id,
            ex,
            body,
            body_pos: 0,
            app,
            own_body,
            rejected_late: false,
            length: NONE,
            trailers: false,
        };
        self.bodies_pending |= stream.body_left() > 0;
        // Not written yet: it waits from its file's start, and later only from its write.
        self.oldest_us = self.oldest_us.min(waiting_since(&stream.ex));
        self.flight.insert(id, stream);
        self.send_bodies();
        Submitted::Sent
    }

    /// Request bodies as far as flow control takes them now: a walk of the streams in flight
    /// only while one may have some left.
    fn send_bodies(&mut self) {
        if !self.bodies_pending {
            return;
        }
        let Some(client) = &mut self.client else {
            return;
        };
        let mut left = false;
        for s in (self.flight.iter_mut()).filter(|s| s.body_left() > 0) {
            let Some(body) = s.body() else { continue };
            if let Ok(n) = client.send_body(s.id, &body[s.body_pos..], true) {
                s.body_pos += n;
            }
            left |= s.body_left() > 0;
        }
        self.bodies_pending = left;
    }

    /// The client's events since the last read; false if the connection is gone.
    pub(super) fn on_events(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        now: u64,
    ) -> bool {
        while let Some(ev) = self.client.as_mut().and_then(http3::Client::poll) {
            match ev {
                ClientEvent::Response {
                    stream,
                    status,
                    length,
                    fields,
                    ..
                } => {
                    if cx.sh.config.debug {
                        super::debug::block(cx, stream, "response", fields.iter(), None);
                    }
                    // A head after the final one is a trailer section with a pseudo-header:
                    // a malformed response (RFC 9114 4.3), its stream's error.
                    if self.flight.by_key(stream).is_some_and(|s| s.ex.status != 0) {
                        self.malformed(ch, cx, stream, now);
                        continue;
                    }
                    // An interim response (1xx) is not the response: its final one follows.
                    if status < 200 {
                        continue;
                    }
                    // QPACK decodes the head: its size is its fields' names and values.
                    let size: usize = fields.iter().map(|(n, v)| n.len() + v.len()).sum();
                    if let Some(s) = self.flight.by_key(stream) {
                        s.ex.status = status;
                        // The body it announces, as HTTP/1.1 frames it (RFC 9110 6.4.1, 8.6).
                        s.length = match s.ex.is_head(cx) || status == 204 || status == 304 {
                            true => 0,
                            false => length.unwrap_or(NONE),
                        };
                        s.ex.header_bytes += size as u64;
                        if s.ex.first_byte_us == NONE {
                            s.ex.first_byte_us = now;
                        }
                        cx.count_read(size, now);
                        if let Some(app) = &mut s.app {
                            app.begin_head(status);
                            let own = fields.iter().filter(|(n, _)| !n.starts_with(b":"));
                            own.for_each(|(n, v)| app.on_field(n, v));
                        }
                        if cx.sh.config.redirect > 0 {
                            // Where the file goes next (`--redirect N`): its Location, as
                            // HTTP/2 notes it from its HEADERS.
                            let location = fields.get(b"location");
                            let (config, workload) = (cx.sh.config, cx.sh.workload);
                            let request = (s.ex.url(workload), s.ex.learned);
                            s.ex.next = cx.redirects.on_location(
                                config,
                                workload,
                                request,
                                (ch.slot, s.ex.file),
                                status,
                                location,
                            );
                        }
                    }
                }
                ClientEvent::Data { stream } => {
                    // DATA after the trailer section breaks the frames' order (RFC 9114 4.1).
                    if self.flight.by_key(stream).is_some_and(|s| s.trailers) {
                        return self.frame_unexpected(ch, cx, now);
                    }
                    if self.read_body(cx, stream, buf, now) {
                        // More than its `content-length`: malformed (RFC 9114 4.1.2).
                        self.malformed(ch, cx, stream, now);
                    }
                }
                ClientEvent::Trailers { stream, fields } => {
                    if cx.sh.config.debug {
                        super::debug::block(cx, stream, "trailers", fields.iter(), None);
                    }
                    match self.flight.by_key(stream) {
                        // Where the head should be, a block without `:status`: malformed.
                        Some(s) if s.ex.status == 0 => self.malformed(ch, cx, stream, now),
                        // A second trailer section breaks the frames' order (RFC 9114 4.1).
                        Some(s) if s.trailers => return self.frame_unexpected(ch, cx, now),
                        Some(s) => s.trailers = true,
                        None => {}
                    }
                }
                ClientEvent::Malformed { stream } => {
                    // (Reset by the client already.)
                    if let Some(s) = self.take(stream) {
                        self.stream_failed(ch, cx, s, ErrorKind::H3Protocol, now);
                    }
                }
                ClientEvent::Finished { stream } => {
                    if self.flight.by_key(stream).is_some_and(|s| s.ex.status == 0) {
                        // The stream ended with no response head: the server broke HTTP/3
                        // (a QUIC server with ALPN h3 and no HTTP/3 behind it ends every
                        // stream so). This side closes the connection over it (h3_protocol),
                        // failing what is in flight; the next page has a new connection.
                        // Failed alone, each stream would be a new one failed at once.
                        if let Some(client) = &mut self.client {
                            let why = b"a response stream ended without a head";
                            client.close(H3_GENERAL_PROTOCOL_ERROR, why);
                        }
                        self.conn_failed(ch, cx, ErrorKind::H3Protocol, now);
                        return false;
                    }
                    if let Some(s) = self.take(stream) {
                        self.answered(ch, cx, s, now);
                    }
                }
                ClientEvent::Reset { stream, code } => {
                    if cx.counts(now, now) {
                        let resets = &mut cx.stats.http3.stream_resets;
                        Http3Stats::count(resets, http3::h3_code_name(code));
                    }
                    let Some(mut s) = self.take(stream) else {
                        continue;
                    };
                    // Rejected (RFC 9114 4.1.1): not processed, sent again as HTTP/2 sends a
                    // REFUSED_STREAM's: on a new connection if this one is going away (judged
                    // there as a GOAWAY's refusals are, `judge_refusals`), else here, once.
                    let going = self.goaway.is_some();
                    if code == http3::H3_REQUEST_REJECTED && (going || s.ex.first_refusal()) {
                        self.send_again(cx, s, now);
                        continue;
                    }
                    self.stream_failed(ch, cx, s, ErrorKind::H3StreamReset, now);
                }
                ClientEvent::GoAway { id } => {
                    if cx.counts(now, now) {
                        cx.stats.http3.goaways += 1;
                    }
                    self.goaway = Some(self.goaway.map_or(id, |g| g.min(id)));
                    self.take_unprocessed(cx, now);
                }
            }
        }
        self.state != State::Idle
    }

    /// Body bytes of `stream`, read until none is waiting (those of a stream no longer in
    /// flight are read and dropped, so that flow control goes on); true if they went past the
    /// body its response announced.
    fn read_body(
        &mut self,
        cx: &mut ThreadState<'_>,
        stream: u64,
        buf: &mut [u8],
        now: u64,
    ) -> bool {
        let Some(client) = &mut self.client else {
            return false;
        };
        let slot = self.flight.find(stream);
        while let Ok(n @ 1..) = client.recv_body(stream, buf) {
            if let Some(i) = slot {
                let s = self.flight.get_mut(i);
                s.ex.body_bytes += n as u64;
                if let Some(app) = &mut s.app {
                    app.on_body(&buf[..n]);
                }
                if s.ex.first_byte_us == NONE {
                    s.ex.first_byte_us = now;
                }
                cx.count_read(n, now);
            }
        }
        slot.is_some_and(|i| {
            let s = self.flight.get_mut(i);
            s.length != NONE && s.ex.body_bytes > s.length
        })
    }

    /// A response complete: recorded as over HTTP/2 (its status judged by the run's rule).
    fn answered(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, mut s: Stream, now: u64) {
        self.processed = true;
        if s.ex.status == 0 {
            // The stream ended with no response head: the server broke the protocol.
            return self.stream_failed(ch, cx, s, ErrorKind::H3Protocol, now);
        }
        if s.length != NONE && s.ex.body_bytes < s.length {
            // Its DATA ended short of its `content-length`: malformed (RFC 9114 4.1.2), a
            // short body as over HTTP/1.1 and HTTP/2. (Its stream has ended: nothing to reset.)
            return self.stream_failed(ch, cx, s, ErrorKind::ShortBody, now);
        }
        if s.app.is_some() {
            self.judge_app(cx, &mut s, now);
        }
        // Without --redirect no Location is taken (`ex.next` stays `Hop::None`): recorded as
        // the final response.
        match ch.answered(cx, &s.ex, now) {
            Answer::Final(ok) => self.file_done(cx, &s.ex, ok, now),
            // The file goes on with the redirect's request, a new stream, first in line.
            Answer::Follow(to) => {
                let mut ex = s.ex;
                (ex.learned, ex.hops) = (to, ex.hops + 1);
                // The redirect's target is a request of its own: its first refusal is sent
                // again as any request's is (as over HTTP/2), and its failure takes back no
                // count of `retried` its first request's refusal made.
                (ex.refused_once, ex.refused_empty, ex.retried_on) = (false, false, 0);
                ex.reset_response();
                self.requeue(cx, ex, now);
            }
        }
    }

    /// Queues `ex` to be sent next, first in line, unless a request held back is on top of
    /// `retry`: that one stays on top (its `{{seq}}` taken, it goes as built) and `ex` goes
    /// right below it (counted in `queued_below_held`).
    pub(super) fn requeue(&mut self, cx: &mut ThreadState<'_>, ex: Exchange, now: u64) {
        match &mut self.held {
            Some((at, _)) if *at + 1 == self.flight.retry.len() => {
                if cx.counts(ex.file_start_us, now) {
                    cx.stats.http3.queued_below_held += 1;
                }
                self.flight.retry.insert(*at, ex);
                *at += 1;
            }
            _ => self.flight.retry.push(ex),
        }
    }

    /// Takes stream `id` out of the table, if it is in flight: its response has ended or was
    /// reset. A request body not all sent by then never will be: its send side is reset, else
    /// the stream would stay half-open, holding one of the server's streams until the server
    /// stopped it (seconds), and early answers (a 413) would use up the server's streams.
    pub(super) fn take(&mut self, id: u64) -> Option<Stream> {
        let s = self.flight.take_key(id)?;
        if let (1.., Some(client)) = (s.body_left(), &mut self.client) {
            // An error is the stream's end already (reset by the server, or gone).
            let _ = client.reset_request(id, http3::H3_REQUEST_CANCELLED);
        }
        Some(s)
    }
}

/// HTTP/3's code for a connection error no more specific code fits (RFC 9114 8.1).
const H3_GENERAL_PROTOCOL_ERROR: u64 = 0x101;

/// Opens a stream with the `count` fields of `fields`, laid out on the stack (a request with
/// more is sent from the heap); `end`: the request has no body.
fn send_fields<'a>(
    client: &mut http3::Client,
    fields: impl Iterator<Item = http3::Field<'a>>,
    count: usize,
    end: bool,
) -> Result<u64, http3::Error> {
    if count <= STACK_FIELDS {
        let mut list: [http3::Field<'_>; STACK_FIELDS] = [(b"", b""); STACK_FIELDS];
        let mut n = 0;
        for (slot, field) in list.iter_mut().zip(fields) {
            *slot = field;
            n += 1;
        }
        client.send_request(&list[..n], end)
    } else {
        let list: Vec<http3::Field<'_>> = fields.collect();
        client.send_request(&list, end)
    }
}
