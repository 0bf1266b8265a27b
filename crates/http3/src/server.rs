//! The server side: every connection that arrives on one UDP socket. No I/O: the caller's loop
//! hands it each datagram received (`recv`), sends each it gives (`send`), calls `on_deadline`
//! when `deadline` has passed, and answers the requests `poll` hands out.
//!
//! Connections live in a slab, found by the destination connection ID of each packet: the ID
//! this side chose (the thread's index and 14 random bytes) or, until the client has heard from us, the one the
//! client's first Initial carried (a ClientHello may take two datagrams). Ids of requests
//! carry the slot's generation, so an answer to a connection that has ended, whose slot was
//! reused, finds nothing (`Error::Gone`) rather than another client's stream.
//!
//! Work is kept in queues, so no call of a loop's turn walks all the connections: the
//! connections to poll for events (those that received something), the connections that may
//! have packets to send (received, answered, or timed out), and the connections' deadlines in
//! a heap, those acted on recomputed (server/timers.rs; debug builds check the heap's
//! earliest against a walk of every connection at each `deadline`).

use crate::config::{h3_config, Retry, ServerConfig};
use crate::error::{Closed, Error};
use crate::fields::{status_digits, with_status, Field, Fields};
use crate::{cid, token, Datagram, Stats, H3_NO_ERROR, H3_REQUEST_REJECTED};
use quiche::h3;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

mod clocks;
mod timers;

/// QUIC's transport error for a connection the server will not take (RFC 9000 20.1).
const CONNECTION_REFUSED: u64 = 0x2;

/// The most a DATA frame's header takes of a stream's room: its type and its length, each a
/// varint (quiche writes the frame as `send_body` takes the body).
const DATA_FRAME_HEADER: usize = 1 + 8;

/// Packets of no connection (version negotiation, Retry, stateless reset) waiting to be
/// sent, at most.
const MAX_STATELESS: usize = 64;
/// Stateless resets waiting to be sent, at most (a quarter of the queue: a flood of short
/// headers for unknown IDs leaves room for Retries and version negotiation, and costs at most
/// this many MACs between two sends).
const MAX_RESETS: usize = MAX_STATELESS / 4;
/// The shortest stateless reset (RFC 9000 10.3: five bytes before its 16-byte token): one is
/// sent only for a packet longer than this, and is shorter than that packet, so two
/// endpoints cannot reset each other in a loop.
const MIN_RESET: usize = 21;
/// The longest: as long as a short header with a 20-byte ID and a small packet.
const MAX_RESET: usize = 43;

/// A connection of the server, as long as it lives (slot and generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ConnId {
    slot: u32,
    generation: u32,
}

/// One request: its connection and its stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestId {
    /// The connection it arrived on.
    pub conn: ConnId,
    /// Its QUIC stream ID (a client-initiated bidirectional stream: 0, 4, 8...).
    pub stream: u64,
}

/// What happened on the server, one event at a time from [`Server::poll`].
#[derive(Debug)]
pub enum ServerEvent {
    /// A request's head. `end`: it has no body; else `Body` events follow, then `BodyEnd`.
    Request {
        /// The request, for the answer and the body's events.
        id: RequestId,
        /// Its header block as received, pseudo-header fields (`:method`, `:path`...) included.
        fields: Fields,
        /// The stream ended with the head: no body.
        end: bool,
    },
    /// Request body bytes are waiting: read them with [`Server::recv_body`] until it returns 0.
    Body {
        /// The request whose body it is.
        id: RequestId,
    },
    /// The request's body is complete.
    BodyEnd {
        /// The request whose body ended.
        id: RequestId,
    },
    /// A response that flow control held back may go on (`send_response` or `send_body`).
    Writable {
        /// The request whose response may go on.
        id: RequestId,
    },
    /// The request's stream was reset (an HTTP/3 error code): by the client, or by this
    /// side when the request's body missed its deadline while its response was still held
    /// back by flow control ([`crate::Timeouts::body`]). What was kept for it can go.
    Reset {
        /// The request reset.
        id: RequestId,
        /// The HTTP/3 error code ([`crate::h3_code_name`]).
        code: u64,
    },
    /// A connection ended; its requests are gone.
    Closed {
        /// The connection, whose ID is stale from now on.
        conn: ConnId,
        /// Why it ended.
        why: Closed,
        /// Its packets and bytes, final.
        stats: Stats,
    },
}

