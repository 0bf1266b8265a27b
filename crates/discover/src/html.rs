//! What an HTML document makes a browser request, in document order.
//!
//! The document is parsed by html5ever (into scraper's tree, nesting capped at the depth
//! Chromium allows: [`nesting`]), the HTML5 parser of the Servo engine: the tree is the one a browser builds, so what a browser would not fetch is not found
//! either. `<template>` contents are an inert fragment (skipped), `<noscript>` is text when
//! scripting is on (as in every browser), and only the first `<base href>` counts.
//!
//! The references are returned unresolved against the site's origin (the crawl decides what is
//! fetched); each is resolved against the document's base URL here, as the browser does.

use crate::charset::{self, Charset};
use crate::css::{media, Env};
use crate::forms::{Form, Forms};
use crate::{nesting, srcset};
use scraper::{ElementRef, Html, Node};
use url::Url;

/// Why a URL is requested, which decides what is done with what comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A subresource of the page (image, script, icon, preload, prefetch): fetched, not parsed.
    File,
    /// A stylesheet: fetched and its `url()` and `@import` followed.
    Stylesheet,
    /// A stylesheet whose `media` does not hold at the viewport (`print`, a width the viewport
    /// is not): a browser fetches it all the same (at the lowest priority) and the stylesheets
    /// it imports, but applies none of their rules, so none of their `url()`s or fonts.
    StylesheetNotApplied,
    /// A document of its own (`iframe src`): a page of the workload.
    Frame,
}

/// One reference found in the document.
#[derive(Debug, Clone, PartialEq)]
pub enum Found {
    /// A URL a browser requests with the page.
    Url {
        /// The reference, resolved against the document's base URL (on any origin).
        url: Url,
        /// What is done with what comes back.
        kind: Kind,
    },
    /// A `<style>` element's stylesheet: its `url()`s resolve against the document's base URL.
    /// `applies`: whether its `media` holds (one that does not has only its `@import`s
    /// fetched).
    Css {
        /// The element's text: the stylesheet.
        text: String,
        /// Whether its `media` holds at the viewport.
        applies: bool,
    },
    /// A `style` attribute's declarations, of `element` (in the document's tree): they apply
    /// to it, and are drawn only if no `display: none` hides it.
    Style {
        /// The attribute's value: declarations without a selector or braces.
        text: String,
        /// The element that carries it, in [`Document::tree`].
        element: ego_tree::NodeId,
    },
}

/// The document's references, in document order, and its links (`a href`, `area href`).
#[derive(Debug, Clone, Default)]
pub struct Document {
    /// What a browser requests or applies for the document, in document order.
    pub found: Vec<Found>,
    /// The `a href` and `area href` targets, resolved, repeats kept: the pages a crawl may
    /// follow.
    pub links: Vec<Url>,
    /// The URL relative references resolve against (`<base href>` or the document's).
    pub base: Option<Url>,
    /// Elements nested deeper than [`nesting::MAX_DEPTH`], closed at once (their references
    /// kept, what they held put beside them).
    pub left_out: u64,
    /// The characters of the page's text (sorted, each once): what decides which
    /// `unicode-range` subsets of a font a browser fetches.
    pub chars: Vec<char>,
    /// The parsed document: which stylesheet rules match its elements.
    pub tree: Option<Html>,
    /// Its forms, in document order.
    pub forms: Forms,
    /// The encoding it was decoded from, and what named it.
    pub charset: Charset,
    /// Its references (attributes naming URLs) that hold characters other than ASCII: those
    /// its encoding changes.
    pub non_ascii_references: u64,
}

/// What the browser's image candidate selection is given: the viewport width in CSS pixels,
/// or `None` for the largest candidate; `env`: what `media` attributes of stylesheets and
/// preloads are evaluated against.
pub fn parse(html: &str, url: &Url, viewport: Option<u32>, env: &Env) -> Document {
    let (tree, left_out) = nesting::parse_document(html);
    references(tree, left_out, Charset::default(), url, viewport, env)
}

