//! `flint serve` as a user starts it: one server per port, errors printed once with status 1,
//! the listen address forms, `--access-log -`, `--autoindex`, `--dotfiles`. Every server a test
//! starts is killed by PID when its guard drops, whatever happens.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use common::{flint, run_bounded, wait_exit, Server};

const WAIT: Duration = Duration::from_secs(10);

/// `flint serve ARGS`, its stdout piped if `stdout`; returns once its banner names its address.
fn serve(args: &[&str], stdout: bool) -> Server {
    let mut child = flint()
        .arg("serve")
        .args(args)
        .stdout(if stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stderr);
        let mut first = String::new();
        let _ = reader.read_line(&mut first);
        let _ = tx.send(first);
        let _ = std::io::copy(&mut reader, &mut std::io::sink());
    });
    let line = rx.recv_timeout(WAIT).unwrap_or_default();
    let Some(addr) = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
    else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint serve {args:?} printed no address: {line:?}");
    };
    Server {
        child,
        addr: addr.to_string(),
    }
}

/// GET over HTTP/1.0: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let addr: SocketAddr = addr.parse().expect("a socket address");
    let mut s = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    s.set_read_timeout(Some(WAIT)).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    let status = out
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

fn site(dir: &Path, name: &str) {
    std::fs::write(dir.join("who"), name).unwrap();
    std::fs::write(dir.join(".env"), "SECRET=1").unwrap();
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("sub/<x>.txt"), "x").unwrap();
}

fn terminate(server: &mut Server) -> ExitStatus {
    let pid = rustix::process::Pid::from_child(&server.child);
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    wait_exit(&mut server.child, WAIT).expect("flint serve did not exit on SIGTERM")
}

/// `flint serve` as `cmd` (with its arguments) starts it, stdout to null, each stderr line sent
/// on the channel returned; returns once its banner names its address.
fn serve_telling(cmd: &mut Command) -> (Server, Receiver<String>) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let banner = rx.recv_timeout(WAIT).unwrap_or_default();
    let Some(addr) = banner
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
    else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint serve printed no address: {banner:?}");
    };
    let addr = addr.to_string();
    (Server { child, addr }, rx)
}

/// Stops `server` (SIGTERM: it exits 0) and returns every line it printed after its banner, up
/// to the end of its stderr (the reader's sender then drops).
fn stop_telling(server: &mut Server, lines: &Receiver<String>) -> Vec<String> {
    assert!(terminate(server).success());
    let mut rest = Vec::new();
    while let Ok(line) = lines.recv_timeout(WAIT) {
        rest.push(line);
    }
    rest
}

fn stdout_of(child: &mut Child) -> String {
    let mut out = String::new();
    child
        .stdout
        .take()
        .expect("stdout piped")
        .read_to_string(&mut out)
        .unwrap();
    out
}

