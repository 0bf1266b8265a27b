//! The reader of a CGI program's response head (`serve::cgi_head::HeadReader`,
//! `crates/serve/src/gateway/head.rs`): an input is what one program writes on its stdout, read
//! under the server's default head limit and under a small one (so short inputs cross it).
//! Properties, beyond "no panic":
//! - the input arriving in arbitrary reads gives the same head, body bytes or error as all of it
//!   at once;
//! - a head is refused as too large exactly when its lines (or, with no end yet, the bytes held)
//!   pass the limit, and while it waits for more it never holds more head than the limit (a CR
//!   that may start the empty line is not head yet);
//! - the body bytes are the input after the head's empty line (the first empty line);
//! - an accepted head has a final status (200 to 599) and passes on only `Name: value` lines
//!   with token names, values with no control character (so no CR, LF or NUL), none of the fields
//!   the server writes itself, and a local `Location` only as a path on this server;
//! - an accepted head says what its lines say (`expected`): no field dropped or altered but
//!   the server's own, the status and length the program gave;
//! - nothing is read past the input (guard page, see [`crate::guard`]).

use serve::cgi_head::{CgiHead, HeadError, HeadReader, Location};
use serve::response::{Fields, Name};

use crate::guard::with_guarded;
use crate::split::cuts;

/// The server's default `max_header_bytes`.
const DEFAULT_LIMIT: usize = 16_384;

/// What a reader made of a program's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The head, and every byte after it.
    Head(CgiHead, Vec<u8>),
    Refused(HeadError),
    /// The output ended before the head did.
    Unfinished,
}

/// Runs every check on one input.
pub fn check(data: &[u8]) {
    let small = 8 + data.first().map_or(0, |&b| usize::from(b % 64));
    for max in [DEFAULT_LIMIT, small] {
        let whole = read(data, &[data.len()], max);
        let split = read(data, &cuts(data), max);
        assert_eq!(whole, split, "read in pieces, the head says something else");
        check_outcome(data, max, &whole);
    }
    with_guarded(data, |buf| {
        // A program's head (local redirects) and a proxied response's (Location passed on).
        let _ = HeadReader::new(DEFAULT_LIMIT, true).feed(buf);
        let _ = HeadReader::new(DEFAULT_LIMIT, false).feed(buf);
    });
}

/// Feeds `data` to a reader in reads ending at `cuts`, as a protocol's exchange does: until the
/// head is whole or refused.
pub fn read(data: &[u8], cuts: &[usize], max: usize) -> Outcome {
    let mut reader = HeadReader::new(max, true);
    let mut start = 0;
    for &end in cuts {
        match reader.feed(&data[start..end]) {
            Ok(None) => {
                let held = surely_head(&data[..end]);
                assert!(
                    held <= max,
                    "{held} bytes of head held under a {max}-byte limit"
                );
            }
            Ok(Some((head, rest))) => {
                let mut body = rest.into_owned();
                body.extend_from_slice(&data[end..]);
                return Outcome::Head(head, body);
            }
            Err(e) => return Outcome::Refused(e),
        }
        start = end;
    }
    Outcome::Unfinished
}

/// What any reading must agree with, from the whole input.
fn check_outcome(data: &[u8], max: usize, outcome: &Outcome) {
    let end = blank_line(data);
    let too_large = match end {
        Some((len, _)) => len > max,
        None => surely_head(data) > max,
    };
    if too_large {
        assert_eq!(*outcome, Outcome::Refused(HeadError::TooLarge));
        return;
    }
    match outcome {
        Outcome::Head(head, body) => {
            let (_, body_at) = end.expect("a head without its empty line");
            assert_eq!(
                body[..],
                data[body_at..],
                "the body is not what follows the head"
            );
            check_head(head);
            assert_eq!(
                *head,
                expected(&data[..end.expect("ended").0]),
                "misread head"
            );
        }
        Outcome::Refused(HeadError::TooLarge) => panic!("refused as too large within the limit"),
        Outcome::Refused(_) => assert!(end.is_some(), "refused before the head ended"),
        Outcome::Unfinished => assert!(end.is_none(), "the empty line was missed"),
    }
}

