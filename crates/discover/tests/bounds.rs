//! What one crawl may cost, against sites built to make it cost more: memory bounded by
//! `--max-pages` however many links the pages name, requests per page bounded by
//! `--max-files`; each bound said in the workload's notes.

mod scripted;

use scripted::{ok, options, serve};
use std::fmt::Write;
use std::time::Duration;

/// Links a generated page names on its own origin, and as many to another origin.
const LINKS: usize = 2000;

/// `/` and `/p/K`: each page names LINKS pages no other page names, and LINKS on another origin.
fn many_links(path: &str) -> Option<Vec<u8>> {
    let k: usize = match path {
        "/robots.txt" => return Some(ok("text/plain", b"")),
        "/" => 0,
        p => p.strip_prefix("/p/")?.parse::<usize>().ok()? + 1,
    };
    let mut html = String::new();
    for j in 0..LINKS {
        let _ = write!(
            html,
            "<a href=\"/p/{}\">p</a><a href=\"http://elsewhere.invalid/{k}/{j}\">e</a>",
            k * LINKS + j
        );
    }
    Some(ok("text/html", html.as_bytes()))
}

#[test]
fn links_beyond_max_pages_are_counted_not_kept() {
    let addr = serve(many_links);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = options(Duration::from_secs(10));
    opts.max_pages = 5;
    opts.depth = 100;
    let site = discover::crawl(&start, &opts).expect("crawl");
    let paths: Vec<&str> = site.pages.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["/", "/p/0", "/p/1", "/p/2", "/p/3"]);
    // Every link was seen and counted...
    assert_eq!(site.links_found, 5 * 2 * LINKS as u64);
    // ...and no more kept than a few times --max-pages: the pages, and up to --max-pages links
    // of each kind not followed.
    assert!(
        site.links_kept_peak <= 6 * opts.max_pages,
        "{} links kept",
        site.links_kept_peak
    );
    // Four of the start page's links were queued; every other link found no room: 5 told
    // apart, the rest counted.
    let beyond = 5 * LINKS - 4 - 5;
    assert!(
        site.notes.contains(&format!(
            "5 pages beyond --max-pages 5 not crawled, and {beyond} more references to links \
             not told apart (only --max-pages links of a kind are kept)"
        )),
        "{:#?}",
        site.notes
    );
    let listed = site
        .notes
        .iter()
        .filter(|n| n.ends_with("(another origin)"))
        .count();
    assert_eq!(listed, 5, "{:#?}", site.notes);
    let more = 5 * LINKS - 5;
    assert!(
        site.notes.contains(&format!(
            "{more} more links to other origins not followed (not listed: --max-pages 5 of them are)"
        )),
        "{:#?}",
        site.notes
    );
}

/// A page naming 5,000 stylesheets.
fn many_files(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => {
            let mut html = String::new();
            for i in 0..5000 {
                let _ = write!(html, "<link rel=stylesheet href=\"/s/{i}.css\">");
            }
            ok("text/html", html.as_bytes())
        }
        _ => ok("text/css", b"b { color: red }"),
    })
}

#[test]
fn a_page_requests_at_most_max_files() {
    let addr = serve(many_files);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = options(Duration::from_secs(10));
    opts.max_files = 100;
    let site = discover::crawl(&start, &opts).expect("crawl");
    // robots.txt, the page, and 100 of its stylesheets.
    assert_eq!(site.requests, 102);
    let page = &site.pages[0];
    assert_eq!(page.files().count(), 101);
    assert_eq!(
        page.notes,
        ["4900 more references beyond --max-files 100: not fetched"]
    );
    assert!(
        site.notes.contains(&"1 pages named more than --max-files 100 references: the rest not fetched (a comment at each page's end says how many)".to_owned()),
        "{:#?}",
        site.notes
    );
}

/// Elements a deep page nests: far past the cap of 512, few enough that the parse stays a
/// second or two of a core in a debug build on a machine at load 20 (100,000 took over 120 s
/// there: each element past the cap still costs a search of the 512 open ones).
const DEEP: usize = 10_000;

