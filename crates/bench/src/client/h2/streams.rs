//! One HTTP/2 connection's streams and what nghttp2 tells about them: the [`Io`] handler that a
//! `Session` calls from inside `recv` and `send`. It only notes what happened (a status, body
//! bytes, a stream closed, SETTINGS, GOAWAY) in the stream table (`client/in_flight.rs`) and
//! queues what the session writes; the connection (`h2.rs`) acts on the notes after each call,
//! with the page logic.

use super::super::app::AppStream;
use super::super::exchange::{Exchange, PageRef};
use super::super::in_flight::{waiting_since, InFlight, InFlightSlot};
use super::super::redirects::Locations;
use super::super::NONE;
use crate::stats::Http2Stats;
use crate::transport::LOW_WATER_FLOOR;
use http2::frame_type::{CONTINUATION, DATA, HEADERS};
use http2::{Body, Handler, HeaderVerdict, StreamId};
use std::sync::Arc;

/// What the session may queue for the socket before it is told to wait: a page's HEADERS and
/// a few DATA frames of request bodies.
const OUT_LIMIT: usize = 64 * 1024;

/// One stream in flight.
#[derive(Debug, Clone)]
pub(super) struct Stream {
    /// Its stream id (0 in a free slot: the table knows which slots are in flight).
    pub id: StreamId,
    /// Its `written_us` is when nghttp2 put its HEADERS in the output (NONE until then: a
    /// stream the server's limit holds in nghttp2's queue has not been sent).
    pub ex: Exchange,
    /// DATA payload bytes received, padding included (the body is `ex.body_bytes`).
    pub data_bytes: u64,
    /// The response's `content-length` (`NONE` without one).
    pub length: u64,
    /// The stream is closed: `code` is its error code (0 for a normal end).
    pub closed: bool,
    pub code: u32,
    /// The server reset it.
    pub reset: bool,
    /// The server's DATA ended the stream (END_STREAM), whatever nghttp2 then made of it.
    pub data_ended: bool,
    /// Never processed, safe to send again (not failed): above the last stream of the
    /// server's GOAWAY, or reset with REFUSED_STREAM (RFC 9113 section 8.7).
    pub refused: bool,
    body: Option<Arc<[u8]>>,
    /// Its body is its slot's own (`AppStream::request_body`, built per use), not `body`.
    pub own_body: bool,
    /// Body bytes handed to nghttp2 so far (DATA produced).
    pub body_pos: usize,
}

impl Stream {
    /// Its DATA ended short of the `content-length` its HEADERS announced: a short body, which
    /// nghttp2 takes for a malformed response and ends the connection over (PROTOCOL_ERROR).
    pub(super) fn short_body(&self) -> bool {
        self.data_ended && self.length != NONE && self.ex.body_bytes < self.length
    }

    /// Every byte read of its response: its header block and DATA payloads, padding included
    /// (what a failed or unfinished stream accounts for).
    pub(super) fn bytes_read(&self) -> u64 {
        self.ex.bytes() + self.data_bytes - self.ex.body_bytes
    }
}

impl InFlightSlot for Stream {
    // Client streams are odd: 1, 3, 5, ...
    const KEY_SHIFT: u32 = 1;
    const FREE: Stream = Stream {
        id: 0,
        ex: Exchange::new(PageRef::NONE),
        data_bytes: 0,
        length: NONE,
        closed: false,
        code: 0,
        reset: false,
        data_ended: false,
        refused: false,
        body: None,
        own_body: false,
        body_pos: 0,
    };

    fn exchange(&self) -> &Exchange {
        &self.ex
    }

    // `vacate` is the table's own: a whole move out and `FREE` written back, each one
    // `memcpy`. Copying the fields out one by one instead (taking only the body's `Arc`)
    // made closing a stream 59 instructions dearer (callgrind of `--streams 10`, the
    // inclusive cost of `streams_closed`): the inlined field copies cost more than the
    // write-back they saved.
}

