//! What the many-hosts tests share: a `flint serve` with an access log (the server-side count),
//! a bounded wait for that count, and the bench command line.

#![allow(dead_code)] // each test binary uses its own subset

use crate::common::{flint, started_server, Server};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const LIMIT: Duration = Duration::from_secs(120);

pub fn exe() -> &'static str {
    env!("CARGO_BIN_EXE_flint")
}

/// A server over one 1 KiB file with an access log, and the directory holding both.
pub fn server() -> (tempfile::TempDir, Server) {
    server_on("127.0.0.1:0")
}

/// [`server`], listening on `listen`.
pub fn server_on(listen: &str) -> (tempfile::TempDir, Server) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("www");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("a.html"), vec![b'x'; 1024]).unwrap();
    let server = serve_logged(&root, &dir.path().join("access.log"), listen);
    (dir, server)
}

/// `flint serve ROOT` on `listen`, one thread, logging each request to `log`.
pub fn serve_logged(root: &Path, log: &Path, listen: &str) -> Server {
    let child = flint()
        .args(["serve", root.to_str().unwrap(), "--listen", listen])
        .args(["--threads", "1", "--access-log", log.to_str().unwrap()])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    started_server(child, "http", true)
}

/// A `--launch` template that runs every host's worker on this machine.
pub fn local_launch() -> String {
    format!("{} worker", exe())
}

/// A `--launch` template under which host `victim`'s worker is killed (SIGKILL) `after` seconds
/// after it starts, its stdin kept (a background job's would be /dev/null); every other host's
/// worker runs as usual.
pub fn launch_killing_victim(after: &str) -> String {
    format!(
        "if [ {{host}} = victim ]; then exec 3<&0; {exe} worker <&3 & pid=$!; sleep {after}; kill -9 $pid; wait; exit 137; fi; exec {exe} worker",
        exe = exe()
    )
}

/// Waits (bounded) until the access log holds `n` lines (it is flushed once a second).
pub fn served(dir: &Path, n: usize) -> usize {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let lines = std::fs::read_to_string(dir.join("access.log"))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines >= n || Instant::now() >= deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

pub fn bench(server: &Server, args: &[&str]) -> Command {
    let mut cmd = flint();
    cmd.args(["bench", &format!("http://{}/a.html", server.addr)])
        .args(["-q", "--report", "summary"])
        .args(args);
    cmd
}

pub fn read_json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

pub fn sum(hosts: &[Value], key: &str) -> u64 {
    hosts.iter().map(|h| h[key].as_u64().unwrap()).sum()
}

/// Requests in the access log by client address (its first field).
pub fn served_by(dir: &Path) -> std::collections::BTreeMap<String, u64> {
    let text = std::fs::read_to_string(dir.join("access.log")).unwrap_or_default();
    let mut by = std::collections::BTreeMap::new();
    for line in text.lines() {
        let client = line.split_whitespace().next().unwrap_or_default();
        *by.entry(client.to_owned()).or_insert(0) += 1;
    }
    by
}
