//! `flint compare`: the command line to a [`lab_compare::Plan`], a run, the table and the JSON.
//!
//! The load options are `flint bench`'s ([`LoadArgs`], turned into a config by the same
//! [`bench_config`]), so a comparison measures exactly what `flint bench` would, once per target
//! and round. `--target` and `--serve` keep their command-line order (the first is the baseline of
//! the ratios): clap's derive gives two separate lists, so [`CompareArgs`] implements
//! `FromArgMatches` itself to merge them by the index clap records for each value.

use super::bench::{bench_config, install_stop_handler, LoadArgs, ReportArg};
use crate::exit::Status;
use anyhow::{bail, Context};
use bench::{Target, Workload};
use clap::{ArgMatches, Args, FromArgMatches};
use lab_compare::{self as compare, spec, Endpoint, Event, Figure, NamedValue, ServerOptions};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static STOP: AtomicBool = AtomicBool::new(false);

/// As the load options': a bare number is seconds; a wait of 0 (`0`, `0s`) is refused.
use crate::duration::positive as positive_duration;

/// `NAME=URL`, or a URL alone (as `flint bench` takes it), named by what follows its scheme
/// (`127.0.0.1:8080/a.html`). A URL's own `=` (in a query) does not make it a name.
fn target_arg(text: &str) -> Result<NamedValue, String> {
    let named = text
        .split_once('=')
        .is_some_and(|(name, _)| !name.contains("://") && !name.contains('/'));
    if named {
        return spec::parse_target(text).map_err(|e| e.to_string());
    }
    let name = text.split_once("://").map_or(text, |(_, rest)| rest);
    Ok(NamedValue {
        name: name.trim_end_matches('/').to_owned(),
        value: text.to_owned(),
    })
}

fn serve_arg(text: &str) -> Result<NamedValue, String> {
    spec::parse_serve(text).map_err(|e| e.to_string())
}

/// The options as clap declares them; [`CompareArgs`] adds the order of the targets.
#[derive(Debug, Args)]
#[command(
    group(clap::ArgGroup::new("servers").required(true).multiple(true).args(["targets", "serves"])),
    after_help = "The load options are flint bench's, applied to every round. For compare: --json \
        writes the comparison (docs/compare.md), --html the same as a page with charts, --report none prints no table (any other value: \
        the table), --log and --threshold are refused. Exit status 1 when a target failed, 130 when interrupted.\n\n\
        Example:\n  flint compare --target old=http://127.0.0.1:8080 \\\n    \
        --serve 'new=flint serve www --listen 127.0.0.1:{port}' /index.html -d 10s --rounds 5"
)]
pub struct CompareFlags {
    /// A running server: NAME=http://HOST:PORT, or the URL alone (named by its host, port and
    /// path). Repeat; the first target is the baseline of the ratios. Targets and --serve
    /// commands run in the order given. A URL's path is fetched when no files are named.
    #[arg(long = "target", value_name = "NAME=URL", value_parser = target_arg)]
    pub targets: Vec<NamedValue>,
    /// A server flint starts and stops: NAME=COMMAND, run with `sh -c` in its own process group,
    /// `{port}` replaced by a free loopback port (its URL is then http://127.0.0.1:PORT).
    /// Started before its first round, kept running until the end, stopped with SIGTERM (then
    /// SIGKILL). Example: --serve 'flint=flint serve www --listen 127.0.0.1:{port}'
    #[arg(long = "serve", value_name = "NAME=COMMAND", value_parser = serve_arg)]
    pub serves: Vec<NamedValue>,
    /// Files to fetch: one page each, equal weights.
    #[arg(value_name = "PATH")]
    pub paths: Vec<String>,
    /// Workload file: TOML pages, or an original WebSTONE filelist.
    #[arg(short = 'w', long, value_name = "FILE")]
    pub workload: Option<PathBuf>,
    /// Rounds: each target is measured once per round, in turn (A B A B ...).
    #[arg(long, value_name = "N", default_value_t = 3,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,
    /// How long a --serve command has to accept a connection (a bare number is seconds; not
    /// 0).
    #[arg(long, value_name = "DUR", value_parser = positive_duration, default_value = "10s")]
    pub serve_timeout: Duration,
    /// Generate every round's load from these client hosts, as flint bench --hosts does
    /// (docs/hosts.md); a round that loses a host fails.
    #[arg(long, value_name = "H1,H2,...", conflicts_with = "hosts_file")]
    pub hosts: Option<String>,
    /// Client hosts from a file: one a line, optionally followed by its number of Webchildren.
    #[arg(long, value_name = "FILE")]
    pub hosts_file: Option<PathBuf>,
    /// How to start a worker on a host [default: ssh -o BatchMode=yes {host} flint worker].
    #[arg(long, value_name = "TEMPLATE")]
    pub launch: Option<String>,
    #[command(flatten)]
    pub load: LoadArgs,
}

