//! One `flint bench` run: the document `--json` writes (docs/bench-json.schema.json).
//!
//! Names carry their unit (`_s`, `_ms`, `_bytes`, `_per_s`) so a consumer never guesses.
//! Latency objects are in milliseconds; per-page and per-URL times in the WebSTONE paper's
//! seconds.

use crate::hosts::HostRecord;
use crate::latency::{LatencySummary, MinMeanMax, SpectrumPoint};
use crate::profile::ServerProfile;
use crate::{HttpMode, Kind};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The whole result of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchResult {
    /// Version of the layout it was written in ([`crate::SCHEMA_VERSION`] for this flint's).
    pub schema_version: u64,
    /// What wrote the document: [`Kind::Bench`] here.
    pub kind: Kind,
    /// The version of the flint that wrote it.
    pub flint_version: String,
    /// Wall-clock start of the measured window, RFC 3339 UTC.
    pub started_at: String,
    /// The same start, in seconds since the Unix epoch (to the microsecond).
    pub started_at_unix_s: f64,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
    /// Set when the run stopped early because every attempt failed the same way.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped_early: Option<StoppedEarly>,
    /// Some client host was lost during the run: the figures are the merge of the others.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// The machine the run was measured on.
    pub environment: Environment,
    /// The options the run was made with.
    pub config: BenchConfigRecord,
    /// The run-wide figures of the measured window.
    pub summary: Summary,
    /// The WebSTONE per-page blocks, one per page of the workload, in its order.
    pub pages: Vec<PageRecord>,
    /// One row per URL of the workload, in its order: ptester's table.
    pub urls: Vec<UrlRecord>,
    /// Every kind of error by its snake_case name, zeros included.
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Application workloads: the first few responses that failed a check or an extraction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub check_failures: Vec<CheckFailureRecord>,
    /// One entry per second of the measured window, in order; their requests, errors and bytes sum
    /// to the summary's `requests`, `errors` and `bytes_read`.
    pub timeseries: Vec<SecondRecord>,
    /// What the server process did over the measured window (`--profile`, inserted by the CLI);
    /// `None` without a profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server_profile: Option<ServerProfile>,
    /// The client hosts of a run on many hosts; empty for a run in one process.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<HostRecord>,
}

/// A response of an application workload that failed a check or an extraction.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct CheckFailureRecord {
    /// Its error kind (an `errors_by_kind` key: `check_body`, `extract_missing`, ...).
    pub kind: String,
    /// The URL (its path, or its template as the workload writes it).
    pub url: String,
    /// What was wanted and what came.
    pub detail: String,
    /// The response's head as received.
    pub head: String,
}

/// Why a run stopped before its end: for a second (at least) every attempt failed as `kind`
/// and not one succeeded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StoppedEarly {
    /// The error kind every attempt failed as (an `errors_by_kind` key).
    pub kind: String,
    /// Failures when it stopped, warm-up included.
    pub attempts: u64,
    /// Seconds from the run's start (warm-up included) to when it stopped.
    pub after_s: f64,
    /// The line flint printed: the kind, the count and what to do about it.
    pub reason: String,
}

/// The machine a result was measured on, each field `None` when unknown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Environment {
    /// The machine's host name.
    pub hostname: Option<String>,
    /// `PRETTY_NAME` of /etc/os-release.
    pub os: Option<String>,
    /// `uname -r`.
    pub kernel: Option<String>,
    /// `model name` of /proc/cpuinfo.
    pub cpu_model: Option<String>,
    /// Logical CPUs online.
    pub cores: Option<u64>,
    /// `MemTotal` of /proc/meminfo.
    pub memory_bytes: Option<u64>,
}

