//! The dynamic experiment on the servers beyond flint serve, nginx and Apache event, end to end
//! and short (a count of requests per measurement, so that a program started per request on a
//! busy machine still gets each one its requests): each deployment the server has a gateway for
//! is verified, then measured with its CPU and its system calls per request by tier (a traced
//! run of its own, perf); a deployment it has none for is a row that says so, never measured.
//! Needs root (the tiers' cgroups, perf) and the installed peers (scripts/install-peers.sh).

use crate::common;

use common::run_lab;
use lab_experiments::{Deployment, Experiment, LabOptions, ResultRow, Status};
use lab_peers::PeerKind;
use lab_profile::Method;
use std::time::Duration;
use test_support::flint_bin;

/// Requests in each run, the untraced one and the traced one.
const PAGES: u64 = 24;

fn options(server: PeerKind, deployments: &[Deployment]) -> LabOptions {
    let mut opts = LabOptions::new(Some(flint_bin()));
    let app = opts.app_bin.clone().expect("flint-app beside flint");
    assert!(
        app.is_file(),
        "{} not found: cargo build -p lab-app",
        app.display()
    );
    opts.warmup = Duration::ZERO;
    opts.pages = Some(PAGES);
    opts.servers = vec![server];
    opts.tests = vec!["plaintext".into(), "db".into()];
    opts.deployments = deployments.to_vec();
    opts.profile = true;
    opts.method = Some(Method::Perf);
    opts
}

fn tier<'a>(r: &'a ResultRow, name: &str) -> Option<&'a results::TierCpu> {
    (r.tiers.iter().flatten()).find(|t| t.tier == name)
}

/// A measured row: verified, every request answered, and each tier with CPU and system calls
/// per request (the web tier alone for the static file).
fn check_measured(r: &ResultRow, text: &str) {
    let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
    assert!(
        r.unavailable.is_none(),
        "{what}: {:?}\n{text}",
        r.unavailable
    );
    assert!(r.requests >= PAGES && r.errors == 0, "{what}: {r:?}");
    assert_eq!(r.traced_requests, Some(PAGES), "{what}\n{text}");
    let names: Vec<&str> = (r.tiers.iter().flatten())
        .map(|t| t.tier.as_str())
        .collect();
    let gateway = r.deployment.as_deref() != Some("static");
    assert_eq!(
        names,
        if gateway {
            &["web", "app"][..]
        } else {
            &["web"][..]
        },
        "{what}"
    );
    for t in r.tiers.iter().flatten() {
        // A tier's CPU may read 0 on a quiet machine: a few dozen cheap requests can take less
        // than the clock tick a process's CPU time is counted in. Its system calls are counted
        // one by one, so every tier must show some.
        assert!(
            t.cpu_us_per_request.is_finite() && t.cpu_us_per_request >= 0.0,
            "{what}: {t:?}"
        );
        let calls = t.syscalls_per_request.unwrap_or(0.0);
        assert!(
            calls > 0.0,
            "{what}: {} tier: no system calls\n{text}",
            t.tier
        );
    }
}

fn row<'a>(rows: &'a [ResultRow], deployment: &str, test: &str) -> &'a ResultRow {
    (rows.iter())
        .find(|r| {
            r.deployment.as_deref() == Some(deployment) && r.test_type.as_deref() == Some(test)
        })
        .unwrap_or_else(|| panic!("no {deployment} {test} row"))
}

/// The application tier's CPU per request of `deployment`'s `test`.
fn app_cpu(rows: &[ResultRow], deployment: &str, test: &str) -> f64 {
    tier(row(rows, deployment, test), "app")
        .map(|t| t.cpu_us_per_request)
        .unwrap()
}

/// Connections the application tier accepted per request of `deployment`'s `test`, in the
/// traced run: about 1 when the gateway opens a connection per request, about 0 when it keeps
/// its connections from the run before (at most one per client, 8, against 24 requests).
fn app_accepts_per_request(rows: &[ResultRow], deployment: &str, test: &str) -> f64 {
    let r = row(rows, deployment, test);
    let app = tier(r, "app").and_then(|t| t.syscalls.as_ref());
    let calls = app.unwrap_or_else(|| panic!("{deployment} {test}: no app tier syscalls"));
    let accepted: u64 = (calls.iter())
        .filter(|c| c.name == "accept" || c.name == "accept4")
        .map(|c| c.calls - c.errors)
        .sum();
    accepted as f64 / r.traced_requests.expect("a traced run") as f64
}

/// Asserts that `deployments` keep their connections to the application (`kept`) or open one
/// per request.
fn assert_connections(rows: &[ResultRow], deployments: &[&str], kept: bool) {
    for deployment in deployments {
        for test in ["plaintext", "db"] {
            let accepts = app_accepts_per_request(rows, deployment, test);
            let ok = if kept { accepts < 0.5 } else { accepts > 0.75 };
            assert!(
                ok,
                "{deployment} {test}: {accepts} accepts a request (kept: {kept})"
            );
        }
    }
}

