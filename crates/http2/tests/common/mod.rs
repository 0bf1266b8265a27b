//! A client and a server `Session` wired together by byte buffers, and a handler that records
//! what happens and serves bodies from memory through the NO_COPY path.
#![allow(dead_code)] // each test file uses part of this

use std::collections::HashMap;

use http2::{Body, Error, Handler, HeaderVerdict, HeadersKind, Session, StreamId};

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    BeginHeaders(StreamId, HeadersKind),
    Header(StreamId, Vec<u8>, Vec<u8>),
    HeadersEnd(StreamId, bool),
    /// A server's request passed the header list limit.
    ListTooLarge(StreamId),
    Data(StreamId, usize),
    DataEnd(StreamId),
    Close(StreamId, u32),
    Rst(StreamId, u32),
    Goaway(StreamId, u32),
    GoawaySent(StreamId, u32),
    Settings,
    Invalid(u8, i32),
}

/// One side's handler: records events, keeps bodies to send, collects what it writes.
#[derive(Default)]
pub struct Peer {
    pub out: Vec<u8>,
    pub events: Vec<Event>,
    /// Body bytes received per stream.
    pub received: HashMap<StreamId, Vec<u8>>,
    /// Bodies to send per stream and how much of each is written.
    pub bodies: HashMap<StreamId, (Vec<u8>, usize)>,
    /// Streams whose body is not ready yet (body_ready answers Deferred).
    pub deferred: Vec<StreamId>,
    /// At most this many bytes taken per `write` call (None: all).
    pub write_chunk: Option<usize>,
    /// Take nothing at all (write returns 0, write_data false).
    pub blocked: bool,
    /// Reject a header with this name.
    pub reject_header: Option<(Vec<u8>, HeaderVerdict)>,
    pub frames_sent: Vec<(u8, usize)>,
    /// Streams whose HEADERS this side wrote whole, in order.
    pub headers_sent: Vec<StreamId>,
    pub frames_received: Vec<u8>,
    pub data_frames_written: usize,
    /// body_ready answers with the whole rest of the body, whatever `max` is.
    pub overshoot: bool,
}

impl Peer {
    pub fn new() -> Peer {
        Peer::default()
    }

    /// Streams whose request (or response) headers ended, in order.
    pub fn headers_ended(&self) -> Vec<(StreamId, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::HeadersEnd(s, end) => Some((*s, *end)),
                _ => None,
            })
            .collect()
    }

    pub fn closed(&self) -> Vec<(StreamId, u32)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Close(s, c) => Some((*s, *c)),
                _ => None,
            })
            .collect()
    }

    pub fn goaways(&self) -> Vec<(StreamId, u32)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Goaway(s, c) => Some((*s, *c)),
                _ => None,
            })
            .collect()
    }

    /// The value of header `name` on `stream`.
    pub fn header(&self, stream: StreamId, name: &[u8]) -> Option<Vec<u8>> {
        self.events.iter().find_map(|e| match e {
            Event::Header(s, n, v) if *s == stream && n == name => Some(v.clone()),
            _ => None,
        })
    }
}

impl Handler for Peer {
    fn write(&mut self, bytes: &[u8]) -> usize {
        if self.blocked {
            return 0;
        }
        let n = self.write_chunk.map_or(bytes.len(), |c| c.min(bytes.len()));
        self.out.extend_from_slice(&bytes[..n]);
        n
    }

    fn body_ready(&mut self, stream: StreamId, max: usize) -> Body {
        if self.deferred.contains(&stream) {
            return Body::Deferred;
        }
        match self.bodies.get(&stream) {
            None => Body::Reset,
            Some((body, sent)) => {
                let left = body.len() - sent;
                let len = if self.overshoot { left } else { left.min(max) };
                Body::Ready {
                    len,
                    end: len == left,
                }
            }
        }
    }

    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        if self.blocked {
            return false;
        }
        let (body, sent) = self.bodies.get_mut(&stream).expect("a body for the stream");
        self.out.extend_from_slice(frame_header);
        self.out.extend_from_slice(&body[*sent..*sent + len]);
        *sent += len;
        self.data_frames_written += 1;
        true
    }

    fn on_begin_headers(&mut self, stream: StreamId, kind: HeadersKind) {
        self.events.push(Event::BeginHeaders(stream, kind));
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        self.events
            .push(Event::Header(stream, name.to_vec(), value.to_vec()));
        match &self.reject_header {
            Some((n, verdict)) if n == name => *verdict,
            _ => HeaderVerdict::Accept,
        }
    }

    fn on_header_list_too_large(&mut self, stream: StreamId) {
        self.events.push(Event::ListTooLarge(stream));
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        self.events.push(Event::HeadersEnd(stream, end_stream));
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        self.events.push(Event::Data(stream, data.len()));
        self.received
            .entry(stream)
            .or_default()
            .extend_from_slice(data);
    }

    fn on_data_end(&mut self, stream: StreamId) {
        self.events.push(Event::DataEnd(stream));
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        self.events.push(Event::Close(stream, error_code));
    }

    fn on_rst_stream(&mut self, stream: StreamId, error_code: u32) {
        self.events.push(Event::Rst(stream, error_code));
    }

    fn on_goaway(&mut self, last_stream_id: StreamId, error_code: u32) {
        self.events.push(Event::Goaway(last_stream_id, error_code));
    }

    fn on_goaway_sent(&mut self, last_stream_id: StreamId, error_code: u32) {
        self.events
            .push(Event::GoawaySent(last_stream_id, error_code));
    }

    fn on_settings(&mut self) {
        self.events.push(Event::Settings);
    }

    fn on_frame_received(&mut self, frame_type: u8) {
        self.frames_received.push(frame_type);
    }

    fn on_frame_sent(&mut self, frame_type: u8, len: usize) {
        self.frames_sent.push((frame_type, len));
    }

    fn on_headers_sent(&mut self, stream: StreamId) {
        self.headers_sent.push(stream);
    }

    fn on_invalid_frame(&mut self, frame_type: u8, error: Error) {
        self.events.push(Event::Invalid(frame_type, error.code));
    }
}

