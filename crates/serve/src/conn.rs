//! One connection: its state machine (read, answer every complete request, write, close) and
//! the three syscalls that move its bytes: `recv`, a gathered `sendmsg` and `sendfile`.
//!
//! The syscall shape this is built for (see the counters in [`ServerStats`]):
//! - keep-alive request: one `recv` (a read shorter than the space offered means drained: no
//!   second read just to collect EAGAIN, the failing read the seeds' Apache made per request),
//!   then one `sendmsg` carrying head and body.
//! - pipelined batch: one `recv` for the batch, every complete request answered into the queue,
//!   one `sendmsg` for all their responses (heads, copied small bodies and shared cached bodies,
//!   up to `IOV_MAX` segments), then `sendfile` for a file body, which the preceding write
//!   announces with `MSG_MORE` so the head and the file's first bytes share a segment.
//! - `Connection: close` / HTTP/1.0: the same, then `close` (or a lingering close, see
//!   [`close_gracefully`]).
//!
//! `sendmsg` rather than `writev`: the same gathered write, plus flags: `MSG_NOSIGNAL` (a closed
//! peer is an error, not a SIGPIPE) and `MSG_MORE` (TCP_CORK's effect without the two
//! `setsockopt` calls per response nginx pays for it).

use std::collections::VecDeque;
use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant, SystemTime};

use mio::net::TcpStream;
use wire::{Method, RequestLimits};

use crate::access_log::{AccessLog, Entry};
use crate::pool::{Bufs, Pool, Seg};
use crate::respond::{Body, Reply, Responder};
use crate::server::ServerStats;

/// Most segments in one gathered write (Linux `IOV_MAX`).
pub(crate) const IOV_MAX: usize = 1024;
/// Largest `sendfile` count Linux accepts in one call.
const SENDFILE_MAX: u64 = 0x7fff_f000;
/// Longest lingering close (capped by the header timeout).
const LINGER: Duration = Duration::from_secs(2);

/// What a connection is waiting for; decides which timeout applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// A request head is due (since accept, or since its first byte): `header_timeout`.
    Head,
    /// Between requests: `keepalive_timeout`.
    Idle,
    /// Output queued that the client is not taking: `send_timeout` since the last progress.
    Send,
    /// Closing: our FIN is sent, the client's leftover input is being drained.
    Linger,
}

#[derive(Debug)]
pub(crate) struct Conn {
    pub sock: TcpStream,
    pub peer: SocketAddr,
    pub bufs: Option<Bufs>,
    /// Unsent bytes in the queue.
    pub queued: u64,
    /// The socket may hold unread input: an edge was seen and no short read has happened since.
    pub rd_ready: bool,
    /// The client has shut down its side.
    pub eof: bool,
    /// Close once the queued output is written (no more requests are parsed).
    pub close_after: bool,
    /// The close must be a lingering one: the client may still be sending (an error response).
    pub linger: bool,
    /// At least one request has been answered.
    pub served: bool,
    /// When the current request head started (accept for the first one).
    pub head_since: Instant,
    pub phase: Phase,
    pub deadline: Instant,
}

pub(crate) enum Flushed {
    All,
    /// The socket buffer is full; resume on WRITABLE.
    Blocked,
}

impl Conn {
    pub fn new(sock: TcpStream, peer: SocketAddr, now: Instant, deadline: Instant) -> Conn {
        Conn {
            sock,
            peer,
            bufs: None,
            queued: 0,
            rd_ready: true,
            eof: false,
            close_after: false,
            linger: false,
            served: false,
            head_since: now,
            phase: Phase::Head,
            deadline,
        }
    }

