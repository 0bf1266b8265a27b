//! An HTTP/3 connection's datagrams: every one the socket holds handed to the client, then its
//! events acted on once (`next`: the page's streams, one flush); every datagram the client has
//! sent at once, one `send` each (QUIC's pacing time, `Datagram::at`, is not waited for: on
//! loopback and in a LAN the congestion window, not pacing, is what holds a sender back), and
//! QUIC's own deadline (acknowledgements, loss recovery, the idle timeout) on the Webchild's
//! timer beside the connect and response timeouts.

use super::super::errors::connect_error;
use super::super::linger::Linger;
use super::super::page::Child;
use super::super::{ThreadState, NONE};
use super::{State, H3};
use crate::stats::{ErrorKind, Packets};
use std::io;
use std::time::Instant;

impl H3 {
    /// Reads every datagram waiting, then acts on what they brought.
    pub(super) fn on_readable(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        now: u64,
    ) {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return;
        };
        loop {
            match sock.recv(buf) {
                Ok(n) => {
                    // An error here ends the connection: `closed` says why, below.
                    let _ = client.recv(&mut buf[..n], self.peer);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // An ICMP error for a datagram sent (port unreachable: nothing listens).
                Err(e) => {
                    let kind = match self.state {
                        State::Handshaking => connect_error(&e),
                        _ => ErrorKind::Reset,
                    };
                    return self.conn_failed(ch, cx, kind, now);
                }
            }
        }
        if self.state == State::Handshaking && client.is_ready() {
            self.handshake_done(ch, cx, now);
        }
        if self.state == State::Open && !self.on_events(ch, cx, buf, now) {
            return;
        }
        if self.client.as_ref().is_some_and(http3::Client::is_closed) {
            return self.closed(ch, cx, now);
        }
        self.next(ch, cx, now);
    }

    /// What follows a read, a timer or a page's start: more streams (or the page's end), the
    /// datagrams they make sent, the timer set.
    pub(super) fn next(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.state == State::Open || self.sends_early() {
            self.fill(ch, cx, now);
        }
        if self.state != State::Idle && self.flush(ch, cx, now) {
            self.arm(ch, cx);
        }
    }

    /// Sends every datagram the client has; false if the connection failed (and that was
    /// handled). Once the client has nothing more to send, the requests it took are out whole.
    pub(super) fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return true;
        };
        loop {
            if self.pending == 0 {
                match client.send(&mut self.out) {
                    Some(d) => self.pending = d.len,
                    None => break,
                }
            }
            match sock.send(&self.out[..self.pending]) {
                Ok(_) => self.pending = 0,
                // The socket's buffer is full: the datagram waits for a writable event.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let kind = match self.state {
                        State::Handshaking => connect_error(&e),
                        _ => ErrorKind::Io,
                    };
                    self.conn_failed(ch, cx, kind, now);
                    return false;
                }
            }
        }
        for s in (self.flight.iter_mut()).filter(|s| s.ex.written_us == NONE) {
            if s.body_left() == 0 {
                s.ex.written_us = now;
            }
        }
        true
    }

    /// QUIC's deadline, if it has passed by `now`.
    pub(super) fn service_deadline(&mut self, now: u64) {
        let base = self.base;
        if let Some(client) = &mut self.client {
            if client.deadline().is_some_and(|d| us_since(base, d) <= now) {
                client.on_deadline();
            }
        }
    }

    /// The Webchild's timer at the earliest of QUIC's deadline, the connect timeout (while the
    /// handshake is under way), the oldest stream's response timeout and the wait for the
    /// server to allow a stream. Between pages the timer is the page logic's: not touched.
    pub(super) fn arm(&mut self, ch: &Child, cx: &mut ThreadState<'_>) {
        if !self.busy {
            return;
        }
        let schedule = &cx.sh.schedule;
        let quic = self
            .client
            .as_ref()
            .and_then(http3::Client::deadline)
            .map_or(NONE, |d| us_since(self.base, d));
        let connect = match self.state {
            State::Handshaking => self.connect_start_us + schedule.connect_timeout_us,
            _ => NONE,
        };
        // Streams sent in 0-RTT exist while the handshake goes on, but their deadlines are
        // looked at (`timed_out`) only once it is done: armed now, a response timeout
        // shorter than the connect timeout would fire in the past again and again. The
        // connect timeout bounds them meanwhile.
        let response = match self.state {
            State::Handshaking => NONE,
            _ => self
                .flight
                .oldest_written()
                .into_iter()
                .chain((self.no_room_since != NONE).then_some(self.no_room_since))
                .min()
                .map_or(NONE, |t| t + schedule.response_timeout_us),
        };
        cx.timers.arm(ch.slot, quic.min(connect).min(response));
    }

    /// The connection's packets since they were last taken, into the statistics of `now`'s
    /// window.
    pub(super) fn take_packets(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let Some(client) = &self.client else { return };
        let s = self.at_end_stats.unwrap_or_else(|| client.stats());
        let total = Packets {
            sent: s.packets_sent,
            received: s.packets_received,
            lost: s.packets_lost,
            retransmitted: s.retransmitted,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
        };
        let delta = total.since(&self.counted);
        self.counted = total;
        let sh = cx.sh;
        if now >= sh.schedule.measure_us && now <= sh.schedule.end_us {
            cx.stats.http3.add_packets(&delta);
        }
    }

    /// One step of the close after the end of the run: what the server sends is read and handed
    /// to the client, only for a GOAWAY (its streams were never processed); nothing is sent and
    /// nothing counted. The connection waits so until the loop's linger bound, so that the
    /// server has the requests sent and answers them before it hears the connection close.
    pub(super) fn linger_step(&mut self, at: Linger, buf: &mut [u8]) -> Linger {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return Linger::Done;
        };
        if self.at_end_stats.is_none() {
            self.at_end_stats = Some(client.stats());
        }
        loop {
            match sock.recv(buf) {
                Ok(n) => {
                    let _ = client.recv(&mut buf[..n], self.peer);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(_) => return Linger::Done,
            }
        }
        while let Some(ev) = client.poll() {
            if let http3::ClientEvent::GoAway { id } = ev {
                self.late_goaway = Some(self.late_goaway.map_or(id, |g| g.min(id)));
            }
        }
        match client.is_closed() {
            true => Linger::Done,
            false => match at {
                Linger::Flushing => Linger::Draining,
                other => other,
            },
        }
    }

    /// Tells the server the connection ends (CONNECTION_CLOSE with H3_NO_ERROR), one datagram
    /// sent if the socket takes it now.
    pub(super) fn say_goodbye(&mut self) {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return;
        };
        if client.is_closed() {
            return;
        }
        client.close(http3::H3_NO_ERROR, b"");
        if let Some(d) = client.send(&mut self.out) {
            let _ = sock.send(&self.out[..d.len]);
        }
    }
}

/// `at` in µs since the run's base instant (0 for an instant before it).
fn us_since(base: Instant, at: Instant) -> u64 {
    at.saturating_duration_since(base).as_micros() as u64
}
