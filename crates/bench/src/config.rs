//! The options of one `flint bench` run, as the engine sees them (the CLI builds this).

use std::path::PathBuf;
use std::time::Duration;

pub use crate::target::{Scheme, Target};

/// How files are fetched over connections (the result documents use the same vocabulary).
pub use results::HttpMode;

/// How long an idle event loop polls before it sleeps, unless told otherwise.
pub const DEFAULT_BUSY_POLL: Duration = Duration::from_micros(5);

/// `--read-slack`'s default: a nap may delay a response's read by 1% of the mean response time.
pub const DEFAULT_READ_SLACK: f64 = 0.01;

/// HTTP/2's receive windows unless `--h2-window`: Chrome's, 6 MiB a stream and 15 MiB the
/// connection, so that flow control never throttles what is measured.
pub const H2_STREAM_WINDOW: u32 = 6 * 1024 * 1024;
/// The connection's receive window unless `--h2-window` (see [`H2_STREAM_WINDOW`]).
pub const H2_CONNECTION_WINDOW: u32 = 15 * 1024 * 1024;

/// Lanes in the closed loop (one-file pages, `--streams N`, no `--think`) refill in batches of
/// at least this share of them (N / 8, rounded up: one at N <= 8, 13 at N = 100): a lane whose
/// page ended waits, unsent, until that many are free or none is in flight. Sent one by one as
/// each response lands, HEADERS reach the server a segment each, in the middle of its own
/// writes on that connection, twice as many segments per request as h2load's slower loop makes
/// by itself, and servers kept busy by both clients answered flint 6 to 9% slower at `-m 100`
/// (docs/bench-http2.md, bench/README.md).
pub const H2_REFILL_SHARE: usize = 8;

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// Measure for this long (after warm-up).
    Duration(Duration),
    /// WebSTONE's repetition count: this many pages in all, across all Webchildren.
    Pages(u64),
}

/// A run's options. [`BenchConfig::new`] gives `flint bench`'s defaults; callers change what
/// they need with struct update syntax (`BenchConfig { concurrency: 4, ..BenchConfig::new(t) }`).
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The server: its address resolved once, before the run.
    pub target: Target,
    /// Webchildren (connections in flight at once).
    pub concurrency: usize,
    /// Event-loop threads; Webchildren are spread evenly across them.
    pub threads: usize,
    /// When the run ends: after a measured duration, or after a number of pages (`-n`).
    pub stop: Stop,
    /// Run this long before measuring; nothing from it counts.
    pub warmup: Duration,
    /// Closed loop: pause after each page.
    pub think: Option<Duration>,
    /// Open loop: pages per second across all Webchildren (wrk2-style; latency from intended start).
    pub rate: Option<f64>,
    /// HTTP/1.0, keep-alive, pipelining, HTTP/2 or HTTP/3 (`--http`).
    pub http: HttpMode,
    /// Connections of one Webchild, sharing each page's files as a browser does (HTTP/1.1 kept
    /// alive from page to page, HTTP/1.0 one per file); 1: WebSTONE's one connection at a time.
    pub connections_per_child: usize,
    /// Requests in flight at once on one connection: HTTP/2 streams (`None`: all of a page's
    /// files, never more than the server's SETTINGS_MAX_CONCURRENT_STREAMS), or HTTP/1.1
    /// pipelining's depth. With a one-file page, HTTP/2 and HTTP/3 keep this many requests of it
    /// in flight (h2load's `-m`): lanes.
    pub streams: Option<u32>,
    /// HTTP/2 receive windows (each stream's, and the connection's when above 65535, where it
    /// starts and below which it cannot go); `None`: a browser's (see [`H2_STREAM_WINDOW`]).
    pub h2_window: Option<u32>,
    /// The id of each HTTP/2 connection's first stream (`None`: 1, as always outside tests).
    /// nghttp2 opens no more streams once ids run out, after 2^30 of them on one connection:
    /// starting near the end lets a test reach that in a few. Odd and positive (a client's);
    /// this process's Webchildren only (`--hosts` workers start at 1).
    #[doc(hidden)]
    pub h2_first_stream_id: Option<i32>,
    /// A TLS handshake done is taken to be done only once the run's time is up (`false`, as
    /// always outside tests; a timed run's only): a test reaches what follows a handshake whose
    /// last flight was still being worked through as the run ended, which otherwise only a
    /// machine's timing reaches, in the time a handshake takes.
    #[doc(hidden)]
    pub handshake_past_end: bool,
    /// A connect not done in this long is a `connect_timeout` error (over TCP, a TLS handshake
    /// not done in it is `tls_handshake`; over HTTP/3 the QUIC handshake is the connect, so one
    /// not done in it is `connect_timeout`); `--connect-timeout`, else `--timeout`.
    pub connect_timeout: Duration,
    /// A response not complete in this long is a `response_timeout` error (`--timeout`).
    pub response_timeout: Duration,
    /// With nothing to do, poll this long before sleeping (zero: sleep at once); see
    /// `client::busy_poll`.
    pub busy_poll: Duration,
    /// Before sleeping, nap on a timer for up to this share of the recent mean response time
    /// (0: never); see `client::read_slack`.
    pub read_slack: f64,
    /// The run's seed: each Webchild's random stream (which page next, `{{random}}`)
    /// follows from it and the Webchild's global number, so a run repeats with the same seed.
    pub seed: u64,
    /// One CSV line per request.
    pub log: Option<PathBuf>,
    /// Print each request's and response's head to stderr.
    pub debug: bool,
    /// Live line on stderr (the CLI sets it only when stderr is a terminal).
    pub progress: bool,
    /// How `https://` targets are reached (unused for `http://`).
    pub tls: TlsOptions,
    /// The statuses that count as success; `None`: 1xx to 3xx (4xx and 5xx are errors).
    pub expect_status: Option<ExpectStatus>,
    /// `--redirect N`: a page entry answered by a same-origin redirect fetches its Location, up
    /// to N times (0: a 3xx is a response, as wrk counts it).
    pub redirect: u32,
    /// Stop the run, with the reason, once every attempt has failed the same way for a second
    /// and not one has succeeded (`runner/fail_fast.rs`); `--no-fail-fast` turns it off.
    pub fail_fast: bool,
    /// `--early-data`: with `--tls-resume --http 3`, a resumed connection sends its first
    /// page's requests in 0-RTT when the session's ticket allows it.
    pub h3_early_data: bool,
}

