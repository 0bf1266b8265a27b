//! The checks held to responses, and refused before the run.

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
    let head = head_of(headers);
    let a = Answer {
        status,
        headers: Fields::of_head(&head),
        body,
    };
    e.check(&a, &mut Ann, &mut Vec::new()).map_err(|f| f.kind)
}

/// A response head of `fields`, as a connection keeps it for the checks.
fn head_of(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut head = b"HTTP/1.1 200 OK\r\n".to_vec();
    for (n, v) in fields {
        head.extend_from_slice(&[n, &b": "[..], v, &b"\r\n"[..]].concat());
    }
    head
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
            headers: Fields::default(),
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

/// A `json_equals` string is a template like every check's text: expanded per response,
/// and a name that does not exist refused before the run.
#[test]
fn json_equals_strings_are_templates() {
    let e = expect(r#"json_equals = { "/0/name" = "{{users.name}}", "/0/id" = "{{users.name}}" }"#)
        .unwrap();
    assert_eq!(
        check(&e, 200, &[], br#"[{"name":"Ann","id":"Ann"}]"#),
        Ok(())
    );
    assert_eq!(
        check(&e, 200, &[], br#"[{"name":"Bo","id":"Ann"}]"#),
        Err(CheckKind::Json)
    );
    let literal = expect(r#"json_equals = { "/n" = "{{\"{{\"}}x}}" }"#).unwrap();
    assert_eq!(check(&literal, 200, &[], br#"{"n":"{{x}}"}"#), Ok(()));
    let e = expect(r#"json_equals = { "/0/name" = "{{nope}}" }"#).unwrap_err();
    assert!(e.contains("no value nope"), "{e}");
    let e = expect(r#"json_equals = { "/0" = ["{{users.name}}"] }"#).unwrap_err();
    assert!(e.contains("a string value of its own"), "{e}");
}

/// A hole's text equals a JSON number of its value (a data column's `7`); a constant
/// string stays a string.
#[test]
fn a_templated_json_string_matches_the_number_it_reads_as() {
    struct Seven;
    impl Values for Seven {
        fn column(&self, _: usize, _: usize) -> Option<&str> {
            Some("7")
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
    let held = |e: &Expect, body: &[u8]| {
        let a = Answer {
            status: 200,
            headers: Fields::default(),
            body,
        };
        e.check(&a, &mut Seven, &mut Vec::new()).map_err(|f| f.kind)
    };
    let e = expect(r#"json_equals = { "/id" = "{{users.name}}" }"#).unwrap();
    for body in [r#"{"id":7}"#, r#"{"id":7.0}"#, r#"{"id":"7"}"#] {
        assert_eq!(held(&e, body.as_bytes()), Ok(()), "{body}");
    }
    assert_eq!(held(&e, br#"{"id":8}"#), Err(CheckKind::Json));
    let constant = expect(r#"json_equals = { "/id" = "7" }"#).unwrap();
    assert_eq!(held(&constant, br#"{"id":7}"#), Err(CheckKind::Json));
}

/// RFC 8259 has one number type: `7.0` expected equals `7` received, in depth too.
#[test]
fn json_numbers_are_compared_by_value() {
    let e = expect(r#"json_equals = { "/0/id" = 7.0, "/0/v" = { a = [1, 2.5] } }"#).unwrap();
    assert_eq!(
        check(&e, 200, &[], br#"[{"id":7,"v":{"a":[1.0,2.5]}}]"#),
        Ok(())
    );
    assert_eq!(
        check(&e, 200, &[], br#"[{"id":7.5,"v":{"a":[1,2.5]}}]"#),
        Err(CheckKind::Json)
    );
    assert_eq!(
        check(&e, 200, &[], br#"[{"id":7,"v":{"a":[1,2]}}]"#),
        Err(CheckKind::Json)
    );
    let big = expect(r#"json_equals = { "/n" = 9007199254740993 }"#).unwrap();
    assert_eq!(check(&big, 200, &[], br#"{"n":9007199254740993}"#), Ok(()));
    assert_eq!(
        check(&big, 200, &[], br#"{"n":9007199254740992}"#),
        Err(CheckKind::Json)
    );
    // 9007199254740992.0 is 2^53 exactly, not 2^53 + 1 (which an f64 cannot hold).
    for body in [
        &br#"{"n":9007199254740992.0}"#[..],
        br#"{"n":9.007199254740992e15}"#,
    ] {
        let got = check(&big, 200, &[], body);
        assert_eq!(
            got,
            Err(CheckKind::Json),
            "{}",
            String::from_utf8_lossy(body)
        );
    }
    let float = expect(r#"json_equals = { "/n" = 9007199254740992.0 }"#).unwrap();
    assert_eq!(
        check(&float, 200, &[], br#"{"n":9007199254740992}"#),
        Ok(())
    );
    assert_eq!(
        check(&float, 200, &[], br#"{"n":9007199254740993}"#),
        Err(CheckKind::Json)
    );
    let negative = expect(r#"json_equals = { "/n" = -3 }"#).unwrap();
    assert_eq!(check(&negative, 200, &[], br#"{"n":-3.0}"#), Ok(()));
    assert_eq!(
        check(&negative, 200, &[], br#"{"n":-3.5}"#),
        Err(CheckKind::Json)
    );
    assert_eq!(
        check(&negative, 200, &[], br#"{"n":18446744073709551613}"#),
        Err(CheckKind::Json)
    );
}

/// A regular expression is compiled once: a hole is refused in one line (its name checked
/// first), a `{{"{{"}}` is a literal `{{`.
#[test]
fn body_regex_takes_no_template_hole() {
    let e = expect(r#"body_regex = "id.: {{seq}}""#).unwrap_err();
    assert!(e.contains("takes no template"), "{e}");
    assert_eq!(e.lines().count(), 1, "{e}");
    let e = expect(r#"body_regex = "{{nope}}""#).unwrap_err();
    assert!(e.contains("no value nope"), "{e}");
    // The literal reaches the regex compiler as `{{` (which then refuses it).
    let e = expect(r#"body_regex = "a{{\"{{\"}}""#).unwrap_err();
    assert!(e.contains(r#""a{{" is not a regular expression"#), "{e}");
    let e = expect(r#"body_regex = "id: ([0-9]+""#).unwrap_err();
    assert_eq!(e.lines().count(), 1, "{e}");
    assert!(e.contains("unclosed group"), "{e}");
}

/// Parameters are dropped on both sides, the media type compared in any case; a failure
/// says what came and what was wanted, not the same text twice.
#[test]
fn content_type_parameters_are_ignored_on_both_sides() {
    let e = expect(r#"content_type = "application/json; charset=utf-8""#).unwrap();
    for got in [
        b"application/json".as_slice(),
        b"Application/JSON; charset=UTF-8",
        b"application/json;charset=latin1",
    ] {
        assert_eq!(check(&e, 200, &[(b"Content-Type", got)], b""), Ok(()));
    }
    let a = Answer {
        status: 200,
        headers: Fields::of_head(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"),
        body: b"",
    };
    let f = e.check(&a, &mut Ann, &mut Vec::new()).unwrap_err();
    assert_eq!(f.kind, CheckKind::ContentType);
    assert_eq!(
        f.detail,
        "media type text/html (Content-Type: text/html; charset=utf-8) where application/json was expected"
    );
    assert_eq!(check(&e, 200, &[], b""), Err(CheckKind::ContentType));
    let e = expect(r#"content_type = "json""#).unwrap_err();
    assert!(e.contains("not a media type"), "{e}");
}

#[test]
fn impossible_checks_are_refused() {
    for (text, needle) in [
        (
            "body_length = { min = 10, max = 1 }",
            "min 10 is above max 1",
        ),
        ("header_present = [\"Bad Name\"]", "not an HTTP token"),
        ("header_equals = { \"X:\" = \"1\" }", "not an HTTP token"),
        ("json = \"/{{users.name}}\"", "takes no template"),
    ] {
        let e = expect(text).unwrap_err();
        assert!(e.contains(needle), "{text}: {e}");
    }
    assert!(expect("body_length = { min = 1, max = 1 }").is_ok());
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

/// A field `header_equals` names that is missing is said in words, as `header_present` says
/// it; one of another value shows both.
#[test]
fn a_header_equals_failure_says_what_came() {
    let e = expect(r#"header_equals = { "X-User" = "nobody" }"#).unwrap();
    let detail = |fields: &[(&[u8], &[u8])]| {
        let head = head_of(fields);
        let a = Answer {
            status: 200,
            headers: Fields::of_head(&head),
            body: b"",
        };
        e.check(&a, &mut Ann, &mut Vec::new()).unwrap_err().detail
    };
    assert_eq!(
        detail(&[]),
        r#"no X-User field where "nobody" was expected"#
    );
    assert_eq!(
        detail(&[(b"X-User", b"ann")]),
        r#"X-User: "ann" where "nobody" was expected"#
    );
}

/// Each check kind is counted as an error kind of its own, and every error kind named as a
/// check is one of them: `CheckKind::ALL` misses none, so the summary's note on failed checks
/// sees every one.
#[test]
fn each_check_kind_is_an_error_kind_of_its_own_and_all_of_them_are_listed() {
    use crate::stats::ErrorKind;
    let counted: Vec<ErrorKind> = CheckKind::ALL.map(ErrorKind::from).to_vec();
    let named: Vec<ErrorKind> = (ErrorKind::ALL.into_iter())
        .filter(|k| k.name().starts_with("check_"))
        .collect();
    assert_eq!(counted, named);
    for c in CheckKind::ALL {
        assert_eq!(c.name(), ErrorKind::from(c).name());
    }
}
