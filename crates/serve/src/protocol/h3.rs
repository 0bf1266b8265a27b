//! HTTP/3 on one event-loop thread: every QUIC connection of the thread's UDP socket, on the
//! `http3` crate's [`Server`] (quiche), answered through the same
//! [`Responder`](crate::respond::Responder) as HTTP/1.1 and HTTP/2. No socket here: `udp.rs`
//! hands in each datagram received and sends each datagram this gives; the only system call
//! is a large file's `pread`.
//!
//! A request is its fields as QPACK decoded them (`:method`, `:path`, `:authority` as `Host`,
//! then the others) handed to `wire` (`Request::with_fields`), as HTTP/2's are: one validation
//! and one answer for every protocol. The responder writes to an `Output::Fields`, as for
//! HTTP/2: a cached file's head goes as its prebuilt fields (built once per file version,
//! `crate::response`), any other head (an error page, a redirect, a listing, a 401) as the
//! [`Fields`](crate::response::Fields) it built, nothing read back from text. quiche copies
//! the fields as it encodes them, so nothing here outlives the call.
//!
//! Bodies go with `send_body` as flow control allows: a cached body is shared (`Rc`), a file
//! above `cache_max_file` is read in pieces of at most [`CHUNK`] bytes and no more than the
//! stream may send now (never held whole), a generated page is copied only if flow control
//! cuts it. What is not taken waits in `pending` for the stream's `Writable` event. A client
//! that stops reading holds at most its streams' entries (the stream limit), each a shared
//! body or a file's descriptor and offset, until the send timeout ends its connection (the
//! `http3` crate keeps HTTP/1.1's deadlines: `Config::http3_timeouts`).
//!
//! Programs (CGI, FastCGI) and proxied upstreams answer HTTP/3 requests as they answer
//! HTTP/1.1's and HTTP/2's (`h3/gateway.rs`): the request body streamed to them, their head
//! sent as fields, their body as flow control takes it. A program is told the body's length
//! up front (RFC 3875 4.1.2): a request whose `content-length` is not said has its body
//! gathered whole first (`Gathering`, within `max_body_bytes`: past it 413, the rest refused),
//! as HTTP/2's is, then is answered as one whose length is. Other requests' bodies are read and
//! dropped, as a static server has no use for them. Either is read under the deadline
//! HTTP/1.1's and HTTP/2's have (`body_timeout_ms`, `body_min_rate`), which the `http3` crate
//! keeps per stream: past it the stream is stopped, and a response it still held back is
//! dropped on the `Reset` event that follows.
//!
//! With `h3_early_data` a request handed out while its connection is still in 0-RTT may be a
//! replay: it is served only if running it twice does no harm (GET, HEAD or OPTIONS on a path
//! Basic authentication does not protect, that no program or upstream answers or whose
//! gateway opted in, `cgi_early_data` or a proxy mount's `early_data`: it is sent on marked
//! `Early-Data: 1`, RFC 8470 5.1, and its origin's 425 goes back as it is); any other gets
//! 425 Too Early (RFC 8470 5.2), logged and counted (`h3_early_requests`, `h3_too_early`), and
//! a client may send it again once the handshake is done (RFC 8470 4.2). A protected path is
//! refused before its credentials are checked: the failure limiter would otherwise count
//! failures against an address the handshake has not proven.

use std::collections::HashMap;
use std::fs::File;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Instant;

use foldhash::quality::RandomState;
use http3::{Datagram, Fields, RequestId, Server, ServerEvent, H3_REQUEST_CANCELLED};

use super::Worker;
use crate::auth::Verdict;
use crate::gateway::Launch;
use crate::protocol::gateway::Exchange;
use crate::protocol::gather::{Budget, Gathered};
use crate::protocol::programs::Programs;
use crate::response::Fields as HeadFields;
use crate::stats::ServerStats;

mod answering;
mod gateway;
mod logging;
mod sending;

use gateway::Exchange3;
pub(crate) use gateway::H3_TOKEN;

