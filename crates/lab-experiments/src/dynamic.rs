//! `flint lab dynamic`: what a CGI and a FastCGI request cost against a static file, tier by
//! tier, the question of the WebSTONE paper's "effects of the CGI" and of the Jigsaw and Apache
//! profiles that counted a server's work per request.
//!
//! The reference application (`flint-app`: TechEmpower's test types over SQLite, crates/lab-app)
//! runs behind flint serve and nginx in each deployment ([`Deployment`]): a file of the same
//! bytes as `/plaintext` (the baseline), CGI (flint serve's `--cgi`; nginx and fcgiwrap) and
//! FastCGI (`flint-app fastcgi` behind `--fastcgi` and `fastcgi_pass`); and, asked for with
//! `--deployments`, the proxy (`flint-app http` behind `--proxy` and `proxy_pass`, over a unix
//! socket as the FastCGI responder is) and the same test types in PHP ([`php`])
//! through php-fpm and php-cgi, the two ways most sites run PHP, and inside Apache prefork's
//! children (mod_php: there the web and application tiers are one, `web+app`). For each test
//! type asked, the
//! verifier holds the deployment to the rules first: one that answers wrongly is
//! shown failed, never measured. Then a keep-alive load of [`DYNAMIC_CLIENTS`] clients, and over
//! the measured window each tier's CPU ([`Tiers`]): the web server's, and the gateway and
//! application processes' (CGI programs included, counted as they come and go), and the
//! database's. SQLite (`--db sqlite`, the default) runs in the application's process, so the
//! database is in the application tier; PostgreSQL (`--db postgres`, [`Postgres`]: started by
//! the lab, on a Unix socket) is a server of its own, the `db` tier, every backend it forks
//! included (a CGI program connects once per request, a FastCGI responder once).

mod cgroup;
mod clients;
mod deployment;
mod flint_serve;
mod php;
pub mod postgres;
mod prepare;
mod servers;
mod stack;
mod syscalls;
mod tiers;
mod users;

pub use clients::DYNAMIC_CLIENTS;
pub use deployment::Deployment;
pub use php::PhpPrograms;

use crate::measure::Measurement;
use crate::{table, Database, Experiment, Lab, ResultRow};
use bench::{BenchConfig, HttpMode, Observer, Target};
use deployment::Shared;
use lab_process::cpu::{self, CpuTime};
use php::{Php, PhpWanted};
use postgres::Postgres;
use prepare::prepare;
use stack::Stack;
use std::io;
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use syscalls::SyscallWindow;
use tiers::{Source, Tiers, WEB_AND_APP};

/// The test types measured unless `--tests` says otherwise.
pub const DEFAULT_TESTS: [&str; 4] = ["plaintext", "json", "db", "fortunes"];

/// Every test type, as `--tests` names them.
pub const TEST_TYPES: [&str; 6] = ["plaintext", "json", "db", "queries", "fortunes", "updates"];

/// The request a test type's load sends under `prefix`.
fn target(prefix: &str, test: &str) -> String {
    match test {
        "queries" | "updates" => format!("{prefix}/{test}?queries=20"),
        _ => format!("{prefix}/{test}"),
    }
}

/// Measurements of one server: the static baseline (once, when asked for), then each gateway
/// deployment per test.
pub fn runs_per_server(tests: usize, deployments: &[Deployment]) -> usize {
    (deployments.iter())
        .map(|&d| if d == Deployment::Static { 1 } else { tests })
        .sum()
}

