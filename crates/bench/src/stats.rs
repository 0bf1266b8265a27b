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

use base64::prelude::{Engine as _, BASE64_STANDARD};
use hdrhistogram::serialization::{
    Deserializer as HistDeserializer, Serializer as _, V2Serializer,
};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};
use std::time::Duration;

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

/// A latency distribution in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct Latency {
    hist: Histogram<u64>,
}

/// The base64 of the histogram's V2 encoding, a string in JSON.
impl Serialize for Latency {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(&self.hist, &mut bytes)
            .map_err(|e| serde::ser::Error::custom(format!("histogram: {e:?}")))?;
        s.serialize_str(&BASE64_STANDARD.encode(&bytes))
    }
}

impl<'de> Deserialize<'de> for Latency {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let text = String::deserialize(d)?;
        let bytes = BASE64_STANDARD
            .decode(text)
            .map_err(|e| D::Error::custom(format!("histogram: not base64: {e}")))?;
        let hist: Histogram<u64> = HistDeserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| D::Error::custom(format!("histogram: not a V2 histogram: {e:?}")))?;
        if hist.low() != 1 || hist.high() != MAX_LATENCY_US {
            return Err(D::Error::custom(format!(
                "histogram: bounds {}..{} µs, expected 1..{MAX_LATENCY_US}",
                hist.low(),
                hist.high()
            )));
        }
        Ok(Latency { hist })
    }
}

/// Latency figures in milliseconds, as reports and JSON print them.
pub use results::LatencySummary;

mod http2;
pub use http2::{error_code_name, frame_type_name, Http2Stats};
mod http3;
pub use http3::{Http3Stats, Packets};

impl Latency {
    /// `sigfig`: 3 for run-wide distributions, 2 for per-page and per-URL ones (a tenth the memory).
    pub fn new(sigfig: u8) -> Self {
        let hist = Histogram::new_with_bounds(1, MAX_LATENCY_US, sigfig)
            .expect("static histogram bounds are valid");
        Latency { hist }
    }

    #[inline]
    pub fn record(&mut self, d: Duration) {
        self.record_us(d.as_micros().min(u128::from(MAX_LATENCY_US)) as u64);
    }

    #[inline]
    pub fn record_us(&mut self, us: u64) {
        self.hist.saturating_record(us.clamp(1, MAX_LATENCY_US));
    }

    /// `n` values of `us` at once.
    pub fn record_n_us(&mut self, us: u64, n: u64) {
        self.hist
            .saturating_record_n(us.clamp(1, MAX_LATENCY_US), n);
    }

