//! What /proc says about processes: their state, parents, groups, threads and CPU ticks, the
//! process tree under a pid, the listener of a port. The lab's one reader of /proc.
//!
//! A server is often more than one process (nginx's master and workers, Apache prefork's
//! children), so most questions here are about the tree under a pid, not the pid alone.
//! /proc is read directly (no `ps`, no `ss`): it is always there and its formats are stable.

use std::collections::{HashMap, HashSet};
use std::fs;

/// Why /proc could not answer.
#[derive(Debug, thiserror::Error)]
pub enum ProcError {
    /// The process has exited (or is a zombie, exited and not yet reaped).
    #[error("process {pid} is gone")]
    Gone {
        /// The process asked about.
        pid: u32,
    },
    /// /proc refused the read for another reason than the process being gone (permissions).
    #[error("reading /proc/{pid}/{what}: {source}")]
    Io {
        /// The process asked about.
        pid: u32,
        /// The file under /proc/PID read (`stat`).
        what: &'static str,
        /// The read's error.
        #[source]
        source: std::io::Error,
    },
    /// /proc/PID/stat did not have the layout of proc(5).
    #[error("/proc/{pid}/stat: cannot read `{line}`")]
    Unparseable {
        /// The process asked about.
        pid: u32,
        /// The line as read.
        line: String,
    },
}

/// The fields of /proc/PID/stat the lab uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    /// 'R', 'S', 'D', ..., 'Z' (zombie: exited, not yet reaped).
    pub state: char,
    /// The parent's pid.
    pub ppid: u32,
    /// The process group's id.
    pub pgrp: u32,
    /// Its threads when read.
    pub threads: u64,
    /// Clock ticks in user mode: the process's own (all threads, exited ones included).
    pub utime: u64,
    /// Clock ticks in the kernel: the process's own (all threads, exited ones included).
    pub stime: u64,
    /// Clock ticks in user mode of the children it has reaped (and theirs).
    pub cutime: u64,
    /// Clock ticks in the kernel of the children it has reaped (and theirs).
    pub cstime: u64,
}

/// `pid (comm) state ppid pgrp ...`: comm may hold spaces and parentheses, so fields are
/// counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<Stat> {
    let after = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = after.split_whitespace().collect();
    // Fields as proc(5) numbers them: state is 3, so field n is f[n - 3].
    let num = |n: usize| f.get(n - 3)?.parse::<u64>().ok();
    Some(Stat {
        state: f.first()?.chars().next()?,
        ppid: u32::try_from(num(4)?).ok()?,
        pgrp: u32::try_from(num(5)?).ok()?,
        utime: num(14)?,
        stime: num(15)?,
        cutime: num(16)?,
        cstime: num(17)?,
        threads: num(20)?,
    })
}

/// /proc/PID/stat; a process that has gone (or is a zombie) is [`ProcError::Gone`], as is one
/// that exits while being read (ESRCH).
pub fn stat(pid: u32) -> Result<Stat, ProcError> {
    let text = fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound
            || e.raw_os_error() == Some(nix::errno::Errno::ESRCH as i32)
        {
            ProcError::Gone { pid }
        } else {
            ProcError::Io {
                pid,
                what: "stat",
                source: e,
            }
        }
    })?;
    let s = parse_stat(&text).ok_or_else(|| ProcError::Unparseable {
        pid,
        line: text.trim().to_owned(),
    })?;
    if s.state == 'Z' {
        return Err(ProcError::Gone { pid });
    }
    Ok(s)
}

/// Every live (not zombie) process with its stat; those that vanish while read are skipped.
fn all() -> Vec<(u32, Stat)> {
    let Ok(dir) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| Some((pid, stat(pid).ok()?)))
        .collect()
}

