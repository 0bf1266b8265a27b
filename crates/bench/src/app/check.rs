//! Checks: what a response must be for the request to count as answered, not only that it came
//! (a 200 carrying an error page is the classic false result of a load test). Spelled in a
//! workload file's `expect = { ... }` ([`ExpectSpec`]), compiled once ([`Expect`]), and held
//! against each response ([`Expect::check`]); a failure is an error of its own kind
//! ([`CheckKind`]), counted once per response.

mod json;

pub use super::fields::Fields;
pub use super::spelling::{Length, Statuses};
use super::template::{Escape, Names, Template, Values};
use crate::stats::ErrorKind;
use json::{holds_template, json_equal, text_equal, JsonWant};
use regex::bytes::Regex;
use std::collections::BTreeMap;

/// A response as the checks and extractions see it.
#[derive(Debug, Clone, Copy)]
pub struct Answer<'a> {
    /// The status code, as the status line (HTTP/1.x) or `:status` (HTTP/2 and 3) gave it.
    pub status: u16,
    /// Header fields in order, names as received: every one the head has.
    pub headers: Fields<'a>,
    /// The whole body (decoded from its transfer coding).
    pub body: &'a [u8],
}

impl<'a> Answer<'a> {
    /// The first field named `name` (any case).
    pub fn header(&self, name: &str) -> Option<&'a [u8]> {
        self.headers.get(name.as_bytes())
    }
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
    /// The media type, compared without parameters on either side and in any case:
    /// `text/html; charset=utf-8` matches `text/html` and `Text/HTML; charset=UTF-8`.
    pub content_type: Option<String>,
    /// Text the body holds (a template: `{{users.name}}`).
    pub body_contains: Option<String>,
    /// A regular expression the body matches somewhere (a template without holes: it is
    /// compiled once, so `{{seq}}` is refused).
    pub body_regex: Option<String>,
    /// A JSON pointer (RFC 6901) present in the body parsed as JSON.
    pub json: Option<String>,
    /// JSON pointers and the values they must hold (a string value is a template).
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
    /// Every check kind, in the order of their error kinds in `ErrorKind::ALL`.
    pub const ALL: [CheckKind; 6] = [
        CheckKind::Status,
        CheckKind::Header,
        CheckKind::ContentType,
        CheckKind::Body,
        CheckKind::Json,
        CheckKind::Length,
    ];

    /// The error kind's name in reports and thresholds.
    pub fn name(self) -> &'static str {
        ErrorKind::from(self).name()
    }
}