pub(super) fn run(lab: &mut Lab) -> io::Result<()> {
    let tests = lab.opts.tests.clone();
    let deployments = lab.opts.deployments.clone();
    let database = lab.opts.db;
    let where_db = match database {
        Database::Sqlite => "SQLite in the application",
        Database::Postgres => "PostgreSQL its own tier",
    };
    writeln!(
        lab.out,
        "\n== dynamic (an application's deployments against a static file, CPU per tier): \
         {DYNAMIC_CLIENTS} \
         clients, persistent, {where_db}; deployments {}; tests {}; {}",
        (deployments.iter().map(|d| d.name()))
            .collect::<Vec<_>>()
            .join(","),
        tests.join(","),
        lab.opts.each()
    )?;
    let servers = lab.runnable(Experiment::Dynamic);
    if servers.is_empty() {
        return Ok(());
    }
    let Some(app_bin) = lab.opts.app_bin.clone().filter(|p| p.is_file()) else {
        // The servers are not at fault (and may have served every other experiment of `all`):
        // the experiment is skipped, and said so.
        let why = "dynamic skipped: flint-app, the application it deploys, is not beside flint \
                   (cargo build -p lab-app)";
        writeln!(lab.progress, "flint lab: {why}")?;
        return lab.note(why);
    };
    let dir = tempfile::Builder::new()
        .prefix("flint-lab-dynamic.")
        .tempdir()?;
    // Started once for every server, stopped (with its group) when this returns, whatever
    // happens.
    let postgres = match database {
        Database::Sqlite => None,
        Database::Postgres => match Postgres::start(lab.opts.server_cpu) {
            Ok(pg) => Some(pg),
            Err(e) => {
                for kind in servers {
                    lab.failed(kind, "dynamic: starting PostgreSQL", &e)?;
                }
                return Ok(());
            }
        },
    };
    let url = postgres.as_ref().map(Postgres::url);
    // The PHP programs and their PDO drivers, once for every server: a missing package fails
    // its deployment's rows, with the package named.
    let php = Php::find(
        std::path::Path::new(url.unwrap_or("world.db")),
        &lab.opts.php,
        PhpWanted {
            fpm: deployments.contains(&Deployment::PhpFpm),
            cgi: deployments.contains(&Deployment::PhpCgi),
            mod_php: deployments.contains(&Deployment::ModPhp),
        },
    );
    let php_cgi = (php.cgi.clone()).unwrap_or_else(|_| lab_app::php::PHP_CGI.into());
    let (root, cgi_dir, db) = match prepare(dir.path(), &app_bin, &php_cgi, url) {
        Ok(paths) => paths,
        Err(e) => {
            for kind in servers {
                lab.failed(kind, "dynamic: preparing the application", &e)?;
            }
            return Ok(());
        }
    };
    let shared = Shared {
        root,
        cgi_dir,
        db,
        app_bin,
        cpu: lab.opts.server_cpu,
        cgi_workers: DYNAMIC_CLIENTS,
        db_server: postgres.as_ref().map(|pg| match pg.cgroup() {
            Some(cg) => Source::Cgroup(cg.to_owned()),
            None => Source::Tree(pg.pid()),
        }),
        deployments: deployments.clone(),
        php,
    };
    let mut headers = vec![
        "server",
        "deployment",
        "test",
        "req/s",
        "p50 ms",
        "p99 ms",
        "web µs/req",
        "app µs/req",
        "db µs/req",
        "total µs/req",
        "errors",
    ];
    let traced = lab.method.is_some();
    if traced {
        headers.extend(["web sys/req", "app sys/req", "db sys/req", "traced req/s"]);
    }
    let mut t = table::Table::new(headers);
    for kind in servers {
        if lab.stopped() {
            break;
        }
        let program = match kind.probe(lab.opts.flint_bin.as_deref()) {
            Ok(i) => i.program,
            Err(e) => {
                lab.failed(kind, "dynamic", &e.to_string())?;
                continue;
            }
        };
        let mut stack = match Stack::start(kind, &program, &shared) {
            Ok(s) => s,
            Err(e) => {
                lab.failed(kind, "dynamic: start", &e)?;
                continue;
            }
        };
        for &deployment in &deployments {
            let tests: Vec<String> = match deployment {
                Deployment::Static => vec!["plaintext".to_owned()],
                _ => tests.clone(),
            };
            for test in &tests {
                if lab.stopped() {
                    break;
                }
                let Some(row) = one(lab, &mut stack, &shared, database, deployment, test)? else {
                    continue;
                };
                if row.interrupted {
                    writeln!(
                        lab.out,
                        "{kind} {} {test}: interrupted after {:.2} s (Ctrl-C)",
                        deployment.name(),
                        row.duration_s
                    )?;
                } else {
                    table_row(&mut t, &row, kind, traced);
                }
                lab.push(row);
            }
        }
    }
    if !t.is_empty() {
        writeln!(lab.out, "\ndynamic: results\n{}", t.render())?;
        writeln!(
            lab.out,
            "(web: the web server's processes; app: the gateway and application processes, CGI \
             programs included{}{}; CPU per request over the measured window{})",
            match database {
                Database::Sqlite => ", SQLite in them",
                Database::Postgres => "; db: PostgreSQL's server, every backend included",
            },
            if deployments.contains(&Deployment::ModPhp) {
                "; mod-php: PHP runs inside Apache prefork's own children, so the web and \
                 application tiers are one (web+app: its web column, `in web` in app's)"
            } else {
                ""
            },
            if traced {
                "; sys/req: system calls per request of each tier, counted in a traced run of \
                 its own after the untraced one (traced req/s: its rate, against req/s the \
                 tracing's cost)"
            } else {
                ""
            }
        )?;
        let limited = lab
            .results
            .iter()
            .any(|r| r.experiment == "dynamic" && r.client_limited);
        lab.footnote(limited)?;
    }
    Ok(())
}

