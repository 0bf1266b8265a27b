//! Threads, warm-up, duration, Ctrl-C, progress, and the exact merge of per-thread results.
//!
//! CONTRACT (owned by the engine helper):
//!
//! ```ignore
//! pub fn run(config: &BenchConfig, workload: &Workload, stop: &AtomicBool) -> Result<RunResult, BenchError>;
//! ```
//! `stop` set (by Ctrl-C) ends the run early; the result then has `interrupted = true` and holds
//! what was measured.

use crate::{BenchConfig, Stats, Workload};
use std::time::{Duration, SystemTime};

/// A finished run: what was asked, what was fetched, what was measured.
#[derive(Debug, Clone)]
pub struct RunResult {
    pub config: BenchConfig,
    pub workload: Workload,
    pub stats: Stats,
    /// Length of the measured window (warm-up excluded).
    pub duration: Duration,
    /// Wall-clock start of the measured window.
    pub started_at: SystemTime,
    /// Ended early by Ctrl-C.
    pub interrupted: bool,
}
