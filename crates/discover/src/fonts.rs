//! Which `@font-face` files a page's text uses: the faces a browser picks for the family,
//! weight and style each element laid out in lines is drawn in (one with text, an inline box
//! even when empty, a block holding inline boxes: `lays_out_text`), and a `::before`'s or
//! `::after`'s when it has `content` text.
//!
//! Each element's font is cascaded from the page's matched rules that set one (`font-family`,
//! `font-weight`, `font-style`, `font`), by specificity then order, over the defaults of HTML
//! (bold `b`, `strong`, `h1`-`h6`, `th`; italic `em`, `i`, `cite`, `var`, `dfn`, `address`;
//! monospace `pre`, `code`, `kbd`, `samp`, `tt`) and what its parent has. Its family is the
//! first of its list a stylesheet declares a face for (a generic family, always there, ends the
//! search). A family named through `var(--name)` is any value a matched rule gives `--name`
//! (followed through `var()`s in turn); one no matched rule sets may be any family. A `style`
//! attribute's font counts as some element's, at normal weight and style.
//!
//! A face split in `unicode-range` subsets is fetched subset by subset for the characters drawn
//! in its family, weight and style (as Chromium does: Cyrillic text in one family does not
//! fetch another family's Cyrillic subset, and a block whose text is all Greek does not fetch
//! its family's Latin subset).

use crate::css::{Face, FontUse};
use crate::rules::Pseudo;
use ego_tree::NodeId;
use scraper::{ElementRef, Html, Node};
use std::collections::{BTreeSet, HashMap, HashSet};

/// What a page's matched rules ask of fonts.
#[derive(Debug, Default)]
pub struct FontsUsed {
    /// The matched rules' fonts, in the order they were read.
    fonts: Vec<FontUse>,
    /// Each custom property's values in matched rules.
    custom: HashMap<String, Vec<String>>,
}

/// Where an element's family list comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Family {
    /// The browser's default (a serif no stylesheet declares).
    Initial,
    Monospace,
    /// `FontsUsed::fonts[i]`'s.
    Rule(usize),
}

const GENERIC: &[&str] = &[
    "serif",
    "sans-serif",
    "monospace",
    "cursive",
    "fantasy",
    "system-ui",
    "ui-serif",
    "ui-sans-serif",
    "ui-monospace",
    "ui-rounded",
    "math",
    "emoji",
    "fangsong",
];

/// The families, weights and styles a page's text is drawn in, each with the characters drawn
/// in it.
pub struct Texts {
    /// (family as declared by a face, weight, italic) -> its characters, sorted and distinct.
    drawn: HashMap<(String, u16, bool), Vec<char>>,
    /// No DOM: any face, for any of the page's characters.
    any: Option<Vec<char>>,
    /// The elements `display: none` hides, with all they hold: their text draws nothing.
    pub hidden: HashSet<NodeId>,
}

/// A font as the cascade gives it: (family, weight, italic).
type Font = (Family, u16, bool);

impl FontsUsed {
    /// A font of a rule that matches an element of the page.
    pub fn add(&mut self, font: &FontUse) {
        for (name, value) in &font.custom {
            self.custom
                .entry(name.clone())
                .or_default()
                .push(value.clone());
        }
        if !font.families.is_empty()
            || !font.vars.is_empty()
            || font.weight.is_some()
            || font.italic.is_some()
            || font.content.is_some()
            || font.hidden.is_some()
        {
            self.fonts.push(font.clone());
        }
    }

