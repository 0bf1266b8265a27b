//! `--pipeline N` when every page is one file (a single URL among them): N requests in flight
//! on the connection, each a page of its own ("lanes", as `--streams N` does over HTTP/2, and as
//! wrk's pipeline.lua and `h2load --h1 -m N` do). Responses come back in order, so the lanes
//! are a queue: the one whose response is being read is the connection's `ex`, the others wait
//! behind it in the in-flight table seen as a queue (`H1::behind`, as a batch's files do:
//! `pipelining.rs`); each exchange carries its own page, and each lane where its request ends in
//! the bytes queued (so whether it was written whole). As each response ends its page ends, and
//! a new page is picked and its request queued; what a read's responses queued is written in one
//! write once the read is handled, so that requests leave in batches as responses arrive in
//! batches. Each request's time runs from when it was queued, the same handler that writes it.
//!
//! A failure (the connection closed mid-response, a malformed head, a timeout) is the error of
//! its kind for the response being read, and the requests behind it, which the server had,
//! are counted as unfinished (or unsent, when not written in full), never lost. A response
//! that says `Connection: close` (or a close after a complete response) is a response like
//! another, and the server never processed the requests behind it: they go again, in order,
//! on a new connection (`lanes_closed`), but for one not idempotent.

use super::super::exchange::Exchange;
use super::super::page::Child;
use super::super::page_flow;
use super::super::{RunShared, ThreadState, Wire};
use super::pipelining::{queue_mut, Behind};
use super::LANES;
use super::{State, H1};
use crate::config::HttpMode;

/// Where a request going again ends until it is queued on its new connection (`send_lanes`):
/// past anything written, so that it is not sent until then.
const NOT_QUEUED: u64 = u64::MAX;

/// The lanes of one connection: the bytes queued (the requests behind the one being read are
/// the connection's queue, `H1::behind`).
pub(super) struct Lanes {
    /// N: requests in flight at most.
    depth: usize,
    /// Where the request being read ends in the bytes queued on this connection.
    pub(super) head_end: u64,
    /// Requests queued and not yet written whole (room for `depth` of the longest, reserved
    /// once): `H1::wpos..H1::wend` are in it.
    pub(super) out: Vec<u8>,
    /// Bytes queued on this connection so far (each lane's `end` counts in them), and bytes of
    /// them the socket took.
    queued: u64,
    pub(super) written: u64,
}

impl Lanes {
    /// The lanes of a run that has them: `--pipeline N` (N > 1) and every page one file.
    pub(super) fn of_run(sh: &RunShared<'_>) -> Option<Box<Lanes>> {
        let config = sh.config;
        let depth = config
            .streams
            .filter(|_| config.http == HttpMode::Pipeline)?;
        let w = sh.workload;
        if depth < 2 || w.pages.iter().any(|p| p.files.len() != 1) {
            return None;
        }
        let depth = depth as usize;
        let longest = (0..w.urls.len())
            .map(|u| sh.requests.for_url(u).len())
            .max()
            .unwrap_or(0);
        Some(Box::new(Lanes {
            depth,
            head_end: 0,
            out: Vec::with_capacity(depth * longest),
            queued: 0,
            written: 0,
        }))
    }

    /// Queues `request`; where it ends in the bytes queued.
    fn push(&mut self, request: &[u8]) -> u64 {
        queue(&mut self.out, &mut self.queued, request)
    }

    /// A new connection: nothing queued on it yet.
    fn reset_out(&mut self) {
        self.out.clear();
        (self.queued, self.written) = (0, 0);
    }
}

impl H1 {
    /// Writes every request in flight on a connection that has none written yet (the page just
    /// started, or, after a reconnect, those that were in flight on the old one), then new pages
    /// up to N, in one write.
    pub(super) fn send_lanes(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let Some(lanes) = &mut self.lanes else { return };
        let r = &cx.sh.requests;
        lanes.reset_out();
        let request = r.for_url(self.ex.url(cx.sh.workload));
        cx.debug(request);
        lanes.head_end = lanes.push(request);
        self.ex.written_us = now;
        let Lanes { out, queued, .. } = &mut **lanes;
        for lane in queue_mut(&mut self.behind).iter_mut() {
            let request = r.for_url(lane.ex.url(cx.sh.workload));
            (lane.end, lane.ex.written_us) = (queue(out, queued, request), now);
        }
        (self.src, self.wpos) = (LANES, 0);
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.fill_lanes(ch, cx, now);
        self.flush(ch, cx, now);
    }

    /// Picks new pages and queues their requests while fewer than N are in flight (not after
    /// the end, nor past the quota). They are written by the next `flush`.
    fn fill_lanes(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let Some(lanes) = &mut self.lanes else { return };
        // What the socket took of a write it did not take whole goes, so that `out` holds
        // only requests in flight: never more than its room.
        if self.wpos > 0 {
            lanes.out.drain(..self.wpos);
            self.wpos = 0;
        }
        let behind = queue_mut(&mut self.behind);
        while 1 + behind.len() < lanes.depth && !cx.ended(now) {
            if !page_flow::pick(ch, cx, now) {
                break;
            }
            let ex = Exchange {
                file_start_us: now,
                written_us: now,
                ..Exchange::new(ch.page)
            };
            let request = cx.sh.requests.for_url(ex.url(cx.sh.workload));
            cx.debug(request);
            let end = lanes.push(request);
            behind.push_back(Behind { ex, end });
        }
        self.wend = lanes.out.len();
    }

