//! An application workload over HTTP/3, as over HTTP/2 (`client/app.rs` does the work): the
//! page's data rows drawn as it starts; each file's request built per use as its stream opens
//! (the same header list as HTTP/2's, `client/app/h2_request.rs`: HTTP/3 carries the same
//! fields); each stream's response head and, when a check or an extraction reads it, its body
//! kept with the stream (`AppStream`, from a pool the connection keeps, so that buffers are
//! reused rather than made per request) and judged when the stream completes, before the page
//! logic records it.
//!
//! A file after one that extracts values waits for that response (the values, or the cookies
//! it sets, may be what it needs): it is not opened while that stream is in flight. A request
//! that needs a value its extraction did not find is not sent (counted by why) and the page
//! ends there, not a hit, after the back-off of a failed connect, as over HTTP/1 and HTTP/2.

use super::super::app::{self, AppStream, Kept};
use super::super::exchange::Exchange;
use super::super::page::Child;
use super::super::page_flow;
use super::super::redirects::{Hop, OWN};
use super::super::ThreadState;
use super::streams::Stream;
use super::H3;
use crate::Workload;

impl H3 {
    /// The page `ch` picked starts (`app::page_starts`); false when the Webchild stops.
    pub(super) fn app_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let mut ex = Exchange::new(ch.page);
        if app::page_starts(&mut self.app, ch, cx, &mut ex, now) {
            return true;
        }
        self.busy = false;
        self.fresh = false;
        page_flow::finish(self, ch, cx, now);
        false
    }

    /// Whether the page's next file waits for values (`app::waits_for_values`).
    pub(super) fn waits_for_values(&self, w: &Workload) -> bool {
        let pending = self.flight.exchanges();
        app::waits_for_values(self.app.as_deref(), w, pending)
    }

    /// Builds `ex`'s request into the connection's `request`, and takes a pool's `AppStream`
    /// for its stream (its path and body moved in). `None` when it needs a value never
    /// extracted, or one that would break a field: it is not sent, counted by why, and the
    /// page opens no more files.
    pub(super) fn build_app(
        &mut self,
        cx: &mut ThreadState<'_>,
        (ch, ex): (&Child, &Exchange),
        now: u64,
    ) -> Option<AppStream> {
        let app = self.app.as_mut()?;
        let url = ex.url(cx.sh.workload);
        // A redirect followed: its target's path and method.
        let hop = (ex.learned != OWN).then(|| cx.redirects.target(ex.learned));
        if let Err(e) = app.build_h2(cx.sh, (ex.file, url, hop), &mut self.request) {
            ch.record_failure(cx, ex, e.unsent_kind(), 0, now);
            self.page_ok = false;
            self.unsent = true;
            return None;
        }
        if ex.learned == OWN && cx.sh.config.redirect > 0 {
            // A relative Location in its answer resolves against the path sent.
            let entry = (ch.slot, ex.file);
            cx.redirects
                .sent(cx.sh.workload, entry, self.request.path());
        }
        let mut kept = self.spare.pop().unwrap_or_default();
        kept.head.clear();
        kept.body.clear();
        kept.too_large = false;
        kept.keep_body = app.keeps_body(url);
        kept.path.clear();
        kept.path.extend_from_slice(self.request.path());
        // The request's body goes with the stream, the stream's old buffer to the next one.
        std::mem::swap(&mut kept.request_body, &mut self.request.body);
        Some(kept)
    }

    /// A complete stream's response: its cookies kept, its checks held, its values extracted;
    /// the verdict goes with the exchange to the page logic, which counts it once. The
    /// stream's buffers go back to the pool.
    pub(super) fn judge_app(&mut self, cx: &mut ThreadState<'_>, s: &mut Stream, now: u64) {
        let (Some(app), Some(mut k)) = (&mut self.app, s.app.take()) else {
            return;
        };
        let kept = Kept {
            head: &k.head,
            body: &k.body,
            too_large: k.too_large,
            path: &k.path,
        };
        let url = s.ex.url(cx.sh.workload);
        if let Hop::To(to) = s.ex.next {
            if s.ex.hops < cx.sh.config.redirect {
                // A redirect that is followed has its cookies kept only: the checks are the
                // final response's.
                let get = cx.redirects.target(to).1;
                app.keep_sent_body((s.ex.file, url), &k.request_body, get);
                app.redirected(&kept);
                k.release();
                self.spare.push(k);
                return;
            }
        }
        let counted = cx.counts(s.ex.file_start_us, now);
        let shown = cx.sh.workload.urls[url].as_str();
        s.ex.verdict = app.judge_kept((url, shown), s.ex.status, kept, &mut cx.stats, counted);
        k.release();
        self.spare.push(k);
    }
}