    /// What the text of `tree` is drawn in, of the families `faces` declare; `chars` are the
    /// page's characters (what any face may draw when there is no tree).
    pub fn texts(&self, tree: Option<&Html>, faces: &[&Face], chars: &[char]) -> Texts {
        let mut texts = Texts {
            drawn: HashMap::new(),
            any: None,
            hidden: HashSet::new(),
        };
        let Some(tree) = tree else {
            texts.any = Some(chars.to_vec());
            return texts;
        };
        let declared: HashSet<&str> = faces.iter().map(|f| f.family.as_str()).collect();
        let mut seen: HashMap<Font, BTreeSet<char>> = HashMap::new();
        for (i, font) in self.fonts.iter().enumerate() {
            if font.rule.is_none() {
                // A `style` attribute's: some element's, whose text is not known here.
                seen.entry((Family::Rule(i), 400, false))
                    .or_default()
                    .extend(chars);
            }
        }
        // An explicit stack: a hostile page may nest elements deeper than the thread's stack.
        let mut stack = vec![(tree.root_element(), (Family::Initial, 400u16, false))];
        while let Some((e, inherited)) = stack.pop() {
            if self.hides(&e) {
                texts.hidden.insert(e.id());
                continue;
            }
            let own = self.cascade(&e, inherited);
            let shown = !matches!(
                e.value().name(),
                "script" | "style" | "noscript" | "template" | "title" | "head"
            );
            if shown && lays_out_text(&e) {
                let drawn = seen.entry(own).or_default();
                for child in e.children() {
                    if let Node::Text(t) = child.value() {
                        drawn.extend(t.chars().filter(|c| !c.is_whitespace()));
                    }
                }
            }
            // Generated text (an icon font's glyph): drawn in the font its own rules give it
            // over its element's.
            for pseudo in [Pseudo::Before, Pseudo::After] {
                let (font, content) = self.apply(&e, Some(pseudo), own);
                if let Some(text) = content.filter(|c| shown && !c.trim().is_empty()) {
                    seen.entry(font)
                        .or_default()
                        .extend(text.chars().filter(|c| !c.is_whitespace()));
                }
            }
            stack.extend(
                e.children()
                    .filter(|c| !matches!(c.value(), Node::Fragment))
                    .filter_map(ElementRef::wrap)
                    .map(|c| (c, own)),
            );
        }
        let mut drawn: HashMap<(String, u16, bool), BTreeSet<char>> = HashMap::new();
        for ((family, weight, italic), chars) in seen {
            let Family::Rule(i) = family else { continue };
            for list in self.lists(&self.fonts[i]) {
                let Some(list) = list else {
                    // A family no matched rule gives: any declared one.
                    for f in &declared {
                        drawn
                            .entry((f.to_string(), weight, italic))
                            .or_default()
                            .extend(&chars);
                    }
                    continue;
                };
                let first = list
                    .iter()
                    .find(|f| declared.contains(f.as_str()) || GENERIC.contains(&f.as_str()));
                if let Some(f) = first.filter(|f| declared.contains(f.as_str())) {
                    drawn
                        .entry((f.clone(), weight, italic))
                        .or_default()
                        .extend(&chars);
                }
            }
        }
        texts.drawn = drawn
            .into_iter()
            .map(|(font, chars)| (font, chars.into_iter().collect()))
            .collect();
        texts
    }

    /// Whether `display: none` hides the element: its `style` attribute's `display`, else its
    /// matched rules' (specificity, then order), else HTML's `hidden` attribute.
    fn hides(&self, e: &ElementRef<'_>) -> bool {
        let inline = e.value().attr("style").and_then(|style| {
            let mut own = FontUse::default();
            for declaration in style.split(';') {
                own.declaration(declaration);
            }
            own.hidden
        });
        if let Some(hidden) = inline {
            return hidden;
        }
        let mut matched: Vec<(_, usize)> = self
            .fonts
            .iter()
            .enumerate()
            .filter(|(_, f)| f.hidden.is_some())
            .filter_map(|(i, f)| Some((f.rule.as_ref()?.matches_box(e, None)?, i)))
            .collect();
        matched.sort_unstable();
        match matched.last() {
            Some(&(_, i)) => self.fonts[i].hidden == Some(true),
            None => e.value().attr("hidden").is_some(),
        }
    }

