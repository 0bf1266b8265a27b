//! A graceful end (RFC 9114 5.2): the GOAWAY, and when a connection that sent one may close.

use super::{Conn, Server};
use crate::H3_NO_ERROR;

impl Server {
    /// A graceful end (RFC 9114 5.2): a GOAWAY on every connection naming the first request
    /// stream not handed out yet, so the requests under way are answered and later ones are
    /// refused with H3_REQUEST_REJECTED (the client sends them again elsewhere); each
    /// connection then closes with H3_NO_ERROR by itself once every response before the
    /// GOAWAY has been sent and acknowledged (closing earlier would drop what QUIC still
    /// holds of them). A connection still in its handshake is closed at once, and no new
    /// one is accepted (a client's Initial is counted as refused).
    pub fn go_away(&mut self) {
        self.going_away = true;
        for slot in 0..self.slots.len() as u32 {
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                continue;
            };
            // Closing already (a deadline passed): nothing to say.
            if conn.quic.local_error().is_some() || conn.quic.is_draining() {
                continue;
            }
            if conn.h3.is_none() {
                let _ = conn.quic.close(true, H3_NO_ERROR, b"");
                self.mark_send(slot);
                continue;
            }
            if conn.goaway.is_some() {
                continue;
            }
            conn.goaway = Some(conn.last_request.map_or(0, |s| s + 4));
            self.counts.goaways_sent += u64::from(write_goaway(conn));
            // Closed once the GOAWAY is out: closing now would drop it unsent.
            conn.close_when_sent |= goaway_done(conn);
            self.mark_send(slot);
        }
    }
}

/// Whether every request stream `conn` handed out is done with: QUIC has let go of it (its
/// response sent and acknowledged, its request read to the end) or the client stopped it.
/// Walks the streams once over the connection's life (`settled_below` only moves up).
pub(super) fn settled(conn: &mut Conn) -> bool {
    let Some(last) = conn.last_request else {
        return true;
    };
    while conn.settled_below <= last {
        match conn.quic.stream_capacity(conn.settled_below) {
            // Collected (or never opened: a stream ID the client skipped), or stopped.
            Err(quiche::Error::InvalidStreamState(_) | quiche::Error::StreamStopped(_)) => {
                conn.settled_below += 4
            }
            _ => return false,
        }
    }
    true
}

/// After a GOAWAY: whether it is written and every request stream below it is done with, so
/// that the connection may close once what is queued is sent. A GOAWAY the control stream had
/// no room for is not queued: closing would go without it (`write_goaway` tries again at the
/// next datagram received, and this is asked again then). Streams handed out are `settled`;
/// one seen and not handed out yet is done with unless bytes of it wait unread by HTTP/3: a
/// request whose datagram came in the turn the keep-alive was acted on (polled after it) is
/// answered first, while a header block left unfinished, already read as far as it goes,
/// holds nothing (it would let a client keep the connection past its keep-alive).
pub(super) fn goaway_done(conn: &mut Conn) -> bool {
    let Some(first) = conn.goaway.filter(|_| conn.goaway_written) else {
        return false;
    };
    let quic = &conn.quic;
    let unread = |h: &super::head_budget::Head| h.stream < first && quic.stream_readable(h.stream);
    !conn.heads.iter().any(unread) && settled(conn)
}

/// Writes `conn`'s GOAWAY if it is not written yet and the control stream has room (a full
/// congestion window leaves none: then the next datagram received tries again). True if
/// written now.
pub(super) fn write_goaway(conn: &mut Conn) -> bool {
    let (Some(id), Some(h3)) = (conn.goaway, conn.h3.as_mut()) else {
        return false;
    };
    if conn.goaway_written {
        return false;
    }
    conn.goaway_written = h3.send_goaway(&mut conn.quic, id).is_ok();
    conn.goaway_written
}