/// As [`parse`], for a document as fetched: its bytes decoded in the encoding its byte order
/// mark, `content_type_charset` (its `Content-Type`'s `charset`) or its `<meta>` names (see
/// [`charset`](crate::charset)), its references' queries encoded in it.
pub fn parse_bytes(
    body: &[u8],
    content_type_charset: Option<&str>,
    url: &Url,
    viewport: Option<u32>,
    env: &Env,
) -> Document {
    let (mut charset, certain) = charset::html_start(body, content_type_charset);
    let text = charset::decode(body, &charset);
    let mut declared = None;
    let parsed = nesting::parse_document_until(&text, |label| {
        if certain || declared.is_some() {
            return false;
        }
        // The first declaration the parser meets decides, as a browser's prescan and its
        // "change the encoding" have it; one it cannot use is passed over.
        let Some(e) = charset::meta_encoding(label) else {
            return false;
        };
        declared = Some(e);
        e != charset.encoding
    });
    let (tree, left_out) = match parsed {
        Some(done) => done,
        None => {
            charset.encoding = declared.expect("stopped on a declaration");
            let again = charset::decode(body, &charset);
            nesting::parse_document(&again)
        }
    };
    if declared.is_some() {
        charset.from = "its <meta charset>";
    }
    drop(text);
    references(tree, left_out, charset, url, viewport, env)
}

fn references(
    tree: Html,
    left_out: u64,
    charset: Charset,
    url: &Url,
    viewport: Option<u32>,
    env: &Env,
) -> Document {
    let base = first_base(&tree, url, &charset).unwrap_or_else(|| url.clone());
    let mut doc = Document {
        base: Some(base.clone()),
        left_out,
        charset,
        ..Document::default()
    };
    // An explicit stack: a hostile page may nest elements deeper than the thread's stack.
    let mut stack: Vec<ElementRef<'_>> = vec![tree.root_element()];
    let mut chars = std::collections::BTreeSet::new();
    while let Some(el) = stack.pop() {
        element(el, &base, viewport, env, &mut doc);
        if el.value().name() == "form" && is_html(&el) {
            if let Some(form) = Form::read(el, &base, url) {
                doc.forms.push(form);
            }
        }
        if shows_text(&el) {
            for child in el.children() {
                if let Node::Text(t) = child.value() {
                    chars.extend(t.chars().filter(|c| !c.is_whitespace()));
                }
            }
        }
        let children: Vec<ElementRef<'_>> = el
            .children()
            // A <template>'s contents hang under a fragment node: inert, never fetched.
            .filter(|c| !matches!(c.value(), Node::Fragment))
            .filter_map(ElementRef::wrap)
            .collect();
        stack.extend(children.into_iter().rev());
    }
    doc.chars = chars.into_iter().collect();
    doc.tree = Some(tree);
    doc
}

/// Whether an element's text is drawn in the page (in a font the page may load).
fn shows_text(el: &ElementRef<'_>) -> bool {
    !matches!(
        el.value().name(),
        "script" | "style" | "noscript" | "template" | "title" | "head"
    )
}

const HTML_NS: &str = "http://www.w3.org/1999/xhtml";

fn first_base(tree: &Html, url: &Url, charset: &Charset) -> Option<Url> {
    tree.root_element()
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| is_html(e) && e.value().name() == "base" && e.value().attr("href").is_some())
        .and_then(|e| charset.join(url, e.value().attr("href")?.trim()))
}

fn is_html(e: &ElementRef<'_>) -> bool {
    &*e.value().name.ns == HTML_NS
}

