//! HTTP/2's side of a request a program answers (`crate::gateway`): once the program's head is
//! checked (`gateway/head.rs`), the response's HEADERS are submitted and its body follows as
//! DATA frames from a per-stream buffer as the output arrives (`Body::Deferred` while the
//! buffer is empty, `resume_data` when it fills); the stream ends with the program's output.
//! The buffer holds at most `OUTPUT_WINDOW` (the program's stdout is not read past it), so a
//! client that opens no window holds the program, not the server's memory. A request body is
//! kept as it arrives (up to `max_body_bytes`) and written to the program's stdin, its
//! stream's window reopened only by what the program took (`body_taken`), so a program that
//! reads nothing holds one window of it; one without `content-length` is kept whole before
//! its program starts (`H2::awaiting`), so the program is told its length.

use std::time::Instant;

use http2::StreamId;

use super::exchange::{Exchange, State};
use super::fields;
use super::reply::{drop_kept_body, head_fields, submit_reply};
use super::streams::Out;
use super::H2;
use crate::gateway::head::{HeadError, Location};
use crate::protocol::gateway::{End, OUTPUT_WINDOW};
use crate::protocol::Worker;
use crate::respond::Output;

fn exchange(h: &H2, id: StreamId) -> Option<&Exchange> {
    h.streams
        .slots
        .iter()
        .find(|s| s.id == id)
        .and_then(|s| s.gateway.as_deref())
}

/// Request body bytes of stream `id` not yet handed to its program.
pub(in crate::protocol) fn body(h: &H2, id: StreamId) -> &[u8] {
    (h.streams.slots.iter())
        .find(|s| s.id == id)
        .map_or(&[], |s| s.body_buf.bytes())
}

/// The whole body of `id` is handed over (or the stream is gone).
pub(in crate::protocol) fn body_done(h: &H2, id: StreamId) -> bool {
    (h.streams.slots.iter())
        .find(|s| s.id == id)
        .is_none_or(|s| s.ended && s.body_buf.is_empty())
}

/// `n` bytes of [`body`] were taken at `now`: those the stream's window held back reopen it,
/// and the client's body clock starts again then (while its program held the window, the
/// client could not send: `H2::body_deadline` leaves such a stream out).
pub(in crate::protocol) fn body_taken(h: &mut H2, id: StreamId, n: usize, now: Instant) {
    if let Some(s) = h.streams.slots.iter_mut().find(|s| s.id == id) {
        // The held bytes are the buffer's last (`Stream::unconsumed`).
        let ahead = s.body_buf.len() as u64 - s.unconsumed;
        let reopen = (n as u64).saturating_sub(ahead).min(s.unconsumed);
        s.unconsumed -= reopen;
        s.body_buf.consume(n);
        if reopen > 0 {
            s.restart_body_clock(now);
        }
        let _ = h.framer.consume(id, reopen as usize);
    }
}

/// The rest of stream `i`'s request body is not wanted: dropped, and its window reopened
/// (the client's body clock starting again at `now` if its program held it).
pub(super) fn drop_body(h: &mut H2, i: usize, now: Instant) {
    let s = &mut h.streams.slots[i];
    if drop_kept_body(&mut h.framer, s) > 0 {
        s.restart_body_clock(now);
    }
}

pub(in crate::protocol) fn alive(h: &H2, id: StreamId) -> bool {
    exchange(h, id).is_some_and(|g| !g.done)
}

pub(in crate::protocol) fn wants_output(h: &H2, id: StreamId) -> bool {
    exchange(h, id).is_some_and(|g| {
        !g.done
            && (matches!(g.state, State::Discard)
                || ((g.buf.len() - g.start) as u64) < OUTPUT_WINDOW)
    })
}

/// Output of stream `id`'s program.
pub(in crate::protocol) fn output(
    h: &mut H2,
    id: StreamId,
    data: &[u8],
    w: &mut Worker,
) -> Result<(), HeadError> {
    let Some(i) = h.streams.index(id) else {
        return Ok(());
    };
    let Some(g) = h.streams.slots[i].gateway.as_mut() else {
        return Ok(());
    };
    if !matches!(g.state, State::Head) {
        push_body(h, i, id, data);
        return Ok(());
    }
    let Some((parsed, rest)) = g.head.feed(data)? else {
        return Ok(());
    };
    if let Some(Location::Local(path)) = &parsed.location {
        let out = Output::Fields {
            head: head_fields(&mut h.head),
            body: &mut h.response,
        };
        let reply = g.answer_local(path, w, out);
        let is_head = g.is_head;
        submit_reply(h, i, id, reply, is_head, &w.date);
        return Ok(());
    }
    let (no_body, length) = g.head_taken(&parsed);
    let slot = &mut h.streams.slots[i];
    slot.out = Out::Gateway;
    slot.left = 0;
    // The program's head as it was checked: its fields handed over as they are.
    let code = fields::status_code(parsed.status);
    let mut digits = [0u8; 20];
    let length = length.map(|n| wire::head::format_u64(n, &mut digits));
    let server = (w.responder.server_name(), w.responder.alt_svc());
    // As many fields as the head has, in the connection's reused room (nghttp2 copies them).
    let mut head = fields::borrow_room(&mut h.field_room);
    fields::gateway_fields(&code, &w.date, server, &parsed.fields, length, &mut head);
    let submitted = h.framer.submit_response(id, &head, !no_body);
    h.field_room = fields::give_back(head);
    if submitted.is_err() {
        // Not open for a response: nothing was queued.
        h.streams.release(i);
    }
    push_body(h, i, id, &rest);
    Ok(())
}

/// Body bytes into the stream's buffer (up to a `Content-Length`), and the stream resumed.
fn push_body(h: &mut H2, i: usize, id: StreamId, data: &[u8]) {
    let slot = &mut h.streams.slots[i];
    let Some(g) = slot.gateway.as_mut() else {
        return;
    };
    let n = g.take_body(data);
    if n > 0 {
        slot.left += n as u64;
        let _ = h.framer.resume_data(id);
    }
}

/// Stream `id`'s program is done.
pub(in crate::protocol) fn end(
    h: &mut H2,
    id: StreamId,
    end: End,
    w: &mut Worker,
    peer: std::net::SocketAddr,
) {
    let Some(i) = h.streams.index(id) else {
        return;
    };
    let Some(g) = h.streams.slots[i].gateway.as_mut() else {
        return;
    };
    match g.ended(end, w) {
        Some(status) => {
            let out = Output::Fields {
                head: head_fields(&mut h.head),
                body: &mut h.response,
            };
            let reply = w.responder.error(status, &w.date, false, out);
            g.rec.status = reply.status;
            g.rec.body_bytes = reply.body_bytes;
            let is_head = g.is_head;
            submit_reply(h, i, id, reply, is_head, &w.date);
        }
        // What came is framed, then END_STREAM (or RST_STREAM if cut).
        None if !matches!(end, End::Abandoned) => {
            let _ = h.framer.resume_data(id);
        }
        None => {}
    }
    if let Some(g) = h.streams.slots[i].gateway.as_ref() {
        g.rec.finish(peer.ip(), w);
    }
    // Nothing takes the rest of its body now.
    drop_body(h, i, w.now);
}
