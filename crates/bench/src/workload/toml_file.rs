//! A TOML workload read: its `[[page]]` tables and file entries (a path, or a table with how
//! to request it), and for applications its `[data.NAME]` sets, templates, checks and
//! extractions, compiled into the workload's plan. Every error names the file and line.

use super::{
    check_path, check_total, check_weight, AppPlan, Builder, Page, RequestSpec, Workload,
    WorkloadError,
};
use crate::app::data::DataSet;
use crate::app::plan::{DataSpec, FileSpec, PlanBuilder};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlWorkload {
    /// The server the pages are on (`https://host:port`), for `flint bench -w FILE` without a
    /// URL; read by [`origin_of`], not part of the workload.
    #[serde(rename = "origin")]
    _origin: Option<toml::Value>,
    #[serde(default)]
    page: Vec<TomlPage>,
    /// `[data.NAME]`: CSV data sets the templates draw rows from.
    #[serde(default)]
    data: BTreeMap<String, toml::Spanned<DataSpec>>,
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlPage {
    name: Option<String>,
    weight: toml::Spanned<f64>,
    files: toml::Spanned<Vec<toml::Spanned<toml::Value>>>,
}

/// A file entry's table: `{ path = "/api", method = "POST", headers = ["A: b"], body = "..." }`,
/// and for applications `expect`, `extract` and `auth` (see `crate::app`).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TomlFile {
    path: String,
    method: Option<String>,
    #[serde(default)]
    headers: TomlHeaders,
    body: Option<String>,
    expect: Option<crate::app::check::ExpectSpec>,
    #[serde(default)]
    extract: BTreeMap<String, crate::app::extract::SourceSpec>,
    auth: Option<String>,
}

/// Header fields as a list of `Name: value` or a table `{ Name = "value" }`.
enum TomlHeaders {
    List(Vec<String>),
    Table(BTreeMap<String, String>),
}

/// Read by hand rather than as an untagged enum, whose error names serde's machinery ("did
/// not match any variant of untagged enum") instead of the forms `headers` takes.
impl<'de> serde::Deserialize<'de> for TomlHeaders {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        const FORMS: &str = "expected a list of header fields (headers = [\"Name: value\"]) \
            or a table of them (headers = { Name = \"value\" })";
        let string = |v: toml::Value, what: &str, expected: &str| match v {
            toml::Value::String(s) => Ok(s),
            v => Err(D::Error::custom(format!(
                "`headers`: {v} is not {what}: expected {expected}"
            ))),
        };
        match toml::Value::deserialize(d)? {
            toml::Value::Array(list) => list
                .into_iter()
                .map(|v| string(v, "a header field", "\"Name: value\""))
                .collect::<Result<_, _>>()
                .map(TomlHeaders::List),
            toml::Value::Table(table) => table
                .into_iter()
                .map(|(name, v)| Ok((name, string(v, "a header's value", "a string")?)))
                .collect::<Result<_, _>>()
                .map(TomlHeaders::Table),
            v => Err(D::Error::custom(format!(
                "`headers`: {v} is not header fields: {FORMS}"
            ))),
        }
    }
}

impl Default for TomlHeaders {
    fn default() -> Self {
        TomlHeaders::List(Vec::new())
    }
}

/// A file entry: a path (a plain GET) or a table; why it is unusable otherwise.
fn file_entry(v: &toml::Value) -> Result<(RequestSpec, FileSpec), String> {
    let f: TomlFile = match v {
        toml::Value::String(path) => {
            let app = FileSpec {
                path: path.clone(),
                ..FileSpec::default()
            };
            return Ok((RequestSpec::default(), app));
        }
        toml::Value::Table(t) => t
            .clone()
            .try_into()
            .map_err(|e: toml::de::Error| e.message().trim().to_owned())?,
        _ => return Err("a file is a path or a table with a path".into()),
    };
    let headers = match f.headers {
        TomlHeaders::List(list) => list
            .iter()
            .map(|h| RequestSpec::parse_header(h))
            .collect::<Result<_, _>>()?,
        TomlHeaders::Table(table) => table
            .into_iter()
            .map(|(n, v)| RequestSpec::parse_header(&format!("{n}: {v}")))
            .collect::<Result<_, _>>()?,
    };
    let spec = RequestSpec {
        method: f.method,
        headers,
        body: f.body.clone().map(String::into_bytes),
    };
    if let Some(why) = spec.check() {
        return Err(why);
    }
    let app = FileSpec {
        path: f.path,
        headers: spec.headers.clone(),
        body: f.body,
        expect: f.expect,
        extract: f.extract,
        auth: f.auth,
    };
    Ok((spec, app))
}

