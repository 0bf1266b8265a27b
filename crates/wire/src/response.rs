//! Client side: parsing a response head and following its body framing.
//!
//! The load generator must know exactly where each response ends, without reading past it:
//! with pipelining the next response's bytes are already in the same buffer, and a client that
//! mis-frames one response mis-counts every one after it. So `parse_response_head` decides the
//! framing once (RFC 9112 6.3) and `BodyDecoder` follows it incrementally over whatever slices the
//! socket delivers, stopping at the last byte of the body. Neither allocates.

use std::mem::MaybeUninit;

use crate::text::{eq_token, for_each_element, parse_content_length};

/// A response head that has not completed within this many bytes is refused.
pub const MAX_RESPONSE_HEAD: usize = 64 * 1024;
/// The header slots on the stack; more header fields than this is `TooLarge`.
pub const MAX_RESPONSE_HEADERS: usize = 128;

/// How the body of a response is delimited (RFC 9112 6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Framing {
    /// Exactly this many bytes.
    Length(u64),
    /// Chunked transfer coding.
    Chunked,
    /// Until the server closes the connection.
    Close,
    /// No body at all: response to HEAD, 1xx, 204, 304.
    Empty,
}

/// A parsed response head. Owns nothing: the header bytes stay in the caller's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseHead {
    /// The status code as sent, 100 to 999 (below 100 is refused).
    pub status: u16,
    /// The minor version: 0 for HTTP/1.0, 1 for HTTP/1.1.
    pub version: u8,
    /// Bytes of the buffer taken by the head; the body starts here.
    pub head_len: usize,
    /// Where the body ends, decided once from the status, the request's method and the fields.
    pub framing: Framing,
    /// Whether the connection can carry another request after this response.
    pub keep_alive: bool,
}

/// Why a response's head or body could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ResponseError {
    /// The status line is not `HTTP/1.x ddd reason`, or its status is below 100.
    #[error("malformed status line")]
    MalformedStatusLine,
    /// The status line is sound but a header field breaks the syntax.
    #[error("malformed response headers")]
    MalformedHeaders,
    /// A Content-Length that is not a number, or several that disagree.
    #[error("invalid Content-Length in response")]
    BadContentLength,
    /// A chunk size, its line ending or a trailer breaks the chunked coding, or a chunk line or
    /// the trailers exceed their bound (4 KiB a chunk line, 64 KiB of trailers).
    #[error("malformed chunked body")]
    BadChunk,
    /// The head exceeds [`MAX_RESPONSE_HEAD`] bytes or [`MAX_RESPONSE_HEADERS`] fields.
    #[error("response head too large")]
    TooLarge,
    /// The connection closed before the end of a length-delimited or chunked body.
    #[error("connection closed before the end of the body")]
    ShortBody,
}

/// Parses one response head from the start of `buf`. `Ok(None)` when incomplete.
/// `head_request`: the request was HEAD, so no body whatever the headers say.
pub fn parse_response_head(
    buf: &[u8],
    head_request: bool,
) -> Result<Option<ResponseHead>, ResponseError> {
    let mut slots = [const { MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_RESPONSE_HEADERS];
    let mut resp = httparse::Response::new(&mut []);
    let config = httparse::ParserConfig::default();
    let head_len = match config.parse_response_with_uninit_headers(&mut resp, buf, &mut slots) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() >= MAX_RESPONSE_HEAD => {
            return Err(ResponseError::TooLarge)
        }
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => return Err(ResponseError::TooLarge),
        Err(httparse::Error::Status | httparse::Error::Version) => {
            return Err(ResponseError::MalformedStatusLine)
        }
        Err(_) if status_line_ok(buf) => return Err(ResponseError::MalformedHeaders),
        Err(_) => return Err(ResponseError::MalformedStatusLine),
    };
    if head_len > MAX_RESPONSE_HEAD {
        return Err(ResponseError::TooLarge);
    }
    let (Some(version), Some(status)) = (resp.version, resp.code) else {
        return Err(ResponseError::MalformedStatusLine);
    };
    // httparse takes any three digits. Below 100 there is no class to count the response in
    // (RFC 9110 15: valid codes are 100 to 599; 600 to 999 are still read, as their class's x00),
    // and 0 would pass for "no status yet" in a client's bookkeeping.
    if status < 100 {
        return Err(ResponseError::MalformedStatusLine);
    }
    let mut content_length: Option<u64> = None;
    let mut transfer_encoding = false;
    let mut chunked_last = false;
    let (mut conn_close, mut conn_keep_alive) = (false, false);
    for h in resp.headers.iter() {
        let name = h.name.as_bytes();
        match name.len() {
            10 if name.eq_ignore_ascii_case(b"connection") => for_each_element(h.value, |t| {
                conn_close |= eq_token(t, b"close");
                conn_keep_alive |= eq_token(t, b"keep-alive");
            }),
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                let n = parse_content_length(h.value).ok_or(ResponseError::BadContentLength)?;
                if content_length.is_some_and(|prev| prev != n) {
                    return Err(ResponseError::BadContentLength);
                }
                content_length = Some(n);
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => {
                transfer_encoding = true;
                // Across several TE fields the list continues; only the final coding matters.
                for_each_element(h.value, |t| chunked_last = eq_token(t, b"chunked"));
            }
            _ => {}
        }
    }
    let framing = if head_request || (100..200).contains(&status) || status == 204 || status == 304
    {
        Framing::Empty
    } else if transfer_encoding {
        // RFC 9112 6.1/6.3: TE overrides Content-Length; TE in HTTP/1.0, or not ending in
        // chunked, leaves only the connection close to delimit the body.
        if chunked_last && version == 1 {
            Framing::Chunked
        } else {
            Framing::Close
        }
    } else if let Some(n) = content_length {
        Framing::Length(n)
    } else {
        Framing::Close
    };
    let keep_alive = framing != Framing::Close
        && !conn_close
        && (conn_keep_alive || version == 1)
        // A response carrying both framings may be a smuggling attempt: use it, then close.
        && !(transfer_encoding && content_length.is_some());
    Ok(Some(ResponseHead {
        status,
        version,
        head_len,
        framing,
        keep_alive,
    }))
}

