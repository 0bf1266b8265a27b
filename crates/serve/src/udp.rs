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
//! and starts the next. A kernel or route that refuses it (`EIO`, `EINVAL`, `ENOPROTOOPT` on
//! a first such send) turns it off for the socket, which then sends one datagram a call
//! (`h3_gso_off` in the stats); `FLINT_H3_NO_GSO` set in the environment at start does the
//! same. `h3_datagrams_sent` counts datagrams, `h3_send_calls` the system calls. Reading is
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
    /// Sends go with UDP GSO; turned off for good when the kernel refuses it.
    gso: bool,
    /// `h3_gso_off` has counted this socket.
    gso_off_counted: bool,
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
        let mut socket = mio::net::UdpSocket::from_std(socket);
        registry.register(&mut socket, token, Interest::READABLE | Interest::WRITABLE)?;
        Ok(Quic {
            socket,
            h3: H3::new(http3::Server::new(config, local)),
            buf: vec![0; RECV_BUF].into_boxed_slice(),
            out: vec![0; GSO_BYTES].into_boxed_slice(),
            held: None,
            carry: None,
            gso: std::env::var_os(NO_GSO_ENV).is_none(),
            gso_off_counted: false,
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
    }

    /// Sends every datagram the connections have, until the socket's buffer is full.
    fn flush(&mut self, w: &mut Worker) {
        if !self.gso && !self.gso_off_counted {
            self.gso_off_counted = true;
            w.stats.h3_gso_off += 1;
        }
        loop {
            if self.held.is_none() {
                self.held = self.next_batch();
            }
            let Some(b) = self.held else {
                return;
            };
            let whole = self.gso && b.end - b.start > b.segment;
            let sent = if whole {
                let fd = self.socket.as_raw_fd();
                send_segments(fd, &self.out[b.start..b.end], b.segment as u16, b.to)
            } else {
                let end = b.end.min(b.start + b.segment);
                self.socket.send_to(&self.out[b.start..end], b.to)
            };
            match sent {
                Ok(_) => {
                    w.stats.h3_send_calls += 1;
                    if whole {
                        w.stats.h3_datagrams_sent += b.datagrams();
                        self.held = None;
                    } else {
                        w.stats.h3_datagrams_sent += 1;
                        let start = b.start + b.segment;
                        self.held = (start < b.end).then_some(Batch { start, ..b });
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    // Kept: the writable event sends it.
                    w.stats.h3_send_blocked += 1;
                    return;
                }
                // Interrupted: sent again.
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                // The kernel (or the route's device) does not take GSO: the batch goes one
                // datagram a call, and so does everything after it.
                Err(e) if whole && gso_refused(&e) => {
                    self.gso = false;
                    self.gso_off_counted = true;
                    w.stats.h3_gso_off += 1;
                }
                // Anything else (no route to the client) is lost packets, which QUIC recovers
                // from or times out on.
                Err(_) => self.held = None,
            }
        }
    }

    /// The next datagrams to send: the carried one or the connections' next, then (with GSO)
    /// those that follow it for the same peer at its size, the last of them maybe shorter.
    fn next_batch(&mut self) -> Option<Batch> {
        const MAX: usize = http3::MAX_DATAGRAM;
        let (segment, to) = match self.carry.take() {
            Some((at, len, to)) => {
                self.out.copy_within(at..at + len, 0);
                (len, to)
            }
            None => {
                let d = self.h3.send(&mut self.out[..MAX])?;
                (d.len, d.to)
            }
        };
        let mut end = segment;
        let mut count = 1;
        while self.gso && count < GSO_SEGMENTS && end + MAX <= self.out.len() {
            let Some(d) = self.h3.send(&mut self.out[end..end + MAX]) else {
                break;
            };
            if d.to != to || d.len > segment || d.len == 0 {
                self.carry = Some((end, d.len, d.to));
                break;
            }
            end += d.len;
            count += 1;
            if d.len < segment {
                break;
            }
        }
        Some(Batch {
            start: 0,
            end,
            segment,
            to,
        })
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
}

impl Batch {
    fn datagrams(&self) -> u64 {
        (self.end - self.start).div_ceil(self.segment) as u64
    }
}

/// What a send with `UDP_SEGMENT` fails with where the kernel (older than 4.18) or the
/// route's device (no checksum offload) cannot segment.
fn gso_refused(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EIO | libc::EINVAL | libc::ENOPROTOOPT | libc::EOPNOTSUPP)
    )
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