    /// An element's font: its parent's, HTML's defaults, then its matched rules'.
    fn cascade(&self, e: &ElementRef<'_>, inherited: Font) -> Font {
        let (mut family, mut weight, mut italic) = inherited;
        match e.value().name() {
            "b" | "strong" | "h1" | "h2" | "h3" | "h4" | "h5" | "h6" | "th" => weight = 700,
            "em" | "i" | "cite" | "var" | "dfn" | "address" => italic = true,
            "pre" | "code" | "kbd" | "samp" | "tt" => family = Family::Monospace,
            _ => {}
        }
        self.apply(e, None, (family, weight, italic)).0
    }

    /// The font the rules that style `pseudo` of `e` (`None`: its own text) give it over
    /// `font`, by specificity then order, and the text of the last `content` among them.
    fn apply(
        &self,
        e: &ElementRef<'_>,
        pseudo: Option<Pseudo>,
        font: Font,
    ) -> (Font, Option<&str>) {
        let (mut family, mut weight, mut italic) = font;
        let mut content = None;
        let mut matched: Vec<(_, usize)> = self
            .fonts
            .iter()
            .enumerate()
            .filter_map(|(i, f)| Some((f.rule.as_ref()?.matches_box(e, pseudo)?, i)))
            .collect();
        matched.sort_unstable();
        for (_, i) in matched {
            let font = &self.fonts[i];
            if !font.families.is_empty() || !font.vars.is_empty() {
                family = Family::Rule(i);
            }
            weight = font.weight.unwrap_or(weight);
            italic = font.italic.unwrap_or(italic);
            content = font.content.as_deref().or(content);
        }
        ((family, weight, italic), content)
    }

    /// A font's family lists: its own, or each a custom property it names may hold (`None`:
    /// a property no matched rule sets, any family).
    fn lists(&self, font: &FontUse) -> Vec<Option<Vec<String>>> {
        if font.vars.is_empty() {
            return vec![Some(font.families.clone())];
        }
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut todo: Vec<String> = font.vars.clone();
        while let Some(var) = todo.pop() {
            if !seen.insert(var.clone()) {
                continue;
            }
            let Some(values) = self.custom.get(&var) else {
                out.push(None);
                continue;
            };
            for value in values {
                let mut nested = FontUse::default();
                nested.declaration(&format!("font-family: {value}"));
                if nested.vars.is_empty() {
                    out.push(Some(nested.families));
                } else {
                    todo.extend(nested.vars);
                }
            }
        }
        out
    }
}

/// Elements a browser lays out inline by default (not replaced ones, such as `img`): each is a
/// box in its line, whose font sets the line's height even when it holds no text.
const INLINE: &[&str] = &[
    "a", "abbr", "b", "bdi", "bdo", "big", "cite", "code", "data", "del", "dfn", "em", "font", "i",
    "ins", "kbd", "label", "mark", "output", "q", "s", "samp", "small", "span", "strike", "strong",
    "sub", "sup", "time", "tt", "u", "var",
];

/// Whether a browser needs the element's font to lay it out (and so fetches the face): it has
/// text of its own; it is an inline box, empty or not (an empty `<em>` still has a height in
/// its line); or a block holding inline boxes (its lines start from its own font's metrics:
/// an `<h1>` whose text is all in a `<code>` still loads the heading's face).
fn lays_out_text(e: &ElementRef<'_>) -> bool {
    let inline = |e: &ElementRef<'_>| INLINE.contains(&e.value().name());
    inline(e)
        || e.children().any(|c| match c.value() {
            Node::Text(t) => !t.trim().is_empty(),
            Node::Element(_) => ElementRef::wrap(c).is_some_and(|c| inline(&c)),
            _ => false,
        })
}

impl Texts {
    /// Whether the page's text is drawn in `face`'s family, weight and style (`face` is one of
    /// `faces`, all the faces its stylesheets declare), whatever the characters.
    pub fn uses(&self, face: &Face, faces: &[&Face]) -> bool {
        self.any.is_some() || self.picking(face, faces).next().is_some()
    }

