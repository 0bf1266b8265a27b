//! An HTTP/2 test client on the `http2` crate (blocking, every read bounded), and a raw frame
//! writer for the attack tests, which must send what no well-behaved client would.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
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
/// send: the workspace's raw frame writer and reader.
#[allow(unused_imports)] // not every test binary writes raw frames
pub use test_support::h2 as raw;

/// Uploads under way on one connection: their streams, the bytes each has sent of its body,
/// and the client's send windows (the connection's and each stream's, from 65,535).
pub struct Uploads {
    pub ids: Vec<u32>,
    pub sent: Vec<u64>,
    body: u64,
    conn_window: i64,
    windows: Vec<i64>,
}

impl Uploads {
    /// The length of stream `k`'s next DATA frame, counted as sent: at most `most`, as far as
    /// its window, the connection's and the rest of its body allow (0: nothing may go now).
    pub fn take(&mut self, k: usize, most: usize) -> usize {
        let left = self.body - self.sent[k];
        let n = (most as i64)
            .min(self.windows[k])
            .min(self.conn_window)
            .min(left as i64);
        if n <= 0 {
            return 0;
        }
        self.windows[k] -= n;
        self.conn_window -= n;
        self.sent[k] += n as u64;
        n as usize
    }

    /// A WINDOW_UPDATE of `inc` on stream `id`: true if it opened an upload's window, false if
    /// the connection's (any other stream).
    pub fn window_update(&mut self, id: u32, inc: i64) -> bool {
        match self.ids.iter().position(|&i| i == id) {
            Some(k) => {
                self.windows[k] += inc;
                true
            }
            None => {
                self.conn_window += inc;
                false
            }
        }
    }
}

/// Opens `count` uploads on a new connection, written at once: the preface and SETTINGS, then
/// on streams 1, 3, 5, ... a POST to `path` (`:authority` t) saying a body of `body` bytes in
/// `content-length`, each body still to send.
pub fn open_uploads(s: &mut TcpStream, path: &str, count: u32, body: usize) -> Uploads {
    let ids: Vec<u32> = (0..count).map(|k| 1 + 2 * k).collect();
    let mut out = raw::start();
    for &id in &ids {
        let mut block = vec![0x83, 0x86]; // :method POST, :scheme http
        raw::literal(&mut block, 4, path.as_bytes());
        raw::literal(&mut block, 1, b"t");
        raw::literal_name(&mut block, b"content-length", body.to_string().as_bytes());
        raw::frame(&mut out, raw::HEADERS, raw::END_HEADERS, id, &block);
    }
    s.write_all(&out).unwrap();
    Uploads {
        sent: vec![0; ids.len()],
        body: body as u64,
        conn_window: 65_535,
        windows: vec![65_535; ids.len()],
        ids,
    }
}

/// Reads frames into `buf` (`have` bytes held) until `streams` streams have ended (DATA or
/// HEADERS with END_STREAM), acknowledging SETTINGS and giving the connection window back as
/// it goes; no allocation (the allocation tests read their responses with it).
#[allow(dead_code)] // the allocation tests' executables only
pub fn read_until_ended(s: &mut TcpStream, buf: &mut [u8], have: &mut usize, streams: u32) {
    let mut ended = 0;
    let mut acks = [0u8; 64];
    while ended < streams {
        let mut at = 0;
        let mut reply = 0;
        while *have >= at + 9 {
            let len = u32::from_be_bytes([0, buf[at], buf[at + 1], buf[at + 2]]) as usize;
            if *have < at + 9 + len {
                break;
            }
            let (kind, flags) = (buf[at + 3], buf[at + 4]);
            if (kind == raw::DATA || kind == raw::HEADERS) && flags & raw::END_STREAM != 0 {
                ended += 1;
            }
            if kind == raw::SETTINGS && flags & 1 == 0 {
                acks[reply..reply + 9].copy_from_slice(&[0, 0, 0, raw::SETTINGS, 1, 0, 0, 0, 0]);
                reply += 9;
            }
            if kind == raw::DATA && len > 0 {
                // Give the connection window back (the tests open large stream windows).
                let inc = (len as u32).to_be_bytes();
                acks[reply..reply + 13].copy_from_slice(&[
                    0,
                    0,
                    4,
                    raw::WINDOW_UPDATE,
                    0,
                    0,
                    0,
                    0,
                    0,
                    inc[0],
                    inc[1],
                    inc[2],
                    inc[3],
                ]);
                reply += 13;
                s.write_all(&acks[..reply]).unwrap();
                reply = 0;
            }
            at += 9 + len;
        }
        if reply > 0 {
            s.write_all(&acks[..reply]).unwrap();
        }
        buf.copy_within(at..*have, 0);
        *have -= at;
        if ended >= streams {
            break;
        }
        let n = s.read(&mut buf[*have..]).expect("read");
        assert!(n > 0, "closed by the server");
        *have += n;
    }
}
