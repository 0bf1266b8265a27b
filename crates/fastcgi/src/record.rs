//! FastCGI 1.0 records, sans I/O: the web server's side of the responder role (the
//! application's side is [`crate::responder`]).
//!
//! [`Encoder`] writes a request's records (BEGIN_REQUEST, PARAMS as name-value pairs, STDIN)
//! into one buffer, so that what is known of a request goes out in one write. [`Reader`] takes
//! the application's records as bytes arrive, in any split, and hands out the content of
//! STDOUT and STDERR as slices of the input (nothing is allocated per record), then the
//! END_REQUEST. Whatever breaks the specification is a [`RecordError`]: the connection that
//! carried it is not to be used again.
//!
//! One request at a time per connection (`FCGI_MPXS_CONNS` is not used): every record of the
//! application names [`REQUEST_ID`], but for management records (request id 0), which are
//! skipped.

use std::fmt;

/// `FCGI_VERSION_1`: the version every record's header carries; no other was ever defined.
pub const VERSION_1: u8 = 1;
/// Bytes of a record header: version, type, request id (16 bits), content length (16 bits),
/// padding length, one reserved byte.
pub const HEADER_LEN: usize = 8;
/// The content of one record is at most this long (its length is 16 bits).
pub const MAX_CONTENT: usize = 0xffff;

/// Record type, web server to application: a request starts, with its role and flags.
pub const BEGIN_REQUEST: u8 = 1;
/// Record type, web server to application: the client is gone, end the request.
pub const ABORT_REQUEST: u8 = 2;
/// Record type, application to web server: the request is over, with the application's exit
/// status and the protocol status.
pub const END_REQUEST: u8 = 3;
/// Record type, web server to application: the request's CGI meta-variables as name-value
/// pairs, a stream ended by an empty record.
pub const PARAMS: u8 = 4;
/// Record type, web server to application: the request body, a stream ended by an empty record.
pub const STDIN: u8 = 5;
/// Record type, application to web server: the response (a CGI response, head then body), a
/// stream ended by an empty record.
pub const STDOUT: u8 = 6;
/// Record type, application to web server: its error output, a stream.
pub const STDERR: u8 = 7;
/// Record type, web server to application: the filter role's file data (no responder uses it).
pub const DATA: u8 = 8;
/// Management record type (request id 0), web server to application: the values of
/// variables such as `FCGI_MPXS_CONNS` asked for by name.
pub const GET_VALUES: u8 = 9;
/// Management record type, application to web server: the answer to GET_VALUES.
pub const GET_VALUES_RESULT: u8 = 10;
/// Management record type, application to web server: a management record of a type the
/// application does not know.
pub const UNKNOWN_TYPE: u8 = 11;

/// BEGIN_REQUEST's role: the application answers a request with a response (the only role
/// either side here plays).
pub const ROLE_RESPONDER: u16 = 1;
/// BEGIN_REQUEST flag: the application keeps the connection open after the request.
pub const KEEP_CONN: u8 = 1;

/// The request id this server uses (one request per connection at a time).
pub const REQUEST_ID: u16 = 1;

// END_REQUEST protocol statuses.
/// END_REQUEST protocol status: the request ended normally.
pub const REQUEST_COMPLETE: u8 = 0;
/// END_REQUEST protocol status: refused, a request is already under way on this connection.
pub const CANT_MPX_CONN: u8 = 1;
/// END_REQUEST protocol status: refused, the application is out of a resource (a database
/// connection, say).
pub const OVERLOADED: u8 = 2;
/// END_REQUEST protocol status: refused, the application does not play the role asked for.
pub const UNKNOWN_ROLE: u8 = 3;

/// The content of stream records this server writes: a multiple of 8 (no padding needed) that
/// fits in [`MAX_CONTENT`].
pub(crate) const STREAM_CHUNK: usize = MAX_CONTENT & !7;

fn header(buf: &mut Vec<u8>, kind: u8, len: usize, padding: u8) {
    header_for(buf, kind, REQUEST_ID, len, padding);
}

/// A record header for request `id` (`len` at most [`MAX_CONTENT`]).
pub(crate) fn header_for(buf: &mut Vec<u8>, kind: u8, id: u16, len: usize, padding: u8) {
    let len = len as u16;
    buf.extend_from_slice(&[
        VERSION_1,
        kind,
        (id >> 8) as u8,
        id as u8,
        (len >> 8) as u8,
        len as u8,
        padding,
        0,
    ]);
}

/// Writes a request's records into a buffer.
#[derive(Debug, Default)]
pub struct Encoder {
    /// Where the PARAMS record being filled starts in the buffer (its header's offset).
    params_at: Option<usize>,
}

impl Encoder {
    /// BEGIN_REQUEST in the responder role; `keep_conn` asks the application to keep the
    /// connection for the next request.
    pub fn begin(&mut self, buf: &mut Vec<u8>, keep_conn: bool) {
        header(buf, BEGIN_REQUEST, 8, 0);
        let role = ROLE_RESPONDER.to_be_bytes();
        buf.extend_from_slice(&[role[0], role[1], u8::from(keep_conn), 0, 0, 0, 0, 0]);
        self.params_at = None;
    }

