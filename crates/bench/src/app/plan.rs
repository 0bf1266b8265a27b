//! An application workload compiled: its data sets, the names of the values its extractions
//! fill, and per URL what a request is built from and what its response must be. Made once by
//! the workload's parser (`workload.rs`), read by every Webchild; nothing in it changes during
//! the run except the data sets' shared positions (atomics).
//!
//! A run on many hosts carries a plan to each worker as what it was compiled from
//! ([`PlanWire`]: the entries as the workload spells them, and the data rows that worker
//! draws from), and the worker compiles it again: no file is read on the worker's host.

use super::check::{Expect, ExpectSpec};
use super::data::{DataRows, DataSet, Pick};
use super::extract::{Extract, SourceSpec};
use super::template::{Escape, Names, Template};
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The most of a response body kept for a check or an extraction; a longer body is the error
/// `body_too_large` (the body is still read, so that the connection stays in step).
pub const MAX_KEPT_BODY: usize = 1 << 20;

/// `[data.NAME]` as a workload file spells it.
#[derive(Debug, Clone)]
pub struct DataSpec {
    /// The CSV file, relative to the workload file's directory.
    pub file: String,
    /// How its rows are drawn (absent: `cycle`).
    pub pick: Pick,
}

/// [`DataSpec`]'s fields, read from a table.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct DataFields {
    file: String,
    #[serde(default = "cycle")]
    pick: Pick,
}

impl<'de> serde::Deserialize<'de> for DataSpec {
    /// A table's fields; anything else (`[data]` with `file = ...` under it, a data set
    /// given as a string) is refused in words of the workload.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = DataSpec;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str(
                    "a data set's table ([data] holds data sets by name: [data.NAME] with \
                     file = \"users.csv\")",
                )
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DataSpec, A::Error> {
                let de = serde::de::value::MapAccessDeserializer::new(map);
                let f = <DataFields as serde::Deserialize>::deserialize(de)?;
                Ok(DataSpec {
                    file: f.file,
                    pick: f.pick,
                })
            }
        }
        d.deserialize_any(V)
    }
}

fn cycle() -> Pick {
    Pick::Cycle
}

/// The application parts of one file entry, as a workload file spells them.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct FileSpec {
    /// The request target, a template (`/users/{{users.id}}?q={{token}}`): values land
    /// percent-encoded.
    pub path: String,
    /// The entry's own header fields, name and value (a template, written as it is; a value
    /// filled in with a line break or NUL refuses the request).
    pub headers: Vec<(String, String)>,
    /// The request body, a template: values land `+`/percent-encoded when the request's
    /// `Content-Type` (the entry's own, else the command line's: [`Plan::under_defaults`]) is
    /// `application/x-www-form-urlencoded`, else as they are.
    pub body: Option<String>,
    /// What the response must be for the request to count as answered.
    pub expect: Option<ExpectSpec>,
    /// Values taken from the response, by the name later templates use.
    pub extract: BTreeMap<String, SourceSpec>,
    /// `user:password` (a template) sent as HTTP Basic credentials.
    pub auth: Option<String>,
}

impl FileSpec {
    /// Whether the entry needs per-request building or response checking: a template anywhere,
    /// a check, an extraction or credentials from data.
    pub fn is_app(&self) -> bool {
        let templated = |s: &str| s.contains("{{");
        templated(&self.path)
            || self.headers.iter().any(|(_, v)| templated(v))
            || self.body.as_deref().is_some_and(templated)
            || self.expect.is_some()
            || !self.extract.is_empty()
            || self.auth.is_some()
    }
}

/// How one URL's request is built per use and its response judged.
#[derive(Debug, Clone)]
pub struct FilePlan {
    /// The request target ([`Escape::Url`]).
    pub path: Template,
    /// The entry's own header fields (templates); the workload's others are written as they are.
    pub headers: Vec<(String, Template)>,
    /// The request body ([`Escape::Form`] for a form, else [`Escape::Raw`]).
    pub body: Option<Template>,
    /// `user:password`, sent base64-encoded as `Authorization: Basic`.
    pub auth: Option<Template>,
    /// The checks its response is held to (`None`: only the run's status rule).
    pub expect: Option<Expect>,
    /// The values taken from its response, in the order of their names.
    pub extract: Vec<Extract>,
    /// A check or an extraction reads the body: it is kept (up to [`MAX_KEPT_BODY`]).
    pub needs_body: bool,
}

/// A compiled application workload.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The data sets, by index (templates' [`super::template::Hole::Column`]), shared by every
    /// Webchild's session.
    pub data: Arc<[DataSet]>,
    /// The names of the session's values, by slot.
    pub values: Vec<String>,
    /// Per URL: its plan (`None`: a plain request, built as the workload says).
    pub files: Vec<Option<FilePlan>>,
    /// Per page: the data sets its templates use (a row of each is drawn as the page starts).
    pub page_data: Vec<Vec<usize>>,
    /// How Webchildren keep their sessions (set by the command line after the parse).
    pub options: SessionOptions,
    /// Per page, its entries as the workload spells them (for [`PlanWire`]).
    entries: Vec<Vec<Entry>>,
    /// What the plan was made from, for comparing workloads.
    source: String,
}

