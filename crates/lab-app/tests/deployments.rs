//! The application in its deployments, held to the rules by the verifier: as an HTTP server
//! (the binary, started and stopped by PID) and as a CGI program under flint serve; and the
//! verifier failing deployments that answer wrongly.

use lab_app::verify::{verify, Verdict};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

const APP: &str = env!("CARGO_BIN_EXE_flint-app");

fn init_db(path: &Path) {
    let st = Command::new(APP).arg("init").arg(path).status().unwrap();
    assert!(st.success());
}

/// The HTTP deployment: the child and its address (read from its first line).
struct Http(Child, SocketAddr);

impl Http {
    fn start(db: Option<&Path>) -> Http {
        let mut cmd = Command::new(APP);
        cmd.args(["http", "127.0.0.1:0"]).stdout(Stdio::piped());
        cmd.env_remove("FLINT_APP_DB");
        match db {
            Some(db) => cmd.arg(db),
            // A database that does not exist: the database test types answer 500.
            None => cmd.arg("/nonexistent/world.db"),
        };
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let addr = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .parse()
            .unwrap();
        Http(child, addr)
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn failed(verdicts: &[Verdict]) -> Vec<&'static str> {
    verdicts
        .iter()
        .filter(|v| !v.problems.is_empty())
        .map(|v| v.test)
        .collect()
}

#[test]
fn the_http_deployment_passes_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("world.db");
    init_db(&db);
    let app = Http::start(Some(&db));
    let verdicts = verify(app.1, "", Some(&db));
    assert_eq!(verdicts.len(), 6);
    assert!(failed(&verdicts).is_empty(), "{verdicts:#?}");
}

#[test]
fn the_cgi_deployment_under_flint_serve_passes_the_verifier() {
    let cgi = tempfile::tempdir().unwrap();
    let program = cgi.path().join("app.cgi");
    std::fs::copy(APP, &program).unwrap();
    let db = cgi.path().join("world.db");
    init_db(&db);
    let root = tempfile::tempdir().unwrap();
    let config = serve::Config {
        root: root.path().to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 1,
        cgi: vec![serve::config::CgiMount {
            prefix: "/cgi-bin".into(),
            dir: cgi.path().to_path_buf(),
        }],
        ..serve::Config::default()
    };
    let server = serve::server::Server::bind(config).unwrap();
    let addr = server.local_addr();
    let handle = server.handle();
    let thread = std::thread::spawn(move || server.run());
    let verdicts = verify(addr, "/cgi-bin/app.cgi", Some(&db));
    handle.shutdown();
    let stats = thread.join().unwrap().unwrap();
    assert!(failed(&verdicts).is_empty(), "{verdicts:#?}");
    // One program per request: plaintext, json, db, 5 queries, fortunes, updates.
    assert_eq!(stats.cgi_starts, 10, "{stats:?}");
}

#[test]
fn a_deployment_without_its_database_fails_the_database_tests() {
    let app = Http::start(None);
    let verdicts = verify(app.1, "", None);
    assert_eq!(
        failed(&verdicts),
        ["db", "queries", "fortunes", "updates"],
        "{verdicts:#?}"
    );
    let db = verdicts.iter().find(|v| v.test == "db").unwrap();
    assert_eq!(db.problems, ["status 500"]);
}

#[test]
fn a_request_with_a_body_gets_its_413_whole() {
    use std::io::{Read, Write};
    let app = Http::start(None);
    let mut s = std::net::TcpStream::connect(app.1).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let body = vec![b'x'; 256 * 1024];
    s.write_all(b"POST /json HTTP/1.1\r\nHost: t\r\nContent-Length: 262144\r\n\r\n")
        .unwrap();
    // The body goes on while the answer comes: the answer must not be lost to a reset.
    let _ = s.write_all(&body);
    let mut answer = Vec::new();
    let _ = s.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 413 "), "{text}");
    assert!(text.ends_with("no request body is taken\n"), "{text}");
}
