//! The files every deployment serves, written once per run: the document root, the CGI
//! directory and the database, before any server starts.

use lab_app::deploy::CGI_PROGRAM;
use lab_app::php;
use lab_app::{DB_DIR, POSTGRES_URL_FILE};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

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
