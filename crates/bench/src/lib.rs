//! `flint bench`: the WebSTONE load generator, rebuilt.
//!
//! WebSTONE (1995) spawned "Webchildren" that fetched weighted pages of files and reported connect
//! time, response time, throughput and pages per minute. This crate is that model with today's
//! needs: closed-loop and open-loop (constant-rate) load, HTTP/1.0, keep-alive and pipelining,
//! exact HDR histograms that merge across threads (and later across hosts), and three reports:
//! the paper's, ptester's per-URL table, and a modern summary; plus JSON.
//!
//! Layout, by role:
//! - [`workload`]: what to fetch (TOML workloads, WebSTONE filelists, command-line paths);
//! - [`fileset`]: the document trees the paper's mixes describe;
//! - [`target`]: where to fetch it from (a URL, parsed and resolved once);
//! - [`config`]: how to fetch it (the options of a run);
//! - [`transport`]: a Webchild's connection (plain TCP; the seam for other transports);
//! - [`client`]: the hot path: one thread's event loop, the Webchild's page logic and its
//!   connection's protocol state machine beside it;
//! - [`runner`]: the plan (who runs which Webchildren, for how long), the threads, the exact
//!   merge, and the [`Observer`] told when the measured window starts and ends; a [`Slice`] of a
//!   run is what a worker on one of many client hosts runs;
//! - [`hosts`]: many client hosts: the worker, the coordinator (the WebMASTER) and their
//!   line-delimited protocol;
//! - [`stats`]: what a run measured, preallocated and mergeable, with a time series per second;
//! - [`report`]: the WebSTONE report, ptester's table, the modern summary, JSON, and the
//!   machine's description ([`report::environment`]);
//! - [`thresholds`]: pass/fail conditions on a run's figures (`p99<50ms`, `error_rate<1%`).

#![warn(missing_docs)]

pub mod app;
pub mod client;
pub mod config;
pub mod fileset;
pub mod hosts;
pub mod log;
pub mod progress;
pub mod report;
pub mod runner;
pub mod stats;
pub mod target;
pub mod thresholds;
pub mod transport;
pub mod workload;

pub use config::{BenchConfig, HttpMode, Stop};
pub use runner::{
    run, run_observed, run_slice, BenchError, NoObserver, Observer, RunResult, Slice, SliceOutcome,
};
pub use stats::{SecondStats, Stats};
pub use target::{Scheme, Target, TargetError};
pub use workload::{Page, RequestSpec, Workload, WorkloadError};
