//! The application's calls on a request and its connection: read the request's body, send the
//! response's head and body within flow control, keep the connection alive while it works,
//! close it.

use super::{clocks, ConnId, RequestId, Server, ServerEvent, DATA_FRAME_HEADER};
use crate::error::Error;
use crate::fields::{status_digits, with_status, Field};
use quiche::h3;
use std::time::{Duration, Instant};

impl Server {
    /// Body bytes the response on `id` may send now (flow control and the congestion window,
    /// less the DATA frame's header): how much of a body to read before [`Server::send_body`],
    /// which takes all of it, so nothing read is left to read again. 0: a `Writable` event
    /// says when more may go, as after a `send_body` that took less than offered.
    pub fn capacity(&mut self, id: RequestId) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let room = match conn.quic.stream_capacity(id.stream) {
            Ok(n) => n.saturating_sub(DATA_FRAME_HEADER),
            Err(quiche::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        if room == 0 && !conn.blocked.contains(&id.stream) {
            conn.blocked.push(id.stream);
            clocks::waiting(conn, now);
        }
        Ok(room)
    }

    /// The response's head: `status` (100 to 999) and `fields` (lowercase names, no
    /// connection-specific ones). `end`: no body follows. `Error::Blocked`: flow control has
    /// no room for it now; a `Writable` event says when to try again.
    pub fn send_response(
        &mut self,
        id: RequestId,
        status: u16,
        fields: &[Field<'_>],
        end: bool,
    ) -> Result<(), Error> {
        let digits = status_digits(status);
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let sent = with_status(&digits, fields, |list| {
            h3.send_response(&mut conn.quic, id.stream, list, end)
        })
        .ok_or(Error::TooManyFields)?;
        if let Err(h3::Error::StreamBlocked) = sent {
            conn.blocked.push(id.stream);
            clocks::waiting(conn, now);
        }
        sent?;
        if end {
            clocks::answered(conn, id.stream);
        }
        clocks::waiting(conn, now);
        conn.progress_at = now;
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Some of the response's body: how much flow control took now (maybe 0). When it took
    /// less than `body`, a `Writable` event says when more may go. `end` ends the response
    /// once all of `body` is taken.
    pub fn send_body(&mut self, id: RequestId, body: &[u8], end: bool) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let taken = match h3.send_body(&mut conn.quic, id.stream, body, end) {
            Ok(n) => n,
            Err(h3::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        if taken < body.len() && !conn.blocked.contains(&id.stream) {
            conn.blocked.push(id.stream);
        }
        if end && taken == body.len() {
            clocks::answered(conn, id.stream);
        }
        if !body.is_empty() || end {
            clocks::waiting(conn, now);
        }
        if taken > 0 {
            conn.progress_at = now;
        }
        self.mark_send(id.conn.slot);
        Ok(taken)
    }

    /// Request body bytes into `buf`: how many (0: none waiting now, or the client reset the
    /// stream: a later poll reports it, as a [`ServerEvent::Reset`], behind the events
    /// already queued). What is read moves the body's
    /// deadline ([`crate::Timeouts::body`]).
    pub fn recv_body(&mut self, id: RequestId, buf: &mut [u8]) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let n = match h3.recv_body(&mut conn.quic, id.stream, buf) {
            Ok(n) => n,
            Err(h3::Error::Done) => 0,
            // The client reset the stream while its body came: the read met the reset, which
            // the next poll would no longer report. Told as a poll tells one, so that the
            // application drops the request rather than wait for the rest of its body.
            Err(h3::Error::TransportError(quiche::Error::StreamReset(code))) => {
                if super::resets::client_reset(conn, id.stream) {
                    self.mark_send(id.conn.slot);
                }
                self.events.push_back(ServerEvent::Reset { id, code });
                return Ok(0);
            }
            Err(e) => return Err(e.into()),
        };
        clocks::body_read(conn, id.stream, n, now);
        // The body's end read here, outside a poll: its `BodyEnd` is for the next poll to say
        // (else it waits for the connection's next datagram).
        let finished = n > 0 && conn.quic.stream_finished(id.stream);
        // Reading may open the window: a MAX_STREAM_DATA to send.
        match finished {
            true => self.mark(id.conn.slot),
            false => self.mark_send(id.conn.slot),
        }
        Ok(n)
    }

    /// Keeps the connection from QUIC's idle timeout while the application works on one of
    /// its requests with nothing to send (a program, an upstream): a PING once half the
    /// connection's idle timeout has passed since the last, whose acknowledgement restarts
    /// both sides' idle timers. Meant to be called every so often (flint serve: its sweep);
    /// more often costs nothing.
    pub fn keep_alive(&mut self, conn: ConnId) {
        let now = Instant::now();
        let ours = self.config.idle_timeout;
        let Ok(c) = self.conn(conn) else {
            return;
        };
        let theirs = (c.quic.peer_transport_params()).map_or(0, |p| p.max_idle_timeout);
        let idle = match theirs {
            0 => ours,
            ms => ours.min(Duration::from_millis(ms)),
        };
        if now.saturating_duration_since(c.pinged_at) < idle / 2 {
            return;
        }
        c.pinged_at = now;
        if c.quic.send_ack_eliciting().is_ok() {
            self.mark_send(conn.slot);
        }
    }

    /// Closes a connection with an HTTP/3 code (its `Closed` event follows once QUIC has
    /// sent the CONNECTION_CLOSE and drained).
    pub fn close(&mut self, conn: ConnId, code: u64, reason: &[u8]) -> Result<(), Error> {
        let c = self.conn(conn)?;
        let _ = c.quic.close(true, code, reason);
        self.mark_send(conn.slot);
        Ok(())
    }
}
