//! The checks of RFC 9113 8.1 to 8.3 a server makes on the requests it receives, made here
//! instead of by nghttp2.
//!
//! nghttp2's "HTTP messaging" (`nghttp2_http.c`) costs ~1,150 instructions for a request of five
//! fields; a server session turns it off (`nghttp2_option_set_no_http_messaging`) and this module
//! makes the same checks, with the same outcomes as nghttp2 1.68, for ~570 (docs/http2.md): one
//! `match` on the name (a common name is known to be a token and not scanned), the value's bytes
//! 8 at a time when they are plain, nghttp2's byte classes in one table for the rest:
//!
//! - a pseudo-header whose name or value is malformed, a pseudo-header after a regular field or
//!   in trailers, an unknown, repeated or empty one, `:protocol` (extended CONNECT is not
//!   offered), an uppercase name, a connection-specific field (`connection`, `keep-alive`,
//!   `proxy-connection`, `transfer-encoding`, `upgrade`), `te` other than `trailers`, a second
//!   `host`, a second or non-numeric `content-length`: the connection ends (GOAWAY
//!   PROTOCOL_ERROR), as nghttp2 does;
//! - a regular field whose name has other bytes than a token's, whose value has NUL, CR, LF,
//!   another control byte (the bytes `wire::is_field_value` refuses, as HTTP/1.1's parser does)
//!   or white space at either end, or a `host` that is no host: the request is malformed (RFC
//!   9113 8.2.1, 8.1.1): its stream is reset with PROTOCOL_ERROR once its block is read, the
//!   handler hears no more of it, and the connection goes on (where nghttp2 drops the field and
//!   serves the request);
//! - at the end of a request's header block: `:method`, `:scheme`, `:path` and `:authority` or
//!   `host` present (CONNECT: `:authority` only); trailers must end the stream; else GOAWAY
//!   PROTOCOL_ERROR; an `http`/`https` `:path` not starting with `/` (nor `*` for OPTIONS) makes
//!   the request malformed: its stream is reset with PROTOCOL_ERROR and the connection goes on
//!   (where nghttp2 ends the connection);
//! - a body longer than its `content-length`, or a stream ended short of it: GOAWAY
//!   PROTOCOL_ERROR.
//!
//! And a request's RFC 9218 `priority` field is applied as nghttp2 does while HTTP messaging is
//! on: parsed by nghttp2's own parser (`nghttp2_extpri_parse_priority`), field after field onto
//! the default, and set as the stream's urgency when the block is accepted
//! (`nghttp2_session_change_extpri_stream_priority`, which needs the server's SETTINGS to say
//! NO_RFC7540_PRIORITIES 1: they do).
//!
//! Only one header block is received at a time (RFC 9113 4.3), so a block's state is one value;
//! a stream whose request has a body keeps an entry (its flags, declared and received length)
//! until it ends, in a vector that grows to the number of such streams open at once and is
//! reused: a request without a body costs no entry.

use libnghttp2_sys as sys;
use wire::FieldName;

use crate::handler::{HeadersKind, StreamId};

/// RFC 9218 4.1's default urgency (nghttp2's `NGHTTP2_EXTPRI_DEFAULT_URGENCY`, a macro).
const DEFAULT_URGENCY: u32 = 3;

/// What becomes of one field: shown to the handler with the name the checks recognised (so
/// the handler need not match it again), the request malformed (its stream reset), or the
/// connection's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Checked {
    Pass(FieldName),
    Malformed,
    Fail,
}

/// What becomes of one field, its name aside (what the tests look at).
#[cfg(test)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Show it to the handler.
    Pass,
    /// The request is malformed: reset its stream with PROTOCOL_ERROR.
    Malformed,
    /// End the connection with PROTOCOL_ERROR.
    Fail,
}

