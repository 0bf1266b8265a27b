//! Workers as processes: started with `sh -c TEMPLATE` in a process group of their own, read
//! line by line on their own threads, stopped by their group whatever happens.
//!
//! A group of its own means Ctrl-C at the terminal reaches the coordinator only (which then
//! stops every worker in order), and stopping a worker stops what the template started with it
//! (ssh, kubectl, a local flint). Over ssh the remote worker sees its stdin close and stops
//! within a second.
//!
//! Each worker's stdin is written by a thread of its own, fed in order by a channel: a worker
//! that stops reading (a stalled ssh, a large orders line it does not take) blocks that thread
//! only, never the coordinator's loop, its deadlines or Ctrl-C.

use super::protocol::{self, ToCoordinator, ToWorker};
use super::strict::{self, Rejected, Versions};
use rustix::process::{kill_process_group, Pid, Signal};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Lines of a worker's stderr kept to explain a failure (ssh's and sh's complaints land there).
const STDERR_LINES: usize = 4;

/// What a worker's reader thread saw, with when (the coordinator's clocks, read on arrival).
#[derive(Debug)]
pub struct Event {
    /// The worker's place in the host list (the `host` given to [`Process::start`]).
    pub host: usize,
    /// On the monotonic clock: when a heartbeat was last heard.
    pub at: Instant,
    /// On the wall clock, Unix µs: a pong's `received` for the clock offset.
    pub at_unix_us: u64,
    /// The line, read, or the end of the stream.
    pub what: Said,
}

/// One line of a worker's stdout, as read, or its end.
#[derive(Debug)]
pub enum Said {
    /// A message of this build's protocol, read strictly.
    Message(ToCoordinator),
    /// A line that is not a message at all.
    Bad(String),
    /// A message this build does not take (a worker of another build): its type, why (naming
    /// the field), and the versions it gives, if any.
    Refused {
        /// The line's `"type"` (`message` when it gives none).
        kind: String,
        /// What was not taken, naming the field.
        why: String,
        /// The `protocol` and `flint_version` the line gives, when it gives both.
        peer: Option<Versions>,
    },
    /// Its stdout closed: the worker (or its channel) is gone.
    Closed,
}

/// One started worker.
pub struct Process {
    child: Child,
    /// To its stdin's writer thread: whole lines, in order (`None` once it cannot be written).
    stdin: Option<Sender<Vec<u8>>>,
    /// Messages given to the writer; what it has written.
    queued: u64,
    written: Arc<Written>,
    stderr: Arc<StderrTail>,
}

/// The last lines of a worker's stderr, and whether it has closed (every process holding it,
/// the shell, ssh, what they started, has exited or closed it: nothing more will come).
#[derive(Default)]
struct StderrTail {
    state: Mutex<(VecDeque<String>, bool)>,
    closed: Condvar,
}

