//! Which of a stylesheet's rules apply to a page: a rule's `url()`s are requested, and the
//! fonts it names used, only when its selector list matches an element of the page's DOM (as
//! html5ever built it), matched by scraper's engine (servo's `selectors` crate).
//!
//! What a browser cannot know at load is decided thus: a pseudo-element (`::before`,
//! `::after`, `::marker`, `:first-line`...) matches with its element; a selector that needs a
//! user's action or history (`:hover`, `:focus`, `:active`, `:visited`, `:target`...) matches
//! nothing; `:link` and `:any-link` are `a`/`area` with an `href`. A selector list scraper
//! cannot parse (other pseudo-classes, such as `:checked`) is kept as if it matched.

use ego_tree::NodeId;
use scraper::{ElementRef, Html, Node, Selector};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// A style rule's selector list, parsed once per stylesheet.
#[derive(Debug)]
pub struct Rule {
    /// As written.
    pub text: String,
    /// The list as matching reads it.
    pub selector: Parsed,
}

/// A selector's weight in the cascade: ids, classes (attributes, pseudo-classes), types.
pub type Specificity = (u32, u32, u32);

/// The boxes a rule's font may style apart from its element's text: the generated content
/// before and after it (`::before`, `::after`, and their one-colon forms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pseudo {
    /// `::before` (or `:before`): drawn before the element's own content.
    Before,
    /// `::after` (or `:after`): drawn after the element's own content.
    After,
}

/// A rule's selector list, ready to match: its selectors, or why it has none to match with.
#[derive(Debug)]
pub enum Parsed {
    /// Each selector of the list, with its specificity and the box it styles (`None`: the
    /// element itself; other pseudo-elements count as the element).
    Selectors(Vec<(Selector, Specificity, Option<Pseudo>)>),
    /// Every selector of the list needs a user's action: nothing matches at load.
    Never,
    /// scraper cannot parse it: kept as if it matched.
    Unknown,
}

impl PartialEq for Rule {
    fn eq(&self, other: &Rule) -> bool {
        self.text == other.text
    }
}

/// Pseudo-classes of a user's action or history.
const DYNAMIC: &[&str] = &[
    "hover",
    "focus",
    "focus-within",
    "focus-visible",
    "active",
    "visited",
    "target",
    "target-within",
    "user-invalid",
    "user-valid",
];

/// The legacy pseudo-elements written with one colon.
const LEGACY_PSEUDO_ELEMENTS: &[&str] = &["before", "after", "first-line", "first-letter"];

impl Rule {
    /// The rule of the selector list `selectors` (the prelude of a style rule): each selector
    /// with its pseudo-elements taken off, those of a user's action or history dropped
    /// (`Never` when none is left), `Unknown` when scraper cannot parse one or the nesting is
    /// too deep to try.
    pub fn new(selectors: &str) -> Rule {
        let text = selectors.trim().to_owned();
        let kept: Vec<(String, Option<Pseudo>)> = split_top_level(&text)
            .into_iter()
            .filter_map(|s| without_pseudo_elements(s.trim()))
            .collect();
        let selector = if kept.is_empty() {
            Parsed::Never
        } else if too_deep(&text) {
            Parsed::Unknown
        } else {
            let parsed: Result<Vec<_>, _> = kept
                .iter()
                .map(|(s, pseudo)| Selector::parse(s).map(|p| (p, specificity(s), *pseudo)))
                .collect();
            match parsed {
                Ok(list) => Parsed::Selectors(list),
                Err(_) => Parsed::Unknown,
            }
        };
        Rule { text, selector }
    }

    /// The specificity the rule applies to `element` with (its highest matching selector's),
    /// or `None` if it does not match it. A rule flint cannot match matches nothing here.
    pub fn matches(&self, element: &ElementRef<'_>) -> Option<Specificity> {
        let Parsed::Selectors(list) = &self.selector else {
            return None;
        };
        list.iter()
            .filter(|(s, _, _)| s.matches(element))
            .map(|&(_, spec, _)| spec)
            .max()
    }

    /// As [`Rule::matches`], of the selectors that style `pseudo` of `element` (`None`: the
    /// element's own text), for the fonts: a `::before`'s font is not its element's.
    pub fn matches_box(
        &self,
        element: &ElementRef<'_>,
        pseudo: Option<Pseudo>,
    ) -> Option<Specificity> {
        let Parsed::Selectors(list) = &self.selector else {
            return None;
        };
        list.iter()
            .filter(|(s, _, p)| *p == pseudo && s.matches(element))
            .map(|&(_, spec, _)| spec)
            .max()
    }
}

