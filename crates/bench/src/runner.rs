//! Threads, warm-up, duration, Ctrl-C, progress, and the exact merge of per-thread results.
//!
//! [`run`] and [`run_observed`]: `stop` set (by Ctrl-C) ends the run early; the result then has `interrupted = true` and holds
//! what was measured. `observer` is told when the measured window starts and ends (a server
//! profile covers exactly that window, issue 4).
//!
//! The runner only prepares and collects: it checks the options, builds every request once,
//! fixes the schedule (warm-up end, run end, each Webchild's page quota) before any thread
//! starts, spreads the Webchildren evenly over `threads` event loops, and merges their `Stats`
//! when they are done. While they run, the calling thread only watches the window's boundaries
//! (for the observer) and prints the live line. Threads share nothing they write per request, so
//! they scale with cores and their merged figures equal those one thread would have produced.

use crate::client::{self, Requests, RunShared, Schedule, ThreadOutcome};
use crate::log::LogFile;
use crate::progress::{self, Counts, Progress};
use crate::stats::seconds_in;
use crate::transport::Connector;
use crate::workload::PagePicker;
use crate::{BenchConfig, Stats, Stop, Workload};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Told when the measured window starts and ends, from the runner's coordinating thread (the
/// thread that called [`run_observed`]), never from a load thread.
///
/// - `window_started`: when warm-up ends; without warm-up, just before the load threads start.
/// - `window_ended`: when the measured window ends: the duration elapsed, the `-n` pages done,
///   or every load thread stopped after Ctrl-C; before the threads are joined and merged.
///
/// Each is called exactly once, `window_started` first, even for a run interrupted during
/// warm-up (then back to back, and the result's duration is 0). A run refused before it starts
/// (bad options, a log file that cannot be created) calls neither.
///
/// Accuracy: the load threads decide what counts by comparing their own clock reads with the
/// same schedule, so the boundaries themselves are exact; the calls come late by the time the
/// coordinating thread takes to wake up. It sleeps until each boundary (or until the last load
/// thread wakes it, for `-n` and Ctrl-C), so the delay is the kernel's timer slack plus
/// scheduling: 0.1 to 0.2 ms measured on a 2-core machine at load 6, more if the machine is
/// saturated for longer. `window_ended - window_started` measured by the observer matches
/// `RunResult::duration` within that (a test bounds it at 60 ms). Ctrl-C is seen by each load
/// thread within its 50 ms tick; the window ends when the last one has stopped, which is also
/// where the result's duration ends. The calls should return quickly: while `window_started`
/// runs, the end of the window is not being watched (the load threads are not affected).
pub trait Observer: Sync {
    fn window_started(&self) {}
    fn window_ended(&self) {}
}