#[test]
fn a_second_server_on_a_served_port_exits_1_and_the_first_keeps_every_request() {
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    site(a.path(), "A");
    site(b.path(), "B");
    let first = serve(
        &[
            a.path().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "-t",
            "2",
        ],
        false,
    );
    for threads in ["1", "2", "4"] {
        let out = run_bounded(
            flint().args([
                "serve",
                b.path().to_str().unwrap(),
                "--listen",
                &first.addr,
                "-t",
                threads,
            ]),
            WAIT,
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{threads} threads: {stderr}");
        assert_eq!(
            stderr.matches("Address already in use").count(),
            1,
            "{stderr}"
        );
        assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
        assert!(!stderr.contains("http://"), "no banner: {stderr}");
    }
    // Every connection still reaches the first server's root: no second group member took any.
    for _ in 0..40 {
        assert_eq!(get(&first.addr, "/who"), (200, "A".to_string()));
    }
}

#[test]
fn startup_errors_of_input_are_one_line_and_status_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad_config = dir.path().join("bad.toml");
    std::fs::write(&bad_config, "keepalive_timout_ms = 5\n").unwrap();
    let bad_config = bad_config.to_str().unwrap().to_string();
    for (args, says) in [
        (
            vec!["/nonexistent", "--listen", "127.0.0.1:0"],
            "No such file or directory",
        ),
        (
            vec![".", "--config", "/nonexistent.toml"],
            "No such file or directory",
        ),
        (vec![".", "--config", &bad_config], "keepalive_timout_ms"),
        (
            vec![
                ".",
                "--listen",
                "127.0.0.1:0",
                "--cgi",
                "/cgi-bin/=/nonexistent",
            ],
            "CGI directory /nonexistent",
        ),
    ] {
        let out = run_bounded(flint().arg("serve").args(&args), WAIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.starts_with("flint: error: "), "{stderr}");
        assert_eq!(stderr.matches(says).count(), 1, "{args:?}: {stderr}");
        assert!(!stderr.contains("http://"), "no banner: {stderr}");
    }
    let out = run_bounded(flint().args(["serve", ".", "--listen", "a b"]), WAIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(stderr.contains("expected PORT, HOST:PORT"), "{stderr}");
    let out = run_bounded(flint().args(["serve", ".", "--fastcgi", "*.php"]), WAIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(stderr.contains("expected PATTERN=ADDR"), "{stderr}");
    let out = run_bounded(
        flint().args(["serve", ".", "--proxy-cacert", "ca.pem"]),
        WAIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(
        stderr.contains("no --proxy mount has an https:// upstream"),
        "{stderr}"
    );
    let out = run_bounded(
        flint().args(["serve", ".", "--proxy", "/api/=ftp://127.0.0.1:1"]),
        WAIT,
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "a usage error: {stderr}");
    assert!(
        stderr.contains("an upstream is http://HOST:PORT, https://HOST:PORT or unix:PATH"),
        "{stderr}"
    );
}

#[test]
fn proxy_forwards_its_prefix_and_the_exit_summary_counts_it() {
    let up_root = tempfile::tempdir().unwrap();
    std::fs::create_dir(up_root.path().join("api")).unwrap();
    std::fs::write(up_root.path().join("api/x"), "upstream").unwrap();
    let upstream = serve(
        &[up_root.path().to_str().unwrap(), "--listen", "127.0.0.1:0"],
        false,
    );
    let root = tempfile::tempdir().unwrap();
    let mount = format!("/api/=http://{}", upstream.addr);
    let (mut server, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1", "--proxy", &mount]),
    );
    assert_eq!(get(&server.addr, "/api/x"), (200, "upstream".into()));
    assert_eq!(get(&server.addr, "/api/nope").0, 404);
    let rest = stop_telling(&mut server, &rx);
    let line = rest
        .iter()
        .find(|l| l.contains("proxy: 2 requests on 1 new upstream connections"))
        .unwrap_or_else(|| panic!("no proxy line: {rest:?}"));
    // The reads of upstream connections (at least one per response) and the refusals at the
    // mount's own limit are said too.
    let reads: u64 = (line.split(" upstream reads)").next())
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no upstream reads in {line}"));
    assert!(reads >= 2, "{line}");
    assert!(line.contains(" 0 refused at max_in_flight (503)"), "{line}");
    drop(upstream);
}

#[test]
fn listen_takes_a_port_a_name_and_ipv6() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path(), "A");
    let root = dir.path().to_str().unwrap();
    for listen in ["0", "localhost:0", "127.0.0.1:0"] {
        let server = serve(&[root, "--listen", listen, "-t", "1"], false);
        let addr: SocketAddr = server.addr.parse().unwrap();
        assert!(addr.ip().is_loopback(), "{listen}: {addr}");
        assert_ne!(addr.port(), 0);
        assert_eq!(get(&server.addr, "/who").1, "A", "{listen}");
    }
    if std::net::TcpListener::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback here; [::1] skipped");
        return;
    }
    let server = serve(&[root, "--listen", "[::1]:0", "-t", "2"], false);
    assert!(server.addr.starts_with("[::1]:"), "{}", server.addr);
    assert_eq!(get(&server.addr, "/who").1, "A");
}

#[test]
fn access_log_dash_writes_to_stdout() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path(), "A");
    let root = dir.path().to_str().unwrap();
    let mut server = serve(
        &[
            root,
            "--listen",
            "127.0.0.1:0",
            "-t",
            "1",
            "--access-log",
            "-",
        ],
        true,
    );
    assert_eq!(get(&server.addr, "/who").0, 200);
    assert_eq!(get(&server.addr, "/missing").0, 404);
    assert!(terminate(&mut server).success());
    let log = stdout_of(&mut server.child);
    assert!(log.contains("\"GET /who HTTP/1.0\" 200 1"), "{log}");
    assert!(log.contains("\"GET /missing HTTP/1.0\" 404"), "{log}");
    assert!(
        !Path::new("-").exists() && !dir.path().join("-").exists(),
        "no file named -"
    );
}

