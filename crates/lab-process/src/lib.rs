//! Every process the lab starts (peer servers, `--serve` commands, tracers, short probes) is
//! started and stopped one way, here: a [`Group`], stopped as its [`StopPolicy`] says, ending
//! as [`Stopped`]. Beside it the two readers every part of the lab shares: [`procfs`] (the one
//! `/proc` reader: stat, process trees, threads, who listens on a port) and [`cpu`] (the one CPU
//! clock, per process and per process tree).
//!
//! It exists so that peers, profiles, comparisons and experiments cannot each grow their own
//! process manager: one place decides how a child starts, how it is waited for and how it ends.
//!
//! - Each is the leader of a process group of its own: a server may fork workers (nginx's
//!   master and workers, Apache prefork's children), and a group is what one signal reaches all
//!   at once; and the terminal's Ctrl-C goes to flint's group only, so servers keep serving and
//!   tracers keep counting until flint has finished the measurement and stops them itself, in
//!   order.
//! - Each starts with default signal dispositions and an empty signal mask, whatever flint's own
//!   are (a shell starts background jobs with SIGINT ignored, and exec keeps an ignored signal
//!   ignored): a tracer must write its summary on SIGINT, and a server must end on its group's
//!   stop signal rather than wait for SIGKILL (`signals.rs`).
//! - Pinned to a core when asked: the spawning thread's affinity is set for the length of the
//!   spawn, and the child (and everything it forks) inherits it ([`pin_current_thread`]); no
//!   `taskset`.
//! - Every wait is bounded; nothing sleeps a fixed time to "let a process start".
//! - Stopping is the group's stop signal (SIGTERM for servers, SIGINT for tracers, which write
//!   their summary on it), a bounded wait for the leader and every member of the group to exit,
//!   then SIGKILL to the group. [`Group`]'s `Drop` does it, so a process is stopped on every
//!   path out, errors and panics included. Where flint itself is killed (SIGKILL runs no
//!   `Drop`), the kernel sends each leader its stop signal as its parent-death signal, for the
//!   exit of the thread that spawned it (`signals.rs`): a group is spawned by a thread that
//!   outlives it. Only a leader that changes its own credentials (h2o turning into `nobody` as
//!   root) loses it, and the leader's own children (Apache's) are its to stop.
//!
//! Signals go through nix; the pgid is the leader's pid, which the kernel does not reuse while
//! the group has a member or the leader is unreaped, so a signal to it reaches only our
//! processes: once the leader is reaped, the group is signalled only while /proc still shows a
//! live member of it (pgids 0 and 1, "our own group" and "every process", are refused).

#![warn(missing_docs)]

mod backoff;
pub mod cpu;
mod pin;
pub mod procfs;
mod programs;
mod signals;

pub use backoff::Backoff;
pub use pin::{allowed as cpu_allowed, pin_current_thread, ThreadPin};
pub use programs::{find_program, free_port, is_executable, output_within};

use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

/// Between two polls of a bounded wait: short against a process's start-up or exit, long
/// against a busy loop.
pub const POLL: Duration = Duration::from_millis(5);

/// How a [`Group`] is stopped: the signal first, then how long before SIGKILL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StopPolicy {
    /// Sent to the whole group first.
    pub signal: Signal,
    /// How long the leader and every member have to exit after `signal` before SIGKILL.
    pub grace: Duration,
}

impl StopPolicy {
    /// Servers: SIGTERM, then `grace`.
    pub fn terminate(grace: Duration) -> Self {
        StopPolicy {
            signal: Signal::SIGTERM,
            grace,
        }
    }

    /// Tracers: SIGINT (perf and strace write what they counted), then `grace`.
    pub fn interrupt(grace: Duration) -> Self {
        StopPolicy {
            signal: Signal::SIGINT,
            grace,
        }
    }
}

/// How a stopped group ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped {
    /// The leader's exit status (None only if it could not be waited for).
    pub status: Option<ExitStatus>,
    /// The stop signal was not enough: SIGKILL ended the group.
    pub killed: bool,
}