    /// One name-value pair of the PARAMS stream (lengths of 1 byte below 128, else 4 bytes
    /// with the top bit set). Records are cut at [`MAX_CONTENT`]; a pair may span two.
    pub fn param(&mut self, buf: &mut Vec<u8>, name: &[u8], value: &[u8]) {
        let mut lens = [0u8; 8];
        let mut n = 0;
        for len in [name.len(), value.len()] {
            if len < 128 {
                lens[n] = len as u8;
                n += 1;
            } else {
                let len = (len as u32 & 0x7fff_ffff) | 0x8000_0000;
                lens[n..n + 4].copy_from_slice(&len.to_be_bytes());
                n += 4;
            }
        }
        for part in [&lens[..n], name, value] {
            let mut part = part;
            while !part.is_empty() {
                let at = match self.params_at {
                    Some(at) if buf.len() - at - HEADER_LEN < MAX_CONTENT => at,
                    _ => {
                        self.close_params(buf);
                        let at = buf.len();
                        header(buf, PARAMS, 0, 0);
                        self.params_at = Some(at);
                        at
                    }
                };
                let room = MAX_CONTENT - (buf.len() - at - HEADER_LEN);
                let take = room.min(part.len());
                buf.extend_from_slice(&part[..take]);
                part = &part[take..];
            }
        }
    }

    /// Ends the PARAMS stream (its empty record).
    pub fn end_params(&mut self, buf: &mut Vec<u8>) {
        self.close_params(buf);
        header(buf, PARAMS, 0, 0);
    }

    /// Sets the length and padding of the PARAMS record being filled.
    fn close_params(&mut self, buf: &mut Vec<u8>) {
        let Some(at) = self.params_at.take() else {
            return;
        };
        let len = buf.len() - at - HEADER_LEN;
        let padding = (8 - len % 8) % 8;
        buf[at + 4..at + 6].copy_from_slice(&(len as u16).to_be_bytes());
        buf[at + 6] = padding as u8;
        buf.resize(buf.len() + padding, 0);
    }

    /// Request body bytes as STDIN records; returns how many of `data` were taken (all of
    /// it, or at most `max` bytes of it).
    pub fn stdin(&mut self, buf: &mut Vec<u8>, data: &[u8], max: usize) -> usize {
        let data = &data[..data.len().min(max)];
        for chunk in data.chunks(STREAM_CHUNK) {
            let padding = (8 - chunk.len() % 8) % 8;
            header(buf, STDIN, chunk.len(), padding as u8);
            buf.extend_from_slice(chunk);
            buf.resize(buf.len() + padding, 0);
        }
        data.len()
    }

    /// Ends the STDIN stream: the whole body is sent.
    pub fn end_stdin(&mut self, buf: &mut Vec<u8>) {
        header(buf, STDIN, 0, 0);
    }
}

/// What the application said.
#[derive(Debug, PartialEq, Eq)]
pub enum Event<'a> {
    /// Bytes of its response (a CGI response: head, then body).
    Stdout(&'a [u8]),
    /// Bytes of its error stream.
    Stderr(&'a [u8]),
    /// The request is over: the application's exit status and the protocol status.
    End {
        /// The application's status, as a CGI program's exit status (0: success).
        app_status: u32,
        /// How the request ended: [`REQUEST_COMPLETE`] or a refusal ([`CANT_MPX_CONN`],
        /// [`OVERLOADED`], [`UNKNOWN_ROLE`]).
        protocol_status: u8,
    },
}

/// Input that breaks the specification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordError {
    /// A record's version is not 1.
    Version(u8),
    /// A record type an application never sends to a web server.
    UnexpectedType(u8),
    /// A record for another request than this one.
    RequestId(u16),
    /// An END_REQUEST whose content is not 8 bytes.
    EndLength(u16),
    /// A record after END_REQUEST.
    AfterEnd,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Version(v) => write!(f, "a record of version {v} (1 expected)"),
            RecordError::UnexpectedType(t) => write!(f, "a record of type {t} from an application"),
            RecordError::RequestId(id) => write!(f, "a record for request {id}, not {REQUEST_ID}"),
            RecordError::EndLength(n) => write!(f, "an END_REQUEST of {n} bytes (8 expected)"),
            RecordError::AfterEnd => write!(f, "a record after END_REQUEST"),
        }
    }
}

impl std::error::Error for RecordError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Collecting a header (`have` bytes of it so far).
    Header,
    /// In a record's content (`left` bytes of it to come), then its padding.
    Content,
    /// In a record's padding.
    Padding,
    /// END_REQUEST has been read.
    Ended,
}

