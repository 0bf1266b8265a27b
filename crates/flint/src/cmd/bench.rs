//! `flint bench`: the command line to a [`bench::BenchConfig`], a run, its reports, its exit code.
//!
//! Everything that can be wrong with the input is found before the run starts (options, the
//! workload, a `--profile` pid, threads and file descriptors against what this machine has), so
//! a mistake costs one line and exit status 2, never a run that measured nothing.

mod args;
pub mod hosts;
mod limits;
pub mod profile;

pub use args::{join_tls_version, BenchArgs, HttpArg, LoadArgs, ReportArg, TlsArg};
pub use limits::{default_threads, raise_open_files};

use crate::exit::{self, Status};
use crate::output::{self, Stream};
use anyhow::{bail, Context};
use bench::config::{TlsOptions, TlsVersion};
use bench::stats::{ErrorKind, GaveUp};
use bench::thresholds::Verdict;
use bench::{BenchConfig, BenchError, HttpMode, RunResult, Stop, Target, Workload};
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by Ctrl-C (and SIGTERM): the run ends early and still reports what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

pub fn bench(mut args: BenchArgs) -> anyhow::Result<ExitCode> {
    let url = server_url(&args)?;
    not_a_server(&url)?;
    let target = target_of(&args, &url)?;
    let default_reports = match args.workload {
        Some(_) => vec![ReportArg::Webstone, ReportArg::Summary],
        None => vec![ReportArg::Summary],
    };
    args.load.report.get_or_insert(default_reports);
    let load = &args.load;
    check_tls_options(&target, load)?;
    check_outputs(load)?;
    check_pipeline(load)?;
    let workload = if let Some(path) = &args.workload {
        if !args.paths.is_empty() {
            bail!("give either a workload (-w) or paths, not both");
        }
        let workload = Workload::load(path)?;
        if let Some(own) = &target.path {
            output::error_line(&format!(
                "flint: note: the URL's path `{own}` is not fetched: the workload (-w) names the files"
            ));
        }
        workload
    } else if !args.paths.is_empty() {
        // The URL's path is a file named too, as wrk and oha fetch it: the first page, then the
        // paths after it.
        let paths: Vec<String> = target.path.iter().chain(&args.paths).cloned().collect();
        Workload::from_paths(&paths)?
    } else {
        // The URL's own path, or `/` as wrk fetches for a bare `http://host:port`.
        let path = target.path.clone().unwrap_or_else(|| "/".into());
        Workload::from_paths(&[path])?
    };
    let mut workload = workload.with_defaults(&request_spec(&args)?)?;
    if workload.plan().is_some() {
        // What an application workload cannot run over (lanes, redirects while pipelining)
        // the runner refuses.
        workload.set_session(bench::app::plan::SessionOptions {
            cookies: !args.no_cookies,
            reset_per_page: args.reset_session,
        });
    } else if args.no_cookies || args.reset_session {
        bail!("--no-cookies and --reset-session are for application workloads (data, templates, expect, extract: docs/workload.md)");
    }
    if let Some(pid) = args.profile.and_then(|p| p.pid) {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            bail!("--profile {pid}: no process has that pid");
        }
    }
    let on_hosts = hosts::hosts_of(&args)?;
    let elsewhere =
        args.connect_to.is_some() || args.resolve.is_some() || args.unix_socket.is_some();
    if on_hosts.is_some() && elsewhere {
        bail!("--connect-to, --resolve and --unix-socket are not supported with --hosts yet: each worker connects to the URL's host");
    }
    // On many hosts the Webchildren's sockets are the workers': nothing to check here.
    let config = match on_hosts {
        Some(_) => bench_config(target, load),
        None => prepare(target, load, 0)?,
    };
    note_left_out_fields(&config, &workload);
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;
    if let Some(list) = on_hosts {
        return hosts::bench_on_hosts(&args, &config, &workload, &list, &STOP);
    }
    let profiler = match args.profile {
        Some(arg) => profile::ServerProfiler::prepare(arg, &config.target)?,
        None => None,
    };
    let (result, server_profile) = match profiler {
        Some(p) => {
            let result = bench::run_observed(&config, &workload, &STOP, &p).map_err(run_error)?;
            (result, p.finish())
        }
        None => (
            bench::run(&config, &workload, &STOP).map_err(run_error)?,
            None,
        ),
    };
    finish(&result, load, server_profile.as_ref(), None)
}

