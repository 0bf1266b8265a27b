//! HTTPS against a self-signed certificate marked CA:TRUE, as `openssl req -x509` makes it:
//! trusted when given with --cacert (curl accepts it so), and otherwise refused with its reason
//! in the report and the JSON, the run stopped after its first second rather than failing every
//! handshake for the whole duration.

use crate::common;

use common::{flint, run_bounded, started_server, texts, Server};
use std::process::Stdio;
use std::time::{Duration, Instant};
use test_support::certs::{KeyKind, SelfSigned};

/// `flint serve` over HTTPS on a kernel-chosen port, killed on drop.
fn serve(cert: &SelfSigned) -> Server {
    std::fs::write(cert.dir().join("a.html"), b"hello").unwrap();
    let child = flint()
        .args([
            "serve",
            cert.dir().to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .args(["--threads", "1", "--tls-cert"])
        .arg(&cert.cert)
        .arg("--tls-key")
        .arg(&cert.key)
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("spawn flint serve");
    started_server(child, "https", true)
}

#[test]
fn a_self_signed_ca_true_certificate_given_with_cacert_is_trusted() {
    let cert = SelfSigned::marked_ca(KeyKind::EcdsaP256);
    let server = serve(&cert);
    let url = format!("https://localhost:{}/a.html", server.port());
    let out = run_bounded(
        flint()
            .args(["bench", &url, "-n", "20", "-c", "2", "-q", "--cacert"])
            .arg(&cert.cert),
        Duration::from_secs(60),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("Statuses:  200 20"), "{stdout}");
    assert!(stdout.contains("certificates verified"), "{stdout}");
    // Named as curl and h2load print them.
    assert!(stdout.contains("TLS:       TLSv1.3 TLS_AES_"), "{stdout}");
    assert!(
        !stdout.contains("TLS13_") && !stdout.contains("TLSv1_"),
        "{stdout}"
    );
}

#[test]
fn a_refused_certificate_says_why_and_stops_the_run_after_a_second() {
    let cert = SelfSigned::marked_ca(KeyKind::EcdsaP256);
    let server = serve(&cert);
    let url = format!("https://localhost:{}/a.html", server.port());
    let json = cert.dir().join("out.json");
    let started = Instant::now();
    let out = run_bounded(
        flint()
            .args(["bench", &url, "-d", "60s", "-c", "2", "-q", "--json"])
            .arg(&json),
        Duration::from_secs(60),
    );
    let took = started.elapsed();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        took < Duration::from_secs(30),
        "a 60 s run went on for {took:?}"
    );
    assert!(
        stderr.contains("stopped early: every attempt failed as tls_certificate"),
        "{stderr}"
    );
    assert!(stderr.contains("ca_used_as_end_entity"), "{stderr}");
    assert!(
        stdout.contains("TLS failed: ") && stdout.contains("ca_used_as_end_entity: the server"),
        "{stdout}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let failures = &doc["summary"]["tls"]["failures"];
    let n = failures["ca_used_as_end_entity"].as_u64().expect("a count");
    assert_eq!(
        n,
        doc["errors_by_kind"]["tls_certificate"].as_u64().unwrap()
    );
    assert!(n > 0);
}

/// A pinned certificate is trusted as itself, not beyond its dates: out of them it is refused with the
/// reason a CA-issued one would get, counted in the report and the JSON.
#[test]
fn a_pinned_certificate_out_of_its_dates_is_refused_as_expired_or_not_yet_valid() {
    for (from, to, reason) in [(2020, 2021, "expired"), (2090, 2091, "not_yet_valid")] {
        let cert = SelfSigned::marked_ca_valid(KeyKind::EcdsaP256, from, to);
        let server = serve(&cert);
        let url = format!("https://localhost:{}/a.html", server.port());
        let json = cert.dir().join("out.json");
        let out = run_bounded(
            flint()
                .args(["bench", &url, "-n", "10", "-c", "2", "-q", "--cacert"])
                .arg(&cert.cert)
                .arg("--json")
                .arg(&json),
            Duration::from_secs(60),
        );
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(1), "{reason}: {stdout} {stderr}");
        assert!(stderr.contains("TLS: "), "{stderr}");
        assert!(stderr.contains(&format!(" {reason}: ")), "{stderr}");
        let doc: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
        let n = doc["summary"]["tls"]["failures"][reason]
            .as_u64()
            .unwrap_or_else(|| panic!("no {reason} count in {doc}"));
        assert_eq!(
            n,
            doc["errors_by_kind"]["tls_certificate"].as_u64().unwrap()
        );
        assert!(n > 0);
        assert_eq!(doc["summary"]["requests"], 0);
    }
}

/// A --cacert file that is not the server's certificate: the reason says the file given is not
/// it, never to give a certificate with --cacert as if none had been; `--debug`'s line for each
/// failed handshake says the same.
#[test]
fn a_cacert_that_is_not_the_servers_certificate_is_named_as_such() {
    let cert = SelfSigned::marked_ca(KeyKind::EcdsaP256);
    let other = SelfSigned::marked_ca(KeyKind::EcdsaP256);
    let server = serve(&cert);
    let url = format!("https://localhost:{}/a.html", server.port());
    let out = run_bounded(
        flint()
            .args([
                "bench", &url, "-n", "10", "-c", "2", "-q", "--debug", "--cacert",
            ])
            .arg(&other.cert),
        Duration::from_secs(60),
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout} {stderr}");
    let says = format!("not the one in {} (--cacert)", other.cert.display());
    assert!(
        stderr.contains("flint: TLS handshake failed: ca_used_as_end_entity: "),
        "{stderr}"
    );
    for text in [&stdout, &stderr] {
        assert!(text.contains(&says), "{text}");
        assert!(
            !text.contains("give that certificate with --cacert"),
            "{text}"
        );
    }
}

#[test]
fn no_suite_in_common_names_the_options_given_not_a_port_without_tls() {
    // An ECDSA certificate, and a TLS 1.2 suite that needs an RSA one: the server speaks TLS
    // and has no suite in common with what --tls and --tls-ciphers allow (a handshake_failure
    // alert), which is what the run says: not "is the server speaking TLS on that port".
    let cert = SelfSigned::new(KeyKind::EcdsaP256);
    let server = serve(&cert);
    let url = format!("https://localhost:{}/a.html", server.port());
    let out = run_bounded(
        flint()
            .args([
                "bench", &url, "-d", "60s", "-c", "1", "-q", "-k", "--tls", "1.2",
            ])
            .args(["--tls-ciphers", "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"]),
        Duration::from_secs(60),
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let said =
        "no TLS version or cipher suite in common with what --tls 1.2 and --tls-ciphers allow";
    assert!(
        stderr.contains(&format!("protocol_version: {said}")),
        "{stderr}"
    );
    assert!(
        stderr.contains("every attempt failed as tls_handshake ("),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("the server speaks TLS: {said}")),
        "{stderr}"
    );
    assert!(!stderr.contains("http:// rather than https://"), "{stderr}");
}
