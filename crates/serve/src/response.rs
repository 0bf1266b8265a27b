//! A response as no protocol writes it: a status, fields, and a body source (`respond::Body`:
//! nothing, shared cached bytes, a file range; a program's output arrives later through its
//! gateway). Each protocol encodes it its own way: HTTP/1.1 as text, HTTP/2 (and HTTP/3, with
//! QPACK) as fields.
//!
//! The hot head, a cached file's, is built once per file version in both encodings from one
//! list of fields (`files/cache/build.rs`): HTTP/1.1 copies its prebuilt text, a protocol of
//! fields submits its prebuilt fields (lowercase static names, values borrowed from that
//! text). Neither is parsed back from the other. Heads built per request (error pages,
//! redirects, listings) are still written as HTTP/1.1 text, which HTTP/2 turns into fields
//! (`protocol/h2/fields.rs`).

use std::rc::Rc;

/// A cached representation's heads, without Date, built once per file version in both
/// encodings over one buffer: `text` holds a 200's HTTP/1.1 header lines then a 304's, and each
/// field is a name and the range of its value in `text` (about 12 bytes beside the text per
/// field, where a second copy of the values would cost them again). Shared, so a response
/// holds them past the responder's borrow of its cache without a copy; sized exactly.
#[derive(Debug)]
pub struct ReprFields {
    /// A 200's header lines (`text[..full_text]`), then a 304's.
    text: Box<[u8]>,
    /// A 200's fields, then a 304's.
    fields: Box<[Field]>,
    /// Where a 200's lines end in `text`, and the end of those a 206 shares (no Content-MD5,
    /// no Content-Length).
    full_text: u32,
    partial_text: u32,
    /// How many of `fields` are a 200's, and how many of those a 206 shares.
    full_fields: u16,
    partial_fields: u16,
}

impl ReprFields {
    /// A 200's header lines ("Name: value" CRLF each).
    pub fn full_text(&self) -> &[u8] {
        &self.text[..self.full_text as usize]
    }

    /// The header lines of a 200 that a 206 shares.
    pub fn partial_text(&self) -> &[u8] {
        &self.text[..self.partial_text as usize]
    }

    /// A 304's header lines.
    pub fn not_modified_text(&self) -> &[u8] {
        &self.text[self.full_text as usize..]
    }

    /// The fields of a head, in order: the same as its header lines, values borrowed from them.
    pub fn fields(&self, cached: Cached) -> impl Iterator<Item = (&'static [u8], &[u8])> {
        let (full, partial) = (self.full_fields as usize, self.partial_fields as usize);
        let range = match cached {
            Cached::Full => 0..full,
            Cached::Partial { .. } => 0..partial,
            Cached::NotModified => full..self.fields.len(),
        };
        let text = &self.text[..];
        (self.fields[range].iter())
            .map(move |f| (f.name.lower(), &text[f.start as usize..f.end as usize]))
    }

    /// The heap bytes these heads hold (their text and their fields), beside the struct.
    pub fn heap_bytes(&self) -> usize {
        self.text.len() + std::mem::size_of_val(&*self.fields)
    }
}

/// A prebuilt field: its name, and where its value lies in the text of its heads (12 bytes).
#[derive(Debug, Clone, Copy)]
struct Field {
    start: u32,
    end: u32,
    name: FieldName,
}

/// The names of a cached file's fields (Date aside, written per response).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldName {
    Server,
    AltSvc,
    ContentType,
    LastModified,
    ETag,
    AcceptRanges,
    Vary,
    ContentEncoding,
    ReprDigest,
    ContentMd5,
    ContentLength,
}

impl FieldName {
    /// As HTTP/1.1 writes it.
    pub fn text(self) -> &'static [u8] {
        match self {
            FieldName::Server => b"Server",
            FieldName::AltSvc => b"Alt-Svc",
            FieldName::ContentType => b"Content-Type",
            FieldName::LastModified => b"Last-Modified",
            FieldName::ETag => b"ETag",
            FieldName::AcceptRanges => b"Accept-Ranges",
            FieldName::Vary => b"Vary",
            FieldName::ContentEncoding => b"Content-Encoding",
            FieldName::ReprDigest => b"Repr-Digest",
            FieldName::ContentMd5 => b"Content-MD5",
            FieldName::ContentLength => b"Content-Length",
        }
    }

    /// Lowercase, as HTTP/2 and HTTP/3 carry it.
    pub fn lower(self) -> &'static [u8] {
        match self {
            FieldName::Server => b"server",
            FieldName::AltSvc => b"alt-svc",
            FieldName::ContentType => b"content-type",
            FieldName::LastModified => b"last-modified",
            FieldName::ETag => b"etag",
            FieldName::AcceptRanges => b"accept-ranges",
            FieldName::Vary => b"vary",
            FieldName::ContentEncoding => b"content-encoding",
            FieldName::ReprDigest => b"repr-digest",
            FieldName::ContentMd5 => b"content-md5",
            FieldName::ContentLength => b"content-length",
        }
    }
}

/// Builds a [`ReprFields`]: each field written once as an HTTP/1.1 line, recorded as a name
/// and the range of its value in that line.
#[derive(Debug, Default)]
pub struct ReprFieldsBuilder {
    text: Vec<u8>,
    fields: Vec<Field>,
    partial: Option<(u32, u16)>,
    full: Option<(u32, u16)>,
}

impl ReprFieldsBuilder {
    /// Appends `Name: value` CRLF, and the field.
    pub fn push(&mut self, name: FieldName, value: &[u8]) {
        self.text.extend_from_slice(name.text());
        self.text.extend_from_slice(b": ");
        let start = self.text.len() as u32;
        self.text.extend_from_slice(value);
        let end = self.text.len() as u32;
        self.fields.push(Field { name, start, end });
        self.text.extend_from_slice(b"\r\n");
    }

    /// What was pushed so far is the part of a 200 that a 206 shares.
    pub fn end_partial(&mut self) {
        self.partial = Some((self.text.len() as u32, self.fields.len() as u16));
    }

    /// What was pushed so far is a 200's head; what follows is a 304's.
    pub fn end_full(&mut self) {
        self.full = Some((self.text.len() as u32, self.fields.len() as u16));
    }

    /// The heads, in buffers of exactly their size.
    pub fn build(self) -> ReprFields {
        let (full_text, full_fields) = self.full.expect("a 200's head ends before a 304's");
        let (partial_text, partial_fields) = self.partial.unwrap_or((full_text, full_fields));
        ReprFields {
            text: self.text.into_boxed_slice(),
            fields: self.fields.into_boxed_slice(),
            full_text,
            partial_text,
            full_fields,
            partial_fields,
        }
    }
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
    /// 200: every field of a 200.
    Full,
    /// 304: a 304's fields.
    NotModified,
    /// 206: the fields of a 200 a 206 shares, then Content-Range and Content-Length,
    /// whose values lie in the responder's buffer at these ranges.
    Partial {
        content_range: (usize, usize),
        content_length: (usize, usize),
    },
}
