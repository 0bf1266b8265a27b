//! Pinning the load generator to its own core, for the length of one run.
//!
//! The peers are pinned to one core (by `taskset`, see [`crate::peers`]); if the client's threads
//! could run there too, every figure would mix the server's cost with the client's. The client
//! is pinned by setting the affinity of the calling thread before `bench` starts its load threads:
//! threads inherit their creator's affinity, so they all land on the client core, and the calling
//! thread gets its old mask back when the guard drops.

use std::io;

/// Restores the calling thread's previous CPU mask when dropped.
#[derive(Debug)]
pub struct ThreadPin {
    saved: libc::cpu_set_t,
}

/// The calling thread's CPU mask.
fn get() -> io::Result<libc::cpu_set_t> {
    // SAFETY: cpu_set_t is a plain bit array, valid when zeroed; sched_getaffinity writes at most
    // size_of::<cpu_set_t>() bytes into it, the size we pass.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(set)
    }
}

/// Sets the calling thread's CPU mask (pid 0 = this thread only, not the whole process).
fn set(mask: &libc::cpu_set_t) -> io::Result<()> {
    // SAFETY: `mask` is a valid cpu_set_t of the size we pass; the kernel only reads it.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), mask) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Pins the calling thread (and the threads it starts from now on) to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<ThreadPin> {
    let saved = get()?;
    // CPU_SET indexes a fixed bit array: refuse what it cannot hold rather than write past it.
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpu {cpu} is out of range"),
        ));
    }
    // SAFETY: zeroed is a valid empty set; CPU_SET writes bit `cpu`, checked above to be inside it.
    let mask = unsafe {
        let mut mask: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut mask);
        mask
    };
    set(&mask)?;
    Ok(ThreadPin { saved })
}

/// Whether `cpu` is in the calling thread's mask.
pub fn allowed(cpu: usize) -> bool {
    if cpu >= 8 * std::mem::size_of::<libc::cpu_set_t>() {
        return false;
    }
    // SAFETY: CPU_ISSET reads bit `cpu` of a valid set, checked above to be inside it.
    get().is_ok_and(|set| unsafe { libc::CPU_ISSET(cpu, &set) })
}

impl Drop for ThreadPin {
    fn drop(&mut self) {
        let _ = set(&self.saved);
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
