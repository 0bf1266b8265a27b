//! One connection's protocol, apart from its I/O: plaintext bytes in, response segments out.
//!
//! A [`Session`] is what the connection's driver (`conn`) and its transport (`plain`, `tls`) see:
//! the input buffer it lends for receiving, the output queue the transport writes (heads and
//! small bodies copied into one buffer, cached bodies shared, file ranges), and what follows the
//! queue (keep the connection, close, close lingering). Which protocol fills that queue is
//! decided once per connection and stays inside this module: HTTP/1.1 (`h1`), or HTTP/2 when the
//! connection asks for it: by ALPN over TLS, by the client preface over cleartext (`preface`).
//! Neither protocol makes a system call, so both are tested with byte slices in and segments
//! out; the drivers move the bytes and do not know which one answered.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use wire::RequestLimits;

use crate::access_log::{AccessLog, Entry};
use crate::gateway::{Gateways, Launch};
use crate::pool::{Bufs, Pool};
use crate::respond::Responder;
use crate::stats::ServerStats;
pub(crate) use gateway::End as GatewayEnd;

/// The timeouts the driver loop applies, by what a connection waits for.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// A request head (and, over TLS, the handshake before it) is due.
    pub header: Duration,
    /// Between requests.
    pub keepalive: Duration,
    /// Output queued that the client is not taking, since the last progress.
    pub send: Duration,
    /// A request body: since its latest bytes, and since its start (extended by the bytes
    /// received at `Worker::body_min_rate`; see `protocol/body.rs`).
    pub body: Duration,
}

/// What answering needs besides the connection: everything one event-loop thread owns, nothing
/// shared with another thread.
pub(crate) struct Worker {
    pub responder: Responder,
    pub log: Option<AccessLog>,
    pub stats: ServerStats,
    pub limits: RequestLimits,
    /// The clocks and the Date value, read once per wakeup: a batch shares them.
    pub now: Instant,
    pub wall: SystemTime,
    pub date: [u8; wire::date::HTTP_DATE_LEN],
    /// Parsing pauses once this many bytes are queued.
    pub max_pipeline: u64,
    /// A request body is read and dropped up to this many bytes; above it the request gets 413
    /// (or, once answered, the connection is closed).
    pub max_body: u64,
    /// Bytes a second a request body must average to earn time past `timeouts.body`.
    pub body_min_rate: u64,
    pub timeouts: Timeouts,
    /// HTTP/2's limits, when it is on: a cleartext connection that opens with the client
    /// preface is served HTTP/2 (over TLS, ALPN decides: `h2` is offered only when it is on).
    pub http2: Option<http2::Config>,
    /// The programs that answer some targets (CGI), when any is configured.
    pub gateways: Option<Box<Gateways>>,
    /// Basic authentication, when a prefix is protected: checked before files or programs.
    pub auth: Option<Box<crate::auth::Guard>>,
    /// HTTP/2 request storage of this thread's idle connections, for those that wake.
    pub h2_spares: h2::Spares,
    /// Access-log records of responses held until they end, kept for the next
    /// (`protocol/held_log.rs`).
    pub held_logs: held_log::Spares,
}

/// The protocol's own timers, read after every drive ([`Session::clock`]).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Clock {
    /// When the protocol next needs the sweep, apart from the connection's phase (HTTP/2: the
    /// earliest stream whose request body is due); at it the sweep calls [`Session::expire`].
    pub due: Option<Instant>,
    /// Output the client paces moved since the last ask: body bytes framed, or a window opened
    /// (control frames written, PING ACKs, are not: a client that pings and opens no window is
    /// not reading).
    pub moved: bool,
}

/// What a connection waits for once it has done all it can ([`Session::wait`]): the driver
/// turns it into its phase and deadline, and knows no protocol's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wait {
    /// A request body is being read, due then (a total that grows with its bytes, and a gap).
    Body(Instant),
    /// Response output the client paces is still to go, though the socket may never block:
    /// the send timeout runs from its last progress (`moved`: some since the last ask).
    Paced { moved: bool },
    /// A request head is due then (the header timeout from its first byte, or from accept).
    Head(Instant),
    /// Every response is out, yet something that answers no request is still expected by then
    /// (HTTP/2: a request body arriving after its response; the sweep then calls
    /// [`Session::expire`]). The connection owes nothing meanwhile: at the connection cap it
    /// may be closed like an idle one.
    Trailing(Instant),
    /// Between requests: the keep-alive timeout.
    Idle,
}

