//! The coordinator: the WebMASTER of the WebSTONE paper.
//!
//! It starts a worker on every host, hands each its slice of the run, waits for READY from all
//! of them ("Waiting for READY from 24 clients / All READYs received"), measures each one's clock
//! offset ([`super::clock`]), sends GO with a start a moment ahead in its own clock ("Sending GO
//! to all clients / All clients started at ..."), follows the run (live figures, heartbeats,
//! Ctrl-C), and merges what each returns exactly ("All clients ended at ..."). A host that cannot
//! start stops the run before it begins; a host lost during the run is named, the others finish,
//! and the merge of the rest is marked incomplete.

use super::clock::{self, Probe};
use super::launch::{Event, Process, Said};
use super::protocol::{
    self, Orders, RunOrders, ToCoordinator, ToWorker, WorkerResult, FLINT_VERSION, PROTOCOL_VERSION,
};
use super::split::{self, HostSpec, HostsInputError};
use super::strict::Versions;
use crate::runner::merge::{self, Part};
use crate::{BenchConfig, RunResult, Stop, Workload};
use results::{HostRecord, HostStatus};
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How long a host may take to say hello and READY (an ssh login included).
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// A running host silent this long is lost (it sends a heartbeat every second).
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3);
/// Clock probes per host; the one with the least round trip counts.
const PROBES: u32 = 8;
/// After Ctrl-C, how long the workers have to send what they measured.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long a worker whose channel closed has to finish saying why on stderr (ssh says it as
/// it exits); waited only when its stderr stays open that long.
const LAST_WORDS: Duration = Duration::from_secs(2);

/// A run on many hosts.
pub struct HostsRun<'a> {
    /// The whole run: `concurrency` is the total over the hosts (see [`split::assign`]), `rate`
    /// and `-n` pages are totals too.
    pub config: &'a BenchConfig,
    pub workload: &'a Workload,
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

/// Where a host is.
enum State {
    Starting,
    Ready,
    Running,
    Done(Box<WorkerResult>),
    Lost(String),
    Failed(String),
}

struct Host {
    name: String,
    /// Its place in the host list (which rows of a `unique` data set are its own).
    place: usize,
    children: Range<usize>,
    /// Where it writes its per-request log, on its own machine (`--log`).
    log: Option<String>,
    process: Process,
    /// Its worker's flint version, once its hello gave it.
    flint_version: Option<String>,
    state: State,
    last_heard: Instant,
    probes: Vec<Probe>,
    ping_sent_unix_us: u64,
    offset: Option<clock::Offset>,
    live: Live,
}

/// What a host's live figures (once a second, totals warm-up included) said it had done: all a
/// lost host leaves.
#[derive(Default)]
struct Live {
    /// The last totals: requests, errors, bytes.
    now: (u64, u64, u64),
    /// The totals at its last figures of the warm-up.
    warmup: (u64, u64, u64),
    /// Seconds since its start at its last figures.
    elapsed_s: f64,
    /// Requests per second of the window, from the differences between its figures.
    per_second: Vec<u64>,
}

impl Live {
    fn heard(&mut self, elapsed_s: f64, warmup: bool, now: (u64, u64, u64)) {
        if warmup {
            self.warmup = now;
        } else {
            // The first second of the window counts from the warm-up's last figures.
            let before = match self.per_second.is_empty() {
                true => self.warmup.0,
                false => self.now.0,
            };
            self.per_second.push(now.0.saturating_sub(before));
        }
        self.now = now;
        self.elapsed_s = elapsed_s;
    }
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
        Ok(orders(&config, r, h, workload))
    };
    start(&mut hosts, &events, orders_for, r.stop);
    not_started(&mut hosts, failed, r.stop)?;
    let _ = writeln!(log, "All READYs received");
    measure_clocks(&mut hosts, &events);
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
    follow(&mut hosts, &events, r, log);
    let _ = writeln!(
        log,
        "All clients ended at {}",
        crate::report::rfc3339(SystemTime::now())
    );
    for h in &mut hosts {
        h.process.stop(Duration::from_secs(1));
    }
    let outcome = outcome(config, r, hosts, start_wall);
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

