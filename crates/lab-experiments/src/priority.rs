//! The priority of the threads whose wake-up time is itself a measurement: the delay line (a
//! packet is late by the line's delay plus however long its thread waits for a core) and the
//! round-trip probe (a connect's time ends when its thread runs again).
//!
//! `tc netem` holds packets in the kernel's softirq, which no task can delay; the lab's delay
//! line in user space must come as close. The highest nice level was not enough: beside
//! `stress-ng --cpu 4` and a test suite on 2 cores, a 40 ms round trip was probed at 52 ms
//! with both threads at nice -20 (77 ms at nice 0), since a waking thread of any nice level
//! may still wait for the running one's slice. A `SCHED_FIFO` thread runs as soon as it wakes,
//! ahead of every ordinary task. Both threads sleep between packets or connects, so they take
//! little of a core; the kernel's real-time throttling (`sched_rt_runtime_us`, 95% by default)
//! bounds them if they did not. Raising needs CAP_SYS_NICE (root, as the lab's namespaces do):
//! without it the thread asks for nice -20, and without that runs as it was.

use std::io;

/// The real-time priority taken: the lowest but one, above every ordinary task, below the
/// kernel's own real-time threads (which run at 50 and above).
const FIFO_PRIORITY: libc::c_int = 10;

/// How the calling thread was raised, put back by [`Raised::restore`] (or left for a thread
/// that ends raised).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Raised {
    /// `SCHED_FIFO` at `FIFO_PRIORITY`; it was `policy` with `priority` before.
    RealTime {
        /// The scheduling policy before (`SCHED_OTHER` as a rule).
        policy: libc::c_int,
        /// The static priority before (0 under `SCHED_OTHER`).
        priority: libc::c_int,
    },
    /// Nice -20; it was `nice` before.
    Nice {
        /// The nice value before.
        nice: i32,
    },
    /// Neither was allowed.
    Not,
}

/// Raises the calling thread alone (Linux applies both calls to the thread, not the process).
pub fn raise() -> Raised {
    // SAFETY: sched_getscheduler and sched_getparam read the calling thread's (pid 0)
    // scheduling into a sched_param this function owns; sched_setscheduler reads one. No
    // pointer outlives the call, and failure is reported by the return value alone.
    let before = unsafe {
        let policy = libc::sched_getscheduler(0);
        let mut param: libc::sched_param = std::mem::zeroed();
        (policy >= 0 && libc::sched_getparam(0, &mut param) == 0)
            .then_some((policy, param.sched_priority))
    };
    if let Some((policy, priority)) = before {
        let fifo = libc::sched_param {
            sched_priority: FIFO_PRIORITY,
        };
        // SAFETY: as above: a sched_param owned here, read by the call.
        if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &fifo) } == 0 {
            return Raised::RealTime { policy, priority };
        }
    }
    match rustix::process::getpriority_process(None) {
        Ok(nice) if rustix::process::setpriority_process(None, -20).is_ok() => {
            Raised::Nice { nice }
        }
        _ => Raised::Not,
    }
}

impl Raised {
    /// Puts the calling thread back as it was before [`raise`].
    pub fn restore(self) -> io::Result<()> {
        match self {
            Raised::RealTime { policy, priority } => {
                let param = libc::sched_param {
                    sched_priority: priority,
                };
                // SAFETY: a sched_param owned here, read by the call.
                if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            }
            Raised::Nice { nice } => Ok(rustix::process::setpriority_process(None, nice)?),
            Raised::Not => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy() -> libc::c_int {
        // SAFETY: reads the calling thread's policy; no pointer.
        unsafe { libc::sched_getscheduler(0) }
    }

    #[test]
    fn a_thread_is_raised_to_fifo_as_root_and_put_back() {
        // On a thread of its own, so that a failed restore cannot leave the test harness's
        // thread raised.
        std::thread::spawn(|| {
            let before = policy();
            let root = rustix::process::geteuid().is_root();
            let raised = raise();
            match raised {
                Raised::RealTime { policy: p, .. } => {
                    assert_eq!(p, before);
                    assert_eq!(policy(), libc::SCHED_FIFO);
                }
                // Without CAP_SYS_NICE neither FIFO nor a lower nice level is allowed, and a
                // root that cannot take FIFO (a container's limit) still lowers its nice.
                Raised::Nice { .. } => assert!(root, "nice -20 without root"),
                Raised::Not => assert!(!root, "root could not raise at all"),
            }
            if root {
                // The lab runs as root (its namespaces need it), and so does CI.
                assert!(matches!(raised, Raised::RealTime { .. }), "{raised:?}");
            }
            raised.restore().expect("restore");
            assert_eq!(policy(), before);
        })
        .join()
        .expect("the test thread");
    }
}
