//! A program's process group: each program is started leading a group of its own
//! (`spawner.rs`: `process_group(0)`, `POSIX_SPAWN_SETPGROUP`), so that killing the group takes
//! the children it started too. Below both the spawner (which kills what it started when it
//! stops) and a running program (killed past its wall time or when its client leaves).

use rustix::process::{Pid, Signal};

/// SIGKILL to the process group `pid` leads (the program's: it was started with
/// `process_group(0)`, and is not reaped yet, so the id is still its own).
pub(crate) fn kill_group(pid: u32) {
    if let Some(pid) = Pid::from_raw(pid as i32) {
        let _ = rustix::process::kill_process_group(pid, Signal::KILL);
    }
}
