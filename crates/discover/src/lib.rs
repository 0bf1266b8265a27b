//! `flint discover`: a site's pages as a browser fetches them, weighted as its visitors fetch
//! them, written as a workload `flint bench -w` runs.
//!
//! The principal types: a [`Site`] is what a crawl found, [`Page`]s of [`Entry`]s in document
//! order (the HTML first, then what a browser requests for it, with what could not be fetched
//! and why); [`crawl`] makes it from a URL and [`Options`]; [`access_log::Counts`] is an access
//! log read into request counts, which either weigh a crawl's pages
//! ([`access_log::Counts::weigh`]) or make the pages themselves ([`log_pages::pages`]);
//! [`workload::to_toml`] writes either as a workload.
//!
//! Why it exists: a WebSTONE workload lists each page's files by hand (HTML parsing is the
//! third item of the paper's future work). A user benchmarking their own site needs the files a
//! browser really requests for each page (stylesheets and what they import, the image a
//! `srcset` picks, scripts, icons, preloads) and how often visitors ask for each page.
//!
//! One concept per module: [`fetch`] (HTTP/1.1 on `wire`, or HTTP/2 on `http2`; plain or TLS,
//! with `bench`'s TLS client configuration, so both clients trust and refuse alike), [`charset`]
//! (a page's or stylesheet's encoding, found as a browser finds it, on encoding_rs), [`html`] (the
//! references of a document, on html5ever), [`forms`] (what a document's forms send), [`nesting`] (html5ever driven with its nesting capped
//! as a browser caps it; each element's depth kept by a tree sink, `nesting/depth_sink.rs`), [`srcset`] (the image candidate a browser picks),
//! [`css`] (`url()` and `@import`, on cssparser), [`robots`] (RFC 9309), [`crawl`] (pages,
//! links, robots, the rate; one GET through its redirects, `crawl/redirects.rs`; a page's
//! resources, `crawl/resources.rs`; its stylesheets' rules and fonts, `crawl/styles.rs`; a
//! `--browser` page, `crawl/browser_page.rs`), `frontier` (the links kept, bounded by `--max-pages`), [`access_log`] (Common and Combined Log Format),
//! [`log_pages`] (pages from a log alone), [`workload`] (the TOML writer), [`browser`]
//! (`--browser`: the pages loaded by headless Chromium over the DevTools protocol; a tab driven
//! in `browser/page.rs`, its events recorded in `browser/page/recorder.rs`).

#![warn(missing_docs)]

pub mod access_log;
pub mod browser;
pub mod charset;
pub mod crawl;
pub mod css;
pub mod fetch;
pub mod fonts;
pub mod forms;
mod frontier;
pub mod html;
pub mod log_pages;
pub mod nesting;
pub mod robots;
pub mod rules;
pub mod srcset;
pub mod workload;

pub use crawl::{crawl, CrawlError};
pub use fetch::{Http, Limits, TlsOptions};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// How a crawl goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Links followed this many steps from the start page (0: the start page alone).
    pub depth: u32,
    /// Pages (HTML documents) fetched at most; links are kept in memory only up to this.
    pub max_pages: usize,
    /// References one page lists at most (files fetched, and those not fetched with their
    /// reason); the rest are counted.
    pub max_files: usize,
    /// Follow links robots.txt disallows.
    pub ignore_robots: bool,
    /// The viewport width (CSS px) image candidates are picked for (`None`: the largest) and
    /// stylesheets' `@media` evaluated at (`None`: the browser's default width).
    pub viewport: Option<u32>,
    /// Stylesheets' `@media (prefers-color-scheme)` answered `dark` (else `light`).
    pub dark: bool,
    /// What one resource may cost: body bytes, time, and the request rate (`--max-size`,
    /// `--timeout`, `--crawl-rate`).
    pub limits: Limits,
    /// How certificates are checked (`--cacert`, `-k`).
    pub tls: TlsOptions,
    /// HTTP/1.1, or HTTP/2.
    pub http: Http,
    /// Set (by a signal handler) to stop the crawl: no request starts after it, and what was
    /// found is returned.
    pub stop: Option<Arc<AtomicBool>>,
    /// `--browser`: each page loaded by headless Chromium, its files what the browser fetched.
    pub browser: Option<browser::BrowserOptions>,
}

