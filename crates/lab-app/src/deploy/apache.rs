//! The application's gateways in Apache, appended to the lab peers' config for it (the static
//! files, the MPM's fixed pool, the same user):
//!
//! - [`FASTCGI_PREFIX`]: mod_proxy_fcgi to `flint-app fastcgi` over its unix socket, with
//!   `enablereuse=on`, without which mod_proxy_fcgi opens a connection per request (and asks the
//!   responder to close it): with it, each worker keeps its connection (`FCGI_KEEP_CONN`), as
//!   nginx's upstream and flint serve's pool do.
//! - [`PHP_FPM_PREFIX`]: mod_proxy_fcgi to php-fpm the way Apache's documentation deploys it, a
//!   handler (`SetHandler "proxy:unix:...|fcgi://..."`) on the script's file under the document
//!   root, so that `SCRIPT_FILENAME` is the file and the rest `PATH_INFO`; its worker reuses
//!   connections too (`ProxySet enablereuse=on`), with either MPM: a prefork child keeps at most
//!   one (mod_proxy's pool is one connection in a process without threads), an event child one
//!   per thread in use. A php-fpm child serves a kept connection until it closes, so its pool
//!   must have a child for every Apache worker (the caller sizes it so).
//! - [`MOD_PHP_PREFIX`]: mod_php (`libphpX.Y.so`, found by the caller), the prefork MPM only
//!   (Debian's PHP is built without thread safety, and Apache refuses to load it with a threaded
//!   MPM): the php-fpm deployment's script aliased (`Alias`, so that the rest of the path is
//!   `PATH_INFO`), `SetHandler application/x-httpd-php` on it, and the database given as
//!   `FLINT_APP_DB` (`SetEnv`: mod_php's `getenv()` reads the request's environment).
//! - [`PROXY_PREFIX`]: mod_proxy_http to `flint-app http` over its unix socket, the path passed
//!   unchanged; mod_proxy_http keeps its backend connections by default (HTTP/1.1).
//! - [`CGI_PREFIX`] and [`super::PHP_CGI_PREFIX`]: mod_cgid, the event MPM's CGI (a daemon the
//!   parent forks, which forks and execs each program, so that no threaded worker forks), the
//!   CGI directory a `ScriptAlias` (`app.php` run by its interpreter line).

use super::{CGI_PREFIX, FASTCGI_PREFIX, MOD_PHP_PREFIX, PHP_FPM_PREFIX, PROXY_PREFIX};
use std::fmt::Write as _;
use std::path::Path;

/// What Apache is given beside the lab's own config for it (the static files, the MPM's pool):
/// the application's sockets. Apache's modules directory is the caller's.
#[derive(Debug, Clone, Copy)]
pub struct Apache<'a> {
    /// Where Apache's modules are (`/usr/lib/apache2/modules` on Debian).
    pub modules: &'a Path,
    /// `flint-app fastcgi`'s socket.
    pub fastcgi: Option<&'a Path>,
    /// `flint-app http`'s unix socket.
    pub proxy: Option<&'a Path>,
    /// The directory holding the CGI programs, and the socket mod_cgid's daemon listens on.
    pub cgi: Option<(&'a Path, &'a Path)>,
    /// php-fpm's socket.
    pub php_fpm: Option<&'a Path>,
    /// mod_php, the prefork MPM only.
    pub mod_php: Option<ModPhp<'a>>,
}

/// What mod_php is given.
#[derive(Debug, Clone, Copy)]
pub struct ModPhp<'a> {
    /// The module's file (`libphp8.2.so`).
    pub module: &'a Path,
    /// The application's script (php-fpm's, `php/app.php` of the root).
    pub script: &'a Path,
    /// The database (a SQLite file or a `postgres://` URL), as `FLINT_APP_DB`.
    pub db: &'a Path,
}

impl ModPhp<'_> {
    /// The module's name in `LoadModule`: `php_module` from PHP 8 on, `php7_module` before.
    fn name(&self) -> &'static str {
        let file = self.module.file_name().and_then(|n| n.to_str());
        match file {
            Some(n) if n.starts_with("libphp7") => "php7_module",
            Some(n) if n.starts_with("libphp5") => "php5_module",
            _ => "php_module",
        }
    }
}

