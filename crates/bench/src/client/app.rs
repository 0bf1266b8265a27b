//! Application workloads on a Webchild's HTTP/1 connection: the seam between the connection and
//! `crate::app`. The connection asks it for a file's request bytes (built per use into a buffer
//! it keeps, with the session's values and cookies), hands it the response's head and, when a
//! check or an extraction reads it, its body, and asks for the verdict when the response is
//! complete. A workload without application features makes none of this: its requests stay
//! the bytes prebuilt at start.
//!
//! Memory: each URL's fixed request fields (`FixedFields`: those no template or cookie
//! changes) are written once a run, before it, and shared by every Webchild (HTTP/1 only); the
//! request, the head and the kept body each have a buffer that grows to the
//! largest seen and is reused, and so does each extracted value's text in the session (the
//! regular expressions' groups are found in rooms made once); a JSON extraction parses the body
//! into a document, and the cookie jar allocates when a cookie changes.

use super::setup::{request_version, RunShared};
use crate::app::extract::Room;
use crate::app::plan::{FilePlan, Plan};
use crate::app::session::Session;
use crate::app::template::ExpandError;
use crate::workload::RequestSpec;
use crate::{BenchConfig, Workload};
use base64::Engine as _;
use std::ops::Range;
use std::sync::Arc;
use wire::head::{write_header, write_header_u64, USER_AGENT};

mod fixed;
mod h2_request;
mod head_fields;
mod judging;
mod pages;
mod sent_bodies;
mod stream;
pub(crate) use fixed::FixedFields;
pub(super) use h2_request::H2Request;
use judging::keep_body_bytes;
pub(super) use judging::Kept;
pub(super) use pages::{page_starts, waits_for_values};
use sent_bodies::SentBodies;
pub(super) use stream::AppStream;

/// One Webchild's application state.
pub(super) struct AppExchange {
    plan: Arc<Plan>,
    session: Session,
    /// The requests being written: one, or pipelining, a batch of the page's files from
    /// `first` on, request `k` ending at `ends[k]`, its path at `paths[k]`.
    pub out: Vec<u8>,
    first: usize,
    ends: Vec<usize>,
    paths: Vec<Range<usize>>,
    /// Request `k`'s body at `bodies[k]` of `out` (empty without one).
    bodies: Vec<Range<usize>>,
    /// Per file of the page: the body its request sent, kept as a 307 or 308 is followed to
    /// send the same bytes again (its templates are not expanded again).
    sent_bodies: SentBodies,
    /// The response's head (the last one read) and its body, while a check or an extraction
    /// needs it.
    head: Vec<u8>,
    body: Vec<u8>,
    keep_body: bool,
    too_large: bool,
    /// Expanding a body (its length goes before it) and the checks' texts.
    scratch: Vec<u8>,
    /// Per URL, per extraction of its file: the room its regular expression's groups are found
    /// in, made once rather than per response.
    rooms: Vec<Vec<Room>>,
    /// The URL a request goes to, for the cookie jar: the target's origin, its path set per
    /// request.
    cookie_url: url::Url,
    /// Per URL: the request's fields that are the same on every request, written once a run
    /// and shared by every Webchild (HTTP/1 only; empty under HTTP/2 and HTTP/3).
    fixed: Arc<[FixedFields]>,
}

/// Every URL's fixed fields, built once a run for all its Webchildren: an application
/// workload's over HTTP/1 (HTTP/2 and HTTP/3 requests are header lists, `H2Request`).
pub(crate) fn fixed_fields(config: &BenchConfig, workload: &Workload) -> Arc<[FixedFields]> {
    let plan = workload.plan().filter(|_| {
        !matches!(
            config.http,
            crate::config::HttpMode::Http2 | crate::config::HttpMode::Http3
        )
    });
    let Some(plan) = plan else {
        return Arc::from([]);
    };
    (0..workload.urls.len())
        .map(|url| fixed_of(config, workload, plan, url))
        .collect()
}

/// URL `url`'s fixed fields.
fn fixed_of(config: &BenchConfig, workload: &Workload, plan: &Plan, url: usize) -> FixedFields {
    let spec = workload.spec(url);
    let file = plan.files.get(url).and_then(Option::as_ref);
    let (mut before_auth, mut after_auth) = (Vec::new(), Vec::new());
    write_fields_before_auth(&mut before_auth, config, spec, file);
    write_fields_after_auth(&mut after_auth, config, spec, file, false);
    FixedFields {
        before_auth,
        after_auth,
        own_cookie: owns(spec, file, "cookie"),
        own_auth: owns(spec, file, "authorization"),
    }
}

