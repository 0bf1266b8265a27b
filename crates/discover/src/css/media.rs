//! `@media` and `@supports` conditions as a current desktop browser answers them.
//!
//! Media: the `screen` (and `all`) type, never `print` or another; `width`/`height` (and their
//! `min-`/`max-` forms, the range syntax, `device-` ones alike) against the viewport,
//! `orientation`, `aspect-ratio`, `resolution` and device pixel ratio 1, `prefers-color-scheme`
//! light unless dark is asked for, and a mouse-driven, colour, motion-allowed screen for
//! `hover`, `pointer`, `color`, `monochrome`, `prefers-reduced-motion` and the like. A feature
//! not known here counts as true (its rules' files are kept rather than lost).
//!
//! Supports: a declaration is supported unless its property has a prefix only other engines
//! have (`-moz-`, `-ms-`, `-o-`); `selector()`, `font-format()` and `font-tech()` are.

/// What a page is shown on.
#[derive(Debug, Clone, PartialEq)]
pub struct Env {
    /// The viewport, CSS px.
    pub width: f64,
    /// The viewport's height, CSS px.
    pub height: f64,
    /// `prefers-color-scheme: dark`.
    pub dark: bool,
}

impl Default for Env {
    fn default() -> Env {
        Env {
            width: 1280.0,
            height: 800.0,
            dark: false,
        }
    }
}

/// A condition's parts: words, `( ... )` groups, and `name( ... )` functions.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Word(String),
    Group(String),
    Function(String, String),
}

fn parts(text: &str) -> Vec<Part> {
    let mut out = Vec::new();
    let mut chars = text.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        if c == '(' {
            out.push(Part::Group(group(text, &mut chars)));
            continue;
        }
        let mut end = text.len();
        while let Some(&(j, c)) = chars.peek() {
            if c.is_whitespace() || c == '(' {
                end = j;
                break;
            }
            chars.next();
        }
        let word = text[i..end].to_ascii_lowercase();
        if chars.peek().is_some_and(|&(_, c)| c == '(') && end > i {
            out.push(Part::Function(word, group(text, &mut chars)));
        } else if end > i {
            out.push(Part::Word(word));
        }
    }
    out
}

/// The inside of the parenthesized group the iterator is at (the `(` and its `)` consumed).
fn group(text: &str, chars: &mut std::iter::Peekable<std::str::CharIndices<'_>>) -> String {
    let (start, _) = chars.next().unwrap_or((text.len(), '('));
    let mut depth = 1;
    for (j, c) in chars.by_ref() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return text[start + 1..j].to_owned();
                }
            }
            _ => {}
        }
    }
    text[(start + 1).min(text.len())..].to_owned()
}

/// `not X`, `X and Y and ...`, `X or Y or ...`; each X a group or function, `leaf` for the
/// innermost ones.
/// Conditions nested deeper than this (a hostile stylesheet's) count as true: their rules kept.
const MAX_NESTING: u32 = 32;

fn condition(parts: &[Part], leaf: &dyn Fn(&Part) -> bool, depth: u32) -> bool {
    if depth > MAX_NESTING {
        return true;
    }
    if let [Part::Word(not), rest @ ..] = parts {
        if not == "not" {
            return !condition(rest, leaf, depth + 1);
        }
    }
    let mut result: Option<bool> = None;
    let mut or = false;
    for part in parts {
        match part {
            Part::Word(w) if w == "and" => or = false,
            Part::Word(w) if w == "or" => or = true,
            Part::Word(_) => return false, // not a condition
            _ => {
                let value = in_parens(part, leaf, depth);
                result = Some(match result {
                    None => value,
                    Some(r) if or => r || value,
                    Some(r) => r && value,
                });
            }
        }
    }
    result.unwrap_or(false)
}

fn in_parens(part: &Part, leaf: &dyn Fn(&Part) -> bool, depth: u32) -> bool {
    if let Part::Group(inner) = part {
        let inside = parts(inner);
        let nested = matches!(inside.first(), Some(Part::Group(_)))
            || matches!(inside.first(), Some(Part::Word(w)) if w == "not");
        if nested {
            return condition(&inside, leaf, depth + 1);
        }
    }
    leaf(part)
}

/// Whether a media query list (`@media`'s prelude, a `media` attribute) applies at `env`.
/// An empty list applies.
pub fn matches(list: &str, env: &Env) -> bool {
    if list.trim().is_empty() {
        return true;
    }
    split_commas(list).iter().any(|q| query(q, env))
}

fn split_commas(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out
}

