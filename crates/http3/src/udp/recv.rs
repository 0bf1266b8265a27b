//! HTTP/3's receiving: many datagrams a system call. One `recvmmsg` reads up to [`SLOTS`]
//! messages, from any peers; with UDP GRO (`UDP_GRO`, Linux 5.0) the kernel may hand one
//! message holding several datagrams of one peer side by side, all of one size but a shorter
//! last, and says that size in a control message: they are cut apart here before the
//! connections see them. The buffers are the socket's, made once.
//!
//! A kernel or a sandbox refusing `recvmmsg` (`ENOSYS`, `EPERM`) turns it off for the socket,
//! which then reads one message a `recvmsg` (GRO's control message still read). A socket on
//! which `setsockopt(SOL_UDP, UDP_GRO)` fails (a kernel before 5.0) reads one datagram a
//! message; so does every socket when `FLINT_H3_NO_GRO` is set in the environment at start.
//!
//! A message the kernel cut short (`MSG_TRUNC`: larger than its buffer; `MSG_CTRUNC`: its
//! control messages did not fit, so GRO's segment size may be lost) is dropped, not cut
//! apart wrongly, and counted ([`Receiver::truncated`], in `h3_dropped`).

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::fd::RawFd;

/// Messages one `recvmmsg` reads at most.
pub const SLOTS: usize = 16;
/// One message's buffer: a datagram is at most 65,527 bytes of payload, and GRO coalesces at
/// most 64 KiB; one larger than `crate::MAX_DATAGRAM` is not QUIC's, and is read whole rather
/// than truncated (then the crate drops it).
const SLOT_BYTES: usize = 64 * 1024;
/// Set in the environment at start: no HTTP/3 socket asks for GRO.
pub const NO_GRO_ENV: &str = "FLINT_H3_NO_GRO";

/// One message's control buffer, aligned as `cmsghdr` is: room for GRO's `int` (24 bytes
/// with its header) and more.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
struct Control([u8; 64]);

/// What one read gave.
#[derive(Debug, PartialEq)]
pub struct Read {
    /// Messages the call that read asked for: [`SLOTS`] or fewer with `recvmmsg`, 1 with
    /// `recvmsg` (also when `recvmmsg` was refused during this read).
    pub asked: usize,
    /// Messages the call read (fewer than `asked`: the socket is empty).
    pub messages: usize,
    /// Datagrams in them, each given to the caller.
    pub datagrams: usize,
    /// Their bytes.
    pub bytes: usize,
}

/// One socket's receiving buffers and how it reads.
pub struct Receiver {
    /// [`SLOTS`] buffers of [`SLOT_BYTES`], side by side: made at the socket's first read, so
    /// a thread no HTTP/3 client talks to holds none of this megabyte (empty until then).
    bufs: Box<[u8]>,
    names: Box<[libc::sockaddr_storage]>,
    controls: Box<[Control]>,
    /// The kernel coalesces datagrams for this socket (UDP GRO is on).
    pub gro: bool,
    /// Reads go with `recvmmsg`, [`SLOTS`] messages a call; else one `recvmsg` a message.
    pub batched: bool,
    /// Messages dropped because the kernel cut them short (`MSG_TRUNC`, `MSG_CTRUNC`).
    pub truncated: u64,
    /// One message's buffer: [`SLOT_BYTES`] (smaller in tests, to see truncation).
    slot_bytes: usize,
    /// Tests (here, and serve's with the `test-hooks` feature its dev-dependencies turn on):
    /// the next `recvmmsg` is refused as a sandbox would (`ENOSYS`). Not in a release build.
    #[cfg(any(test, feature = "test-hooks"))]
    #[doc(hidden)]
    pub refuse_recvmmsg: bool,
}

impl Receiver {
    /// Buffers for the socket `fd`, asking the kernel for GRO if `gro`.
    pub fn new(fd: RawFd, gro: bool) -> Receiver {
        Receiver::with_slot_bytes(fd, gro, SLOT_BYTES)
    }

