//! Writing heads: status lines, header lines, and requests, appended to a caller's buffer.
//!
//! Writers append to a `Vec<u8>` the caller reuses, so once it has grown to a head's size nothing
//! allocates. Numbers are formatted on the stack rather than through `format!`.

use crate::request::Version;

/// What flint's client sends as `User-Agent`.
pub const USER_AGENT: &[u8] = b"flint";
/// What flint's server sends as `Server`.
pub const SERVER: &[u8] = b"flint";

/// The reason phrase for a status; unknown codes get their class's name.
pub fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        101 => "Switching Protocols",
        200 => "OK",
        201 => "Created",
        202 => "Accepted",
        204 => "No Content",
        206 => "Partial Content",
        301 => "Moved Permanently",
        302 => "Found",
        303 => "See Other",
        304 => "Not Modified",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        425 => "Too Early",
        426 => "Upgrade Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => class_reason(status),
    }
}

fn class_reason(status: u16) -> &'static str {
    match status {
        100..=199 => "Informational",
        200..=299 => "Success",
        300..=399 => "Redirection",
        400..=499 => "Client Error",
        500..=599 => "Server Error",
        _ => "Unknown",
    }
}

/// `HTTP/1.1 200 OK\r\n`. A status outside 100..=999 cannot be written as three digits and is
/// written as 500 instead (no panic on a caller's bug).
pub fn write_status_line(out: &mut Vec<u8>, v: Version, status: u16) {
    let status = if (100..=999).contains(&status) {
        status
    } else {
        500
    };
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(&[
        b' ',
        b'0' + (status / 100) as u8,
        b'0' + (status / 10 % 10) as u8,
        b'0' + (status % 10) as u8,
        b' ',
    ]);
    out.extend_from_slice(reason(status).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// `Name: value\r\n`. A CR or LF in `value` (which would end the field early and let the rest be
/// read as another header) is written as a space.
pub fn write_header(out: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    out.extend_from_slice(name);
    out.extend_from_slice(b": ");
    if value.iter().any(|&b| b == b'\r' || b == b'\n') {
        out.extend(
            value
                .iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
    } else {
        out.extend_from_slice(value);
    }
    out.extend_from_slice(b"\r\n");
}

/// `Name: 12345\r\n` without going through a `String` (Content-Length, sizes).
pub fn write_header_u64(out: &mut Vec<u8>, name: &[u8], value: u64) {
    let mut digits = [0u8; 20];
    write_header(out, name, format_u64(value, &mut digits));
}

/// The decimal digits of `n`, written at the end of `buf`.
pub fn format_u64(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[i..];
        }
    }
}

/// A bodiless request head:
/// `GET /x HTTP/1.1\r\nHost: h\r\nUser-Agent: flint\r\n\r\n`.
///
/// HTTP/1.1 adds `Connection: close` when `keep_alive` is false. HTTP/1.0 never asks for
/// keep-alive (it has no standard persistence), so it sends no Connection header either way.
pub fn write_request(
    out: &mut Vec<u8>,
    method: &str,
    target: &str,
    host: &str,
    v: Version,
    keep_alive: bool,
) {
    out.extend_from_slice(method.as_bytes());
    out.push(b' ');
    out.extend_from_slice(target.as_bytes());
    out.push(b' ');
    out.extend_from_slice(v.as_bytes());
    out.extend_from_slice(b"\r\n");
    write_header(out, b"Host", host.as_bytes());
    write_header(out, b"User-Agent", USER_AGENT);
    if v == Version::Http11 && !keep_alive {
        write_header(out, b"Connection", b"close");
    }
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_line_has_code_and_reason() {
        let mut out = Vec::new();
        write_status_line(&mut out, Version::Http11, 200);
        write_status_line(&mut out, Version::Http10, 404);
        write_status_line(&mut out, Version::Http11, 431);
        assert_eq!(
            out,
            b"HTTP/1.1 200 OK\r\nHTTP/1.0 404 Not Found\r\nHTTP/1.1 431 Request Header Fields Too Large\r\n"
        );
    }

    #[test]
    fn out_of_range_status_is_written_as_500() {
        let mut out = Vec::new();
        write_status_line(&mut out, Version::Http11, 7);
        write_status_line(&mut out, Version::Http11, 1000);
        assert_eq!(
            out,
            b"HTTP/1.1 500 Internal Server Error\r\nHTTP/1.1 500 Internal Server Error\r\n"
        );
    }

    #[test]
    fn unknown_statuses_get_their_class_reason() {
        assert_eq!(reason(299), "Success");
        assert_eq!(reason(418), "Client Error");
        assert_eq!(reason(599), "Server Error");
        assert_eq!(reason(999), "Unknown");
        assert_eq!(reason(416), "Range Not Satisfiable");
        assert_eq!(reason(505), "HTTP Version Not Supported");
    }

    #[test]
    fn header_value_cannot_inject_a_header() {
        let mut out = Vec::new();
        write_header(&mut out, b"Location", b"/a\r\nSet-Cookie: x");
        assert_eq!(out, b"Location: /a  Set-Cookie: x\r\n");
    }

    #[test]
    fn numeric_headers_are_formatted_without_allocating_a_string() {
        let mut out = Vec::new();
        write_header_u64(&mut out, b"Content-Length", 0);
        write_header_u64(&mut out, b"Content-Length", 1024);
        write_header_u64(&mut out, b"X", u64::MAX);
        assert_eq!(
            out,
            b"Content-Length: 0\r\nContent-Length: 1024\r\nX: 18446744073709551615\r\n"
        );
    }

    #[test]
    fn request_head_matches_the_contract() {
        let mut out = Vec::new();
        write_request(&mut out, "GET", "/x", "h", Version::Http11, true);
        assert_eq!(
            out,
            b"GET /x HTTP/1.1\r\nHost: h\r\nUser-Agent: flint\r\n\r\n"
        );
        out.clear();
        write_request(&mut out, "HEAD", "/x", "h:8080", Version::Http11, false);
        assert_eq!(
            out,
            b"HEAD /x HTTP/1.1\r\nHost: h:8080\r\nUser-Agent: flint\r\nConnection: close\r\n\r\n"
        );
        for keep_alive in [true, false] {
            out.clear();
            write_request(&mut out, "GET", "/", "h", Version::Http10, keep_alive);
            assert_eq!(
                out,
                b"GET / HTTP/1.0\r\nHost: h\r\nUser-Agent: flint\r\n\r\n"
            );
        }
    }
}
