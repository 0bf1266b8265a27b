//! The coordinator: the WebMASTER of the WebSTONE paper.
//!
//! It starts a worker on every host, hands each its slice of the run, waits for READY from all
//! of them ("Waiting for READY from 24 clients / All READYs received"), measures each one's clock
//! offset ([`super::clock`]), sends GO with a start a moment ahead in its own clock ("Sending GO
//! to all clients / All clients started at ..."), follows the run (live figures, heartbeats,
//! Ctrl-C), and merges what each returns exactly ("All clients ended at ..."). A host that cannot
//! start stops the run before it begins; a host lost during the run is named, the others finish,
//! and the merge of the rest is marked incomplete.
//!
//! This file is the run's steps in order; each step's work is in a file of its own beside it:
//! `start.rs` (hellos, orders, READYs, clock probes), `follow.rs` (GO to the last result),
//! `outcome.rs` (the merge, each host's record) and `host.rs` (a host's state, and the words
//! of its failures).

mod follow;
mod host;
mod outcome;
mod start;

use super::launch::Process;
use super::protocol::{self, ToWorker};
use super::split::{self, HostSpec, HostsInputError};
use crate::{BenchConfig, RunResult, Workload};
use host::{Host, Live, State};
use results::HostRecord;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A run on many hosts.
pub struct HostsRun<'a> {
    /// The whole run: `concurrency` is the total over the hosts (see [`split::assign`]), `rate`
    /// and `-n` pages are totals too.
    pub config: &'a BenchConfig,
    /// The whole workload; each host gets its share (an application's data rows split in
    /// proportion to its Webchildren).
    pub workload: &'a Workload,
    /// In the order given: a host's place in it chooses its Webchildren and its data rows.
    pub hosts: &'a [HostSpec],
    /// `sh -c` command with `{host}`; see [`split::DEFAULT_TEMPLATE`].
    pub template: &'a str,
    /// Event-loop threads per worker; `None`: each worker's own cores.
    pub threads: Option<usize>,
    /// Ctrl-C: every worker is stopped and what was measured is merged.
    pub stop: &'a AtomicBool,
}

/// What a run on many hosts measured.
#[derive(Debug)]
pub struct HostsOutcome {
    /// The exact merge of every host that finished (`config.concurrency`: all hosts').
    pub result: RunResult,
    /// Per host, in the order given.
    pub hosts: Vec<HostRecord>,
    /// Some host was lost: `result` is the merge of the others.
    pub incomplete: bool,
}

