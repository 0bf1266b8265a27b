//! A run: prepare, start the load threads, collect and merge.
//!
//! [`run`] and [`run_observed`]: `stop` set (by Ctrl-C) ends the run early; the result then has
//! `interrupted = true` and holds what was measured. `observer` is told when the measured window
//! starts and ends (a server profile covers exactly that window) and, once a second, the live
//! counts. [`run_slice`] runs part of a run (some of its Webchildren, from an agreed instant):
//! what a worker on a client host does.
//!
//! Three parts, each in its own file: [`plan`] (who runs which Webchildren, with which seeds and
//! schedule offsets, for how long: fixed before any thread starts), `threads` (start, watch,
//! join) and [`merge`] (exact, of `Stats`: the same merge joins threads and hosts). The runner
//! only prepares and collects: it checks the options, builds every request once, spreads the
//! Webchildren evenly over `threads` event loops, and merges their `Stats` when they are done.

pub mod fail_fast;
pub mod merge;
pub mod plan;
mod threads;

pub use plan::Slice;

use crate::client::{Requests, RunShared};
use crate::log::LogFile;
use crate::progress::{self, Counts, Progress};
use crate::transport::Connector;
use crate::workload::PagePicker;
use crate::{BenchConfig, HttpMode, Stats, Workload};
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
/// `RunResult::duration` within that; neither call comes before its boundary (`started_at`,
/// `started_at + duration`), which the tests check. Ctrl-C is seen by each load
/// thread within its 50 ms tick; the window ends when the last one has stopped, which is also
/// where the result's duration ends. The calls should return quickly: while `window_started`
/// runs, the end of the window is not being watched (the load threads are not affected).
pub trait Observer: Sync {
    /// The measured window has opened (warm-up over).
    fn window_started(&self) {}
    /// The measured window has closed: its end time reached, or the last load thread has
    /// stopped measuring (`-n` pages done, Ctrl-C).
    fn window_ended(&self) {}
    /// Once a second from the start (warm-up included): the counts of every thread so far, as
    /// last published (each thread publishes every ~100 ms).
    fn live(&self, _elapsed: Duration, _warmup: bool, _total: Counts) {}
}

/// The observer of a plain [`run`]: does nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}

/// A finished run: what was asked, what was fetched, what was measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The options the run was made with.
    pub config: BenchConfig,
    /// The pages and URLs it fetched.
    pub workload: Workload,
    /// What it measured, every thread's (and host's) merged.
    pub stats: Stats,
    /// Length of the measured window (warm-up excluded).
    pub duration: Duration,
    /// Wall-clock start of the measured window.
    pub started_at: SystemTime,
    /// Ended early by Ctrl-C. (Ended early because every attempt failed the same way is
    /// `stats.gave_up`: the run was not interrupted, it failed.)
    pub interrupted: bool,
}