/// Counts of what the server met (64-bit, since it started).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerCounts {
    /// Connections accepted: a client's Initial that started one.
    pub accepted: u64,
    /// Datagrams for no connection that were not an Initial (late packets of an ended
    /// connection, or garbage).
    pub unknown: u64,
    /// Datagrams too short or malformed to read a QUIC header from.
    pub malformed: u64,
    /// First datagrams refused: under 1,200 bytes, past the connection limit, after
    /// `go_away`, or a version negotiation past the queue's bound.
    pub refused: u64,
    /// Version negotiation packets sent.
    pub version_negotiation: u64,
    /// GOAWAY frames sent ([`Server::go_away`]), and requests refused after them.
    pub goaways_sent: u64,
    /// Requests refused (H3_REQUEST_REJECTED) because they came after this side's GOAWAY.
    pub refused_after_goaway: u64,
    /// Connections refused because their address had `max_per_address` connections: an
    /// Initial bringing a good Retry token, or a handshake done (then closed with
    /// CONNECTION_REFUSED). (An Initial without a token at the limit gets a Retry.)
    pub refused_per_address: u64,
    /// Handshakes not done within the header timeout (the connection closed).
    pub handshake_timeouts: u64,
    /// Request streams whose header block was not whole within the header timeout (reset).
    pub header_timeouts: u64,
    /// Connections closed (GOAWAY, then H3_NO_ERROR) after the keep-alive timeout with no
    /// request stream open.
    pub keep_alive_closes: u64,
    /// Connections closed because their responses made no progress for the send timeout.
    pub send_timeouts: u64,
    /// Request bodies no longer read because they missed their deadline
    /// ([`crate::Timeouts::body`]).
    pub body_timeouts: u64,
    /// Retry packets sent (address validation), and Initials dropped because their token,
    /// of our format, did not open: forged or changed, for another address, or expired (a
    /// token of no format of ours is taken as none).
    pub retries: u64,
    /// Initials dropped because their token, of our format, did not open.
    pub bad_tokens: u64,
    /// Stateless resets sent (short-header packets for a connection not known here).
    pub stateless_resets: u64,
}

struct Conn {
    quic: quiche::Connection,
    h3: Option<h3::Connection>,
    /// The IDs it is found by (ours; the client's first, until dropped with the connection).
    ids: [quiche::ConnectionId<'static>; 2],
    /// Streams whose response waits for flow control.
    blocked: Vec<u64>,
    /// The client's address when its connection was accepted. Never changed by a later
    /// datagram: any sender can put the connection's ID in a packet, and its source is known
    /// before (and whether or not) it decrypts; migration is refused, so the address a
    /// connection was accepted from is the one it has.
    peer: SocketAddr,
    /// Counted against its address in `per_address` (its client is known to be there).
    counted: bool,
    /// The highest request stream handed out, for a GOAWAY's last processed stream.
    last_request: Option<u64>,
    /// A GOAWAY was sent with this stream ID: requests from it on are refused, and the
    /// connection closes once those before it are answered and acknowledged.
    goaway: Option<u64>,
    /// Request streams below this are done with (QUIC has let go of them), for the close
    /// after a GOAWAY.
    settled_below: u64,
    /// The GOAWAY frame has been written (it waits while the congestion window is full).
    goaway_written: bool,
    /// Close with H3_NO_ERROR once everything queued (the GOAWAY) has been sent.
    close_when_sent: bool,
    /// Streams to reset (with their codes) once what they hold has been sent and acknowledged:
    /// quiche's reset discards a stream's unsent data, and a client discards what it has not
    /// read when the reset reaches it, so a cut response's head and last bytes would go with
    /// it. Each with the connection's acknowledged bytes when all it held was sent (`None`
    /// until then): a later acknowledgement covers it (in order, as a loss-free path goes).
    reset_when_sent: Vec<ResetWhenSent>,
    /// When it was accepted: the handshake's deadline runs from here.
    accepted_at: Instant,
    /// Request streams opened whose header block has not come whole yet, oldest first, with
    /// when each was first seen (at most the stream limit of them).
    heads: Vec<(u64, Instant)>,
    /// Request bodies still arriving, each with its clock (at most the stream limit).
    bodies: Vec<clocks::BodyClock>,
    /// The first client request stream not seen yet (every one below it has been, or was
    /// skipped): a keep-alive GOAWAY's.
    next_stream: u64,
    /// Since when no whole request has been under way (None: one is; a stream still in its
    /// header block does not count).
    quiet_since: Option<Instant>,
    /// Streams whose response went whole to QUIC and that QUIC has not let go of yet (at most
    /// the stream limit of them).
    unacked: Vec<u64>,
    /// The server has bytes waiting on the client (a response held back by flow control, or
    /// one sent and not acknowledged): the send clock runs.
    waiting: bool,
    /// When what waits last made progress (or the server began waiting).
    progress_at: Instant,
    /// When `keep_alive` last sent a PING.
    pinged_at: Instant,
    /// The bytes of ours the client had acknowledged (QUIC's count) when `unacked` was last
    /// walked: the walk is done again only once it moves.
    acked: u64,
    /// The bytes of ours the client had acknowledged when a response went whole while its
    /// request's body still arrived, or at the last send deadline since: what the send clock
    /// compares with while only such responses wait.
    acked_at_answer: u64,
    /// A PING went out at the last send deadline, for a client whose responses wait on
    /// request bodies to show it acknowledges (one that does not is closed at the next).
    probed: bool,
    /// In the `to_poll` queue.
    polling: bool,
    /// In the `to_send` queue.
    sending: bool,
}

struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

/// The HTTP/3 connections of one UDP socket.
pub struct Server {
    config: ServerConfig,
    local: SocketAddr,
    slots: Vec<Slot>,
    free: Vec<u32>,
    by_id: HashMap<quiche::ConnectionId<'static>, u32>,
    to_poll: VecDeque<u32>,
    to_send: VecDeque<u32>,
    events: VecDeque<ServerEvent>,
    /// Datagrams not of a connection (version negotiation), to send first.
    stateless: VecDeque<(Vec<u8>, SocketAddr)>,
    /// Stateless resets queued since `stateless` was last empty.
    resets_queued: usize,
    counts: ServerCounts,
    live: usize,
    /// Requests refused because they came after this side's GOAWAY.
    refused_after_goaway: u64,
    /// `go_away` was called: no new connection is accepted.
    going_away: bool,
    /// Connections still in their handshake (for [`Retry::Flood`]).
    handshakes: usize,
    /// Connections open per client address ([`address_key`]) whose client is known to be
    /// there (for `max_per_address`).
    per_address: HashMap<IpAddr, u32>,
    /// The time of the last `recv` or `on_deadline` (what the deadlines are measured from).
    now: Instant,
    /// The connections' deadlines, kept between turns (`deadline` takes `&self`: the slots
    /// touched since are recomputed there).
    timers: RefCell<timers::Timers>,
}

impl Server {
    /// A server for the socket bound at `local`.
    pub fn new(config: ServerConfig, local: SocketAddr) -> Server {
        Server {
            config,
            local,
            slots: Vec::new(),
            free: Vec::new(),
            by_id: HashMap::new(),
            to_poll: VecDeque::new(),
            to_send: VecDeque::new(),
            events: VecDeque::new(),
            stateless: VecDeque::new(),
            resets_queued: 0,
            counts: ServerCounts::default(),
            live: 0,
            refused_after_goaway: 0,
            going_away: false,
            handshakes: 0,
            per_address: HashMap::new(),
            now: Instant::now(),
            timers: RefCell::default(),
        }
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.live
    }

