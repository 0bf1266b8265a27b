//! The report in a real browser: Debian's headless Chromium loads the page from disk, the page's
//! own check script counts what every chart drew, `--dump-dom` hands the verdict back, and a
//! screenshot proves something was painted.
//!
//! Not skipped when Chromium is missing: the test fails and says how to install it
//! (`scripts/install-browser.sh`, which `scripts/test` runs). To keep the screenshot, set
//! `FLINT_REPORT_SCREENSHOT=path.png` (and optionally `FLINT_REPORT_WINDOW=1100,2600`).

mod common;

use std::path::Path;
use test_support::chromium;

/// Runs headless Chromium on `url` with `extra` flags (and its log on stderr, where the page's
/// console messages are read from), with a fresh profile, bounded in time.
fn run_chromium(url: &str, extra: &[String], scratch: &Path) -> chromium::Output {
    let mut flags = vec!["--enable-logging=stderr".to_owned(), "--v=0".to_owned()];
    flags.extend_from_slice(extra);
    chromium::run(url, &flags, scratch)
}

/// The value of attribute `name` on the `<body>` tag of a DOM dump.
fn body_attr<'a>(dom: &'a str, name: &str) -> Option<&'a str> {
    let start = dom.find("<body")?;
    let tag = &dom[start..start + dom[start..].find('>')?];
    let key = format!(" {name}=\"");
    let i = tag.find(&key)? + key.len();
    Some(&tag[i..i + tag[i..].find('"')?])
}

/// The page's console messages in Chromium's log (`--enable-logging=stderr`). The report's
/// script logs nothing, so any line here is an uncaught exception or a browser complaint about
/// the page (Chromium logs `console.error` and uncaught errors alike as `INFO:CONSOLE`).
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains(":CONSOLE")).collect()
}

/// Width and height from a PNG's IHDR chunk.
fn png_size(png: &[u8]) -> (u32, u32) {
    assert!(png.len() > 24, "PNG too short");
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n", "not a PNG");
    assert_eq!(&png[12..16], b"IHDR", "first chunk is not IHDR");
    let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
    (be(&png[16..20]), be(&png[20..24]))
}

