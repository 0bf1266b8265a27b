//! `flint discover --browser` held to the truth: the generated site of the Chromium test, a
//! page whose script fetches a JSON file, inserts the image it names and prefetches a file,
//! crawled with `--browser`; each page's file set equals what Chromium's own network log
//! (a separate run, `--log-net-log`) shows it requested for that page (precision and recall
//! 1.00), each file's size is the file's, and each file has the initiator Chromium gave it.
//!
//! As in the Chromium test, icons are left out of both sets (the browser's interface asks for
//! them whenever it gets to it) and a frame's files are its own page's, added to its parent's
//! for the comparison. The log's run waits on virtual time (`--virtual-time-budget`) so that
//! what the script fetches after the load is in it too.
//!
//! A page whose script starts a web worker (which imports a script and starts a worker of its
//! own that fetches a file, then fetches a JSON file) and inserts the image the JSON names is
//! held to the files it is built to need, each one's request made only once the one before it
//! has answered: virtual time does not wait on a worker's requests (the log's run ends at a
//! different point of the chain each time), so the log cannot be that page's truth.

use crate::common;
use crate::discover_site;

use common::start_server;
use discover::browser::{find_chromium, BrowserOptions};
use discover::{Entry, Limits, Options, Site, TlsOptions};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Asked for by the browser's interface, whenever it gets to it: left out of both sets.
const ICONS: &[&str] = &["/favicon.ico", "/img/icon.png"];

/// A page that needs a script to find its files.
const SCRIPTED: &str = r#"<!doctype html>
<html><head><title>scripted</title>
<link rel="prefetch" href="/next.html">
<script src="/js/scripted.js"></script>
</head><body><p>Scripted.</p></body></html>
"#;

const SCRIPT: &str = r#"
fetch('/data/index.json').then(r => r.json()).then(d => {
  const img = document.createElement('img');
  img.src = d.image;
  document.body.appendChild(img);
});
const hint = document.createElement('link');
hint.rel = 'prefetch';
hint.href = '/js/later.js';
document.head.appendChild(hint);
"#;

/// A page whose files a worker fetches, and a worker it starts.
const WORKER_PAGE: &str = r#"<!doctype html>
<html><head><title>worker</title>
<script>
const worker = new Worker('/js/worker.js');
worker.onmessage = e => {
  const img = document.createElement('img');
  img.src = e.data;
  document.body.appendChild(img);
};
</script>
</head><body><p>Worker.</p></body></html>
"#;

/// Names the image once its own worker has fetched its file: the image in the record tells that
/// every worker's request was made before the record ended.
const WORKER: &str = r#"
importScripts('/js/worker-helper.js');
const nested = new Worker('/js/nested-worker.js');
nested.onmessage = () =>
  fetch('/data/worker.json').then(r => r.json()).then(d => postMessage(d.image));
"#;

