//! A response as no protocol writes it: a status, fields, and a body source (`respond::Body`:
//! nothing, shared cached bytes, a file range; a program's output arrives later through its
//! gateway). Each protocol encodes it its own way: HTTP/1.1 as text, HTTP/2 (and HTTP/3, with
//! QPACK) as fields.
//!
//! The hot head, a cached file's, is built once per file version in both encodings from one
//! list of fields (`files/cache/build.rs`): HTTP/1.1 copies its prebuilt text, a protocol of
//! fields submits its prebuilt fields (lowercase static names, values borrowed from that
//! text). Neither is parsed back from the other. A head built per request (an error page, a
//! redirect, a listing) is described once by the responder and written in the encoding the
//! protocol asks for (`respond::Output`): as text straight into HTTP/1.1's output
//! (`Output::Text`), or as [`Fields`] for a protocol of fields (`Output::Fields`), each field a
//! name and a value in one reused buffer handed over as they are. A program's or an
//! upstream's checked head (`gateway/head.rs`) is [`Fields`] whatever the protocol: HTTP/1.1
//! writes it as lines. No head is written as text to be read again.

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
            Cached::Partial => 0..partial,
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

/// The names of the fields the server writes itself: a cached file's (Date aside, written per
/// response), and those of the heads built per request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldName {
    /// `Date`: the second the event loop formatted, written per response.
    Date,
    /// `Server`: the configured `server_name`.
    Server,
    /// `Alt-Svc`: HTTP/3 advertised, when it is served.
    AltSvc,
    /// `Content-Type`: by extension (a cached file) or the page's own.
    ContentType,
    /// `Last-Modified`: the file's mtime as an IMF-fixdate.
    LastModified,
    /// `ETag`: the file version's strong validator.
    ETag,
    /// `Accept-Ranges: bytes`, on a cached file's 200.
    AcceptRanges,
    /// `Vary: Accept-Encoding`, when a precompressed sibling exists.
    Vary,
    /// `Content-Encoding`: `gzip` or `br`, for a sibling sent.
    ContentEncoding,
    /// `Repr-Digest: sha-256=...`, with `digest` on.
    ReprDigest,
    /// `Content-MD5`, with `digest` on.
    ContentMd5,
    /// `Content-Length`, decimal.
    ContentLength,
    /// `Content-Range`: a 206's range, or a 416's `bytes */len`.
    ContentRange,
    /// `Location`: a 301's or 302's target.
    Location,
    /// `Allow: GET, HEAD`, on a 405.
    Allow,
    /// `Retry-After`, seconds: on a 503 when programs are busy, on a 429.
    RetryAfter,
    /// `WWW-Authenticate`: a 401's Basic challenge.
    WwwAuthenticate,
}

impl FieldName {
    /// As HTTP/1.1 writes it.
    pub fn text(self) -> &'static [u8] {
        match self {
            FieldName::Date => b"Date",
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
            FieldName::ContentRange => b"Content-Range",
            FieldName::Location => b"Location",
            FieldName::Allow => b"Allow",
            FieldName::RetryAfter => b"Retry-After",
            FieldName::WwwAuthenticate => b"WWW-Authenticate",
        }
    }

    /// Lowercase, as HTTP/2 and HTTP/3 carry it.
    pub fn lower(self) -> &'static [u8] {
        match self {
            FieldName::Date => b"date",
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
            FieldName::ContentRange => b"content-range",
            FieldName::Location => b"location",
            FieldName::Allow => b"allow",
            FieldName::RetryAfter => b"retry-after",
            FieldName::WwwAuthenticate => b"www-authenticate",
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
    /// As the responder's output says (`respond::Output`): HTTP/1.1 text in its buffer, or
    /// [`Fields`] (then `:status` is the reply's status).
    Written,
    /// A cached representation's prebuilt fields (only to a protocol of fields): `:status`,
    /// Date, then the fields [`Cached`] names, then those written to the output's [`Fields`]
    /// (a 206's Content-Range and Content-Length).
    Cached(Rc<ReprFields>, Cached),
}