    pub fn merge(&mut self, other: &Latency) {
        // Same bounds on both sides (both built by `new`), so `add` cannot fail; a histogram of
        // coarser precision is merged value by value.
        if self.hist.add(&other.hist).is_err() {
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
    }

    /// The percentile spectrum HdrHistogram plots, as `(percentile, ms)`: percentiles 0, 50, 75,
    /// 87.5, ... (each halving what is left above) while the histogram holds enough values to
    /// tell them apart (1 / (1 - p) at most the count) and up to 99.9999, then 100. The ends are
    /// the exact min and max; empty for an empty histogram.
    pub fn spectrum(&self) -> Vec<(f64, f64)> {
        let count = self.hist.len();
        if count == 0 {
            return Vec::new();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        let mut points = vec![(0.0, ms(self.hist.min()))];
        // 2^k values are needed to tell the 1 - 2^-k quantile from the max; 2^19 is the last
        // halving up to 99.9999 (k = 20 would be 99.999905, past it).
        for k in 1..=19u32 {
            if 1u64 << k > count {
                break;
            }
            let q = 1.0 - 0.5f64.powi(k as i32);
            points.push((100.0 * q, ms(self.hist.value_at_quantile(q))));
        }
        points.push((100.0, ms(self.hist.max())));
        points
    }

    pub fn summary(&self) -> LatencySummary {
        if self.hist.is_empty() {
            return LatencySummary::default();
        }
        let ms = |us: u64| us as f64 / 1000.0;
        LatencySummary {
            count: self.hist.len(),
            min: ms(self.hist.min()),
            mean: self.hist.mean() / 1000.0,
            max: ms(self.hist.max()),
            p50: ms(self.hist.value_at_quantile(0.50)),
            p90: ms(self.hist.value_at_quantile(0.90)),
            p95: ms(self.hist.value_at_quantile(0.95)),
            p99: ms(self.hist.value_at_quantile(0.99)),
            p999: ms(self.hist.value_at_quantile(0.999)),
        }
    }
}

/// Why a request failed. Each is counted separately; the JSON key is the snake_case name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    ConnectRefused,
    ConnectTimeout,
    /// Any other connect failure (unreachable, out of ports, ...).
    ConnectOther,
    /// Connection reset or closed before the response was complete (and not a short body).
    Reset,
    ResponseTimeout,
    MalformedStatus,
    MalformedHeaders,
    /// Fewer body bytes than the framing promised, or a broken chunk.
    ShortBody,
    Status1xx,
    Status3xx,
    Status4xx,
    Status5xx,
    /// A read or write failed in another way.
    Io,
    /// HTTPS: the server's certificate was refused (untrusted, expired, another name).
    TlsCertificate,
    /// HTTPS: the handshake failed (no common version or cipher, a plaintext server, a
    /// handshake that did not finish in the connect timeout).
    TlsHandshake,
    /// HTTPS: the connection was reset or closed during the handshake.
    TlsReset,
    /// HTTP/2: the server did not choose `h2` by ALPN, or answered HTTP/1 to prior knowledge.
    H2NotNegotiated,
    /// HTTP/2: the server reset the stream (its error code is counted in `Http2Stats`).
    H2RstStream,
    /// HTTP/2: the connection ended by GOAWAY with the stream not done (streams the server
    /// never processed are retried instead, not counted here).
    H2Goaway,
    /// HTTP/2: the server broke the protocol (a malformed frame, HPACK that does not decode,
    /// a flow-control violation); the connection is ended.
    H2Protocol,
    /// HTTP/2: the server's SETTINGS did not arrive within the connect timeout.
    H2SettingsTimeout,
    /// A 2xx status not in `--expect-status`.
    Status2xx,
    /// `--redirect N`: a page entry still redirected after N redirects followed (a loop, or a
    /// chain longer than N), as hey, oha and curl -L count it.
    TooManyRedirects,
    /// Application workloads (`expect`): the status is not one the file expects.
    CheckStatus,
    /// A header field missing, or not the value expected.
    CheckHeader,
    CheckContentType,
    /// The body does not hold the text or match the regular expression expected.
    CheckBody,
    /// The body is not JSON, or a pointer is missing or not the value expected.
    CheckJson,
    /// The body's length is outside the range expected.
    CheckLength,
    /// A value to extract was not in the response. (A later request that needs a value never
    /// extracted is not sent: counted in `Stats::missing_value_unsent`, not here.)
    ExtractMissing,
    /// A body a check or an extraction reads is longer than flint keeps.
    BodyTooLarge,
    /// A `unique` data set has given every row: the Webchild stops (its page is not fetched).
    DataExhausted,
    /// HTTP/3: the QUIC handshake failed on a TLS alert (an untrusted certificate, one for
    /// another name, no `h3` by ALPN; the alert is counted by name in `Http3Stats`).
    H3Handshake,
    /// HTTP/3: the connection ended on QUIC's idle timeout (no packet from the server for it).
    H3IdleTimeout,
    /// HTTP/3: the server reset the stream (its code is counted by name in `Http3Stats`).
    H3StreamReset,
    /// HTTP/3: the server closed the connection with an error (CONNECTION_CLOSE: its code by
    /// name in `Http3Stats`) with the stream not done.
    H3ConnectionClosed,
    /// HTTP/3: the connection ended after the server's GOAWAY with the stream not done
    /// (streams it never processed are retried instead, not counted here).
    H3Goaway,
    /// HTTP/3: the server broke the protocol and this side closed the connection over it.
    H3Protocol,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 38] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::ConnectOther,
        ErrorKind::Reset,
        ErrorKind::ResponseTimeout,
        ErrorKind::MalformedStatus,
        ErrorKind::MalformedHeaders,
        ErrorKind::ShortBody,
        ErrorKind::Status1xx,
        ErrorKind::Status3xx,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::Io,
        ErrorKind::TlsCertificate,
        ErrorKind::TlsHandshake,
        ErrorKind::TlsReset,
        ErrorKind::H2NotNegotiated,
        ErrorKind::H2RstStream,
        ErrorKind::H2Goaway,
        ErrorKind::H2Protocol,
        ErrorKind::H2SettingsTimeout,
        ErrorKind::Status2xx,
        ErrorKind::TooManyRedirects,
        ErrorKind::CheckStatus,
        ErrorKind::CheckHeader,
        ErrorKind::CheckContentType,
        ErrorKind::CheckBody,
        ErrorKind::CheckJson,
        ErrorKind::CheckLength,
        ErrorKind::ExtractMissing,
        ErrorKind::BodyTooLarge,
        ErrorKind::DataExhausted,
        ErrorKind::H3Handshake,
        ErrorKind::H3IdleTimeout,
        ErrorKind::H3StreamReset,
        ErrorKind::H3ConnectionClosed,
        ErrorKind::H3Goaway,
        ErrorKind::H3Protocol,
    ];

    /// The kinds that are a complete response counted as an error: its status (by default
    /// 4xx and 5xx; with `--expect-status`, any status not in it), a redirect past
    /// `--redirect N`, or an application workload's response that failed a check or an
    /// extraction.
    pub const STATUSES: [ErrorKind; 14] = [
        ErrorKind::Status1xx,
        ErrorKind::Status2xx,
        ErrorKind::Status3xx,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
        ErrorKind::TooManyRedirects,
        ErrorKind::CheckStatus,
        ErrorKind::CheckHeader,
        ErrorKind::CheckContentType,
        ErrorKind::CheckBody,
        ErrorKind::CheckJson,
        ErrorKind::CheckLength,
        ErrorKind::ExtractMissing,
        ErrorKind::BodyTooLarge,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::ConnectOther => "connect_other",
            ErrorKind::Reset => "reset",
            ErrorKind::ResponseTimeout => "response_timeout",
            ErrorKind::MalformedStatus => "malformed_status",
            ErrorKind::MalformedHeaders => "malformed_headers",
            ErrorKind::ShortBody => "short_body",
            ErrorKind::Status1xx => "status_1xx",
            ErrorKind::Status3xx => "status_3xx",
            ErrorKind::Status4xx => "status_4xx",
            ErrorKind::Status5xx => "status_5xx",
            ErrorKind::Io => "io",
            ErrorKind::TlsCertificate => "tls_certificate",
            ErrorKind::TlsHandshake => "tls_handshake",
            ErrorKind::TlsReset => "tls_reset",
            ErrorKind::Status2xx => "status_2xx",
            ErrorKind::H2NotNegotiated => "h2_not_negotiated",
            ErrorKind::H2RstStream => "h2_rst_stream",
            ErrorKind::H2Goaway => "h2_goaway",
            ErrorKind::H2Protocol => "h2_protocol",
            ErrorKind::H2SettingsTimeout => "h2_settings_timeout",
            ErrorKind::TooManyRedirects => "too_many_redirects",
            ErrorKind::CheckStatus => "check_status",
            ErrorKind::CheckHeader => "check_header",
            ErrorKind::CheckContentType => "check_content_type",
            ErrorKind::CheckBody => "check_body",
            ErrorKind::CheckJson => "check_json",
            ErrorKind::CheckLength => "check_length",
            ErrorKind::ExtractMissing => "extract_missing",
            ErrorKind::BodyTooLarge => "body_too_large",
            ErrorKind::DataExhausted => "data_exhausted",
            ErrorKind::H3Handshake => "h3_handshake",
            ErrorKind::H3IdleTimeout => "h3_idle_timeout",
            ErrorKind::H3StreamReset => "h3_stream_reset",
            ErrorKind::H3ConnectionClosed => "h3_connection_closed",
            ErrorKind::H3Goaway => "h3_goaway",
            ErrorKind::H3Protocol => "h3_protocol",
        }
    }
}

