//! The application in PHP (`php/app.php`, embedded here): the same test types over PDO, from
//! the same tables and rows, for the deployments most sites run: php-fpm (FastCGI, a pool of
//! persistent children) and php-cgi (a CGI program, a process per request). This module writes
//! the script in both forms and php-fpm's config, and names the PDO driver a database needs.

use std::path::Path;

/// The application's source.
pub const APP: &str = include_str!("../php/app.php");

/// The script's name, in the document root's [`FPM_DIR`] and in the CGI directory.
pub const SCRIPT: &str = "app.php";
/// The directory of the document root holding the php-fpm script.
pub const FPM_DIR: &str = "php";

/// Where Debian's php-cgi is.
pub const PHP_CGI: &str = "/usr/bin/php-cgi";

/// The script as a CGI program: an interpreter line (php-cgi refuses to run a script it was
/// not handed by Apache's redirect unless `cgi.force_redirect` is off; one `-d` argument, as
/// the kernel passes the line's rest as one) before the application.
pub fn cgi_script(php_cgi: &Path) -> String {
    format!("#!{} -dcgi.force_redirect=0\n{APP}", php_cgi.display())
}

/// PDO's driver for the database at `location` and the Debian package that has it.
pub fn driver(location: &Path) -> (&'static str, &'static str) {
    if crate::db::is_postgres(location) {
        ("pdo_pgsql", "php-pgsql")
    } else {
        ("pdo_sqlite", "php-sqlite3")
    }
}

/// What php-fpm is given.
#[derive(Debug, Clone, Copy)]
pub struct Fpm<'a> {
    /// Its private directory: the pid file and the log.
    pub dir: &'a Path,
    /// The pool's socket.
    pub socket: &'a Path,
    /// Children of the pool, all started at once (`pm = static`).
    pub children: usize,
    /// The database (a SQLite file or a `postgres://` URL), as `FLINT_APP_DB`.
    pub db: &'a Path,
    /// The user the web server drops to when php-fpm's master runs as root: the pool's
    /// children run as that user (and its group), and the socket is that user's alone, so no
    /// other local user can hand the pool FastCGI parameters (`PHP_VALUE`) to run as root.
    pub web_user: Option<&'a str>,
}

/// php-fpm's config (run with `--nodaemonize --fpm-config FILE`): one pool on a unix socket,
/// a fixed number of children, in the foreground, its log and pid file in its directory.
pub fn fpm_config(f: &Fpm) -> String {
    let dir = f.dir.display();
    // `group` unset: php-fpm takes the user's own group.
    let owner = match f.web_user {
        Some(user) => format!("user = {user}\nlisten.owner = {user}\nlisten.mode = 0600\n"),
        None => String::new(),
    };
    format!(
        "; flint lab dynamic: php-fpm, one pool of {children} children.
[global]
pid = {dir}/php-fpm.pid
error_log = {dir}/php-fpm.log
daemonize = no

[app]
listen = {socket}
{owner}pm = static
pm.max_children = {children}
; Every request served by the same children, never replaced mid-run.
pm.max_requests = 0
clear_env = yes
env[FLINT_APP_DB] = {db}
catch_workers_output = yes
",
        children = f.children,
        socket = f.socket.display(),
        db = f.db.display(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cgi_script_is_the_application_after_its_interpreter_line() {
        let s = cgi_script(Path::new("/usr/bin/php-cgi"));
        let (line, rest) = s.split_once('\n').unwrap();
        assert_eq!(line, "#!/usr/bin/php-cgi -dcgi.force_redirect=0");
        assert_eq!(rest, APP);
        assert!(APP.starts_with("<?php\n"));
    }

    #[test]
    fn the_pool_is_static_on_its_socket_with_the_database() {
        let text = fpm_config(&Fpm {
            dir: Path::new("/d"),
            socket: Path::new("/d/fpm.sock"),
            children: 8,
            db: Path::new("postgres://flint@%2Fpg/postgres"),
            web_user: None,
        });
        for line in [
            "listen = /d/fpm.sock",
            "pm = static",
            "pm.max_children = 8",
            "daemonize = no",
            "pid = /d/php-fpm.pid",
            "env[FLINT_APP_DB] = postgres://flint@%2Fpg/postgres",
        ] {
            assert!(text.lines().any(|l| l == line), "{line}: {text}");
        }
        // Run as the invoking user: no user to switch to.
        assert!(!text.contains("user ="), "{text}");
    }

    #[test]
    fn as_root_the_pool_and_its_socket_are_the_web_servers_user_alone() {
        let text = fpm_config(&Fpm {
            dir: Path::new("/d"),
            socket: Path::new("/d/fpm.sock"),
            children: 2,
            db: Path::new("/d/db/world.db"),
            web_user: Some("www-data"),
        });
        let pool = text.split_once("[app]").unwrap().1;
        for line in [
            "user = www-data",
            "listen.owner = www-data",
            "listen.mode = 0600",
        ] {
            assert!(pool.lines().any(|l| l == line), "{line}: {text}");
        }
    }
}