/// `flint compare`'s arguments: the flags, and the targets merged in command-line order.
#[derive(Debug)]
pub struct CompareArgs {
    pub flags: CompareFlags,
    pub servers: Vec<Server>,
}

/// A `--target` or `--serve` argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Server {
    Target(NamedValue),
    Serve(NamedValue),
}

impl Server {
    fn spec(&self) -> &NamedValue {
        match self {
            Server::Target(s) | Server::Serve(s) => s,
        }
    }
}

/// `--target` and `--serve` values in the order they were typed.
fn in_order(m: &ArgMatches, flags: &CompareFlags) -> Vec<Server> {
    let indices = |id: &str| {
        m.indices_of(id)
            .map_or(Vec::new(), |i| i.collect::<Vec<_>>())
    };
    let mut all: Vec<(usize, Server)> = indices("targets")
        .into_iter()
        .zip(flags.targets.iter().cloned().map(Server::Target))
        .chain(
            indices("serves")
                .into_iter()
                .zip(flags.serves.iter().cloned().map(Server::Serve)),
        )
        .collect();
    all.sort_by_key(|(i, _)| *i);
    all.into_iter().map(|(_, s)| s).collect()
}

/// Names label rows and JSON entries: each must be unique.
fn check_names(servers: &[Server]) -> Result<(), spec::SpecError> {
    spec::check_unique(servers.iter().map(|s| s.spec().name.as_str()))
}

impl FromArgMatches for CompareArgs {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let flags = CompareFlags::from_arg_matches(m)?;
        let servers = in_order(m, &flags);
        Ok(CompareArgs { flags, servers })
    }

    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.flags.update_from_arg_matches(m)?;
        self.servers = in_order(m, &self.flags);
        Ok(())
    }
}

impl Args for CompareArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        hide_refused(CompareFlags::augment_args(cmd))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        hide_refused(CompareFlags::augment_args_for_update(cmd))
    }
}

/// The load options compare refuses (`compare` says why when they are given) are not offered
/// in its `--help`.
fn hide_refused(cmd: clap::Command) -> clap::Command {
    cmd.mut_arg("log", |a| a.hide(true))
        .mut_arg("thresholds", |a| a.hide(true))
}