/// The options of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BenchConfigRecord {
    /// Where requests went.
    pub target: TargetRecord,
    /// How files were fetched over connections.
    pub http: HttpMode,
    /// Webchildren (of all hosts).
    pub concurrency: u64,
    /// Event-loop threads (`-t`) the Webchildren were spread over.
    pub threads: u64,
    /// Whether the run was asked to end on time or on a count of pages.
    pub stop: StopKind,
    /// Set when `stop` is `duration`.
    pub duration_s: Option<f64>,
    /// Set when `stop` is `pages`.
    pub pages: Option<u64>,
    /// Warm-up before the measured window, seconds (`--warmup`); nothing from it is counted.
    pub warmup_s: f64,
    /// Open loop when set.
    pub rate_pages_per_s: Option<f64>,
    /// Closed loop: the pause after each page, seconds (`--think`); `None`: no pause.
    pub think_s: Option<f64>,
    /// Seed of the Webchildren's random page choices (`--seed`): the same seed, the same sequence.
    pub seed: u64,
    /// A connect not done after this long fails as `connect_timeout`, seconds.
    pub connect_timeout_s: f64,
    /// A response not complete after this long fails as `response_timeout`, seconds (`--timeout`).
    pub response_timeout_s: f64,
    /// How long an idle event loop polled before it slept (`--busy-poll`); absent in results
    /// from before the option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub busy_poll_us: Option<u64>,
    /// The share of the mean response time an idle event loop could nap before it slept
    /// (`--read-slack`), in percent; absent in results from before the option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_slack_percent: Option<f64>,
    /// Requests in flight per connection (`--streams`, `--pipeline N`), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<u64>,
    /// Connections of each Webchild sharing its pages (`--connections-per-client N`), when
    /// more than one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections_per_client: Option<u64>,
    /// HTTP/2 receive windows (`--h2-window`), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub h2_window_bytes: Option<u64>,
    /// Redirects followed per page entry at most (`--redirect N`), when set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirect: Option<u32>,
    /// Set for an `https://` target.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsConfigRecord>,
}

/// Where requests went.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TargetRecord {
    /// The target URL as given (a password in it replaced by `***`).
    pub url: String,
    /// Where connections went: the socket address, or `unix:PATH` with `--unix-socket`.
    pub addr: String,
    /// The `Host` header's value: the host, with the port when it is not the scheme's own.
    pub host: String,
    /// `http` or `https` (empty in files older than HTTPS support).
    pub scheme: String,
}

/// How an `https://` run set up TLS.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsConfigRecord {
    /// Certificates verified (false with `--insecure`).
    pub verify: bool,
    /// `--cacert`, trusted beside the system's roots.
    pub cacert: Option<String>,
    /// Sessions resumed (`--tls-resume`) rather than a full handshake per connection.
    pub resume: bool,
    /// Requests sent as 0-RTT early data on resumed HTTP/3 connections (`--early-data`).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub early_data: bool,
    /// The one version allowed (`--tls 1.2|1.3`); `None`: both.
    pub version: Option<String>,
    /// The cipher suites offered, in order (`--tls-ciphers`); `None`: browsers' order,
    /// AES-128-GCM first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ciphers: Option<Vec<String>>,
}

/// What the TLS connections of an `https://` run negotiated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TlsRecord {
    /// `TLSv1_3`, `TLSv1_2`; `None` when no handshake completed.
    pub version: Option<String>,
    /// The cipher suite (rustls's name, `TLS13_AES_128_GCM_SHA256`); `None` when no handshake
    /// completed.
    pub cipher: Option<String>,
    /// The key exchange group (`X25519`, `X25519MLKEM768`; `none` for a TLS 1.2 resumption).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kx: Option<String>,
    /// The protocol the server chose by ALPN (`http/1.1`).
    pub alpn: Option<String>,
    /// Handshakes completed in the window, full and resumed.
    pub handshakes: u64,
    /// Handshakes of the window that resumed a session.
    pub resumed: u64,
    /// Failed handshakes by reason (`unknown_issuer`, `name_mismatch`, ...), only those seen.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub failures: BTreeMap<String, u64>,
}

/// How the run was asked to end.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StopKind {
    /// On time (`-d`): `duration_s` says how long.
    #[default]
    Duration,
    /// On a count of pages across all Webchildren (`-n`): `pages` says how many.
    Pages,
}

