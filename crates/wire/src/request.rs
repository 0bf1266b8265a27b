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

use std::mem::MaybeUninit;

use crate::text::{eq_token, for_each_element, parse_content_length};

/// The header slots on the stack; `RequestLimits::max_headers` above this is clamped to it.
pub const MAX_HEADERS_CAP: usize = 256;

/// The request method, as far as a static file server cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Head,
    /// Any other syntactically valid method (the server answers 405/501).
    Other,
}

/// The HTTP/1.x minor version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Version {
    Http10,
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
    pub method: Method,
    pub target: &'b [u8],
    pub version: Version,
    /// Whether the connection persists after this request: the version's default, overridden by
    /// `Connection: close` / `Connection: keep-alive`.
    pub keep_alive: bool,
    pub host: Option<&'b [u8]>,
    pub if_none_match: Option<&'b [u8]>,
    pub if_modified_since: Option<&'b [u8]>,
    pub range: Option<&'b [u8]>,
    pub if_range: Option<&'b [u8]>,
    pub accept_encoding: Option<&'b [u8]>,
    pub user_agent: Option<&'b [u8]>,
    pub referer: Option<&'b [u8]>,
    /// The validated Content-Length, if any.
    pub content_length: Option<u64>,
    /// `Transfer-Encoding: chunked` (the only transfer coding accepted).
    pub chunked: bool,
    /// Bytes of the buffer taken by the head; the body or the next request starts here.
    pub head_len: usize,
}

/// Why a request head was refused; `status()` is the response to send before closing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    #[error("request line too long")]
    UriTooLong,
    #[error("request head too large")]
    HeadersTooLarge,
    #[error("too many header fields")]
    TooManyHeaders,
    #[error("malformed request")]
    Malformed,
    #[error("invalid Content-Length")]
    BadContentLength,
    #[error("both Content-Length and Transfer-Encoding")]
    AmbiguousFraming,
    #[error("unsupported Transfer-Encoding")]
    UnsupportedTransferEncoding,
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
    let mut slots = [const { MaybeUninit::<httparse::Header<'b>>::uninit() }; MAX_HEADERS_CAP];
    let slots = &mut slots[..limits.max_headers.min(MAX_HEADERS_CAP)];
    let mut req = httparse::Request::new(&mut []);
    let head_len = match req.parse_with_uninit_headers(buf, slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => {
            check_partial_request_line(buf, limits.max_request_line)?;
            if buf.len() >= limits.max_head_bytes {
                // Still no blank line, so the finished head would be bigger than the limit.
                return Err(RequestError::HeadersTooLarge);
            }
            return Ok(None);
        }
        Err(httparse::Error::TooManyHeaders) => return Err(RequestError::TooManyHeaders),
        Err(httparse::Error::Version) => return other_version(buf, limits),
        Err(_) => {
            // A request line already over the limit says more than "malformed".
            check_partial_request_line(buf, limits.max_request_line)?;
            return Err(RequestError::Malformed);
        }
    };
    let (Some(method), Some(target), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(RequestError::Malformed);
    };
    // With single-space delimiters (httparse's default) the line length is exact.
    if method.len() + target.len() + 10 > limits.max_request_line {
        return Err(RequestError::UriTooLong);
    }
    if head_len > limits.max_head_bytes {
        return Err(RequestError::HeadersTooLarge);
    }
    let version = if minor == 0 {
        Version::Http10
    } else {
        Version::Http11
    };
    let method = match method {
        "GET" => Method::Get,
        "HEAD" => Method::Head,
        _ => Method::Other,
    };
    let mut out = Request {
        method,
        target: target.as_bytes(),
        version,
        keep_alive: version.default_keep_alive(),
        host: None,
        if_none_match: None,
        if_modified_since: None,
        range: None,
        if_range: None,
        accept_encoding: None,
        user_agent: None,
        referer: None,
        content_length: None,
        chunked: false,
        head_len,
    };
    let mut transfer_encoding = false;
    let (mut conn_close, mut conn_keep_alive) = (false, false);
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        let value = h.value;
        // Dispatch on length first: one compare rejects most names cheaply.
        match name.len() {
            4 if name.eq_ignore_ascii_case(b"host") => {
                // RFC 9112 3.2: more than one Host is a 400.
                let duplicate = out.host.is_some();
                out.host = Some(value);
                if duplicate {
                    return Err(RequestError::Malformed);
                }
            }
            5 if name.eq_ignore_ascii_case(b"range") => out.range = Some(value),
            7 if name.eq_ignore_ascii_case(b"referer") => out.referer = Some(value),
            8 if name.eq_ignore_ascii_case(b"if-range") => out.if_range = Some(value),
            10 if name.eq_ignore_ascii_case(b"connection") => for_each_element(value, |t| {
                conn_close |= eq_token(t, b"close");
                conn_keep_alive |= eq_token(t, b"keep-alive");
            }),
            10 if name.eq_ignore_ascii_case(b"user-agent") => out.user_agent = Some(value),
            13 if name.eq_ignore_ascii_case(b"if-none-match") => out.if_none_match = Some(value),
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let n = parse_content_length(value).ok_or(RequestError::BadContentLength)?;
                if out.content_length.is_some_and(|prev| prev != n) {
                    return Err(RequestError::BadContentLength);
                }
                out.content_length = Some(n);
            }
            15 if name.eq_ignore_ascii_case(b"accept-encoding") => {
                out.accept_encoding = Some(value)
            }
            17 if name.eq_ignore_ascii_case(b"if-modified-since") => {
                out.if_modified_since = Some(value)
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                transfer_encoding = true;
                // Only a lone `chunked` is decodable; a second TE header or any other coding
                // (before or after it) is refused.
                let mut ok = !out.chunked;
                let mut count = 0u32;
                for_each_element(value, |t| {
                    count += 1;
                    ok &= eq_token(t, b"chunked");
                });
                if !ok || count != 1 {
                    return Err(RequestError::UnsupportedTransferEncoding);
                }
                out.chunked = true;
            }
            _ => {}
        }
    }
    if transfer_encoding {
        if out.content_length.is_some() {
            return Err(RequestError::AmbiguousFraming);
        }
        // RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
        if version == Version::Http10 {
            return Err(RequestError::Malformed);
        }
    }
    out.keep_alive = if conn_close {
        false
    } else {
        conn_keep_alive || version.default_keep_alive()
    };
    Ok(Some(out))
}

