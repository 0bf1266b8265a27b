//! The site `flint discover` is tested on, written at test time: every kind of reference a
//! browser follows (stylesheets with an @import chain, <style> and style=, icon, preload,
//! modulepreload, scripts, img src and srcset, picture/source, video poster, iframe), relative
//! and absolute paths and a full URL, <base href>, a link cycle, links to another origin and
//! to a path robots.txt disallows, a broken image, and a page beyond --depth 1. Its
//! stylesheets hold what a browser does not fetch: rules no element matches or that need a
//! user's action, `@media print`, a `min-width` above the viewport, a dark colour scheme's, an `@supports` another
//! engine's, font faces no text uses; and what it does: a pseudo-element's image, the bold face
//! of the `<h1>`.
//!
//! `/media.html`, linked from no page (crawled on its own), holds stylesheets for other media:
//! a `<link media=print>` (with an `@import`, images and a font face its rules would use), one
//! for a width above the viewport, one whose media list holds, `@import`s with media lists
//! that hold and do not and a `supports()` that fails, `<style media=print>`, a print
//! stylesheet a script switches to `all` once loaded, the same stylesheet named for print
//! then for screen, preloads for each medium, and prefetches (fetched whatever their `media`).
//!
//! `/icons.html`, linked from no page either, draws an icon font's glyph and a Cyrillic letter as
//! generated text (`::before`, `::after`), each face split in `unicode-range` subsets.
//!
//! `/families.html`, linked from no page either, draws Latin, Cyrillic and Greek text in two
//! families each split in the same `unicode-range` subsets: a subset of one family is
//! fetched only for characters drawn in that family.
//!
//! `/hidden.html`, linked from no page either, hides elements with `display: none` (by a
//! class, a later stylesheet's rule, a `style` attribute, the `hidden` attribute, and an
//! ancestor): their backgrounds (their `style` attributes' too) and the faces only their text
//! uses are not fetched; an `<img>` inside them, a `visibility: hidden` element's background
//! and a shown element's `style` attribute's are.

#![allow(dead_code)] // each test binary uses its own subset

use crate::common::{flint, Server};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;
use std::time::Duration;

/// Another origin (a port nothing listens on, and one browsers refuse): referenced, never
/// fetched by flint.
pub const ELSEWHERE: &str = "http://127.0.0.1:1";

/// The site's files and their sizes in bytes.
pub struct Site {
    pub sizes: BTreeMap<String, u64>,
}

impl Site {
    pub fn size(&self, path: &str) -> u64 {
        *self
            .sizes
            .get(path)
            .unwrap_or_else(|| panic!("{path} is not a file of the site"))
    }
}

