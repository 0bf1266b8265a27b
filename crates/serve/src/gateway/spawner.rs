//! Starting programs off the event loop. `posix_spawn` is a vfork-style clone: the thread that
//! calls it is suspended until the child's `execve` has replaced the memory they share, which
//! takes milliseconds for a large program (php-cgi maps its interpreter and a few dozen
//! libraries first). A loop that spawned by itself would serve none of its other connections
//! meanwhile.
//!
//! So each loop thread that may run programs has one spawner thread. The loop hands it a
//! [`Job`] through a bounded channel (sized to `cgi_max_programs`, whose slot every job already
//! holds: it never fills) and goes on; the spawner runs `posix_spawn` and `pidfd_open`, sends the
//! child back ([`Spawned`]) and wakes the loop through the loop's own `Waker`. The loop then makes
//! the pipes non-blocking, registers them and gives the program to the connection that asked,
//! if it still wants it (each job has a ticket; a request given up meanwhile, its client gone or
//! its wall time past, leaves the child to be killed and reaped as any retired program).
//!
//! Nothing of a program's limits changes: its slot is taken before the job is sent and given
//! back when it is reaped (or its start failed), and its wall time counts from the request.

use std::ffi::OsString;
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;

use mio::Waker;
use rustix::process::{Pid, PidfdFlags};

/// A program to start, as the loop hands it to its spawner.
#[derive(Debug)]
pub(crate) struct Job {
    /// Says which request it is for (tokens are reused; tickets are not).
    pub ticket: u64,
    /// The connection that asked.
    pub token: usize,
    pub program: PathBuf,
    pub dir: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    /// Whether it gets a pipe on stdin (a request body), else `/dev/null`.
    pub stdin: bool,
}

/// What became of a [`Job`].
#[derive(Debug)]
pub(crate) struct Spawned {
    pub ticket: u64,
    pub token: usize,
    pub program: PathBuf,
    pub result: io::Result<Started>,
}

/// A child running, its pipes still blocking and unregistered.
#[derive(Debug)]
pub(crate) struct Started {
    pub child: Child,
    /// Its pidfd, when the kernel has them (else the sweep sees its exit).
    pub pidfd: Option<OwnedFd>,
}

/// One loop thread's spawner thread and the channels to and from it.
pub(crate) struct Spawner {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Spawned>,
    thread: Option<JoinHandle<()>>,
    /// Jobs sent whose [`Spawned`] the loop has not taken yet.
    in_flight: usize,
    next_ticket: u64,
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("in_flight", &self.in_flight)
            .finish()
    }
}

impl Spawner {
    /// Starts the spawner thread for the loop `waker` wakes; `capacity` jobs may wait at once.
    pub fn new(capacity: usize, waker: Arc<Waker>, name: String) -> io::Result<Spawner> {
        let capacity = capacity.max(1);
        let (jobs, to_spawn) = sync_channel::<Job>(capacity);
        let (spawned, done) = sync_channel::<Spawned>(capacity);
        let thread = std::thread::Builder::new().name(name).spawn(move || {
            for job in to_spawn {
                let result = start(&job);
                let s = Spawned {
                    ticket: job.ticket,
                    token: job.token,
                    program: job.program,
                    result,
                };
                if spawned.send(s).is_err() {
                    break;
                }
                let _ = waker.wake();
            }
        })?;
        Ok(Spawner {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            in_flight: 0,
            next_ticket: 0,
        })
    }

    /// Hands a program to the spawner: its ticket. An error (the queue full, the thread gone)
    /// means nothing starts: the job comes back.
    pub fn send(&mut self, mut job: Job) -> Result<u64, (io::Error, Job)> {
        let ticket = self.next_ticket;
        job.ticket = ticket;
        let Some(jobs) = self.jobs.as_ref() else {
            return Err((gone(), job));
        };
        match jobs.try_send(job) {
            Ok(()) => {
                self.next_ticket += 1;
                self.in_flight += 1;
                Ok(ticket)
            }
            Err(TrySendError::Full(job)) => Err((io::Error::from_raw_os_error(libc::EAGAIN), job)),
            Err(TrySendError::Disconnected(job)) => Err((gone(), job)),
        }
    }

    /// A finished job, if one is there (never waits).
    pub fn take(&mut self) -> Option<Spawned> {
        let s = self.done.try_recv().ok()?;
        self.in_flight -= 1;
        Some(s)
    }

    /// Stops the spawner: the jobs queued still start; each one's child is killed and reaped.
    /// Waits for the spawns under way (an `execve` returns).
    pub fn finish(&mut self) {
        self.jobs = None;
        while let Ok(s) = self.done.recv() {
            self.in_flight -= 1;
            if let Ok(mut started) = s.result {
                super::program::kill_group(started.child.id());
                let _ = started.child.wait();
            }
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.finish();
    }
}

fn gone() -> io::Error {
    io::Error::other("the spawner thread has stopped")
}

/// `posix_spawn` (std's `Command` takes it when no code must run in the child: no `pre_exec`;
/// `process_group(0)` is `POSIX_SPAWN_SETPGROUP`), then the child's pidfd.
fn start(job: &Job) -> io::Result<Started> {
    let mut cmd = Command::new(&job.program);
    cmd.env_clear()
        .envs(job.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&job.dir)
        .process_group(0)
        .stdin(if job.stdin {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let child = cmd.spawn()?;
    let pidfd = Pid::from_raw(child.id() as i32)
        .and_then(|pid| rustix::process::pidfd_open(pid, PidfdFlags::empty()).ok());
    Ok(Started { child, pidfd })
}
