//! How the application is deployed ([`Deployment`]), which servers run which deployment, and
//! what every server's deployments share ([`Shared`]).

use super::php::Php;
use super::tiers::Source;
use lab_app::deploy;
use lab_peers::PeerKind;
use std::path::PathBuf;

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
    /// Every deployment, in the order the experiment runs and tables them.
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

    /// The name `--deployments` takes and the tables and JSON show.
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

    pub(super) fn runs(&self, deployment: Deployment) -> bool {
        self.deployments.contains(&deployment) && self.unavailable(deployment).is_none()
    }
}