/// Writes the site under `root`; `addr` is the server's `host:port` (for the full URL).
pub fn write(root: &Path, addr: &str) -> Site {
    let mut sizes = BTreeMap::new();
    let mut put = |path: &str, bytes: Vec<u8>| {
        let file = root.join(path.trim_start_matches('/'));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        sizes.insert(path.to_owned(), bytes.len() as u64);
        std::fs::write(file, bytes).unwrap();
    };
    let index = format!(
        r#"<!doctype html>
<html><head><title>discover test</title>
<link rel="stylesheet" href="css/site.css">
<link rel="stylesheet" href="css/rules.css">
<link rel="icon" href="/img/icon.png">
<link rel="preload" href="/img/preload.png" as="image">
<link rel="modulepreload" href="/js/mod.js">
<script src="js/app.js"></script>
<script type="module" src="/js/mod.js"></script>
<style>.hero {{ background: url(img/style-bg.png) }}</style>
</head><body>
<h1>discover</h1>
<p>A paragraph.</p>
<div class="hero">hero</div>
<div style="background-image: url('/img/inline.png')">inline</div>
<img src="img/rel.png" alt="">
<img src="/img/abs.png" alt="">
<img src="http://{addr}/img/full.png" alt="">
<img srcset="img/s400.png 400w, img/s800.png 800w, img/s1600.png 1600w" src="img/s400.png" alt="">
<picture><source srcset="img/pic.webp" type="image/webp"><img src="img/pic.png" alt=""></picture>
<video poster="img/poster.png"></video>
<img src="img/broken.png" alt="">
<img src="{ELSEWHERE}/off.png" alt="">
<iframe src="frame.html"></iframe>
<a href="about.html#team">about</a>
<a href="/index.html">home</a>
<a href="{ELSEWHERE}/elsewhere.html">elsewhere</a>
<a href="private/secret.html">secret</a>
</body></html>
"#
    );
    put("/index.html", index.into_bytes());
    put(
        "/about.html",
        br#"<!doctype html>
<html><head><base href="/sub/"><link rel="stylesheet" href="/css/site.css"></head>
<body><h1>About</h1><p>Us.</p><img src="img/b.png" alt="">
<a href="/index.html">home</a> <a href="deep.html">deep</a></body></html>
"#
        .to_vec(),
    );
    put(
        "/frame.html",
        b"<!doctype html><html><body><img src=\"img/frame.png\" alt=\"\"></body></html>\n".to_vec(),
    );
    put("/sub/deep.html", b"<!doctype html><p>deep</p>\n".to_vec());
    put(
        "/private/secret.html",
        b"<!doctype html><p>secret</p>\n".to_vec(),
    );
    put(
        "/robots.txt",
        b"User-agent: *\nDisallow: /private/\n".to_vec(),
    );
    put(
        "/css/site.css",
        b"@import \"import1.css\";\nbody { background: url(../img/body-bg.png) }\n".to_vec(),
    );
    put(
        "/css/import1.css",
        b"@import url(\"/css/import2.css\");\nh1 { background-image: url(\"../img/h1.png\") }\n"
            .to_vec(),
    );
    put(
        "/css/import2.css",
        b"p { background: url(/img/p.png) }\n.unused { background: url(/img/unused.png) }\n"
            .to_vec(),
    );
    put(
        "/css/rules.css",
        br#"@font-face { font-family: Body; src: url(/fonts/body.woff2) format("woff2") }
@font-face { font-family: "Body"; font-weight: bold; src: url(/fonts/body-bold.woff2) format("woff2") }
@font-face { font-family: Body; font-style: italic; src: url(/fonts/body-italic.woff2) format("woff2") }
@font-face { font-family: Unused; src: url(/fonts/unused.woff2) format("woff2") }
body { font-family: Body, sans-serif }
@media print { body { background: url(/img/print.png) } }
@media screen and (min-width: 2000px) { iframe { background: url(/img/wide.png) } }
@media screen and (max-width: 2000px) { video { background: url(/img/screen.png) } }
@media (prefers-color-scheme: dark) { .hero::before { content: ""; background: url(/img/dark.png) } }
@supports (-moz-appearance: none) { body { cursor: url(/img/moz.png), auto } }
@supports (display: grid) { .hero::after { content: ""; background: url(/img/grid.png) } }
a:hover, a:focus { background: url(/img/hover.png) }
ul.search li { background: url(/img/search.png) }
h1::before { content: ""; background: url(/img/before.png) }
"#
        .to_vec(),
    );
    put("/media.html", MEDIA_PAGE.as_bytes().to_vec());
    for (path, css) in MEDIA_SHEETS {
        put(path, css.as_bytes().to_vec());
    }
    put("/icons.html", ICONS_PAGE.as_bytes().to_vec());
    put("/icons/icons.css", ICONS_CSS.as_bytes().to_vec());
    put("/families.html", FAMILIES_PAGE.as_bytes().to_vec());
    put("/families/families.css", FAMILIES_CSS.as_bytes().to_vec());
    put("/hidden.html", HIDDEN_PAGE.as_bytes().to_vec());
    put("/hidden/first.css", HIDDEN_FIRST_CSS.as_bytes().to_vec());
    put("/hidden/later.css", HIDDEN_LATER_CSS.as_bytes().to_vec());
    // Real font files: a face that fails to decode sends Chromium to its family's face for a
    // space (the line's metrics), and when that happens depends on timing.
    let font = std::fs::read(REAL_FONT)
        .unwrap_or_else(|e| panic!("{REAL_FONT} ({e}): scripts/install-browser.sh installs it"));
    for path in FAMILIES_FONTS.into_iter().chain(HIDDEN_FONTS) {
        put(path, font.clone());
    }
    put("/js/app.js", b"var loaded = 1;\n".to_vec());
    put("/js/mod.js", b"export const x = 1;\n".to_vec());
    // Images: distinct sizes, so a file listed with another's size is caught.
    let images = [
        "/img/icon.png",
        "/img/preload.png",
        "/img/style-bg.png",
        "/img/inline.png",
        "/img/rel.png",
        "/img/abs.png",
        "/img/full.png",
        "/img/s400.png",
        "/img/s800.png",
        "/img/s1600.png",
        "/img/pic.webp",
        "/img/pic.png",
        "/img/poster.png",
        "/img/frame.png",
        "/img/body-bg.png",
        "/img/h1.png",
        "/img/p.png",
        "/img/unused.png",
        "/sub/img/b.png",
        "/img/print.png",
        "/img/wide.png",
        "/img/screen.png",
        "/img/moz.png",
        "/img/grid.png",
        "/img/hover.png",
        "/img/search.png",
        "/img/before.png",
        "/img/dark.png",
        "/fonts/body.woff2",
        "/fonts/body-bold.woff2",
        "/fonts/body-italic.woff2",
        "/fonts/unused.woff2",
    ]
    .into_iter()
    .chain(MEDIA_FILES)
    .chain(ICONS_FONTS)
    .chain(HIDDEN_IMAGES);
    for (i, path) in images.enumerate() {
        put(path, vec![b'x'; 1000 + 37 * i]);
    }
    Site { sizes }
}