    /// Buffers shared by sockets whose GRO their owner asked for with [`set_gro`] (flint
    /// bench: one connected socket a connection, one `Receiver` a thread). `gro` says false:
    /// it is each socket's, not this one's.
    pub fn buffers() -> Receiver {
        Receiver::with_slot_bytes(-1, false, SLOT_BYTES)
    }

    /// As [`Receiver::new`], with buffers of `slot_bytes` a message.
    pub fn with_slot_bytes(fd: RawFd, gro: bool, slot_bytes: usize) -> Receiver {
        // SAFETY: an all-zero sockaddr_storage is a valid one (family AF_UNSPEC).
        let name: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        Receiver {
            bufs: Box::default(),
            names: vec![name; SLOTS].into_boxed_slice(),
            controls: vec![Control([0; 64]); SLOTS].into_boxed_slice(),
            gro: gro && set_gro(fd),
            batched: true,
            truncated: 0,
            slot_bytes,
            #[cfg(any(test, feature = "test-hooks"))]
            refuse_recvmmsg: false,
        }
    }

    /// The most bytes one message can bring.
    pub fn slot_bytes(&self) -> usize {
        self.slot_bytes
    }

    /// One read call on `fd` (never blocking) asking for up to `max` messages (at least 1,
    /// at most [`SLOTS`]): every datagram it gave to `deliver`, with its peer, in the order
    /// they came. `WouldBlock` when the socket is empty; a refused `recvmmsg` turns batching
    /// off and the read is made again with `recvmsg`.
    pub fn read(
        &mut self,
        fd: RawFd,
        max: usize,
        mut deliver: impl FnMut(&mut [u8], SocketAddr),
    ) -> io::Result<Read> {
        let max = max.clamp(1, SLOTS);
        let slot_bytes = self.slot_bytes;
        if self.bufs.is_empty() {
            // Once a socket, at its first readable event: never again per read.
            self.bufs = vec![0; SLOTS * slot_bytes].into_boxed_slice();
        }
        // SAFETY: an all-zero iovec and mmsghdr are valid ones (null pointers, lengths 0).
        let mut iov: [libc::iovec; SLOTS] = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        let mut msgs: [libc::mmsghdr; SLOTS] = unsafe { std::mem::zeroed() };
        let (bufs, names, controls) = (
            self.bufs.as_mut_ptr(),
            self.names.as_mut_ptr(),
            self.controls.as_mut_ptr(),
        );
        for i in 0..SLOTS {
            // SAFETY: `i < SLOTS`: each pointer stays inside its box (`bufs` holds SLOTS
            // slots of `slot_bytes`, `names` and `controls` SLOTS entries).
            unsafe {
                iov[i].iov_base = bufs.add(i * slot_bytes).cast();
                iov[i].iov_len = slot_bytes;
                let h = &mut msgs[i].msg_hdr;
                h.msg_name = names.add(i).cast();
                h.msg_namelen = size_of::<libc::sockaddr_storage>() as libc::socklen_t;
                h.msg_iov = iov.as_mut_ptr().add(i);
                h.msg_iovlen = 1;
                h.msg_control = controls.add(i).cast();
                h.msg_controllen = size_of::<Control>() as _;
            }
        }
        let (asked, messages) = loop {
            let asked = if self.batched { max } else { 1 };
            let n = if self.batched {
                let flags = libc::MSG_DONTWAIT as _;
                #[cfg(any(test, feature = "test-hooks"))]
                if std::mem::take(&mut self.refuse_recvmmsg) {
                    self.batched = false;
                    continue;
                }
                // SAFETY: `msgs` holds SLOTS headers (`max` of them given), each pointing at
                // its own name, iovec (at its own slot) and control buffer with their
                // lengths, all alive and not otherwise used during the call; the kernel
                // writes at most those lengths and each header's `msg_len`. No timeout.
                unsafe {
                    libc::recvmmsg(fd, msgs.as_mut_ptr(), max as _, flags, std::ptr::null_mut())
                }
            } else {
                // SAFETY: as above, for the first header alone.
                let n = unsafe { libc::recvmsg(fd, &mut msgs[0].msg_hdr, libc::MSG_DONTWAIT) };
                if n >= 0 {
                    // One message (maybe an empty datagram).
                    msgs[0].msg_len = n as _;
                    1
                } else {
                    -1
                }
            };
            if n >= 0 {
                break (asked, n as usize);
            }
            let e = io::Error::last_os_error();
            if self.batched && refused(&e) {
                self.batched = false;
                continue;
            }
            return Err(e);
        };
        let (mut datagrams, mut bytes) = (0, 0);
        for (i, m) in msgs.iter().enumerate().take(messages) {
            if m.msg_hdr.msg_flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
                // Part of it lost: its datagrams (or where they end) are not known.
                self.truncated += 1;
                continue;
            }
            let len = (m.msg_len as usize).min(slot_bytes);
            let Some(from) = socket_addr(&self.names[i], m.msg_hdr.msg_namelen) else {
                continue;
            };
            // `msg_controllen` is a usize with glibc, a socklen_t with musl.
            #[allow(clippy::unnecessary_cast)]
            let control_len = (m.msg_hdr.msg_controllen as usize).min(size_of::<Control>());
            let control = &self.controls[i].0[..control_len];
            let segment = gro_segment(control);
            let slot = &mut self.bufs[i * slot_bytes..][..len];
            datagrams += split(slot, segment, |d| deliver(d, from));
            bytes += len;
        }
        Ok(Read {
            asked,
            messages,
            datagrams,
            bytes,
        })
    }
}

