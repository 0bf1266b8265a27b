//! What a run fetches: pages of files, each page with a weight.
//!
//! A WebSTONE "page" is an HTML file and the inlined images a browser fetches with it (paper,
//! section 4.4); Webchildren pick pages at random by weight (section 6.1) and fetch their files
//! in order. Three sources give the same [`Workload`]:
//! - a TOML file (`[[page]]` tables with `name`, `weight`, `files`; `toml_file.rs`), which may
//!   also describe an application's users (`crate::app`);
//! - the original WebSTONE filelist, read unchanged and detected by itself: its first meaningful
//!   line is a single integer (the number of pages), which is never valid TOML;
//! - paths from the command line, one page each, of equal weight.
//!
//! Everything is validated before a run starts, with the file and line of the first problem,
//! because a load generator that dies (or silently fetches nothing) mid-run wastes the run.
//! WebSTONE's limits (100 pages, 50 files per page) came from fixed-size C arrays; they are not
//! imposed here.
//!
//! URLs are deduplicated: a path that appears in several pages, requested the same way, has one
//! index in [`Workload::urls`], so per-URL statistics are a plain vector indexed by it. How each
//! is requested (method, header fields, body) is its [`RequestSpec`].

mod spec;
mod toml_file;

pub use spec::{RequestSpec, PLAIN_GET};

use crate::app::plan::{Plan, PlanWire};
use crate::report::words::count_of;
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A set of pages; `urls` holds each distinct path once so that per-URL statistics are an index.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Workload {
    /// The pages, picked by weight.
    pub pages: Vec<Page>,
    /// Distinct URL paths (`/file3k.html`), in order of first appearance.
    pub urls: Vec<String>,
    /// Per URL: how it is requested. A URL past the end of this list is a plain GET (so a
    /// workload built in code may leave it empty).
    pub requests: Vec<RequestSpec>,
    /// An application workload's data sets, templates, checks and extractions (`None`: every
    /// request is built once and only its status judged). Serialized as what it is compiled
    /// from ([`PlanWire`]), and compiled again as it is read.
    pub app: AppPlan,
}

/// A workload's [`Plan`], shared by the run's threads.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AppPlan(pub Option<Arc<Plan>>);

impl serde::Serialize for AppPlan {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let wire = self.0.as_deref().map(|p| p.to_wire(&[1], 0));
        wire.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for AppPlan {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let wire = Option::<PlanWire<'static>>::deserialize(d)?;
        let plan = wire.map(Plan::from_wire).transpose();
        let plan = plan.map_err(|why| serde::de::Error::custom(format!("the plan: {why}")))?;
        Ok(AppPlan(plan.map(Arc::new)))
    }
}

/// One WebSTONE page: an HTML file and its inlined images, fetched in order.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Page {
    /// The page's name, in the reports and the log.
    pub name: String,
    /// Relative weight (any positive number; WebSTONE used percentages).
    pub weight: f64,
    /// Indexes into [`Workload::urls`], in fetch order.
    pub files: Vec<usize>,
}

/// A workload that cannot be used, with the file and line that say why.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadError {
    /// A line of a workload file that does not parse.
    #[error("{path}:{line}: {message}")]
    Syntax {
        /// The file.
        path: String,
        /// Its line, from 1.
        line: usize,
        /// What is wrong there.
        message: String,
    },
    /// A workload file that cannot be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why it cannot be read.
        source: std::io::Error,
    },
    /// A workload that reads but cannot be run (no URL paths, a path unusable in a request
    /// line, a page that does not hold together).
    #[error("{0}")]
    Invalid(String),
}

/// Why a URL path is unusable, or `None` if it is fine. Paths go into request lines verbatim, so
/// whitespace or control characters would corrupt the request.
pub fn check_path(path: &str) -> Option<String> {
    if !path.starts_with('/') {
        return Some(format!("URL path must start with '/': {path:?}"));
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some(format!(
            "URL path contains whitespace or a control character: {path:?}"
        ));
    }
    None
}

