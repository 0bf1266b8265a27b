//! A Webchild's page state, apart from the wire protocol of its connection: which page next (by
//! weight, from its own random stream), whether it may begin (open-loop schedule, quota), what a
//! file's exchange records (connect, handshake, response, error, the log's line), and what is
//! accounted for when the run ends. The connection types (`h1.rs`, `h2.rs`, `h3.rs`) call these
//! as their exchanges progress, and `page_flow.rs` when a page ends; nothing here reads or
//! writes a socket.

use super::{ThreadState, NONE};
use crate::log::LogRecord;
use crate::stats::{ErrorKind, ResponseSample, TlsAgreed};
use crate::Workload;
use std::cell::Cell;

use super::child_rng;
use super::errors::status_error;
use super::exchange::{Answer, Exchange, PageRef, Phase, Verdict};
use super::redirects::{Hop, OWN};
use super::setup::RunShared;

/// A Webchild's page state: everything but its connection.
pub(super) struct Child {
    /// Index in this thread: the mio token and the timer slot.
    pub slot: usize,
    /// Global index: the log's `child` column and the random stream's key.
    pub id: usize,
    pub phase: Phase,
    /// Pages of the measured window, and a separate stream for warm-up, so the measured
    /// sequence is the same whatever the warm-up's length.
    rng: fastrand::Rng,
    warmup_rng: fastrand::Rng,
    pub pages_left: u64,
    pub next_intended_us: f64,
    /// Open loop with `-n`: a page it starts after this is sent late (the schedule's
    /// `late_after_us`, moved on by how late its first page started: its own start-up, a
    /// thread's spawn or a connection's set-up, is not the rate's); `NONE` until its first
    /// page, which never counts, and in any other run.
    late_after_us: u64,
    /// Whether it has picked a page yet.
    picked: bool,
    /// The page picked last: the one new exchanges belong to.
    pub page: PageRef,
    pub done_us: u64,
    /// Open loop, the run's end: the page whose wait last entered the corrected figures as
    /// unfinished, so that a page with several files in flight then (HTTP/2, HTTP/3, HTTP/1.1
    /// pipelining: one page at a time, or lanes of one file a page) counts once, not once a
    /// file. Set only at the end (`&self` there: the wires hold the Webchild shared).
    ended_page: Cell<Option<PageRef>>,
}

impl Child {
    pub(super) fn new(slot: usize, id: usize, sh: &RunShared<'_>) -> Self {
        let offset = sh.schedule.interval_us.map_or(0.0, |iv| {
            // Spread the children's schedules over one interval, so pages do not come in bursts.
            iv * id as f64 / sh.schedule.concurrency as f64
        });
        Child {
            slot,
            id,
            phase: Phase::Wait,
            rng: child_rng(sh.config.seed, id, 0),
            warmup_rng: child_rng(sh.config.seed, id, 1),
            pages_left: sh.schedule.quota(id),
            next_intended_us: offset,
            late_after_us: NONE,
            picked: false,
            page: PageRef::NONE,
            done_us: NONE,
            ended_page: Cell::new(None),
        }
    }

    /// The number of files of the page picked last.
    #[inline]
    pub(super) fn files(&self, w: &Workload) -> usize {
        self.page.files(w)
    }

    /// Whether a request may begin at `now`: not at or after the end of the run, when the
    /// Webchild stops between pages instead (nothing more is begun; `at_end` finds it idle).
    /// Every wire asks before it begins a file's request.
    pub(super) fn may_begin(&mut self, cx: &mut ThreadState<'_>, now: u64) -> bool {
        if !cx.ended(now) {
            return true;
        }
        self.phase = Phase::Wait;
        cx.timers.disarm(self.slot);
        false
    }

    /// A connection for `ex` begins at `now`: the thread's first is how late its load started
    /// (the start skew of a host): after the start in the closed loop, after the page's
    /// intended time in the open loop.
    pub(super) fn connect_began(&self, cx: &mut ThreadState<'_>, now: u64) {
        if cx.first_connect_late_us == NONE {
            let due = cx
                .sh
                .schedule
                .interval_us
                .map_or(0, |_| self.page.intended_us);
            cx.first_connect_late_us = now.saturating_sub(due);
        }
    }

