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
//!   fetched whatever it says. It is read once the start page has answered (before the page's
//!   resources, so its Crawl-delay paces them): a server that answers nothing is then waited for
//!   once, within `--timeout`, not once for robots.txt and again for the page;
//! - an `iframe` is a page of its own, crawled whatever the depth (it is part of the page that
//!   holds it) but within `--max-pages`;
//! - a resource is fetched once for the whole crawl; a page lists each of its files once, in
//!   the order it first needs them (a stylesheet, then what it imports, then its `url()`s),
//!   then the fonts its text uses (`crawl/styles.rs`);
//! - a stylesheet is parsed once (its `@media` and `@supports` evaluated at `--viewport`), its
//!   rules matched against each page's DOM: a `url()` of a rule no element matches is not
//!   requested (`rules`); a stylesheet whose media does not hold (a `<link media=print>`, an
//!   `@import` for a wider screen) is fetched, as a browser fetches it, with its `@import`s,
//!   and none of their rules apply.
//!
//! With `--browser` the pages, links, robots.txt and redirects are the crawl's as above (each
//! page's HTML fetched and parsed for its links), but a page's files are what headless Chromium
//! fetched loading it (`browser`).
//!
//! This file is the crawl's state and order: the pages in turn, the links and frames each
//! names (kept or told apart in the notes), robots.txt, the closing notes. Beside it in `crawl/`:
//! one GET through its redirects (`redirects.rs`), a page's resources fetched once for the
//! crawl (`resources.rs`), its stylesheets' rules and fonts (`styles.rs`), and a `--browser`
//! page (`browser_page.rs`).

use crate::browser::Browser;
use crate::fetch::{Fetcher, MAX_GAP};
use crate::frontier::{key, not_told_apart, Counted, Frontier, Tally};
use crate::html::{self, Found, Kind};
use crate::nesting::MAX_DEPTH as MAX_NESTING;
use crate::robots::Robots;
use crate::{css, Entry, File, Options, Page, Site};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use url::{Position, Url};

mod browser_page;
mod redirects;
mod resources;
mod styles;

use redirects::{FetchFailure, Fetched};
use styles::{Resolved, Styles};

/// Stylesheets importing stylesheets: an `@import` in a stylesheet imported this deep (a
/// page's own is 0 deep) is not fetched, and is named where it is cut (a cycle ends sooner, at
/// the first stylesheet seen again).
pub const MAX_IMPORT_DEPTH: u32 = 32;

/// Why no workload could be made.
#[derive(Debug, thiserror::Error)]
pub enum CrawlError {
    /// The URL or options cannot be used (exit 2).
    #[error("{0}")]
    Usage(String),
    /// The start page could not be had (exit 1).
    #[error("{url}: {reason}")]
    Start {
        /// The start URL.
        url: String,
        /// Why: the fetch failed, a status other than 2xx, a redirect off the origin or
        /// without end, or not an HTML page.
        reason: String,
    },
    /// SIGINT or SIGTERM came before the start page was crawled: nothing to write.
    #[error("interrupted before the start page was crawled: nothing written")]
    Interrupted,
    /// `--browser`: Chromium would not start, exited or stopped answering (exit 1).
    #[error("{0}")]
    Browser(String),
}

/// A fetched resource as the crawl remembers it.
#[derive(Debug, Clone)]
enum Outcome {
    Got {
        file: File,
        /// A stylesheet's references, resolved (empty for another file).
        css: Arc<Resolved>,
    },
    Failed(String),
}

struct Crawl<'a> {
    opts: &'a Options,
    fetcher: Fetcher,
    origin: url::Origin,
    robots: Robots,
    /// Whether robots.txt has been asked for (or --ignore-robots makes that needless).
    robots_read: bool,
    cache: HashMap<String, Outcome>,
    frontier: Frontier,
    site: Site,
    notes_seen: HashSet<String>,
    /// Links seen beyond --depth: counted, and still crawled if an iframe names them.
    beyond_depth: Tally,
    /// Links not followed, each listed in a note up to --max-pages of them.
    other_origin: Tally,
    disallowed: Tally,
    /// Pages that named more than --max-files references.
    pages_cut: u64,
    /// `--browser`'s Chromium, started for the first page.
    browser: Option<Browser>,
    /// Why Chromium cannot go on (the crawl ends with it).
    browser_failed: Option<String>,
    /// Requests Chromium sent to the site (each redirect one).
    browser_requests: u64,
    /// What stylesheets' `@media` are evaluated against.
    env: css::Env,
}

