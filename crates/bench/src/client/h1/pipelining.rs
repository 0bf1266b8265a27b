//! Pipelining (`--pipeline`): requests written back to back and their responses read in order,
//! the one being read being `ex` and those behind it waiting in the in-flight table seen as a
//! queue (`H1::behind`, `client/in_flight/queue.rs`), each with where its request ends in the
//! bytes written (so whether it left whole). A page of several files is a batch: its requests
//! from the file in progress on (prebuilt as one run of bytes per page) written at once, with
//! `--pipeline N` at most N, one more written and queued as each response ends; `--pipeline N`
//! with one-file pages queues pages there instead (`lanes.rs`). At the end of the run the queue
//! says which requests the server can have received (`sent_in_full`), and one walk of it
//! records those behind the one being read (`record_behind_at_end`).

use super::super::exchange::{Exchange, PageRef};
use super::super::in_flight::{InFlightQueue, InFlightSlot};
use super::super::page::Child;
use super::super::redirects::OWN;
use super::super::{RunShared, ThreadState};
use super::APP;
use super::{State, H1};
use crate::config::HttpMode;
use crate::transport::Transport;
use std::ops::Range;

/// A request in flight behind the one being read: a batch's file, or a lane's page.
#[derive(Debug, Clone, Copy)]
pub(super) struct Behind {
    /// A lane's page: its exchange, whole. A batch's file: only `ex.file` is written (its
    /// page and times are those of the file being read, `H1::ex`): a batch's file is queued
    /// by two stores, and its exchange built only where it is recorded (`batch_file`).
    pub(super) ex: Exchange,
    /// Where its request ends in the bytes written on the connection (a batch: an offset in
    /// the buffer `H1::wpos` indexes; lanes: a count of the bytes queued on the connection).
    pub(super) end: u64,
}

impl InFlightSlot for Behind {
    const FREE: Behind = Behind {
        ex: Exchange::new(PageRef::NONE),
        end: 0,
    };
    // Sequence numbers on the connection.
    const KEY_SHIFT: u32 = 0;

    fn exchange(&self) -> &Exchange {
        &self.ex
    }

    /// A copy: the slot keeps it until the next one is put there whole.
    #[inline]
    fn vacate(&mut self) -> Behind {
        *self
    }
}

/// A connection's requests behind the one being read, out of line: made for `--pipeline`
/// runs only, so that a keep-alive connection pays a pointer for it.
pub(super) type BehindQueue = Option<Box<InFlightQueue<Behind>>>;

/// The queue of a connection, made once: room for the most requests in flight on it (lanes:
/// N; a batch: N, or a page's files, whichever is fewer). Without pipelining, none.
pub(super) fn queue_of_run(sh: &RunShared<'_>) -> BehindQueue {
    let config = sh.config;
    let longest = sh.workload.pages.iter().map(|p| p.files.len()).max();
    let most = match (config.http, config.streams, longest) {
        (HttpMode::Pipeline, Some(depth), Some(1)) => depth as usize,
        (HttpMode::Pipeline, Some(depth), Some(files)) => files.min(depth as usize),
        (HttpMode::Pipeline, None, Some(files)) => files,
        _ => return None,
    };
    Some(Box::new(InFlightQueue::new(most)))
}

/// The queue of a `--pipeline` run's connection (batches and lanes are made only there).
#[inline]
pub(super) fn queue_mut(behind: &mut BehindQueue) -> &mut InFlightQueue<Behind> {
    (behind.as_deref_mut()).expect("a --pipeline run's connection has its queue")
}

/// Whether the k-th request from the one being read is a HEAD; `first`: the one being read's.
/// `batch`: a batch's page (its files queued by their index alone), or `None` for lanes (each
/// queued with its page). A function of the fields it reads, so that the connection's other
/// fields stay free to borrow.
pub(super) fn batch_is_head<'a>(
    first: bool,
    behind: Option<&'a InFlightQueue<Behind>>,
    batch: Option<PageRef>,
    cx: &'a ThreadState<'_>,
) -> impl Fn(u64) -> bool + 'a {
    move |k| match k {
        0 => first,
        k => (behind.and_then(|q| q.get(k as usize - 1))).is_some_and(|b| {
            let page = batch.as_ref().unwrap_or(&b.ex.page);
            cx.sh.requests.is_head(page.url(cx.sh.workload, b.ex.file))
        }),
    }
}

