//! An HTTP/2 connection's bytes: what the session queued written to the socket in one write
//! (over HTTPS, one rustls write: its records are as full as the output), and each read handed
//! to the session after its frames are counted (http2's `frame::FrameScanner`); then what the
//! read calls for (`next`): more streams, the page's end, a new connection after a GOAWAY.

use super::super::connect;
use super::super::page::Child;
use super::super::{ThreadState, NONE};
use super::{State, H2};
use crate::config::H2_STREAM_WINDOW;
use crate::stats::ErrorKind;
use http2::frame::flags::END_STREAM;
use http2::frame::frame_type::{DATA, GOAWAY, RST_STREAM};
use http2::frame::Span;
use std::io;

impl H2 {
    /// Has the session write what it queued, and writes it; false if the connection failed
    /// (and that was handled).
    pub(super) fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        self.io.now = now;
        let res = self.write_out();
        self.take_counts(cx, cx.counts(now, now));
        match res {
            Ok(()) => true,
            Err(kind) => {
                self.conn_failed(ch, cx, kind, now);
                false
            }
        }
    }

    /// What `flush` does with the session and the socket, until the socket is full or the
    /// session has nothing more; an error once nghttp2 has ended the connection over an error
    /// of the server's (its GOAWAY is out, or as far out as the socket took it): nothing more
    /// will come on it, and what is in flight fails now, not at its response timeout.
    pub(super) fn write_out(&mut self) -> Result<(), ErrorKind> {
        self.write_session()?;
        if self.io.error_goaway_sent {
            return Err(ErrorKind::H2Protocol);
        }
        Ok(())
    }

    fn write_session(&mut self) -> Result<(), ErrorKind> {
        let (Some(session), Some(conn)) = (&mut self.session, &mut self.conn) else {
            return Ok(());
        };
        let io = &mut self.io;
        loop {
            session.send(io).map_err(|_| ErrorKind::H2Protocol)?;
            match connect::write_out(conn, &io.out, &mut io.out_pos) {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::WriteZero => return Err(ErrorKind::Reset),
                Err(e) => return Err(io_kind(&e)),
            }
            io.out.clear();
            io.out_pos = 0;
            if !session.want_write() {
                return Ok(());
            }
        }
    }

    /// Reads until the socket is drained, hands each read to the session, then acts once on
    /// all of them (`next`: new streams, one write). Writing after each read instead, when a
    /// server's batch of responses takes two reads, sent the requests in two writes and the
    /// server paid for it: more segments each way on loopback (docs/bench-http2.md). h2load,
    /// too, reads until the socket is empty before it writes. `closed`: the event also
    /// reported the peer's FIN or RST, which no later edge will report again, so the socket is
    /// read until it says so even after a short read (a FIN that came with the last bytes).
    pub(super) fn on_readable(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        closed: bool,
    ) {
        // When the last read handed to the session was made, if any.
        let mut read_at = None;
        let gen = self.conn_gen;
        loop {
            let Some(conn) = &mut self.conn else { return };
            let res = conn.read(buf);
            let now = cx.now();
            if cx.ended(now) {
                // Read at or after the end: nothing of it is taken into account; the streams
                // stay in flight for `at_end`, which only looks for a GOAWAY in it.
                if let Ok(n) = res {
                    self.late.scan(&mut self.frames, &buf[..n]);
                }
                return;
            }
            match res {
                Ok(0) => {
                    // What came before the end is acted on first (its streams, a GOAWAY's
                    // new connection); the end is then this connection's, if it still is.
                    if let Some(at) = read_at.take() {
                        if !self.next(ch, cx, at) || self.conn_gen != gen {
                            return;
                        }
                    }
                    let kind = if self.io.goaway.is_some() {
                        ErrorKind::H2Goaway
                    } else {
                        ErrorKind::Reset
                    };
                    return self.conn_failed(ch, cx, kind, now);
                }
                Ok(n) => {
                    cx.count_read(n, now);
                    if !self.on_data(ch, cx, &buf[..n], now) {
                        return;
                    }
                    read_at = Some(now);
                    if n < buf.len() && !closed {
                        break;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.conn_failed(ch, cx, io_kind(&e), now),
            }
        }
        if let Some(now) = read_at {
            self.next(ch, cx, now);
        }
    }

    /// One read's bytes: counted frame by frame, given to the session, the streams it closed
    /// recorded; false if the connection is gone.
    pub(super) fn on_data(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        data: &[u8],
        now: u64,
    ) -> bool {
        // A server that answers HTTP/1 to the preface does not speak HTTP/2.
        if self.state == State::Settings && !self.io.settings && data.starts_with(b"HTTP/") {
            self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now);
            return false;
        }
        let in_window = cx.counts(now, now);
        let io = &mut self.io;
        let stats = &mut cx.stats.http2;
        self.frames.scan(data, |span, n| match span {
            Span::Framing => {
                if in_window {
                    stats.bytes_framing += n as u64;
                }
            }
            Span::Header(id) | Span::Data(id) => match io.find(id) {
                Some(i) => {
                    let s = io.stream(i);
                    if matches!(span, Span::Header(_)) {
                        s.ex.header_bytes += n as u64;
                    } else {
                        s.data_bytes += n as u64;
                    }
                }
                None if in_window => stats.bytes_framing += n as u64,
                None => {}
            },
            Span::Frame(..) => {}
            // A frame is counted when complete, and what it says with it (read here, not from
            // nghttp2, which ignores what follows a frame that broke the protocol).
            Span::End {
                ty,
                flags,
                stream,
                word,
            } => {
                if ty == DATA && flags & END_STREAM != 0 {
                    if let Some(i) = io.find(stream) {
                        io.stream(i).data_ended = true;
                    }
                }
                if in_window {
                    stats.count_frame(ty);
                    match ty {
                        GOAWAY => stats.goaways += 1,
                        RST_STREAM => stats.count_rst(word),
                        _ => {}
                    }
                }
            }
        });
        let Some(session) = &mut self.session else {
            return false;
        };
        self.io.now = now;
        let res = session.recv(data, &mut self.io);
        if let Some(text) = self.io.debug.as_mut().filter(|t| !t.is_empty()) {
            cx.debug(text);
            text.clear();
        }
        let ended = self.io.invalid && !session.want_read();
        self.take_counts(cx, in_window);
        if res.is_err() || ended {
            self.conn_failed(ch, cx, ErrorKind::H2Protocol, now);
            return false;
        }
        if self.state == State::Settings && self.io.settings {
            self.on_settings(cx, now);
        }
        self.streams_closed(ch, cx, now);
        self.conn.is_some()
    }

    /// The session's counters into the statistics (those of the window).
    pub(super) fn take_counts(&mut self, cx: &mut ThreadState<'_>, in_window: bool) {
        let c = &mut self.io.counts;
        let h = &mut cx.stats.http2;
        if in_window {
            h.header_bytes_sent += c.header_bytes_sent;
        }
        c.header_bytes_sent = 0;
    }

    /// What follows a read or a page's start: more streams, the page's end, a new connection
    /// after GOAWAY; false if the connection is gone.
    pub(super) fn next(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        if self.state == State::Open {
            self.fill(ch, cx, now);
        }
        if self.conn.is_none() || !self.flush(ch, cx, now) {
            return false;
        }
        // The body bytes owed (within half the receive window: the rest may wait for our
        // WINDOW_UPDATE): the socket may wake this only when a share of them has come, and
        // wakes it by the transport's deadline if they do not (transport/low_water.rs).
        if let Some(conn) = self.conn.as_mut().filter(|_| self.no_room_since == NONE) {
            let window = cx.sh.config.h2_window.unwrap_or(H2_STREAM_WINDOW);
            // (Added up only on a connection that has seen a large body: at 100 streams of small
            // files the sum would be a scan of the table after every read, for nothing.)
            let owed = if self.io.large_bodies {
                self.io.owed()
            } else {
                0
            };
            let at = conn.set_low_water(owed.min(u64::from(window / 2)), now);
            cx.timers.arm_by(ch.slot, at);
        }
        if self.io.closed.is_empty() {
            return true;
        }
        // nghttp2 closed streams while sending (those a GOAWAY refused before their HEADERS
        // left): kept to be sent again now, not failed if the server closes first.
        self.streams_closed(ch, cx, now);
        if self.state == State::Open && self.conn.is_some() {
            self.fill(ch, cx, now);
        }
        self.conn.is_some() && self.flush(ch, cx, now)
    }
}

/// What a failed read or write counts as.
fn io_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::BrokenPipe
        | io::ErrorKind::ConnectionAborted => ErrorKind::Reset,
        _ => ErrorKind::Io,
    }
}