/// A line of the results table; with `traced`, each tier's syscalls per request and the traced
/// run's rate too. A row without figures says why after its test, widening no column.
fn table_row(t: &mut table::Table, row: &ResultRow, kind: lab_peers::PeerKind, traced: bool) {
    let find = |name: &str| (row.tiers.iter().flatten()).find(|t| t.tier == name);
    // A web server that runs the application itself (mod_php): one tier, in the web column,
    // and the app column says where it went.
    let combined = find(WEB_AND_APP).is_some();
    let find = |name: &str| match name {
        "web" if combined => find(WEB_AND_APP),
        _ => find(name),
    };
    let in_web = |name: &str, cell: String| match name {
        "app" if combined => "in web".to_owned(),
        _ => cell,
    };
    let tier = |name: &str| in_web(name, table::num(find(name).map(|t| t.cpu_us_per_request)));
    let calls = |name: &str| {
        in_web(
            name,
            table::num(find(name).and_then(|t| t.syscalls_per_request)),
        )
    };
    let (deployment, test) = (
        row.deployment.clone().unwrap_or_default(),
        row.test_type.clone().unwrap_or_default(),
    );
    if let Some(why) = &row.unavailable {
        return t.row_then(vec![kind.to_string(), deployment, test], why.clone());
    }
    let mut cells = vec![
        kind.to_string(),
        deployment,
        test,
        format!(
            "{}{}",
            table::num(Some(row.requests_per_s)),
            table::mark(row.client_limited)
        ),
        row.latency_ms_p50
            .map_or("-".into(), |ms| format!("{ms:.2}")),
        row.latency_ms_p99
            .map_or("-".into(), |ms| format!("{ms:.2}")),
        tier("web"),
        tier("app"),
        tier("db"),
        table::num(row.server_cpu_us_per_request),
        row.errors.to_string(),
    ];
    if traced {
        cells.extend([
            calls("web"),
            calls("app"),
            calls("db"),
            table::num(row.traced_requests_per_s),
        ]);
    }
    t.row(cells);
}

