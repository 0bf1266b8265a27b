//! The dynamic experiment's PHP deployments end to end, short (a count of requests per
//! measurement, so that php-cgi's slow starts on a busy machine still give each one its
//! requests): the PHP application under php-fpm and as php-cgi programs, behind flint serve and
//! nginx, verified then measured, over SQLite and over PostgreSQL. Debian's php-fpm, php-cgi,
//! php-sqlite3 and php-pgsql are required (scripts/install-peers.sh).

mod common;

use common::run_lab;
use lab_experiments::{Database, Deployment, Experiment, LabOptions, ResultRow, Status};
use lab_peers::PeerKind;
use std::time::Duration;
use test_support::flint_bin;

/// One test at a time: each looks for php-fpm masters of the lab left running and must not see
/// the other's.
static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn tier(r: &ResultRow, name: &str) -> Option<f64> {
    (r.tiers.iter().flatten())
        .find(|t| t.tier == name)
        .map(|t| t.cpu_us_per_request)
}

/// php-fpm masters this test's lab started still running: the lab starts php-fpm as its own
/// child, so a master left behind is a child of this process (not another run's on the
/// machine).
fn fpm_left() -> String {
    let out = std::process::Command::new("pgrep")
        .args([
            "-a",
            "-P",
            &std::process::id().to_string(),
            "-f",
            "php-fpm: master",
        ])
        .output()
        .expect("pgrep");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn options(servers: Vec<PeerKind>, tests: &[&str], db: Database) -> LabOptions {
    let mut opts = LabOptions::new(Some(flint_bin()));
    let app = opts.app_bin.clone().expect("flint-app beside flint");
    assert!(
        app.is_file(),
        "{} not found: cargo build -p lab-app",
        app.display()
    );
    opts.warmup = Duration::ZERO;
    opts.pages = Some(24);
    opts.servers = servers;
    opts.tests = tests.iter().map(|t| (*t).to_owned()).collect();
    opts.deployments = vec![Deployment::PhpFpm, Deployment::PhpCgi];
    opts.db = db;
    opts.profile = false;
    opts
}

/// Every row verified and measured, with the tiers its deployment has.
fn check_measured(rows: &[&ResultRow], tiers: &[&str], text: &str) {
    for r in rows {
        let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
        assert!(
            r.unavailable.is_none(),
            "{what}: {:?}\n{text}",
            r.unavailable
        );
        assert!(r.requests > 0 && r.errors == 0, "{what}: {r:?}");
        let names: Vec<&str> = (r.tiers.iter().flatten())
            .map(|t| t.tier.as_str())
            .collect();
        assert_eq!(names, tiers, "{what}");
        assert!(tier(r, "web").unwrap() > 0.0, "{what}: {:?}", r.tiers);
        assert!(tier(r, "app").unwrap() > 0.0, "{what}: {:?}", r.tiers);
    }
}

#[test]
fn php_fpm_and_php_cgi_are_verified_and_measured_behind_flint_and_nginx() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let opts = options(
        vec![PeerKind::Flint, PeerKind::Nginx],
        &["plaintext", "db"],
        Database::Sqlite,
    );
    assert_eq!(opts.runs(Experiment::Dynamic), 2 * 2 * 2);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(fpm_left().is_empty(), "{}", fpm_left());
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert!(text.contains("deployments php-fpm,php-cgi"), "{text}");
    let json = report.to_json();
    assert_eq!(
        json["options"]["deployments"],
        serde_json::json!(["php-fpm", "php-cgi"])
    );
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 8, "{text}\n{progress}");
    check_measured(&rows, &["web", "app"], &text);
    let find = |server: &str, deployment: &str, test: &str| {
        *(rows.iter())
            .find(|r| {
                r.server == server
                    && r.deployment.as_deref() == Some(deployment)
                    && r.test_type.as_deref() == Some(test)
            })
            .unwrap_or_else(|| panic!("no row {server} {deployment} {test}: {text}"))
    };
    for server in ["flint", "nginx"] {
        for test in ["plaintext", "db"] {
            // PHP started per request (the interpreter, its extensions, the script compiled)
            // against a php-fpm child that has it all already.
            let cgi = tier(find(server, "php-cgi", test), "app").unwrap();
            let fpm = tier(find(server, "php-fpm", test), "app").unwrap();
            assert!(
                cgi > fpm,
                "{server} {test}: php-cgi {cgi} µs, php-fpm {fpm} µs"
            );
        }
    }
}