/// Errors by kind, a fixed array indexed by `ErrorKind as usize`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorCounts(pub [u64; ErrorKind::ALL.len()]);

impl Default for ErrorCounts {
    fn default() -> Self {
        ErrorCounts([0; ErrorKind::ALL.len()])
    }
}

/// A sequence of counts, in `ErrorKind::ALL`'s order (serde derives arrays of 32 at most).
impl Serialize for ErrorCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de> Deserialize<'de> for ErrorCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let v = Vec::<u64>::deserialize(d)?;
        let mut c = ErrorCounts::default();
        if v.len() != c.0.len() {
            return Err(D::Error::custom(format!(
                "error counts: {} kinds, expected {}",
                v.len(),
                c.0.len()
            )));
        }
        c.0.copy_from_slice(&v);
        Ok(c)
    }
}

impl ErrorCounts {
    #[inline]
    pub fn add(&mut self, kind: ErrorKind) {
        self.0[kind as usize] += 1;
    }
    pub fn get(&self, kind: ErrorKind) -> u64 {
        self.0[kind as usize]
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

/// Counted responses by status code: a fixed table indexed by the code, so counting one is an
/// index and an add, never an allocation. Codes are three digits (the parser takes no other).
#[derive(Debug, Clone, PartialEq)]
pub struct StatusCounts(Box<[u64]>);

/// The codes seen, as a map `{code: count}`.
impl Serialize for StatusCounts {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_map(self.seen())
    }
}

impl<'de> Deserialize<'de> for StatusCounts {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        // JSON map keys are strings.
        let seen = std::collections::BTreeMap::<String, u64>::deserialize(d)?;
        let mut counts = StatusCounts::new();
        for (code, n) in seen {
            let slot = code
                .parse::<usize>()
                .ok()
                .and_then(|i| counts.0.get_mut(i))
                .ok_or_else(|| {
                    serde::de::Error::custom(format!("{code:?} is not a 3-digit status code"))
                })?;
            *slot = n;
        }
        Ok(counts)
    }
}