/// The lines that mount `a`'s gateways in Apache, appended to its config.
pub fn apache_gateways(a: &Apache) -> String {
    let modules = a.modules.display();
    let mut text = String::new();
    if a.fastcgi.is_some() || a.proxy.is_some() || a.php_fpm.is_some() {
        let _ = writeln!(text, "LoadModule proxy_module {modules}/mod_proxy.so");
    }
    if a.fastcgi.is_some() || a.php_fpm.is_some() {
        let _ = writeln!(
            text,
            "LoadModule proxy_fcgi_module {modules}/mod_proxy_fcgi.so"
        );
    }
    if let Some(socket) = a.fastcgi {
        let _ = writeln!(
            text,
            "ProxyPass \"{FASTCGI_PREFIX}/\" \"unix:{socket}|fcgi://localhost{FASTCGI_PREFIX}/\" \
             enablereuse=on",
            socket = socket.display()
        );
    }
    if let Some(socket) = a.php_fpm {
        let worker = format!("unix:{}|fcgi://php-fpm", socket.display());
        let _ = write!(
            text,
            "<Proxy \"{worker}\">
    ProxySet enablereuse=on
</Proxy>
<Location \"{PHP_FPM_PREFIX}\">
    SetHandler \"proxy:{worker}\"
</Location>
"
        );
    }
    if let Some(socket) = a.proxy {
        let _ = write!(
            text,
            "LoadModule proxy_http_module {modules}/mod_proxy_http.so
ProxyPass \"{PROXY_PREFIX}/\" \"unix:{socket}|http://localhost{PROXY_PREFIX}/\"
",
            socket = socket.display()
        );
    }
    if a.cgi.is_some() || a.mod_php.is_some() {
        let _ = writeln!(text, "LoadModule alias_module {modules}/mod_alias.so");
    }
    if let Some(php) = a.mod_php {
        let _ = write!(
            text,
            "LoadModule {name} {module}
LoadModule env_module {modules}/mod_env.so
Alias \"{MOD_PHP_PREFIX}\" \"{script}\"
<Location \"{MOD_PHP_PREFIX}\">
    SetHandler application/x-httpd-php
    SetEnv FLINT_APP_DB \"{db}\"
</Location>
",
            name = php.name(),
            module = php.module.display(),
            script = php.script.display(),
            db = php.db.display(),
        );
    }
    if let Some((cgi_dir, script_sock)) = a.cgi {
        let mount = CGI_PREFIX
            .rsplit_once('/')
            .map_or(CGI_PREFIX, |(dir, _)| dir);
        let _ = write!(
            text,
            "LoadModule cgid_module {modules}/mod_cgid.so
ScriptSock \"{sock}\"
ScriptAlias \"{mount}/\" \"{cgi_dir}/\"
<Directory \"{cgi_dir}\">
    Options FollowSymLinks
    AllowOverride None
    Require all granted
</Directory>
",
            sock = script_sock.display(),
            cgi_dir = cgi_dir.display(),
        );
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none<'a>() -> Apache<'a> {
        Apache {
            modules: Path::new("/m"),
            fastcgi: None,
            proxy: None,
            cgi: None,
            php_fpm: None,
            mod_php: None,
        }
    }

    #[test]
    fn php_fpm_is_a_handler_on_the_script_with_its_worker_reusing_connections() {
        let text = apache_gateways(&Apache {
            php_fpm: Some(Path::new("/d/php-fpm.sock")),
            ..none()
        });
        for line in [
            "LoadModule proxy_module /m/mod_proxy.so\n",
            "LoadModule proxy_fcgi_module /m/mod_proxy_fcgi.so\n",
            "<Proxy \"unix:/d/php-fpm.sock|fcgi://php-fpm\">\n    ProxySet enablereuse=on\n",
            "<Location \"/php/app.php\">\n    SetHandler \"proxy:unix:/d/php-fpm.sock|fcgi://php-fpm\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("ProxyPass"), "{text}");
        assert_eq!(apache_gateways(&none()), "");
    }

    #[test]
    fn mod_php_handles_php_fpms_script_under_its_own_prefix_with_the_database() {
        let text = apache_gateways(&Apache {
            mod_php: Some(ModPhp {
                module: Path::new("/m/libphp8.2.so"),
                script: Path::new("/r/php/app.php"),
                db: Path::new("/a/db/world.db"),
            }),
            ..none()
        });
        for line in [
            "LoadModule php_module /m/libphp8.2.so\n",
            "LoadModule env_module /m/mod_env.so\n",
            "LoadModule alias_module /m/mod_alias.so\n",
            "Alias \"/mod-php/app.php\" \"/r/php/app.php\"\n",
            "<Location \"/mod-php/app.php\">\n    SetHandler application/x-httpd-php\n",
            "    SetEnv FLINT_APP_DB \"/a/db/world.db\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("proxy"), "{text}");
        let php7 = ModPhp {
            module: Path::new("/m/libphp7.4.so"),
            script: Path::new("/s"),
            db: Path::new("/d"),
        };
        assert_eq!(php7.name(), "php7_module");
        // With CGI too, mod_alias is loaded once.
        let both = apache_gateways(&Apache {
            mod_php: Some(php7),
            cgi: Some((Path::new("/a/cgi"), Path::new("/d/cgid.sock"))),
            ..none()
        });
        assert_eq!(both.matches("alias_module").count(), 1, "{both}");
    }

    #[test]
    fn cgi_is_mod_cgid_with_its_socket_and_the_directory_a_script_alias() {
        let text = apache_gateways(&Apache {
            cgi: Some((Path::new("/a/cgi"), Path::new("/d/cgid.sock"))),
            ..none()
        });
        for line in [
            "LoadModule cgid_module /m/mod_cgid.so\nScriptSock \"/d/cgid.sock\"\n",
            "ScriptAlias \"/cgi-bin/\" \"/a/cgi/\"\n",
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
        assert!(!text.contains("proxy"), "{text}");
    }
}
