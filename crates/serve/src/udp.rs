//! The UDP side of HTTP/3: one socket per event-loop thread on the TCP port's address and
//! number, and the loop's driving of it (`protocol/h3.rs` answers what comes in).
//!
//! The sockets share the port with `SO_REUSEPORT` (when there is more than one thread): the
//! kernel hands each datagram to one of them by a hash of its 4-tuple, so every datagram of
//! a client address lands on the same thread for as long as the group does not change (all
//! are bound before any thread runs, and none closes until every loop has ended). That keeps
//! a QUIC connection on the thread that accepted it, except for a client whose address or port
//! changes (a NAT rebinding; active migration is refused in the transport parameters): the
//! hash would send it to another thread, which does not know its connection ID and drops its
//! packets. The connection IDs a thread issues begin with its index
//! (`http3::ServerConfig::thread`), so only the thread holding a connection answers for it
//! with a stateless reset (another thread sending it would give the connection's token to
//! whoever copied its ID), and a classic BPF program attached to the group
//! (`SO_ATTACH_REUSEPORT_CBPF`, `udp/steer.rs`) hands a short-header packet to the socket of
//! the thread its connection ID names, whatever address it came from: the rebound client
//! keeps its connection (quiche validates the new path and moves to it; up to seven such
//! changes a connection, docs/serve.md). Long headers (a client's Initial and Handshake)
//! still go by the hash, so a client's first Initial goes where its hash says, not to the
//! least busy thread. Each thread attaches the same program to the group as its loop starts, after
//! every socket is bound (the group holds one program; each call replaces it by the same). A
//! kernel that refuses it (before 4.5, a sandbox) leaves the hash, counted in `h3_steer_off`
//! (sockets of a group without the program) and said in one line by thread 0, never an
//! error; `h3_steer = false`, or `FLINT_H3_NO_STEER` set in the environment at start (to
//! anything), does the same. One thread: no group, nothing to attach.
//!
//! The group is guarded as the TCP listeners' is (`listeners.rs`): the first socket is bound
//! without `SO_REUSEPORT`, so a socket already on the port (any program's, sharing or not) is
//! "Address already in use" rather than a group this server would silently join and split
//! datagrams with; only then is `SO_REUSEPORT` set on it, and the other threads' sockets join.
//! A program of the same user binding the port with `SO_REUSEPORT` after that could still
//! join (as with TCP); the TCP port is bound first, so a second `flint serve` fails there.
//!
//! Per loop turn: every datagram the socket holds is read and handed to the connections (a
//! readable event), then the requests are answered, then every datagram to send is sent; a
//! send that finds the socket's buffer full keeps its datagram until the socket is writable.
//! QUIC's timers are folded into the loop's poll timeout ([`Quic::deadline`]). QUIC's pacing
//! time is not waited for (as in flint bench): on loopback and in a LAN the congestion window
//! holds a sender back.
//!
//! Sending uses UDP GSO (generic segmentation offload, `UDP_SEGMENT`, Linux 4.18): the
//! datagrams the connections give one after another for the same peer, all of one size but
//! the last (which may be shorter), are written side by side in one buffer and go in one
//! `sendmsg` whose control message tells the kernel the size to cut them at; up to 64 of them
//! and 65,507 bytes. A datagram for another peer, or larger than the first, ends the batch
//! and starts the next. A batch the kernel refuses goes one datagram a call: `EINVAL` (the
//! segment and its headers exceed the MTU learnt for that destination, which a forged ICMP
//! "fragmentation needed" can lower) or `EIO` (a route's device that cannot segment, IPsec)
//! on any send; `GSO_REFUSALS` (8) of those in a row, or one `ENOPROTOOPT` / `EOPNOTSUPP` (the
//! kernel lacks it), turn GSO off for the socket, which then sends one datagram a call. A
//! kernel older than 4.18 would ignore the control message (the batch one fragmented
//! datagram, lost): a socket on which `getsockopt(SOL_UDP, UDP_SEGMENT)` fails never uses
//! GSO. `h3_gso_off` in the stats counts the sockets without it; `FLINT_H3_NO_GSO` set in the
//! environment at start (to anything) turns it off too. `h3_datagrams_sent` counts datagrams,
//! `h3_send_calls` the system calls (`http3::udp::gso`).
//!
//! Reading goes many datagrams a call (`http3::udp::recv`): one `recvmmsg` takes up to 16
//! messages, from any peers, and with UDP GRO (`UDP_GRO`, Linux 5.0) a message may hold
//! several datagrams of one peer that the kernel coalesced (a peer's GSO batch does so on
//! loopback), cut apart at the size its control message says before the connections see
//! them; the buffers (16 of 64 KiB) are the socket's, made once, at its first read (a thread
//! no HTTP/3 client talks to holds none). A read that gets fewer messages than its call asked
//! for emptied the socket: no further call to hear `EAGAIN`.
//! What a readable event reads is budgeted in bytes, not datagrams (a GRO message of 64 KiB
//! is one message): the connections answer after each 64 messages or 96,000 bytes (64
//! full-size datagrams; the call that reaches it may pass it), and the event gives the
//! loop back after 16 of those or 1,536,000 bytes, passed by less than one message, since
//! a call asks for no more messages than the bytes left could fill at 64 KiB each. Where
//! `recvmmsg` is refused (`ENOSYS`, `EPERM`: an old kernel, a sandbox) the socket reads one
//! message a `recvmsg` (`h3_recvmmsg_off`); where `UDP_GRO` is (a kernel before 5.0), or with
//! `FLINT_H3_NO_GRO` set at start, one datagram a message (`h3_gro_off`).
//! `h3_datagrams_received` over `h3_recv_calls` is the datagrams per call. On the 1 KiB
//! load of bench/h3.sh the receive system calls were about 1.6% of the server's CPU before
//! (quiche, its allocations and the sends are the rest): batching them is no large win there.