/// What the transport learnt of the protocol before any plaintext arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Negotiated {
    /// Nothing (cleartext): the first bytes decide.
    Nothing,
    /// TLS still handshaking: ALPN is not known yet, so nothing is decided.
    Pending,
    /// TLS with ALPN `h2`.
    H2,
    /// TLS with ALPN `http/1.1`, or none.
    Http1,
}

/// Which protocol a connection speaks.
#[derive(Debug)]
enum Proto {
    /// No plaintext yet, or too little of it to tell.
    Undecided,
    H1(h1::H1),
    /// Boxed: an HTTP/1.1 connection does not carry its size.
    H2(Box<h2::H2>),
}

/// One connection's protocol state.
#[derive(Debug)]
pub(crate) struct Session {
    pub peer: SocketAddr,
    /// Input and output, held only while there is something in them (see [`crate::pool`]).
    pub bufs: Option<Bufs>,
    /// Unsent bytes in the output queue.
    pub queued: u64,
    /// Bytes taken from the output queue since the connection began (written to the socket,
    /// or sealed into TLS records): where a held HTTP/1.1 response's body ends is counted on it.
    /// The transport adds what it takes from `queued`.
    pub written: u64,
    /// Close once the queued output is written (no more requests are parsed).
    pub close_after: bool,
    /// The close must be a lingering one: the client may still be sending (an error response).
    pub linger: bool,
    /// At least one request has been answered.
    pub served: bool,
    /// When the current request head started (accept for the first one); while a body is read,
    /// when its latest bytes arrived into an empty buffer.
    pub head_since: Instant,
    /// Programs to start for the requests just answered, by stream (0 on HTTP/1.1): the
    /// connection starts them.
    pub launches: Vec<(http2::StreamId, Launch)>,
    proto: Proto,
}

impl Session {
    pub fn new(peer: SocketAddr, now: Instant) -> Session {
        Session {
            peer,
            bufs: None,
            queued: 0,
            written: 0,
            close_after: false,
            linger: false,
            served: false,
            head_since: now,
            launches: Vec::new(),
            proto: Proto::Undecided,
        }
    }

    /// After a write: the held HTTP/1.1 responses written whole are logged
    /// (`protocol/held_log.rs`). Nothing to do, and nothing looked at, when none is held.
    #[inline]
    pub fn settle_held(&mut self, w: &mut Worker) {
        if let Proto::H1(h) = &mut self.proto {
            if h.holds_logs() {
                h.settle_held(self.written, w);
            }
        }
    }

    /// The connection is gone (closed, timed out, or the loop ends): every response still
    /// held is logged with the body bytes it sent.
    pub fn log_held(&mut self, w: &mut Worker) {
        match &mut self.proto {
            Proto::H1(h) => h.log_held(self.written, w),
            Proto::H2(h) => h.log_held(w),
            Proto::Undecided => {}
        }
    }

    /// Whether more input is wanted: requests are still parsed and the input buffer has room.
    pub fn wants_input(&self) -> bool {
        !self.close_after && self.bufs.as_ref().is_none_or(|b| b.in_len < b.input.len())
    }

    /// The free part of the input buffer, for the driver to receive into (then [`received`]).
    ///
    /// [`received`]: Session::received
    pub fn input_space(&mut self, pool: &mut Pool) -> &mut [u8] {
        let b = self.bufs.get_or_insert_with(|| pool.take());
        &mut b.input[b.in_len..]
    }

    /// `n` bytes were received into [`Session::input_space`].
    pub fn received(&mut self, n: usize, now: Instant) {
        let Some(b) = self.bufs.as_mut() else { return };
        // The header timeout runs from a head's first byte (from accept for the first request:
        // a connect-and-wait client is a slowloris too).
        // (HTTP/2 empties the buffer every read: it sets `head_since` when a header block
        // begins.)
        if b.in_len == 0 && self.served && !matches!(self.proto, Proto::H2(_)) {
            self.head_since = now;
        }
        b.in_len += n;
    }

