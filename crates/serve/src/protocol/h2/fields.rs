//! A response head as HTTP/2 fields. A cached file's comes prebuilt (`crate::response`, built
//! with its HTTP/1.1 head per file version): [`cached_fields`] hands them over, nothing read.
//! Any other head is written as HTTP/1.1 text (error pages, redirects, listings, a program's
//! head: "HTTP/1.1 200 OK", "Name: value" lines, the blank line), and one pass over it yields
//! `:status` and the fields as slices of it, connection-specific ones left out (RFC 9113
//! 8.2.2), common names in their static lowercase form. Kept apart from `h2.rs`: the one place
//! that reads the layout of the head the responder writes.
//!
//! A connection's text heads may repeat byte for byte (a program answering the same way):
//! [`LastHead`] keeps the last head and where its fields lie, so a head equal to it is turned
//! into fields without being read again (one comparison instead of a pass over its lines).

use http2::Header;

use crate::response::{Cached, ReprFields};

/// Most response fields passed to nghttp2 (the responder writes about a dozen).
pub(super) const MAX_FIELDS: usize = 32;
/// Response fields that are HTTP/1.1's alone (RFC 9113 8.2.2).
const CONNECTION_SPECIFIC: [&[u8]; 5] = [
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"upgrade",
];

/// Fills `fields` from the head `out`: `:status`, then its fields as slices of it (at most
/// [`MAX_FIELDS`]; nghttp2 lowercases the names it copies), and `places` with where each lies.
/// Returns how many fields were written and where the head ends (a generated body follows it).
pub(super) fn response_fields<'a>(
    out: &'a [u8],
    fields: &mut [Header<'a>; MAX_FIELDS + 1],
    places: &mut [Place; MAX_FIELDS + 1],
) -> (usize, usize) {
    // A head is short (LAST_HEAD_MAX and less is kept): places past u16 are never used.
    let at16 = |i: usize| i.min(usize::from(u16::MAX)) as u16;
    // One pass finds the fields, eight bytes at a time.
    fields[0] = Header::static_name(b":status", &out[9..12]);
    places[0] = Place {
        known: Some(b":status"),
        name: (0, 0),
        value: (9, 12),
    };
    let mut n = 1;
    let mut at = find_byte(out, b'\n').map_or(out.len(), |p| p + 1);
    while let Some(nl) = find_byte(&out[at..], b'\n') {
        let line = &out[at..at + nl];
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        at += nl + 1;
        if line.is_empty() {
            break; // the blank line: the body follows
        }
        let Some(colon) = find_byte(line, b':') else {
            continue;
        };
        let name = &line[..colon];
        if n > MAX_FIELDS {
            continue;
        }
        let value = line[colon + 1..].trim_ascii_start();
        // A name the responder writes on most answers is not connection-specific: looked up
        // first, it spares the other names' comparisons.
        let known = known_name(name);
        fields[n] = match known {
            Some(known) => Header::static_name(known, value),
            None if CONNECTION_SPECIFIC
                .iter()
                .any(|c| c.eq_ignore_ascii_case(name)) =>
            {
                continue
            }
            None => Header::new(name, value),
        };
        let line_at = at - nl - 1;
        let value_at = line_at + (value.as_ptr() as usize - line.as_ptr() as usize);
        places[n] = Place {
            known,
            name: (at16(line_at), at16(line_at + colon)),
            value: (at16(value_at), at16(value_at + value.len())),
        };
        n += 1;
    }
    (n, at)
}