    /// Request streams the deadlines keep a record of, over every connection (a walk of them
    /// all: for tests and diagnostics, not a loop's turn).
    pub fn streams_tracked(&self) -> usize {
        (self.slots.iter().filter_map(|s| s.conn.as_ref()))
            .map(|c| c.heads.len())
            .sum()
    }

    /// What the server has met so far, since it started.
    pub fn counts(&self) -> ServerCounts {
        ServerCounts {
            refused_after_goaway: self.refused_after_goaway,
            ..self.counts
        }
    }

    /// The address the connection was accepted from (what an access log and a rate limiter
    /// may trust: no later datagram changes it).
    pub fn peer(&mut self, conn: ConnId) -> Result<SocketAddr, Error> {
        Ok(self.conn(conn)?.peer)
    }

    /// Body bytes the response on `id` may send now (flow control and the congestion window,
    /// less the DATA frame's header): how much of a body to read before [`Server::send_body`],
    /// which takes all of it, so nothing read is left to read again. 0: a `Writable` event
    /// says when more may go, as after a `send_body` that took less than offered.
    pub fn capacity(&mut self, id: RequestId) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let room = match conn.quic.stream_capacity(id.stream) {
            Ok(n) => n.saturating_sub(DATA_FRAME_HEADER),
            Err(quiche::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        if room == 0 && !conn.blocked.contains(&id.stream) {
            conn.blocked.push(id.stream);
            clocks::waiting(conn, now);
        }
        Ok(room)
    }

    /// A graceful end (RFC 9114 5.2): a GOAWAY on every connection naming the first request
    /// stream not handed out yet, so the requests under way are answered and later ones are
    /// refused with H3_REQUEST_REJECTED (the client sends them again elsewhere); each
    /// connection then closes with H3_NO_ERROR by itself once every response before the
    /// GOAWAY has been sent and acknowledged (closing earlier would drop what QUIC still
    /// holds of them). A connection still in its handshake is closed at once, and no new
    /// one is accepted (a client's Initial is counted as refused).
    pub fn go_away(&mut self) {
        self.going_away = true;
        for slot in 0..self.slots.len() as u32 {
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                continue;
            };
            // Closing already (a deadline passed): nothing to say.
            if conn.quic.local_error().is_some() || conn.quic.is_draining() {
                continue;
            }
            if conn.h3.is_none() {
                let _ = conn.quic.close(true, H3_NO_ERROR, b"");
                self.mark_send(slot);
                continue;
            }
            if conn.goaway.is_some() {
                continue;
            }
            conn.goaway = Some(conn.last_request.map_or(0, |s| s + 4));
            self.counts.goaways_sent += u64::from(write_goaway(conn));
            // Closed once the GOAWAY is out: closing now would drop it unsent.
            conn.close_when_sent |= settled(conn);
            self.mark_send(slot);
        }
    }

