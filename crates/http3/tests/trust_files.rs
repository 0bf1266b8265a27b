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

/// The test CA's certificate written with `label` in place of PEM's `CERTIFICATE`.
fn ca_labelled(dir: &Path, label: &str) -> std::path::PathBuf {
    let ca = test_support::certs::TestCa::new("flint http3 PEM label test CA");
    let pem = std::fs::read_to_string(&ca.pem).unwrap();
    let path = dir.join(format!("{}.pem", label.replace(' ', "_")));
    std::fs::write(
        &path,
        pem.replace("CERTIFICATE-----", &format!("{label}-----")),
    )
    .unwrap();
    path
}

#[test]
fn a_cacert_in_the_other_pem_labels_boringssl_reads_is_taken() {
    let dir = tempfile::tempdir().unwrap();
    for label in ["X509 CERTIFICATE", "TRUSTED CERTIFICATE"] {
        let trust = Trust {
            cacert: Some(ca_labelled(dir.path(), label)),
            insecure: false,
        };
        if let Err(e) = ClientConfig::new(&trust, &Limits::default()) {
            panic!("BEGIN {label}: {e}");
        }
    }
}

#[test]
fn a_cacert_whose_certificate_does_not_parse_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("broken.pem");
    std::fs::write(
        &path,
        "-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydGlmaWNhdGU=\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    let why = refusal(&path);
    assert!(
        why.starts_with(&format!("--cacert {}", path.display())),
        "{why}"
    );
    assert!(
        why.contains("no certificate BoringSSL can read in it"),
        "{why}"
    );
}
