//! Children start with every signal at its default disposition, whatever flint's own are.
//!
//! exec resets a handled signal to its default but keeps an ignored one ignored, and a process
//! may well be started with SIGINT ignored: a non-interactive shell starts background jobs
//! (`flint lab all &`) so, as does `nohup` for SIGHUP. A peer or tracer inheriting that would
//! shrug off its group's stop signal (tracers are stopped with SIGINT, on which perf and strace
//! write their summary) and be SIGKILLed after the grace period, its summary lost. std's
//! `Command` already empties the child's signal mask and resets SIGPIPE (which the Rust runtime
//! ignores), but offers no way to reset the other dispositions; `posix_spawn` with
//! `POSIX_SPAWN_SETSIGDEF` would, but not through std's `Child` and its pipes, which every user
//! of [`crate::Group`] needs. So the reset runs between fork and exec, in `pre_exec`.
//!
//! Children also get their group's stop signal as their parent-death signal
//! (`PR_SET_PDEATHSIG`), so that a flint killed with SIGKILL (a CI timeout, the OOM killer),
//! which runs no `Drop`, still ends its servers and tracers: the kernel sends the signal when
//! the thread that spawned the child exits, and the child stops as it would have been stopped.
//! The setting is the kernel's, kept across exec; it is cleared when the child changes its
//! credentials (a server that switches to another user itself) or execs a set-user-ID program.

use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
use nix::unistd::{getppid, Pid};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the child of `cmd` start with every standard signal at its default disposition.
pub(crate) fn start_with_default_dispositions(cmd: &mut Command) {
    // SAFETY: `pre_exec` is unsafe because its closure runs in the child between fork and exec,
    // where another thread of the parent may have held a lock (the allocator's included) at the
    // fork: only async-signal-safe work is sound there. `reset_to_default` is: it calls
    // sigaction(2), async-signal-safe by POSIX, with arguments built on the stack; it allocates
    // nothing, takes no lock and touches no memory shared with the parent.
    unsafe {
        cmd.pre_exec(reset_to_default);
    }
}

/// Between fork and exec: SIG_DFL for every standard signal that can be set (not SIGKILL or
/// SIGSTOP). Real-time signals stay as inherited: no server or tracer the lab starts is stopped
/// by one, and glibc reserves the first of them for itself.
fn reset_to_default() -> io::Result<()> {
    let default = SigAction::new(SigHandler::SigDfl, SaFlags::empty(), SigSet::empty());
    for signal in Signal::iterator() {
        if matches!(signal, Signal::SIGKILL | Signal::SIGSTOP) {
            continue;
        }
        // SAFETY: nix marks sigaction unsafe because a handler it installs runs arbitrary code
        // at any instruction; SIG_DFL installs no handler, so no code of ours runs on a signal.
        unsafe { sigaction(signal, &default) }.map_err(io::Error::from)?;
    }
    Ok(())
}

/// Makes the child of `cmd` get `signal` when the thread that spawns it exits: flint's main
/// thread, on any end of the process, SIGKILL included. So a group must be spawned by a thread
/// that outlives it (every spawner in the lab is the thread that runs the experiment).
pub(crate) fn end_with_parent(cmd: &mut Command, signal: Signal) {
    let parent = Pid::this();
    // SAFETY: as above, the closure runs between fork and exec, where only async-signal-safe
    // work is sound. It makes two system calls, prctl(2) and getppid(2), both async-signal-safe,
    // on values copied into the closure (`parent`, `signal`: plain integers); it allocates
    // nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || tie_to_parent(parent, signal));
    }
}

/// Between fork and exec: the parent-death signal, then whether the parent is still the one
/// that forked: if it died before the prctl, no signal will come, and the child must not run.
fn tie_to_parent(parent: Pid, signal: Signal) -> io::Result<()> {
    nix::sys::prctl::set_pdeathsig(signal).map_err(io::Error::from)?;
    if getppid() != parent {
        return Err(io::Error::other("its parent ended before it started"));
    }
    Ok(())
}
