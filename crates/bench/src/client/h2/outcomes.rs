//! What becomes of an HTTP/2 connection's streams once they are open: a response recorded, a
//! reset failed, a stream the server never processed sent again, a stalled one timed out and
//! cancelled, and everything in flight when the connection itself fails. The connection
//! (`h2.rs`) calls these after each read, send and timer.

use super::super::exchange::{Answer, Exchange};
use super::super::in_flight::{judge_refusals, Refusals};
use super::super::page::Child;
use super::super::page_flow;
use super::super::stream_lanes;
use super::super::{ThreadState, Wire, NONE};
use super::{State, H2};
use crate::stats::{ErrorKind, Stats};

impl H2 {
    /// Acts on the streams that closed in the last `recv`: responses recorded, resets failed,
    /// those a GOAWAY refused kept to be sent again.
    pub(super) fn streams_closed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.io.closed.is_empty() {
            return;
        }
        for k in 0..self.io.closed.len() {
            let slot = self.io.closed[k] as usize;
            let s = self.io.take(slot);
            if s.refused {
                let counted = unprocessed(cx, &s, now);
                let mut ex = s.ex;
                ex.retried_on = if counted { self.conn_gen } else { 0 };
                ex.reset_response();
                self.io.flight.retry.push(ex);
                continue;
            }
            // Answered or failed, not refused: the server processed a stream here.
            self.processed = true;
            let end = cx.sh.schedule.end_us;
            if now >= end {
                // The run ended before this stream did (its close was read in the loop's last
                // round): unfinished, as those still open at the end are.
                ch.record_unfinished(cx, &s.ex, s.bytes_read(), end);
                continue;
            }
            let complete = s.code == 0 && s.ex.status != 0;
            let ok = if complete {
                if cx.counts(s.ex.file_start_us, now) {
                    // Padding of the DATA frames: framing, not body.
                    cx.stats.http2.bytes_framing += s.data_bytes - s.ex.body_bytes;
                }
                match self.answered(ch, cx, (&s, slot), now) {
                    Answer::Final(ok) => ok,
                    // The page (or lane) goes on with the redirect's request, a new stream.
                    Answer::Follow(to) => {
                        let mut ex = s.ex;
                        (ex.learned, ex.hops) = (to, ex.hops + 1);
                        // The redirect's target is a request of its own: its first refusal is
                        // sent again as any request's is, and its failure takes back no count
                        // of `retried` its first request's refusal made.
                        (ex.refused_once, ex.refused_empty, ex.retried_on) = (false, false, 0);
                        ex.reset_response();
                        ex.connect_us = NONE;
                        self.io.flight.retry.push(ex);
                        continue;
                    }
                }
            } else {
                let kind = if s.reset {
                    ErrorKind::H2RstStream
                } else if s.short_body() {
                    ErrorKind::ShortBody
                } else if self.io.goaway.is_some() {
                    ErrorKind::H2Goaway
                } else {
                    ErrorKind::H2Protocol
                };
                ch.record_failure(cx, &s.ex, kind, s.bytes_read(), now);
                false
            };
            if self.lanes {
                Child::record_page(cx, s.ex.page, ok, now);
                self.think(cx, now);
            } else {
                self.page_ok &= ok;
            }
        }
        for k in 0..self.io.closed.len() {
            let slot = self.io.closed[k] as usize;
            self.io.release_app(slot);
        }
        self.io.closed.clear();
        // With streams left, `oldest_us` stays as it was, a bound below the oldest now in
        // flight: its timer fires early at worst, and the table is scanned then (once a
        // response timeout), not after every read that closed the oldest.
        if self.io.flight.is_empty() {
            self.arm_oldest(ch, cx);
        }
    }

    /// A complete stream's response (`s`, taken from `slot` of the table) for the page logic:
    /// with `--redirect N`, its Location (noted as its HEADERS arrived) first says where its
    /// file goes next; an application workload's checks are held then (`h2/app.rs`).
    fn answered(
        &mut self,
        ch: &Child,
        cx: &mut ThreadState<'_>,
        (s, slot): (&super::streams::Stream, usize),
        now: u64,
    ) -> Answer {
        let mut ex = s.ex;
        if self.io.follow {
            let location = self.io.locations.take(s.id);
            let (config, workload) = (cx.sh.config, cx.sh.workload);
            let request = (ex.url(workload), ex.learned);
            let entry = (ch.slot, ex.file);
            ex.next = cx
                .redirects
                .on_location(config, workload, request, entry, ex.status, location);
        }
        self.judge_app(cx, slot, &mut ex, now);
        match self.io.follow {
            true => ch.answered(cx, &ex, now),
            false => Answer::Final(ch.record_response(cx, &ex, now)),
        }
    }

    /// Lanes: the lane whose page ended at `now` thinks (`--think`) before its next page.
    fn think(&mut self, cx: &ThreadState<'_>, now: u64) {
        let think = cx.sh.schedule.think_us;
        if think > 0 {
            self.thinking.push_back(now + think);
        }
    }

    /// Arms the response timer to the oldest stream in flight (none: disarmed, unless the
    /// page waits for room, whose deadline stands).
    pub(super) fn arm_oldest(&mut self, ch: &Child, cx: &mut ThreadState<'_>) {
        self.oldest_us = self.io.flight.oldest_written().unwrap_or(NONE);
        if self.oldest_us != NONE {
            cx.timers
                .arm(ch.slot, self.oldest_us + cx.sh.schedule.response_timeout_us);
        } else if self.no_room_since == NONE {
            cx.timers.disarm(ch.slot);
        }
    }

    /// The response timer fired with streams in flight: each written longer than the response
    /// timeout ago is a `response_timeout` error and is reset (CANCEL); the others, and the
    /// page or its lanes, go on.
    pub(super) fn streams_timed_out(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if cx.ended(now) {
            return; // in flight at the end: `at_end` counts them
        }
        let timeout = cx.sh.schedule.response_timeout_us;
        // No stream is older than the oldest (the timer also wakes lanes at open-loop slots).
        let expired = self.oldest_us != NONE && now.saturating_sub(timeout) >= self.oldest_us;
        while let Some(slot) = expired
            .then(|| self.io.expired(now.saturating_sub(timeout)))
            .flatten()
        {
            let s = self.io.take(slot);
            if let Some(session) = &mut self.session {
                let _ = session.submit_rst_stream(s.id, http2::error_code::CANCEL);
            }
            let bytes = s.bytes_read();
            ch.record_failure(cx, &s.ex, ErrorKind::ResponseTimeout, bytes, now);
            if self.lanes {
                Child::record_page(cx, s.ex.page, false, now);
                self.think(cx, now);
            } else {
                self.page_ok = false;
            }
        }
        self.arm_oldest(ch, cx);
        self.next(ch, cx, now);
    }

    /// Moves the streams in flight that the server never processed (its GOAWAY's, or refused)
    /// to be sent again; true if any was left to send again.
    pub(super) fn take_unprocessed(&mut self, cx: &mut ThreadState<'_>, now: u64) -> bool {
        while let Some(slot) = self.io.unprocessed() {
            let s = self.io.take(slot);
            let counted = unprocessed(cx, &s, now);
            let mut ex = s.ex;
            ex.retried_on = if counted { self.conn_gen } else { 0 };
            ex.reset_response();
            self.io.flight.retry.push(ex);
        }
        !self.io.flight.retry.is_empty()
    }

    /// The connection failed (or never came up): every stream in flight fails with `kind`, or,
    /// with none, the page's next file does; the connection is dropped and the page ended.
    pub(super) fn conn_failed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        kind: ErrorKind,
        now: u64,
    ) {
        if !self.busy {
            // The server closed (or broke) an idle connection between pages: nothing failed.
            return self.close();
        }
        let end = cx.sh.schedule.end_us;
        // A connection that had come up ended: what it never processed goes on a new one. One
        // that never came up (refused, timed out) fails what waited for it, so that a server
        // gone after its GOAWAY is the error it is, not a reconnect loop to the end of the run.
        let was_up = self.state == State::Open;
        let mut any = false;
        if was_up && now < end && self.take_unprocessed(cx, now) && self.io.flight.is_empty() {
            // Only streams the server never processed were left: they go on a new connection
            // (those refused before by a connection that processed nothing fail instead).
            any = judge_refusals(self, ch, cx, now);
            if !self.io.flight.retry.is_empty() {
                return self.connect(ch, cx, now);
            }
        }
        let io = &self.io;
        // Failed past the run's end (a handshake done in the loop's last round, then failed):
        // counted as `at_end` counts what is left. A stream whose request left whole, and that
        // the server did not refuse, is unfinished, the rest begun and not sent; on a connection
        // that never came up nothing reached the server (no stream opens before its SETTINGS),
        // so all of it is unsent.
        let ended = now >= end;
        for (_, s) in io.flight.iter() {
            if ended {
                match was_up && io.processed(s) && !io.unsent_at_end(s) {
                    true => ch.record_unfinished(cx, &s.ex, s.bytes_read(), end),
                    false => ch.record_unsent(cx, &s.ex, end),
                }
                any = true;
                continue;
            }
            // The stream whose short body made nghttp2 end the connection is that, its error.
            let kind = if kind == ErrorKind::H2Protocol && s.short_body() {
                ErrorKind::ShortBody
            } else {
                kind
            };
            ch.record_failure(cx, &s.ex, kind, s.bytes_read(), now);
            if self.lanes {
                Child::record_page(cx, s.ex.page, false, now);
            }
            any = true;
            // (Taken, not refused: what goes on a new connection is sent again, not judged.)
            self.processed = true;
        }
        if was_up && !ended && !self.io.flight.retry.is_empty() {
            // Those the server never processed (its GOAWAY's, counted in `retried`) are not
            // failures: they go on a new connection, and the page (not a hit now that a file
            // failed) goes on with them.
            any |= judge_refusals(self, ch, cx, now);
            if !self.io.flight.retry.is_empty() {
                self.page_ok = false;
                return self.connect(ch, cx, now);
            }
        }
        for ex in self.io.flight.retry.drain(..) {
            if ended {
                // Not processed by the server (a GOAWAY's, a refusal's) or not sent yet.
                ch.record_unsent(cx, &ex, end);
                any = true;
                continue;
            }
            ch.record_failure(cx, &ex, kind, 0, now);
            if self.lanes {
                Child::record_page(cx, ex.page, false, now);
            }
            any = true;
        }
        let fresh_page = self.fresh;
        // Lanes with nothing in flight are between pages (thinking, or the run's last pages
        // done): nothing failed, and the page last picked was counted already.
        if (!self.lanes && !any) || (self.lanes && fresh_page) {
            // Nothing sent yet: the page's first file is what failed.
            let ex = self.first_exchange(ch, cx.sh.workload);
            if ended {
                ch.record_unsent(cx, &ex, end);
            } else {
                ch.record_failure(cx, &ex, kind, 0, now);
            }
            if self.lanes {
                Child::record_page(cx, ex.page, false, now);
            }
        }
        self.close();
        self.fresh = false;
        let backoff = matches!(
            kind,
            ErrorKind::ConnectRefused | ErrorKind::ConnectOther | ErrorKind::H2NotNegotiated
        );
        self.busy = false;
        if self.lanes {
            page_flow::next_page(self, ch, cx, now, backoff);
        } else {
            self.page_ok = false;
            page_flow::end_page(self, ch, cx, false, now, backoff);
        }
    }
}