/// The run-wide figures: the WebSTONE summary and the modern rates and latencies.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Summary {
    /// Pages per minute of the measured window.
    pub webstone_number: f64,
    /// Pages completed in the window: every file of the page completed, none with an error.
    pub pages: u64,
    /// Files retrieved: complete responses.
    pub requests: u64,
    /// Connections opened in the window.
    pub connects: u64,
    /// Failed requests of every kind, responses whose status counts as an error included: the sum
    /// of `errors_by_kind`.
    pub errors: u64,
    /// Webchildren whose measurements are in these figures (on many hosts: of the hosts that
    /// finished).
    pub clients: u64,
    /// Webchildren of hosts lost during the run: not in these figures (0 otherwise).
    pub clients_lost: u64,
    /// The paper's data moved: `bytes_header + bytes_body` of the counted responses, exactly.
    pub bytes_total: u64,
    /// Heads (interim 1xx heads included) of the counted responses, bytes.
    pub bytes_header: u64,
    /// Bodies (payload, without chunked framing) of the counted responses, bytes.
    pub bytes_body: u64,
    /// Every byte read in the window; the time series sums to it.
    pub bytes_read: u64,
    /// Bytes read that belong to no counted response, by what they are.
    pub bytes_not_in_responses: BytesNotInResponses,
    /// Complete responses by status code (`"200"`, `"404"`, ...).
    pub status_counts: BTreeMap<String, u64>,
    /// Requests of the window sent in full and not answered when the run ended: the server
    /// received each (it counted `requests + unfinished`).
    pub unfinished: u64,
    /// Requests of the window begun but not sent when the run ended (connecting, in the TLS
    /// handshake, partly written): the server received none.
    pub unsent_at_end: u64,
    /// Application workloads: requests not sent because they need a value never extracted
    /// (the server received none). The errors of that kind: each is in `errors` too.
    #[serde(default)]
    pub missing_value_unsent: u64,
    /// Application workloads: requests not sent because a header field's value had a line
    /// break or NUL (the server received none). The errors of that kind: each is in `errors`
    /// too.
    #[serde(default)]
    pub unsafe_value_unsent: u64,
    /// HTTP/1.1 pipelining: re-sends (not distinct requests) of requests written whole behind
    /// a response after which the server closed the connection, which it never processed, sent
    /// again on a new connection (a request re-sent twice counts twice).
    #[serde(default)]
    pub pipeline_resent: u64,
    /// HTTP/1.1 pipelining: requests behind such a response not sent again, not idempotent (a
    /// POST) or in a batch with one that is: the server never processed them.
    #[serde(default)]
    pub pipeline_not_resent: u64,
    /// How long the unfinished requests had waited when the run ended (a lower bound of their
    /// latency; in the open loop it enters the corrected figures).
    pub unfinished_wait_ms: LatencySummary,
    /// The measured window (warm-up excluded).
    pub duration_s: f64,
    /// Complete responses per second of the measured window: `requests / duration_s`.
    pub requests_per_s: f64,
    /// Pages completed per second of the measured window: `pages / duration_s`.
    pub pages_per_s: f64,
    /// Aggregate: bytes_total / duration_s.
    pub throughput_bytes_per_s: f64,
    /// The paper's Thruput: bytes_total / cumulative_time_s.
    pub webstone_thruput_bytes_per_s: f64,
    /// Sum of the Webchildren's running time in the window, seconds: the paper's cumulative time of
    /// test for all hosts.
    pub cumulative_time_s: f64,
    /// Sum of the window's TCP connect times, seconds.
    pub connect_time_total_s: f64,
    /// The paper's Average time per connect: `connect_time_total_s / connects`, seconds (0 without
    /// a connect).
    pub avg_connect_s: f64,
    /// The paper's Maximum time to connect: the longest single TCP connect, seconds.
    pub max_connect_s: f64,
    /// The paper's: cumulative_time_s / requests.
    pub avg_response_s: f64,
    /// The paper's Maximum Response time: the slowest single file, connect included, seconds (exact
    /// to the µs).
    pub max_response_s: f64,
    /// The paper's Average body size: `bytes_body / requests`.
    pub avg_body_bytes: f64,
    /// The paper's Average retrieval size: `bytes_total / requests`.
    pub avg_retrieval_bytes: f64,
    /// Each TCP connect of the window, from its start to the socket connected (only requests that
    /// opened a connection).
    pub connect_ms: LatencySummary,
    /// Time to first byte: the request's last byte written (open loop, a page's first file: its
    /// intended start) to the response's first byte.
    pub ttfb_ms: LatencySummary,
    /// Request start (open loop: intended start) to its last byte, connect included
    /// (docs/latency.md); in the open loop also the requests unfinished or not sent at the end,
    /// with their wait so far (a lower bound).
    pub response_ms: LatencySummary,
    /// Page start (open loop: intended start) to its last file's last byte, of the pages whose
    /// every file completed without an error; in the open loop also the pages left unfinished or
    /// not sent at the end, with their wait so far (a lower bound).
    pub page_ms: LatencySummary,
    /// Open loop only: from the actual send rather than the intended start.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_uncorrected_ms: Option<LatencySummary>,
    /// Open loop only: `page_ms` from the actual start rather than the intended one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_uncorrected_ms: Option<LatencySummary>,
    /// Open loop only: how late each page left against its intended time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub send_lag_ms: Option<LatencySummary>,
    /// Open loop only: pages whose intended start fell in the window (started or not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_scheduled: Option<u64>,
    /// Open loop only: scheduled pages that never started, their Webchild still busy with an
    /// earlier one; they are in `response_ms` and `page_ms` with their wait at the end.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_not_sent: Option<u64>,
    /// Open loop with a page count (`-n`) only: pages that started after the schedule's last
    /// due page plus a grace (one Webchild interval, at least 10 ms), each Webchild's first
    /// page apart.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages_sent_late: Option<u64>,
    /// Open loop only: whether the Webchildren carried the rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_kept: Option<bool>,
    /// `https://` only: the TLS handshake apart from the TCP connect (`count` = handshakes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshake_ms: Option<LatencySummary>,
    /// `https://` only: what the first handshake of the window agreed on, the handshakes completed
    /// and resumed, and the failures.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<TlsRecord>,
    /// `--http 2` only: the connections' and streams' own counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http2: Option<Http2Record>,
    /// `--http 3` only: the QUIC connections' packets and the streams' own counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http3: Option<Http3Record>,
    /// `--redirect N` only: redirects followed, and those not followed by why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub redirects: Option<RedirectsRecord>,
    /// The percentile spectrum of `response_ms`; empty when nothing was measured.
    pub response_spectrum: Vec<SpectrumPoint>,
    /// The percentile spectrum of `page_ms`; empty when nothing was measured.
    pub page_spectrum: Vec<SpectrumPoint>,
}

