//! `flint compare`: a [`Plan`] (the same workload against several [`Endpoint`]s) is [`run`] in
//! turn, A B A B, round after round, telling its caller each [`Event`]; the [`Comparison`] it
//! returns has per [`Figure`] the median, min and max over the rounds, and the ratio to the
//! first target. `--serve` targets are [`LocalServer`]s, started and stopped here.
//!
//! It exists apart from `bench` because a comparison is many runs and their statistics, and
//! apart from the experiments because it measures any servers the user names, not peers the lab
//! configures.
//!
//! Why in turn and interleaved: two servers measured at the same time compete for the same cores
//! and measure each other; measured one after the other (A A A B B B), any drift of the machine
//! (CPU frequency, a background job, the page cache filling) lands on one server only and reads as
//! a difference between them. Interleaving spreads drift over all of them, and the median of the
//! rounds drops the one disturbed round. Min and max stay in the output: the ratio of two medians
//! means little when the rounds of one target differ by more than it.
//!
//! Each round is one complete `bench::run` (warm-up included) with the same options. `--serve`
//! servers are started before their first round and kept running until the end: stopping them
//! between rounds would make rounds more independent, but every round would then measure a cold
//! server (empty caches, lazy initialisation), which is rarely the question. A target that fails
//! (refuses connections, does not start, gets no response in a round) is reported with the reason
//! and left out of the later rounds; the others still run.
//!
//! Layout: `stats` (medians and ratios, pure), [`spec`] (`NAME=...` arguments), `server`
//! (`--serve` processes), `output` (the table and the JSON).

#![warn(missing_docs)]

mod output;
mod server;
pub mod spec;
mod stats;

pub use output::{json, record, table};
pub use server::{LocalServer, ServerError, ServerOptions, START_ATTEMPTS};
pub use spec::{NamedValue, SpecError};
pub use stats::{median, ratio, spread, Figure, Spread};

use bench::{BenchConfig, BenchError, Target, Workload};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// One server to measure, as the user named it.
#[derive(Debug, Clone)]
pub enum Endpoint {
    /// A server already running (`--target NAME=URL`).
    Url {
        /// Its name, labelling its rows in the table and the JSON.
        name: String,
        /// Where its rounds send their requests.
        target: Target,
    },
    /// A command flint runs and stops (`--serve NAME=COMMAND`).
    Serve {
        /// Its name, labelling its rows in the table and the JSON.
        name: String,
        /// The command as given, `{port}` not yet replaced.
        command: String,
    },
}

