//! Resetting a request's stream: now, or once what it was given has been sent and
//! acknowledged (a response cut short); or only its body's side, its response still going.
//! And what a client's reset of a request's side leaves this side to do.

use super::{clocks, Conn, RequestId, Server};
use crate::error::Error;

impl Server {
    /// Resets the request's stream with `code` (an HTTP/3 error code): STOP_SENDING at once,
    /// our RESET_STREAM once the client's side has ended (its RESET_STREAM answering the
    /// STOP_SENDING, or its FIN). While its request is still arriving (a gateway failing
    /// during an upload) that is about a round trip, and response bytes already queued keep
    /// going meanwhile; a client that ignores STOP_SENDING keeps the stream, within its own
    /// stream limit. A caller that drops a response before its end resets its stream: else
    /// QUIC keeps it (and the client's stream credit) until the connection ends.
    pub fn reset(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        shut_stream(conn, id.stream, code)?;
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Resets the request's stream as [`Server::reset`] does (our RESET_STREAM still waiting
    /// for the client's side to end), but only once what it was given has been handed to the
    /// network (a response cut short: its head and the body bytes that came reach the client,
    /// then the reset says the rest never will).
    pub fn reset_when_sent(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        if !conn.reset_when_sent.iter().any(|r| r.stream == id.stream) {
            conn.reset_when_sent.push(ResetWhenSent {
                stream: id.stream,
                code,
                sent_at: None,
                pinged: false,
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
    /// The connection's acknowledged bytes once all the stream held was sent, then at each
    /// acknowledgement since.
    pub(super) sent_at: Option<u64>,
    /// An acknowledgement came since all the stream held was sent, and a PING went after it.
    pub(super) pinged: bool,
}

/// Resets the streams whose bytes an acknowledgement has covered since they were sent.
///
/// quiche says how many bytes were acknowledged, not which packets, so one acknowledgement
/// is not proof: the client may have sent it before the last of the stream's bytes reached
/// it (it acknowledged an earlier packet), and a reset that follows at once can reach the
/// client in the same read as those bytes, which then drops them unread (a reset stream's
/// data is discarded, RFC 9000 3.2). So the reset waits for a second acknowledgement, asked
/// for by a PING sent after the first: that one the client sent after reading every packet
/// before the PING, the stream's bytes among them (loss aside: a lost packet is resent, and
/// the reset may still overtake it).
pub(super) fn reset_acknowledged(conn: &mut Conn) {
    if !conn.reset_when_sent.iter().any(|r| r.sent_at.is_some()) {
        return;
    }
    let acked = conn.quic.stats().acked_bytes;
    let (mut i, mut ping) = (0, false);
    while i < conn.reset_when_sent.len() {
        let r = &mut conn.reset_when_sent[i];
        match r.sent_at {
            Some(at) if acked > at && r.pinged => {
                let (stream, code) = (r.stream, r.code);
                conn.reset_when_sent.swap_remove(i);
                let _ = shut_stream(conn, stream, code);
                continue;
            }
            Some(at) if acked > at => {
                r.pinged = true;
                r.sent_at = Some(acked);
                ping = true;
            }
            _ => {}
        }
        i += 1;
    }
    if ping {
        // Sent by the connection's next turn (a receive marks it to send).
        let _ = conn.quic.send_ack_eliciting();
    }
}

/// Resets `stream` both ways with `code` (our side once the client's has ended:
/// `ending.rs`), and forgets what the connection waited for of it. False if QUIC had no
/// such stream.
pub(super) fn shut_stream(conn: &mut Conn, stream: u64, code: u64) -> Result<bool, Error> {
    let existed = super::ending::end(conn, stream, code)?;
    // Its body's clock goes with it: once the read side is shut, quiche keeps nothing
    // more of the stream, so no event would ever end that clock (a client could grow
    // the list past the stream limit by having its streams reset, and the expiry would
    // count timeouts and report resets for streams long gone).
    clocks::body_ended(conn, stream);
    Ok(existed)
}

/// The client reset `stream`'s request side, as a poll or a read of its body found. One
/// still in its header block carries no request and nothing will answer it: this side ends
/// it too (else QUIC would keep it, and HTTP/3 the part of the block it read, until the
/// connection ends). One handed out has its response left to the caller, to finish or to
/// reset (a caller that drops it must reset it: a stream whose response is never ended is
/// never collected); HTTP/3's state goes once QUIC lets go of it. True: something to send.
pub(super) fn client_reset(conn: &mut Conn, stream: u64) -> bool {
    let unanswerable = conn.heads.iter().any(|h| h.stream == stream);
    clocks::stream_reset(conn, stream);
    // (`shut_stream` takes a header block's stream out of `heads`, keeping what it holds
    // charged until HTTP/3 lets go of it.)
    if unanswerable {
        let _ = shut_stream(conn, stream, crate::H3_REQUEST_INCOMPLETE);
    } else {
        super::ending::watch(conn, stream);
    }
    unanswerable
}
