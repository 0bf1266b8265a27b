//! The run's outcome: the exact merge of the hosts that finished ([`crate::runner::merge`]),
//! and a record of every host, a lost one's from its live figures as last heard, a late
//! starter's with a warning.

use super::host::{Host, State};
use super::{HostsOutcome, HostsRun};
use crate::hosts::protocol;
use crate::runner::merge::{self, Part};
use crate::{BenchConfig, RunResult};
use results::{HostEarlyData, HostRecord, HostStatus};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

/// The exact merge of the hosts that finished, and a record of every host.
pub(super) fn outcome(
    config: BenchConfig,
    r: &HostsRun<'_>,
    hosts: Vec<Host>,
    start_wall: SystemTime,
) -> HostsOutcome {
    let open_loop = config.rate.is_some();
    let parts = hosts.iter().filter_map(|h| match &h.state {
        State::Done(w) => Some(Part {
            stats: &w.stats,
            window: Duration::from_micros(w.window_us),
        }),
        _ => None,
    });
    let (mut stats, duration) = merge::merge(r.workload, open_loop, parts);
    stats.hosts = hosts
        .iter()
        .filter(|h| matches!(h.state, State::Done(_)))
        .count() as u64;
    let interrupted = r.stop.load(Ordering::Relaxed)
        || hosts
            .iter()
            .any(|h| matches!(&h.state, State::Done(w) if w.interrupted));
    let records: Vec<HostRecord> = hosts.iter().map(|h| record(h, &config)).collect();
    let incomplete = records.iter().any(|h| h.status != HostStatus::Ok);
    HostsOutcome {
        result: RunResult {
            workload: r.workload.clone(),
            stats,
            duration,
            started_at: start_wall + config.warmup,
            interrupted,
            config,
        },
        hosts: records,
        incomplete,
    }
}

pub(super) fn record(h: &Host, config: &BenchConfig) -> HostRecord {
    let mut rec = HostRecord {
        name: h.name.clone(),
        webchildren: h.children.len() as u64,
        clock_offset_ms: h.offset.map(|o| o.offset_us as f64 / 1e3),
        ..HostRecord::default()
    };
    match &h.state {
        State::Done(w) => {
            let s = &w.stats;
            rec.requests = s.requests;
            rec.pages = s.pages_done;
            rec.errors = s.errors.total();
            // The summary's quantities, so that the hosts' add up to the run's.
            rec.bytes_total = s.data_moved();
            rec.bytes_read = Some(s.bytes_total);
            rec.start_skew_ms = w.start_skew_us.map(|us| us as f64 / 1e3);
            rec.warning = late_start(w, config, &h.children);
            rec.client_cpu_us_per_request =
                (s.requests > 0).then(|| w.cpu_us as f64 / s.requests as f64);
            rec.response_ms = s.response.summary();
            rec.requests_per_second = s.timeseries.iter().map(|x| x.requests).collect();
            let h = &s.http3;
            rec.early_data = config.h3_early_data.then_some(HostEarlyData {
                offered: h.early_offered,
                accepted: h.early_accepted,
                rejected: h.early_rejected,
                requests: h.early_requests,
            });
        }
        State::Lost(why) => {
            rec.status = HostStatus::Lost;
            rec.reason = Some(why.clone());
            // What it was known to have done: its live figures as last heard.
            let l = &h.live;
            let in_window_s = l.elapsed_s - config.warmup.as_secs_f64();
            if !l.per_second.is_empty() && in_window_s > 0.0 {
                rec.requests = l.now.0.saturating_sub(l.warmup.0);
                rec.errors = l.now.1.saturating_sub(l.warmup.1);
                rec.bytes_read = Some(l.now.2.saturating_sub(l.warmup.2));
                rec.requests_per_second = l.per_second.clone();
                rec.known_until_s = Some(in_window_s);
            }
        }
        State::Failed(why) => {
            rec.status = HostStatus::Failed;
            rec.reason = Some(why.clone());
        }
        State::Starting | State::Ready | State::Running => {
            rec.status = HostStatus::Lost;
            rec.reason = Some("ended without a result".into());
        }
    }
    rec
}

/// The most of a host's measured window its start may miss before it is called late: its
/// rates are then low by more than this share, as its window counts from the agreed start.
pub(super) const LATE_SHARE: f64 = 0.01;

/// Whether Webchildren `children` of the run have pages to send: with a page count (`-n`)
/// split over more Webchildren than pages, some have none (`client::quota`; the first of a
/// range has the most).
fn has_pages(config: &BenchConfig, children: &Range<usize>) -> bool {
    match config.stop {
        crate::Stop::Pages(n) => crate::client::quota(n, config.concurrency, children.start) > 0,
        crate::Stop::Duration(_) => true,
    }
}

/// A host that began its load later than `LATE_SHARE` into its measured window (a start skew
/// within the warm-up costs the window nothing), or never said when: the warning for its row.
/// A host whose Webchildren (`children`) had no page to send has no start to be late for.
pub(super) fn late_start(
    w: &protocol::WorkerResult,
    config: &BenchConfig,
    children: &Range<usize>,
) -> Option<String> {
    if !has_pages(config, children) || children.is_empty() {
        return None;
    }
    let Some(skew_us) = w.start_skew_us else {
        return Some(
            "it never said when it started: its figures may miss part of its window".into(),
        );
    };
    let warmup_us = config.warmup.as_micros() as u64;
    let missed_us = skew_us.saturating_sub(warmup_us);
    let share = missed_us as f64 / w.window_us.max(1) as f64;
    // Closed loop: the missed time is load never offered, so rates are low by that share. Open
    // loop: the pages already due are sent at once when it begins, a burst the server did not
    // get on schedule, and their latencies (from their intended starts) carry the delay.
    let effect = if config.rate.is_some() {
        "the pages due meanwhile went out at once as it began, a burst off the schedule, their \
         latencies counting the delay"
    } else {
        "which still counts from that start (its rates are low by as much)"
    };
    (share > LATE_SHARE).then(|| {
        format!(
            "started late: its first request {:.1} ms after the agreed start, {:.1}% of its {:.3} s \
             window; {effect}",
            skew_us as f64 / 1e3,
            (share * 100.0).min(100.0),
            w.window_us as f64 / 1e6
        )
    })
}

#[cfg(test)]
mod tests {
    use super::has_pages;
    use crate::{BenchConfig, Stop, Target};

    #[test]
    fn webchildren_given_no_page_of_a_page_count_have_nothing_to_send() {
        let config = |stop| BenchConfig {
            concurrency: 3,
            stop,
            ..BenchConfig::new(Target::http("127.0.0.1:80".parse().unwrap()))
        };
        // -n 1 -c 3 over hosts a, b, c: only a's Webchild has the page.
        let one = config(Stop::Pages(1));
        assert!(has_pages(&one, &(0..1)));
        assert!(!has_pages(&one, &(1..2)));
        assert!(!has_pages(&one, &(2..3)));
        let five = config(Stop::Pages(5));
        assert!((0..3).all(|i| has_pages(&five, &(i..i + 1))));
        let timed = config(Stop::Duration(std::time::Duration::from_secs(1)));
        assert!(has_pages(&timed, &(2..3)));
    }
}