use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Instant;

use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};

use crate::gateway::spawner::Spawned;
use crate::protocol::{Worker, H3};

mod steer;

use http3::udp::gso::{fill_batch, kernel_segments, send_step, Batch, Gso, Step};
use http3::udp::gso::{GSO_BYTES, NO_GSO_ENV};
use http3::udp::recv::{Receiver, NO_GRO_ENV};
use steer::NO_STEER_ENV;

/// Messages read before the connections are asked what to answer (with [`BATCH_BYTES`]): a
/// flood of them does not keep responses waiting until the socket is empty.
const BATCH: usize = 64;
/// Bytes read before the connections are asked what to answer: 64 full-size QUIC datagrams.
/// A batch stops at the first call that reaches it; that call may pass it (it asks for up to
/// 16 messages, and a GRO message holds up to 64 KiB), within [`EVENT_BYTES`].
const BATCH_BYTES: usize = 64 * http3::MAX_DATAGRAM;
/// Batches read for one event before the loop's other work (TCP connections, timers) gets a
/// turn; the rest are read on the next turn, which then does not sleep.
const BATCHES: usize = 16;
/// Bytes one readable event reads at most (less than one message's buffer past it): each call
/// asks for no more messages than the bytes left could fill at 64 KiB each (at least one), so
/// coalesced GRO messages do not multiply what an event reads by the datagrams they hold.
const EVENT_BYTES: usize = BATCHES * BATCH_BYTES;

/// `n` UDP sockets on `addr`, non-blocking, sharing it with `SO_REUSEPORT` when `n > 1`; the
/// first is bound before it shares, so a port another socket holds is `AddrInUse`.
pub(crate) fn bind(addr: SocketAddr, n: usize) -> io::Result<Vec<UdpSocket>> {
    let socket = || {
        let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
        s.set_nonblocking(true)?;
        Ok::<_, io::Error>(s)
    };
    let first = socket()?;
    first.bind(&addr.into())?;
    // Port 0: the others bind the port the kernel chose.
    let addr = first.local_addr()?;
    if n > 1 {
        first.set_reuse_port(true)?;
    }
    let mut all = Vec::with_capacity(n);
    all.push(first.into());
    for _ in 1..n {
        let s = socket()?;
        s.set_reuse_port(true)?;
        s.bind(&addr)?;
        all.push(s.into());
    }
    Ok(all)
}

