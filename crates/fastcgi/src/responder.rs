//! The application's side of the responder role, sans I/O: [`Decoder`] takes the web server's
//! records (BEGIN_REQUEST, the PARAMS stream, the STDIN stream, ABORT_REQUEST, management
//! records) from the front of a buffer, whole records at a time, and hands out a complete
//! [`Request`] once its PARAMS and STDIN streams have ended; [`respond`] writes an answer as
//! STDOUT records and the END_REQUEST.
//!
//! One request at a time per connection: a BEGIN_REQUEST while another request is under way is
//! answered `CANT_MPX_CONN` (and `FCGI_MPXS_CONNS` is `0` to a GET_VALUES), as php-fpm does.
//! Records of a request id not under way are ignored, as the specification says.

use crate::record::{
    header_for, ABORT_REQUEST, BEGIN_REQUEST, CANT_MPX_CONN, END_REQUEST, GET_VALUES,
    GET_VALUES_RESULT, HEADER_LEN, KEEP_CONN, MAX_CONTENT, PARAMS, REQUEST_COMPLETE,
    ROLE_RESPONDER, STDIN, STDOUT, STREAM_CHUNK, UNKNOWN_ROLE, UNKNOWN_TYPE, VERSION_1,
};
use std::fmt;

/// The longest record: its header, content and padding. A buffer of this size always holds
/// the next whole record.
pub const MAX_RECORD: usize = HEADER_LEN + MAX_CONTENT + 255;

/// A request's PARAMS stream and body are each held whole, up to this many bytes.
pub const MAX_STREAM: usize = 1 << 20;

/// A request whose PARAMS and STDIN have ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    /// The request id the web server chose (never 0, which names management records); every
    /// record of the answer carries it.
    pub id: u16,
    /// The web server keeps the connection for its next request.
    pub keep_conn: bool,
    /// The PARAMS stream, name-value pairs as they came.
    params: Vec<u8>,
    /// The request body.
    pub stdin: Vec<u8>,
}

impl Request {
    /// The name-value pairs of the PARAMS stream; a pair cut short ends them.
    pub fn params(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let mut rest = &self.params[..];
        std::iter::from_fn(move || {
            let name_len = length(&mut rest)?;
            let value_len = length(&mut rest)?;
            if rest.len() < name_len + value_len {
                return None;
            }
            let (name, tail) = rest.split_at(name_len);
            let (value, tail) = tail.split_at(value_len);
            rest = tail;
            Some((name, value))
        })
    }

    /// The value of the meta-variable `name`, if the server sent it.
    pub fn param(&self, name: &str) -> Option<&[u8]> {
        self.params()
            .find(|(n, _)| *n == name.as_bytes())
            .map(|(_, v)| v)
    }
}

/// A name-value pair's length: 1 byte below 128, else 4 bytes with the top bit set.
fn length(rest: &mut &[u8]) -> Option<usize> {
    let first = *rest.first()?;
    if first < 0x80 {
        *rest = &rest[1..];
        return Some(usize::from(first));
    }
    let bytes: [u8; 4] = rest.get(..4)?.try_into().ok()?;
    *rest = &rest[4..];
    Some((u32::from_be_bytes(bytes) & 0x7fff_ffff) as usize)
}

/// What whole records said.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// A request to answer (with [`respond`]).
    Request(Request),
    /// Records to write back now: a management answer, or the end of a request refused or
    /// aborted.
    Reply(Vec<u8>),
}

/// Input that breaks the specification: the connection is not to be used again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestError {
    /// A record's version is not 1.
    Version(u8),
    /// A record type a web server never sends to an application.
    UnexpectedType(u8),
    /// A BEGIN_REQUEST whose content is not 8 bytes.
    BeginLength(u16),
    /// A PARAMS stream or body longer than [`MAX_STREAM`].
    TooLarge,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestError::Version(v) => write!(f, "a record of version {v} (1 expected)"),
            RequestError::UnexpectedType(t) => write!(f, "a record of type {t} from a server"),
            RequestError::BeginLength(n) => write!(f, "a BEGIN_REQUEST of {n} bytes (8 expected)"),
            RequestError::TooLarge => write!(f, "a request stream over {MAX_STREAM} bytes"),
        }
    }
}

impl std::error::Error for RequestError {}

/// The request under way on a connection.
#[derive(Debug)]
struct Pending {
    request: Request,
    params_ended: bool,
    stdin_ended: bool,
}

/// Reads the web server's records, one request at a time.
#[derive(Debug, Default)]
pub struct Decoder {
    pending: Option<Pending>,
}

