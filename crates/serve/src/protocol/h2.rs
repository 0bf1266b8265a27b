//! HTTP/2 on one connection, on the `http2` crate's nghttp2 session: frames in, every complete
//! request answered through the same [`Responder`](crate::respond::Responder) as HTTP/1.1, frames
//! out into the session's output queue. No system call here.
//!
//! A request is the fields the responder reads (`:method`, `:path`, `:authority` as `Host`, the
//! validators, `Range`, `Accept-Encoding`, `User-Agent`, `Referer`, `Authorization` when a prefix
//! is protected), kept as ranges of one
//! buffer per stream and handed to `wire` (`Request::with_fields`), which reads them with the
//! code that reads an HTTP/1.1 head's fields: one validation, one answer for both protocols
//! (preconditions, ranges, digests, precompressed siblings, listings, hidden files, the access
//! log), and no HTTP/1.1 head written and parsed again. The answer's head
//! becomes `:status` and lowercase fields (a cached file's prebuilt, any other as the
//! responder or the gateway built it: `response::Fields`, never text), and its body goes
//! out in DATA frames written straight into the queue without a copy: a cached body is shared,
//! a file range is sent by `sendfile` (or read in chunks over TLS) one frame at a time, as flow
//! control allows, never read whole. Only small generated bodies (error pages, listings) are
//! copied, into one buffer per connection emptied whenever no stream still needs it.
//!
//! Streams are answered as their requests complete, all those of one read before the frames are
//! written, so a batch leaves in one gathered write; DATA frames of concurrent streams are
//! scheduled by nghttp2 (RFC 9218: by the request's urgency, incremental streams in turns). A
//! request body is dropped: a stream whose body passes `max_body_bytes` is reset, and so is one
//! whose body is late (each has its own deadline, as an HTTP/1.1 body: `body.rs`) or, past
//! 16 KiB, still arriving once its response is complete. What one connection queues is bounded
//! by `max_pipeline_bytes` and one frame: past it the handler takes no more frames and nghttp2
//! keeps them until the queue drains; a frame larger than the room left is taken only into an
//! empty queue.
//!
//! This file holds the session type and the answer path (input read, requests answered, frames
//! queued), one request's own path and its reply apart, so a connection's path reads in one place; beside it, `h2/streams.rs` is the stream
//! table (slots, hints, freed slots, the arena, the ended ring, each stream's body clock),
//! `h2/handler.rs` the nghttp2 callbacks that fill it and frame bodies, `h2/respond.rs` one
//! complete request answered, `h2/reply.rs` a reply submitted on its stream, `h2/fields.rs` the
//! response head handed over as HTTP/2 fields, `h2/logging.rs` the access-log line of a large
//! response held until its stream ends, and for a request a program answers,
//! `h2/exchange.rs` the stream's exchange with it and `h2/gateway.rs` the protocol's side of
//! the gateway seam.

use std::time::Instant;

use http2::{error_code, frame_type, StreamId};

use super::body::BodyClock;
use super::{Session, Worker};
use crate::gateway::Launch;
use crate::protocol::gather::Budget;
use crate::response::Fields;
use fields::FieldRoom;
#[cfg(test)]
use std::rc::Rc;
pub(crate) use streams::Spares;
use streams::{Counts, Storage, Streams};
#[cfg(test)]
use streams::{Field, Out};

mod exchange;
mod fields;
pub(super) mod gateway;
mod handler;
mod logging;
mod reply;
mod respond;
mod streams;

/// A request body still arriving once its response is complete is not waited for past this
/// many bytes (declared or received): the stream is reset with NO_ERROR (RFC 9113 8.1: "a server
/// MAY request that the client abort transmission of a request without error by sending a
/// RST_STREAM with an error code of NO_ERROR after sending a complete response"). A smaller
/// body is read to its end, within its deadline, so a client that sends one after the response
/// sees the stream end as it expects.
const BODY_AFTER_RESPONSE: u64 = 16 * 1024;

