//! The server side: `wire::parse_request` over a connection's bytes, and the answers flint serve
//! gives to what it accepts.
//!
//! An input is what one client sends on one connection. It is read as the server's connection
//! loop reads it: parse a head at the start of the unread bytes, answer it, go on after it
//! (pipelining); stop at an error or at a request with a body (the server answers and closes).
//! Properties, beyond "no panic":
//! - each parse reads nothing past its buffer (the buffer ends at a guard page, see
//!   [`crate::guard`]), and every part of a parsed request is a sub-slice of its head;
//! - a head is complete only with its blank line, within the limits it was parsed under;
//! - the connection arriving in arbitrary reads (every prefix, for short inputs) gives the same
//!   requests and the same error as all of it at once: no request is accepted, refused or
//!   answered with a different status because of where the reads fell;
//! - the responder's answer to each accepted request passes [`crate::answer`]'s checks.

use wire::{parse_request, Method, Request, RequestLimits, Version};

use crate::answer::Server;
use crate::guard::with_guarded;
use crate::split::cuts;

/// Pipelined requests answered per input: enough to reach the cache-hit paths with different
/// targets, few enough to keep executions fast.
const MAX_ANSWERED: usize = 4;

/// The server's defaults, and limits small enough that short inputs cross them.
fn limit_sets() -> [RequestLimits; 2] {
    [
        RequestLimits::default(),
        RequestLimits {
            max_request_line: 40,
            max_head_bytes: 120,
            max_headers: 4,
        },
    ]
}

/// Where a part of the request lies in the connection's bytes.
type Span = (usize, usize);

/// A parsed request with its parts as offsets, so that parses of different copies compare.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Parsed {
    method: Method,
    target: Span,
    version: Version,
    keep_alive: bool,
    headers: [Option<Span>; 8],
    /// The lines of If-Match and If-None-Match.
    lists: [Vec<Span>; 2],
    content_length: Option<u64>,
    chunked: bool,
    head_len: usize,
}

/// One step of the connection: a request at an offset, or the status of the error that ends it
/// (two limits crossed at once may be named in either order; the answer is what must agree).
type Step = Result<(usize, Parsed), u16>;

/// Runs every check on one input.
pub fn check(data: &[u8]) {
    for (i, limits) in limit_sets().iter().enumerate() {
        let mut server = (i == 0).then(Server::new);
        let whole = read_connection(data, &[data.len()], limits, server.as_mut());
        let split = read_connection(data, &cuts(data), limits, None);
        assert_eq!(
            whole, split,
            "the connection read in pieces parses differently from all at once ({limits:?})"
        );
    }
}

/// The steps the server takes as `data` arrives in reads ending at `cuts`, and whether it is left
/// waiting for more. Answers the first requests when given a server.
fn read_connection(
    data: &[u8],
    cuts: &[usize],
    limits: &RequestLimits,
    mut server: Option<&mut Server>,
) -> (Vec<Step>, bool) {
    let mut steps = Vec::new();
    let mut pos = 0;
    for &end in cuts {
        while pos < end {
            let outcome = with_guarded(&data[pos..end], |buf| {
                let result = parse_request(buf, limits);
                if let Ok(Some(req)) = &result {
                    if let Some(server) = server.as_deref_mut() {
                        if steps.len() < MAX_ANSWERED {
                            server.answer(req);
                        }
                    }
                }
                result.map(|r| r.map(|req| describe(buf, &req, limits)))
            });
            match outcome {
                Ok(None) => break,
                Ok(Some(p)) => {
                    let (len, has_body) = (
                        p.head_len,
                        p.content_length.is_some_and(|n| n > 0) || p.chunked,
                    );
                    steps.push(Ok((pos, p)));
                    if has_body {
                        // The server answers and closes: the body and anything after it are
                        // never parsed.
                        return (steps, false);
                    }
                    pos += len;
                }
                Err(e) => {
                    steps.push(Err(e.status()));
                    return (steps, false);
                }
            }
        }
    }
    (steps, pos < data.len())
}

