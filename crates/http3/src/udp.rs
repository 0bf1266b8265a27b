//! UDP batch I/O for QUIC on Linux, shared by flint serve (one socket a thread, any peers)
//! and flint bench (one connected socket a connection): the crate's API stays sans-I/O, this
//! module is the system calls both sides make around it.
//!
//! - [`recv`]: many datagrams a system call: `recvmmsg` (up to [`recv::SLOTS`] messages)
//!   and UDP GRO (`UDP_GRO`, Linux 5.0: one message holding several datagrams of one peer,
//!   cut apart here), with `recvmsg` where `recvmmsg` is refused and one datagram a message
//!   where GRO is (or with [`recv::NO_GRO_ENV`] set at start).
//! - [`gso`]: UDP GSO (`UDP_SEGMENT`, Linux 4.18): datagrams of one size for one peer side by
//!   side in one `sendmsg` the kernel cuts; a batch the kernel refuses goes one datagram a
//!   call, [`gso::GSO_REFUSALS`] refusals in a row or a kernel without it turn GSO off for the
//!   socket ([`gso::NO_GSO_ENV`] at start does too).
//!
//! Each caller says in its own counters which of these ran (serve's `h3_gro_off`,
//! `h3_gso_off`, `h3_recvmmsg_off`; bench's `summary.http3`).

pub mod gso;
pub mod recv;