/// A process started as the leader of its own process group; stopped, group and all, when
/// dropped.
#[derive(Debug)]
pub struct Group {
    child: Child,
    pgid: Pid,
    policy: StopPolicy,
    /// The leader's status once reaped.
    status: Option<ExitStatus>,
    stopped: Option<Stopped>,
}

impl Group {
    /// Spawns `cmd` as the leader of a new process group, on `cpu` when given (the child and
    /// its descendants inherit the pin), to be stopped as `policy` says: by [`Group::stop`] or
    /// `Drop`, or by the kernel with `policy`'s signal once the calling thread exits, so call
    /// it from a thread that outlives the group.
    pub fn spawn(cmd: &mut Command, cpu: Option<usize>, policy: StopPolicy) -> io::Result<Group> {
        cmd.process_group(0);
        signals::start_with_default_dispositions(cmd);
        signals::end_with_parent(cmd, policy.signal);
        let child = {
            // Held across the spawn only: the child inherits this thread's mask at fork.
            let _pin = cpu.map(pin_current_thread).transpose()?;
            cmd.spawn()?
        };
        let pgid = Pid::from_raw(i32::try_from(child.id()).map_err(io::Error::other)?);
        Ok(Group {
            child,
            pgid,
            policy,
            status: None,
            stopped: None,
        })
    }

