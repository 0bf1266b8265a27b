//! What a run measured: preallocated per thread, merged exactly at the end.
//!
//! Every latency is an HDR histogram, so memory is bounded whatever the run's length and two
//! histograms merge bucket by bucket: the merge of per-thread results equals the result of one
//! thread that saw everything, and results from other processes and hosts merge the same way.
//! Counters are `u64`; nothing here is allocated per request.
//!
//! The engine (client.rs) fills these fields and the reports read them; the JSON schema names
//! many of them, so a rename is a schema change.
//!
//! `Stats` serializes exactly (serde): counters as numbers, each histogram as the base64 of its
//! HdrHistogram V2 encoding (every bucket's count, zig-zag LEB128, so a mostly empty histogram
//! takes a few hundred bytes). A worker on another host ships its `Stats` this way, and merging
//! deserialized `Stats` equals merging the originals, bucket for bucket.
//!
//! This file is `Stats` itself, its merge and its byte accounting; beside it, one job a file:
//! `latency.rs` (the histogram), `errors.rs` (the error taxonomy), `statuses.rs`, `rows.rs`
//! (per URL, per page, per second), `tls.rs` (a handshake's agreement), `gave_up.rs` (why
//! a run stopped early), `recording.rs` (the engine's recording API), and the protocols' and
//! failures' own counters.

use serde::{Deserialize, Serialize};

pub mod check_failures;
mod redirects;
pub(crate) mod tls_failures;
pub use redirects::{RedirectStats, Unfollowed};
pub use tls_failures::{TlsFailure, TlsFailures};

/// Longest latency a histogram holds exactly; longer ones are clamped to it (and still counted).
pub const MAX_LATENCY_US: u64 = 3_600_000_000;

/// The most separate values one Webchild's backlog of pages not sent is recorded as, so that
/// the end of a run whose rate was far out of reach stays quick.
pub const MAX_RAMP: u64 = 100_000;

/// Latency figures in milliseconds, as reports and JSON print them.
pub use results::LatencySummary;

mod errors;
mod gave_up;
mod latency;
mod recording;
mod rows;
mod statuses;
mod tls;
pub use errors::{ErrorCounts, ErrorKind};
pub use gave_up::GaveUp;
pub use latency::Latency;
pub use recording::ResponseSample;
pub use rows::{second_index, seconds_in, PageStats, SecondStats, UrlStats};
pub use statuses::StatusCounts;
pub use tls::{TlsAgreed, TlsSession};

mod http2;
pub use http2::{error_code_name, frame_type_name, Http2Stats};
mod http3;
pub use http3::{Http3Stats, Packets};

