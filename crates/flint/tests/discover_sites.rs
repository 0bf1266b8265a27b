//! `flint discover` held to Chromium on real third-party sites, installed by
//! `scripts/install-sites.sh` (which the test command runs): a Sphinx manual from a Debian doc
//! package (python-cbor2-doc: the Read the Docs theme, its web fonts and Font Awesome 4) and a
//! Bootstrap theme with Font Awesome 5 from npm (Start Bootstrap's SB Admin 2). Each is copied
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

mod common;
mod discover_site;

use common::start_server;
use discover::browser::{find_chromium, BrowserOptions};
use discover::{Entry, Limits, Options, Site, TlsOptions};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Asked for by the browser's interface whenever it gets to it: left out of both sets.
const ICONS: &[&str] = &["/favicon.ico"];

/// The lowest precision and recall the HTML mode may have on a page no script fetches for.
const HTML_MODE_FLOOR: f64 = 0.95;
/// How far a page's bytes may be from the browser's (a fraction of them).
const BYTES_TOLERANCE: f64 = 0.05;

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

/// Each page of the site crawled from `start` in both modes, against Chromium's record; the
/// table's lines printed, the bounds asserted. Returns the pages compared.
fn hold_to_chromium(name: &str, tree: &Path, start: &str, max_pages: usize) -> usize {
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
                let file = root
                    .path()
                    .join(p.split('?').next().unwrap().trim_start_matches('/'));
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
    // The HTML mode's floor held on some pages, not on none.
    assert!(scripted < html.pages.len(), "{name}: every page scripted");
    html.pages.len()
}

#[test]
fn a_sphinx_manual_from_a_debian_doc_package() {
    let tree = Path::new("/usr/share/doc/python-cbor2-doc/html");
    hold_to_chromium("cbor2 manual (Sphinx)", tree, "/index.html", 20);
}

#[test]
fn a_bootstrap_theme_with_font_awesome_from_npm() {
    let tree = sites_dir().join("sb-admin-2");
    hold_to_chromium("SB Admin 2 (Bootstrap)", &tree, "/index.html", 20);
}
