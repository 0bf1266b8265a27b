//! Access logs in the Common and Combined Log Format (what nginx, Apache and lighttpd write by
//! default, and `flint serve --access-log`), plain or gzip, read into request counts.
//!
//! A line is `host ident user [time] "request" status bytes`, and in the Combined format
//! `"referer" "user-agent"` after it. Quoted fields may hold `\"` (Apache) or `\xHH` (nginx,
//! flint serve: a byte, decoded, and in a path percent-encoded unless it is printable ASCII, as
//! a browser sends it); a request target in absolute form (`GET http://h/p`) counts as its
//! path. Only a GET answered 200 or 304 is a visit to a file: other methods, redirects and
//! errors are read and left aside. A line that is not in the format is counted, and the first
//! few are kept with their line numbers so the user can see what was not understood.

use crate::Page;
use std::collections::HashMap;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;

/// Unreadable lines kept as examples.
const EXAMPLES: usize = 5;

/// A log read into counts.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Every path requested (GET, 200 or 304), in order of first request.
    pub paths: Vec<PathCount>,
    index: HashMap<String, usize>,
    /// (path index, referer) to its place in that path's `referers`: a log with many distinct
    /// Referers stays linear.
    referer_index: HashMap<(usize, String), usize>,
    /// Lines read (blank ones aside).
    pub lines: u64,
    /// Lines in neither format.
    pub unreadable: u64,
    /// The first unreadable lines: (line number, text).
    pub examples: Vec<(u64, String)>,
    /// Lines read but not a GET answered 200 or 304.
    pub other: u64,
}

/// How often one path was requested, and from which referring paths.
#[derive(Debug, Clone, PartialEq)]
pub struct PathCount {
    /// Path and query, as requested (a target in absolute form reduced to them).
    pub path: String,
    /// Requests of it: GETs answered 200 or 304.
    pub count: u64,
    /// Referring paths (path and query of the Referer), in order of first appearance, each
    /// with its count.
    pub referers: Vec<(String, u64)>,
}

/// One line's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    /// The request's method as logged (`GET`, `POST`, ...).
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The status answered, 100 to 999.
    pub status: u16,
    /// Path and query of the Referer, when there is one.
    pub referer: Option<String>,
}

/// Why a log gave nothing.
#[derive(Debug, thiserror::Error)]
pub enum LogError {
    /// The file could not be opened or read, or its gzip is broken.
    #[error("{path}: {source}")]
    Io {
        /// The log file, as given.
        path: String,
        /// What opening, reading or gunzipping it said.
        source: io::Error,
    },
    /// Every line was blank, unreadable, or not a GET answered 200 or 304.
    #[error("{path}: no usable line ({lines} read, {unreadable} not in Common or Combined Log Format, {other} not a GET answered 200 or 304){examples}")]
    NoUsableLine {
        /// The log file, as given.
        path: String,
        /// Lines read, blank ones aside.
        lines: u64,
        /// Of those, lines in neither format.
        unreadable: u64,
        /// Of those, lines that are not a GET answered 200 or 304.
        other: u64,
        /// The first unreadable lines with their numbers, each as `; line N: text` (empty
        /// when there is none).
        examples: String,
    },
}