impl StatusCounts {
    const CODES: usize = 1000;

    pub fn new() -> Self {
        StatusCounts(vec![0; Self::CODES].into_boxed_slice())
    }

    #[inline]
    pub fn add(&mut self, status: u16) {
        self.0[usize::from(status).min(Self::CODES - 1)] += 1;
    }

    pub fn get(&self, status: u16) -> u64 {
        self.0.get(usize::from(status)).copied().unwrap_or(0)
    }

    /// `(code, count)` of the codes seen, in increasing order.
    pub fn seen(&self) -> impl Iterator<Item = (u16, u64)> + '_ {
        self.0
            .iter()
            .enumerate()
            .filter(|(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
    }

    pub fn merge(&mut self, other: &StatusCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

impl Default for StatusCounts {
    fn default() -> Self {
        Self::new()
    }
}

/// One URL (file) across all pages: ptester's row, plus percentiles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UrlStats {
    /// Responses that completed and matched their framing (any status).
    pub requests: u64,
    pub errors: u64,
    /// New connections opened to fetch this URL.
    pub connects: u64,
    pub connect_us_min: u64,
    pub connect_us_max: u64,
    pub connect_us_sum: u64,
    /// Transfer: from the request written to the last byte of the response.
    pub transfer_us_min: u64,
    pub transfer_us_max: u64,
    pub transfer_us_sum: u64,
    pub header_bytes: u64,
    pub body_bytes: u64,
    /// Body size of the last complete response (the file's size, for the page-size figure).
    pub last_body_size: u64,
    pub response: Latency,
}

/// One page: the WebSTONE per-page block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageStats {
    /// Pages whose every file completed.
    pub hits: u64,
    /// Pages abandoned because one of their files failed.
    pub errors: u64,
    /// Sum of page times (connect + transfer of all its files), µs.
    pub time_us_sum: u64,
    pub time_us_max: u64,
    pub connect_us_sum: u64,
    pub connect_us_max: u64,
    /// Body bytes of this page's completed files.
    pub body_bytes: u64,
    pub header_bytes: u64,
    pub connects: u64,
    pub time: Latency,
}

/// Everything one thread (or, merged, one run) measured in the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stats {
    pub pages: Vec<PageStats>,
    pub urls: Vec<UrlStats>,
    /// Per request: TCP connect time (only requests that opened a connection).
    pub connect: Latency,
    /// HTTPS, per new connection: from the TCP connection's establishment to the end of the
    /// TLS handshake (apart from `connect`, as the paper's connect time is TCP's).
    pub tls_handshake: Latency,
    /// HTTPS: handshakes completed in the window, and how many of them resumed a session.
    pub tls_handshakes: u64,
    pub tls_resumed: u64,
    /// HTTPS: what the first handshake in the window agreed on.
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
    /// Application workloads: requests not sent because they need a value never extracted
    /// (the server has none of them; the page ends there, not a hit).
    #[serde(default)]
    pub missing_value_unsent: u64,
    /// Application workloads: requests not sent because a header field's value would have had
    /// a line break or NUL (it would split the request's head; the page ends there).
    #[serde(default)]
    pub unsafe_value_unsent: u64,
    /// `--redirect N`: redirects followed, and those not followed by why.
    #[serde(default)]
    pub redirects: RedirectStats,
    /// Set when the run stopped early because every attempt failed the same way.
    #[serde(default)]
    pub gave_up: Option<crate::runner::fail_fast::GaveUp>,
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
    pub page_uncorrected: Option<Latency>,
    /// Open loop only: how late each page of the window started against its intended time (the
    /// client's own lateness, which the corrected figures above include and the uncorrected
    /// ones do not).
    pub send_lag: Option<Latency>,
    /// Requests of the window sent in full before the end whose response had not been read in
    /// full by then (with pipelining, every request of the batch not answered; with
    /// `--pipeline N` on one-file pages, also those written behind a response the server cut
    /// short or ended with `Connection: close`, never answered): the server received each. In the open loop they are also in `response` and (their page) in `page`,
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
    pub errors: ErrorCounts,
    /// Counted responses by final status code (they sum to `requests`).
    pub statuses: StatusCounts,
    pub requests: u64,
    pub pages_done: u64,
    pub connects: u64,
    /// Every byte read in the window, whatever it belonged to; the time series sums to it.
    pub bytes_total: u64,
    /// Head and body bytes of complete responses: the paper's "data moved" is their sum.
    pub bytes_header: u64,
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
    #[serde(default)]
    pub threads: u64,
    #[serde(default)]
    pub hosts: u64,
    /// One entry per second of the measured window, second `i` covering `(i s, i+1 s]` after
    /// the window's start (see [`second_index`]). The runner leaves exactly
    /// [`seconds_in`]`(duration)` entries in a merged result; a thread's may hold more or fewer.
    pub timeseries: Vec<SecondStats>,
}