/// A page being put together: its entries, what it has referenced, what it left out.
struct PageWork<'t> {
    entries: Vec<Entry>,
    /// Keys (and `path` keys of where redirects ended) of what the page has referenced.
    on_page: HashSet<String>,
    /// References beyond --max-files, not fetched.
    beyond: u64,
    /// The characters of the page's text, for fonts' `unicode-range`.
    chars: Vec<char>,
    /// Which stylesheet rules match the page's elements.
    matcher: crate::rules::Matcher<'t>,
    /// The `@font-face` files of the page's stylesheets (fetched once every stylesheet is
    /// read), what its matched rules ask of fonts, and what the rules left out.
    styles: Styles,
    /// The page's encoding: its stylesheets' when they name none.
    charset: crate::charset::Charset,
}

/// Crawls from `start`.
pub fn crawl(start: &Url, opts: &Options) -> Result<Site, CrawlError> {
    let mut fetcher =
        Fetcher::new(start, &opts.tls, opts.http, opts.limits).map_err(CrawlError::Usage)?;
    fetcher.stop = opts.stop.clone();
    let mut start = start.clone();
    start.set_fragment(None);
    let mut c = Crawl {
        opts,
        fetcher,
        origin: start.origin(),
        robots: Robots::allow_all(),
        robots_read: opts.ignore_robots,
        cache: HashMap::new(),
        frontier: Frontier::new(opts.max_pages),
        site: Site {
            start: start.clone(),
            pages: Vec::new(),
            notes: Vec::new(),
            requests: 0,
            links_found: 0,
            links_kept_peak: 0,
            requests_elsewhere: 0,
            imports_cut: 0,
            interrupted: false,
        },
        notes_seen: HashSet::new(),
        beyond_depth: Tally::new(opts.max_pages),
        other_origin: Tally::new(opts.max_pages),
        disallowed: Tally::new(opts.max_pages),
        pages_cut: 0,
        browser: None,
        browser_failed: None,
        browser_requests: 0,
        env: css::Env {
            width: f64::from(opts.viewport.unwrap_or(crate::browser::DEFAULT_WIDTH)),
            height: f64::from(crate::browser::WINDOW_HEIGHT),
            dark: opts.dark,
        },
    };
    c.frontier.push(start.clone(), 0);
    let mut first = true;
    while let Some((url, depth)) = c.frontier.pop() {
        if c.stopped() {
            break;
        }
        if let Err(reason) = c.page(&url, depth) {
            if c.stopped() {
                break;
            }
            if let Some(why) = c.browser_failed.take() {
                return Err(CrawlError::Browser(why));
            }
            if first {
                return Err(CrawlError::Start {
                    url: url.to_string(),
                    reason,
                });
            }
            c.note(format!("{}: {reason}", target(&url)));
        }
        first = false;
        let kept = c.links_kept();
        c.site.links_kept_peak = c.site.links_kept_peak.max(kept);
    }
    if c.stopped() {
        if c.site.pages.is_empty() {
            return Err(CrawlError::Interrupted);
        }
        c.site.interrupted = true;
        c.note(format!(
            "interrupted (SIGINT or SIGTERM) after {} pages: the crawl stopped there",
            c.site.pages.len()
        ));
    }
    c.closing_notes();
    c.site.requests = c.fetcher.requests + c.browser_requests;
    Ok(c.site)
}

/// Path and query: the request target.
fn target(url: &Url) -> String {
    url[Position::BeforePath..Position::AfterQuery].to_owned()
}

