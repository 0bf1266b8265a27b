//! A server's syscalls and CPU time over a measured window: a [`Profile`] (per-syscall
//! [`SyscallRow`]s, totals, the server's CPU), taken by a [`Window`] that `bench` opens and
//! closes, with the tracer a [`Method`] names ([`detect_method`] picks the one this machine
//! allows). The truss tables of the Jigsaw syscall notes and of the threaded-Apache
//! measurements, today.
//!
//! It exists because no load generator says what the server did per request, and because
//! `flint bench --profile` and every experiment must count the same way: one window profiler,
//! one tracer choice, one table.
//!
//! Those tables are `truss -c` output: per syscall, seconds, calls and errors, then the totals,
//! user time and elapsed time. Their lesson is per-request cost: how many syscalls, and how much
//! server CPU, one request takes. The tracer here attaches to the process, its threads and its
//! child processes when the benchmark's measured window opens (after warm-up) and detaches when
//! it closes; [`Window`] drives it and adds the server's CPU time from [`lab_process::cpu`].
//!
//! Two tracers, chosen at run time by [`detect_method`], because which one works depends on the
//! machine (permissions, kernel, packages):
//! - perf: `perf stat` counts every syscall (and every error) of the server's tasks in the kernel,
//!   exactly and at no measurable cost; `perf record` of the same two tracepoints, read back by
//!   `perf trace -s`, gives the table by syscall, with times, for a 10-30% slowdown of a
//!   syscall-bound server.
//! - `strace -c -f` stops the server at every syscall (ptrace): the same table, but the traced
//!   server runs several times slower, which the output says.
//!
//! Layout: `parse` and `parse_perf` read the tracers' outputs; `strace` and `perf` run the
//! tracers (as [`lab_process::Group`]s), `counted` is what they hand back, `tracer` picks between
//! them; `render` prints the table and the JSON; `window` is the bench observer; `scope` traces
//! a set of tasks that is not one process tree (a cgroup, a server's own threads).

#![warn(missing_docs)]

mod counted;
mod parse;
mod parse_perf;
mod perf;
mod render;
mod scope;
mod strace;
mod tracer;
mod window;

pub use parse::parse_strace_summary;
pub use parse_perf::{
    parse_perf_stat, parse_perf_trace_summary, perf_counts, PerfCounts, ALL_SYSCALLS,
};
pub use perf::UNATTRIBUTED;
pub use scope::{Counts, Scope, ScopeTracer};
pub use window::{Observed, Window};

use lab_process::cpu::CpuTime;
use lab_process::procfs::{self, ProcError};
use std::fmt;
use std::time::{Duration, Instant};

/// Which tracer produced a [`Profile`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `strace -c -f`: per-syscall times and errors; slows the traced server.
    Strace,
    /// `perf stat` on syscall tracepoints for exact totals at no cost to the server, and
    /// `perf record` of them for the table by syscall, with times (a 10-30% slowdown).
    Perf,
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Method::Strace => "strace",
            Method::Perf => "perf",
        })
    }
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "strace" => Ok(Method::Strace),
            "perf" => Ok(Method::Perf),
            _ => Err(format!("`{s}`: the profile method is `strace` or `perf`")),
        }
    }
}

/// What to do when strace may not attach.
pub(crate) const STRACE_PERMISSION_HINT: &str = "run flint as root, or allow tracing of \
non-child processes: `sudo sysctl kernel.yama.ptrace_scope=0` (or `sudo setcap cap_sys_ptrace+ep \
$(command -v strace)`)";
/// What to do when perf may not count tracepoints.
pub(crate) const PERF_PERMISSION_HINT: &str = "run flint as root, or `sudo sysctl \
kernel.perf_event_paranoid=-1` and make the tracepoints readable (`sudo mount -o \
remount,mode=755 /sys/kernel/tracing`)";

/// Why a profile could not be taken. Each message says what to do about it.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// ptrace refused (EPERM, Yama) or perf refused (perf_event_paranoid, tracefs); `pid`
    /// None: refused before any process was named (the check of what works here).
    #[error("no permission to trace {} with {tool} ({detail}): {hint}", pid_text(*.pid))]
    NoPermission {
        /// The tracer: `perf` or `strace`.
        tool: &'static str,
        /// The process that could not be traced.
        pid: Option<u32>,
        /// What the tracer or the kernel said.
        detail: String,
        /// What to run to allow it.
        hint: &'static str,
    },
    /// The tracer's program is not on this machine.
    #[error("{tool} is not installed: `sudo apt-get install {package}`")]
    NotInstalled {
        /// The tracer: `perf` or `strace`.
        tool: &'static str,
        /// The Debian package that installs it (`strace`, `linux-perf`).
        package: &'static str,
    },
    /// The process to trace has exited (or never was).
    #[error("process {pid} is gone")]
    ProcessGone {
        /// The process asked for.
        pid: u32,
    },
    /// A tracer's output (or /proc) was not in the layout this crate reads.
    #[error("cannot parse the output of {tool}: {detail}")]
    Unparseable {
        /// Whose output: `perf`, `strace` or `/proc`.
        tool: &'static str,
        /// What was wrong, with the text that did not parse.
        detail: String,
    },
    /// Neither tracer works here; says why for each.
    #[error("no way to profile on this machine: perf: {perf}; strace: {strace}")]
    NoMethod {
        /// Why perf does not work.
        perf: Box<ProfileError>,
        /// Why strace does not work.
        strace: Box<ProfileError>,
    },
    /// The tracer failed for another reason (its own words).
    #[error("{tool} failed: {detail}")]
    Tracer {
        /// The tracer: `perf` or `strace`.
        tool: &'static str,
        /// What it said, or how it ended.
        detail: String,
    },
    /// A file, fifo, pipe or process the profiler needed could not be used.
    #[error("{what}: {source}")]
    Io {
        /// What was being done (`starting perf`, `reading /proc/42/stat`).
        what: String,
        /// The operation's error.
        #[source]
        source: std::io::Error,
    },
}

