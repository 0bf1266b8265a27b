//! CPU time of a process, to the nanosecond.
//!
//! /proc/PID/stat counts in clock ticks (10 ms): fine for one process over seconds, but Apache
//! prefork spreads a window's work over fifty processes, each rounded to a tick, which can add up
//! to more than the window itself. The kernel's per-process CPU clock (`clock_getcpuclockid`) is
//! exact and covers all threads, including those that exited; /proc is the fallback where the
//! clock is refused (another user's process, without privileges).

use std::time::Duration;

/// User + system CPU time `pid` has used so far.
pub fn process_cpu(pid: u32) -> Option<Duration> {
    cpu_clock(pid).or_else(|| {
        crate::profile::cpu_time(pid)
            .ok()
            .map(|(user, sys)| user + sys)
    })
}

fn cpu_clock(pid: u32) -> Option<Duration> {
    let pid = libc::pid_t::try_from(pid).ok()?;
    // SAFETY: both calls only write into the locals passed by pointer, which are valid, properly
    // aligned and live for the calls; their results are checked before the values are read.
    unsafe {
        let mut clock: libc::clockid_t = 0;
        if libc::clock_getcpuclockid(pid, &mut clock) != 0 {
            return None;
        }
        let mut ts: libc::timespec = std::mem::zeroed();
        if libc::clock_gettime(clock, &mut ts) != 0 {
            return None;
        }
        Some(Duration::new(
            u64::try_from(ts.tv_sec).ok()?,
            u32::try_from(ts.tv_nsec).ok()?,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    #[test]
    fn cpu_time_of_a_process_grows_with_its_work_and_is_finer_than_a_tick() {
        let me = std::process::id();
        let before = cpu_clock(me).expect("own cpu clock");
        // Busy for 30 ms of wall time: at most that much CPU, and some of it on a loaded machine.
        let start = Instant::now();
        let mut x = 0u64;
        while start.elapsed() < Duration::from_millis(30) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let after = cpu_clock(me).expect("own cpu clock");
        assert!(after > before);
        let used = after - before;
        assert_ne!(
            used.subsec_nanos() % 10_000_000,
            0,
            "{used:?} looks tick-rounded"
        );
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep");
        assert!(process_cpu(child.id()).is_some_and(|c| c < Duration::from_secs(1)));
        let mut child = child;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(cpu_clock(u32::MAX), None);
    }
}
