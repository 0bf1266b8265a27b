//! The access-log line of a response flow control held back, written when the response ends
//! (sent whole, its stream reset or stopped, its connection closed, or the loop ended with it
//! under way: [`H3::log_held`], before the log's last flush) with the body bytes
//! handed to QUIC by then: Common Log Format's `%b` is the bytes sent, and a client that cut a
//! 20 MB transfer off after 2 MB is logged with about 2 MB (what QUIC had taken for the stream
//! and not yet sent counts, at most the stream's window). A response that goes whole at once
//! (most: a small body) is logged as it is answered, and so is every response when there is
//! no access log, so none of this costs them anything. Every response's status is counted as
//! it is answered, held or not, so the counts are the same with or without a log.
//! A held response's copies of its request line, `Referer`, `User-Agent` and user live in a
//! record shared with HTTP/1.1 and HTTP/2 (`protocol/held_log.rs`), taken from a list of spares
//! and given back after, so that no allocation is made per response once warm.

use std::net::IpAddr;

use super::{Pending, Rest, H3};
use crate::access_log::Entry;
use crate::protocol::{request_line, Worker};

/// The body bytes `p` has not handed to QUIC.
fn unsent(p: &Pending) -> u64 {
    match &p.rest {
        Some(Rest::Shared { at, end, .. }) => (end - at) as u64,
        Some(Rest::File { offset, end, .. }) => end - offset,
        Some(Rest::Page { bytes, at }) => (bytes.len() - at) as u64,
        None => 0,
    }
}

/// What a request's log line says, borrowed from it while it is answered.
pub(super) struct Line<'a> {
    pub peer: IpAddr,
    pub method: &'a [u8],
    pub path: &'a [u8],
    pub status: u16,
    pub body_bytes: u64,
    pub referer: Option<&'a [u8]>,
    pub user_agent: Option<&'a [u8]>,
    pub user: Option<&'a [u8]>,
}

impl H3 {
    /// The loop ends: every response still held back is logged with what it sent by now (the
    /// connections are dropped with the loop; their lines would be lost).
    pub fn log_held(&mut self, w: &mut Worker) {
        for (_, p) in self.pending.drain() {
            done(p, w);
        }
    }

    /// Keeps `line` with `id`'s held-back response, to be written when it ends.
    pub(super) fn log_when_done(&mut self, id: super::RequestId, line: Line<'_>, w: &mut Worker) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        let entry = Entry {
            peer: line.peer,
            request_line: request_line(&mut self.log_line, line.method, line.path, b"HTTP/3.0"),
            status: line.status,
            body_bytes: line.body_bytes,
            referer: line.referer,
            user_agent: line.user_agent,
            user: line.user,
        };
        if w.held_logs.has_room() {
            p.log = Some(w.held_logs.hold(&entry));
        } else if let Some(log) = w.log.as_mut() {
            // The thread holds enough: logged now with its whole length.
            log.record(&entry, w.wall);
        }
    }
}

/// `p`'s response is over: its line written (if it was held for one) with the body bytes
/// handed to QUIC (its status was counted when it was answered); its record kept as a spare.
pub(super) fn done(p: Pending, w: &mut Worker) {
    let unsent = unsent(&p);
    if let Some(h) = p.log {
        let sent = h.body_bytes().saturating_sub(unsent);
        w.held_done(h, sent);
    }
}
