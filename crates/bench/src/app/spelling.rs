//! How a workload file spells a check's status list, a body length and an extraction's
//! source, read with messages that say what is wanted (`status = "200"`: "expected a status
//! code as an integer"), where serde's untagged and externally tagged enums would name their
//! own machinery ("did not match any variant of untagged enum", "wanted exactly 1 element").
//! Each is written back as serde derives it (the hosts protocol carries them as JSON), and
//! read from that too.

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Unexpected, Visitor};
use std::fmt;

/// One status or a list of them.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(untagged)]
pub enum Statuses {
    /// `status = 200`: only this one.
    One(u16),
    /// `status = [200, 304]`: any of these.
    Any(Vec<u16>),
}

/// A body length: exact, or a range.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
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

/// Where an extracted value comes from, as a workload file spells it:
/// `extract = { token = { header = "X-Token" }, id = { json = "/id" } }`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceSpec {
    /// A response header field's value (the first of that name).
    Header(String),
    /// The value of a cookie the response sets (`Set-Cookie: NAME=value; ...`).
    Cookie(String),
    /// A regular expression over the body: its first group if it has one (nothing when that
    /// group took no part in the match), else the match.
    Regex(String),
    /// A JSON pointer (RFC 6901) into the body: a string as it is, a number, `true`, `false`,
    /// an array or an object as JSON (`null` and `""` are no value).
    Json(String),
}

const SOURCES: &[&str] = &["header", "cookie", "regex", "json"];

/// A status code: an integer of 0 to 65535 here (the check's compiler refuses one outside
/// 100 to 599 with its own line).
struct Code(u16);

fn code<E: de::Error>(v: u64) -> Result<u16, E> {
    u16::try_from(v)
        .map_err(|_| E::custom(format!("status {v} is not an HTTP status (100 to 599)")))
}

impl<'de> serde::Deserialize<'de> for Code {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Code;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a status code as an integer (200, not \"200\")")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Code, E> {
                code(v).map(Code)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Code, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(Unexpected::Signed(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> serde::Deserialize<'de> for Statuses {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Statuses;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a status code as an integer (status = 200) or a list of them (status = [200, 304])")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Statuses, E> {
                code(v).map(Statuses::One)
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Statuses, E> {
                match u64::try_from(v) {
                    Ok(v) => self.visit_u64(v),
                    Err(_) => Err(E::invalid_value(Unexpected::Signed(v), &self)),
                }
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Statuses, A::Error> {
                let mut all = Vec::new();
                while let Some(Code(c)) = seq.next_element()? {
                    all.push(c);
                }
                if all.is_empty() {
                    return Err(de::Error::custom(
                        "status = []: an empty list lets no response succeed",
                    ));
                }
                Ok(Statuses::Any(all))
            }
        }
        d.deserialize_any(V)
    }
}

/// A number of bytes: 0 or more.
struct Bytes(u64);

impl<'de> serde::Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(BytesVisitor)
    }
}

struct BytesVisitor;

