//! A program's response head (RFC 3875 6.2-6.3), checked before any of it reaches a client:
//! header lines ended by LF or CRLF, up to an empty line. The fields the server owns (`Status`,
//! `Content-Length`, the hop-by-hop ones, `Date`, `Server`, `Alt-Svc`) are taken out; the
//! others are kept, validated, as [`Fields`] (names as the program spelled them) for whichever
//! protocol encodes the response.
//!
//! A line with a bare CR or a NUL, a name that is not a token, a value with a control
//! character, a folded line, a bad `Status` or `Content-Length`: the whole head is refused (the
//! caller answers 502), so no byte a program wrote can split or smuggle a response.

use std::borrow::Cow;

use crate::response::Fields;

/// Where the response's body goes when the head sends the client elsewhere.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A local path (`/x`): served by the server as if requested (a local redirect, RFC 3875
    /// 6.2.2), the program's body dropped.
    Local(Vec<u8>),
    /// An absolute URL: passed on in the `Location` field, with 302 unless `Status` says else.
    Client,
}

/// A checked head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CgiHead {
    /// The status to send: the `Status` field's, else 302 for a client redirect, else 200.
    pub status: u16,
    /// The fields to pass on.
    pub fields: Fields,
    /// The program's `Content-Length`: the body is sent with it (else chunked, or closed).
    pub content_length: Option<u64>,
    /// Its `Location`, when it gave one: a local redirect or one for the client.
    pub location: Option<Location>,
}

/// Why a head was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HeadError {
    /// The head is longer than the reader's `max` bytes (`max_header_bytes`).
    #[error("response head over the header limit")]
    TooLarge,
    /// A byte that could split or smuggle a field in the head sent on.
    #[error("CR, NUL or a control character in the response head")]
    Injection,
    /// A line that is not `name: value` with a token for a name, or a folded line.
    #[error("malformed response header line")]
    Malformed,
    /// A `Status` that is not a final status from 200 to 599.
    #[error("bad Status field")]
    BadStatus,
    /// A `Content-Length` that is not a decimal number of at most 19 digits.
    #[error("bad Content-Length field")]
    BadLength,
    /// A CGI head with none of the fields that say what the response is (RFC 3875 6.2).
    #[error("no Content-Type, Location or Status field")]
    Empty,
    /// More fields than the protocol's head takes (HTTP/3's: `http3::MAX_FIELDS`, with
    /// `:status` and the server's own).
    #[error("more response fields than an HTTP/3 head takes")]
    TooManyFields,
}

/// A checked head and the body bytes read after it: borrowed from the read when the head came
/// whole in it, else the reader's own.
pub type HeadAndRest<'d> = (CgiHead, Cow<'d, [u8]>);

/// A program's response head as it arrives: its bytes gathered until the empty line, within
/// `max` bytes. Each protocol's exchange holds one, so that every protocol reads heads alike.
#[derive(Debug)]
pub struct HeadReader {
    buf: Vec<u8>,
    max: usize,
    /// `Location: /path` is a local redirect (a program's head); false for a proxied
    /// response, whose `Location` is the upstream's and passes as it is.
    local_redirects: bool,
}

impl HeadReader {
    /// A reader taking heads of at most `max` bytes; `local_redirects` is true for a
    /// program's head, false for an upstream's.
    pub fn new(max: usize, local_redirects: bool) -> HeadReader {
        HeadReader {
            buf: Vec::new(),
            max,
            local_redirects,
        }
    }

    /// The heap bytes of a head being gathered.
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Takes `data`; once the head is whole, the checked head and the body bytes that came
    /// after it in the same reads (where they are in `data` when the head came whole in it: no
    /// copy per response). A head over `max` bytes is refused as soon as that is known.
    pub fn feed<'d>(&mut self, data: &'d [u8]) -> Result<Option<HeadAndRest<'d>>, HeadError> {
        if self.buf.is_empty() {
            // The whole head in one read (a proxied response's always is): checked where it
            // is, not copied.
            if let Some((len, body_at)) = find_end(data) {
                if len > self.max {
                    return Err(HeadError::TooLarge);
                }
                let parsed = parse(&data[..len], self.local_redirects)?;
                return Ok(Some((parsed, Cow::Borrowed(&data[body_at..]))));
            }
        }
        self.buf.extend_from_slice(data);
        let Some((len, body_at)) = find_end(&self.buf) else {
            return if surely_head(&self.buf) > self.max {
                Err(HeadError::TooLarge)
            } else {
                Ok(None)
            };
        };
        if len > self.max {
            return Err(HeadError::TooLarge);
        }
        let parsed = parse(&self.buf[..len], self.local_redirects)?;
        let rest = self.buf.split_off(body_at);
        self.buf = Vec::new();
        Ok(Some((parsed, Cow::Owned(rest))))
    }
}

