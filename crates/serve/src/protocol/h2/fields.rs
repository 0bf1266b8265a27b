//! A response head as HTTP/2 fields, handed to nghttp2 as the responder and the gateways built
//! it, nothing read back from text: `:status`, then a cached file's prebuilt fields
//! (`crate::response`, built with its HTTP/1.1 head per file version) or the [`Fields`] of a
//! head built per request (error pages, redirects, listings, a program's or an upstream's
//! head). The names the server knows are static and lowercase (nghttp2 neither copies nor
//! lowercases them); a program's go as their lowercase copy. No connection-specific
//! field (RFC 9113 8.2.2) is in a [`Fields`]: HTTP/1.1's encoder alone writes those.

use http2::Header;

use crate::response::{Cached, Fields, Name, ReprFields};

/// Most response fields passed to nghttp2 (the responder writes about a dozen).
pub(super) const MAX_FIELDS: usize = 32;

/// `status` (100 to 599) as its three digits.
pub(super) fn status_code(status: u16) -> [u8; 3] {
    let digit = |n: u16| b'0' + (n % 10) as u8;
    [digit(status / 100), digit(status / 10), digit(status)]
}

/// A field of a [`Fields`]: a known name static, any other copied by nghttp2; the value
/// copied.
fn field<'a>(name: Name<'a>, value: &'a [u8]) -> Header<'a> {
    match name {
        Name::Known(known) => Header::static_name(known.lower(), value),
        Name::Other { lower, .. } => Header::new(lower, value),
    }
}

/// A head the responder wrote as [`Fields`]: `:status` (`code`), then its fields (Date first).
/// Returns how many fields were written.
pub(super) fn written_fields<'a>(
    code: &'a [u8; 3],
    written: &'a Fields,
    fields: &mut [Header<'a>; MAX_FIELDS + 1],
) -> usize {
    fields[0] = Header::static_name(b":status", code);
    let mut n = 1;
    for (name, value) in written.iter().take(MAX_FIELDS) {
        fields[n] = field(name, value);
        n += 1;
    }
    n
}

/// Room for a head's fields as many as it has, kept empty between heads so that its
/// allocation serves the next (a program may send any number of fields, `gateway/head.rs`).
pub(super) type FieldRoom = Vec<Header<'static>>;

/// `room`'s allocation as an empty list of fields borrowing for `'a` (a `Header` is covariant
/// in its lifetime). Give it back with [`give_back`].
pub(super) fn borrow_room<'a>(room: &mut FieldRoom) -> Vec<Header<'a>> {
    room.clear();
    std::mem::take(room)
}

/// The allocation of `fields` back as empty room. A `Header`'s layout does not depend on its
/// lifetime, so std collects in place: nothing is allocated or freed (a test holds to it).
pub(super) fn give_back(mut fields: Vec<Header<'_>>) -> FieldRoom {
    fields.clear();
    fields
        .into_iter()
        .map(|_| unreachable!("emptied"))
        .collect()
}

/// A program's or an upstream's head (`gateway/head.rs`) into `fields` (emptied first):
/// `:status` (`code`), `date`, `server`, `alt-svc` when HTTP/3 is served, all its fields,
/// then its `content-length` if one is to be said.
pub(super) fn gateway_fields<'a>(
    code: &'a [u8; 3],
    date: &'a [u8],
    (server, alt_svc): (&'a [u8], Option<&'a [u8]>),
    program: &'a Fields,
    content_length: Option<&'a [u8]>,
    fields: &mut Vec<Header<'a>>,
) {
    fields.clear();
    fields.push(Header::static_name(b":status", code));
    fields.push(Header::static_name(b"date", date));
    fields.push(Header::static_name(b"server", server));
    if let Some(alt_svc) = alt_svc {
        fields.push(Header::static_name(b"alt-svc", alt_svc));
    }
    fields.extend(program.iter().map(|(name, value)| field(name, value)));
    if let Some(length) = content_length {
        fields.push(Header::static_name(b"content-length", length));
    }
}

