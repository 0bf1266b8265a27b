//! The test application over HTTP/2, on nghttp2's server session (the `http2` crate): cleartext
//! by prior knowledge, or TLS with ALPN `h2`. Each request, once its header block and body are
//! in, is written out as the HTTP/1 head the application reads (`METHOD PATH HTTP/2`, then its
//! fields), answered by the same code as over HTTP/1, and its answer sent back as HEADERS (the
//! status and fields, names lowercased, connection-specific ones left out) and DATA.

use super::Shared;
use http2::{Body, Config, Handler, Header, Session, StreamId};
use std::collections::HashMap;
use std::io::{Read, Write};

/// A request as it arrives, and its answer's body as it goes.
#[derive(Default)]
struct Stream {
    method: String,
    path: String,
    fields: Vec<(String, String)>,
    body: Vec<u8>,
    answer: Vec<u8>,
    sent: usize,
}

#[derive(Default)]
struct Conn {
    out: Vec<u8>,
    streams: HashMap<StreamId, Stream>,
    /// Streams whose request is complete, in order.
    complete: Vec<StreamId>,
}

impl Handler for Conn {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn body_ready(&mut self, stream: StreamId, max: usize) -> Body {
        let Some(s) = self.streams.get(&stream) else {
            return Body::Reset;
        };
        let left = s.answer.len() - s.sent;
        let len = left.min(max);
        Body::Ready {
            len,
            end: len == left,
        }
    }

    fn write_data(&mut self, stream: StreamId, frame_header: &[u8; 9], len: usize) -> bool {
        let Some(s) = self.streams.get_mut(&stream) else {
            return false;
        };
        self.out.extend_from_slice(frame_header);
        self.out.extend_from_slice(&s.answer[s.sent..s.sent + len]);
        s.sent += len;
        true
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> http2::HeaderVerdict {
        let s = self.streams.entry(stream).or_default();
        let value = String::from_utf8_lossy(value).into_owned();
        match name {
            b":method" => s.method = value,
            b":path" => s.path = value,
            _ if name.starts_with(b":") => {}
            _ => s
                .fields
                .push((String::from_utf8_lossy(name).into_owned(), value)),
        }
        http2::HeaderVerdict::Accept
    }

    fn on_headers_end(&mut self, stream: StreamId, end_stream: bool) {
        if end_stream {
            self.complete.push(stream);
        }
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        if let Some(s) = self.streams.get_mut(&stream) {
            s.body.extend_from_slice(data);
        }
    }

    fn on_data_end(&mut self, stream: StreamId) {
        self.complete.push(stream);
    }

    fn on_stream_close(&mut self, stream: StreamId, _error_code: u32) {
        self.streams.remove(&stream);
    }
}

/// Serves one HTTP/2 connection (`io`: the socket, or TLS over it) until the client closes it.
pub(super) fn serve(mut io: impl Read + Write, shared: &Shared) {
    let Ok(mut session) = Session::<Conn>::server(&Config::server()) else {
        return;
    };
    let mut conn = Conn::default();
    let mut buf = [0u8; 16384];
    loop {
        if session.send(&mut conn).is_err() {
            return;
        }
        if !conn.out.is_empty() {
            if io.write_all(&conn.out).and_then(|()| io.flush()).is_err() {
                return;
            }
            conn.out.clear();
        }
        let n = match io.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if session.recv(&buf[..n], &mut conn).is_err() {
            return;
        }
        for id in std::mem::take(&mut conn.complete) {
            let Some(s) = conn.streams.get_mut(&id) else {
                continue;
            };
            let mut head = format!("{} {} HTTP/2\r\n", s.method, s.path);
            for (n, v) in &s.fields {
                head += &format!("{n}: {v}\r\n");
            }
            let body = String::from_utf8_lossy(&s.body).into_owned();
            let response = shared.answer(&head, &body, false);
            let (status, fields, answer) = split_response(&response);
            s.answer = answer;
            let mut list = vec![Header::new(b":status", status.as_bytes())];
            list.extend(
                fields
                    .iter()
                    .map(|(n, v)| Header::new(n.as_bytes(), v.as_bytes())),
            );
            let has_body = !s.answer.is_empty();
            if session.submit_response(id, &list, has_body).is_err() {
                return;
            }
        }
    }
}

/// An HTTP/1 response's status, its fields (lowercased names, without the connection-specific
/// ones HTTP/2 refuses) and its body.
fn split_response(response: &[u8]) -> (String, Vec<(String, String)>, Vec<u8>) {
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a whole response");
    let head = String::from_utf8_lossy(&response[..end]);
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .unwrap_or("500")
        .to_owned();
    let fields = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .filter(|(n, _)| n != "connection")
        .collect();
    (status, fields, response[end + 4..].to_vec())
}