/// A page whose stylesheets are for other media, each element and property its own so that
/// no `url()` hides another's in the cascade.
const MEDIA_PAGE: &str = r#"<!doctype html>
<html><head><title>media</title>
<link rel="stylesheet" href="/media/print.css" media="print">
<link rel="stylesheet" href="/media/wide.css" media="screen and (min-width: 2000px)">
<link rel="stylesheet" href="/media/screen.css" media="screen, print">
<link rel="stylesheet" href="/media/main.css">
<link rel="stylesheet" href="/media/async.css" media="print" onload="this.media='all'">
<link rel="stylesheet" href="/media/both.css" media="print">
<link rel="stylesheet" href="/media/both.css" media="all">
<link rel="preload" href="/media/img/pre-print.png" as="image" media="print">
<link rel="preload" href="/media/img/pre-screen.png" as="image" media="(min-width: 100px)">
<link rel="prefetch" href="/media/img/pf-print.png" media="print">
<link rel="next prefetch" href="/media/img/pf.png">
<style media="print">@import "/media/style-import.css"; #d { background: url(/media/img/style-print.png) }</style>
<style media="screen">#e { background: url(/media/img/style-screen.png) }</style>
</head><body>
<h1 id="a">media</h1><p id="b">P</p><div id="c">c</div><div id="d">d</div><div id="e">e</div>
<div id="f">f</div><div id="g">g</div><div id="h">h</div><div id="i">i</div>
</body></html>
"#;

const MEDIA_SHEETS: [(&str, &str); 11] = [
    (
        "/media/print.css",
        r#"@import "/media/print-import.css";
@font-face { font-family: Print; src: url(/media/fonts/print.woff2) format("woff2") }
#a { background: url(/media/img/print.png) }
"#,
    ),
    (
        "/media/print-import.css",
        "#b { background: url(/media/img/print-import.png) }\n",
    ),
    (
        "/media/wide.css",
        "#c { background: url(/media/img/wide.png) }\n",
    ),
    (
        "/media/screen.css",
        "#d { border-image: url(/media/img/screen.png) 10 }\n",
    ),
    (
        "/media/main.css",
        r#"@import url(/media/imp-print.css) print;
@import url(/media/imp-narrow.css) (max-width: 2000px);
@import url(/media/imp-moz.css) supports(-moz-appearance: none);
p { font-family: Print, serif }
"#,
    ),
    (
        "/media/imp-print.css",
        "#f { background: url(/media/img/imp-print.png) }\n",
    ),
    (
        "/media/imp-narrow.css",
        "#g { background: url(/media/img/imp-narrow.png) }\n",
    ),
    (
        "/media/imp-moz.css",
        "#g { border-image: url(/media/img/imp-moz.png) 10 }\n",
    ),
    (
        "/media/async.css",
        "#h { background: url(/media/img/async.png) }\n",
    ),
    (
        "/media/both.css",
        "#i { background: url(/media/img/both.png) }\n",
    ),
    (
        "/media/style-import.css",
        "#e { border-image: url(/media/img/style-import.png) 10 }\n",
    ),
];

/// The images and the font the media page's stylesheets name.
const MEDIA_FILES: [&str; 17] = [
    "/media/img/print.png",
    "/media/img/print-import.png",
    "/media/img/wide.png",
    "/media/img/screen.png",
    "/media/img/imp-print.png",
    "/media/img/imp-narrow.png",
    "/media/img/imp-moz.png",
    "/media/img/async.png",
    "/media/img/both.png",
    "/media/img/style-print.png",
    "/media/img/style-screen.png",
    "/media/img/style-import.png",
    "/media/img/pre-print.png",
    "/media/img/pre-screen.png",
    "/media/img/pf-print.png",
    "/media/img/pf.png",
    "/media/fonts/print.woff2",
];

