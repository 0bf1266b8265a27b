//! The workload TOML `flint bench -w` reads (docs/workload.md): one `[[page]]` per HTML
//! document, its files in order (the HTML first), each file's size and type (and, with
//! `--browser`, what made the browser request it) as a comment, and
//! what was not fetched as a comment where it was referenced, with the reason; the page's forms
//! as commented entries that would send them ([`crate::forms`]). A page whose
//! weight is 0 (an access log never asked for it) is written commented out: bench refuses a
//! weight of 0, and the page stays visible.

use crate::{Entry, Page};
use std::fmt::Write;

/// The header's facts.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    /// Where the pages came from (the start URL, or the access log).
    pub source: &'a str,
    /// What to pass `flint bench` as its target, when known.
    pub origin: Option<&'a str>,
    /// What else `flint bench` needs to reach the site as discover did (`--http 2`,
    /// `--cacert FILE`, `-k`), one argument an item.
    pub bench_args: &'a [String],
    /// Lines said once at the top (links not followed, robots.txt).
    pub notes: &'a [String],
}

/// The workload as TOML, with comments.
pub fn to_toml(header: &Header<'_>, pages: &[Page]) -> String {
    let mut out = String::new();
    let (files, bytes) = totals(pages);
    let _ = writeln!(
        out,
        "# flint discover: {} pages, {files} files, {bytes} bytes, from {}",
        pages.len(),
        one_line(header.source)
    );
    if let Some(origin) = header.origin {
        let _ = write!(out, "# run it: flint bench {origin} -w THIS_FILE");
        for arg in header.bench_args {
            let _ = write!(out, " {}", shell_word(&one_line(arg)));
        }
        out.push('\n');
    }
    for note in header.notes {
        let _ = writeln!(out, "# {}", one_line(note));
    }
    if let Some(origin) = header.origin {
        // Where `flint bench -w THIS_FILE` connects when given no URL.
        let _ = writeln!(out, "\norigin = {}", quote(origin));
    }
    for page in pages {
        out.push('\n');
        page_toml(&mut out, page);
    }
    out
}

/// Distinct files over `pages`, and their bytes.
pub fn totals(pages: &[Page]) -> (usize, u64) {
    let mut seen = std::collections::HashSet::new();
    let mut bytes = 0;
    for f in pages.iter().flat_map(Page::files) {
        if seen.insert(f.path.as_str()) {
            bytes += f.bytes;
        }
    }
    (seen.len(), bytes)
}

fn page_toml(out: &mut String, page: &Page) {
    let mut text = String::new();
    let _ = writeln!(text, "[[page]]");
    let _ = writeln!(text, "name = {}", quote(&page.path));
    let _ = writeln!(text, "weight = {}", number(page.weight));
    let _ = writeln!(text, "files = [");
    for entry in &page.entries {
        match entry {
            Entry::File(f) => {
                let mut about = format!("{} bytes", f.bytes);
                if let Some(t) = &f.content_type {
                    let _ = write!(about, ", {t}");
                }
                if let Some(from) = &f.redirected_from {
                    let _ = write!(about, ", redirected from {from}");
                }
                if let Some(by) = f.initiator {
                    let _ = write!(about, ", initiator {by}");
                }
                let _ = writeln!(text, "    {}, # {}", quote(&f.path), one_line(&about));
            }
            Entry::Skipped { url, reason } => {
                let _ = writeln!(text, "    # {}: {}", one_line(url), one_line(reason));
            }
        }
    }
    for note in &page.notes {
        let _ = writeln!(text, "    # {}", one_line(note));
    }
    let _ = writeln!(text, "]");
    for line in page.forms.example() {
        let _ = writeln!(text, "# {}", one_line(&line));
    }
    if page.weight > 0.0 {
        out.push_str(&text);
    } else {
        let _ = writeln!(
            out,
            "# {}: never requested in the access log (weight 0): left out",
            one_line(&page.path)
        );
        for line in text.lines() {
            let _ = writeln!(out, "# {line}");
        }
    }
}