    /// A datagram received from `from`: given to its connection, or starting one if it is a
    /// client's Initial. What cannot be read is counted and dropped, never an error.
    pub fn recv(&mut self, datagram: &mut [u8], from: SocketAddr) {
        self.now = Instant::now();
        // A short header does not say how long its connection ID is: it is ours, so ours.
        let hdr = match quiche::Header::from_slice(datagram, cid::LEN) {
            Ok(h) => h,
            Err(_) => {
                self.counts.malformed += 1;
                return;
            }
        };
        let slot = match self.by_id.get(&hdr.dcid) {
            Some(&slot) => slot,
            None => match self.accept(&hdr, datagram.len(), from) {
                Some(slot) => slot,
                None => return,
            },
        };
        let info = quiche::RecvInfo {
            from,
            to: self.local,
        };
        let max_field_section = self.config.max_field_section;
        let generation = self.slots[slot as usize].generation;
        let now = self.now;
        let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
            return;
        };
        // An error is the connection's: QUIC has closed it (or will), as `sweep` finds.
        let _ = conn.quic.recv(datagram, info);
        if conn.h3.is_none() && (conn.quic.is_established() || conn.quic.is_in_early_data()) {
            if let Ok(h3) = h3_config(max_field_section)
                .and_then(|c| Ok(h3::Connection::with_transport(&mut conn.quic, &c)?))
            {
                conn.h3 = Some(h3);
                conn.quiet_since = Some(now);
                self.handshakes -= 1;
                // The client is at its address now: it counts against it, or, the address
                // having its connections (handshakes that completed together), is refused.
                if !conn.counted {
                    let n = self
                        .per_address
                        .entry(address_key(conn.peer.ip()))
                        .or_insert(0);
                    if *n as usize >= self.config.max_per_address {
                        let _ = conn.quic.close(false, CONNECTION_REFUSED, b"");
                        self.counts.refused_per_address += 1;
                    } else {
                        *n += 1;
                        conn.counted = true;
                    }
                }
            }
        }
        clocks::note_streams(conn, now);
        // Cut responses' resets, their bytes acknowledged (sent by the `mark` below).
        reset_acknowledged(conn);
        // After a GOAWAY (written once there is room), the acknowledgement of the last
        // response ends the connection.
        if conn.goaway.is_some() {
            self.counts.goaways_sent += u64::from(write_goaway(conn));
            // Closed once the GOAWAY is out: closing now would drop it unsent.
            conn.close_when_sent |= settled(conn);
        }
        // Responses held back by flow control may go on now.
        let mut i = 0;
        while i < conn.blocked.len() {
            let stream = conn.blocked[i];
            match conn.quic.stream_capacity(stream) {
                // No room for a byte of body (as `capacity` counts it).
                Ok(n) if n <= DATA_FRAME_HEADER => i += 1,
                // Room, or the stream is gone (stopped by the client: the next call says so).
                _ => {
                    conn.blocked.swap_remove(i);
                    let id = RequestId {
                        conn: ConnId { slot, generation },
                        stream,
                    };
                    self.events.push_back(ServerEvent::Writable { id });
                }
            }
        }
        clocks::update(conn, now, false);
        self.mark(slot);
    }