/// What a crawl found.
#[derive(Debug, Clone, PartialEq)]
pub struct Site {
    /// The URL the crawl started from; the workload's paths are on its origin.
    pub start: url::Url,
    /// The HTML documents crawled, each with the files a browser requests for it.
    pub pages: Vec<Page>,
    /// What was not crawled and why (another origin, robots.txt, --depth, --max-pages).
    pub notes: Vec<String>,
    /// Requests the site received from the crawl: flint's own (robots.txt and each redirect
    /// included) and, with `--browser`, Chromium's to the site's origin (each redirect one;
    /// none it blocked before sending).
    pub requests: u64,
    /// With `--browser`: requests Chromium sent to other origins (not the site's).
    pub requests_elsewhere: u64,
    /// Links (`a href`, `area href`) the pages named, repeats included.
    pub links_found: u64,
    /// The most links held in memory at once (pages known, links told apart in the notes'
    /// counts): at most a few times `max_pages`, however many links were found.
    pub links_kept_peak: usize,
    /// `@import`s not fetched because they were nested past
    /// [`crawl::MAX_IMPORT_DEPTH`] stylesheets (each a comment of its page).
    pub imports_cut: u64,
    /// Stopped by [`Options::stop`] before the crawl was done.
    pub interrupted: bool,
}

/// One HTML document and what a browser requests for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// Path and query of the document (after redirects).
    pub path: String,
    /// Where it was reached from before a redirect, if it was.
    pub redirected_from: Option<String>,
    /// How often the page is fetched, relative to the others: 1 from a crawl alone; the
    /// requests of its path (and the path it was redirected from) in an access log, 0 when the
    /// log never names it.
    pub weight: f64,
    /// The document first, then its resources in document order.
    pub entries: Vec<Entry>,
    /// What the entries leave out (references beyond --max-files, an interrupted crawl).
    pub notes: Vec<String>,
    /// The document's forms: the workload shows each as a commented entry that would send it.
    pub forms: forms::Forms,
}

/// A file of a page, or a reference that is not one.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    /// A file fetched for the page (its document, or a resource of it).
    File(File),
    /// Not fetched, or not a file of this page: the URL as referenced and why.
    Skipped {
        /// The reference: path and query on the site's origin, the whole URL on another.
        url: String,
        /// Why it is not a file of the page, in a few words (the workload's comment).
        reason: String,
    },
}

/// A fetched file.
#[derive(Debug, Clone, PartialEq)]
pub struct File {
    /// Path and query, as `flint bench` requests it.
    pub path: String,
    /// Body bytes.
    pub bytes: u64,
    /// The response's `Content-Type` (the crawler's: without parameters, lower case; the
    /// browser's: as sent), written in the workload's comment; `None` when it had none.
    pub content_type: Option<String>,
    /// The path referenced, when it redirected here.
    pub redirected_from: Option<String>,
    /// With `--browser`: what made the browser request it (parser, script, preload, prefetch,
    /// other).
    pub initiator: Option<&'static str>,
}

impl Page {
    /// The files fetched, in entry order (the document first); skipped references left out.
    pub fn files(&self) -> impl Iterator<Item = &File> + '_ {
        self.entries.iter().filter_map(|e| match e {
            Entry::File(f) => Some(f),
            Entry::Skipped { .. } => None,
        })
    }
}

impl Site {
    /// Distinct files over all pages, and their bytes.
    pub fn totals(&self) -> (usize, u64) {
        workload::totals(&self.pages)
    }
}
