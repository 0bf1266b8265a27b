//! The configs `flint lab` writes for its peers: minimal, and the same on every machine.
//!
//! Each server gets only what serving static files fast needs, with the settings the papers'
//! measurements assume: no access log, persistent connections that are never closed in the middle
//! of a measurement, sendfile where the server has it, file metadata cached where it can be.
//! Nothing points outside the peer's private directory except the document root and, for Apache,
//! its modules, so a peer never touches the distribution's own configuration, logs or pid files.
//! These functions only build text; [`super::Peer::start`] writes and uses it.

use std::fmt::Write as _;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

/// What every config needs to know.
#[derive(Debug, Clone, Copy)]
pub struct ConfigParams<'a> {
    /// The peer's private directory: config, logs, pid file, locks, temp files.
    pub dir: &'a Path,
    /// The document root, shared by every peer of an experiment.
    pub root: &'a Path,
    /// The address to listen on (loopback, or the server's end of the lab's network path).
    pub host: IpAddr,
    /// The port to listen on.
    pub port: u16,
    /// Content-MD5 on each response (Apache's `ContentDigest On`; flint's `--digest`).
    pub digest: bool,
    /// Connections the experiment keeps open at once: a process-per-connection server (Apache
    /// prefork) needs at least that many processes, or clients starve behind kept-alive ones.
    pub max_clients: usize,
    /// Serve HTTPS only, with this certificate and key.
    pub tls: Option<&'a TlsFiles>,
    /// Speak HTTP/2 as well: h2 by ALPN over TLS, h2c (prior knowledge) over cleartext. nginx
    /// before 1.25 speaks only h2c on a cleartext `http2` listener, so HTTP/1 needs a peer
    /// started without it.
    pub http2: bool,
}

/// A certificate chain and its private key, PEM files the lab made (`flint lab tls`), and what
/// tests that hold a client against nginx's own account need besides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// The leaf's private key (PEM).
    pub key: PathBuf,
    /// nginx's `ssl_protocols` and `ssl_ciphers` in place of the lab's (TLS 1.2 and 1.3,
    /// OpenSSL's default ciphers): `("TLSv1", "DEFAULT@SECLEVEL=0")` makes a server that speaks
    /// only TLS 1.0 (OpenSSL 3 refuses it above security level 0). The other peers ignore it.
    pub nginx_protocols: Option<(String, String)>,
    /// nginx logs every request here, one line each in [`NGINX_TLS_LOG_FORMAT`]; `None`: no
    /// access log, as measurements want. The other peers ignore it.
    pub nginx_access_log: Option<PathBuf>,
    /// Answer HTTP/3 too, on the UDP port of the same number, where the server can
    /// ([`crate::PeerKind::speaks_http3`]); off, the peer is TCP alone, as the peers it is
    /// compared with are.
    pub http3: bool,
}

/// The fields of each line of [`TlsFiles::nginx_access_log`], space-separated: the connection's
/// serial, the request's number on it, `p` if it was pipelined (else `.`), the TLS version and
/// cipher (OpenSSL's names), `r` if the session was resumed (else `.`), the status, and the bytes
/// sent (head and body, before encryption).
pub const NGINX_TLS_LOG_FORMAT: &str = "$connection $connection_requests $pipe $ssl_protocol \
$ssl_cipher $ssl_session_reused $status $bytes_sent";

/// lighttpd's TLS module: Debian ships it apart, in lighttpd-mod-openssl.
pub const LIGHTTPD_OPENSSL: &str = "/usr/lib/lighttpd/mod_openssl.so";

/// The MIME types of the lab's documents (`Content-Type` only; the lab never checks them).
const TYPES: [(&str, &str); 4] = [
    ("html", "text/html"),
    ("gif", "image/gif"),
    ("zip", "application/zip"),
    ("bin", "application/octet-stream"),
];