/// A file body is read at most this much at a time (and no more than flow control allows).
pub(crate) const CHUNK: usize = 64 * 1024;
/// Most fields of a response head (a cached file's are about a dozen).
const MAX_FIELDS: usize = 32;
/// HTTP/3's code for a stream the server could not finish (RFC 9114 8.1).
const H3_INTERNAL_ERROR: u64 = 0x102;
/// HTTP/3's code for a request body not wanted once its response is complete (RFC 9114 4.1.2).
const H3_NO_ERROR: u64 = 0x100;

/// A request a program or an upstream answers whose body's length is not said: kept until the
/// body is whole (`max_body_bytes` at most), then answered as one whose length is.
struct Gathering {
    fields: Fields,
    body: Gathered,
    /// Handed out in 0-RTT: it stays an early request when answered after the handshake.
    early: bool,
    /// Basic authentication's verdict at its head, kept: not checked again at its end.
    verdict: Verdict,
}

/// Why a request is not answered at once.
enum Deferred {
    /// A program answers: its exchange, and the program to start (boxed: the closure's result
    /// stays small).
    Program(Box<Exchange>, Box<Launch>),
    /// Its body is gathered first ([`Gathering`]), under this verdict.
    Gather(Verdict),
}

/// A response's body not yet taken by flow control.
enum Rest {
    /// A cached body, `data[at..end]`.
    Shared {
        data: Rc<[u8]>,
        at: usize,
        end: usize,
    },
    /// A file's bytes from `offset` to `end`, read as they go.
    File {
        file: Rc<File>,
        offset: u64,
        end: u64,
    },
    /// The part of a generated page (an error page, a listing) flow control did not take.
    Page { bytes: Box<[u8]>, at: usize },
}

/// A response head kept whole: its status and its fields' names and values.
type OwnedHead = (u16, Vec<(Vec<u8>, Vec<u8>)>);

/// A response flow control held back.
struct Pending {
    /// Its head, when even that did not fit (owned: rare, and the response buffer is reused).
    head: Option<OwnedHead>,
    rest: Option<Rest>,
    /// Its access-log line, written when it ends (`h3/logging.rs`).
    log: Option<super::held_log::HeldLog>,
}

/// Every HTTP/3 connection of one thread.
pub(crate) struct H3 {
    server: Server,
    /// Keyed by request with foldhash (several times faster than SipHash): a key is a
    /// connection slot the server picked and a stream ID that QUIC makes sequential and
    /// bounds by the stream limit, so a client cannot choose keys that collide. (The
    /// connection-ID map, whose first key per connection a client does choose, keeps
    /// SipHash: foldhash's seed comes from addresses and time, not the kernel's generator.)
    pending: HashMap<RequestId, Pending, RandomState>,
    /// The head the responder writes: reused.
    head: HeadFields,
    /// A generated body the responder writes: reused.
    response: Vec<u8>,
    /// The request line the access log shows: reused.
    log_line: Vec<u8>,
    /// A file body's next piece, and a request body's bytes to drop.
    chunk: Box<[u8]>,
    passed_host: wire::PassedHost,
    /// The requests programs answer, by request (`h3/gateway.rs`).
    exchanges: HashMap<RequestId, Box<Exchange3>, RandomState>,
    /// Programs asked for by the requests of this turn, started after it.
    launches: Vec<(RequestId, Launch)>,
    programs: Programs<RequestId>,
    /// Requests whose bodies are gathered before a program hears of them.
    gathering: HashMap<RequestId, Gathering, RandomState>,
}

impl H3 {
    pub fn new(server: Server) -> H3 {
        H3 {
            server,
            pending: HashMap::default(),
            head: HeadFields::with_capacity(512),
            response: Vec::with_capacity(1024),
            log_line: Vec::with_capacity(256),
            chunk: vec![0; CHUNK].into_boxed_slice(),
            passed_host: wire::PassedHost::default(),
            exchanges: HashMap::default(),
            launches: Vec::new(),
            programs: Programs::new(H3_TOKEN),
            gathering: HashMap::default(),
        }
    }

