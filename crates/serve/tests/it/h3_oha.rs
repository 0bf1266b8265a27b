//! A third-party HTTP/3 client of flint serve: oha (built with its `http3` feature: h3 over
//! quinn and rustls, `scripts/install-oha.sh`) fetches a 1 KiB file and a 300 KiB one, several
//! requests at a time on each of a few QUIC connections, trusting only the test's CA. oha's
//! counts (every request a 200, no error, the body bytes) must equal what flint serve's access
//! log holds: one `HTTP/3.0` line per request with the file's length. oha over HTTP/3 never
//! falls back to TCP: with serve's HTTP/3 off no handshake is answered, oha does not end, and
//! the test fails at its bound (seen once, with `http3 = Some(false)`).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::h3_support::Certs;

/// oha's run must end within this (a few hundred small requests take well under a second).
const BOUND: Duration = Duration::from_secs(120);

/// oha: `$OHA`, else the one on the PATH, else scripts/install-oha.sh's /usr/local/bin/oha.
fn oha() -> PathBuf {
    if let Some(p) = std::env::var_os("OHA") {
        return PathBuf::from(p);
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("oha"))
            .find(|p| p.is_file())
    });
    let oha = on_path.unwrap_or_else(|| PathBuf::from("/usr/local/bin/oha"));
    assert!(
        oha.is_file(),
        "oha is not installed: run scripts/install-oha.sh (as root; it builds oha with HTTP/3)"
    );
    oha
}

/// Stops the child by its PID when dropped (a failed assertion included).
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs oha to the end, within [`BOUND`], its output into files under `dir` (a pipe could fill
/// and stall it); hands back whether it succeeded, its stdout and its stderr.
fn run_oha(args: &[String], dir: &Path) -> (bool, Vec<u8>, String) {
    let (out, err) = (dir.join("oha.out"), dir.join("oha.err"));
    let child = Command::new(oha())
        .args(args)
        .stdin(Stdio::null())
        .stdout(File::create(&out).expect("oha.out"))
        .stderr(File::create(&err).expect("oha.err"))
        .spawn()
        .expect("start oha");
    let mut running = Running(child);
    let started = Instant::now();
    let status = loop {
        match running.0.try_wait().expect("wait for oha") {
            Some(status) => break status,
            None if started.elapsed() > BOUND => panic!("oha did not end within {BOUND:?}"),
            None => std::thread::sleep(Duration::from_millis(20)),
        }
    };
    let stderr = String::from_utf8_lossy(&std::fs::read(&err).unwrap()).into_owned();
    (status.success(), std::fs::read(&out).unwrap(), stderr)
}

/// oha's JSON report of `n` GETs of `path` over HTTP/3: `conns` connections, `streams`
/// requests at a time on each.
fn fetch(port: u16, ca: &Path, path: &str, n: u64, conns: u32, streams: u32) -> serde_json::Value {
    let args: Vec<String> = [
        "--no-tui",
        "--output-format",
        "json",
        "--http-version",
        "3",
        "--cacert",
        &ca.display().to_string(),
        "-n",
        &n.to_string(),
        "-c",
        &conns.to_string(),
        "-p",
        &streams.to_string(),
        &format!("https://127.0.0.1:{port}{path}"),
    ]
    .map(str::to_owned)
    .to_vec();
    let (ok, stdout, stderr) = run_oha(&args, ca.parent().unwrap());
    assert!(
        !stderr.contains("not been built with HTTP/3"),
        "{}: built without HTTP/3: run scripts/install-oha.sh (it builds oha with --features http3)",
        oha().display()
    );
    assert!(ok, "oha failed: {stderr}");
    serde_json::from_slice(&stdout)
        .unwrap_or_else(|e| panic!("oha's JSON: {e}: {}", String::from_utf8_lossy(&stdout)))
}

/// Counts by name (a status, an error's text), sorted by name.
type Counts = Vec<(String, u64)>;

/// What oha counted of a run: requests by status, errors by text, body bytes.
struct Counted {
    statuses: Counts,
    errors: Counts,
    bytes: u64,
}

fn counted(report: &serde_json::Value) -> Counted {
    let pairs = |key: &str| -> Counts {
        let map = report[key].as_object();
        let map = map.unwrap_or_else(|| panic!("no {key} in oha's report: {report}"));
        let mut v: Counts = (map.iter())
            .map(|(k, n)| (k.clone(), n.as_u64().unwrap()))
            .collect();
        v.sort();
        v
    };
    let bytes = report["summary"]["totalData"].as_u64();
    Counted {
        statuses: pairs("statusCodeDistribution"),
        errors: pairs("errorDistribution"),
        bytes: bytes.unwrap_or_else(|| panic!("no summary.totalData: {report}")),
    }
}

#[test]
fn oha_over_http3_gets_every_file_whole_and_serve_logs_each_request() {
    let certs = Certs::new();
    let log = certs.ca.dir().join("access.log");
    let log_path = log.clone();
    let srv = certs.serve(move |c| c.access_log = Some(log_path));
    let port = srv.addr.port();

    // (path, length, requests, connections, streams at a time on each)
    let runs: [(&str, u64, u64, u32, u32); 2] = [
        ("/1k.bin", 1024, 400, 4, 10),
        ("/300k.bin", 300 * 1024, 60, 2, 5),
    ];
    for &(path, len, n, conns, streams) in &runs {
        let report = fetch(port, &certs.ca.pem, path, n, conns, streams);
        let got = counted(&report);
        assert_eq!(got.errors, vec![], "{path}: oha's errors");
        assert_eq!(
            got.statuses,
            vec![("200".to_owned(), n)],
            "{path}: statuses"
        );
        assert_eq!(got.bytes, n * len, "{path}: every body whole");
    }
    srv.stop();

    let text = std::fs::read_to_string(&log).expect("the access log");
    let lines: Vec<&str> = text.lines().collect();
    let all: u64 = runs.iter().map(|r| r.2).sum();
    assert_eq!(lines.len() as u64, all, "one line per request:\n{text}");
    for &(path, len, n, ..) in &runs {
        // The common log format ends with the status and the body's length.
        let line = format!("\"GET {path} HTTP/3.0\" 200 {len}");
        let logged = lines.iter().filter(|l| l.ends_with(&line)).count() as u64;
        assert_eq!(logged, n, "{path}: lines with {line:?}");
    }
}