/// Requests one connection may have refused (malformed and reset, or answered with an error for
/// what they are: 400, 413, 414, 431) before it ends with GOAWAY ENHANCE_YOUR_CALM: the streams
/// received by then are answered, no new one is, and the connection closes. A client
/// that keeps sending requests the server refuses is not one a browser makes; each costs a
/// header block's decoding and an answer, and HTTP/1.1 closes the connection at the first.
const MAX_REFUSED: u32 = 16;

/// One HTTP/2 connection's state beside the session's buffers.
///
/// The field order is part of what makes the session's borrowed bytes sound: Rust drops fields
/// in declaration order, so `framer` (nghttp2's session, which may still point at the NO_COPY
/// prebuilt field values the stream slots keep) goes before `streams`. Keep `framer` the first
/// field.
pub(crate) struct H2 {
    /// Declared before `streams`, so dropped first: the session may point at the prebuilt
    /// heads the stream slots keep (`Stream::head`).
    framer: http2::Session<Streams>,
    streams: Streams,
    /// The generated body the responder writes (an error page, a small listing): reused (part
    /// of the request storage, `Storage`).
    response: Vec<u8>,
    /// The fields of the response head the responder writes (nghttp2 copies them as a
    /// response is submitted): reused. With the stream slots, the connection's request storage
    /// (`Storage`): present while the connection has something to do, given to the thread's
    /// spares when it is idle.
    head: Option<Box<Fields>>,
    /// Room for a gateway head's fields, as many as it has (reused with `head`).
    field_room: FieldRoom,
    /// The last `:authority` that passed wire's Host checks: the next equal one is not checked.
    passed_host: wire::PassedHost,
    log_line: Vec<u8>,
    /// The line of the response being answered, held until its stream ends, on its way to
    /// the stream's slot (`h2/logging.rs`).
    staged_log: Option<crate::protocol::held_log::HeldLog>,
    /// A graceful GOAWAY was submitted (shutdown): no new stream, the open ones finish.
    going_away: bool,
    /// A request's header block was under way after the last `answer`.
    head_pending: bool,
    /// Programs to start for the streams just answered (moved to the session's).
    launches: Vec<(StreamId, Launch)>,
    /// Streams that wait for their END_STREAM before a program answers them (a body without
    /// `content-length`: a program is told its length up front, RFC 3875 4.1.2, so it is kept
    /// whole first, within `max_body_bytes`, as an HTTP/1.1 chunked one is). 0: none looked for.
    awaiting: usize,
}

impl std::fmt::Debug for H2 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H2")
            .field("open_streams", &self.streams.open())
            .field("going_away", &self.going_away)
            .finish()
    }
}

impl H2 {
    pub fn new(w: &Worker) -> Result<H2, http2::Error> {
        let mut config = w.http2.as_ref().cloned().unwrap_or_default();
        // A stream's window reopens as its program takes its body (`gateway::body_taken`; at
        // once if dropped or gathered: `Streams::on_data_paced`), so what one holds of an
        // upload is one window, not the body.
        config.paced_stream_windows = true;
        let cap = config.max_concurrent_streams as usize;
        let mut streams = Streams::new(cap + 4, w.limits.max_head_bytes, w.log.is_some(), w.now);
        streams.keep_all = w.gateways.is_some();
        streams.budget = Budget::for_max_body(w.max_body);
        Ok(H2 {
            framer: http2::Session::server(&config)?,
            streams,
            response: Vec::new(),
            head: None,
            field_room: FieldRoom::new(),
            passed_host: wire::PassedHost::default(),
            log_line: Vec::new(),
            staged_log: None,
            going_away: false,
            head_pending: false,
            launches: Vec::new(),
            awaiting: 0,
        })
    }

