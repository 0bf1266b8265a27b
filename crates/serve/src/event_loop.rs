//! One event-loop thread: its epoll instance, its listening socket, its slab of connections,
//! its timers, its connection cap and its part of a graceful shutdown. Generic over the
//! connections' [`Transport`] (plain TCP or TLS: one port never mixes them), so each kind gets
//! its own monomorphic loop and the plain one pays nothing for the other.
//!
//! Connections live in a slab (`Vec<Option<Conn>>` and a free list; the index is the epoll
//! token). They are registered once, edge-triggered, for READABLE|WRITABLE, and never modified:
//! an event just says "drive this connection", and [`Conn::drive`] does what its state allows.
//!
//! The connection cap is the server's: one counter shared by the threads (a relaxed
//! `fetch_add` per accept, a `fetch_sub` per close; nothing per request). At the cap a thread
//! closes its connection that has waited longest for a request (idle keep-alive, or silent since
//! accept) to admit the new one, as nginx reuses its waiting connections.
//!
//! A program is started by the loop's spawner thread (`gateway/spawner.rs`), which wakes the
//! loop through its `Waker` once the child runs: the loop never waits in a `posix_spawn`. Its
//! pipes and pidfd are then registered under the connection's token with
//! `gateway::PROGRAM_TOKEN` set: its events drive that connection without marking its socket
//! readable. A FastCGI connection is registered once, under its pool slot's token
//! (`upstream::POOL_TOKEN`): the pool routes its events to the connection its request belongs
//! to, and drops an idle one the application closed. The sweep also enforces programs' wall time,
//! reaps the programs connections let go, and closes upstream connections idle in the pool past
//! their mount's `idle_timeout_ms` (with no client connection open, the loop sleeps until the
//! oldest of them ages out rather than sweeping 4 times a second).
//!
//! Timers are a coarse sweep over the slab every 250 ms: O(connections) per sweep, nothing per
//! request. Each connection carries one deadline set from its phase (head, idle, send, linger),
//! so the sweep is a compare per slot; an HTTP/2 connection also carries its earliest stream's
//! request-body deadline, past which that stream is reset and the connection goes on. The poll timeout is that sweep, or none at all when no
//! connection, log line or paused listener needs one (an idle server sleeps).
//!
//! With HTTP/3 on, the loop also owns a UDP socket and its QUIC connections (`udp.rs`): its
//! events drive them, QUIC's own deadline is folded into the poll timeout, and a shutdown
//! sends each a GOAWAY and waits for them to close as it waits for TCP connections.
//!
//! How a connection comes in (accepted, its first pass, the cap, a paused listener) is
//! `event_loop/accepting.rs`.

use std::fs::File;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mio::net::TcpListener;
use mio::{Events, Poll, Token};
use wire::RequestLimits;

use crate::access_log::AccessLog;
use crate::auth::Guard;
use crate::config::Config;
use crate::conn::{Conn, Phase};
use crate::control::{Control, LISTENER, QUIC, WAKER};
use crate::gateway::upstream::POOL_TOKEN;
use crate::gateway::{Gateways, PROGRAM_TOKEN};
use crate::pool::Pool;
use crate::protocol::{Timeouts, Worker, H3_TOKEN};
use crate::respond::Responder;
use crate::stats::ServerStats;
use crate::transport::Transport;
use crate::udp::{Quic, Steering};

mod accepting;

/// Period of the timeout sweep (and so the timeouts' resolution).
const SWEEP: Duration = Duration::from_millis(250);
/// How long accepting pauses after EMFILE/ENFILE: the pending connection stays in the backlog,
/// so retrying at once fails the same way (a level-triggered loop would spin on it; an
/// edge-triggered one would never hear of the backlog again).
const ACCEPT_PAUSE: Duration = Duration::from_millis(100);