/// Over HTTP/2 and HTTP/3, the request fields that are not sent (connection-specific: RFC 9113
/// section 8.2.2, RFC 9114 section 4.2), named once at the start.
fn note_left_out_fields(config: &BenchConfig, workload: &Workload) {
    let (version, rule) = match config.http {
        HttpMode::Http2 => ("HTTP/2", "RFC 9113 section 8.2.2"),
        HttpMode::Http3 => ("HTTP/3", "RFC 9114 section 4.2"),
        _ => return,
    };
    let names = bench::client::H2Requests::left_out_fields(workload);
    if !names.is_empty() {
        output::error_line(&format!(
            "flint: note: {} not sent over {version}: connection-specific fields ({rule}; TE \
             only as `TE: trailers`)",
            names.join(", ")
        ));
    }
}

/// At most one result on stdout (`-`), no file written by two outputs (the last would overwrite
/// the other), and every file one can be written: checked before the run, so that a long run
/// is never lost to a typo in an output's path.
pub fn check_outputs(load: &LoadArgs) -> anyhow::Result<()> {
    super::check_outputs(&[
        ("--json", load.json.as_deref()),
        ("--log", load.log.as_deref()),
        ("--html", load.html.as_deref()),
    ])
}

/// `--pipeline` is HTTP/1.1's: it goes with `--http 1.1` (the default), not another version.
pub fn check_pipeline(load: &LoadArgs) -> anyhow::Result<()> {
    match (load.pipeline, load.http) {
        // Without N is a page's files at once; an N of 0 is no depth at all.
        (Some(Some(0)), _) => {
            bail!("--pipeline 0: requests in flight per connection must be 1 to 1000 (--pipeline alone writes each page's files at once)")
        }
        (Some(_), HttpArg::Http10) => {
            bail!("--pipeline needs --http 1.1: HTTP/1.0 closes the connection after each response")
        }
        (Some(_), HttpArg::Http2) => {
            bail!("--pipeline is HTTP/1.1's: over HTTP/2, --streams N keeps N requests in flight")
        }
        (Some(_), HttpArg::Http3) => {
            bail!("--pipeline is HTTP/1.1's: over HTTP/3, --streams N keeps N requests in flight")
        }
        _ => Ok(()),
    }
}

/// The URL given, or else the `origin` the workload (-w) names.
fn server_url(args: &BenchArgs) -> anyhow::Result<String> {
    if let Some(url) = &args.url {
        return Ok(url.clone());
    }
    let Some(path) = &args.workload else {
        bail!("give the server's URL: flint bench http://HOST:PORT/PATH (or -w FILE naming its origin)");
    };
    match Workload::origin_of(path)? {
        Some(origin) => match Target::parse_unresolved(&origin) {
            Ok(_) => Ok(origin),
            Err(e) => bail!("{}: origin `{origin}`: {e}", path.display()),
        },
        None => bail!(
            "give the server's URL: {} names no origin (flint bench http://HOST:PORT -w {0}, or \
             origin = \"http://HOST:PORT\" at the top of it)",
            path.display()
        ),
    }
}

/// The URL, sent where --connect-to or --resolve say, with -a's credentials.
fn target_of(args: &BenchArgs, url: &str) -> anyhow::Result<Target> {
    let mut target = match (&args.connect_to, &args.resolve, &args.unix_socket) {
        (Some(spec), _, _) => Target::parse_unresolved(url)?.connect_to(spec, false)?,
        (None, Some(spec), _) => Target::parse_unresolved(url)?.connect_to(spec, true)?,
        (None, None, Some(path)) => {
            let target = Target::parse_unresolved(url)?;
            if target.scheme == bench::Scheme::Https {
                bail!("--unix-socket: https:// over a Unix socket is not supported (http:// only)");
            }
            if !path.exists() {
                bail!("--unix-socket {}: no such socket", path.display());
            }
            Target {
                unix_socket: Some(path.clone()),
                ..target
            }
        }
        (None, None, None) => Target::parse(url)?,
    };
    if let Some(pair) = &args.basic_auth {
        if !pair.contains(':') {
            bail!("-a `{pair}`: expected USER:PASSWORD");
        }
        target = target.with_basic_auth(pair);
    }
    Ok(target)
}

/// A URL that is a bare number (`flint bench 100`, `-q 100 URL` as hey and oha write a rate,
/// `--tls 1.3` spelled apart from a URL it then took the place of) is refused, with the flag
/// that was probably meant: as a host it would be the address 0.0.0.100.
fn not_a_server(url: &str) -> anyhow::Result<()> {
    if url.parse::<f64>().is_ok() {
        bail!(
            "`{url}` is not a server: give the URL first (http://host:port/path); a rate is \
             --rate {url} (pages/s in all; hey's -q is per worker: -c 10 -q 100 is --rate 1000), \
             flint's -q is --quiet"
        );
    }
    Ok(())
}

