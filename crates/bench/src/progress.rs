//! The live line on stderr: `[  5.0s] 95123.4 req/s  0 errors  104.2 MB/s`.
//!
//! Each thread owns one slot of counters and publishes into it at most every ~100 ms, with
//! relaxed stores: the hot path never shares a cache line with another thread (the slots are
//! 64-byte aligned) and never waits. The calling thread reads the slots once a second and prints
//! rates over that second. The counters include warm-up (the line shows activity, not results).

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// What a thread has done so far, in total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Responses that matched their framing (any status).
    pub requests: u64,
    pub errors: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Pages completed, and the sum of their times from their actual start, µs: the page time
    /// from which the live line estimates the Webchildren an open-loop rate needs.
    pub pages: u64,
    pub page_us: u64,
    /// Open loop, a gauge: pages due that their Webchildren have not started yet.
    pub behind: u64,
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
}

/// The slots of all threads.
#[derive(Debug)]
pub struct Progress {
    slots: Vec<Slot>,
}

impl Progress {
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
        }
        t
    }
}

/// The line for one second: rates are over `interval` (from `prev` to `now`).
pub fn line(
    elapsed: Duration,
    warmup: bool,
    prev: Counts,
    now: Counts,
    interval: Duration,
) -> String {
    let secs = interval.as_secs_f64().max(1e-9);
    let req_s = now.requests.saturating_sub(prev.requests) as f64 / secs;
    let mb_s = now.bytes.saturating_sub(prev.bytes) as f64 / secs / 1e6;
    format!(
        "[{:5.1}s{}] {:.1} req/s  {}  {:.1} MB/s",
        elapsed.as_secs_f64(),
        if warmup { " warm-up" } else { "" },
        req_s,
        crate::report::count_of(now.errors, "error", "errors"),
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
        crate::report::count_of(now.behind, "page", "pages")
    ))
}

/// The Webchildren that carry `rate` pages/s when a page takes `page_s` (Little's law), plus a
/// quarter for the variance of page times, at least one.
pub fn webchildren_for(rate: f64, page_s: f64) -> u64 {
    ((rate * page_s * 1.25).ceil() as u64).max(1)
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
            errors: 0,
            bytes: 0,
            ..Counts::default()
        };
        let now = Counts {
            requests: 3000,
            errors: 2,
            bytes: 4_000_000,
            ..Counts::default()
        };
        let l = line(
            Duration::from_secs(5),
            false,
            prev,
            now,
            Duration::from_secs(2),
        );
        assert_eq!(l, "[  5.0s] 1000.0 req/s  2 errors  2.0 MB/s");
        let one = Counts { errors: 1, ..now };
        let l = line(
            Duration::from_secs(5),
            true,
            prev,
            one,
            Duration::from_secs(2),
        );
        assert_eq!(l, "[  5.0s warm-up] 1000.0 req/s  1 error  2.0 MB/s");
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
                ..Counts::default()
            },
        );
        p.publish(
            1,
            Counts {
                requests: 10,
                errors: 20,
                bytes: 30,
                ..Counts::default()
            },
        );
        assert_eq!(
            p.total(),
            Counts {
                requests: 11,
                errors: 22,
                bytes: 33,
                ..Counts::default()
            }
        );
    }
}