/// `--redirect N`: what became of the redirects of the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct RedirectsRecord {
    /// Redirects followed: each a request the server answered, in `requests` and
    /// `status_counts`; the page entry's response time runs to its final response.
    pub followed: u64,
    /// Redirects whose response stood, by why (`cross_origin`, `no_location`,
    /// `bad_location`, `too_many_locations`); one past N is the error `too_many_redirects`.
    pub not_followed: BTreeMap<String, u64>,
}

/// What an HTTP/2 run counted besides requests (the measured window's).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http2Record {
    /// Connections whose server's SETTINGS arrived.
    pub connections: u64,
    /// Streams opened, one per request sent (a request retried after a GOAWAY opens two).
    pub streams: u64,
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS (the largest seen).
    pub max_concurrent_streams: u64,
    /// RST_STREAM frames received, by RFC 9113 error code name (`REFUSED_STREAM`).
    pub rst_streams: BTreeMap<String, u64>,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server did not process, sent again (not failed): those a GOAWAY left, on a
    /// new connection, and those reset with REFUSED_STREAM.
    pub retried: u64,
    /// Bytes of the HPACK-encoded request header blocks sent.
    pub header_bytes_sent: u64,
    /// What HPACK saved: the request header lists' names and values, uncompressed, less
    /// `header_bytes_sent`.
    pub header_bytes_saved: u64,
    /// Frames received by type name (`DATA`, `HEADERS`, ...).
    pub frames_received: BTreeMap<String, u64>,
}

