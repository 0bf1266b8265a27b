//! Fetching one resource of the site: a GET over one kept-alive connection (plain or TLS), as
//! HTTP/1.1 (`h1`, framed by `wire`, the parser bench and serve share) or HTTP/2 (`h2`, on the
//! workspace's nghttp2 session); at most `--crawl-rate` requests a second, a size limit and a
//! deadline per resource.
//!
//! Why a client of its own and not an HTTP framework: discovery is sequential (one request at a
//! time, as a polite crawler is), so a blocking socket with read and write timeouts is all it
//! needs, and framing through `wire` means a response that bench would mis-frame is mis-framed
//! here first, not silently accepted. No `Accept-Encoding` is sent, as bench sends none: the
//! sizes written in the workload are the bytes bench will read. A server that compresses anyway
//! (`Content-Encoding: gzip`) is decoded with flate2 so the page can still be parsed.

mod h1;
mod h2;
mod tls;

pub use tls::{TlsOptions, TlsSetupError};

use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, StreamOwned};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use url::Url;

/// The longest wait between two requests: a day. A robots.txt may ask for any Crawl-delay (and
/// a `Duration` holds no more than 2^64 s), so longer ones are held to this.
pub const MAX_GAP: Duration = Duration::from_secs(86_400);

/// The time between request starts at `rate` requests a second (more than 0), at most
/// [`MAX_GAP`].
fn gap(rate: f64) -> Duration {
    Duration::try_from_secs_f64(1.0 / rate).map_or(MAX_GAP, |g| g.min(MAX_GAP))
}

/// What one GET answered. The body is kept only when it is text (HTML, CSS, robots.txt): the
/// rest is counted and dropped.
#[derive(Debug, Clone)]
pub struct Response {
    /// The final status (1xx interim responses are skipped).
    pub status: u16,
    /// `Content-Type` without parameters, lower case (`text/html`).
    pub content_type: Option<String>,
    /// The `Content-Type`'s `charset` parameter, unquoted, as sent.
    pub charset: Option<String>,
    /// `Location` as sent (trimmed, not resolved): where a redirect points.
    pub location: Option<String>,
    /// Body bytes as sent (after chunked framing is removed, before any gzip is undone).
    pub bytes: u64,
    /// The body, decoded, when it is text.
    pub body: Option<Vec<u8>>,
}

impl Response {
    /// An HTML document: `text/html` or `application/xhtml+xml`, what a page may be.
    pub fn is_html(&self) -> bool {
        matches!(
            self.content_type.as_deref(),
            Some("text/html" | "application/xhtml+xml")
        )
    }

    /// A stylesheet by its type: `text/css`.
    pub fn is_css(&self) -> bool {
        self.content_type.as_deref() == Some("text/css")
    }

    /// A redirect the crawl follows: 301, 302, 303, 307 or 308 (a 300 or 304 is none).
    pub fn is_redirect(&self) -> bool {
        matches!(self.status, 301 | 302 | 303 | 307 | 308)
    }
}

/// Why a resource could not be fetched: a comment in the workload, never a crash.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The host did not resolve, or no address of it took the connection.
    #[error("connect: {0}")]
    Connect(io::Error),
    /// Writing the request or reading the response failed (a TLS failure is [`Tls`](Self::Tls)).
    #[error("{0}")]
    Io(#[from] io::Error),
    /// The resource took longer than `--timeout` (the value), connection included.
    #[error("no response within {0:?}")]
    Timeout(Duration),
    /// The response could not be framed: its head or its body breaks HTTP/1.1.
    #[error("bad response: {0}")]
    Response(#[from] wire::ResponseError),
    /// The body, as sent or ungzipped, is larger than `--max-size`.
    #[error("larger than --max-size ({limit} bytes)")]
    TooLarge {
        /// `--max-size`, bytes.
        limit: u64,
    },
    /// A body sent as gzip could not be ungzipped.
    #[error("gzip body: {0}")]
    Gzip(io::Error),
    /// The connection closed before an answer: before the head (HTTP/1.1; a body cut short
    /// is a [`Response`](Self::Response) error), before the stream's end (HTTP/2).
    #[error("the server closed the connection without answering")]
    Closed,
    /// The HTTP/2 session failed, or the server reset the stream (the value: what happened).
    #[error("HTTP/2: {0}")]
    Http2(String),
    /// The crawl was stopped before this request was sent.
    #[error("interrupted (SIGINT or SIGTERM) before it was requested")]
    Interrupted,
    /// `--http 2` over TLS, and the server's ALPN chose another protocol (the value), or none.
    #[error("the server did not agree to HTTP/2 (ALPN chose {0})")]
    NoH2(String),
    /// The TLS handshake failed: the reason and its fix, as `flint bench` gives them.
    #[error("TLS: {0}")]
    Tls(String),
}

/// Limits that keep one resource from costing more than it should.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Body bytes a resource may have.
    pub max_size: u64,
    /// Connect, send and receive one resource within this.
    pub timeout: Duration,
    /// Requests a second, at most (0 or less: unlimited).
    pub rate: f64,
}

