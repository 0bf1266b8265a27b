//! The seam between the protocol and the bytes' way in and out: one [`Transport`] per kind of
//! connection (plain TCP in `plain`, TLS in `tls`), each moving the bytes of a [`Session`] with
//! its own system calls, while the driver loop in `conn` and the protocol stay the same for all.
//!
//! A transport receives plaintext into the buffer the session lends, and writes the session's
//! queued segments (heads and small bodies in one buffer, shared cached bodies, file ranges) as
//! it sees fit: plain TCP by `send`, a gathered `sendmsg` and `sendfile`; TLS by encrypting them
//! into records. An io_uring driver would be one more.

use std::io;

use mio::net::TcpStream;

use crate::protocol::{Negotiated, Session};
use crate::stats::ServerStats;

/// How far a flush got.
pub(crate) enum Flushed {
    All,
    /// The socket buffer is full; resume on WRITABLE.
    Blocked,
}

pub(crate) trait Transport: Sized {
    /// What every connection of this kind on one thread uses: configuration, scratch space.
    type Env;

    /// Takes over an accepted socket.
    fn new(sock: TcpStream, env: &mut Self::Env) -> io::Result<Self>;

    /// The socket, for registering it with epoll.
    fn socket(&mut self) -> &mut TcpStream;

    /// An epoll edge said readable (or hang-up, or error): a read may find something.
    /// `closed`: the edge also said the client's FIN is in (`EPOLLRDHUP`, `EPOLLHUP`). Edge
    /// triggered, that is said once: a request and the FIN that follows it arrive as one edge,
    /// so from then on a short read no longer means drained, and reading goes on to the end of
    /// input (otherwise the socket would sit in CLOSE_WAIT until the keep-alive timeout).
    fn readable(&mut self, closed: bool);

    /// Whether a read may find something now (no short read since the last edge, or plaintext
    /// already decrypted and waiting).
    fn may_read(&self) -> bool;

    /// Receives plaintext into `buf`. `Ok(0)`: the client's input has ended. `WouldBlock`:
    /// nothing for now (a new edge will come). Any other error ends the connection.
    fn read(
        &mut self,
        env: &mut Self::Env,
        buf: &mut [u8],
        st: &mut ServerStats,
    ) -> io::Result<usize>;

    /// Output of the transport's own waiting to be written (handshake records, alerts), apart
    /// from the session's queue.
    fn has_output(&self) -> bool {
        false
    }

    /// Writes the session's queued output (and the transport's own) until all is written or the
    /// socket is full.
    fn flush(
        &mut self,
        env: &mut Self::Env,
        session: &mut Session,
        st: &mut ServerStats,
    ) -> io::Result<Flushed>;

    /// Ends our sending side after the last response (the FIN of a lingering close; over TLS a
    /// close_notify alert first).
    fn shutdown_write(&mut self, env: &mut Self::Env, st: &mut ServerStats) -> io::Result<()>;

    /// The last response is written and the connection closes without lingering (over TLS: a
    /// close_notify alert first, so the client tells the end from a truncation).
    fn closing(&mut self, _env: &mut Self::Env, _st: &mut ServerStats) {}

    /// Receives and discards raw input while a lingering close waits for the client's FIN.
    fn discard(&mut self, buf: &mut [u8], st: &mut ServerStats) -> io::Result<usize>;

    /// After a failed `read`: the connection began with plain HTTP where a TLS record was due,
    /// and this many of its bytes were received into the buffer `read` was given (for the log).
    /// The session then answers a plain 400, which `flush` sends unencrypted.
    fn refused_plain_http(&self) -> Option<usize> {
        None
    }

    /// What the handshake said of the protocol to speak (ALPN), once plaintext flows; cleartext
    /// says nothing, and the session tells by the first bytes.
    fn negotiated(&self) -> Negotiated {
        Negotiated::Nothing
    }

    /// Still before the end of a handshake (only TLS has one): a header timeout now is counted
    /// as a handshake timeout too.
    fn handshaking(&self) -> bool {
        false
    }
}

/// What a `send`, `sendmsg`, `sendfile` or `pread` return value says.
pub(crate) enum Sent {
    Bytes(usize),
    /// EAGAIN: the socket buffer is full.
    Blocked,
    /// EINTR: nothing was done; call again.
    Interrupted,
}

/// Reads `errno` for a negative return; any error but EAGAIN and EINTR is the connection's end.
pub(crate) fn sent(r: isize) -> io::Result<Sent> {
    if r >= 0 {
        return Ok(Sent::Bytes(r as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock => Ok(Sent::Blocked),
        io::ErrorKind::Interrupted => Ok(Sent::Interrupted),
        _ => Err(e),
    }
}

/// One `recv` into `buf`; a return shorter than `buf` means the socket is drained (with
/// edge-triggered epoll a new edge comes when more arrives), so no read is made just to collect
/// EAGAIN: the failing read per request the Jigsaw syscall notes found in Apache. Unless the
/// client's FIN is known to be in (`fin_seen`): then the FIN is still to be read after the data,
/// and no new edge will announce it.
/// `Ok(0)` is the end of input (or an empty `buf`).
pub(crate) fn recv(
    sock: &TcpStream,
    rd_ready: &mut bool,
    fin_seen: bool,
    buf: &mut [u8],
    st: &mut ServerStats,
) -> io::Result<usize> {
    use std::io::Read;
    loop {
        st.reads += 1;
        let mut s = sock;
        match s.read(buf) {
            Ok(n) => {
                st.read_bytes += n as u64;
                if n == 0 || (n < buf.len() && !fin_seen) {
                    *rd_ready = false;
                }
                return Ok(n);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                *rd_ready = false;
                return Err(e);
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}