/// The handler of one connection's session.
pub(super) struct Io {
    /// What the session wrote and the socket has not taken yet, from `out_pos`.
    pub out: Vec<u8>,
    pub out_pos: usize,
    /// Streams in flight, keyed by stream id, and the exchanges to send again on a new
    /// connection.
    pub flight: InFlight<Stream>,
    /// Slots of streams that closed during the last `recv`, in order.
    pub closed: Vec<u32>,
    /// The time of the `recv` or `send` in progress (a response's first byte, a request's
    /// HEADERS written).
    pub now: u64,
    /// The server's SETTINGS arrived.
    pub settings: bool,
    /// The server's GOAWAY: its last stream id.
    pub goaway: Option<StreamId>,
    /// A frame broke the protocol (nghttp2 answered it).
    pub invalid: bool,
    /// A response on this connection announced a body of at least the low-water floor: only
    /// then is what is owed worth adding up (`owed`) after each read.
    pub large_bodies: bool,
    /// nghttp2 ended the connection for an error of the server's (its GOAWAY with an error
    /// code is written): a malformed frame or response, whether or not `invalid` said so.
    pub error_goaway_sent: bool,
    /// Counters since the connection last flushed them into the statistics.
    pub counts: Http2Stats,
    /// `--debug`: each response header block received, as text, until the connection prints
    /// it after the `recv` (`None` without `--debug`).
    pub debug: Option<Vec<u8>>,
    /// `--redirect N`: the streams' Location fields, noted for the page logic.
    pub follow: bool,
    pub locations: Locations,
    /// An application workload: per slot of the stream table, what its stream keeps (empty
    /// otherwise).
    pub app: Vec<AppStream>,
}

impl Io {
    pub(super) fn new(max_streams: usize) -> Io {
        let flight = InFlight::new(max_streams);
        Io {
            out: Vec::new(),
            out_pos: 0,
            closed: Vec::with_capacity(flight.capacity()),
            flight,
            now: 0,
            settings: false,
            goaway: None,
            invalid: false,
            error_goaway_sent: false,
            large_bodies: false,
            counts: Http2Stats::default(),
            debug: None,
            follow: false,
            locations: Locations::default(),
            app: Vec::new(),
        }
    }

    /// An application workload: each slot of the stream table keeps its stream's request body
    /// and response (`h2/app.rs`).
    pub(super) fn keep_app_streams(&mut self) {
        self.app = (0..self.flight.capacity())
            .map(|_| AppStream::default())
            .collect();
    }

    /// An application workload: the stream of `slot` is done; its large buffers are given back.
    pub(super) fn release_app(&mut self, slot: usize) {
        if let Some(a) = self.app.get_mut(slot) {
            a.release();
        }
    }

    /// Whether `id`'s request had not left whole when the run ended: nghttp2 had not put its
    /// HEADERS in the output yet (the server's limit held it), nor all of its body (flow
    /// control held it), or a frame of its header block or body is still in the output the
    /// socket had not taken (the output starts at a frame: it is emptied only once written
    /// whole). Read at the end only.
    pub(super) fn unsent_at_end(&self, s: &Stream) -> bool {
        let body_left = self
            .find(s.id)
            .is_some_and(|i| s.body_pos < request_body(s, &self.app, i).len());
        if s.ex.written_us == NONE || body_left {
            return true;
        }
        let (id, out) = (s.id, &self.out);
        let mut pos = 0;
        while pos + 9 <= out.len() {
            let len = usize::from(out[pos]) << 16
                | usize::from(out[pos + 1]) << 8
                | usize::from(out[pos + 2]);
            let ty = out[pos + 3];
            let sid = (u32::from_be_bytes([out[pos + 5], out[pos + 6], out[pos + 7], out[pos + 8]])
                & 0x7fff_ffff) as StreamId;
            let end = pos + 9 + len;
            let request = matches!(ty, HEADERS | CONTINUATION | DATA);
            if request && sid == id && end > self.out_pos {
                return true;
            }
            pos = end;
        }
        false
    }

