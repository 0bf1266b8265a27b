//! Extraction: a value taken from a response into the Webchild's session (a token from a
//! header, a cookie's value, a regular expression's group, a JSON pointer), for the requests
//! that follow to use (`{{token}}`), as Gatling's `check(...).saveAs` and JMeter's extractors.
//! A value that is not there is an `extract_missing` error; the requests that need it are then
//! not sent (counted), never sent with an empty value.

use super::check::Answer;
pub use super::spelling::SourceSpec;
use regex::bytes::{CaptureLocations, Regex};
use std::borrow::Cow;

/// One compiled extraction into session slot `slot`.
#[derive(Debug, Clone)]
pub struct Extract {
    /// The value's name, as templates use it (`{{token}}`).
    pub name: String,
    /// Its index in the session's values ([`super::plan::Plan::values`]): every extraction of
    /// the same name fills the same slot.
    pub slot: usize,
    source: Source,
}

/// One Webchild's room for an extraction's regular expression groups ([`Extract::room`]).
#[derive(Debug, Clone)]
pub struct Room(Option<CaptureLocations>);

#[derive(Debug, Clone)]
enum Source {
    Header(String),
    Cookie(String),
    Regex(Regex),
    Json(String),
}

impl Extract {
    /// Compiles `spec` into an extraction of value `name` into `slot`; the error names the
    /// extraction (a name a template could not use, a bad regex, a pointer without `/`).
    pub fn compile(name: &str, slot: usize, spec: &SourceSpec) -> Result<Extract, String> {
        // A template reads `{{a.b}}` as a data column and `{{seq}}` as the function: a value
        // named so could be extracted but never used.
        let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
        if name.is_empty() || !name.bytes().all(word) {
            return Err(format!(
                "extract.{name:?}: letters, digits, `_` and `-` only (templates name it as {{{{NAME}}}})"
            ));
        }
        if ["seq", "random", "webchild"].contains(&name) {
            return Err(format!(
                "extract.{name}: `{name}` is a template function, a value named so could never be used"
            ));
        }
        let source = match spec {
            SourceSpec::Header(h) => Source::Header(h.clone()),
            SourceSpec::Cookie(c) => Source::Cookie(c.clone()),
            SourceSpec::Regex(r) => {
                let re = Regex::new(r).map_err(|e| super::check::regex_error(r, &e));
                Source::Regex(re.map_err(|e| format!("extract.{name}.regex: {e}"))?)
            }
            SourceSpec::Json(p) => {
                if !p.is_empty() && !p.starts_with('/') {
                    return Err(format!(
                        "extract.{name}.json: {p:?} must be empty or start with `/`"
                    ));
                }
                Source::Json(p.clone())
            }
        };
        Ok(Extract {
            name: name.to_owned(),
            slot,
            source,
        })
    }

    /// A Webchild's room for this extraction's regular expression groups, made once and reused
    /// for every response (finding groups otherwise allocates their offsets each time).
    pub fn room(&self) -> Room {
        Room(match &self.source {
            Source::Regex(re) => Some(re.capture_locations()),
            _ => None,
        })
    }

    /// Whether the body is needed whole.
    pub fn needs_body(&self) -> bool {
        matches!(self.source, Source::Regex(_) | Source::Json(_))
    }