/// A cached representation's head as fields: `:status` (200, 206 or 304, as `cached` says),
/// `date`, then its prebuilt fields (built with its HTTP/1.1 head, `files/cache/build.rs`),
/// and a 206's range and length, whose values lie in `out`. Nothing is read or compared, and
/// the prebuilt values are handed over without a copy (NO_COPY); `date` and a 206's values,
/// rewritten for the next response, are copied. Returns how many fields were written.
///
/// # Safety
/// If the fields are submitted to a session, `prebuilt` must stay alive (it is immutable)
/// until nghttp2 packs the HEADERS frame or the stream is closed: the caller keeps an `Rc` of
/// it in the stream's slot until the stream is released.
pub(super) unsafe fn cached_fields<'a>(
    date: &'a [u8],
    prebuilt: &'a ReprFields,
    cached: Cached,
    out: &'a [u8],
    fields: &mut [Header<'a>; MAX_FIELDS + 1],
) -> usize {
    // The status is the head's: the variant names both, so they cannot disagree.
    let code: &'static [u8] = match cached {
        Cached::Full => b"200",
        Cached::Partial { .. } => b"206",
        Cached::NotModified => b"304",
    };
    fields[0] = Header::static_name(b":status", code);
    fields[1] = Header::static_name(b"date", date);
    let mut n = 2;
    // Room is left for a 206's two fields.
    for (name, value) in prebuilt.fields(cached).take(MAX_FIELDS - 3) {
        // SAFETY: `name` is static and `value` lies in `prebuilt`, which this function's
        // caller keeps alive and unchanged while nghttp2 may read it (see # Safety).
        fields[n] = unsafe { Header::no_copy(name, value) };
        n += 1;
    }
    if let Cached::Partial {
        content_range: (a, b),
        content_length: (c, d),
    } = cached
    {
        fields[n] = Header::static_name(b"content-range", &out[a..b]);
        fields[n + 1] = Header::static_name(b"content-length", &out[c..d]);
        n += 2;
    }
    n
}

/// Heads longer than this are not kept for the next (the responder's usual head is ~250 bytes).
const LAST_HEAD_MAX: usize = 1024;

/// Where a field of the last head lies: its name static or a range of the head, its value a
/// range of the head.
#[derive(Clone, Copy)]
pub(super) struct Place {
    known: Option<&'static [u8]>,
    name: (u16, u16),
    value: (u16, u16),
}

/// The last head converted, kept (its bytes and its fields' places) to convert the next head
/// that equals it by the places alone.
pub(super) struct LastHead {
    bytes: Vec<u8>,
    places: [Place; MAX_FIELDS + 1],
    n: usize,
}

impl Place {
    const NONE: Place = Place {
        known: None,
        name: (0, 0),
        value: (0, 0),
    };
}

impl LastHead {
    pub(super) fn new() -> LastHead {
        LastHead {
            bytes: Vec::new(),
            places: [Place::NONE; MAX_FIELDS + 1],
            n: 0,
        }
    }

    /// Bytes it holds beside itself (the tests that bound what a connection keeps, the bound
    /// on a thread's spare request storage).
    pub(super) fn capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// [`response_fields`], by the places of the last head if `out` starts with it (its blank
    /// line included, so the whole head is the same), else by reading `out` and keeping it if
    /// `may_replace`.
    ///
    /// A head equal to the last one gets the values of the kept copy without nghttp2 copying
    /// them (NO_COPY; known names are static): nghttp2 reads a HEADERS frame's fields when it
    /// packs the frame, as it takes it from its output queue, and never after. So the caller
    /// passes `may_replace` true only when the session's output queue is empty (no frame that
    /// points at the kept copy waits), and the session is dropped before this (field order in
    /// `H2`).
    pub(super) fn fields<'a>(
        &'a mut self,
        out: &'a [u8],
        fields: &mut [Header<'a>; MAX_FIELDS + 1],
        may_replace: bool,
    ) -> (usize, usize) {
        let len = self.bytes.len();
        if len > 0 && out.len() >= len && out[..len] == self.bytes[..] {
            let kept = &self.bytes[..];
            let range = |(a, b): (u16, u16)| &kept[usize::from(a)..usize::from(b)];
            for (field, p) in fields.iter_mut().zip(&self.places[..self.n]) {
                *field = match p.known {
                    // SAFETY: the value lies in `self.bytes`, which is changed only when
                    // `may_replace` says no submitted frame still points at it (see above),
                    // and outlives the session; the name is static and lowercase.
                    Some(known) => unsafe { Header::no_copy(known, range(p.value)) },
                    None => Header::new(range(p.name), range(p.value)),
                };
            }
            return (self.n, len);
        }
        if !may_replace {
            let mut places = [Place::NONE; MAX_FIELDS + 1];
            return response_fields(out, fields, &mut places);
        }
        let (n, at) = response_fields(out, fields, &mut self.places);
        self.bytes.clear();
        self.n = 0;
        if at > LAST_HEAD_MAX || at < out.len() {
            // Too long to keep, or a generated body follows (an error page, a listing: not
            // the answer that repeats).
            return (n, at);
        }
        self.n = n;
        self.bytes.extend_from_slice(&out[..at]);
        (n, at)
    }