    /// Picks the next page and records its send lag (open loop); false when the quota is done.
    pub(super) fn pick_page(&mut self, cx: &mut ThreadState<'_>, now: u64) -> bool {
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
                return false;
            }
            if schedule.pages.is_some() {
                self.pages_left -= 1;
            }
            if schedule.interval_us.is_some() && intended < schedule.end_us {
                cx.stats
                    .record_send_lag(now - intended, now > self.late_after_us);
            }
        }
        if !self.picked {
            self.picked = true;
            if let Some(t) = schedule.late_after_us {
                self.late_after_us = t.saturating_add(now - intended);
            }
        }
        let rng = if measured {
            &mut self.rng
        } else {
            &mut self.warmup_rng
        };
        self.page = PageRef {
            index: cx.sh.picker.pick(rng),
            intended_us: intended,
            start_us: now,
        };
        self.phase = Phase::Busy;
        true
    }

    /// A connection's TCP connect finished after `ex.connect_us`.
    pub(super) fn record_connect(&self, cx: &mut ThreadState<'_>, ex: &Exchange, now: u64) {
        if cx.counts(ex.file_start_us, now) {
            let url = ex.url(cx.sh.workload);
            cx.stats.record_connect(ex.page.index, url, ex.connect_us);
        }
    }

    /// A connection's TLS handshake finished after `took` µs.
    pub(super) fn record_handshake(
        &self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        now: u64,
        took: u64,
        (session, resumed): (TlsAgreed, bool),
    ) {
        if cx.counts(ex.file_start_us, now) {
            cx.stats.record_tls_handshake(took, resumed, session);
        }
    }

    /// A complete response to a request that may have been redirected (`--redirect N`): a
    /// same-origin redirect with hops to spare is followed (the entry goes on with the learned
    /// request: counted as a request, not yet as the entry's response); one past N is the
    /// error `too_many_redirects`; one not followed stands as a response, counted by why.
    pub(super) fn answered(&self, cx: &mut ThreadState<'_>, ex: &Exchange, now: u64) -> Answer {
        match ex.next {
            Hop::None => Answer::Final(self.record_response(cx, ex, now)),
            Hop::To(to) if ex.hops < cx.sh.config.redirect => {
                self.record_hop(cx, ex, now);
                Answer::Follow(to)
            }
            Hop::To(_) => {
                let kind = Some(ErrorKind::TooManyRedirects);
                Answer::Final(self.record_final(cx, ex, now, kind))
            }
            Hop::Unfollowed(why) => {
                if cx.counts(ex.file_start_us, now) {
                    cx.stats.redirects.add_unfollowed(why);
                }
                Answer::Final(self.record_response(cx, ex, now))
            }
        }
    }

    /// A redirect that is followed: a request the server answered (in `requests`, its status
    /// in the statuses, its bytes in the data moved), whose time is part of its entry's.
    fn record_hop(&self, cx: &mut ThreadState<'_>, ex: &Exchange, now: u64) {
        cx.live.requests += 1;
        if cx.counts(ex.file_start_us, now) {
            cx.stats.record_redirect(ex.header_bytes, ex.body_bytes);
            cx.stats.statuses.add(ex.status);
            cx.stats.bytes_chunk_framing += ex.framing_bytes;
            cx.second(now).requests += 1;
            self.log(cx, ex, Some(now - ex.file_start_us), "");
        }
    }

    /// A complete response: counted as a request whatever its status; whether it is a success.
    /// An error status (4xx, 5xx, or one not in `--expect-status`) ends the page as an error
    /// (it is not a hit).
    pub(super) fn record_response(
        &self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        now: u64,
    ) -> bool {
        let kind = match ex.verdict {
            Verdict::ByStatus => status_error(ex.status, cx.sh.config.expect_status.as_ref()),
            Verdict::Passed => None,
            Verdict::Failed(kind) => Some(kind),
        };
        self.record_final(cx, ex, now, kind)
    }

    /// The final response of a page entry, an error of `kind` or a success. Its response time
    /// runs from the entry's first request (redirects followed included).
    fn record_final(
        &self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        now: u64,
        kind: Option<ErrorKind>,
    ) -> bool {
        let schedule = &cx.sh.schedule;
        let url = ex.url(cx.sh.workload);
        let ok = kind.is_none();
        let open_first = schedule.interval_us.is_some() && ex.file == 0;
        cx.live.requests += 1;
        cx.response_us += now - ex.file_start_us;
        if let Some(kind) = kind {
            cx.live.fail(kind);
        }
        if cx.counts(ex.file_start_us, now) {
            // Open loop, first file: both count from when the page was due (no coordinated
            // omission); otherwise from the file's start and from the request's last byte.
            let (start, ttfb_from) = if open_first {
                (ex.page.intended_us, ex.page.intended_us)
            } else {
                (ex.file_start_us, ex.written_us)
            };
            let r = ResponseSample {
                header_bytes: ex.header_bytes,
                body_bytes: ex.body_bytes,
                ttfb_us: ex.first_byte_us.saturating_sub(ttfb_from),
                response_us: now - start,
                response_uncorrected_us: now - ex.file_start_us,
                transfer_us: now.saturating_sub(ex.written_us),
            };
            cx.stats.record_response(ex.page.index, url, &r);
            cx.stats.statuses.add(ex.status);
            cx.stats.bytes_chunk_framing += ex.framing_bytes;
            let second = cx.second(now);
            second.requests += 1;
            second.response.record_us(r.response_us);
            if let Some(kind) = kind {
                cx.record_error(url, kind, now);
            }
            self.log(
                cx,
                ex,
                Some(r.response_us),
                kind.map_or("", ErrorKind::name),
            );
        }
        ok
    }

    /// A failed exchange, counted by kind with the `bytes` it had read. A `unique` data set
    /// run out during the warm-up is counted too (in the run's errors, not in a second of the
    /// window, which may never come): the Webchild stops for the whole run, which the report
    /// must say.
    pub(super) fn record_failure(
        &self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        kind: ErrorKind,
        bytes: u64,
        now: u64,
    ) {
        cx.live.fail(kind);
        if kind == ErrorKind::DataExhausted && now < cx.sh.schedule.measure_us {
            cx.stats.record_error(ex.url(cx.sh.workload), kind);
            return self.log(cx, ex, None, kind.name());
        }
        if cx.counts(ex.file_start_us, now) {
            cx.record_error(ex.url(cx.sh.workload), kind, now);
            cx.stats.bytes_failed += bytes;
            self.log(cx, ex, None, kind.name());
        }
    }

    /// The run ended at `end` with `ex` sent in full and not answered: unfinished if it is of
    /// the window, with the `bytes` of its response read so far (in the open loop it enters the
    /// corrected figures with its wait so far).
    pub(super) fn record_unfinished(
        &self,
        cx: &mut ThreadState<'_>,
        ex: &Exchange,
        bytes: u64,
        end: u64,
    ) {
        if let Some((wait, page_wait)) = self.waits_at_end(cx, ex, end) {
            cx.stats.record_unfinished(wait, page_wait, bytes);
            self.log(cx, ex, None, "unfinished");
        }
    }

    /// The run ended at `end` with `ex` begun and not sent (connecting, in the TLS handshake,
    /// partly written): the server has none of it; apart from the unfinished.
    pub(super) fn record_unsent(&self, cx: &mut ThreadState<'_>, ex: &Exchange, end: u64) {
        if let Some((wait, page_wait)) = self.waits_at_end(cx, ex, end) {
            cx.stats.record_unsent(wait, page_wait);
            self.log(cx, ex, None, "unsent");
        }
    }

    /// What `ex`, in flight at `end`, had waited (from its start, or in the open loop a page's
    /// first file from its intended start) and, open loop, Some with its page's wait if no
    /// other file of the page was counted before it; `None` when it began before the window.
    fn waits_at_end(
        &self,
        cx: &ThreadState<'_>,
        ex: &Exchange,
        end: u64,
    ) -> Option<(u64, Option<Option<u64>>)> {
        let schedule = &cx.sh.schedule;
        if ex.file_start_us < schedule.measure_us {
            return None;
        }
        let open = schedule.interval_us.is_some();
        let start = if open && ex.file == 0 {
            ex.page.intended_us
        } else {
            ex.file_start_us
        };
        // A page's wait counts once, at its first file found in flight: a Webchild has one
        // page in flight at a time, or (lanes) pages of one file each, so its files at the
        // end come one after another (a page left is never met again: only the last one is
        // remembered). A page of several files in flight is thus the Webchild's page.
        debug_assert!(
            !open || ex.page == self.page || cx.sh.workload.pages[ex.page.index].files.len() == 1,
            "a page of several files in flight beside the Webchild's page"
        );
        let first_of_page = self.ended_page.get() != Some(ex.page);
        if open {
            self.ended_page.set(Some(ex.page));
        }
        // Only a page due in the window (as `record_page` and `pages_scheduled` count it): one
        // due in the warm-up whose file started after the window opened has its file's figure,
        // not a page's.
        let page_wait = (first_of_page && ex.page.intended_us >= schedule.measure_us)
            .then(|| end.saturating_sub(ex.page.intended_us));
        Some((end.saturating_sub(start), open.then_some(page_wait)))
    }

    /// `page` ended at `now` (its last byte): counted as a hit or not.
    pub(super) fn record_page(cx: &mut ThreadState<'_>, page: PageRef, hit: bool, now: u64) {
        if hit {
            // For the live line's estimate of the Webchildren a rate needs.
            cx.live.pages += 1;
            cx.live.page_us += now - page.start_us;
        }
        if cx.counts(page.intended_us, now) {
            cx.live.window_pages += 1;
            cx.stats
                .record_page(page.index, hit, now - page.intended_us, now - page.start_us);
        }
    }

    /// The open loop at the end of the run: every page due in the window that this Webchild
    /// never started is a page not sent.
    pub(super) fn record_not_sent(&self, cx: &mut ThreadState<'_>, end: u64) {
        let schedule = &cx.sh.schedule;
        let Some(iv) = schedule.interval_us else {
            return;
        };
        if self.phase == Phase::Done {
            return;
        }
        // Its slots from `next_intended_us` on that were due in the window, up to its quota.
        let slot = |t: f64| ((t - self.next_intended_us) / iv).ceil().max(0.0);
        let (from, to) = (slot(schedule.measure_us as f64), slot(end as f64));
        let n = ((to - from).max(0.0) as u64).min(self.pages_left);
        let first = self.next_intended_us + from * iv;
        cx.stats.record_not_sent(end, first, iv, n);
    }

    /// The log's line for `ex`; `error` is empty for a success.
    fn log(&self, cx: &mut ThreadState<'_>, ex: &Exchange, response_us: Option<u64>, error: &str) {
        let Some(log) = &mut cx.log else { return };
        let some = |t: u64| (t != NONE).then_some(t);
        let base = cx.sh.schedule.base_unix_us;
        // The URL this request asked for: the entry's own, or a redirect's target.
        let url = match ex.learned {
            OWN => &cx.sh.workload.urls[ex.url(cx.sh.workload)],
            learned => cx.redirects.path(learned),
        };
        log.push(&LogRecord {
            thread: cx.thread,
            child: self.id,
            page: &cx.sh.workload.pages[ex.page.index].name,
            url,
            intended_unix_us: cx
                .sh
                .schedule
                .interval_us
                .map(|_| base + ex.page.intended_us),
            start_unix_us: base + ex.file_start_us,
            connect_us: some(ex.connect_us),
            ttfb_us: some(ex.first_byte_us).map(|t| t.saturating_sub(ex.written_us)),
            response_us,
            status: (ex.status != 0).then_some(ex.status),
            header_bytes: ex.header_bytes,
            body_bytes: ex.body_bytes,
            error,
        });
    }
}
