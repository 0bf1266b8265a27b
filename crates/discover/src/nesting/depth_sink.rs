//! A tree sink that knows each element's depth and the depth of the current node: what the cap
//! of `nesting.rs` is measured on.
//!
//! It wraps scraper's sink, passing every call through, and sets each element's depth where it
//! is placed in the tree (appended, put before a sibling, fostered), so the depth is the tree's
//! own, not a count of tags that misnested or implied tags would lead astray.

use super::is_void;
use html5ever::tendril::StrTendril;
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::hash::Hash;

/// A tree sink that knows each element's depth and the depth of the current node.
pub(super) struct DepthSink<S: TreeSink> {
    inner: S,
    /// Each element's depth (once placed), and whether it holds content (not void).
    elements: RefCell<HashMap<S::Handle, (u32, bool)>>,
    /// Depth of the element the next one is put in (the document is 0).
    pub(super) current: Cell<u32>,
    /// The last element that became the current node when placed.
    pub(super) last_opened: RefCell<Option<S::Handle>>,
    /// Whether the tree builder has made the `<body>` (written or implied).
    pub(super) body_opened: Cell<bool>,
}

impl<S: TreeSink> DepthSink<S>
where
    S::Handle: Eq + Hash,
{
    pub(super) fn new(inner: S) -> DepthSink<S> {
        DepthSink {
            inner,
            elements: RefCell::new(HashMap::new()),
            current: Cell::new(0),
            last_opened: RefCell::new(None),
            body_opened: Cell::new(false),
        }
    }

    pub(super) fn depth_of(&self, node: &S::Handle) -> u32 {
        self.elements.borrow().get(node).map_or(0, |e| e.0)
    }

    /// `child` was put at `depth`: an element that holds content becomes the current node (the
    /// tree builder opens it); anything else leaves its parent current.
    fn placed(&self, child: &NodeOrText<S::Handle>, depth: u32) {
        let opens = match child {
            NodeOrText::AppendNode(node) => {
                let mut elements = self.elements.borrow_mut();
                match elements.get_mut(node) {
                    Some(e) => {
                        e.0 = depth;
                        if e.1 {
                            *self.last_opened.borrow_mut() = Some(node.clone());
                        }
                        e.1
                    }
                    None => false, // a comment
                }
            }
            NodeOrText::AppendText(_) => false,
        };
        self.current.set(if opens {
            depth
        } else {
            depth.saturating_sub(1)
        });
    }
}

impl<S: TreeSink> TreeSink for DepthSink<S>
where
    S::Handle: Eq + Hash,
{
    type Handle = S::Handle;
    type Output = S::Output;
    type ElemName<'a>
        = S::ElemName<'a>
    where
        S: 'a;

    fn finish(self) -> S::Output {
        self.inner.finish()
    }
    fn parse_error(&self, msg: Cow<'static, str>) {
        self.inner.parse_error(msg)
    }
    fn get_document(&self) -> S::Handle {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a S::Handle) -> S::ElemName<'a> {
        self.inner.elem_name(target)
    }
    fn create_element(
        &self,
        name: QualName,
        attrs: Vec<Attribute>,
        flags: ElementFlags,
    ) -> S::Handle {
        // A foreign element closing itself is opened and closed at once: `pop` says so.
        let html = &*name.ns == "http://www.w3.org/1999/xhtml";
        let opens = !html || !is_void(&name.local);
        if html && &*name.local == "body" {
            self.body_opened.set(true);
        }
        let node = self.inner.create_element(name, attrs, flags);
        self.elements.borrow_mut().insert(node.clone(), (0, opens));
        node
    }
    fn create_comment(&self, text: StrTendril) -> S::Handle {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> S::Handle {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &S::Handle, child: NodeOrText<S::Handle>) {
        self.placed(&child, self.depth_of(parent) + 1);
        self.inner.append(parent, child)
    }
    fn append_based_on_parent_node(
        &self,
        element: &S::Handle,
        prev_element: &S::Handle,
        child: NodeOrText<S::Handle>,
    ) {
        self.placed(&child, self.depth_of(element));
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }
    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }
    fn mark_script_already_started(&self, node: &S::Handle) {
        self.inner.mark_script_already_started(node)
    }
    fn pop(&self, node: &S::Handle) {
        self.current.set(self.depth_of(node).saturating_sub(1));
        self.inner.pop(node)
    }
    fn get_template_contents(&self, target: &S::Handle) -> S::Handle {
        let contents = self.inner.get_template_contents(target);
        let depth = self.depth_of(target) + 1;
        self.elements
            .borrow_mut()
            .insert(contents.clone(), (depth, true));
        contents
    }
    fn same_node(&self, x: &S::Handle, y: &S::Handle) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }
    fn append_before_sibling(&self, sibling: &S::Handle, new_node: NodeOrText<S::Handle>) {
        self.placed(&new_node, self.depth_of(sibling));
        self.inner.append_before_sibling(sibling, new_node)
    }
    fn add_attrs_if_missing(&self, target: &S::Handle, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }
    fn associate_with_form(
        &self,
        target: &S::Handle,
        form: &S::Handle,
        nodes: (&S::Handle, Option<&S::Handle>),
    ) {
        self.inner.associate_with_form(target, form, nodes)
    }
    fn remove_from_parent(&self, target: &S::Handle) {
        self.inner.remove_from_parent(target)
    }
    fn reparent_children(&self, node: &S::Handle, new_parent: &S::Handle) {
        self.inner.reparent_children(node, new_parent)
    }
    fn is_mathml_annotation_xml_integration_point(&self, handle: &S::Handle) -> bool {
        self.inner
            .is_mathml_annotation_xml_integration_point(handle)
    }
    fn set_current_line(&self, line_number: u64) {
        self.inner.set_current_line(line_number)
    }
}