impl Endpoint {
    /// The name the user gave it.
    pub fn name(&self) -> &str {
        match self {
            Endpoint::Url { name, .. } | Endpoint::Serve { name, .. } => name,
        }
    }
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Plan {
    /// In order: the first is the baseline of the ratios.
    pub endpoints: Vec<Endpoint>,
    /// Measured rounds of each target (`--rounds`), taken in turn.
    pub rounds: usize,
    /// The options of every round; its `target` is replaced by each endpoint's.
    pub config: BenchConfig,
    /// The pages every round fetches, from every target.
    pub workload: Workload,
    /// How long a `--serve` command has to start, and to stop.
    pub server: ServerOptions,
    /// Where `--serve` commands write their output (one log file each).
    pub log_dir: PathBuf,
    /// Generate each round's load from these client hosts (`flint compare --hosts`); `None`:
    /// from this process.
    pub hosts: Option<HostsLoad>,
}

/// Client hosts for every round, as `flint bench --hosts` takes them (docs/hosts.md).
#[derive(Debug, Clone)]
pub struct HostsLoad {
    /// The client hosts, in the order given, each with its Webchildren when a hosts file says.
    pub hosts: Vec<bench::hosts::split::HostSpec>,
    /// `sh -c` template with `{host}`.
    pub template: String,
    /// Event-loop threads per worker; `None`: each worker's cores.
    pub threads: Option<usize>,
}

/// One round's load: from this process, or from the client hosts (a lost host fails the round:
/// a comparison of incomplete rounds would compare unequal loads).
fn run_round(
    plan: &Plan,
    config: &BenchConfig,
    stop: &AtomicBool,
) -> Result<bench::RunResult, Result<BenchError, String>> {
    use bench::hosts::coordinator::{self, HostsError, HostsRun};
    let Some(h) = &plan.hosts else {
        return bench::run(config, &plan.workload, stop).map_err(Ok);
    };
    let run = HostsRun {
        config,
        workload: &plan.workload,
        hosts: &h.hosts,
        template: &h.template,
        threads: h.threads,
        stop,
    };
    match coordinator::run(&run, &mut std::io::sink()) {
        Ok(o) if o.incomplete => {
            let lost: Vec<String> = o
                .hosts
                .iter()
                .filter_map(|h| Some(format!("{}: {}", h.name, h.reason.as_deref()?)))
                .collect();
            Err(Err(format!("a client host was lost ({})", lost.join("; "))))
        }
        Ok(o) => Ok(o.result),
        Err(HostsError::Input(e)) => Err(Ok(BenchError::Config(e.to_string()))),
        Err(e) => Err(Err(e.to_string())),
    }
}

/// How a target was given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A server already running (`--target`).
    Target,
    /// A command compare started (`--serve`).
    Serve,
}

/// What one target gave.
#[derive(Debug, Clone)]
pub struct TargetResult {
    /// The name the user gave it.
    pub name: String,
    /// Whether it was already running or started by compare.
    pub kind: Kind,
    /// `None` only for a `--serve` command that never started.
    pub url: Option<String>,
    /// The `--serve` command as run (`{port}` replaced once it is known).
    pub command: Option<String>,
    /// Why it failed; `None` if it did not.
    pub error: Option<String>,
    /// The bench `summary` of each measured round, in order.
    pub rounds: Vec<results::Summary>,
}

impl TargetResult {
    /// Whether it was measured to the end: no error took it out of the comparison.
    pub fn ok(&self) -> bool {
        self.error.is_none()
    }

    /// Median, min and max of `figure` over the rounds; `None` without a measured round.
    pub fn spread(&self, figure: Figure) -> Option<Spread> {
        let values: Vec<f64> = self.rounds.iter().map(|s| figure.of(s)).collect();
        stats::spread(&values)
    }
}

/// A finished (or interrupted) comparison.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// When the comparison began, before any server was started (the JSON's `started_at`).
    pub started_at: SystemTime,
    /// Rounds asked for.
    pub rounds: usize,
    /// The options of every round, as the plan gave them.
    pub config: BenchConfig,
    /// The pages every target served.
    pub workload: Workload,
    /// How long `--serve` commands had to start, and to stop.
    pub server: ServerOptions,
    /// One per endpoint, in the plan's order: the first is the baseline of the ratios.
    pub targets: Vec<TargetResult>,
    /// Ended early by `stop` (Ctrl-C): the rounds hold what was measured until then.
    pub interrupted: bool,
}

impl Comparison {
    /// `figure`'s ratio for target `i`: its median over the first target's (`None` if the first
    /// target failed or its median is 0).
    pub fn ratio(&self, i: usize, figure: Figure) -> Option<f64> {
        let first = self.targets.first().filter(|t| t.ok());
        let baseline = first.and_then(|t| t.spread(figure)).map(|s| s.median);
        let median = self.targets.get(i)?.spread(figure).map(|s| s.median);
        stats::ratio(median, baseline)
    }
}