/// What an HTTP/3 run counted besides requests (the measured window's): QUIC's packets and
/// bytes on the wire (UDP payloads) beside the body bytes, and the failures by their names.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Http3Record {
    /// Connections whose handshake completed.
    pub connections: u64,
    /// Streams opened, one per request sent (a request retried after a GOAWAY opens two).
    pub streams: u64,
    /// QUIC packets sent.
    pub packets_sent: u64,
    /// QUIC packets received.
    pub packets_received: u64,
    /// Packets sent that QUIC's loss detection declared lost.
    pub packets_lost: u64,
    /// Packets sent that carried retransmitted data.
    pub retransmissions: u64,
    /// UDP payload bytes sent (QUIC packets: headers, frames, encryption).
    pub wire_bytes_sent: u64,
    /// UDP payload bytes received (QUIC packets: headers, frames, encryption).
    pub wire_bytes_received: u64,
    /// Response body bytes of the window's counted responses (`bytes_body`).
    pub body_bytes: u64,
    /// `wire_bytes_received / body_bytes`: what a body byte cost on the wire (0 without a body
    /// byte).
    pub wire_per_body_byte: f64,
    /// The round-trip time QUIC measured at the end of each handshake, in milliseconds.
    pub handshake_rtt_ms: MinMeanMax,
    /// GOAWAY frames received.
    pub goaways: u64,
    /// Streams the server did not process, sent again (not failed): those a GOAWAY left, on a
    /// new connection, and those reset with H3_REQUEST_REJECTED.
    pub retried: u64,
    /// `--early-data`: connections that sent requests in 0-RTT, and of them those whose
    /// 0-RTT the server accepted and rejected (QUIC then sent the requests again after the
    /// handshake).
    pub early_offered: u64,
    /// Connections whose 0-RTT the server accepted.
    pub early_accepted: u64,
    /// Connections whose 0-RTT the server rejected.
    pub early_rejected: u64,
    /// Requests sent in 0-RTT.
    pub early_requests: u64,
    /// Handshakes refused, by TLS alert name and number (`unknown_ca (48)`).
    pub handshake_alerts: BTreeMap<String, u64>,
    /// Streams reset by the server, by HTTP/3 error code name (`H3_REQUEST_REJECTED`).
    pub stream_resets: BTreeMap<String, u64>,
    /// Connections the server closed with an error, by QUIC or HTTP/3 code name.
    pub connection_closes: BTreeMap<String, u64>,
    /// UDP datagrams read, and the receive system calls that read them (`recvmmsg`, UDP GRO):
    /// their ratio is the batching's.
    pub datagrams_received: u64,
    /// Receive system calls (a call that found the socket empty counts).
    pub recv_calls: u64,
    /// UDP datagrams sent, and the send system calls (one a UDP GSO batch).
    pub datagrams_sent: u64,
    /// Send system calls.
    pub send_calls: u64,
    /// Received messages the kernel cut short, dropped unread (flint serve's `h3_dropped`).
    pub dropped: u64,
    /// Connections whose socket had no UDP GRO (the kernel's refusal or `FLINT_H3_NO_GRO`).
    pub gro_off: u64,
    /// Connections whose socket sent without UDP GSO at the handshake's end.
    pub gso_off: u64,
    /// Connections read one `recvmsg` a message (`recvmmsg` refused).
    pub recvmmsg_off: u64,
}

/// Bytes read that belong to no counted response.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BytesNotInResponses {
    /// Every byte read in the window outside the counted responses: `bytes_read - bytes_total`; the
    /// kinds below sum to it.
    pub total: u64,
    /// Chunk sizes, extensions and trailers of chunked bodies.
    pub chunk_framing: u64,
    /// HTTP/2 frame headers, padding, and frames that belong to no response (SETTINGS, PING,
    /// WINDOW_UPDATE, GOAWAY, RST_STREAM); absent before HTTP/2.
    pub h2_framing: u64,
    /// Responses that failed (short bodies, malformed heads, timeouts).
    pub failed: u64,
    /// Responses still arriving when the run ended.
    pub unfinished: u64,
    /// The rest (e.g. the warm-up's last responses, read in the window).
    pub other: u64,
}