/// What one second of the measured window saw (the time series).
///
/// Requests and errors are counted in the second they completed (or failed), bytes in the second
/// they were read: summed over the seconds they equal `Stats::requests`, `errors.total()` and
/// `bytes_total` exactly. The latency is a 2-significant-figure histogram (about 27 KB), so
/// seconds merge across threads bucket by bucket like everything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondStats {
    /// Responses completed in this second (any status).
    pub requests: u64,
    /// Failed requests and non-2xx responses.
    pub errors: u64,
    /// Every byte read in this second.
    pub bytes: u64,
    /// Response latency (as `Stats::response`) of the responses completed in this second.
    pub response: Latency,
}

impl SecondStats {
    pub fn new() -> Self {
        SecondStats {
            requests: 0,
            errors: 0,
            bytes: 0,
            response: Latency::new(2),
        }
    }

    pub fn merge(&mut self, o: &SecondStats) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.bytes += o.bytes;
        self.response.merge(&o.response);
    }
}

impl Default for SecondStats {
    fn default() -> Self {
        Self::new()
    }
}

/// The second of the window an event `elapsed_us` after its start belongs to: second `i` is
/// `(i s, i+1 s]`, and an event at exactly 0 goes to second 0. Closed on the right, so an event
/// at the very end of a window of whole seconds (a `-n` run's last byte) lands in its last second.
#[inline]
pub const fn second_index(elapsed_us: u64) -> usize {
    (elapsed_us.saturating_sub(1) / 1_000_000) as usize
}

