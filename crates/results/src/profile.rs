//! What the server process did during the measured window (`flint bench --profile`, and each
//! run of the lab's experiments): its CPU and its system calls, as the truss tables of the Jigsaw
//! syscall notes.

use serde::{Deserialize, Serialize};

/// A server's profile over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerProfile {
    pub pid: u32,
    /// Every process profiled (the server's workers included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
    /// `perf` or `strace`.
    pub method: String,
    pub window_s: f64,
    pub cpu_user_s: f64,
    pub cpu_sys_s: f64,
    /// (user + sys) µs per request; `None` without requests.
    pub cpu_us_per_request: Option<f64>,
    pub syscalls: Vec<SyscallRow>,
    pub total_calls: u64,
    pub total_errors: u64,
    /// `None` when the method counts calls only.
    pub total_seconds: Option<f64>,
    pub calls_per_request: Option<f64>,
    pub calls_per_page: Option<f64>,
    pub note: String,
}

/// One row of the truss-style table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyscallRow {
    pub name: String,
    pub seconds: Option<f64>,
    pub calls: u64,
    pub errors: u64,
}