// The byte classes: nghttp2 1.68's tables (`nghttp2_helper.c`, and `nghttp2_http.c` for the
// authority), built from the characters they allow.
const NAME: u8 = 1; // a token, lowercase: a field name
const METHOD: u8 = 4; // a token
const PATH: u8 = 8; // visible ASCII and bytes from 0x80
const AUTHORITY: u8 = 16; // RFC 3986's host, port and userinfo characters but '@'

/// Whether `c` is one of `set` (a loop: `contains` is not `const`).
const fn one_of(c: u8, set: &[u8]) -> bool {
    let mut i = 0;
    while i < set.len() {
        if set[i] == c {
            return true;
        }
        i += 1;
    }
    false
}

const fn classes() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        let lower_token =
            c.is_ascii_lowercase() || c.is_ascii_digit() || one_of(c, b"!#$%&'*+-.^_`|~");
        if lower_token {
            t[b] |= NAME;
        }
        if lower_token || c.is_ascii_uppercase() {
            t[b] |= METHOD;
        }
        if c > 0x20 && c != 0x7f {
            t[b] |= PATH;
        }
        if c.is_ascii_alphanumeric() || one_of(c, b"!$%&'()*+,-.:;=[]_~") {
            t[b] |= AUTHORITY;
        }
        b += 1;
    }
    t
}

static CLASS: [u8; 256] = classes();

fn all(bytes: &[u8], class: u8) -> bool {
    bytes.iter().all(|&b| CLASS[b as usize] & class != 0)
}

const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);

/// Whether every byte of `bytes` (8 or more) passes `word`, 8 at a time, the last 8
/// overlapping those before.
#[inline(always)]
fn words(bytes: &[u8], word: impl Fn(u64) -> bool) -> bool {
    let load = |at: usize| {
        let w = &bytes[at..at + 8];
        u64::from_ne_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]])
    };
    let last = bytes.len() - 8;
    let mut at = 0;
    while at < last {
        if !word(load(at)) {
            return false;
        }
        at += 8;
    }
    word(load(last))
}

/// The high bit of each byte of `w` (all below 0x80) that is in `lo..=hi`, exactly: no byte
/// carries into the next.
#[inline(always)]
fn in_range(w: u64, lo: u8, hi: u8) -> u64 {
    let at_least_lo = w.wrapping_add(ONES * u64::from(0x80 - lo));
    let above_hi = w.wrapping_add(ONES * u64::from(0x7f - hi));
    at_least_lo & !above_hi & HIGH
}

/// Whether all of `bytes` are AUTHORITY bytes: 8 at a time for a host name or address and
/// its port (letters, digits, '-', '.', ':'), else by the table.
fn authority_bytes(bytes: &[u8]) -> bool {
    let host = |w: u64| {
        w & HIGH == 0
            && (in_range(w, b'-', b'.')
                | in_range(w, b'0', b':')
                | in_range(w, b'A', b'Z')
                | in_range(w, b'a', b'z'))
                == HIGH
    };
    (bytes.len() >= 8 && words(bytes, host)) || all(bytes, AUTHORITY)
}

// What has been seen on a stream (nghttp2's `http_flags`).
const SEEN_AUTHORITY: u16 = 1;
const SEEN_METHOD: u16 = 1 << 1;
const SEEN_PATH: u16 = 1 << 2;
const SEEN_SCHEME: u16 = 1 << 3;
const SEEN_HOST: u16 = 1 << 4;
/// A regular field was seen (kept or ignored): no pseudo-header may follow.
const SEEN_REGULAR: u16 = 1 << 5;
const CONNECT: u16 = 1 << 6;
const OPTIONS: u16 = 1 << 7;
const PATH_SLASH: u16 = 1 << 8;
const PATH_ASTERISK: u16 = 1 << 9;
const SCHEME_HTTP: u16 = 1 << 10;
const REQUIRED: u16 = SEEN_METHOD | SEEN_PATH | SEEN_SCHEME;

