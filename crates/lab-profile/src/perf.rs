//! perf on the two raw syscall tracepoints: exact totals for free, and a per-syscall table for
//! a small fraction of strace's cost.
//!
//! Two perf processes, both per task (`-p`, inherited by the threads and processes the server
//! starts during the window):
//! - *totals*: `perf stat` of `raw_syscalls:sys_enter`, and of `raw_syscalls:sys_exit` filtered
//!   on `ret < 0` (errors). Counting costs the server nothing measurable.
//! - *breakdown*: `perf record` of `raw_syscalls:sys_{enter,exit}`, every event (`-c 1`), read
//!   back by `perf trace -i FILE -s`: calls, errors and time per syscall. Writing two samples per
//!   syscall to a ring buffer slowed flint serve by 10-30% in tests (strace: 4x). Events lost to
//!   a full buffer, or beyond the size cap, show as `(unattributed)`: the totals minus the table.
//!
//! Why not count the per-syscall tracepoints (`syscalls:sys_enter_*`) instead: ~370 events per
//! task are switched at every context switch (4x slower in tests), and closing them takes the
//! kernel an RCU grace period each (10 to 70 s here).
//!
//! Both start with their events disabled (`-D -1`) and are driven through control fifos
//! (`--control fifo:CTL,ACK`): `ping` until both are ready, then `enable` both at once, so the
//! windows agree to a few milliseconds; `disable` both at the end, then SIGINT ends them.

use super::counted::{Counted, TRACER_DEADLINE};
use super::parse_perf::{parse_perf_trace_summary, perf_counts, ALL_SYSCALLS};
use super::{ProfileError, SyscallRow, PERF_PERMISSION_HINT};
use lab_process::{output_within, Group, StopPolicy};
use nix::fcntl::OFlag;
use nix::sys::stat::Mode;
use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The Debian package with perf (Ubuntu: linux-tools-$(uname -r)).
pub(crate) const PACKAGE: &str = "linux-perf";
/// Calls counted in the totals but not in the table.
pub const UNATTRIBUTED: &str = "(unattributed)";
/// The recording stops growing here (two samples of ~100 bytes per syscall).
const MAX_RECORD: &str = "1G";
/// How long `perf trace -i` may take to read a recording.
const READ_DEADLINE: Duration = Duration::from_secs(300);

/// Whether perf may count syscall tracepoints here: `perf stat -e raw_syscalls:sys_enter --
/// true`, bounded.
pub(crate) fn check() -> Result<(), ProfileError> {
    let out = output_within(
        Command::new("perf")
            .args(["stat", "-e", "raw_syscalls:sys_enter", "--", "true"])
            .env("LC_ALL", "C"),
        TRACER_DEADLINE,
    )
    .map_err(|e| ProfileError::spawn("perf", PACKAGE, e))?;
    if out.status.success() {
        return Ok(());
    }
    Err(classify(&String::from_utf8_lossy(&out.stderr), None))
}

/// What perf's own words on stderr mean.
fn classify(said: &str, pid: Option<u32>) -> ProfileError {
    let said: Vec<&str> = said
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let said = said.join(" ");
    let lower = said.to_lowercase();
    let refused = [
        "permission",
        "not permitted",
        "paranoid",
        "can't access trace events",
        "access to performance monitoring",
    ];
    if refused.iter().any(|w| lower.contains(w)) {
        ProfileError::NoPermission {
            tool: "perf",
            pid,
            detail: said.chars().take(200).collect(),
            hint: PERF_PERMISSION_HINT,
        }
    } else if let (Some(pid), true) = (pid, lower.contains("no such process")) {
        ProfileError::ProcessGone { pid }
    } else {
        ProfileError::Tracer {
            tool: "perf",
            detail: if said.is_empty() {
                "failed without a message".to_owned()
            } else {
                said.chars().take(300).collect()
            },
        }
    }
}

