//! The PHP application (php/app.php) held to the rules by the verifier under flint serve: through
//! php-fpm (a pool started here with the lab's config, stopped by its process group) and as a
//! CGI program run by php-cgi from its interpreter line, over the SQLite database flint-app
//! makes. Debian's php-fpm, php-cgi and php-sqlite3 (scripts/install-peers.sh) are required.

use lab_app::php::{self, Fpm};
use lab_app::verify::{verify, REQUESTS};
use lab_process::{find_program, Group, StopPolicy};
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const APP: &str = env!("CARGO_BIN_EXE_flint-app");

fn init_db(path: &Path) {
    let st = Command::new(APP).arg("init").arg(path).status().unwrap();
    assert!(st.success());
}

/// Debian's php-fpm (`php-fpm8.2`), whatever its version.
fn fpm_program() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/sbin")
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().starts_with("/usr/sbin/php-fpm"))
        .collect();
    found.sort();
    found
        .pop()
        .or_else(|| find_program("php-fpm"))
        .expect("php-fpm is missing: scripts/install-peers.sh installs it")
}

/// flint serve in this process over `root`, with `fastcgi` and `cgi` mounts; the verdicts at
/// `prefix` and the server's counters.
fn serve_and_verify(
    root: &Path,
    fastcgi: Vec<serve::config::FastCgiMount>,
    cgi: Vec<serve::config::CgiMount>,
    prefix: &str,
    db: &Path,
) -> (Vec<lab_app::verify::Verdict>, serve::ServerStats) {
    let config = serve::Config {
        root: root.to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 1,
        fastcgi,
        cgi,
        ..serve::Config::default()
    };
    let server = serve::server::Server::bind(config).unwrap();
    let addr = server.local_addr();
    let handle = server.handle();
    let thread = std::thread::spawn(move || server.run());
    let verdicts = verify(addr, prefix, Some(db));
    handle.shutdown();
    (verdicts, thread.join().unwrap().unwrap())
}

fn problems(verdicts: &[lab_app::verify::Verdict]) -> Vec<String> {
    (verdicts.iter())
        .filter(|v| !v.problems.is_empty())
        .map(|v| format!("{}: {}", v.test, v.problems.join("; ")))
        .collect()
}

#[test]
fn the_php_application_under_php_fpm_passes_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("world.db");
    init_db(&db);
    let socket = dir.path().join("php-fpm.sock");
    let conf = dir.path().join("php-fpm.conf");
    std::fs::write(
        &conf,
        php::fpm_config(&Fpm {
            dir: dir.path(),
            socket: &socket,
            children: 2,
            db: &db,
            web_user: None,
        }),
    )
    .unwrap();
    let mut cmd = Command::new(fpm_program());
    // Run as root in CI: php-fpm then wants to be told so.
    cmd.args(["--nodaemonize", "--allow-to-run-as-root", "--fpm-config"])
        .arg(&conf);
    let mut fpm = Group::spawn(
        &mut cmd,
        None,
        StopPolicy::terminate(Duration::from_secs(5)),
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while UnixStream::connect(&socket).is_err() {
        assert!(fpm.exited().is_none(), "php-fpm exited at start");
        assert!(Instant::now() < deadline, "php-fpm not ready within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    let root = tempfile::tempdir().unwrap();
    let script_dir = root.path().join(php::FPM_DIR);
    std::fs::create_dir(&script_dir).unwrap();
    std::fs::write(script_dir.join(php::SCRIPT), php::APP).unwrap();
    let app = format!("/{}/=unix:{}", php::FPM_DIR, socket.display());
    let prefix = format!("/{}/{}", php::FPM_DIR, php::SCRIPT);
    let (verdicts, stats) = serve_and_verify(
        root.path(),
        vec![app.parse().unwrap()],
        Vec::new(),
        &prefix,
        &db,
    );
    fpm.stop();
    assert_eq!(verdicts.len(), 6);
    assert!(problems(&verdicts).is_empty(), "{verdicts:#?}");
    assert_eq!(stats.fastcgi_requests, REQUESTS as u64, "{stats:?}");
    assert_eq!(stats.fastcgi_failures, 0, "{stats:?}");
}

#[test]
fn the_php_application_as_a_php_cgi_program_passes_the_verifier() {
    let php_cgi = Path::new(php::PHP_CGI);
    assert!(
        php_cgi.is_file(),
        "php-cgi is missing: scripts/install-peers.sh installs it"
    );
    let cgi = tempfile::tempdir().unwrap();
    let script = cgi.path().join(php::SCRIPT);
    std::fs::write(&script, php::cgi_script(php_cgi)).unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The database in its directory beside the script, where the application looks when no
    // FLINT_APP_DB is set (a CGI program gets no environment from its server).
    let db = cgi.path().join(lab_app::DB_DIR).join("world.db");
    std::fs::create_dir(db.parent().unwrap()).unwrap();
    init_db(&db);
    let root = tempfile::tempdir().unwrap();
    let mount = serve::config::CgiMount {
        prefix: "/cgi-bin".into(),
        dir: cgi.path().to_path_buf(),
    };
    let prefix = format!("/cgi-bin/{}", php::SCRIPT);
    let (verdicts, stats) = serve_and_verify(root.path(), Vec::new(), vec![mount], &prefix, &db);
    assert!(problems(&verdicts).is_empty(), "{verdicts:#?}");
    // One php-cgi per request: plaintext, json, db, 5 queries, fortunes, updates.
    assert_eq!(stats.cgi_starts, REQUESTS as u64, "{stats:?}");
}
