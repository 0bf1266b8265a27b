//! The reference application of `flint lab dynamic`: TechEmpower's test types (`/plaintext`,
//! `/json`, `/db`, `/queries`, `/fortunes`, `/updates`) over SQLite or PostgreSQL, written once
//! ([`handlers::answer`]) and run in the deployments the lab compares: as a CGI program (a
//! process per request, [`cgi`]), as a FastCGI responder (persistent, [`fastcgi`]) and as an
//! HTTP server (persistent, [`http`]) for a reverse proxy to stand in front of; and the same
//! test types in PHP ([`php`]: php-fpm and php-cgi). [`verify`] holds any deployment to the
//! rules before it is measured: one that answers wrongly is reported as failed, never measured.
//!
//! Principal types: [`db::Db`] (the two tables, statements prepared once per connection) and
//! [`handlers::Reply`] (an answer before any protocol).

#![warn(missing_docs)]

pub mod cgi;
pub mod db;
pub mod deploy;
pub mod fastcgi;
pub mod handlers;
pub mod http;
pub mod php;
pub mod verify;

use std::path::PathBuf;

/// The file beside the program that holds a PostgreSQL URL for the CGI program, when the
/// database is PostgreSQL (a CGI program gets no environment from its server but its own
/// meta-variables, so its database is named beside it).
pub const POSTGRES_URL_FILE: &str = "postgres.url";

/// The directory beside the program that holds its SQLite database, `world.db`: a directory of
/// the database's own, so that it alone can be given to the user CGI programs run as (SQLite
/// writes its WAL and shared memory beside the database), never the programs' directory.
pub const DB_DIR: &str = "db";

/// Where the database is: `FLINT_APP_DB`, else the URL in [`POSTGRES_URL_FILE`] beside the
/// program, else `world.db` in [`DB_DIR`] beside the program.
pub fn default_db() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FLINT_APP_DB") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    if let Ok(url) = std::fs::read_to_string(exe.with_file_name(POSTGRES_URL_FILE)) {
        return Some(PathBuf::from(url.trim()));
    }
    Some(exe.with_file_name(DB_DIR).join("world.db"))
}