/// Which of a representation's heads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cached {
    /// 200: every field of a 200.
    Full,
    /// 304: a 304's fields.
    NotModified,
    /// 206: the fields of a 200 a 206 shares (its range and length follow, written per
    /// response).
    Partial,
}

/// Fields a head keeps beside itself before its list moves to the heap: more than the
/// responder ever writes and than most programs do, so a program's head costs one allocation
/// (its bytes), as its text did.
const INLINE_FIELDS: usize = 16;

/// A response head's fields as no protocol writes them: each a name (one the server knows, or
/// as a program or an upstream spelled it) and a value, both in one buffer. HTTP/1.1 writes
/// them as lines ([`Fields::write_lines`]); HTTP/2 hands them to nghttp2 and HTTP/3 to QPACK
/// as they are ([`Fields::iter`]). Never hop-by-hop fields (Connection, Transfer-Encoding...):
/// those are HTTP/1.1's framing, which its encoder adds. Reused: cleared, it keeps its
/// buffers, so a connection's heads allocate nothing once it has written one.
#[derive(Clone)]
pub struct Fields {
    bytes: Vec<u8>,
    inline: [FieldAt; INLINE_FIELDS],
    /// The fields past [`INLINE_FIELDS`].
    more: Vec<FieldAt>,
    len: usize,
}

/// Where a field lies in [`Fields::bytes`]: its name there (as spelled, and lowercase) unless
/// it is a known one.
#[derive(Debug, Clone, Copy)]
struct FieldAt {
    known: Option<FieldName>,
    name: (u32, u32),
    lower: (u32, u32),
    value: (u32, u32),
}

impl FieldAt {
    const NONE: FieldAt = FieldAt {
        known: None,
        name: (0, 0),
        lower: (0, 0),
        value: (0, 0),
    };
}

/// A field's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Name<'a> {
    /// One the server writes: its static spellings (`FieldName::text`, `FieldName::lower`).
    Known(FieldName),
    /// A program's or an upstream's (a token): as it spelled it, which HTTP/1.1 passes on,
    /// and lowercase, which HTTP/2 and HTTP/3 carry (the same bytes when it was lowercase).
    Other {
        /// As it was spelled.
        text: &'a [u8],
        /// Lowercase.
        lower: &'a [u8],
    },
}

impl<'a> Name<'a> {
    /// As HTTP/1.1 writes it.
    pub fn text(&self) -> &'a [u8] {
        match *self {
            Name::Known(name) => name.text(),
            Name::Other { text, .. } => text,
        }
    }

    /// Lowercase, as HTTP/2 and HTTP/3 carry it.
    pub fn lower(&self) -> &'a [u8] {
        match *self {
            Name::Known(name) => name.lower(),
            Name::Other { lower, .. } => lower,
        }
    }
}

impl Default for Fields {
    fn default() -> Fields {
        Fields::new()
    }
}

impl Fields {
    /// Empty, with no room reserved: the first pushes allocate.
    pub fn new() -> Fields {
        Fields::with_capacity(0)
    }

    /// Empty, with room for `bytes` bytes of names and values.
    pub fn with_capacity(bytes: usize) -> Fields {
        Fields {
            bytes: Vec::with_capacity(bytes),
            inline: [FieldAt::NONE; INLINE_FIELDS],
            more: Vec::new(),
            len: 0,
        }
    }

    /// No field, the buffers kept.
    pub fn clear(&mut self) {
        self.bytes.clear();
        self.more.clear();
        self.len = 0;
    }

    /// How many fields it holds.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no field.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends a field the server knows.
    pub fn push(&mut self, name: FieldName, value: &[u8]) {
        self.push_with(name, |v| v.extend_from_slice(value));
    }

    /// Appends a field the server knows, its value written by `value` (a number, an encoded
    /// path: formatted in place).
    pub fn push_with(&mut self, name: FieldName, value: impl FnOnce(&mut Vec<u8>)) {
        let start = self.bytes.len() as u32;
        value(&mut self.bytes);
        let value = (start, self.bytes.len() as u32);
        self.add(FieldAt {
            known: Some(name),
            value,
            ..FieldAt::NONE
        });
    }

