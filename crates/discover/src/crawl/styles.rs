//! A page's stylesheets as a browser applies them: the `url()`s of rules that match the
//! page's elements, and then the font faces its text uses.

use super::{Crawl, Fetch, PageWork};
use crate::css::{self, FontUse};
use crate::fonts::FontsUsed;
use crate::rules::Parsed;
use ego_tree::NodeId;
use std::collections::{BTreeSet, HashSet};
use url::Url;

/// A stylesheet's references and fonts, its URLs resolved: what the crawl keeps of it (once,
/// whichever pages use it).
#[derive(Debug, Default)]
pub(super) struct Resolved {
    refs: Vec<(Url, css::Reference)>,
    fonts: Vec<FontUse>,
}

impl Resolved {
    /// At most `max` references are kept (a page lists no more than --max-files).
    pub(super) fn new(sheet: css::Sheet, base: &Url, max: usize) -> Resolved {
        Resolved {
            refs: sheet
                .refs
                .into_iter()
                .take(max)
                .filter_map(|r| base.join(&r.url).ok().map(|u| (u, r)))
                .collect(),
            fonts: sheet.fonts,
        }
    }
}

/// The `@font-face` files a page's stylesheets declare, what its matched rules ask of fonts,
/// and what its stylesheets' rules left out.
pub(super) struct Styles {
    faces: Vec<(Url, css::Reference)>,
    /// Matched rules' other `url()`s (backgrounds, cursors...), held until every stylesheet is
    /// read: a rule of a later one may hide their elements (`display: none`). A `style`
    /// attribute's are its element's.
    images: Vec<(Url, css::Reference, Option<NodeId>)>,
    /// `url()`s of rules that match only elements `display: none` hides, and of `style`
    /// attributes of such elements.
    hidden: u64,
    used: FontsUsed,
    /// `url()`s of rules that match no element of the page.
    left_out: u64,
    /// Faces no text of the page uses.
    faces_unused: u64,
    /// Selector lists flint cannot match whose `url()`s were kept.
    unknown: BTreeSet<String>,
    /// Keys of the stylesheets fetched whose media does not hold (none of their rules
    /// applied), unless named again for a medium that holds.
    pub(super) not_applied: HashSet<String>,
}

impl Styles {
    /// How many `url()`s are held for the end of the page (see [`Styles::held_for`]).
    pub(super) fn images_held(&self) -> usize {
        self.images.len()
    }

    /// The `url()`s held since there were `from` are `element`'s (its `style` attribute's).
    pub(super) fn held_for(&mut self, from: usize, element: NodeId) {
        for (_, _, owner) in &mut self.images[from..] {
            *owner = Some(element);
        }
    }

    pub(super) fn new() -> Styles {
        Styles {
            faces: Vec::new(),
            images: Vec::new(),
            hidden: 0,
            used: FontsUsed::default(),
            left_out: 0,
            faces_unused: 0,
            unknown: BTreeSet::new(),
            not_applied: HashSet::new(),
        }
    }

    /// The page's comments on what its stylesheets' rules left out.
    pub(super) fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.left_out > 0 {
            notes.push(format!(
                "{} stylesheet url()s not listed: their rules match no element here",
                self.left_out
            ));
        }
        if self.hidden > 0 {
            notes.push(format!(
                "{} stylesheet url()s not listed: their rules (or style attributes) style only \
                 elements display: none hides",
                self.hidden
            ));
        }
        if self.faces_unused > 0 {
            notes.push(format!(
                "{} font faces not listed: no matched rule's font-family, weight and style uses \
                 them",
                self.faces_unused
            ));
        }
        if !self.not_applied.is_empty() {
            notes.push(format!(
                "{} stylesheets for another medium (their media does not hold): fetched as a \
                 browser fetches them, none of their rules applied",
                self.not_applied.len()
            ));
        }
        if let Some(example) = self.unknown.iter().next() {
            notes.push(format!(
                "{} selector lists flint cannot match (such as `{example}`): their url()s are \
                 listed as if they matched",
                self.unknown.len()
            ));
        }
        notes
    }
}

impl Crawl<'_> {
    /// A stylesheet's part in the page: the fonts of its matched rules, and the files its
    /// matched rules and `@import`s reference (faces held until every stylesheet is read).
    /// One that does not `apply` (its media does not hold) has only its `@import`s fetched,
    /// as a browser fetches them, and they do not apply either.
    pub(super) fn follow(
        &mut self,
        sheet: &Resolved,
        applies: bool,
        import_depth: u32,
        work: &mut PageWork,
    ) {
        if !applies {
            for (url, _) in sheet.refs.iter().filter(|(_, r)| r.import) {
                let what = Fetch::Stylesheet { applies: false };
                self.import(url, what, import_depth, work);
            }
            return;
        }
        for font in &sheet.fonts {
            if work.matcher.applies(font.rule.as_ref()) {
                work.styles.used.add(font);
            }
        }
        for (url, r) in &sheet.refs {
            if !work.matcher.applies(r.rule.as_ref()) {
                work.styles.left_out += 1;
                continue;
            }
            if let Some(rule) = r
                .rule
                .as_ref()
                .filter(|r| matches!(r.selector, Parsed::Unknown))
            {
                work.styles.unknown.insert(rule.text.clone());
            }
            if r.face.is_some() {
                work.styles.faces.push((url.clone(), r.clone()));
            } else if r.import {
                let what = Fetch::Stylesheet {
                    applies: r.media_holds,
                };
                self.import(url, what, import_depth, work);
            } else {
                work.styles.images.push((url.clone(), r.clone(), None));
            }
        }
    }

    /// Once every stylesheet is read: the `url()`s of matched rules that style an element no
    /// `display: none` hides, then the faces the page's text uses.
    pub(super) fn once_styled(&mut self, work: &mut PageWork) {
        let pending = std::mem::take(&mut work.styles.faces);
        let faces: Vec<&css::Face> = pending
            .iter()
            .filter_map(|(_, r)| r.face.as_ref())
            .collect();
        let texts = work
            .styles
            .used
            .texts(work.matcher.tree(), &faces, &work.chars);
        // A `unicode-range` subset is fetched for a character drawn in its family, weight and
        // style (the element's text, or its generated text: an icon's glyph).
        let mut unused = 0;
        let used: Vec<&Url> = pending
            .iter()
            .filter_map(|(url, r)| {
                let face = r.face.as_ref()?;
                if !texts.uses(face, &faces) {
                    unused += 1;
                    return None;
                }
                texts
                    .draws_in(face, &faces, |chars| r.wanted_by(chars))
                    .then_some(url)
            })
            .collect();
        work.styles.faces_unused += unused;
        let images = std::mem::take(&mut work.styles.images);
        let tree = work.matcher.tree();
        // An element hidden, or in one hidden (`hidden` holds those `display: none` hides).
        let hidden = |id: NodeId| {
            tree.and_then(|t| t.tree.get(id)).is_some_and(|node| {
                std::iter::once(node)
                    .chain(node.ancestors())
                    .any(|n| texts.hidden.contains(&n.id()))
            })
        };
        for (url, r, element) in &images {
            let shown = match element {
                Some(id) => !hidden(*id),
                None => work.matcher.applies_shown(r.rule.as_ref(), &texts.hidden),
            };
            if shown {
                self.resource(url, Fetch::File, 0, work);
            } else {
                work.styles.hidden += 1;
            }
        }
        for url in used {
            self.resource(url, Fetch::File, 0, work);
        }
    }
}
