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
//!
//! Every job sent comes back exactly once, so every slot comes back: the spawner keeps the
//! tickets it has not answered, and if its thread is gone (it panicked) the loop is woken and
//! each of them comes back failed. A spawner being stopped (at shutdown, once no connection
//! waits for its jobs) starts nothing more: the jobs still queued are not started, and their
//! slots come back.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
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
    /// Killed as it arrived, the server stopping: its end is counted as a shutdown's kill.
    pub killed_at_shutdown: bool,
}

/// One loop thread's spawner thread and the channels to and from it.
pub(crate) struct Spawner {
    jobs: Option<SyncSender<Job>>,
    done: Receiver<Spawned>,
    thread: Option<JoinHandle<()>>,
    /// Jobs sent whose [`Spawned`] the loop has not taken yet: their tickets and connections,
    /// oldest first (the thread answers in order), so that each one comes back even if the
    /// thread does not.
    in_flight: VecDeque<(u64, usize)>,
    next_ticket: u64,
    /// Set when the spawner is stopped: the thread refuses the jobs it takes after it.
    stopping: Arc<AtomicBool>,
    /// The thread's name, for the line that says it is gone.
    name: String,
}

/// Wakes the loop when the spawner thread ends, however it ends (a panic unwinds through it):
/// the loop then finds the thread gone ([`Spawner::take`]).
struct WakeOnExit(Arc<Waker>);

impl Drop for WakeOnExit {
    fn drop(&mut self) {
        let _ = self.0.wake();
    }
}

impl std::fmt::Debug for Spawner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Spawner")
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl Spawner {
    /// Starts the spawner thread for the loop `waker` wakes; `capacity` jobs may wait at once.
    pub fn new(capacity: usize, waker: Arc<Waker>, name: String) -> io::Result<Spawner> {
        let capacity = capacity.max(1);
        let (jobs, to_spawn) = sync_channel::<Job>(capacity);
        let (spawned, done) = sync_channel::<Spawned>(capacity);
        let stopping = Arc::new(AtomicBool::new(false));
        let stop = stopping.clone();
        let thread = std::thread::Builder::new()
            .name(name.clone())
            .spawn(move || {
                let _exit = WakeOnExit(waker.clone());
                // Locals, dropped before `_exit` (in reverse order): the loop woken by it finds
                // the channel closed.
                let (to_spawn, spawned) = (to_spawn, spawned);
                for job in to_spawn {
                    let result = match stop.load(Ordering::Acquire) {
                        true => Err(refused()),
                        false => start(&job),
                    };
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
            in_flight: VecDeque::with_capacity(capacity),
            next_ticket: 0,
            stopping,
            name,
        })
    }

    /// Hands a program to the spawner: its ticket. An error (the queue full, the thread gone)
    /// means nothing starts: the job comes back.
    pub fn send(&mut self, mut job: Job) -> Result<u64, (io::Error, Job)> {
        let ticket = self.next_ticket;
        job.ticket = ticket;
        let token = job.token;
        let Some(jobs) = self.jobs.as_ref() else {
            return Err((gone(), job));
        };
        match jobs.try_send(job) {
            Ok(()) => {
                self.next_ticket += 1;
                self.in_flight.push_back((ticket, token));
                Ok(ticket)
            }
            Err(TrySendError::Full(job)) => Err((io::Error::from_raw_os_error(libc::EAGAIN), job)),
            Err(TrySendError::Disconnected(job)) => {
                self.lost();
                Err((gone(), job))
            }
        }
    }

    /// The thread found gone while it was running (it panicked): nothing more goes to it, and
    /// one line says so, once.
    fn lost(&mut self) {
        if self.jobs.take().is_some() {
            let _ = writeln!(
                io::stderr(),
                "flint serve: {}: the program spawner thread stopped (it panicked): CGI requests \
                 served by this thread get 500 until the server is restarted",
                self.name
            );
        }
    }

    /// A finished job, if one is there (never waits). Once the thread is gone (it panicked),
    /// the jobs it did not answer come back failed, one per call, as if their starts had
    /// failed: their requests are answered and their slots given back.
    pub fn take(&mut self) -> Option<Spawned> {
        match self.done.try_recv() {
            Ok(s) => {
                if let Some(k) = self.in_flight.iter().position(|&(t, _)| t == s.ticket) {
                    self.in_flight.remove(k);
                }
                Some(s)
            }
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => {
                self.lost();
                let (ticket, token) = self.in_flight.pop_front()?;
                Some(Spawned {
                    ticket,
                    token,
                    // Its program is not kept; the log line names this instead.
                    program: PathBuf::from(LOST),
                    result: Err(gone()),
                })
            }
        }
    }

    /// Stops the spawner: the jobs still queued are refused, not started; the children of
    /// those started are killed and reaped. Waits for the spawns under way (an `execve`
    /// returns). Returns what became of the jobs not taken yet: each held a program slot,
    /// which is free now.
    pub fn finish(&mut self) -> Stopped {
        self.stopping.store(true, Ordering::Release);
        self.jobs = None;
        let mut stopped = Stopped::default();
        while let Ok(s) = self.done.recv() {
            match s.result {
                Ok(mut started) => {
                    super::process_group::kill_group(started.child.id());
                    let _ = started.child.wait();
                    stopped.started += 1;
                }
                Err(_) => stopped.refused += 1,
            }
        }
        // Answered above, or lost with the thread: no slot is held for any of them now.
        stopped.slots = self.in_flight.len();
        self.in_flight.clear();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        stopped
    }
}

/// What [`Spawner::finish`] found.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// Jobs started before the stop: their children killed and reaped.
    pub started: usize,
    /// Jobs refused: still queued when the spawner was stopped.
    pub refused: usize,
    /// Program slots the jobs not taken held (started, refused, or lost with the thread).
    pub slots: usize,
}