/// Why the weights of the pages so far, adding up to `total`, are unusable (each finite, their
/// sum past what an `f64` holds: every pick would land on the last page), or `None`.
fn check_total(total: f64) -> Option<String> {
    (!total.is_finite()).then(|| {
        "the weights up to this page add up to more than a number holds: weights are relative, \
         make them smaller"
            .to_owned()
    })
}

/// Why a weight is unusable, or `None`.
fn check_weight(weight: f64) -> Option<String> {
    (!(weight.is_finite() && weight > 0.0))
        .then(|| format!("weight must be a positive finite number, found {weight}"))
}

/// Builds `urls` (deduplicated, in order of first appearance) and the pages' indexes into it.
#[derive(Default)]
struct Builder {
    pages: Vec<Page>,
    urls: Vec<String>,
    requests: Vec<RequestSpec>,
    index: HashMap<(String, RequestSpec), usize>,
}

impl Builder {
    fn url(&mut self, path: &str, spec: &RequestSpec) -> usize {
        let key = (path.to_owned(), spec.clone());
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.urls.len();
        self.urls.push(path.to_owned());
        self.requests.push(spec.clone());
        self.index.insert(key, i);
        i
    }

    fn page<'a>(&mut self, name: String, weight: f64, files: impl IntoIterator<Item = &'a str>) {
        let files = files.into_iter().map(|f| self.url(f, &PLAIN_GET)).collect();
        self.pages.push(Page {
            name,
            weight,
            files,
        });
    }

    /// An application entry's URL: always an index of its own, since its checks and
    /// extractions are its own.
    fn own_url(&mut self, path: &str, spec: &RequestSpec) -> usize {
        self.urls.push(path.to_owned());
        self.requests.push(spec.clone());
        self.urls.len() - 1
    }

    fn finish(self) -> Workload {
        Workload {
            pages: self.pages,
            urls: self.urls,
            requests: self.requests,
            app: AppPlan::default(),
        }
    }
}

impl Workload {
    /// Reads a TOML workload or an original WebSTONE filelist, whichever `path` holds.
    pub fn load(path: &Path) -> Result<Workload, WorkloadError> {
        let shown = path.display().to_string();
        let text = read_text(path, &shown)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Self::parse_in(&text, &shown, dir)
    }

    /// The server a TOML workload names as its `origin` (`flint discover` writes the site it
    /// crawled), for a run given no URL; `None` for a workload without one and a filelist.
    pub fn origin_of(path: &Path) -> Result<Option<String>, WorkloadError> {
        let shown = path.display().to_string();
        let text = read_text(path, &shown)?;
        Self::origin_in(&text, &shown)
    }

    /// [`Workload::origin_of`] for workload text; `shown` names the source in errors.
    pub fn origin_in(text: &str, shown: &str) -> Result<Option<String>, WorkloadError> {
        if is_filelist(text) {
            return Ok(None);
        }
        toml_file::origin_of(text, shown)
    }

    /// Parses workload text; `shown` names the source in errors. Data files are relative to
    /// the current directory.
    pub fn parse(text: &str, shown: &str) -> Result<Workload, WorkloadError> {
        Self::parse_in(text, shown, Path::new("."))
    }

    /// Parses workload text whose data files are relative to `dir`.
    pub fn parse_in(text: &str, shown: &str, dir: &Path) -> Result<Workload, WorkloadError> {
        if is_filelist(text) {
            parse_filelist(text, shown)
        } else {
            toml_file::parse_toml(text, shown, dir)
        }
    }

    /// `--no-cookies`, `--reset-session`: how an application workload's Webchildren keep
    /// their sessions (nothing for another workload).
    pub fn set_session(&mut self, options: crate::app::plan::SessionOptions) {
        if let Some(plan) = self.app.0.take() {
            let mut plan = Arc::try_unwrap(plan).unwrap_or_else(|shared| (*shared).clone());
            plan.options = options;
            self.app = AppPlan(Some(Arc::new(plan)));
        }
    }

    /// The application plan, if the workload has one.
    pub fn plan(&self) -> Option<&Plan> {
        self.app.0.as_deref()
    }