    /// Forgets the connection: its streams, its output, what it said (the exchanges to send
    /// again stay, for the next connection).
    pub(super) fn reset(&mut self) {
        self.out.clear();
        self.out_pos = 0;
        self.flight.clear();
        self.closed.clear();
        self.settings = false;
        self.goaway = None;
        self.invalid = false;
        self.error_goaway_sent = false;
        self.large_bodies = false;
        self.locations.clear();
    }

    /// The slot of stream `id`, if it is in flight.
    #[inline]
    pub(super) fn find(&self, id: StreamId) -> Option<usize> {
        if id <= 0 {
            return None;
        }
        self.flight.find(id as u64)
    }

    /// Puts stream `id` in a free slot (there is one: the table is twice the streams allowed),
    /// every field written in place (no stream built apart and moved in).
    #[inline]
    pub(super) fn insert(&mut self, id: StreamId, ex: Exchange, body: Option<Arc<[u8]>>) -> usize {
        self.flight.insert_with(id as u64, |s| {
            // Every field named (no `..`): a field added to `Stream` is set here too.
            let Stream {
                id: s_id,
                ex: s_ex,
                data_bytes,
                length,
                closed,
                code,
                reset,
                data_ended,
                refused,
                body: s_body,
                own_body,
                body_pos,
            } = s;
            (*s_id, *s_ex, *s_body) = (id, ex, body);
            (*data_bytes, *length, *code, *body_pos) = (0, NONE, 0, 0);
            (*closed, *reset, *data_ended, *refused, *own_body) =
                (false, false, false, false, false);
        })
    }

    #[inline]
    pub(super) fn stream(&mut self, slot: usize) -> &mut Stream {
        self.flight.get_mut(slot)
    }

    /// Takes a closed stream out of the table.
    pub(super) fn take(&mut self, slot: usize) -> Stream {
        self.flight.take(slot)
    }

    /// The slot of a stream in flight written at or before `at`, if any.
    pub(super) fn expired(&self, at: u64) -> Option<usize> {
        (self.flight).position(|s| !s.closed && waiting_since(&s.ex) <= at)
    }

    /// Whether the server may have processed a stream: neither refused nor above its GOAWAY's
    /// last stream.
    pub(super) fn processed(&self, s: &Stream) -> bool {
        !s.refused && s.id <= self.goaway.unwrap_or(StreamId::MAX)
    }

    /// The slot of a stream in flight that the server never processed (above its GOAWAY's last
    /// stream, or refused), if any.
    pub(super) fn unprocessed(&self) -> Option<usize> {
        self.flight.position(|s| !self.processed(s))
    }

    /// Body bytes the server still owes: of each open stream whose body has begun (not a HEAD's
    /// or a 304's, which announce a length and send none), its `content-length` less what came.
    pub(super) fn owed(&self) -> u64 {
        (self.flight.iter())
            .map(|(_, s)| s)
            .filter(|s| !s.closed && s.ex.body_bytes > 0 && s.length != NONE)
            .map(|s| s.length.saturating_sub(s.ex.body_bytes))
            .sum()
    }

    #[inline]
    fn with(&mut self, id: StreamId, f: impl FnOnce(&mut Stream)) {
        if let Some(i) = self.find(id) {
            f(self.flight.get_mut(i));
        }
    }
}

impl Handler for Io {
    /// All or nothing: nghttp2 offers one frame (or the rest of one) at a time, and taking
    /// part of it would start the next `out` inside a frame, where the end of the run's cut
    /// (`cut_at_end.rs`) reads `out` frame by frame from its start and could put a RST_STREAM
    /// inside a frame. A frame larger than the room goes when nothing waits before it.
    fn write(&mut self, bytes: &[u8]) -> usize {
        let waiting = self.out.len() - self.out_pos;
        if waiting > 0 && waiting + bytes.len() > OUT_LIMIT {
            return 0; // WOULDBLOCK: nghttp2 offers the same bytes at the next `send`
        }
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn body_ready(&mut self, stream: StreamId, max: usize) -> Body {
        let Some(i) = self.find(stream) else {
            return Body::Reset;
        };
        let s = self.flight.get(i);
        let left = request_body(s, &self.app, i).len() - s.body_pos;
        let len = left.min(max);
        Body::Ready {
            len,
            end: len == left,
        }
    }

    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        if self.out.len() - self.out_pos + 9 + len > OUT_LIMIT {
            return false;
        }
        let Some(i) = self.find(stream) else {
            return false;
        };
        let s = self.flight.get(i);
        if s.body.is_none() && !s.own_body {
            return false;
        }
        let (pos, body) = (s.body_pos, request_body(s, &self.app, i));
        self.out.extend_from_slice(frame_header);
        self.out.extend_from_slice(&body[pos..pos + len]);
        self.flight.get_mut(i).body_pos += len;
        true
    }

