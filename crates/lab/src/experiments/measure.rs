//! One measurement: a `bench` run against a peer, with the server's profile and CPU time taken
//! over exactly the measured window.
//!
//! The warm-up is a run of its own; then `bench::run_observed` calls [`Window`] before its first
//! request (it has no warm-up of its own) and when the window ends, so a tracer that takes a
//! moment to attach delays the window rather than missing part of it. The profile
//! (strace or perf, attached to the peer's whole process tree: Apache's children included) is
//! attached and detached there, and the CPU times of the server's processes and of this process
//! (the client) are read there, with the kernel's exact per-process clocks ([`super::cpu`]).

use super::pin;
use crate::peers::Peer;
use crate::profile::{Method, Profile, Profiler};
use bench::{BenchConfig, HttpMode, RunResult, Stop, Target, Workload};
use std::sync::atomic::AtomicBool;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
}

/// The load of one measurement.
#[derive(Debug, Clone, Copy)]
pub struct Load {
    pub clients: usize,
    pub http: HttpMode,
    pub duration: Duration,
    pub warmup: Duration,
    /// Core for the load threads; `None`: not pinned.
    pub cpu: Option<usize>,
}

/// Runs `workload` against `peer`, profiling it with `method` (if any) over the measured window.
pub fn measure(
    peer: &Peer,
    workload: &Workload,
    load: Load,
    method: Option<Method>,
    stop: &AtomicBool,
) -> Result<Measurement, bench::BenchError> {
    let addr = peer.addr();
    let config = BenchConfig {
        concurrency: load.clients,
        // One event loop: the client has one core, and one loop per core is what flint bench does.
        threads: 1,
        stop: Stop::Duration(load.duration),
        // The warm-up is a run of its own (below): with none, bench tells the observer before
        // its first request, so a tracer that takes a second to attach misses nothing.
        warmup: Duration::ZERO,
        http: load.http,
        connect_timeout: Duration::from_secs(5),
        // A 6.5 MB response to a traced server can take a while; the window is what matters.
        response_timeout: Duration::from_secs(30),
        ..BenchConfig::new(Target::http(addr))
    };
    let window = Window::new(peer.pid(), peer.work_pids(), method);
    let run = {
        // Pinned for the runs only: the threads bench starts inherit the pin, and tracers started
        // from the observer land on the client core too, away from the server's.
        let _pin = load.cpu.and_then(|cpu| pin::pin_current_thread(cpu).ok());
        if !load.warmup.is_zero() {
            let warmup = BenchConfig {
                stop: Stop::Duration(load.warmup),
                ..config.clone()
            };
            bench::run(&warmup, workload, stop)?;
        }
        bench::run_observed(&config, workload, stop, &window)?
    };
    Ok(window.finish(run))
}

/// Watches the measured window of one run.
struct Window {
    /// The process the profiler attaches to (it follows the tree under it).
    root: u32,
    /// The processes whose CPU time is the server's.
    pids: Vec<u32>,
    method: Option<Method>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    started: Option<Instant>,
    ended: Option<Instant>,
    server_cpu: Vec<Option<Duration>>,
    client_cpu: Option<Duration>,
    profiler: Option<Profiler>,
    profile: Option<Profile>,
    errors: Vec<String>,
    server_delta: Option<Duration>,
    client_delta: Option<Duration>,
}

/// User + system CPU of `pid` so far.
fn cpu(pid: u32) -> Option<Duration> {
    super::cpu::process_cpu(pid)
}

impl Window {
    fn new(root: u32, pids: Vec<u32>, method: Option<Method>) -> Self {
        Window {
            root,
            pids,
            method,
            state: Mutex::new(State::default()),
        }
    }

    fn finish(self, run: RunResult) -> Measurement {
        let state = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        let window = match (state.started, state.ended) {
            (Some(a), Some(b)) => b - a,
            _ => run.duration,
        };
        let profile = state.profile;
        let profile_error = match (&self.method, &profile) {
            (Some(_), None) => Some(if state.errors.is_empty() {
                "no profile".to_owned()
            } else {
                state.errors.join("; ")
            }),
            (Some(_), Some(_)) if !state.errors.is_empty() => Some(state.errors.join("; ")),
            _ => None,
        };
        Measurement {
            run,
            profile,
            profile_error,
            server_cpu: state.server_delta,
            client_cpu: state.client_delta,
            window,
        }
    }
}

impl bench::Observer for Window {
    fn window_started(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(method) = self.method {
            match Profiler::start(self.root, method) {
                Ok(p) => s.profiler = Some(p),
                Err(e) => s.errors.push(e.to_string()),
            }
        }
        // After the tracer is attached: the CPU window is the load's, not the attach's.
        s.server_cpu = self.pids.iter().map(|&p| cpu(p)).collect();
        s.client_cpu = cpu(std::process::id());
        s.started = Some(Instant::now());
    }

    fn window_ended(&self) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.ended = Some(Instant::now());
        // CPU first: the tracer's detaching is not the server's work.
        let mut total = Duration::ZERO;
        let mut complete = true;
        for (&pid, before) in self.pids.iter().zip(&s.server_cpu) {
            match (before, cpu(pid)) {
                (Some(a), Some(b)) => total += b.saturating_sub(*a),
                _ => complete = false,
            }
        }
        s.server_delta = complete.then_some(total);
        s.client_delta = match (s.client_cpu, cpu(std::process::id())) {
            (Some(a), Some(b)) => Some(b.saturating_sub(a)),
            _ => None,
        };
        if let Some(profiler) = s.profiler.take() {
            match profiler.stop() {
                Ok(p) => s.profile = Some(p),
                Err(e) => s.errors.push(e.to_string()),
            }
        }
    }
}
