//! What a stylesheet makes a browser request: its `@import`s and its `url()`s, in order.
//!
//! Tokenized by cssparser (Servo's implementation of CSS Syntax Level 3): `url(x)`,
//! `url("x")`, escapes, comments and strings come out as a browser's tokenizer gives them, so
//! a `url(` inside a comment or a string is not a reference. An `@import` counts only before
//! the first rule, as in a browser. Every `url()` is listed, including those of rules no element
//! matches: a browser fetches those only when they apply, which without a layout engine cannot
//! be known (docs/discover.md says so).
//!
//! A `@font-face` is read as a browser reads it: of its `src` list, the first entry a current
//! browser can use (a `url()` whose `format()` and `tech()` it supports, or that names none;
//! `local()` skipped, since which fonts a visitor has installed is not known), and its
//! `unicode-range`, which the crawl holds against the page's text.

use cssparser::{Delimiter, ParseError, Parser, Token, UnicodeRange};

/// One reference in a stylesheet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// As written: resolved against the stylesheet's URL by the caller.
    pub url: String,
    /// An `@import`: a stylesheet itself, followed in turn.
    pub import: bool,
    /// A font's `unicode-range` (inclusive code point ranges): fetched only for a page whose
    /// text has a character in one of them. `None`: any page.
    pub unicode_range: Option<Vec<(u32, u32)>>,
}

impl Reference {
    fn new(url: String, import: bool) -> Reference {
        Reference {
            url,
            import,
            unicode_range: None,
        }
    }

    /// Whether a page whose text has `chars` (sorted) requests it.
    pub fn wanted_by(&self, chars: &[char]) -> bool {
        wanted_by(self.unicode_range.as_deref(), chars)
    }
}

/// Whether a page whose text has `chars` (sorted, distinct) requests a font of `range`.
pub fn wanted_by(range: Option<&[(u32, u32)]>, chars: &[char]) -> bool {
    let Some(range) = range else { return true };
    range.iter().any(|&(start, end)| {
        let from = chars.partition_point(|&c| (c as u32) < start);
        chars.get(from).is_some_and(|&c| c as u32 <= end)
    })
}

/// Blocks nested deeper than this are not searched (a hostile stylesheet cannot overflow the
/// stack; real ones nest a few levels).
const MAX_DEPTH: u32 = 64;

/// The stylesheet's references, in order.
pub fn references(css: &str) -> Vec<Reference> {
    let mut parser = Parser::new(css);
    let mut out = Vec::new();
    walk(&mut parser, 0, &mut out);
    out
}

fn walk(p: &mut Parser<'_>, depth: u32, out: &mut Vec<Reference>) {
    // At the top level: whether an @import may still appear, and whether one is being read.
    let mut imports_allowed = depth == 0;
    let mut in_import = false;
    // A @font-face's block comes next.
    let mut font_face = false;
    loop {
        let token = match p.next_including_whitespace_and_comments() {
            Ok(t) => t.clone(),
            Err(_) => return,
        };
        match token {
            Token::WhiteSpace(_) | Token::Comment(_) => {}
            Token::AtKeyword(name) => {
                let name = name.to_ascii_lowercase();
                in_import = imports_allowed && name == "import";
                font_face = name == "font-face";
                // @charset and @layer statements may precede @import; anything else ends them.
                if !matches!(name.as_str(), "import" | "charset" | "layer") {
                    imports_allowed = false;
                }
            }
            Token::CurlyBracketBlock if font_face => {
                imports_allowed = false;
                font_face = false;
                let _ = p.parse_nested_block(|p| {
                    out.extend(font_face_source(p));
                    Ok::<(), ParseError<()>>(())
                });
            }
            Token::UnquotedUrl(url) => {
                out.push(Reference::new(url.to_string(), in_import));
                in_import = false;
            }
            Token::QuotedString(url) if in_import => {
                out.push(Reference::new(url.to_string(), true));
                in_import = false;
            }
            Token::Function(name)
                if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") =>
            {
                // url("x") with a quoted string: the string is the URL.
                let import = in_import;
                let _ = p.parse_nested_block(|p| {
                    if let Ok(Token::QuotedString(url)) = p.next() {
                        out.push(Reference::new(url.to_string(), import));
                    }
                    Ok::<(), ParseError<()>>(())
                });
                in_import = false;
            }
            Token::Function(_)
            | Token::ParenthesisBlock
            | Token::SquareBracketBlock
            | Token::CurlyBracketBlock => {
                if matches!(token, Token::CurlyBracketBlock) {
                    imports_allowed = false;
                    in_import = false;
                }
                if depth < MAX_DEPTH {
                    let _ = p.parse_nested_block(|p| {
                        walk(p, depth + 1, out);
                        Ok::<(), ParseError<()>>(())
                    });
                }
            }
            Token::Semicolon => in_import = false,
            _ => {}
        }
    }
}

/// The file a browser fetches for a `@font-face` block, with its `unicode-range`.
fn font_face_source(p: &mut Parser<'_>) -> Option<Reference> {
    let mut src = None;
    let mut range = None;
    while !p.is_exhausted() {
        let _ = p.parse_until_after(Delimiter::Semicolon, |p| {
            let name = p.expect_ident()?.clone();
            p.expect_colon()?;
            if name.eq_ignore_ascii_case("src") {
                src = first_usable_source(p);
            } else if name.eq_ignore_ascii_case("unicode-range") {
                let ranges = p.parse_comma_separated(|p| {
                    UnicodeRange::parse(p).map_err(ParseError::<()>::from)
                })?;
                range = Some(ranges.iter().map(|r| (r.start, r.end)).collect());
            }
            Ok::<(), ParseError<()>>(())
        });
    }
    src.map(|url| Reference {
        url,
        import: false,
        unicode_range: range,
    })
}