/// Everything one thread (or, merged, one run) measured in the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    /// The WebSTONE per-page blocks, one per page of the workload, in its order.
    pub pages: Vec<PageStats>,
    /// ptester's per-URL rows, one per URL of the workload, in its order.
    pub urls: Vec<UrlStats>,
    /// Per request: TCP connect time (only requests that opened a connection).
    pub connect: Latency,
    /// HTTPS, per new connection: from the TCP connection's establishment to the end of the
    /// TLS handshake (apart from `connect`, as the paper's connect time is TCP's).
    pub tls_handshake: Latency,
    /// HTTPS: handshakes completed in the window, and how many of them resumed a session.
    pub tls_handshakes: u64,
    /// Of those handshakes, the ones that resumed a session (an abbreviated handshake).
    pub tls_resumed: u64,
    /// HTTPS: what the first full handshake in the window agreed on (the first resumed one's
    /// when none was full).
    pub tls_session: Option<TlsSession>,
    /// HTTPS: failed handshakes in the window, by reason.
    #[serde(default)]
    pub tls_failures: TlsFailures,
    /// HTTP/2's own counters (all zero over HTTP/1).
    #[serde(default)]
    pub http2: Http2Stats,
    /// HTTP/3's own counters (all zero over TCP).
    #[serde(default)]
    pub http3: Http3Stats,
    /// Application workloads: the first few responses that failed a check or an extraction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_failures: Vec<check_failures::CheckFailure>,
    /// HTTP/1.1 pipelining: re-sends (not distinct requests) of requests written whole behind a
    /// response after which the server closed the connection (saying `Connection: close`, or
    /// closing after a complete response), which it never processed (RFC 9112 section 9.3.2),
    /// sent again on a new connection: counted as each goes again, its page begun in the
    /// window; a request re-sent twice (a server closing after every response) counts twice.
    /// Each such request is in `requests` once, when it completes, and in neither `unfinished`
    /// nor `errors` for having been re-sent.
    #[serde(default)]
    pub pipeline_resent: u64,
    /// HTTP/1.1 pipelining: requests written whole behind such a closing response, their page
    /// begun in the window, not sent again: not idempotent (a POST: RFC 9110 section 9.2.2),
    /// or, in a batch (a page of several files), written with one that is not (the page ends
    /// there). The server never processed them; their page is not a hit. Not errors, not
    /// unfinished.
    #[serde(default)]
    pub pipeline_not_resent: u64,
    /// `--redirect N`: redirects followed, and those not followed by why.
    #[serde(default)]
    pub redirects: RedirectStats,
    /// Set when the run stopped early because every attempt failed the same way.
    #[serde(default)]
    pub gave_up: Option<GaveUp>,
    /// Per request: request written (or, open loop, intended start) to first response byte.
    pub ttfb: Latency,
    /// Per request: (intended) start to last byte, connect included when one was opened.
    pub response: Latency,
    /// The longest completed response, exact (µs): the paper's "Maximum Response time", kept
    /// to the µs as the page blocks' maxima are, where the histogram rounds to its precision.
    #[serde(default)]
    pub response_us_max: u64,
    /// Per page: start of its first file to the end of its last.
    pub page: Latency,
    /// Open loop only: the same, measured from the actual send rather than the intended start.
    pub response_uncorrected: Option<Latency>,
    /// Open loop only: page times from the page's actual start rather than its intended one.
    pub page_uncorrected: Option<Latency>,
    /// Open loop only: how late each page of the window started against its intended time (the
    /// client's own lateness, which the corrected figures above include and the uncorrected
    /// ones do not).
    pub send_lag: Option<Latency>,
    /// Requests of the window sent in full before the end whose response had not been read in
    /// full by then (with pipelining, every request of the batch not answered; with
    /// `--pipeline N` on one-file pages, also those written behind a response the server cut
    /// short, never answered; not those behind a response after which it closed, sent again:
    /// `pipeline_resent`): the server received each. In the open loop they are also in
    /// `response` and (their page) in `page`,
    /// with the time they had waited at the end: a lower bound.
    pub unfinished: u64,
    /// Requests of the window begun but not sent when the run ended: connecting, in the TLS
    /// handshake, or partly written. The server received none of them, so they are not in
    /// `unfinished`; in the open loop they are in `response` and `page` with their wait, as the
    /// unfinished are.
    #[serde(default)]
    pub unsent_at_end: u64,
    /// What the unfinished requests had waited when the run ended (from their intended start in
    /// the open loop, from their start in the closed loop).
    pub unfinished_wait: Latency,
    /// Open loop: pages whose intended start fell in the window (started or not).
    pub pages_scheduled: u64,
    /// Open loop: pages due in the window that never started, their Webchild still busy with
    /// an earlier one (the rate was not kept). Also in `response` and `page` with their wait.
    pub pages_not_sent: u64,
    /// Open loop with a page count (`-n`): pages that started after the schedule's last due
    /// page plus a grace (one Webchild interval, at least 10 ms; `Schedule::late_after_us`),
    /// each Webchild's first page apart. A timed run's lateness is its `pages_not_sent`.
    #[serde(default)]
    pub pages_sent_late: u64,
    /// Failed requests and error responses, by kind.
    pub errors: ErrorCounts,
    /// Counted responses by final status code (they sum to `requests`).
    pub statuses: StatusCounts,
    /// Responses counted in the window (any status): what the request rate is made of.
    pub requests: u64,
    /// Pages that ended as hits in the window (every file a success).
    pub pages_done: u64,
    /// Connections opened in the window.
    pub connects: u64,
    /// Every byte read in the window, whatever it belonged to; the time series sums to it.
    pub bytes_total: u64,
    /// Head and body bytes of complete responses: the paper's "data moved" is their sum.
    pub bytes_header: u64,
    /// Body bytes of complete responses (framing taken off).
    pub bytes_body: u64,
    /// Bytes read in the window that belong to no counted response, by what they are (the rest
    /// of `bytes_total` beyond these and the counted responses: see [`Stats::bytes_other`]).
    /// Chunked transfer coding's framing (sizes, CRLFs, trailers) of counted responses.
    pub bytes_chunk_framing: u64,
    /// Everything read for requests that failed in the window (cut short, malformed, timed out).
    pub bytes_failed: u64,
    /// What had arrived of the responses still unfinished when the run ended.
    pub bytes_unfinished: u64,
    /// Sum over Webchildren of the time each was running in the window (the paper's
    /// "cumulative time of test for all hosts"), µs.
    pub cumulative_us: u64,
    /// Webchildren, event-loop threads and client hosts whose measurements these are: a
    /// thread's own are (its Webchildren, 1, 0); a merge adds them, and the coordinator of a
    /// run on many hosts sets `hosts` to those it merged, so a lost host's are not in them.
    #[serde(default)]
    pub webchildren: u64,
    /// Event-loop threads (see `webchildren`).
    #[serde(default)]
    pub threads: u64,
    /// Client hosts (see `webchildren`): 0 in a thread's own, set by the coordinator.
    #[serde(default)]
    pub hosts: u64,
    /// One entry per second of the measured window, second `i` covering `(i s, i+1 s]` after
    /// the window's start (see [`second_index`]). The runner leaves exactly
    /// [`seconds_in`]`(duration)` entries in a merged result; a thread's may hold more or fewer.
    pub timeseries: Vec<SecondStats>,
}

