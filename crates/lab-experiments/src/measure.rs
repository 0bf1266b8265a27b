//! One measurement: a `bench` run against a peer, with the server's profile and CPU time taken
//! over exactly the measured window.
//!
//! The warm-up is a run of its own; then `bench::run_observed` opens the [`Window`] before its
//! first request (it has no warm-up of its own) and closes it when the window ends, so a tracer
//! that takes a moment to attach delays the window rather than missing part of it, and the
//! server is idle when the tracer starts counting. The window (tracer attached to the peer's
//! whole process tree, Apache's children included; the one CPU clock for server and client) is
//! [`lab_profile::Window`]'s, the same `flint bench --profile` uses.

use crate::netpath::{Counters, NetError, NetPath};
use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use lab_peers::Peer;
use lab_process::pin_current_thread;
use lab_profile::Window;
use lab_profile::{Method, Profile};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Why a measurement could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    #[error(transparent)]
    Bench(#[from] bench::BenchError),
    /// The server was gone before the window opened.
    #[error(transparent)]
    Server(#[from] lab_process::procfs::ProcError),
    /// The network path's counters could not be read.
    #[error(transparent)]
    Path(#[from] NetError),
}

/// What one measurement gives.
#[derive(Debug)]
pub struct Measurement {
    pub run: RunResult,
    /// The server's syscalls over the window, all its processes together.
    pub profile: Option<Profile>,
    /// Why there is no profile when one was asked for.
    pub profile_error: Option<String>,
    /// CPU (user + sys) of the server's processes over the window.
    pub server_cpu: Option<Duration>,
    /// CPU of this process (the load threads) over the window.
    pub client_cpu: Option<Duration>,
    /// The window as the observer saw it.
    pub window: Duration,
    /// On the network path: what its server interface counted from the window's start until
    /// the path was quiet after the run (so the last connections' closes are in).
    pub wire: Option<Counters>,
}

/// The load of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub clients: usize,
    /// Connections of each client, sharing its pages' files (bench's
    /// `connections_per_child`; 1: one connection at a time).
    pub per_client: usize,
    pub http: HttpMode,
    pub duration: Duration,
    pub warmup: Duration,
    /// Core for the load threads; `None`: not pinned.
    pub cpu: Option<usize>,
    /// Stop after this many pages rather than after `duration` (a page that takes seconds
    /// over a long round trip would not fit a short window).
    pub pages: Option<u64>,
}

impl Load {
    pub fn stop(&self) -> Stop {
        self.pages
            .map_or(Stop::Duration(self.duration), Stop::Pages)
    }
}

/// Runs `workload` against `peer`, profiling it with `method` (if any) over the measured window.
pub fn measure(
    peer: &Peer,
    workload: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
) -> Result<Measurement, MeasureError> {
    let target = Target::http(peer.addr());
    measure_at(
        peer,
        target,
        TlsOptions::default(),
        workload,
        load,
        method,
        stop,
        None,
    )
}

/// [`measure`] over HTTPS: `tls` says what the client trusts and whether it resumes sessions;
/// the client asks for `server_name`.
pub fn measure_tls(
    peer: &Peer,
    server_name: &str,
    tls: TlsOptions,
    workload: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
) -> Result<Measurement, MeasureError> {
    let target = Target::https(peer.addr(), server_name);
    measure_at(peer, target, tls, workload, load, method, stop, None)
}

/// The target of `peer`: HTTPS with `tls` when given (the client asks for `server_name`).
pub fn target(peer: &Peer, tls: Option<(&str, &TlsOptions)>) -> (Target, TlsOptions) {
    match tls {
        Some((name, opts)) => (Target::https(peer.addr(), name), opts.clone()),
        None => (Target::http(peer.addr()), TlsOptions::default()),
    }
}

/// [`measure`] over the network path `path` (the calling thread in its client namespace),
/// counting packets and bytes on the server's interface.
#[allow(clippy::too_many_arguments)]
pub fn measure_on_path(
    peer: &Peer,
    tls: Option<(&str, &TlsOptions)>,
    workload: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
    path: &NetPath,
) -> Result<Measurement, MeasureError> {
    let (target, tls) = target(peer, tls);
    measure_at(peer, target, tls, workload, load, method, stop, Some(path))
}

/// Waits until the path has carried nothing for two round trips (and 20 ms), at most 5 s, and
/// returns its counters then: the closes of a run's last connections are still on their way
/// when the run returns.
pub fn quiet_counters(path: &NetPath) -> Result<Counters, NetError> {
    let calm = path.rtt() * 2 + Duration::from_millis(20);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut last = path.counters()?;
    loop {
        std::thread::sleep(calm);
        let now = path.counters()?;
        if now == last || std::time::Instant::now() >= deadline {
            return Ok(now);
        }
        last = now;
    }
}

#[allow(clippy::too_many_arguments)]
fn measure_at(
    peer: &Peer,
    target: Target,
    tls: TlsOptions,
    workload: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
    path: Option<&NetPath>,
) -> Result<Measurement, MeasureError> {
    let config = BenchConfig {
        tls,
        concurrency: load.clients,
        connections_per_child: load.per_client,
        // One event loop: the client has one core, and one loop per core is what flint bench does.
        threads: 1,
        stop: load.stop(),
        // The warm-up is a run of its own (below): with none, bench tells the observer before
        // its first request, so a tracer that takes a second to attach misses nothing.
        warmup: Duration::ZERO,
        http: load.http,
        connect_timeout: Duration::from_secs(5),
        // A 6.5 MB response to a traced server can take a while; the window is what matters.
        response_timeout: Duration::from_secs(30),
        ..BenchConfig::new(target)
    };
    let window = Window::prepare(peer.pid(), method)?;
    let run = {
        // Pinned for the runs only: the threads bench starts inherit the pin, and tracers started
        // from the observer land on the client core too, away from the server's.
        let _pin = load.cpu.and_then(|cpu| pin_current_thread(cpu).ok());
        if !load.warmup.is_zero() {
            let warmup = BenchConfig {
                stop: Stop::Duration(load.warmup),
                ..config.clone()
            };
            bench::run(&warmup, workload, stop)?;
        }
        let before = path.map(quiet_counters).transpose()?;
        let run = bench::run_observed(&config, workload, stop, &window)?;
        (run, before)
    };
    let (run, before) = run;
    let wire = match (path, before) {
        (Some(path), Some(before)) => Some(quiet_counters(path)?.since(&before)),
        _ => None,
    };
    let seen = window.finish();
    let profile_error = match (method, &seen.profile) {
        (Some(_), None) if seen.profile_errors.is_empty() => Some("no profile".to_owned()),
        _ if seen.profile_errors.is_empty() => None,
        _ => Some(
            seen.profile_errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        ),
    };
    Ok(Measurement {
        window: seen.window.unwrap_or(run.duration),
        run,
        profile: seen.profile,
        profile_error,
        server_cpu: seen.server_cpu.map(|c| c.total()),
        client_cpu: seen.client_cpu,
        wire,
    })
}