    /// Bytes this connection holds for its requests (its stream slots, its arena, the heads it
    /// builds, the generated bodies only its streams hold), for the tests that bound it.
    #[cfg(test)]
    pub fn retained(&self) -> usize {
        let slots: usize = (self.streams.slots.iter())
            .map(|s| s.values.capacity() + s.fields.capacity() * size_of::<Field>())
            .sum();
        slots
            + self.streams.arena.capacity()
            + self.response.capacity()
            + self.head.as_ref().map_or(0, |f| f.capacity())
            + self.log_line.capacity()
            + (self.streams.slots.iter())
                .map(|s| match &s.out {
                    Out::Shared { data, .. } if Rc::strong_count(data) == 1 => data.len(),
                    _ => 0,
                })
                .sum::<usize>()
    }

    /// Whether a request's header block is under way (begun, not complete).
    pub fn head_pending(&self) -> bool {
        self.head_pending
    }

    /// Whether a response body is still to be framed (waiting for the client's flow control or
    /// for the output queue to drain).
    pub fn sending(&self) -> bool {
        self.streams.slots.iter().any(|s| s.id != 0 && s.left > 0)
    }

    /// Whether a response body moved (bytes framed, or a window opened) since the last call.
    pub fn take_progress(&mut self) -> bool {
        std::mem::take(&mut self.streams.progressed)
    }

    /// When the earliest request body still arriving is due (each stream's by its own clock,
    /// as HTTP/1.1's body: `protocol/body.rs`); None if no stream awaits one. `restart`: the
    /// server has taken no input (its queue at its bound), and that time is not the client's;
    /// nor is the time a program holds its stream's window (`Stream::window_held`): such a
    /// stream is left out, and its clock starts again as its window reopens.
    pub fn body_deadline(&mut self, w: &Worker, restart: bool) -> Option<Instant> {
        if self.streams.open_bodies == 0 {
            return None;
        }
        let (timeout, rate) = (w.timeouts.body, w.body_min_rate);
        let clocks =
            (self.streams.slots.iter_mut()).filter(|st| st.id != 0 && !st.cut && !st.window_held());
        (clocks.filter_map(|st| st.body.as_mut()))
            .map(|clock| {
                if restart {
                    *clock = BodyClock::start(w.now);
                }
                clock.deadline(timeout, rate)
            })
            .min()
    }

    /// Resets each stream whose request body is past its deadline (CANCEL; NO_ERROR if its
    /// response went out whole, which the client keeps), unless its program holds its window:
    /// the connection and the other streams go on. Returns whether any was.
    pub fn expire_bodies(&mut self, w: &mut Worker) -> bool {
        if self.streams.open_bodies == 0 {
            return false;
        }
        let mut any = false;
        for st in self.streams.slots.iter_mut() {
            let late =
                (st.body).is_some_and(|c| c.deadline(w.timeouts.body, w.body_min_rate) <= w.now);
            if st.id == 0 || st.cut || !late || st.window_held() {
                continue;
            }
            st.cut = true;
            let code = if st.complete {
                error_code::NO_ERROR
            } else {
                error_code::CANCEL
            };
            let _ = self.framer.submit_rst_stream(st.id, code);
            w.stats.body_timeouts += 1;
            any = true;
        }
        any
    }

    /// Graceful shutdown: GOAWAY with the last stream processed; the streams under way finish,
    /// then the connection closes.
    pub fn go_away(&mut self) {
        self.go_away_for(error_code::NO_ERROR);
    }

    /// [`go_away`](Self::go_away) with `code` as the reason.
    fn go_away_for(&mut self, code: u32) {
        if !self.going_away {
            self.going_away = true;
            let _ = self.framer.submit_goaway(code);
            // A stream answered whole whose request the client never finished would hold the
            // shutdown until its grace ends: the server asks it to stop (RFC 9113 8.1:
            // RST_STREAM NO_ERROR after a complete response).
            for st in self.streams.slots.iter_mut().filter(|s| s.id != 0) {
                if st.complete && !st.ended && !st.cut {
                    st.cut = true;
                    let _ = self.framer.submit_rst_stream(st.id, error_code::NO_ERROR);
                }
            }
        }
    }
}