impl Drop for Spawner {
    fn drop(&mut self) {
        self.finish();
    }
}

/// What a job lost with the spawner thread is logged as, in place of its program.
const LOST: &str = "(a program whose spawner thread stopped)";

fn gone() -> io::Error {
    io::Error::other("the spawner thread has stopped")
}

/// A job taken after the spawner was stopped: nothing started (no connection waits for it:
/// only its slot comes back).
fn refused() -> io::Error {
    io::Error::from_raw_os_error(libc::EAGAIN)
}

/// `posix_spawn` (std's `Command` takes it when no code must run in the child: no `pre_exec`;
/// `process_group(0)` is `POSIX_SPAWN_SETPGROUP`), then the child's pidfd.
fn start(job: &Job) -> io::Result<Started> {
    #[cfg(test)]
    if job.program == std::path::Path::new(tests::PANICS) {
        panic!("a start that panics, for the tests");
    }
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
    Ok(Started {
        child,
        pidfd,
        killed_at_shutdown: false,
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use mio::{Events, Poll, Token, Waker};

    use super::{Job, PathBuf, Spawner, LOST};

    /// A program path whose start panics on the spawner thread (test builds only).
    pub(super) const PANICS: &str = "/nonexistent/flint-test-panics";

    fn job(program: &str, token: usize) -> Job {
        Job {
            ticket: 0,
            token,
            program: program.into(),
            dir: "/".into(),
            env: Vec::new(),
            stdin: false,
        }
    }

    /// A spawner and the loop it wakes. The waker is kept as the loop keeps its own: were
    /// the spawner thread's the last, the eventfd would close as the thread ends, and a wake
    /// not yet polled would go with it.
    fn spawner(capacity: usize) -> (Poll, Spawner, Arc<Waker>) {
        let poll = Poll::new().unwrap();
        let waker = Arc::new(Waker::new(poll.registry(), Token(0)).unwrap());
        let s = Spawner::new(capacity, waker.clone(), "flint-spawner-test".into()).unwrap();
        (poll, s, waker)
    }

    /// Polls until the waker wakes the loop; false after 10 s.
    fn woken(poll: &mut Poll) -> bool {
        let mut events = Events::with_capacity(4);
        let until = Instant::now() + Duration::from_secs(10);
        while Instant::now() < until {
            match poll.poll(&mut events, Some(Duration::from_millis(100))) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                r => r.unwrap(),
            }
            if !events.is_empty() {
                return true;
            }
        }
        false
    }

    #[test]
    fn a_stop_refuses_the_jobs_still_queued_instead_of_starting_them() {
        // Two answers fill the channel back to the loop, which takes none: the thread then
        // holds one more job, started, and the next two stay queued.
        let (_poll, mut s, _waker) = spawner(2);
        let mut sent = 0;
        let until = Instant::now() + Duration::from_secs(10);
        while sent < 5 {
            assert!(
                Instant::now() < until,
                "only {sent} of 5 jobs taken in 10 s"
            );
            match s.send(job("/bin/true", sent)) {
                Ok(ticket) => {
                    assert_eq!(ticket, sent as u64);
                    sent += 1;
                }
                Err((e, _)) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                Err((e, _)) => panic!("{e}"),
            }
        }
        let stopped = s.finish();
        assert_eq!(
            (stopped.started, stopped.refused, stopped.slots),
            (3, 2, 5),
            "the queued jobs are refused, every slot comes back"
        );
        let late = s.send(job("/bin/true", 9));
        assert!(late.is_err(), "a stopped spawner takes no job");
    }

    #[test]
    fn a_spawner_thread_that_panics_wakes_the_loop_and_its_jobs_come_back_failed() {
        let (mut poll, mut s, _waker) = spawner(4);
        let first = s.send(job(PANICS, 7)).unwrap();
        // Queued behind it, never taken by the thread (refused if the thread is gone already).
        let second = s.send(job("/bin/true", 8)).ok();
        assert!(woken(&mut poll), "the loop is woken when the thread ends");
        let lost = s.take().expect("the panicked job comes back");
        assert_eq!((lost.ticket, lost.token), (first, 7));
        assert!(lost.result.is_err());
        assert_eq!(
            lost.program,
            PathBuf::from(LOST),
            "logged under a fixed label"
        );
        if let Some(second) = second {
            let lost = s.take().expect("the queued job comes back");
            assert_eq!((lost.ticket, lost.token), (second, 8));
            assert!(lost.result.is_err());
        }
        assert!(s.take().is_none(), "each job comes back once");
        match s.send(job("/bin/true", 9)) {
            Err((e, _)) => assert!(e.to_string().contains("stopped"), "{e}"),
            Ok(_) => panic!("a job sent to a spawner whose thread is gone"),
        }
        assert_eq!(s.finish().slots, 0, "nothing is held any more");
    }

    #[test]
    fn every_job_comes_back_once_in_order() {
        let (mut poll, mut s, _waker) = spawner(4);
        let tickets: Vec<u64> = (0..3)
            .map(|k| s.send(job("/bin/true", k)).unwrap())
            .collect();
        let mut back = Vec::new();
        while back.len() < 3 {
            assert!(woken(&mut poll), "woken for each answer");
            while let Some(done) = s.take() {
                let mut started = done.result.expect("started");
                let _ = started.child.wait();
                back.push(done.ticket);
            }
        }
        assert_eq!(back, tickets);
        assert_eq!(s.finish().slots, 0);
    }
}
