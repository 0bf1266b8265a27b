//! `flint worker`: one client host's part of a run on many hosts.
//!
//! It reads its orders on stdin and writes on stdout, one JSON line per message (see
//! [`super::protocol`]). It prepares everything (resolves the target, builds the requests and
//! over HTTPS its TLS configuration) and reports READY; nothing connects before GO, and then not
//! before the agreed start. While it waits and runs it sends a heartbeat and its live figures
//! every second; at the end, its whole result with histograms. It never outlives its coordinator: when stdin closes (the coordinator,
//! or the ssh connection to it, is gone) it stops within a second.

use super::protocol::{
    self, Orders, ToCoordinator, ToWorker, WorkerResult, FLINT_VERSION, PROTOCOL_VERSION,
};
use super::strict::{self, Rejected};
use crate::progress::Counts;
use crate::runner::plan::check;
use crate::runner::PreparedSlice;
use crate::{BenchConfig, Observer, Slice, Stop, Target};
use std::io::{BufRead, Write};
use std::net::ToSocketAddrs;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a worker ended without a result.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// Refused or could not prepare; also sent to the coordinator.
    #[error("{0}")]
    Refused(String),
    /// The coordinator went away (stdin closed) before the run ended.
    #[error("the coordinator went away")]
    CoordinatorGone,
    /// Stdout, the channel to the coordinator, could not be written.
    #[error("writing to the coordinator: {0}")]
    Output(#[source] std::io::Error),
}

/// The shared stdout: whole lines, from the main thread, the heartbeat and the stdin watcher.
#[derive(Clone)]
struct Out(Arc<Mutex<Box<dyn Write + Send>>>);

impl Out {
    /// Encoded before the lock is taken: a result with every histogram takes a moment to
    /// encode, and the heartbeat must not wait for it.
    fn send(&self, msg: &ToCoordinator) -> std::io::Result<()> {
        let line = protocol::encode(msg)?;
        let mut w = self.0.lock().unwrap_or_else(|e| e.into_inner());
        w.write_all(&line)?;
        w.flush()
    }
}

/// What the stdin reader saw.
enum Input {
    Message(ToWorker),
    /// A line that is not a message this build takes: its number and why.
    Bad(usize, Rejected),
    /// End of input (or a read error): the coordinator is gone.
    Gone,
}

