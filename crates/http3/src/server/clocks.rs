//! A server connection's deadlines besides QUIC's idle timeout ([`crate::Timeouts`]), which
//! any packet restarts and so bounds nothing a client that PINGs wants to hold:
//!
//! - the handshake, and each request stream's header block from the stream's first byte
//!   (header timeout): a handshake past it is closed (a 0-RTT one too, whose HTTP/3 is set up
//!   before it is done), a stream reset with H3_REQUEST_INCOMPLETE;
//! - a connection done with its handshake and with no whole request under way (keep-alive
//!   timeout; a stream still in its header block does not count): a GOAWAY naming the first
//!   stream not seen, then a CONNECTION_CLOSE with H3_NO_ERROR once it is sent and every
//!   stream seen before it is done with. A request whose datagram came in the turn the
//!   keep-alive was acted on (a server late to its deadline) is seen but not handed out yet:
//!   it is answered before the close, not cut by it (a header block left unfinished holds
//!   nothing: it has the header timeout). A 0-RTT connection's keep-alive counts
//!   from the end of its handshake, not from its ClientHello: its requests may come in a
//!   later datagram than the ClientHello, and the handshake has its own deadline;
//! - responses under way that make no progress (send timeout): nothing more taken by flow
//!   control and no stream let go of by QUIC (acknowledged whole), as when a client does not
//!   acknowledge or does not open its windows: the streams are reset and the connection
//!   closed, so what they held is freed. The clock runs only while the server has bytes
//!   waiting on the client (a response held back by flow control, or gone whole to QUIC and
//!   not let go of): a request still being read, or a response not begun, waits on no one
//!   here. A response sent whole while its request's body still arrives cannot be let go of
//!   by QUIC before the body ends, so for it progress is the client acknowledging anything
//!   of ours: at each send deadline while only such responses wait, acknowledged bytes that
//!   moved since the last (or since the answer) renew the clock, and a PING goes out so that a
//!   client with nothing left to acknowledge has something to; a client that acknowledged
//!   nothing over a deadline that had its PING is closed. A slow upload whose response is
//!   done thus meets its body's deadline, and a client that uploads but never acknowledges
//!   the send timeout (at most twice it);
//! - each request body (body timeout, as flint serve's HTTP/1.1 and HTTP/2 bodies): due
//!   within the timeout of its head, plus a second per `body_min_rate` bytes read of it
//!   (Apache's mod_reqtimeout `body=10,MinRate=500`), with no longer gap between its bytes
//!   (nginx's `client_body_timeout`). Past it the server stops reading: STOP_SENDING with
//!   H3_NO_ERROR if the response went whole to QUIC (RFC 9114 4.1.1: the client keeps it),
//!   else (held back by flow control, or not begun: an answer that waited for the body) the
//!   stream reset both ways with H3_REQUEST_INCOMPLETE and a `Reset` event, so the caller
//!   drops what it held for the request. Without it a body that never ended held its
//!   stream, and so the connection, until the send timeout.
//!
//! Each connection keeps when its clocks started; nothing here runs per request but
//! [`note_stream`] (once a readable stream) and [`update`] once a datagram, each a few comparisons (and, while
//! responses wait on acknowledgements, QUIC's count of acknowledged bytes, a sum over the
//! connection's streams), the walk of the answered streams only once that count moved or at
//! a deadline, and a body's clock noted at its head, moved by each read of it and dropped at
//! its end.

use super::goaway::{goaway_done, settled, write_goaway};
use super::head_budget::Head;
use super::{Conn, ConnId, RequestId, ServerCounts, ServerEvent};
use crate::config::Timeouts;
use crate::{H3_NO_ERROR, H3_REQUEST_CANCELLED, H3_REQUEST_INCOMPLETE};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// A request body still arriving: its stream, when its head came, when its latest bytes were
/// read, how many have been, and whether its response has gone whole to QUIC. A connection
/// keeps at most its stream limit of them.
#[derive(Debug, Clone, Copy)]
pub(super) struct BodyClock {
    stream: u64,
    since: Instant,
    latest: Instant,
    received: u64,
    answered: bool,
}