/// The HTTP version discovery speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Http {
    /// HTTP/1.1, one request at a time on a kept-alive connection.
    #[default]
    Http11,
    /// HTTP/2: over TLS by ALPN `h2`, over cleartext with prior knowledge.
    Http2,
}

enum Stream {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl Stream {
    fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => &s.sock,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Stream::Plain(s) => s.write_all(buf),
            Stream::Tls(s) => s.write_all(buf).and_then(|()| s.flush()),
        }
    }
}

/// A connection and, for HTTP/2, its session.
struct Conn {
    stream: Stream,
    h2: Option<h2::H2>,
}

/// The socket under a deadline, for the HTTP/2 exchange.
struct Timed<'a> {
    stream: &'a mut Stream,
    deadline: Instant,
    limit: Duration,
}

impl h2::Io for Timed<'_> {
    fn write_all(&mut self, bytes: &[u8]) -> Result<(), FetchError> {
        set_timeouts(self.stream, self.deadline, self.limit)?;
        self.stream
            .write_all(bytes)
            .map_err(|e| timed(e, self.limit))
    }

    fn read(&mut self, buf: &mut [u8]) -> Result<usize, FetchError> {
        set_timeouts(self.stream, self.deadline, self.limit)?;
        self.stream.read(buf).map_err(|e| timed(e, self.limit))
    }
}

/// One origin's client: a kept-alive connection, reopened when the server closes it.
pub struct Fetcher {
    host: String,
    port: u16,
    /// `Host` header: the host, and the port when it is not the scheme's default.
    authority: String,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// The `--cacert` file given, named when it did not make the certificate trusted.
    cacert: Option<std::path::PathBuf>,
    http: Http,
    limits: Limits,
    conn: Option<Conn>,
    last_request: Option<Instant>,
    /// Requests sent (robots.txt and redirects included).
    pub requests: u64,
    /// Set to stop: a wait for the rate (a robots.txt Crawl-delay may be long) ends early and
    /// no request is sent.
    pub stop: Option<Arc<AtomicBool>>,
}

impl Fetcher {
    /// A client for `origin`'s scheme, host and port (`http` or `https`).
    pub fn new(
        origin: &Url,
        tls_opts: &TlsOptions,
        http: Http,
        limits: Limits,
    ) -> Result<Fetcher, String> {
        let host = origin.host().ok_or_else(|| format!("{origin}: no host"))?;
        let port = origin
            .port_or_known_default()
            .ok_or_else(|| format!("{origin}: no port"))?;
        let authority = match origin.port() {
            Some(p) => format!("{}:{p}", origin.host_str().unwrap_or_default()),
            None => origin.host_str().unwrap_or_default().to_owned(),
        };
        let tls = match origin.scheme() {
            "http" => None,
            "https" => {
                let name = match host {
                    url::Host::Domain(d) => ServerName::try_from(d.to_owned()).map_err(|_| {
                        format!("{d}: not a name a certificate can be checked against")
                    })?,
                    url::Host::Ipv4(a) => ServerName::IpAddress(std::net::IpAddr::V4(a).into()),
                    url::Host::Ipv6(a) => ServerName::IpAddress(std::net::IpAddr::V6(a).into()),
                };
                let config = tls::client_config(tls_opts, http).map_err(|e| e.to_string())?;
                Some((config, name))
            }
            other => return Err(format!("{origin}: scheme {other}: only http and https")),
        };
        let host = match host {
            url::Host::Ipv6(a) => a.to_string(),
            other => other.to_string(),
        };
        Ok(Fetcher {
            host,
            port,
            authority,
            tls,
            cacert: tls_opts.cacert.clone(),
            http,
            limits,
            conn: None,
            last_request: None,
            requests: 0,
            stop: None,
        })
    }

