//! Resetting a request's stream: at once, or once what it was given has been sent and
//! acknowledged (a response cut short); or only its body's side, its response still going.

use super::{clocks, Conn, RequestId, Server};
use crate::error::Error;

impl Server {
    /// Resets the request's stream both ways with `code` (an HTTP/3 error code).
    pub fn reset(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        shut_stream(conn, id.stream, code)?;
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Resets the request's stream as [`Server::reset`] does, but only once what it was given
    /// has been handed to the network (a response cut short: its head and the body bytes that
    /// came reach the client, then the reset says the rest never will).
    pub fn reset_when_sent(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        if !conn.reset_when_sent.iter().any(|r| r.stream == id.stream) {
            conn.reset_when_sent.push(ResetWhenSent {
                stream: id.stream,
                code,
                sent_at: None,
            });
        }
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Stops reading the request's body (STOP_SENDING with `code`, RFC 9114 4.1.2: H3_NO_ERROR
    /// when the response is complete without the rest): its response still goes, and the body's
    /// deadline ends with it.
    pub fn stop_sending(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        match conn
            .quic
            .stream_shutdown(id.stream, quiche::Shutdown::Read, code)
        {
            Ok(()) | Err(quiche::Error::Done) => {}
            Err(e) => return Err(e.into()),
        }
        clocks::body_ended(conn, id.stream);
        self.mark_send(id.conn.slot);
        Ok(())
    }
}

/// A cut response's stream, reset once what it was given has been acknowledged.
pub(super) struct ResetWhenSent {
    pub(super) stream: u64,
    pub(super) code: u64,
    /// The connection's acknowledged bytes once all the stream held was sent.
    pub(super) sent_at: Option<u64>,
}

/// Resets the streams whose bytes an acknowledgement has covered since they were sent.
pub(super) fn reset_acknowledged(conn: &mut Conn) {
    if !conn.reset_when_sent.iter().any(|r| r.sent_at.is_some()) {
        return;
    }
    let acked = conn.quic.stats().acked_bytes;
    let mut i = 0;
    while i < conn.reset_when_sent.len() {
        let r = &conn.reset_when_sent[i];
        if r.sent_at.is_some_and(|at| acked > at) {
            let (stream, code) = (r.stream, r.code);
            conn.reset_when_sent.swap_remove(i);
            let _ = shut_stream(conn, stream, code);
        } else {
            i += 1;
        }
    }
}

/// Shuts the stream both ways with `code`, and forgets what was kept for it.
pub(super) fn shut_stream(conn: &mut Conn, stream: u64, code: u64) -> Result<(), Error> {
    for dir in [quiche::Shutdown::Read, quiche::Shutdown::Write] {
        match conn.quic.stream_shutdown(stream, dir, code) {
            Ok(()) | Err(quiche::Error::Done) => {}
            Err(e) => return Err(e.into()),
        }
    }
    conn.blocked.retain(|&s| s != stream);
    // Its body's clock goes with it: once the read side is shut, quiche keeps nothing
    // more of the stream, so no event would ever end that clock (a client could grow
    // the list past the stream limit by having its streams reset, and the expiry would
    // count timeouts and report resets for streams long gone).
    clocks::body_ended(conn, stream);
    Ok(())
}