#[test]
fn report_loads_and_draws_every_chart_in_chromium() {
    let dir = tempfile::tempdir().expect("temp dir");
    let html = report::render(&common::inputs()).expect("render");
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("write report");
    let url = format!("file://{}", page.display());

    // What the page promised: its charts and their points.
    let charts = html.matches(r#"<svg class="chart""#).count();
    let promised: usize = html
        .match_indices(r#"data-points=""#)
        .map(|(i, m)| {
            let rest = &html[i + m.len()..];
            rest[..rest.find('"').unwrap()].parse::<usize>().unwrap()
        })
        .sum();
    assert!(
        charts >= 8 && promised > 100,
        "{charts} charts, {promised} points"
    );

    // 1. After load, in the browser: the check script's verdict, and the DOM it saw.
    let dump = run_chromium(&url, &["--dump-dom".into()], dir.path());
    let dom = &dump.stdout;
    assert!(dom.contains("</html>"), "no DOM dumped:\n{}", dump.stderr);
    assert_eq!(
        body_attr(dom, "data-ok"),
        Some("ok"),
        "the page's check failed or did not run"
    );
    assert_eq!(
        body_attr(dom, "data-charts"),
        Some(charts.to_string().as_str())
    );
    assert_eq!(
        body_attr(dom, "data-points"),
        Some(promised.to_string().as_str())
    );
    assert!(dom.matches("<polyline class=\"series\"").count() >= 10);
    assert!(dom.matches("<rect class=\"bar\"").count() >= 10);
    let console = console_lines(&dump.stderr);
    assert!(
        console.is_empty(),
        "the page wrote to the console: {console:#?}"
    );

    // 2. Painted: a screenshot of the size asked for, with more in it than a blank page.
    let window = std::env::var("FLINT_REPORT_WINDOW").unwrap_or_else(|_| "1280,3000".into());
    let (w, h) = window.split_once(',').expect("FLINT_REPORT_WINDOW is W,H");
    let png_path = dir.path().join("report.png");
    run_chromium(
        &url,
        &[
            format!("--screenshot={}", png_path.display()),
            format!("--window-size={window}"),
        ],
        dir.path(),
    );
    let png = std::fs::read(&png_path).expect("chromium wrote no screenshot");
    assert_eq!(png_size(&png), (w.parse().unwrap(), h.parse().unwrap()));
    assert!(
        png.len() > 60_000,
        "screenshot is nearly empty: {} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("FLINT_REPORT_SCREENSHOT") {
        std::fs::copy(&png_path, &keep).expect("copy screenshot");
        std::fs::write(Path::new(&keep).with_extension("html"), &html).expect("copy page");
    }
}

/// The in-page check must be able to fail: a chart whose line lost its points is reported.
#[test]
fn check_script_reports_a_chart_that_drew_less_than_it_declares() {
    let dir = tempfile::tempdir().expect("temp dir");
    let html = report::render(&common::inputs()).expect("render");
    let broken = html.replacen(
        r#"<polyline class="series" points=""#,
        r#"<polyline class="series" data-gone=""#,
        1,
    );
    assert_ne!(broken, html);
    let page = dir.path().join("broken.html");
    std::fs::write(&page, broken).expect("write page");
    let dump = run_chromium(
        &format!("file://{}", page.display()),
        &["--dump-dom".into()],
        dir.path(),
    );
    let verdict = body_attr(&dump.stdout, "data-ok").unwrap_or("");
    assert!(verdict.starts_with("bad: chart-"), "verdict: {verdict:?}");
}

#[test]
fn console_lines_catch_exceptions_and_console_errors() {
    // As Chromium 156 logs them.
    let log = "[1:1:1121/093301.07:INFO:CONSOLE:1] \"Uncaught Error: boom\", source: file:///r.html (1)\n\
               [1:2:1121/093301.07:ERROR:dbus/bus.cc:405] Failed to connect to the bus\n\
               [1:1:1121/093301.08:INFO:CONSOLE:1] \"bad thing\", source: file:///r.html (1)\n";
    let lines = console_lines(log);
    assert_eq!(lines.len(), 2);
    assert!(lines[0].contains("boom") && lines[1].contains("bad thing"));
}

#[test]
fn body_attr_reads_the_body_tag_only() {
    let dom =
        r#"<html><head></head><body data-ok="ok" data-charts="3"><p data-ok="no"></p></body>"#;
    assert_eq!(body_attr(dom, "data-ok"), Some("ok"));
    assert_eq!(body_attr(dom, "data-charts"), Some("3"));
    assert_eq!(body_attr(dom, "data-x"), None);
}

/// An HTTPS run (its certificate column names a long --cacert path) beside the lab's and a
/// comparison's tables: at a laptop's width no table is wider than the page (none scrolls
/// sideways, cutting a column from view), and no word of a heading or a short cell is split
/// across lines to make room (the syscalls table's `persis|tent`): only long text (a path, a
/// URL, a cipher suite's name) breaks where it must.
#[test]
fn no_table_is_cut_nor_a_word_split_at_a_laptops_width() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut https = common::bench(50_900.0, 0.254, 12, 3, false);
    https["config"]["target"]["url"] = "https://www.example.test:8443/".into();
    https["config"]["tls"] = serde_json::json!({
        "verify": true, "resume": false, "version": "1.3",
        "cacert": "/home/someone/projects/site/deploy/certificates/staging-ca-bundle.pem"
    });
    https["summary"]["tls"] = serde_json::json!({
        "version": "TLSv1_3", "cipher": "TLS13_AES_128_GCM_SHA256", "kx": "X25519MLKEM768",
        "alpn": "http/1.1", "handshakes": 16, "resumed": 0
    });
    https["summary"]["tls_handshake_ms"] = https["summary"]["connect_ms"].clone();
    // The syscalls experiment's ways over TLS as well: twice the modes of its per-request table.
    let mut lab = common::lab();
    let rows = lab["results"].as_array_mut().unwrap();
    let over_tls: Vec<serde_json::Value> = rows
        .iter()
        .filter(|r| r["experiment"] == "syscalls")
        .map(|r| {
            let mut r = r.clone();
            r["tls"] = true.into();
            r
        })
        .collect();
    assert!(!over_tls.is_empty());
    rows.extend(over_tls);
    let mut inputs = common::inputs();
    inputs.push(("https.json".into(), https));
    inputs.push(("lab-tls.json".into(), lab));
    let html = report::render(&inputs).expect("render");
    assert!(html.contains("Over HTTPS"), "no HTTPS table");
    let page = dir.path().join("report.html");
    std::fs::write(&page, &html).expect("write report");
    let dump = run_chromium(
        &format!("file://{}", page.display()),
        &["--dump-dom".into(), "--window-size=1280,3000".into()],
        dir.path(),
    );
    assert_eq!(
        body_attr(&dump.stdout, "data-ok"),
        Some("ok"),
        "{}",
        dump.stderr
    );
    assert_eq!(
        body_attr(&dump.stdout, "data-cut-tables"),
        Some("0"),
        "tables cut: {:?}",
        body_attr(&dump.stdout, "data-cut-which")
    );
    assert_eq!(
        body_attr(&dump.stdout, "data-broken-words"),
        Some("0"),
        "words split across lines: {:?}",
        body_attr(&dump.stdout, "data-broken-which")
    );
}
