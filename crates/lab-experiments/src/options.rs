//! The options of a lab run: what `flint lab` sets and how the result document records them.
//! Their defaults are `options/defaults.rs`; what they make of each experiment (its servers,
//! how many measurements, how long) is `options/plan.rs`.

use crate::{Database, Deployment, Experiment, PageMode, PhpPrograms};
use ::results::LabOptionsRecord;
use lab_peers::PeerKind;
use lab_profile::Method;
use std::path::PathBuf;
use std::time::Duration;

pub(crate) mod defaults;
mod plan;

/// The options of a lab run.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Length of each measurement (after warm-up).
    pub duration: Duration,
    /// Load before each measurement, not counted ([`DEFAULT_WARMUP`](crate::DEFAULT_WARMUP)).
    pub warmup: Duration,
    /// The servers measured, each in turn.
    pub servers: Vec<PeerKind>,
    /// Profile the servers' syscalls (strace or perf); CPU time is read either way.
    pub profile: bool,
    /// The tracer to use; `None`: the one [`lab_profile::detect_method`] finds.
    pub method: Option<Method>,
    /// The flint executable, for the flint peer.
    pub flint_bin: Option<PathBuf>,
    /// The sizes experiment's document sizes, bytes.
    pub sizes: Vec<u64>,
    /// Core the servers are pinned to; `None`: not pinned.
    pub server_cpu: Option<usize>,
    /// Core the load threads are pinned to; `None`: not pinned.
    pub client_cpu: Option<usize>,
    /// The page experiment's round trips (`--rtt`), each added on the network path.
    pub rtts: Vec<Duration>,
    /// The page experiment's ways of fetching (`--modes`; default: all).
    pub page_modes: Vec<PageMode>,
    /// Fetch this many pages per measurement rather than run for `duration` (`--pages`), in
    /// every experiment: a count ends the same whatever the machine's speed. Over a round trip
    /// the page experiment's default is [`RTT_PAGES`](crate::RTT_PAGES).
    pub pages: Option<u64>,
    /// The dynamic experiment's test types (`--tests`; [`TEST_TYPES`](crate::TEST_TYPES)' names).
    pub tests: Vec<String>,
    /// The dynamic experiment's database (`--db`): SQLite in the application, or PostgreSQL as
    /// a tier of its own.
    pub db: Database,
    /// The dynamic experiment's deployments (`--deployments`; default
    /// [`Deployment::DEFAULT`]: the static baseline and flint-app's CGI and FastCGI).
    pub deployments: Vec<Deployment>,
    /// The PHP programs of the `php-fpm` and `php-cgi` deployments; `None`: Debian's, found on
    /// the machine.
    pub php: PhpPrograms,
    /// The reference application (`flint-app`) for the dynamic experiment; `None` or absent:
    /// that experiment is skipped with a note.
    pub app_bin: Option<PathBuf>,
}

impl LabOptions {
    /// The options as the result document records them, with the tracer the run uses (`None`:
    /// no syscalls traced, by `--no-profile` or for want of a tracer): those that shaped
    /// `experiment`, so not the page experiment's round trips and ways, nor the dynamic
    /// experiment's test types, database and deployments, where that experiment did not run.
    pub fn record(&self, experiment: Experiment, method: Option<Method>) -> LabOptionsRecord {
        let page = experiment.parts().contains(&Experiment::Syscalls);
        let dynamic = experiment.parts().contains(&Experiment::Dynamic);
        let profile = match (method, self.profile) {
            (Some(m), _) => m.to_string(),
            (None, false) => LabOptionsRecord::PROFILE_OFF.to_owned(),
            (None, true) => LabOptionsRecord::PROFILE_UNAVAILABLE.to_owned(),
        };
        LabOptionsRecord {
            duration_s: self.duration.as_secs_f64(),
            warmup_s: Some(self.warmup.as_secs_f64()),
            pages: self.pages,
            servers: self.servers.iter().map(|k| k.name().to_owned()).collect(),
            rtt_ms: (self.rtts.iter())
                .filter(|_| page)
                .map(|r| r.as_secs_f64() * 1e3)
                .collect(),
            modes: (self.page_modes.iter())
                .filter(|_| page)
                .map(|m| m.name().to_owned())
                .collect(),
            profile,
            server_cpu: self.server_cpu.map(|c| c as u64),
            client_cpu: self.client_cpu.map(|c| c as u64),
            tests: (self.tests.iter()).filter(|_| dynamic).cloned().collect(),
            db: dynamic.then(|| self.db.name().to_owned()),
            deployments: (self.deployments.iter())
                .filter(|_| dynamic)
                .map(|d| d.name().to_owned())
                .collect(),
        }
    }

    /// How long each measurement is, for an experiment's header: `2 s each`, `40 pages each`.
    pub(crate) fn each(&self) -> String {
        match self.pages {
            Some(n) => format!("{n} pages each"),
            None => format!("{} s each", self.duration.as_secs_f64()),
        }
    }

    /// The sizes of the sweep over HTTPS: every other size of the plain sweep, the whole range
    /// at half the measurements, so that `flint lab all` stays under ten minutes.
    pub fn tls_sizes(&self) -> Vec<u64> {
        self.sizes.iter().step_by(2).copied().collect()
    }
}
