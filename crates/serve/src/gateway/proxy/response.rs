//! The upstream's response head as the CGI head the protocols read (`gateway/head.rs`): its
//! status as `Status`, its fields but the hop-by-hop ones (and those its `Connection` names),
//! `Content-Length` kept only when no `Transfer-Encoding` frames the body (the body reaches
//! the protocols decoded, and they frame it again for their client). The head is already
//! validated by `wire`'s parser (httparse: no obs-fold, no bare CR); `head.rs` checks it again.

use std::io::Write;

/// Fields of the upstream's that are not passed on.
const DROPPED: &[&[u8]] = &[
    b"connection",
    b"keep-alive",
    b"proxy-connection",
    b"te",
    b"trailer",
    b"transfer-encoding",
    b"upgrade",
    b"status",
];

/// The most fields a head is read in one pass for: more (no upstream sends that many) are
/// read again for each use, as they are found.
const LISTED: usize = 32;

/// The CGI head for the upstream head `head` (its bytes up to the empty line) of status
/// `status`, into `out`.
pub(super) fn cgi_head(head: &[u8], status: u16, out: &mut Vec<u8>) {
    let fields = || {
        Lines(Some(head))
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .skip_while(|l| l.is_empty())
            .skip(1) // the status line
            .take_while(|l| !l.is_empty())
            .filter_map(|l| {
                let colon = l.iter().position(|&b| b == b':')?;
                Some((&l[..colon], wire::trim_ows(&l[colon + 1..])))
            })
    };
    // The head is walked three times (`Connection`'s names, `Transfer-Encoding`, the
    // fields): over its fields listed once, in place, when they are few enough.
    let mut listed = [(&[][..], &[][..]); LISTED];
    let mut count = 0;
    for field in fields() {
        match listed.get_mut(count) {
            Some(slot) => *slot = field,
            None => return write_cgi_head(fields, status, out),
        }
        count += 1;
    }
    write_cgi_head(|| listed[..count].iter().copied(), status, out);
}

/// [`cgi_head`] over `fields`, an iterator made anew for each walk.
fn write_cgi_head<'a, I>(fields: impl Fn() -> I, status: u16, out: &mut Vec<u8>)
where
    I: Iterator<Item = (&'a [u8], &'a [u8])>,
{
    let dropped = |name: &[u8]| DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d));
    // The names `Connection` lists, in one pass (no list made per response).
    let named = super::named::Named::gather(fields(), dropped);
    let transfer_encoding = fields().any(|(n, _)| n.eq_ignore_ascii_case(b"transfer-encoding"));
    if (100..1000).contains(&status) {
        // Three digits, as wire's parser takes them: written without the formatter.
        let digits = [status / 100, status / 10 % 10, status % 10].map(|d| b'0' + d as u8);
        out.extend_from_slice(b"Status: ");
        out.extend_from_slice(&digits);
        out.extend_from_slice(b"\r\n");
    } else {
        let _ = write!(out, "Status: {status}\r\n");
    }
    for (name, value) in fields() {
        let length = name.eq_ignore_ascii_case(b"content-length");
        let skip = dropped(name) || (length && transfer_encoding) || named.lists(name, fields());
        if !skip {
            out.extend_from_slice(name);
            out.extend_from_slice(b": ");
            out.extend_from_slice(value);
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(b"\r\n");
}

/// The lines of a head, LF off, as `split` on LF gives them, each end found with `memchr`.
#[derive(Clone)]
struct Lines<'a>(Option<&'a [u8]>);

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.0?;
        match memchr::memchr(b'\n', rest) {
            Some(lf) => {
                self.0 = Some(&rest[lf + 1..]);
                Some(&rest[..lf])
            }
            None => {
                self.0 = None;
                Some(rest)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hop_by_hop_fields_go_and_a_length_stays_unless_chunked() {
        let mut out = Vec::new();
        cgi_head(
            b"HTTP/1.1 201 Created\r\nConnection: close, X-Hop\r\nX-Hop: 1\r\nKeep-Alive: 5\r\nContent-Length: 4\r\nSet-Cookie: a\r\nSet-Cookie: b\r\nStatus: 500\r\nLocation: /x\r\n\r\n",
            201,
            &mut out,
        );
        assert_eq!(
            out,
            b"Status: 201\r\nContent-Length: 4\r\nSet-Cookie: a\r\nSet-Cookie: b\r\nLocation: /x\r\n\r\n"
        );
        out.clear();
        cgi_head(
            b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nTrailer: X\r\n\r\n",
            200,
            &mut out,
        );
        assert_eq!(out, b"Status: 200\r\n\r\n");
    }

    /// A head of more fields than are listed in one pass is written as one of fewer is.
    #[test]
    fn a_head_of_many_fields_is_written_alike() {
        let mut head = String::from("HTTP/1.1 200 OK\r\nConnection: x-hop\r\n");
        let mut want = String::from("Status: 200\r\n");
        for k in 0..2 * LISTED {
            head.push_str(&format!("X-F{k}: {k}\r\nX-Hop: h\r\n"));
            want.push_str(&format!("X-F{k}: {k}\r\n"));
        }
        head.push_str("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n");
        want.push_str("\r\n");
        let mut out = Vec::new();
        cgi_head(head.as_bytes(), 200, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), want);
    }

    /// Past the names kept in place, the `Connection` fields are looked at again: every
    /// field they name goes.
    #[test]
    fn every_field_connection_names_goes_however_many() {
        let mut head = String::from("HTTP/1.1 200 OK\r\nConnection: h1, h2, h3, h4, h5\r\n");
        head.push_str("Connection: h6, h7, h8, h9, H10\r\n");
        for k in 1..=10 {
            head.push_str(&format!("h{k}: x\r\n"));
        }
        head.push_str("h11: kept\r\nContent-Length: 0\r\n\r\n");
        let mut out = Vec::new();
        cgi_head(head.as_bytes(), 200, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "Status: 200\r\nh11: kept\r\nContent-Length: 0\r\n\r\n"
        );
    }
}
