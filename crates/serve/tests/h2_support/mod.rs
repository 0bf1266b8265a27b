//! An HTTP/2 test client on the `http2` crate (blocking, every read bounded), and a raw frame
//! writer for the attack tests, which must send what no well-behaved client would.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::time::{Duration, Instant};

use http2::{Config, Handler, Header, HeadersKind, Session, StreamId};

/// Every wait in these tests is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

/// A response as the client received it.
#[derive(Debug, Default, Clone)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The stream's close code (0: a normal end).
    pub reset: Option<u32>,
    pub done: bool,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What the client's session saw.
#[derive(Default)]
pub struct Seen {
    pub out: Vec<u8>,
    pub responses: BTreeMap<StreamId, Response>,
    /// GOAWAY received: last stream id, error code.
    pub goaway: Option<(StreamId, u32)>,
}

impl Handler for Seen {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_begin_headers(&mut self, stream: StreamId, _kind: HeadersKind) {
        self.responses.entry(stream).or_default();
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> http2::HeaderVerdict {
        let r = self.responses.entry(stream).or_default();
        let (name, value) = (
            String::from_utf8_lossy(name).into_owned(),
            String::from_utf8_lossy(value).into_owned(),
        );
        if name == ":status" {
            r.status = value.parse().unwrap_or(0);
        } else {
            r.headers.push((name, value));
        }
        http2::HeaderVerdict::Accept
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        self.responses
            .entry(stream)
            .or_default()
            .body
            .extend_from_slice(data);
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        let r = self.responses.entry(stream).or_default();
        r.done = true;
        r.reset = Some(error_code);
    }

    fn on_goaway(&mut self, last_stream_id: StreamId, error_code: u32) {
        self.goaway = Some((last_stream_id, error_code));
    }
}

/// A blocking HTTP/2 client over any byte stream (TCP, or TLS with ALPN h2).
pub struct Client<S: Read + Write> {
    pub io: S,
    pub session: Session<Seen>,
    pub seen: Seen,
    pub authority: String,
}

impl<S: Read + Write> Client<S> {
    pub fn new(io: S, authority: &str) -> Client<S> {
        Client {
            io,
            session: Session::client(&Config::client()).expect("client session"),
            seen: Seen::default(),
            authority: authority.to_string(),
        }
    }

    /// Submits a request (GET unless `method` says otherwise) and returns its stream id.
    pub fn submit(&mut self, method: &str, path: &str, extra: &[(&str, &str)]) -> StreamId {
        let mut h = vec![
            Header::new(b":method", method.as_bytes()),
            Header::new(b":scheme", b"http"),
            Header::new(b":authority", self.authority.as_bytes()),
            Header::new(b":path", path.as_bytes()),
        ];
        for (n, v) in extra {
            h.push(Header::new(n.as_bytes(), v.as_bytes()));
        }
        self.session.submit_request(&h, false).expect("submit")
    }

    /// Writes what the session queued.
    pub fn flush(&mut self) {
        self.session.send(&mut self.seen).expect("send");
        let out = std::mem::take(&mut self.seen.out);
        self.io.write_all(&out).expect("write");
        self.io.flush().unwrap();
    }

    /// Reads until `done` says so; false if the server closed first. Bounded by [`WAIT`].
    pub fn run_until(&mut self, mut done: impl FnMut(&Seen) -> bool) -> bool {
        let deadline = Instant::now() + WAIT;
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            self.flush();
            if done(&self.seen) {
                return true;
            }
            assert!(Instant::now() < deadline, "no answer within {WAIT:?}");
            let n = match self.io.read(&mut buf) {
                Ok(0) => {
                    eprintln!("closed by the server (GOAWAY: {:?})", self.seen.goaway);
                    return false;
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
                // A read with a timeout (SO_RCVTIMEO) fails with EINTR when a signal comes,
                // whatever SA_RESTART says: in a process whose server runs programs, one does.
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(_) => return false,
            };
            if let Err(e) = self.session.recv(&buf[..n], &mut self.seen) {
                eprintln!("client session: {e}");
                return false;
            }
        }
    }

    /// One request, its whole response.
    pub fn get(&mut self, path: &str, extra: &[(&str, &str)]) -> Response {
        self.request("GET", path, extra)
    }

    pub fn request(&mut self, method: &str, path: &str, extra: &[(&str, &str)]) -> Response {
        let id = self.submit(method, path, extra);
        assert!(
            self.run_until(|s| s.responses.get(&id).is_some_and(|r| r.done)),
            "connection closed before stream {id} was answered"
        );
        self.seen.responses.remove(&id).unwrap()
    }
}

/// HTTP/2 frames written by hand (RFC 9113 section 4.1), for what the client session would never
/// send.
pub mod raw {
    pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const PRIORITY: u8 = 2;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const PING: u8 = 6;
    pub const GOAWAY: u8 = 7;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const CONTINUATION: u8 = 9;
    pub const END_STREAM: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;