    /// The leader's pid (also the group's id).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The leader, for its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// The leader's exit status if it has exited (it is then reaped; the group may live on).
    pub fn exited(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            self.status = self.child.try_wait().ok().flatten();
        }
        self.status
    }

    /// Waits at most `limit` for the leader to exit.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(POLL.min(deadline.saturating_duration_since(Instant::now())));
        }
    }

    /// Sends `signal` to every process of the group; false if none was there to get it.
    pub fn signal(&self, signal: Signal) -> bool {
        signal_group(self.pgid, signal)
    }

    /// Whether the leader or another member of the group is still running (zombies do not
    /// count: orphans are reaped by init whenever it gets to them, and some containers' init
    /// never does).
    pub fn alive(&mut self) -> bool {
        self.exited().is_none() || procfs::group_alive(self.pid())
    }

    /// The stop policy's signal to the group, up to its grace for the leader and every member
    /// to exit, then SIGKILL to the group. Idempotent: later calls return the first outcome.
    pub fn stop(&mut self) -> Stopped {
        if let Some(done) = self.stopped {
            return done;
        }
        if self.alive() {
            self.signal(self.policy.signal);
        }
        let deadline = Instant::now() + self.policy.grace;
        let mut killed = false;
        while self.alive() {
            if Instant::now() >= deadline {
                self.signal(Signal::SIGKILL);
                killed = true;
                break;
            }
            std::thread::sleep(POLL);
        }
        if killed {
            // SIGKILL cannot be caught: the leader's wait ends (members are reaped by init).
            self.status = self.status.or_else(|| self.child.wait().ok());
        }
        let done = Stopped {
            status: self.exited(),
            killed,
        };
        self.stopped = Some(done);
        done
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `signal` to group `pgid`, never to "every process" (-1 as a pid) or our own group (0).
fn signal_group(pgid: Pid, signal: Signal) -> bool {
    pgid.as_raw() > 1 && killpg(pgid, signal).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn sh(script: &str, policy: StopPolicy) -> Group {
        Group::spawn(
            Command::new("sh")
                .args(["-c", script])
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
            None,
            policy,
        )
        .expect("spawn sh")
    }

    fn wait_tree(pid: u32, len: usize) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while procfs::process_tree(pid).map_or(0, |t| t.len()) < len {
            assert!(Instant::now() < deadline, "the shell never forked");
            std::thread::sleep(POLL);
        }
    }

    #[test]
    fn stop_ends_a_group_that_ignores_its_signal_children_included() {
        let mut g = sh(
            "trap '' TERM; sleep 30 & wait",
            StopPolicy::terminate(Duration::from_millis(300)),
        );
        let pid = g.pid();
        wait_tree(pid, 2);
        let started = Instant::now();
        let stopped = g.stop();
        assert!(stopped.killed, "TERM was ignored: only SIGKILL ends it");
        assert!(stopped.status.is_some_and(|s| !s.success()));
        // Not the child's whole sleep; the margin is for a loaded machine.
        assert!(started.elapsed() < Duration::from_secs(15));
        // SIGKILL reaches the orphaned child asynchronously: bounded poll.
        let deadline = Instant::now() + Duration::from_secs(5);
        while procfs::group_alive(pid) {
            assert!(
                Instant::now() < deadline,
                "group {pid} still has live members"
            );
            std::thread::sleep(POLL);
        }
        assert_eq!(g.stop(), stopped, "a second stop changes nothing");
    }

    #[test]
    fn a_group_that_obeys_is_not_killed_and_drop_stops_it_too() {
        let mut g = sh(
            "exec sleep 30",
            StopPolicy::interrupt(Duration::from_secs(10)),
        );
        // Signalled once the shell has become sleep: a SIGINT that came while the shell was
        // still starting would be the shell's to handle, not sleep's to die of.
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::fs::read_to_string(format!("/proc/{}/comm", g.pid()))
            .map_or(true, |c| c.trim() != "sleep")
        {
            assert!(Instant::now() < deadline, "the shell never became sleep");
            std::thread::sleep(POLL);
        }
        assert!(!g.stop().killed, "sleep dies of SIGINT");
        let g = sh(
            "sleep 30 & wait",
            StopPolicy::terminate(Duration::from_secs(10)),
        );
        let pid = g.pid();
        wait_tree(pid, 2);
        drop(g);
        assert!(!procfs::group_alive(pid));
    }

    #[test]
    fn a_spawn_on_a_cpu_runs_there_and_leaves_this_thread_as_it_was() {
        let before: Vec<usize> = (0..64).filter(|&c| cpu_allowed(c)).collect();
        let cpu = *before.last().expect("a cpu");
        let mut g = Group::spawn(
            Command::new("sh")
                .args(["-c", "grep Cpus_allowed_list /proc/self/status"])
                .stdout(Stdio::piped()),
            Some(cpu),
            StopPolicy::terminate(Duration::from_secs(5)),
        )
        .expect("spawn");
        let mut out = String::new();
        io::Read::read_to_string(g.child_mut().stdout.as_mut().unwrap(), &mut out).unwrap();
        assert_eq!(
            out.split_whitespace().last(),
            Some(cpu.to_string().as_str())
        );
        let after: Vec<usize> = (0..64).filter(|&c| cpu_allowed(c)).collect();
        assert_eq!(after, before);
    }

    #[test]
    fn a_group_left_running_gets_its_stop_signal_when_its_spawning_thread_ends() {
        // What a flint killed with SIGKILL leaves: a group nobody stops. Its spawning thread
        // here ends on its own; for a killed flint every thread ends at once, the same to the
        // kernel.
        let pid = std::thread::spawn(|| {
            let g = sh(
                "exec sleep 60",
                StopPolicy::interrupt(Duration::from_secs(10)),
            );
            let pid = g.pid();
            std::mem::forget(g);
            pid
        })
        .join()
        .expect("the spawning thread");
        let pid = Pid::from_raw(pid as i32);
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            use nix::sys::wait::{waitpid, WaitPidFlag, WaitStatus};
            match waitpid(pid, Some(WaitPidFlag::WNOHANG)).expect("waitpid") {
                WaitStatus::StillAlive => {
                    if Instant::now() >= deadline {
                        signal_group(pid, Signal::SIGKILL);
                        panic!("{pid} still runs 30 s after the thread that spawned it ended");
                    }
                    std::thread::sleep(POLL);
                }
                status => break status,
            }
        };
        // The shell's own SIGINT, had it come before the exec, would end it the same way.
        assert_eq!(
            status,
            nix::sys::wait::WaitStatus::Signaled(pid, Signal::SIGINT, false)
        );
    }

    #[test]
    fn the_dangerous_group_ids_are_never_signalled() {
        assert!(!signal_group(Pid::from_raw(0), Signal::SIGCONT));
        assert!(!signal_group(Pid::from_raw(1), Signal::SIGCONT));
    }
}
