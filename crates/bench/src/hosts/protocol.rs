//! The line-delimited protocol between the coordinator and `flint worker` (docs/hosts.md).
//!
//! One JSON object per line, `"type"` naming the message. The worker speaks first (its hello:
//! flint's version and the protocol's); the coordinator sends its orders, pings to measure the
//! clock offset, then GO with the agreed start; the worker sends READY, pongs, a heartbeat and
//! its live figures every second, and at the end its full result with histograms. Either side
//! refuses a peer of another protocol version, naming both versions.
//!
//! Both sides read every line with [`super::strict::decode`]: a field the reader does not know,
//! or a field it needs that the line lacks, refuses the message (naming the field and both flint
//! versions) instead of running something other than what was asked. No field has a default
//! here: a peer that does not send a field is of another build, whatever the field's value.
//!
//! [`PROTOCOL_VERSION`] must be bumped whenever a message changes: a field added, removed,
//! renamed, or read differently (another unit, another meaning of a value or of its absence), a
//! value added to an enum a message carries, a message added. This holds for the types the
//! messages carry wherever they are defined (the workload, the TLS options, the expected
//! statuses, the HTTP mode; the result's statistics). The field check refuses a peer that differs by a field even when a bump was
//! forgotten, but a change of meaning keeps every field and only the number tells it; and a
//! worker of version 1 reads no field strictly, so only the number refuses it. The orders' full
//! list of fields is pinned by a test that names this rule when it fails.
//!
//! The hello's `protocol` and `flint_version`, and the orders' two of the same names, never
//! change: a refusal reads them on their own, whatever else the line holds, to name both builds.

use crate::config::{ExpectStatus, TlsOptions};
use crate::stats::Stats;
use crate::target::Scheme;
use crate::workload::Workload;
use crate::HttpMode;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// Bumped whenever a message changes (see the module's doc). 2: the orders name the scheme, TLS
/// server name, credentials, TLS options, streams, HTTP/2 window, busy-poll time, expected
/// statuses and redirects, and both sides refuse fields they do not know. 3: the TLS options
/// name the cipher suites offered (absent: browsers' order, AES-128-GCM first, where version 2
/// offered rustls's, AES-256-GCM first), and a handshake's agreement its key exchange group.
/// 5: the orders say whether to fail fast, and a result's statistics why a worker stopped
/// early. 6: the orders carry the connections each Webchild shares (`--connections-per-client`).
/// 7: the workload carries an application's plan (`workload.app`: its entries as written and
/// the data rows this worker draws from; `null` for a workload without one). 8: the orders say
/// whether a resumed HTTP/3 connection sends its first requests in 0-RTT (`run.early_data`,
/// `--early-data`): a worker of version 7 would read the orders without it and send nothing
/// early, reporting a run other than the one asked for. 9: a result's error counts have three
/// more kinds (`head_too_large`; the requests an application could not send,
/// `missing_value_unsent` and `unsafe_value_unsent`, which were counters apart).
pub const PROTOCOL_VERSION: u32 = 9;

/// flint's own version, sent beside the protocol's so a refusal can name both.
pub const FLINT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Coordinator to worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToWorker {
    /// What to run: sent once, after the worker's hello.
    Orders(Box<Orders>),
    /// A clock probe: answered at once with a pong carrying the worker's wall clock.
    Ping {
        /// The probe's number, from 0: the pong carries it back.
        seq: u32,
    },
    /// Start at `start_unix_us` in the coordinator's clock, which is `start_unix_us +
    /// clock_offset_us` in the worker's.
    Go {
        /// The agreed start, Unix µs in the coordinator's clock (half a second or more ahead).
        start_unix_us: u64,
        /// The worker's clock minus the coordinator's, µs, as the probes measured it (0 when
        /// none came back).
        clock_offset_us: i64,
    },
    /// End the run now and send what was measured (Ctrl-C on the coordinator).
    Stop,
}

/// Worker to coordinator.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ToCoordinator {
    /// The worker's first line, before any order: its build, for the coordinator to refuse
    /// another protocol version before sending anything.
    Hello {
        /// Its [`PROTOCOL_VERSION`].
        protocol: u32,
        /// Its [`FLINT_VERSION`].
        flint_version: String,
    },
    /// Prepared (target resolved, requests built): nothing connects before GO.
    Ready {
        /// The event-loop threads it will run.
        threads: u64,
        /// Its process id, on its own host.
        pid: u32,
    },
    /// Cannot take part, and why (the worker exits after sending it).
    Failed {
        /// One line, said as the coordinator's reason for this host.
        reason: String,
    },
    /// The answer to a ping, sent as soon as it is read.
    Pong {
        /// The ping's `seq`.
        seq: u32,
        /// The worker's wall clock as it answered, Unix µs.
        clock_unix_us: u64,
    },
    /// Sent every second while the worker waits or runs: it is alive.
    Heartbeat,
    /// Totals so far (warm-up included), once a second from the start.
    Live {
        /// Seconds since its run started, warm-up included.
        elapsed_s: f64,
        /// Whether the run is still in its warm-up.
        warmup: bool,
        /// Responses read whole so far (any status).
        requests: u64,
        /// Errors so far, of every kind.
        errors: u64,
        /// Bytes read so far.
        bytes: u64,
    },
    /// The end: everything measured, histograms included.
    Result(Box<WorkerResult>),
}

