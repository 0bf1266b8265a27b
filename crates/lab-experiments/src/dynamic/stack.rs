//! The processes of one server's dynamic deployments, started together and stopped with their
//! groups: the web server (flint serve with `--cgi`, `--fastcgi` and `--proxy`; nginx with
//! `fastcgi_pass` and `proxy_pass`; Apache, lighttpd, h2o and Caddy with theirs, written
//! by `lab_app::deploy` and [`super::dynamic_servers`]), `flint-app fastcgi` behind it,
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

use super::dynamic_cgroup::Cgroup;
use super::dynamic_php::{fpm_args, Php};
use super::dynamic_servers;
use super::dynamic_users::{give_database, give_sockets};
use lab_app::deploy::{self, CGI_PROGRAM};
use lab_app::php;
use lab_app::{DB_DIR, POSTGRES_URL_FILE};
use lab_peers::PeerKind;
use lab_process::cpu::{self, CpuTime};
use lab_process::procfs::{pid_listening_on, process_tree, thread_count, ProcError};
use lab_process::{free_port, Group, StopPolicy};
use std::ffi::{OsStr, OsString};
use std::net::{Ipv4Addr, SocketAddr};
use std::os::unix::fs::PermissionsExt;
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
    /// `flint-app http`, persistent, behind the web server's reverse proxy.
    Proxy,
    /// The PHP application under php-fpm: FastCGI, a pool of persistent children.
    PhpFpm,
    /// The PHP application as a CGI program: php-cgi started per request.
    PhpCgi,
    /// The PHP application inside Apache prefork's children (mod_php): no gateway, no process
    /// of its own, the web and application tiers one.
    ModPhp,
}

impl Deployment {
    pub const ALL: [Deployment; 7] = [
        Deployment::Static,
        Deployment::Cgi,
        Deployment::FastCgi,
        Deployment::Proxy,
        Deployment::PhpFpm,
        Deployment::PhpCgi,
        Deployment::ModPhp,
    ];
    /// Those measured unless `--deployments` says otherwise: flint-app's CGI and FastCGI, with
    /// the baseline (the proxy and PHP ones are asked for by name).
    pub const DEFAULT: [Deployment; 3] = [Deployment::Static, Deployment::Cgi, Deployment::FastCgi];

    pub fn name(self) -> &'static str {
        match self {
            Deployment::Static => "static",
            Deployment::Cgi => "cgi",
            Deployment::FastCgi => "fastcgi",
            Deployment::Proxy => "proxy",
            Deployment::PhpFpm => "php-fpm",
            Deployment::PhpCgi => "php-cgi",
            Deployment::ModPhp => "mod-php",
        }
    }

    /// The URL prefix of its test types (the static file is `/plaintext` itself).
    pub fn prefix(self) -> &'static str {
        match self {
            Deployment::Static => "",
            Deployment::Cgi => deploy::CGI_PREFIX,
            Deployment::FastCgi => deploy::FASTCGI_PREFIX,
            Deployment::Proxy => deploy::PROXY_PREFIX,
            Deployment::PhpFpm => deploy::PHP_FPM_PREFIX,
            Deployment::PhpCgi => deploy::PHP_CGI_PREFIX,
            Deployment::ModPhp => deploy::MOD_PHP_PREFIX,
        }
    }
}

impl std::str::FromStr for Deployment {
    type Err = String;
    fn from_str(text: &str) -> Result<Deployment, String> {
        (Deployment::ALL.into_iter())
            .find(|d| d.name() == text)
            .ok_or_else(|| {
                let known: Vec<&str> = Deployment::ALL.iter().map(|d| d.name()).collect();
                format!("unknown deployment `{text}` (known: {})", known.join(", "))
            })
    }
}

/// Why `kind` cannot run `deployment`, when it cannot: the server has no gateway for it in the
/// lab (flint serve, nginx, Apache event and lighttpd run every deployment but mod_php, which
/// Apache prefork alone runs).
pub fn unsupported(kind: PeerKind, deployment: Deployment) -> Option<String> {
    let (runs, only) = match kind {
        _ if deployment != Deployment::ModPhp => (true, ""),
        PeerKind::ApachePrefork => (true, ""),
        PeerKind::ApacheEvent => (
            false,
            "Debian's mod_php is not thread-safe, and Apache refuses it a threaded MPM: PHP on \
             the event MPM is php-fpm",
        ),
        _ => (false, "mod_php is an Apache module, run by the prefork MPM"),
    };
    if !runs {
        return Some(format!(
            "{kind} has no mod-php deployment in the lab ({only})"
        ));
    }
    let (runs, only) = match kind {
        PeerKind::ApachePrefork => (
            !matches!(deployment, Deployment::Cgi | Deployment::PhpCgi),
            "its mod_cgi forks each program from the child that has the connection, in Apache's \
             own cgroup, where the programs cannot be told from Apache: CGI through Apache is \
             measured on the event MPM, mod_cgid",
        ),
        PeerKind::H2o => (
            !matches!(deployment, Deployment::Cgi | Deployment::PhpCgi),
            "fastcgi.connect and proxy.reverse.url only: h2o runs no CGI program",
        ),
        PeerKind::Caddy => (
            !matches!(deployment, Deployment::Cgi | Deployment::PhpCgi),
            "php_fastcgi and reverse_proxy only: Caddy runs no CGI program without a plugin",
        ),
        _ => (true, ""),
    };
    (!runs).then(|| {
        format!(
            "{kind} has no {} deployment in the lab ({only})",
            deployment.name()
        )
    })
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
    /// Where the database server's CPU is read (PostgreSQL); `None`: the database is in the
    /// application (SQLite).
    pub db_server: Option<Source>,
    /// The deployments asked for.
    pub deployments: Vec<Deployment>,
    /// The PHP programs, or why a PHP deployment cannot run.
    pub php: Php,
}

