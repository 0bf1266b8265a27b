//! A response head's header fields, for the checks, the extractions and the cookie jar: split
//! into a room made on the stack (at most [`MAX_FIELDS`]), and a look for `Set-Cookie` that
//! splits nothing, so that a head nothing reads is not split at all.

/// Header fields of a response looked at by the checks; more are ignored.
pub(super) const MAX_FIELDS: usize = 100;

/// The header fields of a response head `wire` accepted (status line first, `CRLF` between
/// lines), into `fields`; how many.
pub(super) fn split_fields<'a>(
    head: &'a [u8],
    fields: &mut [(&'a [u8], &'a [u8]); MAX_FIELDS],
) -> usize {
    let mut n = 0;
    for line in Lines(Some(head)).skip(1) {
        let Some(colon) = memchr::memchr(b':', line) else {
            continue;
        };
        if n == MAX_FIELDS {
            break;
        }
        fields[n] = (&line[..colon], line[colon + 1..].trim_ascii());
        n += 1;
    }
    n
}

/// Whether a response head has a `Set-Cookie` field (a name as [`split_fields`] takes it: a
/// line after the first that starts with `set-cookie:`, in any case). Only where the head has
/// a `k` or a `K`, found in one pass, is the name looked for, with the `k` as its eighth
/// byte: a head has few (line by line, this look was an eighth of the client's own
/// instructions per request on a workload whose checks read no field).
pub(super) fn sets_cookie(head: &[u8]) -> bool {
    const NAME: &[u8] = b"set-cookie:";
    const K_AT: usize = 7;
    memchr::memchr2_iter(b'k', b'K', head).any(|k| {
        k > K_AT
            && head[k - K_AT - 1] == b'\n'
            && head
                .get(k - K_AT..k - K_AT + NAME.len())
                .is_some_and(|name| name.eq_ignore_ascii_case(NAME))
    })
}

/// The lines of a head, each without its `LF` and a `CR` before it; what follows the last
/// `LF` is a line too (empty when the head ends with one).
struct Lines<'a>(Option<&'a [u8]>);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.0?;
        let line = match memchr::memchr(b'\n', rest) {
            Some(i) => {
                self.0 = Some(&rest[i + 1..]);
                &rest[..i]
            }
            None => {
                self.0 = None;
                rest
            }
        };
        Some(line.strip_suffix(b"\r").unwrap_or(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(head: &[u8]) -> Vec<(&[u8], &[u8])> {
        let mut room: [(&[u8], &[u8]); MAX_FIELDS] = [(&[], &[]); MAX_FIELDS];
        let n = split_fields(head, &mut room);
        room[..n].to_vec()
    }

    #[test]
    fn a_head_splits_into_its_fields_after_the_status_line() {
        let head =
            b"HTTP/1.1 200 OK\r\nServer: flint\r\nX-Empty:\r\nContent-Type:  text/html \r\n\r\n";
        let want: Vec<(&[u8], &[u8])> = vec![
            (b"Server", b"flint"),
            (b"X-Empty", b""),
            (b"Content-Type", b"text/html"),
        ];
        assert_eq!(fields(head), want);
        // A bare LF ends a line too; a line without a colon is no field.
        let want: Vec<(&[u8], &[u8])> = vec![(b"A", b"1"), (b"b", b"2")];
        assert_eq!(fields(b"HTTP/1.0 200 OK\nA: 1\nnot a field\r\nb:2"), want);
        // More fields than the room: the first MAX_FIELDS.
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..MAX_FIELDS + 5 {
            many.extend_from_slice(format!("F{i}: {i}\r\n").as_bytes());
        }
        let got = fields(&many);
        assert_eq!(got.len(), MAX_FIELDS);
        let last = MAX_FIELDS - 1;
        let want = (format!("F{last}"), last.to_string());
        assert_eq!(got[last], (want.0.as_bytes(), want.1.as_bytes()));
    }

    #[test]
    fn a_set_cookie_field_is_seen_in_any_case_and_only_as_a_field_name() {
        assert!(sets_cookie(
            b"HTTP/1.1 200 OK\r\nA: b\r\nSet-Cookie: sid=1\r\n\r\n"
        ));
        assert!(sets_cookie(b"HTTP/1.1 200 OK\r\nSET-COOKIE:sid=1\r\n\r\n"));
        assert!(sets_cookie(b"HTTP/1.1 200 OK\nset-cookie: a=b"));
        // Elsewhere than at a field name's place, or another field.
        assert!(!sets_cookie(
            b"HTTP/1.1 200 OK\r\nX-Note: Set-Cookie: no\r\n\r\n"
        ));
        assert!(!sets_cookie(b"HTTP/1.1 200 OK\r\nSet-Cookie2: a=b\r\n\r\n"));
        assert!(!sets_cookie(b"Set-Cookie: a=b\r\n\r\n"));
        assert!(!sets_cookie(b"HTTP/1.1 200 OK\r\nSet-Cook\r\n"));
        assert!(!sets_cookie(b"set-cookie: a=b\r\n\r\n"));
        assert!(!sets_cookie(b"\nset-cookie"));
        assert!(sets_cookie(b"\nset-cookie:"));
        assert!(!sets_cookie(b"HTTP/1.1 200 OK\r\nX-Set-Cookie: a\r\n\r\n"));
        assert!(!sets_cookie(
            b"HTTP/1.1 200 OK\r\nX: a\r\n set-cookie: b\r\n\r\n"
        ));
        // Whatever sets_cookie says, split_fields agrees on the name.
        let head = b"HTTP/1.1 200 OK\r\nset-COOKIE: a=b\r\n\r\n";
        assert!(fields(head)
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(b"set-cookie")));
    }

    /// The look at each `k` agrees with a line-by-line one on heads cut and broken anywhere.
    #[test]
    fn the_set_cookie_look_agrees_with_reading_line_by_line() {
        fn by_lines(head: &[u8]) -> bool {
            const NAME: &[u8] = b"set-cookie:";
            Lines(Some(head)).skip(1).any(|line| {
                line.len() >= NAME.len() && line[..NAME.len()].eq_ignore_ascii_case(NAME)
            })
        }
        let head: &[u8] =
            b"HTTP/1.1 200 OK\r\nDate: 13:06\r\nSet-Cookie: a=b\r\nsEt-cOOkie:\r\n\r\n";
        let mut seen = [0u64; 2];
        for at in 0..head.len() {
            for b in [b'\n', b'\r', b':', b'x', b' ', b'E'] {
                for variant in [
                    [&head[..at], &[b], &head[at + 1..]].concat(),
                    [&head[..at], &[b], &head[at..]].concat(),
                    [&head[..at], &head[at + 1..]].concat(),
                    head[..at].to_vec(),
                ] {
                    let want = by_lines(&variant);
                    assert_eq!(sets_cookie(&variant), want, "{variant:?}");
                    seen[usize::from(want)] += 1;
                }
            }
        }
        // Both answers came up.
        assert!(seen[0] > 0 && seen[1] > 0, "{seen:?}");
    }
}
