//! The processes of one server's dynamic deployments, started together and stopped with their
//! groups: the web server (flint serve with `--cgi`, `--fastcgi` and `--proxy`; nginx with
//! `fastcgi_pass` and `proxy_pass`; Apache, lighttpd, h2o and Caddy with theirs, written
//! by `lab_app::deploy` and [`super::servers`]), `flint-app fastcgi` behind it,
//! `flint-app http` and php-fpm when their deployments are asked for, and for nginx fcgiwrap
//! (nginx runs no CGI itself); Apache prefork loads mod_php when its deployment is asked for.
//! Every process is pinned to the server core, as the other experiments' servers are.
//!
//! And how each tier's CPU is read ([`Tiers`]): the web server's processes, and the gateway and
//! application processes, CGI children included. Children come and go within a window, so each
//! process group runs in a cgroup of its own where one can be made ([`Cgroup`]: the kernel's
//! sum over every process that ran in it, exited ones included); without, a reading is the
//! processes alive plus the CPU of the children they have reaped (`/proc/PID/stat` cutime and
//! cstime, `lab_process::cpu::tree`), which misses the programs of a gateway that ignores
//! SIGCHLD (fcgiwrap: the kernel reaps them and their times are discarded).

use super::cgroup::Cgroup;
use super::deployment::{unsupported, Deployment, Shared};
use super::flint_serve::{flint_serve_args, FlintServe};
use super::php::fpm_args;
use super::servers::{self, apache_args, apache_mpm, APACHE_CLIENTS};
use super::tiers::{Source, Tiers};
use super::users::{give_database, give_sockets};
use lab_app::deploy;
use lab_app::php;
use lab_peers::PeerKind;
use lab_process::procfs::{pid_listening_on, process_tree, thread_count};
use lab_process::{free_port, Group, StopPolicy};
use std::ffi::{OsStr, OsString};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One server with its deployments, running. Dropping it stops every group (the web server
/// first), then removes their cgroups and its directory.
#[derive(Debug)]
pub struct Stack {
    pub kind: PeerKind,
    pub addr: SocketAddr,
    web: Group,
    wrap: Option<Group>,
    /// Apache's mod_cgid daemon, when the CGI deployment is asked for.
    cgid: Option<u32>,
    app: Group,
    /// `flint-app http`, when the proxy deployment is asked for.
    http: Option<Group>,
    /// php-fpm, when its deployment is asked for and can run.
    fpm: Option<Group>,
    /// The cgroups of web, wrap (nginx only), app, `flint-app http` and php-fpm, when they could
    /// be made.
    cgroups: Option<Cgroups>,
    /// The database server's tier, shared by every stack ([`Shared::db_server`]).
    db_server: Option<Source>,
    dir: tempfile::TempDir,
}

#[derive(Debug)]
struct Cgroups {
    web: Cgroup,
    wrap: Cgroup,
    app: Cgroup,
    http: Cgroup,
    php: Cgroup,
}

/// From SIGTERM to SIGKILL when a process is stopped.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The longest one readiness connect may take (as lab-peers' own probes): refused at once
/// while nothing listens, this only bounds a listener whose accept queue is full.
const CONNECT_PROBE: Duration = Duration::from_millis(200);
/// How long a process may take to accept connections.
const READY: Duration = Duration::from_secs(20);

/// Starts a deployment's processes: each in its own process group (and cgroup when given),
/// pinned, its output to the stack's log.
struct Launcher<'a> {
    dir: &'a Path,
    log: PathBuf,
    cpu: Option<usize>,
}

impl Launcher<'_> {
    fn start(
        &self,
        program: &Path,
        args: &[&OsStr],
        what: &str,
        cgroup: Option<&Cgroup>,
    ) -> Result<Group, String> {
        self.start_with(program, args, what, cgroup, &[])
    }

    /// As [`Launcher::start`], with `env` added to the process's environment.
    fn start_with(
        &self,
        program: &Path,
        args: &[&OsStr],
        what: &str,
        cgroup: Option<&Cgroup>,
        env: &[(&str, PathBuf)],
    ) -> Result<Group, String> {
        let out = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| format!("{what}'s log: {e}"))?;
        let err = out.try_clone().map_err(|e| format!("{what}'s log: {e}"))?;
        let mut cmd = match cgroup {
            Some(cg) => cg.command(program, args),
            None => {
                let mut c = Command::new(program);
                c.args(args);
                c
            }
        };
        cmd.envs(env.iter().map(|(k, v)| (*k, v)))
            .current_dir(self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        Group::spawn(&mut cmd, self.cpu, StopPolicy::terminate(STOP_GRACE))
            .map_err(|e| format!("starting {what}: {e}"))
    }
}

