//! Server side: parsing a request head.
//!
//! `parse_request` runs `httparse` over the caller's buffer with a stack array of uninitialised
//! header slots, then walks the headers once, keeping borrowed slices of the few the server acts
//! on. Nothing is allocated, so it can run once per request on the server's hot path.
//!
//! The limits are enforced on incomplete input too: a client that trickles an endless request line
//! or head must get its 414/431 as soon as the buffer crosses the limit, not when the server's
//! buffer is full. Framing is validated strictly (RFC 9112 6.1-6.3) because a server that guesses
//! at an ambiguous body length is how request smuggling starts.
//!
//! The rest of what RFC 9112 asks of a request head is checked here too, so every server path
//! sees only heads that passed: a Host that is an RFC 3986 `host[:port]`, present at most once
//! (`request/host.rs`); a request line of exactly three parts (a space inside the target is a
//! 400, not a version error); `HTTP/1.2` to `HTTP/1.9` read as HTTP/1.1, another major version a
//! 505. List fields sent on several lines (`If-Match`, `If-None-Match`) keep every line.

use std::mem::MaybeUninit;

pub use fields::is_token;
use fields::Interpreter;

mod fields;
mod host;

pub use host::PassedHost;

/// The header slots on the stack; `RequestLimits::max_headers` above this is clamped to it.
pub const MAX_HEADERS_CAP: usize = 256;

/// The request method, as far as a static file server cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET`: the representation, head and body.
    Get,
    /// `HEAD`: the head a `GET` would have, without its body.
    Head,
    /// Any other syntactically valid method (the server answers 405/501).
    Other,
}

/// The HTTP/1.x minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    /// `HTTP/1.0`: the connection closes after the response unless asked to persist.
    Http10,
    /// `HTTP/1.1`, and `HTTP/1.2` to `HTTP/1.9` read as it: the connection persists by default.
    Http11,
}

impl Version {
    /// `HTTP/1.0` or `HTTP/1.1`, as written on the wire.
    pub fn as_bytes(self) -> &'static [u8] {
        match self {
            Version::Http10 => b"HTTP/1.0",
            Version::Http11 => b"HTTP/1.1",
        }
    }

    /// The default persistence of a connection at this version (RFC 9112 9.3).
    pub fn default_keep_alive(self) -> bool {
        self == Version::Http11
    }
}

/// Bounds on what a client may send before the server refuses it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestLimits {
    /// Longest request line, without its CRLF (414 beyond).
    pub max_request_line: usize,
    /// Largest head, request line and headers and the blank line included (431 beyond).
    pub max_head_bytes: usize,
    /// Most header fields (431 beyond); clamped to [`MAX_HEADERS_CAP`].
    pub max_headers: usize,
}

impl RequestLimits {
    /// The most header fields a request may carry, whichever protocol brought it (431 beyond):
    /// `max_headers`, clamped.
    pub fn max_fields(&self) -> usize {
        self.max_headers.min(MAX_HEADERS_CAP)
    }
}

impl Default for RequestLimits {
    fn default() -> Self {
        RequestLimits {
            max_request_line: 8192,
            max_head_bytes: 16384,
            max_headers: 64,
        }
    }
}