fn pid_text(pid: Option<u32>) -> String {
    pid.map_or_else(|| "processes".to_owned(), |p| format!("pid {p}"))
}

impl From<ProcError> for ProfileError {
    fn from(e: ProcError) -> Self {
        match e {
            ProcError::Gone { pid } => ProfileError::ProcessGone { pid },
            ProcError::Io { what, source, pid } => {
                ProfileError::io(format!("reading /proc/{pid}/{what}"), source)
            }
            ProcError::Unparseable { pid, line } => ProfileError::Unparseable {
                tool: "/proc",
                detail: format!("/proc/{pid}/stat: `{line}`"),
            },
        }
    }
}

impl ProfileError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        ProfileError::Io {
            what: what.into(),
            source,
        }
    }

    /// A tracer that would not start: not installed (no such executable), or another failure.
    pub(crate) fn spawn(tool: &'static str, package: &'static str, e: std::io::Error) -> Self {
        match e.kind() {
            std::io::ErrorKind::NotFound => ProfileError::NotInstalled { tool, package },
            _ => ProfileError::io(format!("starting {tool}"), e),
        }
    }
}

/// One line of the table: a syscall, the time spent in it, its calls and errors.
#[derive(Debug, Clone, PartialEq)]
pub struct SyscallRow {
    /// The system call's name, or a row in parentheses: [`UNATTRIBUTED`], [`ALL_SYSCALLS`].
    pub name: String,
    /// Time inside the call, seconds: CPU time in the kernel with strace, wall time from entry
    /// to exit with perf (blocking included); `None` when the tracer gave none.
    pub seconds: Option<f64>,
    /// Calls made.
    pub calls: u64,
    /// Calls that returned an error, `EAGAIN` included.
    pub errors: u64,
}

/// What the server did during the window.
#[derive(Debug, Clone)]
pub struct Profile {
    /// The process profiled (its threads and child processes included).
    pub pid: u32,
    /// The tracer that counted the syscalls.
    pub method: Method,
    /// From attach to detach.
    pub window: Duration,
    /// The server's CPU time in user mode over the window (its process tree, reaped children
    /// included), from [`lab_process::cpu`].
    pub cpu_user: Duration,
    /// The same tree's CPU time in the kernel over the window.
    pub cpu_sys: Duration,
    /// Most calls first (strace: most time first).
    pub syscalls: Vec<SyscallRow>,
    /// Every syscall of the window (with perf, its count in the kernel; the rows add up to it).
    pub total_calls: u64,
    /// Calls that returned an error, `EAGAIN` included, in all.
    pub total_errors: u64,
    /// Time in syscalls, the rows' sum; `None` when the table has no times.
    pub total_seconds: Option<f64>,
    /// The processes attached at the start (`pid` and its descendants).
    pub pids: Vec<u32>,
    /// How to read the numbers (tracer overhead, what is missing and why).
    pub notes: Vec<String>,
}

impl Profile {
    /// The Jigsaw syscall notes' truss -c table: syscall, seconds, calls, errors, a `----` rule and
    /// `sys totals:`, `usr time:`, `elapsed:` lines; plus calls per request and per page and
    /// server CPU µs per request when `requests` / `pages` are not 0.
    pub fn truss_table(&self, requests: u64, pages: u64) -> String {
        render::truss_table(self, requests, pages)
    }

    /// [`Profile::truss_table`] without its `note:` lines, for a caller that prints many
    /// tables and each note once.
    pub fn truss_table_body(&self, requests: u64, pages: u64) -> String {
        render::truss_table_body(self, requests, pages)
    }

    /// The bench JSON `server_profile` object: { pid, method, window_s, cpu_user_s, cpu_sys_s,
    /// cpu_us_per_request|null, syscalls:[{name, seconds|null, calls, errors}], total_calls,
    /// total_errors, total_seconds|null, calls_per_request|null, calls_per_page|null, note,
    /// pids }.
    pub fn to_json(&self, requests: u64, pages: u64) -> serde_json::Value {
        serde_json::to_value(self.record(requests, pages)).expect("a profile always serializes")
    }