impl Counts {
    /// Reads a log file, gzip or not (told by its first bytes, not its name).
    pub fn read(path: &Path) -> Result<Counts, LogError> {
        let shown = path.display().to_string();
        let io_err = |source| LogError::Io {
            path: shown.clone(),
            source,
        };
        let mut file = BufReader::new(std::fs::File::open(path).map_err(io_err)?);
        let gzip = file.fill_buf().map_err(io_err)?.starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead> = if gzip {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        let counts = Counts::from_reader(reader).map_err(io_err)?;
        if counts.paths.is_empty() {
            let examples = counts
                .examples
                .iter()
                .map(|(n, l)| format!("; line {n}: {l}"))
                .collect::<String>();
            return Err(LogError::NoUsableLine {
                path: shown,
                lines: counts.lines,
                unreadable: counts.unreadable,
                other: counts.other,
                examples,
            });
        }
        Ok(counts)
    }

    /// Reads lines from `reader`; bytes that are not UTF-8 are replaced, not fatal.
    pub fn from_reader(mut reader: impl BufRead) -> io::Result<Counts> {
        let mut counts = Counts::default();
        let mut buf = Vec::new();
        let mut number = 0u64;
        loop {
            buf.clear();
            // A line longer than 1 MiB is not a log line: read on to its end, keep the start.
            if reader.by_ref().take(1 << 20).read_until(b'\n', &mut buf)? == 0 {
                return Ok(counts);
            }
            if !buf.ends_with(b"\n") {
                let mut rest = Vec::new();
                if reader.read_until(b'\n', &mut rest)? > 0 {
                    buf.push(b'\n');
                }
            }
            number += 1;
            let text = String::from_utf8_lossy(&buf);
            let text = text.trim_end_matches(['\n', '\r']);
            if text.trim().is_empty() {
                continue;
            }
            counts.lines += 1;
            match parse_line(text) {
                None => {
                    counts.unreadable += 1;
                    if counts.examples.len() < EXAMPLES {
                        let shown: String = text.chars().take(200).collect();
                        counts.examples.push((number, shown));
                    }
                }
                Some(line) if line.method == "GET" && matches!(line.status, 200 | 304) => {
                    counts.add(line.path, line.referer)
                }
                Some(_) => counts.other += 1,
            }
        }
    }

    fn add(&mut self, path: String, referer: Option<String>) {
        let i = match self.index.get(&path) {
            Some(&i) => i,
            None => {
                self.index.insert(path.clone(), self.paths.len());
                self.paths.push(PathCount {
                    path,
                    count: 0,
                    referers: Vec::new(),
                });
                self.paths.len() - 1
            }
        };
        let p = &mut self.paths[i];
        p.count += 1;
        if let Some(r) = referer {
            let key = (i, r);
            match self.referer_index.get(&key) {
                Some(&j) => p.referers[j].1 += 1,
                None => {
                    p.referers.push((key.1.clone(), 1));
                    self.referer_index.insert(key, p.referers.len() - 1);
                }
            }
        }
    }

    /// How often `path` was requested (GET, 200 or 304).
    pub fn count(&self, path: &str) -> u64 {
        self.index.get(path).map_or(0, |&i| self.paths[i].count)
    }

    /// Weighs crawled pages: each page's weight is its document's count (and that of the path
    /// it was redirected from). Returns how many pages the log names.
    pub fn weigh(&self, pages: &mut [Page]) -> usize {
        let mut named = 0;
        for page in pages.iter_mut() {
            let mut n = self.count(&page.path);
            if let Some(from) = &page.redirected_from {
                n += self.count(from);
            }
            page.weight = n as f64;
            named += usize::from(n > 0);
        }
        named
    }
}

/// Parses one Common or Combined Log Format line.
pub fn parse_line(line: &str) -> Option<Line> {
    // host ident user: three fields before the time (the user may be quoted or hold spaces in
    // some servers' output, so only their presence is checked).
    let open = line.find(" [")?;
    if line[..open].split_ascii_whitespace().count() < 3 {
        return None;
    }
    let after_open = &line[open + 2..];
    let close = after_open.find("] \"")?;
    let rest = &after_open[close + 2..];
    let (request, rest) = quoted(rest)?;
    let (status, rest) = token(rest)?;
    let status: u16 = status.parse().ok().filter(|s| (100..=999).contains(s))?;
    let (bytes, rest) = token(rest)?;
    if bytes != "-" && bytes.parse::<u64>().is_err() {
        return None;
    }
    // The Combined format's Referer, if present.
    let referer = match rest.trim_start() {
        "" => None,
        r => Some(quoted(r)?.0),
    }
    .filter(|r| r != "-" && !r.is_empty())
    .and_then(|r| path_of(&r));
    let mut parts = request.split_ascii_whitespace();
    let method = parts.next()?.to_owned();
    let path = parts.next().and_then(path_of);
    let path = path.unwrap_or_default();
    Some(Line {
        method,
        path,
        status,
        referer,
    })
}

/// The next whitespace-separated token of `s`, and what follows it.
fn token(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    let end = s.find(char::is_whitespace).unwrap_or(s.len());
    (end > 0).then(|| (&s[..end], &s[end..]))
}

/// A quoted field at the start of `s` (`\"` and `\\` unescaped; `\xHH`, a byte the server
/// escaped, decoded) and what follows it.
fn quoted(s: &str) -> Option<(String, &str)> {
    let body = s.strip_prefix('"')?;
    let mut out = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, &body[i + 1..])),
            '\\' => match chars.next()? {
                (_, '"') => out.push('"'),
                (_, '\\') => out.push('\\'),
                (_, 'x') if escaped_byte(chars.as_str()).is_some() => {
                    let byte = escaped_byte(chars.as_str())?;
                    chars.nth(1);
                    push_byte(&mut out, byte);
                }
                (_, other) => {
                    out.push('\\');
                    out.push(other);
                }
            },
            c => out.push(c),
        }
    }
    None
}