/// Why a run could not start or finish.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// The options contradict each other, or ask for what this build or protocol cannot do.
    #[error("invalid options: {0}")]
    Config(String),
    /// The workload cannot be run with these options.
    #[error("invalid workload: {0}")]
    Workload(String),
    /// `--log`'s file could not be created.
    #[error("cannot create log file {path}: {source}")]
    LogCreate {
        /// The log file asked for.
        path: PathBuf,
        /// Why it could not be created.
        source: std::io::Error,
    },
    /// The run completed but its log is incomplete.
    #[error("writing log file {path}: {source}")]
    LogWrite {
        /// The log file.
        path: PathBuf,
        /// The first write that failed.
        source: std::io::Error,
    },
    /// The TLS configuration could not be made (a CA file, cipher suites).
    #[error("{0}")]
    Tls(#[from] crate::transport::TlsSetupError),
    /// A load thread could not be started, or its event loop failed with an I/O error.
    #[error("event loop: {0}")]
    EventLoop(#[source] std::io::Error),
    /// A load thread panicked: a bug, its measurements lost.
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
    let slice = Slice::whole(config);
    run_slice(config, workload, &slice, stop, observer).map(|o| o.result)
}

/// What a slice of a run measured, and how punctual it was.
#[derive(Debug, Clone)]
pub struct SliceOutcome {
    /// The slice's own result: its Webchildren only (`config` is the whole run's).
    pub result: RunResult,
    /// How late the slice's first connect began: after the agreed start in the closed loop,
    /// after its page's intended time in the open loop (the least of its threads'); when
    /// nothing connected, how late its first thread began; `None` only when no thread ran.
    pub start_skew: Option<Duration>,
}

/// Runs Webchildren `slice.children` of the run `config` describes, from `slice.start`: their
/// seeds, `-n` quotas and open-loop offsets are those of the whole run (see [`plan`]), so the
/// merge of every slice's `Stats` equals a run in one process. Time 0 (and second 0 of the time
/// series) is `slice.start`; nothing is sent before it. `stop` also cuts the wait short.
pub fn run_slice(
    config: &BenchConfig,
    workload: &Workload,
    slice: &Slice,
    stop: &AtomicBool,
    observer: &dyn Observer,
) -> Result<SliceOutcome, BenchError> {
    let prepared = PreparedSlice::new(config, workload, slice)?;
    prepared.run(config, workload, slice, stop, observer)
}

/// Everything a slice needs before its start, built ahead of it: its log file, its requests,
/// its TLS client configuration (the system's CA bundle takes tens of ms of CPU to load), its
/// page picker. A worker builds it before it says READY, so that at the agreed start only the
/// threads are left to start.
pub struct PreparedSlice {
    log: Option<LogFile>,
    requests: Requests,
    h2: Option<crate::client::H2Requests>,
    app_fixed: std::sync::Arc<[crate::client::AppFixedFields]>,
    connector: Connector,
    picker: PagePicker,
}

impl PreparedSlice {
    /// Checks the options for `slice` and builds what it runs with.
    pub fn new(
        config: &BenchConfig,
        workload: &Workload,
        slice: &Slice,
    ) -> Result<PreparedSlice, BenchError> {
        plan::check(config, workload, slice)?;
        // The data sets' positions live in the workload, which may run again (compare's
        // rounds): each run starts from the first row.
        for set in workload.plan().iter().flat_map(|p| p.data.iter()) {
            set.rewind();
        }
        let log = match &config.log {
            Some(path) => Some(
                LogFile::create(path).map_err(|source| BenchError::LogCreate {
                    path: path.clone(),
                    source,
                })?,
            ),
            None => None,
        };
        if config.http == HttpMode::Http3 {
            // Each load thread makes its own (quiche takes it mutably); a bad --cacert is
            // found here, before any thread starts.
            http3::ClientConfig::new(&crate::client::h3_trust(config), &http3::Limits::default())
                .map_err(|e| BenchError::Config(format!("--http 3: {e}")))?;
        }
        let connector = Connector::new(&config.target, &config.tls, config.http == HttpMode::Http2)
            .map_err(BenchError::Tls)?;
        Ok(PreparedSlice {
            log,
            requests: Requests::build(config, workload),
            h2: matches!(config.http, HttpMode::Http2 | HttpMode::Http3)
                .then(|| crate::client::H2Requests::build(config, workload)),
            app_fixed: crate::client::app_fixed_fields(config, workload),
            connector,
            picker: PagePicker::new(workload),
        })
    }

    /// Runs the slice it was prepared for (`config`, `workload` and `slice` as given to
    /// [`PreparedSlice::new`]; `slice.start` may be set since).
    pub fn run(
        self,
        config: &BenchConfig,
        workload: &Workload,
        slice: &Slice,
        stop: &AtomicBool,
        observer: &dyn Observer,
    ) -> Result<SliceOutcome, BenchError> {
        // No idle threads: at most one per Webchild.
        let threads = config.threads.min(slice.children.len());
        // Without warm-up the window starts with the first request. A run of its own tells the
        // observer before its time 0: what the observer does then (a tracer attaching, a good
        // part of a second on a busy machine) delays the window rather than shortening it. A
        // slice with an agreed start keeps that instant and tells the observer at it.
        let told_first = config.warmup.as_micros() == 0;
        if told_first && slice.start.is_none() {
            observer.window_started();
        }
        let base = match slice.start {
            Some(at) => wait_until(at, stop),
            None => Instant::now(),
        };
        // The wall clock at `base` (which may be a moment ago), for the log and the report: the
        // one the slice was given (the coordinator's, on many hosts), else ours.
        let base_wall = match slice.start_unix_us {
            Some(us) => UNIX_EPOCH + Duration::from_micros(us),
            None => SystemTime::now() - base.elapsed(),
        };
        let base_unix_us = base_wall
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as u64);
        let schedule = plan::schedule(config, base, base_unix_us);
        if told_first && slice.start.is_some() {
            observer.window_started();
        }
        let shared = RunShared {
            config,
            workload,
            schedule,
            requests: self.requests,
            h2: self.h2,
            app_fixed: self.app_fixed,
            connector: self.connector,
            picker: self.picker,
            log: self.log,
            progress: Progress::new(threads),
            stop,
            coordinator: std::thread::current(),
            running: AtomicUsize::new(threads),
            gave_up: std::sync::OnceLock::new(),
        };
        collect(&shared, slice, threads, observer, base_wall)
    }
}

