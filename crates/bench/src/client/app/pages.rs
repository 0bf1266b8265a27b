//! Where a connection's page meets the Webchild's application session, the same over
//! HTTP/1, HTTP/2 and HTTP/3: a page starts with its data rows drawn, and a file waits while
//! one before it that extracts values is still in flight.

use super::super::exchange::Exchange;
use super::super::page::Child;
use super::super::ThreadState;
use super::AppExchange;
use crate::stats::ErrorKind;
use crate::Workload;

/// The page `ch` picked starts: its data rows drawn by the connection's application exchange
/// (made at its first page; none for a static workload: true). False when a `unique` data
/// set has given every row: the page is recorded `data_exhausted` through `ex` (the
/// connection's exchange for it), and the caller ends it once its own state is idle.
pub(in crate::client) fn page_starts(
    app: &mut Option<Box<AppExchange>>,
    ch: &mut Child,
    cx: &mut ThreadState<'_>,
    ex: &mut Exchange,
    now: u64,
) -> bool {
    if app.is_none() {
        *app = AppExchange::of(cx.sh, ch.id);
    }
    let Some(app) = app.as_mut() else {
        return true;
    };
    if app.start_page(ch.page.index) {
        return true;
    }
    ex.file_start_us = now;
    ch.record_failure(cx, ex, ErrorKind::DataExhausted, 0, now);
    false
}

/// Whether the page's next file waits: one of `pending` (the exchanges in flight, and those
/// waiting to be sent again) extracts values that later files may need.
pub(in crate::client) fn waits_for_values<'a>(
    app: Option<&AppExchange>,
    w: &Workload,
    mut pending: impl Iterator<Item = &'a Exchange>,
) -> bool {
    app.is_some_and(|app| pending.any(|ex| app.extracts(ex.url(w))))
}
