//! The PHP deployments of `flint lab dynamic`: the application in PHP (crates/lab-app's
//! `php/app.php`) through php-fpm (FastCGI: a pool of persistent children started by the lab
//! with its own config), through php-cgi (a CGI program, a process per request) and inside
//! Apache prefork's children (mod_php). Which of Debian's packages each needs is checked once,
//! before any server starts: a deployment whose package is missing is shown failed with the
//! package to install, never skipped in silence.

use lab_app::php::{self, Fpm};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The PHP programs found, each with its PDO driver for the run's database, or why not.
#[derive(Debug, Clone)]
pub struct Php {
    pub fpm: Result<PathBuf, String>,
    pub cgi: Result<PathBuf, String>,
    /// mod_php's module file (`libphp8.2.so`).
    pub mod_php: Result<PathBuf, String>,
}

/// Which PHP deployments a run asks for: only theirs are looked for.
#[derive(Debug, Clone, Copy, Default)]
pub struct PhpWanted {
    pub fpm: bool,
    pub cgi: bool,
    pub mod_php: bool,
}

/// Which PHP programs a run uses: `None` finds Debian's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PhpPrograms {
    /// The php-fpm to run (the package to install is named when it does not exist).
    pub fpm: Option<PathBuf>,
    /// The php-cgi the CGI deployment's script names as its interpreter.
    pub cgi: Option<PathBuf>,
}

impl Php {
    /// Finds php-fpm, php-cgi (or takes `given`'s) and mod_php, and checks that each loads
    /// PDO's driver for `db` (each SAPI has its own ini directory, so each is asked). Only the
    /// deployments `wanted` have their programs looked for.
    pub fn find(db: &Path, given: &PhpPrograms, wanted: PhpWanted) -> Php {
        let usable = |program: Result<PathBuf, String>| {
            program.and_then(|p| check_driver(&p, db).map(|()| p))
        };
        let not_asked = || Err("not asked for".to_owned());
        let modules = Path::new(lab_peers::APACHE_MODULES);
        Php {
            fpm: if wanted.fpm {
                usable(given_or(&given.fpm, "php-fpm", find_fpm))
            } else {
                not_asked()
            },
            cgi: if wanted.cgi {
                usable(given_or(&given.cgi, "php-cgi", find_cgi))
            } else {
                not_asked()
            },
            mod_php: if wanted.mod_php {
                find_mod_php(modules)
                    .and_then(|m| check_mod_php_driver(&m, db, Path::new(ETC_PHP)).map(|()| m))
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

/// Where Debian keeps each PHP version's ini files, a directory per SAPI (`8.2/apache2`).
const ETC_PHP: &str = "/etc/php";

/// mod_php's module in Apache's `modules` directory (`libphp8.2.so` from Debian's
/// `libapache2-mod-php`: the highest version found), or the package to install.
pub fn find_mod_php(modules: &Path) -> Result<PathBuf, String> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(modules)
        .map(|dir| {
            dir.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    (p.file_name().and_then(OsStr::to_str))
                        .is_some_and(|n| n.starts_with("libphp") && n.ends_with(".so"))
                })
                .collect()
        })
        .unwrap_or_default();
    found.sort();
    found.pop().ok_or_else(|| {
        format!(
            "mod_php is not installed (no {}/libphp*.so; apt-get install -y libapache2-mod-php)",
            modules.display()
        )
    })
}

/// Whether mod_php's `module` (`libphp8.2.so`) loads PDO's driver for the database at `db`:
/// its SAPI's ini directory under `etc_php` (`8.2/apache2/conf.d`) enables it. The module
/// cannot be asked as a program can (`-m`), and Debian's packages enable a driver for every
/// SAPI installed by a file of that directory (`20-pdo_sqlite.ini`).
pub fn check_mod_php_driver(module: &Path, db: &Path, etc_php: &Path) -> Result<(), String> {
    let (driver, package) = php::driver(db);
    let name = module.file_name().and_then(OsStr::to_str).unwrap_or("");
    let version = (name
        .strip_prefix("libphp")
        .and_then(|n| n.strip_suffix(".so")))
    .filter(|v| !v.is_empty())
    .ok_or_else(|| format!("{}: not a PHP module's name", module.display()))?;
    let conf = etc_php.join(version).join("apache2/conf.d");
    let ini = format!("{driver}.ini");
    let enabled = std::fs::read_dir(&conf)
        .map(|dir| {
            dir.flatten().any(|e| {
                let n = e.file_name();
                let n = n.to_string_lossy();
                n == ini || n.ends_with(&format!("-{ini}"))
            })
        })
        .unwrap_or(false);
    if enabled {
        return Ok(());
    }
    Err(format!(
        "mod_php {version} has no PDO driver {driver} (none in {}; apt-get install -y {package})",
        conf.display()
    ))
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

    #[test]
    fn mod_php_is_found_by_its_file_and_its_driver_by_its_sapis_ini_directory() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("modules");
        std::fs::create_dir(&modules).unwrap();
        std::fs::write(modules.join("mod_mime.so"), b"").unwrap();
        let err = find_mod_php(&modules).unwrap_err();
        assert!(
            err.ends_with("apt-get install -y libapache2-mod-php)"),
            "{err}"
        );
        std::fs::write(modules.join("libphp8.2.so"), b"").unwrap();
        let module = find_mod_php(&modules).unwrap();
        assert_eq!(module, modules.join("libphp8.2.so"));
        let etc = dir.path().join("etc");
        let conf = etc.join("8.2/apache2/conf.d");
        std::fs::create_dir_all(&conf).unwrap();
        std::fs::write(conf.join("20-pdo_sqlite.ini"), b"").unwrap();
        let sqlite = Path::new("/tmp/db/world.db");
        check_mod_php_driver(&module, sqlite, &etc).unwrap();
        let err =
            check_mod_php_driver(&module, Path::new("postgres://f@%2Fpg/f"), &etc).unwrap_err();
        assert!(
            err.starts_with("mod_php 8.2 has no PDO driver pdo_pgsql")
                && err.ends_with("apt-get install -y php-pgsql)"),
            "{err}"
        );
        // Another version's drivers are not this one's.
        let other = modules.join("libphp8.3.so");
        assert!(check_mod_php_driver(&other, sqlite, &etc).is_err());
    }
}