/// Apache's modules, as Debian installs them.
pub const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// Apache processes (prefork) or threads (event) for `max_clients` connections: all of them,
/// plus headroom for connections in lingering close, and never fewer than a small site would run.
pub fn apache_workers(max_clients: usize) -> usize {
    (max_clients + max_clients / 4 + 2).max(8)
}

/// nginx: `daemon off; master_process off;` makes one process that is the worker, so the pid the
/// lab holds is the one that serves (and the one profiled).
pub fn nginx(p: &ConfigParams) -> String {
    let dir = p.dir.display();
    let mut types = String::new();
    for (ext, mime) in TYPES {
        let _ = write!(types, " {mime} {ext};");
    }
    format!(
        "# flint lab: nginx, one process that is the worker.
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
    types {{{types} }}
    default_type application/octet-stream;
    sendfile on;
    tcp_nopush on;
    open_file_cache max=1000 inactive=60s;
    open_file_cache_valid 60s;
    access_log off;{log_format}
    keepalive_requests 1000000;
    keepalive_timeout 65s;
    client_body_temp_path {dir}/client_body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;

    server {{
        listen {host}:{port}{ssl}{http2};
        root {root};{tls}
        location / {{
        }}
    }}
}}
",
        port = p.port,
        host = p.host,
        http2 = if p.http2 { " http2" } else { "" },
        root = p.root.display(),
        ssl = if p.tls.is_some() { " ssl" } else { "" },
        tls = p.tls.map_or(String::new(), nginx_tls),
        log_format = match p.tls.and_then(|t| t.nginx_access_log.as_ref()) {
            Some(_) => format!("\n    log_format flint_tls '{NGINX_TLS_LOG_FORMAT}';"),
            None => String::new(),
        },
    )
}

/// nginx's TLS: both versions the others serve, a session cache and tickets so that resumed
/// handshakes are possible whichever way the client resumes (one process: the cache needs no
/// sharing, but `shared` is the form every nginx guide uses and costs nothing here).
fn nginx_tls(t: &TlsFiles) -> String {
    let (protocols, ciphers) = match &t.nginx_protocols {
        Some((protocols, ciphers)) => (
            protocols.as_str(),
            format!("\n        ssl_ciphers {ciphers};"),
        ),
        None => ("TLSv1.2 TLSv1.3", String::new()),
    };
    let access_log = t.nginx_access_log.as_ref().map_or(String::new(), |log| {
        format!("\n        access_log {} flint_tls;", log.display())
    });
    format!(
        "
        ssl_certificate {cert};
        ssl_certificate_key {key};
        ssl_protocols {protocols};{ciphers}
        ssl_session_cache shared:flint_lab:10m;
        ssl_session_tickets on;{access_log}",
        cert = t.cert.display(),
        key = t.key.display(),
    )
}

/// Which Apache multi-processing module.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mpm {
    /// A process per connection, forked in advance (Apache 1.3's model, the papers' Apache).
    Prefork,
    /// Threads in one process, keep-alive connections parked in an event loop (the "threaded"
    /// Apache of the threaded-Apache truss measurements, grown up).
    Event,
}

/// The `mime.types` file Apache's mod_mime reads (written into the peer's directory, so the
/// config does not depend on /etc/mime.types being installed).
pub fn apache_mime_types() -> String {
    TYPES
        .iter()
        .map(|(ext, mime)| format!("{mime} {ext}\n"))
        .collect()
}