/// The error kind a failed check is counted as: the one place a check kind is mapped to it.
impl From<CheckKind> for ErrorKind {
    fn from(kind: CheckKind) -> ErrorKind {
        match kind {
            CheckKind::Status => ErrorKind::CheckStatus,
            CheckKind::Header => ErrorKind::CheckHeader,
            CheckKind::ContentType => ErrorKind::CheckContentType,
            CheckKind::Body => ErrorKind::CheckBody,
            CheckKind::Json => ErrorKind::CheckJson,
            CheckKind::Length => ErrorKind::CheckLength,
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
    status: Vec<u16>,
    header_present: Vec<String>,
    header_equals: Vec<(String, Template)>,
    /// The media type alone (`text/html`), any parameter of the spelling dropped.
    content_type: Option<String>,
    body_contains: Option<Template>,
    /// A `body_contains` without a hole: its searcher, built once rather than per response.
    body_finder: Option<memchr::memmem::Finder<'static>>,
    body_regex: Option<Regex>,
    json: Vec<(String, JsonWant)>,
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
        let field_names = spec.header_present.iter().chain(spec.header_equals.keys());
        if let Some(n) = field_names.into_iter().find(|n| !is_token(n)) {
            return Err(format!("expect: header name {n:?} is not an HTTP token"));
        }
        let header_equals = (spec.header_equals.iter())
            .map(|(n, v)| {
                Template::compile(v, Escape::Raw, names)
                    .map(|t| (n.clone(), t))
                    .map_err(|e| format!("expect.header_equals.{n}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        let content_type = (spec.content_type.as_deref())
            .map(media_type)
            .transpose()
            .map_err(|e| format!("expect.content_type: {e}"))?;
        let body_contains = (spec.body_contains.as_deref())
            .map(|t| Template::compile(t, Escape::Raw, names))
            .transpose()
            .map_err(|e| format!("expect.body_contains: {e}"))?;
        let body_finder = (body_contains.as_ref())
            .and_then(Template::constant_text)
            .map(|text| memchr::memmem::Finder::new(&text).into_owned());
        let body_regex = (spec.body_regex.as_deref())
            .map(|r| regex_of_template(r, names))
            .transpose()
            .map_err(|e| format!("expect.body_regex: {e}"))?;
        let mut json: Vec<(String, JsonWant)> = (spec.json.iter())
            .map(|p| (p.clone(), JsonWant::Present))
            .collect();
        for (p, v) in &spec.json_equals {
            let want = match v {
                serde_json::Value::String(s) => JsonWant::Text(
                    Template::compile(s, Escape::Raw, names)
                        .map_err(|e| format!("expect.json_equals.{p:?}: {e}"))?,
                ),
                other if holds_template(other) => {
                    return Err(format!(
                        "expect.json_equals.{p:?}: a template is a string value of its own, \
                         not a string inside an array or an object"
                    ))
                }
                other => JsonWant::Value(other.clone()),
            };
            json.push((p.clone(), want));
        }
        for (p, _) in &json {
            if !p.is_empty() && !p.starts_with('/') {
                return Err(format!(
                    "expect: JSON pointer {p:?} must be empty (the whole document) or start with `/`"
                ));
            }
            if p.contains("{{") {
                return Err(format!(
                    "expect: JSON pointer {p:?}: a pointer takes no template (its values may)"
                ));
            }
        }
        let body_length = spec.body_length.as_ref().map(|l| match *l {
            Length::Exact(n) => (n, n),
            Length::Range { min, max } => (min.unwrap_or(0), max.unwrap_or(u64::MAX)),
        });
        if let Some((min, max)) = body_length.filter(|(min, max)| min > max) {
            return Err(format!(
                "expect.body_length: min {min} is above max {max}: no body could match"
            ));
        }
        Ok(Expect {
            status,
            header_present: spec.header_present.clone(),
            header_equals,
            content_type,
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
            // The failures' words only: a check that holds converts nothing.
            let want = || String::from_utf8_lossy(scratch);
            match answer.header(name) {
                Some(v) if trim(v) == &scratch[..] => {}
                Some(v) => {
                    let (got, want) = (String::from_utf8_lossy(v), want());
                    let detail = format!("{name}: {got:?} where {want:?} was expected");
                    return fail(CheckKind::Header, detail);
                }
                None => {
                    let detail = format!("no {name} field where {:?} was expected", want());
                    return fail(CheckKind::Header, detail);
                }
            }
        }
        if let Some(want) = &self.content_type {
            let Some(got) = answer.header("content-type") else {
                return fail(
                    CheckKind::ContentType,
                    format!("no Content-Type field where {want} was expected"),
                );
            };
            let media = trim(got.split(|&b| b == b';').next().unwrap_or_default());
            if !media.eq_ignore_ascii_case(want.as_bytes()) {
                return fail(
                    CheckKind::ContentType,
                    format!(
                        "media type {} (Content-Type: {}) where {want} was expected",
                        String::from_utf8_lossy(media),
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
                let Some(got) = doc.pointer(pointer) else {
                    return fail(CheckKind::Json, format!("no {pointer} in the body"));
                };
                let equal = match want {
                    JsonWant::Present => continue,
                    JsonWant::Value(want) => json_equal(got, want),
                    JsonWant::Text(t) => {
                        scratch.clear();
                        if t.expand(values, scratch).is_err() {
                            return fail(
                                CheckKind::Json,
                                format!("{pointer}: its expected value has a value not extracted"),
                            );
                        }
                        text_equal(got, scratch, !t.is_constant())
                    }
                };
                if !equal {
                    let want = match want {
                        JsonWant::Value(v) => v.to_string(),
                        _ => format!("{:?}", String::from_utf8_lossy(scratch)),
                    };
                    return fail(
                        CheckKind::Json,
                        format!("{pointer} is {got} where {want} was expected"),
                    );
                }
            }
        }
        Ok(())
    }
}

/// The media type of a `content_type` check (`type/subtype`, any parameter after a `;`
/// dropped, as it is on the response's side), or why it is none.
fn media_type(spelled: &str) -> Result<String, String> {
    let media = spelled.split(';').next().unwrap_or_default().trim();
    match media.split_once('/') {
        Some((kind, sub)) if is_token(kind) && is_token(sub) => Ok(media.to_owned()),
        _ => Err(format!(
            "{spelled:?} is not a media type (type/subtype, as text/html)"
        )),
    }
}

/// The regular expression a `body_regex` spells: a template without a hole (its `{{"{{"}}`
/// read as `{{`), since it is compiled once before the run; a hole is refused with the name
/// it uses checked first, as in every template.
fn regex_of_template(spelled: &str, names: &impl Names) -> Result<Regex, String> {
    let text = match spelled.contains("{{") {
        false => spelled.to_owned(),
        true => {
            let t = Template::compile(spelled, Escape::Raw, names)?;
            let Some(text) = t.constant_text() else {
                return Err(format!(
                    "{spelled:?}: a regular expression takes no template (it is compiled once, \
                     before the run; body_contains checks a value)"
                ));
            };
            String::from_utf8_lossy(&text).into_owned()
        }
    };
    Regex::new(&text).map_err(|e| regex_error(&text, &e))
}

/// A regular expression's error in one line: the regex crate's syntax error is four (the
/// pattern, a caret under the place, the reason).
pub(crate) fn regex_error(pattern: &str, e: &regex::Error) -> String {
    let text = e.to_string();
    let reason = (text.lines().rev())
        .find_map(|l| l.trim().strip_prefix("error: "))
        .map_or_else(
            || text.split_whitespace().collect::<Vec<_>>().join(" "),
            str::to_owned,
        );
    format!("{pattern:?} is not a regular expression: {reason}")
}

/// RFC 9110's token: a field name, a media type's type and subtype.
fn is_token(s: &str) -> bool {
    wire::is_token(s.as_bytes())
}

fn trim(v: &[u8]) -> &[u8] {
    v.trim_ascii()
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(haystack, needle).is_some()
}

#[cfg(test)]
mod tests;
