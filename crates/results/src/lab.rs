//! One `flint lab` run: the document `--json` writes (docs/lab.md): the servers and their
//! status, and one row per measurement.

use crate::bench::Environment;
use crate::{HttpMode, Kind};
use serde::{Deserialize, Serialize};

/// The whole lab run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabResult {
    /// What wrote the document: [`Kind::Lab`] here.
    pub kind: Kind,
    /// Version of the lab layout (docs/lab.md); bumped when a field is renamed or removed.
    pub schema_version: u64,
    /// The experiment run (`syscalls`, `sizes`, `digest`, `all`, ...); a row names its own.
    pub experiment: String,
    /// The version of the flint that wrote it.
    pub flint_version: String,
    /// Wall-clock start, RFC 3339 UTC.
    pub started_at: String,
    /// The machine the servers and the load ran on.
    pub environment: Environment,
    /// The options that shaped the measurements.
    pub options: LabOptionsRecord,
    /// Every server asked for, in the order asked, with its version and status.
    pub servers: Vec<LabServer>,
    /// One row per measurement, in the order measured.
    pub results: Vec<LabRow>,
    /// Ended early by Ctrl-C: the run is partial (its last row is `interrupted`, the servers
    /// it never reached are `not_run`); `false` in a file older than the field.
    pub interrupted: bool,
}

/// The options of the run: every one that shaped its measurements, so that the report can
/// disclose them. Fields an older flint did not write read as `None` or empty.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabOptionsRecord {
    /// Length of each measured window when it runs for a time (`-d`).
    pub duration_s: f64,
    /// Warm-up before each measured window, not counted.
    pub warmup_s: Option<f64>,
    /// Pages fetched per measurement instead of running for `duration_s` (`--pages`); `None`:
    /// on time (the page experiment over a round trip then fetches its own number of pages).
    pub pages: Option<u64>,
    /// The servers asked for, by name.
    pub servers: Vec<String>,
    /// The page experiment's round trips added on the network path (`--rtt`), ms; absent
    /// where the page experiment did not run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rtt_ms: Vec<f64>,
    /// The page experiment's ways of fetching (`--modes`); absent where the page experiment
    /// did not run.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub modes: Vec<String>,
    /// How the servers' syscalls were counted: `perf`, `strace`, `off` (`--no-profile`) or
    /// `unavailable` (no tracer works here); empty in a file older than the field.
    pub profile: String,
    /// The core the servers were pinned to; `None`: not pinned.
    pub server_cpu: Option<u64>,
    /// The core the load (flint's client) was pinned to; `None`: not pinned.
    pub client_cpu: Option<u64>,
    /// The dynamic experiment's test types (`--tests`); absent where the dynamic experiment
    /// did not run, and in files older than the field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tests: Vec<String>,
    /// The dynamic experiment's database (`--db`: `sqlite` or `postgres`); absent where the
    /// dynamic experiment did not run, and in files older than the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub db: Option<String>,
    /// The dynamic experiment's deployments (`--deployments`); absent where the dynamic
    /// experiment did not run, and in files older than the field.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub deployments: Vec<String>,
}

impl LabOptionsRecord {
    /// `profile` when tracing was turned off (`--no-profile`): the servers' syscalls were not
    /// traced.
    pub const PROFILE_OFF: &'static str = "off";
    /// `profile` when no tracer works on this machine: the servers' syscalls were not traced.
    pub const PROFILE_UNAVAILABLE: &'static str = "unavailable";
}

/// `ok`, `missing` (not installed), `failed` (installed, but did not start or run) or `not_run`
/// (the run was interrupted before it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PeerStatus {
    /// Installed, and measured.
    #[default]
    Ok,
    /// Not installed: `note` says how to install it.
    Missing,
    /// Installed, but it did not start or a measurement failed: `note` says the first reason.
    Failed,
    /// Installed, but never measured: the run was interrupted (Ctrl-C) before its turn.
    NotRun,
}

/// One server of the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabServer {
    /// The server's name as `--servers` spells it (`nginx`, `apache-event`).
    pub name: String,
    /// The version it reported (`nginx/1.22.1`); `None` when it is missing.
    pub version: Option<String>,
    /// Whether it was there and measured.
    pub status: PeerStatus,
    /// How to install a missing server; why a failed one failed.
    pub note: Option<String>,
}

