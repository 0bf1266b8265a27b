//! HTTP/2 conformance: h2spec (installed by scripts/install-h2spec.sh, which scripts/test runs)
//! against the server over cleartext (prior knowledge) and over TLS (ALPN h2). Every one of its
//! 145 cases must pass, except those listed in [`EXPLAINED`], each with the reason and the RFC
//! text it departs from (docs/serve.md, "HTTP/2", repeats them), and those must fail. A missing h2spec fails the test.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestServer;
use crate::tls_support::Certs;

/// h2spec's cases that fail, and why: (transport, section, case).
///
/// Every listed case fails on every run, and the test checks that too: a case that passes
/// only sometimes is a race to fix, not a departure to list.
///
/// Over cleartext the port serves HTTP/1.1 too, and the first bytes decide (RFC 9113 3.3:
/// "Servers can identify these connections by the presence of the connection preface"; 3.4:
/// "an invalid preface indicates that the peer is not using HTTP/2"): h2spec's "INVALID
/// CONNECTION PREFACE\r\n\r\n" is an HTTP/1.1 request line that does not parse, answered 400
/// and closed (RFC 9112 2.2: "the server SHOULD respond with a 400 (Bad Request) response and
/// close the connection"). h2spec, which expects a port that speaks only HTTP/2, reads the 400
/// as a frame and fails the case. Over TLS, where ALPN said h2, it passes.
const EXPLAINED: &[(Transport, &str, &str)] =
    &[(Cleartext, "http2/3.5", "Sends invalid connection preface")];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Cleartext,
    Tls,
    Any,
}
use Transport::*;

/// h2spec's cases in its default run.
const CASES: usize = 145;
/// h2spec's wait for an answer, seconds (its default is 2; the machine may be loaded).
const H2SPEC_TIMEOUT: &str = "3";

fn h2spec() -> PathBuf {
    let mut candidates: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("h2spec"))
                .collect()
        })
        .unwrap_or_default();
    candidates.push("/usr/local/bin/h2spec".into());
    if let Some(home) = std::env::var_os("HOME") {
        candidates.push(PathBuf::from(home).join("go/bin/h2spec"));
    }
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .expect("h2spec is not installed: run scripts/install-h2spec.sh (scripts/test does)")
}

/// One case of the JUnit report: section, description, whether it failed.
fn cases(report: &str) -> Vec<(String, String, bool)> {
    let attr = |tag: &str, name: &str| -> String {
        let key = format!("{name}=\"");
        let start = tag.find(&key).map(|i| i + key.len()).unwrap_or(0);
        let end = tag[start..].find('"').map_or(start, |e| start + e);
        tag[start..end]
            .replace("&#34;", "\"")
            .replace("&quot;", "\"")
            .replace("&amp;", "&")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
    };
    let mut out = Vec::new();
    let mut rest = report;
    while let Some(i) = rest.find("<testcase ") {
        rest = &rest[i..];
        let tag_end = rest.find('>').unwrap();
        let tag = &rest[..tag_end];
        let body_end = rest.find("</testcase>").unwrap_or(tag_end);
        let failed = rest[..body_end].contains("<failure") || rest[..body_end].contains("<error");
        out.push((attr(tag, "package"), attr(tag, "classname"), failed));
        rest = &rest[tag_end..];
    }
    out
}

/// Runs h2spec against the server at `addr` and checks its report.
fn conform(addr: std::net::SocketAddr, transport: Transport) {
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("report.xml");
    let mut cmd = Command::new(h2spec());
    cmd.args(["-h", "127.0.0.1", "-p", &addr.port().to_string()])
        .args(["--path", "/a.txt", "-o", H2SPEC_TIMEOUT, "-j"])
        .arg(&report)
        .stdin(Stdio::null())
        // Files, not pipes: its output (over 64 KiB when cases fail) is read after it exits,
        // and a pipe nobody reads meanwhile would block it.
        .stdout(std::fs::File::create(dir.path().join("stdout")).unwrap())
        .stderr(std::fs::File::create(dir.path().join("stderr")).unwrap());
    if transport == Tls {
        cmd.args(["-t", "-k"]);
    }
    let mut child = cmd.spawn().expect("start h2spec");
    // Bounded: every case waits at most its timeout; h2spec is stopped past a generous bound.
    let deadline = Instant::now() + Duration::from_secs(300);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("h2spec ({transport:?}) did not finish within 300 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = std::fs::read_to_string(dir.path().join("stdout")).unwrap_or_default()
        + &std::fs::read_to_string(dir.path().join("stderr")).unwrap_or_default();
    let report = std::fs::read_to_string(&report).expect("h2spec wrote no report");
    let cases = cases(&report);
    assert_eq!(
        cases.len(),
        CASES,
        "h2spec ({transport:?}) ran another set:\n{text}"
    );
    let unexplained: Vec<_> = cases
        .iter()
        .filter(|(section, desc, failed)| {
            *failed
                && !EXPLAINED
                    .iter()
                    .any(|(t, s, d)| (*t == Any || *t == transport) && s == section && d == desc)
        })
        .collect();
    assert!(
        unexplained.is_empty(),
        "h2spec ({transport:?}) failures not explained: {unexplained:#?}\n{text}"
    );
    // Every explained case must also fail, each time: a case that passes only sometimes is a
    // race to fix, not a known departure.
    let passing_explained: Vec<_> = EXPLAINED
        .iter()
        .filter(|(t, s, d)| {
            (*t == Any || *t == transport)
                && cases
                    .iter()
                    .any(|(section, desc, failed)| !failed && section == s && desc == d)
        })
        .collect();
    assert!(
        passing_explained.is_empty(),
        "h2spec ({transport:?}) passed cases listed as failing: {passing_explained:#?}"
    );
    let passed = cases.iter().filter(|c| !c.2).count();
    let allowed = EXPLAINED
        .iter()
        .filter(|(t, _, _)| *t == Any || *t == transport)
        .count();
    assert_eq!(passed, CASES - allowed, "{passed} passed");
    eprintln!("h2spec ({transport:?}): {passed}/{CASES} passed");
}

#[test]
fn h2spec_over_cleartext_and_tls() {
    let plain = TestServer::start(|_| {});
    let certs = Certs::new(false);
    let tls = certs.serve(|_| {});
    std::thread::scope(|s| {
        s.spawn(|| conform(plain.addr, Cleartext));
        s.spawn(|| conform(tls.addr, Tls));
    });
}