/// A selector's specificity, counted from its text (`:where()` counted as `:is()`).
fn specificity(selector: &str) -> Specificity {
    let (mut ids, mut classes, mut types) = (0, 0, 0);
    let mut prev = ' ';
    let mut chars = selector.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '#' => ids += 1,
            '.' | '[' => classes += 1,
            ':' if chars.peek() != Some(&':') && prev != ':' => {
                let name: String = chars.clone().take_while(|&c| is_ident(c)).collect();
                if !matches!(name.as_str(), "not" | "is" | "where" | "has") {
                    classes += 1;
                }
            }
            c if c.is_alphabetic() && matches!(prev, ' ' | '>' | '+' | '~' | '(' | ',') => {
                types += 1
            }
            _ => {}
        }
        if c == '[' {
            // An attribute selector's inside is not counted.
            for c in chars.by_ref() {
                if c == ']' {
                    break;
                }
            }
        }
        prev = if is_ident(c) && !matches!(prev, ' ' | '>' | '+' | '~' | '(' | ',') {
            'x'
        } else {
            c
        };
    }
    (ids, classes, types)
}

/// Selectors nested deeper than this (`:is(:is(...))`, a hostile stylesheet's) are not given to
/// the selector parser, which recurses: their rule is kept as one flint cannot match.
const MAX_NESTING: i32 = 32;

fn too_deep(text: &str) -> bool {
    let mut depth = 0;
    text.chars().any(|c| {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            _ => {}
        }
        depth > MAX_NESTING
    })
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in text.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
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

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '-' || c == '_' || !c.is_ascii()
}

