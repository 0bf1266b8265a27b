//! PostgreSQL for `flint lab dynamic --db postgres`: Debian's server, made and started by the
//! lab in a temporary directory and stopped with its process group whatever happens (drop).
//!
//! - `initdb` makes the cluster (superuser `flint`, trust authentication: only the lab's own
//!   processes can reach its socket). PostgreSQL refuses to run as root, so as root the
//!   directory is given to `nobody` and `initdb` and `postgres` run as `nobody`.
//! - `postgres` runs in the foreground as its process group's leader (not through `pg_ctl`,
//!   which would leave it to run on its own), listening on a Unix socket in that directory
//!   only (`listen_addresses=''`: no TCP), in a cgroup of its own when one can be made: the
//!   database tier, every backend it forks included.
//! - Stopped with SIGINT (PostgreSQL's fast shutdown: clients cut off, then a clean exit),
//!   SIGKILL to the group past the grace.

use super::cgroup::Cgroup;
use lab_process::{Group, StopPolicy};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The cluster's superuser, the name clients connect as.
const SUPERUSER: &str = "flint";
/// The unprivileged user PostgreSQL runs as when the lab is root.
const UNPRIVILEGED: &str = "nobody";
/// How long the server may take to accept connections.
const READY: Duration = Duration::from_secs(60);
/// From SIGINT (fast shutdown) to SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// The prefix of the server's temporary directory: the lab's process id in it, so that a test
/// can look for a server left running by its own process (`pgrep -f`).
pub fn dir_prefix() -> String {
    format!("flint-lab-postgres.{}.", std::process::id())
}

/// A running PostgreSQL server. Dropping it stops its group, then removes its cgroup and its
/// directory.
#[derive(Debug)]
pub struct Postgres {
    group: Group,
    cgroup: Option<Cgroup>,
    url: String,
    dir: tempfile::TempDir,
}

/// Debian's PostgreSQL program `name`: on PATH, else the newest of
/// /usr/lib/postgresql/VERSION/bin.
fn program(name: &str) -> Result<PathBuf, String> {
    if let Some(p) = lab_process::find_program(name) {
        return Ok(p);
    }
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let version = e.file_name().to_str()?.parse().ok()?;
            let p = e.path().join("bin").join(name);
            lab_process::is_executable(&p).then_some((version, p))
        })
        .collect();
    found.sort();
    found.pop().map(|(_, p)| p).ok_or_else(|| {
        format!("{name} (PostgreSQL) is not installed (apt-get install -y postgresql)")
    })
}

/// `user`'s uid and gid, from /etc/passwd.
fn user_ids(user: &str) -> Result<(u32, u32), String> {
    let passwd = std::fs::read_to_string("/etc/passwd").map_err(|e| format!("/etc/passwd: {e}"))?;
    passwd
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&user) && f.len() > 3)
                .then(|| Some((f[2].parse().ok()?, f[3].parse().ok()?)))
                .flatten()
        })
        .ok_or_else(|| format!("no user {user} in /etc/passwd"))
}