/// What the checks do with a regular field, by its name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Regular {
    Host,
    ContentLength,
    /// `connection`, `keep-alive`, `proxy-connection`, `transfer-encoding`, `upgrade`.
    ConnectionSpecific,
    Te,
    /// RFC 9218's `priority`.
    Priority,
    /// Any other name (a lowercase token), as the handler is told it.
    Plain(FieldName),
}

/// A content-length's value: digits only, at most i64::MAX (nghttp2's `parse_uint`).
fn length(value: &[u8]) -> Option<i64> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0i64, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(i64::from(b - b'0'))
    })
}

fn scheme_valid(v: &[u8]) -> bool {
    match v.split_first() {
        Some((first, rest)) => {
            first.is_ascii_alphabetic()
                && rest
                    .iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'))
        }
        None => false,
    }
}

/// A regular value: a field value's bytes (`wire`'s rule, HTTP/1.1's), and RFC 9113 8.2.1's
/// no white space at either end.
fn value_valid(v: &[u8]) -> bool {
    match (v.first(), v.last()) {
        (Some(&f), Some(&l)) => {
            !matches!(f, b' ' | b'\t') && !matches!(l, b' ' | b'\t') && wire::is_field_value(v)
        }
        _ => true,
    }
}

/// A stream whose request has a body: what its head said, and what came since.
struct Open {
    stream: StreamId,
    seen: u16,
    declared: Option<i64>,
    received: i64,
}

/// The request checks of one server session (inactive for a client: nghttp2 keeps its own).
pub(crate) struct Messaging {
    active: bool,
    stream: StreamId,
    trailers: bool,
    /// A field of the block under way made its request malformed.
    malformed: bool,
    seen: u16,
    declared: Option<i64>,
    /// The request's `priority` so far: parsed onto RFC 9218's default, field after field, as
    /// nghttp2 does; `Err` once one failed to parse (the rest are then ignored).
    priority: Result<Option<sys::nghttp2_extpri>, ()>,
    open: Vec<Open>,
}

impl Messaging {
    pub(crate) fn new(active: bool) -> Messaging {
        Messaging {
            active,
            stream: 0,
            trailers: false,
            malformed: false,
            seen: 0,
            declared: None,
            priority: Ok(None),
            open: Vec::new(),
        }
    }

    /// Whether the session made these checks (a server's): nghttp2's are then off.
    pub(crate) fn active(&self) -> bool {
        self.active
    }

    fn find(&self, stream: StreamId) -> Option<usize> {
        self.open.iter().position(|o| o.stream == stream)
    }

    /// A header block begins on `stream`.
    pub(crate) fn begin(&mut self, stream: StreamId, kind: HeadersKind) {
        self.stream = stream;
        self.trailers = kind != HeadersKind::Request;
        self.malformed = false;
        self.priority = Ok(None);
        (self.seen, self.declared) = match self.find(stream) {
            Some(i) if self.trailers => (self.open[i].seen, self.open[i].declared),
            _ => (0, None),
        };
    }

    /// Whether a field of the block under way made its request malformed (the rest of its
    /// fields are then not checked).
    pub(crate) fn malformed(&self) -> bool {
        self.malformed
    }

    /// One field of the block begun last, without the name it was recognised as.
    #[cfg(test)]
    pub(crate) fn field(&mut self, name: &[u8], value: &[u8]) -> Verdict {
        match self.check(name, value) {
            Checked::Pass(_) => Verdict::Pass,
            Checked::Malformed => Verdict::Malformed,
            Checked::Fail => Verdict::Fail,
        }
    }

    /// One field of the block begun last. Inlined into the header callback: one call a field
    /// fewer.
    #[inline(always)]
    pub(crate) fn check(&mut self, name: &[u8], value: &[u8]) -> Checked {
        let checked = self.check_field(name, value);
        if checked == Checked::Malformed {
            self.malformed = true;
        }
        checked
    }