    /// Whether a browser fetches `face`: text is drawn in it and `wanted` (its
    /// `unicode-range`'s test) holds for the characters drawn in its family, weight and style.
    pub fn draws_in(&self, face: &Face, faces: &[&Face], wanted: impl Fn(&[char]) -> bool) -> bool {
        if let Some(chars) = &self.any {
            return wanted(chars);
        }
        self.picking(face, faces).any(wanted)
    }

    /// The characters of each font drawn that picks `face`.
    fn picking<'a>(
        &'a self,
        face: &'a Face,
        faces: &[&'a Face],
    ) -> impl Iterator<Item = &'a [char]> {
        let family: Vec<&Face> = faces
            .iter()
            .copied()
            .filter(|f| f.family == face.family)
            .collect();
        self.drawn
            .iter()
            .filter(move |((f, weight, italic), _)| {
                *f == face.family && picked(&family, *weight, *italic, face)
            })
            .map(|(_, chars)| chars.as_slice())
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
    use crate::css::{self, Env};
    use crate::rules::Matcher;

    /// The faces of `css` the text of `html` uses.
    fn used(html: &str, css: &str) -> Vec<String> {
        let tree = Html::parse_document(html);
        let sheet = css::parse(css, &Env::default());
        let mut matcher = Matcher::new(Some(&tree));
        let mut fonts = FontsUsed::default();
        for font in &sheet.fonts {
            if matcher.applies(font.rule.as_ref()) {
                fonts.add(font);
            }
        }
        let faces: Vec<(&str, &Face)> = sheet
            .refs
            .iter()
            .filter_map(|r| Some((r.url.as_str(), r.face.as_ref()?)))
            .collect();
        let all: Vec<&Face> = faces.iter().map(|&(_, f)| f).collect();
        let texts = fonts.texts(Some(&tree), &all, &[]);
        faces
            .iter()
            .filter(|(_, f)| texts.uses(f, &all))
            .map(|(u, _)| u.to_string())
            .collect()
    }

    const FACES: &str = r#"
        @font-face { font-family: Body; src: url(body.woff2) }
        @font-face { font-family: Body; font-weight: 700; src: url(body-bold.woff2) }
        @font-face { font-family: Body; font-style: italic; src: url(body-italic.woff2) }
        @font-face { font-family: Code; src: url(code.woff2) }
        @font-face { font-family: Code; font-style: italic; src: url(code-italic.woff2) }
        @font-face { font-family: Brands; src: url(brands.woff2) }
    "#;

    #[test]
    fn each_element_with_text_in_the_font_its_rules_give_it() {
        let css = format!(
            "{FACES} body {{ font-family: Body, serif }} code {{ font-family: Code, monospace }}
             .fa-brands {{ font-family: Brands }} h1 {{ font-weight: 400 }}"
        );
        // Normal text, an <h1> made normal weight, code: no bold, no italic code.
        assert_eq!(
            used("<h1>T</h1><p>text <code>x</code> <em>e</em></p>", &css),
            ["body.woff2", "body-italic.woff2", "code.woff2"]
        );
        // Italic code inside <em>; bold text in <strong>; an empty brands icon is a box of its
        // line all the same (Chromium fetches its face).
        assert_eq!(
            used(
                "<p>t <strong>s</strong> <em><code>x</code></em><i class=fa-brands></i></p>",
                &css
            ),
            [
                "body.woff2",
                "body-bold.woff2",
                "body-italic.woff2",
                "code-italic.woff2",
                "brands.woff2"
            ]
        );
        // A heading whose text is all in <code>: its lines need its own (bold) face; an empty
        // <em> its italic; a <div> of blocks alone, nothing (its paragraph is in Body).
        assert_eq!(
            used(
                "<div class=icons><p class=text><code>x</code></p></div><h1><code>x</code></h1>\
                 <table><tr><td> <em></em></td></tr></table>",
                &format!(
                    "{FACES} body, .text {{ font-family: Body }} code {{ font-family: Code }}
                     .icons {{ font-family: Brands }}"
                )
            ),
            [
                "body.woff2",
                "body-bold.woff2",
                "body-italic.woff2",
                "code.woff2"
            ]
        );
    }