    /// Whether its application plan (as a coordinator sent it) fits its pages and URLs: each
    /// page draws the data rows its plan says (`page_data[page]`), so a plan of other pages
    /// would make a Webchild fail mid-run rather than the orders being refused.
    pub fn check_plan(&self) -> Result<(), String> {
        let Some(plan) = self.plan() else {
            return Ok(());
        };
        let (pages, urls) = (plan.page_data.len(), plan.files.len());
        if (pages, urls) != (self.pages.len(), self.urls.len()) {
            return Err(format!(
                "the application plan has {} and {} where the workload has {} and {}",
                count_of(pages as u64, "page", "pages"),
                count_of(urls as u64, "URL", "URLs"),
                count_of(self.pages.len() as u64, "page", "pages"),
                count_of(self.urls.len() as u64, "URL", "URLs"),
            ));
        }
        Ok(())
    }

    /// The workload host `host` runs, of hosts of `weights` Webchildren: an application
    /// workload's data sets keep only that host's rows ([`crate::app::data::DataSet::share`]),
    /// so that no `unique` row is used by two hosts and no host gets the whole of a large set.
    pub fn for_host(&self, weights: &[usize], host: usize) -> Result<Workload, WorkloadError> {
        let app = match self.plan() {
            Some(plan) => {
                let plan = plan.share(weights, host).map_err(WorkloadError::Invalid)?;
                AppPlan(Some(Arc::new(plan)))
            }
            None => AppPlan::default(),
        };
        Ok(Workload {
            app,
            ..self.clone()
        })
    }

    /// One page per path, each of weight 1, named by its path (`flint bench URL /a.html /b.gif`).
    pub fn from_paths(paths: &[String]) -> Result<Workload, WorkloadError> {
        if paths.is_empty() {
            return Err(WorkloadError::Invalid("no URL paths given".into()));
        }
        let mut b = Builder::default();
        for p in paths {
            if let Some(why) = check_path(p) {
                return Err(WorkloadError::Invalid(why));
            }
            b.page(p.clone(), 1.0, [p.as_str()]);
        }
        Ok(b.finish())
    }

    /// Pages given as `(name, weight, files)`, validated as a file's would be.
    pub fn from_pages<S: AsRef<str>>(
        pages: impl IntoIterator<Item = (String, f64, Vec<S>)>,
    ) -> Result<Workload, WorkloadError> {
        let mut b = Builder::default();
        let mut total = 0.0;
        for (name, weight, files) in pages {
            total += weight;
            let why = check_weight(weight)
                .or_else(|| check_total(total))
                .or_else(|| {
                    files
                        .is_empty()
                        .then(|| "a page needs at least one file".into())
                })
                .or_else(|| files.iter().find_map(|f| check_path(f.as_ref())));
            if let Some(why) = why {
                return Err(WorkloadError::Invalid(format!("page {name:?}: {why}")));
            }
            b.page(name, weight, files.iter().map(AsRef::as_ref));
        }
        if b.pages.is_empty() {
            return Err(WorkloadError::Invalid(
                "a workload needs at least one page".into(),
            ));
        }
        Ok(b.finish())
    }

    /// How URL `url` is requested.
    pub fn spec(&self, url: usize) -> &RequestSpec {
        self.requests.get(url).unwrap_or(&PLAIN_GET)
    }

    /// Every URL requested as `defaults` say (the command line's `-m`, `-H`, `--body`) where
    /// its own entry does not say otherwise (see [`RequestSpec::over`]); an application
    /// workload's bodies are forms where the `Content-Type` they go with says so
    /// ([`Plan::under_defaults`]).
    pub fn with_defaults(mut self, defaults: &RequestSpec) -> Result<Workload, WorkloadError> {
        if let Some(why) = defaults.check() {
            return Err(WorkloadError::Invalid(why));
        }
        self.requests = (0..self.urls.len())
            .map(|i| self.spec(i).over(defaults))
            .collect();
        if let Some(plan) = self.plan() {
            let plan = (plan.under_defaults(&defaults.headers)).map_err(WorkloadError::Invalid)?;
            if let Cow::Owned(plan) = plan {
                self.app = AppPlan(Some(Arc::new(plan)));
            }
        }
        Ok(self)
    }

