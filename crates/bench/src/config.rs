//! The options of one `flint bench` run, as the engine sees them (the CLI builds this).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// Where requests go.
#[derive(Debug, Clone)]
pub struct Target {
    /// Resolved once, before the run: no DNS on the hot path.
    pub addr: SocketAddr,
    /// The `Host` header value (`127.0.0.1:8080`).
    pub host: String,
    /// What the user wrote, for reports.
    pub url: String,
}

/// How files are fetched over connections (the result documents use the same vocabulary).
pub use results::HttpMode;

/// When the run ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// Measure for this long (after warm-up).
    Duration(Duration),
    /// WebSTONE's repetition count: this many pages in all, across all Webchildren.
    Pages(u64),
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub target: Target,
    /// Webchildren (connections in flight at once).
    pub concurrency: usize,
    /// Event-loop threads; Webchildren are spread evenly across them.
    pub threads: usize,
    pub stop: Stop,
    /// Run this long before measuring; nothing from it counts.
    pub warmup: Duration,
    /// Closed loop: pause after each page.
    pub think: Option<Duration>,
    /// Open loop: pages per second across all Webchildren (wrk2-style; latency from intended start).
    pub rate: Option<f64>,
    pub http: HttpMode,
    pub connect_timeout: Duration,
    pub response_timeout: Duration,
    pub seed: u64,
    /// One CSV line per request.
    pub log: Option<PathBuf>,
    /// Print each request's and response's head to stderr.
    pub debug: bool,
    /// Live line on stderr (the CLI sets it only when stderr is a terminal).
    pub progress: bool,
}
