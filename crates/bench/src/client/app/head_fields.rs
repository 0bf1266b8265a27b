//! Whether a response head sets a cookie, found with one look that splits nothing, so that a
//! head no check or extraction reads is not walked field by field for the cookie jar.

/// Whether a response head has a `Set-Cookie` field (a name as [`Fields`] reads it: a
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::fields::{Fields, Lines};

    fn fields(head: &[u8]) -> Vec<(&[u8], &[u8])> {
        Fields::of_head(head).iter().collect()
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
        // Whatever sets_cookie says, Fields agrees on the name.
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
