//! What a lab run produced: the servers and their status, one row per measurement, and the
//! document [`LabReport::record`] builds ([`results::LabResult`], docs/lab.md).
//!
//! The HTML report reads that document through the same type, so a field renamed here is
//! renamed for the reader too.

use super::measure::Measurement;
use super::netpath::Delay;
use super::page::PageMode;
use super::Experiment;
use ::results::{LabOptionsRecord, LabResult, LabRow, LabServer, TierCpu, WireCounts};
use lab_peers::PeerKind;
use std::ops::{Deref, DerefMut};
use std::time::{Duration, SystemTime};

pub use ::results::{PeerStatus as Status, SyscallCount};

/// One server of the run: the JSON's `servers[]` element, and which peer it is.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerStatus {
    /// The server's name as the command line gives it (`nginx`, `apache-prefork`).
    pub name: String,
    /// `name/version` as the server prints it; `None` when it was not found.
    pub version: Option<String>,
    /// Whether it ran, was missing or failed.
    pub status: Status,
    /// How to install a missing server; why a failed one failed.
    pub note: Option<String>,
    /// Which peer it is, for the experiments that look it up again.
    pub kind: PeerKind,
}

/// One measurement of one server: the JSON's `results[]` element ([`LabRow`]), built only from
/// a `Measurement` so its rates and per-request figures are worked out in one place.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultRow(LabRow);

impl Deref for ResultRow {
    type Target = LabRow;
    fn deref(&self) -> &LabRow {
        &self.0
    }
}

