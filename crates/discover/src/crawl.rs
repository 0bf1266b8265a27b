//! The crawl: from the start page, each HTML document once, its resources as a browser
//! requests them, its links followed (same origin) breadth first to `--depth` and
//! `--max-pages`.
//!
//! Rules, each as a browser or a polite crawler has it:
//! - fragments are dropped (`/a#x` and `/a#y` are one page);
//! - redirects are followed within the origin (10 at most); the file is listed at the path it
//!   ended on, which is what `flint bench` should request;
//! - robots.txt decides which links are followed (unless `--ignore-robots`): the start page and
//!   the resources of a page are what a browser loads for a page the user asked for, so they are
//!   fetched whatever it says;
//! - an `iframe` is a page of its own, crawled whatever the depth (it is part of the page that
//!   holds it) but within `--max-pages`;
//! - a resource is fetched once for the whole crawl; a page lists each of its files once, in
//!   the order it first needs them (a stylesheet, then what it imports, then its `url()`s).

use crate::fetch::{FetchError, Fetcher, Response};
use crate::html::{self, Found, Kind};
use crate::robots::Robots;
use crate::{css, Entry, File, Options, Page, Site};
use std::collections::{HashMap, HashSet, VecDeque};
use url::{Position, Url};

/// Redirects followed for one resource, at most.
const MAX_REDIRECTS: usize = 10;
/// Stylesheets importing stylesheets: deeper chains are cut (a cycle ends sooner, at the first
/// stylesheet seen again).
const MAX_IMPORT_DEPTH: u32 = 32;

/// Why no workload could be made.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    /// The URL or options cannot be used (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The start page could not be had (exit 1).
    #[error("{url}: {reason}")]
    Start { url: String, reason: String },
}

/// A fetched resource as the crawl remembers it.
#[derive(Debug, Clone)]
enum Outcome {
    Got {
        file: File,
        /// A stylesheet's references, resolved.
        css: Vec<(Url, bool)>,
    },
    Failed(String),
}

struct Crawl<'a> {
    opts: &'a Options,
    fetcher: Fetcher,
    origin: url::Origin,
    robots: Robots,
    cache: HashMap<String, Outcome>,
    pages_seen: HashSet<String>,
    queue: VecDeque<(Url, u32)>,
    site: Site,
    notes_seen: HashSet<String>,
    /// Links seen beyond --depth: counted once each, and still crawled if an iframe names them.
    beyond_depth: HashSet<String>,
    beyond_max: u64,
}

/// Crawls from `start`.
pub fn crawl(start: &Url, opts: &Options) -> Result<Site, CrawlError> {
    let fetcher =
        Fetcher::new(start, &opts.tls, opts.http, opts.limits).map_err(CrawlError::Usage)?;
    let mut start = start.clone();
    start.set_fragment(None);
    let mut c = Crawl {
        opts,
        fetcher,
        origin: start.origin(),
        robots: Robots::allow_all(),
        cache: HashMap::new(),
        pages_seen: HashSet::new(),
        queue: VecDeque::new(),
        site: Site {
            start: start.clone(),
            pages: Vec::new(),
            notes: Vec::new(),
            requests: 0,
        },
        notes_seen: HashSet::new(),
        beyond_depth: HashSet::new(),
        beyond_max: 0,
    };
    if !opts.ignore_robots {
        c.read_robots();
    }
    c.pages_seen.insert(key(&start));
    c.queue.push_back((start.clone(), 0));
    let mut first = true;
    while let Some((url, depth)) = c.queue.pop_front() {
        if c.site.pages.len() >= opts.max_pages {
            c.beyond_max += 1 + c.queue.len() as u64;
            break;
        }
        if let Err(reason) = c.page(&url, depth) {
            if first {
                return Err(CrawlError::Start {
                    url: url.to_string(),
                    reason,
                });
            }
            c.note(format!("{}: {reason}", target(&url)));
        }
        first = false;
    }
    let beyond = c
        .beyond_depth
        .iter()
        .filter(|k| !c.pages_seen.contains(*k))
        .count();
    if beyond > 0 {
        c.note(format!(
            "{beyond} links beyond --depth {} not followed",
            opts.depth
        ));
    }
    if c.beyond_max > 0 {
        c.note(format!(
            "{} pages beyond --max-pages {} not crawled",
            c.beyond_max, opts.max_pages
        ));
    }
    c.site.requests = c.fetcher.requests;
    Ok(c.site)
}

/// A URL without its fragment: what identifies a resource.
fn key(url: &Url) -> String {
    url[..Position::AfterQuery].to_owned()
}