    /// Whether a head equal to `head` is kept (for the tests).
    #[cfg(test)]
    pub(super) fn keeps(&self, head: &[u8]) -> bool {
        self.n > 0 && self.bytes == head
    }
}

/// The lowercase static form of a field name as the responder writes it (a 200's fields, the
/// common ones): nghttp2 then neither copies nor lowercases it. One comparison each, of the
/// exact spelling; any other name is copied and lowercased by nghttp2.
pub(super) fn known_name(name: &[u8]) -> Option<&'static [u8]> {
    let (spelled, known): (&[u8], &'static [u8]) = match name.len() {
        4 if name[0] == b'D' => (b"Date", b"date"),
        4 => (b"ETag", b"etag"),
        6 => (b"Server", b"server"),
        12 => (b"Content-Type", b"content-type"),
        13 if name[0] == b'A' => (b"Accept-Ranges", b"accept-ranges"),
        13 => (b"Last-Modified", b"last-modified"),
        14 => (b"Content-Length", b"content-length"),
        _ => return None,
    };
    (name == spelled).then_some(known)
}

/// The first `byte` in `hay`, looked for eight bytes at a time (a head's lines are tens of
/// bytes: a byte-at-a-time search was the largest item of an answer's profile).
pub(in crate::protocol) fn find_byte(hay: &[u8], byte: u8) -> Option<usize> {
    const LOW: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let pattern = LOW * u64::from(byte);
    let mut chunks = hay.chunks_exact(8);
    for (i, chunk) in chunks.by_ref().enumerate() {
        let x = u64::from_le_bytes(chunk.try_into().expect("8 bytes")) ^ pattern;
        // A zero byte of x is a match; its lowest one sets the lowest flagged bit (the flags
        // of bytes above it may be false, never those below).
        let found = x.wrapping_sub(LOW) & !x & HIGH;
        if found != 0 {
            return Some(i * 8 + (found.trailing_zeros() / 8) as usize);
        }
    }
    let tail = chunks.remainder();
    let base = hay.len() - tail.len();
    tail.iter().position(|&c| c == byte).map(|p| base + p)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field's name and value, owned.
    type Pair = (Vec<u8>, Vec<u8>);

    fn convert(last: &mut LastHead, out: &[u8]) -> (Vec<Pair>, usize) {
        let mut fields = [Header::new(b"", b""); MAX_FIELDS + 1];
        let (n, at) = last.fields(out, &mut fields, true);
        let pairs = fields[..n]
            .iter()
            .map(|f| (f.name().to_vec(), f.value().to_vec()));
        (pairs.collect(), at)
    }

    /// A head converted by the last one's places gives what reading it gives, and a head that
    /// differs anywhere (a byte of a value, a field more) is read again.
    #[test]
    fn a_repeated_head_converts_as_read_and_a_changed_one_is_read_again() {
        let head: &[u8] = b"HTTP/1.1 200 OK\r\nDate: Thu, 01 Jan 2026 00:00:00 GMT\r\n\
            Server: flint\r\nX-Other:  v\r\nConnection: keep-alive\r\nETag: \"1-2\"\r\n\
            Content-Length: 5\r\n\r\n";
        let mut fresh = LastHead::new();
        let expected = convert(&mut fresh, head);
        let names: Vec<&[u8]> = expected.0.iter().map(|(n, _)| &n[..]).collect();
        let want: [&[u8]; 6] = [
            b":status",
            b"date",
            b"server",
            b"X-Other",
            b"etag",
            b"content-length",
        ];
        assert_eq!(
            names, want,
            "connection-specific left out, known names lowercase"
        );
        assert_eq!(expected.0[3].1, b"v");
        assert_eq!(expected.1, head.len());
        // Again, from another buffer with the same bytes: by the places.
        let mut last = LastHead::new();
        convert(&mut last, head);
        assert_eq!(last.n, 6, "kept");
        let copy = head.to_vec();
        assert_eq!(convert(&mut last, &copy), expected);
        // The same head with a body after it (an error page): the head's fields, its end.
        let mut with_body = head.to_vec();
        with_body.extend_from_slice(b"page!");
        assert_eq!(convert(&mut last, &with_body), expected);
        // One byte changed: read again, and that head kept.
        let changed = String::from_utf8_lossy(head).replace("1-2", "1-3");
        let (fields, _) = convert(&mut last, changed.as_bytes());
        assert_eq!(fields[4].1, b"\"1-3\"");
        assert_eq!(convert(&mut last, changed.as_bytes()).0[4].1, b"\"1-3\"");
        // A field more: read again, not matched by the shorter head's prefix.
        let more = String::from_utf8_lossy(head).replace("\r\n\r\n", "\r\nVary: a\r\n\r\n");
        assert_eq!(convert(&mut last, more.as_bytes()).0.len(), 7);
    }

    /// While frames wait in the session's queue (which may point at the kept head), a head
    /// that differs is read, not kept, and the kept one stays as it was.
    #[test]
    fn the_kept_head_is_not_replaced_while_frames_may_point_at_it() {
        let a: &[u8] = b"HTTP/1.1 200 OK\r\nETag: \"a\"\r\n\r\n";
        let b: &[u8] = b"HTTP/1.1 200 OK\r\nETag: \"bb\"\r\nServer: flint\r\n\r\n";
        let mut last = LastHead::new();
        convert(&mut last, a);
        {
            let mut fields = [Header::new(b"", b""); MAX_FIELDS + 1];
            let (n, at) = last.fields(b, &mut fields, false);
            assert_eq!((n, at), (3, b.len()));
            assert_eq!(fields[1].value(), b"\"bb\"");
            assert_eq!(fields[2].name(), b"server");
        }
        assert!(last.keeps(a), "the kept head unchanged");
        // And still used: a value of the kept head is handed over from the kept copy, not
        // from `out`.
        let copy = a.to_vec();
        let mut fields = [Header::new(b"", b""); MAX_FIELDS + 1];
        let (n, _) = last.fields(&copy, &mut fields, false);
        assert_eq!((n, fields[1].value()), (2, &b"\"a\""[..]));
        let in_copy = copy.as_ptr_range().contains(&fields[1].value().as_ptr());
        assert!(!in_copy, "the value is the kept copy's");
    }

    /// A cached file's head as its prebuilt fields is what reading its HTTP/1.1 head gives
    /// (nghttp2 lowercases the names it copies): a 200, a 206 and a 304, digests on, for GET
    /// and HEAD, of the file and of its precompressed sibling (Vary, Content-Encoding).
    #[test]
    fn a_cached_files_prebuilt_fields_are_those_of_its_http1_head() {
        use crate::response::Head;
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("a.txt"), b"hello world").unwrap();
        std::fs::write(root.path().join("a.txt.gz"), b"\x1f\x8b gzipped").unwrap();
        let config = crate::config::Config {
            root: root.path().to_path_buf(),
            digest: true,
            precompressed: true,
            ..Default::default()
        };
        let mut responder = crate::respond::Responder::new(&config).unwrap();
        let limits = wire::RequestLimits {
            max_request_line: config.max_request_line,
            max_head_bytes: config.max_header_bytes,
            max_headers: config.max_headers,
        };
        let (date, now) = (b"Mon, 23 Nov 2026 14:00:00 GMT", std::time::Instant::now());
        let lower = |f: &Header<'_>| (f.name().to_ascii_lowercase(), f.value().to_vec());
        let field = |fields: &[(Vec<u8>, Vec<u8>)], name: &[u8]| {
            (fields.iter().find(|(n, _)| n == name)).map(|(_, v)| v.clone())
        };
        for method in ["GET", "HEAD"] {
            for accept in ["", "Accept-Encoding: gzip\r\n"] {
                let gzip = !accept.is_empty();
                let mut etag = String::new();
                for (status, extra) in [(200, ""), (206, "Range: bytes=2-4\r\n"), (304, "etag")] {
                    // HEAD has no range (RFC 9110 14.2): a whole head.
                    let status = if method == "HEAD" && status == 206 {
                        200
                    } else {
                        status
                    };
                    let extra = match extra {
                        "etag" => format!("If-None-Match: {etag}\r\n"),
                        _ => extra.to_string(),
                    };
                    let head =
                        format!("{method} /a.txt HTTP/1.1\r\nHost: t\r\n{accept}{extra}\r\n");
                    let what = format!("{method} gzip={gzip} {status}");
                    let req = wire::parse_request(head.as_bytes(), &limits)
                        .unwrap()
                        .unwrap();
                    let mut text = Vec::new();
                    let reply = responder.respond(&req, date, now, &mut text);
                    assert_eq!(reply.status, status, "{what}");
                    assert!(matches!(reply.head, Head::Text));
                    let mut read = [Header::new(b"", b""); MAX_FIELDS + 1];
                    let mut places = [Place::NONE; MAX_FIELDS + 1];
                    let (n, _) = response_fields(&text, &mut read, &mut places);
                    let read: Vec<_> = read[..n].iter().map(lower).collect();
                    if status == 200 {
                        etag = String::from_utf8(field(&read, b"etag").unwrap()).unwrap();
                    }
                    let mut out = Vec::new();
                    let reply = responder.respond_as_fields(&req, date, now, &mut out);
                    assert_eq!(reply.status, status, "{what}");
                    let Head::Cached(prebuilt, cached) = &reply.head else {
                        panic!("{what}: a cached file's head comes prebuilt");
                    };
                    let mut built = [Header::new(b"", b""); MAX_FIELDS + 1];
                    // SAFETY: the fields are compared, never submitted to a session.
                    let m = unsafe { cached_fields(date, prebuilt, *cached, &out, &mut built) };
                    let built: Vec<_> = built[..m].iter().map(lower).collect();
                    assert_eq!(built, read, "{what}");
                    assert!(built.len() > 4, "{what}: {built:?}");
                    // Both representations vary; only the sibling's says its coding.
                    assert_eq!(
                        field(&built, b"vary").as_deref(),
                        Some(&b"Accept-Encoding"[..])
                    );
                    let coding = field(&built, b"content-encoding");
                    let expected = (gzip && status != 304).then(|| b"gzip".to_vec());
                    assert_eq!(coding, expected, "{what}");
                }
            }
        }
    }

    /// A head followed by a generated body, or longer than the limit, is not kept.
    #[test]
    fn heads_with_a_body_or_too_long_are_not_kept() {
        let mut last = LastHead::new();
        convert(
            &mut last,
            b"HTTP/1.1 404 Not Found\r\nServer: flint\r\n\r\npage",
        );
        assert_eq!((last.n, last.bytes.len()), (0, 0));
        let long = format!(
            "HTTP/1.1 200 OK\r\nX-Long: {}\r\n\r\n",
            "a".repeat(LAST_HEAD_MAX)
        );
        let (fields, at) = convert(&mut last, long.as_bytes());
        assert_eq!((fields.len(), at), (2, long.len()));
        assert_eq!((last.n, last.bytes.len()), (0, 0));
    }
}