/// An experiment adds its own figures (a TLS row its certificate and handshakes) after
/// `ResultRow::new`.
impl DerefMut for ResultRow {
    fn deref_mut(&mut self) -> &mut LabRow {
        &mut self.0
    }
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
        let interrupted = m.run.interrupted;
        // Not one response in the window (every request failed or none ended), or more than
        // `FAILED_SHARE` of its requests failed (a database gone, a gateway answering 500): the
        // row has no figures to show, only what was counted, and says why as the rows a server
        // cannot run do; its window (`duration_s` above 0) is what tells it from those
        // ([`LabRow::measured_nothing`]). Fast error responses would read as a server faster
        // and cheaper than a healthy one.
        let nothing = if interrupted {
            None
        } else if s.requests == 0 {
            Some(nothing_measured(duration_s, s))
        } else {
            failed_in_window(s)
        };
        let figures = nothing.is_none();
        let per_request = |x: f64| (figures && s.requests > 0).then(|| x / s.requests as f64);
        let window = m.window.as_secs_f64();
        let busy = |cpu: Option<Duration>| cpu.map(|c| c.as_secs_f64() / window.max(1e-9));
        // Without figures there is none for the client to have limited.
        let client_limited = !interrupted
            && figures
            && matches!(
                (busy(m.client_cpu), busy(m.server_cpu)),
                (Some(c), Some(sv)) if c >= SATURATED && sv < SATURATED
            );
        ResultRow(LabRow {
            experiment: experiment.name().to_owned(),
            server: server.name().to_owned(),
            mode,
            size_bytes,
            unavailable: nothing,
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
            ..LabRow::default()
        })
    }

    /// A row of the page experiment: [`ResultRow::new`]'s figures and the page's own (mode,
    /// TLS, round trip, page time, connections and the wire per page).
    pub(crate) fn page(
        server: PeerKind,
        mode: PageMode,
        tls: bool,
        rtt: Option<(Duration, Delay)>,
        m: &Measurement,
    ) -> Self {
        let mut row = ResultRow::new(Experiment::Syscalls, server, mode.http(), None, m);
        let s = &m.run.stats;
        let pages = s.pages_done;
        let page = s.page.summary();
        row.page_mode = Some(mode.name().to_owned());
        row.tls = Some(tls);
        if let Some((rtt, delay)) = rtt {
            row.rtt_ms = Some(rtt.as_secs_f64() * 1e3);
            row.delay = Some(delay.name().to_owned());
        }
        if pages > 0 && row.has_figures() {
            row.page_ms_p50 = Some(page.p50);
            row.page_ms_p99 = Some(page.p99);
            row.connections_per_page = Some(s.connects as f64 / pages as f64);
        }
        if s.connect.count() > 0 {
            row.connect_ms_p50 = Some(s.connect.summary().p50);
        }
        row.wire = m.wire.filter(|_| pages > 0 && row.has_figures()).map(|w| {
            let per = |n: u64| n as f64 / pages as f64;
            WireCounts {
                packets_to_server: per(w.rx_packets),
                packets_to_client: per(w.tx_packets),
                bytes_to_server: per(w.rx_bytes),
                bytes_to_client: per(w.tx_bytes),
                pages,
            }
        });
        row
    }

    /// A row for a way `server` (or the client) cannot fetch the page: no figures, and why.
    pub(crate) fn unavailable(
        server: PeerKind,
        mode: PageMode,
        tls: bool,
        rtt: Option<(Duration, Delay)>,
        why: &str,
    ) -> Self {
        ResultRow(LabRow {
            experiment: Experiment::Syscalls.name().to_owned(),
            server: server.name().to_owned(),
            mode: mode.http(),
            page_mode: Some(mode.name().to_owned()),
            tls: Some(tls),
            rtt_ms: rtt.map(|(r, _)| r.as_secs_f64() * 1e3),
            delay: rtt.map(|(_, d)| d.name().to_owned()),
            unavailable: Some(why.to_owned()),
            ..LabRow::default()
        })
    }

    /// The dynamic experiment's own figures on a row of [`ResultRow::new`]: the deployment and
    /// test type, the response time, and each tier's CPU per request (`tiers`, named by
    /// `names`: the web tier, then the application's when the deployment has one, then the
    /// database server's when `database` is one; `web+app` when the web server runs the
    /// application itself).
    pub(crate) fn set_dynamic(
        &mut self,
        deployment: &str,
        test: &str,
        database: crate::Database,
        m: &Measurement,
        tiers: Option<&[Duration]>,
        names: &[&str],
    ) {
        let s = &m.run.stats;
        self.deployment = Some(deployment.to_owned());
        self.test_type = Some(test.to_owned());
        self.database = (deployment != "static").then(|| database.name().to_owned());
        let figures = self.has_figures();
        if s.response.count() > 0 && figures {
            let r = s.response.summary();
            self.latency_ms_p50 = Some(r.p50);
            self.latency_ms_p99 = Some(r.p99);
        }
        self.tiers = tiers.filter(|_| s.requests > 0 && figures).map(|t| {
            (names.iter().zip(t))
                .map(|(name, cpu)| TierCpu {
                    tier: (*name).to_owned(),
                    cpu_us_per_request: cpu.as_secs_f64() * 1e6 / s.requests as f64,
                    ..TierCpu::default()
                })
                .collect()
        });
    }

    /// A dynamic deployment that failed the verifier: no figures, and why.
    pub(crate) fn dynamic_failed(
        server: PeerKind,
        deployment: &str,
        test: &str,
        database: crate::Database,
        why: String,
    ) -> Self {
        ResultRow(LabRow {
            experiment: Experiment::Dynamic.name().to_owned(),
            server: server.name().to_owned(),
            mode: bench::HttpMode::KeepAlive,
            deployment: Some(deployment.to_owned()),
            test_type: Some(test.to_owned()),
            database: Some(database.name().to_owned()),
            unavailable: Some(why),
            ..LabRow::default()
        })
    }

    /// Which measurement of its server the row is, in a few words: `sizes 1024 B`, `dynamic
    /// fastcgi db`, `tls ecdsa-p256 full`, `syscalls h2`.
    pub fn what(&self) -> String {
        let mut words = vec![self.experiment.clone()];
        words.extend(self.certificate.clone());
        words.extend(self.handshake.clone());
        words.extend(self.page_mode.clone());
        words.extend(self.tls.filter(|&t| t).map(|_| "tls".to_owned()));
        words.extend(self.deployment.clone());
        words.extend(self.test_type.clone());
        words.extend(self.size_bytes.map(|b| format!("{b} B")));
        words.join(" ")
    }

    /// The row as the JSON writes it.
    pub fn record(&self) -> &LabRow {
        &self.0
    }

    /// Whether the row has figures: a measurement with at least one response, not failed.
    pub fn measured(&self) -> bool {
        self.requests > 0 && self.has_figures()
    }
}

/// What a row that measured nothing says instead of its figures (the JSON's `unavailable`),
/// the window in the unit that shows it (`1.0 ms`, not `0.00 s`; `1 µs`).
fn nothing_measured(duration_s: f64, s: &bench::Stats) -> String {
    let errors = s.errors.total();
    let window = if duration_s < 1e-3 {
        format!("{:.0} µs", duration_s * 1e6)
    } else if duration_s < 1.0 {
        format!("{:.1} ms", duration_s * 1e3)
    } else {
        format!("{duration_s:.2} s")
    };
    format!(
        "measured nothing: not one response in {window} ({errors} error{})",
        if errors == 1 { "" } else { "s" }
    )
}

/// The share of a window's requests that may fail with the row still a measurement: above it
/// (k6's usual threshold, `http_req_failed: rate<0.01`) the figures are as much the failures'
/// as the server's.
pub const FAILED_SHARE: f64 = 0.01;

