//! What a stylesheet makes a browser request: its `@import`s and its `url()`s, in order, each
//! with the rule it belongs to, so that the crawl keeps only those of rules that match an
//! element of the page (`rules`).
//!
//! Tokenized by cssparser (Servo's implementation of CSS Syntax Level 3): `url(x)`,
//! `url("x")`, escapes, comments and strings come out as a browser's tokenizer gives them, so
//! a `url(` inside a comment or a string is not a reference. An `@import` counts only before
//! the first rule, as in a browser. `@media`, `@supports` and an `@import`'s conditions are
//! evaluated here, against the [`Env`] of the crawl (`media`): a block that does not apply is
//! not searched.
//!
//! A `@font-face` is read as a browser reads it: of its `src` list, the first entry a current
//! browser can use (a `url()` whose `format()` and `tech()` it supports, or that names none;
//! `local()` skipped, since which fonts a visitor has installed is not known), its family,
//! weight and style (which decide whether the page's text uses it: `rules`), and its
//! `unicode-range`, which the crawl holds against the page's text.

use crate::rules::Rule;
use cssparser::{Delimiter, ParseError, Parser, Token};
use std::sync::Arc;

mod font;
mod image_set;
pub mod media;

pub use font::{Face, FontUse};
pub use media::Env;

/// One reference in a stylesheet.
#[derive(Debug, Clone, PartialEq)]
pub struct Reference {
    /// As written: resolved against the stylesheet's URL by the caller.
    pub url: String,
    /// An `@import`: a stylesheet itself, followed in turn.
    pub import: bool,
    /// Whether an `@import`'s media list holds at the viewport (true for anything else). One
    /// that does not is fetched all the same, as a browser fetches it, but none of its rules
    /// apply, nor those of the stylesheets it imports.
    pub media_holds: bool,
    /// A font's `unicode-range` (inclusive code point ranges): fetched only for a page whose
    /// text has a character in one of them. `None`: any page.
    pub unicode_range: Option<Vec<(u32, u32)>>,
    /// The style rule it is declared in: requested only when the rule matches an element.
    /// `None`: whatever the page holds (an `@import`, a style attribute, `@keyframes`).
    pub rule: Option<Arc<Rule>>,
    /// A `@font-face`'s file: requested only when the page's text uses the face.
    pub face: Option<Face>,
}

impl Reference {
    fn new(url: String, import: bool, rule: Option<&Arc<Rule>>) -> Reference {
        Reference {
            url,
            import,
            media_holds: true,
            unicode_range: None,
            rule: rule.cloned(),
            face: None,
        }
    }

    /// Whether a page whose text has `chars` (sorted) requests it.
    pub fn wanted_by(&self, chars: &[char]) -> bool {
        wanted_by(self.unicode_range.as_deref(), chars)
    }
}

/// What a stylesheet holds that a page may request: its references, and the fonts its rules
/// use.
#[derive(Debug, Clone, Default)]
pub struct Sheet {
    /// Its `@import`s and `url()`s (`@font-face` sources among them), in the order written.
    pub refs: Vec<Reference>,
    /// The fonts of its declaration blocks, one for each block that sets any.
    pub fonts: Vec<FontUse>,
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

/// A stylesheet's references (in order) and font uses, as a browser at `env` reads it.
pub fn parse(css: &str, env: &Env) -> Sheet {
    let mut walker = Walker {
        env,
        sheet: Sheet::default(),
    };
    walker.rules(&mut Parser::new(css), 0, None);
    walker.sheet
}

/// A `style` attribute: declarations of the element that holds it.
pub fn parse_declarations(css: &str, env: &Env) -> Sheet {
    let mut walker = Walker {
        env,
        sheet: Sheet::default(),
    };
    walker.declarations(&mut Parser::new(css), 0, None);
    walker.sheet
}

struct Walker<'e> {
    env: &'e Env,
    sheet: Sheet,
}

/// Consumes the rest of a block or delimited part.
fn rest(p: &mut Parser<'_>) -> Result<(), ParseError<()>> {
    while p.next_including_whitespace_and_comments().is_ok() {}
    Ok(())
}