/// A parsed request head, borrowing from the buffer it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request<'b> {
    /// The method, `Other` for any but GET and HEAD.
    pub method: Method,
    /// The request target as sent (percent-encoding and query left in place); never empty. An
    /// HTTP/1 absolute-form target (`http://host/path`) is given as its origin-form (`/path`),
    /// its authority as [`host`](Self::host).
    pub target: &'b [u8],
    /// The version of the request line (HTTP/2's requests read as HTTP/1.1).
    pub version: Version,
    /// Whether the connection persists after this request: the version's default, overridden by
    /// `Connection: close` / `Connection: keep-alive`.
    pub keep_alive: bool,
    /// Validated: RFC 3986 `host [":" port]`, present at most once; an absolute-form target's
    /// authority in its place (RFC 9112 3.2.2).
    pub host: Option<&'b [u8]>,
    /// Every `If-Match` line, in order (at most [`MAX_FIELD_LINES`]).
    pub if_match: FieldLines<'b>,
    /// Every `If-None-Match` line, in order (at most [`MAX_FIELD_LINES`]).
    pub if_none_match: FieldLines<'b>,
    /// `If-Modified-Since` as sent, not parsed yet (the last line wins).
    pub if_modified_since: Option<&'b [u8]>,
    /// `If-Unmodified-Since` as sent, not parsed yet (the last line wins).
    pub if_unmodified_since: Option<&'b [u8]>,
    /// `Range` as sent, not parsed yet; of several lines the first is kept, as nginx serves it.
    pub range: Option<&'b [u8]>,
    /// `If-Range` as sent, not parsed yet (the last line wins).
    pub if_range: Option<&'b [u8]>,
    /// `Accept-Encoding` as sent (the last line wins): whether a precompressed file may be sent.
    pub accept_encoding: Option<&'b [u8]>,
    /// `User-Agent` as sent (the last line wins), for the access log and gateways.
    pub user_agent: Option<&'b [u8]>,
    /// `Referer` as sent (the last line wins), for the access log and gateways.
    pub referer: Option<&'b [u8]>,
    /// `Authorization` as sent (the server's Basic authentication reads it); a request with two
    /// is refused.
    pub authorization: Option<&'b [u8]>,
    /// The validated Content-Length, if any.
    pub content_length: Option<u64>,
    /// `Transfer-Encoding: chunked` (the only transfer coding accepted).
    pub chunked: bool,
    /// `Expect: 100-continue`: the client waits for an interim 100 (or a final status) before
    /// sending its body.
    pub expect_continue: bool,
    /// Bytes of the buffer taken by the head; the body or the next request starts here.
    pub head_len: usize,
}

/// Most lines of one list-valued field a request may send (more: 400).
pub const MAX_FIELD_LINES: usize = 8;

/// The lines of a list-valued field (`If-Match`, `If-None-Match`), in order. RFC 9110 5.3: several
/// lines of one field are one list, as if joined by commas; the lines stay where they are in
/// the buffer (no allocation), and the list is read line by line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FieldLines<'b> {
    lines: [&'b [u8]; MAX_FIELD_LINES],
    len: usize,
}

impl<'b> FieldLines<'b> {
    /// No line of this field was sent.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The lines as received, in order.
    pub fn iter(&self) -> impl Iterator<Item = &'b [u8]> + '_ {
        self.lines[..self.len].iter().copied()
    }

    fn push(&mut self, value: &'b [u8]) -> Result<(), RequestError> {
        let slot = self
            .lines
            .get_mut(self.len)
            .ok_or(RequestError::TooManyFieldLines)?;
        *slot = value;
        self.len += 1;
        Ok(())
    }
}

/// Why a request head was refused; `status()` is the response to send before closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// The request line is longer than `max_request_line` (414).
    #[error("request line too long")]
    UriTooLong,
    /// The head is larger than `max_head_bytes` (431).
    #[error("request head too large")]
    HeadersTooLarge,
    /// More header fields than `max_headers` (431).
    #[error("too many header fields")]
    TooManyHeaders,
    /// The request line or a field breaks the syntax, or HTTP/1.0 sent Transfer-Encoding (400).
    #[error("malformed request")]
    Malformed,
    /// A Content-Length that is not a number, or several that disagree (400).
    #[error("invalid Content-Length")]
    BadContentLength,
    /// Content-Length and Transfer-Encoding together: a smuggling attempt or a broken client (400).
    #[error("both Content-Length and Transfer-Encoding")]
    AmbiguousFraming,
    /// A transfer coding other than one lone `chunked` (501).
    #[error("unsupported Transfer-Encoding")]
    UnsupportedTransferEncoding,
    /// A Host that is not `host[:port]`, or more than one (400).
    #[error("missing, repeated or invalid Host")]
    BadHost,
    /// More than [`MAX_FIELD_LINES`] lines of `If-Match` or `If-None-Match` (400).
    #[error("too many lines of one list field")]
    TooManyFieldLines,
    /// More than one `Authorization` field (400): which one is checked and which one a gateway
    /// passes on must never differ.
    #[error("more than one Authorization field")]
    RepeatedAuthorization,
    /// A major version other than 1 (505).
    #[error("HTTP version not supported")]
    VersionNotSupported,
}

impl RequestError {
    /// The status code this error answers with.
    pub fn status(&self) -> u16 {
        match self {
            RequestError::UriTooLong => 414,
            RequestError::HeadersTooLarge | RequestError::TooManyHeaders => 431,
            RequestError::Malformed
            | RequestError::BadHost
            | RequestError::TooManyFieldLines
            | RequestError::RepeatedAuthorization
            | RequestError::BadContentLength
            | RequestError::AmbiguousFraming => 400,
            RequestError::UnsupportedTransferEncoding => 501,
            RequestError::VersionNotSupported => 505,
        }
    }
}