pub fn compare(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let CompareArgs { flags, servers } = args;
    check_names(&servers)?;
    let load = &flags.load;
    if load.log.is_some() {
        bail!("--log is not supported by compare (one log per round and target would overwrite each other): use flint bench --log");
    }
    if !load.thresholds.is_empty() {
        bail!("--threshold is not supported by compare (it judges one run): use flint bench --threshold");
    }
    super::bench::check_pipeline(load)?;
    super::check_outputs(&[
        ("--json", load.json.as_deref()),
        ("--html", load.html.as_deref()),
    ])?;
    let targets = servers
        .into_iter()
        .map(|s| match s {
            Server::Target(NamedValue { name, value }) => {
                let target = Target::parse(&value).with_context(|| format!("--target {name}"))?;
                Ok((Some(target), name, value))
            }
            Server::Serve(NamedValue { name, value }) => Ok((None, name, value)),
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let url_paths: Vec<(&str, &str)> = targets
        .iter()
        .filter_map(|(t, name, _)| Some((name.as_str(), t.as_ref()?.path.as_deref()?)))
        .collect();
    let workload = match (&flags.workload, flags.paths.is_empty()) {
        (Some(_), false) => bail!("give either a workload (-w) or paths, not both"),
        (_, false) | (Some(_), true) if !url_paths.is_empty() => {
            let (name, path) = url_paths[0];
            bail!("--target {name}: the URL's path `{path}` is fetched only when no files are named (PATH arguments or -w): drop one or the other")
        }
        (Some(path), true) => Workload::load(path)?,
        (None, false) => Workload::from_paths(&flags.paths)?,
        // As flint bench: the URLs' path, or `/`; one workload for every target, so one path.
        (None, true) => match url_paths.as_slice() {
            [] => Workload::from_paths(&["/".to_owned()])?,
            [(_, path), rest @ ..] if rest.iter().all(|(_, p)| p == path) => {
                Workload::from_paths(&[(*path).to_owned()])?
            }
            [(a, pa), rest @ ..] => {
                let (b, pb) = rest.iter().find(|(_, p)| p != pa).expect("one differs");
                bail!("--target {a} fetches `{pa}` and --target {b} `{pb}`: every target is measured on the same files; name them as PATH arguments")
            }
        },
    };
    let endpoints = targets
        .into_iter()
        .map(|(target, name, value)| match target {
            Some(target) => Endpoint::Url { name, target },
            None => Endpoint::Serve {
                name,
                command: value,
            },
        })
        .collect::<Vec<_>>();
    // The template of every round; lab_compare replaces its target with each endpoint's.
    let placeholder = Target::http(([127, 0, 0, 1], 0).into());
    let log_dir = tempfile::Builder::new()
        .prefix("flint-compare-")
        .tempdir()
        .context("creating a temporary directory for server logs")?;
    let plan = compare::Plan {
        endpoints,
        rounds: flags.rounds as usize,
        config: bench_config(placeholder, load),
        workload,
        server: ServerOptions {
            ready_timeout: flags.serve_timeout,
            ..ServerOptions::default()
        },
        log_dir: log_dir.path().to_owned(),
        hosts: super::bench::hosts::named_hosts(
            flags.hosts.as_deref(),
            flags.hosts_file.as_deref(),
            flags.launch.as_deref(),
        )?
        .map(|hosts| compare::HostsLoad {
            hosts,
            template: flags
                .launch
                .clone()
                .unwrap_or_else(|| bench::hosts::split::DEFAULT_TEMPLATE.to_owned()),
            threads: load.threads,
        }),
    };
    install_stop_handler(|| STOP.store(true, Ordering::Relaxed))?;
    let quiet = load.quiet;
    let mut on_event = |e: Event<'_>| {
        if let Some(line) = event_line(&e).filter(|_| !quiet || matches!(e, Event::Failed { .. })) {
            eprintln!("{line}");
        }
    };
    let result = compare::run(&plan, &STOP, &mut on_event)?;
    if !super::bench::report_list(load).contains(&ReportArg::None) {
        print!("{}", compare::table(&result));
    }
    super::write_outputs(
        &compare::json(&result),
        load.json.as_deref(),
        load.html.as_deref(),
    )?;
    // A failed target makes the comparison incomplete: scripts should notice.
    let status = if result.interrupted {
        Status::Interrupted
    } else if result.targets.iter().all(|t| t.ok()) {
        Status::Completed
    } else {
        Status::Failed
    };
    Ok(status.into())
}

/// The line printed on stderr for an event.
fn event_line(e: &Event<'_>) -> Option<String> {
    Some(match e {
        Event::Starting { name, command } => {
            format!("flint compare: starting {name}: sh -c '{command}'")
        }
        Event::Started { name, url, .. } => {
            format!("flint compare: {name} accepts connections at {url}")
        }
        Event::Round {
            round,
            rounds,
            name,
            summary,
            interrupted,
        } => {
            let f = |fig: Figure| fig.display(fig.of(summary));
            format!(
                "round {round}/{rounds}  {name}: {} requests/s, {} MB/s, p50 {} ms, p99 {} ms, {} errors{}",
                f(Figure::RequestsPerS),
                f(Figure::ThroughputBytesPerS),
                f(Figure::ResponseP50Ms),
                f(Figure::ResponseP99Ms),
                f(Figure::Errors),
                if *interrupted { " (interrupted)" } else { "" },
            )
        }
        Event::Failed { name, error } => format!("flint compare: {name} failed: {error}"),
    })
}

#[cfg(test)]
mod tests {
    use super::Server;
    use clap::Parser;

    /// `flint compare`'s arguments on their own.
    #[derive(Debug, Parser)]
    struct Compare {
        #[command(flatten)]
        args: super::CompareArgs,
    }

    fn parse(args: &[&str]) -> Result<super::CompareArgs, clap::Error> {
        let argv = ["compare"].iter().chain(args);
        Ok(Compare::try_parse_from(argv)?.args)
    }

    fn names(a: &super::CompareArgs) -> Vec<String> {
        a.servers
            .iter()
            .map(|s| match s {
                Server::Target(v) => format!("target:{}", v.name),
                Server::Serve(v) => format!("serve:{}", v.name),
            })
            .collect()
    }

    #[test]
    fn targets_and_serves_keep_command_line_order() {
        let a = parse(&[
            "--serve",
            "a=x {port}",
            "--target",
            "b=http://127.0.0.1:1",
            "--serve",
            "c=y {port}",
            "--target",
            "d=http://127.0.0.1:2",
            "/x.html",
        ])
        .unwrap();
        assert_eq!(names(&a), ["serve:a", "target:b", "serve:c", "target:d"]);
        assert_eq!(a.flags.rounds, 3);
        assert_eq!(a.flags.paths, ["/x.html"]);
    }

    #[test]
    fn duplicate_names_are_refused_across_target_and_serve() {
        let a = parse(&["--target", "a=http://127.0.0.1:1", "--serve", "a=x {port}"]).unwrap();
        let err = super::check_names(&a.servers).unwrap_err().to_string();
        assert!(err.contains("`a` is given twice"), "{err}");
        let a = parse(&["--target", "a=http://127.0.0.1:1", "--serve", "b=x {port}"]).unwrap();
        assert!(super::check_names(&a.servers).is_ok());
    }

    #[test]
    fn a_url_alone_is_named_by_itself_and_an_empty_name_is_a_usage_error() {
        let a = parse(&["--target", "http://127.0.0.1:1/a?x=1"]).unwrap();
        assert_eq!(a.servers[0].spec().name, "127.0.0.1:1/a?x=1");
        assert_eq!(a.servers[0].spec().value, "http://127.0.0.1:1/a?x=1");
        let a = parse(&["--target", "b=http://127.0.0.1:1/"]).unwrap();
        assert_eq!(a.servers[0].spec().name, "b");
        let err = parse(&["--target", "=http://127.0.0.1:1"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("name before `=` is empty"), "{err}");
    }

    #[test]
    fn at_least_one_server_and_one_round_are_required() {
        assert!(parse(&["/x.html"]).is_err());
        assert!(parse(&["--target", "a=http://127.0.0.1:1", "--rounds", "0"]).is_err());
    }

    #[test]
    fn bench_load_options_are_accepted() {
        let a = parse(&[
            "--target",
            "a=http://127.0.0.1:1",
            "-c",
            "4",
            "-d",
            "300ms",
            "--http",
            "1.0",
            "--json",
            "out.json",
            "--rounds",
            "5",
        ])
        .unwrap();
        assert_eq!(a.flags.load.clients, 4);
        assert_eq!(a.flags.rounds, 5);
        assert_eq!(
            a.flags.load.json.as_deref(),
            Some(std::path::Path::new("out.json"))
        );
    }
}
