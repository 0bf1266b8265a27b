//! Templates: a request's path, header values and body with `{{...}}` holes filled per request
//! from the Webchild's session: a data column (`{{users.name}}`), a value extracted earlier
//! (`{{token}}`), `{{random A B}}`, `{{seq}}` (the Webchild's request count) and `{{webchild}}`
//! (its number). A literal `{{` is written `{{"{{"}}`.
//!
//! A template is compiled once before the run (every name resolved to an index, so that a
//! missing column is an error then, not a surprise mid-run) and expanded into a buffer the
//! caller keeps: expanding allocates nothing once the buffer has grown.

use std::ops::Range;

/// How a hole's value is written where it lands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Escape {
    /// A URL's path or query: every byte outside RFC 3986's unreserved set percent-encoded, so
    /// that a value never adds a `/`, `?`, `&` or `=` of its own.
    Url,
    /// An `application/x-www-form-urlencoded` body: as `Url`, a space as `+`.
    Form,
    /// A body other than a form, credentials (sent base64-encoded) or a check's expected
    /// text: as it is, whatever its bytes.
    Raw,
    /// A header field value: as it is, but a value with a line break or NUL, which would end
    /// the field or the head, is refused when expanded (`ExpandError::Unsafe`).
    Header,
}

/// What fills one hole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hole {
    /// Column `column` of data set `data`'s row the page drew.
    Column {
        /// The data set's index in [`super::plan::Plan::data`].
        data: usize,
        /// The column's index in that set.
        column: usize,
    },
    /// Session value `slot` (set by an extraction).
    Value(usize),
    /// A uniform integer in `low..=high`.
    Random {
        /// The least value, included.
        low: u64,
        /// The greatest value, included (at least `low`).
        high: u64,
    },
    /// The Webchild's count of requests so far.
    Seq,
    /// The Webchild's number.
    Webchild,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(Range<usize>),
    Hole(Hole),
}

/// A compiled template: text and holes, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    source: String,
    parts: Vec<Part>,
    escape: Escape,
}

/// The names a template may use: data sets with their columns, and session values.
pub trait Names {
    /// `(data set, column)` indexes of `set.column`.
    fn column(&self, set: &str, column: &str) -> Result<(usize, usize), String>;
    /// The slot of session value `name`.
    fn value(&self, name: &str) -> Result<usize, String>;
}

/// What a hole is filled from while expanding.
pub trait Values {
    /// Field `column` of the row data set `data` drew for this page (`None`: none drawn).
    fn column(&self, data: usize, column: usize) -> Option<&str>;
    /// Session value `slot` (`None`: not extracted yet, or its extraction failed).
    fn value(&self, slot: usize) -> Option<&str>;
    /// A uniform integer in `low..=high`.
    fn random(&mut self, low: u64, high: u64) -> u64;
    /// The Webchild's requests built so far, the one being built included: 1 for its first.
    fn seq(&self) -> u64;
    /// The Webchild's number, global across threads and hosts.
    fn webchild(&self) -> u64;
}

/// Why an expansion produced no request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExpandError {
    /// A session value not extracted (yet): the request is not sent (`missing_value_unsent`).
    Missing(Hole),
    /// A value with a line break or NUL in a header field, where it would split the head
    /// (`unsafe_value_unsent`).
    Unsafe(Hole),
}

impl ExpandError {
    /// The error its request, not sent, counts as (its page ends there, failed).
    pub fn unsent_kind(&self) -> crate::stats::ErrorKind {
        match self {
            ExpandError::Missing(_) => crate::stats::ErrorKind::MissingValueUnsent,
            ExpandError::Unsafe(_) => crate::stats::ErrorKind::UnsafeValueUnsent,
        }
    }
}

