//! The application in its deployments, held to the rules by the verifier: as an HTTP server
//! (the binary, started and stopped by PID), as a CGI program under flint serve, as a FastCGI
//! responder under flint serve and nginx, and as a CGI program under nginx and fcgiwrap; and the
//! verifier failing deployments that answer wrongly.

use lab_app::deploy::{self, CGI_PREFIX, FASTCGI_PREFIX, PROXY_PREFIX};
use lab_app::verify::{verify, Verdict, REQUESTS};
use lab_process::{find_program, free_port, Group, StopPolicy};
use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    let db = cgi.path().join(lab_app::DB_DIR).join("world.db");
    std::fs::create_dir(db.parent().unwrap()).unwrap();
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
    assert_eq!(stats.cgi_starts, REQUESTS as u64, "{stats:?}");
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

/// `flint-app fastcgi` on a unix socket in `dir`, stopped by PID when dropped.
struct FastCgi(Child, std::path::PathBuf);

impl FastCgi {
    fn start(dir: &Path, db: &Path) -> FastCgi {
        let socket = dir.join("app.sock");
        let mut child = Command::new(APP)
            .arg("fastcgi")
            .arg(&socket)
            .arg(db)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("listening on "), "{line:?}");
        FastCgi(child, socket)
    }
}

impl Drop for FastCgi {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_fastcgi_deployment_under_flint_serve_passes_the_verifier() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("world.db");
    init_db(&db);
    let app = FastCgi::start(dir.path(), &db);
    // The script flint serve finds under its root: the application itself reads nothing of it.
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("fcgi")).unwrap();
    std::fs::write(root.path().join("fcgi/app"), b"").unwrap();
    let config = serve::Config {
        root: root.path().to_path_buf(),
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        threads: 1,
        fastcgi: vec![format!("/fcgi/=unix:{}", app.1.display()).parse().unwrap()],
        ..serve::Config::default()
    };
    let server = serve::server::Server::bind(config).unwrap();
    let addr = server.local_addr();
    let handle = server.handle();
    let thread = std::thread::spawn(move || server.run());
    let verdicts = verify(addr, FASTCGI_PREFIX, Some(&db));
    handle.shutdown();
    let stats = thread.join().unwrap().unwrap();
    assert!(failed(&verdicts).is_empty(), "{verdicts:#?}");
    assert_eq!(stats.fastcgi_requests, REQUESTS as u64, "{stats:?}");
    // One thread, one request at a time: the application kept the connection for them all.
    assert_eq!(stats.fastcgi_connects, 1, "{stats:?}");
    assert_eq!(stats.fastcgi_failures, 0, "{stats:?}");
}