/// Whether a thread attaches the steering program (`h3_steer`), and which thread of how many
/// it is (for the line that says the kernel refused it).
pub(crate) struct Steering {
    pub on: bool,
    pub thread: usize,
    pub threads: usize,
}

/// Attaches the steering program to the group of `socket` (which shares its port), unless
/// `h3_steer` is false or `FLINT_H3_NO_STEER` is set; whether it is attached. A refusal is
/// one line of the error log, from thread 0 alone: every thread attaches to the one group and
/// meets the same kernel.
fn steer(socket: &UdpSocket, steering: &Steering) -> bool {
    if !steering.on || std::env::var_os(NO_STEER_ENV).is_some() {
        return false;
    }
    match steer::attach(socket.as_raw_fd(), http3::CID_LEN as u32) {
        Ok(()) => true,
        Err(e) => {
            if steering.thread == 0 {
                let _ = writeln!(
                    io::stderr(),
                    "flint serve: HTTP/3 on {} threads: the kernel refused the steering program \
                     (SO_ATTACH_REUSEPORT_CBPF: {e}); the 4-tuple hash alone picks the thread, \
                     so a client whose port changes loses its connection (h3_steer_off)",
                    steering.threads
                );
            }
            false
        }
    }
}

/// One thread's UDP socket and its HTTP/3 connections.
pub(crate) struct Quic {
    socket: mio::net::UdpSocket,
    h3: H3,
    /// Receiving: the buffers of `recvmmsg` and GRO.
    rx: Receiver,
    /// Datagrams to send, side by side ([`GSO_BYTES`]).
    out: Box<[u8]>,
    /// Datagrams written by the connections and not sent yet (one send's worth, or what the
    /// socket did not take: buffer full). Nothing more is asked of them until it has gone.
    held: Option<Batch>,
    /// A datagram written after `held` that could not join it (another peer, a larger size):
    /// where it is in `out`, its length and peer. It starts the next batch.
    carry: Option<(usize, usize, SocketAddr)>,
    /// Whether sends go with UDP GSO.
    gso: Gso,
    /// The socket may hold datagrams not read yet (the last event stopped at `BATCHES`): an
    /// edge-triggered poll would not report them again.
    unread: bool,
    /// The socket shares its port (`SO_REUSEPORT`: two threads or more) and the kernel did
    /// not take the steering program (or `h3_steer` is false, or `FLINT_H3_NO_STEER` was set).
    steer_off: bool,
}

impl Quic {
    /// Registers `socket` with the loop's poll under `token` and serves it with `config`,
    /// steering its group's packets as `steering` says.
    pub fn new(
        socket: UdpSocket,
        config: http3::ServerConfig,
        registry: &Registry,
        token: Token,
        steering: &Steering,
    ) -> io::Result<Quic> {
        let local = socket.local_addr()?;
        let gso = std::env::var_os(NO_GSO_ENV).is_none() && kernel_segments(socket.as_raw_fd());
        let rx = Receiver::new(socket.as_raw_fd(), std::env::var_os(NO_GRO_ENV).is_none());
        let steer_off = socket2::SockRef::from(&socket).reuse_port()? && !steer(&socket, steering);
        let mut socket = mio::net::UdpSocket::from_std(socket);
        registry.register(&mut socket, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Quic {
            socket,
            h3: H3::new(http3::Server::new(config, local)),
            rx,
            out: vec![0; GSO_BYTES].into_boxed_slice(),
            held: None,
            carry: None,
            gso: Gso::new(gso),
            unread: false,
            steer_off,
        })
    }

