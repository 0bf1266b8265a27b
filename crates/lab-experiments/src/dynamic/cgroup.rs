//! A cgroup (v2) per process group of a dynamic deployment, for its CPU: the kernel adds up
//! every process that ran in it, exited ones included, to the microsecond. A gateway's programs
//! come and go within a window, and /proc counts an exited child only in its parent's reaped
//! times, which are lost when the parent ignores SIGCHLD (fcgiwrap does: the kernel reaps its
//! programs and discards their times). The cgroup has them all.
//!
//! A process joins its cgroup before it execs (through `sh -c 'echo $$ > cgroup.procs; exec
//! ...'`, the pid unchanged), so every child it starts is born in it. Made under the cgroup2
//! mount (`/sys/fs/cgroup` or, on a hybrid hierarchy, `/sys/fs/cgroup/unified`), which needs
//! privileges; without, the experiment falls back to /proc ([`super::stack`]).

use lab_process::cpu::CpuTime;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One cgroup, removed when dropped (once its processes have exited).
#[derive(Debug)]
pub struct Cgroup {
    dir: PathBuf,
}

/// The cgroup2 mount point, from /proc/self/mounts.
fn mount() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    mounts.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.get(2) == Some(&"cgroup2")).then(|| PathBuf::from(f[1]))
    })
}

impl Cgroup {
    /// A new cgroup `name` under the cgroup2 mount, made unique with this process's id and a
    /// serial number (two stacks of one process, as parallel tests run, get two cgroups).
    pub fn create(name: &str) -> io::Result<Cgroup> {
        static SERIAL: AtomicU64 = AtomicU64::new(0);
        let root = mount().ok_or_else(|| io::Error::other("no cgroup2 mount"))?;
        let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
        let dir = root.join(format!("flint-lab-{name}.{}.{serial}", std::process::id()));
        std::fs::create_dir(&dir)?;
        let cg = Cgroup { dir };
        cg.usage()?;
        // Refused where cgroup.procs cannot be written (the kernel's delegation rules): a
        // throwaway shell moves itself in the way `command` does, before any server starts
        // there, so the experiment falls back to /proc instead of failing the server.
        let moved = cg
            .command(Path::new("/bin/true"), &[])
            .stderr(std::process::Stdio::null())
            .status()?;
        if !moved.success() {
            return Err(io::Error::other(format!(
                "cannot move a process into {}",
                cg.dir.display()
            )));
        }
        Ok(cg)
    }

    /// `program ARGS` started inside the cgroup: the shell moves itself in, then execs.
    pub fn command(&self, program: &Path, args: &[&OsStr]) -> Command {
        let mut cmd = Command::new("/bin/sh");
        cmd.arg("-c")
            .arg("echo $$ > \"$0\" && exec \"$@\"")
            .arg(self.dir.join("cgroup.procs"))
            .arg(program)
            .args(args);
        cmd
    }

    /// Moves the running process `pid` in: the children it forks from now on start here.
    pub fn adopt(&self, pid: u32) -> io::Result<()> {
        std::fs::write(self.dir.join("cgroup.procs"), pid.to_string())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// CPU used in the cgroup so far.
    pub fn usage(&self) -> io::Result<CpuTime> {
        Cgroup::usage_at(&self.dir)
    }

    /// CPU used so far in the cgroup at `dir` (`cpu.stat`: user and system µs).
    pub fn usage_at(dir: &Path) -> io::Result<CpuTime> {
        let text = std::fs::read_to_string(dir.join("cpu.stat"))?;
        let field = |name: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.trim().parse::<u64>().ok())
                .map(Duration::from_micros)
        };
        match (field("user_usec "), field("system_usec ")) {
            (Some(user), Some(sys)) => Ok(CpuTime { user, sys }),
            _ => Err(io::Error::other(
                "cpu.stat without user_usec and system_usec",
            )),
        }
    }
}

impl Drop for Cgroup {
    /// Removes the cgroup; its processes were stopped first, and the kernel may take a moment
    /// to see the last one out (bounded).
    fn drop(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(2);
        while std::fs::remove_dir(&self.dir).is_err() && Instant::now() < deadline {
            std::thread::sleep(lab_process::POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lab_process::{Group, StopPolicy};

    /// The cgroup counts a program that ran and exited within the window, started by a process
    /// of the cgroup and reaped by no one it knows of (the shell runs it in the background and
    /// only watches its pid go). Needs root, as the lab's cgroups do.
    #[test]
    fn a_cgroup_counts_a_program_that_ran_and_exited() {
        let cg = Cgroup::create("test").expect("a cgroup (the lab runs as root)");
        let before = cg.usage().unwrap();
        let script = "sh -c 'i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done' & \
                      pid=$!; while kill -0 $pid 2>/dev/null; do sleep 0.01; done";
        let mut cmd = cg.command(Path::new("/bin/sh"), &["-c".as_ref(), script.as_ref()]);
        let policy = StopPolicy::terminate(Duration::from_secs(5));
        let mut g = Group::spawn(&mut cmd, None, policy).unwrap();
        let status = g
            .wait_exit(Duration::from_secs(60))
            .expect("the script ends");
        assert!(status.success());
        let used = cg.usage().unwrap().since(&before).total();
        // 30,000 iterations of a shell loop: tens of milliseconds anywhere.
        assert!(used >= Duration::from_millis(5), "{used:?}");
        drop(g);
        let dir = cg.dir().to_owned();
        drop(cg);
        assert!(!dir.exists(), "the cgroup is removed");
    }
}
