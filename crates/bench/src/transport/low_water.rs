//! Sleeping through a large body: the socket's receive low-water mark (`SO_RCVLOWAT`).
//!
//! A client faster than the server drains its socket after every batch of segments and sleeps
//! until the next: downloading 1 MiB over HTTPS from h2o, flint slept 8 to 12 times per MiB
//! where h2load, busier, slept 3. On loopback the server pays for each of those sleeps: its
//! `write` runs the client's TCP input and the client's wake-up (an inter-processor interrupt)
//! on the server's core (see `client/busy_poll.rs`). With the low-water mark set to a share of
//! the body still to come, Linux wakes the client (`epoll`'s readable event, edge-triggered as
//! every socket here is) only once that many bytes are queued: once per large chunk.
//!
//! A mark above what will come is a wait for bytes that never arrive, so it is only ever set
//! from bytes the HTTP/2 connection is owed: the bodies whose `content-length` was announced and
//! whose first DATA has come, less what is already read, less what the transport holds (a TLS
//! record cut in two), and below half the receive window (nghttp2 sends its WINDOW_UPDATE when
//! half is used, so the server can always send that much). It is a power of two from
//! [`FLOOR`] to [`CAP`], so it changes a few times per response, not at every read; below the
//! floor it is 1 (the kernel's default). And it never outlasts [`PATIENCE_US`] without a read:
//! a server that breaks its word (a stream reset mid-body, a body shorter than announced) leaves
//! the client waiting that long at most before the mark falls back to 1 (which makes the kernel
//! report what is queued, or a FIN, at once) and the read sees why. Linux also wakes a reader
//! below the mark on the server's FIN or reset, memory pressure or a receive window nearly
//! closed; but a FIN that comes with the last bytes is one readable event, which the event
//! loop's short read takes for "drained" before it reads the end: then too the patience ends
//! the wait (tests/it/engine_h2_low_water.rs has each case).

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// The largest mark: 256 KiB, a quarter of a 1 MiB body (Linux grows the receive buffer to hold
/// twice the mark when it is smaller, and caps the mark at half a buffer set by hand).
const CAP: u64 = 256 * 1024;
/// Below this many bytes owed the mark is 1: waking for less saves nothing worth a syscall.
pub(crate) const FLOOR: u64 = 32 * 1024;
/// The longest the mark stays above 1 without a read; then the connection is looked at again
/// (its timer) and the mark drops to 1. Well above the time a chunk of [`CAP`] takes even when
/// many connections share one server's core (8 connections at 1 GB/s: 2 ms).
const PATIENCE_US: u64 = 10_000;
/// After a mark outlasted its patience, how long the socket goes without one. A server whose
/// bytes stop short of the mark for that long is one the mark slows down: nginx over cleartext
/// sends a large body as 8 KiB DATA frames, each held by Nagle's algorithm until the one before
/// is acknowledged, and a client that does not read acknowledges by the delayed-ACK timer
/// (bench/README.md); reading what comes at once, as without the mark, acknowledges sooner.
const BACKOFF_US: u64 = 10_000_000;
/// "No deadline".
pub(super) const NONE: u64 = u64::MAX;

/// One socket's mark.
#[derive(Debug)]
pub(crate) struct LowWater {
    /// The mark set on the socket (1: the kernel's default).
    set: u64,
    /// When the mark falls back to 1 unless a read comes first.
    until: u64,
    /// A read happened since the mark was last looked at.
    read: bool,
    /// No mark before this time (see [`BACKOFF_US`]).
    resume: u64,
}

impl LowWater {
    pub(crate) const fn new() -> LowWater {
        LowWater {
            set: 1,
            until: NONE,
            read: false,
            resume: 0,
        }
    }

    /// A read of the socket brought bytes.
    #[inline]
    pub(crate) fn on_read(&mut self) {
        self.read = true;
    }

    /// The mark for `owed` bytes certain to reach the socket, at `now` (µs); returns when it
    /// must be looked at again (`NONE`: the mark is 1, nothing to look at). A mark the kernel
    /// refused leaves the one before, with its deadline: it is tried again then.
    pub(crate) fn expect(&mut self, fd: BorrowedFd<'_>, owed: u64, now: u64) -> u64 {
        let mut mark = if now < self.resume { 1 } else { mark_for(owed) };
        if self.read {
            self.read = false;
            self.until = now.saturating_add(PATIENCE_US);
        } else if now >= self.until {
            mark = 1;
            if self.set > 1 {
                self.resume = now.saturating_add(BACKOFF_US);
            }
        }
        if mark != self.set && set_rcvlowat(fd, mark).is_ok() {
            self.set = mark;
        }
        if self.set > 1 {
            self.until
        } else {
            NONE
        }
    }

    /// Back to the kernel's default (before the connection's close, where what comes is not
    /// owed by any response).
    pub(crate) fn clear(&mut self, fd: BorrowedFd<'_>) {
        if self.set != 1 && set_rcvlowat(fd, 1).is_ok() {
            self.set = 1;
        }
    }
}

/// The mark for `owed` bytes: the largest power of two from [`FLOOR`] to [`CAP`] not above it,
/// or 1.
fn mark_for(owed: u64) -> u64 {
    if owed < FLOOR {
        1
    } else {
        1 << owed.min(CAP).ilog2()
    }
}

fn set_rcvlowat(fd: BorrowedFd<'_>, bytes: u64) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: `fd` is a socket borrowed for the call, the option's value is a `c_int` that
    // lives across the call, and its size is passed with it; setsockopt only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn the_mark_is_a_power_of_two_between_floor_and_cap_or_one() {
        assert_eq!(mark_for(0), 1);
        assert_eq!(mark_for(FLOOR - 1), 1);
        assert_eq!(mark_for(FLOOR), FLOOR);
        assert_eq!(mark_for(100 * 1024), 64 * 1024);
        assert_eq!(mark_for(CAP + 1), CAP);
        assert_eq!(mark_for(u64::MAX), CAP);
        for owed in [FLOOR, 50_000, 200_000, 1 << 20] {
            assert!(
                mark_for(owed) <= owed,
                "a mark above what is owed waits forever"
            );
        }
    }

    #[test]
    fn without_a_read_the_mark_falls_back_to_one_after_its_patience_and_stays_off_a_while() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        let fd = a.as_fd();
        let mut lw = LowWater::new();
        lw.on_read();
        assert_eq!(lw.expect(fd, 1 << 20, 1_000), 1_000 + PATIENCE_US);
        assert_eq!(lw.set, CAP);
        // Looked at again before its patience ends (another timer): unchanged.
        assert_eq!(lw.expect(fd, 1 << 20, 2_000), 1_000 + PATIENCE_US);
        assert_eq!(lw.set, CAP);
        // No read for its whole patience: back to 1, nothing more to look at.
        assert_eq!(lw.expect(fd, 1 << 20, 1_000 + PATIENCE_US), NONE);
        assert_eq!(lw.set, 1);
        // And none for its back-off, reads or not; then again.
        let after = 1_000 + PATIENCE_US + BACKOFF_US;
        lw.on_read();
        assert_eq!(lw.expect(fd, 1 << 20, after - 1), NONE);
        assert_eq!(lw.set, 1);
        lw.on_read();
        assert_eq!(lw.expect(fd, 1 << 20, after), after + PATIENCE_US);
        assert_eq!(lw.set, CAP);
        // Fewer bytes owed than the floor: 1 at once, read or not.
        lw.on_read();
        assert_eq!(lw.expect(fd, FLOOR - 1, after + 1), NONE);
        assert_eq!(lw.set, 1);
    }
}
