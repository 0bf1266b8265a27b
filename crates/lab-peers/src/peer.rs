//! A running peer ([`Peer`]): started as a [`PeerSpec`] says, pinned, on a free loopback port,
//! readiness polled, stopped with its process group.

use crate::config::{self, apache_workers, ConfigParams, Mpm};
use crate::{Installed, PeerError, PeerKind};
use lab_process::procfs::{listens_only, process_tree, thread_count};
use lab_process::{free_port, Backoff, Group, StopPolicy};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    /// Speak HTTP/2 too, where the server can ([`PeerKind::speaks_http2`]): h2 over TLS, h2c
    /// over cleartext.
    pub http2: bool,
    /// Run in this network namespace, listening on its address; `None`: loopback here.
    pub net: Option<PeerNet>,
}

/// Where a peer runs on the lab's network path: a network namespace (made by the caller, as
/// `ip netns add` names it) and the address of its interface there. The peer is started through
/// `ip netns exec`, which execs the server, so the pid is the server's; readiness is polled from
/// the calling thread, which must be in a namespace that reaches `addr`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeerNet {
    /// The network namespace's name.
    pub netns: String,
    /// The address of the peer's interface in it, the one it listens on.
    pub addr: Ipv4Addr,
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
/// The port a peer in a network namespace of its own listens on.
pub const PEER_NET_PORT: u16 = 8080;
/// iproute2, which starts a peer in a network namespace.
const IP: &str = "ip";
/// From SIGTERM to SIGKILL when a peer is stopped.
const STOP_GRACE: Duration = Duration::from_secs(5);

impl Peer {
    /// Starts `kind` as `spec` says and returns once its own process tree listens on its port
    /// (and, for Apache, once its whole pool of processes or threads is up).
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
        // In a namespace of its own every port is free; on loopback, one found free.
        let (host, port) = match &spec.net {
            Some(net) => (IpAddr::V4(net.addr), PEER_NET_PORT),
            None => (
                IpAddr::V4(Ipv4Addr::LOCALHOST),
                free_port().map_err(io("finding a free port"))?,
            ),
        };
        let addr = SocketAddr::new(host, port);
        let params = ConfigParams {
            dir: dir.path(),
            root: &spec.root,
            host,
            port,
            digest: spec.digest,
            max_clients: spec.max_clients,
            tls: spec.tls.as_ref(),
            http2: spec.http2 && kind.speaks_http2(),
        };
        let args = write_config(kind, &params).map_err(io("writing its config"))?;
        let log = dir.path().join("output.log");
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(io("creating its log"))?;
        let mut cmd = match &spec.net {
            Some(net) => {
                let mut c = Command::new(IP);
                c.args(["netns", "exec", &net.netns])
                    .arg(&installed.program);
                c
            }
            None => Command::new(&installed.program),
        };
        if kind == PeerKind::Caddy {
            cmd.envs(config::caddy_env(dir.path()));
        }
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
        let mut backoff = Backoff::new();
        loop {
            if let Some(status) = peer.group.exited() {
                return Err(PeerError::Exited {
                    kind,
                    status: status.to_string(),
                    log: peer.log_tail(),
                });
            }
            // On loopback, the port found free may have gone to another process's server:
            // ready once the listener is this peer's own. In its own namespace (whose sockets
            // /proc/net here does not show) the port is its alone: a connect tells.
            // A connect first: refused at once while nothing listens, it spares reading
            // /proc/net/tcp (thousands of lines on a busy machine) at every poll.
            let listening = match spec.net {
                None => {
                    TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
                        && listens_only(peer.pid(), port)
                }
                Some(_) => TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok(),
            };
            if listening && settled(peer.pid()) {
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
            backoff.pause(deadline);
        }
    }

    /// Which server this is.
    pub fn kind(&self) -> PeerKind {
        self.kind
    }

    /// `nginx/1.22.1`, `Apache/2.4.71`, `lighttpd/1.4.69`, `flint/0.1.0`.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Where it accepts connections.
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
        PeerKind::H2o => {
            let path = conf("h2o.conf", config::h2o(p))?;
            vec!["-c".into(), path]
        }
        PeerKind::Caddy => {
            let path = conf("Caddyfile", config::caddy(p))?;
            let adapter = "caddyfile".to_owned();
            vec![
                "run".into(),
                "--config".into(),
                path,
                "--adapter".into(),
                adapter,
            ]
        }
        PeerKind::Flint => config::flint_args(p),
    })
}

/// The user Apache's children run as: as root, www-data (Debian's) or nobody; otherwise none
/// (they stay the invoking user, and a `User` line would be refused).
pub fn apache_user() -> Option<&'static str> {
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
    fn digest_is_refused_for_servers_without_it() {
        let spec = PeerSpec {
            root: PathBuf::from("/nonexistent"),
            digest: true,
            max_clients: 1,
            cpu: None,
            flint_bin: None,
            ready_timeout: Duration::from_secs(1),
            tls: None,
            http2: false,
            net: None,
        };
        assert!(matches!(
            Peer::start(PeerKind::Nginx, &spec),
            Err(PeerError::NoDigest { .. })
        ));
    }
}