#[test]
fn dotfiles_and_listings_follow_their_flags() {
    let dir = tempfile::tempdir().unwrap();
    site(dir.path(), "A");
    let root = dir.path().to_str().unwrap();
    let plain = serve(&[root, "--listen", "127.0.0.1:0", "-t", "1"], false);
    assert_eq!(get(&plain.addr, "/.env").0, 404);
    assert_eq!(get(&plain.addr, "/sub/").0, 404);
    drop(plain);
    let open = serve(
        &[
            root,
            "--listen",
            "127.0.0.1:0",
            "-t",
            "1",
            "--dotfiles",
            "--autoindex",
        ],
        false,
    );
    assert_eq!(get(&open.addr, "/.env"), (200, "SECRET=1".to_string()));
    let (status, html) = get(&open.addr, "/sub/");
    assert_eq!(status, 200);
    assert!(
        html.contains("href=\"%3Cx%3E.txt\">&lt;x&gt;.txt</a>"),
        "{html}"
    );
}

#[test]
fn cgi_runs_a_program_and_the_exit_summary_counts_it() {
    let root = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    let hello = scripts.path().join("hello");
    std::fs::write(
        &hello,
        "#!/bin/sh\nprintf 'Content-Type: text/plain\\r\\n\\r\\nhi %s\\n' \"$PATH_INFO\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&hello, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mount = format!("/cgi-bin/={}", scripts.path().display());
    let (mut server, rx) = serve_telling(
        flint()
            .args([
                "serve",
                root.path().to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
                "-t",
                "1",
            ])
            .args(["--cgi", &mount]),
    );
    assert_eq!(
        get(&server.addr, "/cgi-bin/hello/there"),
        (200, "hi /there\n".into())
    );
    let rest = stop_telling(&mut server, &rx);
    assert!(
        rest.iter()
            .any(|l| l.contains("CGI 1 requests, 1 programs started")),
        "{rest:?}"
    );
}

#[test]
fn a_gateway_failure_writes_one_line_naming_what_failed_and_the_request() {
    let root = tempfile::tempdir().unwrap();
    let scripts = tempfile::tempdir().unwrap();
    for (name, body) in [
        ("sit", "exec sleep 30\n"),
        ("bad", "echo this is not a header\necho\n"),
    ] {
        let path = scripts.path().join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}")).unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
    }
    // A FastCGI application that takes its connections and never answers.
    let socket = scripts.path().join("mute.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        while let Ok((c, _)) = listener.accept() {
            kept.push(c);
        }
    });
    std::fs::write(root.path().join("x.php"), "").unwrap();
    let cgi = format!("/cgi-bin/={}", scripts.path().display());
    let fastcgi = format!("*.php=unix:{}", socket.display());
    // What must time out, on a server whose programs have 1 s: a program that never answers
    // and an application that never does, so that nothing but the wall time ends them.
    let (mut short, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1", "--cgi-timeout", "1s"])
            .args(["--cgi", &cgi, "--fastcgi", &fastcgi]),
    );
    assert_eq!(get(&short.addr, "/cgi-bin/sit?a=1").0, 504);
    assert_eq!(get(&short.addr, "/x.php").0, 504);
    let timed_out = stop_telling(&mut short, &rx);
    // What must not, on a server with the default wall time (30 s, past the client's wait):
    // however long the shell takes to start on a busy machine, its bad head is the answer.
    let (mut long, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1", "--cgi", &cgi]),
    );
    assert_eq!(get(&long.addr, "/cgi-bin/bad").0, 502);
    let bad_head = stop_telling(&mut long, &rx);
    let sit = scripts.path().join("sit");
    let bad = scripts.path().join("bad");
    for (rest, what, request) in [
        (
            &timed_out,
            format!("{}: timed out", sit.display()),
            "GET /cgi-bin/sit?a=1 HTTP/1.0",
        ),
        (
            &timed_out,
            format!("FastCGI unix:{}: timed out", socket.display()),
            "GET /x.php HTTP/1.0",
        ),
        (
            &bad_head,
            format!("{}: a response head: ", bad.display()),
            "GET /cgi-bin/bad HTTP/1.0",
        ),
    ] {
        let lines: Vec<&String> = (rest.iter())
            .filter(|l| l.contains(&format!("request: \"{request}\"")))
            .collect();
        assert_eq!(lines.len(), 1, "one line for {request}: {rest:?}");
        assert!(lines[0].contains(&what), "{what} in {lines:?}");
    }
    // Each server's failures are exactly its own: the program started and the application
    // reached both timed out, and the bad head was a bad head, not a timeout.
    for (rest, counts) in [
        (
            &timed_out,
            "CGI 1 requests, 1 programs started; FastCGI 1 requests on 1 new connections \
             (0 sent again); failures: 0 busy (503), 0 not started, 0 at the FastCGI application \
             (502), 2 timed out, 0 bad heads (502), 0 died",
        ),
        (
            &bad_head,
            "CGI 1 requests, 1 programs started; FastCGI 0 requests on 0 new connections \
             (0 sent again); failures: 0 busy (503), 0 not started, 0 at the FastCGI application \
             (502), 0 timed out, 1 bad heads (502), 0 died",
        ),
    ] {
        assert!(
            rest.iter().any(|l| l.contains(counts)),
            "{counts} in {rest:?}"
        );
    }
}