    fn on_begin_headers(&mut self, stream: StreamId, _kind: http2::HeadersKind) {
        if let Some(text) = &mut self.debug {
            debug_block(text, stream, "response");
        }
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        if let Some(text) = &mut self.debug {
            debug_field(text, name, value);
        }
        if !self.app.is_empty() {
            if let Some(i) = self.find(stream) {
                self.app[i].on_field(name, value);
            }
        }
        match wire::FieldName::of_lower(name) {
            wire::FieldName::Status => {
                // Three digits (nghttp2 has checked); anything else is no status.
                let status = match *value {
                    [a, b, c] if value.iter().all(u8::is_ascii_digit) => {
                        u16::from(a - b'0') * 100 + u16::from(b - b'0') * 10 + u16::from(c - b'0')
                    }
                    _ => 0,
                };
                self.with(stream, |s| s.ex.status = status);
            }
            wire::FieldName::ContentLength => {
                // Digits only (nghttp2 has checked); what is owed of the body (`owed`).
                let length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                let length = length.unwrap_or(NONE);
                self.large_bodies |= length != NONE && length >= LOW_WATER_FLOOR;
                self.with(stream, |s| s.length = length);
            }
            wire::FieldName::Location if self.follow => self.locations.note(stream, value),
            _ => {}
        }
        HeaderVerdict::Accept
    }

    fn on_headers_end(&mut self, stream: StreamId, _end_stream: bool) {
        let now = self.now;
        self.with(stream, |s| {
            if s.ex.first_byte_us == NONE {
                s.ex.first_byte_us = now;
            }
        });
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        let Some(i) = self.find(stream) else { return };
        self.flight.get_mut(i).ex.body_bytes += data.len() as u64;
        if let Some(kept) = self.app.get_mut(i) {
            kept.on_body(data);
        }
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        if let Some(i) = self.find(stream) {
            let goaway = self.goaway;
            let s = self.flight.get_mut(i);
            s.closed = true;
            s.code = error_code;
            // Above the GOAWAY's last stream, or refused by the server's reset: never
            // processed, safe to send again (a second refusal of the same exchange fails it).
            let refused_reset =
                s.reset && error_code == http2::error_code::REFUSED_STREAM && s.ex.first_refusal();
            s.refused = refused_reset || (!s.reset && goaway.is_some_and(|last| stream > last));
            self.closed.push(i as u32);
        }
    }

    fn on_rst_stream(&mut self, stream: StreamId, _error_code: u32) {
        self.with(stream, |s| s.reset = true);
    }

    fn on_goaway(&mut self, last_stream_id: StreamId, _error_code: u32) {
        self.goaway = Some(last_stream_id);
    }

    fn on_settings(&mut self) {
        self.settings = true;
    }

    fn on_headers_sent(&mut self, stream: StreamId) {
        // The request's HEADERS are in the output whole: written now (the socket takes the
        // output at once, or the stream counts as unsent at the end: `unsent_at_end`).
        let now = self.now;
        self.with(stream, |s| {
            if s.ex.written_us == NONE {
                s.ex.written_us = now;
            }
        });
    }

    fn on_frame_sent(&mut self, frame_type: u8, len: usize) {
        if frame_type == http2::frame_type::HEADERS {
            self.counts.header_bytes_sent += len as u64;
        }
    }

    fn on_invalid_frame(&mut self, _frame_type: u8, _error: http2::Error) {
        self.invalid = true;
    }

