//! An HTTP/3 connection's datagrams: every one the socket holds handed to the client, then its
//! events acted on once (`next`: the page's streams, one flush); every datagram the client has
//! sent once its pacing time has come (`h3/pacing.rs`: those due now at once, the first due
//! later at its time, from the Webchild's timer), and QUIC's own
//! deadline (acknowledgements, loss recovery, the idle timeout) on the Webchild's timer beside
//! the connect and response timeouts.
//!
//! The system calls are flint serve's (`http3::udp`): reads go up to 16 messages a
//! `recvmmsg`, and the socket asks for UDP GRO, so one message holds a burst of the server's
//! datagrams (a 1 MiB download is about 750 of them); the buffers (1 MiB) are the thread's,
//! made at its first read, shared by its connections. Sends go with UDP GSO: the client's
//! datagrams of one size, one after another, in one `sendmsg` (up to [`SEND_DATAGRAMS`]; the
//! buffer is the Webchild's). Where the kernel refuses either, one datagram a call, counted in
//! `summary.http3` (`gro_off`, `gso_off`, `recvmmsg_off`) with the datagrams and the calls
//! (and `dropped`, messages the kernel cut short, as flint serve's `h3_dropped`);
//! `FLINT_H3_NO_GRO` and `FLINT_H3_NO_GSO` set at start turn them off as in flint serve.

use super::super::errors::connect_error;
use super::super::linger::Linger;
use super::super::page::Child;
use super::super::{ThreadState, NONE};
use super::pacing::{Pacer, Written};
use super::{State, H3};
use crate::stats::{ErrorKind, Packets};
use http3::udp::gso::{send_step, Batch, Gso, Step, NO_GSO_ENV};
use http3::udp::recv::{Receiver, NO_GRO_ENV, SLOTS};
use mio::net::UdpSocket;
use std::cell::RefCell;
use std::io;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, RawFd};
use std::rc::Rc;
use std::time::Instant;

/// Datagrams one GSO send of the client carries at most: its sends are acknowledgements and
/// requests, a few at a time, so the buffer is kept small (it is one a Webchild).
pub(super) const SEND_DATAGRAMS: usize = 10;

/// A thread's receiving buffers, shared by its connections (a read empties them into the
/// client before the next one).
pub(super) type ThreadReceiver = Rc<RefCell<Receiver>>;

thread_local! {
    static RECEIVER: ThreadReceiver = Rc::new(RefCell::new(Receiver::buffers()));
    /// GRO and GSO wanted: not turned off in the environment (read once a thread).
    static WANTED: (bool, bool) = (
        std::env::var_os(NO_GRO_ENV).is_none(),
        std::env::var_os(NO_GSO_ENV).is_none(),
    );
}

/// Whether sockets ask for GRO and send with GSO (`FLINT_H3_NO_GRO`, `FLINT_H3_NO_GSO`).
pub(super) fn wanted() -> (bool, bool) {
    WANTED.with(|w| *w)
}

/// This thread's receiving buffers (allocated at their first read).
pub(super) fn thread_receiver() -> ThreadReceiver {
    RECEIVER.with(Rc::clone)
}

/// A connection's sending side: the client's datagrams side by side for one GSO send, the
/// batch the socket has not taken yet, and whether its socket sends with GSO.
pub(super) struct Sender {
    /// [`SEND_DATAGRAMS`] datagrams' room, made once a Webchild.
    pub(super) out: Box<[u8]>,
    carry: Option<(usize, usize, SocketAddr)>,
    /// Datagrams written and not sent yet (the socket's buffer was full).
    pub(super) held: Option<Batch>,
    gso: Gso,
    /// The datagram kept for its pacing time, if any.
    pub(super) pacer: Pacer,
}

impl Sender {
    pub(super) fn new() -> Sender {
        Sender {
            out: vec![0; SEND_DATAGRAMS * http3::MAX_DATAGRAM].into_boxed_slice(),
            carry: None,
            held: None,
            gso: Gso::connected(false),
            pacer: Pacer::new(),
        }
    }

    /// A new socket: nothing held, GSO as `gso` says, pacing as `paced` does.
    pub(super) fn reset(&mut self, gso: bool, paced: bool) {
        self.carry = None;
        self.held = None;
        self.gso = Gso::connected(gso);
        self.pacer.reset(paced);
    }