/// Reads the input, answers the requests it completed, and queues the frames; see
/// [`Session::answer`]. Returns true if frames wait in nghttp2 for the queue to drain.
pub(super) fn answer(s: &mut Session, w: &mut Worker, pool: &mut crate::pool::Pool) -> bool {
    let super::Proto::H2(h) = &mut s.proto else {
        return false;
    };
    if h.head.is_none() {
        let set = w.h2_spares.take();
        h.streams.wake(set.slots, set.freed);
        h.response = set.response;
        h.head = Some(set.head);
        h.field_room = set.field_room;
    }
    let more = answer_awake(s, w, pool);
    let super::Proto::H2(h) = &mut s.proto else {
        return more;
    };
    // Idle (no stream, no frame queued in nghttp2): the request storage goes back to the
    // thread's spares until the next frames.
    if h.streams.slots.iter().all(|st| st.id == 0)
        && h.streams.ready.is_empty()
        && h.launches.is_empty()
        && h.awaiting == 0
        && h.streams.arena_users == 0
        && h.framer.outbound_queue_len() == 0
    {
        h.streams.queue_emptied();
        if let Some(head) = h.head.take() {
            let (slots, freed) = h.streams.rest();
            w.h2_spares.keep(Storage {
                slots,
                freed,
                response: std::mem::take(&mut h.response),
                head,
                field_room: std::mem::take(&mut h.field_room),
            });
        }
    }
    more
}

