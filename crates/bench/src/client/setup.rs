//! What the runner prepares once, before any thread starts: what the threads share, the schedule,
//! every request's bytes and each Webchild's random stream. Nothing here runs per request. (The page picker is
//! [`crate::workload::PagePicker`].)

use crate::config::HttpMode;
use crate::log::LogFile;
use crate::progress::Progress;
use crate::stats::Stats;
use crate::transport::Connector;
use crate::workload::{PagePicker, RequestSpec};
use crate::{BenchConfig, Workload};
use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

/// What every thread reads; nothing in it is written during the run except through atomics
/// (`progress`, `stop`, `running`) and the log file's lock (taken once per ~64 KiB of log).
pub struct RunShared<'a> {
    /// The run's options.
    pub config: &'a BenchConfig,
    /// The pages and URLs the Webchildren fetch.
    pub workload: &'a Workload,
    /// When the window opens and ends, quotas, think time, the open loop's interval, timeouts.
    pub schedule: Schedule,
    /// Every HTTP/1 request, built once: a Webchild writes a slice of it.
    pub requests: Requests,
    /// `--http 2` and `--http 3`: every request as a header list.
    pub h2: Option<super::H2Requests>,
    /// An application workload over HTTP/1: per URL, its requests' fields that no template or
    /// cookie changes, written once for every Webchild (empty otherwise).
    pub(crate) app_fixed: std::sync::Arc<[super::AppFixedFields]>,
    /// How connections are opened (plain TCP, or TLS with its configuration).
    pub connector: Connector,
    /// Picks a page by weight from a Webchild's own random stream.
    pub picker: PagePicker,
    /// `--log`: the per-request log, written by each thread in ~64 KiB blocks.
    pub log: Option<LogFile>,
    /// The live counters, one slot per thread.
    pub progress: Progress,
    /// Set by Ctrl-C: every thread ends its window within its 50 ms tick.
    pub stop: &'a AtomicBool,
    /// The runner's coordinating thread, unparked when the last load thread stops measuring.
    pub coordinator: std::thread::Thread,
    /// Load threads still measuring.
    pub running: AtomicUsize,
    /// Set by the coordinating thread when every attempt has failed the same way for a
    /// second (`runner/fail_fast.rs`); each load thread stops at its next publishing tick.
    pub gave_up: std::sync::OnceLock<crate::stats::GaveUp>,
}

/// Counts its thread out of `RunShared::running` when dropped (also on an error or a panic), and
/// wakes the coordinator when it was the last: the window of a `-n` run or of Ctrl-C ends then.
pub(super) struct Running<'a>(pub(super) &'a RunShared<'a>);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.0.coordinator.unpark();
        }
    }
}

/// What a thread hands back.
#[derive(Debug)]
pub struct ThreadOutcome {
    /// What the thread measured in the window.
    pub stats: Stats,
    /// When the thread stopped measuring (µs since base): the run's end, Ctrl-C, or its last page.
    pub end_us: u64,
    /// How late its first connect began (µs): after the start in the closed loop, after the
    /// page's intended time in the open loop; `None` if it opened none.
    pub first_connect_late_us: Option<u64>,
    /// When its event loop began (µs since base): a thread that opened no connection started
    /// then.
    pub began_us: u64,
    /// The run was stopped (Ctrl-C, or fail fast) before its end.
    pub interrupted: bool,
    /// Writing the log failed: the first error (the run goes on, the log is incomplete).
    pub log_error: Option<io::Error>,
}

