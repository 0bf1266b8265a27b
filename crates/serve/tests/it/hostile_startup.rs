//! `flint serve` reads its certificate and key within bounds: a device (`/dev/zero`, which never
//! ends; `/dev/urandom`), a FIFO (whose open would wait for a writer), a file larger than any
//! chain, or an encrypted key is one clear line and exit status 2, at once, not a hang or a read
//! into gigabytes. Runs the `flint` executable (built by `cargo build -p flint`, or the
//! workspace's tests).

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::tls_support::Certs;

/// A refusal is immediate; this bounds a hang.
const LIMIT: Duration = Duration::from_secs(20);

/// Runs `flint serve` with the arguments `args` adds, which must exit on its own (within
/// `LIMIT`, else it is killed by its PID and the test fails); returns its status and stderr.
fn serve_exit(args: impl FnOnce(&mut Command) -> &mut Command) -> (Option<i32>, String) {
    let mut cmd = Command::new(test_support::flint_bin());
    args(cmd.arg("serve"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start flint");
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill(); // by its PID: this child alone
            let _ = child.wait();
            panic!("still running after {LIMIT:?}: {cmd:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (status.code(), err)
}

/// Runs `flint serve` with this certificate and key; returns its status and stderr.
fn serve_with(root: &Path, cert: &Path, key: &Path) -> (Option<i32>, String) {
    serve_exit(|c| {
        c.arg(root)
            .args(["--listen", "127.0.0.1:0", "--threads", "1", "--tls-cert"])
            .arg(cert)
            .arg("--tls-key")
            .arg(key)
    })
}

fn refused(root: &Path, cert: &Path, key: &Path, says: &str) {
    let (code, err) = serve_with(root, cert, key);
    assert_eq!(code, Some(2), "{cert:?} {key:?}: {err}");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 1, "one line: {err}");
    assert!(
        lines[0].starts_with("flint: error: TLS ") && lines[0].contains(says),
        "{cert:?} {key:?}: {err}"
    );
}

#[test]
fn devices_fifos_huge_files_and_encrypted_keys_are_refused_with_one_line() {
    let certs = Certs::new(false);
    let root = certs.dir();
    let (cert, key) = (certs.cert.as_path(), certs.key.as_path());
    let zero = Path::new("/dev/zero");
    let urandom = Path::new("/dev/urandom");
    refused(root, cert, zero, "TLS key /dev/zero: not a regular file");
    refused(
        root,
        urandom,
        key,
        "TLS certificate /dev/urandom: not a regular file",
    );

    let fifo = root.join("key.fifo");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    refused(root, cert, &fifo, "not a regular file");

    // Sparse: 2 MiB of size, no blocks.
    let huge = root.join("huge.pem");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    refused(root, &huge, key, "larger than 1024 KiB");

    let encrypted = root.join("encrypted.pem");
    std::fs::write(
        &encrypted,
        "-----BEGIN ENCRYPTED PRIVATE KEY-----\nMIIBvTBXBgkqhkiG9w0BBQ0wSjApBgkqhkiG9w0BBQwwHAQI\n-----END ENCRYPTED PRIVATE KEY-----\n",
    )
    .unwrap();
    refused(root, cert, &encrypted, "is encrypted");
}

#[test]
fn a_config_file_that_is_a_device_or_too_large_is_refused_with_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let huge = dir.path().join("huge.toml");
    std::fs::File::create(&huge)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    for (config, says) in [
        (Path::new("/dev/zero"), "/dev/zero: not a regular file"),
        (huge.as_path(), "larger than 1024 KiB"),
    ] {
        let (code, err) = serve_exit(|c| c.arg(dir.path()).arg("--config").arg(config));
        assert_eq!(code, Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with("flint: error: ") && err.contains(says),
            "{err}"
        );
    }
}
