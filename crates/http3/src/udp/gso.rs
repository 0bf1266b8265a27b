//! HTTP/3's sends with UDP GSO (generic segmentation offload, `UDP_SEGMENT`): the datagrams
//! the connections give one after another for one peer, of one size, go side by side in one
//! `sendmsg` that the kernel cuts (the rules are in flint serve's `udp.rs` module doc).

use std::io;
use std::net::SocketAddr;
use std::os::fd::RawFd;

/// Datagrams one GSO send carries at most (the kernel's `UDP_MAX_SEGMENTS`).
const GSO_SEGMENTS: usize = 64;
/// Bytes one GSO send carries at most: the largest UDP payload over IPv4.
pub const GSO_BYTES: usize = 65_507;
/// GSO sends refused in a row (`EINVAL`, `EIO`) that turn GSO off for the socket: one is a
/// destination's MTU or route, not the kernel.
pub const GSO_REFUSALS: u32 = 8;
/// Set in the environment at start: every HTTP/3 socket sends one datagram a call.
pub const NO_GSO_ENV: &str = "FLINT_H3_NO_GSO";

/// The next datagrams to send, written side by side from the start of `out`: the carried one
/// or `next`'s (it writes a datagram into the buffer it is given and says its length and
/// peer, None when it has no more), then (with `gso`) those that follow it for the same peer
/// at its size, the last of them maybe shorter; at most [`GSO_SEGMENTS`], and only while
/// `out` has room for one more of the largest. A datagram for another peer, or larger, is
/// kept in `carry` and starts the next batch; an empty one is skipped.
pub fn fill_batch(
    out: &mut [u8],
    carry: &mut Option<(usize, usize, SocketAddr)>,
    gso: bool,
    mut next: impl FnMut(&mut [u8]) -> Option<(usize, SocketAddr)>,
) -> Option<Batch> {
    const MAX: usize = crate::MAX_DATAGRAM;
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
#[derive(Debug)]
pub enum Step {
    /// A call sent these datagrams.
    Sent(u64),
    /// The socket's buffer is full: the batch is kept.
    Blocked,
    /// Nothing sent (interrupted, refused): what is left goes with the next call.
    Again,
    /// Nothing sent for this error (no route, an ICMP error the socket held): the whole batch
    /// or its one datagram dropped, the rest goes with the next call. A server's socket
    /// serves other peers and goes on; a client's connected socket may end its connection.
    Lost(io::Error),
}

/// One send call of `held` (datagrams in `out`) on `fd`: the whole batch with GSO when `gso`
/// is on and the batch has more than one, else its first datagram with `one`; `held` keeps
/// what is left. A batch GSO is refused for goes one datagram a call.
pub fn send_step(
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
        let to = (!gso.connected).then_some(b.to);
        send_segments(fd, &out[b.start..b.end], b.segment as u16, to)
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
        Err(e) => {
            *held = if whole { None } else { b.rest() };
            Step::Lost(e)
        }
    }
}

/// Datagrams side by side in `Quic::out[start..end]`, each `segment` bytes but the last, for
/// one peer.
#[derive(Clone, Copy)]
pub struct Batch {
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
pub struct Gso {
    /// Sends go with GSO (off: one datagram a call).
    pub on: bool,
    /// GSO sends refused since the last one taken.
    refused_in_a_row: u32,
    /// The socket is connected (flint bench): a send names no peer.
    connected: bool,
}

impl Gso {
    /// GSO on or off at start (off where [`kernel_segments`] says no or [`NO_GSO_ENV`] is set).
    pub fn new(on: bool) -> Gso {
        Gso {
            on,
            refused_in_a_row: 0,
            connected: false,
        }
    }

    /// As [`Gso::new`], for a connected socket: its GSO sends name no peer (the kernel would
    /// look the address up and compare it with the connected one at every send).
    pub fn connected(on: bool) -> Gso {
        Gso {
            connected: true,
            ..Gso::new(on)
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
pub fn kernel_segments(fd: RawFd) -> bool {
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

/// One `sendmsg` of `data` to `to` (None: the connected socket's peer) that the kernel cuts
/// into datagrams of `segment` bytes, the last maybe shorter (a `UDP_SEGMENT` control message). Neither nix's `sendmsg` (it
/// allocates its control buffer each call) nor rustix (no `UDP_SEGMENT`) fits a hot path.
pub fn send_segments(
    fd: RawFd,
    data: &[u8],
    segment: u16,
    to: Option<SocketAddr>,
) -> io::Result<usize> {
    /// Room for one control message holding a `u16`, aligned as `cmsghdr` is.
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let addr = to.map(socket2::SockAddr::from);
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
    if let Some(addr) = &addr {
        msg.msg_name = addr.as_ptr() as *mut libc::c_void;
        msg.msg_namelen = addr.len();
    }
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
    // SAFETY: `msg` points at `addr` (or at no name), `iov` (at `data`) and `control`, all alive for the call,
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
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
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
                Step::Again | Step::Lost(_) => {}
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
        let most = (GSO_BYTES - crate::MAX_DATAGRAM) / 1400 + 1;
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
        let sent = send_segments(tx.as_raw_fd(), &data, 300, Some(rx.local_addr().unwrap()))
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

    #[test]
    fn a_connected_socket_sends_a_batch_naming_no_peer() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        rx.set_read_timeout(Some(std::time::Duration::from_secs(10)))
            .unwrap();
        let tx = UdpSocket::bind(loopback()).unwrap();
        tx.connect(rx.local_addr().unwrap()).unwrap();
        let out = vec![5u8; 1_000];
        // The peer in the batch is not the socket's: only a send naming none reaches `rx`.
        let mut held = Some(Batch {
            start: 0,
            end: out.len(),
            segment: 400,
            to: peer(9),
            single: false,
        });
        let mut gso = Gso::connected(true);
        let one = |_: &[u8], _| -> io::Result<usize> { panic!("a GSO send, not one datagram") };
        let step = send_step(&mut held, &out, &mut gso, tx.as_raw_fd(), one);
        assert!(matches!(step, Step::Sent(3)), "{step:?}");
        let mut buf = [0u8; 2_000];
        for want in [400, 400, 200] {
            let (n, from) = rx.recv_from(&mut buf).unwrap();
            assert_eq!((n, from), (want, tx.local_addr().unwrap()));
        }
    }
}
