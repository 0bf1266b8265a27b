//! The crawl against servers that misbehave or do the unusual, each scripted in this process:
//! every failure ends as a comment with its reason (or the start page's error), within the
//! timeout, never a hang or a crash; redirects within the origin are followed and those that
//! loop or leave are not; a gzipped page is still parsed; a chunked body is read whole.

mod scripted;

use discover::Entry;
use scripted::{ok, options, redirect, serve};
use std::io::Write;
use std::time::{Duration, Instant};

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn answer(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/robots.txt" => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        "/" => ok(
            "text/html",
            br#"<img src="/moved.png"><img src="/loop1.png"><img src="/away.png">
                <img src="/stall.png"><img src="/huge.png"><img src="/chunked.png">
                <img src="/garbage.png"><img src="/short.png"><a href="/zipped.html">z</a>"#,
        ),
        "/moved.png" => redirect("/real.png"),
        "/real.png" => ok("image/png", &[7; 300]),
        "/loop1.png" => redirect("/loop2.png"),
        "/loop2.png" => redirect("/loop1.png"),
        "/away.png" => redirect("http://127.0.0.1:1/elsewhere.png"),
        "/stall.png" => return None,
        "/huge.png" => {
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 999999999\r\n\r\n"
                .to_vec()
        }
        "/chunked.png" => {
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nTransfer-Encoding: chunked\r\n\r\n\
              5\r\nhello\r\n3;x=y\r\nabc\r\n0\r\n\r\n"
                .to_vec()
        }
        "/garbage.png" => b"SMTP ready\r\n\r\n".to_vec(),
        "/short.png" => {
            b"HTTP/1.1 200 OK\r\nContent-Type: image/png\r\nContent-Length: 100\r\n\r\nonly this"
                .to_vec()
        }
        "/zipped.html" => {
            let body = gzip(br#"<img src="/inside.png">"#);
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Encoding: gzip\r\n\
                 Content-Length: {}\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend_from_slice(&body);
            r
        }
        "/inside.png" => ok("image/png", &[1; 42]),
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
    })
}

/// (path or URL, reason or "bytes") of a page's entries.
fn entries(page: &discover::Page) -> Vec<(String, String)> {
    page.entries
        .iter()
        .map(|e| match e {
            Entry::File(f) => (f.path.clone(), format!("{} bytes", f.bytes)),
            Entry::Skipped { url, reason } => (url.clone(), reason.clone()),
        })
        .collect()
}

#[test]
fn every_misbehaviour_is_a_comment_with_its_reason() {
    let addr = serve(answer);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let began = Instant::now();
    let site = discover::crawl(&start, &options(Duration::from_secs(2))).expect("crawl");
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "bounded by the timeout: {:?}",
        began.elapsed()
    );
    let got = entries(&site.pages[0]);
    assert_eq!(got[0].0, "/", "the page first");
    let want: Vec<(String, String)> = [
        ("/real.png", "300 bytes"),
        ("/loop1.png", "more than 10 redirects"),
        (
            "/away.png",
            "redirects to another origin (http://127.0.0.1:1/elsewhere.png)",
        ),
        ("/stall.png", "no response within 2s"),
        ("/huge.png", "larger than --max-size (1048576 bytes)"),
        ("/chunked.png", "8 bytes"),
        ("/garbage.png", "bad response: malformed status line"),
        (
            "/short.png",
            "bad response: connection closed before the end of the body",
        ),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(got[1..], want[..]);
    let Entry::File(moved) = &site.pages[0].entries[1] else {
        panic!("a file")
    };
    assert_eq!(moved.redirected_from.as_deref(), Some("/moved.png"));
    // The gzipped page was parsed: its image is found.
    assert_eq!(site.pages[1].path, "/zipped.html");
    assert_eq!(
        entries(&site.pages[1])[1],
        ("/inside.png".into(), "42 bytes".into())
    );
}

#[test]
fn a_start_page_that_fails_is_the_crawls_error() {
    let addr = serve(|_| {
        Some(b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n".to_vec())
    });
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let err = discover::crawl(&start, &options(Duration::from_secs(2))).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("http://{addr}/: 500 Internal Server Error")
    );
    // The start page is fetched whatever robots.txt says; robots.txt is asked for once it
    // has answered.
}

#[test]
fn an_iframe_is_crawled_even_when_a_link_to_it_lay_beyond_depth() {
    let addr = serve(|path| {
        Some(match path {
            "/" => ok(
                "text/html",
                br#"<a href="/a.html">a</a> <a href="/b.html">b</a>"#,
            ),
            "/a.html" => ok(
                "text/html",
                br#"<a href="/f.html">f</a> <a href="/g.html">g</a>"#,
            ),
            "/b.html" => ok("text/html", br#"<iframe src="/f.html#x"></iframe>"#),
            "/f.html" | "/g.html" => ok("text/html", b"<p>frame</p>"),
            _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        })
    });
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let site = discover::crawl(&start, &options(Duration::from_secs(5))).expect("crawl");
    let paths: Vec<&str> = site.pages.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["/", "/a.html", "/b.html", "/f.html"]);
    // Only /g.html lay beyond --depth and stayed there.
    assert_eq!(site.notes, ["1 links beyond --depth 1 not followed"]);
}