/// One measurement of one server.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LabRow {
    /// Empty in a file older than the field: the row is the document's `experiment`.
    pub experiment: String,
    /// The server measured, by name (as `servers[].name`).
    pub server: String,
    /// How bench fetched files on each connection (`http1.0`, `persistent`, `pipelined`,
    /// `http2`).
    pub mode: HttpMode,
    /// The document's size (sizes, digest, tls's sweep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// tls only: the server's key, `ecdsa-p256` or `rsa-2048`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<String>,
    /// tls's handshake rows only: `full` (a new session per connection) or `resumed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake: Option<String>,
    /// tls only: TLS handshakes completed in the window.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    /// tls only: the handshakes of the window that resumed a session (a `resumed` row where few
    /// did measured full handshakes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<u64>,
    /// Complete responses in the window.
    pub requests: u64,
    /// The measured window, seconds.
    pub duration_s: f64,
    /// Complete responses per second of the window: `requests / duration_s`.
    pub requests_per_s: f64,
    /// Every byte read (heads and bodies) per second of the window.
    pub bytes_per_s: f64,
    /// The server's system calls over the window per complete response; `None` without a profile
    /// (`--no-profile`, or tracing not permitted).
    pub syscalls_per_request: Option<f64>,
    /// The server's CPU time (user and system, all its processes) over the window per complete
    /// response, µs; `None` when the CPU time could not be read.
    pub server_cpu_us_per_request: Option<f64>,
    /// The client's core was saturated while the server's was not: the figure is the client's.
    pub client_limited: bool,
    /// Cut short by Ctrl-C: the figures cover part of a window, and the tables leave it out.
    pub interrupted: bool,
    /// Failed requests of every kind in the window, as bench's `summary.errors` counts them.
    pub errors: u64,
    /// How the server's syscalls were counted (`perf`, `strace`); `None` without a profile.
    pub profile_method: Option<String>,
    /// The server's system calls over the window, by syscall (calls in all, not per request);
    /// `None` without a profile.
    pub syscalls: Option<Vec<SyscallCount>>,
    /// The page experiment (`flint lab syscalls`): how the page was fetched, the words of
    /// docs/lab.md (`http1.0`, `persistent`, `pipelined`, `http1.0-4`, `keepalive-6`, `h2`);
    /// absent in older files and other experiments (then `mode` says it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_mode: Option<String>,
    /// The page experiment: over HTTPS (`true`) or cleartext.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls: Option<bool>,
    /// Why this server or client could not fetch the page this way (`h2` without an HTTP/2
    /// client, a server without TLS): the row has no figures, and every table shows it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<String>,
    /// Connections opened per page (mean over the window).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connections_per_page: Option<f64>,
    /// The page experiment: the median page time, first request's start to last response's
    /// end, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_ms_p50: Option<f64>,
    /// The page experiment: the 99th percentile page time, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub page_ms_p99: Option<f64>,
    /// The page experiment: the round trip asked for (`--rtt`), milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_ms: Option<f64>,
    /// The page experiment: how the round trip was made: `none` (0), `netem`, or `delay-line`
    /// (the lab's user-space TUN delay).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delay: Option<String>,
    /// The round trip measured, milliseconds: the median TCP connect of the run's own
    /// connections over the path (as `connect_ms_p50`), or, when the run opened none, of five
    /// connects before the server's runs. Older files: always the latter.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rtt_measured_ms: Option<f64>,
    /// The median TCP connect time of the run's own connections, milliseconds (the round trip
    /// plus the client's and server's delays in answering under load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connect_ms_p50: Option<f64>,
    /// Packets and bytes on the wire per page, counted on the server's end of the path (its
    /// veth interface's counters; frames with their Ethernet headers): `to_server` is what the
    /// client sent, `to_client` what the server sent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wire: Option<WireCounts>,
    /// The dynamic experiment: how the application is deployed (`static`, `cgi`, `fastcgi`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deployment: Option<String>,
    /// The dynamic experiment: the test type asked (`plaintext`, `json`, `db`, `queries`,
    /// `fortunes`, `updates`; the static baseline is `plaintext`'s bytes as a file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub test_type: Option<String>,
    /// The dynamic experiment: the database (`sqlite` or `postgres`); absent for `static`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub database: Option<String>,
    /// The dynamic experiment: the median response time (request written to last byte),
    /// milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms_p50: Option<f64>,
    /// The dynamic experiment: the 99th percentile response time, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_ms_p99: Option<f64>,
    /// The dynamic experiment: CPU per request of each tier the request crossed, in order
    /// (`web`, then `app`: the gateway and application processes, CGI children included, then
    /// `db`: the database server's processes, with PostgreSQL).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<TierCpu>>,
    /// The dynamic experiment: the complete responses of the run traced for the tiers'
    /// syscalls, after the untraced one the other figures come from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced_requests: Option<u64>,
    /// The dynamic experiment: the traced run's responses per second (against
    /// `requests_per_s`: what tracing cost).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub traced_requests_per_s: Option<f64>,
}

