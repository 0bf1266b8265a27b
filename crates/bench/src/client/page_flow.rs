//! Between a Webchild's pages: what a connection calls when its page ends (record it, think,
//! wait for the open-loop slot or back off, start the next or finish), and the same for a
//! member of a group that shares its pages (`--connections-per-client`, `shared.rs`). The
//! two starts call each other (a member with nothing left starts the next page), so they are
//! one file; the page state they move is `page.rs`'s `Child`.

use super::exchange::{Exchange, Phase};
use super::page::Child;
use super::{shared, ThreadState, Wire, BACKOFF_US};
use crate::stats::ErrorKind;

/// Picks the next page without starting it (also what a connection that runs several pages
/// at once calls); false when the quota is done. The one way in to `Child::pick_page`.
pub(super) fn pick(ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) -> bool {
    ch.pick_page(cx, now)
}

/// Starts the next page on `conn` (or finishes, the quota done).
pub(super) fn start_page<C: Wire>(
    conn: &mut C,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    now: u64,
) {
    if !ch.may_begin(cx, now) {
        return;
    }
    if cx.members > 1 {
        // The page is the Webchild's, shared by its connections (`shared.rs`).
        return start_member_page(conn, ch, cx, now);
    }
    if !pick(ch, cx, now) {
        return finish(conn, ch, cx, now);
    }
    conn.start_page(ch, cx, now);
}

/// The page ended at `now`: recorded, then the next one (after a back-off for a failed connect).
pub(super) fn end_page<C: Wire>(
    conn: &mut C,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    hit: bool,
    now: u64,
    backoff: bool,
) {
    Child::record_page(cx, ch.page, hit, now);
    next_page(conn, ch, cx, now, backoff);
}

/// Thinks, waits for the next open-loop slot, or starts the next page (or finishes).
pub(super) fn next_page<C: Wire>(
    conn: &mut C,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    now: u64,
    backoff: bool,
) {
    if ch.pages_left == 0 {
        return finish(conn, ch, cx, now);
    }
    let schedule = &cx.sh.schedule;
    let mut at = match schedule.interval_us {
        // Open loop: the next slot, however late this page ended (then it starts at once).
        Some(_) => ch.next_intended_us as u64,
        None => now + schedule.think_us,
    };
    if backoff {
        at = at.max(now + BACKOFF_US);
    }
    if at <= now {
        return start_page(conn, ch, cx, now);
    }
    ch.phase = Phase::Wait;
    cx.timers.arm(ch.slot, at);
}

/// The quota is done: the connection closed, the Webchild out of the loop's count.
pub(super) fn finish<C: Wire>(conn: &mut C, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
    conn.close();
    ch.phase = Phase::Done;
    ch.done_us = now;
    cx.timers.disarm(ch.slot);
    cx.active -= 1;
}

/// [`start_page`] for a member (`shared.rs`): the page in progress joined, or the next one
/// picked (and the idle members woken to it), or the Webchild finished when its quota is done.
fn start_member_page<C: Wire>(conn: &mut C, ch: &mut Child, cx: &mut ThreadState<'_>, now: u64) {
    let (g, _) = shared::of(ch, cx);
    if cx.groups[g].is_done() {
        return finish(conn, ch, cx, now);
    }
    if !cx.groups[g].is_busy() {
        let Some(mut pager) = cx.groups[g].take_pager() else {
            return;
        };
        let picked = pick(&mut pager, cx, now);
        let page = pager.page;
        let started = cx.groups[g].begin_page(cx.sh, pager, picked);
        shared::wake(cx, g, now);
        if picked && !started {
            // A `unique` data set has given every row: the Webchild stops, counted once.
            let ex = Exchange {
                file_start_us: now,
                ..Exchange::new(page)
            };
            ch.record_failure(cx, &ex, ErrorKind::DataExhausted, 0, now);
        }
        if !started {
            return finish(conn, ch, cx, now);
        }
    }
    ch.phase = Phase::Busy;
    conn.start_page(ch, cx, now);
}

/// Member `ch` has no file now: the next page if none is in progress, else idle until one
/// starts (or until `at`, a back-off after a failed connect).
pub(super) fn next_for_member<C: Wire>(
    conn: &mut C,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    now: u64,
    at: Option<u64>,
) {
    let (g, j) = shared::of(ch, cx);
    ch.phase = Phase::Wait;
    if let Some(at) = at {
        return cx.timers.arm(ch.slot, at);
    }
    if !cx.groups[g].is_busy() {
        return start_page(conn, ch, cx, now);
    }
    cx.timers.disarm(ch.slot);
    cx.groups[g].park(j);
}