/// When each request of the rate test arrived.
static ARRIVALS: std::sync::Mutex<Vec<Instant>> = std::sync::Mutex::new(Vec::new());

#[test]
fn requests_are_no_faster_than_the_crawl_rate() {
    let addr = serve(|path| {
        ARRIVALS.lock().unwrap().push(Instant::now());
        Some(match path {
            "/" => ok(
                "text/html",
                br#"<img src="/1.png"><img src="/2.png"><img src="/3.png"><img src="/4.png">"#,
            ),
            _ => ok("image/png", b"png"),
        })
    });
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let rate = 20.0;
    let mut opts = options(Duration::from_secs(5));
    opts.limits.rate = rate;
    discover::crawl(&start, &opts).expect("crawl");
    let arrivals = ARRIVALS.lock().unwrap().clone();
    // robots.txt, the page, four images.
    assert_eq!(arrivals.len(), 6);
    let span = arrivals[5].duration_since(arrivals[0]).as_secs_f64();
    // Five gaps of at least 1/rate between starts; arrival jitter allowed a few ms.
    assert!(
        span >= 5.0 / rate - 0.01,
        "6 requests in {span:.3} s at {rate}/s"
    );
}

#[test]
fn max_pages_robots_rules_and_crawl_delay_are_kept() {
    let addr = serve(|path| {
        Some(match path {
            "/robots.txt" => ok(
                "text/plain",
                b"User-agent: flint\nDisallow: /no/\nCrawl-delay: 0.05\n\nUser-agent: *\nDisallow: /\n",
            ),
            "/" => ok(
                "text/html",
                br#"<a href="/no/x.html">n</a><a href="/a.html">a</a><a href="/b.html">b</a>
                    <a href="/c.html">c</a>"#,
            ),
            _ => ok("text/html", b"<p>page</p>"),
        })
    });
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let mut opts = options(Duration::from_secs(5));
    opts.max_pages = 2;
    let site = discover::crawl(&start, &opts).expect("crawl");
    let paths: Vec<&str> = site.pages.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(paths, ["/", "/a.html"]);
    assert_eq!(
        site.notes,
        [
            "robots.txt asks for a Crawl-delay of 0.05 s: kept",
            "link not followed: /no/x.html (robots.txt disallows it)",
            "2 pages beyond --max-pages 2 not crawled",
        ]
    );
}

#[test]
fn a_fragment_is_no_redirect() {
    let addr = serve(|path| {
        Some(match path {
            "/" => ok(
                "text/html",
                br#"<style>.i { background: url(/sprite.svg#icon) }</style><i class="i"></i>
                    <img src="/a.png#x"><img src="/moved.png#y">"#,
            ),
            "/sprite.svg" => ok("image/svg+xml", b"<svg/>"),
            "/a.png" => ok("image/png", b"png"),
            "/moved.png" => redirect("/a2.png"),
            "/a2.png" => ok("image/png", b"png2"),
            _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec(),
        })
    });
    let start = url::Url::parse(&format!("http://{addr}/#top")).unwrap();
    let site = discover::crawl(&start, &options(Duration::from_secs(5))).expect("crawl");
    let froms: Vec<(&str, Option<&str>)> = site.pages[0]
        .files()
        .map(|f| (f.path.as_str(), f.redirected_from.as_deref()))
        .collect();
    assert_eq!(
        froms,
        [
            ("/", None),
            ("/a.png", None),
            ("/a2.png", Some("/moved.png")),
            ("/sprite.svg", None),
        ]
    );
}

#[test]
fn a_font_is_fetched_as_a_browser_chooses_it() {
    let addr = serve(|path| {
        Some(match path {
            // Declared UTF-8: undeclared, a browser reads the page as windows-1252.
            "/" => ok(
                "text/html; charset=utf-8",
                "<link rel=stylesheet href=/f.css><p>Hello λ</p>\
                 <script>/* Привет */</script><title>Привет</title>"
                    .as_bytes(),
            ),
            "/f.css" => ok(
                "text/css",
                br#"@font-face { font-family: s; unicode-range: U+0000-00FF;
                      src: url(/latin.eot?#iefix) format("embedded-opentype"), local(S),
                           url(/latin.woff2) format("woff2"), url(/latin.woff) format("woff") }
                    @font-face { font-family: s; unicode-range: U+0370-03FF;
                      src: url(/greek.woff2) format("woff2"), url(/greek.woff) format("woff") }
                    @font-face { font-family: s; unicode-range: U+0400-045F;
                      src: url(/cyrillic.woff2) format("woff2") }
                    @font-face { font-family: unused; src: url(/unused.woff2) format("woff2") }
                    p { font-family: s, serif }"#,
            ),
            _ => ok("font/woff2", b"font"),
        })
    });
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    let site = discover::crawl(&start, &options(Duration::from_secs(5))).expect("crawl");
    let files: Vec<&str> = site.pages[0].files().map(|f| f.path.as_str()).collect();
    // The first format a browser supports; the subsets of characters the text shows (not
    // those only in a script or the title); not a family no rule names.
    assert_eq!(files, ["/", "/f.css", "/latin.woff2", "/greek.woff2"]);
}
