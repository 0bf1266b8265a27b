//! Opening streams: while the connection has room (our `--streams` and the server's
//! SETTINGS_MAX_CONCURRENT_STREAMS), the next exchange goes as a stream: one sent again after a
//! GOAWAY or a refusal (or a redirect to follow) first, then the page's next file, or with lanes
//! a newly picked one-file page, in the open loop once its slot has come. When nothing is left
//! the page (or the Webchild's lanes) ends.

use super::super::exchange::Exchange;
use super::super::in_flight::{judge_refusals, waiting_since};
use super::super::page::Child;
use super::super::page_flow;
use super::super::redirects::OWN;
use super::super::stream_lanes::{self, Lane};
use super::super::{ThreadState, Wire, NONE};
use super::requests::{H2Requests, STACK_FIELDS};
use super::streams::{debug_block, debug_field, Io};
use super::H2;
use http2::{Header, Session, StreamId};

impl H2 {
    /// Closed-loop lanes wait to be refilled together (`stream_lanes::refill_held`). Pages of
    /// several files, the open loop, thinking lanes and exchanges to send again are never held.
    fn refill_held(&self, open_loop: bool, think: bool) -> bool {
        let closed_loop = !open_loop && !think;
        let flight = &self.io.flight;
        self.lanes
            && stream_lanes::refill_held(closed_loop, self.limit, flight.len(), flight.retry.len())
    }

    /// Opens streams while there is room and something to send; ends the page (or the lanes)
    /// when nothing is left.
    pub(super) fn fill(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
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
        let open_loop = cx.sh.schedule.interval_us.is_some();
        // Lanes: the quota is done (no page left to pick); the next page's open-loop slot is
        // still to come.
        let (mut quota_done, mut slot_ahead) = (false, false);
        // Lanes whose think time is over are free again.
        stream_lanes::end_thinking(&mut self.thinking, now);
        let held = self.refill_held(open_loop, cx.sh.schedule.think_us > 0);
        let in_flight_before = self.io.flight.len();
        while !held
            && !self.draining
            && self.io.flight.len() + self.thinking.len() < self.limit
            && now < end
        {
            if let Some(ex) = self.io.flight.retry.pop() {
                self.submit(ch, cx, ex, now);
                continue;
            }
            if self.lanes {
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
                self.fresh = false;
                self.submit(ch, cx, stream_lanes::lane_exchange(ch), now);
            } else if self.page_ok
                && self.next_file < ch.files(cx.sh.workload)
                && !self.waits_for_values(cx.sh.workload)
            {
                let ex = self.next_exchange(ch, now);
                self.submit(ch, cx, ex, now);
            } else {
                break;
            }
            if self.conn.is_none() {
                return;
            }
        }
        if self.io.flight.len() > in_flight_before {
            // The waiting work is on its way; later streams begin when they are opened.
            self.waited_from = NONE;
        }
        // Lanes: wake at the next page's slot (a stream is free for it) or when the first
        // thinking lane is done, unless the oldest stream's response timeout comes first.
        let wake = stream_lanes::lane_wake(slot_ahead, ch, &self.thinking);
        let waiting = wake != NONE && !quota_done && !self.draining && now < end;
        if waiting {
            let timeout = self
                .oldest_us
                .saturating_add(cx.sh.schedule.response_timeout_us);
            cx.timers.arm(ch.slot, wake.min(timeout));
        }
        if !self.io.flight.is_empty() || (waiting && !self.thinking.is_empty()) {
            // (Nothing in flight and a lane thinking: the page goes on, its timer wakes it.)
            return;
        }
        if self.draining {
            // The GOAWAY's streams are done: what is left goes on a new connection (lanes:
            // the next page's, picked when it is due).
            let left = self.left(ch, cx);
            if left && now < end {
                // (Sent again once if the server processed nothing on it; refused so twice, failed.)
                judge_refusals(self, ch, cx, now);
                if self.left(ch, cx) {
                    return self.connect(ch, cx, now);
                }
            }
            self.close();
        }
        if self.limit == 0 && now < end && self.conn.is_some() {
            let pending = !self.io.flight.retry.is_empty()
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
            self.busy = false;
            if quota_done {
                // Every lane is done: the Webchild is done.
                return page_flow::finish(self, ch, cx, now);
            }
            // No stream in flight and none to open now (the next open-loop slot is ahead, the
            // run has ended, or the connection is gone after a GOAWAY): the next page as after
            // any page, on this connection or a new one.
            return page_flow::next_page(self, ch, cx, now, false);
        }
        let done = !self.page_ok || self.next_file >= ch.files(cx.sh.workload);
        if done && self.io.flight.retry.is_empty() {
            let hit = self.page_ok;
            self.busy = false;
            // A page that ended on a request not sent (a value missing) starts the next after
            // the back-off of a failed connect: nothing was read, and every page may fail so.
            let backoff = std::mem::take(&mut self.unsent);
            page_flow::end_page(self, ch, cx, hit, now, backoff);
        }
    }

    /// Whether work is left for a new connection once this one's GOAWAY streams are done:
    /// exchanges to send again, the page's next file, or the lane's page picked.
    fn left(&self, ch: &Child, cx: &ThreadState<'_>) -> bool {
        !self.io.flight.retry.is_empty()
            || (!self.lanes && self.page_ok && self.next_file < ch.files(cx.sh.workload))
            || (self.lanes && self.fresh)
    }

