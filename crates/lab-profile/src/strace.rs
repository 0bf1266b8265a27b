//! `strace -c -f -p PID...`: per-syscall calls, errors and time, at the price of stopping the
//! server at every syscall.
//!
//! strace says on stderr when it has attached to each process (`Process N attached [with K
//! threads]`); the window starts once every process of the tree has been named, so no syscall of
//! the window is missed and none from before it is counted.

use super::counted::{Counted, TRACER_DEADLINE};
use super::{parse_strace_summary, ProfileError, STRACE_PERMISSION_HINT};
use lab_process::{output_within, Group, StopPolicy};
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Whether strace runs here (`strace -V`, bounded).
pub(crate) fn check() -> Result<(), ProfileError> {
    let out = output_within(Command::new("strace").arg("-V"), TRACER_DEADLINE)
        .map_err(|e| ProfileError::spawn("strace", "strace", e))?;
    if out.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&out.stderr);
    Err(ProfileError::Tracer {
        tool: "strace",
        detail: format!(
            "`strace -V` failed ({}): {}",
            out.status,
            said.lines().next().unwrap_or("no message")
        ),
    })
}

pub(crate) struct StraceRun {
    /// In a group of its own, as perf: Ctrl-C is flint's to handle.
    child: Option<Group>,
    out: PathBuf,
    /// Everything strace said on stderr (for error messages).
    said: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

/// `strace: Process 123 attached with 3 threads` → 123.
fn attached_pid(line: &str) -> Option<u32> {
    let rest = line.split("Process ").nth(1)?;
    let (pid, after) = rest.split_once(' ')?;
    after.starts_with("attached").then(|| pid.parse().ok())?
}

/// `strace: attach: ptrace(PTRACE_SEIZE, 123): No such process` → 123.
fn failed_pid(line: &str) -> Option<u32> {
    let rest = line.split("ptrace(PTRACE_SEIZE, ").nth(1)?;
    rest.split(')').next()?.trim().parse().ok()
}

impl StraceRun {
    /// Attaches to `pids`; with `follow` (`-f`), to every thread of each and to what they
    /// start, else to exactly the tasks named.
    pub fn start(pids: &[u32], follow: bool) -> Result<StraceRun, ProfileError> {
        let dir = tempfile::tempdir()
            .map_err(|e| ProfileError::io("creating a temporary directory", e))?;
        let out = dir.path().join("strace.txt");
        let mut cmd = Command::new("strace");
        cmd.arg("-c");
        if follow {
            cmd.arg("-f");
        }
        cmd.arg("-o").arg(&out);
        for pid in pids {
            cmd.arg("-p").arg(pid.to_string());
        }
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = Group::spawn(&mut cmd, None, StopPolicy::interrupt(TRACER_DEADLINE))
            .map_err(|e| ProfileError::spawn("strace", "strace", e))?;
        let said = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = mpsc::channel();
        if let Some(stderr) = child.child_mut().stderr.take() {
            let said = Arc::clone(&said);
            // Drains stderr for strace's whole life, so that it never blocks on a full pipe.
            std::thread::spawn(move || {
                for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                    let _ = tx.send(line.clone());
                    if let Ok(mut said) = said.lock() {
                        said.push(line);
                    }
                }
            });
        }
        let mut run = StraceRun {
            child: Some(child),
            out,
            said,
            _dir: dir,
        };
        run.wait_attached(pids, rx)?;
        Ok(run)
    }

    /// Until strace has named every process as attached; the root gone or ptrace refused is an
    /// error, another process gone (a worker that exited) is not.
    fn wait_attached(
        &mut self,
        pids: &[u32],
        rx: mpsc::Receiver<String>,
    ) -> Result<(), ProfileError> {
        let root = pids[0];
        let mut waiting: HashSet<u32> = pids.iter().copied().collect();
        let deadline = Instant::now() + TRACER_DEADLINE;
        while !waiting.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = match rx.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ProfileError::Tracer {
                        tool: "strace",
                        detail: format!("not attached after {TRACER_DEADLINE:?}: {}", self.said()),
                    })
                }
                // strace exited: it said why.
                Err(RecvTimeoutError::Disconnected) => return Err(self.failure(root)),
            };
            if let Some(pid) = attached_pid(&line) {
                waiting.remove(&pid);
            } else if line.contains("Operation not permitted") {
                return Err(ProfileError::NoPermission {
                    tool: "strace",
                    pid: Some(root),
                    detail: line.trim().to_string(),
                    hint: STRACE_PERMISSION_HINT,
                });
            } else if line.contains("No such process") {
                match failed_pid(&line) {
                    Some(pid) if pid != root => {
                        waiting.remove(&pid);
                    }
                    _ => return Err(ProfileError::ProcessGone { pid: root }),
                }
            }
        }
        Ok(())
    }

    fn said(&self) -> String {
        self.said.lock().map(|s| s.join(" / ")).unwrap_or_default()
    }

    fn failure(&mut self, root: u32) -> ProfileError {
        if let Some(mut child) = self.child.take() {
            child.stop();
        }
        let said = self.said();
        if said.contains("Operation not permitted") {
            ProfileError::NoPermission {
                tool: "strace",
                pid: Some(root),
                detail: said,
                hint: STRACE_PERMISSION_HINT,
            }
        } else if said.contains("No such process") {
            ProfileError::ProcessGone { pid: root }
        } else {
            ProfileError::Tracer {
                tool: "strace",
                detail: format!("exited before attaching: {said}"),
            }
        }
    }

    /// Detaches (strace writes its summary on SIGINT) and parses the summary.
    pub fn stop(mut self) -> Result<Counted, ProfileError> {
        let Some(mut child) = self.child.take() else {
            return Err(ProfileError::Tracer {
                tool: "strace",
                detail: "already stopped".into(),
            });
        };
        if child.stop().killed {
            return Err(ProfileError::Unparseable {
                tool: "strace",
                detail: format!(
                    "strace did not exit within {TRACER_DEADLINE:?} of SIGINT and was killed: \
                     its summary is lost"
                ),
            });
        }
        let text = std::fs::read_to_string(&self.out)
            .map_err(|e| ProfileError::io(format!("reading {}", self.out.display()), e))?;
        let rows = parse_strace_summary(&text)?;
        Ok(Counted {
            total_seconds: Some(rows.iter().filter_map(|r| r.seconds).sum()),
            rows,
            ..Counted::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{attached_pid, failed_pid};

    #[test]
    fn attach_lines_name_their_process() {
        assert_eq!(
            attached_pid("strace: Process 20379 attached with 3 threads"),
            Some(20379)
        );
        assert_eq!(attached_pid("strace: Process 12 attached"), Some(12));
        assert_eq!(attached_pid("strace: Process 12 detached"), None);
        assert_eq!(
            failed_pid("strace: attach: ptrace(PTRACE_SEIZE, 77): No such process"),
            Some(77)
        );
    }
}
