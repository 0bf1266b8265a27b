//! What a request's header fields mean, once: the HTTP/1.1 parser and a request received as
//! HTTP/2 fields both go through [`Interpreter`], so the two can never disagree on a field.
//!
//! [`Request::with_fields`] builds a [`Request`] from a method, a target and field lines received
//! already split (HTTP/2's `:method`, `:path`, `:authority` and its fields), without writing and
//! re-parsing an HTTP/1.1 head. It refuses what the HTTP/1.1 parser would refuse for the head those
//! fields make (`METHOD target HTTP/1.1`, `host` from the authority, then the fields in order), with
//! the same error: the syntax of the method, target and values, the request line and field count
//! limits, then the meaning of each field; and more: a `:path` neither origin-form nor `*` for
//! OPTIONS is malformed (RFC 9113 8.3.1), where HTTP/1.1 reads an absolute-form target.

use super::{host, FieldLines, Method, PassedHost, Request, RequestError, RequestLimits, Version};
use crate::field_name::FieldName;
use crate::text::{eq_token, for_each_element, is_field_value, parse_digits, trim_ows};

/// The fields of one request, read one by one into a [`Request`].
pub(super) struct Interpreter<'b> {
    out: Request<'b>,
    transfer_encoding: bool,
    conn_close: bool,
    conn_keep_alive: bool,
}

impl<'b> Interpreter<'b> {
    pub(super) fn new(
        method: &'b [u8],
        target: &'b [u8],
        version: Version,
        head_len: usize,
    ) -> Self {
        let method = match method {
            b"GET" => Method::Get,
            b"HEAD" => Method::Head,
            _ => Method::Other,
        };
        Interpreter {
            out: Request {
                method,
                target,
                version,
                keep_alive: version.default_keep_alive(),
                host: None,
                if_match: FieldLines::default(),
                if_none_match: FieldLines::default(),
                if_modified_since: None,
                if_unmodified_since: None,
                range: None,
                if_range: None,
                accept_encoding: None,
                user_agent: None,
                referer: None,
                authorization: None,
                content_length: None,
                chunked: false,
                expect_continue: false,
                head_len,
            },
            transfer_encoding: false,
            conn_close: false,
            conn_keep_alive: false,
        }
    }

    /// One field line: `name` as sent (any case), `value` without its surrounding whitespace.
    pub(super) fn field(&mut self, name: &[u8], value: &'b [u8]) -> Result<(), RequestError> {
        let out = &mut self.out;
        match FieldName::of(name) {
            FieldName::Host => {
                // RFC 9112 3.2: more than one Host, or an invalid one, is a 400.
                if out.host.is_some() || !host::is_valid(trim_ows(value)) {
                    return Err(RequestError::BadHost);
                }
                out.host = Some(value);
            }
            // A second Range line is ignored: the first is served, as nginx does (the field
            // has no list form to join them into).
            FieldName::Range => {
                out.range.get_or_insert(value);
            }
            FieldName::Expect => {
                // RFC 9110 10.1.1: the expectation's token is case-insensitive.
                out.expect_continue |= trim_ows(value).eq_ignore_ascii_case(b"100-continue");
            }
            FieldName::Referer => out.referer = Some(value),
            FieldName::IfRange => out.if_range = Some(value),
            FieldName::IfMatch => out.if_match.push(value)?,
            FieldName::Connection => {
                let (close, keep_alive) = (&mut self.conn_close, &mut self.conn_keep_alive);
                for_each_element(value, |t| {
                    *close |= eq_token(t, b"close");
                    *keep_alive |= eq_token(t, b"keep-alive");
                })
            }
            FieldName::UserAgent => out.user_agent = Some(value),
            FieldName::IfNoneMatch => out.if_none_match.push(value)?,
            // Two would let the server check one and a gateway pass the other (an upstream
            // reads the first): 400, as nginx answers.
            FieldName::Authorization => {
                if out.authorization.is_some() {
                    return Err(RequestError::RepeatedAuthorization);
                }
                out.authorization = Some(value);
            }
            // One line of one number: a second line or a list (`5, 5`), even of one length,
            // is refused (400, as nginx does): what a request passed on is framed by must be
            // what every reader of it takes.
            FieldName::ContentLength => {
                let n = parse_digits(trim_ows(value)).ok_or(RequestError::BadContentLength)?;
                if out.content_length.is_some() {
                    return Err(RequestError::BadContentLength);
                }
                out.content_length = Some(n);
            }
            FieldName::AcceptEncoding => out.accept_encoding = Some(value),
            FieldName::IfModifiedSince => out.if_modified_since = Some(value),
            FieldName::TransferEncoding => {
                self.transfer_encoding = true;
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
            FieldName::IfUnmodifiedSince => out.if_unmodified_since = Some(value),
            _ => {}
        }
        Ok(())
    }

    /// An HTTP/1 request line's absolute-form target (`http://host/path`, RFC 9112 3.2.2), read
    /// for HTTP/1 only (HTTP/2 and HTTP/3 refuse it): the request's host is the target's authority, whatever `Host` said (the server "MUST ignore
    /// the received Host"), and its target the origin-form path, so that what routes, logs and
    /// is passed on names one host and one path. An authority that is not a valid host is a
    /// 400; so is a query with no path (`http://h?q`: its origin-form `/?q` is in no buffer).
    pub(super) fn absolute_form(&mut self) -> Result<(), RequestError> {
        let target = self.out.target;
        if target.first() == Some(&b'/') {
            // Origin-form, as almost every request's: one compare.
            return Ok(());
        }
        let scheme = if starts_with_ignore_case(target, b"http://") {
            7
        } else if starts_with_ignore_case(target, b"https://") {
            8
        } else {
            return Ok(());
        };
        // RFC 9112 3.2: an HTTP/1.1 request with no Host is a 400, whatever its target names.
        if self.out.host.is_none() && self.out.version == Version::Http11 {
            return Err(RequestError::BadHost);
        }
        let rest = &target[scheme..];
        let end = rest.iter().position(|&b| b == b'/' || b == b'?');
        let (authority, path) = match end {
            Some(i) if rest[i] == b'?' => return Err(RequestError::Malformed),
            Some(i) => rest.split_at(i),
            // `http://host` names the root: its `/` is the last of `://`, so the target stays
            // a part of the request line as every part of a request is.
            None => (rest, &target[scheme - 1..scheme]),
        };
        if !host::is_valid(authority) {
            return Err(RequestError::BadHost);
        }
        self.out.host = Some(authority);
        self.out.target = path;
        Ok(())
    }

    /// The first field is a Host `value` that passed its checks before: nothing to check again.
    pub(super) fn passed_host(&mut self, value: &'b [u8]) {
        self.out.host = Some(value);
    }

    /// The request, once every field was read: the framing checks that need them all.
    pub(super) fn finish(mut self) -> Result<Request<'b>, RequestError> {
        self.finish_in_place()?;
        Ok(self.out)
    }

