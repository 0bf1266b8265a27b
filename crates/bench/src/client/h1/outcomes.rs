//! How a request fails: counted by its kind, the connection dropped, the page abandoned; and the
//! one exception, a reused keep-alive connection the server closed idle as the request went out,
//! whose request is sent again once on a fresh connection (RFC 9112 section 9.3.1).

use super::super::page::Child;
use super::super::redirects::OWN;
use super::super::{ThreadState, Wire, NONE};
use super::{State, H1};
use crate::stats::ErrorKind;
use std::io;

impl H1 {
    /// A request failed: counted by kind, the connection dropped, the page abandoned.
    pub(super) fn fail(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        kind: ErrorKind,
        now: u64,
    ) {
        ch.record_failure(cx, &self.ex, kind, self.response_bytes(), now);
        self.drop_lanes(ch, cx, now);
        self.close();
        let backoff = matches!(kind, ErrorKind::ConnectRefused | ErrorKind::ConnectOther);
        self.end_page(ch, cx, false, now, backoff);
    }

    pub(super) fn on_eof(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        match self.state {
            State::ReadingHead if self.closed_after_response() => self.pipeline_closed(ch, cx, now),
            State::ReadingHead if self.may_retry(cx) => self.retry(ch, cx, now),
            State::ReadingHead => self.fail(ch, cx, ErrorKind::Reset, now),
            State::ReadingBody => match self.decoder.eof() {
                Ok(()) => {
                    // Close-delimited: complete, and the server has closed already. A batch's
                    // connection is closed once what was written behind it is seen
                    // (`after_response`: those are sent again).
                    self.resp_keep_alive = false;
                    if self.behind.is_none() || self.lanes.is_some() {
                        self.close();
                    }
                    self.response_done(ch, cx, now)
                }
                Err(_) => self.fail(ch, cx, ErrorKind::ShortBody, now),
            },
            State::Closing => self.closed(ch, cx, now), // the server closed first, as it should
            _ => self.close(), // the server closed an idle keep-alive connection
        }
    }

    pub(super) fn io_failed(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        e: io::Error,
        now: u64,
    ) {
        if self.state == State::Closing {
            return self.closed(ch, cx, now);
        }
        if !matches!(self.state, State::ReadingHead | State::ReadingBody) {
            return self.close();
        }
        let reset = matches!(
            e.kind(),
            io::ErrorKind::ConnectionReset
                | io::ErrorKind::BrokenPipe
                | io::ErrorKind::ConnectionAborted
        );
        if reset && self.closed_after_response() {
            return self.pipeline_closed(ch, cx, now);
        }
        if reset && self.may_retry(cx) {
            return self.retry(ch, cx, now);
        }
        let kind = if reset {
            ErrorKind::Reset
        } else {
            ErrorKind::Io
        };
        self.fail(ch, cx, kind, now);
    }

    /// A reused keep-alive connection that closes before any byte of the response was most
    /// likely closed idle by the server as we wrote: RFC 9112 9.3.1 lets a client resend an
    /// idempotent request once, on a new connection. A fresh connection failing is an error.
    pub(super) fn may_retry(&self, cx: &ThreadState<'_>) -> bool {
        let resend = match self.ex.learned {
            OWN => cx.sh.requests.may_resend(self.url(cx)),
            learned => cx.redirects.may_resend(learned),
        };
        resend
            && self.conn_responses > 0
            && !self.retried
            && self.ex.first_byte_us == NONE
            && self.head.is_empty()
    }

    pub(super) fn retry(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        self.retried = true;
        self.ex.reset_response();
        self.connect(ch, cx, now);
    }

    /// Pipelining: the server closed the connection after a complete response, before any
    /// byte of the one being read, with requests behind it: it never processed that one nor
    /// those (RFC 9112 section 9.3.2), which go again on a new connection (`lanes_closed`,
    /// `batch_closed`). One request alone is the idle close above (`may_retry`).
    fn closed_after_response(&self) -> bool {
        self.behind.as_ref().is_some_and(|q| !q.is_empty())
            && self.conn_responses > 0
            && self.ex.first_byte_us == NONE
            && self.head.is_empty()
    }

    fn pipeline_closed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.lanes.is_some() {
            return self.lanes_closed(ch, cx, now, true);
        }
        let resend = self.batch_closed(cx, now, true);
        self.close();
        if !resend {
            return self.end_page(ch, cx, false, now, false);
        }
        // Sent again from the file being read on: its start stays (`connect` keeps it).
        self.retried = true;
        self.ex.reset_response();
        self.connect(ch, cx, now);
    }
}