/// Checks a parsed request against its buffer and the limits; returns it as offsets.
fn describe(buf: &[u8], req: &Request<'_>, limits: &RequestLimits) -> Parsed {
    let n = req.head_len;
    assert!(n <= buf.len(), "head_len {n} past the buffer {}", buf.len());
    let head = &buf[..n];
    assert!(
        head.ends_with(b"\n\n") || head.ends_with(b"\n\r\n"),
        "a head accepted without its blank line: {:?}",
        String::from_utf8_lossy(head)
    );
    assert!(
        n <= limits.max_head_bytes,
        "head of {n} bytes accepted under {limits:?}"
    );
    let span = |part: &[u8]| -> Span {
        let start = (part.as_ptr() as usize).wrapping_sub(head.as_ptr() as usize);
        assert!(
            start <= n && part.len() <= n - start,
            "a part of the request is not inside its head"
        );
        (start, part.len())
    };
    let target = span(req.target);
    assert!(!req.target.is_empty(), "empty target accepted");
    assert!(
        !req.target.iter().any(|&b| b <= b' ' || b == 0x7f),
        "a target with a space or control byte: {:?}",
        String::from_utf8_lossy(req.target)
    );
    let line_start = leading_empty_lines(head);
    let line_end = line_start
        + head[line_start..]
            .iter()
            .position(|&b| b == b'\n')
            .expect("a head has a request line");
    assert!(
        line_start < target.0 && target.0 + target.1 <= line_end,
        "the target is not on the request line"
    );
    assert!(
        line_end - line_start <= limits.max_request_line + 1,
        "a request line over {} bytes accepted",
        limits.max_request_line
    );
    if req.chunked {
        assert!(
            req.content_length.is_none(),
            "both Content-Length and chunked accepted"
        );
        assert_eq!(
            req.version,
            Version::Http11,
            "Transfer-Encoding accepted in HTTP/1.0"
        );
    }
    let headers = [
        req.host,
        req.if_modified_since,
        req.if_unmodified_since,
        req.range,
        req.if_range,
        req.accept_encoding,
        req.user_agent,
        req.referer,
    ]
    .map(|h| h.map(span));
    let lists = [req.if_match, req.if_none_match].map(|lines| lines.iter().map(span).collect());
    Parsed {
        method: req.method,
        target,
        version: req.version,
        keep_alive: req.keep_alive,
        headers,
        lists,
        content_length: req.content_length,
        chunked: req.chunked,
        head_len: n,
    }
}

/// Bytes of CR and LF before the request line (RFC 9112 2.2 lets a server skip empty lines).
fn leading_empty_lines(head: &[u8]) -> usize {
    head.iter()
        .take_while(|&&b| b == b'\r' || b == b'\n')
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wire::RequestError;

    #[test]
    fn pipelined_requests_are_read_one_after_another() {
        let data = b"GET /a HTTP/1.1\r\nHost: x\r\n\r\nHEAD /b HTTP/1.0\r\n\r\nGET /c";
        let (steps, waiting) = read_connection(data, &[data.len()], &limit_sets()[0], None);
        assert_eq!(steps.len(), 2);
        assert!(waiting, "the third request is incomplete");
        let (pos, second) = steps[1].clone().unwrap();
        assert_eq!(pos, 28);
        assert_eq!(second.method, Method::Head);
        assert_eq!(second.target, (5, 2));
        check(data);
    }

    #[test]
    fn a_request_with_a_body_ends_the_connection() {
        let data =
            b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhiGET / HTTP/1.1\r\n\r\n";
        let (steps, waiting) = read_connection(data, &[data.len()], &limit_sets()[0], None);
        assert_eq!(steps.len(), 1);
        assert!(!waiting);
        check(data);
    }

    #[test]
    fn small_limits_refuse_what_the_defaults_accept() {
        let data = b"GET /a-rather-long-target-for-small-limits HTTP/1.1\r\nHost: x\r\n\r\n";
        let (small, _) = read_connection(data, &[data.len()], &limit_sets()[1], None);
        assert_eq!(small, vec![Err(RequestError::UriTooLong.status())]);
        check(data);
    }
}