/// Parses one request head from the start of `buf`.
///
/// `Ok(None)`: incomplete, read more (but a buffer already past a limit is an error, not None).
/// On success `head_len` says where the body (or the next pipelined request) starts.
pub fn parse_request<'b>(
    buf: &'b [u8],
    limits: &RequestLimits,
) -> Result<Option<Request<'b>>, RequestError> {
    parse_head(buf, limits).map_err(|e| first_error(buf, limits, e))
}

/// The answer to a request must not depend on how its bytes were read. A server that reads it in
/// pieces stops at the first prefix that is an error, so when a buffer read at once is both past
/// a limit and wrong elsewhere, the answer is that of its shortest erroneous prefix: the error if
/// it lies within the limits, the limit's (414, 431) if the limit was crossed first.
fn first_error(buf: &[u8], limits: &RequestLimits, e: RequestError) -> RequestError {
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    // The shortest prefix over the request line limit (one byte more when a CR may start the
    // line's CRLF), and over the head limit (a partial head that long cannot end within it).
    let line = [1, 2]
        .map(|extra| {
            start
                .saturating_add(limits.max_request_line)
                .saturating_add(extra)
        })
        .into_iter()
        .find(|&k| {
            k <= buf.len()
                && check_partial_request_line(&buf[..k], limits.max_request_line).is_err()
        });
    let head = (buf.len() >= limits.max_head_bytes).then_some(limits.max_head_bytes);
    let Some(crossing) = line.into_iter().chain(head).min().filter(|&k| k > 0) else {
        return e;
    };
    // Within both limits: its own error, if it has one, came first.
    if let Err(first) = parse_head(&buf[..crossing - 1], limits) {
        return first;
    }
    // Otherwise the prefix that crosses is what a server reading in pieces would have answered.
    parse_head(&buf[..crossing], limits).err().unwrap_or(e)
}

/// [`parse_request`] without putting errors in byte order.
fn parse_head<'b>(
    buf: &'b [u8],
    limits: &RequestLimits,
) -> Result<Option<Request<'b>>, RequestError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'b>>::uninit() }; MAX_HEADERS_CAP];
    let slots = &mut slots[..limits.max_fields()];
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return incomplete(buf, limits),
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::TooManyHeaders),
        Err(httparse::Error::Version) => return parse_other_version(buf, limits),
        Err(_) => {
            // A request line already over the limit says more than "malformed".
            check_partial_request_line(buf, limits.max_request_line)?;
            return Err(RequestError::Malformed);
        }
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(RequestError::Malformed);
    };
    let version = if minor == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let line = RequestLine {
        method: method.as_bytes(),
        target: target.as_bytes(),
        version,
    };
    interpret(line, req.headers, head_len, limits).map(Some)
}

/// The parts of a request line that [`interpret`] needs.
struct RequestLine<'b> {
    method: &'b [u8],
    target: &'b [u8],
    version: Version,
}

/// Checks the limits on a head that is not complete yet: `Ok(None)` to read more.
fn incomplete<'b>(buf: &[u8], limits: &RequestLimits) -> Result<Option<Request<'b>>, RequestError> {
    check_partial_request_line(buf, limits.max_request_line)?;
    if buf.len() >= limits.max_head_bytes {
        // Still no blank line, so the finished head would be bigger than the limit.
        return Err(RequestError::HeadersTooLarge);
    }
    Ok(None)
}

/// From a request line and its header fields to a [`Request`]: the limits, the fields the server
/// acts on, the framing checks.
fn interpret<'b>(
    line: RequestLine<'b>,
    headers: &[httparse::Header<'b>],
    head_len: usize,
    limits: &RequestLimits,
) -> Result<Request<'b>, RequestError> {
    let RequestLine {
        method,
        target,
        version,
    } = line;
    // With single-space delimiters (httparse's default) the line length is exact.
    if method.len() + target.len() + 10 > limits.max_request_line {
        return Err(RequestError::UriTooLong);
    }
    if head_len > limits.max_head_bytes {
        return Err(RequestError::HeadersTooLarge);
    }
    let mut interpreter = Interpreter::new(method, target, version, head_len);
    for h in headers {
        interpreter.field(h.name.as_bytes(), h.value)?;
    }
    interpreter.absolute_form()?;
    interpreter.finish()
}

