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
//! [`HeldLog`] taken from a list of spares and given back after, so that no allocation is made
//! per response once the list has grown to the responses held at once.

use std::net::IpAddr;

use super::{Pending, Rest, H3};
use crate::access_log::Entry;
use crate::protocol::Worker;

/// Spares kept past this many are dropped (a burst of held responses does not pin memory).
const MAX_SPARES: usize = 256;
/// A record whose buffers grew past this (a long path, `Referer` or `User-Agent`) is dropped,
/// not kept as a spare: 256 spares of 16 KiB fields would pin 4 MiB on a thread.
const MAX_SPARE_BYTES: usize = 2048;

/// What a held response's log line needs, owned (its request is gone by the time it ends).
#[derive(Default)]
pub(super) struct HeldLog {
    peer: Option<IpAddr>,
    line: Vec<u8>,
    referer: Kept,
    user_agent: Kept,
    user: Kept,
    status: u16,
    /// The body's whole length, as the responder said it.
    body_bytes: u64,
}

/// A field that may be absent, its bytes kept for the next fill either way.
#[derive(Default)]
struct Kept {
    present: bool,
    bytes: Vec<u8>,
}

impl HeldLog {
    /// The bytes its buffers hold on to.
    fn capacity(&self) -> usize {
        self.line.capacity()
            + self.referer.bytes.capacity()
            + self.user_agent.bytes.capacity()
            + self.user.bytes.capacity()
    }
}

impl Kept {
    /// A copy of `from`, reusing the allocation.
    fn refill(&mut self, from: Option<&[u8]>) {
        self.bytes.clear();
        self.present = from.is_some();
        self.bytes.extend_from_slice(from.unwrap_or_default());
    }

    fn shown(&self) -> Option<&[u8]> {
        self.present.then_some(&self.bytes[..])
    }
}

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
            done(p, &mut self.spare_logs, w);
        }
    }

    /// Keeps `line` with `id`'s held-back response, to be written when it ends.
    pub(super) fn log_when_done(&mut self, id: super::RequestId, line: Line<'_>) {
        let Some(p) = self.pending.get_mut(&id) else {
            return;
        };
        let mut h = self.spare_logs.pop().unwrap_or_default();
        h.peer = Some(line.peer);
        crate::protocol::request_line(&mut h.line, line.method, line.path, b"HTTP/3.0");
        h.referer.refill(line.referer);
        h.user_agent.refill(line.user_agent);
        h.user.refill(line.user);
        (h.status, h.body_bytes) = (line.status, line.body_bytes);
        p.log = Some(h);
    }
}

/// `p`'s response is over: its line written (if it was held for one) with the body bytes
/// handed to QUIC (its status was counted when it was answered); its record kept as a spare.
pub(super) fn done(p: Pending, spares: &mut Vec<HeldLog>, w: &mut Worker) {
    let Some(h) = &p.log else {
        return;
    };
    let sent = h.body_bytes.saturating_sub(unsent(&p));
    let peer = h.peer.unwrap_or(IpAddr::from([0, 0, 0, 0]));
    if let Some(log) = w.log.as_mut() {
        let entry = Entry {
            peer,
            request_line: &h.line,
            status: h.status,
            body_bytes: sent,
            referer: h.referer.shown(),
            user_agent: h.user_agent.shown(),
            user: h.user.shown(),
        };
        log.record(&entry, w.wall);
    }
    if kept_as_spare(h, spares.len()) {
        spares.extend(p.log);
    }
}

/// Whether `h` joins the `spares` kept: only while few are, and only if its buffers are small.
fn kept_as_spare(h: &HeldLog, spares: usize) -> bool {
    spares < MAX_SPARES && h.capacity() <= MAX_SPARE_BYTES
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_grown_large_is_not_kept_as_a_spare() {
        let mut h = HeldLog::default();
        h.line.extend_from_slice(b"GET /a HTTP/3.0");
        h.user_agent.refill(Some(b"curl/8"));
        assert!(kept_as_spare(&h, 0));
        assert!(!kept_as_spare(&h, MAX_SPARES));
        h.referer.refill(Some(&[b'r'; 16 * 1024]));
        assert!(!kept_as_spare(&h, 0));
    }
}
