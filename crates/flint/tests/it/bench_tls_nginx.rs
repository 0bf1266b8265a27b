//! `flint bench` over HTTPS against a real peer: Debian's nginx (OpenSSL) started through the
//! lab's peers, with certificates made at test time. nginx's access log (each request's
//! connection serial, TLS version, cipher, resumption, status and bytes sent) is the ground
//! truth the client's own account is held against, in every HTTP mode, for each TLS version,
//! with resumption off and on, when verification must refuse (unknown CA, expired, a name the
//! certificate lacks), and against a TLS 1.0-only server. The rustls server of
//! crates/bench/tests/it/engine_tls.rs covers what nginx cannot be made to do (a reset in the
//! middle of the handshake, a plaintext answer to a ClientHello).
//!
//! nginx is installed by scripts/install-peers.sh; without it these tests fail saying so.
//! Every run is a `-n` run with short timeouts inside a bounded wait, and every nginx is
//! stopped by process group whatever happens.

use crate::common;
use crate::nginx_tls;

use common::{flint, run_bounded};
use nginx_tls::{openssl_cipher, openssl_version, Logged, Nginx, Pki, FILES};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// One `flint bench` run: its exit code, its JSON, its stderr.
struct Run {
    code: i32,
    json: Value,
    stderr: String,
}

impl Run {
    fn summary(&self) -> &Value {
        &self.json["summary"]
    }

    fn count(&self, field: &str) -> u64 {
        self.summary()[field]
            .as_u64()
            .unwrap_or_else(|| panic!("summary.{field} in {}", self.summary()))
    }

    fn tls(&self, field: &str) -> &Value {
        &self.summary()["tls"][field]
    }

    fn tls_count(&self, field: &str) -> u64 {
        self.tls(field)
            .as_u64()
            .unwrap_or_else(|| panic!("summary.tls.{field} in {}", self.summary()))
    }

    fn errors_of(&self, kind: &str) -> u64 {
        self.json["errors_by_kind"][kind]
            .as_u64()
            .unwrap_or_else(|| panic!("errors_by_kind.{kind} in {}", self.json))
    }
}

/// Runs `flint bench URL ARGS` with its JSON written to a file, checked against the schema.
fn bench(url: &str, args: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let json_path = dir.path().join("bench.json");
    let out = run_bounded(
        flint()
            .args(["bench", url])
            .args(args)
            .args(["-q", "--report", "none", "--timeout", "10s", "--json"])
            .arg(&json_path),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let text = std::fs::read_to_string(&json_path)
        .unwrap_or_else(|e| panic!("no JSON from flint bench {url} {args:?} ({e}): {stderr}"));
    let json: Value = serde_json::from_str(&text).expect("JSON");
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "not as the schema says: {errors:#?}");
    Run {
        code: out.status.code().expect("flint exited, not killed"),
        json,
        stderr,
    }
}

fn localhost(nginx: &Nginx) -> String {
    format!("https://localhost:{}", nginx.port())
}