/// A page whose only text outside Latin is generated: an icon's glyph (private use area) and
/// a Cyrillic letter.
const ICONS_PAGE: &str = r#"<!doctype html>
<html><head><title>icons</title><link rel="stylesheet" href="/icons/icons.css"></head>
<body><p>Latin text <i class="icon icon-home"></i> <span class="label">x</span></p></body></html>
"#;

const ICONS_CSS: &str = r#"@font-face { font-family: Icons; src: url(/icons/icons-a.woff2) format("woff2"); unicode-range: U+E000-E0FF }
@font-face { font-family: Icons; src: url(/icons/icons-b.woff2) format("woff2"); unicode-range: U+E100-E1FF }
@font-face { font-family: Text; src: url(/icons/text-latin.woff2) format("woff2"); unicode-range: U+0000-00FF }
@font-face { font-family: Text; src: url(/icons/text-cyrillic.woff2) format("woff2"); unicode-range: U+0400-04FF }
body { font-family: Text, sans-serif }
.icon { font-family: Icons; font-style: normal }
.icon-home::before { content: "\e001" }
.icon-unused::before { content: "\e101" }
.label::after { content: "\0416" }
"#;

const ICONS_FONTS: [&str; 4] = [
    "/icons/icons-a.woff2",
    "/icons/icons-b.woff2",
    "/icons/text-latin.woff2",
    "/icons/text-cyrillic.woff2",
];

/// Latin text in one family, Cyrillic and Greek in another; each family split in the same
/// three subsets.
const FAMILIES_PAGE: &str = r#"<!doctype html>
<html><head><title>families</title><link rel="stylesheet" href="/families/families.css"></head>
<body><p>Latin text <span class="ru">Жук</span></p><p class="gr">αβγ</p></body></html>
"#;

const FAMILIES_CSS: &str = r#"@font-face { font-family: Text; src: url(/families/text-latin.ttf) format("truetype"); unicode-range: U+0000-00FF }
@font-face { font-family: Text; src: url(/families/text-cyrillic.ttf) format("truetype"); unicode-range: U+0400-04FF }
@font-face { font-family: Text; src: url(/families/text-greek.ttf) format("truetype"); unicode-range: U+0370-03FF }
@font-face { font-family: Other; src: url(/families/other-latin.ttf) format("truetype"); unicode-range: U+0000-00FF }
@font-face { font-family: Other; src: url(/families/other-cyrillic.ttf) format("truetype"); unicode-range: U+0400-04FF }
@font-face { font-family: Other; src: url(/families/other-greek.ttf) format("truetype"); unicode-range: U+0370-03FF }
body { font-family: Text, sans-serif }
.ru, .gr { font-family: Other, sans-serif }
"#;

/// Elements hidden each way `display: none` comes, beside shown ones.
const HIDDEN_PAGE: &str = r#"<!doctype html>
<html><head><title>hidden</title>
<link rel="stylesheet" href="/hidden/first.css"><link rel="stylesheet" href="/hidden/later.css">
</head><body><p class="shown">Latin</p>
<div class="gone">Жук <p class="child">x</p><img src="/hidden/in-hidden.png" alt=""></div>
<p class="later">y</p><p class="inline" style="display: none">z</p><p class="attr" hidden>w</p>
<p class="unhidden">v</p><p class="invisible">u</p>
<p style="display: none; background: url(/hidden/style-hidden.png)">r</p>
<p style="background: url(/hidden/style-shown.png)">t</p>
</body></html>
"#;

const HIDDEN_FIRST_CSS: &str = r#"@font-face { font-family: F; src: url(/hidden/f-latin.ttf) format("truetype"); unicode-range: U+0000-00FF }
@font-face { font-family: F; src: url(/hidden/f-cyrillic.ttf) format("truetype"); unicode-range: U+0400-04FF }
@font-face { font-family: G; src: url(/hidden/g.ttf) format("truetype") }
body { font-family: F, sans-serif }
.shown { background: url(/hidden/shown.png) }
.gone { display: none; background: url(/hidden/gone.png) }
.gone .child { background: url(/hidden/child.png); font-family: G }
.later { background: url(/hidden/later.png) }
.inline { background: url(/hidden/inline.png) }
.attr { background: url(/hidden/attr.png) }
.unhidden { display: none; background: url(/hidden/unhidden.png) }
.invisible { visibility: hidden; background: url(/hidden/invisible.png) }
"#;

/// Read after the first: it hides an element the first styles, and shows one it hid.
const HIDDEN_LATER_CSS: &str = r#"p.later { display: none }
p.unhidden { display: block }
"#;