    /// One `recv` into `buf`; a return shorter than `buf` means the socket is drained (with
    /// edge-triggered epoll a new edge comes when more arrives), so no read is made just to
    /// collect EAGAIN: the seeds' Apache made such a failing read on every request.
    /// Ok(0) is the end of input (or an empty `buf`).
    pub fn read_into(
        sock: &TcpStream,
        rd_ready: &mut bool,
        buf: &mut [u8],
        st: &mut ServerStats,
    ) -> io::Result<usize> {
        loop {
            st.reads += 1;
            let mut s = sock;
            match s.read(buf) {
                Ok(n) => {
                    st.read_bytes += n as u64;
                    if n < buf.len() {
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

    /// Writes queued output until done or the socket is full: the leading in-memory segments
    /// in one gathered write, then a file range by `sendfile`.
    pub fn flush(
        &mut self,
        iov: &mut Vec<libc::iovec>,
        st: &mut ServerStats,
    ) -> io::Result<Flushed> {
        let fd = self.sock.as_raw_fd();
        let Some(b) = self.bufs.as_mut() else {
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
                    self.queued -= n;
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
                        let (ptr, len) = match seg {
                            Seg::Mem { start, end } => (b.out[*start..].as_ptr(), end - start),
                            Seg::Shared { data, start, len } => (data[*start..].as_ptr(), *len),
                            Seg::File { .. } => {
                                file_follows = true;
                                break;
                            }
                        };
                        iov.push(libc::iovec {
                            iov_base: ptr as *mut libc::c_void,
                            iov_len: len,
                        });
                        total += len;
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
                    self.queued -= n as u64;
                    advance(&mut b.segs, n);
                    if n < total {
                        return Ok(Flushed::Blocked);
                    }
                }
            }
        }
    }
}

/// What a `send`, `sendmsg` or `sendfile` return value says.
enum Sent {
    Bytes(usize),
    /// EAGAIN: the socket buffer is full.
    Blocked,
    /// EINTR: nothing was sent; call again.
    Interrupted,
}

/// Reads `errno` for a negative return; any error but EAGAIN and EINTR is the connection's end.
fn sent(r: isize) -> io::Result<Sent> {
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

/// Drops `n` written bytes from the front of the in-memory segments.
fn advance(segs: &mut VecDeque<Seg>, mut n: usize) {
    while n > 0 {
        let Some(seg) = segs.front_mut() else { return };
        let left = match seg {
            Seg::Mem { start, end } => {
                let take = n.min(*end - *start);
                *start += take;
                n -= take;
                *end - *start
            }
            Seg::Shared { start, len, .. } => {
                let take = n.min(*len);
                *start += take;
                *len -= take;
                n -= take;
                *len
            }
            Seg::File { .. } => return,
        };
        if left == 0 {
            segs.pop_front();
        }
    }
}

/// What `drive` needs besides the connection: everything per thread, nothing shared.
pub(crate) struct Ctx {
    pub responder: Responder,
    pub log: Option<AccessLog>,
    pub stats: ServerStats,
    pub limits: RequestLimits,
    pub now: Instant,
    pub wall: SystemTime,
    pub date: [u8; wire::date::HTTP_DATE_LEN],
    pub max_pipeline: u64,
    pub header_timeout: Duration,
    pub keepalive_timeout: Duration,
    pub send_timeout: Duration,
    pub iov: Vec<libc::iovec>,
}

/// Moves a connection forward as far as it can go without blocking: read what is there, answer
/// every complete request, write. Returns false when the connection is to be closed now.
pub(crate) fn drive(c: &mut Conn, cx: &mut Ctx, pool: &mut Pool) -> bool {
    if c.phase == Phase::Linger {
        return drain_input(c, cx, pool);
    }
    let answered_before = cx.stats.requests;
    loop {
        let b = c.bufs.get_or_insert_with(|| pool.take());
        if c.rd_ready && !c.eof && !c.close_after && b.in_len < b.input.len() {
            let was_empty = b.in_len == 0;
            match Conn::read_into(
                &c.sock,
                &mut c.rd_ready,
                &mut b.input[b.in_len..],
                &mut cx.stats,
            ) {
                Ok(0) => c.eof = true,
                Ok(n) => {
                    b.in_len += n;
                    // The header timeout runs from a head's first byte (from accept for the
                    // first request: a connect-and-wait client is a slowloris too).
                    if was_empty && c.served {
                        c.head_since = cx.now;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => return false,
            }
        }
        let limited = answer(c, cx);
        if c.queued > 0 {
            let before = c.queued;
            match c.flush(&mut cx.iov, &mut cx.stats) {
                Err(_) => return false,
                Ok(Flushed::Blocked) => {
                    // The send timeout counts from the last progress, not the last event (a
                    // client sending more input while reading nothing does not extend it).
                    if c.phase != Phase::Send || c.queued < before {
                        c.phase = Phase::Send;
                        c.deadline = cx.now + cx.send_timeout;
                    }
                    return true;
                }
                Ok(Flushed::All) => {}
            }
        }
        if c.close_after {
            return close_gracefully(c, cx, pool);
        }
        let room = c.bufs.as_ref().map_or(0, |b| b.input.len() - b.in_len);
        let can_read = c.rd_ready && !c.eof && room > 0;
        if !can_read && !limited {
            break;
        }
    }
    if c.eof {
        // Every complete request is answered and written; what is left is a partial head.
        return false;
    }
    let in_len = c.bufs.as_ref().map_or(0, |b| b.in_len);
    if in_len > 0 || !c.served {
        c.phase = Phase::Head;
        c.deadline = c.head_since + cx.header_timeout;
    } else if c.phase != Phase::Idle || cx.stats.requests != answered_before {
        // Idle since the last response (an event that answered nothing does not extend it).
        c.phase = Phase::Idle;
        c.deadline = cx.now + cx.keepalive_timeout;
    }
    if let Some(b) = c.bufs.take_if(|b| b.idle()) {
        pool.give(b);
    }
    true
}

/// Answers every complete request in the input buffer while the output queue is under
/// `max_pipeline_bytes`, then compacts the buffer. Returns true if it stopped at that limit
/// with input left (the caller resumes once the queue is written).
fn answer(c: &mut Conn, cx: &mut Ctx) -> bool {
    let Some(b) = c.bufs.as_mut() else {
        return false;
    };
    let mut pos = 0;
    let mut limited = false;
    while pos < b.in_len && !c.close_after {
        if c.queued >= cx.max_pipeline {
            limited = true;
            break;
        }
        let buf = &b.input[pos..b.in_len];
        let start = b.out.len();
        let mut used;
        let mut is_head = false;
        let (reply, referer, user_agent) = match wire::parse_request(buf, &cx.limits) {
            Ok(None) => break,
            Ok(Some(req)) => {
                used = req.head_len;
                is_head = req.method == Method::Head;
                let has_body = req.content_length.is_some_and(|n| n > 0) || req.chunked;
                let mut reply = if has_body && matches!(req.method, Method::Get | Method::Head) {
                    cx.responder.error(413, &cx.date, true, &mut b.out)
                } else {
                    cx.responder.respond(&req, &cx.date, cx.now, &mut b.out)
                };
                if has_body {
                    // The body is not read, so nothing after it can be parsed: answer and close.
                    reply.close = true;
                    c.linger = true;
                    used = buf.len();
                }
                (reply, req.referer, req.user_agent)
            }
            Err(e) => {
                used = buf.len();
                c.linger = true;
                let reply = cx.responder.error(e.status(), &cx.date, true, &mut b.out);
                (reply, None, None)
            }
        };
        if let Some(log) = cx.log.as_mut() {
            let e = Entry {
                peer: c.peer.ip(),
                request_line: first_line(buf),
                status: reply.status,
                body_bytes: reply.body_bytes,
                referer,
                user_agent,
            };
            log.record(&e, cx.wall);
        }
        pos += used;
        c.served = true;
        count_status(&mut cx.stats, &reply);
        c.queued += (b.out.len() - start) as u64;
        b.push_mem(start);
        match reply.body {
            _ if is_head => {} // never a body after a HEAD's head, whatever the responder said
            Body::None => {}
            Body::Shared { data, start, len } if len > 0 => {
                c.queued += len as u64;
                b.segs.push_back(Seg::Shared { data, start, len });
            }
            Body::File { file, offset, len } if len > 0 => {
                c.queued += len;
                b.segs.push_back(Seg::File { file, offset, len });
            }
            Body::Shared { .. } | Body::File { .. } => {}
        }
        if reply.close {
            c.close_after = true;
        }
    }
    if pos > 0 {
        b.input.copy_within(pos..b.in_len, 0);
        b.in_len -= pos;
        if b.in_len > 0 {
            c.head_since = cx.now;
        }
    }
    limited
}

fn count_status(st: &mut ServerStats, reply: &Reply) {
    st.requests += 1;
    match reply.status / 100 {
        1 => st.status_1xx += 1,
        2 => st.status_2xx += 1,
        3 => st.status_3xx += 1,
        4 => st.status_4xx += 1,
        _ => st.status_5xx += 1,
    }
}

/// The request line as received (for the log), without leading empty lines or the CRLF.
fn first_line(buf: &[u8]) -> &[u8] {
    let start = buf
        .iter()
        .position(|&c| c != b'\r' && c != b'\n')
        .unwrap_or(buf.len());
    let rest = &buf[start..];
    let end = rest.iter().position(|&c| c == b'\n').unwrap_or(rest.len());
    let line = &rest[..end];
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The last response is written. A bare `close` is right when the client has nothing more in
/// flight. But closing a socket whose receive queue holds unread bytes (or that receives bytes
/// afterwards) makes Linux send RST instead of FIN, and an RST can make the client's kernel
/// discard our response before the client reads it: a client still sending a body it was told
/// was too large would see "connection reset" instead of its 413. So in that case: shutdown
/// (write) so the FIN follows the response, then read and discard until the client closes, for at
/// most `LINGER`.
fn close_gracefully(c: &mut Conn, cx: &mut Ctx, pool: &mut Pool) -> bool {
    if c.eof || !(c.linger || c.rd_ready) {
        return false;
    }
    cx.stats.lingering_closes += 1;
    if c.sock.shutdown(Shutdown::Write).is_err() {
        return false;
    }
    c.phase = Phase::Linger;
    c.deadline = cx.now + LINGER.min(cx.header_timeout);
    c.rd_ready = true;
    drain_input(c, cx, pool)
}

/// Reads and discards until the client's FIN (then close) or until the socket is drained.
fn drain_input(c: &mut Conn, cx: &mut Ctx, pool: &mut Pool) -> bool {
    let b = c.bufs.get_or_insert_with(|| pool.take());
    while c.rd_ready {
        match Conn::read_into(&c.sock, &mut c.rd_ready, &mut b.input[..], &mut cx.stats) {
            Ok(0) => return false,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return false,
        }
    }
    true
}
