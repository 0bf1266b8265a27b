//! A reply submitted on its stream: the head handed to nghttp2 as fields (a cached file's
//! prebuilt ones without a copy, others as the responder or the gateway wrote them) and the
//! body the stream's DATA frames will carry (shared, a file range, or the arena). Apart from
//! `h2.rs` because the responder's answers and the gateways' heads both end here.

use std::rc::Rc;

use http2::{Header, Session, StreamId};

use super::fields::{self, MAX_FIELDS};
use super::streams::{Out, Stream, Streams};
use super::H2;
use crate::respond::{Body, Reply};
use crate::response::{Fields, Head};

/// The connection's reused head fields (present while it holds its request storage).
pub(super) fn head_fields(head: &mut Option<Box<Fields>>) -> &mut Fields {
    head.get_or_insert_with(|| Box::new(Fields::new()))
}

/// Submits the reply on stream `id` (slot `i`): its head (`Date` is `date`), the fields the
/// responder wrote in `h.head` with it or before it; and its body, or the generated body the
/// responder wrote in `h.response`.
pub(super) fn submit_reply(
    h: &mut H2,
    i: usize,
    id: StreamId,
    reply: Reply,
    no_body: bool,
    date: &[u8],
) {
    let Reply {
        head, body, status, ..
    } = reply;
    let written: &Fields = head_fields(&mut h.head);
    let code;
    let mut fields = [Header::new(b"", b""); MAX_FIELDS + 1];
    let n = match &head {
        // A cached file's head: its prebuilt fields, nothing read.
        Head::Cached(prebuilt, cached) => {
            // SAFETY: nghttp2 may read NO_COPY values until it says the frame was sent (or
            // refused). The slot of stream `id` keeps `prebuilt` (an `Rc` of immutable bytes)
            // from below until nghttp2 says its HEADERS was sent (`on_headers_sent`); a stream
            // released before that hands it to `Streams::unsent_heads`, kept until nghttp2's
            // queue is empty; and `H2` drops its session (`framer`) before its slots
            // (`streams`), so no read outlives the `Rc`.
            unsafe { fields::cached_fields(date, prebuilt, *cached, written, &mut fields) }
        }
        Head::Written => {
            code = fields::status_code(status);
            fields::written_fields(&code, written, &mut fields)
        }
    };
    let page_body: &[u8] = &h.response;
    let s = &mut h.streams;
    let mut own = 0;
    let (body, left) = match body {
        _ if no_body => (Out::None, 0),
        Body::Shared { data, start, len } => {
            if Rc::strong_count(&data) == 1 {
                own = len as u64; // generated for this request (a cached body is shared)
            }
            (Out::Shared { data, start }, len as u64)
        }
        Body::File { file, offset, len } => (Out::File { file, offset }, len),
        Body::None if page_body.is_empty() => (Out::None, 0),
        Body::None => {
            let start = s.arena.len();
            s.arena.extend_from_slice(page_body);
            s.arena_users += 1;
            own = page_body.len() as u64;
            (Out::Arena { start }, page_body.len() as u64)
        }
    };
    let slot = &mut s.slots[i];
    slot.trim(); // the request is answered: its fields are not needed any more
    slot.answered = true;
    slot.out = body;
    let earlier = match &head {
        Head::Cached(prebuilt, _) => slot.head.replace(Rc::clone(prebuilt)),
        Head::Written => None,
    };
    slot.left = left;
    slot.own = own;
    s.generated += own;
    if let Some(earlier) = earlier {
        // (One answer a stream: never seen, but a HEADERS still queued keeps what it reads.)
        s.keep_unsent_head(earlier);
    }
    let with_body = left > 0;
    // Nor is a body kept in case a program wanted it.
    drop_kept_body(&mut h.framer, &mut h.streams.slots[i]);
    if h.framer
        .submit_response(id, &fields[..n], with_body)
        .is_err()
    {
        // nghttp2 refused the submission (the stream is not open for a response): nothing
        // was queued, nothing to send.
        h.streams.release(i);
    }
}

/// Drops what stream `s` kept of its request body, and reopens the window those bytes held:
/// the rest of the body is dropped as it comes. Returns the bytes the window reopened by.
/// (Given the session and the stream, not `H2`: a reply's fields borrow the connection's head
/// until they are submitted.)
pub(super) fn drop_kept_body(framer: &mut Session<Streams>, s: &mut Stream) -> usize {
    s.body_buf.clear();
    let n = std::mem::take(&mut s.unconsumed) as usize;
    let _ = framer.consume(s.id, n);
    n
}