/// The observer of a plain [`run`]: does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// A finished run: what was asked, what was fetched, what was measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub config: BenchConfig,
    pub workload: Workload,
    pub stats: Stats,
    /// Length of the measured window (warm-up excluded).
    pub duration: Duration,
    /// Wall-clock start of the measured window.
    pub started_at: SystemTime,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    #[error("invalid options: {0}")]
    Config(String),
    #[error("invalid workload: {0}")]
    Workload(String),
    #[error("cannot create log file {path}: {source}")]
    LogCreate {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The run completed but its log is incomplete.
    #[error("writing log file {path}: {source}")]
    LogWrite {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Tls(#[from] crate::transport::TlsSetupError),
    #[error("event loop: {0}")]
    EventLoop(#[source] std::io::Error),
    #[error("a load thread panicked")]
    ThreadPanicked,
}

/// Runs the benchmark described by `config` over `workload` and returns what it measured.
pub fn run(
    config: &BenchConfig,
    workload: &Workload,
    stop: &AtomicBool,
) -> Result<RunResult, BenchError> {
    run_observed(config, workload, stop, &NoObserver)
}

/// [`run`], telling `observer` when the measured window starts and ends (see [`Observer`]).
pub fn run_observed(
    config: &BenchConfig,
    workload: &Workload,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> Result<RunResult, BenchError> {
    check(config, workload)?;
    let log = match &config.log {
        Some(path) => Some(
            LogFile::create(path).map_err(|source| BenchError::LogCreate {
                path: path.clone(),
                source,
            })?,
        ),
        None => None,
    };
    // No idle threads: at most one per Webchild.
    let threads = config.threads.min(config.concurrency);
    let requests = Requests::build(config, workload);
    let connector = Connector::new(&config.target, &config.tls).map_err(BenchError::Tls)?;
    let picker = PagePicker::new(workload);
    let measure_us = config.warmup.as_micros() as u64;
    if measure_us == 0 {
        // The window starts with the first request: tell the observer before any can be sent.
        observer.window_started();
    }
    let base = Instant::now();
    let base_wall = SystemTime::now();
    let base_unix_us = base_wall
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    let schedule = Schedule {
        base,
        base_unix_us,
        measure_us,
        end_us: match config.stop {
            Stop::Duration(d) => measure_us + d.as_micros() as u64,
            Stop::Pages(_) => u64::MAX,
        },
        pages: match config.stop {
            Stop::Pages(n) => Some(n),
            Stop::Duration(_) => None,
        },
        concurrency: config.concurrency,
        think_us: config.think.map_or(0, |t| t.as_micros() as u64),
        interval_us: config.rate.map(|r| 1e6 * config.concurrency as f64 / r),
        connect_timeout_us: config.connect_timeout.as_micros().max(1) as u64,
        response_timeout_us: config.response_timeout.as_micros().max(1) as u64,
    };
    let shared = RunShared {
        config,
        workload,
        schedule,
        requests,
        connector,
        picker,
        log,
        progress: Progress::new(threads),
        stop,
        coordinator: std::thread::current(),
        running: AtomicUsize::new(threads),
    };
    let outcomes = std::thread::scope(|s| {
        let shared = &shared;
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let ids = spread(config.concurrency, threads, t);
                let h = std::thread::Builder::new()
                    .name(format!("flint-bench-{t}"))
                    .spawn_scoped(s, move || client::run_thread(shared, t, ids));
                if h.is_err() {
                    // Never started, so it will not count itself out.
                    shared.running.fetch_sub(1, Ordering::AcqRel);
                }
                h
            })
            .collect();
        coordinate(shared, observer);
        handles
            .into_iter()
            .map(|h| match h {
                Ok(h) => match h.join() {
                    Ok(r) => r.map_err(BenchError::EventLoop),
                    Err(_) => Err(BenchError::ThreadPanicked),
                },
                Err(e) => Err(BenchError::EventLoop(e)),
            })
            .collect::<Vec<Result<ThreadOutcome, BenchError>>>()
    });
    if config.progress {
        progress::clear();
    }
    let mut stats = Stats::new(workload, config.rate.is_some());
    let (mut end_us, mut interrupted, mut log_error) = (0, false, None);
    for o in outcomes {
        let o = o?;
        stats.merge(&o.stats);
        end_us = end_us.max(o.end_us);
        interrupted |= o.interrupted;
        log_error = log_error.or(o.log_error);
    }
    if let (Some(source), Some(log)) = (log_error, &shared.log) {
        // `--log - | head`: the reader has what it wanted; the run itself is complete.
        let reader_gone = log.is_stdout() && source.kind() == std::io::ErrorKind::BrokenPipe;
        if !reader_gone {
            return Err(BenchError::LogWrite {
                path: log.path().to_owned(),
                source,
            });
        }
    }
    let duration = Duration::from_micros(end_us.saturating_sub(measure_us));
    // Exactly one entry per second of the window: no event is later than the window's end
    // (`second_index` closes seconds on the right), so only empty seconds are cut or added.
    debug_assert!(stats
        .timeseries
        .iter()
        .skip(seconds_in(duration))
        .all(|s| s.requests == 0 && s.errors == 0 && s.bytes == 0));
    stats.timeseries.truncate(seconds_in(duration));
    stats.preallocate_seconds(seconds_in(duration));
    Ok(RunResult {
        config: config.clone(),
        workload: workload.clone(),
        stats,
        duration,
        started_at: base_wall + config.warmup,
        interrupted,
    })
}

/// Webchildren of thread `t` of `threads`: contiguous, sizes differing by at most one.
fn spread(concurrency: usize, threads: usize, t: usize) -> std::ops::Range<usize> {
    let (per, extra) = (concurrency / threads, concurrency % threads);
    let start = t * per + t.min(extra);
    start..start + per + usize::from(t < extra)
}

/// Nothing starts with options or a workload the engine cannot run.
fn check(config: &BenchConfig, workload: &Workload) -> Result<(), BenchError> {
    let bad = |m: &str| Err(BenchError::Config(m.to_owned()));
    if config.concurrency == 0 {
        return bad("concurrency must be at least 1");
    }
    if config.threads == 0 {
        return bad("threads must be at least 1");
    }
    if u32::try_from(config.concurrency).is_err() {
        return bad("concurrency is too large");
    }
    match config.stop {
        Stop::Pages(0) => return bad("the page count must be at least 1"),
        Stop::Duration(d) if d.is_zero() => return bad("the duration must be positive"),
        _ => {}
    }
    if let Some(r) = config.rate {
        if !(r.is_finite() && r > 0.0) {
            return bad("the rate must be a positive number of pages per second");
        }
    }
    let wrong = |m: String| Err(BenchError::Workload(m));
    if workload.pages.is_empty() {
        return wrong("no pages".into());
    }
    for p in &workload.pages {
        if !(p.weight.is_finite() && p.weight >= 0.0) {
            return wrong(format!("page {:?} has weight {}", p.name, p.weight));
        }
        if p.files.is_empty() {
            return wrong(format!("page {:?} has no files", p.name));
        }
        if let Some(f) = p.files.iter().find(|&&f| f >= workload.urls.len()) {
            return wrong(format!(
                "page {:?} names URL #{f}, which does not exist",
                p.name
            ));
        }
    }
    if workload.pages.iter().map(|p| p.weight).sum::<f64>() <= 0.0 {
        return wrong("every page has weight 0".into());
    }
    Ok(())
}

/// The coordinating thread's loop: calls the observer at the window's boundaries and prints the
/// live line once a second (when asked), until the window has ended.
///
/// It sleeps (`park_timeout`) until the next thing it has to do: the end of warm-up, the end of
/// a timed run, the next live line. A `-n` run or Ctrl-C ends when the last load thread stops
/// measuring, and that thread unparks it; the wait is also capped, in case of a spurious wake-up
/// or a lost unpark.
fn coordinate(shared: &RunShared<'_>, observer: &dyn Observer) {
    /// A safety net only: the boundaries themselves are slept to, or unparked.
    const MAX_PARK: Duration = Duration::from_millis(100);
    let run = &shared.schedule;
    let base = run.base;
    let start_at = base + Duration::from_micros(run.measure_us);
    let end_at = (run.end_us != u64::MAX).then(|| base + Duration::from_micros(run.end_us));
    let length = progress::RunLength {
        warmup: Duration::from_micros(run.measure_us),
        stop: shared.config.stop,
    };
    let mut started = run.measure_us == 0; // then already told, before the threads started
    let (mut prev, mut prev_at) = (Counts::default(), base);
    let mut next_line = base + Duration::from_secs(1);
    loop {
        let now = Instant::now();
        let all_stopped = shared.running.load(Ordering::Acquire) == 0;
        if !started && (now >= start_at || all_stopped) {
            observer.window_started();
            started = true;
        }
        if started && (all_stopped || end_at.is_some_and(|e| Instant::now() >= e)) {
            observer.window_ended();
            return;
        }
        if shared.config.progress && now >= next_line {
            let total = shared.progress.total();
            let elapsed = now - base;
            let mut text = progress::line(elapsed, &length, prev, total, now - prev_at);
            if let Some(rate) = shared.config.rate {
                let warning = progress::rate_warning(prev, total, rate, shared.config.concurrency);
                text.extend(warning);
            }
            progress::print(&text);
            (prev, prev_at) = (total, now);
            next_line += Duration::from_secs(1);
        }
        let mut wake = now + MAX_PARK;
        if shared.config.progress {
            wake = wake.min(next_line);
        }
        match (started, end_at) {
            (false, _) => wake = wake.min(start_at),
            (true, Some(end)) => wake = wake.min(end),
            (true, None) => {}
        }
        std::thread::park_timeout(wake.saturating_duration_since(Instant::now()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn webchildren_spread_evenly_and_completely_over_threads() {
        for (c, t) in [(10, 3), (3, 3), (1, 1), (7, 2), (100, 8)] {
            let ranges: Vec<_> = (0..t).map(|i| spread(c, t, i)).collect();
            assert_eq!(ranges[0].start, 0);
            assert_eq!(ranges[t - 1].end, c);
            for w in ranges.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let sizes: Vec<_> = ranges.iter().map(|r| r.len()).collect();
            assert!(sizes.iter().max().unwrap() - sizes.iter().min().unwrap() <= 1);
        }
    }
}