    /// Bytes of a request head are waiting (a partial one once everything is answered).
    pub fn has_input(&self) -> bool {
        self.bufs.as_ref().is_some_and(|b| b.in_len > 0)
    }

    /// A request head is under way: bytes of one waiting, or an HTTP/2 header block begun and
    /// not complete (its deadline counts from [`Session::head_since`]).
    fn head_in_progress(&self) -> bool {
        self.has_input() || matches!(&self.proto, Proto::H2(h) if h.head_pending())
    }

    /// The protocol's own clock, asked after every drive whatever the connection waits for:
    /// when it next needs the sweep ([`Clock::due`], then [`Session::expire`]), and whether
    /// output it paces moved since the last ask. `stalled`: no input is taken (the queue at its
    /// bound), and that time is not the client's.
    pub fn clock(&mut self, w: &Worker, stalled: bool) -> Clock {
        match &mut self.proto {
            Proto::H2(h) => Clock {
                // HTTP/2 request bodies are due stream by stream, each by its own clock (as an
                // HTTP/1.1 body's, `protocol/body.rs`); a late one resets its stream only.
                due: h.body_deadline(w, stalled),
                moved: h.take_progress(),
            },
            Proto::H1(_) | Proto::Undecided => Clock::default(),
        }
    }

    /// The protocol's deadline ([`Clock::due`]) has passed: HTTP/2 resets the streams whose
    /// request body is late, and the connection goes on. True if anything was done (drive the
    /// connection to write it).
    pub fn expire(&mut self, w: &mut Worker) -> bool {
        match &mut self.proto {
            Proto::H2(h) => h.expire_bodies(w),
            Proto::H1(_) | Proto::Undecided => false,
        }
    }

    /// What the connection waits for once it has done all it can (programs aside: the driver
    /// asks them first), and by when. `restart`: the output was blocked, and the body's clock
    /// stops while the server does not read. `clock` is this drive's [`Session::clock`].
    pub fn wait(&mut self, w: &Worker, restart: bool, clock: Clock) -> Wait {
        if let Some(due) = self.body_deadline(w, restart) {
            return Wait::Body(due);
        }
        if self.sending_body() {
            return Wait::Paced { moved: clock.moved };
        }
        if self.head_in_progress() || !self.served {
            return Wait::Head(self.head_since + w.timeouts.header);
        }
        match clock.due {
            Some(due) => Wait::Trailing(due),
            None => Wait::Idle,
        }
    }

    /// A request is under way inside the protocol: its body being read, or a response body
    /// the client paces still being sent.
    pub fn busy(&self) -> bool {
        self.reading_body() || self.sending_body()
    }

    /// When the request body being read is due (see `protocol/body.rs`); `None` when no body is.
    fn body_deadline(&mut self, w: &Worker, restart: bool) -> Option<Instant> {
        let drain = match &mut self.proto {
            Proto::H1(h) => h.body()?,
            // HTTP/2 drops bodies per stream, under flow control: see `h2.rs`.
            Proto::H2(_) | Proto::Undecided => return None,
        };
        if restart {
            drain.restart(w.now);
        }
        Some(drain.deadline(w.timeouts.body, w.body_min_rate))
    }

    /// A request's body is still being read (its own deadline applies: [`Wait::Body`]).
    pub fn reading_body(&self) -> bool {
        match &self.proto {
            Proto::H1(h) => h.reading_body(),
            Proto::H2(_) | Proto::Undecided => false,
        }
    }

    /// A response body is still to be sent that the client paces (HTTP/2 flow control): the
    /// socket may never block while it waits.
    fn sending_body(&self) -> bool {
        matches!(&self.proto, Proto::H2(h) if h.sending())
    }

    /// Plain HTTP arrived on a TLS port: the transport received its first `n` bytes into
    /// [`Session::input_space`] without handing them over as plaintext. Queues the 400 that says
    /// so (the transport sends it unencrypted) and closes, lingering: the client may still be
    /// sending.
    pub fn refuse_plain_http(&mut self, n: usize, w: &mut Worker) {
        w.stats.http1_connections += 1;
        self.proto = Proto::H1(h1::H1::default());
        h1::refuse_plain_http(self, n, w);
    }

    /// Gives the buffers back once both are empty: an idle connection holds none.
    pub fn release_idle(&mut self, pool: &mut Pool) {
        if let Some(b) = self.bufs.take_if(|b| b.idle()) {
            pool.give(b);
        }
    }

