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
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::FileExt;
use std::rc::Rc;
use std::time::Instant;

use foldhash::quality::RandomState;
use http3::{Datagram, Field, Fields, RequestId, Server, ServerEvent};

use super::{finish, request_line, Worker};
use crate::access_log::Entry;
use crate::auth::Verdict;
use crate::gateway::asked::Asked;
use crate::gateway::{cgi, Launch, Route};
use crate::protocol::gateway::{body_gate, BodyGate, Exchange};
use crate::protocol::gather::{Budget, Gathered, OverBudget};
use crate::protocol::programs::Programs;
use crate::respond::{Body, Output, Reply};
use crate::response::{Cached, Fields as HeadFields, Head, ReprFields};
use crate::stats::ServerStats;

mod gateway;

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
                        self.pending.remove(&id);
                    }
                }
                ServerEvent::Reset { id, .. } => {
                    self.pending.remove(&id);
                    self.gathering.remove(&id);
                    self.gateway_gone(id, w);
                    stir = true;
                }
                ServerEvent::Closed { conn, .. } => {
                    self.pending.retain(|id, _| id.conn != conn);
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
        st.h3_dropped = c.malformed
            + c.unknown
            + c.refused
            + c.refused_per_address
            + c.bad_tokens
            + c.address_changes_refused;
        st.h3_refused_per_address = c.refused_per_address;
        st.h3_goaways_sent = c.goaways_sent;
        st.h3_handshake_timeouts = c.handshake_timeouts;
        st.h3_header_timeouts = c.header_timeouts;
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

    /// Answers one request: the responder's reply, its access-log line, then its head and as
    /// much of its body as flow control takes; or, for a gateway's target, its exchange kept
    /// and its program asked for (`h3/gateway.rs`). `end`: the request has no body. `early`:
    /// handed out in 0-RTT (`h3_early_data`), possibly a replay (RFC 8470). `gathered`: its
    /// body, gathered whole (or past the limit), or refused for want of room (503), with the
    /// verdict its head had. The verdict when its body is to be gathered first (nothing was
    /// answered, logged or counted).
    fn answer(
        &mut self,
        id: RequestId,
        fields: &Fields,
        end: bool,
        early: bool,
        gathered: Option<(Result<Gathered, OverBudget>, Verdict)>,
        w: &mut Worker,
    ) -> Option<Verdict> {
        let peer = (self.server.peer(id.conn)).unwrap_or((Ipv4Addr::UNSPECIFIED, 0).into());
        let ended = end || gathered.is_some();
        let (gathered, mut checked) = match gathered {
            Some((body, verdict)) => (Some(body), Some(verdict)),
            None => (None, None),
        };
        let over_budget = matches!(gathered, Some(Err(OverBudget)));
        let received = match &gathered {
            Some(Ok(b)) => b.len() as u64,
            _ => 0,
        };
        let mut too_early = false;
        let method = fields.method().unwrap_or_default();
        let path = fields.path().unwrap_or_default();
        let authority = fields.authority();
        // The pseudo-fields stand for the request line and Host; wire reads the others.
        let others = fields.iter().filter(|(name, _)| !name.starts_with(b":"));
        let out = &mut Output::Fields {
            head: &mut self.head,
            body: &mut self.response,
        };
        let date = &w.date;
        let limits = &w.limits;
        let max_body = w.max_body;
        let passed = &mut self.passed_host;
        let answer = wire::Request::with_fields(method, path, authority, others, limits, passed, {
            let (responder, auth, gateways, stats) =
                (&mut w.responder, &mut w.auth, &mut w.gateways, &mut w.stats);
            let too_early = &mut too_early;
            let now = w.now;
            let logged = w.log.is_some();
            move |parsed| match parsed {
                Ok(r) => {
                    let gate = body_gate(r.content_length, ended, received, max_body);
                    // A protected path in 0-RTT is refused before its credentials are looked
                    // at: checking them counts failures against the peer's address, spends the
                    // hash budget and fills the verified cache, for an address the handshake
                    // has not proven (a spoofed 0-RTT could lock its owner out).
                    let guarded = early && auth.as_mut().is_some_and(|a| a.protects(r.target));
                    // A gathered request's was had at its head: not checked (nor counted) again.
                    let verdict = match (checked.take(), auth.as_mut()) {
                        (Some(verdict), _) => verdict,
                        (None, Some(a)) if !guarded => a.check(r, peer.ip(), now, stats),
                        _ => Verdict::Open,
                    };
                    let routed = match (&verdict, gateways.as_mut()) {
                        (Verdict::Denied(_), _) | (_, None) => None,
                        (_, Some(g)) => g.route(r.target, now),
                    };
                    // In 0-RTT only what is safe to run twice is served (RFC 8470 5.2, RFC
                    // 9114 10.9): a safe method on a path no program or upstream answers,
                    // or one whose program or upstream opted in to be told (RFC 8470 5.1:
                    // `Early-Data: 1`; it may answer 425 itself); others are refused.
                    let safe = matches!(r.method, wire::Method::Get | wire::Method::Head)
                        || method == b"OPTIONS";
                    let untold = match &routed {
                        Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                            !gateways.as_ref().is_some_and(|g| g.takes_early_data(route))
                        }
                        _ => false,
                    };
                    *too_early = guarded || early && (!safe || untold);
                    let reply = match routed {
                        _ if *too_early => responder.error_to(r, 425, date, out),
                        None => match &verdict {
                            Verdict::Denied(d) => responder.denied(r, d, date, out),
                            _ => responder.respond(r, date, now, out),
                        },
                        Some(Route::Refused(status)) => responder.error_to(r, status, date, out),
                        // A program is told the body's length up front (RFC 3875 4.1.2): a body
                        // that does not say it is gathered whole first.
                        // No room left to gather its body: the server is short, the request
                        // is not at fault (503, as for a program slot; it may come again).
                        Some(Route::Cgi(_) | Route::Proxy(_)) if over_budget => {
                            responder.busy(r, date, out)
                        }
                        Some(Route::Cgi(_) | Route::Proxy(_)) if gate == BodyGate::Gather => {
                            return Err(Deferred::Gather(verdict))
                        }
                        Some(Route::Cgi(_) | Route::Proxy(_)) if gate == BodyGate::TooLarge => {
                            responder.error_to(r, 413, date, out)
                        }
                        Some(route @ (Route::Cgi(_) | Route::Proxy(_))) => {
                            match &route {
                                Route::Cgi(script) => {
                                    stats.count_gateway_request(script.app.is_some())
                                }
                                _ => stats.proxy_requests += 1,
                            }
                            match gateways.as_mut() {
                                None => responder.error(500, date, false, out),
                                Some(g) if !g.reserve_for(route.proxy_mount()) => {
                                    stats.count_busy(route.proxy_mount());
                                    responder.busy(r, date, out)
                                }
                                Some(g) => {
                                    let host = authority.map(|a| (&b"host"[..], a));
                                    // Possibly a replay: said so by the server alone, a
                                    // client's own `early-data` (any case) dropped.
                                    let mark = early.then_some((&b"early-data"[..], &b"1"[..]));
                                    let dropped = |name: &[u8]| {
                                        name.starts_with(b":")
                                            || early && name.eq_ignore_ascii_case(b"early-data")
                                    };
                                    let asked = Asked {
                                        method,
                                        protocol: b"HTTP/3.0",
                                        content_length: r
                                            .content_length
                                            .or(ended.then_some(received)),
                                        fields: (fields.iter())
                                            .filter(|(name, _)| !dropped(name))
                                            .chain(host)
                                            .chain(mark),
                                    };
                                    let mut launch = g.launch(&route, r, asked, peer);
                                    if let Some(user) = verdict.user() {
                                        cgi::set_user(&mut launch, user);
                                    }
                                    let proxied = matches!(route, Route::Proxy(_));
                                    let x = Exchange::new(
                                        r,
                                        method,
                                        b"HTTP/3.0",
                                        verdict.user(),
                                        limits.max_head_bytes,
                                        proxied,
                                        logged,
                                    );
                                    return Err(Deferred::Program(Box::new(x), Box::new(launch)));
                                }
                            }
                        }
                    };
                    let user = match verdict {
                        Verdict::Allowed(user) => Some(user),
                        _ => None,
                    };
                    let head = r.method == wire::Method::Head;
                    Ok((reply, head, r.referer, r.user_agent, user))
                }
                Err(e) => {
                    let reply = responder.error(e.status(), date, false, out);
                    Ok((reply, false, None, None, None))
                }
            }
        });
        // A request whose body is gathered is counted once, when it is answered.
        if !matches!(answer, Err(Deferred::Gather(_))) {
            w.stats.http3_requests += 1;
            w.stats.h3_early_requests += u64::from(early);
            w.stats.h3_too_early += u64::from(too_early);
        }
        let (reply, head, referer, user_agent, user) = match answer {
            Ok(answer) => answer,
            Err(Deferred::Gather(verdict)) => return Some(verdict),
            Err(Deferred::Program(x, launch)) => {
                // A program answers: its head comes later (`h3/gateway.rs`).
                let body = gathered.and_then(Result::ok).unwrap_or_default();
                (self.exchanges).insert(id, Exchange3::new(*x, peer.ip(), ended, body));
                self.launches.push((id, *launch));
                return None;
            }
        };
        let (status, body_bytes, user) = (reply.status, reply.body_bytes, user.as_deref());
        let line = &mut self.log_line;
        finish(w, status, move || Entry {
            peer: peer.ip(),
            request_line: request_line(line, method, path, b"HTTP/3.0"),
            status,
            body_bytes,
            referer,
            user_agent,
            user,
        });
        // A HEAD answered with an error page has no body either.
        self.reply(id, reply, head || method == b"HEAD", w);
        None
    }

    /// Sends `reply` on `id`: its head, then its body as far as flow control allows; the rest
    /// waits in `pending`.
    fn reply(&mut self, id: RequestId, reply: Reply, no_body: bool, w: &mut Worker) {
        let Reply {
            status, head, body, ..
        } = reply;
        let written = &self.head;
        let mut list: [Field<'_>; MAX_FIELDS] = [(b"", b""); MAX_FIELDS];
        let n = match &head {
            Head::Cached(prebuilt, cached) => {
                cached_fields(&w.date, prebuilt, *cached, written, &mut list)
            }
            Head::Written => {
                let mut n = 0;
                for (field, (name, value)) in list.iter_mut().zip(written.iter()) {
                    *field = (name.lower(), value);
                    n += 1;
                }
                n
            }
        };
        let page = if no_body { &[][..] } else { &self.response[..] };
        let rest = match body {
            _ if no_body => None,
            Body::Shared { data, start, len } if len > 0 => Some(Rest::Shared {
                data,
                at: start,
                end: start + len,
            }),
            Body::File { file, offset, len } if len > 0 => Some(Rest::File {
                file,
                offset,
                end: offset + len,
            }),
            _ => None,
        };
        let end = rest.is_none() && page.is_empty();
        match self.server.send_response(id, status, &list[..n], end) {
            Ok(()) => {}
            Err(http3::Error::Blocked) => {
                // Even the head must wait: kept whole, with the page's bytes.
                let owned = (list[..n].iter())
                    .map(|(name, value)| (name.to_vec(), value.to_vec()))
                    .collect();
                let rest = match rest {
                    None if !page.is_empty() => Some(Rest::Page {
                        bytes: page.into(),
                        at: 0,
                    }),
                    rest => rest,
                };
                let held = Pending {
                    head: Some((status, owned)),
                    rest,
                };
                self.pending.insert(id, held);
                return;
            }
            // The stream cannot take a response (its connection may be gone): reset, so the
            // client is not left waiting for one.
            Err(_) => {
                let _ = self.server.reset(id, H3_INTERNAL_ERROR);
                return;
            }
        }
        if !page.is_empty() {
            let taken = self.server.send_body(id, page, true).unwrap_or(page.len());
            if taken < page.len() {
                let rest = Some(Rest::Page {
                    bytes: page[taken..].into(),
                    at: 0,
                });
                self.pending.insert(id, Pending { head: None, rest });
            }
        } else if rest.is_some() {
            // Kept only if flow control holds some back: a small body goes at once, and its
            // request costs no entry in `pending`.
            let mut held = Pending { head: None, rest };
            if !push(&mut self.server, &mut self.chunk, id, &mut held, w) {
                self.pending.insert(id, held);
            }
        }
    }

    /// Sends what `id`'s held-back response may send now. True when it is all sent (or can
    /// never be: the stream is gone, its file failed): the entry is to be dropped.
    fn push(&mut self, id: RequestId, w: &mut Worker) -> bool {
        let H3 {
            server,
            pending,
            chunk,
            ..
        } = self;
        match pending.get_mut(&id) {
            Some(p) => push(server, chunk, id, p, w),
            None => true,
        }
    }
}