/// Reads the application's records incrementally: a fixed state of a few bytes, whatever the
/// split of the input.
#[derive(Debug, Clone)]
pub struct Reader {
    state: State,
    head: [u8; HEADER_LEN],
    have: usize,
    kind: u8,
    /// Content bytes of the current record still to come.
    left: usize,
    /// Padding bytes of the current record still to come.
    padding: usize,
    /// A record whose content is skipped (a management record).
    skip: bool,
    /// The END_REQUEST content gathered so far.
    end: [u8; 8],
    end_have: usize,
}

impl Default for Reader {
    fn default() -> Self {
        Reader::new()
    }
}

impl Reader {
    /// A reader before the application's first record.
    pub fn new() -> Reader {
        Reader {
            state: State::Header,
            head: [0; HEADER_LEN],
            have: 0,
            kind: 0,
            left: 0,
            padding: 0,
            skip: false,
            end: [0; 8],
            end_have: 0,
        }
    }

    /// Whether END_REQUEST has been read.
    pub fn ended(&self) -> bool {
        self.state == State::Ended
    }

    /// Whether the reader is between records (the peer may close here without losing any).
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header | State::Ended) && self.have == 0
    }

    /// Reads from `input`: returns how many bytes were used, and what they said, if anything
    /// (`None`: more input is needed, or the bytes used were headers, padding or skipped
    /// content). Stream content is handed out at most `max` bytes at a time (`max` > 0).
    pub fn read<'a>(
        &mut self,
        input: &'a [u8],
        max: usize,
    ) -> Result<(usize, Option<Event<'a>>), RecordError> {
        let mut used = 0;
        loop {
            let rest = &input[used..];
            match self.state {
                State::Ended if rest.is_empty() => return Ok((used, None)),
                State::Ended => return Err(RecordError::AfterEnd),
                // Before the check for input: a record without padding is over at once.
                State::Padding => {
                    let take = self.padding.min(rest.len());
                    used += take;
                    self.padding -= take;
                    if self.padding > 0 {
                        return Ok((used, None));
                    }
                    if let Some(event) = self.finish_record() {
                        return Ok((used, Some(event)));
                    }
                }
                _ if rest.is_empty() => return Ok((used, None)),
                State::Header => {
                    let take = (HEADER_LEN - self.have).min(rest.len());
                    self.head[self.have..self.have + take].copy_from_slice(&rest[..take]);
                    self.have += take;
                    used += take;
                    if self.have == HEADER_LEN {
                        self.have = 0;
                        self.start_record()?;
                    }
                }
                State::Content => {
                    let take = self.left.min(rest.len());
                    let data = &rest[..take];
                    if self.kind == END_REQUEST && !self.skip {
                        self.end[self.end_have..self.end_have + take].copy_from_slice(data);
                        self.end_have += take;
                        used += take;
                        self.left -= take;
                        if self.left == 0 {
                            // Its padding is read before it is reported, so that nothing of
                            // the request is left on the connection.
                            self.state = State::Padding;
                        }
                        continue;
                    }
                    if self.skip {
                        used += take;
                        self.left -= take;
                        if self.left == 0 {
                            self.state = State::Padding;
                        }
                        continue;
                    }
                    let take = take.min(max.max(1));
                    let data = &rest[..take];
                    used += take;
                    self.left -= take;
                    if self.left == 0 {
                        self.state = State::Padding;
                    }
                    let event = if self.kind == STDOUT {
                        Event::Stdout(data)
                    } else {
                        Event::Stderr(data)
                    };
                    return Ok((used, Some(event)));
                }
            }
        }
    }

    /// The header is in `self.head`: checks it and enters its content.
    fn start_record(&mut self) -> Result<(), RecordError> {
        let h = self.head;
        if h[0] != VERSION_1 {
            return Err(RecordError::Version(h[0]));
        }
        let kind = h[1];
        let id = u16::from_be_bytes([h[2], h[3]]);
        let len = u16::from_be_bytes([h[4], h[5]]);
        self.kind = kind;
        self.left = usize::from(len);
        self.padding = usize::from(h[6]);
        self.skip = false;
        match kind {
            // Management records (id 0) answer queries this server does not make: skipped.
            GET_VALUES_RESULT | UNKNOWN_TYPE if id == 0 => self.skip = true,
            STDOUT | STDERR | END_REQUEST if id != REQUEST_ID => {
                return Err(RecordError::RequestId(id))
            }
            STDOUT | STDERR => {}
            END_REQUEST if len != 8 => return Err(RecordError::EndLength(len)),
            END_REQUEST => self.end_have = 0,
            _ => return Err(RecordError::UnexpectedType(kind)),
        }
        self.state = State::Content;
        if self.left == 0 {
            self.state = State::Padding;
        }
        Ok(())
    }

    /// The record's content and padding are read.
    fn finish_record(&mut self) -> Option<Event<'static>> {
        self.state = State::Header;
        if self.kind == END_REQUEST && !self.skip {
            self.state = State::Ended;
            let e = self.end;
            return Some(Event::End {
                app_status: u32::from_be_bytes([e[0], e[1], e[2], e[3]]),
                protocol_status: e[4],
            });
        }
        None
    }
}

#[cfg(test)]
#[path = "record_tests.rs"]
mod tests;
