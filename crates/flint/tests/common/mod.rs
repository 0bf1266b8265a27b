//! Helpers shared by the binary's end-to-end tests: the executable, bounded runs and waits, and
//! a `flint serve` to run against.

#![allow(dead_code)] // each test binary uses its own subset

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub fn flint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_flint"))
}

/// Output of a command that must finish within `limit` (killed and failed otherwise).
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn flint");
    // Drain both pipes while waiting, so a chatty child cannot block on a full pipe.
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let Some(status) = wait_exit(&mut child, limit) else {
        let _ = child.kill();
        let _ = child.wait();
        panic!("flint did not finish within {limit:?}");
    };
    Output {
        status,
        stdout: out_t.join().unwrap(),
        stderr: err_t.join().unwrap(),
    }
}

/// Waits at most `limit` for `child` to exit; None if it is still running then.
pub fn wait_exit(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return Some(status);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A `flint serve` killed when the test ends, passed or not.
pub struct Server {
    pub child: Child,
    pub addr: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `flint serve` on a kernel-chosen port with `threads` threads; its address is read from the
/// line it prints on stderr, which is then drained.
pub fn start_server(root: &Path, threads: u32) -> Server {
    start_server_with(root, threads, true)
}

/// `drain`: keep reading the server's stderr; otherwise close it once the address is read.
pub fn start_server_with(root: &Path, threads: u32, drain: bool) -> Server {
    let mut child = flint()
        .args(["serve", root.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--threads", &threads.to_string()])
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
    Server { child, addr }
}
