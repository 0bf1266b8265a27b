//! The measured window of one run, watched from the server's side: the lab's one window
//! profiler, used by `flint bench --profile` and by every experiment.
//!
//! [`Window`] is a [`bench::Observer`]: the runner opens it when warm-up ends (without warm-up,
//! before the first request) and closes it when the window ends. Opening starts the tracer
//! (made ready beforehand: perf takes a second or two to open its events) and then reads the
//! CPU clocks ([`lab_process::cpu`]) of the server's process tree and of this process (the load
//! generator); closing reads the clocks first and then detaches the tracer, so that neither
//! attaching nor detaching is counted as the server's work.
//!
//! Where the boundaries fall matters for what is counted. The runner's boundaries are exact for
//! the requests it counts; the tracer's are a few hundred microseconds later (the observer call,
//! perf's control fifo). A server busy at that moment has a few syscalls of requests not
//! counted on one side or the other: negligible over a window of thousands of requests, and
//! none at all when the window opens and closes while the server is idle, as in the
//! experiments, which run without warm-up inside the window (the first request comes after the
//! window opens) and whose tests close it only when every response is in.
//!
//! A tracer that cannot be prepared or started does not stop the window: the CPU figures are
//! still taken, and [`Observed::profile_errors`] says why there is no syscall table.

use crate::{Method, Prepared, Profile, ProfileError, Profiler};
use lab_process::cpu::{self, CpuTime};
use lab_process::procfs::ProcError;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// What a window saw.
#[derive(Debug, Default)]
pub struct Observed {
    /// From open to close, as this side saw it (None if it never opened or closed).
    pub window: Option<Duration>,
    /// CPU of the server's process tree over the window.
    pub server_cpu: Option<CpuTime>,
    /// CPU of this process (the load generator's threads) over the window.
    pub client_cpu: Option<Duration>,
    /// The server's syscalls, CPU included, when a tracer was asked for and worked.
    pub profile: Option<Profile>,
    /// Why the profile is missing or incomplete.
    pub profile_errors: Vec<ProfileError>,
}

/// One measured window; open and close it once each, in that order (as [`bench::Observer`]
/// does), then [`Window::finish`].
pub struct Window {
    server: u32,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    prepared: Option<Prepared>,
    tracer: Option<Profiler>,
    opened: Option<(Instant, Option<CpuTime>, Option<CpuTime>)>,
    seen: Observed,
}

impl Window {
    /// Prepares to watch the process tree under `server`, tracing its syscalls with `method`
    /// if given. The server gone is an error; a tracer that cannot be prepared is not (see
    /// [`Window::take_tracer_error`]).
    pub fn prepare(server: u32, method: Option<Method>) -> Result<Window, ProcError> {
        cpu::tree(server)?;
        let mut state = State::default();
        if let Some(method) = method {
            match Prepared::new(server, method) {
                Ok(p) => state.prepared = Some(p),
                Err(ProfileError::ProcessGone { pid }) => return Err(ProcError::Gone { pid }),
                Err(e) => state.seen.profile_errors.push(e),
            }
        }
        Ok(Window {
            server,
            state: Mutex::new(state),
        })
    }

    /// Why the tracer asked for could not be prepared, if it could not (taken: the caller
    /// reports it, [`Window::finish`] does not again).
    pub fn take_tracer_error(&self) -> Option<ProfileError> {
        let mut s = self.lock();
        if s.prepared.is_some() || s.seen.profile_errors.is_empty() {
            return None;
        }
        Some(s.seen.profile_errors.remove(0))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Starts the tracer, then reads the clocks. A second call does nothing.
    pub fn open(&self) {
        let mut s = self.lock();
        if s.opened.is_some() {
            return;
        }
        if let Some(prepared) = s.prepared.take() {
            match prepared.start() {
                Ok(t) => s.tracer = Some(t),
                Err(e) => s.seen.profile_errors.push(e),
            }
        }
        let server = cpu::tree(self.server).ok();
        let client = cpu::process(std::process::id()).ok();
        s.opened = Some((Instant::now(), server, client));
    }

    /// Reads the clocks, then detaches the tracer. Does nothing unless open, and only once.
    pub fn close(&self) {
        let mut s = self.lock();
        let Some((at, server, client)) = s.opened.take() else {
            return;
        };
        s.seen.window = Some(at.elapsed());
        let server_now = cpu::tree(self.server).ok();
        let client_now = cpu::process(std::process::id()).ok();
        s.seen.server_cpu = server.zip(server_now).map(|(a, b)| b.since(&a));
        s.seen.client_cpu = client.zip(client_now).map(|(a, b)| b.since(&a).total());
        if let Some(tracer) = s.tracer.take() {
            let used = s.seen.server_cpu.unwrap_or_default();
            match tracer.stop(used) {
                Ok(p) => s.seen.profile = Some(p),
                Err(e) => s.seen.profile_errors.push(e),
            }
        }
    }

    /// What the window saw (a window never closed detaches its tracer here, unread).
    pub fn finish(self) -> Observed {
        self.state
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .seen
    }
}

impl bench::Observer for Window {
    fn window_started(&self) {
        self.open();
    }

    fn window_ended(&self) {
        self.close();
    }
}