impl Stats {
    /// Everything preallocated for this workload: recording never allocates.
    pub fn new(workload: &crate::Workload, open_loop: bool) -> Self {
        Stats {
            pages: workload.pages.iter().map(|_| PageStats::new()).collect(),
            urls: workload.urls.iter().map(|_| UrlStats::new()).collect(),
            connect: Latency::new(3),
            tls_handshake: Latency::new(3),
            tls_handshakes: 0,
            tls_resumed: 0,
            tls_failures: TlsFailures::default(),
            tls_session: None,
            http2: Http2Stats::default(),
            http3: Http3Stats::default(),
            redirects: RedirectStats::default(),
            check_failures: Vec::new(),
            pipeline_resent: 0,
            pipeline_not_resent: 0,
            gave_up: None,
            ttfb: Latency::new(3),
            response: Latency::new(3),
            response_us_max: 0,
            page: Latency::new(3),
            response_uncorrected: open_loop.then(|| Latency::new(3)),
            page_uncorrected: open_loop.then(|| Latency::new(3)),
            send_lag: open_loop.then(|| Latency::new(3)),
            unfinished: 0,
            unsent_at_end: 0,
            unfinished_wait: Latency::new(3),
            pages_scheduled: 0,
            pages_not_sent: 0,
            pages_sent_late: 0,
            errors: ErrorCounts::default(),
            statuses: StatusCounts::new(),
            requests: 0,
            pages_done: 0,
            connects: 0,
            bytes_total: 0,
            bytes_header: 0,
            bytes_body: 0,
            bytes_chunk_framing: 0,
            bytes_failed: 0,
            bytes_unfinished: 0,
            cumulative_us: 0,
            webchildren: 0,
            threads: 0,
            hosts: 0,
            timeseries: Vec::new(),
        }
    }