pub(crate) struct Loop<'a, T: Transport> {
    id: usize,
    poll: Poll,
    listener: Option<TcpListener>,
    control: &'a Control,
    conns: Vec<Option<Conn<T>>>,
    /// The empty slots of `conns`: every other slot holds a live connection.
    free: Vec<usize>,
    /// `max_connections`, counted in `control.conns` across every thread.
    max_conns: usize,
    pool: Pool,
    dates: wire::DateCache,
    worker: Worker,
    env: T::Env,
    accept_paused_until: Option<Instant>,
    /// Set once shutdown began: the grace deadline.
    draining: Option<Instant>,
    next_sweep: Instant,
    published_gen: u64,
    /// The UDP socket and its HTTP/3 connections, when HTTP/3 is on.
    quic: Option<Quic>,
}

impl<'a, T: Transport> Loop<'a, T> {
    #[allow(clippy::too_many_arguments)] // each is one of the thread's own parts
    pub fn new(
        id: usize,
        poll: Poll,
        listener: TcpListener,
        config: &Config,
        log: Option<Arc<File>>,
        responder: Responder,
        env: T::Env,
        control: &'a Control,
        udp: Option<(std::net::UdpSocket, http3::ServerConfig)>,
    ) -> io::Result<Loop<'a, T>> {
        let threads = control.wakers.len().max(1);
        let share = (config.max_connections / threads).max(1);
        let limits = RequestLimits {
            max_request_line: config.max_request_line,
            max_head_bytes: config.max_header_bytes,
            max_headers: config.max_headers,
        };
        let now = Instant::now();
        let port = listener.local_addr()?.port();
        let waker = (control.wakers.get(id).cloned())
            .ok_or_else(|| io::Error::other("no waker for this loop"))?;
        let quic = match udp {
            Some((socket, h3)) => {
                let steering = Steering {
                    on: config.h3_steer,
                    thread: id,
                    threads,
                };
                Some(Quic::new(socket, h3, poll.registry(), QUIC, &steering)?)
            }
            None => None,
        };
        let gateways = Gateways::new(
            config,
            control.programs.clone(),
            poll.registry().try_clone()?,
            waker,
            port,
        )?;
        Ok(Loop {
            id,
            poll,
            listener: Some(listener),
            control,
            conns: Vec::new(),
            free: Vec::new(),
            max_conns: config.max_connections,
            // The input buffer holds a whole head at the limit, and a batch of pipelined ones.
            pool: Pool::new(
                config.max_header_bytes.max(16 * 1024),
                share.min(1024),
                config.max_pipeline_bytes,
            ),
            dates: wire::DateCache::new(),
            worker: Worker {
                responder,
                log: log.map(|f| AccessLog::new(f, config.access_log_format)),
                stats: ServerStats {
                    threads: 1,
                    ..ServerStats::default()
                },
                limits,
                now,
                wall: SystemTime::now(),
                date: [b' '; wire::date::HTTP_DATE_LEN],
                max_pipeline: config.max_pipeline_bytes as u64,
                max_body: config.max_body_bytes,
                body_min_rate: config.body_min_rate,
                timeouts: Timeouts {
                    header: Duration::from_millis(config.header_timeout_ms),
                    keepalive: Duration::from_millis(config.keepalive_timeout_ms),
                    send: Duration::from_millis(config.send_timeout_ms),
                    body: Duration::from_millis(config.body_timeout_ms),
                },
                http2: config.http2.then(|| config.http2_limits()),
                gateways,
                auth: (control.auth.clone()).map(|shared| Box::new(Guard::new(shared))),
                h2_spares: Default::default(),
                held_logs: Default::default(),
            },
            env,
            accept_paused_until: None,
            draining: None,
            next_sweep: now + SWEEP,
            published_gen: 0,
            quic,
        })
    }

    /// Runs until shutdown (its connections drained or the grace over) or a failed poll; the
    /// counters, and the UDP socket, for the caller to close once every loop has ended.
    pub fn run(mut self) -> (io::Result<ServerStats>, Option<mio::net::UdpSocket>) {
        let mut events = Events::with_capacity(1024);
        // A poll that fails ends the loop as a stop does (its connections closed, its
        // programs' slots given back: the count is the other loops' too), then is returned.
        let mut failed = None;
        loop {
            if self.draining.is_none() && self.control.stop.load(Ordering::Acquire) {
                self.tick(); // the grace counts from now, not from the last wakeup
                self.begin_drain();
            }
            if let Some(grace) = self.draining {
                let quic = self.quic.as_ref().map_or(0, Quic::connections);
                if (self.live() == 0 && quic == 0) || self.worker.now >= grace {
                    break;
                }
            }
            let timeout = self.poll_timeout();
            if let Err(e) = self.poll.poll(&mut events, timeout) {
                if e.kind() != io::ErrorKind::Interrupted {
                    failed = Some(e);
                    break;
                }
            }
            self.worker.stats.wakeups += 1;
            self.tick();
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => self.accept_all(),
                    QUIC => {
                        if let Some(q) = self.quic.as_mut() {
                            q.on_event(&mut self.worker, ev.is_readable());
                        }
                    }
                    // Shutdown, a stats snapshot, or a program the spawner started.
                    WAKER => self.take_spawned(),
                    // A program's pipe or pidfd: drive its connection; the socket's readiness
                    // is not this event's.
                    Token(t) if t & PROGRAM_TOKEN != 0 => self.on_gateway(t & !PROGRAM_TOKEN),
                    // A FastCGI connection: its pool slot says which connection it drives now
                    // (none while it is idle).
                    Token(t) if t & POOL_TOKEN != 0 => {
                        let closed = ev.is_read_closed() || ev.is_error();
                        let conn = (self.worker.gateways.as_mut())
                            .and_then(|g| g.pool_event(t & !POOL_TOKEN, ev.is_readable(), closed));
                        if let Some(i) = conn {
                            self.on_gateway(i);
                        }
                    }
                    Token(i) => {
                        let closed = ev.is_read_closed() || ev.is_error();
                        self.on_event(i, ev.is_readable() || closed, closed);
                    }
                }
            }
            if self
                .accept_paused_until
                .is_some_and(|t| self.worker.now >= t)
            {
                self.resume_accepting();
            }
            if let Some(g) = self.worker.gateways.as_mut() {
                g.end_wake();
            }
            if let Some(q) = self.quic.as_mut() {
                q.tick(&mut self.worker);
            }
            if self.worker.now >= self.next_sweep {
                self.sweep();
            }
            if self.control.snap_gen.load(Ordering::Acquire) != self.published_gen {
                self.publish(false);
            }
        }
        for i in 0..self.conns.len() {
            if self.conns[i].is_some() {
                self.close(i);
            }
        }
        if let Some(q) = self.quic.as_mut() {
            q.abandon_programs(&mut self.worker);
            q.log_held(&mut self.worker);
        }
        if let Some(g) = self.worker.gateways.as_mut() {
            g.sweep(self.worker.now, true);
        }
        if let Some(log) = self.worker.log.as_mut() {
            log.flush();
        }
        self.publish(true);
        let socket = self.quic.take().map(Quic::into_socket);
        let result = match failed {
            Some(e) => Err(e),
            None => Ok(self.worker.stats),
        };
        (result, socket)
    }

    /// Reads the clocks once per wakeup: every request of the batch uses this time and date.
    fn tick(&mut self) {
        self.worker.now = Instant::now();
        self.worker.wall = SystemTime::now();
        let secs = self
            .worker
            .wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let d = self.dates.get_at(secs);
        if d.len() == self.worker.date.len() {
            self.worker.date.copy_from_slice(d);
        }
    }

    /// Connections open: the slots not on the free list.
    fn live(&self) -> usize {
        self.conns.len() - self.free.len()
    }

    /// The programs the spawner thread started (or failed to): each to its connection, which
    /// is driven (its request body to the program, its output read); one whose request was
    /// given up meanwhile is killed and reaped.
    fn take_spawned(&mut self) {
        loop {
            let Some(mut s) = self.worker.gateways.as_mut().and_then(|g| g.take_spawned()) else {
                return;
            };
            // Started as the server stops: killed at once, as the running ones were.
            if let (Some(_), Ok(started)) = (self.draining, &mut s.result) {
                crate::gateway::kill_group(started.child.id());
                started.killed_at_shutdown = true;
            }
            let i = s.token;
            let left = match (
                self.conns.get_mut(i).and_then(Option::as_mut),
                &mut self.quic,
            ) {
                (_, Some(q)) if i == H3_TOKEN => q.program_spawned(s, &mut self.worker),
                (Some(c), _) => c.program_spawned(s, &mut self.worker, &mut self.pool),
                (None, _) => Some(s),
            };
            match left {
                None if i == H3_TOKEN => {}
                None => self.on_event(i, false, false),
                Some(s) => {
                    if let Some(g) = self.worker.gateways.as_mut() {
                        self.worker.stats.cgi_starts += u64::from(g.orphan(s));
                    }
                }
            }
        }
    }

    /// No timeout at all when nothing can time out (an idle server sleeps); else the next sweep
    /// (with no connection open, not before the gateways' next work: an idle pooled upstream
    /// connection wakes the loop once, when it ages out).
    fn poll_timeout(&self) -> Option<Duration> {
        let pending_log = self.worker.log.as_ref().is_some_and(|l| l.pending() > 0);
        let h3_programs = self.quic.as_ref().is_some_and(Quic::has_programs);
        let mut wake = if self.live() > 0 || pending_log || self.draining.is_some() || h3_programs {
            Some(self.next_sweep)
        } else {
            // The sweep runs once `next_sweep` has passed: woken earlier, it would not. (With
            // a wake-up at `next_sweep` already, the gateways' work, never due before it, is
            // not looked for: it walks every pool group.)
            (self.worker.gateways.as_ref())
                .and_then(|g| g.sweep_due(self.worker.now))
                .map(|due| due.max(self.next_sweep))
        };
        if let Some(t) = self.accept_paused_until {
            wake = Some(wake.map_or(t, |w| w.min(t)));
        }
        if let Some(q) = self.quic.as_ref() {
            // Datagrams left unread by the last turn: no sleep at all.
            let t = if q.unread() {
                Some(Instant::now())
            } else {
                q.deadline()
            };
            if let Some(t) = t {
                wake = Some(wake.map_or(t, |w| w.min(t)));
            }
        }
        wake.map(|w| w.saturating_duration_since(Instant::now()))
    }

    /// A gateway's event for the side under token `i`: a connection, or the thread's HTTP/3
    /// requests.
    fn on_gateway(&mut self, i: usize) {
        match self.quic.as_mut() {
            Some(q) if i == H3_TOKEN => q.drive_programs(&mut self.worker),
            _ => self.on_event(i, false, false),
        }
    }

    fn on_event(&mut self, i: usize, readable: bool, closed: bool) {
        // A stale event for a slot freed earlier in this batch finds None (or, if the slot was
        // reused, costs at most one read that finds nothing).
        let Some(c) = self.conns.get_mut(i).and_then(Option::as_mut) else {
            return;
        };
        if readable {
            c.io.readable(closed);
        }
        if !c.drive(&mut self.worker, &mut self.env, &mut self.pool) {
            self.close(i);
        }
    }

    fn close(&mut self, i: usize) {
        if let Some(c) = self.conns[i].take() {
            self.free.push(i);
            self.release(c);
        }
    }

    /// Closing the fd removes it from epoll: no `epoll_ctl(DEL)`.
    fn release(&mut self, mut c: Conn<T>) {
        self.control.conns.fetch_sub(1, Ordering::Relaxed);
        // Its client is gone: its programs are killed (reaped by the sweep), their requests
        // logged.
        c.abandon_programs(&mut self.worker, &mut self.pool);
        // Its responses still under way are logged with the body bytes they sent (at the
        // loop's end too: before the log's last flush).
        c.session.log_held(&mut self.worker);
        if let Some(b) = c.session.bufs.take() {
            self.pool.give(b);
        }
        self.worker.stats.closed += 1;
    }

    /// Timeouts and the log's once-a-second flush.
    fn sweep(&mut self) {
        let now = self.worker.now;
        self.next_sweep = now + SWEEP;
        for i in 0..self.conns.len() {
            let Some(c) = self.conns[i].as_mut() else {
                continue;
            };
            // The protocol's own deadline (HTTP/2: a stream whose request body is late, reset):
            // the connection goes on.
            if c.protocol_due.is_some_and(|due| now >= due) && c.session.expire(&mut self.worker) {
                self.on_event(i, false, false);
                continue;
            }
            if !c.programs.is_empty() {
                // Past its wall time a program is killed: 504 if nothing of its response was
                // sent, else the response is cut.
                c.expire_programs(&mut self.worker, &mut self.pool);
                // Also how a program's exit is seen without a pidfd.
                self.on_event(i, false, false);
                continue;
            }
            if now < c.deadline {
                continue;
            }
            let st = &mut self.worker.stats;
            match c.phase {
                Phase::Head => {
                    st.header_timeouts += 1;
                    st.tls_handshake_timeouts += u64::from(c.io.handshaking());
                }
                Phase::Body | Phase::Trailing => st.body_timeouts += 1,
                Phase::Idle => st.idle_timeouts += 1,
                Phase::Send => st.send_timeouts += 1,
                Phase::Linger | Phase::Gateway => {}
            }
            self.close(i);
        }
        if let Some(q) = self.quic.as_mut().filter(|q| q.has_programs()) {
            q.expire_programs(&mut self.worker);
        }
        if let Some(g) = self.worker.gateways.as_mut() {
            g.sweep(now, false);
        }
        if let Some(log) = self.worker.log.as_mut() {
            log.flush_if_due(now);
        }
    }

    /// Shutdown: stop accepting (dropping the listener: new connects are refused once every
    /// thread has), kill the running programs, close connections between requests, let the
    /// others finish their output.
    fn begin_drain(&mut self) {
        self.listener = None;
        self.draining = Some(self.worker.now + self.worker.timeouts.send);
        // HTTP/3: a GOAWAY on every connection; each closes once its responses are out.
        if let Some(q) = self.quic.as_mut() {
            q.shut_down(&mut self.worker);
        }
        for i in 0..self.conns.len() {
            let Some(c) = self.conns[i].as_mut() else {
                continue;
            };
            // Its programs are killed now, not waited for to their wall time (their slots
            // come back once they are reaped); the connection then ends their responses.
            c.programs.kill_all();
            if c.phase == Phase::Linger {
                self.close(i);
                continue;
            }
            // HTTP/2: a GOAWAY, written now; its streams finish, then it closes. HTTP/1.1: closes
            // after its queue.
            if c.session.shut_down() {
                self.on_event(i, false, false);
                continue;
            }
            // Over TLS an empty queue may still leave sealed records in rustls: the tail of a
            // response, which closing now would cut.
            if c.session.queued == 0 && !c.io.has_output() && c.programs.is_empty() {
                self.close(i);
            }
        }
    }

    /// Hands the counters to the handle's `stats` (the last time with the generation that says
    /// "exited", so `stats` after `run` returns does not wait).
    fn publish(&mut self, last: bool) {
        self.worker.stats.buffers_created = self.pool.created;
        if let Some(q) = self.quic.as_ref() {
            q.publish(&mut self.worker);
        }
        self.worker.stats.pool_peer_closed =
            (self.worker.gateways.as_ref()).map_or(0, |g| g.pool_peer_closed());
        if let Some(log) = self.worker.log.as_ref() {
            self.worker.stats.log_flushes = log.flushes;
            self.worker.stats.log_errors = log.errors;
        }
        let gen = self.control.snap_gen.load(Ordering::Acquire);
        self.published_gen = gen;
        let mut snaps = self.control.snaps.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(slot) = snaps.get_mut(self.id) {
            *slot = (if last { u64::MAX } else { gen }, self.worker.stats);
        }
        self.control.snap_cv.notify_all();
    }
}