/// httparse knows only HTTP/1.0 and HTTP/1.1, and stops at the version. RFC 9110 2.5: a later
/// minor version (`HTTP/1.2` ... `HTTP/1.9`) is answered as HTTP/1.1, so its line is split here
/// and its fields parsed by httparse on their own; another major version is a 505; anything else
/// (a space inside the target, a version that is not `HTTP/d.d`) is a 400.
///
/// httparse checks the method and the target before the version, so by the time it fails on
/// the version both are valid tokens.
fn parse_other_version<'b>(
    buf: &'b [u8],
    limits: &RequestLimits,
) -> Result<Option<Request<'b>>, RequestError> {
    // A request line over the limit is a 414 whatever follows it, wherever the reads fell.
    check_partial_request_line(buf, limits.max_request_line)?;
    let start = skip_empty_lines(buf);
    let rest = &buf[start..];
    let Some(lf) = rest.iter().position(|&b| b == b'\n') else {
        let line = rest.strip_suffix(b"\r").unwrap_or(rest);
        return match split_request_line(line) {
            Some((_, _, v)) if could_become_version(v) => incomplete(buf, limits),
            _ => Err(RequestError::Malformed),
        };
    };
    let line = &rest[..lf];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let Some((method, target, v)) = split_request_line(line) else {
        return Err(RequestError::Malformed);
    };
    match v {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', minor] if minor.is_ascii_digit() => {}
        [b'H', b'T', b'T', b'P', b'/', major, b'.', minor]
            if major.is_ascii_digit() && minor.is_ascii_digit() =>
        {
            return Err(RequestError::VersionNotSupported)
        }
        _ => return Err(RequestError::Malformed),
    }
    // A rare path: initialised slots cost a memset that the usual one avoids.
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS_CAP];
    let slots = &mut slots[..limits.max_fields()];
    let fields_at = start + lf + 1;
    match httparse::parse_headers(&buf[fields_at..], slots) {
        Ok(httparse::Status::Complete((n, headers))) => {
            let line = RequestLine {
                method,
                target,
                version: Version::Http11,
            };
            interpret(line, headers, fields_at + n, limits).map(Some)
        }
        Ok(httparse::Status::Partial) => incomplete(buf, limits),
        Err(httparse::Error::TooManyHeaders) => Err(RequestError::TooManyHeaders),
        Err(_) => Err(RequestError::Malformed),
    }
}

/// `method SP target SP version`: exactly two spaces (a third is a space inside the target).
fn split_request_line(line: &[u8]) -> Option<(&[u8], &[u8], &[u8])> {
    let mut parts = line.split(|&b| b == b' ');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(m), Some(t), Some(v), None) => Some((m, t, v)),
        _ => None,
    }
}

/// Whether an unfinished version token can still become `HTTP/d.d`.
fn could_become_version(v: &[u8]) -> bool {
    const PATTERN: &[u8; 8] = b"HTTP/0.0";
    v.len() <= PATTERN.len()
        && v.iter().zip(PATTERN).all(|(&b, &p)| {
            if p == b'0' {
                b.is_ascii_digit()
            } else {
                b == p
            }
        })
}

/// Where the request line starts: RFC 9112 2.2 lets a server skip empty lines before it.
fn skip_empty_lines(buf: &[u8]) -> usize {
    buf.iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len())
}

/// 414 if the request line, complete or not, is already longer than `max`. Leading empty lines
/// (which RFC 9112 2.2 lets a server skip) do not count.
fn check_partial_request_line(buf: &[u8], max: usize) -> Result<(), RequestError> {
    let line = &buf[skip_empty_lines(buf)..];
    // Look one past the limit for the LF, and one more for a CR just before it.
    let window = &line[..line.len().min(max.saturating_add(2))];
    let len = match window.iter().position(|&b| b == b'\n') {
        Some(lf) if lf > 0 && window[lf - 1] == b'\r' => lf - 1,
        Some(lf) => lf,
        // Not finished: its length is at least what we have, minus a CR that may end it.
        None if window.last() == Some(&b'\r') => window.len() - 1,
        None => window.len(),
    };
    if len > max {
        Err(RequestError::UriTooLong)
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests;
