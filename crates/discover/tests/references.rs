//! The HTML mode's references as a browser makes them: a file reached through a redirect and
//! also named directly is one file of the page, requested once for the whole crawl; pages and
//! stylesheets in other encodings than UTF-8 decoded as a browser decodes them (byte order
//! mark, `Content-Type`'s charset, `<meta charset>`, `@charset`, the page's), their paths
//! percent-encoded from UTF-8 and their queries from the page's encoding.

mod scripted;

use scripted::{ok, options, redirect, serve};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The site crawled from `/` of a server answering with `answer`.
fn crawl(answer: fn(&str) -> Option<Vec<u8>>) -> discover::Site {
    let addr = serve(answer);
    let start = url::Url::parse(&format!("http://{addr}/")).unwrap();
    discover::crawl(&start, &options(Duration::from_secs(10))).expect("crawl")
}

/// The page crawled at `path`.
fn page<'a>(site: &'a discover::Site, path: &str) -> &'a discover::Page {
    (site.pages.iter())
        .find(|p| p.path == path)
        .unwrap_or_else(|| panic!("{path}: {site:#?}"))
}

/// The files of the page at `path` (itself first), each with the path that redirected to it.
fn files_and_redirects(site: &discover::Site, path: &str) -> Vec<(String, Option<String>)> {
    (page(site, path).files())
        .map(|f| (f.path.clone(), f.redirected_from.clone()))
        .collect()
}

/// The files the page at `path` names (itself left out).
fn files_named(site: &discover::Site, path: &str) -> Vec<String> {
    (page(site, path).files().skip(1))
        .map(|f| f.path.clone())
        .collect()
}

fn not_found() -> Vec<u8> {
    b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".to_vec()
}

/// `/img/hero.png`, its requests counted in `requests`.
fn counted_hero(requests: &AtomicU64) -> Vec<u8> {
    requests.fetch_add(1, Ordering::SeqCst);
    ok("image/png", b"PNG-hero")
}

/// The redirect sites' crawl: `/` has `/img/hero.png` through `/go`, `/two.html` has it through
/// `two_via` (or directly), and it is requested once (`requests`, counted by the site).
fn assert_hero_fetched_once(
    answer: fn(&str) -> Option<Vec<u8>>,
    requests: &AtomicU64,
    two_via: Option<&str>,
) {
    let site = crawl(answer);
    let files = |path: &str| files_and_redirects(&site, path);
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
            ("/img/hero.png".to_owned(), two_via.map(str::to_owned))
        ]
    );
    assert_eq!(
        requests.load(Ordering::SeqCst),
        1,
        "requests of /img/hero.png"
    );
}

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
        "/img/hero.png" => counted_hero(&HERO),
        _ => not_found(),
    })
}

#[test]
fn a_file_reached_by_a_redirect_and_named_directly_is_listed_and_fetched_once() {
    assert_hero_fetched_once(redirects, &HERO, None);
}

/// Requests of `/img/hero.png` in the direct-first site.
static HERO_DIRECT_FIRST: AtomicU64 = AtomicU64::new(0);

/// The file named directly first, then through the redirect: on the same page, and on a later
/// page only.
fn direct_first(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => ok(
            "text/html",
            b"<!doctype html><img src=\"/img/hero.png\"><img src=\"/go\"><a href=\"/two.html\">2</a>",
        ),
        "/two.html" => ok("text/html", b"<!doctype html><img src=\"/go2\">"),
        "/go" => redirect("/img/hero.png"),
        "/go2" => redirect("/img/hero.png"),
        "/img/hero.png" => counted_hero(&HERO_DIRECT_FIRST),
        _ => not_found(),
    })
}

#[test]
fn a_file_named_directly_and_then_through_a_redirect_is_requested_once() {
    assert_hero_fetched_once(direct_first, &HERO_DIRECT_FIRST, Some("/go2"));
}

