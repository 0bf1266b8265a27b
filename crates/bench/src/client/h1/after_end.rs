//! What an HTTP/1 server said after the end of the run that changes what was sent: that it
//! closes the connection. A server closes a connection after a number of requests (nginx's
//! `keepalive_requests`), saying so in that response (`Connection: close`), and never processes
//! the requests pipelined behind it; when that response comes just before the end, or after
//! it, the requests behind it were sent in full and yet never reach the server's log. The end
//! of the run's lingering close (`client/linger.rs`) hands every byte it reads here: responses
//! are followed (not recorded: the window has ended) to see where the server stopped, so that
//! `at_end` counts the requests it never processed as not sent.

use super::super::linger::{self, Linger};
use super::super::ThreadState;
use super::pipelining::batch_is_head;
use super::{State, H1};
use wire::response::{parse_response_head, BodyDecoder};

impl H1 {
    /// Whether the lingering close holds its FIN back: with `sent` requests outstanding at the
    /// end, more than one, the server has not yet answered all but the last. A FIN while it
    /// works on one makes a server such as nginx end that one (its 499) and never read those
    /// pipelined behind it, which were counted unfinished; once it answers the one before the
    /// last, the FIN can only cut the last, which it has. A response saying it closes, or bytes
    /// out of step, end the wait.
    pub(super) fn holds_fin(&self, sent: u64) -> bool {
        let (answered, over) =
            (self.late.as_deref()).map_or((0, false), |l| (l.answered, l.stopped || l.lost));
        sent > 1 && !over && answered + 1 < sent
    }

    /// A step of the lingering close (`client/linger.rs`) whose reads follow the responses to
    /// see where the server stopped.
    pub(super) fn linger_read(
        &mut self,
        cx: &ThreadState<'_>,
        at: Linger,
        buf: &mut [u8],
    ) -> Linger {
        let is_head = batch_is_head(
            self.ex.is_head(cx),
            self.behind.as_deref(),
            self.batch_page(),
            cx,
        );
        let body = (self.state == State::ReadingBody).then_some(&self.decoder);
        let (late, head) = (&mut self.late, &self.head);
        linger::step(self.conn.as_mut(), at, buf, |b| {
            follow_late(late, (head, body), b, &is_head)
        })
    }
}

/// The responses read after the end on one connection.
#[derive(Debug, Default)]
pub(super) struct AfterEnd {
    /// Following responses from where the window's reads left off (set on the first bytes).
    started: bool,
    /// The body of the response in progress, once its head is read.
    body: Option<BodyDecoder>,
    /// A head split across reads.
    head: Vec<u8>,
    /// Responses completed after the end.
    answered: u64,
    /// A response said the server closes after it. Only that says the requests behind it were
    /// not processed: a server that closes without saying so may be answering the FIN of this
    /// close, the requests it had processed or not.
    stopped: bool,
    /// Bytes that are no response: nothing more is concluded.
    lost: bool,
}

/// Bytes read after the end on a connection with requests in flight, followed to see where
/// the server stopped; made at the first such bytes.
pub(super) fn follow_late(
    late: &mut Option<Box<AfterEnd>>,
    window: (&[u8], Option<&BodyDecoder>),
    data: &[u8],
    is_head: &impl Fn(u64) -> bool,
) {
    if !data.is_empty() {
        let late = late.get_or_insert_with(Box::default);
        late.feed(data, window, is_head);
    }
}

impl AfterEnd {
    /// Bytes read after the end. The first call takes the window's state: the head so far
    /// (`head`) and the body decoder when the head was read. `is_head(k)`: whether the k-th
    /// request from the one in progress is a HEAD.
    pub(super) fn feed(
        &mut self,
        data: &[u8],
        window: (&[u8], Option<&BodyDecoder>),
        is_head: impl Fn(u64) -> bool,
    ) {
        if !self.started {
            self.started = true;
            self.head.extend_from_slice(window.0);
            self.body = window.1.cloned();
        }
        if self.stopped || self.lost {
            return;
        }
        let mut data = data;
        loop {
            match &mut self.body {
                Some(decoder) => {
                    let Ok(p) = decoder.feed(data) else {
                        self.lost = true;
                        return;
                    };
                    data = &data[p.consumed..];
                    if !p.done {
                        return;
                    }
                    self.body = None;
                    self.answered += 1;
                }
                None if data.is_empty() => return,
                None => {
                    self.head.extend_from_slice(data);
                    let h = match parse_response_head(&self.head, is_head(self.answered)) {
                        Ok(Some(h)) => h,
                        Ok(None) => return,
                        Err(_) => {
                            self.lost = true;
                            return;
                        }
                    };
                    // What followed the head in `data` (the carried part was all head).
                    let carried = self.head.len() - data.len();
                    data = &data[h.head_len - carried..];
                    self.head.clear();
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue;
                    }
                    if !h.keep_alive {
                        // Its own body still comes; nothing after it is processed.
                        self.stopped = true;
                        self.answered += 1;
                        return;
                    }
                    self.body = Some(BodyDecoder::new(h.framing));
                }
            }
        }
    }

    /// Of `sent` requests in flight at the end (from the one in progress), how many at the
    /// back the server never processed: those behind the response that said it closes.
    pub(super) fn unprocessed(&self, sent: u64) -> u64 {
        if !self.stopped || self.lost {
            return 0;
        }
        sent.saturating_sub(self.answered)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OK: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc";
    const LAST: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc";

    #[test]
    fn requests_behind_a_closing_response_were_not_processed() {
        let all = [OK, LAST].concat();
        for cut in 0..all.len() {
            let mut late = AfterEnd::default();
            late.feed(&all[..cut], (&[], None), |_| false);
            late.feed(&all[cut..], (&[], None), |_| false);
            assert_eq!(late.unprocessed(4), 2, "cut at {cut}");
        }
    }

    #[test]
    fn the_window_s_partial_response_is_carried_on() {
        // The head was read in the window; its body and a closing response come after.
        let decoder = BodyDecoder::new(wire::response::Framing::Length(3));
        let mut late = AfterEnd::default();
        late.feed(&[b"abc", LAST].concat(), (&[], Some(&decoder)), |_| false);
        assert_eq!(late.unprocessed(3), 1);
        // A split head carried from the window.
        let mut late = AfterEnd::default();
        late.feed(&LAST[10..], (&LAST[..10], None), |_| false);
        assert_eq!(late.unprocessed(2), 1);
    }

    #[test]
    fn only_a_response_saying_close_concludes_anything() {
        let mut late = AfterEnd::default();
        late.feed(OK, (&[], None), |_| false);
        assert_eq!(
            late.unprocessed(3),
            0,
            "the rest may come yet, or were processed"
        );
        late.feed(&LAST[..20], (&[], None), |_| false);
        assert_eq!(late.unprocessed(3), 0, "its head is not complete yet");
        let mut late = AfterEnd::default();
        late.feed(b"garbage\r\n\r\n", (&[], None), |_| false);
        late.feed(LAST, (&[], None), |_| false);
        assert_eq!(late.unprocessed(3), 0, "out of step: nothing is concluded");
    }

    #[test]
    fn a_head_request_s_response_has_no_body() {
        let head = b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n";
        let mut late = AfterEnd::default();
        late.feed(&[head.as_slice(), LAST].concat(), (&[], None), |k| k == 0);
        assert_eq!(late.unprocessed(4), 2);
    }
}
