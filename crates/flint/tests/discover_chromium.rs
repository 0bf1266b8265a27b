//! The truth for `flint discover`: Debian's headless Chromium loads each page of the generated
//! site with its network log on (`--log-net-log`), and the files it requested from the site
//! for that page equal what flint found, less the differences listed here, each intended:
//!
//! - an iframe is a page of its own in the workload; Chromium loads it with its parent, so the
//!   frame page's files are added to the parent's for the comparison;
//! - a request that failed (the broken image's 404) is a comment in the workload, not a file:
//!   flint requested it as Chromium did, so it is in both sets;
//! - icons (`/favicon.ico`, and `<link rel=icon>`'s): the browser's own interface asks for
//!   them (a tab's icon), not the page, and a headless Chromium that exits once the page has
//!   loaded may or may not have asked yet: they are left out of both sets (the expected-workload
//!   test checks that flint lists the declared icon);
//!
//! Chromium runs at an 800 px wide window, and flint with `--viewport 800`, so both pick the
//! same srcset candidate. Not skipped when Chromium is missing: the test fails saying how to
//! install it (scripts/install-browser.sh, which the test command runs).

mod common;
mod discover_site;

use common::start_server;
use discover::{Entry, Limits, Options, TlsOptions};
use std::collections::BTreeSet;
use std::time::Duration;

/// Asked for by the browser's interface, whenever it gets to it: left out of both sets.
const ICONS: &[&str] = &["/favicon.ico", "/img/icon.png"];

#[test]
fn chromium_requests_what_flint_discovers() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let start = url::Url::parse(&format!("{origin}/index.html")).unwrap();
    let site = discover::crawl(
        &start,
        &Options {
            depth: 1,
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
            browser: None,
        },
    )
    .expect("crawl");
    assert_eq!(site.pages.len(), 3);

    // Per page: what flint requested for it (files, failed same-origin requests, and the
    // files of the frames it holds).
    let requested = |path: &str| -> BTreeSet<String> {
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
                Entry::Skipped { url, reason } if url.starts_with('/') => {
                    assert!(reason.starts_with("404"), "{url}: {reason}");
                    set.insert(url.clone());
                }
                Entry::Skipped { .. } => {} // another origin
            }
        }
        set
    };
    let scratch = tempfile::tempdir().unwrap();
    let mut compared = 0;
    for page in &site.pages {
        let urls = discover_site::chromium_requests(
            &format!("{origin}{}", page.path),
            scratch.path(),
            &[],
        );
        let chromium: BTreeSet<String> = urls
            .iter()
            .filter_map(|u| u.strip_prefix(&origin))
            .filter(|p| !ICONS.contains(p))
            .map(str::to_owned)
            .collect();
        let flint: BTreeSet<String> = requested(&page.path)
            .into_iter()
            .filter(|p| !ICONS.contains(&p.as_str()))
            .collect();
        assert_eq!(
            chromium, flint,
            "page {}: Chromium requested (left) and flint found (right)\nall Chromium's: {urls:#?}",
            page.path
        );
        compared += chromium.len();
    }
    // Not a vacuous comparison: the site's every reference kind was requested.
    assert!(compared > 30, "{compared} requests compared");
}
