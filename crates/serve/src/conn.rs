//! One connection's driver loop: read what is there, answer every complete request, write, and
//! close (plainly or lingering), the same for every transport.
//!
//! The protocol (`protocol`) decides what to answer and whether to keep the connection; the
//! transport (`plain`, `tls`) moves the bytes; this loop sequences them and sets the one deadline
//! the event loop's sweep checks, from what the connection waits for ([`Phase`]). The programs
//! answering its requests (`protocol/programs.rs`) are moved along in the same loop.

use std::io;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use mio::net::TcpStream;

use crate::gateway::spawner::Spawned;
use crate::pool::Pool;
use crate::protocol::programs::Programs;
use crate::protocol::{Session, Wait, Worker};
use crate::stats::ServerStats;
use crate::transport::{Flushed, Transport};

/// Longest lingering close (capped by the header timeout).
const LINGER: Duration = Duration::from_secs(2);

/// What a connection is waiting for; decides which timeout applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A request head is due (since accept, or since its first byte): the header timeout. Over
    /// TLS the handshake comes first, within the same timeout.
    Head,
    /// A request body is being read and dropped: its deadline (a total that grows with the
    /// bytes received, and a gap).
    Body,
    /// Between requests: the keep-alive timeout.
    Idle,
    /// Every response is out, and the protocol still expects something that answers no request
    /// ([`Wait::Trailing`]: HTTP/2's request bodies after their responses), due by its own
    /// clock. Nothing is under way for the server: at the cap it may be closed like an idle one.
    Trailing,
    /// Output queued that the client is not taking: the send timeout since the last progress.
    Send,
    /// Closing: our FIN is sent, the client's leftover input is being drained.
    Linger,
    /// A program is answering: its wall time (`cgi_timeout_ms`) is the deadline.
    Gateway,
}

#[derive(Debug)]
pub(crate) struct Conn<T> {
    pub io: T,
    pub session: Session,
    /// The client has shut down its side.
    pub eof: bool,
    pub phase: Phase,
    pub deadline: Instant,
    /// When the protocol's own clock is next due, whatever the phase (`Session::clock`): the
    /// sweep then calls `Session::expire`, and the connection goes on.
    pub protocol_due: Option<Instant>,
    /// Since when the connection has been in [`Phase::Trailing`].
    answered_at: Instant,
    /// The programs (or FastCGI requests) answering its requests, by stream (0 on HTTP/1.1:
    /// at most one).
    pub programs: Programs<http2::StreamId>,
}

/// Bytes this thread's sockets have taken (written, sent from files): a flush made progress when
/// this grew, whatever the transport buffered on the way.
fn kernel_took(st: &ServerStats) -> u64 {
    st.written_bytes + st.sendfile_bytes
}

impl<T: Transport> Conn<T> {
    pub fn accept(
        sock: TcpStream,
        peer: SocketAddr,
        env: &mut T::Env,
        now: Instant,
        deadline: Instant,
        token: usize,
    ) -> io::Result<Conn<T>> {
        Ok(Conn {
            io: T::new(sock, env)?,
            session: Session::new(peer, now),
            eof: false,
            phase: Phase::Head,
            deadline,
            protocol_due: None,
            answered_at: now,
            // Its slot in the event loop: its programs' pipes are registered under it.
            programs: Programs::new(token),
        })
    }

    /// Since when the connection has waited for a request with nothing of one in hand: idle
    /// between requests, or accepted (over TLS, possibly past its handshake) and silent since.
    /// Such a connection may be closed to admit a new one at the connection cap; `None` while
    /// a request is under way (a head or body arriving, a response queued, or a response body
    /// the client paces still to be sent). What only trails its responses does not count
    /// ([`Phase::Trailing`]): a request the client never finishes, answered whole, holds nothing.
    pub fn waiting_since(&self, keepalive: Duration) -> Option<Instant> {
        let s = &self.session;
        if s.queued > 0
            || s.has_input()
            || s.busy()
            || !self.programs.is_empty()
            || self.io.has_output()
        {
            return None;
        }
        match self.phase {
            Phase::Idle => Some(
                self.deadline
                    .checked_sub(keepalive)
                    .unwrap_or(self.deadline),
            ),
            Phase::Head if !s.served => Some(s.head_since),
            Phase::Trailing => Some(self.answered_at),
            _ => None,
        }
    }

