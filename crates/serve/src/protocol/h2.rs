//! HTTP/2 on one connection, on the `http2` crate's nghttp2 session: frames in, every complete
//! request answered through the same [`Responder`](crate::respond::Responder) as HTTP/1.1, frames
//! out into the session's output queue. No system call here.
//!
//! A request is the fields the responder reads (`:method`, `:path`, `:authority` as `Host`, the
//! validators, `Range`, `Accept-Encoding`, `User-Agent`, `Referer`), kept as ranges of one
//! buffer per stream and handed to `wire` (`Request::from_fields`), which reads them with the
//! code that reads an HTTP/1.1 head's fields: one validation, one answer for both protocols
//! (preconditions, ranges, digests, precompressed siblings, listings, hidden files, the access
//! log), and no HTTP/1.1 head written and parsed again. The answer's head
//! becomes `:status` and lowercase fields (connection-specific ones left out), and its body goes
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

use std::fs::File;
use std::rc::Rc;
use std::time::Instant;

use http2::{
    error_code, frame_type, FrameVerdict, Handler, Header, HeaderVerdict, HeadersKind, StreamId,
};

use super::body::BodyClock;
use super::{count_status, Session, Worker};
use crate::access_log::Entry;
use crate::pool::{Bufs, Seg};
use crate::respond::Body;

