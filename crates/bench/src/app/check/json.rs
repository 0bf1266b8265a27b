//! `json_equals`: what a pointer must hold, and JSON values compared as RFC 8259 has them.

use super::Template;

/// What a JSON pointer must hold.
#[derive(Debug, Clone)]
pub(super) enum JsonWant {
    /// `json = "/p"`: anything.
    Present,
    /// A number, `true`, `false`, `null`, an array or an object: equal as JSON (numbers by
    /// value, so `7` equals `7.0`).
    Value(serde_json::Value),
    /// A string: a template, equal to a JSON string of its expansion (or, when it has a hole,
    /// to a number of the value its expansion reads as: a data column's `7` equals `7`).
    Text(Template),
}

/// Whether a string inside `v` (an array or an object) spells a template hole.
pub(super) fn holds_template(v: &serde_json::Value) -> bool {
    match v {
        serde_json::Value::String(s) => s.contains("{{"),
        serde_json::Value::Array(a) => a.iter().any(holds_template),
        serde_json::Value::Object(o) => o.values().any(holds_template),
        _ => false,
    }
}

/// JSON values equal as RFC 8259 has them: one number type, so `7` equals `7.0`; arrays in
/// order, objects whatever the order of their members.
pub(super) fn json_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => number_equal(x, y),
        (V::Array(x), V::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_equal(x, y))
        }
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// Integers exactly (every `i64` and `u64`); an integer and a float only if the float is whole
/// and is that integer exactly (not as `f64`s: 9007199254740993 would equal
/// 9007199254740992.0); two floats by value.
fn number_equal(x: &serde_json::Number, y: &serde_json::Number) -> bool {
    let integer = |n: &serde_json::Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    // Past ±2^127 `as` saturates, to no value an i64 or u64 has; NaN and infinities have no
    // whole part (JSON has neither).
    let whole_is = |f: f64, i: i128| f.fract() == 0.0 && f as i128 == i;
    match (integer(x), integer(y)) {
        (Some(a), Some(b)) => a == b,
        (Some(i), None) => y.as_f64().is_some_and(|f| whole_is(f, i)),
        (None, Some(i)) => x.as_f64().is_some_and(|f| whole_is(f, i)),
        (None, None) => x.as_f64().zip(y.as_f64()).is_some_and(|(a, b)| a == b),
    }
}

/// Whether JSON value `got` is the expanded text `want` of a `json_equals` string: a string of
/// that text, or (`templated`: the text came from a hole) a number of the value it reads as.
pub(super) fn text_equal(got: &serde_json::Value, want: &[u8], templated: bool) -> bool {
    match got {
        serde_json::Value::String(s) => s.as_bytes() == want,
        serde_json::Value::Number(n) if templated => {
            serde_json::from_slice::<serde_json::Number>(want).is_ok_and(|w| number_equal(n, &w))
        }
        _ => false,
    }
}