/// When things happen, in µs since `base`; computed once by the runner for all threads.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The instant every time of the run is counted from: the load's start, the same on every
    /// thread.
    pub base: Instant,
    /// `base` as a Unix time, for the log.
    pub base_unix_us: u64,
    /// End of warm-up: requests that start earlier are not counted.
    pub measure_us: u64,
    /// End of the measured window (`NONE` with a page count).
    pub end_us: u64,
    /// Per Webchild page quota with `-n` (`None`: run for a duration).
    pub pages: Option<u64>,
    /// Webchildren in the whole run (over every thread and host): how `-n` and the open loop's
    /// offsets are spread.
    pub concurrency: usize,
    /// Closed loop: the wait between a page's end and the next one's start.
    pub think_us: u64,
    /// Open loop: µs between one Webchild's intended page starts.
    pub interval_us: Option<f64>,
    /// Open loop with `-n`: a page that starts after this (µs since `base`) was sent late
    /// ([`Schedule::compute_late_after_us`]); `None` otherwise.
    pub late_after_us: Option<u64>,
    /// How long a connect (with its TLS or QUIC handshake) may take before it fails.
    pub connect_timeout_us: u64,
    /// How long a response may take before it fails.
    pub response_timeout_us: u64,
}

impl Schedule {
    /// Webchild `id`'s share of `-n`: spread evenly, the first ones taking the remainder. A
    /// static split keeps runs reproducible: each child fetches the same pages every time.
    pub fn quota(&self, id: usize) -> u64 {
        match self.pages {
            None => u64::MAX,
            Some(n) => quota(n, self.concurrency, id),
        }
    }

    /// Open loop with a page count (`-n`): the time (µs since `base`) after which a page that
    /// starts counts as sent late, [`LATE_GRACE_MIN_US`] or one Webchild interval, whichever is
    /// more, after the schedule's last due page (over every Webchild of the run). `None` for a
    /// timed run (its pages never started by the end say it) and the closed loop. Computed once
    /// for the run (into `late_after_us`): it looks at every Webchild.
    pub fn compute_late_after_us(&self) -> Option<u64> {
        let (iv, n) = (self.interval_us?, self.pages?);
        let c = self.concurrency.max(1);
        let measure = self.measure_us as f64;
        let last_due = (0..c)
            .filter(|&id| quota(n, c, id) > 0)
            .map(|id| {
                // Its first page due in the window (after a warm-up), then one an interval.
                let offset = iv * id as f64 / c as f64;
                let first = offset + ((measure - offset) / iv).ceil().max(0.0) * iv;
                first + (quota(n, c, id) - 1) as f64 * iv
            })
            .fold(0.0, f64::max);
        // `as` saturates: a schedule past u64's µs has no page late.
        Some((last_due + iv.max(LATE_GRACE_MIN_US as f64)) as u64)
    }
}

/// The least grace after the last due page of a page count (`-n`) before a page counts as sent
/// late, µs: more than the wake-up delays of a loaded machine, which a Webchild's interval at a
/// high rate is not.
pub const LATE_GRACE_MIN_US: u64 = 10_000;

/// Webchild `id`'s share of `n` pages over `concurrency` Webchildren: spread evenly, the first
/// ones taking the remainder (0 for those past `n` when there are more Webchildren than pages).
pub fn quota(n: u64, concurrency: usize, id: usize) -> u64 {
    let c = concurrency.max(1) as u64;
    n / c + u64::from((id as u64) < n % c)
}

/// Every request the run can send, built once; Webchildren write slices of `bytes`.
#[derive(Debug, Clone)]
pub struct Requests {
    bytes: Vec<u8>,
    /// Per URL: its request.
    url: Vec<Range<usize>>,
    /// Per URL: a HEAD (its response has no body), and whether it may be resent once after a
    /// reused connection closed before answering (idempotent methods only).
    head: Vec<bool>,
    resend: Vec<bool>,
    /// Pipelining, per page: where each file's request starts in the page's batch; the batch
    /// from file `j` to the end is `page_file[p][j]..page_end[p]` (used to resume after a close).
    page_file: Vec<Vec<usize>>,
    page_end: Vec<usize>,
}

