//! The load threads: started, watched, joined.
//!
//! While they run, the calling thread only watches the window's boundaries (for the observer),
//! tells the observer the live counts once a second and prints the live line. Threads share
//! nothing they write per request, so they scale with cores.

use super::fail_fast;
use super::plan::spread;
use super::{BenchError, Observer};
use crate::client::{self, RunShared, ThreadOutcome};
use crate::progress::{self, Counts};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// What the threads handed back.
pub(super) struct Joined {
    pub outcomes: Vec<Result<ThreadOutcome, BenchError>>,
}

/// Runs Webchildren `children` on `threads` event loops until the window ends, then joins them.
pub(super) fn run(
    shared: &RunShared<'_>,
    children: Range<usize>,
    threads: usize,
    observer: &dyn Observer,
) -> Joined {
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let ids = spread(children.clone(), threads, t);
                let h = std::thread::Builder::new()
                    .name(format!("flint-bench-{t}"))
                    .spawn_scoped(s, move || {
                        let webchildren = ids.len() as u64;
                        let mut outcome = client::run_thread(shared, t, ids);
                        if let Ok(o) = &mut outcome {
                            // Whose measurements these are: the merge adds them up.
                            (o.stats.webchildren, o.stats.threads) = (webchildren, 1);
                        }
                        outcome
                    });
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
            .collect::<Vec<_>>()
    });
    Joined { outcomes: results }
}

/// The coordinating thread's loop: calls the observer at the window's boundaries, hands it the
/// live counts and prints the live line once a second, until the window has ended. Each time
/// round it also judges whether every attempt so far has failed the same way (fail fast); the
/// load threads see the verdict within their publishing tick and stop.
///
/// It sleeps (`park_timeout`) until the next thing it has to do: the end of warm-up, the end of
/// a timed run, the next second. A `-n` run or Ctrl-C ends when the last load thread stops
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
    let mut next_second = base + Duration::from_secs(1);
    let mut judge = fail_fast::Judge::default();
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
        if shared.config.fail_fast && shared.gave_up.get().is_none() {
            if let Some(gave_up) = judge.judge(&shared.progress.total(), now - base) {
                let _ = shared.gave_up.set(gave_up);
            }
        }
        if now >= next_second {
            let total = shared.progress.total();
            let elapsed = now - base;
            observer.live(elapsed, elapsed < length.warmup, total);
            if shared.config.progress {
                let mut text = progress::line(elapsed, &length, prev, total, now - prev_at);
                if let Some(rate) = shared.config.rate {
                    let warning =
                        progress::rate_warning(prev, total, rate, shared.config.concurrency);
                    text.extend(warning);
                }
                progress::print(&text);
            }
            (prev, prev_at) = (total, now);
            next_second += Duration::from_secs(1);
        }
        let mut wake = (now + MAX_PARK).min(next_second);
        match (started, end_at) {
            (false, _) => wake = wake.min(start_at),
            (true, Some(end)) => wake = wake.min(end),
            (true, None) => {}
        }
        std::thread::park_timeout(wake.saturating_duration_since(Instant::now()));
    }
}