fn line_of(text: &str, offset: usize) -> usize {
    let end = offset.min(text.len());
    text.as_bytes()[..end]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// Why a templated path is unusable: it must start with `/`, and its text outside the holes
/// (checked as the template compiles; the bytes they give are percent-encoded) holds no
/// whitespace or control character. The message shows the path as written.
fn check_templated_path(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return Some(format!("URL path must start with '/': {path:?}"));
    }
    let mut outside = path
        .split("{{")
        .map(|p| p.split_once("}}").map_or(p, |(_, t)| t));
    outside
        .any(|t| t.chars().any(|c| c.is_whitespace() || c.is_control()))
        .then(|| format!("URL path contains whitespace or a control character: {path:?}"))
}

/// The `[data.NAME]` sets, each file read whole (relative to `dir`): a name templates could
/// not use, an empty `file` or one that cannot be opened is refused with the table's line;
/// a bad row with the data file's own line.
fn data_sets(
    data: &BTreeMap<String, toml::Spanned<DataSpec>>,
    err: &impl Fn(usize, String) -> WorkloadError,
    dir: &Path,
) -> Result<Vec<DataSet>, WorkloadError> {
    let mut sets = Vec::with_capacity(data.len());
    for (name, spec) in data {
        let (at, spec) = (spec.span().start, spec.get_ref());
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(err(
                at,
                format!("data set name {name:?}: letters, digits and `_` only (templates name it)"),
            ));
        }
        if spec.file.trim().is_empty() {
            return Err(err(
                at,
                format!(
                    "[data.{name}]: file is empty: name a CSV file (relative to the workload file)"
                ),
            ));
        }
        let path = dir.join(&spec.file);
        // Read here, so that a file that cannot be read (missing, a directory) is refused
        // with the table's line.
        let input = std::fs::read(&path)
            .map_err(|e| err(at, format!("[data.{name}]: file {:?}: {e}", spec.file)))?;
        let shown = path.display().to_string();
        let mut set =
            DataSet::read(name, &shown, &input, spec.pick).map_err(WorkloadError::Invalid)?;
        set.file = spec.file.clone();
        sets.push(set);
    }
    Ok(sets)
}

/// A TOML workload's top-level `origin`, if it names one: `flint discover` writes the site it
/// crawled there. Only that key is read; the rest is left to [`parse_toml`].
pub(super) fn origin_of(text: &str, shown: &str) -> Result<Option<String>, WorkloadError> {
    #[derive(serde::Deserialize)]
    struct Origin {
        origin: Option<toml::Spanned<toml::Value>>,
    }
    let doc: Origin = toml::from_str(text).map_err(|e| WorkloadError::Syntax {
        path: shown.to_owned(),
        line: line_of(text, e.span().map_or(0, |s| s.start)),
        message: e.message().trim().to_owned(),
    })?;
    let Some(origin) = doc.origin else {
        return Ok(None);
    };
    match origin.get_ref() {
        toml::Value::String(url) => Ok(Some(url.clone())),
        _ => Err(WorkloadError::Syntax {
            path: shown.to_owned(),
            line: line_of(text, origin.span().start),
            message: "origin is the server's URL as a string: origin = \"https://host:port\""
                .into(),
        }),
    }
}

