//! Peer servers: nginx, Apache httpd (prefork and event), lighttpd and flint serve, started from
//! their installed binaries with configs the lab writes, on loopback, pinned to one core.
//!
//! The papers compared servers on one machine at a time (Jigsaw against Apache, Flash against
//! Apache, prefork against threaded); a comparison is only fair when every server gets the same
//! document root, the same core and a config that does not handicap it. So each peer is started
//! here the same way: a private temp directory for its config, logs and pid file; a free loopback
//! port; pinned to one core (children inherit it); readiness polled, never slept for; and a
//! stop that takes the whole process group down, SIGTERM then SIGKILL, from `Drop` too, so a
//! failed or interrupted experiment leaves no server behind.
//!
//! A server that is not installed is a [`PeerError::NotInstalled`] naming the command that
//! installs it (scripts/install-peers.sh installs them all); callers go on with the others.

mod config;

pub use config::{
    apache_workers, ConfigParams, Mpm, TlsFiles, APACHE_MODULES, LIGHTTPD_OPENSSL,
    NGINX_TLS_LOG_FORMAT,
};

use crate::process::{self, free_port, Group, StopPolicy};
use crate::procfs::{process_tree, thread_count};
use std::fmt;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// The servers the lab knows how to start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerKind {
    Flint,
    Nginx,
    ApachePrefork,
    ApacheEvent,
    Lighttpd,
}

impl PeerKind {
    pub const ALL: [PeerKind; 5] = [
        PeerKind::Flint,
        PeerKind::Nginx,
        PeerKind::ApachePrefork,
        PeerKind::ApacheEvent,
        PeerKind::Lighttpd,
    ];

    /// The name on the command line and in JSON.
    pub fn name(self) -> &'static str {
        match self {
            PeerKind::Flint => "flint",
            PeerKind::Nginx => "nginx",
            PeerKind::ApachePrefork => "apache-prefork",
            PeerKind::ApacheEvent => "apache-event",
            PeerKind::Lighttpd => "lighttpd",
        }
    }

    /// The Debian command that installs it (flint: how to build it).
    pub fn install_hint(self) -> &'static str {
        match self {
            PeerKind::Flint => "cargo build --release -p flint (or set FLINT_BIN)",
            PeerKind::Nginx => "apt-get install -y nginx",
            PeerKind::ApachePrefork | PeerKind::ApacheEvent => "apt-get install -y apache2",
            PeerKind::Lighttpd => "apt-get install -y lighttpd",
        }
    }

    /// Whether it can add Content-MD5 to responses (the digest experiment).
    pub fn supports_digest(self) -> bool {
        matches!(
            self,
            PeerKind::Flint | PeerKind::ApachePrefork | PeerKind::ApacheEvent
        )
    }

    fn program_name(self) -> &'static str {
        match self {
            PeerKind::Flint => "flint",
            PeerKind::Nginx => "nginx",
            PeerKind::ApachePrefork | PeerKind::ApacheEvent => "apache2",
            PeerKind::Lighttpd => "lighttpd",
        }
    }

    fn version_flag(self) -> &'static str {
        match self {
            PeerKind::Flint => "--version",
            _ => "-v",
        }
    }

    /// Finds the server's binary and asks its version. `flint_bin` is the flint executable (the
    /// running `flint` passes its own path); the others are looked up on PATH and in the sbin
    /// directories.
    pub fn probe(self, flint_bin: Option<&Path>) -> Result<Installed, PeerError> {
        let missing = || PeerError::NotInstalled {
            kind: self,
            install: self.install_hint(),
        };
        let program = match (self, flint_bin) {
            (PeerKind::Flint, Some(bin)) if process::is_executable(bin) => bin.to_owned(),
            (PeerKind::Flint, _) => return Err(missing()),
            _ => process::find_program(self.program_name()).ok_or_else(missing)?,
        };
        if matches!(self, PeerKind::ApachePrefork | PeerKind::ApacheEvent) {
            let mpm = match self {
                PeerKind::ApachePrefork => "mpm_prefork",
                _ => "mpm_event",
            };
            for module in [mpm, "mime", "dir", "authz_core"] {
                let path = Path::new(config::APACHE_MODULES).join(format!("mod_{module}.so"));
                if !path.is_file() {
                    return Err(missing());
                }
            }
        }
        let out = process::output_within(
            Command::new(&program).arg(self.version_flag()),
            Duration::from_secs(10),
        )
        .map_err(|source| PeerError::Io {
            kind: self,
            what: format!("running {} {}", program.display(), self.version_flag()),
            source,
        })?;
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let version = parse_version(&text).unwrap_or_else(|| "unknown".to_owned());
        Ok(Installed { program, version })
    }
}

