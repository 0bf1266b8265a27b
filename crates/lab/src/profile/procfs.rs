//! What /proc says about a server: its CPU time, its processes and threads, the port it listens
//! on.
//!
//! A server is often more than one process (nginx's master and workers, Apache prefork's
//! children), so everything here is about the process tree under a pid, not the pid alone.
//! /proc is read directly (no `ps`, no `ss`): it is always there and its formats are stable.

use super::ProfileError;
use std::collections::{HashMap, HashSet};
use std::fs;
use std::time::Duration;

/// The fields of /proc/PID/stat used here.
#[derive(Debug, Clone, Copy)]
struct Stat {
    ppid: u32,
    /// Clock ticks: the process's own (all threads, dead ones included) and its reaped children's.
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

fn gone_or_io(pid: u32, what: &str, e: std::io::Error) -> ProfileError {
    if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ESRCH) {
        ProfileError::ProcessGone { pid }
    } else {
        ProfileError::io(format!("reading /proc/{pid}/{what}"), e)
    }
}

fn read_stat(pid: u32) -> Result<Stat, ProfileError> {
    let text =
        fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| gone_or_io(pid, "stat", e))?;
    parse_stat(&text).ok_or_else(|| ProfileError::Unparseable {
        tool: "/proc",
        detail: format!("/proc/{pid}/stat: `{}`", text.trim()),
    })
}

/// `pid (comm) state ppid ...`: comm may hold spaces and parentheses, so fields are counted
/// from the last `)`.
fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // After comm: state(3) ppid(4) ... utime(14) stime(15) cutime(16) cstime(17).
    let num = |i: usize| f.get(i - 3)?.parse::<u64>().ok();
    Some(Stat {
        ppid: u32::try_from(num(4)?).ok()?,
        utime: num(14)?,
        stime: num(15)?,
        cutime: num(16)?,
        cstime: num(17)?,
    })
}

/// Clock ticks per second of /proc's times.
fn ticks_per_second() -> u64 {
    // SAFETY: sysconf only reads a configuration value; it takes and returns plain integers.
    let n = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if n > 0 {
        n as u64
    } else {
        100
    }
}

fn ticks(n: u64) -> Duration {
    let hz = ticks_per_second();
    Duration::from_secs(n / hz) + Duration::from_nanos((n % hz) * 1_000_000_000 / hz)
}

/// Every process's parent, from /proc/*/stat (processes that vanish while reading are skipped).
fn parents() -> HashMap<u32, u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return HashMap::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, read_stat(pid).ok()?.ppid)))
        .collect()
}

/// `pid` first, then its descendants (children, grandchildren, ...), breadth first.
pub fn process_tree(pid: u32) -> Result<Vec<u32>, ProfileError> {
    read_stat(pid)?;
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (child, parent) in parents() {
        children.entry(parent).or_default().push(child);
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        if let Some(kids) = children.get(&tree[i]) {
            let mut kids = kids.clone();
            kids.sort_unstable();
            tree.extend(kids.into_iter().filter(|k| *k != pid));
        }
        i += 1;
    }
    Ok(tree)
}

/// The thread ids of a process (empty if it is gone).
pub fn threads(pid: u32) -> Vec<u32> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<u32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// CPU time (user, sys) used so far by `pid` and its descendants, all their threads included,
/// and by the children they have reaped, so that the difference of two readings is what the
/// process tree used in between even when workers come and go (Apache prefork).
/// /proc counts in clock ticks (10 ms on most systems).
pub fn cpu_time(pid: u32) -> Result<(Duration, Duration), ProfileError> {
    let (mut user, mut sys) = (0u64, 0u64);
    for p in process_tree(pid)? {
        match read_stat(p) {
            Ok(s) => {
                user += s.utime + s.cutime;
                sys += s.stime + s.cstime;
            }
            // A worker that exited since the tree was read: its parent's cutime has it (or
            // will, once reaped).
            Err(ProfileError::ProcessGone { .. }) if p != pid => {}
            Err(e) => return Err(e),
        }
    }
    Ok((ticks(user), ticks(sys)))
}

/// Socket inodes in state LISTEN on `port` in a /proc/net/tcp{,6} table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    const LISTEN: &str = "0A";
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (_, local_port) = f.get(1)?.rsplit_once(':')?;
            let matches = u16::from_str_radix(local_port, 16).ok()? == port && *f.get(3)? == LISTEN;
            let inode = f.get(9)?.parse::<u64>().ok()?;
            (matches && inode != 0).then_some(inode)
        })
        .collect()
}

/// Processes holding one of these socket inodes open.
fn holders(inodes: &HashSet<u64>) -> Vec<u32> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids = Vec::new();
    for pid in dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
        // Processes of other users are unreadable without privileges: skipped.
        let Ok(fds) = fs::read_dir(format!("/proc/{pid}/fd")) else {
            continue;
        };
        let holds = fds
            .filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
            .any(|link| {
                link.to_str()
                    .and_then(|l| l.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok())
                    .is_some_and(|inode: u64| inodes.contains(&inode))
            });
        if holds {
            pids.push(pid);
        }
    }
    pids
}

/// The pid of the local process listening on this TCP port (IPv4 or IPv6), for
/// `--profile auto`: the socket inodes in state LISTEN from /proc/net/tcp{,6}, then the processes
/// holding them (/proc/*/fd). When several do (a master and its workers share the listening
/// socket), the one whose parent is not among them: the master. None when nobody listens, or
/// the listener belongs to a user whose /proc entries are unreadable.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let inodes: HashSet<u64> = ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .flat_map(|t| listening_inodes(&t, port))
        .collect();
    if inodes.is_empty() {
        return None;
    }
    let pids = holders(&inodes);
    let set: HashSet<u32> = pids.iter().copied().collect();
    pids.iter()
        .copied()
        .filter(|p| read_stat(*p).map_or(true, |s| !set.contains(&s.ppid)))
        .min()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 17 4242 4242 0 -1 4194560 100 0 0 0 250 40 7 3 20 0 3 0 1 \
                    1000 100 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.ppid, s.utime, s.stime, s.cutime, s.cstime),
            (17, 250, 40, 7, 3)
        );
    }

    #[test]
    fn only_listening_sockets_on_the_port_are_taken() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0\n   \
1: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1\n   \
2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0\n";
        assert_eq!(listening_inodes(table, 8080), vec![111]);
        assert_eq!(listening_inodes(table, 8081), vec![333]);
        assert!(listening_inodes(table, 80).is_empty());
    }
}
