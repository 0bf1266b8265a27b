//! Pipelining (`--pipeline`): a page's requests are written back to back (prebuilt as one
//! run of bytes per page) and their responses read in order, the one in progress being `ex`;
//! with `--pipeline N` at most N are in flight, one more written as each response ends. What
//! a batch has on the wire also decides, at the end of the run, which of its requests count as
//! sent (`at_end`).

use super::super::exchange::Exchange;
use super::super::page::Child;
use super::super::redirects::OWN;
use super::super::ThreadState;
use super::app::APP;
use super::lanes::Lanes;
use super::{State, H1};
use crate::transport::Transport;

/// Whether the k-th request from the one in progress, `ex` (pipelining: of its batch, or of
/// the lanes) is a HEAD; `first`: the one in progress's. A function of the fields it reads, so
/// that the connection's other fields stay free to borrow.
pub(super) fn batch_is_head<'a>(
    first: bool,
    ex: &'a Exchange,
    lanes: &'a Option<Box<Lanes>>,
    cx: &'a ThreadState<'_>,
) -> impl Fn(u64) -> bool + 'a {
    move |k| match (k, lanes) {
        (0, _) => first,
        (k, Some(lanes)) => lanes.is_head(first, k, cx),
        (k, None) => cx
            .sh
            .requests
            .is_head(ex.page.url(cx.sh.workload, ex.file + k as usize)),
    }
}

impl H1 {
    /// The page's next file, whose request went with the page's batch: its response is on its
    /// way (read as the rest of the data that ended the previous one, or with the next read).
    pub(super) fn next_in_batch(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.ex.reset_response();
        self.ex.first_request();
        self.retried = false;
        self.state = State::ReadingHead;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
        // `--pipeline N`: one response out, one more request in (the batch is contiguous).
        if let Some(d) = cx.sh.config.streams {
            let last = self.ex.file + d as usize - 1;
            if last < self.ex.page.files(cx.sh.workload) {
                self.wend = match &self.app {
                    Some(app) => app.end_through(last),
                    None => cx.sh.requests.file_end(self.ex.page.index, last),
                };
                // The file in progress was written before; its times stay.
                let written = self.ex.written_us;
                if self.flush(ch, cx, now) {
                    self.ex.written_us = written;
                }
            }
        }
    }

    /// Of the request in progress on (pipelining: of its batch), how many the server can have
    /// received: every byte written and, over HTTPS, handed to the socket (TLS records still
    /// waiting hold the last request written, which then counts as not sent). At the end only.
    pub(super) fn sent_in_full(&self, cx: &ThreadState<'_>) -> u64 {
        if let Some(lanes) = &self.lanes {
            return self.lanes_sent(lanes);
        }
        let url = self.url(cx);
        let r = &cx.sh.requests;
        let whole = match (self.src, &self.app) {
            (OWN, _) => r.whole_before(self.ex.page.index, self.ex.file, url, self.wpos),
            (APP, Some(app)) => app.whole_from(self.ex.file, self.wpos),
            _ => u64::from(self.wpos >= self.wend),
        };
        let waiting = self.conn.as_ref().is_some_and(Transport::wants_write);
        whole.saturating_sub(u64::from(waiting))
    }

    /// At the end: the rest of the batch, behind the request in progress, of which `sent` were
    /// written whole and `processed` reached the server; nothing of their responses was read.
    pub(super) fn record_rest_of_batch(
        &self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        (sent, processed): (u64, u64),
        end: u64,
    ) {
        for k in 1..sent {
            let mut ex = self.ex;
            ex.file += k as usize;
            ex.reset_response();
            match k < processed {
                true => ch.record_unfinished(cx, &ex, 0, end),
                false => ch.record_unsent(cx, &ex, end),
            }
        }
    }
}