fn mkfifo(path: &Path) -> Result<(), ProfileError> {
    nix::unistd::mkfifo(path, Mode::S_IRUSR | Mode::S_IWUSR)
        .map_err(|e| ProfileError::io(format!("mkfifo {}", path.display()), e.into()))
}

/// Opened read-write, so that neither side blocks waiting for the other to open its end.
fn open_fifo(path: &Path, nonblocking: bool) -> Result<File, ProfileError> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(if nonblocking {
            OFlag::O_NONBLOCK.bits()
        } else {
            0
        })
        .open(path)
        .map_err(|e| ProfileError::io(format!("opening {}", path.display()), e))
}

/// One perf process started with its events disabled, and its control fifos.
struct Perf {
    /// perf runs in a group of its own: the terminal's Ctrl-C is flint's to handle, and perf
    /// must go on counting until flint has closed the window.
    child: Option<Group>,
    ctl: File,
    ack: File,
    err: PathBuf,
    /// The process named in errors (none for a cgroup).
    root: Option<u32>,
}

impl Perf {
    /// `perf {head} -D -1 --control fifo:CTL,ACK {tail}`, stderr to `{label}.err`.
    fn spawn(
        dir: &Path,
        label: &str,
        root: Option<u32>,
        head: &[&str],
        tail: &[&str],
    ) -> Result<Perf, ProfileError> {
        let path = |ext: &str| dir.join(format!("{label}.{ext}"));
        let (ctl_path, ack_path, err) = (path("ctl"), path("ack"), path("err"));
        mkfifo(&ctl_path)?;
        mkfifo(&ack_path)?;
        let ctl = open_fifo(&ctl_path, false)?;
        let ack = open_fifo(&ack_path, true)?;
        let err_file =
            File::create(&err).map_err(|e| ProfileError::io("creating perf's log", e))?;
        let mut control = std::ffi::OsString::from("fifo:");
        control.push(&ctl_path);
        control.push(",");
        control.push(&ack_path);
        let child = Group::spawn(
            Command::new("perf")
                .args(head)
                .args(["-D", "-1", "--control"])
                .arg(control)
                .args(tail)
                .env("LC_ALL", "C")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(err_file),
            None,
            StopPolicy::interrupt(TRACER_DEADLINE),
        )
        .map_err(|e| ProfileError::spawn("perf", PACKAGE, e))?;
        Ok(Perf {
            child: Some(child),
            ctl,
            ack,
            err,
            root,
        })
    }

    fn send(&mut self, command: &str) -> Result<(), ProfileError> {
        writeln!(self.ctl, "{command}")
            .map_err(|e| ProfileError::io("writing to perf's control fifo", e))
    }