/// Where the head ends in `buf`: the length of the head (its lines, without the empty line)
/// and where the body starts. `None` while the empty line has not arrived.
pub(crate) fn find_end(buf: &[u8]) -> Option<(usize, usize)> {
    let mut line_start = 0;
    for i in memchr::memchr_iter(b'\n', buf) {
        let line = &buf[line_start..i];
        if line.is_empty() || line == b"\r" {
            return Some((line_start, i + 1));
        }
        line_start = i + 1;
    }
    None
}

/// How much of `buf`, which holds no empty line yet, is head for certain: all of it but a CR
/// that starts a line, which may be the empty line's and so not count against the limit (else a
/// head exactly at the limit would pass read whole and be refused when a read ends after that
/// CR).
fn surely_head(buf: &[u8]) -> usize {
    match buf {
        [b'\r'] | [.., b'\n', b'\r'] => buf.len() - 1,
        _ => buf.len(),
    }
}

/// Parses the head's lines (`buf[..len]` from [`find_end`]); `local_redirects`: see
/// [`HeadReader`].
pub(crate) fn parse(head: &[u8], local_redirects: bool) -> Result<CgiHead, HeadError> {
    let mut out = CgiHead {
        status: 200,
        // Names and values, and lowercase copies of names: never more than twice the lines.
        fields: Fields::with_capacity(2 * head.len()),
        content_length: None,
        location: None,
    };
    let (mut status, mut content_type) = (false, false);
    let mut rest = head;
    while !rest.is_empty() {
        let (line, next) = match memchr::memchr(b'\n', rest) {
            Some(lf) => (&rest[..lf], &rest[lf + 1..]),
            None => (rest, &rest[rest.len()..]),
        };
        rest = next;
        if line.is_empty() {
            continue; // none but past the head `find_end` cut
        }
        let (name, value) = field(line)?;
        if name.eq_ignore_ascii_case(b"status") {
            out.status = parse_status(value)?;
            status = true;
            continue;
        }
        if name.eq_ignore_ascii_case(b"content-length") {
            let digits = value.len() <= 19 && !value.is_empty();
            if !digits || !value.iter().all(u8::is_ascii_digit) {
                return Err(HeadError::BadLength);
            }
            // At most 19 digits: below u64::MAX.
            let n = value
                .iter()
                .fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
            // Two lengths that disagree: which one frames the body is the question request
            // smuggling asks (RFC 9112 6.3); a repeat of the same value is harmless.
            if out.content_length.is_some_and(|first| first != n) {
                return Err(HeadError::BadLength);
            }
            out.content_length = Some(n);
            continue;
        }
        if SERVER_OWNED.iter().any(|n| name.eq_ignore_ascii_case(n)) {
            continue;
        }
        if name.eq_ignore_ascii_case(b"location") {
            // Any value that starts with "/" is RFC 3875's local-pathquery (an abs-path may
            // start with an empty segment): "//host/x" too is answered here (as "/host/x"),
            // never sent to the client as a redirect to another host. A control byte (a tab,
            // which a browser drops, reading "/\t/host" as "//host") has no place in a path.
            if local_redirects && value.first() == Some(&b'/') {
                if value.iter().any(|&b| b < 0x20 || b == 0x7f) {
                    return Err(HeadError::Injection);
                }
                out.location = Some(Location::Local(value.to_vec()));
                continue; // served here: never sent as a field
            }
            out.location = Some(Location::Client);
        }
        content_type |= name.eq_ignore_ascii_case(b"content-type");
        out.fields.push_other(name, value);
    }
    if !status && !content_type && out.location.is_none() {
        return Err(HeadError::Empty);
    }
    if !status && out.location == Some(Location::Client) {
        out.status = 302;
    }
    Ok(out)
}

/// A head line (its LF off) as a name and its value, both checked: in one pass over the name
/// up to its colon and one over the value for the lines that pass (all a well-behaved program
/// or upstream writes); a line that does not pass is looked at again, check by check, for the
/// reason it is refused.
fn field(line: &[u8]) -> Result<(&[u8], &[u8]), HeadError> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let colon = line.iter().position(|&b| !TCHAR[usize::from(b)]);
    if let Some(colon) = colon.filter(|&c| c > 0 && line[c] == b':') {
        let value = trim(&line[colon + 1..]);
        if !value.iter().any(|&b| NOT_IN_VALUE[usize::from(b)]) {
            return Ok((&line[..colon], value));
        }
    }
    refused(line)
}

