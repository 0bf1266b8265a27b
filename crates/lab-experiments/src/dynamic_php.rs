//! The PHP deployments of `flint lab dynamic`: the application in PHP (crates/lab-app's
//! `php/app.php`) through php-fpm (FastCGI: a pool of persistent children started by the lab
//! with its own config) and through php-cgi (a CGI program, a process per request). Which of
//! Debian's packages each needs is checked once, before any server starts: a deployment whose
//! package is missing is shown failed with the package to install, never skipped in silence.

use lab_app::php::{self, Fpm};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The PHP programs found, each with its PDO driver for the run's database, or why not.
#[derive(Debug, Clone)]
pub struct Php {
    pub fpm: Result<PathBuf, String>,
    pub cgi: Result<PathBuf, String>,
}

/// Which PHP programs a run uses: `None` finds Debian's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhpPrograms {
    pub fpm: Option<PathBuf>,
    pub cgi: Option<PathBuf>,
}

impl Php {
    /// Finds php-fpm and php-cgi (or takes `given`'s) and checks that each loads PDO's driver
    /// for `db` (each SAPI has its own ini directory, so each is asked). Only the deployments
    /// asked for have their programs looked for.
    pub fn find(db: &Path, given: &PhpPrograms, fpm_wanted: bool, cgi_wanted: bool) -> Php {
        let usable = |program: Result<PathBuf, String>| {
            program.and_then(|p| check_driver(&p, db).map(|()| p))
        };
        let not_asked = || Err("not asked for".to_owned());
        Php {
            fpm: if fpm_wanted {
                usable(given_or(&given.fpm, "php-fpm", find_fpm))
            } else {
                not_asked()
            },
            cgi: if cgi_wanted {
                usable(given_or(&given.cgi, "php-cgi", find_cgi))
            } else {
                not_asked()
            },
        }
    }
}

/// `given` when it names a program (the package to install when it does not exist), else what
/// `find` finds.
fn given_or(
    given: &Option<PathBuf>,
    package: &str,
    find: fn() -> Result<PathBuf, String>,
) -> Result<PathBuf, String> {
    match given {
        Some(p) if lab_process::is_executable(p) => Ok(p.clone()),
        Some(p) => Err(format!(
            "{} is not installed (apt-get install -y {package})",
            p.display()
        )),
        None => find(),
    }
}

/// php-fpm's executable (`php-fpm8.2` in Debian's `php-fpm`: the highest version found), or
/// the package to install.
pub fn find_fpm() -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
        .map(|dir| {
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    (p.file_name().and_then(OsStr::to_str))
                        .is_some_and(|n| n.starts_with("php-fpm"))
                })
                .filter(|p| lab_process::is_executable(p))
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    (found.pop().or_else(|| lab_process::find_program("php-fpm")))
        .ok_or_else(|| "php-fpm is not installed (apt-get install -y php-fpm)".to_owned())
}

/// php-cgi's executable, or the package to install.
pub fn find_cgi() -> Result<PathBuf, String> {
    let debian = PathBuf::from(php::PHP_CGI);
    if lab_process::is_executable(&debian) {
        return Ok(debian);
    }
    lab_process::find_program("php-cgi")
        .ok_or_else(|| "php-cgi is not installed (apt-get install -y php-cgi)".to_owned())
}

/// Whether `program` loads PDO's driver for the database at `db` (`-m` lists its modules);
/// the package to install when not.
pub fn check_driver(program: &Path, db: &Path) -> Result<(), String> {
    let (driver, package) = php::driver(db);
    let mut cmd = std::process::Command::new(program);
    cmd.arg("-m");
    let out = lab_process::output_within(&mut cmd, Duration::from_secs(20))
        .map_err(|e| format!("{} -m: {e}", program.display()))?;
    if String::from_utf8_lossy(&out.stdout)
        .lines()
        .any(|m| m.trim() == driver)
    {
        return Ok(());
    }
    Err(format!(
        "{} has no PDO driver {driver} (apt-get install -y {package})",
        program.display()
    ))
}

/// Writes php-fpm's config into `dir` and returns its arguments: in the foreground, the
/// config's pool on `socket` with `children` children and `db` as the application's database.
/// As root php-fpm must be told it may run so; with `web_user` (the user the web server drops
/// to) its children run as that user and its socket is that user's alone, otherwise they run as
/// root, as the lab's other processes do, behind a socket only root reaches.
pub fn fpm_args(
    dir: &Path,
    socket: &Path,
    children: usize,
    db: &Path,
    web_user: Option<&str>,
) -> Result<Vec<std::ffi::OsString>, String> {
    let conf = dir.join("php-fpm.conf");
    let text = php::fpm_config(&Fpm {
        dir,
        socket,
        children,
        db,
        web_user,
    });
    std::fs::write(&conf, text).map_err(|e| format!("php-fpm.conf: {e}"))?;
    // Its log to stderr (the stack's output log, shown when it fails to start or dies), not
    // only to the config's error_log, which php-fpm alone writes when stderr is no terminal.
    let mut args: Vec<std::ffi::OsString> = vec!["--nodaemonize".into(), "--force-stderr".into()];
    if nix::unistd::geteuid().is_root() {
        args.push("--allow-to-run-as-root".into());
    }
    args.extend(["--fpm-config".into(), conf.into()]);
    Ok(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_driver_names_the_package_to_install() {
        // A "php" that lists no modules.
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("php-fake");
        std::fs::write(&fake, "#!/bin/sh\necho '[PHP Modules]'; echo PDO\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let err = check_driver(&fake, Path::new("/tmp/world.db")).unwrap_err();
        assert!(
            err.ends_with("no PDO driver pdo_sqlite (apt-get install -y php-sqlite3)"),
            "{err}"
        );
        let err = check_driver(&fake, Path::new("postgres://flint@%2Ftmp/flint")).unwrap_err();
        assert!(
            err.ends_with("no PDO driver pdo_pgsql (apt-get install -y php-pgsql)"),
            "{err}"
        );
    }
}