    /// Appends one frame.
    pub fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
        let len = payload.len() as u32;
        out.extend_from_slice(&len.to_be_bytes()[1..]);
        out.push(kind);
        out.push(flags);
        out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
        out.extend_from_slice(payload);
    }

    /// The client preface and an empty SETTINGS, as a connection starts.
    pub fn start() -> Vec<u8> {
        let mut out = PREFACE.to_vec();
        frame(&mut out, SETTINGS, 0, 0, &[]);
        out
    }

    /// A SETTINGS frame with these (id, value) pairs.
    pub fn settings(out: &mut Vec<u8>, pairs: &[(u16, u32)]) {
        let mut p = Vec::new();
        for (id, v) in pairs {
            p.extend_from_slice(&id.to_be_bytes());
            p.extend_from_slice(&v.to_be_bytes());
        }
        frame(out, SETTINGS, 0, 0, &p);
    }

    /// A HPACK block for `GET path` on `authority`, literal fields without indexing (RFC 7541
    /// 6.2.2; `:method GET` and `:scheme http` are static entries 2 and 6).
    pub fn get_block(path: &str, authority: &str) -> Vec<u8> {
        let mut b = vec![0x82, 0x86];
        literal(&mut b, 4, path.as_bytes()); // :path
        literal(&mut b, 1, authority.as_bytes()); // :authority
        b
    }

    /// A HEADERS frame (END_HEADERS, and `flags`) for `GET path` on `localhost`.
    pub fn get(out: &mut Vec<u8>, stream: u32, path: &str, flags: u8) {
        let block = get_block(path, "localhost");
        frame(out, HEADERS, END_HEADERS | flags, stream, &block);
    }

    /// A literal field without indexing whose name is static entry `index`.
    pub fn literal(b: &mut Vec<u8>, index: u8, value: &[u8]) {
        b.push(index); // 0000xxxx, index < 15
        int7(b, value.len());
        b.extend_from_slice(value);
    }

    /// A literal field with a literal name, without indexing.
    pub fn literal_name(b: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        b.push(0);
        int7(b, name.len());
        b.extend_from_slice(name);
        int7(b, value.len());
        b.extend_from_slice(value);
    }

    /// A string length with a 7-bit prefix, no Huffman (RFC 7541 5.1).
    pub fn int7(b: &mut Vec<u8>, mut n: usize) {
        if n < 127 {
            b.push(n as u8);
            return;
        }
        b.push(127);
        n -= 127;
        while n >= 128 {
            b.push((n % 128 + 128) as u8);
            n /= 128;
        }
        b.push(n as u8);
    }

    /// A frame read: (type, flags, stream, payload).
    pub type Frame = (u8, u8, u32, Vec<u8>);

    /// Reads the whole frames at the start of `input`.
    pub fn parse(input: &[u8]) -> Vec<Frame> {
        let mut frames = Vec::new();
        let mut at = 0;
        while input.len() >= at + 9 {
            let len = u32::from_be_bytes([0, input[at], input[at + 1], input[at + 2]]) as usize;
            if input.len() < at + 9 + len {
                break;
            }
            let stream = u32::from_be_bytes(input[at + 5..at + 9].try_into().unwrap());
            frames.push((
                input[at + 3],
                input[at + 4],
                stream & 0x7fff_ffff,
                input[at + 9..at + 9 + len].to_vec(),
            ));
            at += 9 + len;
        }
        frames
    }

    /// Reads frames from `s` until `done` holds for them or the server closes (then `done` may
    /// not hold); every read is bounded by the socket's timeout, a failed one fails the test.
    pub fn read_until(s: &mut impl std::io::Read, done: impl Fn(&[Frame]) -> bool) -> Vec<Frame> {
        let mut got = Vec::new();
        let mut buf = vec![0; 1 << 16];
        loop {
            let frames = parse(&got);
            if done(&frames) {
                return frames;
            }
            let n = s.read(&mut buf).expect("read");
            if n == 0 {
                return frames;
            }
            got.extend_from_slice(&buf[..n]);
        }
    }

    /// The error code of the GOAWAY among `frames`, if any.
    pub fn goaway_code(frames: &[Frame]) -> Option<u32> {
        frames
            .iter()
            .find(|f| f.0 == GOAWAY && f.3.len() >= 8)
            .map(|f| u32::from_be_bytes(f.3[4..8].try_into().unwrap()))
    }
}