/// A stream the server never processed, to be sent again, counted (of its request's window, as
/// its stream is): `retried`, and what was read of it (a server may send a stream's HEADERS, or
/// some of its body, and then refuse it) as framing, as bytes that belong to no response, so
/// that every byte read stays accounted for.
/// True if counted.
fn unprocessed(cx: &mut ThreadState<'_>, s: &super::streams::Stream, now: u64) -> bool {
    let counted = cx.counts(s.ex.file_start_us, now);
    if counted {
        cx.stats.http2.retried += 1;
        cx.stats.http2.bytes_framing += s.bytes_read();
    }
    counted
}

/// What is to go on a new connection once this one is done (its GOAWAY, or its end with
/// streams it never processed), judged by the rule HTTP/3 shares (`in_flight/refusals.rs`).
impl Refusals for H2 {
    const REFUSED_AGAIN: ErrorKind = ErrorKind::H2Goaway;

    fn retry(&mut self) -> &mut Vec<Exchange> {
        &mut self.io.flight.retry
    }

    fn processed(&self) -> bool {
        self.processed
    }

    fn refused_at_once(&self) -> bool {
        !self.opened_any && self.io.goaway.is_some()
    }

    fn conn_gen(&self) -> u64 {
        self.conn_gen
    }

    fn retried(stats: &mut Stats) -> &mut u64 {
        &mut stats.http2.retried
    }

    fn refuse_waiting(&mut self, ch: &Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.lanes && self.fresh {
            self.fresh = false;
            let ex = stream_lanes::lane_exchange(ch);
            self.io.flight.retry.push(ex);
        } else if !self.lanes
            && self.page_ok
            && self.next_file < ch.files(cx.sh.workload)
            && !self.waits_for_values(cx.sh.workload)
        {
            let ex = self.next_exchange(ch, now);
            self.io.flight.retry.push(ex);
        }
    }

    fn refused_failed(&mut self, cx: &mut ThreadState<'_>, _: usize, ex: &Exchange, now: u64) {
        if self.lanes {
            Child::record_page(cx, ex.page, false, now);
        } else {
            self.page_ok = false;
        }
    }
}