impl fmt::Display for PeerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PeerKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        PeerKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = PeerKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown server `{s}` (known: {})", names.join(", "))
            })
    }
}

/// `nginx/1.22.1` from `nginx version: nginx/1.22.1`; `Apache/2.4.71` from `Server version:
/// Apache/2.4.71 (Debian)`; `lighttpd/1.4.69` from `lighttpd/1.4.69 (ssl) - a light ...`;
/// `flint/0.1.0` from `flint 0.1.0`.
pub fn parse_version(text: &str) -> Option<String> {
    let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
    let line = line.rsplit_once("version: ").map_or(line, |(_, v)| v);
    let mut words = line.split_whitespace();
    let first = words.next()?;
    if first.contains('/') {
        return Some(first.to_owned());
    }
    // `NAME VERSION` (clap's --version).
    match words.next() {
        Some(v) if v.starts_with(|c: char| c.is_ascii_digit()) => Some(format!("{first}/{v}")),
        _ => Some(first.to_owned()),
    }
}

/// A server found on this machine.
#[derive(Debug, Clone)]
pub struct Installed {
    pub program: PathBuf,
    pub version: String,
}

/// How to start a peer.
#[derive(Debug, Clone)]
pub struct PeerSpec {
    /// Document root (the same for every peer of an experiment). Apache's children run as
    /// www-data when the lab runs as root, so it must be readable by others.
    pub root: PathBuf,
    /// Content-MD5 on (only for kinds that [`PeerKind::supports_digest`]).
    pub digest: bool,
    /// Connections the experiment keeps open at once (sizes Apache's pool).
    pub max_clients: usize,
    /// Core to pin the server (and its children) to; `None`: not pinned.
    pub cpu: Option<usize>,
    /// The flint executable, for [`PeerKind::Flint`].
    pub flint_bin: Option<PathBuf>,
    /// How long start-up may take before it counts as failed.
    pub ready_timeout: Duration,
    /// Serve HTTPS only, with this certificate (`flint lab tls`).
    pub tls: Option<config::TlsFiles>,
}

/// Why a peer could not be used.
#[derive(Debug, thiserror::Error)]
pub enum PeerError {
    #[error("{kind} is not installed (install: {install})")]
    NotInstalled {
        kind: PeerKind,
        install: &'static str,
    },
    #[error("{kind}: {what}: {source}")]
    Io {
        kind: PeerKind,
        what: String,
        source: std::io::Error,
    },
    #[error("{kind} has no Content-MD5 option")]
    NoDigest { kind: PeerKind },
    #[error("{kind} exited during start-up ({status}); its log:\n{log}")]
    Exited {
        kind: PeerKind,
        status: String,
        log: String,
    },
    #[error("{kind} did not accept connections on {addr} within {waited:?}; its log:\n{log}")]
    NotReady {
        kind: PeerKind,
        addr: SocketAddr,
        waited: Duration,
        log: String,
    },
}

/// A running peer. Dropping it stops it (the whole process group) and removes its directory.
#[derive(Debug)]
pub struct Peer {
    kind: PeerKind,
    version: String,
    addr: SocketAddr,
    group: Group,
    log: PathBuf,
    // Declared after `group`: removed once the group's drop has stopped the processes using it.
    dir: tempfile::TempDir,
}