fn path(p: &std::path::Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// The connection serials nginx logged.
fn connections(log: &[Logged]) -> BTreeSet<u64> {
    log.iter().map(|l| l.connection).collect()
}

/// flint completed `requests` requests without an error, and its counts of requests, statuses
/// and bytes are nginx's.
fn assert_counts_agree(run: &Run, log: &[Logged], requests: u64) {
    assert_eq!(run.code, 0, "stderr: {}", run.stderr);
    let summary = run.summary();
    assert_eq!(run.count("errors"), 0, "{summary}");
    assert_eq!(run.count("requests"), requests, "{summary}");
    assert_eq!(log.len() as u64, requests, "nginx's log: {log:#?}");
    assert!(log.iter().all(|l| l.status == 200), "{log:#?}");
    assert_eq!(
        summary["status_counts"],
        serde_json::json!({ "200": requests }),
        "{summary}"
    );
    let sent: u64 = log.iter().map(|l| l.bytes_sent).sum();
    assert_eq!(
        run.count("bytes_total"),
        sent,
        "heads and bodies, as nginx sent them"
    );
    // Every byte flint read was in a counted response.
    assert_eq!(run.count("bytes_read"), sent, "{summary}");
}

const PAGES: u64 = 5;

/// Keep-alive and pipelined runs of the four-file page: `-c 2 -n 5`.
fn page_run(nginx: &Nginx, pki: &Pki, extra: &[&str]) -> Run {
    let pages = PAGES.to_string();
    let mut args = vec!["-w", path(&pki.workload), "--cacert", path(&pki.ca)];
    args.extend(["-c", "2", "-n", &pages]);
    args.extend(extra);
    let run = bench(&localhost(nginx), &args);
    // The bodies are the files, each page once: the byte counts are of what was served.
    let page_bytes: usize = FILES.iter().map(|(_, size)| size).sum();
    assert_eq!(
        run.count("bytes_body"),
        PAGES * page_bytes as u64,
        "{}",
        run.summary()
    );
    run
}

#[test]
fn keep_alive_requests_statuses_bytes_and_connections_are_nginxs() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    let run = page_run(&nginx, &pki, &[]);
    let log = nginx.stop_and_read_log();
    assert_counts_agree(&run, &log, PAGES * FILES.len() as u64);
    assert_eq!(
        run.json["config"]["tls"]["verify"], true,
        "trusted by --cacert"
    );
    // One connection, and one handshake, per Webchild that ran: as many as nginx saw.
    let conns = connections(&log).len() as u64;
    assert!((1..=2).contains(&conns), "{log:#?}");
    assert_eq!(run.count("connects"), conns, "{}", run.summary());
    assert_eq!(run.tls_count("handshakes"), conns, "{}", run.summary());
    assert!(
        log.iter().any(|l| l.request > 1),
        "connections reused: {log:#?}"
    );
    // A request is sent only once the previous response is in.
    assert!(log.iter().all(|l| !l.pipelined), "{log:#?}");
}

#[test]
fn pipelined_requests_reach_nginx_together_and_are_counted_as_it_served_them() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    let run = page_run(&nginx, &pki, &["--pipeline"]);
    let log = nginx.stop_and_read_log();
    assert_counts_agree(&run, &log, PAGES * FILES.len() as u64);
    assert_eq!(run.json["config"]["http"], "pipelined");
    let conns = connections(&log).len() as u64;
    assert_eq!(run.count("connects"), conns, "{}", run.summary());
    assert_eq!(run.tls_count("handshakes"), conns, "{}", run.summary());
    // nginx marks a request `p` when it was already read with the one before it: a page's files
    // are written at once, so every one but the first of each page is (the next page is written
    // only once this one's responses are in).
    let pipelined = log.iter().filter(|l| l.pipelined).count() as u64;
    assert_eq!(pipelined, PAGES * (FILES.len() as u64 - 1), "{log:#?}");
}

#[test]
fn http10_makes_a_tls_connection_per_request_as_nginx_counts_them() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    let run = page_run(&nginx, &pki, &["--http", "1.0"]);
    let log = nginx.stop_and_read_log();
    let requests = PAGES * FILES.len() as u64;
    assert_counts_agree(&run, &log, requests);
    assert_eq!(connections(&log).len() as u64, requests, "{log:#?}");
    assert!(log.iter().all(|l| l.request == 1), "{log:#?}");
    assert_eq!(run.count("connects"), requests, "{}", run.summary());
    assert_eq!(run.tls_count("handshakes"), requests, "{}", run.summary());
    let handshake = &run.summary()["tls_handshake_ms"];
    assert_eq!(handshake["count"].as_u64(), Some(requests), "{handshake}");
    // A full handshake with another process is a round trip and a signature at the least: tens
    // of microseconds on the fastest machine. A handshake timed at nothing was timed from a
    // clock read before its own I/O.
    let min = handshake["min"].as_f64().expect("tls_handshake_ms.min");
    assert!(min >= 0.01, "a handshake of {min} ms: {handshake}");
}

