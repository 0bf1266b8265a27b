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
//!
//! This file holds the slab (a connection's state, `Conn`; the ids; the queues) and what every
//! call shares: finding a connection, queueing it, ending it. The calls, one concept a file:
//! `receive.rs` (a datagram in), `accept.rs` (a client's Initial: a new connection or why
//! not), `stateless.rs` (Retry and stateless reset), `poll.rs` (requests out, as `events.rs`'
//! [`ServerEvent`]s; a malformed one reset, `malformed.rs`), `send.rs` (datagrams out), `answer.rs` (a request's body read, its
//! response sent), `resets.rs` (a stream reset, at once or once its bytes are acknowledged),
//! `goaway.rs` (the graceful end), `deadline.rs` (the earliest deadline and what passing it
//! does, over `clocks.rs` and `timers.rs`), `paths.rs` (a client's changes of address, past
//! the paths quiche keeps); `counts.rs` has [`ServerCounts`].

use crate::config::ServerConfig;
use crate::error::{Closed, Error};
use crate::Stats;
use accept::address_key;
use quiche::h3;
use resets::ResetWhenSent;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Instant;

mod accept;
mod answer;
mod clocks;
mod counts;
mod deadline;
mod ending;
mod events;
mod goaway;
pub(crate) mod head_budget;
mod malformed;
mod paths;
mod poll;
mod receive;
mod resets;
mod send;
mod stateless;
mod timers;

pub use counts::ServerCounts;
pub use events::ServerEvent;

/// The most a DATA frame's header takes of a stream's room: its type and its length, each a
/// varint (quiche writes the frame as `send_body` takes the body).
const DATA_FRAME_HEADER: usize = 1 + 8;

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

struct Conn {
    quic: quiche::Connection,
    h3: Option<h3::Connection>,
    /// The IDs it is found by (ours; the client's first, until dropped with the connection).
    ids: [quiche::ConnectionId<'static>; 2],
    /// Streams whose response waits for flow control.
    blocked: Vec<u64>,
    /// The client's address when its connection was accepted. Never changed by a later
    /// datagram: any sender can put the connection's ID in a packet, and its source is known
    /// before (and whether or not) it decrypts. The client may move (a NAT rebinding its
    /// port): `paths` follows it, and this stays what the client proved with its handshake.
    peer: SocketAddr,
    /// The addresses the client has had, as quiche knows them and as they are.
    paths: paths::Paths,
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
    /// Streams this side reset that QUIC or HTTP/3 still holds (`server/ending.rs`; at most
    /// about the stream limit: each holds a stream of QUIC's until it is collected).
    ending: Vec<ending::Ending>,
    /// When it was accepted: the handshake's deadline runs from here.
    accepted_at: Instant,
    /// Request streams opened whose header block has not come whole yet, oldest first (in
    /// stream order), with when each was first seen and what its block holds (at most the
    /// stream limit of them).
    heads: Vec<head_budget::Head>,
    /// What its unfinished header blocks hold, and its streams' being let go of
    /// (`server/head_budget.rs`), within the server's count.
    charge: head_budget::Charge,
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
    /// Refused at its address's limit though its token proved the address: closed with
    /// CONNECTION_REFUSED once its first flight is out, so that its client fails at once
    /// rather than at its connect timeout (RFC 9000 10.2.3, `server/accept.rs`, `send.rs`).
    refused: bool,
}

struct Slot {
    generation: u32,
    conn: Option<Conn>,
}

/// One client address's part of the server (`Server::per_address`).
#[derive(Debug, Default)]
struct PerAddress {
    /// Its connections counted against `max_per_address`.
    counted: u32,
    /// A connection refused at its limit is closing (`accept.rs`): one at a time, so that
    /// refusing costs a client at most one connection's handshake and state, however many
    /// Initials it brings (the others are dropped).
    refusing: bool,
}

/// The HTTP/3 connections of one UDP socket.
pub struct Server {
    config: ServerConfig,
    /// The stateless reset tokens' key, for the address this server is bound to.
    reset_key: crate::token::ResetKey,
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
    malformed_requests: u64,
    /// `go_away` was called: no new connection is accepted.
    going_away: bool,
    /// Connections still in their handshake (for [`Retry::Flood`](crate::Retry::Flood)).
    handshakes: usize,
    /// Per client address ([`address_key`]): its connections whose client is known to be
    /// there (for `max_per_address`), and whether a refused one is closing.
    per_address: HashMap<IpAddr, PerAddress>,
    /// Bytes every connection's unfinished header blocks hold (`server/head_budget.rs`).
    head_held: Arc<AtomicU64>,
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
            reset_key: config.reset.key_at(local),
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
            malformed_requests: 0,
            going_away: false,
            handshakes: 0,
            per_address: HashMap::new(),
            head_held: Arc::default(),
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