impl Shared {
    /// Why `deployment` cannot run on any server (a PHP package missing), when it cannot.
    pub fn unavailable(&self, deployment: Deployment) -> Option<&str> {
        match deployment {
            Deployment::PhpFpm => self.php.fpm.as_ref().err().map(String::as_str),
            Deployment::PhpCgi => self.php.cgi.as_ref().err().map(String::as_str),
            Deployment::ModPhp => self.php.mod_php.as_ref().err().map(String::as_str),
            _ => None,
        }
    }

    fn runs(&self, deployment: Deployment) -> bool {
        self.deployments.contains(&deployment) && self.unavailable(deployment).is_none()
    }
}

/// Writes the root (`/plaintext`, the FastCGI script's file, the PHP application for php-fpm)
/// and the CGI directory (the program, the PHP application with php-cgi's interpreter line
/// `php_cgi`, and their database in its own directory, [`DB_DIR`], made by the program
/// itself) under `dir`. With
/// `postgres_url`, the database is that one (its tables made by the program), named beside the
/// CGI program in [`POSTGRES_URL_FILE`]; the database returned is then the URL.
pub fn prepare(
    dir: &Path,
    app_bin: &Path,
    php_cgi: &Path,
    postgres_url: Option<&str>,
) -> Result<(PathBuf, PathBuf, PathBuf), String> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |e: std::io::Error| format!("{what}: {e}")
    };
    // Apache's children read the static file as another user when the lab is root.
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755))
        .map_err(io("the application's directory"))?;
    let root = dir.join("root");
    let cgi_dir = dir.join("cgi");
    std::fs::create_dir_all(root.join("fcgi")).map_err(io("the document root"))?;
    std::fs::create_dir_all(&cgi_dir).map_err(io("the CGI directory"))?;
    std::fs::write(root.join("plaintext"), b"Hello, World!").map_err(io("/plaintext"))?;
    std::fs::write(root.join("fcgi/app"), b"").map_err(io("the FastCGI script"))?;
    std::fs::copy(app_bin, cgi_dir.join(CGI_PROGRAM)).map_err(io("the CGI program"))?;
    std::fs::create_dir_all(root.join(php::FPM_DIR)).map_err(io("the PHP directory"))?;
    let fpm_script = root.join(php::FPM_DIR).join(php::SCRIPT);
    std::fs::write(fpm_script, php::APP).map_err(io("the PHP application"))?;
    let cgi_script = cgi_dir.join(php::SCRIPT);
    std::fs::write(&cgi_script, php::cgi_script(php_cgi)).map_err(io("the PHP CGI program"))?;
    std::fs::set_permissions(&cgi_script, std::fs::Permissions::from_mode(0o755))
        .map_err(io("the PHP CGI program"))?;
    let db = match postgres_url {
        Some(url) => {
            std::fs::write(cgi_dir.join(POSTGRES_URL_FILE), url).map_err(io(POSTGRES_URL_FILE))?;
            PathBuf::from(url)
        }
        None => {
            let db_dir = cgi_dir.join(DB_DIR);
            std::fs::create_dir(&db_dir).map_err(io("the database's directory"))?;
            db_dir.join("world.db")
        }
    };
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
                dynamic_servers::lighttpd_args(dir.path(), port, &gateways)?
            } else if kind == PeerKind::H2o {
                dynamic_servers::h2o_args(dir.path(), port, &gateways)?
            } else if kind == PeerKind::Caddy {
                dynamic_servers::caddy_args(dir.path(), port, &gateways)?
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
                let mut args: Vec<OsString> = vec![
                    "serve".into(),
                    shared.root.clone().into(),
                    "--listen".into(),
                    addr.to_string().into(),
                    "--threads".into(),
                    "1".into(),
                    "--cgi".into(),
                    format!("{FLINT_CGI_MOUNT}={}", shared.cgi_dir.display()).into(),
                    "--fastcgi".into(),
                    format!("{FLINT_FASTCGI_MOUNT}=unix:{}", socket.display()).into(),
                ];
                if fpm.is_some() {
                    args.push("--fastcgi".into());
                    let mount = format!("/{}/=unix:{}", php::FPM_DIR, fpm_socket.display());
                    args.push(mount.into());
                }
                if http.is_some() {
                    args.push("--proxy".into());
                    let mount = format!("{}/=unix:{}", deploy::PROXY_PREFIX, http_socket.display());
                    args.push(mount.into());
                }
                args
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
                pid_listening_on(port) == Some(pid) && settled(pid)
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

/// The clients Apache's pool is sized for: the experiment's, as fcgiwrap's children are.
const APACHE_CLIENTS: usize = super::dynamic::DYNAMIC_CLIENTS;

/// The MPM of an Apache `kind`; `None`: not Apache.
fn apache_mpm(kind: PeerKind) -> Option<lab_peers::Mpm> {
    match kind {
        PeerKind::ApacheEvent => Some(lab_peers::Mpm::Event),
        PeerKind::ApachePrefork => Some(lab_peers::Mpm::Prefork),
        _ => None,
    }
}

/// Writes Apache's config (the lab peers' config for `mpm`, its gateways added) into `dir` and
/// returns its arguments.
fn apache_args(
    dir: &Path,
    root: &Path,
    port: u16,
    user: Option<&str>,
    mpm: lab_peers::Mpm,
    gateways: &deploy::Apache,
) -> Result<Vec<OsString>, String> {
    let params = lab_peers::ConfigParams {
        dir,
        root,
        host: Ipv4Addr::LOCALHOST.into(),
        port,
        digest: false,
        max_clients: APACHE_CLIENTS,
        tls: None,
        http2: false,
    };
    let mut text = lab_peers::apache_config(&params, mpm, user);
    text.push_str(&deploy::apache_gateways(gateways));
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|e| format!("{name}: {e}"))?;
        Ok::<_, String>(path)
    };
    write("mime.types", lab_peers::apache_mime_types())?;
    let conf = write("httpd.conf", text)?;
    Ok(vec![
        "-D".into(),
        "FOREGROUND".into(),
        "-f".into(),
        conf.into(),
    ])
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