/// Why a window whose requests failed beyond [`FAILED_SHARE`] is no measurement (the JSON's
/// `unavailable`): how many of its requests failed, and of which kinds, most first. A request
/// is a response (error responses, a 500, counted among `requests`) or a failure without one (a
/// reset, a timeout).
fn failed_in_window(s: &bench::Stats) -> Option<String> {
    let errors = s.errors.total();
    let attempts = s.attempts();
    if errors == 0 || (errors as f64) <= FAILED_SHARE * attempts as f64 {
        return None;
    }
    let mut kinds: Vec<(u64, &str)> = (bench::stats::ErrorKind::ALL.iter())
        .map(|&k| (s.errors.get(k), k.name()))
        .filter(|&(n, _)| n > 0)
        .collect();
    kinds.sort_by_key(|&(n, _)| std::cmp::Reverse(n));
    let kinds: Vec<String> = kinds.iter().map(|(n, k)| format!("{k} {n}")).collect();
    Some(format!(
        "failed in the window: {errors} of {attempts} requests failed ({:.0}%: {})",
        errors as f64 * 100.0 / attempts as f64,
        kinds.join(", ")
    ))
}

/// Everything a lab run produced.
#[derive(Debug, Clone)]
pub struct LabReport {
    /// The experiment asked for (`all` for every one).
    pub experiment: Experiment,
    /// When the run began, before the first server started.
    pub started_at: SystemTime,
    /// The options that shaped the run ([`crate::LabOptions::record`]).
    pub options: LabOptionsRecord,
    /// Every server asked for, found or not.
    pub servers: Vec<ServerStatus>,
    /// Every row of every experiment, in the order they were measured.
    pub results: Vec<ResultRow>,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
}

/// The JSON's `schema_version`: what its readers (the HTML report) check before they read it.
pub const SCHEMA_VERSION: u64 = 1;

impl LabReport {
    /// The document `--json` writes and the HTML report reads (docs/lab.md).
    pub fn record(&self) -> LabResult {
        LabResult {
            kind: ::results::Kind::Lab,
            schema_version: SCHEMA_VERSION,
            experiment: self.experiment.name().to_owned(),
            flint_version: env!("CARGO_PKG_VERSION").to_owned(),
            started_at: bench::report::rfc3339(self.started_at),
            environment: bench::report::environment(),
            options: self.options.clone(),
            servers: self
                .servers
                .iter()
                .map(|s| LabServer {
                    name: s.name.clone(),
                    version: s.version.clone(),
                    status: s.status,
                    note: s.note.clone(),
                })
                .collect(),
            results: self.results.iter().map(|r| r.record().clone()).collect(),
            interrupted: self.interrupted,
        }
    }

