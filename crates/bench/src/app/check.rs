//! Checks: what a response must be for the request to count as answered, not only that it came
//! (a 200 carrying an error page is the classic false result of a load test). Spelled in a
//! workload file's `expect = { ... }` ([`ExpectSpec`]), compiled once ([`Expect`]), and held
//! against each response ([`Expect::check`]); a failure is an error of its own kind
//! ([`CheckKind`]), counted once per response.

use super::template::{Escape, Names, Template, Values};
use regex::bytes::Regex;
use std::collections::BTreeMap;

/// A response as the checks and extractions see it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The status code, as the status line (HTTP/1.x) or `:status` (HTTP/2 and 3) gave it.
    pub status: u16,
    /// Header fields in order, names as received.
    pub headers: &'a [(&'a [u8], &'a [u8])],
    /// The whole body (decoded from its transfer coding).
    pub body: &'a [u8],
}

impl<'a> Answer<'a> {
    /// The first field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes()))
            .map(|(_, v)| *v)
    }
}

/// One status or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Statuses {
    /// `status = 200`: only this one.
    One(u16),
    /// `status = [200, 304]`: any of these.
    Any(Vec<u16>),
}

/// A body length: exact, or a range.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
pub enum Length {
    /// `body_length = 512`: exactly this many bytes.
    Exact(u64),
    /// `body_length = { min = 1, max = 4096 }`: bytes within the bounds, both included.
    Range {
        /// The fewest bytes (absent: 0).
        min: Option<u64>,
        /// The most bytes (absent: no bound).
        max: Option<u64>,
    },
}

/// `expect = { ... }` as a workload file spells it.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSpec {
    /// The statuses that succeed; when given, they replace the run's rule (4xx and 5xx are
    /// errors, or `--expect-status`) for this file, so a `404` may be what is wanted.
    pub status: Option<Statuses>,
    /// Fields that must be present (any value).
    #[serde(default)]
    pub header_present: Vec<String>,
    /// Fields that must equal a value (a template).
    #[serde(default)]
    pub header_equals: BTreeMap<String, String>,
    /// The media type before any parameter: `text/html` matches `text/html; charset=utf-8`.
    pub content_type: Option<String>,
    /// Text the body holds (a template: `{{users.name}}`).
    pub body_contains: Option<String>,
    /// A regular expression the body matches somewhere.
    pub body_regex: Option<String>,
    /// A JSON pointer (RFC 6901) present in the body parsed as JSON.
    pub json: Option<String>,
    /// JSON pointers and the values they must hold.
    #[serde(default)]
    pub json_equals: BTreeMap<String, serde_json::Value>,
    /// The body's length in bytes, after its transfer coding is removed.
    pub body_length: Option<Length>,
}

/// Which check failed: each is an error kind of its own in the results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum CheckKind {
    /// `check_status`: a status outside `expect.status`.
    Status,
    /// `check_header`: a field missing (`header_present`) or of another value (`header_equals`).
    Header,
    /// `check_content_type`: another media type.
    ContentType,
    /// `check_body`: the text not in the body (`body_contains`) or the regex not matching it.
    Body,
    /// `check_json`: a body that is not JSON, a pointer not in it, or another value there.
    Json,
    /// `check_length`: a body shorter or longer than `body_length` allows.
    Length,
}

impl CheckKind {
    /// The error kind's name in reports and thresholds.
    pub fn name(self) -> &'static str {
        match self {
            CheckKind::Status => "check_status",
            CheckKind::Header => "check_header",
            CheckKind::ContentType => "check_content_type",
            CheckKind::Body => "check_body",
            CheckKind::Json => "check_json",
            CheckKind::Length => "check_length",
        }
    }
}

/// A check that failed, with what was wanted and what came.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckFailure {
    /// Which check failed: the error kind it is counted as.
    pub kind: CheckKind,
    /// What was wanted and what came, in one line: the sample the summary and the JSON show
    /// for the first few failures (`stats::check_failures`).
    pub detail: String,
}

/// Compiled checks of one file of a page.
#[derive(Debug, Clone)]
pub struct Expect {
    // A check added here that reads the header fields must say so in `Expect::needs_headers`
    // (which names every field, so it will not compile until it does): the client splits a
    // response's head only when something reads its fields, and `check` is handed none
    // otherwise.
    status: Vec<u16>,
    header_present: Vec<String>,
    header_equals: Vec<(String, Template)>,
    content_type: Option<String>,
    body_contains: Option<Template>,
    /// A `body_contains` without a hole: its searcher, built once rather than per response.
    body_finder: Option<memchr::memmem::Finder<'static>>,
    body_regex: Option<Regex>,
    json: Vec<(String, Option<serde_json::Value>)>,
    body_length: Option<(u64, u64)>,
}