    /// The workload as TOML that [`Workload::load`] reads back to an equal workload.
    pub fn to_toml(&self) -> String {
        #[derive(serde::Serialize)]
        struct Out<'a> {
            page: Vec<OutPage<'a>>,
        }
        #[derive(serde::Serialize)]
        struct OutPage<'a> {
            name: &'a str,
            weight: f64,
            files: Vec<toml::Value>,
        }
        let entry = |i: usize| -> toml::Value {
            let (path, spec) = (self.urls[i].clone(), self.spec(i));
            if *spec == PLAIN_GET {
                return toml::Value::String(path);
            }
            let mut t = toml::Table::new();
            t.insert("path".into(), path.into());
            if let Some(m) = &spec.method {
                t.insert("method".into(), m.clone().into());
            }
            if !spec.headers.is_empty() {
                let h = spec.headers.iter().map(|(n, v)| format!("{n}: {v}").into());
                t.insert("headers".into(), toml::Value::Array(h.collect()));
            }
            if let Some(b) = &spec.body {
                t.insert(
                    "body".into(),
                    String::from_utf8_lossy(b).into_owned().into(),
                );
            }
            toml::Value::Table(t)
        };
        let out = Out {
            page: self
                .pages
                .iter()
                .map(|p| OutPage {
                    name: &p.name,
                    weight: p.weight,
                    files: p.files.iter().map(|&i| entry(i)).collect(),
                })
                .collect(),
        };
        // Only strings, finite floats and arrays of strings: serialization cannot fail.
        toml::to_string(&out).unwrap_or_default()
    }

    /// The URL paths of page `page`, in fetch order.
    pub fn page_urls(&self, page: usize) -> impl Iterator<Item = &str> + '_ {
        self.pages[page]
            .files
            .iter()
            .map(move |&i| self.urls[i].as_str())
    }
}

/// A workload file's text; bytes that are not UTF-8 are refused with their line
/// (`site.toml:3: not UTF-8`), as a data file's are.
fn read_text(path: &Path, shown: &str) -> Result<String, WorkloadError> {
    let bytes = std::fs::read(path).map_err(|source| WorkloadError::Io {
        path: shown.to_owned(),
        source,
    })?;
    String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        WorkloadError::Syntax {
            path: shown.to_owned(),
            line: 1 + valid.iter().filter(|&&b| b == b'\n').count(),
            message: "not UTF-8".into(),
        }
    })
}

/// Strips a `#` comment and surrounding blanks.
fn meaningful(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

/// A filelist's first meaningful line is a lone integer, which no TOML document starts with.
/// A first line that begins with a digit and sets no key (`1.5`, `2 pages`) is no TOML either:
/// it is read as a filelist's, to be refused as one, not as TOML with a TOML parser's reason.
fn is_filelist(text: &str) -> bool {
    text.lines()
        .map(meaningful)
        .find(|l| !l.is_empty())
        .is_some_and(|l| l.starts_with(|c: char| c.is_ascii_digit()) && !l.contains('='))
}

fn parse_filelist(text: &str, shown: &str) -> Result<Workload, WorkloadError> {
    let err = |line: usize, message: String| WorkloadError::Syntax {
        path: shown.to_owned(),
        line,
        message,
    };
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(i, l)| (i + 1, meaningful(l)))
        .filter(|(_, l)| !l.is_empty());
    let (header_line, header) = lines
        .next()
        .ok_or_else(|| err(1, "empty filelist".into()))?;
    let declared: usize = header.parse().map_err(|_| {
        err(
            header_line,
            format!(
                "a filelist's first line is its number of pages, a whole number such as 3; \
                 found {header:?}"
            ),
        )
    })?;
    if declared == 0 {
        return Err(err(
            header_line,
            "a workload needs at least one page".into(),
        ));
    }
    let mut b = Builder::default();
    let mut total = 0.0;
    let mut files: Vec<&str> = Vec::new();
    while let Some((line, text)) = lines.next() {
        let n = b.pages.len();
        if n == declared {
            return Err(err(
                line,
                format!(
                    "the header (line {header_line}) says {}; found more: {text:?}",
                    pages(declared)
                ),
            ));
        }
        let (weight, count) = page_header(text).ok_or_else(|| {
            err(
                line,
                format!("expected \"weight file-count\", found {text:?}"),
            )
        })?;
        total += weight;
        if let Some(why) = check_weight(weight).or_else(|| check_total(total)) {
            return Err(err(line, why));
        }
        if count == 0 {
            return Err(err(line, "a page needs at least one file".into()));
        }
        files.clear();
        for k in 0..count {
            let (fline, path) = lines.next().ok_or_else(|| {
                err(
                    line,
                    format!(
                        "page {n} says {}; the file ends after {k}",
                        count_of(count as u64, "file", "files")
                    ),
                )
            })?;
            if path.split_whitespace().count() != 1 || !path.starts_with('/') {
                return Err(err(
                    fline,
                    format!(
                        "expected a URL path (file {} of {count} of page {n}), found {path:?}",
                        k + 1
                    ),
                ));
            }
            if let Some(why) = check_path(path) {
                return Err(err(fline, why));
            }
            files.push(path);
        }
        b.page(format!("page {n}"), weight, files.iter().copied());
    }
    if b.pages.len() != declared {
        return Err(err(
            header_line,
            format!(
                "the header says {}; the file has {}",
                pages(declared),
                b.pages.len()
            ),
        ));
    }
    Ok(b.finish())
}