    #[test]
    fn generated_text_is_drawn_in_its_own_font_and_styles_nothing_else() {
        // Font Awesome's way: the icon element sets the family and weight, a `::before` of its
        // class gives the glyph (no text of the element's own).
        let icons = format!(
            r#"{FACES} @font-face {{ font-family: Icons; font-weight: 900; src: url(solid.woff2) }}
            @font-face {{ font-family: Icons; src: url(regular.woff2) }}
            body {{ font-family: Body, serif }}
            .fas {{ font-family: Icons; font-weight: 900 }}
            .fa-home:before {{ content: "\f015" }}
            .brand::after {{ content: "B"; font-family: Brands }}
            .toggle::after {{ font-family: Icons; content: "" }}
            .label::before {{ font-style: italic }}"#
        );
        assert_eq!(
            used(r#"<p>t <i class="fas fa-home"></i></p>"#, &icons),
            ["body.woff2", "solid.woff2"]
        );
        // An `::after` draws in its own family; a pseudo-element's font is not its element's
        // (the label's text is not italic, the toggle's is not in Icons).
        assert_eq!(
            used(
                r#"<p class="toggle label">t <b class="brand"></b></p>"#,
                &icons
            ),
            ["body.woff2", "body-bold.woff2", "brands.woff2"]
        );
    }

    #[test]
    fn specificity_then_order_decide() {
        let css = format!(
            "{FACES} .doc p {{ font-family: Code }} p {{ font-family: Body }} div {{ font-family: Brands }}"
        );
        assert_eq!(used("<div class=doc><p>x</p></div>", &css), ["code.woff2"]);
        assert_eq!(used("<div><p>x</p></div>", &css), ["body.woff2"]);
    }

    #[test]
    fn a_family_named_through_custom_properties() {
        let css = format!(
            "{FACES} :root {{ --serif: 'Body', serif; --code: var(--mono) }}
             :root.other {{ --serif: Brands }} html {{ --mono: Code }}
             body {{ font: 1rem/1.5 var(--serif) }} pre {{ font-family: var(--code) }}"
        );
        assert_eq!(used("<p>x</p>", &css), ["body.woff2"]);
        assert_eq!(
            used("<p>x</p><pre>y</pre>", &css),
            ["body.woff2", "code.woff2"]
        );
        // A custom property no matched rule sets: any declared family (normal faces here).
        let css = format!("{FACES} p {{ font-family: var(--set-by-script) }}");
        assert_eq!(
            used("<p>x</p>", &css),
            ["body.woff2", "code.woff2", "brands.woff2"]
        );
    }

    fn face(family: &str, weight: u16, italic: bool) -> Face {
        Face {
            family: family.into(),
            weight: (weight, weight),
            italic,
        }
    }

    #[test]
    fn the_nearest_face_of_a_family() {
        // Only a light and a semibold upright face: normal text takes the light one (lighter
        // first below 500 when nothing heavier up to 500), bold the semibold, italic the
        // upright ones (no italic face).
        let (light, semibold) = (face("f", 300, false), face("f", 600, false));
        let all = [&light, &semibold];
        assert!(picked(&all, 400, false, &light));
        assert!(!picked(&all, 400, false, &semibold));
        assert!(picked(&all, 700, false, &semibold));
        assert!(picked(&all, 400, true, &light));
        let variable = Face {
            family: "f".into(),
            weight: (100, 900),
            italic: false,
        };
        let italic = face("f", 400, true);
        assert!(picked(&[&variable, &italic], 700, false, &variable));
        assert!(picked(&[&variable, &italic], 700, true, &italic));
        assert_eq!(weight_distance(400, (500, 500)), (1, 100));
        assert_eq!(weight_distance(400, (300, 300)), (2, 100));
        assert_eq!(weight_distance(700, (900, 900)), (1, 200));
    }
}
