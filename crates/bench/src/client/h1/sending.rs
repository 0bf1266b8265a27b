//! Writing a request: its bytes were prebuilt at start (per URL, and per page for pipelining; a
//! learned redirect target's by `client/redirects.rs`), so a request is one `write` from that
//! buffer, the rest (if the socket took less) with its next writable event. Lanes
//! (`lanes.rs`) queue their requests in a buffer of their own, and an application workload's
//! are built per use into the Webchild's (`app.rs`), written the same way.

use super::super::connect;
use super::super::page::Child;
use super::super::redirects::OWN;
use super::super::ThreadState;
use super::{State, H1};
use super::{APP, LANES};
use crate::config::HttpMode;

impl H1 {
    /// Starts writing the current file's request (pipelining: the page's, from this file on,
    /// those after it queued behind it).
    pub(super) fn send(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.lanes.is_some() {
            return self.send_lanes(ch, cx, now);
        }
        if self.app.is_some() {
            // Built per use, a redirect's target too (it carries the session's cookies).
            return self.send_app(ch, cx, now);
        }
        let r = &cx.sh.requests;
        let pipelined = cx.sh.config.http == HttpMode::Pipeline;
        let depth = cx.sh.config.streams.filter(|_| pipelined);
        let range = match self.ex.learned {
            OWN => {
                let range = r.for_file(self.ex.page.index, self.ex.file, self.url(cx), depth);
                cx.debug(&r.bytes()[range.clone()]);
                range
            }
            learned => {
                cx.debug(cx.redirects.request(learned));
                0..cx.redirects.request(learned).len()
            }
        };
        if pipelined {
            self.queue_own_batch(cx, depth);
        }
        self.src = self.ex.learned;
        (self.wpos, self.wend) = (range.start, range.end);
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        self.flush(ch, cx, now);
    }

    /// Writes what is pending; false if the write failed (and the failure was handled).
    pub(super) fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let Some(conn) = &mut self.conn else {
            return false;
        };
        let bytes = match (self.src, &self.lanes, &self.app) {
            (OWN, _, _) => cx.sh.requests.bytes(),
            (LANES, Some(lanes), _) => &lanes.out,
            (APP, _, Some(app)) => &app.out,
            (learned, _, _) => cx.redirects.request(learned),
        };
        let from = self.wpos;
        let res = connect::write_out(conn, &bytes[..self.wend], &mut self.wpos);
        if let (LANES, Some(lanes)) = (self.src, &mut self.lanes) {
            lanes.written += (self.wpos - from) as u64;
        }
        match res {
            Ok(true) => {}
            Ok(false) => return true, // the rest with the socket's next writable event
            Err(e) => {
                self.io_failed(ch, cx, e, now);
                return false;
            }
        }
        match (self.src, &mut self.lanes) {
            // Every lane's write time was taken as it was queued; the queue is written.
            (LANES, Some(lanes)) => {
                lanes.out.clear();
                (self.wpos, self.wend) = (0, 0);
            }
            _ => self.ex.written_us = now,
        }
        true
    }
}