/// Starts the load threads of `shared`'s slice, waits for them, and merges what they measured.
fn collect(
    shared: &RunShared<'_>,
    slice: &Slice,
    threads: usize,
    observer: &dyn Observer,
    base_wall: SystemTime,
) -> Result<SliceOutcome, BenchError> {
    let (config, workload) = (shared.config, shared.workload);
    let measure_us = shared.schedule.measure_us;
    let joined = threads::run(shared, slice.children.clone(), threads, observer);
    if config.progress {
        progress::clear();
    }
    let (mut outcomes, mut end_us, mut interrupted, mut log_error) = (Vec::new(), 0, false, None);
    let mut first_connect_late_us: Option<u64> = None;
    let mut began_us = u64::MAX;
    for o in joined.outcomes {
        let o = o?;
        began_us = began_us.min(o.began_us);
        end_us = end_us.max(o.end_us);
        first_connect_late_us = match (first_connect_late_us, o.first_connect_late_us) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        interrupted |= o.interrupted;
        log_error = log_error.or(o.log_error);
        outcomes.push(o.stats);
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
    let window = Duration::from_micros(end_us.saturating_sub(measure_us));
    let parts = outcomes.iter().map(|stats| merge::Part { stats, window });
    let (mut stats, duration) = merge::merge(workload, config.rate.is_some(), parts);
    stats.gave_up = shared.gave_up.get().map(|g| g.probed(config));
    Ok(SliceOutcome {
        result: RunResult {
            config: config.clone(),
            workload: workload.clone(),
            stats,
            duration,
            started_at: base_wall + config.warmup,
            interrupted,
        },
        // A slice that connected nothing (its start came after its window, or nothing was due)
        // still started: when its first thread began.
        start_skew: first_connect_late_us
            .or((began_us != u64::MAX).then_some(began_us))
            .map(Duration::from_micros),
    })
}

/// Sleeps until `at` (or until `stop`, seen within 20 ms) and returns `at`: the run's time 0
/// is the agreed instant, however late this thread wakes.
fn wait_until(at: Instant, stop: &AtomicBool) -> Instant {
    const STEP: Duration = Duration::from_millis(20);
    loop {
        let now = Instant::now();
        if now >= at || stop.load(Ordering::Relaxed) {
            return at.min(now);
        }
        std::thread::sleep((at - now).min(STEP));
    }
}