/// Whether the request of `spec` and `file` gives field `name` itself.
fn owns(spec: &RequestSpec, file: Option<&FilePlan>, name: &str) -> bool {
    spec.has_header(name)
        || file.is_some_and(|f| f.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)))
}

/// After the request's path: the request line's end, `Host`, `User-Agent`, and the target's
/// `Authorization` where neither the request nor a template gives one.
fn write_fields_before_auth(
    out: &mut Vec<u8>,
    config: &BenchConfig,
    spec: &RequestSpec,
    file: Option<&FilePlan>,
) {
    let (version, _) = request_version(config.http);
    out.push(b' ');
    out.extend_from_slice(version.as_bytes());
    out.extend_from_slice(b"\r\n");
    if !owns(spec, file, "host") {
        write_header(out, b"Host", config.target.host.as_bytes());
    }
    if !owns(spec, file, "user-agent") {
        write_header(out, b"User-Agent", USER_AGENT);
    }
    if !owns(spec, file, "authorization") && file.is_none_or(|f| f.auth.is_none()) {
        if let Some(a) = config.target.authorization.as_deref() {
            write_header(out, b"Authorization", a.as_bytes());
        }
    }
}

/// After the `Authorization` field: `Connection: close` where it is said, then the spec's own
/// fields but those the file's templates give (and, `get`: a redirect made the request a GET,
/// those that describe a body).
fn write_fields_after_auth(
    out: &mut Vec<u8>,
    config: &BenchConfig,
    spec: &RequestSpec,
    file: Option<&FilePlan>,
    get: bool,
) {
    let (version, keep_alive) = request_version(config.http);
    if version == wire::request::Version::Http11 && !keep_alive {
        write_header(out, b"Connection", b"close");
    }
    for (name, value) in &spec.headers {
        // The entry's own fields are its templates, written after these.
        let templated = file.is_some_and(|f| f.headers.iter().any(|(n, _)| n == name));
        if templated || (get && describes_body(name)) {
            continue;
        }
        write_header(out, name.as_bytes(), value.as_bytes());
    }
}

impl AppExchange {
    /// Webchild `id`'s, when the workload is an application's.
    pub(super) fn of(sh: &RunShared<'_>, id: usize) -> Option<Box<AppExchange>> {
        let plan = sh.workload.app.0.clone()?;
        let t = &sh.config.target;
        let scheme = match t.scheme {
            crate::Scheme::Https => "https",
            crate::Scheme::Http => "http",
        };
        let cookie_url = url::Url::parse(&format!("{scheme}://{}/", t.host))
            .or_else(|_| url::Url::parse(&format!("{scheme}://localhost/")))
            .ok()?;
        let session = new_session(sh, &plan, id);
        let rooms = (plan.files.iter())
            .map(|f| {
                f.iter()
                    .flat_map(|f| &f.extract)
                    .map(|x| x.room())
                    .collect()
            })
            .collect();
        Some(Box::new(AppExchange {
            fixed: sh.app_fixed.clone(),
            rooms,
            plan,
            session,
            out: Vec::new(),
            first: 0,
            ends: Vec::new(),
            paths: Vec::new(),
            bodies: Vec::new(),
            sent_bodies: SentBodies::default(),
            head: Vec::new(),
            body: Vec::new(),
            keep_body: false,
            too_large: false,
            scratch: Vec::new(),
            cookie_url,
        }))
    }

    /// Page `page` starts: a row drawn from each data set it uses; false when a `unique` set
    /// has given every row.
    pub(super) fn start_page(&mut self, page: usize) -> bool {
        start_session_page(&mut self.session, &self.plan, page)
    }

    /// Swaps this exchange's session with `shared`: a Webchild's connections
    /// (`--connections-per-client`) each lend the Webchild's one session for a request built or
    /// a response judged, so that they carry one cookie jar and one set of values
    /// (`client/shared.rs`).
    pub(super) fn swap_session(&mut self, shared: &mut Session) {
        std::mem::swap(&mut self.session, shared);
    }