/// Sends what `id`'s held-back response `p` may send now: true when it is all sent (or can
/// never be: the stream is gone, its file failed).
fn push(
    server: &mut Server,
    chunk: &mut [u8],
    id: RequestId,
    p: &mut Pending,
    w: &mut Worker,
) -> bool {
    if let Some((status, fields)) = &p.head {
        let mut list: [Field<'_>; MAX_FIELDS] = [(b"", b""); MAX_FIELDS];
        for (field, (name, value)) in list.iter_mut().zip(fields) {
            *field = (&name[..], &value[..]);
        }
        let n = fields.len().min(MAX_FIELDS);
        match server.send_response(id, *status, &list[..n], p.rest.is_none()) {
            Ok(()) => p.head = None,
            Err(http3::Error::Blocked) => return false,
            Err(_) => {
                let _ = server.reset(id, H3_INTERNAL_ERROR);
                return true;
            }
        }
    }
    let Some(rest) = p.rest.as_mut() else {
        return true;
    };
    match rest {
        Rest::Shared { data, at, end } => send_from(server, id, &data[..*end], at),
        Rest::Page { bytes, at } => send_from(server, id, bytes, at),
        Rest::File { file, offset, end } => loop {
            let room = match server.capacity(id) {
                Ok(0) => return false, // a Writable event says when
                Ok(room) => room,
                Err(_) => return true,
            };
            let want = (room.min(CHUNK) as u64).min(*end - *offset) as usize;
            let read = match file.read_at(&mut chunk[..want], *offset) {
                Ok(n) if n > 0 => n,
                // The file shrank or failed under us: the response cannot be finished.
                _ => {
                    let _ = server.reset(id, H3_INTERNAL_ERROR);
                    return true;
                }
            };
            w.stats.file_reads += 1;
            w.stats.file_read_bytes += read as u64;
            let last = *offset + read as u64 == *end;
            let taken = match server.send_body(id, &chunk[..read], last) {
                Ok(taken) => taken,
                Err(_) => return true,
            };
            *offset += taken as u64;
            if *offset == *end {
                return true;
            }
            if taken < read {
                return false; // the rest is read again when flow control allows
            }
        },
    }
}

/// Sends `bytes[*at..]` as the body's end: true once all of it is taken (or the stream is
/// gone), else false with `at` moved past what was taken.
fn send_from(server: &mut Server, id: RequestId, bytes: &[u8], at: &mut usize) -> bool {
    match server.send_body(id, &bytes[*at..], true) {
        Ok(taken) => {
            *at += taken;
            *at == bytes.len()
        }
        Err(_) => true,
    }
}

/// A cached representation's head as fields: `date`, then its prebuilt fields (lowercase
/// static names, values in `prebuilt`), then those `written` for this response (a 206's range
/// and length). Returns how many were written.
fn cached_fields<'a>(
    date: &'a [u8],
    prebuilt: &'a ReprFields,
    cached: Cached,
    written: &'a HeadFields,
    list: &mut [Field<'a>; MAX_FIELDS],
) -> usize {
    list[0] = (b"date", date);
    let mut n = 1;
    // Room is left for a 206's two fields.
    for field in prebuilt.fields(cached).take(MAX_FIELDS - 3) {
        list[n] = field;
        n += 1;
    }
    for (name, value) in written.iter().take(MAX_FIELDS - n) {
        list[n] = (name.lower(), value);
        n += 1;
    }
    n
}