/// A stream's request storage above this is given back once it is answered (a slot keeps
/// what an ordinary request needs, not what the largest one took).
const KEEP_CAPACITY: usize = 1024;
/// The arena's capacity kept once it empties (error pages are small; listings may not be).
const ARENA_KEEP: usize = 64 * 1024;
/// Streams remembered as ended by the client and closed (see [`Streams::ended`]).
const ENDED_RING: usize = 16;
/// Slot hints, indexed by a stream id's low bits (client ids are odd: bit 0 is dropped).
const HINTS: usize = 256;
/// A request body still arriving once its response is complete is not waited for past this
/// many bytes (declared or received): the stream is reset with NO_ERROR (RFC 9113 8.1: "a server
/// MAY request that the client abort transmission of a request without error by sending a
/// RST_STREAM with an error code of NO_ERROR after sending a complete response"). A smaller
/// body is read to its end, within its deadline, so a client that sends one after the response
/// sees the stream end as it expects.
const BODY_AFTER_RESPONSE: u64 = 16 * 1024;
/// Most response fields passed to nghttp2 (the responder writes about a dozen).
const MAX_FIELDS: usize = 32;
/// A carried field: its name (one of [`CARRIED`]) and its value's range in the stream's values.
type Field = (&'static [u8], (usize, usize));

/// Fields the responder reads, carried into the request built for it.
const CARRIED: [&[u8]; 10] = [
    b"host",
    b"if-match",
    b"if-none-match",
    b"if-modified-since",
    b"if-unmodified-since",
    b"range",
    b"if-range",
    b"accept-encoding",
    b"user-agent",
    b"referer",
];
/// Response fields that are HTTP/1.1's alone (RFC 9113 8.2.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// One HTTP/2 connection's state beside the session's buffers.
pub(crate) struct H2 {
    framer: http2::Session<Streams>,
    streams: Streams,
    /// The response head the responder writes, the request line the access log shows: reused.
    response: Vec<u8>,
    log_line: Vec<u8>,
    /// A graceful GOAWAY was submitted (shutdown): no new stream, the open ones finish.
    going_away: bool,
    /// A request's header block was under way after the last `answer`.
    head_pending: bool,
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
        let config = w.http2.as_ref().cloned().unwrap_or_default();
        let cap = config.max_concurrent_streams as usize;
        Ok(H2 {
            framer: http2::Session::server(&config)?,
            streams: Streams {
                slots: Vec::new(),
                cap: cap + 4,
                max_head: w.limits.max_head_bytes,
                log_fields: w.log.is_some(),
                bufs: None,
                queued: 0,
                before: 0,
                room: 0,
                ready: Vec::new(),

                now: w.now,
                open_bodies: 0,
                arena: Vec::new(),
                arena_users: 0,
                generated: 0,
                last: 0,
                hints: [0; HINTS],
                freed: Vec::new(),
                ended: [0; ENDED_RING],
                ended_next: 0,
                progressed: false,
                counts: Counts::default(),
            },
            response: Vec::new(),
            log_line: Vec::new(),
            going_away: false,
            head_pending: false,
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
    /// server has taken no input (its queue at its bound), and that time is not the client's.
    pub fn body_deadline(&mut self, w: &Worker, restart: bool) -> Option<Instant> {
        if self.streams.open_bodies == 0 {
            return None;
        }
        let (timeout, rate) = (w.timeouts.body, w.body_min_rate);
        let clocks = (self.streams.slots.iter_mut()).filter(|st| st.id != 0 && !st.cut);
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
    /// response went out whole, which the client keeps): the connection and the other streams
    /// go on. Returns whether any was.
    pub fn expire_bodies(&mut self, w: &mut Worker) -> bool {
        if self.streams.open_bodies == 0 {
            return false;
        }
        let mut any = false;
        for st in self.streams.slots.iter_mut() {
            let late =
                (st.body).is_some_and(|c| c.deadline(w.timeouts.body, w.body_min_rate) <= w.now);
            if st.id == 0 || st.cut || !late {
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
        if !self.going_away {
            self.going_away = true;
            let _ = self.framer.submit_goaway(error_code::NO_ERROR);
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

/// Counters bumped inside the session's callbacks, added to the worker's after each call.
#[derive(Debug, Default)]
struct Counts {
    streams: u64,
    resets_received: u64,
    resets_sent: u64,
    goaways_received: u64,
    goaways_sent: u64,
}

/// A stream's response body still to be framed.
#[derive(Debug)]
enum Out {
    None,
    /// Bytes of the connection's arena from `start`.
    Arena {
        start: usize,
    },
    Shared {
        data: Rc<[u8]>,
        start: usize,
    },
    File {
        file: Rc<File>,
        offset: u64,
    },
}

/// One open stream.
#[derive(Debug)]
struct Stream {
    /// 0: the slot is free.
    id: StreamId,
    /// The values of `:method`, `:path`, `:authority` and the carried fields, one after another.
    values: Vec<u8>,
    /// `:method`, `:path`, `:authority` as ranges of `values`.
    method: (usize, usize),
    path: (usize, usize),
    authority: Option<(usize, usize)>,
    /// The carried fields in order: a name of [`CARRIED`], a range of `values`.
    fields: Vec<Field>,
    /// The block being received is trailers: ignored.
    trailers: bool,
    /// Bytes of the header block so far (names, values, 4 a field: their HTTP/1.1 size);
    /// past the head limit nothing more is stored and the request is a 431.
    head_bytes: usize,
    content_length: Option<u64>,
    body_in: u64,
    /// The request body's clock while the client's side is open (its request complete, no
    /// END_STREAM yet): counted in `Streams::open_bodies`.
    body: Option<BodyClock>,
    /// Reset for a body past the limit, late, or not waited for.
    cut: bool,
    /// The client ended its side (END_STREAM received).
    ended: bool,
    /// The request was answered (until then its header block is under way).
    answered: bool,
    /// The response went out whole (our END_STREAM written).
    complete: bool,
    out: Out,
    /// Body bytes not framed yet.
    left: u64,
    /// Bytes of a body generated for this stream alone (a listing, an error page), counted in
    /// `Streams::generated` until framed whole.
    own: u64,
}

impl Stream {
    fn free() -> Stream {
        Stream {
            id: 0,
            values: Vec::new(),
            method: (0, 0),
            path: (0, 0),
            authority: None,
            fields: Vec::new(),
            trailers: false,
            head_bytes: 0,
            content_length: None,
            body_in: 0,
            body: None,
            cut: false,
            ended: false,
            answered: false,
            complete: false,
            out: Out::None,
            left: 0,
            own: 0,
        }
    }

    /// Gives back request storage past what an ordinary request needs.
    fn trim(&mut self) {
        self.values.clear();
        if self.values.capacity() > KEEP_CAPACITY {
            self.values = Vec::new();
        }
        self.fields.clear();
        if self.fields.capacity() * size_of::<Field>() > KEEP_CAPACITY {
            self.fields = Vec::new();
        }
    }

    fn open(&mut self, id: StreamId) {
        self.id = id;
        self.values.clear();
        self.method = (0, 0);
        self.path = (0, 0);
        self.authority = None;
        self.fields.clear();
        self.trailers = false;
        self.head_bytes = 0;
        self.content_length = None;
        self.body_in = 0;
        self.body = None;
        self.cut = false;
        self.ended = false;
        self.answered = false;
        self.complete = false;
        self.out = Out::None;
        self.left = 0;
        self.own = 0;
    }
}

/// The session's handler: the streams, and the output queue while frames are written.
struct Streams {
    /// Slots, reused; at most `cap` (nghttp2 refuses streams past MAX_CONCURRENT_STREAMS before
    /// asking, the few more cover streams closing).
    slots: Vec<Stream>,
    cap: usize,
    /// The head limit (`max_header_bytes`): what one stream's request may store.
    max_head: usize,
    /// An access log is kept: `referer` and `user-agent` are carried for it (read by nothing else).
    log_fields: bool,
    /// The session's buffers, lent for `send`.
    bufs: Option<Bufs>,
    /// Bytes queued during this `send`.
    queued: u64,
    /// Bytes the connection had queued before this `send`: a frame larger than the room is
    /// taken only into an empty queue (or no frame would ever fit), never on top of another.
    before: u64,
    /// Bytes that may still be queued in this `send` (the rest waits in nghttp2).
    room: u64,
    /// Streams whose request is complete, to answer once `recv` returns.
    ready: Vec<StreamId>,
    /// The time of the input being read (the worker's clock), for the body clocks.
    now: Instant,
    /// Streams with a body clock (see `Stream::body`): none, and no stream is looked at.
    open_bodies: usize,

    /// Small generated bodies being framed; emptied when no stream uses it.
    arena: Vec<u8>,
    arena_users: usize,
    /// Bytes of generated bodies not framed yet (see `Stream::own`): while past the output
    /// bound, no more requests are answered.
    generated: u64,
    /// The slot found last: a header block's fields come one by one for the same stream.
    last: usize,
    /// The slot a stream was last seen in, by its id's low bits (checked before use: a stale or
    /// shared hint costs a search, never a wrong slot).
    hints: [u16; HINTS],
    /// Slots freed, the latest last: where the next streams go, without a search (each is
    /// checked before use; never longer than `slots`, so it allocates only as they grow).
    freed: Vec<usize>,
    /// The latest streams the client ended (END_STREAM, then a normal close, or its own
    /// RST_STREAM) and nghttp2 has since closed and forgotten. A DATA or HEADERS frame on one is
    /// a connection error of type STREAM_CLOSED (RFC 9113 5.1, "closed": "An endpoint that
    /// receives any frames after receiving a frame with the END_STREAM flag set MUST treat that
    /// as a connection error"), which nghttp2, once it has freed the stream, cannot tell from a
    /// frame that crossed our RST_STREAM (which must be ignored) and so ignores: whether the
    /// client's next frame found the stream still open would otherwise depend on how its bytes
    /// were cut into reads. Streams we reset never enter; past the ring's size, the oldest
    /// are forgotten (and such a frame ignored, as nghttp2 does), never wrongly refused.
    ended: [StreamId; ENDED_RING],
    ended_next: usize,
    /// A WINDOW_UPDATE arrived, or body bytes were framed, since the driver last asked: a body
    /// paced by the client's flow control is progressing (see `conn`'s send deadline). Control
    /// frames written (PING ACKs and the like) are not progress.
    progressed: bool,
    counts: Counts,
}

impl Streams {
    fn open(&self) -> usize {
        self.slots.iter().filter(|s| s.id != 0).count()
    }

    /// The slot of stream `id` (not 0): the last one found, else the one its hint names, else
    /// a search (frames of a hundred streams interleave: a search for each was a tenth of an
    /// answer's profile).
    fn index(&mut self, id: StreamId) -> Option<usize> {
        if self.slots.get(self.last).is_some_and(|s| s.id == id) {
            return Some(self.last);
        }
        let hint = usize::from(self.hints[hint_of(id)]);
        let i = if self.slots.get(hint).is_some_and(|s| s.id == id) {
            hint
        } else {
            let i = self.slots.iter().position(|s| s.id == id)?;
            self.hints[hint_of(id)] = i as u16;
            i
        };
        self.last = i;
        Some(i)
    }

    fn slot(&mut self, id: StreamId) -> Option<&mut Stream> {
        let i = self.index(id)?;
        Some(&mut self.slots[i])
    }

    fn remember_ended(&mut self, id: StreamId) {
        self.ended[self.ended_next] = id;
        self.ended_next = (self.ended_next + 1) % ENDED_RING;
    }

    fn full(&self, more: u64) -> bool {
        self.before + self.queued > 0 && self.queued + more > self.room
    }

    /// A stream is done with its body in the arena: the arena empties with its last user, and
    /// gives back its memory if a large listing grew it.
    fn arena_done(&mut self) {
        self.arena_users -= 1;
        if self.arena_users == 0 {
            self.arena.clear();
            if self.arena.capacity() > ARENA_KEEP {
                self.arena = Vec::new();
            }
        }
    }

    /// The client's side of stream `i` ended (or the stream is gone): its body is not awaited.
    fn body_ended(&mut self, i: usize) {
        if self.slots[i].body.take().is_some() {
            self.open_bodies -= 1;
        }
    }

    fn release(&mut self, i: usize) {
        self.body_ended(i);
        if matches!(self.slots[i].out, Out::Arena { .. }) {
            self.arena_done();
        }
        self.generated -= std::mem::take(&mut self.slots[i].own);
        if self.freed.len() < self.slots.len() {
            self.freed.push(i);
        }
        let s = &mut self.slots[i];
        s.id = 0;
        s.out = Out::None; // drops the shared body or the file
        s.trim();
    }
}

impl Handler for Streams {
    const BEGIN_FRAME: bool = true;

    fn on_begin_frame(&mut self, kind: u8, _flags: u8, stream: StreamId) -> FrameVerdict {
        if (kind == frame_type::DATA || kind == frame_type::HEADERS)
            && stream != 0
            && self.ended.contains(&stream)
        {
            return FrameVerdict::FailConnection(error_code::STREAM_CLOSED);
        }
        FrameVerdict::Accept
    }

    fn write(&mut self, bytes: &[u8]) -> usize {
        let Some(b) = self.bufs.as_mut() else {
            return 0;
        };
        if self.before + self.queued > 0 && self.queued >= self.room {
            return 0;
        }
        let start = b.out.len();
        b.out.extend_from_slice(bytes);
        b.push_mem(start);
        self.queued += bytes.len() as u64;
        bytes.len()
    }

    fn body_ready(&mut self, stream: StreamId, max: usize) -> http2::Body {
        match self.slot(stream) {
            Some(s) => {
                let len = s.left.min(max as u64);
                http2::Body::Ready {
                    len: len as usize,
                    end: len == s.left,
                }
            }
            None => http2::Body::Reset,
        }
    }

    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        if self.full(9 + len as u64) {
            return false;
        }
        let Some(i) = self.index(stream) else {
            return false;
        };
        let Some(b) = self.bufs.as_mut() else {
            return false;
        };
        let s = &mut self.slots[i];
        let start = b.out.len();
        b.out.extend_from_slice(frame_header);
        if let Out::Arena { start: from } = &mut s.out {
            b.out.extend_from_slice(&self.arena[*from..*from + len]);
            *from += len;
        }
        b.push_mem(start);
        match &mut s.out {
            Out::None | Out::Arena { .. } => {}
            Out::Shared { data, start: from } => {
                b.segs.push_back(Seg::Shared {
                    data: data.clone(),
                    start: *from,
                    len,
                });
                *from += len;
            }
            Out::File { file, offset } => {
                b.segs.push_back(Seg::File {
                    file: file.clone(),
                    offset: *offset,
                    len: len as u64,
                });
                *offset += len as u64;
            }
        }
        s.left -= len as u64;
        self.queued += 9 + len as u64;
        self.progressed |= len > 0;
        if s.left == 0 {
            self.generated -= std::mem::take(&mut s.own);
            if matches!(s.out, Out::Arena { .. }) {
                // Framed whole (copied into the queue): the arena need not keep it.
                s.out = Out::None;
                self.arena_done();
            }
        }
        true
    }

    fn on_begin_headers(&mut self, stream: StreamId, kind: HeadersKind) {
        if kind == HeadersKind::Trailers {
            if let Some(s) = self.slot(stream) {
                s.trailers = true;
            }
            return;
        }
        if kind != HeadersKind::Request {
            return;
        }
        self.counts.streams += 1;
        let mut free = None;
        while let Some(i) = self.freed.pop() {
            if self.slots.get(i).is_some_and(|s| s.id == 0) {
                free = Some(i);
                break;
            }
        }
        if free.is_none() && self.slots.len() >= self.cap {
            free = self.slots.iter().position(|s| s.id == 0);
        }
        if let Some(i) = free {
            self.slots[i].open(stream);
            self.last = i;
        } else if self.slots.len() < self.cap {
            let mut s = Stream::free();
            s.open(stream);
            self.last = self.slots.len();
            self.slots.push(s);
        } else {
            return;
        }
        self.hints[hint_of(stream)] = self.last as u16;
        // Past the cap (nghttp2 refuses streams above the limit first): on_header resets it.
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        let (max_head, log_fields) = (self.max_head, self.log_fields);
        let Some(s) = self.slot(stream) else {
            return HeaderVerdict::ResetStream;
        };
        if s.trailers {
            return HeaderVerdict::Accept;
        }
        // HPACK lets a few bytes on the wire stand for a large field (an indexed entry repeats a
        // 4 KB value for one byte): what is stored is bounded by the head limit, as HTTP/1.1's
        // head is, not by the header list size nghttp2 enforces.
        s.head_bytes += name.len() + value.len() + 4;
        if s.head_bytes > max_head {
            return HeaderVerdict::Accept;
        }
        let mut keep = |v: &[u8]| {
            let start = s.values.len();
            s.values.extend_from_slice(v);
            (start, s.values.len())
        };
        match name {
            b":method" => s.method = keep(value),
            b":path" => s.path = keep(value),
            b":authority" => s.authority = Some(keep(value)),
            b"content-length" => {
                s.content_length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok())
            }
            _ => {
                let Some(&carried) = CARRIED.iter().find(|&&c| c == name) else {
                    return HeaderVerdict::Accept;
                };
                if carried == b"host" && s.authority.is_some() {
                    return HeaderVerdict::Accept; // :authority wins (RFC 9113 8.3.1)
                }
                if !log_fields && (carried == b"user-agent" || carried == b"referer") {
                    return HeaderVerdict::Accept;
                }
                let range = keep(value);
                s.fields.push((carried, range));
            }
        }
        HeaderVerdict::Accept
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        let Some(i) = self.index(stream) else {
            return;
        };
        if end_stream {
            self.slots[i].ended = true;
            self.body_ended(i);
        } else if !self.slots[i].trailers && self.slots[i].body.is_none() {
            // A body follows: it is due within the body timeout, as HTTP/1.1's is.
            self.slots[i].body = Some(BodyClock::start(self.now));
            self.open_bodies += 1;
        }
        if !self.slots[i].trailers && self.ready.len() < self.cap {
            self.ready.push(stream);
        }
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        let now = self.now;
        if let Some(s) = self.slot(stream) {
            s.body_in += data.len() as u64;
            if let Some(clock) = s.body.as_mut() {
                clock.add(data.len() as u64, now);
            }
        }
    }

    fn on_data_end(&mut self, stream: StreamId) {
        if let Some(i) = self.index(stream) {
            self.slots[i].ended = true;
            self.body_ended(i);
        }
    }

    fn on_end_stream_sent(&mut self, stream: StreamId) {
        if let Some(s) = self.slot(stream) {
            s.complete = true;
        }
    }

    fn on_rst_stream(&mut self, stream: StreamId, _error_code: u32) {
        self.remember_ended(stream);
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        if let Some(i) = self.index(stream) {
            if error_code == error_code::NO_ERROR && self.slots[i].ended {
                self.remember_ended(stream);
            }
            self.release(i);
        }
        self.ready.retain(|&id| id != stream);
    }

    fn on_frame_received(&mut self, kind: u8) {
        match kind {
            frame_type::RST_STREAM => self.counts.resets_received += 1,
            frame_type::GOAWAY => self.counts.goaways_received += 1,
            frame_type::WINDOW_UPDATE => self.progressed = true,
            _ => {}
        }
    }

    fn on_frame_sent(&mut self, kind: u8, _len: usize) {
        match kind {
            frame_type::RST_STREAM => self.counts.resets_sent += 1,
            frame_type::GOAWAY => self.counts.goaways_sent += 1,
            _ => {}
        }
    }
}

/// Reads the input, answers the requests it completed, and queues the frames; see
/// [`Session::answer`]. Returns true if frames wait in nghttp2 for the queue to drain.
pub(super) fn answer(s: &mut Session, w: &mut Worker, pool: &mut crate::pool::Pool) -> bool {
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
            let last = h.framer.last_proc_stream_id();
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
    let mut ready = std::mem::take(&mut h.streams.ready);
    let mut answered = 0;
    for &id in &ready {
        if h.streams.generated > w.max_pipeline {
            break;
        }
        respond(h, id, w, s.peer);
        s.served = true;
        answered += 1;
    }
    ready.drain(..answered);
    h.streams.ready = ready;
    // A header block under way is due within the header timeout of its start, as an HTTP/1.1
    // head is, however its frames trickle.
    let waiting = &h.streams.ready;
    let pending =
        (h.streams.slots.iter()).any(|st| st.id != 0 && !st.answered && !waiting.contains(&st.id));
    if pending && !h.head_pending {
        s.head_since = w.now;
    }
    h.head_pending = pending;
    // A request body is dropped; one past the limit is not wanted at all (its response may
    // still be going: the reset ends it, as HTTP/1.1 closes the connection), nor a large one
    // whose response is complete (NO_ERROR: the client keeps the response).
    for st in h.streams.slots.iter_mut() {
        if st.id == 0 || st.cut {
            continue;
        }
        let code = if st.body_in > w.max_body {
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
    s.bufs = h.streams.bufs.take();
    s.queued += h.streams.queued;
    flush_counts(&mut h.streams.counts, w);
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

/// Answers one complete request on `id`: its head built for `wire`, the responder's answer
/// turned into `:status` and fields, the body left to the DATA frames.
fn respond(h: &mut H2, id: StreamId, w: &mut Worker, peer: std::net::SocketAddr) {
    let Some(i) = h.streams.index(id) else {
        return;
    };
    let st = &h.streams.slots[i];
    let value = |(a, b): (usize, usize)| &st.values[a..b];
    let (method, path) = (value(st.method), value(st.path));
    let too_large = st.content_length.is_some_and(|n| n > w.max_body);
    let head_too_large = st.head_bytes > w.limits.max_head_bytes;
    // A HEAD answered with an error (400, 413, 431) has no body either.
    let head_method = method == b"HEAD";
    let out = &mut h.response;
    out.clear();
    let fields = st.fields.iter().map(|&(name, range)| (name, value(range)));
    let parsed =
        wire::Request::from_fields(method, path, st.authority.map(value), fields, &w.limits);
    let (reply, is_head, referer, user_agent) = match parsed {
        _ if head_too_large => (
            w.responder.error(431, &w.date, false, out),
            false,
            None,
            None,
        ),
        Ok(r) if !too_large => {
            let reply = w.responder.respond_shared(&r, &w.date, w.now, out);
            (
                reply,
                r.method == wire::Method::Head,
                r.referer,
                r.user_agent,
            )
        }
        Ok(r) => {
            let reply = w.responder.error(413, &w.date, false, out);
            (reply, false, r.referer, r.user_agent)
        }
        Err(e) => (
            w.responder.error(e.status(), &w.date, false, out),
            false,
            None,
            None,
        ),
    };
    if let Some(log) = w.log.as_mut() {
        // The request line as HTTP/2 has it.
        let line = &mut h.log_line;
        line.clear();
        line.extend_from_slice(method);
        line.push(b' ');
        line.extend_from_slice(path);
        line.extend_from_slice(b" HTTP/2.0");
        let e = Entry {
            peer: peer.ip(),
            request_line: &line[..],
            status: reply.status,
            body_bytes: reply.body_bytes,
            referer,
            user_agent,
        };
        log.record(&e, w.wall);
    }
    count_status(&mut w.stats, &reply);
    // The head: "HTTP/1.1 200 OK\r\n" then "Name: value\r\n" lines, then the blank line. One
    // pass finds the fields (eight bytes at a time), handed over as slices of it; nghttp2
    // lowercases the names as it copies them.
    let out: &[u8] = out;
    let mut fields = [Header::new(b"", b""); MAX_FIELDS + 1];
    fields[0] = Header::new(b":status", &out[9..12]);
    let mut n = 1;
    let mut at = find_byte(out, b'\n').map_or(out.len(), |p| p + 1);
    while let Some(nl) = find_byte(&out[at..], b'\n') {
        let line = &out[at..at + nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at += nl + 1;
        if line.is_empty() {
            break; // the blank line: the body follows
        }
        let Some(colon) = find_byte(line, b':') else {
            continue;
        };
        let name = &line[..colon];
        if n > MAX_FIELDS {
            continue;
        }
        let value = line[colon + 1..].trim_ascii_start();
        // A name the responder writes on most answers is not connection-specific: looked up
        // first, it spares the other names' comparisons.
        fields[n] = match known_name(name) {
            Some(known) => Header::static_name(known, value),
            None if CONNECTION_SPECIFIC
                .iter()
                .any(|c| c.eq_ignore_ascii_case(name)) =>
            {
                continue
            }
            None => Header::new(name, value),
        };
        n += 1;
    }
    let page_body = &out[at..];
    let s = &mut h.streams;
    let mut own = 0;
    let (body, left) = match reply.body {
        _ if is_head || head_method => (Out::None, 0),
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
    slot.left = left;
    slot.own = own;
    s.generated += own;
    let with_body = left > 0;
    if h.framer
        .submit_response(id, &fields[..n], with_body)
        .is_err()
    {
        // The stream is gone (reset by the client meanwhile): nothing to send.
        s.release(i);
    }
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

/// The lowercase static form of a field name as the responder writes it (a 200's fields, the
/// common ones): nghttp2 then neither copies nor lowercases it. One comparison each, of the
/// exact spelling; any other name is copied and lowercased by nghttp2.
fn known_name(name: &[u8]) -> Option<&'static [u8]> {
    let (spelled, known): (&[u8], &'static [u8]) = match name.len() {
        4 if name[0] == b'D' => (b"Date", b"date"),
        4 => (b"ETag", b"etag"),
        6 => (b"Server", b"server"),
        12 => (b"Content-Type", b"content-type"),
        13 if name[0] == b'A' => (b"Accept-Ranges", b"accept-ranges"),
        13 => (b"Last-Modified", b"last-modified"),
        14 => (b"Content-Length", b"content-length"),
        _ => return None,
    };
    (name == spelled).then_some(known)
}

/// Where stream `id`'s slot hint is kept.
fn hint_of(id: StreamId) -> usize {
    (id as usize >> 1) % HINTS
}

/// The first `byte` in `hay`, looked for eight bytes at a time (a head's lines are tens of
/// bytes: a byte-at-a-time search was the largest item of an answer's profile).
pub(super) fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(byte);
    let mut chunks = hay.chunks_exact(8);
    for (i, chunk) in chunks.by_ref().enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ pattern;
        // A zero byte of x is a match; its lowest one sets the lowest flagged bit (the flags
        // of bytes above it may be false, never those below).
        let found = x.wrapping_sub(LOW) & !x & HIGH;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = chunks.remainder();
    let base = hay.len() - tail.len();
    tail.iter().position(|&c| c == byte).map(|p| base + p)
}

/// A GOAWAY frame (RFC 9113 6.8), for when nghttp2 can no longer write one.
fn push_goaway(out: &mut Vec<u8>, last_stream: StreamId, code: u32) {
    out.extend_from_slice(&[0, 0, 8, frame_type::GOAWAY, 0, 0, 0, 0, 0]);
    out.extend_from_slice(&(last_stream.max(0) as u32 & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(&code.to_be_bytes());
}