    /// Bytes held now in request header blocks not whole yet, over every connection (within
    /// [`ServerConfig::header_budget`](crate::ServerConfig::header_budget)).
    pub fn header_bytes(&self) -> u64 {
        self.head_held.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// What the server has met so far, since it started.
    pub fn counts(&self) -> ServerCounts {
        ServerCounts {
            refused_after_goaway: self.refused_after_goaway,
            malformed_requests: self.malformed_requests,
            ..self.counts
        }
    }

    /// The address the connection was accepted from (what an access log and a rate limiter
    /// may trust: no later datagram changes it).
    pub fn peer(&mut self, conn: ConnId) -> Result<SocketAddr, Error> {
        Ok(self.conn(conn)?.peer)
    }

    /// The connection's handshake is not done and what it received so far came in 0-RTT
    /// ([`ServerConfig::early_data`](crate::ServerConfig::early_data)): a request handed out
    /// now may be a replay of another client's first flight (RFC 9001 9.2; RFC 8470), as
    /// only its client can finish the handshake. A request handed out after the handshake
    /// is done is not, though its bytes came early: the client has proved it is there, and a
    /// replay of its flight never gets that far. False for a connection gone.
    ///
    /// Told by the handshake not being done rather than by quiche's `is_in_early_data`:
    /// BoringSSL's server says it only in the call that read the ClientHello, not while
    /// it waits for the client's Finished, when 0-RTT packets read later are still early.
    pub fn in_early_data(&self, conn: ConnId) -> bool {
        match self.slots.get(conn.slot as usize) {
            Some(s) if s.generation == conn.generation => {
                s.conn.as_ref().is_some_and(|c| !c.quic.is_established())
            }
            _ => false,
        }
    }

    /// Packets and bytes of one connection so far.
    pub fn stats(&mut self, conn: ConnId) -> Result<Stats, Error> {
        Ok(Stats::of(&self.conn(conn)?.quic))
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

    /// Ends `slot`'s connection if QUIC has closed it, with its `Closed` event. With
    /// `all_sent` (QUIC had nothing more to send) after `go_away`, a connection closing or
    /// draining (its CONNECTION_CLOSE sent, or the client's received) ends now rather than
    /// after QUIC's closing period (three PTOs: seconds for a handshake with no round trip
    /// measured), which would only answer the client's further packets with the close again:
    /// the drain waits for no connection that has nothing left to deliver. A handshake whose
    /// close the amplification limit holds back (RFC 9000 8.1) ends too: it has no request.
    fn sweep(&mut self, slot: u32, all_sent: bool) {
        self.timers.get_mut().touch(slot);
        let going_away = self.going_away;
        let entry = &mut self.slots[slot as usize];
        let ended = |c: &Conn| {
            c.quic.is_closed()
                || (all_sent
                    && going_away
                    && (c.quic.local_error().is_some() || c.quic.is_draining()))
        };
        if !entry.conn.as_ref().is_some_and(ended) {
            return;
        }
        let id = ConnId {
            slot,
            generation: entry.generation,
        };
        let Some(conn) = self.remove(slot) else {
            return;
        };
        self.events.push_back(ServerEvent::Closed {
            conn: id,
            why: Closed::of(&conn.quic),
            stats: Stats::of(&conn.quic),
        });
    }

    /// Takes `slot`'s connection out of the server: its IDs, its place among the handshakes
    /// and its address's connections, its slot (whose generation moves on).
    fn remove(&mut self, slot: u32) -> Option<Conn> {
        self.timers.get_mut().touch(slot);
        let entry = &mut self.slots[slot as usize];
        let conn = entry.conn.take()?;
        entry.generation = entry.generation.wrapping_add(1);
        for cid in &conn.ids {
            self.by_id.remove(cid);
        }
        // A refused connection was never counted as a handshake (`accept.rs`).
        if conn.h3.is_none() && !conn.refused {
            self.handshakes -= 1;
        }
        let key = address_key(conn.peer.ip());
        if let Some(a) = self.per_address.get_mut(&key) {
            a.counted -= u32::from(conn.counted);
            a.refusing &= !conn.refused;
            if a.counted == 0 && !a.refusing {
                self.per_address.remove(&key);
            }
        }
        self.free.push(slot);
        self.live -= 1;
        Some(conn)
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
}