#[test]
fn a_proxied_request_that_fails_at_its_upstream_is_named_in_its_line() {
    // An upstream that reads each request's head, then closes without an answer.
    let upstream = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let up = upstream.local_addr().unwrap();
    std::thread::spawn(move || {
        while let Ok((c, _)) = upstream.accept() {
            let mut head = Vec::new();
            let mut r = BufReader::new(c);
            while !head.ends_with(b"\r\n\r\n") && r.read_until(b'\n', &mut head).unwrap_or(0) > 0 {}
        }
    });
    let root = tempfile::tempdir().unwrap();
    let mount = format!("/api/=http://{up}");
    let (mut server, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1", "--proxy", &mount]),
    );
    assert_eq!(get(&server.addr, "/api/x?a=1").0, 502);
    let rest = stop_telling(&mut server, &rx);
    let what = format!("proxy {up}: the upstream closed the connection before its response head");
    let lines: Vec<&String> = (rest.iter())
        .filter(|l| l.contains("request: \"GET /api/x?a=1 HTTP/1.0\""))
        .collect();
    assert_eq!(lines.len(), 1, "one line for the request: {rest:?}");
    assert!(lines[0].contains(&what), "{what} in {lines:?}");
}

#[test]
fn basic_auth_protects_its_prefix_in_its_realm_and_the_exit_summary_counts_it() {
    let root = tempfile::tempdir().unwrap();
    std::fs::create_dir(root.path().join("private")).unwrap();
    std::fs::write(root.path().join("private/x"), "x").unwrap();
    std::fs::write(root.path().join("open"), "o").unwrap();
    let file = root.path().join(".htpasswd");
    // `htpasswd -nbB u p`.
    std::fs::write(
        &file,
        "u:$2y$05$R9ubg3UY5SMx5nrVMl7vXO/xxJhNvlMcqx3Ad3WR84cUYM5yg3AyW\n",
    )
    .unwrap();
    let zone = format!("/private/={}", file.display());
    let (mut server, rx) = serve_telling(
        flint()
            .args([
                "serve",
                root.path().to_str().unwrap(),
                "--listen",
                "127.0.0.1:0",
            ])
            .args([
                "-t",
                "1",
                "--basic-auth",
                &zone,
                "--auth-realm",
                "the back room",
            ]),
    );
    let ask = |authorization: &str| {
        let addr: SocketAddr = server.addr.parse().unwrap();
        let mut s = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
        s.set_read_timeout(Some(WAIT)).unwrap();
        write!(s, "GET /private/x HTTP/1.0\r\n{authorization}\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).expect("read response");
        out
    };
    let challenged = ask("");
    assert!(challenged.starts_with("HTTP/1.1 401 "), "{challenged}");
    assert!(
        challenged
            .contains("\r\nWWW-Authenticate: Basic realm=\"the back room\", charset=\"UTF-8\"\r\n"),
        "{challenged}"
    );
    // "u:p" in base64.
    let ok = ask("Authorization: Basic dTpw\r\n");
    assert!(
        ok.starts_with("HTTP/1.1 200 ") && ok.ends_with("\r\n\r\nx"),
        "{ok}"
    );
    assert_eq!(get(&server.addr, "/open"), (200, "o".into()));
    let rest = stop_telling(&mut server, &rx);
    assert!(
        rest.iter().any(|l| l.contains(
            "Basic authentication: 1 requests let in (0 of them without a hash check), 1 without credentials (401)"
        )),
        "{rest:?}"
    );
}

#[test]
fn the_exit_summary_s_connections_by_protocol_add_up() {
    // A connection that sends nothing is in no protocol: the line names it apart, so its
    // parts add up to the connections accepted.
    let root = tempfile::tempdir().unwrap();
    site(root.path(), "one");
    let (mut server, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1"]),
    );
    // Accepted before the GET's connection (one listener, one thread, in order).
    let addr: SocketAddr = server.addr.parse().unwrap();
    drop(TcpStream::connect_timeout(&addr, WAIT).expect("connect"));
    assert_eq!(get(&server.addr, "/who"), (200, "one".into()));
    let rest = stop_telling(&mut server, &rx);
    let line = rest
        .iter()
        .find(|l| l.contains("stopped after"))
        .unwrap_or_else(|| panic!("no summary: {rest:?}"));
    assert!(
        line.contains("on 2 connections (1 HTTP/1.x, 0 HTTP/2, 1 closed before choosing one)"),
        "{line}"
    );
}

#[test]
fn the_exit_summary_names_the_connections_refused_at_max_connections_apart() {
    // One connection allowed, busy with a second request's head: the next is accepted and
    // closed at once. It is neither HTTP/1.x nor "closed before choosing one".
    let root = tempfile::tempdir().unwrap();
    site(root.path(), "one");
    let config = root.path().join("limits.toml");
    std::fs::write(&config, "max_connections = 1\n").unwrap();
    let (mut server, rx) = serve_telling(
        flint()
            .args(["serve", root.path().to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0", "-t", "1", "--config"])
            .arg(&config),
    );
    let addr: SocketAddr = server.addr.parse().unwrap();
    let mut busy = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    busy.set_read_timeout(Some(WAIT)).unwrap();
    // Its first response read means the server has read the second head's start too.
    busy.write_all(b"GET /who HTTP/1.1\r\nHost: t\r\n\r\nGET /who HTTP/1.1\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"\r\n\r\none") {
        let n = busy.read(&mut buf).expect("the first response");
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let mut refused = TcpStream::connect_timeout(&addr, WAIT).expect("connect");
    refused.set_read_timeout(Some(WAIT)).unwrap();
    let _ = refused.write_all(b"GET /who HTTP/1.1\r\nHost: t\r\n\r\n");
    match refused.read(&mut buf) {
        Ok(0) => {}
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        other => panic!("the second connection was not refused: {other:?}"),
    }
    drop(busy);
    let rest = stop_telling(&mut server, &rx);
    let line = rest
        .iter()
        .find(|l| l.contains("stopped after"))
        .unwrap_or_else(|| panic!("no summary: {rest:?}"));
    assert!(
        line.contains(
            "after 1 requests on 2 connections (1 HTTP/1.x, 0 HTTP/2, 1 refused at max_connections)"
        ),
        "{line}"
    );
}

#[test]
fn more_threads_than_the_open_file_limit_holds_names_the_threads() {
    // Under a hard limit of 40 open files, 64 threads' listening sockets cannot all open: the
    // line names the thread count and the limit, not the address (port 0 did not fail).
    let dir = tempfile::tempdir().unwrap();
    let mut sh = std::process::Command::new("sh");
    sh.arg("-c")
        .arg(r#"ulimit -n 40 && exec "$0" serve "$1" --listen 127.0.0.1:0 -t 64"#)
        .arg(env!("CARGO_BIN_EXE_flint"))
        .arg(dir.path());
    let out = run_bounded(&mut sh, WAIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("64 threads need more open files than this process may have"),
        "{stderr}"
    );
    assert!(!stderr.contains("cannot listen on"), "{stderr}");
}