/// One file entry of a page: its URL's index and what it says.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    /// The URL's index in the workload (into [`Plan::files`]).
    pub url: usize,
    /// The entry as the workload spells it.
    pub spec: FileSpec,
}

/// A plan as the hosts protocol carries it to a worker: what it is compiled from, with the
/// rows of its data sets that worker draws from ([`DataSet::share`]). Borrowed from the plan
/// as it is written (no copy of the rows), owned as it is read.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PlanWire<'a> {
    /// Every data set, with only the rows this worker draws from.
    pub data: Vec<DataRows<'a>>,
    /// Per page, its entries in order.
    pub pages: Cow<'a, [Vec<Entry>]>,
    /// The workload's number of URLs.
    pub urls: usize,
    /// How Webchildren keep their sessions, as the coordinator's command line said.
    pub options: SessionOptions,
}

impl Plan {
    /// What [`Plan::from_wire`] compiles back to this plan, with the rows host `host` draws
    /// from, of hosts of `weights` Webchildren ([`DataSet::share`]; every row with one host).
    pub fn to_wire(&self, weights: &[usize], host: usize) -> PlanWire<'_> {
        PlanWire {
            data: self.data.iter().map(|d| d.share(weights, host)).collect(),
            pages: Cow::Borrowed(&self.entries),
            urls: self.files.len(),
            options: self.options,
        }
    }

    /// The plan `wire` describes, compiled as the workload's parser compiles it.
    pub fn from_wire(wire: PlanWire<'_>) -> Result<Plan, String> {
        let sets = (wire.data.into_iter())
            .map(DataSet::from_rows)
            .collect::<Result<Vec<_>, _>>()?;
        let names = wire.pages.iter().flatten();
        let names = names.flat_map(|e| e.spec.extract.keys().cloned());
        let mut b = PlanBuilder::with_sets(sets, names);
        for page in wire.pages.iter() {
            for e in page {
                if e.url >= wire.urls {
                    return Err(format!("entry of URL {} of {}", e.url, wire.urls));
                }
                b.file(e.url, &e.spec)
                    .map_err(|why| format!("{}: {why}", e.spec.path))?;
            }
            b.end_page();
        }
        let mut plan = b.finish(wire.urls);
        plan.options = wire.options;
        Ok(plan)
    }

    /// This plan with the rows of its data sets host `host` draws from, of hosts of `weights`
    /// Webchildren.
    pub fn share(&self, weights: &[usize], host: usize) -> Result<Plan, String> {
        Plan::from_wire(self.to_wire(weights, host))
    }

    /// This plan under the command line's header fields `defaults`, which every request
    /// carries unless its entry gives a field of the same name: a form's `Content-Type` among
    /// them makes the body of each entry without a `Content-Type` of its own a form, its values
    /// `+`/percent-encoded. It is written into those entries, so that a worker compiling the
    /// plan from them ([`PlanWire`]) builds the same bodies. This plan itself when that changes
    /// no entry.
    pub fn under_defaults(&self, defaults: &[(String, String)]) -> Result<Cow<'_, Plan>, String> {
        let is_type = |n: &str| n.eq_ignore_ascii_case("content-type");
        let Some(form) = defaults.iter().find(|(n, v)| is_type(n) && is_form(v)) else {
            return Ok(Cow::Borrowed(self));
        };
        let becomes_form = |e: &Entry| {
            let own = e.spec.headers.iter().any(|(n, _)| is_type(n));
            e.spec.body.is_some() && !own
        };
        if !self.entries.iter().flatten().any(becomes_form) {
            return Ok(Cow::Borrowed(self));
        }
        let mut wire = self.to_wire(&[1], 0);
        let mut pages = wire.pages.into_owned();
        for e in pages.iter_mut().flatten() {
            if becomes_form(e) {
                e.spec.headers.push(form.clone());
            }
        }
        wire.pages = Cow::Owned(pages);
        Plan::from_wire(wire).map(Cow::Owned)
    }
}

/// Whether a `Content-Type` value says a form (`application/x-www-form-urlencoded`, any case,
/// parameters or none).
fn is_form(value: &str) -> bool {
    (value.trim().to_ascii_lowercase()).starts_with("application/x-www-form-urlencoded")
}

/// How Webchildren keep their sessions (the command line's `--no-cookies`, `--reset-session`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SessionOptions {
    /// A cookie jar per Webchild (on unless `--no-cookies`).
    pub cookies: bool,
    /// Values and cookies forgotten as each page starts (`--reset-session`); by default a
    /// Webchild is one user for the whole run, logged in once.
    pub reset_per_page: bool,
}

impl Default for SessionOptions {
    fn default() -> Self {
        SessionOptions {
            cookies: true,
            reset_per_page: false,
        }
    }
}

impl PartialEq for Plan {
    fn eq(&self, other: &Plan) -> bool {
        self.source == other.source
    }
}

