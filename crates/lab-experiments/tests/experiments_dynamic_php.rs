//! The dynamic experiment's PHP deployments end to end, short (a count of requests per
//! measurement, so that php-cgi's slow starts on a busy machine still give each one its
//! requests): the PHP application under php-fpm and as php-cgi programs, behind flint serve and
//! nginx, and inside Apache prefork's children (mod_php), verified then measured, over SQLite
//! and over PostgreSQL. Debian's php-fpm, php-cgi, libapache2-mod-php, php-sqlite3 and
//! php-pgsql are required (scripts/install-peers.sh).
//!
//! A test executable of its own, not a module of `tests/it`: its checks that nothing it started
//! is left count every php-fpm master among this process's children (tests/it/main.rs says why).

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

fn find<'a>(rows: &[&'a ResultRow], server: &str, deployment: &str, test: &str) -> &'a ResultRow {
    (rows.iter())
        .find(|r| {
            r.server == server
                && r.deployment.as_deref() == Some(deployment)
                && r.test_type.as_deref() == Some(test)
        })
        .unwrap_or_else(|| panic!("no row {server} {deployment} {test}"))
}

/// The tiers of a mod_php row: its verifier passed, it was measured, and the web server's
/// processes are the application's too, one tier (`web+app`) before the database's, if any.
fn check_mod_php(r: &ResultRow, tiers: &[&str], text: &str) {
    let what = format!("{} {:?} {:?}", r.server, r.deployment, r.test_type);
    assert!(
        r.unavailable.is_none(),
        "{what}: {:?}\n{text}",
        r.unavailable
    );
    assert!(
        r.requests > 0 && r.requests_per_s > 0.0 && r.errors == 0,
        "{what}: {r:?}"
    );
    let names: Vec<&str> = (r.tiers.iter().flatten())
        .map(|t| t.tier.as_str())
        .collect();
    assert_eq!(names, tiers, "{what}");
    assert!(tier(r, "web+app").unwrap() > 0.0, "{what}: {:?}", r.tiers);
}

/// mod_php in Apache prefork beside php-fpm behind both MPMs: prefork's mod_php rows are
/// verified and measured with one tier for Apache and PHP; the event MPM's say why it has none
/// (Debian's PHP is not thread-safe), never measured.
#[test]
fn mod_php_is_measured_in_apache_prefork_as_one_tier_and_the_event_mpm_says_why_not() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let mut opts = options(
        vec![PeerKind::ApachePrefork, PeerKind::ApacheEvent],
        &["plaintext", "db"],
        Database::Sqlite,
    );
    opts.deployments = vec![Deployment::PhpFpm, Deployment::ModPhp];
    assert_eq!(opts.runs(Experiment::Dynamic), 2 * 2 * 2);
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    assert!(fpm_left().is_empty(), "{}", fpm_left());
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 8, "{text}\n{progress}");
    for test in ["plaintext", "db"] {
        check_mod_php(
            find(&rows, "apache-prefork", "mod-php", test),
            &["web+app"],
            &text,
        );
        let fpm = [
            find(&rows, "apache-prefork", "php-fpm", test),
            find(&rows, "apache-event", "php-fpm", test),
        ];
        check_measured(&fpm, &["web", "app"], &text);
        let event = find(&rows, "apache-event", "mod-php", test);
        let why = event.unavailable.as_deref().unwrap_or_default();
        assert!(
            why.starts_with("apache-event has no mod-php deployment in the lab")
                && why.contains("not thread-safe"),
            "{why}\n{text}"
        );
        assert_eq!((event.requests, event.tiers.as_ref()), (0, None));
    }
    // The table puts the one tier in the web column and says where the application went.
    let line = (text.lines())
        .find(|l| l.starts_with("apache-prefork") && l.contains("mod-php") && l.contains(" db "))
        .unwrap_or_else(|| panic!("no mod-php db line in:\n{text}"));
    assert!(line.contains("in web"), "{line}");
    assert!(
        text.contains("the web and application tiers are one"),
        "{text}"
    );
}

/// Over PostgreSQL, mod_php's Apache children (`www-data` when root) keep their persistent
/// connections, and the database is a tier of its own after Apache's.
#[test]
fn mod_php_over_postgres_counts_the_database_tier_after_apaches() {
    let _one = ONE.lock().unwrap_or_else(|p| p.into_inner());
    let mut opts = options(vec![PeerKind::ApachePrefork], &["db"], Database::Postgres);
    opts.deployments = vec![Deployment::ModPhp];
    let (report, text, progress) = run_lab(Experiment::Dynamic, &opts, false);
    for s in &report.servers {
        assert_eq!(s.status, Status::Ok, "{s:?}\n{progress}");
    }
    let rows: Vec<&ResultRow> = report.results.iter().collect();
    assert_eq!(rows.len(), 1, "{text}\n{progress}");
    let r = find(&rows, "apache-prefork", "mod-php", "db");
    check_mod_php(r, &["web+app", "db"], &text);
    assert_eq!(r.database.as_deref(), Some("postgres"));
    assert!(tier(r, "db").unwrap() > 0.0, "{:?}", r.tiers);
}
