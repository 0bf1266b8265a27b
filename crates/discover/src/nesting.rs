//! HTML parsed with its nesting capped.
//!
//! html5ever's tree builder searches its stack of open elements for each start tag ("has a `p`
//! element in button scope"): a page nesting 100,000 `<div>`s costs 100,000² steps (over 90 s
//! for 1.1 MB). Browsers cap the depth of the tree (Chromium at 512); html5ever has no such
//! option, so the cap is put between its tokenizer and its tree builder: an element a start tag
//! opens deeper than [`MAX_DEPTH`] is closed at once (its end tag, when it comes, is left out),
//! so that it keeps its own references (a `<video poster>`, a `style`, an `<a href>`) and what
//! it holds (text, images, stylesheets) lands beside it, in the element at the cap, as Chromium
//! attaches it at its limit. The stack of open elements stays bounded (at the cap, but for what
//! the tree builder adds by itself: a table's implied rows, formatting elements it reopens), and
//! the parse linear whatever the nesting; a real page (a few dozen levels) is never touched. An
//! element whose content is text (`<script src>`, `<iframe src>`, in HTML) stays open: one level
//! more.
//!
//! The depth of the tree builder's current node is followed by a tree sink around scraper's
//! (each element's depth in the tree, set where it is appended: `nesting/depth_sink.rs`), so the
//! cap is the tree's own depth, not a count of tags that misnested or implied tags would lead
//! astray. This file is the cap itself: the token sink between the tokenizer and the tree
//! builder.

mod depth_sink;

use depth_sink::DepthSink;
use html5ever::interface::ElemName;
use html5ever::tendril::StrTendril;
use html5ever::tokenizer::{
    BufferQueue, Tag, TagKind, Token, TokenSink, TokenSinkResult, Tokenizer, TokenizerOpts,
};
use html5ever::tree_builder::{TreeBuilder, TreeBuilderOpts, TreeSink};
use html5ever::{LocalName, TokenizerResult};
use scraper::{Html, HtmlTreeSink};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::Hash;

/// Elements nest at most this deep (Chromium's limit).
pub const MAX_DEPTH: u32 = 512;

/// A parsed document, and how many elements past [`MAX_DEPTH`] were closed at once.
pub fn parse_document(html: &str) -> (Html, u64) {
    parse_document_until(html, |_| false).expect("a parse that never stops ends")
}

/// As [`parse_document`], but given each encoding a `<meta>` declares (html5ever's encoding
/// indicator, its label as written) as the tree builder meets it, where Chromium still looks
/// for one (in the head, or within the first [`CHARSET_SCAN`] characters): when `changes` says it
/// changes the document's encoding, the parse stops there (`None`), to be started again in
/// that encoding as a browser starts it again.
pub fn parse_document_until(
    html: &str,
    mut changes: impl FnMut(&str) -> bool,
) -> Option<(Html, u64)> {
    let sink = DepthSink::new(HtmlTreeSink::new(Html::new_document()));
    let builder = TreeBuilder::new(sink, TreeBuilderOpts::default());
    let tokenizer = Tokenizer::new(
        Capped {
            builder,
            open_past_cap: RefCell::new(HashMap::new()),
            left_out: Cell::new(0),
        },
        TokenizerOpts::default(),
    );
    let input = BufferQueue::default();
    input.push_back(StrTendril::from_slice(html));
    // A script pauses the tokenizer (a browser would run it here); go on, as html5ever's own
    // driver does.
    loop {
        match tokenizer.feed(&input) {
            TokenizerResult::Done => break,
            TokenizerResult::Script(_) => {}
            TokenizerResult::EncodingIndicator(label) => {
                if counts(tokenizer.sink.builder.sink.body_opened.get(), &input, html)
                    && changes(&label)
                {
                    return None;
                }
            }
        }
    }
    tokenizer.end();
    let capped = tokenizer.sink;
    let left_out = capped.left_out.get();
    Some((capped.builder.sink.finish(), left_out))
}