/// `answer` for a connection holding its request storage.
fn answer_awake(s: &mut Session, w: &mut Worker, pool: &mut crate::pool::Pool) -> bool {
    let super::Proto::H2(h) = &mut s.proto else {
        return false;
    };
    if let Some(b) = s.bufs.as_mut().filter(|b| b.in_len > 0) {
        let input = &b.input[..b.in_len];
        h.streams.now = w.now;
        let result = h.framer.recv(input, &mut h.streams);
        b.in_len = 0;
        if let Err(e) = result {
            // Fatal (a flood past nghttp2's limits, out of memory): nghttp2 sends nothing more,
            // so the GOAWAY that says why is written here, then the connection closes.
            let code = match e.code {
                http2::lib_error::FLOODED | http2::lib_error::TOO_MANY_CONTINUATIONS => {
                    error_code::ENHANCE_YOUR_CALM
                }
                _ => error_code::PROTOCOL_ERROR,
            };
            let last = h.framer.last_answered();
            h.streams.counts.goaways_sent += 1;
            flush_counts(&mut h.streams.counts, w);
            let start = b.out.len();
            push_goaway(&mut b.out, last, code);
            s.queued += (b.out.len() - start) as u64;
            b.push_mem(start);
            s.close_after = true;
            s.linger = true;
            return false;
        }
    }
    // Generated bodies (listings, error pages) are each stream's own until framed: while they
    // add up past the output bound, the next requests wait their turn (a hundred streams
    // asking for a large listing hold one or two at a time, not all).
    if h.awaiting > 0 {
        h.awaiting = 0;
        for st in h
            .streams
            .slots
            .iter_mut()
            .filter(|st| st.id != 0 && st.awaits_end && !st.cut)
        {
            if st.ended {
                st.awaits_end = false;
                h.streams.ready.push(st.id);
            } else {
                h.awaiting += 1;
            }
        }
    }
    let mut ready = std::mem::take(&mut h.streams.ready);
    let mut answered = 0;
    for &id in &ready {
        if h.streams.generated > w.max_pipeline {
            break;
        }
        respond::respond(h, id, w, s.peer);
        s.served = true;
        answered += 1;
    }
    ready.drain(..answered);
    h.streams.ready = ready;
    if h.streams.refused > MAX_REFUSED {
        // No new stream; those received are answered whole (their answers are refusals too,
        // most likely), then the connection closes.
        h.go_away_for(error_code::ENHANCE_YOUR_CALM);
    }
    if !h.launches.is_empty() {
        s.launches.append(&mut h.launches);
    }
    // A header block under way is due within the header timeout of its start, as an HTTP/1.1
    // head is, however its frames trickle.
    let waiting = &h.streams.ready;
    // (A malformed request, reset, is not one.)
    // (Nor one whose body is awaited: that has its own clock.)
    let pending = (h.streams.slots.iter()).any(|st| {
        st.id != 0 && !st.answered && !st.cut && !st.awaits_end && !waiting.contains(&st.id)
    });
    if pending && !h.head_pending {
        s.head_since = w.now;
    }
    h.head_pending = pending;
    // A request body is dropped; one past the limit is not wanted at all (its response may
    // still be going: the reset ends it, as HTTP/1.1 closes the connection), nor a large one
    // whose response is complete (NO_ERROR: the client keeps the response). One the
    // connection's or the thread's kept bodies had no room for is refused: REFUSED_STREAM
    // while nothing answered it (no program heard of it: the client may send it again, RFC
    // 9113 8.7), else CANCEL.
    for st in h.streams.slots.iter_mut() {
        if st.id == 0 || st.cut {
            continue;
        }
        let code = if st.short_of_room && !st.answered {
            error_code::REFUSED_STREAM
        } else if st.body_in > w.max_body || st.short_of_room {
            error_code::CANCEL
        } else if st.complete
            && st.body.is_some()
            && (st.body_in).max(st.content_length.unwrap_or(0)) > BODY_AFTER_RESPONSE
        {
            error_code::NO_ERROR
        } else {
            continue;
        };
        st.cut = true;
        let _ = h.framer.submit_rst_stream(st.id, code);
    }
    // The frames: into the queue, within what one connection may queue.
    let b = s.bufs.take().unwrap_or_else(|| pool.take());
    h.streams.bufs = Some(b);
    h.streams.queued = 0;
    h.streams.before = s.queued;
    h.streams.room = w.max_pipeline.saturating_sub(s.queued);
    let sent = h.framer.send(&mut h.streams);
    if !h.streams.unsent_heads.is_empty() && h.framer.outbound_queue_len() == 0 {
        h.streams.queue_emptied();
    }
    s.bufs = h.streams.bufs.take();
    s.queued += h.streams.queued;
    flush_counts(&mut h.streams.counts, w);
    if !h.streams.ended_logs.is_empty() {
        h.log_ended(w);
    }
    if sent.is_err() || (!h.framer.want_read() && !h.framer.want_write()) {
        // Done: a GOAWAY exchanged and no stream left, or a protocol error answered with
        // GOAWAY. The client may still be sending: the close lingers.
        s.close_after = true;
        s.linger = true;
        return false;
    }
    // Frames wait in nghttp2 while anything is queued: the driver comes back once the queue
    // is written (an empty queue with frames waiting means nghttp2 had nothing it could write).
    (h.framer.want_write() || !h.streams.ready.is_empty()) && s.queued > 0
}

fn flush_counts(c: &mut Counts, w: &mut Worker) {
    let st = &mut w.stats;
    st.h2_streams += c.streams;
    st.h2_resets_received += c.resets_received;
    st.h2_resets_sent += c.resets_sent;
    st.h2_goaways_received += c.goaways_received;
    st.h2_goaways_sent += c.goaways_sent;
    *c = Counts::default();
}

/// A GOAWAY frame (RFC 9113 6.8), for when nghttp2 can no longer write one.
fn push_goaway(out: &mut Vec<u8>, last_stream: StreamId, code: u32) {
    out.extend_from_slice(&[0, 0, 8, frame_type::GOAWAY, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(last_stream.max(0) as u32 & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}