impl Expect {
    /// Compiles `spec`; the error names the check that cannot be used.
    pub fn compile(spec: &ExpectSpec, names: &impl Names) -> Result<Expect, String> {
        let status = match &spec.status {
            None => Vec::new(),
            Some(Statuses::One(s)) => vec![*s],
            Some(Statuses::Any(list)) => list.clone(),
        };
        if let Some(s) = status.iter().find(|s| !(100..=599).contains(*s)) {
            return Err(format!(
                "expect.status {s} is not an HTTP status (100 to 599)"
            ));
        }
        let header_equals = (spec.header_equals.iter())
            .map(|(n, v)| {
                Template::compile(v, Escape::Raw, names)
                    .map(|t| (n.clone(), t))
                    .map_err(|e| format!("expect.header_equals.{n}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let body_contains = (spec.body_contains.as_deref())
            .map(|t| Template::compile(t, Escape::Raw, names))
            .transpose()
            .map_err(|e| format!("expect.body_contains: {e}"))?;
        let body_finder = (body_contains.as_ref())
            .and_then(Template::constant_text)
            .map(|text| memchr::memmem::Finder::new(&text).into_owned());
        let body_regex = (spec.body_regex.as_deref())
            .map(Regex::new)
            .transpose()
            .map_err(|e| format!("expect.body_regex: {e}"))?;
        let mut json: Vec<(String, Option<serde_json::Value>)> =
            spec.json.iter().map(|p| (p.clone(), None)).collect();
        json.extend(
            spec.json_equals
                .iter()
                .map(|(p, v)| (p.clone(), Some(v.clone()))),
        );
        if let Some((p, _)) = json
            .iter()
            .find(|(p, _)| !p.is_empty() && !p.starts_with('/'))
        {
            return Err(format!(
                "expect: JSON pointer {p:?} must be empty (the whole document) or start with `/`"
            ));
        }
        let body_length = spec.body_length.as_ref().map(|l| match *l {
            Length::Exact(n) => (n, n),
            Length::Range { min, max } => (min.unwrap_or(0), max.unwrap_or(u64::MAX)),
        });
        Ok(Expect {
            status,
            header_present: spec.header_present.clone(),
            header_equals,
            content_type: spec.content_type.clone(),
            body_contains,
            body_finder,
            body_regex,
            json,
            body_length,
        })
    }

    /// Whether a status list is given: it then decides which statuses succeed (else the run's
    /// rule does: 4xx and 5xx are errors, or `--expect-status`).
    pub fn decides_status(&self) -> bool {
        !self.status.is_empty()
    }

    /// Whether the body is needed whole (a body check, its length included): else the
    /// response may be read and dropped as without checks.
    pub fn needs_body(&self) -> bool {
        self.body_contains.is_some()
            || self.body_regex.is_some()
            || !self.json.is_empty()
            || self.body_length.is_some()
    }

    /// Whether a check reads the header fields (a field present or equal, the content type):
    /// else the response's head need not be split into fields for it. Every field is named,
    /// so that a check added to [`Expect`] must be placed here (reading the fields or not).
    pub fn needs_headers(&self) -> bool {
        let Expect {
            status: _,
            header_present,
            header_equals,
            content_type,
            body_contains: _,
            body_finder: _,
            body_regex: _,
            json: _,
            body_length: _,
        } = self;
        !header_present.is_empty() || !header_equals.is_empty() || content_type.is_some()
    }

    /// Holds `answer` to the checks in this order: status, header fields, content type, body
    /// length, body text and regex, JSON; the first that fails is the answer.
    /// `scratch` is the caller's buffer for expanding templates (kept between calls).
    pub fn check(
        &self,
        answer: &Answer<'_>,
        values: &mut impl Values,
        scratch: &mut Vec<u8>,
    ) -> Result<(), CheckFailure> {
        let fail = |kind, detail: String| Err(CheckFailure { kind, detail });
        if !self.status.is_empty() && !self.status.contains(&answer.status) {
            return fail(
                CheckKind::Status,
                format!(
                    "status {} where {:?} was expected",
                    answer.status, self.status
                ),
            );
        }
        for name in &self.header_present {
            if answer.header(name).is_none() {
                return fail(CheckKind::Header, format!("no {name} field"));
            }
        }
        for (name, want) in &self.header_equals {
            scratch.clear();
            if want.expand(values, scratch).is_err() {
                return fail(
                    CheckKind::Header,
                    format!("{name}: its expected value has a value not extracted"),
                );
            }
            match answer.header(name) {
                Some(v) if trim(v) == &scratch[..] => {}
                got => {
                    return fail(
                        CheckKind::Header,
                        format!(
                            "{name}: {:?} where {:?} was expected",
                            got.map(String::from_utf8_lossy),
                            String::from_utf8_lossy(scratch)
                        ),
                    )
                }
            }
        }
        if let Some(want) = &self.content_type {
            let got = answer.header("content-type").unwrap_or_default();
            let media = trim(got.split(|&b| b == b';').next().unwrap_or_default());
            if !media.eq_ignore_ascii_case(want.as_bytes()) {
                return fail(
                    CheckKind::ContentType,
                    format!(
                        "Content-Type {:?} where {want} was expected",
                        String::from_utf8_lossy(got)
                    ),
                );
            }
        }
        if let Some((min, max)) = self.body_length {
            let n = answer.body.len() as u64;
            if n < min || n > max {
                return fail(
                    CheckKind::Length,
                    format!("a body of {n} B where {min} to {max} B was expected"),
                );
            }
        }
        if let Some(t) = &self.body_contains {
            let (found, text) = match &self.body_finder {
                Some(finder) => (finder.find(answer.body).is_some(), finder.needle()),
                None => {
                    scratch.clear();
                    if t.expand(values, scratch).is_err() {
                        return fail(
                            CheckKind::Body,
                            "its expected text has a value not extracted".into(),
                        );
                    }
                    (contains(answer.body, scratch), &scratch[..])
                }
            };
            if !found {
                return fail(
                    CheckKind::Body,
                    format!("the body does not hold {:?}", String::from_utf8_lossy(text)),
                );
            }
        }
        if let Some(re) = &self.body_regex {
            if !re.is_match(answer.body) {
                return fail(CheckKind::Body, format!("the body does not match /{re}/"));
            }
        }
        if !self.json.is_empty() {
            let doc: serde_json::Value = match serde_json::from_slice(answer.body) {
                Ok(doc) => doc,
                Err(e) => return fail(CheckKind::Json, format!("the body is not JSON: {e}")),
            };
            for (pointer, want) in &self.json {
                match (doc.pointer(pointer), want) {
                    (None, _) => return fail(CheckKind::Json, format!("no {pointer} in the body")),
                    (Some(got), Some(want)) if got != want => {
                        return fail(
                            CheckKind::Json,
                            format!("{pointer} is {got} where {want} was expected"),
                        )
                    }
                    _ => {}
                }
            }
        }
        Ok(())
    }
}

fn trim(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::template::Values;

    struct NoNames;

    impl Names for NoNames {
        fn column(&self, set: &str, column: &str) -> Result<(usize, usize), String> {
            (set == "users" && column == "name")
                .then_some((0, 0))
                .ok_or_else(|| format!("no column {set}.{column}"))
        }
        fn value(&self, name: &str) -> Result<usize, String> {
            Err(format!("no value {name}"))
        }
    }

    struct Ann;

    impl Values for Ann {
        fn column(&self, _: usize, _: usize) -> Option<&str> {
            Some("Ann")
        }
        fn value(&self, _: usize) -> Option<&str> {
            None
        }
        fn random(&mut self, low: u64, _: u64) -> u64 {
            low
        }
        fn seq(&self) -> u64 {
            0
        }
        fn webchild(&self) -> u64 {
            0
        }
    }

    fn expect(toml_text: &str) -> Result<Expect, String> {
        let spec: ExpectSpec = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        Expect::compile(&spec, &NoNames)
    }

    fn check(
        e: &Expect,
        status: u16,
        headers: &[(&[u8], &[u8])],
        body: &[u8],
    ) -> Result<(), CheckKind> {
        let a = Answer {
            status,
            headers,
            body,
        };
        e.check(&a, &mut Ann, &mut Vec::new()).map_err(|f| f.kind)
    }

    const HTML: &[(&[u8], &[u8])] = &[
        (b"Content-Type", b"text/html; charset=utf-8"),
        (b"X-Id", b" 7 "),
    ];

    #[test]
    fn each_check_passes_and_fails_as_its_kind() {
        let e = expect(
            r#"status = [200, 304]
content_type = "text/html"
header_present = ["x-id"]
header_equals = { "X-Id" = "7" }
body_contains = "Hello {{users.name}}"
body_regex = "<h1>[A-Z]"
body_length = { min = 10, max = 100 }"#,
        )
        .unwrap();
        assert!(e.needs_body());
        let good = b"<h1>Hello Ann</h1>";
        assert_eq!(check(&e, 200, HTML, good), Ok(()));
        assert_eq!(check(&e, 500, HTML, good), Err(CheckKind::Status));
        assert_eq!(check(&e, 200, &HTML[..1], good), Err(CheckKind::Header));
        assert_eq!(
            check(
                &e,
                200,
                &[(b"Content-Type", b"text/html"), (b"X-Id", b"8")],
                good
            ),
            Err(CheckKind::Header)
        );
        assert_eq!(
            check(
                &e,
                200,
                &[(b"Content-Type", b"application/json"), (b"X-Id", b"7")],
                good
            ),
            Err(CheckKind::ContentType)
        );
        assert_eq!(
            check(&e, 200, HTML, b"<h1>Hello Bo</h1>"),
            Err(CheckKind::Body)
        );
        assert_eq!(
            check(&e, 200, HTML, b"<h1>hello Hello Ann"),
            Err(CheckKind::Body),
            "regex"
        );
        assert_eq!(check(&e, 200, HTML, b"Hello Ann"), Err(CheckKind::Length));
        let one = expect("status = 201").unwrap();
        assert!(!one.needs_body());
        assert_eq!(check(&one, 201, &[], b""), Ok(()));
        assert_eq!(check(&one, 200, &[], b""), Err(CheckKind::Status));
    }

    /// A body_contains with no hole is searched for with the searcher built at compile time
    /// (not expanded per response): its text is the template's, a `{{"{{"}}` read as `{{`.
    #[test]
    fn a_constant_body_text_is_found_by_its_prebuilt_searcher() {
        let e = expect(r#"body_contains = "Welcome {{\"{{\"}}back}}""#).unwrap();
        assert!(
            e.body_finder.is_some(),
            "the constant path is the one tested"
        );
        assert_eq!(check(&e, 200, &[], b"<p>Welcome {{back}}</p>"), Ok(()));
        assert_eq!(check(&e, 200, &[], b"Welcome {{back}}"), Ok(()));
        for body in [
            b"<p>Welcome back</p>".as_slice(),
            b"Welcome {{\"{{\"}}back}}",
            b"Welcome {{bac",
            b"elcome {{back}}",
            b"",
        ] {
            let a = Answer {
                status: 200,
                headers: &[],
                body,
            };
            let f = e.check(&a, &mut Ann, &mut Vec::new()).unwrap_err();
            assert_eq!(f.kind, CheckKind::Body, "{body:?}");
            assert!(f.detail.contains(r#""Welcome {{back}}""#), "{}", f.detail);
        }
    }

    #[test]
    fn json_pointers_must_be_there_and_equal() {
        let e = expect(
            r#"json = "/0/randomNumber"
json_equals = { "/0/id" = 7 }"#,
        )
        .unwrap();
        assert_eq!(
            check(&e, 200, &[], br#"[{"id":7,"randomNumber":3}]"#),
            Ok(())
        );
        assert_eq!(
            check(&e, 200, &[], br#"[{"id":8,"randomNumber":3}]"#),
            Err(CheckKind::Json)
        );
        assert_eq!(check(&e, 200, &[], br#"[{"id":7}]"#), Err(CheckKind::Json));
        assert_eq!(
            check(&e, 200, &[], b"<html>error</html>"),
            Err(CheckKind::Json)
        );
    }

    #[test]
    fn bad_checks_are_refused_before_the_run() {
        for (text, needle) in [
            ("status = 42", "not an HTTP status"),
            ("body_regex = \"(\"", "expect.body_regex"),
            ("json = \"id\"", "start with `/`"),
            (
                "body_contains = \"{{users.email}}\"",
                "no column users.email",
            ),
            ("statuss = 200", "unknown field"),
        ] {
            let e = expect(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