impl BodyClock {
    /// When the rest of the body is due: `t.body` after its latest bytes, and no later than
    /// `t.body` after its head plus a second per `t.body_min_rate` bytes read (0: no rate).
    fn deadline(&self, t: &Timeouts) -> Instant {
        let gap = self.latest + t.body;
        if t.body_min_rate == 0 {
            return gap;
        }
        let earned = Duration::from_secs_f64(self.received as f64 / t.body_min_rate as f64);
        gap.min(self.since + t.body + earned)
    }
}

/// Whether `stream`'s request body is under way (its head handed out, its end not come).
pub(super) fn body_under_way(conn: &Conn, stream: u64) -> bool {
    conn.bodies.iter().any(|b| b.stream == stream)
}

/// A request's head said a body follows: its clock starts now.
pub(super) fn body_started(conn: &mut Conn, stream: u64, now: Instant) {
    conn.bodies.push(BodyClock {
        stream,
        since: now,
        latest: now,
        received: 0,
        answered: false,
    });
}

/// `stream`'s response has gone whole to QUIC (its end taken): a late body no longer cuts it,
/// and the send clock waits for its acknowledgement.
pub(super) fn answered(conn: &mut Conn, stream: u64) {
    if let Some(b) = conn.bodies.iter_mut().find(|b| b.stream == stream) {
        b.answered = true;
        // Its body still arrives: what the client acknowledges from here is its progress.
        conn.acked_at_answer = conn.quic.stats().acked_bytes;
    }
    if !conn.unacked.contains(&stream) {
        conn.unacked.push(stream);
    }
}

/// The server has just handed bytes to QUIC, or been held back by flow control: the send
/// clock runs, from now if it was stopped.
pub(super) fn waiting(conn: &mut Conn, now: Instant) {
    if !conn.waiting {
        conn.waiting = true;
        conn.progress_at = now;
    }
}

/// `n` bytes of `stream`'s body were read.
pub(super) fn body_read(conn: &mut Conn, stream: u64, n: usize, now: Instant) {
    if n == 0 {
        return;
    }
    if let Some(b) = conn.bodies.iter_mut().find(|b| b.stream == stream) {
        b.latest = now;
        b.received += n as u64;
    }
}

/// The client reset `stream`: nothing of it is waited for any more (its send room, its
/// body's deadline; a header block is ended with the stream, `resets::client_reset`).
pub(super) fn stream_reset(conn: &mut Conn, stream: u64) {
    conn.blocked.retain(|&s| s != stream);
    body_ended(conn, stream);
}

/// `stream`'s body ended (whole, or reset by the client): no deadline for it any more.
pub(super) fn body_ended(conn: &mut Conn, stream: u64) {
    conn.bodies.retain(|b| b.stream != stream);
}

/// Notes the request streams a datagram opened, as its readable `stream` is met: each is to
/// have its header block within the header timeout from now. One high-water mark says which
/// are new: a stream at or above it opens every request stream below it too (RFC 9000 2.1),
/// so those not seen yet are noted with it (a client may skip numbers, and `readable` gives a
/// datagram's streams in no set order). QUIC's stream limit bounds how far above the mark a
/// stream can be, so the gap noted is at most that many; a number never used is let go of at
/// its header deadline.
pub(super) fn note_stream(conn: &mut Conn, stream: u64, now: Instant) {
    // Client-initiated bidirectional streams are the requests (RFC 9114 6.1).
    if !stream.is_multiple_of(4) || stream < conn.next_stream {
        return;
    }
    let mut s = conn.next_stream;
    while s <= stream {
        conn.heads.push(Head::new(s, now));
        s += 4;
    }
    conn.next_stream = stream + 4;
}

