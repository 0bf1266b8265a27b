//! `--connections-per-client N`: this connection as one member of a Webchild's group sharing
//! each page's files (`client/shared.rs`): it takes the page's next file when it is free, its
//! final response ends that file (the page with it when it was the last), and HTTP/1.0 waits
//! for the server's close before the next. An application workload's requests are built and
//! its responses judged by this connection's exchange (`h1/app.rs`), with the Webchild's
//! session lent to it.

use super::super::app::AppExchange;
use super::super::page::Child;
use super::super::{page_flow, shared, ThreadState, Wire, BACKOFF_US};
use super::{State, H1};
use crate::config::HttpMode;

impl H1 {
    /// The page's next file, if one is left; else idle, or the next page when this one is
    /// over.
    pub(super) fn next_shared(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Idle;
        self.page_failed = false;
        match shared::take_file(ch, cx) {
            Some(file) => {
                (self.ex.page, self.ex.file) = (ch.page, file);
                if self.app.is_none() {
                    self.app = AppExchange::of(cx.sh, ch.id);
                }
                self.start_file(ch, cx, now);
            }
            None => page_flow::next_for_member(self, ch, cx, now, None),
        }
    }

    /// The file's final response, a success or not, recorded: the page's share of it done,
    /// then (HTTP/1.0: after the server's close) the next file.
    pub(super) fn shared_response(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        ok: bool,
        now: u64,
    ) {
        shared::file_done(ch, cx, self.ex.file, ok, now);
        let http10 = cx.sh.config.http == HttpMode::Http10;
        if http10 && !self.resp_keep_alive && self.conn.is_some() {
            // As `await_close`, the page (if it ended) already recorded: `closed` goes on.
            self.state = State::Closing;
            return cx
                .timers
                .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        }
        if !self.resp_keep_alive || http10 {
            self.close();
        }
        self.next_shared(ch, cx, now);
    }

    /// The file failed (counted by its kind, the connection closed): the page is not a hit;
    /// this connection goes on with what is left, after a back-off when its connect failed.
    pub(super) fn shared_failed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        now: u64,
        backoff: bool,
    ) {
        shared::file_done(ch, cx, self.ex.file, false, now);
        self.state = State::Idle;
        match backoff {
            true => page_flow::next_for_member(self, ch, cx, now, Some(now + BACKOFF_US)),
            false => self.next_shared(ch, cx, now),
        }
    }
}