    /// [`finish`](Self::finish), the request left where it is.
    fn finish_in_place(&mut self) -> Result<(), RequestError> {
        let out = &mut self.out;
        if self.transfer_encoding {
            if out.content_length.is_some() {
                return Err(RequestError::AmbiguousFraming);
            }
            // RFC 9112 6.1: Transfer-Encoding in HTTP/1.0 means the framing is faulty.
            if out.version == Version::Http10 {
                return Err(RequestError::Malformed);
            }
        }
        out.keep_alive = if self.conn_close {
            false
        } else {
            self.conn_keep_alive || out.version.default_keep_alive()
        };
        Ok(())
    }
}

fn starts_with_ignore_case(s: &[u8], prefix: &[u8]) -> bool {
    s.len() >= prefix.len() && s[..prefix.len()].eq_ignore_ascii_case(prefix)
}

/// A set of bytes as a table: one load a byte, where a chain of ranges costs several compares.
struct ByteSet([bool; 256]);

/// The [`ByteSet`] of the bytes that match a pattern, built at compile time.
macro_rules! byte_set {
    ($pattern:pat) => {{
        let mut table = [false; 256];
        let mut b = 0;
        while b < 256 {
            table[b] = matches!(b as u8, $pattern);
            b += 1;
        }
        ByteSet(table)
    }};
}

impl ByteSet {
    /// The first byte of `bytes` outside the set.
    fn first_outside(&self, bytes: &[u8]) -> Option<usize> {
        bytes.iter().position(|&b| !self.0[b as usize])
    }
}

/// Bytes a method may hold (RFC 9110 `token`), as the HTTP/1.1 parser reads them.
static TOKEN: ByteSet = byte_set!(
    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9'
        | b'!' | b'#' | b'$' | b'%' | b'&' | b'\'' | b'*' | b'+'
        | b'-' | b'.' | b'^' | b'_' | b'`' | b'|' | b'~'
);

/// Whether `s` is an RFC 9110 `token` (a method, a field name, a media type's type or
/// subtype): not empty, and only the bytes the HTTP/1.1 parser takes in a method.
pub fn is_token(s: &[u8]) -> bool {
    !s.is_empty() && TOKEN.first_outside(s).is_none()
}

/// Bytes a request target may hold as the HTTP/1.1 parser reads it (visible, no space, no DEL).
static TARGET: ByteSet = byte_set!(b'!'..=0x7e | 0x80..=0xff);