/// What happens, as it happens (the CLI prints it).
#[derive(Debug)]
pub enum Event<'a> {
    /// A `--serve` command is being started.
    Starting {
        /// The target's name.
        name: &'a str,
        /// The command as given, `{port}` not yet replaced.
        command: &'a str,
    },
    /// It accepts connections.
    Started {
        /// The target's name.
        name: &'a str,
        /// The URL its rounds will fetch from (`http://127.0.0.1:PORT`).
        url: &'a str,
        /// The file its output goes to.
        log: &'a Path,
    },
    /// A round of a target is done; `summary` is its bench JSON summary. `interrupted`: cut
    /// short by `stop` (its figures cover the time it ran).
    Round {
        /// Which round, from 1.
        round: usize,
        /// Rounds asked for.
        rounds: usize,
        /// The target's name.
        name: &'a str,
        /// The round's figures.
        summary: &'a results::Summary,
        /// Whether `stop` cut it short.
        interrupted: bool,
    },
    /// A target is out of the comparison.
    Failed {
        /// The target's name.
        name: &'a str,
        /// Why, in one line (the error's text).
        error: &'a str,
    },
}

/// Why nothing could be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// The options or workload are unusable, for every target alike.
    #[error(transparent)]
    Bench(BenchError),
}

/// A target during the run: its result so far, its server, its options.
struct Slot<'p> {
    endpoint: &'p Endpoint,
    result: TargetResult,
    server: Option<LocalServer>,
    config: Option<BenchConfig>,
}

impl Slot<'_> {
    fn fail(&mut self, error: String, on_event: &mut dyn FnMut(Event<'_>)) {
        on_event(Event::Failed {
            name: &self.result.name,
            error: &error,
        });
        self.result.error = Some(error);
        self.server = None; // stopped now, not at the end
    }
}

/// Runs `plan`: every round, every target in order. `stop` (Ctrl-C) ends it early; what was
/// measured is returned. Servers started here are stopped before this returns, on every path.
pub fn run(
    plan: &Plan,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<Comparison, CompareError> {
    let started_at = SystemTime::now();
    let mut slots: Vec<Slot<'_>> = plan
        .endpoints
        .iter()
        .map(|endpoint| Slot {
            endpoint,
            result: TargetResult {
                name: endpoint.name().to_owned(),
                kind: match endpoint {
                    Endpoint::Url { .. } => Kind::Target,
                    Endpoint::Serve { .. } => Kind::Serve,
                },
                url: match endpoint {
                    Endpoint::Url { target, .. } => Some(target.url.clone()),
                    Endpoint::Serve { .. } => None,
                },
                command: match endpoint {
                    Endpoint::Url { .. } => None,
                    Endpoint::Serve { command, .. } => Some(command.clone()),
                },
                error: None,
                rounds: Vec::new(),
            },
            server: None,
            config: None,
        })
        .collect();
    let mut interrupted = false;
    'rounds: for round in 1..=plan.rounds {
        for (i, slot) in slots.iter_mut().enumerate() {
            if stop.load(Ordering::Relaxed) {
                interrupted = true;
                break 'rounds;
            }
            if !slot.result.ok() {
                continue;
            }
            if slot.config.is_none() {
                match prepare(plan, i, slot, stop, on_event) {
                    Ok(config) => slot.config = Some(config),
                    Err(Prepare::Interrupted) => {
                        interrupted = true;
                        break 'rounds;
                    }
                    Err(Prepare::Failed(error)) => {
                        slot.fail(error, on_event);
                        continue;
                    }
                }
            }
            if let Some(Err(e)) = slot.server.as_mut().map(LocalServer::check_running) {
                slot.fail(e.to_string(), on_event);
                continue;
            }
            let Some(config) = &slot.config else { continue };
            let result = match run_round(plan, config, stop) {
                Ok(result) => result,
                Err(Ok(e @ (BenchError::Config(_) | BenchError::Workload(_)))) => {
                    return Err(CompareError::Bench(e))
                }
                Err(Ok(e)) => {
                    slot.fail(e.to_string(), on_event);
                    continue;
                }
                Err(Err(why)) => {
                    slot.fail(why, on_event);
                    continue;
                }
            };
            let full = bench::report::record(&result);
            if result.stats.requests == 0 {
                if result.interrupted {
                    interrupted = true;
                    break 'rounds;
                }
                slot.fail(no_response(round, &full), on_event);
                continue;
            }
            let summary = full.summary;
            on_event(Event::Round {
                round,
                rounds: plan.rounds,
                name: &slot.result.name,
                summary: &summary,
                interrupted: result.interrupted,
            });
            slot.result.rounds.push(summary);
            if result.interrupted {
                interrupted = true;
                break 'rounds;
            }
        }
    }
    let targets = slots
        .into_iter()
        .map(|mut s| {
            s.server = None; // stop, in order
            s.result
        })
        .collect();
    Ok(Comparison {
        started_at,
        rounds: plan.rounds,
        config: plan.config.clone(),
        workload: plan.workload.clone(),
        server: plan.server,
        targets,
        interrupted,
    })
}

