//! The exact merge of parts of a run: the threads of one process, or the workers of many hosts.
//!
//! Every part's time 0 is the same instant (the run's start; on many hosts, the agreed start in
//! each host's clock), so second `i` of one part's time series is second `i` of every other's,
//! and histograms add bucket by bucket: the merge equals what one process that ran every
//! Webchild would have measured.

use crate::stats::{seconds_in, Stats};
use crate::Workload;
use std::time::Duration;

/// One part's measurements and how long its measured window lasted.
#[derive(Debug, Clone, Copy)]
pub struct Part<'a> {
    /// What the part measured.
    pub stats: &'a Stats,
    /// Its measured window: the merge's is the longest part's.
    pub window: Duration,
}

/// The merge of `parts`: counters add, extremes take the extreme, histograms add bucket by
/// bucket; the window is the longest part's, and the time series has exactly one entry per
/// second of it.
pub fn merge<'a>(
    workload: &Workload,
    open_loop: bool,
    parts: impl IntoIterator<Item = Part<'a>>,
) -> (Stats, Duration) {
    let mut stats = Stats::new(workload, open_loop);
    let mut window = Duration::ZERO;
    for p in parts {
        stats.merge(p.stats);
        window = window.max(p.window);
    }
    fit_seconds(&mut stats, window);
    (stats, window)
}

/// Exactly one time-series entry per second of `window`: no event is later than the window's
/// end (`second_index` closes seconds on the right), so only empty seconds are cut or added.
pub fn fit_seconds(stats: &mut Stats, window: Duration) {
    let n = seconds_in(window);
    debug_assert!(stats
        .timeseries
        .iter()
        .skip(n)
        .all(|s| s.requests == 0 && s.errors == 0 && s.bytes == 0));
    stats.timeseries.truncate(n);
    stats.preallocate_seconds(n);
}