/// Brings the keep-alive and send clocks up to date with what the connection holds now;
/// `recheck` (at a deadline) walks the answered streams even if no acknowledgement came.
pub(super) fn update(conn: &mut Conn, now: Instant, recheck: bool) {
    if conn.h3.is_none() {
        return;
    }
    // A handshake under way (a 0-RTT connection's HTTP/3 is set up at its ClientHello) is not
    // quiet: it has the handshake's deadline, and its requests may still be on their way.
    let busy = !conn.quic.is_established() || !conn.blocked.is_empty() || !settled(conn);
    // A response let go of by QUIC (acknowledged whole, or stopped by the client) is
    // progress. Acknowledgements are what let go of them, so the list is walked only once
    // the client's count of them moved (a STOP_SENDING alone waits for the deadline's walk):
    // a datagram carrying only request bodies costs no walk.
    if !conn.unacked.is_empty() {
        let acked = conn.quic.stats().acked_bytes;
        if recheck || acked != conn.acked {
            conn.acked = acked;
            let unacked = conn.unacked.len();
            let quic = &mut conn.quic;
            conn.unacked.retain(|&s| {
                !matches!(
                    quic.stream_capacity(s),
                    Err(quiche::Error::InvalidStreamState(_) | quiche::Error::StreamStopped(_))
                )
            });
            if conn.unacked.len() != unacked {
                conn.progress_at = now;
            }
        }
    }
    // The send clock runs while bytes wait on the client (held back by flow control, or
    // answered and not let go of); see `expire` for responses whose body still arrives.
    let waiting = !conn.blocked.is_empty() || !conn.unacked.is_empty();
    if waiting && !conn.waiting {
        conn.progress_at = now;
        conn.probed = false;
    }
    conn.waiting = waiting;
    // Only a whole request under way holds the keep-alive clock: a stream still in its
    // header block has the header timeout, and letting it hold the clock would let a client
    // that opens one now and then (each reset at its header timeout) keep the connection.
    if busy {
        conn.quiet_since = None;
    } else if conn.quiet_since.is_none() {
        conn.quiet_since = Some(now);
    }
}

/// When the connection's earliest deadline is, if it has one (none once it is closing).
pub(super) fn due(conn: &Conn, t: &Timeouts) -> Option<Instant> {
    if conn.quic.local_error().is_some() || conn.quic.is_draining() || conn.quic.is_closed() {
        return None;
    }
    let handshake = handshaking(conn).then(|| conn.accepted_at + t.header);
    if conn.h3.is_none() {
        return handshake;
    }
    let header = conn.heads.first().map(|h| h.since + t.header);
    let keep_alive = (conn.quiet_since)
        .filter(|_| conn.goaway.is_none())
        .map(|since| since + t.keep_alive);
    let send = conn.waiting.then(|| conn.progress_at + t.send);
    let body = conn.bodies.iter().map(|b| b.deadline(t)).min();
    [handshake, header, keep_alive, send, body]
        .into_iter()
        .flatten()
        .min()
}

/// The handshake is not done: no HTTP/3 yet, or a 0-RTT connection's HTTP/3 before it.
fn handshaking(conn: &Conn) -> bool {
    conn.h3.is_none() || !conn.quic.is_established()
}

