//! Reading responses: the socket read until drained (one `read` per response when it comes
//! whole), each head parsed by `wire` and each body followed by its [`BodyDecoder`], counted and
//! dropped as it passes; a complete response goes back to the state machine (`response_done`).
//! Pipelined responses follow back to back in one read.

use super::super::errors::head_error;
use super::super::page::Child;
use super::super::{ThreadState, Wire, NONE};
use super::after_end::follow_late;
use super::pipelining::batch_is_head;
use super::LANES;
use super::{State, H1};
use crate::stats::ErrorKind;
use std::io;
use wire::response::{parse_response_head, BodyDecoder, BodyProgress, ResponseError};

impl H1 {
    /// Reads until the socket is drained, the connection is gone, or the data is unwanted.
    /// `closed`: the event also reported the peer's FIN or RST, which no later edge will report
    /// again, so the socket is read until it says so even after a short read.
    pub(super) fn on_readable(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        closed: bool,
    ) {
        let gen = self.conn_gen;
        loop {
            let carry = self.head.len();
            buf[..carry].copy_from_slice(&self.head);
            let Some(conn) = &mut self.conn else { return };
            let res = conn.read(&mut buf[carry..]);
            let now = cx.now();
            if cx.ended(now) {
                // Read at or after the end: nothing of it is taken into account, whatever it
                // completes; the request stays in flight for `at_end`, which only looks for
                // where the server stopped.
                if let (Ok(n), true) = (&res, self.busy()) {
                    let first = self.ex.is_head(cx);
                    let is_head =
                        batch_is_head(first, self.behind.as_deref(), self.batch_page(), cx);
                    let body = (self.state == State::ReadingBody).then_some(&self.decoder);
                    let data = &buf[carry..carry + n];
                    follow_late(&mut self.late, (&self.head, body), data, &is_head);
                }
                return;
            }
            match res {
                Ok(0) => return self.on_eof(ch, cx, now),
                Ok(n) => {
                    cx.count_read(n, now);
                    self.head.clear();
                    self.on_data(ch, cx, &buf[..carry + n], now);
                    // Lanes: the requests this read's responses queued leave in one write.
                    let queued = self.src == LANES && self.wpos < self.wend;
                    if queued && self.conn_gen == gen && !self.flush(ch, cx, now) {
                        return;
                    }
                    let drained = n < buf.len() - carry;
                    if self.conn_gen != gen {
                        return;
                    }
                    // HTTP/1.0: the FIN came with the response and all is read: closing now is
                    // the passive close, without a read to see the EOF.
                    if closed && drained && self.state == State::Closing {
                        return self.closed(ch, cx, now);
                    }
                    // Less than offered: drained (edge-triggered epoll reports what comes next).
                    if drained && !closed {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.io_failed(ch, cx, e, now),
            }
        }
    }

    /// Parses heads and follows bodies through `data`; pipelined responses follow back to back.
    pub(super) fn on_data(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        data: &[u8],
        now: u64,
    ) {
        let gen = self.conn_gen;
        let mut pos = 0;
        while self.conn_gen == gen {
            match self.state {
                State::ReadingHead => {
                    if pos == data.len() {
                        return;
                    }
                    if self.ex.first_byte_us == NONE {
                        self.ex.first_byte_us = now;
                    }
                    let rest = &data[pos..];
                    let head_request = self.ex.is_head(cx);
                    let h = match parse_response_head(rest, head_request) {
                        Ok(Some(h)) => h,
                        Ok(None) => return self.head.extend_from_slice(rest),
                        Err(e) => {
                            self.ex.lost_bytes += rest.len() as u64;
                            return self.fail(ch, cx, head_error(e), now);
                        }
                    };
                    cx.debug(&rest[..h.head_len]);
                    pos += h.head_len;
                    self.ex.header_bytes += h.head_len as u64;
                    if (100..200).contains(&h.status) && h.status != 101 {
                        continue; // interim response: the final one follows
                    }
                    self.ex.status = h.status;
                    if let Some(app) = &mut self.app {
                        app.on_head(&rest[..h.head_len], self.ex.url(cx.sh.workload));
                    }
                    if cx.sh.config.redirect > 0 {
                        let request = (self.url(cx), self.ex.learned);
                        let (config, workload) = (cx.sh.config, cx.sh.workload);
                        let head = &rest[..h.head_len];
                        let entry = (ch.slot, self.ex.file);
                        self.ex.next = cx
                            .redirects
                            .on_head(config, workload, request, entry, h.status, head);
                    }
                    self.resp_keep_alive = h.keep_alive && h.status != 101;
                    self.decoder = BodyDecoder::new(h.framing);
                    self.state = State::ReadingBody;
                }
                // An empty slice is fed too: a bodiless response is complete right after its head.
                State::ReadingBody => match feed(&mut self.decoder, &mut self.app, &data[pos..]) {
                    Err(_) => {
                        self.ex.lost_bytes += (data.len() - pos) as u64;
                        return self.fail(ch, cx, ErrorKind::ShortBody, now);
                    }
                    Ok(p) => {
                        pos += p.consumed;
                        self.ex.body_bytes += p.body as u64;
                        self.ex.framing_bytes += (p.consumed - p.body) as u64;
                        if !p.done {
                            return;
                        }
                        self.response_done(ch, cx, now);
                    }
                },
                _ if pos == data.len() => return,
                // Bytes nobody asked for (between pages, or after the last response): the
                // connection is out of step with us, so it is dropped.
                State::Closing => return self.closed(ch, cx, now),
                _ => return self.close(),
            }
        }
    }
}

/// Feeds `data` to the body's decoder; an application workload's Webchild keeps the payload
/// when a check or an extraction reads it.
#[inline]
fn feed(
    decoder: &mut BodyDecoder,
    app: &mut Option<Box<super::super::app::AppExchange>>,
    data: &[u8],
) -> Result<BodyProgress, ResponseError> {
    match app {
        None => decoder.feed(data),
        Some(app) => decoder.feed_payload(data, |p| app.on_payload(p)),
    }
}