pub(super) fn parse_toml(text: &str, shown: &str, dir: &Path) -> Result<Workload, WorkloadError> {
    let err = |offset: usize, message: String| WorkloadError::Syntax {
        path: shown.to_owned(),
        line: line_of(text, offset),
        message,
    };
    let doc: TomlWorkload = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        err(offset, e.message().trim().to_owned())
    })?;
    if doc.page.is_empty() {
        return Err(err(
            0,
            "no [[page]] tables: a workload needs at least one page".into(),
        ));
    }
    // Every entry read first: a template may use a value a later entry extracts.
    let mut entries = Vec::with_capacity(doc.page.len());
    for p in &doc.page {
        let mut files = Vec::with_capacity(p.files.get_ref().len());
        for f in p.files.get_ref() {
            let entry = file_entry(f.get_ref()).map_err(|why| err(f.span().start, why))?;
            files.push((f.span().start, entry));
        }
        entries.push(files);
    }
    let is_app = !doc.data.is_empty() || entries.iter().flatten().any(|(_, (_, a))| a.is_app());
    let mut plan = match is_app {
        true => {
            let extracted = entries.iter().flatten();
            let names = extracted.flat_map(|(_, (_, a))| a.extract.keys().cloned());
            let names: Vec<String> = names.collect();
            Some(PlanBuilder::with_sets(
                data_sets(&doc.data, &err, dir)?,
                names,
            ))
        }
        false => None,
    };
    let mut b = Builder::default();
    let mut total = 0.0;
    for (n, (p, files)) in doc.page.iter().zip(&entries).enumerate() {
        total += *p.weight.get_ref();
        if let Some(why) = check_weight(*p.weight.get_ref()).or_else(|| check_total(total)) {
            return Err(err(p.weight.span().start, why));
        }
        if files.is_empty() {
            return Err(err(
                p.files.span().start,
                "a page needs at least one file".into(),
            ));
        }
        let mut urls = Vec::with_capacity(files.len());
        for (at, (spec, app)) in files {
            let url = match plan.as_mut() {
                Some(plan) => {
                    if let Some(why) = check_templated_path(&app.path) {
                        return Err(err(*at, why));
                    }
                    let url = b.own_url(&app.path, spec);
                    plan.file(url, app).map_err(|why| err(*at, why))?;
                    url
                }
                None => {
                    if let Some(why) = check_path(&app.path) {
                        return Err(err(*at, why));
                    }
                    b.url(&app.path, spec)
                }
            };
            urls.push(url);
        }
        if let Some(plan) = plan.as_mut() {
            plan.end_page();
        }
        let name = p.name.clone().unwrap_or_else(|| format!("page {n}"));
        b.pages.push(Page {
            name,
            weight: *p.weight.get_ref(),
            files: urls,
        });
    }
    let urls = b.urls.len();
    let mut w = b.finish();
    w.app = AppPlan(plan.map(|p| Arc::new(p.finish(urls))));
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error_of(files: &str) -> String {
        let text = format!("[[page]]\nweight = 1\nfiles = [\n  {files},\n]\n");
        parse_toml(&text, "w.toml", Path::new("."))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn headers_of_the_wrong_shape_say_the_two_forms_headers_take() {
        for (entry, want) in [
            (
                r#"{ path = "/a", headers = 5 }"#,
                "w.toml:4: `headers`: 5 is not header fields: expected a list",
            ),
            (
                r#"{ path = "/a", headers = "X: y" }"#,
                "w.toml:4: `headers`: \"X: y\" is not header fields: expected a list",
            ),
            (
                r#"{ path = "/a", headers = [5] }"#,
                "w.toml:4: `headers`: 5 is not a header field: expected \"Name: value\"",
            ),
            (
                r#"{ path = "/a", headers = { X = 5 } }"#,
                "w.toml:4: `headers`: 5 is not a header's value: expected a string",
            ),
        ] {
            let e = error_of(entry);
            assert!(e.starts_with(want), "{entry}: {e}");
            assert!(!e.contains("untagged"), "{entry}: {e}");
            assert!(!e.contains("variant"), "{entry}: {e}");
            assert!(!e.contains('\n'), "one line: {e}");
        }
    }

    #[test]
    fn headers_as_a_list_or_a_table_are_read() {
        for entry in [
            r#"{ path = "/a", headers = ["X: y"] }"#,
            r#"{ path = "/a", headers = { X = "y" } }"#,
        ] {
            let text = format!("[[page]]\nweight = 1\nfiles = [{entry}]\n");
            let w = parse_toml(&text, "w.toml", Path::new(".")).unwrap();
            assert_eq!(w.spec(0).headers, [("X".into(), "y".into())], "{entry}");
        }
    }
}
