//! The binary end to end: what a user types, what a user sees.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn flint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flint"))
}

/// Output of a command that must finish within `limit` (killed and failed otherwise).
fn run_bounded(cmd: &mut Command, limit: Duration) -> std::process::Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint");
    let start = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            panic!("flint did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `flint serve` on a kernel-chosen port; returns the child and its address (read from
/// the line it prints on stderr).
fn start_server(root: &Path) -> (Child, String) {
    start_server_with(root, true)
}

/// `drain`: keep reading the server's stderr; otherwise close it once the address is read.
fn start_server_with(root: &Path, drain: bool) -> (Child, String) {
    let mut child = flint()
        .args([
            "serve",
            root.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
        ])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn flint serve");
    let mut stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut byte = [0u8; 1];
    while !seen.ends_with(b"\n") {
        assert!(Instant::now() < deadline, "flint serve printed no address");
        if stderr.read(&mut byte).expect("read stderr") == 0 {
            panic!("flint serve exited: {}", String::from_utf8_lossy(&seen));
        }
        seen.push(byte[0]);
    }
    if drain {
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
    } else {
        drop(stderr);
    }
    let line = String::from_utf8(seen).unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .expect("address")
        .to_string();
    (child, addr)
}

fn get(addr: &str, path: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.0\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read response");
    out
}

#[test]
fn run_with_defaults_prints_the_webstone_report() {
    let out = run_bounded(
        flint().args(["run", "-d", "1s", "--quiet"]),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("WEBSTONE number"), "{stdout}");
    let pages = stdout
        .lines()
        .find_map(|l| {
            l.trim()
                .strip_prefix("Total number of pages retrieved from server:")
        })
        .expect("a pages line")
        .trim()
        .parse::<u64>()
        .expect("a page count");
    assert!(pages > 0, "no pages in a 1 s run:\n{stdout}");
}

#[test]
fn bench_json_matches_the_schema_and_its_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.html"), vec![b'a'; 1000]).unwrap();
    let (mut server, addr) = start_server(dir.path());
    let json_path = dir.path().join("out.json");
    let out = run_bounded(
        flint()
            .args([
                "bench",
                &format!("http://{addr}"),
                "/a.html",
                "-c",
                "4",
                "-n",
                "200",
                "--quiet",
            ])
            .arg("--json")
            .arg(&json_path)
            .arg("--html")
            .arg(dir.path().join("out.html")),
        Duration::from_secs(30),
    );
    server.kill().ok();
    server.wait().ok();
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json_path).unwrap()).unwrap();
    let schema: serde_json::Value =
        serde_json::from_str(include_str!("../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema is a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "output does not match docs/bench-json.schema.json: {errors:#?}"
    );
    let s = &json["summary"];
    assert_eq!(s["pages"], 200);
    assert_eq!(s["requests"], 200);
    assert_eq!(s["errors"], 0);
    assert_eq!(s["bytes_body"], 200 * 1000);
    let html = std::fs::read_to_string(dir.path().join("out.html")).expect("--html wrote a page");
    assert!(html.contains("<svg"), "the page has no chart");
    assert!(
        !html.contains("src=\"http"),
        "the page must be self-contained"
    );
}

#[test]
fn serve_exits_cleanly_on_sigterm_and_stops_accepting() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "hello").unwrap();
    let (mut server, addr) = start_server(dir.path());
    assert!(get(&addr, "/").ends_with("hello"));
    // SAFETY: kill(2) on the pid of a child this test spawned and has not yet reaped.
    let rc = unsafe { libc::kill(server.id() as libc::pid_t, libc::SIGTERM) };
    assert_eq!(rc, 0);
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "flint serve did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "exit status {status:?}");
    assert!(
        TcpStream::connect(&addr).is_err(),
        "still accepting after SIGTERM"
    );
}

#[test]
fn serve_survives_a_closed_stderr() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("index.html"), "hello").unwrap();
    let (mut server, addr) = start_server_with(dir.path(), false);
    assert!(get(&addr, "/").ends_with("hello"));
    // SAFETY: kill(2) on the pid of a child this test spawned and has not yet reaped.
    assert_eq!(
        unsafe { libc::kill(server.id() as libc::pid_t, libc::SIGTERM) },
        0
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "flint serve did not exit on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        status.success(),
        "writing to a closed stderr killed the server: {status:?}"
    );
}

#[test]
fn malformed_workload_names_its_line_and_nothing_starts() {
    let dir = tempfile::tempdir().unwrap();
    let wl = dir.path().join("filelist");
    std::fs::write(&wl, "2\n40 1\n/a.html\n60 x\n/b.html\n").unwrap();
    let out = run_bounded(
        flint()
            .args(["bench", "http://127.0.0.1:9", "-w"])
            .arg(&wl)
            .args(["-d", "1s"]),
        Duration::from_secs(10),
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("filelist:4"), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "a report was printed for a run that must not start"
    );
}

#[test]
fn fileset_filelist_sizes_files_by_their_names() {
    let dir = tempfile::tempdir().unwrap();
    let list = dir.path().join("filelist");
    std::fs::write(&list, "1\n100 2\n/file500.html\n/img/file3k.gif\n").unwrap();
    let docs = dir.path().join("docs");
    let out = run_bounded(
        flint()
            .arg("fileset")
            .arg(&docs)
            .arg("--filelist")
            .arg(&list),
        Duration::from_secs(10),
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::metadata(docs.join("file500.html")).unwrap().len(),
        500
    );
    assert_eq!(
        std::fs::metadata(docs.join("img/file3k.gif"))
            .unwrap()
            .len(),
        3072
    );
}