/// Why `line` (CR stripped), which [`field`]'s passes did not take, is refused; the checks in
/// the order that names the reason.
#[cold]
fn refused(line: &[u8]) -> Result<(&[u8], &[u8]), HeadError> {
    if line.iter().any(|&b| b == b'\r' || b == 0) {
        return Err(HeadError::Injection);
    }
    if matches!(line.first(), Some(b' ' | b'\t')) {
        return Err(HeadError::Malformed); // obs-fold
    }
    let colon = line
        .iter()
        .position(|&b| b == b':')
        .ok_or(HeadError::Malformed)?;
    let (name, value) = (&line[..colon], trim(&line[colon + 1..]));
    if name.is_empty() || !name.iter().all(|&b| is_tchar(b)) {
        return Err(HeadError::Malformed);
    }
    if value.iter().any(|&b| (b < 0x20 && b != b'\t') || b == 0x7f) {
        return Err(HeadError::Injection);
    }
    Ok((name, value))
}

/// RFC 9110 5.6.2's token characters, by byte: a field name's.
const TCHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = is_tchar(b as u8);
        b += 1;
    }
    t
};

/// The bytes a field value may not hold, by byte: control characters but HT, and DEL (CR and
/// NUL among them).
const NOT_IN_VALUE: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        t[b] = (b < 0x20 && b != 0x09) || b == 0x7f;
        b += 1;
    }
    t
};

/// Fields the server writes itself (or that describe a connection the program does not see).
/// `Alt-Svc` names the server's own other listeners (its HTTP/3 port), which a program or an
/// upstream cannot know: theirs would send clients elsewhere, whether flint advertises its
/// own or not.
const SERVER_OWNED: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"transfer-encoding",
    b"te",
    b"trailer",
    b"upgrade",
    b"date",
    b"server",
    b"alt-svc",
];

/// `NNN reason`: a three-digit status from 100 to 599 (1xx is not a final response: refused).
fn parse_status(value: &[u8]) -> Result<u16, HeadError> {
    let digits = value.get(..3).ok_or(HeadError::BadStatus)?;
    if !digits.iter().all(u8::is_ascii_digit) || value.get(3).is_some_and(|&b| b != b' ') {
        return Err(HeadError::BadStatus);
    }
    let n = digits
        .iter()
        .fold(0u16, |n, &d| n * 10 + u16::from(d - b'0'));
    if (200..=599).contains(&n) {
        Ok(n)
    } else {
        Err(HeadError::BadStatus)
    }
}

