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
//! Stylesheets for other media (`/media.html`): Chromium fetches every `<link rel=stylesheet>`
//! whatever its `media` (one that does not hold at the lowest priority, `IDLE` in its net log)
//! and every `@import` whatever its media list (not one whose `supports()` fails), the imports
//! of a stylesheet that does not apply included, and applies none of their rules: no `url()`
//! or font face of theirs is fetched; a `<style media=print>`'s `@import` is fetched, its
//! `url()`s are not; a preload whose `media` does not hold is not fetched, a prefetch is
//! whatever its `media`. flint is held to that set, and to the priorities.
//!
//! Chromium runs at an 800 px wide window, and flint with `--viewport 800`, so both pick the
//! same srcset candidate. Not skipped when Chromium is missing: the test fails saying how to
//! install it (scripts/install-browser.sh, which the test command runs).

use crate::common;
use crate::discover_site;

use common::start_server;
use discover::{Entry, Limits, Options, TlsOptions};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Asked for by the browser's interface, whenever it gets to it: left out of both sets.
const ICONS: &[&str] = &["/favicon.ico", "/img/icon.png"];

fn crawl(start: &url::Url, depth: u32) -> discover::Site {
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
            browser: None,
        },
    )
    .expect("crawl")
}

/// Per page: what flint requested for it (files, failed same-origin requests, and the files
/// of the frames it holds), icons aside.
fn requested(site: &discover::Site, path: &str) -> BTreeSet<String> {
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
    set.retain(|p| !ICONS.contains(&p.as_str()));
    set
}

/// Each page of `site` loaded by Chromium: the site's URLs it requested equal flint's. Every
/// page's requests of the site, with their priorities.
fn compare_with_chromium(site: &discover::Site, origin: &str) -> BTreeMap<String, String> {
    let scratch = tempfile::tempdir().unwrap();
    let mut compared = BTreeMap::new();
    for page in &site.pages {
        let log =
            discover_site::chromium_net_log(&format!("{origin}{}", page.path), scratch.path(), &[]);
        let urls: Vec<&String> = log.iter().map(|(u, _)| u).collect();
        let chromium: BTreeSet<String> = urls
            .iter()
            .filter_map(|u| u.strip_prefix(origin))
            .filter(|p| !ICONS.contains(p))
            .map(str::to_owned)
            .collect();
        let flint = requested(site, &page.path);
        assert_eq!(
            chromium, flint,
            "page {}: Chromium requested (left) and flint found (right)\nall Chromium's: {urls:#?}",
            page.path
        );
        // Icons left out here too: whether the browser asked for them yet is its own affair,
        // and the count below must not depend on it.
        compared.extend(
            log.iter()
                .filter_map(|(u, p)| Some((u.strip_prefix(origin)?.to_owned(), p.clone())))
                .filter(|(path, _)| !ICONS.contains(&path.as_str())),
        );
    }
    compared
}

#[test]
fn chromium_requests_what_flint_discovers() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let site = crawl(
        &url::Url::parse(&format!("{origin}/index.html")).unwrap(),
        1,
    );
    assert_eq!(site.pages.len(), 3);
    let compared = compare_with_chromium(&site, &origin);
    // Not a vacuous comparison: each reference kind of the site was requested by both (named,
    // not counted: a count moved with the icons the browser may or may not have asked for).
    for kind in [
        "/css/site.css",          // <link rel=stylesheet>
        "/css/import2.css",       // @import of an @import
        "/fonts/body-bold.woff2", // @font-face used by a bold rule
        "/frame.html",            // <iframe>
        "/img/before.png",        // ::before content
        "/img/body-bg.png",       // background from a stylesheet
        "/img/style-bg.png",      // background from a <style>
        "/img/broken.png",        // the 404
        "/img/s800.png",          // srcset at 800 px
        "/img/pic.webp",          // <picture> source
        "/img/poster.png",        // <video poster>
        "/img/preload.png",       // <link rel=preload>
        "/js/mod.js",             // modulepreload and <script type=module>
        "/sub/img/b.png",         // <img> under <base href>
        "/about.html",            // the linked page
    ] {
        assert!(
            compared.contains_key(kind),
            "{kind} not compared: {compared:#?}"
        );
    }
}

