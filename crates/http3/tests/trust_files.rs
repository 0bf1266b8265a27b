//! A `--cacert` that cannot serve is refused with the file's own trouble (as flint's TCP side
//! says it), not BoringSSL's bare failure.

use http3::{ClientConfig, Limits, Trust};
use std::path::Path;

fn refusal(path: &Path) -> String {
    let trust = Trust {
        cacert: Some(path.to_owned()),
        insecure: false,
    };
    match ClientConfig::new(&trust, &Limits::default()) {
        Ok(_) => panic!("{} was taken", path.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn a_missing_cacert_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nonexistent.pem");
    let why = refusal(&path);
    assert!(
        why.starts_with(&format!("--cacert {}", path.display())),
        "{why}"
    );
    assert!(why.contains("No such file or directory"), "{why}");
    assert!(!why.contains("TlsFail"), "{why}");
}

#[test]
fn a_cacert_without_a_certificate_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.pem");
    std::fs::write(&path, "not a certificate\n").unwrap();
    let why = refusal(&path);
    assert!(why.contains("no certificate in it"), "{why}");
}