/// Characters within which Chromium honours a `<meta charset>` wherever it stands; past them,
/// only in the head (its meta charset parser stops at the first element of the body there).
pub const CHARSET_SCAN: usize = 1024;

/// Whether a `<meta>` declaring an encoding, just read, is one Chromium acts on: before the
/// body opens, or within the first [`CHARSET_SCAN`] characters of the document.
fn counts(body_opened: bool, input: &BufferQueue, html: &str) -> bool {
    if !body_opened {
        return true;
    }
    // The tokenizer has read the document up to the end of the `<meta>` tag: what is left
    // of it is the one chunk still queued.
    let left = input.peek_front_chunk_mut().map_or(0, |c| c.len());
    let read = html.len().saturating_sub(left);
    html.get(..read)
        .is_some_and(|read| read.chars().count() <= CHARSET_SCAN)
}

/// Elements with no end tag: never the current node for long.
fn is_void(name: &str) -> bool {
    matches!(
        name,
        "area"
            | "base"
            | "basefont"
            | "bgsound"
            | "br"
            | "col"
            | "embed"
            | "frame"
            | "hr"
            | "image"
            | "img"
            | "input"
            | "keygen"
            | "link"
            | "meta"
            | "param"
            | "source"
            | "track"
            | "wbr"
    )
}

/// Elements whose content the tokenizer reads as text in HTML (it switches on the tree
/// builder's word; in an `<svg>` they hold elements): their end tags are never left out, so that
/// the tokenizer and the tree builder agree on where the text ends (a tree builder left in its
/// text mode by a dropped `</script>` panics on the next tag). Past the cap such an element stays
/// open, its text one level more.
fn holds_text(name: &str) -> bool {
    matches!(
        name,
        "script"
            | "style"
            | "title"
            | "textarea"
            | "xmp"
            | "iframe"
            | "noembed"
            | "noframes"
            | "noscript"
            | "plaintext"
    )
}

/// The tree builder, its tree kept within [`MAX_DEPTH`] (and a level for text elements).
struct Capped<S: TreeSink> {
    builder: TreeBuilder<S::Handle, DepthSink<S>>,
    /// The names of the elements closed at once whose end tags have not come yet, each with how
    /// many (`<p>`, `<li>` are often never closed): only an end tag of one of these names is left
    /// out.
    open_past_cap: RefCell<HashMap<LocalName, u64>>,
    left_out: Cell<u64>,
}