/// A batch's file `file` as recorded: the exchange of the file being read (`ex`: its page,
/// its file's start, its batch's write time) for that file, a first request with nothing of
/// its response read.
fn batch_file(ex: &Exchange, file: usize) -> Exchange {
    let mut ex = Exchange { file, ..*ex };
    ex.reset_response();
    ex.first_request();
    ex
}

/// Queues the files `files` of the page being read after the one being read (those of a
/// batch before, gone with their connection or read, forgotten), each ending where `end`
/// says: its index and its end written in its slot, nothing else.
pub(super) fn queue_batch(
    behind: &mut InFlightQueue<Behind>,
    files: Range<usize>,
    end: impl Fn(usize) -> usize,
) {
    behind.clear();
    for file in files {
        let end = end(file) as u64;
        behind.push_back_with(|b| (b.ex.file, b.end) = (file, end));
    }
}

impl H1 {
    /// The page of a batch's files queued behind the one being read (its own, `ex`'s), or
    /// `None` with lanes (each queued with its page).
    pub(super) fn batch_page(&self) -> Option<PageRef> {
        self.lanes.is_none().then_some(self.ex.page)
    }

    /// `send`'s batch (`--pipeline`, a page's prebuilt requests): the page's files after the
    /// one being written, `depth` of them at most with it, queued behind it; a redirect's
    /// request goes alone, once its batch is read. Apart from `send`, so that keep-alive's
    /// path through it carries none of this.
    #[inline(never)]
    pub(super) fn queue_own_batch(&mut self, cx: &ThreadState<'_>, depth: Option<u32>) {
        let (page, file) = (self.ex.page.index, self.ex.file);
        let files = self.ex.page.files(cx.sh.workload);
        let through = depth.map_or(files, |d| (file + d as usize).min(files));
        let behind = match self.ex.learned {
            OWN => file + 1..through,
            _ => 0..0,
        };
        let r = &cx.sh.requests;
        queue_batch(queue_mut(&mut self.behind), behind, |f| r.file_end(page, f));
    }