fn write_scripted(root: &Path) {
    let put = |path: &str, bytes: &[u8]| {
        let file = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, bytes).unwrap();
    };
    put("/scripted.html", SCRIPTED.as_bytes());
    put("/js/scripted.js", SCRIPT.as_bytes());
    put("/data/index.json", br#"{"image": "/img/by-script.png"}"#);
    put("/img/by-script.png", &[b'y'; 3333]);
    put("/js/later.js", b"var later = 1;\n");
    put("/next.html", b"<!doctype html><p>next</p>\n");
    put("/worker.html", WORKER_PAGE.as_bytes());
    put("/js/worker.js", WORKER.as_bytes());
    put("/js/worker-helper.js", b"var helper = 1;\n");
    put(
        "/js/nested-worker.js",
        b"fetch('/data/nested.json').then(r => r.text()).then(() => postMessage('done'));\n",
    );
    put("/data/worker.json", br#"{"image": "/img/by-worker.png"}"#);
    put("/data/nested.json", &[b' '; 777]);
    put("/img/by-worker.png", &[b'w'; 3333]);
}

fn crawl(start: &url::Url, depth: u32, browser: bool) -> Site {
    discover::crawl(
        start,
        &Options {
            depth,
            max_pages: 100,
            max_files: 1000,
            ignore_robots: false,
            viewport: Some(800),
            dark: false,
            limits: Limits {
                max_size: 1 << 20,
                timeout: Duration::from_secs(10),
                rate: 0.0,
            },
            tls: TlsOptions::default(),
            http: discover::Http::Http11,
            stop: None,
            browser: browser.then(|| BrowserOptions {
                chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
                all_origins: false,
                page_timeout: Duration::from_secs(60),
                insecure: false,
            }),
        },
    )
    .expect("crawl")
}

/// A page's same-origin requests as the workload has them: files, failed requests (comments
/// with a path), and the files of the frames it holds.
fn requested(site: &Site, path: &str) -> BTreeSet<String> {
    let page = site.pages.iter().find(|p| p.path == path).unwrap();
    let mut set = BTreeSet::new();
    for entry in &page.entries {
        match entry {
            Entry::File(f) => {
                set.insert(f.path.clone());
            }
            Entry::Skipped { url, reason } if reason.contains("iframe") => {
                let frame = site.pages.iter().find(|p| p.path == *url).unwrap();
                set.extend(frame.files().map(|f| f.path.clone()));
            }
            Entry::Skipped { url, reason } => {
                assert!(url.starts_with('/'), "{url}: {reason}");
                assert!(reason.starts_with("404"), "{url}: {reason}");
                set.insert(url.clone());
            }
        }
    }
    set
}

#[test]
fn browser_mode_finds_exactly_what_chromium_requests() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    let site_files = discover_site::write(root.path(), &server.addr);
    write_scripted(root.path());
    let origin = format!("http://{}", server.addr);
    let url = |p: &str| url::Url::parse(&format!("{origin}{p}")).unwrap();

    let site = crawl(&url("/index.html"), 1, true);
    // The crawl is the HTML mode's: the same pages, found by the same links, and the same
    // notes (links to another origin, robots.txt, --depth).
    let html = crawl(&url("/index.html"), 1, false);
    let paths = |s: &Site| -> Vec<String> { s.pages.iter().map(|p| p.path.clone()).collect() };
    assert_eq!(paths(&site), ["/index.html", "/frame.html", "/about.html"]);
    assert_eq!(paths(&site), paths(&html));
    assert_eq!(site.notes, html.notes);
    assert_eq!(site.links_found, html.links_found);
    let scripted = crawl(&url("/scripted.html"), 0, true);
    assert_eq!(scripted.pages.len(), 1);
    let worker = crawl(&url("/worker.html"), 0, true);
    assert_eq!(worker.pages.len(), 1);
    // The workers' requests end on their own targets: seen ending, the page is not held to
    // its timeout with them as comments.
    assert!(worker.pages[0].notes.is_empty(), "{:?}", worker.pages[0]);
    assert!(
        !worker.pages[0].entries.iter().any(
            |e| matches!(e, Entry::Skipped { reason, .. } if reason.contains("still loading"))
        ),
        "{:?}",
        worker.pages[0]
    );

    let scratch = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for (site, page) in site
        .pages
        .iter()
        .map(|p| (&site, p))
        .chain(scripted.pages.iter().map(|p| (&scripted, p)))
    {
        let urls = discover_site::chromium_requests(
            &format!("{origin}{}", page.path),
            scratch.path(),
            &["--virtual-time-budget=5000"],
        );
        let chromium: BTreeSet<String> = urls
            .iter()
            .filter_map(|u| u.strip_prefix(&origin))
            .filter(|p| !ICONS.contains(p))
            .map(str::to_owned)
            .collect();
        let flint: BTreeSet<String> = requested(site, &page.path)
            .into_iter()
            .filter(|p| !ICONS.contains(&p.as_str()))
            .collect();
        let both = chromium.intersection(&flint).count() as f64;
        let (precision, recall) = (both / flint.len() as f64, both / chromium.len() as f64);
        eprintln!(
            "{}: {} files, precision {precision:.2}, recall {recall:.2}",
            page.path,
            flint.len()
        );
        assert_eq!(
            chromium, flint,
            "page {}: Chromium's net log (left) and --browser (right)\nall Chromium's: {urls:#?}",
            page.path
        );
        compared += chromium.len();
    }
    assert!(compared > 30, "{compared} requests compared");
    let by_worker: BTreeSet<String> = requested(&worker, "/worker.html")
        .into_iter()
        .filter(|p| !ICONS.contains(&p.as_str()))
        .collect();
    assert_eq!(
        by_worker,
        BTreeSet::from(
            [
                "/worker.html",
                "/js/worker.js",
                "/js/worker-helper.js",
                "/js/nested-worker.js",
                "/data/nested.json",
                "/data/worker.json",
                "/img/by-worker.png",
            ]
            .map(String::from)
        )
    );

    // Sizes are the files' (the generated site's, and the scripted page's on disk).
    for f in site
        .pages
        .iter()
        .chain(&scripted.pages)
        .chain(&worker.pages)
        .flat_map(|p| p.files())
    {
        let on_disk = std::fs::metadata(root.path().join(f.path.trim_start_matches('/')))
            .unwrap()
            .len();
        assert_eq!(f.bytes, on_disk, "{}", f.path);
        if let Some(&size) = site_files.sizes.get(&f.path) {
            assert_eq!(f.bytes, size, "{}", f.path);
        }
    }

    // Initiators, where Chromium's answer is fixed: the page's own references are the
    // parser's, what the script asked for the script's, the hints prefetches.
    let initiator = |site: &Site, path: &str| {
        site.pages
            .iter()
            .flat_map(|p| p.files())
            .find(|f| f.path == path)
            .unwrap_or_else(|| panic!("{path} not found"))
            .initiator
    };
    assert_eq!(initiator(&scripted, "/scripted.html"), Some("other"));
    assert_eq!(initiator(&scripted, "/js/scripted.js"), Some("parser"));
    assert_eq!(initiator(&scripted, "/data/index.json"), Some("script"));
    assert_eq!(initiator(&scripted, "/next.html"), Some("prefetch"));
    assert_eq!(initiator(&scripted, "/js/later.js"), Some("prefetch"));
    assert!(initiator(&scripted, "/img/by-script.png").is_some());
    assert_eq!(initiator(&site, "/css/site.css"), Some("parser"));
    assert_eq!(initiator(&site, "/img/preload.png"), Some("preload"));
    // A worker's script is "other" to DevTools; what a worker's script asks for, the script's.
    assert_eq!(initiator(&worker, "/js/worker.js"), Some("other"));
    assert_eq!(initiator(&worker, "/js/nested-worker.js"), Some("other"));
    for path in [
        "/js/worker-helper.js",
        "/data/worker.json",
        "/data/nested.json",
    ] {
        assert_eq!(initiator(&worker, path), Some("script"), "{path}");
    }
    assert!(initiator(&worker, "/img/by-worker.png").is_some());
}
