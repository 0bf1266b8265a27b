//! A Webchild's new connection, whatever protocol it will speak: the client state made (TLS:
//! its key shares, before the connect and outside its time), the nonblocking TCP connect
//! started and registered, and the connect timeout armed. `h1.rs` and `h2.rs` go on from the
//! socket's first writable event with [`ready`].

use super::errors::connect_error;
use super::page::Child;
use super::ThreadState;
use crate::stats::ErrorKind;
use crate::transport::Transport;
use mio::Token;

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
