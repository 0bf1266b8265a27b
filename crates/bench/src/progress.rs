//! The live line on stderr: `[  5.0s]  50%  5.0s left  95123.4 req/s  0 errors  104.2 MB/s`.
//!
//! Each thread owns one slot of counters and publishes into it at most every ~100 ms, with
//! relaxed stores: the hot path never shares a cache line with another thread (the slots are
//! 64-byte aligned) and never waits. The calling thread reads the slots once a second and prints
//! rates over that second. The counters include warm-up (the line shows activity, not results),
//! except `window_pages`, which counts only in the measured window: it measures how far a `-n`
//! run is.

use crate::report::formulas::webchildren_for;
use crate::report::words::count_of;
use crate::stats::ErrorKind;
use crate::Stop;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What a thread has done so far, in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Responses that matched their framing (any status).
    pub requests: u64,
    /// Failed requests and error responses.
    pub errors: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Pages completed with every file a success (warm-up included): with `page_us`, the page
    /// time from which the live line estimates the Webchildren an open-loop rate needs.
    pub pages: u64,
    /// The sum of those pages' times from their actual start, µs.
    pub page_us: u64,
    /// Open loop, a gauge: pages due that their Webchildren have not started yet.
    pub behind: u64,
    /// Pages ended in the measured window, hits or not: how far a `-n` run has got.
    pub window_pages: u64,
    /// Which kinds the errors so far are of: none, one (which), or several; what fail fast
    /// reads (`runner/fail_fast.rs`).
    pub failing: u64,
}

impl Counts {
    /// One more error, of `kind`. Errors only: a success costs nothing here.
    #[inline]
    pub fn fail(&mut self, kind: ErrorKind) {
        self.errors += 1;
        self.failing = with_failure(self.failing, kind);
    }
}

/// The signature of a thread's failures so far (`Counts::failing`): none yet, all of one kind
/// (`kind as u64 + 1`), or of more than one.
pub const NO_FAILURE: u64 = 0;
/// The signature of failures of more than one kind: fail fast does not stop for them.
pub const MIXED_FAILURES: u64 = u64::MAX;

/// The signature after one more failure of `kind`.
#[inline]
pub fn with_failure(signature: u64, kind: ErrorKind) -> u64 {
    combine(signature, kind as u64 + 1)
}

/// Two signatures as one: what the failures of both say together.
#[inline]
pub fn combine(a: u64, b: u64) -> u64 {
    match (a, b) {
        (NO_FAILURE, x) | (x, NO_FAILURE) => x,
        (x, y) if x == y => x,
        _ => MIXED_FAILURES,
    }
}

/// One thread's slot; aligned so that two threads never write the same cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Slot {
    requests: AtomicU64,
    errors: AtomicU64,
    bytes: AtomicU64,
    pages: AtomicU64,
    page_us: AtomicU64,
    behind: AtomicU64,
    window_pages: AtomicU64,
    failing: AtomicU64,
}

/// The slots of all threads.
#[derive(Debug)]
pub struct Progress {
    slots: Vec<Slot>,
}

impl Progress {
    /// One zeroed slot per load thread, made before the threads start.
    pub fn new(threads: usize) -> Self {
        Progress {
            slots: (0..threads).map(|_| Slot::default()).collect(),
        }
    }

    /// Called by thread `thread` (only), every ~100 ms.
    pub fn publish(&self, thread: usize, c: Counts) {
        let s = &self.slots[thread];
        s.requests.store(c.requests, Ordering::Relaxed);
        s.errors.store(c.errors, Ordering::Relaxed);
        s.bytes.store(c.bytes, Ordering::Relaxed);
        s.pages.store(c.pages, Ordering::Relaxed);
        s.page_us.store(c.page_us, Ordering::Relaxed);
        s.behind.store(c.behind, Ordering::Relaxed);
        s.window_pages.store(c.window_pages, Ordering::Relaxed);
        s.failing.store(c.failing, Ordering::Relaxed);
    }