impl Template {
    /// Compiles `source`, its names resolved by `names`. The error says what is wrong and
    /// where (a byte offset), for the workload's line-numbered message.
    pub fn compile(source: &str, escape: Escape, names: &impl Names) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut at = 0;
        while let Some(open) = source[at..].find("{{").map(|i| at + i) {
            if open > at {
                parts.push(Part::Text(at..open));
            }
            let Some(close) = source[open + 2..].find("}}").map(|i| open + 2 + i) else {
                return Err(format!("`{{{{` at byte {open} is not closed by `}}}}`"));
            };
            let inner = source[open + 2..close].trim();
            match inner {
                "\"{{\"" => parts.push(Part::Text(open..open + 2)),
                _ => parts.push(Part::Hole(
                    hole(inner, names).map_err(|e| format!("{{{{{inner}}}}}: {e}"))?,
                )),
            }
            at = close + 2;
        }
        if at < source.len() {
            parts.push(Part::Text(at..source.len()));
        }
        Ok(Template {
            source: source.to_owned(),
            parts,
            escape,
        })
    }

    /// Whether the template has no hole (a request then built once, as without templates).
    pub fn is_constant(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Text(_)))
    }

    /// The text of a template without a hole (its `{{"{{"}}` written as `{{`); `None` when it
    /// has one.
    pub fn constant_text(&self) -> Option<Vec<u8>> {
        let mut text = Vec::new();
        for part in &self.parts {
            match part {
                Part::Text(r) => text.extend_from_slice(&self.source.as_bytes()[r.clone()]),
                Part::Hole(_) => return None,
            }
        }
        Some(text)
    }

    /// The holes, for checking which values a request needs before it is sent.
    pub fn holes(&self) -> impl Iterator<Item = &Hole> {
        self.parts.iter().filter_map(|p| match p {
            Part::Hole(h) => Some(h),
            Part::Text(_) => None,
        })
    }

    /// The template as written (the plan looks for the `:` of a constant `auth` in it).
    pub fn source(&self) -> &str {
        &self.source
    }

    /// Appends the expansion to `out`.
    pub fn expand(&self, values: &mut impl Values, out: &mut Vec<u8>) -> Result<(), ExpandError> {
        for part in &self.parts {
            match part {
                Part::Text(r) => out.extend_from_slice(&self.source.as_bytes()[r.clone()]),
                Part::Hole(h) => self.fill(h, values, out)?,
            }
        }
        Ok(())
    }

    fn fill(
        &self,
        h: &Hole,
        values: &mut impl Values,
        out: &mut Vec<u8>,
    ) -> Result<(), ExpandError> {
        let mut number = NumberText::default();
        let text: &str = match *h {
            Hole::Column { data, column } => values
                .column(data, column)
                .ok_or_else(|| ExpandError::Missing(h.clone()))?,
            Hole::Value(slot) => values
                .value(slot)
                .ok_or_else(|| ExpandError::Missing(h.clone()))?,
            Hole::Random { low, high } => number.of(values.random(low, high)),
            Hole::Seq => number.of(values.seq()),
            Hole::Webchild => number.of(values.webchild()),
        };
        let bytes = text.as_bytes();
        match self.escape {
            // A byte test rather than `str::contains` of chars: the three are ASCII, which no
            // byte of another character's UTF-8 is.
            Escape::Header if bytes.iter().any(|&b| matches!(b, b'\r' | b'\n' | 0)) => {
                return Err(ExpandError::Unsafe(h.clone()));
            }
            Escape::Raw | Escape::Header => out.extend_from_slice(bytes),
            // A text with nothing to escape (a number, most names) goes at once.
            Escape::Url | Escape::Form if bytes.iter().all(|&b| UNRESERVED[usize::from(b)]) => {
                out.extend_from_slice(bytes)
            }
            Escape::Url | Escape::Form => {
                for &b in bytes {
                    if UNRESERVED[usize::from(b)] {
                        out.push(b);
                    } else if b == b' ' && self.escape == Escape::Form {
                        out.push(b'+');
                    } else {
                        const HEX: &[u8; 16] = b"0123456789ABCDEF";
                        out.extend_from_slice(&[
                            b'%',
                            HEX[usize::from(b >> 4)],
                            HEX[usize::from(b & 15)],
                        ]);
                    }
                }
            }
        }
        Ok(())
    }
}

/// RFC 3986's unreserved characters: ALPHA, DIGIT, `-`, `.`, `_`, `~` (kept as they are in a
/// URL or a form; every other byte is escaped).
static UNRESERVED: [bool; 256] = {
    let mut t = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        t[b] = c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~');
        b += 1;
    }
    t
};

/// A number's decimal text without allocating.
#[derive(Default)]
struct NumberText {
    buf: [u8; 20],
}