    /// Moves the connection forward as far as it can go without blocking: read what is there,
    /// answer every complete request, write. Returns false when it is to be closed now.
    pub fn drive(&mut self, w: &mut Worker, env: &mut T::Env, pool: &mut Pool) -> bool {
        if self.phase == Phase::Linger {
            return self.drain_input(w, pool);
        }
        let answered_before = w.stats.requests;
        loop {
            // No input is taken while the queued output is at its bound: whatever the protocol,
            // a client that reads nothing cannot make its session queue more by sending more.
            let room = self.session.queued < w.max_pipeline;
            if room && self.io.may_read() && !self.eof && self.session.wants_input() {
                let space = self.session.input_space(pool);
                match self.io.read(env, space, &mut w.stats) {
                    Ok(0) => self.eof = true,
                    Ok(n) => self.session.received(n, w.now),
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    // A signal (a program's SIGCHLD, with a handler somewhere in the process):
                    // the read is tried again, never taken for the client's error.
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => match self.io.refused_plain_http() {
                        Some(n) => self.session.refuse_plain_http(n, w),
                        None => return false,
                    },
                }
            }
            let limited = self.session.answer(w, pool, self.io.negotiated());
            if !self.session.launches.is_empty() {
                // The list goes back, its room kept for the next requests.
                let mut launches = std::mem::take(&mut self.session.launches);
                (self.programs).start_all(&mut launches, &mut self.session, w, pool);
                if self.session.launches.is_empty() {
                    self.session.launches = launches;
                }
            }
            let pumped =
                !self.programs.is_empty() && self.programs.pump(&mut self.session, w, pool);
            if self.session.queued > 0 || self.io.has_output() {
                let before = kernel_took(&w.stats);
                match self.io.flush(env, &mut self.session, &mut w.stats) {
                    // (Its held log lines are written as it closes.)
                    Err(_) => return false,
                    Ok(Flushed::Blocked) => {
                        // Held log lines of responses now written whole (HTTP/1.1).
                        self.session.settle_held(w);
                        // The send timeout counts from the last progress, not the last event (a
                        // client sending more input while reading nothing does not extend it),
                        // and progress is bytes the kernel took: output moved into a transport's
                        // own buffer (sealed into TLS records) has not been sent.
                        if let Some(due) = self.programs.programs_due() {
                            // The program's wall time covers a client that reads slowly.
                            self.phase = Phase::Gateway;
                            self.deadline = due;
                        } else if self.phase != Phase::Send || kernel_took(&w.stats) > before {
                            self.phase = Phase::Send;
                            self.deadline = w.now + w.timeouts.send;
                        }
                        return true;
                    }
                    Ok(Flushed::All) => self.session.settle_held(w),
                }
            }
            // A program's response is still to come: the close waits for it.
            if self.session.close_after && self.programs.is_empty() {
                return self.close_gracefully(w, env, pool);
            }
            let can_read = self.session.queued < w.max_pipeline
                && self.io.may_read()
                && !self.eof
                && self.session.wants_input();
            if !can_read && !limited && !pumped {
                break;
            }
        }
        if self.eof {
            // Every complete request is answered and written; what is left is a partial head,
            // or programs still working for a client that closed: they are killed with the
            // connection, as nginx abandons an upstream request when its client goes (499).
            return false;
        }
        // A body's clock stops while the server is not reading because its output is blocked.
        let restart = self.phase == Phase::Send;
        // The protocol's own deadline runs beside the connection's, whatever its phase. Its
        // clocks stop only while no input is taken (the queue at its bound): a connection in
        // the send phase may be waiting for the client's flow-control window while it reads on.
        let stalled = self.session.queued >= w.max_pipeline;
        let clock = self.session.clock(w, stalled);
        self.protocol_due = clock.due;
        if let Some(due) = self.programs.programs_due() {
            self.phase = Phase::Gateway;
            self.deadline = due;
        } else {
            match self.session.wait(w, restart, clock) {
                // A body being dropped has its own deadline (a total and a gap,
                // `protocol/body.rs`), not the keep-alive one.
                Wait::Body(due) => {
                    self.phase = Phase::Body;
                    self.deadline = due;
                }
                // Output paced by the client's flow control: the socket need never block, yet
                // output is pending. The send timeout runs from its last progress.
                Wait::Paced { moved } => {
                    if self.phase != Phase::Send || moved {
                        self.phase = Phase::Send;
                        self.deadline = w.now + w.timeouts.send;
                    }
                }
                // A head is due within the header timeout of its first byte, however it
                // trickles.
                Wait::Head(due) => {
                    self.phase = Phase::Head;
                    self.deadline = due;
                }
                // Every response is out, and what still arrives is due by the protocol's own
                // clock (the sweep acts on it, and the connection goes on). Meanwhile the
                // connection is not idle, whatever the keep-alive timeout: what arrives after
                // its response never answers a request, so would never extend it. Yet it holds
                // nothing: at the cap it is closed like an idle one (`waiting_since`).
                Wait::Trailing(due) => {
                    if self.phase != Phase::Trailing {
                        self.phase = Phase::Trailing;
                        self.answered_at = w.now;
                    }
                    self.deadline = due;
                }
                // Idle since the last response (an event that answered nothing does not extend
                // it).
                Wait::Idle => {
                    if self.phase != Phase::Idle || w.stats.requests != answered_before {
                        self.phase = Phase::Idle;
                        self.deadline = w.now + w.timeouts.keepalive;
                    }
                }
            }
        }
        self.session.release_idle(pool);
        true
    }