/// HTTPS options (the TLS client crate's, shared with every HTTPS client of the project).
pub use tls_client::{TlsOptions, TlsVersion};

impl BenchConfig {
    /// `flint bench`'s defaults against `target`: 16 Webchildren on one thread, keep-alive,
    /// closed loop, 10 s without warm-up, timeouts of 10 s, seed 1, no log, no live line.
    pub fn new(target: Target) -> Self {
        BenchConfig {
            target,
            concurrency: 16,
            threads: 1,
            stop: Stop::Duration(Duration::from_secs(10)),
            warmup: Duration::ZERO,
            think: None,
            rate: None,
            http: HttpMode::KeepAlive,
            connections_per_child: 1,
            streams: None,
            h2_window: None,
            h2_first_stream_id: None,
            handshake_past_end: false,
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(10),
            busy_poll: DEFAULT_BUSY_POLL,
            read_slack: DEFAULT_READ_SLACK,
            seed: 1,
            log: None,
            debug: false,
            progress: false,
            tls: TlsOptions::default(),
            expect_status: None,
            redirect: 0,
            fail_fast: true,
            h3_early_data: false,
        }
    }
}

/// `--expect-status`: the statuses that count as success, e.g. `200,304`, `2xx`, `200-299`.
/// Without it, 1xx to 3xx are responses and 4xx and 5xx errors, as wrk counts them. Checked per
/// response: a handful of ranges, no allocation.
/// Sent to `--hosts` workers as its ranges (`[[200, 299], [304, 304]]`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExpectStatus(Vec<(u16, u16)>);

impl ExpectStatus {
    /// Whether `status` counts as success.
    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|&(lo, hi)| (lo..=hi).contains(&status))
    }
}

impl std::str::FromStr for ExpectStatus {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let bad = |item: &str| {
            format!("`{item}` is not a status, a class or a range (e.g. 200,304 or 2xx or 200-299)")
        };
        let code = |t: &str| match t.trim().parse::<u16>() {
            Ok(n) if (100..=999).contains(&n) => Ok(n),
            _ => Err(bad(t)),
        };
        let ranges = text
            .split(',')
            .map(|item| {
                let item = item.trim();
                let lower = item.to_ascii_lowercase();
                if let Some(class) = lower.strip_suffix("xx") {
                    let c = class.parse::<u16>().map_err(|_| bad(item))?;
                    if !(1..=9).contains(&c) {
                        return Err(bad(item));
                    }
                    Ok((c * 100, c * 100 + 99))
                } else if let Some((lo, hi)) = item.split_once('-') {
                    let (lo, hi) = (code(lo)?, code(hi)?);
                    if lo > hi {
                        return Err(bad(item));
                    }
                    Ok((lo, hi))
                } else {
                    code(item).map(|c| (c, c))
                }
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ExpectStatus(ranges))
    }
}

#[cfg(test)]
mod tests {
    use super::ExpectStatus;

    #[test]
    fn statuses_classes_and_ranges_parse() {
        let e: ExpectStatus = "200,304".parse().unwrap();
        assert!(e.contains(200) && e.contains(304) && !e.contains(204));
        let e: ExpectStatus = "2xx".parse().unwrap();
        assert!(e.contains(200) && e.contains(299) && !e.contains(304));
        let e: ExpectStatus = "200-204, 3XX".parse().unwrap();
        assert!(e.contains(204) && e.contains(301) && !e.contains(205));
        for bad in ["", "abc", "2x", "0xx", "99", "300-200", "1000"] {
            assert!(bad.parse::<ExpectStatus>().is_err(), "{bad}");
        }
    }
}
