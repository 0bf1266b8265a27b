//! `flint bench`: the command line to a [`bench::BenchConfig`], a run, and its reports.

mod args;
pub mod hosts;
pub mod profile;

use anyhow::{bail, Context};
pub use args::{BenchArgs, HttpArg, LoadArgs, ReportArg};
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::io::IsTerminal;
use std::net::ToSocketAddrs;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Set by Ctrl-C (and SIGTERM): the run ends early and still reports what it measured.
static STOP: AtomicBool = AtomicBool::new(false);

pub fn bench(args: BenchArgs) -> anyhow::Result<ExitCode> {
    let (target, url_path) = parse_target(&args.url)?;
    let workload = if let Some(path) = &args.workload {
        if !args.paths.is_empty() {
            bail!("give either a workload (-w) or paths, not both");
        }
        Workload::load(path)?
    } else if !args.paths.is_empty() {
        Workload::from_paths(&args.paths)?
    } else if let Some(path) = url_path {
        Workload::from_paths(&[path])?
    } else {
        bail!("nothing to fetch: name paths (flint bench URL /a.html /b.gif), a workload (-w FILE), or a path in the URL");
    };
    let on_hosts = hosts::hosts_of(&args)?;
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;
    let config = bench_config(target, &args.load);
    if let Some(list) = on_hosts {
        return hosts::bench_on_hosts(&args, &config, &workload, &list, &STOP);
    }
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
    Ok(ExitCode::SUCCESS)
}

/// Ctrl-C and SIGTERM call `on_stop`; a second Ctrl-C is handled the same way (the run is
/// already ending and will print what it has).
pub fn install_stop_handler(on_stop: impl Fn() + Send + 'static) -> anyhow::Result<()> {
    ctrlc::set_handler(on_stop).context("installing the Ctrl-C handler")
}

/// `http://host:port/path` into an address resolved once, the Host header, and the path if any.
pub fn parse_target(url: &str) -> anyhow::Result<(Target, Option<String>)> {
    let rest = match url.split_once("://") {
        Some(("http", rest)) => rest,
        Some((scheme, _)) => bail!("`{url}`: only http:// is supported, not {scheme}://"),
        None => url,
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], Some(&rest[i..])),
        None => (rest, None),
    };
    if authority.is_empty() {
        bail!("`{url}`: no host");
    }
    let with_port = if authority
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        && !authority.ends_with(']')
    {
        authority.to_string()
    } else {
        format!("{authority}:80")
    };
    let addr = with_port
        .to_socket_addrs()
        .with_context(|| format!("resolving `{authority}`"))?
        .next()
        .with_context(|| format!("`{authority}` resolves to no address"))?;
    let path = path.filter(|p| *p != "/").map(str::to_string);
    let target = Target {
        addr,
        host: authority.to_string(),
        url: url.to_string(),
    };
    Ok((target, path))
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
        target,
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
    }
}

pub fn print_reports(result: &RunResult, load: &LoadArgs) -> anyhow::Result<()> {
    print_reports_with(result, load, None)
}

/// The text reports --report asks for, on stdout.
pub fn print_text_reports(result: &RunResult, load: &LoadArgs) {
    let wants = |r: ReportArg| load.report.contains(&r) || load.report.contains(&ReportArg::All);
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
    print!("{out}");
}

/// The reports, then the server's profile if one was taken (also in the JSON, as
/// `server_profile`).
pub fn print_reports_with(
    result: &RunResult,
    load: &LoadArgs,
    server: Option<&lab::profile::Profile>,
) -> anyhow::Result<()> {
    let (requests, pages) = (result.stats.requests, result.stats.pages_done);
    print_text_reports(result, load);
    if let Some(p) = server.filter(|_| load.report.iter().any(|r| *r != ReportArg::None)) {
        print!("\n{}", p.truss_table(requests, pages));
    }
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

#[cfg(test)]
mod tests {
    use super::parse_target;

    #[test]
    fn target_url_gives_address_host_and_path() {
        let (t, path) = parse_target("http://127.0.0.1:8080/x.html").unwrap();
        assert_eq!(t.addr.to_string(), "127.0.0.1:8080");
        assert_eq!(t.host, "127.0.0.1:8080");
        assert_eq!(path.as_deref(), Some("/x.html"));
        let (t, path) = parse_target("127.0.0.1").unwrap();
        assert_eq!(t.addr.port(), 80);
        assert_eq!(path, None);
    }

    #[test]
    fn https_is_refused_with_a_reason() {
        let err = parse_target("https://127.0.0.1/").unwrap_err().to_string();
        assert!(err.contains("only http://"), "{err}");
    }
}