impl Requests {
    /// Every URL's request written out once (method, path, Host, keep-alive by the HTTP version,
    /// the workload's fields and body), and each page's pipelined batch.
    pub fn build(config: &BenchConfig, workload: &Workload) -> Self {
        let (version, keep_alive) = request_version(config.http);
        let host = &config.target.host;
        let mut bytes = Vec::new();
        let mut url = Vec::with_capacity(workload.urls.len());
        for (i, path) in workload.urls.iter().enumerate() {
            let start = bytes.len();
            write_request(
                &mut bytes,
                path,
                workload.spec(i),
                host,
                config.target.authorization.as_deref(),
                version,
                keep_alive,
            );
            url.push(start..bytes.len());
        }
        let specs = (0..workload.urls.len()).map(|i| workload.spec(i));
        let head = specs.clone().map(RequestSpec::is_head).collect();
        let resend = specs.map(RequestSpec::is_idempotent).collect();
        let (mut page_file, mut page_end) = (Vec::new(), Vec::new());
        if config.http == HttpMode::Pipeline {
            for page in &workload.pages {
                let mut starts = Vec::with_capacity(page.files.len());
                for &f in &page.files {
                    starts.push(bytes.len());
                    bytes.extend_from_within(url[f].clone());
                }
                page_file.push(starts);
                page_end.push(bytes.len());
            }
        }
        Requests {
            bytes,
            url,
            head,
            resend,
            page_file,
            page_end,
        }
    }

    /// Every request's bytes, back to back: what the Webchildren's slices index.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// URL `url`'s request, alone.
    pub fn for_url(&self, url: usize) -> &[u8] {
        &self.bytes[self.url[url].clone()]
    }

    /// Whether URL `url` is requested with HEAD (its response has no body).
    #[inline]
    pub fn is_head(&self, url: usize) -> bool {
        self.head[url]
    }

    /// Whether URL `url`'s request may be sent again on a new connection.
    #[inline]
    pub fn may_resend(&self, url: usize) -> bool {
        self.resend[url]
    }

    /// Where the first request [`Requests::for_file`] gives for file `file` (URL `url`) of
    /// page `page` ends in [`Requests::bytes`]: written whole once the bytes before it are.
    /// Read at the end of a run, not per request.
    pub fn request_end(&self, page: usize, file: usize, url: usize) -> usize {
        match self.page_file.get(page) {
            Some(_) => self.file_end(page, file),
            None => self.url[url].end,
        }
    }

    /// What to write to fetch file `file` (URL `url`) of page `page`: its request, or, when
    /// pipelining, the page's requests from this file to the last (with a `depth`, at most
    /// that many).
    #[inline]
    pub fn for_file(
        &self,
        page: usize,
        file: usize,
        url: usize,
        depth: Option<u32>,
    ) -> Range<usize> {
        match self.page_file.get(page) {
            Some(starts) => match depth {
                Some(d) => starts[file]..self.file_end(page, file + d as usize - 1),
                None => starts[file]..self.page_end[page],
            },
            None => self.url[url].clone(),
        }
    }

    /// Pipelining: where the request of file `file` of page `page` ends in the page's batch
    /// (the batch's end for a file past the last).
    #[inline]
    pub fn file_end(&self, page: usize, file: usize) -> usize {
        self.page_file[page]
            .get(file + 1)
            .copied()
            .unwrap_or(self.page_end[page])
    }
}

/// The version HTTP/1 requests are written in, and whether they keep the connection alive.
pub(super) fn request_version(http: HttpMode) -> (wire::request::Version, bool) {
    use wire::request::Version;
    match http {
        HttpMode::Http10 => (Version::Http10, false),
        // HTTP/2 and HTTP/3 requests are header lists (`client/h2.rs`, `client/h3.rs`); these
        // go unused.
        HttpMode::KeepAlive | HttpMode::Pipeline | HttpMode::Http2 | HttpMode::Http3 => {
            (Version::Http11, true)
        }
    }
}