    /// A datagram received from `from`.
    pub fn recv(&mut self, datagram: &mut [u8], from: SocketAddr) {
        self.server.recv(datagram, from);
    }

    /// The next datagram to send, written into `out`.
    pub fn send(&mut self, out: &mut [u8]) -> Option<Datagram> {
        self.server.send(out)
    }

    /// When [`H3::on_deadline`] is due (QUIC's timers: acknowledgements, loss, idle).
    pub fn deadline(&self) -> Option<Instant> {
        self.server.deadline()
    }

    pub fn on_deadline(&mut self, now: Instant) {
        self.server.on_deadline(now);
    }

    /// QUIC connections open (a handshake under way included).
    pub fn connections(&self) -> usize {
        self.server.connections()
    }

    /// Answers what came in: every request received, every held-back response that may go
    /// on, every ended connection forgotten.
    pub fn process(&mut self, w: &mut Worker) {
        // Whether a request a program answers got something: its programs are moved after.
        let mut stir = false;
        while let Some(event) = self.server.poll() {
            match event {
                ServerEvent::Request { id, fields, end } => {
                    let early = self.server.in_early_data(id.conn);
                    if let Some(verdict) = self.answer(id, &fields, end, early, None, w) {
                        let body = Gathered::default();
                        (self.gathering).insert(
                            id,
                            Gathering {
                                fields,
                                body,
                                early,
                                verdict,
                            },
                        );
                    }
                    stir |= !self.launches.is_empty();
                }
                ServerEvent::Body { id } if self.gathering.contains_key(&id) => {
                    self.gather(id, w);
                    stir |= !self.launches.is_empty();
                }
                ServerEvent::Body { id } if self.body_wanted(id) => stir = true,
                ServerEvent::Body { id } => {
                    // Dropped: nothing here reads a request body a program does not take (or
                    // no longer: it ended while its response still goes).
                    while self.server.recv_body(id, &mut self.chunk).unwrap_or(0) > 0 {}
                }
                ServerEvent::BodyEnd { id } => {
                    if let Some(g) = self.gathering.remove(&id) {
                        let gathered = Some((Ok(g.body), g.verdict));
                        self.answer(id, &g.fields, true, g.early, gathered, w);
                        stir |= !self.launches.is_empty();
                    } else if let Some(e) = self.exchanges.get_mut(&id) {
                        e.body_ended();
                        stir = true;
                    }
                }
                ServerEvent::Writable { id } => {
                    if self.exchanges.contains_key(&id) {
                        self.flush_exchange(id, w);
                        stir = true;
                    }
                    if self.pending.contains_key(&id) && self.push(id, w) {
                        self.pending_done(id, w);
                    }
                }
                ServerEvent::Reset { id, .. } => {
                    // A response not ended is dropped here and never written to again: its
                    // stream is reset too, else a client that reset only its request's side
                    // would leave QUIC the stream (and its credit) for the connection's life.
                    let unfinished = self.pending.contains_key(&id)
                        || self.gathering.contains_key(&id)
                        || self.response_unfinished(id);
                    if unfinished {
                        let _ = self.server.reset(id, H3_REQUEST_CANCELLED);
                    }
                    self.pending_done(id, w);
                    self.gathering.remove(&id);
                    self.gateway_gone(id, w);
                    stir = true;
                }
                ServerEvent::Closed { conn, .. } => {
                    if !self.pending.is_empty() {
                        let gone = (self.pending.keys())
                            .filter(|id| id.conn == conn)
                            .copied()
                            .collect::<Vec<_>>();
                        for id in gone {
                            self.pending_done(id, w);
                        }
                    }
                    if !self.gathering.is_empty() {
                        self.gathering.retain(|id, _| id.conn != conn);
                    }
                    if !self.exchanges.is_empty() {
                        let gone = (self.exchanges.keys())
                            .filter(|id| id.conn == conn)
                            .copied()
                            .collect::<Vec<_>>();
                        for id in gone {
                            self.gateway_gone(id, w);
                        }
                        stir = true;
                    }
                }
            }
        }
        if stir {
            self.drive_programs(w);
        }
    }