/// A worker of another protocol version, refused by its hello.
fn mismatch(protocol: u32, flint_version: &str) -> String {
    format!(
        "its worker speaks protocol version {protocol} (flint {flint_version}), this \
         coordinator version {PROTOCOL_VERSION} (flint {FLINT_VERSION})"
    )
}

/// A message of a worker of another build, refused.
fn refused(h: &Host, kind: &str, why: &str, peer: Option<Versions>) -> String {
    match peer {
        // Another protocol version is named as such, whatever else its line holds.
        Some(p) if p.protocol != PROTOCOL_VERSION => mismatch(p.protocol, &p.flint_version),
        _ => {
            let theirs = peer.map(|p| p.flint_version).or(h.flint_version.clone());
            protocol::refusal(kind, "its worker", theirs.as_deref(), why, "coordinator")
        }
    }
}

fn orders(config: &BenchConfig, r: &HostsRun<'_>, h: &Host, workload: Workload) -> ToWorker {
    let c = config;
    let us = |d: Duration| d.as_micros() as u64;
    let connect_to = match c.target.host.rsplit_once(':') {
        Some((_, port)) if port.parse::<u16>().is_ok() && !c.target.host.ends_with(']') => {
            c.target.host.clone()
        }
        _ => format!("{}:{}", c.target.host, c.target.addr.port()),
    };
    ToWorker::Orders(Box::new(Orders {
        protocol: PROTOCOL_VERSION,
        flint_version: FLINT_VERSION.to_owned(),
        host: h.name.clone(),
        url: c.target.url.clone(),
        connect_to,
        host_header: c.target.host.clone(),
        scheme: c.target.scheme,
        server_name: c.target.server_name.clone(),
        authorization: c.target.authorization.clone(),
        tls: c.tls.clone(),
        first_child: h.children.start,
        end_child: h.children.end,
        run: RunOrders {
            concurrency: c.concurrency,
            threads: r.threads,
            duration_us: match c.stop {
                Stop::Duration(d) => Some(us(d)),
                Stop::Pages(_) => None,
            },
            pages: match c.stop {
                Stop::Pages(n) => Some(n),
                Stop::Duration(_) => None,
            },
            warmup_us: us(c.warmup),
            think_us: c.think.map(us),
            rate: c.rate,
            http: c.http,
            connections_per_child: c.connections_per_child,
            streams: c.streams,
            h2_window: c.h2_window,
            connect_timeout_us: us(c.connect_timeout),
            response_timeout_us: us(c.response_timeout),
            busy_poll_us: us(c.busy_poll),
            read_slack: c.read_slack,
            seed: c.seed,
            expect_status: c.expect_status.clone(),
            redirect: c.redirect,
            fail_fast: c.fail_fast,
            log: h.log.clone(),
        },
        workload,
    }))
}

