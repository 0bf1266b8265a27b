//! The processes of one server's dynamic deployments, started together and stopped with their
//! groups: the web server (flint serve with `--cgi` and `--fastcgi`, or nginx with
//! `fastcgi_pass`), `flint-app fastcgi` behind it, and for nginx fcgiwrap (nginx runs no CGI
//! itself). Every process is pinned to the server core, as the other experiments' servers are.
//!
//! And how each tier's CPU is read ([`Tiers`]): the web server's process group, and the gateway
//! and application processes, CGI children included. Children come and go within a window, so
//! each reading is the processes alive plus the CPU of the children they have reaped
//! (`/proc/PID/stat` cutime and cstime, `lab_process::cpu::tree`): a CGI program that ran and
//! was reaped within the window is in the difference of the two readings.

use lab_app::deploy::{self, CGI_PROGRAM};
use lab_peers::PeerKind;
use lab_process::cpu::{self, CpuTime};
use lab_process::procfs::{pid_listening_on, ProcError};
use lab_process::{free_port, Group, StopPolicy};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The FastCGI prefix flint serve is given: the script is the (empty) file `fcgi/app` of the
/// root, so `/fcgi/app/json` is the application's `/json`.
pub const FLINT_FASTCGI_MOUNT: &str = "/fcgi/";
/// The CGI mount flint serve is given (its directory holds `app.cgi`).
pub const FLINT_CGI_MOUNT: &str = "/cgi-bin";

/// How the application is deployed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deployment {
    /// A file of the same bytes as `/plaintext`: the baseline.
    Static,
    /// A program per request.
    Cgi,
    /// `flint-app fastcgi`, persistent.
    FastCgi,
}

impl Deployment {
    pub const ALL: [Deployment; 3] = [Deployment::Static, Deployment::Cgi, Deployment::FastCgi];

    pub fn name(self) -> &'static str {
        match self {
            Deployment::Static => "static",
            Deployment::Cgi => "cgi",
            Deployment::FastCgi => "fastcgi",
        }
    }

    /// The URL prefix of its test types (the static file is `/plaintext` itself).
    pub fn prefix(self) -> &'static str {
        match self {
            Deployment::Static => "",
            Deployment::Cgi => deploy::CGI_PREFIX,
            Deployment::FastCgi => deploy::FASTCGI_PREFIX,
        }
    }
}

/// What every server's deployments share: the document root, the CGI directory (the program
/// and the database beside it) and the programs.
#[derive(Debug)]
pub struct Shared {
    pub root: PathBuf,
    pub cgi_dir: PathBuf,
    pub db: PathBuf,
    pub app_bin: PathBuf,
    /// The server core, for every process of a deployment.
    pub cpu: Option<usize>,
    /// fcgiwrap's children: as many CGI programs at once as flint serve runs for the load.
    pub cgi_workers: usize,
}