    /// Answers every complete request in the input buffer while the output queue is under
    /// `max_pipeline`, then compacts the buffer. Returns true if it stopped at that limit with
    /// input left (the driver resumes once the queue is written). `negotiated` is what the
    /// transport learnt (ALPN); it matters only until the protocol is decided.
    pub fn answer(&mut self, w: &mut Worker, pool: &mut Pool, negotiated: Negotiated) -> bool {
        if let Proto::Undecided = self.proto {
            if !self.decide(w, negotiated) {
                return false;
            }
        }
        match self.proto {
            Proto::H1(_) => h1::answer(self, w),
            Proto::H2(_) => h2::answer(self, w, pool),
            Proto::Undecided => false,
        }
    }

    /// Shutdown: HTTP/2 submits a GOAWAY so the client opens no new stream while those under
    /// way finish, and returns true: drive the connection now to write it. HTTP/1.1 closes
    /// after the responses queued.
    pub fn shut_down(&mut self) -> bool {
        match &mut self.proto {
            Proto::H2(h) => {
                h.go_away();
                true
            }
            _ => {
                self.close_after = true;
                false
            }
        }
    }

    /// Bytes of request storage an HTTP/2 connection holds (see `h2::H2::retained`).
    #[cfg(test)]
    fn h2_retained(&self) -> usize {
        match &self.proto {
            Proto::H2(h) => h.retained(),
            _ => 0,
        }
    }

    /// Picks the protocol from ALPN or from the first bytes; false while they cannot tell yet.
    fn decide(&mut self, w: &mut Worker, negotiated: Negotiated) -> bool {
        let h2 = match negotiated {
            Negotiated::H2 => true,
            Negotiated::Http1 => false,
            Negotiated::Pending => return false,
            Negotiated::Nothing => {
                let Some(b) = self.bufs.as_ref().filter(|b| b.in_len > 0) else {
                    return false;
                };
                match preface::sniff(&b.input[..b.in_len]) {
                    preface::Sniff::Wait => return false,
                    preface::Sniff::H2 => w.http2.is_some(),
                    preface::Sniff::Http1 => false,
                }
            }
        };
        if h2 {
            match h2::H2::new(w) {
                Ok(h) => {
                    w.stats.http2_connections += 1;
                    self.proto = Proto::H2(Box::new(h));
                    return true;
                }
                Err(_) => {
                    // nghttp2 out of memory: nothing to answer with.
                    self.close_after = true;
                    return false;
                }
            }
        }
        w.stats.http1_connections += 1;
        self.proto = Proto::H1(h1::H1::default());
        true
    }
}

/// A request is over, whichever protocol carried it and whoever answered it (the responder,
/// a program): its access-log line written when there is a log (`entry` is built only then),
/// its status counted. The one place every request ends.
fn finish<'a>(w: &mut Worker, status: u16, entry: impl FnOnce() -> Entry<'a>) {
    if let Some(log) = w.log.as_mut() {
        log.record(&entry(), w.wall);
    }
    count_status(&mut w.stats, status);
}

/// The request line an HTTP/2 or HTTP/3 request's access-log entry shows, as HTTP/1.1 would
/// have sent it (`GET /a HTTP/2.0`): written into `line` (reused) from its `:method` and
/// `:path`.
fn request_line<'a>(line: &'a mut Vec<u8>, method: &[u8], path: &[u8], version: &[u8]) -> &'a [u8] {
    line.clear();
    line.extend_from_slice(method);
    line.push(b' ');
    line.extend_from_slice(path);
    line.push(b' ');
    line.extend_from_slice(version);
    line
}

fn count_status(st: &mut ServerStats, status: u16) {
    st.requests += 1;
    match status / 100 {
        1 => st.status_1xx += 1,
        2 => st.status_2xx += 1,
        3 => st.status_3xx += 1,
        4 => st.status_4xx += 1,
        _ => st.status_5xx += 1,
    }
}

mod body;
mod gateway;
mod gateway_seam;
mod gather;
mod h1;
mod h2;
mod h3;
mod held_log;
mod preface;
pub(crate) mod programs;

pub(crate) use h3::{H3, H3_TOKEN};

#[cfg(test)]
mod tests;
