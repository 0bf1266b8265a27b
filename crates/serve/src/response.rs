//! A response as no protocol writes it: a status, fields, and a body source (`respond::Body`:
//! nothing, shared cached bytes, a file range; a program's output arrives later through its
//! gateway). Each protocol encodes it its own way: HTTP/1.1 as text, HTTP/2 (and HTTP/3, with
//! QPACK) as fields.
//!
//! The hot head, a cached file's, is built once per file version in both encodings from one
//! list of fields (`files/cache/build.rs`): HTTP/1.1 copies its prebuilt text, a protocol of fields
//! submits its prebuilt [`FieldBlock`] (lowercase static names, values in one buffer). Neither
//! is parsed back from the other. Heads built per request (error pages, redirects, listings)
//! are still written as HTTP/1.1 text, which HTTP/2 turns into fields (`protocol/h2/fields.rs`).

use std::rc::Rc;

/// Fields built once, for protocols that carry fields rather than text: each a lowercase
/// static name and a value, the values in one buffer.
#[derive(Debug, Default)]
pub struct FieldBlock {
    values: Vec<u8>,
    /// Name, and where the value lies in `values`.
    fields: Vec<(&'static [u8], u32, u32)>,
}

impl FieldBlock {
    /// Appends a field; `name` is lowercase.
    pub fn push(&mut self, name: &'static [u8], value: &[u8]) {
        let start = self.values.len() as u32;
        self.values.extend_from_slice(value);
        self.fields.push((name, start, self.values.len() as u32));
    }

    /// How many fields there are.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// The first `n` fields, in order.
    pub fn first(&self, n: usize) -> impl Iterator<Item = (&'static [u8], &[u8])> {
        let values = &self.values[..];
        (self.fields[..n.min(self.fields.len())].iter())
            .map(move |&(name, a, b)| (name, &values[a as usize..b as usize]))
    }

    /// Every field, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static [u8], &[u8])> {
        self.first(self.fields.len())
    }
}

/// A cached representation's fields (without Date), beside its HTTP/1.1 head block: shared, so
/// a response holds them past the responder's borrow of its cache without a copy.
#[derive(Debug, Default)]
pub struct ReprFields {
    /// A 200's.
    pub full: FieldBlock,
    /// How many of `full`'s fields a 206 shares (no Content-MD5, no Content-Length).
    pub partial: usize,
    /// A 304's.
    pub not_modified: FieldBlock,
}

/// How a reply's head is carried.
#[derive(Debug)]
pub enum Head {
    /// As HTTP/1.1 text, in the buffer the responder was given (its status line first, a
    /// generated body, if any, after its blank line).
    Text,
    /// A cached representation's prebuilt fields (asked for by `Responder::respond_as_fields`):
    /// `:status`, Date, then the fields [`Cached`] names. Nothing was written to the buffer but
    /// the values a 206 adds.
    Cached(Rc<ReprFields>, Cached),
}

/// Which of a representation's heads, with what a 206 adds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cached {
    /// 200: every field of [`ReprFields::full`].
    Full,
    /// 304: [`ReprFields::not_modified`].
    NotModified,
    /// 206: the shared part of [`ReprFields::full`], then Content-Range and Content-Length,
    /// whose values lie in the responder's buffer at these ranges.
    Partial {
        content_range: (usize, usize),
        content_length: (usize, usize),
    },
}