    /// Until perf acknowledges the command sent; perf exiting instead is the error it printed.
    fn await_ack(&mut self, command: &str) -> Result<(), ProfileError> {
        let deadline = Instant::now() + TRACER_DEADLINE;
        let mut got = Vec::new();
        let mut buf = [0u8; 64];
        loop {
            match self.ack.read(&mut buf) {
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(ProfileError::io("reading perf's ack fifo", e)),
            }
            // perf writes "ack\n" and its terminating NUL.
            if got.windows(4).any(|w| w == b"ack\n") {
                return Ok(());
            }
            if self.exited() {
                return Err(self.failure());
            }
            if Instant::now() > deadline {
                return Err(ProfileError::Tracer {
                    tool: "perf",
                    detail: format!("no answer to `{command}` within {TRACER_DEADLINE:?}"),
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn exited(&mut self) -> bool {
        self.child.as_mut().is_none_or(|c| c.exited().is_some())
    }

    /// What perf said before exiting, as an error.
    fn failure(&mut self) -> ProfileError {
        if let Some(mut child) = self.child.take() {
            child.stop();
        }
        classify(
            &std::fs::read_to_string(&self.err).unwrap_or_default(),
            self.root,
        )
    }

    /// SIGINT (perf writes its output), a bounded wait, SIGKILL.
    fn finish(&mut self) -> Result<(), ProfileError> {
        if let Some(mut child) = self.child.take() {
            if child.stop().killed {
                return Err(ProfileError::Tracer {
                    tool: "perf",
                    detail: format!("did not exit within {TRACER_DEADLINE:?} of SIGINT"),
                });
            }
        }
        Ok(())
    }
}

/// Sends `command` to every perf, then waits for every ack: the index of the first that failed.
fn command_all(perfs: &mut [&mut Perf], command: &str) -> Result<(), (usize, ProfileError)> {
    for (i, p) in perfs.iter_mut().enumerate() {
        p.send(command).map_err(|e| (i, e))?;
    }
    for (i, p) in perfs.iter_mut().enumerate() {
        p.await_ack(command).map_err(|e| (i, e))?;
    }
    Ok(())
}

pub(crate) struct PerfRun {
    totals: Perf,
    breakdown: Option<Perf>,
    dir: tempfile::TempDir,
    notes: Vec<String>,
}

/// What a perf run counts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PerfTarget<'a> {
    /// These tasks (each process's threads), and the threads and processes they start during
    /// the window (perf's inheritance).
    Tasks(&'a [u32]),
    /// These processes' threads as they are, not what they start (`--no-inherit`): a server's
    /// own work apart from its CGI programs'.
    OwnThreads(&'a [u32]),
    /// Every task of a cgroup, on every CPU (`-a -G`): its name below the cgroup mount.
    Cgroup(&'a str),
}

impl PerfTarget<'_> {
    fn root(&self) -> Option<u32> {
        match self {
            PerfTarget::Tasks(p) | PerfTarget::OwnThreads(p) => p.first().copied(),
            PerfTarget::Cgroup(_) => None,
        }
    }

    /// perf's options before the events (`-p LIST`, `-a`).
    fn before(&self) -> Vec<String> {
        let list = |pids: &[u32]| {
            pids.iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            PerfTarget::Tasks(p) => vec!["-p".into(), list(p)],
            PerfTarget::OwnThreads(p) => vec!["-p".into(), list(p), "--no-inherit".into()],
            PerfTarget::Cgroup(_) => vec!["-a".into()],
        }
    }

    /// perf's options after its `events` (`-G` names a cgroup for each event in order).
    fn after(&self, events: usize) -> Vec<String> {
        match self {
            PerfTarget::Cgroup(name) => vec!["-G".into(), vec![*name; events].join(",")],
            _ => Vec::new(),
        }
    }
}

impl PerfRun {
    /// Both perfs started, their events opened and disabled.
    pub fn prepare(target: PerfTarget<'_>) -> Result<PerfRun, ProfileError> {
        let root = target.root();
        let dir = tempfile::tempdir()
            .map_err(|e| ProfileError::io("creating a temporary directory", e))?;
        let d = dir.path();
        let out = d.join("totals.out");
        let out = out.to_string_lossy();
        let events = [
            "-e",
            "raw_syscalls:sys_enter",
            "-e",
            "raw_syscalls:sys_exit",
        ];
        let (before, after) = (target.before(), target.after(2));
        fn strs(v: &[String]) -> Vec<&str> {
            v.iter().map(String::as_str).collect()
        }
        let mut totals_tail = strs(&before);
        totals_tail.extend(events);
        totals_tail.extend(["--filter", "ret < 0"]);
        totals_tail.extend(strs(&after));
        let mut totals = Perf::spawn(
            d,
            "totals",
            root,
            &["stat", "-x,", "-o", &out],
            &totals_tail,
        )?;
        let data = d.join("record.data");
        let data = data.to_string_lossy();
        let pages = ring_pages().to_string();
        let record = [
            "record",
            "-q",
            "-R",
            "-c",
            "1",
            "-m",
            &pages,
            "--max-size",
            MAX_RECORD,
            "-o",
            &data,
        ];
        let mut record_tail = strs(&before);
        record_tail.extend(events);
        record_tail.extend(strs(&after));
        let mut breakdown = Some(Perf::spawn(d, "record", root, &record, &record_tail)?);
        let mut notes = Vec::new();
        let mut all: Vec<&mut Perf> = std::iter::once(&mut totals)
            .chain(breakdown.as_mut())
            .collect();
        match command_all(&mut all, "ping") {
            Ok(()) => {}
            Err((0, e)) => return Err(e),
            Err((_, e)) => {
                notes.push(format!("no table by syscall: perf record failed ({e})"));
                breakdown = None;
                command_all(&mut [&mut totals], "ping").map_err(|(_, e)| e)?;
            }
        }
        Ok(PerfRun {
            totals,
            breakdown,
            dir,
            notes,
        })
    }

    /// Starts counting: both at once.
    pub fn enable(&mut self) -> Result<(), ProfileError> {
        let mut all: Vec<&mut Perf> = std::iter::once(&mut self.totals)
            .chain(self.breakdown.as_mut())
            .collect();
        command_all(&mut all, "enable").map_err(|(_, e)| e)
    }

    pub fn stop(mut self) -> Result<Counted, ProfileError> {
        let mut all: Vec<&mut Perf> = std::iter::once(&mut self.totals)
            .chain(self.breakdown.as_mut())
            .collect();
        match command_all(&mut all, "disable") {
            Ok(()) => {}
            Err((0, e)) => return Err(e),
            // perf record stops by itself at its size cap: what it wrote is still read.
            Err((_, e)) => self.notes.push(format!(
                "perf record stopped before the end of the window ({e})"
            )),
        }
        self.totals.finish()?;
        let totals = perf_counts(&read(&self.dir.path().join("totals.out"))?)?;
        let rows = match self.breakdown.take() {
            Some(mut b) => {
                b.finish()?;
                match self.read_recording() {
                    Ok(rows) => Some(rows),
                    Err(e) => {
                        self.notes.push(format!("no table by syscall: {e}"));
                        None
                    }
                }
            }
            None => None,
        };
        let raw_calls = totals.raw_calls.ok_or_else(|| ProfileError::Unparseable {
            tool: "perf",
            detail: "no raw_syscalls:sys_enter count".into(),
        })?;
        Ok(combine(
            raw_calls,
            totals.raw_errors.unwrap_or(0),
            rows,
            self.notes,
        ))
    }

    /// `perf trace -i record.data -s`, bounded.
    fn read_recording(&self) -> Result<Vec<SyscallRow>, ProfileError> {
        let d = self.dir.path();
        let summary = d.join("summary.txt");
        let mut child = Group::spawn(
            Command::new("perf")
                .args(["trace", "-s", "-i"])
                .arg(d.join("record.data"))
                .arg("-o")
                .arg(&summary)
                .env("LC_ALL", "C")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null()),
            None,
            StopPolicy::terminate(Duration::ZERO),
        )
        .map_err(|e| ProfileError::io("starting perf trace", e))?;
        if child.wait_exit(READ_DEADLINE).is_none() {
            return Err(ProfileError::Tracer {
                tool: "perf",
                detail: format!("perf trace -i took more than {READ_DEADLINE:?}"),
            });
        }
        parse_perf_trace_summary(&read(&summary)?)
    }
}

/// Ring buffer pages per CPU: 8 MB in all (4 MB per CPU at most, 256 KB at least), so that
/// many cores do not lock much memory and few do not lose samples.
fn ring_pages() -> usize {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    (2048 / cpus).clamp(64, 1024).next_power_of_two().min(1024)
}

fn read(path: &Path) -> Result<String, ProfileError> {
    std::fs::read_to_string(path)
        .map_err(|e| ProfileError::io(format!("reading {}", path.display()), e))
}

/// The table, plus an `(unattributed)` row for what the totals counted beyond it (events lost
/// or not recorded); without a table, one row of totals. The rows always add up to the totals.
fn combine(
    raw_calls: u64,
    raw_errors: u64,
    rows: Option<Vec<SyscallRow>>,
    mut notes: Vec<String>,
) -> Counted {
    let mut rows = rows.unwrap_or_else(|| {
        vec![SyscallRow {
            name: ALL_SYSCALLS.into(),
            seconds: None,
            calls: raw_calls,
            errors: raw_errors,
        }]
    });
    let (calls, errors) = rows
        .iter()
        .fold((0, 0), |(c, e), r| (c + r.calls, e + r.errors));
    if raw_calls > calls + skew(raw_calls) {
        rows.push(SyscallRow {
            name: UNATTRIBUTED.into(),
            seconds: None,
            calls: raw_calls - calls,
            errors: raw_errors.saturating_sub(errors),
        });
        notes.push(format!(
            "{UNATTRIBUTED}: calls counted but not recorded (a full ring buffer, or the \
             {MAX_RECORD} recording cap)"
        ));
    }
    // Otherwise the difference is the few ms between the two perfs' windows, not a loss: the
    // table is the count, and its sums the totals.
    counted(rows, notes)
}

/// What the two windows' few milliseconds of difference can account for.
fn skew(calls: u64) -> u64 {
    (calls / 1000).max(64)
}

/// The rows, and their sums as the totals.
fn counted(rows: Vec<SyscallRow>, notes: Vec<String>) -> Counted {
    let (calls, errors) = rows
        .iter()
        .fold((0, 0), |(c, e), r| (c + r.calls, e + r.errors));
    let has_times = rows.iter().any(|r| r.seconds.is_some());
    Counted {
        total_seconds: has_times.then(|| rows.iter().filter_map(|r| r.seconds).sum()),
        rows,
        total_calls: Some(calls),
        total_errors: Some(errors),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, calls: u64, errors: u64) -> SyscallRow {
        SyscallRow {
            name: name.into(),
            seconds: Some(0.5),
            calls,
            errors,
        }
    }

    #[test]
    fn calls_beyond_the_recording_show_as_unattributed_and_rows_add_up() {
        let c = combine(
            10_000,
            30,
            Some(vec![r("read", 5000, 20), r("write", 4000, 0)]),
            vec![],
        );
        let un = c.rows.iter().find(|r| r.name == UNATTRIBUTED).unwrap();
        assert_eq!((un.calls, un.errors), (1000, 10));
        assert_eq!(c.total_calls, Some(c.rows.iter().map(|r| r.calls).sum()));
        assert_eq!(c.total_errors, Some(30));
        assert_eq!(c.total_seconds, Some(1.0));
        assert_eq!(c.notes.len(), 1);
    }

    #[test]
    fn a_few_calls_between_the_two_windows_are_not_a_loss() {
        let c = combine(
            903,
            0,
            Some(vec![r("read", 500, 0), r("write", 400, 0)]),
            vec![],
        );
        assert!(c.rows.iter().all(|r| r.name != UNATTRIBUTED));
        assert_eq!(c.total_calls, Some(900));
        assert!(c.notes.is_empty());
    }

    #[test]
    fn a_recording_a_little_longer_than_the_totals_window_raises_the_totals() {
        let c = combine(
            899,
            0,
            Some(vec![r("read", 500, 0), r("write", 400, 0)]),
            vec![],
        );
        assert!(c.rows.iter().all(|r| r.name != UNATTRIBUTED));
        assert_eq!(c.total_calls, Some(900));
    }

    #[test]
    fn without_a_table_one_row_holds_the_totals() {
        let c = combine(77, 3, None, vec![]);
        assert_eq!(c.rows.len(), 1);
        assert_eq!(
            (c.rows[0].name.as_str(), c.rows[0].calls, c.rows[0].errors),
            (ALL_SYSCALLS, 77, 3)
        );
        assert_eq!(c.total_seconds, None);
    }
}