    /// The socket's event: what it holds read and answered, what is to send sent.
    pub fn on_event(&mut self, w: &mut Worker, readable: bool) {
        if !readable {
            self.h3.process(w);
            self.flush(w);
            return;
        }
        self.unread = true;
        let fd = self.socket.as_raw_fd();
        let mut left = EVENT_BYTES;
        for _ in 0..BATCHES {
            let h3 = &mut self.h3;
            let r = read_batch(&mut self.rx, fd, left, |d, from| h3.recv(d, from));
            left = left.saturating_sub(r.bytes);
            w.stats.h3_recv_calls += r.calls;
            w.stats.h3_datagrams_received += r.datagrams;
            self.h3.process(w);
            self.flush(w);
            if r.empty {
                self.unread = false;
                break;
            }
            if left == 0 {
                break;
            }
        }
    }

    /// Datagrams may be waiting unread: the loop's next poll must not sleep.
    pub fn unread(&self) -> bool {
        self.unread
    }

    /// Once a loop turn: what the last event left unread, QUIC's timers if due
    /// (retransmissions, acknowledgements, the idle timeout), then what they have to send.
    pub fn tick(&mut self, w: &mut Worker) {
        if self.unread {
            self.on_event(w, true);
        }
        let now = Instant::now();
        if self.h3.deadline().is_some_and(|d| d <= now) {
            self.h3.on_deadline(now);
            self.h3.process(w);
            self.flush(w);
        }
    }

    /// When [`Quic::tick`] is next due.
    pub fn deadline(&self) -> Option<Instant> {
        self.h3.deadline()
    }

    /// The socket, its connections dropped: kept open by the server until every loop has
    /// ended. Closing it while another thread drains would take it out of the group, and the
    /// kernel would move the group's last socket into its place: the steering program's
    /// indices would then name the wrong sockets for the last thread's connections.
    pub fn into_socket(self) -> mio::net::UdpSocket {
        self.socket
    }

    /// Connections open.
    pub fn connections(&self) -> usize {
        self.h3.connections()
    }

    /// Shutdown: GOAWAY, and each connection closed once its responses are out.
    pub fn shut_down(&mut self, w: &mut Worker) {
        self.h3.shut_down();
        self.h3.kill_programs();
        self.h3.process(w);
        self.flush(w);
    }

    /// An event of an HTTP/3 request's program (its pipes, its pidfd, its upstream socket:
    /// `h3::H3_TOKEN`): the programs moved, what they gave sent.
    pub fn drive_programs(&mut self, w: &mut Worker) {
        self.h3.drive_programs(w);
        // What reading a request body for them made known (its end).
        self.h3.process(w);
        self.flush(w);
    }

    /// Whether programs answer HTTP/3 requests (the sweep then runs for their wall time).
    pub fn has_programs(&self) -> bool {
        self.h3.has_programs()
    }

    /// A program the spawner started for an HTTP/3 request (given back if none waits for it).
    pub fn program_spawned(&mut self, s: Spawned, w: &mut Worker) -> Option<Spawned> {
        let left = self.h3.program_spawned(s, w);
        self.flush(w);
        left
    }

    /// The sweep: programs past their wall time killed, the others moved.
    pub fn expire_programs(&mut self, w: &mut Worker) {
        self.h3.expire_programs(w);
        self.flush(w);
    }

    /// The loop ends: every program killed, its request logged.
    pub fn abandon_programs(&mut self, w: &mut Worker) {
        self.h3.abandon_programs(w);
        self.flush(w);
    }

    /// The loop ends: the responses still held back logged (before the log's last flush).
    pub fn log_held(&mut self, w: &mut Worker) {
        self.h3.log_held(w);
    }