impl StderrTail {
    fn lock(&self) -> std::sync::MutexGuard<'_, (VecDeque<String>, bool)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Process {
    /// Runs `command` with `sh -c`; its stdout's lines go to `events` as host `host`.
    pub fn start(command: &str, host: usize, events: Sender<Event>) -> std::io::Result<Process> {
        use std::os::unix::process::CommandExt;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(command)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()?;
        let stdout = child.stdout.take().expect("stdout is piped");
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let stderr = Arc::new(StderrTail::default());
        std::thread::spawn(move || {
            let send = |what| {
                let _ = events.send(Event {
                    host,
                    at: Instant::now(),
                    at_unix_us: protocol::unix_us(),
                    what,
                });
            };
            for (i, line) in BufReader::new(stdout).lines().enumerate() {
                let Ok(line) = line else { break };
                if line.trim().is_empty() {
                    continue;
                }
                match strict::decode::<ToCoordinator>(&line) {
                    Ok(m) => send(Said::Message(m)),
                    Err(Rejected::NotJson(e)) => send(Said::Bad(format!(
                        "line {} of its channel, not a message ({e}): {}",
                        i + 1,
                        clip(&line)
                    ))),
                    Err(Rejected::Refused { kind, why, peer }) => {
                        send(Said::Refused { kind, why, peer })
                    }
                }
            }
            send(Said::Closed);
        });
        let tail = Arc::clone(&stderr);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines() {
                let Ok(line) = line else { break };
                let (lines, _) = &mut *tail.lock();
                if lines.len() == STDERR_LINES {
                    lines.pop_front();
                }
                lines.push_back(line);
            }
            tail.lock().1 = true;
            tail.closed.notify_all();
        });
        let stdin = child.stdin.take().expect("stdin is piped");
        let written = Arc::new(Written::default());
        Ok(Process {
            stdin: Some(writer(stdin, Arc::clone(&written))),
            queued: 0,
            written,
            child,
            stderr,
        })
    }

    /// Sends one message without waiting for the worker to take it; a worker that cannot be
    /// written to will be seen closing (or, never reading, as [`Process::all_written`] false).
    pub fn send(&mut self, msg: &ToWorker) {
        let Some(tx) = &self.stdin else { return };
        match protocol::encode(msg).map(|line| tx.send(line)) {
            Ok(Ok(())) => self.queued += 1,
            _ => self.stdin = None,
        }
    }

    /// Whether every message sent has been written whole to the worker's stdin.
    pub fn all_written(&self) -> bool {
        self.written.lines.load(Ordering::Acquire) == self.queued
    }

    /// The wall clock in Unix µs when the writer began writing the last message (a ping
    /// leaves then, not when it was handed over: the clock probes count from here).
    pub fn last_write_unix_us(&self) -> u64 {
        self.written.last_started_unix_us.load(Ordering::Acquire)
    }

    /// What the worker last said on stderr, one line (empty if nothing).
    pub fn stderr_tail(&self) -> String {
        let t = self.stderr.lock();
        t.0.iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" / ")
    }

    /// [`Process::stderr_tail`] once the worker's stderr has closed, or after `bound` if it
    /// stays open (something it started still holds it). A worker whose stdout has closed may
    /// not have said why yet: ssh writes its reason (`Connection refused`) as it exits, which on
    /// a busy machine can be long after the channel closed.
    pub fn last_words(&self, bound: Duration) -> String {
        let t = self.stderr.lock();
        let waited = self
            .stderr
            .closed
            .wait_timeout_while(t, bound, |(_, closed)| !*closed);
        drop(waited.unwrap_or_else(|e| e.into_inner()));
        self.stderr_tail()
    }

    /// Whether the process (the `sh` and what it ran in its place) has exited.
    pub fn exited(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(Some(_)))
    }

    /// Closes its stdin (a worker stops within a second when it sees that), waits up to `grace`
    /// for it to exit, then kills its whole process group; reaped in every case.
    pub fn stop(&mut self, grace: Duration) {
        self.stdin = None;
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_group();
        let _ = self.child.wait();
    }

    /// SIGKILL to its process group (which is its pid: it leads a group of its own); what the
    /// shell started is gone too even if the shell already exited.
    pub fn kill_group(&mut self) {
        if let Some(pid) = Pid::from_raw(self.child.id() as i32) {
            let _ = kill_process_group(pid, Signal::KILL);
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // Whatever happens (a panic, an early return), no worker outlives the coordinator.
        self.stdin = None;
        self.kill_group();
        let _ = self.child.wait();
    }
}

/// What a worker's stdin writer has done.
#[derive(Default)]
struct Written {
    /// Lines written whole.
    lines: AtomicU64,
    /// When the last line's write began, Unix µs.
    last_started_unix_us: AtomicU64,
}

/// The thread writing `stdin` the lines it is sent, noting them in `written`; it ends
/// (closing stdin) when the sender is dropped or a write fails.
fn writer(mut stdin: ChildStdin, written: Arc<Written>) -> Sender<Vec<u8>> {
    let (tx, lines) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        for line in lines {
            let at = protocol::unix_us();
            written.last_started_unix_us.store(at, Ordering::Release);
            if stdin.write_all(&line).and_then(|()| stdin.flush()).is_err() {
                return;
            }
            drop(line);
            written.lines.fetch_add(1, Ordering::Release);
        }
    });
    tx
}

/// A line shortened for an error message.
fn clip(line: &str) -> String {
    const MAX: usize = 120;
    match line.char_indices().nth(MAX) {
        Some((i, _)) => format!("{:?}...", &line[..i]),
        None => format!("{line:?}"),
    }
}