/// A cached representation's head as fields: `:status` (200, 206 or 304, as `cached` says),
/// `date`, then its prebuilt fields (built with its HTTP/1.1 head, `files/cache/build.rs`),
/// then `written` (a 206's range and length). Nothing is read or compared, and the prebuilt
/// values are handed over without a copy (NO_COPY); `date` and the written values, rewritten
/// for the next response, are copied. Returns how many fields were written.
///
/// # Safety
/// If the fields are submitted to a session, `prebuilt` must stay alive (it is immutable)
/// until nghttp2 packs the HEADERS frame or the stream is closed: the caller keeps an `Rc` of
/// it in the stream's slot until the stream is released.
pub(super) unsafe fn cached_fields<'a>(
    date: &'a [u8],
    prebuilt: &'a ReprFields,
    cached: Cached,
    written: &'a Fields,
    fields: &mut [Header<'a>; MAX_FIELDS + 1],
) -> usize {
    // The status is the head's: the variant names both, so they cannot disagree.
    let code: &'static [u8] = match cached {
        Cached::Full => b"200",
        Cached::Partial => b"206",
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
    if written.is_empty() {
        return n; // a 200's or a 304's: nothing written per response but Date
    }
    for (name, value) in written.iter().take(MAX_FIELDS + 1 - n) {
        fields[n] = field(name, value);
        n += 1;
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::respond::{Output, Responder};
    use crate::response::Head;

    /// A field's name and value, owned.
    type Pair = (Vec<u8>, Vec<u8>);

    /// An HTTP/1.1 head's `:status` and fields, names lowercased, connection-specific ones
    /// left out (what a client of either protocol reads); and where its body starts.
    fn read_text(head: &[u8]) -> (Vec<Pair>, usize) {
        let end = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
        let mut lines = head[..end - 4].split(|&b| b == b'\n');
        let status = lines.next().unwrap()[9..12].to_vec();
        let mut pairs = vec![(b":status".to_vec(), status)];
        for line in lines {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':').unwrap();
            let name = line[..colon].to_ascii_lowercase();
            if name != b"connection" {
                pairs.push((name, line[colon + 2..].to_vec()));
            }
        }
        (pairs, end)
    }

    fn pairs(fields: &[Header<'_>]) -> Vec<Pair> {
        let lower = |f: &Header<'_>| (f.name().to_ascii_lowercase(), f.value().to_vec());
        fields.iter().map(lower).collect()
    }

    fn responder(root: &std::path::Path, autoindex: bool) -> (Responder, wire::RequestLimits) {
        std::fs::write(root.join("a.txt"), b"hello world").unwrap();
        std::fs::write(root.join("a.txt.gz"), b"\x1f\x8b gzipped").unwrap();
        std::fs::create_dir_all(root.join("d/e")).unwrap();
        std::fs::write(root.join("d/x y.txt"), b"x").unwrap();
        let config = crate::config::Config {
            root: root.to_path_buf(),
            digest: true,
            precompressed: true,
            autoindex,
            ..Default::default()
        };
        let limits = wire::RequestLimits {
            max_request_line: config.max_request_line,
            max_head_bytes: config.max_header_bytes,
            max_headers: config.max_headers,
        };
        (Responder::new(&config).unwrap(), limits)
    }

    /// Every head the responder builds per request (error pages, a redirect, a listing, a
    /// 416, a refused method, a HEAD's) is as fields what it is as HTTP/1.1 text, field for
    /// field and in order, with the same generated body; and none carries a
    /// connection-specific field.
    #[test]
    fn built_heads_as_fields_are_their_http1_heads() {
        let root = tempfile::tempdir().unwrap();
        let (date, now) = (b"Mon, 23 Nov 2026 14:00:00 GMT", std::time::Instant::now());
        for autoindex in [false, true] {
            let (mut responder, limits) = responder(root.path(), autoindex);
            for request in [
                "GET /missing HTTP/1.1\r\nHost: t\r\n\r\n",
                "HEAD /missing HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /missing HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
                "GET /missing HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                "POST /a.txt HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /d HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /d/ HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /a.txt HTTP/1.1\r\nHost: t\r\nRange: bytes=100-\r\n\r\n",
                "GET /a.txt HTTP/1.1\r\nHost: t\r\nIf-Match: \"other\"\r\n\r\n",
                "GET /%2e%2e/x HTTP/1.1\r\nHost: t\r\n\r\n",
                "GET /a.txt HTTP/1.1\r\n\r\n",
            ] {
                let req = wire::parse_request(request.as_bytes(), &limits)
                    .unwrap()
                    .unwrap();
                let mut text = Vec::new();
                let reply = responder.respond(&req, date, now, &mut text);
                let (read, at) = read_text(&text);
                let (mut head, mut body) = (Fields::new(), b"stale".to_vec());
                let out = Output::Fields {
                    head: &mut head,
                    body: &mut body,
                };
                let as_fields = responder.respond(&req, date, now, out);
                assert_eq!(as_fields.status, reply.status, "{request}");
                assert!(matches!(as_fields.head, Head::Written), "{request}");
                let code = status_code(as_fields.status);
                let mut built = [Header::new(b"", b""); MAX_FIELDS + 1];
                let n = written_fields(&code, &head, &mut built);
                assert_eq!(pairs(&built[..n]), read, "{request}");
                assert_eq!(body, text[at..], "{request}: the same generated body");
                assert!(
                    !built[..n].iter().any(|f| f.name() == b"connection"),
                    "{request}"
                );
            }
        }
    }

    /// A program's head: its fields after Date and Server, names lowercase, its length last.
    #[test]
    fn a_programs_head_is_status_date_server_its_fields_and_its_length() {
        let mut program = Fields::new();
        program.push_other(b"Content-Type", b"text/plain");
        program.push_other(b"X-A", b"1");
        let code = status_code(201);
        let mut fields = vec![Header::new(b"stale", b"")];
        gateway_fields(
            &code,
            b"now",
            (b"flint", None),
            &program,
            Some(b"5"),
            &mut fields,
        );
        let want: Vec<Pair> = [
            (":status", "201"),
            ("date", "now"),
            ("server", "flint"),
            ("content-type", "text/plain"),
            ("x-a", "1"),
            ("content-length", "5"),
        ]
        .iter()
        .map(|(n, v)| (n.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
        assert_eq!(pairs(&fields), want);
        assert_eq!(status_code(404), *b"404");
    }

    /// However many fields a program gives, all go, in the same reused room.
    #[test]
    fn a_programs_fields_all_go_in_reused_room() {
        let mut program = Fields::new();
        let values: Vec<String> = (0..2 * MAX_FIELDS).map(|i| format!("c{i}")).collect();
        for v in &values {
            program.push_other(b"Set-Cookie", v.as_bytes());
        }
        let code = status_code(200);
        let mut room = FieldRoom::new();
        for _ in 0..2 {
            let mut fields = borrow_room(&mut room);
            gateway_fields(&code, b"now", (b"flint", None), &program, None, &mut fields);
            let cookies: Vec<&[u8]> = (fields.iter())
                .filter(|f| f.name() == b"set-cookie")
                .map(|f| f.value())
                .collect();
            assert_eq!(
                cookies,
                values.iter().map(|v| v.as_bytes()).collect::<Vec<_>>()
            );
            assert_eq!(fields.len(), 3 + values.len());
            let (at, capacity) = (fields.as_ptr() as usize, fields.capacity());
            room = give_back(fields);
            // Given back without a copy: the next head uses the same allocation.
            assert!(room.is_empty());
            assert_eq!((room.as_ptr() as usize, room.capacity()), (at, capacity));
        }
    }

    /// A cached file's head as its prebuilt fields is what reading its HTTP/1.1 head gives
    /// (nghttp2 lowercases the names it copies): a 200, a 206 and a 304, digests on, for GET
    /// and HEAD, of the file and of its precompressed sibling (Vary, Content-Encoding).
    #[test]
    fn a_cached_files_prebuilt_fields_are_those_of_its_http1_head() {
        let root = tempfile::tempdir().unwrap();
        let (mut responder, limits) = responder(root.path(), false);
        let (date, now) = (b"Mon, 23 Nov 2026 14:00:00 GMT", std::time::Instant::now());
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
                    assert!(matches!(reply.head, Head::Written));
                    let (read, _) = read_text(&text);
                    if status == 200 {
                        etag = String::from_utf8(field(&read, b"etag").unwrap()).unwrap();
                    }
                    let (mut written, mut body) = (Fields::new(), Vec::new());
                    let out = Output::Fields {
                        head: &mut written,
                        body: &mut body,
                    };
                    let reply = responder.respond(&req, date, now, out);
                    assert_eq!(reply.status, status, "{what}");
                    let Head::Cached(prebuilt, cached) = &reply.head else {
                        panic!("{what}: a cached file's head comes prebuilt");
                    };
                    let mut built = [Header::new(b"", b""); MAX_FIELDS + 1];
                    // SAFETY: the fields are compared, never submitted to a session.
                    let m = unsafe { cached_fields(date, prebuilt, *cached, &written, &mut built) };
                    let built = pairs(&built[..m]);
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
}
