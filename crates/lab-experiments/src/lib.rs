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
//! This file runs them ([`run`]); what a run is made of is beside it: the experiments
//! (`experiment.rs`), the options, their defaults and record (`options.rs`) and what they make
//! of each experiment, its servers, measurements and length (`options/plan.rs`), and the state
//! the experiments share while they run, one measurement at a time (`lab.rs`).
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
mod experiment;
mod lab;
mod measure;
pub mod netpath;
mod options;
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
pub use experiment::{Experiment, DIGEST_CLIENTS, SIZES_CLIENTS, SYSCALLS_CLIENTS};
pub use options::defaults::{DEFAULT_DURATION, DEFAULT_WARMUP};
pub use options::LabOptions;
pub use page::{PageMode, H2_SERVER_MISSING, H3_NEEDS_TLS, H3_SERVER_MISSING};
pub use results::{
    LabReport, ResultRow, ServerStatus, Status, SyscallCount, SATURATED, SCHEMA_VERSION,
};
pub use syscalls::RTT_PAGES;
pub use tls::{missing_tls, HANDSHAKE_CLIENTS};

use lab::Lab;
use lab_peers::PeerError;
use lab_profile::Method;
use std::collections::HashSet;
use std::io::Write;
use std::sync::atomic::AtomicBool;
use std::time::SystemTime;

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
    // The servers the experiment measures, no others: the JSON lists these alone (h2o and Caddy
    // are no part of `lab sizes`, so neither probed nor listed as if they had run).
    let mut servers = Vec::new();
    for kind in opts.servers_in(experiment) {
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
    // The count and the estimate are of the measurements to be made: a server not installed
    // makes none.
    let installed = LabOptions {
        servers: (servers.iter())
            .filter(|s| s.status != Status::Missing)
            .map(|s| s.kind)
            .collect(),
        ..opts.clone()
    };
    writeln!(progress, "{}", installed.first_line(experiment))?;
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
        planned: installed.runs(experiment),
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
    let interrupted = lab.stopped();
    if interrupted {
        lab.not_reached();
    }
    Ok(LabReport {
        experiment,
        started_at,
        options: opts.record(experiment, lab.method),
        interrupted,
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