#[test]
fn php_over_postgres_counts_the_database_tier() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let opts = options(vec![PeerKind::Flint], &["db"], Database::Postgres);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(fpm_left().is_empty(), "{}", fpm_left());
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 2, "{text}\n{progress}");
    check_measured(&rows, &["web", "app", "db"], &text);
    let db = |deployment: &str| {
        let r = (rows.iter())
            .find(|r| r.deployment.as_deref() == Some(deployment))
            .unwrap_or_else(|| panic!("no {deployment} row: {text}"));
        assert_eq!(r.database.as_deref(), Some("postgres"));
        tier(r, "db").unwrap()
    };
    // php-cgi connects per request (a backend forked for each); a php-fpm child keeps its
    // persistent connection.
    let (cgi, fpm) = (db("php-cgi"), db("php-fpm"));
    assert!(
        cgi > fpm && fpm > 0.0,
        "db tier: php-cgi {cgi} µs, php-fpm {fpm} µs"
    );
}

/// A PHP deployment that cannot run is shown failed with the package to install, on every
/// server, never skipped in silence: here a php-cgi without PDO's SQLite driver (a program that
/// lists no such module) and a php-fpm that is not there. The other deployments are measured.
#[test]
fn a_php_deployment_whose_package_is_missing_is_shown_failed_naming_the_package() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let no_driver = dir.path().join("php-cgi");
    std::fs::write(&no_driver, "#!/bin/sh\nprintf '[PHP Modules]\\nPDO\\n'\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&no_driver, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut opts = options(
        vec![PeerKind::Flint, PeerKind::Nginx],
        &["db"],
        Database::Sqlite,
    );
    opts.deployments = vec![Deployment::FastCgi, Deployment::PhpFpm, Deployment::PhpCgi];
    opts.php = lab_experiments::PhpPrograms {
        fpm: Some(dir.path().join("php-fpm8.2")),
        cgi: Some(no_driver.clone()),
    };
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    assert_eq!(report.results.len(), 6, "{text}\n{progress}");
    for server in ["flint", "nginx"] {
        let row = |deployment: &str| {
            (report.results.iter())
                .find(|r| r.server == server && r.deployment.as_deref() == Some(deployment))
                .unwrap_or_else(|| panic!("no {server} {deployment} row: {text}"))
        };
        let fpm = row("php-fpm");
        assert_eq!(
            fpm.unavailable.as_deref(),
            Some(&*format!(
                "{} is not installed (apt-get install -y php-fpm)",
                dir.path().join("php-fpm8.2").display()
            )),
            "{text}"
        );
        let cgi = row("php-cgi");
        assert_eq!(
            cgi.unavailable.as_deref(),
            Some(&*format!(
                "{} has no PDO driver pdo_sqlite (apt-get install -y php-sqlite3)",
                no_driver.display()
            )),
            "{text}"
        );
        for failed in [fpm, cgi] {
            assert_eq!((failed.requests, failed.tiers.as_ref()), (0, None));
        }
        let fastcgi = row("fastcgi");
        assert!(
            fastcgi.unavailable.is_none() && fastcgi.requests > 0,
            "{fastcgi:?}"
        );
    }
    assert!(text.contains("apt-get install -y php-sqlite3"), "{text}");
}

#[test]
fn php_updates_over_sqlite_from_concurrent_clients_all_succeed() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    // The lab's clients at once against php-fpm's children, each /updates a transaction of
    // writes over SQLite: a writer waits for another (the busy timeout), never fails with
    // "database is locked" because a read statement of its own was left open.
    let mut opts = options(vec![PeerKind::Flint], &["updates"], Database::Sqlite);
    opts.deployments = vec![Deployment::PhpFpm];
    opts.pages = Some(200);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(fpm_left().is_empty(), "{}", fpm_left());
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 1, "{text}\n{progress}");
    check_measured(&rows, &["web", "app"], &text);
}
