//! `flint bench`: the command line to a [`bench::BenchConfig`], a run, and its reports.

mod args;
pub mod profile;

use anyhow::{bail, Context};
pub use args::{BenchArgs, HttpArg, LoadArgs, ReportArg, TlsArg};
use bench::config::{TlsOptions, TlsVersion};
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by Ctrl-C (and SIGTERM): the run ends early and still reports what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let target = Target::parse(&args.url)?;
    let workload = if let Some(path) = &args.workload {
        if !args.paths.is_empty() {
            bail!("give either a workload (-w) or paths, not both");
        }
        Workload::load(path)?
    } else if !args.paths.is_empty() {
        Workload::from_paths(&args.paths)?
    } else {
        // The URL's own path, or `/` as wrk fetches for a bare `http://host:port`.
        let path = target.path.clone().unwrap_or_else(|| "/".into());
        Workload::from_paths(&[path])?
    };
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;
    let config = bench_config(target, &args.load);
    let profiler = match args.profile {
        Some(arg) => profile::ServerProfiler::prepare(arg, &config.target)?,
        None => None,
    };
    let (result, server_profile) = match profiler {
        Some(p) => {
            let result = bench::run_observed(&config, &workload, &STOP, &p)?;
            (result, p.finish())
        }
        None => (bench::run(&config, &workload, &STOP)?, None),
    };
    print_reports_with(&result, &args.load, server_profile.as_ref())?;
    if !result.interrupted && successes(&result) == 0 {
        eprintln!("flint: no request succeeded (errors by kind above)");
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

/// Responses with a 2xx status: a run with none measured nothing worth a zero exit status.
fn successes(result: &RunResult) -> u64 {
    use bench::stats::ErrorKind;
    let e = &result.stats.errors;
    let statuses = [
        ErrorKind::Status1xx,
        ErrorKind::Status3xx,
        ErrorKind::Status4xx,
        ErrorKind::Status5xx,
    ];
    let not_ok: u64 = statuses.iter().map(|&k| e.get(k)).sum();
    result.stats.requests.saturating_sub(not_ok)
}

/// Ctrl-C and SIGTERM call `on_stop`; a second Ctrl-C is handled the same way (the run is
/// already ending and will print what it has).
pub fn install_stop_handler(on_stop: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    ctrlc::set_handler(on_stop).context("installing the Ctrl-C handler")
}

pub fn bench_config(target: Target, load: &LoadArgs) -> BenchConfig {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let clients = load.clients.max(1);
    let threads = load.threads.unwrap_or(cores).clamp(1, clients);
    let stop = match (load.pages, load.duration) {
        (Some(pages), _) => Stop::Pages(pages),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    let http = match (load.pipeline, load.http) {
        (true, _) => HttpMode::Pipeline,
        (false, HttpArg::Http10) => HttpMode::Http10,
        (false, HttpArg::Http11) => HttpMode::KeepAlive,
    };
    BenchConfig {
        concurrency: clients,
        threads,
        stop,
        warmup: load.warmup.unwrap_or(Duration::ZERO),
        think: load.think,
        rate: load.rate,
        http,
        connect_timeout: load.connect_timeout.unwrap_or(load.timeout),
        response_timeout: load.timeout,
        seed: load.seed,
        log: load.log.clone(),
        debug: load.debug,
        progress: !load.quiet && std::io::stderr().is_terminal(),
        tls: TlsOptions {
            cacert: load.cacert.clone(),
            insecure: load.insecure,
            resume: load.tls_resume,
            version: load.tls.map(|v| match v {
                TlsArg::Tls12 => TlsVersion::Tls12,
                TlsArg::Tls13 => TlsVersion::Tls13,
            }),
        },
        ..BenchConfig::new(target)
    }
}

pub fn print_reports(result: &RunResult, load: &LoadArgs) -> anyhow::Result<()> {
    print_reports_with(result, load, None)
}

/// The reports, then the server's profile if one was taken (also in the JSON, as
/// `server_profile`).
pub fn print_reports_with(
    result: &RunResult,
    load: &LoadArgs,
    server: Option<&lab::profile::Profile>,
) -> anyhow::Result<()> {
    let wants = |r: ReportArg| load.report.contains(&r) || load.report.contains(&ReportArg::All);
    let (requests, pages) = (result.stats.requests, result.stats.pages_done);
    let mut out = String::new();
    if wants(ReportArg::Webstone) {
        out.push_str(&bench::report::webstone(result));
        out.push('\n');
    }
    if wants(ReportArg::Ptester) {
        out.push_str(&bench::report::ptester(result));
        out.push('\n');
    }
    if wants(ReportArg::Summary) {
        out.push_str(&bench::report::summary(result));
    }
    if let Some(p) = server.filter(|_| load.report.iter().any(|r| *r != ReportArg::None)) {
        out.push('\n');
        out.push_str(&p.truss_table(requests, pages));
    }
    print!("{out}");
    if load.json.is_none() && load.html.is_none() {
        return Ok(());
    }
    let mut json = bench::report::json(result);
    if let (Some(p), Some(obj)) = (server, json.as_object_mut()) {
        obj.insert("server_profile".into(), p.to_json(requests, pages));
    }
    super::write_outputs(&json, load.json.as_deref(), load.html.as_deref())?;
    Ok(())
}
