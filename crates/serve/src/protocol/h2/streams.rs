//! The stream table of one HTTP/2 connection: a slot per open stream (its request's fields,
//! its body clock, its response body still to be framed), found by the last slot used or a hint
//! by id, reused from a stack of freed slots; the arena of small generated bodies; the ring of
//! streams the client ended; the counters bumped in the session's callbacks. Kept apart from
//! `h2.rs` so the answer path reads without the table's bookkeeping; the callbacks that fill it
//! are in `handler.rs`.

use std::fs::File;
use std::rc::Rc;
use std::time::Instant;

use http2::StreamId;

use super::exchange::Exchange;
use super::fields::FieldRoom;
use crate::auth::Verdict;
use crate::gateway::head::HeadReader;
use crate::pool::Bufs;
use crate::protocol::body::BodyClock;
use crate::protocol::gateway::Record;
use crate::protocol::gather::{Budget, Gathered};
use crate::protocol::held_log::HeldLog;
use crate::response::{Fields, ReprFields};

/// A stream's request storage above this is given back once it is answered (a slot keeps
/// what an ordinary request needs, not what the largest one took).
const KEEP_CAPACITY: usize = 1024;
/// A program's output buffer kept with its slot's spare exchange past its stream (see
/// `Stream::spare`); a larger one is freed. Room for a small response's body as it arrives:
/// every slot of a busy connection keeps one, and its set still fits the spares
/// (`SPARE_BYTES`) when the connection goes idle.
const KEEP_OUTPUT: usize = 4 * 1024;
/// The arena's capacity kept once it empties (error pages are small; listings may not be).
const ARENA_KEEP: usize = 64 * 1024;
/// Streams remembered as ended by the client and closed (see [`Streams::ended`]).
const ENDED_RING: usize = 16;
/// Slot hints, indexed by a stream id's low bits (client ids are odd: bit 0 is dropped).
const HINTS: usize = 256;
/// Bytes of request storage an event-loop thread keeps for its next busy connections: room for
/// a few hundred sets of a connection with a few streams (about 6 KB each), for a handful of
/// sets grown by many streams with long fields; a set past it is freed.
const SPARE_BYTES: usize = 1 << 20;

/// A connection's request storage while it has streams: its slots (each with its value and
/// field buffers), its stack of freed slots, the buffers its responses' generated bodies and
/// head fields are written in. An idle connection
/// gives it to its thread's [`Spares`] and takes a set again when its next frames arrive, as
/// nginx frees an idle HTTP/2 connection's buffers: a thousand idle connections hold none, and
/// a connection that wakes reuses what another grew (no allocation in steady state).
pub(crate) struct Storage {
    pub(super) slots: Vec<Stream>,
    pub(super) freed: Vec<usize>,
    pub(super) response: Vec<u8>,
    pub(super) head: Box<Fields>,
    /// Room for a gateway head's fields as nghttp2 takes them (`fields::FieldRoom`).
    pub(super) field_room: FieldRoom,
}

impl Storage {
    /// The heap bytes this set holds (its slots' buffers included), for the spares' bound.
    fn bytes(&self) -> usize {
        let slots: usize = (self.slots.iter())
            .map(|s| {
                s.values.capacity()
                    + s.fields.capacity() * size_of::<Field>()
                    + s.others.capacity() * size_of::<((usize, usize), (usize, usize))>()
                    + s.body_buf.capacity() as usize
                    + (s.spare.as_ref()).map_or(0, |x| size_of::<Exchange>() + x.heap_bytes())
            })
            .sum();
        slots
            + self.slots.capacity() * size_of::<Stream>()
            + self.freed.capacity() * size_of::<usize>()
            + self.response.capacity()
            + size_of::<Fields>()
            + self.head.capacity()
            + self.field_room.capacity() * size_of::<http2::Header<'static>>()
    }

    fn new() -> Storage {
        Storage {
            slots: Vec::new(),
            freed: Vec::new(),
            response: Vec::new(),
            head: Box::new(Fields::new()),
            field_room: FieldRoom::new(),
        }
    }
}

/// The storage of idle connections, one event-loop thread's (`Worker::h2_spares`), with the
/// bytes each set holds.
#[derive(Default)]
pub(crate) struct Spares {
    sets: Vec<(Storage, usize)>,
    bytes: usize,
}

impl Spares {
    /// A set for a connection that has frames to read: a kept one, or a new empty one.
    pub(super) fn take(&mut self) -> Storage {
        match self.sets.pop() {
            Some((set, bytes)) => {
                self.bytes -= bytes;
                set
            }
            None => Storage::new(),
        }
    }