    /// The sum over threads, as last published.
    pub fn total(&self) -> Counts {
        let mut t = Counts::default();
        for s in &self.slots {
            t.requests += s.requests.load(Ordering::Relaxed);
            t.errors += s.errors.load(Ordering::Relaxed);
            t.bytes += s.bytes.load(Ordering::Relaxed);
            t.pages += s.pages.load(Ordering::Relaxed);
            t.page_us += s.page_us.load(Ordering::Relaxed);
            t.behind += s.behind.load(Ordering::Relaxed);
            t.window_pages += s.window_pages.load(Ordering::Relaxed);
            let failing = s.failing.load(Ordering::Relaxed);
            t.failing = combine(t.failing, failing);
        }
        t
    }
}

/// What the run is heading for, to show how far it has got.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunLength {
    /// Warm-up, before the measured window.
    pub warmup: Duration,
    /// What ends the measured window: a duration or a page count (`-n`).
    pub stop: Stop,
}

impl RunLength {
    /// `50%  5.0s left`, or None during warm-up (and for a `-n` run that has no pages yet, the
    /// time left is `?`: there is no rate to extrapolate from).
    fn done(&self, elapsed: Duration, pages: u64) -> Option<String> {
        let measured = elapsed.checked_sub(self.warmup)?;
        let (fraction, left) = match self.stop {
            Stop::Duration(d) => {
                let fraction = measured.as_secs_f64() / d.as_secs_f64().max(1e-9);
                (fraction, Some(d.saturating_sub(measured)))
            }
            Stop::Pages(n) => {
                let fraction = pages as f64 / n.max(1) as f64;
                let left = (pages > 0).then(|| {
                    let per_page = measured.as_secs_f64() / pages as f64;
                    Duration::from_secs_f64(per_page * n.saturating_sub(pages) as f64)
                });
                (fraction, left)
            }
        };
        let left = left.map_or("?".to_owned(), clock);
        Some(format!(
            "{:3.0}%  {left} left",
            (100.0 * fraction).min(100.0)
        ))
    }
}

/// A time left as people read it: `8.5s`, `4m05s`, `2h03m`.
fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{:.1}s", d.as_secs_f64()),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, s / 60 % 60),
    }
}

/// The line for one second: rates are over `interval` (from `prev` to `now`).
pub fn line(
    elapsed: Duration,
    length: &RunLength,
    prev: Counts,
    now: Counts,
    interval: Duration,
) -> String {
    let secs = interval.as_secs_f64().max(1e-9);
    let req_s = now.requests.saturating_sub(prev.requests) as f64 / secs;
    let mb_s = now.bytes.saturating_sub(prev.bytes) as f64 / secs / 1e6;
    let at = elapsed.as_secs_f64();
    let head = match length.done(elapsed, now.window_pages) {
        Some(done) => format!("[{at:5.1}s] {done} "),
        None => format!("[{at:5.1}s warm-up]"),
    };
    format!(
        "{head} {:.1} req/s  {}  {:.1} MB/s",
        req_s,
        count_of(now.errors, "error", "errors"),
        mb_s
    )
}

/// Open loop: the warning the live line ends with while the Webchildren cannot keep `rate`
/// (pages due and not started), with how many would carry it at the page time seen over the
/// interval (Little's law: Webchildren = rate x page time).
pub fn rate_warning(prev: Counts, now: Counts, rate: f64, webchildren: usize) -> Option<String> {
    if now.behind == 0 {
        return None;
    }
    let pages = now.pages.saturating_sub(prev.pages);
    let need = match pages {
        0 => "no page completed".to_owned(),
        _ => {
            let page_s = now.page_us.saturating_sub(prev.page_us) as f64 / pages as f64 / 1e6;
            format!(
                "~{} Webchildren needed, {webchildren} running",
                webchildren_for(rate, page_s)
            )
        }
    };
    Some(format!(
        "  RATE NOT KEPT: {} behind; {need}",
        count_of(now.behind, "page", "pages")
    ))
}