const HIDDEN_FONTS: [&str; 3] = [
    "/hidden/f-latin.ttf",
    "/hidden/f-cyrillic.ttf",
    "/hidden/g.ttf",
];

const HIDDEN_IMAGES: [&str; 11] = [
    "/hidden/shown.png",
    "/hidden/gone.png",
    "/hidden/child.png",
    "/hidden/in-hidden.png",
    "/hidden/later.png",
    "/hidden/inline.png",
    "/hidden/attr.png",
    "/hidden/unhidden.png",
    "/hidden/invisible.png",
    "/hidden/style-hidden.png",
    "/hidden/style-shown.png",
];

/// A font Debian's `fonts-dejavu-core` installs (Latin, Greek and Cyrillic).
const REAL_FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

const FAMILIES_FONTS: [&str; 6] = [
    "/families/text-latin.ttf",
    "/families/text-cyrillic.ttf",
    "/families/text-greek.ttf",
    "/families/other-latin.ttf",
    "/families/other-cyrillic.ttf",
    "/families/other-greek.ttf",
];

/// `flint serve ROOT` on a kernel-chosen port with `extra` arguments (HTTPS, an access log);
/// its address from the line it prints (`http://` or `https://`), its stderr then drained.
/// Killed when the `Server` is dropped.
pub fn serve(root: &Path, extra: &[&str]) -> Server {
    let mut child = flint()
        .args([
            "serve",
            root.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--threads",
            "1",
        ])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn flint serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stderr).lines();
        let first = lines.next().and_then(Result::ok).unwrap_or_default();
        let _ = tx.send(first);
        for _ in lines {} // drained while the server runs
    });
    let mut server = Server {
        child,
        addr: String::new(),
    };
    let line = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("flint serve printed no address within 10 s");
    server.addr = line
        .split("://")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_owned();
    server
}

/// The URLs Chromium's network stack started a request for while loading `url` (with its
/// network log on, `--dump-dom` ending the run once the page has loaded), with `extra` flags.
pub fn chromium_requests(url: &str, scratch: &Path, extra: &[&str]) -> Vec<String> {
    chromium_net_log(url, scratch, extra)
        .into_iter()
        .map(|(url, _)| url)
        .collect()
}

/// As [`chromium_requests`], each URL with the priority Chromium's network stack gave its
/// request (`HIGHEST`, `MEDIUM`, `LOW`, `LOWEST`, `IDLE`), as its net log says.
pub fn chromium_net_log(url: &str, scratch: &Path, extra: &[&str]) -> Vec<(String, String)> {
    let log = scratch.join("netlog.json");
    let flags = [
        "--window-size=800,600".to_owned(),
        "--dump-dom".to_owned(),
        format!("--log-net-log={}", log.display()),
    ];
    let flags: Vec<String> = flags
        .into_iter()
        .chain(extra.iter().map(|f| f.to_string()))
        .collect();
    let stderr = test_support::chromium::run(url, &flags, scratch).stderr;
    let text = std::fs::read_to_string(&log)
        .unwrap_or_else(|e| panic!("no net log from chromium ({e}): {stderr}"));
    std::fs::remove_file(&log).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_else(|e| {
        let from = (0..=text.len().saturating_sub(300))
            .rev()
            .find(|&i| text.is_char_boundary(i))
            .unwrap_or(0);
        let tail = &text[from..];
        panic!(
            "the net log is not JSON ({e}; {} bytes, ending {tail:?}); chromium's stderr: {stderr}",
            text.len()
        )
    });
    let event_type = |name: &str| {
        json["constants"]["logEventTypes"][name]
            .as_u64()
            .unwrap_or_else(|| panic!("{name} in the net log's constants"))
    };
    let (start_job, alive) = (
        event_type("URL_REQUEST_START_JOB"),
        event_type("REQUEST_ALIVE"),
    );
    let events = json["events"].as_array().expect("events");
    // A request's priority is on the event that begins it (its source's REQUEST_ALIVE).
    let mut priority = BTreeMap::new();
    for e in events.iter().filter(|e| e["type"].as_u64() == Some(alive)) {
        if let Some(p) = e["params"]["priority"].as_str() {
            priority
                .entry(e["source"]["id"].as_u64())
                .or_insert_with(|| p.to_owned());
        }
    }
    events
        .iter()
        .filter(|e| e["type"].as_u64() == Some(start_job))
        .filter_map(|e| {
            let url = e["params"]["url"].as_str()?.to_owned();
            let p = priority.get(&e["source"]["id"].as_u64()).cloned();
            Some((url, p.unwrap_or_default()))
        })
        .collect()
}
