//! Headless Chromium for the tests that hold flint's output to a real browser (the report's
//! charts, `flint discover`'s requests): the binary, found or named by `FLINT_CHROMIUM`; one run
//! on a URL with a fresh profile, in its own process group (the browser's helpers, zygote,
//! renderer and network service, are stopped with it whatever happens), every wait bounded.
//!
//! Never skipped when Chromium is missing: a test that needs it fails saying how to install it
//! (`scripts/install-browser.sh`, which the test command runs).

use lab_process::{Group, StopPolicy};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::Duration;

/// How long one page load may take under a loaded machine before the test fails.
const RUN_LIMIT: Duration = Duration::from_secs(120);

/// The flags every run has: headless, nothing of the browser's own traffic (updates, sync,
/// QUIC), no extensions or scroll bars.
const HEADLESS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--hide-scrollbars",
];

/// Chromium from `FLINT_CHROMIUM`, else `chromium` on PATH; panics saying how to install it.
pub fn binary() -> PathBuf {
    if let Some(p) = std::env::var_os("FLINT_CHROMIUM") {
        return PathBuf::from(p);
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|d| d.join("chromium"))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!(
                "chromium not found on PATH: install it with `sudo scripts/install-browser.sh` \
                 (apt-get install chromium), or point FLINT_CHROMIUM at a Chromium binary"
            )
        })
}

/// What a run printed.
pub struct Output {
    /// What it wrote to standard output (the document with `--dump-dom`); empty if that was
    /// not UTF-8.
    pub stdout: String,
    /// What it wrote to standard error: its log, with the page's console messages in it under
    /// `--enable-logging=stderr`.
    pub stderr: String,
}

/// Runs headless Chromium on `url` with `extra` flags and a fresh profile under `scratch`;
/// panics if it does not finish within two minutes or does not exit successfully.
pub fn run(url: &str, extra: &[String], scratch: &Path) -> Output {
    let profile = tempfile::tempdir_in(scratch).expect("chromium profile dir");
    let mut cmd = Command::new(binary());
    cmd.args(HEADLESS)
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut browser = Group::spawn(
        &mut cmd,
        None,
        StopPolicy::terminate(Duration::from_secs(5)),
    )
    .expect("start chromium");
    // Both pipes drained on their own threads, so that a full pipe cannot stall the browser.
    let out = drain(browser.child_mut().stdout.take().expect("stdout"));
    let err = drain(browser.child_mut().stderr.take().expect("stderr"));
    let status: Option<ExitStatus> = browser.wait_exit(RUN_LIMIT);
    // The group: helpers still holding the pipes end with it, so the reads below end too.
    browser.stop();
    let output = Output {
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    };
    let Some(status) = status else {
        panic!(
            "chromium did not finish within {} s: {}",
            RUN_LIMIT.as_secs(),
            output.stderr
        );
    };
    assert!(
        status.success(),
        "chromium failed ({status}):\n{}",
        output.stderr
    );
    output
}

fn drain(mut pipe: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        let _ = pipe.read_to_string(&mut s);
        s
    })
}