/// Serves one run: `input` is the coordinator's side (stdin), `output` ours (stdout).
pub fn serve(
    input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> Result<(), WorkerError> {
    let out = Out(Arc::new(Mutex::new(output)));
    let hello = ToCoordinator::Hello {
        protocol: PROTOCOL_VERSION,
        flint_version: FLINT_VERSION.to_owned(),
    };
    out.send(&hello).map_err(WorkerError::Output)?;
    let inbox = read_input(input);
    let refuse = |reason: String| {
        let _ = out.send(&ToCoordinator::Failed {
            reason: reason.clone(),
        });
        WorkerError::Refused(reason)
    };
    // A line refused is told to the coordinator too: it is that host's reason there.
    let receive = |coordinator: Option<&str>| match next(&inbox, coordinator) {
        Err(WorkerError::Refused(why)) => Err(refuse(why)),
        other => other,
    };
    let orders = match receive(None)? {
        ToWorker::Orders(o) => o,
        other => return Err(refuse(format!("expected orders, got {}", name(&other)))),
    };
    if orders.protocol != PROTOCOL_VERSION {
        return Err(refuse(mismatch(orders.protocol, &orders.flint_version)));
    }
    let coordinator = Some(orders.flint_version.as_str());
    orders.workload.check_plan().map_err(refuse)?;
    let (config, slice) = prepare(&orders).map_err(refuse)?;
    // Everything the run needs is built now, before READY (over HTTPS the TLS configuration,
    // whose CA bundle takes tens of ms of CPU): after GO only the wait for the start is left.
    let prepared =
        PreparedSlice::new(&config, &orders.workload, &slice).map_err(|e| refuse(e.to_string()))?;
    let ready = ToCoordinator::Ready {
        threads: config.threads as u64,
        pid: std::process::id(),
    };
    out.send(&ready).map_err(WorkerError::Output)?;
    let (coordinator_start, start) = loop {
        match receive(coordinator)? {
            ToWorker::Ping { seq } => pong(&out, seq)?,
            ToWorker::Go {
                start_unix_us,
                clock_offset_us,
            } => {
                break (
                    start_unix_us,
                    start_unix_us.saturating_add_signed(clock_offset_us),
                )
            }
            ToWorker::Stop => return Err(WorkerError::CoordinatorGone),
            ToWorker::Orders(_) => return Err(refuse("orders sent twice".into())),
        }
    };
    // The agreed start in our wall clock, as an instant of our monotonic clock (a wall-clock
    // step while we wait cannot move it).
    let now_unix = protocol::unix_us();
    let start_at = match start.checked_sub(now_unix) {
        Some(ahead) => Instant::now() + Duration::from_micros(ahead),
        // GO came after the start: time 0 is still the agreed start (every host's), so this
        // host begins late and its start skew says by how much.
        None => {
            let late = Duration::from_micros(now_unix - start);
            Instant::now()
                .checked_sub(late)
                .unwrap_or_else(Instant::now)
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    let watcher = watch(inbox, out.clone(), Arc::clone(&stop), Arc::clone(&done));
    let heartbeat = beat(out.clone(), Arc::clone(&stop), Arc::clone(&done));
    let cpu_before = cpu_time();
    let slice = Slice {
        start: Some(start_at),
        // The coordinator's clock: every host's log and times in one clock.
        start_unix_us: Some(coordinator_start),
        ..slice
    };
    let live = Live(out.clone());
    let outcome = prepared.run(&config, &orders.workload, &slice, &stop, &live);
    // The heartbeat goes on until the result is sent: encoding every histogram takes a moment.
    let end_heartbeat = || {
        done.store(true, Ordering::Relaxed);
    };
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => {
            end_heartbeat();
            return Err(refuse(e.to_string()));
        }
    };
    let result = WorkerResult {
        window_us: outcome.result.duration.as_micros() as u64,
        interrupted: outcome.result.interrupted,
        start_skew_us: outcome.start_skew.map(|d| d.as_micros() as u64),
        cpu_us: cpu_time().saturating_sub(cpu_before),
        stats: outcome.result.stats,
    };
    let gone = watcher.is_finished() && stop.load(Ordering::Relaxed);
    let sent = out.send(&ToCoordinator::Result(Box::new(result)));
    end_heartbeat();
    let _ = heartbeat.join();
    // The watcher ends when stdin closes; the coordinator closes it once it has our result.
    drop(watcher);
    match sent {
        Err(_) if gone => Err(WorkerError::CoordinatorGone),
        Err(e) => Err(WorkerError::Output(e)),
        Ok(()) => Ok(()),
    }
}

/// The orders as the engine's options and this worker's slice; a reason when they cannot run.
fn prepare(o: &Orders) -> Result<(BenchConfig, Slice), String> {
    let addr = o
        .connect_to
        .to_socket_addrs()
        .map_err(|e| format!("resolving {}: {e}", o.connect_to))?
        .next()
        .ok_or_else(|| format!("{} resolves to no address", o.connect_to))?;
    let r = &o.run;
    let stop = match (r.pages, r.duration_us) {
        (Some(n), _) => Stop::Pages(n),
        (None, Some(us)) => Stop::Duration(Duration::from_micros(us)),
        (None, None) => return Err("orders give neither a duration nor a page count".into()),
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let children = o.first_child..o.end_child;
    // The target as the coordinator parsed it, its address resolved here, on this host; the
    // credentials as given (the URL's copy hides the password).
    let config = BenchConfig {
        target: Target {
            scheme: o.scheme,
            addr,
            host: o.host_header.clone(),
            server_name: match o.server_name.as_str() {
                "" => addr.ip().to_string(),
                name => name.to_owned(),
            },
            url: o.url.clone(),
            path: None,
            authorization: o.authorization.clone(),
            unix_socket: None,
        },
        concurrency: r.concurrency,
        threads: r.threads.unwrap_or(cores).clamp(1, children.len().max(1)),
        stop,
        warmup: Duration::from_micros(r.warmup_us),
        think: r.think_us.map(Duration::from_micros),
        rate: r.rate,
        http: r.http,
        connections_per_child: r.connections_per_child,
        streams: r.streams,
        h2_window: r.h2_window,
        h2_first_stream_id: None,
        handshake_past_end: false,
        connect_timeout: Duration::from_micros(r.connect_timeout_us),
        response_timeout: Duration::from_micros(r.response_timeout_us),
        busy_poll: Duration::from_micros(r.busy_poll_us),
        read_slack: r.read_slack,
        seed: r.seed,
        log: r.log.as_ref().map(Into::into),
        debug: false,
        progress: false,
        tls: o.tls.clone(),
        expect_status: r.expect_status.clone(),
        redirect: r.redirect,
        fail_fast: r.fail_fast,
        h3_early_data: r.early_data,
    };
    let slice = Slice {
        children,
        start: None,
        start_unix_us: None,
    };
    check(&config, &o.workload, &slice).map_err(|e| e.to_string())?;
    Ok((config, slice))
}

/// Reads stdin on its own thread, one message a line; ends with `Gone`.
fn read_input(input: Box<dyn BufRead + Send>) -> Receiver<Input> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (i, line) in input.lines().enumerate() {
            let Ok(line) = line else { break };
            if line.trim().is_empty() {
                continue;
            }
            let msg = match strict::decode::<ToWorker>(&line) {
                Ok(m) => Input::Message(m),
                Err(e) => Input::Bad(i + 1, e),
            };
            if tx.send(msg).is_err() {
                return;
            }
        }
        let _ = tx.send(Input::Gone);
    });
    rx
}