    pub fn publish(&self, w: &mut Worker) {
        self.h3.publish(&mut w.stats);
        // This thread's one socket.
        w.stats.h3_gso_off = u64::from(!self.gso.on);
        w.stats.h3_gro_off = u64::from(!self.rx.gro);
        w.stats.h3_recvmmsg_off = u64::from(!self.rx.batched);
        w.stats.h3_steer_off = u64::from(self.steer_off);
        // Messages the kernel cut short, dropped before the connections saw them.
        w.stats.h3_dropped += self.rx.truncated;
    }

    /// Sends every datagram the connections have, until the socket's buffer is full.
    fn flush(&mut self, w: &mut Worker) {
        let fd = self.socket.as_raw_fd();
        loop {
            if self.held.is_none() {
                self.held = self.next_batch();
            }
            if self.held.is_none() {
                return;
            }
            let socket = &self.socket;
            let one = |d: &[u8], to| socket.send_to(d, to);
            match send_step(&mut self.held, &self.out, &mut self.gso, fd, one) {
                Step::Sent(n) => {
                    w.stats.h3_send_calls += 1;
                    w.stats.h3_datagrams_sent += n;
                }
                Step::Blocked => {
                    // Kept: the writable event sends it.
                    w.stats.h3_send_blocked += 1;
                    return;
                }
                // A lost datagram is QUIC's to recover; the socket serves other peers.
                Step::Again | Step::Lost(_) => {}
            }
        }
    }

    /// The next datagrams to send (see [`fill_batch`]), from the connections.
    fn next_batch(&mut self) -> Option<Batch> {
        let h3 = &mut self.h3;
        fill_batch(&mut self.out, &mut self.carry, self.gso.on, |buf| {
            h3.send(buf).map(|d| (d.len, d.to))
        })
    }
}

/// What one batch of reads gave.
#[derive(Debug)]
struct BatchRead {
    /// Datagrams given to the connections.
    datagrams: u64,
    /// Their bytes.
    bytes: usize,
    /// System calls made (the last maybe one that found the socket empty).
    calls: u64,
    /// The socket was emptied.
    empty: bool,
}

