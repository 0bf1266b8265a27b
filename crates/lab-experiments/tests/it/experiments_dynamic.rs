//! The dynamic experiment end to end, short: flint serve and nginx, each deployment, two test
//! types, a fraction of a second each. Every deployment passes the verifier and is measured; the
//! tiers' CPU says what a program per request costs against a persistent application.

use crate::common;

use common::{num, run_lab};
use lab_experiments::{Database, Deployment, Experiment, LabOptions, ResultRow, Status};
use lab_peers::PeerKind;
use std::time::Duration;
use test_support::flint_bin;

fn tier(r: &ResultRow, name: &str) -> Option<f64> {
    (r.tiers.iter().flatten())
        .find(|t| t.tier == name)
        .map(|t| t.cpu_us_per_request)
}

#[test]
fn dynamic_end_to_end_verifies_then_measures_each_tier_on_flint_and_nginx() {
    let mut opts = LabOptions::new(Some(flint_bin()));
    let app = opts.app_bin.clone().expect("flint-app beside flint");
    assert!(
        app.is_file(),
        "{} not found: cargo build -p lab-app",
        app.display()
    );
    opts.duration = Duration::from_millis(400);
    opts.warmup = Duration::from_millis(100);
    opts.servers = vec![PeerKind::Flint, PeerKind::Nginx];
    opts.tests = vec!["plaintext".into(), "db".into()];
    opts.profile = false;
    assert_eq!(opts.runs(Experiment::Dynamic), 2 * (1 + 2 * 2));
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert!(text.contains("dynamic: results"), "{text}");
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 10, "{text}\n{progress}");
    for r in &rows {
        let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
        assert_eq!(r.experiment, "dynamic");
        assert!(r.unavailable.is_none(), "{what}: {:?}", r.unavailable);
        assert!(r.requests > 0 && r.errors == 0, "{what}: {r:?}");
        assert!(
            r.latency_ms_p50.unwrap() <= r.latency_ms_p99.unwrap(),
            "{what}"
        );
        let tiers = r.tiers.as_ref().expect("tiers");
        let gateway = r.deployment.as_deref() != Some("static");
        assert_eq!(
            tiers.len(),
            if gateway { 2 } else { 1 },
            "{what}: {tiers:?}"
        );
        assert!(tier(r, "web").unwrap() > 0.0, "{what}: {tiers:?}");
        let total: f64 = tiers.iter().map(|t| t.cpu_us_per_request).sum();
        let cpu = r.server_cpu_us_per_request.unwrap();
        assert!((total - cpu).abs() <= 1e-6 * cpu.max(1.0), "{what}");
    }
    let find = |server: &str, deployment: &str, test: &str| {
        *rows
            .iter()
            .find(|r| {
                r.server == server
                    && r.deployment.as_deref() == Some(deployment)
                    && r.test_type.as_deref() == Some(test)
            })
            .unwrap_or_else(|| panic!("no row {server} {deployment} {test}"))
    };
    for server in ["flint", "nginx"] {
        for test in ["plaintext", "db"] {
            // A program started per request (fork, exec, the database opened) costs the
            // application tier more than a persistent one's request.
            let cgi = tier(find(server, "cgi", test), "app").unwrap();
            let fastcgi = tier(find(server, "fastcgi", test), "app").unwrap();
            assert!(
                cgi > fastcgi,
                "{server} {test}: cgi {cgi} µs, fastcgi {fastcgi} µs"
            );
        }
        assert_eq!(
            find(server, "cgi", "db").database.as_deref(),
            Some("sqlite")
        );
    }
    let json = report.to_json();
    let row = &json["results"][1];
    assert_eq!(row["deployment"], "cgi");
    assert_eq!(row["tiers"][0]["tier"], "web");
    assert!(num(&row["tiers"][1], "cpu_us_per_request") > 0.0);
}