/// A client and a server session with their handlers.
pub struct Pair {
    pub client: Session<Peer>,
    pub c: Peer,
    pub server: Session<Peer>,
    pub s: Peer,
    /// Bytes written by one side and not yet given to the other.
    pub to_server: Vec<u8>,
    pub to_client: Vec<u8>,
}

impl Pair {
    pub fn new(client: &http2::Config, server: &http2::Config) -> Pair {
        Pair {
            client: Session::client(client).expect("client session"),
            c: Peer::new(),
            server: Session::server(server).expect("server session"),
            s: Peer::new(),
            to_server: Vec::new(),
            to_client: Vec::new(),
        }
    }

    pub fn defaults() -> Pair {
        Pair::new(&http2::Config::client(), &http2::Config::server())
    }

    /// One round: the client writes, the server reads, answers what completed (with
    /// `respond`), writes, the client reads. Returns how many bytes moved.
    pub fn round(&mut self, respond: &mut dyn FnMut(&mut Session<Peer>, &mut Peer)) -> usize {
        self.client.send(&mut self.c).expect("client send");
        self.to_server.append(&mut self.c.out);
        let moved = self.to_server.len();
        let n = self
            .server
            .recv(&self.to_server, &mut self.s)
            .expect("server recv");
        assert_eq!(n, self.to_server.len(), "mem_recv consumes everything");
        self.to_server.clear();
        respond(&mut self.server, &mut self.s);
        self.server.send(&mut self.s).expect("server send");
        self.to_client.append(&mut self.s.out);
        let moved = moved + self.to_client.len();
        let n = self
            .client
            .recv(&self.to_client, &mut self.c)
            .expect("client recv");
        assert_eq!(n, self.to_client.len());
        self.to_client.clear();
        moved
    }

    /// Rounds until nothing moves (at most `max` rounds; panics past that).
    pub fn settle(&mut self, respond: &mut dyn FnMut(&mut Session<Peer>, &mut Peer)) {
        for _ in 0..10_000 {
            if self.round(respond) == 0 && !self.client.want_write() && !self.server.want_write() {
                return;
            }
        }
        panic!("the sessions did not settle in 10000 rounds");
    }
}

pub fn get(path: &[u8]) -> [http2::Header<'_>; 4] {
    use http2::Header;
    [
        Header::new(b":method", b"GET"),
        Header::new(b":scheme", b"http"),
        Header::new(b":authority", b"localhost"),
        Header::new(b":path", path),
    ]
}

/// A responder that answers every completed request once with 200 and `body(stream)`.
pub fn responder(body: impl Fn(StreamId) -> Vec<u8>) -> impl FnMut(&mut Session<Peer>, &mut Peer) {
    let mut answered = std::collections::HashSet::new();
    move |server: &mut Session<Peer>, s: &mut Peer| {
        for (stream, end) in s.headers_ended() {
            if end && answered.insert(stream) {
                let body = body(stream);
                let len = body.len().to_string();
                let headers = [
                    http2::Header::new(b":status", b"200"),
                    http2::Header::new(b"content-length", len.as_bytes()),
                ];
                let has_body = !body.is_empty();
                s.bodies.insert(stream, (body, 0));
                server
                    .submit_response(stream, &headers, has_body)
                    .expect("submit_response");
            }
        }
    }
}

/// A raw frame; the client preface and an empty SETTINGS, as a raw client starts (the
/// workspace's raw HTTP/2 writer).
#[allow(unused_imports)] // each test file uses part of this
pub use test_support::h2::{frame_bytes as frame, start as raw_preface};

/// Frames in a byte stream (after the client preface, if it starts with one): (type, flags,
/// stream, payload); the stream holds whole frames only.
pub fn frames(bytes: &[u8]) -> Vec<test_support::h2::Frame> {
    let bytes = bytes
        .strip_prefix(&test_support::h2::PREFACE[..])
        .unwrap_or(bytes);
    let out = test_support::h2::parse(bytes);
    let whole: usize = out.iter().map(|f| 9 + f.3.len()).sum();
    assert_eq!(whole, bytes.len(), "no partial frame left");
    out
}

/// An HPACK block for GET http://localhost/ from the static table only (indexed :method GET,
/// :scheme http, :path /, and :authority as a literal without indexing).
pub fn raw_get_block() -> Vec<u8> {
    let mut b = vec![0x82, 0x86, 0x84, 0x01, 9];
    b.extend_from_slice(b"localhost");
    b
}

/// The GOAWAY frames in `bytes`: (last stream id, error code).
pub fn goaways_in(bytes: &[u8]) -> Vec<(u32, u32)> {
    frames(bytes)
        .into_iter()
        .filter(|f| f.0 == http2::frame_type::GOAWAY)
        .map(|(_, _, _, p)| {
            (
                u32::from_be_bytes([p[0], p[1], p[2], p[3]]) & 0x7fff_ffff,
                u32::from_be_bytes([p[4], p[5], p[6], p[7]]),
            )
        })
        .collect()
}
