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

/// The CGI head for the upstream head `head` (its bytes up to the empty line) of status
/// `status`, into `out`.
pub(super) fn cgi_head(head: &[u8], status: u16, out: &mut Vec<u8>) {
    let fields = || {
        head.split(|&b| b == b'\n')
            .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
            .skip_while(|l| l.is_empty())
            .skip(1) // the status line
            .take_while(|l| !l.is_empty())
            .filter_map(|l| {
                let colon = l.iter().position(|&b| b == b':')?;
                Some((&l[..colon], wire::trim_ows(&l[colon + 1..])))
            })
    };
    let dropped = |name: &[u8]| DROPPED.iter().any(|d| name.eq_ignore_ascii_case(d));
    // The names `Connection` lists, in one pass (no list made per response).
    let named = super::named::Named::gather(fields(), dropped);
    let transfer_encoding = fields().any(|(n, _)| n.eq_ignore_ascii_case(b"transfer-encoding"));
    let _ = write!(out, "Status: {status}\r\n");
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
