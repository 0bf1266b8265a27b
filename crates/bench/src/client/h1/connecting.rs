//! An HTTP/1 connection coming up: the nonblocking TCP connect (`client/connect.rs`), then over
//! HTTPS the TLS handshake, each recorded apart, both within the connect timeout; then the
//! request in progress is sent (`sending.rs`).

use super::super::connect;
use super::super::errors::handshake_error;
use super::super::page::Child;
use super::super::ThreadState;
use super::{State, H1};

impl H1 {
    /// Opens a new connection for the request in progress.
    pub(super) fn connect(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Connecting;
        self.conn_responses = 0;
        match connect::open(ch, cx, now) {
            Ok((conn, start)) => {
                self.conn = Some(conn);
                self.connect_start_us = start;
            }
            Err((kind, now)) => self.fail(ch, cx, kind, now),
        }
    }

    /// The first event of a connecting socket: connected, failed, or (a stale event) neither yet.
    pub(super) fn on_connect_ready(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>) {
        let Some(conn) = &self.conn else { return };
        let now = match connect::ready(conn, cx) {
            Ok(Some(now)) => now,
            Ok(None) => return,
            Err((kind, now)) => return self.fail(ch, cx, kind, now),
        };
        self.ex.connect_us = now - self.connect_start_us;
        ch.record_connect(cx, &self.ex, now);
        self.state = State::Handshaking;
        self.handshake_start_us = now;
        self.on_handshake(ch, cx, now);
    }

    /// Moves the transport's handshake on (plain TCP has none: it is ready at once); when it is
    /// done, records it apart from the TCP connect and sends the request.
    pub(super) fn on_handshake(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let Some(conn) = &mut self.conn else { return };
        match connect::handshake(conn, (ch, &self.ex), cx, self.handshake_start_us, now) {
            Ok(None) => {}
            Ok(Some(now)) => self.send(ch, cx, now),
            Err(e) => {
                cx.handshake_failed(&e, self.ex.file_start_us, now);
                self.fail(ch, cx, handshake_error(&e), now)
            }
        }
    }
}