/// A deployment that answers wrongly is shown failed, never measured: the CGI program here is a
/// script that answers `queries=20` with one row (the FastCGI deployment is the real
/// application, and the static file is a file: both are measured).
#[test]
fn a_deployment_failing_the_verifier_is_shown_failed_not_measured() {
    let real = flint_bin().with_file_name("flint-app");
    assert!(
        real.is_file(),
        "{} not found: cargo build -p lab-app",
        real.display()
    );
    let dir = tempfile::tempdir().unwrap();
    let app = dir.path().join("flint-app");
    let script = format!(
        "#!/bin/sh\n\
         if [ -n \"$GATEWAY_INTERFACE\" ]; then\n\
         printf 'Status: 200\\r\\nContent-Type: application/json\\r\\n\\r\\n[{{\"id\":1,\"randomNumber\":1}}]'\n\
         exit 0\n\
         fi\n\
         exec {} \"$@\"\n",
        real.display()
    );
    std::fs::write(&app, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&app, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.app_bin = Some(app);
    opts.duration = Duration::from_millis(300);
    opts.warmup = Duration::from_millis(100);
    opts.servers = vec![PeerKind::Flint];
    opts.tests = vec!["queries".into()];
    opts.profile = false;
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    let row = |deployment: &str| {
        (report.results.iter())
            .find(|r| r.deployment.as_deref() == Some(deployment))
            .unwrap_or_else(|| panic!("no {deployment} row: {text}\n{progress}"))
    };
    let cgi = row("cgi");
    assert_eq!(
        cgi.unavailable.as_deref(),
        Some("failed the verifier: 1 rows where 20 were expected; 1 rows where 500 were expected"),
        "{text}"
    );
    assert_eq!((cgi.requests, cgi.tiers.as_ref()), (0, None));
    assert!(text.contains("failed the verifier"), "{text}");
    for measured in ["static", "fastcgi"] {
        let r = row(measured);
        assert!(r.unavailable.is_none() && r.requests > 0, "{r:?}");
    }
}

/// Without flint-app the experiment is skipped and says so; the servers are not blamed (in
/// `flint lab all` they served the other experiments).
#[test]
fn without_the_application_the_experiment_is_skipped_not_the_servers_failed() {
    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.app_bin = Some("/nonexistent/flint-app".into());
    opts.servers = vec![PeerKind::Flint, PeerKind::Nginx];
    opts.profile = false;
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(report.results.is_empty(), "{text}");
    assert!(text.contains("note: dynamic skipped: flint-app"), "{text}");
    assert!(progress.contains("dynamic skipped"), "{progress}");
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}");
    }
}

/// The tests that start PostgreSQL, one at a time: each looks for a server of this test process
/// left running, and must not see the other's.
static POSTGRES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Processes of this test process's PostgreSQL servers still running (by the servers'
/// directory, which their command lines and their clients' name).
fn postgres_left() -> String {
    let prefix = lab_experiments::dynamic_postgres::dir_prefix();
    let out = std::process::Command::new("pgrep")
        .args(["-a", "-f", &prefix])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// With `--db postgres` the database server is a tier of its own: the lab makes and starts
/// PostgreSQL (as `nobody` when root), the application passes the verifier over it through CGI
/// and FastCGI, the `db` tier's CPU is counted, and a CGI program's connection per request costs
/// the database more than a FastCGI responder's one connection (and nothing when the test type
/// does not use the database). Nothing is left running.
#[test]
fn dynamic_with_postgres_counts_the_database_tier_and_stops_it() {
    let _one = POSTGRES.lock().unwrap_or_else(|p| p.into_inner());
    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.duration = Duration::from_millis(400);
    opts.warmup = Duration::from_millis(100);
    opts.servers = vec![PeerKind::Flint];
    opts.tests = vec!["plaintext".into(), "db".into()];
    opts.db = Database::Postgres;
    opts.profile = false;
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(postgres_left().is_empty(), "{}", postgres_left());
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert!(text.contains("PostgreSQL its own tier"), "{text}");
    assert!(text.contains("db µs/req"), "{text}");
    let find = |deployment: &str, test: &str| {
        (report.results.iter())
            .find(|r| {
                r.deployment.as_deref() == Some(deployment) && r.test_type.as_deref() == Some(test)
            })
            .unwrap_or_else(|| panic!("no {deployment} {test} row: {text}\n{progress}"))
    };
    let row = |deployment: &str| find(deployment, "db");
    for deployment in ["cgi", "fastcgi"] {
        let r = row(deployment);
        assert!(r.unavailable.is_none(), "{deployment}: {:?}", r.unavailable);
        assert!(r.requests > 0 && r.errors == 0, "{deployment}: {r:?}");
        assert_eq!(r.database.as_deref(), Some("postgres"));
        let tiers = r.tiers.as_ref().expect("tiers");
        let names: Vec<&str> = tiers.iter().map(|t| t.tier.as_str()).collect();
        assert_eq!(names, ["web", "app", "db"], "{deployment}");
        assert!(tier(r, "db").unwrap() > 0.0, "{deployment}: {tiers:?}");
        let total: f64 = tiers.iter().map(|t| t.cpu_us_per_request).sum();
        let cpu = r.server_cpu_us_per_request.unwrap();
        assert!((total - cpu).abs() <= 1e-6 * cpu.max(1.0), "{deployment}");
    }
    // A backend forked, authenticated and its statement prepared per CGI request, against one
    // query on a FastCGI responder's connection.
    let (cgi, fastcgi) = (tier(row("cgi"), "db"), tier(row("fastcgi"), "db"));
    assert!(
        cgi > fastcgi,
        "db tier: cgi {cgi:?} µs, fastcgi {fastcgi:?} µs"
    );
    // A CGI program connects only for a test type that uses the database: its `/plaintext`
    // costs the database server next to nothing (its background processes' share).
    let plaintext = tier(find("cgi", "plaintext"), "db").unwrap();
    assert!(
        plaintext < cgi.unwrap() / 10.0,
        "db tier: cgi plaintext {plaintext} µs, db {cgi:?} µs"
    );
    let static_file = find("static", "plaintext");
    assert_eq!(static_file.tiers.as_ref().map(Vec::len), Some(1));
}

/// A PostgreSQL server of the lab is stopped with its group when its owner unwinds from a
/// panic (a failing test): no process of it is left.
#[test]
fn postgres_is_stopped_even_when_its_owner_panics() {
    use lab_experiments::dynamic_postgres::Postgres;
    let _one = POSTGRES.lock().unwrap_or_else(|p| p.into_inner());
    let pg = Postgres::start(None).expect("PostgreSQL starts");
    assert!(pg.url().starts_with("postgres://flint@"), "{}", pg.url());
    assert!(!postgres_left().is_empty(), "the server runs");
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _pg = pg;
        panic!("a failing test");
    }));
    assert!(unwound.is_err());
    assert!(postgres_left().is_empty(), "{}", postgres_left());
}