    /// Whether the socket sends with GSO.
    pub(super) fn gso(&self) -> bool {
        self.gso.on
    }

    /// Sends what is left whatever its time: the batch held, the datagram kept for its pacing
    /// time, then every datagram the client (`send`) has, through `one` (to `fd`); until the
    /// client has nothing more, the socket's buffer is full or a send fails. At the end of the
    /// run (the linger's first step) the requests counted unfinished must reach the server.
    fn send_left(
        &mut self,
        fd: RawFd,
        mut one: impl FnMut(&[u8], SocketAddr) -> io::Result<usize>,
        mut send: impl FnMut(&mut [u8]) -> Option<Written>,
    ) {
        loop {
            if self.held.is_none() {
                let (out, carry, gso) = (&mut self.out, &mut self.carry, self.gso.on);
                match (self.pacer).fill(out, carry, gso, None, || NONE, &mut send) {
                    Some(b) => self.held = Some(b),
                    None => return,
                }
            }
            match send_step(&mut self.held, &self.out, &mut self.gso, fd, &mut one) {
                Step::Sent(_) | Step::Again => {}
                Step::Blocked | Step::Lost(_) => return,
            }
        }
    }
}

/// How a flush ended.
enum Flushed {
    /// The client has nothing more to send.
    All,
    /// The socket's buffer is full: what is held goes at the writable event.
    Blocked,
    /// A send failed (an ICMP error the socket held, no route): the connection ends.
    Failed(io::Error),
}

/// Datagrams and calls of one read or send.
#[derive(Default)]
struct Calls {
    datagrams: u64,
    calls: u64,
    /// Messages the kernel cut short (`MSG_TRUNC`, `MSG_CTRUNC`), dropped unread.
    dropped: u64,
}