    /// Builds the requests of `files` (the page's URLs) from file `from` on into `out`: one, or
    /// pipelining, up to the end of the page or through the first file that extracts values
    /// (the files after it need them, or the cookies its response may set: they wait for it).
    /// How many; `Err` when file `from` needs a value never extracted (or one that would break
    /// a header line): it is not sent. A later file that does ends the batch before it.
    pub(super) fn build_batch(
        &mut self,
        sh: &RunShared<'_>,
        files: &[usize],
        from: usize,
        pipelined: bool,
    ) -> Result<usize, ExpandError> {
        self.out.clear();
        self.ends.clear();
        self.paths.clear();
        self.bodies.clear();
        self.first = from;
        for (j, &url) in files.iter().enumerate().skip(from) {
            let at = self.out.len();
            match self.build(sh, (j, url), None) {
                Ok((path, body)) => {
                    self.ends.push(self.out.len());
                    self.paths.push(path);
                    self.bodies.push(body);
                }
                Err(e) if j == from => return Err(e),
                Err(_) => {
                    self.out.truncate(at);
                    break;
                }
            }
            if !pipelined || self.extracts(url) {
                break;
            }
        }
        Ok(self.ends.len())
    }

    /// Builds the request of a redirect to follow (`hop`: its target's path, and whether its
    /// method became GET) for file `file` of the page, URL `url`, into `out`: a batch of one.
    pub(super) fn build_hop(
        &mut self,
        sh: &RunShared<'_>,
        (file, url): (usize, usize),
        hop: HopTarget<'_>,
    ) -> Result<usize, ExpandError> {
        self.out.clear();
        self.ends.clear();
        self.paths.clear();
        self.bodies.clear();
        self.first = file;
        let (path, body) = self.build(sh, (file, url), Some(hop))?;
        self.ends.push(self.out.len());
        self.paths.push(path);
        self.bodies.push(body);
        Ok(1)
    }

    /// A redirect of file `file`'s request (URL `url`), which sent `body`, is followed; `get`:
    /// it becomes a GET. The body is kept only for a redirect that sends it again: one that
    /// keeps its method, of a body built from a template.
    pub(super) fn keep_sent_body(&mut self, (file, url): (usize, usize), body: &[u8], get: bool) {
        let template = self.file(url).is_some_and(|f| f.body.is_some());
        self.sent_bodies.keep(file, body, template && !get);
    }

    /// The path (templates expanded) of file `file`'s request in the batch built.
    pub(super) fn sent_path(&self, file: usize) -> Option<&[u8]> {
        let k = file.checked_sub(self.first)?;
        self.paths.get(k).and_then(|r| self.out.get(r.clone()))
    }

    /// Whether file `file` of the page is in the batch built.
    pub(super) fn holds(&self, file: usize) -> bool {
        file >= self.first && file < self.first + self.ends.len()
    }

    /// Where the batch's requests through file `file` end in `out` (the batch's end past it).
    pub(super) fn end_through(&self, file: usize) -> usize {
        let k = file
            .saturating_sub(self.first)
            .min(self.ends.len().saturating_sub(1));
        self.ends.get(k).copied().unwrap_or(0)
    }