/// One request: `METHOD path version`, then `Host` and `User-Agent` unless the spec gives its
/// own, `Connection: close` where keep-alive is off in HTTP/1.1, the spec's header fields in
/// order, `Content-Length` when there is a body, and the body.
pub(super) fn write_request(
    out: &mut Vec<u8>,
    path: &str,
    spec: &RequestSpec,
    host: &str,
    authorization: Option<&str>,
    v: wire::request::Version,
    keep_alive: bool,
) {
    use wire::head::{write_header, write_header_u64, USER_AGENT};
    out.extend_from_slice(spec.method().as_bytes());
    out.push(b' ');
    out.extend_from_slice(path.as_bytes());
    out.push(b' ');
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(b"\r\n");
    if !spec.has_header("host") {
        write_header(out, b"Host", host.as_bytes());
    }
    if !spec.has_header("user-agent") {
        write_header(out, b"User-Agent", USER_AGENT);
    }
    // The URL's user and password, unless a header of the workload or -H says otherwise.
    if let Some(auth) = authorization.filter(|_| !spec.has_header("authorization")) {
        write_header(out, b"Authorization", auth.as_bytes());
    }
    if v == wire::request::Version::Http11 && !keep_alive {
        write_header(out, b"Connection", b"close");
    }
    for (name, value) in &spec.headers {
        write_header(out, name.as_bytes(), value.as_bytes());
    }
    if let Some(body) = &spec.body {
        write_header_u64(out, b"Content-Length", body.len() as u64);
    }
    out.extend_from_slice(b"\r\n");
    if let Some(body) = &spec.body {
        out.extend_from_slice(body);
    }
}

/// Webchild `id`'s random stream: the same (seed, id) always fetches the same pages.
pub fn child_rng(seed: u64, id: usize, stream: u64) -> fastrand::Rng {
    // splitmix64 of the pair, so that neighbouring seeds and ids give unrelated streams.
    let mut z = seed ^ (id as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ stream.rotate_left(32);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    fastrand::Rng::with_seed(z ^ (z >> 31))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_quota_splits_n_exactly() {
        let schedule = |n| Schedule {
            base: Instant::now(),
            base_unix_us: 0,
            measure_us: 0,
            end_us: u64::MAX,
            pages: Some(n),
            concurrency: 3,
            think_us: 0,
            interval_us: None,
            late_after_us: None,
            connect_timeout_us: 0,
            response_timeout_us: 0,
        };
        for n in [1, 2, 3, 10, 11] {
            let p = schedule(n);
            assert_eq!((0..3).map(|i| p.quota(i)).sum::<u64>(), n);
        }
    }

    #[test]
    fn a_page_count_is_late_after_its_last_due_page_and_a_grace() {
        let paced = |n, c, interval_us, measure_us| Schedule {
            base: Instant::now(),
            base_unix_us: 0,
            measure_us,
            end_us: u64::MAX,
            pages: Some(n),
            concurrency: c,
            think_us: 0,
            interval_us: Some(interval_us),
            late_after_us: None,
            connect_timeout_us: 0,
            response_timeout_us: 0,
        };
        // -n 20 -c 2 --rate 100: 20 ms a Webchild, offsets 0 and 10 ms, 10 pages each: the
        // last due at 10 + 9 x 20 = 190 ms, late after 20 ms more.
        assert_eq!(
            paced(20, 2, 20_000.0, 0).compute_late_after_us(),
            Some(210_000)
        );
        // -n 21: Webchild 0 has 11 pages, its last due at 200 ms (after Webchild 1's 190).
        assert_eq!(
            paced(21, 2, 20_000.0, 0).compute_late_after_us(),
            Some(220_000)
        );
        // A fast rate: the grace is 10 ms, not the 1 ms interval; offsets 0 and 0.5 ms.
        assert_eq!(
            paced(4, 2, 1_000.0, 0).compute_late_after_us(),
            Some(11_500)
        );
        // More Webchildren than pages: only Webchild 0 has one, due at 0.
        assert_eq!(
            paced(1, 3, 3_000.0, 0).compute_late_after_us(),
            Some(10_000)
        );
        // A warm-up of 25 ms: Webchild 1's first page of the window is due at 30 ms, Webchild
        // 0's at 40 ms, the last.
        assert_eq!(
            paced(2, 2, 20_000.0, 25_000).compute_late_after_us(),
            Some(60_000)
        );
        let mut timed = paced(2, 2, 20_000.0, 0);
        timed.pages = None;
        assert_eq!(
            timed.compute_late_after_us(),
            None,
            "a timed run has its own rule"
        );
    }
}