/// Verifies, then measures, one deployment's test type; `None` when nothing could be run (the
/// server failed: recorded against it).
fn one(
    lab: &mut Lab,
    stack: &mut Stack,
    shared: &Shared,
    database: Database,
    deployment: Deployment,
    test: &str,
) -> io::Result<Option<ResultRow>> {
    let kind = stack.kind;
    let what = format!("{} {test}", deployment.name());
    lab.started += 1;
    writeln!(
        lab.progress,
        "flint lab: [{}/{}] {kind} {what}",
        lab.started, lab.planned
    )?;
    if let Some(log) = stack.exited() {
        lab.failed(kind, &what, &format!("a process exited; its log:\n{log}"))?;
        return Ok(None);
    }
    lab.note(stack.accounting_note())?;
    if let Some(why) = shared.unavailable(deployment) {
        writeln!(lab.progress, "flint lab: {kind}: {what}: {why}")?;
        return Ok(Some(ResultRow::dynamic_failed(
            kind,
            deployment.name(),
            test,
            database,
            why.to_owned(),
        )));
    }
    if let Some(why) = stack.unsupported(deployment) {
        writeln!(lab.progress, "flint lab: {kind}: {what}: {why}")?;
        return Ok(Some(ResultRow::dynamic_failed(
            kind,
            deployment.name(),
            test,
            database,
            why,
        )));
    }
    if let Err(why) = verify(stack, shared, deployment, test) {
        writeln!(
            lab.progress,
            "flint lab: {kind}: {what}: failed the verifier: {why}"
        )?;
        let why = format!("failed the verifier: {why}");
        return Ok(Some(ResultRow::dynamic_failed(
            kind,
            deployment.name(),
            test,
            database,
            why,
        )));
    }
    let path = target(deployment.prefix(), test);
    let tiers = stack.tiers(deployment);
    let mut row = match measure(lab, stack.addr, tiers.clone(), &path) {
        Ok((m, cpu)) => {
            let mut row = ResultRow::new(Experiment::Dynamic, kind, HttpMode::KeepAlive, None, &m);
            let names = tiers.names();
            row.set_dynamic(
                deployment.name(),
                test,
                database,
                &m,
                cpu.as_deref(),
                &names,
            );
            row
        }
        Err(e) => {
            lab.failed(kind, &what, &e)?;
            return Ok(None);
        }
    };
    // The syscalls from a run of their own: tracing slows the tiers, and the row's rate,
    // latency and CPU are the untraced run's.
    if let Some(method) =
        (lab.method).filter(|_| row.measured() && !row.interrupted && !lab.stopped())
    {
        let window = SyscallWindow::prepare(&tiers, method);
        match run_load(lab, stack.addr, &path, false, &window) {
            Ok(run) => {
                let counted = window.finish();
                for why in syscalls::set_syscalls(&mut row, method, &run, counted) {
                    if lab.said.insert(why.clone()) {
                        writeln!(lab.progress, "flint lab: {kind}: {what}: syscalls: {why}")?;
                    }
                }
                if let Some(table) = syscalls::truss_by_tier(&row) {
                    writeln!(
                        lab.out,
                        "\n-- {kind} {what}: system calls per request by tier ({method}, a run \
                         of its own: {} requests at {} req/s traced, {} untraced)\n{table}",
                        row.traced_requests.unwrap_or(0),
                        table::num(row.traced_requests_per_s),
                        table::num(Some(row.requests_per_s)),
                    )?;
                }
            }
            Err(e) => writeln!(lab.progress, "flint lab: {kind}: {what}: traced run: {e}")?,
        }
    }
    Ok(Some(row))
}

/// The verifier's verdict on `test` in `deployment`: the static file must be `/plaintext`'s
/// bytes; the application's test types are held to the rules (`lab_app::verify`).
fn verify(
    stack: &Stack,
    shared: &Shared,
    deployment: Deployment,
    test: &str,
) -> Result<(), String> {
    if deployment == Deployment::Static {
        let r = lab_app::verify::fetch(stack.addr, "/plaintext", Duration::from_secs(10))?;
        return match (r.status, &r.body[..]) {
            (200, b"Hello, World!") => Ok(()),
            (200, body) => Err(format!("body {:?}", String::from_utf8_lossy(body))),
            (status, _) => Err(format!("status {status}")),
        };
    }
    let verdicts = lab_app::verify::verify(stack.addr, deployment.prefix(), Some(&shared.db));
    match verdicts.iter().find(|v| v.test == test) {
        Some(v) if v.problems.is_empty() => Ok(()),
        Some(v) => Err(v.problems.join("; ")),
        None => Err(format!("no test type {test}")),
    }
}

/// One end of the window: when, each tier's CPU so far, and this process's (the load's).
type Reading = (Instant, Result<Vec<CpuTime>, String>, Option<CpuTime>);

/// Reads the tiers' and this process's CPU at the window's two ends.
struct TierWindow {
    tiers: Tiers,
    start: Mutex<Option<Reading>>,
    end: Mutex<Option<Reading>>,
}

impl TierWindow {
    fn reading(&self) -> Reading {
        let tiers = self.tiers.read();
        let client = cpu::process(std::process::id()).ok();
        (Instant::now(), tiers, client)
    }
}

impl Observer for TierWindow {
    fn window_started(&self) {
        let r = self.reading();
        *self.start.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    }
    fn window_ended(&self) {
        let r = self.reading();
        *self.end.lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
    }
}