/// Hello, orders, READY from every host, or a reason for each that did not.
fn start(
    hosts: &mut [Host],
    events: &Receiver<Event>,
    orders: impl Fn(&Host) -> Result<ToWorker, String>,
    stop: &AtomicBool,
) {
    let deadline = Instant::now() + START_TIMEOUT;
    while hosts.iter().any(|h| matches!(h.state, State::Starting)) {
        if stop.load(Ordering::Relaxed) {
            return;
        }
        let wait = deadline.saturating_duration_since(Instant::now());
        let ev = match events.recv_timeout(wait.min(Duration::from_millis(100))) {
            Ok(ev) => ev,
            Err(RecvTimeoutError::Timeout) if Instant::now() < deadline => continue,
            Err(_) => {
                for h in hosts.iter_mut() {
                    if matches!(h.state, State::Starting) {
                        let secs = START_TIMEOUT.as_secs();
                        // Orders still unwritten: the worker (or its channel) stopped reading.
                        let why = match h.process.all_written() {
                            true => format!("no READY within {secs} s"),
                            false => format!("orders not delivered within {secs} s"),
                        };
                        h.state = State::Failed(with_stderr(why, &h.process));
                    }
                }
                return;
            }
        };
        let h = &mut hosts[ev.host];
        if !matches!(h.state, State::Starting) {
            continue;
        }
        match ev.what {
            Said::Message(ToCoordinator::Hello {
                protocol,
                flint_version,
            }) => {
                if protocol != PROTOCOL_VERSION {
                    h.state = State::Failed(mismatch(protocol, &flint_version));
                } else {
                    h.flint_version = Some(flint_version);
                    match orders(h) {
                        Ok(o) => h.process.send(&o),
                        Err(why) => h.state = State::Failed(why),
                    }
                }
            }
            Said::Message(ToCoordinator::Ready { .. }) => h.state = State::Ready,
            Said::Message(ToCoordinator::Failed { reason }) => h.state = State::Failed(reason),
            Said::Message(other) => {
                h.state = State::Failed(format!("unexpected {other:?} before READY"))
            }
            Said::Bad(line) => {
                h.state = State::Failed(format!("not a flint worker: it said {line}"))
            }
            Said::Refused { kind, why, peer } => {
                h.state = State::Failed(refused(h, &kind, &why, peer))
            }
            Said::Closed => {
                let why = "exited before READY".to_owned();
                h.state = State::Failed(with_last_words(why, &h.process));
            }
        }
    }
}

fn with_stderr(why: String, p: &Process) -> String {
    quoting(why, p.stderr_tail())
}

/// `why`, with what a worker whose channel closed said on stderr as it went (ssh's reason).
fn with_last_words(why: String, p: &Process) -> String {
    quoting(why, p.last_words(LAST_WORDS))
}

fn quoting(why: String, said: String) -> String {
    match said {
        t if t.is_empty() => why,
        t => format!("{why} ({t})"),
    }
}

