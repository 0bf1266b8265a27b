//! `flint lab`: the papers' experiments on today's servers ([`lab_experiments`]).
//!
//! The flint peer is this very executable (`flint serve`), so the lab measures the flint that runs
//! it. Tables go to stdout as the measurements come, progress and warnings to stderr (so that
//! `flint lab all > lab.txt` still shows on the terminal where it is); `--json` writes the whole
//! run (docs/lab.md).

use super::bench::install_stop_handler;
use crate::output;
use anyhow::Context;
use lab_experiments::{self as experiments, Experiment, LabOptions, LabReport, PageMode};
use lab_peers::PeerKind;
use lab_profile::Method;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// `-d` and `--warmup`: a bare number is seconds, as in `flint run` and `flint bench`.
fn duration(text: &str) -> Result<Duration, String> {
    crate::duration::parse_or_seconds(text)
}

/// A round trip: `0` or a duration with its unit (`10ms`), at most 10 s: a bare `10` is refused
/// with `10ms` as the hint, a round trip in seconds being what nobody means.
fn rtt(text: &str) -> Result<Duration, String> {
    if text.trim() == "0" {
        return Ok(Duration::ZERO);
    }
    let d = crate::duration::parse_hinting(text, "ms")?;
    if d > Duration::from_secs(10) {
        return Err(format!("`{text}`: a round trip of at most 10s"));
    }
    Ok(d)
}

fn page_mode(text: &str) -> Result<PageMode, String> {
    text.parse()
}

fn server(text: &str) -> Result<PeerKind, String> {
    text.parse()
}

/// A test type of the dynamic experiment.
fn test_type(text: &str) -> Result<String, String> {
    match experiments::TEST_TYPES.iter().find(|t| **t == text) {
        Some(t) => Ok((*t).to_owned()),
        None => Err(format!(
            "unknown test type `{text}` (known: {})",
            experiments::TEST_TYPES.join(", ")
        )),
    }
}

fn database(text: &str) -> Result<experiments::Database, String> {
    text.parse()
}

fn deployment(text: &str) -> Result<experiments::Deployment, String> {
    text.parse()
}