impl<'de> Visitor<'de> for BytesVisitor {
    type Value = Bytes;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a number of bytes (an integer, 0 or more)")
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Bytes, E> {
        Ok(Bytes(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Bytes, E> {
        u64::try_from(v)
            .map(Bytes)
            .map_err(|_| E::invalid_value(Unexpected::Signed(v), &self))
    }
}

impl<'de> serde::Deserialize<'de> for Length {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Length;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a number of bytes (body_length = 512, 0 or more) or bounds (body_length = { min = 1, max = 4096 })",
                )
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Length, E> {
                Ok(Length::Exact(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Length, E> {
                BytesVisitor.visit_i64(v).map(|b| Length::Exact(b.0))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Length, A::Error> {
                let (mut min, mut max) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    let slot = match key.as_str() {
                        "min" => &mut min,
                        "max" => &mut max,
                        other => return Err(de::Error::unknown_field(other, &["min", "max"])),
                    };
                    if slot.is_some() {
                        return Err(de::Error::custom(format!("body_length.{key} given twice")));
                    }
                    // `null` (as the hosts protocol writes an absent bound) is no bound.
                    *slot = Some(map.next_value::<Option<Bytes>>()?.map(|b| b.0));
                }
                Ok(Length::Range {
                    min: min.flatten(),
                    max: max.flatten(),
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl<'de> serde::Deserialize<'de> for SourceSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SourceSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("one source: { header = \"X-Token\" }, cookie, regex or json")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SourceSpec, A::Error> {
                let mut found: Vec<(String, String)> = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    if !SOURCES.contains(&key.as_str()) {
                        return Err(de::Error::unknown_variant(&key, SOURCES));
                    }
                    found.push((key, map.next_value()?));
                }
                let mut found = found.into_iter();
                match (found.next(), found.len()) {
                    (Some((key, text)), 0) => Ok(match key.as_str() {
                        "header" => SourceSpec::Header(text),
                        "cookie" => SourceSpec::Cookie(text),
                        "regex" => SourceSpec::Regex(text),
                        _ => SourceSpec::Json(text),
                    }),
                    (None, _) => Err(de::Error::custom(
                        "an extraction needs a source: header, cookie, regex or json",
                    )),
                    (Some((key, _)), _) => {
                        let others: Vec<String> = found.map(|(k, _)| k).collect();
                        Err(de::Error::custom(format!(
                            "an extraction takes one source; found {key} and {}",
                            others.join(" and ")
                        )))
                    }
                }
            }
        }
        d.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Probe {
        status: Option<Statuses>,
        body_length: Option<Length>,
        source: Option<SourceSpec>,
    }

    fn refusal(text: &str) -> String {
        let e = toml::from_str::<Probe>(text).unwrap_err();
        e.message().trim().to_owned()
    }

    /// Each refusal is one line saying what is wanted, never serde's enum machinery.
    #[test]
    fn bad_spellings_say_what_is_wanted_in_one_line() {
        for (text, needle) in [
            ("status = \"200\"", "a status code as an integer"),
            ("status = [200, \"304\"]", "200, not \"200\""),
            ("status = 70000", "not an HTTP status"),
            ("status = []", "empty list"),
            ("body_length = -1", "0 or more"),
            ("body_length = { min = -1 }", "0 or more"),
            ("body_length = { least = 1 }", "unknown field `least`"),
            ("body_length = \"big\"", "a number of bytes"),
            (
                "source = { header = \"X\", cookie = \"s\" }",
                "an extraction takes one source; found ",
            ),
            ("source = { form = \"x\" }", "unknown variant `form`"),
            ("source = {}", "needs a source"),
        ] {
            let e = refusal(text);
            assert!(e.contains(needle), "{text}: {e}");
            assert!(
                !e.contains("untagged") && !e.contains("element"),
                "{text}: {e}"
            );
            assert_eq!(e.lines().count(), 1, "{text}: {e}");
        }
    }

    #[test]
    fn what_serde_writes_reads_back() {
        for v in [
            serde_json::json!({"status": 200, "body_length": 7, "source": {"json": "/id"}}),
            serde_json::json!({"status": [200, 304], "body_length": {"min": 1, "max": null}}),
        ] {
            let p: Probe = serde_json::from_value(v.clone()).unwrap();
            let back = serde_json::json!({
                "status": p.status, "body_length": p.body_length, "source": p.source,
            });
            // A key absent from `v` reads as null, as an absent source is written.
            for key in ["status", "body_length", "source"] {
                assert_eq!(back[key], v[key], "{key}");
            }
        }
        let p: Probe = toml::from_str("body_length = { max = 9 }").unwrap();
        assert_eq!(
            p.body_length,
            Some(Length::Range {
                min: None,
                max: Some(9)
            })
        );
    }
}
