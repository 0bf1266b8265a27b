//! The HTML mode's references as a browser makes them: a file reached through a redirect and
//! also named directly is one file of the page, requested once for the whole crawl.

mod scripted;

use scripted::{ok, options, redirect, serve};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Requests of `/img/hero.png`.
static HERO: AtomicU64 = AtomicU64::new(0);

fn redirects(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => ok(
            "text/html",
            b"<!doctype html><img src=\"/go\"><img src=\"/img/hero.png\"><a href=\"/two.html\">2</a>",
        ),
        "/two.html" => ok("text/html", b"<!doctype html><img src=\"/img/hero.png\">"),
        "/go" => redirect("/img/hero.png"),
        "/img/hero.png" => {
            HERO.fetch_add(1, Ordering::SeqCst);
            ok("image/png", b"PNG-hero")
        }
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    })
}

#[test]
fn a_file_reached_by_a_redirect_and_named_directly_is_listed_and_fetched_once() {
    let addr = serve(redirects);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let site = discover::crawl(&start, &options(Duration::from_secs(10))).expect("crawl");
    let files = |path: &str| -> Vec<(String, Option<String>)> {
        let page = site.pages.iter().find(|p| p.path == path).unwrap();
        page.files()
            .map(|f| (f.path.clone(), f.redirected_from.clone()))
            .collect()
    };
    assert_eq!(
        files("/"),
        [
            ("/".to_owned(), None),
            ("/img/hero.png".to_owned(), Some("/go".to_owned()))
        ]
    );
    assert_eq!(
        files("/two.html"),
        [
            ("/two.html".to_owned(), None),
            ("/img/hero.png".to_owned(), None)
        ]
    );
    assert_eq!(HERO.load(Ordering::SeqCst), 1, "requests of /img/hero.png");
}
