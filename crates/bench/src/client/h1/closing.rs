//! HTTP/1.0's end of a connection: the client waits for the server to close first (`Closing`),
//! then goes on with the page's next file, a redirect's next hop, or the next page.

use super::super::page::Child;
use super::super::page_flow::next_page;
use super::super::{ThreadState, Wire};
use super::{State, H1};

impl H1 {
    /// HTTP/1.0, the response complete (and recorded, so its time ends at its last byte): waits
    /// for the server's FIN before closing, so that the server closes first and keeps the
    /// TIME_WAIT, as with a 1995 client; closing at once left ~2% of them on the client. The FIN
    /// usually comes with the data (the event that brought it says so: then this state ends
    /// before the next read) or right after it, and epoll's read-closed flag shows it without a
    /// read, so the next file hardly waits. A server that keeps the connection open is waited
    /// for at most the response timeout, then closed.
    pub(super) fn await_close(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        now: u64,
        ok: bool,
        more: bool,
    ) {
        self.next_file = ok && more;
        if !self.next_file {
            // The page ended at its last byte, not at the FIN.
            Child::record_page(cx, self.ex.page, ok, now);
        }
        self.state = State::Closing;
        cx.timers
            .arm(ch.slot, now + cx.sh.schedule.response_timeout_us);
    }

    /// The end of `Closing`: the server's FIN (or the timeout, an error, stray bytes).
    pub(super) fn closed(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        if cx.members > 1 {
            return self.next_shared(ch, cx, now);
        }
        if std::mem::take(&mut self.hop_next) {
            self.start_request(ch, cx, now);
        } else if self.next_file {
            self.ex.file += 1;
            self.start_file(ch, cx, now);
        } else {
            self.state = State::Idle;
            next_page(self, ch, cx, now, false);
        }
    }
}