    /// GETs `target` (a path and query). A reused connection that turns out closed before
    /// answering is opened again once (a GET may be sent twice).
    pub fn get(&mut self, target: &str) -> Result<Response, FetchError> {
        self.pace()?;
        let deadline = Instant::now() + self.limits.timeout;
        let reused = self.conn.is_some();
        let result = match self.exchange(target, deadline) {
            Err(FetchError::Closed | FetchError::Io(_)) if reused => {
                self.conn = None;
                self.exchange(target, deadline)
            }
            other => other,
        };
        result.map_err(|e| match e {
            FetchError::Io(io) if tls::is_tls(&io) => {
                FetchError::Tls(tls::reason(&io, self.cacert.as_deref()))
            }
            other => other,
        })
    }

    /// Lowers the request rate to `rate` a second if that is slower than it was; whether it did.
    pub fn slow_to(&mut self, rate: f64) -> bool {
        let slower = self.limits.rate <= 0.0 || rate < self.limits.rate;
        if slower {
            self.limits.rate = rate;
        }
        slower
    }

    /// Waits so that request starts are at least 1/rate apart; in slices, so that a stop ends
    /// the wait.
    fn pace(&mut self) -> Result<(), FetchError> {
        let stopped = || {
            self.stop
                .as_ref()
                .is_some_and(|s| s.load(Ordering::Relaxed))
        };
        if self.limits.rate > 0.0 {
            let gap = gap(self.limits.rate);
            if let Some(last) = self.last_request {
                loop {
                    if stopped() {
                        return Err(FetchError::Interrupted);
                    }
                    let waited = last.elapsed();
                    if waited >= gap {
                        break;
                    }
                    std::thread::sleep((gap - waited).min(Duration::from_millis(50)));
                }
            }
        }
        if stopped() {
            return Err(FetchError::Interrupted);
        }
        self.last_request = Some(Instant::now());
        Ok(())
    }

    fn connect(&self, deadline: Instant) -> Result<Conn, FetchError> {
        let mut stream = self.open(deadline)?;
        let h2 = match self.http {
            Http::Http11 => None,
            Http::Http2 => {
                if let Stream::Tls(tls) = &mut stream {
                    socket_timeouts(&tls.sock, deadline, self.limits.timeout)?;
                    while tls.conn.is_handshaking() {
                        tls.conn
                            .complete_io(&mut tls.sock)
                            .map_err(|e| timed(e, self.limits.timeout))?;
                    }
                    if tls.conn.alpn_protocol() != Some(b"h2") {
                        let chose = tls.conn.alpn_protocol().map_or("nothing".into(), |p| {
                            String::from_utf8_lossy(p).into_owned()
                        });
                        return Err(FetchError::NoH2(chose));
                    }
                }
                Some(h2::H2::new()?)
            }
        };
        Ok(Conn { stream, h2 })
    }

    fn open(&self, deadline: Instant) -> Result<Stream, FetchError> {
        let addrs = (self.host.as_str(), self.port)
            .to_socket_addrs()
            .map_err(FetchError::Connect)?;
        let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
        for addr in addrs {
            let left = remaining(deadline, self.limits.timeout)?;
            match TcpStream::connect_timeout(&addr, left) {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    return Ok(match &self.tls {
                        None => Stream::Plain(tcp),
                        Some((config, name)) => {
                            let conn = ClientConnection::new(config.clone(), name.clone())
                                .map_err(|e| FetchError::Connect(io::Error::other(e)))?;
                            Stream::Tls(Box::new(StreamOwned::new(conn, tcp)))
                        }
                    });
                }
                Err(e) => last = e,
            }
        }
        Err(FetchError::Connect(last))
    }

    fn exchange(&mut self, target: &str, deadline: Instant) -> Result<Response, FetchError> {
        let mut conn = match self.conn.take() {
            Some(c) => c,
            None => self.connect(deadline)?,
        };
        if let Some(session) = &mut conn.h2 {
            let scheme = if self.tls.is_some() { "https" } else { "http" };
            let mut io = Timed {
                stream: &mut conn.stream,
                deadline,
                limit: self.limits.timeout,
            };
            self.requests += 1;
            let (response, keep) =
                session.get(&mut io, scheme, &self.authority, target, &self.limits)?;
            if keep {
                self.conn = Some(conn);
            }
            return Ok(response);
        }
        let Conn {
            stream: mut conn, ..
        } = conn;
        let mut request = Vec::with_capacity(128);
        wire::head::write_request(
            &mut request,
            "GET",
            target,
            &self.authority,
            wire::Version::Http11,
            true,
        );
        set_timeouts(&conn, deadline, self.limits.timeout)?;
        self.requests += 1;
        conn.write_all(&request)
            .map_err(|e| timed(e, self.limits.timeout))?;
        let (response, keep) = h1::read_response(&mut conn, deadline, &self.limits)?;
        if keep {
            self.conn = Some(Conn {
                stream: conn,
                h2: None,
            });
        }
        Ok(response)
    }
}

