//! Steering: a classic BPF program attached to the HTTP/3 sockets' `SO_REUSEPORT` group that
//! hands a QUIC short-header packet to the socket of the thread its connection ID names, so a
//! client whose address or port changed (a NAT rebinding) still reaches the thread that holds
//! its connection. Without it the kernel picks a socket by a hash of the 4-tuple, which a new
//! port changes.
//!
//! What the kernel does (net/core/sock_reuseport.c, `reuseport_select_sock` and
//! `run_bpf_filter`): for a UDP datagram to a group with a classic program, it runs the program
//! on the datagram with its data starting at the UDP payload; a return value below the number
//! of sockets picks `socks[value]`, any other falls back to the 4-tuple hash. A load past the
//! payload's end ends a classic program with 0 (socket 0), so the length is checked first.
//!
//! The value is the thread index: the connection IDs a thread issues begin with it, two bytes
//! big-endian (`http3`'s `cid::issued`), and a short header is one byte then the destination
//! connection ID. A long header (Initial, 0-RTT, Handshake, Retry, version negotiation) gets
//! the hash, as before: a client's first Initial carries an ID of its own choosing, and the
//! Handshake that follows comes from the same 4-tuple as that Initial.
//!
//! Why `socks[i]` is thread `i`'s socket: `udp::bind` binds the sockets in thread order; the
//! first joins the group as its first member when the second binds (the kernel makes the group
//! then, the first socket at index 0), and each later one is appended at the end. The kernel
//! reorders the array only when a socket leaves (the last moves into its place), and none
//! closes before every loop has ended (at shutdown a loop hands its socket back to
//! `Server::run`, which drops them all after joining the threads: a thread with no
//! connections ends first, and its socket leaving would let the last socket take its index
//! while the last thread still drains). A packet naming an index the group does not have (a
//! forged ID, another server's) falls back to the hash.

use std::io;
use std::os::fd::RawFd;

/// `SO_ATTACH_REUSEPORT_CBPF` (Linux 4.5). The libc crate names it for Android alone (there it
/// is taken from libc); on Linux its number is asm-generic/socket.h's 51 on every architecture
/// Rust builds for (x86, ARM, RISC-V, PowerPC, s390, LoongArch, and MIPS, whose
/// asm/socket.h numbers most socket options apart but gives this one 51 too), except SPARC's
/// 0x35. (PA-RISC's is 0x402E and Alpha's 51; Rust has no target for either.)
#[cfg(target_os = "android")]
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = libc::SO_ATTACH_REUSEPORT_CBPF;
#[cfg(all(
    not(target_os = "android"),
    any(target_arch = "sparc", target_arch = "sparc64")
))]
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 0x35;
#[cfg(all(
    not(target_os = "android"),
    not(any(target_arch = "sparc", target_arch = "sparc64"))
))]
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;

/// Set in the environment at start (to anything): no program, the 4-tuple hash alone (to
/// compare, or on a kernel whose program misbehaves).
pub(crate) const NO_STEER_ENV: &str = "FLINT_H3_NO_STEER";

/// What the program returns for a packet it does not steer: no group has this many sockets,
/// so the kernel uses the hash.
pub(crate) const NOT_STEERED: u32 = u32::MAX;

/// One classic BPF instruction (`struct sock_filter`).
fn insn(code: u32, jt: u8, jf: u8, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code: code as u16,
        jt,
        jf,
        k,
    }
}

/// The program: a short-header packet long enough to hold one of our connection IDs goes to
/// the socket its first two ID bytes name; anything else to the hash. `id_len` is the length
/// of the IDs the server issues (`http3::CID_LEN`).
pub(crate) fn program(id_len: u32) -> [libc::sock_filter; 7] {
    use libc::{BPF_A, BPF_ABS, BPF_B, BPF_H, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K};
    use libc::{BPF_LD, BPF_LEN, BPF_RET, BPF_W};
    [
        // 0: A = the UDP payload's length.
        insn(BPF_LD | BPF_W | BPF_LEN, 0, 0, 0),
        // 1: shorter than the first byte and an ID of ours: to the hash (6); else on (2).
        insn(BPF_JMP | BPF_JGE | BPF_K, 0, 4, 1 + id_len),
        // 2: A = the first byte.
        insn(BPF_LD | BPF_B | BPF_ABS, 0, 0, 0),
        // 3: its 0x80 bit set is a long header: to the hash (6); else on (4).
        insn(BPF_JMP | BPF_JSET | BPF_K, 2, 0, 0x80),
        // 4: A = the ID's first two bytes, big-endian: the thread index.
        insn(BPF_LD | BPF_H | BPF_ABS, 0, 0, 1),
        // 5: the socket of that index (or the hash, past the group's size).
        insn(BPF_RET | BPF_A, 0, 0, 0),
        // 6: the 4-tuple hash.
        insn(BPF_RET | BPF_K, 0, 0, NOT_STEERED),
    ]
}