#[test]
fn a_pinned_version_and_its_cipher_are_what_nginx_negotiated() {
    let pki = Pki::new();
    for version in ["1.2", "1.3"] {
        let nginx = Nginx::start(&pki, None);
        let run = bench(
            &format!("{}/one.txt", localhost(&nginx)),
            &[
                "--cacert",
                path(&pki.ca),
                "--tls",
                version,
                "-c",
                "1",
                "-n",
                "3",
            ],
        );
        let log = nginx.stop_and_read_log();
        assert_counts_agree(&run, &log, 3);
        assert_eq!(run.json["config"]["tls"]["version"], version);
        let ours = run.tls("version").as_str().expect("tls.version");
        let cipher = run.tls("cipher").as_str().expect("tls.cipher");
        assert_eq!(ours, format!("TLSv{}", version.replace('.', "_")));
        for line in &log {
            assert_eq!(line.protocol, openssl_version(ours), "{line:?}");
            assert_eq!(line.cipher, openssl_cipher(cipher), "{line:?}");
        }
        assert_eq!(run.tls("alpn"), "http/1.1", "{}", run.summary());
    }
}

#[test]
fn aes_128_gcm_by_default_as_browsers_and_the_suites_asked_for_otherwise() {
    let pki = Pki::new();
    let cases: [(&str, Option<&str>, &str); 4] = [
        ("1.3", None, "TLS13_AES_128_GCM_SHA256"),
        ("1.2", None, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"),
        (
            "1.3",
            Some("TLS_CHACHA20_POLY1305_SHA256,TLS_AES_128_GCM_SHA256"),
            "TLS13_CHACHA20_POLY1305_SHA256",
        ),
        (
            "1.2",
            Some("TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"),
            "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
        ),
    ];
    for (version, ciphers, expected) in cases {
        let nginx = Nginx::start(&pki, None);
        let mut args = vec![
            "--cacert",
            path(&pki.ca),
            "--tls",
            version,
            "-c",
            "1",
            "-n",
            "2",
        ];
        if let Some(list) = ciphers {
            args.extend(["--tls-ciphers", list]);
        }
        let run = bench(&format!("{}/one.txt", localhost(&nginx)), &args);
        let log = nginx.stop_and_read_log();
        assert_counts_agree(&run, &log, 2);
        assert_eq!(run.tls("cipher"), expected, "{}", run.summary());
        // The group depends on the server's OpenSSL (3.5 has the hybrid post-quantum one).
        let kx = run.tls("kx").as_str().expect("tls.kx");
        assert!(
            ["X25519MLKEM768", "X25519", "secp256r1", "secp384r1"].contains(&kx),
            "{kx}"
        );
        for line in &log {
            assert_eq!(line.cipher, openssl_cipher(expected), "{line:?}");
        }
        let offered = &run.json["config"]["tls"]["ciphers"];
        match ciphers {
            None => assert!(offered.is_null(), "{offered}"),
            Some(_) => assert_eq!(offered[0], expected, "{offered}"),
        }
    }
}

/// HTTP/1.0, one Webchild, a connection per request: `n` handshakes in a row.
fn handshakes_in_a_row(pki: &Pki, version: &str, resume: bool, n: u64) -> (Run, Vec<Logged>) {
    let nginx = Nginx::start(pki, None);
    let pages = n.to_string();
    let mut args = vec!["--cacert", path(&pki.ca), "--tls", version, "--http", "1.0"];
    args.extend(["-c", "1", "-n", &pages]);
    if resume {
        args.push("--tls-resume");
    }
    let run = bench(&format!("{}/small.txt", localhost(&nginx)), &args);
    let mut log = nginx.stop_and_read_log();
    log.sort_by_key(|l| l.connection);
    assert_counts_agree(&run, &log, n);
    assert_eq!(run.tls_count("handshakes"), n, "{}", run.summary());
    assert_eq!(connections(&log).len() as u64, n, "{log:#?}");
    assert_eq!(run.json["config"]["tls"]["resume"], resume);
    (run, log)
}

#[test]
fn without_tls_resume_every_handshake_is_full_though_nginx_would_resume() {
    let pki = Pki::new();
    for version in ["1.2", "1.3"] {
        let (run, log) = handshakes_in_a_row(&pki, version, false, 6);
        assert_eq!(
            run.tls_count("resumed"),
            0,
            "TLS {version}: {}",
            run.summary()
        );
        assert!(
            log.iter().all(|l| !l.resumed),
            "TLS {version}: nginx resumed: {log:#?}"
        );
    }
}

#[test]
fn with_tls_resume_every_handshake_after_the_first_resumes_as_nginx_logs() {
    let pki = Pki::new();
    for version in ["1.2", "1.3"] {
        let n = 6;
        let (run, log) = handshakes_in_a_row(&pki, version, true, n);
        let by_nginx = log.iter().filter(|l| l.resumed).count() as u64;
        assert_eq!(
            run.tls_count("resumed"),
            by_nginx,
            "TLS {version}: {log:#?}"
        );
        // One Webchild, one after another: each connection has the session (or ticket) of the
        // one before, so only the first is full.
        assert_eq!(by_nginx, n - 1, "TLS {version}: {log:#?}");
        assert!(!log[0].resumed, "TLS {version}: {log:#?}");
    }
}

/// `-n 3` against `url`: every request fails with `kind`, the run fails as docs/ says (exit
/// status 1: not one response succeeded), and no request reached nginx.
fn assert_refused(run: &Run, log: &[Logged], kind: &str) {
    assert_eq!(run.code, 1, "stderr: {}", run.stderr);
    assert_eq!(run.errors_of(kind), 3, "{}", run.json["errors_by_kind"]);
    assert_eq!(run.count("errors"), 3, "{}", run.summary());
    assert_eq!(run.count("requests"), 0, "{}", run.summary());
    assert!(
        run.stderr.contains(kind),
        "one line naming it: {}",
        run.stderr
    );
    assert!(log.is_empty(), "nginx served: {log:#?}");
}

#[test]
fn a_certificate_from_an_untrusted_ca_is_refused_without_cacert() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    let run = bench(
        &format!("{}/one.txt", localhost(&nginx)),
        &["-c", "1", "-n", "3"],
    );
    let log = nginx.stop_and_read_log();
    assert_refused(&run, &log, "tls_certificate");
}

