//! The UDP side of HTTP/3: one socket per event-loop thread on the TCP port's address and
//! number, and the loop's driving of it (`protocol/h3.rs` answers what comes in).
//!
//! The sockets share the port with `SO_REUSEPORT` (when there is more than one thread): the
//! kernel hands each datagram to one of them by a hash of its 4-tuple, so every datagram of
//! a client address lands on the same thread for as long as the group does not change (all
//! are bound before any thread runs, and none closes until shutdown). That keeps a QUIC
//! connection on the thread that accepted it, with two limits written in docs/serve.md: a
//! client whose address or port changes (a NAT rebinding; active migration is refused in the
//! transport parameters) lands on another thread, which does not know its connection ID and
//! drops its packets (the client starts again at its idle timeout); and a client's first
//! Initial goes where its hash says, not to the least busy thread. The connection IDs a
//! thread issues begin with its index (`http3::ServerConfig::thread`), so only the thread
//! holding a connection answers for it with a stateless reset: another thread sending it
//! would give the connection's token to whoever copied its ID. A BPF program attached to the
//! group reading that index would lift the first limit; it is not done.
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
//! on any send; [`GSO_REFUSALS`] of those in a row, or one `ENOPROTOOPT` / `EOPNOTSUPP` (the
//! kernel lacks it), turn GSO off for the socket, which then sends one datagram a call. A
//! kernel older than 4.18 would ignore the control message (the batch one fragmented
//! datagram, lost): a socket on which `getsockopt(SOL_UDP, UDP_SEGMENT)` fails never uses
//! GSO. `h3_gso_off` in the stats counts the sockets without it; `FLINT_H3_NO_GSO` set in the
//! environment at start (to anything) turns it off too. `h3_datagrams_sent` counts datagrams, `h3_send_calls` the system calls. Reading is
//! still one `recvfrom` a datagram: no `recvmmsg` or GRO yet.

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use mio::{Interest, Registry, Token};
use socket2::{Domain, Protocol, Socket, Type};

use crate::gateway::spawner::Spawned;
use crate::protocol::{Worker, H3};

/// The largest datagram read: what a QUIC peer may send is at most 65,527 bytes of payload;
/// one larger than `http3::MAX_DATAGRAM` is not QUIC's, and a buffer this large reads it whole
/// rather than truncated (then the crate drops it).
const RECV_BUF: usize = 64 * 1024;
/// Datagrams read before the connections are asked what to answer: a flood of them does not
/// keep responses waiting until the socket is empty.
const BATCH: usize = 64;
/// Batches read for one event before the loop's other work (TCP connections, timers) gets a
/// turn; the rest are read on the next turn, which then does not sleep.
const BATCHES: usize = 16;
/// Datagrams one GSO send carries at most (the kernel's `UDP_MAX_SEGMENTS`).
const GSO_SEGMENTS: usize = 64;
/// Bytes one GSO send carries at most: the largest UDP payload over IPv4.
const GSO_BYTES: usize = 65_507;
/// GSO sends refused in a row (`EINVAL`, `EIO`) that turn GSO off for the socket: one is a
/// destination's MTU or route, not the kernel.
const GSO_REFUSALS: u32 = 8;
/// Set in the environment at start: every HTTP/3 socket sends one datagram a call.
const NO_GSO_ENV: &str = "FLINT_H3_NO_GSO";

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

/// One thread's UDP socket and its HTTP/3 connections.
pub(crate) struct Quic {
    socket: mio::net::UdpSocket,
    h3: H3,
    buf: Box<[u8]>,
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
}