    /// Appends file `file`'s request, URL `url` (or, with `hop`, the redirect's it leads to)
    /// to `out`; the ranges of its path and its body in `out`.
    fn build(
        &mut self,
        sh: &RunShared<'_>,
        (file_at, url): (usize, usize),
        hop: Option<HopTarget<'_>>,
    ) -> Result<(Range<usize>, Range<usize>), ExpandError> {
        self.session.count_request();
        let spec = sh.workload.spec(url);
        let file = self.plan.files.get(url).and_then(Option::as_ref);
        let get = hop.is_some_and(|(_, get)| get);
        let out = &mut self.out;
        out.extend_from_slice(if get { "GET" } else { spec.method() }.as_bytes());
        out.push(b' ');
        let path_start = out.len();
        match (hop, file) {
            (Some((path, _)), _) => out.extend_from_slice(path.as_bytes()),
            (None, Some(f)) => f.path.expand(&mut self.session, out)?,
            (None, None) => out.extend_from_slice(sh.workload.urls[url].as_bytes()),
        }
        let path_end = out.len();
        // The fields that are the same on every request: written once at start and copied
        // (a redirect's, where the method may change, written here as they were).
        let fixed = self.fixed.get(url).filter(|_| hop.is_none());
        match fixed {
            Some(f) => out.extend_from_slice(&f.before_auth),
            None => write_fields_before_auth(out, sh.config, spec, file),
        }
        let auth = file.and_then(|f| f.auth.as_ref());
        let own_auth = fixed.map_or_else(|| owns(spec, file, "authorization"), |f| f.own_auth);
        if let Some(auth) = auth.filter(|_| !own_auth) {
            self.scratch.clear();
            auth.expand(&mut self.session, &mut self.scratch)?;
            out.extend_from_slice(b"Authorization: Basic ");
            let at = out.len();
            let n = base64::encoded_len(self.scratch.len(), true).unwrap_or(0);
            out.resize(at + n, 0);
            let b64 = base64::prelude::BASE64_STANDARD;
            let written = b64.encode_slice(&self.scratch, &mut out[at..]).unwrap_or(0);
            out.truncate(at + written);
            out.extend_from_slice(b"\r\n");
        }
        match fixed {
            Some(f) => out.extend_from_slice(&f.after_auth),
            None => write_fields_after_auth(out, sh.config, spec, file, get),
        }
        for (name, value) in file.iter().flat_map(|f| &f.headers) {
            if get && describes_body(name) {
                continue;
            }
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            value.expand(&mut self.session, out)?;
            out.extend_from_slice(b"\r\n");
        }
        let own_cookie = fixed.map_or_else(|| owns(spec, file, "cookie"), |f| f.own_cookie);
        if !own_cookie && self.session.has_cookies() {
            // The jar's rules (domain, path, Secure) need the URL the request goes to (parsing
            // it is a good part of building a request: it is done only when the jar has
            // cookies to choose from).
            let path = std::str::from_utf8(&out[path_start..path_end]).unwrap_or("/");
            set_path(&mut self.cookie_url, path);
            let at = out.len();
            out.extend_from_slice(b"Cookie: ");
            if self.session.cookie_header(&self.cookie_url, out) {
                out.extend_from_slice(b"\r\n");
            } else {
                out.truncate(at);
            }
        }
        self.scratch.clear();
        let body = match file.and_then(|f| f.body.as_ref()) {
            _ if get => None,
            // A 307 or 308 followed: the bytes the request sent, the same values.
            Some(_) if hop.is_some() => Some(self.sent_bodies.get(file_at)),
            Some(t) => {
                t.expand(&mut self.session, &mut self.scratch)?;
                Some(&self.scratch[..])
            }
            None => spec.body.as_deref(),
        };
        if let Some(body) = body {
            write_header_u64(out, b"Content-Length", body.len() as u64);
        }
        out.extend_from_slice(b"\r\n");
        let body_at = out.len();
        if let Some(body) = body {
            out.extend_from_slice(body);
        }
        let body_end = out.len();
        if hop.is_some() {
            self.sent_bodies.release(file_at);
        }
        Ok((path_start..path_end, body_at..body_end))
    }

    fn file(&self, url: usize) -> Option<&FilePlan> {
        self.plan.files.get(url).and_then(Option::as_ref)
    }
}

/// Webchild `id`'s session of `plan`: its random stream keyed by the Webchild, whichever of
/// its connections makes it.
pub(super) fn new_session(sh: &RunShared<'_>, plan: &Plan, id: usize) -> Session {
    let seed = super::child_rng(sh.config.seed, id, 2).u64(..);
    Session::new(
        plan.data.clone(),
        plan.values.len(),
        plan.options.cookies,
        id as u64,
        seed,
    )
}

/// Page `page` of `plan` starts in `session`: forgotten first with `--reset-session`, then a
/// row drawn from each data set it uses. False when a `unique` set has given every row.
pub(super) fn start_session_page(session: &mut Session, plan: &Plan, page: usize) -> bool {
    if plan.options.reset_per_page {
        session.reset();
    }
    session.start_page(&plan.page_data[page]).is_ok()
}

/// Whether URL `url`'s file extracts values: the page's files after it wait for its response
/// (they may need them, or the cookies it sets).
pub(super) fn extracts(plan: &Plan, url: usize) -> bool {
    (plan.files.get(url)).is_some_and(|f| f.as_ref().is_some_and(|f| !f.extract.is_empty()))
}

/// A redirect's target to build a request for: its path, and whether its method became GET
/// (without the body and the fields that describe it).
pub(super) type HopTarget<'a> = (&'a str, bool);

/// Whether a request's field describes its body (left out when a redirect makes it a GET).
fn describes_body(name: &str) -> bool {
    super::redirects::describes_body(name)
}

/// `url`'s path set to a request's `path`, without its query (the query plays no part in the
/// cookie rules): `Url` then rewrites its string in place.
fn set_path(url: &mut url::Url, path: &str) {
    url.set_path(path.split_once('?').map_or(path, |(p, _)| p));
}