/// An argument as a shell reads it back: quoted when it holds anything but plain characters.
fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// A TOML basic string.
pub(crate) fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        match c {
            '"' => q.push_str("\\\""),
            '\\' => q.push_str("\\\\"),
            c if c.is_control() => {
                let _ = write!(q, "\\u{:04X}", c as u32);
            }
            c => q.push(c),
        }
    }
    q.push('"');
    q
}

/// A weight: an integer as an integer.
fn number(w: f64) -> String {
    if w.fract() == 0.0 && w.abs() < 1e15 {
        format!("{}", w as i64)
    } else {
        format!("{w}")
    }
}

/// Text for a comment: one line, whatever a server or a page put in it.
fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::File;

    #[test]
    fn strings_are_escaped_and_comments_stay_on_their_line() {
        let page = Page {
            path: "/a\"b\\c".into(),
            redirected_from: None,
            weight: 2.5,
            entries: vec![
                Entry::File(File {
                    path: "/a\"b\\c".into(),
                    bytes: 10,
                    content_type: Some("text/html".into()),
                    redirected_from: None,
                    initiator: None,
                }),
                Entry::Skipped {
                    url: "/x\n[[page]]".into(),
                    reason: "404 Not Found".into(),
                },
                Entry::File(File {
                    path: "/new.json".into(),
                    bytes: 7,
                    content_type: Some("application/json".into()),
                    redirected_from: Some("/old.json".into()),
                    initiator: Some("script"),
                }),
            ],
            notes: vec!["3 more references beyond --max-files 2: not fetched".into()],
            forms: Default::default(),
        };
        let text = to_toml(
            &Header {
                source: "http://h/",
                origin: Some("http://h"),
                bench_args: &["--cacert".into(), "my ca.pem".into()],
                notes: &["a\nnote".into()],
            },
            &[page],
        );
        assert!(text.contains("name = \"/a\\\"b\\\\c\""), "{text}");
        assert!(text.contains("weight = 2.5"));
        assert!(
            text.contains("# run it: flint bench http://h -w THIS_FILE --cacert 'my ca.pem'\n"),
            "{text}"
        );
        assert!(
            text.contains("    # /x [[page]]: 404 Not Found\n"),
            "{text}"
        );
        assert!(
            text.contains("    # 3 more references beyond --max-files 2: not fetched\n]\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "    \"/new.json\", # 7 bytes, application/json, redirected from /old.json, initiator script\n"
            ),
            "{text}"
        );
        assert_eq!(text.matches("[[page]]\n").count(), 1, "{text}");
        assert_eq!(number(3.0), "3");
        // bench reads it back, the origin with it (its run without a URL goes there).
        let workload = bench::Workload::parse(&text, "t").expect("bench reads it");
        assert_eq!(workload.pages.len(), 1);
        assert_eq!(
            bench::Workload::origin_in(&text, "t").unwrap().as_deref(),
            Some("http://h")
        );
    }

    #[test]
    fn a_page_of_weight_0_is_written_commented_out() {
        let file = |p: &str| {
            Entry::File(File {
                path: p.into(),
                bytes: 1,
                content_type: None,
                redirected_from: None,
                initiator: None,
            })
        };
        let page = |p: &str, weight| Page {
            path: p.into(),
            redirected_from: None,
            weight,
            entries: vec![file(p)],
            notes: Vec::new(),
            forms: Default::default(),
        };
        let header = Header {
            source: "s",
            origin: None,
            bench_args: &[],
            notes: &[],
        };
        let text = to_toml(&header, &[page("/a", 3.0), page("/never", 0.0)]);
        let live: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(
            live,
            [
                "",
                "[[page]]",
                "name = \"/a\"",
                "weight = 3",
                "files = [",
                "    \"/a\", # 1 bytes",
                "]",
                ""
            ]
        );
        assert!(
            text.contains(
                "# /never: never requested in the access log (weight 0): left out\n# [[page]]\n"
            ),
            "{text}"
        );
    }
}