    /// [`LabReport::record`] as JSON.
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self.record()).expect("a lab result always serializes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{docroot, LabOptions};
    use lab_profile::{Method, Profile, SyscallRow};
    use serde_json::{json, Value};

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
            wire: None,
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
        let rows = r.syscalls.as_ref().expect("rows");
        assert_eq!(rows.iter().map(|s| s.calls).sum::<u64>(), 3000);
        assert_eq!(rows[1].errors, 3);
        assert!(!r.client_limited);
    }

    #[test]
    fn a_measurement_without_one_response_says_it_measured_nothing() {
        // The client's core saturated, the server's not: still no figure it limited.
        let empty = row(&measurement(0, 0, Some(1.9), Some(0.5), None));
        assert!(!empty.measured() && empty.measured_nothing());
        assert!(!empty.client_limited);
        let why = empty.unavailable.as_deref().expect("marked");
        assert!(why.starts_with("measured nothing"), "{why}");
        assert!(why.contains("not one response in 2.00 s"), "{why}");
        assert_eq!(empty.server_cpu_us_per_request, None);
        // A window under a second in milliseconds, not `0.00 s`.
        let mut short = measurement(0, 0, None, None, None);
        short.run.duration = Duration::from_millis(1);
        let why = row(&short).unavailable.clone().expect("marked");
        assert!(why.contains("not one response in 1.0 ms"), "{why}");
        // A row that could not run is not one that measured nothing.
        let cannot = ResultRow::unavailable(PeerKind::Nginx, PageMode::H2, false, None, "no h2");
        assert!(!cannot.measured_nothing() && !cannot.has_figures());
        let json = serde_json::to_value(empty.record()).unwrap();
        assert_eq!(json["requests"], 0);
        assert!(json["unavailable"]
            .as_str()
            .unwrap()
            .contains("measured nothing"));
        // One response is a measurement.
        let one = row(&measurement(1, 10, Some(0.5), Some(0.5), None));
        assert!(one.measured() && one.unavailable.is_none());
    }

    #[test]
    fn a_window_whose_requests_mostly_failed_has_no_figures_and_says_why() {
        use bench::stats::ErrorKind;
        // 830 of 1000 responses were 500s (a database gone mid-window): fast errors, which
        // would read as a server faster and cheaper than a healthy one.
        let mut m = measurement(1000, 200_000, Some(1.9), Some(0.5), Some(3000));
        for _ in 0..830 {
            m.run.stats.errors.add(ErrorKind::Status5xx);
        }
        let failed = row(&m);
        assert!(
            !failed.measured() && failed.measured_nothing(),
            "{failed:?}"
        );
        assert_eq!(
            failed.unavailable.as_deref(),
            Some("failed in the window: 830 of 1000 requests failed (83%: status_5xx 830)")
        );
        assert_eq!(failed.server_cpu_us_per_request, None);
        assert_eq!(failed.syscalls_per_request, None);
        assert!(!failed.client_limited);
        // What was counted stays counted.
        assert_eq!((failed.requests, failed.errors), (1000, 830));
        // Failures without a response count among the requests tried: 50 resets beside 100
        // responses are a third.
        let mut m = measurement(100, 20_000, None, Some(0.5), None);
        for _ in 0..50 {
            m.run.stats.errors.add(ErrorKind::Reset);
        }
        let why = row(&m).unavailable.clone().expect("failed");
        assert!(
            why.contains("50 of 150 requests failed (33%: reset 50)"),
            "{why}"
        );
        // A stray failure is no reason to throw a window away: 1% keeps its figures.
        let mut m = measurement(1000, 200_000, None, Some(0.5), None);
        for _ in 0..10 {
            m.run.stats.errors.add(ErrorKind::Status5xx);
        }
        let kept = row(&m);
        assert!(kept.measured() && kept.unavailable.is_none(), "{kept:?}");
        assert_eq!(kept.server_cpu_us_per_request, Some(500.0));
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
            options: LabOptions::new(None).record(Experiment::All, None),
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
        let back: LabResult = serde_json::from_value(json.clone()).expect("reads back");
        assert_eq!(back, report.record(), "the reader's type is the writer's");
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
                "interrupted",
                "kind",
                "options",
                "results",
                "schema_version",
                "servers",
                "started_at"
            ]
        );
        assert_eq!(json["experiment"], "all");
        assert_eq!(json["interrupted"], false);
        assert_eq!(json["started_at"], "1970-01-01T00:00:00.000Z");
        assert_eq!(
            keys(&json["options"]),
            [
                "client_cpu",
                "db",
                "deployments",
                "duration_s",
                "modes",
                "pages",
                "profile",
                "rtt_ms",
                "server_cpu",
                "servers",
                "tests",
                "warmup_s"
            ]
        );
        // Profiling asked for and no tracer found; with --no-profile, off.
        assert_eq!(json["options"]["profile"], "unavailable");
        assert_eq!(json["options"]["db"], "sqlite");
        assert_eq!(
            json["options"]["deployments"],
            serde_json::json!(["static", "cgi", "fastcgi"])
        );
        let mut off = LabOptions::new(None);
        off.profile = false;
        assert_eq!(off.record(Experiment::All, None).profile, "off");
        assert_eq!(
            off.record(Experiment::All, Some(Method::Perf)).profile,
            "perf"
        );
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
    fn all_runs_247_measurements_with_every_server() {
        let opts = LabOptions::new(None);
        // Six ways over cleartext and TLS for five servers, h3 over TLS for flint; Apache
        // prefork over cleartext only, and without h2; Caddy without h2, h3 over TLS.
        assert_eq!(opts.runs(Experiment::Syscalls), 6 * 5 * 2 + 1 + 5 + (5 + 6));
        let two = LabOptions {
            page_modes: vec![crate::PageMode::Persistent, crate::PageMode::H2],
            rtts: vec![Duration::ZERO, Duration::from_millis(10)],
            ..LabOptions::new(None)
        };
        // Per round trip: both ways twice for five servers, prefork's persistent, Caddy's
        // persistent over cleartext and TLS.
        assert_eq!(two.runs(Experiment::Syscalls), 2 * (5 * 2 * 2 + 1 + 2));
        let h3 = LabOptions {
            page_modes: vec![crate::PageMode::H3],
            ..LabOptions::new(None)
        };
        // Over TLS, from the two servers that speak HTTP/3.
        assert_eq!(h3.runs(Experiment::Syscalls), 2);
        assert_eq!(opts.runs(Experiment::Sizes), 60);
        assert_eq!(opts.runs(Experiment::Digest), 3);
        // Four servers: two keys x full and resumed handshakes, keep-alive, six sizes.
        assert_eq!(opts.tls_sizes().len(), 6);
        assert_eq!(opts.runs(Experiment::Tls), 4 * (2 * 2 + 1 + 6));
        // Every server: the static file, then CGI and FastCGI for four test types (a server
        // without CGI has a row saying so for each).
        assert_eq!(opts.runs(Experiment::Dynamic), 7 * (1 + 2 * 4));
        assert_eq!(opts.runs(Experiment::All), 77 + 60 + 3 + 44 + 63);
    }
}
