//! Apache httpd's config: prefork or event, a pool fixed at start, mod_ssl and mod_http2 when
//! asked, its MIME types in a file of the peer's directory.

use std::path::Path;

use super::{ConfigParams, TlsFiles, TYPES};

/// Apache's modules, as Debian installs them.
pub const APACHE_MODULES: &str = "/usr/lib/apache2/modules";

/// Apache processes (prefork) or threads (event) for `max_clients` connections: all of them,
/// plus headroom for connections in lingering close, and never fewer than a small site would run.
pub fn apache_workers(max_clients: usize) -> usize {
    (max_clients + max_clients / 4 + 2).max(8)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::test_params::{with, with_tls};

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
}
