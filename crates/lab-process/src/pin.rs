//! Pinning the calling thread to one core, for as long as a guard lives.
//!
//! Threads and processes inherit their creator's affinity, so this pins both the load
//! generator (its threads are started while the guard lives) and the servers and tracers the
//! lab spawns ([`super::Group::spawn`] holds a pin across the spawn). pid 0 in
//! `sched_setaffinity` is the calling thread only, not the whole process, and the guard gives
//! the thread its old mask back when dropped.

use nix::sched::{sched_getaffinity, sched_setaffinity, CpuSet};
use nix::unistd::Pid;
use std::io;

/// Restores the calling thread's previous CPU mask when dropped.
#[derive(Debug)]
pub struct ThreadPin {
    saved: CpuSet,
}

fn this_thread() -> Pid {
    Pid::from_raw(0)
}

/// Pins the calling thread (and the threads and processes it starts from now on) to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<ThreadPin> {
    let saved = sched_getaffinity(this_thread())?;
    let mut mask = CpuSet::new();
    mask.set(cpu).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} is out of range"),
        )
    })?;
    sched_setaffinity(this_thread(), &mask)?;
    Ok(ThreadPin { saved })
}

/// Whether `cpu` is in the calling thread's mask.
pub fn allowed(cpu: usize) -> bool {
    sched_getaffinity(this_thread()).is_ok_and(|set| set.is_set(cpu).unwrap_or(false))
}

impl Drop for ThreadPin {
    fn drop(&mut self) {
        let _ = sched_setaffinity(this_thread(), &self.saved);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cpus_of_this_thread() -> Vec<usize> {
        (0..64).filter(|&c| allowed(c)).collect()
    }

    #[test]
    fn pinning_restricts_this_thread_and_its_new_threads_then_restores() {
        let before = cpus_of_this_thread();
        let cpu = *before.last().expect("some cpu is allowed");
        std::thread::spawn(move || {
            let pin = pin_current_thread(cpu).expect("pin");
            assert_eq!(cpus_of_this_thread(), [cpu]);
            let child = std::thread::spawn(cpus_of_this_thread).join().unwrap();
            assert_eq!(
                child,
                [cpu],
                "a thread started while pinned inherits the pin"
            );
            drop(pin);
            assert_eq!(cpus_of_this_thread(), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_cpu_outside_the_set_is_refused() {
        assert!(pin_current_thread(1 << 20).is_err());
        assert!(!allowed(1 << 20));
    }
}
