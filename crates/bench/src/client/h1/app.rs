//! An application workload on an HTTP/1 connection (`client/app.rs` does the work): the page's
//! data rows drawn as it starts, each request built per use and written from the Webchild's
//! buffer, each complete response judged before the page logic records it.

use super::super::app::AppExchange;
use super::super::page::{self, Child};
use super::super::ThreadState;
use super::lanes::LANES;
use super::{State, H1};
use crate::stats::ErrorKind;

/// Whose bytes `wpos..wend` are: the Webchild's request built per use.
pub(super) const APP: u32 = LANES - 1;

impl H1 {
    /// The page `ch` picked starts: its data rows drawn. False when a `unique` data set has
    /// given every row: the Webchild stops (the page is `data_exhausted`, not fetched).
    pub(super) fn app_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        if self.app.is_none() {
            self.app = AppExchange::of(cx.sh, ch.id);
        }
        let Some(app) = &mut self.app else {
            return true;
        };
        if app.start_page(ch.page) {
            return true;
        }
        self.ex.file_start_us = now;
        ch.record_failure(cx, &self.ex, ErrorKind::DataExhausted, 0, now);
        self.state = State::Idle;
        page::finish(self, ch, cx, now);
        false
    }

    /// Builds and starts writing the current file's request. One that needs a value never
    /// extracted is not sent: counted, and the page ends there (not a hit). The next page
    /// waits the back-off of a failed connect: nothing was read, so starting it at once would
    /// recurse into this page's start (and spin) while every page fails the same way.
    pub(super) fn send_app(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let url = self.url(ch, cx);
        let Some(app) = &mut self.app else { return };
        if app.build(cx.sh, url).is_err() {
            if cx.counts(self.ex.file_start_us, now) {
                cx.stats.missing_value_unsent += 1;
            }
            return self.end_page(ch, cx, false, now, true);
        }
        cx.debug(&app.out);
        self.src = APP;
        (self.wpos, self.wend) = (0, app.out.len());
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.flush(ch, cx, now);
    }

    /// The complete response: its cookies kept, its checks and extractions held; the verdict
    /// goes with the exchange to the page logic, which counts it once.
    pub(super) fn judge(&mut self, ch: &Child, cx: &mut ThreadState<'_>, now: u64) {
        let url = self.url(ch, cx);
        let counted = cx.counts(self.ex.file_start_us, now);
        let sh = cx.sh;
        if let Some(app) = &mut self.app {
            let shown = sh.workload.urls[url].as_str();
            self.ex.verdict = app.judge((url, shown), self.ex.status, &mut cx.stats, counted);
        }
    }
}
