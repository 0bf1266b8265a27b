//! What a protocol read of a request beyond [`Request`], for a gateway: the method as sent,
//! the protocol as the client spoke it, the body's length and every field. Each protocol makes
//! one as it hands a request over (HTTP/1.x's from its head, [`asked_h1`]; HTTP/2's from its
//! stream's fields); CGI's meta-variables (`cgi.rs`) and the proxy's request head
//! (`proxy/request.rs`) read it, so neither imports the other for it.

use wire::Request;

/// What a protocol read of the request beyond [`Request`]: the method as sent, the protocol
/// as the client spoke it, and every field.
pub(crate) struct Asked<'a, F> {
    pub method: &'a [u8],
    pub protocol: &'a [u8],
    /// The request body's length, when it has one.
    pub content_length: Option<u64>,
    pub fields: F,
}

/// An HTTP/1.x request's method and fields, read from its head as they are asked for (the
/// head is already validated by the parser): the proxy goes over them a few times, and a list
/// made of them would be an allocation per request.
pub(crate) fn asked_h1<'a>(
    req: &Request<'_>,
    head: &'a [u8],
) -> Asked<'a, impl Iterator<Item = (&'a [u8], &'a [u8])> + Clone> {
    let mut lines = head
        .split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .skip_while(|l| l.is_empty());
    let request_line = lines.next().unwrap_or(b"");
    let fields = lines.take_while(|l| !l.is_empty()).filter_map(|l| {
        let colon = l.iter().position(|&b| b == b':')?;
        Some((&l[..colon], wire::trim_ows(&l[colon + 1..])))
    });
    Asked {
        method: request_line.split(|&b| b == b' ').next().unwrap_or(b"GET"),
        protocol: match req.version {
            wire::Version::Http10 => b"HTTP/1.0",
            wire::Version::Http11 => b"HTTP/1.1",
        },
        content_length: req.content_length,
        fields,
    }
}