/// The first `src` entry a current browser uses: a `url()` with no `format()`/`tech()` it
/// does not support (EOT and SVG fonts, incremental transfer are not); `local()` skipped.
fn first_usable_source(p: &mut Parser<'_>) -> Option<String> {
    while !p.is_exhausted() {
        let entry = p.parse_until_after(Delimiter::Comma, |p| Ok::<_, ParseError<()>>(source(p)));
        if let Ok(Some(url)) = entry {
            return Some(url);
        }
    }
    None
}

/// One `src` entry: its URL when it is one a browser can use.
fn source(p: &mut Parser<'_>) -> Option<String> {
    let url = match p.next().ok()?.clone() {
        Token::UnquotedUrl(u) => u.to_string(),
        Token::Function(f) if f.eq_ignore_ascii_case("url") => p
            .parse_nested_block(|p| {
                Ok::<_, ParseError<()>>(p.expect_string().ok().map(|s| s.to_string()))
            })
            .ok()
            .flatten()?,
        _ => return None, // local(), or not a source
    };
    let mut usable = true;
    while let Ok(token) = p.next() {
        let Token::Function(f) = token.clone() else {
            continue;
        };
        let names: Vec<String> = p
            .parse_nested_block(|p| {
                let mut names = Vec::new();
                while let Ok(t) = p.next() {
                    match t {
                        Token::Ident(s) | Token::QuotedString(s) => {
                            names.push(s.to_ascii_lowercase())
                        }
                        _ => {}
                    }
                }
                Ok::<_, ParseError<()>>(names)
            })
            .unwrap_or_default();
        if f.eq_ignore_ascii_case("format") {
            // A list of formats (older syntax): any one supported will do.
            usable &= names.iter().any(|n| supported_format(n));
        } else if f.eq_ignore_ascii_case("tech") {
            usable &= names.iter().all(|n| supported_tech(n));
        }
    }
    usable.then_some(url)
}

fn supported_format(name: &str) -> bool {
    matches!(
        name.strip_suffix("-variations").unwrap_or(name),
        "woff2" | "woff" | "truetype" | "opentype" | "collection"
    )
}

fn supported_tech(name: &str) -> bool {
    matches!(
        name,
        "features-opentype"
            | "variations"
            | "color-colrv0"
            | "color-colrv1"
            | "color-cbdt"
            | "palettes"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refs(css: &str) -> Vec<(String, bool)> {
        references(css)
            .into_iter()
            .map(|r| (r.url, r.import))
            .collect()
    }

    #[test]
    fn imports_and_urls_in_order() {
        let css = r#"@charset "utf-8";
            @import "a.css";
            @import url(b.css) screen;
            @import url("c.css");
            /* url(comment.png) */
            body { background: url( bg.png ) no-repeat; content: "url(string.png)" }
            @media (min-width: 1px) { .x { background-image: url('nested.png') } }
            @font-face { font-family: f; src: url(f.woff2) format("woff2") }
            @import "late.css";
            .e { background: url(sp\61 ce.png) }"#;
        assert_eq!(
            refs(css),
            [
                ("a.css".into(), true),
                ("b.css".into(), true),
                ("c.css".into(), true),
                ("bg.png".into(), false),
                ("nested.png".into(), false),
                ("f.woff2".into(), false),
                ("space.png".into(), false),
            ]
        );
    }

    #[test]
    fn hostile_nesting_and_junk_end_quietly() {
        let deep = "(".repeat(100_000) + "url(x.png)";
        assert!(references(&deep).is_empty());
        assert_eq!(
            refs("a { b: url(ok.png) } }}} { url(also.png)"),
            [("ok.png".into(), false), ("also.png".into(), false)]
        );
    }
}

#[cfg(test)]
mod font_tests {
    use super::*;

    type Face = (String, Option<Vec<(u32, u32)>>);

    fn faces(css: &str) -> Vec<Face> {
        references(css)
            .into_iter()
            .map(|r| (r.url, r.unicode_range))
            .collect()
    }

    #[test]
    fn a_font_face_is_the_first_source_a_browser_uses() {
        let css = r#"
            @font-face { font-family: a;
                src: url(a.eot); src: url("a.eot?#iefix") format("embedded-opentype"),
                     local("A Sans"), url(a.svg#a) format('svg'), url(a.woff2) format("woff2"),
                     url(a.woff) format("woff"), url(a.ttf) format("truetype") }
            @font-face { font-family: b; src: url(b-inc.woff2) tech(incremental),
                     url(b.woff2) format(woff2) tech(variations); unicode-range: U+0000-00FF, U+0131 }
            @font-face { font-family: c; src: url(c.ttf), url(c.woff2) format(woff2) }
            @font-face { font-family: d; src: url(d.woff2) format("woff2", "woff") }
            @font-face { font-family: e; src: local(E), url(e.eot) format("embedded-opentype") }"#;
        assert_eq!(
            faces(css),
            [
                ("a.woff2".into(), None),
                ("b.woff2".into(), Some(vec![(0, 0xff), (0x131, 0x131)])),
                ("c.ttf".into(), None),
                ("d.woff2".into(), None),
            ]
        );
    }

    #[test]
    fn a_subset_is_wanted_only_for_a_character_in_its_range() {
        let latin = Some(&[(0x20, 0x7e), (0xa0, 0xff)][..]);
        let greek = Some(&[(0x370, 0x3ff)][..]);
        let chars = ['a', 'b', 'é'];
        assert!(wanted_by(latin, &chars));
        assert!(!wanted_by(greek, &chars));
        assert!(wanted_by(greek, &['a', 'λ']));
        assert!(wanted_by(None, &[]));
        assert!(!wanted_by(latin, &[]));
    }
}
