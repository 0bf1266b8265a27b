//! What a Webchild's page and each of its exchanges are, as plain data: the page an exchange
//! belongs to, one file's exchange with its timings and byte counts, the Webchild's phase, and
//! what a response means for its page entry. Every wire (`h1.rs`, `h2.rs`, `h3.rs`), the
//! lingering close and the page state (`page.rs`) share them, so they sit below all of those.

use super::redirects::{Hop, OWN};
use super::{ThreadState, NONE};
use crate::stats::ErrorKind;
use crate::Workload;

/// What a complete response means for its page entry.
pub(super) enum Answer {
    /// The entry's final response, a success or not.
    Final(bool),
    /// A redirect to follow: the learned request of this index is the entry's next.
    Follow(u32),
}

/// What an application workload's checks and extractions made of a complete response (see
/// `client/app.rs`); without them every response is judged by its status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// By the run's rule: 4xx and 5xx are errors (or what `--expect-status` says).
    ByStatus,
    /// The file's own status list accepted it, and every check passed.
    Passed,
    /// A check or an extraction failed: an error of this kind.
    Failed(ErrorKind),
}

/// Where a Webchild is in its pages (its connection keeps its own state).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// Between pages: thinking, waiting for its open-loop slot, or backing off after a failed
    /// connect. A keep-alive connection may stay open meanwhile.
    Wait,
    /// Fetching a page's files.
    Busy,
    /// Quota done: nothing more to fetch.
    Done,
}

/// The page an exchange belongs to: which page, when it was due (the open loop's intended
/// time) and when it began. A Webchild holds the one it picked last ([`Child::page`]); each
/// exchange carries its own, so that a connection with several pages in flight (lanes over
/// HTTP/1.1 pipelining and HTTP/2, a shared page's members) records each through its exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct PageRef {
    /// Index in the workload's pages.
    pub index: usize,
    pub intended_us: u64,
    pub start_us: u64,
}

impl PageRef {
    /// No page yet (a Webchild before its first).
    pub(super) const NONE: PageRef = PageRef {
        index: 0,
        intended_us: 0,
        start_us: 0,
    };

    /// The URL index of its file `file`.
    #[inline]
    pub(super) fn url(&self, w: &Workload, file: usize) -> usize {
        w.pages[self.index].files[file]
    }

    /// The number of its files.
    #[inline]
    pub(super) fn files(&self, w: &Workload) -> usize {
        w.pages[self.index].files.len()
    }
}

/// One file's exchange (a request and its response): the page it belongs to, its timings and
/// byte counts, as they are recorded. A connection keeps one per request in flight.
#[derive(Debug, Clone, Copy)]
pub(super) struct Exchange {
    pub page: PageRef,
    /// Index in the page's files.
    pub file: usize,
    pub file_start_us: u64,
    pub connect_us: u64,
    pub written_us: u64,
    pub first_byte_us: u64,
    pub status: u16,
    pub header_bytes: u64,
    pub body_bytes: u64,
    /// Framing of the response (HTTP/1.1 chunks, HTTP/2 frame headers): read, neither head nor
    /// body.
    pub framing_bytes: u64,
    /// Bytes of a failing response that were never parsed as head or body.
    pub lost_bytes: u64,
    /// `--redirect N`: redirects this page entry has followed, and the learned request in
    /// flight (`OWN`: the entry's own URL's).
    pub hops: u32,
    pub learned: u32,
    /// What the response's head said about the entry's next request.
    pub next: Hop,
    /// An application workload's judgement of the response, set before it is recorded.
    pub verdict: Verdict,
    /// The server refused this request once already by resetting its stream (HTTP/2's
    /// REFUSED_STREAM, HTTP/3's H3_REQUEST_REJECTED) and it was sent again: a second refusal is
    /// an error, so that a server refusing everything cannot keep a page going round forever.
    /// HTTP/3 counts it per connection: a new one clears it (`h3/connecting.rs`).
    pub refused_once: bool,
    /// A connection on which the server processed no stream refused this request (its GOAWAY,
    /// before or above its stream) and it goes on a new one: refused so again, it fails
    /// (`h2_goaway`, `h3_goaway`), so that a server that refuses everything cannot keep a run
    /// going round. Cleared when one that processed a stream refuses it (the server makes
    /// progress: each such connection takes at least one exchange).
    pub refused_empty: bool,
    /// The connection (by its generation, HTTP/2's and HTTP/3's count of connections started;
    /// 0: none) on which a refusal of it was counted as retried, so that failing it there, after
    /// all, takes back that count and no other connection's.
    pub retried_on: u64,
}

impl Exchange {
    /// An exchange of `page`'s file 0 that has not begun.
    pub(super) const fn new(page: PageRef) -> Self {
        Exchange {
            page,
            file: 0,
            file_start_us: 0,
            connect_us: NONE,
            written_us: 0,
            first_byte_us: NONE,
            status: 0,
            header_bytes: 0,
            body_bytes: 0,
            framing_bytes: 0,
            lost_bytes: 0,
            hops: 0,
            learned: OWN,
            next: Hop::None,
            verdict: Verdict::ByStatus,
            refused_once: false,
            refused_empty: false,
            retried_on: 0,
        }
    }

    /// The URL index of its file.
    #[inline]
    pub(super) fn url(&self, w: &Workload) -> usize {
        self.page.url(w, self.file)
    }

    /// Whether its request is a HEAD (its response has no body): its file's own, or the
    /// redirect's it follows.
    pub(super) fn is_head(&self, cx: &ThreadState<'_>) -> bool {
        match self.learned {
            OWN => cx.sh.requests.is_head(self.url(cx.sh.workload)),
            learned => cx.redirects.is_head(learned),
        }
    }

    /// The server reset this request's stream saying it was not processed (REFUSED_STREAM,
    /// H3_REQUEST_REJECTED): true the first time, when it is to be sent again; false after,
    /// when it fails as the reset it is (`refused_once`).
    pub(super) fn first_refusal(&mut self) -> bool {
        !std::mem::replace(&mut self.refused_once, true)
    }

    /// Forgets the response (a new file, or the same one retried); the file's start and its
    /// request's last byte stay.
    pub(super) fn reset_response(&mut self) {
        self.connect_us = NONE;
        self.first_byte_us = NONE;
        self.status = 0;
        self.header_bytes = 0;
        self.body_bytes = 0;
        self.framing_bytes = 0;
        self.lost_bytes = 0;
        self.next = Hop::None;
        self.verdict = Verdict::ByStatus;
    }

    /// A new page entry's first request: no redirect followed yet.
    pub(super) fn first_request(&mut self) {
        self.hops = 0;
        self.learned = OWN;
    }

    /// Everything read so far for this response.
    pub(super) fn bytes(&self) -> u64 {
        self.header_bytes + self.body_bytes + self.framing_bytes + self.lost_bytes
    }
}
