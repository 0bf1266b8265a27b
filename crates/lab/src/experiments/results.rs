//! What a lab run produced, in the shape of its JSON (docs/lab.md): the servers and their
//! status, one row per measurement, and the document [`LabReport::to_json`] writes.
//!
//! The HTML report renders this JSON, so the names here are a contract: fields may be added,
//! none renamed or removed without changing both sides.

use super::measure::Measurement;
use super::Experiment;
use crate::peers::PeerKind;
use serde::Serialize;
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};

/// `ok`, `missing` (not installed) or `failed` (installed, but did not start or run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    Missing,
    Failed,
}

/// One server of the run, as the JSON's `servers[]` lists it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerStatus {
    pub name: String,
    pub version: Option<String>,
    pub status: Status,
    /// How to install a missing server; why a failed one failed.
    pub note: Option<String>,
    #[serde(skip)]
    pub kind: PeerKind,
}

/// One syscall's counts in a result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SyscallCount {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    /// Time in the call (strace only; perf counts calls).
    pub seconds: Option<f64>,
}

/// One measurement of one server: the JSON's `results[]` element (docs/lab.md).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResultRow {
    pub experiment: &'static str,
    pub server: String,
    /// `http1.0`, `persistent` or `pipelined`.
    pub mode: bench::HttpMode,
    /// The document's size (sizes, digest, tls's sweep).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// tls only: the server's key, `ecdsa-p256` or `rsa-2048`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub certificate: Option<&'static str>,
    /// tls's handshake rows only: `full` (a new session per connection) or `resumed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub handshake: Option<&'static str>,
    /// tls only: TLS handshakes completed in the window, and how many of them resumed a session
    /// (a `resumed` row where few did measured full handshakes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_handshakes: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_resumed: Option<u64>,
    /// Complete responses in the window.
    pub requests: u64,
    pub duration_s: f64,
    pub requests_per_s: f64,
    /// Every byte read (heads and bodies) per second of the window.
    pub bytes_per_s: f64,
    pub syscalls_per_request: Option<f64>,
    pub server_cpu_us_per_request: Option<f64>,
    /// The client's core was saturated while the server's was not: the figure is the client's.
    pub client_limited: bool,
    /// Cut short by Ctrl-C: the figures cover part of a window, and the tables leave it out.
    pub interrupted: bool,
    pub errors: u64,
    pub profile_method: Option<String>,
    pub syscalls: Option<Vec<SyscallCount>>,
}

/// Share of one core above which a process counts as saturated.
pub const SATURATED: f64 = 0.9;

impl ResultRow {
    pub(crate) fn new(
        experiment: Experiment,
        server: PeerKind,
        mode: bench::HttpMode,
        size_bytes: Option<u64>,
        m: &Measurement,
    ) -> Self {
        let s = &m.run.stats;
        let duration_s = m.run.duration.as_secs_f64();
        let per_s = |n: u64| {
            if duration_s > 0.0 {
                n as f64 / duration_s
            } else {
                0.0
            }
        };
        let per_request = |x: f64| (s.requests > 0).then(|| x / s.requests as f64);
        let window = m.window.as_secs_f64();
        let busy = |cpu: Option<Duration>| cpu.map(|c| c.as_secs_f64() / window.max(1e-9));
        let interrupted = m.run.interrupted;
        let client_limited = !interrupted
            && matches!(
                (busy(m.client_cpu), busy(m.server_cpu)),
                (Some(c), Some(sv)) if c >= SATURATED && sv < SATURATED
            );
        ResultRow {
            experiment: experiment.name(),
            server: server.name().to_owned(),
            mode,
            size_bytes,
            certificate: None,
            handshake: None,
            tls_handshakes: None,
            tls_resumed: None,
            requests: s.requests,
            duration_s,
            requests_per_s: per_s(s.requests),
            bytes_per_s: per_s(s.bytes_total),
            syscalls_per_request: m
                .profile
                .as_ref()
                .and_then(|p| per_request(p.total_calls as f64)),
            server_cpu_us_per_request: m
                .server_cpu
                .and_then(|c| per_request(c.as_secs_f64() * 1e6)),
            client_limited,
            interrupted,
            errors: s.errors.total(),
            profile_method: m.profile.as_ref().map(|p| p.method.to_string()),
            syscalls: m.profile.as_ref().map(|p| {
                p.syscalls
                    .iter()
                    .map(|r| SyscallCount {
                        name: r.name.clone(),
                        calls: r.calls,
                        errors: r.errors,
                        seconds: r.seconds,
                    })
                    .collect()
            }),
        }
    }
}