/// lighttpd runs every deployment but mod_php (an Apache module): mod_cgi (flint-app and php-cgi
/// as programs, its own children, so the web tier is its process alone), mod_fastcgi
/// (flint-app's responder and php-fpm) and mod_proxy (flint-app http).
#[test]
fn lighttpd_runs_every_deployment_verified_and_measured_by_tier() {
    let all: Vec<Deployment> = (Deployment::ALL.into_iter())
        .filter(|d| *d != Deployment::ModPhp)
        .collect();
    let opts = options(PeerKind::Lighttpd, &all);
    assert_eq!(opts.runs(Experiment::Dynamic), 1 + 5 * 2);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 11, "{text}\n{progress}");
    for r in &report.results {
        assert_eq!(r.server, "lighttpd");
        check_measured(r, &text);
    }
    for test in ["plaintext", "db"] {
        // A program started per request against a persistent application.
        let (cgi, fastcgi) = (
            app_cpu(&report.results, "cgi", test),
            app_cpu(&report.results, "fastcgi", test),
        );
        assert!(cgi > fastcgi, "{test}: cgi {cgi} µs, fastcgi {fastcgi} µs");
        let (php_cgi, fpm) = (
            app_cpu(&report.results, "php-cgi", test),
            app_cpu(&report.results, "php-fpm", test),
        );
        assert!(
            php_cgi > fpm,
            "{test}: php-cgi {php_cgi} µs, php-fpm {fpm} µs"
        );
    }
    assert!(text.contains("system calls per request by tier"), "{text}");
    // mod_fastcgi never asks to keep a connection, mod_proxy sends `Connection: close`.
    assert_connections(&report.results, &["fastcgi", "proxy", "php-fpm"], false);
}

/// Apache event's PHP: php-fpm through mod_proxy_fcgi (a handler on the script, connections
/// reused) and php-cgi through mod_cgid, the programs run as Apache's user when the lab is
/// root; beside them flint-app's responder, whose connections are reused too.
#[test]
fn apache_event_runs_php_fpm_and_php_cgi_verified_and_measured_by_tier() {
    let opts = options(
        PeerKind::ApacheEvent,
        &[Deployment::PhpFpm, Deployment::PhpCgi, Deployment::FastCgi],
    );
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 6, "{text}\n{progress}");
    for r in &report.results {
        assert_eq!(r.server, "apache-event");
        check_measured(r, &text);
    }
    assert_connections(&report.results, &["fastcgi", "php-fpm"], true);
    for test in ["plaintext", "db"] {
        let (php_cgi, fpm) = (
            app_cpu(&report.results, "php-cgi", test),
            app_cpu(&report.results, "php-fpm", test),
        );
        assert!(
            php_cgi > fpm,
            "{test}: php-cgi {php_cgi} µs, php-fpm {fpm} µs"
        );
    }
}

/// A server with FastCGI and proxy gateways but no CGI: each of its deployments verified and
/// measured by tier, its CGI rows saying why it has none (`no_cgi`), never measured.
fn fastcgi_php_fpm_and_proxy_measured_cgi_left_out(kind: PeerKind, no_cgi: &str) -> Vec<ResultRow> {
    let opts = options(
        kind,
        &[
            Deployment::Static,
            Deployment::Cgi,
            Deployment::FastCgi,
            Deployment::Proxy,
            Deployment::PhpFpm,
        ],
    );
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 9, "{text}\n{progress}");
    for r in &report.results {
        assert_eq!(r.server, kind.name());
        if r.deployment.as_deref() == Some("cgi") {
            let why = r.unavailable.as_deref().unwrap_or_default();
            let expected = format!("{kind} has no cgi deployment");
            assert!(why.contains(&expected) && why.contains(no_cgi), "{why}");
            assert_eq!((r.requests, r.tiers.as_ref()), (0, None));
            continue;
        }
        check_measured(r, &text);
    }
    for deployment in ["fastcgi", "proxy", "php-fpm"] {
        assert!(
            (text.lines())
                .any(|l| l.starts_with(kind.name()) && l.contains(deployment) && l.contains("db")),
            "{text}"
        );
    }
    report.results
}

/// h2o: `fastcgi.connect` (flint-app's responder and php-fpm, kept alive) and
/// `proxy.reverse.url`, serving as `nobody` when the lab is root.
#[test]
fn h2o_runs_fastcgi_php_fpm_and_proxy_and_says_it_has_no_cgi() {
    let rows =
        fastcgi_php_fpm_and_proxy_measured_cgi_left_out(PeerKind::H2o, "h2o runs no CGI program");
    // `fastcgi.timeout.keepalive` and the proxy's keep-alive: no connection per request.
    assert_connections(&rows, &["fastcgi", "proxy", "php-fpm"], true);
}

/// Caddy: its FastCGI transport to flint-app's responder, `php_fastcgi` to php-fpm and
/// `reverse_proxy`, with no admin endpoint and no automatic HTTPS.
#[test]
fn caddy_runs_fastcgi_php_fpm_and_proxy_and_says_it_has_no_cgi() {
    fastcgi_php_fpm_and_proxy_measured_cgi_left_out(PeerKind::Caddy, "Caddy runs no CGI program");
}

/// Apache prefork: mod_proxy_fcgi (flint-app's responder, php-fpm), mod_proxy_http, its whole
/// pool of children forked before the first measurement; its CGI is left out (mod_cgi forks the
/// programs inside Apache's own cgroup), measured on the event MPM instead. Each child keeps its
/// connection to php-fpm (`enablereuse=on`, php-fpm's pool a child for each of Apache's), as
/// the event MPM's threads do: the two MPMs differ by the MPM alone.
#[test]
fn apache_prefork_runs_fastcgi_php_fpm_and_proxy_and_says_why_not_cgi() {
    let rows = fastcgi_php_fpm_and_proxy_measured_cgi_left_out(
        PeerKind::ApachePrefork,
        "measured on the event MPM",
    );
    assert_connections(&rows, &["fastcgi", "php-fpm"], true);
}