    /// The response being read is complete (and its page with it): recorded, then the next lane
    /// is read and a new page queued in its place.
    pub(super) fn lane_done(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.conn_responses += 1;
        let ok = ch.record_response(cx, &self.ex, now);
        Child::record_page(cx, self.ex.page, ok, now);
        if !self.resp_keep_alive || self.conn.is_none() {
            // The server closes after this response (or has closed, a close-delimited body):
            // it never processed those behind it, which go again on a new connection.
            return self.lanes_closed(ch, cx, now, false);
        }
        let next = queue_mut(&mut self.behind).pop_front();
        let Some(lane) = next else {
            self.state = State::Idle;
            return page_flow::next_page(self, ch, cx, now, false);
        };
        self.ex = lane.ex;
        if let Some(lanes) = &mut self.lanes {
            lanes.head_end = lane.end;
        }
        self.retried = false;
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.fill_lanes(ch, cx, now);
    }

    /// The server closed the connection after a complete response (saying `Connection: close`
    /// in it, or closing after it: `unanswered`, the one being read had nothing of its
    /// response yet): it never processed the requests written behind that response (RFC 9112
    /// section 9.3.2). In order, each goes again on a new connection, its page's start kept
    /// (its time includes the wait, as a browser's would); one not idempotent is not sent again
    /// (`pipeline_not_resent`) and its page is not a hit. Only after the window do the end's
    /// rules (`at_end`) apply to them.
    pub(super) fn lanes_closed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        now: u64,
        unanswered: bool,
    ) {
        let Some(lanes) = &mut self.lanes else { return };
        let (written, head_end) = (lanes.written, lanes.head_end);
        // Nothing is written on the next connection yet: should it fail (refused, a timeout,
        // TLS) or the run end before it is up, those going again are not sent, not unfinished.
        lanes.reset_out();
        lanes.head_end = NOT_QUEUED;
        // The one being read goes first when unanswered; else the oldest behind it.
        let keep_head = unanswered && resend_or_drop(cx, &self.ex, head_end <= written, now);
        let behind = queue_mut(&mut self.behind);
        for _ in 0..behind.len() {
            let Some(mut lane) = behind.pop_front() else {
                break;
            };
            let whole = lane.end <= written;
            let url = lane.ex.url(cx.sh.workload);
            if whole && !cx.sh.requests.may_resend(url) {
                not_resent(cx, &lane.ex, now);
                continue;
            }
            resent(cx, &lane.ex, whole, now);
            lane.end = NOT_QUEUED;
            behind.push_back(lane);
        }
        self.close();
        if !keep_head {
            let Some(lane) = queue_mut(&mut self.behind).pop_front() else {
                self.state = State::Idle;
                return page_flow::next_page(self, ch, cx, now, false);
            };
            self.ex = lane.ex;
        }
        // Its request is written again once connected (`send_lanes`), with those behind it.
        self.retried = false;
        self.ex.reset_response();
        self.connect(ch, cx, now);
    }

    /// The connection is lost or closing with requests behind the one being read: each was sent
    /// and will not be answered (unfinished), or was not written whole (unsent).
    pub(super) fn drop_lanes(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let Some(lanes) = &self.lanes else { return };
        let behind = queue_mut(&mut self.behind);
        let written = lanes.written;
        let unfinished = |_, lane: &Behind| (lane.end <= written).then_some(0);
        behind.record_at_end(ch, cx, now, unfinished);
        behind.clear();
    }
}

/// Whether the unanswered request of `ex` goes again (`whole`: it was written whole): it is
/// counted re-sent, or, not idempotent, not sent again and its page ended.
fn resend_or_drop(cx: &mut ThreadState<'_>, ex: &Exchange, whole: bool, now: u64) -> bool {
    if whole && !cx.sh.requests.may_resend(ex.url(cx.sh.workload)) {
        not_resent(cx, ex, now);
        return false;
    }
    resent(cx, ex, whole, now);
    true
}

/// A request the server never processed, going again: a re-send counted (in the window, its
/// page begun in it) when it had been written whole. A request re-sent more than once (a
/// server closing after every response, `--pipeline 4`) is counted each time.
fn resent(cx: &mut ThreadState<'_>, ex: &Exchange, whole: bool, now: u64) {
    cx.stats.pipeline_resent += u64::from(whole && cx.counts(ex.file_start_us, now));
}

/// A request the server never processed, not idempotent: not sent again, its page not a hit.
fn not_resent(cx: &mut ThreadState<'_>, ex: &Exchange, now: u64) {
    if cx.counts(ex.file_start_us, now) {
        cx.stats.pipeline_not_resent += 1;
    }
    Child::record_page(cx, ex.page, false, now);
}

/// Appends `request` to the bytes queued (`out`, `queued` of them); where it ends. A free
/// function so that the lanes' walk, which holds `behind` mutably, can call it too.
fn queue(out: &mut Vec<u8>, queued: &mut u64, request: &[u8]) -> u64 {
    out.extend_from_slice(request);
    *queued += request.len() as u64;
    *queued
}