    fn on_goaway_sent(&mut self, _last_stream_id: StreamId, error_code: u32) {
        if error_code != http2::error_code::NO_ERROR {
            self.error_goaway_sent = true;
        }
    }
}

/// The body stream `s` (in slot `i`) sends: its slot's own, built per use, or the run's shared
/// one for its URL (none: empty).
pub(super) fn request_body<'a>(s: &'a Stream, app: &'a [AppStream], i: usize) -> &'a [u8] {
    match (s.own_body, &s.body) {
        (true, _) => &app[i].request_body,
        (false, Some(body)) => body,
        (false, None) => &[],
    }
}

/// `--debug`: the line that begins a header block of `stream`.
pub(super) fn debug_block(text: &mut Vec<u8>, stream: StreamId, what: &str) {
    if !text.is_empty() {
        text.push(b'\n');
    }
    text.extend_from_slice(format!("[HTTP/2 stream {stream}: {what}]\n").as_bytes());
}

/// `--debug`: one field of a header block, as `name: value`.
pub(super) fn debug_field(text: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    text.extend_from_slice(name);
    text.extend_from_slice(b": ");
    text.extend_from_slice(value);
    text.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_opened_in_a_slot_another_left_starts_as_a_free_one() {
        // Taking a stream writes `Stream::FREE` back into its slot (the table's own `vacate`)
        // and opening one sets its fields: the next stream there has every field of a new one,
        // whatever the last one set, and the body's `Arc` goes with the stream taken.
        let mut io = Io::new(2);
        let body: Arc<[u8]> = Arc::from(&b"request body"[..]);
        let slot = io.insert(1, Exchange::new(PageRef::NONE), Some(body.clone()));
        let s = io.stream(slot);
        (s.data_bytes, s.length, s.code, s.body_pos) = (7, 12, 8, 3);
        (s.closed, s.reset, s.data_ended, s.refused, s.own_body) = (true, true, true, true, true);
        s.ex.status = 200;
        let taken = io.take(slot);
        assert_eq!((taken.id, taken.code, taken.body_pos), (1, 8, 3));
        assert_eq!(
            Arc::strong_count(&body),
            2,
            "the body went with the stream taken"
        );
        drop(taken);
        assert_eq!(Arc::strong_count(&body), 1);
        // Same home slot: ids a table apart.
        let id = 1 + 2 * io.flight.capacity() as StreamId;
        let mut ex = Exchange::new(PageRef::NONE);
        ex.file_start_us = 5;
        assert_eq!(io.insert(id, ex, None), slot);
        let s = io.stream(slot);
        let free = Stream::FREE;
        assert_eq!((s.id, s.ex.file_start_us, s.ex.status), (id, 5, 0));
        assert_eq!(
            (s.data_bytes, s.length, s.code, s.body_pos),
            (free.data_bytes, free.length, free.code, free.body_pos)
        );
        assert!(!(s.closed || s.reset || s.data_ended || s.refused || s.own_body));
        assert!(s.body.is_none());
    }

    #[test]
    fn a_frame_the_output_has_no_room_for_is_not_taken_in_part() {
        // The output nearly full: a HEADERS frame offered is refused whole (nghttp2 offers it
        // again at the next `send`), so the next output starts at a frame.
        let mut io = Io::new(2);
        io.out = vec![0; OUT_LIMIT - 20];
        io.out_pos = 10;
        let headers = [0x55; 40];
        assert_eq!(Handler::write(&mut io, &headers), 0);
        assert_eq!((io.out.len(), io.out_pos), (OUT_LIMIT - 20, 10));
        // With room, it is taken whole; and a frame larger than the limit goes when nothing
        // waits before it.
        io.out_pos = 30;
        assert_eq!(Handler::write(&mut io, &headers), 40);
        assert_eq!(&io.out[OUT_LIMIT - 20..], &headers);
        io.out.clear();
        io.out_pos = 0;
        let big = vec![0x66; OUT_LIMIT + 9];
        assert_eq!(Handler::write(&mut io, &big), big.len());
        assert_eq!(io.out, big);
    }
}
