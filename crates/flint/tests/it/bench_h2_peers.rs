//! `flint bench --http 2` against real HTTP/2 servers: Debian's nginx and h2o, each over TLS
//! (ALPN `h2`) and cleartext (h2c, prior knowledge), with certificates made at test time. Each
//! server's access log is the ground truth: one line per request it served, which must be
//! flint's requests plus its unfinished ones, for a page's files as concurrent streams, one
//! stream at a time, and a one-file page kept 8 deep (h2load's `-m 8`). A TLS server without
//! HTTP/2 is `h2_not_negotiated`.
//!
//! Timed runs hold that equality exactly because of how flint bench ends a run (docs/latency.md,
//! the end of the run): a lingering close, so that nothing sent is lost to a RST, and a GOAWAY
//! or `Connection: close` read after the end makes the requests behind it not sent. An nginx
//! that ends its connections every 7 requests puts one at the end of nearly every run.
//!
//! nginx and h2o are installed by scripts/install-peers.sh; without them these tests fail
//! saying so. Every server is started in its own process group (`lab_process::Group`) and
//! stopped by it whatever happens; every wait is bounded.

use crate::common;

use common::peer_server::{nginx, PeerServer};
use common::{flint, run_bounded};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use test_support::certs::{KeyKind, TestCa, LOCAL_NAMES};

/// The page: four files, one larger than a TLS record and than a DATA frame (16 KiB).
const FILES: [(&str, usize); 4] = [
    ("/small.txt", 100),
    ("/one.txt", 1024),
    ("/three.txt", 3 * 1024),
    ("/forty.bin", 40 * 1024),
];

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Nginx,
    /// nginx ending each connection after 7 requests (`keepalive_requests 7`): over HTTP/2 a
    /// GOAWAY every 7 streams, over HTTP/1.1 a `Connection: close` every 7 responses, so that
    /// the end of a run often finds one on its way.
    NginxShort,
    H2o,
}

/// A document root, a workload of one page of [`FILES`], a one-file workload, and a CA with a
/// leaf for `localhost`.
struct Site {
    dir: tempfile::TempDir,
    _ca: TestCa,
    ca: PathBuf,
    cert: PathBuf,
    key: PathBuf,
}