    /// The last response is written. A bare `close` is right when the client has nothing more
    /// in flight. But closing a socket whose receive queue holds unread bytes (or that receives
    /// bytes afterwards) makes Linux send RST instead of FIN, and an RST can make the client's
    /// kernel discard our response before the client reads it: a client still sending a body it
    /// was told was too large would see "connection reset" instead of its 413. So in that case:
    /// shutdown (write) so the FIN follows the response, then read and discard until the client
    /// closes, for at most `LINGER`.
    fn close_gracefully(&mut self, w: &mut Worker, env: &mut T::Env, pool: &mut Pool) -> bool {
        if self.eof {
            return false;
        }
        if !(self.session.linger || self.io.may_read()) {
            self.io.closing(env, &mut w.stats);
            return false;
        }
        w.stats.lingering_closes += 1;
        if self.io.shutdown_write(env, &mut w.stats).is_err() {
            return false;
        }
        self.phase = Phase::Linger;
        self.deadline = w.now + LINGER.min(w.timeouts.header);
        self.io.readable(false);
        self.drain_input(w, pool)
    }

    /// Reads and discards until the client's FIN (then close) or until the socket is drained.
    /// What the spawner made of a program this connection asked for (`Programs::program_spawned`):
    /// given back if no request of the connection waits for it any more.
    pub fn program_spawned(
        &mut self,
        s: Spawned,
        w: &mut Worker,
        pool: &mut Pool,
    ) -> Option<Spawned> {
        self.programs.program_spawned(&mut self.session, s, w, pool)
    }

    /// Kills the programs past their wall time (the sweep's part).
    pub fn expire_programs(&mut self, w: &mut Worker, pool: &mut Pool) {
        self.programs.expire_programs(&mut self.session, w, pool);
    }

    /// The connection is closing: its programs are killed, their requests logged as abandoned.
    pub fn abandon_programs(&mut self, w: &mut Worker, pool: &mut Pool) {
        self.programs.abandon_programs(&mut self.session, w, pool);
    }

    fn drain_input(&mut self, w: &mut Worker, pool: &mut Pool) -> bool {
        let b = self.session.bufs.get_or_insert_with(|| pool.take());
        while self.io.may_read() {
            match self.io.discard(&mut b.input[..], &mut w.stats) {
                Ok(0) => return false,
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return false,
            }
        }
        true
    }
}