/// Attaches [`program`] to the `SO_REUSEPORT` group of socket `fd` (shared by the group: one
/// call steers every socket of it; another call replaces it by the same). An error is the
/// kernel's refusal (before 4.5, a sandbox, `fd` not in a group): the hash is left.
pub(crate) fn attach(fd: RawFd, id_len: u32) -> io::Result<()> {
    let mut filter = program(id_len);
    let prog = libc::sock_fprog {
        len: filter.len() as libc::c_ushort,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: `prog` points at `filter`'s instructions and says how many there are; both
    // outlive the call, which copies them into the kernel (the kernel only reads them). The
    // option's length is that of the `sock_fprog` passed.
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            SO_ATTACH_REUSEPORT_CBPF,
            (&prog as *const libc::sock_fprog).cast(),
            std::mem::size_of::<libc::sock_fprog>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a classic program over `packet` as the kernel does for the opcodes [`program`]
    /// uses: a load past the end returns 0.
    fn run(prog: &[libc::sock_filter], packet: &[u8]) -> u32 {
        use libc::{BPF_A, BPF_ABS, BPF_B, BPF_H, BPF_JGE, BPF_JMP, BPF_JSET, BPF_K};
        use libc::{BPF_LD, BPF_LEN, BPF_RET, BPF_W};
        let mut a: u32 = 0;
        let mut pc = 0;
        loop {
            let i = prog[pc];
            pc += 1;
            let code = u32::from(i.code);
            let load = |n: usize| packet.get(i.k as usize..i.k as usize + n);
            match code {
                c if c == BPF_LD | BPF_W | BPF_LEN => a = packet.len() as u32,
                c if c == BPF_LD | BPF_B | BPF_ABS => match load(1) {
                    Some(b) => a = u32::from(b[0]),
                    None => return 0,
                },
                c if c == BPF_LD | BPF_H | BPF_ABS => match load(2) {
                    Some(b) => a = u32::from(u16::from_be_bytes([b[0], b[1]])),
                    None => return 0,
                },
                c if c == BPF_JMP | BPF_JGE | BPF_K => {
                    pc += usize::from(if a >= i.k { i.jt } else { i.jf })
                }
                c if c == BPF_JMP | BPF_JSET | BPF_K => {
                    pc += usize::from(if a & i.k != 0 { i.jt } else { i.jf })
                }
                c if c == BPF_RET | BPF_A => return a,
                c if c == BPF_RET | BPF_K => return i.k,
                c => panic!("opcode {c:#x} not in the program"),
            }
        }
    }

    const LEN: usize = 16;

    /// A short-header packet of `len` bytes whose ID names `thread` (as far as it reaches).
    fn short(thread: u16, len: usize) -> Vec<u8> {
        let mut p = [0x40]
            .iter()
            .chain(&thread.to_be_bytes())
            .copied()
            .collect::<Vec<_>>();
        p.resize(len, 0x40);
        p
    }

    #[test]
    fn a_short_header_goes_to_the_thread_its_id_names() {
        let prog = program(LEN as u32);
        for thread in [0, 1, 7, 0x0102, u16::MAX] {
            assert_eq!(run(&prog, &short(thread, 1 + LEN)), u32::from(thread));
            assert_eq!(run(&prog, &short(thread, 1200)), u32::from(thread));
        }
    }

    #[test]
    fn long_headers_and_short_packets_go_to_the_hash() {
        let prog = program(LEN as u32);
        // An Initial (0xc0), a Handshake (0xe0), whatever their bytes after.
        for first in [0xc0, 0xd0, 0xe0, 0xf0, 0x80] {
            let mut p = short(1, 1200);
            p[0] = first;
            assert_eq!(run(&prog, &p), NOT_STEERED, "{first:#x}");
        }
        // Too short for one of our IDs (a load past the end would have returned 0).
        for len in [0, 1, 2, LEN] {
            assert_eq!(run(&prog, &short(1, len)), NOT_STEERED, "{len}");
        }
    }

    #[test]
    fn a_socket_in_no_group_is_refused() {
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let e = attach(std::os::fd::AsRawFd::as_raw_fd(&s), LEN as u32).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}");
    }
}