/// Everything a lab run produced.
#[derive(Debug, Clone)]
pub struct LabReport {
    pub experiment: Experiment,
    pub started_at: SystemTime,
    pub duration: Duration,
    pub servers: Vec<ServerStatus>,
    pub results: Vec<ResultRow>,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
}

pub const SCHEMA_VERSION: u64 = 1;

impl LabReport {
    /// The JSON document `--json` writes and the HTML report reads (docs/lab.md).
    pub fn to_json(&self) -> Value {
        json!({
            "kind": "lab",
            "schema_version": SCHEMA_VERSION,
            "experiment": self.experiment.name(),
            "flint_version": env!("CARGO_PKG_VERSION"),
            "started_at": bench::report::rfc3339(self.started_at),
            "environment": bench::report::environment(),
            "options": {
                "duration_s": self.duration.as_secs_f64(),
                "servers": self.servers.iter().map(|s| s.name.clone()).collect::<Vec<_>>(),
            },
            "servers": self.servers,
            "results": self.results,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::{docroot, LabOptions};
    use crate::profile::{Method, Profile, SyscallRow};

    fn measurement(
        requests: u64,
        bytes: u64,
        client_cpu: Option<f64>,
        server_cpu: Option<f64>,
        calls: Option<u64>,
    ) -> Measurement {
        let workload = docroot::single_file_workload("/sizes/1024.html");
        let addr = std::net::SocketAddr::from(([127, 0, 0, 1], 1));
        let config = bench::BenchConfig {
            concurrency: 1,
            stop: bench::Stop::Duration(Duration::from_secs(2)),
            connect_timeout: Duration::from_secs(1),
            response_timeout: Duration::from_secs(1),
            ..bench::BenchConfig::new(bench::Target::http(addr))
        };
        let mut stats = bench::Stats::new(&workload, false);
        stats.requests = requests;
        stats.bytes_total = bytes;
        let run = bench::RunResult {
            config,
            workload,
            stats,
            duration: Duration::from_secs(2),
            started_at: SystemTime::UNIX_EPOCH,
            interrupted: false,
        };
        let profile = calls.map(|c| Profile {
            pid: 1,
            method: Method::Perf,
            window: Duration::from_secs(2),
            cpu_user: Duration::ZERO,
            cpu_sys: Duration::ZERO,
            syscalls: vec![
                SyscallRow {
                    name: "sendfile".into(),
                    seconds: None,
                    calls: c - c / 2,
                    errors: 0,
                },
                SyscallRow {
                    name: "read".into(),
                    seconds: None,
                    calls: c / 2,
                    errors: 3,
                },
            ],
            total_calls: c,
            total_errors: 3,
            total_seconds: None,
            pids: vec![1],
            notes: Vec::new(),
        });
        Measurement {
            run,
            profile,
            profile_error: None,
            server_cpu: server_cpu.map(Duration::from_secs_f64),
            client_cpu: client_cpu.map(Duration::from_secs_f64),
            window: Duration::from_secs(2),
        }
    }

    fn row(m: &Measurement) -> ResultRow {
        ResultRow::new(
            Experiment::Sizes,
            PeerKind::Nginx,
            bench::HttpMode::KeepAlive,
            Some(1024),
            m,
        )
    }

    #[test]
    fn rates_and_per_request_figures_come_from_the_window() {
        let r = row(&measurement(
            1000,
            2_000_000,
            Some(0.5),
            Some(0.5),
            Some(3000),
        ));
        assert_eq!(r.requests, 1000);
        assert_eq!(r.requests_per_s, 500.0);
        assert_eq!(r.bytes_per_s, 1_000_000.0);
        assert_eq!(r.server_cpu_us_per_request, Some(500.0));
        assert_eq!(r.syscalls_per_request, Some(3.0));
        assert_eq!(r.profile_method.as_deref(), Some("perf"));
        let rows = r.syscalls.expect("rows");
        assert_eq!(rows.iter().map(|s| s.calls).sum::<u64>(), 3000);
        assert_eq!(rows[1].errors, 3);
        assert!(!r.client_limited);
    }

    #[test]
    fn client_limited_only_when_the_client_core_is_saturated_and_the_server_is_not() {
        let limited =
            |client, server| row(&measurement(10, 10, client, server, None)).client_limited;
        assert!(limited(Some(1.9), Some(1.0)));
        assert!(
            !limited(Some(1.9), Some(1.9)),
            "both saturated: the server's limit too"
        );
        assert!(!limited(Some(1.0), Some(1.0)));
        assert!(!limited(None, Some(1.0)));
        assert!(!limited(Some(1.9), None));
    }

    #[test]
    fn without_requests_or_profile_the_per_request_figures_are_null() {
        let r = row(&measurement(0, 0, Some(0.1), Some(0.1), Some(10)));
        assert_eq!(r.syscalls_per_request, None);
        assert_eq!(r.server_cpu_us_per_request, None);
        let r = row(&measurement(10, 10, None, None, None));
        assert_eq!(r.syscalls_per_request, None);
        assert_eq!(r.profile_method, None);
        assert_eq!(r.syscalls, None);
    }

    #[test]
    fn the_json_has_exactly_the_documented_keys() {
        let report = LabReport {
            experiment: Experiment::All,
            started_at: SystemTime::UNIX_EPOCH,
            duration: Duration::from_secs(2),
            servers: vec![ServerStatus {
                name: "lighttpd".into(),
                version: None,
                status: Status::Missing,
                note: Some("install: apt-get install -y lighttpd".into()),
                kind: PeerKind::Lighttpd,
            }],
            results: vec![row(&measurement(10, 10, None, Some(0.1), Some(20)))],
            interrupted: false,
        };
        let json = report.to_json();
        let keys = |v: &Value| {
            let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
            k.sort();
            k
        };
        assert_eq!(
            keys(&json),
            [
                "environment",
                "experiment",
                "flint_version",
                "kind",
                "options",
                "results",
                "schema_version",
                "servers",
                "started_at"
            ]
        );
        assert_eq!(json["experiment"], "all");
        assert_eq!(json["started_at"], "1970-01-01T00:00:00.000Z");
        assert_eq!(keys(&json["options"]), ["duration_s", "servers"]);
        assert_eq!(
            json["servers"][0],
            json!({"name": "lighttpd", "version": null, "status": "missing",
                   "note": "install: apt-get install -y lighttpd"})
        );
        let result = &json["results"][0];
        assert_eq!(
            keys(result),
            [
                "bytes_per_s",
                "client_limited",
                "duration_s",
                "errors",
                "experiment",
                "interrupted",
                "mode",
                "profile_method",
                "requests",
                "requests_per_s",
                "server",
                "server_cpu_us_per_request",
                "size_bytes",
                "syscalls",
                "syscalls_per_request",
            ]
        );
        assert_eq!(result["mode"], "persistent");
        assert_eq!(
            result["syscalls"][0],
            json!({"name": "sendfile", "calls": 10, "errors": 0, "seconds": null})
        );
    }

    #[test]
    fn all_runs_122_measurements_with_every_server() {
        let opts = LabOptions::new(None);
        assert_eq!(opts.runs(Experiment::Syscalls), 15);
        assert_eq!(opts.runs(Experiment::Sizes), 60);
        assert_eq!(opts.runs(Experiment::Digest), 3);
        // Four servers: two keys x full and resumed handshakes, keep-alive, six sizes.
        assert_eq!(opts.tls_sizes().len(), 6);
        assert_eq!(opts.runs(Experiment::Tls), 4 * (2 * 2 + 1 + 6));
        assert_eq!(opts.runs(Experiment::All), 78 + 44);
    }
}