fn method(text: &str) -> Result<Method, String> {
    text.parse()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExperimentArg {
    /// The page experiment (the Jigsaw syscall notes, grown): the microscape page fetched over
    /// HTTP/1.0, persistent, pipelined, four and six connections and HTTP/2, cleartext and TLS:
    /// syscalls, CPU, packets and bytes on the wire, page time; `--rtt` adds round trips.
    Syscalls,
    /// The IO-Lite paper: 40 clients, one document, 500 B to 200 KB: bandwidth per size.
    Sizes,
    /// The Content-MD5 measurements: 5 clients fetch a 6.5 MB file, digest on.
    Digest,
    /// Over HTTPS, with an ECDSA P-256 and an RSA-2048 certificate the lab makes: full and
    /// resumed handshakes per second, keep-alive syscalls per request, bandwidth per size.
    Tls,
    /// CGI and FastCGI against a static file: the reference application (flint-app) behind
    /// flint serve, nginx, Apache (event and prefork), lighttpd, h2o and Caddy (--servers),
    /// verified, then req/s, latency and CPU per request per tier; --deployments adds a proxied
    /// application and PHP.
    Dynamic,
    /// All of them in turn.
    All,
}

impl From<ExperimentArg> for Experiment {
    fn from(e: ExperimentArg) -> Self {
        match e {
            ExperimentArg::Syscalls => Experiment::Syscalls,
            ExperimentArg::Sizes => Experiment::Sizes,
            ExperimentArg::Digest => Experiment::Digest,
            ExperimentArg::Tls => Experiment::Tls,
            ExperimentArg::Dynamic => Experiment::Dynamic,
            ExperimentArg::All => Experiment::All,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct LabArgs {
    /// Which experiment (docs/lab.md).
    #[arg(value_enum)]
    pub experiment: ExperimentArg,
    /// Length of each measurement, after its warm-up (a bare number is seconds).
    #[arg(short, long, value_name = "DUR", value_parser = duration, default_value = "2s")]
    pub duration: Duration,
    /// Warm-up before each measurement, not counted (a bare number is seconds).
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "500ms")]
    pub warmup: Duration,
    /// Servers, comma-separated: flint, nginx, apache-prefork, apache-event, lighttpd, h2o,
    /// caddy (h2o and caddy: the syscalls and dynamic experiments only) [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = server)]
    pub servers: Vec<PeerKind>,
    /// The syscalls experiment's round trips, comma-separated (`0,10ms,50ms`): client and server
    /// in network namespaces, the delay by tc netem or, where the kernel lacks it, the lab's
    /// TUN delay line; over a round trip each measurement is 5 pages rather than `-d`
    /// [default: 0].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = rtt)]
    pub rtt: Vec<Duration>,
    /// The syscalls experiment's ways of fetching the page, comma-separated: http1.0,
    /// persistent, pipelined, http1.0-4, keepalive-6, h2, h3 (HTTP/3: TLS rows only; flint and
    /// caddy) [default: all].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = page_mode)]
    pub modes: Vec<PageMode>,
    /// Fetch this many pages per measurement instead of running for `-d`, in every experiment
    /// (the syscalls experiment over a round trip: 5 unless given).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pages: Option<u64>,
    /// The dynamic experiment's test types, comma-separated: plaintext, json, db, queries,
    /// fortunes, updates [default: plaintext,json,db,fortunes].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = test_type)]
    pub tests: Vec<String>,
    /// The dynamic experiment's deployments, comma-separated: static, cgi, fastcgi, proxy
    /// (flint-app), php-fpm, php-cgi, mod-php (the same test types in PHP; mod-php in Apache
    /// prefork only) [default: static,cgi,fastcgi].
    #[arg(long, value_name = "LIST", value_delimiter = ',', value_parser = deployment)]
    pub deployments: Vec<experiments::Deployment>,
    /// The dynamic experiment's database: sqlite (in the application) or postgres (a server
    /// started by the lab, its CPU a tier of its own) [default: sqlite].
    #[arg(long, value_name = "DB", value_parser = database)]
    pub db: Option<experiments::Database>,
    /// Write the results as JSON to this file.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Write the results as one self-contained HTML page with charts.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Do not trace the servers' syscalls (CPU time is still read); rates are then unaffected
    /// by the tracer.
    #[arg(long)]
    pub no_profile: bool,
    /// The tracer: perf (counts in the kernel, the server at full speed) or strace (times per
    /// syscall, the server several times slower) [default: perf if it works here, else strace].
    #[arg(long, value_name = "TRACER", value_parser = method, conflicts_with = "no_profile")]
    pub profile_method: Option<Method>,
}

/// The options `args` describe; the flint peer is this executable.
pub fn options(args: &LabArgs) -> anyhow::Result<LabOptions> {
    let exe = std::env::current_exe().context("finding the flint executable")?;
    let mut opts = LabOptions::new(Some(exe));
    opts.duration = args.duration;
    opts.warmup = args.warmup;
    if !args.servers.is_empty() {
        let mut servers = args.servers.clone();
        servers.dedup();
        opts.servers = servers;
    }
    if !args.rtt.is_empty() {
        let mut rtts = args.rtt.clone();
        rtts.sort();
        rtts.dedup();
        opts.rtts = rtts;
    }
    if !args.modes.is_empty() {
        let mut modes = args.modes.clone();
        dedup_keeping_order(&mut modes);
        opts.page_modes = modes;
    }
    opts.pages = args.pages;
    if !args.tests.is_empty() {
        let mut tests = args.tests.clone();
        dedup_keeping_order(&mut tests);
        opts.tests = tests;
    }
    if let Some(db) = args.db {
        opts.db = db;
    }
    if !args.deployments.is_empty() {
        let mut deployments = args.deployments.clone();
        dedup_keeping_order(&mut deployments);
        opts.deployments = deployments;
    }
    opts.profile = !args.no_profile;
    opts.method = args.profile_method;
    Ok(opts)
}

/// Runs the experiment, printing its tables; the report's [`LabReport::to_json`] is the JSON
/// document (for `--json`, and for any other renderer of the run).
pub fn run(args: &LabArgs) -> anyhow::Result<LabReport> {
    let opts = options(args)?;
    if opts.duration.is_zero() {
        anyhow::bail!("the duration must be positive");
    }
    let experiment = Experiment::from(args.experiment);
    foreign_flags(args, experiment)?;
    // Before the experiment (`lab all` takes about 18 minutes), not after it.
    super::check_outputs(&[
        ("--json", args.json.as_deref()),
        ("--html", args.html.as_deref()),
    ])?;
    left_out(args, experiment)?;
    let mut out = std::io::stdout().lock();
    let mut progress = std::io::stderr().lock();
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;
    let report = experiments::run(experiment, &opts, &mut out, &mut progress, &STOP)?;
    out.flush()?;
    if report.interrupted {
        writeln!(
            progress,
            "flint lab: interrupted: the last measurement is marked so and left out of the tables"
        )?;
    }
    Ok(report)
}

/// A flag of an experiment not run is refused rather than taken: it would shape nothing, yet
/// the result's `options` (every option that shaped the run) would record it.
fn foreign_flags(args: &LabArgs, experiment: Experiment) -> anyhow::Result<()> {
    let given = [
        ("--rtt", !args.rtt.is_empty(), Experiment::Syscalls),
        ("--modes", !args.modes.is_empty(), Experiment::Syscalls),
        ("--tests", !args.tests.is_empty(), Experiment::Dynamic),
        (
            "--deployments",
            !args.deployments.is_empty(),
            Experiment::Dynamic,
        ),
        ("--db", args.db.is_some(), Experiment::Dynamic),
    ];
    for (flag, given, owner) in given {
        if given && !experiment.parts().contains(&owner) {
            anyhow::bail!(
                "lab {} does not take {flag}: it is for lab {} or lab all",
                experiment.name(),
                owner.name()
            );
        }
    }
    Ok(())
}

/// A server of `--servers` that an experiment does not measure gets a note saying why; when
/// that leaves the experiment nothing to measure, it is refused before anything starts.
fn left_out(args: &LabArgs, experiment: Experiment) -> anyhow::Result<()> {
    let mut measured = args.servers.is_empty();
    for &part in experiment.parts() {
        for &kind in &args.servers {
            match LabOptions::left_out(kind, part) {
                Some(why) if experiment.parts().len() == 1 => {
                    output::error_line(&format!("flint lab: note: --servers {kind}: {why}"))
                }
                Some(_) => {}
                None => measured = true,
            }
        }
    }
    if !measured {
        let asked: Vec<String> = args.servers.iter().map(|k| k.to_string()).collect();
        anyhow::bail!(
            "lab {}: none of --servers {} is measured in it (see the notes above)",
            experiment.name(),
            asked.join(",")
        );
    }
    Ok(())
}

pub fn lab(args: LabArgs) -> anyhow::Result<ExitCode> {
    let report = run(&args)?;
    super::write_outputs(
        &report.to_json(),
        args.json.as_deref(),
        args.html.as_deref(),
    )?;
    if report.interrupted {
        return Ok(ExitCode::from(130));
    }
    if report.results.is_empty() {
        eprintln!("flint lab: no server could be measured (see the notes above)");
        return Ok(ExitCode::from(1));
    }
    // The rows that `pick` takes, named in one note after `what` when there are any.
    let note = |pick: fn(&lab_experiments::ResultRow) -> bool, what: &str| {
        let rows: Vec<String> = (report.results.iter())
            .filter(|r| pick(r))
            .map(row_name)
            .collect();
        if !rows.is_empty() {
            output::error_line(&format!(
                "flint lab: note: {} measurement{} {what}: {}",
                rows.len(),
                if rows.len() == 1 { "" } else { "s" },
                rows.join("; ")
            ));
        }
    };
    // A measurement without one response: its row says so (no figures), and so does this note,
    // for the eye that reads only the end.
    note(
        |r| r.measured_nothing() && r.requests == 0,
        "measured nothing (not one response)",
    );
    // A measurement whose requests failed in the window (a database gone): answers, but not
    // figures, so said apart from the rows that got none.
    note(
        |r| r.measured_nothing() && r.requests > 0,
        "failed in the window (its requests failed; no figures)",
    );
    if !report.results.iter().any(|r| r.measured()) {
        output::error_line("flint lab: nothing was measured (see the notes above)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// `flint sizes 5120 B`, `nginx dynamic php-cgi db`, `flint tls ecdsa-p256 full`: which measurement a row
/// is, in a few words.
fn row_name(row: &lab_experiments::ResultRow) -> String {
    format!("{} {}", row.server, row.what())
}

/// Drops the repeats of a list named on the command line (`json,db,json`), keeping the first
/// of each in place: each is measured once.
fn dedup_keeping_order<T: PartialEq + Clone>(list: &mut Vec<T>) {
    let mut kept: Vec<T> = Vec::with_capacity(list.len());
    for x in list.drain(..) {
        if !kept.contains(&x) {
            kept.push(x);
        }
    }
    *list = kept;
}

#[cfg(test)]
mod tests {
    #[test]
    fn repeats_named_apart_are_dropped_keeping_the_first() {
        let mut tests = vec!["json", "db", "json", "fortunes", "db"];
        super::dedup_keeping_order(&mut tests);
        assert_eq!(tests, ["json", "db", "fortunes"]);
    }
}