/// TLS options with an `http://` URL: `--tls` asks for TLS and is refused; the certificate
/// options are harmless and get a note that they are not used.
pub fn check_tls_options(target: &Target, load: &LoadArgs) -> anyhow::Result<()> {
    if target.scheme == bench::Scheme::Https {
        return Ok(());
    }
    if load.tls.is_some() {
        bail!(
            "--tls: `{}` is http://; TLS is spoken to https:// URLs (write https://)",
            target.url
        );
    }
    let unused: Vec<&str> = [
        ("--cacert", load.cacert.is_some()),
        ("--insecure", load.insecure),
        ("--tls-resume", load.tls_resume),
        ("--early-data", load.early_data),
        ("--tls-ciphers", load.tls_ciphers.is_some()),
    ]
    .iter()
    .filter(|(_, given)| *given)
    .map(|(flag, _)| *flag)
    .collect();
    if !unused.is_empty() {
        output::error_line(&format!(
            "flint: note: {} not used: `{}` is http://",
            unused.join(", "),
            target.url
        ));
    }
    Ok(())
}

/// The engine's options for `load` against `target`, after the checks that need this machine:
/// threads beyond the Webchildren or the cores are lowered (with a note on stderr), and a run
/// the open-files limit cannot carry (`main` has raised it as far as it goes) is refused.
/// `server_sockets`: descriptors an embedded server in this process needs besides.
pub fn prepare(
    target: Target,
    load: &LoadArgs,
    server_sockets: u64,
) -> anyhow::Result<BenchConfig> {
    let (_, note) = limits::threads(load.threads, load.clients, cores());
    if let Some(note) = note {
        output::error_line(&format!("flint: note: {note}"));
    }
    let limit = limits::open_files();
    // Each Webchild's connections (`--connections-per-client`) are sockets of their own.
    let sockets = load.clients as u64 * load.connections_per_client as u64;
    limits::check_open_files(sockets + server_sockets, load.clients, limit)
        .map_err(anyhow::Error::msg)?;
    Ok(bench_config(target, load))
}

