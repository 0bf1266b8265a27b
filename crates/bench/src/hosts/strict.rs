//! Reading a peer's line strictly: a message of another flint build is refused, never half
//! understood.
//!
//! serde skips the fields a type does not know and fills the fields a line lacks (every
//! `Option` as `None`, every `#[serde(default)]` field as its default). Between two builds of
//! flint that is a dishonest run: a worker built before `--redirect` would run without following
//! redirects, and report the run as the one asked for. So a line is read as JSON, then as the
//! message, and the message is written back as JSON: every field of the line must be in what was
//! written back (else the peer sent a field this build does not know), and every field written
//! back must be in the line (else this build filled in a field the peer did not send), at every
//! depth. This holds for every type a message carries wherever it is defined (the workload, the
//! TLS options, the statistics), and for every field added later, with no attribute to remember
//! (`#[serde(deny_unknown_fields)]` would have to be put on each struct, and says nothing about
//! fields a line lacks).
//!
//! A field marked `skip_serializing_if` is absent from the line and from what is written back
//! alike when skipped, so a peer that does not know it refuses it only when it is sent: such a
//! field is right in a message only if its absence means exactly what a build without it does.

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The versions a hello or the orders give (`protocol`, `flint_version`), read on their own so
/// that a refusal names them even when the rest of the line is not understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versions {
    /// The protocol version ([`super::protocol::PROTOCOL_VERSION`] of its build).
    pub protocol: u32,
    /// Its flint version (`CARGO_PKG_VERSION` of its build).
    pub flint_version: String,
}

/// Why a line was not taken as a message.
#[derive(Debug, Clone, PartialEq)]
pub enum Rejected {
    /// Not a JSON object: not a flint message at all.
    NotJson(String),
    /// A JSON object that this build does not read as a message: a field it does not know, a
    /// field it needs and did not get, a value or a message type it does not know.
    Refused {
        /// The line's `"type"` (`message` when it gives none).
        kind: String,
        /// What is wrong, naming the field (`unknown field `run.redirect``).
        why: String,
        /// The versions the line gives, if it gives them.
        peer: Option<Versions>,
    },
}

/// serde's reason without its "at line 1 column N": a line is read alone, so its line is always
/// 1 and the reader names the line's number in the channel itself; the column is kept.
fn not_json(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let place = format!(" at line {} column {}", e.line(), e.column());
    match text.strip_suffix(&place) {
        Some(why) => format!("{why} at column {}", e.column()),
        None => text,
    }
}

/// `line` as a `T`, only when this build reads every field of it and it has every field this
/// build would write.
pub fn decode<T: DeserializeOwned + Serialize>(line: &str) -> Result<T, Rejected> {
    let got: Value = match serde_json::from_str(line) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return Err(Rejected::NotJson("not a JSON object".into())),
        Err(e) => return Err(Rejected::NotJson(not_json(&e))),
    };
    let refused = |why: String| Rejected::Refused {
        kind: got
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("message")
            .to_owned(),
        why,
        peer: versions(&got),
    };
    let msg = T::deserialize(&got).map_err(|e| refused(e.to_string()))?;
    let back = serde_json::to_value(&msg).map_err(|e| refused(e.to_string()))?;
    match difference(&got, &back, "") {
        Some(why) => Err(refused(why)),
        None => Ok(msg),
    }
}

/// `protocol` and `flint_version` at the top of a message, if it has both.
fn versions(msg: &Value) -> Option<Versions> {
    Some(Versions {
        protocol: u32::try_from(msg.get("protocol")?.as_u64()?).ok()?,
        flint_version: msg.get("flint_version")?.as_str()?.to_owned(),
    })
}

/// The first field one of `got` (the line) and `known` (the message written back) has and the
/// other has not, with its path from the message's top (`run.redirect`, `workload.pages[0].x`).
fn difference(got: &Value, known: &Value, path: &str) -> Option<String> {
    match (got, known) {
        (Value::Object(g), Value::Object(k)) => fields(g, k, path),
        (Value::Array(g), Value::Array(k)) => g
            .iter()
            .zip(k)
            .enumerate()
            .find_map(|(i, (g, k))| difference(g, k, &format!("{path}[{i}]"))),
        // A value of another shape (a type that reads more than one form) has no fields to
        // compare; its value was read or refused by the type itself.
        _ => None,
    }
}

fn fields(got: &Map<String, Value>, known: &Map<String, Value>, path: &str) -> Option<String> {
    let at = |field: &str| match path {
        "" => field.to_owned(),
        _ => format!("{path}.{field}"),
    };
    if let Some(field) = got.keys().find(|f| !known.contains_key(*f)) {
        return Some(format!("unknown field `{}`", at(field)));
    }
    if let Some(field) = known.keys().find(|f| !got.contains_key(*f)) {
        return Some(format!("missing field `{}`", at(field)));
    }
    got.iter()
        .find_map(|(field, g)| difference(g, &known[field], &at(field)))
}