/// The next message; a bad line or the end of input ends the worker. `coordinator`: its flint
/// version, once its orders gave it.
fn next(inbox: &Receiver<Input>, coordinator: Option<&str>) -> Result<ToWorker, WorkerError> {
    match inbox.recv() {
        Ok(Input::Message(m)) => Ok(m),
        Ok(Input::Bad(line, Rejected::NotJson(why))) => Err(WorkerError::Refused(format!(
            "line {line} from the coordinator is not a message: {why}"
        ))),
        // A peer of another protocol version is named as such, whatever else its line holds.
        Ok(Input::Bad(_, Rejected::Refused { peer: Some(p), .. }))
            if p.protocol != PROTOCOL_VERSION =>
        {
            Err(WorkerError::Refused(mismatch(p.protocol, &p.flint_version)))
        }
        Ok(Input::Bad(_, Rejected::Refused { kind, why, peer })) => {
            let theirs = peer.as_ref().map(|p| p.flint_version.as_str());
            Err(WorkerError::Refused(protocol::refusal(
                &kind,
                "the coordinator",
                theirs.or(coordinator),
                &why,
                "worker",
            )))
        }
        Ok(Input::Gone) | Err(_) => Err(WorkerError::CoordinatorGone),
    }
}

/// The refusal of a coordinator of another protocol version.
fn mismatch(protocol: u32, flint_version: &str) -> String {
    format!(
        "protocol version {protocol} (flint {flint_version}) refused: this worker speaks version \
         {PROTOCOL_VERSION} (flint {FLINT_VERSION})"
    )
}

fn name(m: &ToWorker) -> &'static str {
    match m {
        ToWorker::Orders(_) => "orders",
        ToWorker::Ping { .. } => "ping",
        ToWorker::Go { .. } => "go",
        ToWorker::Stop => "stop",
    }
}

fn pong(out: &Out, seq: u32) -> Result<(), WorkerError> {
    let msg = ToCoordinator::Pong {
        seq,
        clock_unix_us: protocol::unix_us(),
    };
    out.send(&msg).map_err(WorkerError::Output)
}

/// During the run: a stop, the end of input or a bad line stops the run; pings are answered.
fn watch(
    inbox: Receiver<Input>,
    out: Out,
    stop: Arc<AtomicBool>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || loop {
        match inbox.recv_timeout(Duration::from_millis(200)) {
            Ok(Input::Message(ToWorker::Ping { seq })) => {
                let _ = pong(&out, seq);
            }
            Ok(Input::Message(_)) | Ok(Input::Bad(..)) | Ok(Input::Gone) => {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            Err(RecvTimeoutError::Timeout) if done.load(Ordering::Relaxed) => return,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                stop.store(true, Ordering::Relaxed);
                return;
            }
        }
    })
}

/// A heartbeat every second until the run is done; a failed write (the coordinator is gone)
/// stops the run.
fn beat(out: Out, stop: Arc<AtomicBool>, done: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    const EVERY: Duration = Duration::from_secs(1);
    const STEP: Duration = Duration::from_millis(50);
    std::thread::spawn(move || {
        let mut next = Instant::now();
        while !done.load(Ordering::Relaxed) {
            if Instant::now() >= next {
                if out.send(&ToCoordinator::Heartbeat).is_err() {
                    stop.store(true, Ordering::Relaxed);
                }
                next += EVERY;
            }
            std::thread::sleep(STEP);
        }
    })
}

/// Sends the live totals once a second.
struct Live(Out);

impl Observer for Live {
    fn live(&self, elapsed: Duration, warmup: bool, total: Counts) {
        let _ = self.0.send(&ToCoordinator::Live {
            elapsed_s: elapsed.as_secs_f64(),
            warmup,
            requests: total.requests,
            errors: total.errors,
            bytes: total.bytes,
        });
    }
}

/// This process's CPU time (user + sys), µs.
pub fn cpu_time() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000) + t.tv_nsec as u64 / 1000
}

#[cfg(test)]
mod tests;