/// Reads `rx`'s socket `fd` into `deliver` until it is empty, or [`BATCH`] messages or
/// [`BATCH_BYTES`] or `left` bytes came; each call asks for no more messages than the bytes
/// left could fill (at least one), so the batch reads less than `left` plus one message's
/// buffer.
fn read_batch(
    rx: &mut Receiver,
    fd: std::os::fd::RawFd,
    left: usize,
    mut deliver: impl FnMut(&mut [u8], SocketAddr),
) -> BatchRead {
    let mut b = BatchRead {
        datagrams: 0,
        bytes: 0,
        calls: 0,
        empty: false,
    };
    let mut messages = 0;
    while messages < BATCH && b.bytes < BATCH_BYTES.min(left) && !b.empty {
        let fill = left.saturating_sub(b.bytes) / rx.slot_bytes();
        let ask = fill.min(BATCH - messages);
        b.calls += 1;
        match rx.read(fd, ask, &mut deliver) {
            Ok(r) => {
                messages += r.messages;
                b.datagrams += r.datagrams as u64;
                b.bytes += r.bytes;
                // A non-blocking read that got fewer messages than its call asked for emptied
                // the socket: no call to hear EAGAIN (a datagram coming after is a new edge
                // for the poll). `asked` is the call's: 1 when `recvmmsg` was just refused.
                b.empty = r.messages < r.asked;
            }
            // WouldBlock, or an error that a retry would meet again.
            Err(_) => b.empty = true,
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;
    use http3::udp::{gso, recv};

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// A socket with `n` datagrams of `len` bytes queued from one peer, and a receiver of it.
    fn queued(n: usize, len: usize, rx: impl FnOnce(i32) -> Receiver) -> (UdpSocket, Receiver) {
        let s = UdpSocket::bind(loopback()).unwrap();
        let r = rx(s.as_raw_fd());
        let peer = UdpSocket::bind(loopback()).unwrap();
        // What one datagram of `len` bytes costs a receive queue, measured on a socket of its
        // own: the tests count calls, so all `n` must be queued before the first read.
        let probe = UdpSocket::bind(loopback()).unwrap();
        peer.send_to(&vec![0; len], probe.local_addr().unwrap())
            .unwrap();
        wait_queued(&probe);
        let each = rx_queue(&probe);
        assert!(each >= len, "one datagram queued: {each} bytes");
        for i in 0..n {
            peer.send_to(&vec![i as u8; len], s.local_addr().unwrap())
                .unwrap();
        }
        // A loopback send may return before its datagram is queued (the receive softirq
        // deferred to ksoftirqd): wait, bounded, until the queue holds all `n`.
        let end = std::time::Instant::now() + DELIVERY;
        while rx_queue(&s) < n * each {
            assert!(
                std::time::Instant::now() < end,
                "{n} datagrams queued within DELIVERY"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        (s, r)
    }

    /// The bytes queued to be read on `s` (the kernel's `rx_queue` in `/proc/net/udp`).
    fn rx_queue(s: &UdpSocket) -> usize {
        let local = format!("0100007F:{:04X}", s.local_addr().unwrap().port());
        let table = std::fs::read_to_string("/proc/net/udp").unwrap();
        let line = table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(local.as_str()))
            .expect("the socket is in /proc/net/udp");
        // "tx_queue:rx_queue", both hexadecimal.
        let queues = line.split_whitespace().nth(4).unwrap();
        usize::from_str_radix(queues.split(':').nth(1).unwrap(), 16).unwrap()
    }

    #[test]
    fn a_refused_recvmmsg_does_not_leave_the_queue_unread() {
        let (s, mut rx) = queued(5, 100, |fd| Receiver::new(fd, true));
        rx.refuse_recvmmsg = true;
        let mut got = Vec::new();
        let b = read_batch(&mut rx, s.as_raw_fd(), EVENT_BYTES, |d, _| got.push(d[0]));
        assert!(!rx.batched, "refused: one recvmsg a message");
        // The recvmsg asked for one message and got one: not the sign of an empty socket.
        assert_eq!(got, [0, 1, 2, 3, 4], "{b:?}");
        assert!(b.empty, "{b:?}");
        assert_eq!(
            (b.datagrams, b.calls),
            (5, 6),
            "the last call heard EAGAIN: {b:?}"
        );
    }

    #[test]
    fn a_batch_reads_no_more_bytes_than_are_left_but_one_message() {
        let slot = 2_000;
        let (s, mut rx) = queued(20, 1_000, |fd| Receiver::with_slot_bytes(fd, false, slot));
        let mut read = 0;
        for left in [5_000, 1, 3_500] {
            let b = read_batch(&mut rx, s.as_raw_fd(), left, |_, _| {});
            // At least `left` (rounded up to a datagram), less than one buffer past it.
            assert!(b.bytes >= left, "{left}: {b:?}");
            assert!(b.bytes < left + slot, "{left}: {b:?}");
            assert!(!b.empty, "{b:?}");
            read += b.datagrams;
        }
        // What is left of the 20 comes in the next batch, none lost.
        let b = read_batch(&mut rx, s.as_raw_fd(), EVENT_BYTES, |_, _| {});
        assert_eq!(b.datagrams, 20 - read, "{b:?}");
        assert!(b.empty, "{b:?}");
    }

    /// How long a test waits for a datagram sent on loopback: its send may return before it
    /// is queued at the receiver (the receive softirq deferred to ksoftirqd, or RPS moving it
    /// to another CPU), so an empty socket is not all there will be.
    const DELIVERY: std::time::Duration = std::time::Duration::from_secs(10);

    /// Blocks until `s` holds a datagram (not reading it), at most [`DELIVERY`].
    fn wait_queued(s: &UdpSocket) {
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(DELIVERY)).unwrap();
        s.peek(&mut [0u8; 1])
            .expect("a datagram queued within DELIVERY");
    }

    /// Nothing is left on `s`: a non-blocking read finds it empty.
    fn assert_empty(s: &UdpSocket) {
        s.set_nonblocking(true).unwrap();
        let e = s.recv(&mut [0u8; 1]).expect_err("nothing left");
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock, "{e}");
    }

    #[test]
    fn coalesced_messages_count_their_datagrams_in_one_call() {
        let s = UdpSocket::bind(loopback()).unwrap();
        let mut rx = Receiver::new(s.as_raw_fd(), true);
        assert!(rx.gro, "this kernel coalesces (5.0+)");
        let peer = UdpSocket::bind(loopback()).unwrap();
        let to = s.local_addr().unwrap();
        for _ in 0..3 {
            gso::send_segments(peer.as_raw_fd(), &[7; 10_000], 1_000, Some(to)).unwrap();
        }
        // Three sends of ten segments: three messages of ten datagrams, read in one call
        // unless the kernel had not queued them all yet.
        let (mut lens, mut messages) = (Vec::new(), 0);
        while lens.len() < 30 {
            wait_queued(&s);
            let r = (rx.read(s.as_raw_fd(), recv::SLOTS, |d, _| lens.push(d.len()))).unwrap();
            assert_eq!(r.datagrams, 10 * r.messages, "whole messages of ten: {r:?}");
            assert_eq!(r.bytes, 1_000 * r.datagrams, "{r:?}");
            // Fewer messages than asked: the socket is empty, no call to hear EAGAIN.
            assert!(r.messages < r.asked, "{r:?}");
            messages += r.messages;
        }
        assert_eq!(lens, [1_000; 30]);
        assert_eq!(messages, 3);
        assert_empty(&s);
    }

    #[test]
    fn a_port_another_socket_holds_is_refused_even_one_that_shares() {
        for n in [1, 2] {
            // A socket that would let others share the port (`SO_REUSEPORT`, same user).
            let other = Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::UDP)).unwrap();
            other.set_reuse_port(true).unwrap();
            other.bind(&loopback().into()).unwrap();
            let addr = other.local_addr().unwrap().as_socket().unwrap();
            let e = bind(addr, n).expect_err("the port is another socket's");
            assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{n} sockets: {e}");
        }
    }

    #[test]
    fn the_program_hands_a_short_header_to_the_socket_its_id_names() {
        let ours = bind(loopback(), 3).unwrap();
        let addr = ours[0].local_addr().unwrap();
        steer::attach(ours[0].as_raw_fd(), http3::CID_LEN as u32).expect("attach");
        // Each target index from 16 source ports, which the hash alone would spread over the
        // three sockets (all 48 on the one named: 3^-47 by chance).
        let mut packet = [0x40u8; 1 + http3::CID_LEN];
        for target in 0..3u16 {
            packet[1..3].copy_from_slice(&target.to_be_bytes());
            for _ in 0..16 {
                let client = UdpSocket::bind(loopback()).unwrap();
                client.send_to(&packet, addr).unwrap();
            }
        }
        // Each socket: the 16 its index names (waited for: loopback may deliver after the
        // send returned), then nothing more.
        let mut buf = [0u8; 64];
        for (i, s) in ours.iter().enumerate() {
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(DELIVERY)).unwrap();
            for k in 0..16 {
                let (n, _) = (s.recv_from(&mut buf))
                    .unwrap_or_else(|e| panic!("socket {i}: datagram {k} of 16: {e}"));
                assert_eq!(n, packet.len());
                assert_eq!(u16::from_be_bytes([buf[1], buf[2]]), i as u16, "socket {i}");
            }
            assert_empty(s);
        }
    }

    #[test]
    fn every_socket_of_the_group_holds_the_port() {
        let ours = bind(loopback(), 3).unwrap();
        let addr = ours[0].local_addr().unwrap();
        assert!(ours.iter().all(|s| s.local_addr().unwrap() == addr));
        assert!(UdpSocket::bind(addr).is_err(), "the port is the group's");
        let e = bind(addr, 2).expect_err("a second group");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
    }
}