    /// The page's next file as an exchange, taken (page mode): it begins now, or, if it waited
    /// for this connection, when that was begun.
    pub(super) fn next_exchange(&mut self, ch: &Child, now: u64) -> Exchange {
        let file_start_us = match self.waited_from {
            NONE => now,
            begun => begun,
        };
        let ex = Exchange {
            file: self.next_file,
            file_start_us,
            connect_us: if self.next_file == 0 {
                self.connect_us
            } else {
                NONE
            },
            ..Exchange::new(ch.page)
        };
        self.next_file += 1;
        self.fresh = false;
        ex
    }

    /// Opens a stream for `ex`.
    pub(super) fn submit(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        ex: Exchange,
        now: u64,
    ) {
        if self.app.is_some() {
            // An application workload's request, built now, a redirect's target's too: it
            // carries the session's cookies (`h2/app.rs`).
            return self.submit_app(ch, cx, ex, now);
        }
        let Some(session) = &mut self.session else {
            return;
        };
        // A redirect followed (`--redirect N`) sends its learned request, URL 0 of its own list
        // (kept by this thread, not for the whole run: its fields are copied).
        let (h, url, run_long) = match ex.learned {
            OWN => (
                cx.sh.h2.as_ref().expect("HTTP/2 requests built"),
                ex.url(cx.sh.workload),
                true,
            ),
            learned => (cx.redirects.h2(learned), 0, false),
        };
        let body = h.body(url).cloned();
        let fields = (h, url, run_long);
        let res = match h.field_count(url) {
            // A command line's requests (pseudo-headers, user-agent, a few more): the smallest
            // array that holds them, as it is filled for every request.
            0..=8 => submit_from_stack::<8>(session, fields, body.is_some()),
            9..=STACK_FIELDS => submit_from_stack::<STACK_FIELDS>(session, fields, body.is_some()),
            _ => {
                let list: Vec<Header<'_>> = h.fields(url).map(|(n, v)| Header::new(n, v)).collect();
                session.submit_request(&list, body.is_some())
            }
        };
        let id = match res {
            Ok(id) => id,
            Err(_) => {
                // nghttp2 opens no more streams here: stream ids ran out (after 2^30 streams on
                // one connection, a long `--streams` run), or memory did. Sent again on a new
                // connection once those in flight are done; trying again here would spin.
                self.io.flight.retry.push(ex);
                self.draining = true;
                return;
            }
        };
        if cx.sh.config.debug {
            let mut text = Vec::new();
            debug_block(&mut text, id, "request");
            for (name, value) in h.fields(url) {
                debug_field(&mut text, name, value);
            }
            cx.debug(&text);
        }
        let plain = h.plain_size(url);
        self.opened(ch, cx, (id, ex, body), plain, now);
    }

    /// Stream `id` was submitted for `ex` (with `body`, the run's shared one), its fields
    /// `plain` bytes before HPACK: in the table, counted, its response timer armed; its slot.
    pub(super) fn opened(
        &mut self,
        ch: &Child,
        cx: &mut ThreadState<'_>,
        (id, mut ex, body): (StreamId, Exchange, Option<std::sync::Arc<[u8]>>),
        plain: u64,
        now: u64,
    ) -> usize {
        // Written when nghttp2 puts its HEADERS in the output (`Io`), not now: the server's
        // limit may hold it in nghttp2's queue.
        ex.written_us = NONE;
        self.no_room_since = NONE;
        self.opened_any = true;
        let slot = self.io.insert(id, ex, body);
        if cx.counts(now, now) {
            // Beside `header_bytes_sent`, counted as its HEADERS leave.
            cx.stats.http2.header_bytes_plain += plain;
        }
        // A stream belongs to its request's window, as the request's outcome does (one begun
        // in the warm-up and sent again after a GOAWAY is the warm-up's).
        if cx.counts(self.io.stream(slot).ex.file_start_us, now) {
            cx.stats.http2.streams += 1;
        }
        // Its wait runs from its file's start until its HEADERS leave (a request sent again
        // keeps its first start): the oldest in flight if nothing is older.
        let since = waiting_since(&self.io.stream(slot).ex);
        if since < self.oldest_us {
            self.oldest_us = since;
            cx.timers
                .arm(ch.slot, since + cx.sh.schedule.response_timeout_us);
        }
        slot
    }
}

/// Opens a stream for URL `url` of `h` from its header list laid out in an array of `N` on the
/// stack (at least its fields). `run_long`: `h` is the run's own lists (`RunShared::h2`), whose
/// bytes nghttp2 may point at instead of copying.
fn submit_from_stack<const N: usize>(
    session: &mut Session<Io>,
    (h, url, run_long): (&H2Requests, usize, bool),
    body: bool,
) -> Result<StreamId, http2::Error> {
    let mut list = [Header::new(b"", b""); N];
    let mut n = 0;
    for (slot, (name, value)) in list.iter_mut().zip(h.fields(url)) {
        *slot = if run_long {
            // SAFETY: the bytes are the run's header lists (`RunShared::h2`), built before the
            // threads start and never changed; every thread borrows them for its whole run, and
            // its sessions live in its Webchildren, dropped before `client::run_thread`
            // returns. So they outlive every session the field goes to. Names are lowercased
            // when built.
            unsafe { Header::no_copy(name, value) }
        } else {
            Header::new(name, value)
        };
        n += 1;
    }
    session.submit_request(&list[..n], body)
}