fn query(q: &str, env: &Env) -> bool {
    let parts = parts(q);
    let leaf = |p: &Part| feature(p, env);
    let mut rest = &parts[..];
    let mut negate = false;
    if let [Part::Word(w), Part::Word(_), ..] = rest {
        if w == "not" || w == "only" {
            negate = w == "not";
            rest = &rest[1..];
        }
    }
    match rest {
        [Part::Word(w), tail @ ..] if w != "not" => {
            let typed = matches!(w.as_str(), "all" | "screen");
            let result = match tail {
                [] => typed,
                [Part::Word(and), cond @ ..] if and == "and" => typed && condition(cond, &leaf, 0),
                _ => false,
            };
            result != negate
        }
        _ => condition(rest, &leaf, 0),
    }
}

/// A length in CSS px (`em`/`rem` at the default 16 px).
fn length(value: &str) -> Option<f64> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(v.len());
    let number: f64 = v[..split].parse().ok()?;
    match &v[split..] {
        "px" | "" => Some(number),
        "em" | "rem" => Some(number * 16.0),
        "pt" => Some(number * 96.0 / 72.0),
        "cm" => Some(number * 96.0 / 2.54),
        "mm" => Some(number * 96.0 / 25.4),
        "in" => Some(number * 96.0),
        _ => None,
    }
}

/// A resolution in dppx.
fn resolution(value: &str) -> Option<f64> {
    let v = value.trim();
    let split = v
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(v.len());
    let number: f64 = v[..split].parse().ok()?;
    match &v[split..] {
        "dppx" | "x" | "" => Some(number),
        "dpi" => Some(number / 96.0),
        "dpcm" => Some(number * 2.54 / 96.0),
        _ => None,
    }
}

fn ratio(value: &str) -> Option<f64> {
    let (a, b) = value.split_once('/').unwrap_or((value, "1"));
    Some(a.trim().parse::<f64>().ok()? / b.trim().parse::<f64>().ok()?)
}

/// A media feature: `(name)`, `(name: value)` or a range `(a <= name < b)`.
fn feature(part: &Part, env: &Env) -> bool {
    let Part::Group(inner) = part else {
        return false;
    };
    let inner = inner.trim().to_ascii_lowercase();
    if inner.contains(['<', '>', '=']) {
        return range(&inner, env);
    }
    let (name, value) = match inner.split_once(':') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (inner.as_str(), None),
    };
    let name = name.strip_prefix("-webkit-").unwrap_or(name);
    let (bound, base) = if let Some(b) = name.strip_prefix("min-") {
        (Some(true), b)
    } else if let Some(b) = name.strip_prefix("max-") {
        (Some(false), b)
    } else {
        (None, name)
    };
    let base = base.strip_prefix("-moz-").unwrap_or(base);
    let base = base.strip_prefix("device-").unwrap_or(base);
    let compare = |actual: f64, wanted: Option<f64>| match (wanted, bound) {
        (None, _) => false,
        (Some(w), Some(true)) => actual >= w,
        (Some(w), Some(false)) => actual <= w,
        (Some(w), None) => (actual - w).abs() < 1e-9,
    };
    let Some(value) = value else {
        // A boolean feature: whether it is non-zero / not "none".
        return !matches!(
            base,
            "monochrome" | "grid" | "inverted-colors" | "forced-colors"
        );
    };
    match base {
        "width" => compare(env.width, length(value)),
        "height" => compare(env.height, length(value)),
        "aspect-ratio" => compare(env.width / env.height, ratio(value)),
        "resolution" | "pixel-ratio" => compare(1.0, resolution(value)),
        "color" => compare(8.0, value.parse().ok()),
        "monochrome" => compare(0.0, value.parse().ok()),
        "orientation" => {
            value
                == if env.height >= env.width {
                    "portrait"
                } else {
                    "landscape"
                }
        }
        "prefers-color-scheme" => value == if env.dark { "dark" } else { "light" },
        "prefers-reduced-motion"
        | "prefers-reduced-transparency"
        | "prefers-contrast"
        | "prefers-reduced-data" => value == "no-preference",
        "forced-colors" | "inverted-colors" => value == "none",
        "hover" | "any-hover" => value == "hover",
        "pointer" | "any-pointer" => value == "fine",
        "scripting" => value == "enabled",
        "display-mode" => value == "browser",
        "update" => value == "fast",
        "color-gamut" => value == "srgb",
        "dynamic-range" | "video-dynamic-range" => value == "standard",
        "grid" => value == "0",
        _ => true,
    }
}