    #[inline(always)]
    fn check_field(&mut self, name: &[u8], value: &[u8]) -> Checked {
        if name.first() == Some(&b':') {
            return self.pseudo(name, value);
        }
        // The name as every protocol's reader recognises it (wire's one table).
        let kind = match FieldName::of_lower(name) {
            FieldName::Host => Regular::Host,
            FieldName::ContentLength => Regular::ContentLength,
            f if f.is_connection_specific() => Regular::ConnectionSpecific,
            FieldName::Te => Regular::Te,
            FieldName::Priority => Regular::Priority,
            // Names requests commonly carry: tokens, not scanned.
            FieldName::Other => match name {
                b"accept"
                | b"accept-language"
                | b"origin"
                | b"cache-control"
                | b"pragma"
                | b"content-type"
                | b"sec-fetch-dest"
                | b"sec-fetch-mode"
                | b"sec-fetch-site"
                | b"upgrade-insecure-requests" => Regular::Plain(FieldName::Other),
                _ if !name.is_empty() && all(name, NAME) => Regular::Plain(FieldName::Other),
                _ if name.iter().any(u8::is_ascii_uppercase) => return Checked::Fail,
                _ => {
                    self.seen |= SEEN_REGULAR;
                    return Checked::Malformed;
                }
            },
            // Every other name of the table is a lowercase token (no pseudo-header's: this
            // one does not start with ':').
            known => Regular::Plain(known),
        };
        // Passed or not, a regular field ends the pseudo-headers.
        self.seen |= SEEN_REGULAR;
        let valid = match kind {
            Regular::Host => authority_bytes(value),
            _ => value_valid(value),
        };
        if !valid {
            return Checked::Malformed;
        }
        let (ok, known) = match kind {
            Regular::Host => (self.once(SEEN_HOST, value), FieldName::Host),
            Regular::ContentLength => (
                self.declared.is_none() && {
                    self.declared = length(value);
                    self.declared.is_some()
                },
                FieldName::ContentLength,
            ),
            Regular::ConnectionSpecific => (false, FieldName::Other),
            Regular::Te => (value.eq_ignore_ascii_case(b"trailers"), FieldName::Te),
            Regular::Priority => {
                self.priority(value);
                (true, FieldName::Priority)
            }
            Regular::Plain(known) => (true, known),
        };
        if ok {
            Checked::Pass(known)
        } else {
            Checked::Fail
        }
    }

    /// A pseudo-header: whatever is wrong with it (name, value, place, repetition) ends the
    /// connection, so the checks' order does not matter.
    fn pseudo(&mut self, name: &[u8], value: &[u8]) -> Checked {
        if self.trailers || self.seen & SEEN_REGULAR != 0 {
            return Checked::Fail;
        }
        let (ok, known) = match name {
            b":method" => (
                (value == b"GET" || all(value, METHOD)) && {
                    match value {
                        b"CONNECT" => self.seen |= CONNECT,
                        b"OPTIONS" => self.seen |= OPTIONS,
                        _ => {}
                    }
                    self.once(SEEN_METHOD, value)
                },
                FieldName::Method,
            ),
            b":path" => (
                all(value, PATH) && {
                    match value {
                        [b'/', ..] => self.seen |= PATH_SLASH,
                        b"*" => self.seen |= PATH_ASTERISK,
                        _ => {}
                    }
                    self.once(SEEN_PATH, value)
                },
                FieldName::Path,
            ),
            b":scheme" => {
                let http = match value {
                    b"http" | b"https" => true,
                    _ if !scheme_valid(value) => return Checked::Fail,
                    _ => {
                        value.eq_ignore_ascii_case(b"http") || value.eq_ignore_ascii_case(b"https")
                    }
                };
                if http {
                    self.seen |= SCHEME_HTTP;
                }
                (self.once(SEEN_SCHEME, value), FieldName::Scheme)
            }
            b":authority" => (
                authority_bytes(value) && self.once(SEEN_AUTHORITY, value),
                FieldName::Authority,
            ),
            // `:protocol` (extended CONNECT is not offered), `:status`, unknown or malformed.
            _ => return Checked::Fail,
        };
        if ok {
            Checked::Pass(known)
        } else {
            Checked::Fail
        }
    }

