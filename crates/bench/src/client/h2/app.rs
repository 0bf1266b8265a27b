//! An application workload over HTTP/2 (`client/app.rs` does the work, as for HTTP/1): the
//! page's data rows drawn as it starts; each file's request built per use as its stream opens
//! (the header list from the expanded path, the entry's fields, credentials and the cookie
//! jar's `Cookie`; the body sent as DATA from the stream's own buffer); each stream's response
//! head and, when a check or an extraction reads it, its body kept per stream (bounded as over
//! HTTP/1) and judged when the stream completes, before the page logic records it.
//!
//! A file after one that extracts values waits for that response (the values, or the cookies
//! it sets, may be what it needs): it is not opened in the same burst of streams. A request
//! that needs a value its extraction did not find is not sent (counted by why) and the page
//! ends there, not a hit, as over HTTP/1.
//!
//! Memory: each slot of the stream table has its buffers (head, body, request body, path),
//! which grow to the largest seen and are reused, and so does the Webchild's request; a kept
//! body past `KEPT_ROOM` is given back when its stream is done.

use super::super::app::{self, Kept};
use super::super::exchange::Exchange;
use super::super::page::Child;
use super::super::page_flow;
use super::super::redirects::{Hop, OWN};
use super::super::ThreadState;
use super::requests::STACK_FIELDS;
use super::streams::{debug_block, debug_field};
use super::H2;
use crate::Workload;
use http2::{Header, Session, StreamId};

impl H2 {
    /// The page `ch` picked starts (`app::page_starts`); false when the Webchild stops.
    pub(super) fn app_page(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let mut ex = Exchange::new(ch.page);
        if app::page_starts(&mut self.app, ch, cx, &mut ex, now) {
            return true;
        }
        self.busy = false;
        page_flow::finish(self, ch, cx, now);
        false
    }

    /// Whether the page's next file waits for values (`app::waits_for_values`).
    pub(super) fn waits_for_values(&self, w: &Workload) -> bool {
        let pending = self.io.flight.exchanges();
        app::waits_for_values(self.app.as_deref(), w, pending)
    }

    /// Opens a stream for `ex`, its request built now. One that needs a value never extracted,
    /// or one that would break a field, is not sent: counted by why, and the page opens no
    /// more files.
    pub(super) fn submit_app(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        ex: Exchange,
        now: u64,
    ) {
        let (Some(session), Some(app)) = (&mut self.session, &mut self.app) else {
            return;
        };
        let url = ex.url(cx.sh.workload);
        // A redirect followed: its target's path and method.
        let hop = (ex.learned != OWN).then(|| cx.redirects.target(ex.learned));
        if let Err(e) = app.build_h2(cx.sh, (ex.file, url, hop), &mut self.request) {
            ch.record_failure(cx, &ex, e.unsent_kind(), 0, now);
            self.page_ok = false;
            self.unsent = true;
            return;
        }
        if ex.learned == OWN && cx.sh.config.redirect > 0 {
            // A relative Location in its answer resolves against the path sent.
            let entry = (ch.slot, ex.file);
            cx.redirects
                .sent(cx.sh.workload, entry, self.request.path());
        }
        let keep_body = app.keeps_body(url);
        let req = &self.request;
        let res = match req.field_count() {
            0..=STACK_FIELDS => submit_copied::<STACK_FIELDS>(session, req),
            _ => {
                let list: Vec<Header<'_>> = req.fields().map(|(n, v)| Header::new(n, v)).collect();
                session.submit_request(&list, req.has_body)
            }
        };
        let Ok(id) = res else {
            // As for a plain request (`opening.rs`): sent again on a new connection.
            self.io.flight.retry.push(ex);
            self.draining = true;
            return;
        };
        if cx.sh.config.debug {
            let mut text = Vec::new();
            debug_block(&mut text, id, "request");
            for (name, value) in req.fields() {
                debug_field(&mut text, name, value);
            }
            if req.has_body {
                text.push(b'\n');
                text.extend_from_slice(&req.body);
                text.push(b'\n');
            }
            cx.debug(&text);
        }
        let (plain, has_body) = (req.plain_size(), req.has_body);
        let slot = self.opened(ch, cx, (id, ex, None), plain, now);
        let kept = &mut self.io.app[slot];
        kept.head.clear();
        kept.body.clear();
        kept.too_large = false;
        kept.keep_body = keep_body;
        kept.path.clear();
        kept.path.extend_from_slice(self.request.path());
        // The request's body goes to the slot, the slot's old buffer to the next request.
        std::mem::swap(&mut kept.request_body, &mut self.request.body);
        self.io.stream(slot).own_body = has_body;
    }

    /// A complete stream's response (its exchange `ex`, in `slot` of the table, just taken
    /// out): its cookies kept, its checks held, its values extracted; the verdict goes with the
    /// exchange to the page logic, which counts it once. A redirect that is followed has its
    /// cookies kept only: the checks are the final response's.
    pub(super) fn judge_app(
        &mut self,
        cx: &mut ThreadState<'_>,
        slot: usize,
        ex: &mut Exchange,
        now: u64,
    ) {
        let Some(app) = &mut self.app else { return };
        let k = &self.io.app[slot];
        let kept = Kept {
            head: &k.head,
            body: &k.body,
            too_large: k.too_large,
            path: &k.path,
        };
        let url = ex.url(cx.sh.workload);
        if let Hop::To(to) = ex.next {
            if ex.hops < cx.sh.config.redirect {
                let get = cx.redirects.target(to).1;
                app.keep_sent_body((ex.file, url), &k.request_body, get);
                return app.redirected(&kept);
            }
        }
        let counted = cx.counts(ex.file_start_us, now);
        let shown = cx.sh.workload.urls[url].as_str();
        ex.verdict = app.judge_kept((url, shown), ex.status, kept, &mut cx.stats, counted);
    }
}

/// Opens a stream for `req` from its header list laid out in an array of `N` on the stack
/// (at least its fields); nghttp2 copies the fields.
fn submit_copied<const N: usize>(
    session: &mut Session<super::streams::Io>,
    req: &super::super::app::H2Request,
) -> Result<StreamId, http2::Error> {
    let mut list = [Header::new(b"", b""); N];
    let mut n = 0;
    for (slot, (name, value)) in list.iter_mut().zip(req.fields()) {
        *slot = Header::new(name, value);
        n += 1;
    }
    session.submit_request(&list[..n], req.has_body)
}