    /// Appends a field named as a program or an upstream named it (a lowercase copy of its
    /// name is kept beside it only if it has uppercase letters).
    pub fn push_other(&mut self, name: &[u8], value: &[u8]) {
        let at = |bytes: &Vec<u8>| bytes.len() as u32;
        let a = at(&self.bytes);
        self.bytes.extend_from_slice(name);
        let name = (a, at(&self.bytes));
        let lower = if self.bytes[a as usize..].iter().any(u8::is_ascii_uppercase) {
            let b = at(&self.bytes);
            self.bytes.extend_from_within(a as usize..b as usize);
            self.bytes[b as usize..].make_ascii_lowercase();
            (b, at(&self.bytes))
        } else {
            name
        };
        let v = at(&self.bytes);
        self.bytes.extend_from_slice(value);
        let value = (v, at(&self.bytes));
        self.add(FieldAt {
            known: None,
            name,
            lower,
            value,
        });
    }

    fn add(&mut self, at: FieldAt) {
        match self.inline.get_mut(self.len) {
            Some(slot) => *slot = at,
            None => self.more.push(at),
        }
        self.len += 1;
    }

    /// The fields, in the order they were pushed.
    pub fn iter(&self) -> impl Iterator<Item = (Name<'_>, &[u8])> {
        let inline = &self.inline[..self.len.min(INLINE_FIELDS)];
        let bytes = &self.bytes[..];
        let range = move |(a, b): (u32, u32)| &bytes[a as usize..b as usize];
        (inline.iter().chain(&self.more)).map(move |f| {
            let name = match f.known {
                Some(known) => Name::Known(known),
                None => Name::Other {
                    text: range(f.name),
                    lower: range(f.lower),
                },
            };
            (name, range(f.value))
        })
    }

    /// The fields as HTTP/1.1 header lines ("Name: value" CRLF each).
    pub fn write_lines(&self, out: &mut Vec<u8>) {
        for (name, value) in self.iter() {
            out.extend_from_slice(name.text());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }

    /// The heap bytes these fields hold (the tests that bound what a connection keeps, the
    /// bound on a thread's spare request storage).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity() + self.more.capacity() * size_of::<FieldAt>()
    }
}

impl PartialEq for Fields {
    fn eq(&self, other: &Fields) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Fields {}

impl std::fmt::Debug for Fields {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut lines = Vec::new();
        self.write_lines(&mut lines);
        f.write_str(&String::from_utf8_lossy(&lines))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields past the inline ones keep their order, and a cleared list is empty and reused.
    #[test]
    fn fields_keep_their_order_past_the_inline_ones_and_clear() {
        let mut fields = Fields::new();
        fields.push(FieldName::Date, b"today");
        for i in 0..INLINE_FIELDS + 3 {
            fields.push_other(format!("X-{i}").as_bytes(), i.to_string().as_bytes());
        }
        fields.push_with(FieldName::ContentLength, |v| v.extend_from_slice(b"42"));
        assert_eq!(fields.len(), INLINE_FIELDS + 5);
        let mut lines = Vec::new();
        fields.write_lines(&mut lines);
        let mut want = String::from("Date: today\r\n");
        for i in 0..INLINE_FIELDS + 3 {
            want.push_str(&format!("X-{i}: {i}\r\n"));
        }
        want.push_str("Content-Length: 42\r\n");
        assert_eq!(String::from_utf8(lines).unwrap(), want);
        let names: Vec<Name<'_>> = fields.iter().map(|(n, _)| n).collect();
        assert_eq!(names[0], Name::Known(FieldName::Date));
        assert_eq!(names[INLINE_FIELDS + 1].text(), b"X-16");
        assert_eq!(names[INLINE_FIELDS + 1].lower(), b"x-16");
        assert_eq!(names[0].lower(), b"date");
        fields.clear();
        assert!(fields.is_empty() && fields.iter().next().is_none());
        fields.push_other(b"a-b", b"C");
        let other = Name::Other {
            text: b"a-b",
            lower: b"a-b",
        };
        assert_eq!(fields.iter().collect::<Vec<_>>(), [(other, &b"C"[..])]);
    }
}