/// The first empty line, found the plain way: the head's length and where the body starts.
fn blank_line(data: &[u8]) -> Option<(usize, usize)> {
    let mut start = 0;
    while let Some(lf) = data[start..].iter().position(|&b| b == b'\n') {
        let line = &data[start..start + lf];
        if line.is_empty() || line == b"\r" {
            return Some((start, start + lf + 1));
        }
        start += lf + 1;
    }
    None
}

/// How much of `held` (no empty line in it) is head for certain: all of it but a CR that
/// starts a line, which may be the first byte of the empty line (not counted by the limit).
fn surely_head(held: &[u8]) -> usize {
    let at_line_start = held.len() == 1 || held.get(held.len().wrapping_sub(2)) == Some(&b'\n');
    if held.last() == Some(&b'\r') && at_line_start {
        held.len() - 1
    } else {
        held.len()
    }
}

/// Fields a program may not set: the server writes them, or they describe its connection.
const SERVER_OWNED: &[&str] = &[
    "status",
    "content-length",
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "date",
    "server",
    "alt-svc",
];

fn check_head(head: &CgiHead) {
    assert!((200..=599).contains(&head.status), "status {}", head.status);
    let mut location = false;
    for (name, value) in head.fields.iter() {
        let Name::Other { text: name, .. } = name else {
            panic!("a program's field named as the server's own: {name:?}");
        };
        assert!(
            !name.is_empty() && name.iter().all(|&b| is_tchar(b)),
            "name {name:?}"
        );
        assert!(value
            .iter()
            .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f)));
        assert!(!value.starts_with(b" ") && !value.ends_with(b" "));
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        assert!(!SERVER_OWNED.contains(&name.as_str()), "{name} passed on");
        location |= name == "location";
    }
    match &head.location {
        Some(Location::Local(path)) => {
            assert!(path.starts_with(b"/"));
            // Not even a tab: a browser drops it, reading "/\t/host" as "//host".
            assert!(path.iter().all(|&b| b >= 0x20 && b != 0x7f));
        }
        Some(Location::Client) => assert!(location, "a client redirect without its Location"),
        None => {}
    }
}

/// What an accepted head's lines say, read the plain way: each `Name: value` line kept as it is
/// (value trimmed), but for the server's own fields and a local `Location`; the status from
/// `Status`, else 302 for a client redirect, else 200; the length from `Content-Length`.
fn expected(lines: &[u8]) -> CgiHead {
    let mut head = CgiHead {
        status: 200,
        fields: Fields::new(),
        content_length: None,
        location: None,
    };
    let mut status = None;
    for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':').expect("a colon");
        let name = String::from_utf8_lossy(&line[..colon]).to_ascii_lowercase();
        let value = trim_blanks(&line[colon + 1..]);
        match name.as_str() {
            "status" => status = Some(std::str::from_utf8(&value[..3]).unwrap().parse().unwrap()),
            "content-length" => {
                head.content_length = Some(std::str::from_utf8(value).unwrap().parse().unwrap())
            }
            "location" if value.starts_with(b"/") => {
                head.location = Some(Location::Local(value.to_vec()))
            }
            _ if SERVER_OWNED.contains(&name.as_str()) => {}
            _ => {
                if name == "location" {
                    head.location = Some(Location::Client);
                }
                head.fields.push_other(&line[..colon], value);
            }
        }
    }
    head.status = match (status, &head.location) {
        (Some(s), _) => s,
        (None, Some(Location::Client)) => 302,
        (None, _) => 200,
    };
    head
}

/// A value without the spaces and tabs around it.
fn trim_blanks(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|&b| b != b' ' && b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|&b| b != b' ' && b != b'\t')
        .map_or(start, |i| i + 1);
    &v[start..end]
}

/// RFC 9110 5.6.2 token characters.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}