impl Stack {
    /// Starts `kind` (its program found by `probe`) with its gateways.
    pub fn start(kind: PeerKind, program: &Path, shared: &Shared) -> Result<Stack, String> {
        let dir = tempfile::Builder::new()
            .prefix(&format!("flint-lab-dynamic-{}.", kind.name()))
            .tempdir()
            .map_err(|e| format!("its directory: {e}"))?;
        // Apache's children (and h2o, which serves as `nobody`) run as another user when the
        // lab is root: they reach the application's sockets through this directory.
        let mpm = apache_mpm(kind);
        let apache_user = mpm.and_then(|_| lab_peers::apache_user());
        let h2o_user =
            (kind == PeerKind::H2o && nix::unistd::geteuid().is_root()).then_some("nobody");
        let web_user = apache_user.or(h2o_user);
        if web_user.is_some() {
            std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o711))
                .map_err(|e| format!("its directory: {e}"))?;
        }
        let cgi = shared.runs(Deployment::Cgi) || shared.runs(Deployment::PhpCgi);
        // Apache event's CGI programs (prefork runs none), php-fpm's children (see `fpm_args`)
        // and Apache prefork's children with mod_php run as the web user, and write the
        // database.
        let cgi_as_web_user = apache_user.filter(|_| cgi && kind == PeerKind::ApacheEvent);
        let fpm_as_web_user = web_user.filter(|_| shared.runs(Deployment::PhpFpm));
        let mod_php = (shared.php.mod_php.as_ref().ok())
            .filter(|_| shared.runs(Deployment::ModPhp) && kind == PeerKind::ApachePrefork);
        let mod_php_as_web_user = apache_user.filter(|_| mod_php.is_some());
        if let Some(user) = (cgi_as_web_user.or(fpm_as_web_user)).or(mod_php_as_web_user) {
            give_database(&shared.db, user)?;
        }
        let launcher = Launcher {
            dir: dir.path(),
            log: dir.path().join("output.log"),
            cpu: shared.cpu,
        };
        let log = &launcher.log;
        let cgroups = (|| {
            Some(Cgroups {
                web: Cgroup::create(&format!("{kind}-web")).ok()?,
                wrap: Cgroup::create(&format!("{kind}-gateway")).ok()?,
                app: Cgroup::create(&format!("{kind}-app")).ok()?,
                http: Cgroup::create(&format!("{kind}-app-http")).ok()?,
                php: Cgroup::create(&format!("{kind}-php-fpm")).ok()?,
            })
        })();
        let socket = dir.path().join("app.sock");
        let mut app = launcher.start(
            &shared.app_bin,
            &["fastcgi".as_ref(), socket.as_ref(), shared.db.as_ref()],
            "flint-app fastcgi",
            cgroups.as_ref().map(|c| &c.app),
        )?;
        ready(&mut app, "flint-app fastcgi", log, || {
            UnixStream::connect(&socket).is_ok()
        })?;
        let http_socket = dir.path().join("http.sock");
        let mut http = None;
        if shared.runs(Deployment::Proxy) {
            let listen = format!("unix:{}", http_socket.display());
            let args = [
                "http".as_ref(),
                "--prefix".as_ref(),
                deploy::PROXY_PREFIX.as_ref(),
                listen.as_ref(),
                shared.db.as_os_str(),
            ];
            let mut h = launcher.start(
                &shared.app_bin,
                &args,
                "flint-app http",
                cgroups.as_ref().map(|c| &c.http),
            )?;
            ready(&mut h, "flint-app http", log, || {
                UnixStream::connect(&http_socket).is_ok()
            })?;
            http = Some(h);
        }
        let fpm_socket = dir.path().join("php-fpm.sock");
        let mut fpm = None;
        if let (true, Ok(program)) = (shared.runs(Deployment::PhpFpm), &shared.php.fpm) {
            // Behind Apache, a child for each of its workers: each may keep a connection
            // (`enablereuse=on`, lab_app::deploy::Apache), which a php-fpm child serves alone
            // until it closes, so fewer children would leave a worker waiting for one.
            let children = match mpm {
                Some(_) => lab_peers::apache_workers(APACHE_CLIENTS),
                None => shared.cgi_workers,
            };
            let args = fpm_args(dir.path(), &fpm_socket, children, &shared.db, web_user)?;
            let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
            let mut f =
                launcher.start(program, &args, "php-fpm", cgroups.as_ref().map(|c| &c.php))?;
            ready(&mut f, "php-fpm", log, || {
                UnixStream::connect(&fpm_socket).is_ok()
            })?;
            fpm = Some(f);
        }
        let fpm_script = shared.root.join(php::FPM_DIR).join(php::SCRIPT);
        let php_cgi_script = shared.cgi_dir.join(php::SCRIPT);
        let wrap_socket = dir.path().join("fcgiwrap.sock");
        let mut wrap = None;
        if kind == PeerKind::Nginx {
            let fcgiwrap = lab_process::find_program("fcgiwrap")
                .ok_or("fcgiwrap is not installed (apt-get install -y fcgiwrap)")?;
            let workers = shared.cgi_workers.to_string();
            let listen = format!("unix:{}", wrap_socket.display());
            let args = [
                "-c".as_ref(),
                workers.as_ref(),
                "-s".as_ref(),
                listen.as_ref(),
            ];
            let mut w = launcher.start(
                &fcgiwrap,
                &args,
                "fcgiwrap",
                cgroups.as_ref().map(|c| &c.wrap),
            )?;
            ready(&mut w, "fcgiwrap", log, || {
                UnixStream::connect(&wrap_socket).is_ok()
            })?;
            wrap = Some(w);
        }
        // flint-app's sockets the web user's (php-fpm's is made so by its config, see
        // lab_app::php::Fpm).
        if let Some(user) = web_user {
            let sockets = [Some(&*socket), http.as_ref().map(|_| &*http_socket)];
            give_sockets(&sockets.into_iter().flatten().collect::<Vec<_>>(), user)?;
        }
        // What the servers that mount the application beside the lab peers' config serve.
        let gateways = deploy::Gateways {
            root: &shared.root,
            fastcgi: Some(&socket),
            cgi_dir: cgi.then_some(&*shared.cgi_dir),
            php_fpm: fpm.as_ref().map(|_| &*fpm_socket),
            proxy: http.as_ref().map(|_| &*http_socket),
        };
        let cgid_socket = dir.path().join("cgid.sock");
        // A port found free may be taken by another process before the server binds it: the
        // server then exits, and another port is tried. Ready once the server itself listens.
        let mut attempt = 1;
        let (web, addr, web_pid) = loop {
            let port = free_port().map_err(|e| format!("a free port: {e}"))?;
            let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
            let args: Vec<OsString> = if kind == PeerKind::Lighttpd {
                servers::lighttpd_args(dir.path(), port, &gateways)?
            } else if kind == PeerKind::H2o {
                servers::h2o_args(dir.path(), port, &gateways)?
            } else if kind == PeerKind::Caddy {
                servers::caddy_args(dir.path(), port, &gateways)?
            } else if let Some(mpm) = mpm {
                let apache = deploy::Apache {
                    modules: Path::new(lab_peers::APACHE_MODULES),
                    fastcgi: Some(&socket),
                    proxy: http.as_ref().map(|_| &*http_socket),
                    // mod_cgid with the event MPM only (see `unsupported`).
                    cgi: (gateways.cgi_dir)
                        .filter(|_| mpm == lab_peers::Mpm::Event)
                        .map(|cgi_dir| (cgi_dir, &*cgid_socket)),
                    php_fpm: gateways.php_fpm,
                    mod_php: mod_php.map(|module| deploy::ModPhp {
                        module,
                        script: &fpm_script,
                        db: &shared.db,
                    }),
                };
                apache_args(dir.path(), &shared.root, port, apache_user, mpm, &apache)?
            } else if kind == PeerKind::Nginx {
                let conf = dir.path().join("nginx.conf");
                let text = deploy::nginx_config(&deploy::Nginx {
                    dir: dir.path(),
                    root: &shared.root,
                    port,
                    fastcgi: Some(&socket),
                    cgi: Some((&wrap_socket, &shared.cgi_dir)),
                    php_fpm: fpm.as_ref().map(|_| (&*fpm_socket, &*fpm_script)),
                    php_cgi: (shared.runs(Deployment::PhpCgi))
                        .then_some((&*wrap_socket, &*php_cgi_script)),
                    proxy: http.as_ref().map(|_| &*http_socket),
                });
                std::fs::write(&conf, text).map_err(|e| format!("nginx.conf: {e}"))?;
                let error_log = dir.path().join("error.log");
                vec![
                    "-p".into(),
                    dir.path().into(),
                    "-e".into(),
                    error_log.into(),
                    "-c".into(),
                    conf.into(),
                ]
            } else {
                flint_serve_args(&FlintServe {
                    root: &shared.root,
                    addr,
                    cgi_dir: &shared.cgi_dir,
                    fastcgi: &socket,
                    php_fpm: fpm.as_ref().map(|_| &*fpm_socket),
                    proxy: http.as_ref().map(|_| &*http_socket),
                })
            };
            let args: Vec<&OsStr> = args.iter().map(OsString::as_os_str).collect();
            // Caddy's homes in its directory: nothing of a run left in the user's.
            let env = match kind {
                PeerKind::Caddy => lab_peers::caddy_env(dir.path()).to_vec(),
                _ => Vec::new(),
            };
            let mut web = launcher.start_with(
                program,
                &args,
                kind.name(),
                cgroups.as_ref().map(|c| &c.web),
                &env,
            )?;
            let pid = web.pid();
            // Apache: once its child has every thread of its pool too (event; mod_cgid's
            // daemon, a child too, has one thread), or every child of its pool is forked
            // (prefork), so that nothing starts during a measurement.
            let workers = lab_peers::apache_workers(APACHE_CLIENTS);
            let settled = |pid: u32| {
                let tree = || process_tree(pid).unwrap_or_default();
                match mpm {
                    Some(lab_peers::Mpm::Event) => (tree().into_iter())
                        .skip(1)
                        .any(|child| thread_count(child) > workers as u64),
                    Some(lab_peers::Mpm::Prefork) => tree().len() > workers,
                    None => true,
                }
            };
            match ready(&mut web, kind.name(), log, || {
                // A connect first: refused at once while nothing listens, it spares reading
                // /proc/net/tcp at every poll; bounded, as a full accept queue would hold a
                // bare connect for the kernel's SYN retries (about two minutes).
                std::net::TcpStream::connect_timeout(&addr, CONNECT_PROBE).is_ok()
                    && pid_listening_on(port) == Some(pid)
                    && settled(pid)
            }) {
                Ok(()) => break (web, addr, pid),
                Err(_) if attempt < 3 && web.exited().is_some() => attempt += 1,
                Err(e) => return Err(e),
            }
        };
        // mod_cgid's daemon (the parent's single-threaded child) and the programs it forks are
        // the gateway tier, as fcgiwrap and its programs are behind nginx.
        let cgid = (kind == PeerKind::ApacheEvent && gateways.cgi_dir.is_some())
            .then(|| {
                let tree = process_tree(web_pid).unwrap_or_default();
                tree.into_iter()
                    .skip(1)
                    .find(|&child| thread_count(child) == 1)
            })
            .flatten();
        if let (Some(pid), Some(c)) = (cgid, &cgroups) {
            c.wrap
                .adopt(pid)
                .map_err(|e| format!("moving mod_cgid's daemon to its cgroup: {e}"))?;
        }
        Ok(Stack {
            kind,
            addr,
            web,
            cgid,
            wrap,
            app,
            http,
            fpm,
            cgroups,
            db_server: shared.db_server.clone(),
            dir,
        })
    }

    /// Why `deployment` cannot run on this server, when it cannot ([`unsupported`]).
    pub fn unsupported(&self, deployment: Deployment) -> Option<String> {
        unsupported(self.kind, deployment)
    }

    /// How the tiers' CPU is counted, as a note for the output.
    pub fn accounting_note(&self) -> &'static str {
        if self.cgroups.is_some() {
            "the tiers' CPU from a cgroup per process group (every process that ran, exited CGI \
             programs included)"
        } else {
            "no cgroup could be made (not root, or no cgroup2 mount): the tiers' CPU from /proc, \
             live processes and reaped children; fcgiwrap's programs are missed (it ignores \
             SIGCHLD, so their times are discarded)"
        }
    }

    /// Where each tier's CPU is read for `deployment`.
    pub fn tiers(&self, deployment: Deployment) -> Tiers {
        let web_pid = self.web.pid();
        let cg = self.cgroups.as_ref();
        let path = |c: &Cgroup| c.dir().to_owned();
        // flint serve's and lighttpd's CGI programs are their children, in their process group
        // and cgroup: the web tier is the server's own process alone (every thread), the
        // programs the rest.
        let web = match (self.kind, cg) {
            (PeerKind::Flint | PeerKind::Lighttpd, _) => Source::Process(web_pid),
            (_, Some(c)) => Source::Cgroup(path(&c.web)),
            (_, None) => Source::Tree(web_pid),
        };
        let gateway = (self.wrap.as_ref().map(Group::pid)).or(self.cgid);
        let app = match (deployment, gateway, cg) {
            // mod_php: the application runs in Apache's children, its CPU in the web tier's.
            (Deployment::Static | Deployment::ModPhp, ..) => None,
            (Deployment::FastCgi, _, Some(c)) => Some(Source::Cgroup(path(&c.app))),
            (Deployment::FastCgi, _, None) => Some(Source::Tree(self.app.pid())),
            (Deployment::Proxy, _, Some(c)) => Some(Source::Cgroup(path(&c.http))),
            // No `flint-app http`: the deployment was not asked for, and is never measured.
            (Deployment::Proxy, _, None) => self.http.as_ref().map(|h| Source::Tree(h.pid())),
            (Deployment::PhpFpm, _, Some(c)) => Some(Source::Cgroup(path(&c.php))),
            // No php-fpm: its package is missing, and the deployment is never measured.
            (Deployment::PhpFpm, _, None) => self.fpm.as_ref().map(|f| Source::Tree(f.pid())),
            // php-cgi runs as flint-app's CGI program does: the same tiers.
            (Deployment::Cgi | Deployment::PhpCgi, Some(_), Some(c)) => {
                Some(Source::Cgroup(path(&c.wrap)))
            }
            (Deployment::Cgi | Deployment::PhpCgi, Some(pid), None) => Some(Source::Tree(pid)),
            (Deployment::Cgi | Deployment::PhpCgi, None, Some(c)) => {
                Some(Source::CgroupLess(path(&c.web), web_pid))
            }
            (Deployment::Cgi | Deployment::PhpCgi, None, None) => Some(Source::TreeLess(web_pid)),
        };
        let db = (deployment != Deployment::Static)
            .then(|| self.db_server.clone())
            .flatten();
        let app_in_web = deployment == Deployment::ModPhp;
        Tiers {
            web,
            app_in_web,
            app,
            db,
        }
    }

    /// Whether any process of the stack has exited, and its log if so.
    pub fn exited(&mut self) -> Option<String> {
        let gone = self.web.exited().is_some()
            || self.app.exited().is_some()
            || self.wrap.as_mut().is_some_and(|w| w.exited().is_some())
            || self.http.as_mut().is_some_and(|h| h.exited().is_some())
            || self.fpm.as_mut().is_some_and(|f| f.exited().is_some());
        gone.then(|| log_tail(&self.dir.path().join("output.log")))
    }
}

impl Drop for Stack {
    /// The processes first (the web server, then its gateways), so that the cgroups are empty
    /// when their fields are dropped.
    fn drop(&mut self) {
        self.web.stop();
        if let Some(w) = &mut self.wrap {
            w.stop();
        }
        self.app.stop();
        if let Some(h) = &mut self.http {
            h.stop();
        }
        if let Some(f) = &mut self.fpm {
            f.stop();
        }
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
    let mut backoff = lab_process::Backoff::new();
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
        backoff.pause(deadline);
    }
}
