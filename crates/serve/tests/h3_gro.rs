//! HTTP/3's receiving with `recvmmsg` and UDP GRO. A peer's GSO batch of junk datagrams (one
//! `sendmsg`, which on loopback the kernel hands a GRO socket as one coalesced message) is
//! cut apart: each datagram counted received and dropped, in one read call. Then a 1 MiB
//! download (its acknowledgements are what the server reads) arrives whole and byte-exact.
//! With GRO turned off at start (`FLINT_H3_NO_GRO`, as on a kernel before 5.0) the same junk
//! arrives one datagram a message (more calls than one `recvmmsg` holds), the download whole,
//! and the stats say GRO is off on every socket. One test: the environment variable is the
//! process's, so the two servers start one after the other.

// For h3_support/cgi.rs (the CGI fixture, which these tests do not use).
mod cgi_support;
mod common;
mod h3_support;
mod tls_support;

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use common::{content, eventually, WAIT};
use h3_support::{Certs, Driver};
use http3::H3_NO_ERROR;

const MIB: usize = 1 << 20;
/// Event-loop threads, each with its UDP socket: all are counted, the ones that never read too.
const THREADS: usize = 3;
/// Junk datagrams sent in one GSO batch: more than one `recvmmsg` reads (16 messages).
const JUNK: usize = 20;
/// Their size: a client's first datagram's.
const JUNK_BYTES: usize = 1_200;

/// `data` to `to` in one `sendmsg`, cut by the kernel into datagrams of `segment` bytes
/// (UDP GSO, `UDP_SEGMENT`).
fn send_gso(socket: &UdpSocket, data: &[u8], segment: u16, to: SocketAddr) {
    #[repr(C, align(8))]
    struct Control([u8; 32]);
    let addr = socket2::SockAddr::from(to);
    let mut iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    let mut control = Control([0; 32]);
    // SAFETY: an all-zero msghdr is a valid one (no name, no data, no control).
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_name = addr.as_ptr() as *mut libc::c_void;
    msg.msg_namelen = addr.len();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.0.as_mut_ptr().cast();
    // SAFETY: CMSG_SPACE only computes a size (24 for a u16: within the 32 bytes).
    msg.msg_controllen = unsafe { libc::CMSG_SPACE(size_of::<u16>() as u32) } as _;
    // SAFETY: `msg_control` points at `control`, aligned for `cmsghdr`, zeroed, and long
    // enough for one header with a u16, so CMSG_FIRSTHDR is that header (not null) and its
    // data is inside `control`, written unaligned. `msg` points at `addr`, `iov` and `data`,
    // all alive during `sendmsg`, which only reads them.
    let sent = unsafe {
        let c = libc::CMSG_FIRSTHDR(&msg);
        (*c).cmsg_level = libc::SOL_UDP;
        (*c).cmsg_type = libc::UDP_SEGMENT;
        (*c).cmsg_len = libc::CMSG_LEN(size_of::<u16>() as u32) as _;
        std::ptr::write_unaligned(libc::CMSG_DATA(c).cast::<u16>(), segment);
        libc::sendmsg(socket.as_raw_fd(), &msg, 0)
    };
    assert_eq!(
        sent,
        data.len() as isize,
        "{}",
        std::io::Error::last_os_error()
    );
}

/// What the junk batch moved on the server: datagrams received, dropped, and read calls.
#[derive(Debug)]
struct Junk {
    received: u64,
    dropped: u64,
    calls: u64,
}

/// A fresh server: [`JUNK`] datagrams sent to it in one GSO batch, then a 1 MiB download;
/// what the junk moved, and the stats at the end.
fn junk_and_download(certs: &Certs) -> (Junk, serve::ServerStats) {
    let srv = certs.serve(|c| c.threads = THREADS);
    std::fs::write(srv.root.path().join("1m.bin"), content("1m.bin", MIB)).unwrap();

    // A Handshake packet's long header (type 2, version 1) for no connection: dropped.
    let mut junk = [0u8; JUNK_BYTES];
    junk[..6].copy_from_slice(&[0xe0, 0, 0, 0, 1, 8]);
    junk[6..14].fill(0x5a);
    junk[14] = 8;
    let batch: Vec<u8> = junk
        .iter()
        .copied()
        .cycle()
        .take(JUNK * JUNK_BYTES)
        .collect();
    let before = srv.stats();
    let peer = UdpSocket::bind("127.0.0.1:0").unwrap();
    send_gso(&peer, &batch, JUNK_BYTES as u16, srv.addr);
    let all_read = eventually(WAIT, || {
        srv.stats().h3_datagrams_received >= before.h3_datagrams_received + JUNK as u64
    });
    let after = srv.stats();
    assert!(all_read, "{before:?}\n{after:?}");
    let moved = Junk {
        received: after.h3_datagrams_received - before.h3_datagrams_received,
        dropped: after.h3_dropped - before.h3_dropped,
        calls: after.h3_recv_calls - before.h3_recv_calls,
    };

    let mut d = Driver::connect(&mut certs.client(), srv.addr);
    let got = d.fetch(&[("GET", "/1m.bin")]);
    assert_eq!(got[0].status, 200);
    assert!(
        got[0].body == content("1m.bin", MIB),
        "{} bytes",
        got[0].body.len()
    );
    d.client.close(H3_NO_ERROR, b"");
    d.turn();
    (moved, srv.stop())
}

#[test]
fn a_gso_batch_is_read_coalesced_with_gro_and_a_datagram_a_message_without() {
    let certs = Certs::new();
    let (junk, st) = junk_and_download(&certs);
    // Nothing else reached the server before the download: every junk datagram, dropped,
    // from one coalesced message read by one call (which got fewer than it asked for).
    assert_eq!(
        (junk.received, junk.dropped),
        (JUNK as u64, JUNK as u64),
        "{junk:?}"
    );
    assert_eq!(junk.calls, 1, "{junk:?}");
    // The handshake and the acknowledgements of about 700 datagrams of body.
    assert!(st.h3_datagrams_received >= JUNK as u64 + 10, "{st:?}");
    assert_eq!((st.h3_gro_off, st.h3_recvmmsg_off), (0, 0), "{st:?}");

    std::env::set_var("FLINT_H3_NO_GRO", "1");
    let (junk, st) = junk_and_download(&certs);
    std::env::remove_var("FLINT_H3_NO_GRO");
    assert_eq!(
        (junk.received, junk.dropped),
        (JUNK as u64, JUNK as u64),
        "{junk:?}"
    );
    // A message a datagram: more than one recvmmsg's 16.
    assert!(junk.calls >= 2, "{junk:?}");
    assert!(st.h3_datagrams_received >= JUNK as u64 + 10, "{st:?}");
    assert_eq!(st.h3_gro_off, THREADS as u64, "{st:?}");
    assert_eq!(st.h3_recvmmsg_off, 0, "{st:?}");
}