/// Apache httpd, started with `-D FOREGROUND -f CONF`. The pool is fixed at start (start, spare
/// and limit all equal) so that no process is forked or reaped during a measurement: the process
/// tree profiled at the start of a window is the one that serves it. Apache's own performance
/// advice is followed, or it would pay for what the others do not do: `AllowOverride None` from
/// `/` down (else it looks for .htaccess in every parent directory of the root, per request) and
/// `FollowSymLinks` (else it lstat()s every path component, per request).
pub fn apache(p: &ConfigParams, mpm: Mpm, user: Option<&str>) -> String {
    let dir = p.dir.display();
    let root = p.root.display();
    let workers = apache_workers(p.max_clients);
    let (mpm_module, pool) = match mpm {
        Mpm::Prefork => (
            "mpm_prefork",
            format!(
                "StartServers {workers}
MinSpareServers {workers}
MaxSpareServers {workers}
ServerLimit {workers}
MaxRequestWorkers {workers}
MaxConnectionsPerChild 0
"
            ),
        ),
        // One child process: its threads are the pool; the spare-thread bounds are wide enough
        // that the parent never retires it for being idle.
        Mpm::Event => (
            "mpm_event",
            format!(
                "StartServers 1
ServerLimit 1
ThreadLimit {workers}
ThreadsPerChild {workers}
MaxRequestWorkers {workers}
MinSpareThreads 1
MaxSpareThreads {spare}
MaxConnectionsPerChild 0
",
                spare = workers * 2
            ),
        ),
    };
    // As root, Apache's children switch to an unprivileged user; as anyone else they cannot.
    let user = user.map_or(String::new(), |u| format!("User {u}\nGroup {u}\n"));
    format!(
        "# flint lab: Apache httpd, {mpm_module}.
ServerRoot \"{dir}\"
ServerName {host}
Listen {host}:{port}
PidFile \"{dir}/httpd.pid\"
ErrorLog \"{dir}/error.log\"
LogLevel warn
DefaultRuntimeDir \"{dir}\"
LoadModule {mpm_module}_module {APACHE_MODULES}/mod_{mpm_module}.so
LoadModule authz_core_module {APACHE_MODULES}/mod_authz_core.so
LoadModule mime_module {APACHE_MODULES}/mod_mime.so
LoadModule dir_module {APACHE_MODULES}/mod_dir.so
{user}TypesConfig \"{dir}/mime.types\"
DocumentRoot \"{root}\"
<Directory />
    Options FollowSymLinks
    AllowOverride None
    Require all denied
</Directory>
<Directory \"{root}\">
    Options FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
DirectoryIndex index.html
KeepAlive On
MaxKeepAliveRequests 0
KeepAliveTimeout 60
Timeout 60
EnableSendfile On
EnableMMAP On
ContentDigest {digest}
{pool}{tls}{http2}",
        port = p.port,
        host = p.host,
        // mod_http2 under the event MPM serves streams on its worker threads; the order of
        // `Protocols` is the server's preference.
        http2 = if p.http2 {
            format!(
                "LoadModule http2_module {APACHE_MODULES}/mod_http2.so\nProtocols h2 h2c http/1.1\n"
            )
        } else {
            String::new()
        },
        digest = if p.digest { "On" } else { "Off" },
        tls = p.tls.map_or(String::new(), |t| apache_tls(p.dir, t)),
    )
}

/// mod_ssl with its session cache in shared memory (mod_socache_shmcb: without a cache Apache
/// resumes by ticket only) in the peer's directory; the keys are read by the parent before it
/// drops privileges, so the children never need to read them.
fn apache_tls(dir: &Path, t: &TlsFiles) -> String {
    format!(
        "LoadModule socache_shmcb_module {APACHE_MODULES}/mod_socache_shmcb.so
LoadModule ssl_module {APACHE_MODULES}/mod_ssl.so
SSLSessionCache \"shmcb:{dir}/ssl_scache(512000)\"
SSLProtocol -all +TLSv1.2 +TLSv1.3
SSLSessionTickets On
SSLEngine On
SSLCertificateFile \"{cert}\"
SSLCertificateKeyFile \"{key}\"
",
        dir = dir.display(),
        cert = t.cert.display(),
        key = t.key.display(),
    )
}

