//! `flint discover` held to Chromium on real third-party sites, installed by
//! `scripts/install-sites.sh` (which the test command runs): a Sphinx manual from a Debian doc
//! package (python-cbor2-doc: the Read the Docs theme, its web fonts and Font Awesome 4), a
//! Bootstrap theme with Font Awesome 5 from npm (Start Bootstrap's SB Admin 2), and a
//! script-heavy site built here by its own generator: MkDocs with the Material theme (Debian's
//! mkdocs-material 8.2) on the small project in `tests/discover_sites/mkdocs`, whose script
//! fetches the search index and starts the search's web worker on every page. Each is copied
//! (symlinks followed: Debian's doc packages link their `_static` files into other packages)
//! and served by `flint serve` on 127.0.0.1:0.
//!
//! Per page, against Chromium's record (its net log, a separate run with `--virtual-time-budget`
//! so that what scripts fetch after the load is in it; the site's URLs, icons aside as in the
//! other Chromium tests): the precision and recall of the HTML mode's file set and of
//! `--browser`'s, and each one's bytes over what the browser downloaded (the sizes of the files
//! it requested: flint serve sends them uncompressed, as bench asks). The HTML mode must reach
//! 0.95 on pages where no script fetches files (those whose `--browser` record names no file of
//! initiator `script`), and be within 5% of the browser's bytes there; `--browser` must be
//! exact, and within 5% of its bytes, on every page. Not skipped when a site or Chromium is
//! missing: the test fails saying what to install.

use crate::common;
use crate::discover_site;

use common::start_server;
use discover::browser::{find_chromium, BrowserOptions};
use discover::{Entry, Limits, Options, Site, TlsOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Asked for by the browser's interface whenever it gets to it (once per browser for an icon it
/// already has: the crawl's on its first page, each of the log's runs on theirs): left out of
/// both sets. The second is MkDocs Material's `<link rel=icon>`.
const ICONS: &[&str] = &["/favicon.ico", "/assets/images/favicon.png"];

/// The lowest precision and recall the HTML mode may have on a page no script fetches for.
const HTML_MODE_FLOOR: f64 = 0.95;
/// How far a page's bytes may be from the browser's (a fraction of them).
const BYTES_TOLERANCE: f64 = 0.05;
/// How long `mkdocs build` may take on a loaded machine (it takes a few seconds).
const BUILD_LIMIT: Duration = Duration::from_secs(120);

/// Where install-sites.sh unpacks the npm sites.
fn sites_dir() -> PathBuf {
    std::env::var_os("FLINT_SITES")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/local/share/flint/sites"))
}

/// `from` copied to `to`, symlinks followed (a link out of the tree becomes its file).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        let meta = std::fs::metadata(&src).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        if meta.is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap_or_else(|e| panic!("{}: {e}", src.display()));
        }
    }
}

fn installed(dir: &Path) -> &Path {
    assert!(
        dir.join("index.html").is_file(),
        "{} is not installed: run `sudo scripts/install-sites.sh`",
        dir.display()
    );
    dir
}