/// Path and query: the request target.
fn target(url: &Url) -> String {
    url[Position::BeforePath..Position::AfterQuery].to_owned()
}

fn status_reason(status: u16) -> String {
    format!("{status} {}", wire::head::reason(status))
}

impl Crawl<'_> {
    fn note(&mut self, text: String) {
        if self.notes_seen.insert(text.clone()) {
            self.site.notes.push(text);
        }
    }

    fn read_robots(&mut self) {
        let url = self.site.start.join("/robots.txt").expect("a path joins");
        self.robots = match self.fetch(&url) {
            Ok(Fetched { response: r, .. }) => {
                Robots::parse(&String::from_utf8_lossy(r.body.as_deref().unwrap_or(b"")))
            }
            Err(FetchFailure::Status(s)) if (400..500).contains(&s) => Robots::allow_all(),
            Err(e) => {
                self.note(format!(
                    "robots.txt unreachable ({}): no link followed (RFC 9309; --ignore-robots to crawl anyway)",
                    e.reason()
                ));
                Robots::disallow_all()
            }
        };
        if let Some(delay) = self.robots.crawl_delay.filter(|d| *d > 0.0) {
            if self.fetcher.slow_to(1.0 / delay) {
                self.note(format!(
                    "robots.txt asks for a Crawl-delay of {delay} s: kept"
                ));
            }
        }
    }

    /// GETs `url`, following redirects within the origin: the URL it ended on, and whether a
    /// redirect took it there (a fragment, never sent, is no redirect).
    fn fetch(&mut self, url: &Url) -> Result<Fetched, FetchFailure> {
        let mut url = url.clone();
        url.set_fragment(None);
        for redirects in 0..=MAX_REDIRECTS {
            if url.origin() != self.origin {
                return Err(FetchFailure::Other(format!(
                    "redirects to another origin ({url})"
                )));
            }
            let response = self
                .fetcher
                .get(&target(&url))
                .map_err(FetchFailure::Fetch)?;
            if response.is_redirect() {
                let Some(next) = response.location.as_deref().and_then(|l| url.join(l).ok()) else {
                    return Err(FetchFailure::Other(format!(
                        "{} without a usable Location",
                        status_reason(response.status)
                    )));
                };
                url = next;
                url.set_fragment(None);
                continue;
            }
            if !(200..300).contains(&response.status) {
                return Err(FetchFailure::Status(response.status));
            }
            return Ok(Fetched {
                url,
                response,
                redirected: redirects > 0,
            });
        }
        Err(FetchFailure::Other(format!(
            "more than {MAX_REDIRECTS} redirects"
        )))
    }

    fn page(&mut self, url: &Url, depth: u32) -> Result<(), String> {
        let Fetched {
            url: final_url,
            response,
            redirected,
        } = self.fetch(url).map_err(|e| e.reason())?;
        if !response.is_html() {
            return Err(format!(
                "not an HTML page ({})",
                response
                    .content_type
                    .as_deref()
                    .unwrap_or("no Content-Type")
            ));
        }
        let path = target(&final_url);
        if redirected && !self.pages_seen.insert(key(&final_url)) {
            return Ok(()); // a redirect to a page already crawled
        }
        let text = String::from_utf8_lossy(response.body.as_deref().unwrap_or(b"")).into_owned();
        let doc = html::parse(&text, &final_url, self.opts.viewport);
        let base = doc.base.clone().unwrap_or_else(|| final_url.clone());
        let redirected_from = redirected.then(|| target(url));
        let mut entries = vec![Entry::File(File {
            path: path.clone(),
            bytes: response.bytes,
            content_type: response.content_type.clone(),
            redirected_from: redirected_from.clone(),
        })];
        let mut on_page = HashSet::from([key(&final_url)]);
        for found in doc.found {
            match found {
                Found::Url {
                    url,
                    kind: Kind::Frame,
                } => self.frame(url, depth, &mut entries),
                Found::Url { url, kind } => self.resource(
                    &url,
                    kind == Kind::Stylesheet,
                    0,
                    &mut entries,
                    &mut on_page,
                ),
                Found::Css(text) => {
                    for r in css::references(&text) {
                        if let Ok(u) = base.join(&r.url) {
                            self.resource(&u, r.import, 0, &mut entries, &mut on_page);
                        }
                    }
                }
            }
        }
        self.site.pages.push(Page {
            path,
            redirected_from,
            weight: 1.0,
            entries,
        });
        for link in doc.links {
            self.link(link, depth);
        }
        Ok(())
    }

    fn frame(&mut self, mut url: Url, depth: u32, entries: &mut Vec<Entry>) {
        url.set_fragment(None);
        if url.origin() != self.origin {
            entries.push(skipped(&url, "an iframe on another origin: not fetched"));
            return;
        }
        entries.push(Entry::Skipped {
            url: target(&url),
            reason: "an iframe: a page of its own".into(),
        });
        if self.pages_seen.insert(key(&url)) {
            self.queue.push_back((url, depth));
        }
    }

    fn link(&mut self, mut url: Url, depth: u32) {
        if !matches!(url.scheme(), "http" | "https") {
            return; // mailto:, javascript:, tel:
        }
        url.set_fragment(None);
        if self.pages_seen.contains(&key(&url)) {
            return;
        }
        if url.origin() != self.origin {
            self.pages_seen.insert(key(&url));
            self.note(format!("link not followed: {url} (another origin)"));
            return;
        }
        if depth >= self.opts.depth {
            self.beyond_depth.insert(key(&url));
            return;
        }
        if !self.opts.ignore_robots && !self.robots.allows(&target(&url)) {
            self.pages_seen.insert(key(&url));
            self.note(format!(
                "link not followed: {} (robots.txt disallows it)",
                target(&url)
            ));
            return;
        }
        self.pages_seen.insert(key(&url));
        self.queue.push_back((url, depth + 1));
    }

    /// Adds a resource (and, for a stylesheet, what it references) to the page's entries.
    fn resource(
        &mut self,
        url: &Url,
        stylesheet: bool,
        import_depth: u32,
        entries: &mut Vec<Entry>,
        on_page: &mut HashSet<String>,
    ) {
        if !matches!(url.scheme(), "http" | "https") {
            return; // data:, blob:, about: need no request
        }
        if !on_page.insert(key(url)) {
            return;
        }
        if url.origin() != self.origin {
            entries.push(skipped(url, "another origin: not fetched"));
            return;
        }
        let outcome = match self.cache.get(&key(url)) {
            Some(o) => o.clone(),
            None => {
                let o = self.fetch_resource(url, stylesheet);
                self.cache.insert(key(url), o.clone());
                o
            }
        };
        match outcome {
            Outcome::Failed(reason) => entries.push(Entry::Skipped {
                url: target(url),
                reason,
            }),
            Outcome::Got { file, css } => {
                let path = file.path.clone();
                // A redirect to a file the page already has: one request, not two.
                if file.redirected_from.is_some() && !on_page.insert(format!("path {path}")) {
                    return;
                }
                on_page.insert(format!("path {path}"));
                entries.push(Entry::File(file));
                if import_depth >= MAX_IMPORT_DEPTH {
                    return;
                }
                for (u, import) in css {
                    self.resource(&u, import, import_depth + 1, entries, on_page);
                }
            }
        }
    }

    fn fetch_resource(&mut self, url: &Url, stylesheet: bool) -> Outcome {
        match self.fetch(url) {
            Err(e) => Outcome::Failed(e.reason()),
            Ok(Fetched {
                url: final_url,
                response: r,
                redirected,
            }) => {
                let css = match (&r.body, stylesheet || r.is_css()) {
                    (Some(body), true) => css::references(&String::from_utf8_lossy(body))
                        .into_iter()
                        .filter_map(|x| final_url.join(&x.url).ok().map(|u| (u, x.import)))
                        .collect(),
                    _ => Vec::new(),
                };
                Outcome::Got {
                    file: File {
                        path: target(&final_url),
                        bytes: r.bytes,
                        content_type: r.content_type,
                        redirected_from: redirected.then(|| target(url)),
                    },
                    css,
                }
            }
        }
    }
}

fn skipped(url: &Url, reason: &str) -> Entry {
    Entry::Skipped {
        url: url.to_string(),
        reason: reason.to_owned(),
    }
}

/// A fetch that ended in a 2xx.
struct Fetched {
    /// Where it ended, without a fragment.
    url: Url,
    response: Response,
    /// Whether a redirect led there.
    redirected: bool,
}

/// Why one fetch failed.
enum FetchFailure {
    Fetch(FetchError),
    Status(u16),
    Other(String),
}

impl FetchFailure {
    fn reason(&self) -> String {
        match self {
            FetchFailure::Fetch(e) => e.to_string(),
            FetchFailure::Status(s) => status_reason(*s),
            FetchFailure::Other(s) => s.clone(),
        }
    }
}