#[test]
fn an_expired_certificate_is_refused_though_its_ca_is_trusted() {
    let pki = Pki::expired();
    let nginx = Nginx::start(&pki, None);
    let run = bench(
        &format!("{}/one.txt", localhost(&nginx)),
        &["--cacert", path(&pki.ca), "-c", "1", "-n", "3"],
    );
    let log = nginx.stop_and_read_log();
    assert_refused(&run, &log, "tls_certificate");
}

/// 127.0.0.1 as an IPv4-mapped IPv6 address reaches the same nginx, but it is not an address
/// the certificate names (it names 127.0.0.1 and localhost).
fn unnamed_address(nginx: &Nginx) -> String {
    format!("https://[::ffff:127.0.0.1]:{}/one.txt", nginx.port())
}

#[test]
fn an_address_the_certificate_does_not_name_is_refused_though_its_ca_is_trusted() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    let run = bench(
        &unnamed_address(&nginx),
        &["--cacert", path(&pki.ca), "-c", "1", "-n", "3"],
    );
    let log = nginx.stop_and_read_log();
    assert_refused(&run, &log, "tls_certificate");
}

#[test]
fn insecure_skips_verification_and_the_json_says_so() {
    let pki = Pki::new();
    let nginx = Nginx::start(&pki, None);
    // Neither the CA is trusted nor the address named: only -k lets it through.
    let run = bench(&unnamed_address(&nginx), &["-k", "-c", "1", "-n", "3"]);
    let log = nginx.stop_and_read_log();
    assert_counts_agree(&run, &log, 3);
    assert_eq!(
        run.json["config"]["tls"]["verify"], false,
        "{}",
        run.json["config"]
    );
}

#[test]
fn a_tls_1_0_only_nginx_is_a_handshake_error() {
    let pki = Pki::new();
    // OpenSSL 3 serves TLS 1.0 only at security level 0 (its signatures are SHA-1 and MD5).
    let nginx = Nginx::start(&pki, Some(("TLSv1", "DEFAULT@SECLEVEL=0")));
    assert_eq!(
        nginx_tls::server_hello_version_for_tls10(nginx.addr()),
        Some([3, 1]),
        "{} does not serve TLS 1.0 here: the case would prove nothing",
        nginx.version()
    );
    let run = bench(
        &format!("{}/one.txt", localhost(&nginx)),
        &["--cacert", path(&pki.ca), "-c", "1", "-n", "3"],
    );
    let log = nginx.stop_and_read_log();
    assert_refused(&run, &log, "tls_handshake");
}