impl NumberText {
    fn of(&mut self, mut n: u64) -> &str {
        let mut i = self.buf.len();
        loop {
            i -= 1;
            self.buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        // The digits where they were written, at the end of the room.
        std::str::from_utf8(&self.buf[i..]).unwrap_or("0")
    }
}

fn hole(inner: &str, names: &impl Names) -> Result<Hole, String> {
    let mut words = inner.split_whitespace();
    let first = words.next().ok_or("an empty `{{}}`")?;
    let rest: Vec<&str> = words.collect();
    let no_arguments = |h: Hole| {
        if rest.is_empty() {
            Ok(h)
        } else {
            Err(format!("`{first}` takes no arguments"))
        }
    };
    match first {
        "random" => {
            let [low, high] = rest[..] else {
                return Err("`random` takes two integers: {{random LOW HIGH}}".into());
            };
            let parse = |s: &str| {
                s.parse::<u64>()
                    .map_err(|_| format!("`{s}` is not a non-negative integer"))
            };
            let (low, high) = (parse(low)?, parse(high)?);
            if low > high {
                return Err(format!("random's low {low} is above its high {high}"));
            }
            Ok(Hole::Random { low, high })
        }
        "seq" => no_arguments(Hole::Seq),
        "webchild" => no_arguments(Hole::Webchild),
        name => {
            if !rest.is_empty() {
                return Err(format!("unknown function `{name}`"));
            }
            match name.split_once('.') {
                Some((set, column)) => {
                    let (data, column) = names.column(set, column)?;
                    Ok(Hole::Column { data, column })
                }
                None => names.value(name).map(Hole::Value),
            }
        }
    }
}

impl std::fmt::Display for Hole {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Hole::Column { data, column } => write!(f, "data {data} column {column}"),
            Hole::Value(slot) => write!(f, "value {slot}"),
            Hole::Random { low, high } => write!(f, "random {low} {high}"),
            Hole::Seq => f.write_str("seq"),
            Hole::Webchild => f.write_str("webchild"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture;

    impl Names for Fixture {
        fn column(&self, set: &str, column: &str) -> Result<(usize, usize), String> {
            match (set, column) {
                ("users", "name") => Ok((0, 0)),
                ("users", "id") => Ok((0, 1)),
                _ => Err(format!("no column {set}.{column}")),
            }
        }
        fn value(&self, name: &str) -> Result<usize, String> {
            match name {
                "token" => Ok(0),
                _ => Err(format!("no value {name}")),
            }
        }
    }

    struct Row {
        token: Option<String>,
    }

    impl Values for Row {
        fn column(&self, _: usize, column: usize) -> Option<&str> {
            Some(["Ann Lee/&", "7"][column])
        }
        fn value(&self, _: usize) -> Option<&str> {
            self.token.as_deref()
        }
        fn random(&mut self, low: u64, _: u64) -> u64 {
            low
        }
        fn seq(&self) -> u64 {
            1234567
        }
        fn webchild(&self) -> u64 {
            0
        }
    }

    fn expand(source: &str, escape: Escape, row: &mut Row) -> Result<String, ExpandError> {
        let t = Template::compile(source, escape, &Fixture).unwrap();
        let mut out = Vec::new();
        t.expand(row, &mut out)?;
        Ok(String::from_utf8(out).unwrap())
    }

    #[test]
    fn holes_are_filled_and_escaped_where_they_land() {
        let mut row = Row {
            token: Some("a b".into()),
        };
        assert_eq!(
            expand(
                "/u?name={{users.name}}&id={{ users.id }}",
                Escape::Url,
                &mut row
            )
            .unwrap(),
            "/u?name=Ann%20Lee%2F%26&id=7"
        );
        assert_eq!(
            expand("user={{users.name}}&t={{token}}", Escape::Form, &mut row).unwrap(),
            "user=Ann+Lee%2F%26&t=a+b"
        );
        assert_eq!(
            expand(
                "Bearer {{token}} #{{seq}} w{{webchild}} r{{random 5 9}}",
                Escape::Raw,
                &mut row
            )
            .unwrap(),
            "Bearer a b #1234567 w0 r5"
        );
        assert_eq!(
            expand("{{\"{{\"}}x}}", Escape::Raw, &mut row).unwrap(),
            "{{x}}"
        );
    }

    #[test]
    fn a_value_not_extracted_or_unsafe_in_a_header_is_refused() {
        let mut row = Row { token: None };
        assert_eq!(
            expand("t={{token}}", Escape::Url, &mut row),
            Err(ExpandError::Missing(Hole::Value(0)))
        );
        let mut row = Row {
            token: Some("x\r\nEvil: 1".into()),
        };
        assert_eq!(
            expand("{{token}}", Escape::Header, &mut row),
            Err(ExpandError::Unsafe(Hole::Value(0)))
        );
        // A body takes it as it is.
        assert_eq!(
            expand("v={{token}}", Escape::Raw, &mut row).unwrap(),
            "v=x\r\nEvil: 1"
        );
        // In a URL the same value is only encoded.
        assert_eq!(
            expand("{{token}}", Escape::Url, &mut row).unwrap(),
            "x%0D%0AEvil%3A%201"
        );
    }

    #[test]
    fn bad_templates_say_what_is_wrong() {
        for (source, needle) in [
            ("/a?{{users.email}}", "no column users.email"),
            ("{{nope}}", "no value nope"),
            ("/a{{token", "not closed"),
            ("{{random 9 1}}", "above its high"),
            ("{{random 1}}", "two integers"),
            ("{{random -1 4}}", "not a non-negative integer"),
            ("{{seq 3}}", "takes no arguments"),
            ("{{upper token}}", "unknown function"),
            ("{{ }}", "empty"),
        ] {
            let e = Template::compile(source, Escape::Url, &Fixture).unwrap_err();
            assert!(e.contains(needle), "{source}: {e}");
        }
        let t = Template::compile("/plain", Escape::Url, &Fixture).unwrap();
        assert!(t.is_constant());
        assert_eq!(t.holes().count(), 0);
    }

    #[test]
    fn numbers_are_written_without_allocating() {
        let mut n = NumberText::default();
        assert_eq!(n.of(0), "0");
        assert_eq!(n.of(u64::MAX), "18446744073709551615");
        assert_eq!(n.of(42), "42");
    }
}