pub(super) fn trim(mut v: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = v {
        v = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = v {
        v = rest;
    }
    v
}

/// RFC 9110 5.6.2 token characters.
const fn is_tchar(b: u8) -> bool {
    let marks = b"!#$%&'*+-.^_`|~";
    let mut i = 0;
    while i < marks.len() {
        if marks[i] == b {
            return true;
        }
        i += 1;
    }
    b.is_ascii_alphanumeric()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields as HTTP/1.1 writes them.
    fn lines(fields: &Fields) -> Vec<u8> {
        let mut out = Vec::new();
        fields.write_lines(&mut out);
        out
    }

    fn head(text: &[u8]) -> Result<CgiHead, HeadError> {
        let (len, _) = find_end(text).expect("complete");
        parse(&text[..len], true)
    }

    #[test]
    fn the_end_is_an_empty_line_after_lf_or_crlf() {
        assert_eq!(find_end(b"A: b\n\nbody"), Some((5, 6)));
        assert_eq!(find_end(b"A: b\r\n\r\nbody"), Some((6, 8)));
        assert_eq!(find_end(b"A: b\r\n"), None);
    }

    #[test]
    fn fields_pass_and_the_server_owned_ones_do_not() {
        let h =
            head(b"Content-Type: text/plain\r\nX-A:  1 \nConnection: close\nContent-Length: 5\nAlt-Svc: h3=\":9\"\n\n")
                .unwrap();
        assert_eq!(h.status, 200);
        assert_eq!(lines(&h.fields), b"Content-Type: text/plain\r\nX-A: 1\r\n");
        assert_eq!(h.content_length, Some(5));
    }

    #[test]
    fn status_and_locations() {
        assert_eq!(head(b"Status: 404 Nope\n\n").unwrap().status, 404);
        let local = head(b"Location: /a.txt\n\n").unwrap();
        assert_eq!(local.location, Some(Location::Local(b"/a.txt".to_vec())));
        assert!(local.fields.is_empty());
        // A network-path reference is no client redirect: it stays on this server.
        let two = head(b"Location: //evil.example/x\n\n").unwrap();
        assert_eq!(
            two.location,
            Some(Location::Local(b"//evil.example/x".to_vec()))
        );
        assert!(two.fields.is_empty());
        let away = head(b"Location: http://example.com/\n\n").unwrap();
        assert_eq!((away.status, away.location), (302, Some(Location::Client)));
        assert_eq!(
            head(b"Status: 301 Moved\nLocation: https://x/\n\n")
                .unwrap()
                .status,
            301
        );
    }

    #[test]
    fn a_head_at_the_limit_passes_whichever_way_it_arrives() {
        let text = b"Content-Type: text/plain\r\n\r\nbody";
        let max = text.len() - b"\r\n\r\nbody".len() + 2; // the lines, the last CRLF included
        for cut in 0..=text.len() {
            let mut r = HeadReader::new(max, true);
            let (head, body) = match r.feed(&text[..cut]).unwrap() {
                Some((head, body)) => {
                    let mut body = body.into_owned();
                    body.extend_from_slice(&text[cut..]);
                    (head, body)
                }
                None => {
                    let (head, body) = r.feed(&text[cut..]).unwrap().expect("the head is whole");
                    (head, body.into_owned())
                }
            };
            assert_eq!(
                (head.status, &lines(&head.fields)[..]),
                (200, &text[..max]),
                "cut at {cut}"
            );
            assert_eq!(body, b"body", "cut at {cut}");
        }
        let mut r = HeadReader::new(max - 1, true);
        assert_eq!(r.feed(text), Err(HeadError::TooLarge));
    }

    #[test]
    fn a_proxied_location_is_passed_not_followed() {
        let text = b"Status: 301\r\nLocation: /elsewhere\r\n\r\n";
        let (len, _) = find_end(text).unwrap();
        let h = parse(&text[..len], false).unwrap();
        assert_eq!((h.status, h.location), (301, Some(Location::Client)));
        assert_eq!(lines(&h.fields), b"Location: /elsewhere\r\n");
    }

    /// The one-pass check of a line takes what the check-by-check one takes, and refuses the
    /// rest for the same reason, whatever byte a name or a value holds.
    #[test]
    fn the_fast_check_of_a_line_agrees_with_the_check_by_check_one() {
        for b in 0..=255u8 {
            for line in [
                vec![b'X', b, b'Y', b':', b' ', b'v'],
                vec![b'X', b':', b' ', b'v', b, b'w', b' '],
                vec![b, b'X', b':', b'v'],
                vec![b'X', b':', b],
                vec![b'X', b'-', b'Y', b, b'\r'],
            ] {
                let stripped = line.strip_suffix(b"\r").unwrap_or(&line);
                assert_eq!(field(&line), refused(stripped), "{line:?}");
            }
        }
        assert_eq!(field(b"X-A:  1 \r"), Ok((&b"X-A"[..], &b"1"[..])));
        assert_eq!(field(b"\r"), Err(HeadError::Malformed));
        assert_eq!(field(b""), Err(HeadError::Malformed));
    }

    #[test]
    fn a_refused_line_is_refused_for_its_reason() {
        for (bad, why) in [
            (&b"Content-Type: a\rX-Evil: 1\n\n"[..], HeadError::Injection),
            (b"Content-Type: a\0b\n\n", HeadError::Injection),
            (b"Content-Type: a\x01\n\n", HeadError::Injection),
            (b"Content-Type: a\x7f\n\n", HeadError::Injection),
            (b"X\0: 1\nContent-Type: a\n\n", HeadError::Injection),
            (b"Bad Name: 1\nContent-Type: a\n\n", HeadError::Malformed),
            (b"Content-Type: a\n folded\n\n", HeadError::Malformed),
            (b": empty name\n\n", HeadError::Malformed),
            (b"no colon\n\n", HeadError::Malformed),
            (
                b"Content-Type: a\nContent-Length: 12x\n\n",
                HeadError::BadLength,
            ),
            (
                b"Content-Type: a\nContent-Length: 12345678901234567890\n\n",
                HeadError::BadLength,
            ),
            (
                b"Content-Type: a\nContent-Length: 5\nContent-Length: 6\n\n",
                HeadError::BadLength,
            ),
        ] {
            assert_eq!(head(bad), Err(why), "{:?}", String::from_utf8_lossy(bad));
        }
        let longest = head(b"Content-Type: a\nContent-Length: 9999999999999999999\n\n");
        assert_eq!(
            longest.unwrap().content_length,
            Some(9_999_999_999_999_999_999)
        );
        let repeated = head(b"Content-Type: a\nContent-Length: 5\nContent-Length: 5\n\n");
        assert_eq!(repeated.unwrap().content_length, Some(5));
    }

    #[test]
    fn injection_and_garbage_are_refused() {
        for bad in [
            &b"Content-Type: a\rX-Evil: 1\n\n"[..],
            b"Content-Type: a\0b\n\n",
            b"Content-Type: a\x01\n\n",
            b"Bad Name: 1\nContent-Type: a\n\n",
            b"Content-Type: a\n folded\n\n",
            b"no colon\n\n",
            b"Status: 99\n\n",
            b"Status: 100 Continue\n\n",
            b"Status: 2000\n\n",
            b"Content-Type: a\nContent-Length: -1\n\n",
            b"X-Only: 1\n\n",
            b"Location: /\t/evil.example/x\n\n",
        ] {
            assert!(head(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }
}