/// Reads every datagram `fd` holds into `deliver` (the client's `recv`, from the connection's
/// peer: the socket is connected), through `rx`; the datagrams, calls and messages dropped,
/// or the socket's error (an ICMP error for a datagram sent).
fn read_all(
    rx: &RefCell<Receiver>,
    fd: RawFd,
    mut deliver: impl FnMut(&mut [u8]),
) -> (Calls, io::Result<()>) {
    let mut rx = rx.borrow_mut();
    let mut c = Calls::default();
    // The thread's count, of all its connections: this read's are what it adds.
    let truncated = rx.truncated;
    let result = loop {
        c.calls += 1;
        // An error here ends the connection: `closed` says why.
        match rx.read(fd, SLOTS, |d, _| deliver(d)) {
            Ok(r) => {
                c.datagrams += r.datagrams as u64;
                // Fewer messages than asked: the socket is empty, no call to hear EAGAIN.
                if r.messages < r.asked {
                    break Ok(());
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break Ok(()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => break Err(e),
        }
    };
    c.dropped = rx.truncated - truncated;
    (c, result)
}

impl H3 {
    /// Reads every datagram waiting, then acts on what they brought.
    pub(super) fn on_readable(
        &mut self,
        ch: &mut Child,
        cx: &mut ThreadState<'_>,
        buf: &mut [u8],
        now: u64,
    ) {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return;
        };
        let peer = self.peer;
        let deliver = |d: &mut [u8]| drop(client.recv(d, peer));
        let (calls, read) = read_all(&self.rx, sock.as_raw_fd(), deliver);
        if cx.counts(now, now) {
            let h = &mut cx.stats.http3;
            h.datagrams_received += calls.datagrams;
            h.recv_calls += calls.calls;
            h.dropped += calls.dropped;
        }
        // An ICMP error for a datagram sent (port unreachable: nothing listens).
        if let Err(e) = read {
            let kind = match self.state {
                State::Handshaking => connect_error(&e),
                _ => ErrorKind::Reset,
            };
            return self.conn_failed(ch, cx, kind, now);
        }
        let Some(client) = &mut self.client else {
            return;
        };
        if self.state == State::Handshaking && client.is_ready() {
            self.handshake_done(ch, cx, now);
        }
        if self.state == State::Open && !self.on_events(ch, cx, buf, now) {
            return;
        }
        if self.client.as_ref().is_some_and(http3::Client::is_closed) {
            return self.closed(ch, cx, now);
        }
        self.next(ch, cx, now);
    }

    /// What follows a read, a timer or a page's start: more streams (or the page's end), the
    /// datagrams they make sent, the timer set.
    pub(super) fn next(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
        if self.state == State::Open || self.sends_early() {
            self.fill(ch, cx, now);
        }
        if !matches!(self.state, State::Idle | State::Backoff) && self.flush(ch, cx, now) {
            self.arm(ch, cx);
        }
    }

    /// Sends every datagram the client has; false if the connection failed (and that was
    /// handled). Once the client has nothing more to send, the requests it took are out whole.
    pub(super) fn flush(&mut self, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return true;
        };
        let (fd, tx, base) = (sock.as_raw_fd(), &mut self.tx, self.base);
        // Paced while a page is in progress; between pages the timer is the page logic's, so
        // what is left (acknowledgements) goes now rather than at the next page.
        let paced_at = (self.busy && tx.pacer.on).then_some(now);
        let mut c = Calls::default();
        let ended = loop {
            if tx.held.is_none() {
                // The datagram kept for its time leads the next batch once due. `now` was read
                // at the event's start: one that seems due later is checked on the clock again.
                let clock = || us_since(base, Instant::now());
                let send = |b: &mut [u8]| {
                    let d = client.send(b)?;
                    Some((d.len, d.to, us_since(base, d.at)))
                };
                match (tx.pacer).fill(&mut tx.out, &mut tx.carry, tx.gso.on, paced_at, clock, send)
                {
                    Some(b) => tx.held = Some(b),
                    None => break Flushed::All,
                }
            }
            // The socket is connected: one datagram goes with `send`.
            let one = |d: &[u8], _| sock.send(d);
            let step = send_step(&mut tx.held, &tx.out, &mut tx.gso, fd, one);
            // A batch is held: every outcome is a system call's (interrupted, refused and
            // failed ones too).
            c.calls += 1;
            match step {
                Step::Sent(n) => c.datagrams += n,
                // The socket's buffer is full: the batch waits for a writable event.
                Step::Blocked => break Flushed::Blocked,
                Step::Again => {}
                Step::Lost(e) => break Flushed::Failed(e),
            }
        };
        if cx.counts(now, now) {
            let h = &mut cx.stats.http3;
            h.datagrams_sent += c.datagrams;
            h.send_calls += c.calls;
        }
        match ended {
            // The client took the requests whole; what is held or kept goes at the writable
            // event, the pacing time or, at the latest, the linger's first step.
            Flushed::All | Flushed::Blocked => {}
            Flushed::Failed(e) => {
                let kind = match self.state {
                    State::Handshaking => connect_error(&e),
                    _ => ErrorKind::Io,
                };
                self.conn_failed(ch, cx, kind, now);
                return false;
            }
        }
        // Every request whose header block the client has taken is written now, a datagram
        // kept or not, its body sent whole or not (as over HTTP/2, where a request is written
        // when its HEADERS leave): a response can only come after the flush that took its
        // head, so no time to first byte counts from NONE, even the answer of a server that
        // did not wait for the body; `at_end` counts it unfinished once its body is taken
        // whole too (part of it may still be in quiche: the linger sends after each read,
        // within its bound, and that gets it out), else not sent (the linger cancels it).
        for s in (self.flight.iter_mut()).filter(|s| s.ex.written_us == NONE) {
            s.ex.written_us = now;
        }
        true
    }

    /// QUIC's deadline, if it has passed by `now`.
    pub(super) fn service_deadline(&mut self, now: u64) {
        let base = self.base;
        if let Some(client) = &mut self.client {
            if client.deadline().is_some_and(|d| us_since(base, d) <= now) {
                client.on_deadline();
            }
        }
    }

    /// The Webchild's timer at the earliest of QUIC's deadline, a datagram's pacing time, the
    /// connect timeout (while the handshake is under way), the oldest stream's response
    /// timeout, the wait for the server to allow a stream and, with lanes, the next open-loop
    /// slot or thinking lane's end. Between pages the timer is the page logic's: not touched.
    pub(super) fn arm(&mut self, ch: &Child, cx: &mut ThreadState<'_>) {
        if !self.busy {
            return;
        }
        if self.state == State::Backoff {
            return cx.timers.arm(ch.slot, self.backoff_until);
        }
        let schedule = &cx.sh.schedule;
        let quic = self
            .client
            .as_ref()
            .and_then(http3::Client::deadline)
            .map_or(NONE, |d| us_since(self.base, d));
        let connect = match self.state {
            State::Handshaking => self.connect_start_us + schedule.connect_timeout_us,
            _ => NONE,
        };
        // Streams sent in 0-RTT exist while the handshake goes on, but their deadlines are
        // looked at (`timed_out`) only once it is done: armed now, a response timeout
        // shorter than the connect timeout would fire in the past again and again. The
        // connect timeout bounds them meanwhile.
        // The oldest stream's bound (`oldest_us`), no scan of the table.
        if self.flight.is_empty() {
            self.oldest_us = NONE;
        }
        let response = match self.oldest_us.min(self.no_room_since) {
            _ if self.state == State::Handshaking => NONE,
            NONE => NONE,
            since => since + schedule.response_timeout_us,
        };
        let paced = self.tx.pacer.due_at();
        // Lanes: the next open-loop slot or the end of a lane's think time (`fill`).
        let lanes = self.lane_wake_us;
        let at = quic.min(paced).min(connect).min(response).min(lanes);
        cx.timers.arm(ch.slot, at);
    }

    /// The connection's packets since they were last taken, into the statistics of `now`'s
    /// window.
    pub(super) fn take_packets(&mut self, cx: &mut ThreadState<'_>, now: u64) {
        let Some(client) = &self.client else { return };
        let s = self.at_end_stats.unwrap_or_else(|| client.stats());
        let total = Packets {
            sent: s.packets_sent,
            received: s.packets_received,
            lost: s.packets_lost,
            retransmitted: s.retransmitted,
            bytes_sent: s.bytes_sent,
            bytes_received: s.bytes_received,
        };
        let delta = total.since(&self.counted);
        self.counted = total;
        let sh = cx.sh;
        if now >= sh.schedule.measure_us && now <= sh.schedule.end_us {
            cx.stats.http3.add_packets(&delta);
        }
    }

    /// One step of the close after the end of the run: the first cancels the uploads cut short
    /// and sends what is left (held, or kept for its pacing time: requests counted
    /// unfinished); each then reads what the server sends and hands it to the client, only for
    /// a GOAWAY (its streams were never processed), and sends what the client has then
    /// (acknowledgements, and a cancel the congestion window held back: an upload fills it,
    /// and only the server's acknowledgements make room); nothing is counted. The connection
    /// waits so until the loop's linger bound, so that the server has the requests sent and
    /// answers them before it hears the connection close.
    pub(super) fn linger_step(&mut self, at: Linger) -> Linger {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return Linger::Done;
        };
        if self.at_end_stats.is_none() {
            self.at_end_stats = Some(client.stats());
        }
        // QUIC's deadline (the linger wakes the connection for it): a packet lost is sent again.
        if client.deadline().is_some_and(|d| d <= Instant::now()) {
            client.on_deadline();
        }
        if at == Linger::Flushing {
            // An upload whose body the client had not taken whole is not sent: its request
            // side is reset (H3_REQUEST_CANCELLED) before anything more goes, so that the
            // server drops what it has of it (and quiche the rest it holds) rather than
            // seeing the body stop short; the head alone never goes if it had not yet.
            for (_, s) in (self.flight.iter()).filter(|(_, s)| s.body_left() > 0) {
                let _ = client.reset_request(s.id, http3::H3_REQUEST_CANCELLED);
            }
            // What is held or kept for its pacing time carries requests counted unfinished.
            send_now(&mut self.tx, sock, client, self.base);
        }
        let peer = self.peer;
        let deliver = |d: &mut [u8]| drop(client.recv(d, peer));
        if read_all(&self.rx, sock.as_raw_fd(), deliver).1.is_err() {
            return Linger::Done;
        }
        while let Some(ev) = client.poll() {
            match ev {
                http3::ClientEvent::GoAway { id } => {
                    self.late_goaway = Some(self.late_goaway.map_or(id, |g| g.min(id)));
                }
                // Rejected after the end: never processed (`at_end`).
                http3::ClientEvent::Reset {
                    stream,
                    code: http3::H3_REQUEST_REJECTED,
                } => {
                    if let Some(s) = self.flight.by_key(stream) {
                        s.rejected_late = true;
                    }
                }
                _ => {}
            }
        }
        send_now(&mut self.tx, sock, client, self.base);
        match client.is_closed() {
            true => Linger::Done,
            false => match at {
                Linger::Flushing => Linger::Draining,
                other => other,
            },
        }
    }

    /// Tells the server the connection ends (CONNECTION_CLOSE with H3_NO_ERROR), one datagram
    /// sent if the socket takes it now.
    pub(super) fn say_goodbye(&mut self) {
        let (Some(sock), Some(client)) = (&self.sock, &mut self.client) else {
            return;
        };
        if client.is_closed() {
            return;
        }
        client.close(http3::H3_NO_ERROR, b"");
        // A batch not sent yet is dropped: the close is what the server needs.
        let out = &mut self.tx.out[..http3::MAX_DATAGRAM];
        if let Some(d) = client.send(out) {
            let _ = sock.send(&out[..d.len]);
        }
    }
}

