//! How the application is deployed behind nginx, written once for the tests and for `flint lab
//! dynamic`: the nginx config (one process that is the worker, as the lab's peers run it)
//! with the application's gateways mounted beside the static files.
//!
//! - [`FASTCGI_PREFIX`]: `fastcgi_pass` to `flint-app fastcgi` over a unix socket, through an
//!   upstream that keeps connections (`keepalive`, `fastcgi_keep_conn on`), as flint serve's
//!   FastCGI pool does: the two servers are compared on the same terms.
//! - [`CGI_PREFIX`]: nginx runs no CGI; fcgiwrap (FastCGI to a fork and exec per request) is
//!   what nginx's documentation points to, so CGI through nginx is `fastcgi_pass` to fcgiwrap,
//!   which runs `app.cgi` from the CGI directory.
//! - [`PHP_FPM_PREFIX`]: `fastcgi_pass` to php-fpm's pool, kept alive the same way, the script
//!   (`app.php` in the root's `php/`) named in `SCRIPT_FILENAME`.
//! - [`PHP_CGI_PREFIX`]: fcgiwrap again, running `app.php` of the CGI directory, whose
//!   interpreter line starts php-cgi.
//! - [`PROXY_PREFIX`]: `proxy_pass` to `flint-app http` over a unix socket, the path passed
//!   unchanged (the application is mounted under the prefix), through an upstream that keeps
//!   connections (`keepalive`, HTTP/1.1, `Connection` cleared), as flint serve's proxy pool does.
//!
//! The other servers' gateways are written here too, each added to the lab peers' config for
//! that server: Apache's ([`apache_gateways`]), lighttpd's ([`lighttpd_gateways`]), h2o's
//! ([`h2o_config`]) and Caddy's ([`caddy_handles`]), at the same URL prefixes; Apache prefork
//! alone also runs the PHP application inside its own children, mod_php ([`MOD_PHP_PREFIX`]).

use std::fmt::Write as _;
use std::path::Path;

mod apache;
mod caddy;
mod h2o;
mod lighttpd;

pub use apache::{apache_gateways, Apache, ModPhp};
pub use caddy::caddy_handles;
pub use h2o::{h2o_config, h2o_paths};
pub use lighttpd::lighttpd_gateways;

/// The URL prefix of the FastCGI deployment; a request is `/fcgi/app/json`.
pub const FASTCGI_PREFIX: &str = "/fcgi/app";
/// The URL prefix of the CGI deployment; a request is `/cgi-bin/app.cgi/json`.
pub const CGI_PREFIX: &str = "/cgi-bin/app.cgi";
/// The CGI program's name in its directory.
pub const CGI_PROGRAM: &str = "app.cgi";
/// The URL prefix of the PHP application under php-fpm: the script `php/app.php` of the root;
/// a request is `/php/app.php/json`.
pub const PHP_FPM_PREFIX: &str = "/php/app.php";
/// The URL prefix of the PHP application under mod_php in Apache prefork: the same file as
/// php-fpm's (`php/app.php` of the root), aliased, so that a request is `/mod-php/app.php/json`
/// and the script's `PATH_INFO` is the same `/json`.
pub const MOD_PHP_PREFIX: &str = "/mod-php/app.php";
/// The URL prefix of the PHP application as a CGI program (php-cgi); a request is
/// `/cgi-bin/app.php/json`.
pub const PHP_CGI_PREFIX: &str = "/cgi-bin/app.php";

/// The URL prefix of the proxy deployment (`flint-app http --prefix /proxy`); a request is
/// `/proxy/json`.
pub const PROXY_PREFIX: &str = "/proxy";

/// What a server that mounts the application beside its static files is given (lighttpd, h2o,
/// Caddy): each gateway's socket, or the CGI directory, when its deployment runs.
#[derive(Debug, Clone, Copy)]
pub struct Gateways<'a> {
    /// The document root (the FastCGI scripts' files are under it).
    pub root: &'a Path,
    /// `flint-app fastcgi`'s socket.
    pub fastcgi: Option<&'a Path>,
    /// The directory holding [`CGI_PROGRAM`] and the PHP CGI program.
    pub cgi_dir: Option<&'a Path>,
    /// php-fpm's socket (the script is the root's `php/app.php`).
    pub php_fpm: Option<&'a Path>,
    /// `flint-app http`'s unix socket.
    pub proxy: Option<&'a Path>,
}

