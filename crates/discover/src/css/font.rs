//! Fonts in a stylesheet: a `@font-face`'s file, family, weight and style, and what a style
//! rule's `font-family`, `font-weight`, `font-style` and `font` declarations ask for.

use super::Reference;
use crate::rules::Rule;
use cssparser::{Delimiter, ParseError, Parser, Token, UnicodeRange};
use std::sync::Arc;

/// What a `@font-face` offers: the page's text in `family` at a weight and style it best
/// matches uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Face {
    /// Lowercase, quotes and extra spaces gone.
    pub family: String,
    /// The weights it covers (a variable font's range; one weight otherwise).
    pub weight: (u16, u16),
    /// `italic` or `oblique`.
    pub italic: bool,
}

/// The font a style rule sets.
#[derive(Debug, Clone, Default)]
pub struct FontUse {
    /// The style rule the declarations are in: they apply to what it matches. `None`: a
    /// `style` attribute's, some element's.
    pub rule: Option<Arc<Rule>>,
    /// The families named (lowercase), generic ones included.
    pub families: Vec<String>,
    /// Custom properties the family list is taken from (`var(--name)`).
    pub vars: Vec<String>,
    /// The custom properties the rule sets (`--name: value`): a family list a `var()`
    /// may name.
    pub custom: Vec<(String, String)>,
    /// The `font-weight` (or `font`) set, 1 to 1000 (`normal` and `lighter` 400, `bold` and
    /// `bolder` 700); `None` when the rule sets none.
    pub weight: Option<u16>,
    /// Whether the `font-style` (or `font`) set is slanted (`italic` or `oblique`); `None`
    /// when the rule sets none.
    pub italic: Option<bool>,
    /// A `content` declaration's text (its strings, escapes undone; empty for `none`, an
    /// image, a counter): what a `::before` or `::after` the rule styles draws.
    pub content: Option<String>,
    /// A `display` declaration: `none` (true: the element and what it holds draw nothing and
    /// fetch no background) or another (false).
    pub hidden: Option<bool>,
}

impl FontUse {
    pub(super) fn new(rule: Option<&Arc<Rule>>) -> FontUse {
        FontUse {
            rule: rule.cloned(),
            ..FontUse::default()
        }
    }

    pub(super) fn sets_something(&self) -> bool {
        !self.vars.is_empty()
            || !self.custom.is_empty()
            || !self.families.is_empty()
            || self.weight.is_some()
            || self.italic.is_some()
            || self.content.is_some()
            || self.hidden.is_some()
    }

    /// One declaration (`name: value`) of the rule.
    pub fn declaration(&mut self, text: &str) {
        let Some((name, value)) = text.split_once(':') else {
            return;
        };
        let name = name.trim();
        if name.starts_with("--") {
            self.custom.push((name.to_owned(), value.trim().to_owned()));
            return;
        }
        let name = name.to_ascii_lowercase();
        let value = value.trim();
        let value = value
            .strip_suffix("!important")
            .or_else(|| value.strip_suffix("! important"))
            .unwrap_or(value)
            .trim();
        match name.as_str() {
            "font-family" => self.set_families(value),
            "font-weight" => self.weight = weight(value),
            "font-style" => self.italic = style(value),
            "font" => self.shorthand(value),
            "content" => self.content = Some(strings(value)),
            "display" => self.hidden = Some(value.eq_ignore_ascii_case("none")),
            _ => {}
        }
    }

    fn set_families(&mut self, value: &str) {
        if value.contains("var(") {
            self.vars = vars(value);
            return;
        }
        self.families = families(value);
        if matches!(
            self.families.as_slice(),
            [f] if matches!(f.as_str(), "inherit" | "initial" | "unset" | "revert" | "revert-layer")
        ) {
            self.families.clear();
        }
    }