/// How many seconds a window of `d` has: its length rounded up (the last one may be partial).
pub fn seconds_in(d: Duration) -> usize {
    let us = d.as_micros().min(u128::from(u64::MAX)) as u64;
    us.div_ceil(1_000_000) as usize
}

impl UrlStats {
    pub fn new() -> Self {
        UrlStats {
            requests: 0,
            errors: 0,
            connects: 0,
            connect_us_min: u64::MAX,
            connect_us_max: 0,
            connect_us_sum: 0,
            transfer_us_min: u64::MAX,
            transfer_us_max: 0,
            transfer_us_sum: 0,
            header_bytes: 0,
            body_bytes: 0,
            last_body_size: 0,
            response: Latency::new(2),
        }
    }

    pub fn merge(&mut self, o: &UrlStats) {
        self.requests += o.requests;
        self.errors += o.errors;
        self.connects += o.connects;
        self.connect_us_min = self.connect_us_min.min(o.connect_us_min);
        self.connect_us_max = self.connect_us_max.max(o.connect_us_max);
        self.connect_us_sum += o.connect_us_sum;
        self.transfer_us_min = self.transfer_us_min.min(o.transfer_us_min);
        self.transfer_us_max = self.transfer_us_max.max(o.transfer_us_max);
        self.transfer_us_sum += o.transfer_us_sum;
        self.header_bytes += o.header_bytes;
        self.body_bytes += o.body_bytes;
        if o.requests > 0 {
            self.last_body_size = o.last_body_size;
        }
        self.response.merge(&o.response);
    }
}

impl Default for UrlStats {
    fn default() -> Self {
        Self::new()
    }
}

impl PageStats {
    pub fn new() -> Self {
        PageStats {
            hits: 0,
            errors: 0,
            time_us_sum: 0,
            time_us_max: 0,
            connect_us_sum: 0,
            connect_us_max: 0,
            body_bytes: 0,
            header_bytes: 0,
            connects: 0,
            time: Latency::new(2),
        }
    }

    pub fn merge(&mut self, o: &PageStats) {
        self.hits += o.hits;
        self.errors += o.errors;
        self.time_us_sum += o.time_us_sum;
        self.time_us_max = self.time_us_max.max(o.time_us_max);
        self.connect_us_sum += o.connect_us_sum;
        self.connect_us_max = self.connect_us_max.max(o.connect_us_max);
        self.body_bytes += o.body_bytes;
        self.header_bytes += o.header_bytes;
        self.connects += o.connects;
        self.time.merge(&o.time);
    }
}