/// Builds a [`Plan`] as the workload's entries are read.
pub struct PlanBuilder {
    data: Vec<DataSet>,
    values: Vec<String>,
    files: Vec<Option<FilePlan>>,
    page_data: Vec<Vec<usize>>,
    /// Data sets used by the page being read.
    used: RefCell<Vec<usize>>,
    entries: Vec<Vec<Entry>>,
    /// The entries of the page being read.
    page: Vec<Entry>,
    source: String,
}

impl Names for PlanBuilder {
    fn column(&self, set: &str, column: &str) -> Result<(usize, usize), String> {
        let Some(d) = self.data.iter().position(|d| d.name == set) else {
            let known: Vec<&str> = self.data.iter().map(|d| d.name.as_str()).collect();
            return Err(format!(
                "no data set {set:?} (the workload's [data.NAME] tables: {known:?})"
            ));
        };
        let Some(c) = self.data[d].column(column) else {
            return Err(format!(
                "data set {set:?} has no column {column:?} (its columns: {:?})",
                self.data[d].columns
            ));
        };
        let mut used = self.used.borrow_mut();
        if !used.contains(&d) {
            used.push(d);
        }
        Ok((d, c))
    }

    fn value(&self, name: &str) -> Result<usize, String> {
        self.values.iter().position(|v| v == name).ok_or_else(|| {
            format!(
                "unknown value {name:?}: not a data column (`set.column`), a function \
                 (random, seq, webchild), nor extracted by any file (extract = {{ {name} = ... }})"
            )
        })
    }
}

impl PlanBuilder {
    /// A builder of the data sets (read by the workload's parser) and every value some entry
    /// extracts, so that a template may use a value extracted by a later file or page.
    pub fn with_sets(
        sets: Vec<DataSet>,
        extracted: impl IntoIterator<Item = String>,
    ) -> PlanBuilder {
        let mut source = String::new();
        for set in &sets {
            source += &format!("data {} {} {:?}\n", set.name, set.file, set.pick);
        }
        let mut values: Vec<String> = Vec::new();
        for v in extracted {
            if !values.contains(&v) {
                values.push(v);
            }
        }
        PlanBuilder {
            data: sets,
            values,
            files: Vec::new(),
            page_data: Vec::new(),
            used: RefCell::new(Vec::new()),
            entries: Vec::new(),
            page: Vec::new(),
            source,
        }
    }

    /// The plan of URL `url` (a new index, given in order), compiled from `spec`.
    pub fn file(&mut self, url: usize, spec: &FileSpec) -> Result<(), String> {
        let raw = |t: &str, what: &str, escape| {
            Template::compile(t, escape, self).map_err(|e| format!("{what}: {e}"))
        };
        let path = raw(&spec.path, "path", Escape::Url)?;
        let form = (spec.headers.iter())
            .any(|(n, v)| n.eq_ignore_ascii_case("content-type") && is_form(v));
        let headers = (spec.headers.iter())
            .map(|(n, v)| Ok((n.clone(), raw(v, &format!("header {n}"), Escape::Header)?)))
            .collect::<Result<Vec<_>, String>>()?;
        let body_escape = if form { Escape::Form } else { Escape::Raw };
        let body = (spec.body.as_deref())
            .map(|b| raw(b, "body", body_escape))
            .transpose()?;
        let auth = (spec.auth.as_deref())
            .map(|a| raw(a, "auth", Escape::Raw))
            .transpose()?;
        if let Some(a) = &auth {
            if a.is_constant() && !a.source().contains(':') {
                return Err("auth: `user:password` (a `:` between them)".into());
            }
        }
        let expect = (spec.expect.as_ref())
            .map(|e| Expect::compile(e, self))
            .transpose()?;
        let extract = (spec.extract.iter())
            .map(|(name, source)| Extract::compile(name, self.value(name)?, source))
            .collect::<Result<Vec<_>, String>>()?;
        let needs_body = expect.as_ref().is_some_and(Expect::needs_body)
            || extract.iter().any(Extract::needs_body);
        if self.files.len() <= url {
            self.files.resize(url + 1, None);
        }
        self.files[url] = Some(FilePlan {
            path,
            headers,
            body,
            auth,
            expect,
            extract,
            needs_body,
        });
        self.source += &format!("url {url} {spec:?}\n");
        self.page.push(Entry {
            url,
            spec: spec.clone(),
        });
        Ok(())
    }

    /// The page being read is complete.
    pub fn end_page(&mut self) {
        let used = std::mem::take(&mut *self.used.borrow_mut());
        self.page_data.push(used);
        self.entries.push(std::mem::take(&mut self.page));
    }

    /// The plan, for `urls` URLs.
    pub fn finish(mut self, urls: usize) -> Plan {
        self.files.resize(urls, None);
        Plan {
            data: Arc::from(self.data),
            values: self.values,
            files: self.files,
            page_data: self.page_data,
            options: SessionOptions::default(),
            entries: self.entries,
            source: self.source,
        }
    }
}