/// Writes the root (`/plaintext`, the FastCGI script's file) and the CGI directory (the program
/// and its database, made by the program itself) under `dir`.
pub fn prepare(dir: &Path, app_bin: &Path) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |e: std::io::Error| format!("{what}: {e}")
    };
    let root = dir.join("root");
    let cgi_dir = dir.join("cgi");
    std::fs::create_dir_all(root.join("fcgi")).map_err(io("the document root"))?;
    std::fs::create_dir_all(&cgi_dir).map_err(io("the CGI directory"))?;
    std::fs::write(root.join("plaintext"), b"Hello, World!").map_err(io("/plaintext"))?;
    std::fs::write(root.join("fcgi/app"), b"").map_err(io("the FastCGI script"))?;
    std::fs::copy(app_bin, cgi_dir.join(CGI_PROGRAM)).map_err(io("the CGI program"))?;
    let db = cgi_dir.join("world.db");
    let out = lab_process::output_within(
        Command::new(app_bin).arg("init").arg(&db),
        Duration::from_secs(60),
    )
    .map_err(io(&format!("{} init", app_bin.display())))?;
    if !out.status.success() {
        return Err(format!(
            "{} init: {}",
            app_bin.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok((root, cgi_dir, db))
}

/// One server with its deployments, running. Dropping it stops every group (the web server
/// first) and then removes its directory.
#[derive(Debug)]
pub struct Stack {
    pub kind: PeerKind,
    pub addr: SocketAddr,
    web: Group,
    wrap: Option<Group>,
    app: Group,
    dir: tempfile::TempDir,
}

/// From SIGTERM to SIGKILL when a process is stopped.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// How long a process may take to accept connections.
const READY: Duration = Duration::from_secs(20);

impl Stack {
    /// Starts `kind` (its program found by `probe`) with its gateways.
    pub fn start(kind: PeerKind, program: &Path, shared: &Shared) -> Result<Stack, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("flint-lab-dynamic-{}.", kind.name()))
            .tempdir()
            .map_err(|e| format!("its directory: {e}"))?;
        let log = dir.path().join("output.log");
        let spawn = |cmd: &mut Command, what: &str| -> Result<Group, String> {
            let out = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&log)
                .map_err(|e| format!("{what}'s log: {e}"))?;
            let err = out.try_clone().map_err(|e| format!("{what}'s log: {e}"))?;
            cmd.current_dir(dir.path())
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            Group::spawn(cmd, shared.cpu, StopPolicy::terminate(STOP_GRACE))
                .map_err(|e| format!("starting {what}: {e}"))
        };
        let socket = dir.path().join("app.sock");
        let mut app = spawn(
            Command::new(&shared.app_bin)
                .arg("fastcgi")
                .arg(&socket)
                .arg(&shared.db),
            "flint-app fastcgi",
        )?;
        ready(&mut app, "flint-app fastcgi", &log, || {
            UnixStream::connect(&socket).is_ok()
        })?;
        let wrap = match kind {
            PeerKind::Nginx => {
                let fcgiwrap = lab_process::find_program("fcgiwrap")
                    .ok_or("fcgiwrap is not installed (apt-get install -y fcgiwrap)")?;
                let wrap_socket = dir.path().join("fcgiwrap.sock");
                let mut wrap = spawn(
                    Command::new(fcgiwrap)
                        .arg("-c")
                        .arg(shared.cgi_workers.to_string())
                        .arg("-s")
                        .arg(format!("unix:{}", wrap_socket.display())),
                    "fcgiwrap",
                )?;
                ready(&mut wrap, "fcgiwrap", &log, || {
                    UnixStream::connect(&wrap_socket).is_ok()
                })?;
                Some((wrap, wrap_socket))
            }
            PeerKind::Flint => None,
            other => return Err(format!("{other} has no dynamic deployments in the lab")),
        };
        // A port found free may be taken by another process before the server binds it: the
        // server then exits, and another port is tried. Ready once the server itself listens.
        let mut attempt = 1;
        let (web, addr) = loop {
            let port = free_port().map_err(|e| format!("a free port: {e}"))?;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let mut cmd = match &wrap {
                Some((_, wrap_socket)) => {
                    let conf = dir.path().join("nginx.conf");
                    let text = deploy::nginx_config(&deploy::Nginx {
                        dir: dir.path(),
                        root: &shared.root,
                        port,
                        fastcgi: Some(&socket),
                        cgi: Some((wrap_socket, &shared.cgi_dir)),
                    });
                    std::fs::write(&conf, text).map_err(|e| format!("nginx.conf: {e}"))?;
                    let mut c = Command::new(program);
                    c.arg("-p").arg(dir.path());
                    c.arg("-e").arg(dir.path().join("error.log"));
                    c.arg("-c").arg(&conf);
                    c
                }
                None => {
                    let mut c = Command::new(program);
                    c.arg("serve").arg(&shared.root);
                    c.args(["--listen", &addr.to_string(), "--threads", "1"]);
                    c.arg("--cgi");
                    c.arg(format!("{FLINT_CGI_MOUNT}={}", shared.cgi_dir.display()));
                    c.arg("--fastcgi");
                    c.arg(format!("{FLINT_FASTCGI_MOUNT}=unix:{}", socket.display()));
                    c
                }
            };
            let mut web = spawn(&mut cmd, kind.name())?;
            let pid = web.pid();
            match ready(&mut web, kind.name(), &log, || {
                pid_listening_on(port) == Some(pid)
            }) {
                Ok(()) => break (web, addr),
                Err(_) if attempt < 3 && web.exited().is_some() => attempt += 1,
                Err(e) => return Err(e),
            }
        };
        let wrap = wrap.map(|(w, _)| w);
        Ok(Stack {
            kind,
            addr,
            web,
            wrap,
            app,
            dir,
        })
    }

    /// Where each tier's CPU is read for `deployment`.
    pub fn tiers(&self, deployment: Deployment) -> Tiers {
        let web = self.web.pid();
        let app = match (deployment, self.kind, &self.wrap) {
            (Deployment::Static, ..) => None,
            (Deployment::FastCgi, ..) => Some(AppTier::Tree(self.app.pid())),
            (Deployment::Cgi, _, Some(wrap)) => Some(AppTier::Tree(wrap.pid())),
            (Deployment::Cgi, ..) => Some(AppTier::ChildrenOf(web)),
        };
        Tiers {
            web,
            // flint serve's CGI programs are its children: its own CPU is the web tier's.
            web_children: self.kind != PeerKind::Flint,
            app,
        }
    }

    /// Whether any process of the stack has exited, and its log if so.
    pub fn exited(&mut self) -> Option<String> {
        let gone = self.web.exited().is_some()
            || self.app.exited().is_some()
            || self.wrap.as_mut().is_some_and(|w| w.exited().is_some());
        gone.then(|| log_tail(&self.dir.path().join("output.log")))
    }
}

fn log_tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Waits (at most [`READY`]) until `ok`, or fails if the group's leader exits first.
fn ready(
    group: &mut Group,
    what: &str,
    log: &Path,
    mut ok: impl FnMut() -> bool,
) -> Result<(), String> {
    let deadline = Instant::now() + READY;
    loop {
        if ok() {
            return Ok(());
        }
        if let Some(status) = group.exited() {
            return Err(format!("{what} exited ({status}): {}", log_tail(log)));
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{what} not ready within {READY:?}: {}",
                log_tail(log)
            ));
        }
        std::thread::sleep(lab_process::POLL);
    }
}

/// The gateway and application tier of a deployment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AppTier {
    /// A process tree apart from the web server (fcgiwrap and its programs, `flint-app
    /// fastcgi`).
    Tree(u32),
    /// The children of the web server (flint serve's CGI programs): its tree less itself.
    ChildrenOf(u32),
}

/// Where one deployment's tiers are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tiers {
    pub web: u32,
    /// The web tier is the server's whole tree (nginx: one process) or itself alone (flint serve,
    /// whose children are the CGI tier).
    pub web_children: bool,
    pub app: Option<AppTier>,
}

impl Tiers {
    /// One reading: the web tier, then the application tier when there is one.
    pub fn read(&self) -> Result<Vec<CpuTime>, ProcError> {
        let web = if self.web_children {
            cpu::tree(self.web)?
        } else {
            cpu::process(self.web)?
        };
        let mut out = vec![web];
        match self.app {
            None => {}
            Some(AppTier::Tree(pid)) => out.push(cpu::tree(pid)?),
            Some(AppTier::ChildrenOf(pid)) => out.push(cpu::tree(pid)?.since(&web)),
        }
        Ok(out)
    }
}