/// Pages in several encodings, each naming `café.png` (and a query with `é`).
fn encodings(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => ok(
            "text/html",
            b"<!doctype html><a href=\"/meta.html\">m</a><a href=\"/header.html\">h</a>\
              <a href=\"/bom.html\">b</a><a href=\"/late.html\">l</a>\
              <a href=\"/body-late.html\">bl</a><a href=\"/body-early.html\">be</a>",
        ),
        // Declared in a <meta>, and its stylesheet names no encoding: it is the page's.
        "/meta.html" => ok(
            "text/html",
            &latin1(
                "<!doctype html><meta charset=\"windows-1252\">\
                 <link rel=stylesheet href=\"/css/plain.css\"><img src=\"img/caf\u{e9}.png?q=\u{e9}\">",
            ),
        ),
        // Declared by the header alone: a <meta> saying otherwise does not count.
        "/header.html" => ok(
            "text/html; charset=windows-1252",
            &latin1("<!doctype html><meta charset=\"utf-8\"><img src=\"img/caf\u{e9}-h.png\">"),
        ),
        // UTF-16 with its byte order mark; a stylesheet that names its own encoding.
        "/bom.html" => ok("text/html", &{
            let mut b = vec![0xFF, 0xFE];
            b.extend(
                "<!doctype html><link rel=stylesheet href=\"/css/at.css\">\
                 <img src=\"img/caf\u{e9}-16.png\">"
                    .encode_utf16()
                    .flat_map(u16::to_le_bytes),
            );
            b
        }),
        // A <meta http-equiv> past the first kilobyte: the parser still meets it in the head.
        "/late.html" => ok(
            "text/html",
            &latin1(&format!(
                "<!doctype html><head><title>{}</title><meta http-equiv=content-type \
                 content=\"text/html; charset=iso-8859-1\"></head><img src=\"img/\u{e9}-late.png\">",
                "t".repeat(2000)
            )),
        ),
        // A <meta charset> in the body past the first kilobyte: Chromium no longer looks.
        "/body-late.html" => ok(
            "text/html",
            &latin1(&format!(
                "<!doctype html><p>{}<meta charset=\"windows-1251\"><img src=\"img/caf\u{e9}-body.png\">",
                "t".repeat(2000)
            )),
        ),
        // One in the body within the first kilobyte: it counts (0xE9 is й in windows-1251).
        "/body-early.html" => ok(
            "text/html",
            &latin1(
                "<!doctype html><p>t<meta charset=\"windows-1251\"><img src=\"img/\u{e9}-early.png\">",
            ),
        ),
        "/css/plain.css" => ok(
            "text/css",
            &latin1("img { background: url(caf\u{e9}-plain.png) }"),
        ),
        "/css/at.css" => ok(
            "text/css",
            &latin1("@charset \"windows-1252\"; img { background: url(caf\u{e9}-at.png) }"),
        ),
        _ => ok("image/png", b"PNG"),
    })
}

/// `s` in ISO-8859-1 (windows-1252 for these characters).
fn latin1(s: &str) -> Vec<u8> {
    s.chars()
        .map(|c| u8::try_from(u32::from(c)).expect("Latin-1 text"))
        .collect()
}

#[test]
fn pages_and_stylesheets_are_decoded_in_their_encoding() {
    let site = crawl(encodings);
    let files = |path: &str| files_named(&site, path);
    assert_eq!(
        files("/meta.html"),
        [
            "/css/plain.css",
            "/img/caf%C3%A9.png?q=%E9",
            "/css/caf%C3%A9-plain.png"
        ]
    );
    assert_eq!(files("/header.html"), ["/img/caf%C3%A9-h.png"]);
    assert_eq!(
        files("/bom.html"),
        [
            "/css/at.css",
            "/img/caf%C3%A9-16.png",
            "/css/caf%C3%A9-at.png"
        ]
    );
    assert_eq!(files("/late.html"), ["/img/%C3%A9-late.png"]);
    assert_eq!(files("/body-late.html"), ["/img/caf%C3%A9-body.png"]);
    assert_eq!(files("/body-early.html"), ["/img/%D0%B9-early.png"]);
    let meta = page(&site, "/meta.html");
    assert!(
        meta.notes
            .iter()
            .any(|n| n.starts_with("decoded as windows-1252 (its <meta charset>)")),
        "{:?}",
        meta.notes
    );
}

/// `s` in `encoding` (every character of it encodable).
fn encoded(s: &str, encoding: &'static encoding_rs::Encoding) -> Vec<u8> {
    let (bytes, _, unmappable) = encoding.encode(s);
    assert!(!unmappable, "{s} in {}", encoding.name());
    bytes.into_owned()
}