/// Rewrites the current terminal line (`\r`, then the text, then erase to end of line).
pub fn print(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = write!(err, "\r{text}\x1b[K");
    let _ = err.flush();
}

/// Erases the live line so that the report starts on a clean line.
pub fn clear() {
    print("");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line_shows_rates_over_the_interval() {
        let prev = Counts {
            requests: 1000,
            ..Counts::default()
        };
        let now = Counts {
            requests: 3000,
            errors: 2,
            bytes: 4_000_000,
            ..Counts::default()
        };
        let timed = RunLength {
            warmup: Duration::from_secs(1),
            stop: Stop::Duration(Duration::from_secs(10)),
        };
        let two = Duration::from_secs(2);
        let l = line(Duration::from_secs(6), &timed, prev, now, two);
        assert_eq!(
            l,
            "[  6.0s]  50%  5.0s left  1000.0 req/s  2 errors  2.0 MB/s"
        );
        let one = Counts { errors: 1, ..now };
        let l = line(Duration::from_millis(500), &timed, prev, one, two);
        assert_eq!(l, "[  0.5s warm-up] 1000.0 req/s  1 error  2.0 MB/s");
    }

    #[test]
    fn page_counted_runs_extrapolate_the_time_left_from_their_page_rate() {
        let counted = RunLength {
            warmup: Duration::ZERO,
            stop: Stop::Pages(1000),
        };
        let at = |secs: u64, pages: u64| {
            counted
                .done(Duration::from_secs(secs), pages)
                .expect("no warm-up")
        };
        // 250 pages in 10 s: 750 more take 30 s.
        assert_eq!(at(10, 250), " 25%  30.0s left");
        assert_eq!(at(1, 0), "  0%  ? left");
        assert_eq!(at(100, 1000), "100%  0.0s left");
        let long = RunLength {
            warmup: Duration::ZERO,
            stop: Stop::Duration(Duration::from_secs(7200)),
        };
        assert_eq!(
            long.done(Duration::from_secs(3), 0).unwrap(),
            "  0%  1h59m left"
        );
        assert_eq!(clock(Duration::from_secs(245)), "4m05s");
    }

    #[test]
    fn rate_warning_says_how_far_behind_and_how_many_webchildren_would_keep_up() {
        let prev = Counts {
            pages: 100,
            page_us: 500_000,
            ..Counts::default()
        };
        // 200 pages of 5 ms in the interval: at 1000 pages/s, 5 busy Webchildren, 7 with margin.
        let now = Counts {
            pages: 300,
            page_us: 1_500_000,
            behind: 400,
            ..Counts::default()
        };
        assert_eq!(
            rate_warning(prev, now, 1000.0, 2).as_deref(),
            Some("  RATE NOT KEPT: 400 pages behind; ~7 Webchildren needed, 2 running")
        );
        let stuck = Counts { behind: 1, ..prev };
        assert_eq!(
            rate_warning(prev, stuck, 1000.0, 2).as_deref(),
            Some("  RATE NOT KEPT: 1 page behind; no page completed")
        );
        assert_eq!(
            rate_warning(prev, Counts { behind: 0, ..now }, 1000.0, 2),
            None
        );
    }

    #[test]
    fn slots_sum_what_threads_published() {
        let p = Progress::new(2);
        p.publish(
            0,
            Counts {
                requests: 1,
                errors: 2,
                bytes: 3,
                pages: 4,
                window_pages: 5,
                ..Counts::default()
            },
        );
        p.publish(
            1,
            Counts {
                requests: 10,
                errors: 20,
                bytes: 30,
                pages: 40,
                window_pages: 50,
                ..Counts::default()
            },
        );
        assert_eq!(
            p.total(),
            Counts {
                requests: 11,
                errors: 22,
                bytes: 33,
                pages: 44,
                window_pages: 55,
                ..Counts::default()
            }
        );
    }
}