    /// A request's `priority` field (RFC 9218 4.2), parsed by nghttp2's own parser onto what
    /// the fields before it gave (trailers' are not applied, as nghttp2 does not).
    fn priority(&mut self, value: &[u8]) {
        if self.trailers {
            return;
        }
        if let Ok(so_far) = self.priority {
            let mut p = so_far.unwrap_or(sys::nghttp2_extpri {
                urgency: DEFAULT_URGENCY,
                inc: 0,
            });
            // SAFETY: p is a live extpri; value is valid for its length and only read.
            let rv =
                unsafe { sys::nghttp2_extpri_parse_priority(&mut p, value.as_ptr(), value.len()) };
            self.priority = if rv == 0 { Ok(Some(p)) } else { Err(()) };
        }
    }

    /// The priority the request just accepted asked for, if any (once).
    pub(crate) fn take_priority(&mut self) -> Option<sys::nghttp2_extpri> {
        std::mem::replace(&mut self.priority, Ok(None))
            .ok()
            .flatten()
    }

    /// A field that may appear once, with a value (nghttp2's `check_pseudo_header`).
    fn once(&mut self, flag: u16, value: &[u8]) -> bool {
        if self.seen & flag != 0 || value.is_empty() {
            return false;
        }
        self.seen |= flag;
        true
    }

    /// The block begun last is complete; false if the connection must end.
    pub(crate) fn end_headers(&mut self, end_stream: bool) -> bool {
        let stream = self.stream;
        if self.trailers {
            let i = self.find(stream);
            let received = i.map_or(0, |i| self.open.swap_remove(i).received);
            return end_stream && self.declared.is_none_or(|d| d == received);
        }
        let seen = self.seen;
        if seen & CONNECT != 0 {
            if seen & (SEEN_SCHEME | SEEN_PATH) != 0 || seen & SEEN_AUTHORITY == 0 {
                return false;
            }
            self.declared = None;
        } else {
            if seen & REQUIRED != REQUIRED || seen & (SEEN_AUTHORITY | SEEN_HOST) == 0 {
                return false;
            }
            let path_ok = seen & SCHEME_HTTP == 0
                || seen & PATH_SLASH != 0
                || seen & (OPTIONS | PATH_ASTERISK) == OPTIONS | PATH_ASTERISK;
            if !path_ok {
                // RFC 9113 8.3.1: an `http`/`https` `:path` is origin-form (or `*` for
                // OPTIONS); one that is not (`a.txt`, `http://h/a`) makes the request
                // malformed, a stream error (8.1.1), as HTTP/3 resets such a stream: the
                // connection and its other streams go on. No entry is kept for its body.
                self.malformed = true;
                return true;
            }
        }
        if end_stream {
            return self.declared.is_none_or(|d| d == 0);
        }
        self.open.push(Open {
            stream,
            seen,
            declared: self.declared,
            received: 0,
        });
        true
    }

    /// `n` body bytes arrived on `stream`; false if past its content-length.
    pub(crate) fn data(&mut self, stream: StreamId, n: usize) -> bool {
        match self.find(stream) {
            Some(i) => {
                let o = &mut self.open[i];
                o.received = o.received.saturating_add(n as i64);
                o.declared.is_none_or(|d| o.received <= d)
            }
            None => true,
        }
    }

    /// `stream`'s body ended (DATA with END_STREAM); false if short of its content-length.
    pub(crate) fn data_end(&mut self, stream: StreamId) -> bool {
        match self.find(stream) {
            Some(i) => {
                let o = self.open.swap_remove(i);
                o.declared.is_none_or(|d| d == o.received)
            }
            None => true,
        }
    }

    /// `stream` closed (reset, or the session ended): its entry, if any, goes.
    pub(crate) fn close(&mut self, stream: StreamId) {
        if let Some(i) = self.find(stream) {
            self.open.swap_remove(i);
        }
    }
}

#[cfg(test)]
mod tests;