impl<'a> Gateways<'a> {
    /// No gateway: only the static files of `root`.
    pub fn new(root: &'a Path) -> Gateways<'a> {
        Gateways {
            root,
            fastcgi: None,
            cgi_dir: None,
            php_fpm: None,
            proxy: None,
        }
    }
}

/// What nginx is given.
#[derive(Debug, Clone, Copy)]
pub struct Nginx<'a> {
    /// Its private directory: config, logs, pid and temporary files.
    pub dir: &'a Path,
    /// The static files.
    pub root: &'a Path,
    /// The port it listens on, on 127.0.0.1.
    pub port: u16,
    /// `flint-app fastcgi`'s socket.
    pub fastcgi: Option<&'a Path>,
    /// fcgiwrap's socket and the directory holding [`CGI_PROGRAM`].
    pub cgi: Option<(&'a Path, &'a Path)>,
    /// php-fpm's socket and the script it runs.
    pub php_fpm: Option<(&'a Path, &'a Path)>,
    /// fcgiwrap's socket and the PHP script it runs as a CGI program.
    pub php_cgi: Option<(&'a Path, &'a Path)>,
    /// `flint-app http`'s unix socket.
    pub proxy: Option<&'a Path>,
}

/// The meta-variables the application reads, and those a CGI program is owed (RFC 3875).
const PARAMS: &str = "
            fastcgi_param GATEWAY_INTERFACE CGI/1.1;
            fastcgi_param SERVER_PROTOCOL $server_protocol;
            fastcgi_param REQUEST_METHOD $request_method;
            fastcgi_param REQUEST_URI $request_uri;
            fastcgi_param QUERY_STRING $query_string;
            fastcgi_param SERVER_NAME $server_name;
            fastcgi_param SERVER_PORT $server_port;
            fastcgi_param REMOTE_ADDR $remote_addr;";

/// Idle connections each upstream keeps to the application (nginx's `keepalive`), and flint
/// serve's pool in the lab (`--fastcgi-pool`): one figure, so that the servers are compared with
/// the same connections kept; as many as the dynamic experiment's clients, so that no request
/// of theirs waits for a connect.
pub const UPSTREAM_KEEPALIVE: usize = 8;

/// An upstream block of kept-alive connections to the application on a unix socket.
fn upstream(upstreams: &mut String, name: &str, socket: &Path) {
    let _ = write!(
        upstreams,
        "
    upstream {name} {{
        server unix:{socket};
        keepalive {UPSTREAM_KEEPALIVE};
    }}",
        socket = socket.display()
    );
}

/// The config text (nginx is run with `-p DIR -c DIR/nginx.conf`).
pub fn nginx_config(n: &Nginx) -> String {
    let dir = n.dir.display();
    let mut upstreams = String::new();
    let mut locations = String::new();
    if let Some(socket) = n.fastcgi {
        upstream(&mut upstreams, "flint_app", socket);
        let _ = write!(
            locations,
            "
        location {FASTCGI_PREFIX}/ {{
            fastcgi_pass flint_app;
            fastcgi_keep_conn on;{PARAMS}
        }}"
        );
    }
    if let Some((socket, cgi_dir)) = n.cgi {
        let _ = write!(
            locations,
            "
        location {CGI_PREFIX}/ {{
            fastcgi_pass unix:{socket};
            fastcgi_param SCRIPT_FILENAME {program};
            fastcgi_param SCRIPT_NAME {CGI_PREFIX};{PARAMS}
        }}",
            socket = socket.display(),
            program = cgi_dir.join(CGI_PROGRAM).display(),
        );
    }
    if let Some((socket, script)) = n.php_fpm {
        upstream(&mut upstreams, "php_fpm", socket);
        let _ = write!(
            locations,
            "
        location {PHP_FPM_PREFIX}/ {{
            fastcgi_pass php_fpm;
            fastcgi_keep_conn on;
            fastcgi_param SCRIPT_FILENAME {script};
            fastcgi_param SCRIPT_NAME {PHP_FPM_PREFIX};{PARAMS}
        }}",
            script = script.display(),
        );
    }
    if let Some((socket, script)) = n.php_cgi {
        let _ = write!(
            locations,
            "
        location {PHP_CGI_PREFIX}/ {{
            fastcgi_pass unix:{socket};
            fastcgi_param SCRIPT_FILENAME {script};
            fastcgi_param SCRIPT_NAME {PHP_CGI_PREFIX};{PARAMS}
        }}",
            socket = socket.display(),
            script = script.display(),
        );
    }
    if let Some(socket) = n.proxy {
        upstream(&mut upstreams, "flint_app_http", socket);
        let _ = write!(
            locations,
            "
        location {PROXY_PREFIX}/ {{
            proxy_pass http://flint_app_http;
            proxy_http_version 1.1;
            proxy_set_header Connection \"\";
        }}"
        );
    }
    format!(
        "# flint lab dynamic: nginx, one process that is the worker.
daemon off;
master_process off;
worker_processes 1;
worker_rlimit_nofile 8192;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;

events {{
    worker_connections 4096;
}}

http {{
    types {{ text/plain txt; }}
    default_type application/octet-stream;
    sendfile on;
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;{upstreams}

    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{
        }}{locations}
    }}
}}
",
        port = n.port,
        root = n.root.display(),
    )
}
