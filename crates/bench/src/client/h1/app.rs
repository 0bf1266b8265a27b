//! An application workload on an HTTP/1 connection (`client/app.rs` does the work): the page's
//! data rows drawn as it starts, each request built per use and written from the Webchild's
//! buffer, each complete response judged before the page logic records it. Pipelining, a batch
//! holds the page's files up to the next that extracts values: the files after it wait for
//! its response (`pipelining.rs` reads a batch as it reads a static page's).

use super::super::app;
use super::super::page::Child;
use super::super::page_flow;
use super::super::redirects::{Hop, OWN};
use super::super::{shared, ThreadState};
use super::pipelining::{queue_batch, queue_mut};
use super::{State, APP, H1};
use crate::config::HttpMode;

impl H1 {
    /// The page `ch` picked starts (`app::page_starts`); false when the Webchild stops.
    pub(super) fn app_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        if app::page_starts(&mut self.app, ch, cx, &mut self.ex, now) {
            return true;
        }
        self.state = State::Idle;
        page_flow::finish(self, ch, cx, now);
        false
    }

    /// Builds and starts writing the current file's request. One that needs a value never
    /// extracted, or a value that would split its head, is not sent: counted by why, and the page ends there (not a hit). The next page
    /// waits the back-off of a failed connect: nothing was read, so starting it at once would
    /// recurse into this page's start (and spin) while every page fails the same way.
    pub(super) fn send_app(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let sh = cx.sh;
        let files = &sh.workload.pages[self.ex.page.index].files;
        let pipelined = cx.sh.config.http == HttpMode::Pipeline;
        let (file, url, learned) = (self.ex.file, self.url(cx), self.ex.learned);
        let Some(app) = &mut self.app else { return };
        // With several connections, the Webchild's session (`client/shared.rs`).
        let built = shared::in_session(ch, cx, app, |app, cx| match learned {
            OWN => app.build_batch(cx.sh, files, file, pipelined),
            // A redirect followed: its target's request, with the session's cookies.
            learned => app.build_hop(cx.sh, (file, url), cx.redirects.target(learned)),
        });
        let n = match built {
            Ok(n) => n,
            Err(e) => {
                ch.record_failure(cx, &self.ex, e.unsent_kind(), 0, now);
                return self.end_page(ch, cx, false, now, true);
            }
        };
        if learned == OWN && cx.sh.config.redirect > 0 {
            // A relative Location in its answer resolves against the path sent.
            let path = app.sent_path(file).unwrap_or(b"/");
            cx.redirects.sent(cx.sh.workload, (ch.slot, file), path);
        }
        cx.debug(&app.out);
        self.src = APP;
        // `--pipeline N`: N of the batch at first, one more as each response ends.
        let depth = cx.sh.config.streams.map_or(n, |d| (d as usize).min(n));
        let through = self.ex.file + depth.max(1);
        (self.wpos, self.wend) = (0, app.end_through(through - 1));
        if pipelined {
            // Those after this one, behind it (a redirect's request is a batch of one).
            let behind = self.ex.file + 1..through;
            queue_batch(queue_mut(&mut self.behind), behind, |f| app.end_through(f));
        }
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.flush(ch, cx, now);
    }

    /// The complete response: its cookies kept, its checks and extractions held (a redirect
    /// that is followed: its cookies only, the checks are the final response's); the verdict
    /// goes with the exchange to the page logic, which counts it once.
    pub(super) fn judge(&mut self, ch: &Child, cx: &mut ThreadState<'_>, now: u64) {
        let (file, url) = (self.ex.file, self.url(cx));
        let counted = cx.counts(self.ex.file_start_us, now);
        let sh = cx.sh;
        // A redirect followed: whether it becomes a GET.
        let follows = match self.ex.next {
            Hop::To(to) if self.ex.hops < sh.config.redirect => Some(cx.redirects.target(to).1),
            _ => None,
        };
        if let Some(app) = &mut self.app {
            let shown = sh.workload.urls[url].as_str();
            let answer = (file, url, shown);
            let response = (self.ex.status, follows);
            self.ex.verdict = shared::in_session(ch, cx, app, |app, cx| {
                app.judge(answer, response, &mut cx.stats, counted)
            });
        }
    }

    /// Pipelining: whether file `file` of the page went with the batch written (a workload
    /// without application features writes the whole page).
    pub(super) fn in_batch(&self, file: usize) -> bool {
        self.app.as_ref().is_none_or(|app| app.holds(file))
    }
}
