//! `--browser` and pages that hold or leave: a page that calls `alert()`, `confirm()` or
//! `prompt()` holds its parser (and its load event) until the dialog is answered; discover
//! answers each (OK, the prompt's default text) so that the page loads, is listed with its
//! files, and goes quiet well before the page timeout. A page that navigates away while a
//! file's response is still coming keeps the file: the old document's events stop when the
//! new one commits, and the request is ended there with what the network service saw.
//! Chromium as the other `--browser` tests start it (`find_chromium`: not skipped when it is
//! missing, the test fails saying how to install it).

mod scripted;

use discover::browser::{find_chromium, BrowserOptions};
use discover::Entry;
use std::time::Duration;

const START: &str = r#"<!doctype html><body><img src="/img/b.png">
<a href="/alert.html">alert</a> <a href="/confirm.html">confirm</a></body>"#;
const ALERT: &str =
    r#"<!doctype html><body><script>alert(1)</script><img src="/img/a.png"></body>"#;
/// The image a confirm answered OK, and a prompt answered with its default text, name.
const CONFIRM: &str = r#"<!doctype html><body><script>
if (confirm('go on?')) document.write('<img src="/img/' + prompt('which?', 'yes') + '.png">');
</script><img src="/img/c.png"></body>"#;

/// Navigates off the origin (a port Chromium refuses at once: an error page commits) once a
/// file's response head has come (the promise `fetch` keeps); its body never comes (the server
/// holds the connection until Chromium closes it), so the cut is certain.
const LEAVES: &str = r#"<!doctype html><body><script>
fetch("/slow/c.png").then(() => { location.href = "http://127.0.0.1:1/x" })
</script></body>"#;

fn answer(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => scripted::ok("text/html", START.as_bytes()),
        "/alert.html" => scripted::ok("text/html", ALERT.as_bytes()),
        "/confirm.html" => scripted::ok("text/html", CONFIRM.as_bytes()),
        "/leaves.html" => scripted::ok("text/html", LEAVES.as_bytes()),
        p if p.starts_with("/img/") || p.starts_with("/slow/") => scripted::ok("image/png", b"PNG"),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    })
}

fn files(site: &discover::Site, path: &str) -> Vec<String> {
    let page = site
        .pages
        .iter()
        .find(|p| p.path == path)
        .unwrap_or_else(|| panic!("{path} not listed: {site:#?}"));
    page.files().map(|f| f.path.clone()).collect()
}

#[test]
fn pages_calling_dialogs_are_listed_with_their_files() {
    let addr = scripted::serve(answer);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    // Long enough for a loaded machine; a dialog left open would hold the page all of it.
    let page_timeout = Duration::from_secs(60);
    let mut opts = scripted::options(Duration::from_secs(10));
    opts.browser = Some(BrowserOptions {
        chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
        all_origins: false,
        page_timeout,
        insecure: false,
    });
    let site = discover::crawl(&start, &opts).expect("crawl");
    assert!(files(&site, "/").contains(&"/img/b.png".to_owned()));
    assert_eq!(files(&site, "/alert.html"), ["/alert.html", "/img/a.png"]);
    let confirm = files(&site, "/confirm.html");
    assert!(
        confirm.contains(&"/img/yes.png".to_owned()) && confirm.contains(&"/img/c.png".to_owned()),
        "{confirm:?}"
    );
    for page in &site.pages {
        assert!(
            page.notes.iter().all(|n| !n.contains("--page-timeout")),
            "{}: {:?}",
            page.path,
            page.notes
        );
        let cut = page
            .entries
            .iter()
            .any(|e| matches!(e, Entry::Skipped { reason, .. } if reason.contains("timeout")));
        assert!(!cut, "{}: {:?}", page.path, page.entries);
    }
}

#[test]
fn a_page_that_navigates_away_keeps_the_file_its_server_answered() {
    let addr = scripted::serve(answer);
    let start = url::Url::parse(&format!("http://{addr}/leaves.html")).unwrap();
    let mut opts = scripted::options(Duration::from_secs(10));
    opts.depth = 0;
    opts.browser = Some(BrowserOptions {
        chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
        all_origins: false,
        page_timeout: Duration::from_secs(60),
        insecure: false,
    });
    let site = discover::crawl(&start, &opts).expect("crawl");
    let page = &site.pages[0];
    let file = page.files().find(|f| f.path == "/slow/c.png");
    assert_eq!(file.map(|f| f.bytes), Some(3), "{:#?}", page.entries);
    assert!(
        page.notes.iter().any(|n| n.contains("navigated away"))
            && page.notes.iter().all(|n| !n.contains("--page-timeout")),
        "{:?}",
        page.notes
    );
}

/// Requests the counting server received.
static RECEIVED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// A page whose stylesheet is behind a redirect loop (Chromium follows 20 redirects, then gives
/// up), whose image is behind one redirect, with a prefetch; its icon a `data:` URL, so that no
/// `/favicon.ico` is asked for by the browser's interface whenever it gets to it.
fn counted(path: &str) -> Option<Vec<u8>> {
    RECEIVED.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let page = r#"<!doctype html><link rel=icon href="data:,"><link rel=prefetch href="/img/p.png">
        <link rel=stylesheet href="/loop1.css"><body><img src="/hop.png"></body>"#;
    Some(match path {
        "/" => scripted::ok("text/html", page.as_bytes()),
        "/loop1.css" => scripted::redirect("/loop2.css"),
        "/loop2.css" => scripted::redirect("/loop1.css"),
        "/hop.png" => scripted::redirect("/img/a.png"),
        p if p.starts_with("/img/") => scripted::ok("image/png", b"PNG"),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    })
}

#[test]
fn the_requests_counted_are_those_the_site_received() {
    let addr = scripted::serve(counted);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = scripted::options(Duration::from_secs(10));
    opts.depth = 0;
    opts.browser = Some(BrowserOptions {
        chromium: find_chromium().unwrap_or_else(|e| panic!("{e}")),
        all_origins: false,
        page_timeout: Duration::from_secs(60),
        insecure: false,
    });
    let site = discover::crawl(&start, &opts).expect("crawl");
    assert_eq!(
        files(&site, "/"),
        ["/", "/img/a.png", "/img/p.png"],
        "{:#?}",
        site.pages[0].entries
    );
    // The crawler's two (the page, robots.txt) and Chromium's: the page, 21 of the loop, 2 of
    // the image's redirect, the prefetch.
    let received = RECEIVED.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(site.requests, received, "{:#?}", site.pages[0].entries);
    assert_eq!(received, 2 + 1 + 21 + 2 + 1);
}