impl Walker<'_> {
    /// A list of rules (a stylesheet, or an `@media` block); `rule`: the style rule it is
    /// nested in, if any.
    fn rules(&mut self, p: &mut Parser<'_>, depth: u32, rule: Option<&Arc<Rule>>) {
        // Whether an @import may still appear.
        let mut imports_allowed = depth == 0;
        loop {
            p.skip_whitespace();
            let start = p.position();
            let name = match p.next() {
                Err(_) => return,
                Ok(Token::AtKeyword(name)) => Some(name.to_ascii_lowercase()),
                Ok(_) => None,
            };
            let prelude_start = p.position();
            let _ = p.parse_until_before(Delimiter::CurlyBracketBlock | Delimiter::Semicolon, rest);
            let prelude = p.slice_from(prelude_start).trim().to_owned();
            let block = matches!(p.next(), Ok(Token::CurlyBracketBlock));
            let Some(name) = name else {
                imports_allowed = false;
                if block && depth < MAX_DEPTH {
                    // A style rule; one nested in another (CSS nesting) applies with its parent.
                    let own = match rule {
                        Some(r) => r.clone(),
                        None => Arc::new(Rule::new(p.slice_from(start).trim_end_matches('{'))),
                    };
                    let _ = p.parse_nested_block(|p| {
                        self.declarations(p, depth + 1, Some(&own));
                        Ok::<(), ParseError<()>>(())
                    });
                }
                continue;
            };
            // @charset and @layer statements may precede @import; anything else ends them.
            if !matches!(name.as_str(), "import" | "charset" | "layer") || block {
                imports_allowed &= name == "import";
            }
            if name == "import" {
                if imports_allowed {
                    self.import(&prelude);
                }
                continue;
            }
            if !block || depth >= MAX_DEPTH {
                continue;
            }
            let applies = match name.as_str() {
                "media" => media::matches(&prelude, self.env),
                "supports" => media::supports(&prelude),
                // Paged media: print only.
                "page" => false,
                _ => true,
            };
            if !applies {
                continue;
            }
            let _ = p.parse_nested_block(|p| {
                match name.as_str() {
                    "font-face" => self.sheet.refs.extend(font::face(p, rule)),
                    "media" | "supports" | "layer" | "container" | "scope" | "document"
                    | "-moz-document" | "starting-style" => self.rules(p, depth + 1, rule),
                    // @keyframes and the rest: their url()s, whatever the page holds.
                    _ => self.tokens(p, depth + 1, rule),
                }
                Ok::<(), ParseError<()>>(())
            });
        }
    }

    /// `@import url [layer] [supports()] [media]`: the stylesheet, unless its `supports()`
    /// fails (Chromium then fetches nothing); a media list that does not hold is noted on it
    /// (Chromium fetches such a stylesheet, and the ones it imports, and applies none of it).
    fn import(&mut self, prelude: &str) {
        let mut p = Parser::new(prelude);
        let url = match p.next().cloned() {
            Ok(Token::UnquotedUrl(u) | Token::QuotedString(u)) => u.to_string(),
            Ok(Token::Function(f)) if f.eq_ignore_ascii_case("url") => {
                match p.parse_nested_block(|p| {
                    Ok::<_, ParseError<()>>(p.expect_string().ok().map(|s| s.to_string()))
                }) {
                    Ok(Some(u)) => u,
                    _ => return,
                }
            }
            _ => return,
        };
        let mut media_start = p.position();
        loop {
            p.skip_whitespace();
            let before = p.state();
            match p.next().cloned() {
                Ok(Token::Ident(i)) if i.eq_ignore_ascii_case("layer") => {}
                Ok(Token::Function(f)) if f.eq_ignore_ascii_case("layer") => {}
                Ok(Token::Function(f)) if f.eq_ignore_ascii_case("supports") => {
                    let start = p.position();
                    let _ = p.parse_nested_block(rest);
                    let cond = p.slice_from(start).trim_end_matches(')').to_owned();
                    if !media::supports(&format!("({cond})")) {
                        return;
                    }
                }
                _ => {
                    p.reset(&before);
                    break;
                }
            }
            media_start = p.position();
        }
        let _ = rest(&mut p);
        let mut import = Reference::new(url, true, None);
        import.media_holds = media::matches(p.slice_from(media_start), self.env);
        self.sheet.refs.push(import);
    }

    /// A declaration block: its `url()`s, and the font it sets.
    fn declarations(&mut self, p: &mut Parser<'_>, depth: u32, rule: Option<&Arc<Rule>>) {
        let mut font = FontUse::new(rule);
        loop {
            p.skip_whitespace();
            if p.is_exhausted() {
                break;
            }
            let start = p.position();
            let _ = p.parse_until_after(Delimiter::Semicolon, |p| {
                self.tokens(p, depth, rule);
                Ok::<(), ParseError<()>>(())
            });
            font.declaration(p.slice_from(start).trim_end_matches(';'));
        }
        if font.sets_something() {
            self.sheet.fonts.push(font);
        }
    }

    /// Any tokens: their `url()`s, in order.
    fn tokens(&mut self, p: &mut Parser<'_>, depth: u32, rule: Option<&Arc<Rule>>) {
        loop {
            let token = match p.next_including_whitespace_and_comments() {
                Ok(t) => t.clone(),
                Err(_) => return,
            };
            match token {
                Token::UnquotedUrl(url) => {
                    self.sheet
                        .refs
                        .push(Reference::new(url.to_string(), false, rule))
                }
                Token::Function(name)
                    if name.eq_ignore_ascii_case("url") || name.eq_ignore_ascii_case("src") =>
                {
                    // url("x") with a quoted string: the string is the URL.
                    let _ = p.parse_nested_block(|p| {
                        if let Ok(Token::QuotedString(url)) = p.next() {
                            self.sheet
                                .refs
                                .push(Reference::new(url.to_string(), false, rule));
                        }
                        Ok::<(), ParseError<()>>(())
                    });
                }
                Token::Function(name)
                    if name.eq_ignore_ascii_case("image-set")
                        || name.eq_ignore_ascii_case("-webkit-image-set") =>
                {
                    // One of its options is fetched: `css/image_set.rs`.
                    let picked =
                        p.parse_nested_block(|p| Ok::<_, ParseError<()>>(image_set::pick(p)));
                    if let Ok(Some(url)) = picked {
                        self.sheet.refs.push(Reference::new(url, false, rule));
                    }
                }
                Token::Function(_)
                | Token::ParenthesisBlock
                | Token::SquareBracketBlock
                | Token::CurlyBracketBlock
                    if depth < MAX_DEPTH =>
                {
                    let _ = p.parse_nested_block(|p| {
                        self.tokens(p, depth + 1, rule);
                        Ok::<(), ParseError<()>>(())
                    });
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
fn references(css: &str) -> Vec<Reference> {
    parse(css, &Env::default()).refs
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
            @media print { .x { background-image: url('print.png') } }
            @font-face { font-family: f; src: url(f.woff2) format("woff2") }
            @import "late.css";
            .e { background: url(sp\61 ce.png) }
            @supports (-ms-ime-align: auto) { .x { background: url(edge.png) } }
            @page { background: url(page.png) }"#;
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
    fn imports_whose_media_fails_are_fetched_and_whose_supports_fails_are_not() {
        let css = r#"@import url(print.css) print;
            @import "wide.css" screen and (min-width: 2000px);
            @import url(layered.css) layer(base) supports(display: grid) screen;
            @import url(moz.css) supports(-moz-appearance: none);
            @import url(plain.css);"#;
        let imports: Vec<(String, bool)> = references(css)
            .into_iter()
            .map(|r| (r.url, r.media_holds))
            .collect();
        assert_eq!(
            imports,
            [
                ("print.css".into(), false),
                ("wide.css".into(), false),
                ("layered.css".into(), true),
                ("plain.css".into(), true)
            ]
        );
    }

    #[test]
    fn each_url_carries_its_rule_and_each_rule_its_font() {
        let sheet = parse(
            r#"ul.search li, .x::after { background: url(a.png); font: italic bold 12px/1.5 "My Font", serif }
            @media screen { .y { list-style: url(b.png) } .z { font-family: var(--f) } }
            @keyframes k { from { background: url(k.png) } }
            .n { & .m { cursor: url(c.cur), auto } }"#,
            &Env::default(),
        );
        let rules: Vec<(&str, Option<&str>)> = sheet
            .refs
            .iter()
            .map(|r| (r.url.as_str(), r.rule.as_ref().map(|r| r.text.as_str())))
            .collect();
        assert_eq!(
            rules,
            [
                ("a.png", Some("ul.search li, .x::after")),
                ("b.png", Some(".y")),
                ("k.png", None),
                ("c.cur", Some(".n")),
            ]
        );
        assert_eq!(sheet.fonts.len(), 2);
        let font = &sheet.fonts[0];
        assert_eq!(font.families, ["my font", "serif"]);
        assert_eq!((font.weight, font.italic), (Some(700), Some(true)));
        assert_eq!(sheet.fonts[1].vars, ["--f"]);
        let vars = parse(
            ":root { --f: 'Fira Sans', serif; --c: var(--f) } code { font: 1em/1 var(--c, var(--x)) }",
            &Env::default(),
        );
        assert_eq!(
            vars.fonts[0].custom,
            [
                ("--f".to_owned(), "'Fira Sans', serif".to_owned()),
                ("--c".to_owned(), "var(--f)".to_owned())
            ]
        );
        assert_eq!(vars.fonts[1].vars, ["--c", "--x"]);
        let inline = parse_declarations(
            "background: url(i.png); font-family: 'A  B'",
            &Env::default(),
        );
        assert_eq!(inline.refs[0].rule, None);
        assert_eq!(inline.fonts[0].families, ["a b"]);
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

    type Subset = (String, Option<Vec<(u32, u32)>>);

    fn faces(css: &str) -> Vec<Subset> {
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
            @font-face { font-family: e; src: local(E), url(e.eot) format("embedded-opentype") }
            @media print { @font-face { font-family: p; src: url(p.woff2) } }"#;
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
    fn a_face_has_its_family_weight_and_style() {
        let css = r#"@font-face { font-family: "Open  Sans"; font-weight: bold; font-style: italic;
                src: url(os.woff2) }
            @font-face { font-family: V; font-weight: 100 900; src: url(v.woff2) }
            @font-face { font-family: N; src: url(n.woff2) }"#;
        let faces: Vec<Face> = references(css).into_iter().filter_map(|r| r.face).collect();
        let face = |family: &str, weight, italic| Face {
            family: family.into(),
            weight,
            italic,
        };
        assert_eq!(
            faces,
            [
                face("open sans", (700, 700), true),
                face("v", (100, 900), false),
                face("n", (400, 400), false),
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