enum Prepare {
    Failed(String),
    Interrupted,
}

/// Before a target's first round: start its server, or check that its URL accepts a connection
/// (a target that refuses fails at once instead of after a whole round of refused connects).
fn prepare(
    plan: &Plan,
    index: usize,
    slot: &mut Slot<'_>,
    stop: &AtomicBool,
    on_event: &mut dyn FnMut(Event<'_>),
) -> Result<BenchConfig, Prepare> {
    let mut config = plan.config.clone();
    match slot.endpoint {
        Endpoint::Url { target, .. } => {
            let wait = config.connect_timeout.min(Duration::from_secs(5));
            if let Err(e) = TcpStream::connect_timeout(&target.addr, wait) {
                return Err(Prepare::Failed(format!(
                    "cannot connect to {}: {e}",
                    target.addr
                )));
            }
            config.target = target.clone();
        }
        Endpoint::Serve { name, command } => {
            on_event(Event::Starting { name, command });
            let log = plan.log_dir.join(log_name(index, name));
            let server = match LocalServer::start(command, &log, plan.server, stop) {
                Ok(server) => server,
                Err(ServerError::Interrupted) => return Err(Prepare::Interrupted),
                Err(e) => return Err(Prepare::Failed(e.to_string())),
            };
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, server.port()));
            let url = format!("http://{addr}");
            on_event(Event::Started {
                name,
                url: &url,
                log: server.log(),
            });
            config.target = Target::http(addr);
            slot.result.url = Some(url);
            slot.result.command = Some(server.command().to_owned());
            slot.server = Some(server);
        }
    }
    Ok(config)
}

/// `03-name.log`, the name reduced to characters safe in a file name.
fn log_name(index: usize, name: &str) -> String {
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{:02}-{safe}.log", index + 1)
}

/// Why a round without a single response failed, from its bench result (errors by kind).
fn no_response(round: usize, full: &results::BenchResult) -> String {
    let errors = full.summary.errors;
    let kinds: Vec<String> = full
        .errors_by_kind
        .iter()
        .filter(|&(_, &n)| n > 0)
        .map(|(k, n)| format!("{k} {n}"))
        .collect();
    if kinds.is_empty() {
        format!("no response in round {round} ({errors} errors)")
    } else {
        format!(
            "no response in round {round}: {errors} errors ({})",
            kinds.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn log_names_are_numbered_and_safe() {
        assert_eq!(log_name(0, "nginx"), "01-nginx.log");
        assert_eq!(log_name(11, "a/b c"), "12-a_b_c.log");
    }

    #[test]
    fn no_response_names_the_error_kinds() {
        let full: results::BenchResult = serde_json::from_value(json!({
            "summary": {"errors": 7},
            "errors_by_kind": {"connect_refused": 7, "reset": 0},
        }))
        .expect("a lenient bench result");
        assert_eq!(
            no_response(2, &full),
            "no response in round 2: 7 errors (connect_refused 7)"
        );
    }
}
