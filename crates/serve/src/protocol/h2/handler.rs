//! The nghttp2 session's callbacks on the stream table: a stream opened in a free slot, its
//! request's fields kept (those the responder reads, bounded by the head limit), its body
//! counted against its clock, its end and close recorded; frames written into the connection's
//! output queue within its room, DATA straight from the stream's body. Apart from `h2.rs`,
//! whose answer path calls into nghttp2, which calls these.

use http2::{error_code, frame_type, FrameVerdict, Handler, HeaderVerdict, HeadersKind, StreamId};
use wire::FieldName;

use super::streams::{hint_of, Out, Stream, Streams};
use crate::pool::Seg;
use crate::protocol::body::BodyClock;

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
            Some(s) if matches!(s.out, Out::Gateway) => match s.gateway.as_ref() {
                Some(g) => g.body_ready(max),
                None => http2::Body::Reset,
            },
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
        if let (Out::Gateway, Some(g)) = (&s.out, s.gateway.as_mut()) {
            g.take_into(len, &mut b.out);
        }
        b.push_mem(start);
        match &mut s.out {
            Out::None | Out::Arena { .. } | Out::Gateway => {}
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
            if let Some(log) = s.log.take() {
                // Its body framed whole (END_STREAM with it): logged after this send, not
                // when the stream closes (which may wait for a request body still coming).
                let whole = log.body_bytes();
                self.ended_logs.push((log, whole));
            }
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

    /// A server session's checks name each field they pass: the name is matched once, there.
    fn on_request_header(
        &mut self,
        stream: StreamId,
        known: FieldName,
        name: &[u8],
        value: &[u8],
    ) -> HeaderVerdict {
        let (max_head, log_fields, keep_all) = (self.max_head, self.log_fields, self.keep_all);
        let Some(s) = self.slot(stream) else {
            return HeaderVerdict::ResetStream;
        };
        if s.trailers {
            return HeaderVerdict::Accept;
        }
        // HPACK lets a few bytes on the wire stand for a large field (an indexed entry repeats a
        // 4 KB value for one byte): what is stored is bounded by the head limit, as HTTP/1.1's
        // head is, not by the header list size the session enforces. Counted as HTTP/1.1 has
        // them: the request line is not a field, `:authority` stands for `host` (and a `host`
        // beside it is that line again), and `cookie` fields are one line of values joined by
        // "; " (RFC 9113 8.2.3 lets a client send one field a cookie, as Firefox does).
        let same_line = match known {
            FieldName::Host => s.authority.is_some(),
            FieldName::Cookie => std::mem::replace(&mut s.cookie_seen, true),
            _ => false,
        };
        if same_line {
            s.head_bytes += value.len() + 2;
        } else {
            s.head_bytes += name.len() + value.len() + 4;
            s.field_count += usize::from(!matches!(
                known,
                FieldName::Method | FieldName::Path | FieldName::Scheme
            ));
        }
        if s.head_bytes > max_head {
            return HeaderVerdict::Accept;
        }
        let mut keep = |v: &[u8]| {
            let start = s.values.len();
            s.values.extend_from_slice(v);
            (start, s.values.len())
        };
        let carried: &'static [u8] = match known {
            FieldName::Method => {
                s.method = keep(value);
                return HeaderVerdict::Accept;
            }
            FieldName::Path => {
                s.path = keep(value);
                return HeaderVerdict::Accept;
            }
            FieldName::Authority => {
                s.authority = Some(keep(value));
                return HeaderVerdict::Accept;
            }
            FieldName::ContentLength => {
                s.content_length = std::str::from_utf8(value).ok().and_then(|v| v.parse().ok());
                return HeaderVerdict::Accept;
            }
            // RFC 9113 8.3.1: `:authority` is the target's authority, and a `host` beside it
            // must name the same (compared as RFC 3986 6.2.2.1 and 6.2.3 normalise them).
            FieldName::Host => {
                if let Some((a, b)) = s.authority {
                    s.host_differs |= !same_authority(&s.values[a..b], value, s.default_port);
                    return HeaderVerdict::Accept;
                }
                b"host"
            }
            FieldName::Scheme => {
                s.default_port = match value {
                    b"https" => b"443",
                    b"http" => b"80",
                    _ => b"",
                };
                return HeaderVerdict::Accept;
            }
            FieldName::IfMatch
            | FieldName::IfNoneMatch
            | FieldName::IfModifiedSince
            | FieldName::IfUnmodifiedSince
            | FieldName::Range
            | FieldName::IfRange
            | FieldName::AcceptEncoding => known.lower(),
            FieldName::UserAgent | FieldName::Referer if log_fields => known.lower(),
            // Always to wire, protected prefix or not: two of them are refused there (a gateway
            // or a log past this server could read one and an upstream the other).
            FieldName::Authorization => known.lower(),
            _ => {
                if keep_all {
                    let (n, v) = (keep(name), keep(value));
                    s.others.push((n, v));
                }
                return HeaderVerdict::Accept;
            }
        };
        let range = keep(value);
        s.fields.push((carried, range));
        HeaderVerdict::Accept
    }

    fn on_header_list_too_large(&mut self, stream: StreamId) {
        // No more of its fields come: the request is answered 431 once its block ends.
        if let Some(s) = self.slot(stream).filter(|s| !s.trailers) {
            s.list_too_large = true;
        }
    }

    fn on_malformed_request(&mut self, stream: StreamId) {
        // The session resets the stream: nothing more of it is answered. Its slot stays until
        // the stream closes (`on_stream_close`, once the reset is written): a DATA frame of its
        // response may be waiting in nghttp2 for the queue to drain, and is written from the
        // slot before the reset can leave.
        self.refused += 1;
        if let Some(s) = self.slot(stream) {
            s.cut = true;
        }
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
        self.on_data_paced(stream, data);
    }

    /// Returns the bytes whose window reopens now: all but those streamed to a program.
    fn on_data_paced(&mut self, stream: StreamId, data: &[u8]) -> usize {
        let (now, keep_all, budget) = (self.now, self.keep_all, self.budget);
        let Some(i) = self.index(stream) else {
            return data.len();
        };
        // Gathered (charged to the connection's and the thread's room): a body of unknown
        // length no program has yet. An upload streamed to a running program, or one of a
        // said length, is held by its window: reopened only as the program takes it.
        let s = &self.slots[i];
        let gathered = s.content_length.is_none() && s.gateway.is_none() && !s.answered;
        // What the connection's gathered bodies hold: summed only when this one must grow.
        let held = if gathered && s.body_buf.grows(data.len()) {
            (self.slots.iter()).map(|s| s.body_buf.held()).sum()
        } else {
            0
        };
        let s = &mut self.slots[i];
        // Kept for a program (bounded by `max_body_bytes`: past it the stream is reset;
        // and, gathered, by the connection's and the thread's room: short of it, refused).
        let for_program = s.gateway.as_ref().map_or(!s.answered, |g| g.takes_body());
        let streamed = keep_all && for_program && !s.short_of_room && !gathered;
        if streamed {
            s.body_buf.push_streamed(data);
            s.unconsumed += data.len() as u64;
        } else if keep_all && for_program && !s.short_of_room {
            s.short_of_room = s.body_buf.push(data, held, budget).is_err();
        }
        s.body_in += data.len() as u64;
        if let Some(clock) = s.body.as_mut() {
            clock.add(data.len() as u64, now);
        }
        if streamed {
            0
        } else {
            // Dropped, or gathered within the connection's and the thread's room.
            data.len()
        }
    }

    fn on_data_end(&mut self, stream: StreamId) {
        if let Some(i) = self.index(stream) {
            self.slots[i].ended = true;
            self.body_ended(i);
        }
    }

    fn on_headers_sent(&mut self, stream: StreamId) {
        // nghttp2 has packed the HEADERS: it reads the prebuilt values no more.
        if let Some(s) = self.slot(stream) {
            s.head = None;
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

/// Whether a `host` value names the authority `:authority` does (RFC 9113 8.3.1): the host
/// without case (RFC 3986 6.2.2.1), the port once an empty one or the scheme's default is
/// dropped (6.2.3: `example.com:443` is `example.com` for https).
fn same_authority(authority: &[u8], host: &[u8], default_port: &[u8]) -> bool {
    let (ah, ap) = host_and_port(authority);
    let (hh, hp) = host_and_port(host);
    let implied = |p: &[u8]| p.is_empty() || p == default_port;
    ah.eq_ignore_ascii_case(hh) && (ap == hp || (implied(ap) && implied(hp)))
}

/// An authority's host and port (empty if none): the port follows the last `:`, unless that is
/// inside an IPv6 literal (`[::1]`).
fn host_and_port(a: &[u8]) -> (&[u8], &[u8]) {
    match a.iter().rposition(|&c| c == b':') {
        Some(i) if !a[i..].contains(&b']') => (&a[..i], &a[i + 1..]),
        _ => (a, b""),
    }
}