/// The engine's refusals before a start are bad input (exit 2); the rest happened while it ran.
pub fn run_error(err: BenchError) -> anyhow::Error {
    match err {
        BenchError::Config(_)
        | BenchError::Workload(_)
        | BenchError::LogCreate { .. }
        | BenchError::Tls(_) => err.into(),
        other => exit::failed(other),
    }
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// What `-m`, `-H`, `--body` and `--body-file` ask of every request.
fn request_spec(args: &BenchArgs) -> anyhow::Result<bench::RequestSpec> {
    let headers = args
        .headers
        .iter()
        .map(|h| bench::RequestSpec::parse_header(h).map_err(anyhow::Error::msg))
        .collect::<anyhow::Result<_>>()?;
    let body = match (&args.body, &args.body_file) {
        (Some(text), _) => Some(text.clone().into_bytes()),
        (None, Some(path)) => Some(
            std::fs::read(path)
                .with_context(|| format!("reading --body-file {}", path.display()))?,
        ),
        (None, None) => None,
    };
    Ok(bench::RequestSpec {
        method: args.method.clone(),
        headers,
        body,
    })
}

/// Ctrl-C and SIGTERM call `on_stop`; a second Ctrl-C is handled the same way (the run is
/// already ending and will print what it has).
pub fn install_stop_handler(on_stop: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    ctrlc::set_handler(on_stop).context("installing the Ctrl-C handler")
}

pub fn bench_config(target: Target, load: &LoadArgs) -> BenchConfig {
    let clients = load.clients.max(1);
    let (threads, _) = limits::threads(load.threads, clients, cores());
    let stop = match (load.pages, load.duration) {
        (Some(pages), _) => Stop::Pages(pages),
        (None, Some(d)) => Stop::Duration(d),
        (None, None) => Stop::Duration(Duration::from_secs(10)),
    };
    let http = match (load.pipeline, load.http) {
        (Some(_), _) => HttpMode::Pipeline,
        (None, HttpArg::Http10) => HttpMode::Http10,
        (None, HttpArg::Http11) => HttpMode::KeepAlive,
        (None, HttpArg::Http2) => HttpMode::Http2,
        (None, HttpArg::Http3) => HttpMode::Http3,
    };
    // `--pipeline N` and `--streams N` are the same knob: requests in flight per connection.
    let streams = load.pipeline.flatten().or(load.streams);
    BenchConfig {
        concurrency: clients,
        threads,
        stop,
        warmup: load.warmup.unwrap_or(Duration::ZERO),
        think: load.think,
        rate: load.rate,
        http,
        connections_per_child: load.connections_per_client,
        streams,
        h2_window: load.h2_window,
        connect_timeout: load.connect_timeout.unwrap_or(load.timeout),
        response_timeout: load.timeout,
        busy_poll: load.busy_poll,
        read_slack: load.read_slack,
        seed: load.seed,
        log: load.log.clone(),
        debug: load.debug,
        progress: !load.quiet && std::io::stderr().is_terminal(),
        tls: TlsOptions {
            cacert: load.cacert.clone(),
            insecure: load.insecure,
            resume: load.tls_resume,
            version: load.tls.and_then(|v| match v {
                TlsArg::Any => None,
                TlsArg::Tls12 => Some(TlsVersion::Tls12),
                TlsArg::Tls13 => Some(TlsVersion::Tls13),
            }),
            ciphers: load.tls_ciphers.as_ref().map(|c| c.0.clone()),
        },
        expect_status: load.expect_status.clone(),
        redirect: load.redirect,
        fail_fast: !load.no_fail_fast,
        h3_early_data: load.early_data,
        ..BenchConfig::new(target)
    }
}

/// Why the run stopped early (every attempt failed the same way), in one line with what to do
/// about it; `missing_files` says it instead of the usual hint when every response was a 4xx.
fn stopped_early(result: &RunResult, missing_files: Option<&str>) -> Option<String> {
    let gave_up = result.stats.gave_up?;
    let statuses = &result.stats.statuses;
    let missing = gave_up.kind == ErrorKind::Status4xx && GaveUp::files_missing(statuses);
    let hint = match missing_files.filter(|_| missing) {
        Some(files) => Some(files.to_owned()),
        None => gave_up.tls_hint(&result.config, &result.stats.tls_failures),
    };
    Some(gave_up.line(&result.config, statuses, hint.as_deref()))
}

/// Reports the run where they go, judges its thresholds, writes its files, and says how it
/// ended: interrupted, failed (not one response succeeded, or not one page of an application
/// workload completed), a threshold crossed, or completed.
/// `missing_files`: what a run that stopped early on 4xx responses should suggest (`flint run
/// --target` knows which files the server lacks), in place of the usual hint.
pub fn finish(
    result: &RunResult,
    load: &LoadArgs,
    server: Option<&lab_profile::Profile>,
    missing_files: Option<&str>,
) -> anyhow::Result<ExitCode> {
    let verdicts: Vec<Verdict> = load.thresholds.iter().map(|t| t.judge(result)).collect();
    let status = outcome(result, &verdicts);
    let stream = Stream::for_reports([
        load.json.as_deref(),
        load.log.as_deref(),
        load.html.as_deref(),
    ]);
    let mut text = reports(result, load, server);
    if !verdicts.is_empty() {
        text.push_str(&thresholds_block(&verdicts));
    }
    stream.write(&text).context("writing the report")?;
    if status == Status::Failed {
        output::error_line(&format!(
            "flint: the run failed: {}",
            failure(result, missing_files)
        ));
    }
    if load.json.is_some() || load.html.is_some() {
        let (requests, pages) = (result.stats.requests, result.stats.pages_done);
        let mut record = bench::report::record(result);
        record.server_profile = server.map(|p| p.record(requests, pages));
        if let (Some(stopped), Some(line)) = (
            record.stopped_early.as_mut(),
            stopped_early(result, missing_files),
        ) {
            stopped.reason = line;
        }
        let mut json = serde_json::to_value(&record)?;
        if let Some(obj) = json.as_object_mut() {
            if !verdicts.is_empty() {
                obj.insert("thresholds".into(), serde_json::to_value(&verdicts)?);
            }
        }
        super::write_outputs(&json, load.json.as_deref(), load.html.as_deref())
            .map_err(exit::failed)?;
    }
    Ok(status.into())
}

/// How a finished run ended, worst first: interrupted, failed (not one response succeeded, or
/// not one page of an application: every page that ended was abandoned), a threshold crossed,
/// completed.
pub fn outcome(result: &RunResult, verdicts: &[Verdict]) -> Status {
    if result.interrupted {
        Status::Interrupted
    } else if succeeded(result) == 0 || no_page_done(result) {
        Status::Failed
    } else if verdicts.iter().any(|v| !v.pass) {
        Status::ThresholdCrossed
    } else {
        Status::Completed
    }
}

/// Responses that came back complete with a status that is not an error (1xx to 3xx, as wrk
/// counts them, or those of `--expect-status`), redirects followed apart: their entry's final
/// response says whether it succeeded.
fn succeeded(result: &RunResult) -> u64 {
    let e = &result.stats.errors;
    let bad_status = ErrorKind::STATUSES.iter().map(|&k| e.get(k)).sum::<u64>();
    let final_responses = (result.stats.requests).saturating_sub(result.stats.redirects.followed);
    final_responses.saturating_sub(bad_status)
}

/// Whether an application workload's pages ended in the window and not one of them was done:
/// each was abandoned for an error (a check that failed, a request that could not be sent).
/// Responses may have succeeded (a login's), but the application's pages, what the run
/// measures, never did. A plain workload's page abandoned for a file that failed (a missing
/// image) is an error counted, as WebSTONE counts it, not a failed run: its responses that
/// succeeded are the measure.
fn no_page_done(result: &RunResult) -> bool {
    let abandoned: u64 = result.stats.pages.iter().map(|p| p.errors).sum();
    result.workload.app.0.is_some() && result.stats.pages_done == 0 && abandoned > 0
}

/// Why a run failed, as the errors it counted: `not one response succeeded (connect_refused 120)`,
/// or `not one page completed (...)`, and why it stopped early if it did.
fn failure(result: &RunResult, missing_files: Option<&str>) -> String {
    let kinds: Vec<String> = ErrorKind::ALL
        .iter()
        .filter(|&&k| result.stats.errors.get(k) > 0)
        .map(|&k| format!("{} {}", k.name(), result.stats.errors.get(k)))
        .collect();
    // The commonest reason a handshake failed, with what to do about it; and why the run
    // stopped early when every attempt failed the same way.
    let failures = &result.stats.tls_failures;
    let mut tls = match failures.seen().first() {
        Some((reason, n)) => format!(
            "; TLS: {n} {}: {}",
            reason.name(),
            reason.explain_for(&result.config.tls)
        ),
        None => String::new(),
    };
    if let Some(line) = stopped_early(result, missing_files) {
        tls.push_str(&format!("; {line}"));
    }
    let (what, none) = match succeeded(result) {
        0 => ("not one response succeeded", "no request completed"),
        _ => ("not one page completed", "every page was abandoned"),
    };
    if kinds.is_empty() {
        format!("{what} ({none})")
    } else {
        format!("{what} ({}){tls}", kinds.join(", "))
    }
}

fn thresholds_block(verdicts: &[Verdict]) -> String {
    let held = verdicts.iter().filter(|v| v.pass).count();
    let mut text = format!("\nThresholds: {held} of {} held\n", verdicts.len());
    for v in verdicts {
        text.push_str(&format!("  {v}\n"));
    }
    text
}

/// The reports asked for: `--report`, or what the command set as its default (the WebSTONE
/// report and the summary where none was set).
pub fn report_list(load: &LoadArgs) -> &[ReportArg] {
    const DEFAULT: &[ReportArg] = &[ReportArg::Webstone, ReportArg::Summary];
    load.report.as_deref().unwrap_or(DEFAULT)
}

/// The reports `load.report` asks for, then the server's profile if one was taken (also in the
/// JSON, as `server_profile`).
fn reports(result: &RunResult, load: &LoadArgs, server: Option<&lab_profile::Profile>) -> String {
    let report = report_list(load);
    let wants = |r: ReportArg| report.contains(&r) || report.contains(&ReportArg::All);
    let (requests, pages) = (result.stats.requests, result.stats.pages_done);
    // Each report, without its end notes; the notes once, after the last (the summary's indent
    // when it is last).
    let mut out = String::new();
    let mut indent = None;
    if wants(ReportArg::Webstone) {
        out.push_str(&bench::report::webstone_body(result));
        indent = Some("");
    }
    if wants(ReportArg::Ptester) {
        if indent.is_some() {
            out.push('\n');
        }
        out.push_str(&bench::report::ptester_body(result));
        indent = Some("");
    }
    if wants(ReportArg::Summary) {
        if indent.is_some() {
            out.push('\n');
        }
        out.push_str(&bench::report::summary_body(result));
        indent = Some("  ");
    }
    if let Some(indent) = indent {
        out.push_str(&bench::report::end_notes(result, indent));
    }
    if let Some(p) = server.filter(|_| report.iter().any(|r| *r != ReportArg::None)) {
        out.push('\n');
        out.push_str(&p.truss_table(requests, pages));
    }
    out
}