/// `text` with every byte but the URL's unreserved ones percent-encoded (a socket directory as
/// a URL's host).
fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Postgres {
    /// Makes a cluster and starts its server (pinned to `cpu` when given), ready for
    /// connections.
    pub fn start(cpu: Option<usize>) -> Result<Postgres, String> {
        let initdb = program("initdb")?;
        let postgres = program("postgres")?;
        let dir = tempfile::Builder::new()
            .prefix(&dir_prefix())
            .tempdir()
            .map_err(|e| format!("PostgreSQL's directory: {e}"))?;
        let root = nix::unistd::geteuid().is_root();
        let ids = if root {
            let (uid, gid) = user_ids(UNPRIVILEGED)?;
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .map_err(|e| format!("PostgreSQL's directory to {UNPRIVILEGED}: {e}"))?;
            Some((uid, gid))
        } else {
            None
        };
        let data = dir.path().join("data");
        let log = dir.path().join("postgres.log");
        let mut cmd = Command::new(&initdb);
        cmd.arg("--pgdata")
            .arg(&data)
            .args(["--username", SUPERUSER, "--auth=trust", "--no-sync"])
            .args(["--encoding=UTF8", "--locale=C"])
            .current_dir(dir.path());
        if let Some((uid, gid)) = ids {
            std::os::unix::process::CommandExt::uid(&mut cmd, uid);
            std::os::unix::process::CommandExt::gid(&mut cmd, gid);
        }
        let out = lab_process::output_within(&mut cmd, Duration::from_secs(120))
            .map_err(|e| format!("{}: {e}", initdb.display()))?;
        if !out.status.success() {
            return Err(format!(
                "initdb: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        // Its own cgroup when one can be made (as for the other tiers); else /proc's tree.
        let cgroup = Cgroup::create("postgres").ok();
        let socket_dir = format!("unix_socket_directories={}", dir.path().display());
        let server_args: Vec<&OsStr> = vec![
            "-D".as_ref(),
            data.as_os_str(),
            "-c".as_ref(),
            "listen_addresses=".as_ref(),
            "-c".as_ref(),
            socket_dir.as_ref(),
        ];
        // The shell that moves itself into the cgroup must be root; the server must not: the
        // shell execs `setpriv`, which drops to the unprivileged user and execs the server. The
        // change of user clears the parent-death signal the lab's group gave it; `--pdeathsig
        // keep` sets it again, so a lab killed with SIGKILL still stops its PostgreSQL.
        let setpriv;
        let (uid_arg, gid_arg);
        let (program, args): (&Path, Vec<&OsStr>) = match ids {
            Some((uid, gid)) => {
                setpriv = program("setpriv")?;
                uid_arg = format!("--reuid={uid}");
                gid_arg = format!("--regid={gid}");
                let mut args: Vec<&OsStr> = vec![
                    uid_arg.as_ref(),
                    gid_arg.as_ref(),
                    "--clear-groups".as_ref(),
                    "--pdeathsig".as_ref(),
                    "keep".as_ref(),
                    postgres.as_os_str(),
                ];
                args.extend(&server_args);
                (&setpriv, args)
            }
            None => (&postgres, server_args),
        };
        let mut cmd = match &cgroup {
            Some(cg) => cg.command(program, &args),
            None => {
                let mut c = Command::new(program);
                c.args(&args);
                c
            }
        };
        let out = std::fs::File::create(&log).map_err(|e| format!("postgres.log: {e}"))?;
        let err = out.try_clone().map_err(|e| format!("postgres.log: {e}"))?;
        cmd.current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let group = Group::spawn(&mut cmd, cpu, StopPolicy::interrupt(STOP_GRACE))
            .map_err(|e| format!("starting postgres: {e}"))?;
        let url = format!(
            "postgres://{SUPERUSER}@{}/postgres",
            percent_encode(&dir.path().display().to_string())
        );
        let mut pg = Postgres {
            group,
            cgroup,
            url,
            dir,
        };
        pg.ready()?;
        Ok(pg)
    }

    /// Waits (at most [`READY`]) until the server accepts connections (`pg_isready`).
    fn ready(&mut self) -> Result<(), String> {
        let isready = program("pg_isready")?;
        let deadline = Instant::now() + READY;
        loop {
            let ok = lab_process::output_within(
                Command::new(&isready)
                    .arg("--quiet")
                    .arg("--host")
                    .arg(self.dir.path())
                    .args(["--username", SUPERUSER]),
                Duration::from_secs(10),
            )
            .is_ok_and(|o| o.status.success());
            if ok {
                return Ok(());
            }
            let log = || std::fs::read_to_string(self.dir.path().join("postgres.log"));
            if let Some(status) = self.group.exited() {
                let log = log().unwrap_or_default();
                return Err(format!("postgres exited ({status}): {}", log.trim()));
            }
            if Instant::now() >= deadline {
                let log = log().unwrap_or_default();
                return Err(format!(
                    "postgres not ready within {READY:?}: {}",
                    log.trim()
                ));
            }
            std::thread::sleep(lab_process::POLL);
        }
    }

    /// The database's URL, for `flint-app` (the socket directory as its host).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The server's process (its group's leader).
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// The server's cgroup, when it has one.
    pub fn cgroup(&self) -> Option<&Path> {
        self.cgroup.as_ref().map(Cgroup::dir)
    }

    /// Whether the server has exited.
    pub fn exited(&mut self) -> bool {
        self.group.exited().is_some()
    }
}

impl Drop for Postgres {
    /// The server's group first, so that its cgroup is empty when it is removed.
    fn drop(&mut self) {
        self.group.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_directory_is_a_urls_host() {
        assert_eq!(
            percent_encode("/tmp/flint-lab-postgres.1.Ab9"),
            "%2Ftmp%2Fflint-lab-postgres.1.Ab9"
        );
    }
}