/// Whether a failed `recvmmsg` is the kernel's or a sandbox's refusal of the call (reading
/// then goes one `recvmsg` a message), not a socket's state.
fn refused(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::ENOSYS | libc::EPERM))
}

/// Asks the kernel to coalesce datagrams for `fd` (`UDP_GRO`, Linux 5.0): whether it will.
pub fn set_gro(fd: RawFd) -> bool {
    let on: libc::c_int = 1;
    // SAFETY: `on` is alive for the call and the length given is its size; the kernel only
    // reads it.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_UDP,
            libc::UDP_GRO,
            (&on as *const libc::c_int).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    r == 0
}

/// The segment size GRO's control message says, in the control bytes the kernel wrote for one
/// message; None when there is none (the message is one datagram).
fn gro_segment(control: &[u8]) -> Option<usize> {
    if control.is_empty() {
        return None;
    }
    // SAFETY: an all-zero msghdr is a valid one.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_control = control.as_ptr() as *mut libc::c_void;
    msg.msg_controllen = control.len() as _;
    let end = control.as_ptr_range().end;
    // SAFETY: `msg_control` points at `control`'s bytes, alive and only read here. The
    // CMSG macros walk headers inside `msg_controllen` (null past the end; the buffers given
    // are aligned for `cmsghdr`), and a header's data is read unaligned, only when its
    // length says it holds an `int` and that `int` ends inside `control` (a header's length
    // is the kernel's word, not a bound).
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            let data = libc::CMSG_DATA(c).cast_const();
            let fits = (*c).cmsg_len as usize
                >= libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize
                && (end as usize).saturating_sub(data as usize) >= size_of::<libc::c_int>();
            if (*c).cmsg_level == libc::SOL_UDP && (*c).cmsg_type == libc::UDP_GRO && fits {
                let size = std::ptr::read_unaligned(data.cast::<libc::c_int>());
                return usize::try_from(size).ok().filter(|&s| s > 0);
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    None
}

/// Gives `deliver` each datagram of one message: `segment` bytes each but a shorter last, or
/// the whole message without a segment size. How many it gave.
fn split(message: &mut [u8], segment: Option<usize>, mut deliver: impl FnMut(&mut [u8])) -> usize {
    match segment {
        Some(s) if s < message.len() => {
            let mut n = 0;
            for d in message.chunks_mut(s) {
                deliver(d);
                n += 1;
            }
            n
        }
        _ => {
            deliver(message);
            1
        }
    }
}

/// The peer address the kernel wrote into `s` (`len` bytes), as `recv_from` would give it;
/// None for a family other than IPv4's and IPv6's.
fn socket_addr(s: &libc::sockaddr_storage, len: libc::socklen_t) -> Option<SocketAddr> {
    let len = len as usize;
    match s.ss_family as libc::c_int {
        libc::AF_INET if len >= size_of::<libc::sockaddr_in>() => {
            // SAFETY: sockaddr_storage is aligned and sized for every sockaddr, and the family
            // and length say the kernel wrote a sockaddr_in.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in>() };
            let ip = Ipv4Addr::from(u32::from_be(a.sin_addr.s_addr));
            Some(SocketAddrV4::new(ip, u16::from_be(a.sin_port)).into())
        }
        libc::AF_INET6 if len >= size_of::<libc::sockaddr_in6>() => {
            // SAFETY: as above, for a sockaddr_in6.
            let a = unsafe { &*(s as *const libc::sockaddr_storage).cast::<libc::sockaddr_in6>() };
            let ip = Ipv6Addr::from(a.sin6_addr.s6_addr);
            let port = u16::from_be(a.sin6_port);
            Some(SocketAddrV6::new(ip, port, a.sin6_flowinfo, a.sin6_scope_id).into())
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::gso::send_segments;
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsRawFd;
    use std::time::{Duration, Instant};

    fn loopback() -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 0))
    }

    /// A datagram as read: its bytes and peer.
    type Got = (Vec<u8>, SocketAddr);

    /// Reads `rx` until `want` datagrams came (bounded: 10 s); each read's message count.
    fn read_all(rx: &mut Receiver, fd: RawFd, want: usize) -> (Vec<Got>, Vec<usize>) {
        let (mut got, mut reads) = (Vec::new(), Vec::new());
        let end = Instant::now() + Duration::from_secs(10);
        while got.len() < want {
            assert!(
                Instant::now() < end,
                "{} of {want} datagrams came",
                got.len()
            );
            let truncated = rx.truncated;
            match rx.read(fd, SLOTS, |d, from| got.push((d.to_vec(), from))) {
                Ok(r) => {
                    let dropped = (rx.truncated - truncated) as usize;
                    assert!(r.messages <= r.asked && r.messages <= r.datagrams + dropped);
                    reads.push(r.messages);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(e) => panic!("{e}"),
            }
        }
        (got, reads)
    }

    fn bytes(n: usize, seed: usize) -> Vec<u8> {
        (0..n).map(|i| ((i + seed) % 251) as u8).collect()
    }

    #[test]
    fn a_coalesced_message_is_cut_into_its_datagrams_from_its_peer() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        let mut r = Receiver::new(rx.as_raw_fd(), true);
        assert!(r.gro, "this kernel coalesces (5.0+)");
        let (a, b) = (
            UdpSocket::bind(loopback()).unwrap(),
            UdpSocket::bind(loopback()).unwrap(),
        );
        let to = rx.local_addr().unwrap();
        // Sent with GSO: on loopback the kernel hands a GRO socket the batch as one message.
        let data = bytes(1_000, 0);
        send_segments(a.as_raw_fd(), &data, 300, Some(to)).unwrap();
        b.send_to(&bytes(50, 7), to).unwrap();
        let (got, reads) = read_all(&mut r, rx.as_raw_fd(), 5);
        let (a, b) = (a.local_addr().unwrap(), b.local_addr().unwrap());
        let want = [
            (data[..300].to_vec(), a),
            (data[300..600].to_vec(), a),
            (data[600..900].to_vec(), a),
            (data[900..].to_vec(), a),
            (bytes(50, 7), b),
        ];
        assert_eq!(got, want);
        assert_eq!(reads.iter().sum::<usize>(), 2, "two messages: {reads:?}");
    }

    #[test]
    fn without_gro_a_gso_batch_comes_one_datagram_a_message() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        let mut r = Receiver::new(rx.as_raw_fd(), false);
        assert!(!r.gro);
        let a = UdpSocket::bind(loopback()).unwrap();
        let data = bytes(1_000, 3);
        send_segments(a.as_raw_fd(), &data, 300, Some(rx.local_addr().unwrap())).unwrap();
        let (got, reads) = read_all(&mut r, rx.as_raw_fd(), 4);
        let lens: Vec<usize> = got.iter().map(|(d, _)| d.len()).collect();
        assert_eq!(lens, [300, 300, 300, 100]);
        assert_eq!(got.concat_bytes(), data);
        assert_eq!(reads.iter().sum::<usize>(), 4, "{reads:?}");
    }

    trait Concat {
        fn concat_bytes(&self) -> Vec<u8>;
    }
    impl Concat for Vec<Got> {
        fn concat_bytes(&self) -> Vec<u8> {
            self.iter().flat_map(|(d, _)| d.iter().copied()).collect()
        }
    }

    /// Datagrams of three peers, one after another in turn, each of its own length and bytes;
    /// read by `r` (batched or not): each must come once, in order, from its peer.
    fn several_peers(batched: bool) -> Vec<usize> {
        let rx = UdpSocket::bind(loopback()).unwrap();
        let mut r = Receiver::new(rx.as_raw_fd(), true);
        r.batched = batched;
        let peers: Vec<UdpSocket> = (0..3)
            .map(|_| UdpSocket::bind(loopback()).unwrap())
            .collect();
        let to = rx.local_addr().unwrap();
        let n = 2 * SLOTS + 5;
        let mut want = Vec::new();
        for i in 0..n {
            let p = &peers[i % 3];
            let d = bytes(20 + i, i);
            p.send_to(&d, to).unwrap();
            want.push((d, p.local_addr().unwrap()));
        }
        let (got, reads) = read_all(&mut r, rx.as_raw_fd(), n);
        assert_eq!(got, want);
        reads
    }

    #[test]
    fn a_batch_of_datagrams_from_several_peers_comes_once_each_in_order() {
        let reads = several_peers(true);
        assert_eq!(reads.iter().sum::<usize>(), 2 * SLOTS + 5);
        assert!(
            reads.iter().any(|&m| m > 1),
            "many messages a call: {reads:?}"
        );
    }

    #[test]
    fn without_recvmmsg_a_message_a_call_comes_once_each_in_order() {
        let reads = several_peers(false);
        assert_eq!(reads, vec![1; 2 * SLOTS + 5]);
    }

    #[test]
    fn a_refused_recvmmsg_is_the_call_s_not_the_socket_s() {
        for code in [libc::ENOSYS, libc::EPERM] {
            assert!(refused(&io::Error::from_raw_os_error(code)), "{code}");
        }
        for code in [libc::EAGAIN, libc::EINTR, libc::ECONNREFUSED, libc::ENOMEM] {
            assert!(!refused(&io::Error::from_raw_os_error(code)), "{code}");
        }
    }

    #[test]
    fn an_empty_socket_is_would_block_and_gro_is_asked_of_udp_only() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        for batched in [true, false] {
            let mut r = Receiver::new(rx.as_raw_fd(), true);
            r.batched = batched;
            let e = r
                .read(rx.as_raw_fd(), SLOTS, |_, _| panic!("no datagram"))
                .unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
            assert!(r.batched == batched, "WouldBlock is no refusal");
        }
        let tcp = std::net::TcpListener::bind(loopback()).unwrap();
        assert!(!set_gro(tcp.as_raw_fd()), "no UDP_GRO on TCP");
    }

    /// A control buffer holding one message of `level`, `kind` with an `int`.
    fn control(level: libc::c_int, kind: libc::c_int, value: libc::c_int) -> (Control, usize) {
        let mut c = Control([0; 64]);
        // SAFETY: CMSG_SPACE and CMSG_LEN only compute sizes; the header goes at the start of
        // `c` (aligned for it, 64 bytes: room for 24), its `int` right after it.
        unsafe {
            let len = libc::CMSG_LEN(size_of::<libc::c_int>() as u32) as usize;
            let h = c.0.as_mut_ptr().cast::<libc::cmsghdr>();
            (*h).cmsg_level = level;
            (*h).cmsg_type = kind;
            (*h).cmsg_len = len as _;
            std::ptr::write_unaligned(libc::CMSG_DATA(h).cast::<libc::c_int>(), value);
            let space = libc::CMSG_SPACE(size_of::<libc::c_int>() as u32) as usize;
            (c, space)
        }
    }

    #[test]
    fn the_segment_size_is_read_from_gro_s_control_message_only() {
        let (c, n) = control(libc::SOL_UDP, libc::UDP_GRO, 1_200);
        assert_eq!(gro_segment(&c.0[..n]), Some(1_200));
        let (c, n) = control(libc::SOL_UDP, libc::UDP_SEGMENT, 1_200);
        assert_eq!(gro_segment(&c.0[..n]), None);
        let (c, n) = control(libc::SOL_IP, libc::UDP_GRO, 1_200);
        assert_eq!(gro_segment(&c.0[..n]), None);
        let (c, n) = control(libc::SOL_UDP, libc::UDP_GRO, 0);
        assert_eq!(gro_segment(&c.0[..n]), None, "a size of 0 cuts nothing");
        assert_eq!(gro_segment(&[]), None);
    }

    #[test]
    fn an_int_past_the_end_of_the_control_bytes_is_not_read() {
        let (c, _) = control(libc::SOL_UDP, libc::UDP_GRO, 1_200);
        // SAFETY: CMSG_LEN only computes a size.
        let header = unsafe { libc::CMSG_LEN(0) } as usize;
        // The header says it holds an int; the bytes the kernel wrote end before it does.
        for short in header..header + size_of::<libc::c_int>() {
            assert_eq!(gro_segment(&c.0[..short]), None, "{short} bytes");
        }
        let whole = header + size_of::<libc::c_int>();
        assert_eq!(gro_segment(&c.0[..whole]), Some(1_200));
    }

    #[test]
    fn a_message_cut_short_is_dropped_and_counted() {
        let rx = UdpSocket::bind(loopback()).unwrap();
        let peer = UdpSocket::bind(loopback()).unwrap();
        let to = rx.local_addr().unwrap();
        for batched in [true, false] {
            let mut r = Receiver::with_slot_bytes(rx.as_raw_fd(), false, 100);
            r.batched = batched;
            peer.send_to(&bytes(101, 0), to).unwrap();
            peer.send_to(&bytes(100, 1), to).unwrap();
            let (got, _) = read_all(&mut r, rx.as_raw_fd(), 1);
            assert_eq!(got, [(bytes(100, 1), peer.local_addr().unwrap())]);
            assert_eq!(r.truncated, 1, "batched: {batched}");
        }
    }

    #[test]
    fn a_message_splits_at_its_segment_size_the_last_shorter() {
        let mut m = bytes(1_000, 0);
        let mut lens = Vec::new();
        assert_eq!(split(&mut m, Some(400), |d| lens.push(d.len())), 3);
        assert_eq!(lens, [400, 400, 200]);
        for segment in [None, Some(1_000), Some(5_000)] {
            lens.clear();
            assert_eq!(split(&mut m, segment, |d| lens.push(d.len())), 1);
            assert_eq!(lens, [1_000], "{segment:?}");
        }
        lens.clear();
        assert_eq!(
            split(&mut [], None, |d| lens.push(d.len())),
            1,
            "an empty datagram"
        );
        assert_eq!(lens, [0]);
    }

    #[test]
    fn peer_addresses_read_as_recv_from_gives_them() {
        let v6 = SocketAddr::V6(SocketAddrV6::new(
            "2001:db8::7".parse().unwrap(),
            4433,
            0,
            3,
        ));
        let mapped: SocketAddr = "[::ffff:192.0.2.1]:443".parse().unwrap();
        let v4: SocketAddr = "192.0.2.9:65000".parse().unwrap();
        for a in [v4, v6, mapped] {
            let s = socket2::SockAddr::from(a);
            // SAFETY: an all-zero sockaddr_storage is valid; `s` holds `s.len()` bytes, no more
            // than a sockaddr_storage's, copied into it.
            let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
            // SAFETY: as said above.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    s.as_ptr().cast::<u8>(),
                    (&mut st as *mut libc::sockaddr_storage).cast::<u8>(),
                    s.len() as usize,
                )
            };
            assert_eq!(socket_addr(&st, s.len()), Some(a));
            assert_eq!(socket_addr(&st, 2), None, "too short for its family");
        }
        // SAFETY: as above.
        let unspec: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        assert_eq!(socket_addr(&unspec, 128), None);
    }
}