impl Default for PageStats {
    fn default() -> Self {
        Self::new()
    }
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
            missing_value_unsent: 0,
            unsafe_value_unsent: 0,
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
        self.gave_up = crate::runner::fail_fast::GaveUp::merge(self.gave_up, o.gave_up);
        if self.tls_session.is_none() {
            self.tls_session.clone_from(&o.tls_session);
        }
        self.http2.merge(&o.http2);
        self.http3.merge(&o.http3);
        self.redirects.merge(&o.redirects);
        check_failures::merge(&mut self.check_failures, &o.check_failures);
        self.missing_value_unsent += o.missing_value_unsent;
        self.unsafe_value_unsent += o.unsafe_value_unsent;
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
        self.pages_scheduled += o.pages_scheduled;
        self.pages_not_sent += o.pages_not_sent;
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

/// What a TLS handshake agreed on (rustls's names: `TLSv1_3`, `TLS13_AES_128_GCM_SHA256`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsSession {
    pub version: String,
    pub cipher: String,
    /// The key exchange group (`X25519`, `X25519MLKEM768`, ...).
    pub kx: String,
    /// The protocol the server chose by ALPN (`http/1.1`), if any.
    pub alpn: Option<String>,
}

/// A handshake's agreement as rustls names it, without allocating (made a [`TlsSession`] once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TlsAgreed {
    pub version: &'static str,
    pub cipher: &'static str,
    pub kx: &'static str,
    pub alpn: Option<&'static str>,
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

/// One complete response, as the engine hands it to [`Stats::record_response`]: times in µs.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ResponseSample {
    pub header_bytes: u64,
    pub body_bytes: u64,
    /// Request written (open loop, first file of a page: intended start) to first response byte.
    pub ttfb_us: u64,
    /// (Intended) start of the fetch to the last byte, connect included.
    pub response_us: u64,
    /// The same from the actual start (differs from `response_us` only in open loop).
    pub response_uncorrected_us: u64,
    /// Request written to the last byte (ptester's transfer time).
    pub transfer_us: u64,
}

/// Recording, one call per event: the engine says what happened, these say where it is counted.
/// All O(1), none allocates.
impl Stats {
    /// A TLS handshake that took `us` after the TCP connect.
    #[inline]
    pub fn record_tls_handshake(&mut self, us: u64, resumed: bool, agreed: TlsAgreed) {
        self.tls_handshakes += 1;
        self.tls_resumed += u64::from(resumed);
        self.tls_handshake.record_us(us);
        if self.tls_session.is_none() {
            // Once per thread: the names are copied only for the first handshake.
            self.tls_session = Some(TlsSession {
                version: agreed.version.to_owned(),
                cipher: agreed.cipher.to_owned(),
                kx: agreed.kx.to_owned(),
                alpn: agreed.alpn.map(str::to_owned),
            });
        }
    }

    /// A connection opened to fetch `url` as part of `page`.
    #[inline]
    pub fn record_connect(&mut self, page: usize, url: usize, connect_us: u64) {
        self.connects += 1;
        self.connect.record_us(connect_us);
        let u = &mut self.urls[url];
        u.connects += 1;
        u.connect_us_min = u.connect_us_min.min(connect_us);
        u.connect_us_max = u.connect_us_max.max(connect_us);
        u.connect_us_sum += connect_us;
        let p = &mut self.pages[page];
        p.connects += 1;
        p.connect_us_sum += connect_us;
        p.connect_us_max = p.connect_us_max.max(connect_us);
    }

    /// A response that matched its framing (any status: a non-2xx is also recorded as an error).
    #[inline]
    pub fn record_response(&mut self, page: usize, url: usize, r: &ResponseSample) {
        self.requests += 1;
        self.bytes_header += r.header_bytes;
        self.bytes_body += r.body_bytes;
        self.ttfb.record_us(r.ttfb_us);
        self.response.record_us(r.response_us);
        self.response_us_max = self.response_us_max.max(r.response_us);
        if let Some(h) = &mut self.response_uncorrected {
            h.record_us(r.response_uncorrected_us);
        }
        let u = &mut self.urls[url];
        u.requests += 1;
        u.header_bytes += r.header_bytes;
        u.body_bytes += r.body_bytes;
        u.last_body_size = r.body_bytes;
        u.transfer_us_min = u.transfer_us_min.min(r.transfer_us);
        u.transfer_us_max = u.transfer_us_max.max(r.transfer_us);
        u.transfer_us_sum += r.transfer_us;
        u.response.record_us(r.response_us);
        let p = &mut self.pages[page];
        p.header_bytes += r.header_bytes;
        p.body_bytes += r.body_bytes;
    }