/// Whether the first line (after any leading empty lines) is a well-formed, complete status line;
/// only consulted on the error path, to blame the status line or the headers.
fn status_line_ok(mut buf: &[u8]) -> bool {
    // Only whole empty lines are skipped, as httparse skips them: a CR not followed by LF before
    // the status line is an error there, however much of the rest has arrived.
    while let Some(rest) = buf
        .strip_prefix(b"\r\n")
        .or_else(|| buf.strip_prefix(b"\n"))
    {
        buf = rest;
    }
    let Some(lf) = buf.iter().position(|&b| b == b'\n') else {
        return false;
    };
    let line = buf[..lf].strip_suffix(b"\r").unwrap_or(&buf[..lf]);
    match line {
        [b'H', b'T', b'T', b'P', b'/', b'1', b'.', b'0' | b'1', b' ', d1, d2, d3, rest @ ..]
            if [d1, d2, d3].iter().all(|d| d.is_ascii_digit()) && *d1 != b'0' =>
        {
            match rest {
                [] => true,
                [b' ', reason @ ..] => reason
                    .iter()
                    .all(|&b| b == b'\t' || b == b' ' || (b'!'..=b'~').contains(&b) || b >= 0x80),
                _ => false,
            }
        }
        _ => false,
    }
}

/// How far one `feed` got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyProgress {
    /// Input bytes consumed (payload and chunk framing).
    pub consumed: usize,
    /// Of those, payload bytes.
    pub body: usize,
    /// The body is complete; bytes after `consumed` belong to the next response.
    pub done: bool,
}

/// Chunk extensions and trailer fields longer than this are refused: a peer must not be able to
/// keep the client reading framing forever.
const MAX_CHUNK_LINE: u32 = 4096;
const MAX_TRAILERS: u32 = 64 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Length-delimited, this many bytes left.
    Length(u64),
    /// Close-delimited: everything is body until EOF.
    Close,
    /// Hex digits of a chunk size; `digits` seen so far.
    Size {
        size: u64,
        digits: u8,
    },
    /// After the size: optional whitespace, then `;` extensions, up to the CR.
    SizeExt {
        size: u64,
        in_ext: bool,
        len: u32,
    },
    /// CR of the size line seen, LF expected.
    SizeLf {
        size: u64,
    },
    /// Chunk payload, this many bytes left.
    Data(u64),
    DataCr,
    DataLf,
    /// At the start of a trailer line (or of the final empty line); `total` trailer bytes so far.
    TrailerStart {
        total: u32,
    },
    TrailerLine {
        total: u32,
    },
    TrailerLf {
        total: u32,
    },
    FinalLf,
    Done,
}

/// Follows one body; no allocation, works on whatever slice arrives.
#[derive(Debug, Clone)]
pub struct BodyDecoder {
    state: State,
}

impl BodyDecoder {
    /// A decoder at the start of a body framed as `framing` (already done for an empty one).
    pub fn new(framing: Framing) -> Self {
        let state = match framing {
            Framing::Length(0) | Framing::Empty => State::Done,
            Framing::Length(n) => State::Length(n),
            Framing::Chunked => State::Size { size: 0, digits: 0 },
            Framing::Close => State::Close,
        };
        BodyDecoder { state }
    }

