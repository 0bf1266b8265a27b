//! Ending a request stream so that neither QUIC nor HTTP/3 keeps it past its end.
//!
//! Two things in quiche (0.30.0) outlive a stream this side resets:
//!
//! - QUIC collects a stream (and gives the client back its stream credit) only at certain
//!   moments: when the acknowledgement of our RESET_STREAM arrives with both sides complete,
//!   or when a read or write meets its end. A stream shut both ways at once whose client
//!   answers our STOP_SENDING with its RESET_STREAM after that acknowledgement is complete,
//!   but nothing collects it any more (its drained receive side is never readable again):
//!   its credit is lost for the connection's life. So the reset of our side waits until the
//!   client's side has ended (its RESET_STREAM or FIN, which a QUIC stack sends in answer to
//!   STOP_SENDING): the acknowledgement of ours then finds the stream complete and collects
//!   it.
//! - HTTP/3 drops its state for a request stream (with the buffer a header block is read
//!   into: up to 1.5 times the header limit) only when this side finished the stream's
//!   response through it. A stream reset before that, its header block unfinished or its
//!   response cut, kept that state until the connection ended: a client could open streams
//!   with most of a header block each, reset them, and repeat as fast as its credit came
//!   back, the server holding every round's blocks. Once QUIC has collected the stream, a
//!   write through HTTP/3 fails and, the stream being finished, quiche drops its state then.
//!
//! A connection's streams being ended are walked as datagrams arrive; they are at most about
//! its stream limit (each holds a stream of QUIC's until collected).

use super::Conn;
use quiche::h3;

/// A request stream this side reset, or the client reset after its request was handed out,
/// not yet let go of by QUIC and HTTP/3.
#[derive(Debug, Clone, Copy)]
pub(super) struct Ending {
    stream: u64,
    /// The code of our reset; None for a stream only watched (`watch`).
    code: Option<u64>,
    /// Our side is reset (RESET_STREAM queued), or is not ours to reset.
    written: bool,
    /// The bytes of its unfinished header block charged to the connection: HTTP/3 holds them
    /// until it lets go of the stream (`head_budget.rs`).
    held: u32,
}

/// Resets `stream` both ways with `code`: STOP_SENDING now, our RESET_STREAM once the
/// client's side has ended; nothing more is written to it, so it waits for no flow control.
/// False if QUIC has no such stream (gone, or never opened).
pub(super) fn end(conn: &mut Conn, stream: u64, code: u64) -> Result<bool, quiche::Error> {
    // Its header block, if it was in one, is no longer waited for.
    let held = super::head_budget::take(conn, stream);
    let exists = match conn
        .quic
        .stream_shutdown(stream, quiche::Shutdown::Read, code)
    {
        Ok(()) => true,
        // No such stream, or its read side already shut.
        Err(quiche::Error::Done) => !matches!(
            conn.quic.stream_capacity(stream),
            Err(quiche::Error::InvalidStreamState(_))
        ),
        Err(e) => {
            conn.charge.give_back(u64::from(held));
            return Err(e);
        }
    };
    conn.blocked.retain(|&s| s != stream);
    // A stream QUIC no longer has may still have HTTP/3 state: `settle` lets it go at once.
    // One watched (`watch`) has our side to reset now; one reset already keeps its first code.
    let ending = Ending {
        stream,
        code: Some(code),
        written: false,
        held,
    };
    match conn.ending.iter_mut().find(|e| e.stream == stream) {
        Some(e) if e.code.is_none() => {
            *e = Ending {
                held: e.held + held,
                ..ending
            }
        }
        Some(e) => e.held += held,
        None => conn.ending.push(ending),
    }
    settle(conn);
    Ok(exists)
}

/// Watches `stream`, which the client reset after its request was handed out: once QUIC lets
/// go of it (the caller reset it too, finished its response, or the client stopped the
/// response), HTTP/3's state goes, as for a stream this side reset.
pub(super) fn watch(conn: &mut Conn, stream: u64) {
    if !conn.ending.iter().any(|e| e.stream == stream) {
        conn.ending.push(Ending {
            stream,
            code: None,
            written: true,
            held: 0,
        });
    }
}

/// Resets our side of each stream whose client side has ended, and lets HTTP/3 drop each
/// stream QUIC has collected.
pub(super) fn settle(conn: &mut Conn) {
    let mut i = 0;
    while i < conn.ending.len() {
        let e = conn.ending[i];
        if !e.written {
            if !conn.quic.stream_finished(e.stream) {
                i += 1;
                continue;
            }
            // A side the client stopped was reset by QUIC already, with the client's code.
            if let (Some(code), false) = (
                e.code,
                matches!(
                    conn.quic.stream_capacity(e.stream),
                    Err(quiche::Error::StreamStopped(_))
                ),
            ) {
                // Done: already reset, or collected.
                let _ = (conn.quic).stream_shutdown(e.stream, quiche::Shutdown::Write, code);
            }
            conn.ending[i].written = true;
        }
        if collected(&mut conn.quic, e.stream) {
            forget(conn, e.stream);
            conn.charge.give_back(u64::from(e.held));
            conn.ending.swap_remove(i);
            continue;
        }
        i += 1;
    }
}

/// QUIC has let go of `stream`. A stream the client stopped is collected by the first call
/// that finds it stopped and complete, so a second call says whether it was.
fn collected(quic: &mut quiche::Connection, stream: u64) -> bool {
    for _ in 0..2 {
        match quic.stream_capacity(stream) {
            Err(quiche::Error::InvalidStreamState(_)) => return true,
            Err(quiche::Error::StreamStopped(_)) => continue,
            _ => return false,
        }
    }
    false
}

/// Has HTTP/3 drop its state for `stream`, which QUIC has collected: a write on it fails at
/// QUIC, and quiche, finding the stream finished, drops the state as it fails. A response head
/// for a stream never answered; the body's end for one whose head went (the head's write
/// refuses that stream). Nothing reaches the wire: QUIC has no such stream any more.
fn forget(conn: &mut Conn, stream: u64) {
    let Some(h3) = conn.h3.as_mut() else {
        return;
    };
    let head = [h3::Header::new(b":status", b"204")];
    let _ = h3.send_response(&mut conn.quic, stream, &head, true);
    let _ = h3.send_body(&mut conn.quic, stream, &[], true);
}
