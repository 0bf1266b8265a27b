//! The papers' experiments, rerun on today's servers: an [`Experiment`] run with [`LabOptions`]
//! over the peers of `lab-peers`, profiled with `lab-profile`, gives a [`LabReport`] of
//! [`ResultRow`]s. It exists to hold what the papers measured and how, and nothing else: it
//! starts no process and reads no tracer itself.
//!
//! The experiments: `syscalls` (the Jigsaw syscall notes'
//! truss tables under HTTP/1.0, persistent and pipelined clients), `sizes` (the IO-Lite paper's
//! bandwidth against file size), `digest` (the Content-MD5 measurements: Apache's per-request Content-MD5 against a cached
//! one), `tls` (handshakes, the IO-Lite sweep and the keep-alive syscalls over HTTPS) and
//! `dynamic` (CGI and FastCGI against a static file, CPU per tier, `dynamic.rs`).
//!
//! Every experiment has the same shape: write the documents once (`docroot.rs`), then for each
//! peer start it pinned to the server core, run `bench` in this process pinned to the client
//! core, profile the peer over the measured window (`measure.rs`), stop it, and print as it goes.
//! A peer that is missing or fails is reported and the experiment goes on with the others: one
//! broken server should not cost the other nine minutes of measurements.
//!
//! The results are rows of one JSON shape ([`ResultRow`], docs/lab.md), which the HTML report
//! renders; [`LabReport::to_json`] is the whole document.

#![warn(missing_docs)]

pub mod certs;
mod database;
pub mod delay_line;
mod digest;
mod docroot;
mod dynamic;
mod measure;
pub mod netpath;
pub mod page;
pub mod priority;
mod results;
mod sizes;
mod syscalls;
mod table;
mod tls;

pub use database::Database;
pub use docroot::{MICROSCAPE_GIFS, MICROSCAPE_HTML};
/// The lab's PostgreSQL server, for the tests that start and stop one themselves.
pub use dynamic::postgres as dynamic_postgres;
pub use dynamic::{Deployment, PhpPrograms, DEFAULT_TESTS, DYNAMIC_CLIENTS, TEST_TYPES};
pub use page::{PageMode, H2_SERVER_MISSING, H3_NEEDS_TLS, H3_SERVER_MISSING};
pub use results::{
    LabReport, ResultRow, ServerStatus, Status, SyscallCount, SATURATED, SCHEMA_VERSION,
};
pub use syscalls::RTT_PAGES;
pub use tls::{missing_tls, HANDSHAKE_CLIENTS};

use ::results::LabOptionsRecord;
use lab_peers::{PeerError, PeerKind, PeerSpec};
use lab_profile::{Method, Profile};
use measure::{Load, Measurement};
use std::collections::HashSet;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

/// Which experiment to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Experiment {
    /// The page experiment: the microscape page fetched in each way of [`PageMode`], the
    /// server's system calls, CPU and packets per page.
    Syscalls,
    /// The response-size sweep (the IO-Lite paper): each size from each server, output
    /// bandwidth and the server's CPU per request.
    Sizes,
    /// Content-MD5 on each response against none: what the digest costs the server.
    Digest,
    /// Handshakes, the sizes sweep and keep-alive syscalls over HTTPS.
    Tls,
    /// CGI and FastCGI against a static file, CPU per tier.
    Dynamic,
    /// All of them in turn.
    All,
}

impl Experiment {
    /// The name on the command line (`flint lab NAME`) and in the JSON.
    pub fn name(self) -> &'static str {
        match self {
            Experiment::Syscalls => "syscalls",
            Experiment::Sizes => "sizes",
            Experiment::Digest => "digest",
            Experiment::Tls => "tls",
            Experiment::Dynamic => "dynamic",
            Experiment::All => "all",
        }
    }

    /// The single experiments this one runs, in order.
    pub fn parts(self) -> &'static [Experiment] {
        match self {
            Experiment::Syscalls => &[Experiment::Syscalls],
            Experiment::Sizes => &[Experiment::Sizes],
            Experiment::Digest => &[Experiment::Digest],
            Experiment::Tls => &[Experiment::Tls],
            Experiment::Dynamic => &[Experiment::Dynamic],
            Experiment::All => &[
                Experiment::Syscalls,
                Experiment::Sizes,
                Experiment::Digest,
                Experiment::Tls,
                Experiment::Dynamic,
            ],
        }
    }
}

