//! Which `@font-face` files a page's text uses: those of a family a matched rule's
//! `font-family` (or `font`) names, the face of that family a browser picks for each weight and
//! style the page draws text in.
//!
//! Weights and styles are the page's as a whole, not per element: normal text, bold where a
//! matched rule asks for it or the page has an element bold by default (`b`, `strong`,
//! `h1`-`h6`, `th`), italic likewise (`em`, `i`, `cite`, `var`, `dfn`, `address`). A family
//! named through `var(--name)` is any value a matched rule gives `--name` (followed through
//! `var()`s in turn); a custom property no matched rule sets may be any family: every face of
//! the page's stylesheets is kept then.

use crate::css::{Face, FontUse};
use scraper::{ElementRef, Html};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What a page's matched rules ask of fonts.
#[derive(Debug, Default)]
pub struct FontsUsed {
    families: HashSet<String>,
    /// No DOM to match against: any family.
    any_family: bool,
    /// Custom properties font declarations take their families from.
    vars: HashSet<String>,
    /// Each custom property's values in matched rules.
    custom: HashMap<String, Vec<String>>,
    weights: BTreeSet<u16>,
    italic: bool,
}

impl FontsUsed {
    /// Normal text, and the bold and italic elements of `tree`.
    pub fn new(tree: Option<&Html>) -> FontsUsed {
        let mut used = FontsUsed {
            weights: BTreeSet::from([400]),
            ..FontsUsed::default()
        };
        let Some(tree) = tree else {
            used.any_family = true;
            return used;
        };
        for e in tree
            .root_element()
            .descendants()
            .filter_map(ElementRef::wrap)
        {
            match e.value().name() {
                "b" | "strong" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => {
                    used.weights.insert(700);
                }
                "em" | "i" | "cite" | "var" | "dfn" | "address" => used.italic = true,
                _ => {}
            }
        }
        used
    }

    /// A matched rule's font.
    pub fn add(&mut self, font: &FontUse) {
        self.families.extend(font.families.iter().cloned());
        self.vars.extend(font.vars.iter().cloned());
        for (name, value) in &font.custom {
            self.custom
                .entry(name.clone())
                .or_default()
                .push(value.clone());
        }
        self.weights.extend(font.weight);
        self.italic |= font.italic == Some(true);
    }

    /// Whether the page's text uses `face`, one of `faces` (all the faces its stylesheets
    /// declare).
    pub fn uses(&self, face: &Face, faces: &[&Face]) -> bool {
        if !self.any_family && !self.names(&face.family) {
            return false;
        }
        let family: Vec<&Face> = faces
            .iter()
            .copied()
            .filter(|f| f.family == face.family)
            .collect();
        let styles: &[bool] = if self.italic {
            &[false, true]
        } else {
            &[false]
        };
        self.weights.iter().any(|&weight| {
            styles
                .iter()
                .any(|&italic| picked(&family, weight, italic, face))
        })
    }
}

impl FontsUsed {
    /// Whether the matched rules name `family`, directly or through custom properties.
    fn names(&self, family: &str) -> bool {
        if self.families.contains(family) {
            return true;
        }
        let mut seen = HashSet::new();
        let mut todo: Vec<String> = self.vars.iter().cloned().collect();
        while let Some(var) = todo.pop() {
            if !seen.insert(var.clone()) {
                continue;
            }
            let Some(values) = self.custom.get(&var) else {
                return true; // set by no matched rule (a script may set it): any family
            };
            for value in values {
                let mut nested = FontUse::default();
                nested.declaration(&format!("font-family: {value}"));
                if nested.families.iter().any(|f| f == family) {
                    return true;
                }
                todo.extend(nested.vars);
            }
        }
        false
    }
}

/// Whether `face` is one a browser picks of a family's for text of `weight` and style (CSS
/// Fonts font matching: the style first, then the nearest weight in the direction the spec
/// prefers). Faces alike but for their `unicode-range` are all picked: each serves its
/// characters.
fn picked(family: &[&Face], weight: u16, italic: bool, face: &Face) -> bool {
    let styled = family.iter().any(|f| f.italic == italic);
    if styled && face.italic != italic {
        return false;
    }
    let nearest = family
        .iter()
        .filter(|f| !styled || f.italic == italic)
        .map(|f| weight_distance(weight, f.weight))
        .min();
    nearest == Some(weight_distance(weight, face.weight))
}