/// The byte `HH` of an `\xHH` escape whose `\x` has been read.
fn escaped_byte(rest: &str) -> Option<u8> {
    let hex = rest.get(..2)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u8::from_str_radix(hex, 16).ok()
}

/// A byte nginx or flint serve escaped in a request line or a Referer, as a URL holds it: a
/// printable ASCII character as itself, any other (a byte of a UTF-8 character, a control, the
/// quote) percent-encoded, as a browser encodes it and as a crawled page's path is written.
fn push_byte(out: &mut String, byte: u8) {
    if byte.is_ascii_graphic() && byte != b'"' {
        out.push(char::from(byte));
    } else {
        out.push_str(&format!("%{byte:02X}"));
    }
}

/// Path and query of a request target or a Referer: origin form as is, absolute form reduced to
/// its path; anything else (`*`, `-`) is no path.
fn path_of(target: &str) -> Option<String> {
    if target.starts_with('/') {
        return Some(target.split('#').next().unwrap_or(target).to_owned());
    }
    let url = url::Url::parse(target).ok()?;
    if !matches!(url.scheme(), "http" | "https") {
        return None;
    }
    Some(url[url::Position::BeforePath..url::Position::AfterQuery].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_formats_servers_write() {
        let nginx = r#"127.0.0.1 - - [25/Nov/2026:20:00:00 +0000] "GET /a.css?v=2 HTTP/1.1" 200 512 "http://127.0.0.1:8080/index.html" "Mozilla/5.0 (X11)""#;
        let l = parse_line(nginx).unwrap();
        assert_eq!(
            l,
            Line {
                method: "GET".into(),
                path: "/a.css?v=2".into(),
                status: 200,
                referer: Some("/index.html".into()),
            }
        );
        let common =
            r#"10.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET http://h/x.gif HTTP/1.0" 304 -"#;
        let l = parse_line(common).unwrap();
        assert_eq!(
            (l.path.as_str(), l.status, l.referer),
            ("/x.gif", 304, None)
        );
        let apache =
            r#"::1 - - [10/Oct/2000:13:55:36 -0700] "GET /q\"uote HTTP/1.1" 404 10 "-" "ua \"x\"""#;
        let l = parse_line(apache).unwrap();
        assert_eq!(
            (l.path.as_str(), l.status, l.referer),
            ("/q\"uote", 404, None)
        );
        let flint = "127.0.0.1 - - [06/Nov/1994:08:49:37 +0000] \"GET /\\xFF HTTP/1.1\" 200 1";
        assert_eq!(parse_line(flint).unwrap().path, "/%FF");
        // nginx escapes each byte of a UTF-8 character: the path as a browser requests it.
        let utf8 = r#"::1 - - [date] "GET /caf\xC3\xA9.png?q=\x22 HTTP/1.1" 200 1 "http://h/\xC3\xA9" "-""#;
        let l = parse_line(utf8).unwrap();
        assert_eq!(l.path, "/caf%C3%A9.png?q=%22");
        assert_eq!(l.referer.as_deref(), Some("/%C3%A9"));
        // Not an escape: kept as written.
        let odd = r#"::1 - - [date] "GET /a\xZZ\x4 HTTP/1.1" 200 1"#;
        assert_eq!(parse_line(odd).unwrap().path, "/a\\xZZ\\x4");
        for bad in [
            "",
            "garbage",
            r#"1.2.3.4 - - [date] "GET / HTTP/1.1" abc 5"#,
            r#"1.2.3.4 - - [date] "GET / HTTP/1.1 200 5"#,
        ] {
            assert_eq!(parse_line(bad), None, "{bad}");
        }
    }

    #[test]
    fn counts_gets_answered_200_or_304_and_keeps_bad_lines() {
        let log = "1 - - [d] \"GET /a HTTP/1.1\" 200 5\n\
                   1 - - [d] \"GET /a HTTP/1.1\" 304 -\n\
                   1 - - [d] \"POST /a HTTP/1.1\" 200 5\n\
                   1 - - [d] \"GET /b HTTP/1.1\" 404 5\n\
                   not a log line\n\n\
                   1 - - [d] \"GET /c HTTP/1.1\" 200 5 \"http://h/a\" \"ua\"\n";
        let c = Counts::from_reader(log.as_bytes()).unwrap();
        assert_eq!((c.count("/a"), c.count("/b"), c.count("/c")), (2, 0, 1));
        assert_eq!((c.lines, c.unreadable, c.other), (6, 1, 2));
        assert_eq!(c.examples, [(5, "not a log line".to_owned())]);
        assert_eq!(c.paths[1].referers, [("/a".to_owned(), 1)]);
    }
}
