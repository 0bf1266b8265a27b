//! A host as the coordinator follows it: where it is in the run, what its live figures said,
//! and how its failures are worded (a refusal naming both builds, a worker's last words on
//! stderr).

use crate::hosts::clock::{self, Probe};
use crate::hosts::launch::Process;
use crate::hosts::protocol::{self, WorkerResult, FLINT_VERSION, PROTOCOL_VERSION};
use crate::hosts::strict::Versions;
use std::ops::Range;
use std::time::{Duration, Instant};

/// How long a worker whose channel closed has to finish saying why on stderr (ssh says it as
/// it exits); waited only when its stderr stays open that long.
const LAST_WORDS: Duration = Duration::from_secs(2);

/// Where a host is.
pub(super) enum State {
    Starting,
    Ready,
    Running,
    Done(Box<WorkerResult>),
    Lost(String),
    Failed(String),
}

/// One host of the run: its worker's process, its Webchildren, and what it has said.
pub(super) struct Host {
    pub(super) name: String,
    /// Its place in the host list (which rows of a `unique` data set are its own).
    pub(super) place: usize,
    pub(super) children: Range<usize>,
    /// Where it writes its per-request log, on its own machine (`--log`).
    pub(super) log: Option<String>,
    pub(super) process: Process,
    /// Its worker's flint version, once its hello gave it.
    pub(super) flint_version: Option<String>,
    pub(super) state: State,
    pub(super) last_heard: Instant,
    pub(super) probes: Vec<Probe>,
    pub(super) ping_sent_unix_us: u64,
    pub(super) offset: Option<clock::Offset>,
    pub(super) live: Live,
}

/// What a host's live figures (once a second, totals warm-up included) said it had done: all a
/// lost host leaves.
#[derive(Default)]
pub(super) struct Live {
    /// The last totals: requests, errors, bytes.
    pub(super) now: (u64, u64, u64),
    /// The totals at its last figures of the warm-up.
    pub(super) warmup: (u64, u64, u64),
    /// Seconds since its start at its last figures.
    pub(super) elapsed_s: f64,
    /// Requests per second of the window, from the differences between its figures.
    pub(super) per_second: Vec<u64>,
}

impl Live {
    pub(super) fn heard(&mut self, elapsed_s: f64, warmup: bool, now: (u64, u64, u64)) {
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

/// A worker of another protocol version, refused by its hello.
pub(super) fn mismatch(protocol: u32, flint_version: &str) -> String {
    format!(
        "its worker speaks protocol version {protocol} (flint {flint_version}), this \
         coordinator version {PROTOCOL_VERSION} (flint {FLINT_VERSION})"
    )
}

/// A message of a worker of another build, refused.
pub(super) fn refused(h: &Host, kind: &str, why: &str, peer: Option<Versions>) -> String {
    match peer {
        // Another protocol version is named as such, whatever else its line holds.
        Some(p) if p.protocol != PROTOCOL_VERSION => mismatch(p.protocol, &p.flint_version),
        _ => {
            let theirs = peer.map(|p| p.flint_version).or(h.flint_version.clone());
            protocol::refusal(kind, "its worker", theirs.as_deref(), why, "coordinator")
        }
    }
}

pub(super) fn with_stderr(why: String, p: &Process) -> String {
    quoting(why, p.stderr_tail())
}

/// `why`, with what a worker whose channel closed said on stderr as it went (ssh's reason).
pub(super) fn with_last_words(why: String, p: &Process) -> String {
    quoting(why, p.last_words(LAST_WORDS))
}

pub(super) fn quoting(why: String, said: String) -> String {
    match said {
        t if t.is_empty() => why,
        t => format!("{why} ({t})"),
    }
}