/// Clients of the page experiment: one, as the notes' one browser or robot.
pub const SYSCALLS_CLIENTS: usize = 1;
/// Clients of the sizes sweep: the IO-Lite paper's number.
pub const SIZES_CLIENTS: usize = 40;
/// Clients of the digest experiment: the Content-MD5 measurements' number.
pub const DIGEST_CLIENTS: usize = 5;

/// The options of a lab run.
#[derive(Debug, Clone)]
pub struct LabOptions {
    /// Length of each measurement (after warm-up).
    pub duration: Duration,
    /// Load before each measurement, not counted ([`DEFAULT_WARMUP`]).
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
    /// the page experiment's default is [`RTT_PAGES`].
    pub pages: Option<u64>,
    /// The dynamic experiment's test types (`--tests`; [`TEST_TYPES`]' names).
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

/// Default length of each measurement: `flint lab all` runs 247 of them (the page experiment's
/// 77: six ways for five servers over cleartext and TLS and h3 over TLS for flint, Apache prefork
/// over cleartext without h2, Caddy without h2 and with h3 over TLS; 5 x 12 sizes, 3 digest runs,
/// 4 x 11 over TLS, 7 x 9 dynamic), each with its warm-up, server and tracer start-up: about 18
/// minutes in all (docs/lab.md).
pub const DEFAULT_DURATION: Duration = Duration::from_secs(2);
/// Default warm-up before each measurement: the load runs, nothing is counted, so that
/// connections, pools and caches are in their steady state when the window opens.
pub const DEFAULT_WARMUP: Duration = Duration::from_millis(500);

impl LabOptions {
    /// Every server, the IO-Lite paper's sizes, the defaults above, servers on core 0 and the client on
    /// core 1 when this thread may use both.
    pub fn new(flint_bin: Option<PathBuf>) -> Self {
        let two = lab_process::cpu_allowed(0) && lab_process::cpu_allowed(1);
        LabOptions {
            duration: DEFAULT_DURATION,
            warmup: DEFAULT_WARMUP,
            servers: PeerKind::ALL.to_vec(),
            profile: true,
            method: None,
            sizes: docroot::IO_LITE_SIZES.to_vec(),
            server_cpu: two.then_some(0),
            client_cpu: two.then_some(1),
            rtts: vec![Duration::ZERO],
            page_modes: PageMode::ALL.to_vec(),
            pages: None,
            tests: DEFAULT_TESTS.map(str::to_owned).to_vec(),
            db: Database::Sqlite,
            deployments: Deployment::DEFAULT.to_vec(),
            php: PhpPrograms::default(),
            // flint-app is built beside flint (target/<profile>/, or an install's bin/).
            app_bin: flint_bin.as_ref().map(|f| f.with_file_name("flint-app")),
            flint_bin,
        }
    }

    /// The options as the result document records them, with the tracer the run uses (`None`:
    /// no syscalls traced, by `--no-profile` or for want of a tracer).
    pub fn record(&self, method: Option<Method>) -> LabOptionsRecord {
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
            rtt_ms: self.rtts.iter().map(|r| r.as_secs_f64() * 1e3).collect(),
            modes: self
                .page_modes
                .iter()
                .map(|m| m.name().to_owned())
                .collect(),
            profile,
            server_cpu: self.server_cpu.map(|c| c as u64),
            client_cpu: self.client_cpu.map(|c| c as u64),
            tests: self.tests.clone(),
            db: Some(self.db.name().to_owned()),
            deployments: (self.deployments.iter())
                .map(|d| d.name().to_owned())
                .collect(),
        }
    }