impl<S: TreeSink> TokenSink for Capped<S>
where
    S::Handle: Eq + Hash,
{
    type Handle = S::Handle;

    fn process_token(&self, token: Token, line_number: u64) -> TokenSinkResult<S::Handle> {
        let mut past_cap = None;
        if let Token::TagToken(Tag {
            kind,
            name,
            self_closing,
            ..
        }) = &token
        {
            if !is_void(name) {
                match kind {
                    TagKind::StartTag if self.builder.sink.current.get() >= MAX_DEPTH => {
                        past_cap = Some((name.clone(), *self_closing));
                    }
                    TagKind::EndTag if !holds_text(name) => {
                        let mut open = self.open_past_cap.borrow_mut();
                        if let Some(n) = open.get_mut(name) {
                            *n -= 1;
                            if *n == 0 {
                                open.remove(name);
                            }
                            return TokenSinkResult::Continue;
                        }
                    }
                    _ => {}
                }
            }
        }
        let sink = &self.builder.sink;
        sink.last_opened.take();
        let result = self.builder.process_token(token, line_number);
        if let Some((name, self_closing)) = past_cap {
            // The element is kept, for its own references (a `<video poster>`, a `style`), but
            // closed at once: what it holds lands beside it, at the cap, as in Chromium.
            let opened = sink.last_opened.take().is_some_and(|el| {
                let depth = sink.depth_of(&el);
                depth > MAX_DEPTH
                    && depth == sink.current.get()
                    && sink.elem_name(&el).local_name().eq_ignore_ascii_case(&name)
            });
            // An element whose content is text (the tree builder asks the tokenizer to read
            // it so) stays open: one level more.
            if opened && matches!(result, TokenSinkResult::Continue) {
                self.left_out.set(self.left_out.get() + 1);
                let end = Tag {
                    kind: TagKind::EndTag,
                    name: name.clone(),
                    self_closing: false,
                    attrs: Vec::new(),
                    had_duplicate_attributes: false,
                };
                let _ = self
                    .builder
                    .process_token(Token::TagToken(end), line_number);
                // `<div/>` opens a div all the same (HTML ignores the slash); it has no end
                // tag of its own to leave out.
                if !self_closing && !holds_text(&name) {
                    *self.open_past_cap.borrow_mut().entry(name).or_insert(0) += 1;
                }
            }
        }
        // The element at the cap is closed, and so would be all opened in it: the end tags still
        // to come for those closed at once are the tree builder's to ignore, as it would
        // without the cap.
        if sink.current.get() < MAX_DEPTH {
            let mut open = self.open_past_cap.borrow_mut();
            if !open.is_empty() {
                open.clear();
            }
        }
        result
    }

    fn end(&self) {
        self.builder.end()
    }

    fn adjusted_current_node_present_but_not_in_html_namespace(&self) -> bool {
        self.builder
            .adjusted_current_node_present_but_not_in_html_namespace()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_within_the_cap_is_the_tree_html5ever_builds() {
        let page = r#"<!doctype html><title>t</title><link rel=stylesheet href=a.css>
            <p>one<p>two <b>bold <i>both</b> italic</i>
            <table><tr><td>cell<div>fostered?</div></td></tr><div>out</div></table>
            <template><img src=t.png></template><svg><path/><g><rect/></g></svg>
            <ul><li>a<li>b</ul><script>if (a < b) {}</script><img src=x.png>"#;
        let (capped, left_out) = parse_document(page);
        assert_eq!(left_out, 0);
        assert_eq!(capped.html(), Html::parse_document(page).html());
    }

    #[test]
    fn self_closing_tags_past_the_cap_are_closed_at_once_too() {
        // HTML ignores the slash: each `<div/>` opens a div.
        let n = 3000;
        let (tree, left_out) =
            parse_document(&format!("<body>{}<img src=x.png>", "<div/>".repeat(n)));
        assert_eq!(left_out, (n - 510) as u64);
        let deepest = tree
            .root_element()
            .descendants()
            .filter(|d| d.value().is_element())
            .map(|d| d.ancestors().count())
            .max();
        assert_eq!(deepest, Some(513), "the img under the 512th element");
    }

    #[test]
    fn nesting_past_the_cap_is_closed_at_once_and_what_it_holds_kept() {
        let n = 2000;
        let page = format!(
            "<body>{}<img src=deep.png>{}<img src=after.png>",
            "<div>".repeat(n),
            "</div>".repeat(n)
        );
        let (tree, left_out) = parse_document(&page);
        // html (1), body (2), divs at 3..=512; the rest closed at once.
        assert_eq!(left_out, (n - 510) as u64);
        let srcs: Vec<&str> = tree
            .root_element()
            .descendants()
            .filter_map(scraper::ElementRef::wrap)
            .filter_map(|e| e.value().attr("src"))
            .collect();
        assert_eq!(srcs, ["deep.png", "after.png"]);
        // The image after the divs is the body's, as without the cap.
        let body = tree.root_element().last_child().unwrap();
        let last = scraper::ElementRef::wrap(body.last_child().unwrap()).unwrap();
        assert_eq!(last.value().attr("src"), Some("after.png"));
    }

    /// The `src` of every element, in document order.
    fn srcs(tree: &Html) -> Vec<String> {
        tree.root_element()
            .descendants()
            .filter_map(scraper::ElementRef::wrap)
            .filter_map(|e| e.value().attr("src").map(str::to_owned))
            .collect()
    }

    #[test]
    fn an_end_tag_is_left_out_only_for_an_element_of_its_name_closed_at_once() {
        // Each closes elements at once past the cap, then lowers the depth with a tag that
        // closes what they were in: the `</script>` after it is the script's, and the tree
        // builder would panic in its text mode without it.
        let spans = "<span>".repeat(600);
        let divs = "<div>".repeat(508);
        let pages = [
            format!("<body><p>{spans}<hr>"),
            format!("<body><table><tr><td>{spans}<col>"),
            format!("<body>{divs}<select><optgroup><option><option><input>"),
        ];
        for lowering in pages {
            for text in [
                "script", "style", "title", "textarea", "xmp", "iframe", "noembed", "noframes",
                "noscript",
            ] {
                let page = format!("{lowering}<{text}></{text}><!---->\0<b><img src=after.png>");
                let (tree, left_out) = parse_document(&page);
                assert!(left_out > 0, "{text}: nothing closed at once");
                assert_eq!(srcs(&tree), ["after.png"], "{text}");
            }
        }
    }

    #[test]
    fn text_elements_in_foreign_content_are_capped_too() {
        // In an `<svg>` a `<style>` or a `<script>` holds elements, not text: each nests (a
        // `<title>` holds HTML: the next `<title>` is the HTML one, its content text).
        for name in ["style", "script", "textarea", "xmp", "noscript", "iframe"] {
            let n = 5000;
            let page = format!(
                "<body><svg>{}<img src=after.png>",
                format!("<{name}>").repeat(n)
            );
            let (tree, left_out) = parse_document(&page);
            assert_eq!(left_out, (n - 509) as u64, "{name}");
            let deepest = tree
                .root_element()
                .descendants()
                .map(|d| d.ancestors().count())
                .max();
            assert!(
                deepest <= Some(MAX_DEPTH as usize + 2),
                "{name}: {deepest:?}"
            );
            assert_eq!(srcs(&tree), ["after.png"], "{name}");
        }
    }

    #[test]
    fn random_tags_past_the_cap_never_panic() {
        const TAGS: [&str; 40] = [
            "<div>",
            "</div>",
            "<span>",
            "</span>",
            "<p>",
            "</p>",
            "<li>",
            "</li>",
            "<td>",
            "</td>",
            "<tr>",
            "</tr>",
            "<table>",
            "</table>",
            "<select>",
            "</select>",
            "<option>",
            "</option>",
            "<hr>",
            "<col>",
            "<input>",
            "<img src=x.png>",
            "<b>",
            "</b>",
            "<a>",
            "</a>",
            "<svg>",
            "</svg>",
            "<script>",
            "</script>",
            "<style>",
            "</style>",
            "<textarea>",
            "</textarea>",
            "<noscript>",
            "</noscript>",
            "<!---->",
            "\0",
            "text",
            "<template>",
        ];
        // xorshift64: the same cases on every run.
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let prefixes = [
            format!("<body><p>{}", "<span>".repeat(520)),
            format!("<body><table><tr><td>{}", "<span>".repeat(520)),
            format!("<body>{}<select>", "<span>".repeat(511)),
        ];
        let mut left_out = 0;
        let mut deepest_seen = 0;
        for case in 0..2000 {
            let mut page = prefixes[case % prefixes.len()].clone();
            for _ in 0..40 {
                page.push_str(TAGS[(next() % TAGS.len() as u64) as usize]);
            }
            page.push_str("<img src=end.png>");
            let (tree, n) = parse_document(&page);
            left_out += n;
            let deepest = tree
                .root_element()
                .descendants()
                .map(|d| d.ancestors().count())
                .max()
                .unwrap_or(0);
            deepest_seen = deepest_seen.max(deepest);
        }
        assert!(left_out > 0);
        // Past the cap only what the tree builder adds by itself (a table's implied body and
        // row, a text element's text) goes deeper.
        assert!(deepest_seen <= MAX_DEPTH as usize + 8, "{deepest_seen}");
    }
}