fn element(el: ElementRef<'_>, base: &Url, viewport: Option<u32>, env: &Env, doc: &mut Document) {
    let v = el.value();
    let charset = doc.charset;
    if let Some(style) = v.attr("style") {
        doc.found.push(Found::Style {
            text: style.to_owned(),
            element: el.id(),
        });
    }
    if !is_html(&el) {
        return;
    }
    let attr = |name: &str| v.attr(name).map(str::trim).filter(|s| !s.is_empty());
    let mut push = |value: Option<&str>, kind: Kind| {
        doc.non_ascii_references += u64::from(value.is_some_and(|s| !s.is_ascii()));
        if let Some(url) = value.and_then(|s| charset.join(base, s)) {
            doc.found.push(Found::Url { url, kind });
        }
    };
    // A `media` attribute: absent or empty, it holds.
    let media_holds = v.attr("media").is_none_or(|m| media::matches(m, env));
    match v.name() {
        "img" => {
            // Inside <picture>, a matching <source> wins over the img's own candidates.
            let picked = in_picture(&el)
                .and_then(|p| picture_source(p, viewport))
                .or_else(|| srcset::pick(attr("srcset"), attr("src"), attr("sizes"), viewport));
            push(picked.as_deref(), Kind::File);
        }
        "input" if attr("type").is_some_and(|t| t.eq_ignore_ascii_case("image")) => {
            push(attr("src"), Kind::File)
        }
        "script" if runs(v.attr("type")) && v.attr("nomodule").is_none() => {
            push(attr("src"), Kind::File)
        }
        "link" => {
            let rel = v.attr("rel").unwrap_or("").to_ascii_lowercase();
            let rels: Vec<&str> = rel.split_ascii_whitespace().collect();
            if rels.contains(&"stylesheet") {
                // Alternate and disabled stylesheets are not fetched until chosen.
                if !rels.contains(&"alternate") && v.attr("disabled").is_none() {
                    let kind = if media_holds || sets_media_on_load(&el) {
                        Kind::Stylesheet
                    } else {
                        Kind::StylesheetNotApplied
                    };
                    push(attr("href"), kind);
                }
            } else if rels.contains(&"prefetch") {
                // Fetched once the page is idle, for a later page, whatever its `media`
                // (Chromium does not evaluate it for a prefetch).
                push(attr("href"), Kind::File);
            } else if !media_holds {
                // A preload (or an icon) for another medium is not fetched.
            } else if rels.contains(&"preload") && attr("as") == Some("style") {
                push(attr("href"), Kind::Stylesheet);
            } else if rels.iter().any(|r| {
                matches!(
                    *r,
                    "icon" | "preload" | "modulepreload" | "apple-touch-icon"
                )
            }) {
                push(attr("href"), Kind::File);
            }
        }
        "video" => push(attr("poster"), Kind::File),
        // HTML's presentational `background`: a background image, as CSS's would be.
        "body" | "table" | "thead" | "tbody" | "tfoot" | "tr" | "td" | "th" => {
            push(attr("background"), Kind::File)
        }
        // An image (or other file) shown in place; an object typed as a document would be a
        // frame, which a page rarely asks of it: not told apart.
        "object" => push(attr("data"), Kind::File),
        "embed" => push(attr("src"), Kind::File),
        "iframe" | "frame" => push(attr("src"), Kind::Frame),
        "style" => doc.found.push(Found::Css {
            text: el.text().collect(),
            applies: media_holds,
        }),
        "a" | "area" => {
            let href = attr("href");
            doc.non_ascii_references += u64::from(href.is_some_and(|s| !s.is_ascii()));
            if let Some(url) = href.and_then(|h| charset.join(base, h)) {
                doc.links.push(url);
            }
        }
        _ => {}
    }
}

/// Whether a `<link>`'s `onload` script sets its `media` (`media="print"
/// onload="this.media='all'"`, the common way of loading a stylesheet without holding up the
/// page): the stylesheet then applies once loaded, and a browser fetches what its rules need.
fn sets_media_on_load(link: &ElementRef<'_>) -> bool {
    link.value()
        .attr("onload")
        .is_some_and(|s| s.contains("media"))
}