/// A slice of a run, as the worker will run it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Orders {
    /// The coordinator's [`PROTOCOL_VERSION`].
    pub protocol: u32,
    /// The coordinator's [`FLINT_VERSION`].
    pub flint_version: String,
    /// The name the coordinator knows this host by (for the worker's messages).
    pub host: String,
    /// The target as the user wrote it, for reports.
    pub url: String,
    /// `host:port` to resolve on the worker's host (it may resolve differently there).
    pub connect_to: String,
    /// The `Host` header.
    pub host_header: String,
    /// `http` or `https`.
    pub scheme: Scheme,
    /// The name TLS asks for and checks (empty: the IP address `connect_to` resolves to on
    /// the worker's host).
    pub server_name: String,
    /// `Basic …` from the URL's user and password.
    pub authorization: Option<String>,
    /// HTTPS options (a `--cacert` path is read on the worker's host).
    pub tls: TlsOptions,
    /// The first global Webchild number this worker runs.
    pub first_child: usize,
    /// One past its last: it runs `first_child..end_child`.
    pub end_child: usize,
    /// The whole run's options.
    pub run: RunOrders,
    /// This host's share of the workload (an application's data rows split in proportion to
    /// the hosts' Webchildren).
    pub workload: Workload,
}

/// The whole run's options (totals over all hosts: each Webchild's seed, quota and open-loop
/// offset follow from them and its global number).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOrders {
    /// Webchildren over all hosts (`-c`, or the hosts file's sum).
    pub concurrency: usize,
    /// Event-loop threads; `None`: the worker's own cores.
    pub threads: Option<usize>,
    /// The measured window, µs, after the warm-up (`None`: the run ends by `pages`).
    pub duration_us: Option<u64>,
    /// Pages over all hosts (`-n`; `None`: the run ends by `duration_us`). One of the two is
    /// given; with both, the worker takes `pages`.
    pub pages: Option<u64>,
    /// The warm-up before the window, µs (0: none).
    pub warmup_us: u64,
    /// Closed loop: the pause after each page, µs (`--think`).
    pub think_us: Option<u64>,
    /// Open loop: pages per second over all hosts (`--rate`).
    pub rate: Option<f64>,
    /// HTTP/1.0, keep-alive, pipelining, HTTP/2 or HTTP/3.
    pub http: HttpMode,
    /// Connections each Webchild shares its pages' files over (`--connections-per-client`).
    pub connections_per_child: usize,
    /// Requests in flight per connection (`--streams`, `--pipeline N`; `None`: the mode's own).
    pub streams: Option<u32>,
    /// HTTP/2 receive windows (`--h2-window`).
    pub h2_window: Option<u32>,
    /// How long a connect may take, µs, before it is an error.
    pub connect_timeout_us: u64,
    /// How long a response may take, µs, before it is an error.
    pub response_timeout_us: u64,
    /// How long an idle event loop polls before it sleeps.
    pub busy_poll_us: u64,
    /// The share of the mean response time an idle event loop may nap before it sleeps
    /// (`--read-slack`, a fraction).
    pub read_slack: f64,
    /// The run's seed: each Webchild's random stream follows from it and its global number.
    pub seed: u64,
    /// `--expect-status`: the statuses that count as success (`None`: 4xx and 5xx are errors).
    pub expect_status: Option<ExpectStatus>,
    /// `--redirect N`: same-origin redirects followed per page entry (0: none).
    pub redirect: u32,
    /// Stop once every attempt has failed the same way for a second (`--no-fail-fast`: off).
    pub fail_fast: bool,
    /// `--early-data`: over HTTP/3 with `tls.resume`, a resumed connection sends its page's
    /// requests in 0-RTT when its ticket allows it.
    pub early_data: bool,
    /// Where the worker writes its per-request log, on its own host.
    pub log: Option<String>,
}

/// A worker's whole result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerResult {
    /// Everything it measured in its window, histograms included, for the exact merge.
    pub stats: Stats,
    /// Its measured window.
    pub window_us: u64,
    /// Its run was cut short: the coordinator's stop (or any other line during the run), or
    /// the channel gone (stdin closed, a heartbeat that could not be written).
    pub interrupted: bool,
    /// How late its first request began (its first connect), µs: after the agreed start in the
    /// closed loop, after its page's intended time in the open loop.
    pub start_skew_us: Option<u64>,
    /// Its own CPU (user + sys) over the run.
    pub cpu_us: u64,
}

/// `msg` as one line, newline included.
pub fn encode<T: Serialize>(msg: &T) -> io::Result<Vec<u8>> {
    let mut line = serde_json::to_vec(msg).map_err(io::Error::other)?;
    line.push(b'\n');
    Ok(line)
}

/// Writes `msg` as one line and flushes it.
pub fn send<T: Serialize>(out: &mut dyn Write, msg: &T) -> io::Result<()> {
    out.write_all(&encode(msg)?)?;
    out.flush()
}

/// The wall clock in Unix µs (0 before 1970).
pub fn unix_us() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// One line refusing a message of a peer of another build (`from`: "the coordinator", "its
/// worker"; `me`: what this side is), naming both flint versions.
pub fn refusal(kind: &str, from: &str, peer_flint: Option<&str>, why: &str, me: &str) -> String {
    let theirs = match peer_flint {
        Some(v) => format!("flint {v}"),
        None => "flint version not given".to_owned(),
    };
    format!(
        "{kind} from {from} ({theirs}) refused: {why}; this {me} is flint {FLINT_VERSION} \
         (protocol {PROTOCOL_VERSION}): run one flint build on every host"
    )
}

#[cfg(test)]
pub(crate) mod tests;