    /// Whether the whole body has been seen.
    pub fn is_done(&self) -> bool {
        self.state == State::Done
    }

    /// Consumes from `input`; returns how many input bytes were consumed, how many of them were
    /// body (payload, not chunk framing), and whether the body is complete. Bytes after the end
    /// of the body are not consumed (they belong to the next, pipelined, response).
    pub fn feed(&mut self, input: &[u8]) -> Result<BodyProgress, ResponseError> {
        self.feed_payload(input, |_| {})
    }

    /// [`BodyDecoder::feed`], handing each run of payload bytes (the body decoded, without
    /// chunk framing or trailers) to `payload` as it is seen.
    pub fn feed_payload(
        &mut self,
        input: &[u8],
        mut payload: impl FnMut(&[u8]),
    ) -> Result<BodyProgress, ResponseError> {
        let mut pos = 0;
        let mut body = 0;
        while pos < input.len() {
            let rest = &input[pos..];
            match self.state {
                State::Done => break,
                State::Close => {
                    payload(rest);
                    pos += rest.len();
                    body += rest.len();
                }
                State::Length(left) | State::Data(left) => {
                    let take = left.min(rest.len() as u64);
                    let left = left - take;
                    payload(&rest[..take as usize]);
                    pos += take as usize;
                    body += take as usize;
                    self.state = match (self.state, left) {
                        (State::Length(_), 0) => State::Done,
                        (State::Length(_), _) => State::Length(left),
                        (_, 0) => State::DataCr,
                        _ => State::Data(left),
                    };
                }
                _ => {
                    self.state = self.step(rest[0])?;
                    pos += 1;
                }
            }
        }
        Ok(BodyProgress {
            consumed: pos,
            body,
            done: self.state == State::Done,
        })
    }

    /// One byte of chunk framing.
    fn step(&self, b: u8) -> Result<State, ResponseError> {
        let bad = Err(ResponseError::BadChunk);
        Ok(match self.state {
            State::Size { size, digits } => match hex_value(b) {
                Some(v) => {
                    // 16 hex digits fill a u64; a 17th significant one overflows.
                    if size >> 60 != 0 {
                        return bad;
                    }
                    State::Size {
                        size: size << 4 | u64::from(v),
                        digits: digits.saturating_add(1),
                    }
                }
                None if digits == 0 => return bad,
                None => return self_ext(size, false, 0, b),
            },
            State::SizeExt { size, in_ext, len } => return self_ext(size, in_ext, len, b),
            State::SizeLf { size } => match (b, size) {
                (b'\n', 0) => State::TrailerStart { total: 0 },
                (b'\n', n) => State::Data(n),
                _ => return bad,
            },
            State::DataCr if b == b'\r' => State::DataLf,
            State::DataLf if b == b'\n' => State::Size { size: 0, digits: 0 },
            State::TrailerStart { .. } if b == b'\r' => State::FinalLf,
            State::TrailerStart { total } | State::TrailerLine { total } => {
                let control = (b < b' ' && b != b'\t') || b == 0x7f;
                if total >= MAX_TRAILERS || (control && b != b'\r') {
                    return bad;
                }
                if b == b'\r' {
                    State::TrailerLf { total: total + 1 }
                } else {
                    State::TrailerLine { total: total + 1 }
                }
            }
            State::TrailerLf { total } if b == b'\n' => State::TrailerStart { total: total + 1 },
            State::FinalLf if b == b'\n' => State::Done,
            _ => return bad,
        })
    }

    /// The connection closed: Ok for a close-delimited body (or one already complete),
    /// `Err(ShortBody)` otherwise.
    pub fn eof(&self) -> Result<(), ResponseError> {
        match self.state {
            State::Close | State::Done => Ok(()),
            _ => Err(ResponseError::ShortBody),
        }
    }
}

/// After the chunk-size digits: `*( BWS ";" ext )` then CR (RFC 9112 7.1.1). Extension bytes
/// are skipped, not interpreted; control characters other than HTAB are refused.
fn self_ext(size: u64, in_ext: bool, len: u32, b: u8) -> Result<State, ResponseError> {
    match b {
        b'\r' => Ok(State::SizeLf { size }),
        _ if len >= MAX_CHUNK_LINE => Err(ResponseError::BadChunk),
        b';' => Ok(State::SizeExt {
            size,
            in_ext: true,
            len: len + 1,
        }),
        b' ' | b'\t' => Ok(State::SizeExt {
            size,
            in_ext,
            len: len + 1,
        }),
        0x21..=0x7e | 0x80..=0xff if in_ext => Ok(State::SizeExt {
            size,
            in_ext,
            len: len + 1,
        }),
        _ => Err(ResponseError::BadChunk),
    }
}

#[inline]
fn hex_value(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
