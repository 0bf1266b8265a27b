//! The plain-TCP transport: the system calls that move a session's bytes, and their shape per
//! request (see the counters in [`ServerStats`]):
//! - keep-alive request: one `recv` (a read shorter than the space offered means drained), then
//!   one `send` carrying head and body;
//! - pipelined batch: one `recv` for the batch, every complete request answered into the queue,
//!   one gathered `sendmsg` for all their responses (heads, copied small bodies and shared cached
//!   bodies, up to `IOV_MAX` segments), then `sendfile` for a file body, which the preceding
//!   write announces with `MSG_MORE` so the head and the file's first bytes share a segment;
//! - `Connection: close` / HTTP/1.0: the same, then `close` (or a lingering close).
//!
//! One segment goes by `send`, which takes the buffer as is; more by `sendmsg` rather than
//! `writev`: the same gathered write, plus flags: `MSG_NOSIGNAL` (a closed peer is an error, not
//! a SIGPIPE) and `MSG_MORE` (TCP_CORK's effect without the two `setsockopt` calls per response
//! nginx pays for it).

use std::io;
use std::net::Shutdown;
use std::os::fd::AsRawFd;

use mio::net::TcpStream;

use crate::pool::Seg;
use crate::protocol::Session;
use crate::stats::ServerStats;
use crate::transport::{recv, sent, Flushed, Sent, Transport};

/// Most segments in one gathered write (Linux `IOV_MAX`).
const IOV_MAX: usize = 1024;
/// Largest `sendfile` count Linux accepts in one call.
const SENDFILE_MAX: u64 = 0x7fff_f000;

/// A plain TCP connection.
#[derive(Debug)]
pub(crate) struct PlainTcp {
    sock: TcpStream,
    /// The socket may hold unread input: an edge was seen and no short read has happened since.
    rd_ready: bool,
    /// An edge said the client's FIN is in: read until it is (see [`Transport::readable`]).
    fin_seen: bool,
}

/// The thread's scratch space for gathered writes.
pub(crate) struct PlainEnv {
    iov: Vec<libc::iovec>,
}

impl PlainEnv {
    pub fn new() -> PlainEnv {
        PlainEnv {
            iov: Vec::with_capacity(IOV_MAX),
        }
    }
}

impl Transport for PlainTcp {
    type Env = PlainEnv;

    fn new(sock: TcpStream, _env: &mut PlainEnv) -> io::Result<PlainTcp> {
        Ok(PlainTcp {
            sock,
            rd_ready: true,
            fin_seen: false,
        })
    }

    fn socket(&mut self) -> &mut TcpStream {
        &mut self.sock
    }

    fn readable(&mut self, closed: bool) {
        self.rd_ready = true;
        self.fin_seen |= closed;
    }

    fn may_read(&self) -> bool {
        self.rd_ready
    }

    fn read(
        &mut self,
        _env: &mut PlainEnv,
        buf: &mut [u8],
        st: &mut ServerStats,
    ) -> io::Result<usize> {
        recv(&self.sock, &mut self.rd_ready, self.fin_seen, buf, st)
    }

    /// Writes queued output until done or the socket is full: the leading in-memory segments in
    /// one write, then a file range by `sendfile`.
    fn flush(
        &mut self,
        env: &mut PlainEnv,
        session: &mut Session,
        st: &mut ServerStats,
    ) -> io::Result<Flushed> {
        let fd = self.sock.as_raw_fd();
        let iov = &mut env.iov;
        let Some(b) = session.bufs.as_mut() else {
            return Ok(Flushed::All);
        };
        loop {
            match b.segs.front_mut() {
                None => {
                    b.out.clear();
                    return Ok(Flushed::All);
                }
                Some(Seg::File { file, offset, len }) => {
                    let count = (*len).min(SENDFILE_MAX);
                    let mut off = *offset as libc::off_t;
                    // SAFETY: `fd` is our open socket and `file` an open file kept alive by the
                    // Rc for the duration of the call; `off` is a valid off_t the kernel updates.
                    let r =
                        unsafe { libc::sendfile(fd, file.as_raw_fd(), &mut off, count as usize) };
                    st.sendfiles += 1;
                    let n = match sent(r)? {
                        Sent::Bytes(0) => {
                            // The file shrank under us: the promised length cannot be sent.
                            return Err(io::ErrorKind::UnexpectedEof.into());
                        }
                        Sent::Bytes(n) => n as u64,
                        Sent::Blocked => return Ok(Flushed::Blocked),
                        Sent::Interrupted => continue,
                    };
                    st.sendfile_bytes += n;
                    session.queued -= n;
                    session.written += n;
                    *offset += n;
                    *len -= n;
                    if *len == 0 {
                        b.segs.pop_front();
                    } else if n < count {
                        // Short: the socket buffer is full (no call just to collect EAGAIN).
                        return Ok(Flushed::Blocked);
                    }
                }
                Some(_) => {
                    iov.clear();
                    let mut total = 0usize;
                    let mut file_follows = false;
                    for seg in b.segs.iter() {
                        let Some(bytes) = b.mem_bytes(seg) else {
                            file_follows = true;
                            break;
                        };
                        iov.push(libc::iovec {
                            iov_base: bytes.as_ptr() as *mut libc::c_void,
                            iov_len: bytes.len(),
                        });
                        total += bytes.len();
                        if iov.len() == IOV_MAX {
                            break;
                        }
                    }
                    // MSG_MORE before a file body: the head waits for the first sendfile bytes
                    // and they leave in one segment (TCP_CORK's effect without its two
                    // setsockopt calls per response). MSG_NOSIGNAL: a closed peer is an error
                    // return, not a SIGPIPE.
                    let flags = libc::MSG_NOSIGNAL | if file_follows { libc::MSG_MORE } else { 0 };
                    let r = if iov.len() == 1 {
                        // One segment (the usual keep-alive response): `send` takes the buffer
                        // as is, where `sendmsg` first imports a msghdr and an iovec array from
                        // user memory; measurably cheaper per request.
                        // SAFETY: iov[0] points into `b.out` or an Rc body held by `b.segs`,
                        // alive and unmodified until send returns; its length is in bounds.
                        unsafe { libc::send(fd, iov[0].iov_base, iov[0].iov_len, flags) }
                    } else {
                        // SAFETY: zeroed is a valid msghdr (null pointers, zero lengths); we
                        // then point it at `iov`, whose entries point into `b.out` and the Rc
                        // bodies held by `b.segs`, all alive and unmodified until sendmsg
                        // returns.
                        unsafe {
                            let mut msg: libc::msghdr = std::mem::zeroed();
                            msg.msg_iov = iov.as_mut_ptr();
                            msg.msg_iovlen = iov.len() as _;
                            libc::sendmsg(fd, &msg, flags)
                        }
                    };
                    st.writes += 1;
                    let n = match sent(r)? {
                        Sent::Bytes(n) => n,
                        Sent::Blocked => return Ok(Flushed::Blocked),
                        Sent::Interrupted => continue,
                    };
                    st.written_bytes += n as u64;
                    session.queued -= n as u64;
                    session.written += n as u64;
                    b.advance(n);
                    if n < total {
                        return Ok(Flushed::Blocked);
                    }
                }
            }
        }
    }

    fn shutdown_write(&mut self, _env: &mut PlainEnv, _st: &mut ServerStats) -> io::Result<()> {
        self.sock.shutdown(Shutdown::Write)
    }

    fn discard(&mut self, buf: &mut [u8], st: &mut ServerStats) -> io::Result<usize> {
        recv(&self.sock, &mut self.rd_ready, self.fin_seen, buf, st)
    }
}
