//! A tracer on a set of processes that is not one process tree: a tier of a dynamic
//! deployment, whose programs come and go within the window (a cgroup), or a server's own
//! threads apart from the CGI programs it starts. The same two tracers as [`crate::Window`]'s,
//! on a [`Scope`]; what they count is [`Counts`], which one scope's counts can be taken from
//! another's ([`Counts::less`]: a cgroup less the server in it is its programs).

use super::counted::Counted;
use super::parse_perf::ALL_SYSCALLS;
use super::perf::{PerfRun, PerfTarget, UNATTRIBUTED};
use super::strace::{self, StraceRun};
use super::{sort_rows, Method, ProfileError, SyscallRow};
use lab_process::procfs;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// The tasks a [`ScopeTracer`] counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// A process, its descendants, and whatever they start during the window.
    Tree(u32),
    /// A process's own threads, not the processes it starts.
    Threads(u32),
    /// Every task in a cgroup (v2, directly below the cgroup2 mount), those started during
    /// the window included.
    Cgroup(PathBuf),
}

/// What a tracer counted over a window: per syscall, and in all.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Counts {
    /// Most calls first.
    pub rows: Vec<SyscallRow>,
    /// Every syscall of the window (with perf, its count in the kernel; the rows add up to it).
    pub total_calls: u64,
    /// Calls that returned an error, `EAGAIN` included, in all.
    pub total_errors: u64,
    /// How to read them (perf's lost events, what is missing).
    pub notes: Vec<String>,
}

impl Counts {
    fn from_counted(c: Counted) -> Counts {
        let mut rows = c.rows;
        sort_rows(&mut rows);
        Counts {
            total_calls: c
                .total_calls
                .unwrap_or_else(|| rows.iter().map(|r| r.calls).sum()),
            total_errors: c
                .total_errors
                .unwrap_or_else(|| rows.iter().map(|r| r.errors).sum()),
            rows,
            notes: c.notes,
        }
    }

    /// These counts less `part`'s, syscall by syscall (each at least 0: two tracers' windows
    /// differ by milliseconds); the totals are the rows' sums, so the table adds up.
    ///
    /// Calls of `part` that these counts lost into their `(unattributed)` row (a recording
    /// that dropped events: more of a name in `part` than here) come off that row, not off
    /// nothing. When either side has no table by syscall (one `(all syscalls)` row), names
    /// cannot be matched: the result is one such row, the totals' difference.
    pub fn less(&self, part: &Counts) -> Counts {
        let mut notes = self.notes.clone();
        notes.extend(part.notes.iter().cloned());
        let untabled = |c: &Counts| c.rows.iter().any(|r| r.name == ALL_SYSCALLS);
        if untabled(self) || untabled(part) {
            let calls = self.total_calls.saturating_sub(part.total_calls);
            let errors = self.total_errors.saturating_sub(part.total_errors);
            let rows = vec![SyscallRow {
                name: ALL_SYSCALLS.to_owned(),
                seconds: None,
                calls,
                errors,
            }];
            let rows = rows.into_iter().filter(|r| r.calls > 0).collect();
            return Counts {
                total_calls: calls,
                total_errors: errors,
                rows,
                notes,
            };
        }
        let theirs: BTreeMap<&str, &SyscallRow> =
            part.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        let ours: BTreeMap<&str, &SyscallRow> =
            self.rows.iter().map(|r| (r.name.as_str(), r)).collect();
        // What `part` counted of a name beyond what these counts hold of it.
        let lost: u64 = (part.rows.iter())
            .filter(|p| p.name != UNATTRIBUTED)
            .map(|p| {
                let here = ours.get(p.name.as_str()).map_or(0, |r| r.calls);
                p.calls.saturating_sub(here)
            })
            .sum();
        let mut rows: Vec<SyscallRow> = (self.rows.iter())
            .map(|r| {
                let p = theirs.get(r.name.as_str());
                let less = if r.name == UNATTRIBUTED {
                    lost + p.map_or(0, |p| p.calls)
                } else {
                    p.map_or(0, |p| p.calls)
                };
                SyscallRow {
                    name: r.name.clone(),
                    seconds: r
                        .seconds
                        .map(|s| (s - p.and_then(|p| p.seconds).unwrap_or(0.0)).max(0.0)),
                    calls: r.calls.saturating_sub(less),
                    errors: r.errors.saturating_sub(p.map_or(0, |p| p.errors)),
                }
            })
            .filter(|r| r.calls > 0)
            .collect();
        sort_rows(&mut rows);
        Counts {
            total_calls: rows.iter().map(|r| r.calls).sum(),
            total_errors: rows.iter().map(|r| r.errors).sum(),
            rows,
            notes,
        }
    }
}

enum State {
    /// strace attaches when the window opens (the tasks are read then).
    StraceReady,
    Strace(StraceRun),
    /// perf's events opened, disabled until the window opens.
    PerfReady(Box<PerfRun>),
    Perf(Box<PerfRun>),
}

/// A tracer on a [`Scope`]: made ready with [`ScopeTracer::prepare`] before the window,
/// counting from [`ScopeTracer::start`] to [`ScopeTracer::stop`].
pub struct ScopeTracer {
    scope: Scope,
    state: State,
}

