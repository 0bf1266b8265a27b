//! What flint really writes, rendered: bench results of real runs (the workspace's load
//! generator against the workspace's server, in this process, over HTTP and HTTPS), written by
//! the bench crate's own result writer and sent through JSON, and a compare and a lab document
//! made of those runs' figures with the `results` types their writers use. Every section the
//! inputs have data for appears; the HTTPS run's TLS figures are in the summary and beside the
//! TCP connect time, and a plain-HTTP run has no TLS rows.

mod common;

use bench::config::TlsOptions;
use bench::{BenchConfig, HttpMode, Stop, Target, Workload};
use results::{
    BenchResult, CompareResult, CompareTarget, Kind, LabResult, LabRow, LabServer, SyscallCount,
};
use serde_json::Value;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::Duration;
use test_support::certs::{KeyKind, SelfSigned};

/// How long the server may take to stop once told: far beyond what it needs on a busy machine.
const STOP_WAIT: Duration = Duration::from_secs(20);

/// `flint serve` on 127.0.0.1:0 over a small document tree, stopped when dropped.
struct Served {
    addr: std::net::SocketAddr,
    handle: serve::ShutdownHandle,
    done: mpsc::Receiver<Result<serve::ServerStats, serve::ServeError>>,
    _root: tempfile::TempDir,
    _certificate: Option<SelfSigned>,
}

impl Served {
    /// Over TLS with a throwaway self-signed certificate when `tls`.
    fn start(tls: bool) -> Served {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("index.html"), vec![b'x'; 1024]).unwrap();
        std::fs::write(root.path().join("logo.gif"), vec![b'y'; 6 * 1024]).unwrap();
        let mut config = serve::Config {
            root: root.path().to_path_buf(),
            listen: ([127, 0, 0, 1], 0).into(),
            threads: 1,
            ..serve::Config::default()
        };
        let certificate = tls.then(|| SelfSigned::new(KeyKind::EcdsaP256));
        if let Some(c) = &certificate {
            config.tls_cert = Some(c.cert.clone());
            config.tls_key = Some(c.key.clone());
        }
        let server = serve::Server::bind(config).expect("the server binds");
        let addr = server.local_addr();
        let handle = server.handle();
        let (tx, done) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(server.run());
        });
        Served {
            addr,
            handle,
            done,
            _root: root,
            _certificate: certificate,
        }
    }

    fn stats(&self) -> serve::ServerStats {
        self.handle.stats(STOP_WAIT)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.handle.shutdown();
        // Bounded: a server that does not stop fails the test instead of hanging it.
        let stopped = self.done.recv_timeout(STOP_WAIT);
        if !std::thread::panicking() {
            assert!(stopped.is_ok(), "the server did not stop in time");
        }
    }
}

/// A one-second run of two Webchildren fetching two pages, as `flint bench --json` writes it.
fn bench_json(served: &Served, scheme: &str, http: HttpMode, tls: TlsOptions) -> Value {
    let config = BenchConfig {
        http,
        stop: Stop::Duration(Duration::from_secs(1)),
        tls,
        ..BenchConfig::new(Target::http(served.addr))
    };
    run_json(served, scheme, config)
}

/// `config`'s load and stop (its target replaced by `served`'s) over the test's two pages, as
/// bench's writer puts it in JSON.
fn run_json(served: &Served, scheme: &str, config: BenchConfig) -> Value {
    let url = format!("{scheme}://localhost:{}/", served.addr.port());
    let target = Target::parse(&url).expect("a valid URL");
    let workload = Workload::from_pages([
        ("home".to_owned(), 2.0, vec!["/index.html", "/logo.gif"]),
        ("plain".to_owned(), 1.0, vec!["/index.html"]),
    ])
    .unwrap();
    let config = BenchConfig {
        concurrency: 2,
        threads: 1,
        warmup: Duration::ZERO,
        connect_timeout: Duration::from_secs(10),
        response_timeout: Duration::from_secs(10),
        target,
        ..config
    };
    let run = bench::run(&config, &workload, &AtomicBool::new(false)).expect("the run starts");
    assert!(run.stats.requests > 0, "the run fetched nothing");
    let text = serde_json::to_string(&bench::report::json(&run)).unwrap();
    serde_json::from_str(&text).unwrap()
}

fn typed(v: &Value) -> BenchResult {
    serde_json::from_value(v.clone()).expect("flint's own output reads back")
}

/// A compare of two real runs' summaries, as `flint compare --json` writes its targets.
fn compare_json(a: &Value, b: &Value) -> Value {
    let target = |name: &str, v: &Value| {
        let r = typed(v);
        CompareTarget {
            name: name.into(),
            url: Some(r.config.target.url.clone()),
            rounds: vec![r.summary.clone(), r.summary],
            ..CompareTarget::default()
        }
    };
    let doc = CompareResult {
        kind: Kind::Compare,
        schema_version: results::SCHEMA_VERSION,
        targets: vec![target("keep-alive", a), target("http1.0", b)],
        ..CompareResult::default()
    };
    serde_json::to_value(doc).unwrap()
}