    /// Keeps an idle connection's set (every slot free) within `SPARE_BYTES`. A set that does
    /// not fit with its slots' spare exchanges is kept without them if it then fits (the
    /// request buffers are what every stream needs); past that it is freed.
    pub(super) fn keep(&mut self, mut set: Storage) {
        let mut bytes = set.bytes();
        if self.bytes + bytes > SPARE_BYTES {
            for slot in &mut set.slots {
                slot.spare = None;
            }
            bytes = set.bytes();
        }
        if self.bytes + bytes <= SPARE_BYTES {
            self.bytes += bytes;
            self.sets.push((set, bytes));
        }
    }
}

/// A carried field (one the responder reads: `host`, the conditionals, `range`,
/// `accept-encoding`; `user-agent` and `referer` for a log; `authorization` when a prefix is
/// protected), chosen by the name the session's checks recognised (`handler.rs`): its name and
/// its value's range in the stream's values.
pub(super) type Field = (&'static [u8], (usize, usize));

/// Counters bumped inside the session's callbacks, added to the worker's after each call.
#[derive(Debug, Default)]
pub(super) struct Counts {
    pub(super) streams: u64,
    pub(super) resets_received: u64,
    pub(super) resets_sent: u64,
    pub(super) goaways_received: u64,
    pub(super) goaways_sent: u64,
}

/// A stream's response body still to be framed.
#[derive(Debug)]
pub(super) enum Out {
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
    /// A program's output, as it arrives: the stream's `gateway` buffer.
    Gateway,
}

/// One open stream.
#[derive(Debug)]
pub(super) struct Stream {
    /// 0: the slot is free.
    pub(super) id: StreamId,
    /// The values of `:method`, `:path`, `:authority` and the carried fields, one after another.
    pub(super) values: Vec<u8>,
    /// `:method`, `:path`, `:authority` as ranges of `values`.
    pub(super) method: (usize, usize),
    pub(super) path: (usize, usize),
    pub(super) authority: Option<(usize, usize)>,
    /// The carried fields in order (see [`Field`]).
    pub(super) fields: Vec<Field>,
    /// With a gateway configured, every other field too (a program sees them all): name and
    /// value as ranges of `values`.
    pub(super) others: Vec<((usize, usize), (usize, usize))>,
    /// The program answering this stream.
    pub(super) gateway: Option<Box<Exchange>>,
    /// The exchange of a stream this slot held before, kept for the slot's next program (its
    /// box and its output buffer): a proxied stream allocates neither.
    pub(super) spare: Option<Box<Exchange>>,
    /// Request body bytes for the program, not yet written to its stdin (with a gateway
    /// configured, also what arrives before the request is answered: one read at most).
    pub(super) body_buf: Gathered,
    /// The last bytes of `body_buf` (those streamed to a program, the tail: nothing is
    /// gathered after them) whose window is not reopened yet: it reopens as the program takes
    /// them, so a program that reads nothing holds its stream to one window.
    pub(super) unconsumed: u64,
    /// Its body had no room in the connection's or the thread's gathered bytes
    /// (`protocol/gather.rs`): reset with REFUSED_STREAM.
    pub(super) short_of_room: bool,
    /// The block being received is trailers: ignored.
    pub(super) trailers: bool,
    /// Bytes of the header block so far (names, values, 4 a field: their HTTP/1.1 size);
    /// past the head limit nothing more is stored and the request is a 431.
    pub(super) head_bytes: usize,
    /// Fields of the request, as HTTP/1.1 counts them (`:authority` as `host`, the other
    /// pseudo-headers as the request line): past `max_headers` the request is a 431.
    pub(super) field_count: usize,
    /// The header list passed the session's limit (SETTINGS_MAX_HEADER_LIST_SIZE): a 431.
    pub(super) list_too_large: bool,
    /// A `cookie` field was counted: the next ones are the same HTTP/1.1 line (RFC 9113 8.2.3).
    pub(super) cookie_seen: bool,
    /// The port `:scheme` implies (`443`, `80`; empty if neither), which an authority may omit.
    pub(super) default_port: &'static [u8],
    /// A `host` field names another entity than `:authority` (RFC 9113 8.3.1): a 400.
    pub(super) host_differs: bool,
    pub(super) content_length: Option<u64>,
    pub(super) body_in: u64,
    /// The request body's clock while the client's side is open (its request complete, no
    /// END_STREAM yet): counted in `Streams::open_bodies`.
    pub(super) body: Option<BodyClock>,
    /// Reset for a body past the limit, late, or not waited for.
    pub(super) cut: bool,
    /// The client ended its side (END_STREAM received).
    pub(super) ended: bool,
    /// A program's request whose body's length is not said up front: answered at its
    /// END_STREAM, once the body is whole (see `H2::awaiting`).
    pub(super) awaits_end: bool,
    /// Basic authentication's verdict at the head of a request that awaits its end: kept,
    /// not checked (nor counted) again when it is answered.
    pub(super) verdict: Option<Verdict>,
    /// The request was answered (until then its header block is under way).
    pub(super) answered: bool,
    /// The response went out whole (our END_STREAM written).
    pub(super) complete: bool,
    pub(super) out: Out,
    /// A cached file's prebuilt head, whose values were submitted without a copy: nghttp2
    /// may read them until it says the HEADERS frame was sent (its documented contract for
    /// NO_COPY fields), so they are kept until then, never dropped by `trim`: the cache
    /// evicting the file version meanwhile frees nothing nghttp2 may read. A stream released
    /// before its HEADERS went out hands its head to [`Streams::unsent_heads`].
    pub(super) head: Option<Rc<ReprFields>>,
    /// Body bytes not framed yet.
    pub(super) left: u64,
    /// Bytes of a body generated for this stream alone (a listing, an error page), counted in
    /// `Streams::generated` until framed whole.
    pub(super) own: u64,
    /// Its access-log line, held until the stream ends (`h2/logging.rs`).
    pub(super) log: Option<HeldLog>,
}

impl Stream {
    /// Its program, application or upstream holds its window: body bytes it has not taken yet,
    /// so the client may be unable to send, and that time is not the client's (its body
    /// clock is left out until they are taken: `gateway::body_taken`).
    pub(super) fn window_held(&self) -> bool {
        self.unconsumed > 0 && self.gateway.as_ref().is_some_and(|g| !g.done)
    }

    /// Starts the body's clock again at `now` (if a body is awaited).
    pub(super) fn restart_body_clock(&mut self, now: Instant) {
        if let Some(clock) = self.body.as_mut() {
            *clock = BodyClock::start(now);
        }
    }

    pub(super) fn free() -> Stream {
        Stream {
            id: 0,
            values: Vec::new(),
            method: (0, 0),
            path: (0, 0),
            authority: None,
            fields: Vec::new(),
            others: Vec::new(),
            gateway: None,
            spare: None,
            body_buf: Gathered::default(),
            unconsumed: 0,
            short_of_room: false,
            trailers: false,
            head_bytes: 0,
            field_count: 0,
            list_too_large: false,
            cookie_seen: false,
            default_port: b"",
            host_differs: false,
            content_length: None,
            body_in: 0,
            body: None,
            cut: false,
            ended: false,
            awaits_end: false,
            verdict: None,
            answered: false,
            complete: false,
            out: Out::None,
            head: None,
            left: 0,
            own: 0,
            log: None,
        }
    }

    /// Gives back request storage past what an ordinary request needs.
    pub(super) fn trim(&mut self) {
        self.values.clear();
        if self.values.capacity() > KEEP_CAPACITY {
            self.values = Vec::new();
        }
        self.fields.clear();
        if self.fields.capacity() * size_of::<Field>() > KEEP_CAPACITY {
            self.fields = Vec::new();
        }
        self.others.clear();
    }

    /// The stream's program is done with: its exchange kept as the slot's spare (its output
    /// buffer too, unless a large response grew it). Its log record's copies and any partial
    /// head are freed: only the box and the buffer are kept, as the spares count them.
    fn retire_exchange(&mut self) {
        if let Some(mut x) = self.gateway.take() {
            if x.buf.capacity() > KEEP_OUTPUT {
                x.buf = Vec::new();
            }
            x.rec = Record::counted_only();
            x.head = HeadReader::new(0, false);
            self.spare = Some(x);
        }
    }

    /// `x` boxed for this slot's stream: in the spare's box, with its output buffer, if the
    /// slot has one.
    pub(super) fn boxed(&mut self, x: Exchange) -> Box<Exchange> {
        match self.spare.take() {
            Some(mut b) => {
                let mut buf = std::mem::take(&mut b.buf);
                buf.clear();
                *b = x;
                b.buf = buf;
                b
            }
            None => Box::new(x),
        }
    }

    pub(super) fn open(&mut self, id: StreamId) {
        self.id = id;
        self.values.clear();
        self.method = (0, 0);
        self.path = (0, 0);
        self.authority = None;
        self.fields.clear();
        self.others.clear();
        self.retire_exchange();
        self.body_buf = Gathered::default();
        self.unconsumed = 0;
        self.short_of_room = false;
        self.trailers = false;
        self.head_bytes = 0;
        self.field_count = 0;
        self.list_too_large = false;
        self.cookie_seen = false;
        self.default_port = b"";
        self.host_differs = false;
        self.content_length = None;
        self.body_in = 0;
        self.body = None;
        self.cut = false;
        self.ended = false;
        self.awaits_end = false;
        self.verdict = None;
        self.answered = false;
        self.complete = false;
        self.out = Out::None;
        self.left = 0;
        self.own = 0;
    }
}

/// The session's handler: the streams, and the output queue while frames are written.
pub(super) struct Streams {
    /// Slots, reused; at most `cap` (nghttp2 refuses streams past MAX_CONCURRENT_STREAMS before
    /// asking, the few more cover streams closing).
    pub(super) slots: Vec<Stream>,
    pub(super) cap: usize,
    /// The head limit (`max_header_bytes`): what one stream's request may store.
    pub(super) max_head: usize,
    /// An access log is kept: `referer` and `user-agent` are carried for it (read by nothing else).
    pub(super) log_fields: bool,
    /// Keep every request field (`Stream::others`): a gateway is configured.
    pub(super) keep_all: bool,
    /// What the connection's and the thread's kept bodies may hold (`protocol/gather.rs`).
    pub(super) budget: Budget,
    /// The session's buffers, lent for `send`.
    pub(super) bufs: Option<Bufs>,
    /// Bytes queued during this `send`.
    pub(super) queued: u64,
    /// Bytes the connection had queued before this `send`: a frame larger than the room is
    /// taken only into an empty queue (or no frame would ever fit), never on top of another.
    pub(super) before: u64,
    /// Bytes that may still be queued in this `send` (the rest waits in nghttp2).
    pub(super) room: u64,
    /// Streams whose request is complete, to answer once `recv` returns.
    pub(super) ready: Vec<StreamId>,
    /// The time of the input being read (the worker's clock), for the body clocks.
    pub(super) now: Instant,
    /// Streams with a body clock (see `Stream::body`): none, and no stream is looked at.
    pub(super) open_bodies: usize,

    /// Small generated bodies being framed; emptied when no stream uses it.
    pub(super) arena: Vec<u8>,
    pub(super) arena_users: usize,
    /// Bytes of generated bodies not framed yet (see `Stream::own`): while past the output
    /// bound, no more requests are answered.
    pub(super) generated: u64,
    /// The slot found last: a header block's fields come one by one for the same stream.
    pub(super) last: usize,
    /// The slot a stream was last seen in, by its id's low bits (checked before use: a stale or
    /// shared hint costs a search, never a wrong slot).
    pub(super) hints: [u16; HINTS],
    /// Slots freed, the latest last: where the next streams go, without a search (each is
    /// checked before use; never longer than `slots`, so it allocates only as they grow).
    pub(super) freed: Vec<usize>,
    /// The latest streams the client ended (END_STREAM, then a normal close, or its own
    /// RST_STREAM) and nghttp2 has since closed and forgotten. A DATA or HEADERS frame on one is
    /// a connection error of type STREAM_CLOSED (RFC 9113 5.1, "closed": "An endpoint that
    /// receives any frames after receiving a frame with the END_STREAM flag set MUST treat that
    /// as a connection error"), which nghttp2, once it has freed the stream, cannot tell from a
    /// frame that crossed our RST_STREAM (which must be ignored) and so ignores: whether the
    /// client's next frame found the stream still open would otherwise depend on how its bytes
    /// were cut into reads. Streams we reset never enter; past the ring's size, the oldest
    /// are forgotten (and such a frame ignored, as nghttp2 does), never wrongly refused.
    pub(super) ended: [StreamId; ENDED_RING],
    ended_next: usize,
    /// A WINDOW_UPDATE arrived, or body bytes were framed, since the driver last asked: a body
    /// paced by the client's flow control is progressing (see `conn`'s send deadline). Control
    /// frames written (PING ACKs and the like) are not progress.
    pub(super) progressed: bool,
    /// Requests refused on this connection: malformed (reset), or answered with an error for
    /// what they are (400, 413, 414, 431, ...). Past `MAX_REFUSED` the connection ends.
    pub(super) refused: u32,
    /// Prebuilt heads of streams closed (or answered twice) before nghttp2 said their HEADERS
    /// was sent: the frame may still sit in nghttp2's queue, pointing at them, until the queue
    /// is empty ([`Streams::queue_emptied`]). Only a stream reset before its answer went out
    /// lands here, so it stays empty (and allocates nothing) in the usual case.
    pub(super) unsent_heads: Vec<Rc<ReprFields>>,
    /// Held log lines of streams that ended, with the DATA bytes each framed, to be written
    /// after the session's call (`h2/logging.rs`).
    pub(super) ended_logs: Vec<(HeldLog, u64)>,
    pub(super) counts: Counts,
}

impl Streams {
    pub(super) fn new(cap: usize, max_head: usize, log_fields: bool, now: Instant) -> Streams {
        Streams {
            slots: Vec::new(),
            cap,
            max_head,
            log_fields,
            keep_all: false,
            budget: Budget::for_max_body(0),
            bufs: None,
            queued: 0,
            before: 0,
            room: 0,
            ready: Vec::new(),

            now,
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
            refused: 0,
            unsent_heads: Vec::new(),
            ended_logs: Vec::new(),
            counts: Counts::default(),
        }
    }

    /// Takes a storage set's slots (all free) and freed stack.
    pub(super) fn wake(&mut self, slots: Vec<Stream>, freed: Vec<usize>) {
        self.slots = slots;
        self.freed = freed;
        self.freed.clear();
        // The latest last: slot 0 is taken first.
        self.freed.extend((0..self.slots.len()).rev());
        self.last = 0;
    }

    /// Gives up the slots and the freed stack (every slot free).
    pub(super) fn rest(&mut self) -> (Vec<Stream>, Vec<usize>) {
        (
            std::mem::take(&mut self.slots),
            std::mem::take(&mut self.freed),
        )
    }

    pub(super) fn open(&self) -> usize {
        self.slots.iter().filter(|s| s.id != 0).count()
    }

    /// The slot of stream `id` (not 0): the last one found, else the one its hint names, else
    /// a search (frames of a hundred streams interleave: a search for each was a tenth of an
    /// answer's profile).
    pub(super) fn index(&mut self, id: StreamId) -> Option<usize> {
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

    pub(super) fn slot(&mut self, id: StreamId) -> Option<&mut Stream> {
        let i = self.index(id)?;
        Some(&mut self.slots[i])
    }

    pub(super) fn remember_ended(&mut self, id: StreamId) {
        self.ended[self.ended_next] = id;
        self.ended_next = (self.ended_next + 1) % ENDED_RING;
    }

    pub(super) fn full(&self, more: u64) -> bool {
        self.before + self.queued > 0 && self.queued + more > self.room
    }

    /// A stream is done with its body in the arena: the arena empties with its last user, and
    /// gives back its memory if a large listing grew it.
    pub(super) fn arena_done(&mut self) {
        self.arena_users -= 1;
        if self.arena_users == 0 {
            self.arena.clear();
            if self.arena.capacity() > ARENA_KEEP {
                self.arena = Vec::new();
            }
        }
    }

    /// The client's side of stream `i` ended (or the stream is gone): its body is not awaited.
    pub(super) fn body_ended(&mut self, i: usize) {
        if self.slots[i].body.take().is_some() {
            self.open_bodies -= 1;
        }
    }

    /// Keeps a stream's prebuilt head until nghttp2's queue is empty, when its HEADERS was
    /// not said sent: the slot is about to take another (or be freed).
    pub(super) fn keep_unsent_head(&mut self, head: Rc<ReprFields>) {
        self.unsent_heads.push(head);
    }

    /// nghttp2's output queue is empty: no queued frame points at a kept head any more.
    pub(super) fn queue_emptied(&mut self) {
        self.unsent_heads.clear();
    }

    pub(super) fn release(&mut self, i: usize) {
        self.body_ended(i);
        if matches!(self.slots[i].out, Out::Arena { .. }) {
            self.arena_done();
        }
        self.generated -= std::mem::take(&mut self.slots[i].own);
        if self.freed.len() < self.slots.len() {
            self.freed.push(i);
        }
        if let Some(log) = self.slots[i].log.take() {
            // What was framed of its body (the rest, `left`, never will be).
            let sent = log.body_bytes().saturating_sub(self.slots[i].left);
            self.ended_logs.push((log, sent));
        }
        let s = &mut self.slots[i];
        s.id = 0;
        s.awaits_end = false;
        s.verdict = None;
        s.out = Out::None; // drops the shared body or the file
        if let Some(head) = s.head.take() {
            // Its HEADERS was never said sent: nghttp2 may still hold it in its queue.
            self.unsent_heads.push(head);
        }
        s.retire_exchange();
        s.body_buf = Gathered::default();
        // (Its window no longer matters: the stream is closed.)
        s.unconsumed = 0;
        s.trim();
    }
}

/// Where stream `id`'s slot hint is kept.
pub(super) fn hint_of(id: StreamId) -> usize {
    (id as usize >> 1) % HINTS
}

#[cfg(test)]
mod tests;