/// The cgroup2 mount: perf names a cgroup from there.
fn cgroup_name(dir: &std::path::Path) -> Result<String, ProfileError> {
    // The lab makes its cgroups directly below the mount, so the name is the last component.
    dir.file_name()
        .and_then(|n| n.to_str())
        .map(str::to_owned)
        .ok_or_else(|| ProfileError::Tracer {
            tool: "perf",
            detail: format!("no cgroup name in {}", dir.display()),
        })
}

impl ScopeTracer {
    /// Everything slow, before the window: perf opens its events (a second or two); strace is
    /// checked.
    pub fn prepare(scope: Scope, method: Method) -> Result<ScopeTracer, ProfileError> {
        let state = match method {
            Method::Strace => {
                strace::check()?;
                State::StraceReady
            }
            Method::Perf => {
                let run = match &scope {
                    Scope::Tree(pid) => {
                        PerfRun::prepare(PerfTarget::Tasks(&procfs::process_tree(*pid)?))?
                    }
                    Scope::Threads(pid) => PerfRun::prepare(PerfTarget::OwnThreads(&[*pid]))?,
                    Scope::Cgroup(dir) => PerfRun::prepare(PerfTarget::Cgroup(&cgroup_name(dir)?))?,
                };
                State::PerfReady(Box::new(run))
            }
        };
        Ok(ScopeTracer { scope, state })
    }

    /// Starts counting; returns once the tracer counts. A second call does nothing.
    pub fn start(&mut self) -> Result<(), ProfileError> {
        let state = std::mem::replace(&mut self.state, State::StraceReady);
        self.state = match state {
            State::StraceReady => {
                let (pids, follow) = match &self.scope {
                    Scope::Tree(pid) => (procfs::process_tree(*pid)?, true),
                    Scope::Threads(pid) => (procfs::threads(*pid), false),
                    Scope::Cgroup(dir) => (cgroup_procs(dir)?, true),
                };
                if pids.is_empty() {
                    return Err(ProfileError::Tracer {
                        tool: "strace",
                        detail: format!("no process in {:?}", self.scope),
                    });
                }
                State::Strace(StraceRun::start(&pids, follow)?)
            }
            State::PerfReady(mut run) => {
                run.enable()?;
                State::Perf(run)
            }
            running => running,
        };
        Ok(())
    }

    /// Stops counting and reads what was counted.
    pub fn stop(self) -> Result<Counts, ProfileError> {
        let counted = match self.state {
            State::Strace(run) => run.stop()?,
            State::Perf(run) => run.stop()?,
            State::StraceReady | State::PerfReady(_) => {
                return Err(ProfileError::Tracer {
                    tool: "the tracer",
                    detail: "stopped before it started".into(),
                })
            }
        };
        Ok(Counts::from_counted(counted))
    }
}

/// The processes of the cgroup at `dir`, now.
fn cgroup_procs(dir: &std::path::Path) -> Result<Vec<u32>, ProfileError> {
    let path = dir.join("cgroup.procs");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| ProfileError::io(format!("reading {}", path.display()), e))?;
    Ok(text.lines().filter_map(|l| l.trim().parse().ok()).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, calls: u64, errors: u64) -> SyscallRow {
        SyscallRow {
            name: name.into(),
            seconds: None,
            calls,
            errors,
        }
    }

    #[test]
    fn a_scope_less_a_part_of_it_keeps_the_rest_by_syscall() {
        let all = Counts {
            rows: vec![
                row("read", 100, 2),
                row("write", 50, 0),
                row("execve", 10, 0),
            ],
            total_calls: 160,
            total_errors: 2,
            notes: vec![],
        };
        let server = Counts {
            rows: vec![
                row("read", 60, 2),
                row("write", 50, 0),
                row("epoll_wait", 3, 0),
            ],
            total_calls: 113,
            total_errors: 2,
            notes: vec![],
        };
        let programs = all.less(&server);
        assert_eq!(
            programs.rows,
            vec![row("read", 40, 0), row("execve", 10, 0)]
        );
        assert_eq!((programs.total_calls, programs.total_errors), (50, 0));
    }

    #[test]
    fn calls_a_recording_lost_come_off_its_unattributed_row() {
        // The scope's recording lost 30 reads (among them the part's) into `(unattributed)`.
        let all = Counts {
            rows: vec![
                row("read", 70, 0),
                row("write", 50, 0),
                row(UNATTRIBUTED, 30, 0),
            ],
            total_calls: 150,
            total_errors: 0,
            notes: vec![],
        };
        let server = Counts {
            rows: vec![row("read", 80, 0), row("write", 40, 0)],
            total_calls: 120,
            total_errors: 0,
            notes: vec![],
        };
        let rest = all.less(&server);
        assert_eq!(
            rest.rows,
            vec![row("write", 10, 0), row(UNATTRIBUTED, 20, 0)]
        );
        assert_eq!(
            rest.total_calls, 30,
            "150 - 120: nothing of the server's counted twice"
        );
    }

    #[test]
    fn a_side_without_a_table_gives_the_totals_difference() {
        let all = Counts {
            rows: vec![row(ALL_SYSCALLS, 300, 4)],
            total_calls: 300,
            total_errors: 4,
            notes: vec![],
        };
        let server = Counts {
            rows: vec![row("read", 80, 1), row("write", 40, 0)],
            total_calls: 120,
            total_errors: 1,
            notes: vec![],
        };
        let rest = all.less(&server);
        assert_eq!(rest.rows, vec![row(ALL_SYSCALLS, 180, 3)]);
        assert_eq!((rest.total_calls, rest.total_errors), (180, 3));
    }
}