/// Acts on every deadline of the connection `id` that `now` has passed, counting each; a
/// request whose response is cut by its body's deadline gets a `Reset` event in `events`.
pub(super) fn expire(
    conn: &mut Conn,
    id: ConnId,
    t: &Timeouts,
    now: Instant,
    counts: &mut ServerCounts,
    events: &mut VecDeque<ServerEvent>,
) {
    if handshaking(conn) && conn.accepted_at + t.header <= now {
        let _ = conn.quic.close(false, 0x0, b"handshake timeout");
        counts.handshake_timeouts += 1;
        return;
    }
    if conn.h3.is_none() {
        return;
    }
    let mut heads_reset = false;
    while let Some(&Head { stream, since, .. }) = conn.heads.first() {
        if since + t.header > now {
            break;
        }
        // A stream already gone (reset by the client, or a number it skipped) is not counted.
        // (`end` takes it out of `heads`.)
        let reset = super::ending::end(conn, stream, H3_REQUEST_INCOMPLETE);
        body_ended(conn, stream);
        counts.header_timeouts += u64::from(reset.unwrap_or(false));
        heads_reset = true;
    }
    expire_bodies(conn, id, t, now, counts, events);
    if conn.waiting && conn.progress_at + t.send <= now && !acknowledging(conn, now) {
        if let Some(last) = conn.last_request {
            let mut s = conn.settled_below;
            while s <= last {
                let _ =
                    (conn.quic).stream_shutdown(s, quiche::Shutdown::Write, H3_REQUEST_CANCELLED);
                s += 4;
            }
        }
        conn.blocked.clear();
        conn.unacked.clear();
        conn.waiting = false;
        let _ = conn.quic.close(true, H3_NO_ERROR, b"send timeout");
        counts.send_timeouts += 1;
        return;
    }
    if conn.goaway.is_none() && conn.quiet_since.is_some_and(|q| q + t.keep_alive <= now) {
        // Every stream seen is processed (RFC 9114 5.2: the GOAWAY names the first one not).
        conn.goaway = Some(conn.next_stream);
        counts.goaways_sent += u64::from(write_goaway(conn));
        conn.close_when_sent |= goaway_done(conn);
        conn.quiet_since = None;
        counts.keep_alive_closes += 1;
    } else if conn.goaway.is_some() && heads_reset {
        // Streams the GOAWAY waited for never came whole (reset above).
        conn.close_when_sent |= goaway_done(conn);
    }
}

/// At a send deadline: whether the client has shown it acknowledges while every response
/// waiting is one whose request's body still arrives (QUIC cannot let go of those yet). Then
/// acknowledged bytes that moved since the answer or the last deadline, or a first deadline
/// without a PING, renew the clock, and a PING gives the client something to acknowledge.
fn acknowledging(conn: &mut Conn, now: Instant) -> bool {
    let bodies = &conn.bodies;
    let uploads_only = conn.blocked.is_empty()
        && (conn.unacked.iter()).all(|&s| bodies.iter().any(|b| b.stream == s));
    if !uploads_only {
        return false;
    }
    let acked = conn.quic.stats().acked_bytes;
    let moved = acked != conn.acked_at_answer;
    if !moved && conn.probed {
        return false;
    }
    conn.acked_at_answer = acked;
    conn.probed = true;
    conn.progress_at = now;
    let _ = conn.quic.send_ack_eliciting();
    true
}

/// Stops reading each request body past its deadline (see the module's comment).
fn expire_bodies(
    conn: &mut Conn,
    id: ConnId,
    t: &Timeouts,
    now: Instant,
    counts: &mut ServerCounts,
    events: &mut VecDeque<ServerEvent>,
) {
    let mut i = 0;
    while i < conn.bodies.len() {
        if conn.bodies[i].deadline(t) > now {
            i += 1;
            continue;
        }
        let body = conn.bodies.swap_remove(i);
        let stream = body.stream;
        counts.body_timeouts += 1;
        // A response not whole yet is cut with the request: the caller is told, so it lets
        // go of what it kept to send (or of the request it was reading).
        if !body.answered {
            let _ = super::ending::end(conn, stream, H3_REQUEST_INCOMPLETE);
            body_ended(conn, stream);
            let id = RequestId { conn: id, stream };
            let code = H3_REQUEST_INCOMPLETE;
            events.push_back(ServerEvent::Reset { id, code });
        } else {
            let _ = (conn.quic).stream_shutdown(stream, quiche::Shutdown::Read, H3_NO_ERROR);
        }
    }
}