/// [`PROBES`] ping-pong rounds with every host at once; each host's offset from its least
/// round trip.
fn measure_clocks(hosts: &mut [Host], events: &Receiver<Event>) {
    for seq in 0..PROBES {
        for h in hosts.iter_mut() {
            h.ping_sent_unix_us = protocol::unix_us();
            h.process.send(&ToWorker::Ping { seq });
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut waiting = hosts.len();
        while waiting > 0 {
            let Ok(ev) = events.recv_timeout(deadline.saturating_duration_since(Instant::now()))
            else {
                break;
            };
            let h = &mut hosts[ev.host];
            match ev.what {
                Said::Message(ToCoordinator::Pong {
                    seq: s,
                    clock_unix_us,
                }) if s == seq => {
                    h.probes.push(Probe {
                        // As the writer began writing it (the ping is the last line
                        // sent this host), not as it was handed to the writer thread.
                        sent: h.ping_sent_unix_us.max(h.process.last_write_unix_us()),
                        remote: clock_unix_us,
                        received: ev.at_unix_us,
                    });
                    waiting -= 1;
                }
                Said::Refused { kind, why, peer } if matches!(h.state, State::Ready) => {
                    h.state = State::Failed(refused(h, &kind, &why, peer));
                }
                _ => {}
            }
        }
    }
    for h in hosts {
        h.offset = clock::estimate(&h.probes);
    }
}

/// From GO to the last result: live figures, heartbeats, losses, Ctrl-C.
fn follow(hosts: &mut [Host], events: &Receiver<Event>, r: &HostsRun<'_>, log: &mut dyn Write) {
    let mut stopping: Option<Instant> = None;
    let mut next_line = Instant::now() + Duration::from_secs(1);
    let mut prev = ((0u64, 0u64), Instant::now());
    let running = |hosts: &[Host]| {
        hosts
            .iter()
            .filter(|h| matches!(h.state, State::Running))
            .count()
    };
    while running(hosts) > 0 {
        if stopping.is_none() && r.stop.load(Ordering::Relaxed) {
            stopping = Some(Instant::now());
            for h in hosts
                .iter_mut()
                .filter(|h| matches!(h.state, State::Running))
            {
                h.process.send(&ToWorker::Stop);
            }
        }
        match events.recv_timeout(Duration::from_millis(100)) {
            Ok(ev) => on_event(&mut hosts[ev.host], ev),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
        // Everything already queued first: a heartbeat waiting in the queue is a heartbeat
        // heard, however far behind this loop is.
        while let Ok(ev) = events.try_recv() {
            on_event(&mut hosts[ev.host], ev);
        }
        let now = Instant::now();
        for h in hosts
            .iter_mut()
            .filter(|h| matches!(h.state, State::Running))
        {
            if now.duration_since(h.last_heard) > HEARTBEAT_TIMEOUT {
                h.state = State::Lost(format!(
                    "no heartbeat for {} s",
                    HEARTBEAT_TIMEOUT.as_secs()
                ));
                h.process.kill_group();
            } else if stopping.is_some_and(|s| now.duration_since(s) > STOP_GRACE) {
                h.state = State::Lost("did not stop after Ctrl-C".into());
                h.process.kill_group();
            }
        }
        if r.config.progress && now >= next_line {
            let (requests, errors, bytes) = hosts.iter().fold((0, 0, 0), |a, h| {
                let l = h.live.now;
                (a.0 + l.0, a.1 + l.1, a.2 + l.2)
            });
            let secs = now.duration_since(prev.1).as_secs_f64().max(1e-9);
            let text = format!(
                "{:.1} req/s  {}  {:.1} MB/s  {}/{} hosts running",
                requests.saturating_sub(prev.0 .0) as f64 / secs,
                crate::report::count_of(errors, "error", "errors"),
                bytes.saturating_sub(prev.0 .1) as f64 / 1e6 / secs,
                running(hosts),
                hosts.len()
            );
            crate::progress::print(&text);
            prev = ((requests, bytes), now);
            next_line = now + Duration::from_secs(1);
        }
    }
    if r.config.progress {
        crate::progress::clear();
    }
    let _ = log.flush();
}

fn on_event(h: &mut Host, ev: Event) {
    if !matches!(h.state, State::Running) {
        return;
    }
    h.last_heard = ev.at;
    match ev.what {
        Said::Message(ToCoordinator::Live {
            elapsed_s,
            warmup,
            requests,
            errors,
            bytes,
        }) => h.live.heard(elapsed_s, warmup, (requests, errors, bytes)),
        Said::Message(ToCoordinator::Result(result)) => h.state = State::Done(result),
        Said::Message(ToCoordinator::Failed { reason }) => h.state = State::Lost(reason),
        Said::Message(_) => {}
        Said::Bad(line) => h.state = State::Lost(format!("it said {line}")),
        Said::Refused { kind, why, peer } => {
            // A worker of another build may be running something else: its load stops too.
            h.state = State::Lost(refused(h, &kind, &why, peer));
            h.process.kill_group();
        }
        Said::Closed => {
            let why = with_last_words("its channel closed".into(), &h.process);
            h.state = State::Lost(why);
        }
    }
}

/// The exact merge of the hosts that finished, and a record of every host.
fn outcome(
    config: BenchConfig,
    r: &HostsRun<'_>,
    hosts: Vec<Host>,
    start_wall: SystemTime,
) -> HostsOutcome {
    let open_loop = config.rate.is_some();
    let parts = hosts.iter().filter_map(|h| match &h.state {
        State::Done(w) => Some(Part {
            stats: &w.stats,
            window: Duration::from_micros(w.window_us),
        }),
        _ => None,
    });
    let (mut stats, duration) = merge::merge(r.workload, open_loop, parts);
    stats.hosts = hosts
        .iter()
        .filter(|h| matches!(h.state, State::Done(_)))
        .count() as u64;
    let interrupted = r.stop.load(Ordering::Relaxed)
        || hosts
            .iter()
            .any(|h| matches!(&h.state, State::Done(w) if w.interrupted));
    let records: Vec<HostRecord> = hosts.iter().map(|h| record(h, &config)).collect();
    let incomplete = records.iter().any(|h| h.status != HostStatus::Ok);
    HostsOutcome {
        result: RunResult {
            workload: r.workload.clone(),
            stats,
            duration,
            started_at: start_wall + config.warmup,
            interrupted,
            config,
        },
        hosts: records,
        incomplete,
    }
}

fn record(h: &Host, config: &BenchConfig) -> HostRecord {
    let mut rec = HostRecord {
        name: h.name.clone(),
        webchildren: h.children.len() as u64,
        clock_offset_ms: h.offset.map(|o| o.offset_us as f64 / 1e3),
        ..HostRecord::default()
    };
    match &h.state {
        State::Done(w) => {
            let s = &w.stats;
            rec.requests = s.requests;
            rec.pages = s.pages_done;
            rec.errors = s.errors.total();
            // The summary's quantities, so that the hosts' add up to the run's.
            rec.bytes_total = s.data_moved();
            rec.bytes_read = Some(s.bytes_total);
            rec.start_skew_ms = w.start_skew_us.map(|us| us as f64 / 1e3);
            rec.warning = late_start(w, config);
            rec.client_cpu_us_per_request =
                (s.requests > 0).then(|| w.cpu_us as f64 / s.requests as f64);
            rec.response_ms = s.response.summary();
            rec.requests_per_second = s.timeseries.iter().map(|x| x.requests).collect();
        }
        State::Lost(why) => {
            rec.status = HostStatus::Lost;
            rec.reason = Some(why.clone());
            // What it was known to have done: its live figures as last heard.
            let l = &h.live;
            let in_window_s = l.elapsed_s - config.warmup.as_secs_f64();
            if !l.per_second.is_empty() && in_window_s > 0.0 {
                rec.requests = l.now.0.saturating_sub(l.warmup.0);
                rec.errors = l.now.1.saturating_sub(l.warmup.1);
                rec.bytes_read = Some(l.now.2.saturating_sub(l.warmup.2));
                rec.requests_per_second = l.per_second.clone();
                rec.known_until_s = Some(in_window_s);
            }
        }
        State::Failed(why) => {
            rec.status = HostStatus::Failed;
            rec.reason = Some(why.clone());
        }
        State::Starting | State::Ready | State::Running => {
            rec.status = HostStatus::Lost;
            rec.reason = Some("ended without a result".into());
        }
    }
    rec
}

/// The most of a host's measured window its start may miss before it is called late: its
/// rates are then low by more than this share, as its window counts from the agreed start.
const LATE_SHARE: f64 = 0.01;

/// A host that began its load later than `LATE_SHARE` into its measured window (a start skew
/// within the warm-up costs the window nothing), or never said when: the warning for its row.
fn late_start(w: &protocol::WorkerResult, config: &BenchConfig) -> Option<String> {
    let Some(skew_us) = w.start_skew_us else {
        return Some(
            "it never said when it started: its figures may miss part of its window".into(),
        );
    };
    let warmup_us = config.warmup.as_micros() as u64;
    let missed_us = skew_us.saturating_sub(warmup_us);
    let share = missed_us as f64 / w.window_us.max(1) as f64;
    // Closed loop: the missed time is load never offered, so rates are low by that share. Open
    // loop: the pages already due are sent at once when it begins, a burst the server did not
    // get on schedule, and their latencies (from their intended starts) carry the delay.
    let effect = if config.rate.is_some() {
        "the pages due meanwhile went out at once as it began, a burst off the schedule, their \
         latencies counting the delay"
    } else {
        "which still counts from that start (its rates are low by as much)"
    };
    (share > LATE_SHARE).then(|| {
        format!(
            "started late: its first request {:.1} ms after the agreed start, {:.1}% of its {:.3} s \
             window; {effect}",
            skew_us as f64 / 1e3,
            (share * 100.0).min(100.0),
            w.window_us as f64 / 1e6
        )
    })
}