fn pages(n: usize) -> String {
    count_of(n as u64, "page", "pages")
}

/// `weight file-count`: exactly two fields.
fn page_header(text: &str) -> Option<(f64, usize)> {
    let mut it = text.split_whitespace();
    let (w, c) = (it.next()?, it.next()?);
    if it.next().is_some() {
        return None;
    }
    Some((w.parse().ok()?, c.parse().ok()?))
}

/// Picks pages by weight: a cumulative table built once, a binary search per pick.
///
/// WebSTONE compared a random number against page weights (section 6.1); this is the same
/// distribution for any non-negative weights, in O(log pages) with no allocation per pick. A
/// page of weight 0 (possible in a hand-built [`Workload`]) is never picked.
#[derive(Debug, Clone)]
pub struct PagePicker {
    /// `cumulative[i]` = sum of the weights of pages `0..=i`.
    cumulative: Box<[f64]>,
    /// The last page of positive weight: where a draw that rounds up to the total lands.
    last: usize,
}

impl PagePicker {
    /// Weights must be finite and non-negative with a positive sum (the runner checks).
    pub fn new(workload: &Workload) -> Self {
        let mut sum = 0.0;
        let cumulative = workload
            .pages
            .iter()
            .map(|p| {
                sum += p.weight;
                sum
            })
            .collect();
        let last = workload.pages.iter().rposition(|p| p.weight > 0.0);
        PagePicker {
            cumulative,
            last: last.unwrap_or(0),
        }
    }

    /// A page index, page `i` with probability `weight[i] / sum of weights`.
    #[inline]
    pub fn pick(&self, rng: &mut fastrand::Rng) -> usize {
        let n = self.cumulative.len();
        if n <= 1 {
            return 0;
        }
        let x = rng.f64() * self.cumulative[n - 1];
        // First page whose cumulative weight exceeds x (so never a page of weight 0); the clamp
        // guards a product that rounds up to the total.
        self.cumulative.partition_point(|&c| c <= x).min(self.last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_of_weight_zero_are_never_picked() {
        let page = |name: &str, weight| Page {
            name: name.into(),
            weight,
            files: vec![0],
        };
        let w = Workload {
            pages: vec![
                page("z0", 0.0),
                page("a", 1.0),
                page("b", 3.0),
                page("z3", 0.0),
            ],
            urls: vec!["/a".into()],
            requests: Vec::new(),
            app: AppPlan::default(),
        };
        let p = PagePicker::new(&w);
        let mut rng = fastrand::Rng::with_seed(7);
        let mut n = [0u32; 4];
        for _ in 0..40_000 {
            n[p.pick(&mut rng)] += 1;
        }
        assert_eq!((n[0], n[3]), (0, 0), "a page of weight 0 is never picked");
        let ratio = f64::from(n[2]) / f64::from(n[1]);
        assert!((2.7..3.3).contains(&ratio), "ratio {ratio}");
    }
}