/// Whether a `<script type>` is one a browser runs (and so fetches): classic JavaScript or a
/// module (HTML's "JavaScript MIME type essence match").
fn runs(script_type: Option<&str>) -> bool {
    let Some(t) = script_type.map(str::trim) else {
        return true;
    };
    let t = t.to_ascii_lowercase();
    t.is_empty()
        || t == "module"
        || matches!(
            t.as_str(),
            "text/javascript"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "text/ecmascript"
                | "text/jscript"
                | "text/livescript"
        )
}

fn in_picture<'a>(img: &ElementRef<'a>) -> Option<ElementRef<'a>> {
    img.parent()
        .and_then(ElementRef::wrap)
        .filter(|p| p.value().name() == "picture")
}

/// The `<picture>`'s first `<source>` (before the img) whose `type` the browser can decode and
/// whose `media` matches the viewport: its srcset's pick.
fn picture_source(picture: ElementRef<'_>, viewport: Option<u32>) -> Option<String> {
    for source in picture.children().filter_map(ElementRef::wrap) {
        let v = source.value();
        match v.name() {
            "img" => return None,
            "source" => {}
            _ => continue,
        }
        if !v.attr("type").is_none_or(srcset::decodable) {
            continue;
        }
        if !v
            .attr("media")
            .is_none_or(|m| srcset::media_matches(m, viewport))
        {
            continue;
        }
        if let Some(url) = srcset::pick(v.attr("srcset"), None, v.attr("sizes"), viewport) {
            return Some(url);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn urls(doc: &Document) -> Vec<(String, Kind)> {
        doc.found
            .iter()
            .filter_map(|f| match f {
                Found::Url { url, kind } => Some((url.path().to_owned(), *kind)),
                Found::Css { .. } | Found::Style { .. } => None,
            })
            .collect()
    }

    #[test]
    fn what_a_browser_would_not_fetch_is_not_found() {
        let html = r#"<!doctype html><html><head>
            <base href="/sub/"><base href="/other/">
            <link rel="alternate stylesheet" href="alt.css">
            <link rel=stylesheet href="a.css">
            <script type="text/template" src="t.js"></script>
            <script nomodule src="old.js"></script>
            <script type=module src="m.js"></script>
            </head><body>
            <template><img src="tpl.png"></template>
            <noscript><img src="ns.png"></noscript>
            <svg><image href="svg.png"/></svg>
            <img src="i.png" style="background: url(bg.png)">
            <a href="next.html#top">n</a>
            </body></html>"#;
        let url = Url::parse("http://h/dir/page.html").unwrap();
        let doc = parse(html, &url, None, &Env::default());
        assert_eq!(
            urls(&doc),
            [
                ("/sub/a.css".to_owned(), Kind::Stylesheet),
                ("/sub/m.js".to_owned(), Kind::File),
                ("/sub/i.png".to_owned(), Kind::File),
            ]
        );
        assert_eq!(
            doc.found
                .iter()
                .filter(|f| matches!(f, Found::Style { .. }))
                .count(),
            1
        );
        assert_eq!(doc.links[0].as_str(), "http://h/sub/next.html#top");
        // The text drawn: "n" of the link; not the noscript's, the template's or a style's.
        assert_eq!(doc.chars, ['n']);
    }

    #[test]
    fn stylesheets_for_other_media_are_fetched_not_applied_their_preloads_skipped_prefetches_not() {
        let html = r#"<link rel=stylesheet href="print.css" media="print">
            <link rel=stylesheet href="all.css" media="">
            <link rel=stylesheet href="list.css" media="print, SCREEN">
            <link rel=stylesheet href="later.css" media="print" onload="this.media='all'">
            <link rel=preload as=image href="p.png" media="print">
            <link rel=preload as=image href="s.png" media="(max-width: 2000px)">
            <link rel=prefetch href="pf.png" media="print"><link rel="next PREFETCH" href="n.html">
            <link rel=dns-prefetch href="dns.png"><link rel=prerender href="pr.png">
            <style media="print">p { color: red }</style><style>p { color: blue }</style>"#;
        let doc = parse(
            html,
            &Url::parse("http://h/").unwrap(),
            None,
            &Env::default(),
        );
        assert_eq!(
            urls(&doc),
            [
                ("/print.css".to_owned(), Kind::StylesheetNotApplied),
                ("/all.css".to_owned(), Kind::Stylesheet),
                ("/list.css".to_owned(), Kind::Stylesheet),
                ("/later.css".to_owned(), Kind::Stylesheet),
                ("/s.png".to_owned(), Kind::File),
                ("/pf.png".to_owned(), Kind::File),
                ("/n.html".to_owned(), Kind::File),
            ]
        );
        let styles: Vec<bool> = doc
            .found
            .iter()
            .filter_map(|f| match f {
                Found::Css { applies, .. } => Some(*applies),
                _ => None,
            })
            .collect();
        assert_eq!(styles, [false, true]);
    }

    #[test]
    fn picture_takes_its_first_matching_source() {
        let html = r#"<picture>
            <source type="image/x-unknown" srcset="a.xyz">
            <source media="(max-width: 600px)" srcset="small.webp">
            <source srcset="large.webp">
            <img src="fallback.png"></picture>"#;
        let url = Url::parse("http://h/").unwrap();
        let narrow = parse(html, &url, Some(500), &Env::default());
        assert_eq!(urls(&narrow)[0].0, "/small.webp");
        let wide = parse(html, &url, None, &Env::default());
        assert_eq!(urls(&wide)[0].0, "/large.webp");
    }

    #[test]
    fn unclosed_tags_closed_at_once_let_later_end_tags_through() {
        // A template at the cap; the paragraphs and items in it (never closed) closed at once:
        // `</template>` is still the template's, and the img after it is the body's (in the
        // template it would be inert, never fetched).
        let page = format!(
            "<body>{}<template><p>a<p>b<ul><li>c<li>d</template><img src=after.png>",
            "<div>".repeat(509)
        );
        let url = Url::parse("http://site/").unwrap();
        let doc = parse(&page, &url, None, &Default::default());
        assert_eq!(doc.left_out, 5);
        let after = Found::Url {
            url: url.join("after.png").unwrap(),
            kind: Kind::File,
        };
        assert_eq!(doc.found, [after]);
    }

    #[test]
    fn an_element_past_the_cap_keeps_its_own_references() {
        // As Chromium keeps it (attached at its limit): the poster, the link and the style are
        // found, and what the elements held too.
        let page = format!(
            "<body>{}<video poster=p.png>v</video><a href=/next>x</a>\
             <div style=\"background: url(bg.png)\"><img src=in.png></div><img src=after.png>",
            "<div>".repeat(520)
        );
        let url = Url::parse("http://site/").unwrap();
        let doc = parse(&page, &url, None, &Default::default());
        assert_eq!(doc.left_out, 13);
        let file = |path: &str| Found::Url {
            url: url.join(path).unwrap(),
            kind: Kind::File,
        };
        assert_eq!(doc.found.len(), 4, "{:?}", doc.found);
        assert_eq!(doc.found[0], file("p.png"));
        assert!(
            matches!(&doc.found[1], Found::Style { text, .. } if text == "background: url(bg.png)"),
            "{:?}",
            doc.found
        );
        assert_eq!(doc.found[2..], [file("in.png"), file("after.png")]);
        assert_eq!(doc.links, [url.join("/next").unwrap()]);
    }

    #[test]
    fn presentational_backgrounds_objects_and_embeds_are_files() {
        let page = "<body background=body.png><table background=t.png><tr><td background=td.png>\
                    </table><object data=o.png type=image/png></object><embed src=e.svg>\
                    <div background=not-an-attribute-of-div.png>";
        let url = Url::parse("http://site/").unwrap();
        let doc = parse(page, &url, None, &Default::default());
        let files: Vec<String> = doc
            .found
            .iter()
            .filter_map(|f| match f {
                Found::Url { url, .. } => Some(url.path().to_owned()),
                _ => None,
            })
            .collect();
        assert_eq!(
            files,
            ["/body.png", "/t.png", "/td.png", "/o.png", "/e.svg"]
        );
    }
}