/// The load of `path` against `addr` (its warm-up first when `warmup`), `observer` told when
/// the measured window opens and closes.
pub(super) fn run_load(
    lab: &Lab,
    addr: std::net::SocketAddr,
    path: &str,
    warmup: bool,
    observer: &dyn Observer,
) -> Result<bench::RunResult, String> {
    let load = lab.load(DYNAMIC_CLIENTS, HttpMode::KeepAlive);
    let workload = bench::Workload::from_paths(&[path.to_owned()]).map_err(|e| e.to_string())?;
    let config = BenchConfig {
        concurrency: load.clients,
        connections_per_child: 1,
        threads: 1,
        stop: load.stop(),
        warmup: Duration::ZERO,
        http: load.http,
        connect_timeout: Duration::from_secs(5),
        response_timeout: Duration::from_secs(30),
        ..BenchConfig::new(Target::http(addr))
    };
    let stop: &AtomicBool = lab.stop;
    let _pin = load
        .cpu
        .and_then(|c| lab_process::pin_current_thread(c).ok());
    if warmup && !load.warmup.is_zero() {
        let warmup = BenchConfig {
            stop: bench::Stop::Duration(load.warmup),
            ..config.clone()
        };
        bench::run(&warmup, &workload, stop).map_err(|e| e.to_string())?;
    }
    bench::run_observed(&config, &workload, stop, observer).map_err(|e| e.to_string())
}

/// The warm-up, then the measured run with the tiers read at its ends: the measurement and each
/// tier's CPU over the window (`None` if a reading failed).
fn measure(
    lab: &Lab,
    addr: std::net::SocketAddr,
    tiers: Tiers,
    path: &str,
) -> Result<(Measurement, Option<Vec<std::time::Duration>>), String> {
    let window = TierWindow {
        tiers,
        start: Mutex::new(None),
        end: Mutex::new(None),
    };
    let run = run_load(lab, addr, path, true, &window)?;
    let start = window.start.into_inner().unwrap_or_else(|p| p.into_inner());
    let end = window.end.into_inner().unwrap_or_else(|p| p.into_inner());
    let (tier_cpu, span, client_cpu) = match (start, end) {
        (Some((t0, Ok(a), c0)), Some((t1, Ok(b), c1))) => {
            let cpu: Vec<Duration> = (a.iter().zip(&b))
                // Totals, not fields: a process's user/system split is a tick-ratio estimate
                // whose parts may each move either way between two readings.
                .map(|(a, b)| b.total().saturating_sub(a.total()))
                .collect();
            let client = c0.zip(c1).map(|(c0, c1)| c1.since(&c0).total());
            (Some(cpu), t1.duration_since(t0), client)
        }
        _ => (None, run.duration, None),
    };
    let m = Measurement {
        window: span,
        profile: None,
        profile_error: None,
        server_cpu: tier_cpu.as_ref().map(|t| t.iter().sum()),
        client_cpu,
        wire: None,
        run,
    };
    Ok((m, tier_cpu))
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_peers::PeerKind;

    /// Apache prefork's reason it has no CGI deployment, as long as it is.
    const LONG: &str = "apache-prefork has no cgi deployment in the lab (its mod_cgi forks each \
        program from the child that has the connection, in Apache's own cgroup, where the \
        programs cannot be told from Apache: CGI through Apache is measured on the event MPM, \
        mod_cgid)";

    #[test]
    fn a_long_reason_widens_no_column_of_the_results_table() {
        let mut t = table::Table::new([
            "server",
            "deployment",
            "test",
            "req/s",
            "p50 ms",
            "p99 ms",
            "web µs/req",
            "app µs/req",
            "db µs/req",
            "total µs/req",
            "errors",
        ]);
        let failed = |kind, deployment, why: &str| {
            ResultRow::dynamic_failed(kind, deployment, "fortunes", Database::Sqlite, why.into())
        };
        let long = failed(PeerKind::ApachePrefork, "cgi", LONG);
        let short = failed(PeerKind::Nginx, "php-fpm", "php-fpm is not installed");
        table_row(&mut t, &long, PeerKind::ApachePrefork, false);
        table_row(&mut t, &short, PeerKind::Nginx, false);
        let text = t.render();
        let lines: Vec<&str> = text.lines().collect();
        // The headers and the other rows as wide as their own cells.
        assert!(lines[0].chars().count() < 130, "{text}");
        assert!(lines[2].chars().count() < 80, "{text}");
        assert!(
            lines[2].ends_with("fortunes  php-fpm is not installed"),
            "{text}"
        );
        // The long reason runs on after its test, as it is.
        assert!(lines[1].ends_with(&format!("fortunes  {LONG}")), "{text}");
    }
}