impl Quic {
    /// Registers `socket` with the loop's poll under `token` and serves it with `config`.
    pub fn new(
        socket: UdpSocket,
        config: http3::ServerConfig,
        registry: &Registry,
        token: Token,
    ) -> io::Result<Quic> {
        let local = socket.local_addr()?;
        let gso = std::env::var_os(NO_GSO_ENV).is_none() && kernel_segments(socket.as_raw_fd());
        let mut socket = mio::net::UdpSocket::from_std(socket);
        registry.register(&mut socket, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Quic {
            socket,
            h3: H3::new(http3::Server::new(config, local)),
            buf: vec![0; RECV_BUF].into_boxed_slice(),
            out: vec![0; GSO_BYTES].into_boxed_slice(),
            held: None,
            carry: None,
            gso: Gso::new(gso),
            unread: false,
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
        for _ in 0..BATCHES {
            let mut read = 0;
            while read < BATCH {
                match self.socket.recv_from(&mut self.buf) {
                    Ok((n, from)) => {
                        read += 1;
                        self.h3.recv(&mut self.buf[..n], from);
                    }
                    // WouldBlock, or an error that a retry would meet again.
                    Err(_) => break,
                }
            }
            w.stats.h3_datagrams_received += read as u64;
            self.h3.process(w);
            self.flush(w);
            if read < BATCH {
                self.unread = false;
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

    /// Connections open.
    pub fn connections(&self) -> usize {
        self.h3.connections()
    }

    /// Shutdown: GOAWAY, and each connection closed once its responses are out.
    pub fn shut_down(&mut self, w: &mut Worker) {
        self.h3.shut_down();
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

    pub fn publish(&self, w: &mut Worker) {
        self.h3.publish(&mut w.stats);
        // This thread's one socket.
        w.stats.h3_gso_off = u64::from(!self.gso.on);
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
                Step::Again => {}
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

/// The next datagrams to send, written side by side from the start of `out`: the carried one
/// or `next`'s (it writes a datagram into the buffer it is given and says its length and
/// peer, None when it has no more), then (with `gso`) those that follow it for the same peer
/// at its size, the last of them maybe shorter; at most [`GSO_SEGMENTS`], and only while
/// `out` has room for one more of the largest. A datagram for another peer, or larger, is
/// kept in `carry` and starts the next batch; an empty one is skipped.
fn fill_batch(
    out: &mut [u8],
    carry: &mut Option<(usize, usize, SocketAddr)>,
    gso: bool,
    mut next: impl FnMut(&mut [u8]) -> Option<(usize, SocketAddr)>,
) -> Option<Batch> {
    const MAX: usize = http3::MAX_DATAGRAM;
    let (segment, to) = match carry.take() {
        Some((at, len, to)) => {
            out.copy_within(at..at + len, 0);
            (len, to)
        }
        None => loop {
            match next(&mut out[..MAX])? {
                (0, _) => continue,
                first => break first,
            }
        },
    };
    let mut end = segment;
    let mut count = 1;
    while gso && count < GSO_SEGMENTS && end + MAX <= out.len() {
        let Some((len, peer)) = next(&mut out[end..end + MAX]) else {
            break;
        };
        if len == 0 {
            continue;
        }
        if peer != to || len > segment {
            *carry = Some((end, len, peer));
            break;
        }
        end += len;
        count += 1;
        if len < segment {
            break;
        }
    }
    Some(Batch {
        start: 0,
        end,
        segment,
        to,
        single: false,
    })
}

/// What one send of a held batch did.
#[derive(Debug, PartialEq)]
enum Step {
    /// A call sent these datagrams.
    Sent(u64),
    /// The socket's buffer is full: the batch is kept.
    Blocked,
    /// Nothing sent (interrupted, refused, lost): what is left goes with the next call.
    Again,
}

/// One send call of `held` (datagrams in `out`) on `fd`: the whole batch with GSO when `gso`
/// is on and the batch has more than one, else its first datagram with `one`; `held` keeps
/// what is left. A batch GSO is refused for goes one datagram a call.
fn send_step(
    held: &mut Option<Batch>,
    out: &[u8],
    gso: &mut Gso,
    fd: RawFd,
    one: impl FnOnce(&[u8], SocketAddr) -> io::Result<usize>,
) -> Step {
    let Some(b) = *held else {
        return Step::Again;
    };
    let whole = gso.on && !b.single && b.end - b.start > b.segment;
    let sent = if whole {
        send_segments(fd, &out[b.start..b.end], b.segment as u16, b.to)
    } else {
        one(&out[b.start..b.end.min(b.start + b.segment)], b.to)
    };
    match sent {
        Ok(_) if whole => {
            gso.sent();
            *held = None;
            Step::Sent(b.datagrams())
        }
        Ok(_) => {
            *held = b.rest();
            Step::Sent(1)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Step::Blocked,
        // Interrupted: sent again.
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Step::Again,
        // The kernel, the destination's MTU or the route's device does not take this batch
        // whole: it goes one datagram a call (and maybe every batch after it).
        Err(e) if whole && gso.refused(&e) => {
            *held = Some(Batch { single: true, ..b });
            Step::Again
        }
        // Anything else (no route to the client) is lost packets, which QUIC recovers from or
        // times out on: a whole batch, or the one datagram (the rest go on).
        Err(_) => {
            *held = if whole { None } else { b.rest() };
            Step::Again
        }
    }
}

/// Datagrams side by side in `Quic::out[start..end]`, each `segment` bytes but the last, for
/// one peer.
#[derive(Clone, Copy)]
struct Batch {
    start: usize,
    end: usize,
    segment: usize,
    to: SocketAddr,
    /// Sent one datagram a call (a GSO send of it was refused).
    single: bool,
}

impl Batch {
    fn datagrams(&self) -> u64 {
        (self.end - self.start).div_ceil(self.segment) as u64
    }

    /// What is left once its first datagram has gone.
    fn rest(self) -> Option<Batch> {
        let start = self.start + self.segment;
        (start < self.end).then_some(Batch { start, ..self })
    }
}

/// Whether a socket sends with UDP GSO, and the refusals that turn it off.
struct Gso {
    on: bool,
    /// GSO sends refused since the last one taken.
    refused_in_a_row: u32,
}

impl Gso {
    fn new(on: bool) -> Gso {
        Gso {
            on,
            refused_in_a_row: 0,
        }
    }

    /// A GSO send was taken.
    fn sent(&mut self) {
        self.refused_in_a_row = 0;
    }

    /// A GSO send failed with `e`: whether that is a refusal of GSO (the batch then goes one
    /// datagram a call). `EINVAL` (segment and headers over the destination's MTU) and `EIO`
    /// (a route's device that cannot segment) are one destination's: GSO goes off after
    /// [`GSO_REFUSALS`] in a row; `ENOPROTOOPT` and `EOPNOTSUPP` are the kernel's: at once.
    fn refused(&mut self, e: &io::Error) -> bool {
        match e.raw_os_error() {
            Some(libc::ENOPROTOOPT | libc::EOPNOTSUPP) => {
                self.on = false;
                true
            }
            Some(libc::EIO | libc::EINVAL) => {
                self.refused_in_a_row += 1;
                if self.refused_in_a_row >= GSO_REFUSALS {
                    self.on = false;
                }
                true
            }
            _ => false,
        }
    }
}

/// Whether the kernel segments UDP sends on `fd` (`UDP_SEGMENT`, Linux 4.18): an older one
/// would ignore the control message and send a batch as one fragmented datagram.
fn kernel_segments(fd: RawFd) -> bool {
    let mut value: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: `value` and `len` are alive for the call, `len` says `value`'s size, and the
    // kernel writes at most that many bytes into it.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_SEGMENT,
            (&mut value as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    r == 0
}

/// One `sendmsg` of `data` to `to` that the kernel cuts into datagrams of `segment` bytes,
/// the last maybe shorter (a `UDP_SEGMENT` control message). Neither nix's `sendmsg` (it
/// allocates its control buffer each call) nor rustix (no `UDP_SEGMENT`) fits a hot path.
fn send_segments(fd: RawFd, data: &[u8], segment: u16, to: SocketAddr) -> io::Result<usize> {
    /// Room for one control message holding a `u16`, aligned as `cmsghdr` is.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let addr = socket2::SockAddr::from(to);
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = Control([0; 32]);
    // SAFETY: CMSG_SPACE and CMSG_LEN only compute sizes.
    let (space, len) = unsafe {
        (
            libc::CMSG_SPACE(size_of::<u16>() as u32) as usize,
            libc::CMSG_LEN(size_of::<u16>() as u32) as usize,
        )
    };
    debug_assert!(space <= control.0.len());
    // SAFETY: an all-zero msghdr is a valid one (no name, no data, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = addr.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = addr.len();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    // SAFETY: `msg_control` points at `space` bytes of `control`, aligned for `cmsghdr` and
    // zeroed, so CMSG_FIRSTHDR gives a header inside it (not null: `space` holds one), and
    // CMSG_DATA points `len - header` (2) bytes before its end, written unaligned.
    unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = len as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment);
    }
    // SAFETY: `msg` points at `addr`, `iov` (at `data`) and `control`, all alive for the call,
    // with their lengths; the kernel only reads them.
    let n = unsafe { libc::sendmsg(fd, &msg, 0) };
    if n < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(n as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
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
    fn every_socket_of_the_group_holds_the_port() {
        let ours = bind(loopback(), 3).unwrap();
        let addr = ours[0].local_addr().unwrap();
        assert!(ours.iter().all(|s| s.local_addr().unwrap() == addr));
        assert!(UdpSocket::bind(addr).is_err(), "the port is the group's");
        let e = bind(addr, 2).expect_err("a second group");
        assert_eq!(e.kind(), io::ErrorKind::AddrInUse, "{e}");
    }

    fn os_error(code: i32) -> io::Error {
        io::Error::from_raw_os_error(code)
    }

    #[test]
    fn one_destination_refusing_gso_does_not_turn_it_off_for_the_socket() {
        for code in [libc::EINVAL, libc::EIO] {
            let mut gso = Gso::new(true);
            for _ in 0..3 {
                for _ in 1..GSO_REFUSALS {
                    assert!(gso.refused(&os_error(code)), "{code}");
                }
                assert!(gso.on, "{code}: on after fewer than GSO_REFUSALS in a row");
                // One taken: the count starts again.
                gso.sent();
            }
            for _ in 0..GSO_REFUSALS {
                assert!(gso.refused(&os_error(code)));
            }
            assert!(!gso.on, "{code}: off after GSO_REFUSALS in a row");
        }
    }

    #[test]
    fn a_kernel_without_gso_turns_it_off_at_once_and_other_errors_are_no_refusal() {
        for code in [libc::ENOPROTOOPT, libc::EOPNOTSUPP] {
            let mut gso = Gso::new(true);
            assert!(gso.refused(&os_error(code)));
            assert!(!gso.on, "{code}");
        }
        let mut gso = Gso::new(true);
        for code in [
            libc::EAGAIN,
            libc::ENETUNREACH,
            libc::EHOSTUNREACH,
            libc::EPERM,
        ] {
            for _ in 0..2 * GSO_REFUSALS {
                assert!(!gso.refused(&os_error(code)), "{code}");
            }
        }
        assert!(gso.on);
    }

    #[test]
    fn the_probe_finds_udp_segmentation_on_a_udp_socket_only() {
        let udp = UdpSocket::bind(loopback()).unwrap();
        assert!(
            kernel_segments(udp.as_raw_fd()),
            "this kernel segments (4.18+)"
        );
        let tcp = std::net::TcpListener::bind(loopback()).unwrap();
        assert!(!kernel_segments(tcp.as_raw_fd()), "no UDP_SEGMENT on TCP");
    }

    #[test]
    fn a_batch_the_kernel_refuses_goes_one_datagram_a_call_and_arrives_once_each() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let tx = UdpSocket::bind(loopback()).unwrap();
        // More segments than the kernel takes in one send (64, or 128 since Linux 6.9): it
        // answers EINVAL.
        let n = 200;
        let out: Vec<u8> = (0..n * 10).map(|i| (i / 10) as u8).collect();
        let mut held = Some(Batch {
            start: 0,
            end: out.len(),
            segment: 10,
            to: rx.local_addr().unwrap(),
            single: false,
        });
        let mut gso = Gso::new(true);
        let (mut sent, mut calls) = (0, 0);
        while held.is_some() {
            let one = |d: &[u8], to| tx.send_to(d, to);
            match send_step(&mut held, &out, &mut gso, tx.as_raw_fd(), one) {
                Step::Sent(k) => {
                    sent += k;
                    calls += 1;
                }
                Step::Blocked => panic!("loopback's buffer full"),
                Step::Again => {}
            }
            assert!(calls <= n, "each datagram sent once");
        }
        assert_eq!((sent, calls), (n as u64, n));
        assert!(gso.on, "one refusal leaves GSO on");
        let mut buf = [0u8; 2_000];
        for i in 0..n {
            let (len, _) = rx.recv_from(&mut buf).unwrap();
            assert_eq!(len, 10);
            assert!(buf[..len].iter().all(|&x| x == i as u8), "datagram {i}");
        }
        rx.set_nonblocking(true).unwrap();
        assert!(rx.recv_from(&mut buf).is_err(), "no datagram twice");
    }

    fn peer(port: u16) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], port))
    }

    /// A batch's segment size, datagrams and peer.
    type Shape = (usize, u64, SocketAddr);
    /// A datagram's length, peer and index (its bytes).
    type Got = (usize, SocketAddr, u8);

    /// Every batch `fill_batch` makes of `datagrams` (length, peer), each datagram filled
    /// with its index: the batches' (segment, count, peer), and the datagrams in the order
    /// the batches hold them, as (length, peer, index).
    fn batches(datagrams: &[(usize, SocketAddr)], gso: bool) -> (Vec<Shape>, Vec<Got>) {
        let mut out = vec![0u8; GSO_BYTES];
        let mut carry = None;
        let mut given = 0;
        let mut next = |buf: &mut [u8]| {
            let &(len, to) = datagrams.get(given)?;
            buf[..len].fill(given as u8);
            given += 1;
            Some((len, to))
        };
        let (mut shapes, mut got) = (Vec::new(), Vec::new());
        while let Some(b) = fill_batch(&mut out, &mut carry, gso, &mut next) {
            assert!(b.end <= GSO_BYTES);
            shapes.push((b.segment, b.datagrams(), b.to));
            let mut rest = Some(b);
            while let Some(d) = rest {
                let end = d.end.min(d.start + d.segment);
                let bytes = &out[d.start..end];
                assert!(bytes.iter().all(|&x| x == bytes[0]), "one datagram's bytes");
                got.push((bytes.len(), d.to, bytes[0]));
                rest = d.rest();
            }
        }
        (shapes, got)
    }

    /// What `batches` should give back: every datagram but the empty ones, once, in order.
    fn each_once(datagrams: &[(usize, SocketAddr)]) -> Vec<Got> {
        (datagrams.iter().enumerate())
            .filter(|(_, &(len, _))| len > 0)
            .map(|(i, &(len, to))| (len, to, i as u8))
            .collect()
    }

    #[test]
    fn another_peer_or_a_larger_datagram_starts_the_next_batch_and_is_kept() {
        let (a, b) = (peer(1), peer(2));
        let list = [
            (1200, a),
            (1200, a),
            (1200, b),
            (1200, b),
            (1300, b),
            (1300, b),
            (1200, a),
        ];
        let (shapes, got) = batches(&list, true);
        assert_eq!(
            shapes,
            [(1200, 2, a), (1200, 2, b), (1300, 2, b), (1200, 1, a)]
        );
        assert_eq!(got, each_once(&list));
    }

    #[test]
    fn a_shorter_datagram_ends_its_batch_and_an_empty_one_is_skipped() {
        let a = peer(1);
        let list = [
            (1000, a),
            (0, a),
            (1000, a),
            (400, a),
            (1000, a),
            (0, a),
            (1000, a),
            (0, a),
        ];
        let (shapes, got) = batches(&list, true);
        assert_eq!(shapes, [(1000, 3, a), (1000, 2, a)]);
        assert_eq!(got, each_once(&list));
    }

    #[test]
    fn a_batch_holds_at_most_64_datagrams_and_65507_bytes() {
        let a = peer(1);
        let small = vec![(100, a); 130];
        let (shapes, got) = batches(&small, true);
        assert_eq!(shapes, [(100, 64, a), (100, 64, a), (100, 2, a)]);
        assert_eq!(got.len(), 130);
        // Indexes past 255 wrap in both lists alike.
        assert_eq!(got, each_once(&small));
        let large = vec![(1400, a); 100];
        let (shapes, got) = batches(&large, true);
        // As many as leave room for one more of the largest (1,500 bytes) under 65,507.
        let most = (GSO_BYTES - http3::MAX_DATAGRAM) / 1400 + 1;
        assert_eq!(shapes[0], (1400, most as u64, a));
        assert!(shapes.iter().all(|&(_, n, _)| n as usize <= most));
        assert_eq!(got, each_once(&large));
    }

    #[test]
    fn without_gso_a_batch_is_one_datagram() {
        let (a, b) = (peer(1), peer(2));
        let list = [(1200, a), (1200, a), (0, a), (700, b), (1300, b)];
        let (shapes, got) = batches(&list, false);
        assert_eq!(
            shapes,
            [(1200, 1, a), (1200, 1, a), (700, 1, b), (1300, 1, b)]
        );
        assert_eq!(got, each_once(&list));
    }

    #[test]
    fn one_gso_send_arrives_as_datagrams_of_the_segment_size() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let tx = UdpSocket::bind(loopback()).unwrap();
        let data: Vec<u8> = (0..1_000u32).map(|i| (i % 251) as u8).collect();
        let sent = send_segments(tx.as_raw_fd(), &data, 300, rx.local_addr().unwrap())
            .expect("loopback takes UDP GSO");
        assert_eq!(sent, data.len());
        let mut buf = [0u8; 2_000];
        let mut got = Vec::new();
        for want in [300, 300, 300, 100] {
            let (n, from) = rx.recv_from(&mut buf).unwrap();
            assert_eq!((n, from), (want, tx.local_addr().unwrap()));
            got.extend_from_slice(&buf[..n]);
        }
        assert_eq!(got, data);
    }
}
