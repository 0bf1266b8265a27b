//! Following the run from GO to the last result: each host's live figures and heartbeats, the
//! live line, a host lost to silence or to a refused message, Ctrl-C passed on to every worker.

use super::host::{refused, with_last_words, Host, State};
use super::HostsRun;
use crate::hosts::launch::{Event, Said};
use crate::hosts::protocol::{ToCoordinator, ToWorker};
use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// A running host silent this long is lost (it sends a heartbeat every second).
const HEARTBEAT_TIMEOUT: Duration = Duration::from_secs(3);
/// After Ctrl-C, how long the workers have to send what they measured.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// From GO to the last result: live figures, heartbeats, losses, Ctrl-C.
pub(super) fn follow(
    hosts: &mut [Host],
    events: &Receiver<Event>,
    r: &HostsRun<'_>,
    log: &mut dyn Write,
) {
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

pub(super) fn on_event(h: &mut Host, ev: Event) {
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