    /// The page's next file, whose request went with the page's batch: its response is on its
    /// way (read as the rest of the data that ended the previous one, or with the next read).
    /// It leaves the queue (`ex` is it now, its file's start and its batch's write time kept).
    pub(super) fn next_in_batch(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        debug_assert!(
            (self.behind.as_ref().and_then(|q| q.get(0))).is_none_or(|b| b.ex.file == self.ex.file),
            "the file read next is the oldest queued"
        );
        queue_mut(&mut self.behind).drop_front();
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
                let page = self.ex.page.index;
                self.wend = match &self.app {
                    Some(app) => app.end_through(last),
                    None => cx.sh.requests.file_end(page, last),
                };
                // Behind the one being read (`--pipeline 1`: it is the one written now), and
                // in the batch built (an application's may end before the page does).
                let queued = last > self.ex.file && self.in_batch(last);
                let wend = self.wend;
                if queued {
                    let end = wend as u64;
                    queue_mut(&mut self.behind)
                        .push_back_with(|b| (b.ex.file, b.end) = (last, end));
                }
                // The file in progress was written before; its times stay.
                let written = self.ex.written_us;
                if self.flush(ch, cx, now) {
                    self.ex.written_us = written;
                }
            }
        }
    }

    /// Of the requests in flight (the one being read, then those behind it), how many the
    /// server can have received: every byte written and, over HTTPS, handed to the socket (TLS
    /// records still waiting hold the last request written, which then counts as not sent).
    /// At the end only.
    pub(super) fn sent_in_full(&self, cx: &ThreadState<'_>) -> u64 {
        let (first_end, written) = match &self.lanes {
            Some(lanes) => (lanes.head_end, lanes.written),
            None => (self.request_end(cx), self.wpos as u64),
        };
        let behind = self.behind.iter().flat_map(|q| q.iter());
        let ends = std::iter::once(first_end).chain(behind.map(|b| b.end));
        let whole = ends.filter(|&end| end <= written).count() as u64;
        let waiting = self.conn.as_ref().is_some_and(Transport::wants_write);
        whole.saturating_sub(u64::from(waiting))
    }

    /// Where the request being read ends in the bytes `wpos` indexes (not lanes).
    fn request_end(&self, cx: &ThreadState<'_>) -> u64 {
        let end = match (self.src, &self.app) {
            (OWN, _) => {
                let (page, file) = (self.ex.page.index, self.ex.file);
                cx.sh.requests.request_end(page, file, self.url(cx))
            }
            (APP, Some(app)) => app.end_through(self.ex.file),
            // A learned redirect target's request, alone.
            _ => self.wend,
        };
        end as u64
    }

    /// At the end: the requests behind the one being read, of `sent` in flight written whole
    /// (counting it) and `processed` of them reached the server; nothing of their responses was
    /// read. Those that reached it are unfinished, the others not sent. A lane is a page
    /// begun, not sent when its request did not leave whole; a batch's file whose request did
    /// not leave whole is left out, as its page's files not written yet are.
    pub(super) fn record_behind_at_end(
        &self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        (sent, processed): (u64, u64),
        end: u64,
    ) {
        // The `k`-th behind is the (k + 1)-th in flight.
        let reached = |k: usize| (k as u64 + 1) < processed;
        let Some(behind) = self.behind.as_deref() else {
            return;
        };
        if self.lanes.is_some() {
            return behind.record_at_end(ch, cx, end, |k, _| reached(k).then_some(0));
        }
        let walked = sent.saturating_sub(1) as usize;
        for (k, b) in behind.iter().take(walked).enumerate() {
            let ex = batch_file(&self.ex, b.ex.file);
            match reached(k) {
                true => ch.record_unfinished(cx, &ex, 0, end),
                false => ch.record_unsent(cx, &ex, end),
            }
        }
    }
}

impl H1 {
    /// A batch's connection closed by the server after a complete response (it said
    /// `Connection: close`, or closed after it; `head`: the one being read had nothing of its
    /// response yet, so it goes again too): it never processed the requests written behind
    /// that response (RFC 9112 section 9.3.2). They are counted re-sent (the page begun in the
    /// window) and go again with the batch on the next connection; `false` when one of them is
    /// not idempotent: none of them is sent again, each is counted in `pipeline_not_resent`,
    /// and the page ends there, not a hit. Before the close: `wpos` still says what was written.
    pub(super) fn batch_closed(&self, cx: &mut ThreadState<'_>, now: u64, head: bool) -> bool {
        let written = self.wpos as u64;
        let head = head && self.request_end(cx) <= written;
        let mut all_resend = !head
            || match self.ex.learned {
                OWN => cx.sh.requests.may_resend(self.url(cx)),
                learned => cx.redirects.may_resend(learned),
            };
        let page = self.ex.page;
        let behind = self.behind.iter().flat_map(|q| q.iter());
        let whole = behind.take_while(|b| b.end <= written);
        let mut count = u64::from(head);
        for b in whole {
            let url = page.url(cx.sh.workload, b.ex.file);
            all_resend &= cx.sh.requests.may_resend(url);
            count += 1;
        }
        if cx.counts(self.ex.file_start_us, now) {
            match all_resend {
                true => cx.stats.pipeline_resent += count,
                false => cx.stats.pipeline_not_resent += count,
            }
        }
        all_resend
    }

    /// Whether the batch's next file was written whole behind the one just answered (so,
    /// sent again after a close, it keeps its start).
    pub(super) fn next_written(&self) -> bool {
        let first = self.behind.as_deref().and_then(|q| q.get(0));
        first.is_some_and(|b| b.end <= self.wpos as u64)
    }
}