/// Sends what `tx` holds and every datagram `client` has, whatever its pacing time (after the
/// end of the run: `H3::linger_step`).
fn send_now(tx: &mut Sender, sock: &UdpSocket, client: &mut http3::Client, base: Instant) {
    let send = |b: &mut [u8]| {
        let d = client.send(b)?;
        Some((d.len, d.to, us_since(base, d.at)))
    };
    tx.send_left(sock.as_raw_fd(), |d, _| sock.send(d), send);
}

/// `at` in µs since the run's base instant (0 for an instant before it).
fn us_since(base: Instant, at: Instant) -> u64 {
    at.saturating_duration_since(base).as_micros() as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;

    #[test]
    fn what_is_left_goes_at_the_end_whatever_its_pacing_time() {
        let to: SocketAddr = "127.0.0.1:443".parse().unwrap();
        // Datagrams of 100 bytes, the i-th filled with i and due at `due[i]`.
        let due = [1_000, 9_000, 9_100];
        let mut i = 0;
        let mut client = |b: &mut [u8]| {
            let at = *due.get(i)?;
            b[..100].fill(i as u8);
            i += 1;
            Some((100, to, at))
        };
        let mut tx = Sender::new();
        tx.reset(false, true);
        // A flush at 1,000: the first goes, the second is kept for 9,000.
        let mut carry = None;
        let batch = (tx.pacer).fill(
            &mut tx.out,
            &mut carry,
            false,
            Some(1_000),
            || 1_000,
            &mut client,
        );
        assert!(batch.is_some() && tx.out[0] == 0, "the first goes now");
        assert!(tx
            .pacer
            .fill(
                &mut tx.out,
                &mut carry,
                false,
                Some(1_000),
                || 1_000,
                &mut client
            )
            .is_none());
        assert_eq!(tx.pacer.due_at(), 9_000);
        // The run ends at 2,000: the one kept and the client's next go all the same.
        let mut sent = Vec::new();
        tx.send_left(
            -1,
            |d, _| {
                sent.push(d[0]);
                Ok(d.len())
            },
            &mut client,
        );
        assert_eq!(sent, [1, 2]);
        assert_eq!(tx.pacer.due_at(), NONE);
    }

    #[test]
    fn a_message_cut_short_is_counted_as_dropped_by_the_read_that_met_it() {
        let rx_sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        rx_sock.set_nonblocking(true).unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        tx.connect(rx_sock.local_addr().unwrap()).unwrap();
        let fd = rx_sock.as_raw_fd();
        // Messages of at most 100 bytes: a 300-byte datagram is cut short.
        let rx = RefCell::new(Receiver::with_slot_bytes(fd, false, 100));
        // Another connection's drop, earlier, on the thread's shared buffers.
        rx.borrow_mut().truncated = 5;
        for len in [50, 300, 60] {
            tx.send(&vec![1; len]).unwrap();
        }
        // A loopback send may return before the datagram is queued (the receive softirq left
        // to ksoftirqd on a busy machine): read until all three are accounted for, bounded.
        let (mut got, mut c) = (Vec::new(), Calls::default());
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while got.len() as u64 + c.dropped < 3 {
            assert!(
                Instant::now() < deadline,
                "three datagrams within 10 s: {got:?}"
            );
            let (more, r) = read_all(&rx, fd, |d| got.push(d.len()));
            r.unwrap();
            c.datagrams += more.datagrams;
            c.dropped += more.dropped;
            c.calls += more.calls;
            std::thread::yield_now();
        }
        assert_eq!(got, [50, 60]);
        assert_eq!((c.datagrams, c.dropped), (2, 1));
        assert!(c.calls >= 1);
    }
}