/// 414 if the request line, complete or not, is already longer than `max`. Leading empty lines
/// (which RFC 9112 2.2 lets a server skip) do not count.
fn check_partial_request_line(buf: &[u8], max: usize) -> Result<(), RequestError> {
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let line = &buf[start..];
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

/// httparse only knows HTTP/1.0 and HTTP/1.1 and stops at any other version, finished or not.
/// The answer must not depend on where the reads fell: a request line over the limit is a 414
/// whatever follows it; an unfinished line whose last part can still become `HTTP/d.d` waits for
/// more; a finished `method SP target SP HTTP/d.d` is a 505; anything else (a space inside the
/// target makes a fourth part) is a 400.
fn other_version<'b>(
    buf: &[u8],
    limits: &RequestLimits,
) -> Result<Option<Request<'b>>, RequestError> {
    check_partial_request_line(buf, limits.max_request_line)?;
    let start = buf
        .iter()
        .position(|&b| b != b'\r' && b != b'\n')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    let lf = rest.iter().position(|&b| b == b'\n');
    let line = &rest[..lf.unwrap_or(rest.len())];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let parts = line.split(|&b| b == b' ').count();
    let version = line.rsplit(|&b| b == b' ').next().unwrap_or(b"");
    let well_formed = |v: &[u8], finished: bool| {
        (v.len() == 8 || !finished && v.len() < 8)
            && v.iter().zip(b"HTTP/0.0").all(|(&b, &p)| match p {
                b'0' => b.is_ascii_digit(),
                _ => b == p,
            })
    };
    match lf {
        None if parts == 3 && well_formed(version, false) => {
            if buf.len() >= limits.max_head_bytes {
                return Err(RequestError::HeadersTooLarge);
            }
            Ok(None)
        }
        Some(_) if parts == 3 && well_formed(version, true) => {
            Err(RequestError::VersionNotSupported)
        }
        _ => Err(RequestError::Malformed),
    }
}

#[cfg(test)]
mod tests;