impl LabRow {
    /// Whether the row has figures to show: `unavailable` is unset. A row without them (a way
    /// a server cannot run, a deployment that failed its verifier, a measurement that got not
    /// one response or whose requests failed) keeps zeros or what was counted in its rates,
    /// which are no measurement: show it as n/a.
    pub fn has_figures(&self) -> bool {
        self.unavailable.is_none()
    }

    /// Whether the row is a measurement that ran and has no figures (not one response, or its
    /// requests failed beyond the lab's share): it has a window (`duration_s` above 0), which a
    /// row that could not run never has.
    pub fn measured_nothing(&self) -> bool {
        !self.has_figures() && self.duration_s > 0.0
    }
}

/// One tier's CPU over a window, per request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TierCpu {
    /// `web` (the web server's processes), `app` (gateway and application), `db` (the
    /// database server's processes, with PostgreSQL), or `web+app` (a web server that runs
    /// the application in its own processes: mod_php).
    pub tier: String,
    /// User and system CPU per request, µs.
    pub cpu_us_per_request: f64,
    /// System calls per request, counted in a traced run of its own (`traced_requests` on the
    /// row); absent without a profile (`--no-profile`) or when the tier could not be traced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls_per_request: Option<f64>,
    /// The tier's syscalls over the traced run, by syscall (calls in all, not per request).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub syscalls: Option<Vec<SyscallCount>>,
}

/// Packets and bytes per page in each direction, counted on the path (docs/lab.md).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct WireCounts {
    /// Packets the client sent, per page.
    pub packets_to_server: f64,
    /// Packets the server sent, per page.
    pub packets_to_client: f64,
    /// Bytes the client sent, per page (frames with their Ethernet headers).
    pub bytes_to_server: f64,
    /// Bytes the server sent, per page (frames with their Ethernet headers).
    pub bytes_to_client: f64,
    /// Pages the counts are divided by (those complete in the window).
    pub pages: u64,
}

/// One syscall's counts in a row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyscallCount {
    /// The system call's name (`writev`).
    pub name: String,
    /// Calls made.
    pub calls: u64,
    /// Calls that returned an error, `EAGAIN` on a non-blocking socket included.
    pub errors: u64,
    /// Time in the call (strace only; perf counts calls).
    pub seconds: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_row_of_an_older_file_reads_with_what_it_lacks_as_empty() {
        let r: LabRow =
            serde_json::from_value(json!({"server": "nginx", "requests": 5})).expect("lenient");
        assert_eq!((r.server.as_str(), r.requests), ("nginx", 5));
        assert_eq!((r.experiment.as_str(), r.size_bytes), ("", None));
    }

    #[test]
    fn a_row_writes_its_mode_and_status_in_the_documented_words() {
        let doc = LabResult {
            servers: vec![LabServer {
                status: PeerStatus::Missing,
                ..LabServer::default()
            }],
            results: vec![LabRow {
                mode: HttpMode::Pipeline,
                ..LabRow::default()
            }],
            ..LabResult::default()
        };
        let v = serde_json::to_value(&doc).expect("serializes");
        assert_eq!(v["servers"][0]["status"], "missing");
        assert_eq!(v["results"][0]["mode"], "pipelined");
        assert!(
            v["results"][0].get("size_bytes").is_none(),
            "absent, not null"
        );
        let back: LabResult = serde_json::from_value(v).expect("reads back");
        assert_eq!(back, doc);
    }
}