/// The proxy deployment: `flint-app http` on a unix socket behind flint serve's `--proxy` and
/// nginx's `proxy_pass` (an upstream with `keepalive`), verified, then measured with its own
/// application tier: the requests reach the application, which spends CPU on each, and the
/// rest is the web server's.
#[test]
fn the_proxy_deployment_is_verified_and_measured_on_flint_and_nginx() {
    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.duration = Duration::from_millis(400);
    opts.warmup = Duration::from_millis(100);
    opts.servers = vec![PeerKind::Flint, PeerKind::Nginx];
    opts.tests = vec!["plaintext".into(), "db".into()];
    opts.deployments = vec![Deployment::Proxy];
    opts.profile = false;
    assert_eq!(opts.runs(Experiment::Dynamic), 2 * 2);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 4, "{text}\n{progress}");
    for r in &report.results {
        let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
        assert_eq!(r.deployment.as_deref(), Some("proxy"), "{what}");
        assert!(r.unavailable.is_none(), "{what}: {:?}", r.unavailable);
        assert!(r.requests > 0 && r.errors == 0, "{what}: {r:?}");
        let tiers = r.tiers.as_ref().expect("tiers");
        let names: Vec<&str> = tiers.iter().map(|t| t.tier.as_str()).collect();
        assert_eq!(names, ["web", "app"], "{what}");
        assert!(tier(r, "web").unwrap() > 0.0, "{what}: {tiers:?}");
        assert!(tier(r, "app").unwrap() > 0.0, "{what}: {tiers:?}");
    }
    for server in ["flint", "nginx"] {
        assert!(
            text.lines()
                .any(|l| l.starts_with(server) && l.contains("proxy") && l.contains("db")),
            "{text}"
        );
    }
}

/// Apache event: CGI through mod_cgid, the FastCGI deployment through mod_proxy_fcgi and the
/// proxy deployment through mod_proxy_http, each to flint-app (on its unix socket when
/// persistent), verified, then measured with Apache's processes (its cgroup) as the web tier and
/// the gateway's and application's as the app tier (mod_cgid's daemon and its programs for CGI,
/// which cost more than a persistent application's request). Its PHP deployments are in
/// tests/it/experiments_dynamic_servers.rs.
#[test]
fn apache_event_runs_cgi_fastcgi_and_proxy_deployments_verified_and_measured_by_tier() {
    let mut opts = LabOptions::new(Some(flint_bin()));
    opts.duration = Duration::from_millis(400);
    opts.warmup = Duration::from_millis(100);
    opts.servers = vec![PeerKind::ApacheEvent];
    opts.tests = vec!["plaintext".into(), "db".into()];
    opts.deployments = vec![
        Deployment::Static,
        Deployment::Cgi,
        Deployment::FastCgi,
        Deployment::Proxy,
    ];
    opts.profile = false;
    assert_eq!(opts.runs(Experiment::Dynamic), 1 + 3 * 2);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 7, "{text}\n{progress}");
    for r in &report.results {
        let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
        assert_eq!(r.server, "apache-event", "{what}");
        assert!(
            r.unavailable.is_none(),
            "{what}: {:?}\n{progress}",
            r.unavailable
        );
        assert!(r.requests > 0 && r.errors == 0, "{what}: {r:?}");
        let tiers = r.tiers.as_ref().expect("tiers");
        let names: Vec<&str> = tiers.iter().map(|t| t.tier.as_str()).collect();
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
        assert!(tier(r, "web").unwrap() > 0.0, "{what}: {tiers:?}");
        if gateway {
            assert!(tier(r, "app").unwrap() > 0.0, "{what}: {tiers:?}");
        }
    }
    for test in ["plaintext", "db"] {
        let app = |deployment: &str| {
            (report.results.iter())
                .find(|r| {
                    r.deployment.as_deref() == Some(deployment)
                        && r.test_type.as_deref() == Some(test)
                })
                .and_then(|r| tier(r, "app"))
                .unwrap()
        };
        let (cgi, fastcgi) = (app("cgi"), app("fastcgi"));
        assert!(cgi > fastcgi, "{test}: cgi {cgi} µs, fastcgi {fastcgi} µs");
    }
    for deployment in ["cgi", "fastcgi", "proxy"] {
        assert!(
            text.lines().any(|l| l.starts_with("apache-event")
                && l.contains(deployment)
                && l.contains("db")),
            "{text}"
        );
    }
}