    /// Makes seconds `0..n` of the time series exist now, so that recording into them never
    /// allocates (the engine calls it for a run of known duration).
    pub fn preallocate_seconds(&mut self, n: usize) {
        if self.timeseries.len() < n {
            self.timeseries.resize_with(n, SecondStats::new);
        }
    }

    /// Second `i` of the time series, created (with any missing before it) if needed: that
    /// allocates once per new second, so at most about once a second per thread.
    #[inline]
    pub fn second(&mut self, i: usize) -> &mut SecondStats {
        if i >= self.timeseries.len() {
            self.grow_seconds(i + 1);
        }
        &mut self.timeseries[i]
    }

    #[cold]
    fn grow_seconds(&mut self, n: usize) {
        self.preallocate_seconds(n);
    }

    /// Exact: histograms merge bucket by bucket, counters add, extremes take the extreme.
    pub fn merge(&mut self, o: &Stats) {
        for (a, b) in self.pages.iter_mut().zip(&o.pages) {
            a.merge(b);
        }
        for (a, b) in self.urls.iter_mut().zip(&o.urls) {
            a.merge(b);
        }
        self.connect.merge(&o.connect);
        self.tls_handshake.merge(&o.tls_handshake);
        self.tls_handshakes += o.tls_handshakes;
        self.tls_resumed += o.tls_resumed;
        self.tls_failures.merge(&o.tls_failures);
        // On many hosts each stops on its own: their failures add up.
        self.gave_up = GaveUp::merge(self.gave_up, o.gave_up);
        if let Some(theirs) = &o.tls_session {
            if TlsSession::replaced_by(self.tls_session.as_ref(), theirs.resumed) {
                self.tls_session = Some(theirs.clone());
            }
        }
        self.http2.merge(&o.http2);
        self.http3.merge(&o.http3);
        self.redirects.merge(&o.redirects);
        check_failures::merge(&mut self.check_failures, &o.check_failures);
        self.pipeline_resent += o.pipeline_resent;
        self.pipeline_not_resent += o.pipeline_not_resent;
        self.ttfb.merge(&o.ttfb);
        self.response.merge(&o.response);
        self.response_us_max = self.response_us_max.max(o.response_us_max);
        self.page.merge(&o.page);
        if let (Some(a), Some(b)) = (&mut self.response_uncorrected, &o.response_uncorrected) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (&mut self.page_uncorrected, &o.page_uncorrected) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (&mut self.send_lag, &o.send_lag) {
            a.merge(b);
        }
        self.unfinished += o.unfinished;
        self.unsent_at_end += o.unsent_at_end;
        self.unfinished_wait.merge(&o.unfinished_wait);
        // Saturating: a schedule is bounded at start (runner/plan.rs), but a count that could
        // not be held must never wrap into a small one.
        self.pages_scheduled = self.pages_scheduled.saturating_add(o.pages_scheduled);
        self.pages_not_sent = self.pages_not_sent.saturating_add(o.pages_not_sent);
        self.pages_sent_late = self.pages_sent_late.saturating_add(o.pages_sent_late);
        self.errors.merge(&o.errors);
        self.statuses.merge(&o.statuses);
        self.requests += o.requests;
        self.pages_done += o.pages_done;
        self.connects += o.connects;
        self.bytes_total += o.bytes_total;
        self.bytes_header += o.bytes_header;
        self.bytes_body += o.bytes_body;
        self.bytes_chunk_framing += o.bytes_chunk_framing;
        self.bytes_failed += o.bytes_failed;
        self.bytes_unfinished += o.bytes_unfinished;
        self.cumulative_us += o.cumulative_us;
        self.webchildren += o.webchildren;
        self.threads += o.threads;
        self.hosts += o.hosts;
        self.preallocate_seconds(o.timeseries.len());
        for (a, b) in self.timeseries.iter_mut().zip(&o.timeseries) {
            a.merge(b);
        }
    }
}