    /// The value in `answer`, or `None` (`extract_missing`). A value must be UTF-8 and not
    /// empty: an empty header, a JSON `""` or `null`, or a cookie being deleted (`sid=; Max-Age=0`) gives
    /// nothing a later request could use. `room` is this extraction's (from [`Extract::room`]).
    /// A value read from the response is borrowed from it (the session copies it into a buffer
    /// it keeps); only a JSON value, parsed into a document, is owned.
    pub fn take<'a>(&self, answer: &Answer<'a>, room: &mut Room) -> Option<Cow<'a, str>> {
        match self.bytes(answer, room)? {
            Cow::Borrowed(b) => std::str::from_utf8(b).ok().map(Cow::Borrowed),
            Cow::Owned(v) => String::from_utf8(v).ok().map(Cow::Owned),
        }
    }

    /// Why [`Extract::take`] found no value in `answer`, as a failure's sample says it.
    #[cold]
    pub fn missing(&self, answer: &Answer<'_>, room: &mut Room) -> String {
        match self.bytes(answer, room) {
            Some(b) if std::str::from_utf8(&b).is_err() => format!(
                "the value for {:?} in the response is not UTF-8 (a value is text: {:?})",
                self.name,
                String::from_utf8_lossy(&b)
            ),
            _ => format!("no value for {:?} in the response", self.name),
        }
    }

    /// The value's bytes in `answer`, not empty (whether they are text is [`Extract::take`]'s
    /// to say).
    fn bytes<'a>(&self, answer: &Answer<'a>, room: &mut Room) -> Option<Cow<'a, [u8]>> {
        let value = |b: &'a [u8]| (!b.is_empty()).then_some(Cow::Borrowed(b));
        match &self.source {
            Source::Header(h) => answer.header(h).and_then(|v| value(v.trim_ascii())),
            Source::Cookie(name) => answer.headers.all(b"set-cookie").find_map(|v| {
                let pair = v.split(|&b| b == b';').next()?;
                let eq = pair.iter().position(|&b| b == b'=')?;
                (pair[..eq].trim_ascii() == name.as_bytes())
                    .then(|| value(pair[eq + 1..].trim_ascii()))
                    .flatten()
            }),
            Source::Regex(re) => {
                let locs = room.0.get_or_insert_with(|| re.capture_locations());
                re.captures_read(locs, answer.body)?;
                // With a group, group 1 only: when it took no part in the match (`(a)|b`
                // matching `b`), there is no value, not the whole match.
                let group = usize::from(re.captures_len() > 1);
                let (start, end) = locs.get(group)?;
                value(&answer.body[start..end])
            }
            Source::Json(pointer) => {
                let doc: serde_json::Value = serde_json::from_slice(answer.body).ok()?;
                match doc.pointer(pointer)? {
                    serde_json::Value::String(s) if !s.is_empty() => {
                        Some(Cow::Owned(s.clone().into_bytes()))
                    }
                    serde_json::Value::String(_) | serde_json::Value::Null => None,
                    other => Some(Cow::Owned(other.to_string().into_bytes())),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer<'a>(head: &'a [u8], body: &'a [u8]) -> Answer<'a> {
        Answer {
            status: 200,
            headers: crate::app::fields::Fields::of_head(head),
            body,
        }
    }

    fn take(spec: SourceSpec, a: &Answer<'_>) -> Option<String> {
        let x = Extract::compile("v", 0, &spec).unwrap();
        let mut room = x.room();
        let first = x.take(a, &mut room).map(Cow::into_owned);
        // The room, once used, gives the same answer again.
        assert_eq!(x.take(a, &mut room).map(Cow::into_owned), first);
        first
    }

    #[test]
    fn values_come_from_headers_cookies_regex_groups_and_json() {
        let headers = b"HTTP/1.1 200 OK\r\nX-Token:  abc123 \r\nSet-Cookie: theme=dark; Path=/\r\n\
                        set-cookie: sid=s%3A42; HttpOnly; Secure\r\n";
        let a = answer(
            headers,
            br#"{"id": 7, "user": {"name": "Ann"}, "none": null} csrf="t-9""#,
        );
        let json = answer(
            headers,
            br#"{"id": 7, "user": {"name": "Ann"}, "none": null}"#,
        );
        assert_eq!(
            take(SourceSpec::Header("x-token".into()), &a).as_deref(),
            Some("abc123")
        );
        assert_eq!(
            take(SourceSpec::Cookie("sid".into()), &a).as_deref(),
            Some("s%3A42")
        );
        assert_eq!(take(SourceSpec::Cookie("si".into()), &a), None);
        assert_eq!(
            take(SourceSpec::Regex(r#"csrf="([^"]+)""#.into()), &a).as_deref(),
            Some("t-9")
        );
        assert_eq!(
            take(SourceSpec::Regex("csrf".into()), &a).as_deref(),
            Some("csrf")
        );
        assert_eq!(
            take(SourceSpec::Json("/user/name".into()), &json).as_deref(),
            Some("Ann")
        );
        assert_eq!(
            take(SourceSpec::Json("/id".into()), &json).as_deref(),
            Some("7")
        );
        assert_eq!(take(SourceSpec::Json("/none".into()), &json), None);
        assert_eq!(take(SourceSpec::Json("/missing".into()), &json), None);
        assert_eq!(take(SourceSpec::Json("/id".into()), &a), None, "not JSON");
    }

    #[test]
    fn a_value_that_is_not_text_is_missing_and_says_so() {
        let x = Extract::compile("t", 0, &SourceSpec::Regex(r#"(?-u)tok="([^"]*)""#.into()));
        let x = x.unwrap();
        let mut room = x.room();
        let latin = answer(b"", b"tok=\"caf\xe9\"");
        assert_eq!(x.take(&latin, &mut room), None);
        let why = x.missing(&latin, &mut room);
        assert!(why.contains("\"t\" in the response is not UTF-8"), "{why}");
        assert!(why.contains("caf\u{fffd}"), "{why}");
        let none = answer(b"", b"nothing");
        assert_eq!(
            x.missing(&none, &mut room),
            "no value for \"t\" in the response"
        );
    }

    #[test]
    fn a_room_reused_after_a_match_of_its_group_holds_no_stale_offsets() {
        let x = Extract::compile("v", 0, &SourceSpec::Regex("(a)|b".into())).unwrap();
        let mut room = x.room();
        let took_part = answer(b"", b"a");
        let did_not = answer(b"", b"b");
        assert_eq!(x.take(&took_part, &mut room).as_deref(), Some("a"));
        assert_eq!(x.take(&did_not, &mut room), None);
        assert_eq!(x.take(&took_part, &mut room).as_deref(), Some("a"));
    }

    #[test]
    fn empty_values_and_a_group_that_took_no_part_are_missing() {
        let headers = b"HTTP/1.1 200 OK\r\nX-Token:   \r\nSet-Cookie: sid=; Max-Age=0; Path=/\r\n";
        let a = answer(headers, br#"{"token": "", "n": 0} id=b"#);
        let json = answer(headers, br#"{"token": "", "n": 0}"#);
        assert_eq!(take(SourceSpec::Header("x-token".into()), &a), None);
        assert_eq!(take(SourceSpec::Cookie("sid".into()), &a), None);
        assert_eq!(take(SourceSpec::Json("/token".into()), &json), None);
        assert_eq!(
            take(SourceSpec::Json("/n".into()), &json).as_deref(),
            Some("0")
        );
        // Group 1 did not take part: no value, not `id=b`.
        assert_eq!(take(SourceSpec::Regex("id=(a)|id=b".into()), &a), None);
        assert_eq!(take(SourceSpec::Regex("id=()b".into()), &a), None, "empty");
        assert_eq!(
            take(SourceSpec::Regex("id=(a|b)".into()), &a).as_deref(),
            Some("b")
        );
    }

    #[test]
    fn bad_extractions_are_refused_before_the_run() {
        assert!(Extract::compile("t", 0, &SourceSpec::Regex("(".into()))
            .unwrap_err()
            .contains("extract.t.regex"));
        assert!(Extract::compile("t", 0, &SourceSpec::Json("id".into()))
            .unwrap_err()
            .contains("start with `/`"));
    }
}