    /// `font: [style] [variant] [weight] [stretch] size[/line-height] family, ...` (or a
    /// system font keyword, which names no face). It sets weight and style too, to normal
    /// unless given.
    fn shorthand(&mut self, value: &str) {
        if value.contains("var(") {
            self.vars = vars(value);
            return;
        }
        let words: Vec<&str> = value.split_ascii_whitespace().collect();
        let (mut weight_set, mut italic_set) = (None, None);
        for (i, word) in words.iter().enumerate() {
            let lower = word.to_ascii_lowercase();
            let size = lower.split('/').next().unwrap_or("");
            if size.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                || matches!(
                    size,
                    "xx-small"
                        | "x-small"
                        | "small"
                        | "medium"
                        | "large"
                        | "x-large"
                        | "xx-large"
                        | "xxx-large"
                        | "smaller"
                        | "larger"
                )
            {
                // The size; then the line height if written apart, then the families.
                let mut tail = &words[i + 1..];
                if tail.first() == Some(&"/") {
                    tail = &tail[2.min(tail.len())..];
                } else if tail.first().is_some_and(|t| t.starts_with('/')) {
                    tail = &tail[1..];
                }
                self.set_families(&tail.join(" "));
                self.weight = Some(weight_set.unwrap_or(400));
                self.italic = Some(italic_set.unwrap_or(false));
                return;
            }
            if lower != "normal" {
                if let Some(italic) = style(&lower) {
                    italic_set = Some(italic);
                } else if let Some(w) = weight(&lower) {
                    weight_set = Some(w);
                }
            }
        }
    }
}

/// The strings of a value, as a browser's tokenizer reads them, end to end.
fn strings(value: &str) -> String {
    let mut p = Parser::new(value);
    let mut text = String::new();
    while let Ok(token) = p.next() {
        if let Token::QuotedString(s) = token {
            text.push_str(s);
        }
    }
    text
}

/// The custom properties a value names: `var(--a, var(--b))` gives `--a` and `--b`.
fn vars(value: &str) -> Vec<String> {
    value
        .split("var(")
        .skip(1)
        .filter_map(|rest| {
            let name: String = rest
                .trim_start()
                .chars()
                .take_while(|&c| c == '-' || c == '_' || c.is_alphanumeric())
                .collect();
            name.starts_with("--").then_some(name)
        })
        .collect()
}

/// A family list as compared.
fn families(value: &str) -> Vec<String> {
    value
        .split(',')
        .map(family)
        .filter(|f| !f.is_empty())
        .collect()
}

/// A family name as compared: unquoted, lowercase, single spaces.
fn family(name: &str) -> String {
    let name = name.trim().trim_matches(|c| c == '"' || c == '\'');
    name.split_ascii_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase()
}

/// A `font-weight` value; `bolder`/`lighter` as from normal text.
fn weight(value: &str) -> Option<u16> {
    match value.to_ascii_lowercase().as_str() {
        "normal" | "lighter" => Some(400),
        "bold" | "bolder" => Some(700),
        v => v.parse::<f32>().ok().map(|w| w.clamp(1.0, 1000.0) as u16),
    }
}

/// A `font-style` value: whether it is slanted.
fn style(value: &str) -> Option<bool> {
    let lower = value.to_ascii_lowercase();
    match lower.split_ascii_whitespace().next() {
        Some("normal") => Some(false),
        Some("italic" | "oblique") => Some(true),
        _ => None,
    }
}

/// The file a browser fetches for a `@font-face` block, with its face and `unicode-range`.
pub(super) fn face(p: &mut Parser<'_>, rule: Option<&Arc<Rule>>) -> Option<Reference> {
    let mut src = None;
    let mut range = None;
    let mut face = Face {
        family: String::new(),
        weight: (400, 400),
        italic: false,
    };
    while !p.is_exhausted() {
        let start = p.position();
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
        let text = p.slice_from(start).trim_end_matches(';');
        let Some((name, value)) = text.split_once(':') else {
            continue;
        };
        match name.trim().to_ascii_lowercase().as_str() {
            "font-family" => face.family = family(value),
            "font-style" => face.italic = style(value.trim()).unwrap_or(false),
            "font-weight" => {
                let ws: Vec<u16> = value.split_ascii_whitespace().filter_map(weight).collect();
                if let (Some(&lo), Some(&hi)) = (ws.first(), ws.last()) {
                    face.weight = (lo.min(hi), lo.max(hi));
                }
            }
            _ => {}
        }
    }
    src.map(|url| Reference {
        unicode_range: range,
        face: Some(face),
        ..Reference::new(url, false, rule)
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