/// Pages that declare no encoding: in two legacy encodings, in UTF-8, in ASCII alone.
fn undeclared(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => ok(
            "text/html",
            b"<!doctype html><a href=\"/1251.html\">r</a><a href=\"/sjis.html\">j</a>\
              <a href=\"/utf8.html\">u</a><a href=\"/ascii.html\">a</a>",
        ),
        "/1251.html" => ok(
            "text/html",
            &encoded(
                "<!doctype html><title>\u{413}\u{43b}\u{430}\u{432}\u{43d}\u{430}\u{44f}</title>\
                 <p>\u{42d}\u{442}\u{43e} \u{441}\u{442}\u{440}\u{430}\u{43d}\u{438}\u{446}\u{430} \
                 \u{43d}\u{430} \u{440}\u{443}\u{441}\u{441}\u{43a}\u{43e}\u{43c} \
                 \u{44f}\u{437}\u{44b}\u{43a}\u{435}, \u{43f}\u{440}\u{438}\u{432}\u{435}\u{442} \
                 \u{432}\u{441}\u{435}\u{43c}.</p><img src=\"img/\u{444}\u{43e}\u{442}\u{43e}.png?q=\u{444}\">",
                encoding_rs::WINDOWS_1251,
            ),
        ),
        "/sjis.html" => ok(
            "text/html",
            &encoded(
                "<!doctype html><title>\u{65e5}\u{672c}\u{8a9e}</title><p>\u{3053}\u{308c}\u{306f}\
                 \u{65e5}\u{672c}\u{8a9e}\u{306e}\u{30da}\u{30fc}\u{30b8}\u{3067}\u{3059}\u{3002}\
                 \u{4eca}\u{65e5}\u{306f}\u{3044}\u{3044}\u{5929}\u{6c17}\u{3067}\u{3059}\u{306d}\u{3002}\
                 </p><img src=\"img/\u{5199}\u{771f}.png\">",
                encoding_rs::SHIFT_JIS,
            ),
        ),
        "/utf8.html" => ok(
            "text/html",
            "<!doctype html><p>Caf\u{e9} cr\u{e8}me</p><img src=\"img/caf\u{e9}.png\"><img src=\"img/plain.png\">"
                .as_bytes(),
        ),
        "/ascii.html" => ok(
            "text/html",
            b"<!doctype html><img src=\"img/q.png?q=&eacute;\">",
        ),
        _ => ok("image/png", b"PNG"),
    })
}

#[test]
fn undeclared_pages_are_read_as_chromium_reads_them() {
    let site = crawl(undeclared);
    let files = |path: &str| files_named(&site, path);
    // Legacy encodings guessed from the bytes, as Chromium's detector guesses them.
    assert_eq!(
        files("/1251.html"),
        ["/img/%D1%84%D0%BE%D1%82%D0%BE.png?q=%F4"]
    );
    assert_eq!(files("/sjis.html"), ["/img/%E5%86%99%E7%9C%9F.png"]);
    // UTF-8 is read as windows-1252, as Chromium reads it, and the note says so.
    assert_eq!(
        files("/utf8.html"),
        ["/img/caf%C3%83%C2%A9.png", "/img/plain.png"]
    );
    let notes = &page(&site, "/utf8.html").notes;
    assert!(
        notes.iter().any(|n| n
            .starts_with("declares no encoding and looks like UTF-8: read as windows-1252")
            && n.contains("; 1 of its references hold non-ASCII")),
        "{notes:?}"
    );
    // ASCII alone: windows-1252 too, so a character reference in a query is encoded in it;
    // no note.
    assert_eq!(files("/ascii.html"), ["/img/q.png?q=%E9"]);
    assert!(
        !page(&site, "/ascii.html")
            .notes
            .iter()
            .any(|n| n.contains("coding")),
        "{:?}",
        page(&site, "/ascii.html").notes
    );
}

fn presentational(path: &str) -> Option<Vec<u8>> {
    Some(match path {
        "/" => ok(
            "text/html",
            br#"<!doctype html><style>.s{background-image:image-set("img/a.png" 1x)}
                .t{background-image:image-set(url(img/c.png) 2x, url(img/b.png) 1x)}</style>
                <body background="img/d.png"><div class=s>s</div><div class=t>t</div>
                <object data="img/hero.png" type="image/png"></object><embed src="img/e.svg">"#,
        ),
        _ => ok("image/png", b"PNG"),
    })
}

#[test]
fn image_sets_presentational_backgrounds_objects_and_embeds() {
    let site = crawl(presentational);
    let mut files: Vec<&str> = site.pages[0].files().map(|f| f.path.as_str()).collect();
    files.sort_unstable();
    // One of the second image-set's options: the one Chromium picks at 1x.
    assert_eq!(
        files,
        [
            "/",
            "/img/a.png",
            "/img/b.png",
            "/img/d.png",
            "/img/e.svg",
            "/img/hero.png"
        ]
    );
}