impl Site {
    fn new() -> Site {
        let dir = tempfile::tempdir().unwrap();
        // h2o serves as `nobody` when started as root: everything readable by all.
        set_mode(dir.path(), 0o755);
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        for (name, size) in FILES {
            let body: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(root.join(&name[1..]), body).unwrap();
        }
        set_mode(&root, 0o755);
        let files: Vec<String> = FILES.iter().map(|(f, _)| format!("{f:?}")).collect();
        let page = format!(
            "[[page]]\nname = \"all\"\nweight = 1\nfiles = [{}]\n",
            files.join(", ")
        );
        std::fs::write(dir.path().join("page.toml"), page).unwrap();
        let one = "[[page]]\nname = \"one\"\nweight = 1\nfiles = [\"/one.txt\"]\n";
        std::fs::write(dir.path().join("one.toml"), one).unwrap();
        let ca = TestCa::new("flint h2 test CA");
        let (cert, key) = ca
            .leaf_with(LOCAL_NAMES, KeyKind::EcdsaP256, false)
            .write_pem(dir.path());
        Site {
            ca: ca.pem.clone(),
            _ca: ca,
            cert,
            key,
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// `kind` on a free port: TLS with HTTP/2 (`tls`), TLS without it (`tls` and not `h2`), or h2c.
fn start(kind: Kind, site: &Site, tls: bool, h2: bool) -> PeerServer {
    PeerServer::start(
        &format!("{kind:?}"),
        site.dir.path(),
        |port, log| match kind {
            Kind::Nginx => nginx_for(site, port, tls, h2, log, ""),
            Kind::NginxShort => nginx_for(site, port, tls, h2, log, "keepalive_requests 7;"),
            Kind::H2o => h2o(site, port, tls, log),
        },
    )
}

/// nginx serving the site; `extra`: more directives for its `http` block.
fn nginx_for(site: &Site, port: u16, tls: bool, h2: bool, log: &Path, extra: &str) -> Command {
    let listen = match (tls, h2) {
        (true, true) => format!("listen 127.0.0.1:{port} ssl http2;"),
        (true, false) => format!("listen 127.0.0.1:{port} ssl;"),
        (false, true) => format!("listen 127.0.0.1:{port} http2;"),
        (false, false) => format!("listen 127.0.0.1:{port};"),
    };
    let server = format!(
        "{listen} ssl_certificate {}; ssl_certificate_key {};",
        site.cert.display(),
        site.key.display(),
    );
    nginx(site.dir.path(), port, log, extra, &server)
}

/// h2o with one listener: TLS (ALPN h2) or cleartext (h2c by prior knowledge).
fn h2o(site: &Site, port: u16, tls: bool, log: &Path) -> Command {
    let ssl = if tls {
        format!(
            "\n  ssl:\n    certificate-file: {}\n    key-file: {}\n    ocsp-update-interval: 0",
            site.cert.display(),
            site.key.display()
        )
    } else {
        String::new()
    };
    let conf = format!(
        "error-log: {d}/h2o-error-{port}.log\naccess-log: {log}\n\
         listen:\n  host: 127.0.0.1\n  port: {port}{ssl}\n\
         hosts:\n  default:\n    paths:\n      /:\n        file.dir: {d}/root\n",
        d = site.dir.path().display(),
        log = log.display(),
    );
    let path = site.path(&format!("h2o-{port}.conf"));
    std::fs::write(&path, conf).unwrap();
    let mut cmd = Command::new("h2o");
    cmd.arg("-c").arg(&path);
    cmd
}

/// `flint bench --http 2 URL ARGS`: its JSON, checked against the schema.
fn bench(site: &Site, server: &PeerServer, tls: bool, args: &[&str]) -> Value {
    bench_http(site, server, tls, &[&["--http", "2"], args].concat())
}

/// `flint bench URL ARGS`: its JSON, checked against the schema.
fn bench_http(site: &Site, server: &PeerServer, tls: bool, args: &[&str]) -> Value {
    let json_path = site.path("bench.json");
    let _ = std::fs::remove_file(&json_path);
    let url = match tls {
        true => format!("https://localhost:{}", server.addr.port()),
        false => format!("http://127.0.0.1:{}", server.addr.port()),
    };
    let out = run_bounded(
        flint()
            .args(["bench", &url])
            .args(args)
            .args(["-q", "--report", "none", "--timeout", "10s", "--cacert"])
            .arg(&site.ca)
            .arg("--json")
            .arg(&json_path),
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    let text = std::fs::read_to_string(&json_path)
        .unwrap_or_else(|e| panic!("no JSON from flint bench {url} {args:?} ({e}): {stderr}"));
    let json: Value = serde_json::from_str(&text).unwrap();
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/bench-json.schema.json")).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator
        .iter_errors(&json)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "not as the schema says: {errors:#?}");
    json
}

fn count(json: &Value, field: &str) -> u64 {
    json["summary"][field]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.{field} in {}", json["summary"]))
}

/// Pages of all four files as streams (all at once, then one at a time), and a one-file page
/// 8 deep and 32 deep (lanes refilled 4 at a time): every request flint made is one the server
/// logged, and all are 200s.
fn counts_agree(kind: Kind, tls: bool) {
    let site = Site::new();
    let server = start(kind, &site, tls, true);
    let page = site.path("page.toml");
    let one = site.path("one.toml");
    let runs: [(&Path, &[&str], u64); 4] = [
        (&page, &["-c", "2", "-n", "10"], 40),
        (&page, &["-c", "2", "-n", "10", "--streams", "1"], 40),
        (&one, &["-c", "2", "-n", "200", "--streams", "8"], 200),
        (&one, &["-c", "2", "-n", "400", "--streams", "32"], 400),
    ];
    let mut logged = 0;
    for (w, args, requests) in runs {
        let mut all = vec!["-w", w.to_str().unwrap()];
        all.extend(args);
        let json = bench(&site, &server, tls, &all);
        let summary = &json["summary"];
        assert_eq!(count(&json, "errors"), 0, "{kind:?} {args:?}: {summary}");
        assert_eq!(count(&json, "requests"), requests, "{summary}");
        assert_eq!(
            summary["status_counts"],
            serde_json::json!({ "200": requests })
        );
        let h2 = &summary["http2"];
        assert_eq!(h2["streams"], requests, "{h2}");
        assert!(h2["connections"].as_u64().unwrap() >= 1, "{h2}");
        assert!(h2["max_concurrent_streams"].as_u64().unwrap() >= 1, "{h2}");
        assert!(
            h2["header_bytes_saved"].as_u64().unwrap() > 0,
            "HPACK saved nothing: {h2}"
        );
        // The paper's identity: every byte read was a head, a body or HTTP/2 framing.
        let not_in = &summary["bytes_not_in_responses"];
        assert_eq!(not_in["other"], 0, "{not_in}");
        assert_eq!(
            count(&json, "bytes_read"),
            count(&json, "bytes_total") + not_in["h2_framing"].as_u64().unwrap(),
            "{summary}"
        );
        if tls {
            assert_eq!(summary["tls"]["alpn"], "h2", "{summary}");
        }
        // The server logged each request flint made (an -n run leaves none unfinished).
        assert_eq!(count(&json, "unfinished"), 0);
        logged += requests as usize;
        let lines = server.logged(logged);
        assert_eq!(lines.len(), logged, "{kind:?} {args:?}: the access log");
        assert!(
            lines.iter().all(|l| l.contains("HTTP/2")),
            "every request over HTTP/2: {lines:#?}"
        );
    }
    // Timed runs: what the server logged is what flint counted plus what it left unfinished
    // (a request cut off at the end is logged too, as nginx's 499 or h2o's own).
    for streams in ["4", "1"] {
        let page = page.to_str().unwrap();
        let args = ["-w", page, "-c", "2", "-d", "1s", "--streams", streams];
        let json = bench(&site, &server, tls, &args);
        assert_eq!(count(&json, "errors"), 0, "{}", json["summary"]);
        let sent = count(&json, "requests") + count(&json, "unfinished");
        // Streams opened: those the server has, and among the unsent at the end those whose
        // HEADERS had not left. The others unsent never had a stream: a page's first file whose
        // connection was still coming up (nginx ends one after 1,000 requests).
        let streams = json["summary"]["http2"]["streams"].as_u64().unwrap();
        let unsent = count(&json, "unsent_at_end");
        assert!(
            sent <= streams && streams <= sent + unsent,
            "{}",
            json["summary"]
        );
        logged += sent as usize;
        let lines = server.logged(logged);
        assert_eq!(
            lines.len(),
            logged,
            "{kind:?} --streams {streams}: the access log"
        );
    }
}

/// Short timed runs against [`Kind::NginxShort`]: however often the end finds a GOAWAY or a
/// `Connection: close` on its way (with the requests sent behind it, which the server never
/// processes), the access log has flint's requests plus its unfinished ones, run after run.
/// `args`: the protocol's options; `h2`: the runs are over HTTP/2.
fn counts_agree_when_the_server_ends_connections(tls: bool, args: &[&str], h2: bool) {
    let site = Site::new();
    let server = start(Kind::NginxShort, &site, tls, h2);
    let page = site.path("page.toml");
    let mut logged = 0;
    for run in 0..12 {
        let mut all = vec!["-w", page.to_str().unwrap(), "-c", "2", "-d", "300ms"];
        all.extend(args);
        let json = bench_http(&site, &server, tls, &all);
        let summary = &json["summary"];
        assert_eq!(count(&json, "errors"), 0, "{summary}");
        let sent = count(&json, "requests") + count(&json, "unfinished");
        if h2 {
            // The end found GOAWAYs on their way, not just between runs.
            let h2 = &summary["http2"];
            assert!(h2["goaways"].as_u64().unwrap() > 0, "{h2}");
            assert_eq!(h2["frames_received"]["GOAWAY"], h2["goaways"], "{h2}");
            // Each stream opened is a request, unfinished, refused by a GOAWAY and sent again,
            // or (among the unsent at the end) one whose HEADERS had not left.
            let (streams, retried) = (
                h2["streams"].as_u64().unwrap(),
                h2["retried"].as_u64().unwrap(),
            );
            let unsent = count(&json, "unsent_at_end");
            assert!(
                sent + retried <= streams && streams <= sent + retried + unsent,
                "{summary}"
            );
        }
        logged += sent as usize;
        let lines = server.logged(logged);
        assert_eq!(
            lines.len(),
            logged,
            "run {run} {args:?}: the access log; {summary}"
        );
    }
}

#[test]
fn nginx_sending_goaway_every_7_streams_logs_every_stream_flint_counts_over_h2c() {
    counts_agree_when_the_server_ends_connections(false, &["--http", "2", "--streams", "4"], true);
}

#[test]
fn nginx_sending_goaway_every_7_streams_logs_every_stream_flint_counts_over_tls() {
    counts_agree_when_the_server_ends_connections(true, &["--http", "2", "--streams", "4"], true);
}

#[test]
fn nginx_closing_every_7_pipelined_requests_logs_every_request_flint_counts() {
    counts_agree_when_the_server_ends_connections(false, &["--pipeline"], false);
}

#[test]
fn nginx_over_tls_logs_every_stream_flint_counts() {
    counts_agree(Kind::Nginx, true);
}

#[test]
fn nginx_over_h2c_logs_every_stream_flint_counts() {
    counts_agree(Kind::Nginx, false);
}

#[test]
fn h2o_over_tls_logs_every_stream_flint_counts() {
    counts_agree(Kind::H2o, true);
}

#[test]
fn h2o_over_h2c_logs_every_stream_flint_counts() {
    counts_agree(Kind::H2o, false);
}

#[test]
fn a_tls_server_without_http2_is_h2_not_negotiated() {
    let site = Site::new();
    let server = start(Kind::Nginx, &site, true, false);
    let page = site.path("page.toml");
    let json = bench(
        &site,
        &server,
        true,
        &["-w", page.to_str().unwrap(), "-n", "4"],
    );
    let kinds = &json["errors_by_kind"];
    // Every page fails with its connection.
    assert_eq!(kinds["h2_not_negotiated"], 4, "{kinds}");
    assert_eq!(count(&json, "errors"), 4, "{kinds}");
    assert_eq!(count(&json, "requests"), 0);
}