impl Decoder {
    /// A decoder with no request under way.
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Takes whole records from the front of `input`: returns how many bytes were used and
    /// what they completed (`None`: the bytes used said nothing to act on yet, or `input`
    /// holds no whole record; with nothing used, read more).
    pub fn read(&mut self, input: &[u8]) -> Result<(usize, Option<Step>), RequestError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            if rest.len() < HEADER_LEN {
                return Ok((used, None));
            }
            let h = &rest[..HEADER_LEN];
            if h[0] != VERSION_1 {
                return Err(RequestError::Version(h[0]));
            }
            let (kind, id) = (h[1], u16::from_be_bytes([h[2], h[3]]));
            let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
            let whole = HEADER_LEN + len + usize::from(h[6]);
            if rest.len() < whole {
                return Ok((used, None));
            }
            let content = &rest[HEADER_LEN..HEADER_LEN + len];
            used += whole;
            if let Some(step) = self.record(kind, id, content)? {
                return Ok((used, Some(step)));
            }
        }
    }

    fn record(&mut self, kind: u8, id: u16, content: &[u8]) -> Result<Option<Step>, RequestError> {
        if id == 0 {
            return Ok(Some(Step::Reply(management(kind, content))));
        }
        let current = self.pending.as_ref().map(|p| p.request.id);
        match kind {
            BEGIN_REQUEST => {
                if content.len() != 8 {
                    return Err(RequestError::BeginLength(content.len() as u16));
                }
                let role = u16::from_be_bytes([content[0], content[1]]);
                let refusal = if current.is_some_and(|c| c != id) {
                    Some(CANT_MPX_CONN)
                } else if role != ROLE_RESPONDER {
                    Some(UNKNOWN_ROLE)
                } else {
                    None
                };
                if let Some(status) = refusal {
                    let mut out = Vec::with_capacity(HEADER_LEN * 2);
                    end_request(&mut out, id, 0, status);
                    return Ok(Some(Step::Reply(out)));
                }
                self.pending = Some(Pending {
                    request: Request {
                        id,
                        keep_conn: content[2] & KEEP_CONN != 0,
                        params: Vec::new(),
                        stdin: Vec::new(),
                    },
                    params_ended: false,
                    stdin_ended: false,
                });
                Ok(None)
            }
            ABORT_REQUEST if current == Some(id) => {
                self.pending = None;
                let mut out = Vec::with_capacity(HEADER_LEN * 2);
                end_request(&mut out, id, 1, REQUEST_COMPLETE);
                Ok(Some(Step::Reply(out)))
            }
            PARAMS | STDIN if current == Some(id) => {
                let Some(p) = self.pending.as_mut() else {
                    return Ok(None);
                };
                let (stream, ended) = if kind == PARAMS {
                    (&mut p.request.params, &mut p.params_ended)
                } else {
                    (&mut p.request.stdin, &mut p.stdin_ended)
                };
                if content.is_empty() {
                    *ended = true;
                } else if stream.len() + content.len() > MAX_STREAM {
                    return Err(RequestError::TooLarge);
                } else {
                    stream.extend_from_slice(content);
                }
                if p.params_ended && p.stdin_ended {
                    let done = self.pending.take().map(|p| p.request);
                    return Ok(done.map(Step::Request));
                }
                Ok(None)
            }
            // A record of a request not under way (one aborted, say) is ignored.
            ABORT_REQUEST | PARAMS | STDIN | crate::record::DATA => Ok(None),
            _ => Err(RequestError::UnexpectedType(kind)),
        }
    }
}

/// The answer to a management record: GET_VALUES answered for the variables this side knows
/// (`FCGI_MPXS_CONNS` is `0`), any other type is UNKNOWN_TYPE.
fn management(kind: u8, content: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if kind == GET_VALUES {
        let asked = Request {
            id: 0,
            keep_conn: false,
            params: content.to_vec(),
            stdin: Vec::new(),
        };
        let mut pairs = Vec::new();
        if asked.params().any(|(name, _)| name == b"FCGI_MPXS_CONNS") {
            pairs.extend_from_slice(b"\x0f\x01FCGI_MPXS_CONNS0");
        }
        let padding = (8 - pairs.len() % 8) % 8;
        header_for(&mut out, GET_VALUES_RESULT, 0, pairs.len(), padding as u8);
        out.extend_from_slice(&pairs);
        out.resize(out.len() + padding, 0);
    } else {
        header_for(&mut out, UNKNOWN_TYPE, 0, 8, 0);
        out.extend_from_slice(&[kind, 0, 0, 0, 0, 0, 0, 0]);
    }
    out
}

/// Writes `answer` (a CGI response: head, then body) as STDOUT records of request `id`, the
/// stream's end, and END_REQUEST complete with `app_status`.
pub fn respond(out: &mut Vec<u8>, id: u16, answer: &[u8], app_status: u32) {
    out.reserve(answer.len() + HEADER_LEN * 3 + 8);
    for chunk in answer.chunks(STREAM_CHUNK) {
        let padding = (8 - chunk.len() % 8) % 8;
        header_for(out, STDOUT, id, chunk.len(), padding as u8);
        out.extend_from_slice(chunk);
        out.resize(out.len() + padding, 0);
    }
    header_for(out, STDOUT, id, 0, 0);
    end_request(out, id, app_status, REQUEST_COMPLETE);
}

fn end_request(out: &mut Vec<u8>, id: u16, app_status: u32, protocol_status: u8) {
    header_for(out, END_REQUEST, id, 8, 0);
    out.extend_from_slice(&app_status.to_be_bytes());
    out.extend_from_slice(&[protocol_status, 0, 0, 0]);
}

#[cfg(test)]
#[path = "responder_tests.rs"]
mod tests;
