//! A response head as HTTP/2 fields: the responder writes an HTTP/1.1 head ("HTTP/1.1 200 OK",
//! "Name: value" lines, the blank line), and one pass over it yields `:status` and the fields
//! as slices of it, connection-specific ones left out (RFC 9113 8.2.2), common names in their
//! static lowercase form. Kept apart from `h2.rs`: the one place that reads the layout of the
//! head the responder writes.

use http2::Header;

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
/// [`MAX_FIELDS`]; nghttp2 lowercases the names it copies). Returns how many fields were
/// written and where the head ends (a generated body follows it).
pub(super) fn response_fields<'a>(
    out: &'a [u8],
    fields: &mut [Header<'a>; MAX_FIELDS + 1],
) -> (usize, usize) {
    // One pass finds the fields, eight bytes at a time.
    fields[0] = Header::new(b":status", &out[9..12]);
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
        fields[n] = match known_name(name) {
            Some(known) => Header::static_name(known, value),
            None if CONNECTION_SPECIFIC
                .iter()
                .any(|c| c.eq_ignore_ascii_case(name)) =>
            {
                continue
            }
            None => Header::new(name, value),
        };
        n += 1;
    }
    (n, at)
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
