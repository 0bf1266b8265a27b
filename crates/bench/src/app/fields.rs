//! A response head's header fields as the checks, the extractions and the cookie jar read
//! them: walked in the head's text each time they are looked at, split into nothing, so that
//! every field the connection accepted is seen (HTTP/1's parser takes up to
//! `wire::response::MAX_RESPONSE_HEADERS`; an HTTP/2 or HTTP/3 header block is bounded only by
//! its size) with no room to fill and nothing allocated.

/// The header fields of a head: a status line, then `name: value` lines (as HTTP/1 sends
/// them, or as the client writes an HTTP/2 or HTTP/3 header block), each ending in `LF` or
/// `CRLF`. A line without a colon is no field.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fields<'a>(&'a [u8]);

impl<'a> Fields<'a> {
    /// The fields of `head` (its status line first).
    pub fn of_head(head: &'a [u8]) -> Fields<'a> {
        Fields(head)
    }

    /// Every field in order, its name as received and its value trimmed of spaces.
    pub fn iter(&self) -> impl Iterator<Item = (&'a [u8], &'a [u8])> + 'a {
        Lines(Some(self.0)).skip(1).filter_map(|line| {
            let colon = memchr::memchr(b':', line)?;
            Some((&line[..colon], line[colon + 1..].trim_ascii()))
        })
    }

    /// The first field named `name` (any case): as [`Fields::iter`] finds it, with one search
    /// for the line ends over the whole head and none for each line's colon (a field's name is
    /// what comes before its line's first colon, so only a line that starts with `name` and a
    /// colon can be it). Each check and extraction of a field looks once; searching line by
    /// line made three checks of an eight-field head cost more than the rest of the response.
    pub fn get(&self, name: &[u8]) -> Option<&'a [u8]> {
        let head = self.0;
        // No field's name holds a colon or spans lines.
        if name.iter().any(|&b| b == b':' || b == b'\n') {
            return None;
        }
        memchr::memchr_iter(b'\n', head).find_map(|lf| {
            let line = &head[lf + 1..];
            let named = line.get(name.len()) == Some(&b':')
                && line[..name.len()].eq_ignore_ascii_case(name);
            if !named {
                return None;
            }
            let value = &line[name.len() + 1..];
            let value = match memchr::memchr(b'\n', value) {
                Some(end) => &value[..end],
                None => value,
            };
            Some(value.trim_ascii())
        })
    }

    /// The values of every field named `name` (any case), in order.
    pub fn all(&self, name: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
        self.iter()
            .filter(move |(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }
}

/// The lines of a head, each without its `LF` and a `CR` before it; what follows the last
/// `LF` is a line too (empty when the head ends with one).
pub(crate) struct Lines<'a>(pub(crate) Option<&'a [u8]>);

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
        Fields::of_head(head).iter().collect()
    }

    #[test]
    fn a_head_gives_its_fields_after_the_status_line() {
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
        let f = Fields::of_head(b"HTTP/2 200\r\nset-cookie: a=1\r\nX: y\r\nSet-Cookie: b=2\r\n");
        assert_eq!(f.get(b"x"), Some(&b"y"[..]));
        assert_eq!(f.get(b"Content-Type"), None);
        assert_eq!(f.all(b"SET-COOKIE").collect::<Vec<_>>(), [b"a=1", b"b=2"]);
        assert_eq!(Fields::default().iter().count(), 0);
    }

    /// `get` finds what walking `iter` finds, in every head's shape: a name that begins
    /// another's, one in the status line or in a value, a space before the colon, a bare LF,
    /// a last line without its LF, an empty value, a name no field can have.
    #[test]
    fn get_finds_the_first_field_iter_finds() {
        let heads: [&[u8]; 7] = [
            b"HTTP/1.1 200 OK\r\nX-Yz: 1\r\nX: 2\r\nx: 3\r\n\r\n",
            b"X: status line\r\nA: X: not a name\r\nX : spaced\r\nX:\r\n",
            b"HTTP/1.0 200 OK\nx:  bare LF \nY: last",
            b"HTTP/2 200\r\n:x: odd\r\nnot a field\r\nX\r\n: empty name\r\n",
            b"HTTP/1.1 200 OK",
            b"",
            b"HTTP/1.1 200 OK\r\nX",
        ];
        let names: [&[u8]; 8] = [b"x", b"X-YZ", b"y", b"a", b"", b"X ", b"x:", b"x\ny"];
        for head in heads {
            let f = Fields::of_head(head);
            for name in names {
                let walked = f.iter().find(|(n, _)| n.eq_ignore_ascii_case(name));
                assert_eq!(
                    f.get(name),
                    walked.map(|(_, v)| v),
                    "{:?} in {:?}",
                    String::from_utf8_lossy(name),
                    String::from_utf8_lossy(head)
                );
            }
        }
    }

    #[test]
    fn every_field_is_seen_however_many() {
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..1000 {
            many.extend_from_slice(format!("F{i}: {i}\r\n").as_bytes());
        }
        let f = Fields::of_head(&many);
        assert_eq!(f.iter().count(), 1000);
        assert_eq!(f.get(b"f999"), Some(&b"999"[..]));
    }
}