/// `pid` first, then its live descendants (children, grandchildren, ...), parents before
/// children.
pub fn process_tree(pid: u32) -> Result<Vec<u32>, ProcError> {
    stat(pid)?;
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for (child, s) in all() {
        children.entry(s.ppid).or_default().push(child);
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

/// Threads of `pid` (0 when it is gone).
pub fn thread_count(pid: u32) -> u64 {
    stat(pid).map_or(0, |s| s.threads)
}

/// Whether group `pgid` has a member that has not exited.
pub fn group_alive(pgid: u32) -> bool {
    all().iter().any(|(_, s)| s.pgrp == pgid)
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
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| socket_inodes(*pid).any(|inode| inodes.contains(&inode)))
        .collect()
}

/// The socket inodes a process holds open; none when its fds are unreadable (processes of
/// other users, without privileges).
fn socket_inodes(pid: u32) -> impl Iterator<Item = u64> {
    let fds = fs::read_dir(format!("/proc/{pid}/fd"))
        .into_iter()
        .flatten();
    fds.filter_map(|fd| fs::read_link(fd.ok()?.path()).ok())
        .filter_map(|link| {
            let link = link.to_str()?;
            link.strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
}

/// The inodes of the sockets listening on this TCP port, IPv4 and IPv6 (/proc/net/tcp{,6}).
fn listening_on(port: u16) -> HashSet<u64> {
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|p| fs::read_to_string(p).ok())
        .flat_map(|t| listening_inodes(&t, port))
        .collect()
}

/// The pid of the local process listening on this TCP port (IPv4 or IPv6), for
/// `--profile auto`: the socket inodes in state LISTEN from /proc/net/tcp{,6}, then the processes
/// holding them (/proc/*/fd). When several do (a master and its workers share the listening
/// socket), the one whose parent is not among them: the master. None when nobody listens, or
/// the listener belongs to a user whose /proc entries are unreadable.
pub fn pid_listening_on(port: u16) -> Option<u32> {
    let inodes = listening_on(port);
    if inodes.is_empty() {
        return None;
    }
    let pids = holders(&inodes);
    let set: HashSet<u32> = pids.iter().copied().collect();
    pids.iter()
        .copied()
        .filter(|p| stat(*p).map_or(true, |s| !set.contains(&s.ppid)))
        .min()
}

/// Whether the processes listening on this TCP port (IPv4 or IPv6, every address) are all
/// `pid` or processes of its tree, and there is at least one. A server given a port found free
/// and released may lose it to another process before it binds: a connect would then succeed
/// against that other server, this does not. False when a listener's /proc entries are
/// unreadable (another user's).
pub fn listens_only(pid: u32, port: u16) -> bool {
    let inodes = listening_on(port);
    if inodes.is_empty() {
        return false;
    }
    let holders = holders(&inodes);
    let tree: HashSet<u32> = process_tree(pid).unwrap_or_default().into_iter().collect();
    // Every socket held by someone (an unreadable holder leaves its inode unaccounted for).
    let held: HashSet<u64> = holders.iter().flat_map(|p| socket_inodes(*p)).collect();
    // A holder gone by the time the tree is read holds nothing now: a process forked from the
    // tree holds its sockets until its exec closes them, and may have run and been reaped
    // before the tree was read.
    let gone = |p: &u32| matches!(stat(*p), Err(ProcError::Gone { .. }));
    !holders.is_empty()
        && holders.iter().all(|p| tree.contains(p) || gone(p))
        && inodes.iter().all(|i| held.contains(i))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn stat_fields_count_from_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 17 4240 4242 0 -1 4194560 100 0 0 0 250 40 7 3 20 0 3 0 1 \
                    1000 100 18446744073709551615";
        let s = parse_stat(line).unwrap();
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.utime, s.stime, s.cutime, s.cstime, s.threads),
            ('S', 17, 4240, 250, 40, 7, 3, 3)
        );
        assert_eq!(parse_stat("12 (x) S 1"), None);
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

    #[test]
    fn the_tree_holds_the_process_and_its_children_and_a_reaped_one_is_gone() {
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        let me = std::process::id();
        let tree = process_tree(me).unwrap();
        assert_eq!(tree[0], me);
        assert!(tree.contains(&child.id()), "{tree:?} lacks {}", child.id());
        assert!(thread_count(me) >= 1);
        assert!(threads(me).contains(&me));
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(thread_count(child.id()), 0);
        assert!(matches!(stat(child.id()), Err(ProcError::Gone { .. })));
    }

    #[test]
    fn a_port_is_only_ours_when_every_listener_on_it_is_of_our_tree() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let me = std::process::id();
        assert!(listens_only(me, port));
        // Another process's tree (a child's, which holds no socket): not its port.
        let mut child = Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("spawn sleep");
        assert!(!listens_only(child.id(), port));
        let _ = child.kill();
        let _ = child.wait();
        drop(listener);
        // Nobody listens: nobody's.
        assert!(!listens_only(me, port));
    }
}