/// Where the request line `method SP target SP HTTP/1.1` first breaks its syntax, if it does.
fn line_syntax_error(method: &[u8], target: &[u8]) -> Option<usize> {
    // The common line first, in one pass and no table: GET or HEAD, a target of visible ASCII.
    if matches!(method, b"GET" | b"HEAD")
        && !target.is_empty()
        && target.iter().all(|&b| b.wrapping_sub(b'!') <= b'~' - b'!')
    {
        return None;
    }
    if let Some(i) = TOKEN.first_outside(method) {
        return Some(i);
    }
    if method.is_empty() {
        return Some(0);
    }
    let at = method.len() + 1;
    if let Some(i) = TARGET.first_outside(target) {
        return Some(at + i);
    }
    // An empty target, or one that is not UTF-8, is refused at the space that ends it.
    if target.is_empty() || (!target.is_ascii() && std::str::from_utf8(target).is_err()) {
        return Some(at + target.len());
    }
    None
}

impl<'b> Request<'b> {
    /// A request from fields received already split (HTTP/2): `method` and `target` as in the
    /// request line, `authority` as a leading `host` field, then `fields` (name, value) in order.
    /// The answer, a request or an error, is the one [`parse_request`](super::parse_request) gives
    /// for the HTTP/1.1 head these make, but that a target neither origin-form nor `*` for
    /// OPTIONS is malformed here (RFC 9113 8.3.1); `head_len` is that head's size. `passed` is the
    /// connection's last authority that passed its checks, kept here for the next request.
    ///
    /// The answer is handed to `then` by reference and its result returned: the request is read
    /// where it stays, never moved (a `Request` is about 500 bytes: a move is a copy of them
    /// for every request).
    pub fn with_fields<I, T>(
        method: &'b [u8],
        target: &'b [u8],
        authority: Option<&'b [u8]>,
        fields: I,
        limits: &RequestLimits,
        passed: &mut PassedHost,
        then: impl FnOnce(Result<&Request<'b>, RequestError>) -> T,
    ) -> T
    where
        I: IntoIterator<Item = (&'b [u8], &'b [u8])>,
    {
        let mut interpreter = Interpreter::new(method, target, Version::Http11, 0);
        let line = (method, target);
        match read_fields(&mut interpreter, line, authority, fields, limits, passed) {
            Ok(()) => then(Ok(&interpreter.out)),
            Err(e) => then(Err(e)),
        }
    }
}

/// The body of [`Request::with_fields`] past the request's start: the line's checks, the
/// fields read into `interpreter`, then its end.
fn read_fields<'b, I>(
    interpreter: &mut Interpreter<'b>,
    (method, target): (&'b [u8], &'b [u8]),
    authority: Option<&'b [u8]>,
    fields: I,
    limits: &RequestLimits,
    passed: &mut PassedHost,
) -> Result<(), RequestError>
where
    I: IntoIterator<Item = (&'b [u8], &'b [u8])>,
{
    // `METHOD SP target SP HTTP/1.1`, as the request line limit counts it.
    let line_len = method.len() + target.len() + 10;
    let line_error = line_syntax_error(method, target);
    if line_len > limits.max_request_line {
        // A reader in pieces stops at whichever comes first: the bad byte or the limit.
        return Err(match line_error {
            Some(at) if at < limits.max_request_line => RequestError::Malformed,
            _ => RequestError::UriTooLong,
        });
    }
    if line_error.is_some() {
        return Err(RequestError::Malformed);
    }
    let max_fields = limits.max_fields();
    let mut head_len = line_len + 2 + 2;
    // The first error of meaning; one of syntax (or the field count) found later still wins,
    // as the parser checks the whole head's syntax before reading any field.
    let mut meaning = Ok(());
    let mut count = 0;
    if let Some(a) = authority {
        // The `host` field it stands for, first: its name is a token, so only the value is
        // checked, and not even that when it is the one that passed last.
        if max_fields == 0 {
            return Err(RequestError::TooManyHeaders);
        }
        count = 1;
        head_len += b"host".len() + a.len() + 4;
        if passed.is(a) {
            interpreter.passed_host(trim_ows(a));
        } else {
            if !is_field_value(a) {
                return Err(RequestError::Malformed);
            }
            meaning = interpreter.field(b"host", trim_ows(a));
            if meaning.is_ok() {
                passed.keep(a);
            }
        }
    }
    for (name, value) in fields {
        if count == max_fields {
            return Err(RequestError::TooManyHeaders);
        }
        count += 1;
        if name.is_empty() || TOKEN.first_outside(name).is_some() || !is_field_value(value) {
            return Err(RequestError::Malformed);
        }
        head_len += name.len() + value.len() + 4;
        if meaning.is_ok() {
            meaning = interpreter.field(name, trim_ows(value));
        }
    }
    if head_len > limits.max_head_bytes {
        return Err(RequestError::HeadersTooLarge);
    }
    meaning?;
    // RFC 9113 8.3.1 (and RFC 9114 4.3.1): `:path` is origin-form, or `*` for OPTIONS; an
    // absolute-form one is malformed, never read as a second authority past `:authority`'s
    // checks. One compare for almost every request.
    if target[0] != b'/' && !(target == b"*" && method == b"OPTIONS") {
        return Err(RequestError::Malformed);
    }
    interpreter.out.head_len = head_len;
    interpreter.finish_in_place()
}

#[cfg(test)]
mod tests;