/// lighttpd, started with `-D -f CONF`: one process (no `server.max-worker`), sendfile by default.
pub fn lighttpd(p: &ConfigParams) -> String {
    let types: Vec<String> = TYPES
        .iter()
        .map(|(ext, mime)| format!("\".{ext}\" => \"{mime}\""))
        .collect();
    format!(
        "# flint lab: lighttpd, one process.
server.document-root = \"{root}\"
server.bind = \"{host}\"
server.port = {port}
server.errorlog = \"{dir}/error.log\"
server.pid-file = \"{dir}/lighttpd.pid\"
server.max-keep-alive-requests = 65535
server.max-keep-alive-idle = 60
server.max-connections = 4096
server.max-fds = 8192
index-file.names = (\"index.html\")
mimetype.assign = ({types}, \"\" => \"application/octet-stream\")
{tls}{http2}",
        root = p.root.display(),
        dir = p.dir.display(),
        host = p.host,
        port = p.port,
        http2 = if p.http2 {
            "server.feature-flags += (\"server.h2proto\" => \"enable\", \"server.h2c\" => \"enable\")\n"
        } else {
            ""
        },
        types = types.join(", "),
        tls = p.tls.map_or(String::new(), lighttpd_tls),
    )
}

/// mod_openssl on the one socket (lighttpd resumes by ticket and by its cache by default).
fn lighttpd_tls(t: &TlsFiles) -> String {
    format!(
        "server.modules += (\"mod_openssl\")
ssl.engine = \"enable\"
ssl.pemfile = \"{cert}\"
ssl.privkey = \"{key}\"
ssl.openssl.ssl-conf-cmd = (\"MinProtocol\" => \"TLSv1.2\")
",
        cert = t.cert.display(),
        key = t.key.display(),
    )
}

/// h2o, started with `-c CONF`: one thread (`num-threads: 1`), like the other single-process
/// peers. It serves HTTP/1.1 and HTTP/2 on the same listener whatever `http2` says (h2 by ALPN,
/// h2c by upgrade or prior knowledge): that is how Debian's h2o comes. As root it serves as
/// `nobody` (its own default): the error log is opened before it drops privileges, and it has
/// no pid file, which it would open after (the lab holds its pid).
pub fn h2o(p: &ConfigParams) -> String {
    let dir = p.dir.display();
    let ssl = p.tls.map_or(String::new(), |t| {
        format!(
            "
  ssl:
    certificate-file: \"{cert}\"
    key-file: \"{key}\"
    minimum-version: TLSv1.2",
            cert = t.cert.display(),
            key = t.key.display(),
        )
    });
    let mut types = String::new();
    for (ext, mime) in TYPES {
        let _ = write!(types, "\n  {mime}: .{ext}");
    }
    format!(
        "# flint lab: h2o, one thread.
num-threads: 1
error-log: \"{dir}/error.log\"
max-connections: 4096
file.mime.settypes:{types}
listen:
  host: {host}
  port: {port}{ssl}
hosts:
  default:
    paths:
      /:
        file.dir: \"{root}\"
",
        host = p.host,
        port = p.port,
        root = p.root.display(),
    )
}

/// Caddy, started with `caddy run --config CONF --adapter caddyfile` and [`caddy_env`]: plain
/// HTTP on the lab's address (`auto_https off`: no certificate is fetched or made, no redirect
/// listener), no admin endpoint, its storage in the peer's directory; the files served by
/// `file_server`, the site's last directive (the dynamic experiment's gateways go before it).
/// Over TLS, the lab's certificate on a site of any host name bound to the lab's address (the
/// client asks for the certificate's name, which a site named by the address would not match),
/// HTTP/1.1 alone or, with [`TlsFiles::http3`], HTTP/3 on the same port's UDP too: HTTP/2 is
/// off, as [`crate::PeerKind::speaks_http2`] says of Caddy here.
pub fn caddy(p: &ConfigParams) -> String {
    let (protocols, site, tls) = match p.tls {
        None => (
            String::new(),
            format!("http://{}:{}", p.host, p.port),
            String::new(),
        ),
        Some(t) => (
            format!(
                "\tservers {{\n\t\tprotocols h1{}\n\t}}\n",
                if t.http3 { " h3" } else { "" }
            ),
            format!("https://:{}", p.port),
            format!(
                "\tbind {}\n\ttls \"{}\" \"{}\"\n",
                p.host,
                t.cert.display(),
                t.key.display()
            ),
        ),
    };
    format!(
        "# flint lab: Caddy.
{{
\tadmin off
\tauto_https off
\tstorage file_system \"{dir}/data\"
{protocols}}}

{site} {{
{tls}\troot * \"{root}\"
{CADDY_FILE_SERVER}}}
",
        dir = p.dir.display(),
        root = p.root.display(),
    )
}

/// The line of [`caddy`]'s site that serves the files.
pub const CADDY_FILE_SERVER: &str = "\tfile_server\n";

/// Caddy's environment: its config and data homes in the peer's directory (`caddy run` saves
/// the config it ran under its config home; nothing of a run is left in the user's).
pub fn caddy_env(dir: &Path) -> [(&'static str, PathBuf); 2] {
    [
        ("XDG_CONFIG_HOME", dir.join("config")),
        ("XDG_DATA_HOME", dir.join("data")),
    ]
}

/// flint serve's arguments (after the program): one thread, like the other single-process peers.
pub fn flint_args(p: &ConfigParams) -> Vec<String> {
    let mut args = vec![
        "serve".to_owned(),
        p.root.display().to_string(),
        "--listen".to_owned(),
        std::net::SocketAddr::new(p.host, p.port).to_string(),
        "--threads".to_owned(),
        "1".to_owned(),
    ];
    if p.digest {
        args.push("--digest".to_owned());
    }
    if let Some(t) = p.tls {
        args.push("--tls-cert".to_owned());
        args.push(t.cert.display().to_string());
        args.push("--tls-key".to_owned());
        args.push(t.key.display().to_string());
        // TCP alone unless HTTP/3 is asked, as the peers it is compared with are configured: no
        // UDP sockets, no Alt-Svc line in every response (flint serve speaks HTTP/3 by default
        // with TLS). Asked, it is required: a UDP port that cannot be bound stops the start
        // with one line, where the default would serve TCP alone with a warning and leave
        // every QUIC connect of the h3 rows to time out.
        args.push(if t.http3 { "--http3" } else { "--no-http3" }.to_owned());
    }
    args
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn params(digest: bool, max_clients: usize) -> (PathBuf, PathBuf, usize, bool) {
        (
            PathBuf::from("/tmp/peer"),
            PathBuf::from("/srv/docs"),
            max_clients,
            digest,
        )
    }

    fn with<T>(digest: bool, max_clients: usize, f: impl FnOnce(&ConfigParams) -> T) -> T {
        let (dir, root, max_clients, digest) = params(digest, max_clients);
        f(&ConfigParams {
            dir: &dir,
            root: &root,
            host: IpAddr::from([127, 0, 0, 1]),
            port: 18123,
            digest,
            max_clients,
            tls: None,
            http2: false,
        })
    }

    fn with_tls<T>(f: impl FnOnce(&ConfigParams) -> T) -> T {
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            ..TlsFiles::default()
        };
        with(false, 40, |p| {
            f(&ConfigParams {
                tls: Some(&tls),
                ..*p
            })
        })
    }

    #[test]
    fn plain_configs_say_nothing_of_tls() {
        assert!(!with(false, 40, nginx).contains("ssl"));
        assert!(!with(false, 40, |p| apache(p, Mpm::Event, None)).contains("SSL"));
        assert!(!with(false, 40, lighttpd).contains("ssl."));
        assert!(!with(false, 40, flint_args)
            .iter()
            .any(|a| a.starts_with("--tls")));
    }

    #[test]
    fn nginx_tls_listens_with_ssl_the_lab_certificate_and_a_session_cache() {
        let text = with_tls(nginx);
        for line in [
            "listen 127.0.0.1:18123 ssl;",
            "ssl_certificate /tmp/peer/cert.pem;",
            "ssl_certificate_key /tmp/peer/key.pem;",
            "ssl_protocols TLSv1.2 TLSv1.3;",
            "ssl_session_cache shared:",
            "ssl_session_tickets on;",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        assert!(!text.contains("ssl_ciphers"), "OpenSSL's defaults:\n{text}");
        assert!(!text.contains("log_format"), "no access log:\n{text}");
    }

    #[test]
    fn nginx_tls_takes_a_protocol_list_and_an_access_log_of_tls_parameters() {
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            nginx_protocols: Some(("TLSv1".into(), "DEFAULT@SECLEVEL=0".into())),
            nginx_access_log: Some(PathBuf::from("/tmp/peer/access.log")),
            http3: false,
        };
        let text = with(false, 4, |p| {
            nginx(&ConfigParams {
                tls: Some(&tls),
                ..*p
            })
        });
        for line in [
            "ssl_protocols TLSv1;",
            "ssl_ciphers DEFAULT@SECLEVEL=0;",
            "access_log /tmp/peer/access.log flint_tls;",
            "log_format flint_tls '$connection $connection_requests $pipe $ssl_protocol \
             $ssl_cipher $ssl_session_reused $status $bytes_sent';",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        // The format is declared in `http`, before the server that uses it.
        assert!(text.find("log_format") < text.find("access_log /tmp"));
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn apache_tls_loads_mod_ssl_and_its_cache_and_enables_the_engine() {
        let text = with_tls(|p| apache(p, Mpm::Event, None));
        for line in [
            "LoadModule ssl_module /usr/lib/apache2/modules/mod_ssl.so\n",
            "LoadModule socache_shmcb_module /usr/lib/apache2/modules/mod_socache_shmcb.so\n",
            "SSLSessionCache \"shmcb:/tmp/peer/ssl_scache(512000)\"\n",
            "SSLEngine On\n",
            "SSLCertificateFile \"/tmp/peer/cert.pem\"\n",
            "SSLCertificateKeyFile \"/tmp/peer/key.pem\"\n",
            "SSLProtocol -all +TLSv1.2 +TLSv1.3\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        // The module is loaded before it is configured.
        assert!(text.find("LoadModule ssl_module") < text.find("SSLEngine"));
    }

    #[test]
    fn lighttpd_tls_loads_mod_openssl_with_the_pem_files() {
        let text = with_tls(lighttpd);
        for line in [
            "server.modules += (\"mod_openssl\")\n",
            "ssl.engine = \"enable\"\n",
            "ssl.pemfile = \"/tmp/peer/cert.pem\"\n",
            "ssl.privkey = \"/tmp/peer/key.pem\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn flint_tls_passes_the_certificate_and_key_and_serves_tcp_alone() {
        let args = with_tls(flint_args);
        let tail: Vec<&str> = args[args.len() - 5..].iter().map(String::as_str).collect();
        assert_eq!(
            tail,
            [
                "--tls-cert",
                "/tmp/peer/cert.pem",
                "--tls-key",
                "/tmp/peer/key.pem",
                "--no-http3"
            ]
        );
        // With HTTP/3 asked, the same arguments but `--http3` for `--no-http3`: QUIC on the
        // port's UDP, required.
        let tls = TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            http3: true,
            ..TlsFiles::default()
        };
        let with_h3 = with(false, 4, |p| {
            flint_args(&ConfigParams {
                tls: Some(&tls),
                ..*p
            })
        });
        assert_eq!(with_h3[..args.len() - 1], args[..args.len() - 1]);
        assert_eq!(with_h3.last().map(String::as_str), Some("--http3"));
        assert_eq!(with_h3.len(), args.len());
    }

    #[test]
    fn nginx_is_one_process_that_serves_from_the_root_on_loopback() {
        let text = with(false, 40, nginx);
        for line in [
            "daemon off;",
            "master_process off;",
            "worker_processes 1;",
            "sendfile on;",
            "tcp_nopush on;",
            "open_file_cache max=1000",
            "access_log off;",
            "keepalive_requests 1000000;",
            "listen 127.0.0.1:18123;",
            "root /srv/docs;",
            "pid /tmp/peer/nginx.pid;",
            "error_log /tmp/peer/error.log",
            "text/html html;",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
    }

    #[test]
    fn apache_prefork_pool_is_fixed_large_enough_and_looks_for_no_htaccess() {
        let text = with(false, 40, |p| apache(p, Mpm::Prefork, Some("www-data")));
        let workers = apache_workers(40);
        assert!(workers >= 40);
        for line in [
            "LoadModule mpm_prefork_module /usr/lib/apache2/modules/mod_mpm_prefork.so".to_owned(),
            format!("StartServers {workers}\n"),
            format!("MinSpareServers {workers}\n"),
            format!("MaxSpareServers {workers}\n"),
            format!("MaxRequestWorkers {workers}\n"),
            "Listen 127.0.0.1:18123\n".to_owned(),
            "DocumentRoot \"/srv/docs\"".to_owned(),
            "PidFile \"/tmp/peer/httpd.pid\"".to_owned(),
            "KeepAlive On\n".to_owned(),
            "MaxKeepAliveRequests 0\n".to_owned(),
            "EnableSendfile On\n".to_owned(),
            "ContentDigest Off\n".to_owned(),
            "User www-data\n".to_owned(),
            "<Directory />\n    Options FollowSymLinks\n    AllowOverride None\n".to_owned(),
            "<Directory \"/srv/docs\">\n    Options FollowSymLinks\n    AllowOverride None\n"
                .to_owned(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("mpm_event"));
    }

    #[test]
    fn apache_event_is_one_child_with_a_thread_per_client_and_digest_when_asked() {
        let text = with(true, 5, |p| apache(p, Mpm::Event, None));
        let workers = apache_workers(5);
        for line in [
            "LoadModule mpm_event_module /usr/lib/apache2/modules/mod_mpm_event.so".to_owned(),
            "ServerLimit 1\n".to_owned(),
            format!("ThreadsPerChild {workers}\n"),
            "ContentDigest On\n".to_owned(),
        ] {
            assert!(text.contains(&line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("User "), "no User line when not root");
        assert!(apache_mime_types().contains("text/html html\n"));
    }

    #[test]
    fn lighttpd_binds_loopback_and_keeps_connections() {
        let text = with(false, 40, lighttpd);
        for line in [
            "server.document-root = \"/srv/docs\"",
            "server.bind = \"127.0.0.1\"",
            "server.port = 18123",
            "server.max-keep-alive-requests = 65535",
            "\".gif\" => \"image/gif\"",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn h2o_is_one_thread_on_the_root_and_takes_the_certificate_over_tls() {
        let text = with(false, 4, h2o);
        for line in [
            "num-threads: 1\n",
            "error-log: \"/tmp/peer/error.log\"\n",
            "  host: 127.0.0.1\n  port: 18123\n",
            "file.dir: \"/srv/docs\"\n",
            "  image/gif: .gif\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("ssl:"), "{text}");
        let text = with_tls(h2o);
        for line in [
            "  port: 18123\n  ssl:\n",
            "    certificate-file: \"/tmp/peer/cert.pem\"\n",
            "    key-file: \"/tmp/peer/key.pem\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }

    #[test]
    fn http2_turns_on_each_servers_own_switch_and_only_when_asked() {
        fn h2<'a>(p: &ConfigParams<'a>) -> ConfigParams<'a> {
            ConfigParams { http2: true, ..*p }
        }
        assert!(with(false, 4, |p| nginx(&h2(p))).contains("listen 127.0.0.1:18123 http2;"));
        assert!(with_tls(|p| nginx(&h2(p))).contains("listen 127.0.0.1:18123 ssl http2;"));
        let apache_h2 = with(false, 4, |p| apache(&h2(p), Mpm::Event, None));
        assert!(apache_h2.contains("mod_http2.so\nProtocols h2 h2c http/1.1\n"));
        assert!(with(false, 4, |p| lighttpd(&h2(p))).contains("\"server.h2c\" => \"enable\""));
        assert!(!with(false, 4, nginx).contains("http2"));
        assert!(!with(false, 4, |p| apache(p, Mpm::Event, None)).contains("http2"));
        assert!(!with(false, 4, lighttpd).contains("h2"));
    }

    #[test]
    fn a_peer_on_the_network_path_listens_on_its_address() {
        fn on<'a>(p: &ConfigParams<'a>) -> ConfigParams<'a> {
            ConfigParams {
                host: IpAddr::from([10, 77, 0, 2]),
                ..*p
            }
        }
        assert!(with(false, 4, |p| nginx(&on(p))).contains("listen 10.77.0.2:18123;"));
        assert!(with(false, 4, |p| apache(&on(p), Mpm::Event, None))
            .contains("Listen 10.77.0.2:18123\n"));
        assert!(with(false, 4, |p| lighttpd(&on(p))).contains("server.bind = \"10.77.0.2\""));
        assert!(with(false, 4, |p| h2o(&on(p))).contains("host: 10.77.0.2\n"));
        assert!(with(false, 4, |p| flint_args(&on(p))).contains(&"10.77.0.2:18123".to_owned()));
    }

    #[test]
    fn caddy_serves_plain_http_from_the_root_without_admin_or_certificates() {
        let text = with(false, 4, caddy);
        for line in [
            "\tadmin off\n",
            "\tauto_https off\n",
            "\tstorage file_system \"/tmp/peer/data\"\n",
            "http://127.0.0.1:18123 {\n",
            "\troot * \"/srv/docs\"\n",
            "\tfile_server\n}\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert_eq!(text.matches('{').count(), text.matches('}').count());
        for (_, home) in caddy_env(Path::new("/tmp/peer")) {
            assert!(home.starts_with("/tmp/peer"), "{}", home.display());
        }
    }

    #[test]
    fn caddy_over_tls_serves_any_host_name_on_the_address_and_http3_only_when_asked() {
        let files = |http3| TlsFiles {
            cert: PathBuf::from("/tmp/peer/cert.pem"),
            key: PathBuf::from("/tmp/peer/key.pem"),
            http3,
            ..TlsFiles::default()
        };
        let text = |http3| {
            let tls = files(http3);
            with(false, 4, |p| {
                caddy(&ConfigParams {
                    tls: Some(&tls),
                    ..*p
                })
            })
        };
        let (tcp, quic) = (text(false), text(true));
        for t in [&tcp, &quic] {
            for line in [
                "\tauto_https off\n",
                "https://:18123 {\n\tbind 127.0.0.1\n",
                "\ttls \"/tmp/peer/cert.pem\" \"/tmp/peer/key.pem\"\n",
                "\tfile_server\n}\n",
            ] {
                assert!(t.contains(line), "missing {line:?} in:\n{t}");
            }
            assert_eq!(t.matches('{').count(), t.matches('}').count(), "{t}");
            assert!(!t.contains("h2"), "HTTP/2 stays off:\n{t}");
        }
        assert!(tcp.contains("\t\tprotocols h1\n"), "{tcp}");
        assert!(quic.contains("\t\tprotocols h1 h3\n"), "{quic}");
    }

    #[test]
    fn flint_serve_runs_one_thread_and_adds_digest_only_when_asked() {
        let plain = with(false, 40, flint_args);
        assert_eq!(
            plain,
            [
                "serve",
                "/srv/docs",
                "--listen",
                "127.0.0.1:18123",
                "--threads",
                "1"
            ]
        );
        let digest = with(true, 40, flint_args);
        assert_eq!(digest.last().map(String::as_str), Some("--digest"));
    }
}
