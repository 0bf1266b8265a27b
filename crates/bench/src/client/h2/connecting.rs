//! An HTTP/2 connection coming up: the TCP connect (`client/connect.rs`, as for HTTP/1), the TLS
//! handshake with ALPN `h2` (none for cleartext: HTTP/2 by prior knowledge), the preface and our
//! SETTINGS, then the server's SETTINGS, after which streams may open. All within the connect
//! timeout; each step that fails is an error of its own kind.

use super::super::connect;
use super::super::errors::{alpn_refused, handshake_error};
use super::super::page::Child;
use super::super::{ThreadState, Wire, BACKOFF_US, NONE};
use super::{State, H2};
use crate::config::{H2_CONNECTION_WINDOW, H2_STREAM_WINDOW};
use crate::stats::ErrorKind;
use http2::Session;

/// The longest wait before a connection after those that processed nothing: the back-off of a
/// failed connect (`BACKOFF_US`) doubled for each such connection in a row, up to 64 times it.
const MOST_DOUBLINGS: u32 = 6;

impl H2 {
    /// A new connection for the work waiting (the old one, if any, closed): opened now, or,
    /// when on the last one, which came up, the server processed no stream (it sent GOAWAY at
    /// once, or refused every stream), after a wait that doubles with each such connection in a row
    /// (10 ms, 20 ms, ... at most 640 ms) rather than at once, in a loop as fast as the server.
    pub(super) fn connect(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        self.close();
        if self.empty_in_a_row > 0 && now < cx.sh.schedule.end_us {
            self.state = State::Backoff;
            self.waited_from = now;
            let wait = BACKOFF_US << (self.empty_in_a_row - 1).min(MOST_DOUBLINGS);
            cx.timers.arm(ch.slot, now + wait);
            return;
        }
        self.open(ch, cx, now);
    }

    /// Opens the connection (`connect`'s wait over, if any).
    pub(super) fn open(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        // (From `Backoff`: the work waits from when the wait began.)
        let waited_from = match self.state {
            State::Backoff => self.waited_from,
            _ => now,
        };
        self.conn_gen += 1;
        self.state = State::Connecting;
        self.connect_us = NONE;
        self.waited_from = waited_from;
        match connect::open(ch, cx, now) {
            Ok((conn, start)) => {
                self.conn = Some(conn);
                self.connect_start_us = start;
            }
            Err((kind, now)) => self.conn_failed(ch, cx, kind, now),
        }
    }

    pub(super) fn on_connect_ready(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>) {
        let Some(conn) = &self.conn else { return };
        let now = match connect::ready(conn, cx) {
            Ok(Some(now)) => now,
            Ok(None) => return,
            Err((kind, now)) => return self.conn_failed(ch, cx, kind, now),
        };
        self.connect_us = now - self.connect_start_us;
        let ex = self.first_exchange(ch, cx.sh.workload);
        ch.record_connect(cx, &ex, now);
        self.state = State::Handshaking;
        self.handshake_start_us = now;
        self.on_handshake(ch, cx, now);
    }

    /// The TLS handshake (none for cleartext); then the preface and our SETTINGS.
    pub(super) fn on_handshake(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        let first = self.first_exchange(ch, cx.sh.workload);
        let Some(conn) = &mut self.conn else { return };
        let now = match connect::handshake(conn, (ch, &first), cx, self.handshake_start_us, now) {
            Ok(None) => return,
            Ok(Some(now)) => now,
            Err(e) if alpn_refused(&e) => {
                return self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now)
            }
            Err(e) => {
                cx.handshake_failed(&e, first.file_start_us, now);
                return self.conn_failed(ch, cx, handshake_error(&e), now);
            }
        };
        if !conn.negotiated_h2() {
            return self.conn_failed(ch, cx, ErrorKind::H2NotNegotiated, now);
        }
        let window = cx.sh.config.h2_window;
        let config = http2::Config {
            initial_window_size: window.unwrap_or(H2_STREAM_WINDOW),
            connection_window_size: window.unwrap_or(H2_CONNECTION_WINDOW),
            ..http2::Config::client()
        };
        match Session::client(&config) {
            Ok(s) => self.session = Some(s),
            Err(_) => return self.conn_failed(ch, cx, ErrorKind::H2Protocol, now),
        }
        if let (Some(s), Some(first)) = (&mut self.session, cx.sh.config.h2_first_stream_id) {
            let set = s.set_next_stream_id(first);
            debug_assert!(set.is_ok(), "h2_first_stream_id {first}: {set:?}");
        }
        self.state = State::Settings;
        self.flush(ch, cx, now);
    }

    /// The server's SETTINGS arrived: the connection is up.
    pub(super) fn on_settings(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        self.state = State::Open;
        let server = self
            .session
            .as_ref()
            .map_or(0, |s| s.remote_max_concurrent_streams());
        if cx.counts(now, now) {
            let h = &mut cx.stats.http2;
            h.connections += 1;
            h.max_concurrent_streams = h.max_concurrent_streams.max(u64::from(server));
        }
    }
}