/// Why a run on many hosts did not run.
#[derive(Debug, thiserror::Error)]
pub enum HostsError {
    /// The hosts, their Webchildren or the launch template cannot be used; nothing started.
    #[error(transparent)]
    Input(#[from] HostsInputError),
    /// Named hosts could not start; nothing was sent to the target.
    #[error("the run did not start: {}", list(.0))]
    NotStarted(Vec<(String, String)>),
}

fn list(failed: &[(String, String)]) -> String {
    let each: Vec<String> = failed
        .iter()
        .map(|(h, why)| format!("{h}: {why}"))
        .collect();
    each.join("; ")
}

/// Runs `run` on its hosts; WebSTONE's lines and the live line go to `log` (stderr).
pub fn run(r: &HostsRun<'_>, log: &mut dyn Write) -> Result<HostsOutcome, HostsError> {
    if r.config.log.as_deref() == Some(std::path::Path::new("-")) {
        return Err(HostsInputError::LogToStdout.into());
    }
    let ranges = split::assign(r.hosts, r.config.concurrency)?;
    // Each host's own workload (an application's data rows split between them in proportion to
    // their Webchildren) is built as its orders are sent and dropped after: the coordinator
    // never holds every host's at once.
    let weights: Vec<usize> = ranges.iter().map(Range::len).collect();
    let commands = r
        .hosts
        .iter()
        .map(|h| split::launch_command(r.template, &h.name))
        .collect::<Result<Vec<_>, _>>()?;
    let total: usize = ranges.iter().map(Range::len).sum();
    let config = BenchConfig {
        concurrency: total,
        ..r.config.clone()
    };
    if r.hosts.iter().all(|h| h.webchildren.is_some()) && total != r.config.concurrency {
        let _ = writeln!(
            log,
            "{total} Webchildren, as the hosts file gives them (-c {} is not used)",
            r.config.concurrency
        );
    }
    let (tx, events) = mpsc::channel();
    let mut hosts = Vec::with_capacity(r.hosts.len());
    let mut failed = Vec::new();
    for (i, (spec, children)) in r.hosts.iter().zip(ranges).enumerate() {
        match Process::start(&commands[i], i, tx.clone()) {
            Ok(process) => hosts.push(Host {
                name: spec.name.clone(),
                place: i,
                children,
                log: r.config.log.as_ref().map(|path| {
                    let twice = r.hosts.iter().filter(|o| o.name == spec.name).count() > 1;
                    let place = twice.then_some(i + 1);
                    let path = super::name::log_path(path, &spec.name, place);
                    path.display().to_string()
                }),
                process,
                flint_version: None,
                state: State::Starting,
                last_heard: Instant::now(),
                probes: Vec::new(),
                ping_sent_unix_us: 0,
                offset: None,
                live: Live::default(),
            }),
            Err(e) => failed.push((spec.name.clone(), format!("cannot run sh: {e}"))),
        }
    }
    drop(tx);
    if let Some(path) = &r.config.log {
        let each = super::name::log_path(path, "HOST", None);
        let _ = writeln!(
            log,
            "Each host writes its log on its own machine, to {} (times in this machine's clock)",
            each.display()
        );
    }
    let _ = writeln!(log, "Waiting for READY from {} clients", hosts.len());
    let orders_for = |h: &Host| -> Result<ToWorker, String> {
        let workload = (r.workload.for_host(&weights, h.place))
            .map_err(|e| format!("its share of the workload: {e}"))?;
        Ok(start::orders(&config, r, h, workload))
    };
    start::start(&mut hosts, &events, orders_for, r.stop);
    not_started(&mut hosts, failed, r.stop)?;
    let _ = writeln!(log, "All READYs received");
    start::measure_clocks(&mut hosts, &events);
    // A pong refused (a worker of another build) fails its host here, before GO.
    not_started(&mut hosts, Vec::new(), r.stop)?;
    let max_rtt = hosts
        .iter()
        .filter_map(|h| h.offset)
        .map(|o| o.rtt_us)
        .max();
    // Far enough ahead that GO reaches every worker before the start.
    let lead_us = 500_000 + 4 * max_rtt.unwrap_or(0);
    let start_unix_us = protocol::unix_us() + lead_us;
    let _ = writeln!(log, "Sending GO to all clients");
    for h in &mut hosts {
        let go = ToWorker::Go {
            start_unix_us,
            clock_offset_us: h.offset.map_or(0, |o| o.offset_us),
        };
        h.process.send(&go);
        h.state = State::Running;
        h.last_heard = Instant::now();
    }
    let start_wall = UNIX_EPOCH + Duration::from_micros(start_unix_us);
    let _ = writeln!(
        log,
        "All clients started at {}",
        crate::report::rfc3339(start_wall)
    );
    follow::follow(&mut hosts, &events, r, log);
    let _ = writeln!(
        log,
        "All clients ended at {}",
        crate::report::rfc3339(SystemTime::now())
    );
    for h in &mut hosts {
        h.process.stop(Duration::from_secs(1));
    }
    let outcome = outcome::outcome(config, r, hosts, start_wall);
    for h in &outcome.hosts {
        if let Some(warning) = &h.warning {
            let _ = writeln!(log, "Warning: {}: {warning}", h.name);
        }
    }
    Ok(outcome)
}

/// Stops every worker when a host is not ready (`failed` holds those that could not even be
/// started) or Ctrl-C came: nothing was sent to the target.
fn not_started(
    hosts: &mut [Host],
    mut failed: Vec<(String, String)>,
    stop: &AtomicBool,
) -> Result<(), HostsError> {
    failed.extend(hosts.iter().filter_map(|h| match &h.state {
        State::Ready => None,
        State::Failed(why) => Some((h.name.clone(), why.clone())),
        _ => Some((h.name.clone(), "did not become ready".into())),
    }));
    if failed.is_empty() && !stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    if failed.is_empty() {
        failed.push(("coordinator".into(), "interrupted before GO".into()));
    }
    for h in hosts {
        h.process.stop(Duration::from_millis(500));
    }
    Err(HostsError::NotStarted(failed))
}