/// A lab document with a row per experiment the page draws, from the runs' figures and the
/// server's own counts of its reads and writes.
fn lab_json(runs: &[(&str, &Value, u64, u64)]) -> Value {
    let mut rows = Vec::new();
    for (experiment, size) in [
        ("sizes", Some(1024)),
        ("sizes", Some(6144)),
        ("syscalls", None),
    ] {
        for (mode, v, reads, writes) in runs {
            let r = typed(v);
            let s = &r.summary;
            rows.push(LabRow {
                experiment: experiment.into(),
                server: "flint".into(),
                mode: r.config.http,
                size_bytes: size,
                requests: s.requests,
                duration_s: s.duration_s,
                requests_per_s: s.requests_per_s,
                bytes_per_s: s.throughput_bytes_per_s,
                syscalls_per_request: Some((reads + writes) as f64 / s.requests as f64),
                profile_method: Some(format!("the server's own counters ({mode})")),
                syscalls: Some(vec![
                    SyscallCount {
                        name: "read".into(),
                        calls: *reads,
                        ..SyscallCount::default()
                    },
                    SyscallCount {
                        name: "write".into(),
                        calls: *writes,
                        ..SyscallCount::default()
                    },
                ]),
                ..LabRow::default()
            });
        }
    }
    let (_, v, ..) = runs[0];
    let r = typed(v);
    rows.push(LabRow {
        experiment: "tls".into(),
        server: "flint".into(),
        mode: HttpMode::Http10,
        certificate: Some("ecdsa-p256".into()),
        handshake: Some("full".into()),
        requests: r.summary.requests,
        requests_per_s: r.summary.requests_per_s,
        ..LabRow::default()
    });
    rows.push(LabRow {
        experiment: "digest".into(),
        server: "flint".into(),
        requests_per_s: r.summary.requests_per_s,
        ..LabRow::default()
    });
    let doc = LabResult {
        kind: Kind::Lab,
        experiment: "all".into(),
        servers: vec![LabServer {
            name: "flint".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
            ..LabServer::default()
        }],
        results: rows,
        ..LabResult::default()
    };
    serde_json::to_value(doc).unwrap()
}