    /// `--redirect N`: a redirect followed, a request the server answered; its time is its
    /// page entry's (not a response time of its own).
    pub fn record_redirect(&mut self, header_bytes: u64, body_bytes: u64) {
        self.requests += 1;
        self.bytes_header += header_bytes;
        self.bytes_body += body_bytes;
        self.redirects.followed += 1;
    }

    /// Open loop: a page of the window started `lag_us` after its intended time.
    #[inline]
    pub fn record_send_lag(&mut self, lag_us: u64) {
        self.pages_scheduled += 1;
        if let Some(h) = &mut self.send_lag {
            h.record_us(lag_us);
        }
    }

    /// A request of the window begun but not sent at the end (see `unsent_at_end`): in the
    /// open loop it enters the corrected figures with its wait, as an unfinished one does.
    pub fn record_unsent(&mut self, wait_us: u64, page_wait_us: Option<u64>) {
        self.unsent_at_end += 1;
        if let Some(page_us) = page_wait_us {
            self.response.record_us(wait_us);
            self.page.record_us(page_us);
        }
    }

    /// A request sent and still unanswered when the run ended, after `wait_us` (from its start,
    /// or in the open loop its intended start); `page_wait_us`: open loop, its page's wait,
    /// which enters the corrected figures as a lower bound. `bytes`: what had arrived of its
    /// response.
    pub fn record_unfinished(&mut self, wait_us: u64, page_wait_us: Option<u64>, bytes: u64) {
        self.unfinished += 1;
        self.unfinished_wait.record_us(wait_us);
        self.bytes_unfinished += bytes;
        if let Some(page_us) = page_wait_us {
            self.response.record_us(wait_us);
            self.page.record_us(page_us);
        }
    }

    /// Open loop: `n` pages due in the window that never started before it ended at `end_us`,
    /// the first due at `first_us` and one every `interval_us` after. Each enters the corrected
    /// figures with the time it had waited at the end (a lower bound); a backlog of more than
    /// [`MAX_RAMP`] pages is recorded in that many steps, each standing for its share of pages.
    pub fn record_not_sent(&mut self, end_us: u64, first_us: f64, interval_us: f64, n: u64) {
        self.pages_scheduled += n;
        self.pages_not_sent += n;
        let step = n.div_ceil(MAX_RAMP).max(1);
        let mut k = 0;
        while k < n {
            let count = step.min(n - k);
            let wait = end_us.saturating_sub((first_us + k as f64 * interval_us) as u64);
            self.response.record_n_us(wait, count);
            self.page.record_n_us(wait, count);
            k += count;
        }
    }

    /// A request of `url` failed (or completed with a non-2xx status) for this reason.
    #[inline]
    pub fn record_error(&mut self, url: usize, kind: ErrorKind) {
        self.errors.add(kind);
        self.urls[url].errors += 1;
    }

    /// A page ended: `hit` when every file completed with a 2xx, else it counts as a page error.
    /// `time_us` from the (intended) start of its first file; `uncorrected_us` from the actual one.
    #[inline]
    pub fn record_page(&mut self, page: usize, hit: bool, time_us: u64, uncorrected_us: u64) {
        let p = &mut self.pages[page];
        if !hit {
            p.errors += 1;
            return;
        }
        p.hits += 1;
        p.time_us_sum += time_us;
        p.time_us_max = p.time_us_max.max(time_us);
        p.time.record_us(time_us);
        self.pages_done += 1;
        self.page.record_us(time_us);
        if let Some(h) = &mut self.page_uncorrected {
            h.record_us(uncorrected_us);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