/// Byte accounting: the paper's identity and what is read besides.
impl Stats {
    /// The paper's "data moved": head and body bytes of the counted responses, exactly.
    pub fn data_moved(&self) -> u64 {
        self.bytes_header + self.bytes_body
    }

    /// Bytes read in the window that belong to no counted response and to none of the named
    /// kinds: the ends of responses begun before the window (the warm-up's last ones) or
    /// completed after it, and bytes no request asked for.
    pub fn bytes_other(&self) -> u64 {
        self.bytes_total.saturating_sub(
            self.data_moved()
                + self.bytes_chunk_framing
                + self.http2.bytes_framing
                + self.bytes_failed
                + self.bytes_unfinished,
        )
    }

    /// All bytes read in the window that belong to no counted response.
    pub fn bytes_not_in_responses(&self) -> u64 {
        self.bytes_total.saturating_sub(self.data_moved())
    }
}

/// Request accounting: what was tried, whatever came of it.
impl Stats {
    /// Requests attempted in the window: the responses counted and the errors that brought
    /// none. A response with an error status is both a counted request and an error, so it is
    /// counted once; every other error is an attempt that brought no response.
    pub fn attempts(&self) -> u64 {
        let errors = self.errors.total();
        let answered_badly: u64 = (ErrorKind::STATUSES.iter())
            .map(|&k| self.errors.get(k))
            .sum();
        self.requests + errors.saturating_sub(answered_badly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_tls_session_said_is_a_full_handshakes_whatever_came_first() {
        let agreed = |kx: &'static str| TlsAgreed {
            version: "TLSv1_2",
            cipher: "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
            kx,
            alpn: Some("h2"),
        };
        let kx = |s: &Stats| s.tls_session.as_ref().map(|t| (t.kx.clone(), t.resumed));
        // A resumed TLS 1.2 handshake first (no group), then full ones.
        let w = crate::Workload::from_paths(&["/".to_string()]).expect("a path");
        let mut s = Stats::new(&w, false);
        s.record_tls_handshake(10, true, agreed("none"));
        assert_eq!(
            kx(&s),
            Some(("none".into(), true)),
            "only a resumed one so far"
        );
        s.record_tls_handshake(10, false, agreed("X25519"));
        s.record_tls_handshake(10, true, agreed("none"));
        assert_eq!(kx(&s), Some(("X25519".into(), false)));
        // Merged: a full handshake's wins over a resumed one's, whichever side has it.
        let mut resumed_only = Stats::new(&w, false);
        resumed_only.record_tls_handshake(10, true, agreed("none"));
        let mut merged = resumed_only.clone();
        merged.merge(&s);
        assert_eq!(kx(&merged), Some(("X25519".into(), false)));
        let mut merged = s.clone();
        merged.merge(&resumed_only);
        assert_eq!(kx(&merged), Some(("X25519".into(), false)));
        assert_eq!((merged.tls_handshakes, merged.tls_resumed), (4, 3));
    }

    #[test]
    fn error_counts_round_trip_and_a_wrong_length_is_refused() {
        assert!(ErrorKind::ALL.len() > 32, "past serde's derive limit");
        let mut counts = ErrorCounts::default();
        for (i, kind) in ErrorKind::ALL.iter().enumerate() {
            for _ in 0..=i {
                counts.add(*kind);
            }
        }
        let json = serde_json::to_string(&counts).unwrap();
        let back: ErrorCounts = serde_json::from_str(&json).unwrap();
        assert_eq!(back, counts);
        let short = serde_json::from_str::<ErrorCounts>("[1,2,3]").unwrap_err();
        assert!(short.to_string().contains("3 kinds"), "{short}");
    }

    #[test]
    fn seconds_are_closed_on_the_right() {
        assert_eq!(second_index(0), 0);
        assert_eq!(second_index(1), 0);
        assert_eq!(second_index(1_000_000), 0, "the end of second 0 is in it");
        assert_eq!(second_index(1_000_001), 1);
        assert_eq!(second_index(2_500_000), 2);
        assert_eq!(seconds_in(Duration::ZERO), 0);
        assert_eq!(seconds_in(Duration::from_micros(1)), 1);
        assert_eq!(seconds_in(Duration::from_secs(2)), 2);
        assert_eq!(seconds_in(Duration::from_millis(2001)), 3);
        // The last event of a window is in its last second.
        for us in [1, 999_999, 1_000_000, 2_000_000, 2_500_000] {
            let d = Duration::from_micros(us);
            assert_eq!(second_index(us) + 1, seconds_in(d), "{us}");
        }
    }

    #[test]
    fn seconds_merge_by_index_exactly() {
        let w = crate::Workload::from_paths(&["/a".into()]).unwrap();
        let (mut a, mut b) = (Stats::new(&w, false), Stats::new(&w, false));
        a.second(0).requests += 3;
        a.second(0).response.record_us(1_000);
        b.second(2).requests += 5;
        b.second(2).errors += 1;
        b.second(2).bytes += 70;
        b.second(0).response.record_us(9_000);
        assert_eq!(a.timeseries.len(), 1);
        assert_eq!(
            b.timeseries.len(),
            3,
            "seconds before a new one are created empty"
        );
        a.merge(&b);
        let requests: Vec<u64> = a.timeseries.iter().map(|s| s.requests).collect();
        assert_eq!(requests, [3, 0, 5]);
        assert_eq!((a.timeseries[2].errors, a.timeseries[2].bytes), (1, 70));
        let first = a.timeseries[0].response.summary();
        assert_eq!(first.count, 2);
        assert!(first.max >= 8.9 && first.min <= 1.01, "{first:?}");
    }

    #[test]
    fn a_second_of_time_series_stays_under_32_kib() {
        let s = SecondStats::new();
        let bytes = std::mem::size_of::<SecondStats>() + 8 * s.response.hist.distinct_values();
        println!("one second of time series: {bytes} bytes");
        assert!(bytes <= 32 * 1024, "{bytes} bytes");
    }

    #[test]
    fn preallocated_seconds_are_not_reallocated_when_recorded() {
        let w = crate::Workload::from_paths(&["/a".into()]).unwrap();
        let mut s = Stats::new(&w, false);
        s.preallocate_seconds(3);
        let at = s.timeseries.as_ptr();
        s.second(2).requests += 1;
        s.second(0).response.record_us(5);
        assert_eq!(s.timeseries.as_ptr(), at);
        assert_eq!(s.timeseries.len(), 3);
    }

    #[test]
    fn spectrum_of_a_thousand_values_stops_where_the_count_does() {
        let mut l = Latency::new(3);
        for ms in 1..=1000u64 {
            l.record_us(ms * 1000);
        }
        let s = l.spectrum();
        let p: Vec<f64> = s.iter().map(|x| x.0).collect();
        // 2^9 = 512 <= 1000 < 1024: ten halvings (0 to 99.8046875), then 100.
        assert_eq!(p.len(), 11, "{p:?}");
        assert_eq!(p[9], 99.8046875);
        assert_eq!(p[10], 100.0);
        assert_eq!(s[0].1, 1.0);
        assert!((s[1].1 - 500.0).abs() <= 1.0, "{s:?}");
        assert!((s[10].1 - 1000.0).abs() <= 1.0, "{s:?}");
        assert!(s.windows(2).all(|w| w[0].1 <= w[1].1));
        assert!(Latency::new(2).spectrum().is_empty());
    }

    #[test]
    fn spectrum_of_a_huge_count_ends_at_six_nines() {
        let mut l = Latency::new(2);
        l.hist.record_n(1000, 10_000_000).unwrap();
        let p: Vec<f64> = l.spectrum().iter().map(|x| x.0).collect();
        assert_eq!(p.len(), 21);
        assert!(p[19] < 99.9999 && p[19] > 99.9998, "{}", p[19]);
        assert_eq!(p[20], 100.0);
    }
}