/// Start-up attempts: a port found free can be taken before the peer binds it.
const START_ATTEMPTS: usize = 3;
/// From SIGTERM to SIGKILL when a peer is stopped.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl Peer {
    /// Starts `kind` as `spec` says and returns once it accepts connections (and, for Apache,
    /// once its whole pool of processes or threads is up).
    pub fn start(kind: PeerKind, spec: &PeerSpec) -> Result<Peer, PeerError> {
        if spec.digest && !kind.supports_digest() {
            return Err(PeerError::NoDigest { kind });
        }
        let installed = kind.probe(spec.flint_bin.as_deref())?;
        let mut attempt = 1;
        loop {
            match Self::start_once(kind, spec, &installed) {
                // Another process may have bound the port first: a new port, a new attempt.
                Err(PeerError::Exited { .. }) if attempt < START_ATTEMPTS => attempt += 1,
                other => return other,
            }
        }
    }

    fn start_once(
        kind: PeerKind,
        spec: &PeerSpec,
        installed: &Installed,
    ) -> Result<Peer, PeerError> {
        let io = |what: &str| {
            let what = what.to_owned();
            move |source| PeerError::Io { kind, what, source }
        };
        let dir = tempfile::Builder::new()
            .prefix(&format!("flint-lab-{}.", kind.name()))
            .tempdir()
            .map_err(io("creating its directory"))?;
        let port = free_port().map_err(io("finding a free port"))?;
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let params = ConfigParams {
            dir: dir.path(),
            root: &spec.root,
            port,
            digest: spec.digest,
            max_clients: spec.max_clients,
            tls: spec.tls.as_ref(),
        };
        let args = write_config(kind, &params).map_err(io("writing its config"))?;
        let log = dir.path().join("output.log");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(io("creating its log"))?;
        let mut cmd = Command::new(&installed.program);
        cmd.args(&args)
            .current_dir(dir.path())
            .stdin(Stdio::null())
            .stdout(out.try_clone().map_err(io("creating its log"))?)
            .stderr(out);
        let group = Group::spawn(&mut cmd, spec.cpu, StopPolicy::terminate(STOP_GRACE))
            .map_err(io(&format!("starting {}", installed.program.display())))?;
        let mut peer = Peer {
            kind,
            version: installed.version.clone(),
            addr,
            group,
            log,
            dir,
        };
        let workers = apache_workers(spec.max_clients);
        let settled = |pid: u32| match kind {
            // Every prefork child forked, or the event child with all its threads: the tree
            // profiled at the start of a window is then the one that serves it.
            PeerKind::ApachePrefork => process_tree(pid).is_ok_and(|t| t.len() > workers),
            PeerKind::ApacheEvent => process_tree(pid)
                .ok()
                .and_then(|t| t.get(1).copied())
                .is_some_and(|c| thread_count(c) > workers as u64),
            _ => true,
        };
        let deadline = Instant::now() + spec.ready_timeout;
        loop {
            if let Some(status) = peer.group.exited() {
                return Err(PeerError::Exited {
                    kind,
                    status: status.to_string(),
                    log: peer.log_tail(),
                });
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                && settled(peer.pid())
            {
                return Ok(peer);
            }
            if Instant::now() >= deadline {
                return Err(PeerError::NotReady {
                    kind,
                    addr,
                    waited: spec.ready_timeout,
                    log: peer.log_tail(),
                });
            }
            std::thread::sleep(process::POLL);
        }
    }

    pub fn kind(&self) -> PeerKind {
        self.kind
    }

    /// `nginx/1.22.1`, `Apache/2.4.71`, `lighttpd/1.4.69`, `flint/0.1.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The process started (Apache: the parent; the others: the one that serves), the root
    /// of the tree a window watches.
    pub fn pid(&self) -> u32 {
        self.group.pid()
    }

    /// How the server ended, if it has (a crash in the middle of an experiment).
    pub fn exited(&mut self) -> Option<String> {
        let status = self.group.exited()?;
        Some(format!("exited ({status}); its log:\n{}", self.log_tail()))
    }

    /// The peer's private directory (config, logs).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The last lines the server wrote to its output and error logs.
    pub fn log_tail(&self) -> String {
        let mut text = String::new();
        for path in [self.log.clone(), self.dir.path().join("error.log")] {
            if let Ok(t) = std::fs::read_to_string(&path) {
                text.push_str(&t);
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Stops the server now: SIGTERM to its group, then SIGKILL after a grace (dropping it does
    /// the same). An error if it had to be killed.
    pub fn stop(mut self) -> Result<(), PeerError> {
        if self.group.stop().killed {
            return Err(PeerError::Io {
                kind: self.kind,
                what: "stopping it".into(),
                source: std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    format!("still running {STOP_GRACE:?} after SIGTERM: killed"),
                ),
            });
        }
        Ok(())
    }
}

/// Writes the config files `kind` reads into `p.dir` and returns its arguments.
fn write_config(kind: PeerKind, p: &ConfigParams) -> std::io::Result<Vec<String>> {
    let conf = |name: &str, text: String| -> std::io::Result<String> {
        let path = p.dir.join(name);
        std::fs::write(&path, text)?;
        Ok(path.display().to_string())
    };
    let dir = p.dir.display().to_string();
    Ok(match kind {
        PeerKind::Nginx => {
            let path = conf("nginx.conf", config::nginx(p))?;
            let error_log = format!("{dir}/error.log");
            vec!["-p".into(), dir, "-e".into(), error_log, "-c".into(), path]
        }
        PeerKind::ApachePrefork | PeerKind::ApacheEvent => {
            let mpm = match kind {
                PeerKind::ApachePrefork => Mpm::Prefork,
                _ => Mpm::Event,
            };
            conf("mime.types", config::apache_mime_types())?;
            let path = conf("httpd.conf", config::apache(p, mpm, apache_user()))?;
            vec!["-D".into(), "FOREGROUND".into(), "-f".into(), path]
        }
        PeerKind::Lighttpd => {
            let path = conf("lighttpd.conf", config::lighttpd(p))?;
            vec!["-D".into(), "-f".into(), path]
        }
        PeerKind::Flint => config::flint_args(p),
    })
}

/// The user Apache's children run as: as root, www-data (Debian's) or nobody; otherwise none
/// (they stay the invoking user, and a `User` line would be refused).
fn apache_user() -> Option<&'static str> {
    if !nix::unistd::geteuid().is_root() {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    Some(if passwd.lines().any(|l| l.starts_with("www-data:")) {
        "www-data"
    } else {
        "nobody"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_read_as_name_slash_number() {
        assert_eq!(
            parse_version("nginx version: nginx/1.22.1\n").as_deref(),
            Some("nginx/1.22.1")
        );
        assert_eq!(
            parse_version("Server version: Apache/2.4.71 (Debian)\nServer built:   2026\n")
                .as_deref(),
            Some("Apache/2.4.71")
        );
        assert_eq!(
            parse_version("lighttpd/1.4.69 (ssl) - a light and fast webserver\n").as_deref(),
            Some("lighttpd/1.4.69")
        );
        assert_eq!(
            parse_version("flint 0.1.0\n").as_deref(),
            Some("flint/0.1.0")
        );
        assert_eq!(parse_version("\n  \n"), None);
    }

    #[test]
    fn server_names_round_trip_and_unknown_names_are_refused() {
        for kind in PeerKind::ALL {
            assert_eq!(kind.name().parse::<PeerKind>(), Ok(kind));
        }
        let err = "apache".parse::<PeerKind>().expect_err("not a peer");
        assert!(err.contains("apache-prefork"), "{err}");
    }

    #[test]
    fn a_missing_flint_binary_names_how_to_build_it() {
        let err = PeerKind::Flint
            .probe(Some(Path::new("/nonexistent/flint")))
            .expect_err("no such binary");
        assert!(err.to_string().contains("cargo build"), "{err}");
    }

    #[test]
    fn digest_is_refused_for_servers_without_it() {
        let spec = PeerSpec {
            root: PathBuf::from("/nonexistent"),
            digest: true,
            max_clients: 1,
            cpu: None,
            flint_bin: None,
            ready_timeout: Duration::from_secs(1),
            tls: None,
        };
        assert!(matches!(
            Peer::start(PeerKind::Nginx, &spec),
            Err(PeerError::NoDigest { .. })
        ));
    }
}