impl Crawl<'_> {
    fn stopped(&self) -> bool {
        self.opts
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    }

    /// Links held in memory: pages known and links told apart in the counts.
    fn links_kept(&self) -> usize {
        self.frontier.kept()
            + self.beyond_depth.len()
            + self.other_origin.len()
            + self.disallowed.len()
    }

    /// What was not crawled, said once at the end.
    fn closing_notes(&mut self) {
        let max = self.opts.max_pages;
        if self.other_origin.more > 0 {
            self.note(format!(
                "{} more links to other origins not followed (not listed: --max-pages {max} of them are)",
                self.other_origin.more
            ));
        }
        if self.disallowed.more > 0 {
            self.note(format!(
                "{} more links robots.txt disallows not followed (not listed: --max-pages {max} of them are)",
                self.disallowed.more
            ));
        }
        let frontier = &self.frontier;
        let beyond = self.beyond_depth.count_where(|k| !frontier.knows(k));
        if beyond > 0 || self.beyond_depth.more > 0 {
            let more = not_told_apart(self.beyond_depth.more);
            self.note(format!(
                "{beyond} links beyond --depth {} not followed{more}",
                self.opts.depth
            ));
        }
        let full = &self.frontier.beyond_max;
        if full.len() > 0 {
            let (n, more) = (full.len(), not_told_apart(full.more));
            self.note(format!(
                "{n} pages beyond --max-pages {max} not crawled{more}"
            ));
        }
        if self.site.imports_cut > 0 {
            self.note(format!(
                "@imports nested more than {MAX_IMPORT_DEPTH} stylesheets deep were not fetched, \
                 nor what they reference ({} of them, each a comment where it was cut; a browser \
                 follows them, so those pages are lighter here than in a browser)",
                self.site.imports_cut
            ));
        }
        if self.pages_cut > 0 {
            self.note(format!(
                "{} pages named more than --max-files {} references: the rest not fetched (a comment at each page's end says how many)",
                self.pages_cut, self.opts.max_files
            ));
        }
    }

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
            // Stopped before it was asked for: no link will be followed anyway.
            Err(_) if self.stopped() => Robots::disallow_all(),
            Err(e) => {
                self.note(format!(
                    "robots.txt unreachable ({}): no link followed (RFC 9309; --ignore-robots to crawl anyway)",
                    e.reason()
                ));
                Robots::disallow_all()
            }
        };
        if let Some(asked) = self.robots.crawl_delay.filter(|d| *d > 0.0) {
            let most = MAX_GAP.as_secs_f64();
            let delay = asked.min(most);
            if self.fetcher.slow_to(1.0 / delay) {
                self.note(if delay < asked {
                    format!("robots.txt asks for a Crawl-delay of {asked} s: clamped to {most} s (a day)")
                } else {
                    format!("robots.txt asks for a Crawl-delay of {delay} s: kept")
                });
            }
        }
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
        if !self.robots_read {
            self.robots_read = true;
            self.read_robots();
        }
        let path = target(&final_url);
        if redirected && !self.frontier.mark(key(&final_url)) {
            return Ok(()); // a redirect to a page already crawled
        }
        let mut doc = html::parse_bytes(
            response.body.as_deref().unwrap_or(b""),
            response.charset.as_deref(),
            &final_url,
            self.opts.viewport,
            &self.env,
        );
        let base = doc.base.clone().unwrap_or_else(|| final_url.clone());
        let redirected_from = redirected.then(|| target(url));
        if self.opts.browser.is_some() {
            let (links, forms) = (doc.links, doc.forms);
            return self.browser_page(
                &final_url,
                (path, redirected_from),
                links,
                forms,
                depth,
                response.bytes,
            );
        }
        let tree = doc.tree.take();
        let mut work = PageWork {
            entries: vec![Entry::File(File {
                path: path.clone(),
                bytes: response.bytes,
                content_type: response.content_type.clone(),
                redirected_from: redirected_from.clone(),
                initiator: None,
            })],
            on_page: HashSet::from([key(&final_url)]),
            beyond: 0,
            chars: std::mem::take(&mut doc.chars),
            matcher: crate::rules::Matcher::new(tree.as_ref()),
            styles: Styles::new(),
            charset: doc.charset,
        };
        let mut notes: Vec<String> = doc
            .charset
            .note(doc.non_ascii_references)
            .into_iter()
            .collect();
        if doc.left_out > 0 {
            self.note(format!(
                "elements nested deeper than {MAX_NESTING} (a browser's limit) were closed at \
                 once, what they held put beside them (a comment at each such page's end says how \
                 many)"
            ));
            notes.push(format!(
                "{} elements nested deeper than {MAX_NESTING} closed at once: their references and \
                 what they held were kept",
                doc.left_out
            ));
        }
        for found in doc.found {
            if self.stopped() {
                notes.push("interrupted here: the page's later references were not fetched".into());
                break;
            }
            match found {
                Found::Url {
                    url,
                    kind: Kind::Frame,
                } => self.frame(url, depth, &mut work),
                Found::Url { url, kind } => {
                    let what = match kind {
                        Kind::Stylesheet => Fetch::Stylesheet { applies: true },
                        Kind::StylesheetNotApplied => Fetch::Stylesheet { applies: false },
                        _ => Fetch::File,
                    };
                    self.resource(&url, what, 0, &mut work)
                }
                Found::Css { text, applies } => {
                    let sheet = css::parse(&text, &self.env);
                    let sheet = Resolved::new(sheet, &base, usize::MAX);
                    self.follow(&sheet, applies, 0, &mut work);
                }
                Found::Style { text, element } => {
                    let sheet = css::parse_declarations(&text, &self.env);
                    let from = work.styles.images_held();
                    self.follow(&Resolved::new(sheet, &base, usize::MAX), true, 0, &mut work);
                    work.styles.held_for(from, element);
                }
            }
        }
        self.once_styled(&mut work);
        notes.extend(work.styles.notes());
        if work.beyond > 0 {
            self.pages_cut += 1;
            notes.push(format!(
                "{} more references beyond --max-files {}: not fetched",
                work.beyond, self.opts.max_files
            ));
        }
        self.site.pages.push(Page {
            path,
            redirected_from,
            weight: 1.0,
            entries: work.entries,
            notes,
            forms: doc.forms,
        });
        if self.stopped() {
            return Ok(());
        }
        for link in doc.links {
            self.link(link, depth);
        }
        Ok(())
    }

    fn frame(&mut self, mut url: Url, depth: u32, work: &mut PageWork) {
        url.set_fragment(None);
        if !work.on_page.insert(key(&url)) || !self.room(work) {
            return;
        }
        if url.origin() != self.origin {
            work.entries
                .push(skipped(&url, "an iframe on another origin: not fetched"));
            return;
        }
        work.entries.push(Entry::Skipped {
            url: target(&url),
            reason: "an iframe: a page of its own".into(),
        });
        self.frontier.push(url, depth);
    }

    fn link(&mut self, mut url: Url, depth: u32) {
        if !matches!(url.scheme(), "http" | "https") {
            return; // mailto:, javascript:, tel:
        }
        self.site.links_found += 1;
        url.set_fragment(None);
        let k = key(&url);
        if self.frontier.knows(&k) {
            return;
        }
        if url.origin() != self.origin {
            if self.other_origin.add(&k) == Counted::New {
                self.note(format!("link not followed: {url} (another origin)"));
            }
            return;
        }
        if depth >= self.opts.depth {
            self.beyond_depth.add(&k);
            return;
        }
        if !self.opts.ignore_robots && !self.robots.allows(&target(&url)) {
            if self.disallowed.add(&k) == Counted::New {
                self.note(format!(
                    "link not followed: {} (robots.txt disallows it)",
                    target(&url)
                ));
            }
            return;
        }
        self.frontier.push(url, depth + 1);
    }
}

/// What a resource is fetched as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetch {
    /// A file, read for nothing.
    File,
    /// A stylesheet: its `@import`s followed, and when it `applies` (its media holds) the
    /// `url()`s and fonts of its rules that match.
    Stylesheet { applies: bool },
}

fn skipped(url: &Url, reason: &str) -> Entry {
    Entry::Skipped {
        url: url.to_string(),
        reason: reason.to_owned(),
    }
}