#[test]
fn stylesheets_for_other_media_are_fetched_and_not_applied_as_in_chromium() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let site = crawl(
        &url::Url::parse(&format!("{origin}/media.html")).unwrap(),
        0,
    );
    let priorities = compare_with_chromium(&site, &origin);
    // What the documentation says of Chromium: a `<link>` whose media does not hold is
    // fetched at the lowest priority, an `@import` at the highest whatever its media.
    let priority = |path: &str| priorities.get(path).map(String::as_str).unwrap_or("none");
    for idle in ["/media/print.css", "/media/wide.css", "/media/async.css"] {
        assert_eq!(priority(idle), "IDLE", "{idle}");
    }
    for highest in [
        "/media/main.css",
        "/media/screen.css",
        "/media/imp-print.css",
        "/media/print-import.css",
    ] {
        assert_eq!(priority(highest), "HIGHEST", "{highest}");
    }
    // Not vacuous: each kind is on its side of the line.
    let files = requested(&site, "/media.html");
    for fetched in [
        "/media/print.css",
        "/media/print-import.css",
        "/media/wide.css",
        "/media/imp-print.css",
        "/media/style-import.css",
        "/media/img/screen.png",
        "/media/img/imp-narrow.png",
        "/media/img/async.png",
        "/media/img/both.png",
        "/media/img/style-screen.png",
        "/media/img/pre-screen.png",
        "/media/img/pf-print.png",
        "/media/img/pf.png",
    ] {
        assert!(files.contains(fetched), "{fetched} not listed: {files:#?}");
    }
    for not_fetched in [
        "/media/img/print.png",
        "/media/img/print-import.png",
        "/media/fonts/print.woff2",
        "/media/img/wide.png",
        "/media/img/imp-print.png",
        "/media/imp-moz.css",
        "/media/img/style-print.png",
        "/media/img/style-import.png",
        "/media/img/pre-print.png",
    ] {
        assert!(!files.contains(not_fetched), "{not_fetched} listed");
    }
    let page = &site.pages[0];
    assert!(
        page.notes
            .iter()
            .any(|n| n.starts_with("5 stylesheets for another medium")),
        "{:?}",
        page.notes
    );
}

#[test]
fn generated_text_fetches_the_unicode_range_subsets_it_draws_as_in_chromium() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let site = crawl(
        &url::Url::parse(&format!("{origin}/icons.html")).unwrap(),
        0,
    );
    compare_with_chromium(&site, &origin);
    // Not vacuous: the glyph's and the Cyrillic letter's subsets, which no text of the page's
    // own has, are fetched; the other icon subset is not.
    let files = requested(&site, "/icons.html");
    let fonts: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|p| p.ends_with(".woff2"))
        .collect();
    assert_eq!(
        fonts,
        [
            "/icons/icons-a.woff2",
            "/icons/text-cyrillic.woff2",
            "/icons/text-latin.woff2"
        ]
    );
}

#[test]
fn unicode_range_subsets_are_chosen_per_family_as_in_chromium() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let site = crawl(
        &url::Url::parse(&format!("{origin}/families.html")).unwrap(),
        0,
    );
    compare_with_chromium(&site, &origin);
    // Not vacuous: each family's subsets for its own characters only (the page has Cyrillic
    // and Greek, but not in `Text`; and `Other` draws no Latin).
    let files = requested(&site, "/families.html");
    let fonts: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|p| p.ends_with(".ttf"))
        .collect();
    assert_eq!(
        fonts,
        [
            "/families/other-cyrillic.ttf",
            "/families/other-greek.ttf",
            "/families/text-latin.ttf"
        ]
    );
}

#[test]
fn what_display_none_hides_is_not_fetched_as_in_chromium() {
    let root = tempfile::tempdir().unwrap();
    let server = start_server(root.path(), 1);
    discover_site::write(root.path(), &server.addr);
    let origin = format!("http://{}", server.addr);
    let site = crawl(
        &url::Url::parse(&format!("{origin}/hidden.html")).unwrap(),
        0,
    );
    compare_with_chromium(&site, &origin);
    // Not vacuous: hidden each way, shown each way.
    let files = requested(&site, "/hidden.html");
    let listed: Vec<&str> = files
        .iter()
        .map(String::as_str)
        .filter(|p| p.starts_with("/hidden/") && !p.ends_with(".css"))
        .collect();
    assert_eq!(
        listed,
        [
            "/hidden/f-latin.ttf",
            "/hidden/in-hidden.png",
            "/hidden/invisible.png",
            "/hidden/shown.png",
            "/hidden/style-shown.png",
            "/hidden/unhidden.png"
        ]
    );
    let page = &site.pages[0];
    assert!(
        page.notes.iter().any(|n| n.starts_with(
            "6 stylesheet url()s not listed: their rules (or style attributes) style only \
             elements display: none hides"
        )),
        "{:?}",
        page.notes
    );
}
