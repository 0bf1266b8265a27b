//! What a multiplexing connection that is done (its GOAWAY, or its end with streams the server
//! never processed) leaves to send on a new one, judged by what the server did on it: one rule
//! for HTTP/2 and HTTP/3, each wire saying where its exchanges are and how a page hears of a
//! failure (`Refusals`).
//!
//! If the server processed a stream on the connection (answered or failed one), the run makes
//! progress: all of it is sent again, however often refused before. If it processed none (a
//! server that sends GOAWAY at once, or refuses every request), each exchange is sent again
//! once, and one that such a connection refused before fails (`h2_goaway`, `h3_goaway`), so
//! that a `-n` run ends and fail-fast can stop a timed one. A GOAWAY before any stream was
//! opened refuses what waited for the connection (the page's next file, the lane's page
//! picked) as well.

use crate::client::exchange::Exchange;
use crate::client::page::Child;
use crate::client::ThreadState;
use crate::stats::{ErrorKind, Stats};

/// What the rule needs of a wire.
pub(in crate::client) trait Refusals {
    /// What an exchange refused a second time by a connection that processed nothing fails as.
    const REFUSED_AGAIN: ErrorKind;

    /// The connection's table's `retry` (`InFlight::retry`): what is to go on a new
    /// connection.
    fn retry(&mut self) -> &mut Vec<Exchange>;
    /// The server processed a stream on this connection.
    fn processed(&self) -> bool;
    /// The server's GOAWAY came before any stream was opened on the connection.
    fn refused_at_once(&self) -> bool;
    /// The connection's generation (`Exchange::retried_on`).
    fn conn_gen(&self) -> u64;
    /// The wire's count of streams retried.
    fn retried(stats: &mut Stats) -> &mut u64;
    /// What waited for the connection (the page's next file, the lane's page picked), if
    /// anything, queued in `retry` as refused by it.
    fn refuse_waiting(&mut self, ch: &Child, cx: &mut ThreadState<'_>, now: u64);
    /// `ex`, taken from `retry` at `at`, failed (recorded): its page is told.
    fn refused_failed(&mut self, cx: &mut ThreadState<'_>, at: usize, ex: &Exchange, now: u64);
}

/// Judges what `w`'s connection leaves in `retry` (see above): those refused a second time by
/// connections that processed nothing are failed and taken out. True if any failed.
pub(in crate::client) fn judge_refusals<W: Refusals>(
    w: &mut W,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    now: u64,
) -> bool {
    if w.processed() {
        for ex in w.retry() {
            ex.refused_empty = false;
        }
        return false;
    }
    if w.refused_at_once() {
        w.refuse_waiting(ch, cx, now);
    }
    let mut failed = false;
    let mut k = 0;
    while k < w.retry().len() {
        let ex = &mut w.retry()[k];
        if !ex.refused_empty {
            ex.refused_empty = true;
            k += 1;
            continue;
        }
        let ex = w.retry().remove(k);
        not_retried(w, &mut cx.stats, &ex);
        ch.record_failure(cx, &ex, W::REFUSED_AGAIN, 0, now);
        w.refused_failed(cx, k, &ex, now);
        failed = true;
    }
    failed
}

/// `ex`, taken from `w`'s `retry`, fails instead of being sent again: if this connection
/// refused it, it was counted as retried when taken, and is not sent again after all. (One held
/// unwritten here, refused on the connection before, was counted there, and was not taken
/// again here.)
pub(in crate::client) fn not_retried<W: Refusals>(w: &W, stats: &mut Stats, ex: &Exchange) {
    if ex.retried_on == w.conn_gen() {
        let retried = W::retried(stats);
        *retried = retried.saturating_sub(1);
    }
}
