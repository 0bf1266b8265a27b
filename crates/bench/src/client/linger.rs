//! The end of the run's lingering close, as servers close a connection: after the window, each
//! connection with a request in flight ends its sending side (what the kernel holds goes out,
//! then a FIN), then reads and discards until the server closes or the bound passes, and only
//! then is closed.
//!
//! Why: closing a socket whose receive queue still holds unread bytes (the responses that
//! arrived after the end) makes Linux send a RST instead of a FIN and drop whatever the send
//! queue still held, so a request counted as sent might never reach the server. And over
//! HTTP/2, a GOAWAY the server sent just before the end may still be unread: the streams above
//! its last stream id were sent but will never be processed; over HTTP/1.1 a response saying
//! `Connection: close`, with requests pipelined behind it. The reads here find them (see
//! `h2/after_end.rs`, `h1/after_end.rs`), so that those requests count as not sent.
//!
//! An upload whose head went but not its whole body is not sent, and is cancelled here rather
//! than left to stop short (a server may take a request whose body stopped for one it has):
//! over HTTP/2 by a RST_STREAM CANCEL after the frame the socket was in (`h2/cut_at_end.rs`),
//! over HTTP/3 by its request side reset (`h3/datagrams.rs`), before anything more goes.
//!
//! A pipelining connection with more than one request outstanding holds its FIN until the
//! server has answered all but the last (`h1/after_end.rs`): a server such as nginx that sees
//! the FIN while it works on one request ends it and never reads those pipelined behind it.
//!
//! It runs after the window has ended: nothing read here is counted (no bytes, no responses,
//! no time), so no figure of the run changes. It costs nothing per request: once per
//! connection, at the end, all of a thread's connections at once through its event loop,
//! bounded by [`LINGER`] in all.

use super::exchange::Phase;
use super::{ThreadState, Webchild, Wire};
use crate::transport::Transport;
use mio::{Events, Poll};
use std::io;
use std::time::{Duration, Instant};

/// The longest a thread waits for its servers to close after the end.
pub(super) const LINGER: Duration = Duration::from_secs(1);

/// Where one connection is in its lingering close.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Linger {
    /// Writing what it holds (TLS records); the FIN is not queued yet.
    Flushing,
    /// The FIN is queued: reading until the server closes.
    Draining,
    /// Closed by the server, failed, or nothing to wait for.
    Done,
}

/// One step of a connection's lingering close, on its readiness (or once at the start: the
/// socket is edge-triggered, so what is already there must be read without an event). `late`
/// sees every byte read (HTTP/2 looks for a GOAWAY, HTTP/1 for where the server stopped), and
/// an empty slice when the server closed.
pub(super) fn step(
    conn: Option<&mut Transport>,
    at: Linger,
    buf: &mut [u8],
    mut late: impl FnMut(&[u8]),
) -> Linger {
    let Some(conn) = conn else {
        return Linger::Done;
    };
    let mut at = at;
    if at == Linger::Flushing {
        match conn.shutdown_write() {
            Ok(true) => at = Linger::Draining,
            Ok(false) => {}
            Err(_) => return Linger::Done,
        }
    }
    loop {
        match conn.read(buf) {
            Ok(0) => {
                late(&[]);
                return Linger::Done;
            }
            Ok(n) => late(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return at,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Linger::Done,
        }
    }
}

/// Every connection of the thread with a page in progress, closed as above, within [`LINGER`].
pub(super) fn linger_all<C: Wire>(
    poll: &mut Poll,
    events: &mut Events,
    children: &mut [Webchild<C>],
    cx: &ThreadState<'_>,
    buf: &mut [u8],
) {
    let mut at: Vec<Linger> = children
        .iter_mut()
        .map(|c| match c.ch.phase {
            Phase::Busy => c.conn.linger(&c.ch, cx, Linger::Flushing, buf),
            _ => Linger::Done,
        })
        .collect();
    let deadline = Instant::now() + LINGER;
    while at.iter().any(|&l| l != Linger::Done) {
        let now = Instant::now();
        let left = deadline.saturating_duration_since(now);
        if left.is_zero() {
            return;
        }
        // QUIC's timers (loss recovery: a cancel or a request lost on the way is sent again)
        // wake their connection too, with no event: the server may have nothing to send.
        let wake = match C::LINGER_TIMERS {
            true => lingering(children, &at)
                .filter_map(|c| c.conn.linger_wake())
                .min(),
            false => None,
        };
        let timeout = wake.map_or(left, |w| w.saturating_duration_since(now).min(left));
        match poll.poll(events, Some(timeout)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return,
        }
        for ev in events.iter() {
            let slot = ev.token().0;
            if let (Some(c), Some(l)) = (children.get_mut(slot), at.get_mut(slot)) {
                if *l != Linger::Done {
                    *l = c.conn.linger(&c.ch, cx, *l, buf);
                }
            }
        }
        if wake.is_some_and(|w| w <= Instant::now()) {
            let now = Instant::now();
            for (c, l) in children.iter_mut().zip(at.iter_mut()) {
                if *l != Linger::Done && c.conn.linger_wake().is_some_and(|w| w <= now) {
                    *l = c.conn.linger(&c.ch, cx, *l, buf);
                }
            }
        }
    }
}

/// The connections still lingering.
fn lingering<'a, C: Wire>(
    children: &'a [Webchild<C>],
    at: &'a [Linger],
) -> impl Iterator<Item = &'a Webchild<C>> {
    (children.iter().zip(at))
        .filter(|(_, &l)| l != Linger::Done)
        .map(|(c, _)| c)
}