/// Where a tier's CPU is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// One process, every thread (the kernel's exact clock).
    Process(u32),
    /// A process tree with its reaped children's times (without a cgroup).
    Tree(u32),
    /// A process tree less its root: flint serve's CGI programs without a cgroup.
    TreeLess(u32),
    /// Everything that ran in a cgroup.
    Cgroup(PathBuf),
    /// A cgroup less one process in it: flint serve's CGI programs.
    CgroupLess(PathBuf, u32),
}

impl Source {
    fn read(&self) -> Result<CpuTime, String> {
        let proc = |e: ProcError| e.to_string();
        let cgroup =
            |dir: &Path| Cgroup::usage_at(dir).map_err(|e| format!("{}: {e}", dir.display()));
        match self {
            Source::Process(pid) => cpu::process(*pid).map_err(proc),
            Source::Tree(pid) => cpu::tree(*pid).map_err(proc),
            Source::TreeLess(pid) => {
                let own = cpu::process(*pid).map_err(proc)?;
                Ok(less(cpu::tree(*pid).map_err(proc)?, own))
            }
            Source::Cgroup(dir) => cgroup(dir),
            Source::CgroupLess(dir, pid) => {
                let own = cpu::process(*pid).map_err(proc)?;
                Ok(less(cgroup(dir)?, own))
            }
        }
    }
}

/// `all` less `part` by their totals: the two are separate estimates of the user/system split
/// (the cgroup's clock, the process's tick ratio), so subtracting field by field, each clamped
/// at zero, could overstate the rest. The total is exact; the split is `all`'s, bounded by it.
fn less(all: CpuTime, part: CpuTime) -> CpuTime {
    let total = all.total().saturating_sub(part.total());
    let sys = all.sys.saturating_sub(part.sys).min(total);
    CpuTime {
        user: total - sys,
        sys,
    }
}

/// Where one deployment's tiers are read: the web server, and the gateway and application
/// when the deployment has them, then the database server's when there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tiers {
    pub web: Source,
    /// The web server's processes run the application too (mod_php): the first tier is both,
    /// named [`WEB_AND_APP`], and there is no `app` tier.
    pub app_in_web: bool,
    pub app: Option<Source>,
    pub db: Option<Source>,
}

/// The name of the one tier of a web server that runs the application in its own processes.
pub const WEB_AND_APP: &str = "web+app";

impl Tiers {
    /// The tiers' names, in the order [`Tiers::read`] reads them.
    pub fn names(&self) -> Vec<&'static str> {
        let mut names = vec![if self.app_in_web { WEB_AND_APP } else { "web" }];
        names.extend(self.app.as_ref().map(|_| "app"));
        names.extend(self.db.as_ref().map(|_| "db"));
        names
    }

    /// One reading: the web tier, then the application tier and the database's when there are.
    pub fn read(&self) -> Result<Vec<CpuTime>, String> {
        let mut out = vec![self.web.read()?];
        for tier in [&self.app, &self.db].into_iter().flatten() {
            out.push(tier.read()?);
        }
        Ok(out)
    }
}
