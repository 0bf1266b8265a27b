//! The lab's one CPU clock: how much CPU a process, or a process tree, has used so far.
//!
//! Every "server CPU µs/request" the lab prints (`flint bench --profile`, the experiments) is
//! the difference of two readings of this clock at the window's two ends.
//!
//! Two sources, each for what it does best:
//! - the kernel's per-process CPU clock (`clock_getcpuclockid`): exact to the nanosecond, and it
//!   covers every thread of the process, exited ones included. /proc's clock ticks (10 ms) are
//!   too coarse for it: Apache prefork spreads a window's work over fifty processes, each rounded
//!   to a tick, which can add up to more than the window itself;
//! - /proc/PID/stat, for what the clock does not give: how the time splits between user and
//!   system (the exact total is split in the proportion of the process's own ticks), the CPU of
//!   the children a process has reaped (a worker that exits during a window is still counted,
//!   in ticks), and the whole reading where the clock is refused (another user's process,
//!   without privileges).

use crate::procfs::{self, ProcError};
use nix::time::clock_getcpuclockid;
use nix::unistd::Pid;
use std::time::Duration;

/// CPU time used, split as the kernel accounts it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTime {
    /// Time running in user mode.
    pub user: Duration,
    /// Time in the kernel on the process's behalf (its system calls, its page faults).
    pub sys: Duration,
}

impl CpuTime {
    /// User and system time together: the CPU used.
    pub fn total(&self) -> Duration {
        self.user + self.sys
    }

    /// What was used between `earlier` and this reading.
    pub fn since(&self, earlier: &CpuTime) -> CpuTime {
        CpuTime {
            user: self.user.saturating_sub(earlier.user),
            sys: self.sys.saturating_sub(earlier.sys),
        }
    }
}

impl std::ops::Add for CpuTime {
    type Output = CpuTime;
    fn add(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user: self.user + other.user,
            sys: self.sys + other.sys,
        }
    }
}

/// CPU used so far by one process: all its threads, not its children.
pub fn process(pid: u32) -> Result<CpuTime, ProcError> {
    let s = procfs::stat(pid)?;
    Ok(own(pid, &s))
}

/// CPU used so far by `root` and its descendants, with the children they have reaped, so that
/// the difference of two readings is what the tree used in between even when workers come and
/// go. A descendant that exits between the listing and its reading is skipped (its parent's
/// reaped-children time has it once reaped).
pub fn tree(root: u32) -> Result<CpuTime, ProcError> {
    let mut sum = CpuTime::default();
    for pid in procfs::process_tree(root)? {
        match procfs::stat(pid) {
            Ok(s) => sum = sum + own(pid, &s) + ticks_split(s.cutime, s.cstime),
            Err(ProcError::Gone { .. }) if pid != root => {}
            Err(e) => return Err(e),
        }
    }
    Ok(sum)
}

/// A process's own CPU: the exact clock split as its ticks are, or its ticks alone.
fn own(pid: u32, s: &procfs::Stat) -> CpuTime {
    match exact(pid) {
        Some(total) => split(total, s.utime, s.stime),
        None => ticks_split(s.utime, s.stime),
    }
}

/// The kernel's CPU clock of `pid` (None where it is refused or the process is gone).
fn exact(pid: u32) -> Option<Duration> {
    let pid = Pid::from_raw(i32::try_from(pid).ok()?);
    let now = clock_getcpuclockid(pid).ok()?.now().ok()?;
    Some(Duration::new(
        u64::try_from(now.tv_sec()).ok()?,
        u32::try_from(now.tv_nsec()).ok()?,
    ))
}

/// `total` in the proportion `user_ticks : sys_ticks` (all user before the first tick).
fn split(total: Duration, user_ticks: u64, sys_ticks: u64) -> CpuTime {
    let ticks = user_ticks + sys_ticks;
    if ticks == 0 {
        return CpuTime {
            user: total,
            sys: Duration::ZERO,
        };
    }
    let user = total.mul_f64(user_ticks as f64 / ticks as f64);
    CpuTime {
        user,
        sys: total.saturating_sub(user),
    }
}

fn ticks_split(user: u64, sys: u64) -> CpuTime {
    CpuTime {
        user: ticks(user),
        sys: ticks(sys),
    }
}

/// Clock ticks per second of /proc's times.
fn ticks_per_second() -> u64 {
    use nix::unistd::{sysconf, SysconfVar};
    match sysconf(SysconfVar::CLK_TCK) {
        Ok(Some(n)) if n > 0 => n as u64,
        _ => 100,
    }
}

fn ticks(n: u64) -> Duration {
    let hz = ticks_per_second();
    Duration::from_secs(n / hz) + Duration::from_nanos((n % hz) * 1_000_000_000 / hz)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn a_process_clock_grows_with_its_work_and_is_finer_than_a_tick() {
        let me = std::process::id();
        let before = process(me).unwrap();
        // Busy until the clock shows the work: on a loaded machine 30 ms of wall time may hold
        // less CPU than the clock's unit, so the wait is on the condition, bounded generously.
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut x = 0u64;
        let mut used = Duration::ZERO;
        while used == Duration::ZERO && Instant::now() < deadline {
            for _ in 0..100_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            used = process(me).unwrap().since(&before).total();
        }
        std::hint::black_box(x);
        assert!(used > Duration::ZERO, "no CPU time seen in 20 s of work");
        assert_ne!(
            exact(me).unwrap().subsec_nanos() % 10_000_000,
            0,
            "the clock looks tick-rounded"
        );
        assert_eq!(exact(u32::MAX), None);
    }

    #[test]
    fn the_split_keeps_the_exact_total() {
        let t = split(Duration::from_micros(1001), 3, 1);
        assert_eq!(t.total(), Duration::from_micros(1001));
        assert!(t.user > t.sys);
        assert_eq!(
            split(Duration::from_millis(2), 0, 0).user,
            Duration::from_millis(2)
        );
        assert_eq!(
            ticks(150),
            Duration::from_millis(150 * 1000 / ticks_per_second())
        );
    }
}