    /// `id`'s held-back response is over (sent, reset, or its connection gone): its entry
    /// dropped, its access-log line written with the bytes it sent.
    fn pending_done(&mut self, id: RequestId, w: &mut Worker) {
        if let Some(p) = self.pending.remove(&id) {
            logging::done(p, w);
        }
    }

    /// Shutdown: a GOAWAY on every connection (the requests received are answered, later ones
    /// refused); each closes by itself once its responses are out and acknowledged.
    pub fn shut_down(&mut self) {
        self.server.go_away();
    }

    /// The thread's counters from the server's own (absolute: each thread's are its own).
    pub fn publish(&self, st: &mut ServerStats) {
        let c = self.server.counts();
        st.http3_connections = c.accepted;
        st.h3_resumed = c.resumed;
        // Datagrams dropped unread; a connection refused at its address's limit was read
        // (made to send its close), so it is not one.
        st.h3_dropped =
            c.malformed + c.unknown + c.refused + c.bad_tokens + c.address_changes_refused;
        st.h3_refused_per_address = c.refused_per_address;
        st.h3_malformed_requests = c.malformed_requests;
        st.h3_goaways_sent = c.goaways_sent;
        st.h3_handshake_timeouts = c.handshake_timeouts;
        st.h3_header_timeouts = c.header_timeouts;
        st.h3_header_budget_refused = c.header_budget_refused;
        st.h3_header_bytes_peak = c.header_bytes_peak;
        st.h3_keepalive_closes = c.keep_alive_closes;
        st.h3_send_timeouts = c.send_timeouts;
        st.h3_body_timeouts = c.body_timeouts;
        st.h3_retries = c.retries;
        st.h3_bad_tokens = c.bad_tokens;
        st.h3_stateless_resets = c.stateless_resets;
        st.h3_address_changes = c.address_changes;
        st.h3_address_changes_refused = c.address_changes_refused;
    }

    /// Reads what came of `id`'s gathered body; past `max_body_bytes` the request is answered
    /// (413) and the rest of its body refused, and so is one its connection's or thread's
    /// gathered bodies have no room for (503, `protocol/gather.rs`); else it waits for the
    /// body's end.
    fn gather(&mut self, id: RequestId, w: &mut Worker) {
        let H3 {
            server,
            gathering,
            exchanges,
            chunk,
            ..
        } = self;
        let budget = Budget::for_max_body(w.max_body);
        let outcome = loop {
            let n = server.recv_body(id, chunk).unwrap_or(0);
            if n == 0 {
                return;
            }
            let Some(g) = gathering.get(&id) else {
                return;
            };
            // What this connection's gathered bodies hold, those being gathered and those
            // whose programs have not taken them whole yet: summed only when this one must grow.
            let held = if g.body.grows(n) {
                (gathering.iter())
                    .filter(|(other, _)| other.conn == id.conn)
                    .map(|(_, g)| g.body.held())
                    .sum::<u64>()
                    + (exchanges.iter())
                        .filter(|(other, _)| other.conn == id.conn)
                        .map(|(_, e)| e.gathered_held())
                        .sum::<u64>()
            } else {
                0
            };
            let Some(g) = gathering.get_mut(&id) else {
                return;
            };
            if let Err(e) = g.body.push(&chunk[..n], held, budget) {
                break Err(e);
            }
            if g.body.len() as u64 > w.max_body {
                break Ok(());
            }
        };
        if let Some(g) = self.gathering.remove(&id) {
            let _ = self.server.stop_sending(id, H3_NO_ERROR);
            let body = outcome.map(|()| g.body);
            self.answer(id, &g.fields, true, g.early, Some((body, g.verdict)), w);
        }
    }
}
