//! Writing heads: status lines, header lines, and requests, appended to a caller's buffer.
//!
//! CONTRACT: `reason(status: u16) -> &'static str`; `write_status_line(out: &mut Vec<u8>, v: Version, status: u16)`;
//! `write_header(out, name: &[u8], value: &[u8])`; `write_request(out, method: &str, target: &str, host: &str, v: Version, keep_alive: bool)`.