/// One page: the WebSTONE per-page block.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct PageRecord {
    /// The page's name, as the workload gives it.
    pub name: String,
    /// Its weight in the Webchildren's random choice of a page, relative to the other pages'.
    pub weight: f64,
    /// The paper's page size: the sum of its files' body sizes, as last served.
    pub size_bytes: u64,
    /// Pages whose every file completed without an error (the paper's times the page was hit).
    pub hits: u64,
    /// Pages abandoned because one of their files failed or had an error status.
    pub errors: u64,
    /// Its files' URL paths, in the order fetched.
    pub files: Vec<String>,
    /// Sum of its hits' page times (connect and transfer of all its files), seconds.
    pub total_time_s: f64,
    /// Its longest page time, seconds.
    pub max_response_s: f64,
    /// Sum of the connect times of the connections opened for it, seconds.
    pub connect_time_s: f64,
    /// The longest single connect made for it, seconds (never above the summary's).
    pub max_connect_s: f64,
    /// Body bytes of its completed files: the paper's data moved, hits times page size when no file
    /// was cut short.
    pub data_moved_bytes: u64,
    /// Head bytes of its completed files.
    pub header_bytes: u64,
    /// Connections opened for it.
    pub connects: u64,
    /// Its hits' page times (from the intended start in the open loop), ms.
    pub time_ms: LatencySummary,
}

/// One URL across all pages: ptester's row, plus percentiles.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct UrlRecord {
    /// The URL path, or its template as the workload writes it.
    pub url: String,
    /// The request method (`GET` unless the workload or `-m` says otherwise).
    pub method: String,
    /// Complete responses, any status.
    pub requests: u64,
    /// Failed requests, and responses whose status counts as an error.
    pub errors: u64,
    /// Connections opened to fetch it.
    pub connects: u64,
    /// Its connects' times; `None` figures without a connect.
    pub connect_ms: MinMeanMax,
    /// ptester's transfer time: request written to the response's last byte; `None` figures without
    /// a response.
    pub transfer_ms: MinMeanMax,
    /// Head bytes of its complete responses.
    pub header_bytes: u64,
    /// Body bytes of its complete responses.
    pub body_bytes: u64,
    /// Body size of the last complete response.
    pub size_bytes: u64,
    /// Its complete responses' times, start (open loop: intended start) to last byte, ms.
    pub response_ms: LatencySummary,
}

/// One second of the measured window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SecondRecord {
    /// End of the second, seconds since the window's start (the window's end for a last,
    /// partial second).
    pub t_s: f64,
    /// Responses completed in this second (any status).
    pub requests: u64,
    /// Failed requests and error statuses counted in this second.
    pub errors: u64,
    /// Every byte read in this second.
    pub bytes: u64,
    /// The median response time of the responses completed in this second; `None` in a second
    /// without responses.
    pub p50_ms: Option<f64>,
    /// The 99th percentile response time of the responses completed in this second; `None` in a
    /// second without responses.
    pub p99_ms: Option<f64>,
}

impl BenchResult {
    /// Reads a bench result leniently (see the crate docs).
    pub fn from_value(v: &serde_json::Value) -> Result<Self, serde_json::Error> {
        BenchResult::deserialize(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_old_file_without_later_fields_still_reads() {
        let v = json!({"summary": {"requests_per_s": 12.5, "requests": 3},
                       "timeseries": [{"t_s": 1, "requests": 3}], "unknown_field": [1, 2]});
        let r = BenchResult::from_value(&v).unwrap();
        assert_eq!(r.kind, Kind::Bench);
        assert_eq!(r.summary.requests, 3);
        assert_eq!(r.summary.requests_per_s, 12.5);
        assert_eq!(r.timeseries[0].p99_ms, None);
        assert!(r.hosts.is_empty() && r.server_profile.is_none());
    }

    #[test]
    fn a_result_survives_a_round_trip() {
        let mut r = BenchResult {
            schema_version: crate::SCHEMA_VERSION,
            flint_version: "0.1.0".into(),
            ..BenchResult::default()
        };
        r.summary.response_uncorrected_ms = Some(LatencySummary {
            count: 2,
            max: 1.5,
            ..LatencySummary::default()
        });
        r.hosts.push(HostRecord {
            name: "h1".into(),
            reason: Some("lost".into()),
            ..HostRecord::default()
        });
        r.errors_by_kind.insert("reset".into(), 4);
        let text = serde_json::to_string(&r).unwrap();
        let back: BenchResult = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_wrong_type_is_an_error_not_a_silent_zero() {
        let v = json!({"summary": {"requests": "many"}});
        assert!(BenchResult::from_value(&v).is_err());
    }
}