/// A page nesting `DEEP` `<div>`s around an image, a stylesheet after them.
fn deep_page(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => {
            let n = DEEP;
            let html = format!(
                "<!doctype html><body>{}<img src=\"/deep.png\">{}<link rel=stylesheet href=\"/after.css\">",
                "<div>".repeat(n),
                "</div>".repeat(n)
            );
            ok("text/html", html.as_bytes())
        }
        "/after.css" => ok("text/css", b"b { color: red }"),
        _ => ok("image/png", b"png"),
    })
}

#[test]
fn deep_nesting_is_capped_and_said() {
    let addr = serve(deep_page);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = options(Duration::from_secs(10));
    opts.limits.max_size = 4 << 20;
    // Bounded, as a guard against a hang: the parse is quadratic in the depth without the cap
    // (100,000 elements: over 90 s in a release build), linear with it. The cap itself is
    // held by the note's count below, not by the time.
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(discover::crawl(&start, &opts));
    });
    let site = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("crawled within 120 s")
        .expect("crawl");
    let page = &site.pages[0];
    let files: Vec<&str> = page.files().map(|f| f.path.as_str()).collect();
    assert_eq!(files, ["/", "/deep.png", "/after.css"]);
    assert_eq!(
        page.notes,
        [format!(
            "{} elements nested deeper than 512 closed at once: their references and what they \
             held were kept",
            DEEP - 510
        )]
    );
    assert!(
        site.notes.iter().any(|n| n.starts_with(
            "elements nested deeper than 512 (a browser's limit) were closed at once"
        )),
        "{:#?}",
        site.notes
    );
}

/// Stylesheets in a chain of `@import`s: `/c/0.css` imports `/c/1.css`, and so on to
/// `/c/39.css`, each with a rule of its own; the last styles the page's `<p>` with an image.
fn import_chain(path: &str) -> Option<Vec<u8>> {
    if path == "/" {
        let html = r#"<!doctype html><link rel=stylesheet href="/c/0.css"><p class=end>x</p>"#;
        return Some(ok("text/html", html.as_bytes()));
    }
    let n = path
        .strip_prefix("/c/")
        .and_then(|p| p.strip_suffix(".css"));
    let Some(n) = n.and_then(|n| n.parse::<u32>().ok()) else {
        return Some(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec());
    };
    let css = if n < 39 {
        format!("@import url(\"{}.css\");\n.k{n} {{ color: red }}\n", n + 1)
    } else {
        ".end { background: url(/e.png) }".to_owned()
    };
    Some(ok("text/css", css.as_bytes()))
}

#[test]
fn an_import_chain_cut_at_its_depth_says_where() {
    let addr = serve(import_chain);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = options(Duration::from_secs(10));
    opts.depth = 0;
    let site = discover::crawl(&start, &opts).expect("crawl");
    let page = &site.pages[0];
    let sheets: Vec<String> = page.files().skip(1).map(|f| f.path.clone()).collect();
    let followed: Vec<String> = (0..=32).map(|n| format!("/c/{n}.css")).collect();
    assert_eq!(sheets, followed);
    // The cut is named where it is: the import not fetched, in the page's list...
    let cut: Vec<(&str, &str)> = (page.entries.iter())
        .filter_map(|e| match e {
            discover::Entry::Skipped { url, reason } => Some((url.as_str(), reason.as_str())),
            discover::Entry::File(_) => None,
        })
        .collect();
    assert_eq!(
        cut,
        [(
            "/c/33.css",
            "an @import of a stylesheet imported 32 deep: not fetched (a chain of @imports is \
             followed 32 stylesheets deep)"
        )]
    );
    // ...and for the crawl, at the top of the workload and counted for the summary.
    assert_eq!(site.imports_cut, 1);
    assert!(
        site.notes.iter().any(|n| n.starts_with(
            "@imports nested more than 32 stylesheets deep were not fetched, nor what they reference"
        )),
        "{:#?}",
        site.notes
    );
}
