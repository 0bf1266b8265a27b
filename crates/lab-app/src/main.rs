//! `flint-app`: the reference application of `flint lab dynamic`.
//!
//! - `flint-app init DB`: creates the database (World: 10,000 rows; Fortune: 12).
//!
//! DB is a SQLite file, or a PostgreSQL database as a `postgres://` URL (the socket directory
//! as a percent-encoded host: `postgres://flint@%2Ftmp%2Fpg/flint`).
//! - `flint-app http [--prefix PREFIX] ADDR [DB]`: serves over HTTP/1.1 (the upstream of a
//!   reverse proxy) on ADDR, `HOST:PORT` or `unix:PATH`; with PREFIX, the test types are under
//!   it (`/proxy/json`), as a proxy that passes the path unchanged sends them.
//! - `flint-app fastcgi SOCKET [DB]`: a FastCGI responder on the unix socket SOCKET.
//! - `flint-app verify ADDR [PREFIX] [DB]`: holds a deployment to the rules; exit 1 if it fails.
//! - Run as a CGI program (`GATEWAY_INTERFACE` set): answers the request; the database is
//!   `FLINT_APP_DB`, `postgres.url` beside the program, or `db/world.db` beside it.

use lab_app::{cgi, db::Db, default_db, fastcgi, http, verify};
use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str =
    "usage: flint-app init DB | http [--prefix PREFIX] ADDR [DB] | fastcgi SOCKET [DB] | verify ADDR [PREFIX] [DB] | (as a CGI program)";

fn main() -> ExitCode {
    if std::env::var_os("GATEWAY_INTERFACE").is_some() {
        let db = default_db().filter(|p| p.exists() || lab_app::db::is_postgres(p));
        return ExitCode::from(cgi::run(db.as_deref()) as u8);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args[..] {
        ["init", db] => match Db::create(&PathBuf::from(db), 1) {
            Ok(_) => ExitCode::SUCCESS,
            Err(e) => fail(&format!("{db}: {e}")),
        },
        ["http", "--prefix", prefix, addr, ref rest @ ..] if rest.len() <= 1 => {
            http_server(addr, rest.first().copied(), prefix)
        }
        ["http", addr, ref rest @ ..] if rest.len() <= 1 => {
            http_server(addr, rest.first().copied(), "")
        }
        ["fastcgi", socket, ref rest @ ..] if rest.len() <= 1 => {
            let db_path = rest.first().map(PathBuf::from).or_else(default_db);
            // Opened once, before the socket: a database that cannot be opened is said now
            // (its test types then answer 500, as in the other deployments).
            let db = match db_path.as_deref().map(Db::open) {
                Some(Ok(db)) => Some(db),
                Some(Err(e)) => {
                    eprintln!("flint-app: the database: {e}");
                    None
                }
                None => None,
            };
            match fastcgi::bind(socket.as_ref()) {
                Ok(l) => {
                    println!("listening on {socket}");
                    match fastcgi::serve(l, db) {
                        Ok(()) => ExitCode::SUCCESS,
                        Err(e) => fail(&e.to_string()),
                    }
                }
                Err(e) => fail(&format!("cannot listen on {socket}: {e}")),
            }
        }
        ["verify", addr, ref rest @ ..] if rest.len() <= 2 => {
            let Ok(addr) = addr.parse() else {
                return usage();
            };
            let prefix = rest.first().copied().unwrap_or("");
            let db = rest.get(1).map(PathBuf::from);
            let verdicts = verify::verify(addr, prefix, db.as_deref());
            let mut failed = false;
            for v in &verdicts {
                if v.problems.is_empty() {
                    println!("{:<10} ok", v.test);
                } else {
                    failed = true;
                    println!("{:<10} FAILED: {}", v.test, v.problems.join("; "));
                }
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => usage(),
    }
}

/// `flint-app http`: binds ADDR (`unix:PATH` or `HOST:PORT`), says where it listens on its
/// first line, and serves until the process ends.
fn http_server(addr: &str, db: Option<&str>, prefix: &str) -> ExitCode {
    let mount = http::Mount {
        db: db.map(PathBuf::from).or_else(default_db),
        prefix: prefix.trim_end_matches('/').to_owned(),
    };
    let served = match addr.strip_prefix("unix:") {
        Some(path) => match fastcgi::bind(path.as_ref()) {
            Ok(l) => {
                println!("listening on {addr}");
                http::serve_unix(l, mount)
            }
            Err(e) => return fail(&format!("cannot listen on {addr}: {e}")),
        },
        None => match std::net::TcpListener::bind(addr) {
            Ok(l) => {
                if let Ok(a) = l.local_addr() {
                    println!("listening on {a}");
                }
                http::serve(l, mount)
            }
            Err(e) => return fail(&format!("cannot listen on {addr}: {e}")),
        },
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&e.to_string()),
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::from(2)
}

fn fail(message: &str) -> ExitCode {
    eprintln!("flint-app: {message}");
    ExitCode::FAILURE
}