    /// The bench result's `server_profile`, typed.
    pub fn record(&self, requests: u64, pages: u64) -> results::ServerProfile {
        render::record(self, requests, pages)
    }

    /// Total calls / requests (None without requests).
    pub fn calls_per(&self, n: u64) -> Option<f64> {
        (n > 0).then(|| self.total_calls as f64 / n as f64)
    }

    /// Server CPU (user + sys) per request, µs (None without requests).
    pub fn cpu_us_per_request(&self, requests: u64) -> Option<f64> {
        (requests > 0).then(|| (self.cpu_user + self.cpu_sys).as_secs_f64() * 1e6 / requests as f64)
    }
}

/// What works here, checked at run time: perf if `perf stat -e raw_syscalls:sys_enter -- true`
/// succeeds, else strace if it runs, else an error saying why neither works.
pub fn detect_method() -> Result<Method, ProfileError> {
    let perf = match perf::check() {
        Ok(()) => return Ok(Method::Perf),
        Err(e) => e,
    };
    match strace::check() {
        Ok(()) => Ok(Method::Strace),
        Err(strace) => Err(ProfileError::NoMethod {
            perf: Box::new(perf),
            strace: Box::new(strace),
        }),
    }
}

/// A tracer made ready before the window, by [`Prepared::new`]: perf has opened its events
/// (disabled), which takes a second or two; [`Prepared::start`] then only enables them.
pub(crate) struct Prepared {
    pid: u32,
    method: Method,
    pids: Vec<u32>,
    pending: tracer::Pending,
}

impl Prepared {
    /// Everything slow, to do before the window: finds the process tree, checks the tracer
    /// runs, starts perf with its events disabled. Errors (no permission, tool missing, process
    /// gone) come from here, before the run, as far as they can.
    pub fn new(pid: u32, method: Method) -> Result<Prepared, ProfileError> {
        let pids = procfs::process_tree(pid)?;
        let pending = tracer::Pending::prepare(method, &pids)?;
        Ok(Prepared {
            pid,
            method,
            pids,
            pending,
        })
    }

    /// Opens the window: enables perf's events, or attaches strace (a few ms per thread), and
    /// returns once the tracer counts.
    pub fn start(self) -> Result<Profiler, ProfileError> {
        let run = self.pending.start(&self.pids)?;
        Ok(Profiler {
            pid: self.pid,
            method: self.method,
            pids: self.pids,
            run,
            started: Instant::now(),
        })
    }
}

/// A tracer attached to a server; [`Profiler::stop`] closes the window and returns the profile.
/// Dropped without `stop`, it detaches the tracer (bounded) and discards what it counted.
pub(crate) struct Profiler {
    pid: u32,
    method: Method,
    pids: Vec<u32>,
    run: tracer::Run,
    started: Instant,
}

impl Profiler {
    /// Detaches (SIGINT to the tracer, a bounded wait, then SIGKILL) and parses what the tracer
    /// counted; `cpu` is the server's CPU over the same window, read by whoever owns it.
    pub fn stop(self, cpu: CpuTime) -> Result<Profile, ProfileError> {
        let window = self.started.elapsed();
        let counted = self.run.stop()?;
        let mut syscalls = counted.rows;
        sort_rows(&mut syscalls);
        let mut notes = vec![note_for(self.method)];
        notes.extend(counted.notes);
        Ok(Profile {
            pid: self.pid,
            method: self.method,
            window,
            cpu_user: cpu.user,
            cpu_sys: cpu.sys,
            total_calls: counted
                .total_calls
                .unwrap_or_else(|| syscalls.iter().map(|r| r.calls).sum()),
            total_errors: counted
                .total_errors
                .unwrap_or_else(|| syscalls.iter().map(|r| r.errors).sum()),
            total_seconds: counted.total_seconds,
            syscalls,
            pids: self.pids,
            notes,
        })
    }
}

/// Most time first (rows without time after), then most calls; the `(...)` rows last.
fn sort_rows(rows: &mut [SyscallRow]) {
    rows.sort_by(|a, b| {
        let time = |r: &SyscallRow| r.seconds.unwrap_or(f64::NEG_INFINITY);
        let placeholder = |r: &SyscallRow| r.name.starts_with('(');
        placeholder(a)
            .cmp(&placeholder(b))
            .then(time(b).total_cmp(&time(a)))
            .then(b.calls.cmp(&a.calls))
            .then(a.name.cmp(&b.name))
    });
}

fn note_for(method: Method) -> String {
    match method {
        Method::Strace => "strace stops the server at every syscall: traced, it runs several \
times slower and uses more CPU per request (the counts per request stay right)"
            .to_string(),
        Method::Perf => "perf: totals counted in the kernel (exact, no slowdown); the table from \
perf record (a syscall-bound server runs 10-30% slower); seconds are wall time inside the \
calls, blocking included; errors are calls that returned < 0 (EAGAIN included)"
            .to_string(),
    }
}
