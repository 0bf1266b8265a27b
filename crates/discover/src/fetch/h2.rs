//! `--http 2`: one GET at a time as an HTTP/2 stream, on the workspace's nghttp2 session
//! (`http2`), over the same blocking socket as HTTP/1.1 (TLS with ALPN `h2`, or cleartext with
//! prior knowledge). Discovery asks for one resource at a time, as over HTTP/1.1, so the
//! pages and files found are the same; what changes is that a site which only speaks HTTP/2,
//! or answers it differently, is seen as it is.

use super::{FetchError, Fields, Limits, Response};
use http2::{Config, Handler, HeaderVerdict, Session, StreamId};

/// What the session hands back for the one stream in flight.
#[derive(Default)]
pub(super) struct Collector {
    /// Frames to write to the socket.
    pub(super) out: Vec<u8>,
    stream: StreamId,
    status: u16,
    fields: Fields,
    body: Vec<u8>,
    bytes: u64,
    keep_text: bool,
    limit: u64,
    closed: Option<u32>,
    goaway: bool,
}

impl Handler for Collector {
    fn write(&mut self, bytes: &[u8]) -> usize {
        self.out.extend_from_slice(bytes);
        bytes.len()
    }

    fn on_header(&mut self, stream: StreamId, name: &[u8], value: &[u8]) -> HeaderVerdict {
        if stream == self.stream {
            if name == b":status" {
                // A 1xx is followed by the final status on the same stream: the last one counts.
                self.status = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
            } else {
                self.fields.field(name, value);
            }
        }
        HeaderVerdict::Accept
    }

    fn on_data(&mut self, stream: StreamId, data: &[u8]) {
        if stream == self.stream {
            self.bytes += data.len() as u64;
            self.keep_text = self.keep_text && self.fields.is_text();
            if self.keep_text && self.body.len() as u64 <= self.limit {
                self.body.extend_from_slice(data);
            }
        }
    }

    fn on_stream_close(&mut self, stream: StreamId, error_code: u32) {
        if stream == self.stream {
            self.closed = Some(error_code);
        }
    }

    fn on_goaway(&mut self, _last: StreamId, _code: u32) {
        self.goaway = true;
    }
}

/// One connection's HTTP/2 session.
pub(super) struct H2 {
    session: Session<Collector>,
    pub(super) collector: Collector,
}

/// The socket side of an exchange: write everything, read some (within the deadline).
pub(super) trait Io {
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), FetchError>;
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, FetchError>;
}

fn h2_error(e: http2::Error) -> FetchError {
    FetchError::Http2(e.to_string())
}

impl H2 {
    pub(super) fn new() -> Result<H2, FetchError> {
        Ok(H2 {
            session: Session::client(&Config::client()).map_err(h2_error)?,
            collector: Collector::default(),
        })
    }

    /// GETs `target`; whether the connection can carry the next request.
    pub(super) fn get(
        &mut self,
        io: &mut dyn Io,
        scheme: &str,
        authority: &str,
        target: &str,
        limits: &Limits,
    ) -> Result<(Response, bool), FetchError> {
        let headers = [
            http2::Header::new(b":method", b"GET"),
            http2::Header::new(b":scheme", scheme.as_bytes()),
            http2::Header::new(b":authority", authority.as_bytes()),
            http2::Header::new(b":path", target.as_bytes()),
            http2::Header::new(b"user-agent", wire::head::USER_AGENT),
        ];
        let c = &mut self.collector;
        *c = Collector {
            out: std::mem::take(&mut c.out),
            keep_text: true,
            limit: limits.max_size,
            ..Collector::default()
        };
        c.stream = self
            .session
            .submit_request(&headers, false)
            .map_err(h2_error)?;
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            self.session.send(&mut self.collector).map_err(h2_error)?;
            if !self.collector.out.is_empty() {
                io.write_all(&self.collector.out)?;
                self.collector.out.clear();
            }
            if let Some(code) = self.collector.closed {
                if code != 0 {
                    return Err(FetchError::Http2(format!(
                        "stream reset (error code {code})"
                    )));
                }
                break;
            }
            if self.collector.bytes > limits.max_size {
                return Err(FetchError::TooLarge {
                    limit: limits.max_size,
                });
            }
            if self.collector.goaway && self.collector.closed.is_none() && !self.session.want_read()
            {
                return Err(FetchError::Closed);
            }
            let n = io.read(&mut buf)?;
            if n == 0 {
                return Err(FetchError::Closed);
            }
            let mut fed = 0;
            while fed < n {
                let took = self
                    .session
                    .recv(&buf[fed..n], &mut self.collector)
                    .map_err(h2_error)?;
                if took == 0 {
                    return Err(FetchError::Http2("the session took no input".into()));
                }
                fed += took;
            }
        }
        let c = &mut self.collector;
        let body = c.keep_text.then(|| std::mem::take(&mut c.body));
        let response = Response {
            status: c.status,
            content_type: c.fields.content_type.take(),
            charset: c.fields.charset.take(),
            location: c.fields.location.take(),
            bytes: c.bytes,
            body,
        };
        let gzip = c.fields.gzip;
        let keep = !c.goaway;
        Ok((super::decoded(response, gzip, limits.max_size)?, keep))
    }
}