/// Waits (bounded) until `ready` holds or `group` has exited.
fn wait_ready(group: &mut Group, what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(group.exited().is_none(), "{what} exited at start");
        assert!(Instant::now() < deadline, "{what} not ready within 20 s");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// nginx with both gateways, on a port found free; ready once nginx itself listens there (a
/// port found free may be taken by another test's server first: then nginx exits, and another
/// port is tried).
fn start_nginx(
    dir: &Path,
    root: &Path,
    app: &Path,
    wrap_socket: &Path,
    cgi_dir: &Path,
    proxy: &Path,
) -> (Group, SocketAddr) {
    let program = find_program("nginx").expect("nginx");
    let conf = dir.join("nginx.conf");
    for _ in 0..3 {
        let port = free_port().unwrap();
        let text = deploy::nginx_config(&deploy::Nginx {
            dir,
            root,
            port,
            fastcgi: Some(app),
            cgi: Some((wrap_socket, cgi_dir)),
            php_fpm: None,
            php_cgi: None,
            proxy: Some(proxy),
        });
        std::fs::write(&conf, text).unwrap();
        let mut cmd = Command::new(&program);
        cmd.arg("-p").arg(dir).arg("-e").arg(dir.join("error.log"));
        cmd.arg("-c").arg(&conf);
        let policy = StopPolicy::terminate(Duration::from_secs(5));
        let mut nginx = Group::spawn(&mut cmd, None, policy).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while nginx.exited().is_none() && Instant::now() < deadline {
            if lab_process::procfs::pid_listening_on(port) == Some(nginx.pid()) {
                return (nginx, SocketAddr::from(([127, 0, 0, 1], port)));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    panic!(
        "nginx did not start: {:?}",
        std::fs::read_to_string(dir.join("error.log"))
    );
}

#[test]
fn fastcgi_cgi_and_proxy_deployments_under_nginx_pass_the_verifier() {
    let (Some(_), Some(fcgiwrap)) = (find_program("nginx"), find_program("fcgiwrap")) else {
        panic!("nginx and fcgiwrap are needed (scripts/install-peers.sh installs them)");
    };
    let dir = tempfile::tempdir().unwrap();
    let cgi_dir = dir.path().join("cgi");
    std::fs::create_dir(&cgi_dir).unwrap();
    std::fs::copy(APP, cgi_dir.join(deploy::CGI_PROGRAM)).unwrap();
    // The CGI program finds the database in its directory beside itself; the FastCGI one is
    // told it.
    let db = cgi_dir.join(lab_app::DB_DIR).join("world.db");
    std::fs::create_dir(db.parent().unwrap()).unwrap();
    init_db(&db);
    let app = FastCgi::start(dir.path(), &db);
    let policy = StopPolicy::terminate(Duration::from_secs(5));
    let wrap_socket = dir.path().join("fcgiwrap.sock");
    let mut wrap = Command::new(fcgiwrap);
    wrap.arg("-c").arg("2").arg("-s");
    wrap.arg(format!("unix:{}", wrap_socket.display()));
    let mut wrap = Group::spawn(&mut wrap, None, policy).unwrap();
    wait_ready(&mut wrap, "fcgiwrap", || {
        std::os::unix::net::UnixStream::connect(&wrap_socket).is_ok()
    });
    // The HTTP deployment on a unix socket, mounted under the prefix nginx passes unchanged.
    let http_socket = dir.path().join("http.sock");
    let mut http = Command::new(APP);
    http.args(["http", "--prefix", PROXY_PREFIX]);
    http.arg(format!("unix:{}", http_socket.display())).arg(&db);
    http.stdout(Stdio::null());
    let mut http = Group::spawn(&mut http, None, policy).unwrap();
    wait_ready(&mut http, "flint-app http", || {
        std::os::unix::net::UnixStream::connect(&http_socket).is_ok()
    });
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let (mut nginx, addr) = start_nginx(
        dir.path(),
        &root,
        &app.1,
        &wrap_socket,
        &cgi_dir,
        &http_socket,
    );
    let fast = verify(addr, FASTCGI_PREFIX, Some(&db));
    let cgi = verify(addr, CGI_PREFIX, Some(&db));
    let proxy = verify(addr, PROXY_PREFIX, Some(&db));
    let log = std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default();
    assert!(failed(&fast).is_empty(), "{fast:#?}\n{log}");
    assert!(failed(&cgi).is_empty(), "{cgi:#?}\n{log}");
    assert!(failed(&proxy).is_empty(), "{proxy:#?}\n{log}");
    assert!(!nginx.stop().killed && !wrap.stop().killed && !http.stop().killed);
}

/// A deployment made of `answer` (the target to the media type and body), served with the
/// fields the rules ask for, one request a connection, until it is dropped.
struct Answering {
    addr: SocketAddr,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Answering {
    fn start(answer: fn(&str) -> (&'static str, String)) -> Answering {
        use std::io::{Read, Write};
        use std::sync::atomic::Ordering;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            while !stopped.load(Ordering::Relaxed) {
                let mut s = match listener.accept() {
                    Ok((s, _)) => s,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    Err(e) => panic!("accept: {e}"),
                };
                s.set_nonblocking(false).unwrap();
                s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && s.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let line = String::from_utf8_lossy(&head);
                let (media, body) = answer(line.split(' ').nth(1).unwrap_or("/"));
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nServer: wrong\r\nDate: Sun, 29 Nov 2026 04:00:00 GMT\r\n\
                     Content-Type: {media}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            }
        });
        Answering {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Answering {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A deployment that answers with the wrong rows: one row whatever `queries` asks, an id out
/// of range for `/db`, the fortunes unescaped.
fn wrong_rows(target: &str) -> (&'static str, String) {
    match target.split('?').next().unwrap_or("") {
        "/plaintext" => ("text/plain", "Hello, World!".to_owned()),
        "/json" => (
            "application/json",
            r#"{"message":"Hello, World!"}"#.to_owned(),
        ),
        "/db" => (
            "application/json",
            r#"{"id":0,"randomNumber":5}"#.to_owned(),
        ),
        "/fortunes" => (
            "text/html",
            "<table><tr><th>id</th><th>message</th></tr>\
             <tr><td>11</td><td><script>alert(1)</script></td></tr></table>"
                .to_owned(),
        ),
        _ => (
            "application/json",
            r#"[{"id":1,"randomNumber":1}]"#.to_owned(),
        ),
    }
}

#[test]
fn the_verifier_fails_a_deployment_that_returns_wrong_rows() {
    let app = Answering::start(wrong_rows);
    let verdicts = verify(app.addr, "", None);
    assert_eq!(
        failed(&verdicts),
        ["db", "queries", "fortunes", "updates"],
        "{verdicts:#?}"
    );
    let problems =
        |test: &str| (verdicts.iter().find(|v| v.test == test).unwrap().problems).join("; ");
    assert!(
        problems("db").contains("a row out of range"),
        "{}",
        problems("db")
    );
    assert!(
        problems("queries").contains("1 rows where 20 were expected")
            && problems("queries").contains("1 rows where 500 were expected"),
        "{}",
        problems("queries")
    );
    assert!(
        problems("fortunes").contains("not escaped"),
        "{}",
        problems("fortunes")
    );
    assert!(
        problems("updates").contains("1 rows where 20"),
        "{}",
        problems("updates")
    );
}

/// Rows as many as `queries` asks, clamped to 1..500 for `/queries` only: `/updates` answers
/// `queries=0` with none and `queries=501` with 501.
fn updates_unclamped(target: &str) -> (&'static str, String) {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let asked = query
        .strip_prefix("queries=")
        .and_then(|n| n.parse::<i64>().ok());
    let n = match (path, asked) {
        ("/updates", Some(n)) => n.clamp(0, 1000),
        (_, Some(n)) => n.clamp(1, 500),
        (_, None) => 1,
    };
    let rows: Vec<String> = (1..=n)
        .map(|id| format!(r#"{{"id":{id},"randomNumber":1}}"#))
        .collect();
    match path {
        "/db" => (
            "application/json",
            r#"{"id":1,"randomNumber":1}"#.to_owned(),
        ),
        "/updates" | "/queries" => ("application/json", format!("[{}]", rows.join(","))),
        _ => wrong_rows(target),
    }
}

#[test]
fn the_verifier_holds_updates_to_the_same_clamp_as_queries() {
    let app = Answering::start(updates_unclamped);
    let verdicts = verify(app.addr, "", None);
    assert_eq!(failed(&verdicts), ["fortunes", "updates"], "{verdicts:#?}");
    let updates = (verdicts
        .iter()
        .find(|v| v.test == "updates")
        .unwrap()
        .problems)
        .join("; ");
    assert!(
        updates.contains("0 rows where 1 were expected")
            && updates.contains("501 rows where 500 were expected"),
        "{updates}"
    );
}