/// One selector with its pseudo-elements taken off (they match with their element), `:link`
/// made `a`/`area` with an `href`, and the box it styles when that is a `::before` or
/// `::after`; `None` if it names a user's action or history.
fn without_pseudo_elements(selector: &str) -> Option<(String, Option<Pseudo>)> {
    let mut out = String::with_capacity(selector.len());
    let mut pseudo = None;
    let mut rest = selector;
    while let Some(i) = rest.find(':') {
        out.push_str(&rest[..i]);
        let double = rest[i + 1..].starts_with(':');
        let name_start = i + if double { 2 } else { 1 };
        let name_len = rest[name_start..]
            .find(|c| !is_ident(c))
            .unwrap_or(rest.len() - name_start);
        let name = rest[name_start..name_start + name_len].to_ascii_lowercase();
        let mut end = name_start + name_len;
        if double || LEGACY_PSEUDO_ELEMENTS.contains(&name.as_str()) {
            // Dropped, with its argument if any (`::part(x)`, `::highlight(x)`).
            match name.as_str() {
                "before" => pseudo = Some(Pseudo::Before),
                "after" => pseudo = Some(Pseudo::After),
                _ => {}
            }
            if rest[end..].starts_with('(') {
                end += rest[end..].find(')').map_or(rest.len() - end, |j| j + 1);
            }
        } else if DYNAMIC.contains(&name.as_str()) {
            return None;
        } else if name == "link" || name == "any-link" {
            out.push_str(":is(a, area)[href]");
        } else {
            out.push_str(&rest[i..end]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    // A selector that was only a pseudo-element (`::selection`) is any element.
    if out.trim().is_empty() || out.ends_with([' ', '>', '+', '~']) {
        out.push('*');
    }
    Some((out, pseudo))
}

/// A page's DOM, asked which rules match it (each rule once).
pub struct Matcher<'t> {
    tree: Option<&'t Html>,
    /// Each rule's answer, the rule held so that its address is not another's while the page
    /// lasts.
    seen: HashMap<*const Rule, (Arc<Rule>, bool)>,
}

impl<'t> Matcher<'t> {
    /// `None`: no DOM, every rule matches.
    pub fn new(tree: Option<&'t Html>) -> Matcher<'t> {
        Matcher {
            tree,
            seen: HashMap::new(),
        }
    }

    /// The page's DOM.
    pub fn tree(&self) -> Option<&'t Html> {
        self.tree
    }

    /// Whether a reference of `rule` applies to the page (no rule: it does).
    pub fn applies(&mut self, rule: Option<&Arc<Rule>>) -> bool {
        let Some(rule) = rule else { return true };
        let Some(tree) = self.tree else { return true };
        self.seen
            .entry(Arc::as_ptr(rule))
            .or_insert_with(|| {
                let matched = match &rule.selector {
                    Parsed::Selectors(_) => tree
                        .root_element()
                        .descendants()
                        .filter_map(ElementRef::wrap)
                        .any(|e| rule.matches(&e).is_some() && !in_template(&e)),
                    Parsed::Never => false,
                    Parsed::Unknown => true,
                };
                (rule.clone(), matched)
            })
            .1
    }
}

impl Matcher<'_> {
    /// Whether `rule` (one that [`Matcher::applies`]) matches an element no `display: none`
    /// hides: `hidden` holds the elements hidden with all they hold.
    pub fn applies_shown(&mut self, rule: Option<&Arc<Rule>>, hidden: &HashSet<NodeId>) -> bool {
        if !self.applies(rule) {
            return false;
        }
        let (Some(rule), Some(tree)) = (rule, self.tree) else {
            return true;
        };
        if hidden.is_empty() || !matches!(rule.selector, Parsed::Selectors(_)) {
            return true;
        }
        tree.root_element()
            .descendants()
            .filter_map(ElementRef::wrap)
            .filter(|e| rule.matches(e).is_some() && !in_template(e))
            .any(|e| !hidden.contains(&e.id()) && !e.ancestors().any(|a| hidden.contains(&a.id())))
    }
}

/// Whether an element is a `<template>`'s inert content.
fn in_template(e: &ElementRef<'_>) -> bool {
    e.ancestors().any(|a| matches!(a.value(), Node::Fragment))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matching(html: &str, selectors: &[&str]) -> Vec<bool> {
        let tree = Html::parse_document(html);
        let mut m = Matcher::new(Some(&tree));
        selectors
            .iter()
            .map(|s| m.applies(Some(&Arc::new(Rule::new(s)))))
            .collect()
    }

    #[test]
    fn a_rule_applies_when_its_selector_matches_an_element() {
        let html = r#"<ul class="menu"><li><a href="/x">x</a></li></ul>
            <div id="main"><p class="note">n</p></div><template><p class="tpl"></p></template>"#;
        assert_eq!(
            matching(
                html,
                &[
                    "ul.menu li",
                    "ul.search li",
                    ".nothing, #main > p.note",
                    "div p + p",
                    "p.tpl",
                    "li:first-child a[href^='/']",
                    ":not(.menu) > li",
                ]
            ),
            [true, false, true, false, false, true, false]
        );
    }

    #[test]
    fn pseudo_elements_match_their_element_and_dynamic_states_nothing() {
        let html = r#"<a href="/x">x</a><p>p</p>"#;
        assert_eq!(
            matching(
                html,
                &[
                    "p::before",
                    "p:after",
                    "a::after, q",
                    "::selection",
                    "a:hover",
                    "a:focus, p:active",
                    "a:visited::after",
                    "a:link",
                    "p:link",
                    "h2::before",
                ]
            ),
            [true, true, true, true, false, false, false, true, false, false]
        );
    }

    #[test]
    fn specificity_as_the_cascade_counts_it() {
        assert_eq!(specificity("p"), (0, 0, 1));
        assert_eq!(specificity("ul.menu li"), (0, 1, 2));
        assert_eq!(specificity("#main > p.note:first-child"), (1, 2, 1));
        assert_eq!(specificity("a[href^='/x.y']"), (0, 1, 1));
        assert_eq!(specificity(":not(.x) h1"), (0, 1, 1));
        let rule = Rule::new(".docblock h1, h1");
        let tree = Html::parse_document("<div class=docblock><h1>a</h1></div><h1>b</h1>");
        let h1s: Vec<_> = tree
            .root_element()
            .descendants()
            .filter_map(ElementRef::wrap)
            .filter(|e| e.value().name() == "h1")
            .map(|e| rule.matches(&e))
            .collect();
        assert_eq!(h1s, [Some((0, 1, 1)), Some((0, 0, 1))]);
    }

    #[test]
    fn odd_selectors_end_quietly() {
        let tree = Html::parse_document("<p class=é>ü</p>");
        let mut m = Matcher::new(Some(&tree));
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
            let _ = m.applies(Some(&Arc::new(Rule::new(text))));
            let _ = specificity(text);
        }
        let deep = ":is(".repeat(50_000) + "p" + &")".repeat(50_000);
        let rule = Rule::new(&deep);
        assert!(matches!(rule.selector, Parsed::Unknown));
    }

    #[test]
    fn a_selector_scraper_cannot_parse_is_kept() {
        let rule = Rule::new("input:checked + label");
        assert!(matches!(rule.selector, Parsed::Unknown));
        assert_eq!(matching("<p>", &["input:checked + label"]), [true]);
    }
}