/// The range syntax: `(width >= 600px)`, `(400px < width <= 700px)`.
fn range(inner: &str, env: &Env) -> bool {
    let mut operands = Vec::new();
    let mut ops = Vec::new();
    let mut rest = inner;
    while let Some(i) = rest.find(['<', '>', '=']) {
        operands.push(rest[..i].trim());
        let len = if rest[i + 1..].starts_with('=') { 2 } else { 1 };
        ops.push(&rest[i..i + len]);
        rest = &rest[i + len..];
    }
    operands.push(rest.trim());
    let value = |s: &str| -> Option<f64> {
        match s {
            "width" | "device-width" => Some(env.width),
            "height" | "device-height" => Some(env.height),
            "aspect-ratio" => Some(env.width / env.height),
            "resolution" => Some(1.0),
            _ => length(s).or_else(|| resolution(s)).or_else(|| ratio(s)),
        }
    };
    let mut values = Vec::new();
    for o in &operands {
        match value(o) {
            Some(v) => values.push(v),
            None => return true, // a feature not known here
        }
    }
    ops.iter().enumerate().all(|(i, op)| {
        let (a, b) = (values[i], values[i + 1]);
        match *op {
            "<" => a < b,
            "<=" => a <= b,
            ">" => a > b,
            ">=" => a >= b,
            _ => (a - b).abs() < 1e-9,
        }
    })
}

/// Whether an `@supports` condition holds in a current browser.
pub fn supports(text: &str) -> bool {
    let leaf = |part: &Part| match part {
        Part::Group(decl) => match decl.split_once(':') {
            Some((property, _)) => {
                let property = property.trim().to_ascii_lowercase();
                !["-moz-", "-ms-", "-o-"]
                    .iter()
                    .any(|p| property.starts_with(p))
            }
            None => false,
        },
        Part::Function(name, _) => {
            matches!(name.as_str(), "selector" | "font-format" | "font-tech")
        }
        Part::Word(_) => false,
    };
    condition(&parts(text), &leaf, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(width: f64) -> Env {
        Env {
            width,
            ..Env::default()
        }
    }

    #[test]
    fn media_types_and_widths() {
        let env = at(800.0);
        assert!(matches("", &env));
        assert!(matches("screen", &env));
        assert!(matches("all and (min-width: 600px)", &env));
        assert!(!matches("print", &env));
        assert!(matches("print, screen", &env));
        assert!(!matches("only screen and (min-width: 1200px)", &env));
        assert!(matches("(max-width: 50em)", &env));
        assert!(!matches("(max-width: 40em)", &env));
        assert!(matches("not print", &env));
        assert!(!matches("not screen and (min-width: 100px)", &env));
        assert!(matches("(min-width: 600px) and (max-width: 900px)", &env));
        assert!(!matches("(min-width: 900px) and (max-width: 1200px)", &env));
        assert!(matches(
            "(min-width: 900px) or (orientation: portrait)",
            &env
        ));
        assert!(matches("not (min-width: 900px)", &env));
        assert!(matches("(width >= 600px)", &env));
        assert!(!matches("(400px <= width < 700px)", &env));
        assert!(matches("((min-width: 1px) and (hover))", &env));
    }

    #[test]
    fn media_features_of_a_desktop_screen() {
        let light = at(1280.0);
        let dark = Env {
            dark: true,
            ..light.clone()
        };
        assert!(matches("(prefers-color-scheme: light)", &light));
        assert!(!matches("(prefers-color-scheme: dark)", &light));
        assert!(matches("(prefers-color-scheme: dark)", &dark));
        assert!(!matches("(orientation: portrait)", &light));
        assert!(!matches("(min-resolution: 2dppx)", &light));
        assert!(!matches("(-webkit-min-device-pixel-ratio: 1.5)", &light));
        assert!(matches("(min-resolution: 96dpi)", &light));
        assert!(matches("(hover: hover) and (pointer: fine)", &light));
        assert!(!matches("(prefers-reduced-motion: reduce)", &light));
        assert!(matches("(some-future-feature: 3)", &light));
    }

    #[test]
    fn hostile_nesting_ends_quietly() {
        let deep = "(".repeat(100_000) + "min-width: 1px" + &")".repeat(100_000);
        assert!(matches(&deep, &Env::default()));
        assert!(supports(&deep));
        // Cut at a depth: which answer is a matter of parity, but it comes (no stack overflow).
        let nots = "not ".repeat(100_000) + "(display: grid)";
        let _ = supports(&nots);
    }

    #[test]
    fn supports_as_a_current_browser() {
        assert!(supports("(display: grid)"));
        assert!(supports("not (-moz-appearance: none)"));
        assert!(!supports("(-ms-ime-align: auto)"));
        assert!(!supports(
            "(display: grid) and (not (display: inline-grid))"
        ));
        assert!(supports("(-ms-grid-row: 1) or (display: grid)"));
        assert!(supports("selector(:has(a))"));
    }

    #[test]
    fn odd_media_and_supports_end_quietly() {
        // The texts that end selectors quietly (rules.rs) end media queries quietly too.
        let env = Env::default();
        for text in [
            "",
            ":",
            "::",
            "a:",
            "p::(",
            "p:not(",
            "[",
            "]]",
            "é.é::after:hover",
            "💥:link",
            ">",
            "p >",
            "::part(",
            "*|*",
            "a::before::after",
        ] {
            let _ = matches(text, &env);
            let _ = matches(&format!("({text}:)"), &env);
            let _ = supports(text);
        }
    }
}