/// The cells of the row of table `class` whose first cell names `label`.
fn row<'a>(html: &'a str, class: &str, label: &str) -> Vec<&'a str> {
    let start = html
        .find(&format!(r#"<table class="{class}">"#))
        .expect("the table");
    let table = &html[start..start + html[start..].find("</table>").unwrap()];
    let row = table
        .split("<tr>")
        .find(|r| r.contains(&format!(r#"<span class="file">{label}</span>"#)))
        .unwrap_or_else(|| panic!("no row for {label}"));
    row.split("</td>")
        .filter_map(|c| c.find('>').map(|i| &c[i + 1..]))
        .collect()
}

#[test]
fn real_bench_compare_and_lab_output_renders_every_section() {
    let served = Served::start(false);
    let before = served.stats();
    let keep_alive = bench_json(&served, "http", HttpMode::KeepAlive, TlsOptions::default());
    let mid = served.stats();
    let one_per_request = bench_json(&served, "http", HttpMode::Http10, TlsOptions::default());
    let after = served.stats();
    drop(served);
    let (ka, h10) = (typed(&keep_alive), typed(&one_per_request));
    let lab = lab_json(&[
        (
            "keep-alive",
            &keep_alive,
            mid.reads - before.reads,
            mid.writes - before.writes,
        ),
        (
            "HTTP/1.0",
            &one_per_request,
            after.reads - mid.reads,
            after.writes - mid.writes,
        ),
    ]);
    let compare = compare_json(&keep_alive, &one_per_request);
    let html = report::render(&[
        ("keep-alive.json".into(), keep_alive),
        ("http10.json".into(), one_per_request),
        ("compare.json".into(), compare),
        ("lab.json".into(), lab),
    ])
    .expect("flint's own output renders");
    assert_eq!(
        common::sections(&html),
        [
            "summary",
            "runs",
            "spectrum",
            "timeseries",
            "sizes",
            "syscalls",
            "tls",
            "lab-other",
            "pages",
            "truss",
            "provenance"
        ]
    );
    // The figures of the runs are on the page, as the report formats them.
    for r in [&ka, &h10] {
        let rps = report::text::num(r.summary.requests_per_s);
        assert!(html.contains(&format!(">{rps}<")), "requests/s {rps}");
        let hits = report::text::count(r.pages[0].hits as f64);
        assert!(html.contains(&format!(">{hits}<")), "page hits {hits}");
    }
    assert!(html.contains("http://localhost:"), "the target URL");
    assert!(html.contains(&ka.environment.kernel.clone().unwrap_or_default()));
    // Plain HTTP: no HTTPS table, no handshake columns (the lab's tls rows have their own).
    assert!(!html.contains(r#"<table class="https">"#));
    assert!(!html.contains("Avg TLS handshake s"));
}

#[test]
fn an_https_run_shows_its_handshakes_resumption_and_verification() {
    let served = Served::start(true);
    let tls = TlsOptions {
        insecure: true,
        resume: true,
        ..TlsOptions::default()
    };
    let https = bench_json(&served, "https", HttpMode::Http10, tls);
    let plain_server = Served::start(false);
    let plain = bench_json(
        &plain_server,
        "http",
        HttpMode::Http10,
        TlsOptions::default(),
    );
    drop((served, plain_server));
    let r = typed(&https);
    let agreed = r.summary.tls.clone().expect("summary.tls of an https run");
    let shake = r.summary.tls_handshake_ms.expect("tls_handshake_ms");
    assert!(agreed.handshakes > 0 && shake.count > 0);

    let html = report::render_one(&https).unwrap();
    // The version and the suite as curl and h2load print them (the JSON has rustls's names).
    let version = results::tls_names::version(agreed.version.as_deref().expect("a version"));
    for needle in [
        "Over HTTPS",
        version.as_str(),
        results::tls_names::cipher(agreed.cipher.as_deref().expect("a cipher")),
        "Key exchange",
        agreed.kx.as_deref().expect("a key exchange group"),
        agreed.alpn.as_deref().unwrap_or("–"),
        "NOT verified (--insecure)",
        "on (--tls-resume)",
        "Avg connect s (TCP)",
        "Avg TLS handshake s",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    let ratio = 100.0 * agreed.resumed as f64 / agreed.handshakes as f64;
    for figure in [
        report::text::count(agreed.handshakes as f64),
        report::text::count(agreed.resumed as f64),
        report::text::num(ratio),
        report::text::num(shake.mean / 1e3),
        report::text::num(shake.max / 1e3),
    ] {
        assert!(html.contains(&format!(">{figure}<")), "missing {figure}");
    }

    // Beside a plain-HTTP run, that run's TLS cells are blank; alone, it has no TLS at all.
    let both = report::render(&[
        ("tls.json".into(), https),
        ("plain.json".into(), plain.clone()),
    ])
    .unwrap();
    assert_eq!(both.matches(r#"<table class="https">"#).count(), 1);
    assert!(
        row(&both, "https", "tls").len() > 1,
        "the https run has its row"
    );
    let totals = row(&both, "webstone", "plain");
    assert_eq!(totals[5..8], ["–", "–", "–"], "{totals:?}");
    let totals = row(&both, "webstone", "tls");
    assert_eq!(totals[5], report::text::count(agreed.handshakes as f64));
    let alone = report::render_one(&plain).unwrap();
    for absent in ["Over HTTPS", "TLS handshake", "TLS version", "--insecure"] {
        assert!(!alone.contains(absent), "{absent} in a plain-HTTP report");
    }
}

/// An open-loop run: its latency from each request's intended start is the headline, the
/// uncorrected one (from the actual send) is beside it, and the send lag is shown, each as the
/// run measured it.
#[test]
fn an_open_loop_run_shows_its_latencies_corrected_and_uncorrected_and_its_send_lag() {
    let served = Served::start(false);
    let config = BenchConfig {
        stop: Stop::Pages(60),
        rate: Some(200.0),
        ..BenchConfig::new(Target::http(served.addr))
    };
    let v = run_json(&served, "http", config);
    drop(served);
    let r = typed(&v);
    let html = report::render(&[("open.json".into(), v)]).unwrap();
    let sm = &r.summary;
    let uncorrected = sm
        .response_uncorrected_ms
        .expect("an open loop's uncorrected latency");
    let lag = sm.send_lag_ms.expect("an open loop's send lag");
    assert!(uncorrected.count > 0 && lag.count > 0);
    let ms = |x: f64| report::text::num(x);
    let table = &html[html
        .find(r#"<table class="openloop">"#)
        .expect("an open-loop table")..];
    let table = &table[..table.find("</table>").unwrap()];
    for (name, l) in [
        ("response", &sm.response_ms),
        ("response, uncorrected", &uncorrected),
        ("page", &sm.page_ms),
        (
            "page, uncorrected",
            sm.page_uncorrected_ms.as_ref().unwrap(),
        ),
        ("send lag", &lag),
    ] {
        let row = format!(
            "<td>{name}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td>",
            ms(l.p50),
            ms(l.p90),
            ms(l.p99),
            ms(l.p999),
            ms(l.max),
            report::text::count(l.count as f64)
        );
        assert!(table.contains(&row), "no {row} in {table}");
    }
    // The summary's headline is the corrected latency, the uncorrected one beneath it.
    assert!(html.contains(&format!(
        r#"{}<small class="rng">{} uncorrected</small>"#,
        ms(sm.response_ms.p99),
        ms(uncorrected.p99)
    )));
    assert!(html.contains("send lag: how late each page was sent against its schedule"));
    assert!(html.contains(&format!(
        "Pages due in the window: {}",
        report::text::count(sm.pages_scheduled.unwrap() as f64)
    )));
}
