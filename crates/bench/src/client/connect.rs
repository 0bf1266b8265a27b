//! A Webchild's connection, whatever protocol it speaks over TCP: the client state made (TLS:
//! its key shares, before the connect and outside its time), the nonblocking TCP connect
//! started and registered, and the connect timeout armed; `h1.rs` and `h2.rs` go on from the
//! socket's first writable event with [`ready`], then [`handshake`]. Then its one write loop,
//! [`write_out`], under both wires.

use super::errors::connect_error;
use super::exchange::Exchange;
use super::page::Child;
use super::{ThreadState, NONE};
use crate::stats::ErrorKind;
use crate::transport::Transport;
use mio::Token;
use std::io;

/// Starts connecting for `ch` at `now`: the transport and when its connect began, or the error
/// and when it was found.
pub(super) fn open(
    ch: &Child,
    cx: &mut ThreadState<'_>,
    now: u64,
) -> Result<(Transport, u64), (ErrorKind, u64)> {
    let prepared = cx
        .sh
        .connector
        .prepare()
        .map_err(|e| (connect_error(&e), now))?;
    // HTTPS: the TLS state (its key shares) was made just now, before the TCP connect, and is
    // not part of it; the response time, from the file's start, still has it.
    let now = if prepared.is_tls() { cx.now() } else { now };
    ch.connect_began(cx, now);
    let conn = Transport::open(&cx.sh.connector, prepared, &cx.registry, Token(ch.slot))
        .map_err(|e| (connect_error(&e), now))?;
    cx.timers
        .arm(ch.slot, now + cx.sh.schedule.connect_timeout_us);
    Ok((conn, now))
}

/// The first event of a connecting socket: `Ok(Some(now))` connected at `now`; `Ok(None)`
/// nothing to do (the run has ended: connected or not, nothing is sent now, begun and not sent;
/// or a stale event: still connecting); or the error it failed with and when.
pub(super) fn ready(
    conn: &Transport,
    cx: &ThreadState<'_>,
) -> Result<Option<u64>, (ErrorKind, u64)> {
    let now = cx.now();
    if cx.ended(now) {
        return Ok(None);
    }
    match conn.connected() {
        Ok(true) => Ok(Some(now)),
        Ok(false) => Ok(None),
        Err(e) => Err((connect_error(&e), now)),
    }
}

/// Moves `conn`'s handshake on at `now` (plain TCP has none: it is done at once), for `ex`,
/// whose connection's handshake began at `began`: `Ok(Some(now))` done at `now` (over TLS it is
/// recorded apart from the TCP connect, and `now` read after the handshake's own I/O: one call
/// can send the ClientHello, read the server's whole flight and answer it); `Ok(None)` waiting
/// for the socket, still under the connect deadline; or how it failed.
pub(super) fn handshake(
    conn: &mut Transport,
    (ch, ex): (&Child, &Exchange),
    cx: &mut ThreadState<'_>,
    began: u64,
    now: u64,
) -> io::Result<Option<u64>> {
    if !conn.handshake()? {
        return Ok(None);
    }
    let Some(session) = conn.tls_session() else {
        return Ok(Some(now));
    };
    if cx.sh.config.handshake_past_end {
        until_end(cx);
    }
    let now = cx.now();
    ch.record_handshake(cx, ex, now, now - began, session);
    Ok(Some(now))
}

/// `handshake_past_end` (tests): waits until the run's time is up, if it has an end.
fn until_end(cx: &ThreadState<'_>) {
    let end = cx.sh.schedule.end_us;
    if end == NONE {
        return;
    }
    while !cx.ended(cx.now()) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Writes `bytes[*pos..]` to `conn` as far as the socket takes it, `*pos` moved on: `Ok(true)`
/// all of it went (over HTTPS, its TLS records handed to the socket as far as it takes them; the
/// rest go with its next writable event), `Ok(false)` the socket is full (its next writable
/// event goes on), or the error (a write of nothing is `WriteZero`). The one write loop of every
/// wire over TCP.
pub(super) fn write_out(conn: &mut Transport, bytes: &[u8], pos: &mut usize) -> io::Result<bool> {
    while *pos < bytes.len() {
        match conn.write(&bytes[*pos..]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => *pos += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    if conn.wants_write() {
        conn.send_pending()?;
    }
    Ok(true)
}