fn crawl(start: &url::Url, depth: u32, max_pages: usize, browser: bool) -> Site {
    discover::crawl(
        start,
        &Options {
            depth,
            max_pages,
            max_files: 1000,
            ignore_robots: false,
            viewport: Some(800),
            dark: false,
            limits: Limits {
                max_size: 32 << 20,
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

/// A page's same-origin requests as the workload has them (files, failed requests, the files
/// of the frames it holds), icons aside, each with the bytes the workload gives it.
fn requested(site: &Site, path: &str) -> BTreeMap<String, u64> {
    let page = site.pages.iter().find(|p| p.path == path).unwrap();
    let mut set = BTreeMap::new();
    for entry in &page.entries {
        match entry {
            Entry::File(f) => {
                set.insert(f.path.clone(), f.bytes);
            }
            Entry::Skipped { url, reason } if reason.contains("iframe") => {
                let frame = site.pages.iter().find(|p| p.path == *url).unwrap();
                set.extend(frame.files().map(|f| (f.path.clone(), f.bytes)));
            }
            Entry::Skipped { url, .. } if url.starts_with('/') => {
                set.insert(url.clone(), 0);
            }
            Entry::Skipped { .. } => {} // another origin
        }
    }
    set.retain(|p, _| !ICONS.contains(&p.as_str()));
    set
}

/// One mode's figures on one page.
struct Figures {
    precision: f64,
    recall: f64,
    /// Its bytes over the browser's.
    bytes: f64,
}

fn figures(flint: &BTreeMap<String, u64>, chromium: &BTreeMap<String, u64>) -> Figures {
    let both = flint.keys().filter(|p| chromium.contains_key(*p)).count() as f64;
    let sum = |m: &BTreeMap<String, u64>| m.values().sum::<u64>() as f64;
    Figures {
        precision: both / flint.len() as f64,
        recall: both / chromium.len() as f64,
        bytes: sum(flint) / sum(chromium),
    }
}

/// The pages compared on a site, and how many of them a script fetched files for.
struct Held {
    pages: usize,
    scripted: usize,
}

/// Each page of the site crawled from `start` in both modes, against Chromium's record; the
/// table's lines printed, the bounds asserted.
fn hold_to_chromium(name: &str, tree: &Path, start: &str, max_pages: usize) -> Held {
    let root = tempfile::tempdir().unwrap();
    copy_tree(installed(tree), root.path());
    let server = start_server(root.path(), 1);
    let origin = format!("http://{}", server.addr);
    let start = url::Url::parse(&format!("{origin}{start}")).unwrap();
    let html = crawl(&start, 1, max_pages, false);
    let browser = crawl(&start, 1, max_pages, true);
    let paths = |s: &Site| -> Vec<String> { s.pages.iter().map(|p| p.path.clone()).collect() };
    assert_eq!(paths(&html), paths(&browser), "{name}: the same pages");
    assert!(html.pages.len() >= 5, "{name}: {:?}", paths(&html));

    let scratch = tempfile::tempdir().unwrap();
    let mut failures = Vec::new();
    let mut scripted = 0;
    for page in &html.pages {
        let log = discover_site::chromium_net_log(
            &format!("{origin}{}", page.path),
            scratch.path(),
            &["--virtual-time-budget=5000"],
        );
        let chromium: BTreeMap<String, u64> = log
            .iter()
            .filter_map(|(u, _)| u.strip_prefix(&origin))
            .map(|p| p.split('#').next().unwrap_or(p))
            .filter(|p| !ICONS.contains(p))
            .map(|p| {
                let mut file = root
                    .path()
                    .join(p.split('?').next().unwrap().trim_start_matches('/'));
                if file.is_dir() {
                    file.push("index.html"); // as flint serve answers a directory
                }
                let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
                (p.to_owned(), size)
            })
            .collect();
        let by_script = browser
            .pages
            .iter()
            .find(|p| p.path == page.path)
            .unwrap()
            .files()
            .any(|f| f.initiator == Some("script"));
        scripted += usize::from(by_script);
        let h = figures(&requested(&html, &page.path), &chromium);
        let b = figures(&requested(&browser, &page.path), &chromium);
        eprintln!(
            "{name} {}: {} files; HTML mode precision {:.2} recall {:.2} bytes {:.3}{}; \
             --browser precision {:.2} recall {:.2} bytes {:.3}",
            page.path,
            chromium.len(),
            h.precision,
            h.recall,
            h.bytes,
            if by_script { " (a script fetches)" } else { "" },
            b.precision,
            b.recall,
            b.bytes
        );
        if !by_script
            && (h.precision < HTML_MODE_FLOOR
                || h.recall < HTML_MODE_FLOOR
                || (h.bytes - 1.0).abs() > BYTES_TOLERANCE)
        {
            let (f, c) = (requested(&html, &page.path), &chromium);
            failures.push(format!(
                "{name} {}: HTML mode below the bounds: listed, not requested {:?}; requested, \
                 not listed {:?}",
                page.path,
                f.keys().filter(|p| !c.contains_key(*p)).collect::<Vec<_>>(),
                c.keys().filter(|p| !f.contains_key(*p)).collect::<Vec<_>>(),
            ));
        }
        if b.precision < 1.0 || b.recall < 1.0 || (b.bytes - 1.0).abs() > BYTES_TOLERANCE {
            let (f, c) = (requested(&browser, &page.path), &chromium);
            failures.push(format!(
                "{name} {}: --browser not exact: listed, not requested {:?}; requested, not \
                 listed {:?}; bytes {:.3}",
                page.path,
                f.keys().filter(|p| !c.contains_key(*p)).collect::<Vec<_>>(),
                c.keys().filter(|p| !f.contains_key(*p)).collect::<Vec<_>>(),
                b.bytes
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    Held {
        pages: html.pages.len(),
        scripted,
    }
}

/// The MkDocs project under `tests/discover_sites/mkdocs` built into `out` by `mkdocs build`
/// (bounded; its output shown if it fails).
fn mkdocs_build(out: &Path) {
    let project = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/discover_sites/mkdocs");
    let log = tempfile::NamedTempFile::new().unwrap();
    let spawned = Command::new("mkdocs")
        .arg("build")
        .arg("--config-file")
        .arg(project.join("mkdocs.yml"))
        .arg("--site-dir")
        .arg(out)
        .stdin(Stdio::null())
        .stdout(log.reopen().unwrap())
        .stderr(log.reopen().unwrap())
        .spawn();
    let mut child = spawned.unwrap_or_else(|e| {
        panic!("mkdocs: {e}: run `sudo scripts/install-sites.sh` (Debian's mkdocs-material)")
    });
    let status = common::wait_exit(&mut child, BUILD_LIMIT);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    let output = std::fs::read_to_string(log.path()).unwrap_or_default();
    match status {
        Some(s) if s.success() => {}
        Some(s) => panic!("mkdocs build failed ({s}):\n{output}"),
        None => panic!("mkdocs build did not finish within {BUILD_LIMIT:?}:\n{output}"),
    }
}

#[test]
fn a_sphinx_manual_from_a_debian_doc_package() {
    let tree = Path::new("/usr/share/doc/python-cbor2-doc/html");
    let held = hold_to_chromium("cbor2 manual (Sphinx)", tree, "/index.html", 20);
    // The HTML mode's floor held on some pages, not on none.
    assert!(held.scripted < held.pages, "every page scripted");
}

#[test]
fn a_bootstrap_theme_with_font_awesome_from_npm() {
    let tree = sites_dir().join("sb-admin-2");
    let held = hold_to_chromium("SB Admin 2 (Bootstrap)", &tree, "/index.html", 20);
    assert!(held.scripted < held.pages, "every page scripted");
}

/// Material's script fetches `search/search_index.json` on every page (and starts the search's
/// worker, whose script's request ends on the worker's own DevTools target): every page is one
/// a script fetches for, so the HTML mode's figures are printed, not held; `--browser` is held
/// to be exact on each.
#[test]
fn a_script_heavy_site_built_by_its_generator() {
    let site = tempfile::tempdir().unwrap();
    mkdocs_build(site.path());
    let held = hold_to_chromium("Lantern (MkDocs Material)", site.path(), "/", 20);
    assert_eq!(held.scripted, held.pages, "the search index on every page");
}