fn remaining(deadline: Instant, limit: Duration) -> Result<Duration, FetchError> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(FetchError::Timeout(limit));
    }
    Ok(left)
}

fn set_timeouts(conn: &Stream, deadline: Instant, limit: Duration) -> Result<(), FetchError> {
    socket_timeouts(conn.tcp(), deadline, limit)
}

fn socket_timeouts(tcp: &TcpStream, deadline: Instant, limit: Duration) -> Result<(), FetchError> {
    let left = remaining(deadline, limit)?;
    tcp.set_read_timeout(Some(left))?;
    tcp.set_write_timeout(Some(left))?;
    Ok(())
}

fn timed(e: io::Error, limit: Duration) -> FetchError {
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => FetchError::Timeout(limit),
        _ => FetchError::Io(e),
    }
}

/// The response with its kept body gunzipped when the server sent it gzipped.
fn decoded(mut r: Response, gzip: bool, limit: u64) -> Result<Response, FetchError> {
    if gzip {
        if let Some(body) = &r.body {
            r.body = Some(gunzip(body, limit)?);
        }
    }
    Ok(r)
}

fn gunzip(body: &[u8], limit: u64) -> Result<Vec<u8>, FetchError> {
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(body)
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(FetchError::Gzip)?;
    if out.len() as u64 > limit {
        return Err(FetchError::TooLarge { limit });
    }
    Ok(out)
}

/// The header fields discovery reads; `wire` has framed the message already.
#[derive(Debug, Default)]
struct Fields {
    content_type: Option<String>,
    charset: Option<String>,
    location: Option<String>,
    gzip: bool,
}

impl Fields {
    fn parse(head: &[u8]) -> Fields {
        let mut slots = [httparse::EMPTY_HEADER; wire::response::MAX_RESPONSE_HEADERS];
        let mut resp = httparse::Response::new(&mut slots);
        let mut fields = Fields::default();
        if resp.parse(head).is_err() {
            return fields;
        }
        for h in resp.headers.iter() {
            fields.field(h.name.as_bytes(), h.value);
        }
        fields
    }

    /// Takes one header field if it is one discovery reads.
    fn field(&mut self, name: &[u8], value: &[u8]) {
        let text = String::from_utf8_lossy(value);
        let value = text.trim();
        if name.eq_ignore_ascii_case(b"content-type") {
            let mut parts = value.split(';');
            let essence = parts.next().unwrap_or("").trim();
            self.content_type = Some(essence.to_ascii_lowercase());
            self.charset = parts.find_map(|p| {
                let (name, v) = p.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("charset")
                    .then(|| v.trim().trim_matches('"').to_owned())
            });
        } else if name.eq_ignore_ascii_case(b"location") {
            self.location = Some(value.to_owned());
        } else if name.eq_ignore_ascii_case(b"content-encoding") {
            self.gzip = value
                .split(',')
                .any(|c| matches!(c.trim().to_ascii_lowercase().as_str(), "gzip" | "x-gzip"));
        }
    }

    /// Whether the body is text worth keeping (HTML, CSS, robots.txt; or untyped).
    fn is_text(&self) -> bool {
        self.content_type
            .as_deref()
            .is_none_or(|t| t.starts_with("text/") || t == "application/xhtml+xml")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_read_the_charset_apart() {
        let f = Fields::parse(
            b"HTTP/1.1 200 OK\r\nContent-Type: Text/HTML; charset=utf-8\r\n\
              Content-Encoding: gzip\r\nLocation: /x\r\n\r\n",
        );
        assert_eq!(f.content_type.as_deref(), Some("text/html"));
        assert_eq!(f.charset.as_deref(), Some("utf-8"));
        assert_eq!(f.location.as_deref(), Some("/x"));
        assert!(f.gzip);
    }

    #[test]
    fn the_gap_between_requests_is_at_most_a_day() {
        assert_eq!(gap(10.0), Duration::from_millis(100));
        assert_eq!(gap(1.0 / 86_400.0), MAX_GAP);
        // A Crawl-delay of 1e20 s, and rates whose gap no Duration holds.
        assert_eq!(gap(1e-20), MAX_GAP);
        assert_eq!(gap(f64::MIN_POSITIVE), MAX_GAP);
        assert_eq!(gap(5e-324), MAX_GAP);
    }
}