    /// A new connection for a client's Initial, or None (not an Initial, a version to
    /// negotiate, the limit reached).
    fn accept(&mut self, hdr: &quiche::Header<'_>, len: usize, from: SocketAddr) -> Option<u32> {
        // A reset only for an ID this thread issued: another thread's connection is alive
        // there (this packet came from another address, or from someone who saw its ID), and
        // its token would end it.
        if hdr.ty == quiche::Type::Short
            && len > MIN_RESET
            && cid::thread_of(&hdr.dcid) == Some(self.config.thread)
        {
            self.send_reset(&hdr.dcid, len, from);
            return None;
        }
        if hdr.ty != quiche::Type::Initial {
            self.counts.unknown += 1;
            return None;
        }
        // RFC 9000 14.1: a client's first datagram is at least 1,200 bytes (so that what we
        // answer stays within three times what it sent); a smaller one gets no answer, not even
        // version negotiation (RFC 9000 6.1).
        if len < 1200 || self.live >= self.config.max_connections || self.going_away {
            self.counts.refused += 1;
            return None;
        }
        if !quiche::version_is_supported(hdr.version) {
            // Bounded: a caller that stops sending does not let a flood queue without end.
            if self.stateless.len() >= MAX_STATELESS {
                self.counts.refused += 1;
                return None;
            }
            let mut out = vec![0u8; crate::MAX_DATAGRAM];
            if let Ok(n) = quiche::negotiate_version(&hdr.scid, &hdr.dcid, &mut out) {
                out.truncate(n);
                self.stateless.push_back((out, from));
                self.counts.version_negotiation += 1;
            }
            return None;
        }
        // One address (an IPv6 /64) does not take every connection. Only connections from
        // where their client is known to be count against it (a Retry's token brought back,
        // or the handshake done): Initials spoofed in its name, which never complete, do not
        // shut it out. At its limit an Initial without a token gets a Retry (no state), and
        // one with a good token is refused.
        let at_limit = (self.per_address.get(&address_key(from.ip())))
            .is_some_and(|&n| n as usize >= self.config.max_per_address);
        // A token not of our format (another server's, or one of ours from before a format
        // change) is taken as none (RFC 9000 8.1.3): its client is not shut out for it.
        let token = (hdr.token.as_deref()).filter(|t| token::ours(t));
        let (scid, odcid) = if let Some(token) = token {
            // A Retry's token: good, or the Initial is dropped. (This server gives no other
            // token, and answering a bad one of ours would only help whoever forges them.)
            match token::open(token, from, &hdr.dcid, self.now) {
                Some(_) if at_limit => {
                    self.counts.refused_per_address += 1;
                    return None;
                }
                Some(odcid) if hdr.dcid.len() == cid::LEN => {
                    let odcid = quiche::ConnectionId::from_vec(odcid.to_vec());
                    (hdr.dcid.clone().into_owned(), Some(odcid))
                }
                _ => {
                    self.counts.bad_tokens += 1;
                    return None;
                }
            }
        } else if at_limit
            || match self.config.retry {
                Retry::Never => false,
                Retry::Flood(handshakes) => self.handshakes >= handshakes,
                Retry::Always => true,
            }
        {
            self.send_retry(hdr, from);
            return None;
        } else {
            let ours = cid::issued(self.config.thread);
            (quiche::ConnectionId::from_vec(ours.to_vec()), None)
        };
        // Its stateless reset token, which this thread can make again from the ID after
        // losing the connection (restarted).
        let reset = token::reset(self.config.thread, &scid);
        (self.config.quic).set_stateless_reset_token(Some(reset));
        let quic = quiche::accept(
            &scid,
            odcid.as_ref(),
            self.local,
            from,
            &mut self.config.quic,
        )
        .ok()?;
        let theirs = hdr.dcid.clone().into_owned();
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.slots.push(Slot {
                    generation: 0,
                    conn: None,
                });
                (self.slots.len() - 1) as u32
            }
        };
        self.by_id.insert(scid.clone(), slot);
        self.by_id.insert(theirs.clone(), slot);
        self.slots[slot as usize].conn = Some(Conn {
            quic,
            h3: None,
            ids: [scid, theirs],
            blocked: Vec::new(),
            peer: from,
            last_request: None,
            goaway: None,
            settled_below: 0,
            goaway_written: false,
            close_when_sent: false,
            reset_when_sent: Vec::new(),
            accepted_at: self.now,
            heads: Vec::new(),
            bodies: Vec::new(),
            next_stream: 0,
            counted: odcid.is_some(),
            quiet_since: None,
            acked: 0,
            acked_at_answer: 0,
            probed: false,
            unacked: Vec::new(),
            waiting: false,
            progress_at: self.now,
            pinged_at: self.now,
            polling: false,
            sending: false,
        });
        // Validated by its token: counted now (else once its handshake is done).
        if odcid.is_some() {
            *self.per_address.entry(address_key(from.ip())).or_insert(0) += 1;
        }
        self.handshakes += 1;
        self.live += 1;
        self.counts.accepted += 1;
        Some(slot)
    }

    /// Answers a client's Initial with a Retry: a new connection ID to use and a token
    /// sealing its address, the ID its Initial went to, and an expiry. No state is kept.
    fn send_retry(&mut self, hdr: &quiche::Header<'_>, from: SocketAddr) {
        if self.stateless.len() >= MAX_STATELESS {
            self.counts.refused += 1;
            return;
        }
        let new = cid::issued(self.config.thread);
        let lifetime = self.config.token_lifetime;
        let token = token::seal(from, &hdr.dcid, &new, self.now, lifetime);
        let new = quiche::ConnectionId::from_ref(&new);
        let mut out = vec![0u8; crate::MAX_DATAGRAM];
        if let Ok(n) = quiche::retry(&hdr.scid, &hdr.dcid, &new, &token, hdr.version, &mut out) {
            out.truncate(n);
            self.stateless.push_back((out, from));
            self.counts.retries += 1;
        }
    }

    /// Answers a short-header packet of `len` bytes for no connection known here with a
    /// stateless reset (RFC 9000 10.3): random bytes ending in the ID's reset token, which
    /// the client's end of the connection (if it has one) takes as the connection's end.
    fn send_reset(&mut self, dcid: &quiche::ConnectionId<'_>, len: usize, from: SocketAddr) {
        if self.stateless.len() >= MAX_STATELESS || self.resets_queued >= MAX_RESETS {
            self.counts.unknown += 1;
            return;
        }
        self.resets_queued += 1;
        let mut out = vec![0u8; (len - 1).min(MAX_RESET)];
        cid::fill(&mut out);
        // A short header's first bits: 0 (short), 1 (fixed).
        out[0] = 0x40 | (out[0] & 0x3f);
        let n = out.len();
        let token = token::reset(self.config.thread, dcid);
        out[n - 16..].copy_from_slice(&token.to_be_bytes());
        self.stateless.push_back((out, from));
        self.counts.stateless_resets += 1;
    }

    /// Queues `slot` to be polled and sent from.
    fn mark(&mut self, slot: u32) {
        self.timers.get_mut().touch(slot);
        if let Some(conn) = self.slots[slot as usize].conn.as_mut() {
            if !conn.polling {
                conn.polling = true;
                self.to_poll.push_back(slot);
            }
            if !conn.sending {
                conn.sending = true;
                self.to_send.push_back(slot);
            }
        }
    }

    /// Queues `slot` to be sent from.
    fn mark_send(&mut self, slot: u32) {
        self.timers.get_mut().touch(slot);
        if let Some(conn) = self.slots[slot as usize].conn.as_mut() {
            if !conn.sending {
                conn.sending = true;
                self.to_send.push_back(slot);
            }
        }
    }

    /// The next event, or None until more datagrams arrive (or a deadline passes).
    pub fn poll(&mut self) -> Option<ServerEvent> {
        loop {
            if let Some(e) = self.events.pop_front() {
                return Some(e);
            }
            let slot = *self.to_poll.front()?;
            self.timers.get_mut().touch(slot);
            let generation = self.slots[slot as usize].generation;
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                self.to_poll.pop_front();
                continue;
            };
            let polled = match conn.h3.as_mut() {
                Some(h3) => h3.poll(&mut conn.quic),
                None => Err(h3::Error::Done),
            };
            let (stream, event) = match polled {
                Ok(e) => e,
                // Done, or an error HTTP/3 has closed the connection for: this connection
                // has nothing more until it receives again.
                Err(_) => {
                    conn.polling = false;
                    self.to_poll.pop_front();
                    self.sweep(slot);
                    continue;
                }
            };
            let id = RequestId {
                conn: ConnId { slot, generation },
                stream,
            };
            match event {
                h3::Event::Headers { list, more_frames } => {
                    conn.heads.retain(|&(s, _)| s != stream);
                    // After our GOAWAY a new request is refused (RFC 9114 5.2): the client
                    // may send it again on another connection.
                    if conn.goaway.is_some_and(|g| stream >= g) {
                        for dir in [quiche::Shutdown::Read, quiche::Shutdown::Write] {
                            let _ = conn.quic.stream_shutdown(stream, dir, H3_REQUEST_REJECTED);
                        }
                        self.refused_after_goaway += 1;
                        self.mark_send(slot);
                        continue;
                    }
                    conn.last_request = Some(conn.last_request.map_or(stream, |l| l.max(stream)));
                    if more_frames {
                        clocks::body_started(conn, stream, self.now);
                    }
                    return Some(ServerEvent::Request {
                        id,
                        fields: Fields(list),
                        end: !more_frames,
                    });
                }
                h3::Event::Data => return Some(ServerEvent::Body { id }),
                h3::Event::Finished => {
                    clocks::body_ended(conn, stream);
                    return Some(ServerEvent::BodyEnd { id });
                }
                h3::Event::Reset(code) => {
                    conn.blocked.retain(|&s| s != stream);
                    conn.heads.retain(|&(s, _)| s != stream);
                    clocks::body_ended(conn, stream);
                    return Some(ServerEvent::Reset { id, code });
                }
                // A client's GOAWAY (it will open no more streams) and priority updates
                // change nothing for a server that answers streams as they come.
                h3::Event::GoAway | h3::Event::PriorityUpdate => continue,
            }
        }
    }

    /// The next datagram to send, written into `out` (at least [`crate::MAX_DATAGRAM`]
    /// bytes), or None when no connection has anything to send now.
    pub fn send(&mut self, out: &mut [u8]) -> Option<Datagram> {
        if let Some((bytes, to)) = self.stateless.pop_front() {
            if self.stateless.is_empty() {
                self.resets_queued = 0;
            }
            out[..bytes.len()].copy_from_slice(&bytes);
            return Some(Datagram {
                len: bytes.len(),
                to,
                at: Instant::now(),
            });
        }
        loop {
            let slot = *self.to_send.front()?;
            self.timers.get_mut().touch(slot);
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                self.to_send.pop_front();
                continue;
            };
            match conn.quic.send(out) {
                Ok((len, info)) => {
                    return Some(Datagram {
                        len,
                        to: info.to,
                        at: info.at,
                    })
                }
                // All sent: the cut responses' bytes are out, their resets follow the next
                // acknowledgement (`recv`).
                Err(_) if conn.reset_when_sent.iter().any(|r| r.sent_at.is_none()) => {
                    let acked = conn.quic.stats().acked_bytes;
                    for r in &mut conn.reset_when_sent {
                        r.sent_at.get_or_insert(acked);
                    }
                    // A PING, so an acknowledgement comes even if the bytes went (and were
                    // acknowledged) before.
                    let _ = conn.quic.send_ack_eliciting();
                }
                // All sent: the GOAWAY is out, the CONNECTION_CLOSE may follow.
                Err(_) if conn.close_when_sent => {
                    conn.close_when_sent = false;
                    let _ = conn.quic.close(true, H3_NO_ERROR, b"");
                }
                Err(_) => {
                    conn.sending = false;
                    self.to_send.pop_front();
                    self.sweep(slot);
                }
            }
        }
    }

    /// The earliest deadline of all connections, QUIC's and the [`crate::Timeouts`]': kept
    /// between calls, the connections acted on since recomputed (`timers`), so a turn with no
    /// QUIC activity costs a look at a heap's top.
    pub fn deadline(&self) -> Option<Instant> {
        let earliest = (self.timers.borrow_mut()).earliest(&self.slots, &self.config.timeouts);
        // The heap's invariant, checked against a walk of every connection in debug builds
        // (every test): a connection acted on and not touched would show here.
        #[cfg(debug_assertions)]
        {
            let t = &self.config.timeouts;
            let scan = (self.slots.iter())
                .filter_map(|s| s.conn.as_ref())
                .filter_map(|c| timers::deadline_of(c, t))
                .min();
            assert_eq!(
                earliest, scan,
                "the cached earliest deadline is every connection's"
            );
        }
        earliest
    }

    /// Runs the timers of every connection whose deadline is `now` or before.
    pub fn on_deadline(&mut self, now: Instant) {
        self.now = now;
        let timeouts = self.config.timeouts;
        self.timers.get_mut().refresh(&self.slots, &timeouts);
        while let Some(slot) = self.timers.get_mut().pop_due(now) {
            let generation = self.slots[slot as usize].generation;
            let Some(conn) = self.slots[slot as usize].conn.as_mut() else {
                continue;
            };
            let mut due = false;
            if conn.quic.timeout_instant().is_some_and(|t| t <= now) {
                conn.quic.on_timeout();
                due = true;
            }
            if clocks::due(conn, &timeouts).is_some_and(|t| t <= now) {
                clocks::update(conn, now, true);
                let id = ConnId { slot, generation };
                let (counts, events) = (&mut self.counts, &mut self.events);
                clocks::expire(conn, id, &timeouts, now, counts, events);
                due = true;
            }
            if due {
                self.mark_send(slot);
                self.sweep(slot);
            }
        }
    }

    /// Ends `slot`'s connection if QUIC has closed it, with its `Closed` event.
    fn sweep(&mut self, slot: u32) {
        self.timers.get_mut().touch(slot);
        let entry = &mut self.slots[slot as usize];
        if !entry.conn.as_ref().is_some_and(|c| c.quic.is_closed()) {
            return;
        }
        let conn = entry.conn.take().expect("checked above");
        let id = ConnId {
            slot,
            generation: entry.generation,
        };
        entry.generation = entry.generation.wrapping_add(1);
        for cid in &conn.ids {
            self.by_id.remove(cid);
        }
        if conn.h3.is_none() {
            self.handshakes -= 1;
        }
        let key = address_key(conn.peer.ip());
        if let Some(n) = self.per_address.get_mut(&key).filter(|_| conn.counted) {
            *n -= 1;
            if *n == 0 {
                self.per_address.remove(&key);
            }
        }
        self.free.push(slot);
        self.live -= 1;
        self.events.push_back(ServerEvent::Closed {
            conn: id,
            why: Closed::of(&conn.quic),
            stats: Stats::of(&conn.quic),
        });
    }

    /// Connection `id`, to act on (its deadline recomputed at the next ask).
    fn conn(&mut self, id: ConnId) -> Result<&mut Conn, Error> {
        match self.slots.get_mut(id.slot as usize) {
            Some(s) if s.generation == id.generation => {
                self.timers.get_mut().touch(id.slot);
                s.conn.as_mut().ok_or(Error::Gone)
            }
            _ => Err(Error::Gone),
        }
    }

    /// The response's head: `status` (100 to 999) and `fields` (lowercase names, no
    /// connection-specific ones). `end`: no body follows. `Error::Blocked`: flow control has
    /// no room for it now; a `Writable` event says when to try again.
    pub fn send_response(
        &mut self,
        id: RequestId,
        status: u16,
        fields: &[Field<'_>],
        end: bool,
    ) -> Result<(), Error> {
        let digits = status_digits(status);
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let sent = with_status(&digits, fields, |list| {
            h3.send_response(&mut conn.quic, id.stream, list, end)
        })
        .ok_or(Error::TooManyFields)?;
        if let Err(h3::Error::StreamBlocked) = sent {
            conn.blocked.push(id.stream);
            clocks::waiting(conn, now);
        }
        sent?;
        if end {
            clocks::answered(conn, id.stream);
        }
        clocks::waiting(conn, now);
        conn.progress_at = now;
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Some of the response's body: how much flow control took now (maybe 0). When it took
    /// less than `body`, a `Writable` event says when more may go. `end` ends the response
    /// once all of `body` is taken.
    pub fn send_body(&mut self, id: RequestId, body: &[u8], end: bool) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let taken = match h3.send_body(&mut conn.quic, id.stream, body, end) {
            Ok(n) => n,
            Err(h3::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        if taken < body.len() && !conn.blocked.contains(&id.stream) {
            conn.blocked.push(id.stream);
        }
        if end && taken == body.len() {
            clocks::answered(conn, id.stream);
        }
        if !body.is_empty() || end {
            clocks::waiting(conn, now);
        }
        if taken > 0 {
            conn.progress_at = now;
        }
        self.mark_send(id.conn.slot);
        Ok(taken)
    }

    /// Request body bytes into `buf`: how many (0: none waiting now). What is read moves the
    /// body's deadline ([`crate::Timeouts::body`]).
    pub fn recv_body(&mut self, id: RequestId, buf: &mut [u8]) -> Result<usize, Error> {
        let now = self.now;
        let conn = self.conn(id.conn)?;
        let h3 = conn.h3.as_mut().ok_or(Error::Gone)?;
        let n = match h3.recv_body(&mut conn.quic, id.stream, buf) {
            Ok(n) => n,
            Err(h3::Error::Done) => 0,
            Err(e) => return Err(e.into()),
        };
        clocks::body_read(conn, id.stream, n, now);
        // The body's end read here, outside a poll: its `BodyEnd` is for the next poll to say
        // (else it waits for the connection's next datagram).
        let finished = n > 0 && conn.quic.stream_finished(id.stream);
        // Reading may open the window: a MAX_STREAM_DATA to send.
        match finished {
            true => self.mark(id.conn.slot),
            false => self.mark_send(id.conn.slot),
        }
        Ok(n)
    }

    /// Keeps the connection from QUIC's idle timeout while the application works on one of
    /// its requests with nothing to send (a program, an upstream): a PING once half the
    /// connection's idle timeout has passed since the last, whose acknowledgement restarts
    /// both sides' idle timers. Meant to be called every so often (flint serve: its sweep);
    /// more often costs nothing.
    pub fn keep_alive(&mut self, conn: ConnId) {
        let now = Instant::now();
        let ours = self.config.idle_timeout;
        let Ok(c) = self.conn(conn) else {
            return;
        };
        let theirs = (c.quic.peer_transport_params()).map_or(0, |p| p.max_idle_timeout);
        let idle = match theirs {
            0 => ours,
            ms => ours.min(Duration::from_millis(ms)),
        };
        if now.saturating_duration_since(c.pinged_at) < idle / 2 {
            return;
        }
        c.pinged_at = now;
        if c.quic.send_ack_eliciting().is_ok() {
            self.mark_send(conn.slot);
        }
    }

    /// Resets the request's stream both ways with `code` (an HTTP/3 error code).
    pub fn reset(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        shut_stream(conn, id.stream, code)?;
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Resets the request's stream as [`Server::reset`] does, but only once what it was given
    /// has been handed to the network (a response cut short: its head and the body bytes that
    /// came reach the client, then the reset says the rest never will).
    pub fn reset_when_sent(&mut self, id: RequestId, code: u64) -> Result<(), Error> {
        let conn = self.conn(id.conn)?;
        if !conn.reset_when_sent.iter().any(|r| r.stream == id.stream) {
            conn.reset_when_sent.push(ResetWhenSent {
                stream: id.stream,
                code,
                sent_at: None,
            });
        }
        self.mark_send(id.conn.slot);
        Ok(())
    }

    /// Closes a connection with an HTTP/3 code (its `Closed` event follows once QUIC has
    /// sent the CONNECTION_CLOSE and drained).
    pub fn close(&mut self, conn: ConnId, code: u64, reason: &[u8]) -> Result<(), Error> {
        let c = self.conn(conn)?;
        let _ = c.quic.close(true, code, reason);
        self.mark_send(conn.slot);
        Ok(())
    }

    /// Packets and bytes of one connection so far.
    pub fn stats(&mut self, conn: ConnId) -> Result<Stats, Error> {
        Ok(Stats::of(&self.conn(conn)?.quic))
    }
}

/// Whether every request stream `conn` handed out is done with: QUIC has let go of it (its
/// response sent and acknowledged, its request read to the end) or the client stopped it.
/// Walks the streams once over the connection's life (`settled_below` only moves up).
fn settled(conn: &mut Conn) -> bool {
    let Some(last) = conn.last_request else {
        return true;
    };
    while conn.settled_below <= last {
        match conn.quic.stream_capacity(conn.settled_below) {
            // Collected (or never opened: a stream ID the client skipped), or stopped.
            Err(quiche::Error::InvalidStreamState(_) | quiche::Error::StreamStopped(_)) => {
                conn.settled_below += 4
            }
            _ => return false,
        }
    }
    true
}

/// Writes `conn`'s GOAWAY if it is not written yet and the control stream has room (a full
/// congestion window leaves none: then the next datagram received tries again). True if
/// written now.
fn write_goaway(conn: &mut Conn) -> bool {
    let (Some(id), Some(h3)) = (conn.goaway, conn.h3.as_mut()) else {
        return false;
    };
    if conn.goaway_written {
        return false;
    }
    conn.goaway_written = h3.send_goaway(&mut conn.quic, id).is_ok();
    conn.goaway_written
}

/// What `max_per_address` counts by: an IPv4 address (also as a dual-stack socket sees it,
/// mapped), or an IPv6 address's /64 (a host is commonly given a whole /64).
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

/// A cut response's stream, reset once what it was given has been acknowledged.
struct ResetWhenSent {
    stream: u64,
    code: u64,
    /// The connection's acknowledged bytes once all the stream held was sent.
    sent_at: Option<u64>,
}

/// Resets the streams whose bytes an acknowledgement has covered since they were sent.
fn reset_acknowledged(conn: &mut Conn) {
    if !conn.reset_when_sent.iter().any(|r| r.sent_at.is_some()) {
        return;
    }
    let acked = conn.quic.stats().acked_bytes;
    let mut i = 0;
    while i < conn.reset_when_sent.len() {
        let r = &conn.reset_when_sent[i];
        if r.sent_at.is_some_and(|at| acked > at) {
            let (stream, code) = (r.stream, r.code);
            conn.reset_when_sent.swap_remove(i);
            let _ = shut_stream(conn, stream, code);
        } else {
            i += 1;
        }
    }
}

/// Shuts the stream both ways with `code`, and forgets what was kept for it.
fn shut_stream(conn: &mut Conn, stream: u64, code: u64) -> Result<(), Error> {
    for dir in [quiche::Shutdown::Read, quiche::Shutdown::Write] {
        match conn.quic.stream_shutdown(stream, dir, code) {
            Ok(()) | Err(quiche::Error::Done) => {}
            Err(e) => return Err(e.into()),
        }
    }
    conn.blocked.retain(|&s| s != stream);
    // Its body's clock goes with it: once the read side is shut, quiche keeps nothing
    // more of the stream, so no event would ever end that clock (a client could grow
    // the list past the stream limit by having its streams reset, and the expiry would
    // count timeouts and report resets for streams long gone).
    clocks::body_ended(conn, stream);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::address_key;
    use std::net::IpAddr;

    #[test]
    fn addresses_count_by_ipv4_address_and_ipv6_64() {
        let key = |s: &str| address_key(s.parse::<IpAddr>().unwrap());
        assert_eq!(key("2001:db8:1:2::1"), key("2001:db8:1:2:ffff::9"));
        assert_ne!(key("2001:db8:1:2::1"), key("2001:db8:1:3::1"));
        assert_eq!(key("::ffff:192.0.2.7"), key("192.0.2.7"));
        assert_ne!(key("192.0.2.7"), key("192.0.2.8"));
    }
}