/// How far a face of weights `lo..=hi` is from `want`, as the spec orders candidates: for
/// 400-500 first heavier up to 500, then lighter, then heavier; below 400 lighter first; above
/// 500 heavier first.
fn weight_distance(want: u16, (lo, hi): (u16, u16)) -> (u8, u16) {
    if (lo..=hi).contains(&want) {
        return (0, 0);
    }
    let lighter = want.saturating_sub(hi);
    let heavier = lo.saturating_sub(want);
    let below = hi < want;
    match want {
        400..=500 if !below && lo <= 500 => (1, heavier),
        400..=500 if below => (2, lighter),
        400..=500 => (3, heavier),
        0..=399 if below => (1, lighter),
        0..=399 => (2, heavier),
        _ if !below => (1, heavier),
        _ => (2, lighter),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn face(family: &str, weight: u16, italic: bool) -> Face {
        Face {
            family: family.into(),
            weight: (weight, weight),
            italic,
        }
    }

    #[test]
    fn a_face_is_used_when_a_matched_rule_names_its_family() {
        let tree = Html::parse_document("<p>plain text</p>");
        let mut used = FontsUsed::new(Some(&tree));
        let (body, bold, italic, other) = (
            face("body", 400, false),
            face("body", 700, false),
            face("body", 400, true),
            face("brands", 400, false),
        );
        let all = [&body, &bold, &italic, &other];
        assert!(!used.uses(&body, &all), "no rule names it yet");
        used.add(&FontUse {
            families: vec!["body".into(), "sans-serif".into()],
            ..FontUse::default()
        });
        assert!(used.uses(&body, &all));
        assert!(!used.uses(&bold, &all));
        assert!(!used.uses(&italic, &all));
        assert!(!used.uses(&other, &all));
        used.add(&FontUse {
            weight: Some(700),
            ..FontUse::default()
        });
        assert!(used.uses(&bold, &all));
    }

    #[test]
    fn a_family_named_through_custom_properties() {
        let tree = Html::parse_document("<p>plain text</p>");
        let mut used = FontsUsed::new(Some(&tree));
        let font = |decls: &[&str]| {
            let mut f = FontUse::default();
            for d in decls {
                f.declaration(d);
            }
            f
        };
        used.add(&font(&[
            "--serif: 'Source Serif 4', serif",
            "--code: var(--mono)",
        ]));
        used.add(&font(&["--mono: \"Fira Mono\""]));
        used.add(&font(&["font: 1rem/1.5 var(--serif)"]));
        let (serif, mono, sans) = (
            face("source serif 4", 400, false),
            face("fira mono", 400, false),
            face("fira sans", 400, false),
        );
        let all = [&serif, &mono, &sans];
        assert!(used.uses(&serif, &all));
        assert!(!used.uses(&mono, &all), "--code is set but no font uses it");
        used.add(&font(&["font-family: var(--code)"]));
        assert!(used.uses(&mono, &all));
        assert!(!used.uses(&sans, &all));
        // A custom property no matched rule sets: any family.
        used.add(&font(&["font-family: var(--set-by-script)"]));
        assert!(used.uses(&sans, &all));
    }

    #[test]
    fn default_bold_and_italic_elements_and_the_nearest_face() {
        let tree = Html::parse_document("<h1>t</h1><p><em>e</em></p>");
        let mut used = FontsUsed::new(Some(&tree));
        used.add(&FontUse {
            families: vec!["f".into()],
            ..FontUse::default()
        });
        // Only a light and a semibold upright face: normal text takes the light one (lighter
        // first below 500 when nothing heavier up to 500), bold the semibold, italic the
        // upright ones (no italic face).
        let (light, semibold) = (face("f", 300, false), face("f", 600, false));
        let all = [&light, &semibold];
        assert!(used.uses(&light, &all));
        assert!(used.uses(&semibold, &all));
        let variable = Face {
            family: "f".into(),
            weight: (100, 900),
            italic: false,
        };
        let italic = face("f", 400, true);
        assert!(used.uses(&variable, &[&variable, &italic]));
        assert!(used.uses(&italic, &[&variable, &italic]));
        assert_eq!(weight_distance(400, (500, 500)), (1, 100));
        assert_eq!(weight_distance(400, (300, 300)), (2, 100));
        assert_eq!(weight_distance(700, (900, 900)), (1, 200));
    }
}
