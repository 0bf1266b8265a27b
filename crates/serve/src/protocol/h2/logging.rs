//! The access-log line of a response whose body is over `HOLD_BODY_BYTES` (`held_log.rs`):
//! held in its stream's slot and written when its body ends (its last DATA frame, with
//! END_STREAM, framed into the connection's output: after that send, whether or not the
//! stream stays open for a request body still coming; or the stream reset by either side, or
//! the connection gone), with the DATA bytes of its body framed into the connection's output
//! queue by then. That counts what the queue still holds unwritten, at most
//! `max_pipeline_bytes` and a frame (over TLS, also the encrypted output not yet written, up
//! to 256 KiB); a client that cuts a 20 MB transfer off after 2 MB is logged with about 2 MB.
//! A smaller response is logged as it is answered with its whole length, and so is a large
//! one while the thread's held records are over their budget (`held_log.rs`).

use http2::StreamId;

use super::H2;
use crate::access_log::Entry;
use crate::protocol::held_log::{HeldLog, HOLD_BODY_BYTES};
use crate::protocol::{count_status, finish, Worker};

/// A stream's line as it is answered: written now, or, when its body (`body` bytes, 0 for a
/// response without one: HEAD, 304) may outlive this turn, copied into `staged` (its status is
/// counted now, as every response's is) for [`H2::hold_staged`]. Returns whether it was.
pub(super) fn log_or_hold<'a>(
    w: &mut Worker,
    status: u16,
    body: u64,
    staged: &mut Option<HeldLog>,
    entry: impl FnOnce() -> Entry<'a>,
) -> bool {
    if w.log.is_some() && body > HOLD_BODY_BYTES && w.held_logs.has_room() {
        hold(w, &entry(), staged);
        return true;
    }
    finish(w, status, entry);
    false
}

/// Apart, and cold: the small responses' path does not carry it.
#[cold]
#[inline(never)]
fn hold(w: &mut Worker, entry: &Entry<'_>, staged: &mut Option<HeldLog>) {
    count_status(&mut w.stats, entry.status);
    *staged = Some(w.held_logs.hold(entry));
}

impl H2 {
    /// Keeps the staged line with stream `id` (slot `i`) until it ends; written now if
    /// nghttp2 refused its response (nothing of it will be sent).
    #[cold]
    #[inline(never)]
    pub(super) fn hold_staged(&mut self, i: usize, id: StreamId, w: &mut Worker) {
        let Some(log) = self.staged_log.take() else {
            return;
        };
        match self.streams.slots.get_mut(i).filter(|s| s.id == id) {
            Some(slot) => slot.log = Some(log),
            None => w.held_done(log, 0),
        }
    }

    /// Writes the lines of the held streams that ended in the session's last call.
    pub(super) fn log_ended(&mut self, w: &mut Worker) {
        for (log, sent) in self.streams.ended_logs.drain(..) {
            w.held_done(log, sent);
        }
    }

    /// The connection is gone: every stream still holding its line is logged with what it
    /// framed.
    pub fn log_held(&mut self, w: &mut Worker) {
        for slot in self.streams.slots.iter_mut() {
            if let Some(log) = slot.log.take() {
                let sent = log.body_bytes().saturating_sub(slot.left);
                self.streams.ended_logs.push((log, sent));
            }
        }
        self.log_ended(w);
    }
}
