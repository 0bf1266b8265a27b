//! How a response leaves the responder: the [`Output`] it is written to (HTTP/1.1 text, or
//! fields for HTTP/2 and HTTP/3), the [`Reply`] saying what was written and the [`Body`] still
//! to send, the connection's [`Persistence`], and the digits and escapes heads are made of,
//! written in place into the caller's buffer (nothing formatted through `fmt`).

use std::fs::File;
use std::rc::Rc;

use wire::{Request, Version};

use crate::response::{FieldName, Fields, Head};

/// What `respond` produced beyond the bytes it appended.
#[derive(Debug)]
pub struct Reply {
    /// The status sent (for the stats and the access log).
    pub status: u16,
    /// Body bytes of this response (for the access log): in `out`, or in `body`.
    pub body_bytes: u64,
    /// What remains to send after the head: nothing, shared bytes, or a file range.
    pub body: Body,
    /// Close the connection after this response.
    pub close: bool,
    /// How its head is carried: written to the output, or a cached representation's fields.
    pub head: Head,
}

/// Where a response goes: HTTP/1.1 text, or a head of fields for a protocol that carries them
/// (HTTP/2, HTTP/3). The responder describes each head once (its status, its fields in order);
/// only the encoding differs.
#[derive(Debug)]
pub enum Output<'a> {
    /// HTTP/1.1: the head as text appended to the buffer, then a generated body, or a cached
    /// one up to [`SMALL_BODY`](super::SMALL_BODY), so that head and body leave in one write.
    Text(&'a mut Vec<u8>),
    /// The head's fields into `head` (its `:status` is the reply's; a cached file's head is
    /// [`Head::Cached`], its prebuilt fields), a generated body into `body`; both are cleared
    /// first. A cached body is handed over shared whatever its size: HTTP/2 frames it as flow
    /// control allows, later, so a copy would have to be kept per stream.
    Fields {
        /// The head's fields, without `:status`.
        head: &'a mut Fields,
        /// A generated body (an error page, a listing up to [`SMALL_BODY`](super::SMALL_BODY)).
        body: &'a mut Vec<u8>,
    },
}

impl<'a> From<&'a mut Vec<u8>> for Output<'a> {
    fn from(out: &'a mut Vec<u8>) -> Output<'a> {
        Output::Text(out)
    }
}

impl<'a, 'b> From<&'a mut Output<'b>> for Output<'a> {
    fn from(out: &'a mut Output<'b>) -> Output<'a> {
        match out {
            Output::Text(out) => Output::Text(out),
            Output::Fields { head, body } => Output::Fields { head, body },
        }
    }
}

impl Output<'_> {
    pub(super) fn carries_fields(&self) -> bool {
        matches!(self, Output::Fields { .. })
    }

    /// A head's start: HTTP/1.1's status line and Date; or the fields cleared, then Date.
    pub(super) fn start(&mut self, status_line: &[u8], date: &[u8]) {
        match self {
            Output::Text(out) => start_head(out, status_line, date),
            Output::Fields { head, body } => {
                head.clear();
                body.clear();
                head.push(FieldName::Date, date);
            }
        }
    }

    pub(super) fn field(&mut self, name: FieldName, value: &[u8]) {
        self.field_with(name, |v| v.extend_from_slice(value));
    }

    /// A field whose value `value` writes in place (a number, an encoded path).
    pub(super) fn field_with(&mut self, name: FieldName, value: impl FnOnce(&mut Vec<u8>)) {
        match self {
            Output::Text(out) => {
                out.extend_from_slice(name.text());
                out.extend_from_slice(b": ");
                value(out);
                out.extend_from_slice(b"\r\n");
            }
            Output::Fields { head, .. } => head.push_with(name, value),
        }
    }

    /// A head's end: in HTTP/1.1, its Connection field if any and the blank line.
    pub(super) fn end(&mut self, conn: Persistence) {
        if let Output::Text(out) = self {
            end_head(out, conn);
        }
    }

    /// A generated body (or a small cached one in HTTP/1.1), after the head.
    pub(super) fn body(&mut self, bytes: &[u8]) {
        match self {
            Output::Text(out) => out.extend_from_slice(bytes),
            Output::Fields { body, .. } => body.extend_from_slice(bytes),
        }
    }
}

/// A body still to send after the bytes appended to `out`.
#[derive(Debug)]
pub enum Body {
    /// Nothing beyond what is in `out`.
    None,
    /// `data[start..start + len]`, to be written without copying.
    Shared {
        /// A cached body or a listing, shared with the cache and other responses.
        data: Rc<[u8]>,
        /// Where in `data` the response's bytes start (a range's first byte).
        start: usize,
        /// How many bytes are sent.
        len: usize,
    },
    /// `len` bytes of `file` from `offset`, by `sendfile`.
    File {
        /// The file, its descriptor kept open by the cache or opened for this response.
        file: Rc<File>,
        /// The first byte to send.
        offset: u64,
        /// Bytes to send.
        len: u64,
    },
}

impl Body {
    /// Its bytes still to send after `out`.
    pub fn bytes(&self) -> u64 {
        match self {
            Body::None => 0,
            Body::Shared { len, .. } => *len as u64,
            Body::File { len, .. } => *len,
        }
    }
}

/// How the connection goes on after a response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Persistence {
    /// HTTP/1.1 persistent: nothing to say.
    Persist,
    /// HTTP/1.0 with `Connection: keep-alive`: must be confirmed.
    KeepAlive10,
    Close,
}

impl Persistence {
    pub(super) fn of(req: &Request<'_>) -> Persistence {
        match (req.keep_alive, req.version) {
            (false, _) => Persistence::Close,
            (true, Version::Http10) => Persistence::KeepAlive10,
            (true, Version::Http11) => Persistence::Persist,
        }
    }

    /// HTTP/1.1's own: `Close` when `close`, else persistent (where no request says which).
    pub(super) fn close_if(close: bool) -> Persistence {
        if close {
            Persistence::Close
        } else {
            Persistence::Persist
        }
    }

    /// The end of the head: this connection line, then the empty line.
    pub(super) fn end(self) -> &'static [u8] {
        match self {
            Persistence::Persist => b"\r\n",
            Persistence::KeepAlive10 => b"Connection: keep-alive\r\n\r\n",
            Persistence::Close => b"Connection: close\r\n\r\n",
        }
    }
}

pub(super) fn start_head(out: &mut Vec<u8>, status_line: &[u8], date: &[u8]) {
    out.extend_from_slice(status_line);
    out.extend_from_slice(b"Date: ");
    out.extend_from_slice(date);
    out.extend_from_slice(b"\r\n");
}

pub(super) fn end_head(out: &mut Vec<u8>, conn: Persistence) {
    out.extend_from_slice(conn.end());
}

/// Decimal digits of `n`, formatted on the stack.
pub(super) fn push_u64(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// A decoded path made safe for a `Location` header: everything but unreserved characters,
/// sub-delims, `:`, `@` and `/` is percent-encoded.
pub(super) fn push_encoded(out: &mut Vec<u8>, path: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    for &b in path {
        if b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/".contains(&b) {
            out.push(b);
        } else {
            out.extend_from_slice(&[b'%', HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        }
    }
}
