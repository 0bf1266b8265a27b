//! What this machine can carry, checked before a run starts: event-loop threads against the
//! cores, Webchildren against the file descriptors a process may open.
//!
//! Past the cores, more event loops only take turns on them, and each costs its buffers and
//! statistics; a thread count far beyond them once grew a run to gigabytes. Past the descriptor
//! limit, every connect beyond it fails with EMFILE: the run measures the limit, not the server.

use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};

/// The event-loop threads a run uses, and a note when that is not what was asked for: at most
/// one per Webchild (an idle loop measures nothing) and one per core.
pub fn threads(requested: Option<usize>, clients: usize, cores: usize) -> (usize, Option<String>) {
    let Some(asked) = requested else {
        return (default_threads(clients, cores), None);
    };
    let cores = cores.max(1);
    let used = asked.min(clients).min(cores).max(1);
    if used == asked {
        return (used, None);
    }
    let why = if asked > clients && clients <= cores {
        format!("one per Webchild (-c {clients})")
    } else {
        format!("one per core ({cores} here); more would only take turns on them")
    };
    let note = format!("-t {asked}: using {used} thread{}, {why}", plural(used));
    (used, Some(note))
}

/// The event-loop threads of a run not given `-t`: one per core of `cores`, at most one per
/// Webchild, at least one.
pub fn default_threads(clients: usize, cores: usize) -> usize {
    cores.max(1).min(clients).max(1)
}

fn plural(n: usize) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// Descriptors a run needs besides the Webchildren's sockets: stdio, each loop's epoll and its
/// clone, a log, a JSON file, a profiler's pipes; generous, since running out costs a run.
const OVERHEAD: u64 = 64;

/// Raises the soft limit on open files to the hard limit (what `ulimit -n` shows is often 1024
/// while the hard limit is far higher) and returns the limit now in force, None if unlimited.
/// `main` calls it first thing, for every command: a server needs the room as much as a client.
pub fn raise_open_files() -> Option<u64> {
    let Rlimit { current, maximum } = getrlimit(Resource::Nofile);
    if current != maximum {
        let raised = Rlimit {
            current: maximum,
            maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return maximum;
        }
    }
    current
}

/// The soft limit on open files in force, None if unlimited.
pub fn open_files() -> Option<u64> {
    getrlimit(Resource::Nofile).current
}

/// Refuses a run whose sockets (`sockets`: one per Webchild, plus the embedded server's when it
/// runs in this process) cannot all be open at once under `limit`.
pub fn check_open_files(sockets: u64, clients: usize, limit: Option<u64>) -> Result<(), String> {
    let need = sockets + OVERHEAD;
    match limit {
        Some(limit) if need > limit => Err(format!(
            "-c {clients} needs about {need} open files, and this process may open {limit}: \
             lower -c, or raise the limit (`ulimit -Hn {need}; ulimit -n {need}` as root, \
             `LimitNOFILE={need}` for a systemd service, `nofile` in \
             /etc/security/limits.conf)"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn threads_are_clamped_to_webchildren_and_cores_with_a_note() {
        assert_eq!(threads(None, 40, 2), (2, None));
        assert_eq!(threads(None, 1, 8), (1, None));
        assert_eq!(threads(Some(2), 40, 2), (2, None));
        let (n, note) = threads(Some(100_000), 40, 2);
        assert_eq!(n, 2);
        assert!(note.unwrap().contains("one per core (2 here)"));
        let (n, note) = threads(Some(8), 1, 8);
        assert_eq!(n, 1);
        assert_eq!(
            note.unwrap(),
            "-t 8: using 1 thread, one per Webchild (-c 1)"
        );
    }

    #[test]
    fn too_many_webchildren_for_the_descriptor_limit_are_refused_with_the_fix() {
        assert!(check_open_files(1000, 1000, Some(4096)).is_ok());
        assert!(check_open_files(1000, 1000, None).is_ok());
        let err = check_open_files(1000, 1000, Some(1024)).unwrap_err();
        assert!(
            err.starts_with("-c 1000 needs about 1064 open files"),
            "{err}"
        );
        assert!(err.contains("ulimit -n 1064"), "{err}");
    }

    #[test]
    fn the_soft_limit_is_raised_to_the_hard_limit() {
        let limit = raise_open_files();
        let now = getrlimit(Resource::Nofile);
        assert_eq!(now.current, now.maximum);
        assert_eq!(limit, now.current);
    }
}
