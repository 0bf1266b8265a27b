//! What the server process did during the measured window (`flint bench --profile`, and each
//! run of the lab's experiments): its CPU and its system calls, as the truss tables of the Jigsaw
//! syscall notes.

use serde::{Deserialize, Serialize};

/// A server's profile over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerProfile {
    /// The process profiled (`--profile PID`, or the one `auto` found listening on the
    /// target's port), its threads and child processes with it.
    pub pid: u32,
    /// Every process profiled (the server's workers included).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pids: Vec<u32>,
    /// `perf` or `strace`.
    pub method: String,
    /// Length of the profiled window, seconds.
    pub window_s: f64,
    /// The server's CPU time in user mode over the window, seconds, threads and children included.
    pub cpu_user_s: f64,
    /// The server's CPU time in the kernel over the window, seconds, threads and children included.
    pub cpu_sys_s: f64,
    /// (user + sys) µs per request; `None` without requests.
    pub cpu_us_per_request: Option<f64>,
    /// The truss-style table, one row per system call.
    pub syscalls: Vec<SyscallRow>,
    /// System calls the server's tasks made in the window: the `sys totals:` line (perf
    /// counts them in the kernel; calls its table missed are the `(unattributed)` row).
    pub total_calls: u64,
    /// Calls that returned an error, `EAGAIN` included.
    pub total_errors: u64,
    /// `None` when the method counts calls only.
    pub total_seconds: Option<f64>,
    /// `total_calls / requests` (completed requests of the window); `None` without requests.
    pub calls_per_request: Option<f64>,
    /// `total_calls / pages`; `None` without pages.
    pub calls_per_page: Option<f64>,
    /// How the profile was taken and what to mind (strace's slowdown, calls left unattributed).
    pub note: String,
}

/// One row of the truss-style table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct SyscallRow {
    /// The system call's name, or a row in parentheses: `(unattributed)`, `(all syscalls)`.
    pub name: String,
    /// Time inside the call, seconds: CPU time in the kernel with strace, wall time from entry to
    /// exit with perf; `None` when unknown.
    pub seconds: Option<f64>,
    /// Calls made in the window.
    pub calls: u64,
    /// Calls that returned an error, `EAGAIN` included.
    pub errors: u64,
}