    /// Servers an experiment runs: those of `servers` not [`left_out`](Self::left_out) of it.
    fn servers_for(&self, experiment: Experiment) -> Vec<PeerKind> {
        self.servers
            .iter()
            .copied()
            .filter(|&k| Self::left_out(k, experiment).is_none())
            .collect()
    }

    /// How long each measurement is, for an experiment's header: `2 s each`, `40 pages each`.
    fn each(&self) -> String {
        match self.pages {
            Some(n) => format!("{n} pages each"),
            None => format!("{} s each", self.duration.as_secs_f64()),
        }
    }

    /// Why `kind` is not measured in `experiment` (a single one), when it is not.
    pub fn left_out(kind: PeerKind, experiment: Experiment) -> Option<&'static str> {
        match experiment {
            Experiment::Digest if !kind.supports_digest() => {
                Some("digest measures the servers with a Content-MD5 option: flint and Apache")
            }
            Experiment::Tls if !tls::SERVERS.contains(&kind) => Some(
                "tls measures flint, nginx, lighttpd and Apache with the event MPM (prefork's \
                 TLS is the same mod_ssl)",
            ),
            // Every server has dynamic deployments (those it lacks are rows `unsupported`).
            // Caddy joined the lab for the dynamic experiment (php_fastcgi, reverse_proxy), and
            // is in the page experiment as the other server that speaks HTTP/3.
            _ if kind == PeerKind::Caddy
                && !matches!(experiment, Experiment::Dynamic | Experiment::Syscalls) =>
            {
                Some("caddy is in the lab for the dynamic and syscalls experiments only")
            }
            Experiment::Sizes if kind == PeerKind::H2o => Some(
                "sizes does not measure h2o (it is in the lab for the syscalls page experiment)",
            ),
            _ => None,
        }
    }

    /// The sizes of the sweep over HTTPS: every other size of the plain sweep, the whole range
    /// at half the measurements, so that `flint lab all` stays under ten minutes.
    pub fn tls_sizes(&self) -> Vec<u64> {
        self.sizes.iter().step_by(2).copied().collect()
    }

    /// About how long `experiment` takes: each measurement's warm-up and window, and some 1.5 s
    /// to start its server and attach and detach a tracer (0.5 s with no tracer). With `--pages` a window is that many
    /// pages in every experiment, and in the syscalls experiment over a round trip too: guessed
    /// at 0.1 s a microscape page plus a round trip for each of its 44 files, and at 5 ms a
    /// page of the other experiments' single documents (a TLS handshake's time on one core).
    pub fn estimate(&self, experiment: Experiment) -> Duration {
        const ONE_FILE_PAGE: Duration = Duration::from_millis(5);
        let setup = Duration::from_millis(if self.profile { 1500 } else { 500 });
        let per_run = |window: Duration| self.warmup + setup + window;
        let mut total = Duration::ZERO;
        for &part in experiment.parts() {
            let runs = self.runs(part) as u32;
            if part != Experiment::Syscalls {
                let window = match self.pages {
                    Some(n) => ONE_FILE_PAGE.mul_f64(n as f64),
                    None => self.duration,
                };
                // A dynamic measurement traces a second run of its own.
                let traced = part == Experiment::Dynamic && self.profile;
                let window = if traced { window * 2 } else { window };
                total += per_run(window) * runs;
                continue;
            }
            let per_rtt = runs / self.rtts.len().max(1) as u32;
            for &rtt in &self.rtts {
                let pages = self.pages.or((!rtt.is_zero()).then_some(RTT_PAGES));
                let window = match pages {
                    Some(n) => (Duration::from_millis(100) + rtt * 44) * n as u32,
                    None => self.duration,
                };
                total += per_run(window) * per_rtt;
            }
        }
        total
    }

    /// Measurements `experiment` makes.
    pub fn runs(&self, experiment: Experiment) -> usize {
        experiment
            .parts()
            .iter()
            .map(|&e| {
                let servers = self.servers_for(e);
                match e {
                    Experiment::Syscalls => {
                        let per_rtt: usize = servers
                            .iter()
                            .map(|&k| syscalls::runs_per_server(k, &self.page_modes))
                            .sum();
                        per_rtt * self.rtts.len()
                    }
                    Experiment::Sizes => self.sizes.len() * servers.len(),
                    Experiment::Tls => tls::runs_per_server(self) * servers.len(),
                    Experiment::Dynamic => {
                        dynamic::runs_per_server(self.tests.len(), &self.deployments)
                            * servers.len()
                    }
                    _ => servers.len(),
                }
            })
            .sum()
    }
}

/// Why a lab run could not go on.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// The options name no server.
    #[error("no servers to run")]
    NoServers,
    /// The document root's files could not be written.
    #[error("writing the document root: {0}")]
    Docroot(#[from] bench::fileset::FilesetError),
    /// The temporary directory of the document root could not be made.
    #[error("creating the document root: {0}")]
    TempDir(std::io::Error),
    /// The tables or the JSON could not be written where they go.
    #[error("writing the output: {0}")]
    Output(#[from] std::io::Error),
    /// The TLS experiments' certificates could not be made or written.
    #[error(transparent)]
    Certificate(#[from] certs::CertError),
}

/// What the experiments share while they run.
struct Lab<'a> {
    opts: &'a LabOptions,
    root: tempfile::TempDir,
    method: Option<Method>,
    servers: Vec<ServerStatus>,
    results: Vec<ResultRow>,
    /// The results: tables as they come.
    out: &'a mut dyn Write,
    /// Progress and warnings, so that a terminal is never silent while `out` goes to a file.
    progress: &'a mut dyn Write,
    stop: &'a AtomicBool,
    /// Measurements started, of `planned`.
    started: usize,
    planned: usize,
    /// Long notes and warnings already printed: each is printed once.
    said: HashSet<String>,
}

/// Runs `experiment` with `opts`, printing tables to `out` as results come and progress and
/// warnings to `progress`; `stop` (Ctrl-C) ends it after the current measurement (which is
/// marked interrupted), with what was measured so far.
pub fn run(
    experiment: Experiment,
    opts: &LabOptions,
    out: &mut dyn Write,
    progress: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<LabReport, LabError> {
    if opts.servers.is_empty() {
        return Err(LabError::NoServers);
    }
    let started_at = SystemTime::now();
    let root = tempfile::Builder::new()
        .prefix("flint-lab-docs.")
        .tempdir()
        .map_err(LabError::TempDir)?;
    docroot::write(root.path(), &opts.sizes)?;
    let method = if opts.profile {
        match opts.method.map_or_else(lab_profile::detect_method, Ok) {
            Ok(m) => {
                writeln!(out, "profile: {m}{}", method_note(m))?;
                Some(m)
            }
            Err(e) => {
                let line = format!("profile: unavailable ({e}); going on without syscall counts");
                writeln!(out, "{line}")?;
                writeln!(progress, "flint lab: {line}")?;
                None
            }
        }
    } else {
        None
    };
    let mut servers = Vec::new();
    for &kind in &opts.servers {
        let status = match kind.probe(opts.flint_bin.as_deref()) {
            Ok(i) => ServerStatus {
                name: kind.name().into(),
                version: Some(i.version),
                status: Status::Ok,
                note: None,
                kind,
            },
            Err(e) => {
                writeln!(
                    progress,
                    "flint lab: {kind}: {e}; the experiments go on without it"
                )?;
                ServerStatus {
                    name: kind.name().into(),
                    version: None,
                    status: Status::Missing,
                    note: Some(match e {
                        PeerError::NotInstalled { install, .. } => format!("install: {install}"),
                        other => other.to_string(),
                    }),
                    kind,
                }
            }
        };
        servers.push(status);
    }
    let mut lab = Lab {
        opts,
        root,
        method,
        servers,
        results: Vec::new(),
        out,
        progress,
        stop,
        started: 0,
        planned: opts.runs(experiment),
        said: HashSet::new(),
    };
    for &part in experiment.parts() {
        if lab.stopped() {
            break;
        }
        match part {
            Experiment::Syscalls => syscalls::run(&mut lab)?,
            Experiment::Sizes => sizes::run(&mut lab)?,
            Experiment::Digest => digest::run(&mut lab)?,
            Experiment::Tls => tls::run(&mut lab)?,
            Experiment::Dynamic => dynamic::run(&mut lab)?,
            Experiment::All => {}
        }
    }
    Ok(LabReport {
        experiment,
        started_at,
        options: opts.record(lab.method),
        interrupted: lab.stopped(),
        servers: lab.servers,
        results: lab.results,
    })
}

fn method_note(m: Method) -> &'static str {
    if m == Method::Strace {
        " (strace stops the server at every syscall: rates are lower than unprofiled; \
         --no-profile for rates)"
    } else {
        " (counting in the kernel: the server runs at full speed)"
    }
}

impl Lab<'_> {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// The servers of `experiment` that are installed.
    fn runnable(&self, experiment: Experiment) -> Vec<PeerKind> {
        self.opts
            .servers_for(experiment)
            .into_iter()
            .filter(|k| {
                self.servers
                    .iter()
                    .any(|s| s.kind == *k && s.status != Status::Missing)
            })
            .collect()
    }

    fn spec(&self, digest: bool, max_clients: usize) -> PeerSpec {
        PeerSpec {
            root: self.root.path().to_owned(),
            digest,
            max_clients,
            cpu: self.opts.server_cpu,
            flint_bin: self.opts.flint_bin.clone(),
            ready_timeout: Duration::from_secs(20),
            tls: None,
            http2: false,
            net: None,
        }
    }

    fn load(&self, clients: usize, http: bench::HttpMode) -> Load {
        Load {
            clients,
            per_client: 1,
            http,
            duration: self.opts.duration,
            warmup: self.opts.warmup,
            cpu: self.opts.client_cpu,
            pages: self.opts.pages,
        }
    }

    /// Records that `kind` failed (the first reason is kept) and says so on the progress
    /// stream. Only the first failure of a server is printed in full (with the server's log).
    fn failed(&mut self, kind: PeerKind, what: &str, why: &str) -> std::io::Result<()> {
        let first = why.lines().next().unwrap_or(why);
        match self.servers.iter_mut().find(|s| s.kind == kind) {
            Some(s) if s.status == Status::Ok => {
                s.status = Status::Failed;
                s.note = Some(format!("{what}: {first}"));
                writeln!(self.progress, "flint lab: {kind}: {what}: {why}")
            }
            _ => writeln!(self.progress, "flint lab: {kind}: {what}: {first}"),
        }
    }

    /// `note: TEXT` on the results, the first time only.
    fn note(&mut self, text: &str) -> std::io::Result<()> {
        if self.said.insert(text.to_owned()) {
            writeln!(self.out, "note: {text}")?;
        }
        Ok(())
    }

    /// The profile's truss table, its notes printed once per run.
    fn truss(&mut self, p: &Profile, requests: u64, pages: u64) -> std::io::Result<()> {
        write!(self.out, "{}", p.truss_table_body(requests, pages))?;
        for note in &p.notes {
            self.note(note)?;
        }
        Ok(())
    }

    /// The client-limited footnote, under the first table that needs it.
    fn footnote(&mut self, needed: bool) -> std::io::Result<()> {
        if needed && self.said.insert(table::FOOTNOTE.to_owned()) {
            writeln!(self.out, "{}", table::FOOTNOTE)?;
        }
        Ok(())
    }

    /// Runs one measurement; a failure is recorded against the server and gives `None`, and so
    /// does a server that has died (its process has exited), without measuring. A measurement
    /// cut short by Ctrl-C is returned, marked interrupted (`m.run.interrupted`).
    fn measure(
        &mut self,
        peer: &mut lab_peers::Peer,
        workload: &bench::Workload,
        load: Load,
        what: &str,
    ) -> std::io::Result<Option<Measurement>> {
        self.measure_with(peer, load, what, |peer, method, stop| {
            measure::measure(peer, workload, load, method, stop)
        })
    }

    /// [`Lab::measure`] with the measurement itself given (`flint lab tls` measures over HTTPS).
    fn measure_with(
        &mut self,
        peer: &mut lab_peers::Peer,
        load: Load,
        what: &str,
        measure: impl FnOnce(
            &lab_peers::Peer,
            Option<Method>,
            &AtomicBool,
        ) -> Result<Measurement, measure::MeasureError>,
    ) -> std::io::Result<Option<Measurement>> {
        self.started += 1;
        let kind = peer.kind();
        let length = match load.pages {
            Some(n) => format!("{n} pages after {:.1} s warm-up", load.warmup.as_secs_f64()),
            None => format!("{:.1} s", (load.warmup + load.duration).as_secs_f64()),
        };
        writeln!(
            self.progress,
            "flint lab: [{}/{}] {kind} {what} ({length})",
            self.started, self.planned,
        )?;
        if let Some(how) = peer.exited() {
            self.failed(kind, what, &how)?;
            return Ok(None);
        }
        match measure(peer, self.method, self.stop) {
            Ok(m) => {
                if let Some(e) = &m.profile_error {
                    if self.said.insert(e.clone()) {
                        writeln!(self.progress, "flint lab: {kind}: {what}: profile: {e}")?;
                    } else {
                        writeln!(
                            self.progress,
                            "flint lab: {kind}: {what}: no profile (as above)"
                        )?;
                    }
                }
                if m.run.interrupted {
                    writeln!(
                        self.progress,
                        "flint lab: {kind}: {what}: interrupted after {:.1} s; not counted in \
                         the tables",
                        m.run.duration.as_secs_f64()
                    )?;
                }
                Ok(Some(m))
            }
            Err(e) => {
                self.failed(kind, what, &e.to_string())?;
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_not_the_duration_make_the_syscalls_estimate() {
        let mut opts = LabOptions::new(None);
        opts.servers = vec![PeerKind::Flint];
        opts.page_modes = vec![PageMode::ALL[0]];
        opts.duration = Duration::from_secs(60);
        opts.warmup = Duration::from_millis(500);
        let runs = opts.runs(Experiment::Syscalls) as u32;
        assert!(runs > 0);
        assert_eq!(
            opts.estimate(Experiment::Syscalls),
            Duration::from_secs(62) * runs
        );
        // Three pages at no round trip: 0.1 s each, the 60 s window unused.
        opts.pages = Some(3);
        assert_eq!(
            opts.estimate(Experiment::Syscalls),
            Duration::from_millis(2300) * runs
        );
        // The other experiments count pages too: three of one document each.
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(2015) * opts.runs(Experiment::Digest) as u32
        );
        // Without a tracer to attach and detach, a measurement's setup is shorter.
        opts.profile = false;
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_millis(1015) * opts.runs(Experiment::Digest) as u32
        );
        opts.profile = true;
        opts.pages = None;
        assert_eq!(
            opts.estimate(Experiment::Digest),
            Duration::from_secs(62) * opts.runs(Experiment::Digest) as u32
        );
        // A dynamic measurement traces a second run of its own: two windows.
        let runs = opts.runs(Experiment::Dynamic) as u32;
        assert!(runs > 0);
        assert_eq!(
            opts.estimate(Experiment::Dynamic),
            Duration::from_secs(122) * runs
        );
        opts.profile = false;
        assert_eq!(
            opts.estimate(Experiment::Dynamic),
            Duration::from_secs(61) * runs
        );
    }
}
